/*
 * normalize.cu — InstanceNormalization and GroupNormalization,
 * RMSNormalization and LpNormalization, with the arithmetic of the
 * reference kernels (kernels/cpu/normalize.c): statistics and norms in
 * double, the affine step in double rounded step by step as the host
 * rounds it (no fused multiply-adds), each result rounded once to its
 * type.
 *
 * groupnorm_<type>: a block per row (a sample's group of channels, or one
 * channel for InstanceNormalization, contiguous): the threads stride along
 * the row and combine the sum, then the sum of squared deviations, through
 * warp shuffles (blockred.cuh), then scale and shift per channel or group.
 *
 * rmsnorm_<type>: a block per row of X split at axis, the sum of squares
 * combined the same way; Scale is read by column, as one value, or through
 * strides over X's dims.
 *
 * lpnorm_rows_<type>: a block per contiguous column (axis last);
 * lpnorm_cols_<type>: a thread per strided column, neighbouring threads
 * reading neighbouring elements.
 *
 * Launcher: kernels/cuda/normalize.c.
 */
#include "blockred.cuh"

/* ------------------------------------------ Instance/GroupNormalization */

/* Twin: struct cuda_groupnorm. */
struct cep_groupnorm {
	i64 rows, cols;        /* N * groups rows of per_group * inner */
	i64 groups, per_group, inner;
	double eps;
	i32 by_group;          /* scale and bias per group, else per channel */
	i32 pad;
};

template <typename T>
__device__ __forceinline__ void groupnorm(const T *x, const T *s, const T *b, T *y,
					  const cep_groupnorm &p)
{
	for (i64 r = blockIdx.x; r < p.rows; r += gridDim.x) {
		i64 base = r * p.cols, g = r % p.groups;
		double sum = 0.0, sq = 0.0, m, inv;

		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x)
			sum += (double)ld_f(x, base + j);
		sum = cep_block_reduce<cep_add>(sum, 0.0);
		m = sum / (double)p.cols;
		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			double d = (double)ld_f(x, base + j) - m;

			sq = __dadd_rn(sq, __dmul_rn(d, d));
		}
		sq = cep_block_reduce<cep_add>(sq, 0.0);
		inv = 1.0 / sqrt(sq / (double)p.cols + p.eps);
		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			i64 k = p.by_group ? g : g * p.per_group + j / p.inner;
			double v = __dmul_rn(__dmul_rn((double)ld_f(x, base + j) - m, inv),
					     (double)ld_f(s, k));

			st_f(y, base + j, (float)__dadd_rn(v, (double)ld_f(b, k)));
		}
	}
}

#define GROUPNORM_KERNEL(T, sfx)                                                        \
	extern "C" __global__ void groupnorm_##sfx(const T *x, const T *s, const T *b, T *y, \
						   cep_groupnorm p)                       \
	{                                                                               \
		groupnorm<T>(x, s, b, y, p);                                            \
	}

GROUPNORM_KERNEL(float, f32)
GROUPNORM_KERNEL(f16, f16)
GROUPNORM_KERNEL(bf16, bf16)

/* ---------------------------------------------------------- RMSNormalization */

enum { RMS_ONE, RMS_COLUMN, RMS_BCAST }; /* enum cpu_rms_mode */

/* Twin: struct cuda_rms (and struct cpu_rms, kernels/cpu/normalize.h). */
struct cep_rms {
	i64 rows, cols;
	double eps;
	i32 rank, mode;              /* mode: RMS_* */
	i64 dims[CEP_MAX_RANK];      /* (rank) X's */
	i64 stride[CEP_MAX_RANK];    /* (rank) Scale's, 0 where it broadcasts */
};

/* The element of Scale that element e of X is multiplied by. */
__device__ __forceinline__ i64 rms_scale_at(const cep_rms &p, i64 e)
{
	i64 off = 0;

	if (p.mode == RMS_ONE)
		return 0;
	if (p.mode == RMS_COLUMN)
		return e % p.cols;
	for (int d = p.rank - 1; d >= 0; d--) {
		i64 q = e / p.dims[d];

		off += (e - q * p.dims[d]) * p.stride[d];
		e = q;
	}
	return off;
}

