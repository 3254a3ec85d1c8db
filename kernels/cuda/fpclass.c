/*
 * fpclass.c — the CUDA kernels of IsInf and IsNaN (kernels/cpu/fpclass.c
 * on the host), with the host's type sets per opset: IsInf float from
 * opset 10 and float16 and bfloat16 from 20, IsNaN float and float16 from
 * opset 9 and bfloat16 from 13. Device side: kernels/cuda/fpclass.cu.
 * prepare() reads IsInf's attributes and picks the kernel once per plan;
 * run() launches one grid over the tensor.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

struct fpclass_params {
	CUfunction fn;
	int64_t n;                  /* elements */
	int32_t pos, neg;           /* IsInf: whether +inf and -inf count */
};
CUDA_PARAMS_FIT(struct fpclass_params);

static int fpclass_prepare(struct op_call *c, const char *base)
{
	struct fpclass_params *p = (struct fpclass_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[32];

	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	snprintf(name, sizeof(name), "%s_%s", base, sfx);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	return cuda_function_get(c->be, "fpclass", name, &p->fn);
}

static int isinf_prepare(struct op_call *c, size_t *workspace)
{
	struct fpclass_params *p = (struct fpclass_params *)c->params;

	*workspace = 0;
	p->pos = op_attr_int(c->node, "detect_positive", 1) != 0;
	p->neg = op_attr_int(c->node, "detect_negative", 1) != 0;
	return fpclass_prepare(c, "isinf");
}

static int isnan_prepare(struct op_call *c, size_t *workspace)
{
	*workspace = 0;
	return fpclass_prepare(c, "isnan");
}

static int isinf_run(struct op_call *c)
{
	const struct fpclass_params *p = (const struct fpclass_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n, (void *)&p->pos, (void *)&p->neg };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

static int isnan_run(struct op_call *c)
{
	const struct fpclass_params *p = (const struct fpclass_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

#define F32_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "IsInf", 10, 19, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32), isinf_prepare, isinf_run },
	{ "", "IsInf", 20, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, isinf_prepare, isinf_run },
	{ "", "IsNaN", 9, 12, BACKEND_CUDA, F32_F16, isnan_prepare, isnan_run },
	{ "", "IsNaN", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, isnan_prepare, isnan_run },
};

const struct op_family op_family_cuda_fpclass = {
	"cuda_fpclass", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
