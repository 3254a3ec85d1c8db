/*
 * test_ops_reduce.c — the Reduce* operators and ArgMax / ArgMin of
 * kernels/cpu (reduce.c, argmax.c), called as the engine calls them
 * (schema inference, then the host kernel through exec_host_eval) and
 * compared with a naive reference written here: every subset of axes of a
 * 4-D input with and without keepdims, the attribute and input forms of
 * axes, noop_with_empty_axes, empty reductions, integer wrapping, the
 * types each opset takes, NaN, symbolic shapes, the error messages; then
 * small models through the engine with axes as an initializer and as a
 * graph input fed at run time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"
#include "kernels/registry.h"

/* ------------------------------------------------------------------ helpers */

static struct op_tensor tensor(cep_dtype dt, int rank, const int64_t *dims, void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = rank };

	if (rank > 0)
		memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return t;
}

static struct op_attr attr_i(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr attr_ints(const char *name, int n, const int64_t *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INTS, .n = n, .ints = v };
}

/* Deterministic floats in [-2, 2). */
static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 16384.0f - 2.0f;
}

/* ---------------------------------------------------------- the reference */

enum ref_op { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE };

static const char *const ref_names[] = {
	"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
	"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
};

/*
 * Reduces x (dims, rank) over the dims in mask the obvious way: each input
 * element is folded into the output element whose coordinates are its own
 * with the reduced ones set to 0. out has room for the kept elements.
 */
static void ref_reduce(enum ref_op op, const float *x, const int64_t *dims, int rank,
		       const bool *mask, double *out)
{
	int64_t ostride[CEP_MAX_RANK], n_in = 1, n_out = 1, count = 1, s = 1, i;
	int d;

	for (d = rank - 1; d >= 0; d--) {
		ostride[d] = mask[d] ? 0 : s;
		if (!mask[d])
			s *= dims[d];
		n_in *= dims[d];
		if (mask[d])
			count *= dims[d];
		else
			n_out *= dims[d];
	}
	for (i = 0; i < n_out; i++)
		out[i] = op == R_PROD ? 1.0 : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0;
	for (i = 0; i < n_in; i++) {
		int64_t rem = i, o = 0;
		double v = x[i];

		for (d = rank - 1; d >= 0; d--) {
			o += (rem % dims[d]) * ostride[d];
			rem /= dims[d];
		}
		switch (op) {
		case R_SUM: case R_MEAN: case R_LOGSUM: out[o] += v; break;
		case R_MAX: out[o] = v > out[o] ? v : out[o]; break;
		case R_MIN: out[o] = v < out[o] ? v : out[o]; break;
		case R_PROD: out[o] *= v; break;
		case R_L1: out[o] += fabs(v); break;
		case R_L2: case R_SUMSQ: out[o] += v * v; break;
		case R_LSE: out[o] += exp(v); break;
		}
	}
	for (i = 0; i < n_out; i++) {
		switch (op) {
		case R_MEAN: out[i] /= (double)count; break;
		case R_L2: out[i] = sqrt(out[i]); break;
		case R_LOGSUM: case R_LSE: out[i] = log(out[i]); break;
		default: break;
		}
	}
}

/* ------------------------------------------------------------- reductions */

/* Every op, every subset of the axes of a [2, 3, 1, 5] input, both
 * keepdims, through the axes input (opset 18) and the attribute (13). */
