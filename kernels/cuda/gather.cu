/*
 * gather.cu — Gather: slices of data along an axis picked by an int32 or
 * int64 index tensor, negative indices counting from the end. Every index
 * is checked on the device: one out of range is latched into the stream's
 * fault record (with the launch's site) and its slice is skipped, so the
 * kernel never reads outside data and the run fails with the index named.
 * Slices move as raw units (16, 8, 4, 2 or 1 bytes). Launcher:
 * kernels/cuda/gather.c. Kernels: gather_<bytes>_<index type>.
 */
#include "common.cuh"

/* Twin: struct cuda_gather. Counts are in units. */
struct cep_gather {
	i64 outer;     /* slices before the axis */
	i64 dim;       /* the axis' size */
	i64 inner;     /* units of one slice after the axis */
	i64 n_idx;     /* indices */
	i32 axis;
	i32 pad;
};

template <typename T, typename I>
__device__ __forceinline__ void gather(const T *data, const I *idx, T *out,
				       const cep_gather &p, cep_fault *fault, u64 site)
{
	CEP_FOR(i, p.outer * p.n_idx * p.inner) {
		i64 j = i % p.inner, t = i / p.inner;
		i64 k = t % p.n_idx, o = t / p.n_idx;
		i64 v = (i64)idx[k];

		if (v < -p.dim || v >= p.dim) {
			cep_fault_latch(fault, site, p.axis, v, p.dim);
			continue;
		}
		if (v < 0)
			v += p.dim;
		out[i] = data[(o * p.dim + v) * p.inner + j];
	}
}

#define GATHER_KERNEL(T, bytes, I, isfx)                                          \
	extern "C" __global__ void gather_##bytes##_##isfx(const T *data, const I *idx, \
							   T *out, cep_gather p,     \
							   cep_fault *fault, u64 site) \
	{                                                                         \
		gather<T, I>(data, idx, out, p, fault, site);                     \
	}

#define GATHER_UNITS(I, isfx)              \
	GATHER_KERNEL(u8, 1, I, isfx)      \
	GATHER_KERNEL(u16, 2, I, isfx)     \
	GATHER_KERNEL(u32, 4, I, isfx)     \
	GATHER_KERNEL(u64, 8, I, isfx)     \
	GATHER_KERNEL(u128, 16, I, isfx)

GATHER_UNITS(i32, i32)
GATHER_UNITS(i64, i64)
