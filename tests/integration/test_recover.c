/*
 * test_recover.c — fault containment: a device context lost to one
 * client's fault does not take the other clients, or the daemon, down.
 *
 * The daemon is build/tests/cudaepd-fault, cudaepd with the test-only
 * fault trigger (CEP_FAULT_INJECT, daemon/recover.h): the third Run
 * request of a session loaded with the name "cudaep-inject-fault" loses
 * the context before it is served. On the CUDA backend (CUDAEP_TEST_GPU=1)
 * that is a kernel writing through an invalid pointer, which the device
 * answers with CUDA_ERROR_ILLEGAL_ADDRESS; on the host backend with queued
 * streams (host-async, as a GPU's) the backend is poisoned the same way:
 * every later call fails and queued host functions never run.
 *
 * Checked: while three clients keep runs in flight, a fourth injects the
 * fault; its run fails with CEP_ECONTEXT and a message that says what
 * happened; each of the others' runs of that moment either succeeds with
 * the right outputs or fails with CEP_ECONTEXT (submits may also be
 * refused with CEP_EAGAIN or CEP_ECONTEXT meanwhile); every run they
 * start after the recovery succeeds with the right outputs, on the same
 * sessions and regions; the faulting client runs again on its session;
 * the daemon counts one recovery (Stats and `cudaepctl metrics`), is still
 * up, and once every client has left its sessions, regions, memory and
 * open fds are back at their baseline. And the production cudaepd has no
 * trigger.
 *
 * The recovery re-executes the daemon (daemon/handover.h): after a sticky
 * error no new CUDA context can be had in the process (test_backend_lost),
 * so the old image hands its clients, sessions, regions and fence pages to
 * a new image of itself. Checked: the PID and the process's start time
 * stay, the daemon counts a handover and logs it, the backend afterwards
 * is the configured one, the clients go on without reconnecting, the
 * trigger does not fire again, sessions an administrator killed stay
 * killed and regions keep their ids; and a daemon started with a
 * handover it cannot read says so and serves afresh.
 */
#include "tests/integration/harness.h"
#include "tests/integration/mlp_slot.h"

#include <criterion/criterion.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The MLP: y = Relu(x W), x [n, D], W [D, D]. */
#define D 64
#define INJECT_NAME "cudaep-inject-fault" /* RECOVER_INJECT_NAME */
#define LOST_TEXT "device context was lost"

static struct hdaemon d;
static float W[D * D];
static char mlp_path[160];

/* The CUDA backend when CUDAEP_TEST_GPU=1, else the host backend with
 * queued streams, which keeps runs in flight after their replies. */
static const char *const *backend_args(void)
{
	static const char *const host_async[] = { "--backend", "host-async", NULL };

	return strcmp(h_backend(), "cuda") == 0 ? NULL : host_async;
}

/* Starts cudaepd-fault with backend_args() and the flags extra
 * (NULL-terminated), and writes the model. */
static void start_with(const char *const *extra)
{
	const char *const *be = backend_args();
	const char *args[16];
	size_t n = 0;

	for (; be != NULL && *be != NULL; be++)
		args[n++] = *be;
	for (; extra != NULL && *extra != NULL; extra++) {
		cr_assert_lt(n, sizeof(args) / sizeof(args[0]) - 1);
		args[n++] = *extra;
	}
	args[n] = NULL;
	cr_assert_eq(h_daemon_start_prog(&d, h_test_bin("cudaepd-fault"), args), 0,
		     "cudaepd-fault did not start (is %s built?)", h_test_bin("cudaepd-fault"));
	mlp_model_write(mlp_path, sizeof(mlp_path), d.dir, W, D, 7, 8.0f);
}

static void start(void)
{
	start_with(NULL);
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd-fault");
}

TestSuite(recover, .init = start, .fini = stop, .timeout = 240);

/* ------------------------------------------------------------- helpers */

static cep_session *load(cep_client *c, const char *name)
{
	cep_session_options o = { .name = name };
	cep_session *s = NULL;

	cr_assert_eq(cep_session_load(c, mlp_path, &o, &s), 0, "%s", cep_last_error());
	return s;
}

