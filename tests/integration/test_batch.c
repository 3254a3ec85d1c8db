/*
 * test_batch.c — cross-client batching against a real cudaepd: clients
 * (one connection each, in threads or processes) whose sessions opted in
 * run the same model at once, and their runs are merged.
 *
 * Checked: merged runs of mixed batch sizes give every client the bytes
 * the same input gives unbatched (host kernels compute rows apart), and
 * the counters and `cudaepctl sessions` show the batches formed; a full
 * batch goes without waiting for its window; a session without batching
 * is never merged; a run that does not fit (too little output room) gets
 * its own error while the others are merged; a batch that fails fails each of its runs with the
 * error; a model that cannot batch runs alone; a client killed while its
 * run waits in a window is dropped from it at once and leaves nothing
 * behind, the group's session and memory included. Without a GPU the
 * daemon serves on the host backend with queued streams (host-async),
 * once on the plain host backend too; under make test-gpu on CUDA, where
 * merged outputs are compared within float tolerance instead.
 */
#include "tests/integration/harness.h"
#include "tests/integration/mlp_slot.h"
#include "tests/integration/onnx_min.h"

#include <criterion/criterion.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The MLP: y = Relu(x W), x [n, D], W [D, D]. */
#define D 32
#define MAX_ROWS 4

static struct hdaemon d;
static float W[D * D];
static char mlp_path[160], gather_path[160], cols_path[160];
static bool gpu;

static void models_write(void)
{
	struct om m = { 0 };

	mlp_model_write(mlp_path, sizeof(mlp_path), d.dir, W, D, 7, 4.0f);
	/* Rows that index each other: only for a batch that fails. */
	snprintf(gather_path, sizeof(gather_path), "%s/gather.onnx", d.dir);
	om_input(&m, "x", 1, "n,4");
	om_input(&m, "idx", 7, "n");
	om_output(&m, "y", 1, "n,4");
	om_node(&m, "Gather", "x,idx", "y", "axis", 0);
	cr_assert_eq(om_save(&m, gather_path), 0);

	/* No batch in dimension 0. */
	memset(&m, 0, sizeof(m));
	snprintf(cols_path, sizeof(cols_path), "%s/cols.onnx", d.dir);
	om_input(&m, "x", 1, "4,n");
	om_output(&m, "y", 1, "4,n");
	om_node(&m, "Relu", "x", "y", NULL, 0);
	cr_assert_eq(om_save(&m, cols_path), 0);
}

/* Starts a daemon with a window of window_us and batches of at most max,
 * on backend (NULL: host-async, or cuda under make test-gpu). */
static void start(const char *window_us, const char *max, const char *backend)
{
	const char *args[] = { "--batch-window-us", window_us, "--batch-max", max,
			       "--backend", backend, NULL };

	gpu = strcmp(h_backend(), "cuda") == 0;
	if (gpu || !backend)
		args[5] = gpu ? "cuda" : "host-async";
	memset(&d, 0, sizeof(d));
	cr_assert_eq(h_daemon_start(&d, args), 0, "cudaepd did not start");
	models_write();
}

/* Also the suite's fini, so that a failed test leaves no daemon behind. */
static void stop(void)
{
	if (d.pid != 0)
		h_daemon_stop_clean(&d, "cudaepd");
}

TestSuite(batch, .fini = stop, .timeout = 240);

/* ------------------------------------------------------------- helpers */

static cep_session *load(cep_client *c, const char *path, bool batching)
{
	cep_session_options o = { .batching = batching };
	cep_session *s = NULL;

	cr_assert_eq(cep_session_load(c, path, &o, &s), 0, "%s", cep_last_error());
	return s;
}

/* A SessionEntry of session id as `cudaepctl sessions` gets it. */
static void session_entry(cep_client *c, uint64_t id, cudaep_v1_SessionEntry *out)
{
	static cudaep_v1_Request req;
	static cudaep_v1_Response resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.which_body = cudaep_v1_Request_sessions_tag;
	cr_assert_eq(cep__call(c, &req, NULL, 0, &resp), 0, "%s", cep_last_error());
	for (pb_size_t i = 0; i < resp.body.sessions.sessions_count; i++) {
		if (resp.body.sessions.sessions[i].session_id == id) {
			*out = resp.body.sessions.sessions[i];
			return;
		}
	}
	cr_assert_fail("no session %llu", (unsigned long long)id);
}

