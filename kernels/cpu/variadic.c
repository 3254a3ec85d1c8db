/*
 * variadic.c — Min, Max, Sum and Mean of one or more tensors of one type.
 *
 * From opset 8 the inputs broadcast like numpy, all of them together;
 * before (opsets 1 to 7, opset 7 running the opset-6 definition) they
 * must share one shape; opset 1's consumed_inputs only hinted at in-place
 * use and is ignored.
 *
 * onnxruntime's com.microsoft BiasAdd (X + bias + skip) is Sum of its
 * three inputs, with their shapes checked first.
 *
 * The kernel folds the inputs into the output one at a time, each
 * broadcast against the output's shape, so any number of inputs costs no
 * more state than two.
 *
 * Floats are accumulated in float32: directly in the output for float32,
 * in a workspace for float16 and bfloat16 so that a sum of many inputs is
 * rounded once; float64 in double, in the output. Min and Max of integers
 * (opset 12 on) work in the output itself, since their result is always
 * one of the inputs (uint64 ordered as unsigned). Min and Max propagate
 * NaN, as numpy's minimum and maximum do.
 */
#include "kernels/cpu/elem.h"

#include <inttypes.h>

enum varop {
	VAR_MIN,
	VAR_MAX,
	VAR_SUM,
	VAR_MEAN,
};

/* ---------------------------------------------------------------- inference */

/* Every input counts (Mean divides by their number): none may be omitted. */
static int variadic_check(const struct op_infer *x)
{
	int i, ret;

	for (i = 0; i < x->n_in; i++) {
		if (!op_tensor_present(&x->in[i]))
			return cep__set_error(CEP_EMODEL, "%s: input %d is omitted",
					      x->node->op_type, i);
	}
	ret = op_infer_same_dtype(x, 0, x->n_in - 1);
	if (ret < 0)
		return ret;
	x->out[0].dtype = x->in[0].dtype;
	return 0;
}

static int variadic_infer(struct op_infer *x)
{
	int ret = variadic_check(x);

	if (ret < 0)
		return ret;
	return elem_infer_broadcast(x, 0, x->n_in - 1);
}

/*
 * com.microsoft BiasAdd(X, bias, skip) = X + bias + skip, onnxruntime's
 * fusion for NHWC convolutions: X and skip of one shape (N, S, C), bias of
 * (C). It is Sum of the three once their shapes are checked.
 */
static int bias_add_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *b = &x->in[1], *k = &x->in[2];
	char sx[160], sk[160];
	bool ok;
	int d, ret;

	if ((ret = variadic_check(x)) < 0)
		return ret;
	if (in->rank >= 0 && in->rank != 3)
		return cep__set_error(CEP_ESHAPE, "BiasAdd: X has rank %d, not 3 (N, S, C)", in->rank);
	if (in->rank == 3 && b->rank >= 0 &&
	    (b->rank != 1 || (op_dim_fixed(b->dims[0]) && op_dim_fixed(in->dims[2]) &&
			      b->dims[0] != in->dims[2])))
		return cep__set_error(CEP_ESHAPE, "BiasAdd: bias must have shape (C), C = %" PRId64
				      " the channels of X", in->dims[2]);
	ok = in->rank < 0 || k->rank < 0 || k->rank == in->rank;
	for (d = 0; ok && in->rank >= 0 && d < k->rank; d++)
		ok = !op_dim_fixed(k->dims[d]) || !op_dim_fixed(in->dims[d]) ||
		     k->dims[d] == in->dims[d];
	if (!ok) {
		op_dims_format(in, NULL, 0, sx, sizeof(sx));
		op_dims_format(k, NULL, 0, sk, sizeof(sk));
		return cep__set_error(CEP_ESHAPE, "BiasAdd: skip of shape %s must have X's shape %s",
				      sk, sx);
	}
	return elem_infer_broadcast(x, 0, 2);
}

/* Before opset 8 every input has the output's shape: a dimension fixed in
 * one input fixes it for all, a disagreement is an error. */