/* The line of `cudaepctl metrics` that starts with name, or "" (in a
 * static buffer). */
static const char *metrics_line(const char *name)
{
	static char found[256];
	char cmd[512], line[256];
	FILE *p;

	found[0] = '\0';
	snprintf(cmd, sizeof(cmd), "%s --socket %s metrics", h_bin("cudaepctl"), d.sock);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	/* Read to the end, so that cudaepctl never writes into a closed pipe. */
	while (fgets(line, sizeof(line), p) != NULL)
		if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ' ')
			snprintf(found, sizeof(found), "%.*s", (int)strcspn(line, "\n"), line);
	cr_assert_eq(pclose(p), 0, "cudaepctl metrics failed");
	return found;
}

/* The start time of process pid (field 22 of /proc/PID/stat, in clock
 * ticks since boot): an execve() keeps it, a new process would not. */
static unsigned long long proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	/* After the command name, which may hold spaces: field 3 on. */
	p = strrchr(buf, ')');
	cr_assert_not_null(p);
	for (i = 3; i < 22 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	cr_assert_not_null(p);
	cr_assert_eq(sscanf(p + 1, "%llu", &t), 1);
	return t;
}

/* Waits until the daemon has counted n recoveries (30 s at most). */
static void wait_recoveries(cep_client *watch, uint64_t n)
{
	int64_t deadline = h_now_ms() + 30000;

	while (h_counter(watch, "recoveries") < n && h_now_ms() < deadline)
		h_sleep_ms(5);
	cr_assert_eq(h_counter(watch, "recoveries"), n, "the daemon did not recover");
}

/* The recovery replaced the process image, not the process, and the new
 * image serves on the configured backend. */
static void assert_handed_over(cep_client *watch, pid_t pid, unsigned long long started)
{
	char line[96];

	cr_assert_eq(d.pid, pid);
	cr_assert_eq(kill(pid, 0), 0, "the daemon's process is gone");
	cr_assert_eq(proc_start_time(pid), started, "the daemon is another process now");
	cr_assert_eq(h_counter(watch, "handovers"), h_counter(watch, "recoveries"),
		     "the recovery did not go through a new image");
	cr_assert(h_wait_log(&d, "re-executing cudaepd with its state"), "no handover was logged");
	snprintf(line, sizeof(line), "on the %s backend", h_backend());
	cr_assert(h_wait_log(&d, "recovered from the lost context in"),
		  "the new image did not log the recovery");
	cr_assert(h_log_has(&d, line), "the new image does not serve on the %s backend",
		  h_backend());
	cr_assert_not(h_log_has(&d, "could not be opened again after its context was lost"),
		      "the daemon fell back to the host backend");
}

/* ------------------------------------------------------------- workers */

#define SLOTS 4       /* runs a worker keeps in flight */
#define ROWS 512    /* big enough that a worker always has work queued */
#define AFTER_ROUNDS 10 /* rounds a worker runs after the recovery */

/* The main thread sets it once the daemon has counted the recovery:
 * every run started after it must succeed. */
static _Atomic bool recovered;

struct worker {
	int id;
	cep_client *c;
	cep_session *s;
	cep_region *r;
	_Atomic int rounds;     /* rounds completed */
	int ok, lost, refused;  /* runs that succeeded, failed with the
	                         * context, were refused meanwhile */
	int failures;
	char why[320];
};

static void worker_fail(struct worker *w, const char *what, int ret)
{
	snprintf(w->why, sizeof(w->why), "%s: %s: %s", what, cep_err_name(ret),
		 cep_last_error());
	w->failures++;
}

/* Whether ret is the error a run meeting the lost context may get: during
 * the fault (after says no) a lost context or a recovery under way. */
