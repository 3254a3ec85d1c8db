/*
 * test_fairq.c — the fair queue of runs with a fence (daemon/fairq.h),
 * in-process: a server on the host backend with queued streams (as a GPU
 * queues work), its loop on a thread, and clients of libcudaep-client on
 * this one.
 *
 * The backend's host functions, which complete runs, are put in one order
 * across every stream: the order the daemon queued them, as one device
 * working through its work would, and are held behind a gate while the
 * test looks at the queue. So the order in which runs complete is the
 * order the daemon submitted them, and the tests assert on that order,
 * never on time.
 *
 * Checked: with max_runs_in_flight 2 a client's 20 runs are all answered
 * at once, 18 of them wait (runs_waiting, runs_queued), and all complete,
 * correct and in order; a client that floods 50 runs does not delay
 * another client's one run behind them; a high-priority session's waiting
 * runs start before a low one's; a waiting run of a shape not planned yet
 * is described, and later submitted, on the thread pool; a client that
 * disconnects, a session
 * unloaded and a session killed with runs waiting leave every gauge at its
 * baseline (the killed one's waiting runs fail with CEP_ECANCELED, the
 * unloaded one's still run); and the configuration key.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "daemon_util.h"
#include "onnxb.h"

#include "fairq.h"
#include "fence.h"
#include "internal.h"

#define D     8            /* y = Relu(x W): x [ROWS, D], W [D, D] */
#define ROWS  4
#define RUNS  64           /* runs one test client can have at once */
#define XB    (sizeof(float) * ROWS * D)

static char tmpdir[] = "/tmp/cep-fairq-XXXXXX";
static float W[D * D];

static void setup(void)
{
	log_level_set(LOG_CRIT);
	cr_assert_not_null(mkdtemp(tmpdir));
	for (int i = 0; i < D * D; i++)
		W[i] = (float)((i * 7) % 11) / 8.0f - 0.5f;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(fairq, .init = setup, .fini = teardown, .timeout = 60);

/* ------------------------------------------------------- ordered completion */

/* One queued host function, waiting for its turn to be called. */
struct ticket {
	backend_host_fn fn;
	void *arg;
	uint64_t no;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	bool open;               /* completions may happen */
	uint64_t issued, done;   /* tickets handed out / called */
	uint64_t log[1024];      /* (client id << 32 | fence seq), as completed */
	size_t n_log;
	int (*host_fn)(struct backend *b, struct backend_stream *s, backend_host_fn fn,
		       void *arg);
} g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, true, 0, 0, { 0 }, 0, NULL };

/* On a stream's thread: waits until the gate is open and every host
 * function queued before this one was called, then calls it. */
static void gate_fn(void *arg)
{
	struct ticket *t = arg;
	const struct fence_run *r = t->arg;

	pthread_mutex_lock(&g.lock);
	while (!g.open || g.done != t->no)
		pthread_cond_wait(&g.moved, &g.lock);
	if (g.n_log < sizeof(g.log) / sizeof(g.log[0]))
		g.log[g.n_log++] = r->c->id << 32 | r->seq;
	pthread_mutex_unlock(&g.lock);
	t->fn(t->arg);
	pthread_mutex_lock(&g.lock);
	g.done++;
	pthread_cond_broadcast(&g.moved);
	pthread_mutex_unlock(&g.lock);
	free(t);
}

/* The backend's stream_host_fn, numbering each call. A stream is used by
 * one thread at a time, so its tickets grow along its queue and every
 * ticket is reached. */
static int gate_host_fn(struct backend *b, struct backend_stream *s, backend_host_fn fn,
			void *arg)
{
	struct ticket *t = malloc(sizeof(*t));

	if (t == NULL)
		abort();
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&g.lock);
	t->no = g.issued++;
	pthread_mutex_unlock(&g.lock);
	return g.host_fn(b, s, gate_fn, t);
}

static void gate_set(bool open)
{
	pthread_mutex_lock(&g.lock);
	g.open = open;
	pthread_cond_broadcast(&g.moved);
	pthread_mutex_unlock(&g.lock);
}

