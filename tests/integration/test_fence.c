/*
 * test_fence.c — runs in flight against a real cudaepd: cep_run_submit()
 * answers before the run is done and the fence page says when it is.
 * Without a GPU the daemon serves on the host backend with queued streams
 * (backend = host-async), which keeps runs in flight after their replies
 * as a GPU does; under make test-gpu it serves on CUDA.
 *
 * Checked: many threads of one process and several processes submitting
 * and waiting, every output equal to a reference computed here; a wait
 * that times out leaves the fence for a later wait; a run that fails on
 * the device reports its error, message included, through its own fence
 * only; a fence is consumed once and at most CEP_FENCES_MAX are in flight;
 * a region released or a session unloaded while runs use it stays until
 * they complete; a client killed with runs in flight leaves nothing
 * behind once they have; every input and output byte moves straight
 * between a region and the device; and the warm path of submit and wait
 * allocates nothing in the client.
 */
#include "tests/integration/harness.h"
#include "tests/integration/mlp_slot.h"
#include "tests/integration/onnx_min.h"
#include "tests/unit/malloc_count.h"

#include <criterion/criterion.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The MLP: y = Relu(x W), x [n, D], W [D, D]. */
#define D 64

static struct hdaemon d;
static float W[D * D];
static char mlp_path[160], gather_path[160];

static void models_write(void)
{
	struct om m = { 0 };

	mlp_model_write(mlp_path, sizeof(mlp_path), d.dir, W, D, 99, 8.0f);
	snprintf(gather_path, sizeof(gather_path), "%s/gather.onnx", d.dir);
	om_input(&m, "x", 1, "n,4");
	om_input(&m, "idx", 7, "k");
	om_output(&m, "y", 1, "k,4");
	om_node(&m, "Gather", "x,idx", "y", "axis", 0);
	cr_assert_eq(om_save(&m, gather_path), 0);
}

static void start(void)
{
	static const char *const host_async[] = { "--backend", "host-async", NULL };
	bool gpu = strcmp(h_backend(), "cuda") == 0;

	cr_assert_eq(h_daemon_start(&d, gpu ? NULL : host_async), 0, "cudaepd did not start");
	models_write();
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd");
}

TestSuite(fence, .init = start, .fini = stop, .timeout = 240);

/* ------------------------------------------------------------- helpers */

static cep_session *load(cep_client *c, const char *path)
{
	cep_session *s = NULL;

	cr_assert_eq(cep_session_load(c, path, NULL, &s), 0, "%s", cep_last_error());
	return s;
}

static void expect_slot(const struct mlp_slot *t, const char *what)
{
	int at = -1;

	cr_assert(mlp_slot_check(t, W, &at), "%s: y[%d] = %g is wrong", what, at,
		  at >= 0 ? t->y[at] : 0.0f);
}

/* ------------------------------------------------------------- threads */

struct worker {
	cep_session *s;
	cep_region *r;
	int id;
	int failures;
	char why[256];
};

