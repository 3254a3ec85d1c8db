/*
 * test_kernels.c — the reference kernels of kernels/cpu, each called the
 * way the engine calls it (schema inference, then the host kernel through
 * exec_host_eval) and compared with values worked out here: broadcasting
 * arithmetic and its integer wrapping, batched MatMul, Gemm with every
 * option, both Softmax semantics, Transpose, Gather, Concat, Cast, the
 * shape-only operators, and the float16 / bfloat16 conversions (every
 * float16 value round-trips).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/exec.h"
#include "kernels/registry.h"

static struct op_tensor tensor(cep_dtype dt, int rank, const int64_t *dims, void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = rank };

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return t;
}

/* Infers and runs op on in; out[0..n_out) get their shapes and freshly
 * allocated data (free() them). Returns the first error. */
static int op_run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
		  const struct op_tensor *in, int n_in, struct op_tensor *out, int n_out)
{
	const struct op_node node = { "t", op, "", opset, n_attrs, attrs };
	struct op_infer x = { &node, n_in, n_out, in, out };
	const struct op_schema *s;
	const struct op_kernel *k;
	int ret;

	ret = op_schema_find("", op, opset, &s);
	if (ret < 0)
		return ret;
	memset(out, 0, sizeof(*out) * (size_t)n_out);
	ret = s->infer(&x);
	if (ret < 0)
		return ret;
	ret = op_kernel_find(s, opset, BACKEND_HOST, op_kernel_dtype(s, in, n_in, out, n_out), &k);
	if (ret < 0)
		return ret;
	return exec_host_eval(&node, k, in, n_in, out, n_out);
}

static struct op_attr attr_i(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr attr_f(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static struct op_attr attr_ints(const char *name, int n, const int64_t *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INTS, .n = n, .ints = v };
}

/* ------------------------------------------------------------- arithmetic */

Test(kernels, add_broadcasts_like_numpy)
{
	float a[6] = { 0, 1, 2, 3, 4, 5 }, b[4] = { 10, 20, 30, 40 };
	int64_t da[3] = { 2, 3, 1 }, db[2] = { 1, 4 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 3, da, a),
				   tensor(CEP_DTYPE_FLOAT32, 2, db, b) };
	struct op_tensor out;
	const float *o;
	int i, j, k;

	cr_assert_eq(op_run("Add", 14, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_eq(out.dims[2], 4);
	o = out.data;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < 4; k++)
				cr_assert_eq(o[(i * 3 + j) * 4 + k], a[i * 3 + j] + b[k]);
	free(out.data);
}

Test(kernels, integer_arithmetic_wraps_and_divides_safely)
{
	int32_t a[3] = { INT32_MAX, 7, -7 }, b[3] = { -1, 2, 2 };
	int64_t c[3] = { INT64_MIN, 5, -9 }, d[3] = { -1, 0, 4 };
	int64_t dims[1] = { 3 };
	struct op_tensor in32[2] = { tensor(CEP_DTYPE_INT32, 1, dims, a),
				     tensor(CEP_DTYPE_INT32, 1, dims, b) };
	struct op_tensor in64[2] = { tensor(CEP_DTYPE_INT64, 1, dims, c),
				     tensor(CEP_DTYPE_INT64, 1, dims, d) };
	struct op_tensor out;

	cr_assert_eq(op_run("Sub", 14, NULL, 0, in32, 2, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], INT32_MIN);
	cr_assert_eq(((int32_t *)out.data)[1], 5);
	free(out.data);
	cr_assert_eq(op_run("Div", 14, NULL, 0, in32, 2, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[1], 3);
	cr_assert_eq(((int32_t *)out.data)[2], -3, "truncation toward zero");
	free(out.data);
	cr_assert_eq(op_run("Div", 14, NULL, 0, in64, 2, &out, 1), 0);
	cr_assert_eq(((int64_t *)out.data)[0], INT64_MIN);
	cr_assert_eq(((int64_t *)out.data)[1], 0, "division by zero gives 0");
	cr_assert_eq(((int64_t *)out.data)[2], -2);
	free(out.data);
}

Test(kernels, half_types_compute_in_float32)
{
	uint16_t a[3], b[3];
	float fa[3] = { 1.0f / 3, -2.5f, 1000.0f }, fb[3] = { 3.0f, 0.5f, 1000.0f };
	int64_t dims[1] = { 3 };
	struct op_tensor in[2];
	struct op_tensor out;
	int i;

	for (i = 0; i < 3; i++) {
		a[i] = cpu_f32_to_bf16(fa[i]);
		b[i] = cpu_f32_to_bf16(fb[i]);
	}
	in[0] = tensor(CEP_DTYPE_BFLOAT16, 1, dims, a);
	in[1] = tensor(CEP_DTYPE_BFLOAT16, 1, dims, b);
	cr_assert_eq(op_run("Mul", 14, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	for (i = 0; i < 3; i++) {
		float want = cpu_bf16_to_f32(cpu_f32_to_bf16(cpu_bf16_to_f32(a[i]) *
							     cpu_bf16_to_f32(b[i])));

		cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[i]), want);
	}
	free(out.data);
	for (i = 0; i < 3; i++)
		a[i] = cpu_f32_to_f16(fa[i] - 1.0f);
	in[0] = tensor(CEP_DTYPE_FLOAT16, 1, dims, a);
	cr_assert_eq(op_run("Relu", 14, NULL, 0, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[0]), 0.0f);
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[2]), 999.0f);
	free(out.data);
}