/* One client in a thread: its connection, session and region, the x it
 * runs and the y it got. */
struct client {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	int id;
	bool batching;
	int rows;                  /* of this round */
	size_t room;               /* for y; 0: MAX_ROWS rows */
	float *x, *y;              /* in the region */
	int ret;
	char why[256];
	pthread_barrier_t *start;  /* all submit together */
};

static void client_open(struct client *k, int id, bool batching, pthread_barrier_t *start)
{
	char name[32];

	memset(k, 0, sizeof(*k));
	snprintf(name, sizeof(name), "batch%d", id);
	k->c = h_connect(&d, name);
	k->s = load(k->c, mlp_path, batching);
	k->id = id;
	k->batching = batching;
	k->start = start;
	cr_assert_eq(cep_region_new(k->c, 2 * sizeof(float) * MAX_ROWS * D, &k->r), 0);
	k->x = cep_region_data(k->r);
	k->y = k->x + MAX_ROWS * D;
}

static void client_close(struct client *k)
{
	cep_region_free(k->r);
	cep_session_free(k->s);
	cep_close(k->c);
}

/* Fills x with rows of fresh values and poisons y. */
static void client_fill(struct client *k, int rows, unsigned *seed)
{
	k->rows = rows;
	for (int i = 0; i < rows * D; i++)
		k->x[i] = mlp_frand(seed);
	memset(k->y, 0xa5, sizeof(float) * MAX_ROWS * D);
}

/* One run of x into y, after the barrier. */
static void *client_run(void *arg)
{
	struct client *k = arg;
	cep_tensor in = { .name = "x", .region = k->r, .offset = 0,
			  .bytes = sizeof(float) * (size_t)k->rows * D,
			  .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { k->rows, D } };
	cep_tensor out = { .name = "y", .region = k->r,
			   .offset = sizeof(float) * MAX_ROWS * D,
			   .bytes = k->room ? k->room : sizeof(float) * MAX_ROWS * D };

	pthread_barrier_wait(k->start);
	k->ret = cep_run(k->s, &in, 1, &out, 1);
	if (k->ret != 0)
		snprintf(k->why, sizeof(k->why), "%s", cep_last_error());
	else if (out.rank != 2 || out.shape[0] != k->rows || out.shape[1] != D ||
		 out.bytes != sizeof(float) * (size_t)k->rows * D)
		snprintf(k->why, sizeof(k->why), "output shape [%lld, %lld], %zu bytes",
			 (long long)out.shape[0], (long long)out.shape[1], out.bytes);
	return NULL;
}

/* Runs every client's x at once, each in its own thread. */
static void round_run(struct client *k, int n)
{
	pthread_t th[16];

	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, client_run, &k[i]), 0);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(k[i].ret, 0, "client %d: %s", i, k[i].why);
		cr_assert_eq(k[i].why[0], '\0', "client %d: %s", i, k[i].why);
	}
}

/* Runs client k's x alone on ref (a session without batching) and checks
 * that k got the same bytes (on a GPU, the same values within rounding:
 * another batch size may take another kernel). */
static void expect_alone(struct client *k, cep_session *ref, cep_region *rr)
{
	float *x = cep_region_data(rr), *y = x + MAX_ROWS * D;
	cep_tensor in = { .name = "x", .region = rr, .offset = 0,
			  .bytes = sizeof(float) * (size_t)k->rows * D,
			  .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { k->rows, D } };
	cep_tensor out = { .name = "y", .region = rr, .offset = sizeof(float) * MAX_ROWS * D,
			   .bytes = sizeof(float) * MAX_ROWS * D };
	size_t bytes = sizeof(float) * (size_t)k->rows * D;

	memcpy(x, k->x, bytes);
	cr_assert_eq(cep_run(ref, &in, 1, &out, 1), 0, "%s", cep_last_error());
	if (!gpu) {
		cr_assert_eq(memcmp(y, k->y, bytes), 0, "client %d: its merged run differs "
			     "from the same input alone", k->id);
	} else {
		for (int i = 0; i < k->rows * D; i++)
			cr_assert(fabsf(y[i] - k->y[i]) <= 1e-3f + 1e-3f * fabsf(y[i]),
				  "client %d: y[%d] %g alone, %g merged", k->id, i, y[i], k->y[i]);
	}
	/* Nothing past its rows. */
	if (k->rows < MAX_ROWS)
		cr_assert_eq(((unsigned char *)k->y)[bytes], 0xa5, "client %d: y past its rows",
			     k->id);
}

