/*
 * softmax.cu — Softmax and LogSoftmax along one axis of an input seen as
 * (outer, n, inner) blocks, with the arithmetic of the reference kernels
 * (kernels/cpu/softmax.c, logsoftmax.c) so results agree to the last bits
 * of exp(): Softmax takes a float maximum that passes over NaN, sums
 * expf(v - max) in double and divides in float; LogSoftmax takes a double
 * maximum that a NaN wins, sums expf((float)(v - max)) in double and
 * subtracts max + log(sum) in double.
 *
 * A contiguous row (inner 1) gets a block, its threads striding along it
 * and combining through warp shuffles; otherwise each thread walks one
 * column of n elements, inner apart, so neighbouring threads read
 * neighbouring elements. Contiguous rows of at most 1024 elements, whole
 * 16-byte vectors, get a warp instead, the row held in registers (read
 * once, elem.cuh's cep_row_load) and combined by shuffles, with the same
 * arithmetic. Launcher: kernels/cuda/softmax.c. Kernels:
 * {softmax,logsoftmax}_{rows,cols}_<type>,
 * {softmax,logsoftmax}_warp_<type>_<NV>.
 */
#include "blockred.cuh"
#include "elem.cuh"

/* Twin: struct cuda_softmax. */
struct cep_softmax {
	i64 outer, n, inner;
};

/* One normalisation of n elements from base, step apart, by the threads
 * first, first + stride, ... of the row (one thread for a column). */
template <typename T, bool LOG, bool BLOCK>
__device__ __forceinline__ void softmax_one(const T *x, T *y, i64 base, i64 n, i64 step,
					    int first, int stride)
{
	if (LOG) {
		double mx = -CEP_INF_D, sum = 0.0, lse;

		for (i64 k = first; k < n; k += stride)
			mx = cep_max_nan::f(mx, (double)ld_f(x, base + k * step));
		if (BLOCK)
			mx = cep_block_reduce<cep_max_nan>(mx, -CEP_INF_D);
		for (i64 k = first; k < n; k += stride)
			sum += expf((float)((double)ld_f(x, base + k * step) - mx));
		if (BLOCK)
			sum = cep_block_reduce<cep_add>(sum, 0.0);
		lse = log(sum);
		for (i64 k = first; k < n; k += stride) {
			i64 at = base + k * step;

			st_f(y, at, (float)((double)ld_f(x, at) - mx - lse));
		}
	} else {
		float mx = -CEP_INF_F;
		double sum = 0.0;

		for (i64 k = first; k < n; k += stride)
			mx = cep_max_skip::f(mx, ld_f(x, base + k * step));
		if (BLOCK)
			mx = cep_block_reduce<cep_max_skip>(mx, -CEP_INF_F);
		for (i64 k = first; k < n; k += stride)
			sum += expf(ld_f(x, base + k * step) - mx);
		if (BLOCK)
			sum = cep_block_reduce<cep_add>(sum, 0.0);
		for (i64 k = first; k < n; k += stride) {
			i64 at = base + k * step;

			st_f(y, at, expf(ld_f(x, at) - mx) / (float)sum);
		}
	}
}

/* inner == 1: a block per row. */
template <typename T, bool LOG>
__device__ __forceinline__ void softmax_rows(const T *x, T *y, const cep_softmax &p)
{
	for (i64 r = blockIdx.x; r < p.outer; r += gridDim.x)
		softmax_one<T, LOG, true>(x, y, r * p.n, p.n, 1, threadIdx.x, blockDim.x);
}

/* inner > 1: a thread per column. */
template <typename T, bool LOG>
__device__ __forceinline__ void softmax_cols(const T *x, T *y, const cep_softmax &p)
{
	CEP_FOR(c, p.outer * p.inner) {
		i64 o = c / p.inner, j = c - o * p.inner;

		softmax_one<T, LOG, false>(x, y, o * p.n * p.inner + j, p.n, p.inner, 0, 1);
	}
}

