/*
 * test_ops_quant_4bit.c — QuantizeLinear, DequantizeLinear, Cast and
 * CastLike of the types that joined the quantized ones (the float8 types,
 * int4, uint4, float4e2m1; a byte each) on the host, with values worked
 * out from the specifications (and checked against ONNX's reference
 * implementation, onnx 1.23): saturation to [-8, 7] and [0, 15] per axis,
 * float8 with `saturate` either way, float4e2m1's rounding and its -0, the
 * bytes written (int4 sign-extended), inputs in ml_dtypes' form (the high
 * nibble 0), a float zero point that is not 0 refused, and the opsets
 * that take each type.
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

/* Asserts that op fails with code and a message holding piece. */
static void refused(int ret, int code, const char *piece)
{
	const char *msg = cep_last_error();

	cr_assert_eq(ret, code, "got %d (%s), want %d", ret, msg, code);
	cr_assert(strstr(msg, piece) != NULL, "'%s' does not say '%s'", msg, piece);
}

/* ----------------------------------------------------------- QuantizeLinear */

/* Per axis 0 with scales 2, 3, 4 and zero points 1: round half to even,
 * add 1, saturate (ONNX's test_quantizelinear_int4 and _uint4). */
Test(ops_quant_4bit, quantize_to_int4_and_uint4_saturates_per_axis)
{
	float x[12] = { 0, 2.5f, 4.8f, 8.6f, -30, -20, 6, 9, 12, 15, 16, 40 };
	float s[3] = { 2, 3, 4 };
	uint8_t zi[3] = { 1, 1, 1 }, zu[3] = { 1, 1, 1 };
	static const uint8_t want_i[12] = { 1, 2, 3, 5, 0xf8, 0xfa, 3, 4, 4, 5, 5, 7 };
	static const uint8_t want_u[12] = { 1, 2, 3, 5, 0, 0, 3, 4, 4, 5, 5, 11 };
	struct op_attr ax = oh_int("axis", 0);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 4), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), s),
		oh_tensor(CEP_DTYPE_INT4, 1, DIMS(3), zi),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 21, &ax, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT4);
	cr_assert_arr_eq(out.data, want_i, 12, "int4, sign-extended");
	free(out.data);
	in[2] = oh_tensor(CEP_DTYPE_UINT4, 1, DIMS(3), zu);
	cr_assert_eq(oh_run("QuantizeLinear", 23, &ax, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(out.data, want_u, 12, "uint4");
	free(out.data);
	/* A zero point of -1 in ml_dtypes' form (0x0f) is -1. */
	zi[0] = zi[1] = zi[2] = 0x0f;
	in[2] = oh_tensor(CEP_DTYPE_INT4, 1, DIMS(3), zi);
	cr_assert_eq(oh_run("QuantizeLinear", 21, &ax, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(cpu_load_i(out.data, CEP_DTYPE_INT4, 0), -1);
	cr_assert_eq(cpu_load_i(out.data, CEP_DTYPE_INT4, 1), 0);   /* 2.5/2 -> 1 - 1 */
	cr_assert_eq(cpu_load_i(out.data, CEP_DTYPE_INT4, 4), -8);
	free(out.data);
}

/* x / 2 to float8, rounded to nearest even; past the largest value it
 * saturates, or becomes NaN (e4m3fn) or infinity (e5m2) with saturate=0. */
Test(ops_quant_4bit, quantize_to_float8_with_and_without_saturate)
{
	float x[6] = { 0, 1, 2, 100000, 200, -1e6f }, s = 2.0f;
	uint8_t z8 = 0;
	static const uint8_t want_e4[6] = { 0x00, 0x30, 0x38, 0x7e, 0x6c, 0xfe };
	static const uint8_t want_e4_nosat[6] = { 0x00, 0x30, 0x38, 0x7f, 0x6c, 0xff };
	static const uint8_t want_e5[6] = { 0x00, 0x38, 0x3c, 0x7a, 0x56, 0xfb };
	static const uint8_t want_e5_nosat[6] = { 0x00, 0x38, 0x3c, 0x7a, 0x56, 0xfc };
	struct op_attr nosat = oh_int("saturate", 0);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_FLOAT8E4M3FN, 1, DIMS(1), &z8),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 19, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT8E4M3FN);
	cr_assert_arr_eq(out.data, want_e4, 6);
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 19, &nosat, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(out.data, want_e4_nosat, 6);
	free(out.data);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT8E5M2, 0, NULL, &z8);
	cr_assert_eq(oh_run("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(out.data, want_e5, 6);
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 21, &nosat, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(out.data, want_e5_nosat, 6);
	free(out.data);
	/* The zero point must be 0 (-0 is). */
	z8 = 0x80;
	cr_assert_eq(oh_run("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	z8 = 0x3c;
	refused(oh_run("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1), CEP_EINVAL,
		"QuantizeLinear: y_zero_point is float8e5m2, whose zero point must be 0; "
		"element 0 is 1");
}

/* float4e2m1: rounding to nearest even, saturation to 6, and -0, which
 * adding the zero point makes +0 (ONNX's reference does). */
Test(ops_quant_4bit, quantize_to_float4e2m1)
{
	float x[6] = { -0.0f, 2.5f, 30, -5, 0.75f, 1.25f }, s = 1.0f;
	uint8_t z = 0;
	static const uint8_t want[6] = { 0x00, 0x04, 0x07, 0x0e, 0x02, 0x02 };
	struct op_attr od = oh_int("output_dtype", CEP_DTYPE_FLOAT4E2M1);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_FLOAT4E2M1, 0, NULL, &z),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QuantizeLinear", 23, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(out.data, want, 6);
	free(out.data);
	cr_assert_eq(oh_run("QuantizeLinear", 23, &od, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT4E2M1);
	cr_assert_eq(((uint8_t *)out.data)[0], 0x08, "-0 without a zero point");
	free(out.data);
}

/* int4 and uint4 from 21, float8 from 19, float4e2m1 from 23; the 2-bit
 * and 6-bit types are not stored. */
Test(ops_quant_4bit, quantize_takes_each_type_from_its_opset)
{
	float x[2] = { 1, 2 }, s = 1.0f;
	uint8_t z = 0;
	struct op_attr od = oh_int("output_dtype", 26);
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT4, 0, NULL, &z),
	};
	struct op_tensor out;

	refused(oh_run("QuantizeLinear", 19, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"QuantizeLinear: y_zero_point is int4; opset 19 takes");
	in[2].dtype = CEP_DTYPE_FLOAT8E4M3FNUZ;
	refused(oh_run("QuantizeLinear", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"y_zero_point is float8e4m3fnuz; opset 13 takes int8, uint8");
	cr_assert_eq(oh_run("QuantizeLinear", 19, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	in[2].dtype = CEP_DTYPE_FLOAT4E2M1;
	refused(oh_run("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"y_zero_point is float4e2m1; opset 21 takes");
	refused(oh_run("QuantizeLinear", 25, &od, 1, in, 2, &out, 1), CEP_EUNSUPPORTED,
		"output_dtype 26 is int2, which cudaep does not support");
}

/* --------------------------------------------------------- DequantizeLinear */

/* (x - 1) * 2 for int4 (ONNX's test_dequantizelinear_int4), x in both
 * forms of a byte; float8 and float4e2m1 are their value times the scale. */
Test(ops_quant_4bit, dequantize_int4_uint4_float8_and_float4e2m1)
{
	uint8_t xi[5] = { 0x00, 0x01, 0x07, 0x0c, 0xf8 }, zi = 1;
	uint8_t xu[5] = { 0, 1, 7, 10, 0xff }, zu = 1;
	uint8_t x5[5] = { 0x00, 0x38, 0x3c, 0x7a, 0xd6 }, z0 = 0;
	uint8_t x4[5] = { 0x00, 0x02, 0x0a, 0x03, 0x0e };
	float s = 2.0f;
	static const float want_i[5] = { -2, 0, 12, -10, -18 };
	static const float want_u[5] = { -2, 0, 12, 18, 28 };
	static const float want_5[5] = { 0, 1, 2, 98304, -192 };
	static const float want_4[5] = { 0, 2, -2, 3, -8 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_INT4, 1, DIMS(5), xi),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s),
		oh_tensor(CEP_DTYPE_INT4, 1, DIMS(1), &zi),
	};
	struct op_tensor out;
	int i;

	cr_assert_eq(oh_run("DequantizeLinear", 21, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], want_i[i], "int4 %d", i);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_UINT4, 1, DIMS(5), xu);
	in[2] = oh_tensor(CEP_DTYPE_UINT4, 1, DIMS(1), &zu);
	cr_assert_eq(oh_run("DequantizeLinear", 23, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], want_u[i], "uint4 %d", i);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT8E5M2, 1, DIMS(5), x5);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT8E5M2, 0, NULL, &z0);
	cr_assert_eq(oh_run("DequantizeLinear", 19, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], want_5[i], "float8e5m2 %d", i);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT4E2M1, 1, DIMS(5), x4);
	cr_assert_eq(oh_run("DequantizeLinear", 23, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 5; i++)
		cr_assert_eq(((float *)out.data)[i], want_4[i], "float4e2m1 %d", i);
	free(out.data);
	refused(oh_run("DequantizeLinear", 21, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"DequantizeLinear: x is float4e2m1; opset 21 takes");
	in[0] = oh_tensor(CEP_DTYPE_INT4, 1, DIMS(5), xi);
	refused(oh_run("DequantizeLinear", 19, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"x is int4; opset 19 takes");
	/* A float8 zero point that is not 0. */
	z0 = 0x38;
	in[0] = oh_tensor(CEP_DTYPE_FLOAT8E5M2, 1, DIMS(5), x5);
	refused(oh_run("DequantizeLinear", 19, NULL, 0, in, 3, &out, 1), CEP_EINVAL,
		"x_zero_point is float8e5m2, whose zero point must be 0; element 0 is 0.5");
}

/* ------------------------------------------------------------ Cast, CastLike */

/* Into int4: an integer wraps, a float truncates and is 0 out of range;
 * into float4e2m1 to nearest even, saturating; and back. */
Test(ops_quant_4bit, cast_to_and_from_the_4bit_types)
{
	float xf[8] = { -9, -8, 7.9f, 8, -0.5f, 1e30f, NAN, 2.5f };
	int32_t xi[4] = { 300, -3, 17, -9 };
	static const uint8_t want_f_i4[8] = { 0, 0xf8, 7, 0, 0, 0, 0, 2 };
	static const uint8_t want_f_u4[8] = { 0, 0, 7, 8, 0, 0, 0, 2 };
	static const uint8_t want_f_f4[8] = { 0x0f, 0x0f, 0x07, 0x07, 0x09, 0x07, 0x08, 0x04 };
	static const uint8_t want_i_i4[4] = { 0xfc, 0xfd, 0x01, 0x07 };
	static const uint8_t want_i_u4[4] = { 0x0c, 0x0d, 0x01, 0x07 };
	struct op_attr to_i4 = oh_int("to", CEP_DTYPE_INT4), to_u4 = oh_int("to", CEP_DTYPE_UINT4);
	struct op_attr to_f4 = oh_int("to", CEP_DTYPE_FLOAT4E2M1);
	struct op_attr to_f = oh_int("to", CEP_DTYPE_FLOAT32);
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(8), xf) };
	struct op_tensor out, back;
	uint8_t like = 0;

	cr_assert_eq(oh_run("Cast", 21, &to_i4, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, want_f_i4, 8);
	free(out.data);
	cr_assert_eq(oh_run("Cast", 21, &to_u4, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, want_f_u4, 8);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT4E2M1, 1, DIMS(1), &like);
	cr_assert_eq(oh_run("CastLike", 23, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT4E2M1);
	cr_assert_arr_eq(out.data, want_f_f4, 8);
	/* And back: -6, -6, 6, 6, -0.5, 6, -0, 2. */
	cr_assert_eq(oh_run("Cast", 23, &to_f, 1, &out, 1, &back, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)back.data)[0], -6.0f);
	cr_assert_eq(((float *)back.data)[4], -0.5f);
	cr_assert(signbit(((float *)back.data)[6]) && ((float *)back.data)[6] == 0.0f);
	free(back.data);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(4), xi);
	cr_assert_eq(oh_run("Cast", 21, &to_i4, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, want_i_i4, 4);
	free(out.data);
	cr_assert_eq(oh_run("Cast", 21, &to_u4, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, want_i_u4, 4);
	free(out.data);
	/* Opsets: int4 from 21, float4e2m1 from 23, either way. */
	refused(oh_run("Cast", 19, &to_i4, 1, in, 1, &out, 1), CEP_EMODEL,
		"Cast (opset 19): int4 is not a type of this opset");
	refused(oh_run("Cast", 21, &to_f4, 1, in, 1, &out, 1), CEP_EMODEL,
		"Cast (opset 21): float4e2m1 is not a type of this opset");
	in[0] = oh_tensor(CEP_DTYPE_UINT4, 1, DIMS(1), &like);
	refused(oh_run("Cast", 20, &to_f, 1, in, 1, &out, 1), CEP_EMODEL,
		"Cast (opset 20): uint4 is not a type of this opset");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), xf);
	refused(oh_run("CastLike", 19, NULL, 0, in, 2, &out, 1), CEP_EMODEL,
		"CastLike (opset 19): uint4 is not a type of this opset");
}
