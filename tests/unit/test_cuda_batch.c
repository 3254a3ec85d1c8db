/*
 * test_cuda_batch.c — engine_run_submit_batch() on the CUDA backend.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 (elsewhere every test skips,
 * visibly): a batch of runs of mixed rows, from registered memory, gives
 * each run what it gives alone within float rounding, through the plan's
 * first run, its capture and its replays, with each fence written and
 * each done function called once; and a bad Gather index in one run of a
 * batch fails every run of it, each with its own fault record filled in
 * from the one the device copied back.
 */
#include "tests/unit/cuda_util.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

TestSuite(gpu_batch, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

#define D 64
#define RUNS 6
#define MAX_ROWS 4

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* y = Relu(x W + b), x [n, D]. */
static engine_model *mlp_model(void)
{
	static float w[D * D], bias[D];
	struct onnxb *b = onnxb_new(13);
	unsigned seed = 5;

	for (int i = 0; i < D * D; i++)
		w[i] = (float)(rnd(&seed) % 1000) / 4000.0f - 0.125f;
	for (int i = 0; i < D; i++)
		bias[i] = (float)(rnd(&seed) % 100) / 100.0f - 0.5f;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,64");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "64,64", w);
	onnxb_init(b, "b", CEP_DTYPE_FLOAT32, "64", bias);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,b", "a");
	onnxb_node(b, "Relu", "a", "y");
	return onnxb_load(b);
}

/* One run's registered memory. */
struct brun {
	float x[MAX_ROWS * D];
	float y[MAX_ROWS * D];
	int64_t idx[MAX_ROWS];
	struct backend_fault fault;
	struct engine_run run;
	_Atomic int done;
	uint64_t fence;
};

static void brun_done(void *arg)
{
	struct brun *r = arg;

	/* The daemon's host function writes the fence when the device did
	 * not (a checked run); so does this one. */
	if (!r->run.seq_queued)
		atomic_store((_Atomic uint64_t *)&r->fence, 1);
	atomic_fetch_add(&r->done, 1);
}

static void brun_wait(struct brun *r)
{
	int64_t deadline = now_ns() + 60 * 1000000000LL;

	while (atomic_load(&r->done) == 0 && now_ns() < deadline)
		sched_yield();
	cr_assert_eq(atomic_load(&r->done), 1, "done called %d times", atomic_load(&r->done));
	cr_assert_eq(r->fence, 1, "the fence was written");
}

Test(gpu_batch, a_batch_gives_each_run_what_it_gives_alone)
{
	static const int rows[RUNS] = { 1, 2, 3, 1, 4, 1 };
	struct engine_session_options bo = { .max_batch = 8 };
	engine_model *m = mlp_model();
	engine_session *bs, *one;
	struct engine_input in[RUNS];
	struct engine_output out[RUNS];
	struct engine_fence f[RUNS];
	struct engine_batch_run br[RUNS];
	int64_t dims[RUNS][2];
	struct brun *r;
	struct engine_stats st;
	unsigned seed = 9;
	size_t bad;
	float y[MAX_ROWS * D];

	GPU_REQUIRE();
	cr_assert_eq(engine_session_new(m, gpu_be, &bo, &bs), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, gpu_be, NULL, &one), 0, "%s", cep_last_error());
	r = aligned_alloc(4096, (sizeof(*r) * RUNS + 4095) & ~(size_t)4095);
	cr_assert_not_null(r);
	memset(r, 0, sizeof(*r) * RUNS);
	cr_assert_eq(backend_host_register(gpu_be, r, sizeof(*r) * RUNS), 0, "%s",
		     cep_last_error());
	/* First run, capture, replays. */
	for (int pass = 0; pass < 4; pass++) {
		for (int k = 0; k < RUNS; k++) {
			for (int i = 0; i < rows[k] * D; i++)
				r[k].x[i] = (float)(rnd(&seed) % 2000) / 1000.0f - 1.0f;
			memset(r[k].y, 0xa5, sizeof(r[k].y));
			atomic_store(&r[k].done, 0);
			r[k].fence = 0;
			dims[k][0] = rows[k];
			dims[k][1] = D;
			in[k] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, dims[k], r[k].x,
						       sizeof(float) * (size_t)rows[k] * D };
			out[k] = (struct engine_output){ .name = "y", .data = r[k].y,
							 .capacity = sizeof(r[k].y) };
			f[k] = (struct engine_fence){ .seq = &r[k].fence, .value = 1,
						      .fault = &r[k].fault, .done = brun_done,
						      .arg = &r[k] };
			br[k] = (struct engine_batch_run){ &in[k], 1, &out[k], 1, &f[k], &r[k].run };
		}
		cr_assert_eq(eu_run_submit_batch(bs, br, RUNS, 0, &bad), 0, "pass %d: %s",
			     pass, cep_last_error());
		for (int k = 0; k < RUNS; k++) {
			struct engine_output o = { .name = "y", .data = y, .capacity = sizeof(y) };

			brun_wait(&r[k]);
			cr_assert_eq(engine_run_complete(bs, &r[k].run, &r[k].fault), 0, "%s",
				     cep_last_error());
			cr_assert_eq(out[k].dims[0], rows[k]);
			cr_assert_eq(eu_run(one, &in[k], 1, &o, 1), 0, "%s", cep_last_error());
			for (int i = 0; i < rows[k] * D; i++)
				cr_assert(fabsf(y[i] - r[k].y[i]) <= 1e-4f + 1e-4f * fabsf(y[i]),
					  "pass %d run %d y[%d]: %g alone, %g in the batch", pass, k,
					  i, y[i], r[k].y[i]);
		}
	}
	engine_session_stats(bs, &st);
	cr_assert_eq(st.plans_built, 1);
	cr_assert_geq(st.graph_replays, 2, "the batch's plan is captured and replayed");
	cr_assert_eq(st.batched_runs, 4 * RUNS);
	backend_host_unregister(gpu_be, r);
	free(r);
	engine_session_free(bs);
	engine_session_free(one);
	engine_model_unref(m);
}

