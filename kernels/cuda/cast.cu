/*
 * cast.cu — Cast between every pair of stored types, with the reference
 * kernel's rules (kernels/cpu/cast.c): from a float type through float
 * (narrowing rounds to nearest even; to an integer truncates, NaN gives 0,
 * out of range saturates to int64 and then wraps); from an integer or bool
 * through int64; anything to bool is "not zero". Launcher:
 * kernels/cuda/cast.c. Kernels: cast_<from>_<to>, e.g. cast_f32_f16.
 */
#include "common.cuh"

template <typename S, typename D>
__device__ __forceinline__ void cast(const S *a, D *o, i64 n)
{
	CEP_FOR(i, n) {
		if (cep_is_float<S>::value)
			st_f(o, i, ld_f(a, i));
		else if (cep_is_float<D>::value)
			st_f(o, i, (float)ld_i(a, i));
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
	CAST_ONE(S, ss, i64, i64)         \
	CAST_ONE(S, ss, i32, i32)         \
	CAST_ONE(S, ss, i8, i8)           \
	CAST_ONE(S, ss, u8, u8)           \
	CAST_ONE(S, ss, b8, bool)

CAST_FROM(float, f32)
CAST_FROM(f16, f16)
CAST_FROM(bf16, bf16)
CAST_FROM(i64, i64)
CAST_FROM(i32, i32)
CAST_FROM(i8, i8)
CAST_FROM(u8, u8)
CAST_FROM(b8, bool)