/* Completions logged so far. */
static size_t log_mark(void)
{
	size_t n;

	pthread_mutex_lock(&g.lock);
	n = g.n_log;
	pthread_mutex_unlock(&g.lock);
	return n;
}

/* ------------------------------------------------------------------ server */

static struct {
	uv_loop_t loop;
	uv_async_t stop;
	struct server *s;
	pthread_t thread;
} d;

static void *loop_main(void *arg)
{
	uv_run(&d.loop, UV_RUN_DEFAULT);
	return NULL;
}

static void on_stop(uv_async_t *h)
{
	server_stop(d.s);
	uv_close((uv_handle_t *)h, NULL);
}

/* A listening server with max_runs_in_flight bound, on the queued host
 * backend whose completions go in one order. */
static void start(const char *bound)
{
	struct config cfg;
	char err[256];

	config_init(&cfg);
	cfg.backend = CONFIG_BACKEND_HOST_ASYNC;
	snprintf(cfg.socket, sizeof(cfg.socket), "%s/fairq.sock", tmpdir);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", bound, err, sizeof(err)), 0, "%s",
		     err);
	g.issued = g.done = 0;
	g.n_log = 0;
	g.open = true;
	cr_assert_eq(uv_loop_init(&d.loop), 0);
	cr_assert_eq(server_new(&cfg, &d.s), 0);
	g.host_fn = d.s->backend->iface.stream_host_fn;
	d.s->backend->iface.stream_host_fn = gate_host_fn;
	cr_assert_eq(uv_async_init(&d.loop, &d.stop, on_stop), 0);
	cr_assert_eq(server_listen(d.s, &d.loop), 0);
	cr_assert_eq(pthread_create(&d.thread, NULL, loop_main, NULL), 0);
}

/* Stops the server and checks that it left nothing behind. */
static void stop(void)
{
	gate_set(true);
	uv_async_send(&d.stop);
	cr_assert_eq(pthread_join(d.thread, NULL), 0);
	cr_assert_eq(d.s->n_conns, 0);
	cr_assert_eq(d.s->fairq.waiting, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_RUNS_WAITING].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_RUNS_IN_FLIGHT].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_REGIONS].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	server_free(d.s);
	cr_assert_eq(uv_loop_close(&d.loop), 0, "handles left open");
}

/* ------------------------------------------------------------------ client */

/* A client with one session and room for RUNS runs in one region. */
struct cl {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	cep_tensor in[RUNS], out[RUNS];
	cep_fence fence[RUNS];
	uint64_t seq[RUNS];        /* each run's fence number */
	unsigned seed;
};

static cep_client *dial(const char *name)
{
	cep_client *c = NULL;
	int ret = cep_connect(d.s->socket_path, name, &c);

	cr_assert_eq(ret, 0, "cep_connect: %s: %s", cep_err_name(ret), cep_last_error());
	return c;
}

static cep_session *load(cep_client *c, cep_priority prio)
{
	cep_session_options o = { .name = "mlp", .priority = prio };
	struct onnxb *b = onnxb_new(13);
	cep_session *s = NULL;
	uint8_t *bytes;
	size_t len;
	int fd, ret;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "8,8", W);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Relu", "h", "y");
	bytes = onnxb_finish(b, &len);
	fd = memfd_create("model", MFD_CLOEXEC);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	ret = cep_session_load_fd(c, fd, -1, &o, &s);
	close(fd);
	cr_assert_eq(ret, 0, "load: %s: %s", cep_err_name(ret), cep_last_error());
	return s;
}

/* Lays out run i's tensors in the region: x, then y. */
static void cl_tensors(struct cl *t, cep_session *s)
{
	uint8_t *base = cep_region_data(t->r);

	for (int i = 0; i < RUNS; i++) {
		t->in[i] = (cep_tensor){ .name = "x", .region = t->r, .offset = 2 * XB * (size_t)i,
					 .bytes = XB, .dtype = CEP_DTYPE_FLOAT32, .rank = 2,
					 .shape = { ROWS, D } };
		t->out[i] = (cep_tensor){ .name = "y", .region = t->r,
					  .offset = 2 * XB * (size_t)i + XB, .bytes = XB };
		(void)base;
	}
	t->s = s;
}