/* ----------------------------------------------------------------- matmul */

Test(kernels, matmul_broadcasts_batches)
{
	enum { B0 = 2, B1 = 3, M = 2, K = 3, N = 4 };
	float a[B0 * 1 * M * K], b[B1 * K * N], want;
	int64_t da[4] = { B0, 1, M, K }, db[3] = { B1, K, N };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 4, da, a),
				   tensor(CEP_DTYPE_FLOAT32, 3, db, b) };
	struct op_tensor out;
	int i, j, m, n, k;

	for (i = 0; i < (int)(sizeof(a) / sizeof(a[0])); i++)
		a[i] = (float)(i % 7) - 3.0f;
	for (i = 0; i < (int)(sizeof(b) / sizeof(b[0])); i++)
		b[i] = (float)(i % 5) * 0.5f;
	cr_assert_eq(op_run("MatMul", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], B0);
	cr_assert_eq(out.dims[1], B1);
	cr_assert_eq(out.dims[2], M);
	cr_assert_eq(out.dims[3], N);
	for (i = 0; i < B0; i++)
		for (j = 0; j < B1; j++)
			for (m = 0; m < M; m++)
				for (n = 0; n < N; n++) {
					want = 0;
					for (k = 0; k < K; k++)
						want += a[(i * M + m) * K + k] * b[(j * K + k) * N + n];
					cr_assert_float_eq(((float *)out.data)[((i * B1 + j) * M + m) * N + n],
							   want, 1e-5f);
				}
	free(out.data);
}

