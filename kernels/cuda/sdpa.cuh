/*
 * sdpa.cuh — what the sources of ONNX's Attention share (kernels/cuda/
 * sdpa.cu, the SIMT kernels; sdpa_tc.cu, the tensor-core one): the
 * geometry the launcher (kernels/cuda/sdpa.c) passes, as struct sdpa_geom
 * of kernels/cpu/sdpa.h, where each operand's elements lie, the bias of a
 * score and the rounded steps from a dot product to a probability, each
 * the device's twin of the host's.
 */
#ifndef CEP_CUDA_SDPA_CUH
#define CEP_CUDA_SDPA_CUH

#include "blockred.cuh"

/* Twin: struct sdpa_geom (kernels/cpu/sdpa.h). */
struct cep_sdpa {
	i64 B, Hq, Hkv;
	i64 Sq, Skv, P, T;
	i64 Dk, Dv;
	i64 m[4];                       /* the mask's strides of (b, h, i, j) */
	i64 mT;                         /* keys the mask covers */
	i64 left, right;                /* the window, -1: unbounded */
	float sq;                       /* sqrt(scale) in Q's type */
	float softcap;                  /* 0: none */
	i32 rank3;
	i32 causal;
	i32 mask;                       /* 0 none, 1 bool, 2 added */
	i32 nonpad;
	i32 qk_mode;
	i32 prec;                       /* the softmax's type: 1, 10 or 16 */
};

/* The mask's element type (the launcher's SDPA_MDT_*). */
enum { SD_MDT_NONE, SD_MDT_BOOL, SD_MDT_F32, SD_MDT_F16, SD_MDT_BF16 };

/* The softmax's precisions, as ONNX numbers the types. */
#define SD_U_F16 10
#define SD_U_BF16 16

#define SD_FULL 0xffffffffu

/* ------------------------------------------------------------- geometry */

__device__ __forceinline__ i64 sd_q_at(const cep_sdpa &g, i64 b, i64 h, i64 i)
{
	return g.rank3 ? ((b * g.Sq + i) * g.Hq + h) * g.Dk : ((b * g.Hq + h) * g.Sq + i) * g.Dk;
}

__device__ __forceinline__ i64 sd_y_at(const cep_sdpa &g, i64 b, i64 h, i64 i)
{
	return g.rank3 ? ((b * g.Sq + i) * g.Hq + h) * g.Dv : ((b * g.Hq + h) * g.Sq + i) * g.Dv;
}

__device__ __forceinline__ i64 sd_qk_at(const cep_sdpa &g, i64 b, i64 h, i64 i, i64 j)
{
	return ((b * g.Hq + h) * g.Sq + i) * g.T + j;
}

/* Where key (or value) row j of (b, kh) starts, depth elements a row: in
 * the past cache for j < P, else in K (or V); *from_past says which. */
__device__ __forceinline__ i64 sd_row_at(const cep_sdpa &g, i64 b, i64 kh, i64 j, i64 depth,
					 bool *from_past)
{
	*from_past = j < g.P;
	if (*from_past)
		return ((b * g.Hkv + kh) * g.P + j) * depth;
	j -= g.P;
	return g.rank3 ? ((b * g.Skv + j) * g.Hkv + kh) * depth : ((b * g.Hkv + kh) * g.Skv + j) * depth;
}

__device__ __forceinline__ float sd_mask_ld(const void *m, int mdt, i64 at)
{
	switch (mdt) {
	case SD_MDT_BOOL: return ((const u8 *)m)[at] ? 0.0f : -CEP_INF_F;
	case SD_MDT_F32: return ((const float *)m)[at];
	case SD_MDT_F16: return cep_f16_to_f32(((const u16 *)m)[at]);
	case SD_MDT_BF16: return cep_bf16_to_f32(((const u16 *)m)[at]);
	default: return 0.0f;
	}
}

/* The additive bias of score (b, h, i, j), as sdpa_bias() of the host. */
__device__ __forceinline__ float sd_bias(const cep_sdpa &g, const void *mask, int mdt,
					 const i64 *nonpad, i64 b, i64 h, i64 i, i64 j)
{
	const i64 off = g.nonpad ? nonpad[b] - g.Sq : g.P;
	float bias = 0.0f;

	if (g.mask != 0) {
		if (j >= g.mT)
			bias = -CEP_INF_F;
		else
			bias = sd_mask_ld(mask, mdt, b * g.m[0] + h * g.m[1] + i * g.m[2] + j * g.m[3]);
	}
	if (g.causal && j > i + off)
		bias += -CEP_INF_F;
	if ((g.left >= 0 && j < i + off - g.left) || (g.right >= 0 && j > i + off + g.right))
		bias += -CEP_INF_F;
	if (g.nonpad && j >= nonpad[b])
		bias += -CEP_INF_F;
	return bias;
}

/* ------------------------------------------------------------ arithmetic */

/* x rounded to the softmax's precision u. */
__device__ __forceinline__ float sd_round_u(float x, int u)
{
	return u == SD_U_F16 ? cep_round<f16>(x) : u == SD_U_BF16 ? cep_round<bf16>(x) : x;
}

/* The score of a key from its dot product (of the scaled rows) and its
 * bias: the raw product in *raw (mode 0), after the softcap in *capped
 * (mode 1); returns it with the bias added (mode 2), each rounded to T. */
template <typename T>
__device__ __forceinline__ float sd_score(const cep_sdpa &g, float dot, float bias, float *raw,
					  float *capped)
{
	*raw = cep_round<T>(dot);
	*capped = g.softcap > 0.0f ?
		cep_round<T>(cep_round<T>(tanhf(cep_round<T>(*raw / g.softcap))) * g.softcap) : *raw;
	return cep_round<T>(*capped + bias);
}

/* The weight of score s in a row whose maximum (in precision u) is mx. */
__device__ __forceinline__ float sd_weight(float s, float mx, int u)
{
	return sd_round_u(expf(sd_round_u(sd_round_u(s, u) - mx, u)), u);
}

/* The probability of a key of weight e in a row of sum l, rounded back to
 * T: 0 where the row is fully masked (open false), NaN where it has a NaN
 * score. */
template <typename T>
__device__ __forceinline__ float sd_prob(float e, float l, int u, bool open, bool nan)
{
	if (!open)
		return 0.0f;
	if (nan)
		return __int_as_float(0x7fc00000);
	return cep_round<T>(sd_round_u(e / l, u));
}

/* Folds score s (bias bias) into a row's maximum (in precision u) and
 * flags: whether a key is open, whether a score is NaN. */
__device__ __forceinline__ void sd_see(float *mx, bool *open, bool *nan, float s, float bias,
				       int u)
{
	float x = sd_round_u(s, u);

	if (bias != -CEP_INF_F)
		*open = true;
	if (x != x)
		*nan = true;
	else if (x > *mx)
		*mx = x;
}

#endif
