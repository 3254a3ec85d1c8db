/*
 * trig.c — the trigonometric and hyperbolic functions of one tensor: Sin,
 * Cos, Tan, Asin, Acos, Atan (opset 7 on), Sinh, Cosh, Asinh, Acosh,
 * Atanh (opset 9 on). The output has the input's type and shape.
 *
 * Float types are computed in float32 with libm's float functions
 * (float16 and bfloat16 converted on load and store), float64 with its
 * double ones; an argument outside a function's domain (Asin of 2, Acosh
 * of 0, Atanh of 2) gives NaN and Atanh of +-1 gives +-inf, as IEEE
 * arithmetic has them. Every one took float, float16 and double until
 * opset 22 added bfloat16.
 */
#include "kernels/cpu/elem.h"

enum trigop {
	TRIG_SIN,
	TRIG_COS,
	TRIG_TAN,
	TRIG_ASIN,
	TRIG_ACOS,
	TRIG_ATAN,
	TRIG_SINH,
	TRIG_COSH,
	TRIG_ASINH,
	TRIG_ACOSH,
	TRIG_ATANH,
};

static int trig_infer(struct op_infer *x)
{
	return op_infer_like_input(x);
}

static float trigop_f(enum trigop op, float v)
{
	switch (op) {
	case TRIG_SIN: return sinf(v);
	case TRIG_COS: return cosf(v);
	case TRIG_TAN: return tanf(v);
	case TRIG_ASIN: return asinf(v);
	case TRIG_ACOS: return acosf(v);
	case TRIG_ATAN: return atanf(v);
	case TRIG_SINH: return sinhf(v);
	case TRIG_COSH: return coshf(v);
	case TRIG_ASINH: return asinhf(v);
	case TRIG_ACOSH: return acoshf(v);
	case TRIG_ATANH: return atanhf(v);
	}
	return 0.0f;
}

static double trigop_d(enum trigop op, double v)
{
	switch (op) {
	case TRIG_SIN: return sin(v);
	case TRIG_COS: return cos(v);
	case TRIG_TAN: return tan(v);
	case TRIG_ASIN: return asin(v);
	case TRIG_ACOS: return acos(v);
	case TRIG_ATAN: return atan(v);
	case TRIG_SINH: return sinh(v);
	case TRIG_COSH: return cosh(v);
	case TRIG_ASINH: return asinh(v);
	case TRIG_ACOSH: return acosh(v);
	case TRIG_ATANH: return atanh(v);
	}
	return 0.0;
}

static int trig_run(struct op_call *c, enum trigop op)
{
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (t == CEP_DTYPE_FLOAT32) {
		const float *af = a;
		float *of = o;

		for (i = 0; i < n; i++)
			of[i] = trigop_f(op, af[i]);
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT64) {
		const double *ad = a;
		double *od = o;

		for (i = 0; i < n; i++)
			od[i] = trigop_d(op, ad[i]);
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_store_f(o, t, i, trigop_f(op, cpu_load_f(a, t, i)));
	return 0;
}

static int sin_run(struct op_call *c) { return trig_run(c, TRIG_SIN); }
static int cos_run(struct op_call *c) { return trig_run(c, TRIG_COS); }
static int tan_run(struct op_call *c) { return trig_run(c, TRIG_TAN); }
static int asin_run(struct op_call *c) { return trig_run(c, TRIG_ASIN); }
static int acos_run(struct op_call *c) { return trig_run(c, TRIG_ACOS); }
static int atan_run(struct op_call *c) { return trig_run(c, TRIG_ATAN); }
static int sinh_run(struct op_call *c) { return trig_run(c, TRIG_SINH); }
static int cosh_run(struct op_call *c) { return trig_run(c, TRIG_COSH); }
static int asinh_run(struct op_call *c) { return trig_run(c, TRIG_ASINH); }
static int acosh_run(struct op_call *c) { return trig_run(c, TRIG_ACOSH); }
static int atanh_run(struct op_call *c) { return trig_run(c, TRIG_ATANH); }

/* ------------------------------------------------------------------- table */

#define TRIG_SCHEMA(op, since) \
	{ "", op, since, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, trig_infer }
#define TRIG_KERNEL(op, since, until, dts, fn) \
	{ "", op, since, until, BACKEND_HOST, dts, NULL, fn }
/* float, float16 and double, bfloat16 from opset 22. */
#define TRIG_KERNELS(op, since, fn) \
	TRIG_KERNEL(op, since, 21, ELEM_DTS_NO_BF16, fn), \
	TRIG_KERNEL(op, 22, OP_OPSET_MAX, OP_DTS_FLOAT, fn)

static const struct op_schema schemas[] = {
	TRIG_SCHEMA("Sin", 7),
	TRIG_SCHEMA("Cos", 7),
	TRIG_SCHEMA("Tan", 7),
	TRIG_SCHEMA("Asin", 7),
	TRIG_SCHEMA("Acos", 7),
	TRIG_SCHEMA("Atan", 7),
	TRIG_SCHEMA("Sinh", 9),
	TRIG_SCHEMA("Cosh", 9),
	TRIG_SCHEMA("Asinh", 9),
	TRIG_SCHEMA("Acosh", 9),
	TRIG_SCHEMA("Atanh", 9),
};

static const struct op_kernel kernels[] = {
	TRIG_KERNELS("Sin", 7, sin_run),
	TRIG_KERNELS("Cos", 7, cos_run),
	TRIG_KERNELS("Tan", 7, tan_run),
	TRIG_KERNELS("Asin", 7, asin_run),
	TRIG_KERNELS("Acos", 7, acos_run),
	TRIG_KERNELS("Atan", 7, atan_run),
	TRIG_KERNELS("Sinh", 9, sinh_run),
	TRIG_KERNELS("Cosh", 9, cosh_run),
	TRIG_KERNELS("Asinh", 9, asinh_run),
	TRIG_KERNELS("Acosh", 9, acosh_run),
	TRIG_KERNELS("Atanh", 9, atanh_run),
};

const struct op_family op_family_cpu_trig = {
	"cpu_trig", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
