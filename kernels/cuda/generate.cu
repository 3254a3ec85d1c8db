/*
 * generate.cu — operators that make a tensor from scalars:
 * ConstantOfShape (every element the one value of its attribute, moved as
 * a raw unit of its size: fill_<bytes>) and Range (start + i * delta:
 * range_<type>). Range computes as the reference kernel does
 * (kernels/cpu/generate.c): floats in double, rounded once to the type;
 * integers in wrapping 64-bit arithmetic. Its start, limit and delta are
 * read here on the device, so their values never need to be on the host;
 * a count other than the planned one (or a delta of 0) is latched into
 * the fault record and nothing is written. Launcher: kernels/cuda/
 * generate.c.
 */
#include "common.cuh"

template <typename T> __device__ __forceinline__ void fill(T *y, i64 n, T v)
{
	CEP_FOR(i, n)
		y[i] = v;
}

#define FILL_KERNEL(T, bytes)                                                  \
	extern "C" __global__ void fill_##bytes(T *y, i64 n, T v)              \
	{                                                                      \
		fill<T>(y, n, v);                                              \
	}

FILL_KERNEL(u8, 1)
FILL_KERNEL(u16, 2)
FILL_KERNEL(u32, 4)
FILL_KERNEL(u64, 8)

/* The count of the range, as kernels/cpu/generate.c works it out; -1 for
 * a delta of 0 or a count that is not finite. */
template <typename T> __device__ __forceinline__ i64 range_count(const T *s, const T *l, const T *d)
{
	if (cep_is_float<T>::value || cep_is_f64<T>::value) {
		double start = ld_d(s, 0), limit = ld_d(l, 0), delta = ld_d(d, 0), q;

		if (delta == 0.0)
			return -1;
		q = ceil((limit - start) / delta);
		if (q != q || q - q != 0.0)
			return -1;
		return q > 0.0 ? (q < 4611686018427387904.0 ? (i64)q : (i64)1 << 62) : 0;
	} else {
		i64 start = ld_i(s, 0), limit = ld_i(l, 0), delta = ld_i(d, 0);
		u64 span, mag;

		if (delta == 0)
			return -1;
		if (delta > 0) {
			span = limit > start ? (u64)limit - (u64)start : 0;
			mag = (u64)delta;
		} else {
			span = start > limit ? (u64)start - (u64)limit : 0;
			mag = (u64)0 - (u64)delta;
		}
		return (i64)(span / mag + (span % mag != 0));
	}
}

template <typename T>
__device__ __forceinline__ void range(const T *s, const T *l, const T *d, T *y, i64 n,
				      cep_fault *fault, u64 site)
{
	i64 want = range_count(s, l, d);

	if (want != n) {
		cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 0, want, n);
		return;
	}
	if (cep_is_f64<T>::value) {
		double start = ld_d(s, 0), delta = ld_d(d, 0);

		CEP_FOR(i, n)
			st_d(y, i, __dadd_rn(start, __dmul_rn((double)i, delta)));
	} else if (cep_is_float<T>::value) {
		double start = ld_f(s, 0), delta = ld_f(d, 0);

		CEP_FOR(i, n)
			st_f(y, i, (float)__dadd_rn(start, __dmul_rn((double)i, delta)));
	} else {
		u64 start = (u64)ld_i(s, 0), delta = (u64)ld_i(d, 0);

		CEP_FOR(i, n)
			st_i(y, i, (i64)(start + (u64)i * delta));
	}
}

#define RANGE_KERNEL(T, sfx)                                                          \
	extern "C" __global__ void range_##sfx(const T *s, const T *l, const T *d, T *y, \
					       i64 n, cep_fault *fault, u64 site)      \
	{                                                                             \
		range<T>(s, l, d, y, n, fault, site);                                 \
	}

RANGE_KERNEL(float, f32)
RANGE_KERNEL(f16, f16)
RANGE_KERNEL(bf16, bf16)
RANGE_KERNEL(double, f64)
RANGE_KERNEL(i16, i16)
RANGE_KERNEL(i32, i32)
RANGE_KERNEL(i64, i64)