static bool lost_ok(int ret, bool after)
{
	if (after || (ret != CEP_ECONTEXT && ret != CEP_EAGAIN))
		return false;
	return ret == CEP_EAGAIN || strstr(cep_last_error(), LOST_TEXT) != NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mlp_slot t[SLOTS];
	bool submitted[SLOTS];
	unsigned seed = 500u + (unsigned)w->id;
	int after_rounds = 0, k, ret, at;

	for (k = 0; k < SLOTS; k++)
		mlp_slot_init(&t[k], w->r, (size_t)k * 2 * sizeof(float) * ROWS * D,
			      ROWS - 16 * k, D);
	while (after_rounds < AFTER_ROUNDS) {
		bool after = atomic_load(&recovered), refused = false;

		for (k = 0; k < SLOTS; k++) {
			mlp_slot_fill(&t[k], &seed);
			ret = cep_run_submit(w->s, &t[k].in, 1, &t[k].out, 1, &t[k].fence);
			submitted[k] = ret == 0;
			if (ret == 0)
				continue;
			if (!lost_ok(ret, after)) {
				worker_fail(w, after ? "a submit after the recovery" : "a submit", ret);
				return NULL;
			}
			w->refused++;
			refused = true;
		}
		for (k = 0; k < SLOTS; k++) {
			if (!submitted[k])
				continue;
			at = -1;
			ret = cep_fence_wait(&t[k].fence, CEP_WAIT_FOREVER);
			if (ret == 0 && mlp_slot_check(&t[k], W, &at)) {
				w->ok++;
			} else if (ret == 0) {
				snprintf(w->why, sizeof(w->why), "a run %s the recovery wrote "
					 "y[%d] = %g", after ? "after" : "during", at, t[k].y[at]);
				w->failures++;
				return NULL;
			} else if (lost_ok(ret, after) && ret == CEP_ECONTEXT) {
				w->lost++;
			} else {
				worker_fail(w, after ? "a run after the recovery" : "a run", ret);
				return NULL;
			}
		}
		if (after)
			after_rounds++;
		atomic_fetch_add(&w->rounds, 1);
		if (refused)
			h_sleep_ms(1);
	}
	return NULL;
}

/* One synchronous run of s in slot 0 of r; returns cep_run()'s result and,
 * on success, checks the outputs. */
static int run_once(cep_session *s, cep_region *r, unsigned *seed)
{
	struct mlp_slot t;
	int ret, at = -1;

	mlp_slot_init(&t, r, 0, 3, D);
	mlp_slot_fill(&t, seed);
	ret = cep_run(s, &t.in, 1, &t.out, 1);
	if (ret == 0)
		cr_assert(mlp_slot_check(&t, W, &at), "y[%d] = %g is wrong", at, t.y[at]);
	return ret;
}

/* ------------------------------------------------------------- the test */

