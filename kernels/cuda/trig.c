/*
 * trig.c — the CUDA kernels of the trigonometric and hyperbolic functions
 * of kernels/cpu/trig.c: Sin, Cos, Tan, Asin, Acos, Atan (opset 7 on),
 * Sinh, Cosh, Asinh, Acosh, Atanh (opset 9 on), float and float16, and
 * bfloat16 from opset 22, as on the host. Device side:
 * kernels/cuda/trig.cu. prepare() picks the kernel once per plan; run()
 * launches one grid over the tensor.
 */
#include "kernels/cuda/launch.h"

#include <ctype.h>
#include <stdio.h>

struct trig_params {
	CUfunction fn;
	int64_t n;      /* elements */
};
CUDA_PARAMS_FIT(struct trig_params);

/* Kernels are named after the operator in lower case: asinh_f16. */
static int trig_prepare(struct op_call *c, size_t *workspace)
{
	struct trig_params *p = (struct trig_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[32];
	size_t i;

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	for (i = 0; c->node->op_type[i] != '\0' && i + 1 < 16; i++)
		name[i] = (char)tolower((unsigned char)c->node->op_type[i]);
	snprintf(name + i, sizeof(name) - i, "_%s", sfx);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	return cuda_function_get(c->be, "trig", name, &p->fn);
}

static int trig_run(struct op_call *c)
{
	const struct trig_params *p = (const struct trig_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

#define F32_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

#define TRIG_KERNEL(op, since, until, dts) \
	{ "", op, since, until, BACKEND_CUDA, dts, trig_prepare, trig_run }
/* float and float16, bfloat16 from opset 22 (kernels/cpu/trig.c). */
#define TRIG_KERNELS(op, since) \
	TRIG_KERNEL(op, since, 21, F32_F16), TRIG_KERNEL(op, 22, OP_OPSET_MAX, CUDA_DTS_FLOAT)

static const struct op_kernel kernels[] = {
	TRIG_KERNELS("Sin", 7),
	TRIG_KERNELS("Cos", 7),
	TRIG_KERNELS("Tan", 7),
	TRIG_KERNELS("Asin", 7),
	TRIG_KERNELS("Acos", 7),
	TRIG_KERNELS("Atan", 7),
	TRIG_KERNELS("Sinh", 9),
	TRIG_KERNELS("Cosh", 9),
	TRIG_KERNELS("Asinh", 9),
	TRIG_KERNELS("Acosh", 9),
	TRIG_KERNELS("Atanh", 9),
};

const struct op_family op_family_cuda_trig = {
	"cuda_trig", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
