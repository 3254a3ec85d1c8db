/*
 * hardmax.c — the CUDA kernel of Hardmax (opset 1 on) for the types the
 * reference kernel takes at each opset (kernels/cpu/hardmax.c):
 * kernels/cuda/hardmax.cu on the device, over the (outer, n, inner)
 * blocks of op_softmax_blocks().
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_hardmax (hardmax.cu). */
struct cuda_hardmax {
	int64_t outer, n, inner;
};

struct hardmax_params {
	CUfunction fn;
	struct cuda_hardmax h;
};
CUDA_PARAMS_FIT(struct hardmax_params);

static int hardmax_prepare(struct op_call *c, size_t *workspace)
{
	struct hardmax_params *p = (struct hardmax_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	char name[24];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Hardmax: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	ret = op_softmax_blocks(c->node, x, &p->h.outer, &p->h.n, &p->h.inner);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "hardmax_%s", cuda_dtype_suffix(x->dtype));
	return cuda_function_get(c->be, "hardmax", name, &p->fn);
}

static int hardmax_run(struct op_call *c)
{
	struct hardmax_params *p = (struct hardmax_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->h };
	int64_t rows = p->h.outer * p->h.inner;

	if (rows * p->h.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(rows), CUDA_BLOCK, 0, args);
}

/* bfloat16 arrived at opset 13. */
static const struct op_kernel kernels[] = {
	{ "", "Hardmax", 1, 12, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  hardmax_prepare, hardmax_run },
	{ "", "Hardmax", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, hardmax_prepare,
	  hardmax_run },
};

const struct op_family op_family_cuda_hardmax = {
	"cuda_hardmax", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
