/*
 * test_ops_center_crop_pad.c — CenterCropPad of
 * kernels/cpu/center_crop_pad.c, called the way the engine calls it
 * (schema inference, then the host kernel through exec_host_eval): crops
 * and pads worked out by hand (odd and even differences: the extra
 * element goes last), crop on one axis and pad on another, the axes
 * attribute with negative entries, every stored type, inference without
 * the shape's value, a shape other than the plan's, the refusals, and a
 * model whose target shape is fed at run time.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

static int ccp(struct op_tensor x, const int64_t *shape, int n, const struct op_attr *axes,
	       struct op_tensor *out)
{
	struct op_tensor in[2] = { x, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(n), (void *)shape) };

	return oh_run("CenterCropPad", 18, axes, axes ? 1 : 0, in, 2, out, 1);
}

/* [1 .. 5] to 3 (crop from 1), 2 (from 1: floor of 3 / 2), 8 (one zero
 * first, two last), 5 (as it is). */
Test(ops_center_crop_pad, one_axis_by_hand)
{
	float x[5] = { 1, 2, 3, 4, 5 };
	static const int64_t sizes[4] = { 3, 2, 8, 5 };
	static const float want[4][8] = { { 2, 3, 4 }, { 2, 3 }, { 0, 1, 2, 3, 4, 5, 0, 0 },
					  { 1, 2, 3, 4, 5 } };
	struct op_tensor out;
	int s, i;

	for (s = 0; s < 4; s++) {
		cr_assert_eq(ccp(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(5), x), &sizes[s], 1, NULL,
				 &out), 0, "%s", cep_last_error());
		cr_assert_eq(out.dims[0], sizes[s]);
		for (i = 0; i < sizes[s]; i++)
			cr_assert_eq(((float *)out.data)[i], want[s][i], "size %lld element %d",
				     (long long)sizes[s], i);
		free(out.data);
	}
}

/* A 3 x 4 matrix (10 r + c) to 5 x 2: rows padded (one zero row each
 * side), columns cropped from 1. */
Test(ops_center_crop_pad, crop_one_axis_pad_another)
{
	int32_t x[12];
	static const int64_t shape[2] = { 5, 2 };
	static const int32_t want[10] = { 0, 0, 1, 2, 11, 12, 21, 22, 0, 0 };
	struct op_tensor out;
	int i;

	for (i = 0; i < 12; i++)
		x[i] = 10 * (i / 4) + i % 4;
	cr_assert_eq(ccp(oh_tensor(CEP_DTYPE_INT32, 2, DIMS(3, 4), x), shape, 2, NULL, &out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 5);
	cr_assert_eq(out.dims[1], 2);
	for (i = 0; i < 10; i++)
		cr_assert_eq(((int32_t *)out.data)[i], want[i], "element %d", i);
	free(out.data);
}

/* axes [-1] of a 2 x 4 x 3 input (test_center_crop_pad_crop_negative_axes_hwc
 * style): only the last dim changes, to 1, element 1 of each row. */
Test(ops_center_crop_pad, axes_pick_the_dimensions)
{
	uint8_t x[24];
	static const int64_t one[1] = { 1 }, two[2] = { 2, 1 };
	static const int64_t ax_neg[1] = { -1 }, ax_two[2] = { 1, 0 };
	struct op_attr neg = oh_ints("axes", 1, ax_neg), pair = oh_ints("axes", 2, ax_two);
	struct op_tensor out;
	int i;

	for (i = 0; i < 24; i++)
		x[i] = (uint8_t)i;
	cr_assert_eq(ccp(oh_tensor(CEP_DTYPE_UINT8, 3, DIMS(2, 4, 3), x), one, 1, &neg, &out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 4);
	cr_assert_eq(out.dims[2], 1);
	for (i = 0; i < 8; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], 3 * i + 1);
	free(out.data);
	/* axes [1, 0] with shape [2, 1]: dim 1 to 2 (from 1), dim 0 to 1 (from 0). */
	cr_assert_eq(ccp(oh_tensor(CEP_DTYPE_UINT8, 3, DIMS(2, 4, 3), x), two, 2, &pair, &out),
		     0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[1], 2);
	cr_assert_eq(out.dims[2], 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], 3 + i);
	free(out.data);
}

