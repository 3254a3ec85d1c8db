/*
 * cast.c — the CUDA kernel of Cast, and of CastLike (whose target type,
 * that of its second input, inference has already given the output),
 * between every pair of stored types but the float8 ones
 * (kernels/cuda/cast.cu, with the rules of kernels/cpu/cast.c); a cast
 * to the same type is a device-to-device copy.
 */
#include "kernels/cuda/launch.h"

#include "kernels/cpu/cpu.h"

#include <stdio.h>

struct cast_params {
	CUfunction fn;  /* NULL: the types are equal, copy */
	int64_t n;      /* elements */
};
CUDA_PARAMS_FIT(struct cast_params);

static int cast_prepare(struct op_call *c, size_t *workspace)
{
	struct cast_params *p = (struct cast_params *)c->params;
	const char *from = cuda_dtype_suffix(c->in[0].dtype);
	const char *to = cuda_dtype_suffix(c->out[0].dtype);
	char name[32];

	*workspace = 0;
	p->fn = NULL;
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	/* The float8 types have device kernels of QuantizeLinear and
	 * DequantizeLinear only. */
	if (from == NULL || to == NULL || cpu_is_f8(c->in[0].dtype) || cpu_is_f8(c->out[0].dtype))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel from %s to %s",
				      c->node->op_type, cep_dtype_name(c->in[0].dtype),
				      cep_dtype_name(c->out[0].dtype));
	if (c->in[0].dtype == c->out[0].dtype)
		return 0;
	snprintf(name, sizeof(name), "cast_%s_%s", from, to);
	return cuda_function_get(c->be, "cast", name, &p->fn);
}

static int cast_run(struct op_call *c)
{
	const struct cast_params *p = (const struct cast_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	if (p->fn == NULL)
		return backend_copy_d2d(c->be, c->stream, o, a, op_tensor_bytes(&c->out[0]));
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

/* The 4-bit types are Cast's from opset 21 (float4e2m1 23), which
 * inference checks; the tables split where the host's do (19). */
static const struct op_kernel kernels[] = {
	{ "", "Cast", 1, 6, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), cast_prepare,
	  cast_run },
	{ "", "Cast", 7, 18, BACKEND_CUDA, OP_DTS_ALL, cast_prepare, cast_run },
	{ "", "Cast", 19, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL | OP_DTS_4BIT, cast_prepare,
	  cast_run },
	{ "", "CastLike", 15, 18, BACKEND_CUDA, OP_DTS_ALL, cast_prepare, cast_run },
	{ "", "CastLike", 19, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL | OP_DTS_4BIT, cast_prepare,
	  cast_run },
};

const struct op_family op_family_cuda_cast = {
	"cuda_cast", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
