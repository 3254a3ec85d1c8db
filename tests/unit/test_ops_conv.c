/*
 * test_ops_conv.c — Conv on the host backend (kernels/cpu/conv.c): the
 * tiled im2col product checked against a direct loop nest written here,
 * over 1-D, 2-D and 3-D windows, groups and depthwise, strides, dilations,
 * asymmetric pads, every auto_pad, bias, shapes that leave partial tiles
 * and several column chunks, half types, empty batches; inference with
 * symbolic dims; the refusals with their messages; and a small ResNet
 * block run end to end through the engine.
 */
#include <math.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

/* A convolution problem: shapes and attributes, spatial dims padded to 3
 * with leading unit ones by conv_case_norm(). */
struct conv_case {
	int n;                       /* spatial dims */
	int64_t batch, c, m, group;
	int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
	bool bias;
};

static int64_t case_out(const struct conv_case *cc, int i)
{
	return (cc->in[i] + cc->pb[i] + cc->pe[i] - ((cc->k[i] - 1) * cc->d[i] + 1)) / cc->s[i] + 1;
}

/* The direct definition: every output a sum over its window, in double. */
static void conv_ref(const struct conv_case *cc, const float *x, const float *w,
		     const float *b, float *y)
{
	int64_t in[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 }, s[3] = { 1, 1, 1 };
	int64_t d[3] = { 1, 1, 1 }, pb[3] = { 0 }, out[3] = { 1, 1, 1 };
	int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
	int off = 3 - cc->n, i;
	int64_t n, m, oz, oy, ox, ci, a, bb, e;

	for (i = 0; i < cc->n; i++) {
		in[off + i] = cc->in[i];
		k[off + i] = cc->k[i];
		s[off + i] = cc->s[i];
		d[off + i] = cc->d[i];
		pb[off + i] = cc->pb[i];
		out[off + i] = case_out(cc, i);
	}
	for (n = 0; n < cc->batch; n++)
	for (m = 0; m < cc->m; m++)
	for (oz = 0; oz < out[0]; oz++)
	for (oy = 0; oy < out[1]; oy++)
	for (ox = 0; ox < out[2]; ox++) {
		double acc = b ? b[m] : 0.0;
		int64_t g = m / mg;

		for (ci = 0; ci < cg; ci++)
		for (a = 0; a < k[0]; a++)
		for (bb = 0; bb < k[1]; bb++)
		for (e = 0; e < k[2]; e++) {
			int64_t iz = oz * s[0] - pb[0] + a * d[0];
			int64_t iy = oy * s[1] - pb[1] + bb * d[1];
			int64_t ix = ox * s[2] - pb[2] + e * d[2];

			if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2])
				continue;
			acc += (double)x[(((n * cc->c + g * cg + ci) * in[0] + iz) * in[1] + iy) * in[2] + ix] *
			       w[(((m * cg + ci) * k[0] + a) * k[1] + bb) * k[2] + e];
		}
		y[(((n * cc->m + m) * out[0] + oz) * out[1] + oy) * out[2] + ox] = (float)acc;
	}
}

/* Runs cc through the registry at opset 22 and compares with conv_ref;
 * returns the largest absolute difference. */
