/*
 * test_engine_batch.c — engine_run_submit_batch() on the host backend: a
 * batch of k runs gives each run the bytes k separate runs give (host
 * kernels compute rows independently), describes each run's outputs with
 * its own rows, writes each fence and calls each done function once, on
 * queued streams too; a warm batch allocates nothing and a cold one is
 * left to the caller under ENGINE_SUBMIT_WARM; a failure of the batch
 * fails every run with the same error; and runs that do not fit together
 * (another model, another non-batch dimension, too little output room,
 * too many runs) are refused before anything is queued, with a message
 * that names what differs, while a run that does not fit the model (rows
 * that disagree within it, a name missing, repeated or unknown, a dtype
 * or a fixed dimension not the model's) is refused by engine_run_check()
 * before it comes near a batch.
 */
#include <sched.h>
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

#define MAX_RUNS 8
#define MAX_ROWS 8

/* y1 = Relu(x W + z) [n, 3], y2 = x * s [n, 4]; x [n, 4], z [n, 3]. */
static const float W[4 * 3] = { 0.5f, -1.0f, 0.25f, 2.0f, 0.75f, -0.5f,
				-1.5f, 1.0f, 0.125f, 0.3f, -0.2f, 1.1f };
static const float S[4] = { 2.0f, -1.0f, 0.5f, 3.0f };

static engine_model *mlp_model(void)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_input(b, "z", CEP_DTYPE_FLOAT32, "n,3");
	onnxb_output(b, "y1", CEP_DTYPE_FLOAT32, "n,3");
	onnxb_output(b, "y2", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,3", W);
	onnxb_init(b, "s", CEP_DTYPE_FLOAT32, "4", S);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,z", "a");
	onnxb_node(b, "Relu", "a", "y1");
	onnxb_node(b, "Mul", "x,s", "y2");
	return onnxb_load(b);
}

/* y = Relu(x), x [n, m]: runs may differ in m. */
static engine_model *relu_model(void)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,m");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,m");
	onnxb_node(b, "Relu", "x", "y");
	return onnxb_load(b);
}

/* y = Relu(x), x [n, n]: the batch is dimension 1's size too. */
static engine_model *square_model(void)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,n");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,n");
	onnxb_node(b, "Relu", "x", "y");
	return onnxb_load(b);
}

/* y = Relu(x), x [4, n]: no batch in dimension 0. */
static engine_model *columns_model(void)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,n");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "4,n");
	onnxb_node(b, "Relu", "x", "y");
	return onnxb_load(b);
}

/* y = Gather(x, idx, axis 0), x [n, 4], idx [n]: a bad index fails. */
static engine_model *gather_model(void)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "n");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_node(b, "Gather", "x,idx", "y");
	return onnxb_load(b);
}

/* Where engine_run_submit_batch() says which run it refused. */
static size_t bad;

static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 4096.0f - 8.0f;
}

/* What a run's done function saw; like the daemon's (fence.c), it writes
 * the fence itself when the device did not, with the status its fault
 * record says. */
struct done {
	_Atomic int calls;
	const struct engine_run *run;
	const struct engine_fence *fence;
	uint32_t fault_flag;         /* its own fault record's, when called */
};

static void on_done(void *arg)
{
	struct done *d = arg;

	if (d->run && d->fence->fault)
		d->fault_flag = d->fence->fault->flag;
	if (d->run && !d->run->seq_queued && d->fence->seq)
		atomic_store((_Atomic uint64_t *)d->fence->seq, d->fence->value);
	atomic_fetch_add(&d->calls, 1);
}

/* One run of the MLP: its tensors, fence and results. */
struct mrun {
	int rows;
	float x[MAX_ROWS * 4], z[MAX_ROWS * 3];
	float y1[MAX_ROWS * 3], y2[MAX_ROWS * 4];
	int64_t xd[2], zd[2];
	struct engine_input in[2];
	struct engine_output out[2];
	struct engine_fence fence;
	struct engine_run run;
	struct done done;
};

struct fx {
	struct backend *be;
	engine_model *m;
	engine_session *batch;      /* takes batches */
	engine_session *single;     /* runs one at a time, for reference */
	uint64_t *page;             /* registered: fences, then fault records */
	struct mrun r[MAX_RUNS];
	struct engine_batch_run br[MAX_RUNS];
};

