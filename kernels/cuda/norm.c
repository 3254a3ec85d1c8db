/*
 * norm.c — the CUDA kernels of LayerNormalization (opset 17, with its
 * optional Mean and InvStdDev outputs) and of BatchNormalization in
 * inference form (opsets 7 on) for the float types: kernels/cuda/norm.cu
 * on the device. prepare() reads the attributes and shapes as the
 * reference kernels do (kernels/cpu/norm.c) and lays out how Scale and B
 * broadcast, and gives rows of up to 1024 columns read with Scale and B
 * by column or as one value a warp each (layernorm_warp_*), longer or
 * other rows a block each; BatchNormalization asks for a workspace holding each
 * channel's folded a and b, which run() fills before mapping X.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------ LayerNormalization */

enum ln_mode { LN_ABSENT, LN_ONE, LN_COLUMN, LN_BCAST }; /* as norm.cu's */

/* Twin of struct cep_ln (norm.cu). */
struct cuda_ln {
	int64_t rows, cols;
	double eps;
	int32_t rank;
	int32_t smode, bmode;              /* enum ln_mode of Scale and B */
	int32_t stash_bf16;
	int64_t dims[CEP_MAX_RANK];        /* (rank) of X */
	int64_t sstride[CEP_MAX_RANK];     /* (rank) elements; 0: broadcast */
	int64_t bstride[CEP_MAX_RANK];
};

struct ln_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_ln ln;
};
CUDA_PARAMS_FIT(struct ln_params);

/* Vectors per lane the warp kernels of norm.cu come in, per element
 * size (16 / size elements per vector), ascending, 0-terminated. */
static const int ln_warp_nv_f32[] = { 1, 2, 3, 4, 6, 8, 0 };
static const int ln_warp_nv_16[] = { 1, 2, 3, 4, 0 };

/* The vectors per lane of the warp kernel for rows of cols elements of
 * size bytes each, or 0 when the block kernel must take them. */
static int ln_warp_nv(int64_t cols, size_t size)
{
	const int *nv = size == 4 ? ln_warp_nv_f32 : ln_warp_nv_16;
	int64_t v = 16 / (int64_t)size;
	int i;

	if (cols <= 0 || cols % v != 0)
		return 0;
	for (i = 0; nv[i] != 0; i++) {
		if (32 * v * nv[i] >= cols)
			return nv[i];
	}
	return 0;
}

/* How q (Scale or B), broadcast one way to x, is indexed by (row, column),
 * and its strides over x's dims for LN_BCAST. */
static enum ln_mode ln_mode_of(const struct op_tensor *x, const struct op_tensor *q, int axis,
			       int64_t *stride)
{
	enum ln_mode mode = LN_COLUMN;
	int64_t s = 1;
	int d;

	if (q == NULL || !op_tensor_present(q))
		return LN_ABSENT;
	for (d = x->rank - 1; d >= 0; d--) {
		int qd = d - (x->rank - q->rank);
		int64_t size = qd >= 0 ? q->dims[qd] : 1;

		stride[d] = size == 1 ? 0 : s;
		s *= size;
		if (d < axis ? size != 1 : size != x->dims[d])
			mode = LN_BCAST;
	}
	return s == 1 ? LN_ONE : mode;
}

static int ln_prepare(struct op_call *c, size_t *workspace)
{
	struct ln_params *p = (struct ln_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	int64_t stash = op_attr_int(c->node, "stash_type", 1);
	char name[40];
	int axis, ret, nv;

	*workspace = 0;
	memset(&p->ln, 0, sizeof(p->ln));
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "LayerNormalization: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (stash != CEP_DTYPE_FLOAT32 && stash != CEP_DTYPE_BFLOAT16)
		return cep__set_error(CEP_EMODEL, "LayerNormalization: stash_type %" PRId64
				      " is not float32 (1) or bfloat16 (16)", stash);
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", -1), x->rank, &axis);
	if (ret < 0)
		return ret;
	p->ln.rows = op_dims_product(x, 0, axis);
	p->ln.cols = op_dims_product(x, axis, x->rank);
	p->ln.eps = op_attr_float(c->node, "epsilon", 1e-5f);
	p->ln.rank = x->rank;
	p->ln.stash_bf16 = stash == CEP_DTYPE_BFLOAT16;
	memcpy(p->ln.dims, x->dims, sizeof(p->ln.dims));
	p->ln.smode = ln_mode_of(x, &c->in[1], axis, p->ln.sstride);
	p->ln.bmode = ln_mode_of(x, c->n_in > 2 ? &c->in[2] : NULL, axis, p->ln.bstride);
	nv = p->ln.smode != LN_BCAST && p->ln.bmode != LN_BCAST
		     ? ln_warp_nv(p->ln.cols, cep_dtype_size(x->dtype)) : 0;
	if (nv > 0) {
		/* A warp per row, CUDA_BLOCK / 32 rows per block. */
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->ln.rows * 32);
		snprintf(name, sizeof(name), "layernorm_warp_%s_%d", sfx, nv);
	} else {
		/* Rows of no columns still get their (NaN) statistics, as on
		 * the host. */
		p->block = p->ln.cols >= CUDA_BLOCK
				   ? CUDA_BLOCK
				   : 32 * (unsigned)(p->ln.cols > 0 ? (p->ln.cols + 31) / 32 : 1);
		p->grid = p->ln.rows > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX
							      : (unsigned)p->ln.rows;
		snprintf(name, sizeof(name), "layernorm_%s", sfx);
	}
	return cuda_function_get(c->be, "norm", name, &p->fn);
}