/* ---------------------------------------------------------------- tests */

static void merged_equal_alone(const char *backend)
{
	enum { CLIENTS = 6, ROUNDS = 12 };
	static struct client k[CLIENTS];
	pthread_barrier_t bar;
	cudaep_v1_SessionEntry e;
	cep_client *ref_c;
	cep_session *ref;
	cep_region *rr;
	unsigned seed = 42;
	uint64_t batched = 0, merged = 0;
	int64_t base_device;

	/* A window long enough for threads let go together to meet. */
	start("50000", "32", backend);
	pthread_barrier_init(&bar, NULL, CLIENTS);
	/* Before any session: on a GPU the weights count as device memory. */
	ref_c = h_connect(&d, "reference");
	base_device = h_mem_current(ref_c, "total", "device");
	for (int i = 0; i < CLIENTS; i++)
		client_open(&k[i], i, true, &bar);
	ref = load(ref_c, mlp_path, false);
	cr_assert_eq(cep_region_new(ref_c, 2 * sizeof(float) * MAX_ROWS * D, &rr), 0);
	for (int round = 0; round < ROUNDS; round++) {
		/* Batch sizes 1 to MAX_ROWS, mixed within each batch. */
		for (int i = 0; i < CLIENTS; i++)
			client_fill(&k[i], 1 + (i + round) % MAX_ROWS, &seed);
		round_run(k, CLIENTS);
		for (int i = 0; i < CLIENTS; i++)
			expect_alone(&k[i], ref, rr);
	}
	merged = h_counter(ref_c, "batch_runs");
	cr_assert_gt(h_counter(ref_c, "batches"), 0, "no batch was formed");
	cr_assert_eq(merged + h_counter(ref_c, "batch_alone"), CLIENTS * ROUNDS,
		     "every run of a batching session is merged or alone");
	cr_assert_eq(h_counter(ref_c, "batch_size_2") + h_counter(ref_c, "batch_size_3_4") +
		     h_counter(ref_c, "batch_size_5_8"), h_counter(ref_c, "batches"),
		     "the histogram counts every batch");
	cr_assert_eq(h_counter(ref_c, "batch_refused"), 0);
	cr_assert_eq(h_gauge(ref_c, "batch_groups"), 1, "one group: one model");
	for (int i = 0; i < CLIENTS; i++) {
		session_entry(ref_c, cep_session_id(k[i].s), &e);
		cr_assert(e.batching);
		cr_assert_eq(e.runs, ROUNDS);
		batched += e.batched_runs;
	}
	cr_assert_eq(batched, merged, "the sessions' merged runs add up");
	session_entry(ref_c, cep_session_id(ref), &e);
	cr_assert_not(e.batching);
	cr_assert_eq(e.batched_runs, 0);
	printf("  %s: %llu of %d runs merged into %llu batches\n", backend ? backend : "default",
	       (unsigned long long)merged, CLIENTS * ROUNDS,
	       (unsigned long long)h_counter(ref_c, "batches"));
	for (int i = 0; i < CLIENTS; i++)
		client_close(&k[i]);
	cep_region_free(rr);
	cep_session_free(ref);
	cr_assert_eq(h_wait_gauge(ref_c, "batch_groups", 0), 0, "the group goes with its "
		     "last session");
	cr_assert_eq(h_gauge(ref_c, "runs_in_flight"), 0);
	cr_assert_eq(h_mem_current(ref_c, "total", "device"), base_device,
		     "device memory is all back");
	cep_close(ref_c);
	pthread_barrier_destroy(&bar);
	stop();
}

Test(batch, merged_runs_equal_their_runs_alone)
{
	merged_equal_alone(NULL);
}

