/*
 * test_ops_activation.c — the activations of kernels/cpu/activation.c that
 * joined after test_ops_elem.c's: ThresholdedRelu (opset 10 on, alpha)
 * and Mish (opset 18 on), called as the engine calls them (schema
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
