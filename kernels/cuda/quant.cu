/*
 * quant.cu — QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
 * with the arithmetic of the reference kernels (kernels/cpu/quant.c,
 * quant.cuh): a thread per element, its scale and zero point found
 * through the granularity's strides (struct cep_quant).
 *
 * quantize_<x>_<y>: x float32, float16, bfloat16 or int32 to y int8,
 * uint8, int16, uint16, int4 or uint4 (the launcher's range; the 4-bit
 * types a byte each), divided in the rounding the launcher gives; or to
 * y a float8 type (saturating as the launcher says) or float4e2m1,
 * rounded to nearest even (qtypes.cuh), whose zero point is 0 and not
 * added but for float4e2m1's -0 + 0 (the host checks that it is 0; the
 * device does not read it). dequantize_<x>_<y>: x int8, uint8, int16,
 * uint16, int32, int4, uint4, a float8 type or float4e2m1 (its value, no
 * zero point) to y float32, float16 or bfloat16, the product rounded to
 * float32 and then to y.
 * dynquant_range: one block finds the range of x and writes y_scale and
 * y_zero_point (into the workspace, and the outputs where present);
 * dynquant_apply then quantizes with them.
 *
 * Launcher: kernels/cuda/quant.c.
 */
#include "blockred.cuh"
#include "quant.cuh"

/* Twin: struct cuda_quant. */
struct cep_quant {
	i64 n, d, inner, block;      /* x as (outer, d, inner); elements per scale */
	i64 so, sa, sr;              /* scale index strides (struct cpu_quant) */
	i32 round;                   /* QuantizeLinear's division */
	i32 sdt, zdt;                /* ONNX types of the scale and zero point */
	i32 saturate;                /* float8 outputs */
	i64 lo, hi;                  /* the output's range */
};

__device__ __forceinline__ i64 quant_at(const cep_quant &p, i64 i)
{
	i64 r = i % p.inner, t = i / p.inner;

	return t / p.d * p.so + t % p.d / p.block * p.sa + r * p.sr;
}

/* ----------------------------------------------------------- QuantizeLinear */

/* A quantized integer, already in its type's range, into y[i]. */
__device__ __forceinline__ void q_store(i8 *y, i64 i, i64 v) { y[i] = (i8)v; }
__device__ __forceinline__ void q_store(u8 *y, i64 i, i64 v) { y[i] = (u8)v; }
__device__ __forceinline__ void q_store(i16 *y, i64 i, i64 v) { y[i] = (i16)v; }
__device__ __forceinline__ void q_store(u16 *y, i64 i, i64 v) { y[i] = (u16)v; }
__device__ __forceinline__ void q_store(i4 *y, i64 i, i64 v) { st_i(y, i, v); }
__device__ __forceinline__ void q_store(u4 *y, i64 i, i64 v) { st_i(y, i, v); }

template <typename X, typename Y>
__device__ __forceinline__ void quantize(const X *x, const void *s, const void *zp, Y *y,
					 const cep_quant &p)
{
	CEP_FOR(i, p.n) {
		i64 k = quant_at(p, i);
		double xv = cep_q_round(ld_d(x, i), p.round);
		double sv = cep_q_round(cep_q_real(s, p.sdt, k), p.round);
		double v = cep_q_round(__ddiv_rn(xv, sv), p.round);

		q_store(y, i, cep_q_saturate(v, cep_q_zp(zp, p.zdt, k), p.lo, p.hi));
	}
}

/* To float8 (ONNX type T, 17..20) or float4e2m1 (23): the quotient
 * rounded to nearest even in it. */
template <typename X, int T>
__device__ __forceinline__ void quantize_float(const X *x, const void *s, const void *zp,
					       u8 *y, const cep_quant &p)
{
	CEP_FOR(i, p.n) {
		i64 k = quant_at(p, i);
		double xv = cep_q_round(ld_d(x, i), p.round);
		double sv = cep_q_round(cep_q_real(s, p.sdt, k), p.round);
		double v = cep_q_round(__ddiv_rn(xv, sv), p.round);

		if (T == 23) {
			/* Its zero point is added: -0 + 0 is +0. */
			if (zp != 0 && v == 0.0)
				v = 0.0;
			y[i] = cep_f4_encode(v);
		} else {
			y[i] = cep_f8_encode(cep_f8_fmt_of(T), cep_f64_to_f32_odd(v), p.saturate != 0);
		}
	}
}

#define QUANTIZE_FLOAT_KERNEL(X, xs, T, ys)                                                \
	extern "C" __global__ void quantize_##xs##_##ys(const X *x, const void *s,            \
							const void *zp, u8 *y, cep_quant p)   \
	{                                                                                  \
		quantize_float<X, T>(x, s, zp, y, p);                                      \
	}

#define QUANTIZE_KERNEL(X, xs, Y, ys)                                                      \
	extern "C" __global__ void quantize_##xs##_##ys(const X *x, const void *s,            \
							const void *zp, Y *y, cep_quant p)   \
	{                                                                                  \
		quantize<X, Y>(x, s, zp, y, p);                                            \
	}

#define QUANTIZE_FROM(X, xs)                        \
	QUANTIZE_KERNEL(X, xs, i8, i8)              \
	QUANTIZE_KERNEL(X, xs, u8, u8)              \
	QUANTIZE_KERNEL(X, xs, i16, i16)            \
	QUANTIZE_KERNEL(X, xs, u16, u16)            \
	QUANTIZE_KERNEL(X, xs, i4, i4)              \
	QUANTIZE_KERNEL(X, xs, u4, u4)              \
	QUANTIZE_FLOAT_KERNEL(X, xs, 17, e4m3fn)    \
	QUANTIZE_FLOAT_KERNEL(X, xs, 18, e4m3fnuz)  \
	QUANTIZE_FLOAT_KERNEL(X, xs, 19, e5m2)      \
	QUANTIZE_FLOAT_KERNEL(X, xs, 20, e5m2fnuz)  \
	QUANTIZE_FLOAT_KERNEL(X, xs, 23, f4)

