/*
 * gather_elements.c — GatherElements (opset 11): data and indices of one
 * rank; every output element takes the data element at its own position
 * with the coordinate along `axis` replaced by the index there (negative
 * indices count from the end). The output has the indices' shape; along
 * the other axes indices may be shorter than data, as in torch.gather.
 * Every index is checked before it is used.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

static int gather_elements_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0], *idx = &x->in[1];
	struct op_tensor *out = &x->out[0];
	int axis, d, ret;

	out->dtype = data->dtype;
	out->rank = idx->rank;
	if (idx->rank > 0)
		memcpy(out->dims, idx->dims, sizeof(int64_t) * (size_t)idx->rank);
	if (!op_dtype_in(idx->dtype, SHAPEOPS_INDEX))
		return cep__set_error(CEP_EDTYPE, "GatherElements: indices are %s, not int32 or int64",
				      cep_dtype_name(idx->dtype));
	if (data->rank < 0 || idx->rank < 0)
		return 0;
	if (data->rank == 0)
		return cep__set_error(CEP_ESHAPE, "GatherElements: data must have rank >= 1");
	if (idx->rank != data->rank)
		return cep__set_error(CEP_ESHAPE, "GatherElements: indices have rank %d, data rank %d",
				      idx->rank, data->rank);
	ret = op_axis_normalize(x->node, op_attr_int(x->node, "axis", 0), data->rank, &axis);
	if (ret < 0)
		return ret;
	for (d = 0; d < data->rank; d++) {
		if (d != axis && op_dim_fixed(idx->dims[d]) && op_dim_fixed(data->dims[d]) &&
		    idx->dims[d] > data->dims[d])
			return cep__set_error(CEP_ESHAPE, "GatherElements: indices have %" PRId64
					      " in dimension %d, data only %" PRId64,
					      idx->dims[d], d, data->dims[d]);
	}
	return 0;
}

/*
 * Walks the indices row by row (a row: the innermost dimension); each
 * row's base offset in data comes from the outer coordinates, the axis
 * coordinate from the index itself.
 */
static int gather_elements_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	size_t es = cep_dtype_size(data->dtype);
	int64_t stride[CEP_MAX_RANK], pos[CEP_MAX_RANK] = { 0 };
	int64_t s = 1, rows, row, inner, dim, at = 0, j;
	int r = data->rank, axis, d;

	op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), r, &axis);
	for (d = r - 1; d >= 0; d--) {
		stride[d] = s;
		s *= data->dims[d];
	}
	dim = data->dims[axis];
	inner = idx->dims[r - 1];
	if (cpu_numel(idx) == 0)
		return 0;
	rows = cpu_numel(idx) / inner;
	for (row = 0; row < rows; row++) {
		int64_t base = 0;

		for (d = 0; d < r - 1; d++) {
			if (d != axis)
				base += pos[d] * stride[d];
		}
		for (j = 0; j < inner; j++, at++) {
			int64_t i = cpu_load_i(idx->data, idx->dtype, at);
			int64_t off = base;

			if (i < -dim || i >= dim)
				return cep__set_error(CEP_EINVAL, "GatherElements: index %" PRId64
						      " is out of range for axis %d of size %" PRId64,
						      i, axis, dim);
			if (i < 0)
				i += dim;
			off += i * stride[axis];
			if (axis != r - 1)
				off += j;
			shapeops_elem_copy(c->out[0].data, at, data->data, off, es);
		}
		for (d = r - 2; d >= 0; d--) {
			if (++pos[d] < idx->dims[d])
				break;
			pos[d] = 0;
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "GatherElements", 11, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, gather_elements_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "GatherElements", 11, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL,
	  gather_elements_run },
	{ "", "GatherElements", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL,
	  gather_elements_run },
};

const struct op_family op_family_cpu_gather_elements = {
	"cpu_gather_elements", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
