/*
 * test_ops_ctrl.c — control flow through the engine (engine/ctrl.h,
 * engine/plan_ctrl.c, engine/exec_ctrl.c), with models built here and
 * values worked out from the ONNX specification:
 *   If at every opset that defines it, its condition read at run time or
 *     known while planning, branches of different shapes (a plan per
 *     condition), outer-scope values read from one and two levels up, a
 *     branch that cannot be planned for the shapes given, an If evaluated
 *     while planning for the shape it computes, a branch whose shapes need
 *     an input's values, every stored type passing through;
 *   Loop with M and cond, M alone, a condition the body computes, none
 *     that ends, zero iterations, a body sliced by its iteration number
 *     (a subplan per iteration), carried values that change shape;
 *   Scan 9+ along other axes and in reverse, one value returned twice,
 *     Scan 8 per batch row and its sequence_lens;
 *   the loader's refusals of hostile subgraphs, fp16 sessions (control
 *     flow stays float32), a backend with graphs (never captured), the
 *     asynchronous host backend, and warm submits (plans that read back
 *     are left to another thread).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

struct fx {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static int model_load(struct onnxb *b, cep_precision prec, engine_model **m)
{
	struct engine_model_options o = { .precision = prec, .backend = BACKEND_HOST };
	size_t len;
	uint8_t *buf = onnxb_finish(b, &len);
	int ret = engine_model_load_as(buf, len, -1, &o, m);

	free(buf);
	return ret;
}

static void fx_open_as(struct fx *f, struct onnxb *b, unsigned host_flags, cep_precision prec)
{
	struct engine_session_options o = { .precision = prec };

	memset(f, 0, sizeof(*f));
	cr_assert_eq(model_load(b, prec, &f->m), 0, "%s", cep_last_error());
	cr_assert_eq(backend_host_new(host_flags, &f->be), 0);
	cr_assert_eq(engine_session_new(f->m, f->be, &o, &f->s), 0, "%s", cep_last_error());
}

static void fx_open(struct fx *f, struct onnxb *b, unsigned host_flags)
{
	fx_open_as(f, b, host_flags, CEP_PRECISION_FP32);
}

static void fx_close(struct fx *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/* Loading b must fail with err, the message naming what. */
static void load_refused(struct onnxb *b, int err, const char *what)
{
	engine_model *m = NULL;
	int ret = model_load(b, CEP_PRECISION_FP32, &m);

	cr_assert_eq(ret, err, "got %d: %s", ret, cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), what), "%s", cep_last_error());
	cr_assert_null(m);
}

static struct engine_input in_t(const char *name, cep_dtype dt, int rank, const int64_t *dims,
				const void *data, size_t bytes)
{
	return (struct engine_input){ name, dt, rank, dims, data, bytes };
}

static struct engine_output out_t(const char *name, void *data, size_t cap)
{
	return (struct engine_output){ .name = name, .data = data, .capacity = cap };
}

static const unsigned char yes = 1, no = 0;

/* ------------------------------------------------------------------- If */

/* y = If(cond) { x + x } else { x - c }, c an initializer of the else
 * branch: operators of opset 1 already, so every opset of If can hold it. */
static struct onnxb *if_model(int opset, const char *xshape)
{
	static const float c[6] = { 1, 2, 3, 4, 5, 6 };
	struct onnxb *b = onnxb_new(opset), t, e;
	Onnx__NodeProto *n;

	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, xshape);
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Add", "x,x", "t_out");
	onnxb_output(&t, "t_out", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_init(&e, "c", CEP_DTYPE_FLOAT32, "2,3", c);
	onnxb_node(&e, "Sub", "x,c", "e_out");
	onnxb_output(&e, "e_out", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

/* Runs f's model on cond and x [2,3] into y. */
static int if_run(struct fx *f, const unsigned char *cond, const float *x, float *y)
{
	struct engine_input in[2] = {
		in_t("cond", CEP_DTYPE_BOOL, 0, NULL, cond, 1),
		in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x, 6 * sizeof(float)),
	};
	struct engine_output out = out_t("y", y, 6 * sizeof(float));

	return eu_run(f->s, in, 2, &out, 1);
}

Test(ctrl_if, every_opset_runs_the_branch_the_condition_picks)
{
	static const int opsets[] = { 1, 11, 13, 16, 19, 21, 23, 25 };
	const float x[6] = { 0.5f, -1, 2, 7, -3, 4 };
	float y[6];
	size_t o;
	int i;

	for (o = 0; o < sizeof(opsets) / sizeof(opsets[0]); o++) {
		struct fx f;

		fx_open(&f, if_model(opsets[o], "2,3"), 0);
		cr_assert_eq(if_run(&f, &yes, x, y), 0, "opset %d: %s", opsets[o], cep_last_error());
		for (i = 0; i < 6; i++)
			cr_assert_eq(y[i], 2 * x[i], "opset %d then y[%d]", opsets[o], i);
		cr_assert_eq(if_run(&f, &no, x, y), 0, "%s", cep_last_error());
		for (i = 0; i < 6; i++)
			cr_assert_eq(y[i], x[i] - (float)(i + 1), "opset %d else y[%d]", opsets[o], i);
		fx_close(&f);
	}
}

/* The branches agree on their shapes: one plan, which reads the condition
 * back when it runs, serves both; it is never captured, even on a backend
 * with graphs, and stays right run after run. */
Test(ctrl_if, one_plan_reads_the_condition_and_is_never_captured)
{
	const float x[6] = { 1, 2, 3, 4, 5, 6 };
	struct engine_plan_info info;
	struct engine_stats st;
	struct fx f;
	float y[6];
	int r, i;

	fx_open(&f, if_model(13, "2,3"), BACKEND_HOST_GRAPHS);
	for (r = 0; r < 6; r++) {
		cr_assert_eq(if_run(&f, r % 3 ? &yes : &no, x, y), 0, "%s", cep_last_error());
		for (i = 0; i < 6; i++)
			cr_assert_eq(y[i], r % 3 ? 2 * x[i] : x[i] - (float)(i + 1));
	}
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 1);
	cr_assert_eq(engine_session_plans(f.s, &info, 1), 1);
	cr_assert_not(info.captured);
	cr_assert_eq(info.captures, 0);
	cr_assert_eq(info.eager_runs, 6);
	cr_assert_not_null(strstr(info.capture_error, "control flow"), "%s", info.capture_error);
	cr_assert_gt(info.block_bytes, info.workspace_bytes);
	fx_close(&f);
}

