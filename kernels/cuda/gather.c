/*
 * gather.c — the CUDA kernel of Gather for every data type with int32 or
 * int64 indices (kernels/cuda/gather.cu). Indices are data, so they are
 * checked where they are read, on the device: a bad one is latched into
 * the stream's fault record with this call's address, and the backend
 * fails the run with "Gather: index 7 is out of range for dimension 0 of
 * size 5" when it syncs (gpu/cuda/cuda_kernels.h).
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

#define GATHER_UNITS 5 /* gather_1_* .. gather_16_* */

/* Twin of struct cep_gather (gather.cu). */
struct cuda_gather {
	int64_t outer;
	int64_t dim;
	int64_t inner;    /* units */
	int64_t n_idx;
	int32_t axis;
	int32_t pad;
};

struct gather_params {
	CUfunction fn[GATHER_UNITS];  /* by log2 of the unit */
	int axis;
	int64_t outer, dim, n_idx;
	int64_t inner_bytes;          /* of one slice after the axis */
};
CUDA_PARAMS_FIT(struct gather_params);

static int gather_prepare(struct op_call *c, size_t *workspace)
{
	struct gather_params *p = (struct gather_params *)c->params;
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	const char *isfx = idx->dtype == CEP_DTYPE_INT32 ? "i32" : "i64";
	char name[32];
	int i, ret;

	*workspace = 0;
	if (idx->dtype != CEP_DTYPE_INT32 && idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "Gather: indices are %s, not int32 or int64",
				      cep_dtype_name(idx->dtype));
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), data->rank, &p->axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(data, 0, p->axis);
	p->dim = data->dims[p->axis];
	p->inner_bytes = op_dims_product(data, p->axis + 1, data->rank) *
			 (int64_t)cep_dtype_size(data->dtype);
	p->n_idx = op_dims_product(idx, 0, idx->rank);
	for (i = 0; i < GATHER_UNITS; i++) {
		snprintf(name, sizeof(name), "gather_%d_%s", 1 << i, isfx);
		ret = cuda_function_get(c->be, "gather", name, &p->fn[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int gather_run(struct op_call *c)
{
	const struct gather_params *p = (const struct gather_params *)c->params;
	const void *data = c->in[0].data, *idx = c->in[1].data;
	void *out = c->out[0].data;
	uint64_t sizes[] = { (uint64_t)p->inner_bytes, (uint64_t)(uintptr_t)data,
			     (uint64_t)(uintptr_t)out };
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	struct cuda_gather g;
	unsigned u;
	int lg = 0, ret;
	void *args[] = { &data, &idx, &out, &g, &fault, &site };

	if (p->outer == 0 || p->n_idx == 0 || p->inner_bytes == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	u = cuda_unit(sizes, 3);
	while ((1u << lg) < u)
		lg++;
	g = (struct cuda_gather){ .outer = p->outer, .dim = p->dim,
				  .inner = p->inner_bytes / u, .n_idx = p->n_idx,
				  .axis = p->axis };
	return cuda_launch(c->be, c->stream, p->fn[lg],
			   cuda_grid(g.outer * g.n_idx * g.inner), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Gather", 1, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, gather_prepare, gather_run },
};

const struct op_family op_family_cuda_gather = {
	"cuda_gather", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
