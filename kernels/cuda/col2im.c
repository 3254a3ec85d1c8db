/*
 * col2im.c — the CUDA kernel of Col2Im (opset 18) for every type the
 * reference kernel takes (kernels/cpu/col2im.c): kernels/cuda/col2im.cu
 * on the device. The strides, dilations and pads are attributes, read
 * here by the code the host uses (kernels/convt_geom.h); image_shape and
 * block_shape are inputs, whose values the planner does not give
 * prepare(), so the kernel reads them on the device and checks them
 * against the plan's shapes (a mismatch fails the run at the stream's
 * sync, naming the operator).
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cuda/convt_win.h"

/* Twin of struct cep_col2im (col2im.cu). */
struct cuda_col2im {
	int64_t n;
	int64_t ch;
	int64_t rows, cols;
	int64_t p;
	struct cuda_convt_win w;
	int32_t pad_end[CONVT_MAX_DIMS];
};

struct col2im_params {
	CUfunction fn;
	struct cuda_col2im k;
};
CUDA_PARAMS_FIT(struct col2im_params);

static int col2im_prepare(struct op_call *c, size_t *workspace)
{
	struct col2im_params *p = (struct col2im_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	int64_t pad_end[CONVT_MAX_DIMS];
	struct convt_col2im g;
	int n = y->rank - 2, i, ret;
	char name[24];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "Col2Im: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (c->in[1].dtype != CEP_DTYPE_INT64 || c->in[2].dtype != CEP_DTYPE_INT64 ||
	    c->in[1].rank != 1 || c->in[2].rank != 1 || c->in[1].dims[0] != n ||
	    c->in[2].dims[0] != n)
		return cep__set_error(CEP_ESHAPE, "Col2Im: image_shape and block_shape must be "
				      "int64 lists of the output's %d spatial dims", n);
	memset(&g, 0, sizeof(g));
	ret = convt_col2im_attrs(c->node, n, &g, pad_end);
	if (ret < 0)
		return ret;
	/* The block sizes are 1 until the device reads them. */
	for (i = 0; i < n; i++) {
		g.image[i] = y->dims[2 + i];
		g.block[i] = g.blocks[i] = 1;
		if (!cuda_convt_fits(pad_end[i]))
			return cep__set_error(CEP_EUNSUPPORTED, "Col2Im: the pad at the end of "
					      "spatial dimension %d is too large for the cuda kernel",
					      i);
		p->k.pad_end[i] = (int32_t)pad_end[i];
	}
	ret = cuda_convt_win_init("Col2Im", &g, &p->k.w);
	if (ret < 0)
		return ret;
	p->k.n = op_dims_product(y, 0, y->rank);
	p->k.ch = y->dims[1];
	p->k.rows = x->dims[1];
	p->k.cols = x->dims[2];
	p->k.p = op_dims_product(y, 2, y->rank);
	snprintf(name, sizeof(name), "col2im_%s", sfx);
	return cuda_function_get(c->be, "col2im", name, &p->fn);
}

static int col2im_run(struct op_call *c)
{
	struct col2im_params *p = (struct col2im_params *)c->params;
	const void *x = c->in[0].data, *ishape = c->in[1].data, *bshape = c->in[2].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &ishape, &bshape, &y, &p->k, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty output, which still checks the lists. */
	return cuda_launch(c->be, c->stream, p->fn, p->k.n > 0 ? cuda_grid(p->k.n) : 1, CUDA_BLOCK,
			   0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Col2Im", 18, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, col2im_prepare, col2im_run },
};

const struct op_family op_family_cuda_col2im = {
	"cuda_col2im", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
