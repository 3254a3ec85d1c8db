/*
 * hardmax.cu — Hardmax along n of an input seen as (outer, n, inner): a
 * thread per row (outer, inner position) finds the row's first largest
 * element, a NaN beating everything, as the reference kernel does
 * (kernels/cpu/hardmax.c), then writes 1 there and 0 elsewhere.
 * Launcher: kernels/cuda/hardmax.c. Kernels: hardmax_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_hardmax. */
struct cep_hardmax {
	i64 outer, n, inner;
};

template <typename T>
__device__ __forceinline__ void hardmax(const T *x, T *y, const cep_hardmax &p)
{
	CEP_FOR(r, p.outer * p.inner) {
		i64 o = r / p.inner, j = r - o * p.inner, base = o * p.n * p.inner + j, best = 0;
		float bv = p.n > 0 ? ld_f(x, base) : 0.0f;

		for (i64 k = 1; k < p.n && bv == bv; k++) {
			float v = ld_f(x, base + k * p.inner);

			if (v != v || v > bv) {
				bv = v;
				best = k;
			}
		}
		for (i64 k = 0; k < p.n; k++)
			st_f(y, base + k * p.inner, k == best ? 1.0f : 0.0f);
	}
}

#define HARDMAX_KERNEL(T, sfx)                                                       \
	extern "C" __global__ void hardmax_##sfx(const T *x, T *y, cep_hardmax p)    \
	{ hardmax<T>(x, y, p); }

HARDMAX_KERNEL(float, f32)
HARDMAX_KERNEL(f16, f16)
HARDMAX_KERNEL(bf16, bf16)