Test(gpu_batch, a_bad_index_fails_every_run_each_with_its_fault)
{
	struct engine_session_options bo = { .max_batch = 4 };
	struct onnxb *b = onnxb_new(13);
	engine_model *m;
	engine_session *bs;
	struct engine_input in[3][2];
	struct engine_output out[3];
	struct engine_fence f[3];
	struct engine_batch_run br[3];
	int64_t xd[2] = { 2, 8 }, kd[1] = { 2 };
	struct brun *r;
	size_t bad;
	int ret;

	GPU_REQUIRE();
	/* y = Gather(x, idx): x [n, 8], idx [n]. */
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "n");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_node(b, "Gather", "x,idx", "y");
	m = onnxb_load(b);
	cr_assert_eq(engine_session_new(m, gpu_be, &bo, &bs), 0, "%s", cep_last_error());
	r = aligned_alloc(4096, (sizeof(*r) * 3 + 4095) & ~(size_t)4095);
	cr_assert_not_null(r);
	memset(r, 0, sizeof(*r) * 3);
	cr_assert_eq(backend_host_register(gpu_be, r, sizeof(*r) * 3), 0, "%s",
		     cep_last_error());
	for (int k = 0; k < 3; k++) {
		r[k].idx[0] = 0;
		r[k].idx[1] = k == 1 ? 99 : 1;
		in[k][0] = (struct engine_input){ "x", CEP_DTYPE_FLOAT32, 2, xd, r[k].x,
						  sizeof(float) * 16 };
		in[k][1] = (struct engine_input){ "idx", CEP_DTYPE_INT64, 1, kd, r[k].idx,
						  sizeof(int64_t) * 2 };
		out[k] = (struct engine_output){ .name = "y", .data = r[k].y,
						 .capacity = sizeof(r[k].y) };
		f[k] = (struct engine_fence){ .seq = &r[k].fence, .value = 1, .fault = &r[k].fault,
					      .done = brun_done, .arg = &r[k] };
		br[k] = (struct engine_batch_run){ in[k], 2, &out[k], 1, &f[k], &r[k].run };
	}
	cr_assert_eq(eu_run_submit_batch(bs, br, 3, 0, &bad), 0, "%s", cep_last_error());
	for (int k = 0; k < 3; k++) {
		brun_wait(&r[k]);
		cr_assert(r[k].run.checked, "run %d: a Gather checks its indices on the device", k);
		cr_assert_neq(r[k].fault.flag, 0, "run %d: its own record holds the fault", k);
		ret = engine_run_complete(bs, &r[k].run, &r[k].fault);
		cr_assert_eq(ret, CEP_EINVAL, "run %d of the failed batch: %s", k,
			     cep_err_name(ret));
		cr_assert(strstr(cep_last_error(), "Gather") != NULL, "%s", cep_last_error());
	}
	backend_host_unregister(gpu_be, r);
	free(r);
	engine_session_free(bs);
	engine_model_unref(m);
}
