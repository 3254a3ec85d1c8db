/*
 * matmulbias.cu — what MatMulBias (kernels/xfmr.h) needs beside its
 * cuBLASLt GEMM: the bias and activation where no epilogue does them, in
 * place over the GEMM's output. cuBLASLt's GELU epilogue is the tanh
 * approximation, so the exact (erf) GELU of an exported BERT comes here,
 * with the bias; and when K is 0 there is no product, only the bias.
 * Computed in float, with the constants and forms of the reference
 * (kernels/xfmr.c). Launcher: kernels/cuda/matmulbias.c. Kernels:
 * mmb_epilogue_<type>.
 */
#include "common.cuh"

/* enum xfmr_act (kernels/xfmr.h). */
enum { MMB_NONE, MMB_RELU, MMB_GELU, MMB_GELU_TANH };

__device__ __forceinline__ float mmb_act(int act, float v)
{
	/* sqrt(2 / pi) and 1 / sqrt(2) */
	const float k_tanh = 0.7978845608028654f, k_erf = 0.7071067811865476f;

	switch (act) {
	case MMB_RELU:
		return v < 0.0f ? 0.0f : v;
	case MMB_GELU:
		return 0.5f * v * (1.0f + erff(v * k_erf));
	case MMB_GELU_TANH:
		return 0.5f * v * (1.0f + tanhf(k_tanh * (v + 0.044715f * v * v * v)));
	default:
		return v;
	}
}

/* y[r, c] = act(y[r, c] + bias[c]) over m rows of n, or act(bias[c]) when
 * add is 0 (y holds nothing yet). */
template <typename T>
__device__ __forceinline__ void mmb_epilogue(T *y, const T *bias, i64 m, i64 n, int act,
					     int add)
{
	CEP_FOR(i, m * n) {
		i64 c = i % n;
		float v = add ? ld_f(y, i) + ld_f(bias, c) : ld_f(bias, c);

		st_f(y, i, mmb_act(act, v));
	}
}

#define MMB_EPILOGUE(T, sfx)                                                           \
	extern "C" __global__ void mmb_epilogue_##sfx(T *y, const T *bias, i64 m, i64 n, \
						      int act, int add)                  \
	{                                                                              \
		mmb_epilogue<T>(y, bias, m, n, act, add);                              \
	}

MMB_EPILOGUE(float, f32)
MMB_EPILOGUE(f16, f16)
MMB_EPILOGUE(bf16, bf16)
