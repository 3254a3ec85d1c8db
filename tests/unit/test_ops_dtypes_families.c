/*
 * test_ops_dtypes_families.c — float64 and the wider integer types in the
 * operator families that came after them (the activations Selu, Celu,
 * Softsign, Swish and Shrink and onnxruntime's Gelus; Round; the layer
 * normalizations and BatchNormalization's training mode; Det; NonZero,
 * Unique, MaxUnpool and ReverseSequence), on the host backend: float64
 * results a float32 computation cannot give (expected values are C's
 * double operations on the same formulas), uint64 values past 2^63 read
 * as unsigned, and the kernels that compute in float32 alone (LpPool,
 * RoiAlign, Attention) refusing float64 by the lookup, naming the types
 * they take.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define MS OP_DOMAIN_MS

/* Runs op of domain (one output) and asserts it ran. */
static void run_ok(const char *domain, const char *op, int opset, const struct op_attr *attrs,
		   int n_attrs, const struct op_tensor *in, int n_in, struct op_tensor *out,
		   int n_out)
{
	cep__clear_error();
	cr_assert_eq(oh_run_in(domain, op, opset, attrs, n_attrs, in, n_in, out, n_out), 0,
		     "%s %d: %s", op, opset, cep_last_error());
}

/* Asserts that the float64 tensor t holds want[0..n) to 1e-14 relative
 * (float32 is 1e-7 off or worse on these values). */
static void assert_near_d(const char *what, const struct op_tensor *t, const double *want,
			  int n)
{
	int i;

	cr_assert_eq(t->dtype, CEP_DTYPE_FLOAT64, "%s: %s", what, cep_dtype_name(t->dtype));
	for (i = 0; i < n; i++) {
		double got = ((const double *)t->data)[i];

		cr_assert(fabs(got - want[i]) <= 1e-14 * fabs(want[i]) + 1e-300,
			  "%s[%d]: %.17g, want %.17g", what, i, got, want[i]);
	}
}

/* ------------------------------------------------------------ activations */

static double sigmoid_d(double h)
{
	return h >= 0.0 ? 1.0 / (1.0 + exp(-h)) : exp(h) / (1.0 + exp(h));
}

/* Inputs of no float32 value (0.3, 1 + 1e-9) and both signs. */
static double act_x[5] = { -1.5, -0.3, 0.3, 1.0 + 1e-9, 2.0 };

Test(ops_dtypes_families, activations_compute_float64_in_double)
{
	const double a_selu = 1.67326319217681884765625, g_selu = 1.05070102214813232421875;
	const double a_quick = (double)1.702f;
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(5), act_x) }, out;
	struct op_attr shrink[2] = { oh_float("lambd", 0.5f), oh_float("bias", 0.25f) };
	double want[5], bias[5] = { 0.1, -0.2, 1e-9, 0.0, 3.0 }, v;
	int i, opset;

	/* Selu took double from opset 1, Softsign too; Celu at 28. */
	for (opset = 6; opset <= 22; opset += 16) {
		for (i = 0; i < 5; i++) {
			v = act_x[i];
			want[i] = v > 0.0 ? g_selu * v : g_selu * (a_selu * exp(v) - a_selu);
		}
		run_ok("", "Selu", opset, NULL, 0, in, 1, &out, 1);
		assert_near_d("Selu", &out, want, 5);
		free(out.data);
		for (i = 0; i < 5; i++)
			want[i] = act_x[i] / (1.0 + fabs(act_x[i]));
		run_ok("", "Softsign", opset, NULL, 0, in, 1, &out, 1);
		assert_near_d("Softsign", &out, want, 5);
		free(out.data);
	}
	for (i = 0; i < 5; i++) {
		v = expm1(act_x[i]);
		want[i] = (act_x[i] > 0.0 ? act_x[i] : 0.0) + (v < 0.0 ? v : 0.0);
	}
	run_ok("", "Celu", 28, NULL, 0, in, 1, &out, 1);
	assert_near_d("Celu", &out, want, 5);
	free(out.data);
	cr_assert_eq(oh_run("Celu", 12, NULL, 0, in, 1, &out, 1), CEP_EUNSUPPORTED);
	for (i = 0; i < 5; i++)
		want[i] = act_x[i] * sigmoid_d(act_x[i]);
	run_ok("", "Swish", 24, NULL, 0, in, 1, &out, 1);
	assert_near_d("Swish", &out, want, 5);
	free(out.data);
	for (i = 0; i < 5; i++) {
		v = act_x[i];
		want[i] = v < -0.5 ? v + 0.25 : v > 0.5 ? v - 0.25 : 0.0;
	}
	run_ok("", "Shrink", 9, shrink, 2, in, 1, &out, 1);
	assert_near_d("Shrink", &out, want, 5);
	free(out.data);
	/* onnxruntime's: Gelu exact, QuickGelu, and FastGelu (tanh) and
	 * BiasGelu (exact) of x + bias, the sum in double. */
	for (i = 0; i < 5; i++)
		want[i] = 0.5 * act_x[i] * (1.0 + erf(act_x[i] * 0.7071067811865476));
	run_ok(MS, "Gelu", 1, NULL, 0, in, 1, &out, 1);
	assert_near_d("Gelu", &out, want, 5);
	free(out.data);
	for (i = 0; i < 5; i++)
		want[i] = act_x[i] * (1.0 / (1.0 + exp(-(a_quick * act_x[i]))));
	run_ok(MS, "QuickGelu", 1, NULL, 0, in, 1, &out, 1);
	assert_near_d("QuickGelu", &out, want, 5);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(5), bias);
	for (i = 0; i < 5; i++) {
		v = act_x[i] + bias[i];
		want[i] = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
	}
	run_ok(MS, "BiasGelu", 1, NULL, 0, in, 2, &out, 1);
	assert_near_d("BiasGelu", &out, want, 5);
	free(out.data);
	for (i = 0; i < 5; i++) {
		v = act_x[i] + bias[i];
		want[i] = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
	}
	run_ok(MS, "FastGelu", 1, NULL, 0, in, 2, &out, 1);
	assert_near_d("FastGelu", &out, want, 5);
	free(out.data);
}

