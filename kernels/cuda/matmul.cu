/*
 * matmul.cu — the one device kernel of MatMul and Gemm that cuBLASLt does
 * not provide: filling the M x N output before the GEMM adds to it, with
 * Gemm's C broadcast to M x N and scaled (or with zeros, when K is 0 and
 * there is no product to add). Computed in float, as the host does, so a
 * scale of 1 copies float16 and bfloat16 exactly. Launcher:
 * kernels/cuda/matmul.c. Kernels: gemm_fill_<type>.
 */
#include "common.cuh"

/* out[i, j] = scale * c[i * c_rs + j * c_cs], or 0 when c is NULL. */
template <typename T>
__device__ __forceinline__ void gemm_fill(T *out, const T *c, i64 m, i64 n, i64 c_rs,
					  i64 c_cs, float scale)
{
	CEP_FOR(i, m * n) {
		i64 r = i / n, col = i - r * n;

		st_f(out, i, c != 0 ? scale * ld_f(c, r * c_rs + col * c_cs) : 0.0f);
	}
}

#define GEMM_FILL(T, sfx)                                                           \
	extern "C" __global__ void gemm_fill_##sfx(T *out, const T *c, i64 m, i64 n, \
						   i64 c_rs, i64 c_cs, float scale)  \
	{                                                                           \
		gemm_fill<T>(out, c, m, n, c_rs, c_cs, scale);                      \
	}

GEMM_FILL(float, f32)
GEMM_FILL(f16, f16)
GEMM_FILL(bf16, bf16)
