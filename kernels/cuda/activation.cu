/*
 * activation.cu — activations with parameters, the device side of
 * kernels/cpu/activation.c: LeakyRelu, Elu, HardSigmoid, HardSwish,
 * Softplus, Gelu (exact and tanh forms), ThresholdedRelu, Mish, Selu,
 * Celu, Softsign, Swish, Shrink (integers too, in double), PRelu (a slope
 * broadcast to the input) and Clip, and onnxruntime's QuickGelu and the
 * Gelus of input + bias (BiasGelu, FastGelu). Float types are computed in
 * float with the host's formulas; products that feed a sum are rounded
 * separately (__fmul_rn), as the host's C does, rather than fused. PRelu
 * and Clip of integers work in int64, wrapping at the type's width. All
 * but PRelu walk their tensor contiguously, 16 bytes per access where
 * aligned (elem.cuh's cep_map1). Launcher: kernels/cuda/activation.c.
 * Kernels: <op>_<type> (hardswish_f16, gelutanh_f32, mish_bf16,
 * quickgelu_f32, biasgelutanh_f16, prelu_i64, clip_u8).
 */
#include "elem.cuh"

enum { ACT_LEAKY_RELU, ACT_ELU, ACT_HARD_SIGMOID, ACT_HARD_SWISH, ACT_SOFTPLUS,
       ACT_GELU, ACT_GELU_TANH, ACT_THRESHOLDED_RELU, ACT_MISH, ACT_QUICK_GELU, ACT_SELU,
       ACT_CELU, ACT_SOFTSIGN, ACT_SWISH, ACT_SHRINK };

template <int OP> __device__ __forceinline__ float act_f(float v, float alpha, float beta)
{
	/* sqrt(2 / pi) and 1 / sqrt(2) */
	const float k_tanh = 0.7978845608028654f, k_erf = 0.7071067811865476f;
	float h;

	switch (OP) {
	case ACT_LEAKY_RELU:
		return v < 0.0f ? alpha * v : v;
	case ACT_ELU:
		return v < 0.0f ? alpha * expm1f(v) : v;
	case ACT_HARD_SIGMOID:
	case ACT_HARD_SWISH:
		h = __fmul_rn(alpha, v) + beta;
		h = h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h;
		return OP == ACT_HARD_SWISH ? v * h : h;
	case ACT_SOFTPLUS:
		return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
	case ACT_GELU:
		return 0.5f * v * (1.0f + erff(v * k_erf));
	case ACT_THRESHOLDED_RELU:
		return v > alpha ? v : 0.0f;
	case ACT_MISH:
		h = v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
		return v * tanhf(h);
	case ACT_QUICK_GELU:
		return v * (1.0f / (1.0f + expf(-(alpha * v))));
	case ACT_SELU:
		/* alpha is alpha, beta gamma. */
		return v > 0.0f ? beta * v : beta * (__fmul_rn(alpha, expf(v)) - alpha);
	case ACT_CELU:
		if (v != v)
			return v;
		h = __fmul_rn(alpha, expm1f(v / alpha));
		return (v > 0.0f ? v : 0.0f) + (h < 0.0f ? h : 0.0f);
	case ACT_SOFTSIGN:
		return v / (1.0f + fabsf(v));
	case ACT_SWISH:
		h = alpha * v;
		h = h >= 0.0f ? 1.0f / (1.0f + expf(-h)) : expf(h) / (1.0f + expf(h));
		return v * h;
	case ACT_SHRINK:
		/* alpha is lambd, beta bias. */
		return v < -alpha ? v + beta : v > alpha ? v - beta : 0.0f;
	default:
		return 0.5f * v *
		       (1.0f + tanhf(k_tanh * (v + __fmul_rn(__fmul_rn(0.044715f * v, v), v))));
	}
}

/* Double to int64 toward zero, saturating, as the host's cpu_f2i(). */
__device__ __forceinline__ i64 act_d2i(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return CEP_INT64_MAX;
	if (v <= -9223372036854775808.0)
		return CEP_INT64_MIN;
	return (i64)v;
}

