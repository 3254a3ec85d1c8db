/*
 * bitwise.cu — the bitwise operators with numpy broadcasting, the device
 * side of kernels/cpu/bitwise.c: BitwiseAnd, BitwiseOr, BitwiseXor,
 * BitShift in either direction, and BitwiseNot. Elements are worked on in
 * int64 (sign-extended for the signed types) and stored back at their
 * width, with the host's shift rules: arithmetic right shifts of signed
 * types, and a shift by a negative amount or by the width or more giving
 * the sign fill alone (-1 for a right shift of a negative value, else 0).
 * Launcher: kernels/cuda/bitwise.c. Kernels: <op>_<type> (bitwiseand_i32,
 * bitshiftleft_u8, bitshiftright_i64) for any broadcast, <op>_<type>_<a><b>
 * for the fast paths of elem.cuh (a, b: f, r or s as in binary.cu), and
 * bitwisenot_<type>, which walks its tensor 16 bytes at a time.
 */
#include "elem.cuh"

enum { BIT_AND, BIT_OR, BIT_XOR, BIT_SHL, BIT_SHR };

/* a op b for elements of W bits; unsigned arithmetic keeps the left
 * shift defined. */
template <int OP, int W> __device__ __forceinline__ i64 bit_i(i64 a, i64 b)
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
		st_i(o, i, bit_i<OP, 8 * sizeof(T)>(ld_i(a, ia), ld_i(b, ib)));
	}
}

/* One element of a fast path, with the arithmetic of bitwise(). */
template <typename T, int OP> struct bit_fn {
	__device__ __forceinline__ void operator()(const T *a, i64 ia, const T *b, i64 ib, T *o,
						   i64 io) const
	{
		st_i(o, io, bit_i<OP, 8 * sizeof(T)>(ld_i(a, ia), ld_i(b, ib)));
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

#define BITWISE_TYPES(name, OP)                 \
	BITWISE_KERNEL(name, OP, i64, i64)      \
	BITWISE_KERNEL(name, OP, i32, i32)      \
	BITWISE_KERNEL(name, OP, i8, i8)        \
	BITWISE_KERNEL(name, OP, u8, u8)

BITWISE_TYPES(bitwiseand, BIT_AND)
BITWISE_TYPES(bitwiseor, BIT_OR)
BITWISE_TYPES(bitwisexor, BIT_XOR)
BITWISE_TYPES(bitshiftleft, BIT_SHL)
BITWISE_TYPES(bitshiftright, BIT_SHR)

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

BITWISE_NOT(i64, i64)
BITWISE_NOT(i32, i32)
BITWISE_NOT(i8, i8)
BITWISE_NOT(u8, u8)
