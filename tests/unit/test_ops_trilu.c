/*
 * test_ops_trilu.c — Trilu of kernels/cpu/trilu.c, called the way the
 * engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the upper and lower triangles of square, wide, tall and
 * batched matrices for diagonals from far below to far above, checked
 * against the specification's wording written out by hand for a 4 x 5
 * matrix and against the rule j - i >= k (<= k) elsewhere; every stored
 * type; empty matrices; the errors (rank below 2, a k of another type or
 * shape); inference with symbols; and a model whose k is fed at run time.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* Runs Trilu (upper, k; k NULL: no k input) over x into *out. */
static int trilu(struct op_tensor x, int upper, int64_t *k, struct op_tensor *out)
{
	struct op_attr a = oh_int("upper", upper);
	struct op_tensor in[2] = { x, oh_tensor(CEP_DTYPE_INT64, 0, NULL, k) };

	return oh_run("Trilu", 14, &a, 1, in, k ? 2 : 1, out, 1);
}

/* The 4 x 5 matrix 1..20 of the conformance cases, with the results the
 * specification's sentences describe, written out by hand. */
Test(ops_trilu, the_specification_for_a_4_by_5_matrix)
{
	static const struct {
		int upper;
		int64_t k;
		int keep[4][5];
	} cases[] = {
		/* Upper, k = 0: on and above the main diagonal. */
		{ 1, 0, { { 1, 1, 1, 1, 1 }, { 0, 1, 1, 1, 1 }, { 0, 0, 1, 1, 1 }, { 0, 0, 0, 1, 1 } } },
		/* Upper, k = 1: the main diagonal excluded. */
		{ 1, 1, { { 0, 1, 1, 1, 1 }, { 0, 0, 1, 1, 1 }, { 0, 0, 0, 1, 1 }, { 0, 0, 0, 0, 1 } } },
		/* Upper, k = -1: one diagonal below kept too. */
		{ 1, -1, { { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 0, 1, 1, 1, 1 }, { 0, 0, 1, 1, 1 } } },
		/* Lower, k = 0: on and below. */
		{ 0, 0, { { 1, 0, 0, 0, 0 }, { 1, 1, 0, 0, 0 }, { 1, 1, 1, 0, 0 }, { 1, 1, 1, 1, 0 } } },
		/* Lower, k = 2: two diagonals above included. */
		{ 0, 2, { { 1, 1, 1, 0, 0 }, { 1, 1, 1, 1, 0 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 } } },
		/* Lower, k = -1: the main diagonal excluded. */
		{ 0, -1, { { 0, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0 }, { 1, 1, 0, 0, 0 }, { 1, 1, 1, 0, 0 } } },
		/* Far out: everything, or nothing. */
		{ 1, -7, { { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 } } },
		{ 1, 6, { { 0 } } },
		{ 0, 6, { { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 } } },
		{ 0, -5, { { 0 } } },
	};
	int64_t x[20], k;
	struct op_tensor out;
	size_t c;
	int i, j;

	for (i = 0; i < 20; i++)
		x[i] = i + 1;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		k = cases[c].k;
		cr_assert_eq(trilu(oh_tensor(CEP_DTYPE_INT64, 2, DIMS(4, 5), x), cases[c].upper, &k,
				   &out), 0, "%s", cep_last_error());
		for (i = 0; i < 4; i++) {
			for (j = 0; j < 5; j++)
				cr_assert_eq(((int64_t *)out.data)[i * 5 + j],
					     cases[c].keep[i][j] ? x[i * 5 + j] : 0,
					     "upper %d k %lld at (%d, %d)", cases[c].upper,
					     (long long)k, i, j);
		}
		free(out.data);
	}
	/* Without k: upper by default, k = 0. */
	cr_assert_eq(oh_run("Trilu", 14, NULL, 0, &(struct op_tensor){ .data = x,
		     .dtype = CEP_DTYPE_INT64, .rank = 2, .dims = { 4, 5 } }, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((int64_t *)out.data)[5], 0);
	cr_assert_eq(((int64_t *)out.data)[6], 7);
	free(out.data);
}

