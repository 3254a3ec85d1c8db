/*
 * index.cuh — the kernels of index.cu (GatherND, ScatterND,
 * ScatterElements) as templates and the macros that instantiate them.
 * index.cu instantiates GatherND's per element size and the scatters for
 * the types of the first device kernels and bool; index_wide.cu the
 * scatters for float64, int16, uint16, uint32 and uint64, so that a model
 * without those never waits for their compile. What the kernels promise
 * (every index checked where it is read, the host's bits whatever the
 * order threads run in) is index.cu's comment.
 */
#ifndef CEP_CUDA_INDEX_CUH
#define CEP_CUDA_INDEX_CUH

#include "common.cuh"

/* The reductions, numbered as enum cpu_index_red (kernels/cpu/index.h). */
#define RED_NONE 0
#define RED_ADD 1
#define RED_MUL 2
#define RED_MAX 3
#define RED_MIN 4

/* Twin: struct cuda_index_nd. */
struct cep_index_nd {
	i64 n;                      /* GatherND: output elements; ScatterND: threads */
	i64 batch;                  /* product of the batch dims */
	i64 tuples;                 /* index tuples per batch */
	i64 slice;                  /* elements of one slice */
	i64 batch_elems;            /* data elements per batch */
	i64 parts;                  /* ScatterND: target parts, >= 1 */
	i32 k;                      /* tuple length */
	i32 first;                  /* data's dimension tuple entry 0 indexes */
	i64 dims[CEP_MAX_RANK];     /* (k) data's sizes along the indexed dims */
	i64 stride[CEP_MAX_RANK];   /* (k) slices per step */
};

/* The slice of its batch that index tuple t picks, or -1 (latched) when
 * an entry is out of range. */
__device__ __forceinline__ i64 cep_tuple_slice(const i64 *idx, i64 t, const cep_index_nd &p,
					       cep_fault *fault, u64 site)
{
	i64 at = 0;

	for (int d = 0; d < p.k; d++) {
		i64 v = idx[t * p.k + d], dim = p.dims[d];

		if (v < -dim || v >= dim) {
			cep_fault_latch(fault, site, p.first + d, v, dim);
			return -1;
		}
		if (v < 0)
			v += dim;
		at += v * p.stride[d];
	}
	return at;
}

/* ------------------------------------------------------------ GatherND */

template <typename T>
__device__ __forceinline__ void gather_nd(const T *data, const i64 *idx, T *out,
					  const cep_index_nd &p, cep_fault *fault, u64 site)
{
	CEP_FOR(i, p.n) {
		i64 t = i / p.slice, j = i - t * p.slice;
		i64 s = cep_tuple_slice(idx, t, p, fault, site);

		if (s < 0)
			continue;
		out[i] = data[(t / p.tuples) * p.batch_elems + s * p.slice + j];
	}
}

#define GATHER_ND_KERNEL(T, bytes)                                                       \
	extern "C" __global__ void gather_nd_##bytes(const T *data, const i64 *idx, T *out, \
						     cep_index_nd p, cep_fault *fault,      \
						     u64 site)                              \
	{                                                                                \
		gather_nd<T>(data, idx, out, p, fault, site);                            \
	}


/* ---------------------------------------------------------- reductions */

/* Combines update element ui of upd into element oi of out as the host's
 * reference does: floats in float, float64 in double (NaN wins max and
 * min), integers in int64 wrapping (uint64 ordered as unsigned), then
 * stored back in T. */
template <int R, typename T>
__device__ __forceinline__ void cep_combine(T *out, i64 oi, const T *upd, i64 ui)
{
	if (R == RED_NONE) {
		out[oi] = upd[ui];
	} else if (cep_is_f64<T>::value) {
		double a = ld_d(out, oi), b = ld_d(upd, ui), r;

		if (R == RED_ADD)
			r = __dadd_rn(a, b);
		else if (R == RED_MUL)
			r = __dmul_rn(a, b);
		else if (R == RED_MAX)
			r = (a != a || a > b) ? a : b;
		else
			r = (a != a || a < b) ? a : b;
		st_d(out, oi, r);
	} else if (cep_is_float<T>::value) {
		float a = ld_f(out, oi), b = ld_f(upd, ui), r;

		if (R == RED_ADD)
			r = __fadd_rn(a, b);
		else if (R == RED_MUL)
			r = __fmul_rn(a, b);
		else if (R == RED_MAX)
			r = (a != a || a > b) ? a : b;
		else
			r = (a != a || a < b) ? a : b;
		st_f(out, oi, r);
	} else {
		i64 a = ld_i(out, oi), b = ld_i(upd, ui), r;

		if (R == RED_ADD)
			r = (i64)((u64)a + (u64)b);
		else if (R == RED_MUL)
			r = (i64)((u64)a * (u64)b);
		else if (R == RED_MAX)
			r = cep_lt_i<T>(b, a) ? a : b;
		else
			r = cep_lt_i<T>(a, b) ? a : b;
		st_i(out, oi, r);
	}
}

