/*
 * topk.cu — TopK by counting: a thread per input element counts the
 * elements of its column (the elements along the axis at its other
 * coordinates) that go before it, under the reference kernel's total
 * order (kernels/cpu/topk.c: larger first, or smaller first for largest
 * = 0; a NaN larger than every number; ties to the lower index). That
 * count is its place in the sorted column, so an element whose count
 * stays below k writes itself (a raw unit of its size) and its index
 * there, and one that finds k elements before it stops looking. Simple
 * rather than fast: a column of n costs up to n * n comparisons when k
 * is near n.
 *
 * k, an int64 input from opset 10, is read here on the device and checked
 * against the plan's: a mismatch is latched into the fault record
 * (CEP_FAULT_SHAPE) and nothing is written. Launcher: kernels/cuda/topk.c.
 * Kernels: topk_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_topk. */
struct cep_topk {
	i64 outer, n, inner;        /* the input as (outer, n, inner) */
	i64 k;                      /* the plan's */
	i32 axis;
	i32 largest;
};

template <typename V> __device__ __forceinline__ bool topk_nan(V v) { return v != v; }

/* Whether element a (position ia) goes before element b (position ib). */
template <typename V>
__device__ __forceinline__ bool topk_before(V a, i64 ia, V b, i64 ib, bool largest)
{
	bool na = topk_nan(a), nb = topk_nan(b);

	if (na || nb)
		return na && nb ? ia < ib : largest ? na : nb;
	if (a != b)
		return largest ? a > b : a < b;
	return ia < ib;
}

template <typename T, typename V> __device__ __forceinline__ V topk_load(const T *x, i64 i)
{
	if (cep_is_f64<T>::value)
		return (V)ld_d(x, i);
	if (cep_is_float<T>::value)
		return (V)ld_f(x, i);
	return (V)ld_i(x, i);   /* uint64: its bits, compared as u64 */
}

template <typename T, typename V>
__device__ __forceinline__ void topk(const T *x, const i64 *kp, T *vals, i64 *idx,
				     const cep_topk &p, cep_fault *fault, u64 site)
{
	if (kp != 0 && kp[0] != p.k) {
		if (blockIdx.x == 0 && threadIdx.x == 0)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, kp[0], p.k);
		return;
	}
	CEP_FOR(e, p.outer * p.n * p.inner) {
		i64 r = e / p.inner, j = e - r * p.inner, o = r / p.n, m = r - o * p.n;
		i64 base = o * p.n * p.inner + j, before = 0;
		V v = topk_load<T, V>(x, e);

		for (i64 q = 0; q < p.n && before < p.k; q++) {
			if (q != m && topk_before(topk_load<T, V>(x, base + q * p.inner), q, v, m,
						  p.largest != 0))
				before++;
		}
		if (before < p.k) {
			i64 at = (o * p.k + before) * p.inner + j;

			if (vals != 0)
				vals[at] = x[e];
			if (idx != 0)
				idx[at] = m;
		}
	}
}

#define TOPK_KERNEL(T, V, sfx)                                                           \
	extern "C" __global__ void topk_##sfx(const T *x, const i64 *k, T *vals, i64 *idx, \
					      cep_topk p, cep_fault *fault, u64 site)    \
	{ topk<T, V>(x, k, vals, idx, p, fault, site); }

TOPK_KERNEL(float, float, f32)
TOPK_KERNEL(f16, float, f16)
TOPK_KERNEL(bf16, float, bf16)
TOPK_KERNEL(i64, i64, i64)
TOPK_KERNEL(i32, i64, i32)
TOPK_KERNEL(i8, i64, i8)
TOPK_KERNEL(u8, i64, u8)
/* Few enough to share the source with the first types. */
TOPK_KERNEL(double, double, f64)
TOPK_KERNEL(i16, i64, i16)
TOPK_KERNEL(u16, i64, u16)
TOPK_KERNEL(u32, i64, u32)
TOPK_KERNEL(u64, u64, u64)
