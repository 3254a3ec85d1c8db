/*
 * test_soak.c — many clients against one cudaepd while a killer SIGKILLs
 * them. CUDAEP_SOAK_CLIENTS (default 16) client processes at a time each
 * connect, register a region, load a small model and run it in a loop on
 * random batches, checking every output against a reference computed
 * here, now and then unloading and loading their session again. The test
 * kills a random one every few milliseconds, whatever it is doing, and
 * starts another in its place, until CUDAEP_SOAK_KILLS (default 1000;
 * `make test SOAK_KILLS=N`) kills have happened. Then the survivors finish
 * and close, and the daemon must be alive with its open fds, connections,
 * sessions, regions, jobs and memory (the account's owners and totals,
 * the arena's used bytes) back at their baseline, and every survivor must
 * have checked its runs and found them all correct.
 *
 * The clients share one page with the test: each one's count of checked
 * runs and, should one go wrong, what happened. Killed clients count too.
 */
#include "tests/integration/harness.h"
#include "tests/integration/tinyonnx.h"

#include <criterion/criterion.h>

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define F 16            /* features in and out */
#define MAX_BATCH 8
#define REGION_BYTES 65536
#define Y_OFFSET 32768  /* bytes into the region where y goes */

/* One client's place, shared with the test. */
struct slot {
	pid_t pid;        /* the client in the slot now; 0: none */
	uint64_t runs;    /* runs it checked (atomic) */
	int failed;       /* set when it went wrong, with why */
	char why[256];
};

struct shared {
	int stop;         /* set by the test: finish and leave (atomic) */
	struct slot slots[MAX_CLIENTS];
};

static struct hdaemon d;
static struct shared *sh;
static float W[F * F], B[F];

static void reap_all(void)
{
	if (sh != NULL) {
		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (sh->slots[i].pid > 0) {
				kill(sh->slots[i].pid, SIGKILL);
				waitpid(sh->slots[i].pid, NULL, 0);
			}
		}
	}
	if (d.pid != 0)
		h_daemon_stop(&d, SIGKILL);
}

TestSuite(soak, .timeout = 900, .fini = reap_all);

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return def;
	v = strtol(s, &end, 10);
	cr_assert(*end == '\0' && v >= lo && v <= hi, "%s=%s: want %d to %d",
		  name, s, lo, hi);
	return (int)v;
}

/* ------------------------------------------------------------ a client */

static void child_fail(struct slot *sl, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void child_fail(struct slot *sl, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sl->why, sizeof(sl->why), fmt, ap);
	va_end(ap);
	__atomic_store_n(&sl->failed, 1, __ATOMIC_RELEASE);
	_exit(status);
}

/* Runs s once on a random batch held in r and checks every output. */
static void child_run(struct slot *sl, cep_session *s, cep_region *r,
		      unsigned *seed)
{
	float *x = cep_region_data(r);
	float *y = (float *)((char *)x + Y_OFFSET);
	int batch = 1 + (int)(rand_r(seed) % MAX_BATCH), rc;
	cep_tensor in = {"x", r, 0, (size_t)batch * F * sizeof(float),
			 CEP_DTYPE_FLOAT32, 2, {batch, F}};
	cep_tensor out = {"y", r, Y_OFFSET, (size_t)MAX_BATCH * F * sizeof(float),
			  CEP_DTYPE_FLOAT32, 0, {0}};

	for (int i = 0; i < batch * F; i++)
		x[i] = (float)rand_r(seed) / (float)RAND_MAX * 4.0f - 2.0f;
	memset(y, 0xff, (size_t)MAX_BATCH * F * sizeof(float));
	rc = cep_run(s, &in, 1, &out, 1);
	if (rc != 0)
		child_fail(sl, 3, "run: %s: %s", cep_err_name(rc), cep_last_error());
	if (out.rank != 2 || out.shape[0] != batch || out.shape[1] != F)
		child_fail(sl, 4, "run: output of rank %d [%lld, %lld], want "
			   "[%d, %d]", out.rank, (long long)out.shape[0],
			   (long long)out.shape[1], batch, F);
	for (int i = 0; i < batch; i++) {
		for (int j = 0; j < F; j++) {
			float want = B[j];

			for (int k = 0; k < F; k++)
				want += x[i * F + k] * W[k * F + j];
			want = want > 0.0f ? want : 0.0f;
			if (!(fabsf(y[i * F + j] - want) <=
			      1e-4f * (1.0f + fabsf(want))))
				child_fail(sl, 5, "run %llu: y[%d][%d] = %g, "
					   "want %g (batch %d)",
					   (unsigned long long)sl->runs, i, j,
					   y[i * F + j], want, batch);
		}
	}
	__atomic_add_fetch(&sl->runs, 1, __ATOMIC_RELEASE);
}

