/*
 * sdpa.h — what the reference kernel of ONNX's Attention operator
 * (kernels/cpu/sdpa.c, opsets 23 to 25) shares with its device kernel
 * (kernels/cuda/sdpa.c): the geometry of one node read from its
 * attributes and fixed shapes, where each operand's elements lie, the
 * additive bias every score gets and the rounding of each step, so that
 * both backends attend over the same keys with the same arithmetic.
 *
 * Attention(Q, K, V[, attn_mask, past_key, past_value, nonpad_kv_seqlen])
 *   -> Y[, present_key, present_value, qk_matmul_output]
 *
 * Q, K and V are all (B, H, S, D) ("4-D") or all (B, S, H * D) ("3-D",
 * with the heads named by q_num_heads and kv_num_heads); past_key and
 * past_value are (B, Hkv, P, D), and the keys attended are the P past
 * ones followed by the Skv new ones, T = P + Skv in all. Query head h
 * reads key and value head h / (Hq / Hkv) (grouped-query attention). For
 * query row i and key j of batch b and head h, with every step rounded
 * to Q's type t (a no-op for float32) as the specification's reference
 * rounds it, and c = sqrt(scale) rounded to t:
 *
 *	s   = t((t(c Q[i]) . t(c K[j])))           qk_matmul_output, mode 0
 *	s   = t(t(tanh(t(s / softcap))) softcap)   mode 1 (softcap > 0 only)
 *	s   = t(s + bias(b, h, i, j))              mode 2
 *	p   = softmax_j(s) in precision u          mode 3, rounded to t
 *	Y[i] = t(sum_j t(p[j]) V[j])
 *
 * The dot products and Y's sums accumulate in float32. u is
 * softmax_precision (float32 where it says float64: the kernels compute
 * in float32 alone and take no float64 Q), else t:
 * each step of the softmax is rounded to u, x = u(s), e = u(exp(u(x -
 * max))), p = u(e / sum), and its sum accumulates one key at a time
 * rounded to bfloat16 when u is bfloat16 (numpy's bfloat16 sum, which
 * the reference's expected values come from), else in float32 (double
 * on the host), rounded to u once.
 *
 * The bias adds the mask (a bool mask's false is -inf, a float mask's
 * value), -inf for a key past the causal frontier j > i + offset, -inf
 * outside the window (opset 25: j < i + offset - left or j > i + offset
 * + right for the bounds that are not -1), and -inf for a key at or past
 * nonpad_kv_seqlen[b]; offset is nonpad_kv_seqlen[b] - Sq with that
 * input, else P. A row whose bias is -inf for every key is a zero row
 * (p = 0, Y = 0), as the specification's errata say; so is one whose
 * scores are all -inf; a NaN score makes its row NaN.
 */
#ifndef CEP_KERNELS_CPU_SDPA_H
#define CEP_KERNELS_CPU_SDPA_H

#include "kernels/cpu/cpu.h"

/* The inputs and outputs of Attention, by position. */
enum {
	SDPA_IN_Q, SDPA_IN_K, SDPA_IN_V, SDPA_IN_MASK, SDPA_IN_PAST_K, SDPA_IN_PAST_V,
	SDPA_IN_NONPAD,
};
enum { SDPA_OUT_Y, SDPA_OUT_PRESENT_K, SDPA_OUT_PRESENT_V, SDPA_OUT_QK };

/* How attn_mask enters the bias. */
enum sdpa_mask {
	SDPA_MASK_NONE,
	SDPA_MASK_BOOL,  /* true: attend (0), false: -inf */
	SDPA_MASK_ADD,   /* a float mask, added */
};

/* The largest head size (Dk or Dv) the kernels take: the device kernel
 * of deep heads keeps a query row and a row of sums of that many floats
 * in shared memory. */
#define SDPA_MAX_DEPTH 4096

/* One node's geometry, every dimension fixed. */
struct sdpa_geom {
	int64_t B, Hq, Hkv;      /* batch, query heads, key and value heads */
	int64_t Sq, Skv, P, T;   /* query rows, new keys, past keys, P + Skv */
	int64_t Dk, Dv;          /* head sizes of Q and K, of V */
	int64_t m[4];            /* the mask's element strides along (b, h, i, j),
	                          * 0 along a broadcast dim */
	int64_t mT;              /* keys the mask covers: j >= mT is -inf (opset 24
	                          * pads a short mask so); T when it broadcasts */
	int64_t left, right;     /* the window's bounds in keys (opset 25), -1:
	                          * unbounded on that side */
	float sq;                /* sqrt(scale), rounded to Q's type: Q and K are
	                          * each multiplied by it */
	float softcap;           /* 0: none */
	int32_t rank3;           /* Q, K, V and Y are 3-D (B, S, H * D) */
	int32_t causal;
	int32_t mask;            /* enum sdpa_mask */
	int32_t nonpad;          /* nonpad_kv_seqlen is given */
	int32_t qk_mode;         /* qk_matmul_output_mode, 0..3 */
	int32_t prec;            /* the softmax's precision u: a cep_dtype,
	                          * float32, float16 or bfloat16 */
};

