/*
 * conv.cu — the one piece of Conv that cuDNN does not do: the extra pad of
 * an asymmetric window (SAME_UPPER over an even size, or explicit pads
 * that differ at the two ends), written as zeros around a copy of X in the
 * workspace, so that cuDNN's symmetric pads cover the rest. Elements move
 * as raw units of their size (a zero is all zero bits in every float
 * type). Launcher: kernels/cuda/conv.c. Kernels: conv_pad_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_conv_pad. */
struct cep_conv_pad {
	i64 n;              /* elements of the padded tensor */
	i64 out[3];         /* its spatial sizes, leading unit ones first */
	i64 in[3];          /* X's spatial sizes, the same way */
	i64 before[3];      /* zeros added before X along each */
};

template <typename T>
__device__ __forceinline__ void conv_pad(const T *x, T *y, const cep_conv_pad &p)
{
	CEP_FOR(i, p.n) {
		i64 r = i;
		i64 c = r % p.out[2];
		r /= p.out[2];
		i64 b = r % p.out[1];
		r /= p.out[1];
		i64 a = r % p.out[0];
		r /= p.out[0];           /* now the image and channel, as one index */
		a -= p.before[0];
		b -= p.before[1];
		c -= p.before[2];
		T v = 0;

		if (a >= 0 && a < p.in[0] && b >= 0 && b < p.in[1] && c >= 0 && c < p.in[2])
			v = x[((r * p.in[0] + a) * p.in[1] + b) * p.in[2] + c];
		y[i] = v;
	}
}

#define CONV_PAD_KERNEL(T, bytes)                                                    \
	extern "C" __global__ void conv_pad_##bytes(const T *x, T *y, cep_conv_pad p) \
	{                                                                            \
		conv_pad<T>(x, y, p);                                                \
	}

CONV_PAD_KERNEL(u16, 2)
CONV_PAD_KERNEL(u32, 4)
