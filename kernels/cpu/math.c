/*
 * math.c — elementwise math of one tensor: Sqrt, Reciprocal, Neg, Abs, Log,
 * Erf, Floor, Ceil, Round (to the nearest integer, halves to the even
 * one). The output has the input's type and shape.
 *
 * Float types are computed in float32 (float16 and bfloat16 converted on
 * load and store), float64 in double. Neg and Abs also take integers,
 * computed in int64 and stored back at their width, so that Neg and Abs
 * of the most negative value wrap to itself as two's complement does
 * (numpy agrees); Abs of an unsigned type is the value itself. Erf took
 * integers from opset 9 to 12: computed in float32 and truncated, which
 * leaves 0 for |x| <= 3 and +-1 beyond.
 *
 * The type sets follow each operator's history: Neg (the signed ones) and
 * Abs took integers from opset 6, bfloat16 joined them all at 13, when Erf
 * also dropped the integers; Round came at 11 and took bfloat16 at 22.
 * Opset 1's consumed_inputs only hinted at in-place use and is ignored.
 */
#include "kernels/cpu/elem.h"

enum mathop {
	MATH_SQRT,
	MATH_RECIPROCAL,
	MATH_NEG,
	MATH_ABS,
	MATH_LOG,
	MATH_ERF,
	MATH_FLOOR,
	MATH_CEIL,
	MATH_ROUND,
};

static int math_infer(struct op_infer *x)
{
	return op_infer_like_input(x);
}

static float mathop_f(enum mathop op, float v)
{
	switch (op) {
	case MATH_SQRT: return sqrtf(v);
	case MATH_RECIPROCAL: return 1.0f / v;
	case MATH_NEG: return -v;
	case MATH_ABS: return fabsf(v);
	case MATH_LOG: return logf(v);
	case MATH_ERF: return erff(v);
	case MATH_FLOOR: return floorf(v);
	case MATH_CEIL: return ceilf(v);
	case MATH_ROUND: return nearbyintf(v);
	}
	return 0.0f;
}

static double mathop_d(enum mathop op, double v)
{
	switch (op) {
	case MATH_SQRT: return sqrt(v);
	case MATH_RECIPROCAL: return 1.0 / v;
	case MATH_NEG: return -v;
	case MATH_ABS: return fabs(v);
	case MATH_LOG: return log(v);
	case MATH_ERF: return erf(v);
	case MATH_FLOOR: return floor(v);
	case MATH_CEIL: return ceil(v);
	case MATH_ROUND: return nearbyint(v);
	}
	return 0.0;
}

/* Neg and Abs of integers; unsigned arithmetic gives the wrapping. Neg
 * takes only signed types. */
static int64_t mathop_i(enum mathop op, cep_dtype t, int64_t v)
{
	switch (op) {
	case MATH_NEG:
		return (int64_t)(0 - (uint64_t)v);
	case MATH_ABS:
		if (cpu_is_unsigned(t))
			return v;
		return v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
	default:
		return v;
	}
}

/* The float32 case with the operation chosen once, outside the loop, so
 * that the compiler can vectorise the simple ones. */
static void math_f32(enum mathop op, const float *a, float *o, int64_t n)
{
	int64_t i;

	switch (op) {
	case MATH_SQRT:
		for (i = 0; i < n; i++)
			o[i] = sqrtf(a[i]);
		break;
	case MATH_RECIPROCAL:
		for (i = 0; i < n; i++)
			o[i] = 1.0f / a[i];
		break;
	case MATH_NEG:
		for (i = 0; i < n; i++)
			o[i] = -a[i];
		break;
	case MATH_ABS:
		for (i = 0; i < n; i++)
			o[i] = fabsf(a[i]);
		break;
	case MATH_FLOOR:
		for (i = 0; i < n; i++)
			o[i] = floorf(a[i]);
		break;
	case MATH_CEIL:
		for (i = 0; i < n; i++)
			o[i] = ceilf(a[i]);
		break;
	case MATH_ROUND:
		for (i = 0; i < n; i++)
			o[i] = nearbyintf(a[i]);
		break;
	case MATH_LOG:
	case MATH_ERF:
		for (i = 0; i < n; i++)
			o[i] = mathop_f(op, a[i]);
		break;
	}
}

