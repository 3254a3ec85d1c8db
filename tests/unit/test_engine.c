/*
 * test_engine.c — the engine end to end on the host backend: an MLP with a
 * symbolic batch dimension (MatMul, Add, Relu, MatMul, Add, Softmax) built
 * with onnxb, planned for two batch sizes and checked against a naive
 * reference written here; input and output checking (engine_run_check())
 * with messages that name the tensor and dimension, safe on any data; the warm path allocating nothing
 * (backend and engine counters); the LRU of plans; graph capture and
 * replay on the host backend.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define IN 4
#define HID 8
#define OUT 3
/* Kernels the MLP runs: the optimizer makes MatMul, Add and Relu one
 * MatMulBias, then MatMul and Add another, and Softmax stays. */
#define MLP_STEPS 3

static float w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT];

/* Deterministic pseudo-random floats in [-1, 1). */
static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static engine_model *mlp_load(void)
{
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	unsigned seed = 7;
	uint8_t *buf;
	size_t len, i;

	for (i = 0; i < IN * HID; i++)
		w1[i] = frand(&seed);
	for (i = 0; i < HID; i++)
		b1[i] = frand(&seed);
	for (i = 0; i < HID * OUT; i++)
		w2[i] = frand(&seed);
	for (i = 0; i < OUT; i++)
		b2[i] = frand(&seed);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_init(b, "w1", CEP_DTYPE_FLOAT32, "4,8", w1);
	onnxb_init(b, "b1", CEP_DTYPE_FLOAT32, "8", b1);
	onnxb_init(b, "w2", CEP_DTYPE_FLOAT32, "8,3", w2);
	onnxb_init(b, "b2", CEP_DTYPE_FLOAT32, "3", b2);
	onnxb_node(b, "MatMul", "x,w1", "h1");
	onnxb_node(b, "Add", "h1,b1", "h2");
	onnxb_node(b, "Relu", "h2", "h3");
	onnxb_node(b, "MatMul", "h3,w2", "h4");
	onnxb_node(b, "Add", "h4,b2", "h5");
	onnxb_node(b, "Softmax", "h5", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* The same MLP, computed the obvious way. */
static void mlp_reference(const float *x, int batch, float *y)
{
	int n, i, j;

	for (n = 0; n < batch; n++) {
		float h[HID], o[OUT], mx = -INFINITY, sum = 0.0f;

		for (j = 0; j < HID; j++) {
			float s = b1[j];

			for (i = 0; i < IN; i++)
				s += x[n * IN + i] * w1[i * HID + j];
			h[j] = s > 0.0f ? s : 0.0f;
		}
		for (j = 0; j < OUT; j++) {
			float s = b2[j];

			for (i = 0; i < HID; i++)
				s += h[i] * w2[i * OUT + j];
			o[j] = s;
			mx = s > mx ? s : mx;
		}
		for (j = 0; j < OUT; j++)
			sum += expf(o[j] - mx);
		for (j = 0; j < OUT; j++)
			y[n * OUT + j] = expf(o[j] - mx) / sum;
	}
}

struct fixture {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static void fixture_open(struct fixture *f, unsigned host_flags, int max_plans)
{
	struct engine_session_options opts = { .max_plans = max_plans };

	cr_assert_eq(backend_host_new(host_flags, &f->be), 0);
	f->m = mlp_load();
	cr_assert_eq(engine_session_new(f->m, f->be, &opts, &f->s), 0, "%s", cep_last_error());
}

static void fixture_close(struct fixture *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/* Runs the MLP on batch random rows and compares with the reference;
 * returns the worst absolute error. */
static float mlp_check(engine_session *s, int batch, unsigned seed)
{
	float *x = calloc((size_t)batch * IN, sizeof(float));
	float *y = calloc((size_t)batch * OUT, sizeof(float));
	float *ref = calloc((size_t)batch * OUT, sizeof(float));
	int64_t dims[2] = { batch, IN };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x,
				   sizeof(float) * (size_t)batch * IN };
	struct engine_output out = { .name = "y", .data = y,
				     .capacity = sizeof(float) * (size_t)batch * OUT };
	float worst = 0.0f;
	int i;

	for (i = 0; i < batch * IN; i++)
		x[i] = 3.0f * frand(&seed);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], batch);
	cr_assert_eq(out.dims[1], OUT);
	cr_assert_eq(out.bytes, sizeof(float) * (size_t)batch * OUT);
	mlp_reference(x, batch, ref);
	for (i = 0; i < batch * OUT; i++) {
		float e = fabsf(y[i] - ref[i]);

		/* NaN compares false with everything: count it as the worst. */
		worst = e > worst || e != e ? (e != e ? INFINITY : e) : worst;
	}
	free(x);
	free(y);
	free(ref);
	return worst;
}

Test(engine, mlp_two_batch_sizes_match_reference)
{
	struct fixture f;
	struct engine_stats st;

	fixture_open(&f, 0, 0);
	cr_assert_lt(mlp_check(f.s, 2, 1), 1e-5f);
	cr_assert_lt(mlp_check(f.s, 5, 2), 1e-5f);
	cr_assert_lt(mlp_check(f.s, 2, 3), 1e-5f);
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.runs, 3);
	cr_assert_eq(st.plans_built, 2, "one plan per batch size");
	cr_assert_eq(st.plan_hits, 1);
	cr_assert_eq(st.plans_cached, 2);
	cr_assert_eq(st.last_steps, MLP_STEPS);
	fixture_close(&f);
}