Test(recover, a_fault_in_one_client_leaves_the_other_three_running)
{
	enum { WORKERS = 3 };
	cep_client *watch = h_connect(&d, "watcher");
	int64_t base_regions = h_gauge(watch, "regions");
	int64_t base_bytes = h_gauge(watch, "region_bytes");
	int64_t base_sessions = h_gauge(watch, "sessions");
	int64_t base_device = h_mem_current(watch, "total", "device");
	int base_fds = h_settled_fds(&d, watch, 1);
	unsigned long long started = proc_start_time(d.pid);
	pid_t pid = d.pid;
	struct worker w[WORKERS];
	pthread_t th[WORKERS];
	uint64_t ids[WORKERS], fault_id;
	cep_client *fc;
	cep_session *fs;
	cep_region *fr;
	unsigned seed = 1;
	int64_t deadline;
	int i, ret, lost = 0, ok = 0, refused = 0;

	cr_assert_eq(h_counter(watch, "recoveries"), 0);
	for (i = 0; i < WORKERS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "worker-%d", i);
		w[i] = (struct worker){ .id = i };
		w[i].c = h_connect(&d, name);
		w[i].s = load(w[i].c, name);
		ids[i] = cep_session_id(w[i].s);
		cr_assert_eq(cep_region_new(w[i].c, SLOTS * 2 * sizeof(float) * ROWS * D,
					    &w[i].r), 0, "%s", cep_last_error());
	}
	fc = h_connect(&d, "faulty");
	fs = load(fc, INJECT_NAME);
	fault_id = cep_session_id(fs);
	cr_assert_eq(cep_region_new(fc, 2 * sizeof(float) * 3 * D, &fr), 0);

	for (i = 0; i < WORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	/* Every worker has runs going before the fault. */
	deadline = h_now_ms() + 20000;
	for (i = 0; i < WORKERS; i++)
		while (atomic_load(&w[i].rounds) < 3 && w[i].failures == 0 && h_now_ms() < deadline)
			h_sleep_ms(1);

	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 1: %s", cep_last_error());
	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 2: %s", cep_last_error());
	ret = run_once(fs, fr, &seed);
	cr_assert_eq(ret, CEP_ECONTEXT, "the faulting run returned %s: %s", cep_err_name(ret),
		     cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), LOST_TEXT), "its message: %s",
			   cep_last_error());
	printf("  the faulting run: %s\n", cep_last_error());

	wait_recoveries(watch, 1);
	assert_handed_over(watch, pid, started);
	atomic_store(&recovered, true);

	/* The faulting client carries on with its session and region, and its
	 * Run count came over: the trigger (its third run) does not fire
	 * again. */
	for (i = 0; i < 4; i++)
		cr_assert_eq(run_once(fs, fr, &seed), 0, "the faulting client's run %d after "
			     "the recovery: %s", i + 1, cep_last_error());
	cr_assert_eq(cep_session_id(fs), fault_id);

	for (i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < WORKERS; i++) {
		cr_expect_eq(w[i].failures, 0, "worker %d: %s", i, w[i].why);
		cr_expect_eq(cep_session_id(w[i].s), ids[i]);
		ok += w[i].ok;
		lost += w[i].lost;
		refused += w[i].refused;
	}
	printf("  the other clients' runs: %d succeeded, %d failed with the lost context, "
	       "%d submits refused meanwhile; %llu runs in flight failed in the daemon\n",
	       ok, lost, refused,
	       (unsigned long long)h_counter(watch, "recovery_runs_failed"));
	cr_expect_geq(ok, WORKERS * AFTER_ROUNDS * SLOTS);
	cr_expect_eq(h_counter(watch, "recoveries"), 1);
	cr_expect_eq(h_counter(watch, "handovers"), 1);
	cr_expect_gt(h_gauge(watch, "last_recovery_time"), 0);
	cr_expect_str_eq(metrics_line("cudaep_recoveries_total"), "cudaep_recoveries_total 1");

	/* A client that arrives after the recovery is served as ever. */
	{
		cep_client *late = h_connect(&d, "late");
		cep_session *ls = load(late, "late");
		cep_region *lr;

		cr_assert_eq(cep_region_new(late, 2 * sizeof(float) * 3 * D, &lr), 0);
		cr_assert_eq(run_once(ls, lr, &seed), 0, "%s", cep_last_error());
		cep_region_free(lr);
		cep_session_free(ls);
		cep_close(late);
	}

	for (i = 0; i < WORKERS; i++) {
		cep_region_free(w[i].r);
		cep_session_free(w[i].s);
		cep_close(w[i].c);
	}
	cep_region_free(fr);
	cep_session_free(fs);
	cep_close(fc);
	cr_assert_eq(h_wait_gauge(watch, "connections", 1), 1);
	cr_assert_eq(h_wait_gauge(watch, "runs_in_flight", 0), 0);
	cr_expect_eq(h_gauge(watch, "sessions"), base_sessions);
	cr_expect_eq(h_gauge(watch, "regions"), base_regions);
	cr_expect_eq(h_gauge(watch, "region_bytes"), base_bytes);
	cr_expect_eq(h_mem_current(watch, "total", "device"), base_device,
		     "device memory is back at its baseline");
	cr_expect_eq(h_wait_fd_count(&d, base_fds), base_fds, "the daemon's open fds are "
		     "not back at their baseline");
	cr_expect_eq(cep_ping(watch), 0, "the daemon is still up");
	cr_expect_eq(h_counter(watch, "recoveries"), 1, "the trigger fired again");
	cep_close(watch);
}

/* Two threads each running once at the same moment on their own batching
 * session, so that the daemon may merge them. */
struct pair_run {
	cep_session *s;
	cep_region *r;
	pthread_barrier_t *bar;
	unsigned seed;
	int ret;
	bool right;
};

