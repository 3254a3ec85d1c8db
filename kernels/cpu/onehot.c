/*
 * onehot.c — OneHot (opset 9; negative indices from 11; bfloat16 values
 * from 28): a tensor of the indices' shape with one dimension of `depth`
 * inserted at `axis` (default -1, the last; [-r-1, r] for indices of rank
 * r), holding values[1] (on) where the inserted coordinate equals the
 * index there and values[0] (off) everywhere else. Indices and depth of
 * any numeric type are cast to int64 (floats truncated toward zero); from
 * opset 11 an index in [-depth, 0) counts from the end, and an index out
 * of range gives a row of off values, never an error.
 *
 * The output's shape depends on depth's value: inference computes it when
 * that is known (a constant, or a value the planner learnt from the run),
 * and the kernel checks it against the plan. Values move as raw units of
 * their size.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* The stored types of T1 (indices) and T2 (depth): no bfloat16, no bool. */
#define ONEHOT_INDEX_DTS ((OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16)) | OP_DTS_INT)

/* The inserted axis, normalised for indices of rank r: in [0, r]. */
static int onehot_axis(const struct op_node *node, int r, int *axis)
{
	int64_t a = op_attr_int(node, "axis", -1);

	if (a < -(int64_t)r - 1 || a > r)
		return cep__set_error(CEP_EMODEL, "OneHot: axis %" PRId64 " is out of range for "
				      "indices of rank %d (from %d to %d)", a, r, -r - 1, r);
	*axis = (int)(a < 0 ? a + r + 1 : a);
	return 0;
}

/* The depth given by t (values on the host) in *depth; fails with code
 * when it is not positive. */
static int onehot_depth(const struct op_tensor *t, int code, int64_t *depth)
{
	/* Through double, so that a uint64 past 2^63 is large, not negative
	 * (no depth it could round away from is allowed). */
	int64_t d = cpu_f2i(cpu_load_d(t->data, t->dtype, 0));

	if (d < 1)
		return cep__set_error(code, "OneHot: depth is %" PRId64 ", it must be positive", d);
	if (d > OP_MAX_NUMEL)
		return cep__set_error(CEP_ELIMIT, "OneHot: depth is %" PRId64 ", more than 2^40", d);
	*depth = d;
	return 0;
}

static int onehot_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *idx = &x->in[0], *depth = &x->in[1], *values = &x->in[2];
	struct op_tensor *out = &x->out[0];
	int64_t n, d = OP_DIM_UNKNOWN;
	int axis, i, r, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0)
		return ret;
	out->dtype = values->dtype;
	out->rank = -1;
	if (!op_dtype_in(idx->dtype, ONEHOT_INDEX_DTS))
		return cep__set_error(CEP_EDTYPE, "OneHot: indices are %s, not a numeric type",
				      cep_dtype_name(idx->dtype));
	if (!op_dtype_in(depth->dtype, ONEHOT_INDEX_DTS))
		return cep__set_error(CEP_EDTYPE, "OneHot: depth is %s, not a numeric type",
				      cep_dtype_name(depth->dtype));
	if (op_tensor_numel(depth, &n) == 0 && (n != 1 || depth->rank > 1))
		return cep__set_error(CEP_ESHAPE, "OneHot: depth must be a scalar or hold one "
				      "element, it has %" PRId64 " in rank %d", n, depth->rank);
	if (values->rank >= 0 && (values->rank != 1 ||
				  (op_dim_fixed(values->dims[0]) && values->dims[0] != 2)))
		return cep__set_error(CEP_ESHAPE, "OneHot: values must be 1-D of 2 elements "
				      "(off, on)");
	if (depth->data != NULL && depth->rank >= 0) {
		ret = onehot_depth(depth, CEP_EINVAL, &d);
		if (ret < 0)
			return ret;
	}
	if (idx->rank < 0)
		return 0;
	r = idx->rank;
	if (r + 1 > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "OneHot: indices of rank %d give an output "
				      "of rank %d, at most %d", r, r + 1, CEP_MAX_RANK);
	ret = onehot_axis(node, r, &axis);
	if (ret < 0)
		return ret;
	out->rank = r + 1;
	for (i = 0; i < out->rank; i++)
		out->dims[i] = i < axis ? idx->dims[i] : i == axis ? d : idx->dims[i - 1];
	return 0;
}

static int onehot_run(struct op_call *c)
{
	const struct op_tensor *idx = &c->in[0], *values = &c->in[2];
	const struct op_tensor *out = &c->out[0];
	size_t es = cep_dtype_size(values->dtype);
	bool wrap = c->node->opset >= 11;
	int64_t depth, outer, inner, o, d, j, at = 0;
	int axis, ret;

	ret = onehot_depth(&c->in[1], CEP_EINVAL, &depth);
	if (ret == 0)
		ret = onehot_axis(c->node, idx->rank, &axis);
	if (ret < 0)
		return ret;
	if (depth != out->dims[axis])
		return cep__set_error(CEP_EINVAL, "OneHot: depth is %" PRId64 ", the plan expected %"
				      PRId64, depth, out->dims[axis]);
	outer = op_dims_product(idx, 0, axis);
	inner = op_dims_product(idx, axis, idx->rank);
	for (o = 0; o < outer; o++) {
		for (d = 0; d < depth; d++) {
			for (j = 0; j < inner; j++, at++) {
				int64_t v = cpu_load_i(idx->data, idx->dtype, o * inner + j);

				if (wrap && v < 0 && !cpu_is_unsigned(idx->dtype))
					v += depth;
				shapeops_elem_copy(out->data, at, values->data, v == d, es);
			}
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "OneHot", 9, 10, 3, 3, 1, 1, 2, 0, onehot_infer },
	{ "", "OneHot", 11, OP_OPSET_MAX, 3, 3, 1, 1, 2, 0, onehot_infer },
};

/* The stored types of T3 (values, the kernel's type): bfloat16 came at 28. */
static const struct op_kernel kernels[] = {
	{ "", "OneHot", 9, 27, BACKEND_HOST, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  onehot_run },
	{ "", "OneHot", 28, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, onehot_run },
};

const struct op_family op_family_cpu_onehot = {
	"cpu_onehot", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
