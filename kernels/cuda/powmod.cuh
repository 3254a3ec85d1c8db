/*
 * powmod.cuh — Pow and Mod with numpy broadcasting, the device side of
 * kernels/cpu/powmod.c, as templates and the macros that make their
 * kernels (powmod.cu has those of the first types, powmod_wide.cu those
 * with a float64, int16, uint16, uint32 or uint64 operand). Pow's output has the base's type; a float base is
 * raised in double and rounded once (float64 computed in double), an integer base with an integer
 * exponent exactly by squaring (wrapping at the base's width), with a
 * float exponent through double and truncated. Mod's fmod=1 is C's fmod,
 * fmod=0 the floor's remainder (the divisor's sign); an integer divided
 * by 0 or -1 gives 0 (uint64 divides as unsigned). Launcher: kernels/cuda/powmod.c. Kernels:
 * pow_<base>_<exponent> (pow_f32_i64) and mod_<type>.
 */
#ifndef CEP_CUDA_POWMOD_CUH
#define CEP_CUDA_POWMOD_CUH

#include "common.cuh"

/* b^e by squaring in unsigned arithmetic, which wraps; a negative power
 * truncates to 0 unless the base is 1 or -1. A uint64 exponent (e_u64)
 * is its bits, never negative. */
__device__ __forceinline__ i64 pm_ipow(i64 b, i64 e, bool e_u64)
{
	u64 r = 1, p = (u64)b, ue = (u64)e;

	if (e < 0 && !e_u64) {
		if (b == 1)
			return 1;
		if (b == -1)
			return e & 1 ? -1 : 1;
		return 0;
	}
	while (ue) {
		if (ue & 1)
			r *= p;
		p *= p;
		ue >>= 1;
	}
	return (i64)r;
}

/* x^e in double. CUDA's pow() is within 2 units in the last place where
 * the host's is correctly rounded, and not always exact where the host's
 * is: on the H200, 3^1.0 came out 2.9999999999999996, which an integer
 * output truncates to 2. So an integer exponent of at most 64 powers by
 * squaring, which is exact wherever the result is (an integer base's
 * powers below 2^53, and the squares of the common x^2) and otherwise
 * within a few units in the last place; other exponents take pow(). */
__device__ __forceinline__ double pm_pow(double x, double e)
{
	if (e == trunc(e) && fabs(e) <= 64.0) {
		double r = 1.0, p = x;

		for (long long k = (long long)fabs(e); k != 0; k >>= 1) {
			if (k & 1)
				r *= p;
			p *= p;
		}
		return e < 0.0 ? 1.0 / r : r;
	}
	return pow(x, e);
}

template <typename TA, typename TB>
__device__ __forceinline__ void power(const TA *a, const TB *b, TA *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		double e = ld_d(b, ib); /* exact but for integers past 2^53 */

		if (cep_is_f64<TA>::value)
			st_d(o, i, pm_pow(ld_d(a, ia), e));
		else if (cep_is_float<TA>::value)
			st_f(o, i, (float)pm_pow((double)ld_f(a, ia), e));
		else if (cep_is_float<TB>::value || cep_is_f64<TB>::value)
			st_i(o, i, cep_d2i(pm_pow((double)ld_i(a, ia), e)));
		else
			st_i(o, i, pm_ipow(ld_i(a, ia), ld_i(b, ib), cep_is_u64<TB>::value));
	}
}

#define POW_KERNEL(TA, sa, TB, sb)                                               \
	extern "C" __global__ void pow_##sa##_##sb(const TA *a, const TB *b, TA *o, \
						   cep_bcast p)                   \
	{                                                                        \
		power<TA, TB>(a, b, o, p);                                       \
	}

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

__device__ __forceinline__ double mod_floor_d(double a, double b)
{
	double r = fmod(a, b);

	if (r != 0.0 && (r < 0.0) != (b < 0.0))
		r += b;
	else if (r == 0.0)
		r = copysign(0.0, b);
	return r;
}

/* a and b as ld_i() gives elements of T: uint64 divides as unsigned,
 * where both remainders agree. */
template <typename T> __device__ __forceinline__ i64 mod_i(i64 a, i64 b, int trunc)
{
	i64 r;

	if (cep_is_u64<T>::value)
		return b == 0 ? 0 : (i64)((u64)a % (u64)b);
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
		if (cep_is_f64<T>::value) {
			double x = ld_d(a, ia), y = ld_d(b, ib);

			st_d(o, i, trunc ? fmod(x, y) : mod_floor_d(x, y));
		} else if (cep_is_float<T>::value) {
			float x = ld_f(a, ia), y = ld_f(b, ib);

			st_f(o, i, trunc ? fmodf(x, y) : mod_floor_f(x, y));
		} else {
			st_i(o, i, mod_i<T>(ld_i(a, ia), ld_i(b, ib), trunc));
		}
	}
}

#define MOD_KERNEL(T, sfx)                                                       \
	extern "C" __global__ void mod_##sfx(const T *a, const T *b, T *o,        \
					     cep_bcast p, int trunc)             \
	{                                                                        \
		modulo<T>(a, b, o, p, trunc);                                    \
	}

#endif
