/*
 * rotary.h — what the reference kernel of RotaryEmbedding
 * (kernels/cpu/rotary.c: ai.onnx opset 23 and onnxruntime's com.microsoft
 * opset 1) shares with its device kernel (kernels/cuda/rotary.c): the
 * geometry of one node, read from its attributes and fixed shapes, and
 * where each element and its cosine and sine lie, so that both backends
 * rotate the same pairs.
 *
 * X is (B, H, S, D) or (B, S, H * D) (num_heads names H); the first R
 * elements of each head (R = rotary_embedding_dim, or D when it is 0) are
 * rotated as R / 2 pairs, (x[k], x[k + R/2]) or, interleaved,
 * (x[2k], x[2k + 1]), by the angle whose cosine and sine are
 * cos_cache[pos][k] and sin_cache[pos][k], pos = position_ids[b][s]; the
 * rest pass unchanged:
 *
 *	x1' = cos * x1 - sin * x2,  x2' = sin * x1 + cos * x2
 *
 * Without position_ids the caches are (B, S, R / 2), indexed by (b, s).
 * A position counts from the end of the cache when negative, as numpy's
 * indexing in the specification's reference does; one outside
 * [-rows, rows) is an error.
 *
 * com.microsoft's RotaryEmbedding(input, position_ids, cos_cache,
 * sin_cache) always has position_ids: (B, S), or one value p0 giving
 * position p0 + s to every batch entry; a negative position is out of
 * range there.
 */
#ifndef CEP_KERNELS_CPU_ROTARY_H
#define CEP_KERNELS_CPU_ROTARY_H

#include "kernels/cpu/cpu.h"

struct rope_geom {
	int64_t B, H, S, D;      /* X as batch, heads, sequence, head size */
	int64_t half;            /* R / 2: pairs rotated per head */
	int64_t rows;            /* cache rows (position_ids given), else 0 */
	int64_t cb, cs;          /* cache strides of b and s without position_ids
	                          * (0 along a dim of 1), or of position_ids' */
	int32_t rank3;           /* X is (B, S, H * D) */
	int32_t interleaved;
	int32_t has_pos;         /* position_ids given */
	int32_t pos_step;        /* 1: position = position_ids[0] + s */
	int32_t from_end;        /* a negative position counts from the end */
	int32_t pad;
};

/* The inputs of RotaryEmbedding, by position in node's domain. */
struct rope_inputs {
	int x, cos, sin, pos;
};

/* Where node's inputs are: (X, cos_cache, sin_cache, position_ids) in
 * ai.onnx, (input, position_ids, cos_cache, sin_cache) in com.microsoft. */
void cpu_rope_inputs(const struct op_node *node, struct rope_inputs *ix);

/*
 * Fills *g from node and its inputs in (n_in of them; dims fixed and
 * accepted by inference). Returns 0 or an error with a message.
 */
int cpu_rope_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		  struct rope_geom *g);

/* The element offset of X's (and Y's) element d of head h at (b, s). */
static inline int64_t rope_x_at(const struct rope_geom *g, int64_t b, int64_t h, int64_t s,
				int64_t d)
{
	return g->rank3 ? ((b * g->S + s) * g->H + h) * g->D + d : ((b * g->H + h) * g->S + s) * g->D + d;
}

/* Pair k of element d of the rotated part (d < 2 * half), and whether d
 * is the pair's second member. */
static inline int64_t rope_pair(const struct rope_geom *g, int64_t d, bool *second)
{
	if (g->interleaved) {
		*second = (d & 1) != 0;
		return d >> 1;
	}
	*second = d >= g->half;
	return *second ? d - g->half : d;
}

/* The element of a head that is the first (second false) or the second
 * member of pair k. */
static inline int64_t rope_member(const struct rope_geom *g, int64_t k, bool second)
{
	return g->interleaved ? 2 * k + (second ? 1 : 0) : k + (second ? g->half : 0);
}

#endif