Test(kernels, matmul_vectors_are_promoted_and_dropped)
{
	float v[3] = { 1, 2, 3 }, mat[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t d3[1] = { 3 }, d32[2] = { 3, 2 }, d23[2] = { 2, 3 };
	struct op_tensor in[2];
	struct op_tensor out;

	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d3, v);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 2, d32, mat);
	cr_assert_eq(op_run("MatMul", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(((float *)out.data)[0], 1 * 1 + 2 * 3 + 3 * 5);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 2, d23, mat);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d3, v);
	cr_assert_eq(op_run("MatMul", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(((float *)out.data)[1], 4 * 1 + 5 * 2 + 6 * 3);
	free(out.data);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d3, v);
	cr_assert_eq(op_run("MatMul", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((float *)out.data)[0], 14);
	free(out.data);
}

Test(kernels, gemm_with_transposes_alpha_beta_and_bias_row)
{
	enum { M = 2, K = 3, N = 4 };
	float at[K * M], bt[N * K], c[N] = { 1, -1, 2, -2 };
	int64_t da[2] = { K, M }, db[2] = { N, K }, dc[1] = { N };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 2, da, at),
				   tensor(CEP_DTYPE_FLOAT32, 2, db, bt),
				   tensor(CEP_DTYPE_FLOAT32, 1, dc, c) };
	struct op_attr attrs[4] = { attr_i("transA", 1), attr_i("transB", 1),
				    attr_f("alpha", 0.5f), attr_f("beta", 2.0f) };
	struct op_tensor out;
	int i, m, n, k;

	for (i = 0; i < K * M; i++)
		at[i] = (float)i;
	for (i = 0; i < N * K; i++)
		bt[i] = (float)(i % 4) - 1.5f;
	cr_assert_eq(op_run("Gemm", 13, attrs, 4, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], M);
	cr_assert_eq(out.dims[1], N);
	for (m = 0; m < M; m++)
		for (n = 0; n < N; n++) {
			float s = 0;

			for (k = 0; k < K; k++)
				s += at[k * M + m] * bt[n * K + k];
			cr_assert_float_eq(((float *)out.data)[m * N + n], 0.5f * s + 2.0f * c[n], 1e-5f);
		}
	free(out.data);
	/* Before opset 11 C is required. */
	cr_assert_eq(op_run("Gemm", 9, attrs, 4, in, 2, &out, 1), CEP_EMODEL);
}

/* ---------------------------------------------------------------- softmax */

