/*
 * argmax.c — the CUDA kernels of ArgMax and ArgMin (opset 7 on, with
 * select_last_index from 12) for every type the reference kernels take
 * (kernels/cpu/argmax.c): kernels/cuda/argmax.cu on the device. prepare()
 * sees the input as (outer, n, inner) around the axis and picks the row
 * kernel (a block per contiguous row) or the column kernel.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

/* Twin of struct cep_arg (argmax.cu). */
struct cuda_arg {
	int64_t outer, n, inner;
	int32_t last;
	int32_t pad;
};

struct arg_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_arg a;
};
CUDA_PARAMS_FIT(struct arg_params);

static int arg_prepare(struct op_call *c, size_t *workspace, const char *kernel)
{
	struct arg_params *p = (struct arg_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	const char *sfx = cuda_dtype_suffix(in->dtype);
	char name[40];
	int axis, ret;

	*workspace = 0;
	if (sfx == NULL || in->dtype == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(in->dtype));
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), in->rank, &axis);
	if (ret < 0)
		return ret;
	p->a = (struct cuda_arg){
		.outer = op_dims_product(in, 0, axis),
		.n = in->dims[axis],
		.inner = op_dims_product(in, axis + 1, in->rank),
		.last = c->node->opset >= 12 && op_attr_int(c->node, "select_last_index", 0) != 0,
	};
	if (p->a.n == 0 && p->a.outer * p->a.inner > 0)
		return cep__set_error(CEP_ESHAPE, "%s: dimension %d (the axis) is empty, there is no index to return",
				      c->node->op_type, axis);
	if (p->a.inner == 1) {
		p->block = p->a.n >= CUDA_BLOCK ? CUDA_BLOCK : 32 * (unsigned)((p->a.n + 31) / 32);
		p->grid = p->a.outer > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)p->a.outer;
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->a.outer * p->a.inner);
	}
	if (p->a.outer * p->a.n * p->a.inner == 0)
		p->grid = 0;
	snprintf(name, sizeof(name), "%s_%s_%s", kernel, p->a.inner == 1 ? "rows" : "cols", sfx);
	return cuda_function_get(c->be, "argmax", name, &p->fn);
}

static int arg_run(struct op_call *c)
{
	struct arg_params *p = (struct arg_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->a };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

static int argmax_prepare(struct op_call *c, size_t *ws) { return arg_prepare(c, ws, "argmax"); }
static int argmin_prepare(struct op_call *c, size_t *ws) { return arg_prepare(c, ws, "argmin"); }

/* The reference kernels' sets: bfloat16 came at 13. */
#define ARG_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | CUDA_DTS_INT)
#define ARG_DTS_13 (ARG_DTS_7 | OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "ArgMax", 1, 12, BACKEND_CUDA, ARG_DTS_7, argmax_prepare, arg_run },
	{ "", "ArgMax", 13, OP_OPSET_MAX, BACKEND_CUDA, ARG_DTS_13, argmax_prepare, arg_run },
	{ "", "ArgMin", 1, 12, BACKEND_CUDA, ARG_DTS_7, argmin_prepare, arg_run },
	{ "", "ArgMin", 13, OP_OPSET_MAX, BACKEND_CUDA, ARG_DTS_13, argmin_prepare, arg_run },
};

const struct op_family op_family_cuda_argmax = {
	"cuda_argmax", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
