/*
 * scan.cuh — a block-wide exclusive scan of one flag per thread, for the
 * kernels that place selected elements at their rank among all of them
 * (kernels/cuda/select.cu, unique.cu): a warp ballot counts each warp's
 * flags, thread 0 sums the warps' counts in order, and each thread adds
 * the set flags of the lanes before it.
 */
#ifndef CEP_CUDA_SCAN_CUH
#define CEP_CUDA_SCAN_CUH

#include "common.cuh"

/* The set flags of the threads before this one in the block, and in
 * *total those of the whole block. Every thread of the block must reach
 * it; the block is a multiple of 32 threads, at most 1024. */
__device__ __forceinline__ i32 cep_block_scan_flags(bool flag, i32 *total)
{
	__shared__ i32 warp_base[33];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
	u32 ballot = __ballot_sync(0xffffffffu, flag);

	/* The previous call may still be reading warp_base. */
	__syncthreads();
	if (lane == 0)
		warp_base[warp] = __popc(ballot);
	__syncthreads();
	if (threadIdx.x == 0) {
		i32 run = 0;

		for (int w = 0; w < warps; w++) {
			i32 c = warp_base[w];

			warp_base[w] = run;
			run += c;
		}
		warp_base[32] = run;
	}
	__syncthreads();
	*total = warp_base[32];
	return warp_base[warp] + __popc(ballot & ((1u << lane) - 1u));
}

#endif
