/*
 * select.c — the selections whose extent is counted from the data:
 * NonZero (opset 9; bfloat16 from 13), the coordinates of the nonzero
 * elements of a tensor of any stored type as an int64 (rank, count)
 * matrix in row-major order of the elements, and Compress (opset 9, a
 * negative axis from 11, bfloat16 from 28), the slices along an axis (or
 * the elements of the flattened input without one) where a bool
 * condition is true. A float is nonzero when it compares unequal to 0, so
 * NaN is and -0 is not; a scalar's coordinates have no rows, so NonZero
 * of one gives a 0 x 1 or 0 x 0 matrix, as the specification's shape
 * (rank, count) says.
 *
 * How the engine plans them: an output extent that depends on data is
 * settled while planning, like TopK's k or Reshape's target
 * (engine/plan_values.c). Inference counts when the input's value is
 * known — a constant, an earlier evaluation, or a small graph input that
 * the planner reads from the run and keys the plan by — and leaves the
 * extent OP_DIM_UNKNOWN otherwise, which the planner refuses with the
 * node that computes the value at run time named. The kernels count
 * again and check the count against the plan's.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ NonZero */

/* Whether element i of t (data on the host) is nonzero. */
static bool select_nonzero_at(const struct op_tensor *t, int64_t i)
{
	if (cpu_is_float(t->dtype))
		return cpu_load_d(t->data, t->dtype, i) != 0.0;
	return cpu_load_i(t->data, t->dtype, i) != 0;
}

/* The count of nonzero elements of t (fixed shape, data on the host). */
static int64_t nonzero_count(const struct op_tensor *t)
{
	int64_t n = cpu_numel(t), i, count = 0;

	for (i = 0; i < n; i++)
		count += select_nonzero_at(t, i);
	return count;
}

static int nonzero_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *y = &x->out[0];
	int64_t n;

	y->dtype = CEP_DTYPE_INT64;
	y->rank = 2;
	y->dims[0] = in->rank >= 0 ? in->rank : OP_DIM_UNKNOWN;
	y->dims[1] = OP_DIM_UNKNOWN;
	if (in->data && op_tensor_numel(in, &n) == 0)
		y->dims[1] = nonzero_count(in);
	return 0;
}

static int nonzero_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0];
	int64_t *y = c->out[0].data;
	int64_t count = c->out[0].dims[1], n = cpu_numel(in), i, j = 0;
	int64_t coord[CEP_MAX_RANK] = { 0 };
	int rank = in->rank, d;

	if (nonzero_count(in) != count)
		return cep__set_error(CEP_EINVAL, "NonZero: the input has %" PRId64 " nonzero "
				      "elements, the plan expected %" PRId64, nonzero_count(in),
				      count);
	for (i = 0; i < n; i++) {
		if (select_nonzero_at(in, i)) {
			for (d = 0; d < rank; d++)
				y[d * count + j] = coord[d];
			j++;
		}
		/* The next element's coordinates, counting in the shape. */
		for (d = rank - 1; d >= 0; d--) {
			if (++coord[d] < in->dims[d])
				break;
			coord[d] = 0;
		}
	}
	return 0;
}

/* ----------------------------------------------------------------- Compress */

/*
 * The axis of node for an input of rank (>= 0): *flat when there is none
 * (the input is flattened), else the axis in *axis. Fails for an axis out
 * of range, or negative before opset 11.
 */
