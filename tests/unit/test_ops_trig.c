/*
 * test_ops_trig.c — the trigonometric and hyperbolic functions of
 * kernels/cpu/trig.c (Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh,
 * Acosh, Atanh), each called as the engine calls it (schema inference,
 * then the host kernel through exec_host_eval): values against libm in
 * double, the IEEE results at the edges of each domain, float16 and
 * bfloat16 rounded once from float32, the type sets of opsets 7, 9 and 22,
 * and every refusal by its message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const trig_ops[] = { "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
					"Sinh", "Cosh", "Asinh", "Acosh", "Atanh" };

/* The function of trig_ops[k] in double, the reference. */
static double trig_ref(size_t k, double v)
{
	switch (k) {
	case 0: return sin(v);
	case 1: return cos(v);
	case 2: return tan(v);
	case 3: return asin(v);
	case 4: return acos(v);
	case 5: return atan(v);
	case 6: return sinh(v);
	case 7: return cosh(v);
	case 8: return asinh(v);
	case 9: return acosh(v);
	default: return atanh(v);
	}
}

/* The first opset of trig_ops[k]. */
static int trig_since(size_t k)
{
	return k < 6 ? 7 : 9;
}

/* Runs op (no attributes) on in; out gets fresh data. */
static int run1(const char *op, int opset, const struct op_tensor *in, struct op_tensor *out)
{
	cep__clear_error();
	return oh_run(op, opset, NULL, 0, in, 1, out, 1);
}

/* Asserts that ret is err and the last message is exactly msg. */
static void assert_refused(int ret, int err, const char *msg)
{
	cr_assert_eq(ret, err, "got %s (%s), expected %s", cep_err_name(ret), cep_last_error(),
		     cep_err_name(err));
	cr_assert_str_eq(cep_last_error(), msg);
}

/* Whether got is want within a few units in float32's last place (or
 * both NaN, or the same infinity). */
static bool close_to(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= 4e-7 * fabs(want) + 1e-37;
}

Test(ops_trig, values_match_libm_in_double)
{
	/* Inside and outside every domain: |x| <= 1 for Asin, Acos and
	 * Atanh, x >= 1 for Acosh, and beyond. */
	static const float x[] = { -20.0f, -3.0f, -1.5f, -1.0f, -0.75f, -0.1f, 0.0f, 1e-3f,
				   0.3f, 0.9999f, 1.0f, 1.25f, 2.0f, 10.0f, 88.0f };
	int64_t dims[1] = { (int64_t)N_OF(x) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, dims, (void *)x), out;
	size_t k, i;

	for (k = 0; k < N_OF(trig_ops); k++) {
		cr_assert_eq(run1(trig_ops[k], 22, &in, &out), 0, "%s: %s", trig_ops[k],
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
		cr_assert_eq(out.rank, 1);
		cr_assert_eq(out.dims[0], dims[0]);
		for (i = 0; i < N_OF(x); i++) {
			double got = ((float *)out.data)[i];
			double want = (double)(float)trig_ref(k, x[i]);

			cr_assert(close_to(got, want), "%s(%g) = %.9g, expected %.9g", trig_ops[k],
				  (double)x[i], got, want);
		}
		free(out.data);
	}
}

Test(ops_trig, the_spec_examples)
{
	/* test_sin_example and its kin: [-1, 0, 1] (Acosh's: [10, np.e, 1];
	 * Atanh's: [-0.5, 0, 0.5]). */
	float x[3] = { -1.0f, 0.0f, 1.0f }, xa[3] = { 10.0f, 2.7182817f, 1.0f };
	float xt[3] = { -0.5f, 0.0f, 0.5f };
	int64_t d3[1] = { 3 };
	struct op_tensor in, out;
	size_t k;
	int i;

	for (k = 0; k < N_OF(trig_ops); k++) {
		const float *v = k == 9 ? xa : k == 10 ? xt : x;

		in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, (void *)v);
		cr_assert_eq(run1(trig_ops[k], trig_since(k), &in, &out), 0, "%s: %s", trig_ops[k],
			     cep_last_error());
		for (i = 0; i < 3; i++)
			cr_assert(close_to(((float *)out.data)[i], (float)trig_ref(k, v[i])),
				  "%s(%g)", trig_ops[k], (double)v[i]);
		free(out.data);
	}
}