/* Shrink of an integer, in double as the host's act_shrink_i(). */
__device__ __forceinline__ i64 act_shrink_i(i64 v, float lambd, float bias)
{
	double d = (double)v;

	if (d < -(double)lambd)
		return act_d2i(d + (double)bias);
	if (d > (double)lambd)
		return act_d2i(d - (double)bias);
	return 0;
}

template <int OP> struct act_fn {
	float alpha, beta;

	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		if (OP == ACT_SHRINK && !cep_is_float<T>::value)
			st_i(o, io, act_shrink_i(ld_i(a, ia), alpha, beta));
		else
			st_f(o, io, act_f<OP>(ld_f(a, ia), alpha, beta));
	}
};

template <typename T, int OP>
__device__ __forceinline__ void activation(const T *a, T *o, i64 n, float alpha, float beta)
{
	act_fn<OP> f = { alpha, beta };

	cep_map1(a, o, n, f);
}

#define ACT_KERNEL(name, OP, T, sfx)                                            \
	extern "C" __global__ void name##_##sfx(const T *a, T *o, i64 n,         \
						float alpha, float beta)         \
	{                                                                       \
		activation<T, OP>(a, o, n, alpha, beta);                        \
	}

#define ACT_TYPES(name, OP)                     \
	ACT_KERNEL(name, OP, float, f32)        \
	ACT_KERNEL(name, OP, f16, f16)          \
	ACT_KERNEL(name, OP, bf16, bf16)

ACT_TYPES(leakyrelu, ACT_LEAKY_RELU)
ACT_TYPES(elu, ACT_ELU)
ACT_TYPES(hardsigmoid, ACT_HARD_SIGMOID)
ACT_TYPES(hardswish, ACT_HARD_SWISH)
ACT_TYPES(softplus, ACT_SOFTPLUS)
ACT_TYPES(gelu, ACT_GELU)
ACT_TYPES(thresholdedrelu, ACT_THRESHOLDED_RELU)
ACT_TYPES(mish, ACT_MISH)
ACT_TYPES(gelutanh, ACT_GELU_TANH)
ACT_TYPES(selu, ACT_SELU)
ACT_TYPES(celu, ACT_CELU)
ACT_TYPES(softsign, ACT_SOFTSIGN)
ACT_TYPES(swish, ACT_SWISH)
ACT_TYPES(shrink, ACT_SHRINK)
ACT_KERNEL(shrink, ACT_SHRINK, i64, i64)
ACT_KERNEL(shrink, ACT_SHRINK, i32, i32)
ACT_KERNEL(shrink, ACT_SHRINK, i8, i8)
ACT_KERNEL(shrink, ACT_SHRINK, u8, u8)
ACT_TYPES(quickgelu, ACT_QUICK_GELU)

/* ------------------------------------------- Gelu of input + bias */

/* onnxruntime's BiasGelu and FastGelu with its bias: the activation of
 * a + bias, bias a row of bias_n elements along the last dimension, added
 * in float and not rounded to T first. */
template <typename T, int OP>
__device__ __forceinline__ void bias_activation(const T *a, const T *bias, T *o, i64 n,
						i64 bias_n)
{
	CEP_FOR(i, n) {
		st_f(o, i, act_f<OP>(__fadd_rn(ld_f(a, i), ld_f(bias, i % bias_n)), 0.0f, 0.0f));
	}
}

#define BIAS_ACT_KERNEL(name, OP, T, sfx)                                             \
	extern "C" __global__ void name##_##sfx(const T *a, const T *bias, T *o, i64 n, \
						i64 bias_n)                            \
	{                                                                             \
		bias_activation<T, OP>(a, bias, o, n, bias_n);                        \
	}