Test(ops_reduce, every_axis_subset_matches_the_reference)
{
	enum { N = 2 * 3 * 1 * 5 };
	int64_t dims[4] = { 2, 3, 1, 5 };
	float x[N], xpos[N];
	unsigned seed = 1;
	int op, maskbits, keep, opset, i, d;

	for (i = 0; i < N; i++) {
		x[i] = frand(&seed);
		xpos[i] = fabsf(x[i]) + 0.1f; /* ReduceLogSum wants a positive sum */
	}
	for (op = R_SUM; op <= R_LSE; op++) {
		for (opset = 13; opset <= 18; opset += 5) {
			for (maskbits = 0; maskbits < 16; maskbits++) {
				for (keep = 0; keep <= 1; keep++) {
					bool mask[4];
					int64_t axes[4], n_axes = 0, ad[1];
					double want[N];
					struct op_tensor in[2], out;
					struct op_attr attrs[2];
					int n_attrs = 0, n_in = 1, r = 0;
					const float *src = op == R_LOGSUM ? xpos : x;
					bool by_input = opset >= (op == R_SUM ? 13 : 18);

					for (d = 0; d < 4; d++) {
						mask[d] = maskbits & (1 << d);
						if (mask[d])
							axes[n_axes++] = d - (d & 1) * 4; /* some negative */
					}
					if (n_axes == 0)
						for (d = 0; d < 4; d++)
							mask[d] = true; /* empty axes: all */
					ref_reduce(op, src, dims, 4, mask, want);
					in[0] = tensor(CEP_DTYPE_FLOAT32, 4, dims, (void *)src);
					attrs[n_attrs++] = attr_i("keepdims", keep);
					if (by_input) {
						ad[0] = n_axes;
						in[1] = tensor(CEP_DTYPE_INT64, 1, ad, axes);
						n_in = 2;
					} else if (n_axes) {
						attrs[n_attrs++] = attr_ints("axes", (int)n_axes, axes);
					}
					cr_assert_eq(oh_run(ref_names[op], opset, attrs, n_attrs, in, n_in, &out, 1),
						     0, "%s opset %d mask %d: %s", ref_names[op], opset,
						     maskbits, cep_last_error());
					for (d = 0; d < 4; d++) {
						if (!mask[d])
							cr_assert_eq(out.dims[r++], dims[d]);
						else if (keep)
							cr_assert_eq(out.dims[r++], 1);
					}
					cr_assert_eq(out.rank, r, "%s mask %d keep %d", ref_names[op],
						     maskbits, keep);
					for (i = 0; i < cpu_numel(&out); i++)
						cr_assert_float_eq(((float *)out.data)[i], (float)want[i],
								   1e-4 * (1 + fabs(want[i])),
								   "%s opset %d mask %d keep %d [%d]: %g vs %g",
								   ref_names[op], opset, maskbits, keep, i,
								   ((float *)out.data)[i], want[i]);
					free(out.data);
				}
			}
		}
	}
}

/* A reduction along a long middle axis, large enough that the walk goes
 * through several chunks of each row. */
Test(ops_reduce, long_rows_span_several_chunks)
{
	enum { A = 3, B = 700, C = 2 };
	static float x[A * B * C];
	int64_t dims[3] = { A, B, C }, axes[1] = { 1 }, ad[1] = { 1 }, last[1] = { 2 };
	struct op_tensor in[2], out;
	unsigned seed = 9;
	double want[A * C];
	bool mask[3] = { false, true, false };
	int i;

	for (i = 0; i < A * B * C; i++)
		x[i] = frand(&seed);
	ref_reduce(R_SUM, x, dims, 3, mask, want);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 3, dims, x);
	in[1] = tensor(CEP_DTYPE_INT64, 1, ad, axes);
	cr_assert_eq(oh_run("ReduceSum", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < A * C; i++)
		cr_assert_float_eq(((float *)out.data)[i], (float)want[i], 1e-3);
	free(out.data);
	/* The same data reduced along its contiguous last axis. */
	in[1] = tensor(CEP_DTYPE_INT64, 1, ad, last);
	cr_assert_eq(oh_run("ReduceMax", 18, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < A * B; i++)
		cr_assert_eq(((float *)out.data)[i], fmaxf(x[2 * i], x[2 * i + 1]));
	free(out.data);
}

Test(ops_reduce, keepdims_zero_over_everything_gives_a_scalar)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t dims[2] = { 2, 3 };
	struct op_attr a[1] = { attr_i("keepdims", 0) };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 2, dims, x), out;

	cr_assert_eq(oh_run("ReduceMean", 13, a, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], 3.5f, 1e-6);
	free(out.data);
	/* A scalar input reduces to itself. */
	in = tensor(CEP_DTYPE_FLOAT32, 0, NULL, x + 4);
	cr_assert_eq(oh_run("ReduceSumSquare", 18, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], 25.0f, 1e-6);
	free(out.data);
}

