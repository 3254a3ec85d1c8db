/*
 * test_ops_quant_types.c — the conversions of kernels/cpu/qtypes.h, the
 * quantized element types ONNX defines and cudaep does not store yet:
 * float32 to each float8 type with and without saturation, against the
 * results of ONNX's reference implementation of Cast (opset 21) for a set
 * of values that reaches every rule (zeros of both signs, the largest
 * values and what rounds past them, ties at the top and in the
 * subnormals, infinities, NaNs of both signs); every float8 code decoded
 * and encoded back to itself, in order, with the values the format
 * tables give; int4 and uint4 a byte each (the low nibble read, int4
 * written sign-extended), from integers wrapping and from reals as
 * ml_dtypes converts; float4e2m1's codes, rounding and saturation.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/qtypes.h"

#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The values, and the ONNX reference's results (written by a script over
 * onnx.reference.ReferenceEvaluator on a Cast node; onnx 1.23). */
static const float f8_in[39] = {
	0.0f, -0.0f, 0x1p+0f, -0x1p+0f, 0x1.333334p-2f, 0x1.cp+8f, 0x1.c1p+8f,
	0x1.dp+8f, 0x1.d1p+8f, 0x1.ep+8f, 0x1.f4p+8f, 0x1.ep+7f, 0x1.eep+7f, 0x1.fp+7f,
	0x1.f4p+7f, 0x1.cp+15f, 0x1.d4cp+15f, 0x1.dffep+15f, 0x1.ep+15f, 0x1.117p+16f,
	0x1.0624dep-10f, -0x1.0624dep-10f, 0x1p-9f, 0x1p-10f, 0x1.8p-10f, 0x1p-17f,
	0x1p-18f, 0x1.8p-18f, INFINITY, -INFINITY, NAN, -NAN, 0x1p-4f, 0x1.921fap+1f,
	-0x1.9p+6f, 0x1.12e0bep-30f, -0x1.12e0bep-30f, 0x1p-16f, 0x1.8p-17f,
};
/* [saturate][type]: Cast's result as the ONNX reference computes it. */
static const uint8_t f8_out[2][4][39] = {
	{
		{ 0x00, 0x80, 0x38, 0xb8, 0x2a, 0x7e, 0x7e, 0x7e, 0x7f, 0x7f, 0x7f, 0x77,
		  0x77, 0x78, 0x78, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x81, 0x01, 0x00,
		  0x01, 0x00, 0x00, 0x00, 0x7f, 0xff, 0x7f, 0xff, 0x18, 0x45, 0xec, 0x00,
		  0x80, 0x00, 0x00,
		},
		{ 0x00, 0x00, 0x40, 0xc0, 0x32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f,
		  0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x81, 0x02, 0x01,
		  0x02, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x20, 0x4d, 0xf4, 0x00,
		  0x00, 0x00, 0x00,
		},
		{ 0x00, 0x80, 0x3c, 0xbc, 0x35, 0x5f, 0x5f, 0x5f, 0x5f, 0x60, 0x60, 0x5c,
		  0x5c, 0x5c, 0x5c, 0x7b, 0x7b, 0x7b, 0x7c, 0x7c, 0x14, 0x94, 0x18, 0x14,
		  0x16, 0x00, 0x00, 0x00, 0x7c, 0xfc, 0x7e, 0xfe, 0x2c, 0x42, 0xd6, 0x00,
		  0x80, 0x01, 0x01,
		},
		{ 0x00, 0x00, 0x40, 0xc0, 0x39, 0x63, 0x63, 0x63, 0x63, 0x64, 0x64, 0x60,
		  0x60, 0x60, 0x60, 0x7f, 0x7f, 0x7f, 0x80, 0x80, 0x18, 0x98, 0x1c, 0x18,
		  0x1a, 0x01, 0x00, 0x01, 0x80, 0x80, 0x80, 0x80, 0x30, 0x46, 0xda, 0x00,
		  0x00, 0x02, 0x02,
		},
	},
	{
		{ 0x00, 0x80, 0x38, 0xb8, 0x2a, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x77,
		  0x77, 0x78, 0x78, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x01, 0x81, 0x01, 0x00,
		  0x01, 0x00, 0x00, 0x00, 0x7e, 0xfe, 0x7f, 0xff, 0x18, 0x45, 0xec, 0x00,
		  0x80, 0x00, 0x00,
		},
		{ 0x00, 0x00, 0x40, 0xc0, 0x32, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
		  0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x81, 0x02, 0x01,
		  0x02, 0x00, 0x00, 0x00, 0x7f, 0xff, 0x80, 0x80, 0x20, 0x4d, 0xf4, 0x00,
		  0x00, 0x00, 0x00,
		},
		{ 0x00, 0x80, 0x3c, 0xbc, 0x35, 0x5f, 0x5f, 0x5f, 0x5f, 0x60, 0x60, 0x5c,
		  0x5c, 0x5c, 0x5c, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x14, 0x94, 0x18, 0x14,
		  0x16, 0x00, 0x00, 0x00, 0x7b, 0xfb, 0x7e, 0xfe, 0x2c, 0x42, 0xd6, 0x00,
		  0x80, 0x01, 0x01,
		},
		{ 0x00, 0x00, 0x40, 0xc0, 0x39, 0x63, 0x63, 0x63, 0x63, 0x64, 0x64, 0x60,
		  0x60, 0x60, 0x60, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x18, 0x98, 0x1c, 0x18,
		  0x1a, 0x01, 0x00, 0x01, 0x7f, 0xff, 0x80, 0x80, 0x30, 0x46, 0xda, 0x00,
		  0x00, 0x02, 0x02,
		},
	},
};

