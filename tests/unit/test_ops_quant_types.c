/*
 * test_ops_quant_types.c — the conversions of kernels/cpu/qtypes.h, the
 * quantized element types ONNX defines and cudaep does not store yet:
 * float32 to each float8 type with and without saturation, against the
 * results of ONNX's reference implementation of Cast (opset 21) for a set
 * of values that reaches every rule (zeros of both signs, the largest
 * values and what rounds past them, ties at the top and in the
 * subnormals, infinities, NaNs of both signs); every float8 code decoded
 * and encoded back to itself, in order, with the values the format
 * tables give; and int4/uint4 packing, two to a byte, low nibble first.
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

/* Element 2k in the low nibble of byte k; signed values sign-extended;
 * setting one nibble leaves the other. */
Test(qtypes, int4_packs_two_to_a_byte_low_nibble_first)
{
	uint8_t p[8];
	int64_t lo, hi, i;

	qtype_int4_range(true, &lo, &hi);
	cr_assert(lo == -8 && hi == 7);
	qtype_int4_range(false, &lo, &hi);
	cr_assert(lo == 0 && hi == 15);
	cr_assert_eq(qtype_int4_bytes(0), 0);
	cr_assert_eq(qtype_int4_bytes(1), 1);
	cr_assert_eq(qtype_int4_bytes(2), 1);
	cr_assert_eq(qtype_int4_bytes(3), 2);
	memset(p, 0xee, sizeof(p));
	for (i = 0; i < 16; i++)
		qtype_int4_set(p, i, i - 8);
	/* -8 (1000) low, -7 (1001) high: 0x98; then 0xba, ... 7, 6: 0x76. */
	cr_assert_eq(p[0], 0x98);
	cr_assert_eq(p[4], 0x10);
	cr_assert_eq(p[7], 0x76);
	for (i = 0; i < 16; i++) {
		cr_assert_eq(qtype_int4_get(p, i, true), i - 8);
		cr_assert_eq(qtype_int4_get(p, i, false), (i - 8) & 15);
	}
	memset(p, 0, sizeof(p));
	qtype_int4_set(p, 3, 15);
	cr_assert_eq(p[1], 0xf0);
	qtype_int4_set(p, 2, 9);
	cr_assert_eq(p[1], 0xf9);
	qtype_int4_set(p, 3, 0);
	cr_assert_eq(p[1], 0x09);
	cr_assert_eq(qtype_int4_get(p, 2, false), 9);
	cr_assert_eq(qtype_int4_get(p, 2, true), -7);
}
