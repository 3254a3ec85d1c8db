/*
 * test_ops_index.c — GatherND, ScatterND, ScatterElements and Scatter on
 * the host backend (kernels/cpu/index.c), called the way the engine calls
 * them: the examples of the ONNX specification (batch_dims and every
 * reduction included), negative indices, duplicates (applied in the
 * updates' order: the last wins with reduction none), the types of each
 * opset, the reductions of each opset, inference with symbolic
 * dimensions, and the refusals: bad shapes, types and attributes, and an
 * index out of range, named in the message as the device names it.
 */
#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define RANK(...) ((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
/* A tensor of dtype over data with the given dims (at least one). */
#define T(dt, data, ...) oh_tensor(dt, RANK(__VA_ARGS__), DIMS(__VA_ARGS__), (void *)(data))

#define ASSERT_MSG(want) \
	cr_assert_str_eq(cep_last_error(), want, "got \"%s\"", cep_last_error())

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

static void assert_dims(const struct op_tensor *t, int rank, const int64_t *dims)
{
	int i;

	cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
	for (i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "dim %d is %lld, expected %lld", i,
			     (long long)t->dims[i], (long long)dims[i]);
}
#define ASSERT_DIMS(t, ...) assert_dims(t, RANK(__VA_ARGS__), DIMS(__VA_ARGS__))

static void assert_f32(const struct op_tensor *t, int64_t n, const float *want)
{
	int64_t i;

	cr_assert_eq(t->dtype, CEP_DTYPE_FLOAT32);
	for (i = 0; i < n; i++)
		cr_assert_eq(((const float *)t->data)[i], want[i], "element %lld: %g, expected %g",
			     (long long)i, (double)((const float *)t->data)[i], (double)want[i]);
}

static void assert_i32(const struct op_tensor *t, int64_t n, const int32_t *want)
{
	int64_t i;

	cr_assert_eq(t->dtype, CEP_DTYPE_INT32);
	for (i = 0; i < n; i++)
		cr_assert_eq(((const int32_t *)t->data)[i], want[i], "element %lld: %d, expected %d",
			     (long long)i, ((const int32_t *)t->data)[i], want[i]);
}

/* A tensor of dtype with the n small integers v, stored in that type. */
static struct op_tensor typed(cep_dtype dt, const int64_t *v, int64_t n, int rank,
			      const int64_t *dims)
{
	void *p = calloc(1, (size_t)n * cep_dtype_size(dt) + 1);
	int64_t i;

	for (i = 0; i < n; i++)
		cpu_store_i(p, dt, i, v[i]);
	return oh_tensor(dt, rank, dims, p);
}

static void assert_typed(const struct op_tensor *t, int64_t n, const int64_t *want,
			 const char *what)
{
	int64_t i;

	for (i = 0; i < n; i++) {
		int64_t w = want[i];

		if (t->dtype == CEP_DTYPE_BOOL)
			w = w != 0;
		cr_assert_eq(cpu_load_i(t->data, t->dtype, i), w, "%s %s element %lld: %lld, "
			     "expected %lld", what, cep_dtype_name(t->dtype), (long long)i,
			     (long long)cpu_load_i(t->data, t->dtype, i), (long long)w);
	}
}

/* ------------------------------------------------------------ GatherND */

