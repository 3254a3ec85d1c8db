/*
 * test_ops_norm.c — the normalizations of kernels/cpu (norm.c,
 * logsoftmax.c, dropout.c): LayerNormalization with its optional Mean and
 * InvStdDev outputs and one-way broadcast Scale and B, BatchNormalization
 * in inference form for each of its opset ranges, its training mode (the
 * batch's statistics and the running ones) and its refusal of the older
 * training forms, LRN, LogSoftmax under both axis rules, and Dropout as the
 * identity with its mask. Each is called as the engine calls it (schema
 * inference, then the host kernel through exec_host_eval) and compared
 * with the formula computed here; a few small models run through the
 * engine to cover omitted optional outputs and refusals at load.
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

static struct op_attr attr_f(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(out[i].data);
}

/* Deterministic floats in [-2, 2). */
static float frand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (float)((*state >> 8) & 0xffff) / 16384.0f - 2.0f;
}

/* Standardises rows of cols elements of x into y (no scale), and returns
 * each row's mean and 1/stddev in mean and inv. */
static void ref_standardize(const float *x, int rows, int cols, float eps, double *y,
			    double *mean, double *inv)
{
	int r, j;

	for (r = 0; r < rows; r++) {
		double m = 0, v = 0;

		for (j = 0; j < cols; j++)
			m += x[r * cols + j];
		m /= cols;
		for (j = 0; j < cols; j++)
			v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
		mean[r] = m;
		inv[r] = 1 / sqrt(v / cols + eps);
		for (j = 0; j < cols; j++)
			y[r * cols + j] = (x[r * cols + j] - m) * inv[r];
	}
}

/* ------------------------------------------------------ LayerNormalization */

Test(ops_norm, layernorm_with_scale_bias_and_statistics)
{
	enum { R = 2, A = 3, B = 4 };
	float x[R * A * B], sc[A * B], bias[A * B];
	double y[R * A * B], mean[R], inv[R];
	int64_t dx[3] = { R, A, B }, dp[2] = { A, B };
	struct op_attr a[2] = { attr_i("axis", 1), attr_f("epsilon", 1e-3f) };
	struct op_tensor in[3], out[3];
	unsigned seed = 3;
	int i;

	for (i = 0; i < R * A * B; i++)
		x[i] = frand(&seed) * 3 + 1;
	for (i = 0; i < A * B; i++) {
		sc[i] = frand(&seed);
		bias[i] = frand(&seed);
	}
	ref_standardize(x, R, A * B, 1e-3f, y, mean, inv);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 2, dp, sc);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 2, dp, bias);
	cr_assert_eq(oh_run("LayerNormalization", 17, a, 2, in, 3, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(out[1].rank, 3);
	cr_assert_eq(out[1].dims[0], R);
	cr_assert_eq(out[1].dims[1], 1);
	cr_assert_eq(out[2].dims[2], 1);
	for (i = 0; i < R * A * B; i++)
		cr_assert_float_eq(((float *)out[0].data)[i], y[i] * sc[i % (A * B)] + bias[i % (A * B)],
				   1e-5);
	for (i = 0; i < R; i++) {
		cr_assert_float_eq(((float *)out[1].data)[i], mean[i], 1e-6);
		cr_assert_float_eq(((float *)out[2].data)[i], inv[i], 1e-5);
	}
	outs_free(out, 3);
}

/* Scale with one element; Scale that varies along the rows too (it
 * broadcasts one way to X); no B; the default axis; float16. */
Test(ops_norm, layernorm_broadcasts_scale_one_way)
{
	enum { R = 2, A = 3, B = 4 };
	float x[R * A * B], s1[1] = { 2.0f }, srow[R * B];
	double y[R * A * B], mean[R * A], inv[R * A];
	uint16_t h[R * A * B], hs[B];
	int64_t dx[3] = { R, A, B }, d1[1] = { 1 }, drow[3] = { R, 1, B }, dB[1] = { B };
	struct op_tensor in[2], out[1];
	unsigned seed = 5;
	int i;

	for (i = 0; i < R * A * B; i++)
		x[i] = frand(&seed);
	for (i = 0; i < R * B; i++)
		srow[i] = frand(&seed);
	ref_standardize(x, R * A, B, 1e-5f, y, mean, inv);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d1, s1);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < R * A * B; i++)
		cr_assert_float_eq(((float *)out[0].data)[i], 2 * y[i], 1e-5);
	outs_free(out, 1);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 3, drow, srow);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < R * A * B; i++) {
		int r = i / (A * B), k = i % B;

		cr_assert_float_eq(((float *)out[0].data)[i], y[i] * srow[r * B + k], 1e-5);
	}
	outs_free(out, 1);
	for (i = 0; i < R * A * B; i++)
		h[i] = cpu_f32_to_f16(x[i]);
	for (i = 0; i < B; i++)
		hs[i] = cpu_f32_to_f16(1.0f + (float)i);
	in[0] = tensor(CEP_DTYPE_FLOAT16, 3, dx, h);
	in[1] = tensor(CEP_DTYPE_FLOAT16, 1, dB, hs);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].dtype, CEP_DTYPE_FLOAT16);
	for (i = 0; i < R * A * B; i++)
		cr_assert_float_eq(cpu_f16_to_f32(((uint16_t *)out[0].data)[i]),
				   y[i] * (1 + i % B), 1e-2 * (1 + i % B));
	outs_free(out, 1);
}

