/*
 * test_optimize.c — constant folding: the Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape chain that exporters emit disappears at load when the
 * dims are fixed and at plan time when they are symbolic, leaving one
 * kernel, with the right result either way; Identity and dead nodes go;
 * a fold that fails names its node.
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

/* y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), Constant(-1))):
 * x [d0, 3, 4] -> y [d0, 12]. */
static engine_model *chain_load(const char *x_shape)
{
	struct onnxb *b = onnxb_new(13);
	int64_t zero = 0, axes[1] = { 0 }, minus1[1] = { -1 };
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, x_shape);
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "", &zero);
	onnxb_init(b, "axes", CEP_DTYPE_INT64, "1", axes);
	onnxb_node(b, "Shape", "x", "s");
	n = onnxb_node(b, "Gather", "s,zero", "d0");
	onnxb_attr_int(n, "axis", 0);
	onnxb_node(b, "Unsqueeze", "d0,axes", "d0u");
	n = onnxb_node(b, "Constant", "", "m1");
	onnxb_attr_tensor(n, "value", onnxb_tensor("m1", CEP_DTYPE_INT64, "1", minus1));
	n = onnxb_node(b, "Concat", "d0u,m1", "target");
	onnxb_attr_int(n, "axis", 0);
	onnxb_node(b, "Reshape", "x,target", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Runs the chain on d0 x 3 x 4 counting floats; checks y. */
static void chain_run(engine_session *s, int d0)
{
	float x[5 * 12], y[5 * 12];
	int64_t dims[3] = { d0, 3, 4 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 3, dims, x,
				   sizeof(float) * (size_t)d0 * 12 };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	int i;

	for (i = 0; i < d0 * 12; i++)
		x[i] = (float)i;
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], d0);
	cr_assert_eq(out.dims[1], 12);
	for (i = 0; i < d0 * 12; i++)
		cr_assert_eq(y[i], (float)i);
}

Test(fold, shape_chain_folds_at_load_when_dims_are_fixed)
{
	engine_model *m = chain_load("2,3,4");
	const struct engine_tensor_info *y = engine_model_output(m, 0);
	struct engine_stats st;
	struct backend *be;
	engine_session *s;

	cr_assert_eq(engine_model_node_count(m), 1, "only the Reshape is left");
	cr_assert_eq(y->rank, 2);
	cr_assert_eq(y->dims[0], 2);
	cr_assert_eq(y->dims[1], 12);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	chain_run(s, 2);
	engine_session_stats(s, &st);
	cr_assert_eq(st.last_steps, 1);
	cr_assert_eq(st.last_folded, 0);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(fold, shape_chain_folds_at_plan_time_when_dims_are_symbolic)
{
	engine_model *m = chain_load("batch,3,4");
	const struct engine_tensor_info *y = engine_model_output(m, 0);
	struct engine_stats st;
	struct backend *be;
	engine_session *s;

	/* The Constant folds at load; Shape needs the batch size. */
	cr_assert_eq(engine_model_node_count(m), 5);
	cr_assert_eq(y->rank, 2);
	cr_assert_eq(y->dims[1], -1, "not known before the batch is");
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	chain_run(s, 2);
	engine_session_stats(s, &st);
	cr_assert_eq(st.last_steps, 1, "Shape, Gather, Unsqueeze and Concat ran while planning");
	cr_assert_eq(st.last_folded, 4);
	chain_run(s, 5);
	chain_run(s, 2);
	engine_session_stats(s, &st);
	cr_assert_eq(st.plans_built, 2);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(fold, identity_and_dead_nodes_go)
{
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Identity", "x", "i1");
	onnxb_node(b, "Relu", "i1", "r");
	onnxb_node(b, "Identity", "r", "y");
	onnxb_node(b, "Sigmoid", "r", "unused1");
	onnxb_node(b, "Tanh", "unused1", "unused2");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(engine_model_node_count(m), 1, "just the Relu, writing y");
	engine_model_unref(m);
}

Test(fold, constant_arithmetic_folds)
{
	struct onnxb *b = onnxb_new(13);
	float a[3] = { 1, 2, 3 }, c[3] = { 10, 20, 30 }, x[3] = { 0.5f, 0.5f, 0.5f }, y[3];
	int64_t dims[1] = { 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	engine_model *m = NULL;
	engine_session *s;
	struct backend *be;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "a", CEP_DTYPE_FLOAT32, "3", a);
	onnxb_init(b, "c", CEP_DTYPE_FLOAT32, "3", c);
	onnxb_node(b, "Mul", "a,c", "ac");     /* folds */
	onnxb_node(b, "Exp", "ac", "e");       /* folds */
	onnxb_node(b, "Div", "a,e", "k");      /* folds */
	onnxb_node(b, "Add", "x,a", "y0");     /* runs */
	onnxb_node(b, "Mul", "y0,k", "y");     /* runs */
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(engine_model_node_count(m), 2);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(y[0], 1.5f * (1.0f / expf(10.0f)), 1e-9f);
	cr_assert_float_eq(y[1], 2.5f * (2.0f / expf(40.0f)), 1e-20f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(fold, a_failing_fold_names_the_node)
{
	struct onnxb *b = onnxb_new(13);
	float data[3] = { 1, 2, 3 };
	int64_t idx = 7;
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "d", CEP_DTYPE_FLOAT32, "3", data);
	onnxb_init(b, "i", CEP_DTYPE_INT64, "", &idx);
	onnxb_node(b, "Gather", "d,i", "g");
	onnxb_node(b, "Add", "x,g", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "node 0 'g' (op Gather, domain ai.onnx, opset 13): "
					   "Gather: index 7 is out of range for dimension 0 of size 3");
	free(buf);
}
