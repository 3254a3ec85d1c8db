/*
 * test_ops_contrib.c — onnxruntime's contrib operators on the host, the
 * ones its transformer optimizer writes: com.microsoft
 * SkipLayerNormalization and SkipSimplifiedLayerNormalization with every
 * optional input and output, SimplifiedLayerNormalization (ai.onnx, where
 * onnxruntime defines it, and com.microsoft), onnxruntime's
 * LayerNormalization before opset 17, com.microsoft Gelu, QuickGelu,
 * FastGelu, BiasGelu and BiasAdd. Each is run as the engine runs a node
 * (schema inference, then the host kernel) and compared with the formula
 * worked out here in double, in float32, float16 and bfloat16 where the
 * operator takes them; then the refusals: shapes, types, an unknown
 * com.microsoft operator and a com.microsoft opset past 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define MS OP_DOMAIN_MS

/* ------------------------------------------------------------------ helpers */

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(out[i].data);
		out[i].data = NULL;
	}
}

/* n random floats in [-scale, scale), rounded to t, kept as floats (the
 * values the reference sees) and stored as t in *raw (malloc'ed). */
static float *rand_vals(cep_dtype t, int64_t n, float scale, unsigned *seed, void **raw)
{
	float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
	int64_t i;

	*raw = malloc((size_t)(n ? n : 1) * cep_dtype_size(t));
	cr_assert(v && *raw);
	for (i = 0; i < n; i++) {
		cpu_store_f(*raw, t, i, oh_rand(seed) * scale);
		v[i] = cpu_load_f(*raw, t, i);
	}
	return v;
}

/* The tolerance of a result rounded to t from a double reference. */
static double tol_of(cep_dtype t, double ref)
{
	double rel = t == CEP_DTYPE_BFLOAT16 ? 8e-3 : t == CEP_DTYPE_FLOAT16 ? 1e-3 : 2e-6;

	return 1e-6 + rel * fabs(ref);
}

/* v rounded to the float type t, as a float. */
static float round_to(cep_dtype t, float v)
{
	uint64_t raw;

	cpu_store_f(&raw, t, 0, v);
	return cpu_load_f(&raw, t, 0);
}

/* Element i of output o (any float type) as a double. */
static double at(const struct op_tensor *o, int64_t i)
{
	return cpu_load_f(o->data, o->dtype, i);
}

static const cep_dtype float_types[3] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
};

/*
 * The reference of every layer normalization here: rows of h elements of
 * v (already summed with skip and bias where the form adds them), with
 * the mean subtracted unless rms, scaled by g and shifted by b (NULL:
 * none) per column; y, mean and inv per row.
 */
static void ref_norm(const double *v, int rows, int h, bool rms, double eps, const float *g,
		     const float *b, double *y, double *mean, double *inv)
{
	int r, j;

	for (r = 0; r < rows; r++) {
		double m = 0, sq = 0;

		for (j = 0; rms == false && j < h; j++)
			m += v[r * h + j];
		m /= h;
		for (j = 0; j < h; j++)
			sq += (v[r * h + j] - m) * (v[r * h + j] - m);
		mean[r] = m;
		inv[r] = 1 / sqrt(sq / h + eps);
		for (j = 0; j < h; j++)
			y[r * h + j] = (v[r * h + j] - m) * inv[r] * g[j] + (b ? b[j] : 0.0);
	}
}

/* ---------------------------------------------- SkipLayerNormalization */

/*
 * SkipLayerNormalization over (B, S, H) in each float type, with beta
 * and bias or without: output, mean, inv_std_var and input_skip_bias_sum
 * against the formula. The sum is added in float (so its rounding to the
 * type is exactly what the output holds) and normalized unrounded.
 */
