/*
 * test_ops_quant.c — QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear of kernels/cpu/quant.c, called the way the engine
 * calls them (schema inference, then the host kernel through
 * exec_host_eval), with values worked out by hand from the specification:
 * its examples at every opset, rounding half to even, saturation and NaN,
 * zero points per tensor, per axis (negative axes too) and per block
 * (along either axis, a last block shorter), the type of the division
 * (the scale's half type at 19, the scale's at 23 with x of another type,
 * the precision attribute), int32 inputs, output_dtype (21 and 23), the
 * output type without a zero point, and the refusals with the operator
 * and input named: types each opset does not take, attributes an opset
 * does not have, scales and zero points of the wrong shape, bad axes and
 * block sizes, output types cudaep does not store. DynamicQuantizeLinear:
 * the three conformance examples, an all-zero input and NaN passed over.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The opsets at which QuantizeLinear and DequantizeLinear change. */
static const int opsets[] = { 10, 13, 19, 21, 23, 24, 25, 28 };

/* Asserts that out holds the n integers of want (of its own type). */
static void assert_ints(const struct op_tensor *out, const int64_t *want, int n,
			const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(cpu_load_i(out->data, out->dtype, i), want[i], "%s: element %d is "
			     "%lld, want %lld", what, i, (long long)cpu_load_i(out->data, out->dtype, i),
			     (long long)want[i]);
}

/* Asserts that op fails with code and a message holding each of the
 * (NULL-terminated) pieces. */
static void assert_refused(int ret, int code, const char *const *pieces)
{
	const char *msg = cep_last_error();

	cr_assert_eq(ret, code, "got %d (%s), want %d", ret, msg, code);
	for (; *pieces != NULL; pieces++)
		cr_assert(strstr(msg, *pieces) != NULL, "'%s' does not say '%s'", msg, *pieces);
}

#define REFUSED(ret, code, ...) assert_refused((ret), (code), (const char *const[]){ __VA_ARGS__, NULL })

/* ----------------------------------------------------------- QuantizeLinear */

/* The specification's example, y = saturate(round(x / 2) + 128) to uint8
 * (3 / 2 = 1.5 rounds to 2), at every opset; and without a zero point,
 * uint8 with a zero point of 0. */
Test(ops_quant, quantize_the_specification_example_at_every_opset)
{
	float x[6] = { 0, 2, 3, 1000, -254, -1000 }, s = 2.0f;
	uint8_t zp = 128;
	static const int64_t want[6] = { 128, 129, 130, 255, 1, 0 };
	static const int64_t want_nozp[6] = { 0, 1, 2, 255, 0, 0 };
	int i;

	for (i = 0; i < NA(opsets); i++) {
		struct op_tensor in[3] = {
			oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x),
			oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
			oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp),
		};
		struct op_tensor out;

		cr_assert_eq(oh_run("QuantizeLinear", opsets[i], NULL, 0, in, 3, &out, 1), 0,
			     "opset %d: %s", opsets[i], cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_UINT8);
		cr_assert_eq(out.rank, 1);
		cr_assert_eq(out.dims[0], 6);
		assert_ints(&out, want, 6, "with a zero point");
		free(out.data);
		cr_assert_eq(oh_run("QuantizeLinear", opsets[i], NULL, 0, in, 2, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_UINT8, "no zero point: uint8");
		assert_ints(&out, want_nozp, 6, "without a zero point");
		free(out.data);
	}
}

/* Halves go to the even neighbour, on both sides of 0 and next to the
 * ends of the range; NaN gives the zero point, infinities saturate. */
Test(ops_quant, quantize_rounds_half_to_even_and_saturates)
{
	float x[14] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 126.5f, 127.5f,
			-128.5f, -129.0f, NAN, INFINITY, -INFINITY };
	static const int64_t want_i8[14] = { 0, 2, 2, 0, -2, -2, 2, 126, 127, -128, -128, 0, 127,
					     -128 };
	float s = 1.0f;
	int8_t zp = 0;
	uint8_t uzp = 10;
	static const int64_t want_u8[14] = { 10, 12, 12, 10, 8, 8, 12, 136, 138, 0, 0, 10, 255, 0 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(14), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 13, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
	assert_ints(&out, want_i8, 14, "int8");
	free(out.data);
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &uzp);
	cr_assert_eq(oh_run("QuantizeLinear", 13, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want_u8, 14, "uint8, zero point 10");
	free(out.data);
}

