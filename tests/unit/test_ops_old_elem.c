/*
 * test_ops_old_elem.c — the elementwise operators at the opsets before 7
 * (kernels/legacy.h and the families of kernels/cpu): the broadcast and
 * axis attributes of the binary operators, PRelu's slope per channel,
 * opset 1's consumed_inputs, the variadic operators' one shape, Clip's
 * attributes and the type sets of opsets 1 and 6. Each node is run the
 * way the engine runs one (tests/unit/ops_harness.h) and checked against
 * values worked out from the specification's text, index by index.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ops_harness.h"

/* A float32 tensor of shape dims (rank) holding 0, 1, 2, ... times step
 * plus base; malloc'd data. */
static struct op_tensor seq(int rank, const int64_t *dims, float base, float step)
{
	struct op_tensor t = oh_tensor(CEP_DTYPE_FLOAT32, rank, dims, NULL);
	int64_t n = 1, i;
	float *v;

	for (i = 0; i < rank; i++)
		n *= dims[i];
	v = malloc((size_t)(n ? n : 1) * sizeof(float));
	for (i = 0; i < n; i++)
		v[i] = base + step * (float)i;
	t.data = v;
	return t;
}

static void assert_dims(const struct op_tensor *t, int rank, const int64_t *dims)
{
	int i;

	cr_assert_eq(t->rank, rank, "rank %d, want %d", t->rank, rank);
	for (i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "dim %d is %lld, want %lld", i,
			     (long long)t->dims[i], (long long)dims[i]);
}

/* Asserts that ret is err and the last message contains part. */
static void assert_refused(int ret, int err, const char *part)
{
	cr_assert_eq(ret, err, "got %d (%s), want %d", ret, cep_last_error(), err);
	cr_assert(strstr(cep_last_error(), part) != NULL, "message '%s' lacks '%s'",
		  cep_last_error(), part);
}

/* ------------------------------------------------------------- broadcast */

/* Add-6's own examples: B of (3, 4) from axis 1 of A (2, 3, 4, 5) adds
 * B[i, j] at every A[n, i, j, k]. */