Test(ops_contrib, skip_layernorm_every_output_every_type)
{
	enum { B = 2, S = 3, H = 40, N = B * S * H };
	int64_t dx[3] = { B, S, H }, dh[1] = { H };
	struct op_attr eps[1] = { oh_float("epsilon", 1e-5f) };
	unsigned seed = 11;
	size_t t;
	int full;

	for (t = 0; t < 3; t++) {
		for (full = 0; full < 2; full++) {
			cep_dtype dt = float_types[t];
			void *rx, *rk, *rg, *rb, *ra;
			float *x = rand_vals(dt, N, 3, &seed, &rx), *k = rand_vals(dt, N, 3, &seed, &rk);
			float *g = rand_vals(dt, H, 1.5f, &seed, &rg), *b = rand_vals(dt, H, 1, &seed, &rb);
			float *a = rand_vals(dt, H, 1, &seed, &ra);
			double v[N], y[N], mean[B * S], inv[B * S];
			struct op_tensor in[5], out[4];
			int i, n_in = full ? 5 : 3;

			for (i = 0; i < N; i++) {
				float s = x[i] + k[i];

				v[i] = full ? (double)(s + a[i % H]) : (double)s;
			}
			ref_norm(v, B * S, H, false, 1e-5, g, full ? b : NULL, y, mean, inv);
			in[0] = oh_tensor(dt, 3, dx, rx);
			in[1] = oh_tensor(dt, 3, dx, rk);
			in[2] = oh_tensor(dt, 1, dh, rg);
			in[3] = oh_tensor(dt, 1, dh, rb);
			in[4] = oh_tensor(dt, 1, dh, ra);
			cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, eps, 1, in, n_in, out, 4),
				     0, "%s", cep_last_error());
			cr_assert_eq(out[0].dtype, dt);
			cr_assert_eq(out[3].dtype, dt);
			cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT32);
			cr_assert_eq(out[2].dtype, CEP_DTYPE_FLOAT32);
			cr_assert(out[1].rank == 3 && out[1].dims[0] == B && out[1].dims[1] == S &&
				  out[1].dims[2] == 1);
			for (i = 0; i < N; i++) {
				float s = x[i] + k[i];

				if (full)
					s += a[i % H];
				cr_assert(fabs(at(&out[0], i) - y[i]) <= tol_of(dt, y[i]),
					  "%s full %d y[%d] %g, want %g", cep_dtype_name(dt), full, i,
					  at(&out[0], i), y[i]);
				cr_assert_eq(at(&out[3], i), round_to(dt, s), "sum [%d]", i);
			}
			for (i = 0; i < B * S; i++) {
				cr_assert_float_eq(at(&out[1], i), mean[i], 1e-5 + 1e-6 * fabs(mean[i]));
				cr_assert_float_eq(at(&out[2], i), inv[i], 1e-6 * inv[i]);
			}
			outs_free(out, 4);
			free(x), free(k), free(g), free(b), free(a);
			free(rx), free(rk), free(rg), free(rb), free(ra);
		}
	}
}

/* skip of (1, S, H) and of (S, H) repeats over the batch; a rank-2 input
 * (tokens, hidden) takes a skip of its own shape; epsilon defaults to
 * 1e-12; only output 0 asked for. */
Test(ops_contrib, skip_layernorm_skip_repeats_over_the_batch)
{
	enum { B = 3, S = 2, H = 5, N = B * S * H };
	int64_t dx[3] = { B, S, H }, dk3[3] = { 1, S, H }, dk2[2] = { S, H }, dt2[2] = { B * S, H };
	int64_t dh[1] = { H };
	float x[N], k[S * H], g[H], v1[N];
	double v[N], y[N], mean[B * S], inv[B * S];
	struct op_tensor in[3], out[1];
	unsigned seed = 13;
	int i, c;

	for (i = 0; i < N; i++)
		x[i] = oh_rand(&seed) * 2;
	for (i = 0; i < S * H; i++)
		k[i] = oh_rand(&seed);
	for (i = 0; i < H; i++)
		g[i] = 1 + oh_rand(&seed) / 2;
	for (i = 0; i < N; i++)
		v[i] = (double)(x[i] + k[i % (S * H)]);
	ref_norm(v, B * S, H, false, 1e-12, g, NULL, y, mean, inv);
	for (c = 0; c < 2; c++) {
		in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
		in[1] = oh_tensor(CEP_DTYPE_FLOAT32, c ? 2 : 3, c ? dk2 : dk3, k);
		in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dh, g);
		cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), 0,
			     "%s", cep_last_error());
		for (i = 0; i < N; i++)
			cr_assert_float_eq(at(&out[0], i), y[i], 2e-6 * (1 + fabs(y[i])), "skip %d [%d]",
					   c, i);
		outs_free(out, 1);
	}
	/* (tokens, hidden): the same rows, with a skip of the same shape. */
	for (i = 0; i < N; i++)
		v1[i] = k[i % (S * H)];
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dt2, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dt2, v1);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dh, g);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out[0].rank, 2);
	for (i = 0; i < N; i++)
		cr_assert_float_eq(at(&out[0], i), y[i], 2e-6 * (1 + fabs(y[i])));
	outs_free(out, 1);
}

/* The root-mean-square form: input + skip + bias divided by its root mean
 * square, times gamma; mean is 0 (none is subtracted). */
