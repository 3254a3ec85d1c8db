/*
 * test_ops_dtypes.c — the element types that joined the first ones:
 * float64, int16, uint16, uint32 and uint64, on the host backend. The
 * element helpers of kernels/cpu/cpu.h (round trips at the extremes, one
 * rounding from float64 to the 16-bit floats); unsigned and 16-bit
 * arithmetic wrapping at its width; comparisons and orderings of uint64
 * values past 2^63, which int64 would read as negative; float64 computed
 * in double (results a float32 computation cannot give); Cast between
 * every pair of stored types on values each type holds, and its edges
 * against what numpy gives; the type sets of each opset; and models whose
 * initializers come in each of ONNX's typed fields, run through the
 * engine. Expected values are worked out from the specification or were
 * computed with numpy (2.4), as each test says.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "engine/engine.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const int64_t d1[1] = { 1 }, d2[1] = { 2 }, d3[1] = { 3 }, d4[1] = { 4 };

/* Every type the engine stores. */
static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
	CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8,
	CEP_DTYPE_UINT64, CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8,
	CEP_DTYPE_BOOL,
};

/* Runs op (one output) and asserts it ran. */
static void run_ok(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
		   const struct op_tensor *in, int n_in, struct op_tensor *out)
{
	cep__clear_error();
	cr_assert_eq(oh_run(op, opset, attrs, n_attrs, in, n_in, out, 1), 0, "%s %d: %s", op,
		     opset, cep_last_error());
}

/* ----------------------------------------------------------- cpu.h helpers */

Test(ops_dtypes, loads_and_stores_keep_every_value_of_the_new_types)
{
	int16_t i16[2];
	uint16_t u16[2];
	uint32_t u32[2];
	uint64_t u64[2];
	double f64[2];

	cpu_store_i(i16, CEP_DTYPE_INT16, 0, INT16_MIN);
	cpu_store_i(i16, CEP_DTYPE_INT16, 1, 40000); /* wraps to 40000 - 65536 */
	cr_assert(i16[0] == INT16_MIN && i16[1] == -25536);
	cr_assert_eq(cpu_load_i(i16, CEP_DTYPE_INT16, 0), INT16_MIN);
	cpu_store_i(u16, CEP_DTYPE_UINT16, 0, -1);
	cr_assert_eq(u16[0], UINT16_MAX);
	cr_assert_eq(cpu_load_i(u16, CEP_DTYPE_UINT16, 0), 65535, "zero-extended, not -1");
	cpu_store_i(u32, CEP_DTYPE_UINT32, 0, INT64_C(0x1ffffffff));
	cr_assert_eq(u32[0], UINT32_MAX);
	cr_assert_eq(cpu_load_i(u32, CEP_DTYPE_UINT32, 0), INT64_C(4294967295));
	cr_assert_eq(cpu_load_d(u32, CEP_DTYPE_UINT32, 0), 4294967295.0);
	/* uint64 travels as its bits through int64, and reads unsigned as a
	 * double and in order. */
	u64[0] = UINT64_MAX;
	u64[1] = 1;
	cr_assert_eq(cpu_load_i(u64, CEP_DTYPE_UINT64, 0), -1);
	cr_assert_eq(cpu_load_d(u64, CEP_DTYPE_UINT64, 0), 18446744073709551615.0);
	cr_assert_eq(cpu_i2d(CEP_DTYPE_UINT64, -1), 18446744073709551615.0);
	cr_assert(cpu_lt_i(CEP_DTYPE_UINT64, 1, -1) && !cpu_lt_i(CEP_DTYPE_INT64, 1, -1));
	cr_assert_lt(cpu_order_key(CEP_DTYPE_UINT64, 1), cpu_order_key(CEP_DTYPE_UINT64, -1));
	cpu_store_d(u64, CEP_DTYPE_UINT64, 0, 9223372036854777856.0); /* 2^63 + 2^11 */
	cr_assert_eq(u64[0], UINT64_C(9223372036854777856));
	cpu_store_d(u64, CEP_DTYPE_UINT64, 0, 1e30);
	cr_assert_eq(u64[0], UINT64_MAX, "saturates");
	cpu_store_d(f64, CEP_DTYPE_FLOAT64, 0, 0.1);
	cr_assert_eq(cpu_load_d(f64, CEP_DTYPE_FLOAT64, 0), 0.1);
	cr_assert_eq(cpu_load_f(f64, CEP_DTYPE_FLOAT64, 0), 0.1f);
	cr_assert_eq(cpu_load_i(f64, CEP_DTYPE_FLOAT64, 0), 0);
}

/*
 * 1 + 2^-11 + 2^-40 lies just above the midpoint of float16's 1 and
 * 1 + 2^-10: numpy's float64 to float16 gives 0x3c01. Through float32
 * the 2^-40 is lost first, the midpoint ties to even and gives 0x3c00:
 * the double rounding cpu_f64_to_f16() must not do. bfloat16 the same
 * with 1 + 2^-8 + 2^-40: 0x3f81 (ml_dtypes), 0x3f80 through float32.
 */
