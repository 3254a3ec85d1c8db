/*
 * normalize.c — the CUDA kernels of InstanceNormalization (opset 7 on;
 * bfloat16 from 22), GroupNormalization (18 and 21 on), RMSNormalization
 * (23 on) and LpNormalization (7 on; bfloat16 from 22) for the float
 * types, as the reference kernels take them (kernels/cpu/normalize.c):
 * kernels/cuda/normalize.cu on the device. prepare() reads the parameters
 * with the host's own cpu_*_read() (kernels/cpu/normalize.h) and sizes
 * the grid: a block per normalized row (groups, RMS rows, contiguous Lp
 * columns), with just enough warps for short rows, or a thread per
 * strided Lp column.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/normalize.h"

/* Threads of a block that strides along rows of n elements. */
static unsigned norm_block(int64_t n)
{
	return n >= CUDA_BLOCK ? CUDA_BLOCK : 32 * (unsigned)(n > 0 ? (n + 31) / 32 : 1);
}

/* A block per row, for rows rows (the kernels loop over the rest). */
static unsigned norm_grid(int64_t rows)
{
	return rows > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)rows;
}

/* The kernel-name suffix of x's float type, or NULL after setting the error. */
static const char *norm_suffix(const struct op_call *c)
{
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);

	if (sfx == NULL || !op_dtype_in(c->in[0].dtype, CUDA_DTS_FLOAT)) {
		cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
			       cep_dtype_name(c->in[0].dtype));
		return NULL;
	}
	return sfx;
}

/* --------------------------------------- Instance- and GroupNormalization */

/* Twin of struct cep_groupnorm (normalize.cu). */
struct cuda_groupnorm {
	int64_t rows, cols;
	int64_t groups, per_group, inner;
	double eps;
	int32_t by_group;
	int32_t pad;
};

struct gn_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_groupnorm gn;
};
CUDA_PARAMS_FIT(struct gn_params);

static int gn_prepare(struct op_call *c, size_t *workspace)
{
	struct gn_params *p = (struct gn_params *)c->params;
	const char *sfx = norm_suffix(c);
	struct cpu_groupnorm g;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return CEP_EDTYPE;
	if (op_dims_product(&c->in[1], 0, c->in[1].rank) != op_dims_product(&c->in[2], 0, c->in[2].rank))
		return cep__set_error(CEP_ESHAPE, "%s: scale and bias differ in size", c->node->op_type);
	ret = cpu_groupnorm_read(c->node, &c->in[0], op_dims_product(&c->in[1], 0, c->in[1].rank), &g);
	if (ret < 0)
		return ret;
	p->gn = (struct cuda_groupnorm){
		.rows = g.rows, .cols = g.cols, .groups = g.groups, .per_group = g.per_group,
		.inner = g.inner, .eps = g.eps, .by_group = g.by_group,
	};
	p->block = norm_block(g.cols);
	p->grid = g.cols > 0 ? norm_grid(g.rows) : 0;
	snprintf(name, sizeof(name), "groupnorm_%s", sfx);
	return cuda_function_get(c->be, "normalize", name, &p->fn);
}

static int gn_run(struct op_call *c)
{
	struct gn_params *p = (struct gn_params *)c->params;
	const void *x = c->in[0].data, *s = c->in[1].data, *b = c->in[2].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &s, &b, &y, &p->gn };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

/* -------------------------------------------------------- RMSNormalization */

/* Twin of struct cep_rms (normalize.cu); struct cpu_rms's layout. */
struct cuda_rms {
	int64_t rows, cols;
	double eps;
	int32_t rank, mode;
	int64_t dims[CEP_MAX_RANK];
	int64_t stride[CEP_MAX_RANK];
};

struct rms_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_rms rms;
};
CUDA_PARAMS_FIT(struct rms_params);

static int rms_prepare(struct op_call *c, size_t *workspace)
{
	struct rms_params *p = (struct rms_params *)c->params;
	const char *sfx = norm_suffix(c);
	struct cpu_rms r;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return CEP_EDTYPE;
	if (c->in[1].dtype != c->in[0].dtype)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for X of %s and Scale of %s",
				      c->node->op_type, cep_dtype_name(c->in[0].dtype),
				      cep_dtype_name(c->in[1].dtype));
	ret = cpu_rms_read(c->node, &c->in[0], &c->in[1], &r);
	if (ret < 0)
		return ret;
	p->rms.rows = r.rows;
	p->rms.cols = r.cols;
	p->rms.eps = r.eps;
	p->rms.rank = r.rank;
	p->rms.mode = r.mode;
	memcpy(p->rms.dims, r.dims, sizeof(p->rms.dims));
	memcpy(p->rms.stride, r.stride, sizeof(p->rms.stride));
	p->block = norm_block(r.cols);
	p->grid = r.cols > 0 ? norm_grid(r.rows) : 0;
	snprintf(name, sizeof(name), "rmsnorm_%s", sfx);
	return cuda_function_get(c->be, "normalize", name, &p->fn);
}

static int rms_run(struct op_call *c)
{
	struct rms_params *p = (struct rms_params *)c->params;
	const void *x = c->in[0].data, *s = c->in[1].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &s, &y, &p->rms };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

/* --------------------------------------------------------- LpNormalization */

/* Twin of struct cep_lpnorm (normalize.cu). */
struct cuda_lpnorm {
	int64_t outer, n, inner;
	int32_t p;
	int32_t pad;
};

struct lp_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_lpnorm lp;
};
CUDA_PARAMS_FIT(struct lp_params);

static int lp_prepare(struct op_call *c, size_t *workspace)
{
	struct lp_params *p = (struct lp_params *)c->params;
	const char *sfx = norm_suffix(c);
	struct cpu_lpnorm l;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return CEP_EDTYPE;
	ret = cpu_lpnorm_read(c->node, &c->in[0], &l);
	if (ret < 0)
		return ret;
	p->lp = (struct cuda_lpnorm){ .outer = l.outer, .n = l.n, .inner = l.inner, .p = l.p };
	if (l.inner == 1) {
		p->block = norm_block(l.n);
		p->grid = norm_grid(l.outer);
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(l.outer * l.inner);
	}
	if (l.outer * l.n * l.inner == 0)
		p->grid = 0;
	snprintf(name, sizeof(name), "lpnorm_%s_%s", l.inner == 1 ? "rows" : "cols", sfx);
	return cuda_function_get(c->be, "normalize", name, &p->fn);
}

static int lp_run(struct op_call *c)
{
	struct lp_params *p = (struct lp_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->lp };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

/* ------------------------------------------------------------------- table */

/* The reference kernels' ranges: bfloat16 arrived at opset 22. */
#define NORMALIZE_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "InstanceNormalization", 1, 21, BACKEND_CUDA, NORMALIZE_DTS_7, gn_prepare, gn_run },
	{ "", "InstanceNormalization", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  gn_prepare, gn_run },
	{ "", "GroupNormalization", 18, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, gn_prepare, gn_run },
	{ "", "RMSNormalization", 23, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, rms_prepare, rms_run },
	{ "", "LpNormalization", 1, 21, BACKEND_CUDA, NORMALIZE_DTS_7, lp_prepare, lp_run },
	{ "", "LpNormalization", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, lp_prepare, lp_run },
};

const struct op_family op_family_cuda_normalize = {
	"cuda_normalize", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
