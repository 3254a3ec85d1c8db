/*
 * select.cu — the selections of kernels/cpu/select.c on the device, by
 * count and scan: NonZero's coordinates, and Compress's slices through
 * the positions of its condition's true entries.
 *
 * Two passes over the input, cut into one chunk per block: select_count
 * counts each chunk's nonzero elements into the workspace; select_write
 * gives each block the sum of the chunks before its own (and the total,
 * checked against the plan's count: a mismatch is latched into the fault
 * record as CEP_FAULT_SHAPE and nothing is written), then walks its chunk
 * a block-wide tile at a time, where scan.cuh's ballot scan places every
 * nonzero element at its rank among all of them. Element e's coordinates (row-major in dims) go to column rank of
 * the (rank, count) output; with one dim of the input's length that is e
 * itself, Compress's map from output slice to input slice, which
 * compress_gather then follows, a thread per output element, moving raw
 * units of the element's size. Launcher: kernels/cuda/select.c. Kernels:
 * select_count_<type>, select_write_<type>, compress_gather_<bytes>.
 */
#include "blockred.cuh"
#include "scan.cuh"

/* Twin: struct cuda_select. */
struct cep_select {
	i64 n;                  /* elements counted */
	i64 chunk;              /* of them per block, a multiple of the block */
	i64 count;              /* nonzero ones, as the plan has it */
	i32 rank;               /* coordinates per element */
	i32 axis;               /* the output dim count is the extent of */
	i64 dims[CEP_MAX_RANK]; /* (rank) the shape coordinates are taken in */
};

template <typename T> __device__ __forceinline__ bool select_nonzero(const T *x, i64 i)
{
	if (cep_is_float<T>::value)
		return ld_f(x, i) != 0.0f;
	return ld_i(x, i) != 0;
}

template <typename T>
__device__ __forceinline__ void select_count(const T *x, i64 *counts, const cep_select &p)
{
	i64 start = (i64)blockIdx.x * p.chunk, end = start + p.chunk < p.n ? start + p.chunk : p.n;
	i64 c = 0;

	for (i64 e = start + threadIdx.x; e < end; e += blockDim.x)
		c += select_nonzero(x, e);
	c = cep_block_reduce<cep_add>(c, (i64)0);
	if (threadIdx.x == 0)
		counts[blockIdx.x] = c;
}

template <typename T>
__device__ __forceinline__ void select_write(const T *x, const i64 *counts, i64 *out,
					     const cep_select &p, cep_fault *fault, u64 site)
{
	i64 start = (i64)blockIdx.x * p.chunk, end = start + p.chunk < p.n ? start + p.chunk : p.n;
	i64 before = 0, total = 0;

	for (i64 b = threadIdx.x; b < (i64)gridDim.x; b += blockDim.x) {
		total += counts[b];
		if (b < (i64)blockIdx.x)
			before += counts[b];
	}
	total = cep_block_reduce<cep_add>(total, (i64)0);
	before = cep_block_reduce<cep_add>(before, (i64)0);
	if (total != p.count) {
		if (blockIdx.x == 0 && threadIdx.x == 0)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, total, p.count);
		return;
	}
	/* The tiles are the same for every thread, so each reaches the scan. */
	for (i64 base = start; base < end; base += blockDim.x) {
		i64 e = base + threadIdx.x;
		bool nz = e < end && select_nonzero(x, e);
		i32 tile;
		i32 at = cep_block_scan_flags(nz, &tile);

		if (nz) {
			i64 j = before + at, q = e;

			for (int d = p.rank - 1; d >= 0; d--) {
				i64 next = q / p.dims[d];

				out[d * p.count + j] = q - next * p.dims[d];
				q = next;
			}
		}
		before += tile;
	}
}

#define SELECT_KERNELS(T, sfx)                                                               \
	extern "C" __global__ void select_count_##sfx(const T *x, i64 *counts, cep_select p)   \
	{ select_count<T>(x, counts, p); }                                                    \
	extern "C" __global__ void select_write_##sfx(const T *x, const i64 *counts, i64 *out, \
						      cep_select p, cep_fault *fault, u64 site) \
	{ select_write<T>(x, counts, out, p, fault, site); }

SELECT_KERNELS(float, f32)
SELECT_KERNELS(f16, f16)
SELECT_KERNELS(bf16, bf16)
SELECT_KERNELS(i64, i64)
SELECT_KERNELS(i32, i32)
SELECT_KERNELS(i8, i8)
SELECT_KERNELS(u8, u8)
SELECT_KERNELS(b8, bool)

/* --------------------------------------------------------------- Compress */

/* The input as (outer, len, inner) slices, the output as (outer, count,
 * inner): output slice k is input slice map[k]. A map entry out of range
 * (the map was not written: the count did not match) writes nothing. */
template <typename U>
__device__ __forceinline__ void compress_gather(const U *x, const i64 *map, U *y, i64 count,
						i64 len, i64 inner, i64 total)
{
	CEP_FOR(i, total) {
		i64 r = i / inner, in = i - r * inner, o = r / count, k = r - o * count;
		i64 j = map[k];

		if (j >= 0 && j < len)
			y[i] = x[(o * len + j) * inner + in];
	}
}

#define GATHER_KERNEL(U, bytes)                                                              \
	extern "C" __global__ void compress_gather_##bytes(const U *x, const i64 *map, U *y,    \
							   i64 count, i64 len, i64 inner,       \
							   i64 total)                           \
	{ compress_gather<U>(x, map, y, count, len, inner, total); }

GATHER_KERNEL(u8, 1)
GATHER_KERNEL(u16, 2)
GATHER_KERNEL(u32, 4)
GATHER_KERNEL(u64, 8)