Test(engine, infos_carry_symbolic_dims)
{
	engine_model *m = mlp_load();
	const struct engine_tensor_info *x, *y;

	cr_assert_eq(engine_model_input_count(m), 1);
	cr_assert_eq(engine_model_output_count(m), 1);
	x = engine_model_input(m, 0);
	y = engine_model_output(m, 0);
	cr_assert_null(engine_model_input(m, 1));
	cr_assert_str_eq(x->name, "x");
	cr_assert_eq(x->dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(x->rank, 2);
	cr_assert_eq(x->dims[0], -1);
	cr_assert_str_eq(x->dim_params[0], "batch");
	cr_assert_eq(x->dims[1], IN);
	cr_assert_null(x->dim_params[1]);
	cr_assert_str_eq(y->name, "y");
	cr_assert_eq(y->rank, 2);
	cr_assert_str_eq(y->dim_params[0], "batch");
	cr_assert_eq(y->dims[1], OUT);
	engine_model_unref(m);
}

Test(engine, warm_path_allocates_nothing)
{
	struct backend_counters before, after;
	struct engine_stats s0, s1;
	struct fixture f;
	float x[3 * IN] = { 0 }, y[3 * OUT];
	int64_t dims[2] = { 3, IN };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	int i, failures = 0;

	fixture_open(&f, 0, 0);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	backend_counters_get(f.be, &before);
	engine_session_stats(f.s, &s0);
	for (i = 0; i < 50; i++)
		failures += eu_run(f.s, &in, 1, &out, 1) != 0;
	backend_counters_get(f.be, &after);
	engine_session_stats(f.s, &s1);
	cr_assert_eq(failures, 0);
	cr_assert_eq(after.allocs, before.allocs, "device allocations on the warm path");
	cr_assert_eq(after.frees, before.frees);
	cr_assert_eq(s1.plans_built, s0.plans_built, "host allocations (plan builds) on the warm path");
	cr_assert_eq(s1.plan_hits, s0.plan_hits + 50);
	cr_assert_eq(after.launches, before.launches + 50 * MLP_STEPS);
	cr_assert_eq(after.copies_h2d, before.copies_h2d + 50);
	cr_assert_eq(after.copies_d2h, before.copies_d2h + 50);
	fixture_close(&f);
}

Test(engine, captured_graph_replays_and_stays_warm)
{
	struct backend_counters before, after;
	struct fixture f;

	fixture_open(&f, BACKEND_HOST_GRAPHS, 0);
	cr_assert_lt(mlp_check(f.s, 4, 11), 1e-5f); /* eager */
	cr_assert_lt(mlp_check(f.s, 4, 12), 1e-5f); /* captured, replayed */
	backend_counters_get(f.be, &before);
	cr_assert_eq(before.captures, 1);
	cr_assert_eq(before.replays, 1);
	cr_assert_lt(mlp_check(f.s, 4, 13), 1e-5f); /* replayed */
	cr_assert_lt(mlp_check(f.s, 4, 14), 1e-5f);
	backend_counters_get(f.be, &after);
	cr_assert_eq(after.captures, 1);
	cr_assert_eq(after.replays, 3);
	cr_assert_eq(after.allocs, before.allocs);
	fixture_close(&f);
}

Test(engine, a_plan_whose_capture_fails_runs_eagerly_and_says_why)
{
	struct backend_counters c;
	struct engine_stats st;
	struct fixture f;

	fixture_open(&f, BACKEND_HOST_GRAPHS | BACKEND_HOST_FAIL_CAPTURE, 0);
	cr_assert_lt(mlp_check(f.s, 4, 11), 1e-5f); /* eager */
	cr_assert_lt(mlp_check(f.s, 4, 12), 1e-5f); /* capture fails: eager */
	cr_assert_lt(mlp_check(f.s, 4, 13), 1e-5f); /* no second try */
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.capture_failures, 1);
	cr_assert_eq(st.eager_runs, 3);
	cr_assert_eq(st.graph_replays, 0);
	cr_assert(strstr(st.capture_error, "captures are refused") != NULL, "%s",
		  st.capture_error);
	backend_counters_get(f.be, &c);
	cr_assert_eq(c.replays, 0);
	cr_assert_eq(c.launches, 3 * MLP_STEPS + MLP_STEPS, "three eager runs and the failed capture");
	fixture_close(&f);
}