static float conv_check(const struct conv_case *cc, unsigned seed)
{
	int64_t xd[5], wd[5], bd[1] = { cc->m }, pads[6], kern[3], strides[3], dil[3];
	int64_t nx = cc->batch * cc->c, nw = cc->m * (cc->c / cc->group), ny = cc->batch * cc->m;
	struct op_attr attrs[5];
	struct op_tensor in[3], out;
	float *x, *w, *b, *want, worst = 0.0f;
	int i;

	xd[0] = cc->batch;
	xd[1] = cc->c;
	wd[0] = cc->m;
	wd[1] = cc->c / cc->group;
	for (i = 0; i < cc->n; i++) {
		xd[2 + i] = cc->in[i];
		wd[2 + i] = kern[i] = cc->k[i];
		strides[i] = cc->s[i];
		dil[i] = cc->d[i];
		pads[i] = cc->pb[i];
		pads[cc->n + i] = cc->pe[i];
		nx *= cc->in[i];
		nw *= cc->k[i];
		ny *= case_out(cc, i);
	}
	x = malloc(sizeof(float) * (size_t)(nx + 1));
	w = malloc(sizeof(float) * (size_t)(nw + 1));
	b = malloc(sizeof(float) * (size_t)(cc->m + 1));
	want = malloc(sizeof(float) * (size_t)(ny + 1));
	for (i = 0; i < nx; i++)
		x[i] = oh_rand(&seed);
	for (i = 0; i < nw; i++)
		w[i] = oh_rand(&seed);
	for (i = 0; i < cc->m; i++)
		b[i] = oh_rand(&seed);
	attrs[0] = oh_int("group", cc->group);
	attrs[1] = oh_ints("kernel_shape", cc->n, kern);
	attrs[2] = oh_ints("strides", cc->n, strides);
	attrs[3] = oh_ints("dilations", cc->n, dil);
	attrs[4] = oh_ints("pads", 2 * cc->n, pads);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, cc->n + 2, xd, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, cc->n + 2, wd, w);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, bd, b);
	cr_assert_eq(oh_run("Conv", 22, attrs, 5, in, cc->bias ? 3 : 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, cc->n + 2);
	cr_assert_eq(out.dims[0], cc->batch);
	cr_assert_eq(out.dims[1], cc->m);
	for (i = 0; i < cc->n; i++)
		cr_assert_eq(out.dims[2 + i], case_out(cc, i), "spatial dim %d", i);
	conv_ref(cc, x, w, cc->bias ? b : NULL, want);
	for (i = 0; i < ny; i++) {
		float diff = fabsf(((float *)out.data)[i] - want[i]);

		if (diff > worst)
			worst = diff;
	}
	free(out.data);
	free(x);
	free(w);
	free(b);
	free(want);
	return worst;
}

/* -------------------------------------------------------------- arithmetic */

