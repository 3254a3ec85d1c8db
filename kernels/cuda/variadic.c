/*
 * variadic.c — the CUDA kernels of Min, Max, Sum and Mean
 * (kernels/cpu/variadic.c on the host), with its type sets per opset, and
 * com.microsoft BiasAdd, which is Sum of its three inputs.
 * Device side: kernels/cuda/variadic.cuh, compiled in variadic.cu for the
 * first types and variadic_wide.cu for float64, int16, uint16, uint32 and
 * uint64.
 *
 * One launch folds up to CUDA_BCASTN_MAX inputs; prepare() lays out the
 * broadcast of the first launch, which is all but the rarest nodes need.
 * A node with more inputs launches again for each further group, laying
 * it out in run() (a few loops over the dims, no allocation), and keeps
 * the running float result of float16 and bfloat16 in a workspace so that
 * it is rounded once, as the host does.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

struct variadic_params {
	CUfunction fn;
	struct cuda_bcastn bc;      /* the first launch's inputs */
	float div;                  /* Mean: the number of inputs */
	int32_t float_acc;          /* whether a running result is kept in float */
};
CUDA_PARAMS_FIT(struct variadic_params);

/* Lays out inputs first.. (at most CUDA_BCASTN_MAX) of c against its
 * output. */
static void variadic_layout(const struct op_call *c, int first, struct cuda_bcastn *bc)
{
	const struct op_tensor *ins[CUDA_BCASTN_MAX];
	int k, n = c->n_in - first;

	if (n > CUDA_BCASTN_MAX)
		n = CUDA_BCASTN_MAX;
	for (k = 0; k < n; k++)
		ins[k] = &c->in[first + k];
	cuda_bcastn_init(bc, &c->out[0], ins, n);
}

static int variadic_prepare(struct op_call *c, size_t *workspace, const char *op)
{
	struct variadic_params *p = (struct variadic_params *)c->params;
	cep_dtype t = c->out[0].dtype;
	const char *sfx = cuda_dtype_suffix(t);
	char name[32];

	*workspace = 0;
	if (sfx == NULL || t == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(t));
	p->float_acc = t == CEP_DTYPE_FLOAT32 || t == CEP_DTYPE_FLOAT16 ||
		       t == CEP_DTYPE_BFLOAT16;
	if (c->n_in > CUDA_BCASTN_MAX && (t == CEP_DTYPE_FLOAT16 || t == CEP_DTYPE_BFLOAT16))
		*workspace = (size_t)op_dims_product(&c->out[0], 0, c->out[0].rank) *
			     sizeof(float);
	p->div = (float)c->n_in;
	variadic_layout(c, 0, &p->bc);
	snprintf(name, sizeof(name), "%s_%s", op, sfx);
	return cuda_function_get(c->be, cuda_dtype_wide(t) ? "variadic_wide" : "variadic", name,
				 &p->fn);
}

static int variadic_run(struct op_call *c)
{
	const struct variadic_params *p = (const struct variadic_params *)c->params;
	struct cuda_bcastn later;
	const struct cuda_bcastn *bc = &p->bc;
	uint64_t ptrs[CUDA_BCASTN_MAX];
	void *o = c->out[0].data;
	void *acc = NULL;
	int first, k, from_acc, last, ret;
	void *args[] = { ptrs, &o, &acc, NULL, &from_acc, &last, (void *)&p->div };

	/* float32 keeps its running result in the output itself. */
	if (p->float_acc)
		acc = c->out[0].dtype == CEP_DTYPE_FLOAT32 ? o : c->workspace;
	for (first = 0; first < c->n_in; first += CUDA_BCASTN_MAX) {
		if (first > 0) {
			variadic_layout(c, first, &later);
			bc = &later;
		}
		for (k = 0; k < bc->n_in; k++)
			ptrs[k] = (uint64_t)(uintptr_t)c->in[first + k].data;
		args[3] = (void *)bc;
		from_acc = first > 0;
		last = first + CUDA_BCASTN_MAX >= c->n_in;
		ret = cuda_launch(c->be, c->stream, p->fn, cuda_grid(bc->n), CUDA_BLOCK, 0, args);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int min_prepare(struct op_call *c, size_t *ws) { return variadic_prepare(c, ws, "min"); }
static int max_prepare(struct op_call *c, size_t *ws) { return variadic_prepare(c, ws, "max"); }
static int sum_prepare(struct op_call *c, size_t *ws) { return variadic_prepare(c, ws, "sum"); }
static int mean_prepare(struct op_call *c, size_t *ws) { return variadic_prepare(c, ws, "mean"); }

/* ------------------------------------------------------------------- table */

#define F32_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))
#define F32_F16_F64 (F32_F16 | OP_DT(CEP_DTYPE_FLOAT64))

#define VAR_KERNEL(op, since, until, dts, prepare) \
	{ "", op, since, until, BACKEND_CUDA, dts, prepare, variadic_run }

static const struct op_kernel kernels[] = {
	VAR_KERNEL("Min", 1, 11, F32_F16_F64, min_prepare),
	VAR_KERNEL("Min", 12, 12, F32_F16_F64 | OP_DTS_INT, min_prepare),
	VAR_KERNEL("Min", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, min_prepare),
	VAR_KERNEL("Max", 1, 11, F32_F16_F64, max_prepare),
	VAR_KERNEL("Max", 12, 12, F32_F16_F64 | OP_DTS_INT, max_prepare),
	VAR_KERNEL("Max", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, max_prepare),
	VAR_KERNEL("Sum", 1, 12, F32_F16_F64, sum_prepare),
	VAR_KERNEL("Sum", 13, OP_OPSET_MAX, OP_DTS_FLOAT, sum_prepare),
	VAR_KERNEL("Mean", 1, 12, F32_F16_F64, mean_prepare),
	VAR_KERNEL("Mean", 13, OP_OPSET_MAX, OP_DTS_FLOAT, mean_prepare),
	/* com.microsoft BiasAdd: Sum of X, bias and skip, as on the host. */
	{ OP_DOMAIN_MS, "BiasAdd", 1, OP_MS_OPSET_MAX, BACKEND_CUDA, F32_F16, sum_prepare,
	  variadic_run },
};

const struct op_family op_family_cuda_variadic = {
	"cuda_variadic", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
