/*
 * cast.cu — Cast between every pair of stored types, with the reference
 * kernel's rules (kernels/cpu/cast.c, cpu_convert()): through double when
 * either side is float64; else from a float type through float (narrowing
 * rounds to nearest even; to an integer truncates, NaN gives 0, out of
 * range saturates, to int64 or from 2^63 up to uint64, and then wraps);
 * an integer to a float type rounds once from its own value; between
 * integer and bool types through int64 with wrapping; anything to bool is
 * "not zero"; the 4-bit types (int4, uint4, float4e2m1, a byte each) with
 * qtypes.cuh's loads and stores, those of the host's qtypes.h (a float
 * into int4 or uint4 truncated, 0 out of range; float4e2m1 rounded to
 * nearest even, saturating). Launcher: kernels/cuda/cast.c. Kernels:
 * cast_<from>_<to>, e.g. cast_f32_f16, cast_f16_i4.
 */
#include "common.cuh"
#include "qtypes.cuh"

template <typename S, typename D>
__device__ __forceinline__ void cast(const S *a, D *o, i64 n)
{
	CEP_FOR(i, n) {
		if (cep_is_f64<S>::value || cep_is_f64<D>::value)
			st_d(o, i, ld_d(a, i));
		else if (cep_is_float<S>::value || cep_is_float<D>::value)
			st_f(o, i, ld_f(a, i));
		else
			st_i(o, i, ld_i(a, i));
	}
}

#define CAST_ONE(S, ss, D, ds)                                                   \
	extern "C" __global__ void cast_##ss##_##ds(const S *a, D *o, i64 n)     \
	{                                                                        \
		cast<S, D>(a, o, n);                                             \
	}

#define CAST_FROM(S, ss)                  \
	CAST_ONE(S, ss, float, f32)       \
	CAST_ONE(S, ss, f16, f16)         \
	CAST_ONE(S, ss, bf16, bf16)       \
	CAST_ONE(S, ss, double, f64)      \
	CAST_ONE(S, ss, i64, i64)         \
	CAST_ONE(S, ss, i32, i32)         \
	CAST_ONE(S, ss, i16, i16)         \
	CAST_ONE(S, ss, i8, i8)           \
	CAST_ONE(S, ss, u64, u64)         \
	CAST_ONE(S, ss, u32, u32)         \
	CAST_ONE(S, ss, u16, u16)         \
	CAST_ONE(S, ss, u8, u8)           \
	CAST_ONE(S, ss, b8, bool)         \
	CAST_ONE(S, ss, i4, i4)           \
	CAST_ONE(S, ss, u4, u4)           \
	CAST_ONE(S, ss, f4, f4)

CAST_FROM(float, f32)
CAST_FROM(f16, f16)
CAST_FROM(bf16, bf16)
CAST_FROM(double, f64)
CAST_FROM(i64, i64)
CAST_FROM(i32, i32)
CAST_FROM(i16, i16)
CAST_FROM(i8, i8)
CAST_FROM(u64, u64)
CAST_FROM(u32, u32)
CAST_FROM(u16, u16)
CAST_FROM(u8, u8)
CAST_FROM(b8, bool)
CAST_FROM(i4, i4)
CAST_FROM(u4, u4)
CAST_FROM(f4, f4)