Test(engine, a_profiled_run_times_every_launch_and_computes_the_same)
{
	float x[5 * IN], y[5 * OUT], ref[5 * OUT];
	int64_t dims[2] = { 5, IN };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend_counters before, after;
	struct engine_step_time *t = NULL;
	struct engine_stats st;
	struct fixture f;
	unsigned seed = 31;
	int n = 0, i;

	/* With graphs, to see that the profiled run launches step by step
	 * even where a replay would be used. */
	fixture_open(&f, BACKEND_HOST_GRAPHS, 0);
	for (i = 0; i < 5 * IN; i++)
		x[i] = 3.0f * frand(&seed);
	mlp_reference(x, 5, ref);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), 0);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), 0); /* captured */
	backend_counters_get(f.be, &before);
	memset(y, 0, sizeof(y));
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_profile(f.s, &in, 1, &out, 1, &t, &n), 0, "%s",
		     cep_last_error());
	backend_counters_get(f.be, &after);
	engine_session_stats(f.s, &st);
	cr_assert_eq(n, st.last_steps);
	cr_assert_eq(n, 3, "MatMulBias (Relu), MatMulBias, Softmax");
	cr_assert_str_eq(t[0].op_type, "MatMulBias");
	cr_assert_str_eq(t[2].op_type, "Softmax");
	cr_assert_str_eq(t[2].node, "y", "a fused node is named by its output");
	for (i = 0; i < n; i++)
		cr_assert_geq(t[i].ms, 0.0);
	/* The ordinary run replays; the profiled one launches each step. */
	cr_assert_eq(after.replays, before.replays + 1);
	cr_assert_eq(after.launches, before.launches + (uint64_t)n);
	for (i = 0; i < 5 * OUT; i++)
		cr_assert_float_eq(y[i], ref[i], 1e-5f);
	free(t);
	fixture_close(&f);
}

