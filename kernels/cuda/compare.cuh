/*
 * compare.cuh — the comparisons of compare.cu (Equal, Less, LessOrEqual,
 * Greater, GreaterOrEqual, And, Or, Xor with numpy broadcasting and the
 * fast paths of elem.cuh) as templates and the macros that instantiate
 * them per type. compare.cu instantiates them for the types of the first
 * device kernels and bool; compare_wide.cu for float64, int16, uint16,
 * uint32 and uint64, so that a model without those never waits for their
 * compile.
 */
#ifndef CEP_CUDA_COMPARE_CUH
#define CEP_CUDA_COMPARE_CUH

#include "elem.cuh"

enum { CMP_EQ, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_AND, CMP_OR, CMP_XOR };

template <int OP> __device__ __forceinline__ bool cmp_f(float a, float b)
{
	switch (OP) {
	case CMP_EQ: return a == b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	case CMP_GE: return a >= b;
	case CMP_AND: return a != 0.0f && b != 0.0f;
	case CMP_OR: return a != 0.0f || b != 0.0f;
	default: return (a != 0.0f) != (b != 0.0f);
	}
}

template <int OP> __device__ __forceinline__ bool cmp_d(double a, double b)
{
	switch (OP) {
	case CMP_EQ: return a == b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	default: return a >= b;
	}
}

/* a and b are values of T as ld_i() gives them. */
template <typename T, int OP> __device__ __forceinline__ bool cmp_i(i64 a, i64 b)
{
	switch (OP) {
	case CMP_EQ: return a == b;
	case CMP_LT: return cep_lt_i<T>(a, b);
	case CMP_LE: return !cep_lt_i<T>(b, a);
	case CMP_GT: return cep_lt_i<T>(b, a);
	case CMP_GE: return !cep_lt_i<T>(a, b);
	case CMP_AND: return a && b;
	case CMP_OR: return a || b;
	default: return (a != 0) != (b != 0);
	}
}

/* Element io of o from element ia of a and ib of b. */
template <typename T, int OP>
__device__ __forceinline__ void cmp_at(const T *a, i64 ia, const T *b, i64 ib, u8 *o, i64 io)
{
	if (cep_is_f64<T>::value)
		o[io] = cmp_d<OP>(ld_d(a, ia), ld_d(b, ib));
	else if (cep_is_float<T>::value)
		o[io] = cmp_f<OP>(ld_f(a, ia), ld_f(b, ib));
	else
		o[io] = cmp_i<T, OP>(ld_i(a, ia), ld_i(b, ib));
}

template <typename T, int OP>
__device__ __forceinline__ void compare(const T *a, const T *b, u8 *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, ib;

		cep_bcast_at(p, i, &ia, &ib);
		cmp_at<T, OP>(a, ia, b, ib, o, i);
	}
}

/* One element of a fast path, with the arithmetic of compare(). */
template <typename T, int OP> struct cmp_fn {
	__device__ __forceinline__ void operator()(const T *a, i64 ia, const T *b, i64 ib, u8 *o,
						   i64 io) const
	{
		cmp_at<T, OP>(a, ia, b, ib, o, io);
	}
};

#define COMPARE_FAST(name, OP, T, sfx, ma, mb, MA, MB)                                \
	extern "C" __global__ void name##_##sfx##_##ma##mb(const T *a, const T *b, u8 *o, \
							   i64 n, i64 cols)               \
	{                                                                              \
		cep_map2<T, u8, MA, MB>(a, b, o, n, cols, cmp_fn<T, OP>());            \
	}

#define COMPARE_KERNEL(name, OP, T, sfx)                                        \
	extern "C" __global__ void name##_##sfx(const T *a, const T *b, u8 *o,   \
						cep_bcast p)                     \
	{                                                                       \
		compare<T, OP>(a, b, o, p);                                     \
	}                                                                       \
	COMPARE_FAST(name, OP, T, sfx, f, f, CEP_OPND_FULL, CEP_OPND_FULL)      \
	COMPARE_FAST(name, OP, T, sfx, f, r, CEP_OPND_FULL, CEP_OPND_ROW)       \
	COMPARE_FAST(name, OP, T, sfx, r, f, CEP_OPND_ROW, CEP_OPND_FULL)       \
	COMPARE_FAST(name, OP, T, sfx, f, s, CEP_OPND_FULL, CEP_OPND_SCALAR)    \
	COMPARE_FAST(name, OP, T, sfx, s, f, CEP_OPND_SCALAR, CEP_OPND_FULL)

#endif
