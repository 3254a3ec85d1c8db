/*
 * qtypes.h — the arithmetic of the quantized element types that ONNX
 * defines: the four float8 types (float8e4m3fn, float8e4m3fnuz,
 * float8e5m2, float8e5m2fnuz; a byte each), which the engine stores and
 * the 4-bit types int4, uint4 and float4e2m1 (a byte each in memory,
 * client/cudaep.h), which the engine stores and kernels/cpu/cpu.h loads
 * and stores through these helpers (Cast, CastLike, QuantizeLinear,
 * DequantizeLinear; tests/unit/test_ops_quant_types.c tests them).
 *
 * float8. A float8 value is sign, exponent and mantissa like IEEE's, with
 * the type's bias, and differs in its specials:
 *
 *	type            e  m  bias  largest   infinity   NaN              -0
 *	float8e4m3fn    4  3   7      448     none       S.1111.111       yes
 *	float8e4m3fnuz  4  3   8      240     none       1.0000.000 only  no
 *	float8e5m2      5  2  15    57344     S.11111.00 S.11111.{01,1x}  yes
 *	float8e5m2fnuz  5  2  16    57344     none       1.0000.000 only  no
 *
 * A float32 becomes float8 by rounding to nearest even at the type's
 * precision (subnormals included). With `saturate` (ONNX's Cast and
 * QuantizeLinear, opset 19 on) a value whose rounding passes the largest
 * becomes the largest of its sign, and so does an infinity; without it,
 * overflow and infinity become infinity where the type has one
 * (float8e5m2) and NaN elsewhere. The fnuz types have no -0: it becomes
 * 0. NaN stays NaN, the fn and e5m2 types keeping its sign (their NaNs
 * are S.1111.111 and S.11111.10).
 *
 * Cast's table says that a saturated infinity becomes NaN in the fnuz
 * types; ONNX's reference implementation and onnxruntime both make it
 * the largest value of its sign, as here.
 *
 * int4 and uint4 saturate to [-8, 7] and [0, 15] in QuantizeLinear; in
 * model files they are packed two to a byte, which the loader undoes
 * (engine/model_data.c).
 */
#ifndef CEP_KERNELS_CPU_QTYPES_H
#define CEP_KERNELS_CPU_QTYPES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ONNX's numbers of the types below (TensorProto.DataType). */
enum qtype {
	QTYPE_FLOAT8E4M3FN = 17,
	QTYPE_FLOAT8E4M3FNUZ = 18,
	QTYPE_FLOAT8E5M2 = 19,
	QTYPE_FLOAT8E5M2FNUZ = 20,
	QTYPE_UINT4 = 21,
	QTYPE_INT4 = 22,
	QTYPE_FLOAT4E2M1 = 23,
};

/* ---------------------------------------------------------------- float8 */

/* The shape of a float8 type. */
struct qtype_f8 {
	int ebits, mbits, bias;
	float largest;          /* the largest finite value */
	bool has_inf;           /* float8e5m2 only */
	bool uz;                /* no -0; one NaN, 0x80 */
};

/* The shape of float8 type t (one of QTYPE_FLOAT8*); NULL for another. */
static inline const struct qtype_f8 *qtype_f8_of(int t)
{
	static const struct qtype_f8 f8[4] = {
		{ 4, 3, 7, 448.0f, false, false },
		{ 4, 3, 8, 240.0f, false, true },
		{ 5, 2, 15, 57344.0f, true, false },
		{ 5, 2, 16, 57344.0f, false, true },
	};

	return t >= QTYPE_FLOAT8E4M3FN && t <= QTYPE_FLOAT8E5M2FNUZ ? &f8[t - QTYPE_FLOAT8E4M3FN]
								    : NULL;
}

/* The NaN of shape f with sign bit s (an fnuz type has one NaN). */
static inline uint8_t qtype_f8_nan(const struct qtype_f8 *f, unsigned s)
{
	if (f->uz)
		return 0x80;
	return (uint8_t)((s << 7) | (f->has_inf ? 0x7e : 0x7f));
}

