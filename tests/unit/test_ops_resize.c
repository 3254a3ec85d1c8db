/*
 * test_ops_resize.c — Resize on the host backend (kernels/cpu/resize.c).
 * Expected values come from the ONNX reference implementation (the onnx
 * package's onnx.reference, run once by hand on the same inputs), except
 * opset 10, which follows onnxruntime. Covers every nearest_mode, linear
 * and cubic with their options, antialias, tf_crop_and_resize with axes
 * and extrapolation, keep_aspect_ratio_policy, integer rounding, exact
 * copies of int64 and bool, inference before the scales are known, the
 * opset of each attribute, the refusals, Upsample (Resize 10's
 * predecessor), and Pad and Resize in a model run by the engine.
 */
#include <math.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

/* Resizes x (float32, rank dims) at opset with scales or sizes (one of
 * them NULL, n values) and roi (2n values or NULL); out is the caller's
 * to free. */
static int resize(int opset, const struct op_attr *a, int n_attrs, int rank,
		  const int64_t *dims, float *x, const float *scales, const int64_t *sizes,
		  const float *roi, int n, struct op_tensor *out)
{
	int64_t nd[1] = { n }, rd[1] = { 2 * n };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, rank, dims, x),
		roi ? oh_tensor(CEP_DTYPE_FLOAT32, 1, rd, (void *)roi) : oh_tensor(0, 0, nd, NULL),
		scales ? oh_tensor(CEP_DTYPE_FLOAT32, 1, nd, (void *)scales) : oh_tensor(0, 0, nd, NULL),
		sizes ? oh_tensor(CEP_DTYPE_INT64, 1, nd, (void *)sizes) : oh_tensor(0, 0, nd, NULL),
	};

	if (opset < 11) {
		in[1] = in[2];
		return oh_run("Resize", opset, a, n_attrs, in, 2, out, 1);
	}
	return oh_run("Resize", opset, a, n_attrs, in, 4, out, 1);
}

static void expect(const struct op_tensor *out, const float *want, int n, float tol)
{
	int i;

	for (i = 0; i < n; i++)
		cr_assert_float_eq(((float *)out->data)[i], want[i], tol, "element %d: %.7g, want %.7g",
				   i, ((float *)out->data)[i], want[i]);
}

/* ----------------------------------------------------------------- nearest */