static void *pair_main(void *arg)
{
	struct pair_run *p = arg;
	struct mlp_slot t;
	int at = -1;

	mlp_slot_init(&t, p->r, 0, 4, D);
	mlp_slot_fill(&t, &p->seed);
	pthread_barrier_wait(p->bar);
	p->ret = cep_run(p->s, &t.in, 1, &t.out, 1);
	p->right = p->ret == 0 && mlp_slot_check(&t, W, &at);
	return NULL;
}

/* Runs both sessions of pr at once, rounds times; every run must succeed
 * with the right outputs. */
static void pair_rounds(struct pair_run *pr, int rounds, const char *when)
{
	pthread_barrier_t bar;
	pthread_t th[2];

	pthread_barrier_init(&bar, NULL, 2);
	for (int round = 0; round < rounds; round++) {
		for (int i = 0; i < 2; i++) {
			pr[i].bar = &bar;
			cr_assert_eq(pthread_create(&th[i], NULL, pair_main, &pr[i]), 0);
		}
		for (int i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			cr_assert_eq(pr[i].ret, 0, "%s, round %d, client %d: %s", when, round, i,
				     cep_err_name(pr[i].ret));
			cr_assert(pr[i].right, "%s, round %d, client %d: wrong outputs", when,
				  round, i);
		}
	}
	pthread_barrier_destroy(&bar);
}

/* A daemon whose batch groups wait long for a second run and go when they
 * hold 8 rows, two of pair_main()'s runs of 4: two runs let go together
 * are always merged. */
static void start_pairs(void)
{
	static const char *const extra[] = { "--batch-window-us", "500000",
					     "--batch-max", "8", NULL };

	start_with(extra);
}

TestSuite(recover_pairs, .init = start_pairs, .fini = stop, .timeout = 240);

/* Sessions that batch across clients run on engine sessions of their
 * group's own: the new image of a recovery makes the group again when it
 * restores the batching sessions, and merged runs go on afterwards. */
Test(recover_pairs, batching_sessions_merge_again_after_a_recovery)
{
	uint64_t merged;
	cep_session_options bo = { .name = "batching", .batching = 1 };
	cep_client *watch = h_connect(&d, "watcher");
	int64_t base_device = h_mem_current(watch, "total", "device");
	unsigned long long started = proc_start_time(d.pid);
	pid_t pid = d.pid;
	struct pair_run pr[2];
	cep_client *bc[2], *fc;
	cep_session *fs;
	cep_region *fr;
	unsigned seed = 3;
	int64_t deadline;
	int i;

	for (i = 0; i < 2; i++) {
		bc[i] = h_connect(&d, "batching");
		pr[i] = (struct pair_run){ .seed = 900u + (unsigned)i };
		cr_assert_eq(cep_session_load(bc[i], mlp_path, &bo, &pr[i].s), 0, "%s",
			     cep_last_error());
		cr_assert_eq(cep_region_new(bc[i], 2 * sizeof(float) * 4 * D, &pr[i].r), 0);
	}
	cr_assert_eq(h_gauge(watch, "batch_groups"), 1, "one group for the two sessions");
	pair_rounds(pr, 4, "before the fault");
	cr_assert_eq(h_counter(watch, "batch_runs"), 8, "the pairs were not merged");

	fc = h_connect(&d, "faulty");
	fs = load(fc, INJECT_NAME);
	cr_assert_eq(cep_region_new(fc, 2 * sizeof(float) * 3 * D, &fr), 0);
	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 1: %s", cep_last_error());
	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 2: %s", cep_last_error());
	cr_assert_eq(run_once(fs, fr, &seed), CEP_ECONTEXT, "the injected fault");
	wait_recoveries(watch, 1);
	assert_handed_over(watch, pid, started);

	/* Submits may meet the recovery's last moments: retry what it refuses. */
	deadline = h_now_ms() + 10000;
	while (h_now_ms() < deadline) {
		struct mlp_slot t;
		int ret;

		mlp_slot_init(&t, pr[0].r, 0, 2, D);
		mlp_slot_fill(&t, &seed);
		ret = cep_run(pr[0].s, &t.in, 1, &t.out, 1);
		if (ret != CEP_EAGAIN)
			break;
		h_sleep_ms(5);
	}
	merged = h_counter(watch, "batch_runs");
	pair_rounds(pr, 8, "after the recovery");
	cr_expect_eq(h_counter(watch, "batch_runs") - merged, 16,
		     "the pairs after the recovery were not merged");
	cr_expect_eq(h_gauge(watch, "batch_groups"), 1, "the group outlived the recovery");

	for (i = 0; i < 2; i++) {
		cep_region_free(pr[i].r);
		cep_session_free(pr[i].s);
		cep_close(bc[i]);
	}
	cep_region_free(fr);
	cep_session_free(fs);
	cep_close(fc);
	cr_assert_eq(h_wait_gauge(watch, "batch_groups", 0), 0, "the group goes with its "
		     "last session");
	cr_assert_eq(h_wait_gauge(watch, "runs_in_flight", 0), 0);
	cr_expect_eq(h_mem_current(watch, "total", "device"), base_device,
		     "device memory is back at its baseline");
	cr_expect_eq(cep_ping(watch), 0, "the daemon is still up");
	cep_close(watch);
}

