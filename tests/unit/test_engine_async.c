/*
 * test_engine_async.c — runs submitted without waiting, on the host
 * backend: engine_run_submit() computes what engine_run() computes and
 * what a reference written here computes, describes the outputs before
 * the work is done, writes the fence into registered memory and calls its
 * done function exactly once; ENGINE_SUBMIT_WARM leaves planning and first
 * runs to the caller's other thread; a bad index fails only its own run,
 * at completion, naming the node; a plan in flight is never evicted; and
 * a warm submit allocates nothing.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/malloc_count.h"
#include "tests/unit/onnxb.h"

/* y = Gather(x, idx, axis 0) * s + x[0] broadcast: x [n, 4], idx [k]. */
static const float scale[4] = { 2.0f, -1.0f, 0.5f, 3.0f };

static engine_model *gather_model(void)
{
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "k");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "k,4");
	onnxb_init(b, "s", CEP_DTYPE_FLOAT32, "4", scale);
	onnxb_node(b, "Gather", "x,idx", "g");
	onnxb_node(b, "Mul", "g,s", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 4096.0f - 8.0f;
}

/* What happened to one run's completion. */
struct done {
	_Atomic int calls;
	struct engine_run run;
};

static void on_done(void *arg)
{
	struct done *d = arg;

	atomic_fetch_add(&d->calls, 1);
}

struct fx {
	struct backend *be;
	engine_model *m;
	engine_session *s;
	uint64_t *page;                /* registered: fences and fault records */
	float x[64 * 4];
	int64_t idx[16];
	float y[16 * 4];
};

static void fx_open(struct fx *f, unsigned host_flags, int max_plans)
{
	struct engine_session_options opts = { .max_plans = max_plans };

	memset(f, 0, sizeof(*f));
	cr_assert_eq(backend_host_new(host_flags, &f->be), 0);
	f->m = gather_model();
	cr_assert_eq(engine_session_new(f->m, f->be, &opts, &f->s), 0, "%s", cep_last_error());
	f->page = aligned_alloc(4096, 4096);
	cr_assert_not_null(f->page);
	memset(f->page, 0, 4096);
	cr_assert_eq(backend_host_register(f->be, f->page, 4096), 0);
}

static void fx_close(struct fx *f)
{
	backend_host_unregister(f->be, f->page);
	free(f->page);
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/* Fresh random x of n rows and k indices in [0, n) (with bad_at >= 0,
 * idx[bad_at] is n, one past the end). */
static void fx_fill(struct fx *f, int n, int k, int bad_at, unsigned *seed)
{
	int i;

	for (i = 0; i < n * 4; i++)
		f->x[i] = frand(seed);
	for (i = 0; i < k; i++)
		f->idx[i] = (int64_t)((*seed = *seed * 69069u + 1u) >> 8) % n;
	if (bad_at >= 0)
		f->idx[bad_at] = n;
	memset(f->y, 0xa5, sizeof(f->y));
}

/* Submits the run of n rows and k indices with fence seq into page[1]. */
static int fx_submit(struct fx *f, int n, int k, unsigned flags, uint64_t seq, struct done *d,
		     struct engine_output *out)
{
	int64_t xd[2] = { n, 4 }, kd[1] = { k };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, xd, f->x, sizeof(float) * (size_t)n * 4 },
		{ "idx", CEP_DTYPE_INT64, 1, kd, f->idx, sizeof(int64_t) * (size_t)k },
	};
	struct engine_fence fence = {
		.seq = &f->page[1], .value = seq,
		.fault = (struct backend_fault *)&f->page[8],
		.done = on_done, .arg = d,
	};

	*out = (struct engine_output){ .name = "y", .data = f->y, .capacity = sizeof(f->y) };
	return eu_run_submit(f->s, in, 2, out, 1, flags, &fence, &d->run);
}

static void expect_gathered(const struct fx *f, int k)
{
	int i, j;

	for (i = 0; i < k; i++)
		for (j = 0; j < 4; j++)
			cr_assert_eq(f->y[i * 4 + j], f->x[f->idx[i] * 4 + j] * scale[j],
				     "y[%d][%d]", i, j);
}

Test(engine_async, a_submitted_run_computes_fences_and_completes_once)
{
	struct engine_output out;
	struct fx f;
	struct done d;
	unsigned seed = 11;
	int shapes[3][2] = { { 5, 3 }, { 9, 16 }, { 5, 3 } };

	fx_open(&f, 0, 4);
	for (int i = 0; i < 3; i++) {
		int n = shapes[i][0], k = shapes[i][1];

		memset(&d, 0, sizeof(d));
		fx_fill(&f, n, k, -1, &seed);
		cr_assert_eq(fx_submit(&f, n, k, 0, 100 + i, &d, &out), 0, "%s", cep_last_error());
		cr_assert_eq(out.rank, 2);
		cr_assert_eq(out.dims[0], k);
		cr_assert_eq(out.dims[1], 4);
		cr_assert_eq(out.bytes, sizeof(float) * (size_t)k * 4);
		cr_assert_eq(atomic_load(&d.calls), 1, "the host backend completes at submit");
		cr_assert(d.run.seq_queued, "no kernel checks indices on the device here");
		cr_assert_not(d.run.checked);
		cr_assert_eq(f.page[1], 100 + (uint64_t)i, "the fence holds the run's value");
		expect_gathered(&f, k);
		cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]),
			     0);
		cr_assert_null(d.run.plan);
		cr_assert_eq(engine_run_complete(f.s, &d.run, NULL), 0, "a second completion "
			     "does nothing");
	}
	fx_close(&f);
}