static const int f8_types[4] = { QTYPE_FLOAT8E4M3FN, QTYPE_FLOAT8E4M3FNUZ, QTYPE_FLOAT8E5M2,
				 QTYPE_FLOAT8E5M2FNUZ };

Test(qtypes, float8_encoding_matches_the_onnx_reference)
{
	int sat, t, i;

	for (sat = 0; sat < 2; sat++) {
		for (t = 0; t < 4; t++) {
			const struct qtype_f8 *f = qtype_f8_of(f8_types[t]);

			cr_assert_not_null(f);
			for (i = 0; i < NA(f8_in); i++) {
				uint8_t got = qtype_f8_encode(f, f8_in[i], sat);

				cr_assert_eq(got, f8_out[sat][t][i], "type %d saturate %d: %a gives "
					     "%#04x, want %#04x", f8_types[t], sat, (double)f8_in[i],
					     got, f8_out[sat][t][i]);
			}
		}
	}
	cr_assert_null(qtype_f8_of(16));
	cr_assert_null(qtype_f8_of(21));
}

/* Every code that is not NaN decodes to a value that encodes back to
 * it, and the values grow with the codes of one sign. */
Test(qtypes, float8_every_code_round_trips_in_order)
{
	int t, c, nans;

	for (t = 0; t < 4; t++) {
		const struct qtype_f8 *f = qtype_f8_of(f8_types[t]);
		float prev = -1.0f;

		nans = 0;
		for (c = 0; c < 256; c++) {
			float v = qtype_f8_decode(f, (uint8_t)c);

			if (isnan(v)) {
				nans++;
				continue;
			}
			cr_assert_eq(qtype_f8_encode(f, v, false), c, "type %d code %#04x (%a)",
				     f8_types[t], c, (double)v);
			cr_assert_eq(qtype_f8_encode(f, v, true), isinf(v) ? (c & 0x80) | 0x7b : c,
				     "type %d code %#04x saturated", f8_types[t], c);
			if (c < 0x80) {
				cr_assert(v > prev || c == 0, "type %d code %#04x: %a after %a",
					  f8_types[t], c, (double)v, (double)prev);
				prev = v;
			}
		}
		/* e4m3fn: S.1111.111; e5m2: S.11111.{01,10,11}; fnuz: 0x80. */
		cr_assert_eq(nans, t == 0 ? 2 : t == 2 ? 6 : 1, "type %d has %d NaNs", f8_types[t],
			     nans);
	}
}

