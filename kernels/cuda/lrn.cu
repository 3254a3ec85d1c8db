/*
 * lrn.cu — LRN (local response normalization across channels) over
 * (N, C, D1 * ... * Dn) tensors, with the arithmetic of the reference
 * kernel (kernels/cpu/norm.c): the squares of the neighbouring channels
 * summed in double, lowest channel first, and each element divided by
 * (bias + alpha / size * sum)^beta in double; the usual beta of 0.75
 * without pow(), as t * sqrt(t) with t = sqrt(...). The products and sums
 * are rounded one by one (no fused multiply-add), as the host computes
 * them, so the results agree bit for bit where pow() is not needed.
 *
 * A thread per output element. Launcher: kernels/cuda/lrn.c. Kernels:
 * lrn_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_lrn. */
struct cep_lrn {
	i64 batch, channels, inner;     /* X as (N, C, D1 * ... * Dn) */
	i64 before, after;              /* channels summed below and above */
	double alpha_over_size, beta, bias;
};

template <typename T> __device__ __forceinline__ void lrn(const T *x, T *y, const cep_lrn &p)
{
	CEP_FOR(o, p.batch * p.channels * p.inner) {
		i64 j = o % p.inner, nc = o / p.inner, ch = nc % p.channels, n = nc / p.channels;
		i64 lo = ch - p.before > 0 ? ch - p.before : 0;
		i64 hi = ch + p.after < p.channels - 1 ? ch + p.after : p.channels - 1;
		double sq = 0.0, v, t;

		for (i64 k = lo; k <= hi; k++) {
			double e = (double)ld_f(x, (n * p.channels + k) * p.inner + j);

			sq = __dadd_rn(sq, __dmul_rn(e, e));
		}
		v = (double)ld_f(x, o);
		t = __dadd_rn(p.bias, __dmul_rn(p.alpha_over_size, sq));
		if (p.beta == 0.75) {
			t = sqrt(t);
			v /= __dmul_rn(t, sqrt(t));
		} else {
			v /= pow(t, p.beta);
		}
		st_f(y, o, (float)v);
	}
}

#define LRN_KERNEL(T, sfx) \
	extern "C" __global__ void lrn_##sfx(const T *x, T *y, cep_lrn p) { lrn<T>(x, y, p); }

LRN_KERNEL(float, f32)
LRN_KERNEL(f16, f16)
LRN_KERNEL(bf16, bf16)
