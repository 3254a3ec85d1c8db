/*
 * test_ops_bitwise.c — the bitwise operators of kernels/cpu/bitwise.c
 * (BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot) and Xor of
 * kernels/cpu/compare.c, called as the engine calls them (schema
 * inference, then the host kernel through exec_host_eval). Values from the
 * spec's examples and its opset 28 rules for signed shifts (arithmetic
 * right shifts, bits past the width dropped, shifts by a negative amount
 * or by the width or more), at every width's extremes; broadcasting; the
 * types of each opset; and every refusal by its message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
	       const struct op_tensor *in, int n_in, struct op_tensor *out)
{
	cep__clear_error();
	return oh_run(op, opset, attrs, n_attrs, in, n_in, out, 1);
}

static void assert_refused(int ret, int err, const char *msg)
{
	cr_assert_eq(ret, err, "got %s (%s), expected %s", cep_err_name(ret), cep_last_error(),
		     cep_err_name(err));
	cr_assert_str_eq(cep_last_error(), msg);
}

/* BitShift of x by y (n elements of dtype t, same shape) at opset, in
 * direction dir; out gets the result. */
static void shift(const char *dir, int opset, cep_dtype t, int64_t n, void *x, void *y,
		  struct op_tensor *out)
{
	struct op_attr d = oh_string("direction", dir);
	struct op_tensor in[2] = { oh_tensor(t, 1, &n, x), oh_tensor(t, 1, &n, y) };

	cr_assert_eq(run("BitShift", opset, &d, 1, in, 2, out), 0, "%s", cep_last_error());
	cr_assert_eq(out->dtype, t);
	cr_assert_eq(out->rank, 1);
	cr_assert_eq(out->dims[0], n);
}

/* ----------------------------------------------------------------- BitShift */

Test(ops_bitwise, bitshift_the_spec_examples)
{
	uint8_t x[2] = { 1, 4 }, y[2] = { 1, 1 }, xl[2] = { 1, 2 }, yl[2] = { 1, 2 };
	struct op_tensor out;

	shift("RIGHT", 11, CEP_DTYPE_UINT8, 2, x, y, &out);
	cr_assert_eq(((uint8_t *)out.data)[0], 0);
	cr_assert_eq(((uint8_t *)out.data)[1], 2);
	free(out.data);
	shift("LEFT", 11, CEP_DTYPE_UINT8, 2, xl, yl, &out);
	cr_assert_eq(((uint8_t *)out.data)[0], 2);
	cr_assert_eq(((uint8_t *)out.data)[1], 8);
	free(out.data);
}

Test(ops_bitwise, bitshift_of_uint8_drops_what_leaves_the_width)
{
	uint8_t x[4] = { 200, 1, 1, 255 }, y[4] = { 1, 7, 8, 200 };
	uint8_t xr[4] = { 255, 255, 1, 4 }, yr[4] = { 8, 7, 1, 1 };
	const uint8_t want_l[4] = { 144, 128, 0, 0 }, want_r[4] = { 0, 1, 0, 2 };
	static const int opsets[] = { 11, 28 };
	struct op_tensor out;
	size_t v;
	int i;

	for (v = 0; v < N_OF(opsets); v++) {
		shift("LEFT", opsets[v], CEP_DTYPE_UINT8, 4, x, y, &out);
		for (i = 0; i < 4; i++)
			cr_assert_eq(((uint8_t *)out.data)[i], want_l[i], "%d << %d", x[i], y[i]);
		free(out.data);
		shift("RIGHT", opsets[v], CEP_DTYPE_UINT8, 4, xr, yr, &out);
		for (i = 0; i < 4; i++)
			cr_assert_eq(((uint8_t *)out.data)[i], want_r[i], "%d >> %d", xr[i], yr[i]);
		free(out.data);
	}
}

