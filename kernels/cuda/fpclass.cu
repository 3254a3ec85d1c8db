/*
 * fpclass.cu — which elements of a float tensor are infinite or NaN, the
 * device side of kernels/cpu/fpclass.c: IsInf (pos, neg: whether +inf
 * and -inf count) and IsNaN, bool out. float16 and bfloat16 are widened
 * to float first, as on the host. Every kernel walks its tensor
 * contiguously, 16 bytes of the input per access where aligned (elem.cuh's
 * cep_map1). Launcher: kernels/cuda/fpclass.c. Kernels: isinf_<type>,
 * isnan_<type> (isinf_f32, isnan_bf16).
 */
#include "elem.cuh"

struct isinf_fn {
	bool pos, neg;

	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, u8 *o, i64 io) const
	{
		const float inf = __uint_as_float(0x7f800000u);
		float v = ld_f(a, ia);

		o[io] = (pos && v == inf) || (neg && v == -inf);
	}
};

struct isnan_fn {
	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, u8 *o, i64 io) const
	{
		float v = ld_f(a, ia);

		o[io] = v != v;
	}
};

#define FPCLASS_KERNELS(T, sfx)                                                 \
	extern "C" __global__ void isinf_##sfx(const T *a, u8 *o, i64 n, i32 pos,  \
					       i32 neg)                           \
	{                                                                       \
		isinf_fn f = { pos != 0, neg != 0 };                            \
									        \
		cep_map1(a, o, n, f);                                           \
	}                                                                       \
	extern "C" __global__ void isnan_##sfx(const T *a, u8 *o, i64 n)          \
	{                                                                       \
		cep_map1(a, o, n, isnan_fn());                                  \
	}

FPCLASS_KERNELS(float, f32)
FPCLASS_KERNELS(f16, f16)
FPCLASS_KERNELS(bf16, bf16)
