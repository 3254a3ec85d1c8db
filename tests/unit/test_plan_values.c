/*
 * test_plan_values.c — plans for shapes that depend on input values: a
 * Reshape whose target shape is a graph input, an Unsqueeze whose axes
 * are, a target computed from a Shape -> Gather chain and a value input.
 * The engine reads those values while planning and keys the plan by them:
 * other values get another plan, the same values find it again, an input
 * that is only data keys nothing, the LRU bound holds; and what cannot key
 * a plan (an input too large, values computed by a node too large to
 * evaluate while planning) is refused with the node and the culprit named.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

struct fixture {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static void fixture_open(struct fixture *f, struct onnxb *b, int max_plans)
{
	struct engine_session_options opts = { .max_plans = max_plans };
	uint8_t *buf;
	size_t len;

	memset(f, 0, sizeof(*f));
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &f->m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &f->be), 0);
	cr_assert_eq(engine_session_new(f->m, f->be, &opts, &f->s), 0, "%s", cep_last_error());
}

static void fixture_close(struct fixture *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

static struct engine_stats stats(const struct fixture *f)
{
	struct engine_stats st;

	engine_session_stats(f->s, &st);
	return st;
}

/* x float32 [2,3,4] -> Reshape(x, shape) -> y; sq = shape * shape, so
 * that a value input feeding ordinary arithmetic is exercised too. */
static void reshape_open(struct fixture *f, int max_plans)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3,4");
	onnxb_input(b, "shape", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "sq", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "Reshape", "x,shape", "y");
	onnxb_node(b, "Mul", "shape,shape", "sq");
	fixture_open(f, b, max_plans);
}

/* Runs the Reshape model with the target shape {a, b}; checks y's shape
 * (want0 x want1) and elements, and sq. Returns engine_run()'s result. */
static int reshape_run(struct fixture *f, int64_t a, int64_t b, int64_t want0, int64_t want1)
{
	static const int64_t xdims[3] = { 2, 3, 4 }, sdims[1] = { 2 };
	float x[24], y[24];
	int64_t shape[2] = { a, b }, sq[2] = { 0, 0 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, xdims, x, sizeof(x) },
		{ "shape", CEP_DTYPE_INT64, 1, sdims, shape, sizeof(shape) },
	};
	struct engine_output out[2] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "sq", .data = sq, .capacity = sizeof(sq) },
	};
	int i, ret;

	for (i = 0; i < 24; i++)
		x[i] = (float)i + 0.5f;
	memset(y, 0, sizeof(y));
	ret = eu_run(f->s, in, 2, out, 2);
	if (ret < 0)
		return ret;
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], want0);
	cr_assert_eq(out[0].dims[1], want1);
	cr_assert_eq(out[0].bytes, sizeof(y));
	for (i = 0; i < 24; i++)
		cr_assert_eq(y[i], (float)i + 0.5f, "y[%d] = %g", i, y[i]);
	cr_assert_eq(out[1].rank, 1);
	cr_assert_eq(out[1].dims[0], 2);
	cr_assert_eq(sq[0], a * a);
	cr_assert_eq(sq[1], b * b);
	return 0;
}

Test(plan_values, reshape_target_from_an_input_keys_the_plan)
{
	struct fixture f;
	struct engine_stats st;

	reshape_open(&f, 0);
	cr_assert_eq(reshape_run(&f, 4, 6, 4, 6), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 6, 4, 6, 4), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_built, 2, "same shapes, other values: another plan");
	cr_assert_eq(st.plans_cached, 2);
	cr_assert_eq(st.plan_hits, 0);
	cr_assert_eq(reshape_run(&f, 4, 6, 4, 6), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 6, 4, 6, 4), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_built, 2, "the same values find their plan");
	cr_assert_eq(st.plan_hits, 2);
	/* -1 and 0 are resolved against x, like any Reshape. */
	cr_assert_eq(reshape_run(&f, -1, 12, 2, 12), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 0, -1, 2, 12), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_built, 4);
	cr_assert_eq(st.runs, 6);
	/* Only the Reshape's copy is left to run: sq was computed while
	 * planning, from the values the plan is keyed by. */
	cr_assert_eq(st.last_steps, 1);
	fixture_close(&f);
}