Test(ops_conv, matches_the_onnx_example_with_and_without_pads)
{
	float x[25], w[9], *y;
	int64_t xd[4] = { 1, 1, 5, 5 }, wd[4] = { 1, 1, 3, 3 };
	int64_t pads1[4] = { 1, 1, 1, 1 }, kern[2] = { 3, 3 };
	struct op_attr attrs[2] = { oh_ints("kernel_shape", 2, kern), oh_ints("pads", 4, pads1) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, w) };
	static const float padded[25] = {
		12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
		93, 144, 153, 162, 111, 72, 111, 117, 123, 84,
	};
	static const float valid[9] = { 54, 63, 72, 99, 108, 117, 144, 153, 162 };
	struct op_tensor out;
	int i;

	for (i = 0; i < 25; i++)
		x[i] = (float)i;
	for (i = 0; i < 9; i++)
		w[i] = 1.0f;
	cr_assert_eq(oh_run("Conv", 11, attrs, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	y = out.data;
	cr_assert_eq(out.dims[2], 5);
	for (i = 0; i < 25; i++)
		cr_assert_eq(y[i], padded[i], "element %d: %g", i, y[i]);
	free(out.data);
	cr_assert_eq(oh_run("Conv", 11, attrs, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	y = out.data;
	cr_assert_eq(out.dims[2], 3);
	cr_assert_eq(out.dims[3], 3);
	for (i = 0; i < 9; i++)
		cr_assert_eq(y[i], valid[i]);
	free(out.data);
}

Test(ops_conv, two_d_with_strides_dilations_asymmetric_pads_and_bias)
{
	struct conv_case cc = {
		.n = 2, .batch = 2, .c = 5, .m = 13, .group = 1,
		.in = { 11, 9 }, .k = { 3, 2 }, .s = { 2, 1 }, .d = { 1, 3 },
		.pb = { 1, 0 }, .pe = { 0, 2 }, .bias = true,
	};

	cr_assert_leq(conv_check(&cc, 1), 1e-4f);
}

Test(ops_conv, one_d_and_three_d)
{
	struct conv_case c1 = {
		.n = 1, .batch = 1, .c = 3, .m = 7, .group = 1,
		.in = { 37 }, .k = { 5 }, .s = { 3 }, .d = { 2 }, .pb = { 4 }, .pe = { 1 },
		.bias = true,
	};
	struct conv_case c3 = {
		.n = 3, .batch = 2, .c = 4, .m = 6, .group = 2,
		.in = { 5, 6, 7 }, .k = { 2, 3, 3 }, .s = { 1, 2, 1 }, .d = { 2, 1, 1 },
		.pb = { 1, 1, 0 }, .pe = { 0, 1, 2 }, .bias = false,
	};

	cr_assert_leq(conv_check(&c1, 2), 1e-4f);
	cr_assert_leq(conv_check(&c3, 3), 1e-4f);
}

Test(ops_conv, groups_and_depthwise)
{
	struct conv_case grouped = {
		.n = 2, .batch = 1, .c = 12, .m = 24, .group = 3,
		.in = { 10, 10 }, .k = { 3, 3 }, .s = { 1, 1 }, .d = { 1, 1 },
		.pb = { 1, 1 }, .pe = { 1, 1 }, .bias = true,
	};
	struct conv_case depthwise = {
		.n = 2, .batch = 2, .c = 16, .m = 16, .group = 16,
		.in = { 9, 12 }, .k = { 3, 3 }, .s = { 2, 2 }, .d = { 1, 1 },
		.pb = { 1, 1 }, .pe = { 1, 1 }, .bias = true,
	};
	/* Two outputs per group: the row-at-a-time path with mg > 1. */
	struct conv_case multiplier = {
		.n = 2, .batch = 1, .c = 4, .m = 8, .group = 4,
		.in = { 7, 7 }, .k = { 3, 3 }, .s = { 1, 1 }, .d = { 2, 2 },
		.pb = { 2, 2 }, .pe = { 2, 2 }, .bias = false,
	};

	cr_assert_leq(conv_check(&grouped, 4), 1e-4f);
	cr_assert_leq(conv_check(&depthwise, 5), 1e-4f);
	cr_assert_leq(conv_check(&multiplier, 6), 1e-4f);
}

Test(ops_conv, large_k_splits_the_columns_into_chunks)
{
	/* K = 64 * 25 = 1600 rows: a chunk holds 80 of the 576 columns. */
	struct conv_case cc = {
		.n = 2, .batch = 1, .c = 64, .m = 20, .group = 1,
		.in = { 24, 24 }, .k = { 5, 5 }, .s = { 1, 1 }, .d = { 1, 1 },
		.pb = { 2, 2 }, .pe = { 2, 2 }, .bias = true,
	};

	cr_assert_leq(conv_check(&cc, 7), 2e-4f);
}

Test(ops_conv, auto_pad_modes)
{
	float x[1 * 2 * 7 * 6], w[3 * 2 * 3 * 2];
	int64_t xd[4] = { 1, 2, 7, 6 }, wd[4] = { 3, 2, 3, 2 }, st[2] = { 2, 2 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, w) };
	struct op_tensor upper, lower, valid;
	struct op_attr a[2] = { oh_ints("strides", 2, st), oh_string("auto_pad", "SAME_UPPER") };
	struct conv_case cc = {
		.n = 2, .batch = 1, .c = 2, .m = 3, .group = 1,
		.in = { 7, 6 }, .k = { 3, 2 }, .s = { 2, 2 }, .d = { 1, 1 },
	};
	float want[3 * 4 * 3];
	unsigned seed = 9;
	int i;

	for (i = 0; i < (int)(sizeof(x) / sizeof(x[0])); i++)
		x[i] = oh_rand(&seed);
	for (i = 0; i < (int)(sizeof(w) / sizeof(w[0])); i++)
		w[i] = oh_rand(&seed);
	cr_assert_eq(oh_run("Conv", 11, a, 2, in, 2, &upper, 1), 0, "%s", cep_last_error());
	a[1] = oh_string("auto_pad", "SAME_LOWER");
	cr_assert_eq(oh_run("Conv", 11, a, 2, in, 2, &lower, 1), 0, "%s", cep_last_error());
	a[1] = oh_string("auto_pad", "VALID");
	cr_assert_eq(oh_run("Conv", 11, a, 2, in, 2, &valid, 1), 0, "%s", cep_last_error());
	/* SAME: ceil(7 / 2) = 4 rows, ceil(6 / 2) = 3 columns; total pads 2
	 * and 0: UPPER puts 1 + 1, LOWER likewise (even). VALID: 3 x 3. */
	cr_assert_eq(upper.dims[2], 4);
	cr_assert_eq(upper.dims[3], 3);
	cr_assert_eq(valid.dims[2], 3);
	cr_assert_eq(valid.dims[3], 3);
	cc.pb[0] = cc.pe[0] = 1;
	conv_ref(&cc, x, w, NULL, want);
	for (i = 0; i < 36; i++) {
		cr_assert_float_eq(((float *)upper.data)[i], want[i], 1e-5f);
		cr_assert_float_eq(((float *)lower.data)[i], want[i], 1e-5f);
	}
	free(upper.data);
	free(lower.data);
	free(valid.data);

	/* An odd total: 5 wide, kernel 2, stride 1 needs one pad, after the
	 * row for SAME_UPPER and before it for SAME_LOWER. */
	{
		float r[5] = { 1, 2, 3, 4, 5 }, k2[2] = { 1, 10 };
		int64_t rd[3] = { 1, 1, 5 }, kd[3] = { 1, 1, 2 };
		struct op_tensor in1[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, rd, r),
					    oh_tensor(CEP_DTYPE_FLOAT32, 3, kd, k2) };
		struct op_attr up = oh_string("auto_pad", "SAME_UPPER");
		struct op_attr lo = oh_string("auto_pad", "SAME_LOWER");
		struct op_tensor o;

		cr_assert_eq(oh_run("Conv", 11, &up, 1, in1, 2, &o, 1), 0, "%s", cep_last_error());
		cr_assert_eq(((float *)o.data)[0], 1 + 20);
		cr_assert_eq(((float *)o.data)[4], 5);
		free(o.data);
		cr_assert_eq(oh_run("Conv", 11, &lo, 1, in1, 2, &o, 1), 0, "%s", cep_last_error());
		cr_assert_eq(((float *)o.data)[0], 10);
		cr_assert_eq(((float *)o.data)[4], 4 + 50);
		free(o.data);
	}
}

Test(ops_conv, half_types_compute_in_float32)
{
	enum { NX = 2 * 6 * 6, NW = 4 * 2 * 3 * 3, NY = 4 * 6 * 6 };
	uint16_t xh[NX], wh[NW], bh[4];
	float xf[NX], wf[NW], bf[4], want[NY];
	int64_t xd[4] = { 1, 2, 6, 6 }, wd[4] = { 4, 2, 3, 3 }, bd[1] = { 4 }, pads[4] = { 1, 1, 1, 1 };
	struct op_attr a = oh_ints("pads", 4, pads);
	struct conv_case cc = {
		.n = 2, .batch = 1, .c = 2, .m = 4, .group = 1, .in = { 6, 6 }, .k = { 3, 3 },
		.s = { 1, 1 }, .d = { 1, 1 }, .pb = { 1, 1 }, .pe = { 1, 1 },
	};
	struct op_tensor in[3], out;
	unsigned seed = 11;
	int t, i;

	for (t = 0; t < 2; t++) {
		cep_dtype dt = t ? CEP_DTYPE_BFLOAT16 : CEP_DTYPE_FLOAT16;
		uint16_t (*to)(float) = t ? cpu_f32_to_bf16 : cpu_f32_to_f16;
		float (*from)(uint16_t) = t ? cpu_bf16_to_f32 : cpu_f16_to_f32;

		for (i = 0; i < NX; i++)
			xf[i] = from(xh[i] = to(oh_rand(&seed)));
		for (i = 0; i < NW; i++)
			wf[i] = from(wh[i] = to(oh_rand(&seed)));
		for (i = 0; i < 4; i++)
			bf[i] = from(bh[i] = to(oh_rand(&seed)));
		in[0] = oh_tensor(dt, 4, xd, xh);
		in[1] = oh_tensor(dt, 4, wd, wh);
		in[2] = oh_tensor(dt, 1, bd, bh);
		cr_assert_eq(oh_run("Conv", 22, &a, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.dtype, dt);
		conv_ref(&cc, xf, wf, bf, want);
		for (i = 0; i < NY; i++) {
			/* One rounding of the float32 result: within an ulp of
			 * the type (2^-10 relative for float16, 2^-7 for
			 * bfloat16), never the error of a half-precision sum. */
			float got = from(((uint16_t *)out.data)[i]);
			float tol = fabsf(want[i]) * (t ? 0x1p-7f : 0x1p-10f) + 1e-6f;

			cr_assert_leq(fabsf(got - want[i]), tol, "%s element %d: %g vs %g",
				      cep_dtype_name(dt), i, got, want[i]);
		}
		free(out.data);
	}
	/* bfloat16 came to Conv at opset 22. */
	cr_assert_eq(oh_run("Conv", 21, &a, 1, in, 3, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "bfloat16 is not supported"), "%s", cep_last_error());
}

Test(ops_conv, empty_batch_and_single_output_channel)
{
	struct conv_case one = {
		.n = 2, .batch = 3, .c = 3, .m = 1, .group = 1,
		.in = { 8, 5 }, .k = { 1, 1 }, .s = { 1, 1 }, .d = { 1, 1 }, .bias = true,
	};
	float x[1], w[3] = { 1, 2, 3 };
	int64_t xd[4] = { 0, 3, 4, 4 }, wd[4] = { 2, 3, 1, 1 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, w) };
	struct op_tensor out;

	cr_assert_leq(conv_check(&one, 12), 1e-5f);
	cr_assert_eq(oh_run("Conv", 11, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.dims[1], 2);
	cr_assert_eq(out.dims[2], 4);
	free(out.data);
}

/* --------------------------------------------------------------- inference */

Test(ops_conv, inference_carries_symbols_where_the_window_keeps_the_size)
{
	int64_t xd[4] = { OP_DIM_SYM(0), 3, OP_DIM_SYM(1), OP_DIM_SYM(2) }, wd[4] = { 8, 3, 3, 3 };
	int64_t pads[4] = { 1, 1, 1, 1 }, st[2] = { 2, 1 };
	struct op_attr a[2] = { oh_ints("pads", 4, pads), oh_ints("strides", 2, st) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, NULL) };
	struct op_tensor out;

	cr_assert_eq(oh_infer("Conv", 13, a, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], 8);
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[3], OP_DIM_SYM(2));
	/* Stride 2 along H: its size cannot be known; W keeps its symbol. */
	cr_assert_eq(oh_infer("Conv", 13, a, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[3], OP_DIM_SYM(2));
	/* SAME with stride 1 keeps every size. */
	a[0] = oh_string("auto_pad", "SAME_UPPER");
	cr_assert_eq(oh_infer("Conv", 13, a, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	/* Without X's rank, W's still gives the output's. */
	in[0].rank = -1;
	cr_assert_eq(oh_infer("Conv", 13, a, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[1], 8);
	cr_assert_eq(out.dims[2], OP_DIM_UNKNOWN);
}

Test(ops_conv, refusals_name_what_is_wrong)
{
	int64_t xd[4] = { 1, 4, 8, 8 }, wd[4] = { 6, 2, 3, 3 }, bd[1] = { 5 };
	int64_t two[2] = { 3, 3 }, three[3] = { 1, 1, 1 }, neg[4] = { -1, 0, 0, 0 };
	int64_t x6[8] = { 1, 1, 2, 2, 2, 2, 2, 2 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, bd, NULL) };
	struct op_attr a;
	struct op_tensor out;

	/* W takes 2 channels per group: 4 channels need group 2. */
	cr_assert_eq(oh_infer("Conv", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Conv: X has 4 channels but W takes 2 per group"),
		  "%s", cep_last_error());
	a = oh_int("group", 2);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "B has 5 values for 6 output channels"), "%s",
		  cep_last_error());
	a = oh_int("group", 4);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_ESHAPE);
	a = oh_int("group", 0);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	a = oh_int("group", INT64_MAX);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_ESHAPE);
	{
		int64_t huge[2] = { INT64_C(1) << 40, 1 };

		a = oh_ints("strides", 2, huge);
		cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
		cr_assert(strstr(cep_last_error(), "'strides' value 0 is 1099511627776"), "%s",
			  cep_last_error());
	}
	wd[1] = 4;
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, NULL);
	a = oh_ints("kernel_shape", 3, three);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'kernel_shape' has 3 values, expected 2"), "%s",
		  cep_last_error());
	two[1] = 5;
	a = oh_ints("kernel_shape", 2, two);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "kernel_shape[1] is 5 but the weights have 3"), "%s",
		  cep_last_error());
	a = oh_ints("pads", 4, neg);
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	a = oh_string("auto_pad", "SAME");
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "auto_pad 'SAME'"), "%s", cep_last_error());
	a = oh_ints("dilations", 2, two);
	two[0] = two[1] = 4;
	cr_assert_eq(oh_infer("Conv", 11, &a, 1, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "does not fit in spatial dimension 0 of size 8"), "%s",
		  cep_last_error());
	/* Four spatial dims are beyond the kernel. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 6, x6, NULL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 6, x6, NULL);
	cr_assert_eq(oh_infer("Conv", 11, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
	/* Mixed types. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT16, 4, xd, NULL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, wd, NULL);
	cr_assert_eq(oh_infer("Conv", 11, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
}

Test(ops_conv, unsupported_types_are_refused_by_the_registry)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "Conv", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_FLOAT64, &k), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "Conv: dtype float64 is not supported on the host "
			 "backend (supported: float32, float16)"), "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(s, 22, BACKEND_HOST, CEP_DTYPE_INT8, &k), CEP_EUNSUPPORTED);
	/* Conv has meant the same since opset 1. */
	cr_assert_eq(op_schema_find("", "Conv", 1, &s), 0);
	cr_assert_eq(op_kernel_find(s, 1, BACKEND_HOST, CEP_DTYPE_FLOAT16, &k), 0);
	cr_assert_eq(op_kernel_find(s, 6, BACKEND_HOST, CEP_DTYPE_BFLOAT16, &k), CEP_EUNSUPPORTED);
}