Test(ops_contrib, skip_simplified_layernorm_every_output_every_type)
{
	enum { T = 6, H = 33, N = T * H };
	int64_t dx[2] = { T, H }, dh[1] = { H };
	struct op_attr eps[1] = { oh_float("epsilon", 1e-6f) };
	unsigned seed = 17;
	size_t t;

	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		void *rx, *rk, *rg, *ra;
		float *x = rand_vals(dt, N, 4, &seed, &rx), *k = rand_vals(dt, N, 4, &seed, &rk);
		float *g = rand_vals(dt, H, 2, &seed, &rg), *a = rand_vals(dt, H, 1, &seed, &ra);
		double v[N], y[N], mean[T], inv[T];
		struct op_tensor in[4], out[4];
		int i;

		for (i = 0; i < N; i++)
			v[i] = (double)(x[i] + k[i] + a[i % H]);
		ref_norm(v, T, H, true, 1e-6, g, NULL, y, mean, inv);
		in[0] = oh_tensor(dt, 2, dx, rx);
		in[1] = oh_tensor(dt, 2, dx, rk);
		in[2] = oh_tensor(dt, 1, dh, rg);
		in[3] = oh_tensor(dt, 1, dh, ra);
		cr_assert_eq(oh_run_in(MS, "SkipSimplifiedLayerNormalization", 1, eps, 1, in, 4, out,
				       4), 0, "%s", cep_last_error());
		cr_assert(out[2].rank == 2 && out[2].dims[0] == T && out[2].dims[1] == 1);
		for (i = 0; i < N; i++) {
			cr_assert(fabs(at(&out[0], i) - y[i]) <= tol_of(dt, y[i]), "%s y[%d] %g, want %g",
				  cep_dtype_name(dt), i, at(&out[0], i), y[i]);
			cr_assert(fabs(at(&out[3], i) - v[i]) <= tol_of(dt, v[i]));
		}
		for (i = 0; i < T; i++) {
			cr_assert_eq(at(&out[1], i), 0.0);
			cr_assert_float_eq(at(&out[2], i), inv[i], 1e-6 * inv[i]);
		}
		outs_free(out, 4);
		free(x), free(k), free(g), free(a), free(rx), free(rk), free(rg), free(ra);
	}
}

/* ---------------------------------------- SimplifiedLayerNormalization */

/*
 * SimplifiedLayerNormalization in ai.onnx (at opsets 1 and 17: onnxruntime
 * defines it at 1, so every opset has it) and in com.microsoft: x over its
 * root mean square times scale, with inv_std_var; axis 1 with a scale of
 * the normalized dims, and a scale broadcast one way.
 */
Test(ops_contrib, simplified_layernorm_both_domains_and_axes)
{
	enum { A = 2, Bd = 3, C = 4, N = A * Bd * C };
	int64_t dx[3] = { A, Bd, C }, dfull[2] = { Bd, C }, dlast[1] = { C };
	static const struct { const char *domain; int opset; } where[3] = {
		{ "", 1 }, { "", 17 }, { MS, 1 },
	};
	struct op_attr ax1[2] = { oh_int("axis", 1), oh_float("epsilon", 1e-3f) };
	float x[N], sfull[Bd * C], slast[C], g[Bd * C];
	double v[N], y[N], mean[A * Bd], inv[A * Bd];
	struct op_tensor in[2], out[2];
	unsigned seed = 19;
	int i, w, s;

	for (i = 0; i < N; i++) {
		x[i] = oh_rand(&seed) * 3;
		v[i] = x[i];
	}
	for (i = 0; i < Bd * C; i++)
		sfull[i] = oh_rand(&seed) + 1;
	for (i = 0; i < C; i++)
		slast[i] = oh_rand(&seed) + 1;
	for (w = 0; w < 3; w++) {
		for (s = 0; s < 2; s++) {
			/* axis 1: rows of Bd * C; the scale is full or its last dim
			 * repeated along the normalized rows. */
			for (i = 0; i < Bd * C; i++)
				g[i] = s ? slast[i % C] : sfull[i];
			ref_norm(v, A, Bd * C, true, 1e-3, g, NULL, y, mean, inv);
			in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x);
			in[1] = s ? oh_tensor(CEP_DTYPE_FLOAT32, 1, dlast, slast)
				  : oh_tensor(CEP_DTYPE_FLOAT32, 2, dfull, sfull);
			cr_assert_eq(oh_run_in(where[w].domain, "SimplifiedLayerNormalization",
					       where[w].opset, ax1, 2, in, 2, out, 2), 0, "%s",
				     cep_last_error());
			cr_assert(out[1].rank == 3 && out[1].dims[0] == A && out[1].dims[1] == 1 &&
				  out[1].dims[2] == 1 && out[1].dtype == CEP_DTYPE_FLOAT32);
			for (i = 0; i < N; i++)
				cr_assert_float_eq(at(&out[0], i), y[i], 2e-6 * (1 + fabs(y[i])),
						   "%d %d [%d]", w, s, i);
			for (i = 0; i < A; i++)
				cr_assert_float_eq(at(&out[1], i), inv[i], 1e-6 * inv[i]);
			outs_free(out, 2);
		}
	}
}

/* Half types, the default axis (-1) and epsilon (1e-5); stash_type 11
 * (double) is refused by name, others as not defined. */
