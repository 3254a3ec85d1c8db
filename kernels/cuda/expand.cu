/*
 * expand.cu — Expand and Tile: every output element copies the input
 * element found by taking each of its coordinates modulo the input's size
 * along that dimension (a broadcast dimension has size 1, a tiled one
 * repeats). Elements move as raw units of their size (1, 2, 4 or 8
 * bytes), so one kernel per size serves every type. Launcher:
 * kernels/cuda/expand.c. Kernels: expand_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_expand. */
struct cep_expand {
	i64 n;                      /* output elements */
	i32 rank;                   /* >= 1 */
	i32 pad;
	i64 odims[CEP_MAX_RANK];    /* (rank) output dims */
	i64 idims[CEP_MAX_RANK];    /* (rank) input dims, 1 where missing */
	i64 istride[CEP_MAX_RANK];  /* (rank) input element strides */
};

template <typename T>
__device__ __forceinline__ void expand(const T *x, T *y, const cep_expand &p)
{
	CEP_FOR(i, p.n) {
		i64 off = 0, t = i;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = t / p.odims[d];

			off += (t - q * p.odims[d]) % p.idims[d] * p.istride[d];
			t = q;
		}
		y[i] = x[off];
	}
}

#define EXPAND_KERNEL(T, bytes)                                                        \
	extern "C" __global__ void expand_##bytes(const T *x, T *y, cep_expand p)    \
	{                                                                            \
		expand<T>(x, y, p);                                                  \
	}

EXPAND_KERNEL(u8, 1)
EXPAND_KERNEL(u16, 2)
EXPAND_KERNEL(u32, 4)
EXPAND_KERNEL(u64, 8)
