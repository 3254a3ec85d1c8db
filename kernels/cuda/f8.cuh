/*
 * f8.cuh — the four float8 types of ONNX (float8e4m3fn, float8e4m3fnuz,
 * float8e5m2, float8e5m2fnuz) to and from float32, in integer arithmetic
 * on the float's bits, for the device's Cast (kernels/cuda/cast_f8.cu).
 * The results are those of the host's qtype_f8_encode() and
 * qtype_f8_decode() (kernels/cpu/qtypes.h has the format table and the
 * saturate rules), bit for bit: round to nearest even at the type's
 * precision, subnormals included; NaN to the type's NaN (the fn and e5m2
 * types keeping its sign); an overflow or infinity to the largest value of
 * its sign with saturate, else to infinity (float8e5m2) or NaN; no -0 in
 * the fnuz types.
 *
 * The file is C as well as NVRTC C++, so that tests/unit/test_cuda_f8.c
 * checks it against the host's conversions on millions of floats without
 * a GPU; NVRTC (which defines __CUDACC_RTC__) makes the functions device
 * ones.
 */
#ifndef CEP_CUDA_F8_CUH
#define CEP_CUDA_F8_CUH

#ifdef __CUDACC_RTC__
#define CEP_F8_FN __device__ __forceinline__
static __device__ __forceinline__ unsigned cep_f8_bits_of(float x) { return __float_as_uint(x); }
static __device__ __forceinline__ float cep_f8_float_of(unsigned b) { return __uint_as_float(b); }
#else
#include <string.h>
#define CEP_F8_FN static inline
static inline unsigned cep_f8_bits_of(float x)
{
	unsigned b;

	memcpy(&b, &x, sizeof(b));
	return b;
}
static inline float cep_f8_float_of(unsigned b)
{
	float x;

	memcpy(&x, &b, sizeof(x));
	return x;
}
#endif

/* The formats, numbered as ONNX numbers the types (TensorProto.DataType). */
enum {
	CEP_F8_E4M3FN = 17,
	CEP_F8_E4M3FNUZ = 18,
	CEP_F8_E5M2 = 19,
	CEP_F8_E5M2FNUZ = 20,
};

/* The shape of a format. */
struct cep_f8_fmt {
	int ebits, mbits, bias;
	unsigned maxcode;       /* the code of the largest finite value */
	int has_inf;            /* float8e5m2 only */
	int uz;                 /* no -0; one NaN, 0x80 */
};

/* The shape of format t (a CEP_F8_*); a constant once inlined. */
CEP_F8_FN struct cep_f8_fmt cep_f8_fmt_of(int t)
{
	struct cep_f8_fmt f;

	f.ebits = t <= CEP_F8_E4M3FNUZ ? 4 : 5;
	f.mbits = t <= CEP_F8_E4M3FNUZ ? 3 : 2;
	f.bias = t == CEP_F8_E4M3FN ? 7 : t == CEP_F8_E4M3FNUZ ? 8 : t == CEP_F8_E5M2 ? 15 : 16;
	f.maxcode = t == CEP_F8_E4M3FN ? 0x7eu : t == CEP_F8_E5M2 ? 0x7bu : 0x7fu; /* 448, 240, 57344 */
	f.has_inf = t == CEP_F8_E5M2;
	f.uz = t == CEP_F8_E4M3FNUZ || t == CEP_F8_E5M2FNUZ;
	return f;
}

/*
 * x in format f, as its code. The float is m * 2^(e - 23) (m with its
 * implicit bit); the code counts quanta of 2^(max(e, emin) - mbits), so
 * the bits of m below that quantum are dropped with rounding to nearest
 * even, and the count, added to the binade's first code, is the code
 * (a count that reaches the next binade carries into the exponent field
 * by itself). Codes order as the values they stand for, so an overflow is
 * a code past maxcode.
 */
CEP_F8_FN unsigned char cep_f8_encode(struct cep_f8_fmt f, float x, int saturate)
{
	unsigned b = cep_f8_bits_of(x);
	unsigned s = b >> 31, a = b & 0x7fffffffu;
	unsigned nan = f.uz ? 0x80u : (s << 7) | (f.has_inf ? 0x7eu : 0x7fu);
	unsigned inf = (s << 7) | (((1u << f.ebits) - 1u) << f.mbits);
	unsigned over = saturate ? (s << 7) | f.maxcode : f.has_inf ? inf : nan;
	unsigned zero = f.uz ? 0u : s << 7;
	int emin = 1 - f.bias, e, shift;
	unsigned m, q, rem, half, code;

	if (a > 0x7f800000u)
		return (unsigned char)nan;
	if (a == 0x7f800000u)
		return (unsigned char)over;
	if (a >= 0x00800000u) {
		e = (int)(a >> 23) - 127;
		m = (a & 0x7fffffu) | 0x800000u;
	} else {
		e = -126;       /* a float32 subnormal: m units of 2^-149 */
		m = a;
	}
	shift = (e > emin ? e : emin) - f.mbits - (e - 23);
	if (shift >= 32) {
		q = 0;
	} else {
		q = m >> shift;
		rem = m & ((1u << shift) - 1u);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
	}
	if (q == 0)
		return (unsigned char)zero;
	if (e >= emin)
		code = ((unsigned)(e + f.bias) << f.mbits) + q - (1u << f.mbits);
	else
		code = q;       /* subnormal, or the smallest normal when q = 2^mbits */
	if (code > f.maxcode)
		return (unsigned char)over;
	return (unsigned char)((s << 7) | code);
}

/* Code c of format f as a float32, exactly (every float8 value is one);
 * NaN is the quiet NaN 0x7fc00000, of either sign's code, as the host's
 * NAN. */
CEP_F8_FN float cep_f8_decode(struct cep_f8_fmt f, unsigned c)
{
	unsigned s = (c >> 7) & 1u, emax = (1u << f.ebits) - 1u, mmask = (1u << f.mbits) - 1u;
	unsigned e = (c >> f.mbits) & emax, m = c & mmask;
	float v;

	c &= 0xffu;
	if (f.uz && c == 0x80u)
		return cep_f8_float_of(0x7fc00000u);
	if (!f.uz && e == emax) {
		if (f.has_inf && m == 0)
			return cep_f8_float_of((s << 31) | 0x7f800000u);
		if (f.has_inf || m == mmask)
			return cep_f8_float_of(0x7fc00000u);
	}
	if (e == 0) {
		/* m units of 2^(1 - bias - mbits): a small integer times a
		 * power of two, exact in float. */
		v = (float)m * cep_f8_float_of((unsigned)(1 - f.bias - f.mbits + 127) << 23);
		return s ? -v : v;
	}
	return cep_f8_float_of((s << 31) | ((e + 127u - (unsigned)f.bias) << 23) |
			       (m << (23 - f.mbits)));
}

#endif
