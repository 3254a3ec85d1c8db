/*
 * test_ops_select.c — NonZero and Compress of kernels/cpu/select.c, called
 * the way the engine calls them (schema inference, then the host kernel
 * through exec_host_eval): the conformance examples worked out by hand,
 * what counts as nonzero in every stored type (NaN does, -0 does not), a
 * scalar, an empty input, random 3-D inputs against coordinates counted
 * here, Compress along each axis and flattened with a short condition,
 * the types each opset takes, the refusals (a true entry past the axis, a
 * negative axis before opset 11, a condition of another type or rank, a
 * count the plan did not expect), inference without the data, and models
 * whose input is fed at run time (each count gets its plan) or computed
 * from an input too large to key a plan (refused, naming the input).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* ------------------------------------------------------------------ NonZero */

/* The conformance case test_nonzero_example: [[1, 0], [1, 1]]. */
Test(ops_select, nonzero_the_conformance_example_by_hand)
{
	uint8_t x[4] = { 1, 0, 1, 1 };
	static const int64_t want[6] = { 0, 1, 1, 0, 0, 1 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_BOOL, 2, DIMS(2, 2), x), out;
	int i;

	cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int64_t *)out.data)[i], want[i], "element %d", i);
	free(out.data);
}

/* In every stored type, a float is nonzero when it is unequal to 0: NaN
 * and the smallest subnormal are, -0 is not. */
Test(ops_select, nonzero_in_every_type)
{
	static const float fv[6] = { 0.0f, -0.0f, NAN, 1e-45f, -2.5f, 0.0f };
	static const int64_t want_f[3] = { 2, 3, 4 };
	static const int64_t iv[6] = { 0, -1, 0, 0, 7, 0 };
	static const int64_t want_i[2] = { 1, 4 };
	static const cep_dtype fts[3] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					  CEP_DTYPE_BFLOAT16 };
	static const cep_dtype its[5] = { CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT8,
					  CEP_DTYPE_UINT8, CEP_DTYPE_BOOL };
	unsigned char buf[6 * 8];
	struct op_tensor in, out;
	int t, i;

	for (t = 0; t < 3; t++) {
		for (i = 0; i < 6; i++)
			cpu_store_f(buf, fts[t], i, fv[i]);
		/* The half types have no 1e-45: their smallest subnormal
		 * stands in. */
		if (fts[t] != CEP_DTYPE_FLOAT32)
			((uint16_t *)buf)[3] = 0x0001;
		in = oh_tensor(fts[t], 1, DIMS(6), buf);
		cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[0], 1);
		cr_assert_eq(out.dims[1], 3, "%s: %lld", cep_dtype_name(fts[t]),
			     (long long)out.dims[1]);
		for (i = 0; i < 3; i++)
			cr_assert_eq(((int64_t *)out.data)[i], want_f[i], "%s %d",
				     cep_dtype_name(fts[t]), i);
		free(out.data);
	}
	for (t = 0; t < 5; t++) {
		for (i = 0; i < 6; i++)
			cpu_store_i(buf, its[t], i, iv[i]);
		in = oh_tensor(its[t], 1, DIMS(6), buf);
		cr_assert_eq(oh_run("NonZero", 9, NULL, 0, &in, 1, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[1], 2, "%s", cep_dtype_name(its[t]));
		for (i = 0; i < 2; i++)
			cr_assert_eq(((int64_t *)out.data)[i], want_i[i]);
		free(out.data);
	}
}

/* A scalar has no coordinates: (0, 1) when it is nonzero, (0, 0) when not;
 * an empty input gives (rank, 0). */
Test(ops_select, nonzero_of_a_scalar_and_of_nothing)
{
	float one = 1.0f, zero = 0.0f;
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &one), out;

	cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.dims[1], 1);
	free(out.data);
	in.data = &zero;
	cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	cr_assert_eq(out.dims[1], 0);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(0, 3), &zero);
	cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 0);
	free(out.data);
}

/* A 3-D input a third zeros: the coordinates, column by column, are those
 * of the nonzero elements counted here in nested loops. */