/* Batches planned and run on the thread pool: a backend that computes
 * as it queues. */
Test(batch, merged_runs_equal_their_runs_alone_on_the_host_backend)
{
	if (strcmp(h_backend(), "cuda") == 0)
		cr_skip_test("[SKIP] the plain host backend only without a GPU");
	merged_equal_alone("host");
}

/* With a window of a second and batches of 4, four runs let go together
 * make one batch, at once; three of a batching session and one of a
 * session without batching make a batch of three, after the window. */
Test(batch, a_full_batch_goes_at_once_and_a_plain_session_is_never_merged)
{
	enum { CLIENTS = 4, ROUNDS = 3 };
	static struct client k[CLIENTS];
	pthread_barrier_t bar;
	cudaep_v1_SessionEntry e;
	unsigned seed = 9;
	uint64_t b34;

	start("1000000", "4", NULL);
	pthread_barrier_init(&bar, NULL, CLIENTS);
	for (int i = 0; i < CLIENTS; i++)
		client_open(&k[i], i, true, &bar);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < CLIENTS; i++)
			client_fill(&k[i], 1, &seed);
		round_run(k, CLIENTS);
	}
	cr_assert_eq(h_counter(k[0].c, "batch_size_3_4"), ROUNDS, "one batch of 4 a round");
	cr_assert_eq(h_counter(k[0].c, "batch_runs"), CLIENTS * ROUNDS);
	cr_assert_eq(h_counter(k[0].c, "batch_alone"), 0);
	b34 = h_counter(k[0].c, "batch_size_3_4");
	/* The last client's session without batching. */
	cep_session_free(k[CLIENTS - 1].s);
	k[CLIENTS - 1].s = load(k[CLIENTS - 1].c, mlp_path, false);
	client_fill(&k[0], 1, &seed);
	client_fill(&k[1], 2, &seed);
	client_fill(&k[2], 1, &seed);
	client_fill(&k[3], 1, &seed);
	round_run(k, CLIENTS);
	cr_assert_eq(h_counter(k[0].c, "batch_size_3_4"), b34 + 1);
	cr_assert_eq(h_counter(k[0].c, "batch_runs"), CLIENTS * ROUNDS + 3,
		     "the plain session's run was not merged");
	session_entry(k[0].c, cep_session_id(k[CLIENTS - 1].s), &e);
	cr_assert_not(e.batching);
	cr_assert_eq(e.batched_runs, 0);
	session_entry(k[0].c, cep_session_id(k[1].s), &e);
	cr_assert_eq(e.batched_runs, ROUNDS + 1);
	for (int i = 0; i < CLIENTS; i++)
		client_close(&k[i]);
	pthread_barrier_destroy(&bar);
	stop();
}

/* Four runs let go together fill a batch; the engine refuses one of them
 * (too little room for its output), which gets CEP_ENOSPC with the room
 * it needs, exactly as alone, while the other three are merged. */
Test(batch, a_run_that_does_not_fit_goes_alone_and_the_others_are_merged)
{
	enum { CLIENTS = 4 };
	static struct client k[CLIENTS];
	pthread_barrier_t bar;
	pthread_t th[CLIENTS];
	unsigned seed = 17;

	start("1000000", "4", NULL);
	pthread_barrier_init(&bar, NULL, CLIENTS);
	for (int i = 0; i < CLIENTS; i++) {
		client_open(&k[i], i, true, &bar);
		client_fill(&k[i], 1, &seed);
	}
	k[2].room = sizeof(float) * D - 4;
	for (int i = 0; i < CLIENTS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, client_run, &k[i]), 0);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < CLIENTS; i++) {
		if (i == 2) {
			cr_assert_eq(k[i].ret, CEP_ENOSPC, "%s", cep_err_name(k[i].ret));
			cr_assert(strstr(k[i].why, "output 'y' needs 128 bytes, 124 are given"),
				  "%s", k[i].why);
			continue;
		}
		cr_assert_eq(k[i].ret, 0, "client %d: %s", i, k[i].why);
	}
	cr_assert_eq(h_counter(k[0].c, "batch_size_3_4"), 1);
	cr_assert_eq(h_counter(k[0].c, "batch_runs"), 3);
	cr_assert_eq(h_counter(k[0].c, "batch_alone"), 1);
	cr_assert_eq(h_counter(k[0].c, "batch_refused"), 0, "the batch went, without it");
	for (int i = 0; i < CLIENTS; i++)
		client_close(&k[i]);
	pthread_barrier_destroy(&bar);
	stop();
}