/*
 * Fills *g from node and its inputs in (n_in of them, absent ones with
 * dtype undefined; dims fixed and accepted by the operator's inference).
 * Returns 0, or an error with a message for what inference could not see
 * (CEP_EUNSUPPORTED for a head deeper than SDPA_MAX_DEPTH).
 */
int cpu_sdpa_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		  struct sdpa_geom *g);

/* Element offsets of query row i of (b, h), of new key row j of (b, kh) in
 * K (depth Dk) and V (depth Dv), of row j of a past or present cache of
 * `rows` rows, of output row i, and of score (b, h, i, j); every row's
 * elements are contiguous. */
static inline int64_t sdpa_q_at(const struct sdpa_geom *g, int64_t b, int64_t h, int64_t i)
{
	return g->rank3 ? ((b * g->Sq + i) * g->Hq + h) * g->Dk : ((b * g->Hq + h) * g->Sq + i) * g->Dk;
}

static inline int64_t sdpa_kv_at(const struct sdpa_geom *g, int64_t b, int64_t kh, int64_t j,
				 int64_t depth)
{
	return g->rank3 ? ((b * g->Skv + j) * g->Hkv + kh) * depth
			: ((b * g->Hkv + kh) * g->Skv + j) * depth;
}

static inline int64_t sdpa_cache_at(const struct sdpa_geom *g, int64_t b, int64_t kh, int64_t j,
				    int64_t rows, int64_t depth)
{
	return ((b * g->Hkv + kh) * rows + j) * depth;
}

static inline int64_t sdpa_y_at(const struct sdpa_geom *g, int64_t b, int64_t h, int64_t i)
{
	return g->rank3 ? ((b * g->Sq + i) * g->Hq + h) * g->Dv : ((b * g->Hq + h) * g->Sq + i) * g->Dv;
}

static inline int64_t sdpa_qk_at(const struct sdpa_geom *g, int64_t b, int64_t h, int64_t i,
				 int64_t j)
{
	return ((b * g->Hq + h) * g->Sq + i) * g->T + j;
}

/* The causal frontier's and the window's offset for batch entry b: the
 * keys that precede the query block. */
static inline int64_t sdpa_offset(const struct sdpa_geom *g, const int64_t *nonpad, int64_t b)
{
	return g->nonpad ? nonpad[b] - g->Sq : g->P;
}

/* The additive bias of score (b, h, i, j): the mask (of dtype mdt at
 * mask), the causal frontier, the window and the padding of nonpad
 * (int64, B values), summed as the specification's function body sums
 * them. */
static inline float sdpa_bias(const struct sdpa_geom *g, const void *mask, cep_dtype mdt,
			      const int64_t *nonpad, int64_t b, int64_t h, int64_t i, int64_t j)
{
	int64_t off = sdpa_offset(g, nonpad, b);
	float bias = 0.0f;

	if (g->mask != SDPA_MASK_NONE) {
		if (j >= g->mT) {
			bias = -INFINITY;
		} else {
			int64_t at = b * g->m[0] + h * g->m[1] + i * g->m[2] + j * g->m[3];

			if (g->mask == SDPA_MASK_BOOL)
				bias = ((const uint8_t *)mask)[at] ? 0.0f : -INFINITY;
			else
				bias = cpu_load_f(mask, mdt, at);
		}
	}
	if (g->causal && j > i + off)
		bias += -INFINITY;
	if ((g->left >= 0 && j < i + off - g->left) || (g->right >= 0 && j > i + off + g->right))
		bias += -INFINITY;
	if (g->nonpad && j >= nonpad[b])
		bias += -INFINITY;
	return bias;
}

/* softcap * tanh(s / softcap) with each step rounded to t, or s when
 * softcap is 0. */
static inline float sdpa_softcap(const struct sdpa_geom *g, float s, cep_dtype t)
{
	if (g->softcap <= 0.0f)
		return s;
	return cpu_round_f(cpu_round_f(tanhf(cpu_round_f(s / g->softcap, t)), t) * g->softcap, t);
}

#endif