Test(old_broadcast, add6_b_from_axis_1)
{
	const int64_t da[4] = { 2, 3, 4, 5 }, db[2] = { 3, 4 };
	const struct op_attr attrs[2] = { oh_int("broadcast", 1), oh_int("axis", 1) };
	struct op_tensor in[2] = { seq(4, da, 0.0f, 1.0f), seq(2, db, 1000.0f, 10.0f) };
	struct op_tensor out;
	const float *a = in[0].data, *b = in[1].data, *o;
	int n, i, j, k;

	cr_assert_eq(oh_run("Add", 6, attrs, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 4, da);
	o = out.data;
	for (n = 0; n < 2; n++)
		for (i = 0; i < 3; i++)
			for (j = 0; j < 4; j++)
				for (k = 0; k < 5; k++) {
					int at = ((n * 3 + i) * 4 + j) * 5 + k;

					cr_assert_float_eq(o[at], a[at] + b[i * 4 + j], 0.0f);
				}
	free(out.data);
	free(in[0].data);
	free(in[1].data);
}

/* Without axis B's dims end A's (suffix matching), and a B of (2,) at
 * axis 0 goes down the first dim: Sub and Mul, Div at opset 1. */
Test(old_broadcast, suffix_and_axis_0)
{
	const int64_t da[4] = { 2, 3, 4, 5 }, d45[2] = { 4, 5 }, d2[1] = { 2 };
	const struct op_attr bc = oh_int("broadcast", 1);
	const struct op_attr ax0[2] = { oh_int("broadcast", 1), oh_int("axis", 0) };
	const int64_t ci[2] = { 0, 1 };
	const struct op_attr legacy[3] = { oh_int("broadcast", 1), oh_int("axis", 0),
					   oh_ints("consumed_inputs", 2, ci) };
	struct op_tensor a = seq(4, da, 1.0f, 1.0f);
	struct op_tensor b45 = seq(2, d45, 0.5f, 0.25f), b2 = seq(1, d2, 2.0f, 2.0f);
	struct op_tensor in[2], out;
	const float *pa = a.data, *p45 = b45.data, *p2 = b2.data, *o;
	int e;

	in[0] = a;
	in[1] = b45;
	cr_assert_eq(oh_run("Sub", 6, &bc, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 120; e++)
		cr_assert_float_eq(o[e], pa[e] - p45[e % 20], 0.0f);
	free(out.data);
	in[1] = b2;
	cr_assert_eq(oh_run("Mul", 6, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 120; e++)
		cr_assert_float_eq(o[e], pa[e] * p2[e / 60], 0.0f);
	free(out.data);
	/* Opset 1, with its consumed_inputs, means the same. */
	cr_assert_eq(oh_run("Div", 1, legacy, 3, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 120; e++)
		cr_assert_float_eq(o[e], pa[e] / p2[e / 60], 1e-6f);
	free(out.data);
	free(a.data);
	free(b45.data);
	free(b2.data);
}

/* One element of any rank up to A's broadcasts whatever axis says. */
Test(old_broadcast, one_element)
{
	const int64_t da[2] = { 2, 3 }, d11[2] = { 1, 1 };
	const struct op_attr attrs[2] = { oh_int("broadcast", 1), oh_int("axis", 1) };
	struct op_tensor in[2] = { seq(2, da, 0.0f, 1.0f), seq(2, d11, 7.0f, 0.0f) };
	struct op_tensor out;
	const float *o;
	int e;

	cr_assert_eq(oh_run("Add", 6, attrs, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, da);
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_float_eq(o[e], (float)e + 7.0f, 0.0f);
	free(out.data);
	free(in[0].data);
	free(in[1].data);
}

/* What the old rule does not allow is refused, naming the opset: other
 * shapes without broadcast=1, a B that is no run of A's dims (1-dim
 * expansion "doesn't work yet"), a B of higher rank, an axis past A. */
Test(old_broadcast, refusals)
{
	const int64_t da[2] = { 2, 3 }, d3[1] = { 3 }, d13[2] = { 1, 3 }, d2[1] = { 2 };
	const int64_t d123[3] = { 1, 2, 3 };
	const struct op_attr bc = oh_int("broadcast", 1);
	const struct op_attr ax[2] = { oh_int("broadcast", 1), oh_int("axis", 1) };
	struct op_tensor a = oh_tensor(CEP_DTYPE_FLOAT32, 2, da, NULL);
	struct op_tensor in[2] = { a, oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, NULL) };
	struct op_tensor out;

	assert_refused(oh_infer("Add", 6, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		       "Add (opset 6): B of shape [3] has another rank than (broadcast=0) A of shape [2,3]");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d13, NULL);
	assert_refused(oh_infer("Mul", 5, &bc, 1, in, 2, &out, 1), CEP_ESHAPE,
		       "is not a run of the dims, from axis 0, of A of shape [2,3]");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, NULL);
	assert_refused(oh_infer("Sub", 6, &bc, 1, in, 2, &out, 1), CEP_ESHAPE,
		       "B of shape [2] is not a run");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, d123, NULL);
	assert_refused(oh_infer("Div", 6, &bc, 1, in, 2, &out, 1), CEP_ESHAPE,
		       "has a higher rank than");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, NULL);
	assert_refused(oh_infer("Add", 6, ax, 2, in, 2, &out, 1), CEP_ESHAPE,
		       "is not a run of the dims, from axis 1");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, NULL);
	cr_assert_eq(oh_infer("Add", 6, ax, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, da);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, da, NULL);
	assert_refused(oh_infer("Add", 6, ax, 2, in, 2, &out, 1), CEP_EMODEL,
		       "Add (opset 6): axis 1 does not fit B of rank 2 in A of rank 2");
	/* Opset 7's numpy broadcasting takes [2,3] + [1,3] as it comes. */
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d13, NULL);
	cr_assert_eq(oh_infer("Mul", 7, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
}

/* Comparisons and logic of opset 1 broadcast the same way; Pow too. */
Test(old_broadcast, compare_logic_pow)
{
	const int64_t da[2] = { 2, 3 }, d2[1] = { 2 };
	const struct op_attr ax0[2] = { oh_int("broadcast", 1), oh_int("axis", 0) };
	float av[6] = { 1, 2, 3, 4, 5, 6 }, bv[2] = { 2, 5 };
	int32_t ai[6] = { 1, 2, 3, 4, 5, 6 }, bi[2] = { 2, 5 };
	uint8_t la[6] = { 1, 0, 1, 0, 1, 1 }, lb[2] = { 1, 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, da, av),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, bv) };
	struct op_tensor out;
	const uint8_t *o;
	const float *of;
	int e;

	cr_assert_eq(oh_run("Greater", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], av[e] > bv[e / 3], "Greater at %d", e);
	free(out.data);
	cr_assert_eq(oh_run("Less", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], av[e] < bv[e / 3], "Less at %d", e);
	free(out.data);
	cr_assert_eq(oh_run("Pow", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	of = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_float_eq(of[e], powf(av[e], bv[e / 3]), 1e-3f, "Pow at %d", e);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT32, 2, da, ai);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, d2, bi);
	cr_assert_eq(oh_run("Equal", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], ai[e] == bi[e / 3], "Equal at %d", e);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_BOOL, 2, da, la);
	in[1] = oh_tensor(CEP_DTYPE_BOOL, 1, d2, lb);
	cr_assert_eq(oh_run("And", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], la[e] && lb[e / 3], "And at %d", e);
	free(out.data);
	cr_assert_eq(oh_run("Or", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], la[e] || lb[e / 3], "Or at %d", e);
	free(out.data);
	cr_assert_eq(oh_run("Xor", 1, ax0, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 6; e++)
		cr_assert_eq(o[e], la[e] != lb[e / 3], "Xor at %d", e);
	free(out.data);
}

