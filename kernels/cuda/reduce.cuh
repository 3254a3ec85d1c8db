/*
 * reduce.cuh — the kernels of reduce.cu (the Reduce* operators) as
 * templates and the macro that instantiates them per type. reduce.cu
 * instantiates them for float32, float16, bfloat16, int64 and int32 (and
 * int8, uint8, bool for ReduceMax and ReduceMin); reduce_wide.cu for
 * float64, uint32 and uint64, so that a model without those never waits
 * for their compile.
 */
#ifndef CEP_CUDA_REDUCE_CUH
#define CEP_CUDA_REDUCE_CUH

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

/* Element i as a double, as the host's chunk_load_d() reads it. */
template <typename T> __device__ __forceinline__ double red_ld_d(const T *p, i64 i)
{
	return ld_d(p, i);
}

/* Stores a double result as the host's chunk_store_d() does: float types
 * rounded once, integers truncated (saturating) and wrapped to the type. */
template <typename T> __device__ __forceinline__ void red_st_d(T *p, i64 i, double v)
{
	st_d(p, i, v);
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

/* Integers of T: in unsigned arithmetic, which wraps; an unsigned value
 * is its own absolute value. */
template <typename T, int OP> __device__ __forceinline__ i64 red_term_i(i64 v)
{
	switch (OP) {
	case RED_L1:
		return (i64)(v < 0 && !cep_is_unsigned<T>::value ? (u64)0 - (u64)v : (u64)v);
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

template <typename T, int OP> __device__ __forceinline__ i64 red_comb_i(i64 a, i64 b)
{
	switch (OP) {
	case RED_MAX: return cep_lt_i<T>(a, b) ? b : a;
	case RED_MIN: return cep_lt_i<T>(b, a) ? b : a;
	case RED_PROD: return (i64)((u64)a * (u64)b);
	default: return (i64)((u64)a + (u64)b);
	}
}

template <int OP> struct red_op_d {
	__device__ static double f(double a, double b) { return red_comb_d<OP>(a, b); }
};
template <typename T, int OP> struct red_op_i {
	__device__ static i64 f(i64 a, i64 b) { return red_comb_i<T, OP>(a, b); }
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

/* As the host's reduce_final_i(): a is a value of T as ld_i() gives it. */
template <typename T, int OP> __device__ __forceinline__ i64 red_final_i(i64 a, i64 count)
{
	double d = cep_is_u64<T>::value ? (double)(u64)a : (double)a;

	switch (OP) {
	case RED_MEAN:
		if (count <= 0)
			return 0;
		return cep_is_u64<T>::value ? (i64)((u64)a / (u64)count) : a / count;
	case RED_L2: return cep_d2u(sqrt(d));
	case RED_LOGSUM: return cep_d2u(log(d));
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
		 * every term at most 1, computed in float like the host's
		 * (in double for float64). */
		mx = -CEP_INF_D;
		for (i64 k = k0; k < count; k += kstep)
			mx = cep_max_nan::f(mx, red_ld_d(x, base + red_offset(k, w.nr, w.rdim,
									      w.rstride)));
		if (BLOCK)
			mx = cep_block_reduce<cep_max_nan>(mx, -CEP_INF_D);
		for (i64 k = k0; k < count; k += kstep) {
			double d = red_ld_d(x, base + red_offset(k, w.nr, w.rdim, w.rstride)) - mx;

			a += cep_is_f64<T>::value ? exp(d) : expf((float)d);
		}
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
		a = red_comb_i<T, OP>(a, red_term_i<T, OP>(ld_i(x, base + red_offset(k, w.nr, w.rdim,
											 w.rstride))));
	if (BLOCK)
		a = cep_block_reduce<red_op_i<T, OP> >(a, id);
	return red_final_i<T, OP>(a, count);
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
		if (cep_is_float<T>::value || cep_is_f64<T>::value || OP == RED_LSE) {
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

#endif