static void fx_open(struct fx *f, unsigned host_flags, engine_model *m)
{
	struct engine_session_options bo = { .max_batch = MAX_RUNS, .max_plans = 4 };

	memset(f, 0, sizeof(*f));
	cr_assert_eq(backend_host_new(host_flags, &f->be), 0);
	f->m = m;
	cr_assert_eq(engine_session_new(f->m, f->be, &bo, &f->batch), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(f->m, f->be, NULL, &f->single), 0, "%s",
		     cep_last_error());
	f->page = aligned_alloc(4096, 8192);
	cr_assert_not_null(f->page);
	memset(f->page, 0, 8192);
	cr_assert_eq(backend_host_register(f->be, f->page, 8192), 0);
}

static void fx_close(struct fx *f)
{
	backend_host_unregister(f->be, f->page);
	free(f->page);
	engine_session_free(f->batch);
	engine_session_free(f->single);
	engine_model_unref(f->m);
	backend_free(f->be);
}

static struct backend_fault *fx_fault(struct fx *f, int k)
{
	return (struct backend_fault *)((unsigned char *)f->page + 4096) + k;
}

/* Sets up run k of the MLP with rows rows of fresh inputs, fence seq. */
static void mrun_fill(struct fx *f, int k, int rows, uint64_t seq, unsigned *seed)
{
	struct mrun *r = &f->r[k];
	int i;

	memset(r, 0, sizeof(*r));
	r->rows = rows;
	for (i = 0; i < rows * 4; i++)
		r->x[i] = frand(seed);
	for (i = 0; i < rows * 3; i++)
		r->z[i] = frand(seed);
	memset(r->y1, 0xa5, sizeof(r->y1));
	memset(r->y2, 0xa5, sizeof(r->y2));
	r->xd[0] = rows;
	r->xd[1] = 4;
	r->zd[0] = rows;
	r->zd[1] = 3;
	/* Given in another order than the model's, for the lookup. */
	r->in[0] = (struct engine_input){ "z", CEP_DTYPE_FLOAT32, 2, r->zd, r->z,
					  sizeof(float) * (size_t)rows * 3 };
	r->in[1] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, r->xd, r->x,
					  sizeof(float) * (size_t)rows * 4 };
	r->out[0] = (struct engine_output){ .name = "y2", .data = r->y2,
					    .capacity = sizeof(r->y2) };
	r->out[1] = (struct engine_output){ .name = "y1", .data = r->y1,
					    .capacity = sizeof(r->y1) };
	r->fence = (struct engine_fence){ .seq = &f->page[k], .value = seq,
					  .fault = fx_fault(f, k), .done = on_done,
					  .arg = &r->done };
	r->done.run = &r->run;
	r->done.fence = &r->fence;
	f->br[k] = (struct engine_batch_run){ r->in, 2, r->out, 2, &r->fence, &r->run };
}

/* Waits for run k's done function (queued streams complete later). */
static void mrun_wait(struct fx *f, int k)
{
	while (atomic_load(&f->r[k].done.calls) == 0)
		sched_yield();
}

