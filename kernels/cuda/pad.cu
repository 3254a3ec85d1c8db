/*
 * pad.cu — Pad in every mode of the reference kernel (kernels/cpu/pad.c):
 * constant, reflect, edge and wrap, negative pads cropping first and the
 * fill mirroring, repeating or wrapping what is left; reflection and
 * wrapping continue periodically past the width of a dimension.
 *
 * Before opset 11 the pads are an attribute and arrive worked out. From
 * 11 on they are an input (int32 or int64), from 18 with an axes input
 * naming the dimensions they are for, read here on the device so that
 * their values never need to be on the host: each thread reads them and
 * checks them against the output's planned shape, and pads that do not
 * make it (or a bad axis) are latched into the fault record and nothing
 * is written. Every index a thread computes is then inside the input.
 *
 * A thread per output element; elements move as raw units of their size.
 * Launcher: kernels/cuda/pad.c. Kernels: pad_<bytes>.
 */
#include "common.cuh"

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Twin: struct cuda_pad. */
struct cep_pad {
	i64 n;                          /* output elements */
	i32 rank;                       /* >= 1 */
	i32 mode;
	i32 n_axes;                     /* pads input: entries per side */
	i32 wide;                       /* bit 0: pads int64; bit 1: axes int64 */
	i64 idims[CEP_MAX_RANK];        /* (rank) of data */
	i64 odims[CEP_MAX_RANK];        /* (rank) of the output */
	i64 begin[CEP_MAX_RANK];        /* (rank) without a pads input */
	i64 end[CEP_MAX_RANK];
};

/* What is left of one dimension after its crops, and where. */
struct pad_dim {
	i64 pad;                        /* elements added before what is left */
	i64 n;                          /* elements left */
	i64 first;                      /* input index of the first of them */
};

__device__ __forceinline__ i64 pad_entry(const void *list, bool wide, i64 k)
{
	return wide ? ((const i64 *)list)[k] : (i64)((const i32 *)list)[k];
}

/* The largest pad the host accepts (OP_MAX_NUMEL). */
#define PAD_MAX (1LL << 40)

/* Fills dim from the pads (p.begin and p.end, or the pads and axes
 * inputs); false, with the fault latched, for pads the plan was not made
 * with. Every thread computes the same. */
__device__ __forceinline__ bool pad_dims(const cep_pad &p, const void *pads, const void *axes,
					 pad_dim *dim, cep_fault *fault, u64 site)
{
	i64 begin[CEP_MAX_RANK], end[CEP_MAX_RANK];
	u32 seen = 0;

	for (int d = 0; d < p.rank; d++) {
		begin[d] = pads ? 0 : p.begin[d];
		end[d] = pads ? 0 : p.end[d];
	}
	for (int k = 0; pads && k < p.n_axes; k++) {
		i64 ax = axes ? pad_entry(axes, p.wide & 2, k) : k;
		i64 b = pad_entry(pads, p.wide & 1, k), e = pad_entry(pads, p.wide & 1, p.n_axes + k);

		if (ax < 0)
			ax += p.rank;
		if (ax < 0 || ax >= p.rank || (seen >> ax) & 1u) {
			cep_fault_latch_kind(fault, CEP_FAULT_AXIS, site, k,
					     axes ? pad_entry(axes, p.wide & 2, k) : k, p.rank);
			return false;
		}
		if (b > PAD_MAX || b < -PAD_MAX || e > PAD_MAX || e < -PAD_MAX) {
			cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, (int)ax,
					     b > PAD_MAX || b < -PAD_MAX ? b : e, PAD_MAX);
			return false;
		}
		seen |= 1u << ax;
		begin[ax] = b;
		end[ax] = e;
	}
	for (int d = 0; d < p.rank; d++) {
		i64 out = p.idims[d] + begin[d] + end[d];

		dim[d].first = begin[d] < 0 ? -begin[d] : 0;
		dim[d].pad = begin[d] > 0 ? begin[d] : 0;
		dim[d].n = p.idims[d] - dim[d].first - (end[d] < 0 ? -end[d] : 0);
		if (dim[d].n < 0 || out != p.odims[d] ||
		    (dim[d].n == 0 && p.mode != PAD_CONSTANT && out > 0)) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, d, out, p.odims[d]);
			return false;
		}
	}
	return true;
}

/* The input index that output index o of a dimension takes; -1: the
 * constant. As the host's pad_map(). */
__device__ __forceinline__ i64 pad_map(int mode, i64 o, const pad_dim &d)
{
	i64 i = o - d.pad, period, m;

	if (i >= 0 && i < d.n)
		return d.first + i;
	switch (mode) {
	case PAD_EDGE:
		return d.first + (i < 0 ? 0 : d.n - 1);
	case PAD_REFLECT:
		if (d.n == 1)
			return d.first;
		period = 2 * (d.n - 1);
		m = i % period;
		if (m < 0)
			m += period;
		return d.first + (m < d.n ? m : period - m);
	case PAD_WRAP:
		m = i % d.n;
		return d.first + (m < 0 ? m + d.n : m);
	default:
		return -1;
	}
}

template <typename U>
__device__ __forceinline__ void pad(const U *x, U *y, const cep_pad &p, const void *pads,
				    const void *axes, const U *cval_in, U cval, cep_fault *fault,
				    u64 site)
{
	pad_dim dim[CEP_MAX_RANK];

	if (!pad_dims(p, pads, axes, dim, fault, site))
		return;
	if (cval_in != 0)
		cval = cval_in[0];
	CEP_FOR(o, p.n) {
		i64 r = o, off = 0, stride = 1;
		bool fill = false;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = r / p.odims[d];
			i64 k = pad_map(p.mode, r - q * p.odims[d], dim[d]);

			fill = fill || k < 0;
			off += k * stride;
			stride *= p.idims[d];
			r = q;
		}
		y[o] = fill ? cval : x[off];
	}
}

#define PAD_KERNEL(U, bytes)                                                              \
	extern "C" __global__ void pad_##bytes(const U *x, U *y, cep_pad p, const void *pads, \
					       const void *axes, const U *cval_in, U cval,     \
					       cep_fault *fault, u64 site)                     \
	{ pad<U>(x, y, p, pads, axes, cval_in, cval, fault, site); }

PAD_KERNEL(u8, 1)
PAD_KERNEL(u16, 2)
PAD_KERNEL(u32, 4)
PAD_KERNEL(u64, 8)