Test(ops_dtypes, float64_rounds_once_to_the_16_bit_floats)
{
	double h = 1.0 + 0x1p-11 + 0x1p-40, b = 1.0 + 0x1p-8 + 0x1p-40;

	cr_assert_eq(cpu_f32_to_f16((float)h), 0x3c00);
	cr_assert_eq(cpu_f64_to_f16(h), 0x3c01);
	cr_assert_eq(cpu_f64_to_f16(-h), 0xbc01);
	cr_assert_eq(cpu_f32_to_bf16((float)b), 0x3f80);
	cr_assert_eq(cpu_f64_to_bf16(b), 0x3f81);
	/* Exact values, ties, the ends of the range and NaN. */
	cr_assert_eq(cpu_f64_to_f16(1.0 + 0x1p-11), 0x3c00, "a tie goes to even");
	cr_assert_eq(cpu_f64_to_f16(65504.0), 0x7bff);
	cr_assert_eq(cpu_f64_to_f16(65520.0), 0x7c00, "65520 rounds to infinity");
	cr_assert_eq(cpu_f64_to_f16(0x1p-25 + 0x1p-60), 0x0001, "above half the least subnormal");
	cr_assert_eq(cpu_f64_to_f16(1e300), 0x7c00);
	cr_assert_eq(cpu_f64_to_bf16(1e300), 0x7f80);
	cr_assert_eq(cpu_f64_to_f16(NAN) & 0x7c00, 0x7c00);
	cr_assert_neq(cpu_f64_to_f16(NAN) & 0x03ff, 0);
}

/* -------------------------------------------------------------- arithmetic */

Test(ops_dtypes, integer_arithmetic_wraps_at_the_width_of_each_type)
{
	/* a op b per type, the results as uint64 bits of the type's width. */
	static const struct {
		cep_dtype t;
		const char *op;
		uint64_t a[3], b[3], want[3];
	} cases[] = {
		{ CEP_DTYPE_UINT16, "Add", { 65535, 1, 40000 }, { 1, 2, 40000 }, { 0, 3, 14464 } },
		{ CEP_DTYPE_UINT16, "Sub", { 0, 5, 1 }, { 1, 3, 2 }, { 65535, 2, 65535 } },
		{ CEP_DTYPE_UINT16, "Mul", { 300, 256, 7 }, { 300, 256, 9 }, { 24464, 0, 63 } },
		{ CEP_DTYPE_UINT16, "Div", { 65535, 7, 9 }, { 2, 0, 10 }, { 32767, 0, 0 } },
		{ CEP_DTYPE_INT16, "Add", { 32767, (uint16_t)-5, 7 }, { 1, 3, (uint16_t)-9 },
		  { 32768, (uint16_t)-2, (uint16_t)-2 } },
		{ CEP_DTYPE_INT16, "Div", { (uint16_t)-7, 32768, 5 }, { 2, (uint16_t)-1, 0 },
		  { (uint16_t)-3, 32768, 0 } },
		{ CEP_DTYPE_UINT32, "Add", { 4294967295u, 1, 3000000000u }, { 1, 1, 3000000000u },
		  { 0, 2, 1705032704u } },
		{ CEP_DTYPE_UINT32, "Mul", { 65536, 4294967295u, 3 }, { 65536, 4294967295u, 5 },
		  { 0, 1, 15 } },
		{ CEP_DTYPE_UINT32, "Div", { 4294967295u, 10, 1 }, { 2, 3, 0 }, { 2147483647u, 3, 0 } },
		{ CEP_DTYPE_UINT64, "Add", { UINT64_MAX, 1, 1ull << 63 }, { 1, 1, 1ull << 63 },
		  { 0, 2, 0 } },
		{ CEP_DTYPE_UINT64, "Sub", { 0, 10, 1ull << 63 }, { 1, 3, 1 },
		  { UINT64_MAX, 7, (1ull << 63) - 1 } },
		{ CEP_DTYPE_UINT64, "Mul", { 1ull << 32, UINT64_MAX, 3 }, { 1ull << 32, 2, 5 },
		  { 0, UINT64_MAX - 1, 15 } },
		/* Unsigned: int64 division would give 0 and 0 for the first two. */
		{ CEP_DTYPE_UINT64, "Div", { UINT64_MAX, UINT64_MAX, 1ull << 63 },
		  { 3, (uint64_t)-1 / 2, 0 }, { 6148914691236517205ull, 2, 0 } },
	};
	size_t k;
	int j;

	for (k = 0; k < N_OF(cases); k++) {
		cep_dtype t = cases[k].t;
		unsigned char a[24], b[24];
		struct op_tensor in[2], out;

		for (j = 0; j < 3; j++) {
			cpu_store_i(a, t, j, (int64_t)cases[k].a[j]);
			cpu_store_i(b, t, j, (int64_t)cases[k].b[j]);
		}
		in[0] = oh_tensor(t, 1, d3, a);
		in[1] = oh_tensor(t, 1, d3, b);
		run_ok(cases[k].op, 14, NULL, 0, in, 2, &out);
		cr_assert_eq(out.dtype, t);
		for (j = 0; j < 3; j++) {
			uint64_t got = (uint64_t)cpu_load_i(out.data, t, j);
			uint64_t mask = cep_dtype_size(t) == 8 ? UINT64_MAX
							     : (UINT64_C(1) << (8 * cep_dtype_size(t))) - 1;

			cr_assert_eq(got & mask, cases[k].want[j] & mask, "%s %s [%d]: %llu",
				     cep_dtype_name(t), cases[k].op, j, (unsigned long long)got);
		}
		free(out.data);
	}
}

