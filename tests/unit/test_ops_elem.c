/*
 * test_ops_elem.c — the elementwise operators of kernels/cpu (math.c,
 * activation.c, compare.c, variadic.c, powmod.c), each called the way the
 * engine calls it: the registry's schema for the opset, its inference,
 * the host kernel for the type through exec_host_eval. Values are checked
 * against libm in double or worked out by hand; each operator's type
 * history is checked at the opsets where it changed, and every refusal by
 * its message. test_ops_elem_model.c covers symbolic shapes and whole
 * models.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/exec.h"
#include "kernels/registry.h"

static struct op_tensor tensor(cep_dtype dt, int rank, const int64_t *dims, void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = rank };

	if (rank > 0)
		memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return t;
}

/* Infers and runs op on in; out[0..n_out) get their shapes and freshly
 * allocated data (free() them). Returns the first error. */
static int op_run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
		  const struct op_tensor *in, int n_in, struct op_tensor *out, int n_out)
{
	const struct op_node node = { "t", op, "", opset, n_attrs, attrs };
	struct op_infer x = { &node, n_in, n_out, in, out };
	const struct op_schema *s;
	const struct op_kernel *k;
	int ret;

	memset(out, 0, sizeof(*out) * (size_t)n_out);
	cep__clear_error();
	ret = op_schema_find("", op, opset, &s);
	if (ret < 0)
		return ret;
	ret = s->infer(&x);
	if (ret < 0)
		return ret;
	ret = op_kernel_find(s, opset, BACKEND_HOST, op_kernel_dtype(s, in, n_in, out, n_out), &k);
	if (ret < 0)
		return ret;
	return exec_host_eval(&node, k, in, n_in, out, n_out);
}

/* op_run() with no attributes and one output. */
static int run1(const char *op, int opset, const struct op_tensor *in, int n_in,
		struct op_tensor *out)
{
	return op_run(op, opset, NULL, 0, in, n_in, out, 1);
}

static struct op_attr attr_i(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr attr_f(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static struct op_attr attr_s(const char *name, const char *s)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_STRING, .s = s };
}

/* Asserts that ret is err and the last message is exactly msg. */
static void assert_refused(int ret, int err, const char *msg)
{
	cr_assert_eq(ret, err, "got %s (%s), expected %s", cep_err_name(ret), cep_last_error(),
		     cep_err_name(err));
	cr_assert_str_eq(cep_last_error(), msg);
}

static const int64_t d1[1] = { 1 }, d2[1] = { 2 }, d3[1] = { 3 }, d4[1] = { 4 };
static const int64_t d5[1] = { 5 }, d6[1] = { 6 };

/* ------------------------------------------------------------------ math.c */

Test(ops_elem, math_functions_match_libm)
{
	static const char *const ops[] = { "Sqrt", "Reciprocal", "Neg", "Abs", "Log", "Erf",
					   "Floor", "Ceil" };
	float x[6] = { -2.5f, -0.5f, 0.25f, 1.0f, 3.75f, 100.0f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d6, x), out;
	size_t k;
	int i;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		cr_assert_eq(run1(ops[k], 13, &in, 1, &out), 0, "%s: %s", ops[k], cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
		cr_assert_eq(out.rank, 1);
		cr_assert_eq(out.dims[0], 6);
		for (i = 0; i < 6; i++) {
			double v = x[i], want = 0, got = ((float *)out.data)[i];

			switch (k) {
			case 0: want = sqrt(v); break;
			case 1: want = 1.0 / v; break;
			case 2: want = -v; break;
			case 3: want = fabs(v); break;
			case 4: want = log(v); break;
			case 5: want = erf(v); break;
			case 6: want = floor(v); break;
			case 7: want = ceil(v); break;
			}
			if (isnan(want))
				cr_assert(isnan(got), "%s(%g) = %g, expected NaN", ops[k], v, got);
			else
				cr_assert_float_eq(got, want, 1e-6 * fabs(want) + 1e-7,
						   "%s(%g) = %.9g, expected %.9g", ops[k], v, got, want);
		}
		free(out.data);
	}
}

Test(ops_elem, math_edges_give_ieee_results)
{
	float x[3] = { 0.0f, -0.0f, -1.0f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d3, x), out;
	const float *o;

	cr_assert_eq(run1("Reciprocal", 13, &in, 1, &out), 0);
	o = out.data;
	cr_assert(isinf(o[0]) && o[0] > 0);
	cr_assert(isinf(o[1]) && o[1] < 0);
	free(out.data);
	cr_assert_eq(run1("Log", 13, &in, 1, &out), 0);
	o = out.data;
	cr_assert(isinf(o[0]) && o[0] < 0);
	cr_assert(isnan(o[2]));
	free(out.data);
	cr_assert_eq(run1("Sqrt", 13, &in, 1, &out), 0);
	cr_assert(isnan(((float *)out.data)[2]));
	free(out.data);
}