/* ----------------------------------------------------------- ScatterND */

template <int R, typename T>
__device__ __forceinline__ void scatter_nd(const i64 *idx, const T *upd, T *out,
					   const cep_index_nd &p, cep_fault *fault, u64 site)
{
	CEP_FOR(i, p.n) {
		i64 part = i / p.slice, j = i - part * p.slice;

		for (i64 t = 0; t < p.tuples; t++) {
			i64 s = cep_tuple_slice(idx, t, p, fault, site);

			if (s < 0 || s % p.parts != part)
				continue;
			cep_combine<R, T>(out, s * p.slice + j, upd, t * p.slice + j);
		}
	}
}

#define SCATTER_ND_KERNEL(R, rname, T, tname)                                            \
	extern "C" __global__ void scatter_nd_##rname##_##tname(                         \
		const i64 *idx, const T *upd, T *out, cep_index_nd p, cep_fault *fault, \
		u64 site)                                                                \
	{                                                                                \
		scatter_nd<R, T>(idx, upd, out, p, fault, site);                         \
	}

/* ----------------------------------------------------- ScatterElements */

/* Twin: struct cuda_scatter_elements. */
struct cep_scatter_elements {
	i64 n;                      /* threads: lines times parts */
	i64 lines;                  /* lines of the updates along the axis */
	i64 len;                    /* updates' size along the axis */
	i64 inner;                  /* updates' elements after the axis */
	i64 dim;                    /* data's size along the axis */
	i64 parts;                  /* target parts, >= 1 */
	i32 rank;
	i32 axis;
	i64 udims[CEP_MAX_RANK];    /* (rank) the updates' (and indices') dims */
	i64 dstride[CEP_MAX_RANK];  /* (rank) data's element strides */
};

template <int R, typename T, typename I>
__device__ __forceinline__ void scatter_elements(const I *idx, const T *upd, T *out,
						 const cep_scatter_elements &p,
						 cep_fault *fault, u64 site)
{
	CEP_FOR(i, p.n) {
		i64 part = i / p.lines, l = i - part * p.lines;
		i64 outer = l / p.inner, in = l - outer * p.inner;
		i64 at = outer * p.len * p.inner + in, base = 0, t = l;

		/* The line's coordinates but the axis, from the innermost out. */
		for (int d = p.rank - 1; d >= 0; d--) {
			if (d == p.axis)
				continue;
			i64 q = t / p.udims[d];

			base += (t - q * p.udims[d]) * p.dstride[d];
			t = q;
		}
		for (i64 a = 0; a < p.len; a++, at += p.inner) {
			i64 v = (i64)idx[at];

			if (v < -p.dim || v >= p.dim) {
				cep_fault_latch(fault, site, p.axis, v, p.dim);
				continue;
			}
			if (v < 0)
				v += p.dim;
			if (v % p.parts == part)
				cep_combine<R, T>(out, base + v * p.dstride[p.axis], upd, at);
		}
	}
}

#define SCATTER_ELEMENTS_KERNEL(R, rname, T, tname, I, iname)                            \
	extern "C" __global__ void scatter_elements_##rname##_##tname##_##iname(         \
		const I *idx, const T *upd, T *out, cep_scatter_elements p,             \
		cep_fault *fault, u64 site)                                              \
	{                                                                                \
		scatter_elements<R, T, I>(idx, upd, out, p, fault, site);                \
	}

#define SCATTER_TYPE(T, tname)                                                         \
	SCATTER_ND_KERNEL(RED_NONE, none, T, tname)                                    \
	SCATTER_ND_KERNEL(RED_ADD, add, T, tname)                                      \
	SCATTER_ND_KERNEL(RED_MUL, mul, T, tname)                                      \
	SCATTER_ND_KERNEL(RED_MAX, max, T, tname)                                      \
	SCATTER_ND_KERNEL(RED_MIN, min, T, tname)                                      \
	SCATTER_ELEMENTS_KERNEL(RED_NONE, none, T, tname, i32, i32)                    \
	SCATTER_ELEMENTS_KERNEL(RED_ADD, add, T, tname, i32, i32)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MUL, mul, T, tname, i32, i32)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MAX, max, T, tname, i32, i32)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MIN, min, T, tname, i32, i32)                      \
	SCATTER_ELEMENTS_KERNEL(RED_NONE, none, T, tname, i64, i64)                    \
	SCATTER_ELEMENTS_KERNEL(RED_ADD, add, T, tname, i64, i64)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MUL, mul, T, tname, i64, i64)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MAX, max, T, tname, i64, i64)                      \
	SCATTER_ELEMENTS_KERNEL(RED_MIN, min, T, tname, i64, i64)

#endif