/* then returns the outer x itself, else x stacked twice: the shapes
 * differ, so the plan is for the condition's value (a small input). */
Test(ctrl_if, branches_of_other_shapes_get_a_plan_per_condition)
{
	struct onnxb *b = onnxb_new(13), t, e;
	const float x[6] = { 1, 2, 3, 4, 5, 6 };
	float y[12];
	struct engine_stats st;
	Onnx__NodeProto *n;
	struct fx f;
	int i;

	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_output(&t, "x", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_attr_int(onnxb_node(&e, "Concat", "x,x", "xx"), "axis", 0);
	onnxb_output(&e, "xx", CEP_DTYPE_FLOAT32, NULL);
	fx_open(&f, b, 0);
	{
		struct engine_input in[2] = {
			in_t("cond", CEP_DTYPE_BOOL, 0, NULL, &yes, 1),
			in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x, sizeof(x)),
		};
		struct engine_output out = out_t("y", y, sizeof(y));

		cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.rank, 2);
		cr_assert_eq(out.dims[0], 2);
		for (i = 0; i < 6; i++)
			cr_assert_eq(y[i], x[i]);
		in[0].data = &no;
		cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.dims[0], 4);
		for (i = 0; i < 12; i++)
			cr_assert_eq(y[i], x[i % 6]);
		in[0].data = &yes;
		cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.dims[0], 2);
	}
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 2, "a plan per condition");
	fx_close(&f);
}

/* cond = ReduceSum(x) > 0 over 100 elements: too many to key a plan, so
 * the condition is known only at run time. With branches of one shape
 * that is fine (the plan reads it back); with branches of two it is
 * refused, saying why. */
static struct onnxb *computed_if(bool same_shapes)
{
	static const float zero = 0;
	static const int64_t shape[2] = { 50, 2 };
	struct onnxb *b = onnxb_new(13), t, e;
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,100");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_FLOAT32, "", &zero);
	onnxb_attr_int(onnxb_node(b, "ReduceSum", "x", "sum"), "keepdims", 0);
	onnxb_node(b, "Greater", "sum,zero", "cond");
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Relu", "x", "r");
	onnxb_output(&t, "r", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	if (same_shapes) {
		onnxb_node(&e, "Neg", "x", "ng");
	} else {
		onnxb_init(&e, "shape", CEP_DTYPE_INT64, "2", shape);
		onnxb_node(&e, "Reshape", "x,shape", "ng");
	}
	onnxb_output(&e, "ng", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

static void computed_if_check(unsigned host_flags)
{
	float x[100], y[100];
	struct engine_input in = in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(1, 100), x, sizeof(x));
	struct engine_output out = out_t("y", y, sizeof(y));
	struct fx f;
	int i, r;

	fx_open(&f, computed_if(true), host_flags);
	for (r = 0; r < 4; r++) {
		float sign = r % 2 ? -1.0f : 1.0f;

		for (i = 0; i < 100; i++)
			x[i] = sign * (float)(i % 7) - (i % 3 ? 0.5f : 0.0f) * sign;
		cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
		for (i = 0; i < 100; i++)
			cr_assert_eq(y[i], sign > 0 ? fmaxf(x[i], 0.0f) : -x[i], "run %d y[%d]", r, i);
	}
	fx_close(&f);
}

Test(ctrl_if, a_condition_computed_at_run_time_is_read_back)
{
	computed_if_check(0);
}

Test(ctrl_if, a_condition_read_back_on_a_queued_stream_waits_for_its_value)
{
	computed_if_check(BACKEND_HOST_ASYNC);
}

Test(ctrl_if, branches_of_other_shapes_need_a_condition_known_while_planning)
{
	float x[100] = { 0 }, y[100];
	struct engine_input in = in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(1, 100), x, sizeof(x));
	struct engine_output out = out_t("y", y, sizeof(y));
	struct fx f;

	fx_open(&f, computed_if(false), 0);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "op If"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "depends on values known only at run time"),
			   "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "'x'"), "%s", cep_last_error());
	fx_close(&f);
}

/* else reshapes 100 elements to [3,3]: it cannot be planned (x's size is
 * symbolic in the model, so the load does not see it), but then can, so
 * the plan runs while the condition takes then, and a run that takes else
 * fails with else's error. */
Test(ctrl_if, a_branch_that_cannot_be_planned_fails_only_the_runs_that_take_it)
{
	static const float zero = 0;
	static const int64_t bad[2] = { 3, 3 };
	struct onnxb *b = onnxb_new(13), t, e;
	float x[100], y[100];
	struct engine_input in = in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(1, 100), x, sizeof(x));
	struct engine_output out = out_t("y", y, sizeof(y));
	Onnx__NodeProto *n;
	struct fx f;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,n");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_FLOAT32, "", &zero);
	onnxb_attr_int(onnxb_node(b, "ReduceSum", "x", "sum"), "keepdims", 0);
	onnxb_node(b, "Greater", "sum,zero", "cond");
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Abs", "x", "a");
	onnxb_output(&t, "a", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_init(&e, "bad", CEP_DTYPE_INT64, "2", bad);
	onnxb_node(&e, "Reshape", "x,bad", "rs");
	onnxb_output(&e, "rs", CEP_DTYPE_FLOAT32, NULL);
	fx_open(&f, b, 0);
	for (i = 0; i < 100; i++)
		x[i] = (float)(i - 40);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 100; i++)
		cr_assert_eq(y[i], fabsf(x[i]));
	for (i = 0; i < 100; i++)
		x[i] = (float)(-i);
	cr_assert_eq(eu_run(f.s, &in, 1, &out, 1), CEP_ESHAPE, "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "else_branch, which could not be planned"),
			   "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "op Reshape"), "%s", cep_last_error());
	fx_close(&f);
}

/* An If in the then branch of an If, reading x of the model graph two
 * levels up and c1 of the branch between. */