QUANTIZE_FROM(float, f32)
QUANTIZE_FROM(f16, f16)
QUANTIZE_FROM(bf16, bf16)
QUANTIZE_FROM(i32, i32)

/* --------------------------------------------------------- DequantizeLinear */

template <typename X, typename Y>
__device__ __forceinline__ void dequantize(const X *x, const void *s, const void *zp, Y *y,
					   const cep_quant &p)
{
	CEP_FOR(i, p.n) {
		i64 k = quant_at(p, i);
		i64 d = cep_q_ld(x, i) - cep_q_zp(zp, p.zdt, k);

		st_f(y, i, __double2float_rn(__dmul_rn((double)d, cep_q_real(s, p.sdt, k))));
	}
}

#define DEQUANTIZE_KERNEL(X, xs, Y, ys)                                                   \
	extern "C" __global__ void dequantize_##xs##_##ys(const X *x, const void *s,         \
							  const void *zp, Y *y, cep_quant p) \
	{                                                                                 \
		dequantize<X, Y>(x, s, zp, y, p);                                         \
	}

#define DEQUANTIZE_TO(X, xs)                    \
	DEQUANTIZE_KERNEL(X, xs, float, f32)    \
	DEQUANTIZE_KERNEL(X, xs, f16, f16)      \
	DEQUANTIZE_KERNEL(X, xs, bf16, bf16)

DEQUANTIZE_TO(i8, i8)
DEQUANTIZE_TO(u8, u8)
DEQUANTIZE_TO(i16, i16)
DEQUANTIZE_TO(u16, u16)
DEQUANTIZE_TO(i32, i32)
DEQUANTIZE_TO(i4, i4)
DEQUANTIZE_TO(u4, u4)

/* From float8 (ONNX type T, 17..20) or float4e2m1 (23): its value. */
template <int T, typename Y>
__device__ __forceinline__ void dequantize_float(const u8 *x, const void *s, Y *y,
						 const cep_quant &p)
{
	CEP_FOR(i, p.n) {
		i64 k = quant_at(p, i);
		float d = T == 23 ? cep_f4_decode(x[i]) : cep_f8_decode(cep_f8_fmt_of(T), x[i]);

		st_f(y, i, __double2float_rn(__dmul_rn((double)d, cep_q_real(s, p.sdt, k))));
	}
}

#define DEQUANTIZE_FLOAT_KERNEL(T, xs, Y, ys)                                             \
	extern "C" __global__ void dequantize_##xs##_##ys(const u8 *x, const void *s,        \
							  const void *zp, Y *y, cep_quant p) \
	{                                                                                 \
		dequantize_float<T, Y>(x, s, y, p);                                       \
	}

#define DEQUANTIZE_FLOAT_TO(T, xs)                   \
	DEQUANTIZE_FLOAT_KERNEL(T, xs, float, f32)   \
	DEQUANTIZE_FLOAT_KERNEL(T, xs, f16, f16)     \
	DEQUANTIZE_FLOAT_KERNEL(T, xs, bf16, bf16)

DEQUANTIZE_FLOAT_TO(17, e4m3fn)
DEQUANTIZE_FLOAT_TO(18, e4m3fnuz)
DEQUANTIZE_FLOAT_TO(19, e5m2)
DEQUANTIZE_FLOAT_TO(20, e5m2fnuz)
DEQUANTIZE_FLOAT_TO(23, f4)

/* ---------------------------------------------------- DynamicQuantizeLinear */

/* Minima and maxima that pass a NaN over, as the host's comparisons do. */
struct q_min {
	template <typename T> __device__ static T f(T a, T b) { return fminf(a, b); }
};
struct q_max {
	template <typename T> __device__ static T f(T a, T b) { return fmaxf(a, b); }
};

/* One block: the range of x widened to include 0, then y_scale and
 * y_zero_point into ws[0] and ws[1] (the zero point as a float) and into
 * the outputs that are present. */
extern "C" __global__ void dynquant_range(const float *x, i64 n, float *ws, float *yscale,
					  u8 *yzp)
{
	float lo = 0.0f, hi = 0.0f;

	for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
		lo = fminf(lo, x[i]);
		hi = fmaxf(hi, x[i]);
	}
	lo = cep_block_reduce<q_min>(lo, 0.0f);
	hi = cep_block_reduce<q_max>(hi, 0.0f);
	if (threadIdx.x == 0) {
		float s = __fdiv_rn(hi == lo ? 1.0f : __fsub_rn(hi, lo), 255.0f);
		float z = rintf(fmaxf(0.0f, fminf(255.0f, __fsub_rn(0.0f, __fdiv_rn(lo, s)))));

		ws[0] = s;
		ws[1] = z;
		if (yscale != 0)
			*yscale = s;
		if (yzp != 0)
			*yzp = (u8)z;
	}
}

extern "C" __global__ void dynquant_apply(const float *x, const float *ws, u8 *y, i64 n)
{
	float s = ws[0];
	i64 z = (i64)ws[1];

	CEP_FOR(i, n)
		y[i] = (u8)cep_q_saturate((double)__fdiv_rn(x[i], s), z, 0, 255);
}
