/*
 * test_ops_pool.c — the pooling operators on the host backend
 * (kernels/cpu/pool.c): MaxPool with its Indices in both storage orders,
 * ceil_mode and its last-window rule, AveragePool's two divisors (pads
 * counted or not, ceil_mode's overhang never counted), dilations and the
 * opsets that bring each attribute, the integer and half types,
 * GlobalAveragePool and GlobalMaxPool, LpPool's norms by hand and against
 * the definition with every window attribute, symbolic inference and
 * refusals.
 */
#include <math.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

/* ------------------------------------------------------------------ MaxPool */

/* The direct definition of a 2-D max pool over one plane, with the index
 * of the first maximum in row-major order (-1: empty window). */
static void max_ref(const float *x, int64_t h, int64_t w, const int64_t *k, const int64_t *s,
		    const int64_t *pb, int64_t oh, int64_t ow, float *y, int64_t *idx)
{
	int64_t i, j, a, b;

	for (i = 0; i < oh; i++)
		for (j = 0; j < ow; j++) {
			float best = -INFINITY;
			int64_t at = -1;

			for (a = 0; a < k[0]; a++)
				for (b = 0; b < k[1]; b++) {
					int64_t r = i * s[0] - pb[0] + a, c = j * s[1] - pb[1] + b;

					if (r < 0 || r >= h || c < 0 || c >= w)
						continue;
					if (at < 0 || x[r * w + c] > best) {
						best = x[r * w + c];
						at = r * w + c;
					}
				}
			y[i * ow + j] = best;
			idx[i * ow + j] = at;
		}
}

Test(ops_pool, maxpool_values_and_indices_in_both_storage_orders)
{
	enum { N = 2, C = 3, H = 7, W = 6 };
	float x[N * C * H * W], want[6 * 4];
	int64_t xd[4] = { N, C, H, W }, k[2] = { 3, 2 }, s[2] = { 2, 2 }, pads[4] = { 1, 0, 0, 1 };
	int64_t widx[6 * 4];
	struct op_attr a[4] = { oh_ints("kernel_shape", 2, k), oh_ints("strides", 2, s),
				oh_ints("pads", 4, pads), oh_int("storage_order", 0) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x);
	struct op_tensor out[2];
	unsigned seed = 3;
	int order, plane, i;

	for (i = 0; i < N * C * H * W; i++)
		x[i] = oh_rand(&seed);
	for (order = 0; order < 2; order++) {
		a[3] = oh_int("storage_order", order);
		cr_assert_eq(oh_run("MaxPool", 12, a, 4, &in, 1, out, 2), 0, "%s", cep_last_error());
		/* (7 + 1 - 3) / 2 + 1 = 3 rows, (6 + 1 - 2) / 2 + 1 = 3 columns. */
		cr_assert_eq(out[0].dims[2], 3);
		cr_assert_eq(out[0].dims[3], 3);
		cr_assert_eq(out[1].dtype, CEP_DTYPE_INT64);
		cr_assert_eq(out[1].dims[3], 3);
		for (plane = 0; plane < N * C; plane++) {
			max_ref(x + plane * H * W, H, W, k, s, pads, 3, 3, want, widx);
			for (i = 0; i < 9; i++) {
				int64_t got = ((int64_t *)out[1].data)[plane * 9 + i];
				int64_t r = widx[i] / W, c = widx[i] % W;
				int64_t spatial = order ? r + c * H : widx[i];

				cr_assert_eq(((float *)out[0].data)[plane * 9 + i], want[i]);
				cr_assert_eq(got, plane * H * W + spatial, "plane %d out %d order %d",
					     plane, i, order);
				cr_assert_eq(x[got - spatial + widx[i]], want[i]);
			}
		}
		free(out[0].data);
		free(out[1].data);
	}
}