Test(ops_bitwise, bitshift_of_signed_types_follows_opset_28)
{
	int8_t xr8[6] = { -128, -1, -1, 5, -5, 5 }, yr8[6] = { 1, 7, 8, 8, -1, -1 };
	const int8_t wr8[6] = { -64, -1, -1, 0, -1, 0 };
	int8_t xl8[5] = { 64, 1, -1, 3, -128 }, yl8[5] = { 1, 7, 8, -1, 1 };
	const int8_t wl8[5] = { -128, -128, 0, 0, 0 };
	int32_t xl32[3] = { 1, 1, -1 }, yl32[3] = { 31, 32, 31 };
	const int32_t wl32[3] = { INT32_MIN, 0, INT32_MIN };
	int32_t xr32[3] = { INT32_MIN, INT32_MAX, -7 }, yr32[3] = { 31, 30, 100 };
	const int32_t wr32[3] = { -1, 1, -1 };
	int64_t xl64[3] = { 1, 1, -1 }, yl64[3] = { 63, 64, INT64_MIN };
	const int64_t wl64[3] = { INT64_MIN, 0, 0 };
	int64_t xr64[3] = { INT64_MIN, -1, INT64_C(1) << 62 }, yr64[3] = { 63, 64, 62 };
	const int64_t wr64[3] = { -1, -1, 1 };
	struct op_tensor out;
	int i;

	shift("RIGHT", 28, CEP_DTYPE_INT8, 6, xr8, yr8, &out);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int8_t *)out.data)[i], wr8[i], "int8 %d >> %d", xr8[i], yr8[i]);
	free(out.data);
	shift("LEFT", 28, CEP_DTYPE_INT8, 5, xl8, yl8, &out);
	for (i = 0; i < 5; i++)
		cr_assert_eq(((int8_t *)out.data)[i], wl8[i], "int8 %d << %d", xl8[i], yl8[i]);
	free(out.data);
	shift("LEFT", 28, CEP_DTYPE_INT32, 3, xl32, yl32, &out);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((int32_t *)out.data)[i], wl32[i], "int32 element %d", i);
	free(out.data);
	shift("RIGHT", 28, CEP_DTYPE_INT32, 3, xr32, yr32, &out);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((int32_t *)out.data)[i], wr32[i], "int32 element %d", i);
	free(out.data);
	shift("LEFT", 28, CEP_DTYPE_INT64, 3, xl64, yl64, &out);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((int64_t *)out.data)[i], wl64[i], "int64 element %d", i);
	free(out.data);
	shift("RIGHT", 28, CEP_DTYPE_INT64, 3, xr64, yr64, &out);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((int64_t *)out.data)[i], wr64[i], "int64 element %d", i);
	free(out.data);
}

Test(ops_bitwise, bitshift_broadcasts)
{
	uint8_t x[6] = { 1, 2, 3, 16, 32, 64 }, y[3] = { 0, 1, 2 };
	const uint8_t want[6] = { 1, 1, 0, 16, 16, 16 };
	int64_t dx[2] = { 2, 3 }, dy[1] = { 3 };
	struct op_attr d = oh_string("direction", "RIGHT");
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_UINT8, 2, dx, x),
				   oh_tensor(CEP_DTYPE_UINT8, 1, dy, y) }, out;
	int i;

	cr_assert_eq(run("BitShift", 11, &d, 1, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], want[i], "element %d", i);
	free(out.data);
}

Test(ops_bitwise, bitshift_refusals)
{
	int32_t a[2] = { 1, 2 };
	uint8_t u[2] = { 1, 2 };
	int8_t s[2] = { 1, 2 };
	int64_t d2[1] = { 2 };
	struct op_attr left = oh_string("direction", "LEFT"), bad = oh_string("direction", "left");
	struct op_attr num = oh_int("direction", 1);
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_INT32, 1, d2, a),
				   oh_tensor(CEP_DTYPE_INT32, 1, d2, a) }, out;

	assert_refused(run("BitShift", 27, &left, 1, in, 2, &out), CEP_EUNSUPPORTED,
		       "BitShift: dtype int32 is not supported on the host backend "
		       "(supported: uint64, uint32, uint16, uint8)");
	assert_refused(run("BitShift", 10, &left, 1, in, 2, &out), CEP_EUNSUPPORTED,
		       "BitShift: opset 10 is not supported (supported 11-28)");
	in[0] = in[1] = oh_tensor(CEP_DTYPE_UINT8, 1, d2, u);
	assert_refused(run("BitShift", 11, NULL, 0, in, 2, &out), CEP_EMODEL,
		       "BitShift: the direction attribute is required ('LEFT' or 'RIGHT')");
	assert_refused(run("BitShift", 11, &bad, 1, in, 2, &out), CEP_EMODEL,
		       "BitShift: direction is 'left', expected 'LEFT' or 'RIGHT'");
	assert_refused(run("BitShift", 11, &num, 1, in, 2, &out), CEP_EMODEL,
		       "BitShift: attribute 'direction' is of type int, expected string");
	in[1] = oh_tensor(CEP_DTYPE_INT8, 1, d2, s);
	cr_assert_eq(run("BitShift", 28, &left, 1, in, 2, &out), CEP_EDTYPE,
		     "X and Y of different types: %s", cep_last_error());
}

/* ---------------------------------------------------- BitwiseAnd, Or, Xor */

Test(ops_bitwise, and_or_xor_not_at_every_width)
{
	static const cep_dtype types[] = { CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT64 };
	/* Stored at each width: the bit patterns of the narrow results. */
	static const int64_t a[6] = { 0, -1, 0x5a, -128, 0x7f, INT64_MIN };
	static const int64_t b[6] = { 0, 0x33, -1, 0x0f, -2, -1 };
	int64_t n = 6;
	struct op_tensor in[2], out;
	int64_t xa[6], xb[6];
	size_t t;
	int i, k;

	for (t = 0; t < N_OF(types); t++) {
		static const char *const ops[] = { "BitwiseAnd", "BitwiseOr", "BitwiseXor" };

		for (i = 0; i < 6; i++) {
			cpu_store_i(xa, types[t], i, a[i]);
			cpu_store_i(xb, types[t], i, b[i]);
		}
		in[0] = oh_tensor(types[t], 1, &n, xa);
		in[1] = oh_tensor(types[t], 1, &n, xb);
		for (k = 0; k < 3; k++) {
			cr_assert_eq(run(ops[k], 18, NULL, 0, in, 2, &out), 0, "%s", cep_last_error());
			cr_assert_eq(out.dtype, types[t]);
			for (i = 0; i < 6; i++) {
				int64_t va = cpu_load_i(xa, types[t], i), vb = cpu_load_i(xb, types[t], i);
				int64_t want = k == 0 ? (va & vb) : k == 1 ? (va | vb) : (va ^ vb);
				int64_t wrapped;

				cpu_store_i(&wrapped, types[t], 0, want);
				cr_assert_eq(cpu_load_i(out.data, types[t], i),
					     cpu_load_i(&wrapped, types[t], 0), "%s %s element %d",
					     ops[k], cep_dtype_name(types[t]), i);
			}
			free(out.data);
		}
		cr_assert_eq(run("BitwiseNot", 18, NULL, 0, in, 1, &out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, types[t]);
		for (i = 0; i < 6; i++) {
			int64_t wrapped;

			cpu_store_i(&wrapped, types[t], 0, ~cpu_load_i(xa, types[t], i));
			cr_assert_eq(cpu_load_i(out.data, types[t], i),
				     cpu_load_i(&wrapped, types[t], 0), "BitwiseNot %s element %d",
				     cep_dtype_name(types[t]), i);
		}
		free(out.data);
	}
}

Test(ops_bitwise, the_bitwise_spec_cases_by_hand)
{
	/* ~ of uint8 and int8, and the bcast of test_bitwise_and_ui8_bcast_4v3d
	 * in small. */
	uint8_t u[4] = { 0, 1, 0xf0, 0xff }, m[2] = { 0x0f, 0xf0 };
	int8_t s[3] = { 0, -1, 127 };
	int64_t d4[1] = { 4 }, d3[1] = { 3 }, dm[1] = { 2 }, dx[2] = { 2, 2 };
	struct op_tensor in[2], out;

	in[0] = oh_tensor(CEP_DTYPE_UINT8, 1, d4, u);
	cr_assert_eq(run("BitwiseNot", 18, NULL, 0, in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 0xff);
	cr_assert_eq(((uint8_t *)out.data)[1], 0xfe);
	cr_assert_eq(((uint8_t *)out.data)[2], 0x0f);
	cr_assert_eq(((uint8_t *)out.data)[3], 0x00);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT8, 1, d3, s);
	cr_assert_eq(run("BitwiseNot", 28, NULL, 0, in, 1, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], -1);
	cr_assert_eq(((int8_t *)out.data)[1], 0);
	cr_assert_eq(((int8_t *)out.data)[2], -128);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 2, dx, u);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 1, dm, m);
	cr_assert_eq(run("BitwiseAnd", 18, NULL, 0, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(((uint8_t *)out.data)[0], 0x00);
	cr_assert_eq(((uint8_t *)out.data)[1], 0x00);
	cr_assert_eq(((uint8_t *)out.data)[2], 0x00);
	cr_assert_eq(((uint8_t *)out.data)[3], 0xf0);
	free(out.data);
	cr_assert_eq(run("BitwiseOr", 18, NULL, 0, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 0x0f);
	cr_assert_eq(((uint8_t *)out.data)[1], 0xf1);
	cr_assert_eq(((uint8_t *)out.data)[2], 0xff);
	cr_assert_eq(((uint8_t *)out.data)[3], 0xff);
	free(out.data);
	cr_assert_eq(run("BitwiseXor", 18, NULL, 0, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[1], 0xf1);
	cr_assert_eq(((uint8_t *)out.data)[3], 0x0f);
	free(out.data);
}

Test(ops_bitwise, bitwise_refusals)
{
	float f[2] = { 1.0f, 2.0f };
	uint8_t u[3] = { 1, 2, 3 };
	int32_t i32[2] = { 1, 2 };
	uint8_t b[2] = { 1, 0 };
	int64_t d2[1] = { 2 }, d3[1] = { 3 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, f),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, f) }, out;

	assert_refused(run("BitwiseAnd", 18, NULL, 0, in, 2, &out), CEP_EUNSUPPORTED,
		       "BitwiseAnd: dtype float32 is not supported on the host backend "
		       "(supported: int64, int32, int16, int8, uint64, uint32, uint16, uint8)");
	in[0] = oh_tensor(CEP_DTYPE_BOOL, 1, d2, b);
	assert_refused(run("BitwiseNot", 18, NULL, 0, in, 1, &out), CEP_EUNSUPPORTED,
		       "BitwiseNot: dtype bool is not supported on the host backend "
		       "(supported: int64, int32, int16, int8, uint64, uint32, uint16, uint8)");
	assert_refused(run("BitwiseOr", 17, NULL, 0, in, 2, &out), CEP_EUNSUPPORTED,
		       "BitwiseOr: opset 17 is not supported (supported 18-28)");
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 1, d3, u);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 1, d2, b);
	cr_assert_eq(run("BitwiseXor", 18, NULL, 0, in, 2, &out), CEP_ESHAPE, "%s",
		     cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, d2, i32);
	cr_assert_eq(run("BitwiseXor", 18, NULL, 0, in, 2, &out), CEP_EDTYPE, "%s",
		     cep_last_error());
}