/* Code c of shape f as a float32 (exactly: every float8 value is one). */
static inline float qtype_f8_decode(const struct qtype_f8 *f, uint8_t c)
{
	unsigned s = c >> 7, e = (c >> f->mbits) & ((1u << f->ebits) - 1u);
	unsigned m = c & ((1u << f->mbits) - 1u), emax = (1u << f->ebits) - 1u;
	float v;

	if (f->uz && c == 0x80)
		return NAN;
	if (!f->uz && e == emax) {
		if (f->has_inf)
			return m == 0 ? (s ? -INFINITY : INFINITY) : NAN;
		if (m == (1u << f->mbits) - 1u)
			return NAN;
	}
	if (e == 0)
		v = ldexpf((float)m, 1 - f->bias - f->mbits);
	else
		v = ldexpf((float)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
	return s ? -v : v;
}

/*
 * x rounded to nearest even in shape f, as its code; saturate as ONNX's
 * Cast has it (the tables above). The rounding is done in double, where
 * x / q is exact for every quantum q the types have.
 */
static inline uint8_t qtype_f8_encode(const struct qtype_f8 *f, float x, bool saturate)
{
	unsigned s = signbit(x) ? 1u : 0u;
	int emin = 1 - f->bias, e;
	double a = fabs((double)x), q, r;
	unsigned code, mant;

	if (isnan(x))
		return qtype_f8_nan(f, s);
	if (isinf(x)) {
		if (saturate)
			return (uint8_t)((s << 7) | qtype_f8_encode(f, f->largest, true));
		if (f->has_inf)
			return (uint8_t)((s << 7) | (((1u << f->ebits) - 1u) << f->mbits));
		return qtype_f8_nan(f, s);
	}
	if (a == 0.0)
		return (uint8_t)(f->uz ? 0 : s << 7);
	frexp(a, &e);
	e -= 1;                 /* a in [2^e, 2^(e+1)) */
	if (e < emin)
		e = emin;       /* subnormal: the quantum of the smallest binade */
	q = ldexp(1.0, e - f->mbits);
	r = nearbyint(a / q) * q;
	if (r > (double)f->largest) {
		if (saturate)
			return (uint8_t)((s << 7) | qtype_f8_encode(f, f->largest, true));
		if (f->has_inf)
			return (uint8_t)((s << 7) | (((1u << f->ebits) - 1u) << f->mbits));
		return qtype_f8_nan(f, s);
	}
	if (r == 0.0)
		return (uint8_t)(f->uz ? 0 : s << 7);
	frexp(r, &e);
	e -= 1;
	if (e < emin) {
		code = (unsigned)(r / ldexp(1.0, emin - f->mbits));
	} else {
		mant = (unsigned)(r / ldexp(1.0, e - f->mbits)) - (1u << f->mbits);
		code = ((unsigned)(e + f->bias) << f->mbits) | mant;
	}
	return (uint8_t)((s << 7) | code);
}

/* ----------------------------------------------- int4, uint4, float4e2m1 */

/*
 * A byte each, as cudaep holds them (client/cudaep.h): the element in the
 * low nibble, which is all that is read; an int4 is written sign-extended
 * into the byte, a uint4 or float4e2m1 with the high nibble 0.
 */

/* The range of int4 (sgn) or uint4. */
static inline void qtype_int4_range(bool sgn, int64_t *lo, int64_t *hi)
{
	*lo = sgn ? -8 : 0;
	*hi = sgn ? 7 : 15;
}

/* The value of int4 (sgn) or uint4 byte b. */
static inline int64_t qtype_int4_load(uint8_t b, bool sgn)
{
	unsigned v = b & 0xfu;

	return sgn && v >= 8 ? (int64_t)v - 16 : (int64_t)v;
}

/* The byte of int4 (sgn) or uint4 that holds v wrapped to 4 bits (two's
 * complement, as Cast wraps an integer into a narrower one). */
static inline uint8_t qtype_int4_wrap(int64_t v, bool sgn)
{
	unsigned n = (unsigned)((uint64_t)v & 0xfu);

	return (uint8_t)(sgn && n >= 8 ? n | 0xf0u : n);
}

/* A real as int4 (sgn) or uint4 the way Cast makes it: truncated toward
 * zero, and 0 when that is out of range (NaN and infinities too), as the
 * reference implementation (ml_dtypes) has it; ONNX leaves it undefined. */
static inline uint8_t qtype_int4_from_real(double v, bool sgn)
{
	int64_t lo, hi;
	double t = trunc(v);

	qtype_int4_range(sgn, &lo, &hi);
	if (!(t >= (double)lo && t <= (double)hi))
		return 0;
	return qtype_int4_wrap((int64_t)t, sgn);
}

/*
 * float4e2m1: sign, 2 exponent bits (bias 1) and 1 mantissa bit, no
 * infinity and no NaN: the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4 and 6.
 */
static inline float qtype_f4_decode(uint8_t b)
{
	static const float mag[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };
	float m = mag[b & 7u];

	return b & 8u ? -m : m;
}

/* x rounded to nearest even in float4e2m1, as its code. A value past 6
 * in magnitude (an infinity too) becomes +-6 whether or not `saturate` is
 * set: the type has nothing else to be. A NaN becomes a zero of the
 * other sign (0x8, -0, for a positive NaN), as the reference
 * implementation (ml_dtypes) makes it. */
static inline uint8_t qtype_f4_encode(double x)
{
	static const double mag[8] = { 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0 };
	unsigned s = signbit(x) ? 8u : 0u, k;
	double a = fabs(x);

	if (isnan(x))
		return (uint8_t)(s ^ 8u);
	for (k = 0; k < 7; k++) {
		double mid = (mag[k] + mag[k + 1]) / 2.0;

		/* A tie goes to the even code (mantissa bit 0). */
		if (a < mid || (a == mid && k % 2 == 0))
			break;
	}
	return (uint8_t)(s | k);
}

#endif
