/*
 * test_ops_topk.c — TopK of kernels/cpu/topk.c, called the way the engine
 * calls it (schema inference, then the host kernel through
 * exec_host_eval): the conformance example worked out by hand, ties going
 * to the lower index first, NaN larger than any number, every axis of a
 * 3-D input and every k against a selection written here, long columns
 * full of ties, each opset's form of k (attribute, input) and attributes
 * (largest and sorted from 11), the types each opset takes, the errors (k
 * too large or negative, K of another type or shape, an axis out of
 * range, a k the plan did not expect), inference with an unknown k and
 * symbols, and models whose k is fed at run time or whose indices are
 * left out.
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

/* Runs TopK at opset 11 (axis, largest) over x with k into out[0..1]. */
static int topk(struct op_tensor x, int64_t k, int64_t axis, int largest, struct op_tensor *out)
{
	struct op_attr a[2] = { oh_int("axis", axis), oh_int("largest", largest) };
	struct op_tensor in[2] = { x, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &k) };

	return oh_run("TopK", 11, a, 2, in, 2, out, 2);
}

static void outs_free(struct op_tensor *out)
{
	free(out[0].data);
	free(out[1].data);
}

/* The conformance case test_top_k: a 3 x 4 matrix, k 3 along axis 1. */
Test(ops_topk, the_conformance_example_by_hand)
{
	float x[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	static const float want_v[9] = { 3, 2, 1, 7, 6, 5, 11, 10, 9 };
	static const float want_small[9] = { 0, 1, 2, 4, 5, 6, 8, 9, 10 };
	static const int64_t want_i[9] = { 3, 2, 1, 3, 2, 1, 3, 2, 1 };
	struct op_tensor out[2];
	int i;

	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 4), x), 3, 1, 1, out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out[0].dims[1], 3);
	cr_assert_eq(out[1].dims[1], 3);
	for (i = 0; i < 9; i++) {
		cr_assert_eq(((float *)out[0].data)[i], want_v[i]);
		cr_assert_eq(((int64_t *)out[1].data)[i], want_i[i]);
	}
	outs_free(out);
	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 4), x), 3, -1, 0, out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 9; i++) {
		cr_assert_eq(((float *)out[0].data)[i], want_small[i]);
		cr_assert_eq(((int64_t *)out[1].data)[i], i % 3);
	}
	outs_free(out);
}

/* "Given two equivalent values, ... the element with the lower index will
 * appear first", for the largest and the smallest alike. */
Test(ops_topk, ties_go_to_the_lower_index)
{
	int64_t x[6] = { 1, 3, 3, 2, 3, 1 };
	static const int64_t large_v[4] = { 3, 3, 3, 2 }, large_i[4] = { 1, 2, 4, 3 };
	static const int64_t small_v[4] = { 1, 1, 2, 3 }, small_i[4] = { 0, 5, 3, 1 };
	struct op_tensor out[2];
	int i;

	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_INT64, 1, DIMS(6), x), 4, 0, 1, out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 4; i++) {
		cr_assert_eq(((int64_t *)out[0].data)[i], large_v[i]);
		cr_assert_eq(((int64_t *)out[1].data)[i], large_i[i]);
	}
	outs_free(out);
	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_INT64, 1, DIMS(6), x), 4, 0, 0, out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 4; i++) {
		cr_assert_eq(((int64_t *)out[0].data)[i], small_v[i]);
		cr_assert_eq(((int64_t *)out[1].data)[i], small_i[i]);
	}
	outs_free(out);
}

/* NaN is larger than every number: first among the largest (in index
 * order), last among the smallest; -0 and 0 tie. */
Test(ops_topk, nan_is_the_largest)
{
	float x[6] = { 1.0f, NAN, -INFINITY, NAN, 0.0f, -0.0f };
	static const int64_t large_i[6] = { 1, 3, 0, 4, 5, 2 }, small_i[6] = { 2, 4, 5, 0, 1, 3 };
	struct op_tensor out[2];
	int i;

	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x), 6, 0, 1, out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int64_t *)out[1].data)[i], large_i[i], "largest %d", i);
	cr_assert(isnan(((float *)out[0].data)[0]) && isnan(((float *)out[0].data)[1]));
	outs_free(out);
	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(6), x), 6, 0, 0, out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int64_t *)out[1].data)[i], small_i[i], "smallest %d", i);
	outs_free(out);
}

/* ----------------------------------------------------------- reference */