Test(ops_norm, layernorm_stash_type_and_errors)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 }, sc[3] = { 1, 1, 1 }, s4[4] = { 0 };
	uint16_t hs[3] = { 0, 0, 0 };
	int64_t dx[2] = { 2, 3 }, d3[1] = { 3 }, d4[1] = { 4 }, dbig[3] = { 1, 1, 3 };
	struct op_attr bf[1] = { attr_i("stash_type", CEP_DTYPE_BFLOAT16) };
	struct op_attr dbl[1] = { attr_i("stash_type", 11) };
	struct op_attr ax[1] = { attr_i("axis", 2) };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   tensor(CEP_DTYPE_FLOAT32, 1, d3, sc) };
	struct op_tensor out[3];

	cr_assert_eq(oh_run("LayerNormalization", 17, bf, 1, in, 2, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dtype, CEP_DTYPE_BFLOAT16);
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out[1].data)[1]), 5.0f);
	outs_free(out, 3);
	cr_assert_eq(oh_run("LayerNormalization", 17, dbl, 1, in, 2, out, 3), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "stash_type 11"), "%s", cep_last_error());
	cr_assert_eq(oh_run("LayerNormalization", 17, ax, 1, in, 2, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "LayerNormalization: axis 2 is out of range"), "%s",
		  cep_last_error());
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d4, s4);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Scale of shape [4] does not broadcast to X of shape [2,3]"),
		  "%s", cep_last_error());
	in[1] = tensor(CEP_DTYPE_FLOAT32, 3, dbig, sc);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	in[1] = tensor(CEP_DTYPE_FLOAT16, 1, d3, hs);
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 2, out, 1), CEP_EDTYPE);
	/* Before 17 it is onnxruntime's LayerNormalization (test_ops_contrib.c),
	 * typed the same way, stashing in float32 or double only. */
	cr_assert_eq(oh_run("LayerNormalization", 16, NULL, 0, in, 2, out, 1), CEP_EDTYPE);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d3, sc);
	cr_assert_eq(oh_run("LayerNormalization", 16, bf, 1, in, 2, out, 3), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "stash_type 16 is not float32 (1) or double (11)"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("LayerNormalization", 16, dbl, 1, in, 2, out, 3), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "stash_type 11 (double) is not supported"), "%s",
		  cep_last_error());
}