Test(engine, lru_evicts_least_recently_used_plan)
{
	struct engine_stats st;
	struct backend_counters c;
	struct fixture f;

	fixture_open(&f, 0, 2);
	mlp_check(f.s, 1, 1);
	mlp_check(f.s, 2, 1);
	mlp_check(f.s, 1, 1); /* batch 1 is now the most recent */
	mlp_check(f.s, 3, 1); /* evicts batch 2 */
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 3);
	cr_assert_eq(st.plan_evictions, 1);
	cr_assert_eq(st.plans_cached, 2);
	mlp_check(f.s, 1, 1); /* still cached */
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 3);
	mlp_check(f.s, 2, 1); /* was evicted: built again, evicting batch 3 */
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 4);
	cr_assert_eq(st.plan_evictions, 2);
	backend_counters_get(f.be, &c);
	cr_assert_eq(c.allocs - c.frees, 2, "the two cached plans' blocks are all that is live");
	fixture_close(&f);
	cr_assert_eq(c.allocs, 4);
}

/* Checks, then runs, one input x of the given type and shape and output
 * y of out_capacity bytes; returns the first error. */
static int run_x(engine_session *s, cep_dtype dt, int rank, const int64_t *dims,
		 size_t bytes, size_t out_capacity)
{
	static float x[64], y[64];
	struct engine_input in = { "x", dt, rank, dims, x, bytes };
	struct engine_output out = { .name = "y", .data = y, .capacity = out_capacity };

	return eu_run(s, &in, 1, &out, 1);
}

/* What engine_run_check() says of one input x of the given type, shape
 * and bytes, with output y. */
static int check_x(engine_session *s, cep_dtype dt, int rank, const int64_t *dims,
		   size_t bytes)
{
	static float x[64], y[64];
	struct engine_input in = { "x", dt, rank, dims, x, bytes };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

	return engine_run_check(s, &in, 1, &out, 1);
}

