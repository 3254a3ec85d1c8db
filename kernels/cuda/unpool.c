/*
 * unpool.c — the CUDA kernel of MaxUnpool for every type and opset the
 * reference kernel takes (kernels/cpu/unpool.c): kernels/cuda/unpool.cu
 * on the device, the inferred shape worked out by the host's own
 * cpu_unpool_inferred() (kernels/cpu/unpool.h). The workspace holds one
 * int64 per output element, the latest element of X claiming it. An index
 * out of range fails the run at the stream's sync with "MaxUnpool: index
 * 99 is out of range for dimension 0 of size 16".
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/unpool.h"

/* Twin of struct cep_unpool (unpool.cu). */
struct cuda_unpool {
	int32_t rank;
	int32_t pad;
	int64_t n;
	int64_t total;
	int64_t out_n;
	int64_t istride[CEP_MAX_RANK];
	int64_t odims[CEP_MAX_RANK];
};

struct unpool_params {
	CUfunction clear_fn, claim_fn, write_fn;
	struct cuda_unpool u;
};
CUDA_PARAMS_FIT(struct unpool_params);

static int unpool_prepare(struct op_call *c, size_t *workspace)
{
	struct unpool_params *p = (struct unpool_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	size_t es = cep_dtype_size(x->dtype);
	struct op_tensor inferred;
	char name[40];
	int d, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 2 && es != 4)
		return cep__set_error(CEP_EDTYPE, "MaxUnpool: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	ret = cpu_unpool_inferred(c->node, x, &inferred);
	if (ret < 0)
		return ret;
	p->u.rank = x->rank;
	p->u.n = op_dims_product(x, 0, x->rank);
	p->u.total = op_dims_product(&inferred, 0, inferred.rank);
	p->u.out_n = op_dims_product(y, 0, y->rank);
	for (d = x->rank - 1; d >= 0; d--) {
		p->u.istride[d] = d == x->rank - 1 ? 1 : p->u.istride[d + 1] * inferred.dims[d + 1];
		p->u.odims[d] = y->dims[d];
	}
	*workspace = (size_t)p->u.out_n * sizeof(int64_t);
	snprintf(name, sizeof(name), "unpool_clear_%zu", es);
	ret = cuda_function_get(c->be, "unpool", name, &p->clear_fn);
	if (ret < 0)
		return ret;
	ret = cuda_function_get(c->be, "unpool", "unpool_claim", &p->claim_fn);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "unpool_write_%zu", es);
	return cuda_function_get(c->be, "unpool", name, &p->write_fn);
}

static int unpool_run(struct op_call *c)
{
	struct unpool_params *p = (struct unpool_params *)c->params;
	const void *x = c->in[0].data, *idx = c->in[1].data;
	void *y = c->out[0].data, *win = c->workspace;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *clear_args[] = { &y, &win, &p->u.out_n };
	void *claim_args[] = { &idx, &win, &p->u, &fault, &site };
	void *write_args[] = { &x, &idx, &win, &y, &p->u };
	int ret;

	if (p->u.out_n == 0)
		return 0;
	if (c->workspace_bytes < (size_t)p->u.out_n * sizeof(int64_t))
		return cep__set_error(CEP_EINTERNAL, "MaxUnpool: the workspace is too small");
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->clear_fn, cuda_grid(p->u.out_n), CUDA_BLOCK,
				  0, clear_args);
	if (ret < 0 || p->u.n == 0)
		return ret;
	ret = cuda_launch(c->be, c->stream, p->claim_fn, cuda_grid(p->u.n), CUDA_BLOCK, 0,
			  claim_args);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->write_fn, cuda_grid(p->u.n), CUDA_BLOCK, 0,
			   write_args);
}

/* The reference kernel's sets: bfloat16 came at 22. */
#define UNPOOL_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "MaxUnpool", 9, 21, BACKEND_CUDA, UNPOOL_F16, unpool_prepare, unpool_run },
	{ "", "MaxUnpool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, unpool_prepare,
	  unpool_run },
};

const struct op_family op_family_cuda_unpool = {
	"cuda_unpool", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
