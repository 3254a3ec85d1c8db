/*
 * unary.c — the CUDA kernels of the elementwise functions of one tensor
 * (kernels/cpu/unary.c and kernels/cpu/math.c on the host): Relu, Sigmoid,
 * Tanh, Exp, Sqrt, Reciprocal, Neg, Abs, Log, Erf, Floor, Ceil, Round, with the
 * same type sets per opset as the reference kernels. Device side:
 * kernels/cuda/unary.cuh, compiled in unary.cu for the first types and
 * unary_wide.cu for float64, int16, uint16, uint32 and uint64.
 */
#include "kernels/cuda/launch.h"

#include <ctype.h>
#include <stdio.h>

struct unary_params {
	CUfunction fn;
	int64_t n;      /* elements */
};
CUDA_PARAMS_FIT(struct unary_params);

/* Kernels are named after the operator in lower case: relu_f32. */
static int unary_prepare(struct op_call *c, size_t *workspace)
{
	struct unary_params *p = (struct unary_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[48];
	size_t i;

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	for (i = 0; c->node->op_type[i] != '\0' && i + 1 < 32; i++)
		name[i] = (char)tolower((unsigned char)c->node->op_type[i]);
	snprintf(name + i, sizeof(name) - i, "_%s", sfx);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	return cuda_function_get(c->be, cuda_dtype_wide(c->in[0].dtype) ? "unary_wide" : "unary",
				 name, &p->fn);
}

static int unary_run(struct op_call *c)
{
	const struct unary_params *p = (const struct unary_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

/* The host's sets: float64 wherever float32 is, int16 among the signed
 * types (Relu's from opset 14). */
#define NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))
#define SIGNED OP_DTS_SIGNED
#define SIGNED_NO_I16 (OP_DTS_SIGNED & ~OP_DT(CEP_DTYPE_INT16))

#define UNARY_KERNEL(op, since, until, dts) \
	{ "", op, since, until, BACKEND_CUDA, dts, unary_prepare, unary_run }
/* float and float16, bfloat16 from opset 13 (kernels/cpu/math.c). */
#define UNARY_FLOAT(op) \
	UNARY_KERNEL(op, 1, 12, NO_BF16), UNARY_KERNEL(op, 13, OP_OPSET_MAX, OP_DTS_FLOAT)

static const struct op_kernel kernels[] = {
	UNARY_KERNEL("Relu", 1, 6, NO_BF16),
	UNARY_KERNEL("Relu", 7, 13, OP_DTS_FLOAT | SIGNED_NO_I16),
	UNARY_KERNEL("Relu", 14, OP_OPSET_MAX, OP_DTS_FLOAT | SIGNED),
	UNARY_KERNEL("Sigmoid", 1, 6, NO_BF16),
	UNARY_KERNEL("Sigmoid", 7, OP_OPSET_MAX, OP_DTS_FLOAT),
	UNARY_KERNEL("Tanh", 1, 6, NO_BF16),
	UNARY_KERNEL("Tanh", 7, OP_OPSET_MAX, OP_DTS_FLOAT),
	UNARY_KERNEL("Exp", 1, 6, NO_BF16),
	UNARY_KERNEL("Exp", 7, OP_OPSET_MAX, OP_DTS_FLOAT),
	UNARY_FLOAT("Sqrt"),
	UNARY_FLOAT("Reciprocal"),
	UNARY_FLOAT("Log"),
	UNARY_FLOAT("Floor"),
	UNARY_FLOAT("Ceil"),
	UNARY_KERNEL("Neg", 1, 5, NO_BF16),
	UNARY_KERNEL("Neg", 6, 12, NO_BF16 | SIGNED),
	UNARY_KERNEL("Neg", 13, OP_OPSET_MAX, OP_DTS_FLOAT | SIGNED),
	UNARY_KERNEL("Abs", 1, 5, NO_BF16),
	UNARY_KERNEL("Abs", 6, 12, NO_BF16 | OP_DTS_INT),
	UNARY_KERNEL("Abs", 13, OP_OPSET_MAX, OP_DTS_FLOAT | OP_DTS_INT),
	UNARY_KERNEL("Erf", 9, 12, NO_BF16 | OP_DTS_INT),
	UNARY_KERNEL("Erf", 13, OP_OPSET_MAX, OP_DTS_FLOAT),
	/* Round came at 11, bfloat16 at 22. */
	UNARY_KERNEL("Round", 11, 21, NO_BF16),
	UNARY_KERNEL("Round", 22, OP_OPSET_MAX, OP_DTS_FLOAT),
};

const struct op_family op_family_cuda_unary = {
	"cuda_unary", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
