/*
 * test_ops_unique.c — Unique of kernels/cpu/unique.c, called the way the
 * engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the specification's four examples worked out by hand
 * (first-occurrence order, sorted, slices along an axis), slices along a
 * middle axis in first-occurrence order, how values compare (-0 equals 0,
 * NaNs collapse and sort last), random integers against a count done
 * here, every stored type, outputs left unnamed, inference without the
 * values, a count other than the plan's, and the refusals.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Runs Unique at opset 11 (sorted; axis unless INT64_MIN) with all four
 * outputs. */
static int unique(struct op_tensor x, int sorted, int64_t axis, struct op_tensor *out)
{
	struct op_attr a[2] = { oh_int("sorted", sorted), oh_int("axis", axis) };

	return oh_run("Unique", 11, a, axis == INT64_MIN ? 1 : 2, &x, 1, out, 4);
}

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(out[i].data);
}

/* Asserts that int64 tensor t holds the n values want. */
static void assert_ints(const struct op_tensor *t, const int64_t *want, int n, const char *what)
{
	int i;

	cr_assert_eq(t->rank, 1, "%s", what);
	cr_assert_eq(t->dims[0], n, "%s: %lld entries, want %d", what, (long long)t->dims[0], n);
	for (i = 0; i < n; i++)
		cr_assert_eq(((int64_t *)t->data)[i], want[i], "%s[%d]: %lld, want %lld", what, i,
			     (long long)((int64_t *)t->data)[i], (long long)want[i]);
}

/* Examples 1 and 2: the flattened input in first-occurrence order, then
 * sorted. */
Test(ops_unique, the_flat_examples_by_hand)
{
	float x1[6] = { 2, 1, 1, 3, 4, 3 }, x2[4] = { 1, 3, 2, 3 };
	static const float y1[4] = { 2, 1, 3, 4 }, y2[3] = { 1, 2, 3 };
	static const int64_t i1[4] = { 0, 1, 3, 4 }, v1[6] = { 0, 1, 1, 2, 3, 2 }, c1[4] = { 1, 2, 2, 1 };
	static const int64_t i2[3] = { 0, 2, 1 }, v2[4] = { 0, 2, 1, 2 }, c2[3] = { 1, 1, 2 };
	struct op_tensor out[4];
	int i;

	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x1), 0, INT64_MIN, out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 4);
	for (i = 0; i < 4; i++)
		cr_assert_eq(((float *)out[0].data)[i], y1[i]);
	assert_ints(&out[1], i1, 4, "indices");
	assert_ints(&out[2], v1, 6, "inverse_indices");
	assert_ints(&out[3], c1, 4, "counts");
	outs_free(out, 4);
	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), x2), 1, INT64_MIN, out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 1);
	for (i = 0; i < 3; i++)
		cr_assert_eq(((float *)out[0].data)[i], y2[i]);
	assert_ints(&out[1], i2, 3, "indices");
	assert_ints(&out[2], v2, 4, "inverse_indices");
	assert_ints(&out[3], c2, 3, "counts");
	outs_free(out, 4);
}

/* Examples 3 and 4: rows along axis 0; slices along axis 1 of a 2 x 4 x 2
 * input, sorted lexicographically. */
Test(ops_unique, the_axis_examples_by_hand)
{
	int32_t x3[9] = { 1, 0, 0, 1, 0, 0, 2, 3, 4 };
	float x4[16] = { 1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1 };
	static const int32_t y3[6] = { 1, 0, 0, 2, 3, 4 };
	static const float y4[12] = { 0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1 };
	static const int64_t i3[2] = { 0, 2 }, v3[3] = { 0, 0, 1 }, c3[2] = { 2, 1 };
	static const int64_t i4[3] = { 1, 0, 2 }, v4[4] = { 1, 0, 2, 0 }, c4[3] = { 2, 1, 1 };
	struct op_tensor out[4];
	int i;

	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_INT32, 2, DIMS(3, 3), x3), 1, 0, out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(out[0].dims[1], 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int32_t *)out[0].data)[i], y3[i]);
	assert_ints(&out[1], i3, 2, "indices");
	assert_ints(&out[2], v3, 3, "inverse_indices");
	assert_ints(&out[3], c3, 2, "counts");
	outs_free(out, 4);
	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 4, 2), x4), 1, 1, out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(out[0].dims[1], 3);
	cr_assert_eq(out[0].dims[2], 2);
	for (i = 0; i < 12; i++)
		cr_assert_eq(((float *)out[0].data)[i], y4[i], "Y[%d]", i);
	assert_ints(&out[1], i4, 3, "indices");
	assert_ints(&out[2], v4, 4, "inverse_indices");
	assert_ints(&out[3], c4, 3, "counts");
	outs_free(out, 4);
	/* Example 4 in first-occurrence order, along axis -2: slices 0, 1, 2. */
	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 4, 2), x4), 0, -2, out), 0,
		     "%s", cep_last_error());
	{
		static const int64_t i5[3] = { 0, 1, 2 }, v5[4] = { 0, 1, 2, 1 }, c5[3] = { 1, 2, 1 };

		assert_ints(&out[1], i5, 3, "indices");
		assert_ints(&out[2], v5, 4, "inverse_indices");
		assert_ints(&out[3], c5, 3, "counts");
		cr_assert_eq(((float *)out[0].data)[0], 1.0f);
		cr_assert_eq(((float *)out[0].data)[2], 0.0f);
	}
	outs_free(out, 4);
}

/* -0 equals 0 (the first one seen is kept), NaNs are one value after all
 * numbers. */
