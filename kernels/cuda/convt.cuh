/*
 * convt.cuh — the transposed sliding window of ConvTranspose and Col2Im
 * on the device (the host's is kernels/convt_geom.h): a column entry of
 * kernel position k and block position l lands at image position
 *
 *	o[i] = l[i] * stride[i] - pad_begin[i] + k[i] * dilation[i]
 *
 * so the device gathers: each thread takes one image position and visits
 * the kernel positions in ascending row-major order, the order in which
 * the host adds them (kernels/cpu/col2im.h), with the block position each
 * comes from. Included by col2im.cu and conv_transpose.cu.
 */
#ifndef CEP_CUDA_CONVT_CUH
#define CEP_CUDA_CONVT_CUH

#include "common.cuh"

#define CEP_CONVT_DIMS (CEP_MAX_RANK - 2)

/* Twin: struct cuda_convt_win (kernels/cuda/convt_win.h). Every size
 * fits an int32 (the launchers check). */
struct cep_convt_win {
	i32 n;                           /* spatial dims, 1 to 6 */
	i32 pad;
	i32 image[CEP_CONVT_DIMS];       /* (n) */
	i32 block[CEP_CONVT_DIMS];       /* (n) kernel sizes */
	i32 blocks[CEP_CONVT_DIMS];      /* (n) block positions */
	i32 stride[CEP_CONVT_DIMS];      /* (n) >= 1 */
	i32 dilation[CEP_CONVT_DIMS];    /* (n) >= 1 */
	i32 pad_begin[CEP_CONVT_DIMS];   /* (n) may be negative */
};

/* The block position along dim i whose entry of kernel offset k lands at
 * image coordinate o, or -1 when none does. */
__device__ __forceinline__ i64 convt_block_at(const cep_convt_win &w, int i, i64 o, i64 k)
{
	i64 t = o + w.pad_begin[i] - k * w.dilation[i];
	i64 q;

	if (t < 0)
		return -1;
	q = t / w.stride[i];
	return q * w.stride[i] == t && q < w.blocks[i] ? q : -1;
}

/*
 * Calls f(kk, l) for every kernel position kk (flat, row-major over
 * w.block), in ascending order, whose entry lands at image position pos
 * (flat, row-major over w.image); l is the flat block position (row-major
 * over w.blocks) the entry comes from. An odometer over the kernel
 * offsets that keeps each dim's block position, so a step costs one dim's
 * arithmetic, not n.
 */
template <typename F>
__device__ __forceinline__ void convt_for_entries(const cep_convt_win &w, i64 pos, F f)
{
	i64 o[CEP_CONVT_DIMS], li[CEP_CONVT_DIMS], k[CEP_CONVT_DIMS];
	int n = w.n, misses = 0, i;

	for (i = n - 1; i >= 0; i--) {
		o[i] = pos % w.image[i];
		pos /= w.image[i];
	}
	for (i = 0; i < n; i++) {
		k[i] = 0;
		li[i] = convt_block_at(w, i, o[i], 0);
		misses += li[i] < 0;
	}
	for (i64 kk = 0;; kk++) {
		if (misses == 0) {
			i64 l = 0;

			for (i = 0; i < n; i++)
				l = l * w.blocks[i] + li[i];
			f(kk, l);
		}
		for (i = n - 1; i >= 0; i--) {
			misses -= li[i] < 0;
			k[i] = k[i] + 1 < w.block[i] ? k[i] + 1 : 0;
			li[i] = convt_block_at(w, i, o[i], k[i]);
			misses += li[i] < 0;
			if (k[i] != 0)
				break;
		}
		if (i < 0)
			return;
	}
}

#endif