/* A daemon that keeps one run of a connection on the device at once, so
 * that the rest of a client's runs wait in the fair queue. */
static void start_bounded(void)
{
	static const char *const extra[] = { "--max-runs-in-flight", "1", NULL };

	start_with(extra);
}

TestSuite(recover_queued, .init = start_bounded, .fini = stop, .timeout = 240);

/* Runs waiting for their turn never reached the device: a recovery must
 * not wait for them to land. They are not handed over to the new image
 * (daemon/recover.h): each fails through its fence with the lost context
 * (or succeeded before the fault), and the client runs again on the same
 * session and region. */
Test(recover_queued, runs_waiting_in_the_fair_queue_fail_with_the_lost_context)
{
	enum { QUEUED = 48 };
	cep_client *watch = h_connect(&d, "watcher");
	cep_client *qc = h_connect(&d, "queued"), *fc = h_connect(&d, "faulty");
	cep_session *qs = load(qc, "queued"), *fs = load(fc, INJECT_NAME);
	cep_region *qr, *fr;
	struct mlp_slot *t = calloc(QUEUED, sizeof(*t));
	size_t each = 2 * sizeof(float) * ROWS * D;
	unsigned seed = 5;
	unsigned long long started = proc_start_time(d.pid);
	pid_t pid = d.pid;
	int i, ret, at, ok = 0, lost = 0;

	cr_assert_not_null(t);
	cr_assert_eq(cep_region_new(qc, each * QUEUED, &qr), 0, "%s", cep_last_error());
	cr_assert_eq(cep_region_new(fc, 2 * sizeof(float) * 3 * D, &fr), 0);
	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 1: %s", cep_last_error());
	cr_assert_eq(run_once(fs, fr, &seed), 0, "run 2: %s", cep_last_error());
	for (i = 0; i < QUEUED; i++) {
		mlp_slot_init(&t[i], qr, each * (size_t)i, ROWS, D);
		mlp_slot_fill(&t[i], &seed);
		cr_assert_eq(cep_run_submit(qs, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0,
			     "submit %d: %s", i, cep_last_error());
	}
	/* The fault while most of them wait. */
	cr_assert_eq(run_once(fs, fr, &seed), CEP_ECONTEXT, "the injected fault");
	for (i = 0; i < QUEUED; i++) {
		at = -1;
		ret = cep_fence_wait(&t[i].fence, CEP_WAIT_FOREVER);
		if (ret == 0) {
			cr_assert(mlp_slot_check(&t[i], W, &at), "run %d: y[%d] = %g is wrong", i,
				  at, t[i].y[at]);
			ok++;
		} else {
			cr_assert_eq(ret, CEP_ECONTEXT, "run %d: %s: %s", i, cep_err_name(ret),
				     cep_last_error());
			lost++;
		}
	}
	wait_recoveries(watch, 1);
	assert_handed_over(watch, pid, started);
	printf("  %d of %d runs submitted before the fault succeeded, %d failed with it; "
	       "%llu had waited for their turn\n", ok, QUEUED, lost,
	       (unsigned long long)h_counter(watch, "runs_queued"));
	/* On the host backend the runs come faster than they complete; a GPU
	 * may finish each before the next comes, and then none waits. */
	if (strcmp(h_backend(), "host") == 0)
		cr_expect_gt(h_counter(watch, "runs_queued"), 0, "no run waited");
	else if (h_counter(watch, "runs_queued") == 0)
		printf("[SKIP] recover_queued: on the %s backend every run completed before "
		       "the next came: no run waited at the fault\n", h_backend());
	cr_assert_eq(run_once(qs, qr, &seed), 0, "a run after the recovery: %s",
		     cep_last_error());
	cr_assert_eq(h_wait_gauge(watch, "runs_in_flight", 0), 0);
	cep_region_free(qr);
	cep_region_free(fr);
	cep_session_free(qs);
	cep_session_free(fs);
	cep_close(qc);
	cep_close(fc);
	cr_expect_eq(cep_ping(watch), 0, "the daemon is still up");
	cep_close(watch);
	free(t);
}

/* The trigger exists only in cudaepd-fault: the production daemon runs a
 * session of that name as any other. */
Test(recover, the_production_daemon_has_no_fault_trigger)
{
	struct hdaemon prod = { 0 };
	cep_client *c;
	cep_session *s;
	cep_region *r;
	unsigned seed = 2;
	int i;

	cr_assert_eq(h_daemon_start(&prod, backend_args()), 0, "cudaepd did not start");
	c = h_connect(&prod, "prod");
	s = load(c, INJECT_NAME);
	cr_assert_eq(cep_region_new(c, 2 * sizeof(float) * 3 * D, &r), 0);
	for (i = 1; i <= 5; i++)
		cr_assert_eq(run_once(s, r, &seed), 0, "run %d: %s", i, cep_last_error());
	cr_expect_eq(h_counter(c, "recoveries"), 0);
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
	i = h_daemon_stop(&prod, SIGTERM);
	cr_expect(WIFEXITED(i) && WEXITSTATUS(i) == 0, "cudaepd did not exit cleanly");
}

/* `cudaepctl kill-session id` on the daemon of d; returns its status. */
static int ctl_kill(uint64_t id)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s --socket %s kill-session %llu >/dev/null", h_bin("cudaepctl"),
		 d.sock, (unsigned long long)id);
	return system(cmd);
}

