/*
 * cast.c — the CUDA kernel of Cast, and of CastLike (whose target type,
 * that of its second input, inference has already given the output),
 * between every pair of stored types (kernels/cuda/cast.cu, with the
 * rules of kernels/cpu/cast.c; kernels/cuda/cast_f8.cu where either side
 * is a float8 type, with `saturate`, opset 19 on; the 4-bit types in
 * cast.cu, from opset 21); a cast to the same
 * type is a device-to-device copy.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

struct cast_params {
	CUfunction fn;  /* NULL: the types are equal, copy */
	int64_t n;      /* elements */
	int32_t saturate; /* cast_f8.cu's kernels: to float8, saturating */
	bool f8;        /* fn is one of cast_f8.cu's */
};
CUDA_PARAMS_FIT(struct cast_params);

static bool cast_is_f8(cep_dtype dtype)
{
	return dtype >= CEP_DTYPE_FLOAT8E4M3FN && dtype <= CEP_DTYPE_FLOAT8E5M2FNUZ;
}

static int cast_prepare(struct op_call *c, size_t *workspace)
{
	struct cast_params *p = (struct cast_params *)c->params;
	cep_dtype from_t = c->in[0].dtype, to_t = c->out[0].dtype;
	const char *from = cuda_dtype_suffix(from_t);
	const char *to = cuda_dtype_suffix(to_t);
	char name[40];

	*workspace = 0;
	p->fn = NULL;
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	p->saturate = c->node->opset < 19 || op_attr_int(c->node, "saturate", 1) != 0;
	p->f8 = cast_is_f8(from_t) || cast_is_f8(to_t);
	if (from == NULL || to == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel from %s to %s",
				      c->node->op_type, cep_dtype_name(from_t),
				      cep_dtype_name(to_t));
	if (from_t == to_t)
		return 0;
	snprintf(name, sizeof(name), "cast_%s_%s", from, to);
	return cuda_function_get(c->be, p->f8 ? "cast_f8" : "cast", name, &p->fn);
}

static int cast_run(struct op_call *c)
{
	const struct cast_params *p = (const struct cast_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	/* cast.cu's kernels take the first three (the driver reads as many
	 * as the kernel has), cast_f8.cu's all four. */
	void *args[] = { &a, &o, (void *)&p->n, (void *)&p->saturate };

	if (p->fn == NULL)
		return backend_copy_d2d(c->be, c->stream, o, a, op_tensor_bytes(&c->out[0]));
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

/* 19 brought the float8 types (and saturate), as on the host; the 4-bit
 * types are Cast's from opset 21 (float4e2m1 23), which inference checks. */
static const struct op_kernel kernels[] = {
	{ "", "Cast", 1, 6, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), cast_prepare,
	  cast_run },
	{ "", "Cast", 7, 18, BACKEND_CUDA, OP_DTS_ALL, cast_prepare, cast_run },
	{ "", "Cast", 19, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_STORED, cast_prepare, cast_run },
	{ "", "CastLike", 15, 18, BACKEND_CUDA, OP_DTS_ALL, cast_prepare, cast_run },
	{ "", "CastLike", 19, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_STORED, cast_prepare, cast_run },
};

const struct op_family op_family_cuda_cast = {
	"cuda_cast", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