Test(ops_contrib, simplified_layernorm_half_types_and_stash)
{
	enum { R = 5, C = 24, N = R * C };
	int64_t dx[2] = { R, C }, dc[1] = { C };
	struct op_attr st11[1] = { oh_int("stash_type", 11) }, st16[1] = { oh_int("stash_type", 16) };
	struct op_tensor in[2], out[2];
	unsigned seed = 23;
	size_t t;
	int i;

	for (t = 1; t < 3; t++) {
		cep_dtype dt = float_types[t];
		void *rx, *rg;
		float *x = rand_vals(dt, N, 8, &seed, &rx), *g = rand_vals(dt, C, 2, &seed, &rg);
		double v[N], y[N], mean[R], inv[R];

		for (i = 0; i < N; i++)
			v[i] = x[i];
		ref_norm(v, R, C, true, 1e-5, g, NULL, y, mean, inv);
		in[0] = oh_tensor(dt, 2, dx, rx);
		in[1] = oh_tensor(dt, 1, dc, rg);
		cr_assert_eq(oh_run("SimplifiedLayerNormalization", 13, NULL, 0, in, 2, out, 1), 0,
			     "%s", cep_last_error());
		cr_assert_eq(out[0].dtype, dt);
		for (i = 0; i < N; i++)
			cr_assert(fabs(at(&out[0], i) - y[i]) <= tol_of(dt, y[i]));
		outs_free(out, 1);
		cr_assert_eq(oh_run("SimplifiedLayerNormalization", 13, st11, 1, in, 2, out, 2),
			     CEP_EUNSUPPORTED);
		cr_assert(strstr(cep_last_error(), "SimplifiedLayerNormalization: stash_type 11 (double) is not supported"),
			  "%s", cep_last_error());
		cr_assert_eq(oh_run("SimplifiedLayerNormalization", 13, st16, 1, in, 2, out, 2),
			     CEP_EMODEL);
		free(x), free(g), free(rx), free(rg);
	}
}

/* onnxruntime's LayerNormalization before opset 17 gives what opset 17's
 * does. */
Test(ops_contrib, layernorm_before_17_is_onnxruntimes)
{
	enum { R = 4, C = 10, N = R * C };
	int64_t dx[2] = { R, C }, dc[1] = { C };
	float x[N], g[C], b[C];
	struct op_tensor in[3], out16[3], out17[3];
	unsigned seed = 29;
	int i, k;

	for (i = 0; i < N; i++)
		x[i] = oh_rand(&seed) * 5;
	for (i = 0; i < C; i++) {
		g[i] = oh_rand(&seed);
		b[i] = oh_rand(&seed);
	}
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, g);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, b);
	cr_assert_eq(oh_run("LayerNormalization", 1, NULL, 0, in, 3, out16, 3), 0, "%s",
		     cep_last_error());
	cr_assert_eq(oh_run("LayerNormalization", 17, NULL, 0, in, 3, out17, 3), 0, "%s",
		     cep_last_error());
	for (k = 0; k < 3; k++)
		cr_assert_arr_eq(out16[k].data, out17[k].data, op_tensor_bytes(&out17[k]));
	outs_free(out16, 3);
	outs_free(out17, 3);
}

/* The layer normalizations' refusals, each naming what was wrong. */
Test(ops_contrib, skip_layernorm_refusals)
{
	float buf[64] = { 0 };
	uint16_t hbuf[64] = { 0 };
	int32_t ibuf[64] = { 0 };
	int64_t d4[4] = { 1, 2, 2, 4 }, d3[3] = { 2, 2, 4 }, dk_bad[3] = { 2, 1, 4 };
	int64_t d4h[1] = { 4 }, d5h[1] = { 5 }, d2h[2] = { 1, 4 }, d1[1] = { 4 };
	struct op_tensor in[5], out[4];

	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 4, d4, buf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, d4, buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d4h, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "SkipLayerNormalization: input has rank 4; it must be (tokens, hidden) or (batch, sequence, hidden)"),
		  "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, buf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d1, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, d3, buf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dk_bad, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "skip of shape [2,1,4] must have input's shape [2,2,4], or be (1, S, H) or (S, H) of it"),
		  "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d2h, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, d3, buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d5h, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "SkipLayerNormalization: gamma must have shape (hidden) = (4)"),
		  "%s", cep_last_error());
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d4h, buf);
	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d2h, buf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 4, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "beta must have shape"), "%s", cep_last_error());
	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d5h, buf);
	cr_assert_eq(oh_run_in(MS, "SkipSimplifiedLayerNormalization", 1, NULL, 0, in, 4, out, 1),
		     CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "SkipSimplifiedLayerNormalization: bias must have shape"),
		  "%s", cep_last_error());
	in[3] = oh_tensor(CEP_DTYPE_FLOAT16, 1, d4h, hbuf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 4, out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "input 3 is float16 but input 0 is float32"), "%s",
		  cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_INT32, 3, d3, ibuf);
	in[1] = oh_tensor(CEP_DTYPE_INT32, 3, d3, ibuf);
	in[2] = oh_tensor(CEP_DTYPE_INT32, 1, d4h, ibuf);
	cr_assert_eq(oh_run_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "SkipLayerNormalization: input is int32, a float type is needed"),
		  "%s", cep_last_error());
	/* Symbols: a skip of (S?, H) against (B?, S?, H) waits for the plan. */
	{
		int64_t ds[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 4 }, dks[2] = { OP_DIM_SYM(1), 4 };

		in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, ds, NULL);
		in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dks, NULL);
		in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 1, d4h, NULL);
		cr_assert_eq(oh_infer_in(MS, "SkipLayerNormalization", 1, NULL, 0, in, 3, out, 4), 0,
			     "%s", cep_last_error());
		cr_assert(out[1].dims[0] == OP_DIM_SYM(0) && out[1].dims[1] == OP_DIM_SYM(1) &&
			  out[1].dims[2] == 1);
		cr_assert(out[3].rank == 3 && out[3].dims[0] == OP_DIM_SYM(0));
	}
}