/* Whether a (at position ia) goes before b: the order the operator sorts
 * by, NaN above everything, ties to the lower position. */
static bool ref_before(double a, int64_t ia, double b, int64_t ib, bool largest)
{
	if (isnan(a) || isnan(b)) {
		if (isnan(a) && isnan(b))
			return ia < ib;
		return largest ? isnan(a) : isnan(b);
	}
	if (a != b)
		return largest ? a > b : a < b;
	return ia < ib;
}

/* Selection: k times, the first element not yet taken that nothing left
 * goes before. x is (outer, n, inner); vals and idx (outer, k, inner). */
static void ref_topk(const double *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
		     bool largest, double *vals, int64_t *idx)
{
	bool taken[64];
	int64_t o, j, r, m, best;

	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			memset(taken, 0, sizeof(taken));
			for (r = 0; r < k; r++) {
				best = -1;
				for (m = 0; m < n; m++) {
					double v = x[(o * n + m) * inner + j];

					if (!taken[m] && (best < 0 ||
							  ref_before(v, m, x[(o * n + best) * inner + j],
								     best, largest)))
						best = m;
				}
				taken[best] = true;
				vals[(o * k + r) * inner + j] = x[(o * n + best) * inner + j];
				idx[(o * k + r) * inner + j] = best;
			}
		}
	}
}

/* Every axis of a [3, 4, 5] input with repeated values, every k, both
 * directions, every type of opset 24. */
Test(ops_topk, every_axis_and_k_matches_a_selection)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	const int64_t dims[3] = { 3, 4, 5 };
	unsigned char xbuf[60 * 8];
	double xd[60], vals[60];
	int64_t idx[60], k, e;
	int t, a, largest, checked = 0;

	for (t = 0; t < 7; t++) {
		for (e = 0; e < 60; e++) {
			xd[e] = (double)((e * 7 + e / 5) % 9);
			if (cpu_is_float(types[t]))
				xd[e] = xd[e] / 4 - 1;
			cpu_store_f(xbuf, types[t], e, (float)xd[e]);
		}
		for (a = -3; a < 3; a++) {
			int ax = a < 0 ? a + 3 : a;
			int64_t outer = 1, inner = 1, n = dims[ax];
			int d;

			for (d = 0; d < ax; d++)
				outer *= dims[d];
			for (d = ax + 1; d < 3; d++)
				inner *= dims[d];
			for (k = 0; k <= n; k++) {
				for (largest = 0; largest < 2; largest++) {
					struct op_attr at[3] = { oh_int("axis", a),
								 oh_int("largest", largest),
								 oh_int("sorted", k % 2) };
					struct op_tensor in[2] = {
						oh_tensor(types[t], 3, dims, xbuf),
						oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &k),
					}, out[2];

					cr_assert_eq(oh_run("TopK", 24, at, 3, in, 2, out, 2), 0, "%s",
						     cep_last_error());
					cr_assert_eq(out[0].dims[ax], k);
					ref_topk(xd, outer, n, inner, k, largest, vals, idx);
					for (e = 0; e < outer * k * inner; e++) {
						cr_assert_eq(((int64_t *)out[1].data)[e], idx[e],
							     "%s axis %d k %lld largest %d element %lld",
							     cep_dtype_name(types[t]), a, (long long)k,
							     largest, (long long)e);
						cr_assert_eq(cpu_load_f(out[0].data, types[t], e),
							     (float)vals[e]);
					}
					outs_free(out);
					checked++;
				}
			}
		}
	}
	cr_assert_eq(checked, 7 * 2 * 2 * (6 + 5 + 4));
}

/* Columns of 3000 elements with many ties, across the middle axis. */
Test(ops_topk, long_columns_with_ties)
{
	enum { N = 3000, INNER = 3, K = 50 };
	static int32_t x[N * INNER];
	static double xd[N * INNER];
	struct op_tensor out[2];
	int i;

	/* Too long for ref_topk's marks: each result is checked by its order
	 * statistic instead. */
	for (i = 0; i < N * INNER; i++) {
		x[i] = (int32_t)((i * 2654435761u) % 97);
		xd[i] = x[i];
	}
	cr_assert_eq(topk(oh_tensor(CEP_DTYPE_INT32, 2, DIMS(N, INNER), x), K, 0, 1, out), 0,
		     "%s", cep_last_error());
	for (i = 0; i < K * INNER; i++) {
		int64_t m = ((int64_t *)out[1].data)[i], j = i % INNER, before = 0, q;

		/* Exactly (its place) elements of its column go before it. */
		for (q = 0; q < N; q++)
			before += q != m && ref_before(xd[q * INNER + j], q, xd[m * INNER + j], m, true);
		cr_assert_eq(before, i / INNER, "place %d of column %lld", i / INNER, (long long)j);
		cr_assert_eq(((int32_t *)out[0].data)[i], x[m * INNER + j]);
	}
	outs_free(out);
}