Test(plan_values, values_that_do_not_fit_fail_and_cache_nothing)
{
	struct fixture f;
	struct engine_stats st;

	reshape_open(&f, 0);
	cr_assert_eq(reshape_run(&f, 5, 5, 0, 0), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Reshape, domain ai.onnx, opset 13): "
					   "Reshape: cannot reshape [2,3,4] to [5,5]");
	st = stats(&f);
	cr_assert_eq(st.plans_cached, 0);
	cr_assert_eq(st.plans_built, 0);
	cr_assert_eq(reshape_run(&f, 3, 8, 3, 8), 0, "%s", cep_last_error());
	fixture_close(&f);
}

Test(plan_values, the_lru_bound_holds)
{
	struct fixture f;
	struct engine_stats st;

	reshape_open(&f, 2);
	cr_assert_eq(reshape_run(&f, 4, 6, 4, 6), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 6, 4, 6, 4), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 4, 6, 4, 6), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 3, 8, 3, 8), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_cached, 2);
	cr_assert_eq(st.plan_evictions, 1);
	cr_assert_eq(st.plan_hits, 1);
	/* {6,4} was the least recently used: it is built again. */
	cr_assert_eq(reshape_run(&f, 4, 6, 4, 6), 0, "%s", cep_last_error());
	cr_assert_eq(reshape_run(&f, 6, 4, 6, 4), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_built, 4);
	cr_assert_eq(st.plan_hits, 2);
	cr_assert_eq(st.plans_cached, 2);
	fixture_close(&f);
}

/* x float32 [n,3,4]; y = Reshape(x, Concat(Gather(Shape(x), [0]), v)). */
Test(plan_values, a_shape_chain_mixed_with_a_value_input)
{
	struct onnxb *b = onnxb_new(13);
	struct fixture f;
	struct engine_stats st;
	int64_t zero = 0, v = 12, dims[3] = { 2, 3, 4 }, vdims[1] = { 1 };
	float x[4 * 12], y[4 * 12];
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, dims, x, 0 },
		{ "v", CEP_DTYPE_INT64, 1, vdims, &v, sizeof(v) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	Onnx__NodeProto *n;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,3,4");
	onnxb_input(b, "v", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "1", &zero);
	onnxb_node(b, "Shape", "x", "s");
	onnxb_node(b, "Gather", "s,zero", "d0");
	n = onnxb_node(b, "Concat", "d0,v", "t");
	onnxb_attr_int(n, "axis", 0);
	onnxb_node(b, "Reshape", "x,t", "y");
	fixture_open(&f, b, 0);
	for (i = 0; i < 48; i++)
		x[i] = (float)i;

	in[0].bytes = 24 * sizeof(float);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 12);
	for (i = 0; i < 24; i++)
		cr_assert_eq(y[i], (float)i);
	st = stats(&f);
	cr_assert_eq(st.last_steps, 1, "Shape, Gather and Concat run while planning");
	cr_assert_eq(st.last_folded, 3);

	/* The same value with another batch: the shape key changes. */
	dims[0] = 4;
	in[0].bytes = 48 * sizeof(float);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 12);
	/* Another value with that batch: the value key changes. */
	v = -1;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 12);
	for (i = 0; i < 48; i++)
		cr_assert_eq(y[i], (float)i);
	st = stats(&f);
	cr_assert_eq(st.plans_built, 3);
	v = 12;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	st = stats(&f);
	cr_assert_eq(st.plans_built, 3);
	cr_assert_eq(st.plan_hits, 1);
	fixture_close(&f);
}

/* A value input of the shape key that only matters for shapes (Unsqueeze's
 * axes), next to a small integer input that is only data: that one must
 * not key the plan, or every new value of it would build a plan. */
Test(plan_values, an_input_that_is_only_data_keys_nothing)
{
	struct onnxb *b = onnxb_new(13);
	struct fixture f;
	struct engine_stats st;
	int64_t x[3] = { 1, 2, 3 }, axes[1] = { 0 }, y[3];
	int64_t xdims[1] = { 3 }, adims[1] = { 1 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_INT64, 1, xdims, x, sizeof(x) },
		{ "axes", CEP_DTYPE_INT64, 1, adims, axes, sizeof(axes) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

	onnxb_input(b, "x", CEP_DTYPE_INT64, "3");
	onnxb_input(b, "axes", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "Unsqueeze", "x,axes", "y");
	fixture_open(&f, b, 0);

	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[1], 3);
	x[0] = 7;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 7, "x's new values are used, not ones kept from planning");
	cr_assert_eq(y[2], 3);
	st = stats(&f);
	cr_assert_eq(st.plans_built, 1);
	cr_assert_eq(st.plan_hits, 1);
	axes[0] = -1;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	cr_assert_eq(out.dims[1], 1);
	cr_assert_eq(y[0], 7);
	st = stats(&f);
	cr_assert_eq(st.plans_built, 2);
	fixture_close(&f);
}