/* int32 x (every opset): divided exactly, then rounded. */
Test(ops_quant, quantize_int32_input)
{
	int32_t x[5] = { 3, -3, 5, 2147483647, -2147483647 - 1 };
	float s = 2.0f;
	int8_t zp = 1;
	static const int64_t want[5] = { 3, -1, 3, 127, -128 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_INT32, 1, DIMS(5), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 10, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want, 5, "int32 by 2");
	free(out.data);
}

/* Per axis (13 on): x [2, 3, 2] along axis 1 (and -2) with scales 1, 2, 4
 * and zero points 0, 10, 20. Element (n, c, w) is x / s[c] + zp[c]: 3 / 2
 * is 1.5 -> 2, 5 / 4 = 1.25 -> 1, 9 / 2 = 4.5 -> 4, 10 / 4 = 2.5 -> 2. */
Test(ops_quant, quantize_per_axis)
{
	float x[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }, s[3] = { 1, 2, 4 };
	uint8_t zp[3] = { 0, 10, 20 };
	static const int64_t want[12] = { 0, 1, 11, 12, 21, 21, 6, 7, 14, 14, 22, 23 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 3, 2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), s),
		oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(3), zp),
	};
	int64_t axes[2] = { 1, -2 };
	int a, o;

	for (o = 1; o < NA(opsets); o++) {
		for (a = 0; a < 2; a++) {
			struct op_attr at = oh_int("axis", axes[a]);
			struct op_tensor out;

			cr_assert_eq(oh_run("QuantizeLinear", opsets[o], &at, 1, in, 3, &out, 1), 0,
				     "opset %d axis %lld: %s", opsets[o], (long long)axes[a],
				     cep_last_error());
			assert_ints(&out, want, 12, "per axis");
			free(out.data);
		}
	}
}

/* A one-element vector is per tensor, whatever the axis. */
Test(ops_quant, a_one_element_scale_is_per_tensor)
{
	float x[4] = { 1, 2, 3, 4 }, s[1] = { 2 };
	int8_t zp[1] = { -1 };
	static const int64_t want[4] = { -1, 0, 1, 1 };
	struct op_attr at = oh_int("axis", 0);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), s),
		oh_tensor(CEP_DTYPE_INT8, 1, DIMS(1), zp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 13, &at, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want, 4, "one-element scale");
	free(out.data);
}

/* Blocked (21 on): x [2, 5] in blocks of 2 along axis 1 (scales [2, 3],
 * the last block of one column), and x [3, 2] in blocks of 2 along axis
 * 0 (scales [2, 2], the last block of one row). */
Test(ops_quant, quantize_blocked)
{
	float x[10] = { 1, 2, 3, 4, 5, -1, -2, -3, -4, -5 };
	float s[6] = { 1, 2, 4, 0.5f, 1, 2 };
	int8_t zp[6] = { 0, 1, -1, 2, 0, 0 };
	/* Row 0: 1, 2; 3/2 = 1.5 -> 2, +1; 4/2 + 1; 5/4 = 1.25 -> 1, -1.
	 * Row 1: -1/0.5 + 2, -2/0.5 + 2; -3, -4; -5/2 = -2.5 -> -2. */
	static const int64_t want[10] = { 1, 2, 3, 3, 0, 0, -2, -3, -4, -2 };
	float x0[6] = { 1, 2, 3, 4, 5, 6 }, s0[4] = { 1, 2, 4, 8 };
	/* Rows 0 and 1 by scales 1, 2; row 2 by 4, 8: 1.25 -> 1, 0.75 -> 1. */
	static const int64_t want0[6] = { 1, 1, 3, 2, 1, 1 };
	struct op_attr at[2] = { oh_int("axis", 1), oh_int("block_size", 2) };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 5), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), s),
		oh_tensor(CEP_DTYPE_INT8, 2, DIMS(2, 3), zp),
	};
	struct op_tensor out;
	int o;

	for (o = 3; o < NA(opsets); o++) {
		cr_assert_eq(oh_run("QuantizeLinear", opsets[o], at, 2, in, 3, &out, 1), 0,
			     "opset %d: %s", opsets[o], cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
		assert_ints(&out, want, 10, "blocks along axis 1");
		free(out.data);
	}
	at[0] = oh_int("axis", 0);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x0);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), s0);
	cr_assert_eq(oh_run("QuantizeLinear", 21, at, 2, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_UINT8);
	assert_ints(&out, want0, 6, "blocks along axis 0");
	free(out.data);
}