/* ----------------------------------------------------------------- types */

/* Opset 1 knew only float types (of those cudaep stores: float32 and
 * float16); 6 brought int32 and int64 to the arithmetic, and integers
 * to Neg and Abs; Equal took bool, int32 and int64 from the start. */
Test(old_types, per_opset)
{
	static const struct { const char *op; int opset; cep_dtype t; bool ok; } cases[] = {
		{ "Add", 1, CEP_DTYPE_FLOAT16, true },
		{ "Add", 5, CEP_DTYPE_INT32, false },
		{ "Add", 6, CEP_DTYPE_INT64, true },
		{ "Add", 6, CEP_DTYPE_INT8, false },
		{ "Mul", 6, CEP_DTYPE_BFLOAT16, false },
		{ "Neg", 5, CEP_DTYPE_INT32, false },
		{ "Neg", 6, CEP_DTYPE_INT8, true },
		{ "Abs", 6, CEP_DTYPE_UINT8, true },
		{ "Relu", 6, CEP_DTYPE_INT32, false },
		{ "Relu", 1, CEP_DTYPE_FLOAT16, true },
		{ "Sigmoid", 6, CEP_DTYPE_BFLOAT16, false },
		{ "Equal", 1, CEP_DTYPE_INT64, true },
		{ "Equal", 1, CEP_DTYPE_FLOAT32, false },
		{ "Greater", 1, CEP_DTYPE_INT32, false },
		{ "Pow", 1, CEP_DTYPE_FLOAT16, true },
		{ "Sum", 6, CEP_DTYPE_INT32, false },
		{ "Max", 1, CEP_DTYPE_FLOAT32, true },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct op_schema *s;
		const struct op_kernel *k;
		int ret;

		cr_assert_eq(op_schema_find("", cases[i].op, cases[i].opset, &s), 0, "%s",
			     cep_last_error());
		ret = op_kernel_find(s, cases[i].opset, BACKEND_HOST, cases[i].t, &k);
		cr_assert_eq(ret == 0, cases[i].ok, "%s/%d %s: %s", cases[i].op, cases[i].opset,
			     cep_dtype_name(cases[i].t), ret ? cep_last_error() : "found");
	}
}

