/*
 * trilu.c — the CUDA kernel of Trilu (opset 14 on) for every stored type
 * (kernels/cpu/trilu.c): kernels/cuda/trilu.cu on the device, one kernel
 * per element size. The optional k input is read by the kernel; the
 * planner gives prepare() only shapes.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_trilu (trilu.cu). */
struct cuda_trilu {
	int64_t n;
	int64_t rows, cols;
	int32_t upper;
	int32_t pad;
};

struct trilu_params {
	CUfunction fn;
	struct cuda_trilu t;
};
CUDA_PARAMS_FIT(struct trilu_params);

static int trilu_prepare(struct op_call *c, size_t *workspace)
{
	struct trilu_params *p = (struct trilu_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	size_t es = cep_dtype_size(x->dtype);
	char name[16];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "Trilu: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (x->rank < 2)
		return cep__set_error(CEP_ESHAPE, "Trilu: the input has rank %d, it needs 2 or more",
				      x->rank);
	if (c->n_in > 1 && op_tensor_present(&c->in[1]) && c->in[1].dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "Trilu: k is %s, not int64",
				      cep_dtype_name(c->in[1].dtype));
	p->t.n = op_dims_product(x, 0, x->rank);
	p->t.rows = x->dims[x->rank - 2];
	p->t.cols = x->dims[x->rank - 1];
	p->t.upper = op_attr_int(c->node, "upper", 1) != 0;
	snprintf(name, sizeof(name), "trilu_%zu", es);
	return cuda_function_get(c->be, "trilu", name, &p->fn);
}

static int trilu_run(struct op_call *c)
{
	struct trilu_params *p = (struct trilu_params *)c->params;
	const void *x = c->in[0].data;
	const void *k = c->n_in > 1 && op_tensor_present(&c->in[1]) ? c->in[1].data : NULL;
	void *y = c->out[0].data;
	void *args[] = { &x, &k, &y, &p->t };

	if (p->t.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->t.n), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Trilu", 14, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, trilu_prepare, trilu_run },
};

const struct op_family op_family_cuda_trilu = {
	"cuda_trilu", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