/* A client's whole life, until the test says stop (or kills it). */
static void child_main(int idx, const char *model)
{
	struct slot *sl = &sh->slots[idx];
	unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
	cep_client *c = NULL;
	cep_region *r = NULL;
	cep_session *s = NULL;
	char name[32];
	int rc;

	snprintf(name, sizeof(name), "soak-%d", idx);
	rc = cep_connect(d.sock, name, &c);
	if (rc != 0)
		child_fail(sl, 2, "connect: %s: %s", cep_err_name(rc),
			   cep_last_error());
	rc = cep_region_new(c, REGION_BYTES, &r);
	if (rc != 0)
		child_fail(sl, 2, "region: %s: %s", cep_err_name(rc),
			   cep_last_error());
	rc = cep_session_load(c, model, NULL, &s);
	if (rc != 0)
		child_fail(sl, 2, "load: %s: %s", cep_err_name(rc),
			   cep_last_error());
	/* Every client checks at least one run, however soon it is told
	 * to stop. */
	do {
		child_run(sl, s, r, &seed);
		if (rand_r(&seed) % 64 == 0) {
			/* Churn: a fresh session of the same model. */
			rc = cep_session_free(s);
			if (rc != 0)
				child_fail(sl, 6, "unload: %s: %s",
					   cep_err_name(rc), cep_last_error());
			rc = cep_session_load(c, model, NULL, &s);
			if (rc != 0)
				child_fail(sl, 6, "reload: %s: %s",
					   cep_err_name(rc), cep_last_error());
		}
	} while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE));
	if (cep_session_free(s) != 0 || cep_region_free(r) != 0)
		child_fail(sl, 7, "release: %s", cep_last_error());
	cep_close(c);
	_exit(0);
}

static void spawn(int idx, const char *model)
{
	struct slot *sl = &sh->slots[idx];
	pid_t pid;

	sl->runs = 0;
	sl->failed = 0;
	sl->why[0] = '\0';
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		child_main(idx, model);
	sl->pid = pid;
}

/* ------------------------------------------------------------ baseline */

/* What must come back once every client has gone. */
struct baseline {
	int64_t connections, sessions, regions, region_bytes, jobs, send_queue;
	int fds;
	uint64_t device;      /* the account's total device bytes */
	uint64_t arena_used;  /* the device arena's used bytes */
	int owners;           /* client (but "regions"), session and uid
	                       * entries of the MemoryReply */
};

static void memory_read(cep_client *c, struct baseline *b)
{
	static cudaep_v1_Response resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	req.which_body = cudaep_v1_Request_memory_tag;
	cr_assert_eq(cep__call(c, &req, NULL, 0, &resp), 0, "%s", cep_last_error());
	b->device = 0;
	b->arena_used = 0;
	b->owners = 0;
	for (pb_size_t i = 0; i < resp.body.memory.entries_count; i++) {
		const cudaep_v1_MemoryEntry *e = &resp.body.memory.entries[i];

		if (strcmp(e->owner, "total") == 0 && strcmp(e->role, "device") == 0)
			b->device = e->current;
		if (strcmp(e->owner, "arena") == 0 && strcmp(e->role, "used") == 0)
			b->arena_used = e->current;
		if (strncmp(e->owner, "session:", 8) == 0 ||
		    strncmp(e->owner, "uid:", 4) == 0 ||
		    (strncmp(e->owner, "client:", 7) == 0 &&
		     strcmp(e->role, "regions") != 0))
			b->owners++;
	}
}

