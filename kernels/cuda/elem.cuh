/*
 * elem.cuh — what the elementwise families of kernels/cuda share: numpy
 * broadcasting of up to CEP_BCASTN_MAX operands, each described by the
 * dims it broadcasts along (compare.cu's Where, variadic.cu; twin on the
 * host: struct cuda_bcastn of kernels/cuda/launch.h, filled by
 * cuda_bcastn_init()), and the contiguous fast paths (cep_map2) of the
 * common layouts, chosen by the launchers at plan time: operands of the
 * output's shape, a row vector over the last dim, a single element; and
 * the warp-per-row layout of the row kernels (cep_row_load).
 */
#ifndef CEP_CUDA_ELEM_CUH
#define CEP_CUDA_ELEM_CUH

#include "common.cuh"

#define CEP_BCASTN_MAX 8

struct cep_bcastn {
	i32 rank;                       /* >= 1 */
	i32 n_in;                       /* <= CEP_BCASTN_MAX */
	i64 n;                          /* output elements */
	i64 dims[CEP_MAX_RANK];         /* (rank) */
	u32 bmask[CEP_BCASTN_MAX];      /* (n_in) bit d: broadcast along dim d */
};

/* Where output element i reads each operand, into off (N of them, the
 * first p.n_in meaningful; N fixed per kernel so that the arrays stay in
 * registers). An operand walks the dims it does not broadcast along
 * contiguously, so its stride along a dim is the product of its dims
 * inside that one. */
template <int N>
__device__ __forceinline__ void cep_bcastn_at(const cep_bcastn &p, i64 i, i64 *off)
{
	i64 stride[N];

#pragma unroll
	for (int k = 0; k < N; k++) {
		off[k] = 0;
		stride[k] = 1;
	}
	for (int d = p.rank - 1; d >= 0; d--) {
		i64 q = i / p.dims[d];
		i64 c = i - q * p.dims[d];

#pragma unroll
		for (int k = 0; k < N; k++) {
			if (k < p.n_in && ((p.bmask[k] >> d) & 1u) == 0) {
				off[k] += c * stride[k];
				stride[k] *= p.dims[d];
			}
		}
		i = q;
	}
}

/* ------------------------------------------------------- fast paths */

/*
 * How an operand of a fast path is read for output element i of an
 * output seen as rows of cols: at i (the output's shape), at i % cols (a
 * row vector broadcast over the rows), at 0 (a single element), or not at
 * all (the second operand of a function of one). Twin: enum
 * cuda_opnd_mode of kernels/cuda/launch.h.
 */
enum { CEP_OPND_FULL, CEP_OPND_ROW, CEP_OPND_SCALAR, CEP_OPND_NONE };

/* The unsigned type of B bytes, for one load or store of a vector. */
template <int B> struct cep_raw;
template <> struct cep_raw<16> { typedef uint4 t; };
template <> struct cep_raw<8> { typedef uint2 t; };
template <> struct cep_raw<4> { typedef u32 t; };
template <> struct cep_raw<2> { typedef u16 t; };
template <> struct cep_raw<1> { typedef u8 t; };

/* V elements of T moved as one access. */
template <typename T, int V> union cep_vec {
	typename cep_raw<V * sizeof(T)>::t raw;
	T e[V];
};

/* Elements per vector: 16 bytes of the wider of the operand and output
 * types, so that both sides move whole vectors. */
template <typename A, typename O> struct cep_width {
	enum { V = 16 / (sizeof(A) > sizeof(O) ? sizeof(A) : sizeof(O)) };
};

/* Whether p may be read or written V elements of T at a time. */
template <typename T, int V> __device__ __forceinline__ bool cep_vec_aligned(const void *p)
{
	return (u64)p % (V * sizeof(T)) == 0;
}

/* Where operand p of mode M is read for output element i of column col. */
template <int M> __device__ __forceinline__ i64 cep_opnd_at(i64 i, i64 col)
{
	return M == CEP_OPND_FULL ? i : M == CEP_OPND_ROW ? col : 0;
}

/*
 * o[i] = f(a, b) for the n elements of an output seen as rows of cols
 * (cols >= 1), operands read as their modes MA and MB say: f(pa, ia, pb,
 * ib, po, io) computes element io of po from element ia of pa and ib of
 * pb. A single-element operand is read once, into a register. When every
 * pointer is aligned to a vector (and a row operand's rows are whole
 * vectors), threads move V elements per access; the tail, or everything
 * otherwise, goes one element at a time. The choice is the same for
 * every thread, made once per launch. Columns advance by addition: no
 * division inside the loops.
 */
