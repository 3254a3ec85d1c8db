/*
 * topk.c — the CUDA kernel of TopK (opset 1 on) for every type the
 * reference kernel takes at each opset (kernels/cpu/topk.c):
 * kernels/cuda/topk.cu on the device. The outputs' shape was fixed by
 * inference from k; the planner gives prepare() only shapes, so from
 * opset 10, where k is an input, the kernel reads it on the device and a
 * run whose k differs from the plan's fails at the stream's sync. Either
 * output may be left unnamed; the kernel then skips it.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Twin of struct cep_topk (topk.cu). */
struct cuda_topk {
	int64_t outer, n, inner;
	int64_t k;
	int32_t axis;
	int32_t largest;
};

struct topk_params {
	CUfunction fn;
	struct cuda_topk t;
};
CUDA_PARAMS_FIT(struct topk_params);

static int topk_prepare(struct op_call *c, size_t *workspace)
{
	struct topk_params *p = (struct topk_params *)c->params;
	const struct op_tensor *x = &c->in[0], *planned = NULL;
	const char *sfx = cuda_dtype_suffix(x->dtype);
	char name[24];
	int axis, i, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || x->dtype == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "TopK: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (c->node->opset >= 10 && (c->n_in < 2 || c->in[1].dtype != CEP_DTYPE_INT64))
		return cep__set_error(CEP_EDTYPE, "TopK: K must be an int64 input");
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", -1), x->rank, &axis);
	if (ret < 0)
		return ret;
	for (i = c->n_out - 1; i >= 0; i--) {
		if (op_tensor_present(&c->out[i]) && c->out[i].rank == x->rank)
			planned = &c->out[i];
	}
	p->t.outer = op_dims_product(x, 0, axis);
	p->t.n = x->dims[axis];
	p->t.inner = op_dims_product(x, axis + 1, x->rank);
	p->t.k = planned ? planned->dims[axis] : 0;
	p->t.axis = axis;
	p->t.largest = c->node->opset < 11 || op_attr_int(c->node, "largest", 1) != 0;
	if (p->t.k > p->t.n)
		return cep__set_error(CEP_EINVAL, "TopK: k is %" PRId64 ", more than the %" PRId64
				      " elements along axis %d", p->t.k, p->t.n, axis);
	snprintf(name, sizeof(name), "topk_%s", sfx);
	return cuda_function_get(c->be, "topk", name, &p->fn);
}

static int topk_run(struct op_call *c)
{
	struct topk_params *p = (struct topk_params *)c->params;
	const void *x = c->in[0].data;
	const void *k = c->node->opset >= 10 ? c->in[1].data : NULL;
	void *vals = c->out[0].data, *idx = c->n_out > 1 ? c->out[1].data : NULL;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &k, &vals, &idx, &p->t, &fault, &site };
	int64_t n = p->t.outer * p->t.n * p->t.inner;
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty input, which still checks k. */
	return cuda_launch(c->be, c->stream, p->fn, n > 0 ? cuda_grid(n) : 1, CUDA_BLOCK, 0, args);
}

/* The reference kernel's sets: the integers came at 11, bfloat16 at 24. */
#define TOPK_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | OP_DT(CEP_DTYPE_FLOAT64))
#define TOPK_DTS_11 (TOPK_DTS_1 | OP_DTS_INT)
#define TOPK_DTS_24 (TOPK_DTS_11 | OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "TopK", 1, 10, BACKEND_CUDA, TOPK_DTS_1, topk_prepare, topk_run },
	{ "", "TopK", 11, 23, BACKEND_CUDA, TOPK_DTS_11, topk_prepare, topk_run },
	{ "", "TopK", 24, OP_OPSET_MAX, BACKEND_CUDA, TOPK_DTS_24, topk_prepare, topk_run },
};

const struct op_family op_family_cuda_topk = {
	"cuda_topk", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
