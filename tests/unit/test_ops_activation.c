/*
 * test_ops_activation.c — the activations of kernels/cpu/activation.c that
 * joined after test_ops_elem.c's: ThresholdedRelu (opset 10 on, alpha),
 * Mish (opset 18 on), Selu, Celu, Softsign, Swish and Shrink (integers
 * too), and math.c's Round, called as the engine calls them (schema
 * inference, then the host kernel through exec_host_eval). Values from
 * the spec's formulas in double, the spec's example, NaN and infinities,
 * float16 and bfloat16, the type sets of each opset, and the refusals by
 * their messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
	       const struct op_tensor *in, struct op_tensor *out)
{
	cep__clear_error();
	return oh_run(op, opset, attrs, n_attrs, in, 1, out, 1);
}

static void assert_refused(int ret, int err, const char *msg)
{
	cr_assert_eq(ret, err, "got %s (%s), expected %s", cep_err_name(ret), cep_last_error(),
		     cep_err_name(err));
	cr_assert_str_eq(cep_last_error(), msg);
}

/* mish(x) = x * tanh(ln(1 + e^x)), in double. */
static double mish_ref(double x)
{
	return x * tanh(log1p(exp(x)));
}

/* ---------------------------------------------------------- ThresholdedRelu */

Test(ops_activation, thresholded_relu_the_spec_example)
{
	/* test_thresholdedrelu_example: alpha 2. */
	float x[5] = { -1.5f, 0.0f, 1.2f, 2.0f, 2.2f };
	const float want[5] = { 0.0f, 0.0f, 0.0f, 0.0f, 2.2f };
	int64_t d5[1] = { 5 };
	struct op_attr alpha = oh_float("alpha", 2.0f);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d5, x), out;
	int i;

	cr_assert_eq(run("ThresholdedRelu", 10, &alpha, 1, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(out.dims[0], 5);
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], want[i], "x = %g", (double)x[i]);
	free(out.data);
}