/* ------------------------------------------------------------ activations */

static double gelu_erf(double v)
{
	return 0.5 * v * (1 + erf(v / sqrt(2.0)));
}

static double gelu_tanh(double v)
{
	return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

/* Gelu, QuickGelu (default and given alpha), FastGelu with and without
 * its bias, BiasGelu, in each float type, against the formulas. */
Test(ops_contrib, gelu_forms_every_type)
{
	enum { R = 3, C = 16, N = R * C };
	int64_t dx[2] = { R, C }, dc[1] = { C };
	struct op_attr alpha[1] = { oh_float("alpha", -0.75f) };
	unsigned seed = 31;
	size_t t;
	int i, f;

	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		void *rx, *rb;
		float *x = rand_vals(dt, N, 5, &seed, &rx), *b = rand_vals(dt, C, 1, &seed, &rb);
		struct op_tensor in[2] = { oh_tensor(dt, 2, dx, rx), oh_tensor(dt, 1, dc, rb) };
		struct op_tensor out[1];

		for (f = 0; f < 6; f++) {
			static const char *const ops[6] = { "Gelu", "QuickGelu", "QuickGelu",
							    "FastGelu", "FastGelu", "BiasGelu" };
			int n_in = f == 4 || f == 5 ? 2 : 1;

			cr_assert_eq(oh_run_in(MS, ops[f], 1, f == 2 ? alpha : NULL, f == 2, in, n_in,
					       out, 1), 0, "%s: %s", ops[f], cep_last_error());
			for (i = 0; i < N; i++) {
				double v = x[i] + (n_in == 2 ? (double)b[i % C] : 0.0), want;

				if (f == 0 || f == 5)
					want = gelu_erf(v);
				else if (f == 1 || f == 2)
					want = v / (1 + exp(-(f == 1 ? 1.702 : -0.75) * v));
				else
					want = gelu_tanh(v);
				cr_assert(fabs(at(&out[0], i) - want) <= tol_of(dt, want) + 1e-6,
					  "%s %s [%d] of %g: %g, want %g", ops[f], cep_dtype_name(dt), i,
					  v, at(&out[0], i), want);
			}
			outs_free(out, 1);
		}
		free(x), free(b), free(rx), free(rb);
	}
}