/* Two runs of two rows of the Gather model, one with an index out of
 * range: their batch (of 4 rows, a full one) fails, and so does each of
 * them, with the error. */
struct gather_client {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	int64_t bad;               /* its second index */
	int ret;
	char why[256];
	pthread_barrier_t *start;
};

static void *gather_run(void *arg)
{
	struct gather_client *g = arg;
	float *x = cep_region_data(g->r);
	int64_t *idx = (int64_t *)(x + 8);
	cep_tensor in[2] = {
		{ .name = "x", .region = g->r, .offset = 0, .bytes = 8 * sizeof(float),
		  .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { 2, 4 } },
		{ .name = "idx", .region = g->r, .offset = 8 * sizeof(float),
		  .bytes = 2 * sizeof(int64_t), .dtype = CEP_DTYPE_INT64, .rank = 1,
		  .shape = { 2 } },
	};
	cep_tensor out = { .name = "y", .region = g->r,
			   .offset = 8 * sizeof(float) + 2 * sizeof(int64_t),
			   .bytes = 8 * sizeof(float) };

	for (int i = 0; i < 8; i++)
		x[i] = (float)i;
	idx[0] = 0;
	idx[1] = g->bad;
	pthread_barrier_wait(g->start);
	g->ret = cep_run(g->s, in, 2, &out, 1);
	snprintf(g->why, sizeof(g->why), "%s", cep_last_error());
	return NULL;
}

Test(batch, a_failing_batch_fails_each_of_its_runs)
{
	struct gather_client g[2];
	pthread_barrier_t bar;
	pthread_t th[2];
	uint64_t errors;

	start("1000000", "4", NULL);
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		memset(&g[i], 0, sizeof(g[i]));
		g[i].c = h_connect(&d, "gather");
		g[i].s = load(g[i].c, gather_path, true);
		g[i].start = &bar;
		g[i].bad = i ? 1000 : 1;
		cr_assert_eq(cep_region_new(g[i].c, 4096, &g[i].r), 0);
	}
	errors = h_counter(g[0].c, "run_errors");
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, gather_run, &g[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(h_counter(g[0].c, "batch_size_2"), 1, "the two runs were merged");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(g[i].ret, CEP_EINVAL, "run %d: %s", i, cep_err_name(g[i].ret));
		cr_assert(strstr(g[i].why, "Gather") != NULL, "run %d: %s", i, g[i].why);
	}
	cr_assert_eq(h_counter(g[0].c, "run_errors"), errors + 2);
	for (int i = 0; i < 2; i++) {
		cep_region_free(g[i].r);
		cep_session_free(g[i].s);
		cep_close(g[i].c);
	}
	pthread_barrier_destroy(&bar);
	stop();
}

