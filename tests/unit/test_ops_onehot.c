/*
 * test_ops_onehot.c — OneHot of kernels/cpu/onehot.c, called the way the
 * engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the specification's formula for axis 0 and -1 written
 * out, every axis of 2-D indices against it, negative indices (counted
 * from the end from opset 11, off before), indices out of range, indices
 * and depth of every type they may have (floats truncated), values of
 * every type each opset takes, the errors (depth not positive or not a
 * scalar, values not two, an axis out of range, a depth the plan did not
 * expect), inference with an unknown depth and symbols, a model whose
 * depth is fed at run time, and half sessions keeping indices and depth
 * float32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* Runs OneHot (opset, axis) over indices, depth and values into *out. */
static int onehot(int opset, int64_t axis, struct op_tensor idx, struct op_tensor depth,
		  struct op_tensor values, struct op_tensor *out)
{
	struct op_attr a = oh_int("axis", axis);
	struct op_tensor in[3] = { idx, depth, values };

	return oh_run("OneHot", opset, &a, 1, in, 3, out, 1);
}

/* The specification's formulas: with axis 0, output[idx[i, j], i, j] is
 * on; with axis -1, output[i, j, idx[i, j]] is; all else off. */
Test(ops_onehot, the_specification_formulas)
{
	int64_t idx[2][3] = { { 0, 2, 1 }, { 3, 1, 0 } }, depth = 4;
	float values[2] = { -1.0f, 5.0f };
	struct op_tensor out;
	const float *y;
	int i, j, d;

	cr_assert_eq(onehot(11, 0, oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), idx),
			    oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
			    oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), values), &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 2);
	cr_assert_eq(out.dims[2], 3);
	y = out.data;
	for (d = 0; d < 4; d++)
		for (i = 0; i < 2; i++)
			for (j = 0; j < 3; j++)
				cr_assert_eq(y[(d * 2 + i) * 3 + j], d == idx[i][j] ? 5.0f : -1.0f);
	free(out.data);
	cr_assert_eq(onehot(11, -1, oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), idx),
			    oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
			    oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), values), &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[2], 4);
	y = out.data;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (d = 0; d < 4; d++)
				cr_assert_eq(y[(i * 3 + j) * 4 + d], d == idx[i][j] ? 5.0f : -1.0f);
	free(out.data);
}

/* Every axis from -3 to 2 of 2-D indices, against the definition. */
Test(ops_onehot, every_axis_matches_the_definition)
{
	int32_t idx[6] = { 0, 4, 2, -1, 3, 7 };
	int64_t depth = 5;
	int32_t values[2] = { 10, 20 };
	struct op_tensor out;
	int64_t a;

	for (a = -3; a <= 2; a++) {
		int axis = (int)(a < 0 ? a + 3 : a);
		int64_t c[3], e;

		cr_assert_eq(onehot(11, a, oh_tensor(CEP_DTYPE_INT32, 2, DIMS(2, 3), idx),
				    oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &depth),
				    oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), values), &out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.rank, 3);
		cr_assert_eq(out.dims[axis], 5);
		for (e = 0; e < 30; e++) {
			int64_t r = e, i, j, d, v;
			int k;

			for (k = 2; k >= 0; k--) {
				c[k] = r % out.dims[k];
				r /= out.dims[k];
			}
			d = c[axis];
			i = axis == 0 ? c[1] : c[0];
			j = axis == 2 ? c[1] : c[2];
			v = idx[i * 3 + j];
			if (v < 0)
				v += depth;
			cr_assert_eq(((int32_t *)out.data)[e], v == d ? 20 : 10, "axis %lld element %lld",
				     (long long)a, (long long)e);
		}
		free(out.data);
	}
}

/* From opset 11 an index in [-depth, 0) counts from the end; before it,
 * and outside [-depth, depth) always, the row is all off. */
Test(ops_onehot, negative_and_out_of_range_indices)
{
	int64_t idx[6] = { -1, -3, -4, 3, 100, INT64_MIN }, depth = 3;
	uint8_t values[2] = { 0, 1 };
	static const uint8_t want11[6][3] = {
		{ 0, 0, 1 }, { 1, 0, 0 }, { 0 }, { 0 }, { 0 }, { 0 },
	};
	struct op_tensor out;
	int opset, i, d;

	for (opset = 9; opset <= 11; opset += 2) {
		cr_assert_eq(onehot(opset, -1, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(6), idx),
				    oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
				    oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(2), values), &out), 0, "%s",
			     cep_last_error());
		for (i = 0; i < 6; i++)
			for (d = 0; d < 3; d++)
				cr_assert_eq(((uint8_t *)out.data)[i * 3 + d],
					     opset >= 11 ? want11[i][d] : 0, "opset %d index %d class %d",
					     opset, i, d);
		free(out.data);
	}
}

/* Indices and depth of any numeric type are cast to int64, floats
 * truncated toward zero. */