Test(ops_pool, ceil_mode_adds_a_window_unless_it_would_start_in_the_pad)
{
	float x[25], x4[4] = { 1, 2, 3, 4 };
	int64_t xd[4] = { 1, 1, 5, 5 }, x4d[4] = { 1, 1, 2, 2 }, k2[2] = { 2, 2 }, k1[2] = { 1, 1 };
	int64_t s2[2] = { 2, 2 };
	struct op_attr a[3] = { oh_ints("kernel_shape", 2, k2), oh_ints("strides", 2, s2),
				oh_int("ceil_mode", 1) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x);
	struct op_tensor out;
	const float *y;
	int i;

	for (i = 0; i < 25; i++)
		x[i] = (float)i;
	cr_assert_eq(oh_run("MaxPool", 10, a, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 3);
	cr_assert_eq(out.dims[3], 3);
	y = out.data;
	/* The last column's window holds column 4 alone. */
	cr_assert_eq(y[2], 9);
	cr_assert_eq(y[8], 24);
	free(out.data);
	cr_assert_eq(oh_run("MaxPool", 10, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 2);
	free(out.data);
	/* 2 wide, kernel 1, stride 2: a second window would start at 2,
	 * past the input, so ceil_mode keeps one. */
	a[0] = oh_ints("kernel_shape", 2, k1);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, x4d, x4);
	cr_assert_eq(oh_run("MaxPool", 10, a, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 1);
	cr_assert_eq(out.dims[3], 1);
	cr_assert_eq(((float *)out.data)[0], 1);
	free(out.data);
}

Test(ops_pool, dilations_and_the_opsets_that_bring_attributes)
{
	float x[16];
	int64_t xd[4] = { 1, 1, 4, 4 }, k[2] = { 2, 2 }, d[2] = { 2, 2 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 2, k), oh_ints("dilations", 2, d) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x);
	struct op_tensor out[2];
	struct op_attr so[2] = { oh_ints("kernel_shape", 2, k), oh_int("storage_order", 1) };
	struct op_attr cm[2] = { oh_ints("kernel_shape", 2, k), oh_int("ceil_mode", 1) };
	int i;

	for (i = 0; i < 16; i++)
		x[i] = (float)((i * 7) % 16);
	cr_assert_eq(oh_run("MaxPool", 10, a, 2, &in, 1, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[2], 2);
	/* Window of output (0, 0): x[0], x[2], x[8], x[10]. */
	cr_assert_eq(((float *)out[0].data)[0], fmaxf(fmaxf(x[0], x[2]), fmaxf(x[8], x[10])));
	free(out[0].data);
	cr_assert_eq(oh_run("AveragePool", 19, a, 2, &in, 1, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out[0].data)[3], (x[5] + x[7] + x[13] + x[15]) / 4);
	free(out[0].data);

	cr_assert_eq(oh_infer("MaxPool", 9, a, 2, &in, 1, out, 2), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "MaxPool: attribute 'dilations' does not exist at opset 9"),
		  "%s", cep_last_error());
	cr_assert_eq(oh_infer("AveragePool", 18, a, 2, &in, 1, out, 1), CEP_EMODEL);
	cr_assert_eq(oh_infer("AveragePool", 9, cm, 2, &in, 1, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'ceil_mode' does not exist at opset 9"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_infer("MaxPool", 7, so, 2, &in, 1, out, 1), CEP_EMODEL);
	cr_assert_eq(oh_infer("MaxPool", 8, so, 2, &in, 1, out, 2), 0, "%s", cep_last_error());
	/* MaxPool 7 has one output, 8 two. */
	{
		const struct op_schema *s;

		cr_assert_eq(op_schema_find("", "MaxPool", 7, &s), 0);
		cr_assert_eq(s->max_out, 1);
		cr_assert_eq(op_schema_find("", "MaxPool", 8, &s), 0);
		cr_assert_eq(s->max_out, 2);
	}
}

/* -------------------------------------------------------------- AveragePool */

Test(ops_pool, average_divides_by_what_count_include_pad_says)
{
	float ones[16];
	int64_t xd[4] = { 1, 1, 4, 4 }, k[2] = { 3, 3 }, s[2] = { 2, 2 }, p[4] = { 1, 1, 1, 1 };
	struct op_attr a[4] = { oh_ints("kernel_shape", 2, k), oh_ints("strides", 2, s),
				oh_ints("pads", 4, p), oh_int("ceil_mode", 1) };
	struct op_attr inc = oh_int("count_include_pad", 1);
	struct op_attr all[5];
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, ones);
	struct op_tensor out;
	const float *y;
	int i;

	for (i = 0; i < 16; i++)
		ones[i] = 1.0f;
	cr_assert_eq(oh_run("AveragePool", 11, a, 4, &in, 1, &out, 1), 0, "%s", cep_last_error());
	/* (4 + 2 - 3) / 2 + 1 = 2.5: ceil gives 3, and the third window
	 * starts at 3, inside the input. */
	cr_assert_eq(out.dims[2], 3);
	for (i = 0; i < 9; i++)
		cr_assert_float_eq(((float *)out.data)[i], 1.0f, 1e-6f, "pads are not counted");
	free(out.data);
	memcpy(all, a, sizeof(a));
	all[4] = inc;
	cr_assert_eq(oh_run("AveragePool", 11, all, 5, &in, 1, &out, 1), 0, "%s", cep_last_error());
	y = out.data;
	/* Corner: 4 real of 9 with the pads. Last row and column: windows
	 * 3..5 hold one real element, one pad, and one position of ceil's
	 * overhang, which is never counted. */
	cr_assert_float_eq(y[0], 4.0f / 9, 1e-6f);
	cr_assert_float_eq(y[1], 6.0f / 9, 1e-6f);
	cr_assert_float_eq(y[2], 2.0f / 6, 1e-6f);
	cr_assert_float_eq(y[8], 1.0f / 4, 1e-6f);
	free(out.data);
}

/* ------------------------------------------------------------------- types */

Test(ops_pool, integer_and_half_types)
{
	int8_t xi[6] = { -5, -3, -8, -1, -7, -2 };
	uint16_t xh[6], xb[6];
	int64_t xd[3] = { 1, 1, 6 }, k[1] = { 3 }, p[2] = { 1, 1 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 1, k), oh_ints("pads", 2, p) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_INT8, 3, xd, xi);
	struct op_tensor out;
	static const int8_t want[6] = { -3, -3, -1, -1, -1, -2 };
	int i;

	/* Pads never win, even against negative values. */
	cr_assert_eq(oh_run("MaxPool", 12, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int8_t *)out.data)[i], want[i]);
	free(out.data);
	cr_assert_eq(oh_run("MaxPool", 11, a, 2, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "dtype int8 is not supported"), "%s", cep_last_error());
	cr_assert_eq(oh_run("AveragePool", 22, a, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);

	for (i = 0; i < 6; i++) {
		xh[i] = cpu_f32_to_f16(0.1f * (float)xi[i]);
		xb[i] = cpu_f32_to_bf16(0.1f * (float)xi[i]);
	}
	in = oh_tensor(CEP_DTYPE_FLOAT16, 3, xd, xh);
	cr_assert_eq(oh_run("MaxPool", 12, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint16_t *)out.data)[i], cpu_f32_to_f16(0.1f * (float)want[i]));
	free(out.data);
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 3, xd, xb);
	cr_assert_eq(oh_run("AveragePool", 21, a, 2, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("AveragePool", 22, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[0]),
		     cpu_bf16_to_f32(cpu_f32_to_bf16((cpu_bf16_to_f32(xb[0]) +
						      cpu_bf16_to_f32(xb[1])) / 2)));
	free(out.data);
}

