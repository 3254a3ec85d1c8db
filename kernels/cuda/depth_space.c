/*
 * depth_space.c — the CUDA kernel of DepthToSpace and SpaceToDepth
 * (kernels/cuda/depth_space.cu) for every stored type and the opsets the
 * reference kernels take (kernels/cpu/depth_space.c, whose inference and
 * six-dimensional layout it shares): one launch, a thread per output
 * element.
 */
#include "kernels/cuda/launch.h"
#include "kernels/cpu/depth_space.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_depth_space (depth_space.cu). */
struct cuda_depth_space {
	int64_t n;          /* output elements */
	int64_t dims[6];
	int64_t stride[6];  /* input elements */
};

struct ds_params {
	CUfunction fn;
	struct cuda_depth_space g;
};
CUDA_PARAMS_FIT(struct ds_params);

static int ds_prepare(struct op_call *c, size_t *workspace)
{
	struct ds_params *p = (struct ds_params *)c->params;
	size_t es = cep_dtype_size(c->in[0].dtype);
	struct cpu_depth_space g;
	char name[32];

	*workspace = 0;
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	if (c->in[0].rank != 4)
		return cep__set_error(CEP_ESHAPE, "%s: the input must be 4-D, not of rank %d",
				      c->node->op_type, c->in[0].rank);
	cpu_depth_space_init(&g, c->node, &c->in[0]);
	memset(&p->g, 0, sizeof(p->g));
	p->g.n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	memcpy(p->g.dims, g.dims, sizeof(g.dims));
	memcpy(p->g.stride, g.stride, sizeof(g.stride));
	snprintf(name, sizeof(name), "depth_space_%zu", es);
	return cuda_function_get(c->be, "depth_space", name, &p->fn);
}

static int ds_run(struct op_call *c)
{
	struct ds_params *p = (struct ds_params *)c->params;
	const void *in = c->in[0].data;
	void *out = c->out[0].data;
	void *args[] = { &in, &out, &p->g };

	if (p->g.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

#define DS_NO_BF16 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "DepthToSpace", 1, 12, BACKEND_CUDA, DS_NO_BF16, ds_prepare, ds_run },
	{ "", "DepthToSpace", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, ds_prepare, ds_run },
	{ "", "SpaceToDepth", 1, 12, BACKEND_CUDA, DS_NO_BF16, ds_prepare, ds_run },
	{ "", "SpaceToDepth", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, ds_prepare, ds_run },
};

const struct op_family op_family_cuda_depth_space = {
	"cuda_depth_space", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
