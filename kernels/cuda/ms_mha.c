/*
 * ms_mha.c — the CUDA kernel of com.microsoft MultiHeadAttention
 * (kernels/cpu/ms_mha.h) for float32, float16 and bfloat16, in the host's
 * steps: Q (B, N, S, H), K (B, N, T, H) and V (B, N, T, Hv) gathered in
 * heads by mha_gather (kernels/cuda/ms_attention.cu: the past ahead of
 * the new keys, each new element read through its form's strides plus its
 * bias), K and V straight into present_key and present_value when they
 * are asked for (the same layout), else into the workspace; then
 * Attention's mask kernel over S queries and T keys and the internal
 * Attention operator's kernels, through kernels/cuda/ms_attention.h.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/ms_mha.h"
#include "kernels/cuda/ms_attention.h"

/* Twin of struct cep_mha_gather (ms_attention.cu). */
struct cuda_mha_gather {
	int64_t n;              /* elements: B * N * rows * E */
	int64_t N, rows, P, E;
	int64_t sb, sl, sn;     /* the source's strides of batch, row, head */
	int64_t boff;           /* where this part of the bias starts */
};

struct mha_params {
	CUfunction gather_fn;           /* mha_gather */
	CUfunction mask_fn;             /* msa_mask, or NULL: no mask */
	struct cuda_msa_kernel attn;
	struct ms_mha a;
};
CUDA_PARAMS_FIT(struct mha_params);

static int64_t mha_numel(const struct ms_mha *a, int64_t rows, int64_t depth)
{
	return a->B * a->N * rows * depth;
}