Test(plan_values, an_empty_value_input_keys_a_plan)
{
	struct onnxb *b = onnxb_new(13);
	struct fixture f;
	float x = 2.5f, y = 0.0f;
	int64_t xdims[1] = { 1 }, sdims[1] = { 0 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 1, xdims, &x, sizeof(x) },
		{ "shape", CEP_DTYPE_INT64, 1, sdims, NULL, 0 },
	};
	struct engine_output out = { .name = "y", .data = &y, .capacity = sizeof(y) };

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1");
	onnxb_input(b, "shape", CEP_DTYPE_INT64, "?");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Reshape", "x,shape", "y");
	fixture_open(&f, b, 0);
	/* An empty target shape makes a scalar. */
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(y, 2.5f);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(stats(&f).plan_hits, 1);
	fixture_close(&f);
}

/* y = Reshape(x, Gather(big, [0, 1])): the target comes from an input of
 * 100 elements, more than may key a plan. */
Test(plan_values, an_oversized_value_input_is_refused)
{
	struct onnxb *b = onnxb_new(13);
	struct fixture f;
	static int64_t big[100];
	int64_t idx[2] = { 0, 1 }, xdims[1] = { 6 }, bdims[1] = { 100 };
	float x[6], y[6];
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 1, xdims, x, sizeof(x) },
		{ "big", CEP_DTYPE_INT64, 1, bdims, big, sizeof(big) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "6");
	onnxb_input(b, "big", CEP_DTYPE_INT64, "100");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "idx", CEP_DTYPE_INT64, "2", idx);
	onnxb_node(b, "Gather", "big,idx", "s");
	onnxb_node(b, "Reshape", "x,s", "y");
	fixture_open(&f, b, 0);
	big[0] = 2;
	big[1] = 3;
	memset(x, 0, sizeof(x));
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(),
			 "node 1 'y' (op Reshape, domain ai.onnx, opset 13): the shape [?,?] of "
			 "output 'y' depends on values known only at run time: it needs the values "
			 "of input 'big', whose 100 elements are more than the 64 a plan can be "
			 "keyed by");
	cr_assert_eq(stats(&f).plans_cached, 0);
	fixture_close(&f);
}

/* y = Reshape(x, Gather(Add(v, zeros[10000]), [0, 1])): v is small, but
 * the Add makes 80000 bytes, too much to compute while planning, so the
 * target is only known once the Add has run. */
Test(plan_values, values_computed_at_run_time_are_refused)
{
	struct onnxb *b = onnxb_new(13);
	struct fixture f;
	int64_t idx[2] = { 0, 1 }, v = 3, xdims[1] = { 9 }, vdims[1] = { 1 };
	float x[9], y[9];
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 1, xdims, x, sizeof(x) },
		{ "v", CEP_DTYPE_INT64, 1, vdims, &v, sizeof(v) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "9");
	onnxb_input(b, "v", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zeros", CEP_DTYPE_INT64, "10000", NULL);
	onnxb_init(b, "idx", CEP_DTYPE_INT64, "2", idx);
	onnxb_node(b, "Add", "v,zeros", "wide");
	onnxb_node(b, "Gather", "wide,idx", "s");
	onnxb_node(b, "Reshape", "x,s", "y");
	fixture_open(&f, b, 0);
	memset(x, 0, sizeof(x));
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(),
			 "node 2 'y' (op Reshape, domain ai.onnx, opset 13): the shape [?,?] of "
			 "output 'y' depends on values known only at run time: it needs values "
			 "that node 0 'wide' (op Add, domain ai.onnx, opset 13) computes at run time");
	cr_assert_eq(stats(&f).plans_cached, 0);
	fixture_close(&f);
}
