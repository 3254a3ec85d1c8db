/*
 * generate.c — the CUDA kernels of ConstantOfShape (opset 9 on) and Range
 * (opset 11 on) for the types the reference kernels take
 * (kernels/cpu/generate.c): kernels/cuda/generate.cu on the device. Both
 * output shapes were fixed by inference from input values the planner
 * knew; ConstantOfShape's fill value is an attribute, kept here, and
 * Range's scalars are read by the kernel on the device.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

struct cos_params {
	CUfunction fn;
	int64_t n;          /* output elements */
	uint64_t value;     /* the fill value's bytes, from the lowest */
};
CUDA_PARAMS_FIT(struct cos_params);

static int cos_prepare(struct op_call *c, size_t *workspace)
{
	struct cos_params *p = (struct cos_params *)c->params;
	const struct op_attr *a = op_attr_find(c->node, "value");
	const struct op_tensor *out = &c->out[0];
	size_t es = cep_dtype_size(out->dtype);
	char name[16];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "ConstantOfShape: no cuda kernel for %s",
				      cep_dtype_name(out->dtype));
	/* Without the attribute the value is float32 0: all bits clear. */
	if (a != NULL) {
		if (a->type != OP_ATTR_TENSOR || a->t == NULL || a->t->data == NULL ||
		    a->t->dtype != out->dtype)
			return cep__set_error(CEP_EMODEL, "ConstantOfShape: 'value' must be a tensor of one %s",
					      cep_dtype_name(out->dtype));
		memcpy(&p->value, a->t->data, es);
	}
	p->n = op_dims_product(out, 0, out->rank);
	snprintf(name, sizeof(name), "fill_%zu", es);
	return cuda_function_get(c->be, "generate", name, &p->fn);
}

static int cos_run(struct op_call *c)
{
	struct cos_params *p = (struct cos_params *)c->params;
	void *y = c->out[0].data;
	void *args[] = { &y, &p->n, &p->value };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

struct range_params {
	CUfunction fn;
	int64_t n;
};
CUDA_PARAMS_FIT(struct range_params);

static int range_prepare(struct op_call *c, size_t *workspace)
{
	struct range_params *p = (struct range_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[24];

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "Range: no cuda kernel for %s",
				      cep_dtype_name(c->in[0].dtype));
	p->n = c->out[0].dims[0];
	snprintf(name, sizeof(name), "range_%s", sfx);
	return cuda_function_get(c->be, "generate", name, &p->fn);
}

static int range_run(struct op_call *c)
{
	struct range_params *p = (struct range_params *)c->params;
	const void *s = c->in[0].data, *l = c->in[1].data, *d = c->in[2].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &s, &l, &d, &y, &p->n, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty range, which still checks its count. */
	return cuda_launch(c->be, c->stream, p->fn, p->n > 0 ? cuda_grid(p->n) : 1, CUDA_BLOCK, 0,
			   args);
}

#define RANGE_TYPES_11 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT64) | \
			OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64))

static const struct op_kernel kernels[] = {
	{ "", "ConstantOfShape", 9, 19, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  cos_prepare, cos_run },
	{ "", "ConstantOfShape", 20, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, cos_prepare, cos_run },
	{ "", "Range", 11, 26, BACKEND_CUDA, RANGE_TYPES_11, range_prepare, range_run },
	{ "", "Range", 27, OP_OPSET_MAX, BACKEND_CUDA, RANGE_TYPES_11 | OP_DT(CEP_DTYPE_FLOAT16) |
	  OP_DT(CEP_DTYPE_BFLOAT16), range_prepare, range_run },
};

const struct op_family op_family_cuda_generate = {
	"cuda_generate", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