Test(engine_async, a_warm_submit_leaves_cold_plans_to_the_caller)
{
	struct engine_output out;
	struct fx f;
	struct done d = { 0 };
	struct engine_stats st;
	unsigned seed = 3;

	fx_open(&f, BACKEND_HOST_GRAPHS, 4);
	fx_fill(&f, 6, 4, -1, &seed);
	cr_assert_eq(fx_submit(&f, 6, 4, ENGINE_SUBMIT_WARM, 1, &d, &out), ENGINE_RUN_COLD);
	cr_assert_eq(atomic_load(&d.calls), 0);
	cr_assert_eq(f.page[1], 0);
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 0, "a warm submit plans nothing");
	/* The cold path (another thread in the daemon) plans and runs it,
	 * then captures it... */
	cr_assert_eq(fx_submit(&f, 6, 4, 0, 2, &d, &out), 0, "%s", cep_last_error());
	cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]), 0);
	cr_assert_eq(fx_submit(&f, 6, 4, ENGINE_SUBMIT_WARM, 3, &d, &out), ENGINE_RUN_COLD,
		     "a capture is no warm submit either");
	memset(&d, 0, sizeof(d));
	cr_assert_eq(fx_submit(&f, 6, 4, 0, 3, &d, &out), 0, "%s", cep_last_error());
	cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]), 0);
	/* ...and from then on it is warm: replayed. */
	for (int i = 0; i < 3; i++) {
		memset(&d, 0, sizeof(d));
		fx_fill(&f, 6, 4, -1, &seed);
		cr_assert_eq(fx_submit(&f, 6, 4, ENGINE_SUBMIT_WARM, 4 + i, &d, &out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(atomic_load(&d.calls), 1);
		expect_gathered(&f, 4);
		cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]),
			     0);
	}
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 1);
	cr_assert_eq(st.graph_replays, 4, "the capturing run and the three warm ones");
	cr_assert_eq(f.page[1], 6);
	fx_close(&f);
}

Test(engine_async, a_bad_index_fails_its_own_run_at_completion)
{
	struct engine_output out;
	struct fx f;
	struct done d = { 0 };
	unsigned seed = 5;
	int ret;

	fx_open(&f, 0, 4);
	fx_fill(&f, 7, 5, 2, &seed);
	cr_assert_eq(fx_submit(&f, 7, 5, 0, 41, &d, &out), 0, "a run that fails on the "
		     "device is submitted: %s", cep_last_error());
	cr_assert_eq(atomic_load(&d.calls), 1, "done is called for a failed run too");
	cr_assert_neq(d.run.err, 0);
	cr_assert_not(d.run.seq_queued, "a failed run leaves the fence to its done function");
	cr_assert_eq(f.page[1], 0);
	ret = engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]);
	cr_assert_eq(ret, CEP_EINVAL, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "Gather") != NULL, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "7") != NULL, "the message names the bad index: %s",
		  cep_last_error());
	/* The next run of the same plan is not affected. */
	memset(&d, 0, sizeof(d));
	fx_fill(&f, 7, 5, -1, &seed);
	cr_assert_eq(fx_submit(&f, 7, 5, 0, 42, &d, &out), 0);
	cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]), 0,
		     "%s", cep_last_error());
	cr_assert_eq(f.page[1], 42);
	expect_gathered(&f, 5);
	fx_close(&f);
}

Test(engine_async, a_plan_in_flight_is_not_evicted)
{
	struct engine_output out;
	struct fx f;
	struct done a = { 0 }, b = { 0 };
	struct engine_stats st;
	unsigned seed = 9;

	fx_open(&f, 0, 1);
	fx_fill(&f, 4, 2, -1, &seed);
	cr_assert_eq(fx_submit(&f, 4, 2, 0, 1, &a, &out), 0);
	/* a is done but not completed: its plan is still in flight. */
	fx_fill(&f, 8, 3, -1, &seed);
	cr_assert_eq(fx_submit(&f, 8, 3, 0, 2, &b, &out), CEP_EAGAIN);
	cr_assert(strstr(cep_last_error(), "in flight") != NULL, "%s", cep_last_error());
	cr_assert_eq(atomic_load(&b.calls), 0, "nothing was queued");
	cr_assert_eq(engine_run_complete(f.s, &a.run, (struct backend_fault *)&f.page[8]), 0);
	cr_assert_eq(fx_submit(&f, 8, 3, 0, 3, &b, &out), 0, "%s", cep_last_error());
	expect_gathered(&f, 3);
	cr_assert_eq(engine_run_complete(f.s, &b.run, (struct backend_fault *)&f.page[8]), 0);
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plan_evictions, 1);
	fx_close(&f);
}

