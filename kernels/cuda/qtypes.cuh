/*
 * qtypes.cuh — the quantized element types on the device, with exactly
 * the conversions of the host's kernels/cpu/qtypes.h and cpu.h: the 4-bit
 * types (int4, uint4, float4e2m1: a byte each, the element in the low
 * nibble, an int4 written sign-extended; client/cudaep.h) with the loads
 * and stores every stored type has in common.cuh, so that Cast's template
 * takes them (kernels/cuda/cast.cu); and, through f8.cuh (which Cast's
 * float8 kernels use too), the float8 types' codes (float8e4m3fn,
 * float8e4m3fnuz, float8e5m2, float8e5m2fnuz) decoded and encoded with
 * rounding to nearest even and ONNX's saturation, for QuantizeLinear and
 * DequantizeLinear (kernels/cuda/quant.cu).
 */
#ifndef CEP_CUDA_QTYPES_CUH
#define CEP_CUDA_QTYPES_CUH

#include "common.cuh"
#include "f8.cuh"

/* Storage types: a byte each. */
struct i4 { u8 v; };
struct u4 { u8 v; };
struct f4 { u8 v; };               /* float4e2m1 */

template <> struct cep_is_float<f4> { static const bool value = true; };
template <> struct cep_is_unsigned<u4> { static const bool value = true; };

/* 2^k as a double, for k in double's normal range. */
__device__ __forceinline__ double cep_pow2(int k)
{
	return __longlong_as_double((long long)(k + 1023) << 52);
}

/* The unbiased exponent of a finite nonzero double. */
__device__ __forceinline__ int cep_exp_of(double a)
{
	return (int)((__double_as_longlong(a) >> 52) & 0x7ff) - 1023;
}

/* ------------------------------------------------------- int4, uint4 */

__device__ __forceinline__ i64 cep_i4_val(u8 b, bool sgn)
{
	int v = b & 0xf;

	return sgn && v >= 8 ? v - 16 : v;
}

/* v wrapped to 4 bits, an int4 sign-extended into the byte. */
__device__ __forceinline__ u8 cep_i4_wrap(i64 v, bool sgn)
{
	unsigned n = (unsigned)((u64)v & 0xfu);

	return (u8)(sgn && n >= 8 ? n | 0xf0u : n);
}

/* A real truncated, and 0 when out of range (qtype_int4_from_real()). */
__device__ __forceinline__ u8 cep_i4_real(double v, bool sgn)
{
	double t = trunc(v);

	if (!(t >= (sgn ? -8.0 : 0.0) && t <= (sgn ? 7.0 : 15.0)))
		return 0;
	return cep_i4_wrap((i64)t, sgn);
}

/* ------------------------------------------------------- float4e2m1 */

__device__ __forceinline__ float cep_f4_decode(u8 b)
{
	unsigned k = b & 7u;
	/* 0 and 0.5 (subnormal), then (2 + m) * 2^(e - 2): 1, 1.5, 2, 3, 4, 6. */
	float m = k < 2 ? 0.5f * (float)k : (float)(2 + (k & 1)) * (float)(1 << (k >> 1)) * 0.25f;

	return b & 8u ? -m : m;
}

/* Rounded to nearest even, saturating to +-6; NaN as a zero of the other
 * sign (qtype_f4_encode()). */
__device__ __forceinline__ u8 cep_f4_encode(double x)
{
	unsigned s = __double_as_longlong(x) < 0 ? 8u : 0u, k;
	double a = fabs(x);

	if (x != x)
		return (u8)(s ^ 8u);
	for (k = 0; k < 7; k++) {
		double mid = 0.5 * ((double)cep_f4_decode((u8)k) + (double)cep_f4_decode((u8)(k + 1)));

		if (a < mid || (a == mid && k % 2 == 0))
			break;
	}
	return (u8)(s | k);
}

/* ------------------------------------------------- loads and stores */

__device__ __forceinline__ i64 ld_i(const i4 *p, i64 i) { return cep_i4_val(p[i].v, true); }
__device__ __forceinline__ i64 ld_i(const u4 *p, i64 i) { return cep_i4_val(p[i].v, false); }
__device__ __forceinline__ float ld_f(const i4 *p, i64 i) { return (float)ld_i(p, i); }
__device__ __forceinline__ float ld_f(const u4 *p, i64 i) { return (float)ld_i(p, i); }
__device__ __forceinline__ float ld_f(const f4 *p, i64 i) { return cep_f4_decode(p[i].v); }
__device__ __forceinline__ double ld_d(const i4 *p, i64 i) { return (double)ld_i(p, i); }
__device__ __forceinline__ double ld_d(const u4 *p, i64 i) { return (double)ld_i(p, i); }
__device__ __forceinline__ double ld_d(const f4 *p, i64 i) { return ld_f(p, i); }
__device__ __forceinline__ i64 ld_i(const f4 *p, i64 i) { return cep_f2i(ld_f(p, i)); }

__device__ __forceinline__ void st_i(i4 *p, i64 i, i64 v) { p[i].v = cep_i4_wrap(v, true); }
__device__ __forceinline__ void st_i(u4 *p, i64 i, i64 v) { p[i].v = cep_i4_wrap(v, false); }
__device__ __forceinline__ void st_i(f4 *p, i64 i, i64 v) { p[i].v = cep_f4_encode((double)v); }
__device__ __forceinline__ void st_d(i4 *p, i64 i, double v) { p[i].v = cep_i4_real(v, true); }
__device__ __forceinline__ void st_d(u4 *p, i64 i, double v) { p[i].v = cep_i4_real(v, false); }
__device__ __forceinline__ void st_d(f4 *p, i64 i, double v) { p[i].v = cep_f4_encode(v); }
__device__ __forceinline__ void st_f(i4 *p, i64 i, float v) { st_d(p, i, (double)v); }
__device__ __forceinline__ void st_f(u4 *p, i64 i, float v) { st_d(p, i, (double)v); }
__device__ __forceinline__ void st_f(f4 *p, i64 i, float v) { st_d(p, i, (double)v); }

/* The float8 types: f8.cuh's codec, which Cast (cast_f8.cu) uses too. */
#endif