/* ------------------------------------------------------------- unary ops */

/* Opset 1's unary functions, consumed_inputs and all, compute what opset 7's do. */
Test(old_unary, opset1_values)
{
	static const char *const ops[] = { "Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs",
					   "Sqrt", "Reciprocal", "Log", "Floor", "Ceil" };
	const int64_t d[1] = { 4 }, ci[1] = { 1 };
	const struct op_attr attr = oh_ints("consumed_inputs", 1, ci);
	float x[4] = { 0.25f, 1.5f, 2.0f, 3.75f };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	size_t i;
	int e;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const float *o;

		cr_assert_eq(oh_run(ops[i], 1, &attr, 1, &in, 1, &out, 1), 0, "%s: %s", ops[i],
			     cep_last_error());
		o = out.data;
		for (e = 0; e < 4; e++) {
			double v = x[e], want = 0.0;

			switch (i) {
			case 0: want = v > 0 ? v : 0; break;
			case 1: want = 1.0 / (1.0 + exp(-v)); break;
			case 2: want = tanh(v); break;
			case 3: want = exp(v); break;
			case 4: want = -v; break;
			case 5: want = fabs(v); break;
			case 6: want = sqrt(v); break;
			case 7: want = 1.0 / v; break;
			case 8: want = log(v); break;
			case 9: want = floor(v); break;
			case 10: want = ceil(v); break;
			}
			cr_assert_float_eq(o[e], (float)want, 1e-5f * (1.0f + fabsf((float)want)),
					   "%s(%g) = %g, want %g", ops[i], v, o[e], want);
		}
		free(out.data);
	}
}

