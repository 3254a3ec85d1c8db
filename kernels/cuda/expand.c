/*
 * expand.c — the CUDA kernels of Expand (opset 8 on) and Tile (opset 1
 * on) for every type the reference kernels take (kernels/cpu/expand.c):
 * kernels/cuda/expand.cu on the device. Both output shapes were fixed by
 * inference from the shape or repeats input (Tile-1's tiles and axis),
 * so the kernels need only the two shapes, never those inputs' values.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_expand (expand.cu). */
struct cuda_expand {
	int64_t n;
	int32_t rank;
	int32_t pad;
	int64_t odims[CEP_MAX_RANK];
	int64_t idims[CEP_MAX_RANK];
	int64_t istride[CEP_MAX_RANK];
};

struct expand_params {
	CUfunction fn;
	struct cuda_expand e;
};
CUDA_PARAMS_FIT(struct expand_params);

static int expand_prepare(struct op_call *c, size_t *workspace)
{
	struct expand_params *p = (struct expand_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	size_t es = cep_dtype_size(x->dtype);
	int64_t s = 1;
	char name[24];
	int d;

	*workspace = 0;
	memset(&p->e, 0, sizeof(p->e));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	if (x->rank > y->rank)
		return cep__set_error(CEP_ESHAPE, "%s: the input has rank %d, the output %d",
				      c->node->op_type, x->rank, y->rank);
	p->e.n = op_dims_product(y, 0, y->rank);
	/* A scalar output is one element of rank 1. */
	p->e.rank = y->rank > 0 ? y->rank : 1;
	for (d = p->e.rank - 1; d >= 0; d--) {
		int k = d - (y->rank - x->rank);

		p->e.odims[d] = y->rank > 0 ? y->dims[d] : 1;
		p->e.idims[d] = k >= 0 ? x->dims[k] : 1;
		p->e.istride[d] = s;
		s *= p->e.idims[d];
		/* An empty input dim gives an empty output; never divide by it. */
		if (p->e.idims[d] == 0)
			p->e.n = 0;
	}
	snprintf(name, sizeof(name), "expand_%zu", es);
	return cuda_function_get(c->be, "expand", name, &p->fn);
}

static int expand_run(struct op_call *c)
{
	struct expand_params *p = (struct expand_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->e };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->e.n), CUDA_BLOCK, 0, args);
}

/* bfloat16 joined both at opset 13. */
#define EXPAND_DTS_7 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "Expand", 8, 12, BACKEND_CUDA, EXPAND_DTS_7, expand_prepare, expand_run },
	{ "", "Expand", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, expand_prepare, expand_run },
	{ "", "Tile", 1, 5, BACKEND_CUDA, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  expand_prepare, expand_run },
	{ "", "Tile", 6, 12, BACKEND_CUDA, EXPAND_DTS_7, expand_prepare, expand_run },
	{ "", "Tile", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, expand_prepare, expand_run },
};

const struct op_family op_family_cuda_expand = {
	"cuda_expand", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
