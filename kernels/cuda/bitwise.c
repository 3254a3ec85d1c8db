/*
 * bitwise.c — the CUDA kernels of the bitwise operators of
 * kernels/cpu/bitwise.c: BitShift (the unsigned types from opset 11; the
 * signed ones too from 28), BitwiseAnd, BitwiseOr, BitwiseXor and
 * BitwiseNot (opset 18 on, every integer type), as on the host. Device
 * side: kernels/cuda/bitwise.cuh, compiled in bitwise.cu for the first
 * integer types and bitwise_wide.cu for the others. prepare() lays out the broadcast once per plan
 * and picks a fast path where the layout has one (as kernels/cuda/binary.c
 * does); run() launches one grid over the output.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

struct bitwise_params {
	CUfunction fn;
	struct cuda_bcast bc;   /* the general kernel's layout */
	int64_t cols;           /* fast path: output row length */
	int32_t fast;           /* fn is a fast path (takes n and cols) */
	unsigned grid;          /* blocks */
};
CUDA_PARAMS_FIT(struct bitwise_params);

struct bitwise_not_params {
	CUfunction fn;
	int64_t n;              /* elements */
};
CUDA_PARAMS_FIT(struct bitwise_not_params);

/* The source that has dtype's kernels. */
static const char *bitwise_source(cep_dtype dtype)
{
	return cuda_dtype_wide(dtype) ? "bitwise_wide" : "bitwise";
}

static int bitwise_prepare(struct op_call *c, size_t *workspace, const char *op)
{
	struct bitwise_params *p = (struct bitwise_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->out[0].dtype);
	struct cuda_fast f;
	char name[40];

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->out[0].dtype));
	cuda_bcast_init(&p->bc, &c->out[0], &c->in[0], &c->in[1]);
	p->fast = cuda_fast_init(&f, &p->bc);
	if (p->fast) {
		p->cols = f.cols;
		p->grid = cuda_grid_elem(p->bc.n, c->out[0].dtype);
		snprintf(name, sizeof(name), "%s_%s_%s", op, sfx, f.name);
	} else {
		p->grid = cuda_grid(p->bc.n);
		snprintf(name, sizeof(name), "%s_%s", op, sfx);
	}
	return cuda_function_get(c->be, bitwise_source(c->out[0].dtype), name, &p->fn);
}

/* The schema's inference already refused a direction other than LEFT
 * and RIGHT. */
static int bitshift_prepare(struct op_call *c, size_t *ws)
{
	const char *d = op_attr_string(c->node, "direction", "");

	return bitwise_prepare(c, ws, strcmp(d, "LEFT") == 0 ? "bitshiftleft" : "bitshiftright");
}

static int bitwise_and_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_prepare(c, ws, "bitwiseand");
}

static int bitwise_or_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_prepare(c, ws, "bitwiseor");
}

static int bitwise_xor_prepare(struct op_call *c, size_t *ws)
{
	return bitwise_prepare(c, ws, "bitwisexor");
}

static int bitwise_run(struct op_call *c)
{
	const struct bitwise_params *p = (const struct bitwise_params *)c->params;
	const void *a = c->in[0].data, *b = c->in[1].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &b, &o, (void *)&p->bc };
	void *fast_args[] = { &a, &b, &o, (void *)&p->bc.n, (void *)&p->cols };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0,
			   p->fast ? fast_args : args);
}

static int bitwise_not_prepare(struct op_call *c, size_t *workspace)
{
	struct bitwise_not_params *p = (struct bitwise_not_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[32];

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "BitwiseNot: no cuda kernel for %s",
				      cep_dtype_name(c->in[0].dtype));
	snprintf(name, sizeof(name), "bitwisenot_%s", sfx);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	return cuda_function_get(c->be, bitwise_source(c->in[0].dtype), name, &p->fn);
}

static int bitwise_not_run(struct op_call *c)
{
	const struct bitwise_not_params *p = (const struct bitwise_not_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

#define BIT_KERNEL(op, since, until, dts, prepare, run) \
	{ "", op, since, until, BACKEND_CUDA, dts, prepare, run }

static const struct op_kernel kernels[] = {
	BIT_KERNEL("BitShift", 11, 27, OP_DTS_UNSIGNED, bitshift_prepare, bitwise_run),
	BIT_KERNEL("BitShift", 28, OP_OPSET_MAX, OP_DTS_INT, bitshift_prepare, bitwise_run),
	BIT_KERNEL("BitwiseAnd", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_and_prepare, bitwise_run),
	BIT_KERNEL("BitwiseOr", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_or_prepare, bitwise_run),
	BIT_KERNEL("BitwiseXor", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_xor_prepare, bitwise_run),
	BIT_KERNEL("BitwiseNot", 18, OP_OPSET_MAX, OP_DTS_INT, bitwise_not_prepare,
		   bitwise_not_run),
};

const struct op_family op_family_cuda_bitwise = {
	"cuda_bitwise", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
