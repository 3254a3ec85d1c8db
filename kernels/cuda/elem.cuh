/*
 * elem.cuh — what the elementwise families of kernels/cuda with more than
 * two operands share (compare.cu's Where, variadic.cu): numpy broadcasting
 * of up to CEP_BCASTN_MAX operands, each described by the dims it
 * broadcasts along. Twin on the host: struct cuda_bcastn of
 * kernels/cuda/launch.h, filled by cuda_bcastn_init().
 */
#ifndef CEP_CUDA_ELEM_CUH
#define CEP_CUDA_ELEM_CUH

#include "common.cuh"

#define CEP_BCASTN_MAX 8

struct cep_bcastn {
	i32 rank;                       /* >= 1 */
	i32 n_in;                       /* <= CEP_BCASTN_MAX */
	i64 n;                          /* output elements */
	i64 dims[CEP_MAX_RANK];         /* (rank) */
	u32 bmask[CEP_BCASTN_MAX];      /* (n_in) bit d: broadcast along dim d */
};

/* Where output element i reads each operand, into off (N of them, the
 * first p.n_in meaningful; N fixed per kernel so that the arrays stay in
 * registers). An operand walks the dims it does not broadcast along
 * contiguously, so its stride along a dim is the product of its dims
 * inside that one. */
template <int N>
__device__ __forceinline__ void cep_bcastn_at(const cep_bcastn &p, i64 i, i64 *off)
{
	i64 stride[N];

#pragma unroll
	for (int k = 0; k < N; k++) {
		off[k] = 0;
		stride[k] = 1;
	}
	for (int d = p.rank - 1; d >= 0; d--) {
		i64 q = i / p.dims[d];
		i64 c = i - q * p.dims[d];

#pragma unroll
		for (int k = 0; k < N; k++) {
			if (k < p.n_in && ((p.bmask[k] >> d) & 1u) == 0) {
				off[k] += c * stride[k];
				stride[k] *= p.dims[d];
			}
		}
		i = q;
	}
}

#endif
