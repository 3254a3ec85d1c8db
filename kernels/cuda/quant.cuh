/*
 * quant.cuh — the arithmetic of the quantized operators on the device
 * (kernels/cuda/quant.cu, qmatmul.cu, qconv.cu), exactly that of the
 * reference kernels (kernels/cpu/quant.h): a quotient or product in
 * double, with the _rn intrinsics so that no multiply-add is fused, then
 * rounded once to the type the specification computes it in; a real
 * made an integer by rounding half to even (rint), NaN as 0, the zero
 * point added and the sum saturated.
 *
 * Scales and zero points are small tensors of a type only known at plan
 * time: they are read through the ONNX type number the launcher passes.
 */
#ifndef CEP_CUDA_QUANT_CUH
#define CEP_CUDA_QUANT_CUH

#include "common.cuh"
#include "qtypes.cuh"

/* enum quant_round of kernels/cpu/quant.h. */
enum { CEP_Q_F64 = 0, CEP_Q_F32 = 1, CEP_Q_F16 = 2, CEP_Q_BF16 = 3 };

/* ONNX element type numbers of what these kernels read. */
enum { CEP_DT_F32 = 1, CEP_DT_U8 = 2, CEP_DT_I8 = 3, CEP_DT_U16 = 4, CEP_DT_I16 = 5,
       CEP_DT_I32 = 6, CEP_DT_F16 = 10, CEP_DT_BF16 = 16, CEP_DT_U4 = 21, CEP_DT_I4 = 22 };

/* v rounded to nearest even in type r. */
__device__ __forceinline__ double cep_q_round(double v, int r)
{
	switch (r) {
	case CEP_Q_F32: return (double)__double2float_rn(v);
	case CEP_Q_F16: return (double)cep_f16_to_f32(cep_f32_to_f16(__double2float_rn(v)));
	case CEP_Q_BF16: return (double)cep_bf16_to_f32(cep_f32_to_bf16(__double2float_rn(v)));
	default: return v;
	}
}

/* Element i of a scale (float32, float16, bfloat16 or int32) exactly. */
__device__ __forceinline__ double cep_q_real(const void *p, int dt, i64 i)
{
	switch (dt) {
	case CEP_DT_F16: return (double)ld_f((const f16 *)p, i);
	case CEP_DT_BF16: return (double)ld_f((const bf16 *)p, i);
	case CEP_DT_I32: return (double)((const i32 *)p)[i];
	default: return (double)((const float *)p)[i];
	}
}

/* Element i of a quantized tensor, exactly. */
__device__ __forceinline__ i64 cep_q_ld(const i8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 cep_q_ld(const u8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 cep_q_ld(const i16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 cep_q_ld(const u16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 cep_q_ld(const i32 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 cep_q_ld(const i4 *p, i64 i) { return ld_i(p, i); }
__device__ __forceinline__ i64 cep_q_ld(const u4 *p, i64 i) { return ld_i(p, i); }

/* Element i of a zero point of ONNX type dt (int8, uint8, int16, uint16,
 * int32, int4 or uint4); 0 when p is NULL. */
__device__ __forceinline__ i64 cep_q_zp(const void *p, int dt, i64 i)
{
	if (p == 0)
		return 0;
	switch (dt) {
	case CEP_DT_I8: return ((const i8 *)p)[i];
	case CEP_DT_I16: return ((const i16 *)p)[i];
	case CEP_DT_U16: return ((const u16 *)p)[i];
	case CEP_DT_I32: return ((const i32 *)p)[i];
	case CEP_DT_I4: return cep_i4_val(((const u8 *)p)[i], true);
	case CEP_DT_U4: return cep_i4_val(((const u8 *)p)[i], false);
	default: return ((const u8 *)p)[i];
	}
}

/* v rounded half to even, plus zp, saturated to [lo, hi]; NaN gives zp. */
__device__ __forceinline__ i64 cep_q_saturate(double v, i64 zp, i64 lo, i64 hi)
{
	double r = v != v ? 0.0 : rint(v);

	r = __dadd_rn(r, (double)zp);
	if (r <= (double)lo)
		return lo;
	if (r >= (double)hi)
		return hi;
	return (i64)r;
}

/* Element i of an int8 (sgn) or uint8 tensor. */
__device__ __forceinline__ int cep_q_ld8(const u8 *p, int sgn, i64 i)
{
	int v = p[i];

	return sgn ? (int)(i8)v : v;
}

#endif