Test(kernels, softmax_axis_semantics_change_at_opset_13)
{
	float x[24];
	int64_t dims[3] = { 2, 3, 4 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 3, dims, x);
	struct op_attr axis = attr_i("axis", 1);
	struct op_tensor out;
	float sum;
	int i, j, k;

	for (i = 0; i < 24; i++)
		x[i] = (float)(i % 5) * 0.7f;
	/* Opset 11: each of the 2 rows of 12 sums to 1. */
	cr_assert_eq(op_run("Softmax", 11, &axis, 1, &in, 1, &out, 1), 0);
	for (i = 0; i < 2; i++) {
		for (sum = 0, j = 0; j < 12; j++)
			sum += ((float *)out.data)[i * 12 + j];
		cr_assert_float_eq(sum, 1.0f, 1e-5f);
	}
	free(out.data);
	/* Opset 13: each of the 2x4 columns of 3 sums to 1. */
	cr_assert_eq(op_run("Softmax", 13, &axis, 1, &in, 1, &out, 1), 0);
	for (i = 0; i < 2; i++)
		for (k = 0; k < 4; k++) {
			for (sum = 0, j = 0; j < 3; j++)
				sum += ((float *)out.data)[(i * 3 + j) * 4 + k];
			cr_assert_float_eq(sum, 1.0f, 1e-5f);
		}
	cr_assert_float_eq(((float *)out.data)[0],
			   expf(x[0]) / (expf(x[0]) + expf(x[4]) + expf(x[8])), 1e-6f);
	free(out.data);
	axis = attr_i("axis", 3);
	cr_assert_eq(op_run("Softmax", 13, &axis, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Softmax: axis 3 is out of range for rank 3");
}

/* ----------------------------------------------------------- data movement */

Test(kernels, transpose_permutes)
{
	int16_t x[24];
	int64_t dims[3] = { 2, 3, 4 }, perm[3] = { 2, 0, 1 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT16, 3, dims, x);
	struct op_attr p = attr_ints("perm", 3, perm);
	struct op_tensor out;
	int i, j, k;

	for (i = 0; i < 24; i++)
		x[i] = (int16_t)i;
	cr_assert_eq(op_run("Transpose", 13, &p, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 2);
	cr_assert_eq(out.dims[2], 3);
	for (k = 0; k < 4; k++)
		for (i = 0; i < 2; i++)
			for (j = 0; j < 3; j++)
				cr_assert_eq(((int16_t *)out.data)[(k * 2 + i) * 3 + j],
					     x[(i * 3 + j) * 4 + k]);
	free(out.data);
}

Test(kernels, gather_takes_negative_indices_and_refuses_bad_ones)
{
	float x[6] = { 0, 1, 2, 10, 11, 12 };
	int32_t idx[2] = { -1, 0 }, bad[1] = { 3 };
	int64_t dx[2] = { 2, 3 }, di[1] = { 2 }, db[1] = { 1 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   tensor(CEP_DTYPE_INT32, 1, di, idx) };
	struct op_attr axis = attr_i("axis", 1);
	struct op_tensor out;
	const float want[4] = { 2, 0, 12, 10 };
	int i;

	cr_assert_eq(op_run("Gather", 13, &axis, 1, in, 2, &out, 1), 0);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 2);
	for (i = 0; i < 4; i++)
		cr_assert_eq(((float *)out.data)[i], want[i]);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_INT32, 1, db, bad);
	cr_assert_eq(op_run("Gather", 13, &axis, 1, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Gather: index 3 is out of range for dimension 1 of size 3");
	cr_assert_null(out.data);
}

Test(kernels, concat_joins_on_the_last_axis)
{
	uint8_t a[2] = { 1, 2 }, b[4] = { 3, 4, 5, 6 };
	int64_t da[2] = { 2, 1 }, db[2] = { 2, 2 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_UINT8, 2, da, a),
				   tensor(CEP_DTYPE_UINT8, 2, db, b) };
	struct op_attr axis = attr_i("axis", -1);
	struct op_tensor out;
	const uint8_t want[6] = { 1, 3, 4, 2, 5, 6 };

	cr_assert_eq(op_run("Concat", 13, &axis, 1, in, 2, &out, 1), 0);
	cr_assert_eq(out.dims[1], 3);
	cr_assert_arr_eq(out.data, want, 6);
	free(out.data);
}

Test(kernels, cast_between_every_kind)
{
	float f[5] = { 1.5f, -2.7f, NAN, 0.0f, 1.0f / 3.0f };
	int64_t i64[3] = { -1, 300, INT64_C(1) << 40 };
	int64_t d5[1] = { 5 }, d3[1] = { 3 };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d5, f);
	struct op_attr to;
	struct op_tensor out;

	to = attr_i("to", CEP_DTYPE_INT32);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((int32_t *)out.data)[0], 1);
	cr_assert_eq(((int32_t *)out.data)[1], -2);
	cr_assert_eq(((int32_t *)out.data)[2], 0, "NaN gives 0");
	free(out.data);
	to = attr_i("to", CEP_DTYPE_BOOL);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((uint8_t *)out.data)[2], 1, "NaN is not zero");
	cr_assert_eq(((uint8_t *)out.data)[3], 0);
	free(out.data);
	to = attr_i("to", CEP_DTYPE_FLOAT16);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((uint16_t *)out.data)[4], 0x3555, "1/3 rounds to nearest");
	free(out.data);
	in = tensor(CEP_DTYPE_INT64, 1, d3, i64);
	to = attr_i("to", CEP_DTYPE_UINT8);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 255);
	cr_assert_eq(((uint8_t *)out.data)[1], 44);
	free(out.data);
	to = attr_i("to", CEP_DTYPE_FLOAT32);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((float *)out.data)[2], 1099511627776.0f);
	free(out.data);
	to = attr_i("to", CEP_DTYPE_FLOAT64);
	cr_assert_eq(op_run("Cast", 13, &to, 1, &in, 1, &out, 1), 0);
	cr_assert_eq(((double *)out.data)[0], -1.0);
	cr_assert_eq(((double *)out.data)[2], 1099511627776.0);
	free(out.data);
}

