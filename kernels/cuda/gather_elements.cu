/*
 * gather_elements.cu — GatherElements: every output element (the indices'
 * shape) takes the data element at its own coordinates, with the one
 * along the axis replaced by the index there (negative counting from the
 * end). Each index is checked on the device: one out of range is latched
 * into the stream's fault record with the launch's site and its element
 * is skipped, so the kernel never reads outside data. Elements move as
 * raw units of their size. Launcher: kernels/cuda/gather_elements.c.
 * Kernels: gather_elements_<bytes>_<index type>.
 */
#include "common.cuh"

/* Twin: struct cuda_gather_elements. */
struct cep_gather_elements {
	i64 n;                      /* indices (and output) elements */
	i64 dim;                    /* data's size along the axis */
	i32 rank;                   /* >= 1 */
	i32 axis;
	i64 idims[CEP_MAX_RANK];    /* (rank) of the indices */
	i64 dstride[CEP_MAX_RANK];  /* (rank) data's element strides */
};

template <typename T, typename I>
__device__ __forceinline__ void gather_elements(const T *data, const I *idx, T *out,
						const cep_gather_elements &p, cep_fault *fault,
						u64 site)
{
	CEP_FOR(i, p.n) {
		i64 v = (i64)idx[i], off = 0, t = i;

		if (v < -p.dim || v >= p.dim) {
			cep_fault_latch(fault, site, p.axis, v, p.dim);
			continue;
		}
		if (v < 0)
			v += p.dim;
		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = t / p.idims[d];

			off += (d == p.axis ? v : t - q * p.idims[d]) * p.dstride[d];
			t = q;
		}
		out[i] = data[off];
	}
}

#define GE_KERNEL(T, bytes, I, isfx)                                                    \
	extern "C" __global__ void gather_elements_##bytes##_##isfx(                    \
		const T *data, const I *idx, T *out, cep_gather_elements p,            \
		cep_fault *fault, u64 site)                                             \
	{                                                                               \
		gather_elements<T, I>(data, idx, out, p, fault, site);                  \
	}

#define GE_UNITS(I, isfx)            \
	GE_KERNEL(u8, 1, I, isfx)    \
	GE_KERNEL(u16, 2, I, isfx)   \
	GE_KERNEL(u32, 4, I, isfx)   \
	GE_KERNEL(u64, 8, I, isfx)

GE_UNITS(i32, i32)
GE_UNITS(i64, i64)