/* What an administrator did and what a client registered outlives the
 * handover: a killed session is still reported as killed (not as an
 * unknown id), and a region that no run used before keeps its id and
 * works in the new image, as do the fence page and the session. */
Test(recover, a_killed_session_and_a_region_survive_the_handover)
{
	cep_client *watch = h_connect(&d, "watcher");
	cep_client *c = h_connect(&d, "keeper"), *fc = h_connect(&d, "faulty");
	cep_session *s = load(c, "kept"), *ks = load(c, "killed"), *fs = load(fc, INJECT_NAME);
	unsigned long long started = proc_start_time(d.pid);
	cep_region *used, *unused, *fr;
	unsigned seed = 11;
	struct mlp_slot t;
	int ret, at = -1;

	cr_assert_eq(cep_region_new(c, 2 * sizeof(float) * 3 * D, &used), 0);
	cr_assert_eq(cep_region_new(c, 2 * sizeof(float) * 8 * D, &unused), 0);
	cr_assert_eq(cep_region_new(fc, 2 * sizeof(float) * 3 * D, &fr), 0);
	cr_assert_eq(run_once(s, used, &seed), 0, "%s", cep_last_error());
	cr_assert_eq(ctl_kill(cep_session_id(ks)), 0, "cudaepctl kill-session failed");
	ret = run_once(ks, used, &seed);
	cr_assert_eq(ret, CEP_ECANCELED, "a run of the killed session: %s", cep_err_name(ret));

	cr_assert_eq(run_once(fs, fr, &seed), 0);
	cr_assert_eq(run_once(fs, fr, &seed), 0);
	cr_assert_eq(run_once(fs, fr, &seed), CEP_ECONTEXT, "the injected fault");
	wait_recoveries(watch, 1);
	assert_handed_over(watch, d.pid, started);

	ret = run_once(ks, used, &seed);
	cr_expect_eq(ret, CEP_ECANCELED, "the killed session after the handover: %s: %s",
		     cep_err_name(ret), cep_last_error());
	cr_expect_not_null(strstr(cep_last_error(), "killed by an administrator"), "%s",
			   cep_last_error());
	cr_assert_eq(run_once(s, used, &seed), 0, "the kept session: %s", cep_last_error());
	/* The region no run had used: its id is the one the client holds. */
	mlp_slot_init(&t, unused, 0, 8, D);
	mlp_slot_fill(&t, &seed);
	cr_assert_eq(cep_run_submit(s, &t.in, 1, &t.out, 1, &t.fence), 0, "%s",
		     cep_last_error());
	cr_assert_eq(cep_fence_wait(&t.fence, CEP_WAIT_FOREVER), 0, "%s", cep_last_error());
	cr_assert(mlp_slot_check(&t, W, &at), "y[%d] = %g is wrong", at, t.y[at]);
	cr_expect_eq(h_gauge(watch, "regions"), 3);
	cr_expect_eq(h_gauge(watch, "sessions"), 2, "the kept and the faulting session");

	cep_region_free(used);
	cep_region_free(unused);
	cep_region_free(fr);
	cep_session_free(s);
	cep_session_free(ks);
	cep_session_free(fs);
	cep_close(c);
	cep_close(fc);
	cr_assert_eq(h_wait_gauge(watch, "regions", 0), 0);
	cr_expect_eq(h_gauge(watch, "sessions"), 0);
	cep_close(watch);
}