Test(ctrl_if, nested_branches_read_values_of_every_enclosing_graph)
{
	struct onnxb *b = onnxb_new(13), t, e, tt, te;
	const float x[6] = { 1, -2, 3, -4, 5, -6 };
	float y[6];
	Onnx__NodeProto *n, *inner;
	struct fx f;
	int c1, c2, i;

	onnxb_input(b, "c1", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "c2", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "If", "c1", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Add", "x,x", "x2");
	inner = onnxb_node(&t, "If", "c2", "t_out");
	tt = onnxb_subgraph(&t, inner, "then_branch");
	onnxb_node(&tt, "Add", "x2,x", "x3");
	onnxb_output(&tt, "x3", CEP_DTYPE_FLOAT32, NULL);
	te = onnxb_subgraph(&t, inner, "else_branch");
	onnxb_node(&te, "Mul", "x2,x", "xx2");
	onnxb_output(&te, "xx2", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&t, "t_out", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_node(&e, "Neg", "x", "nx");
	onnxb_output(&e, "nx", CEP_DTYPE_FLOAT32, NULL);
	fx_open(&f, b, BACKEND_HOST_ASYNC);
	for (c1 = 0; c1 < 2; c1++) {
		for (c2 = 0; c2 < 2; c2++) {
			unsigned char v1 = (unsigned char)c1, v2 = (unsigned char)c2;
			struct engine_input in[3] = {
				in_t("c1", CEP_DTYPE_BOOL, 0, NULL, &v1, 1),
				in_t("c2", CEP_DTYPE_BOOL, 0, NULL, &v2, 1),
				in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x, sizeof(x)),
			};
			struct engine_output out = out_t("y", y, sizeof(y));

			cr_assert_eq(eu_run(f.s, in, 3, &out, 1), 0, "%s", cep_last_error());
			for (i = 0; i < 6; i++) {
				float want = !c1 ? -x[i] : c2 ? 3 * x[i] : 2 * x[i] * x[i];

				cr_assert_eq(y[i], want, "c1 %d c2 %d y[%d]", c1, c2, i);
			}
		}
	}
	fx_close(&f);
}

/* cond = Size(x) > 10 is known while planning; the branch taken turns the
 * small input dims into the shape a Reshape further on needs: the If is
 * evaluated on the host (the plan is for dims' values) and leaves no
 * control step behind. */
Test(ctrl_if, an_if_whose_values_a_shape_needs_is_evaluated_while_planning)
{
	static const int64_t ten = 10;
	struct onnxb *b = onnxb_new(13), t, e;
	float x[12], y[12];
	int64_t dims[2] = { 3, 4 };
	struct engine_input in[2] = {
		in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(2, 6), x, sizeof(x)),
		in_t("dims", CEP_DTYPE_INT64, 1, DIMS(2), dims, sizeof(dims)),
	};
	struct engine_output out = out_t("y", y, sizeof(y));
	struct engine_plan_info info;
	struct engine_stats st;
	Onnx__NodeProto *n;
	struct fx f;
	int i;

	for (i = 0; i < 12; i++)
		x[i] = (float)i;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,6");
	onnxb_input(b, "dims", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "ten", CEP_DTYPE_INT64, "", &ten);
	onnxb_node(b, "Size", "x", "size");
	onnxb_node(b, "Greater", "size,ten", "big");
	n = onnxb_node(b, "If", "big", "shape");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_output(&t, "dims", CEP_DTYPE_INT64, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_node(&e, "Neg", "dims", "nd");
	onnxb_output(&e, "nd", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "Reshape", "x,shape", "y");
	fx_open(&f, b, 0);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	cr_assert_eq(out.dims[1], 4);
	for (i = 0; i < 12; i++)
		cr_assert_eq(y[i], x[i]);
	cr_assert_eq(engine_session_plans(f.s, &info, 1), 1);
	cr_assert_str_eq(info.capture_error, "", "no control step is left");
	dims[0] = 6;
	dims[1] = 2;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 6);
	cr_assert_eq(out.dims[1], 2);
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.plans_built, 2, "a plan per value of dims");
	fx_close(&f);
}

/* The branches reshape x by dims, an input of the model graph: a branch's
 * subplan needs its values, which the plan then learns from the run. */
Test(ctrl_if, a_branch_learns_the_values_of_the_enclosing_graph_its_shapes_need)
{
	static const float zero = 0;
	struct onnxb *b = onnxb_new(13), t, e;
	float x[100], y[100];
	int64_t dims[2] = { 10, 10 };
	struct engine_input in[2] = {
		in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(1, 100), x, sizeof(x)),
		in_t("dims", CEP_DTYPE_INT64, 1, DIMS(2), dims, sizeof(dims)),
	};
	struct engine_output out = out_t("y", y, sizeof(y));
	Onnx__NodeProto *n;
	struct fx f;
	int i, r;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,100");
	onnxb_input(b, "dims", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_FLOAT32, "", &zero);
	onnxb_attr_int(onnxb_node(b, "ReduceSum", "x", "sum"), "keepdims", 0);
	onnxb_node(b, "Greater", "sum,zero", "cond");
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Reshape", "x,dims", "tr");
	onnxb_output(&t, "tr", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_node(&e, "Neg", "x", "nx");
	onnxb_node(&e, "Reshape", "nx,dims", "er");
	onnxb_output(&e, "er", CEP_DTYPE_FLOAT32, NULL);
	fx_open(&f, b, 0);
	for (r = 0; r < 4; r++) {
		float sign = r % 2 ? -1.0f : 1.0f;

		dims[0] = r < 2 ? 10 : 4;
		dims[1] = r < 2 ? 10 : 25;
		for (i = 0; i < 100; i++)
			x[i] = sign * (float)(i + 1);
		cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.dims[0], dims[0]);
		cr_assert_eq(out.dims[1], dims[1]);
		for (i = 0; i < 100; i++)
			cr_assert_eq(y[i], fabsf(x[i]), "run %d y[%d]", r, i);
	}
	fx_close(&f);
}

/* then returns the outer x, else a constant of the branch: every stored
 * type comes out bit for bit. */