static int ln_run(struct op_call *c)
{
	struct ln_params *p = (struct ln_params *)c->params;
	const void *x = c->in[0].data, *s = c->in[1].data;
	const void *b = c->n_in > 2 ? c->in[2].data : NULL;
	void *y = c->out[0].data;
	void *mean = c->n_out > 1 ? c->out[1].data : NULL;
	void *inv = c->n_out > 2 ? c->out[2].data : NULL;
	void *args[] = { &x, &s, &b, &y, &mean, &inv, &p->ln };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

/* ------------------------------------------------------ BatchNormalization */

/* Twin of struct cep_bn (norm.cu). */
struct cuda_bn {
	int64_t n;
	int64_t channels, inner;
	int64_t n_params;
	double eps;
	int32_t spatial;
	int32_t code_sb, code_mv;       /* 0 float32, 1 float16, 2 bfloat16 */
	int32_t pad;
};

struct bn_params {
	CUfunction coef, apply;
	struct cuda_bn bn;
};
CUDA_PARAMS_FIT(struct bn_params);

/* norm.cu's code of a float type, -1 for another. */
static int bn_code(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: return 0;
	case CEP_DTYPE_FLOAT16: return 1;
	case CEP_DTYPE_BFLOAT16: return 2;
	default: return -1;
	}
}

static int bn_prepare(struct op_call *c, size_t *workspace)
{
	struct bn_params *p = (struct bn_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	char name[32];
	int i, ret;

	*workspace = 0;
	memset(&p->bn, 0, sizeof(p->bn));
	if (sfx == NULL || bn_code(x->dtype) < 0)
		return cep__set_error(CEP_EDTYPE, "BatchNormalization: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	p->bn.channels = x->rank >= 2 ? x->dims[1] : 1;
	p->bn.inner = op_dims_product(x, 2, x->rank);
	p->bn.n = op_dims_product(x, 0, x->rank);
	p->bn.spatial = c->node->opset >= 9 || op_attr_int(c->node, "spatial", 1) != 0;
	p->bn.n_params = p->bn.spatial ? p->bn.channels : p->bn.channels * p->bn.inner;
	p->bn.eps = op_attr_float(c->node, "epsilon", 1e-5f);
	p->bn.code_sb = bn_code(c->in[1].dtype);
	p->bn.code_mv = bn_code(c->in[3].dtype);
	for (i = 1; i < 5; i++) {
		int64_t n = op_dims_product(&c->in[i], 0, c->in[i].rank);

		if (n != p->bn.n_params)
			return cep__set_error(CEP_ESHAPE, "BatchNormalization: input %d has %" PRId64
					      " elements, X needs %" PRId64, i, n, p->bn.n_params);
		if (bn_code(c->in[i].dtype) < 0)
			return cep__set_error(CEP_EDTYPE, "BatchNormalization: input %d is %s, not a float type",
					      i, cep_dtype_name(c->in[i].dtype));
	}
	/* a and b of y = x * a + b, per channel (or element). */
	*workspace = 2 * (size_t)p->bn.n_params * sizeof(double);
	ret = cuda_function_get(c->be, "norm", "bn_coef", &p->coef);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "bn_apply_%s", sfx);
	return cuda_function_get(c->be, "norm", name, &p->apply);
}

static int bn_run(struct op_call *c)
{
	struct bn_params *p = (struct bn_params *)c->params;
	const void *x = c->in[0].data;
	const void *q[4] = { c->in[1].data, c->in[2].data, c->in[3].data, c->in[4].data };
	void *y = c->out[0].data, *ab = c->workspace;
	void *coef_args[] = { &q[0], &q[1], &q[2], &q[3], &ab, &p->bn };
	void *apply_args[] = { &x, &y, &ab, &p->bn };
	int ret;

	if (p->bn.n == 0 || p->bn.n_params == 0)
		return 0;
	if (c->workspace_bytes < 2 * (size_t)p->bn.n_params * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "BatchNormalization: the workspace is too small");
	ret = cuda_launch(c->be, c->stream, p->coef, cuda_grid(p->bn.n_params), CUDA_BLOCK, 0,
			  coef_args);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->apply, cuda_grid(p->bn.n), CUDA_BLOCK, 0,
			   apply_args);
}

/* ------------------------------------------------------------------- table */

#define NORM_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "LayerNormalization", 17, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ "", "BatchNormalization", 1, 13, BACKEND_CUDA, NORM_DTS_7, bn_prepare, bn_run },
	{ "", "BatchNormalization", 14, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  bn_prepare, bn_run },
};

const struct op_family op_family_cuda_norm = {
	"cuda_norm", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
