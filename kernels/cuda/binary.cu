/*
 * binary.cu — elementwise arithmetic with numpy broadcasting: Add, Sub,
 * Mul, Div. Float types are computed in float (float16 and bfloat16
 * converted on load and store), integers in int64 with two's complement
 * wrapping, stored back at their width; integer division truncates and a
 * division by zero gives 0, as the reference kernels (kernels/cpu/binary.c)
 * do. Launcher: kernels/cuda/binary.c. Kernels: <op>_<type>, e.g. add_f32,
 * for any broadcast, and <op>_<type>_<a><b> for the fast paths of
 * elem.cuh, a and b each f (the output's shape), r (a row over the last
 * dim) or s (one element): add_f16_ff, mul_f32_fs, div_f32_sf.
 */
#include "elem.cuh"

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };

template <int OP> __device__ __forceinline__ float bin_f(float a, float b)
{
	switch (OP) {
	case BIN_ADD: return a + b;
	case BIN_SUB: return a - b;
	case BIN_MUL: return a * b;
	default: return a / b;
	}
}

/* Unsigned arithmetic wraps where signed would overflow. */
template <int OP> __device__ __forceinline__ i64 bin_i(i64 a, i64 b)
{
	switch (OP) {
	case BIN_ADD: return (i64)((u64)a + (u64)b);
	case BIN_SUB: return (i64)((u64)a - (u64)b);
	case BIN_MUL: return (i64)((u64)a * (u64)b);
	default:
		if (b == 0)
			return 0;
		if (a == CEP_INT64_MIN && b == -1)
			return CEP_INT64_MIN;
		return a / b;
	}
}

template <typename T, int OP>
__device__ __forceinline__ void binary(const T *a, const T *b, T *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		if (cep_is_float<T>::value)
			st_f(o, i, bin_f<OP>(ld_f(a, ia), ld_f(b, ib)));
		else
			st_i(o, i, bin_i<OP>(ld_i(a, ia), ld_i(b, ib)));
	}
}

/* One element of a fast path, with the arithmetic of binary(). */
template <typename T, int OP> struct bin_fn {
	__device__ __forceinline__ void operator()(const T *a, i64 ia, const T *b, i64 ib, T *o,
						   i64 io) const
	{
		if (cep_is_float<T>::value)
			st_f(o, io, bin_f<OP>(ld_f(a, ia), ld_f(b, ib)));
		else
			st_i(o, io, bin_i<OP>(ld_i(a, ia), ld_i(b, ib)));
	}
};

#define BINARY_FAST(name, OP, T, sfx, ma, mb, MA, MB)                                 \
	extern "C" __global__ void name##_##sfx##_##ma##mb(const T *a, const T *b, T *o, \
							   i64 n, i64 cols)              \
	{                                                                             \
		cep_map2<T, T, MA, MB>(a, b, o, n, cols, bin_fn<T, OP>());            \
	}

#define BINARY_KERNEL(name, OP, T, sfx)                                              \
	extern "C" __global__ void name##_##sfx(const T *a, const T *b, T *o,         \
						cep_bcast p)                          \
	{                                                                            \
		binary<T, OP>(a, b, o, p);                                           \
	}                                                                            \
	BINARY_FAST(name, OP, T, sfx, f, f, CEP_OPND_FULL, CEP_OPND_FULL)            \
	BINARY_FAST(name, OP, T, sfx, f, r, CEP_OPND_FULL, CEP_OPND_ROW)             \
	BINARY_FAST(name, OP, T, sfx, r, f, CEP_OPND_ROW, CEP_OPND_FULL)             \
	BINARY_FAST(name, OP, T, sfx, f, s, CEP_OPND_FULL, CEP_OPND_SCALAR)          \
	BINARY_FAST(name, OP, T, sfx, s, f, CEP_OPND_SCALAR, CEP_OPND_FULL)

#define BINARY_TYPES(name, OP)               \
	BINARY_KERNEL(name, OP, float, f32)  \
	BINARY_KERNEL(name, OP, f16, f16)    \
	BINARY_KERNEL(name, OP, bf16, bf16)  \
	BINARY_KERNEL(name, OP, i64, i64)    \
	BINARY_KERNEL(name, OP, i32, i32)    \
	BINARY_KERNEL(name, OP, i8, i8)      \
	BINARY_KERNEL(name, OP, u8, u8)

BINARY_TYPES(add, BIN_ADD)
BINARY_TYPES(sub, BIN_SUB)
BINARY_TYPES(mul, BIN_MUL)
BINARY_TYPES(div, BIN_DIV)