static int compress_axis(const struct op_node *node, int rank, int *axis, bool *flat)
{
	int64_t a;
	int ret;

	*flat = op_attr_find(node, "axis") == NULL;
	*axis = 0;
	if (*flat)
		return 0;
	ret = op_attr_check(node, "axis", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	a = op_attr_int(node, "axis", 0);
	if (a < 0 && node->opset < 11)
		return cep__set_error(CEP_EMODEL, "Compress: axis is %" PRId64 "; a negative axis "
				      "is allowed from opset 11, this node has opset %d", a,
				      node->opset);
	return op_axis_normalize(node, a, rank, axis);
}

/*
 * The selected count of condition c (data on the host) over the first
 * limit slices. A true entry past them has no slice to select: that is
 * CEP_EINVAL, as numpy's compress refuses it.
 */
static int compress_count(const struct op_tensor *c, int64_t limit, int64_t *count)
{
	int64_t n = cpu_numel(c), i;

	*count = 0;
	for (i = 0; i < n; i++) {
		if (!((const uint8_t *)c->data)[i])
			continue;
		if (i >= limit)
			return cep__set_error(CEP_EINVAL, "Compress: condition is true at %" PRId64
					      ", past the %" PRId64 " slices it selects from", i,
					      limit);
		(*count)++;
	}
	return 0;
}

static int compress_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *cond = &x->in[1];
	struct op_tensor *y = &x->out[0];
	int64_t limit = OP_DIM_UNKNOWN, count, n;
	bool flat;
	int axis, i, ret;

	y->dtype = in->dtype;
	y->rank = -1;
	if (cond->dtype != CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "Compress: condition is %s, not bool",
				      cep_dtype_name(cond->dtype));
	if (cond->rank >= 0 && cond->rank != 1)
		return cep__set_error(CEP_ESHAPE, "Compress: condition must be 1-D, not of rank %d",
				      cond->rank);
	if (in->rank == 0)
		return cep__set_error(CEP_ESHAPE, "Compress: the input must have rank 1 or more");
	if (in->rank < 0) {
		/* Only the flattened form's rank is known. */
		ret = op_attr_check(x->node, "axis", OP_ATTR_INT);
		if (ret == 0 && op_attr_find(x->node, "axis") == NULL) {
			y->rank = 1;
			y->dims[0] = OP_DIM_UNKNOWN;
		}
		return ret;
	}
	ret = compress_axis(x->node, in->rank, &axis, &flat);
	if (ret < 0)
		return ret;
	if (flat) {
		y->rank = 1;
		if (op_tensor_numel(in, &n) == 0)
			limit = n;
	} else {
		y->rank = in->rank;
		for (i = 0; i < in->rank; i++)
			y->dims[i] = in->dims[i];
		limit = in->dims[axis];
	}
	y->dims[flat ? 0 : axis] = OP_DIM_UNKNOWN;
	if (!cond->data || cond->rank < 0 || !op_dim_fixed(cond->dims[0]) || !op_dim_fixed(limit))
		return 0;
	ret = compress_count(cond, limit, &count);
	if (ret < 0)
		return ret;
	y->dims[flat ? 0 : axis] = count;
	return 0;
}

static int compress_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0], *cond = &c->in[1], *yt = &c->out[0];
	const uint8_t *keep = cond->data;
	size_t es = cep_dtype_size(in->dtype);
	int64_t outer = 1, len, inner = 1, count, n, o, j, k, at = 0;
	bool flat;
	int axis, ret;

	ret = compress_axis(c->node, in->rank, &axis, &flat);
	if (ret < 0)
		return ret;
	len = flat ? cpu_numel(in) : in->dims[axis];
	if (!flat) {
		outer = op_dims_product(in, 0, axis);
		inner = op_dims_product(in, axis + 1, in->rank);
	}
	ret = compress_count(cond, len, &count);
	if (ret < 0)
		return ret;
	if (count != yt->dims[flat ? 0 : axis])
		return cep__set_error(CEP_EINVAL, "Compress: condition selects %" PRId64 " slices, "
				      "the plan expected %" PRId64, count, yt->dims[flat ? 0 : axis]);
	n = cond->dims[0] < len ? cond->dims[0] : len;
	for (o = 0; o < outer; o++) {
		for (j = 0; j < n; j++) {
			if (!keep[j])
				continue;
			for (k = 0; k < inner; k++)
				shapeops_elem_copy(yt->data, at++, in->data, (o * len + j) * inner + k,
						   es);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "NonZero", 9, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, nonzero_infer },
	/* A negative axis came at 11 (compress_axis() tells them apart). */
	{ "", "Compress", 9, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, compress_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "NonZero", 9, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, nonzero_run },
	{ "", "NonZero", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, nonzero_run },
	{ "", "Compress", 9, 27, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, compress_run },
	{ "", "Compress", 28, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, compress_run },
};

const struct op_family op_family_cpu_select = {
	"cpu_select", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
