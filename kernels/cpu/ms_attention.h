/*
 * ms_attention.h — com.microsoft Attention, onnxruntime's multi-head
 * attention with packed Q, K and V weights (what its transformer optimizer
 * makes of BERT's and GPT-2's attention): what the reference kernel
 * (kernels/cpu/ms_attention.c) shares with the device one
 * (kernels/cuda/ms_attention.c), read from a node and fixed shapes once.
 *
 *	qkv = input (B, S, K) x weights (K, hq + hk + hv) + bias
 *	out[b, s, h * dv + d] = sum_j softmax_j(scale * Q[b,h,s,:] . K[b,h,j,:]
 *	                                         + mask[b,h,s,j]) V[b,h,j,d]
 *
 * where Q, K and V are the three column blocks of qkv, head h the h-th
 * run of dq (dv for V) columns of each; scale defaults to 1 / sqrt(dq).
 * The mask adds mask_filter_value (-10000 by default) where mask_index
 * masks a key, as onnxruntime does (its three forms: lengths (B), a raw
 * 0/1 mask (B, S) or (B, S, S), each contributing (1 - m) *
 * mask_filter_value), then attention_bias (B or 1, H or 1, S, S), and
 * -inf for the keys after the query when unidirectional is 1. Both
 * backends build that mask once per run, in the input's type, and add it
 * to the float scores. Past and present state, rotary embeddings and
 * mask_index's left-padding and Megatron forms are refused.
 */
#ifndef CEP_KERNELS_CPU_MS_ATTENTION_H
#define CEP_KERNELS_CPU_MS_ATTENTION_H

#include "kernels/cpu/cpu.h"

/* The form of mask_index. */
enum ms_attn_mask {
	MS_ATTN_MASK_NONE,
	MS_ATTN_MASK_LENGTHS,  /* (B): keys at or past the length are masked */
	MS_ATTN_MASK_RAW2,     /* (B, S): 0 masks key j */
	MS_ATTN_MASK_RAW3,     /* (B, S, S): 0 masks key j of query i */
};

/* One Attention node over fixed shapes. */
struct ms_attn {
	int64_t B, S, K;        /* input (B, S, K) */
	int64_t hq, hk, hv;     /* hidden sizes of Q, K and V */
	int64_t H, dq, dv;      /* heads; depths hq / H and hv / H */
	int64_t mb, mh, mi;     /* the built mask (mb, mh, mi, S): 1 along what it
	                         * does not vary with; 0 when there is none */
	int64_t ab_b, ab_h;     /* attention_bias's dims 0 and 1 */
	float scale, filt;      /* the scale and mask_filter_value */
	int32_t mask;           /* enum ms_attn_mask */
	int32_t causal;         /* unidirectional */
	int32_t has_bias;       /* input 2 given */
	int32_t has_ab;         /* attention_bias (input 5) given */
};

/* The additive mask of Attention and MultiHeadAttention over S queries
 * and T keys: mask_filter_value where the key mask masks key j (form
 * LENGTHS: j at or past the length; RAW2 (B, T) and RAW3 (B, S, T): (1 - m)
 * * mask_filter_value), plus attention_bias (ab_b or 1, ab_h or 1, S, T),
 * and -inf for a key j > P + i when causal (P keys come before the first
 * query: the past). Built as (mb, mh, mi, T), 1 along what it does not
 * vary with. */
struct ms_attn_mspec {
	int64_t S, T, P;        /* queries, keys, past keys */
	int64_t mb, mh, mi;     /* the built mask's leading dims */
	int64_t ab_b, ab_h;     /* attention_bias's dims 0 and 1; ab_b 0: none */
	float filt;             /* mask_filter_value */
	int32_t form;           /* enum ms_attn_mask */
	int32_t causal;
};

/* Writes the mask of m into out (mb * mh * mi * T elements of t) from the
 * int32 key mask mi32 (NULL for form NONE) and attention_bias ab (in t;
 * NULL: none). Cannot fail. */
void ms_attn_mask_fill(const struct ms_attn_mspec *m, const int32_t *mi32, const void *ab,
		       cep_dtype t, void *out);

/* The attention proper over strided views in elements of t: per batch b,
 * head h and query i, scores s_j = scale * q . k_j + m[j] (float32 dot
 * products in order), a softmax as kernels/cpu/softmax.c takes it (float
 * maximum, double sum; a key at -inf weighs 0, a row all at -inf is NaN),
 * then o = sum_j s_j v_j. Rows are contiguous (dk or dv elements); the
 * strides are of batch, head and row. */
struct ms_attn_view {
	int64_t B, H, S, T;     /* batch, heads, queries, keys */
	int64_t dk, dv;         /* depths of Q and K, of V */
	const void *q, *k, *v;  /* (B, H, S, dk), (B, H, T, dk), (B, H, T, dv) */
	const void *m;          /* (B, H, S, T) through ms, or NULL: none */
	void *o;                /* (B, H, S, dv) */
	int64_t qs[3], ks[3], vs[3], ms[3], os[3];
	float scale;
};

/* Computes o of x; scratch holds T + dv floats. Cannot fail. */
void ms_attn_core(const struct ms_attn_view *x, cep_dtype t, float *scratch);

/* Softmax of the n scores s in place (see struct ms_attn_view). */
void ms_attn_softmax(float *s, int64_t n);

/* The inference of Attention: checks the attributes, ranks, types and
 * sizes, refuses what is not supported, and fills x->out[0]. */
int ms_attn_infer(struct op_infer *x);

/* Fills *a from a node whose inputs (n_in of them, dims fixed) inference
 * accepted. Returns 0, or CEP_ESHAPE / CEP_EUNSUPPORTED for a mask_index
 * whose form only fixed dims tell. */
int ms_attn_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		 struct ms_attn *a);

/* Elements of qkv, and of the mask (0: none). */
static inline int64_t ms_attn_qkv_numel(const struct ms_attn *a)
{
	return a->B * a->S * (a->hq + a->hk + a->hv);
}

static inline int64_t ms_attn_mask_numel(const struct ms_attn *a)
{
	return a->mb * a->mh * a->mi * a->S;
}

/* Bytes of n elements of dtype t rounded up to 256, so that the regions
 * of a workspace that follow stay aligned. */
static inline size_t ms_attn_region(int64_t n, cep_dtype t)
{
	return ((size_t)n * cep_dtype_size(t) + 255) & ~(size_t)255;
}

#endif
