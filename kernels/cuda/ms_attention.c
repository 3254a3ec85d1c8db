/*
 * ms_attention.c — the CUDA kernel of com.microsoft Attention
 * (kernels/cpu/ms_attention.h) for float32, float16 and bfloat16, in the
 * host's three steps through the workspace: the projection qkv = input x
 * weights + bias as one cuBLASLt GEMM whose epilogue adds the bias (where
 * the heuristic offers none, a plain GEMM and msa_bias of
 * kernels/cuda/ms_attention.cu), the additive mask (msa_mask), then the
 * internal Attention operator's kernels (kernels/cuda/attention.cu and
 * attention_tc.cu) over Q, K and V read in place from qkv through their
 * strides: Q at column h * dq of each row of qkv, K hq columns further, V
 * hq + hk, the mask broadcast along what it does not vary with.
 *
 * Those kernels take struct cep_attn (attention.cuh), whose launcher twin
 * struct cuda_attn lives in kernels/cuda/attention.c; msa_attn below is a
 * second twin of it, and picks the kernel by the same rules (the
 * tensor-core one for 16-bit types and depths up to 64 on sm_80 and
 * later, the tiled ones up to 128, the row kernel beyond).
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cublaslt.h"
#include "kernels/cpu/ms_attention.h"
#include "kernels/xfmr.h"

/* The most workspace the GEMM's algorithm may ask for. */
#define MSA_GEMM_WORKSPACE_MAX ((size_t)32 << 20)

/* Twin of struct cep_attn (attention.cuh), as kernels/cuda/attention.c's
 * struct cuda_attn is. */
struct msa_attn {
	int64_t B, H, Sq, Sk, Dk, Dv;
	int64_t q[4], k[4], v[4];
	int64_t m[4];
	int64_t o[4];
	float scale;
	int32_t has_mask;
	int32_t vec;
	int64_t q_tiles;
};

/* Twin of struct cep_msa_mask (ms_attention.cu). */
struct cuda_msa_mask {
	int64_t n;
	int64_t S, mh, mi;
	int64_t ab_b, ab_h;
	float filt;
	int32_t mask;
	int32_t causal;
	int32_t pad;
};

#define MSA_QROWS 16         /* query rows per block of attn_tile (AT_QROWS) */
#define MSA_TC_QROWS 64      /* of attn_tc64 (TC_QROWS) */
#define MSA_TILE_THREADS 128 /* AT_WARPS and TC_WARPS warps */
#define MSA_ROWS_THREADS 128
#define MSA_GRID_MAX (1u << 20)

struct msa_params {
	struct cublaslt *lt;            /* the backend's */
	const struct cublaslt_gemm *g;  /* NULL when the input's hidden size is 0 */
	CUfunction bias_fn;             /* msa_bias, or NULL: the epilogue adds it */
	CUfunction mask_fn;             /* msa_mask, or NULL: no mask */
	CUfunction attn_fn;
	unsigned grid, block, shmem;    /* of attn_fn */
	int32_t depth;                  /* attn_fn's depth when it has a 16-byte
	                                 * staging path, else 0 */
	int32_t q_tiles;                /* blocks of query rows per (b, h) */
	struct ms_attn a;
};
CUDA_PARAMS_FIT(struct msa_params);

/* The failure of a step as the operator's error. */
static int msa_blame(int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "Attention: %s", why);
}

/* The projection: row-major qkv (M x N) = X (M x K) W (K x N) is
 * column-major qkv^T = W^T X^T, so cuBLASLt's first operand is W. */
static int msa_gemm(struct op_call *c, const char *sfx, size_t *gemm_ws)
{
	struct msa_params *p = (struct msa_params *)c->params;
	const struct ms_attn *a = &p->a;
	struct cublaslt_gemm_desc d;
	char name[32];
	int ret;

	*gemm_ws = 0;
	ret = cuda_blas_get(c->be, &p->lt);
	if (ret < 0)
		return msa_blame(ret);
	cublaslt_gemm_desc_init(&d);
	d.dtype = c->in[0].dtype;
	d.tf32 = (c->flags & OP_CALL_TF32) && d.dtype == CEP_DTYPE_FLOAT32;
	d.m = a->hq + a->hk + a->hv;
	d.n = a->B * a->S;
	d.k = a->K;
	d.lda = d.m;
	d.ldb = a->K;
	d.ldd = d.m;
	d.bias = a->has_bias;
	ret = cublaslt_gemm_get(p->lt, &d, MSA_GEMM_WORKSPACE_MAX, &p->g);
	if (ret == CEP_ENOTSUP && d.bias) {
		/* No algorithm with the bias epilogue: the bias in a pass. */
		cep__clear_error();
		d.bias = 0;
		ret = cublaslt_gemm_get(p->lt, &d, MSA_GEMM_WORKSPACE_MAX, &p->g);
		if (ret == 0) {
			snprintf(name, sizeof(name), "msa_bias_%s", sfx);
			ret = cuda_function_get(c->be, "ms_attention", name, &p->bias_fn);
		}
	}
	if (ret < 0)
		return msa_blame(ret);
	*gemm_ws = cublaslt_gemm_workspace(p->g);
	return 0;
}