/* ------------------------------------------------------------ ResNet block */

/*
 * stem: Conv 3->16 (3x3, stride 2, pad 1) + Relu, MaxPool 3x3/2 pad 1;
 * block: Conv 16->16 3x3 + Relu, Conv 16->16 3x3, Add the block's input,
 * Relu; GlobalAveragePool. On 1x3x64x64 this is the shape of a ResNet's
 * first stage; the engine must agree with the direct loops.
 */
Test(ops_conv, resnet_block_through_the_engine)
{
	enum { C0 = 3, C1 = 16, H = 64 };
	static float x[C0 * H * H], w1[C1 * C0 * 9], b1[C1], w2[C1 * C1 * 9], b2[C1];
	static float w3[C1 * C1 * 9], b3[C1];
	static float h1[C1 * 32 * 32], h2[C1 * 16 * 16], h3[C1 * 16 * 16], h4[C1 * 16 * 16];
	float want[C1], got[C1];
	int64_t p1[4] = { 1, 1, 1, 1 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, xdims[4] = { 1, C0, H, H };
	struct conv_case stem = { .n = 2, .batch = 1, .c = C0, .m = C1, .group = 1,
				  .in = { H, H }, .k = { 3, 3 }, .s = { 2, 2 }, .d = { 1, 1 },
				  .pb = { 1, 1 }, .pe = { 1, 1 } };
	struct conv_case body = { .n = 2, .batch = 1, .c = C1, .m = C1, .group = 1,
				  .in = { 16, 16 }, .k = { 3, 3 }, .s = { 1, 1 }, .d = { 1, 1 },
				  .pb = { 1, 1 }, .pe = { 1, 1 } };
	struct onnxb *b = onnxb_new(13);
	Onnx__NodeProto *n;
	engine_model *m = NULL;
	engine_session *s = NULL;
	struct backend *be = NULL;
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 4, xdims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = got, .capacity = sizeof(got) };
	unsigned seed = 21;
	uint8_t *buf;
	size_t len;
	int i, c, yy, xx, a, e;

	for (i = 0; i < (int)(sizeof(x) / sizeof(x[0])); i++)
		x[i] = oh_rand(&seed);
	for (i = 0; i < C1 * C0 * 9; i++)
		w1[i] = oh_rand(&seed) * 0.5f;
	for (i = 0; i < C1 * C1 * 9; i++) {
		w2[i] = oh_rand(&seed) * 0.2f;
		w3[i] = oh_rand(&seed) * 0.2f;
	}
	for (i = 0; i < C1; i++) {
		b1[i] = oh_rand(&seed) * 0.1f;
		b2[i] = oh_rand(&seed) * 0.1f;
		b3[i] = oh_rand(&seed) * 0.1f;
	}
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,3,64,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "1,16,1,1");
	onnxb_init(b, "w1", CEP_DTYPE_FLOAT32, "16,3,3,3", w1);
	onnxb_init(b, "b1", CEP_DTYPE_FLOAT32, "16", b1);
	onnxb_init(b, "w2", CEP_DTYPE_FLOAT32, "16,16,3,3", w2);
	onnxb_init(b, "b2", CEP_DTYPE_FLOAT32, "16", b2);
	onnxb_init(b, "w3", CEP_DTYPE_FLOAT32, "16,16,3,3", w3);
	onnxb_init(b, "b3", CEP_DTYPE_FLOAT32, "16", b3);
	n = onnxb_node(b, "Conv", "x,w1,b1", "c1");
	onnxb_attr_ints(n, "pads", 4, p1);
	onnxb_attr_ints(n, "strides", 2, s2);
	onnxb_node(b, "Relu", "c1", "r1");
	n = onnxb_node(b, "MaxPool", "r1", "p1");
	onnxb_attr_ints(n, "kernel_shape", 2, k3);
	onnxb_attr_ints(n, "pads", 4, p1);
	onnxb_attr_ints(n, "strides", 2, s2);
	n = onnxb_node(b, "Conv", "p1,w2,b2", "c2");
	onnxb_attr_ints(n, "pads", 4, p1);
	onnxb_node(b, "Relu", "c2", "r2");
	n = onnxb_node(b, "Conv", "r2,w3,b3", "c3");
	onnxb_attr_ints(n, "pads", 4, p1);
	onnxb_node(b, "Add", "c3,p1", "s3");
	onnxb_node(b, "Relu", "s3", "r3");
	onnxb_node(b, "GlobalAveragePool", "r3", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[1], C1);

	/* The same network, loop by loop. */
	conv_ref(&stem, x, w1, b1, h1);
	for (i = 0; i < C1 * 32 * 32; i++)
		h1[i] = h1[i] > 0 ? h1[i] : 0;
	for (c = 0; c < C1; c++)
		for (yy = 0; yy < 16; yy++)
			for (xx = 0; xx < 16; xx++) {
				float mx = -INFINITY;

				for (a = 0; a < 3; a++)
					for (e = 0; e < 3; e++) {
						int iy = yy * 2 - 1 + a, ix = xx * 2 - 1 + e;

						if (iy >= 0 && iy < 32 && ix >= 0 && ix < 32 &&
						    h1[(c * 32 + iy) * 32 + ix] > mx)
							mx = h1[(c * 32 + iy) * 32 + ix];
					}
				h2[(c * 16 + yy) * 16 + xx] = mx;
			}
	conv_ref(&body, h2, w2, b2, h3);
	for (i = 0; i < C1 * 256; i++)
		h3[i] = h3[i] > 0 ? h3[i] : 0;
	conv_ref(&body, h3, w3, b3, h4);
	for (c = 0; c < C1; c++) {
		double sum = 0;

		for (i = 0; i < 256; i++) {
			float v = h4[c * 256 + i] + h2[c * 256 + i];

			sum += v > 0 ? v : 0;
		}
		want[c] = (float)(sum / 256);
		cr_assert_float_eq(got[c], want[c], 1e-4f, "channel %d: %g vs %g", c, got[c], want[c]);
	}
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
