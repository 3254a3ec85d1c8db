/*
 * unique.cu — Unique on the device, with the reference kernel's order and
 * grouping (kernels/cpu/unique.c): items (elements, or slices along the
 * axis) compare lexicographically as numbers, -0 equal to 0, NaN equal to
 * NaN and after every number, ties by position. Simple rather than fast:
 * sorting n items of s elements costs n * n * s comparisons.
 *
 *   unique_rank_<type>   a thread per item counts the items before it in
 *                        that order: its rank, and its place in the
 *                        sorted order;
 *   unique_heads_<type>  marks the sorted positions where a new value
 *                        starts;
 *   unique_scan          one block numbers the groups (scan.cuh), notes
 *                        where each starts and its first item, and checks
 *                        the count against the plan's: a mismatch latches
 *                        CEP_FAULT_SHAPE, and the later kernels, which
 *                        read the count, write nothing;
 *   unique_place         gives each group its place in Y: its number
 *                        (sorted), or the count of groups seen first
 *                        before it;
 *   unique_write_<bytes> writes Y, a thread per element, raw units;
 *   unique_write_index   writes indices, inverse_indices and counts,
 *                        those the model names.
 *
 * Launcher: kernels/cuda/unique.c, which lays out the workspace.
 */
#include "scan.cuh"

/* Twin: struct cuda_unique. */
struct cep_unique {
	i64 n, outer, inner;    /* n items of outer x inner elements */
	i64 count;              /* groups, as the plan has it */
	i32 sorted;
	i32 axis;               /* Y's dim the groups run along */
};

/* The workspace, n + 1 entries each where n is the item count. */
struct cep_unique_ws {
	i64 *rank;              /* item -> sorted position */
	i64 *order;             /* sorted position -> item */
	i64 *gid;               /* sorted position -> group */
	i64 *start;             /* group -> its first sorted position; [groups] = n */
	i64 *first;             /* group -> its first item */
	i64 *pos;               /* group -> place in Y */
	i64 *yorder;            /* place in Y -> group */
	i64 *groups;            /* [0]: the groups counted */
};

template <typename T> __device__ __forceinline__ int unique_cmp_elem(const T *x, i64 e, i64 f)
{
	if (cep_is_float<T>::value) {
		float a = ld_f(x, e), b = ld_f(x, f);
		bool na = a != a, nb = b != b;

		if (na || nb)
			return na == nb ? 0 : na ? 1 : -1;
		return a < b ? -1 : a > b ? 1 : 0;
	}
	i64 a = ld_i(x, e), b = ld_i(x, f);

	return a < b ? -1 : a > b ? 1 : 0;
}

template <typename T>
__device__ __forceinline__ int unique_cmp(const T *x, const cep_unique &p, i64 a, i64 b)
{
	for (i64 o = 0; o < p.outer; o++) {
		for (i64 r = 0; r < p.inner; r++) {
			int c = unique_cmp_elem(x, (o * p.n + a) * p.inner + r,
						(o * p.n + b) * p.inner + r);

			if (c != 0)
				return c;
		}
	}
	return 0;
}

template <typename T>
__device__ __forceinline__ void unique_rank(const T *x, cep_unique_ws w, const cep_unique &p)
{
	CEP_FOR(i, p.n) {
		i64 r = 0;

		for (i64 j = 0; j < p.n; j++) {
			int c = j == i ? 0 : unique_cmp(x, p, j, i);

			r += c < 0 || (c == 0 && j < i);
		}
		w.rank[i] = r;
		w.order[r] = i;
	}
}

template <typename T>
__device__ __forceinline__ void unique_heads(const T *x, cep_unique_ws w, const cep_unique &p)
{
	CEP_FOR(k, p.n)
		w.gid[k] = k == 0 || unique_cmp(x, p, w.order[k - 1], w.order[k]) != 0;
}

