/*
 * dropout.cu — Dropout as inference runs it (kernels/cpu/dropout.c): the
 * output is the input and the optional mask is all ones (bool true, or 1
 * in the input's type before opset 10). A training_mode input that is
 * true with a nonzero ratio asks for random drops, which cudaep does not
 * do: it is read here on the device, and latched into the fault record
 * (the run then fails) instead of being ignored. Elements move as raw
 * units of their size. Launcher: kernels/cuda/dropout.c. Kernels:
 * dropout_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_dropout. */
struct cep_dropout {
	i64 n;              /* elements */
	u32 one;            /* the mask's 1, as mask_bytes bytes */
	i32 mask_bytes;     /* 1, 2 or 4 */
	i32 ratio_type;     /* 0 float32, 1 float16, 2 bfloat16 */
	i32 pad;
};

__device__ __forceinline__ float dropout_ratio(const void *r, int type)
{
	switch (type) {
	case 1: return ld_f((const f16 *)r, 0);
	case 2: return ld_f((const bf16 *)r, 0);
	default: return ld_f((const float *)r, 0);
	}
}

template <typename T>
__device__ __forceinline__ void dropout(const T *x, T *y, void *mask, const cep_dropout &p,
					const b8 *training, const void *ratio,
					cep_fault *fault, u64 site)
{
	if (training != 0 && training[0].v) {
		float r = ratio != 0 ? dropout_ratio(ratio, p.ratio_type) : 0.5f;

		if (r != 0.0f) {
			cep_fault_latch_kind(fault, CEP_FAULT_TRAINING, site, 0, __float_as_int(r), 0);
			return;
		}
	}
	CEP_FOR(i, p.n) {
		if (y != x)
			y[i] = x[i];
		if (mask == 0)
			continue;
		switch (p.mask_bytes) {
		case 1: ((u8 *)mask)[i] = (u8)p.one; break;
		case 2: ((u16 *)mask)[i] = (u16)p.one; break;
		default: ((u32 *)mask)[i] = p.one; break;
		}
	}
}

#define DROPOUT_KERNEL(T, bytes)                                                         \
	extern "C" __global__ void dropout_##bytes(const T *x, T *y, void *mask,          \
						   cep_dropout p, const b8 *training,     \
						   const void *ratio, cep_fault *fault,   \
						   u64 site)                              \
	{                                                                              \
		dropout<T>(x, y, mask, p, training, ratio, fault, site);               \
	}

DROPOUT_KERNEL(u16, 2)
DROPOUT_KERNEL(u32, 4)