static int mha_prepare(struct op_call *c, size_t *workspace)
{
	struct mha_params *p = (struct mha_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const char *sfx = cuda_dtype_suffix(t);
	const struct ms_mha *a = &p->a;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(t, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "MultiHeadAttention: no cuda kernel for %s",
				      cep_dtype_name(t));
	ret = ms_mha_read(c->node, c->in, c->n_in, &p->a);
	if (ret < 0)
		return ret;
	if (a->B * a->S == 0)
		return 0;
	snprintf(name, sizeof(name), "mha_gather_%s", sfx);
	ret = cuda_function_get(c->be, "ms_attention", name, &p->gather_fn);
	if (ret < 0)
		return cuda_msa_blame("MultiHeadAttention", ret);
	if (a->m.mb > 0) {
		snprintf(name, sizeof(name), "msa_mask_%s", sfx);
		ret = cuda_function_get(c->be, "ms_attention", name, &p->mask_fn);
		if (ret < 0)
			return cuda_msa_blame("MultiHeadAttention", ret);
	}
	ret = cuda_msa_pick(c, "MultiHeadAttention", a->B * a->N, a->S, a->H, a->Hv, &p->attn);
	if (ret < 0)
		return ret;
	/* Q, K, V (K and V even when a present output takes them: the
	 * workspace is sized before the outputs are known), the mask. */
	*workspace = ms_attn_region(mha_numel(a, a->S, a->H), t) +
		     ms_attn_region(mha_numel(a, a->T, a->H), t) +
		     ms_attn_region(mha_numel(a, a->T, a->Hv), t) +
		     ms_attn_region(a->m.mb * a->m.mh * a->m.mi * a->T, t);
	return 0;
}

/* The source strides of Q (which -1), K (0) or V (1) of a's form, and the
 * element where it starts in its source. */
static void mha_strides(const struct ms_mha *a, int which, struct cuda_mha_gather *g,
			int64_t *first)
{
	int64_t N = a->N, H = a->H, E = which == 1 ? a->Hv : a->H;

	*first = 0;
	if (a->kv == MS_MHA_KV_QKV) {
		g->sb = a->S * N * 3 * H;
		g->sl = N * 3 * H;
		g->sn = 3 * H;
		*first = (which + 1) * H;
	} else if (which < 0) {
		g->sb = a->S * N * H;
		g->sl = N * H;
		g->sn = H;
	} else if (a->kv == MS_MHA_KV_PACKED) {
		g->sb = a->L * N * 2 * H;
		g->sl = N * 2 * H;
		g->sn = 2 * H;
		*first = which * H;
	} else if (a->kv == MS_MHA_KV_BNSH) {
		g->sb = N * a->L * E;
		g->sl = E;
		g->sn = a->L * E;
	} else {
		g->sb = a->L * N * E;
		g->sl = N * E;
		g->sn = E;
	}
}

/* Gathers Q (which -1), K (0) or V (1) into out. */
static int mha_gather(struct op_call *c, const struct mha_params *p, int which, void *out)
{
	const struct ms_mha *a = &p->a;
	size_t esize = cep_dtype_size(c->in[0].dtype);
	int64_t E = which == 1 ? a->Hv : a->H, first;
	struct cuda_mha_gather g = {
		.N = a->N, .rows = which < 0 ? a->S : a->T, .P = which < 0 ? 0 : a->P, .E = E,
		.boff = (which + 1) * a->N * a->H,
	};
	const void *src, *past = NULL, *bias = a->has_bias ? c->in[MS_MHA_BIAS].data : NULL;
	void *args[] = { (void *)&src, (void *)&past, (void *)&bias, &out, &g };

	g.n = mha_numel(a, g.rows, E);
	mha_strides(a, which, &g, &first);
	if (which < 0 || a->kv == MS_MHA_KV_QKV)
		src = c->in[MS_MHA_QUERY].data;
	else if (which == 0 || a->kv == MS_MHA_KV_PACKED)
		src = c->in[MS_MHA_KEY].data;
	else
		src = c->in[MS_MHA_VALUE].data;
	src = (const char *)src + (size_t)first * esize;
	if (which >= 0 && a->has_past)
		past = c->in[MS_MHA_PAST_KEY + which].data;
	if (g.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->gather_fn, cuda_grid(g.n), CUDA_BLOCK, 0, args);
}

static int mha_run(struct op_call *c)
{
	struct mha_params *p = (struct mha_params *)c->params;
	const struct ms_mha *a = &p->a;
	const struct ms_attn_mspec *m = &a->m;
	cep_dtype t = c->in[0].dtype;
	int64_t N = a->N, S = a->S, T = a->T, H = a->H, Hv = a->Hv;
	size_t qb = ms_attn_region(mha_numel(a, S, H), t), kb = ms_attn_region(mha_numel(a, T, H), t);
	size_t vb = ms_attn_region(mha_numel(a, T, Hv), t);
	unsigned char *ws = c->workspace;
	void *q = ws, *k = ws + qb, *v = ws + qb + kb, *mask = m->mb > 0 ? ws + qb + kb + vb : NULL;
	struct cuda_msa_attn x = {
		.B = a->B, .H = N, .Sq = S, .Sk = T, .Dk = H, .Dv = Hv,
		.q = { N * S * H, S * H, H, 1 }, .k = { N * T * H, T * H, H, 1 },
		.v = { N * T * Hv, T * Hv, Hv, 1 },
		.m = { m->mb > 1 ? m->mh * m->mi * T : 0, m->mh > 1 ? m->mi * T : 0,
		       m->mi > 1 ? T : 0, 1 },
		.o = { S * N * Hv, Hv, N * Hv, 1 }, .scale = a->scale,
	};
	int ret;

	if (a->B * S == 0)
		return 0;
	if (c->n_out > 1 && c->out[1].data != NULL)
		k = c->out[1].data;
	if (c->n_out > 2 && c->out[2].data != NULL)
		v = c->out[2].data;
	if ((ret = mha_gather(c, p, -1, q)) < 0 || (ret = mha_gather(c, p, 0, k)) < 0 ||
	    (ret = mha_gather(c, p, 1, v)) < 0)
		return ret;
	if (p->mask_fn != NULL) {
		ret = cuda_msa_mask_run(c, p->mask_fn, m,
					m->form != MS_ATTN_MASK_NONE ? c->in[MS_MHA_MASK].data : NULL,
					m->ab_b > 0 ? c->in[MS_MHA_AB].data : NULL, mask);
		if (ret < 0)
			return ret;
	}
	return cuda_msa_attend(c, &p->attn, &x, q, k, v, mask, c->out[0].data);
}

static const struct op_kernel kernels[] = {
	{ OP_DOMAIN_MS, "MultiHeadAttention", 1, OP_MS_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT,
	  mha_prepare, mha_run },
};

const struct op_family op_family_cuda_ms_mha = {
	"cuda_ms_mha", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
