/*
 * cpu.h — what the reference kernels of kernels/cpu share: element loads
 * and stores for every stored type (float16 and bfloat16 are computed in
 * float32, float64 in double, integers in int64; the float8 types, which
 * qtypes.h encodes and decodes, are loaded exactly and stored
 * saturating, and so are the 4-bit types, a byte each), conversions between the float formats, and an iterator
 * for numpy broadcasting. Internal to kernels/cpu.
 *
 * uint64 is the one type int64 cannot hold: cpu_load_i() gives its bits,
 * which add, subtract, multiply and wrap as they should, and the kernels
 * that order, divide, shift or convert it read it with cpu_lt_i(),
 * cpu_i2d() or their own uint64 path.
 */
#ifndef CEP_KERNELS_CPU_H
#define CEP_KERNELS_CPU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/qtypes.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

/* --------------------------------------------------------- float formats */

static inline float cpu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000 | (man << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else {
		/* Zero or subnormal: man units of 2^-24, exact in float. */
		f = (float)man * 0x1p-24f;
		return sign ? -f : f;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Rounds to nearest, ties to even, as hardware conversions do. */
static inline uint16_t cpu_f32_to_f16(float f)
{
	uint32_t x, ax, sign;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	ax = x & 0x7fffffff;
	if (ax > 0x7f800000)
		return (uint16_t)(sign | 0x7e00);
	if (ax >= 0x477ff000) /* 65520 and up round to infinity */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000) {
		/* Below 2^-14 the result is subnormal: count units of 2^-24;
		 * the scaling is exact and nearbyintf() rounds to even. */
		float a;

		memcpy(&a, &ax, sizeof(a));
		return (uint16_t)(sign | (uint32_t)nearbyintf(a * 0x1p24f));
	}
	/* Rebias the exponent (127 - 15) and round at bit 13. */
	ax = ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u);
	return (uint16_t)(sign | (ax >> 13));
}

static inline float cpu_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static inline uint16_t cpu_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

/*
 * float64 to float32 rounded to odd: the nearest float toward zero, its
 * last bit set when the value was not exact. Rounding that again to a
 * format of at most 11 significant bits (float16, bfloat16) gives the
 * double's own nearest value, where two roundings to nearest would
 * sometimes not.
 */
static inline float cpu_f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t x;

	if ((double)f == d || f != f || d > 3.4028234663852886e38 || d < -3.4028234663852886e38)
		return f;
	memcpy(&x, &f, sizeof(x));
	if (fabs((double)f) > fabs(d))
		x -= 1; /* (float)d rounded away from zero: the float below it */
	x |= 1;
	memcpy(&f, &x, sizeof(f));
	return f;
}

static inline uint16_t cpu_f64_to_f16(double d)
{
	return cpu_f32_to_f16(cpu_f64_to_f32_odd(d));
}

static inline uint16_t cpu_f64_to_bf16(double d)
{
	return cpu_f32_to_bf16(cpu_f64_to_f32_odd(d));
}

/* --------------------------------------------------------- element access */

static inline bool cpu_is_f8(cep_dtype t)
{
	return t >= CEP_DTYPE_FLOAT8E4M3FN && t <= CEP_DTYPE_FLOAT8E5M2FNUZ;
}

static inline bool cpu_is_float(cep_dtype t)
{
	return t == CEP_DTYPE_FLOAT32 || t == CEP_DTYPE_FLOAT16 ||
	       t == CEP_DTYPE_BFLOAT16 || t == CEP_DTYPE_FLOAT64 || cpu_is_f8(t) ||
	       t == CEP_DTYPE_FLOAT4E2M1;
}

/* The opset from which Cast and CastLike take type t: 7 for bfloat16, 19
 * for float8, 21 for int4 and uint4, 23 for float4e2m1, 1 for the others. */
static inline int cpu_cast_since(cep_dtype t)
{
	if (t == CEP_DTYPE_BFLOAT16)
		return 7;
	if (cpu_is_f8(t))
		return 19;
	if (t == CEP_DTYPE_INT4 || t == CEP_DTYPE_UINT4)
		return 21;
	return t == CEP_DTYPE_FLOAT4E2M1 ? 23 : 1;
}

