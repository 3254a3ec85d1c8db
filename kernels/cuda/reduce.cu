/*
 * reduce.cu — ReduceSum, ReduceMean, ReduceMax and ReduceMin over any set
 * of axes, with the semantics of the reference kernels
 * (kernels/cpu/reduce.c): float types accumulate in double, integers in
 * int64 with sums wrapping as numpy's do; a NaN wins a maximum or a
 * minimum; an empty reduction gives 0, the lowest or highest value of the
 * type, or NaN for a float mean.
 *
 * Which dimensions are reduced comes either as a bit mask fixed when the
 * plan was made (the axes attribute, or an empty axes input), or from the
 * axes input itself, read here on the device so that its value never
 * needs to be on the host: a bad axis is latched into the fault record.
 * Each output element gathers its `count` inputs through the reduced
 * dims; with many of them a block takes the element and combines through
 * warp shuffles, with few a thread does. Launcher: kernels/cuda/reduce.c.
 * Kernels: reduce_{sum,mean,max,min}_{block,thread}_<type>.
 */
#include "blockred.cuh"

enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN };

/* Twin: struct cuda_reduce. */
struct cep_reduce {
	i64 out_n;                 /* output elements */
	i64 count;                 /* inputs per output element */
	i64 lo, hi;                /* the integer type's lowest and highest values */
	i32 rank;
	u32 mask;                  /* bit d: dimension d is reduced (no axes input) */
	i32 n_axes;                /* elements of the axes input */
	i32 pad;
	i64 dims[CEP_MAX_RANK];    /* (rank) of the input */
};

/* The walk of one output element: kept and reduced dims with their input
 * strides, kept ones outermost first. */
struct red_walk {
	int nk, nr;
	i64 kdim[CEP_MAX_RANK], kstride[CEP_MAX_RANK];
	i64 rdim[CEP_MAX_RANK], rstride[CEP_MAX_RANK];
};

/* Fills w from the mask, or from axes when given; false (with the fault
 * latched) for an axis out of range or repeated, or axes that do not
 * make the plan's output size. Every thread computes the same. */
__device__ __forceinline__ bool red_walk_init(red_walk *w, const cep_reduce &p, const i64 *axes,
					      cep_fault *fault, u64 site)
{
	u32 mask = p.mask;
	i64 stride = 1, out_n = 1;

	if (axes != 0) {
		mask = 0;
		for (int k = 0; k < p.n_axes; k++) {
			i64 a = axes[k];

			if (a < -p.rank || a >= p.rank || (mask >> (a < 0 ? a + p.rank : a)) & 1u) {
				cep_fault_latch_kind(fault, CEP_FAULT_AXIS, site, k, a, p.rank);
				return false;
			}
			mask |= 1u << (a < 0 ? a + p.rank : a);
		}
	}
	w->nk = w->nr = 0;
	for (int d = p.rank - 1; d >= 0; d--) {
		if ((mask >> d) & 1u) {
			w->rdim[w->nr] = p.dims[d];
			w->rstride[w->nr++] = stride;
		} else {
			w->kdim[w->nk] = p.dims[d];
			w->kstride[w->nk++] = stride;
			out_n *= p.dims[d];
		}
		stride *= p.dims[d];
	}
	if (out_n != p.out_n) {
		cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 0, out_n, p.out_n);
		return false;
	}
	return true;
}

/* The input offset of index i along the dims (innermost first). */
__device__ __forceinline__ i64 red_offset(i64 i, int n, const i64 *dim, const i64 *stride)
{
	i64 off = 0;

	for (int d = 0; d < n; d++) {
		i64 q = i / dim[d];

		off += (i - q * dim[d]) * stride[d];
		i = q;
	}
	return off;
}

template <int OP> __device__ __forceinline__ double red_fold_d(double a, double v)
{
	switch (OP) {
	case RED_MAX: return cep_max_nan::f(a, v);
	case RED_MIN: return cep_min_nan::f(a, v);
	default: return a + v;
	}
}