Test(ops_onehot, indices_and_depth_of_every_type)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_INT64,
					   CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	static const float iv[4] = { 0.0f, 1.75f, 2.0f, 3.5f }, fidx[3] = { -1.5f, 2.99f, -0.5f };
	int64_t values[2] = { 0, 1 };
	unsigned char idx[32], depth[8];
	struct op_tensor out;
	size_t ti, td;
	int i, d;

	for (ti = 0; ti < 6; ti++) {
		for (td = 0; td < 6; td++) {
			for (i = 0; i < 4; i++)
				cpu_store_f(idx, types[ti], i, iv[i]);
			cpu_store_f(depth, types[td], 0, 3.9f);
			cr_assert_eq(onehot(11, -1, oh_tensor(types[ti], 1, DIMS(4), idx),
					    oh_tensor(types[td], 0, NULL, depth),
					    oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), values), &out), 0,
				     "%s", cep_last_error());
			/* Depth 3.9 is 3; an index 3.5 is 3, out of range. */
			cr_assert_eq(out.dims[1], 3);
			for (i = 0; i < 4; i++)
				for (d = 0; d < 3; d++)
					cr_assert_eq(((int64_t *)out.data)[i * 3 + d],
						     i < 3 && d == (int)iv[i],
						     "indices %s depth %s at %d, %d",
						     cep_dtype_name(types[ti]), cep_dtype_name(types[td]),
						     i, d);
			free(out.data);
		}
	}
	/* -1.5 is -1 (the last class), -0.5 is 0. */
	cr_assert_eq(onehot(11, -1, oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), (void *)fidx),
			    oh_tensor(CEP_DTYPE_INT64, 0, NULL, &(int64_t){ 3 }),
			    oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), values), &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((int64_t *)out.data)[2], 1);
	cr_assert_eq(((int64_t *)out.data)[5], 1);
	cr_assert_eq(((int64_t *)out.data)[6], 1);
	free(out.data);
}

/* Values of every stored type, bfloat16 from opset 28, moved bit for bit. */
Test(ops_onehot, values_of_every_type_follow_the_opset)
{
	static const cep_dtype types[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
		CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
	};
	int64_t idx[2] = { 1, 0 }, depth = 2;
	static const int opsets[4] = { 9, 11, 27, 28 };
	unsigned char values[16];
	struct op_tensor out;
	size_t t;
	int o;

	for (t = 0; t < 8; t++) {
		size_t es = cep_dtype_size(types[t]);

		memset(values, 0x5a, es);
		memset(values + es, types[t] == CEP_DTYPE_BOOL ? 1 : 0xc3, es);
		if (types[t] == CEP_DTYPE_BOOL)
			values[0] = 0;
		for (o = 0; o < 4; o++) {
			int opset = opsets[o];
			int ret = onehot(opset, 0, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), idx),
					 oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
					 oh_tensor(types[t], 1, DIMS(2), values), &out);

			if (types[t] == CEP_DTYPE_BFLOAT16 && opset < 28) {
				cr_assert_eq(ret, CEP_EUNSUPPORTED, "bfloat16 values at opset %d", opset);
				continue;
			}
			cr_assert_eq(ret, 0, "%s at %d: %s", cep_dtype_name(types[t]), opset,
				     cep_last_error());
			cr_assert_eq(out.dtype, types[t]);
			/* output[idx[i], i]: (0, 1) and (1, 0) are on. */
			cr_assert_eq(memcmp((unsigned char *)out.data, values, es), 0);
			cr_assert_eq(memcmp((unsigned char *)out.data + es, values + es, es), 0);
			cr_assert_eq(memcmp((unsigned char *)out.data + 2 * es, values + es, es), 0);
			cr_assert_eq(memcmp((unsigned char *)out.data + 3 * es, values, es), 0);
			free(out.data);
		}
	}
}

/* ----------------------------------------------------------------- errors */

Test(ops_onehot, bad_inputs_are_refused_with_a_message)
{
	int64_t idx[2] = { 0, 1 }, depth = 0, two[2] = { 2, 2 };
	float values[3] = { 0, 1, 2 };
	uint8_t bools[2] = { 0, 1 };
	uint16_t bf = 0x4000;
	struct op_tensor out, x = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), idx);
	struct op_tensor v = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), values);

	cr_assert_eq(onehot(11, -1, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out),
		     CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "OneHot: depth is 0, it must be positive");
	depth = -4;
	cr_assert_eq(onehot(11, -1, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out),
		     CEP_EINVAL);
	depth = 2;
	cr_assert_eq(onehot(11, -1, x, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), two), v, &out),
		     CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "OneHot: depth must be a scalar or hold one element, "
			 "it has 2 in rank 1");
	cr_assert_eq(onehot(11, -1, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
			    oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), values), &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "OneHot: values must be 1-D of 2 elements (off, on)");
	cr_assert_eq(onehot(11, 2, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out),
		     CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "OneHot: axis 2 is out of range for indices of rank 1 "
			 "(from -2 to 1)");
	cr_assert_eq(onehot(11, -3, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out),
		     CEP_EMODEL);
	cr_assert_eq(onehot(11, -1, oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(2), bools),
			    oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "OneHot: indices are bool, not a numeric type");
	cr_assert_eq(onehot(28, -1, x, oh_tensor(CEP_DTYPE_BFLOAT16, 0, NULL, &bf), v, &out),
		     CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "OneHot: depth is bfloat16, not a numeric type");
	cr_assert_eq(onehot(8, -1, x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth), v, &out),
		     CEP_EUNSUPPORTED);
}