/* Stores v into element i of p, of float8 type t, rounded to nearest
 * even once (through a float32 rounded to odd), saturating to the type's
 * largest value or not as ONNX's Cast says (kernels/cpu/qtypes.h). */
static inline void cpu_store_f8(void *p, cep_dtype t, int64_t i, double v, bool saturate);

static inline bool cpu_is_unsigned(cep_dtype t)
{
	return t == CEP_DTYPE_UINT8 || t == CEP_DTYPE_UINT16 || t == CEP_DTYPE_UINT32 ||
	       t == CEP_DTYPE_UINT64 || t == CEP_DTYPE_UINT4;
}

/* Element i of p (of type t) as a double: exact but for integers past
 * 2^53, which round to nearest. */
static inline double cpu_load_d(const void *p, cep_dtype t, int64_t i)
{
	switch (t) {
	case CEP_DTYPE_FLOAT64: return ((const double *)p)[i];
	case CEP_DTYPE_FLOAT32: return ((const float *)p)[i];
	case CEP_DTYPE_FLOAT16: return cpu_f16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_BFLOAT16: return cpu_bf16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_INT64: return (double)((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return ((const int32_t *)p)[i];
	case CEP_DTYPE_INT16: return ((const int16_t *)p)[i];
	case CEP_DTYPE_INT8: return ((const int8_t *)p)[i];
	case CEP_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
	case CEP_DTYPE_UINT32: return ((const uint32_t *)p)[i];
	case CEP_DTYPE_UINT16: return ((const uint16_t *)p)[i];
	case CEP_DTYPE_UINT8: return ((const uint8_t *)p)[i];
	case CEP_DTYPE_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ:
		return qtype_f8_decode(qtype_f8_of(t), ((const uint8_t *)p)[i]);
	case CEP_DTYPE_INT4: return (double)qtype_int4_load(((const uint8_t *)p)[i], true);
	case CEP_DTYPE_UINT4: return (double)qtype_int4_load(((const uint8_t *)p)[i], false);
	case CEP_DTYPE_FLOAT4E2M1: return qtype_f4_decode(((const uint8_t *)p)[i]);
	default: return 0.0;
	}
}

/* x rounded to the float type t, as storing and loading it would make it
 * (x itself for float32 and the other types). */
static inline float cpu_round_f(float x, cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_FLOAT16: return cpu_f16_to_f32(cpu_f32_to_f16(x));
	case CEP_DTYPE_BFLOAT16: return cpu_bf16_to_f32(cpu_f32_to_bf16(x));
	default: return x;
	}
}

/* Element i of p (of type t) as a float; integers and float64 round once. */
static inline float cpu_load_f(const void *p, cep_dtype t, int64_t i)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: return ((const float *)p)[i];
	case CEP_DTYPE_FLOAT16: return cpu_f16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_BFLOAT16: return cpu_bf16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_FLOAT64: return (float)((const double *)p)[i];
	case CEP_DTYPE_INT64: return (float)((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return (float)((const int32_t *)p)[i];
	case CEP_DTYPE_UINT32: return (float)((const uint32_t *)p)[i];
	case CEP_DTYPE_UINT64: return (float)((const uint64_t *)p)[i];
	default: return (float)cpu_load_d(p, t, i); /* exact in float */
	}
}

/* Converts a float to int64 toward zero; NaN gives 0 and values out of
 * range saturate, where C would leave the result undefined. */
static inline int64_t cpu_f2i(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

/* The same into uint64's bits: values from 2^63 up convert unsigned
 * (saturating at 2^64 - 1), the rest as cpu_f2i() does, a negative one
 * then wrapping as numpy's conversion does. */
static inline int64_t cpu_f2u(double v)
{
	if (v >= 18446744073709551615.0)
		return (int64_t)UINT64_MAX;
	if (v >= 9223372036854775808.0)
		return (int64_t)(uint64_t)v;
	return cpu_f2i(v);
}

/*
 * Element i of p (of type t) as an int64: floats truncated and saturated
 * (cpu_f2i()), uint64 as its bits, which two's complement arithmetic
 * treats as it should except to order, divide or convert them: see
 * cpu_lt_i() and cpu_i2d().
 */
static inline int64_t cpu_load_i(const void *p, cep_dtype t, int64_t i)
{
	switch (t) {
	case CEP_DTYPE_INT64: return ((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return ((const int32_t *)p)[i];
	case CEP_DTYPE_INT16: return ((const int16_t *)p)[i];
	case CEP_DTYPE_INT8: return ((const int8_t *)p)[i];
	case CEP_DTYPE_UINT64: return (int64_t)((const uint64_t *)p)[i];
	case CEP_DTYPE_UINT32: return ((const uint32_t *)p)[i];
	case CEP_DTYPE_UINT16: return ((const uint16_t *)p)[i];
	case CEP_DTYPE_UINT8: return ((const uint8_t *)p)[i];
	case CEP_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
	case CEP_DTYPE_INT4: return qtype_int4_load(((const uint8_t *)p)[i], true);
	case CEP_DTYPE_UINT4: return qtype_int4_load(((const uint8_t *)p)[i], false);
	case CEP_DTYPE_FLOAT4E2M1:
	case CEP_DTYPE_FLOAT32:
	case CEP_DTYPE_FLOAT16:
	case CEP_DTYPE_BFLOAT16:
	case CEP_DTYPE_FLOAT64:
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ: return cpu_f2i(cpu_load_d(p, t, i));
	default: return 0;
	}
}

/* v, a value of integer type t as cpu_load_i() gives it, as a double. */
static inline double cpu_i2d(cep_dtype t, int64_t v)
{
	return t == CEP_DTYPE_UINT64 ? (double)(uint64_t)v : (double)v;
}

/* An int64 that orders among others of type t as v, a value of t as
 * cpu_load_i() gives it, does: uint64's bits with the top one flipped. */
static inline int64_t cpu_order_key(cep_dtype t, int64_t v)
{
	return t == CEP_DTYPE_UINT64 ? (int64_t)((uint64_t)v ^ UINT64_C(0x8000000000000000)) : v;
}

/* Whether a < b, two values of integer type t as cpu_load_i() gives them. */
static inline bool cpu_lt_i(cep_dtype t, int64_t a, int64_t b)
{
	return t == CEP_DTYPE_UINT64 ? (uint64_t)a < (uint64_t)b : a < b;
}

/* Stores v, wrapping to the width of t as two's complement does. */
static inline void cpu_store_i(void *p, cep_dtype t, int64_t i, int64_t v)
{
	switch (t) {
	case CEP_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
	case CEP_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
	case CEP_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
	case CEP_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
	case CEP_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case CEP_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)(uint64_t)v; break;
	case CEP_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)(uint64_t)v; break;
	case CEP_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
	case CEP_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case CEP_DTYPE_FLOAT64: ((double *)p)[i] = (double)v; break;
	case CEP_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
	case CEP_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_f16((float)v); break;
	case CEP_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_bf16((float)v); break;
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ: cpu_store_f8(p, t, i, (double)v, true); break;
	case CEP_DTYPE_INT4: ((uint8_t *)p)[i] = qtype_int4_wrap(v, true); break;
	case CEP_DTYPE_UINT4: ((uint8_t *)p)[i] = qtype_int4_wrap(v, false); break;
	case CEP_DTYPE_FLOAT4E2M1: ((uint8_t *)p)[i] = qtype_f4_encode((double)v); break;
	default: break;
	}
}

/* Stores a double: float types round to nearest once (float8 saturating,
 * Cast's default), integer types truncate as cpu_f2i() (uint64:
 * cpu_f2u()) does and wrap to their width, but int4 and uint4, which take
 * 0 for a value out of their range (qtype_int4_from_real()). */
static inline void cpu_store_d(void *p, cep_dtype t, int64_t i, double v)
{
	switch (t) {
	case CEP_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
	case CEP_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
	case CEP_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_f64_to_f16(v); break;
	case CEP_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_f64_to_bf16(v); break;
	case CEP_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
	case CEP_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)cpu_f2u(v); break;
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ: cpu_store_f8(p, t, i, v, true); break;
	case CEP_DTYPE_INT4: ((uint8_t *)p)[i] = qtype_int4_from_real(v, true); break;
	case CEP_DTYPE_UINT4: ((uint8_t *)p)[i] = qtype_int4_from_real(v, false); break;
	case CEP_DTYPE_FLOAT4E2M1: ((uint8_t *)p)[i] = qtype_f4_encode(v); break;
	default: cpu_store_i(p, t, i, cpu_f2i(v)); break;
	}
}

static inline void cpu_store_f8(void *p, cep_dtype t, int64_t i, double v, bool saturate)
{
	((uint8_t *)p)[i] = qtype_f8_encode(qtype_f8_of(t), cpu_f64_to_f32_odd(v), saturate);
}

static inline void cpu_store_f(void *p, cep_dtype t, int64_t i, float v)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: ((float *)p)[i] = v; break;
	case CEP_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_f16(v); break;
	case CEP_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_bf16(v); break;
	default: cpu_store_d(p, t, i, v); break;
	}
}

