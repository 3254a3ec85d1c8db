/*
 * chunk.h — bulk element conversion for the reductions and normalizations
 * of kernels/cpu (reduce.c, argmax.c, logsoftmax.c, norm.c): a run of
 * elements of any stored type is loaded into a small array of doubles or
 * int64s, or stored back from one, with the switch on the type taken once
 * per run instead of once per element. Kernels walk their rows in chunks of
 * CHUNK_N elements kept on the stack, so nothing is allocated.
 *
 * Floats are widened to double (exactly); integers load into int64 exactly
 * (uint64 as its bits, as cpu_load_i() has it) and into double as the
 * nearest value. Stores narrow as cpu.h does: float types round to
 * nearest, integer types truncate a double toward zero (saturating) and
 * wrap an int64 to their width.
 */
#ifndef CEP_KERNELS_CPU_CHUNK_H
#define CEP_KERNELS_CPU_CHUNK_H

#include "kernels/cpu/cpu.h"

#define CHUNK_N 256 /* elements per chunk: 2 KiB of doubles on the stack */

/* Loads p[at .. at+n) of type t into dst as doubles. */
static inline void chunk_load_d(const void *p, cep_dtype t, int64_t at, int n, double *dst)
{
	int j;

	switch (t) {
	case CEP_DTYPE_FLOAT64:
		memcpy(dst, (const double *)p + at, sizeof(double) * (size_t)n);
		break;
	case CEP_DTYPE_FLOAT32: {
		const float *s = (const float *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = s[j];
		break;
	}
	case CEP_DTYPE_FLOAT16: {
		const uint16_t *s = (const uint16_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = cpu_f16_to_f32(s[j]);
		break;
	}
	case CEP_DTYPE_BFLOAT16: {
		const uint16_t *s = (const uint16_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = cpu_bf16_to_f32(s[j]);
		break;
	}
	case CEP_DTYPE_INT64: {
		const int64_t *s = (const int64_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = (double)s[j];
		break;
	}
	case CEP_DTYPE_INT32: {
		const int32_t *s = (const int32_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = s[j];
		break;
	}
	default:
		for (j = 0; j < n; j++)
			dst[j] = cpu_load_d(p, t, at + j);
		break;
	}
}

/* Loads p[at .. at+n) of type t into dst as int64s (floats truncated). */
static inline void chunk_load_i(const void *p, cep_dtype t, int64_t at, int n, int64_t *dst)
{
	int j;

	switch (t) {
	case CEP_DTYPE_INT64:
		memcpy(dst, (const int64_t *)p + at, sizeof(int64_t) * (size_t)n);
		break;
	case CEP_DTYPE_INT32: {
		const int32_t *s = (const int32_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = s[j];
		break;
	}
	case CEP_DTYPE_UINT8: {
		const uint8_t *s = (const uint8_t *)p + at;

		for (j = 0; j < n; j++)
			dst[j] = s[j];
		break;
	}
	default:
		for (j = 0; j < n; j++)
			dst[j] = cpu_load_i(p, t, at + j);
		break;
	}
}

/* Stores src[0 .. n) into p[at .. at+n) of type t. */
static inline void chunk_store_d(void *p, cep_dtype t, int64_t at, int n, const double *src)
{
	int j;

	switch (t) {
	case CEP_DTYPE_FLOAT64:
		memcpy((double *)p + at, src, sizeof(double) * (size_t)n);
		break;
	case CEP_DTYPE_FLOAT32: {
		float *d = (float *)p + at;

		for (j = 0; j < n; j++)
			d[j] = (float)src[j];
		break;
	}
	case CEP_DTYPE_FLOAT16: {
		uint16_t *d = (uint16_t *)p + at;

		for (j = 0; j < n; j++)
			d[j] = cpu_f64_to_f16(src[j]);
		break;
	}
	case CEP_DTYPE_BFLOAT16: {
		uint16_t *d = (uint16_t *)p + at;

		for (j = 0; j < n; j++)
			d[j] = cpu_f64_to_bf16(src[j]);
		break;
	}
	default:
		for (j = 0; j < n; j++)
			cpu_store_d(p, t, at + j, src[j]);
		break;
	}
}

/* Stores src[0 .. n) into p[at .. at+n) of type t, wrapping integers. */
static inline void chunk_store_i(void *p, cep_dtype t, int64_t at, int n, const int64_t *src)
{
	int j;

	if (t == CEP_DTYPE_INT64) {
		memcpy((int64_t *)p + at, src, sizeof(int64_t) * (size_t)n);
		return;
	}
	for (j = 0; j < n; j++)
		cpu_store_i(p, t, at + j, src[j]);
}

#endif