Test(kernels, shape_squeeze_unsqueeze)
{
	float x[6] = { 0 };
	int64_t dims[4] = { 1, 2, 1, 3 }, axes[2] = { 0, -1 }, res[4];
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 4, dims, x) };
	struct op_attr a[2] = { attr_i("start", 1), attr_i("end", -1) };
	struct op_attr ax = attr_ints("axes", 2, axes);
	int64_t dax[1] = { 2 };
	struct op_tensor out;

	cr_assert_eq(op_run("Shape", 15, a, 2, in, 1, &out, 1), 0);
	cr_assert_eq(out.dims[0], 2);
	memcpy(res, out.data, 16);
	cr_assert_eq(res[0], 2);
	cr_assert_eq(res[1], 1);
	free(out.data);
	cr_assert_eq(op_run("Shape", 13, a, 2, in, 1, &out, 1), 0, "start/end arrive in 15");
	cr_assert_eq(out.dims[0], 4);
	free(out.data);
	cr_assert_eq(op_run("Squeeze", 13, NULL, 0, in, 1, &out, 1), 0);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	free(out.data);
	/* Unsqueeze: axes an attribute in opset 11, an input in 13. */
	cr_assert_eq(op_run("Unsqueeze", 11, &ax, 1, in, 1, &out, 1), 0);
	cr_assert_eq(out.rank, 6);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[5], 1);
	free(out.data);
	in[1] = tensor(CEP_DTYPE_INT64, 1, dax, axes);
	cr_assert_eq(op_run("Unsqueeze", 13, NULL, 0, in, 2, &out, 1), 0);
	cr_assert_eq(out.rank, 6);
	cr_assert_eq(out.dims[1], 1);
	cr_assert_eq(out.dims[2], 2);
	free(out.data);
	cr_assert_eq(op_run("Unsqueeze", 13, NULL, 0, in, 1, &out, 1), CEP_EMODEL);
}

/* ------------------------------------------------------------ conversions */

Test(kernels, every_float16_value_round_trips)
{
	unsigned h;
	int bad = 0;

	for (h = 0; h < 0x10000; h++) {
		float f = cpu_f16_to_f32((uint16_t)h);

		if (f != f)
			continue;
		bad += cpu_f32_to_f16(f) != h;
	}
	cr_assert_eq(bad, 0);
	cr_assert_eq(cpu_f16_to_f32(0x7bff), 65504.0f);
	cr_assert_eq(cpu_f32_to_f16(65519.0f), 0x7bff);
	cr_assert_eq(cpu_f32_to_f16(65520.0f), 0x7c00);
	cr_assert_eq(cpu_f32_to_f16(0x1p-24f), 0x0001);
	cr_assert_eq(cpu_f32_to_f16(0x1p-25f), 0x0000, "a tie rounds to even");
	cr_assert_eq(cpu_f32_to_f16(0x3p-25f), 0x0002, "a tie rounds to even");
	cr_assert_eq(cpu_f32_to_f16(-0.0f), 0x8000);
	cr_assert_eq(cpu_f32_to_f16(1.0f + 0x1p-11f), 0x3c00, "a tie rounds to even");
	cr_assert_eq(cpu_f32_to_f16(1.0f + 0x3p-11f), 0x3c02, "a tie rounds to even");
	cr_assert(isnan(cpu_f16_to_f32(cpu_f32_to_f16(NAN))));
}

Test(kernels, bfloat16_rounds_to_nearest_even)
{
	cr_assert_eq(cpu_f32_to_bf16(1.0f), 0x3f80);
	cr_assert_eq(cpu_bf16_to_f32(0x3f80), 1.0f);
	cr_assert_eq(cpu_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80, "a tie rounds to even");
	cr_assert_eq(cpu_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82, "a tie rounds to even");
	cr_assert_eq(cpu_f32_to_bf16(INFINITY), 0x7f80);
	cr_assert(isnan(cpu_bf16_to_f32(cpu_f32_to_bf16(NAN))));
}
