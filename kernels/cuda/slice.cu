/*
 * slice.cu — Slice: a strided sub-tensor of data. Each output coordinate
 * c along a dimension reads first + c * step there. Before opset 10 the
 * bounds are attributes and first and step arrive worked out; from 10 on
 * they are inputs (starts, ends, and optionally axes and steps, each int32
 * or int64), read here on the device and clamped exactly as the reference
 * kernel does (kernels/cpu/slice.c), so their values never need to be on
 * the host. Bounds that do not give the output's planned shape (or an
 * axis out of range, or a step of 0) are latched into the fault record
 * and nothing is copied. Elements move as raw units of their size.
 * Launcher: kernels/cuda/slice.c. Kernels: slice_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_slice. */
struct cep_slice {
	i64 n;                      /* output elements */
	i32 rank;                   /* >= 1 */
	i32 n_lists;                /* entries of each bound input; 0: first and step given */
	i32 wide;                   /* bit i: bound input i (0 starts .. 3 steps) is int64 */
	i32 pad;
	i64 idims[CEP_MAX_RANK];    /* (rank) of data */
	i64 odims[CEP_MAX_RANK];    /* (rank) of the output */
	i64 first[CEP_MAX_RANK];    /* (rank) without bound inputs */
	i64 step[CEP_MAX_RANK];     /* (rank) */
};

__device__ __forceinline__ i64 slice_entry(const void *list, int wide, i64 k)
{
	return wide ? ((const i64 *)list)[k] : (i64)((const i32 *)list)[k];
}

/* The clamping of kernels/cpu/slice.c: the first index read, and the
 * count taken. */
__device__ __forceinline__ i64 slice_clamp(i64 dim, i64 start, i64 end, i64 step, i64 *first)
{
	u64 span, mag;

	if (start < 0)
		start += dim;
	if (end < 0)
		end += dim;
	if (step > 0) {
		start = start < 0 ? 0 : start > dim ? dim : start;
		end = end < 0 ? 0 : end > dim ? dim : end;
		*first = start;
		if (end <= start)
			return 0;
		span = (u64)(end - start);
		mag = (u64)step;
	} else {
		start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
		end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
		*first = start;
		if (start <= end)
			return 0;
		span = (u64)(start - end);
		mag = (u64)0 - (u64)step;
	}
	return (i64)((span - 1) / mag + 1);
}

/* Fills first and step from the bound inputs; false, with the fault
 * latched, for bounds the plan was not made with. Every thread computes
 * the same. */
__device__ __forceinline__ bool slice_bounds(const cep_slice &p, const void *starts,
					     const void *ends, const void *axes,
					     const void *steps, i64 *first, i64 *step,
					     cep_fault *fault, u64 site)
{
	u32 seen = 0;

	for (int d = 0; d < p.rank; d++) {
		first[d] = 0;
		step[d] = 1;
	}
	for (int k = 0; k < p.n_lists; k++) {
		i64 ax = axes ? slice_entry(axes, p.wide & 4, k) : k;
		i64 st = steps ? slice_entry(steps, p.wide & 8, k) : 1;
		i64 len;

		if (ax < -p.rank || ax >= p.rank) {
			cep_fault_latch_kind(fault, CEP_FAULT_AXIS, site, k, ax, p.rank);
			return false;
		}
		if (ax < 0)
			ax += p.rank;
		if ((seen >> ax) & 1u) {
			cep_fault_latch_kind(fault, CEP_FAULT_AXIS, site, k, ax, p.rank);
			return false;
		}
		if (st == 0) {
			cep_fault_latch_kind(fault, CEP_FAULT_STEP, site, (int)ax, 0, 0);
			return false;
		}
		seen |= 1u << ax;
		len = slice_clamp(p.idims[ax], slice_entry(starts, p.wide & 1, k),
				  slice_entry(ends, p.wide & 2, k), st, &first[ax]);
		if (len != p.odims[ax]) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, (int)ax, len, p.odims[ax]);
			return false;
		}
		step[ax] = st;
	}
	return true;
}

template <typename T>
__device__ __forceinline__ void slice(const T *x, T *y, const cep_slice &p, const void *starts,
				      const void *ends, const void *axes, const void *steps,
				      cep_fault *fault, u64 site)
{
	i64 first[CEP_MAX_RANK], step[CEP_MAX_RANK], stride[CEP_MAX_RANK], s = 1;

	if (p.n_lists > 0) {
		if (!slice_bounds(p, starts, ends, axes, steps, first, step, fault, site))
			return;
	} else {
		for (int d = 0; d < p.rank; d++) {
			first[d] = p.first[d];
			step[d] = p.step[d];
		}
	}
	for (int d = p.rank - 1; d >= 0; d--) {
		stride[d] = s;
		s *= p.idims[d];
	}
	CEP_FOR(i, p.n) {
		i64 off = 0, t = i;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = t / p.odims[d];

			off += (first[d] + (t - q * p.odims[d]) * step[d]) * stride[d];
			t = q;
		}
		y[i] = x[off];
	}
}

#define SLICE_KERNEL(T, bytes)                                                          \
	extern "C" __global__ void slice_##bytes(const T *x, T *y, cep_slice p,           \
						 const void *starts, const void *ends,    \
						 const void *axes, const void *steps,     \
						 cep_fault *fault, u64 site)              \
	{                                                                             \
		slice<T>(x, y, p, starts, ends, axes, steps, fault, site);            \
	}

SLICE_KERNEL(u8, 1)
SLICE_KERNEL(u16, 2)
SLICE_KERNEL(u32, 4)
SLICE_KERNEL(u64, 8)
