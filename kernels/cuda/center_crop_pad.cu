/*
 * center_crop_pad.cu — CenterCropPad on the device, a thread per output
 * element: along each dimension it reads input element o + off[d], or
 * writes 0 where that lies outside, as the reference kernel of
 * kernels/cpu/center_crop_pad.c does; elements move as raw units of
 * their size. Launcher: kernels/cuda/center_crop_pad.c. Kernels:
 * center_crop_pad_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_ccp. */
struct cep_ccp {
	i32 rank;
	i32 pad;
	i64 n;                          /* output elements */
	i64 in[CEP_MAX_RANK];           /* (rank) input dims */
	i64 out[CEP_MAX_RANK];          /* (rank) output dims */
	i64 off[CEP_MAX_RANK];          /* (rank) input offset of output 0 */
};

template <typename U>
__device__ __forceinline__ void center_crop_pad(const U *x, U *y, const cep_ccp &p)
{
	CEP_FOR(e, p.n) {
		i64 q = e, src = 0, stride = 1;
		bool inside = true;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 next = q / p.out[d], i = q - next * p.out[d] + p.off[d];

			inside &= i >= 0 && i < p.in[d];
			src += i * stride;
			stride *= p.in[d];
			q = next;
		}
		if (inside) {
			y[e] = x[src];
		} else {
			U zero = {};

			y[e] = zero;
		}
	}
}

#define CCP_KERNEL(U, bytes)                                                               \
	extern "C" __global__ void center_crop_pad_##bytes(const U *x, U *y, cep_ccp p)        \
	{ center_crop_pad<U>(x, y, p); }

CCP_KERNEL(u8, 1)
CCP_KERNEL(u16, 2)
CCP_KERNEL(u32, 4)
CCP_KERNEL(u64, 8)
