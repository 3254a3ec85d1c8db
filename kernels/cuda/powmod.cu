/*
 * powmod.cu — Pow and Mod with numpy broadcasting, the device side of
 * kernels/cpu/powmod.c. Pow's output has the base's type; a float base is
 * raised in double and rounded once, an integer base with an integer
 * exponent exactly by squaring (wrapping at the base's width), with a
 * float exponent through double and truncated. Mod's fmod=1 is C's fmod,
 * fmod=0 the floor's remainder (the divisor's sign); an integer divided
 * by 0 or -1 gives 0. Launcher: kernels/cuda/powmod.c. Kernels:
 * pow_<base>_<exponent> (pow_f32_i64) and mod_<type>.
 */
#include "common.cuh"

/* Double to int64 toward zero, as the host's cpu_f2i(): NaN gives 0, out
 * of range saturates. */
__device__ __forceinline__ i64 pm_f2i(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return CEP_INT64_MAX;
	if (v <= -9223372036854775808.0)
		return CEP_INT64_MIN;
	return (i64)v;
}

/* b^e by squaring in unsigned arithmetic, which wraps; a negative power
 * truncates to 0 unless the base is 1 or -1. */
__device__ __forceinline__ i64 pm_ipow(i64 b, i64 e)
{
	u64 r = 1, p = (u64)b;

	if (e < 0) {
		if (b == 1)
			return 1;
		if (b == -1)
			return e & 1 ? -1 : 1;
		return 0;
	}
	while (e) {
		if (e & 1)
			r *= p;
		p *= p;
		e >>= 1;
	}
	return (i64)r;
}

/* x^e in double. CUDA's pow() is within 2 units in the last place where
 * the host's is correctly rounded; a square, the common exponent (the
 * host squares float32 outright), is a product, which rounds correctly
 * and so gives the host's result bit for bit. */
__device__ __forceinline__ double pm_pow(double x, double e)
{
	return e == 2.0 ? x * x : pow(x, e);
}

template <typename TA, typename TB>
__device__ __forceinline__ void power(const TA *a, const TB *b, TA *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		double e = cep_is_float<TB>::value ? (double)ld_f(b, ib) : (double)ld_i(b, ib);

		if (cep_is_float<TA>::value)
			st_f(o, i, (float)pm_pow((double)ld_f(a, ia), e));
		else if (cep_is_float<TB>::value)
			st_i(o, i, pm_f2i(pm_pow((double)ld_i(a, ia), e)));
		else
			st_i(o, i, pm_ipow(ld_i(a, ia), ld_i(b, ib)));
	}
}

#define POW_KERNEL(TA, sa, TB, sb)                                               \
	extern "C" __global__ void pow_##sa##_##sb(const TA *a, const TB *b, TA *o, \
						   cep_bcast p)                   \
	{                                                                        \
		power<TA, TB>(a, b, o, p);                                       \
	}

#define POW_EXPONENTS(TA, sa)            \
	POW_KERNEL(TA, sa, float, f32)   \
	POW_KERNEL(TA, sa, f16, f16)     \
	POW_KERNEL(TA, sa, bf16, bf16)   \
	POW_KERNEL(TA, sa, i64, i64)     \
	POW_KERNEL(TA, sa, i32, i32)     \
	POW_KERNEL(TA, sa, i8, i8)       \
	POW_KERNEL(TA, sa, u8, u8)

POW_EXPONENTS(float, f32)
POW_EXPONENTS(f16, f16)
POW_EXPONENTS(bf16, bf16)
POW_EXPONENTS(i64, i64)
POW_EXPONENTS(i32, i32)

/* -------------------------------------------------------------------- Mod */

/* The remainder with the divisor's sign; a zero takes the divisor's sign
 * too, as the host's mod_floor_f() gives. */
__device__ __forceinline__ float mod_floor_f(float a, float b)
{
	float r = fmodf(a, b);

	if (r != 0.0f && (r < 0.0f) != (b < 0.0f))
		r += b;
	else if (r == 0.0f)
		r = copysignf(0.0f, b);
	return r;
}

__device__ __forceinline__ i64 mod_i(i64 a, i64 b, int trunc)
{
	i64 r;

	if (b == 0 || b == -1)
		return 0;
	r = a % b;
	if (!trunc && r != 0 && (r < 0) != (b < 0))
		r += b;
	return r;
}

template <typename T>
__device__ __forceinline__ void modulo(const T *a, const T *b, T *o, const cep_bcast &p,
				       int trunc)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		if (cep_is_float<T>::value) {
			float x = ld_f(a, ia), y = ld_f(b, ib);

			st_f(o, i, trunc ? fmodf(x, y) : mod_floor_f(x, y));
		} else {
			st_i(o, i, mod_i(ld_i(a, ia), ld_i(b, ib), trunc));
		}
	}
}

#define MOD_KERNEL(T, sfx)                                                       \
	extern "C" __global__ void mod_##sfx(const T *a, const T *b, T *o,        \
					     cep_bcast p, int trunc)             \
	{                                                                        \
		modulo<T>(a, b, o, p, trunc);                                    \
	}

MOD_KERNEL(float, f32)
MOD_KERNEL(f16, f16)
MOD_KERNEL(bf16, bf16)
MOD_KERNEL(i64, i64)
MOD_KERNEL(i32, i32)
MOD_KERNEL(i8, i8)
MOD_KERNEL(u8, u8)