/* The five examples of the specification. */
Test(ops_index, gather_nd_examples_of_the_specification)
{
	static const int32_t d22[4] = { 0, 1, 2, 3 };
	static const int32_t d222[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const int64_t i1[4] = { 0, 0, 1, 1 }, i2[2] = { 1, 0 }, i3[4] = { 0, 1, 1, 0 };
	struct op_attr b1 = oh_int("batch_dims", 1);
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_INT32, d22, 2, 2);
	in[1] = T(CEP_DTYPE_INT64, i1, 2, 2);
	cr_assert_eq(oh_run("GatherND", 11, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2);
	assert_i32(&out, 2, (const int32_t[]){ 0, 3 });
	free(out.data);

	in[1] = T(CEP_DTYPE_INT64, i2, 2, 1);
	cr_assert_eq(oh_run("GatherND", 12, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	assert_i32(&out, 4, (const int32_t[]){ 2, 3, 0, 1 });
	free(out.data);

	in[0] = T(CEP_DTYPE_INT32, d222, 2, 2, 2);
	in[1] = T(CEP_DTYPE_INT64, i3, 2, 2);
	cr_assert_eq(oh_run("GatherND", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	assert_i32(&out, 4, (const int32_t[]){ 2, 3, 4, 5 });
	free(out.data);

	in[1] = T(CEP_DTYPE_INT64, i3, 2, 1, 2);
	cr_assert_eq(oh_run("GatherND", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 1, 2);
	assert_i32(&out, 4, (const int32_t[]){ 2, 3, 4, 5 });
	free(out.data);

	/* Example 5: batch_dims 1. */
	in[1] = T(CEP_DTYPE_INT64, i2, 2, 1);
	cr_assert_eq(oh_run("GatherND", 12, &b1, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	assert_i32(&out, 4, (const int32_t[]){ 2, 3, 4, 5 });
	free(out.data);
}

Test(ops_index, gather_nd_takes_negative_indices_and_batches_of_tuples)
{
	/* data (2, 3, 2), batch_dims 1: each batch gathers rows of its own
	 * 3 x 2 matrix, -1 being the last. */
	static const float x[12] = { 0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15 };
	static const int64_t idx[8] = { -1, 0, 1, 0, 0, -1, 2, 1 };
	struct op_attr b1 = oh_int("batch_dims", 1);
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 2, 3, 2);
	in[1] = T(CEP_DTYPE_INT64, idx, 2, 2, 2);
	cr_assert_eq(oh_run("GatherND", 13, &b1, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	assert_f32(&out, 4, (const float[]){ 4, 2, 11, 15 });
	free(out.data);
	/* Single rows: tuples of one entry. */
	in[1] = T(CEP_DTYPE_INT64, idx, 2, 4, 1);
	cr_assert_eq(oh_run("GatherND", 13, &b1, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 4, 2);
	assert_f32(&out, 16, (const float[]){ 4, 5, 0, 1, 2, 3, 0, 1,
					      10, 11, 14, 15, 14, 15, 12, 13 });
	free(out.data);
}

Test(ops_index, gather_nd_moves_every_type)
{
	static const int64_t v[6] = { 1, 2, 3, 0, 5, 1 }, idx[2] = { 2, 0 };
	size_t t;

	for (t = 0; t < N_TYPES; t++) {
		struct op_tensor in[2], out;

		in[0] = typed(all_types[t], v, 6, 2, DIMS(3, 2));
		in[1] = T(CEP_DTYPE_INT64, idx, 2, 1);
		cr_assert_eq(oh_run("GatherND", 13, NULL, 0, in, 2, &out, 1), 0, "%s",
			     cep_last_error());
		ASSERT_DIMS(&out, 2, 2);
		assert_typed(&out, 4, (const int64_t[]){ 5, 1, 1, 2 }, "GatherND");
		free(out.data);
		/* bfloat16 only from opset 13. */
		cr_assert_eq(oh_run("GatherND", 12, NULL, 0, in, 2, &out, 1),
			     all_types[t] == CEP_DTYPE_BFLOAT16 ? CEP_EUNSUPPORTED : 0);
		if (all_types[t] != CEP_DTYPE_BFLOAT16)
			free(out.data);
		free(in[0].data);
	}
}

Test(ops_index, gather_nd_an_index_out_of_range_fails_the_run)
{
	static const float x[6] = { 0 };
	static const int64_t bad[4] = { 0, 1, 1, 3 }, neg[2] = { 0, -4 };
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 2, 3);
	in[1] = T(CEP_DTYPE_INT64, bad, 2, 2);
	cr_assert_eq(oh_run("GatherND", 13, NULL, 0, in, 2, &out, 1), CEP_EINVAL);
	ASSERT_MSG("GatherND: index 3 is out of range for dimension 1 of size 3");
	in[1] = T(CEP_DTYPE_INT64, neg, 1, 2);
	cr_assert_eq(oh_run("GatherND", 13, NULL, 0, in, 2, &out, 1), CEP_EINVAL);
	ASSERT_MSG("GatherND: index -4 is out of range for dimension 1 of size 3");
}

Test(ops_index, gather_nd_inference_keeps_symbols)
{
	const int64_t b = OP_DIM_SYM(0), s = OP_DIM_SYM(1), n = OP_DIM_SYM(2);
	struct op_attr b1 = oh_int("batch_dims", 1);
	struct op_tensor in[2], out;

	/* data (b, s, 7), indices (b, n, 1), batch_dims 1: (b, n, 7). */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT16, 3, DIMS(b, s, 7), NULL);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 3, DIMS(b, n, 1), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, &b1, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	ASSERT_DIMS(&out, b, n, 7);
	/* A fixed batch dimension wins over the other's symbol. */
	in[1] = oh_tensor(CEP_DTYPE_INT64, 3, DIMS(4, n, 2), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, &b1, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, n);
	/* A tuple length nobody knows yet leaves the rank unknown. */
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(b, OP_DIM_UNKNOWN), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, -1);
}

Test(ops_index, gather_nd_refusals)
{
	struct op_attr b1 = oh_int("batch_dims", 1), b2 = oh_int("batch_dims", 2);
	struct op_tensor in[2], out;

	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), NULL);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(2, 1), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("GatherND: indices are int32, not int64");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("GatherND: index tuples have 3 entries; data of rank 2 with batch_dims 0 "
		   "takes 1 to 2");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 2), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, &b1, 1, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_eq(oh_infer("GatherND", 13, &b2, 1, in, 2, &out, 1), CEP_EMODEL);
	ASSERT_MSG("GatherND: batch_dims 2 must be >= 0 and below the ranks of data (2) and "
		   "indices (2)");
	cr_assert_eq(oh_infer("GatherND", 11, &b1, 1, in, 2, &out, 1), CEP_EMODEL);
	ASSERT_MSG("GatherND: batch_dims needs opset 12 (the model has 11)");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(3, 1), NULL);
	cr_assert_eq(oh_infer("GatherND", 13, &b1, 1, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("GatherND: indices have 3 in dimension 0 where data have 2 in dimension 0");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 0, NULL, NULL);
	cr_assert_eq(oh_infer("GatherND", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_eq(oh_infer("GatherND", 10, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

/* ----------------------------------------------------------- ScatterND */

static const float nd_data[64] = {
	1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1,
	1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1,
	8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8,
	8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8,
};
static const float nd_upd[32] = {
	5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8,
	1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
};

Test(ops_index, scatter_nd_examples_of_the_specification)
{
	static const float d1[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, u1[4] = { 9, 10, 11, 12 };
	static const int64_t i1[4] = { 4, 3, 1, 7 }, i2[2] = { 0, 2 };
	float want[64];
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, d1, 8);
	in[1] = T(CEP_DTYPE_INT64, i1, 4, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, u1, 4);
	cr_assert_eq(oh_run("ScatterND", 11, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 8);
	assert_f32(&out, 8, (const float[]){ 1, 11, 3, 10, 9, 6, 7, 12 });
	free(out.data);

	in[0] = T(CEP_DTYPE_FLOAT32, nd_data, 4, 4, 4);
	in[1] = T(CEP_DTYPE_INT64, i2, 2, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, nd_upd, 2, 4, 4);
	cr_assert_eq(oh_run("ScatterND", 18, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, 4, 4);
	memcpy(want, nd_data, sizeof(want));
	memcpy(want, nd_upd, 16 * sizeof(float));
	memcpy(want + 32, nd_upd + 16, 16 * sizeof(float));
	assert_f32(&out, 64, want);
	free(out.data);
}

/* The conformance cases' reductions: both updates land on slice 0. */
Test(ops_index, scatter_nd_reductions_fold_duplicates)
{
	static const int64_t i00[2] = { 0, 0 };
	static const struct {
		const char *red;
		int opset;
		float first[16];
	} cases[] = {
		{ "add", 16, { 7, 8, 9, 10, 13, 14, 15, 16, 18, 17, 16, 15, 16, 15, 14, 13 } },
		{ "mul", 16, { 5, 10, 15, 20, 60, 72, 84, 96, 168, 147, 126, 105, 128, 96, 64, 32 } },
		{ "max", 18, { 5, 5, 5, 5, 6, 6, 7, 8, 8, 7, 7, 7, 8, 8, 8, 8 } },
		{ "min", 18, { 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 3, 2, 1 } },
	};
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct op_attr red = oh_string("reduction", cases[c].red);
		struct op_tensor in[3], out;
		float want[64];

		in[0] = T(CEP_DTYPE_FLOAT32, nd_data, 4, 4, 4);
		in[1] = T(CEP_DTYPE_INT64, i00, 2, 1);
		in[2] = T(CEP_DTYPE_FLOAT32, nd_upd, 2, 4, 4);
		cr_assert_eq(oh_run("ScatterND", cases[c].opset, &red, 1, in, 3, &out, 1), 0,
			     "%s: %s", cases[c].red, cep_last_error());
		memcpy(want, nd_data, sizeof(want));
		memcpy(want, cases[c].first, sizeof(cases[c].first));
		assert_f32(&out, 64, want);
		free(out.data);
	}
}

Test(ops_index, scatter_nd_duplicates_without_reduction_keep_the_last_update)
{
	static const float d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, u[4] = { 9, 10, 11, 12 };
	static const int64_t idx[4] = { 4, -4, 1, 7 }, add_idx[4] = { 4, 4, -1, 7 };
	struct op_attr add = oh_string("reduction", "add");
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, d, 8);
	in[1] = T(CEP_DTYPE_INT64, idx, 4, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 4);
	cr_assert_eq(oh_run("ScatterND", 13, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	assert_f32(&out, 8, (const float[]){ 1, 11, 3, 4, 10, 6, 7, 12 });
	free(out.data);
	in[1] = T(CEP_DTYPE_INT64, add_idx, 4, 1);
	cr_assert_eq(oh_run("ScatterND", 16, &add, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	assert_f32(&out, 8, (const float[]){ 1, 2, 3, 4, 24, 6, 7, 31 });
	free(out.data);
}

/* Integers reduce in int64 and wrap to their width; bool's add is or and
 * its mul and; float16 rounds after each update. */
Test(ops_index, scatter_nd_reductions_of_every_type)
{
	static const int64_t d[4] = { 1, 0, 3, 1 }, u[4] = { 2, 1, 0, 1 };
	static const int64_t idx[8] = { 0, 1, 1, 1, 0, 0, 1, 0 };
	static const struct {
		const char *red;
		int64_t want[4];
		int64_t want_bool[4];
	} cases[] = {
		{ "none", { 0, 2, 1, 1 }, { 0, 1, 1, 1 } },
		{ "add", { 1, 2, 4, 2 }, { 1, 1, 1, 1 } },
		{ "mul", { 0, 0, 3, 1 }, { 0, 0, 1, 1 } },
		{ "max", { 1, 2, 3, 1 }, { 1, 1, 1, 1 } },
		{ "min", { 0, 0, 1, 1 }, { 0, 0, 1, 1 } },
	};
	size_t t, c;

	for (t = 0; t < N_TYPES; t++) {
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			struct op_attr red = oh_string("reduction", cases[c].red);
			struct op_tensor in[3], out;

			/* data (2, 2); tuples (0,1) (1,1) (0,0) (1,0) with updates
			 * 2 1 0 1 in that order. */
			in[0] = typed(all_types[t], d, 4, 2, DIMS(2, 2));
			in[1] = T(CEP_DTYPE_INT64, idx, 4, 2);
			in[2] = typed(all_types[t], u, 4, 1, DIMS(4));
			cr_assert_eq(oh_run("ScatterND", 18, &red, 1, in, 3, &out, 1), 0, "%s %s: %s",
				     cep_dtype_name(all_types[t]), cases[c].red, cep_last_error());
			assert_typed(&out, 4, all_types[t] == CEP_DTYPE_BOOL ? cases[c].want_bool :
					      cases[c].want, cases[c].red);
			free(out.data);
			free(in[0].data);
			free(in[2].data);
		}
	}
}

Test(ops_index, scatter_nd_wraps_and_rounds_as_the_type_does)
{
	static const int64_t d[1] = { 120 }, u[2] = { 5, 10 }, idx[2] = { 0, 0 };
	struct op_attr add = oh_string("reduction", "add"), mul = oh_string("reduction", "mul");
	uint16_t h[1], hu[2];
	struct op_tensor in[3], out;

	in[0] = typed(CEP_DTYPE_INT8, d, 1, 1, DIMS(1));
	in[1] = T(CEP_DTYPE_INT64, idx, 2, 1);
	in[2] = typed(CEP_DTYPE_INT8, u, 2, 1, DIMS(2));
	cr_assert_eq(oh_run("ScatterND", 16, &add, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], (int8_t)(120 + 5 + 10 - 256));
	free(out.data);
	cr_assert_eq(oh_run("ScatterND", 16, &mul, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], (int8_t)(uint8_t)(6000 & 0xff));
	free(out.data);
	free(in[0].data);
	free(in[2].data);
	/* float16: 2048 + 1 rounds back to 2048 each time (ties to even), so
	 * two updates of 1 leave it; a sum in float would give 2050. */
	h[0] = cpu_f32_to_f16(2048.0f);
	hu[0] = hu[1] = cpu_f32_to_f16(1.0f);
	in[0] = T(CEP_DTYPE_FLOAT16, h, 1);
	in[2] = T(CEP_DTYPE_FLOAT16, hu, 2);
	cr_assert_eq(oh_run("ScatterND", 16, &add, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[0]), 2048.0f);
	free(out.data);
}

Test(ops_index, scatter_nd_nan_wins_max_and_min)
{
	static const float d[2] = { 1, NAN }, u[3] = { NAN, 5, -1 };
	static const int64_t idx[3] = { 0, 1, 1 };
	static const char *const reds[2] = { "max", "min" };
	int r;

	for (r = 0; r < 2; r++) {
		struct op_attr red = oh_string("reduction", reds[r]);
		struct op_tensor in[3], out;

		in[0] = T(CEP_DTYPE_FLOAT32, d, 2);
		in[1] = T(CEP_DTYPE_INT64, idx, 3, 1);
		in[2] = T(CEP_DTYPE_FLOAT32, u, 3);
		cr_assert_eq(oh_run("ScatterND", 18, &red, 1, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]), "%s",
			  reds[r]);
		free(out.data);
	}
}

Test(ops_index, scatter_nd_reductions_by_opset)
{
	static const float d[2] = { 0 };
	static const int64_t idx[1] = { 0 };
	struct op_attr add = oh_string("reduction", "add"), max = oh_string("reduction", "max");
	struct op_attr bad = oh_string("reduction", "sum"), none = oh_string("reduction", "none");
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, d, 2);
	in[1] = T(CEP_DTYPE_INT64, idx, 1, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, d, 1);
	cr_assert_eq(oh_infer("ScatterND", 13, &add, 1, in, 3, &out, 1), CEP_EMODEL);
	ASSERT_MSG("ScatterND: reduction add needs opset 16 (the model has 13)");
	cr_assert_eq(oh_infer("ScatterND", 17, &max, 1, in, 3, &out, 1), CEP_EMODEL);
	ASSERT_MSG("ScatterND: reduction max needs opset 18 (the model has 17)");
	cr_assert_eq(oh_infer("ScatterND", 18, &bad, 1, in, 3, &out, 1), CEP_EMODEL);
	ASSERT_MSG("ScatterND: reduction \"sum\" is not one of none, add, mul, max, min");
	cr_assert_eq(oh_infer("ScatterND", 11, &none, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(oh_infer("ScatterND", 10, NULL, 0, in, 3, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_index, scatter_nd_refusals_and_an_index_out_of_range)
{
	static const float d[6] = { 0 }, u[4] = { 0 };
	static const int64_t bad[2] = { 1, 3 }, neg[2] = { -3, 0 };
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, d, 2, 3);
	in[1] = T(CEP_DTYPE_INT64, bad, 1, 2);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 1);
	cr_assert_eq(oh_run("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_EINVAL);
	ASSERT_MSG("ScatterND: index 3 is out of range for dimension 1 of size 3");
	in[1] = T(CEP_DTYPE_INT64, neg, 1, 2);
	cr_assert_eq(oh_run("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_EINVAL);
	ASSERT_MSG("ScatterND: index -3 is out of range for dimension 0 of size 2");

	in[1] = T(CEP_DTYPE_INT64, bad, 2, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 2, 2);
	cr_assert_eq(oh_infer("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterND: updates have 2 in dimension 1 where data have 3 in dimension 1");
	in[2] = T(CEP_DTYPE_FLOAT32, u, 2);
	cr_assert_eq(oh_infer("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterND: updates have rank 1, not 2 (indices' 2 - 1, plus data's 2 - 1)");
	in[1] = T(CEP_DTYPE_INT64, bad, 1, 3);
	cr_assert_eq(oh_infer("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterND: index tuples have 3 entries; data of rank 2 takes 1 to 2");
	in[1] = T(CEP_DTYPE_INT32, bad, 2, 1);
	cr_assert_eq(oh_infer("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("ScatterND: indices are int32, not int64");
	in[1] = T(CEP_DTYPE_INT64, bad, 2, 1);
	in[2] = T(CEP_DTYPE_FLOAT16, u, 2, 3);
	cr_assert_eq(oh_infer("ScatterND", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("ScatterND: updates are float16 but data is float32");
}

Test(ops_index, scatter_nd_inference_is_data_s_shape)
{
	const int64_t b = OP_DIM_SYM(0), n = OP_DIM_SYM(1);
	struct op_tensor in[3], out;

	/* data (b, 16, 8), indices (n, 2), updates (n, 8). */
	in[0] = oh_tensor(CEP_DTYPE_BFLOAT16, 3, DIMS(b, 16, 8), NULL);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(n, 2), NULL);
	in[2] = oh_tensor(CEP_DTYPE_BFLOAT16, 2, DIMS(n, 8), NULL);
	cr_assert_eq(oh_infer("ScatterND", 18, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	ASSERT_DIMS(&out, b, 16, 8);
}

/* ------------------------------------------------ ScatterElements, Scatter */

static const float se_updates[6] = { 1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f };
static const float se_want1[9] = { 2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f };

Test(ops_index, scatter_elements_examples_of_the_specification)
{
	static const float zero[9] = { 0 }, d2[5] = { 1, 2, 3, 4, 5 }, u2[2] = { 1.1f, 2.1f };
	static const int64_t i1[6] = { 1, 0, 2, 0, 2, 1 };
	static const int32_t i2[2] = { 1, 3 };
	struct op_attr axis1 = oh_int("axis", 1);
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, zero, 3, 3);
	in[1] = T(CEP_DTYPE_INT64, i1, 2, 3);
	in[2] = T(CEP_DTYPE_FLOAT32, se_updates, 2, 3);
	cr_assert_eq(oh_run("ScatterElements", 11, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 3, 3);
	assert_f32(&out, 9, se_want1);
	free(out.data);

	in[0] = T(CEP_DTYPE_FLOAT32, d2, 1, 5);
	in[1] = T(CEP_DTYPE_INT32, i2, 1, 2);
	in[2] = T(CEP_DTYPE_FLOAT32, u2, 1, 2);
	cr_assert_eq(oh_run("ScatterElements", 18, &axis1, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_f32(&out, 5, (const float[]){ 1, 1.1f, 3, 2.1f, 5 });
	free(out.data);
}

/* The Scatter of opsets 9 and 10 is the same operator; 11 deprecated it. */
Test(ops_index, scatter_is_scatter_elements_before_opset_11)
{
	static const float zero[9] = { 0 };
	static const int32_t i1[6] = { 1, 0, 2, 0, 2, 1 };
	struct op_tensor in[3], out;
	int opset;

	in[0] = T(CEP_DTYPE_FLOAT32, zero, 3, 3);
	in[1] = T(CEP_DTYPE_INT32, i1, 2, 3);
	in[2] = T(CEP_DTYPE_FLOAT32, se_updates, 2, 3);
	for (opset = 9; opset <= 10; opset++) {
		cr_assert_eq(oh_run("Scatter", opset, NULL, 0, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		assert_f32(&out, 9, se_want1);
		free(out.data);
	}
	cr_assert_eq(oh_infer("Scatter", 11, NULL, 0, in, 3, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_infer("ScatterElements", 10, NULL, 0, in, 3, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_index, scatter_elements_negative_indices_and_reductions)
{
	static const float d[5] = { 1, 2, 3, 4, 5 }, u[2] = { 1.1f, 2.1f };
	static const int64_t neg[2] = { 1, -3 }, dup[2] = { 1, 1 };
	static const struct {
		const char *red;
		float want1;
	} cases[] = {
		{ "none", 2.1f }, { "add", 2.0f + 1.1f + 2.1f }, { "mul", 2.0f * 1.1f * 2.1f },
		{ "max", 2.1f }, { "min", 1.1f },
	};
	struct op_attr a[2] = { oh_int("axis", 1), oh_string("reduction", "none") };
	struct op_tensor in[3], out;
	size_t c;

	in[0] = T(CEP_DTYPE_FLOAT32, d, 1, 5);
	in[1] = T(CEP_DTYPE_INT64, neg, 1, 2);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 1, 2);
	cr_assert_eq(oh_run("ScatterElements", 13, a, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	assert_f32(&out, 5, (const float[]){ 1, 1.1f, 2.1f, 4, 5 });
	free(out.data);
	/* Duplicates fold in the updates' order, as the conformance cases
	 * with_duplicate_indices and with_reduction_* have them. */
	in[1] = T(CEP_DTYPE_INT64, dup, 1, 2);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		a[1] = oh_string("reduction", cases[c].red);
		cr_assert_eq(oh_run("ScatterElements", 18, a, 2, in, 3, &out, 1), 0, "%s: %s",
			     cases[c].red, cep_last_error());
		assert_f32(&out, 5, (const float[]){ 1, cases[c].want1, 3, 4, 5 });
		free(out.data);
	}
	a[1] = oh_string("reduction", "min");
	cr_assert_eq(oh_infer("ScatterElements", 16, a, 2, in, 3, &out, 1), CEP_EMODEL);
	ASSERT_MSG("ScatterElements: reduction min needs opset 18 (the model has 16)");
}

/* A 3-D case along the middle axis, indices shorter than data in every
 * dimension, checked against a loop over the specification's formula. */
Test(ops_index, scatter_elements_along_a_middle_axis_with_short_indices)
{
	static const int64_t idx[2 * 2 * 2] = { 2, 0, -1, 1, 0, 0, 1, 2 };
	int32_t d[3 * 4 * 3], u[8], want[3 * 4 * 3];
	struct op_attr a[2] = { oh_int("axis", -2), oh_string("reduction", "add") };
	struct op_tensor in[3], out;
	int i, j, k;

	for (i = 0; i < 36; i++)
		d[i] = want[i] = 100 * i;
	for (i = 0; i < 8; i++)
		u[i] = i + 1;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++)
			for (k = 0; k < 2; k++) {
				int64_t v = idx[(i * 2 + j) * 2 + k];

				want[(i * 4 + (v < 0 ? v + 4 : v)) * 3 + k] += u[(i * 2 + j) * 2 + k];
			}
	in[0] = T(CEP_DTYPE_INT32, d, 3, 4, 3);
	in[1] = T(CEP_DTYPE_INT64, idx, 2, 2, 2);
	in[2] = T(CEP_DTYPE_INT32, u, 2, 2, 2);
	cr_assert_eq(oh_run("ScatterElements", 18, a, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 3, 4, 3);
	assert_i32(&out, 36, want);
	free(out.data);
}

Test(ops_index, scatter_elements_takes_every_type_by_opset)
{
	static const int64_t d[4] = { 1, 2, 3, 0 }, u[2] = { 0, 1 }, idx[2] = { 1, 0 };
	size_t t;

	for (t = 0; t < N_TYPES; t++) {
		struct op_tensor in[3], out;

		in[0] = typed(all_types[t], d, 4, 2, DIMS(2, 2));
		in[1] = T(CEP_DTYPE_INT64, idx, 1, 2);
		in[2] = typed(all_types[t], u, 2, 2, DIMS(1, 2));
		cr_assert_eq(oh_run("ScatterElements", 13, NULL, 0, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		assert_typed(&out, 4, (const int64_t[]){ 1, 1, 0, 0 }, "ScatterElements");
		free(out.data);
		cr_assert_eq(oh_run("ScatterElements", 12, NULL, 0, in, 3, &out, 1),
			     all_types[t] == CEP_DTYPE_BFLOAT16 ? CEP_EUNSUPPORTED : 0);
		if (all_types[t] != CEP_DTYPE_BFLOAT16)
			free(out.data);
		free(in[0].data);
		free(in[2].data);
	}
}

Test(ops_index, scatter_elements_refusals_and_an_index_out_of_range)
{
	static const float d[6] = { 0 }, u[4] = { 0 };
	static const int32_t bad[2] = { 0, 2 };
	static const int64_t ok[4] = { 0 };
	struct op_attr axis0 = oh_int("axis", 0), axis2 = oh_int("axis", 2);
	struct op_tensor in[3], out;

	in[0] = T(CEP_DTYPE_FLOAT32, d, 2, 3);
	in[1] = T(CEP_DTYPE_INT32, bad, 2, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 2, 1);
	cr_assert_eq(oh_run("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), CEP_EINVAL);
	ASSERT_MSG("ScatterElements: index 2 is out of range for dimension 0 of size 2");
	cr_assert_eq(oh_run("Scatter", 9, &axis0, 1, in, 3, &out, 1), CEP_EINVAL);
	ASSERT_MSG("Scatter: index 2 is out of range for dimension 0 of size 2");
	cr_assert_eq(oh_infer("ScatterElements", 13, &axis2, 1, in, 3, &out, 1), CEP_EMODEL);

	in[1] = T(CEP_DTYPE_INT64, ok, 1, 4);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 1, 4);
	cr_assert_eq(oh_infer("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterElements: indices have 4 in dimension 1, data only 3");
	in[2] = T(CEP_DTYPE_FLOAT32, u, 4, 1);
	cr_assert_eq(oh_infer("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterElements: updates have 4 in dimension 0 where indices have 1 in "
		   "dimension 0");
	in[1] = T(CEP_DTYPE_INT64, ok, 4);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 4);
	cr_assert_eq(oh_infer("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("ScatterElements: data, indices and updates must have one rank, not 2, 1 "
		   "and 1");
	in[1] = T(CEP_DTYPE_FLOAT32, ok, 1, 1);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 1, 1);
	cr_assert_eq(oh_infer("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("ScatterElements: indices are float32, not int32 or int64");
	/* Empty indices leave data as it is. */
	in[1] = T(CEP_DTYPE_INT64, ok, 0, 3);
	in[2] = T(CEP_DTYPE_FLOAT32, u, 0, 3);
	cr_assert_eq(oh_run("ScatterElements", 13, &axis0, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 2, 3);
	free(out.data);
}

Test(ops_index, scatter_elements_inference_keeps_symbols)
{
	const int64_t b = OP_DIM_SYM(0), s = OP_DIM_SYM(1);
	struct op_attr axis = oh_int("axis", 1);
	struct op_tensor in[3], out;

	in[0] = oh_tensor(CEP_DTYPE_INT8, 2, DIMS(b, s), NULL);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(b, 4), NULL);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 2, DIMS(b, 4), NULL);
	cr_assert_eq(oh_infer("ScatterElements", 18, &axis, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
	ASSERT_DIMS(&out, b, s);
}
