/*
 * lrn.c — the CUDA kernel of LRN (opset 7 on) for float32 and float16, and
 * bfloat16 from opset 13, as the reference kernel takes them
 * (kernels/cpu/norm.c): kernels/cuda/lrn.cu on the device. The parameters
 * come from the host's own cpu_lrn_read() (kernels/cpu/norm.h).
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/norm.h"

/* Twin of struct cep_lrn (lrn.cu). */
struct cuda_lrn {
	int64_t batch, channels, inner;  /* X as (N, C, D1 * ... * Dn) */
	int64_t before, after;           /* channels summed below and above */
	double alpha_over_size, beta, bias;
};

struct lrn_params {
	CUfunction fn;
	unsigned grid;
	struct cuda_lrn l;
};
CUDA_PARAMS_FIT(struct lrn_params);

static int lrn_prepare(struct op_call *c, size_t *workspace)
{
	struct lrn_params *p = (struct lrn_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cpu_lrn l;
	char name[16];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT) || x->rank < 2)
		return cep__set_error(CEP_EDTYPE, "LRN: no cuda kernel for %s of rank %d",
				      cep_dtype_name(x->dtype), x->rank);
	cpu_lrn_read(c->node, x, &l);
	p->l = (struct cuda_lrn){
		.batch = l.batch, .channels = l.channels, .inner = l.inner,
		.before = l.before, .after = l.after,
		.alpha_over_size = l.alpha_over_size, .beta = l.beta, .bias = l.bias,
	};
	p->grid = cuda_grid(l.batch * l.channels * l.inner);
	snprintf(name, sizeof(name), "lrn_%s", sfx);
	return cuda_function_get(c->be, "lrn", name, &p->fn);
}

static int lrn_run(struct op_call *c)
{
	struct lrn_params *p = (struct lrn_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->l };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "LRN", 1, 12, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  lrn_prepare, lrn_run },
	{ "", "LRN", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, lrn_prepare, lrn_run },
};

const struct op_family op_family_cuda_lrn = {
	"cuda_lrn", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
