/*
 * norm.c — the CUDA kernels of the layer normalizations (LayerNormalization
 * with its optional Mean and InvStdDev outputs, and onnxruntime's
 * SimplifiedLayerNormalization, SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization, kernels/cpu/norm.h's forms) and of
 * BatchNormalization (opsets 7 on; its training form, with the running
 * statistics, from 14) for the float types:
 * kernels/cuda/norm.cu on the device. prepare() reads the attributes and
 * shapes through the reference kernels' cpu_ln_read() (kernels/cpu/norm.c),
 * which also lays out how Scale and B broadcast, and gives rows of up to
 * 1024 columns read with Scale and B by column or as one value a warp each
 * (layernorm_warp_*), longer or other rows a block each. BatchNormalization
 * asks for a workspace holding each channel's folded a and b, which run()
 * fills before mapping X.
 */
#include "kernels/cpu/norm.h"
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------ LayerNormalization */

/* Twin of struct cep_ln (norm.cu): struct cpu_ln's numbers, without its
 * form; rms says whether the mean is subtracted. */
struct cuda_ln {
	int64_t rows, cols;
	int64_t skip_rows;                 /* 0: no skip */
	double eps;
	int32_t rank;
	int8_t smode, bmode;               /* enum cpu_ln_mode of Scale and B */
	int8_t stash_bf16;
	int8_t rms;
	int64_t dims[CEP_MAX_RANK];        /* (rank) of X */
	int64_t sstride[CEP_MAX_RANK];     /* (rank) elements; 0: broadcast */
	int64_t bstride[CEP_MAX_RANK];
};

struct ln_params {
	CUfunction fn;
	unsigned grid, block;
	const struct cpu_ln_form *form;    /* where the operands sit */
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

static int ln_prepare(struct op_call *c, size_t *workspace)
{
	struct ln_params *p = (struct ln_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cpu_ln r;
	char name[40];
	int ret, nv;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	ret = cpu_ln_read(c->node, c->in, c->n_in, &r);
	if (ret < 0)
		return ret;
	p->form = r.form;
	p->ln.rows = r.rows;
	p->ln.cols = r.cols;
	p->ln.skip_rows = r.skip_rows;
	p->ln.eps = r.eps;
	p->ln.rank = r.rank;
	p->ln.smode = r.smode;
	p->ln.bmode = r.bmode;
	p->ln.stash_bf16 = r.stash_bf16;
	p->ln.rms = r.form->rms;
	memcpy(p->ln.dims, r.dims, sizeof(p->ln.dims));
	memcpy(p->ln.sstride, r.sstride, sizeof(p->ln.sstride));
	memcpy(p->ln.bstride, r.bstride, sizeof(p->ln.bstride));
	nv = r.smode != CPU_LN_BCAST && r.bmode != CPU_LN_BCAST
		     ? ln_warp_nv(r.cols, cep_dtype_size(x->dtype)) : 0;
	if (nv > 0) {
		/* A warp per row, CUDA_BLOCK / 32 rows per block. */
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(r.rows * 32);
		snprintf(name, sizeof(name), "layernorm_warp_%s_%d", sfx, nv);
	} else {
		/* Rows of no columns still get their (NaN) statistics, as on
		 * the host. */
		p->block = r.cols >= CUDA_BLOCK ? CUDA_BLOCK
						: 32 * (unsigned)(r.cols > 0 ? (r.cols + 31) / 32 : 1);
		p->grid = r.rows > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)r.rows;
		snprintf(name, sizeof(name), "layernorm_%s", sfx);
	}
	return cuda_function_get(c->be, "norm", name, &p->fn);
}

/* The data of input i, NULL where the form has none or it is omitted. */
static const void *ln_in(const struct op_call *c, int i)
{
	return i >= 0 && i < c->n_in && op_tensor_present(&c->in[i]) ? c->in[i].data : NULL;
}

/* The data of output k, NULL where the form or the model has none. */
static void *ln_out(const struct op_call *c, int k)
{
	return k >= 0 && k < c->n_out ? c->out[k].data : NULL;
}

static int ln_run(struct op_call *c)
{
	struct ln_params *p = (struct ln_params *)c->params;
	const struct cpu_ln_form *f = p->form;
	const void *x = c->in[0].data, *k = ln_in(c, f->skip), *a = ln_in(c, f->add);
	const void *s = ln_in(c, f->scale), *b = ln_in(c, f->beta);
	void *y = c->out[0].data, *mean = ln_out(c, f->mean), *inv = ln_out(c, f->inv);
	void *sum = ln_out(c, f->sum);
	void *args[] = { &x, &k, &a, &s, &b, &y, &mean, &inv, &sum, &p->ln };

	if (p->ln.rows == 0)
		return 0;
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
	int32_t training;
	double momentum;
};

struct bn_params {
	CUfunction coef, apply;         /* coef: bn_train_coef_<type> in training */
	unsigned coef_grid;
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
	p->bn.training = c->node->opset >= 14 && op_attr_int(c->node, "training_mode", 0) != 0;
	p->bn.momentum = op_attr_float(c->node, "momentum", 0.9f);
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
	if (p->bn.training) {
		/* A block per channel. */
		p->coef_grid = p->bn.channels > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX
								       : (unsigned)p->bn.channels;
		snprintf(name, sizeof(name), "bn_train_coef_%s", sfx);
		ret = cuda_function_get(c->be, "norm", name, &p->coef);
	} else {
		p->coef_grid = cuda_grid(p->bn.n_params);
		ret = cuda_function_get(c->be, "norm", "bn_coef", &p->coef);
	}
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
	void *rmean = c->n_out > 1 && op_tensor_present(&c->out[1]) ? c->out[1].data : NULL;
	void *rvar = c->n_out > 2 && op_tensor_present(&c->out[2]) ? c->out[2].data : NULL;
	void *coef_args[] = { &q[0], &q[1], &q[2], &q[3], &ab, &p->bn };
	void *train_args[] = { &x, &q[0], &q[1], &q[2], &q[3], &ab, &rmean, &rvar, &p->bn };
	void *apply_args[] = { &x, &y, &ab, &p->bn };
	int ret;

	if (p->bn.n_params == 0 || (p->bn.n == 0 && !p->bn.training))
		return 0;
	if (c->workspace_bytes < 2 * (size_t)p->bn.n_params * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "BatchNormalization: the workspace is too small");
	ret = cuda_launch(c->be, c->stream, p->coef, p->coef_grid, CUDA_BLOCK, 0,
			  p->bn.training ? train_args : coef_args);
	if (ret < 0 || p->bn.n == 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->apply, cuda_grid(p->bn.n), CUDA_BLOCK, 0,
			   apply_args);
}

/* ------------------------------------------------------------------- table */

#define NORM_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "LayerNormalization", 1, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ "", "SimplifiedLayerNormalization", 1, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_CUDA,
	  CUDA_DTS_FLOAT, ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SkipLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SkipSimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_CUDA,
	  CUDA_DTS_FLOAT, ln_prepare, ln_run },
	{ "", "BatchNormalization", 1, 13, BACKEND_CUDA, NORM_DTS_7, bn_prepare, bn_run },
	{ "", "BatchNormalization", 14, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  bn_prepare, bn_run },
};

const struct op_family op_family_cuda_norm = {
	"cuda_norm", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
