/*
 * center_crop_pad.c — the CUDA kernel of CenterCropPad for every stored
 * type (kernels/cpu/center_crop_pad.c): kernels/cuda/center_crop_pad.cu on
 * the device, chosen by the element's size. The output's shape is the
 * plan's (inference read the shape input's value); prepare() works out
 * each dimension's offset from the two shapes.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_ccp (center_crop_pad.cu). */
struct cuda_ccp {
	int32_t rank;
	int32_t pad;
	int64_t n;
	int64_t in[CEP_MAX_RANK];
	int64_t out[CEP_MAX_RANK];
	int64_t off[CEP_MAX_RANK];
};

struct ccp_params {
	CUfunction fn;
	struct cuda_ccp g;
};
CUDA_PARAMS_FIT(struct ccp_params);

static int ccp_prepare(struct op_call *c, size_t *workspace)
{
	struct ccp_params *p = (struct ccp_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	size_t es = cep_dtype_size(x->dtype);
	char name[40];
	int d;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "CenterCropPad: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	p->g.rank = x->rank;
	p->g.n = op_dims_product(y, 0, y->rank);
	for (d = 0; d < x->rank; d++) {
		int64_t diff = x->dims[d] - y->dims[d];

		p->g.in[d] = x->dims[d];
		p->g.out[d] = y->dims[d];
		p->g.off[d] = diff > 0 ? diff / 2 : -(-diff / 2);
	}
	snprintf(name, sizeof(name), "center_crop_pad_%zu", es);
	return cuda_function_get(c->be, "center_crop_pad", name, &p->fn);
}

static int ccp_run(struct op_call *c)
{
	struct ccp_params *p = (struct ccp_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->g };

	if (p->g.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "CenterCropPad", 18, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, ccp_prepare, ccp_run },
};

const struct op_family op_family_cuda_center_crop_pad = {
	"cuda_center_crop_pad", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