Test(ops_norm, layernorm_infers_symbols)
{
	int64_t dx[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 8 }, ds[1] = { 8 };
	struct op_tensor in[2] = { tensor(CEP_DTYPE_FLOAT32, 3, dx, NULL),
				   tensor(CEP_DTYPE_FLOAT32, 1, ds, NULL) };
	struct op_tensor out[3];

	cr_assert_eq(oh_infer("LayerNormalization", 17, NULL, 0, in, 2, out, 3), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out[1].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[1].dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out[1].dims[2], 1);
}

/* ------------------------------------------------------ BatchNormalization */

/* y = (x - mean) / sqrt(var + eps) * scale + b, per channel. */
static double ref_bn(float x, float s, float b, float m, float v, float eps)
{
	return (x - m) / sqrt((double)v + eps) * s + b;
}

Test(ops_norm, batchnorm_per_channel_in_each_opset)
{
	static const int opsets[] = { 7, 9, 14, 15 };
	enum { N = 2, C = 3, HW = 5 };
	float x[N * C * HW], s[C] = { 1, 2, -1 }, b[C] = { 0, 1, 2 }, m[C] = { 0.5f, -1, 2 };
	float v[C] = { 1, 4, 0.25f };
	int64_t dx[4] = { N, C, 1, HW }, dc[1] = { C };
	struct op_attr eps[1] = { attr_f("epsilon", 1e-2f) };
	struct op_tensor in[5], out;
	unsigned seed = 11;
	size_t o;
	int i;

	for (i = 0; i < N * C * HW; i++)
		x[i] = frand(&seed);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 4, dx, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, dc, s);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 1, dc, b);
	in[3] = tensor(CEP_DTYPE_FLOAT32, 1, dc, m);
	in[4] = tensor(CEP_DTYPE_FLOAT32, 1, dc, v);
	for (o = 0; o < sizeof(opsets) / sizeof(opsets[0]); o++) {
		cr_assert_eq(oh_run("BatchNormalization", opsets[o], eps, 1, in, 5, &out, 1), 0,
			     "opset %d: %s", opsets[o], cep_last_error());
		cr_assert_eq(out.rank, 4);
		for (i = 0; i < N * C * HW; i++) {
			int c = (i / HW) % C;

			cr_assert_float_eq(((float *)out.data)[i],
					   ref_bn(x[i], s[c], b[c], m[c], v[c], 1e-2f), 1e-5,
					   "opset %d element %d", opsets[o], i);
		}
		free(out.data);
	}
}

/* Rank 2 (N, C) and rank 1 (N, C = 1); opset 15's parameters in types of
 * their own; opset 7's per-element statistics (spatial=0). */
