/*
 * cpu.h — what the reference kernels of kernels/cpu share: element loads
 * and stores for every stored type (float16 and bfloat16 are computed in
 * float32, integers in int64), conversions between the float formats, and
 * an iterator for numpy broadcasting. Internal to kernels/cpu.
 */
#ifndef CEP_KERNELS_CPU_H
#define CEP_KERNELS_CPU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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

/* --------------------------------------------------------- element access */

static inline bool cpu_is_float(cep_dtype t)
{
	return t == CEP_DTYPE_FLOAT32 || t == CEP_DTYPE_FLOAT16 ||
	       t == CEP_DTYPE_BFLOAT16;
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

/* Element i of p (of type t) as a float. */
static inline float cpu_load_f(const void *p, cep_dtype t, int64_t i)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: return ((const float *)p)[i];
	case CEP_DTYPE_FLOAT16: return cpu_f16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_BFLOAT16: return cpu_bf16_to_f32(((const uint16_t *)p)[i]);
	case CEP_DTYPE_INT64: return (float)((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return (float)((const int32_t *)p)[i];
	case CEP_DTYPE_INT8: return (float)((const int8_t *)p)[i];
	case CEP_DTYPE_UINT8: return (float)((const uint8_t *)p)[i];
	case CEP_DTYPE_BOOL: return ((const uint8_t *)p)[i] ? 1.0f : 0.0f;
	default: return 0.0f;
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

/* Element i of p (of type t) as an int64 (floats truncated, saturated). */
static inline int64_t cpu_load_i(const void *p, cep_dtype t, int64_t i)
{
	switch (t) {
	case CEP_DTYPE_INT64: return ((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return ((const int32_t *)p)[i];
	case CEP_DTYPE_INT8: return ((const int8_t *)p)[i];
	case CEP_DTYPE_UINT8: return ((const uint8_t *)p)[i];
	case CEP_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
	case CEP_DTYPE_FLOAT32:
	case CEP_DTYPE_FLOAT16:
	case CEP_DTYPE_BFLOAT16: return cpu_f2i(cpu_load_f(p, t, i));
	default: return 0;
	}
}

static inline void cpu_store_f(void *p, cep_dtype t, int64_t i, float v)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: ((float *)p)[i] = v; break;
	case CEP_DTYPE_FLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_f16(v); break;
	case CEP_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = cpu_f32_to_bf16(v); break;
	case CEP_DTYPE_INT64: ((int64_t *)p)[i] = cpu_f2i(v); break;
	case CEP_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)cpu_f2i(v); break;
	case CEP_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)cpu_f2i(v); break;
	case CEP_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)cpu_f2i(v); break;
	case CEP_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0.0f; break;
	default: break;
	}
}

/* Stores v, wrapping to the width of t as two's complement does. */
static inline void cpu_store_i(void *p, cep_dtype t, int64_t i, int64_t v)
{
	switch (t) {
	case CEP_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
	case CEP_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
	case CEP_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
	case CEP_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
	case CEP_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case CEP_DTYPE_FLOAT32:
	case CEP_DTYPE_FLOAT16:
	case CEP_DTYPE_BFLOAT16: cpu_store_f(p, t, i, (float)v); break;
	default: break;
	}
}

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