Test(engine, bad_inputs_are_named)
{
	struct fixture f;
	int64_t ok[2] = { 2, IN }, wrong[2] = { 2, 3 };
	struct engine_input two[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 2, ok, w1, sizeof(float) * 2 * IN },
		{ "x", CEP_DTYPE_FLOAT32, 2, ok, w1, sizeof(float) * 2 * IN },
	};
	struct engine_input bogus = { "z", CEP_DTYPE_FLOAT32, 2, ok, w1, 8 };
	float y[16];
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct engine_output nope = { .name = "nope", .data = y, .capacity = sizeof(y) };
	struct engine_output twice[2] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "y", .data = y, .capacity = sizeof(y) },
	};

	fixture_open(&f, 0, 0);
	cr_assert_eq(check_x(f.s, CEP_DTYPE_INT64, 2, ok, 64), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "input 'x' is int64, the model wants float32");
	cr_assert_eq(check_x(f.s, CEP_DTYPE_FLOAT32, 2, wrong, 24), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'x': dimension 1 is 3, the model wants 4");
	cr_assert_eq(check_x(f.s, CEP_DTYPE_FLOAT32, 1, ok, 8), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'x': rank is 1, the model wants 2");
	cr_assert_eq(check_x(f.s, CEP_DTYPE_FLOAT32, 2, ok, 30), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'x' has 30 bytes, its shape needs 32");
	/* Room for an output is the plan's to know: the run says it. */
	cr_assert_eq(check_x(f.s, CEP_DTYPE_FLOAT32, 2, ok, 32), 0, "%s", cep_last_error());
	cr_assert_eq(run_x(f.s, CEP_DTYPE_FLOAT32, 2, ok, 32, 8), CEP_ENOSPC);
	cr_assert_str_eq(cep_last_error(), "output 'y' needs 24 bytes, 8 are given");
	cr_assert_eq(engine_run_check(f.s, NULL, 0, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "input 'x' is missing");
	cr_assert_eq(engine_run_check(f.s, two, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "input 'x' is given twice");
	cr_assert_eq(engine_run_check(f.s, &bogus, 1, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "'z' is not an input of the model");
	cr_assert_eq(engine_run_check(f.s, two, 1, &nope, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "'nope' is not an output of the model");
	cr_assert_eq(engine_run_check(f.s, two, 1, twice, 2), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "output 'y' is asked for twice");
	/* A valid run still works after all of that. */
	cr_assert_eq(run_x(f.s, CEP_DTYPE_FLOAT32, 2, ok, 32, 64), 0, "%s", cep_last_error());
	fixture_close(&f);
}

/* The check is where caller data meets the engine: nothing a caller can
 * put in the structs makes it read out of bounds or fail to refuse. */
Test(engine, the_check_is_safe_on_any_data)
{
	static const int64_t huge[2] = { INT64_MAX, IN }, neg[2] = { -1, IN };
	static const int64_t many[CEP_MAX_RANK + 1] = { 1 };
	struct fixture f;
	float y[16];
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct engine_output unnamed = { .name = NULL, .data = y, .capacity = sizeof(y) };
	struct engine_input in = { NULL, CEP_DTYPE_FLOAT32, 2, huge, w1, 8 };

	fixture_open(&f, 0, 0);
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "'(null)' is not an input of the model");
	in.name = "x";
	in.dims = NULL;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "input 'x' has no dims");
	in.dims = neg;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'x': dimension 0 is -1");
	in.rank = -1;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "rank -1 is out of range") != NULL, "%s",
		  cep_last_error());
	in.rank = CEP_MAX_RANK + 1;
	in.dims = many;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "is out of range") != NULL, "%s", cep_last_error());
	in.rank = 2;
	in.dims = huge;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(), "input 'x' has more than 2^40 elements");
	in.dims = (const int64_t[2]){ 2, IN };
	in.bytes = sizeof(float) * 2 * IN;
	in.data = NULL;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "input 'x' has no data");
	in.data = w1;
	cr_assert_eq(engine_run_check(f.s, &in, 1, &unnamed, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "'(null)' is not an output of the model");
	cr_assert_eq(engine_run_check(f.s, NULL, 1, &out, 1), CEP_EINVAL);
	cr_assert_eq(engine_run_check(f.s, &in, 1, NULL, 1), CEP_EINVAL);
	cr_assert_eq(engine_run_check(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(engine_run(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	fixture_close(&f);
}

Test(engine, symbols_must_agree_across_inputs)
{
	struct onnxb *b = onnxb_new(13);
	struct backend *be;
	engine_model *m;
	engine_session *s;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, c[6] = { 0 }, y[6];
	int64_t da[2] = { 2, 3 }, dc[2] = { 3, 3 };
	struct engine_input in[2] = {
		{ "a", CEP_DTYPE_FLOAT32, 2, da, a, sizeof(a) },
		{ "c", CEP_DTYPE_FLOAT32, 2, dc, c, sizeof(float) * 9 },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	float c9[9] = { 0 };
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "a", CEP_DTYPE_FLOAT32, "n,3");
	onnxb_input(b, "c", CEP_DTYPE_FLOAT32, "n,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Add", "a,c", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	in[1].data = c9;
	cr_assert_eq(engine_run_check(s, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'c': dimension 0 is 3, but 'n' is 2 from input 'a'");
	dc[0] = 2;
	in[1].bytes = sizeof(c);
	in[1].data = c;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[5], 6.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(engine, an_empty_folded_constant_output_has_a_device_home)
{
	struct onnxb *b = onnxb_new(15);
	struct backend *be;
	engine_model *m;
	engine_session *s;
	float x[6] = { 0 };
	int64_t dx[2] = { 2, 3 }, y[1] = { -1 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dx, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	/* Shape with start past end folds into a constant of no elements:
	 * on a backend that uploads weights it still needs an address. */
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	n = onnxb_node(b, "Shape", "x", "y");
	onnxb_attr_int(n, "start", 2);
	onnxb_attr_int(n, "end", 1);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.bytes, 0);
	cr_assert_eq(y[0], -1, "nothing written");
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(engine, model_outlives_unref_while_a_session_holds_it)
{
	struct backend *be;
	engine_model *m = mlp_load();
	engine_session *s;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	engine_model_unref(m); /* the session's reference keeps it */
	cr_assert_lt(mlp_check(s, 3, 5), 1e-5f);
	cr_assert_eq(engine_session_model(s), m);
	engine_session_free(s);
	backend_free(be);
}

Test(engine, a_half_session_needs_a_model_loaded_for_it)
{
	struct engine_session_options o = { .precision = CEP_PRECISION_FP16 };
	struct backend *be;
	engine_model *m = mlp_load();
	engine_session *s;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, &o, &s), CEP_EINVAL);
	cr_assert_null(s);
	cr_assert_not_null(strstr(cep_last_error(), "loaded for fp16"), "%s", cep_last_error());
	engine_model_unref(m);
	backend_free(be);
}

Test(engine, memory_limit_evicts_then_refuses)
{
	struct engine_session_options o = { 0 };
	struct engine_stats st;
	struct backend *be;
	engine_model *m = mlp_load();
	engine_session *s;
	uint64_t one_plan;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	mlp_check(s, 100, 1);
	engine_session_stats(s, &st);
	one_plan = st.plan_bytes;
	cr_assert_gt(one_plan, 0);
	engine_session_free(s);
	/* Room for one plan of batch 100, not two. */
	o.memory_limit = one_plan + one_plan / 2;
	cr_assert_eq(engine_session_new(m, be, &o, &s), 0);
	cr_assert_lt(mlp_check(s, 100, 2), 1e-5f);
	cr_assert_lt(mlp_check(s, 99, 3), 1e-5f);
	engine_session_stats(s, &st);
	cr_assert_eq(st.plans_built, 2);
	cr_assert_eq(st.plans_cached, 1, "the batch-100 plan made room");
	cr_assert_eq(st.plan_evictions, 1);
	cr_assert_leq(st.plan_bytes, o.memory_limit);
	{
		static float x[1000 * IN], y[1000 * OUT];
		int64_t dims[2] = { 1000, IN };
		struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
		struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

		cr_assert_eq(eu_run(s, &in, 1, &out, 1), CEP_ELIMIT);
		cr_assert(strstr(cep_last_error(), "session 1 memory limit"), "%s", cep_last_error());
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(engine, empty_batch_runs)
{
	struct fixture f;

	fixture_open(&f, 0, 0);
	cr_assert_eq(mlp_check(f.s, 0, 1), 0.0f);
	cr_assert_lt(mlp_check(f.s, 1, 1), 1e-5f);
	fixture_close(&f);
}

Test(engine, outputs_that_are_inputs_or_constants)
{
	struct onnxb *b = onnxb_new(13);
	float x[2] = { 1, 2 }, w[3] = { 7, 8, 9 }, y[2], c[3], r[2];
	int64_t dims[1] = { 2 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output out[3] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "c", .data = c, .capacity = sizeof(c) },
		{ .name = "r", .data = r, .capacity = sizeof(r) },
	};
	struct backend *be;
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "c", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "r", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "3", w);
	onnxb_node(b, "Identity", "x", "y"); /* an input returned as it is */
	onnxb_node(b, "Identity", "w", "c"); /* a constant returned */
	onnxb_node(b, "Relu", "x", "r");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(BACKEND_HOST_GRAPHS, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(y[1], 2.0f);
	cr_assert_eq(c[2], 9.0f);
	cr_assert_eq(out[1].dims[0], 3);
	cr_assert_eq(r[0], 1.0f);
	/* Asking for a subset, in another order, is fine. */
	x[1] = 5;
	cr_assert_eq(eu_run(s, &in, 1, &out[2], 1), 0, "%s", cep_last_error());
	cr_assert_eq(r[1], 5.0f);
	cr_assert_eq(eu_run(s, &in, 1, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[1], 5.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