Test(ops_select, nonzero_of_random_3d_inputs)
{
	enum { A = 3, B = 5, C = 7 };
	int32_t x[A * B * C];
	int64_t want[3][A * B * C];
	unsigned seed = 11;
	struct op_tensor in = oh_tensor(CEP_DTYPE_INT32, 3, DIMS(A, B, C), x), out;
	int a, b, c, n = 0, i, d;

	for (i = 0; i < A * B * C; i++)
		x[i] = oh_rand(&seed) < -0.33f ? 0 : (int32_t)(oh_rand(&seed) * 100.0f) | 1;
	for (a = 0; a < A; a++) {
		for (b = 0; b < B; b++) {
			for (c = 0; c < C; c++) {
				if (x[(a * B + b) * C + c] == 0)
					continue;
				want[0][n] = a;
				want[1][n] = b;
				want[2][n] = c;
				n++;
			}
		}
	}
	cr_assert(n > 0 && n < A * B * C);
	cr_assert_eq(oh_run("NonZero", 9, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	cr_assert_eq(out.dims[1], n);
	for (d = 0; d < 3; d++) {
		for (i = 0; i < n; i++)
			cr_assert_eq(((int64_t *)out.data)[d * n + i], want[d][i], "row %d col %d", d,
				     i);
	}
	free(out.data);
}

Test(ops_select, nonzero_types_follow_the_opset)
{
	uint16_t bf[2] = { 0x3f80, 0 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_BFLOAT16, 1, DIMS(2), bf), out;

	cr_assert_eq(oh_run("NonZero", 12, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "NonZero: dtype bfloat16 is not supported") != NULL,
		  "%s", cep_last_error());
	cr_assert_eq(oh_run("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 1);
	free(out.data);
	cr_assert_eq(oh_run("NonZero", 8, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
}

/* Without the data the count is unknown, and so is the row count without
 * the rank; the planner settles it or refuses. */
Test(ops_select, nonzero_inference_without_the_data)
{
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, OP_DIM_SYM(0), 4), NULL);
	struct op_tensor out;

	cr_assert_eq(oh_infer("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 3);
	cr_assert_eq(out.dims[1], OP_DIM_UNKNOWN);
	in.rank = -1;
	cr_assert_eq(oh_infer("NonZero", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
}

/* The kernel counts again: data whose count is not the plan's fails. */
Test(ops_select, nonzero_checks_the_count_against_the_plan)
{
	const struct op_node node = { "t", "NonZero", "", 13, 0, NULL };
	float x[4] = { 1, 0, 3, 4 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), x);
	struct op_tensor out = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(1, 2), NULL);
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "NonZero", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, &in, 1, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "NonZero: the input has 3 nonzero elements, the plan "
			 "expected 2");
}

/* ----------------------------------------------------------------- Compress */

/* Runs Compress at opset over x (3 x 2 floats 1..6) with the condition
 * cond (n entries) along axis (INT64_MIN: none). */
static int compress(int opset, int64_t axis, const uint8_t *cond, int n, struct op_tensor *out)
{
	static float x[6] = { 1, 2, 3, 4, 5, 6 };
	struct op_attr a = oh_int("axis", axis);
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x),
				   oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(n), (void *)cond) };

	return oh_run("Compress", opset, axis == INT64_MIN ? NULL : &a, axis == INT64_MIN ? 0 : 1,
		      in, 2, out, 1);
}

static void assert_floats(const struct op_tensor *t, int rank, const int64_t *dims,
			  const float *want, int n)
{
	int i;

	cr_assert_eq(t->rank, rank);
	for (i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "dim %d: %lld", i, (long long)t->dims[i]);
	for (i = 0; i < n; i++)
		cr_assert_eq(((float *)t->data)[i], want[i], "element %d", i);
}

/* The conformance cases test_compress_0, _1, _default_axis and
 * _negative_axis, worked out by hand. */
Test(ops_select, compress_the_conformance_examples_by_hand)
{
	static const uint8_t c011[3] = { 0, 1, 1 }, c01[2] = { 0, 1 };
	static const uint8_t c01001[5] = { 0, 1, 0, 0, 1 };
	static const float rows[4] = { 3, 4, 5, 6 }, col[3] = { 2, 4, 6 }, flat[2] = { 2, 5 };
	struct op_tensor out;

	cr_assert_eq(compress(11, 0, c011, 3, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(2, 2), rows, 4);
	free(out.data);
	cr_assert_eq(compress(11, 1, c01, 2, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(3, 1), col, 3);
	free(out.data);
	cr_assert_eq(compress(11, INT64_MIN, c01001, 5, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 1, DIMS(2), flat, 2);
	free(out.data);
	cr_assert_eq(compress(11, -1, c01, 2, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(3, 1), col, 3);
	free(out.data);
}

/* A condition shorter than the axis drops the slices past it; one longer
 * may be, as long as its extra entries are false. Nothing selected gives
 * an empty output. */
Test(ops_select, compress_with_short_long_and_empty_conditions)
{
	static const uint8_t c1[1] = { 1 }, c0100[4] = { 0, 1, 0, 0 }, c000[3] = { 0, 0, 0 };
	static const uint8_t c1001[4] = { 1, 0, 0, 1 };
	static const float first[2] = { 1, 2 }, second[2] = { 3, 4 };
	struct op_tensor out;

	cr_assert_eq(compress(9, 0, c1, 1, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(1, 2), first, 2);
	free(out.data);
	cr_assert_eq(compress(9, 0, c0100, 4, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(1, 2), second, 2);
	free(out.data);
	cr_assert_eq(compress(9, 0, c000, 3, &out), 0, "%s", cep_last_error());
	assert_floats(&out, 2, DIMS(0, 2), NULL, 0);
	free(out.data);
	cr_assert_eq(compress(9, 0, c1001, 4, &out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Compress: condition is true at 3, past the 3 slices "
			 "it selects from");
}

/* Along the middle axis of a 2 x 3 x 2 input of every stored type, whose
 * elements move as they are. */
Test(ops_select, compress_moves_every_type)
{
	static const cep_dtype types[8] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					    CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					    CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL };
	static const uint8_t cond[3] = { 1, 0, 1 };
	/* Elements (a, b, c) = 6a + 2b + c + 1; kept b in {0, 2}. */
	static const int64_t want[8] = { 1, 2, 5, 6, 7, 8, 11, 12 };
	unsigned char buf[12 * 8];
	struct op_attr a = oh_int("axis", 1);
	struct op_tensor in[2], out;
	int t, i;

	for (t = 0; t < 8; t++) {
		for (i = 0; i < 12; i++)
			cpu_store_i(buf, types[t], i, types[t] == CEP_DTYPE_BOOL ? i % 3 != 1 : i + 1);
		in[0] = oh_tensor(types[t], 3, DIMS(2, 3, 2), buf);
		in[1] = oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(3), (void *)cond);
		cr_assert_eq(oh_run("Compress", 28, &a, 1, in, 2, &out, 1), 0, "%s: %s",
			     cep_dtype_name(types[t]), cep_last_error());
		cr_assert_eq(out.dims[1], 2);
		for (i = 0; i < 8; i++) {
			int64_t w = types[t] == CEP_DTYPE_BOOL ? (want[i] - 1) % 3 != 1 : want[i];

			cr_assert_eq(cpu_load_i(out.data, types[t], i), w, "%s %d",
				     cep_dtype_name(types[t]), i);
		}
		free(out.data);
	}
	in[0].dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("Compress", 27, &a, 1, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_select, compress_refusals_name_what_is_wrong)
{
	static const uint8_t c[2] = { 0, 1 };
	int32_t ci[2] = { 0, 1 };
	float x[6] = { 0 };
	struct op_attr a = oh_int("axis", 0);
	struct op_tensor in[2], out;

	cr_assert_eq(compress(9, -1, c, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Compress: axis is -1; a negative axis is allowed "
			 "from opset 11, this node has opset 9");
	cr_assert_eq(compress(11, 2, c, 2, &out), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "Compress") != NULL, "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), ci);
	cr_assert_eq(oh_run("Compress", 11, &a, 1, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "Compress: condition is int32, not bool");
	in[1] = oh_tensor(CEP_DTYPE_BOOL, 2, DIMS(1, 2), (void *)c);
	cr_assert_eq(oh_run("Compress", 11, &a, 1, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Compress: condition must be 1-D, not of rank 2");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, x);
	in[1] = oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(2), (void *)c);
	cr_assert_eq(oh_run("Compress", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Compress: the input must have rank 1 or more");
}

/* Without the condition's values only the extent along the axis is
 * unknown; the kernel checks the count against the plan's. */
Test(ops_select, compress_inference_and_the_plans_count)
{
	const struct op_attr a = oh_int("axis", 1);
	const struct op_node node = { "t", "Compress", "", 11, 1, &a };
	static const uint8_t c[3] = { 1, 1, 0 };
	float x[6] = { 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
				   oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(3), NULL) };
	struct op_tensor out = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 1), NULL);
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(oh_infer("Compress", 11, &a, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], OP_DIM_UNKNOWN);
	in[0].rank = -1;
	cr_assert_eq(oh_infer("Compress", 11, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	in[0].rank = 2;
	in[1].data = (void *)c;
	out = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 1), NULL);
	cr_assert_eq(op_schema_find("", "Compress", 11, &s), 0);
	cr_assert_eq(op_kernel_find(s, 11, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Compress: condition selects 2 slices, the plan "
			 "expected 1");
}

/* ----------------------------------------------------------------- engine */

static engine_session *session_open(struct onnxb *b, struct backend **be, engine_model **m)
{
	engine_session *s = NULL;
	size_t len;
	uint8_t *buf = onnxb_finish(b, &len);

	cr_assert_eq(engine_model_load(buf, len, -1, m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, be), 0);
	cr_assert_eq(engine_session_new(*m, *be, NULL, &s), 0, "%s", cep_last_error());
	return s;
}

/* NonZero of a small graph input: the planner reads the input for the
 * count, and each count gets its plan. */
Test(ops_select, engine_plans_nonzero_of_an_input_by_its_values)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[2] = { 2, 3 }, y[12];
	float x[6] = { 0, 1, 0, 2, 0, 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	static const int64_t want[6] = { 0, 1, 1, 1, 0, 2 };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "NonZero", "x", "y");
	s = session_open(b, &be, &m);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[1], 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(y[i], want[i], "element %d", i);
	x[0] = 5.0f;
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 4);
	cr_assert_eq(y[0], 0);
	cr_assert_eq(y[4], 0);
	cr_assert_eq(y[5], 1);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* Compress of a large input by a small condition fed at run time: only
 * the condition keys the plan. */
Test(ops_select, engine_plans_compress_by_its_condition)
{
	struct onnxb *b = onnxb_new(11);
	int64_t xd[2] = { 100, 2 }, cd[1] = { 100 };
	float x[200], y[200];
	uint8_t cond[100] = { 0 };
	struct engine_input in[2] = { { "x", CEP_DTYPE_FLOAT32, 2, xd, x, sizeof(x) },
				      { "c", CEP_DTYPE_BOOL, 1, cd, cond, 8 } };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	int i;

	for (i = 0; i < 200; i++)
		x[i] = (float)i;
	cd[0] = 8;
	cond[2] = cond[7] = 1;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "?,2");
	onnxb_input(b, "c", CEP_DTYPE_BOOL, "?");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_attr_int(onnxb_node(b, "Compress", "x,c", "y"), "axis", 0);
	s = session_open(b, &be, &m);
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(y[0], 4.0f);
	cr_assert_eq(y[1], 5.0f);
	cr_assert_eq(y[2], 14.0f);
	cr_assert_eq(y[3], 15.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* NonZero of a value computed from an input too large to key a plan is
 * refused at plan time, naming the output and the input. */
Test(ops_select, engine_refuses_nonzero_of_a_large_computed_value)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[1] = { 100 }, y[100];
	float x[100] = { 0 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "100");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "Relu", "x", "r");
	onnxb_node(b, "NonZero", "r", "y");
	s = session_open(b, &be, &m);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "NonZero") != NULL, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "depends on values known only at run time: it needs "
			 "the values of input 'x', whose 100 elements are more than the 64") != NULL,
		  "%s", cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
