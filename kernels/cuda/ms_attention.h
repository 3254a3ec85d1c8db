/*
 * ms_attention.h — what the CUDA kernels of com.microsoft Attention
 * (kernels/cuda/ms_attention.c) and MultiHeadAttention
 * (kernels/cuda/ms_mha.c) share: the additive mask of
 * kernels/cpu/ms_attention.h built on the device (msa_mask of
 * ms_attention.cu), and the internal Attention operator's kernels
 * (attention.cu, attention_tc.cu) picked for the heads' depths and
 * launched over strided views of Q, K, V, the mask and the output.
 */
#ifndef CEP_KERNELS_CUDA_MS_ATTENTION_H
#define CEP_KERNELS_CUDA_MS_ATTENTION_H

#include "kernels/cpu/ms_attention.h"
#include "kernels/cuda/launch.h"

#define MSA_QROWS 16         /* query rows per block of attn_tile (AT_QROWS) */
#define MSA_TC_QROWS 64      /* of attn_tc64 (TC_QROWS) */
#define MSA_TILE_THREADS 128 /* AT_WARPS and TC_WARPS warps */
#define MSA_ROWS_THREADS 128
#define MSA_GRID_MAX (1u << 20)

/* Twin of struct cep_attn (attention.cuh), as kernels/cuda/attention.c's
 * struct cuda_attn is. */
struct cuda_msa_attn {
	int64_t B, H, Sq, Sk, Dk, Dv;
	int64_t q[4], k[4], v[4];       /* element strides of (b, h, s, d) */
	int64_t m[4];                   /* the mask's, of (b, h, i, j) */
	int64_t o[4];                   /* the output's, of (b, h, i, d) */
	float scale;
	int32_t has_mask;
	int32_t vec;
	int64_t q_tiles;
};

/* Twin of struct cep_msa_mask (ms_attention.cu). */
struct cuda_msa_mask {
	int64_t n;              /* elements: mb * mh * mi * T */
	int64_t S, T, P;        /* queries, keys, past keys */
	int64_t mh, mi;
	int64_t ab_b, ab_h;     /* attention_bias's dims 0 and 1; 0: none */
	float filt;
	int32_t mask;           /* enum ms_attn_mask */
	int32_t causal;
	int32_t pad;
};

/* The attention kernel picked for a shape, and its launch geometry. */
struct cuda_msa_kernel {
	CUfunction fn;
	unsigned grid, block, shmem;
	int32_t depth;          /* fn's depth when it has a 16-byte staging
	                         * path, else 0 */
	int32_t q_tiles;        /* blocks of query rows per (b, h) */
};

/* Records err with the message so far behind "op: ". Returns err. */
int cuda_msa_blame(const char *op, int err);

/* Picks (and gets compiled) the internal Attention's kernel for BH batch
 * and head pairs of Sq queries, heads of depth dk (Q, K) and dv (V), in
 * c->in[0]'s type, by the rules of kernels/cuda/attention.c (tensor cores
 * for 16-bit types up to 64 on sm_80 and later, the tiled kernels up to
 * 128, the row kernel beyond, up to XFMR_ATTN_MAX_DEPTH). Returns 0, or
 * CEP_EUNSUPPORTED for deeper heads, or the compile's error, named op's. */
int cuda_msa_pick(struct op_call *c, const char *op, int64_t BH, int64_t Sq, int64_t dk,
		  int64_t dv, struct cuda_msa_kernel *k);

/* Launches k over x (geometry and strides filled; has_mask, vec and
 * q_tiles are set here) on c's stream. m NULL: no mask. Returns 0 or the
 * launch's error. */
int cuda_msa_attend(struct op_call *c, const struct cuda_msa_kernel *k, struct cuda_msa_attn *x,
		    const void *q, const void *kk, const void *v, const void *m, void *o);

/* Launches fn (msa_mask_<type>) building m's mask into out (device) from
 * the int32 key mask mi32 and attention_bias ab (either NULL when not
 * given). Returns 0 or the launch's error. */
int cuda_msa_mask_run(struct op_call *c, CUfunction fn, const struct ms_attn_mspec *m,
		      const void *mi32, const void *ab, void *out);

#endif
