/*
 * argmax.cu — ArgMax and ArgMin along one axis of an input seen as
 * (outer, n, inner), with the choices of the reference kernel
 * (kernels/cpu/argmax.c): a NaN beats everything, ties go to the first
 * element (or the last, select_last_index), floats compared as doubles and
 * integers as int64. Those rules order (value, index) pairs totally, so a
 * row's threads may each scan their share and combine pairwise.
 *
 * A contiguous row (inner 1) gets a block whose threads combine through
 * warp shuffles; otherwise a thread scans each column in order, as the
 * host does. Launcher: kernels/cuda/argmax.c. Kernels:
 * {argmax,argmin}_{rows,cols}_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_arg. */
struct cep_arg {
	i64 outer, n, inner;
	i32 last;                  /* select_last_index */
	i32 pad;
};

template <typename V> __device__ __forceinline__ bool arg_nan(V v) { return v != v; }

/* Whether (v, i) beats (b, j) for ArgMax (MAX) or ArgMin. */
template <bool MAX, typename V>
__device__ __forceinline__ bool arg_beats(V v, i64 i, V b, i64 j, bool last)
{
	bool nv = arg_nan(v), nb = arg_nan(b);

	if (nv != nb)
		return nv;
	if (nv || v == b)
		return last ? i > j : i < j;
	return MAX ? v > b : v < b;
}

template <typename T, typename V> __device__ __forceinline__ V arg_load(const T *x, i64 i)
{
	if (cep_is_float<T>::value)
		return (V)ld_f(x, i);
	return (V)ld_i(x, i);
}

/* Folds (v, i) into the best (best, bi) so far; index -1 is no element,
 * which loses to any. */
template <bool MAX, typename V>
__device__ __forceinline__ void arg_fold(V v, i64 i, V *best, i64 *bi, bool last)
{
	if (i >= 0 && (*bi < 0 || arg_beats<MAX>(v, i, *best, *bi, last))) {
		*best = v;
		*bi = i;
	}
}

/* One scan of n elements from base, step apart, by the threads first,
 * first + stride, ... of a row (one thread for a column). */
template <typename T, typename V, bool MAX>
__device__ __forceinline__ void arg_scan(const T *x, i64 base, i64 n, i64 step, int first,
					 int stride, bool last, V *best, i64 *bi)
{
	*best = 0;
	*bi = -1;
	for (i64 k = first; k < n; k += stride)
		arg_fold<MAX>(arg_load<T, V>(x, base + k * step), k, best, bi, last);
}

template <bool MAX, typename V>
__device__ __forceinline__ void arg_warp(V *best, i64 *bi, bool last)
{
	for (int o = 16; o > 0; o >>= 1) {
		V v = __shfl_xor_sync(0xffffffffu, *best, o);
		i64 i = __shfl_xor_sync(0xffffffffu, *bi, o);

		arg_fold<MAX>(v, i, best, bi, last);
	}
}

/* The block's winning index (valid in thread 0). */
template <bool MAX, typename V>
__device__ __forceinline__ i64 arg_block(V best, i64 bi, bool last)
{
	__shared__ V part_v[32];
	__shared__ i64 part_i[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	arg_warp<MAX>(&best, &bi, last);
	/* The previous row's thread 0 may still be reading. */
	__syncthreads();
	if (lane == 0) {
		part_v[warp] = best;
		part_i[warp] = bi;
	}
	__syncthreads();
	if (warp == 0) {
		bool have = lane < (int)(blockDim.x >> 5);

		best = have ? part_v[lane] : (V)0;
		bi = have ? part_i[lane] : -1;
		arg_warp<MAX>(&best, &bi, last);
	}
	return bi;
}

template <typename T, typename V, bool MAX>
__device__ __forceinline__ void arg_rows(const T *x, i64 *y, const cep_arg &p)
{
	for (i64 r = blockIdx.x; r < p.outer; r += gridDim.x) {
		V best;
		i64 bi;

		arg_scan<T, V, MAX>(x, r * p.n, p.n, 1, threadIdx.x, blockDim.x, p.last, &best, &bi);
		bi = arg_block<MAX>(best, bi, p.last);

		if (threadIdx.x == 0)
			y[r] = bi;
	}
}

template <typename T, typename V, bool MAX>
__device__ __forceinline__ void arg_cols(const T *x, i64 *y, const cep_arg &p)
{
	CEP_FOR(c, p.outer * p.inner) {
		i64 o = c / p.inner, j = c - o * p.inner, bi;
		V best;

		arg_scan<T, V, MAX>(x, o * p.n * p.inner + j, p.n, p.inner, 0, 1, p.last, &best, &bi);
		y[c] = bi;
	}
}

#define ARG_KERNELS(T, V, sfx)                                                          \
	extern "C" __global__ void argmax_rows_##sfx(const T *x, i64 *y, cep_arg p)     \
	{ arg_rows<T, V, true>(x, y, p); }                                              \
	extern "C" __global__ void argmax_cols_##sfx(const T *x, i64 *y, cep_arg p)     \
	{ arg_cols<T, V, true>(x, y, p); }                                              \
	extern "C" __global__ void argmin_rows_##sfx(const T *x, i64 *y, cep_arg p)     \
	{ arg_rows<T, V, false>(x, y, p); }                                             \
	extern "C" __global__ void argmin_cols_##sfx(const T *x, i64 *y, cep_arg p)     \
	{ arg_cols<T, V, false>(x, y, p); }

ARG_KERNELS(float, double, f32)
ARG_KERNELS(f16, double, f16)
ARG_KERNELS(bf16, double, bf16)
ARG_KERNELS(i64, i64, i64)
ARG_KERNELS(i32, i64, i32)
ARG_KERNELS(i8, i64, i8)
ARG_KERNELS(u8, i64, u8)