/*
 * Converts element i of src (of type from) into element i of dst (of type
 * to) with Cast's rules: from a float type through double (narrowing
 * rounds to nearest even, once; to float8 saturating or not, as saturate
 * says); float to integer as cpu_store_d() has it; an integer to a float
 * type rounds once (the 16-bit and 8-bit formats through float32, which
 * holds every integer they can); between integer and bool types with
 * two's complement wrapping; anything to bool is "not zero".
 */
static inline void cpu_convert(void *dst, cep_dtype to, const void *src, cep_dtype from,
			       int64_t i, bool saturate)
{
	int64_t v;
	float f;

	if (cpu_is_f8(to)) {
		if (cpu_is_float(from))
			cpu_store_f8(dst, to, i, cpu_load_d(src, from, i), saturate);
		else
			cpu_store_f8(dst, to, i, (float)cpu_i2d(from, cpu_load_i(src, from, i)),
				     saturate);
		return;
	}
	if (cpu_is_float(from)) {
		cpu_store_d(dst, to, i, cpu_load_d(src, from, i));
		return;
	}
	v = cpu_load_i(src, from, i);
	if (to == CEP_DTYPE_FLOAT64) {
		((double *)dst)[i] = cpu_i2d(from, v);
		return;
	}
	if (!cpu_is_float(to)) {
		cpu_store_i(dst, to, i, v);
		return;
	}
	f = from == CEP_DTYPE_UINT64 ? (float)(uint64_t)v : (float)v;
	cpu_store_f(dst, to, i, f);
}