Test(ops_elem, neg_and_abs_of_integers_wrap)
{
	int8_t a8[4] = { -128, -5, 0, 127 };
	uint8_t u8[2] = { 200, 0 };
	int64_t a64[2] = { INT64_MIN, -7 };
	struct op_tensor in, out;

	in = tensor(CEP_DTYPE_INT8, 1, d4, a8);
	cr_assert_eq(run1("Neg", 13, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], -128, "-(-128) wraps at int8");
	cr_assert_eq(((int8_t *)out.data)[1], 5);
	cr_assert_eq(((int8_t *)out.data)[3], -127);
	free(out.data);
	cr_assert_eq(run1("Abs", 13, &in, 1, &out), 0);
	cr_assert_eq(((int8_t *)out.data)[0], -128);
	cr_assert_eq(((int8_t *)out.data)[1], 5);
	free(out.data);
	in = tensor(CEP_DTYPE_INT64, 1, d2, a64);
	cr_assert_eq(run1("Abs", 13, &in, 1, &out), 0);
	cr_assert_eq(((int64_t *)out.data)[0], INT64_MIN);
	cr_assert_eq(((int64_t *)out.data)[1], 7);
	free(out.data);
	in = tensor(CEP_DTYPE_UINT8, 1, d2, u8);
	cr_assert_eq(run1("Abs", 13, &in, 1, &out), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 200);
	free(out.data);
	assert_refused(run1("Neg", 13, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Neg: dtype uint8 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64, int64, int32, int16, int8)");
}

Test(ops_elem, math_types_follow_each_opset)
{
	uint16_t h[2] = { cpu_f32_to_bf16(2.5f), cpu_f32_to_bf16(-2.5f) };
	int32_t i32[3] = { 1, 4, -9 };
	struct op_tensor in = tensor(CEP_DTYPE_BFLOAT16, 1, d2, h), out;

	assert_refused(run1("Floor", 12, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Floor: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("Floor", 13, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[0]), 2.0f);
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[1]), -3.0f);
	free(out.data);

	/* Erf took integers from 9 to 12: erf truncated, 0 up to 3, +-1 after. */
	in = tensor(CEP_DTYPE_INT32, 1, d3, i32);
	cr_assert_eq(run1("Erf", 9, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[0], 0);
	cr_assert_eq(((int32_t *)out.data)[1], 1);
	cr_assert_eq(((int32_t *)out.data)[2], -1);
	free(out.data);
	assert_refused(run1("Erf", 13, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Erf: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64)");
	assert_refused(run1("Erf", 8, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Erf: opset 8 is not supported (supported 9-28)");
	assert_refused(run1("Sqrt", 13, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Sqrt: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64)");
}

Test(ops_elem, math_on_float16_and_empty_tensors)
{
	uint16_t h[3] = { cpu_f32_to_f16(0.1f), cpu_f32_to_f16(-4.0f), cpu_f32_to_f16(9.0f) };
	int64_t empty[2] = { 0, 3 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT16, 1, d3, h), out;

	cr_assert_eq(run1("Sqrt", 7, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[0], cpu_f32_to_f16(sqrtf(cpu_f16_to_f32(h[0]))),
		     "computed in float32, rounded once");
	cr_assert(isnan(cpu_f16_to_f32(((uint16_t *)out.data)[1])));
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[2]), 3.0f);
	free(out.data);
	in = tensor(CEP_DTYPE_FLOAT32, 2, empty, NULL);
	cr_assert_eq(run1("Ceil", 13, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.dims[1], 3);
	free(out.data);
}

/* ------------------------------------------------------------ activation.c */

Test(ops_elem, activations_use_attributes_and_defaults)
{
	float x[5] = { -3.0f, -0.5f, 0.0f, 0.5f, 3.0f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d5, x), out;
	struct op_attr a[2];
	int i;

	cr_assert_eq(run1("LeakyRelu", 16, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -0.03f, 1e-7, "default alpha 0.01");
	cr_assert_eq(((float *)out.data)[4], 3.0f);
	free(out.data);
	a[0] = attr_f("alpha", 0.5f);
	cr_assert_eq(op_run("LeakyRelu", 7, a, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[0], -1.5f);
	free(out.data);

	a[0] = attr_f("alpha", 2.0f);
	cr_assert_eq(op_run("Elu", 7, a, 1, &in, 1, &out, 1), 0);
	for (i = 0; i < 5; i++)
		cr_assert_float_eq(((float *)out.data)[i], x[i] < 0 ? 2.0 * expm1(x[i]) : x[i],
				   1e-6);
	free(out.data);
	cr_assert_eq(run1("Elu", 22, &in, 1, &out), 0);
	cr_assert_float_eq(((float *)out.data)[0], expm1(-3.0), 1e-6, "default alpha 1");
	free(out.data);

	cr_assert_eq(run1("HardSigmoid", 7, &in, 1, &out), 0);
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	cr_assert_float_eq(((float *)out.data)[1], 0.4f, 1e-7, "0.2 * -0.5 + 0.5");
	cr_assert_eq(((float *)out.data)[4], 1.0f);
	free(out.data);
	a[0] = attr_f("alpha", 0.5f);
	a[1] = attr_f("beta", 0.25f);
	cr_assert_eq(op_run("HardSigmoid", 22, a, 2, &in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[3], 0.5f);
	cr_assert_eq(((float *)out.data)[2], 0.25f);
	free(out.data);

	cr_assert_eq(run1("HardSwish", 14, &in, 1, &out), 0);
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	cr_assert_float_eq(((float *)out.data)[3], 0.5 * (0.5 / 6 + 0.5), 1e-7);
	cr_assert_eq(((float *)out.data)[4], 3.0f);
	free(out.data);
	assert_refused(run1("HardSwish", 13, &in, 1, &out), CEP_EUNSUPPORTED,
		       "HardSwish: opset 13 is not supported (supported 14-28)");
}

Test(ops_elem, softplus_never_overflows)
{
	float x[4] = { -100.0f, 0.0f, 2.0f, 100.0f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d4, x), out;
	const float *o;

	cr_assert_eq(run1("Softplus", 7, &in, 1, &out), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_float_eq(o[0], exp(-100.0), 1e-45);
	cr_assert_float_eq(o[1], log(2.0), 1e-7);
	cr_assert_float_eq(o[2], log1p(exp(2.0)), 1e-6);
	cr_assert_eq(o[3], 100.0f);
	free(out.data);
}

Test(ops_elem, gelu_exact_and_tanh_forms)
{
	float x[4] = { -3.0f, -0.5f, 1.0f, 2.5f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d4, x), out;
	struct op_attr a[1];
	int i;

	cr_assert_eq(run1("Gelu", 20, &in, 1, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(((float *)out.data)[i], 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0))),
				   1e-6);
	free(out.data);
	a[0] = attr_s("approximate", "tanh");
	cr_assert_eq(op_run("Gelu", 20, a, 1, &in, 1, &out, 1), 0);
	for (i = 0; i < 4; i++) {
		double v = x[i];
		double want = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));

		cr_assert_float_eq(((float *)out.data)[i], want, 1e-6);
	}
	free(out.data);
	a[0] = attr_s("approximate", "fast");
	assert_refused(op_run("Gelu", 20, a, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "Gelu: approximate is 'fast', expected 'none' or 'tanh'");
	assert_refused(run1("Gelu", 19, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Gelu: opset 19 is not supported (supported 20-28)");
}

Test(ops_elem, activation_attributes_of_the_wrong_type_are_refused)
{
	float x[1] = { -1.0f };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d1, x), out;
	struct op_attr a[1] = { attr_i("alpha", 1) };

	assert_refused(op_run("LeakyRelu", 16, a, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "LeakyRelu: attribute 'alpha' is of type int, expected float");
	a[0] = attr_i("min", 0);
	assert_refused(op_run("Clip", 7, a, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "Clip: attribute 'min' is of type int, expected float");
}

Test(ops_elem, activations_in_half_types)
{
	uint16_t h[3] = { cpu_f32_to_bf16(-2.0f), cpu_f32_to_bf16(0.5f), cpu_f32_to_bf16(8.0f) };
	struct op_tensor in = tensor(CEP_DTYPE_BFLOAT16, 1, d3, h), out;

	assert_refused(run1("LeakyRelu", 15, &in, 1, &out), CEP_EUNSUPPORTED,
		       "LeakyRelu: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("LeakyRelu", 16, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[0], cpu_f32_to_bf16(-2.0f * 0.01f));
	cr_assert_eq(((uint16_t *)out.data)[2], h[2]);
	free(out.data);
	assert_refused(run1("Softplus", 21, &in, 1, &out), CEP_EUNSUPPORTED,
		       "Softplus: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("HardSwish", 22, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[2]), 8.0f);
	free(out.data);
}

Test(ops_elem, prelu_broadcasts_the_slope_one_way)
{
	enum { N = 2, C = 3, H = 2, W = 2 };
	float x[N * C * H * W], s[C] = { 0.1f, 0.2f, 0.3f };
	int64_t dx[4] = { N, C, H, W }, ds[3] = { C, 1, 1 }, dw[1] = { 3 }, dbad[2] = { 2, 4 };
	struct op_tensor in[2], out;
	int n, c, i;

	for (i = 0; i < N * C * H * W; i++)
		x[i] = (float)(i % 5) - 2.0f;
	in[0] = tensor(CEP_DTYPE_FLOAT32, 4, dx, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 3, ds, s);
	cr_assert_eq(run1("PRelu", 16, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	for (n = 0; n < N; n++)
		for (c = 0; c < C; c++)
			for (i = 0; i < H * W; i++) {
				int at = (n * C + c) * H * W + i;
				float want = x[at] < 0 ? x[at] * s[c] : x[at];

				cr_assert_eq(((float *)out.data)[at], want, "at %d", at);
			}
	free(out.data);
	/* A [3] slope lines up with X's last dimension, which is 2 here. */
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, dw, s);
	assert_refused(run1("PRelu", 16, in, 2, &out), CEP_ESHAPE,
		       "PRelu: slope [3] does not broadcast to the input's shape [2,3,2,2]");
	in[0] = tensor(CEP_DTYPE_FLOAT32, 2, dbad, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 4, dx, x);
	assert_refused(run1("PRelu", 16, in, 2, &out), CEP_ESHAPE,
		       "PRelu: slope [2,3,2,2] does not broadcast to the input's shape [2,4]");
}

Test(ops_elem, prelu_takes_integers_from_opset_9)
{
	int32_t x[4] = { -4, -1, 0, 5 }, s[1] = { 3 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_INT32, 1, d4, x),
				   tensor(CEP_DTYPE_INT32, 1, d1, s) };
	struct op_tensor out;

	assert_refused(run1("PRelu", 8, in, 2, &out), CEP_EUNSUPPORTED,
		       "PRelu: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("PRelu", 9, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[0], -12);
	cr_assert_eq(((int32_t *)out.data)[1], -3);
	cr_assert_eq(((int32_t *)out.data)[3], 5);
	free(out.data);
}

Test(ops_elem, clip_bounds_are_attributes_before_opset_11)
{
	float x[5] = { -5.0f, -1.0f, 0.5f, 2.0f, NAN };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d5, x), out;
	struct op_attr a[2] = { attr_f("min", -1.5f), attr_f("max", 1.0f) };
	const float *o;

	cr_assert_eq(op_run("Clip", 10, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_eq(o[0], -1.5f);
	cr_assert_eq(o[1], -1.0f);
	cr_assert_eq(o[2], 0.5f);
	cr_assert_eq(o[3], 1.0f);
	cr_assert(isnan(o[4]), "NaN passes through");
	free(out.data);
	cr_assert_eq(op_run("Clip", 7, a + 1, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[0], -5.0f, "no min: unbounded below");
	cr_assert_eq(((float *)out.data)[3], 1.0f);
	free(out.data);
}

Test(ops_elem, clip_schemas_split_at_opset_11)
{
	const struct op_schema *s;

	cr_assert_eq(op_schema_find("", "Clip", 10, &s), 0);
	cr_assert_eq(s->max_in, 1, "bounds are attributes up to opset 10");
	cr_assert_eq(op_schema_find("", "Clip", 11, &s), 0);
	cr_assert_eq(s->min_in, 1);
	cr_assert_eq(s->max_in, 3, "and optional inputs from 11");
}

Test(ops_elem, clip_bounds_are_optional_inputs_from_opset_11)
{
	float x[5] = { -5.0f, -1.0f, 0.5f, 2.0f, INFINITY }, lo = -1.5f, hi = 1.0f, big = 3.0f;
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 1, d5, x),
				   tensor(CEP_DTYPE_FLOAT32, 0, NULL, &lo),
				   tensor(CEP_DTYPE_FLOAT32, 0, NULL, &hi) };
	struct op_tensor out;
	const float *o;

	cr_assert_eq(run1("Clip", 11, in, 3, &out), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_eq(o[0], -1.5f);
	cr_assert_eq(o[2], 0.5f);
	cr_assert_eq(o[4], 1.0f);
	free(out.data);
	/* min omitted: the type's lowest value; max alone still clips. */
	in[1] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
	cr_assert_eq(run1("Clip", 13, in, 3, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], -5.0f);
	cr_assert_eq(((float *)out.data)[3], 1.0f);
	free(out.data);
	/* No bounds at all: numeric_limits::max() is the default, per spec. */
	cr_assert_eq(run1("Clip", 13, in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[4], FLT_MAX);
	free(out.data);
	/* min above max: everything becomes max. */
	in[1] = tensor(CEP_DTYPE_FLOAT32, 0, NULL, &big);
	cr_assert_eq(run1("Clip", 13, in, 3, &out), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], 1.0f);
	free(out.data);
}

Test(ops_elem, clip_of_integers_from_opset_12)
{
	int8_t x[4] = { -128, -3, 7, 127 }, lo = -4, hi = 100;
	struct op_tensor in[3] = { tensor(CEP_DTYPE_INT8, 1, d4, x),
				   tensor(CEP_DTYPE_INT8, 0, NULL, &lo),
				   tensor(CEP_DTYPE_INT8, 0, NULL, &hi) };
	struct op_tensor out;

	assert_refused(run1("Clip", 11, in, 3, &out), CEP_EUNSUPPORTED,
		       "Clip: dtype int8 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("Clip", 12, in, 3, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], -4);
	cr_assert_eq(((int8_t *)out.data)[1], -3);
	cr_assert_eq(((int8_t *)out.data)[3], 100);
	free(out.data);
	cr_assert_eq(run1("Clip", 13, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[3], 127, "no max: int8's largest");
	free(out.data);
}

Test(ops_elem, clip_bounds_must_be_scalars_of_the_input_type)
{
	float x[2] = { 1, 2 }, lo2[2] = { 0, 0 }, lo1 = 1.5f;
	int32_t ilo = 0;
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 1, d2, x),
				   tensor(CEP_DTYPE_FLOAT32, 1, d2, lo2) };
	struct op_tensor out;

	assert_refused(run1("Clip", 13, in, 2, &out), CEP_ESHAPE,
		       "Clip: min must be a scalar, it has shape [2]");
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d1, &lo1);
	cr_assert_eq(run1("Clip", 13, in, 2, &out), 0, "a [1] bound is taken as a scalar");
	cr_assert_eq(((float *)out.data)[0], 1.5f);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_INT32, 0, NULL, &ilo);
	assert_refused(run1("Clip", 13, in, 2, &out), CEP_EDTYPE,
		       "Clip: input 1 is int32 but input 0 is float32");
}

/* --------------------------------------------------------------- compare.c */

Test(ops_elem, comparisons_broadcast_and_treat_nan_as_unordered)
{
	static const char *const ops[] = { "Equal", "Less", "LessOrEqual", "Greater",
					   "GreaterOrEqual" };
	float a[6] = { 1, 2, 3, NAN, -1, 5 }, b[3] = { 2, 2, NAN };
	int64_t da[2] = { 2, 3 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, da, a),
				   tensor(CEP_DTYPE_FLOAT32, 1, d3, b) };
	struct op_tensor out;
	size_t k;
	int i;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		cr_assert_eq(run1(ops[k], 16, in, 2, &out), 0, "%s: %s", ops[k], cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
		cr_assert_eq(out.rank, 2);
		for (i = 0; i < 6; i++) {
			float x = a[i], y = b[i % 3];
			bool want = k == 0 ? x == y : k == 1 ? x < y : k == 2 ? x <= y
				  : k == 3 ? x > y : x >= y;

			cr_assert_eq(((uint8_t *)out.data)[i], want, "%s at %d", ops[k], i);
		}
		free(out.data);
	}
}

Test(ops_elem, comparisons_of_integers_keep_their_signedness)
{
	int8_t a[3] = { -128, 0, 127 }, b[1] = { -1 };
	uint8_t ua[2] = { 200, 1 }, ub[2] = { 100, 255 };
	uint8_t ba[2] = { 1, 0 }, bb[2] = { 1, 1 };
	struct op_tensor in[2], out;

	in[0] = tensor(CEP_DTYPE_INT8, 1, d3, a);
	in[1] = tensor(CEP_DTYPE_INT8, 1, d1, b);
	cr_assert_eq(run1("Less", 13, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	cr_assert_eq(((uint8_t *)out.data)[2], 0);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_UINT8, 1, d2, ua);
	in[1] = tensor(CEP_DTYPE_UINT8, 1, d2, ub);
	cr_assert_eq(run1("Greater", 13, in, 2, &out), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 1, "200 > 100 unsigned");
	cr_assert_eq(((uint8_t *)out.data)[1], 0);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_BOOL, 1, d2, ba);
	in[1] = tensor(CEP_DTYPE_BOOL, 1, d2, bb);
	cr_assert_eq(run1("Equal", 7, in, 2, &out), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	cr_assert_eq(((uint8_t *)out.data)[1], 0);
	free(out.data);
}

Test(ops_elem, comparison_types_follow_each_opset)
{
	float f[1] = { 1 };
	int32_t i[1] = { 1 };
	uint16_t h[1] = { 0 };
	struct op_tensor in[2], out;

	in[0] = in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d1, f);
	assert_refused(run1("Equal", 10, in, 2, &out), CEP_EUNSUPPORTED,
		       "Equal: dtype float32 is not supported on the host backend "
		       "(supported: int64, int32, bool)");
	cr_assert_eq(run1("Equal", 11, in, 2, &out), 0);
	free(out.data);
	in[0] = in[1] = tensor(CEP_DTYPE_INT32, 1, d1, i);
	assert_refused(run1("Less", 8, in, 2, &out), CEP_EUNSUPPORTED,
		       "Less: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("Less", 9, in, 2, &out), 0);
	free(out.data);
	assert_refused(run1("GreaterOrEqual", 11, in, 2, &out), CEP_EUNSUPPORTED,
		       "GreaterOrEqual: opset 11 is not supported (supported 12-28)");
	in[0] = in[1] = tensor(CEP_DTYPE_BFLOAT16, 1, d1, h);
	assert_refused(run1("LessOrEqual", 15, in, 2, &out), CEP_EUNSUPPORTED,
		       "LessOrEqual: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64, int64, int32, int16, int8, "
		       "uint64, uint32, uint16, uint8)");
	cr_assert_eq(run1("LessOrEqual", 16, in, 2, &out), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d1, f);
	assert_refused(run1("Equal", 13, in, 2, &out), CEP_EDTYPE,
		       "Equal: input 1 is float32 but input 0 is bfloat16");
}

Test(ops_elem, logic_on_bools)
{
	uint8_t a[4] = { 0, 0, 1, 1 }, b[2] = { 0, 1 };
	int64_t da[2] = { 2, 2 };
	int32_t i[2] = { 0, 1 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_BOOL, 2, da, a),
				   tensor(CEP_DTYPE_BOOL, 1, d2, b) };
	struct op_tensor out;
	int k;

	cr_assert_eq(run1("And", 7, in, 2, &out), 0, "%s", cep_last_error());
	for (k = 0; k < 4; k++)
		cr_assert_eq(((uint8_t *)out.data)[k], a[k] && b[k % 2]);
	free(out.data);
	cr_assert_eq(run1("Or", 7, in, 2, &out), 0);
	for (k = 0; k < 4; k++)
		cr_assert_eq(((uint8_t *)out.data)[k], a[k] || b[k % 2]);
	free(out.data);
	cr_assert_eq(run1("Not", 1, in, 1, &out), 0, "Not runs at every opset");
	cr_assert_eq(out.rank, 2);
	for (k = 0; k < 4; k++)
		cr_assert_eq(((uint8_t *)out.data)[k], !a[k]);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_INT32, 1, d2, i);
	assert_refused(run1("Or", 7, in, 2, &out), CEP_EDTYPE, "Or: input 1 is int32, not bool");
}

Test(ops_elem, where_selects_across_three_broadcast_shapes)
{
	uint8_t cond[3] = { 1, 0, 1 };
	int64_t x[2] = { 10, 20 }, y[1] = { -1 };
	int64_t dc[1] = { 3 }, dx[2] = { 2, 1 };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_BOOL, 1, dc, cond),
				   tensor(CEP_DTYPE_INT64, 2, dx, x),
				   tensor(CEP_DTYPE_INT64, 0, NULL, y) };
	struct op_tensor out;
	int r, c;

	cr_assert_eq(run1("Where", 9, in, 3, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	for (r = 0; r < 2; r++)
		for (c = 0; c < 3; c++)
			cr_assert_eq(((int64_t *)out.data)[r * 3 + c], cond[c] ? x[r] : -1);
	free(out.data);
}

Test(ops_elem, where_moves_every_element_width)
{
	uint8_t cond[2] = { 0, 1 };
	uint16_t hx[2] = { 1, 2 }, hy[2] = { 3, 4 };
	int8_t bx[2] = { -1, -2 }, by[2] = { 5, 6 };
	float fx[2] = { 1.5f, 2.5f }, fy[2] = { -1.5f, -2.5f };
	struct op_tensor in[3], out;

	in[0] = tensor(CEP_DTYPE_BOOL, 1, d2, cond);
	in[1] = tensor(CEP_DTYPE_BFLOAT16, 1, d2, hx);
	in[2] = tensor(CEP_DTYPE_BFLOAT16, 1, d2, hy);
	assert_refused(run1("Where", 15, in, 3, &out), CEP_EUNSUPPORTED,
		       "Where: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64, int64, int32, int16, int8, "
		       "uint64, uint32, uint16, uint8, bool)");
	cr_assert_eq(run1("Where", 16, in, 3, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[0], 3);
	cr_assert_eq(((uint16_t *)out.data)[1], 2);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_INT8, 1, d2, bx);
	in[2] = tensor(CEP_DTYPE_INT8, 1, d2, by);
	cr_assert_eq(run1("Where", 16, in, 3, &out), 0);
	cr_assert_eq(((int8_t *)out.data)[0], 5);
	cr_assert_eq(((int8_t *)out.data)[1], -2);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fx);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fy);
	cr_assert_eq(run1("Where", 16, in, 3, &out), 0);
	cr_assert_eq(((float *)out.data)[0], -1.5f);
	cr_assert_eq(((float *)out.data)[1], 2.5f);
	free(out.data);
	in[2] = tensor(CEP_DTYPE_INT8, 1, d2, by);
	assert_refused(run1("Where", 16, in, 3, &out), CEP_EDTYPE,
		       "Where: input 2 is int8 but input 1 is float32");
	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fx);
	assert_refused(run1("Where", 16, in, 3, &out), CEP_EDTYPE,
		       "Where: the condition is float32, not bool");
}

/* -------------------------------------------------------------- variadic.c */

Test(ops_elem, variadic_ops_broadcast_all_inputs_together)
{
	static const char *const ops[] = { "Min", "Max", "Sum", "Mean" };
	float a[2] = { 1, 5 }, b[3] = { 4, -2, 3 }, c[1] = { 2 };
	int64_t da[2] = { 2, 1 }, dc[2] = { 1, 1 };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 2, da, a),
				   tensor(CEP_DTYPE_FLOAT32, 1, d3, b),
				   tensor(CEP_DTYPE_FLOAT32, 2, dc, c) };
	struct op_tensor out;
	size_t k;
	int r, j;

	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		cr_assert_eq(run1(ops[k], 13, in, 3, &out), 0, "%s: %s", ops[k], cep_last_error());
		cr_assert_eq(out.rank, 2);
		cr_assert_eq(out.dims[0], 2);
		cr_assert_eq(out.dims[1], 3);
		for (r = 0; r < 2; r++)
			for (j = 0; j < 3; j++) {
				float x = a[r], y = b[j], z = c[0];
				float want = k == 0 ? fminf(x, fminf(y, z))
					   : k == 1 ? fmaxf(x, fmaxf(y, z))
					   : k == 2 ? x + y + z : (x + y + z) / 3;

				cr_assert_float_eq(((float *)out.data)[r * 3 + j], want, 1e-6,
						   "%s at %d,%d", ops[k], r, j);
			}
		free(out.data);
	}
}

Test(ops_elem, variadic_one_input_is_a_copy)
{
	float a[3] = { 1, -2, 3 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d3, a), out;

	cr_assert_eq(run1("Mean", 13, &in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, a, sizeof(a));
	free(out.data);
}

Test(ops_elem, min_max_of_integers_and_nan)
{
	int8_t a[3] = { -128, 5, 7 }, b[3] = { 0, 127, -3 };
	float fa[2] = { NAN, 1 }, fb[2] = { 0, NAN };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_INT8, 1, d3, a),
				   tensor(CEP_DTYPE_INT8, 1, d3, b) };
	struct op_tensor out;

	assert_refused(run1("Max", 11, in, 2, &out), CEP_EUNSUPPORTED,
		       "Max: dtype int8 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run1("Max", 12, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], 0);
	cr_assert_eq(((int8_t *)out.data)[1], 127);
	cr_assert_eq(((int8_t *)out.data)[2], 7);
	free(out.data);
	cr_assert_eq(run1("Min", 13, in, 2, &out), 0);
	cr_assert_eq(((int8_t *)out.data)[0], -128);
	cr_assert_eq(((int8_t *)out.data)[2], -3);
	free(out.data);
	assert_refused(run1("Sum", 13, in, 2, &out), CEP_EUNSUPPORTED,
		       "Sum: dtype int8 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64)");
	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fa);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fb);
	cr_assert_eq(run1("Max", 13, in, 2, &out), 0);
	cr_assert(isnan(((float *)out.data)[0]), "NaN propagates from the first input");
	cr_assert(isnan(((float *)out.data)[1]), "and from a later one");
	free(out.data);
}

Test(ops_elem, sum_of_float16_is_rounded_once)
{
	/* In float16, 2048 + 1 rounds back to 2048 (spacing 2, ties to even);
	 * 2048 + 1 + 1 = 2050 is exact. */
	uint16_t a[1] = { cpu_f32_to_f16(2048.0f) }, b[1] = { cpu_f32_to_f16(1.0f) };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT16, 1, d1, a),
				   tensor(CEP_DTYPE_FLOAT16, 1, d1, b),
				   tensor(CEP_DTYPE_FLOAT16, 1, d1, b) };
	struct op_tensor out;

	cr_assert_eq(run1("Sum", 8, in, 3, &out), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[0]), 2050.0f);
	free(out.data);
	cr_assert_eq(run1("Mean", 13, in, 3, &out), 0);
	cr_assert_eq(((uint16_t *)out.data)[0], cpu_f32_to_f16(2050.0f / 3));
	free(out.data);
}