/* The format tables: the smallest subnormal, 1, the largest, the
 * specials. */
Test(qtypes, float8_decodes_the_table_values)
{
	const struct qtype_f8 *e4 = qtype_f8_of(QTYPE_FLOAT8E4M3FN);
	const struct qtype_f8 *e4uz = qtype_f8_of(QTYPE_FLOAT8E4M3FNUZ);
	const struct qtype_f8 *e5 = qtype_f8_of(QTYPE_FLOAT8E5M2);
	const struct qtype_f8 *e5uz = qtype_f8_of(QTYPE_FLOAT8E5M2FNUZ);

	cr_assert_eq(qtype_f8_decode(e4, 0x01), 0x1p-9f);
	cr_assert_eq(qtype_f8_decode(e4, 0x38), 1.0f);
	cr_assert_eq(qtype_f8_decode(e4, 0x7e), 448.0f);
	cr_assert_eq(qtype_f8_decode(e4, 0xfe), -448.0f);
	cr_assert(signbit(qtype_f8_decode(e4, 0x80)) && qtype_f8_decode(e4, 0x80) == 0.0f);
	cr_assert(isnan(qtype_f8_decode(e4, 0x7f)) && isnan(qtype_f8_decode(e4, 0xff)));
	cr_assert_eq(qtype_f8_decode(e4uz, 0x01), 0x1p-10f);
	cr_assert_eq(qtype_f8_decode(e4uz, 0x40), 1.0f);
	cr_assert_eq(qtype_f8_decode(e4uz, 0x7f), 240.0f);
	cr_assert_eq(qtype_f8_decode(e4uz, 0xff), -240.0f);
	cr_assert(isnan(qtype_f8_decode(e4uz, 0x80)));
	cr_assert_eq(qtype_f8_decode(e5, 0x01), 0x1p-16f);
	cr_assert_eq(qtype_f8_decode(e5, 0x3c), 1.0f);
	cr_assert_eq(qtype_f8_decode(e5, 0x7b), 57344.0f);
	cr_assert_eq(qtype_f8_decode(e5, 0x7c), INFINITY);
	cr_assert_eq(qtype_f8_decode(e5, 0xfc), -INFINITY);
	cr_assert(isnan(qtype_f8_decode(e5, 0x7d)) && isnan(qtype_f8_decode(e5, 0xfe)));
	cr_assert_eq(qtype_f8_decode(e5uz, 0x01), 0x1p-17f);
	cr_assert_eq(qtype_f8_decode(e5uz, 0x40), 1.0f);
	cr_assert_eq(qtype_f8_decode(e5uz, 0x7f), 57344.0f);
	cr_assert(isnan(qtype_f8_decode(e5uz, 0x80)));
}

/* A byte each: only the low nibble is read; an int4 is written
 * sign-extended, a uint4 in the low nibble. */
