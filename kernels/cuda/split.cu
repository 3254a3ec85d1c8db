/*
 * split.cu — Split: one part of the input along an axis, launched once per
 * output as (outer, size, inner) copied from (outer, at .. at + size,
 * inner) of (outer, dim, inner). Where the part sizes come from the split
 * input, the part's start is summed here from that input on the device
 * (so its value never needs to be on the host), and a size that differs
 * from the planned one is latched into the fault record. Elements move as
 * raw units of their size. Launcher: kernels/cuda/split.c. Kernels:
 * split_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_split. */
struct cep_split {
	i64 outer, dim, inner;      /* the input around the axis */
	i64 size;                   /* this part's share of the axis */
	i64 at;                     /* where it starts, without a split input */
	i32 part;                   /* which output this is */
	i32 axis;
};

template <typename T>
__device__ __forceinline__ void split(const T *x, T *y, const cep_split &p, const i64 *list,
				      cep_fault *fault, u64 site)
{
	i64 at = p.at;

	if (list != 0) {
		at = 0;
		for (int k = 0; k < p.part; k++)
			at += list[k];
		if (list[p.part] != p.size || at < 0 || at + p.size > p.dim) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, list[p.part], p.size);
			return;
		}
	}
	CEP_FOR(i, p.outer * p.size * p.inner) {
		i64 j = i % p.inner, t = i / p.inner;
		i64 k = t % p.size, o = t / p.size;

		y[i] = x[(o * p.dim + at + k) * p.inner + j];
	}
}

#define SPLIT_KERNEL(T, bytes)                                                        \
	extern "C" __global__ void split_##bytes(const T *x, T *y, cep_split p,         \
						 const i64 *list, cep_fault *fault,     \
						 u64 site)                              \
	{                                                                           \
		split<T>(x, y, p, list, fault, site);                               \
	}

SPLIT_KERNEL(u8, 1)
SPLIT_KERNEL(u16, 2)
SPLIT_KERNEL(u32, 4)
SPLIT_KERNEL(u64, 8)