Test(ops_elem, variadic_before_opset_8_needs_one_shape)
{
	float a[2] = { 1, 2 }, b[3] = { 1, 2, 3 };
	int64_t da[2] = { 2, 1 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, da, a),
				   tensor(CEP_DTYPE_FLOAT32, 1, d3, b) };
	struct op_tensor out;

	assert_refused(run1("Sum", 7, in, 2, &out), CEP_ESHAPE,
		       "Sum: before opset 8 all inputs need one shape; input 0 is [2,1], input 1 is [3]");
	cr_assert_eq(run1("Sum", 8, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d3, b);
	cr_assert_eq(run1("Max", 7, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, b, sizeof(b));
	free(out.data);
}

Test(ops_elem, variadic_refuses_an_omitted_input)
{
	float a[1] = { 1 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 1, d1, a),
				   { .dtype = CEP_DTYPE_UNDEFINED } };
	struct op_tensor out;

	assert_refused(run1("Mean", 13, in, 2, &out), CEP_EMODEL, "Mean: input 1 is omitted");
}

/* ---------------------------------------------------------------- powmod.c */

Test(ops_elem, pow_of_floats_broadcasts)
{
	float x[6] = { 1, 2, 3, -2, 0.5f, 4 }, y[3] = { 2, 0.5f, -1 }, two = 2;
	int64_t dx[2] = { 2, 3 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   tensor(CEP_DTYPE_FLOAT32, 1, d3, y) };
	struct op_tensor out;
	int i;

	cr_assert_eq(run1("Pow", 7, in, 2, &out), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++) {
		double want = pow(x[i], y[i % 3]), got = ((float *)out.data)[i];

		if (isnan(want))
			cr_assert(isnan(got), "at %d", i);
		else
			cr_assert_float_eq(got, want, 1e-6, "at %d", i);
	}
	free(out.data);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 0, NULL, &two);
	cr_assert_eq(run1("Pow", 15, in, 2, &out), 0);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((float *)out.data)[i], x[i] * x[i]);
	free(out.data);
}