#define UNIQUE_TYPE_KERNELS(T, sfx)                                                        \
	extern "C" __global__ void unique_rank_##sfx(const T *x, cep_unique_ws w, cep_unique p) \
	{ unique_rank<T>(x, w, p); }                                                        \
	extern "C" __global__ void unique_heads_##sfx(const T *x, cep_unique_ws w, cep_unique p) \
	{ unique_heads<T>(x, w, p); }

UNIQUE_TYPE_KERNELS(float, f32)
UNIQUE_TYPE_KERNELS(f16, f16)
UNIQUE_TYPE_KERNELS(bf16, bf16)
UNIQUE_TYPE_KERNELS(i64, i64)
UNIQUE_TYPE_KERNELS(i32, i32)
UNIQUE_TYPE_KERNELS(i8, i8)
UNIQUE_TYPE_KERNELS(u8, u8)
UNIQUE_TYPE_KERNELS(b8, bool)

/* One block: the heads' running count, tile by tile, is each sorted
 * position's group. */
extern "C" __global__ void unique_scan(cep_unique_ws w, cep_unique p, cep_fault *fault, u64 site)
{
	i64 before = 0;

	for (i64 base = 0; base < p.n; base += blockDim.x) {
		i64 k = base + threadIdx.x;
		bool head = k < p.n && w.gid[k] != 0;
		i32 tile;
		i32 at = cep_block_scan_flags(head, &tile);

		if (k < p.n) {
			i64 g = before + at + (head ? 0 : -1);

			w.gid[k] = g;
			if (head) {
				w.start[g] = k;
				w.first[g] = w.order[k];
			}
		}
		before += tile;
	}
	if (threadIdx.x == 0) {
		w.start[before] = p.n;
		w.groups[0] = before;
		if (before != p.count)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, before, p.count);
	}
}

extern "C" __global__ void unique_place(cep_unique_ws w, cep_unique p)
{
	if (w.groups[0] != p.count)
		return;
	CEP_FOR(g, p.count) {
		i64 at = g;

		if (!p.sorted) {
			at = 0;
			for (i64 h = 0; h < p.count; h++)
				at += w.first[h] < w.first[g];
		}
		w.pos[g] = at;
		w.yorder[at] = g;
	}
}

template <typename U>
__device__ __forceinline__ void unique_write(const U *x, cep_unique_ws w, U *y,
					     const cep_unique &p)
{
	if (w.groups[0] != p.count)
		return;
	CEP_FOR(e, p.outer * p.count * p.inner) {
		i64 r = e % p.inner, q = (e / p.inner) % p.count, o = e / (p.inner * p.count);

		y[e] = x[(o * p.n + w.first[w.yorder[q]]) * p.inner + r];
	}
}

#define UNIQUE_WRITE_KERNEL(U, bytes)                                                       \
	extern "C" __global__ void unique_write_##bytes(const U *x, cep_unique_ws w, U *y,     \
							cep_unique p)                          \
	{ unique_write<U>(x, w, y, p); }

UNIQUE_WRITE_KERNEL(u8, 1)
UNIQUE_WRITE_KERNEL(u16, 2)
UNIQUE_WRITE_KERNEL(u32, 4)
UNIQUE_WRITE_KERNEL(u64, 8)

/* Any of the three outputs may be NULL: the model did not name it. */
extern "C" __global__ void unique_write_index(cep_unique_ws w, i64 *indices, i64 *inverse,
					      i64 *counts, cep_unique p)
{
	if (w.groups[0] != p.count)
		return;
	CEP_FOR(t, p.count > p.n ? p.count : p.n) {
		if (t < p.count) {
			i64 g = w.yorder[t];

			if (indices != 0)
				indices[t] = w.first[g];
			if (counts != 0)
				counts[t] = w.start[g + 1] - w.start[g];
		}
		if (t < p.n && inverse != 0)
			inverse[t] = w.pos[w.gid[w.rank[t]]];
	}
}