Test(engine_async, a_warm_submit_allocates_nothing)
{
	struct engine_output out;
	struct fx f;
	struct done d = { 0 };
	struct backend_counters c0, c1;
	unsigned seed = 13;
	long before;

	fx_open(&f, BACKEND_HOST_GRAPHS, 4);
	for (int i = 0; i < 3; i++) {
		memset(&d, 0, sizeof(d));
		fx_fill(&f, 10, 6, -1, &seed);
		cr_assert_eq(fx_submit(&f, 10, 6, 0, 1 + i, &d, &out), 0);
		cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]),
			     0);
	}
	backend_counters_get(f.be, &c0);
	before = allocs;
	for (int i = 0; i < 20; i++) {
		memset(&d, 0, sizeof(d));
		cr_assert_eq(fx_submit(&f, 10, 6, ENGINE_SUBMIT_WARM, 10 + i, &d, &out), 0);
		cr_assert_eq(engine_run_complete(f.s, &d.run, (struct backend_fault *)&f.page[8]),
			     0);
	}
	cr_assert_eq(allocs - before, 0, "20 warm submits made %ld allocator calls",
		     allocs - before);
	backend_counters_get(f.be, &c1);
	cr_assert_eq(c1.allocs, c0.allocs);
	cr_assert_eq(c1.fences - c0.fences, 20);
	cr_assert_eq(c1.host_fns - c0.host_fns, 20);
	fx_close(&f);
}

/* ------------------------------------------ a backend that completes later */

struct ordered {
	_Atomic int next;
	int rank[24];
	struct engine_run run[24];
	_Atomic int calls[24];
};

static struct ordered ord;

static void on_done_ordered(void *arg)
{
	int i = (int)(intptr_t)arg;

	ord.rank[i] = atomic_fetch_add(&ord.next, 1);
	atomic_fetch_add(&ord.calls[i], 1);
}

Test(engine_async, runs_on_a_queued_stream_complete_later_in_order)
{
	enum { RUNS = 24, N = 6, K = 5 };
	static float xs[RUNS][N * 4], ys[RUNS][K * 4];
	static int64_t idx[RUNS][K];
	struct backend *be;
	engine_model *m;
	engine_session *s;
	struct backend_fault *faults;
	unsigned seed = 21;
	int i, j, d, ret;

	memset(&ord, 0, sizeof(ord));
	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC | BACKEND_HOST_GRAPHS, &be), 0);
	m = gather_model();
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	faults = aligned_alloc(4096, (sizeof(*faults) * RUNS + 4095) & ~(size_t)4095);
	cr_assert_eq(backend_host_register(be, faults, sizeof(*faults) * RUNS), 0);
	for (i = 0; i < RUNS; i++) {
		int64_t xd[2] = { N, 4 }, kd[1] = { K };
		struct engine_input in[2] = {
			{ "x", CEP_DTYPE_FLOAT32, 2, xd, xs[i], sizeof(xs[i]) },
			{ "idx", CEP_DTYPE_INT64, 1, kd, idx[i], sizeof(idx[i]) },
		};
		struct engine_output out = { .name = "y", .data = ys[i], .capacity = sizeof(ys[i]) };
		struct engine_fence fence = {
			.fault = &faults[i], .done = on_done_ordered, .arg = (void *)(intptr_t)i,
		};

		for (j = 0; j < N * 4; j++)
			xs[i][j] = frand(&seed);
		for (j = 0; j < K; j++)
			idx[i][j] = (int64_t)((seed = seed * 69069u + 1u) >> 8) % N;
		if (i == 7)
			idx[i][3] = -N - 1;  /* out of range, negative */
		memset(ys[i], 0xa5, sizeof(ys[i]));
		cr_assert_eq(eu_run_submit(s, in, 2, &out, 1, 0, &fence, &ord.run[i]), 0,
			     "run %d: %s", i, cep_last_error());
		cr_assert_eq(out.dims[0], K, "the shape is known at submit");
	}
	for (i = 0; i < RUNS; i++) {
		while (atomic_load(&ord.calls[i]) == 0)
			sched_yield();
		cr_assert_eq(atomic_load(&ord.calls[i]), 1);
		cr_assert_eq(ord.rank[i], i, "run %d completed out of order", i);
		ret = engine_run_complete(s, &ord.run[i], &faults[i]);
		if (i == 7) {
			cr_assert_eq(ret, CEP_EINVAL);
			cr_assert(strstr(cep_last_error(), "Gather") != NULL, "%s", cep_last_error());
			continue;
		}
		cr_assert_eq(ret, 0, "run %d: %s", i, cep_last_error());
		for (j = 0; j < K; j++)
			for (d = 0; d < 4; d++)
				cr_assert_eq(ys[i][j * 4 + d], xs[i][idx[i][j] * 4 + d] * scale[d],
					     "run %d y[%d][%d]", i, j, d);
	}
	backend_host_unregister(be, faults);
	free(faults);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
