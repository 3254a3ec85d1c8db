/*
 * trilu.cu — Trilu: each element of the last two dimensions' matrices is
 * copied (a raw unit of its size) when it lies in the kept triangle and
 * cleared otherwise, as the reference kernel decides (kernels/cpu/
 * trilu.c): (i, j) is kept when j - i >= k (upper) or j - i <= k (lower).
 * k, an optional int64 scalar input, is read here on the device (NULL: 0).
 * Launcher: kernels/cuda/trilu.c. Kernels: trilu_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_trilu. */
struct cep_trilu {
	i64 n;                      /* elements */
	i64 rows, cols;             /* of each matrix, both >= 1 when n > 0 */
	i32 upper;
	i32 pad;
};

template <typename T>
__device__ __forceinline__ void trilu(const T *x, const i64 *kp, T *y, const cep_trilu &p)
{
	i64 k = kp != 0 ? kp[0] : 0;

	CEP_FOR(e, p.n) {
		i64 r = e / p.cols, j = e - r * p.cols, i = r % p.rows;
		bool keep = p.upper ? j - i >= k : j - i <= k;

		y[e] = keep ? x[e] : (T)0;
	}
}

#define TRILU_KERNEL(T, bytes)                                                              \
	extern "C" __global__ void trilu_##bytes(const T *x, const i64 *k, T *y, cep_trilu p) \
	{ trilu<T>(x, k, y, p); }

TRILU_KERNEL(u8, 1)
TRILU_KERNEL(u16, 2)
TRILU_KERNEL(u32, 4)
TRILU_KERNEL(u64, 8)
