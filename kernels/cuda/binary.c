/*
 * binary.c — the CUDA kernels of Add, Sub, Mul and Div for every numeric
 * type: kernels/cuda/binary.cu on the device. Numpy broadcasting from
 * opset 7; before, B is laid out as the view kernels/legacy.h makes of
 * it, as the host kernels do. prepare() lays out the broadcast once per plan and picks a
 * fast path when the layout has one (same shapes, a row vector, a single
 * element: vectorized, contiguous) or else the general kernel; run()
 * launches one grid over the output.
 */
#include "kernels/cuda/launch.h"
#include "kernels/legacy.h"

#include <stdio.h>

struct binary_params {
	CUfunction fn;
	struct cuda_bcast bc;   /* the general kernel's layout */
	int64_t cols;           /* fast path: output row length */
	int32_t fast;           /* fn is a fast path (takes n and cols) */
	unsigned grid;          /* blocks */
};
CUDA_PARAMS_FIT(struct binary_params);

static int binary_prepare(struct op_call *c, size_t *workspace, const char *op)
{
	struct binary_params *p = (struct binary_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->out[0].dtype);
	struct op_tensor bv;
	struct cuda_fast f;
	char name[32];
	int ret;

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->out[0].dtype));
	ret = op_legacy_bcast(c->node, &c->in[0], &c->in[1], &bv);
	if (ret < 0)
		return ret;
	cuda_bcast_init(&p->bc, &c->out[0], &c->in[0], &bv);
	p->fast = cuda_fast_init(&f, &p->bc);
	if (p->fast) {
		/* A thread per 16 bytes, as the fast path moves them. */
		p->cols = f.cols;
		p->grid = cuda_grid_elem(p->bc.n, c->out[0].dtype);
		snprintf(name, sizeof(name), "%s_%s_%s", op, sfx, f.name);
	} else {
		p->grid = cuda_grid(p->bc.n);
		snprintf(name, sizeof(name), "%s_%s", op, sfx);
	}
	return cuda_function_get(c->be, cuda_dtype_wide(c->out[0].dtype) ? "binary_wide" : "binary",
				 name, &p->fn);
}

static int binary_run(struct op_call *c)
{
	const struct binary_params *p = (const struct binary_params *)c->params;
	const void *a = c->in[0].data, *b = c->in[1].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &b, &o, (void *)&p->bc };
	void *fast_args[] = { &a, &b, &o, (void *)&p->bc.n, (void *)&p->cols };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0,
			   p->fast ? fast_args : args);
}

static int add_prepare(struct op_call *c, size_t *ws) { return binary_prepare(c, ws, "add"); }
static int sub_prepare(struct op_call *c, size_t *ws) { return binary_prepare(c, ws, "sub"); }
static int mul_prepare(struct op_call *c, size_t *ws) { return binary_prepare(c, ws, "mul"); }
static int div_prepare(struct op_call *c, size_t *ws) { return binary_prepare(c, ws, "div"); }

/* The host's types per opset (kernels/cpu/binary.c). */
#define BINARY_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
		      OP_DT(CEP_DTYPE_FLOAT64))
#define BINARY_DTS_6 (BINARY_DTS_1 | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		      OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
#define BINARY_DTS_7 (OP_DTS_NUMERIC & ~(OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_UINT16)))
#define BINARY_KERNEL(op, prepare) \
	{ "", op, 1, 5, BACKEND_CUDA, BINARY_DTS_1, prepare, binary_run }, \
	{ "", op, 6, 6, BACKEND_CUDA, BINARY_DTS_6, prepare, binary_run }, \
	{ "", op, 7, 13, BACKEND_CUDA, BINARY_DTS_7, prepare, binary_run }, \
	{ "", op, 14, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_NUMERIC, prepare, binary_run }

static const struct op_kernel kernels[] = {
	BINARY_KERNEL("Add", add_prepare),
	BINARY_KERNEL("Sub", sub_prepare),
	BINARY_KERNEL("Mul", mul_prepare),
	BINARY_KERNEL("Div", div_prepare),
};

const struct op_family op_family_cuda_binary = {
	"cuda_binary", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