/* Each thread keeps up to 4 runs in flight on its own region, waits for
 * them oldest first and checks every output. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mlp_slot t[4];
	unsigned seed = 1000u + (unsigned)w->id;
	int k, round, ret;

	for (k = 0; k < 4; k++)
		mlp_slot_init(&t[k], w->r, (size_t)k * 2 * sizeof(float) * 8 * D,
			      1 + (w->id + k) % 8, D);
	for (round = 0; round < 25; round++) {
		for (k = 0; k < 4; k++) {
			mlp_slot_fill(&t[k], &seed);
			ret = cep_run_submit(w->s, &t[k].in, 1, &t[k].out, 1, &t[k].fence);
			if (ret != 0) {
				snprintf(w->why, sizeof(w->why), "submit: %s", cep_last_error());
				w->failures++;
				return NULL;
			}
		}
		for (k = 0; k < 4; k++) {
			int at = -1;

			ret = cep_fence_wait(&t[k].fence, CEP_WAIT_FOREVER);
			if (ret != 0 || !mlp_slot_check(&t[k], W, &at)) {
				snprintf(w->why, sizeof(w->why), "wait: %d %s (y[%d])", ret,
					 cep_last_error(), at);
				w->failures++;
				return NULL;
			}
		}
	}
	return NULL;
}

Test(fence, many_threads_submit_and_wait_on_one_client)
{
	enum { THREADS = 8 };
	cep_client *c = h_connect(&d, "threads");
	cep_session *s = load(c, mlp_path);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	int i;

	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		cr_assert_eq(cep_region_new(c, 8 * 2 * sizeof(float) * 8 * D, &w[i].r), 0);
	}
	for (i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < THREADS; i++) {
		cr_expect_eq(w[i].failures, 0, "thread %d: %s", i, w[i].why);
		cep_region_free(w[i].r);
	}
	cr_expect_eq(h_wait_gauge(c, "runs_in_flight", 0), 0);
	cr_expect_geq(h_counter(c, "runs_fenced"), THREADS * 100);
	cep_session_free(s);
	cep_close(c);
}

Test(fence, several_processes_submit_and_wait)
{
	enum { PROCS = 4 };
	pid_t pids[PROCS];
	int i, st;

	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0) {
			cep_client *c = NULL;
			cep_session *s = NULL;
			struct worker w = { .id = 100 + i };

			if (cep_connect(d.sock, "proc", &c) != 0 ||
			    cep_session_load(c, mlp_path, NULL, &s) != 0 ||
			    cep_region_new(c, 8 * 2 * sizeof(float) * 8 * D, &w.r) != 0)
				_exit(10);
			w.s = s;
			worker_main(&w);
			if (w.failures) {
				fprintf(stderr, "process %d: %s\n", i, w.why);
				_exit(11);
			}
			cep_close(c);
			_exit(0);
		}
	}
	for (i = 0; i < PROCS; i++) {
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: status %#x", i, st);
	}
}

/* ------------------------------------------------------ waits and fences */

Test(fence, a_wait_that_times_out_leaves_the_fence_for_a_later_one)
{
	enum { RUNS = 16, ROWS = 256 };
	cep_client *c = h_connect(&d, "timeouts");
	cep_session *s = load(c, mlp_path);
	size_t each = 2 * sizeof(float) * ROWS * D;
	struct mlp_slot t[RUNS];
	cep_region *r;
	unsigned seed = 5;
	int i, ret, timed_out = 0;

	cr_assert_eq(cep_region_new(c, each * RUNS, &r), 0);
	/* Warm, so that the runs below are queued without planning. */
	mlp_slot_init(&t[0], r, 0, ROWS, D);
	mlp_slot_fill(&t[0], &seed);
	cr_assert_eq(cep_run(s, &t[0].in, 1, &t[0].out, 1), 0, "%s", cep_last_error());
	for (int attempt = 0; attempt < 20 && !timed_out; attempt++) {
		for (i = 0; i < RUNS; i++) {
			mlp_slot_init(&t[i], r, each * (size_t)i, ROWS, D);
			mlp_slot_fill(&t[i], &seed);
			cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0,
				     "%s", cep_last_error());
		}
		/* Fifteen big runs are queued before the last one. */
		ret = cep_fence_wait(&t[RUNS - 1].fence, 0);
		if (ret == CEP_ETIMEDOUT) {
			timed_out++;
			cr_assert_not_null(t[RUNS - 1].fence.client, "a timeout consumes nothing");
			/* Still pending, or (on a fast GPU) done since, which
			 * the poll then consumes. */
			ret = cep_fence_poll(&t[RUNS - 1].fence);
			cr_assert(ret == CEP_EAGAIN || ret == 0, "%s", cep_err_name(ret));
		} else {
			cr_assert_eq(ret, 0, "%s", cep_last_error());
		}
		for (i = 0; i < RUNS; i++) {
			if (t[i].fence.client == NULL)
				continue;
			cr_assert_eq(cep_fence_wait(&t[i].fence, CEP_WAIT_FOREVER), 0, "run %d: %s",
				     i, cep_last_error());
			expect_slot(&t[i], "after the timeout");
		}
	}
	cr_expect_gt(timed_out, 0, "no wait ever timed out: every run was done at once");
	cr_assert_eq(cep_fence_wait(&t[0].fence, 0), CEP_EINVAL, "a consumed fence");
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
}