/* v in half type t (float16 or bfloat16), and back. */
static uint16_t half_bits(cep_dtype t, float v)
{
	return t == CEP_DTYPE_FLOAT16 ? cpu_f32_to_f16(v) : cpu_f32_to_bf16(v);
}

static float half_value(cep_dtype t, uint16_t h)
{
	return t == CEP_DTYPE_FLOAT16 ? cpu_f16_to_f32(h) : cpu_bf16_to_f32(h);
}

/* At 19 and 21 x and the scale share a type and the division is in it:
 * 68.25 / 0.84765625 is 80.516 in float32 (-> 81) but 80.5 in float16
 * (-> 80); -45.25 / 1.1484375 is -39.40 in float32 (-> -39) but -39.5 in
 * bfloat16 (-> -40). */
Test(ops_quant, quantize_divides_in_the_half_type)
{
	static const struct {
		cep_dtype t;
		float x, s;
		int64_t half, single;
	} cases[] = {
		{ CEP_DTYPE_FLOAT16, 68.25f, 0.84765625f, 80, 81 },
		{ CEP_DTYPE_BFLOAT16, -45.25f, 1.1484375f, -40, -39 },
	};
	int c, o;

	for (c = 0; c < NA(cases); c++) {
		uint16_t xh, sh;
		int8_t zp = 0;
		float xf = cases[c].x, sf = cases[c].s;

		xh = half_bits(cases[c].t, cases[c].x);
		sh = half_bits(cases[c].t, cases[c].s);
		cr_assert_eq(half_value(cases[c].t, xh), cases[c].x, "x is exact in the type");
		cr_assert_eq(half_value(cases[c].t, sh), cases[c].s, "s is exact in the type");
		for (o = 2; o < NA(opsets); o++) {
			struct op_tensor in[3] = {
				oh_tensor(cases[c].t, 1, DIMS(1), &xh),
				oh_tensor(cases[c].t, 0, NULL, &sh),
				oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp),
			};
			struct op_tensor out;

			cr_assert_eq(oh_run("QuantizeLinear", opsets[o], NULL, 0, in, 3, &out, 1), 0,
				     "%s", cep_last_error());
			assert_ints(&out, &cases[c].half, 1, cep_dtype_name(cases[c].t));
			free(out.data);
			in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), &xf);
			in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &sf);
			cr_assert_eq(oh_run("QuantizeLinear", opsets[o], NULL, 0, in, 3, &out, 1), 0,
				     "%s", cep_last_error());
			assert_ints(&out, &cases[c].single, 1, "float32");
			free(out.data);
		}
	}
}

/* From 23 x and the scale may differ, and the scale's type is the
 * division's unless `precision` names another: float32 x
 * 74.40715026855469 by the float16 scale 1.5673828125 is 47.5 in float16
 * (-> 48) and 47.47 in float32 (-> 47). Before 23 the types must agree. */
