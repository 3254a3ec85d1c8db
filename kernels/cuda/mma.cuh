/*
 * mma.cuh — the warp-wide tensor-core product of sm_80 and later, as
 * PTX's mma.sync.m16n8k16 with float32 accumulators: D = A B + D for A
 * 16 x 16 and B 16 x 8 of float16 or bfloat16, each lane holding the
 * fragments PTX's ISA lays out (groupID = lane / 4, t = lane % 4):
 *
 *	a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
 *	a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
 *	b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
 *	d[0..1] = D[g][2t, 2t+1]  d[2..3] = D[g+8][2t, 2t+1]
 *
 * two 16-bit elements to a register, the lower index in the low half.
 * Only sources compiled for sm_80 and later may include it.
 */
#ifndef CEP_CUDA_MMA_CUH
#define CEP_CUDA_MMA_CUH

#include "common.cuh"

/* d += a b; BF: bfloat16 operands, else float16. */
template <bool BF>
__device__ __forceinline__ void cep_mma16816(float d[4], const u32 a[4], const u32 b[2])
{
	if (BF)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif
