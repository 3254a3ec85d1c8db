/*
 * ms_mha.h — com.microsoft MultiHeadAttention, onnxruntime's attention
 * over Q, K and V already projected (what its transformer optimizer makes
 * of BERT's, T5's and Whisper's self and cross attention): what the
 * reference kernel (kernels/cpu/ms_mha.c) reads from a node and fixed
 * shapes once. The attention itself is Attention's (ms_attention.h:
 * ms_attn_mask_fill() and ms_attn_core()).
 *
 * With N heads of depth H (Hv for V), D = N * H, Dv = N * Hv:
 *	query (B, S, D), key (B, L, D), value (B, L, Dv); or
 *	query (B, S, D), packed key and value (B, L, N, 2, H); or
 *	query (B, S, D), key (B, N, L, H), value (B, N, L, Hv) already in
 *	    heads (cross attention reusing them: no bias, no past); or
 *	packed query, key and value (B, S, N, 3, H) (L = S).
 * bias (D + D + Dv) is added to Q, K and V of the new keys (in float,
 * rounded once to the type); past_key (B, N, P, H) and past_value
 * (B, N, P, Hv) come before the new keys, T = P + L keys in all, and
 * present_key / present_value (B, N, T, H / Hv) are those keys and values.
 * key_padding_mask (int32): lengths (B), a raw 0/1 mask (B, T) (or
 * (B, L) when there is no past) or (B, S, T); attention_bias (B or 1,
 * N or 1, S, T); unidirectional masks key j > P + i. The output is
 * (B, S, Dv). Refused: the (3 * B + 2) mask, the buffer-sharing inputs
 * past_sequence_length and cache_indirection, and the qk output.
 */
#ifndef CEP_KERNELS_CPU_MS_MHA_H
#define CEP_KERNELS_CPU_MS_MHA_H

#include "kernels/cpu/ms_attention.h"

/* Where K and V come from. */
enum ms_mha_kv {
	MS_MHA_KV_BSD,          /* key (B, L, D), value (B, L, Dv) */
	MS_MHA_KV_PACKED,       /* key (B, L, N, 2, H) */
	MS_MHA_KV_BNSH,         /* key (B, N, L, H), value (B, N, L, Hv) */
	MS_MHA_KV_QKV,          /* query (B, S, N, 3, H) */
};

/* Input positions. */
enum {
	MS_MHA_QUERY, MS_MHA_KEY, MS_MHA_VALUE, MS_MHA_BIAS, MS_MHA_MASK, MS_MHA_AB,
	MS_MHA_PAST_KEY, MS_MHA_PAST_VALUE, MS_MHA_PAST_SEQ, MS_MHA_CACHE_IND,
	MS_MHA_INPUTS,
};

/* One MultiHeadAttention node over fixed shapes. */
struct ms_mha {
	int64_t B, S, L, P, T;  /* batch, queries, new keys, past keys, P + L */
	int64_t N, H, Hv;       /* heads; depths of Q and K, of V */
	float scale, filt;      /* the scale and mask_filter_value */
	int32_t kv;             /* enum ms_mha_kv */
	int32_t has_bias, has_past;
	struct ms_attn_mspec m; /* the mask; m.mb 0: none */
};

/* The inference of MultiHeadAttention: checks the attributes, ranks, types
 * and sizes, refuses what is not supported, fills out[0] and the present
 * outputs. */
int ms_mha_infer(struct op_infer *x);

/* Fills *a from a node whose inputs (n_in, dims fixed) inference accepted.
 * Returns 0 or CEP_ESHAPE / CEP_EUNSUPPORTED (a mask whose form only fixed
 * dims tell). */
int ms_mha_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		struct ms_mha *a);

#endif