Test(ops_quant, quantize_at_23_divides_in_the_scales_type_or_the_precision)
{
	float x = 74.40715026855469f, sf = 1.5673828125f;
	uint16_t sh = cpu_f32_to_f16(sf);
	uint8_t zp = 0;
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), &x),
		oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp),
	};
	struct op_attr p32 = oh_int("precision", CEP_DTYPE_FLOAT32);
	struct op_attr p16 = oh_int("precision", CEP_DTYPE_FLOAT16);
	struct op_attr pbad = oh_int("precision", CEP_DTYPE_INT8);
	static const int64_t h = 48, f = 47;
	struct op_tensor out;
	int o;

	for (o = 4; o < NA(opsets); o++) {
		cr_assert_eq(oh_run("QuantizeLinear", opsets[o], NULL, 0, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		assert_ints(&out, &h, 1, "in the scale's float16");
		free(out.data);
		cr_assert_eq(oh_run("QuantizeLinear", opsets[o], &p32, 1, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		assert_ints(&out, &f, 1, "precision float32");
		free(out.data);
	}
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &sf);
	cr_assert_eq(oh_run("QuantizeLinear", 23, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, &f, 1, "in float32");
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 23, &p16, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, &h, 1, "precision float16");
	free(out.data);
	REFUSED(oh_run("QuantizeLinear", 23, &pbad, 1, in, 3, &out, 1), CEP_EUNSUPPORTED,
		"QuantizeLinear", "precision 3 (int8)");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh);
	REFUSED(oh_run("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"QuantizeLinear", "y_scale is float16 but x is float32", "opset 21");
	REFUSED(oh_run("QuantizeLinear", 21, &p32, 1, in, 3, &out, 1), CEP_EMODEL,
		"'precision' does not exist at opset 21");
}

/* output_dtype (21 on) names the output type without a zero point, must
 * agree with one, and must be a quantized type cudaep stores. */
Test(ops_quant, quantize_output_dtype)
{
	float x[3] = { -300, 7, 300 }, s = 1.0f;
	int8_t zp = 0;
	static const int64_t want[3] = { -128, 7, 127 };
	struct op_attr i8 = oh_int("output_dtype", CEP_DTYPE_INT8);
	struct op_attr u8 = oh_int("output_dtype", CEP_DTYPE_UINT8);
	struct op_attr i16 = oh_int("output_dtype", CEP_DTYPE_INT16);
	struct op_attr e4 = oh_int("output_dtype", 17);
	struct op_attr i4 = oh_int("output_dtype", 22);
	struct op_attr i2 = oh_int("output_dtype", 26);
	struct op_attr f = oh_int("output_dtype", CEP_DTYPE_FLOAT32);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 21, &i8, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
	assert_ints(&out, want, 3, "output_dtype int8");
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 23, &i8, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	REFUSED(oh_run("QuantizeLinear", 21, &u8, 1, in, 3, &out, 1), CEP_EMODEL,
		"output_dtype is uint8 but y_zero_point is int8");
	/* int16 from 21: -300 and 300 fit. */
	cr_assert_eq(oh_run("QuantizeLinear", 21, &i16, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT16);
	cr_assert(((int16_t *)out.data)[0] == -300 && ((int16_t *)out.data)[2] == 300);
	free(out.data);
	/* float8 and int4 (test_ops_quant_4bit.c); int2 is not stored. */
	cr_assert_eq(oh_run("QuantizeLinear", 21, &e4, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT8E4M3FN);
	cr_assert_eq(cpu_load_d(out.data, out.dtype, 2), 288.0);
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 21, &i4, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT4);
	cr_assert(cpu_load_i(out.data, out.dtype, 0) == -8 &&
		  cpu_load_i(out.data, out.dtype, 2) == 7);
	free(out.data);
	REFUSED(oh_run("QuantizeLinear", 25, &i2, 1, in, 2, &out, 1), CEP_EUNSUPPORTED, "int2");
	REFUSED(oh_run("QuantizeLinear", 21, &f, 1, in, 2, &out, 1), CEP_EMODEL,
		"output_dtype 1 (float32) is not a quantized type");
	REFUSED(oh_run("QuantizeLinear", 19, &i8, 1, in, 2, &out, 1), CEP_EMODEL,
		"'output_dtype' does not exist at opset 19 (it came at 21)");
}

/* saturate (19 on) concerns float8 only: int8 saturates either way. */
Test(ops_quant, quantize_saturate_changes_nothing_for_integers)
{
	float x[2] = { 1000, -1000 }, s = 1.0f;
	int8_t zp = 0;
	static const int64_t want[2] = { 127, -128 };
	struct op_attr sat0 = oh_int("saturate", 0);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 19, &sat0, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want, 2, "saturate 0");
	free(out.data);
	REFUSED(oh_run("QuantizeLinear", 13, &sat0, 1, in, 3, &out, 1), CEP_EMODEL,
		"'saturate' does not exist at opset 13");
}

Test(ops_quant, quantize_refuses_what_the_opset_does_not_take)
{
	float x[10] = { 0 }, s = 1.0f, sv[3] = { 1, 1, 1 }, sb[4] = { 1, 1, 1, 1 };
	uint16_t xh[6] = { 0 }, sh = 0x3c00;
	int8_t xi[6] = { 0 }, zp = 0, zv[2] = { 0, 0 };
	uint8_t uzp[3] = { 0 };
	struct op_attr ax = oh_int("axis", 1), ax5 = oh_int("axis", 5);
	struct op_attr blk[2] = { oh_int("axis", 1), oh_int("block_size", 2) };
	struct op_attr blkneg[2] = { oh_int("axis", 1), oh_int("block_size", -1) };
	struct op_tensor in[3], out;

	/* float16 x before 19; int8 x never. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(6), xh);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh);
	REFUSED(oh_run("QuantizeLinear", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"QuantizeLinear: x is float16; opset 13 takes float32, int32");
	in[0] = oh_tensor(CEP_DTYPE_INT8, 1, DIMS(6), xi);
	REFUSED(oh_run("QuantizeLinear", 21, NULL, 0, in, 2, &out, 1), CEP_EDTYPE, "x is int8");
	/* A float16 scale before 19, a zero point of another type. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x);
	REFUSED(oh_run("QuantizeLinear", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"y_scale is float16; opset 13 takes float32");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s);
	in[2] = oh_tensor(CEP_DTYPE_INT32, 0, NULL, &s);
	REFUSED(oh_run("QuantizeLinear", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"y_zero_point is int32");
	/* Per axis before 13, of the wrong length, along a bad axis. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), sv);
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(3), uzp);
	REFUSED(oh_run("QuantizeLinear", 10, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		"y_scale has shape [3]; it must be a scalar before opset 13");
	REFUSED(oh_run("QuantizeLinear", 10, &ax, 1, in, 3, &out, 1), CEP_EMODEL,
		"'axis' does not exist at opset 10");
	cr_assert_eq(oh_run("QuantizeLinear", 13, &ax, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x);
	REFUSED(oh_run("QuantizeLinear", 13, &ax, 1, in, 3, &out, 1), CEP_ESHAPE,
		"y_scale has 3 values but dimension 1 (axis) of x [3,2] has 2");
	REFUSED(oh_run("QuantizeLinear", 13, &ax5, 1, in, 3, &out, 1), CEP_EMODEL, "axis");
	/* Scale and zero point of different shapes. */
	in[2] = oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), zv);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x);
	REFUSED(oh_run("QuantizeLinear", 13, &ax, 1, in, 3, &out, 1), CEP_ESHAPE,
		"y_scale has shape [3] but y_zero_point has [2]");
	/* A 2-D scale without blocks; blocks of the wrong count; bad sizes.
	 * x [2, 3] in blocks of 2 along axis 1 takes [2, 2] scales. */
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), sb);
	REFUSED(oh_run("QuantizeLinear", 21, &ax, 1, in, 2, &out, 1), CEP_ESHAPE,
		"it must be a scalar or 1-D unless block_size is set");
	cr_assert_eq(oh_run("QuantizeLinear", 21, blk, 2, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 5), x);
	REFUSED(oh_run("QuantizeLinear", 21, blk, 2, in, 2, &out, 1), CEP_ESHAPE,
		"y_scale has shape [2,2] but x [2,5] in blocks of 2 along axis 1 needs 3 in "
		"dimension 1");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(1, 3), sb);
	REFUSED(oh_run("QuantizeLinear", 21, blk, 2, in, 2, &out, 1), CEP_ESHAPE,
		"needs 2 in dimension 0");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), sv);
	REFUSED(oh_run("QuantizeLinear", 21, blk, 2, in, 2, &out, 1), CEP_ESHAPE,
		"blocked quantization needs y_scale of x's rank 2");
	REFUSED(oh_run("QuantizeLinear", 21, blkneg, 2, in, 2, &out, 1), CEP_EMODEL,
		"block_size is -1");
	REFUSED(oh_run("QuantizeLinear", 19, blk, 2, in, 2, &out, 1), CEP_EMODEL,
		"'block_size' does not exist at opset 19");
	(void)zp;
}