/* ---------------------------------------------------------- the opsets */

/* Opset 1 takes k as an attribute, 10 as an input; neither knows largest,
 * so a stray largest = 0 is ignored there. */
Test(ops_topk, each_opset_form_of_k)
{
	float x[5] = { 5, 1, 4, 2, 3 };
	int64_t k = 2;
	struct op_attr a1[2] = { oh_int("k", 2), oh_int("largest", 0) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(5), x),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &k) }, out[2];

	cr_assert_eq(oh_run("TopK", 1, a1, 2, in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out[0].data)[0], 5.0f);
	cr_assert_eq(((int64_t *)out[1].data)[1], 2);
	outs_free(out);
	cr_assert_eq(oh_run("TopK", 10, &a1[1], 1, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out[0].data)[1], 4.0f);
	outs_free(out);
	cr_assert_eq(oh_run("TopK", 11, &a1[1], 1, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out[0].data)[0], 1.0f);
	cr_assert_eq(((float *)out[0].data)[1], 2.0f);
	outs_free(out);
	/* A scalar K is taken like the 1-D one of the specification. */
	in[1].rank = 0;
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, out, 2), 0, "%s", cep_last_error());
	outs_free(out);
	/* Without an attribute k, opset 1 has none. */
	cr_assert_eq(oh_run("TopK", 9, &a1[1], 1, in, 1, out, 2), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "TopK: the k attribute is required before opset 10");
}

Test(ops_topk, types_follow_the_opset)
{
	int32_t x[2] = { 1, 2 };
	uint16_t bf[2] = { 0x3f80, 0x4000 };
	uint8_t b[2] = { 0, 1 };
	int64_t k = 1;
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), x),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &k) }, out[2];

	cr_assert_eq(oh_run("TopK", 10, NULL, 0, in, 2, out, 2), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "TopK: dtype int32 is not supported") != NULL, "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out[0].data)[0], 2);
	outs_free(out);
	in[0] = oh_tensor(CEP_DTYPE_BFLOAT16, 1, DIMS(2), bf);
	cr_assert_eq(oh_run("TopK", 23, NULL, 0, in, 2, out, 2), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("TopK", 24, NULL, 0, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out[0].data)[0], 0x4000);
	outs_free(out);
	in[0] = oh_tensor(CEP_DTYPE_BOOL, 1, DIMS(2), b);
	cr_assert_eq(oh_run("TopK", 24, NULL, 0, in, 2, out, 2), CEP_EUNSUPPORTED);
}

/* ----------------------------------------------------------------- errors */

Test(ops_topk, bad_k_and_axes_are_refused_with_a_message)
{
	float x[8] = { 0 };
	int32_t k32 = 1;
	int64_t k2[2] = { 1, 1 };
	struct op_tensor xt = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 4), x), out[2], in[2];
	struct op_attr neg = oh_int("k", -1);

	cr_assert_eq(topk(xt, 5, 1, 1, out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "TopK: k is 5, more than the 4 elements along axis 1");
	cr_assert_eq(topk(xt, 3, 0, 1, out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "TopK: k is 3, more than the 2 elements along axis 0");
	cr_assert_eq(topk(xt, -1, 1, 1, out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "TopK: k is -1, it must not be negative");
	cr_assert_eq(topk(xt, 1, 2, 1, out), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "TopK") != NULL, "%s", cep_last_error());
	cr_assert_eq(oh_run("TopK", 1, &neg, 1, &xt, 1, out, 2), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "TopK: k is -1, it must not be negative");
	in[0] = xt;
	in[1] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(1), &k32);
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, out, 2), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "TopK: K is int32, not int64");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), k2);
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, out, 2), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "TopK: K must hold one value, it has 2 elements in rank 1");
	/* A scalar input has no axis. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, x);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), k2);
	cr_assert_eq(oh_run("TopK", 11, NULL, 0, in, 2, out, 2), CEP_EMODEL);
}

/* A k other than the plan's, read when the kernel runs, fails it. */
Test(ops_topk, the_kernel_checks_k_against_the_plan)
{
	const struct op_node node = { "t", "TopK", "", 11, 0, NULL };
	float x[4] = { 1, 2, 3, 4 };
	int64_t k = 2;
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), x),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &k) };
	struct op_tensor out[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), NULL),
				    oh_tensor(CEP_DTYPE_INT64, 1, DIMS(3), NULL) };
	const struct op_schema *s;
	const struct op_kernel *kern;

	cr_assert_eq(op_schema_find("", "TopK", 11, &s), 0);
	cr_assert_eq(op_kernel_find(s, 11, BACKEND_HOST, CEP_DTYPE_FLOAT32, &kern), 0);
	cr_assert_eq(exec_host_eval(&node, kern, in, 2, out, 2), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "TopK: k is 2, the plan expected 3");
}