/* noop_with_empty_axes: no reduction, but the elementwise part stays. */
Test(ops_reduce, noop_with_empty_axes_keeps_the_elementwise_part)
{
	float x[4] = { 1, -2, 3, 0.5f };
	int64_t dims[2] = { 2, 2 }, zero[1] = { 0 };
	struct op_attr a[1] = { attr_i("noop_with_empty_axes", 1) };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dims, x),
				   tensor(CEP_DTYPE_INT64, 1, zero, NULL) };
	struct op_tensor out;
	int i;

	/* Absent axes and an empty axes tensor mean the same. */
	for (i = 1; i <= 2; i++) {
		cr_assert_eq(oh_run("ReduceSum", 13, a, 1, in, i, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.rank, 2);
		cr_assert_eq(out.dims[0], 2);
		cr_assert_eq(memcmp(out.data, x, sizeof(x)), 0);
		free(out.data);
	}
	cr_assert_eq(oh_run("ReduceSumSquare", 18, a, 1, in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[1], 4.0f);
	free(out.data);
	cr_assert_eq(oh_run("ReduceL1", 18, a, 1, in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[1], 2.0f);
	free(out.data);
	cr_assert_eq(oh_run("ReduceLogSumExp", 18, a, 1, in, 1, &out, 1), 0);
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(((float *)out.data)[i], x[i], 1e-6);
	free(out.data);
	/* Without the flag, empty axes reduce everything. */
	cr_assert_eq(oh_run("ReduceSum", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[1], 1);
	cr_assert_float_eq(((float *)out.data)[0], 2.5f, 1e-6);
	free(out.data);
}

/* Reducing an empty dimension gives each operator's identity. */
Test(ops_reduce, empty_reductions_give_the_identity)
{
	static const struct { enum ref_op op; float want; } cases[] = {
		{ R_SUM, 0.0f }, { R_PROD, 1.0f }, { R_MAX, -INFINITY }, { R_MIN, INFINITY },
		{ R_L1, 0.0f }, { R_L2, 0.0f }, { R_SUMSQ, 0.0f }, { R_LOGSUM, -INFINITY },
		{ R_LSE, -INFINITY },
	};
	int64_t dims[3] = { 2, 0, 3 }, axes[1] = { 1 }, ad[1] = { 1 };
	float dummy = 0;
	int32_t idummy = 0;
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 3, dims, &dummy),
				   tensor(CEP_DTYPE_INT64, 1, ad, axes) };
	struct op_tensor out;
	size_t c;
	int i;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		cr_assert_eq(oh_run(ref_names[cases[c].op], 18, NULL, 0, in, 2, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[0], 2);
		cr_assert_eq(out.dims[1], 1);
		cr_assert_eq(out.dims[2], 3);
		for (i = 0; i < 6; i++)
			cr_assert_eq(((float *)out.data)[i], cases[c].want, "%s",
				     ref_names[cases[c].op]);
		free(out.data);
	}
	cr_assert_eq(oh_run("ReduceMean", 18, NULL, 0, in, 2, &out, 1), 0);
	cr_assert(isnan(((float *)out.data)[0]), "the mean of nothing is NaN");
	free(out.data);
	in[0] = tensor(CEP_DTYPE_INT32, 3, dims, &idummy);
	cr_assert_eq(oh_run("ReduceMax", 18, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[5], INT32_MIN);
	free(out.data);
	/* An empty kept dimension makes an empty output and no work. */
	dims[0] = 0;
	dims[1] = 4;
	in[0] = tensor(CEP_DTYPE_FLOAT32, 3, dims, &dummy);
	cr_assert_eq(oh_run("ReduceLogSumExp", 18, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
}

Test(ops_reduce, integers_wrap_and_truncate)
{
	int32_t a[3] = { INT32_MAX, 1, 1 }, m[4] = { 7, 0, -7, 0 };
	int64_t d3[1] = { 3 }, d4[2] = { 2, 2 }, ax[1] = { 1 }, ad[1] = { 1 };
	struct op_attr keep0[1] = { attr_i("keepdims", 0) };
	struct op_tensor in[2], out;

	in[0] = tensor(CEP_DTYPE_INT32, 1, d3, a);
	cr_assert_eq(oh_run("ReduceSum", 11, keep0, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[0], INT32_MIN + 1, "int32 sums wrap");
	free(out.data);
	cr_assert_eq(oh_run("ReduceProd", 18, keep0, 1, in, 1, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], INT32_MAX);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_INT32, 2, d4, m);
	in[1] = tensor(CEP_DTYPE_INT64, 1, ad, ax);
	cr_assert_eq(oh_run("ReduceMean", 18, keep0, 1, in, 2, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], 3, "7 / 2 truncates");
	cr_assert_eq(((int32_t *)out.data)[1], -3, "toward zero");
	free(out.data);
	cr_assert_eq(oh_run("ReduceL2", 18, keep0, 1, in, 2, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], 7);
	free(out.data);
}

/* The types each opset's definition allows, and the registry's refusal
 * of the others. */
Test(ops_reduce, types_follow_the_opset)
{
	int8_t s8[4] = { -5, 3, -128, 2 };
	uint8_t b[4] = { 0, 1, 0, 0 }, u8[4] = { 200, 3, 255, 9 };
	int64_t dims[1] = { 4 };
	struct op_attr keep0[1] = { attr_i("keepdims", 0) };
	struct op_tensor in, out;

	in = tensor(CEP_DTYPE_INT8, 1, dims, s8);
	cr_assert_eq(oh_run("ReduceMax", 11, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "dtype int8 is not supported"), "%s", cep_last_error());
	cr_assert_eq(oh_run("ReduceMin", 12, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((int8_t *)out.data)[0], -128);
	free(out.data);
	in = tensor(CEP_DTYPE_UINT8, 1, dims, u8);
	cr_assert_eq(oh_run("ReduceMax", 13, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 255);
	free(out.data);
	in = tensor(CEP_DTYPE_BOOL, 1, dims, b);
	cr_assert_eq(oh_run("ReduceMax", 18, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("ReduceMax", 20, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 1, "any");
	free(out.data);
	cr_assert_eq(oh_run("ReduceMin", 20, keep0, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 0, "all");
	free(out.data);
	cr_assert_eq(oh_run("ReduceSum", 20, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	/* The logs lost their integer types at 28. */
	in = tensor(CEP_DTYPE_INT8, 1, dims, s8);
	cr_assert_eq(oh_run("ReduceLogSum", 18, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("ReduceL1", 18, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	in = tensor(CEP_DTYPE_INT32, 1, dims, (int32_t[4]){ 1, 2, 3, 1 });
	cr_assert_eq(oh_run("ReduceLogSum", 18, keep0, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], 1, "log(7) truncated");
	free(out.data);
	cr_assert_eq(oh_run("ReduceLogSumExp", 28, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "int32"), "%s", cep_last_error());
	/* Opset 1's ReduceSum, axes an attribute, took int32 too. */
	cr_assert_eq(oh_run("ReduceSum", 1, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[0], 7);
	free(out.data);
}

Test(ops_reduce, half_types_compute_in_float)
{
	uint16_t h[300], bf[300];
	int64_t dims[1] = { 300 };
	struct op_attr keep0[1] = { attr_i("keepdims", 0) };
	struct op_tensor in, out;
	int i;

	/* 300 x 0.1 in float16 sums past what float16 can accumulate exactly. */
	for (i = 0; i < 300; i++) {
		h[i] = cpu_f32_to_f16(0.1f);
		bf[i] = cpu_f32_to_bf16(-0.25f);
	}
	in = tensor(CEP_DTYPE_FLOAT16, 1, dims, h);
	cr_assert_eq(oh_run("ReduceSum", 13, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(cpu_f16_to_f32(((uint16_t *)out.data)[0]),
			   300 * cpu_f16_to_f32(cpu_f32_to_f16(0.1f)), 0.05);
	free(out.data);
	in = tensor(CEP_DTYPE_BFLOAT16, 1, dims, bf);
	cr_assert_eq(oh_run("ReduceMean", 12, keep0, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED,
		     "bfloat16 arrived at 13");
	cr_assert_eq(oh_run("ReduceMean", 13, keep0, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[0]), -0.25f);
	free(out.data);
}

Test(ops_reduce, nan_wins_max_and_min)
{
	float x[4] = { 1, NAN, 5, -1 };
	int64_t dims[1] = { 4 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, dims, x), out;

	cr_assert_eq(oh_run("ReduceMax", 13, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert(isnan(((float *)out.data)[0]));
	free(out.data);
	cr_assert_eq(oh_run("ReduceMin", 13, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert(isnan(((float *)out.data)[0]));
	free(out.data);
	x[1] = INFINITY;
	cr_assert_eq(oh_run("ReduceLogSumExp", 13, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[0], INFINITY);
	free(out.data);
}

Test(ops_reduce, bad_axes_are_refused_with_a_message)
{
	float x[6] = { 0 };
	int64_t dims[2] = { 2, 3 }, twice[2] = { 1, -1 }, far[1] = { 2 }, d2[1] = { 2 }, d1[1] = { 1 };
	int32_t ax32[1] = { 0 };
	struct op_attr attr_twice[1] = { attr_ints("axes", 2, twice) };
	struct op_attr attr_far[1] = { attr_ints("axes", 1, far) };
	struct op_attr keep_float[1] = { { .name = "keepdims", .type = OP_ATTR_FLOAT, .f = 1 } };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dims, x) };
	struct op_tensor out;

	cr_assert_eq(oh_run("ReduceMean", 11, attr_twice, 1, in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "ReduceMean: axis 1 appears twice"), "%s", cep_last_error());
	cr_assert_eq(oh_run("ReduceMax", 11, attr_far, 1, in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "ReduceMax: axis 2 is out of range for rank 2"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("ReduceMax", 18, attr_far, 1, in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "axes is an input"), "%s", cep_last_error());
	cr_assert_eq(oh_run("ReduceMax", 18, keep_float, 1, in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "keepdims"), "%s", cep_last_error());
	in[1] = tensor(CEP_DTYPE_INT64, 1, d2, twice);
	cr_assert_eq(oh_run("ReduceSum", 13, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	in[1] = tensor(CEP_DTYPE_INT64, 1, d1, far);
	cr_assert_eq(oh_run("ReduceL1", 18, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "ReduceL1: axis 2 is out of range"), "%s", cep_last_error());
	in[1] = tensor(CEP_DTYPE_INT32, 1, d1, ax32);
	cr_assert_eq(oh_run("ReduceSum", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "axes must be int64, not int32"), "%s", cep_last_error());
}

/* The run checks axes again: data it sees may differ from inference's. */
Test(ops_reduce, the_kernel_checks_axes_it_reads)
{
	float x[6] = { 0 };
	int64_t dims[2] = { 2, 3 }, ok[1] = { 1 }, bad[1] = { 5 }, d1[1] = { 1 };
	const struct op_node node = { "t", "ReduceSum", "", 13, 0, NULL };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dims, x),
				   tensor(CEP_DTYPE_INT64, 1, d1, ok) };
	struct op_tensor out;
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(oh_infer("ReduceSum", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(op_schema_find("", "ReduceSum", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	in[1].data = bad;
	cr_assert_eq(exec_host_eval(&node, k, in, 2, &out, 1), CEP_EINVAL);
	cr_assert(strstr(cep_last_error(), "axis 5 is out of range"), "%s", cep_last_error());
	/* Axes that name another dimension than the plan's. */
	bad[0] = 0;
	cr_assert_eq(exec_host_eval(&node, k, in, 2, &out, 1), CEP_ESHAPE);
}

/* Symbolic dims pass through; axes known only later leave what is known. */
Test(ops_reduce, inference_keeps_symbols)
{
	int64_t dims[3] = { OP_DIM_SYM(0), 1, OP_DIM_SYM(1) }, axes[1] = { -1 }, d1[1] = { 1 };
	struct op_attr keep0[1] = { attr_i("keepdims", 0) };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 3, dims, NULL),
				   tensor(CEP_DTYPE_INT64, 1, d1, axes) };
	struct op_tensor out;

	cr_assert_eq(oh_infer("ReduceMean", 18, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[2], 1);
	cr_assert_eq(oh_infer("ReduceMean", 18, keep0, 1, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], 1);
	/* The axes' value unknown: with keepdims the rank stays and 1 stays 1. */
	in[1].data = NULL;
	cr_assert_eq(oh_infer("ReduceMean", 18, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[1], 1);
	/* Without keepdims the count of axes still gives the rank. */
	cr_assert_eq(oh_infer("ReduceMean", 18, keep0, 1, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 2);
	in[1].dims[0] = OP_DIM_SYM(2);
	cr_assert_eq(oh_infer("ReduceMean", 18, keep0, 1, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, -1);
	in[0].rank = -1;
	cr_assert_eq(oh_infer("ReduceSum", 13, NULL, 0, in, 1, &out, 1), 0);
	cr_assert_eq(out.rank, -1);
}

/* ------------------------------------------------------------ ArgMax, ArgMin */

Test(ops_reduce, argmax_along_each_axis)
{
	/* [2, 3, 2] */
	float x[12] = { 1, 9, 4, 2, 7, 2,   0, 0, -3, 5, 8, 5 };
	int64_t dims[3] = { 2, 3, 2 };
	struct op_attr a[2] = { attr_i("axis", 1), attr_i("keepdims", 0) };
	struct op_attr a_last[2] = { attr_i("axis", -1), attr_i("select_last_index", 1) };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 3, dims, x), out;
	const int64_t *o;

	cr_assert_eq(oh_run("ArgMax", 13, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out.rank, 2);
	o = out.data;
	cr_assert_eq(o[0], 2); /* 1, 4, 7 */
	cr_assert_eq(o[1], 0); /* 9, 2, 2 */
	cr_assert_eq(o[2], 2); /* 0, -3, 8 */
	cr_assert_eq(o[3], 1); /* 0, 5, 5: the first of equals */
	free(out.data);
	cr_assert_eq(oh_run("ArgMin", 13, a, 2, &in, 1, &out, 1), 0);
	o = out.data;
	cr_assert_eq(o[1], 1, "the first 2");
	cr_assert_eq(o[3], 0);
	free(out.data);
	cr_assert_eq(oh_run("ArgMin", 12, a_last, 2, &in, 1, &out, 1), 0);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[2], 1);
	o = out.data;
	cr_assert_eq(o[3], 1, "0, 0 at the last axis: the last of equals");
	cr_assert_eq(o[5], 1);
	free(out.data);
	/* Before 12 there is no select_last_index; it is ignored. */
	cr_assert_eq(oh_run("ArgMin", 11, a_last, 2, &in, 1, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[3], 0);
	free(out.data);
	/* The default axis is 0. */
	cr_assert_eq(oh_run("ArgMax", 7, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(((int64_t *)out.data)[2], 0);
	cr_assert_eq(((int64_t *)out.data)[3], 1);
	free(out.data);
}

Test(ops_reduce, argmax_long_rows_integers_and_nan)
{
	static int64_t big[1000];
	static float f[3 * 400];
	int64_t dims[1] = { 1000 }, d2[2] = { 3, 400 };
	struct op_attr last[1] = { attr_i("select_last_index", 1) };
	struct op_attr col[1] = { attr_i("axis", 0) };
	struct op_tensor in, out;
	int i;

	for (i = 0; i < 1000; i++)
		big[i] = INT64_MAX - 1000 + (i % 300);
	in = tensor(CEP_DTYPE_INT64, 1, dims, big);
	cr_assert_eq(oh_run("ArgMax", 13, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[0], 299, "exact in int64, not via double");
	free(out.data);
	cr_assert_eq(oh_run("ArgMax", 13, last, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[0], 899);
	free(out.data);
	for (i = 0; i < 3 * 400; i++)
		f[i] = (float)(i % 400);
	f[400 + 7] = NAN;
	f[800 + 9] = 1e9f;
	in = tensor(CEP_DTYPE_FLOAT32, 2, d2, f);
	cr_assert_eq(oh_run("ArgMax", 13, col, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[7], 1, "NaN wins");
	cr_assert_eq(((int64_t *)out.data)[9], 2);
	cr_assert_eq(((int64_t *)out.data)[10], 0, "ties keep the first");
	free(out.data);
	cr_assert_eq(oh_run("ArgMin", 13, col, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[7], 1, "NaN wins ArgMin too");
	free(out.data);
}

Test(ops_reduce, argmax_refuses_what_it_cannot_answer)
{
	float x[1] = { 0 };
	uint16_t h[2] = { 0, 0 };
	int64_t dims[2] = { 2, 0 }, d1[1] = { 2 };
	struct op_attr ax1[1] = { attr_i("axis", 1) }, ax5[1] = { attr_i("axis", 5) };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 2, dims, x), out;

	cr_assert_eq(oh_run("ArgMax", 13, ax1, 1, &in, 1, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "ArgMax: dimension 1 (the axis) is empty"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("ArgMin", 13, ax5, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "ArgMin: axis 5 is out of range"), "%s", cep_last_error());
	in = tensor(CEP_DTYPE_BFLOAT16, 1, d1, h);
	cr_assert_eq(oh_run("ArgMax", 12, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("ArgMax", 13, NULL, 0, &in, 1, &out, 1), 0);
	free(out.data);
}

/* ----------------------------------------------------------------- engine */

static engine_session *session_open(uint8_t *buf, size_t len, struct backend **be,
				    engine_model **m)
{
	engine_session *s = NULL;

	cr_assert_eq(engine_model_load(buf, len, -1, m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, be), 0);
	cr_assert_eq(engine_session_new(*m, *be, NULL, &s), 0, "%s", cep_last_error());
	return s;
}

/* ReduceMean at 18 with its axes an initializer, a symbolic batch and a
 * second plan for another batch size; ArgMax after it. */
Test(ops_reduce, engine_runs_axes_from_an_initializer)
{
	struct onnxb *b = onnxb_new(18);
	int64_t axes[1] = { -1 }, dims[3] = { 2, 3, 4 };
	float x[2 * 3 * 4], y[6];
	int64_t idx[2];
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 3, dims, x, sizeof(x) };
	struct engine_output out[2] = { { .name = "y", .data = y, .capacity = sizeof(y) },
					{ .name = "i", .data = idx, .capacity = sizeof(idx) } };
	Onnx__NodeProto *arg;
	struct backend *be;
	engine_model *m;
	engine_session *s;
	size_t len;
	uint8_t *buf;
	int i, k;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "i", CEP_DTYPE_INT64, "batch");
	onnxb_init(b, "axes", CEP_DTYPE_INT64, "1", axes);
	onnxb_attr_int(onnxb_node(b, "ReduceMean", "x,axes", "y"), "keepdims", 0);
	arg = onnxb_node(b, "ArgMax", "y", "i");
	onnxb_attr_int(arg, "axis", 1);
	onnxb_attr_int(arg, "keepdims", 0);
	buf = onnxb_finish(b, &len);
	s = session_open(buf, len, &be, &m);
	for (i = 0; i < 24; i++)
		x[i] = (float)((i * 7) % 11);
	cr_assert_eq(eu_run(s, &in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 2);
	cr_assert_eq(out[0].dims[0], 2);
	cr_assert_eq(out[1].dims[0], 2);
	for (i = 0; i < 6; i++) {
		float want = 0;

		for (k = 0; k < 4; k++)
			want += x[i * 4 + k] / 4;
		cr_assert_float_eq(y[i], want, 1e-5);
	}
	for (i = 0; i < 2; i++) {
		int best = 0;

		for (k = 1; k < 3; k++)
			best = y[i * 3 + k] > y[i * 3 + best] ? k : best;
		cr_assert_eq(idx[i], best);
	}
	/* Another batch size: another plan. */
	dims[0] = 1;
	in.bytes = sizeof(float) * 12;
	cr_assert_eq(eu_run(s, &in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], 1);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* Axes the model takes as a graph input, fed at run time: each value
 * gets its own plan, and the kernel reduces what the run says. */
Test(ops_reduce, engine_runs_axes_fed_at_run_time)
{
	struct onnxb *b = onnxb_new(18);
	int64_t dims[2] = { 2, 3 }, adims[1] = { 1 }, axes[1] = { 0 };
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6];
	struct engine_input in[2] = { { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
				      { "axes", CEP_DTYPE_INT64, 1, adims, axes, sizeof(axes) } };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	size_t len;
	uint8_t *buf;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_input(b, "axes", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "ReduceMax", "x,axes", "y");
	buf = onnxb_finish(b, &len);
	s = session_open(buf, len, &be, &m);
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_eq(y[2], 6.0f);
	axes[0] = -1;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 1);
	cr_assert_eq(y[0], 3.0f);
	cr_assert_eq(y[1], 6.0f);
	axes[0] = 2;
	cr_assert_neq(eu_run(s, in, 2, &out, 1), 0);
	cr_assert(strstr(cep_last_error(), "ReduceMax: axis 2 is out of range for rank 2"), "%s",
		  cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
