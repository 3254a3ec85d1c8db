/*
 * test_ops_hardmax.c — Hardmax of kernels/cpu/hardmax.c, called the way
 * the engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the conformance example by hand, both axis rules (the
 * input flattened into a matrix at `axis` before opset 13, one dimension
 * from 13, and the defaults 1 and -1) against a reference written here,
 * the first of equal maxima, NaN winning, the types each opset takes,
 * scalars and empty rows, the errors, and inference with symbols.
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

/* The conformance case test_hardmax_example: a 4 x 4 matrix whose last
 * row has two equal maxima. */
Test(ops_hardmax, the_conformance_example_by_hand)
{
	float x[16] = { 3, 0, 1, 2, 2, 5, 1, 0, 0, 1, 3, 2, 0, 1, 2, 3 };
	static const float want[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 4), x), out;
	int i;

	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 16; i++)
		cr_assert_eq(((float *)out.data)[i], want[i], "element %d", i);
	free(out.data);
	/* Two equal maxima: the first wins. */
	x[14] = 3;
	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[14], 1.0f);
	cr_assert_eq(((float *)out.data)[15], 0.0f);
	free(out.data);
}

/* The reference: the blocks (outer, n, inner) of each rule, 1 at the first
 * maximum of each block's n elements. */
static void ref_hardmax(const float *x, const int64_t *dims, int rank, int axis, bool flat,
			float *y)
{
	int64_t outer = 1, n = 1, inner = 1, o, j, k;
	int d;

	for (d = 0; d < rank; d++) {
		if (d < axis)
			outer *= dims[d];
		else if (d == axis || flat)
			n *= dims[d];
		else
			inner *= dims[d];
	}
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			int64_t best = 0;

			for (k = 1; k < n; k++)
				if (x[(o * n + k) * inner + j] > x[(o * n + best) * inner + j])
					best = k;
			for (k = 0; k < n; k++)
				y[(o * n + k) * inner + j] = k == best;
		}
	}
}

/* Every axis of a [2, 3, 4] input under both rules and every type of each. */
Test(ops_hardmax, both_axis_rules_match_the_reference)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	static const int opsets[] = { 1, 11, 13 };
	const int64_t dims[3] = { 2, 3, 4 };
	float x[24], want[24];
	unsigned char xbuf[24 * 4];
	int o, t, a, e;

	for (e = 0; e < 24; e++)
		x[e] = (float)((e * 7) % 5) - 2.0f; /* ties in plenty */
	for (o = 0; o < 3; o++) {
		for (t = 0; t < 3; t++) {
			if (types[t] == CEP_DTYPE_BFLOAT16 && opsets[o] < 13)
				continue;
			for (e = 0; e < 24; e++)
				cpu_store_f(xbuf, types[t], e, x[e]);
			/* 99: no attribute, the default of the opset. */
			for (a = -3; a <= 3; a++) {
				int64_t av = a == 3 ? 99 : a;
				struct op_attr at = oh_int("axis", av);
				struct op_tensor in = oh_tensor(types[t], 3, dims, xbuf), out;
				int axis = av == 99 ? (opsets[o] < 13 ? 1 : 2) : a < 0 ? a + 3 : a;

				cr_assert_eq(oh_run("Hardmax", opsets[o], &at, av == 99 ? 0 : 1, &in, 1,
						    &out, 1), 0, "%s", cep_last_error());
				ref_hardmax(x, dims, 3, axis, opsets[o] < 13, want);
				for (e = 0; e < 24; e++)
					cr_assert_eq(cpu_load_f(out.data, types[t], e), want[e],
						     "opset %d %s axis %lld element %d", opsets[o],
						     cep_dtype_name(types[t]), (long long)av, e);
				free(out.data);
			}
		}
	}
}

/* A NaN beats everything, the first NaN of a row most of all; infinities
 * are ordinary maxima. */
Test(ops_hardmax, nan_wins)
{
	float x[8] = { 1, NAN, 7, NAN, -INFINITY, -INFINITY, -INFINITY, INFINITY };
	static const float want[8] = { 0, 1, 0, 0, 0, 0, 0, 1 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 4), x), out;
	int i;

	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 8; i++)
		cr_assert_eq(((float *)out.data)[i], want[i], "element %d", i);
	free(out.data);
	/* A row of -inf alone: its first element. */
	x[7] = -INFINITY;
	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[4], 1.0f);
	cr_assert_eq(((float *)out.data)[7], 0.0f);
	free(out.data);
}

Test(ops_hardmax, scalars_and_empty_rows)
{
	float x[1] = { -3 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, x), out;

	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 1.0f);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 0), x);
	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 0);
	free(out.data);
}

Test(ops_hardmax, types_and_axes_are_checked)
{
	uint16_t bf[2] = { 0x3f80, 0x4000 };
	int32_t i32[2] = { 1, 2 };
	struct op_attr at = oh_int("axis", 2);
	struct op_tensor in = oh_tensor(CEP_DTYPE_BFLOAT16, 2, DIMS(1, 2), bf), out;

	cr_assert_eq(oh_run("Hardmax", 12, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "Hardmax: dtype bfloat16 is not supported") != NULL,
		  "%s", cep_last_error());
	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[1], 0x3f80);
	cr_assert_eq(((uint16_t *)out.data)[0], 0);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), i32);
	cr_assert_eq(oh_run("Hardmax", 13, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(1, 2), i32);
	cr_assert_eq(oh_run("Hardmax", 13, &at, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "Hardmax") != NULL, "%s", cep_last_error());
	cr_assert_eq(oh_run("Hardmax", 11, &at, 1, &in, 1, &out, 1), CEP_EMODEL);
}

Test(ops_hardmax, inference_keeps_symbols)
{
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT16, 2, DIMS(OP_DIM_SYM(0), 10), NULL), out;

	cr_assert_eq(oh_infer("Hardmax", 1, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], 10);
}
