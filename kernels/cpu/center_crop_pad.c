/*
 * center_crop_pad.c — CenterCropPad (opset 18): each of the given axes
 * (all of them without the axes attribute; negative ones count from the
 * end, none twice) cropped or zero-padded to the length the shape input
 * names, centred: a crop starts at floor((in - out) / 2), a pad puts
 * floor((out - in) / 2) zeros first and the odd one last. Elements move
 * as raw units of their size; 0 is all bits clear in every stored type.
 *
 * The output's shape is the shape input's value: inference fixes it when
 * the value is known (a constant, or a small graph input the planner
 * reads and keys the plan by) and the kernels check it against the plan.
 * Output element o along dimension d reads input element o + off[d],
 * off[d] = in - out > 0 ? (in - out) / 2 : -((out - in) / 2), or is 0
 * where that lies outside; the CUDA kernel of
 * kernels/cuda/center_crop_pad.c works it out the same way from the two
 * shapes.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* The axes of node for rank into axes (n of them, each once); n is the
 * rank without the attribute. Fails for an axis out of range or repeated. */
static int ccp_axes(const struct op_node *node, int rank, int *axes, int *n)
{
	const int64_t *a;
	bool seen[CEP_MAX_RANK] = { false };
	int count, i, ret;

	ret = op_attr_check(node, "axes", OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	a = op_attr_ints(node, "axes", &count);
	if (!a) {
		for (i = 0; i < rank; i++)
			axes[i] = i;
		*n = rank;
		return 0;
	}
	if (count > rank)
		return cep__set_error(CEP_EMODEL, "CenterCropPad: %d axes for an input of rank %d",
				      count, rank);
	for (i = 0; i < count; i++) {
		ret = op_axis_normalize(node, a[i], rank, &axes[i]);
		if (ret < 0)
			return ret;
		if (seen[axes[i]])
			return cep__set_error(CEP_EMODEL, "CenterCropPad: axis %" PRId64 " is given "
					      "twice", a[i]);
		seen[axes[i]] = true;
	}
	*n = count;
	return 0;
}

static int ccp_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *shape = &x->in[1];
	struct op_tensor *y = &x->out[0];
	int axes[CEP_MAX_RANK], n, i, ret;
	int64_t count, v;

	ret = shapeops_list_check(x->node, shape, "shape", SHAPEOPS_INDEX, &count);
	if (ret < 0)
		return ret;
	ret = op_infer_like_input(x);
	if (ret < 0 || in->rank < 0)
		return ret;
	ret = ccp_axes(x->node, in->rank, axes, &n);
	if (ret < 0)
		return ret;
	if (count >= 0 && count != n)
		return cep__set_error(CEP_ESHAPE, "CenterCropPad: shape has %" PRId64 " entries for "
				      "%d axes", count, n);
	for (i = 0; i < n; i++) {
		y->dims[axes[i]] = OP_DIM_UNKNOWN;
		if (!shape->data || count < 0)
			continue;
		v = shapeops_at(shape, i);
		if (v < 0)
			return cep__set_error(CEP_EINVAL, "CenterCropPad: shape entry %d is %" PRId64
					      ", it must not be negative", i, v);
		y->dims[axes[i]] = v;
	}
	return 0;
}

static int ccp_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0], *shape = &c->in[1], *y = &c->out[0];
	size_t es = cep_dtype_size(in->dtype);
	int64_t off[CEP_MAX_RANK], coord[CEP_MAX_RANK] = { 0 }, n = cpu_numel(y), o, src;
	int axes[CEP_MAX_RANK], na, rank = in->rank, d, ret;
	bool inside;

	ret = ccp_axes(c->node, rank, axes, &na);
	if (ret < 0)
		return ret;
	for (d = 0; d < na; d++) {
		if (shapeops_at(shape, d) != y->dims[axes[d]])
			return cep__set_error(CEP_EINVAL, "CenterCropPad: shape entry %d is %" PRId64
					      ", the plan expected %" PRId64, d,
					      shapeops_at(shape, d), y->dims[axes[d]]);
	}
	for (d = 0; d < rank; d++) {
		int64_t diff = in->dims[d] - y->dims[d];

		off[d] = diff > 0 ? diff / 2 : -(-diff / 2);
	}
	for (o = 0; o < n; o++) {
		src = 0;
		inside = true;
		for (d = 0; d < rank; d++) {
			int64_t i = coord[d] + off[d];

			inside &= i >= 0 && i < in->dims[d];
			src = src * in->dims[d] + i;
		}
		if (inside)
			shapeops_elem_copy(y->data, o, in->data, src, es);
		else
			memset((unsigned char *)y->data + o * (int64_t)es, 0, es);
		for (d = rank - 1; d >= 0; d--) {
			if (++coord[d] < y->dims[d])
				break;
			coord[d] = 0;
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "CenterCropPad", 18, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, ccp_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "CenterCropPad", 18, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, ccp_run },
};

const struct op_family op_family_cpu_center_crop_pad = {
	"cpu_center_crop_pad", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