template <typename A, typename O, int MA, int MB, typename F>
__device__ __forceinline__ void cep_map2(const A *a, const A *b, O *o, i64 n, i64 cols, F f)
{
	const int V = cep_width<A, O>::V;
	const bool row = MA == CEP_OPND_ROW || MB == CEP_OPND_ROW;
	typedef typename cep_raw<V * sizeof(A)>::t RA;
	typedef typename cep_raw<V * sizeof(O)>::t RO;
	i64 t0 = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	i64 step = (i64)gridDim.x * blockDim.x;
	i64 done = 0;
	A sa[1], sb[1];

	if (n <= 0)
		return;
	if (MA == CEP_OPND_SCALAR)
		sa[0] = a[0];
	if (MB == CEP_OPND_SCALAR)
		sb[0] = b[0];
	if (V > 1 && cep_vec_aligned<O, V>(o) &&
	    (MA == CEP_OPND_SCALAR || MA == CEP_OPND_NONE || cep_vec_aligned<A, V>(a)) &&
	    (MB == CEP_OPND_SCALAR || MB == CEP_OPND_NONE || cep_vec_aligned<A, V>(b)) &&
	    (!row || cols % V == 0)) {
		i64 nv = n / V, cv = row ? cols / V : 1;
		i64 c = row ? t0 % cv : 0, cstep = row ? step % cv : 0;

		for (i64 j = t0; j < nv; j += step) {
			cep_vec<A, V> va, vb;
			cep_vec<O, V> vo;

			if (MA == CEP_OPND_FULL || MA == CEP_OPND_ROW)
				va.raw = ((const RA *)a)[MA == CEP_OPND_FULL ? j : c];
			if (MB == CEP_OPND_FULL || MB == CEP_OPND_ROW)
				vb.raw = ((const RA *)b)[MB == CEP_OPND_FULL ? j : c];
#pragma unroll
			for (int k = 0; k < V; k++)
				f(MA == CEP_OPND_SCALAR ? sa : va.e, MA == CEP_OPND_SCALAR ? 0 : k,
				  MB == CEP_OPND_SCALAR ? sb : vb.e, MB == CEP_OPND_SCALAR ? 0 : k,
				  vo.e, k);
			((RO *)o)[j] = vo.raw;
			if (row) {
				c += cstep;
				if (c >= cv)
					c -= cv;
			}
		}
		done = nv * V;
	}
	{
		i64 c = row ? (done + t0) % cols : 0, cstep = row ? step % cols : 0;

		for (i64 i = done + t0; i < n; i += step) {
			f(MA == CEP_OPND_SCALAR ? sa : a, cep_opnd_at<MA>(i, c),
			  MB == CEP_OPND_SCALAR ? sb : b, cep_opnd_at<MB>(i, c), o, i);
			if (row) {
				c += cstep;
				if (c >= cols)
					c -= cols;
			}
		}
	}
}

/* o[i] = f(a[i]) for n elements: cep_map2 with no second operand; f(pa,
 * ia, po, io) computes element io of po from element ia of pa. */
template <typename F> struct cep_fn1 {
	F f;
	template <typename A, typename O>
	__device__ __forceinline__ void operator()(const A *pa, i64 ia, const A *, i64, O *po,
						   i64 io) const
	{
		f(pa, ia, po, io);
	}
};

template <typename A, typename O, typename F>
__device__ __forceinline__ void cep_map1(const A *a, O *o, i64 n, F f)
{
	cep_fn1<F> g = { f };

	cep_map2<A, O, CEP_OPND_FULL, CEP_OPND_NONE>(a, (const A *)0, o, n, 1, g);
}

/* --------------------------------------------------------- warp rows */

/*
 * A row of up to 32 * V * NV elements held by one warp: lane l keeps
 * vectors k = 0..NV-1, the elements (k * 32 + l) * V + e for e < V, as
 * float (rows are whole vectors: cols % V == 0). cep_row_load() reads
 * them, 16 bytes per access when vec (the row's start aligned), else an
 * element at a time; elements past cols read as fill.
 */
/* Vector k of the layout: cep_row_load() for one k. */
template <typename T, int V>
__device__ __forceinline__ void cep_row_load1(const T *row, i64 cols, bool vec, int k,
					      float (&v)[V], float fill)
{
	typedef typename cep_raw<V * sizeof(T)>::t R;
	i64 at = ((i64)k * 32 + (threadIdx.x & 31)) * V;
	cep_vec<T, V> t;

	if (at >= cols) {
#pragma unroll
		for (int e = 0; e < V; e++)
			v[e] = fill;
		return;
	}
	if (vec) {
		t.raw = *(const R *)(row + at);
	} else {
#pragma unroll
		for (int e = 0; e < V; e++)
			t.e[e] = row[at + e];
	}
#pragma unroll
	for (int e = 0; e < V; e++)
		v[e] = ld_f(t.e, e);
}

template <typename T, int V, int NV>
__device__ __forceinline__ void cep_row_load(const T *row, i64 cols, bool vec, float (&v)[NV][V],
					     float fill)
{
#pragma unroll
	for (int k = 0; k < NV; k++)
		cep_row_load1<T, V>(row, cols, vec, k, v[k], fill);
}

/* Stores the elements of cep_row_load()'s layout that lie in the row,
 * converting from float as st_f() does. */
template <typename T, int V, int NV>
__device__ __forceinline__ void cep_row_store(T *row, i64 cols, bool vec, const float (&v)[NV][V])
{
	typedef typename cep_raw<V * sizeof(T)>::t R;
	int lane = threadIdx.x & 31;

#pragma unroll
	for (int k = 0; k < NV; k++) {
		i64 at = ((i64)k * 32 + lane) * V;
		cep_vec<T, V> t;

		if (at >= cols)
			continue;
#pragma unroll
		for (int e = 0; e < V; e++)
			st_f(t.e, e, v[k][e]);
		if (vec) {
			*(R *)(row + at) = t.raw;
		} else {
#pragma unroll
			for (int e = 0; e < V; e++)
				row[at + e] = t.e[e];
		}
	}
}

#endif