Test(ctrl_if, every_stored_type_passes_through)
{
	static const cep_dtype types[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
		CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
	};
	unsigned char x[32], c[32], y[32];
	size_t t, i;

	for (i = 0; i < sizeof(x); i++) {
		x[i] = (unsigned char)(i * 37 + 11);
		c[i] = (unsigned char)(i * 13 + 5);
	}
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		size_t bytes = 4 * cep_dtype_size(types[t]);
		struct onnxb *b = onnxb_new(21), th, el;
		Onnx__NodeProto *n;
		struct fx f;
		int cond;

		if (types[t] == CEP_DTYPE_BOOL)
			for (i = 0; i < 4; i++) {
				x[i] &= 1;
				c[i] = !x[i];
			}
		onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
		onnxb_input(b, "x", types[t], "4");
		onnxb_output(b, "y", types[t], "4");
		n = onnxb_node(b, "If", "cond", "y");
		th = onnxb_subgraph(b, n, "then_branch");
		onnxb_output(&th, "x", types[t], NULL);
		el = onnxb_subgraph(b, n, "else_branch");
		onnxb_init(&el, "c", types[t], "4", c);
		onnxb_output(&el, "c", types[t], NULL);
		fx_open(&f, b, 0);
		for (cond = 0; cond < 2; cond++) {
			unsigned char cv = (unsigned char)cond;
			struct engine_input in[2] = {
				in_t("cond", CEP_DTYPE_BOOL, 0, NULL, &cv, 1),
				in_t("x", types[t], 1, DIMS(4), x, bytes),
			};
			struct engine_output out = out_t("y", y, sizeof(y));

			cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s: %s",
				     cep_dtype_name(types[t]), cep_last_error());
			cr_assert_eq(out.dtype, types[t]);
			cr_assert_eq(memcmp(y, cond ? x : c, bytes), 0, "%s cond %d",
				     cep_dtype_name(types[t]), cond);
		}
		fx_close(&f);
	}
}

/* ------------------------------------------------------------------ Loop */

/* The ONNX example test_loop11: y += x[i:i+1] for i < trip_count while
 * cond, every y kept as a scan output. The Slice's bounds come from the
 * iteration number, so the body is planned per iteration. */
static struct onnxb *loop11_model(void)
{
	static const float xs[5] = { 1, 2, 3, 4, 5 };
	static const int64_t one = 1, axes[1] = { 0 };
	struct onnxb *b = onnxb_new(11), body;
	Onnx__NodeProto *n;

	onnxb_input(b, "trip", CEP_DTYPE_INT64, "");
	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "y", CEP_DTYPE_FLOAT32, "1");
	onnxb_output(b, "res_y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "res_scan", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Loop", "trip,cond,y", "res_y,res_scan");
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "iter", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "cond_in", CEP_DTYPE_BOOL, "");
	onnxb_input(&body, "y_in", CEP_DTYPE_FLOAT32, "1");
	onnxb_init(&body, "xs", CEP_DTYPE_FLOAT32, "5", xs);
	onnxb_init(&body, "one", CEP_DTYPE_INT64, "", &one);
	onnxb_node(&body, "Identity", "cond_in", "cond_out");
	onnxb_node(&body, "Add", "iter,one", "end");
	onnxb_attr_ints(onnxb_node(&body, "Unsqueeze", "iter", "start1"), "axes", 1, axes);
	onnxb_attr_ints(onnxb_node(&body, "Unsqueeze", "end", "end1"), "axes", 1, axes);
	onnxb_node(&body, "Slice", "xs,start1,end1", "sl");
	onnxb_node(&body, "Add", "y_in,sl", "y_out");
	onnxb_node(&body, "Identity", "y_out", "scan_out");
	onnxb_output(&body, "cond_out", CEP_DTYPE_BOOL, NULL);
	onnxb_output(&body, "y_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "scan_out", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

static int loop11_run(struct fx *f, int64_t trip, unsigned char cond, float *y, float *scan,
		      struct engine_output *out)
{
	const float y0 = -2;
	struct engine_input in[3] = {
		in_t("trip", CEP_DTYPE_INT64, 0, NULL, &trip, sizeof(trip)),
		in_t("cond", CEP_DTYPE_BOOL, 0, NULL, &cond, 1),
		in_t("y", CEP_DTYPE_FLOAT32, 1, DIMS(1), &y0, sizeof(y0)),
	};

	out[0] = out_t("res_y", y, sizeof(float));
	out[1] = out_t("res_scan", scan, 8 * sizeof(float));
	return eu_run(f->s, in, 3, out, 2);
}

Test(ctrl_loop, the_onnx_example_with_a_body_planned_per_iteration)
{
	static const float want[5] = { -1, 1, 4, 8, 13 };
	struct engine_output out[2];
	float y, scan[8];
	struct fx f;
	int i;

	fx_open(&f, loop11_model(), 0);
	cr_assert_eq(loop11_run(&f, 5, 1, &y, scan, out), 0, "%s", cep_last_error());
	cr_assert_eq(y, 13);
	cr_assert_eq(out[1].rank, 2);
	cr_assert_eq(out[1].dims[0], 5);
	cr_assert_eq(out[1].dims[1], 1);
	for (i = 0; i < 5; i++)
		cr_assert_eq(scan[i], want[i], "scan[%d]", i);
	cr_assert_eq(loop11_run(&f, 3, 1, &y, scan, out), 0, "%s", cep_last_error());
	cr_assert_eq(y, 4);
	cr_assert_eq(out[1].dims[0], 3);
	/* No iteration: y leaves as it came, the scan output is empty. */
	cr_assert_eq(loop11_run(&f, 0, 1, &y, scan, out), 0, "%s", cep_last_error());
	cr_assert_eq(y, -2);
	cr_assert_eq(out[1].dims[0], 0);
	cr_assert_eq(loop11_run(&f, -4, 1, &y, scan, out), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dims[0], 0, "a negative M runs nothing");
	cr_assert_eq(loop11_run(&f, 5, 0, &y, scan, out), 0, "%s", cep_last_error());
	cr_assert_eq(y, -2, "a false condition runs nothing");
	cr_assert_eq(out[1].dims[0], 0);
	fx_close(&f);
}

Test(ctrl_loop, a_body_planned_per_iteration_runs_at_most_256_iterations)
{
	struct engine_output out[2];
	float y, scan[8];
	struct fx f;

	fx_open(&f, loop11_model(), 0);
	cr_assert_eq(loop11_run(&f, 300, 1, &y, scan, out), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "256 at most"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "op Loop"), "%s", cep_last_error());
	fx_close(&f);
}

/* A while loop: k counts the iterations, v doubles, and the body goes on
 * while k < n (n read from the enclosing graph); no M. With scan_v, the
 * doubled values would be a scan output. */
static struct onnxb *while_model(bool scan_v, bool bad_shape)
{
	static const int64_t zero = 0, one = 1;
	static const float two = 2;
	struct onnxb *b = onnxb_new(16), body;
	Onnx__NodeProto *n;