Test(ops_resize, every_nearest_mode)
{
	static const char *const modes[4] = { "round_prefer_floor", "round_prefer_ceil",
					      "floor", "ceil" };
	static const float want[4][7] = {
		{ 1, 1, 2, 2, 3, 4, 4 },
		{ 1, 1, 2, 3, 3, 4, 4 },
		{ 1, 1, 1, 2, 3, 3, 4 },
		{ 1, 2, 2, 3, 4, 4, 4 },
	};
	float x[4] = { 1, 2, 3, 4 }, scale[1] = { 1.75f };
	int64_t d[1] = { 4 };
	struct op_attr a[2] = { oh_string("mode", "nearest"), oh_string("nearest_mode", "") };
	struct op_tensor out;
	int m;

	for (m = 0; m < 4; m++) {
		a[1] = oh_string("nearest_mode", modes[m]);
		cr_assert_eq(resize(19, a, 2, 1, d, x, scale, NULL, NULL, 1, &out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[0], 7);
		expect(&out, want[m], 7, 0);
		free(out.data);
	}
}

Test(ops_resize, opset_10_rounds_like_onnxruntime)
{
	float x[5] = { 10, 11, 12, 13, 14 }, down[1] = { 0.6f }, up[1] = { 2.5f };
	int64_t d[1] = { 5 }, d2[1] = { 2 };
	static const float want_down[3] = { 10, 12, 14 };
	static const float want_up[5] = { 10, 10, 10, 11, 11 };
	struct op_tensor out;

	/* Shrinking: asymmetric coordinates 0, 1.67, 3.33 rounded up. */
	cr_assert_eq(resize(10, NULL, 0, 1, d, x, down, NULL, NULL, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	expect(&out, want_down, 3, 0);
	free(out.data);
	/* Growing: 0, 0.4, 0.8, 1.2, 1.6 rounded down. */
	cr_assert_eq(resize(10, NULL, 0, 1, d2, x, up, NULL, NULL, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 5);
	expect(&out, want_up, 5, 0);
	free(out.data);
}

Test(ops_resize, nearest_copies_int64_and_bool_exactly)
{
	int64_t big[3] = { INT64_C(1) << 60, -(INT64_C(1) << 59) + 1, 7 }, d[1] = { 3 }, sz[1] = { 6 };
	uint8_t b[3] = { 1, 0, 1 };
	struct op_tensor in[4] = { oh_tensor(CEP_DTYPE_INT64, 1, d, big), oh_tensor(0, 0, d, NULL),
				   oh_tensor(0, 0, d, NULL), oh_tensor(CEP_DTYPE_INT64, 1, d, sz) };
	struct op_attr lin = oh_string("mode", "linear");
	struct op_tensor out;
	int i;

	in[3].dims[0] = 1;
	cr_assert_eq(oh_run("Resize", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int64_t *)out.data)[i], big[i / 2]);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_BOOL, 1, d, b);
	cr_assert_eq(oh_run("Resize", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], b[i / 2]);
	free(out.data);
	cr_assert_eq(oh_infer("Resize", 13, &lin, 1, in, 4, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "linear does not interpolate bool"), "%s",
		  cep_last_error());
	/* bfloat16 came at 13. */
	in[0].dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("Resize", 12, NULL, 0, in, 4, &out, 1), CEP_EUNSUPPORTED);
}

/* ---------------------------------------------------------- linear, cubic */

Test(ops_resize, linear_align_corners_and_cubic_with_exclude_outside)
{
	float x[16];
	int64_t d[4] = { 1, 1, 4, 4 };
	float s1[4] = { 1, 1, 0.6f, 1.5f }, s2[4] = { 1, 1, 1.5f, 0.75f };
	struct op_attr lin[2] = { oh_string("mode", "linear"),
				  oh_string("coordinate_transformation_mode", "align_corners") };
	struct op_attr cub[3] = { oh_string("mode", "cubic"), oh_float("cubic_coeff_a", -0.5f),
				  oh_int("exclude_outside", 1) };
	static const float want_lin[12] = {
		0, 0.6f, 1.2f, 1.8f, 2.4f, 3, 8.571428f, 9.171428f, 9.771428f, 10.37143f,
		10.97143f, 11.57143f,
	};
	static const float want_cub[18] = {
		-0.1603125f, 1.236843f, 2.633999f, 1.749903f, 3.147059f, 4.544215f, 4.769509f,
		6.166664f, 7.56382f, 7.43618f, 8.833336f, 10.23049f, 10.45579f, 11.85294f,
		13.2501f, 12.366f, 13.76316f, 15.16031f,
	};
	struct op_tensor out;
	int i;

	for (i = 0; i < 16; i++)
		x[i] = (float)i;
	cr_assert_eq(resize(19, lin, 2, 4, d, x, s1, NULL, NULL, 4, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[2], 2);
	cr_assert_eq(out.dims[3], 6);
	expect(&out, want_lin, 12, 1e-5f);
	free(out.data);
	cr_assert_eq(resize(19, cub, 3, 4, d, x, s2, NULL, NULL, 4, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[2], 6);
	cr_assert_eq(out.dims[3], 3);
	expect(&out, want_cub, 18, 1e-4f);
	free(out.data);
}

Test(ops_resize, antialias_widens_the_kernel_when_shrinking)
{
	float x[16], x6[36];
	int64_t d[4] = { 1, 1, 4, 4 }, d6[4] = { 1, 1, 6, 6 }, sz[4] = { 1, 1, 3, 2 };
	float s6[4] = { 1, 1, 0.5f, 0.4f };
	struct op_attr lin[2] = { oh_string("mode", "linear"), oh_int("antialias", 1) };
	struct op_attr cub[2] = { oh_string("mode", "cubic"), oh_int("antialias", 1) };
	static const float want_lin[6] = { 1.715909f, 3.465909f, 6.625f, 8.375f, 11.53409f,
					   13.28409f };
	static const float want_cub[6] = { 7.469887f, 15.79133f, 61.76535f, 78.25909f, 146.9037f,
					   168.3662f };
	struct op_tensor out;
	int i;

	for (i = 0; i < 16; i++)
		x[i] = (float)i;
	for (i = 0; i < 36; i++)
		x6[i] = powf((float)i, 1.5f);
	cr_assert_eq(resize(18, lin, 2, 4, d, x, NULL, sz, NULL, 4, &out), 0, "%s",
		     cep_last_error());
	expect(&out, want_lin, 6, 1e-4f);
	free(out.data);
	cr_assert_eq(resize(19, cub, 2, 4, d6, x6, s6, NULL, NULL, 4, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[3], 2);
	expect(&out, want_cub, 6, 1e-3f);
	free(out.data);
	/* antialias does not exist before 18. */
	cr_assert_eq(resize(17, lin, 2, 4, d, x, NULL, sz, NULL, 4, &out), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'antialias' needs opset 18"), "%s", cep_last_error());
}

Test(ops_resize, tf_crop_and_resize_with_axes_and_extrapolation)
{
	float x[16], roi[4] = { 0.4f, -0.2f, 1.2f, 0.6f };
	int64_t d[4] = { 1, 1, 4, 4 }, sz[2] = { 3, 3 }, axes[2] = { 2, 3 };
	struct op_attr a[4] = { oh_string("mode", "linear"),
				oh_string("coordinate_transformation_mode", "tf_crop_and_resize"),
				oh_ints("axes", 2, axes), oh_float("extrapolation_value", -7.0f) };
	static const float want_lin[9] = { -7, 5.4f, 6.6f, -7, 10.2f, 11.4f, -7, -7, -7 };
	static const float want_near[9] = { -7, 5, 6, -7, 9, 10, -7, -7, -7 };
	struct op_tensor out;
	int i;

	for (i = 0; i < 16; i++)
		x[i] = (float)i;
	cr_assert_eq(resize(19, a, 4, 4, d, x, NULL, sz, roi, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 1);
	cr_assert_eq(out.dims[2], 3);
	expect(&out, want_lin, 9, 1e-5f);
	free(out.data);
	a[0] = oh_string("mode", "nearest");
	cr_assert_eq(resize(19, a, 4, 4, d, x, NULL, sz, roi, 2, &out), 0, "%s", cep_last_error());
	expect(&out, want_near, 9, 0);
	free(out.data);
	/* Without roi there is nothing to crop. */
	cr_assert_eq(resize(19, a, 4, 4, d, x, NULL, sz, NULL, 2, &out), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "tf_crop_and_resize needs roi"), "%s", cep_last_error());
}

Test(ops_resize, other_coordinate_modes)
{
	float x[5] = { 0, 1, 2, 3, 4 }, s[1] = { 0.7f };
	int64_t d[1] = { 5 }, one[1] = { 1 };
	struct op_attr sym[2] = { oh_string("mode", "linear"),
				  oh_string("coordinate_transformation_mode", "half_pixel_symmetric") };
	struct op_attr pt[2] = { oh_string("mode", "cubic"),
				 oh_string("coordinate_transformation_mode", "pytorch_half_pixel") };
	struct op_attr nn[1] = { oh_string("coordinate_transformation_mode", "tf_half_pixel_for_nn") };
	static const float want_sym[3] = { 0.5714285f, 2, 3.428571f };
	struct op_tensor out;

	cr_assert_eq(resize(19, sym, 2, 1, d, x, s, NULL, NULL, 1, &out), 0, "%s", cep_last_error());
	expect(&out, want_sym, 3, 1e-5f);
	free(out.data);
	cr_assert_eq(resize(18, sym, 2, 1, d, x, s, NULL, NULL, 1, &out), CEP_EMODEL);
	/* pytorch_half_pixel maps a single output to coordinate 0, as the
	 * specification says. */
	cr_assert_eq(resize(19, pt, 2, 1, d, x, NULL, one, NULL, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	free(out.data);
	/* tf_half_pixel_for_nn: (x + 0.5) / scale, at 11 and 12 only. */
	cr_assert_eq(resize(11, nn, 1, 1, d, x, s, NULL, NULL, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 1.0f);
	cr_assert_eq(((float *)out.data)[2], 4.0f);
	free(out.data);
	cr_assert_eq(resize(13, nn, 1, 1, d, x, s, NULL, NULL, 1, &out), CEP_EMODEL);
}

Test(ops_resize, integers_round_half_to_even_and_saturate)
{
	uint8_t x[5] = { 0, 255, 10, 11, 3 };
	float s[1] = { 1.6f };
	int64_t d[1] = { 5 }, nd[1] = { 1 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_UINT8, 1, d, x), oh_tensor(0, 0, d, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, nd, s) };
	struct op_attr a = oh_string("mode", "linear");
	static const uint8_t want[8] = { 0, 112, 240, 87, 10, 11, 7, 3 };
	struct op_tensor out;
	int i;

	cr_assert_eq(oh_run("Resize", 19, &a, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 8);
	for (i = 0; i < 8; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], want[i], "element %d: %d", i,
			     ((uint8_t *)out.data)[i]);
	free(out.data);
}

/* --------------------------------------------------------------- inference */

Test(ops_resize, keep_aspect_ratio_policy_sizes)
{
	int64_t d[3] = { 2, 6, 9 }, sz[2] = { 4, 4 }, axes[2] = { 1, 2 }, nd[1] = { 2 };
	struct op_tensor in[4] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, d, NULL), oh_tensor(0, 0, d, NULL),
				   oh_tensor(0, 0, d, NULL), oh_tensor(CEP_DTYPE_INT64, 1, nd, sz) };
	struct op_attr a[2] = { oh_ints("axes", 2, axes),
				oh_string("keep_aspect_ratio_policy", "not_larger") };
	struct op_tensor out;

	cr_assert_eq(oh_infer("Resize", 19, a, 2, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_eq(out.dims[2], 4);
	a[1] = oh_string("keep_aspect_ratio_policy", "not_smaller");
	cr_assert_eq(oh_infer("Resize", 19, a, 2, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 4);
	cr_assert_eq(out.dims[2], 6);
	a[1] = oh_string("keep_aspect_ratio_policy", "stretch");
	cr_assert_eq(oh_infer("Resize", 19, a, 2, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 4);
	cr_assert_eq(out.dims[2], 4);
	a[1] = oh_string("keep_aspect_ratio_policy", "fit");
	cr_assert_eq(oh_infer("Resize", 19, a, 2, in, 4, &out, 1), CEP_EMODEL);
}

Test(ops_resize, inference_before_the_scales_are_known)
{
	int64_t d[4] = { OP_DIM_SYM(0), 3, OP_DIM_SYM(1), 8 }, nd[1] = { 2 }, axes[1] = { -1 };
	int64_t n4[1] = { 4 };
	float sc[4] = { 1, 1, 1, 0.5f };
	struct op_tensor in[4] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, d, NULL), oh_tensor(0, 0, d, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, nd, NULL), oh_tensor(0, 0, d, NULL) };
	struct op_attr a = oh_ints("axes", 1, axes);
	struct op_tensor out;

	/* Scales not known: the axes they are for are unknown, the rest is
	 * the input's. */
	in[2].dims[0] = 1;
	cr_assert_eq(oh_infer("Resize", 19, &a, 1, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[3], OP_DIM_UNKNOWN);
	/* Known scales of 1 keep symbols. */
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, n4, sc);
	cr_assert_eq(oh_infer("Resize", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[3], 4);
}

Test(ops_resize, refusals)
{
	float x[4] = { 1, 2, 3, 4 }, s[1] = { 2 }, zero[1] = { 0 };
	int64_t d[1] = { 4 }, sz[1] = { 8 }, two[2] = { 2, 2 };
	struct op_attr bad = oh_string("mode", "area");
	struct op_tensor out;
	int64_t nd[1] = { 1 };
	struct op_tensor in[4] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), oh_tensor(0, 0, d, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, nd, s),
				   oh_tensor(CEP_DTYPE_INT64, 1, nd, sz) };

	cr_assert_eq(oh_infer("Resize", 19, NULL, 0, in, 4, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "scales and sizes are both given"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_infer("Resize", 19, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "one of scales and sizes is required"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_infer("Resize", 19, &bad, 1, in, 3, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "mode 'area'"), "%s", cep_last_error());
	/* cubic came at 11. */
	bad = oh_string("mode", "cubic");
	cr_assert_eq(resize(10, &bad, 1, 1, d, x, s, NULL, NULL, 1, &out), CEP_EMODEL);
	in[2].data = zero;
	cr_assert_eq(oh_infer("Resize", 19, NULL, 0, in, 3, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "scale 0 is 0"), "%s", cep_last_error());
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, two, x);
	cr_assert_eq(oh_infer("Resize", 19, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "scales has 2 values, expected 1"), "%s",
		  cep_last_error());
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, nd, sz);
	cr_assert_eq(oh_infer("Resize", 19, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
}

/* ---------------------------------------------------------------- Upsample */

Test(ops_resize, upsample_attribute_and_input_forms)
{
	float x[4] = { 1, 2, 3, 4 }, sc[2] = { 2, 1.5f }, down[2] = { 1, 0.5f };
	int64_t d[2] = { 2, 2 }, nd[1] = { 2 };
	struct op_attr attr = { .name = "scales", .type = OP_ATTR_FLOATS, .n = 2, .floats = sc };
	struct op_attr lin = oh_string("mode", "linear");
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, d, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, nd, sc) };
	/* Asymmetric coordinates rounded down: rows 0 0 1 1, columns 0 0 1. */
	static const float want[12] = { 1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4 };
	struct op_tensor out;

	cr_assert_eq(oh_run("Upsample", 7, &attr, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 3);
	expect(&out, want, 12, 0);
	free(out.data);
	cr_assert_eq(oh_run("Upsample", 9, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	expect(&out, want, 12, 0);
	free(out.data);
	/* Linear at x = 1 / 1.5 between 1 and 2. */
	cr_assert_eq(oh_run("Upsample", 9, &lin, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[1], 1 + 1 / 1.5f, 1e-6f);
	free(out.data);
	/* Upsample only grows; it is gone from opset 10. */
	in[1].data = down;
	cr_assert_eq(oh_infer("Upsample", 9, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "Upsample: scale 1 is 0.5, must be >= 1"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_infer("Upsample", 7, NULL, 0, in, 1, &out, 1), CEP_EMODEL);
	cr_assert_eq(oh_infer("Upsample", 10, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

/* ------------------------------------------------------------------ engine */

Test(ops_resize, pad_and_resize_with_constant_inputs_through_the_engine)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[2 * 3 * 10], sc[4] = { 1, 1, 1.5f, 2 };
	int64_t pads[8] = { 0, 0, 0, 1, 0, 0, 0, 1 }, xd[4] = { 1, 1, 2, 3 };
	/* Reflect pads each row to 5: [2 1 2 3 2]; nearest (asymmetric,
	 * floor) takes rows 0 0 1 and columns 0 0 1 1 2 2 3 3 4 4. */
	static const float row0[10] = { 2, 2, 1, 1, 2, 2, 3, 3, 2, 2 };
	static const float row2[10] = { 5, 5, 4, 4, 5, 5, 6, 6, 5, 5 };
	struct onnxb *b = onnxb_new(19);
	Onnx__NodeProto *n;
	engine_model *m = NULL;
	engine_session *s = NULL;
	struct backend *be = NULL;
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 4, xd, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	uint8_t *buf;
	size_t len;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,1,2,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "pads", CEP_DTYPE_INT64, "8", pads);
	onnxb_init(b, "scales", CEP_DTYPE_FLOAT32, "4", sc);
	n = onnxb_node(b, "Pad", "x,pads", "p");
	onnxb_attr_string(n, "mode", "reflect");
	n = onnxb_node(b, "Resize", "p,,scales", "y");
	onnxb_attr_string(n, "coordinate_transformation_mode", "asymmetric");
	onnxb_attr_string(n, "nearest_mode", "floor");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[2], 3);
	cr_assert_eq(out.dims[3], 10);
	for (i = 0; i < 10; i++) {
		cr_assert_eq(y[i], row0[i], "row 0 column %d: %g", i, y[i]);
		cr_assert_eq(y[10 + i], row0[i]);
		cr_assert_eq(y[20 + i], row2[i], "row 2 column %d: %g", i, y[20 + i]);
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