static void cl_open(struct cl *t, const char *name, cep_priority prio)
{
	memset(t, 0, sizeof(*t));
	t->c = dial(name);
	t->seed = (unsigned)name[0] * 7919u;
	cr_assert_eq(cep_region_new(t->c, 2 * XB * RUNS, &t->r), 0, "%s", cep_last_error());
	cl_tensors(t, load(t->c, prio));
}

static void cl_close(struct cl *t)
{
	cr_assert_eq(cep_session_free(t->s), 0, "%s", cep_last_error());
	cr_assert_eq(cep_region_free(t->r), 0, "%s", cep_last_error());
	cep_close(t->c);
}

static float *xs(struct cl *t, int i)
{
	return (float *)((uint8_t *)cep_region_data(t->r) + t->in[i].offset);
}

static float *ys(struct cl *t, int i)
{
	return (float *)((uint8_t *)cep_region_data(t->r) + t->out[i].offset);
}

/* Fills run i's input with fresh numbers and its output with a pattern
 * no run writes, then submits it. */
static void submit(struct cl *t, int i)
{
	float *x = xs(t, i);
	int ret;

	for (int k = 0; k < t->in[i].shape[0] * D; k++) {
		t->seed = t->seed * 1103515245u + 12345u;
		x[k] = (float)((t->seed >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
	memset(ys(t, i), 0xa5, XB);
	ret = cep_run_submit(t->s, &t->in[i], 1, &t->out[i], 1, &t->fence[i]);
	cr_assert_eq(ret, 0, "submit %d: %s: %s", i, cep_err_name(ret), cep_last_error());
	t->seq[i] = t->fence[i].seq;
	cr_assert_gt(t->seq[i], 0, "the run has a fence");
}

/* Waits for run i and checks y = Relu(x W). */
static void wait_ok(struct cl *t, int i)
{
	const float *x = xs(t, i), *y = ys(t, i);
	int ret = cep_fence_wait(&t->fence[i], CEP_WAIT_FOREVER);

	cr_assert_eq(ret, 0, "run %d: %s: %s", i, cep_err_name(ret), cep_last_error());
	for (int r = 0; r < t->in[i].shape[0]; r++)
		for (int j = 0; j < D; j++) {
			float s = 0.0f;

			for (int k = 0; k < D; k++)
				s += x[r * D + k] * W[k * D + j];
			s = s > 0.0f ? s : 0.0f;
			cr_assert(fabsf(y[r * D + j] - s) <= 1e-5f + 1e-5f * fabsf(s),
				  "run %d y[%d][%d] = %g, want %g", i, r, j, y[r * D + j], s);
		}
}

static int64_t gauge_settled(cep_client *c, const char *name, int64_t want);

/* Plans and warms the session's plan, so that later runs are submitted on
 * the loop and nothing syncs a stream that the gate holds; returns once
 * the daemon has finished them (a client sees its fence first), so that
 * they no longer count against the bound. */
static void warm(struct cl *t)
{
	for (int i = 0; i < 3; i++) {
		submit(t, i);
		wait_ok(t, i);
	}
	cr_assert_eq(gauge_settled(t->c, "runs_in_flight", 0), 0);
}

/* The completion of t's run i in the log: its index from mark on, or -1. */
static long done_at(struct cl *t, int i, size_t mark)
{
	uint64_t key = cep_client_id(t->c) << 32 | t->seq[i];
	long at = -1;

	pthread_mutex_lock(&g.lock);
	for (size_t k = mark; k < g.n_log; k++)
		if (g.log[k] == key)
			at = (long)(k - mark);
	pthread_mutex_unlock(&g.lock);
	return at;
}

/* ------------------------------------------------------------------ stats */

static cudaep_v1_Response *stats_reply(cep_client *c)
{
	static cudaep_v1_Response *resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int ret;

	if (resp == NULL)
		resp = calloc(1, sizeof(*resp));
	cr_assert_not_null(resp);
	req.which_body = cudaep_v1_Request_stats_tag;
	ret = cep__call(c, &req, NULL, 0, resp);
	cr_assert_eq(ret, 0, "Stats: %s: %s", cep_err_name(ret), cep_last_error());
	cr_assert_eq(resp->which_body, cudaep_v1_Response_stats_tag);
	return resp;
}

static int64_t gauge(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->gauges_count; i++)
		if (strcmp(s->gauges[i].name, name) == 0)
			return s->gauges[i].current;
	cr_assert_fail("no gauge '%s'", name);
	return 0;
}

static uint64_t counter(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->counters_count; i++)
		if (strcmp(s->counters[i].name, name) == 0)
			return s->counters[i].value;
	cr_assert_fail("no counter '%s'", name);
	return 0;
}

/* The gauge once it is want, or its value after ten seconds of asking
 * (what the daemon does after a client's request is not ordered with
 * another client's). */
static int64_t gauge_settled(cep_client *c, const char *name, int64_t want)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	int64_t v = gauge(c, name);

	for (int i = 0; v != want && i < 2000; i++) {
		nanosleep(&ts, NULL);
		v = gauge(c, name);
	}
	return v;
}