Test(ops_trig, domain_edges_give_ieee_results)
{
	static const struct {
		const char *op;
		float x, want;        /* want NaN: any NaN */
	} cases[] = {
		{ "Sin", INFINITY, NAN }, { "Cos", -INFINITY, NAN }, { "Tan", INFINITY, NAN },
		{ "Sin", NAN, NAN }, { "Atan", NAN, NAN }, { "Cosh", NAN, NAN },
		{ "Asin", 1.0001f, NAN }, { "Acos", -2.0f, NAN }, { "Acosh", 0.5f, NAN },
		{ "Atanh", 1.5f, NAN }, { "Atanh", 1.0f, INFINITY }, { "Atanh", -1.0f, -INFINITY },
		{ "Acosh", 1.0f, 0.0f }, { "Acos", 1.0f, 0.0f },
		{ "Atan", INFINITY, 1.5707964f }, { "Atan", -INFINITY, -1.5707964f },
		{ "Sinh", 100.0f, INFINITY }, { "Sinh", -100.0f, -INFINITY },
		{ "Cosh", -100.0f, INFINITY }, { "Cosh", 0.0f, 1.0f },
		{ "Asinh", -INFINITY, -INFINITY }, { "Acosh", INFINITY, INFINITY },
		{ "Sinh", INFINITY, INFINITY }, { "Cosh", -INFINITY, INFINITY },
	};
	int64_t d1[1] = { 1 };
	struct op_tensor in, out;
	size_t c;

	for (c = 0; c < N_OF(cases); c++) {
		float x = cases[c].x, got;

		in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, &x);
		cr_assert_eq(run1(cases[c].op, 13, &in, &out), 0, "%s", cep_last_error());
		got = ((float *)out.data)[0];
		if (isnan(cases[c].want))
			cr_assert(isnan(got), "%s(%g) = %g, expected NaN", cases[c].op, (double)x,
				  (double)got);
		else
			cr_assert_eq(got, cases[c].want, "%s(%g) = %.9g, expected %.9g", cases[c].op,
				     (double)x, (double)got, (double)cases[c].want);
		free(out.data);
	}
}

Test(ops_trig, odd_functions_keep_the_sign_of_zero)
{
	static const char *const odd[] = { "Sin", "Tan", "Asin", "Atan", "Sinh", "Asinh",
					   "Atanh" };
	float x[2] = { 0.0f, -0.0f };
	int64_t d2[1] = { 2 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, x), out;
	size_t k;

	for (k = 0; k < N_OF(odd); k++) {
		cr_assert_eq(run1(odd[k], 22, &in, &out), 0, "%s", cep_last_error());
		cr_assert(((float *)out.data)[0] == 0.0f && !signbit(((float *)out.data)[0]),
			  "%s(0)", odd[k]);
		cr_assert(((float *)out.data)[1] == 0.0f && signbit(((float *)out.data)[1]),
			  "%s(-0) is -0", odd[k]);
		free(out.data);
	}
}