/* A depth other than the plan's, read when the kernel runs, fails it. */
Test(ops_onehot, the_kernel_checks_depth_against_the_plan)
{
	const struct op_node node = { "t", "OneHot", "", 11, 0, NULL };
	int64_t idx[2] = { 0, 1 }, depth = 4;
	float values[2] = { 0, 1 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), idx),
				   oh_tensor(CEP_DTYPE_INT64, 0, NULL, &depth),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), values) };
	struct op_tensor out = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), NULL);
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "OneHot", 11, &s), 0);
	cr_assert_eq(op_kernel_find(s, 11, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 3, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "OneHot: depth is 4, the plan expected 3");
}

Test(ops_onehot, inference_with_an_unknown_depth_and_symbols)
{
	struct op_attr a = oh_int("axis", 1);
	int64_t depth = 7;
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_INT64, 2, DIMS(OP_DIM_SYM(0), 3), NULL),
		oh_tensor(CEP_DTYPE_INT64, 0, NULL, NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(2), NULL),
	}, out;

	cr_assert_eq(oh_infer("OneHot", 11, &a, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[2], 3);
	in[1].data = &depth;
	cr_assert_eq(oh_infer("OneHot", 11, &a, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 7);
	in[0].rank = -1;
	cr_assert_eq(oh_infer("OneHot", 11, &a, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, -1);
}

/* ----------------------------------------------------------------- engine */

/* depth a graph input, fed at run time: the planner reads it for the
 * shape, and each depth gets its plan. */
Test(ops_onehot, engine_runs_a_depth_fed_at_run_time)
{
	struct onnxb *b = onnxb_new(11);
	int64_t dims[1] = { 3 }, idx[3] = { 2, -1, 0 }, depth = 3, vdims[1] = { 2 };
	float values[2] = { 0.0f, 1.0f }, y[3 * 5];
	struct engine_input in[3] = {
		{ "idx", CEP_DTYPE_INT64, 1, dims, idx, sizeof(idx) },
		{ "depth", CEP_DTYPE_INT64, 0, NULL, &depth, sizeof(depth) },
		{ "values", CEP_DTYPE_FLOAT32, 1, vdims, values, sizeof(values) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s = NULL;
	size_t len;
	uint8_t *buf;

	onnxb_input(b, "idx", CEP_DTYPE_INT64, "3");
	onnxb_input(b, "depth", CEP_DTYPE_INT64, "");
	onnxb_input(b, "values", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "OneHot", "idx,depth,values", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_eq(y[2], 1.0f);
	cr_assert_eq(y[5], 1.0f);
	cr_assert_eq(y[6], 1.0f);
	depth = 5;
	cr_assert_eq(eu_run(s, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 5);
	cr_assert_eq(y[2], 1.0f);
	cr_assert_eq(y[9], 1.0f); /* -1 is class 4 now */
	cr_assert_eq(y[10], 1.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* In a half session the values go half (bfloat16 from opset 28), but
 * float32 indices and depth stay float32: rounding them would move a
 * class (3001 is not a float16) or change the depth, and so the shape. */
static void onehot_in_half(cep_precision p, int opset)
{
	struct engine_model_options mo = { .precision = p };
	struct engine_session_options so = { .precision = p };
	struct onnxb *b = onnxb_new(opset);
	int64_t dims[1] = { 2 };
	float idx[2] = { 3001.0f, 1.0f }, depth = 4001.0f;
	static float y[2 * 4001];
	struct engine_input in[2] = {
		{ "idx", CEP_DTYPE_FLOAT32, 1, dims, idx, sizeof(idx) },
		{ "depth", CEP_DTYPE_FLOAT32, 0, NULL, &depth, sizeof(depth) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	float values[2] = { 0.0f, 1.0f };
	struct backend *be;
	engine_model *m;
	engine_session *s = NULL;
	size_t len;
	uint8_t *buf;
	int i;

	onnxb_input(b, "idx", CEP_DTYPE_FLOAT32, "2");
	onnxb_input(b, "depth", CEP_DTYPE_FLOAT32, "");
	onnxb_init(b, "values", CEP_DTYPE_FLOAT32, "2", values);
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "OneHot", "idx,depth,values", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 4001);
	for (i = 0; i < 2 * 4001; i++)
		cr_assert_eq(y[i], i == 3001 || i == 4001 + 1 ? 1.0f : 0.0f, "element %d", i);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(ops_onehot, half_sessions_keep_float_indices_and_depth_exact)
{
	onehot_in_half(CEP_PRECISION_FP16, 11);
	onehot_in_half(CEP_PRECISION_BF16, 11);
	onehot_in_half(CEP_PRECISION_BF16, 28);
}