/* Symbolic dims are left for the plan; the output has x's shape. */
Test(ops_quant, quantize_infers_symbolic_shapes)
{
	struct op_tensor in[3] = {
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { OP_DIM_UNKNOWN, 4 } },
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { OP_DIM_UNKNOWN } },
		{ .dtype = CEP_DTYPE_INT8, .rank = 1, .dims = { OP_DIM_UNKNOWN } },
	};
	struct op_attr ax = oh_int("axis", 0);
	struct op_tensor out;

	cr_assert_eq(oh_infer("QuantizeLinear", 13, &ax, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[1], 4);
}

/* --------------------------------------------------------- DequantizeLinear */

/* The specification's example, (x - 128) * 2, at every opset. */
Test(ops_quant, dequantize_the_specification_example_at_every_opset)
{
	uint8_t x[4] = { 0, 3, 128, 255 }, zp = 128;
	float s = 2.0f;
	static const float want[4] = { -256, -250, 0, 254 };
	int i, o;

	for (o = 0; o < NA(opsets); o++) {
		struct op_tensor in[3] = {
			oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(4), x),
			oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
			oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp),
		};
		struct op_tensor out;

		cr_assert_eq(oh_run("DequantizeLinear", opsets[o], NULL, 0, in, 3, &out, 1), 0,
			     "opset %d: %s", opsets[o], cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
		for (i = 0; i < 4; i++)
			cr_assert_eq(((float *)out.data)[i], want[i]);
		free(out.data);
		cr_assert_eq(oh_run("DequantizeLinear", opsets[o], NULL, 0, in, 2, &out, 1), 0,
			     "%s", cep_last_error());
		for (i = 0; i < 4; i++)
			cr_assert_eq(((float *)out.data)[i], 2.0f * x[i], "no zero point");
		free(out.data);
	}
}