/* Values a float32 computation cannot give: the float64 results are
 * C's double operations themselves. */
Test(ops_dtypes, float64_is_computed_in_double)
{
	double a[3] = { 1.0, 0.1, 1e300 }, b[3] = { 1e-10, 0.2, 1e300 };
	double m[4] = { 1.0 / 3.0, 2.0, 0.1, 0.7 }, *o;
	static const int64_t d22[2] = { 2, 2 };
	struct op_tensor in[2], out;
	const double *r;

	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d3, a);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d3, b);
	run_ok("Add", 14, NULL, 0, in, 2, &out);
	r = out.data;
	cr_assert(r[0] == 1.0 + 1e-10 && r[1] == 0.1 + 0.2 && r[2] == 2e300);
	free(out.data);
	run_ok("Mul", 14, NULL, 0, in, 2, &out);
	r = out.data;
	cr_assert(r[0] == 1e-10 && r[1] == 0.1 * 0.2 && isinf(r[2]));
	free(out.data);
	run_ok("Sqrt", 13, NULL, 0, in + 1, 1, &out);
	cr_assert_eq(((double *)out.data)[0], sqrt(1e-10));
	free(out.data);
	run_ok("Exp", 13, NULL, 0, in + 1, 1, &out);
	cr_assert_eq(((double *)out.data)[1], exp(0.2));
	free(out.data);
	run_ok("Sin", 22, NULL, 0, in + 1, 1, &out);
	cr_assert_eq(((double *)out.data)[1], sin(0.2));
	free(out.data);
	/* 2 x 2 products. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 2, d22, m);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 2, d22, m);
	run_ok("MatMul", 13, NULL, 0, in, 2, &out);
	o = out.data;
	cr_assert_eq(o[0], m[0] * m[0] + m[1] * m[2]);
	cr_assert_eq(o[3], m[2] * m[1] + m[3] * m[3]);
	free(out.data);
}

Test(ops_dtypes, bit_shifts_of_unsigned_values_are_logical)
{
	uint64_t u64[3] = { UINT64_C(1) << 63, UINT64_MAX, 12 }, s64[3] = { 1, 63, 64 };
	uint16_t u16[2] = { 0x8001, 0xffff }, s16[2] = { 1, 16 };
	int16_t i16[2] = { INT16_MIN, -1 }, t16[2] = { 1, 3 };
	struct op_attr right = oh_string("direction", "RIGHT"), left = oh_string("direction",
										   "LEFT");
	struct op_tensor in[2], out;

	in[0] = oh_tensor(CEP_DTYPE_UINT64, 1, d3, u64);
	in[1] = oh_tensor(CEP_DTYPE_UINT64, 1, d3, s64);
	run_ok("BitShift", 11, &right, 1, in, 2, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], UINT64_C(1) << 62, "no sign fill");
	cr_assert_eq(((uint64_t *)out.data)[1], 1);
	cr_assert_eq(((uint64_t *)out.data)[2], 0, "a shift by the width gives 0");
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_UINT16, 1, d2, u16);
	in[1] = oh_tensor(CEP_DTYPE_UINT16, 1, d2, s16);
	run_ok("BitShift", 11, &left, 1, in, 2, &out);
	cr_assert(((uint16_t *)out.data)[0] == 0x0002 && ((uint16_t *)out.data)[1] == 0);
	free(out.data);
	/* Opset 28's signed shifts are arithmetic. */
	in[0] = oh_tensor(CEP_DTYPE_INT16, 1, d2, i16);
	in[1] = oh_tensor(CEP_DTYPE_INT16, 1, d2, t16);
	run_ok("BitShift", 28, &right, 1, in, 2, &out);
	cr_assert(((int16_t *)out.data)[0] == -16384 && ((int16_t *)out.data)[1] == -1);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_UINT64, 1, d3, u64);
	run_ok("BitwiseNot", 18, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], (UINT64_C(1) << 63) - 1);
	cr_assert_eq(((uint64_t *)out.data)[1], 0);
	free(out.data);
}

Test(ops_dtypes, abs_clip_and_mod_of_unsigned_values)
{
	uint64_t u[3] = { (UINT64_C(1) << 63) + 1, 5, UINT64_MAX };
	uint64_t lo = 6, hi = (UINT64_C(1) << 63) + 2, by[3] = { 10, 3, UINT64_C(1) << 63 };
	int16_t i[2] = { INT16_MIN, -7 };
	struct op_tensor in[3], out;

	in[0] = oh_tensor(CEP_DTYPE_UINT64, 1, d3, u);
	run_ok("Abs", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(memcmp(out.data, u, sizeof(u)), 0, "an unsigned value is its own abs");
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_UINT64, 0, NULL, &lo);
	in[2] = oh_tensor(CEP_DTYPE_UINT64, 0, NULL, &hi);
	run_ok("Clip", 13, NULL, 0, in, 3, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], (UINT64_C(1) << 63) + 1);
	cr_assert_eq(((uint64_t *)out.data)[1], 6);
	cr_assert_eq(((uint64_t *)out.data)[2], hi);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_UINT64, 1, d3, by);
	run_ok("Mod", 13, NULL, 0, in, 2, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], ((UINT64_C(1) << 63) + 1) % 10);
	cr_assert_eq(((uint64_t *)out.data)[1], 2);
	cr_assert_eq(((uint64_t *)out.data)[2], (UINT64_C(1) << 63) - 1);
	free(out.data);
	/* Neg and Abs of the most negative int16 wrap to itself (numpy). */
	in[0] = oh_tensor(CEP_DTYPE_INT16, 1, d2, i);
	run_ok("Neg", 13, NULL, 0, in, 1, &out);
	cr_assert(((int16_t *)out.data)[0] == INT16_MIN && ((int16_t *)out.data)[1] == 7);
	free(out.data);
	run_ok("Abs", 13, NULL, 0, in, 1, &out);
	cr_assert(((int16_t *)out.data)[0] == INT16_MIN && ((int16_t *)out.data)[1] == 7);
	free(out.data);
}

