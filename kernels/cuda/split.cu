/*
 * split.cu — Split: one part of the input along an axis, launched once per
 * output as (outer, size, inner) copied from (outer, at .. at + size,
 * inner) of (outer, dim, inner). Where the part sizes come from the split
 * input, the part's start is summed here from that input on the device
 * (so its value never needs to be on the host), and a size that differs
 * from the planned one is latched into the fault record. Elements move as
 * raw units of their size. Launcher: kernels/cuda/split.c. Kernels:
 * split_<bytes> (an int64 split input, or none) and split_<bytes>_<f32|f16|f64>
 * (opset 1's split input, of the data's float type).
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

template <typename T, typename L>
__device__ __forceinline__ void split(const T *x, T *y, const cep_split &p, const L *list,
				      cep_fault *fault, u64 site)
{
	i64 at = p.at;

	if (list != 0) {
		i64 size = ld_i(list, p.part);

		at = 0;
		for (int k = 0; k < p.part; k++)
			at += ld_i(list, k);
		if (size != p.size || at < 0 || at + p.size > p.dim) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, size, p.size);
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
		split<T, i64>(x, y, p, list, fault, site);                          \
	}

SPLIT_KERNEL(u8, 1)
SPLIT_KERNEL(u16, 2)
SPLIT_KERNEL(u32, 4)
SPLIT_KERNEL(u64, 8)

/* Opset 1's sizes come in the data's own type: float32 or float16. */
#define SPLIT1_KERNEL(T, bytes, L, lname)                                             \
	extern "C" __global__ void split_##bytes##_##lname(const T *x, T *y, cep_split p, \
							   const L *list,           \
							   cep_fault *fault, u64 site) \
	{                                                                           \
		split<T, L>(x, y, p, list, fault, site);                            \
	}

SPLIT1_KERNEL(u16, 2, f16, f16)
SPLIT1_KERNEL(u32, 4, float, f32)
SPLIT1_KERNEL(u64, 8, double, f64)