/*
 * Shrink of the wider integers, as the onnx reference computes it (x ±
 * bias in float64, cast back): uint64 past 2^63 is a large positive value
 * (2^63 + 12288 - 2048, exact in double), not a negative one; int16 and
 * uint16 shift and zero as the smaller types do.
 */
Test(ops_dtypes_families, shrink_of_the_wider_integers)
{
	uint64_t u64[3] = { (UINT64_C(1) << 63) + 12288, 3, 0 };
	int16_t i16[3] = { -300, 4, 300 };
	uint16_t u16[3] = { 3, 60000, 6 };
	struct op_attr a[2] = { oh_float("lambd", 5.0f), oh_float("bias", 2048.0f) };
	struct op_attr b[2] = { oh_float("lambd", 5.0f), oh_float("bias", 2.0f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_UINT64, 1, DIMS(3), u64), out;
	const uint64_t *o64;
	const int16_t *o16;
	const uint16_t *ou16;

	run_ok("", "Shrink", 9, a, 2, &in, 1, &out, 1);
	o64 = out.data;
	cr_assert_eq(o64[0], (UINT64_C(1) << 63) + 10240, "%llu", (unsigned long long)o64[0]);
	cr_assert(o64[1] == 0 && o64[2] == 0);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_INT16, 1, DIMS(3), i16);
	run_ok("", "Shrink", 9, b, 2, &in, 1, &out, 1);
	o16 = out.data;
	cr_assert(o16[0] == -298 && o16[1] == 0 && o16[2] == 298, "%d %d %d", o16[0], o16[1],
		  o16[2]);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_UINT16, 1, DIMS(3), u16);
	run_ok("", "Shrink", 9, b, 2, &in, 1, &out, 1);
	ou16 = out.data;
	cr_assert(ou16[0] == 0 && ou16[1] == 59998 && ou16[2] == 4, "%u %u %u", ou16[0], ou16[1],
		  ou16[2]);
	free(out.data);
}

/* Round to nearest, halves to even, in double: 2^25 + 1.5 has no float32
 * value; 0.5 + 2^-40 is above the half. */
Test(ops_dtypes_families, round_of_float64)
{
	double x[4] = { 33554433.5, -2.5, 0.5 + 0x1p-40, 1e300 };
	const double want[4] = { 33554434.0, -2.0, 1.0, 1e300 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(4), x), out;
	int opset;

	for (opset = 11; opset <= 22; opset += 11) {
		run_ok("", "Round", opset, NULL, 0, &in, 1, &out, 1);
		cr_assert_eq(memcmp(out.data, want, sizeof(want)), 0, "opset %d: %.17g", opset,
			     ((double *)out.data)[0]);
		free(out.data);
	}
}

/* --------------------------------------------------------- normalizations */

/* The kernels' two passes in double: y = (x - mean) / sqrt(var + eps) *
 * scale + b over one row of n. */
static void ref_row(const double *x, int n, double eps, const double *scale, const double *b,
		    double *y)
{
	double sum = 0.0, sq = 0.0, m, inv;
	int j;

	for (j = 0; j < n; j++)
		sum += x[j];
	m = sum / n;
	for (j = 0; j < n; j++)
		sq += (x[j] - m) * (x[j] - m);
	inv = 1.0 / sqrt(sq / n + eps);
	for (j = 0; j < n; j++)
		y[j] = (x[j] - m) * inv * scale[j] + (b ? b[j] : 0.0);
}