	onnxb_input(b, "go", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "n", CEP_DTYPE_INT64, "");
	onnxb_input(b, "v", CEP_DTYPE_FLOAT32, "2");
	onnxb_init(b, "k0", CEP_DTYPE_INT64, "", &zero);
	onnxb_output(b, "k", CEP_DTYPE_INT64, NULL);
	onnxb_output(b, "vf", CEP_DTYPE_FLOAT32, NULL);
	if (scan_v)
		onnxb_output(b, "vs", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Loop", ",go,k0,v", scan_v ? "k,vf,vs" : "k,vf");
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "i", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "c", CEP_DTYPE_BOOL, "");
	onnxb_input(&body, "k_in", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "v_in", 0, NULL);
	onnxb_init(&body, "one", CEP_DTYPE_INT64, "", &one);
	onnxb_init(&body, "two", CEP_DTYPE_FLOAT32, "", &two);
	onnxb_node(&body, "Add", "k_in,one", "k_out");
	if (bad_shape)
		onnxb_attr_int(onnxb_node(&body, "Concat", "v_in,v_in", "v_out"), "axis", 0);
	else
		onnxb_node(&body, "Mul", "v_in,two", "v_out");
	onnxb_node(&body, "Less", "k_out,n", "c_out");
	onnxb_output(&body, "c_out", CEP_DTYPE_BOOL, NULL);
	onnxb_output(&body, "k_out", CEP_DTYPE_INT64, NULL);
	onnxb_output(&body, "v_out", 0, NULL);
	if (scan_v)
		onnxb_output(&body, "v_out", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

static int while_run(struct fx *f, unsigned char go, int64_t n, int64_t *k, float *v)
{
	const float v0[2] = { 1.5f, -0.25f };
	struct engine_input in[3] = {
		in_t("go", CEP_DTYPE_BOOL, 0, NULL, &go, 1),
		in_t("n", CEP_DTYPE_INT64, 0, NULL, &n, sizeof(n)),
		in_t("v", CEP_DTYPE_FLOAT32, 1, DIMS(2), v0, sizeof(v0)),
	};
	struct engine_output out[2] = { out_t("k", k, sizeof(*k)),
					out_t("vf", v, 2 * sizeof(float)) };

	return eu_run(f->s, in, 3, out, 2);
}

static void while_check(unsigned host_flags)
{
	static const int64_t ns[] = { 3, 1, 7, 0 };
	struct fx f;
	float v[2];
	int64_t k;
	size_t r;

	fx_open(&f, while_model(false, false), host_flags);
	for (r = 0; r < sizeof(ns) / sizeof(ns[0]); r++) {
		/* The first iteration runs whatever n is; then k < n decides. */
		int64_t iters = ns[r] < 1 ? 1 : ns[r];

		cr_assert_eq(while_run(&f, 1, ns[r], &k, v), 0, "%s", cep_last_error());
		cr_assert_eq(k, iters, "n %lld", (long long)ns[r]);
		cr_assert_eq(v[0], 1.5f * (float)(1 << iters));
		cr_assert_eq(v[1], -0.25f * (float)(1 << iters));
	}
	cr_assert_eq(while_run(&f, 0, 5, &k, v), 0, "%s", cep_last_error());
	cr_assert_eq(k, 0);
	cr_assert_eq(v[0], 1.5f);
	fx_close(&f);
}

Test(ctrl_loop, a_condition_the_body_computes_is_read_back_every_iteration)
{
	while_check(0);
}

Test(ctrl_loop, the_same_on_a_queued_stream)
{
	while_check(BACKEND_HOST_ASYNC);
}

Test(ctrl_loop, scan_outputs_need_a_trip_count_known_while_planning)
{
	struct fx f;
	float v[2];
	int64_t k;

	fx_open(&f, while_model(true, false), 0);
	cr_assert_eq(while_run(&f, 1, 3, &k, v), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "a row per iteration"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "body computes the condition"), "%s",
			   cep_last_error());
	fx_close(&f);
}

Test(ctrl_loop, carried_values_must_keep_their_shapes)
{
	struct fx f;
	float v[2];
	int64_t k;

	fx_open(&f, while_model(false, true), 0);
	cr_assert_eq(while_run(&f, 1, 3, &k, v), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "loop-carried value 1 is [2] going into the "
					       "body and [4] coming out"), "%s", cep_last_error());
	fx_close(&f);
}

/* No M and a condition the body passes through: a loop that never ends,
 * refused while planning when the condition is a constant true, and at
 * run time when it is an input that is true. */
static struct onnxb *endless_model(bool cond_input)
{
	struct onnxb *b = onnxb_new(13), body;
	Onnx__NodeProto *n;

	if (cond_input)
		onnxb_input(b, "go", CEP_DTYPE_BOOL, "");
	else
		onnxb_init(b, "go", CEP_DTYPE_BOOL, "", &yes);
	onnxb_input(b, "v", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "vf", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Loop", ",go,v", "vf");
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "i", CEP_DTYPE_INT64, "");
	onnxb_input(&body, "c", CEP_DTYPE_BOOL, "");
	onnxb_input(&body, "v_in", CEP_DTYPE_FLOAT32, "2");
	onnxb_node(&body, "Neg", "v_in", "v_out");
	onnxb_output(&body, "c", CEP_DTYPE_BOOL, NULL);
	onnxb_output(&body, "v_out", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

Test(ctrl_loop, a_loop_that_never_ends_is_refused)
{
	const float v0[2] = { 1, 2 };
	float v[2];
	struct engine_input in[2] = {
		in_t("v", CEP_DTYPE_FLOAT32, 1, DIMS(2), v0, sizeof(v0)),
		in_t("go", CEP_DTYPE_BOOL, 0, NULL, &yes, 1),
	};
	struct engine_output out = out_t("vf", v, sizeof(v));
	struct fx f;

	fx_open(&f, endless_model(false), 0);
	cr_assert_eq(eu_run(f.s, in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "never ends"), "%s", cep_last_error());
	fx_close(&f);
	fx_open(&f, endless_model(true), 0);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "never ends"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "op Loop"), "%s", cep_last_error());
	in[1].data = &no;
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(v[0], 1);
	cr_assert_eq(v[1], 2);
	fx_close(&f);
}

/* ------------------------------------------------------------------ Scan */

/* Scan (opset) over x [3,2] along axis 0 forward and w [2,3] along axis 1
 * backward: s += x_t + w_t; y1 = s stacked along axis 0, y2 = s * x_t
 * prepended along the last axis; s returned twice (state and y1). */
