/*
 * compare.c — the CUDA kernels of the comparisons, logic and selection of
 * kernels/cpu/compare.c: Equal, Less, LessOrEqual, Greater,
 * GreaterOrEqual, And, Or, Xor, Not and Where, with the host's type sets per
 * opset and, before opset 7, B laid out as kernels/legacy.h views it.
 * Device side: kernels/cuda/compare.cu. prepare() lays out the broadcast
 * once per plan and picks a comparison's fast path where the
 * layout has one (as kernels/cuda/binary.c does); run() launches one
 * grid over the output.
 */
#include "kernels/cuda/launch.h"
#include "kernels/legacy.h"

#include <ctype.h>
#include <stdio.h>

struct compare_params {
	CUfunction fn;
	struct cuda_bcast bc;   /* the general kernel's layout */
	int64_t cols;           /* fast path: output row length */
	int32_t fast;           /* fn is a fast path (takes n and cols) */
	unsigned grid;          /* blocks */
};
CUDA_PARAMS_FIT(struct compare_params);

struct not_params {
	CUfunction fn;
	int64_t n;                  /* elements */
};
CUDA_PARAMS_FIT(struct not_params);

struct where_params {
	CUfunction fn;
	struct cuda_bcastn bc;      /* operands: condition, X, Y */
};
CUDA_PARAMS_FIT(struct where_params);

/* Kernels are named after the operator in lower case and the type of its
 * operands: lessorequal_f16. */
static int compare_prepare(struct op_call *c, size_t *workspace)
{
	struct compare_params *p = (struct compare_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	struct op_tensor bv;
	struct cuda_fast f;
	char name[48];
	size_t i;
	int ret;

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	for (i = 0; c->node->op_type[i] != '\0' && i + 1 < 32; i++)
		name[i] = (char)tolower((unsigned char)c->node->op_type[i]);
	ret = op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	if (ret < 0)
		return ret;
	cuda_bcast_init(&p->bc, &c->out[0], &c->in[0], &bv);
	p->fast = cuda_fast_init(&f, &p->bc);
	if (p->fast) {
		p->cols = f.cols;
		p->grid = cuda_grid_elem(p->bc.n, c->in[0].dtype);
		snprintf(name + i, sizeof(name) - i, "_%s_%s", sfx, f.name);
	} else {
		p->grid = cuda_grid(p->bc.n);
		snprintf(name + i, sizeof(name) - i, "_%s", sfx);
	}
	return cuda_function_get(c->be, cuda_dtype_wide(c->in[0].dtype) ? "compare_wide" : "compare",
				 name, &p->fn);
}

static int compare_run(struct op_call *c)
{
	const struct compare_params *p = (const struct compare_params *)c->params;
	const void *a = c->in[0].data, *b = c->in[1].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &b, &o, (void *)&p->bc };
	void *fast_args[] = { &a, &b, &o, (void *)&p->bc.n, (void *)&p->cols };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0,
			   p->fast ? fast_args : args);
}

static int not_prepare(struct op_call *c, size_t *workspace)
{
	struct not_params *p = (struct not_params *)c->params;

	*workspace = 0;
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	return cuda_function_get(c->be, "compare", "not_bool", &p->fn);
}

static int not_run(struct op_call *c)
{
	const struct not_params *p = (const struct not_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, CEP_DTYPE_BOOL),
			   CUDA_BLOCK, 0, args);
}

/* Where never converts: one kernel per element width. */
static int where_prepare(struct op_call *c, size_t *workspace)
{
	struct where_params *p = (struct where_params *)c->params;
	const struct op_tensor *ins[3] = { &c->in[0], &c->in[1], &c->in[2] };
	size_t size = cep_dtype_size(c->out[0].dtype);
	char name[16];

	*workspace = 0;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return cep__set_error(CEP_EDTYPE, "Where: no cuda kernel for %s",
				      cep_dtype_name(c->out[0].dtype));
	snprintf(name, sizeof(name), "where_%zu", size * 8);
	cuda_bcastn_init(&p->bc, &c->out[0], ins, 3);
	return cuda_function_get(c->be, "compare", name, &p->fn);
}

static int where_run(struct op_call *c)
{
	const struct where_params *p = (const struct where_params *)c->params;
	const void *cond = c->in[0].data, *x = c->in[1].data, *y = c->in[2].data;
	void *o = c->out[0].data;
	void *args[] = { &cond, &x, &y, &o, (void *)&p->bc };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->bc.n), CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

/* The host's types per opset (kernels/cpu/compare.c). */
#define DTS_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))
#define DTS_EQUAL7 (OP_DT(CEP_DTYPE_BOOL) | OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32))

#define CMP_KERNEL(op, since, until, dts, prepare, run) \
	{ "", op, since, until, BACKEND_CUDA, dts, prepare, run }
#define CMP_COMPARE(op, since, until, dts) \
	CMP_KERNEL(op, since, until, dts, compare_prepare, compare_run)

static const struct op_kernel kernels[] = {
	CMP_COMPARE("Equal", 1, 10, DTS_EQUAL7),
	CMP_COMPARE("Equal", 11, 12, DTS_EQUAL7 | DTS_NO_BF16 | OP_DTS_INT),
	CMP_COMPARE("Equal", 13, OP_OPSET_MAX, OP_DTS_ALL),
	CMP_COMPARE("Less", 1, 8, DTS_NO_BF16),
	CMP_COMPARE("Less", 9, 12, DTS_NO_BF16 | OP_DTS_INT),
	CMP_COMPARE("Less", 13, OP_OPSET_MAX, OP_DTS_NUMERIC),
	CMP_COMPARE("LessOrEqual", 12, 15, DTS_NO_BF16 | OP_DTS_INT),
	CMP_COMPARE("LessOrEqual", 16, OP_OPSET_MAX, OP_DTS_NUMERIC),
	CMP_COMPARE("Greater", 1, 8, DTS_NO_BF16),
	CMP_COMPARE("Greater", 9, 12, DTS_NO_BF16 | OP_DTS_INT),
	CMP_COMPARE("Greater", 13, OP_OPSET_MAX, OP_DTS_NUMERIC),
	CMP_COMPARE("GreaterOrEqual", 12, 15, DTS_NO_BF16 | OP_DTS_INT),
	CMP_COMPARE("GreaterOrEqual", 16, OP_OPSET_MAX, OP_DTS_NUMERIC),
	CMP_COMPARE("And", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL)),
	CMP_COMPARE("Or", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL)),
	CMP_COMPARE("Xor", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL)),
	CMP_KERNEL("Not", 1, OP_OPSET_MAX, OP_DT(CEP_DTYPE_BOOL), not_prepare, not_run),
	CMP_KERNEL("Where", 9, 15, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), where_prepare,
		   where_run),
	CMP_KERNEL("Where", 16, OP_OPSET_MAX, OP_DTS_ALL, where_prepare, where_run),
};

const struct op_family op_family_cuda_compare = {
	"cuda_compare", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
