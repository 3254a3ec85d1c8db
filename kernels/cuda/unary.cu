/*
 * unary.cu — elementwise functions of one tensor, the device side of
 * kernels/cpu/unary.c and kernels/cpu/math.c: Relu, Sigmoid, Tanh, Exp,
 * Sqrt, Reciprocal, Neg, Abs, Log, Erf, Floor, Ceil, Round. Float types are
 * computed in float; Relu, Neg and Abs of integers in int64, wrapping as
 * two's complement does; Erf of integers (opsets 9 to 12) in float,
 * truncated. Every kernel walks its tensor contiguously, 16 bytes per
 * access where aligned (elem.cuh's cep_map1). Launcher:
 * kernels/cuda/unary.c. Kernels: <op>_<type>.
 */
#include "elem.cuh"

enum {
	UN_RELU, UN_SIGMOID, UN_TANH, UN_EXP, UN_SQRT, UN_RECIPROCAL,
	UN_NEG, UN_ABS, UN_LOG, UN_ERF, UN_FLOOR, UN_CEIL, UN_ROUND,
};

template <int OP> __device__ __forceinline__ float un_f(float v)
{
	switch (OP) {
	case UN_RELU: return v > 0.0f ? v : 0.0f;
	case UN_SIGMOID:
		/* Two branches so that exp never overflows. */
		if (v >= 0.0f)
			return 1.0f / (1.0f + expf(-v));
		return expf(v) / (1.0f + expf(v));
	case UN_TANH: return tanhf(v);
	case UN_EXP: return expf(v);
	case UN_SQRT: return sqrtf(v);
	case UN_RECIPROCAL: return 1.0f / v;
	case UN_NEG: return -v;
	case UN_ABS: return fabsf(v);
	case UN_LOG: return logf(v);
	case UN_ERF: return erff(v);
	case UN_FLOOR: return floorf(v);
	/* Halves to the even neighbour, as the host's nearbyintf(). */
	case UN_ROUND: return rintf(v);
	default: return ceilf(v);
	}
}

template <int OP> __device__ __forceinline__ i64 un_i(i64 v)
{
	switch (OP) {
	case UN_RELU: return v > 0 ? v : 0;
	case UN_NEG: return (i64)(0 - (u64)v);
	case UN_ABS: return v < 0 ? (i64)(0 - (u64)v) : v;
	default: return v;
	}
}

/* Computed in float whatever T is (Erf of integers is, too). */
template <int OP> struct un_fn_f {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		st_f(o, io, un_f<OP>(ld_f(a, ia)));
	}
};

template <int OP> struct un_fn_i {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		st_i(o, io, un_i<OP>(ld_i(a, ia)));
	}
};

template <typename T, int OP>
__device__ __forceinline__ void unary_f(const T *a, T *o, i64 n)
{
	cep_map1(a, o, n, un_fn_f<OP>());
}

template <typename T, int OP>
__device__ __forceinline__ void unary_i(const T *a, T *o, i64 n)
{
	cep_map1(a, o, n, un_fn_i<OP>());
}

#define UNARY_KERNEL(name, OP, T, sfx, how)                                     \
	extern "C" __global__ void name##_##sfx(const T *a, T *o, i64 n)         \
	{                                                                       \
		how<T, OP>(a, o, n);                                            \
	}

#define UNARY_FLOATS(name, OP)                          \
	UNARY_KERNEL(name, OP, float, f32, unary_f)     \
	UNARY_KERNEL(name, OP, f16, f16, unary_f)       \
	UNARY_KERNEL(name, OP, bf16, bf16, unary_f)

#define UNARY_SIGNED(name, OP)                          \
	UNARY_KERNEL(name, OP, i64, i64, unary_i)       \
	UNARY_KERNEL(name, OP, i32, i32, unary_i)       \
	UNARY_KERNEL(name, OP, i8, i8, unary_i)

UNARY_FLOATS(relu, UN_RELU)
UNARY_SIGNED(relu, UN_RELU)
UNARY_FLOATS(sigmoid, UN_SIGMOID)
UNARY_FLOATS(tanh, UN_TANH)
UNARY_FLOATS(exp, UN_EXP)
UNARY_FLOATS(sqrt, UN_SQRT)
UNARY_FLOATS(reciprocal, UN_RECIPROCAL)
UNARY_FLOATS(neg, UN_NEG)
UNARY_SIGNED(neg, UN_NEG)
UNARY_FLOATS(abs, UN_ABS)
UNARY_SIGNED(abs, UN_ABS)
UNARY_KERNEL(abs, UN_ABS, u8, u8, unary_i)
UNARY_FLOATS(log, UN_LOG)
UNARY_FLOATS(erf, UN_ERF)
UNARY_KERNEL(erf, UN_ERF, i64, i64, unary_f)
UNARY_KERNEL(erf, UN_ERF, i32, i32, unary_f)
UNARY_KERNEL(erf, UN_ERF, i8, i8, unary_f)
UNARY_KERNEL(erf, UN_ERF, u8, u8, unary_f)
UNARY_FLOATS(floor, UN_FLOOR)
UNARY_FLOATS(ceil, UN_CEIL)
UNARY_FLOATS(round, UN_ROUND)