/* Integers: sums in unsigned arithmetic, which wraps. */
template <int OP> __device__ __forceinline__ i64 red_fold_i(i64 a, i64 v)
{
	switch (OP) {
	case RED_MAX: return v > a ? v : a;
	case RED_MIN: return v < a ? v : a;
	default: return (i64)((u64)a + (u64)v);
	}
}

template <int OP> struct red_comb_d {
	__device__ static double f(double a, double b) { return red_fold_d<OP>(a, b); }
};
template <int OP> struct red_comb_i {
	__device__ static i64 f(i64 a, i64 b) { return red_fold_i<OP>(a, b); }
};

template <typename T, int OP, bool BLOCK>
__device__ __forceinline__ void reduce(const T *x, T *y, const cep_reduce &p, const i64 *axes,
				       cep_fault *fault, u64 site)
{
	red_walk w;
	i64 o0 = BLOCK ? blockIdx.x : (i64)blockIdx.x * blockDim.x + threadIdx.x;
	i64 ostep = BLOCK ? gridDim.x : (i64)gridDim.x * blockDim.x;
	i64 k0 = BLOCK ? threadIdx.x : 0, kstep = BLOCK ? blockDim.x : 1;

	if (!red_walk_init(&w, p, axes, fault, site))
		return;
	for (i64 o = o0; o < p.out_n; o += ostep) {
		i64 base = red_offset(o, w.nk, w.kdim, w.kstride);

		if (cep_is_float<T>::value) {
			double id = OP == RED_MAX ? -CEP_INF_D : OP == RED_MIN ? CEP_INF_D : 0.0;
			double a = id;

			for (i64 k = k0; k < p.count; k += kstep)
				a = red_fold_d<OP>(a, (double)ld_f(x, base + red_offset(k, w.nr, w.rdim,
										     w.rstride)));
			if (BLOCK)
				a = cep_block_reduce<red_comb_d<OP> >(a, id);
			if (OP == RED_MEAN)
				a /= (double)p.count;
			if (!BLOCK || threadIdx.x == 0)
				st_f(y, o, (float)a);
		} else {
			i64 id = OP == RED_MAX ? p.lo : OP == RED_MIN ? p.hi : 0;
			i64 a = id;

			for (i64 k = k0; k < p.count; k += kstep)
				a = red_fold_i<OP>(a, ld_i(x, base + red_offset(k, w.nr, w.rdim,
										 w.rstride)));
			if (BLOCK)
				a = cep_block_reduce<red_comb_i<OP> >(a, id);
			if (OP == RED_MEAN)
				a = p.count > 0 ? a / p.count : 0;
			if (!BLOCK || threadIdx.x == 0)
				st_i(y, o, a);
		}
	}
}

#define REDUCE_KERNEL(name, OP, T, sfx)                                                  \
	extern "C" __global__ void reduce_##name##_block_##sfx(                         \
		const T *x, T *y, cep_reduce p, const i64 *axes, cep_fault *fault, u64 site)  \
	{ reduce<T, OP, true>(x, y, p, axes, fault, site); }                            \
	extern "C" __global__ void reduce_##name##_thread_##sfx(                        \
		const T *x, T *y, cep_reduce p, const i64 *axes, cep_fault *fault, u64 site)  \
	{ reduce<T, OP, false>(x, y, p, axes, fault, site); }

#define REDUCE_TYPES(name, OP)              \
	REDUCE_KERNEL(name, OP, float, f32) \
	REDUCE_KERNEL(name, OP, f16, f16)   \
	REDUCE_KERNEL(name, OP, bf16, bf16) \
	REDUCE_KERNEL(name, OP, i64, i64)   \
	REDUCE_KERNEL(name, OP, i32, i32)   \
	REDUCE_KERNEL(name, OP, i8, i8)     \
	REDUCE_KERNEL(name, OP, u8, u8)     \
	REDUCE_KERNEL(name, OP, b8, bool)

REDUCE_TYPES(sum, RED_SUM)
REDUCE_TYPES(mean, RED_MEAN)
REDUCE_TYPES(max, RED_MAX)
REDUCE_TYPES(min, RED_MIN)