/* ----------------------------------------------------- order and reductions */

Test(ops_dtypes, uint64_past_2_63_compares_and_orders_as_unsigned)
{
	uint64_t big = (UINT64_C(1) << 63) + 5, a[4] = { 1, big, 7, big - 10 };
	uint64_t b[4] = { big, 1, 7, big };
	double x[2] = { 1.0, 1.0 + 0x1p-40 }, y[2] = { 1.0 + 0x1p-40, 1.0 };
	struct op_attr k_axis = oh_int("axis", 0);
	int64_t k2 = 2, want_idx[2] = { 1, 3 };
	struct op_tensor in[2], out, outs[2];
	const uint8_t *o;
	const uint64_t *u;

	in[0] = oh_tensor(CEP_DTYPE_UINT64, 1, d4, a);
	in[1] = oh_tensor(CEP_DTYPE_UINT64, 1, d4, b);
	run_ok("Less", 13, NULL, 0, in, 2, &out);
	o = out.data;
	cr_assert(o[0] == 1 && o[1] == 0 && o[2] == 0 && o[3] == 1);
	free(out.data);
	run_ok("GreaterOrEqual", 16, NULL, 0, in, 2, &out);
	o = out.data;
	cr_assert(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 0);
	free(out.data);
	run_ok("Max", 13, NULL, 0, in, 2, &out);
	u = out.data;
	cr_assert(u[0] == big && u[1] == big && u[2] == 7 && u[3] == big);
	free(out.data);
	run_ok("ReduceMax", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], big);
	free(out.data);
	run_ok("ReduceMin", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], 1);
	free(out.data);
	run_ok("ArgMax", 13, &k_axis, 1, in, 1, &out);
	cr_assert_eq(((int64_t *)out.data)[0], 1);
	free(out.data);
	/* TopK: the two largest, their indices. */
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, d1, &k2);
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, outs, 2), 0, "%s", cep_last_error());
	u = outs[0].data;
	cr_assert(u[0] == big && u[1] == big - 10);
	cr_assert_eq(memcmp(outs[1].data, want_idx, sizeof(want_idx)), 0);
	free(outs[0].data);
	free(outs[1].data);
	/* float64 values that float32 would make equal. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d2, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d2, y);
	run_ok("Less", 13, NULL, 0, in, 2, &out);
	cr_assert(((uint8_t *)out.data)[0] == 1 && ((uint8_t *)out.data)[1] == 0);
	free(out.data);
	run_ok("Equal", 13, NULL, 0, in, 2, &out);
	cr_assert(((uint8_t *)out.data)[0] == 0 && ((uint8_t *)out.data)[1] == 0);
	free(out.data);
	run_ok("ArgMax", 13, &k_axis, 1, in, 1, &out);
	cr_assert_eq(((int64_t *)out.data)[0], 1);
	free(out.data);
}

Test(ops_dtypes, reductions_and_scans_of_the_new_types)
{
	uint32_t u32[3] = { 4294967295u, 1, 5 };
	uint64_t u64[2] = { UINT64_MAX, 3 };
	double f[3] = { 1.0, 1e-10, 2e-10 };
	int64_t axis = 0;
	struct op_tensor in[2], out;
	const uint32_t *o32;

	in[0] = oh_tensor(CEP_DTYPE_UINT32, 1, d3, u32);
	run_ok("ReduceSum", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint32_t *)out.data)[0], 5, "4294967295 + 1 + 5 wraps to 5");
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 0, NULL, &axis);
	run_ok("CumSum", 14, NULL, 0, in, 2, &out);
	o32 = out.data;
	cr_assert(o32[0] == 4294967295u && o32[1] == 0 && o32[2] == 5);
	free(out.data);
	/* uint64's mean divides unsigned: (2^64 - 1 + 3) wraps to 2, / 2. */
	in[0] = oh_tensor(CEP_DTYPE_UINT64, 1, d2, u64);
	run_ok("ReduceMean", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], 1);
	free(out.data);
	run_ok("ReduceL1", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[0], 2, "no value of uint64 is negative");
	free(out.data);
	/* float64 sums keep what float32 would drop. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d3, f);
	run_ok("ReduceSum", 13, NULL, 0, in, 1, &out);
	cr_assert_eq(((double *)out.data)[0], (1.0 + 1e-10) + 2e-10);
	free(out.data);
	run_ok("ReduceLogSumExp", 18, NULL, 0, in, 1, &out);
	cr_assert_float_eq(((double *)out.data)[0],
			   log(exp(1.0 - 1.0) + exp(1e-10 - 1.0) + exp(2e-10 - 1.0)) + 1.0, 1e-15);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 0, NULL, &axis);
	run_ok("CumSum", 14, NULL, 0, in, 2, &out);
	cr_assert_eq(((double *)out.data)[1], 1.0 + 1e-10);
	free(out.data);
}

/* ------------------------------------------------------------------- Cast */