Test(ops_norm, batchnorm_shapes_and_types)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 }, s[3] = { 1, 2, 3 }, z[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 };
	float m6[6] = { 1, 1, 1, 2, 2, 2 }, s6[6] = { 1, 2, 3, 4, 5, 6 }, b6[6] = { 0 }, v6[6];
	uint16_t hs[3], hz[3], hone[3];
	int64_t d23[2] = { 2, 3 }, d3[1] = { 3 }, d6[1] = { 6 }, d1[1] = { 1 }, dx7[3] = { 1, 2, 3 };
	int64_t dp7[2] = { 2, 3 };
	struct op_attr eps0[1] = { attr_f("epsilon", 0.0f) };
	struct op_attr ns[2] = { attr_f("epsilon", 0.0f), attr_i("spatial", 0) };
	struct op_tensor in[5], out;
	int i;

	in[0] = tensor(CEP_DTYPE_FLOAT32, 2, d23, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 1, d3, s);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 1, d3, z);
	in[3] = tensor(CEP_DTYPE_FLOAT32, 1, d3, z);
	in[4] = tensor(CEP_DTYPE_FLOAT32, 1, d3, one);
	cr_assert_eq(oh_run("BatchNormalization", 15, eps0, 1, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_float_eq(((float *)out.data)[i], x[i] * s[i % 3], 1e-6);
	free(out.data);
	for (i = 0; i < 3; i++) {
		hs[i] = cpu_f32_to_f16(s[i]);
		hz[i] = cpu_f32_to_f16(0.0f);
		hone[i] = cpu_f32_to_f16(1.0f);
	}
	in[1] = tensor(CEP_DTYPE_FLOAT16, 1, d3, hs);
	in[2] = tensor(CEP_DTYPE_FLOAT16, 1, d3, hz);
	cr_assert_eq(oh_run("BatchNormalization", 14, eps0, 1, in, 5, &out, 1), CEP_EDTYPE,
		     "at 14 scale and B share X's type");
	cr_assert_eq(oh_run("BatchNormalization", 15, eps0, 1, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[5], 18.0f, 1e-6);
	free(out.data);
	in[4] = tensor(CEP_DTYPE_FLOAT16, 1, d3, hone);
	cr_assert_eq(oh_run("BatchNormalization", 15, eps0, 1, in, 5, &out, 1), CEP_EDTYPE,
		     "mean and var share a type");
	/* Rank 1: one channel. */
	in[0] = tensor(CEP_DTYPE_FLOAT32, 1, d6, x);
	for (i = 1; i < 5; i++)
		in[i] = tensor(CEP_DTYPE_FLOAT32, 1, d1, i == 1 ? s + 1 : i == 4 ? one : z);
	cr_assert_eq(oh_run("BatchNormalization", 9, eps0, 1, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[3], 8.0f, 1e-6);
	free(out.data);
	/* spatial=0: the statistics have X's shape without the batch. */
	for (i = 0; i < 6; i++)
		v6[i] = (float)(i + 1) * (float)(i + 1);
	in[0] = tensor(CEP_DTYPE_FLOAT32, 3, dx7, x);
	in[1] = tensor(CEP_DTYPE_FLOAT32, 2, dp7, s6);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 2, dp7, b6);
	in[3] = tensor(CEP_DTYPE_FLOAT32, 2, dp7, m6);
	in[4] = tensor(CEP_DTYPE_FLOAT32, 2, dp7, v6);
	cr_assert_eq(oh_run("BatchNormalization", 7, ns, 2, in, 5, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_float_eq(((float *)out.data)[i], ref_bn(x[i], s6[i], 0, m6[i], v6[i], 0),
				   1e-6);
	free(out.data);
	/* The same statistics with spatial=1 have the wrong shape. */
	cr_assert_eq(oh_run("BatchNormalization", 7, eps0, 1, in, 5, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "scale must have shape [C], C=2"), "%s", cep_last_error());
}

Test(ops_norm, batchnorm_refuses_the_old_training_forms)
{
	float x[4] = { 0 }, p[2] = { 1, 1 };
	int64_t dx[2] = { 2, 2 }, dc[1] = { 2 };
	struct op_tensor in[5] = {
		tensor(CEP_DTYPE_FLOAT32, 2, dx, x), tensor(CEP_DTYPE_FLOAT32, 1, dc, p),
		tensor(CEP_DTYPE_FLOAT32, 1, dc, p), tensor(CEP_DTYPE_FLOAT32, 1, dc, p),
		tensor(CEP_DTYPE_FLOAT32, 1, dc, p),
	};
	struct op_tensor out[5];

	cr_assert_eq(oh_infer("BatchNormalization", 9, NULL, 0, in, 5, out, 5), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "training mode"), "%s", cep_last_error());
	cr_assert_eq(oh_infer("BatchNormalization", 15, NULL, 0, in, 5, out, 3), CEP_EMODEL);
	cr_assert_eq(oh_infer("BatchNormalization", 15, NULL, 0, in, 5, out, 1), 0);
}

/* training_mode=1: channel 0 of [[1, 2], [3, 6]] has mean 2 and variance
 * 1, channel 1 mean 4 and variance 4 (the population's); with scale
 * [1, 2], B [0, 1] and epsilon 0, Y = [[-1, -1], [1, 3]]. The running
 * statistics mix the inputs [10, 20] and [100, 200] with the batch's by
 * momentum: 0.5 gives [6, 12] and [50.5, 102], the default 0.9 a mean of
 * 9.2 for channel 0. */
Test(ops_norm, batchnorm_training_mode_uses_the_batch)
{
	float x[4] = { 1, 2, 3, 6 }, sc[2] = { 1, 2 }, bias[2] = { 0, 1 };
	float mean[2] = { 10, 20 }, var[2] = { 100, 200 };
	static const float want_y[4] = { -1, -1, 1, 3 }, want_m[2] = { 6, 12 };
	static const float want_v[2] = { 50.5f, 102 };
	int64_t dx[2] = { 2, 2 }, dc[1] = { 2 };
	struct op_attr a[3] = { attr_i("training_mode", 1), attr_f("epsilon", 0.0f),
				attr_f("momentum", 0.5f) };
	struct op_tensor in[5] = {
		tensor(CEP_DTYPE_FLOAT32, 2, dx, x), tensor(CEP_DTYPE_FLOAT32, 1, dc, sc),
		tensor(CEP_DTYPE_FLOAT32, 1, dc, bias), tensor(CEP_DTYPE_FLOAT32, 1, dc, mean),
		tensor(CEP_DTYPE_FLOAT32, 1, dc, var),
	};
	struct op_tensor out[3];
	int i;

	cr_assert_eq(oh_run("BatchNormalization", 15, a, 3, in, 5, out, 3), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[1].rank, 1);
	cr_assert_eq(out[1].dims[0], 2);
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(((float *)out[0].data)[i], want_y[i], 1e-6, "Y[%d]", i);
	for (i = 0; i < 2; i++) {
		cr_assert_float_eq(((float *)out[1].data)[i], want_m[i], 1e-6, "running_mean[%d]", i);
		cr_assert_float_eq(((float *)out[2].data)[i], want_v[i], 1e-5, "running_var[%d]", i);
	}
	for (i = 0; i < 3; i++)
		free(out[i].data);
	/* Opset 14, Y alone, the default momentum and epsilon. */
	cr_assert_eq(oh_run("BatchNormalization", 14, a, 1, in, 5, out, 2), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out[0].data)[0], (float)(-1.0 / sqrt(1.0 + 1e-5)), 1e-6);
	cr_assert_float_eq(((float *)out[1].data)[0], 9.2f, 1e-5);
	free(out[0].data);
	free(out[1].data);
}

/* --------------------------------------------------------------------- LRN */

Test(ops_norm, lrn_sums_neighbouring_channels)
{
	static const int sizes[] = { 1, 3, 4 };
	enum { N = 2, C = 5, HW = 3 };
	float x[N * C * HW];
	uint16_t h[N * C * HW];
	int64_t dx[3] = { N, C, HW };
	struct op_tensor in, out;
	unsigned seed = 17;
	size_t si;
	int i;

	for (i = 0; i < N * C * HW; i++) {
		x[i] = frand(&seed) * 4;
		h[i] = cpu_f32_to_f16(x[i]);
	}
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		int size = sizes[si];
		struct op_attr a[4] = { attr_i("size", size), attr_f("alpha", 0.5f),
					attr_f("beta", 0.75f), attr_f("bias", 2.0f) };

		in = tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
		cr_assert_eq(oh_run("LRN", 13, a, 4, &in, 1, &out, 1), 0, "%s", cep_last_error());
		for (i = 0; i < N * C * HW; i++) {
			int n = i / (C * HW), c = (i / HW) % C, k = i % HW, j;
			int lo = c - (size - 1) / 2, hi = c + size / 2;
			double sq = 0;

			for (j = lo < 0 ? 0 : lo; j <= (hi > C - 1 ? C - 1 : hi); j++)
				sq += (double)x[(n * C + j) * HW + k] * x[(n * C + j) * HW + k];
			cr_assert_float_eq(((float *)out.data)[i],
					   x[i] / pow(2.0 + 0.5 / size * sq, 0.75), 1e-5,
					   "size %d element %d", size, i);
		}
		free(out.data);
	}
	{
		struct op_attr a[1] = { attr_i("size", 3) };

		in = tensor(CEP_DTYPE_FLOAT16, 3, dx, h);
		cr_assert_eq(oh_run("LRN", 7, a, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
		free(out.data);
		in.dtype = CEP_DTYPE_BFLOAT16;
		cr_assert_eq(oh_run("LRN", 12, a, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	}
}

Test(ops_norm, lrn_needs_a_size_and_channels)
{
	float x[4] = { 0 };
	int64_t d4[1] = { 4 }, d22[2] = { 2, 2 };
	struct op_attr zero[1] = { attr_i("size", 0) }, three[1] = { attr_i("size", 3) };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 2, d22, x), out;

	cr_assert_eq(oh_run("LRN", 13, NULL, 0, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "LRN: the attribute size is required"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("LRN", 13, zero, 1, &in, 1, &out, 1), CEP_EMODEL);
	in = tensor(CEP_DTYPE_FLOAT32, 1, d4, x);
	cr_assert_eq(oh_run("LRN", 13, three, 1, &in, 1, &out, 1), CEP_ESHAPE);
}

/* -------------------------------------------------------------- LogSoftmax */

/* Before 13 the input is a matrix split at axis; from 13 only the axis
 * dimension is normalised. */
Test(ops_norm, logsoftmax_axis_rules_by_opset)
{
	enum { A = 2, B = 3, C = 4 };
	float x[A * B * C];
	int64_t dx[3] = { A, B, C };
	struct op_attr ax1[1] = { attr_i("axis", 1) };
	struct op_tensor in, out;
	unsigned seed = 23;
	int i, a, b, c;

	for (i = 0; i < A * B * C; i++)
		x[i] = frand(&seed) * 5;
	in = tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	cr_assert_eq(oh_run("LogSoftmax", 11, ax1, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (a = 0; a < A; a++) {
		double mx = -INFINITY, sum = 0;

		for (i = 0; i < B * C; i++)
			mx = fmax(mx, x[a * B * C + i]);
		for (i = 0; i < B * C; i++)
			sum += exp(x[a * B * C + i] - mx);
		for (i = 0; i < B * C; i++)
			cr_assert_float_eq(((float *)out.data)[a * B * C + i],
					   x[a * B * C + i] - mx - log(sum), 1e-5);
	}
	free(out.data);
	cr_assert_eq(oh_run("LogSoftmax", 13, ax1, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (a = 0; a < A; a++) {
		for (c = 0; c < C; c++) {
			double mx = -INFINITY, sum = 0;

			for (b = 0; b < B; b++)
				mx = fmax(mx, x[(a * B + b) * C + c]);
			for (b = 0; b < B; b++)
				sum += exp(x[(a * B + b) * C + c] - mx);
			for (b = 0; b < B; b++)
				cr_assert_float_eq(((float *)out.data)[(a * B + b) * C + c],
						   x[(a * B + b) * C + c] - mx - log(sum), 1e-5);
		}
	}
	free(out.data);
}

Test(ops_norm, logsoftmax_is_stable_and_typed)
{
	static float x[1000];
	uint16_t h[4];
	int64_t d[1] = { 1000 }, d4[1] = { 4 };
	struct op_attr ax0[1] = { attr_i("axis", 0) };
	struct op_tensor in = tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	int i, ret;

	/* Large values: exp() would overflow without the max subtracted. */
	for (i = 0; i < 1000; i++)
		x[i] = 10000.0f + (float)(i % 2);
	cr_assert_eq(oh_run("LogSoftmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[1], 1 - (1 + log(500 + 500 * exp(-1.0))), 1e-4);
	cr_assert(isfinite(((float *)out.data)[0]));
	free(out.data);
	for (i = 0; i < 4; i++)
		h[i] = cpu_f32_to_bf16((float)i);
	in = tensor(CEP_DTYPE_BFLOAT16, 1, d4, h);
	ret = oh_run("LogSoftmax", 12, ax0, 1, &in, 1, &out, 1);
	if (ret == 0)
		free(out.data);
	cr_assert_eq(ret, CEP_EUNSUPPORTED, "bfloat16 arrived at 13: %s", cep_last_error());
	cr_assert_eq(oh_run("LogSoftmax", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[3]),
			   -log(1 + exp(-1.0) + exp(-2.0) + exp(-3.0)), 1e-2);
	free(out.data);
}

/* ----------------------------------------------------------------- Dropout */

Test(ops_norm, dropout_is_the_identity_with_a_full_mask)
{
	float x[6] = { 1, -2, 3, -4, 5, -6 }, ratio = 0.3f, zero = 0.0f;
	uint8_t f = 0, t = 1;
	int64_t dx[2] = { 2, 3 };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ratio),
				   tensor(CEP_DTYPE_BOOL, 0, NULL, &f) };
	struct op_tensor out[2];
	int i;

	/* Opset 7: the mask has the input's type. */
	cr_assert_eq(oh_run("Dropout", 7, NULL, 0, in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT32);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(((float *)out[0].data)[i], x[i]);
		cr_assert_eq(((float *)out[1].data)[i], 1.0f);
	}
	outs_free(out, 2);
	cr_assert_eq(oh_run("Dropout", 10, NULL, 0, in, 1, out, 2), 0);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_BOOL);
	cr_assert_eq(out[1].rank, 2);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out[1].data)[i], 1);
	outs_free(out, 2);
	cr_assert_eq(oh_run("Dropout", 13, NULL, 0, in, 3, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(memcmp(out[0].data, x, sizeof(x)), 0);
	outs_free(out, 2);
	/* Training with ratio 0 drops nothing: still the identity. */
	in[1].data = &zero;
	in[2].data = &t;
	cr_assert_eq(oh_run("Dropout", 13, NULL, 0, in, 3, out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(memcmp(out[0].data, x, sizeof(x)), 0);
	outs_free(out, 1);
}

Test(ops_norm, dropout_refuses_training)
{
	float x[2] = { 1, 2 }, ratio = 0.5f;
	uint8_t t = 1;
	int64_t dx[1] = { 2 };
	const struct op_node node = { "t", "Dropout", "", 13, 0, NULL };
	struct op_tensor in[3] = { tensor(CEP_DTYPE_FLOAT32, 1, dx, x),
				   tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ratio),
				   tensor(CEP_DTYPE_BOOL, 0, NULL, &t) };
	struct op_tensor out[1];
	const struct op_schema *s;
	const struct op_kernel *k;

	/* Known when loading: refused then. */
	cr_assert_eq(oh_infer("Dropout", 13, NULL, 0, in, 3, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "training_mode is true"), "%s", cep_last_error());
	/* Known only at run time: refused by the run. */
	in[2].data = NULL;
	cr_assert_eq(oh_infer("Dropout", 13, NULL, 0, in, 3, out, 1), 0);
	in[2].data = &t;
	cr_assert_eq(op_schema_find("", "Dropout", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 3, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "ratio 0.5"), "%s", cep_last_error());
	/* The default ratio is 0.5 too. */
	in[1] = tensor(CEP_DTYPE_UNDEFINED, 0, NULL, NULL);
	cr_assert_eq(oh_infer("Dropout", 13, NULL, 0, in, 3, out, 1), CEP_EUNSUPPORTED);
	in[2] = tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ratio);
	cr_assert_eq(oh_infer("Dropout", 13, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "training_mode must be bool, not float32"), "%s",
		  cep_last_error());
}

/* ----------------------------------------------------------------- engine */

struct model_run {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static int model_open(struct onnxb *b, struct model_run *r)
{
	size_t len;
	uint8_t *buf = onnxb_finish(b, &len);
	int ret;

	memset(r, 0, sizeof(*r));
	ret = engine_model_load(buf, len, -1, &r->m);
	free(buf);
	if (ret < 0)
		return ret;
	cr_assert_eq(backend_host_new(0, &r->be), 0);
	cr_assert_eq(engine_session_new(r->m, r->be, NULL, &r->s), 0, "%s", cep_last_error());
	return 0;
}

static void model_close(struct model_run *r)
{
	engine_session_free(r->s);
	engine_model_unref(r->m);
	backend_free(r->be);
}

/* LayerNormalization as a planned step with Mean omitted and InvStdDev
 * kept; Dropout with its mask requested. */
Test(ops_norm, engine_runs_with_omitted_optional_outputs)
{
	struct onnxb *b = onnxb_new(17);
	float sc[4] = { 1, 2, 3, 4 }, x[8], y[8], inv[2], d[8];
	uint8_t mask[8];
	double ry[8], rmean[2], rinv[2];
	int64_t dims[2] = { 2, 4 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out[4] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "inv", .data = inv, .capacity = sizeof(inv) },
		{ .name = "d", .data = d, .capacity = sizeof(d) },
		{ .name = "mask", .data = mask, .capacity = sizeof(mask) },
	};
	struct model_run r;
	unsigned seed = 31;
	int i;

	for (i = 0; i < 8; i++)
		x[i] = frand(&seed);
	ref_standardize(x, 2, 4, 1e-5f, ry, rmean, rinv);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_output(b, "inv", CEP_DTYPE_FLOAT32, "n,1");
	onnxb_output(b, "d", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_output(b, "mask", CEP_DTYPE_BOOL, "n,4");
	onnxb_init(b, "sc", CEP_DTYPE_FLOAT32, "4", sc);
	onnxb_node(b, "LayerNormalization", "x,sc", "y,,inv");
	onnxb_node(b, "Dropout", "x", "d,mask");
	cr_assert_eq(model_open(b, &r), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(r.s, &in, 1, out, 4), 0, "%s", cep_last_error());
	for (i = 0; i < 8; i++) {
		cr_assert_float_eq(y[i], ry[i] * sc[i % 4], 1e-5);
		cr_assert_eq(d[i], x[i]);
		cr_assert_eq(mask[i], 1);
	}
	cr_assert_float_eq(inv[1], rinv[1], 1e-5);
	model_close(&r);
}

/* BatchNormalization's training mode runs; Dropout's is refused when the
 * model is loaded, with the reason. */
Test(ops_norm, engine_runs_batchnorm_training_and_refuses_dropouts)
{
	struct onnxb *b = onnxb_new(15);
	float p[2] = { 1, 1 }, z[2] = { 0, 0 }, x[4] = { 1, 5, 3, 7 }, y[4];
	int64_t dx[2] = { 2, 2 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dx, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	uint8_t t = 1;
	Onnx__NodeProto *bn;
	struct model_run r;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "2,2");
	onnxb_init(b, "p", CEP_DTYPE_FLOAT32, "2", p);
	onnxb_init(b, "z", CEP_DTYPE_FLOAT32, "2", z);
	bn = onnxb_node(b, "BatchNormalization", "x,p,z,z,p", "y");
	onnxb_attr_int(bn, "training_mode", 1);
	onnxb_attr_float(bn, "epsilon", 0.0f);
	cr_assert_eq(model_open(b, &r), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(r.s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	/* Each channel's two values, a standard deviation either side. */
	cr_assert_float_eq(y[0], -1.0f, 1e-6);
	cr_assert_float_eq(y[1], -1.0f, 1e-6);
	cr_assert_float_eq(y[2], 1.0f, 1e-6);
	cr_assert_float_eq(y[3], 1.0f, 1e-6);
	model_close(&r);
	b = onnxb_new(13);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "1,2");
	onnxb_init(b, "t", CEP_DTYPE_BOOL, "", &t);
	onnxb_node(b, "Dropout", "x,,t", "y");
	cr_assert_eq(model_open(b, &r), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "Dropout: training_mode is true"), "%s", cep_last_error());
}