Test(batch, a_model_that_cannot_batch_runs_alone)
{
	cep_client *c;
	cep_session *s;
	cep_region *r;
	cudaep_v1_SessionEntry e;
	float *x, *y;
	cep_tensor in = { .name = "x", .offset = 0, .bytes = 8 * sizeof(float),
			  .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { 4, 2 } };
	cep_tensor out = { .name = "y", .offset = 8 * sizeof(float), .bytes = 8 * sizeof(float) };

	start("1000", "32", NULL);
	c = h_connect(&d, "columns");
	s = load(c, cols_path, true);
	cr_assert(h_wait_log(&d, "asked for batching; its runs go alone: input 'x' has no "
			     "symbolic dimension 0"));
	session_entry(c, cep_session_id(s), &e);
	cr_assert_not(e.batching);
	cr_assert_eq(cep_region_new(c, 4096, &r), 0);
	in.region = out.region = r;
	x = cep_region_data(r);
	y = x + 8;
	for (int i = 0; i < 8; i++)
		x[i] = (float)(i - 4);
	cr_assert_eq(cep_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (int i = 0; i < 8; i++)
		cr_assert_eq(y[i], x[i] > 0 ? x[i] : 0.0f);
	cr_assert_eq(h_counter(c, "batch_alone") + h_counter(c, "batches"), 0);
	cr_assert_eq(h_gauge(c, "batch_groups"), 0);
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
	stop();
}

Test(batch, a_client_killed_while_its_run_waits_is_dropped)
{
	cep_client *watch, *k;
	cep_session *s;
	int64_t base_sessions, base_regions, base_device;
	int base_fds, st;
	unsigned seed = 3;
	pid_t pid;
	struct client other;
	pthread_barrier_t one;

	/* A window of a second: the run waits there when it is killed. */
	start("1000000", "32", NULL);
	watch = h_connect(&d, "watcher");
	base_sessions = h_gauge(watch, "sessions");
	base_regions = h_gauge(watch, "regions");
	base_device = h_mem_current(watch, "total", "device");
	base_fds = h_settled_fds(&d, watch, 1);
	/* A second batching session of the model that never runs: with it,
	 * the child's lone run waits for it in the window (a group whose
	 * every session has a run waiting goes at once). */
	k = h_connect(&d, "idle");
	s = load(k, mlp_path, true);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		cep_session_options o = { .batching = 1 };
		cep_client *c = NULL;
		cep_region *r = NULL;
		float *x;

		if (cep_connect(d.sock, "doomed", &c) != 0 ||
		    cep_session_load(c, mlp_path, &o, &s) != 0 ||
		    cep_region_new(c, 2 * sizeof(float) * D, &r) != 0)
			_exit(10);
		x = cep_region_data(r);
		for (int i = 0; i < D; i++)
			x[i] = (float)i;
		{
			cep_tensor in = { .name = "x", .region = r, .offset = 0,
					  .bytes = sizeof(float) * D, .dtype = CEP_DTYPE_FLOAT32,
					  .rank = 2, .shape = { 1, D } };
			cep_tensor out = { .name = "y", .region = r,
					   .offset = sizeof(float) * D,
					   .bytes = sizeof(float) * D };

			(void)cep_run(s, &in, 1, &out, 1);
		}
		_exit(11);
	}
	cr_assert_eq(h_wait_gauge(watch, "batch_waiting", 1), 1, "the child's run never "
		     "waited in its window");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st), "the child ended before it was killed (status %#x)", st);
	cr_assert_eq(h_wait_gauge(watch, "batch_waiting", 0), 0);
	cr_assert_eq(h_counter(watch, "batch_dropped"), 1, "the run was dropped, not run");
	cr_assert_eq(h_counter(watch, "batch_runs") + h_counter(watch, "batch_alone"), 0);
	cep_session_free(s);
	cep_close(k);
	cr_assert_eq(h_wait_gauge(watch, "connections", 1), 1);
	cr_assert_eq(h_gauge(watch, "runs_in_flight"), 0);
	cr_assert_eq(h_gauge(watch, "sessions"), base_sessions);
	cr_assert_eq(h_gauge(watch, "regions"), base_regions);
	cr_assert_eq(h_wait_gauge(watch, "batch_groups", 0), 0);
	cr_assert_eq(h_mem_current(watch, "total", "device"), base_device);
	cr_assert_eq(h_wait_fd_count(&d, base_fds), base_fds, "the daemon kept fds of the "
		     "killed client or its group");
	/* The daemon batches on: a new client, its model's only batching
	 * session, runs alone. */
	pthread_barrier_init(&one, NULL, 1);
	client_open(&other, 1, true, &one);
	client_fill(&other, 2, &seed);
	round_run(&other, 1);
	k = h_connect(&d, "reference");
	s = load(k, mlp_path, false);
	{
		cep_region *rr;

		cr_assert_eq(cep_region_new(k, 2 * sizeof(float) * MAX_ROWS * D, &rr), 0);
		expect_alone(&other, s, rr);
		cep_region_free(rr);
	}
	cr_assert_eq(h_counter(watch, "batch_alone"), 1);
	client_close(&other);
	cep_session_free(s);
	cep_close(k);
	pthread_barrier_destroy(&one);
	cep_close(watch);
	stop();
}