/* Every stored type, batched, wide and tall matrices, against the rule. */
Test(ops_trilu, every_type_and_shape_follows_the_rule)
{
	static const cep_dtype types[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
		CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
	};
	static const int64_t shapes[][3] = { { 2, 3, 3 }, { 3, 2, 7 }, { 1, 6, 2 }, { 4, 1, 5 } };
	static const int64_t ks[] = { INT64_MIN, -3, -1, 0, 1, 2, 5, INT64_MAX };
	unsigned char x[42 * 8];
	size_t t, s, ki;
	int upper, e;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		size_t es = cep_dtype_size(types[t]);

		for (e = 0; e < 42; e++)
			cpu_store_i(x, types[t], e, e % 9 + 1);
		for (s = 0; s < 4; s++) {
			int64_t rows = shapes[s][1], cols = shapes[s][2];
			int64_t n = shapes[s][0] * rows * cols;

			for (ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
				for (upper = 0; upper < 2; upper++) {
					int64_t k = ks[ki];
					struct op_tensor out;

					cr_assert_eq(trilu(oh_tensor(types[t], 3, shapes[s], x), upper, &k,
							   &out), 0, "%s", cep_last_error());
					cr_assert_eq(out.dtype, types[t]);
					for (e = 0; e < n; e++) {
						int64_t i = (e / cols) % rows, j = e % cols;
						bool keep = upper ? j - i >= k : j - i <= k;
						unsigned char zero[8] = { 0 };

						cr_assert_eq(memcmp((unsigned char *)out.data + e * (int64_t)es,
								    keep ? x + e * (int64_t)es : zero, es), 0,
							     "%s upper %d k %lld element %d",
							     cep_dtype_name(types[t]), upper, (long long)k, e);
					}
					free(out.data);
				}
			}
		}
	}
}

/* Zeros are all bits clear: a kept -0.0 or NaN keeps its bits. */
Test(ops_trilu, elements_move_bit_for_bit)
{
	uint32_t x[4] = { 0x80000000u, 0x7fc00001u, 0xffffffffu, 0x3f800000u }, *y;
	int64_t k = 0;
	struct op_tensor out;

	cr_assert_eq(trilu(oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), x), 1, &k, &out), 0, "%s",
		     cep_last_error());
	y = out.data;
	cr_assert_eq(y[0], 0x80000000u);
	cr_assert_eq(y[1], 0x7fc00001u);
	cr_assert_eq(y[2], 0u);
	cr_assert_eq(y[3], 0x3f800000u);
	free(out.data);
}

Test(ops_trilu, empty_matrices)
{
	float x[1];
	int64_t k = 1;
	struct op_tensor out;

	cr_assert_eq(trilu(oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(3, 0, 5), x), 0, &k, &out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[1], 0);
	free(out.data);
	cr_assert_eq(trilu(oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(0, 5), x), 1, NULL, &out), 0,
		     "%s", cep_last_error());
	free(out.data);
}

Test(ops_trilu, bad_inputs_are_refused_with_a_message)
{
	float x[4] = { 0 };
	int32_t k32 = 0;
	int64_t k2[2] = { 0, 1 };
	struct op_tensor out, in[2];

	cr_assert_eq(trilu(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), x), 1, NULL, &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Trilu: the input has rank 1, it needs 2 or more");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 0, NULL, &k32);
	cr_assert_eq(oh_run("Trilu", 14, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "Trilu: k is int32, not int64");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), k2);
	cr_assert_eq(oh_run("Trilu", 14, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Trilu: k must be a scalar, it has 2 elements in rank 1");
	/* Trilu came at 14. */
	cr_assert_eq(oh_run("Trilu", 13, NULL, 0, in, 1, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_trilu, inference_keeps_symbols)
{
	struct op_tensor in[2] = {
		oh_tensor(CEP_DTYPE_BOOL, 3, DIMS(OP_DIM_SYM(0), OP_DIM_SYM(1), 4), NULL),
		oh_tensor(CEP_DTYPE_INT64, 0, NULL, NULL),
	}, out;

	cr_assert_eq(oh_infer("Trilu", 14, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[2], 4);
}

/* k a graph input, fed at run time: it changes no shape, so one plan. */
Test(ops_trilu, engine_runs_a_k_fed_at_run_time)
{
	struct onnxb *b = onnxb_new(14);
	int64_t dims[2] = { 3, 3 }, k = 0;
	int32_t x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, y[9];
	struct engine_input in[2] = { { "x", CEP_DTYPE_INT32, 2, dims, x, sizeof(x) },
				      { "k", CEP_DTYPE_INT64, 0, NULL, &k, sizeof(k) } };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s = NULL;
	size_t len;
	uint8_t *buf;

	onnxb_input(b, "x", CEP_DTYPE_INT32, "3,3");
	onnxb_input(b, "k", CEP_DTYPE_INT64, "");
	onnxb_output(b, "y", CEP_DTYPE_INT32, "3,3");
	onnxb_attr_int(onnxb_node(b, "Trilu", "x,k", "y"), "upper", 0);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[1], 0);
	cr_assert_eq(y[3], 4);
	k = 1;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[1], 2);
	cr_assert_eq(y[2], 0);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