#define BIAS_ACT_TYPES(name, OP)                     \
	BIAS_ACT_KERNEL(name, OP, float, f32)        \
	BIAS_ACT_KERNEL(name, OP, f16, f16)          \
	BIAS_ACT_KERNEL(name, OP, bf16, bf16)

BIAS_ACT_TYPES(biasgelu, ACT_GELU)
BIAS_ACT_TYPES(biasgelutanh, ACT_GELU_TANH)

/* ------------------------------------------------------------------ PRelu */

/* Operand 0 is X, operand 1 the slope broadcast to X's shape. */
template <typename T>
__device__ __forceinline__ void prelu(const T *a, const T *s, T *o, const cep_bcast &p)
{
	CEP_FOR(i, p.n) {
		i64 ia, is;

		cep_bcast_at(p, i, &ia, &is);
		if (cep_is_float<T>::value) {
			float v = ld_f(a, ia);

			st_f(o, i, v < 0.0f ? v * ld_f(s, is) : v);
		} else {
			i64 v = ld_i(a, ia);

			st_i(o, i, v < 0 ? (i64)((u64)v * (u64)ld_i(s, is)) : v);
		}
	}
}

#define PRELU_KERNEL(T, sfx)                                                    \
	extern "C" __global__ void prelu_##sfx(const T *a, const T *s, T *o,     \
					       cep_bcast p)                     \
	{                                                                       \
		prelu<T>(a, s, o, p);                                           \
	}

PRELU_KERNEL(float, f32)
PRELU_KERNEL(f16, f16)
PRELU_KERNEL(bf16, bf16)
PRELU_KERNEL(i64, i64)
PRELU_KERNEL(i32, i32)

/* ------------------------------------------------------------------- Clip */

/* min(max(x, l), h) in the spec's order, so l > h gives h and NaN stays
 * NaN; in float, or in int64 for integers (V). */
template <typename V> struct clip_fn {
	V l, h;

	template <typename T>
	__device__ __forceinline__ void operator()(const T *a, i64 ia, T *o, i64 io) const
	{
		if (cep_is_float<T>::value) {
			float v = ld_f(a, ia);

			v = v < (float)l ? (float)l : v;
			st_f(o, io, v > (float)h ? (float)h : v);
		} else {
			i64 v = ld_i(a, ia);

			v = v < (i64)l ? (i64)l : v;
			st_i(o, io, v > (i64)h ? (i64)h : v);
		}
	}
};

/*
 * The bounds are read from device memory when the inputs lo and hi are
 * given (from opset 11), else taken from flo and fhi (floats) or ilo and
 * ihi (integers): the attributes or the type's limits.
 */
template <typename T>
__device__ __forceinline__ void clip(const T *a, T *o, i64 n, const T *lo, const T *hi,
				     float flo, float fhi, i64 ilo, i64 ihi)
{
	if (cep_is_float<T>::value) {
		clip_fn<float> f = { lo != nullptr ? ld_f(lo, 0) : flo,
				     hi != nullptr ? ld_f(hi, 0) : fhi };

		cep_map1(a, o, n, f);
	} else {
		clip_fn<i64> f = { lo != nullptr ? ld_i(lo, 0) : ilo,
				   hi != nullptr ? ld_i(hi, 0) : ihi };

		cep_map1(a, o, n, f);
	}
}

#define CLIP_KERNEL(T, sfx)                                                     \
	extern "C" __global__ void clip_##sfx(const T *a, T *o, i64 n, const T *lo, \
					      const T *hi, float flo, float fhi, \
					      i64 ilo, i64 ihi)                 \
	{                                                                       \
		clip<T>(a, o, n, lo, hi, flo, fhi, ilo, ihi);                   \
	}

CLIP_KERNEL(float, f32)
CLIP_KERNEL(f16, f16)
CLIP_KERNEL(bf16, bf16)
CLIP_KERNEL(i64, i64)
CLIP_KERNEL(i32, i32)
CLIP_KERNEL(i8, i8)
CLIP_KERNEL(u8, u8)