/* ------------------------------------------------------------------- tests */

Test(fairq, twenty_runs_over_a_bound_of_two_wait_and_complete_in_order)
{
	struct cl a;
	uint64_t queued;
	size_t mark;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	warm(&a);
	queued = counter(a.c, "runs_queued");
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 23; i++)
		submit(&a, i);
	/* Every run is answered; two are on the device, the rest wait. */
	cr_assert_eq(gauge(a.c, "runs_waiting"), 18);
	cr_assert_eq(gauge(a.c, "runs_in_flight"), 20);
	cr_assert_eq(counter(a.c, "runs_queued") - queued, 18);
	gate_set(true);
	for (int i = 3; i < 23; i++) {
		wait_ok(&a, i);
		cr_assert_eq(done_at(&a, i, mark), i - 3, "run %d completed out of order", i);
	}
	cr_assert_eq(gauge_settled(a.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 0);
	cr_assert_eq(counter(a.c, "runs_fenced"), 23);
	cl_close(&a);
	stop();
}

Test(fairq, a_flooding_client_does_not_delay_another_behind_its_runs)
{
	struct cl a, b;
	size_t mark;
	long at;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	cl_open(&b, "b", CEP_PRIORITY_NORMAL);
	warm(&a);
	warm(&b);
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 53; i++)
		submit(&a, i);
	cr_assert_eq(gauge(b.c, "runs_waiting"), 48);
	submit(&b, 3);
	/* b had nothing on the device: its run went straight there. */
	cr_assert_eq(gauge(b.c, "runs_waiting"), 48);
	cr_assert_eq(gauge(b.c, "runs_in_flight"), 51);
	gate_set(true);
	for (int i = 3; i < 53; i++)
		wait_ok(&a, i);
	wait_ok(&b, 3);
	/* On the device behind a's two, ahead of a's other 48. */
	at = done_at(&b, 3, mark);
	cr_assert_eq(at, 2, "b's run completed as number %ld of 51", at);
	for (int i = 3; i < 53; i++)
		cr_assert_eq(done_at(&a, i, mark), i - 3 + (i >= 5), "a's run %d", i);
	cr_assert_eq(gauge_settled(b.c, "runs_in_flight", 0), 0);
	cl_close(&a);
	cl_close(&b);
	stop();
}

Test(fairq, a_high_priority_sessions_runs_start_before_a_low_ones)
{
	struct cl lo, hi;
	size_t mark;

	start("2");
	/* One connection, two sessions: the bound is the connection's. */
	cl_open(&lo, "l", CEP_PRIORITY_LOW);
	hi = lo;
	hi.seed = 17;
	cl_tensors(&hi, load(lo.c, CEP_PRIORITY_HIGH));
	warm(&lo);
	warm(&hi);
	gate_set(false);
	mark = log_mark();
	for (int i = 3; i < 8; i++)
		submit(&lo, i);
	for (int i = 8; i < 11; i++)
		submit(&hi, i);
	cr_assert_eq(gauge(lo.c, "runs_waiting"), 6);
	gate_set(true);
	for (int i = 3; i < 8; i++)
		wait_ok(&lo, i);
	for (int i = 8; i < 11; i++)
		wait_ok(&hi, i);
	/* low 3, 4 were on the device; then every high run, then low 5-7. */
	cr_assert_eq(done_at(&lo, 3, mark), 0);
	cr_assert_eq(done_at(&lo, 4, mark), 1);
	for (int i = 8; i < 11; i++)
		cr_assert_eq(done_at(&hi, i, mark), i - 6, "high run %d", i);
	for (int i = 5; i < 8; i++)
		cr_assert_eq(done_at(&lo, i, mark), i, "low run %d", i);
	cr_assert_eq(cep_session_free(hi.s), 0);
	cl_close(&lo);
	stop();
}