/*
 * A row 1, 1 + 1e-9, ... that float32 holds as four ones: LayerNormalization
 * 17 and SkipLayerNormalization normalize it in double, and the skip
 * form's sum x + skip (output 3) is added in double.
 */
Test(ops_dtypes_families, layer_normalizations_of_float64)
{
	double x[4], one[4] = { 1, 1, 1, 1 }, skip[4], sum[4], y[4];
	double scale[4] = { 1.0, 2.0, -1.0, 0.5 }, b[4] = { 0.0, 1e-9, 0.25, -3.0 };
	struct op_attr eps = oh_float("epsilon", 1e-20f);
	struct op_tensor in[4], out[4];
	int j;

	for (j = 0; j < 4; j++) {
		x[j] = 1.0 + 1e-9 * j;
		skip[j] = 1e-9 * j;
		sum[j] = one[j] + skip[j];
	}
	ref_row(x, 4, (double)1e-20f, scale, b, y);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 2, DIMS(1, 4), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(4), scale);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(4), b);
	run_ok("", "LayerNormalization", 17, &eps, 1, in, 3, out, 1);
	assert_near_d("LayerNormalization", &out[0], y, 4);
	free(out[0].data);
	/* input, skip, gamma, beta. */
	ref_row(sum, 4, (double)1e-20f, scale, b, y);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 2, DIMS(1, 4), one);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 2, DIMS(1, 4), skip);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(4), scale);
	in[3] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(4), b);
	run_ok(MS, "SkipLayerNormalization", 1, &eps, 1, in, 4, out, 4);
	assert_near_d("SkipLayerNormalization", &out[0], y, 4);
	cr_assert_eq(memcmp(out[3].data, sum, sizeof(sum)), 0, "input_skip_bias_sum");
	for (j = 0; j < 4; j++)
		free(out[j].data);
}

/* training_mode: the batch's statistics and the running ones in double. */
Test(ops_dtypes_families, batch_normalization_training_in_float64)
{
	double x[4], sc[1] = { 1.0 }, bias[1] = { 0.0 }, mean[1] = { 0.5 }, var[1] = { 2.0 };
	double bm = 0.0, bv = 0.0, y[4];
	struct op_attr a[3] = { oh_int("training_mode", 1), oh_float("epsilon", 0.0f),
				oh_float("momentum", 0.5f) };
	struct op_tensor in[5], out[3];
	int j;

	for (j = 0; j < 4; j++) {
		x[j] = 1.0 + 1e-9 * j;
		bm += x[j];
	}
	bm /= 4;
	for (j = 0; j < 4; j++)
		bv += (x[j] - bm) * (x[j] - bm);
	bv /= 4;
	for (j = 0; j < 4; j++)
		y[j] = x[j] * (1.0 / sqrt(bv)) + (0.0 - bm * (1.0 / sqrt(bv)));
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 3, DIMS(1, 1, 4), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(1), sc);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(1), bias);
	in[3] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(1), mean);
	in[4] = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(1), var);
	run_ok("", "BatchNormalization", 15, a, 3, in, 5, out, 3);
	cr_assert_eq(((double *)out[1].data)[0], 0.5 * 0.5 + bm * 0.5, "running_mean %.17g",
		     ((double *)out[1].data)[0]);
	cr_assert_eq(((double *)out[2].data)[0], 2.0 * 0.5 + bv * 0.5, "running_var %.17g",
		     ((double *)out[2].data)[0]);
	for (j = 0; j < 4; j++)
		cr_assert(fabs(((double *)out[0].data)[j] - y[j]) <= 1e-6,
			  "Y[%d] %.17g, want %.17g", j, ((double *)out[0].data)[j], y[j]);
	for (j = 0; j < 3; j++)
		free(out[j].data);
}

/* -------------------------------------------------------- data dependent */

/* 1e-300 is nonzero (float32 would flush it), -0 is not, NaN is. */
Test(ops_dtypes_families, nonzero_of_float64)
{
	double x[5] = { 0.0, 1e-300, -0.0, NAN, 2.0 };
	const int64_t want[3] = { 1, 3, 4 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(5), x), out;

	run_ok("", "NonZero", 13, NULL, 0, &in, 1, &out, 1);
	cr_assert(out.rank == 2 && out.dims[0] == 1 && out.dims[1] == 3, "%lld x %lld",
		  (long long)out.dims[0], (long long)out.dims[1]);
	cr_assert_eq(memcmp(out.data, want, sizeof(want)), 0);
	free(out.data);
}

/* Sorted Unique: float64 values 1e-12 apart stay apart; uint64 past 2^63
 * sorts after the small values. */
