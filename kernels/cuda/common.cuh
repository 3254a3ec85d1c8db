/*
 * common.cuh — what every NVRTC source of kernels/cuda includes: fixed
 * width types (NVRTC compiles without the toolkit's headers), element
 * loads and stores for every type the engine stores with exactly the
 * conversions of the reference kernels (kernels/cpu/cpu.h: float16 and
 * bfloat16 computed in float, float64 in double, integers in int64 with
 * uint64 as its bits, float to integer truncating with NaN as 0 and
 * saturation), grid-stride loops, numpy broadcasting offsets, and the
 * fault record where kernels latch a bad index (gpu/cuda/cuda_kernels.h
 * declares the same record for the host).
 *
 * Structs passed as kernel arguments have a twin in kernels/cuda/launch.h;
 * both sides lay them out with explicit padding.
 */
#ifndef CEP_CUDA_COMMON_CUH
#define CEP_CUDA_COMMON_CUH

typedef long long i64;
typedef unsigned long long u64;
typedef int i32;
typedef unsigned int u32;
typedef short i16;
typedef unsigned short u16;
typedef signed char i8;
typedef unsigned char u8;

/* Storage types of the formats C++ has no arithmetic type for. */
struct f16 { u16 bits; };
struct bf16 { u16 bits; };
struct b8 { u8 v; };               /* bool: one byte, 0 or 1 */
struct alignas(16) u128 { u64 lo, hi; }; /* a 16-byte move */

#define CEP_MAX_RANK 8
#define CEP_INT64_MAX 9223372036854775807LL
#define CEP_INT64_MIN (-CEP_INT64_MAX - 1)

/* Every thread of the grid takes indices i, i + grid size, ... below n,
 * so any grid covers any n. */
#define CEP_FOR(i, n)                                                        \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (i64)(n); \
	     i += (i64)gridDim.x * blockDim.x)

/* ------------------------------------------------------- float formats */

/*
 * float16 <-> float32. From sm_53 on, the conversion instructions (one
 * each, where the bit-by-bit versions below take a dozen with branches:
 * an fp16 Add of 32768 x 768 went from 97 to 63 us with them on an H200,
 * bench/RESULTS.md); NaNs are handled apart so
 * that they come out as the host's conversions make them (payload kept
 * going up, a quiet NaN with the sign going down).
 */
__device__ __forceinline__ float cep_f16_to_f32_bits(u16 h)
{
	u32 sign = (u32)(h & 0x8000) << 16;
	u32 exp = (h >> 10) & 0x1f;
	u32 man = h & 0x3ff;

	if (exp == 0x1f)
		return __uint_as_float(sign | 0x7f800000u | (man << 13));
	if (exp != 0)
		return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
	/* Zero or subnormal: man units of 2^-24, exact in float. */
	float f = (float)man * 5.9604644775390625e-8f;
	return sign ? -f : f;
}

__device__ __forceinline__ float cep_f16_to_f32(u16 h)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
	float f;

	if ((h & 0x7fff) > 0x7c00)
		return cep_f16_to_f32_bits(h);
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
#else
	return cep_f16_to_f32_bits(h);
#endif
}

/* Round to nearest even; past 65520 in magnitude infinity. */
__device__ __forceinline__ u16 cep_f32_to_f16(float f)
{
	u32 x = __float_as_uint(f);
	u32 sign = (x >> 16) & 0x8000;
	u32 ax = x & 0x7fffffff;

	if (ax > 0x7f800000u)
		return (u16)(sign | 0x7e00);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
	u16 h;

	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
#else
	if (ax >= 0x477ff000u)
		return (u16)(sign | 0x7c00);
	if (ax < 0x38800000u)
		return (u16)(sign | (u32)rintf(__uint_as_float(ax) * 16777216.0f));
	ax = ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u);
	return (u16)(sign | (ax >> 13));
#endif
}

__device__ __forceinline__ float cep_bf16_to_f32(u16 h)
{
	return __uint_as_float((u32)h << 16);
}

