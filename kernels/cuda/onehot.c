/*
 * onehot.c — the CUDA kernel of OneHot (opset 9 on) for every values type
 * the reference kernel takes (kernels/cpu/onehot.c), with indices of any
 * type it takes: kernels/cuda/onehot.cu on the device. The output's shape
 * was fixed by inference from depth's value; the planner gives prepare()
 * only shapes, so the kernel reads depth on the device and a run whose
 * depth differs from the plan's fails at the stream's sync.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Twin of struct cep_onehot (onehot.cu). */
struct cuda_onehot {
	int64_t n;
	int64_t depth;
	int64_t inner;
	int32_t axis;
	int32_t wrap;
	int32_t depth_type;
	int32_t pad;
};

struct onehot_params {
	CUfunction fn;
	struct cuda_onehot h;
};
CUDA_PARAMS_FIT(struct onehot_params);

/* The index types of indices and depth (T1, T2): no bfloat16, no bool. */
#define ONEHOT_INDEX_DTS (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | CUDA_DTS_INT)

static int onehot_prepare(struct op_call *c, size_t *workspace)
{
	struct onehot_params *p = (struct onehot_params *)c->params;
	const struct op_tensor *idx = &c->in[0], *depth = &c->in[1], *out = &c->out[0];
	size_t es = cep_dtype_size(c->in[2].dtype);
	int64_t a = op_attr_int(c->node, "axis", -1);
	int r = idx->rank;
	char name[32];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "OneHot: no cuda kernel for %s",
				      cep_dtype_name(c->in[2].dtype));
	if (!op_dtype_in(idx->dtype, ONEHOT_INDEX_DTS) || !op_dtype_in(depth->dtype, ONEHOT_INDEX_DTS))
		return cep__set_error(CEP_EDTYPE, "OneHot: no cuda kernel for indices of %s and depth of %s",
				      cep_dtype_name(idx->dtype), cep_dtype_name(depth->dtype));
	if (a < -(int64_t)r - 1 || a > r || out->rank != r + 1)
		return cep__set_error(CEP_EMODEL, "OneHot: axis %" PRId64 " is out of range for indices of rank %d",
				      a, r);
	p->h.axis = (int32_t)(a < 0 ? a + r + 1 : a);
	p->h.n = op_dims_product(out, 0, out->rank);
	p->h.depth = out->dims[p->h.axis];
	p->h.inner = op_dims_product(idx, p->h.axis, r);
	p->h.wrap = c->node->opset >= 11;
	p->h.depth_type = depth->dtype;
	snprintf(name, sizeof(name), "onehot_%zu_%s", es, cuda_dtype_suffix(idx->dtype));
	return cuda_function_get(c->be, "onehot", name, &p->fn);
}

static int onehot_run(struct op_call *c)
{
	struct onehot_params *p = (struct onehot_params *)c->params;
	const void *idx = c->in[0].data, *depth = c->in[1].data, *values = c->in[2].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &idx, &depth, &values, &y, &p->h, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty output, which still checks depth. */
	return cuda_launch(c->be, c->stream, p->fn, p->h.n > 0 ? cuda_grid(p->h.n) : 1,
			   CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "OneHot", 9, 27, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  onehot_prepare, onehot_run },
	{ "", "OneHot", 28, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, onehot_prepare, onehot_run },
};

const struct op_family op_family_cuda_onehot = {
	"cuda_onehot", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