Test(ops_trig, half_types_are_computed_in_float32_and_rounded_once)
{
	static const float x[] = { -2.5f, -0.4f, 0.0f, 0.7f, 1.0f, 3.0f, 12.0f };
	int64_t dims[1] = { (int64_t)N_OF(x) };
	uint16_t h[N_OF(x)], b[N_OF(x)];
	struct op_tensor in, out;
	size_t k, i;

	for (i = 0; i < N_OF(x); i++) {
		h[i] = cpu_f32_to_f16(x[i]);
		b[i] = cpu_f32_to_bf16(x[i]);
	}
	for (k = 0; k < N_OF(trig_ops); k++) {
		in = oh_tensor(CEP_DTYPE_FLOAT16, 1, dims, h);
		cr_assert_eq(run1(trig_ops[k], trig_since(k), &in, &out), 0, "%s: %s", trig_ops[k],
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
		for (i = 0; i < N_OF(x); i++) {
			uint16_t want = cpu_f32_to_f16((float)trig_ref(k, cpu_f16_to_f32(h[i])));
			uint16_t got = ((uint16_t *)out.data)[i];
			float wf = cpu_f16_to_f32(want), gf = cpu_f16_to_f32(got);

			/* float32's last bit may round the half either way at a tie,
			 * never further than one unit of the half. */
			cr_assert(got == want || (isnan(wf) && isnan(gf)) ||
				  abs((int)got - (int)want) <= 1,
				  "%s(%g) float16: %#x, expected %#x", trig_ops[k], (double)x[i],
				  got, want);
		}
		free(out.data);
		in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, dims, b);
		cr_assert_eq(run1(trig_ops[k], 22, &in, &out), 0, "%s: %s", trig_ops[k],
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
		for (i = 0; i < N_OF(x); i++) {
			uint16_t want = cpu_f32_to_bf16((float)trig_ref(k, cpu_bf16_to_f32(b[i])));
			uint16_t got = ((uint16_t *)out.data)[i];

			cr_assert(got == want || (isnan(cpu_bf16_to_f32(want)) &&
						  isnan(cpu_bf16_to_f32(got))) ||
				  abs((int)got - (int)want) <= 1,
				  "%s(%g) bfloat16: %#x, expected %#x", trig_ops[k], (double)x[i],
				  got, want);
		}
		free(out.data);
	}
}

Test(ops_trig, types_and_opsets_follow_the_spec)
{
	uint16_t b[1] = { cpu_f32_to_bf16(0.5f) };
	int32_t i32[1] = { 1 };
	int64_t d1[1] = { 1 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, d1, b), out;
	char msg[160];
	size_t k;

	for (k = 0; k < N_OF(trig_ops); k++) {
		snprintf(msg, sizeof(msg), "%s: dtype bfloat16 is not supported on the host backend "
			 "(supported: float32, float16, float64)", trig_ops[k]);
		in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, d1, b);
		assert_refused(run1(trig_ops[k], 21, &in, &out), CEP_EUNSUPPORTED, msg);
		cr_assert_eq(run1(trig_ops[k], 22, &in, &out), 0, "%s", cep_last_error());
		free(out.data);
		cr_assert_eq(run1(trig_ops[k], 28, &in, &out), 0, "%s", cep_last_error());
		free(out.data);
		snprintf(msg, sizeof(msg), "%s: opset %d is not supported (supported %d-28)",
			 trig_ops[k], trig_since(k) - 1, trig_since(k));
		assert_refused(run1(trig_ops[k], trig_since(k) - 1, &in, &out), CEP_EUNSUPPORTED,
			       msg);
		snprintf(msg, sizeof(msg), "%s: dtype int32 is not supported on the host backend "
			 "(supported: float32, float16, bfloat16, float64)", trig_ops[k]);
		in = oh_tensor(CEP_DTYPE_INT32, 1, d1, i32);
		assert_refused(run1(trig_ops[k], 22, &in, &out), CEP_EUNSUPPORTED, msg);
	}
}

Test(ops_trig, shapes_pass_through)
{
	float s = 0.5f;
	int64_t empty[2] = { 0, 3 }, dims[3] = { 2, 1, 3 };
	float x[6] = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s), out;
	int i;

	cr_assert_eq(run1("Cos", 7, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], cos(0.5), 1e-7);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, dims, x);
	cr_assert_eq(run1("Asinh", 9, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	for (i = 0; i < 3; i++)
		cr_assert_eq(out.dims[i], dims[i]);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, empty, NULL);
	cr_assert_eq(run1("Tan", 13, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.dims[1], 3);
	free(out.data);
}
