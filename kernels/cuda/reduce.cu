/*
 * reduce.cu — the Reduce* operators over any set of axes, with the
 * semantics of the reference kernels (kernels/cpu/reduce.c): ReduceSum,
 * ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum and ReduceLogSumExp. Float types
 * accumulate in double, integers in int64 with sums and products wrapping
 * as numpy's do (ReduceLogSumExp is computed in double for every type); a
 * NaN wins a maximum or a minimum; an empty reduction gives the
 * operator's identity: 0, 1 for the product, the lowest or highest value
 * of the type, -inf for the logs, NaN for a float mean.
 *
 * Which dimensions are reduced comes either as a bit mask fixed when the
 * plan was made (the axes attribute, or an empty axes input), or from the
 * axes input itself, read here on the device so that its value never
 * needs to be on the host: a bad axis is latched into the fault record.
 * Each output element gathers its `count` inputs through the reduced
 * dims; with many of them a block takes the element and combines through
 * warp shuffles, with few a thread does. ReduceLogSumExp makes two sweeps
 * over its inputs, the maximum first, so that exp() never overflows.
 * Launcher: kernels/cuda/reduce.c. Kernels:
 * reduce_{sum,mean,max,min,prod,l1,l2,sumsq,logsum,lse}_{block,thread}_<type>.
 */
#include "blockred.cuh"

enum {
	RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM,
	RED_LSE,
};

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

/* Float to int64 toward zero, NaN as 0, saturating: the host's cpu_f2i(). */
__device__ __forceinline__ i64 red_d2i(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return CEP_INT64_MAX;
	if (v <= -9223372036854775808.0)
		return CEP_INT64_MIN;
	return (i64)v;
}

/* Element i as a double: integers straight from int64, as the host's
 * chunk_load_d() reads them, so that large ones keep their bits. */
template <typename T> __device__ __forceinline__ double red_ld_d(const T *p, i64 i)
{
	return cep_is_float<T>::value ? (double)ld_f(p, i) : (double)ld_i(p, i);
}

/* Stores a double result: floats rounded to float first, integers
 * through int64, wrapping to the type (the host's chunk_store_d()). */
template <typename T> __device__ __forceinline__ void red_st_d(T *p, i64 i, double v)
{
	if (cep_is_float<T>::value)
		st_f(p, i, (float)v);
	else
		st_i(p, i, red_d2i(v));
}

/* What an input contributes before it is combined. */
template <int OP> __device__ __forceinline__ double red_term_d(double v)
{
	switch (OP) {
	case RED_L1: return fabs(v);
	case RED_L2:
	case RED_SUMSQ: return v * v;
	default: return v;
	}
}

/* Integers: in unsigned arithmetic, which wraps. */
template <int OP> __device__ __forceinline__ i64 red_term_i(i64 v)
{
	switch (OP) {
	case RED_L1: return (i64)(v < 0 ? (u64)0 - (u64)v : (u64)v);
	case RED_L2:
	case RED_SUMSQ: return (i64)((u64)v * (u64)v);
	default: return v;
	}
}

/* How two partial results combine; ReduceLogSumExp's sum is a sum. */
template <int OP> __device__ __forceinline__ double red_comb_d(double a, double b)
{
	switch (OP) {
	case RED_MAX: return cep_max_nan::f(a, b);
	case RED_MIN: return cep_min_nan::f(a, b);
	case RED_PROD: return a * b;
	default: return a + b;
	}
}

template <int OP> __device__ __forceinline__ i64 red_comb_i(i64 a, i64 b)
{
	switch (OP) {
	case RED_MAX: return b > a ? b : a;
	case RED_MIN: return b < a ? b : a;
	case RED_PROD: return (i64)((u64)a * (u64)b);
	default: return (i64)((u64)a + (u64)b);
	}
}

template <int OP> struct red_op_d {
	__device__ static double f(double a, double b) { return red_comb_d<OP>(a, b); }
};
template <int OP> struct red_op_i {
	__device__ static i64 f(i64 a, i64 b) { return red_comb_i<OP>(a, b); }
};

/* The result of one output element from its accumulator (and, for
 * ReduceLogSumExp, its maximum), as the host's reduce_final_d(). */
template <int OP> __device__ __forceinline__ double red_final_d(double a, double mx, i64 count)
{
	switch (OP) {
	case RED_MEAN: return a / (double)count;
	case RED_L2: return sqrt(a);
	case RED_LOGSUM: return log(a);
	case RED_LSE:
		/* All -inf (or an empty set) gives -inf; +inf gives +inf. */
		if (mx == CEP_INF_D || mx == -CEP_INF_D)
			return mx;
		return log(a) + mx;
	default: return a;
	}
}