Test(qtypes, int4_bytes_read_the_low_nibble_and_write_sign_extended)
{
	int64_t lo, hi, i;

	qtype_int4_range(true, &lo, &hi);
	cr_assert(lo == -8 && hi == 7);
	qtype_int4_range(false, &lo, &hi);
	cr_assert(lo == 0 && hi == 15);
	for (i = 0; i < 256; i++) {
		int64_t v = i & 15;

		cr_assert_eq(qtype_int4_load((uint8_t)i, false), v);
		cr_assert_eq(qtype_int4_load((uint8_t)i, true), v >= 8 ? v - 16 : v);
	}
	/* ml_dtypes' -2 (0x0e) and cudaep's (0xfe) read alike. */
	cr_assert_eq(qtype_int4_load(0x0e, true), -2);
	cr_assert_eq(qtype_int4_load(0xfe, true), -2);
	for (i = -8; i < 8; i++)
		cr_assert_eq((int8_t)qtype_int4_wrap(i, true), i);
	for (i = 0; i < 16; i++)
		cr_assert_eq(qtype_int4_wrap(i, false), i);
	/* Integers wrap (as Cast into int8 does): 300 is 0x12c. */
	cr_assert_eq(qtype_int4_wrap(300, true), 0xfc);
	cr_assert_eq(qtype_int4_wrap(300, false), 0x0c);
	cr_assert_eq(qtype_int4_wrap(-9, true), 0x07);
	cr_assert_eq(qtype_int4_wrap(-3, false), 0x0d);
}

/* Reals truncate and take 0 out of range: ml_dtypes' astype() results. */
Test(qtypes, int4_from_a_real_truncates_and_takes_zero_out_of_range)
{
	static const double in[13] = { 7.6, 8.0, -9.2, 20.5, 1.5, 2.5, -1.5, -0.7, 15.9,
				       16.2, 100.0, -100.0, -8.99 };
	static const int8_t want_s[13] = { 7, 0, 0, 0, 1, 2, -1, 0, 0, 0, 0, 0, -8 };
	static const uint8_t want_u[13] = { 7, 8, 0, 0, 1, 2, 0, 0, 15, 0, 0, 0, 0 };
	int i;

	for (i = 0; i < NA(in); i++) {
		cr_assert_eq((int8_t)qtype_int4_from_real(in[i], true), want_s[i], "%g", in[i]);
		cr_assert_eq(qtype_int4_from_real(in[i], false), want_u[i], "%g", in[i]);
	}
	cr_assert_eq(qtype_int4_from_real(NAN, true), 0);
	cr_assert_eq(qtype_int4_from_real(INFINITY, false), 0);
	cr_assert_eq(qtype_int4_from_real(-INFINITY, true), 0);
}

/* float4e2m1: every code decodes to the format's table and encodes back;
 * rounding to nearest even, saturation and NaN as ml_dtypes has them. */
Test(qtypes, float4e2m1_codes_rounding_and_saturation)
{
	static const float mag[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };
	static const double in[12] = { NAN, -NAN, INFINITY, -INFINITY, 0.25, 0.75, 2.5, 3.5,
				       5.0, -5.0, 1e-30, -1e-30 };
	static const uint8_t want[12] = { 8, 0, 7, 15, 0, 2, 4, 6, 6, 14, 0, 8 };
	static const double more[9] = { 0.2, 0.3, 1.25, 7.0, -7.0, 100.0, 1e6, -0.0, 1.75 };
	static const float more_want[9] = { 0.0f, 0.5f, 1.0f, 6.0f, -6.0f, 6.0f, 6.0f, -0.0f,
					    2.0f };
	int i;

	for (i = 0; i < 16; i++) {
		float v = qtype_f4_decode((uint8_t)i);

		cr_assert_eq(fabsf(v), mag[i & 7]);
		cr_assert_eq(signbit(v) != 0, i >= 8);
		cr_assert_eq(qtype_f4_encode(v), i, "code %d", i);
		/* The high nibble is not read. */
		cr_assert_eq(qtype_f4_decode((uint8_t)(i | 0xa0)), v);
	}
	for (i = 0; i < NA(in); i++)
		cr_assert_eq(qtype_f4_encode(in[i]), want[i], "%g", in[i]);
	for (i = 0; i < NA(more); i++) {
		float v = qtype_f4_decode(qtype_f4_encode(more[i]));

		cr_assert_eq(v, more_want[i], "%g", more[i]);
		cr_assert_eq(signbit(v) != 0, signbit(more_want[i]) != 0, "%g", more[i]);
	}
}
