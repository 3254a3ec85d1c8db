/*
 * test_ops_normalize.c — the normalizations of kernels/cpu/normalize.c:
 * InstanceNormalization (the specification's example, rank 2 and 5,
 * float16, bfloat16 from opset 22 only), GroupNormalization at opset 18
 * (scale and bias per group) and 21 (per channel; stash_type), its
 * equivalences with InstanceNormalization and one group, RMSNormalization
 * with every axis and way Scale broadcasts, LpNormalization with p 1 and
 * 2 along every axis and its zero norm; and their refusals and symbolic
 * inference. A model of all four runs in fp16 and bf16 sessions with
 * every node in half and matches float32. Each is called as the engine calls it (schema inference,
 * then the host kernel) and compared with the formula computed here, or
 * with the values of the specification's examples.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"
#include "tests/unit/prec_models.h"

/* ------------------------------------------------------------------ helpers */

/* Deterministic floats in [-2, 2). */
static float frand(unsigned *state)
{
	return 2.0f * oh_rand(state);
}

/* Element i of a float tensor as a double. */
static double at(const struct op_tensor *t, int64_t i)
{
	return cpu_load_f(t->data, t->dtype, i);
}

/* Fills n elements of dtype at p with the floats v, rounded. */
static void store_all(void *p, cep_dtype dtype, const float *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		cpu_store_f(p, dtype, i, v[i]);
}

/*
 * The group normalization of x (n, c, inner) with groups groups: each
 * sample's group of c / groups channels standardised with its mean and
 * biased variance, then scaled and shifted by s and b, indexed by group
 * when by_group, else by channel. Into y (doubles).
 */
static void ref_groupnorm(const float *x, int n, int c, int inner, int groups, const float *s,
			  const float *b, bool by_group, double eps, double *y)
{
	int per = c / groups, cols = per * inner, r, j;

	for (r = 0; r < n * groups; r++) {
		const float *row = x + (size_t)r * cols;
		double m = 0, v = 0;

		for (j = 0; j < cols; j++)
			m += row[j];
		m /= cols;
		for (j = 0; j < cols; j++)
			v += (row[j] - m) * (row[j] - m);
		v /= cols;
		for (j = 0; j < cols; j++) {
			int g = r % groups, k = by_group ? g : g * per + j / inner;

			y[(size_t)r * cols + j] = (row[j] - m) / sqrt(v + eps) * s[k] + b[k];
		}
	}
}

/* ---------------------------------------------------- InstanceNormalization */

Test(ops_normalize, instancenorm_gives_the_specifications_example)
{
	float x[6] = { -1, 0, 1, 2, 3, 4 }, s[2] = { 1, 1.5f }, b[2] = { 0, 1 };
	static const float want[6] = { -1.2247356f, 0.0f, 1.2247356f, -0.8371035f, 1.0f, 2.8371034f };
	int64_t dx[4] = { 1, 2, 1, 3 }, dc[1] = { 2 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, dx, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, s),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, b) };
	struct op_tensor out;
	static const int opsets[] = { 7, 22 };
	size_t o;
	int i;

	for (o = 0; o < 2; o++) {
		cr_assert_eq(oh_run("InstanceNormalization", opsets[o], NULL, 0, in, 3, &out, 1), 0,
			     "%s", cep_last_error());
		cr_assert_eq(out.rank, 4);
		cr_assert_eq(out.dims[3], 3);
		for (i = 0; i < 6; i++)
			cr_assert_float_eq(((float *)out.data)[i], want[i], 1e-6, "element %d", i);
		free(out.data);
	}
}

/* Random (N, C, D1, D2, D3) with epsilon; rank 2 (every instance one
 * element: the result is B); float16 everywhere, bfloat16 from 22. */