Test(ops_activation, thresholded_relu_defaults_to_alpha_1_and_maps_nan_to_0)
{
	float x[8] = { -INFINITY, -3.0f, 0.5f, 1.0f, 1.0000001f, 7.5f, INFINITY, NAN };
	const float want[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 1.0000001f, 7.5f, INFINITY, 0.0f };
	int64_t d8[1] = { 8 };
	struct op_attr neg = oh_float("alpha", -4.0f);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d8, x), out;
	int i;

	cr_assert_eq(run("ThresholdedRelu", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 8; i++)
		cr_assert_eq(((float *)out.data)[i], want[i], "x = %g: %g", (double)x[i],
			     (double)((float *)out.data)[i]);
	free(out.data);
	/* A negative alpha keeps the values above it, negative ones too. */
	cr_assert_eq(run("ThresholdedRelu", 22, &neg, 1, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	cr_assert_eq(((float *)out.data)[1], -3.0f);
	cr_assert_eq(((float *)out.data)[7], 0.0f);
	free(out.data);
}

Test(ops_activation, thresholded_relu_types_and_refusals)
{
	uint16_t h[3] = { cpu_f32_to_f16(0.5f), cpu_f32_to_f16(1.5f), cpu_f32_to_f16(-2.0f) };
	uint16_t b[3] = { cpu_f32_to_bf16(0.5f), cpu_f32_to_bf16(1.5f), cpu_f32_to_bf16(-2.0f) };
	int32_t i32[3] = { 1, 2, 3 };
	int64_t d3[1] = { 3 };
	struct op_attr bad = oh_int("alpha", 1);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT16, 1, d3, h), out;

	cr_assert_eq(run("ThresholdedRelu", 10, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(((uint16_t *)out.data)[0], 0);
	cr_assert_eq(((uint16_t *)out.data)[1], h[1]);
	cr_assert_eq(((uint16_t *)out.data)[2], 0);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, d3, b);
	assert_refused(run("ThresholdedRelu", 21, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "ThresholdedRelu: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run("ThresholdedRelu", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	cr_assert_eq(((uint16_t *)out.data)[1], b[1]);
	cr_assert_eq(((uint16_t *)out.data)[2], 0);
	free(out.data);
	assert_refused(run("ThresholdedRelu", 9, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "ThresholdedRelu: opset 9 is not supported (supported 10-28)");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, h);
	assert_refused(run("ThresholdedRelu", 10, &bad, 1, &in, &out), CEP_EMODEL,
		       "ThresholdedRelu: attribute 'alpha' is of type int, expected float");
	in = oh_tensor(CEP_DTYPE_INT32, 1, d3, i32);
	assert_refused(run("ThresholdedRelu", 22, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "ThresholdedRelu: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64)");
}

/* --------------------------------------------------------------------- Mish */

Test(ops_activation, mish_matches_its_formula_in_double)
{
	float x[64];
	int64_t d[1] = { 64 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	int i;

	/* -40 to 40: the tails where softplus underflows and tanh is 1. */
	for (i = 0; i < 64; i++)
		x[i] = -40.0f + 80.0f * (float)i / 63.0f;
	x[31] = 0.0f;
	x[32] = 1e-20f;
	cr_assert_eq(run("Mish", 18, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 64; i++) {
		double want = mish_ref(x[i]), got = ((float *)out.data)[i];

		cr_assert(fabs(got - want) <= 1e-6 * fabs(want) + 1e-38,
			  "mish(%g) = %.9g, expected %.9g", (double)x[i], got, want);
	}
	free(out.data);
}

Test(ops_activation, mish_of_nan_and_infinities)
{
	float x[5] = { INFINITY, -INFINITY, NAN, 100.0f, -100.0f };
	int64_t d5[1] = { 5 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d5, x), out;
	const float *o;

	cr_assert_eq(run("Mish", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert(isinf(o[0]) && o[0] > 0, "mish(inf) = %g", (double)o[0]);
	/* The spec's formula in IEEE arithmetic: -inf * tanh(0) = -inf * 0. */
	cr_assert(isnan(o[1]), "mish(-inf) = %g, the formula's NaN", (double)o[1]);
	cr_assert(isnan(o[2]));
	cr_assert_eq(o[3], 100.0f);
	/* -100 e^-100, about -3.7e-42: a subnormal, so only roughly. */
	cr_assert(o[4] < 0.0f && o[4] > -1e-41f, "mish(-100) = %g", (double)o[4]);
	free(out.data);
}

Test(ops_activation, mish_types_and_refusals)
{
	static const float x[4] = { -2.0f, -0.25f, 0.5f, 3.0f };
	uint16_t h[4], b[4];
	int8_t i8[4] = { 1, 2, 3, 4 };
	int64_t d4[1] = { 4 };
	struct op_tensor in, out;
	int i;

	for (i = 0; i < 4; i++) {
		h[i] = cpu_f32_to_f16(x[i]);
		b[i] = cpu_f32_to_bf16(x[i]);
	}
	in = oh_tensor(CEP_DTYPE_FLOAT16, 1, d4, h);
	cr_assert_eq(run("Mish", 18, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(cpu_f16_to_f32(((uint16_t *)out.data)[i]), mish_ref(x[i]),
				   1e-3 * fabs(mish_ref(x[i])), "float16 mish(%g)", (double)x[i]);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, d4, b);
	assert_refused(run("Mish", 21, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "Mish: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run("Mish", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[i]), mish_ref(x[i]),
				   8e-3 * fabs(mish_ref(x[i])), "bfloat16 mish(%g)", (double)x[i]);
	free(out.data);
	assert_refused(run("Mish", 17, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "Mish: opset 17 is not supported (supported 18-28)");
	in = oh_tensor(CEP_DTYPE_INT8, 1, d4, i8);
	assert_refused(run("Mish", 18, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "Mish: dtype int8 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
}

/* ------------------------------------------------ Selu, Celu, Softsign, Swish */

/* Runs op at opset over the float32 values x (n) with attrs and asserts
 * each result is want(x) (in double) within tol relative. */
static void assert_formula(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			   const float *x, int n, double (*want)(double, const double *),
			   const double *param, double tol)
{
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ n }, (void *)x);
	struct op_tensor out;
	int i;

	cr_assert_eq(run(op, opset, attrs, n_attrs, &in, &out), 0, "%s: %s", op, cep_last_error());
	for (i = 0; i < n; i++) {
		double w = want(x[i], param), g = ((float *)out.data)[i];

		if (isnan(w)) {
			cr_assert(isnan(g), "%s(%g) = %g, want NaN", op, (double)x[i], g);
			continue;
		}
		cr_assert(fabs(g - w) <= tol * fabs(w) + 1e-7, "%s(%g) = %.9g, want %.9g", op,
			  (double)x[i], g, w);
	}
	free(out.data);
}

/* param: alpha, gamma. */
static double selu_ref(double x, const double *p)
{
	return x > 0 ? p[1] * x : p[1] * (p[0] * exp(x) - p[0]);
}

/* param: alpha. */
static double celu_ref(double x, const double *p)
{
	return fmax(0.0, x) + fmin(0.0, p[0] * (exp(x / p[0]) - 1.0)) + (isnan(x) ? x : 0.0);
}

static double softsign_ref(double x, const double *p)
{
	(void)p;
	return x / (1.0 + fabs(x));
}

/* param: alpha. */
static double swish_ref(double x, const double *p)
{
	return x / (1.0 + exp(-p[0] * x));
}

static const float spread[] = { -20.0f, -3.5f, -1.0f, -0.25f, -0.0f, 0.0f, 1e-8f, 0.5f, 1.0f,
				2.0f, 7.5f, 30.0f, NAN };

/* test_selu_example (alpha 2, gamma 3 at -1, 0, 1 give -3.79272318, 0, 3)
 * and the defaults, the paper's constants. */
Test(ops_activation, selu_matches_its_formula)
{
	static const float ex[3] = { -1, 0, 1 };
	static const double custom[2] = { 2.0, 3.0 };
	static const double dflt[2] = { 1.67326319217681884765625, 1.05070102214813232421875 };
	struct op_attr a[2] = { oh_float("alpha", 2.0f), oh_float("gamma", 3.0f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ 3 }, (void *)ex);
	struct op_tensor out;

	cr_assert_eq(run("Selu", 6, a, 2, &in, &out), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -3.79272318f, 1e-6f);
	cr_assert_eq(((float *)out.data)[1], 0.0f);
	cr_assert_eq(((float *)out.data)[2], 3.0f);
	free(out.data);
	assert_formula("Selu", 6, a, 2, spread, N_OF(spread), selu_ref, custom, 1e-6);
	assert_formula("Selu", 1, NULL, 0, spread, N_OF(spread), selu_ref, dflt, 1e-6);
	assert_formula("Selu", 22, NULL, 0, spread, N_OF(spread), selu_ref, dflt, 1e-6);
}

/* test_celu: alpha 2; NaN stays NaN; the default alpha is 1. */
Test(ops_activation, celu_matches_its_formula)
{
	static const double two[1] = { 2.0 }, one[1] = { 1.0 }, half[1] = { 0.5 };
	struct op_attr a = oh_float("alpha", 2.0f), h = oh_float("alpha", 0.5f);

	assert_formula("Celu", 12, &a, 1, spread, N_OF(spread), celu_ref, two, 1e-6);
	assert_formula("Celu", 12, NULL, 0, spread, N_OF(spread), celu_ref, one, 1e-6);
	assert_formula("Celu", 28, &h, 1, spread, N_OF(spread), celu_ref, half, 1e-6);
}

/* test_softsign_example: -1, 0, 1 give -0.5, 0, 0.5; infinities give +-1. */
Test(ops_activation, softsign_matches_its_formula)
{
	static const float inf[2] = { INFINITY, -INFINITY };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ 2 }, (void *)inf);
	struct op_tensor out;

	assert_formula("Softsign", 1, NULL, 0, spread, N_OF(spread), softsign_ref, NULL, 1e-6);
	assert_formula("Softsign", 22, NULL, 0, spread, N_OF(spread), softsign_ref, NULL, 1e-6);
	cr_assert_eq(run("Softsign", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	/* inf / (1 + inf) is NaN: the definition's quotient, kept as it is. */
	cr_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
	free(out.data);
}

/* test_swish (alpha 1 by default) and another alpha. */
Test(ops_activation, swish_matches_its_formula)
{
	static const double one[1] = { 1.0 }, other[1] = { -0.75 };
	struct op_attr a = oh_float("alpha", -0.75f);

	assert_formula("Swish", 24, NULL, 0, spread, N_OF(spread), swish_ref, one, 2e-6);
	assert_formula("Swish", 24, &a, 1, spread, N_OF(spread), swish_ref, other, 2e-6);
}

/* The type sets: Selu and Softsign float and float16, bfloat16 from 22;
 * Celu float32 alone until 28; Swish from 24; and attributes of the
 * wrong type are refused. */
Test(ops_activation, new_activations_types_and_refusals)
{
	uint16_t h[2] = { 0xbc00, 0x3c00 }; /* -1, 1 in float16 */
	struct op_attr bad = oh_int("gamma", 3), lam = oh_int("lambd", 1);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT16, 1, (const int64_t[]){ 2 }, h), out;

	cr_assert_eq(run("Selu", 6, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_float_eq(cpu_load_f(out.data, CEP_DTYPE_FLOAT16, 0), -1.1113f, 1e-3f);
	free(out.data);
	cr_assert_eq(run("Celu", 27, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
	cr_assert_eq(run("Celu", 28, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	free(out.data);
	in.dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(run("Softsign", 21, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
	cr_assert_eq(run("Swish", 23, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
	cr_assert_eq(run("Shrink", 22, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
	in.dtype = CEP_DTYPE_FLOAT32;
	assert_refused(run("Selu", 22, &bad, 1, &in, &out), CEP_EMODEL,
		       "Selu: attribute 'gamma' is of type int, expected float");
	assert_refused(run("Shrink", 9, &lam, 1, &in, &out), CEP_EMODEL,
		       "Shrink: attribute 'lambd' is of type int, expected float");
}

/* ------------------------------------------------------------------ Shrink */

/* test_shrink_hard (lambd 1.5) and test_shrink_soft (bias 1.5 too) over
 * -2 .. 2; the defaults lambd 0.5, bias 0. */
Test(ops_activation, shrink_hard_and_soft)
{
	static const float x[5] = { -2, -1, 0, 1, 2 };
	static const float hard[5] = { -2, 0, 0, 0, 2 }, soft[5] = { -0.5f, 0, 0, 0, 0.5f };
	static const float dflt[5] = { -2, -1, 0, 1, 2 };
	struct op_attr a[2] = { oh_float("lambd", 1.5f), oh_float("bias", 1.5f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ 5 }, (void *)x);
	struct op_tensor out;
	int i;

	cr_assert_eq(run("Shrink", 9, a, 1, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], hard[i], "hard %d", i);
	free(out.data);
	cr_assert_eq(run("Shrink", 9, a, 2, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], soft[i], "soft %d", i);
	free(out.data);
	cr_assert_eq(run("Shrink", 9, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], dflt[i], "default %d", i);
	free(out.data);
}

/* Integers compare against the float lambd and move by the float bias,
 * truncated back: 5 - 0.5 is 4 in int8, 200 - 0.5 is 199 in uint8. */
Test(ops_activation, shrink_of_integers)
{
	static const int8_t x8[5] = { -5, -1, 0, 1, 5 }, want8[5] = { -4, 0, 0, 0, 4 };
	static const uint8_t xu[4] = { 0, 1, 2, 200 }, wantu[4] = { 0, 0, 1, 199 };
	static const int64_t x64[3] = { INT64_C(-4000000000), 3, INT64_C(4000000000) };
	static const int64_t want64[3] = { INT64_C(-3999999998), 0, INT64_C(3999999998) };
	struct op_attr a[2] = { oh_float("lambd", 1.5f), oh_float("bias", 0.5f) };
	struct op_attr b[2] = { oh_float("lambd", 3.0f), oh_float("bias", 2.0f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_INT8, 1, (const int64_t[]){ 5 }, (void *)x8);
	struct op_tensor out;
	int i;

	cr_assert_eq(run("Shrink", 9, a, 2, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((int8_t *)out.data)[i], want8[i], "int8 %d", i);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_UINT8, 1, (const int64_t[]){ 4 }, (void *)xu);
	cr_assert_eq(run("Shrink", 9, a, 2, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 4; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], wantu[i], "uint8 %d", i);
	free(out.data);
	/* 3 is not above lambd 3. */
	in = oh_tensor(CEP_DTYPE_INT64, 1, (const int64_t[]){ 3 }, (void *)x64);
	cr_assert_eq(run("Shrink", 9, b, 2, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_eq(((int64_t *)out.data)[i], want64[i], "int64 %d", i);
	free(out.data);
}

/* ------------------------------------------------------------------- Round */

/* test_round's values: halves go to the even neighbour, either sign;
 * NaN and infinities stay. Round came at 11, bfloat16 at 22. */
Test(ops_activation, round_halves_to_even)
{
	static const float x[12] = { 0.1f, 0.5f, 0.9f, 1.2f, 1.5f, 1.8f, 2.3f, 2.5f, 2.7f,
				     -1.1f, -1.5f, -2.5f };
	static const float want[12] = { 0, 0, 1, 1, 2, 2, 2, 2, 3, -1, -2, -2 };
	static const float edge[4] = { NAN, INFINITY, -0.5f, 8388609.0f };
	uint16_t bf[2];
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ 12 }, (void *)x);
	struct op_tensor out;
	int i;

	cr_assert_eq(run("Round", 11, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 12; i++)
		cr_assert_eq(((float *)out.data)[i], want[i], "Round(%g)", (double)x[i]);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (const int64_t[]){ 4 }, (void *)edge);
	cr_assert_eq(run("Round", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert(isnan(((float *)out.data)[0]));
	cr_assert_eq(((float *)out.data)[1], INFINITY);
	cr_assert_eq(((float *)out.data)[2], 0.0f);
	cr_assert(signbit(((float *)out.data)[2]), "-0.5 rounds to -0");
	cr_assert_eq(((float *)out.data)[3], 8388609.0f);
	free(out.data);
	cpu_store_f(bf, CEP_DTYPE_BFLOAT16, 0, 2.5f);
	cpu_store_f(bf, CEP_DTYPE_BFLOAT16, 1, -3.5f);
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, (const int64_t[]){ 2 }, bf);
	cr_assert_eq(run("Round", 21, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
	cr_assert_eq(run("Round", 22, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_BFLOAT16, 0), 2.0f);
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_BFLOAT16, 1), -4.0f);
	free(out.data);
	cr_assert_eq(run("Round", 10, NULL, 0, &in, &out), CEP_EUNSUPPORTED);
}