/* Runs run k alone on the reference session and compares bytes. */
static void mrun_expect_single(struct fx *f, int k)
{
	struct mrun *r = &f->r[k];
	float y1[MAX_ROWS * 3], y2[MAX_ROWS * 4];
	struct engine_output out[2] = {
		{ .name = "y1", .data = y1, .capacity = sizeof(y1) },
		{ .name = "y2", .data = y2, .capacity = sizeof(y2) },
	};
	size_t b1 = sizeof(float) * (size_t)r->rows * 3, b2 = sizeof(float) * (size_t)r->rows * 4;

	cr_assert_eq(eu_run(f->single, r->in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(r->out[1].bytes, b1, "run %d: y1 has %zu bytes", k, r->out[1].bytes);
	cr_assert_eq(r->out[0].bytes, b2);
	cr_assert_eq(r->out[1].rank, 2);
	cr_assert_eq(r->out[1].dims[0], r->rows, "run %d: y1 has its own rows", k);
	cr_assert_eq(r->out[1].dims[1], 3);
	cr_assert_eq(r->out[0].dims[0], r->rows);
	cr_assert_eq(r->out[0].dims[1], 4);
	cr_assert_eq(memcmp(r->y1, y1, b1), 0, "run %d: y1 differs from its run alone", k);
	cr_assert_eq(memcmp(r->y2, y2, b2), 0, "run %d: y2 differs from its run alone", k);
	/* Nothing past its rows was written. */
	if (b1 < sizeof(r->y1))
		cr_assert_eq(((unsigned char *)r->y1)[b1], 0xa5, "run %d: y1 past its rows", k);
	if (b2 < sizeof(r->y2))
		cr_assert_eq(((unsigned char *)r->y2)[b2], 0xa5, "run %d: y2 past its rows", k);
}

/* engine_run_submit_batch() of the n runs in br, each of which must pass
 * engine_run_check() first, as the engine's callers check them. */
static int batch_submit(engine_session *s, const struct engine_batch_run *br, int n,
			unsigned flags)
{
	for (int k = 0; k < n; k++)
		cr_assert_eq(engine_run_check(s, br[k].inputs, br[k].n_inputs, br[k].outputs,
					      br[k].n_outputs), 0, "run %d: %s", k, cep_last_error());
	return engine_run_submit_batch(s, br, (size_t)n, flags, &bad);
}

static void run_batch(struct fx *f, const int *rows, int n, uint64_t seq0, unsigned flags,
		      unsigned *seed)
{
	int k;

	for (k = 0; k < n; k++)
		mrun_fill(f, k, rows[k], seq0 + (uint64_t)k, seed);
	cr_assert_eq(batch_submit(f->batch, f->br, n, flags), 0, "%s", cep_last_error());
}

static void complete_all(struct fx *f, int n, uint64_t seq0)
{
	int k;

	for (k = 0; k < n; k++) {
		mrun_wait(f, k);
		cr_assert_eq(atomic_load(&f->r[k].done.calls), 1, "run %d: done once", k);
		cr_assert_eq(f->page[k], seq0 + (uint64_t)k, "run %d of %d: its fence is %llu", k, n,
			     (unsigned long long)f->page[k]);
		cr_assert_eq(engine_run_complete(f->batch, &f->r[k].run, fx_fault(f, k)), 0,
			     "%s", cep_last_error());
		cr_assert_null(f->r[k].run.plan);
		mrun_expect_single(f, k);
	}
}

Test(engine_batch, a_batch_gives_each_run_what_it_gives_alone)
{
	static const int sizes[][MAX_RUNS] = {
		{ 1, 1, 1, 1, 1, 1, 1, 1 },
		{ 3, 1, 2, 5, 0, 0, 0, 0 },
		{ 8, 0, 0, 0, 0, 0, 0, 0 },
		{ 2, 7, 0, 0, 0, 0, 0, 0 },
	};
	static const int counts[] = { 8, 4, 1, 2 };
	struct engine_stats st;
	unsigned seed = 5;
	uint64_t seq = 10;

	for (unsigned flags = 0; flags <= BACKEND_HOST_ASYNC; flags += BACKEND_HOST_ASYNC) {
		struct fx *f = calloc(1, sizeof(*f));

		fx_open(f, flags, mlp_model());
		for (int t = 0; t < 4; t++) {
			run_batch(f, sizes[t], counts[t], seq, 0, &seed);
			complete_all(f, counts[t], seq);
			seq += 100;
		}
		engine_session_stats(f->batch, &st);
		cr_assert_eq(st.batches, 4);
		cr_assert_eq(st.batched_runs, 8 + 4 + 1 + 2);
		fx_close(f);
		free(f);
	}
}

Test(engine_batch, a_warm_batch_allocates_nothing_and_a_cold_one_is_left_to_the_caller)
{
	static const int rows[3] = { 2, 1, 3 };
	struct fx *f = calloc(1, sizeof(*f));
	struct engine_stats st;
	unsigned seed = 9;
	long before;

	fx_open(f, BACKEND_HOST_GRAPHS, mlp_model());
	for (int k = 0; k < 3; k++)
		mrun_fill(f, k, rows[k], 1 + (uint64_t)k, &seed);
	cr_assert_eq(batch_submit(f->batch, f->br, 3, ENGINE_SUBMIT_WARM), ENGINE_RUN_COLD);
	engine_session_stats(f->batch, &st);
	cr_assert_eq(st.plans_built, 0, "a warm submit plans nothing");
	cr_assert_eq(atomic_load(&f->r[0].done.calls), 0);
	/* Planned and run once, then captured: both cold. */
	run_batch(f, rows, 3, 1, 0, &seed);
	complete_all(f, 3, 1);
	for (int k = 0; k < 3; k++)
		mrun_fill(f, k, rows[k], 10 + (uint64_t)k, &seed);
	cr_assert_eq(batch_submit(f->batch, f->br, 3, ENGINE_SUBMIT_WARM), ENGINE_RUN_COLD,
		     "a capture is no warm submit either");
	run_batch(f, rows, 3, 10, 0, &seed);
	complete_all(f, 3, 10);
	for (int k = 0; k < 3; k++)
		mrun_fill(f, k, rows[k], 20 + (uint64_t)k, &seed);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(engine_run_check(f->batch, f->r[k].in, 2, f->r[k].out, 2), 0);
	before = allocs;
	cr_assert_eq(engine_run_submit_batch(f->batch, f->br, 3, ENGINE_SUBMIT_WARM, &bad), 0, "%s",
		     cep_last_error());
	cr_assert_eq(allocs, before, "a warm batch allocated %ld times", allocs - before);
	complete_all(f, 3, 20);
	engine_session_stats(f->batch, &st);
	cr_assert_eq(st.plans_built, 1, "one plan for the batch of 6 rows");
	cr_assert_geq(st.graph_replays, 1);
	/* Another split of the same 6 rows is the same plan. */
	{
		static const int other[2] = { 4, 2 };

		for (int k = 0; k < 2; k++)
			mrun_fill(f, k, other[k], 30 + (uint64_t)k, &seed);
		cr_assert_eq(batch_submit(f->batch, f->br, 2, ENGINE_SUBMIT_WARM), 0, "%s",
			     cep_last_error());
		complete_all(f, 2, 30);
	}
	engine_session_stats(f->batch, &st);
	cr_assert_eq(st.plans_built, 1);
	fx_close(f);
	free(f);
}

/* On a queued stream the device's fault record is copied back once, into
 * the last run's record, and from there into the others'. */
static void failing_batch(unsigned flags)
{
	struct fx *f = calloc(1, sizeof(*f));
	float x[2][2 * 4] = { { 0 } }, y[2][2 * 4];
	int64_t idx[2][2] = { { 0, 1 }, { 1, 9 } }, xd[2] = { 2, 4 }, id[1] = { 2 };
	struct engine_input in[2][2];
	struct engine_output out[2];
	struct engine_fence fence[2];
	struct engine_run run[2];
	struct done done[2] = { { 0 } };
	struct engine_batch_run br[2];

	fx_open(f, flags, gather_model());
	for (int k = 0; k < 2; k++) {
		done[k] = (struct done){ .run = &run[k], .fence = &fence[k] };
		in[k][0] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, xd, x[k], sizeof(x[k]) };
		in[k][1] = (struct engine_input){ "idx", CEP_DTYPE_INT64, 1, id, idx[k],
						  sizeof(idx[k]) };
		out[k] = (struct engine_output){ .name = "y", .data = y[k], .capacity = sizeof(y[k]) };
		fence[k] = (struct engine_fence){ .seq = &f->page[k], .value = 7,
						  .fault = fx_fault(f, k), .done = on_done,
						  .arg = &done[k] };
		br[k] = (struct engine_batch_run){ in[k], 2, &out[k], 1, &fence[k], &run[k] };
	}
	cr_assert_eq(batch_submit(f->batch, br, 2, 0), 0, "%s", cep_last_error());
	for (int k = 0; k < 2; k++) {
		while (atomic_load(&done[k].calls) == 0)
			sched_yield();
		cr_assert_eq(atomic_load(&done[k].calls), 1);
		cr_assert_eq(f->page[k], 7, "run %d: its fence", k);
		if (flags & BACKEND_HOST_ASYNC) {
			cr_assert(run[k].checked);
			cr_assert_neq(done[k].fault_flag, 0, "run %d: its own record holds the "
				      "batch's fault when its done function runs", k);
		}
		cr_assert_eq(engine_run_complete(f->batch, &run[k], fx_fault(f, k)), CEP_EINVAL,
			     "run %d of a failed batch fails too", k);
		cr_assert(strstr(cep_last_error(), "Gather") != NULL, "%s", cep_last_error());
	}
	fx_close(f);
	free(f);
}

Test(engine_batch, a_failing_batch_fails_every_run_with_its_error)
{
	failing_batch(0);
	failing_batch(BACKEND_HOST_ASYNC);
}

/* Submits what f->br holds (each run passing engine_run_check()) and
 * expects err with the message naming what, blaming run want_bad (n: the
 * batch as a whole). */
static void expect_refused(struct fx *f, int n, int err, const char *what, size_t want_bad)
{
	cr_assert_eq(batch_submit(f->batch, f->br, n, 0), err, "want %s: %s", cep_err_name(err),
		     cep_last_error());
	cr_assert(strstr(cep_last_error(), what) != NULL, "'%s' lacks '%s'", cep_last_error(),
		  what);
	cr_assert_eq(bad, want_bad, "run %zu is blamed, not %zu", bad, want_bad);
	for (int k = 0; k < n; k++) {
		cr_assert_eq(atomic_load(&f->r[k].done.calls), 0, "nothing was queued");
		cr_assert_null(f->r[k].run.plan);
	}
}

/* Expects run k of f->br to be refused by engine_run_check() with err
 * and a message naming what. */
static void expect_unfit(struct fx *f, int k, int err, const char *what)
{
	const struct engine_batch_run *r = &f->br[k];

	cr_assert_eq(engine_run_check(f->batch, r->inputs, r->n_inputs, r->outputs, r->n_outputs),
		     err, "want %s: %s", cep_err_name(err), cep_last_error());
	cr_assert_str_eq(cep_last_error(), what);
}

Test(engine_batch, runs_that_do_not_fit_together_are_refused)
{
	struct fx *f = calloc(1, sizeof(*f));
	static const int rows[2] = { 2, 3 };
	unsigned seed = 1;
	float big[MAX_ROWS * 5];
	int64_t d5[2] = { 2, 5 }, d4[2] = { 2, 4 }, d22[2] = { 2, 2 };
	struct engine_input rin[2];
	struct engine_output rout[2];

	fx_open(f, 0, mlp_model());
	/* Too many runs, or none. */
	for (int k = 0; k < 2; k++)
		mrun_fill(f, k, rows[k], 1, &seed);
	cr_assert_eq(engine_run_submit_batch(f->batch, f->br, MAX_RUNS + 1, 0, &bad), CEP_EINVAL);
	cr_assert_eq(bad, MAX_RUNS + 1, "too many runs is the batch's fault");
	cr_assert_eq(engine_run_submit_batch(f->batch, f->br, 0, 0, &bad), CEP_EINVAL);
	/* A session opened without max_batch takes no batches. */
	cr_assert_eq(engine_run_submit_batch(f->single, f->br, 1, 0, &bad), CEP_EINVAL);
	/* A run that does not fit the model is refused by engine_run_check(),
	 * before any batch. The rows of one run's inputs disagree: */
	f->r[1].zd[0] = 2;
	f->r[1].in[0].bytes = sizeof(float) * 2 * 3;
	expect_unfit(f, 1, CEP_ESHAPE, "input 'z': dimension 0 is 2, but 'n' is 3 from input 'x'");
	/* An input missing, or given twice. */
	mrun_fill(f, 1, 3, 2, &seed);
	f->br[1].n_inputs = 1;
	expect_unfit(f, 1, CEP_EINVAL, "input 'x' is missing");
	f->r[1].in[0].name = "x";
	f->br[1].n_inputs = 2;
	expect_unfit(f, 1, CEP_EINVAL, "input 'x' is given twice");
	/* An output asked for twice, or not the model's. */
	mrun_fill(f, 1, 3, 2, &seed);
	f->r[1].out[1].name = "y2";
	expect_unfit(f, 1, CEP_EINVAL, "output 'y2' is asked for twice");
	f->r[1].out[1].name = "y3";
	expect_unfit(f, 1, CEP_EINVAL, "'y3' is not an output of the model");
	/* A dtype the model does not take. */
	mrun_fill(f, 1, 3, 2, &seed);
	f->r[1].in[1].dtype = CEP_DTYPE_INT32;
	expect_unfit(f, 1, CEP_EDTYPE, "input 'x' is int32, the model wants float32");
	/* A fixed dimension the model does not have. */
	mrun_fill(f, 1, 3, 2, &seed);
	f->r[1].zd[1] = 2;
	f->r[1].in[0].bytes = sizeof(float) * 3 * 2;
	expect_unfit(f, 1, CEP_ESHAPE, "input 'z': dimension 1 is 2, the model wants 3");
	/* Without the run at fault, the others go. */
	mrun_fill(f, 0, 2, 1, &seed);
	cr_assert_eq(batch_submit(f->batch, f->br, 1, 0), 0, "%s", cep_last_error());
	complete_all(f, 1, 1);
	mrun_fill(f, 0, 2, 1, &seed);
	/* An output too small for the run's rows: the batch's plan knows. */
	mrun_fill(f, 1, 3, 2, &seed);
	f->r[1].out[1].capacity = sizeof(float) * 2 * 3;
	expect_refused(f, 2, CEP_ENOSPC, "run 1 of the batch: output 'y1' needs 36 bytes", 1);
	fx_close(f);

	/* Runs that differ in a dimension other than 0. */
	fx_open(f, 0, relu_model());
	for (int k = 0; k < 2; k++) {
		memset(&f->r[k].done, 0, sizeof(f->r[k].done));
		memset(&f->r[k].run, 0, sizeof(f->r[k].run));
		rin[k] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, k ? d5 : d4, big,
						sizeof(float) * 2 * (k ? 5 : 4) };
		rout[k] = (struct engine_output){ .name = "y", .data = big, .capacity = sizeof(big) };
		f->r[k].fence = (struct engine_fence){ .seq = &f->page[k], .value = 1,
						       .done = on_done, .arg = &f->r[k].done };
		f->br[k] = (struct engine_batch_run){ &rin[k], 1, &rout[k], 1, &f->r[k].fence,
						      &f->r[k].run };
	}
	memset(big, 0, sizeof(big));
	expect_refused(f, 2, CEP_ESHAPE, "input 'x' has dimension 1 5, run 0's has 4", 1);
	/* The same dimension is fine. */
	rin[1] = rin[0];
	cr_assert_eq(batch_submit(f->batch, f->br, 2, 0), 0, "%s", cep_last_error());
	for (int k = 0; k < 2; k++)
		cr_assert_eq(engine_run_complete(f->batch, &f->r[k].run, NULL), 0);
	fx_close(f);

	/* Runs that each fit the model but whose stacked rows do not: the
	 * batch's symbol is another dimension's size too. */
	fx_open(f, 0, square_model());
	for (int k = 0; k < 2; k++) {
		rin[k] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, d22, big,
						sizeof(float) * 2 * 2 };
		rout[k] = (struct engine_output){ .name = "y", .data = big, .capacity = sizeof(big) };
		f->r[k].fence = (struct engine_fence){ .seq = &f->page[k], .value = 1,
						       .done = on_done, .arg = &f->r[k].done };
		f->br[k] = (struct engine_batch_run){ &rin[k], 1, &rout[k], 1, &f->r[k].fence,
						      &f->r[k].run };
	}
	expect_refused(f, 2, CEP_ESHAPE, "input 'x': dimension 1 is 2, but 'n' is 4 from input 'x'",
		       2);
	fx_close(f);

	/* A model without a batch in dimension 0 takes no batches. */
	fx_open(f, 0, columns_model());
	cr_assert_eq(engine_model_batchable(f->m), CEP_EINVAL);
	cr_assert(strstr(cep_last_error(), "input 'x' has no symbolic dimension 0") != NULL,
		  "%s", cep_last_error());
	cr_assert_eq(engine_run_submit_batch(f->batch, f->br, 1, 0, &bad), CEP_EINVAL);
	fx_close(f);
	free(f);
}

Test(engine_batch, the_batch_dimension_must_be_one_name)
{
	struct onnxb *b = onnxb_new(13);
	engine_model *m;

	/* Outputs in another symbol than the inputs: no shared batch. */
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_input(b, "y", CEP_DTYPE_FLOAT32, "k,4");
	onnxb_output(b, "a", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_output(b, "b", CEP_DTYPE_FLOAT32, "k,4");
	onnxb_node(b, "Relu", "x", "a");
	onnxb_node(b, "Relu", "y", "b");
	m = onnxb_load(b);
	cr_assert_eq(engine_model_batchable(m), CEP_EINVAL);
	cr_assert(strstr(cep_last_error(), "input 'y' has dimension 0 'k', not the batch 'n'"),
		  "%s", cep_last_error());
	engine_model_unref(m);
	m = mlp_model();
	cr_assert_eq(engine_model_batchable(m), 0);
	engine_model_unref(m);
}
