/*
 * unary.cuh — elementwise functions of one tensor, the device side of
 * kernels/cpu/unary.c and kernels/cpu/math.c, as templates and the macros
 * that make their kernels (unary.cu has the first types', unary_wide.cu
 * float64's and int16's, uint16's, uint32's and uint64's): Relu, Sigmoid, Tanh, Exp,
 * Sqrt, Reciprocal, Neg, Abs, Log, Erf, Floor, Ceil, Round. Float types are
 * computed in float, float64 in double; Relu, Neg and Abs of integers in int64, wrapping as
 * two's complement does (Abs of an unsigned type is the value); Erf of integers (opsets 9 to 12) in float,
 * truncated. Every kernel walks its tensor contiguously, 16 bytes per
 * access where aligned (elem.cuh's cep_map1). Launcher:
 * kernels/cuda/unary.c. Kernels: <op>_<type>.
 */
#ifndef CEP_CUDA_UNARY_CUH
#define CEP_CUDA_UNARY_CUH

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

/* The same in double, for float64, with the host's functions' C names. */
template <int OP> __device__ __forceinline__ double un_d(double v)
{
	switch (OP) {
	case UN_RELU: return v > 0.0 ? v : 0.0;
	case UN_SIGMOID:
		if (v >= 0.0)
			return 1.0 / (1.0 + exp(-v));
		return exp(v) / (1.0 + exp(v));
	case UN_TANH: return tanh(v);
	case UN_EXP: return exp(v);
	case UN_SQRT: return sqrt(v);
	case UN_RECIPROCAL: return 1.0 / v;
	case UN_NEG: return -v;
	case UN_ABS: return fabs(v);
	case UN_LOG: return log(v);
	case UN_ERF: return erf(v);
	case UN_FLOOR: return floor(v);
	case UN_ROUND: return rint(v);
	default: return ceil(v);
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

/* An unsigned value is its own absolute value (uint64's bits would read
 * as negative). */
template <int OP> struct un_fn_i {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		i64 v = ld_i(a, ia);

		st_i(o, io, OP == UN_ABS && cep_is_unsigned<T>::value ? v : un_i<OP>(v));
	}
};

template <int OP> struct un_fn_d {
	__device__ __forceinline__ void operator()(const double *a, i64 ia, double *o,
						   i64 io) const
	{
		o[io] = un_d<OP>(a[ia]);
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

template <typename T, int OP>
__device__ __forceinline__ void unary_d(const T *a, T *o, i64 n)
{
	cep_map1(a, o, n, un_fn_d<OP>());
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

#endif