template <int OP> __device__ __forceinline__ i64 red_final_i(i64 a, i64 count)
{
	switch (OP) {
	case RED_MEAN: return count > 0 ? a / count : 0;
	case RED_L2: return red_d2i(sqrt((double)a));
	case RED_LOGSUM: return red_d2i(log((double)a));
	default: return a;
	}
}

/* The reduction of the count inputs of one output element, from base, by
 * threads k0, k0 + kstep, ... (a block, or one thread alone); every
 * thread of a block gets the result. */
template <typename T, int OP, bool BLOCK>
__device__ __forceinline__ double red_one_d(const T *x, i64 base, const red_walk &w,
					    i64 count, i64 k0, i64 kstep)
{
	double id = OP == RED_MAX ? -CEP_INF_D : OP == RED_MIN ? CEP_INF_D
		  : OP == RED_PROD ? 1.0 : 0.0;
	double a = id, mx = 0.0;

	if (OP == RED_LSE) {
		/* The maximum first (a NaN wins), then the sum of exp(v - max):
		 * every term at most 1, computed in float like the host's. */
		mx = -CEP_INF_D;
		for (i64 k = k0; k < count; k += kstep)
			mx = cep_max_nan::f(mx, red_ld_d(x, base + red_offset(k, w.nr, w.rdim,
									      w.rstride)));
		if (BLOCK)
			mx = cep_block_reduce<cep_max_nan>(mx, -CEP_INF_D);
		for (i64 k = k0; k < count; k += kstep)
			a += expf((float)(red_ld_d(x, base + red_offset(k, w.nr, w.rdim, w.rstride)) -
					  mx));
		if (BLOCK)
			a = cep_block_reduce<cep_add>(a, 0.0);
		return red_final_d<OP>(a, mx, count);
	}
	for (i64 k = k0; k < count; k += kstep)
		a = red_comb_d<OP>(a, red_term_d<OP>(red_ld_d(x, base + red_offset(k, w.nr, w.rdim,
										       w.rstride))));
	if (BLOCK)
		a = cep_block_reduce<red_op_d<OP> >(a, id);
	return red_final_d<OP>(a, mx, count);
}

template <typename T, int OP, bool BLOCK>
__device__ __forceinline__ i64 red_one_i(const T *x, i64 base, const red_walk &w, i64 count,
					 i64 k0, i64 kstep, i64 lo, i64 hi)
{
	i64 id = OP == RED_MAX ? lo : OP == RED_MIN ? hi : OP == RED_PROD ? 1 : 0;
	i64 a = id;

	for (i64 k = k0; k < count; k += kstep)
		a = red_comb_i<OP>(a, red_term_i<OP>(ld_i(x, base + red_offset(k, w.nr, w.rdim,
										   w.rstride))));
	if (BLOCK)
		a = cep_block_reduce<red_op_i<OP> >(a, id);
	return red_final_i<OP>(a, count);
}

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

		/* Integers are reduced in int64, but for ReduceLogSumExp. */
		if (cep_is_float<T>::value || OP == RED_LSE) {
			double a = red_one_d<T, OP, BLOCK>(x, base, w, p.count, k0, kstep);

			if (!BLOCK || threadIdx.x == 0)
				red_st_d(y, o, a);
		} else {
			i64 a = red_one_i<T, OP, BLOCK>(x, base, w, p.count, k0, kstep, p.lo, p.hi);

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

/* The types every Reduce* operator takes at some opset... */
#define REDUCE_TYPES(name, OP)              \
	REDUCE_KERNEL(name, OP, float, f32) \
	REDUCE_KERNEL(name, OP, f16, f16)   \
	REDUCE_KERNEL(name, OP, bf16, bf16) \
	REDUCE_KERNEL(name, OP, i64, i64)   \
	REDUCE_KERNEL(name, OP, i32, i32)

/* ...and those only ReduceMax and ReduceMin take. */
#define REDUCE_TYPES_MINMAX(name, OP)       \
	REDUCE_TYPES(name, OP)              \
	REDUCE_KERNEL(name, OP, i8, i8)     \
	REDUCE_KERNEL(name, OP, u8, u8)     \
	REDUCE_KERNEL(name, OP, b8, bool)

REDUCE_TYPES(sum, RED_SUM)
REDUCE_TYPES(mean, RED_MEAN)
REDUCE_TYPES_MINMAX(max, RED_MAX)
REDUCE_TYPES_MINMAX(min, RED_MIN)
REDUCE_TYPES(prod, RED_PROD)
REDUCE_TYPES(l1, RED_L1)
REDUCE_TYPES(l2, RED_L2)
REDUCE_TYPES(sumsq, RED_SUMSQ)
REDUCE_TYPES(logsum, RED_LOGSUM)
REDUCE_TYPES(lse, RED_LSE)