Test(ops_dtypes_families, unique_of_float64_and_uint64)
{
	double x[3] = { 1.0 + 1e-12, 1.0, 1.0 + 1e-12 };
	const double want_x[2] = { 1.0, 1.0 + 1e-12 };
	uint64_t u[4] = { (UINT64_C(1) << 63) + 1, 1, (UINT64_C(1) << 63) + 1, 5 };
	const uint64_t want_u[3] = { 1, 5, (UINT64_C(1) << 63) + 1 };
	const int64_t inv_u[4] = { 2, 0, 2, 1 };
	struct op_attr sorted = oh_int("sorted", 1);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT64, 1, DIMS(3), x), out[4];
	int i;

	run_ok("", "Unique", 11, &sorted, 1, &in, 1, out, 4);
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(memcmp(out[0].data, want_x, sizeof(want_x)), 0);
	for (i = 0; i < 4; i++)
		free(out[i].data);
	in = oh_tensor(CEP_DTYPE_UINT64, 1, DIMS(4), u);
	run_ok("", "Unique", 11, &sorted, 1, &in, 1, out, 4);
	cr_assert_eq(out[0].dims[0], 3);
	cr_assert_eq(memcmp(out[0].data, want_u, sizeof(want_u)), 0, "%llu %llu %llu",
		     (unsigned long long)((uint64_t *)out[0].data)[0],
		     (unsigned long long)((uint64_t *)out[0].data)[1],
		     (unsigned long long)((uint64_t *)out[0].data)[2]);
	cr_assert_eq(memcmp(out[2].data, inv_u, sizeof(inv_u)), 0, "inverse_indices");
	for (i = 0; i < 4; i++)
		free(out[i].data);
}

/* ------------------------------------------------------------ moved bytes */

/* MaxUnpool (double from opset 9) and ReverseSequence move elements as
 * they are. */
Test(ops_dtypes_families, maxunpool_and_reverse_sequence_move_the_wider_types)
{
	static const int64_t k2[1] = { 2 };
	double x[2] = { 0.1, 1.0 + 1e-15 };
	int64_t idx[2] = { 1, 2 }, lens[2] = { 2, 1 };
	uint64_t s[4] = { UINT64_MAX, 1, (UINT64_C(1) << 63) + 7, 2 };
	const uint64_t want_s[4] = { (UINT64_C(1) << 63) + 7, 1, UINT64_MAX, 2 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 1, k2), oh_ints("strides", 1, k2) };
	struct op_attr axes[2] = { oh_int("time_axis", 0), oh_int("batch_axis", 1) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT64, 3, DIMS(1, 1, 2), x),
				   oh_tensor(CEP_DTYPE_INT64, 3, DIMS(1, 1, 2), idx) };
	struct op_tensor out;
	const double *o;

	run_ok("", "MaxUnpool", 9, a, 2, in, 2, &out, 1);
	o = out.data;
	cr_assert_eq(out.dims[2], 4);
	cr_assert(o[0] == 0.0 && o[1] == x[0] && o[2] == x[1] && o[3] == 0.0);
	free(out.data);
	/* (time 2, batch 2): batch 0 reverses both steps, batch 1 keeps one. */
	in[0] = oh_tensor(CEP_DTYPE_UINT64, 2, DIMS(2, 2), s);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), lens);
	run_ok("", "ReverseSequence", 10, axes, 2, in, 2, &out, 1);
	cr_assert_eq(memcmp(out.data, want_s, sizeof(want_s)), 0);
	free(out.data);
}

/* ------------------------------------------------------- float32 kernels */

/* LpPool, RoiAlign and Attention compute in float32: float64 is refused
 * by the lookup, which names what they take. */
Test(ops_dtypes_families, float32_kernels_refuse_float64)
{
	static const int64_t k2[1] = { 2 };
	double x[16] = { 0 }, rois[4] = { 0, 0, 1, 1 };
	int64_t bi[1] = { 0 };
	struct op_attr kernel = oh_ints("kernel_shape", 1, k2);
	struct op_tensor in[3], out[4];
	static const char *const want =
		"dtype float64 is not supported on the host backend (supported: float32, float16, "
		"bfloat16)";

	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 3, DIMS(1, 1, 4), x);
	cr_assert_eq(oh_run("LpPool", 22, &kernel, 1, in, 1, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), want), "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 4, DIMS(1, 1, 2, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 2, DIMS(1, 4), rois);
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), bi);
	cr_assert_eq(oh_run("RoiAlign", 22, NULL, 0, in, 3, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), want), "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 4, DIMS(1, 1, 2, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 4, DIMS(1, 1, 2, 2), x);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT64, 4, DIMS(1, 1, 2, 2), x);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), want), "%s", cep_last_error());
}