Test(ops_topk, inference_with_an_unknown_k_and_symbols)
{
	struct op_attr a = oh_int("axis", 0);
	int64_t k = 2;
	struct op_tensor in[2] = {
		oh_tensor(CEP_DTYPE_FLOAT16, 2, DIMS(OP_DIM_SYM(0), 6), NULL),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), NULL),
	}, out[2];

	cr_assert_eq(oh_infer("TopK", 11, NULL, 0, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out[0].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[0].dims[1], OP_DIM_UNKNOWN);
	cr_assert_eq(out[1].dims[1], OP_DIM_UNKNOWN);
	in[1].data = &k;
	cr_assert_eq(oh_infer("TopK", 11, NULL, 0, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dims[1], 2);
	/* Along a symbolic axis, k is taken as it is (the kernel checks). */
	cr_assert_eq(oh_infer("TopK", 11, &a, 1, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(out[0].dims[1], 6);
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

/* K a graph input, fed at run time: the planner reads it for the shape,
 * and each k gets its plan. */
Test(ops_topk, engine_runs_a_k_fed_at_run_time)
{
	struct onnxb *b = onnxb_new(11);
	int64_t dims[2] = { 2, 4 }, kd[1] = { 1 }, k = 1, idx[8];
	float x[8] = { 3, 1, 4, 1, 5, 9, 2, 6 }, v[8];
	struct engine_input in[2] = { { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
				      { "k", CEP_DTYPE_INT64, 1, kd, &k, sizeof(k) } };
	struct engine_output out[2] = { { .name = "v", .data = v, .capacity = sizeof(v) },
					{ .name = "i", .data = idx, .capacity = sizeof(idx) } };
	struct backend *be;
	engine_model *m;
	engine_session *s;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,4");
	onnxb_input(b, "k", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "v", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "i", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "TopK", "x,k", "v,i");
	s = session_open(b, &be, &m);
	cr_assert_eq(eu_run(s, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[1], 1);
	cr_assert_eq(v[0], 4.0f);
	cr_assert_eq(v[1], 9.0f);
	cr_assert_eq(idx[1], 1);
	k = 3;
	cr_assert_eq(eu_run(s, in, 2, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dims[1], 3);
	cr_assert_eq(v[2], 1.0f);
	cr_assert_eq(idx[2], 1); /* the first of the two 1s */
	cr_assert_eq(v[5], 5.0f);
	k = 5;
	cr_assert_neq(eu_run(s, in, 2, out, 2), 0);
	cr_assert(strstr(cep_last_error(), "TopK: k is 5, more than the 4 elements along axis 1"),
		  "%s", cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* A model that names only the values (k an initializer). */
Test(ops_topk, engine_runs_without_the_indices)
{
	struct onnxb *b = onnxb_new(24);
	int64_t dims[1] = { 5 }, k = 2;
	int32_t x[5] = { 7, -3, 7, 0, 2 }, v[2];
	struct engine_input in = { "x", CEP_DTYPE_INT32, 1, dims, x, sizeof(x) };
	struct engine_output out = { .name = "v", .data = v, .capacity = sizeof(v) };
	struct backend *be;
	engine_model *m;
	engine_session *s;

	onnxb_input(b, "x", CEP_DTYPE_INT32, "5");
	onnxb_init(b, "k", CEP_DTYPE_INT64, "1", &k);
	onnxb_output(b, "v", CEP_DTYPE_INT32, "2");
	onnxb_attr_int(onnxb_node(b, "TopK", "x,k", "v"), "largest", 0);
	s = session_open(b, &be, &m);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(v[0], -3);
	cr_assert_eq(v[1], 0);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