static int math_run(struct op_call *c, enum mathop op)
{
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (t == CEP_DTYPE_FLOAT32) {
		math_f32(op, a, o, n);
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT64) {
		const double *ad = a;
		double *od = o;

		for (i = 0; i < n; i++)
			od[i] = mathop_d(op, ad[i]);
		return 0;
	}
	if (cpu_is_float(t) || op == MATH_ERF) {
		for (i = 0; i < n; i++)
			cpu_store_f(o, t, i, mathop_f(op, cpu_load_f(a, t, i)));
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_store_i(o, t, i, mathop_i(op, t, cpu_load_i(a, t, i)));
	return 0;
}

static int sqrt_run(struct op_call *c) { return math_run(c, MATH_SQRT); }
static int reciprocal_run(struct op_call *c) { return math_run(c, MATH_RECIPROCAL); }
static int neg_run(struct op_call *c) { return math_run(c, MATH_NEG); }
static int abs_run(struct op_call *c) { return math_run(c, MATH_ABS); }
static int log_run(struct op_call *c) { return math_run(c, MATH_LOG); }
static int erf_run(struct op_call *c) { return math_run(c, MATH_ERF); }
static int floor_run(struct op_call *c) { return math_run(c, MATH_FLOOR); }
static int ceil_run(struct op_call *c) { return math_run(c, MATH_CEIL); }
static int round_run(struct op_call *c) { return math_run(c, MATH_ROUND); }

/* ------------------------------------------------------------------- table */

#define MATH_SCHEMA(op, since) \
	{ "", op, since, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, math_infer }
#define MATH_KERNEL(op, since, until, dts, fn) \
	{ "", op, since, until, BACKEND_HOST, dts, NULL, fn }

/* The float-only operators: float, float16 and double, bfloat16 from
 * opset 13. */
#define MATH_FLOAT_KERNELS(op, fn) \
	MATH_KERNEL(op, 1, 12, ELEM_DTS_NO_BF16, fn), \
	MATH_KERNEL(op, 13, OP_OPSET_MAX, OP_DTS_FLOAT, fn)

static const struct op_schema schemas[] = {
	MATH_SCHEMA("Sqrt", 1),
	MATH_SCHEMA("Reciprocal", 1),
	MATH_SCHEMA("Neg", 1),
	MATH_SCHEMA("Abs", 1),
	MATH_SCHEMA("Log", 1),
	MATH_SCHEMA("Erf", 9),
	MATH_SCHEMA("Floor", 1),
	MATH_SCHEMA("Ceil", 1),
	MATH_SCHEMA("Round", 11),
};

static const struct op_kernel kernels[] = {
	MATH_FLOAT_KERNELS("Sqrt", sqrt_run),
	MATH_FLOAT_KERNELS("Reciprocal", reciprocal_run),
	MATH_FLOAT_KERNELS("Log", log_run),
	MATH_FLOAT_KERNELS("Floor", floor_run),
	MATH_FLOAT_KERNELS("Ceil", ceil_run),
	MATH_KERNEL("Neg", 1, 5, ELEM_DTS_NO_BF16, neg_run),
	MATH_KERNEL("Neg", 6, 12, ELEM_DTS_NO_BF16 | OP_DTS_SIGNED, neg_run),
	MATH_KERNEL("Neg", 13, OP_OPSET_MAX, OP_DTS_FLOAT | OP_DTS_SIGNED, neg_run),
	MATH_KERNEL("Abs", 1, 5, ELEM_DTS_NO_BF16, abs_run),
	MATH_KERNEL("Abs", 6, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, abs_run),
	MATH_KERNEL("Abs", 13, OP_OPSET_MAX, OP_DTS_FLOAT | OP_DTS_INT, abs_run),
	MATH_KERNEL("Erf", 9, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, erf_run),
	MATH_KERNEL("Erf", 13, OP_OPSET_MAX, OP_DTS_FLOAT, erf_run),
	MATH_KERNEL("Round", 11, 21, ELEM_DTS_NO_BF16, round_run),
	MATH_KERNEL("Round", 22, OP_OPSET_MAX, OP_DTS_FLOAT, round_run),
};

const struct op_family op_family_cpu_math = {
	"cpu_math", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
