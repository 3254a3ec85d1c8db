/*
 * binary.cuh — the kernels of binary.cu (Add, Sub, Mul, Div with numpy
 * broadcasting and the fast paths of elem.cuh) as templates and the
 * macros that instantiate them per type. binary.cu instantiates them for
 * float32, float16, bfloat16 and the integer types int64, int32, int8 and
 * uint8; binary_wide.cu for float64, int16, uint16, uint32 and uint64, so
 * that a model without those never waits for their compile.
 */
#ifndef CEP_CUDA_BINARY_CUH
#define CEP_CUDA_BINARY_CUH

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

template <int OP> __device__ __forceinline__ double bin_d(double a, double b)
{
	switch (OP) {
	case BIN_ADD: return a + b;
	case BIN_SUB: return a - b;
	case BIN_MUL: return a * b;
	default: return a / b;
	}
}

/* Unsigned arithmetic wraps where signed would overflow; U: the operands
 * are uint64's bits, which divide as unsigned. */
template <int OP, bool U> __device__ __forceinline__ i64 bin_i(i64 a, i64 b)
{
	switch (OP) {
	case BIN_ADD: return (i64)((u64)a + (u64)b);
	case BIN_SUB: return (i64)((u64)a - (u64)b);
	case BIN_MUL: return (i64)((u64)a * (u64)b);
	default:
		if (b == 0)
			return 0;
		if (U)
			return (i64)((u64)a / (u64)b);
		if (a == CEP_INT64_MIN && b == -1)
			return CEP_INT64_MIN;
		return a / b;
	}
}

/* Element io of o from element ia of a and ib of b. */
template <typename T, int OP>
__device__ __forceinline__ void bin_at(const T *a, i64 ia, const T *b, i64 ib, T *o, i64 io)
{
	if (cep_is_f64<T>::value)
		st_d(o, io, bin_d<OP>(ld_d(a, ia), ld_d(b, ib)));
	else if (cep_is_float<T>::value)
		st_f(o, io, bin_f<OP>(ld_f(a, ia), ld_f(b, ib)));
	else
		st_i(o, io, bin_i<OP, cep_is_u64<T>::value>(ld_i(a, ia), ld_i(b, ib)));
}

template <typename T, int OP>
__device__ __forceinline__ void binary(const T *a, const T *b, T *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		bin_at<T, OP>(a, ia, b, ib, o, i);
	}
}

/* One element of a fast path, with the arithmetic of binary(). */
template <typename T, int OP> struct bin_fn {
	__device__ __forceinline__ void operator()(const T *a, i64 ia, const T *b, i64 ib, T *o,
						   i64 io) const
	{
		bin_at<T, OP>(a, ia, b, ib, o, io);
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

#endif