Test(ops_center_crop_pad, every_type_moves_as_it_is)
{
	static const cep_dtype types[8] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					    CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					    CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL };
	static const int64_t shape[1] = { 4 };
	int32_t shape32[1] = { 4 };
	unsigned char buf[3 * 8];
	struct op_tensor out, in[2];
	int t, i;

	for (t = 0; t < 8; t++) {
		for (i = 0; i < 3; i++)
			cpu_store_i(buf, types[t], i, types[t] == CEP_DTYPE_BOOL ? 1 : i + 1);
		cr_assert_eq(ccp(oh_tensor(types[t], 1, DIMS(3), buf), shape, 1, NULL, &out), 0,
			     "%s: %s", cep_dtype_name(types[t]), cep_last_error());
		/* 3 to 4: nothing first, one zero last. */
		for (i = 0; i < 3; i++)
			cr_assert_eq(cpu_load_i(out.data, types[t], i),
				     types[t] == CEP_DTYPE_BOOL ? 1 : i + 1, "%s %d",
				     cep_dtype_name(types[t]), i);
		cr_assert_eq(cpu_load_i(out.data, types[t], 3), 0);
		free(out.data);
	}
	/* The shape may be int32 too. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), buf);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(1), shape32);
	cr_assert_eq(oh_run("CenterCropPad", 18, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 4);
	free(out.data);
}

Test(ops_center_crop_pad, refusals_name_what_is_wrong)
{
	float x[6] = { 0 }, f[1] = { 2 };
	static const int64_t one[1] = { 1 }, neg[2] = { 2, -1 }, two[2] = { 1, 1 };
	static const int64_t ax_dup[2] = { 0, -2 };
	struct op_attr dup = oh_ints("axes", 2, ax_dup);
	struct op_tensor xt = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x), out, in[2];

	cr_assert_eq(ccp(xt, one, 1, NULL, &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "CenterCropPad: shape has 1 entries for 2 axes");
	cr_assert_eq(ccp(xt, neg, 2, NULL, &out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "CenterCropPad: shape entry 1 is -1, it must not be "
			 "negative");
	cr_assert_eq(ccp(xt, two, 2, &dup, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "CenterCropPad: axis -2 is given twice");
	in[0] = xt;
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), f);
	cr_assert_eq(oh_run("CenterCropPad", 18, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_eq(oh_run("CenterCropPad", 17, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

/* Without the shape's value only the axes' extents are unknown; the
 * kernel checks the value against the plan. */
Test(ops_center_crop_pad, inference_and_the_plans_shape)
{
	const struct op_node node = { "t", "CenterCropPad", "", 18, 0, NULL };
	float x[6] = { 0 };
	static const int64_t ax[1] = { 1 }, shape[1] = { 2 };
	struct op_attr axes = oh_ints("axes", 1, ax);
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), NULL) };
	struct op_tensor out;
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(oh_infer("CenterCropPad", 18, &axes, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], OP_DIM_UNKNOWN);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x);
	in[1].data = (void *)shape;
	out = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), NULL);
	cr_assert_eq(op_schema_find("", "CenterCropPad", 18, &s), 0);
	cr_assert_eq(op_kernel_find(s, 18, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "CenterCropPad: shape entry 0 is 2, the plan expected 3");
}

/* The target shape fed at run time: the planner reads it, and each shape
 * gets its plan. */
Test(ops_center_crop_pad, engine_plans_by_the_target_shape)
{
	struct onnxb *b = onnxb_new(18);
	int64_t xd[2] = { 4, 4 }, sd[1] = { 2 }, shape[2] = { 2, 2 };
	float x[16], y[64];
	struct engine_input in[2] = { { "x", CEP_DTYPE_FLOAT32, 2, xd, x, sizeof(x) },
				      { "s", CEP_DTYPE_INT64, 1, sd, shape, sizeof(shape) } };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	size_t len;
	uint8_t *buf;
	int i;

	for (i = 0; i < 16; i++)
		x[i] = (float)i;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,4");
	onnxb_input(b, "s", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "CenterCropPad", "x,s", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(y[0], 5.0f);
	cr_assert_eq(y[3], 10.0f);
	shape[0] = 6;
	shape[1] = 4;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 6);
	cr_assert_eq(y[0], 0.0f);
	cr_assert_eq(y[4], 0.0f);
	cr_assert_eq(y[5], 1.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