/* inner == 1, n <= 32 * V * NV: a warp per row. */
template <typename T, bool LOG, int NV>
__device__ __forceinline__ void softmax_warp(const T *x, T *y, const cep_softmax &p)
{
	const int V = 16 / sizeof(T);
	int lane = threadIdx.x & 31;
	i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	i64 warps = ((i64)gridDim.x * blockDim.x) >> 5;
	bool vec = cep_vec_aligned<T, V>(x) && cep_vec_aligned<T, V>(y);

	for (i64 r = warp; r < p.outer; r += warps) {
		float v[NV][V];
		double sum = 0.0;

		/* Padding reads as -inf: neither maximum passes it. */
		cep_row_load<T, V, NV>(x + r * p.n, p.n, vec, v, -CEP_INF_F);
		if (LOG) {
			double mx = -CEP_INF_D, lse;

#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					mx = cep_max_nan::f(mx, (double)v[k][e]);
			mx = cep_warp_reduce<cep_max_nan>(mx);
#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					if (((i64)k * 32 + lane) * V < p.n)
						sum += expf((float)((double)v[k][e] - mx));
			sum = cep_warp_reduce<cep_add>(sum);
			lse = log(sum);
#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					v[k][e] = (float)((double)v[k][e] - mx - lse);
		} else {
			float mx = -CEP_INF_F;

#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					mx = cep_max_skip::f(mx, v[k][e]);
			mx = cep_warp_reduce<cep_max_skip>(mx);
#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					if (((i64)k * 32 + lane) * V < p.n)
						sum += expf(v[k][e] - mx);
			sum = cep_warp_reduce<cep_add>(sum);
#pragma unroll
			for (int k = 0; k < NV; k++)
#pragma unroll
				for (int e = 0; e < V; e++)
					v[k][e] = expf(v[k][e] - mx) / (float)sum;
		}
		cep_row_store<T, V, NV>(y + r * p.n, p.n, vec, v);
	}
}

#define SOFTMAX_WARP_KERNELS(T, sfx, NV)                                                       \
	extern "C" __global__ void softmax_warp_##sfx##_##NV(const T *x, T *y, cep_softmax p)    \
	{ softmax_warp<T, false, NV>(x, y, p); }                                             \
	extern "C" __global__ void logsoftmax_warp_##sfx##_##NV(const T *x, T *y, cep_softmax p) \
	{ softmax_warp<T, true, NV>(x, y, p); }

#define SOFTMAX_KERNELS(T, sfx)                                                       \
	extern "C" __global__ void softmax_rows_##sfx(const T *x, T *y, cep_softmax p)    \
	{ softmax_rows<T, false>(x, y, p); }                                          \
	extern "C" __global__ void softmax_cols_##sfx(const T *x, T *y, cep_softmax p)    \
	{ softmax_cols<T, false>(x, y, p); }                                          \
	extern "C" __global__ void logsoftmax_rows_##sfx(const T *x, T *y, cep_softmax p) \
	{ softmax_rows<T, true>(x, y, p); }                                           \
	extern "C" __global__ void logsoftmax_cols_##sfx(const T *x, T *y, cep_softmax p) \
	{ softmax_cols<T, true>(x, y, p); }

SOFTMAX_KERNELS(float, f32)
SOFTMAX_KERNELS(f16, f16)
SOFTMAX_KERNELS(bf16, bf16)
/* Up to 1024 elements: NV vectors of 4 floats or 8 halves per lane. */
SOFTMAX_WARP_KERNELS(float, f32, 1)
SOFTMAX_WARP_KERNELS(float, f32, 2)
SOFTMAX_WARP_KERNELS(float, f32, 4)
SOFTMAX_WARP_KERNELS(float, f32, 8)
SOFTMAX_WARP_KERNELS(f16, f16, 1)
SOFTMAX_WARP_KERNELS(f16, f16, 2)
SOFTMAX_WARP_KERNELS(f16, f16, 4)
SOFTMAX_WARP_KERNELS(bf16, bf16, 1)
SOFTMAX_WARP_KERNELS(bf16, bf16, 2)
SOFTMAX_WARP_KERNELS(bf16, bf16, 4)