/* Every pair of stored types on values each of them holds exactly. */
Test(ops_dtypes, cast_between_every_pair_keeps_values_both_types_hold)
{
	static const double vals[4] = { 0.0, 1.0, 2.0, 100.0 };
	size_t f, t;
	int j;

	for (f = 0; f < N_OF(all_types); f++) {
		for (t = 0; t < N_OF(all_types); t++) {
			cep_dtype from = all_types[f], to = all_types[t];
			struct op_attr a = oh_int("to", to);
			int n = from == CEP_DTYPE_BOOL || to == CEP_DTYPE_BOOL ? 2 : 4;
			unsigned char src[32];
			int64_t dims[1] = { n };
			struct op_tensor in, out;

			for (j = 0; j < n; j++)
				cpu_store_d(src, from, j, vals[j]);
			in = oh_tensor(from, 1, dims, src);
			run_ok("Cast", 13, &a, 1, &in, 1, &out);
			cr_assert_eq(out.dtype, to);
			for (j = 0; j < n; j++)
				cr_assert_eq(cpu_load_d(out.data, to, j), vals[j], "%s to %s [%d]",
					     cep_dtype_name(from), cep_dtype_name(to), j);
			free(out.data);
		}
	}
}

/* The edges, each as numpy 2.4 casts it (astype). */
Test(ops_dtypes, cast_edges_are_numpy_s)
{
	double f[5] = { -2.7, 65535.9, 1e10, 9223372036854777856.0, 0.1 };
	uint64_t u[2] = { UINT64_MAX, (UINT64_C(1) << 53) + 1 };
	int64_t i[1] = { (INT64_C(1) << 54) + (INT64_C(1) << 30) + 1 };
	struct op_attr to;
	struct op_tensor in, out;
	int64_t d5[1] = { 5 };

	in = oh_tensor(CEP_DTYPE_FLOAT64, 1, d5, f);
	to = oh_int("to", CEP_DTYPE_INT16);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((int16_t *)out.data)[0], -2, "toward zero");
	free(out.data);
	to = oh_int("to", CEP_DTYPE_UINT16);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((uint16_t *)out.data)[1], 65535);
	free(out.data);
	to = oh_int("to", CEP_DTYPE_INT64);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((int64_t *)out.data)[2], INT64_C(10000000000));
	free(out.data);
	to = oh_int("to", CEP_DTYPE_UINT64);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((uint64_t *)out.data)[3], UINT64_C(9223372036854777856), "past 2^63");
	free(out.data);
	to = oh_int("to", CEP_DTYPE_FLOAT32);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((float *)out.data)[4], 0.1f);
	free(out.data);
	/* uint64 to floats: unsigned, rounded once from the integer. */
	in = oh_tensor(CEP_DTYPE_UINT64, 1, d2, u);
	to = oh_int("to", CEP_DTYPE_FLOAT64);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((double *)out.data)[0], 18446744073709551616.0);
	free(out.data);
	to = oh_int("to", CEP_DTYPE_FLOAT32);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((float *)out.data)[0], 18446744073709551616.0f);
	cr_assert_eq(((float *)out.data)[1], 9007199254740992.0f);
	free(out.data);
	to = oh_int("to", CEP_DTYPE_INT8);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert(((int8_t *)out.data)[0] == -1 && ((int8_t *)out.data)[1] == 1, "wraps");
	free(out.data);
	/* int64 2^54 + 2^30 + 1 is just above a float32 midpoint: rounded
	 * once it goes up to 2^54 + 2^31 (numpy); through double the 1 is
	 * lost first and the tie goes to even, 2^54. */
	in = oh_tensor(CEP_DTYPE_INT64, 1, d1, i);
	to = oh_int("to", CEP_DTYPE_FLOAT32);
	run_ok("Cast", 13, &to, 1, &in, 1, &out);
	cr_assert_eq(((float *)out.data)[0], 0x1p54f + 0x1p31f);
	free(out.data);
}

/* ---------------------------------------------------------- type sets */