/* The internal Attention's kernel for the heads' depths. */
static int msa_pick(struct op_call *c, const char *sfx)
{
	struct msa_params *p = (struct msa_params *)c->params;
	const struct ms_attn *a = &p->a;
	const char *src = "attention";
	int64_t blocks;
	char name[32];
	int ret;

	if (a->dq > XFMR_ATTN_MAX_DEPTH || a->dv > XFMR_ATTN_MAX_DEPTH)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: heads of depth %" PRId64
				      " and %" PRId64 " are deeper than the %d the cuda kernel takes",
				      a->dq, a->dv, XFMR_ATTN_MAX_DEPTH);
	if (c->in[0].dtype != CEP_DTYPE_FLOAT32 && a->dq <= 64 && a->dv <= 64 &&
	    cuda_backend_arch(c->be) >= 80) {
		snprintf(name, sizeof(name), "attn_tc64_%s", sfx);
		src = "attention_tc";
		p->block = MSA_TILE_THREADS;
		p->q_tiles = (int32_t)((a->S + MSA_TC_QROWS - 1) / MSA_TC_QROWS);
		blocks = a->B * a->H * p->q_tiles;
		p->depth = 64;
	} else if (a->dq <= 128 && a->dv <= 128) {
		p->q_tiles = (int32_t)((a->S + MSA_QROWS - 1) / MSA_QROWS);
		p->depth = a->dq <= 64 && a->dv <= 64 ? 64 : 128;
		snprintf(name, sizeof(name), "attn_tile%d_%s", p->depth, sfx);
		p->block = MSA_TILE_THREADS;
		blocks = a->B * a->H * p->q_tiles;
	} else {
		snprintf(name, sizeof(name), "attn_rows_%s", sfx);
		p->block = MSA_ROWS_THREADS;
		p->shmem = (unsigned)((a->dq + a->dv + MSA_ROWS_THREADS) * sizeof(float));
		blocks = a->B * a->H * a->S;
	}
	p->grid = blocks > (int64_t)MSA_GRID_MAX ? MSA_GRID_MAX : (unsigned)blocks;
	ret = cuda_function_get(c->be, src, name, &p->attn_fn);
	return ret < 0 ? msa_blame(ret) : 0;
}

