/*
 * depth_space.cu — DepthToSpace and SpaceToDepth: each output element
 * (the output seen as six dimensions) is the input element its
 * coordinates step to (struct cpu_depth_space, kernels/cpu/depth_space.h).
 * Elements move as raw units of their size. Launcher:
 * kernels/cuda/depth_space.c. Kernels: depth_space_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_depth_space. */
struct cep_depth_space {
	i64 n;              /* output elements */
	i64 dims[6];        /* the output's six dimensions */
	i64 stride[6];      /* input elements per step along each */
};

template <typename T>
__device__ __forceinline__ void depth_space(const T *in, T *out, const cep_depth_space &p)
{
	CEP_FOR(i, p.n) {
		i64 t = i, off = 0;

		for (int d = 5; d >= 0; d--) {
			i64 q = t / p.dims[d];

			off += (t - q * p.dims[d]) * p.stride[d];
			t = q;
		}
		out[i] = in[off];
	}
}

#define DEPTH_SPACE_KERNEL(T, bytes)                                                      \
	extern "C" __global__ void depth_space_##bytes(const T *in, T *out, cep_depth_space p) \
	{                                                                                 \
		depth_space<T>(in, out, p);                                               \
	}

DEPTH_SPACE_KERNEL(u8, 1)
DEPTH_SPACE_KERNEL(u16, 2)
DEPTH_SPACE_KERNEL(u32, 4)
DEPTH_SPACE_KERNEL(u64, 8)