/* int8 and int32 x; the int32 product is rounded once, to float32. */
Test(ops_quant, dequantize_int8_and_int32)
{
	int8_t x8[4] = { -128, -1, 0, 127 }, zp8 = -3;
	int32_t x32[3] = { 100000, -7, 2147483647 };
	float s = 0.5f;
	static const float want8[4] = { -62.5f, 1.0f, 1.5f, 65.0f };
	static const float want32[3] = { 50000.0f, -3.5f, 1073741824.0f };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_INT8, 1, DIMS(4), x8),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zp8),
	};
	struct op_tensor out;
	int i;

	cr_assert_eq(oh_run("DequantizeLinear", 10, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 4; i++)
		cr_assert_eq(((float *)out.data)[i], want8[i], "int8 %d", i);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(3), x32);
	cr_assert_eq(oh_run("DequantizeLinear", 13, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_eq(((float *)out.data)[i], want32[i], "int32 %d", i);
	free(out.data);
}

/* Per axis: the quantized values of quantize_per_axis back, (x - zp[c])
 * * s[c]; and blocked: those of quantize_blocked. */
Test(ops_quant, dequantize_per_axis_and_blocked)
{
	uint8_t x[12] = { 0, 1, 11, 12, 21, 21, 6, 7, 14, 14, 22, 23 }, zp[3] = { 0, 10, 20 };
	float s[3] = { 1, 2, 4 };
	static const float want[12] = { 0, 1, 2, 4, 4, 4, 6, 7, 8, 8, 8, 12 };
	int8_t xb[10] = { 1, 2, 3, 3, 0, 0, -2, -3, -4, -2 }, zb[6] = { 0, 1, -1, 2, 0, 0 };
	float sb[6] = { 1, 2, 4, 0.5f, 1, 2 };
	static const float wantb[10] = { 1, 2, 4, 4, 4, -1, -2, -3, -4, -4 };
	struct op_attr ax = oh_int("axis", -2);
	struct op_attr blk[2] = { oh_int("axis", 1), oh_int("block_size", 2) };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_UINT8, 3, DIMS(2, 3, 2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), s),
		oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(3), zp),
	};
	struct op_tensor out;
	int i, o;

	for (o = 1; o < NA(opsets); o++) {
		cr_assert_eq(oh_run("DequantizeLinear", opsets[o], &ax, 1, in, 3, &out, 1), 0,
			     "%s", cep_last_error());
		for (i = 0; i < 12; i++)
			cr_assert_eq(((float *)out.data)[i], want[i], "per axis %d", i);
		free(out.data);
	}
	in[0] = oh_tensor(CEP_DTYPE_INT8, 2, DIMS(2, 5), xb);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), sb);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 2, DIMS(2, 3), zb);
	for (o = 3; o < NA(opsets); o++) {
		cr_assert_eq(oh_run("DequantizeLinear", opsets[o], blk, 2, in, 3, &out, 1), 0,
			     "%s", cep_last_error());
		for (i = 0; i < 10; i++)
			cr_assert_eq(((float *)out.data)[i], wantb[i], "blocked %d", i);
		free(out.data);
	}
	REFUSED(oh_run("DequantizeLinear", 19, blk, 2, in, 3, &out, 1), CEP_EMODEL,
		"'block_size' does not exist at opset 19");
}