Test(ops_unique, how_values_compare)
{
	float x[7] = { NAN, -0.0f, 1.0f, 0.0f, -INFINITY, NAN, 1.0f };
	static const int64_t idx[4] = { 4, 1, 2, 0 }, inv[7] = { 3, 1, 2, 1, 0, 3, 2 };
	static const int64_t cnt[4] = { 1, 2, 2, 2 };
	struct op_tensor out[4];

	cr_assert_eq(unique(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(7), x), 1, INT64_MIN, out), 0,
		     "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 4);
	cr_assert_eq(((float *)out[0].data)[0], -INFINITY);
	cr_assert(signbit(((float *)out[0].data)[1]), "the first zero seen is -0");
	cr_assert_eq(((float *)out[0].data)[2], 1.0f);
	cr_assert(isnan(((float *)out[0].data)[3]));
	assert_ints(&out[1], idx, 4, "indices");
	assert_ints(&out[2], inv, 7, "inverse_indices");
	assert_ints(&out[3], cnt, 4, "counts");
	outs_free(out, 4);
}

/* Random small integers: every value once, counted here, in both orders. */
Test(ops_unique, random_integers_against_a_count)
{
	enum { N = 300, V = 23 };
	int8_t x[N];
	int64_t count[V] = { 0 }, first[V];
	unsigned seed = 41;
	struct op_tensor out[4];
	int i, v, k, sorted;

	for (v = 0; v < V; v++)
		first[v] = -1;
	for (i = 0; i < N; i++) {
		x[i] = (int8_t)((int)((oh_rand(&seed) + 1.0f) * V / 2) - 5);
		v = x[i] + 5;
		if (first[v] < 0)
			first[v] = i;
		count[v]++;
	}
	for (sorted = 0; sorted < 2; sorted++) {
		int64_t last = INT64_MIN;

		cr_assert_eq(unique(oh_tensor(CEP_DTYPE_INT8, 1, DIMS(N), x), sorted, INT64_MIN, out),
			     0, "%s", cep_last_error());
		for (k = 0; k < out[0].dims[0]; k++) {
			int8_t y = ((int8_t *)out[0].data)[k];
			int64_t at = ((int64_t *)out[1].data)[k];

			cr_assert_eq(at, first[y + 5], "value %d", y);
			cr_assert_eq(((int64_t *)out[3].data)[k], count[y + 5], "value %d", y);
			/* Sorted: ascending values; else ascending first positions. */
			cr_assert_gt(sorted ? y : at, last);
			last = sorted ? y : at;
		}
		for (v = 0, k = 0; v < V; v++)
			k += count[v] > 0;
		cr_assert_eq(out[0].dims[0], k);
		for (i = 0; i < N; i++)
			cr_assert_eq(((int8_t *)out[0].data)[((int64_t *)out[2].data)[i]], x[i]);
		outs_free(out, 4);
	}
}

Test(ops_unique, every_type_and_unnamed_outputs)
{
	static const cep_dtype types[8] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					    CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					    CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL };
	static const int64_t vals[5] = { 3, 1, 3, 0, 1 };
	unsigned char buf[5 * 8];
	struct op_tensor in, out[4];
	int t;

	for (t = 0; t < 8; t++) {
		int i;

		for (i = 0; i < 5; i++)
			cpu_store_i(buf, types[t], i, types[t] == CEP_DTYPE_BOOL ? vals[i] != 0 : vals[i]);
		in = oh_tensor(types[t], 1, DIMS(5), buf);
		/* Y alone. */
		cr_assert_eq(oh_run("Unique", 28, NULL, 0, &in, 1, out, 1), 0, "%s: %s",
			     cep_dtype_name(types[t]), cep_last_error());
		cr_assert_eq(out[0].dims[0], types[t] == CEP_DTYPE_BOOL ? 2 : 3);
		cr_assert_eq(cpu_load_i(out[0].data, types[t], 0), 0);
		cr_assert_eq(cpu_load_i(out[0].data, types[t], 1), 1);
		free(out[0].data);
	}
	in.dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("Unique", 27, NULL, 0, &in, 1, out, 1), CEP_EUNSUPPORTED);
}

Test(ops_unique, inference_refusals_and_the_plans_count)
{
	const struct op_attr sorted = oh_int("sorted", 1);
	const struct op_node node = { "t", "Unique", "", 11, 1, &sorted };
	float x[6] = { 1, 2, 1, 2, 3, 3 };
	struct op_attr axis = oh_int("axis", 1), bad = oh_int("sorted", 2);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), NULL), out[4];
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(oh_infer("Unique", 11, &axis, 1, &in, 1, out, 4), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(out[0].dims[1], OP_DIM_UNKNOWN);
	cr_assert_eq(out[1].dims[0], OP_DIM_UNKNOWN);
	cr_assert_eq(out[2].dims[0], 3, "inverse_indices has one entry per slice");
	cr_assert_eq(out[3].dtype, CEP_DTYPE_INT64);
	cr_assert_eq(oh_infer("Unique", 11, NULL, 0, &in, 1, out, 4), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 1);
	cr_assert_eq(out[2].dims[0], 6);
	cr_assert_eq(oh_infer("Unique", 11, &bad, 1, &in, 1, out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Unique: sorted is 2, must be 0 or 1");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, x);
	cr_assert_eq(oh_infer("Unique", 11, &axis, 1, &in, 1, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Unique: a scalar has no axis");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x);
	out[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), NULL);
	cr_assert_eq(op_schema_find("", "Unique", 11, &s), 0);
	cr_assert_eq(op_kernel_find(s, 11, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, &in, 1, out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Unique: the input has 3 distinct items, the plan "
			 "expected 2");
}
