/*
 * bitwise.cuh — the bitwise operators with numpy broadcasting, the device
 * side of kernels/cpu/bitwise.c, as templates and the macros that make
 * the kernels of one type (bitwise.cu instantiates the first integer
 * types, bitwise_wide.cu int16, uint16, uint32 and uint64): BitwiseAnd,
 * BitwiseOr, BitwiseXor, BitShift in either direction, and BitwiseNot.
 * Elements are worked on in int64 (sign-extended for the signed types,
 * uint64 as its bits) and stored back at their width, with the host's
 * shift rules: arithmetic right shifts of signed types, logical ones of
 * unsigned types, and a shift by a negative amount or by the width or
 * more giving the sign fill alone (-1 for a right shift of a negative
 * value, else 0). BitwiseNot walks its tensor 16 bytes at a time.
 */
#ifndef CEP_CUDA_BITWISE_CUH
#define CEP_CUDA_BITWISE_CUH

#include "elem.cuh"

enum { BIT_AND, BIT_OR, BIT_XOR, BIT_SHL, BIT_SHR };

/* a op b for elements of type T, of W bits; unsigned arithmetic keeps
 * the left shift defined. The narrower unsigned types load as
 * non-negative values, so the signed rule shifts them logically; uint64,
 * whose bits int64 holds, shifts logically by its own rule (a shift
 * amount past 2^63 reads as negative, giving 0 as the host's does). */
template <typename T, int OP, int W> __device__ __forceinline__ i64 bit_i(i64 a, i64 b)
{
	switch (OP) {
	case BIT_AND: return a & b;
	case BIT_OR: return a | b;
	case BIT_XOR: return a ^ b;
	case BIT_SHL:
		if (b < 0 || b >= W)
			return 0;
		return (i64)((u64)a << b);
	default:
		if (cep_is_u64<T>::value)
			return b < 0 || b >= W ? 0 : (i64)((u64)a >> b);
		if (b < 0 || b >= W)
			return a < 0 ? -1 : 0;
		return a < 0 ? ~(~a >> b) : a >> b;
	}
}

template <typename T, int OP>
__device__ __forceinline__ void bitwise(const T *a, const T *b, T *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		st_i(o, i, bit_i<T, OP, 8 * sizeof(T)>(ld_i(a, ia), ld_i(b, ib)));
	}
}

/* One element of a fast path, with the arithmetic of bitwise(). */
template <typename T, int OP> struct bit_fn {
	__device__ __forceinline__ void operator()(const T *a, i64 ia, const T *b, i64 ib, T *o,
						   i64 io) const
	{
		st_i(o, io, bit_i<T, OP, 8 * sizeof(T)>(ld_i(a, ia), ld_i(b, ib)));
	}
};

#define BITWISE_FAST(name, OP, T, sfx, ma, mb, MA, MB)                                \
	extern "C" __global__ void name##_##sfx##_##ma##mb(const T *a, const T *b, T *o, \
							   i64 n, i64 cols)              \
	{                                                                             \
		cep_map2<T, T, MA, MB>(a, b, o, n, cols, bit_fn<T, OP>());            \
	}

#define BITWISE_KERNEL(name, OP, T, sfx)                                             \
	extern "C" __global__ void name##_##sfx(const T *a, const T *b, T *o,         \
						cep_bcast p)                          \
	{                                                                            \
		bitwise<T, OP>(a, b, o, p);                                          \
	}                                                                            \
	BITWISE_FAST(name, OP, T, sfx, f, f, CEP_OPND_FULL, CEP_OPND_FULL)           \
	BITWISE_FAST(name, OP, T, sfx, f, r, CEP_OPND_FULL, CEP_OPND_ROW)            \
	BITWISE_FAST(name, OP, T, sfx, r, f, CEP_OPND_ROW, CEP_OPND_FULL)            \
	BITWISE_FAST(name, OP, T, sfx, f, s, CEP_OPND_FULL, CEP_OPND_SCALAR)         \
	BITWISE_FAST(name, OP, T, sfx, s, f, CEP_OPND_SCALAR, CEP_OPND_FULL)

struct not_fn {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		st_i(o, io, ~ld_i(a, ia));
	}
};

#define BITWISE_NOT(T, sfx)                                                     \
	extern "C" __global__ void bitwisenot_##sfx(const T *a, T *o, i64 n)     \
	{                                                                       \
		cep_map1(a, o, n, not_fn());                                    \
	}

#endif
