/*
 * generate.c — operators that make a tensor from a few numbers:
 * ConstantOfShape (opset 9: a shape given as an int64 input, filled with
 * the one element of the `value` attribute, float32 0 by default) and
 * Range (opset 11: start, limit and delta scalars; float16 and bfloat16
 * join in opset 27, computed in float32 or float64 as stash_type says).
 *
 * Both output shapes come from input values. Inference computes them when
 * those are known, which makes chains such as Shape -> ConstantOfShape or
 * Range over a folded length fold at load or plan time; otherwise the
 * planner settles them. Integer ranges count in unsigned arithmetic, so
 * start = INT64_MIN, limit = INT64_MAX cannot overflow; floating ones are
 * computed in double from the given values, as numpy's arange does, which
 * is at least the precision any stash_type asks for.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* --------------------------------------------------------- ConstantOfShape */

/* The fill value of node: its 'value' attribute, or float32 0. */
static int cos_value(const struct op_node *node, const struct op_tensor **out)
{
	static const float zero;
	static const struct op_tensor dflt = {
		.data = (void *)&zero, .dtype = CEP_DTYPE_FLOAT32, .rank = 0,
	};
	const struct op_attr *a = op_attr_find(node, "value");
	int64_t n;
	int ret;

	*out = &dflt;
	if (!a)
		return 0;
	ret = op_attr_check(node, "value", OP_ATTR_TENSOR);
	if (ret < 0)
		return ret;
	if (!op_dtype_in(a->t->dtype, OP_DTS_ALL))
		return cep__set_error(CEP_EUNSUPPORTED,
				      "ConstantOfShape: a value of type %s is not supported",
				      cep_dtype_name(a->t->dtype));
	ret = op_tensor_numel(a->t, &n);
	if (ret < 0 || n != 1)
		return cep__set_error(CEP_EMODEL, "ConstantOfShape: 'value' must hold one element");
	*out = a->t;
	return 0;
}

static int cos_infer(struct op_infer *x)
{
	const struct op_tensor *shape = &x->in[0];
	struct op_tensor *out = &x->out[0];
	const struct op_tensor *value;
	int64_t n;
	int i, ret;

	ret = cos_value(x->node, &value);
	if (ret < 0)
		return ret;
	out->dtype = value->dtype;
	ret = shapeops_list_check(x->node, shape, "the shape input", SHAPEOPS_INT64, &n);
	if (ret < 0)
		return ret;
	if (n > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "ConstantOfShape: the shape has %" PRId64
				      " entries, at most %d", n, CEP_MAX_RANK);
	out->rank = (int)n;
	for (i = 0; i < out->rank; i++) {
		out->dims[i] = shape->data ? shapeops_at(shape, i) : OP_DIM_UNKNOWN;
		if (shape->data && out->dims[i] < 0)
			return cep__set_error(CEP_ESHAPE, "ConstantOfShape: shape entry %d is %" PRId64,
					      i, out->dims[i]);
	}
	return 0;
}

static int cos_run(struct op_call *c)
{
	const struct op_tensor *value;
	int ret;

	ret = cos_value(c->node, &value);
	if (ret < 0)
		return ret;
	shapeops_fill(c->out[0].data, value->data, cep_dtype_size(value->dtype),
		      cpu_numel(&c->out[0]));
	return 0;
}

/* -------------------------------------------------------------------- Range */

/* The three inputs' names, for messages. */
static const char *const range_names[3] = { "start", "limit", "delta" };

/* The element count of a range of integers; CEP_EINVAL for a 0 delta. */
static int range_count_int(int64_t start, int64_t limit, int64_t delta, uint64_t *n)
{
	uint64_t span, mag;

	if (delta == 0)
		return cep__set_error(CEP_EINVAL, "Range: delta is 0");
	if (delta > 0) {
		span = limit > start ? (uint64_t)limit - (uint64_t)start : 0;
		mag = (uint64_t)delta;
	} else {
		span = start > limit ? (uint64_t)start - (uint64_t)limit : 0;
		mag = (uint64_t)0 - (uint64_t)delta;
	}
	*n = span / mag + (span % mag != 0);
	return 0;
}

/* The element count of a range of floats: max(ceil((limit - start) /
 * delta), 0); CEP_EINVAL when that is not a finite number. */
static int range_count_float(double start, double limit, double delta, uint64_t *n)
{
	double q;

	if (delta == 0.0)
		return cep__set_error(CEP_EINVAL, "Range: delta is 0");
	q = ceil((limit - start) / delta);
	if (!isfinite(q))
		return cep__set_error(CEP_EINVAL, "Range: (limit - start) / delta is %g", q);
	*n = q > 0.0 ? (q < 0x1p62 ? (uint64_t)q : UINT64_C(1) << 62) : 0;
	return 0;
}

/* The stash_type of a Range node: the type its float16 and bfloat16
 * ranges are computed in. Only float32 (1) and float64 (11) exist. */