Test(ops_dtypes, each_opset_takes_the_types_of_its_definition)
{
	int16_t i16[2] = { -3, 4 };
	double f64[2] = { 0.5, -1.5 };
	int64_t dw[4] = { 1, 1, 1, 1 };
	struct op_tensor in[2], out;

	in[0] = oh_tensor(CEP_DTYPE_INT16, 1, d2, i16);
	in[1] = oh_tensor(CEP_DTYPE_INT16, 1, d2, i16);
	/* int16 joined Add at 14 and Relu at 14. */
	cr_assert_eq(oh_run("Add", 13, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Add: dtype int16 is not supported on the host backend "
					   "(supported: float32, float16, bfloat16, float64, int64, "
					   "int32, int8, uint64, uint32, uint8)");
	run_ok("Add", 14, NULL, 0, in, 2, &out);
	free(out.data);
	cr_assert_eq(oh_run("Relu", 13, NULL, 0, in, 1, &out, 1), CEP_EUNSUPPORTED);
	run_ok("Relu", 14, NULL, 0, in, 1, &out);
	cr_assert(((int16_t *)out.data)[0] == 0 && ((int16_t *)out.data)[1] == 4);
	free(out.data);
	/* A kernel that computes in float32 refuses float64, naming its types. */
	in[0] = (struct op_tensor){ .data = f64, .dtype = CEP_DTYPE_FLOAT64, .rank = 4,
				    .dims = { 1, 1, 1, 2 } };
	in[1] = oh_tensor(CEP_DTYPE_FLOAT64, 4, dw, f64);
	cr_assert_eq(oh_run("Conv", 22, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Conv: dtype float64 is not supported on the host "
					   "backend (supported: float32, float16, bfloat16)");
	/* Neg takes no unsigned type. */
	in[0] = oh_tensor(CEP_DTYPE_UINT32, 1, d2, i16);
	cr_assert_eq(oh_run("Neg", 13, NULL, 0, in, 1, &out, 1), CEP_EUNSUPPORTED);
}

/* ------------------------------------------------------- through a model */

struct fixture {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static void fixture_open(struct fixture *f, struct onnxb *b)
{
	uint8_t *buf;
	size_t len;

	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &f->m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &f->be), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(f->m, f->be, NULL, &f->s), 0, "%s", cep_last_error());
}

static void fixture_close(struct fixture *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/* Drops the raw_data onnxb_init() wrote, leaving the typed field to fill. */
static void raw_drop(Onnx__TensorProto *t)
{
	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
}

/*
 * Initializers in ONNX's typed fields (double_data for float64,
 * uint64_data for uint32 and uint64, int32_data for int16 and uint16)
 * and in raw_data, each added to an input of its type: y_T = x_T + w_T.
 */
Test(ops_dtypes, initializers_load_from_every_typed_field)
{
	static const struct {
		const char *x, *y, *w;
		cep_dtype t;
	} io[5] = {
		{ "xd", "yd", "wd", CEP_DTYPE_FLOAT64 }, { "xs", "ys", "ws", CEP_DTYPE_INT16 },
		{ "xh", "yh", "wh", CEP_DTYPE_UINT16 }, { "xw", "yw", "ww", CEP_DTYPE_UINT32 },
		{ "xq", "yq", "wq", CEP_DTYPE_UINT64 },
	};
	struct onnxb *b = onnxb_new(14);
	struct engine_input in[5];
	struct engine_output out[5];
	unsigned char xv[5][16], yv[5][16];
	Onnx__TensorProto *w[5];
	struct fixture f;
	char inputs[16];
	int k;

	for (k = 0; k < 5; k++) {
		onnxb_input(b, io[k].x, io[k].t, "2");
		onnxb_output(b, io[k].y, io[k].t, "2");
		w[k] = onnxb_init(b, io[k].w, io[k].t, "2", NULL);
		snprintf(inputs, sizeof(inputs), "%s,%s", io[k].x, io[k].w);
		onnxb_node(b, "Add", inputs, io[k].y);
	}
	/* w: 0.25 and -1e-300 as doubles; -300 and 32767; 65535 and 7;
	 * 4294967295 and 1; 2^64 - 1 and 2^63, each as its field holds it. */
	raw_drop(w[0]);
	w[0]->n_double_data = 2;
	w[0]->double_data = malloc(2 * sizeof(double));
	w[0]->double_data[0] = 0.25;
	w[0]->double_data[1] = -1e-300;
	raw_drop(w[1]);
	w[1]->n_int32_data = 2;
	w[1]->int32_data = malloc(2 * sizeof(int32_t));
	w[1]->int32_data[0] = -300;
	w[1]->int32_data[1] = 32767;
	raw_drop(w[2]);
	w[2]->n_int32_data = 2;
	w[2]->int32_data = malloc(2 * sizeof(int32_t));
	w[2]->int32_data[0] = 65535;
	w[2]->int32_data[1] = 7;
	raw_drop(w[3]);
	w[3]->n_uint64_data = 2;
	w[3]->uint64_data = malloc(2 * sizeof(uint64_t));
	w[3]->uint64_data[0] = 4294967295u;
	w[3]->uint64_data[1] = 1;
	/* uint64 stays in raw_data. */
	memcpy(w[4]->raw_data.data, (uint64_t[]){ UINT64_MAX, UINT64_C(1) << 63 }, 16);
	fixture_open(&f, b);
	memset(xv, 0, sizeof(xv));
	((double *)xv[0])[0] = 1.0;
	((int16_t *)xv[1])[1] = 1;
	((uint16_t *)xv[2])[0] = 1;
	((uint32_t *)xv[3])[0] = 1;
	((uint64_t *)xv[4])[0] = 1;
	((uint64_t *)xv[4])[1] = UINT64_C(1) << 63;
	for (k = 0; k < 5; k++) {
		in[k] = (struct engine_input){ io[k].x, io[k].t, 1, d2, xv[k],
					       2 * cep_dtype_size(io[k].t) };
		out[k] = (struct engine_output){ .name = io[k].y, .data = yv[k],
						 .capacity = sizeof(yv[k]) };
	}
	cr_assert_eq(eu_run(f.s, in, 5, out, 5), 0, "%s", cep_last_error());
	for (k = 0; k < 5; k++)
		cr_assert_eq(out[k].dtype, io[k].t);
	cr_assert(((double *)yv[0])[0] == 1.25 && ((double *)yv[0])[1] == -1e-300);
	cr_assert(((int16_t *)yv[1])[0] == -300 && ((int16_t *)yv[1])[1] == INT16_MIN, "wraps");
	cr_assert(((uint16_t *)yv[2])[0] == 0 && ((uint16_t *)yv[2])[1] == 7);
	cr_assert(((uint32_t *)yv[3])[0] == 0 && ((uint32_t *)yv[3])[1] == 1);
	/* 1 + (2^64 - 1) and 2^63 + 2^63 both wrap to 0. */
	cr_assert(((uint64_t *)yv[4])[0] == 0 && ((uint64_t *)yv[4])[1] == 0);
	fixture_close(&f);
}

/* A float64 graph runs in double end to end: Cast in, arithmetic,
 * a reduction and a Cast out. */
Test(ops_dtypes, a_float64_model_runs_in_double)
{
	struct onnxb *b = onnxb_new(17);
	float x[3] = { 1.0f, 2.0f, 4.0f };
	double third = 1.0 / 3.0, y[1];
	float z[1];
	struct fixture f;
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT64, "");
	onnxb_output(b, "z", CEP_DTYPE_FLOAT32, "");
	onnxb_init(b, "third", CEP_DTYPE_FLOAT64, "", &third);
	n = onnxb_node(b, "Cast", "x", "xd");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT64);
	onnxb_node(b, "Mul", "xd,third", "m");
	n = onnxb_node(b, "ReduceSum", "m", "y");
	onnxb_attr_int(n, "keepdims", 0);
	n = onnxb_node(b, "Cast", "y", "z");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT32);
	fixture_open(&f, b);
	{
		struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, d3, x, sizeof(x) };
		struct engine_output out[2] = { { .name = "y", .data = y, .capacity = sizeof(y) },
						{ .name = "z", .data = z, .capacity = sizeof(z) } };

		cr_assert_eq(eu_run(f.s, &in, 1, out, 2), 0, "%s", cep_last_error());
		cr_assert_eq(out[0].dtype, CEP_DTYPE_FLOAT64);
		cr_assert_eq(y[0], (1.0 * third + 2.0 * third) + 4.0 * third);
		cr_assert_eq(z[0], (float)y[0]);
	}
	fixture_close(&f);
}

