/*
 * transpose.cu — Transpose: each output element gathered from the input
 * through the input's strides permuted into output order. Elements move
 * as raw units of their size, so one kernel per size serves every type.
 * Launcher: kernels/cuda/transpose.c. Kernels: transpose_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_transpose. */
struct cep_transpose {
	i32 rank;                     /* >= 1, after merging */
	i32 pad;
	i64 n;                        /* output elements */
	i64 dims[CEP_MAX_RANK];       /* output dims */
	i64 stride[CEP_MAX_RANK];     /* input element stride of each output dim */
};

template <typename T>
__device__ __forceinline__ void transpose(const T *in, T *out, const cep_transpose &p)
{
	CEP_FOR(i, p.n) {
		i64 r = i, off = 0;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = r / p.dims[d];

			off += (r - q * p.dims[d]) * p.stride[d];
			r = q;
		}
		out[i] = in[off];
	}
}

#define TRANSPOSE_KERNEL(T, bytes)                                                   \
	extern "C" __global__ void transpose_##bytes(const T *in, T *out, cep_transpose p) \
	{                                                                            \
		transpose<T>(in, out, p);                                            \
	}

TRANSPOSE_KERNEL(u8, 1)
TRANSPOSE_KERNEL(u16, 2)
TRANSPOSE_KERNEL(u32, 4)
TRANSPOSE_KERNEL(u64, 8)