Test(fence, at_most_the_slots_are_in_flight)
{
	cep_client *c = h_connect(&d, "slots");
	cep_session *s = load(c, mlp_path);
	struct mlp_slot t[CEP_FENCES_MAX + 1];
	cep_region *r;
	size_t each = 2 * sizeof(float) * D;
	unsigned seed = 8;
	int i;

	cr_assert_eq(cep_region_new(c, each * (CEP_FENCES_MAX + 1), &r), 0);
	for (i = 0; i < CEP_FENCES_MAX; i++) {
		mlp_slot_init(&t[i], r, each * (size_t)i, 1, D);
		mlp_slot_fill(&t[i], &seed);
		cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0, "%s",
			     cep_last_error());
	}
	mlp_slot_init(&t[i], r, each * (size_t)i, 1, D);
	mlp_slot_fill(&t[i], &seed);
	cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), CEP_EAGAIN);
	cr_assert_null(t[i].fence.client);
	cr_assert_eq(cep_fence_wait(&t[0].fence, CEP_WAIT_FOREVER), 0, "%s", cep_last_error());
	cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0, "%s",
		     cep_last_error());
	/* Consumed in any order; polling until each is done. */
	for (i = CEP_FENCES_MAX; i >= 1; i--) {
		int ret;

		while ((ret = cep_fence_poll(&t[i].fence)) == CEP_EAGAIN)
			;
		cr_assert_eq(ret, 0, "run %d: %s", i, cep_last_error());
		expect_slot(&t[i], "polled");
	}
	expect_slot(&t[0], "waited");
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
}

/* idx of k entries at off, x of 6 rows at 0, y after idx. */
static void gather_tensors(cep_region *r, size_t off, const int64_t *idx, int k, cep_tensor *in,
			   cep_tensor *out)
{
	uint8_t *base = cep_region_data(r);

	memcpy(base + off, idx, sizeof(int64_t) * (size_t)k);
	in[0] = (cep_tensor){ .name = "x", .region = r, .offset = 0, .bytes = sizeof(float) * 24,
			      .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = { 6, 4 } };
	in[1] = (cep_tensor){ .name = "idx", .region = r, .offset = off,
			      .bytes = sizeof(int64_t) * (size_t)k, .dtype = CEP_DTYPE_INT64,
			      .rank = 1, .shape = { k } };
	*out = (cep_tensor){ .name = "y", .region = r, .offset = off + 256, .bytes = 512 };
}

Test(fence, a_run_that_fails_on_the_device_fails_only_its_fence)
{
	static const int64_t good[3] = { 5, 0, 2 }, bad[3] = { 1, 6, 3 };
	cep_client *c = h_connect(&d, "faults");
	cep_session *s = load(c, gather_path);
	cep_tensor in[3][2], out[3];
	cep_fence f[3];
	cep_region *r;
	float *x, *y;
	int i, j;

	cr_assert_eq(cep_region_new(c, 4096, &r), 0);
	x = cep_region_data(r);
	for (i = 0; i < 24; i++)
		x[i] = (float)i * 0.5f;
	gather_tensors(r, 1024, good, 3, in[0], &out[0]);
	gather_tensors(r, 2048, bad, 3, in[1], &out[1]);
	gather_tensors(r, 3072, good, 3, in[2], &out[2]);
	for (int round = 0; round < 3; round++) {
		for (i = 0; i < 3; i++)
			cr_assert_eq(cep_run_submit(s, in[i], 2, &out[i], 1, &f[i]), 0,
				     "round %d run %d: a bad index is found while the run "
				     "runs, not at submit: %s", round, i, cep_last_error());
		/* A request in between reads the failure's message first. */
		cr_assert_eq(cep_ping(c), 0);
		cr_assert_eq(cep_fence_wait(&f[0], CEP_WAIT_FOREVER), 0, "%s", cep_last_error());
		cr_assert_eq(cep_fence_wait(&f[1], CEP_WAIT_FOREVER), CEP_EINVAL);
		cr_assert(strstr(cep_last_error(), "Gather") != NULL &&
			  strstr(cep_last_error(), "6") != NULL,
			  "the message names the operator and the index: %s", cep_last_error());
		cr_assert_eq(cep_fence_wait(&f[2], CEP_WAIT_FOREVER), 0, "%s", cep_last_error());
		for (i = 0; i < 3; i += 2) {
			y = (float *)((uint8_t *)cep_region_data(r) + out[i].offset);
			for (j = 0; j < 12; j++)
				cr_assert_eq(y[j], x[good[j / 4] * 4 + j % 4], "run %d y[%d]", i, j);
		}
	}
	cr_assert_eq(h_wait_gauge(c, "runs_in_flight", 0), 0);
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
}

