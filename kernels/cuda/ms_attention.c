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
 * struct cuda_attn lives in kernels/cuda/attention.c; struct
 * cuda_msa_attn (kernels/cuda/ms_attention.h) is a second twin of it, and
 * cuda_msa_pick() picks the kernel by the same rules (the tensor-core one
 * for 16-bit types and depths up to 64 on sm_80 and later, the tiled ones
 * up to 128, the row kernel beyond). The picker, the mask's launch and the
 * attention's are shared with MultiHeadAttention (kernels/cuda/ms_mha.c).
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cublaslt.h"
#include "kernels/cpu/ms_attention.h"
#include "kernels/cuda/ms_attention.h"
#include "kernels/xfmr.h"

/* The most workspace the GEMM's algorithm may ask for. */
#define MSA_GEMM_WORKSPACE_MAX ((size_t)32 << 20)

struct msa_params {
	struct cublaslt *lt;            /* the backend's */
	const struct cublaslt_gemm *g;  /* NULL when the input's hidden size is 0 */
	CUfunction bias_fn;             /* msa_bias, or NULL: the epilogue adds it */
	CUfunction mask_fn;             /* msa_mask, or NULL: no mask */
	struct cuda_msa_kernel attn;    /* the attention proper */
	struct ms_attn a;
};
CUDA_PARAMS_FIT(struct msa_params);

int cuda_msa_blame(const char *op, int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "%s: %s", op, why);
}

static int msa_blame(int err)
{
	return cuda_msa_blame("Attention", err);
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

int cuda_msa_pick(struct op_call *c, const char *op, int64_t BH, int64_t Sq, int64_t dk,
		  int64_t dv, struct cuda_msa_kernel *k)
{
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype), *src = "attention";
	int64_t blocks;
	char name[32];
	int ret;

	memset(k, 0, sizeof(*k));
	if (dk > XFMR_ATTN_MAX_DEPTH || dv > XFMR_ATTN_MAX_DEPTH)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: heads of depth %" PRId64
				      " and %" PRId64 " are deeper than the %d the cuda kernel takes",
				      op, dk, dv, XFMR_ATTN_MAX_DEPTH);
	if (c->in[0].dtype != CEP_DTYPE_FLOAT32 && dk <= 64 && dv <= 64 &&
	    cuda_backend_arch(c->be) >= 80) {
		snprintf(name, sizeof(name), "attn_tc64_%s", sfx);
		src = "attention_tc";
		k->block = MSA_TILE_THREADS;
		k->q_tiles = (int32_t)((Sq + MSA_TC_QROWS - 1) / MSA_TC_QROWS);
		blocks = BH * k->q_tiles;
		k->depth = 64;
	} else if (dk <= 128 && dv <= 128) {
		k->q_tiles = (int32_t)((Sq + MSA_QROWS - 1) / MSA_QROWS);
		k->depth = dk <= 64 && dv <= 64 ? 64 : 128;
		snprintf(name, sizeof(name), "attn_tile%d_%s", k->depth, sfx);
		k->block = MSA_TILE_THREADS;
		blocks = BH * k->q_tiles;
	} else {
		snprintf(name, sizeof(name), "attn_rows_%s", sfx);
		k->block = MSA_ROWS_THREADS;
		k->shmem = (unsigned)((dk + dv + MSA_ROWS_THREADS) * sizeof(float));
		blocks = BH * Sq;
	}
	k->grid = blocks > (int64_t)MSA_GRID_MAX ? MSA_GRID_MAX : (unsigned)blocks;
	ret = cuda_function_get(c->be, src, name, &k->fn);
	return ret < 0 ? cuda_msa_blame(op, ret) : 0;
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
	ret = cuda_msa_pick(c, "Attention", p->a.B * p->a.H, p->a.S, p->a.dq, p->a.dv, &p->attn);
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

int cuda_msa_attend(struct op_call *c, const struct cuda_msa_kernel *k, struct cuda_msa_attn *x,
		    const void *q, const void *kk, const void *v, const void *m, void *o)
{
	size_t esize = cep_dtype_size(c->in[0].dtype);
	void *args[] = { (void *)&q, (void *)&kk, (void *)&v, (void *)&m, &o, x };

	x->has_mask = m != NULL;
	x->q_tiles = k->q_tiles;
	x->vec = k->depth > 0 && x->Dk == k->depth && x->Dv == k->depth &&
		 msa_rows_aligned(q, x->q, esize) && msa_rows_aligned(kk, x->k, esize) &&
		 msa_rows_aligned(v, x->v, esize);
	return cuda_launch(c->be, c->stream, k->fn, k->grid, k->block, k->shmem, args);
}

int cuda_msa_mask_run(struct op_call *c, CUfunction fn, const struct ms_attn_mspec *m,
		      const void *mi32, const void *ab, void *out)
{
	struct cuda_msa_mask mp = {
		.n = m->mb * m->mh * m->mi * m->T, .S = m->S, .T = m->T, .P = m->P,
		.mh = m->mh, .mi = m->mi, .ab_b = ab != NULL ? m->ab_b : 0, .ab_h = m->ab_h,
		.filt = m->filt, .mask = m->form, .causal = m->causal,
	};
	void *args[] = { (void *)&mi32, (void *)&ab, &out, &mp };

	return cuda_launch(c->be, c->stream, fn, cuda_grid(mp.n), CUDA_BLOCK, 0, args);
}

/* The internal Attention's geometry over qkv, the mask and the output. */
static void msa_attn_fill(const struct msa_params *p, struct cuda_msa_attn *x)
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
	void *qkv = ws, *mask = a->mb > 0 ? ws + qkv_bytes : NULL;
	const void *q = qkv, *k = (const char *)qkv + (size_t)a->hq * esize;
	const void *v = (const char *)qkv + (size_t)(a->hq + a->hk) * esize;
	struct cuda_msa_attn x;
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
		struct ms_attn_mspec m = {
			.S = a->S, .T = a->S, .P = 0, .mb = a->mb, .mh = a->mh, .mi = a->mi,
			.ab_b = a->ab_b, .ab_h = a->ab_h, .filt = a->filt, .form = a->mask,
			.causal = a->causal,
		};

		ret = cuda_msa_mask_run(c, p->mask_fn, &m,
					a->mask != MS_ATTN_MASK_NONE ? c->in[3].data : NULL,
					a->has_ab ? c->in[5].data : NULL, mask);
		if (ret < 0)
			return ret;
	}
	msa_attn_fill(p, &x);
	return cuda_msa_attend(c, &p->attn, &x, q, k, v, mask, c->out[0].data);
}

static const struct op_kernel kernels[] = {
	{ OP_DOMAIN_MS, "Attention", 1, OP_MS_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, msa_prepare,
	  msa_run },
};

const struct op_family op_family_cuda_ms_attention = {
	"cuda_ms_attention", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