static int variadic6_infer(struct op_infer *x)
{
	struct op_tensor *out = &x->out[0];
	char sa[160], sb[160];
	int i, d, first = -1, ret;

	ret = variadic_check(x);
	if (ret < 0)
		return ret;
	out->rank = -1;
	for (i = 0; i < x->n_in; i++) {
		const struct op_tensor *t = &x->in[i];
		bool bad;

		if (t->rank < 0)
			continue;
		if (first < 0) {
			first = i;
			out->rank = t->rank;
			memcpy(out->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
			continue;
		}
		bad = t->rank != out->rank;
		for (d = 0; !bad && d < t->rank; d++) {
			if (op_dim_fixed(t->dims[d]) && op_dim_fixed(out->dims[d]))
				bad = t->dims[d] != out->dims[d];
			else if (op_dim_fixed(t->dims[d]))
				out->dims[d] = t->dims[d];
		}
		if (bad) {
			op_dims_format(&x->in[first], NULL, 0, sa, sizeof(sa));
			op_dims_format(t, NULL, 0, sb, sizeof(sb));
			return cep__set_error(CEP_ESHAPE,
					      "%s: before opset 8 all inputs need one shape; "
					      "input %d is %s, input %d is %s",
					      x->node->op_type, first, sa, i, sb);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ kernels */

static int variadic_prepare(struct op_call *c, size_t *workspace)
{
	cep_dtype t = c->out[0].dtype;

	*workspace = 0;
	if (t == CEP_DTYPE_FLOAT16 || t == CEP_DTYPE_BFLOAT16)
		*workspace = (size_t)cpu_numel(&c->out[0]) * sizeof(float);
	return 0;
}

static float varop_f(enum varop op, float acc, float v)
{
	switch (op) {
	case VAR_MIN: return v < acc || v != v ? v : acc;
	case VAR_MAX: return v > acc || v != v ? v : acc;
	case VAR_SUM:
	case VAR_MEAN: return acc + v;
	}
	return acc;
}

/* Folds input k into the float32 accumulator acc (the output's shape);
 * input 0 is copied, broadcast, rather than combined. */
static void fold_f32(enum varop op, const struct op_tensor *out, float *acc,
		     const struct op_tensor *in, bool first)
{
	const struct op_tensor *ins[1] = { in };
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, out, ins, 1);
	for (r = 0; r < bc.rows; r++) {
		float *pa = acc + r * bc.inner;
		int64_t off = bc.off[0], step = bc.step[0];

		if (in->dtype == CEP_DTYPE_FLOAT32) {
			const float *pi = (const float *)in->data + off;

			if (first)
				for (j = 0; j < bc.inner; j++)
					pa[j] = pi[j * step];
			else if (op == VAR_SUM || op == VAR_MEAN)
				for (j = 0; j < bc.inner; j++)
					pa[j] += pi[j * step];
			else
				for (j = 0; j < bc.inner; j++)
					pa[j] = varop_f(op, pa[j], pi[j * step]);
		} else {
			for (j = 0; j < bc.inner; j++) {
				float v = cpu_load_f(in->data, in->dtype, off + j * step);

				pa[j] = first ? v : varop_f(op, pa[j], v);
			}
		}
		cpu_bcast_next(&bc);
	}
}

static double varop_d(enum varop op, double acc, double v)
{
	switch (op) {
	case VAR_MIN: return v < acc || v != v ? v : acc;
	case VAR_MAX: return v > acc || v != v ? v : acc;
	case VAR_SUM:
	case VAR_MEAN: return acc + v;
	}
	return acc;
}

/* fold_f32() for float64, into the output itself. */
static void fold_f64(enum varop op, const struct op_tensor *out, const struct op_tensor *in,
		     bool first)
{
	const struct op_tensor *ins[1] = { in };
	const double *pi = in->data;
	double *acc = out->data;
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, out, ins, 1);
	for (r = 0; r < bc.rows; r++) {
		double *pa = acc + r * bc.inner;

		for (j = 0; j < bc.inner; j++) {
			double v = pi[bc.off[0] + j * bc.step[0]];

			pa[j] = first ? v : varop_d(op, pa[j], v);
		}
		cpu_bcast_next(&bc);
	}
}

/* Min and Max of integers, folded into the output at its own width. */
static void fold_int(enum varop op, const struct op_tensor *out,
		     const struct op_tensor *in, bool first)
{
	const struct op_tensor *ins[1] = { in };
	cep_dtype t = out->dtype;
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, out, ins, 1);
	for (r = 0; r < bc.rows; r++) {
		for (j = 0; j < bc.inner; j++) {
			int64_t at = r * bc.inner + j;
			int64_t v = cpu_load_i(in->data, t, bc.off[0] + j * bc.step[0]);

			if (!first) {
				int64_t a = cpu_load_i(out->data, t, at);

				v = op == VAR_MIN ? (cpu_lt_i(t, v, a) ? v : a)
						  : (cpu_lt_i(t, a, v) ? v : a);
			}
			cpu_store_i(out->data, t, at, v);
		}
		cpu_bcast_next(&bc);
	}
}

static int variadic_run(struct op_call *c, enum varop op)
{
	const struct op_tensor *out = &c->out[0];
	cep_dtype t = out->dtype;
	int64_t n = cpu_numel(out);
	float *acc;
	int64_t i;
	int k;

	if (!cpu_is_float(t)) {
		for (k = 0; k < c->n_in; k++)
			fold_int(op, out, &c->in[k], k == 0);
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT64) {
		double *od = out->data;

		for (k = 0; k < c->n_in; k++)
			fold_f64(op, out, &c->in[k], k == 0);
		if (op == VAR_MEAN) {
			for (i = 0; i < n; i++)
				od[i] /= (double)c->n_in;
		}
		return 0;
	}
	acc = t == CEP_DTYPE_FLOAT32 ? out->data : c->workspace;
	for (k = 0; k < c->n_in; k++)
		fold_f32(op, out, acc, &c->in[k], k == 0);
	if (op == VAR_MEAN) {
		for (i = 0; i < n; i++)
			acc[i] /= (float)c->n_in;
	}
	if (t != CEP_DTYPE_FLOAT32) {
		for (i = 0; i < n; i++)
			cpu_store_f(out->data, t, i, acc[i]);
	}
	return 0;
}

static int min_run(struct op_call *c) { return variadic_run(c, VAR_MIN); }
static int max_run(struct op_call *c) { return variadic_run(c, VAR_MAX); }
static int sum_run(struct op_call *c) { return variadic_run(c, VAR_SUM); }
static int mean_run(struct op_call *c) { return variadic_run(c, VAR_MEAN); }

/* ------------------------------------------------------------------- table */

#define VAR_SCHEMAS(op) \
	{ "", op, 1, 7, 1, -1, 1, 1, 0, 0, variadic6_infer }, \
	{ "", op, 8, OP_OPSET_MAX, 1, -1, 1, 1, 0, 0, variadic_infer }
#define VAR_KERNEL(op, since, until, dts, fn) \
	{ "", op, since, until, BACKEND_HOST, dts, variadic_prepare, fn }

static const struct op_schema schemas[] = {
	VAR_SCHEMAS("Min"),
	VAR_SCHEMAS("Max"),
	VAR_SCHEMAS("Sum"),
	VAR_SCHEMAS("Mean"),
	{ OP_DOMAIN_MS, "BiasAdd", 1, OP_MS_OPSET_MAX, 3, 3, 1, 1, 0, 0, bias_add_infer },
};

static const struct op_kernel kernels[] = {
	VAR_KERNEL("Min", 1, 11, ELEM_DTS_NO_BF16, min_run),
	VAR_KERNEL("Min", 12, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, min_run),
	VAR_KERNEL("Min", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, min_run),
	VAR_KERNEL("Max", 1, 11, ELEM_DTS_NO_BF16, max_run),
	VAR_KERNEL("Max", 12, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, max_run),
	VAR_KERNEL("Max", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, max_run),
	VAR_KERNEL("Sum", 1, 12, ELEM_DTS_NO_BF16, sum_run),
	VAR_KERNEL("Sum", 13, OP_OPSET_MAX, OP_DTS_FLOAT, sum_run),
	VAR_KERNEL("Mean", 1, 12, ELEM_DTS_NO_BF16, mean_run),
	VAR_KERNEL("Mean", 13, OP_OPSET_MAX, OP_DTS_FLOAT, mean_run),
	/* onnxruntime takes float32 and float16. */
	{ OP_DOMAIN_MS, "BiasAdd", 1, OP_MS_OPSET_MAX, BACKEND_HOST,
	  OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16), variadic_prepare, sum_run },
};

const struct op_family op_family_cpu_variadic = {
	"cpu_variadic", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