/* ----------------------------------------------- what runs in flight hold */

Test(fence, a_region_released_in_flight_goes_after_its_runs)
{
	enum { RUNS = 32, ROWS = 128 };
	cep_client *c = h_connect(&d, "release");
	cep_session *s = load(c, mlp_path);
	size_t bytes = sizeof(float) * ROWS * D;
	int64_t base_regions = h_gauge(c, "regions");
	uint64_t released = h_counter(c, "regions_released");
	cep_region *inputs, *outputs;
	struct mlp_slot t[RUNS];
	float *copy;
	unsigned seed = 17;
	int i;

	cr_assert_eq(cep_region_new(c, bytes * RUNS, &inputs), 0);
	cr_assert_eq(cep_region_new(c, bytes * RUNS, &outputs), 0);
	copy = malloc(bytes * RUNS);
	for (i = 0; i < RUNS; i++) {
		mlp_slot_init(&t[i], inputs, bytes * (size_t)i, ROWS, D);
		t[i].out.region = outputs;
		t[i].out.offset = bytes * (size_t)i;
		t[i].y = (float *)((uint8_t *)cep_region_data(outputs) + t[i].out.offset);
		mlp_slot_fill(&t[i], &seed);
	}
	memcpy(copy, cep_region_data(inputs), bytes * RUNS);
	for (i = 0; i < RUNS; i++)
		cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0, "%s",
			     cep_last_error());
	/* The inputs' region goes while the runs still read it. */
	cr_assert_eq(cep_region_free(inputs), 0, "%s", cep_last_error());
	for (i = 0; i < RUNS; i++) {
		cr_assert_eq(cep_fence_wait(&t[i].fence, CEP_WAIT_FOREVER), 0, "run %d: %s", i,
			     cep_last_error());
		t[i].x = copy + (size_t)i * ROWS * D;
		expect_slot(&t[i], "inputs from a released region");
	}
	cr_assert_eq(h_wait_gauge(c, "regions", base_regions + 1), base_regions + 1,
		     "the released region is gone once its runs are");
	cr_assert_eq(h_counter(c, "regions_released"), released + 1);
	free(copy);
	cep_region_free(outputs);
	cep_session_free(s);
	cep_close(c);
}

Test(fence, a_session_unloaded_in_flight_completes_its_runs)
{
	enum { RUNS = 16, ROWS = 64 };
	cep_client *c = h_connect(&d, "unload");
	int64_t base_sessions = h_gauge(c, "sessions");
	cep_session *s = load(c, mlp_path);
	size_t each = 2 * sizeof(float) * ROWS * D;
	struct mlp_slot t[RUNS];
	cep_region *r;
	unsigned seed = 23;
	int i;

	cr_assert_eq(cep_region_new(c, each * RUNS, &r), 0);
	for (i = 0; i < RUNS; i++) {
		mlp_slot_init(&t[i], r, each * (size_t)i, ROWS, D);
		mlp_slot_fill(&t[i], &seed);
		cr_assert_eq(cep_run_submit(s, &t[i].in, 1, &t[i].out, 1, &t[i].fence), 0, "%s",
			     cep_last_error());
	}
	cr_assert_eq(cep_session_free(s), 0, "%s", cep_last_error());
	for (i = 0; i < RUNS; i++) {
		cr_assert_eq(cep_fence_wait(&t[i].fence, CEP_WAIT_FOREVER), 0, "run %d: %s", i,
			     cep_last_error());
		expect_slot(&t[i], "a run of an unloaded session");
	}
	cr_assert_eq(h_wait_gauge(c, "sessions", base_sessions), base_sessions);
	cep_region_free(r);
	cep_close(c);
}

