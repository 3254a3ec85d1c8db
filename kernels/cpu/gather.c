/*
 * gather.c — Gather: slices of data along `axis` picked by an int32 or
 * int64 index tensor (negative indices count from the end). The output is
 * data's dims before the axis, then the indices' dims, then data's dims
 * after it. An index out of range fails the run with a message naming it.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

static int gather_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0], *idx = &x->in[1];
	struct op_tensor *out = &x->out[0];
	int axis, r = 0, i, ret;

	out->dtype = data->dtype;
	if (idx->dtype != CEP_DTYPE_INT64 && idx->dtype != CEP_DTYPE_INT32)
		return cep__set_error(CEP_EDTYPE, "Gather: indices are %s, not int32 or int64",
				      cep_dtype_name(idx->dtype));
	if (data->rank < 0 || idx->rank < 0) {
		out->rank = -1;
		return 0;
	}
	if (data->rank == 0)
		return cep__set_error(CEP_ESHAPE, "Gather: data must have rank >= 1");
	ret = op_axis_normalize(x->node, op_attr_int(x->node, "axis", 0), data->rank, &axis);
	if (ret < 0)
		return ret;
	if (data->rank - 1 + idx->rank > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "Gather: rank %d is above %d",
				      data->rank - 1 + idx->rank, CEP_MAX_RANK);
	for (i = 0; i < axis; i++)
		out->dims[r++] = data->dims[i];
	for (i = 0; i < idx->rank; i++)
		out->dims[r++] = idx->dims[i];
	for (i = axis + 1; i < data->rank; i++)
		out->dims[r++] = data->dims[i];
	out->rank = r;
	return 0;
}

static int gather_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	size_t es = cep_dtype_size(data->dtype);
	const unsigned char *src = data->data;
	unsigned char *dst = c->out[0].data;
	int64_t outer, dim, inner, n, o, k;
	int axis;

	op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), data->rank, &axis);
	outer = op_dims_product(data, 0, axis);
	dim = data->dims[axis];
	inner = op_dims_product(data, axis + 1, data->rank) * (int64_t)es;
	n = cpu_numel(idx);
	for (o = 0; o < outer; o++) {
		for (k = 0; k < n; k++) {
			int64_t i = cpu_load_i(idx->data, idx->dtype, k);

			if (i < -dim || i >= dim)
				return cep__set_error(CEP_EINVAL, "Gather: index %" PRId64
						      " is out of range for dimension %d of size %" PRId64,
						      i, axis, dim);
			if (i < 0)
				i += dim;
			memcpy(dst + (o * n + k) * inner, src + (o * dim + i) * inner, (size_t)inner);
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Gather", 1, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, gather_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Gather", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, gather_run },
};

const struct op_family op_family_cpu_gather = {
	"cpu_gather", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