Test(ops_elem, pow_exponent_types_follow_each_opset)
{
	float x[3] = { 2, -3, 0.5f };
	int64_t e[3] = { 3, 2, -2 };
	uint16_t eb[3] = { cpu_f32_to_bf16(1), cpu_f32_to_bf16(2), cpu_f32_to_bf16(3) };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 1, d3, x),
				   tensor(CEP_DTYPE_INT64, 1, d3, e) };
	struct op_tensor out;

	assert_refused(run1("Pow", 11, in, 2, &out), CEP_EDTYPE,
		       "Pow: input 1 is int64 but input 0 is float32");
	cr_assert_eq(run1("Pow", 12, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(((float *)out.data)[0], 8.0f);
	cr_assert_eq(((float *)out.data)[1], 9.0f);
	cr_assert_eq(((float *)out.data)[2], 4.0f);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_BFLOAT16, 1, d3, eb);
	assert_refused(run1("Pow", 14, in, 2, &out), CEP_EDTYPE,
		       "Pow: the exponent is bfloat16, expected one of float32, float16, "
		       "float64, int64, int32, int16, int8, uint64, uint32, uint16, uint8");
	cr_assert_eq(run1("Pow", 15, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[2], 0.125f);
	free(out.data);
}

Test(ops_elem, pow_of_integers_is_exact_and_wraps)
{
	int32_t x[6] = { 3, 2, 2, 1, -1, 0 }, e[6] = { 21, -1, 0, -5, -3, -1 };
	int64_t bx[2] = { 3, 2 };
	float fe[2] = { 2.5f, 0.5f };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_INT32, 1, d6, x),
				   tensor(CEP_DTYPE_INT32, 1, d6, e) };
	struct op_tensor out;
	const int32_t *o;

	cr_assert_eq(run1("Pow", 13, in, 2, &out), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_eq(o[0], (int32_t)(uint32_t)UINT64_C(10460353203), "3^21 wraps at int32");
	cr_assert_eq(o[1], 0, "2^-1 truncates to 0");
	cr_assert_eq(o[2], 1);
	cr_assert_eq(o[3], 1);
	cr_assert_eq(o[4], -1);
	cr_assert_eq(o[5], 0);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_INT64, 1, d2, bx);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d2, fe);
	cr_assert_eq(run1("Pow", 13, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(((int64_t *)out.data)[0], 15, "3^2.5 = 15.59 truncated");
	cr_assert_eq(((int64_t *)out.data)[1], 1);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_INT32, 1, d2, x);
	in[1] = tensor(CEP_DTYPE_INT32, 1, d2, e);
	assert_refused(run1("Pow", 11, in, 2, &out), CEP_EUNSUPPORTED,
		       "Pow: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
}

Test(ops_elem, mod_of_integers_floors_or_truncates)
{
	int64_t a[8] = { -4, 7, 5, 4, -7, 8, 9, INT64_MIN }, b[8] = { 2, -3, 8, -2, 3, 5, 0, -1 };
	int64_t floor_mod[8] = { 0, -2, 5, 0, 2, 3, 0, 0 }, trunc_mod[8] = { 0, 1, 5, 0, -1, 3, 0, 0 };
	int64_t d8[1] = { 8 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_INT64, 1, d8, a),
				   tensor(CEP_DTYPE_INT64, 1, d8, b) };
	struct op_attr fm[1] = { attr_i("fmod", 1) };
	struct op_tensor out;

	cr_assert_eq(run1("Mod", 10, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, floor_mod, sizeof(floor_mod));
	free(out.data);
	cr_assert_eq(op_run("Mod", 13, fm, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, trunc_mod, sizeof(trunc_mod));
	free(out.data);
	fm[0] = attr_i("fmod", 2);
	assert_refused(op_run("Mod", 13, fm, 1, in, 2, &out, 1), CEP_EMODEL,
		       "Mod: fmod is 2, expected 0 or 1");
	assert_refused(run1("Mod", 9, in, 2, &out), CEP_EUNSUPPORTED,
		       "Mod: opset 9 is not supported (supported 10-28)");
}

Test(ops_elem, mod_of_floats_by_opset)
{
	float a[8] = { -4.5f, 7.5f, 0.0f, -0.0f, -3.0f, 1.0f, INFINITY, 1.0f };
	float b[8] = { 2.0f, -2.0f, -2.0f, 2.0f, INFINITY, -INFINITY, 2.0f, 0.0f };
	int64_t d8[1] = { 8 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 1, d8, a),
				   tensor(CEP_DTYPE_FLOAT32, 1, d8, b) };
	struct op_attr fm[1] = { attr_i("fmod", 1) };
	struct op_tensor out;
	const float *o;

	cr_assert_eq(op_run("Mod", 13, fm, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_eq(o[0], -0.5f);
	cr_assert_eq(o[1], 1.5f);
	cr_assert_eq(o[4], -3.0f);
	cr_assert(isnan(o[6]) && isnan(o[7]));
	free(out.data);
	assert_refused(run1("Mod", 27, in, 2, &out), CEP_EMODEL,
		       "Mod: fmod=0 takes integers before opset 28, not float32 (set fmod=1)");
	cr_assert_eq(run1("Mod", 28, in, 2, &out), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert_eq(o[0], 1.5f);
	cr_assert_eq(o[1], -0.5f);
	cr_assert(o[2] == 0.0f && signbit(o[2]), "a zero takes the divisor's sign");
	cr_assert(o[3] == 0.0f && !signbit(o[3]));
	cr_assert(isinf(o[4]) && o[4] > 0, "-3 mod +inf is +inf");
	cr_assert(isinf(o[5]) && o[5] < 0, "1 mod -inf is -inf");
	cr_assert(isnan(o[6]) && isnan(o[7]));
	free(out.data);
}