Test(fence, a_client_killed_with_runs_in_flight_leaves_nothing)
{
	enum { RUNS = 60, ROWS = 256 };
	cep_client *watch = h_connect(&d, "watcher");
	int64_t base_regions = h_gauge(watch, "regions");
	int64_t base_bytes = h_gauge(watch, "region_bytes");
	int64_t base_sessions = h_gauge(watch, "sessions");
	int64_t base_device = h_mem_current(watch, "total", "device");
	int base_fds = h_settled_fds(&d, watch, 1);
	char owner[64];
	uint64_t victim = 0;
	int ready[2], st;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		size_t each = 2 * sizeof(float) * ROWS * D;
		cep_client *c = NULL;
		cep_session *s = NULL;
		cep_region *r = NULL;
		struct mlp_slot t;
		unsigned seed = 3;

		close(ready[0]);
		if (cep_connect(d.sock, "doomed", &c) != 0 ||
		    cep_session_load(c, mlp_path, NULL, &s) != 0 ||
		    cep_region_new(c, each * RUNS, &r) != 0)
			_exit(10);
		for (int i = 0; i < RUNS; i++) {
			mlp_slot_init(&t, r, each * (size_t)i, ROWS, D);
			mlp_slot_fill(&t, &seed);
			if (cep_run_submit(s, &t.in, 1, &t.out, 1, &t.fence) != 0)
				_exit(11);
		}
		victim = cep_client_id(c);
		if (write(ready[1], &victim, sizeof(victim)) != sizeof(victim))
			_exit(12);
		pause();
		_exit(13);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &victim, sizeof(victim)), sizeof(victim),
		     "the child did not submit its runs");
	snprintf(owner, sizeof(owner), "client:%llu", (unsigned long long)victim);
	printf("  the daemon had %lld runs in flight when the client was killed; it held "
	       "%lld bytes pinned\n", (long long)h_gauge(watch, "runs_in_flight"),
	       (long long)h_mem_current(watch, owner, "pinned"));
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(ready[0]);
	cr_assert_eq(h_wait_gauge(watch, "connections", 1), 1);
	cr_assert_eq(h_wait_gauge(watch, "runs_in_flight", 0), 0);
	cr_assert_eq(h_gauge(watch, "regions"), base_regions);
	cr_assert_eq(h_gauge(watch, "region_bytes"), base_bytes);
	cr_assert_eq(h_gauge(watch, "sessions"), base_sessions);
	cr_assert_eq(h_wait_fd_count(&d, base_fds), base_fds, "the daemon kept fds of the "
		     "killed client");
	cr_assert_eq(h_mem_current(watch, owner, "pinned"), -1, "the killed client's account "
		     "entry is gone");
	cr_assert_eq(h_mem_current(watch, "total", "device"), base_device,
		     "its device memory is given back");
	cep_close(watch);
}

/* --------------------------------------------------------- the hot path */

Test(fence, every_byte_moves_straight_between_a_region_and_the_device)
{
	enum { RUNS = 50, ROWS = 8 };
	cep_client *c = h_connect(&d, "zero-copy");
	cep_session *s = load(c, mlp_path);
	size_t each = 2 * sizeof(float) * ROWS * D;
	uint64_t pinned0, pageable0, pinned1, pageable1;
	struct mlp_slot t;
	cep_region *r;
	unsigned seed = 31;
	long before;
	int i;

	cr_assert_eq(cep_region_new(c, each, &r), 0);
	mlp_slot_init(&t, r, 0, ROWS, D);
	for (i = 0; i < 3; i++) {
		mlp_slot_fill(&t, &seed);
		cr_assert_eq(cep_run(s, &t.in, 1, &t.out, 1), 0, "%s", cep_last_error());
	}
	pinned0 = h_counter(c, "copy_bytes_pinned");
	pageable0 = h_counter(c, "copy_bytes_pageable");
	before = allocs;
	for (i = 0; i < RUNS; i++) {
		cr_assert_eq(cep_run_submit(s, &t.in, 1, &t.out, 1, &t.fence), 0);
		cr_assert_eq(cep_fence_wait(&t.fence, CEP_WAIT_FOREVER), 0);
	}
	cr_assert_eq(allocs - before, 0, "%d warm submit + wait made %ld allocator calls",
		     RUNS, allocs - before);
	expect_slot(&t, "the last warm run");
	pinned1 = h_counter(c, "copy_bytes_pinned");
	pageable1 = h_counter(c, "copy_bytes_pageable");
	cr_assert_eq(pinned1 - pinned0, (uint64_t)RUNS * each, "every input and output byte "
		     "is copied from or into the pinned region");
	cr_assert_eq(pageable1, pageable0, "nothing goes through pageable memory");
	cep_region_free(r);
	cep_session_free(s);
	cep_close(c);
}
