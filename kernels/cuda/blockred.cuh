/*
 * blockred.cuh — reductions across a warp and across a block, for the
 * kernels that give one block to one row (kernels/cuda/softmax.cu,
 * norm.cu, reduce.cu), with the combining rules the reference kernels
 * use: sums, maxima that skip NaN (Softmax's), and maxima and minima that
 * let NaN win (numpy's, those of the Reduce* operators and LogSoftmax).
 *
 * A block reduction must be reached by every thread of the block, whose
 * size is a multiple of 32 (at most 1024); each thread brings its partial
 * value and all get the block's result.
 */
#ifndef CEP_CUDA_BLOCKRED_CUH
#define CEP_CUDA_BLOCKRED_CUH

#include "common.cuh"

/* Infinities without the toolkit's math headers. */
#define CEP_INF_F __int_as_float(0x7f800000)
#define CEP_INF_D __longlong_as_double(0x7ff0000000000000LL)

/* Combining rules: an identity-free binary operator each. */
struct cep_add {
	template <typename T> __device__ static T f(T a, T b) { return a + b; }
};
/* A NaN operand is passed over (as `if (v > mx) mx = v` does). */
struct cep_max_skip {
	template <typename T> __device__ static T f(T a, T b) { return b > a ? b : a; }
};
/* A NaN wins and then stays; for integers, the plain maximum. */
struct cep_max_nan {
	template <typename T> __device__ static T f(T a, T b) { return b > a || b != b ? b : a; }
};
struct cep_min_nan {
	template <typename T> __device__ static T f(T a, T b) { return b < a || b != b ? b : a; }
};

template <typename OP, typename T> __device__ __forceinline__ T cep_warp_reduce(T v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = OP::f(v, (T)__shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* The block's reduction of every thread's v; ident is OP's identity, for
 * the lanes of the last step that have no warp to stand for. */
template <typename OP, typename T> __device__ __forceinline__ T cep_block_reduce(T v, T ident)
{
	__shared__ T part[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	v = cep_warp_reduce<OP>(v);
	/* The previous call may still be reading part[0]. */
	__syncthreads();
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < (int)(blockDim.x >> 5) ? part[lane] : ident;
		v = cep_warp_reduce<OP>(v);
		if (lane == 0)
			part[0] = v;
	}
	__syncthreads();
	return part[0];
}

#endif