static int msa_prepare(struct op_call *c, size_t *workspace)
{
	struct msa_params *p = (struct msa_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const char *sfx = cuda_dtype_suffix(t);
	size_t gemm_ws = 0;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(t, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "Attention: no cuda kernel for %s",
				      cep_dtype_name(t));
	ret = ms_attn_read(c->node, c->in, c->n_in, &p->a);
	if (ret < 0)
		return ret;
	if (p->a.B * p->a.S == 0)
		return 0;
	if (p->a.K > 0) {
		ret = msa_gemm(c, sfx, &gemm_ws);
	} else {
		/* No products: qkv is the bias (or 0). */
		snprintf(name, sizeof(name), "msa_bias_%s", sfx);
		ret = cuda_function_get(c->be, "ms_attention", name, &p->bias_fn);
	}
	if (ret < 0)
		return ret;
	if (p->a.mb > 0) {
		snprintf(name, sizeof(name), "msa_mask_%s", sfx);
		ret = cuda_function_get(c->be, "ms_attention", name, &p->mask_fn);
		if (ret < 0)
			return msa_blame(ret);
	}
	ret = msa_pick(c, sfx);
	if (ret < 0)
		return ret;
	*workspace = ms_attn_region(ms_attn_qkv_numel(&p->a), t) +
		     ms_attn_region(ms_attn_mask_numel(&p->a), t) + gemm_ws;
	return 0;
}

/* Whether an operand's rows start 16-byte aligned: its address and its
 * batch, head and row strides (elements of esize bytes), as
 * kernels/cuda/attention.c asks for its staging. */
static bool msa_rows_aligned(const void *data, const int64_t *stride, size_t esize)
{
	int64_t per = 16 / (int64_t)esize;

	return ((uintptr_t)data & 15) == 0 && stride[3] == 1 && stride[0] % per == 0 &&
	       stride[1] % per == 0 && stride[2] % per == 0;
}

/* The internal Attention's geometry over qkv, the mask and the output. */
static void msa_attn_fill(const struct msa_params *p, struct msa_attn *x)
{
	const struct ms_attn *a = &p->a;
	int64_t N = a->hq + a->hk + a->hv;

	memset(x, 0, sizeof(*x));
	x->B = a->B;
	x->H = a->H;
	x->Sq = a->S;
	x->Sk = a->S;
	x->Dk = a->dq;
	x->Dv = a->dv;
	x->q[0] = x->k[0] = x->v[0] = a->S * N;
	x->q[1] = x->k[1] = a->dq;
	x->v[1] = a->dv;
	x->q[2] = x->k[2] = x->v[2] = N;
	x->q[3] = x->k[3] = x->v[3] = 1;
	x->m[0] = a->mb > 1 ? a->mh * a->mi * a->S : 0;
	x->m[1] = a->mh > 1 ? a->mi * a->S : 0;
	x->m[2] = a->mi > 1 ? a->S : 0;
	x->m[3] = 1;
	x->o[0] = a->S * a->hv;
	x->o[1] = a->dv;
	x->o[2] = a->hv;
	x->o[3] = 1;
	x->scale = a->scale;
	x->has_mask = a->mb > 0;
	x->q_tiles = p->q_tiles;
}

static int msa_run(struct op_call *c)
{
	struct msa_params *p = (struct msa_params *)c->params;
	const struct ms_attn *a = &p->a;
	cep_dtype t = c->in[0].dtype;
	size_t esize = cep_dtype_size(t);
	size_t qkv_bytes = ms_attn_region(ms_attn_qkv_numel(a), t);
	size_t mask_bytes = ms_attn_region(ms_attn_mask_numel(a), t);
	unsigned char *ws = c->workspace;
	const void *bias = a->has_bias ? c->in[2].data : NULL;
	void *qkv = ws, *mask = a->mb > 0 ? ws + qkv_bytes : NULL, *o = c->out[0].data;
	const void *q = qkv, *k = (const char *)qkv + (size_t)a->hq * esize;
	const void *v = (const char *)qkv + (size_t)(a->hq + a->hk) * esize, *m = mask;
	struct msa_attn x;
	int ret;

	if (a->B * a->S == 0)
		return 0;
	if (p->g != NULL) {
		ret = cublaslt_gemm_run(p->lt, p->g, cuda_stream_handle(c->stream), c->in[1].data,
					c->in[0].data, NULL, qkv, p->bias_fn ? NULL : bias,
					ws + qkv_bytes + mask_bytes);
		if (ret < 0)
			return msa_blame(ret);
	}
	if (p->bias_fn != NULL) {
		int64_t rows = a->B * a->S, n = a->hq + a->hk + a->hv;
		int32_t add = p->g != NULL;
		void *args[] = { &qkv, (void *)&bias, &rows, &n, &add };

		ret = cuda_launch(c->be, c->stream, p->bias_fn, cuda_grid(rows * n), CUDA_BLOCK, 0,
				  args);
		if (ret < 0)
			return ret;
	}
	if (p->mask_fn != NULL) {
		struct cuda_msa_mask mp = {
			.n = ms_attn_mask_numel(a), .S = a->S, .mh = a->mh, .mi = a->mi,
			.ab_b = a->has_ab ? a->ab_b : 0, .ab_h = a->ab_h, .filt = a->filt,
			.mask = a->mask, .causal = a->causal,
		};
		const void *mi32 = a->mask != MS_ATTN_MASK_NONE ? c->in[3].data : NULL;
		const void *ab = a->has_ab ? c->in[5].data : NULL;
		void *args[] = { (void *)&mi32, (void *)&ab, &mask, &mp };

		ret = cuda_launch(c->be, c->stream, p->mask_fn, cuda_grid(mp.n), CUDA_BLOCK, 0, args);
		if (ret < 0)
			return ret;
	}
	msa_attn_fill(p, &x);
	x.vec = p->depth > 0 && x.Dk == p->depth && x.Dv == p->depth &&
		msa_rows_aligned(q, x.q, esize) && msa_rows_aligned(k, x.k, esize) &&
		msa_rows_aligned(v, x.v, esize);
	{
		void *args[] = { (void *)&q, (void *)&k, (void *)&v, (void *)&m, &o, &x };

		return cuda_launch(c->be, c->stream, p->attn_fn, p->grid, p->block, p->shmem, args);
	}
}

static const struct op_kernel kernels[] = {
	{ OP_DOMAIN_MS, "Attention", 1, OP_MS_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, msa_prepare,
	  msa_run },
};

const struct op_family op_family_cuda_ms_attention = {
	"cuda_ms_attention", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