static struct onnxb *scan_model(int opset, int64_t out_axis)
{
	static const int64_t in_axes[2] = { 0, 1 }, in_dirs[2] = { 0, 1 }, out_dirs[2] = { 0, 1 };
	int64_t out_axes[2] = { 0, out_axis };
	struct onnxb *b = onnxb_new(opset), body;
	Onnx__NodeProto *n;

	onnxb_input(b, "s0", CEP_DTYPE_FLOAT32, "2");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "3,2");
	onnxb_input(b, "w", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "s", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "y1", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "y2", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Scan", "s0,x,w", "s,y1,y2");
	onnxb_attr_int(n, "num_scan_inputs", 2);
	onnxb_attr_ints(n, "scan_input_axes", 2, in_axes);
	onnxb_attr_ints(n, "scan_input_directions", 2, in_dirs);
	onnxb_attr_ints(n, "scan_output_axes", 2, out_axes);
	onnxb_attr_ints(n, "scan_output_directions", 2, out_dirs);
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "s_in", CEP_DTYPE_FLOAT32, "2");
	onnxb_input(&body, "xt", CEP_DTYPE_FLOAT32, "2");
	onnxb_input(&body, "wt", CEP_DTYPE_FLOAT32, "2");
	onnxb_node(&body, "Add", "s_in,xt", "a");
	onnxb_node(&body, "Add", "a,wt", "s_out");
	onnxb_node(&body, "Mul", "s_out,xt", "p");
	onnxb_output(&body, "s_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "s_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "p", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

static void scan_check(struct fx *f)
{
	const float s0[2] = { 0.5f, -1 }, x[6] = { 1, 2, 3, 4, 5, 6 },
		    w[6] = { 10, 20, 30, 40, 50, 60 };
	float s[2], y1[6], y2[6], ws[2], want1[6], want2[6];
	struct engine_input in[3] = {
		in_t("s0", CEP_DTYPE_FLOAT32, 1, DIMS(2), s0, sizeof(s0)),
		in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x, sizeof(x)),
		in_t("w", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), w, sizeof(w)),
	};
	struct engine_output out[3] = { out_t("s", s, sizeof(s)), out_t("y1", y1, sizeof(y1)),
					out_t("y2", y2, sizeof(y2)) };
	int t, j;

	ws[0] = s0[0];
	ws[1] = s0[1];
	for (t = 0; t < 3; t++) {
		for (j = 0; j < 2; j++) {
			/* w is scanned along axis 1, last column first. */
			ws[j] = ws[j] + x[t * 2 + j] + w[j * 3 + (2 - t)];
			want1[t * 2 + j] = ws[j];
			/* y2 [2,3]: iteration t prepends, so lands in column 2 - t. */
			want2[j * 3 + (2 - t)] = ws[j] * x[t * 2 + j];
		}
	}
	cr_assert_eq(eu_run(f->s, in, 3, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(out[2].rank, 2);
	cr_assert_eq(out[2].dims[0], 2);
	cr_assert_eq(out[2].dims[1], 3);
	for (j = 0; j < 2; j++)
		cr_assert_eq(s[j], ws[j], "s[%d]", j);
	for (j = 0; j < 6; j++) {
		cr_assert_eq(y1[j], want1[j], "y1[%d]", j);
		cr_assert_eq(y2[j], want2[j], "y2[%d]", j);
	}
}

Test(ctrl_scan, axes_and_directions_of_every_opset_from_9)
{
	static const int opsets[] = { 9, 11, 16, 19, 21, 23, 25 };
	size_t o;

	for (o = 0; o < sizeof(opsets) / sizeof(opsets[0]); o++) {
		struct fx f;

		fx_open(&f, scan_model(opsets[o], opsets[o] >= 11 ? -1 : 1), 0);
		scan_check(&f);
		fx_close(&f);
	}
}

Test(ctrl_scan, on_a_queued_stream_and_a_backend_with_graphs)
{
	struct fx f;

	fx_open(&f, scan_model(16, 1), BACKEND_HOST_ASYNC);
	scan_check(&f);
	scan_check(&f);
	fx_close(&f);
	fx_open(&f, scan_model(16, 1), BACKEND_HOST_GRAPHS);
	scan_check(&f);
	scan_check(&f);
	scan_check(&f);
	fx_close(&f);
}

Test(ctrl_scan, axes_count_from_the_end_only_from_opset_11)
{
	load_refused(scan_model(9, -1), CEP_EMODEL, "only from opset 11");
	load_refused(scan_model(11, 2), CEP_EMODEL, "scan_output_axes[1] is 2, out of range");
}

/* Scan 8: a batch axis 0 and the scan axis 1 on every input; x scanned
 * backward per batch row; sequence_lens, when given, the whole length. */
static struct onnxb *scan8_model(bool lens)
{
	static const int64_t dirs[1] = { 1 };
	struct onnxb *b = onnxb_new(8), body;
	Onnx__NodeProto *n;

	onnxb_input(b, "s0", CEP_DTYPE_FLOAT32, "2,2");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3,2");
	if (lens)
		onnxb_input(b, "lens", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "s", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Scan", lens ? "lens,s0,x" : ",s0,x", "s,y");
	onnxb_attr_int(n, "num_scan_inputs", 1);
	onnxb_attr_ints(n, "directions", 1, dirs);
	body = onnxb_subgraph(b, n, "body");
	onnxb_input(&body, "s_in", CEP_DTYPE_FLOAT32, "2");
	onnxb_input(&body, "xt", CEP_DTYPE_FLOAT32, "2");
	onnxb_node(&body, "Add", "s_in,xt", "s_out");
	onnxb_node(&body, "Mul", "s_out,xt", "p");
	onnxb_output(&body, "s_out", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(&body, "p", CEP_DTYPE_FLOAT32, NULL);
	return b;
}

Test(ctrl_scan, scan8_runs_every_batch_row)
{
	const float s0[4] = { 1, 2, -1, -2 };
	float x[12], s[4], y[12], ws[2];
	int64_t lens[2] = { 3, 3 };
	struct engine_input in[3] = {
		in_t("s0", CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), s0, sizeof(s0)),
		in_t("x", CEP_DTYPE_FLOAT32, 3, DIMS(2, 3, 2), x, sizeof(x)),
		in_t("lens", CEP_DTYPE_INT64, 1, DIMS(2), lens, sizeof(lens)),
	};
	struct engine_output out[2] = { out_t("s", s, sizeof(s)), out_t("y", y, sizeof(y)) };
	struct fx f;
	int bt, t, j;

	for (j = 0; j < 12; j++)
		x[j] = (float)(j + 1) * 0.5f;
	fx_open(&f, scan8_model(false), 0);
	cr_assert_eq(eu_run(f.s, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].rank, 3);
	for (bt = 0; bt < 2; bt++) {
		ws[0] = s0[bt * 2];
		ws[1] = s0[bt * 2 + 1];
		for (t = 0; t < 3; t++) {
			int tx = 2 - t; /* backward along the sequence */

			for (j = 0; j < 2; j++) {
				float xv = x[(bt * 3 + tx) * 2 + j];

				ws[j] += xv;
				/* Scan-8 outputs go forward. */
				cr_assert_eq(y[(bt * 3 + t) * 2 + j], ws[j] * xv, "y[%d][%d][%d]", bt, t,
					     j);
			}
		}
		cr_assert_eq(s[bt * 2], ws[0]);
		cr_assert_eq(s[bt * 2 + 1], ws[1]);
	}
	fx_close(&f);
	fx_open(&f, scan8_model(true), 0);
	cr_assert_eq(eu_run(f.s, in, 3, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(s[2], ws[0]);
	lens[1] = 2;
	cr_assert_eq(eu_run(f.s, in, 3, out, 2), CEP_EUNSUPPORTED);
	cr_assert_not_null(strstr(cep_last_error(), "sequence_lens[1] is 2 of 3"), "%s",
			   cep_last_error());
	fx_close(&f);
}

/* -------------------------------------------------------------- refusals */

/* An If whose then branch holds an If, depth levels down. */
static void if_nest(struct onnxb *g, int depth, const char *out)
{
	struct onnxb t, e;
	Onnx__NodeProto *n = onnxb_node(g, "If", "cond", out);

	t = onnxb_subgraph(g, n, "then_branch");
	e = onnxb_subgraph(g, n, "else_branch");
	if (depth > 1)
		if_nest(&t, depth - 1, "t");
	else
		onnxb_node(&t, "Neg", "x", "t");
	onnxb_output(&t, "t", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(&e, "Abs", "x", "e");
	onnxb_output(&e, "e", CEP_DTYPE_FLOAT32, NULL);
}

static struct onnxb *nested_model(int depth)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	if_nest(b, depth, "y");
	return b;
}

Test(ctrl_refusals, subgraphs_nest_sixteen_deep_at_most)
{
	const float x[2] = { -1, 2 };
	float y[2];
	struct engine_input in[2] = { in_t("cond", CEP_DTYPE_BOOL, 0, NULL, &yes, 1),
				      in_t("x", CEP_DTYPE_FLOAT32, 1, DIMS(2), x, sizeof(x)) };
	struct engine_output out = out_t("y", y, sizeof(y));
	struct fx f;

	fx_open(&f, nested_model(16), 0);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 1, "then all the way down: -x");
	fx_close(&f);
	load_refused(nested_model(17), CEP_ELIMIT, "nested more than 16 deep");
}

Test(ctrl_refusals, names_nobody_defines)
{
	struct onnxb *b = if_model(13, "2,3"), sub;
	Onnx__NodeProto *n = b->graph->node[0];

	/* A node of then_branch reads a name nobody defines. */
	sub = (struct onnxb){ .model = b->model, .graph = n->attribute[0]->g };
	onnxb_node(&sub, "Add", "t_out,nope", "t2");
	free(sub.graph->output[0]->name);
	sub.graph->output[0]->name = strdup("t2");
	load_refused(b, CEP_EMODEL, "its then_branch reads 'nope', which no enclosing graph defines");
	/* A branch returns a name nobody defines. */
	b = if_model(13, "2,3");
	n = b->graph->node[0];
	free(n->attribute[1]->g->output[0]->name);
	n->attribute[1]->g->output[0]->name = strdup("ghost");
	load_refused(b, CEP_EMODEL, "its else_branch reads 'ghost'");
}

Test(ctrl_refusals, the_structure_of_each_operator)
{
	struct onnxb *b, sub;
	Onnx__NodeProto *n;

	/* A branch takes no inputs. */
	b = if_model(13, "2,3");
	sub = (struct onnxb){ .model = b->model, .graph = b->graph->node[0]->attribute[0]->g };
	onnxb_input(&sub, "z", CEP_DTYPE_FLOAT32, "2,3");
	load_refused(b, CEP_EMODEL, "then_branch has 1 inputs");
	/* Both branches are needed. */
	b = if_model(13, "2,3");
	free(b->graph->node[0]->attribute[1]->name);
	b->graph->node[0]->attribute[1]->name = strdup("other_branch");
	load_refused(b, CEP_EMODEL, "If needs the graph attribute else_branch");
	/* A graph only where the operator takes one. */
	b = onnxb_new(13);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Neg", "x", "y");
	sub = onnxb_subgraph(b, n, "body");
	onnxb_output(&sub, "x", CEP_DTYPE_FLOAT32, NULL);
	load_refused(b, CEP_EMODEL, "attribute 'body' is a graph, which Neg does not take");
	/* A Loop's outputs: one carried value and no scan output here. */
	b = while_model(false, false);
	onnxb_output(b, "extra", CEP_DTYPE_FLOAT32, NULL);
	n = b->graph->node[0];
	n->output = realloc(n->output, sizeof(char *) * 3);
	n->output[n->n_output++] = strdup("extra");
	load_refused(b, CEP_EMODEL, "body has 3 outputs; with the node's 3 it should have 4");
	/* Scan needs num_scan_inputs, within its inputs. */
	b = scan_model(16, 1);
	b->graph->node[0]->attribute[0]->i = 4;
	load_refused(b, CEP_EMODEL, "num_scan_inputs is 4 with 3 inputs");
}

Test(ctrl_refusals, types_that_do_not_fit)
{
	struct onnxb *b;
	Onnx__NodeProto *n;

	/* If's condition is a bool. */
	b = if_model(13, "2,3");
	b->graph->input[0]->type->tensor_type->elem_type = CEP_DTYPE_FLOAT32;
	load_refused(b, CEP_EDTYPE, "the condition (input 0) is float32; it must be bool");
	/* A body input declared other than what the node gives it. */
	b = while_model(false, false);
	n = b->graph->node[0];
	n->attribute[0]->g->input[3]->type->tensor_type->has_elem_type = 1;
	n->attribute[0]->g->input[3]->type->tensor_type->elem_type = CEP_DTYPE_INT32;
	load_refused(b, CEP_EDTYPE, "input 3 'v_in' of its body is declared int32, and the node "
		     "gives it float32");
	/* A branch output declared other than what it computes. */
	b = if_model(13, "2,3");
	b->graph->node[0]->attribute[1]->g->output[0]->type->tensor_type->elem_type =
		CEP_DTYPE_INT64;
	load_refused(b, CEP_EDTYPE, "output 0 'e_out' of its else_branch is declared int64 but "
		     "computes float32");
	/* The branches' outputs differ in type. */
	b = if_model(13, "2,3");
	{
		struct onnxb e = { .model = b->model, .graph = b->graph->node[0]->attribute[1]->g };

		onnxb_attr_int(onnxb_node(&e, "Cast", "e_out", "e_int"), "to", CEP_DTYPE_INT64);
		free(e.graph->output[0]->name);
		e.graph->output[0]->name = strdup("e_int");
		e.graph->output[0]->type->tensor_type->elem_type = CEP_DTYPE_INT64;
	}
	load_refused(b, CEP_EDTYPE, "output 0 is float32 in then_branch and int64 in else_branch");
	/* A branch that reads the If's own output goes round a cycle. */
	b = if_model(13, "2,3");
	{
		struct onnxb t = { .model = b->model, .graph = b->graph->node[0]->attribute[0]->g };

		onnxb_node(&t, "Add", "t_out,y", "t2");
		free(t.graph->output[0]->name);
		t.graph->output[0]->name = strdup("t2");
	}
	load_refused(b, CEP_EMODEL, "cycle");
}

/* ------------------------------------------------------------ precisions */

/* z = x * x computes in half; the If, its subgraphs and the values they
 * read from outside (z and x) stay float32, Casts before it. */
Test(ctrl_precision, control_flow_stays_float32_in_a_half_session)
{
	struct onnxb *b = onnxb_new(13), t, e;
	struct engine_precision_stats ps;
	const float x[6] = { 0.5f, -1.25f, 2, 3.5f, -0.75f, 1 };
	float y[6];
	Onnx__NodeProto *n;
	struct fx f;
	int cond, i;

	onnxb_input(b, "cond", CEP_DTYPE_BOOL, "");
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Mul", "x,x", "z");
	n = onnxb_node(b, "If", "cond", "y");
	t = onnxb_subgraph(b, n, "then_branch");
	onnxb_node(&t, "Add", "z,x", "t_out");
	onnxb_output(&t, "t_out", CEP_DTYPE_FLOAT32, NULL);
	e = onnxb_subgraph(b, n, "else_branch");
	onnxb_node(&e, "Sub", "z,x", "e_out");
	onnxb_output(&e, "e_out", CEP_DTYPE_FLOAT32, NULL);
	fx_open_as(&f, b, 0, CEP_PRECISION_FP16);
	engine_model_precision_stats(f.m, &ps);
	cr_assert_eq(ps.half_nodes, 1, "the Mul");
	cr_assert_eq(ps.float_nodes, 1, "the If");
	cr_assert_not_null(strstr(ps.first_float, "op If"), "%s", ps.first_float);
	for (cond = 0; cond < 2; cond++) {
		unsigned char cv = (unsigned char)cond;

		cr_assert_eq(if_run(&f, &cv, x, y), 0, "%s", cep_last_error());
		for (i = 0; i < 6; i++) {
			/* Every x here and its square are exact in float16. */
			float want = cond ? x[i] * x[i] + x[i] : x[i] * x[i] - x[i];

			cr_assert_eq(y[i], want, "cond %d y[%d]", cond, i);
		}
	}
	fx_close(&f);
}

/* ------------------------------------------------------------ warm paths */

struct done {
	int calls;
};

static void on_done(void *arg)
{
	((struct done *)arg)->calls++;
}

/* A plan that reads a condition back is never submitted from a caller
 * that must not block; one that only copies (Scan) is, once warm. */
Test(ctrl_warm, plans_that_read_back_are_left_to_another_thread)
{
	const float x[6] = { 1, 2, 3, 4, 5, 6 };
	float y[6];
	struct engine_input in[2] = {
		in_t("cond", CEP_DTYPE_BOOL, 0, NULL, &yes, 1),
		in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x, sizeof(x)),
	};
	struct engine_output out = out_t("y", y, sizeof(y));
	struct done d = { 0 };
	struct engine_fence fence = { .done = on_done, .arg = &d };
	struct engine_run run;
	struct fx f;

	fx_open(&f, if_model(13, "2,3"), 0);
	cr_assert_eq(eu_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run_submit(f.s, in, 2, &out, 1, ENGINE_SUBMIT_WARM, &fence, &run),
		     ENGINE_RUN_COLD);
	cr_assert_eq(d.calls, 0);
	cr_assert_eq(eu_run_submit(f.s, in, 2, &out, 1, 0, &fence, &run), 0, "%s",
		     cep_last_error());
	cr_assert_eq(d.calls, 1);
	cr_assert_eq(engine_run_complete(f.s, &run, NULL), 0, "%s", cep_last_error());
	cr_assert_eq(y[5], 12);
	fx_close(&f);
	{
		const float s0[2] = { 0 }, sx[6] = { 1, 2, 3, 4, 5, 6 }, w[6] = { 0 };
		float s[2], y1[6], y2[6];
		struct engine_input sin[3] = {
			in_t("s0", CEP_DTYPE_FLOAT32, 1, DIMS(2), s0, sizeof(s0)),
			in_t("x", CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), sx, sizeof(sx)),
			in_t("w", CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), w, sizeof(w)),
		};
		struct engine_output sout[3] = { out_t("s", s, sizeof(s)),
						 out_t("y1", y1, sizeof(y1)),
						 out_t("y2", y2, sizeof(y2)) };

		fx_open(&f, scan_model(16, 1), 0);
		cr_assert_eq(eu_run(f.s, sin, 3, sout, 3), 0, "%s", cep_last_error());
		cr_assert_eq(eu_run_submit(f.s, sin, 3, sout, 3, ENGINE_SUBMIT_WARM, &fence, &run),
			     0, "%s", cep_last_error());
		cr_assert_eq(d.calls, 2);
		cr_assert_eq(engine_run_complete(f.s, &run, NULL), 0, "%s", cep_last_error());
		cr_assert_eq(s[0], 9);
		cr_assert_eq(s[1], 12);
		fx_close(&f);
	}
}