/* From 19 the scale may be float16 or bfloat16, the output of its type;
 * from 23 output_dtype names it. The product is in float32, then rounded:
 * 100 * 0.1 (float16 0.0999755859375) = 9.99755859375 -> float16 10.0;
 * 3 * 0.1f = 0.3 -> float16 0x34cd, bfloat16 0x3e9a. */
Test(ops_quant, dequantize_half_scales_and_output_dtype)
{
	int8_t x[3] = { 100, -100, 3 };
	uint16_t sh = cpu_f32_to_f16(0.1f);
	float sf = 0.1f;
	struct op_attr to16 = oh_int("output_dtype", CEP_DTYPE_FLOAT16);
	struct op_attr tobf = oh_int("output_dtype", CEP_DTYPE_BFLOAT16);
	struct op_attr to64 = oh_int("output_dtype", CEP_DTYPE_FLOAT64);
	struct op_attr toi8 = oh_int("output_dtype", CEP_DTYPE_INT8);
	static const uint16_t want16[3] = { 0x4900, 0xc900, 0x34cd };
	static const uint16_t wantbf[3] = { 0x4120, 0xc120, 0x3e9a };
	struct op_tensor in[2] = {
		oh_tensor(CEP_DTYPE_INT8, 1, DIMS(3), x),
		oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh),
	};
	struct op_tensor out;
	int i;

	cr_assert_eq(sh, 0x2e66);
	cr_assert_eq(oh_run("DequantizeLinear", 19, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(((uint16_t *)out.data)[0], 0x4900, "got %#x",
		     (unsigned)((uint16_t *)out.data)[0]);
	free(out.data);
	REFUSED(oh_run("DequantizeLinear", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"x_scale is float16; opset 13 takes float32");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &sf);
	cr_assert_eq(oh_run("DequantizeLinear", 23, &to16, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((uint16_t *)out.data)[i], want16[i], "float16 %d: %#x", i,
			     (unsigned)((uint16_t *)out.data)[i]);
	free(out.data);
	cr_assert_eq(oh_run("DequantizeLinear", 24, &tobf, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((uint16_t *)out.data)[i], wantbf[i], "bfloat16 %d: %#x", i,
			     (unsigned)((uint16_t *)out.data)[i]);
	free(out.data);
	REFUSED(oh_run("DequantizeLinear", 23, &to64, 1, in, 2, &out, 1), CEP_EMODEL,
		"output_dtype 11 (float64) is not float32, float16 or bfloat16");
	REFUSED(oh_run("DequantizeLinear", 23, &toi8, 1, in, 2, &out, 1), CEP_EMODEL,
		"output_dtype 3 (int8) is not float32, float16 or bfloat16");
	REFUSED(oh_run("DequantizeLinear", 21, &to16, 1, in, 2, &out, 1), CEP_EMODEL,
		"'output_dtype' does not exist at opset 21 (it came at 23)");
}

Test(ops_quant, dequantize_refuses_what_the_opset_does_not_take)
{
	float xf[4] = { 0 }, s = 1.0f, sv[2] = { 1, 1 };
	uint8_t x[4] = { 0 }, zp = 0;
	int8_t zi = 0;
	struct op_attr ax = oh_int("axis", 1);
	struct op_tensor in[3], out;

	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), xf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s);
	REFUSED(oh_run("DequantizeLinear", 21, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"DequantizeLinear: x is float32");
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(2, 2), x);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zi);
	REFUSED(oh_run("DequantizeLinear", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"x_zero_point is int8 but x is uint8");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), sv);
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp);
	REFUSED(oh_run("DequantizeLinear", 13, &ax, 1, in, 3, &out, 1), CEP_ESHAPE,
		"x_scale has shape [2] but x_zero_point has []");
	REFUSED(oh_run("DequantizeLinear", 10, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		"x_scale has shape [2]; it must be a scalar before opset 13");
	cr_assert_eq(oh_run("DequantizeLinear", 13, &ax, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
}

/* ---------------------------------------------------- DynamicQuantizeLinear */

/* The three conformance examples (the range widened to 0 on either side),
 * worked out by the specification's formulas: scale (max - min) / 255,
 * zero point round(-min / scale), y = round(x / scale) + zero point. */
Test(ops_quant, dynamic_quantize_the_examples)
{
	static const struct {
		int n;
		float x[12];
		float scale;
		int64_t zp;
		int64_t y[12];
	} cases[] = {
		{ 6, { 0, 2, -3, -2.5f, 1.34f, 0.5f }, 5.0f / 255.0f, 153,
		  { 153, 255, 0, 26, 221, 179 } },
		{ 6, { -1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f }, 4.0f / 255.0f, 255,
		  { 191, 121, 172, 96, 42, 0 } },
		{ 12, { 1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f },
		  4.0f / 255.0f, 0, { 64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149 } },
		/* All zero: a range of 1 stands in. */
		{ 3, { 0, 0, 0 }, 1.0f / 255.0f, 0, { 0, 0, 0 } },
		/* NaN is passed over when the range is found (-1 .. 1); 1 /
		 * (2 / 255) is 127.49999 in float32, so the zero point is 127,
		 * and NaN quantizes to it. */
		{ 3, { NAN, 1.0f, -1.0f }, 2.0f / 255.0f, 127, { 127, 254, 0 } },
	};
	int c;

	for (c = 0; c < NA(cases); c++) {
		struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, (int64_t[]){ cases[c].n },
						(void *)cases[c].x);
		struct op_tensor out[3];

		cr_assert_eq(oh_run("DynamicQuantizeLinear", 11, NULL, 0, &in, 1, out, 3), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out[0].dtype, CEP_DTYPE_UINT8);
		cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT32);
		cr_assert_eq(out[2].dtype, CEP_DTYPE_UINT8);
		cr_assert_eq(out[1].rank, 0);
		cr_assert_eq(out[2].rank, 0);
		cr_assert_eq(*(float *)out[1].data, cases[c].scale, "case %d: scale %.9g", c,
			     (double)*(float *)out[1].data);
		cr_assert_eq(*(uint8_t *)out[2].data, cases[c].zp, "case %d: zero point %d", c,
			     *(uint8_t *)out[2].data);
		assert_ints(&out[0], cases[c].y, cases[c].n, "y");
		free(out[0].data);
		free(out[1].data);
		free(out[2].data);
	}
}

Test(ops_quant, dynamic_quantize_takes_float32_only)
{
	uint16_t x[2] = { 0 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(2), x);
	struct op_tensor out[3];

	REFUSED(oh_run("DynamicQuantizeLinear", 11, NULL, 0, &in, 1, out, 3), CEP_EDTYPE,
		"DynamicQuantizeLinear: x is float16; opset 11 takes float32");
}