/* The float types of a reference kernel that computes in float32 alone
 * (Conv, the RNNs, the windowed pools, ...): its table takes these, so that
 * a float64 node is refused by the lookup, with the list of what the
 * kernel takes, rather than computed with float32's precision. */
#define CPU_DTS_FLOAT_NO_F64 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_FLOAT64))

/* The element count of a tensor whose shape the planner fixed. */
static inline int64_t cpu_numel(const struct op_tensor *t)
{
	return op_dims_product(t, 0, t->rank);
}

/* ----------------------------------------------------------- broadcasting */

#define CPU_BCAST_MAX_IN 4

/*
 * Walks an output in rows while tracking where each input's element is,
 * for numpy broadcasting. Dimensions that are contiguous in every operand
 * are merged first, so same-shaped operands make a single long row.
 *
 *	cpu_bcast_init(&bc, out, ins, n);
 *	for (r = 0; r < bc.rows; r++) {
 *		for (j = 0; j < bc.inner; j++)
 *			out[r * bc.inner + j] = f(a[bc.off[0] + j * bc.step[0]], ...);
 *		cpu_bcast_next(&bc);
 *	}
 */
struct cpu_bcast {
	int n;                                  /* inputs */
	int rank;                               /* after merging */
	int64_t dims[CEP_MAX_RANK];             /* (rank) */
	int64_t strides[CPU_BCAST_MAX_IN][CEP_MAX_RANK]; /* elements; 0: broadcast */
	int64_t idx[CEP_MAX_RANK];              /* position of the current row */
	int64_t rows, inner;                    /* rows * inner = output numel */
	int64_t off[CPU_BCAST_MAX_IN];          /* current row's input offsets */
	int64_t step[CPU_BCAST_MAX_IN];         /* stride along the row */
};

void cpu_bcast_init(struct cpu_bcast *bc, const struct op_tensor *out,
		    const struct op_tensor *const *in, int n);
void cpu_bcast_next(struct cpu_bcast *bc);

#endif