Test(ops_normalize, instancenorm_shapes_and_types)
{
	enum { N = 2, C = 3, D = 2 * 3 * 2 };
	float x[N * C * D], s[C], b[C];
	double y[N * C * D];
	uint16_t hx[N * C * D], hs[C], hb[C];
	int64_t dx[5] = { N, C, 2, 3, 2 }, dc[1] = { C }, d2[2] = { N, C };
	struct op_attr eps[1] = { oh_float("epsilon", 1e-2f) };
	struct op_tensor in[3], out;
	unsigned seed = 3;
	int i;

	for (i = 0; i < N * C * D; i++)
		x[i] = frand(&seed) + 1.0f;
	for (i = 0; i < C; i++) {
		s[i] = frand(&seed);
		b[i] = frand(&seed);
	}
	ref_groupnorm(x, N, C, D, C, s, b, false, 1e-2f, y);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 5, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, s);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, b);
	cr_assert_eq(oh_run("InstanceNormalization", 7, eps, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(((float *)out.data)[i], y[i], 1e-5, "element %d", i);
	free(out.data);
	/* Rank 2: a mean of one element, a variance of 0. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d2, x);
	cr_assert_eq(oh_run("InstanceNormalization", 22, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C; i++)
		cr_assert_float_eq(((float *)out.data)[i], b[i % C], 1e-6);
	free(out.data);
	/* Half types: within their rounding of the float32 result. */
	store_all(hx, CEP_DTYPE_FLOAT16, x, N * C * D);
	store_all(hs, CEP_DTYPE_FLOAT16, s, C);
	store_all(hb, CEP_DTYPE_FLOAT16, b, C);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT16, 5, dx, hx);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 1, dc, hs);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT16, 1, dc, hb);
	cr_assert_eq(oh_run("InstanceNormalization", 7, eps, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(at(&out, i), y[i], 2e-2, "element %d", i);
	free(out.data);
	store_all(hx, CEP_DTYPE_BFLOAT16, x, N * C * D);
	store_all(hs, CEP_DTYPE_BFLOAT16, s, C);
	store_all(hb, CEP_DTYPE_BFLOAT16, b, C);
	in[0].dtype = in[1].dtype = in[2].dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("InstanceNormalization", 21, eps, 1, in, 3, &out, 1), CEP_EUNSUPPORTED,
		     "bfloat16 came at opset 22");
	cr_assert(strstr(cep_last_error(), "bfloat16"), "%s", cep_last_error());
	cr_assert_eq(oh_run("InstanceNormalization", 22, eps, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(at(&out, i), y[i], 8e-2, "element %d", i);
	free(out.data);
}

Test(ops_normalize, instancenorm_refusals_and_symbols)
{
	float x[6] = { 0 }, s[3] = { 0 };
	int64_t d1[1] = { 6 }, d23[2] = { 2, 3 }, d3[1] = { 3 }, d2[1] = { 2 };
	int64_t dsym[4] = { OP_DIM_SYM(0), 3, OP_DIM_SYM(1), 5 };
	struct op_tensor in[3], out;

	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, x);
	in[1] = in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, s);
	cr_assert_eq(oh_run("InstanceNormalization", 7, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "X has rank 1"), "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d23, x);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, s);
	cr_assert_eq(oh_run("InstanceNormalization", 7, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "InstanceNormalization: bias has shape [2]; it must be [C]"),
		  "%s", cep_last_error());
	in[2] = oh_tensor(CEP_DTYPE_FLOAT16, 1, d3, s);
	cr_assert_eq(oh_run("InstanceNormalization", 7, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	/* Symbolic dims pass through. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 4, dsym, NULL);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, NULL);
	cr_assert_eq(oh_infer("InstanceNormalization", 22, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[3], 5);
}

/* ------------------------------------------------------- GroupNormalization */

Test(ops_normalize, groupnorm_18_scales_per_group_and_21_per_channel)
{
	enum { N = 3, C = 6, G = 2, D = 5 };
	float x[N * C * D], s[C], b[C];
	double y[N * C * D];
	int64_t dx[3] = { N, C, D }, dg[1] = { G }, dc[1] = { C };
	struct op_attr a[2] = { oh_int("num_groups", G), oh_float("epsilon", 1e-3f) };
	struct op_tensor in[3], out;
	unsigned seed = 7;
	int i;

	for (i = 0; i < N * C * D; i++)
		x[i] = frand(&seed) * 2 - 0.5f;
	for (i = 0; i < C; i++) {
		s[i] = frand(&seed);
		b[i] = frand(&seed);
	}
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dg, s);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dg, b);
	ref_groupnorm(x, N, C, D, G, s, b, true, 1e-3f, y);
	cr_assert_eq(oh_run("GroupNormalization", 18, a, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(((float *)out.data)[i], y[i], 1e-5, "element %d", i);
	free(out.data);
	/* Opset 18 wants [num_groups], 21 [C]. */
	cr_assert_eq(oh_run("GroupNormalization", 21, a, 2, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "GroupNormalization: scale has shape [2]; it must be [C]"),
		  "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, s);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, b);
	cr_assert_eq(oh_run("GroupNormalization", 18, a, 2, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "it must be [num_groups]"), "%s", cep_last_error());
	ref_groupnorm(x, N, C, D, G, s, b, false, 1e-3f, y);
	cr_assert_eq(oh_run("GroupNormalization", 21, a, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(((float *)out.data)[i], y[i], 1e-5, "element %d", i);
	free(out.data);
}

Test(ops_normalize, groupnorm_gives_the_specifications_example)
{
	/* The first sample of ONNX's test_group_normalization_example. */
	static const float x[16] = {
		1.7640524f, 0.4001572f, 0.978738f, 2.2408931f, 1.867558f, -0.9772779f,
		0.9500884f, -0.1513572f, -0.10321885f, 0.41059852f, 0.14404356f, 1.4542735f,
		0.7610377f, 0.12167501f, 0.44386324f, 0.33367434f,
	};
	static const float s[4] = { -1.6138978f, -0.21274029f, -0.89546657f, 0.3869025f };
	static const float b[4] = { -0.5108051f, -1.1806322f, -0.02818223f, 0.42833188f };
	static const float want[16] = {
		-1.8994625f, 0.25292337f, -0.6601447f, -2.651973f, -1.3852135f, -0.79342014f,
		-1.194358f, -0.96523124f, 1.0615833f, 0.04158516f, 0.5707334f, -2.0302534f,
		0.69876444f, 0.15037373f, 0.42671925f, 0.33220863f,
	};
	int64_t dx[4] = { 1, 4, 2, 2 }, dc[1] = { 4 };
	struct op_attr a[1] = { oh_int("num_groups", 2) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, dx, (void *)x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, (void *)s),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, (void *)b) };
	struct op_tensor out;
	int i;

	cr_assert_eq(oh_run("GroupNormalization", 21, a, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < 16; i++)
		cr_assert_float_eq(((float *)out.data)[i], want[i], 2e-6, "element %d", i);
	free(out.data);
}

/* num_groups = C is InstanceNormalization; one group normalizes each
 * sample whole. */
Test(ops_normalize, groupnorm_with_c_groups_is_instancenorm)
{
	enum { N = 2, C = 4, D = 6 };
	float x[N * C * D], s[C], b[C], one[C] = { 1, 1, 1, 1 }, zero[C] = { 0 };
	double y[N * C * D];
	int64_t dx[3] = { N, C, D }, dc[1] = { C };
	struct op_attr ac[1] = { oh_int("num_groups", C) }, a1[1] = { oh_int("num_groups", 1) };
	struct op_tensor in[3], gn, inst;
	unsigned seed = 9;
	int i;

	for (i = 0; i < N * C * D; i++)
		x[i] = frand(&seed);
	for (i = 0; i < C; i++) {
		s[i] = frand(&seed);
		b[i] = frand(&seed);
	}
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, s);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, b);
	cr_assert_eq(oh_run("GroupNormalization", 21, ac, 1, in, 3, &gn, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(oh_run("InstanceNormalization", 21, NULL, 0, in, 3, &inst, 1), 0, "%s",
		     cep_last_error());
	cr_assert_arr_eq(gn.data, inst.data, sizeof(x));
	free(gn.data);
	free(inst.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, one);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, zero);
	ref_groupnorm(x, N, C, D, 1, one, zero, false, 1e-5f, y);
	cr_assert_eq(oh_run("GroupNormalization", 21, a1, 1, in, 3, &gn, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N * C * D; i++)
		cr_assert_float_eq(((float *)gn.data)[i], y[i], 1e-5);
	free(gn.data);
}

Test(ops_normalize, groupnorm_refusals_stash_type_and_symbols)
{
	float x[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, s[3] = { 1, 1, 1 }, z[3] = { 0 };
	int64_t dx[3] = { 1, 3, 4 }, d3[1] = { 3 }, dsym[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 7 };
	struct op_attr two[1] = { oh_int("num_groups", 2) }, zero[1] = { oh_int("num_groups", 0) };
	struct op_attr st[2] = { oh_int("num_groups", 3), oh_int("stash_type", 1) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, s),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, z) };
	struct op_tensor out;

	cr_assert_eq(oh_run("GroupNormalization", 21, NULL, 0, in, 3, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "num_groups is required"), "%s", cep_last_error());
	cr_assert_eq(oh_run("GroupNormalization", 21, zero, 1, in, 3, &out, 1), CEP_EMODEL);
	cr_assert_eq(oh_run("GroupNormalization", 21, two, 1, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "the 3 channels of X do not split into num_groups=2 groups"),
		  "%s", cep_last_error());
	cr_assert_eq(oh_run("GroupNormalization", 17, st, 1, in, 3, &out, 1), CEP_EUNSUPPORTED,
		     "GroupNormalization is in ai.onnx from 18");
	/* stash_type: float32 and double are computed (in double); half is refused. */
	cr_assert_eq(oh_run("GroupNormalization", 21, st, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -1.3416355f, 1e-5);
	free(out.data);
	st[1].i = 11;
	cr_assert_eq(oh_run("GroupNormalization", 21, st, 2, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	st[1].i = CEP_DTYPE_FLOAT16;
	cr_assert_eq(oh_run("GroupNormalization", 21, st, 2, in, 3, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "stash_type 10 (a half type) is not supported"), "%s",
		  cep_last_error());
	st[1].i = CEP_DTYPE_INT64;
	cr_assert_eq(oh_run("GroupNormalization", 21, st, 2, in, 3, &out, 1), CEP_EMODEL);
	/* A symbolic channel count is checked when the plan fixes it. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dsym, NULL);
	cr_assert_eq(oh_infer("GroupNormalization", 21, two, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out.dims[2], 7);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, NULL);
	in[1].dims[0] = OP_DIM_SYM(2);
	cr_assert_eq(oh_infer("GroupNormalization", 21, st, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
}

/* --------------------------------------------------------- RMSNormalization */

/* x / sqrt(mean(x^2 over each row of cols) + eps), into y. */
static void ref_rms(const float *x, int rows, int cols, double eps, double *y)
{
	int r, j;

	for (r = 0; r < rows; r++) {
		double ms = 0;

		for (j = 0; j < cols; j++)
			ms += (double)x[r * cols + j] * x[r * cols + j];
		ms /= cols;
		for (j = 0; j < cols; j++)
			y[r * cols + j] = x[r * cols + j] / sqrt(ms + eps);
	}
}

Test(ops_normalize, rmsnorm_along_every_axis)
{
	enum { A = 2, B = 3, C = 4, N = A * B * C };
	float x[N], s[N];
	double y[N];
	int64_t dx[3] = { A, B, C };
	struct op_attr a[2] = { oh_int("axis", 0), oh_float("epsilon", 1e-3f) };
	struct op_tensor in[2], out;
	unsigned seed = 13;
	int axis, i;

	for (i = 0; i < N; i++) {
		x[i] = frand(&seed);
		s[i] = frand(&seed);
	}
	for (axis = -3; axis < 3; axis++) {
		int k = axis < 0 ? axis + 3 : axis;
		int64_t ds[3] = { A, B, C };
		int cols = k == 0 ? N : k == 1 ? B * C : C;

		a[0].i = axis;
		ref_rms(x, N / cols, cols, 1e-3f, y);
		/* Scale of the normalized dims: by column. */
		in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
		in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3 - k, ds + k, s);
		cr_assert_eq(oh_run("RMSNormalization", 23, a, 2, in, 2, &out, 1), 0, "axis %d: %s",
			     axis, cep_last_error());
		cr_assert_eq(out.rank, 3);
		for (i = 0; i < N; i++)
			cr_assert_float_eq(((float *)out.data)[i], y[i] * s[i % cols], 1e-5,
					   "axis %d element %d", axis, i);
		free(out.data);
	}
}

/* One Scale element; Scale varying along the rows too (it broadcasts one
 * way to X); the default axis; float16 and bfloat16. */
Test(ops_normalize, rmsnorm_broadcasts_scale_one_way)
{
	enum { A = 2, B = 3, C = 8, N = A * B * C };
	float x[N], s1[1] = { 3.0f }, srow[A * C];
	double y[N];
	uint16_t h[N], hs[A * C];
	int64_t dx[3] = { A, B, C }, d1[1] = { 1 }, drow[3] = { A, 1, C };
	struct op_tensor in[2], out;
	static const cep_dtype halves[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	unsigned seed = 17;
	int i, t;

	for (i = 0; i < N; i++)
		x[i] = frand(&seed);
	for (i = 0; i < A * C; i++)
		srow[i] = frand(&seed);
	ref_rms(x, A * B, C, 1e-5f, y);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, s1);
	cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N; i++)
		cr_assert_float_eq(((float *)out.data)[i], 3 * y[i], 1e-5);
	free(out.data);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, drow, srow);
	cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	for (i = 0; i < N; i++)
		cr_assert_float_eq(((float *)out.data)[i], y[i] * srow[(i / (B * C)) * C + i % C],
				   1e-5, "element %d", i);
	free(out.data);
	for (t = 0; t < 2; t++) {
		store_all(h, halves[t], x, N);
		store_all(hs, halves[t], srow, A * C);
		in[0] = oh_tensor(halves[t], 3, dx, h);
		in[1] = oh_tensor(halves[t], 3, drow, hs);
		cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, halves[t]);
		for (i = 0; i < N; i++)
			cr_assert_float_eq(at(&out, i), y[i] * srow[(i / (B * C)) * C + i % C],
					   t ? 5e-2 : 1e-2, "%s element %d", cep_dtype_name(halves[t]), i);
		free(out.data);
	}
}

Test(ops_normalize, rmsnorm_refusals_and_symbols)
{
	float x[6] = { 1, 2, 3, 4, 5, 6 }, s[4] = { 1, 1, 1, 1 };
	uint16_t hs[3] = { 0 };
	int64_t dx[2] = { 2, 3 }, d3[1] = { 3 }, d4[1] = { 4 }, dbig[3] = { 1, 2, 3 };
	int64_t dsym[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 3 };
	struct op_attr ax[1] = { oh_int("axis", 2) }, st[1] = { oh_int("stash_type", 16) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d4, s) };
	struct op_tensor out;

	cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Scale of shape [4] does not broadcast to X of shape [2,3]"),
		  "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dbig, s);
	cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "higher rank"), "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, s);
	cr_assert_eq(oh_run("RMSNormalization", 23, ax, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "RMSNormalization: axis 2 is out of range for rank 2"),
		  "%s", cep_last_error());
	cr_assert_eq(oh_run("RMSNormalization", 23, st, 1, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("RMSNormalization", 22, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED,
		     "RMSNormalization is in ai.onnx from 23");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 1, d3, hs);
	cr_assert_eq(oh_run("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "X is float32 and Scale float16"), "%s",
		  cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dsym, NULL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, NULL);
	cr_assert_eq(oh_infer("RMSNormalization", 23, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
}

/* ---------------------------------------------------------- LpNormalization */

Test(ops_normalize, lpnorm_gives_the_specifications_examples)
{
	float x1[4] = { 3, 4, 6, 8 };
	float x2[12] = { 1, 2, 2, 3, 4, 0, 0, 5, 5, 6, 8, 0 };
	static const float want1[4] = { 3.0f / 7, 4.0f / 7, 6.0f / 14, 8.0f / 14 };
	static const float want2[12] = { 1.0f, 0.37139067f, 0.37139067f, 0.4472136f, 0.4472136f, 0.0f,
					 0.0f, 0.9284767f, 0.9284767f, 0.8944272f, 0.8944272f, 0.0f };
	int64_t d22[2] = { 2, 2 }, d223[3] = { 2, 2, 3 };
	struct op_attr l1[2] = { oh_int("axis", 1), oh_int("p", 1) };
	struct op_attr l2[2] = { oh_int("axis", 0), oh_int("p", 2) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, d22, x1), out;
	int i;

	cr_assert_eq(oh_run("LpNormalization", 22, l1, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 4; i++)
		cr_assert_float_eq(((float *)out.data)[i], want1[i], 1e-7);
	free(out.data);
	/* Along axis 0, with columns of zeros: their norm is 0, so are they. */
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, d223, x2);
	cr_assert_eq(oh_run("LpNormalization", 7, l2, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 12; i++)
		cr_assert_float_eq(((float *)out.data)[i], want2[i], 1e-7, "element %d", i);
	free(out.data);
}

/* |x| sums for p 1 (negative values included), the default p 2 and axis
 * -1, every axis of a rank-3 tensor, and the half types. */
Test(ops_normalize, lpnorm_p1_p2_every_axis_and_types)
{
	enum { A = 3, B = 4, C = 5, N = A * B * C };
	float x[N];
	uint16_t h[N];
	int64_t dx[3] = { A, B, C }, size[3] = { A, B, C };
	struct op_attr a[2] = { oh_int("axis", 0), oh_int("p", 1) };
	struct op_tensor in, out;
	unsigned seed = 19;
	int axis, p, i, k;

	for (i = 0; i < N; i++)
		x[i] = frand(&seed);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
	for (p = 1; p <= 2; p++) {
		for (axis = -1; axis < 3; axis++) {
			int ax = axis < 0 ? 2 : axis;
			int64_t inner = ax == 0 ? B * C : ax == 1 ? C : 1;

			a[0].i = axis;
			a[1].i = p;
			cr_assert_eq(oh_run("LpNormalization", 22, a, 2, &in, 1, &out, 1), 0, "%s",
				     cep_last_error());
			for (i = 0; i < N; i++) {
				int64_t first = i - ((i / inner) % size[ax]) * inner;
				double norm = 0;

				for (k = 0; k < size[ax]; k++) {
					double v = x[first + k * inner];

					norm += p == 1 ? fabs(v) : v * v;
				}
				norm = p == 1 ? norm : sqrt(norm);
				cr_assert_float_eq(((float *)out.data)[i], x[i] / norm, 1e-6,
						   "p %d axis %d element %d", p, axis, i);
			}
			free(out.data);
		}
	}
	/* The defaults: p 2 along the last axis. */
	cr_assert_eq(oh_run("LpNormalization", 7, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < C; i++) {
		double norm = 0;

		for (k = 0; k < C; k++)
			norm += (double)x[k] * x[k];
		cr_assert_float_eq(((float *)out.data)[i], x[i] / sqrt(norm), 1e-6);
	}
	free(out.data);
	store_all(h, CEP_DTYPE_FLOAT16, x, N);
	in = oh_tensor(CEP_DTYPE_FLOAT16, 3, dx, h);
	cr_assert_eq(oh_run("LpNormalization", 7, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	free(out.data);
	in.dtype = CEP_DTYPE_BFLOAT16;
	cr_assert_eq(oh_run("LpNormalization", 21, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED,
		     "bfloat16 came at opset 22");
	cr_assert_eq(oh_run("LpNormalization", 22, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
}

Test(ops_normalize, lpnorm_refusals_and_symbols)
{
	float x[4] = { 1, 2, 3, 4 };
	int64_t dx[2] = { 2, 2 }, dsym[2] = { OP_DIM_SYM(0), 2 };
	struct op_attr p3[1] = { oh_int("p", 3) }, ax[1] = { oh_int("axis", -3) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, x), out;

	cr_assert_eq(oh_run("LpNormalization", 22, p3, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "LpNormalization: p is 3; only 1 and 2 are defined"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run("LpNormalization", 22, ax, 1, &in, 1, &out, 1), CEP_EMODEL);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, dsym, NULL);
	cr_assert_eq(oh_infer("LpNormalization", 22, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
}

/* ------------------------------------------------------------ half sessions */

/* What converting pm for precision p on the host did, printed. */
static struct engine_precision_stats stats_of(const struct pm_model *pm, cep_precision p)
{
	struct engine_model_options mo = { .precision = p, .backend = BACKEND_HOST };
	struct engine_precision_stats st;
	engine_model *m;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	engine_model_precision_stats(m, &st);
	engine_model_unref(m);
	printf("  %s %s: %d half nodes, %d float32 nodes, %d casts\n", pm->what,
	       engine_precision_name(p), st.half_nodes, st.float_nodes, st.casts);
	return st;
}

/* x [2, 8, 4, 4] -> GroupNormalization (4 groups) -> InstanceNormalization
 * -> RMSNormalization over the last two dims -> LpNormalization along
 * the channels -> y; opset 23. As LayerNormalization does, each computes
 * in the session's half type with its statistics in float32 or wider
 * (stash_type stays float32), so no node is left in float32. */
Test(ops_normalize, a_half_session_computes_them_in_half)
{
	static const int64_t xd[4] = { 2, 8, 4, 4 };
	unsigned seed = 29u ^ (unsigned)getpid();
	struct pm_model pm = { .what = "norms" };
	struct onnxb *b = onnxb_new(23);
	struct backend *be;
	cep_precision p;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,8,4,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,8,4,4");
	pm_init(b, "gs", "8", 8, 0.5f, 1.5f, &seed);
	pm_init(b, "gb", "8", 8, -0.5f, 0.5f, &seed);
	pm_init(b, "is", "8", 8, 0.5f, 1.5f, &seed);
	pm_init(b, "ib", "8", 8, -0.5f, 0.5f, &seed);
	pm_init(b, "rs", "4,4", 16, 0.5f, 1.5f, &seed);
	onnxb_attr_int(onnxb_node(b, "GroupNormalization", "x,gs,gb", "g"), "num_groups", 4);
	onnxb_node(b, "InstanceNormalization", "g,is,ib", "i");
	onnxb_attr_int(onnxb_node(b, "RMSNormalization", "i,rs", "r"), "axis", 2);
	onnxb_attr_int(onnxb_node(b, "LpNormalization", "r", "y"), "axis", 1);
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 4, xd, 0);
	pm.out[pm.n_out++] = "y";
	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		struct engine_precision_stats st = stats_of(&pm, p);

		cr_assert_eq(st.float_nodes, 0, "%s", st.first_float);
		cr_assert_eq(st.half_nodes, 4);
		pm_compare(&pm, be, p, be, &seed, 2, 1e-2);
	}
	backend_free(be);
	pm_model_free(&pm);
}