static void baseline_read(cep_client *c, struct baseline *b)
{
	b->connections = h_gauge(c, "connections");
	b->sessions = h_gauge(c, "sessions");
	b->regions = h_gauge(c, "regions");
	b->region_bytes = h_gauge(c, "region_bytes");
	b->jobs = h_gauge(c, "jobs");
	b->send_queue = h_gauge(c, "send_queue");
	memory_read(c, b);
	b->fds = h_daemon_fd_count(&d);
}

static bool baseline_equal(const struct baseline *a, const struct baseline *b)
{
	return a->connections == b->connections && a->sessions == b->sessions &&
	       a->regions == b->regions && a->region_bytes == b->region_bytes &&
	       a->jobs == b->jobs && a->send_queue == b->send_queue &&
	       a->fds == b->fds && a->device == b->device &&
	       a->arena_used == b->arena_used && a->owners == b->owners;
}

/* ---------------------------------------------------------------- test */

Test(soak, clients_killed_at_random_leave_nothing_behind)
{
	int kills_target = env_int("CUDAEP_SOAK_KILLS", 1000, 1, 10000000);
	int n = env_int("CUDAEP_SOAK_CLIENTS", 16, 1, MAX_CLIENTS);
	const char *args[] = {"--log-level", "notice", NULL};
	int64_t io[2] = {-1, F}, wd[2] = {F, F}, bd[1] = {F};
	struct baseline base, now;
	struct tonnx m = {{0}};
	char model[160], why[4096];
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	uint64_t runs_killed = 0, runs_survived = 0;
	int kills = 0, failures = 0, st;
	size_t len, why_len = 0;
	cep_client *watch;
	uint8_t *bytes;
	FILE *f;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	srand(seed);
	for (int i = 0; i < F * F; i++)
		W[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	for (int i = 0; i < F; i++)
		B[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	tonnx_input(&m, "x", 2, io);
	tonnx_output(&m, "y", 2, io);
	tonnx_weight(&m, "w", 2, wd, W);
	tonnx_weight(&m, "b", 1, bd, B);
	tonnx_node(&m, "MatMul", "x", "w", "h");
	tonnx_node(&m, "Add", "h", "b", "z");
	tonnx_node(&m, "Relu", "z", NULL, "y");
	bytes = tonnx_finish(&m, &len);

	cr_assert_eq(h_daemon_start(&d, args), 0, "cudaepd did not start");
	snprintf(model, sizeof(model), "%s/soak.onnx", d.dir);
	f = fopen(model, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
	watch = h_connect(&d, "watcher");

	/* One client's whole life first, so that the baseline holds what the
	 * daemon keeps once it has served the model (caches, the arena's
	 * mapped memory). */
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	spawn(0, model);
	cr_assert_eq(waitpid(sh->slots[0].pid, &st, 0), sh->slots[0].pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the first client failed (status %#x): %s", st, sh->slots[0].why);
	sh->slots[0].pid = 0;
	cr_assert_eq(h_wait_gauge(watch, "connections", 1), 1);
	(void)h_settled_fds(&d, watch, 1);
	baseline_read(watch, &base);
	cr_assert_eq(base.connections, 1);
	__atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);

	for (int i = 0; i < n; i++)
		spawn(i, model);
	while (kills < kills_target) {
		struct timespec pause = {0, (long)(rand() % 5000) * 1000L};
		int i = rand() % n;

		nanosleep(&pause, NULL);
		/* A client that ended by itself went wrong. */
		for (int k = 0; k < n; k++) {
			if (waitpid(sh->slots[k].pid, &st, WNOHANG) !=
			    sh->slots[k].pid)
				continue;
			failures++;
			why_len += (size_t)snprintf(why + why_len,
				why_len < sizeof(why) ? sizeof(why) - why_len : 0,
				"client %d ended (status %#x): %s\n", k, st,
				sh->slots[k].why);
			runs_killed += __atomic_load_n(&sh->slots[k].runs,
						       __ATOMIC_ACQUIRE);
			spawn(k, model);
		}
		cr_assert_eq(kill(sh->slots[i].pid, SIGKILL), 0);
		cr_assert_eq(waitpid(sh->slots[i].pid, &st, 0), sh->slots[i].pid);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
		    __atomic_load_n(&sh->slots[i].failed, __ATOMIC_ACQUIRE)) {
			failures++;
			why_len += (size_t)snprintf(why + why_len,
				why_len < sizeof(why) ? sizeof(why) - why_len : 0,
				"client %d (status %#x): %s\n", i, st,
				sh->slots[i].why);
		}
		runs_killed += __atomic_load_n(&sh->slots[i].runs, __ATOMIC_ACQUIRE);
		kills++;
		spawn(i, model);
	}
	cr_expect_eq(kill(d.pid, 0), 0, "the daemon died");

	/* The survivors finish: each must have checked its runs. */
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < n; i++) {
		int64_t deadline = h_now_ms() + 60000;
		pid_t got;

		while ((got = waitpid(sh->slots[i].pid, &st, WNOHANG)) == 0 &&
		       h_now_ms() < deadline)
			usleep(2000);
		if (got != sh->slots[i].pid) {
			kill(sh->slots[i].pid, SIGKILL);
			waitpid(sh->slots[i].pid, &st, 0);
			snprintf(sh->slots[i].why, sizeof(sh->slots[i].why),
				 "did not finish within 60 s of being told");
			st = -1;
		}
		sh->slots[i].pid = 0;
		if (st != 0) {
			failures++;
			why_len += (size_t)snprintf(why + why_len,
				why_len < sizeof(why) ? sizeof(why) - why_len : 0,
				"survivor %d (status %#x): %s\n", i, st,
				sh->slots[i].why);
			continue;
		}
		cr_expect_gt(sh->slots[i].runs, 0, "survivor %d checked no run", i);
		runs_survived += sh->slots[i].runs;
		fprintf(stderr, "soak: survivor %d checked %llu runs\n", i,
			(unsigned long long)sh->slots[i].runs);
	}
	fprintf(stderr, "soak: %d clients at a time, %d SIGKILLs; runs checked: "
		"%llu by killed clients, %llu by the survivors\n", n, kills,
		(unsigned long long)runs_killed, (unsigned long long)runs_survived);
	cr_expect_eq(failures, 0, "%d clients went wrong:\n%s", failures, why);

	/* The daemon is alive and everything is back where it was. */
	cr_assert_eq(cep_ping(watch), 0, "the daemon does not answer: %s",
		     cep_last_error());
	{
		int64_t deadline = h_now_ms() + 20000;

		do {
			(void)h_gauge(watch, "connections");
			baseline_read(watch, &now);
			if (baseline_equal(&now, &base))
				break;
			usleep(20000);
		} while (h_now_ms() < deadline);
	}
	cr_expect_eq(now.connections, base.connections);
	cr_expect_eq(now.sessions, base.sessions);
	cr_expect_eq(now.regions, base.regions);
	cr_expect_eq(now.region_bytes, base.region_bytes);
	cr_expect_eq(now.jobs, base.jobs);
	cr_expect_eq(now.send_queue, base.send_queue);
	cr_expect_eq(now.fds, base.fds, "the daemon has %d fds open, %d before",
		     now.fds, base.fds);
	cr_expect_eq(now.device, base.device, "device memory: %llu bytes, %llu "
		     "before", (unsigned long long)now.device,
		     (unsigned long long)base.device);
	cr_expect_eq(now.arena_used, base.arena_used);
	cr_expect_eq(now.owners, base.owners, "%d memory owners left, %d before",
		     now.owners, base.owners);
	cr_expect_eq(h_counter(watch, "connections_accepted") -
		     h_counter(watch, "connections_closed"), 1);
	cr_expect_eq(h_counter(watch, "sessions_loaded") -
		     h_counter(watch, "sessions_unloaded"), (uint64_t)base.sessions);
	cep_close(watch);
	{
		int stst = h_daemon_stop(&d, SIGTERM);

		cr_expect(WIFEXITED(stst) && WEXITSTATUS(stst) == 0,
			  "cudaepd did not exit cleanly (status %#x)", stst);
	}
	munmap(sh, sizeof(*sh));
	sh = NULL;
}
