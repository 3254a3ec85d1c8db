/*
 * unary.c — elementwise functions of one tensor: Relu, Sigmoid, Tanh, Exp.
 *
 * Float types are computed in float32, float64 in double; Relu also takes
 * the signed integer types (opset 14), computed in int64. More of the
 * family (Neg, Abs, Sqrt, Erf, ...) joins the same table. Opset 1's
 * consumed_inputs only hinted at in-place use and is ignored; until opset
 * 6 the types were float, float16 and double.
 */
#include "kernels/cpu/cpu.h"

enum unop {
	UN_RELU,
	UN_SIGMOID,
	UN_TANH,
	UN_EXP,
};

static int unary_infer(struct op_infer *x)
{
	return op_infer_like_input(x);
}

static float unop_f(enum unop op, float v)
{
	switch (op) {
	case UN_RELU:
		return v > 0.0f ? v : 0.0f;
	case UN_SIGMOID:
		/* Two branches so that exp() never overflows. */
		if (v >= 0.0f)
			return 1.0f / (1.0f + expf(-v));
		return expf(v) / (1.0f + expf(v));
	case UN_TANH:
		return tanhf(v);
	case UN_EXP:
		return expf(v);
	}
	return 0.0f;
}

static double unop_d(enum unop op, double v)
{
	switch (op) {
	case UN_RELU:
		return v > 0.0 ? v : 0.0;
	case UN_SIGMOID:
		if (v >= 0.0)
			return 1.0 / (1.0 + exp(-v));
		return exp(v) / (1.0 + exp(v));
	case UN_TANH:
		return tanh(v);
	case UN_EXP:
		return exp(v);
	}
	return 0.0;
}

static int unary_run(struct op_call *c, enum unop op)
{
	cep_dtype t = c->in[0].dtype;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (t == CEP_DTYPE_FLOAT32) {
		const float *a = c->in[0].data;
		float *o = c->out[0].data;

		for (i = 0; i < n; i++)
			o[i] = unop_f(op, a[i]);
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT64) {
		const double *a = c->in[0].data;
		double *o = c->out[0].data;

		for (i = 0; i < n; i++)
			o[i] = unop_d(op, a[i]);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (cpu_is_float(t)) {
			cpu_store_f(c->out[0].data, t, i,
				    unop_f(op, cpu_load_f(c->in[0].data, t, i)));
		} else {
			int64_t v = cpu_load_i(c->in[0].data, t, i);

			cpu_store_i(c->out[0].data, t, i, v > 0 ? v : 0);
		}
	}
	return 0;
}

static int relu_run(struct op_call *c) { return unary_run(c, UN_RELU); }
static int sigmoid_run(struct op_call *c) { return unary_run(c, UN_SIGMOID); }
static int tanh_run(struct op_call *c) { return unary_run(c, UN_TANH); }
static int exp_run(struct op_call *c) { return unary_run(c, UN_EXP); }

#define UNARY_SCHEMA(op) \
	{ "", op, 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, unary_infer }
#define UNARY_KERNEL(op, dts, fn) \
	{ "", op, 1, 6, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL, fn }, \
	{ "", op, 7, OP_OPSET_MAX, BACKEND_HOST, dts, NULL, fn }

static const struct op_schema schemas[] = {
	UNARY_SCHEMA("Relu"),
	UNARY_SCHEMA("Sigmoid"),
	UNARY_SCHEMA("Tanh"),
	UNARY_SCHEMA("Exp"),
};

static const struct op_kernel kernels[] = {
	/* The signed integers are opset 14's: int8, int32 and int64 have
	 * been taken from 7, int16 only from 14. */
	{ "", "Relu", 1, 6, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  relu_run },
	{ "", "Relu", 7, 13, BACKEND_HOST, OP_DTS_FLOAT | (OP_DTS_SIGNED & ~OP_DT(CEP_DTYPE_INT16)),
	  NULL, relu_run },
	{ "", "Relu", 14, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT | OP_DTS_SIGNED, NULL, relu_run },
	UNARY_KERNEL("Sigmoid", OP_DTS_FLOAT, sigmoid_run),
	UNARY_KERNEL("Tanh", OP_DTS_FLOAT, tanh_run),
	UNARY_KERNEL("Exp", OP_DTS_FLOAT, exp_run),
};

const struct op_family op_family_cpu_unary = {
	"cpu_unary", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