Test(ops_contrib, gelu_forms_refusals)
{
	float buf[16] = { 0 };
	int64_t ibuf[16] = { 0 };
	int64_t dx[2] = { 2, 4 }, d3[1] = { 3 }, d14[2] = { 1, 4 };
	struct op_attr ialpha[1] = { oh_int("alpha", 2) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, dx, buf),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d3, buf) };
	struct op_tensor out[1];

	cr_assert_eq(oh_run_in(MS, "BiasGelu", 1, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "BiasGelu: the bias must have shape (4), the input's last dimension"),
		  "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d14, buf);
	cr_assert_eq(oh_run_in(MS, "FastGelu", 1, NULL, 0, in, 2, out, 1), CEP_ESHAPE);
	cr_assert_eq(oh_run_in(MS, "QuickGelu", 1, ialpha, 1, in, 1, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "alpha"), "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_INT64, 2, dx, ibuf);
	cr_assert_eq(oh_run_in(MS, "Gelu", 1, NULL, 0, in, 1, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "Gelu: dtype int64 is not supported on the host backend"),
		  "%s", cep_last_error());
	cr_assert_eq(oh_run_in(MS, "FastGelu", 1, NULL, 0, in, 1, out, 1), CEP_EDTYPE);
}

/* ---------------------------------------------------------------- BiasAdd */

/* X + bias + skip, in float and rounded once for float16; bfloat16 is not
 * a type onnxruntime gives it; the shapes it needs. */
Test(ops_contrib, bias_add_values_and_refusals)
{
	enum { N = 2, S = 3, C = 4, E = N * S * C };
	int64_t dx[3] = { N, S, C }, dc[1] = { C }, dbad[3] = { N, 1, C }, d2[2] = { S, C };
	float buf[E] = { 0 };
	unsigned seed = 37;
	size_t t;
	int i;

	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		void *rx, *rb, *rk;
		float *x = rand_vals(dt, E, 4, &seed, &rx), *b = rand_vals(dt, C, 1, &seed, &rb);
		float *k = rand_vals(dt, E, 4, &seed, &rk);
		struct op_tensor in[3] = { oh_tensor(dt, 3, dx, rx), oh_tensor(dt, 1, dc, rb),
					   oh_tensor(dt, 3, dx, rk) };
		struct op_tensor out[1];

		if (dt == CEP_DTYPE_BFLOAT16) {
			cr_assert_eq(oh_run_in(MS, "BiasAdd", 1, NULL, 0, in, 3, out, 1),
				     CEP_EUNSUPPORTED);
			cr_assert(strstr(cep_last_error(), "BiasAdd: dtype bfloat16 is not supported"),
				  "%s", cep_last_error());
		} else {
			cr_assert_eq(oh_run_in(MS, "BiasAdd", 1, NULL, 0, in, 3, out, 1), 0, "%s",
				     cep_last_error());
			for (i = 0; i < E; i++) {
				float want = x[i] + b[i % C] + k[i];

				cr_assert_eq(at(&out[0], i), round_to(dt, want), "[%d]", i);
			}
			outs_free(out, 1);
		}
		free(x), free(b), free(k), free(rx), free(rb), free(rk);
	}
	{
		struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, buf),
					   oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, buf),
					   oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, buf) };
		struct op_tensor out[1];

		cr_assert_eq(oh_run_in(MS, "BiasAdd", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
		cr_assert(strstr(cep_last_error(), "BiasAdd: bias must have shape (C), C = 4"), "%s",
			  cep_last_error());
		in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, buf);
		in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dbad, buf);
		cr_assert_eq(oh_run_in(MS, "BiasAdd", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
		cr_assert(strstr(cep_last_error(), "BiasAdd: skip of shape [2,1,4] must have X's shape [2,3,4]"),
			  "%s", cep_last_error());
		in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d2, buf);
		cr_assert_eq(oh_run_in(MS, "BiasAdd", 1, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
		cr_assert(strstr(cep_last_error(), "BiasAdd: X has rank 2, not 3"), "%s",
			  cep_last_error());
	}
}

/* ---------------------------------------------------------------- domains */

/* An operator com.microsoft does not have here is refused by name and
 * domain; opsets of com.microsoft past the checked one are refused as
 * such; the contrib schemas are not found in ai.onnx, nor ai.onnx's Gelu
 * 20 as com.microsoft's. */
Test(ops_contrib, domain_lookups_and_refusals)
{
	const struct op_schema *s;

	cr_assert_eq(op_schema_find(MS, "NoSuchOp", 1, &s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "unknown op NoSuchOp in domain com.microsoft");
	cr_assert_eq(op_schema_find(MS, "SkipLayerNormalization", 2, &s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(),
			 "SkipLayerNormalization: opset 2 is not supported (supported 1-1)");
	cr_assert_eq(op_schema_find("", "SkipLayerNormalization", 17, &s), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "unknown op SkipLayerNormalization in domain ai.onnx");
	cr_assert_eq(op_schema_find(MS, "Gelu", 1, &s), 0);
	cr_assert_str_eq(s->domain, MS);
	cr_assert_eq(s->max_in, 1);
	cr_assert_eq(op_schema_find("", "Gelu", 20, &s), 0);
	cr_assert_str_eq(s->domain, "");
	cr_assert_eq(op_schema_find("", "SimplifiedLayerNormalization", OP_OPSET_MAX, &s), 0);
	cr_assert_eq(op_schema_find(MS, "SimplifiedLayerNormalization", 1, &s), 0);
	cr_assert_eq(op_schema_find(MS, "BiasAdd", 1, &s), 0);
}

/* -------------------------------------------------------------- Attention */

/*
 * com.microsoft Attention in double: qkv = x w + bias, heads of dq (dv)
 * columns, scores scaled plus the additive mask am (B, 1 or H, S, S; NULL:
 * none), -inf after the query when causal, softmax, values; out (B, S, hv).
 */
static void ref_ms_attention(const float *x, const float *w, const float *bias, int B, int S,
			     int K, int hq, int hv, int H, double scale, const double *am,
			     int am_h, bool causal, double *out)
{
	int N = 2 * hq + hv, dq = hq / H, dv = hv / H, b, h, i, j, d, k;
	double *qkv = calloc((size_t)B * S * N, sizeof(double)), *s = calloc((size_t)S, sizeof(double));

	cr_assert(qkv && s);
	for (i = 0; i < B * S; i++) {
		for (j = 0; j < N; j++) {
			double acc = bias ? bias[j] : 0.0;

			for (k = 0; k < K; k++)
				acc += (double)x[i * K + k] * w[k * N + j];
			qkv[i * N + j] = acc;
		}
	}
	for (b = 0; b < B; b++) {
		for (h = 0; h < H; h++) {
			for (i = 0; i < S; i++) {
				double mx = -INFINITY, sum = 0;

				for (j = 0; j < S; j++) {
					double dot = 0;

					for (d = 0; d < dq; d++)
						dot += qkv[(b * S + i) * N + h * dq + d] *
						       qkv[(b * S + j) * N + hq + h * dq + d];
					s[j] = dot * scale;
					if (am)
						s[j] += am[((b * am_h + (am_h > 1 ? h : 0)) * S + i) * S + j];
					if (causal && j > i)
						s[j] = -INFINITY;
					mx = s[j] > mx ? s[j] : mx;
				}
				for (j = 0; j < S; j++)
					sum += exp(s[j] - mx);
				for (d = 0; d < dv; d++) {
					double acc = 0;

					for (j = 0; j < S; j++)
						acc += exp(s[j] - mx) / sum *
						       qkv[(b * S + j) * N + 2 * hq + h * dv + d];
					out[(b * S + i) * hv + h * dv + d] = acc;
				}
			}
		}
	}
	free(qkv);
	free(s);
}

/* Every mask form of onnxruntime's that is taken (lengths, a raw (B, S)
 * and (B, S, S) mask), attention_bias per head, unidirectional, a custom
 * scale and mask_filter_value, V narrower than Q and K, no bias; float32,
 * float16 and bfloat16. */
Test(ops_contrib, ms_attention_every_mask_form_every_type)
{
	enum { B = 2, S = 5, K = 6, H = 2, HQ = 8, HV = 4, N = 2 * HQ + HV };
	int64_t dx[3] = { B, S, K }, dw[2] = { K, N }, db[1] = { N }, dl[1] = { B };
	int64_t d2[2] = { B, S }, d3[3] = { B, S, S }, dab[4] = { 1, H, S, S };
	int64_t sizes[3] = { HQ, HQ, HV };
	int32_t lens[B] = { 3, 5 }, raw2[B * S], raw3[B * S * S];
	double am[B * H * S * S], out[B * S * HV];
	unsigned seed = 41;
	int form, i, b, h, q, j;
	size_t t;

	for (i = 0; i < B * S; i++)
		raw2[i] = i % S == 0 || oh_rand(&seed) > -0.4f;
	for (i = 0; i < B * S * S; i++)
		raw3[i] = i % S == 0 || oh_rand(&seed) > -0.4f;
	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		void *rx, *rw, *rb, *rab;
		float *x = rand_vals(dt, B * S * K, 1, &seed, &rx);
		float *w = rand_vals(dt, K * N, 0.6f, &seed, &rw);
		float *bias = rand_vals(dt, N, 0.5f, &seed, &rb);
		float *ab = rand_vals(dt, H * S * S, 1, &seed, &rab);

		for (form = 0; form < 5; form++) {
			/* 0 lengths; 1 raw (B, S), filter -3, causal; 2 raw (B, S, S)
			 * and attention_bias, scale 0.3; 3 nothing, no bias;
			 * 4 attention_bias alone, causal. */
			struct op_attr attrs[4] = { oh_int("num_heads", H),
						    oh_ints("qkv_hidden_sizes", 3, sizes) };
			int n_attrs = 2, n_in = form == 2 || form == 4 ? 6 : 4;
			bool causal = form == 1 || form == 4;
			struct op_tensor in[6], o[1];

			if (form == 1)
				attrs[n_attrs++] = oh_float("mask_filter_value", -3.0f);
			if (form == 2)
				attrs[n_attrs++] = oh_float("scale", 0.3f);
			if (causal)
				attrs[n_attrs++] = oh_int("unidirectional", 1);
			memset(am, 0, sizeof(am));
			for (b = 0; b < B; b++) {
				for (h = 0; h < H; h++) {
					for (q = 0; q < S; q++) {
						for (j = 0; j < S; j++) {
							double *v = &am[((b * H + h) * S + q) * S + j];

							if (form == 0 && j >= lens[b])
								*v = -10000.0;
							if (form == 1)
								*v = (1 - raw2[b * S + j]) * -3.0;
							if (form == 2)
								*v = (1 - raw3[(b * S + q) * S + j]) * -10000.0;
							if (form == 2 || form == 4)
								*v += ab[(h * S + q) * S + j];
						}
					}
				}
			}
			ref_ms_attention(x, w, form == 3 ? NULL : bias, B, S, K, HQ, HV, H,
					 form == 2 ? 0.3 : 1 / sqrt(HQ / H), form == 3 ? NULL : am, H,
					 causal, out);
			in[0] = oh_tensor(dt, 3, dx, rx);
			in[1] = oh_tensor(dt, 2, dw, rw);
			in[2] = form == 3 ? (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED }
					  : oh_tensor(dt, 1, db, rb);
			in[3] = form == 0 ? oh_tensor(CEP_DTYPE_INT32, 1, dl, lens)
				: form == 1 ? oh_tensor(CEP_DTYPE_INT32, 2, d2, raw2)
				: form == 2 ? oh_tensor(CEP_DTYPE_INT32, 3, d3, raw3)
					    : (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			in[4] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
			in[5] = oh_tensor(dt, 4, dab, rab);
			cr_assert_eq(oh_run_in(MS, "Attention", 1, attrs, n_attrs, in, n_in, o, 1), 0,
				     "form %d: %s", form, cep_last_error());
			cr_assert(o[0].rank == 3 && o[0].dims[0] == B && o[0].dims[1] == S &&
				  o[0].dims[2] == HV && o[0].dtype == dt);
			for (i = 0; i < B * S * HV; i++)
				cr_assert(fabs(at(&o[0], i) - out[i]) <=
						  (dt == CEP_DTYPE_FLOAT32 ? 1e-5 : dt == CEP_DTYPE_FLOAT16 ? 1e-2 : 6e-2) *
							  (1 + fabs(out[i])),
					  "%s form %d [%d]: %g, want %g", cep_dtype_name(dt), form, i,
					  at(&o[0], i), out[i]);
			outs_free(o, 1);
		}
		free(x), free(w), free(bias), free(ab), free(rx), free(rw), free(rb), free(rab);
	}
}

/* What Attention refuses, by name. */
Test(ops_contrib, ms_attention_refusals)
{
	float buf[256] = { 0 };
	int64_t ibuf[8] = { 0 };
	int32_t i32[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	int64_t dx[3] = { 2, 3, 4 }, dw[2] = { 4, 12 }, dw10[2] = { 4, 10 }, dm2b[1] = { 4 };
	int64_t dm4[4] = { 2, 1, 3, 3 }, dpast[5] = { 2, 2, 2, 0, 2 }, dl[1] = { 2 };
	int64_t bad_sizes[3] = { 4, 2, 6 };
	struct op_attr heads[1] = { oh_int("num_heads", 2) };
	struct op_attr rot[2] = { oh_int("num_heads", 2), oh_int("do_rotary", 1) };
	struct op_attr qs[2] = { oh_int("num_heads", 2), oh_ints("qkv_hidden_sizes", 3, bad_sizes) };
	struct op_attr three[1] = { oh_int("num_heads", 3) };
	struct op_tensor none = { .dtype = CEP_DTYPE_UNDEFINED };
	struct op_tensor in[5] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, buf),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, dw, buf), none, none, none };
	struct op_tensor out[2];

	cr_assert_eq(oh_run_in(MS, "Attention", 1, NULL, 0, in, 2, out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "Attention: num_heads is missing"), "%s", cep_last_error());
	cr_assert_eq(oh_run_in(MS, "Attention", 1, rot, 2, in, 2, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "do_rotary=1"), "%s", cep_last_error());
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 2, out, 2), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "output present (past state) is not supported"), "%s",
		  cep_last_error());
	in[4] = oh_tensor(CEP_DTYPE_FLOAT32, 5, dpast, buf);
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 5, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "input past (past state) is not supported"), "%s",
		  cep_last_error());
	in[4] = none;
	cr_assert_eq(oh_run_in(MS, "Attention", 1, qs, 2, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Q's hidden size 4 differs from K's 2"), "%s",
		  cep_last_error());
	cr_assert_eq(oh_run_in(MS, "Attention", 1, three, 1, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "hidden size 4 is not a positive multiple of num_heads 3"),
		  "%s", cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dw10, buf);
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 2, out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "10 columns, not a multiple of 3"), "%s",
		  cep_last_error());
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dw, buf);
	in[3] = oh_tensor(CEP_DTYPE_INT32, 1, dm2b, i32);
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 4, out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "the left-padding (2 * batch)"), "%s", cep_last_error());
	in[3] = oh_tensor(CEP_DTYPE_INT32, 4, dm4, i32);
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 4, out, 1), CEP_EUNSUPPORTED);
	in[3] = oh_tensor(CEP_DTYPE_INT64, 1, dl, ibuf);
	cr_assert_eq(oh_run_in(MS, "Attention", 1, heads, 1, in, 4, out, 1), CEP_EDTYPE);
	cr_assert(strstr(cep_last_error(), "mask_index is int64, not int32"), "%s",
		  cep_last_error());
}