__device__ __forceinline__ u16 cep_f32_to_bf16(float f)
{
	u32 x = __float_as_uint(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (u16)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (u16)(x >> 16);
}

/* Float to int64 toward zero; NaN gives 0, out of range saturates. */
__device__ __forceinline__ i64 cep_f2i(float v)
{
	if (v != v)
		return 0;
	if (v >= 9.2233720368547758e18f)
		return CEP_INT64_MAX;
	if (v <= -9.2233720368547758e18f)
		return CEP_INT64_MIN;
	return (i64)v;
}

/* Double to int64 toward zero; NaN gives 0, out of range saturates. */
__device__ __forceinline__ i64 cep_d2i(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return CEP_INT64_MAX;
	if (v <= -9223372036854775808.0)
		return CEP_INT64_MIN;
	return (i64)v;
}

/* The same into uint64's bits, as the host's cpu_f2u(): from 2^63 up the
 * value converts unsigned (saturating at 2^64 - 1), below it as
 * cep_d2i() has it, a negative one then wrapping. */
__device__ __forceinline__ i64 cep_d2u(double v)
{
	if (v >= 18446744073709551615.0)
		return (i64)~0ull;
	if (v >= 9223372036854775808.0)
		return (i64)(u64)v;
	return cep_d2i(v);
}

/*
 * float64 to float32 rounded to odd (toward zero, the last bit set when
 * inexact), so that rounding that to float16 or bfloat16 gives the
 * double's own nearest value, as the host's cpu_f64_to_f32_odd() does. A
 * NaN keeps its sign and the top of its payload, quieted, as the host's
 * conversion makes it.
 */
__device__ __forceinline__ float cep_f64_to_f32_odd(double d)
{
	float f;

	if (d != d) {
		u64 x = (u64)__double_as_longlong(d);

		return __uint_as_float((u32)(x >> 32 & 0x80000000u) | 0x7fc00000u |
				       (u32)(x >> 29 & 0x3fffffu));
	}
	f = __double2float_rz(d);
	if ((double)f != d)
		f = __uint_as_float(__float_as_uint(f) | 1u);
	return f;
}

/* ----------------------------------------------------- element access */

/* Whether T is computed in float (else in double for float64, int64 for
 * the integers and bool). */
template <typename T> struct cep_is_float { static const bool value = false; };
template <> struct cep_is_float<float> { static const bool value = true; };
template <> struct cep_is_float<f16> { static const bool value = true; };
template <> struct cep_is_float<bf16> { static const bool value = true; };

/* Whether T is float64, computed in double. */
template <typename T> struct cep_is_f64 { static const bool value = false; };
template <> struct cep_is_f64<double> { static const bool value = true; };

/* Whether T is uint64, whose bits int64 holds but does not order, divide
 * or convert as unsigned. */
template <typename T> struct cep_is_u64 { static const bool value = false; };
template <> struct cep_is_u64<u64> { static const bool value = true; };

/* Whether T is an unsigned integer type (a value of it is never negative). */
template <typename T> struct cep_is_unsigned { static const bool value = false; };
template <> struct cep_is_unsigned<u8> { static const bool value = true; };
template <> struct cep_is_unsigned<u16> { static const bool value = true; };
template <> struct cep_is_unsigned<u32> { static const bool value = true; };
template <> struct cep_is_unsigned<u64> { static const bool value = true; };

/* Element i as a float. */
__device__ __forceinline__ float ld_f(const float *p, i64 i) { return p[i]; }
__device__ __forceinline__ float ld_f(const f16 *p, i64 i) { return cep_f16_to_f32(p[i].bits); }
__device__ __forceinline__ float ld_f(const bf16 *p, i64 i) { return cep_bf16_to_f32(p[i].bits); }
__device__ __forceinline__ float ld_f(const i64 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const i32 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const i8 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const u8 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const b8 *p, i64 i) { return p[i].v ? 1.0f : 0.0f; }
__device__ __forceinline__ float ld_f(const double *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const i16 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const u16 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const u32 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld_f(const u64 *p, i64 i) { return (float)p[i]; }

/* Element i as a double (integers past 2^53 rounded to nearest). */
__device__ __forceinline__ double ld_d(const double *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const float *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const f16 *p, i64 i) { return ld_f(p, i); }
__device__ __forceinline__ double ld_d(const bf16 *p, i64 i) { return ld_f(p, i); }
__device__ __forceinline__ double ld_d(const i64 *p, i64 i) { return (double)p[i]; }
__device__ __forceinline__ double ld_d(const i32 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const i16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const i8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const u64 *p, i64 i) { return (double)p[i]; }
__device__ __forceinline__ double ld_d(const u32 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const u16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const u8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ double ld_d(const b8 *p, i64 i) { return p[i].v ? 1.0 : 0.0; }

/* Element i as an int64 (floats truncated and saturated). */
__device__ __forceinline__ i64 ld_i(const i64 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const i32 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const i8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const u8 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const b8 *p, i64 i) { return p[i].v != 0; }
__device__ __forceinline__ i64 ld_i(const float *p, i64 i) { return cep_f2i(ld_f(p, i)); }
__device__ __forceinline__ i64 ld_i(const f16 *p, i64 i) { return cep_f2i(ld_f(p, i)); }
__device__ __forceinline__ i64 ld_i(const bf16 *p, i64 i) { return cep_f2i(ld_f(p, i)); }
__device__ __forceinline__ i64 ld_i(const double *p, i64 i) { return cep_d2i(p[i]); }
__device__ __forceinline__ i64 ld_i(const i16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const u16 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const u32 *p, i64 i) { return p[i]; }
__device__ __forceinline__ i64 ld_i(const u64 *p, i64 i) { return (i64)p[i]; }

/* A float rounded to the float type T, as a store and a load make it. */
template <typename T> __device__ __forceinline__ float cep_round(float x);
template <> __device__ __forceinline__ float cep_round<float>(float x) { return x; }
template <> __device__ __forceinline__ float cep_round<f16>(float x)
{
	return cep_f16_to_f32(cep_f32_to_f16(x));
}
template <> __device__ __forceinline__ float cep_round<bf16>(float x)
{
	return cep_bf16_to_f32(cep_f32_to_bf16(x));
}

/* Stores a float (into an integer: truncated, then wrapped to its width). */
__device__ __forceinline__ void st_f(float *p, i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void st_f(f16 *p, i64 i, float v) { p[i].bits = cep_f32_to_f16(v); }
__device__ __forceinline__ void st_f(bf16 *p, i64 i, float v) { p[i].bits = cep_f32_to_bf16(v); }
__device__ __forceinline__ void st_f(i64 *p, i64 i, float v) { p[i] = cep_f2i(v); }
__device__ __forceinline__ void st_f(i32 *p, i64 i, float v) { p[i] = (i32)(u32)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(i8 *p, i64 i, float v) { p[i] = (i8)(u8)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(u8 *p, i64 i, float v) { p[i] = (u8)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(b8 *p, i64 i, float v) { p[i].v = v != 0.0f; }
__device__ __forceinline__ void st_f(double *p, i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void st_f(i16 *p, i64 i, float v) { p[i] = (i16)(u16)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(u16 *p, i64 i, float v) { p[i] = (u16)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(u32 *p, i64 i, float v) { p[i] = (u32)(u64)cep_f2i(v); }
__device__ __forceinline__ void st_f(u64 *p, i64 i, float v) { p[i] = (u64)cep_d2u(v); }

/* Stores an int64, wrapping to the width of the type. */
__device__ __forceinline__ void st_i(i64 *p, i64 i, i64 v) { p[i] = v; }
__device__ __forceinline__ void st_i(i32 *p, i64 i, i64 v) { p[i] = (i32)(u32)(u64)v; }
__device__ __forceinline__ void st_i(i8 *p, i64 i, i64 v) { p[i] = (i8)(u8)(u64)v; }
__device__ __forceinline__ void st_i(u8 *p, i64 i, i64 v) { p[i] = (u8)(u64)v; }
__device__ __forceinline__ void st_i(b8 *p, i64 i, i64 v) { p[i].v = v != 0; }
__device__ __forceinline__ void st_i(float *p, i64 i, i64 v) { st_f(p, i, (float)v); }
__device__ __forceinline__ void st_i(f16 *p, i64 i, i64 v) { st_f(p, i, (float)v); }
__device__ __forceinline__ void st_i(bf16 *p, i64 i, i64 v) { st_f(p, i, (float)v); }
__device__ __forceinline__ void st_i(double *p, i64 i, i64 v) { p[i] = (double)v; }
__device__ __forceinline__ void st_i(i16 *p, i64 i, i64 v) { p[i] = (i16)(u16)(u64)v; }
__device__ __forceinline__ void st_i(u16 *p, i64 i, i64 v) { p[i] = (u16)(u64)v; }
__device__ __forceinline__ void st_i(u32 *p, i64 i, i64 v) { p[i] = (u32)(u64)v; }
__device__ __forceinline__ void st_i(u64 *p, i64 i, i64 v) { p[i] = (u64)v; }

/* Stores a double: float types round to nearest once, integers truncate
 * (cep_d2i(), uint64 cep_d2u()) and wrap to their width. */
__device__ __forceinline__ void st_d(double *p, i64 i, double v) { p[i] = v; }
__device__ __forceinline__ void st_d(float *p, i64 i, double v) { p[i] = (float)v; }
__device__ __forceinline__ void st_d(f16 *p, i64 i, double v)
{
	p[i].bits = cep_f32_to_f16(cep_f64_to_f32_odd(v));
}
__device__ __forceinline__ void st_d(bf16 *p, i64 i, double v)
{
	p[i].bits = cep_f32_to_bf16(cep_f64_to_f32_odd(v));
}
__device__ __forceinline__ void st_d(i64 *p, i64 i, double v) { p[i] = cep_d2i(v); }
__device__ __forceinline__ void st_d(i32 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(i16 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(i8 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(u64 *p, i64 i, double v) { p[i] = (u64)cep_d2u(v); }
__device__ __forceinline__ void st_d(u32 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(u16 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(u8 *p, i64 i, double v) { st_i(p, i, cep_d2i(v)); }
__device__ __forceinline__ void st_d(b8 *p, i64 i, double v) { p[i].v = v != 0.0; }

/* Whether a < b, two values of integer type T as ld_i() gives them. */
template <typename T> __device__ __forceinline__ bool cep_lt_i(i64 a, i64 b)
{
	return cep_is_u64<T>::value ? (u64)a < (u64)b : a < b;
}

/* ------------------------------------------------------- broadcasting */

/* Two operands broadcast to an output of n elements: the output's dims
 * (merged where both operands are contiguous) and each operand's element
 * stride per dim, 0 along a broadcast one. Twin: struct cuda_bcast. */
struct cep_bcast {
	i32 rank;                       /* >= 1 */
	i32 pad;
	i64 n;
	i64 dims[CEP_MAX_RANK];         /* (rank) */
	i64 stride[2][CEP_MAX_RANK];    /* (2, rank) */
};

/* Where output element i reads each operand. */
__device__ __forceinline__ void cep_bcast_at(const cep_bcast &p, i64 i, i64 *oa, i64 *ob)
{
	i64 a = 0, b = 0;

	if (p.rank == 1) {
		*oa = i * p.stride[0][0];
		*ob = i * p.stride[1][0];
		return;
	}
	for (int d = p.rank - 1; d >= 0; d--) {
		i64 q = i / p.dims[d];
		i64 k = i - q * p.dims[d];

		a += k * p.stride[0][d];
		b += k * p.stride[1][d];
		i = q;
	}
	*oa = a;
	*ob = b;
}

/* ------------------------------------------------------------- faults */

/* Twin: struct cuda_fault. */
struct cep_fault {
	u32 flag;
	i32 axis;
	u64 site;
	i64 value;
	i64 limit;
};

/* What a latched fault is (its flag); twin: enum cuda_fault_kind. */
enum {
	CEP_FAULT_INDEX = 1,    /* value is out of [-limit, limit) on axis */
	CEP_FAULT_AXIS = 2,     /* entry axis of an axes list names value, out
	                         * of range for rank limit or repeated */
	CEP_FAULT_SHAPE = 3,    /* values read at run time give value elements
	                         * along axis where the plan has limit */
	CEP_FAULT_STEP = 4,     /* a Slice step of 0 on axis */
	CEP_FAULT_TRAINING = 5, /* Dropout in training mode: value holds the
	                         * ratio's float bits */
	CEP_FAULT_VALUE = 6,    /* an input's value for axis, value, is not
	                         * allowed (limit: the bound it broke, or 0) */
};

/* Latches the first fault of a run; later ones leave it alone. The fields
 * are read only after the stream completed, so plain stores after the
 * winning CAS are enough. */
__device__ __forceinline__ void cep_fault_latch_kind(cep_fault *f, u32 kind, u64 site,
						     int axis, i64 value, i64 limit)
{
	if (atomicCAS(&f->flag, 0u, kind) == 0u) {
		f->axis = axis;
		f->site = site;
		f->value = value;
		f->limit = limit;
	}
}

/* Latches a bad index (CEP_FAULT_INDEX). */
__device__ __forceinline__ void cep_fault_latch(cep_fault *f, u64 site, int axis,
						i64 value, i64 limit)
{
	cep_fault_latch_kind(f, CEP_FAULT_INDEX, site, axis, value, limit);
}

#endif
