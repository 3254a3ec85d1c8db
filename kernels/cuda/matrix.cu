/*
 * matrix.cu — EyeLike and Det on the device, the counterparts of
 * kernels/cpu/matrix.c. eyelike_<type> writes every element of the
 * output, 1 on diagonal k and 0 elsewhere. det_<type> gives a block to
 * each matrix, copied into the workspace in double: thread 0 picks each
 * column's pivot (the first row of the largest magnitude) and swaps the
 * rows, then all threads eliminate the rows below it, every product and
 * difference rounded on its own (__dmul_rn, __dsub_rn) as the host's C
 * computes them, so the determinants agree to the bit before their
 * rounding to the output's type. Launcher: kernels/cuda/matrix.c.
 */
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void eyelike(T *y, i64 rows, i64 cols, i64 k)
{
	CEP_FOR(e, rows * cols) {
		i64 i = e / cols, j = e - i * cols;

		st_i(y, e, j - i == k ? 1 : 0);
	}
}

#define EYELIKE_KERNEL(T, sfx)                                                         \
	extern "C" __global__ void eyelike_##sfx(T *y, i64 rows, i64 cols, i64 k)         \
	{ eyelike<T>(y, rows, cols, k); }

EYELIKE_KERNEL(float, f32)
EYELIKE_KERNEL(f16, f16)
EYELIKE_KERNEL(bf16, bf16)
EYELIKE_KERNEL(i64, i64)
EYELIKE_KERNEL(i32, i32)
EYELIKE_KERNEL(i8, i8)
EYELIKE_KERNEL(u8, u8)
EYELIKE_KERNEL(b8, bool)

/* ----------------------------------------------------------------------- Det */

/* ws holds an m x m matrix of doubles per block of the grid. */
template <typename T>
__device__ __forceinline__ void det(const T *x, T *y, double *ws, i64 mats, i64 m)
{
	__shared__ double acc;
	__shared__ i64 piv;
	__shared__ int zero;
	double *a = ws + (i64)blockIdx.x * m * m;

	for (i64 b = blockIdx.x; b < mats; b += gridDim.x) {
		for (i64 e = threadIdx.x; e < m * m; e += blockDim.x)
			a[e] = (double)ld_f(x, b * m * m + e);
		if (threadIdx.x == 0) {
			acc = 1.0;
			zero = 0;
		}
		__syncthreads();
		for (i64 k = 0; k < m; k++) {
			if (threadIdx.x == 0) {
				double best = fabs(a[k * m + k]);
				i64 p = k;

				for (i64 i = k + 1; i < m; i++) {
					if (fabs(a[i * m + k]) > best) {
						best = fabs(a[i * m + k]);
						p = i;
					}
				}
				piv = p;
				zero = a[p * m + k] == 0.0;
				if (!zero && p != k)
					acc = -acc;
			}
			__syncthreads();
			if (zero)
				break;
			if (piv != k) {
				for (i64 j = threadIdx.x; j < m; j += blockDim.x) {
					double t = a[k * m + j];

					a[k * m + j] = a[piv * m + j];
					a[piv * m + j] = t;
				}
			}
			__syncthreads();
			if (threadIdx.x == 0)
				acc = __dmul_rn(acc, a[k * m + k]);
			for (i64 i = k + 1 + threadIdx.x; i < m; i += blockDim.x) {
				double f = __ddiv_rn(a[i * m + k], a[k * m + k]);

				for (i64 j = k + 1; j < m; j++)
					a[i * m + j] = __dsub_rn(a[i * m + j], __dmul_rn(f, a[k * m + j]));
			}
			__syncthreads();
		}
		if (threadIdx.x == 0)
			st_f(y, b, zero ? 0.0f : (float)acc);
		__syncthreads();
	}
}

#define DET_KERNEL(T, sfx)                                                              \
	extern "C" __global__ void det_##sfx(const T *x, T *y, double *ws, i64 mats, i64 m) \
	{ det<T>(x, y, ws, mats, m); }

DET_KERNEL(float, f32)
DET_KERNEL(f16, f16)
DET_KERNEL(bf16, bf16)
