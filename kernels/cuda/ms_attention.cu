/*
 * ms_attention.cu — the steps of com.microsoft Attention
 * (kernels/cpu/ms_attention.h) that are neither the projection (a cuBLASLt
 * GEMM) nor the attention itself (the internal Attention's kernels of
 * attention.cu and attention_tc.cu, launched over views of the projection):
 *
 *   msa_bias_<type>  the projection's bias, where the GEMM's epilogue could
 *       not take it: qkv[r, n] += bias[n] in float, rounded to the type
 *       (add 0: written alone, for an input of hidden size 0);
 *   msa_mask_<type>  the additive mask (mb, mh, mi, T) in the type, each
 *       element as the host's ms_attn_mask_fill() makes it: mask_filter_value where
 *       mask_index masks the key ((1 - m) * filter for a raw mask), plus
 *       attention_bias, -inf after the query (and the past) when
 *       unidirectional, over S queries and T keys;
 *   mha_gather_<type>  MultiHeadAttention's Q, K or V in heads (B, N,
 *       rows, E): the past ahead of the new rows, each new element read
 *       through its form's strides plus its bias in float, rounded once.
 *
 * Launchers: kernels/cuda/ms_attention.c and ms_mha.c.
 */
#include "blockred.cuh"
#include "elem.cuh"

enum { MSA_NONE, MSA_LENGTHS, MSA_RAW2, MSA_RAW3 }; /* enum ms_attn_mask */

/* Twin: struct cuda_msa_mask (ms_attention.c). */
struct cep_msa_mask {
	i64 n;                  /* elements: mb * mh * mi * T */
	i64 S, T, P;            /* queries, keys, past keys */
	i64 mh, mi;
	i64 ab_b, ab_h;         /* attention_bias's dims 0 and 1; 0: none */
	float filt;
	i32 mask;               /* MSA_* */
	i32 causal;
	i32 pad;
};

template <typename T>
__device__ __forceinline__ void msa_mask(const i32 *mi32, const T *ab, T *out,
					 const cep_msa_mask &p)
{
	CEP_FOR(e, p.n) {
		i64 j = e % p.T, r = e / p.T;
		i64 i = r % p.mi, h = (r / p.mi) % p.mh, b = r / p.mi / p.mh;
		float v = 0.0f;

		if (p.mask == MSA_LENGTHS && j >= mi32[b])
			v = p.filt;
		else if (p.mask == MSA_RAW2)
			v = __fmul_rn((float)(1 - mi32[b * p.T + j]), p.filt);
		else if (p.mask == MSA_RAW3)
			v = __fmul_rn((float)(1 - mi32[(b * p.S + i) * p.T + j]), p.filt);
		if (p.ab_b > 0)
			v = __fadd_rn(v, ld_f(ab, (((p.ab_b > 1 ? b : 0) * p.ab_h + (p.ab_h > 1 ? h : 0)) *
						  p.S + i) * p.T + j));
		if (p.causal && j > p.P + i)
			v = -CEP_INF_F;
		st_f(out, e, v);
	}
}

template <typename T>
__device__ __forceinline__ void msa_bias(T *qkv, const T *bias, i64 rows, i64 n, i32 add)
{
	CEP_FOR(e, rows * n) {
		float b = bias != 0 ? ld_f(bias, e % n) : 0.0f;

		st_f(qkv, e, add ? __fadd_rn(ld_f(qkv, e), b) : b);
	}
}

/* Twin: struct cuda_mha_gather (ms_mha.c). out (B, N, rows, E) from the
 * past (B, N, P, E) for rows below P, else from src at b * sb + l * sl +
 * n * sn + e (l = row - P) plus bias[boff + n * E + e] in float, rounded
 * once to the type. */
struct cep_mha_gather {
	i64 n;                  /* elements: B * N * rows * E */
	i64 N, rows, P, E;
	i64 sb, sl, sn;         /* src's strides of batch, row and head */
	i64 boff;               /* where this part of the bias starts */
};

template <typename T>
__device__ __forceinline__ void mha_gather(const T *src, const T *past, const T *bias, T *out,
					   const cep_mha_gather &p)
{
	CEP_FOR(x, p.n) {
		i64 e = x % p.E, r = x / p.E;
		i64 j = r % p.rows, bn = r / p.rows, n = bn % p.N, b = bn / p.N;

		if (j < p.P) {
			out[x] = past[(bn * p.P + j) * p.E + e];
		} else {
			float v = ld_f(src, b * p.sb + (j - p.P) * p.sl + n * p.sn + e);

			if (bias != 0)
				v = __fadd_rn(v, ld_f(bias, p.boff + n * p.E + e));
			st_f(out, x, v);
		}
	}
}

#define MSA_KERNELS(T, sfx)                                                               \
	extern "C" __global__ void msa_mask_##sfx(const i32 *mi32, const T *ab, T *out,    \
						  cep_msa_mask p)                          \
	{                                                                                 \
		msa_mask<T>(mi32, ab, out, p);                                            \
	}                                                                                 \
	extern "C" __global__ void msa_bias_##sfx(T *qkv, const T *bias, i64 rows, i64 n,  \
						  i32 add)                                 \
	{                                                                                 \
		msa_bias<T>(qkv, bias, rows, n, add);                                     \
	}                                                                                 \
	extern "C" __global__ void mha_gather_##sfx(const T *src, const T *past,           \
						    const T *bias, T *out, cep_mha_gather p) \
	{                                                                                 \
		mha_gather<T>(src, past, bias, out, p);                                   \
	}

MSA_KERNELS(float, f32)
MSA_KERNELS(f16, f16)
MSA_KERNELS(bf16, bf16)
