/*
 * cast_f8.cu — Cast and CastLike to and from the four float8 types, with
 * the reference kernel's rules (kernels/cpu/cpu.h, cpu_convert()): a
 * value becomes float8 through float32 (float64 rounded to odd on the
 * way, integers through double as the host has it), then f8.cuh's
 * rounding with `saturate`; a float8 value is exact in float32 and is
 * stored from there as a float32 would be (NaN as the host's quiet NaN).
 * Its own source, apart from cast.cu, so that a model without float8
 * never waits for its compile. Launcher: kernels/cuda/cast.c. Kernels:
 * cast_<from>_<to>(a, o, n, saturate), e.g. cast_f16_e4m3fn; saturate
 * matters only to a float8 target.
 */
#include "common.cuh"
#include "f8.cuh"

/* Storage of a float8 element of format F (a CEP_F8_*). */
template <int F> struct f8 { u8 bits; };

/* A source element as the float32 that is rounded to float8. */
template <typename S> __device__ __forceinline__ float f8_src(const S *a, i64 i)
{
	if (cep_is_float<S>::value)
		return ld_f(a, i);
	if (cep_is_f64<S>::value)
		return cep_f64_to_f32_odd(ld_d(a, i));
	return (float)ld_d(a, i); /* integers and bool: through double, once each */
}

template <int F> __device__ __forceinline__ float f8_src(const f8<F> *a, i64 i)
{
	return cep_f8_decode(cep_f8_fmt_of(F), a[i].bits);
}

/* Stores v, a float8 value as a float32, into a target that is no float8. */
template <typename D> __device__ __forceinline__ void f8_dst(D *o, i64 i, float v)
{
	st_f(o, i, v);
}

__device__ __forceinline__ void f8_dst(double *o, i64 i, float v)
{
	o[i] = v != v ? __longlong_as_double(0x7ff8000000000000ll) : (double)v;
}

template <typename S, int F>
__device__ __forceinline__ void cast_to_f8(const S *a, f8<F> *o, i64 n, int saturate)
{
	CEP_FOR(i, n) {
		o[i].bits = cep_f8_encode(cep_f8_fmt_of(F), f8_src(a, i), saturate);
	}
}

template <int F, typename D>
__device__ __forceinline__ void cast_from_f8(const f8<F> *a, D *o, i64 n)
{
	CEP_FOR(i, n) {
		f8_dst(o, i, f8_src(a, i));
	}
}

#define E4M3FN f8<CEP_F8_E4M3FN>
#define E4M3FNUZ f8<CEP_F8_E4M3FNUZ>
#define E5M2 f8<CEP_F8_E5M2>
#define E5M2FNUZ f8<CEP_F8_E5M2FNUZ>

#define CAST_TO(S, ss, D, ds)                                                              \
	extern "C" __global__ void cast_##ss##_##ds(const S *a, D *o, i64 n, i32 saturate) \
	{                                                                                  \
		cast_to_f8(a, o, n, saturate);                                             \
	}

#define CAST_FROM(S, ss, D, ds)                                                            \
	extern "C" __global__ void cast_##ss##_##ds(const S *a, D *o, i64 n, i32 saturate) \
	{                                                                                  \
		(void)saturate;                                                            \
		cast_from_f8(a, o, n);                                                     \
	}

/* Every type to and from float8 format D (ds its suffix). */
#define CAST_F8(D, ds)                         \
	CAST_TO(float, f32, D, ds)             \
	CAST_TO(f16, f16, D, ds)               \
	CAST_TO(bf16, bf16, D, ds)             \
	CAST_TO(double, f64, D, ds)            \
	CAST_TO(i64, i64, D, ds)               \
	CAST_TO(i32, i32, D, ds)               \
	CAST_TO(i16, i16, D, ds)               \
	CAST_TO(i8, i8, D, ds)                 \
	CAST_TO(u64, u64, D, ds)               \
	CAST_TO(u32, u32, D, ds)               \
	CAST_TO(u16, u16, D, ds)               \
	CAST_TO(u8, u8, D, ds)                 \
	CAST_TO(b8, bool, D, ds)               \
	CAST_FROM(D, ds, float, f32)           \
	CAST_FROM(D, ds, f16, f16)             \
	CAST_FROM(D, ds, bf16, bf16)           \
	CAST_FROM(D, ds, double, f64)          \
	CAST_FROM(D, ds, i64, i64)             \
	CAST_FROM(D, ds, i32, i32)             \
	CAST_FROM(D, ds, i16, i16)             \
	CAST_FROM(D, ds, i8, i8)               \
	CAST_FROM(D, ds, u64, u64)             \
	CAST_FROM(D, ds, u32, u32)             \
	CAST_FROM(D, ds, u16, u16)             \
	CAST_FROM(D, ds, u8, u8)               \
	CAST_FROM(D, ds, b8, bool)

CAST_F8(E4M3FN, e4m3fn)
CAST_F8(E4M3FNUZ, e4m3fnuz)
CAST_F8(E5M2, e5m2)
CAST_F8(E5M2FNUZ, e5m2fnuz)

/* Between two float8 formats: decoded exactly, then rounded. */
#define CAST_F8_F8(S, ss)                 \
	CAST_TO(S, ss, E4M3FN, e4m3fn)     \
	CAST_TO(S, ss, E4M3FNUZ, e4m3fnuz) \
	CAST_TO(S, ss, E5M2, e5m2)         \
	CAST_TO(S, ss, E5M2FNUZ, e5m2fnuz)

CAST_F8_F8(E4M3FN, e4m3fn)
CAST_F8_F8(E4M3FNUZ, e4m3fnuz)
CAST_F8_F8(E5M2, e5m2)
CAST_F8_F8(E5M2FNUZ, e5m2fnuz)