/* Starts cudaepd with $CUDAEPD_HANDOVER_FD naming a memfd that holds len
 * bytes of data, as if a previous image had handed it over, and checks
 * that the daemon says it cannot read it and serves afresh. */
static void bad_handover(const void *data, size_t len, const char *what)
{
	struct hdaemon bad = { 0 };
	cep_client *c;
	cep_session *s;
	cep_region *r;
	unsigned seed = 4;
	char num[16];
	int fd, st;

	fd = memfd_create("bad-handover", 0);
	cr_assert_geq(fd, 3);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	snprintf(num, sizeof(num), "%d", fd);
	cr_assert_eq(setenv("CUDAEPD_HANDOVER_FD", num, 1), 0);
	st = h_daemon_start(&bad, backend_args());
	unsetenv("CUDAEPD_HANDOVER_FD");
	close(fd);
	cr_assert_eq(st, 0, "cudaepd did not start with %s", what);
	cr_assert(h_wait_log(&bad, "cannot be read"), "%s: no log line says the handover "
		  "cannot be read", what);
	cr_expect_not(h_log_has(&bad, "recovered from the lost context"), "%s", what);
	c = h_connect(&bad, "fresh");
	cr_expect_eq(h_counter(c, "handovers"), 0);
	s = load(c, "fresh");
	cr_assert_eq(cep_region_new(c, 2 * sizeof(float) * 3 * D, &r), 0);
	cr_assert_eq(run_once(s, r, &seed), 0, "%s: %s", what, cep_last_error());
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
	st = h_daemon_stop(&bad, SIGTERM);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: cudaepd did not exit cleanly", what);
}

/* A handover that cannot be read (garbage, cut short, a message that does
 * not decode) costs its clients, never the daemon. */
Test(recover, a_handover_that_cannot_be_read_is_logged_and_the_daemon_serves_afresh)
{
	static const char garbage[] = "this is not what cudaepd hands over to itself";
	uint8_t hdr[24 + 16];
	uint64_t off = 24, len = 16;

	bad_handover(garbage, sizeof(garbage), "garbage");
	bad_handover("CEPD", 4, "a short header");
	/* A header that points at 16 bytes that are no Handover message. */
	memcpy(hdr, "CEPDHOV1", 8);
	memcpy(hdr + 8, &off, 8);
	memcpy(hdr + 16, &len, 8);
	memset(hdr + 24, 0xff, 16);
	bad_handover(hdr, sizeof(hdr), "a message that does not decode");
	/* Its length beyond the memfd. */
	len = 1u << 20;
	memcpy(hdr + 16, &len, 8);
	bad_handover(hdr, sizeof(hdr), "a message longer than the memfd");
}
