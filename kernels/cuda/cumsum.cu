/*
 * cumsum.cu — CumSum and CumProd along the axis an int32 or int64 scalar
 * input names, read here on the device: one out of range is latched into
 * the fault record (CEP_FAULT_AXIS) and nothing is written. Each thread
 * walks one column (the elements that differ only along the axis) in
 * order, as the reference kernel does (kernels/cpu/cumsum.c): floats
 * accumulate in double and are rounded once per element (float64 not at
 * all), integers in
 * wrapping 64-bit arithmetic, so the results match it bit for bit.
 * Launcher: kernels/cuda/cumsum.c. Kernels: {cumsum,cumprod}_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_scan. */
struct cep_scan {
	i64 n;                      /* elements */
	i32 rank;                   /* >= 1 */
	i32 axis_wide;              /* the axis input is int64 (else int32) */
	i32 exclusive;
	i32 reverse;
	i64 dims[CEP_MAX_RANK];     /* (rank) */
};

template <typename T, bool PROD>
__device__ __forceinline__ void scan(const T *x, const void *axis_in, T *y, const cep_scan &p,
				     cep_fault *fault, u64 site)
{
	i64 a = p.axis_wide ? *(const i64 *)axis_in : (i64)*(const i32 *)axis_in;
	i64 outer = 1, len, inner = 1, cols;

	if (a < -(i64)p.rank || a >= p.rank) {
		if (blockIdx.x == 0 && threadIdx.x == 0)
			cep_fault_latch_kind(fault, CEP_FAULT_AXIS, site, 0, a, p.rank);
		return;
	}
	if (a < 0)
		a += p.rank;
	for (int d = 0; d < p.rank; d++) {
		if (d < a)
			outer *= p.dims[d];
		else if (d > a)
			inner *= p.dims[d];
	}
	len = p.dims[a];
	cols = outer * inner;
	CEP_FOR(c, cols) {
		i64 o = c / inner, j = c - o * inner, base = o * len * inner + j;
		double accf = PROD ? 1.0 : 0.0;
		u64 acci = PROD ? 1 : 0;

		for (i64 k = 0; k < len; k++) {
			i64 at = base + (p.reverse ? len - 1 - k : k) * inner;

			if (cep_is_f64<T>::value) {
				double v = ld_d(x, at);

				if (p.exclusive)
					st_d(y, at, accf);
				accf = PROD ? __dmul_rn(accf, v) : __dadd_rn(accf, v);
				if (!p.exclusive)
					st_d(y, at, accf);
			} else if (cep_is_float<T>::value) {
				double v = ld_f(x, at);

				if (p.exclusive)
					st_f(y, at, (float)accf);
				accf = PROD ? __dmul_rn(accf, v) : __dadd_rn(accf, v);
				if (!p.exclusive)
					st_f(y, at, (float)accf);
			} else {
				u64 v = (u64)ld_i(x, at);

				if (p.exclusive)
					st_i(y, at, (i64)acci);
				acci = PROD ? acci * v : acci + v;
				if (!p.exclusive)
					st_i(y, at, (i64)acci);
			}
		}
	}
}

#define SCAN_KERNELS(T, sfx)                                                              \
	extern "C" __global__ void cumsum_##sfx(const T *x, const void *axis, T *y,       \
						cep_scan p, cep_fault *fault, u64 site)   \
	{ scan<T, false>(x, axis, y, p, fault, site); }                                   \
	extern "C" __global__ void cumprod_##sfx(const T *x, const void *axis, T *y,      \
						 cep_scan p, cep_fault *fault, u64 site)  \
	{ scan<T, true>(x, axis, y, p, fault, site); }

SCAN_KERNELS(float, f32)
SCAN_KERNELS(f16, f16)
SCAN_KERNELS(bf16, bf16)
SCAN_KERNELS(i64, i64)
SCAN_KERNELS(i32, i32)
/* Few enough to share the source with the first types. */
SCAN_KERNELS(double, f64)
SCAN_KERNELS(u64, u64)
SCAN_KERNELS(u32, u32)
