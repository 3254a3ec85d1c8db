/*
 * concat.cu — Concat as strided copies: for each input, rows (the
 * product of the dims before the axis) of cols units are copied from a
 * source pitch to the output's pitch, in the widest unit (16, 8, 4, 2 or
 * 1 bytes) that every length and address allows. Launcher:
 * kernels/cuda/concat.c. Kernels: copy2d_<bytes>.
 */
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void copy2d(const T *src, T *dst, i64 rows, i64 cols,
				       i64 spitch, i64 dpitch)
{
	CEP_FOR(i, rows * cols) {
		i64 r = i / cols, c = i - r * cols;

		dst[r * dpitch + c] = src[r * spitch + c];
	}
}

#define COPY2D_KERNEL(T, bytes)                                                  \
	extern "C" __global__ void copy2d_##bytes(const T *src, T *dst, i64 rows, \
						  i64 cols, i64 spitch, i64 dpitch) \
	{                                                                        \
		copy2d<T>(src, dst, rows, cols, spitch, dpitch);                 \
	}

COPY2D_KERNEL(u8, 1)
COPY2D_KERNEL(u16, 2)
COPY2D_KERNEL(u32, 4)
COPY2D_KERNEL(u64, 8)
COPY2D_KERNEL(u128, 16)