static int range_stash_check(const struct op_node *node)
{
	int64_t st;
	int ret;

	if (node->opset < 27)
		return 0;
	ret = op_attr_check(node, "stash_type", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	st = op_attr_int(node, "stash_type", CEP_DTYPE_FLOAT32);
	if (st != CEP_DTYPE_FLOAT32 && st != CEP_DTYPE_FLOAT64)
		return cep__set_error(CEP_EMODEL, "Range: stash_type %" PRId64
				      " is neither float (1) nor double (11)", st);
	return 0;
}

/* The element count of the range given by in[0..2], whose values are on
 * the host. Returns 0, CEP_EINVAL or CEP_ELIMIT. */
static int range_count(const struct op_tensor *in, int64_t *count)
{
	cep_dtype t = in[0].dtype;
	uint64_t n = 0;
	int ret;

	if (cpu_is_float(t))
		ret = range_count_float(cpu_load_d(in[0].data, t, 0), cpu_load_d(in[1].data, t, 0),
					cpu_load_d(in[2].data, t, 0), &n);
	else
		ret = range_count_int(cpu_load_i(in[0].data, t, 0), cpu_load_i(in[1].data, t, 0),
				      cpu_load_i(in[2].data, t, 0), &n);
	if (ret < 0)
		return ret;
	if (n > (uint64_t)OP_MAX_NUMEL)
		return cep__set_error(CEP_ELIMIT, "Range: %" PRIu64 " elements, more than 2^40", n);
	*count = (int64_t)n;
	return 0;
}

static int range_infer(struct op_infer *x)
{
	struct op_tensor *out = &x->out[0];
	bool known = true;
	int64_t n;
	int i, ret;

	ret = op_infer_same_dtype(x, 0, 2);
	if (ret == 0)
		ret = range_stash_check(x->node);
	if (ret < 0)
		return ret;
	out->dtype = x->in[0].dtype;
	out->rank = 1;
	out->dims[0] = OP_DIM_UNKNOWN;
	for (i = 0; i < 3; i++) {
		const struct op_tensor *t = &x->in[i];

		/* A scalar; a tensor of one element is taken as one too. */
		if (op_tensor_numel(t, &n) == 0 && n != 1)
			return cep__set_error(CEP_ESHAPE, "Range: %s must be a scalar, it has %" PRId64
					      " elements", range_names[i], n);
		known = known && t->data && t->rank >= 0;
	}
	if (!known)
		return 0;
	/* Other types are refused when the kernel is looked up. */
	if (!op_dtype_in(out->dtype, OP_DTS_NUMERIC))
		return 0;
	return range_count(x->in, &out->dims[0]);
}

static int range_run(struct op_call *c)
{
	const struct op_tensor *in = c->in;
	cep_dtype t = in[0].dtype;
	void *o = c->out[0].data;
	int64_t n, i;
	int ret;

	ret = range_count(in, &n);
	if (ret < 0)
		return ret;
	if (n != c->out[0].dims[0])
		return cep__set_error(CEP_EINVAL, "Range: %" PRId64 " elements, the plan expected %"
				      PRId64, n, c->out[0].dims[0]);
	if (t == CEP_DTYPE_FLOAT64) {
		double start = cpu_load_d(in[0].data, t, 0), delta = cpu_load_d(in[2].data, t, 0);

		for (i = 0; i < n; i++)
			cpu_store_d(o, t, i, start + (double)i * delta);
	} else if (cpu_is_float(t)) {
		double start = cpu_load_d(in[0].data, t, 0), delta = cpu_load_d(in[2].data, t, 0);

		for (i = 0; i < n; i++)
			cpu_store_f(o, t, i, (float)(start + (double)i * delta));
	} else {
		/* Wrapping arithmetic: the values in range never wrap, and
		 * unsigned steps keep the last ones defined. */
		uint64_t start = (uint64_t)cpu_load_i(in[0].data, t, 0);
		uint64_t delta = (uint64_t)cpu_load_i(in[2].data, t, 0);

		for (i = 0; i < n; i++)
			cpu_store_i(o, t, i, (int64_t)(start + (uint64_t)i * delta));
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "ConstantOfShape", 9, OP_OPSET_MAX, 1, 1, 1, 1, -1, 0, cos_infer },
	{ "", "Range", 11, 26, 3, 3, 1, 1, 0, 0, range_infer },
	{ "", "Range", 27, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, range_infer },
};

#define RANGE_TYPES_11 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT64) | \
			OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64))

static const struct op_kernel kernels[] = {
	{ "", "ConstantOfShape", 9, 19, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, cos_run },
	{ "", "ConstantOfShape", 20, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, cos_run },
	{ "", "Range", 11, 26, BACKEND_HOST, RANGE_TYPES_11, NULL, range_run },
	{ "", "Range", 27, OP_OPSET_MAX, BACKEND_HOST, RANGE_TYPES_11 | OP_DT(CEP_DTYPE_FLOAT16) |
	  OP_DT(CEP_DTYPE_BFLOAT16), NULL, range_run },
};

const struct op_family op_family_cpu_generate = {
	"cpu_generate", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