template <typename T>
__device__ __forceinline__ void rmsnorm(const T *x, const T *s, T *y, const cep_rms &p)
{
	for (i64 r = blockIdx.x; r < p.rows; r += gridDim.x) {
		i64 base = r * p.cols;
		double sq = 0.0, inv;

		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			double v = (double)ld_f(x, base + j);

			sq = __dadd_rn(sq, __dmul_rn(v, v));
		}
		sq = cep_block_reduce<cep_add>(sq, 0.0);
		inv = 1.0 / sqrt(sq / (double)p.cols + p.eps);
		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			i64 e = base + j;

			st_f(y, e, (float)__dmul_rn(__dmul_rn((double)ld_f(x, e), inv),
						    (double)ld_f(s, rms_scale_at(p, e))));
		}
	}
}

#define RMSNORM_KERNEL(T, sfx)                                                              \
	extern "C" __global__ void rmsnorm_##sfx(const T *x, const T *s, T *y, cep_rms p) \
	{                                                                                   \
		rmsnorm<T>(x, s, y, p);                                                     \
	}

RMSNORM_KERNEL(float, f32)
RMSNORM_KERNEL(f16, f16)
RMSNORM_KERNEL(bf16, bf16)

/* ---------------------------------------------------------- LpNormalization */

/* Twin: struct cuda_lpnorm. */
struct cep_lpnorm {
	i64 outer, n, inner;         /* columns of n elements, inner apart */
	i32 p;                       /* 1 or 2 */
	i32 pad;
};

/* Divides the column of n elements from base, step apart, by its norm,
 * the threads first, first + stride, ... taking its elements (a block's
 * threads when BLOCK, else one thread). */
template <typename T, bool BLOCK>
__device__ __forceinline__ void lpnorm_one(const T *x, T *y, const cep_lpnorm &p, i64 base,
					   i64 step, int first, int stride)
{
	double norm = 0.0;

	for (i64 k = first; k < p.n; k += stride) {
		double v = (double)ld_f(x, base + k * step);

		norm = __dadd_rn(norm, p.p == 1 ? fabs(v) : __dmul_rn(v, v));
	}
	if (BLOCK)
		norm = cep_block_reduce<cep_add>(norm, 0.0);
	if (p.p == 2)
		norm = sqrt(norm);
	for (i64 k = first; k < p.n; k += stride) {
		i64 at = base + k * step;

		/* A zero norm (every element 0) gives 0, not 0/0. */
		st_f(y, at, norm == 0.0 ? 0.0f : (float)((double)ld_f(x, at) / norm));
	}
}

template <typename T>
__device__ __forceinline__ void lpnorm_rows(const T *x, T *y, const cep_lpnorm &p)
{
	for (i64 r = blockIdx.x; r < p.outer; r += gridDim.x)
		lpnorm_one<T, true>(x, y, p, r * p.n, 1, threadIdx.x, blockDim.x);
}

template <typename T>
__device__ __forceinline__ void lpnorm_cols(const T *x, T *y, const cep_lpnorm &p)
{
	CEP_FOR(c, p.outer * p.inner) {
		i64 o = c / p.inner, j = c - o * p.inner;

		lpnorm_one<T, false>(x, y, p, o * p.n * p.inner + j, p.inner, 0, 1);
	}
}

#define LPNORM_KERNELS(T, sfx)                                                        \
	extern "C" __global__ void lpnorm_rows_##sfx(const T *x, T *y, cep_lpnorm p)  \
	{                                                                             \
		lpnorm_rows<T>(x, y, p);                                              \
	}                                                                             \
	extern "C" __global__ void lpnorm_cols_##sfx(const T *x, T *y, cep_lpnorm p)  \
	{                                                                             \
		lpnorm_cols<T>(x, y, p);                                              \
	}

LPNORM_KERNELS(float, f32)
LPNORM_KERNELS(f16, f16)
LPNORM_KERNELS(bf16, bf16)