/* ------------------------------------------------------------------ float8 */

static const cep_dtype f8_types[4] = {
	CEP_DTYPE_FLOAT8E4M3FN, CEP_DTYPE_FLOAT8E4M3FNUZ, CEP_DTYPE_FLOAT8E5M2,
	CEP_DTYPE_FLOAT8E5M2FNUZ,
};

/*
 * float32 to each float8 type by Cast-19, with saturate 1 and 0, against
 * ml_dtypes (0.5): its astype() is the unsaturated conversion, and the
 * saturated one is astype() of the value clipped to the type's largest
 * (NaN kept). The values: 0, -0, 1, 0.3, 448, 449, 500, 1e10, inf, -inf,
 * NaN, 1e-9, 0.001, -57344, 61440.
 */
Test(ops_dtypes, cast_to_float8_saturates_as_onnx_says)
{
	static const float x[15] = { 0.0f, -0.0f, 1.0f, 0.3f, 448.0f, 449.0f, 500.0f, 1e10f,
				     INFINITY, -INFINITY, NAN, 1e-9f, 0.001f, -57344.0f, 61440.0f };
	static const uint8_t want[4][2][15] = {
		{ { 0x00, 0x80, 0x38, 0x2a, 0x7e, 0x7e, 0x7f, 0x7f, 0x7f, 0xff, 0x7f, 0x00, 0x01,
		    0xff, 0x7f },
		  { 0x00, 0x80, 0x38, 0x2a, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x00, 0x01,
		    0xfe, 0x7e } },
		{ { 0x00, 0x00, 0x40, 0x32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01,
		    0x80, 0x80 },
		  { 0x00, 0x00, 0x40, 0x32, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff, 0x80, 0x00, 0x01,
		    0xff, 0x7f } },
		{ { 0x00, 0x80, 0x3c, 0x35, 0x5f, 0x5f, 0x60, 0x7c, 0x7c, 0xfc, 0x7e, 0x00, 0x14,
		    0xfb, 0x7c },
		  { 0x00, 0x80, 0x3c, 0x35, 0x5f, 0x5f, 0x60, 0x7b, 0x7b, 0xfb, 0x7e, 0x00, 0x14,
		    0xfb, 0x7b } },
		{ { 0x00, 0x00, 0x40, 0x39, 0x63, 0x63, 0x64, 0x80, 0x80, 0x80, 0x80, 0x00, 0x18,
		    0xff, 0x80 },
		  { 0x00, 0x00, 0x40, 0x39, 0x63, 0x63, 0x64, 0x7f, 0x7f, 0xff, 0x80, 0x00, 0x18,
		    0xff, 0x7f } },
	};
	static const int64_t d15[1] = { 15 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d15, (void *)x), out;
	int t, sat, j;

	for (t = 0; t < 4; t++) {
		for (sat = 0; sat < 2; sat++) {
			struct op_attr a[2] = { oh_int("to", f8_types[t]), oh_int("saturate", sat) };

			run_ok("Cast", 19, a, 2, &in, 1, &out);
			cr_assert_eq(out.dtype, f8_types[t]);
			for (j = 0; j < 15; j++)
				cr_assert_eq(((uint8_t *)out.data)[j], want[t][sat][j],
					     "%s saturate %d, %g: got %#x, want %#x",
					     cep_dtype_name(f8_types[t]), sat, (double)x[j],
					     ((uint8_t *)out.data)[j], want[t][sat][j]);
			free(out.data);
		}
	}
}