/* ------------------------------------------------------------- global pools */

Test(ops_pool, global_pools_reduce_every_spatial_dim)
{
	float x[2 * 3 * 2 * 2];
	int64_t xd[4] = { 2, 3, 2, 2 }, x2d[2] = { 2, 3 }, x5d[5] = { 1, 2, 2, 2, 3 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x);
	struct op_tensor out;
	int i, pl;

	for (i = 0; i < 24; i++)
		x[i] = (float)((i * 5) % 11) - 4.0f;
	cr_assert_eq(oh_run("GlobalAveragePool", 13, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_eq(out.dims[2], 1);
	cr_assert_eq(out.dims[3], 1);
	for (pl = 0; pl < 6; pl++)
		cr_assert_float_eq(((float *)out.data)[pl],
				   (x[pl * 4] + x[pl * 4 + 1] + x[pl * 4 + 2] + x[pl * 4 + 3]) / 4,
				   1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("GlobalMaxPool", 13, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	for (pl = 0; pl < 6; pl++)
		cr_assert_eq(((float *)out.data)[pl],
			     fmaxf(fmaxf(x[pl * 4], x[pl * 4 + 1]), fmaxf(x[pl * 4 + 2], x[pl * 4 + 3])));
	free(out.data);
	/* Three spatial dims, and none. */
	in = oh_tensor(CEP_DTYPE_FLOAT32, 5, x5d, x);
	cr_assert_eq(oh_run("GlobalMaxPool", 13, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 5);
	cr_assert_eq(out.dims[4], 1);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, x2d, x);
	cr_assert_eq(oh_run("GlobalAveragePool", 13, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((float *)out.data)[i], x[i]);
	free(out.data);
	in.rank = 1;
	cr_assert_eq(oh_infer("GlobalAveragePool", 13, NULL, 0, &in, 1, &out, 1), CEP_ESHAPE);
}

/* --------------------------------------------------------------- inference */

Test(ops_pool, inference_with_symbols_and_refusals)
{
	int64_t xd[4] = { OP_DIM_SYM(0), 8, OP_DIM_SYM(1), 9 }, k[2] = { 3, 3 }, p[4] = { 1, 1, 1, 1 };
	int64_t s[2] = { 1, 2 }, big[2] = { 5, 5 }, small[4] = { 1, 1, 4, 4 };
	struct op_attr a[3] = { oh_ints("kernel_shape", 2, k), oh_ints("pads", 4, p),
				oh_ints("strides", 2, s) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, NULL);
	struct op_tensor out[2];

	cr_assert_eq(oh_infer("MaxPool", 12, a, 3, &in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[0].dims[1], 8);
	cr_assert_eq(out[0].dims[2], OP_DIM_SYM(1), "stride 1, pads 1 + 1 keep the size");
	cr_assert_eq(out[0].dims[3], 5);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out[1].dims[2], OP_DIM_SYM(1));
	cr_assert_eq(oh_infer("AveragePool", 12, a, 2, &in, 1, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[2], OP_DIM_SYM(1));
	/* Unknown rank: kernel_shape still says there are two spatial dims. */
	in.rank = -1;
	cr_assert_eq(oh_infer("MaxPool", 12, a, 3, &in, 1, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 4);

	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, small, NULL);
	cr_assert_eq(oh_infer("MaxPool", 12, NULL, 0, &in, 1, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'kernel_shape' is required"), "%s", cep_last_error());
	a[0] = oh_ints("kernel_shape", 2, big);
	cr_assert_eq(oh_infer("MaxPool", 12, a, 1, &in, 1, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "does not fit"), "%s", cep_last_error());
	a[0] = oh_int("count_include_pad", 2);
	cr_assert_eq(oh_infer("AveragePool", 12, a, 1, &in, 1, out, 1), CEP_EMODEL);
	in.rank = 2;
	a[0] = oh_ints("kernel_shape", 2, k);
	cr_assert_eq(oh_infer("MaxPool", 12, a, 1, &in, 1, out, 1), CEP_ESHAPE);
}

Test(ops_pool, empty_batch)
{
	float x[1];
	int64_t xd[4] = { 0, 3, 4, 4 }, k[2] = { 2, 2 };
	struct op_attr a = oh_ints("kernel_shape", 2, k);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x);
	struct op_tensor out[2];

	cr_assert_eq(oh_run("MaxPool", 12, &a, 1, &in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 0);
	cr_assert_eq(out[0].dims[2], 3);
	free(out[0].data);
	free(out[1].data);
	cr_assert_eq(oh_run("GlobalAveragePool", 13, NULL, 0, &in, 1, out, 1), 0, "%s",
		     cep_last_error());
	free(out[0].data);
}

/* ------------------------------------------------------------------- LpPool */

/* Windows of 2 over [1, -2, 3, -4]: the 2-norms sqrt(5), sqrt(13), 5; the
 * 1-norms 3, 5, 7; the 3-norms cbrt(9), cbrt(35), cbrt(91); opset 1's
 * float p of 2.5 too. */
Test(ops_pool, lppool_norms_by_hand)
{
	float x[4] = { 1, -2, 3, -4 };
	int64_t xd[3] = { 1, 1, 4 }, k[1] = { 2 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 1, k), oh_int("p", 2) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 3, xd, x), out;
	const float two[3] = { sqrtf(5.0f), sqrtf(13.0f), 5.0f }, one[3] = { 3, 5, 7 };
	const float three[3] = { cbrtf(9.0f), cbrtf(35.0f), cbrtf(91.0f) };
	int i;

	cr_assert_eq(oh_run("LpPool", 2, a, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 3);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((float *)out.data)[i], two[i], "p 2 window %d", i);
	free(out.data);
	a[1] = oh_int("p", 1);
	cr_assert_eq(oh_run("LpPool", 11, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_eq(((float *)out.data)[i], one[i], "p 1 window %d", i);
	free(out.data);
	a[1] = oh_int("p", 3);
	cr_assert_eq(oh_run("LpPool", 18, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_float_eq(((float *)out.data)[i], three[i], 1e-5f, "p 3 window %d", i);
	free(out.data);
	a[1] = oh_float("p", 2.5f);
	cr_assert_eq(oh_run("LpPool", 1, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], powf(1.0f + powf(2.0f, 2.5f), 0.4f), 1e-5f);
	free(out.data);
}

/* The direct definition over one plane: the p-norm of the taps inside the
 * input, pads and the ceil overhang adding nothing, in double. */
static void lp_ref(const float *x, int64_t h, int64_t w, const int64_t *k, const int64_t *s,
		   const int64_t *d, const int64_t *pb, int64_t oh, int64_t ow, double p, float *y)
{
	int64_t i, j, a, b;

	for (i = 0; i < oh; i++)
		for (j = 0; j < ow; j++) {
			double sum = 0.0;

			for (a = 0; a < k[0]; a++)
				for (b = 0; b < k[1]; b++) {
					int64_t r = i * s[0] - pb[0] + a * d[0];
					int64_t c = j * s[1] - pb[1] + b * d[1];

					if (r >= 0 && r < h && c >= 0 && c < w)
						sum += pow(fabs(x[r * w + c]), p);
				}
			y[i * ow + j] = (float)pow(sum, 1.0 / p);
		}
}

/* A 2-D case with pads, strides, dilations and ceil_mode at opset 18,
 * every p from 1 to 4, against the definition. */
Test(ops_pool, lppool_matches_the_definition)
{
	enum { C = 3, H = 10, W = 9, OH = 6, OW = 5 };
	float x[C * H * W], want[C * OH * OW];
	int64_t xd[4] = { 1, C, H, W }, k[2] = { 3, 2 }, s[2] = { 2, 2 }, d[2] = { 1, 2 };
	int64_t pads[4] = { 1, 1, 1, 0 };
	unsigned seed = 17;
	int p, i, ch;

	for (i = 0; i < C * H * W; i++)
		x[i] = oh_rand(&seed) * 3.0f;
	for (p = 1; p <= 4; p++) {
		struct op_attr a[6] = { oh_ints("kernel_shape", 2, k), oh_ints("strides", 2, s),
					oh_ints("dilations", 2, d), oh_ints("pads", 4, pads),
					oh_int("ceil_mode", 1), oh_int("p", p) };
		struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, xd, x), out;

		cr_assert_eq(oh_run("LpPool", 18, a, 6, &in, 1, &out, 1), 0, "%s", cep_last_error());
		/* ceil_mode's extra windows: rows ceil((10 + 2 - 3) / 2) + 1,
		 * columns ceil((9 + 1 - 3) / 2) + 1, the dilated kernel 3 wide. */
		cr_assert_eq(out.dims[2], OH);
		cr_assert_eq(out.dims[3], OW);
		for (ch = 0; ch < C; ch++) {
			float *wc = want + ch * OH * OW;

			lp_ref(x + ch * H * W, H, W, k, s, d, pads, OH, OW, p, wc);
			for (i = 0; i < OH * OW; i++) {
				float got = ((float *)out.data)[ch * OH * OW + i];

				cr_assert(fabsf(got - wc[i]) <= 1e-5f * fabsf(wc[i]),
					  "p %d channel %d element %d: %g, want %g", p, ch, i,
					  (double)got, (double)wc[i]);
			}
		}
		free(out.data);
	}
}

/* float16 at every opset, bfloat16 from 22; p must be positive and of the
 * opset's type; ceil_mode and dilations came at 18. */
Test(ops_pool, lppool_types_opsets_and_refusals)
{
	uint16_t h[4];
	float x[4] = { 3, 4, 0, 0 };
	int64_t xd[3] = { 1, 1, 4 }, k[1] = { 2 }, s[1] = { 2 }, d[1] = { 1 };
	struct op_attr a[3] = { oh_ints("kernel_shape", 1, k), oh_ints("strides", 1, s),
				oh_int("p", 2) };
	struct op_attr late[2] = { oh_ints("kernel_shape", 1, k), oh_ints("dilations", 1, d) };
	struct op_attr bad[2] = { oh_ints("kernel_shape", 1, k), oh_int("p", 0) };
	struct op_attr fl[2] = { oh_ints("kernel_shape", 1, k), oh_float("p", 2.0f) };
	struct op_tensor in, out;
	int i;

	for (i = 0; i < 4; i++)
		cpu_store_f(h, CEP_DTYPE_FLOAT16, i, x[i]);
	in = oh_tensor(CEP_DTYPE_FLOAT16, 3, xd, h);
	cr_assert_eq(oh_run("LpPool", 11, a, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_FLOAT16, 0), 5.0f);
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_FLOAT16, 1), 0.0f);
	free(out.data);
	for (i = 0; i < 4; i++)
		cpu_store_f(h, CEP_DTYPE_BFLOAT16, i, x[i]);
	in.dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("LpPool", 21, a, 3, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("LpPool", 22, a, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_BFLOAT16, 0), 5.0f);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, xd, x);
	cr_assert_eq(oh_infer("LpPool", 11, late, 2, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "LpPool: attribute 'dilations' does not exist at "
			 "opset 11");
	cr_assert_eq(oh_infer("LpPool", 18, late, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(oh_infer("LpPool", 18, bad, 2, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "LpPool: p is 0, it must be a positive number");
	cr_assert_eq(oh_infer("LpPool", 2, fl, 2, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "p") != NULL, "%s", cep_last_error());
	cr_assert_eq(oh_infer("LpPool", 1, fl, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(oh_infer("LpPool", 18, NULL, 0, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'kernel_shape' is required"), "%s", cep_last_error());
}
