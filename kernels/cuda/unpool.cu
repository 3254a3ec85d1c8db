/*
 * unpool.cu — MaxUnpool on the device, in three passes over a workspace
 * of one int64 per output element: unpool_clear zeroes the output and
 * marks every position unclaimed (-1); unpool_claim gives each element of
 * X its position (its index's coordinates in the inferred shape, placed
 * in the output's, as kernels/cpu/unpool.c does) and claims it with
 * atomicMax of its own element number, so the latest element wins as it
 * does on the host; unpool_write lets each winner write itself. An index
 * outside the inferred shape latches CEP_FAULT_INDEX and claims nothing.
 * Elements move as raw units of their size. Launcher: kernels/cuda/unpool.c.
 * Kernels: unpool_clear_<bytes>, unpool_claim, unpool_write_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_unpool. */
struct cep_unpool {
	i32 rank;
	i32 pad;
	i64 n;                          /* elements of X */
	i64 total;                      /* of the inferred shape */
	i64 out_n;                      /* of the output */
	i64 istride[CEP_MAX_RANK];      /* (rank) strides of the inferred shape */
	i64 odims[CEP_MAX_RANK];        /* (rank) the output's dims */
};

/* Where index v lands in the output. */
__device__ __forceinline__ i64 unpool_at(const cep_unpool &p, i64 v)
{
	i64 o = 0;

	for (int d = 0; d < p.rank; d++) {
		o = o * p.odims[d] + v / p.istride[d];
		v -= (v / p.istride[d]) * p.istride[d];
	}
	return o;
}

template <typename U> __device__ __forceinline__ void unpool_clear(U *y, i64 *win, i64 n)
{
	CEP_FOR(i, n) {
		U zero = {};

		y[i] = zero;
		win[i] = -1;
	}
}

extern "C" __global__ void unpool_claim(const i64 *idx, i64 *win, cep_unpool p, cep_fault *fault,
					u64 site)
{
	CEP_FOR(e, p.n) {
		i64 v = idx[e];

		if (v < 0 || v >= p.total) {
			cep_fault_latch(fault, site, 0, v, p.total);
			continue;
		}
		atomicMax((long long *)&win[unpool_at(p, v)], (long long)e);
	}
}

template <typename U>
__device__ __forceinline__ void unpool_write(const U *x, const i64 *idx, const i64 *win, U *y,
					     const cep_unpool &p)
{
	CEP_FOR(e, p.n) {
		i64 v = idx[e];

		if (v < 0 || v >= p.total)
			continue;
		i64 o = unpool_at(p, v);

		if (win[o] == e)
			y[o] = x[e];
	}
}

#define UNPOOL_KERNELS(U, bytes)                                                            \
	extern "C" __global__ void unpool_clear_##bytes(U *y, i64 *win, i64 n)                 \
	{ unpool_clear<U>(y, win, n); }                                                      \
	extern "C" __global__ void unpool_write_##bytes(const U *x, const i64 *idx,            \
							const i64 *win, U *y, cep_unpool p)    \
	{ unpool_write<U>(x, idx, win, y, p); }

UNPOOL_KERNELS(u16, 2)
UNPOOL_KERNELS(u32, 4)
