/*
 * trig.cu — the trigonometric and hyperbolic functions of one tensor, the
 * device side of kernels/cpu/trig.c: Sin, Cos, Tan, Asin, Acos, Atan,
 * Sinh, Cosh, Asinh, Acosh, Atanh. Computed in float with CUDA's float
 * functions (a few units in the last place, full range reduction: NVRTC
 * compiles without fast math), float16 and bfloat16 converted on load and
 * store. Every kernel walks its tensor contiguously, 16 bytes per access
 * where aligned (elem.cuh's cep_map1). Launcher: kernels/cuda/trig.c.
 * Kernels: <op>_<type> (sin_f32, acosh_bf16).
 */
#include "elem.cuh"

enum {
	TRIG_SIN, TRIG_COS, TRIG_TAN, TRIG_ASIN, TRIG_ACOS, TRIG_ATAN,
	TRIG_SINH, TRIG_COSH, TRIG_ASINH, TRIG_ACOSH, TRIG_ATANH,
};

template <int OP> __device__ __forceinline__ float trig_f(float v)
{
	switch (OP) {
	case TRIG_SIN: return sinf(v);
	case TRIG_COS: return cosf(v);
	case TRIG_TAN: return tanf(v);
	case TRIG_ASIN: return asinf(v);
	case TRIG_ACOS: return acosf(v);
	case TRIG_ATAN: return atanf(v);
	case TRIG_SINH: return sinhf(v);
	case TRIG_COSH: return coshf(v);
	case TRIG_ASINH: return asinhf(v);
	case TRIG_ACOSH: return acoshf(v);
	default: return atanhf(v);
	}
}

template <int OP> struct trig_fn {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		st_f(o, io, trig_f<OP>(ld_f(a, ia)));
	}
};

#define TRIG_KERNEL(name, OP, T, sfx)                                           \
	extern "C" __global__ void name##_##sfx(const T *a, T *o, i64 n)         \
	{                                                                       \
		cep_map1(a, o, n, trig_fn<OP>());                               \
	}

#define TRIG_TYPES(name, OP)                    \
	TRIG_KERNEL(name, OP, float, f32)       \
	TRIG_KERNEL(name, OP, f16, f16)         \
	TRIG_KERNEL(name, OP, bf16, bf16)

TRIG_TYPES(sin, TRIG_SIN)
TRIG_TYPES(cos, TRIG_COS)
TRIG_TYPES(tan, TRIG_TAN)
TRIG_TYPES(asin, TRIG_ASIN)
TRIG_TYPES(acos, TRIG_ACOS)
TRIG_TYPES(atan, TRIG_ATAN)
TRIG_TYPES(sinh, TRIG_SINH)
TRIG_TYPES(cosh, TRIG_COSH)
TRIG_TYPES(asinh, TRIG_ASINH)
TRIG_TYPES(acosh, TRIG_ACOSH)
TRIG_TYPES(atanh, TRIG_ATANH)