/* LeakyRelu, Elu and HardSigmoid of opsets 1 and 6 with their alpha and beta. */
Test(old_unary, activations)
{
	const int64_t d[1] = { 4 };
	float x[4] = { -2.0f, -0.5f, 0.5f, 3.0f };
	const struct op_attr leaky = oh_float("alpha", 0.1f);
	const struct op_attr elu = oh_float("alpha", 2.0f);
	const struct op_attr hs[2] = { oh_float("alpha", 0.25f), oh_float("beta", 0.4f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	const float *o;
	int e;

	cr_assert_eq(oh_run("LeakyRelu", 1, &leaky, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], x[e] < 0 ? 0.1f * x[e] : x[e], 1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("Elu", 6, &elu, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], x[e] < 0 ? 2.0f * expm1f(x[e]) : x[e], 1e-5f);
	free(out.data);
	cr_assert_eq(oh_run("HardSigmoid", 1, hs, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], fmaxf(0.0f, fminf(1.0f, 0.25f * x[e] + 0.4f)), 1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("Softplus", 1, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], log1pf(expf(x[e])), 1e-5f);
	free(out.data);
}

/* Clip-1 and Clip-6: the bounds are attributes, the lowest and largest
 * float when absent (an infinity is clipped to the largest float). */
Test(old_unary, clip)
{
	const int64_t d[1] = { 5 };
	float x[5] = { -INFINITY, -3.0f, 0.5f, 4.0f, INFINITY };
	const struct op_attr both[2] = { oh_float("min", -1.0f), oh_float("max", 2.0f) };
	const struct op_attr lo = oh_float("min", 0.0f);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	const float *o;

	cr_assert_eq(oh_run("Clip", 1, both, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert(o[0] == -1.0f && o[1] == -1.0f && o[2] == 0.5f && o[3] == 2.0f && o[4] == 2.0f);
	free(out.data);
	cr_assert_eq(oh_run("Clip", 6, &lo, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	cr_assert(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.5f && o[3] == 4.0f && o[4] == FLT_MAX);
	free(out.data);
}

/* ------------------------------------------------------------------ PRelu */

/* Before opset 7 the slope is one value for all, or one per channel
 * (dimension 1), whatever numpy would make of its shape. */
Test(old_prelu, per_channel)
{
	const int64_t dx[3] = { 2, 3, 4 }, d3[1] = { 3 }, d311[3] = { 3, 1, 1 };
	const int64_t d1[1] = { 1 };
	float slope[3] = { 0.5f, 2.0f, -1.0f }, one[1] = { 0.25f };
	struct op_tensor x = seq(3, dx, -12.0f, 1.0f);
	struct op_tensor in[2] = { x, oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, slope) };
	struct op_tensor out;
	const float *px = x.data, *o;
	int e;

	cr_assert_eq(oh_run("PRelu", 6, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 3, dx);
	o = out.data;
	for (e = 0; e < 24; e++) {
		float v = px[e], k = slope[(e / 4) % 3];

		cr_assert_float_eq(o[e], v < 0 ? v * k : v, 0.0f, "at %d", e);
	}
	free(out.data);
	/* The same slope under unit dims, at opset 1. */
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, d311, slope);
	cr_assert_eq(oh_run("PRelu", 1, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 24; e++) {
		float v = px[e], k = slope[(e / 4) % 3];

		cr_assert_float_eq(o[e], v < 0 ? v * k : v, 0.0f, "at %d", e);
	}
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, one);
	cr_assert_eq(oh_run("PRelu", 6, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 24; e++)
		cr_assert_float_eq(o[e], px[e] < 0 ? px[e] * 0.25f : px[e], 0.0f);
	free(out.data);
	/* At opset 7 a slope of 3 would have to match the last dim, 4. */
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, slope);
	assert_refused(oh_infer("PRelu", 7, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		       "does not broadcast");
	free(x.data);
}

/* A slope of neither kind is outside the old rule: read as opset 7 does
 * (ONNX's converter takes PRelu-6 and -7 to be one), refused if it does
 * not broadcast either. */
Test(old_prelu, other_slopes)
{
	const int64_t dx[3] = { 2, 3, 4 }, d4[1] = { 4 }, d5[1] = { 5 };
	float x[24], slope[4] = { 1, 2, 3, 4 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d4, slope) };
	struct op_tensor out;
	const float *o;
	int e;

	for (e = 0; e < 24; e++)
		x[e] = (float)(e - 12);
	cr_assert_eq(oh_run("PRelu", 6, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 24; e++)
		cr_assert_float_eq(o[e], x[e] < 0 ? x[e] * slope[e % 4] : x[e], 0.0f, "at %d", e);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d5, NULL);
	assert_refused(oh_infer("PRelu", 1, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		       "PRelu: slope [5] does not broadcast to the input's shape [2,3,4]");
}

/* -------------------------------------------------------------- variadic */

/* Sum, Max, Min and Mean before opset 8 take inputs of one shape. */
Test(old_variadic, one_shape)
{
	const int64_t d[2] = { 2, 2 }, d2[1] = { 2 };
	float a[4] = { 1, -2, 3, 8 }, b[4] = { 4, 5, -6, 2 }, c[4] = { 0, 1, 10, -1 };
	const int64_t ci[3] = { 0, 0, 0 };
	const struct op_attr attr = oh_ints("consumed_inputs", 3, ci);
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, d, a),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, d, b),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, d, c) };
	struct op_tensor out;
	const float *o;
	int e;

	cr_assert_eq(oh_run("Sum", 1, &attr, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], a[e] + b[e] + c[e], 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Max", 6, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], fmaxf(a[e], fmaxf(b[e], c[e])), 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Min", 1, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], fminf(a[e], fminf(b[e], c[e])), 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Mean", 6, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (e = 0; e < 4; e++)
		cr_assert_float_eq(o[e], (a[e] + b[e] + c[e]) / 3.0f, 1e-6f);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, b);
	cr_assert_neq(oh_infer("Sum", 6, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(oh_infer("Sum", 8, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
}