/* Every code of each float8 type to float32 and back (saturate=0, which
 * keeps e5m2's infinities) is itself; a NaN stays NaN. */
Test(ops_dtypes, every_float8_code_round_trips_through_float32)
{
	static const int64_t d256[1] = { 256 };
	uint8_t codes[256];
	struct op_tensor in, mid, back;
	int t, c;

	for (c = 0; c < 256; c++)
		codes[c] = (uint8_t)c;
	for (t = 0; t < 4; t++) {
		struct op_attr to32 = oh_int("to", CEP_DTYPE_FLOAT32);
		struct op_attr to8[2] = { oh_int("to", f8_types[t]), oh_int("saturate", 0) };

		in = oh_tensor(f8_types[t], 1, d256, codes);
		run_ok("Cast", 19, &to32, 1, &in, 1, &mid);
		run_ok("Cast", 19, to8, 2, &mid, 1, &back);
		for (c = 0; c < 256; c++) {
			float f = ((float *)mid.data)[c];
			uint8_t b = ((uint8_t *)back.data)[c];

			if (f != f)
				cr_assert_eq(cpu_load_d(&b, f8_types[t], 0) != cpu_load_d(&b, f8_types[t], 0),
					     1, "%s %#x: NaN stays NaN", cep_dtype_name(f8_types[t]), c);
			else
				cr_assert_eq(b, c, "%s %#x is %g, back %#x", cep_dtype_name(f8_types[t]),
					     c, (double)f, b);
		}
		free(mid.data);
		free(back.data);
	}
	/* Some values: e4m3fn's largest, e5m2's infinity, the smallest
	 * subnormals. */
	cr_assert_eq(cpu_load_d((uint8_t[]){ 0x7e }, CEP_DTYPE_FLOAT8E4M3FN, 0), 448.0);
	cr_assert_eq(cpu_load_d((uint8_t[]){ 0x7c }, CEP_DTYPE_FLOAT8E5M2, 0), INFINITY);
	cr_assert_eq(cpu_load_d((uint8_t[]){ 0x01 }, CEP_DTYPE_FLOAT8E4M3FN, 0), 0x1p-9);
	cr_assert_eq(cpu_load_d((uint8_t[]){ 0x01 }, CEP_DTYPE_FLOAT8E5M2FNUZ, 0), 0x1p-17);
}

/* float64 rounds once to float8: 1 + 2^-4 + 2^-40 is above e4m3fn's
 * midpoint of 1 and 1.125 and goes up (0x39); through float32 it would be
 * the midpoint and go to even, 1 (0x38). Integers convert too; float8 is
 * no type of Cast or CastLike before opset 19. */
Test(ops_dtypes, float8_from_float64_and_integers_and_by_opset)
{
	double d[1] = { 1.0 + 0x1p-4 + 0x1p-40 };
	int32_t i[3] = { 3, -500, 100000 };
	uint8_t like[1] = { 0 };
	struct op_attr to8 = oh_int("to", CEP_DTYPE_FLOAT8E4M3FN);
	struct op_tensor in[2], out;

	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 1, d1, d);
	run_ok("Cast", 19, &to8, 1, in, 1, &out);
	cr_assert_eq(((uint8_t *)out.data)[0], 0x39);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT32, 1, d3, i);
	run_ok("Cast", 21, &to8, 1, in, 1, &out);
	cr_assert(((uint8_t *)out.data)[0] == 0x44 && ((uint8_t *)out.data)[1] == 0xfe &&
		  ((uint8_t *)out.data)[2] == 0x7e, "3, -448 and 448 (saturated)");
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT8E5M2, 1, d1, like);
	run_ok("CastLike", 19, NULL, 0, in, 2, &out);
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT8E5M2);
	cr_assert_eq(((uint8_t *)out.data)[0], 0x42, "3 in float8e5m2");
	free(out.data);
	cr_assert_eq(oh_infer("Cast", 18, &to8, 1, in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Cast (opset 18): float8e4m3fn is not a type of this opset");
	cr_assert_eq(oh_infer("CastLike", 18, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	/* Other operators do not take float8. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT8E4M3FN, 1, d1, like);
	in[1] = in[0];
	cr_assert_eq(oh_run("Add", 14, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
}
