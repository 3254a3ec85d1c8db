/*
 * gather_elements.c — the CUDA kernel of GatherElements (opset 11 on) for
 * every data type, with int32 or int64 indices: kernels/cuda/
 * gather_elements.cu on the device. Indices are data, so they are checked
 * where they are read, on the device; a bad one fails the run at the
 * stream's sync with "GatherElements: index 9 is out of range for
 * dimension 1 of size 4" (the dimension is the axis; gpu/cuda/cuda_kernels.h).
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_gather_elements (gather_elements.cu). */
struct cuda_gather_elements {
	int64_t n;
	int64_t dim;
	int32_t rank;
	int32_t axis;
	int64_t idims[CEP_MAX_RANK];
	int64_t dstride[CEP_MAX_RANK];
};

struct ge_params {
	CUfunction fn;
	struct cuda_gather_elements g;
};
CUDA_PARAMS_FIT(struct ge_params);

static int ge_prepare(struct op_call *c, size_t *workspace)
{
	struct ge_params *p = (struct ge_params *)c->params;
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	size_t es = cep_dtype_size(data->dtype);
	int64_t s = 1;
	char name[40];
	int axis, d, ret;

	*workspace = 0;
	memset(&p->g, 0, sizeof(p->g));
	if (idx->dtype != CEP_DTYPE_INT32 && idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "GatherElements: indices are %s, not int32 or int64",
				      cep_dtype_name(idx->dtype));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "GatherElements: no cuda kernel for %s",
				      cep_dtype_name(data->dtype));
	if (data->rank < 1 || idx->rank != data->rank)
		return cep__set_error(CEP_ESHAPE, "GatherElements: data has rank %d, indices %d",
				      data->rank, idx->rank);
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), data->rank, &axis);
	if (ret < 0)
		return ret;
	p->g.n = op_dims_product(idx, 0, idx->rank);
	p->g.dim = data->dims[axis];
	p->g.rank = data->rank;
	p->g.axis = axis;
	for (d = data->rank - 1; d >= 0; d--) {
		p->g.idims[d] = idx->dims[d];
		p->g.dstride[d] = s;
		s *= data->dims[d];
	}
	snprintf(name, sizeof(name), "gather_elements_%zu_%s", es,
		 idx->dtype == CEP_DTYPE_INT32 ? "i32" : "i64");
	return cuda_function_get(c->be, "gather_elements", name, &p->fn);
}

static int ge_run(struct op_call *c)
{
	struct ge_params *p = (struct ge_params *)c->params;
	const void *data = c->in[0].data, *idx = c->in[1].data;
	void *out = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &data, &idx, &out, &p->g, &fault, &site };
	int ret;

	if (p->g.n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "GatherElements", 11, 12, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  ge_prepare, ge_run },
	{ "", "GatherElements", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, ge_prepare, ge_run },
};

const struct op_family op_family_cuda_gather_elements = {
	"cuda_gather_elements", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
