/*
 * softmax.c — the CUDA kernels of Softmax and LogSoftmax (opset 7 on, both
 * axis rules) for float32, float16 and bfloat16: kernels/cuda/softmax.cu
 * on the device. prepare() sees the input as (outer, n, inner) exactly as
 * the reference kernels do (kernels/cpu/softmax.c) and picks the warp
 * kernel (a warp per contiguous row of up to 1024 elements in whole
 * 16-byte vectors), the row kernel (a block per longer contiguous row) or
 * the column kernel (a thread per strided column); run() launches it.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

/* Twin of struct cep_softmax (softmax.cu). */
struct cuda_softmax {
	int64_t outer, n, inner;
};

struct softmax_params {
	CUfunction fn;
	struct cuda_softmax sm;
	unsigned grid, block;
};
CUDA_PARAMS_FIT(struct softmax_params);

/* Vectors per lane the warp kernels come in, ascending, 0-terminated. */
static const int softmax_warp_nv_f32[] = { 1, 2, 4, 8, 0 };
static const int softmax_warp_nv_16[] = { 1, 2, 4, 0 };

/* The vectors per lane of the warp kernel for rows of n elements of size
 * bytes each, or 0 when they need the row kernel. */
static int softmax_warp_nv(int64_t n, size_t size)
{
	const int *nv = size == 4 ? softmax_warp_nv_f32 : softmax_warp_nv_16;
	int64_t v = 16 / (int64_t)size;
	int i;

	if (n <= 0 || n % v != 0)
		return 0;
	for (i = 0; nv[i] != 0; i++) {
		if (32 * v * nv[i] >= n)
			return nv[i];
	}
	return 0;
}

static int softmax_prepare(struct op_call *c, size_t *workspace, const char *kernel)
{
	struct softmax_params *p = (struct softmax_params *)c->params;
	const struct op_tensor *t = &c->in[0];
	const char *sfx = cuda_dtype_suffix(t->dtype);
	char name[40];
	int ret, nv = 0;

	*workspace = 0;
	if (sfx == NULL || !op_dtype_in(t->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(t->dtype));
	ret = op_softmax_blocks(c->node, t, &p->sm.outer, &p->sm.n, &p->sm.inner);
	if (ret < 0)
		return ret;
	if (p->sm.inner == 1)
		nv = softmax_warp_nv(p->sm.n, cep_dtype_size(t->dtype));
	if (nv > 0) {
		/* A warp per row, CUDA_BLOCK / 32 rows per block. */
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->sm.outer * 32);
	} else if (p->sm.inner == 1) {
		/* Rows shorter than a full block get just enough warps. */
		p->block = p->sm.n >= CUDA_BLOCK ? CUDA_BLOCK : (unsigned)((p->sm.n + 31) / 32) * 32;
		p->grid = p->sm.outer > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX
							       : (unsigned)p->sm.outer;
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->sm.outer * p->sm.inner);
	}
	if (p->sm.outer * p->sm.n * p->sm.inner == 0)
		p->grid = 0;
	if (nv > 0)
		snprintf(name, sizeof(name), "%s_warp_%s_%d", kernel, sfx, nv);
	else
		snprintf(name, sizeof(name), "%s_%s_%s", kernel, p->sm.inner == 1 ? "rows" : "cols",
			 sfx);
	return cuda_function_get(c->be, "softmax", name, &p->fn);
}

static int softmax_run(struct op_call *c)
{
	struct softmax_params *p = (struct softmax_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->sm };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

static int sm_prepare(struct op_call *c, size_t *ws) { return softmax_prepare(c, ws, "softmax"); }
static int lsm_prepare(struct op_call *c, size_t *ws) { return softmax_prepare(c, ws, "logsoftmax"); }

/* The reference kernels' ranges: bfloat16 arrived at opset 13. */
#define SOFTMAX_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "Softmax", 1, 12, BACKEND_CUDA, SOFTMAX_DTS_7, sm_prepare, softmax_run },
	{ "", "Softmax", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, sm_prepare, softmax_run },
	{ "", "LogSoftmax", 1, 12, BACKEND_CUDA, SOFTMAX_DTS_7, lsm_prepare, softmax_run },
	{ "", "LogSoftmax", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, lsm_prepare, softmax_run },
};

const struct op_family op_family_cuda_softmax = {
	"cuda_softmax", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