/* ---------------------------------------------------------------------- Xor */

Test(ops_bitwise, xor_of_bools_broadcasts)
{
	uint8_t a[6] = { 0, 1, 0, 1, 1, 0 }, b[3] = { 0, 1, 1 };
	const uint8_t want[6] = { 0, 0, 1, 1, 0, 1 };
	int64_t da[2] = { 2, 3 }, db[1] = { 3 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_BOOL, 2, da, a),
				   oh_tensor(CEP_DTYPE_BOOL, 1, db, b) }, out;
	int32_t i32[3] = { 1, 0, 1 };
	int i;

	cr_assert_eq(run("Xor", 7, NULL, 0, in, 2, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
	cr_assert_eq(out.rank, 2);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], want[i], "element %d", i);
	free(out.data);
	/* Before opset 7 B broadcasts only when broadcast=1 says so. */
	assert_refused(run("Xor", 6, NULL, 0, in, 2, &out), CEP_ESHAPE,
		       "Xor (opset 6): B of shape [3] has another rank than (broadcast=0) A of shape [2,3]");
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, db, i32);
	assert_refused(run("Xor", 7, NULL, 0, in, 2, &out), CEP_EDTYPE,
		       "Xor: input 1 is int32, not bool");
	in[0] = in[1];
	assert_refused(run("Xor", 28, NULL, 0, in, 2, &out), CEP_EDTYPE,
		       "Xor: input 0 is int32, not bool");
}