struct submitter {
	struct cl *t;
	int i, ret;
};

static void *submit_thread(void *arg)
{
	struct submitter *u = arg;

	u->ret = cep_run_submit(u->t->s, &u->t->in[u->i], 1, &u->t->out[u->i], 1,
				&u->t->fence[u->i]);
	u->t->seq[u->i] = u->t->fence[u->i].seq;
	return NULL;
}

Test(fairq, a_waiting_run_of_a_new_shape_is_planned_and_started_off_the_loop)
{
	struct cl a, w;
	struct submitter u;
	pthread_t th;
	uint64_t queued;
	size_t mark;

	start("2");
	cl_open(&w, "w", CEP_PRIORITY_NORMAL);
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	warm(&a);
	queued = counter(w.c, "runs_queued");
	gate_set(false);
	mark = log_mark();
	submit(&a, 3);
	submit(&a, 4);
	/* Two rows: a shape a has no plan for. Planning it waits for the
	 * session's stream, which the gate holds, so it is submitted from
	 * another thread and the gate opens once the daemon works on it. */
	a.in[5].shape[0] = 2;
	a.in[5].bytes = sizeof(float) * 2 * D;
	for (int k = 0; k < 2 * D; k++)
		xs(&a, 5)[k] = (float)k / 8.0f - 1.0f;
	memset(ys(&a, 5), 0xa5, XB);
	u = (struct submitter){ .t = &a, .i = 5 };
	cr_assert_eq(pthread_create(&th, NULL, submit_thread, &u), 0);
	cr_assert_eq(gauge_settled(w.c, "jobs", 1), 1, "the new shape is planned off the loop");
	cr_assert_eq(gauge(w.c, "runs_waiting"), 0, "not waiting before it is described");
	gate_set(true);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(u.ret, 0, "submit: %s", cep_err_name(u.ret));
	wait_ok(&a, 3);
	wait_ok(&a, 4);
	wait_ok(&a, 5);
	cr_assert_eq(done_at(&a, 5, mark), 2);
	cr_assert_eq(counter(w.c, "runs_queued") - queued, 1, "it waited for its turn");
	cr_assert_eq(gauge_settled(w.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge(w.c, "jobs"), 0);
	cl_close(&a);
	cl_close(&w);
	stop();
}

Test(fairq, a_client_gone_with_runs_waiting_leaves_nothing)
{
	struct cl a, w;
	int64_t conns, sessions, regions;

	start("2");
	cl_open(&w, "w", CEP_PRIORITY_NORMAL);
	conns = gauge(w.c, "connections");
	sessions = gauge(w.c, "sessions");
	regions = gauge(w.c, "regions");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	warm(&a);
	gate_set(false);
	for (int i = 3; i < 23; i++)
		submit(&a, i);
	cr_assert_eq(gauge(w.c, "runs_waiting"), 18);
	/* Gone without a word: its waiting runs never start, its two on the
	 * device hold its regions until they complete. */
	cep_close(a.c);
	cr_assert_eq(gauge_settled(w.c, "runs_waiting", 0), 0);
	cr_assert_eq(gauge(w.c, "runs_in_flight"), 2);
	gate_set(true);
	cr_assert_eq(gauge_settled(w.c, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge_settled(w.c, "connections", conns), conns);
	cr_assert_eq(gauge(w.c, "sessions"), sessions);
	cr_assert_eq(gauge(w.c, "regions"), regions);
	/* The queue serves the clients that are left. */
	submit(&w, 0);
	wait_ok(&w, 0);
	cl_close(&w);
	stop();
}

Test(fairq, runs_waiting_for_an_unloaded_session_still_run)
{
	struct cl a;
	int64_t sessions;

	start("2");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	sessions = gauge(a.c, "sessions");
	warm(&a);
	gate_set(false);
	for (int i = 3; i < 13; i++)
		submit(&a, i);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 8);
	cr_assert_eq(cep_session_free(a.s), 0, "%s", cep_last_error());
	gate_set(true);
	for (int i = 3; i < 13; i++)
		wait_ok(&a, i);
	cr_assert_eq(gauge_settled(a.c, "sessions", sessions - 1), sessions - 1);
	cr_assert_eq(gauge(a.c, "runs_waiting"), 0);
	cr_assert_eq(cep_region_free(a.r), 0);
	cep_close(a.c);
	stop();
}

Test(fairq, runs_waiting_for_a_killed_session_fail_and_let_go)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	static cudaep_v1_Response resp;
	struct cl a;
	cep_client *admin;
	uint64_t errors;
	int64_t sessions;
	int ret;

	start("2");
	/* This process is the daemon's own user: an admin. */
	admin = dial("admin");
	sessions = gauge(admin, "sessions");
	cl_open(&a, "a", CEP_PRIORITY_NORMAL);
	warm(&a);
	errors = counter(admin, "run_errors");
	gate_set(false);
	for (int i = 3; i < 13; i++)
		submit(&a, i);
	cr_assert_eq(gauge(admin, "runs_waiting"), 8);
	req.which_body = cudaep_v1_Request_kill_session_tag;
	req.body.kill_session.session_id = cep_session_id(a.s);
	ret = cep__call(admin, &req, NULL, 0, &resp);
	cr_assert_eq(ret, 0, "KillSession: %s: %s", cep_err_name(ret), cep_last_error());
	cr_assert_eq(gauge(admin, "runs_waiting"), 0);
	gate_set(true);
	/* The two on the device complete; the waiting ones never started. */
	wait_ok(&a, 3);
	wait_ok(&a, 4);
	for (int i = 5; i < 13; i++) {
		ret = cep_fence_wait(&a.fence[i], CEP_WAIT_FOREVER);
		cr_assert_eq(ret, CEP_ECANCELED, "run %d: %s", i, cep_err_name(ret));
		cr_assert_not_null(strstr(cep_last_error(), "killed by an administrator"),
				   "run %d: %s", i, cep_last_error());
	}
	cr_assert_eq(gauge_settled(admin, "runs_in_flight", 0), 0);
	cr_assert_eq(gauge_settled(admin, "sessions", sessions), sessions);
	cr_assert_eq(counter(admin, "run_errors") - errors, 8);
	cr_assert_eq(cep_session_free(a.s), CEP_ECANCELED, "the session is gone");
	cr_assert_eq(cep_region_free(a.r), 0);
	cep_close(a.c);
	cep_close(admin);
	stop();
}

Test(fairq, max_runs_in_flight_key)
{
	struct config cfg;
	struct server s;
	char err[256];

	config_init(&cfg);
	cr_assert_eq(cfg.max_runs_in_flight, 8, "the default");
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "128", err, sizeof(err)), 0);
	cr_assert_eq(cfg.max_runs_in_flight, 128);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "0", err, sizeof(err)), 0);
	cr_assert_eq(cfg.max_runs_in_flight, 0);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "129", err, sizeof(err)), CEP_EINVAL);
	cr_assert_not_null(strstr(err, "'129' is more than 128"), "%s", err);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "-1", err, sizeof(err)), CEP_EINVAL);
	cr_assert_not_null(strstr(err, "'-1' is not a number of runs (0 for no bound)"), "%s",
			   err);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "4x", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(config_set(&cfg, "max_runs_in_flight", "", err, sizeof(err)), CEP_EINVAL);
	cr_assert_eq(cfg.max_runs_in_flight, 0, "a bad value leaves the key as it was");
	/* 0 bounds nothing but the records. */
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	cr_assert_eq(fairq_bound(&s), FENCE_RUNS);
	s.cfg.max_runs_in_flight = 3;
	cr_assert_eq(fairq_bound(&s), 3);
}
