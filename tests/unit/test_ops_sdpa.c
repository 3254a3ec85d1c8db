/*
 * test_ops_sdpa.c — ONNX's Attention (opsets 23 to 25) of
 * kernels/cpu/sdpa.c, called the way the engine calls it (schema
 * inference, then the host kernel through exec_host_eval): a case worked
 * out by hand; every option (3-D and 4-D, grouped heads, caches, bool and
 * float masks of every broadcast rank, the causal frontier, scale,
 * softcap, nonpad_kv_seqlen, windows, each qk_matmul_output mode) against
 * a naive double-precision evaluation of the specification written here,
 * in float32 and, within their precision, float16 and bfloat16; float16
 * and bfloat16 bit for bit against values of the ONNX reference
 * implementation (numpy, rounding every step, its bfloat16 softmax summed
 * one key at a time) where a float32 evaluation rounded once is a unit
 * away; fully masked rows, NaN rows, the mask's padding from opset 24;
 * and the refusals, each naming the operator.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define ABSENT ((struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED })

/* ------------------------------------------------------ a naive reference */

/* One configuration of the operator. */
struct acase {
	int opset;
	int rank3;                     /* 3-D Q, K, V and Y */
	int64_t B, Hq, Hkv, Sq, Skv, P, Dk, Dv;
	int causal;
	float scale;                   /* 0: the attribute is absent */
	float softcap;
	int mask;                      /* 0 none, 1 bool, 2 float */
	int mrank;
	int64_t mdims[4];
	int nonpad;                    /* nonpad_kv_seqlen given: np */
	int64_t np[4];
	int64_t left, right;           /* -2: the attribute is absent */
	int qk_mode;
};

/* The inputs of a case, as float32 tensors, and the reference outputs
 * (logical (b, h, s, d) layouts, Y 4-D). */
struct aref {
	float *q, *k, *v, *m, *pk, *pv;   /* the operator's layouts */
	uint8_t *mb;
	double *y, *qk;                   /* (B, Hq, Sq, Dv), (B, Hq, Sq, T) */
	int64_t T;
};

static float urand(unsigned *seed)
{
	return oh_rand(seed);
}

static float *frand(int64_t n, unsigned *seed, float scale)
{
	float *p = calloc((size_t)(n ? n : 1), sizeof(float));
	int64_t i;

	cr_assert_not_null(p);
	for (i = 0; i < n; i++)
		p[i] = urand(seed) * scale;
	return p;
}

static int64_t mask_numel(const struct acase *c)
{
	int64_t n = 1;
	int l;

	for (l = 0; l < c->mrank; l++)
		n *= c->mdims[l];
	return n;
}

/* Element (b, h, s, d) of a Q, K or V operand of heads h, rows s, depth d. */
static int64_t at_qkv(const struct acase *c, int64_t H, int64_t S, int64_t D, int64_t b,
		      int64_t h, int64_t s, int64_t d)
{
	return c->rank3 ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d;
}

/* The mask's element for score (b, h, i, j), right-aligned and broadcast
 * (a key past a short last dim is the caller's). */
static int64_t at_mask(const struct acase *c, int64_t b, int64_t h, int64_t i, int64_t j)
{
	int64_t idx[4] = { b, h, i, j }, at = 0;
	int l, off = 4 - c->mrank;

	for (l = 0; l < c->mrank; l++) {
		int64_t d = c->mdims[l], x = idx[off + l];

		at = at * d + (d == 1 ? 0 : x);
	}
	return at;
}

/* Evaluates the specification in double over the float inputs. */
static void reference(const struct acase *c, struct aref *r)
{
	int64_t T = c->P + c->Skv, b, h, i, j, d, group = c->Hq / c->Hkv;
	double scale = c->scale > 0.0f ? c->scale : 1.0 / sqrt((double)c->Dk);
	double *s = calloc((size_t)(T ? T : 1), sizeof(double));

	r->T = T;
	r->y = calloc((size_t)(c->B * c->Hq * c->Sq * c->Dv + 1), sizeof(double));
	r->qk = calloc((size_t)(c->B * c->Hq * c->Sq * T + 1), sizeof(double));
	for (b = 0; b < c->B; b++) {
		int64_t off = c->nonpad ? c->np[b] - c->Sq : c->P;

		for (h = 0; h < c->Hq; h++) {
			int64_t kh = h / group;

			for (i = 0; i < c->Sq; i++) {
				double mx = -INFINITY, sum = 0.0;
				bool open = false, nan = false;

				for (j = 0; j < T; j++) {
					double dot = 0.0, bias = 0.0, raw, capped;

					for (d = 0; d < c->Dk; d++) {
						double kd = j < c->P ?
							r->pk[((b * c->Hkv + kh) * c->P + j) * c->Dk + d] :
							r->k[at_qkv(c, c->Hkv, c->Skv, c->Dk, b, kh, j - c->P, d)];

						dot += r->q[at_qkv(c, c->Hq, c->Sq, c->Dk, b, h, i, d)] * kd;
					}
					raw = dot * scale;
					capped = c->softcap > 0.0f ? c->softcap * tanh(raw / c->softcap) : raw;
					if (c->mask) {
						bool beyond = c->opset >= 24 && c->mrank > 0 &&
							      j >= c->mdims[c->mrank - 1];

						if (beyond)
							bias = -INFINITY;
						else if (c->mask == 1)
							bias = r->mb[at_mask(c, b, h, i, j)] ? 0.0 : -INFINITY;
						else
							bias = r->m[at_mask(c, b, h, i, j)];
					}
					if (c->causal && j > i + off)
						bias = -INFINITY;
					if ((c->left >= 0 && j < i + off - c->left) ||
					    (c->right >= 0 && j > i + off + c->right))
						bias = -INFINITY;
					if (c->nonpad && j >= c->np[b])
						bias = -INFINITY;
					s[j] = capped + bias;
					open |= bias != -INFINITY;
					nan |= isnan(s[j]);
					if (s[j] > mx)
						mx = s[j];
					r->qk[((b * c->Hq + h) * c->Sq + i) * T + j] =
						c->qk_mode == 0 ? raw : c->qk_mode == 1 ? capped : s[j];
				}
				for (j = 0; j < T; j++) {
					s[j] = mx == -INFINITY ? 0.0 : exp(s[j] - mx);
					sum += s[j];
				}
				for (j = 0; j < T; j++) {
					double p = !open || mx == -INFINITY ? 0.0 : nan ? NAN : s[j] / sum;
					double *y = r->y + ((b * c->Hq + h) * c->Sq + i) * c->Dv;

					if (c->qk_mode == 3)
						r->qk[((b * c->Hq + h) * c->Sq + i) * T + j] = p;
					for (d = 0; d < c->Dv; d++)
						y[d] += p * (j < c->P ?
							r->pv[((b * c->Hkv + kh) * c->P + j) * c->Dv + d] :
							r->v[at_qkv(c, c->Hkv, c->Skv, c->Dv, b, kh, j - c->P, d)]);
				}
			}
		}
	}
	free(s);
}

/* Random inputs for case c. */
static void inputs_make(const struct acase *c, struct aref *r, unsigned seed)
{
	int64_t i, nm = mask_numel(c);

	memset(r, 0, sizeof(*r));
	r->q = frand(c->B * c->Hq * c->Sq * c->Dk, &seed, 1.5f);
	r->k = frand(c->B * c->Hkv * c->Skv * c->Dk, &seed, 1.5f);
	r->v = frand(c->B * c->Hkv * c->Skv * c->Dv, &seed, 1.0f);
	r->pk = frand(c->B * c->Hkv * c->P * c->Dk, &seed, 1.5f);
	r->pv = frand(c->B * c->Hkv * c->P * c->Dv, &seed, 1.0f);
	r->m = frand(nm, &seed, 2.0f);
	r->mb = calloc((size_t)(nm + 1), 1);
	for (i = 0; i < nm; i++)
		r->mb[i] = r->m[i] > -1.0f; /* three in four attend */
}

static void aref_free(struct aref *r)
{
	free(r->q);
	free(r->k);
	free(r->v);
	free(r->pk);
	free(r->pv);
	free(r->m);
	free(r->mb);
	free(r->y);
	free(r->qk);
}

/* A float tensor of dtype dt holding n values of src (rounded to dt),
 * which are rounded in place so that the reference sees them too. */
static struct op_tensor tensor_of(cep_dtype dt, int rank, const int64_t *dims, float *src)
{
	struct op_tensor t = oh_tensor(dt, rank, dims, NULL);
	int64_t n = op_dims_product(&t, 0, rank), i;

	t.data = calloc((size_t)(n ? n : 1), cep_dtype_size(dt));
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++) {
		cpu_store_f(t.data, dt, i, src[i]);
		src[i] = cpu_load_f(t.data, dt, i);
	}
	return t;
}

/* Runs case c in dtype dt over r's inputs into out[0..4); returns the
 * operator's status. The inputs are rounded to dt first. */
static int run_case(const struct acase *c, struct aref *r, cep_dtype dt, struct op_tensor *out)
{
	struct op_attr at[12];
	struct op_tensor in[7];
	int n_at = 0, n_in = 3, i, ret;

	if (c->rank3) {
		in[0] = tensor_of(dt, 3, DIMS(c->B, c->Sq, c->Hq * c->Dk), r->q);
		in[1] = tensor_of(dt, 3, DIMS(c->B, c->Skv, c->Hkv * c->Dk), r->k);
		in[2] = tensor_of(dt, 3, DIMS(c->B, c->Skv, c->Hkv * c->Dv), r->v);
		at[n_at++] = oh_int("q_num_heads", c->Hq);
		at[n_at++] = oh_int("kv_num_heads", c->Hkv);
	} else {
		in[0] = tensor_of(dt, 4, DIMS(c->B, c->Hq, c->Sq, c->Dk), r->q);
		in[1] = tensor_of(dt, 4, DIMS(c->B, c->Hkv, c->Skv, c->Dk), r->k);
		in[2] = tensor_of(dt, 4, DIMS(c->B, c->Hkv, c->Skv, c->Dv), r->v);
	}
	for (i = 3; i < 7; i++)
		in[i] = ABSENT;
	if (c->mask == 1)
		in[3] = oh_tensor(CEP_DTYPE_BOOL, c->mrank, c->mdims, r->mb);
	else if (c->mask == 2)
		in[3] = tensor_of(dt, c->mrank, c->mdims, r->m);
	if (c->P > 0) {
		in[4] = tensor_of(dt, 4, DIMS(c->B, c->Hkv, c->P, c->Dk), r->pk);
		in[5] = tensor_of(dt, 4, DIMS(c->B, c->Hkv, c->P, c->Dv), r->pv);
		n_in = 6;
	} else if (c->mask) {
		n_in = 4;
	}
	if (c->nonpad) {
		in[6] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(c->B), (void *)c->np);
		n_in = 7;
	}
	if (c->causal)
		at[n_at++] = oh_int("is_causal", 1);
	if (c->scale > 0.0f)
		at[n_at++] = oh_float("scale", c->scale);
	if (c->softcap > 0.0f)
		at[n_at++] = oh_float("softcap", c->softcap);
	if (c->left != -2)
		at[n_at++] = oh_int("left_window_size", c->left);
	if (c->right != -2)
		at[n_at++] = oh_int("right_window_size", c->right);
	at[n_at++] = oh_int("qk_matmul_output_mode", c->qk_mode);
	ret = oh_run("Attention", c->opset, at, n_at, in, n_in, out, 4);
	for (i = 0; i < 7; i++) {
		if (in[i].dtype != CEP_DTYPE_BOOL && in[i].dtype != CEP_DTYPE_INT64)
			free(in[i].data);
	}
	return ret;
}

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(out[i].data);
}

/* Compares n values of got (dtype dt) with want within atol + rtol |want|
 * (NaN matching NaN); returns the mismatches, printing the first. */
static int64_t near(const char *what, const struct op_tensor *got, const double *want,
		    int64_t n, double rtol, double atol)
{
	int64_t i, bad = 0;

	for (i = 0; i < n; i++) {
		double g = cpu_load_f(got->data, got->dtype, i), w = want[i];

		if ((isnan(w) && isnan(g)) || (isinf(w) && g == w))
			continue;
		if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
			if (bad++ == 0)
				cr_log_error("%s: element %lld is %.9g, want %.9g", what, (long long)i,
					     g, w);
		}
	}
	return bad;
}

/* Y's element (b, h, i, d) in the layout of the case. */
static int64_t at_y(const struct acase *c, int64_t b, int64_t h, int64_t i, int64_t d)
{
	return at_qkv(c, c->Hq, c->Sq, c->Dv, b, h, i, d);
}

/* Runs c in dt and checks all four outputs against the reference, within
 * the precision of dt; returns the mismatches. */
static int64_t check_case(const char *name, const struct acase *c, cep_dtype dt, unsigned seed)
{
	double eps = dt == CEP_DTYPE_BFLOAT16 ? 1.0 / 128 : dt == CEP_DTYPE_FLOAT16 ? 1.0 / 1024
										  : 2e-6;
	int64_t T = c->P + c->Skv, n, b, h, i, d, bad = 0;
	struct op_tensor out[4];
	struct aref r;
	double *y4;

	inputs_make(c, &r, seed);
	cr_assert_eq(run_case(c, &r, dt, out), 0, "%s %s: %s", name, cep_dtype_name(dt),
		     cep_last_error());
	reference(c, &r);
	/* The reference's Y in the case's layout. */
	n = c->B * c->Hq * c->Sq * c->Dv;
	y4 = calloc((size_t)(n + 1), sizeof(double));
	for (b = 0; b < c->B; b++)
		for (h = 0; h < c->Hq; h++)
			for (i = 0; i < c->Sq; i++)
				for (d = 0; d < c->Dv; d++)
					y4[at_y(c, b, h, i, d)] =
						r.y[((b * c->Hq + h) * c->Sq + i) * c->Dv + d];
	cr_assert_eq(out[0].dtype, dt);
	cr_assert_eq(out[0].rank, c->rank3 ? 3 : 4);
	bad += near(name, &out[0], y4, n, 4 * eps, 4 * eps);
	/* Scores reach 2 * 1.5 * 1.5 * Dk / sqrt(Dk) before masks. */
	bad += near(name, &out[3], r.qk, c->B * c->Hq * c->Sq * T, 4 * eps,
		    c->qk_mode == 3 ? 4 * eps : 8 * eps * (double)c->Dk);
	cr_assert_eq(out[1].rank, 4);
	cr_assert_eq(out[1].dims[2], T);
	cr_assert_eq(out[2].dims[3], c->Dv);
	/* present_key and present_value: the past rows, then the new ones. */
	for (b = 0; b < c->B; b++)
		for (h = 0; h < c->Hkv; h++)
			for (i = 0; i < T; i++)
				for (d = 0; d < c->Dk; d++) {
					float want = i < c->P ?
						r.pk[((b * c->Hkv + h) * c->P + i) * c->Dk + d] :
						r.k[at_qkv(c, c->Hkv, c->Skv, c->Dk, b, h, i - c->P, d)];

					bad += cpu_load_f(out[1].data, dt, ((b * c->Hkv + h) * T + i) *
							  c->Dk + d) != want;
				}
	for (b = 0; b < c->B; b++)
		for (h = 0; h < c->Hkv; h++)
			for (i = 0; i < T; i++)
				for (d = 0; d < c->Dv; d++) {
					float want = i < c->P ?
						r.pv[((b * c->Hkv + h) * c->P + i) * c->Dv + d] :
						r.v[at_qkv(c, c->Hkv, c->Skv, c->Dv, b, h, i - c->P, d)];

					bad += cpu_load_f(out[2].data, dt, ((b * c->Hkv + h) * T + i) *
							  c->Dv + d) != want;
				}
	free(y4);
	outs_free(out, 4);
	aref_free(&r);
	return bad;
}

/* ------------------------------------------------------------------ cases */

/* Two queries, two keys, scale 1: the scores are Q K^T, worked by hand. */
Test(ops_sdpa, a_case_worked_by_hand)
{
	float q[4] = { 1, 0, 0, 2 }, k[4] = { 1, 0, 0, 1 }, v[4] = { 1, 2, 3, 4 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), q),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), k),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), v),
	};
	struct op_attr at[2] = { oh_float("scale", 1.0f), oh_int("qk_matmul_output_mode", 3) };
	/* Row 0 scores (1, 0), row 1 (0, 2). */
	double p0 = exp(1.0) / (exp(1.0) + 1.0), p1 = 1.0 / (1.0 + exp(2.0));
	double want_y[4] = { p0 * 1 + (1 - p0) * 3, p0 * 2 + (1 - p0) * 4,
			     p1 * 1 + (1 - p1) * 3, p1 * 2 + (1 - p1) * 4 };
	double want_p[4] = { p0, 1 - p0, p1, 1 - p1 };
	struct op_tensor out[4];

	cr_assert_eq(oh_run("Attention", 23, at, 2, in, 3, out, 4), 0, "%s", cep_last_error());
	cr_assert_eq(near("Y", &out[0], want_y, 4, 1e-6, 1e-6), 0);
	cr_assert_eq(near("qk", &out[3], want_p, 4, 1e-6, 1e-6), 0);
	outs_free(out, 4);
	/* Mode 0 is the scaled product itself; the default scale is
	 * 1/sqrt(2). */
	at[1] = oh_int("qk_matmul_output_mode", 0);
	cr_assert_eq(oh_run("Attention", 23, &at[1], 1, in, 3, out, 4), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out[3].data)[0], 1.0f / sqrtf(2.0f), 1e-6f);
	cr_assert_float_eq(((float *)out[3].data)[3], 2.0f / sqrtf(2.0f), 1e-6f);
	cr_assert_float_eq(((float *)out[3].data)[1], 0.0f, 1e-7f);
	outs_free(out, 4);
}

/* Every option and most of their combinations, against the naive
 * evaluation, in each type. */
Test(ops_sdpa, every_option_matches_a_naive_evaluation)
{
	static const struct acase cases[] = {
		/* opset rank3 B Hq Hkv Sq Skv P Dk Dv causal scale softcap mask mrank mdims
		 * nonpad np left right mode */
		{ 23, 0, 2, 2, 2, 3, 5, 0, 8, 8, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 0 },
		{ 23, 1, 2, 3, 3, 4, 6, 0, 8, 8, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 1 },
		{ 23, 0, 1, 4, 2, 3, 5, 0, 6, 4, 1, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 2 },
		{ 23, 1, 2, 4, 1, 2, 3, 4, 5, 7, 1, 0, 0, 0, 0, { 0 }, 0, { 0 }, -2, -2, 3 },
		{ 23, 0, 2, 2, 2, 4, 4, 2, 8, 8, 0, 0.5f, 0, 1, 2, { 4, 6 }, 0, { 0 }, -2, -2, 2 },
		{ 23, 0, 2, 2, 2, 4, 4, 2, 8, 8, 1, 0, 0, 2, 4, { 2, 1, 4, 6 }, 0, { 0 }, -2, -2, 2 },
		{ 23, 1, 2, 2, 1, 3, 5, 0, 4, 4, 0, 0, 2.5f, 2, 3, { 2, 3, 5 }, 0, { 0 }, -2, -2, 1 },
		{ 23, 0, 1, 2, 2, 3, 5, 0, 4, 4, 1, 0.7f, 1.5f, 1, 1, { 5 }, 0, { 0 }, -2, -2, 3 },
		{ 24, 0, 2, 2, 2, 3, 6, 0, 8, 8, 0, 0, 0, 2, 4, { 2, 2, 3, 4 }, 1, { 3, 4 }, -2, -2, 2 },
		{ 24, 0, 2, 4, 2, 3, 6, 0, 8, 8, 1, 0, 0, 0, 0, { 0 }, 1, { 6, 2 }, -2, -2, 3 },
		{ 24, 1, 3, 2, 2, 1, 6, 0, 8, 8, 1, 0, 0, 1, 2, { 1, 5 }, 1, { 1, 5, 6 }, -2, -2, 3 },
		{ 25, 0, 1, 2, 2, 5, 5, 0, 4, 4, 0, 0, 0, 0, 0, { 0 }, 0, { 0 }, 1, 0, 2 },
		{ 25, 0, 1, 2, 1, 4, 2, 3, 4, 4, 1, 0, 0, 2, 2, { 4, 5 }, 0, { 0 }, 2, -1, 3 },
		{ 25, 1, 2, 2, 2, 4, 8, 0, 4, 4, 0, 0, 0, 0, 0, { 0 }, 1, { 8, 5 }, -1, 1, 2 },
		/* Rows longer than a warp of keys, deeper heads. */
		{ 23, 0, 1, 2, 1, 40, 70, 3, 72, 40, 1, 0, 0, 2, 2, { 40, 73 }, 0, { 0 }, -2, -2, 3 },
	};
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	int64_t bad = 0;
	size_t i, t;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (t = 0; t < 3; t++) {
			char name[64];

			snprintf(name, sizeof(name), "case %zu %s", i, cep_dtype_name(types[t]));
			bad += check_case(name, &cases[i], types[t], 17u + (unsigned)i);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------ half precision */

/* From onnx.reference's _compute_attention (Q (1,2,3,4), K and V
 * (1,1,9,4) of the type, a (3,9) float mask, is_causal, softcap 3, mode
 * 3); where each step is rounded to the type, and bfloat16's softmax sum
 * too, one key at a time. */
static const uint16_t bf16_q[24] = {
	0x3f60, 0x3fd9, 0x3faa, 0xbea6, 0xbdcc, 0x3fcf, 0xbf7c, 0x3fbb,
	0x3fb2, 0x3ecf, 0xbdba, 0xbe29, 0xbe71, 0x3eac, 0x3f03, 0x3f29,
	0x3ffe, 0x3fb0, 0x3f5e, 0x3ffc, 0xbeb5, 0xbf05, 0x3f56, 0xbf5e,
};
static const uint16_t bf16_k[36] = {
	0xbf65, 0x3f0b, 0x3ecc, 0x3fe0, 0x3f63, 0x3f0b, 0x3efb, 0xbe84,
	0xbf77, 0xbed8, 0x3f8a, 0xbecc, 0x3dde, 0xbf7d, 0x3fbf, 0xbf09,
	0xbe4a, 0x3fd2, 0x3f08, 0x3fc5, 0x3f6b, 0x3f9d, 0xbf3a, 0x3f20,
	0x3f06, 0x3fcf, 0x3dac, 0x3f4b, 0xbf52, 0x3e27, 0xbcfd, 0xbf0d,
	0x3fb9, 0x3e0e, 0x3ff8, 0x3f45,
};
static const uint16_t bf16_v[36] = {
	0x3f51, 0x3f6a, 0x3f84, 0xbf0c, 0x3ea4, 0xbe90, 0x3e54, 0xbf36,
	0x3ff4, 0xbeb6, 0x3f82, 0xbdca, 0x3fd0, 0x3f7d, 0xbf1b, 0x3fc5,
	0x3feb, 0x3fdb, 0x3f36, 0xbf10, 0xbed8, 0x3fe4, 0x3f28, 0xbeeb,
	0x3fd3, 0x3f6d, 0x3f36, 0x3e04, 0x3e6e, 0xbe90, 0xbf63, 0x3fd0,
	0x3ece, 0x3f25, 0xbd09, 0x3fa1,
};
static const uint16_t bf16_m[27] = {
	0xbf73, 0xbe83, 0xbf70, 0xbf41, 0x3f6f, 0x3ea2, 0xbe13, 0x3d42,
	0x3f3f, 0xbea0, 0x3e39, 0x3ebc, 0xbe94, 0x3d1c, 0x3f08, 0x3f51,
	0xbf33, 0x3f5e, 0xbf7d, 0x3f02, 0x3f1f, 0xbf3a, 0xbe26, 0x3f21,
	0xbf79, 0x3e84, 0x3f16,
};
static const uint16_t bf16_y[24] = {
	0x3f51, 0x3f6a, 0x3f84, 0xbf0c, 0x3f2e, 0x3f16, 0x3f4e, 0xbf18,
	0x3f27, 0xbe7a, 0x3ecd, 0xbf16, 0x3f51, 0x3f6a, 0x3f84, 0xbf0c,
	0x3f06, 0x3e59, 0x3f0c, 0xbf24, 0x3fba, 0xbe97, 0x3f4e, 0xbe8d,
};
static const uint16_t bf16_p[54] = {
	0x3f80, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x3f3a, 0x3e8d, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x3d30, 0x3f43, 0x3e48, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x3f80, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x0000, 0x3ed3, 0x3f16, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x3d07, 0x3e88, 0x3f34,
	0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
};

static const uint16_t f16_q[24] = {
	0x3850, 0x3cb6, 0xb522, 0xb679, 0x2db8, 0xb763, 0x28e3, 0x3f61,
	0x39c3, 0x252c, 0xb1ef, 0x3f6d, 0x3556, 0x3fc4, 0x385f, 0x3882,
	0x3ec2, 0x3cea, 0x39f0, 0x347b, 0x3e8a, 0x3385, 0x3f13, 0xba5a,
};
static const uint16_t f16_k[36] = {
	0x34a4, 0x3878, 0x3f69, 0xb3e7, 0x3dac, 0x3c1e, 0x3c9b, 0x3b1c,
	0x3fa9, 0x9801, 0x323c, 0xb643, 0xbac8, 0xb5c8, 0x3efc, 0x3e15,
	0xb94d, 0x3a7e, 0x3700, 0x3a46, 0x3bd3, 0xad1f, 0x3f89, 0x365c,
	0x3b13, 0x3b3f, 0xb72c, 0xba84, 0x3381, 0x3d2b, 0x3dc8, 0x3cc3,
	0xb948, 0x3ef6, 0x3da0, 0x3e88,
};
static const uint16_t f16_v[36] = {
	0x388f, 0x3efd, 0xbae1, 0xbb46, 0xbb84, 0xb3bc, 0xb412, 0xb700,
	0x399c, 0xbb10, 0x3a2b, 0xb804, 0x3c22, 0xbb7f, 0xac5f, 0x3f43,
	0x38ec, 0x3dbd, 0x3bcb, 0x3aa8, 0xb6d2, 0x39c9, 0xbb0c, 0x3d9f,
	0x3f85, 0x3e40, 0xbac8, 0x2417, 0xa9e3, 0xb94b, 0x3b0a, 0x3d92,
	0xab88, 0x3e5b, 0x3d91, 0xb8e7,
};
static const uint16_t f16_m[27] = {
	0x3845, 0x3a1f, 0xb8d8, 0x30b7, 0x3471, 0x32ff, 0xba76, 0x3528,
	0x3439, 0x392f, 0x38db, 0xb588, 0x371b, 0x39e0, 0x3a4a, 0xb96a,
	0xbb93, 0x34d3, 0xb891, 0x3014, 0x3b1e, 0xb3b9, 0xb7e9, 0xad91,
	0x3508, 0xba62, 0xb3a4,
};
static const uint16_t f16_y[24] = {
	0x388f, 0x3efd, 0xbae1, 0xbb46, 0xb815, 0x352f, 0xb6d4, 0xb893,
	0xafa7, 0xb6a2, 0x316c, 0xb7e4, 0x388f, 0x3efd, 0xbae1, 0xbb46,
	0xb75e, 0x363b, 0xb725, 0xb8b3, 0x3339, 0xb518, 0x33e3, 0xb85a,
};
static const uint16_t f16_p[54] = {
	0x3c00, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x348d, 0x39ba, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x2b51, 0x37ee, 0x3727, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x3c00, 0x0000, 0x0000, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x0000, 0x3514, 0x3976, 0x0000, 0x0000,
	0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x30b3, 0x3473, 0x389a,
	0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
};

static const uint16_t u32_q[24] = {
	0xbf1d, 0x3eff, 0x3f4e, 0xbf6a, 0xbf0e, 0x3fe4, 0xbf4a, 0xbf1c,
	0x3fec, 0x3f5e, 0x3ddb, 0x3f09, 0x3f7d, 0xbe32, 0xbf16, 0x3faf,
	0x3f81, 0x3f0a, 0x3fba, 0x3f26, 0x3ff9, 0xbec6, 0x3f29, 0x3ee7,
};
static const uint16_t u32_k[36] = {
	0x3d75, 0x3f46, 0xbe97, 0x3fb4, 0x3fcd, 0xbf1d, 0x3ecd, 0xbe2d,
	0xbf40, 0x3fd8, 0x3e94, 0xbf0f, 0x3f83, 0xbec9, 0x3fda, 0xbeb2,
	0xbf67, 0xbecc, 0x3d19, 0x3ed0, 0x3fdc, 0x3f8c, 0x3c93, 0xbf73,
	0xbf05, 0x3fff, 0x3ec2, 0x3f89, 0xbf56, 0xbf66, 0x3fc5, 0x3f43,
	0xbd97, 0xbd44, 0xbf3b, 0xbef7,
};
static const uint16_t u32_v[36] = {
	0xbf6d, 0x3fc2, 0x3ecc, 0xbf1e, 0x3f9c, 0xbed3, 0xbf50, 0x3f4c,
	0x3fd8, 0xbf6b, 0x3fb5, 0xbedc, 0xbf39, 0xbf72, 0xbdf8, 0x3f97,
	0x3ef6, 0x3fc8, 0xbeb2, 0xbd5f, 0xbe67, 0x3ff8, 0x3fe9, 0x3cb5,
	0x3e9e, 0xbd6a, 0x3f9f, 0xbf61, 0xbf4c, 0x3e59, 0xbe88, 0x3fc5,
	0x3f9d, 0x3f23, 0x3f7c, 0x3f8a,
};
static const uint16_t u32_y[24] = {
	0x3ecd, 0x3de2, 0x3f29, 0x3e70, 0x3f30, 0x3e1d, 0x3f8f, 0xbe88,
	0x3de9, 0x3f28, 0x3f3b, 0x3e3a, 0x3d8f, 0x3f1b, 0x3ebc, 0x3e1c,
	0xbcfd, 0x3e04, 0x3ec3, 0x3ed6, 0x3e20, 0x3e17, 0x3e22, 0x3f1d,
};
static const uint16_t u32_p[54] = {
	0x3d47, 0x3d6f, 0x3e79, 0x3e0a, 0x3db4, 0x3dd7, 0x3df6, 0x3df3,
	0x3da8, 0x3dae, 0x3ca3, 0x3eb2, 0x3c93, 0x3d3f, 0x3e04, 0x3e80,
	0x3c6e, 0x3db8, 0x3def, 0x3e39, 0x3d4d, 0x3df3, 0x3cb9, 0x3eac,
	0x3de1, 0x3cbc, 0x3d2e, 0x3e84, 0x3e32, 0x3d10, 0x3d9f, 0x3da7,
	0x3dd6, 0x3dea, 0x3d94, 0x3da7, 0x3dba, 0x3e0a, 0x3d80, 0x3e86,
	0x3d1a, 0x3e09, 0x3e0d, 0x3de9, 0x3cdc, 0x3d7d, 0x3ea4, 0x3c96,
	0x3e84, 0x3cde, 0x3e44, 0x3d04, 0x3d68, 0x3d13,
};


/* Runs the embedded case of type dt and compares Y and the probabilities
 * bit for bit. */
static void half_case(cep_dtype dt, const uint16_t *q, const uint16_t *k, const uint16_t *v,
		      const uint16_t *m, const uint16_t *y, const uint16_t *p,
		      const struct op_attr *at, int n_at)
{
	struct op_tensor in[4] = {
		oh_tensor(dt, 4, DIMS(1, 2, 3, 4), (void *)q),
		oh_tensor(dt, 4, DIMS(1, 1, 9, 4), (void *)k),
		oh_tensor(dt, 4, DIMS(1, 1, 9, 4), (void *)v),
		m ? oh_tensor(dt, 2, DIMS(3, 9), (void *)m) : ABSENT,
	};
	struct op_tensor out[4];
	int i;

	cr_assert_eq(oh_run("Attention", 23, at, n_at, in, 4, out, 4), 0, "%s", cep_last_error());
	for (i = 0; i < 24; i++)
		cr_expect_eq(((uint16_t *)out[0].data)[i], y[i], "%s Y[%d] is 0x%04x, want 0x%04x",
			     cep_dtype_name(dt), i, ((uint16_t *)out[0].data)[i], y[i]);
	for (i = 0; i < 54; i++)
		cr_expect_eq(((uint16_t *)out[3].data)[i], p[i], "%s p[%d] is 0x%04x, want 0x%04x",
			     cep_dtype_name(dt), i, ((uint16_t *)out[3].data)[i], p[i]);
	outs_free(out, 4);
}

Test(ops_sdpa, half_types_round_every_step_as_the_reference)
{
	struct op_attr at[3] = { oh_int("is_causal", 1), oh_float("softcap", 3.0f),
				 oh_int("qk_matmul_output_mode", 3) };

	half_case(CEP_DTYPE_BFLOAT16, bf16_q, bf16_k, bf16_v, bf16_m, bf16_y, bf16_p, at, 3);
	half_case(CEP_DTYPE_FLOAT16, f16_q, f16_k, f16_v, f16_m, f16_y, f16_p, at, 3);
}

/* softmax_precision 1: the bfloat16 scores go through a float32 softmax;
 * from the reference too (no mask, not causal), and 15 of its 24 outputs
 * differ from the bfloat16 softmax's. */
Test(ops_sdpa, softmax_precision_float_computes_the_softmax_in_float32)
{
	struct op_attr at[2] = { oh_int("softmax_precision", 1), oh_int("qk_matmul_output_mode", 3) };

	half_case(CEP_DTYPE_BFLOAT16, u32_q, u32_k, u32_v, NULL, u32_y, u32_p, at, 2);
}

/* ---------------------------------------------------------- edge rows */

/* A row with no key to attend is zero in Y and in mode 3, a NaN score
 * poisons its own row only, and a float mask of -inf everywhere is a
 * fully masked row too. */
Test(ops_sdpa, fully_masked_rows_are_zero_and_nan_rows_nan)
{
	float q[6] = { 1, 2, 3, 4, 5, 6 }, k[6] = { 1, 0, 0, 1, 1, 1 }, v[6] = { 1, 2, 3, 4, 5, 6 };
	uint8_t mb[9] = { 1, 1, 0, 0, 0, 0, 1, 0, 1 };
	float mf[9] = { 0, 0, 0, -INFINITY, -INFINITY, -INFINITY, 0, 0, 0 };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 3, 2), q),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 3, 2), k),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 3, 2), v),
		oh_tensor(CEP_DTYPE_BOOL, 2, DIMS(3, 3), mb),
	};
	struct op_attr mode = oh_int("qk_matmul_output_mode", 3);
	struct op_tensor out[4];
	float *y, *p;
	int i;

	cr_assert_eq(oh_run("Attention", 23, &mode, 1, in, 4, out, 4), 0, "%s", cep_last_error());
	y = out[0].data;
	p = out[3].data;
	for (i = 0; i < 3; i++) {
		cr_assert_eq(y[2 + i % 2], 0.0f, "row 1 is fully masked");
		cr_assert_eq(p[3 + i], 0.0f);
	}
	cr_assert_float_eq(p[0] + p[1], 1.0f, 1e-6f);
	cr_assert_eq(p[2], 0.0f);
	cr_assert_float_eq(p[6] + p[8], 1.0f, 1e-6f);
	outs_free(out, 4);
	/* A NaN in query row 2 makes that row NaN, the others stay. */
	q[4] = NAN;
	cr_assert_eq(oh_run("Attention", 23, &mode, 1, in, 4, out, 4), 0, "%s", cep_last_error());
	y = out[0].data;
	cr_assert(isnan(y[4]) && isnan(y[5]));
	cr_assert_eq(y[2], 0.0f);
	cr_assert(isfinite(y[0]) && isfinite(y[1]));
	outs_free(out, 4);
	q[4] = 5;
	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 3), mf);
	cr_assert_eq(oh_run("Attention", 23, &mode, 1, in, 4, out, 4), 0, "%s", cep_last_error());
	y = out[0].data;
	cr_assert(y[2] == 0.0f && y[3] == 0.0f && isfinite(y[0]) && isfinite(y[5]));
	outs_free(out, 4);
}

/* Opset 23 broadcasts a mask's last dim of 1 over the keys; opset 24
 * pads a short one with -inf (so only key 0 is seen), and refuses one
 * longer than the keys; opset 23 refuses a last dim that does not
 * broadcast. */
Test(ops_sdpa, opset_24_pads_a_short_mask_and_23_broadcasts_it)
{
	float q[2] = { 1, 0 }, k[6] = { 1, 0, 0, 1, 1, 1 }, v[6] = { 1, 2, 3, 4, 5, 6 };
	float m1[1] = { 0.5f }, m2[2] = { 0, 0 }, m4[4] = { 0 };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 1, 2), q),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 3, 2), k),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 3, 2), v),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), m1),
	};
	struct op_tensor out[1], plain[1];
	float *y;

	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, plain, 1), 0, "%s", cep_last_error());
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 4, out, 1), 0, "%s", cep_last_error());
	/* The same bias on every key changes nothing. */
	cr_assert_float_eq(((float *)out[0].data)[0], ((float *)plain[0].data)[0], 1e-6f);
	cr_assert_float_eq(((float *)out[0].data)[1], ((float *)plain[0].data)[1], 1e-6f);
	outs_free(out, 1);
	outs_free(plain, 1);
	cr_assert_eq(oh_run("Attention", 24, NULL, 0, in, 4, out, 1), 0, "%s", cep_last_error());
	y = out[0].data;
	cr_assert(y[0] == 1.0f && y[1] == 2.0f, "only key 0: %g %g", y[0], y[1]);
	outs_free(out, 1);
	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), m2);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 4, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: attn_mask has 2 along the key axis, which "
			 "does not broadcast to 3");
	cr_assert_eq(oh_run("Attention", 24, NULL, 0, in, 4, out, 1), 0, "%s", cep_last_error());
	y = out[0].data;
	/* Keys 0 and 1 at scores 1/sqrt(2) and 0. */
	cr_assert_float_eq(y[0], (float)((exp(M_SQRT1_2) * 1 + 3) / (exp(M_SQRT1_2) + 1)), 1e-6f);
	outs_free(out, 1);
	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), m4);
	cr_assert_eq(oh_run("Attention", 24, NULL, 0, in, 4, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: attn_mask covers 4 keys, more than the 3 "
			 "there are");
}

/* With nonpad_kv_seqlen the causal frontier moves to its end: a query
 * block of 2 over 3 valid keys sees keys 0-1 and 0-2; with 1 valid key
 * the first query sees none (a zero row). */
Test(ops_sdpa, nonpad_kv_seqlen_moves_the_causal_frontier)
{
	float q[4] = { 0, 0, 0, 0 }, k[8] = { 0 }, v[8] = { 1, 10, 2, 20, 3, 30, 4, 40 };
	int64_t np[1] = { 3 };
	struct op_tensor in[7] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), q),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 4, 2), k),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 4, 2), v),
		ABSENT, ABSENT, ABSENT,
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), np),
	};
	struct op_attr causal = oh_int("is_causal", 1);
	struct op_tensor out[1];
	float *y;

	cr_assert_eq(oh_run("Attention", 24, &causal, 1, in, 7, out, 1), 0, "%s", cep_last_error());
	y = out[0].data;
	/* Equal scores: the mean of the keys each row sees. */
	cr_assert_float_eq(y[0], 1.5f, 1e-6f);
	cr_assert_float_eq(y[1], 15.0f, 1e-5f);
	cr_assert_float_eq(y[2], 2.0f, 1e-6f);
	cr_assert_float_eq(y[3], 20.0f, 1e-5f);
	outs_free(out, 1);
	np[0] = 1;
	cr_assert_eq(oh_run("Attention", 24, &causal, 1, in, 7, out, 1), 0, "%s", cep_last_error());
	y = out[0].data;
	cr_assert(y[0] == 0.0f && y[1] == 0.0f && y[2] == 1.0f && y[3] == 10.0f);
	outs_free(out, 1);
}

/* ---------------------------------------------------------- inference */

Test(ops_sdpa, inference_gives_every_output_shape)
{
	struct op_tensor in[6] = {
		oh_tensor(CEP_DTYPE_FLOAT16, 3, DIMS(OP_DIM_SYM(0), 5, 32), NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 3, DIMS(OP_DIM_SYM(0), 7, 16), NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 3, DIMS(OP_DIM_SYM(0), 7, 24), NULL),
		ABSENT,
		oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(OP_DIM_SYM(0), 2, 9, 8), NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(OP_DIM_SYM(0), 2, 9, 12), NULL),
	};
	struct op_attr at[2] = { oh_int("q_num_heads", 4), oh_int("kv_num_heads", 2) };
	struct op_tensor out[4];

	cr_assert_eq(oh_infer("Attention", 23, at, 2, in, 6, out, 4), 0, "%s", cep_last_error());
	cr_assert(out[0].dtype == CEP_DTYPE_FLOAT16 && out[0].rank == 3);
	cr_assert(out[0].dims[0] == OP_DIM_SYM(0) && out[0].dims[1] == 5 && out[0].dims[2] == 48);
	cr_assert(out[1].rank == 4 && out[1].dims[1] == 2 && out[1].dims[2] == 16 &&
		  out[1].dims[3] == 8);
	cr_assert(out[2].dims[2] == 16 && out[2].dims[3] == 12);
	cr_assert(out[3].rank == 4 && out[3].dims[1] == 4 && out[3].dims[2] == 5 &&
		  out[3].dims[3] == 16);
}

/* ------------------------------------------------------------- refusals */

/* Runs Attention at opset over 4-D float32 Q (1,2,3,4), K and V (1,2,5,4)
 * with the extra inputs and attributes; returns its status. */
static int refuse(int opset, const struct op_attr *at, int n_at, struct op_tensor *extra,
		  int n_extra)
{
	static float buf[256];
	struct op_tensor in[7] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 3, 4), buf),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf),
	};
	struct op_tensor out[4];
	int i, ret;

	for (i = 0; i < n_extra; i++)
		in[3 + i] = extra[i];
	ret = oh_run("Attention", opset, at, n_at, in, 3 + n_extra, out, 1);
	if (ret == 0)
		outs_free(out, 1);
	return ret;
}

Test(ops_sdpa, bad_attributes_are_refused_with_a_message)
{
	static const struct {
		const char *name;
		int64_t v;
		int opset;
		const char *msg;
	} bad[] = {
		{ "is_causal", 2, 23, "Attention: is_causal is 2, not 0 or 1" },
		{ "qk_matmul_output_mode", 4, 23,
		  "Attention: qk_matmul_output_mode is 4, not 0, 1, 2 or 3" },
		{ "softmax_precision", 7, 23,
		  "Attention: softmax_precision is 7, not a float type (1, 10, 11 or 16)" },
		{ "q_num_heads", 0, 23, "Attention: q_num_heads is 0, it must be a positive count" },
		{ "left_window_size", -2, 25,
		  "Attention: left_window_size is -2, it must be -1 (unbounded) or a count of keys" },
		{ "q_num_heads", 2, 25,
		  "Attention: from opset 25 q_num_heads and kv_num_heads go only with 3-D Q, K and V" },
	};
	struct op_attr at;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		at = oh_int(bad[i].name, bad[i].v);
		cr_assert_eq(refuse(bad[i].opset, &at, 1, NULL, 0), CEP_EMODEL, "%s", bad[i].name);
		cr_assert_str_eq(cep_last_error(), bad[i].msg);
	}
	at = oh_float("softcap", -1.0f);
	cr_assert_eq(refuse(23, &at, 1, NULL, 0), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Attention: softcap is -1, it must not be negative");
	at = oh_float("scale", -0.5f);
	cr_assert_eq(refuse(23, &at, 1, NULL, 0), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Attention: scale is -0.5; it must not be negative (Q "
			 "and K are each multiplied by its square root)");
	at = oh_float("is_causal", 1.0f);
	cr_assert_eq(refuse(23, &at, 1, NULL, 0), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "is_causal") != NULL, "%s", cep_last_error());
}

Test(ops_sdpa, bad_shapes_and_types_are_refused_with_a_message)
{
	static float buf[512];
	static int64_t np[2] = { 1, 1 };
	struct op_attr heads[2] = { oh_int("q_num_heads", 3), oh_int("kv_num_heads", 2) };
	struct op_tensor out[4], in[7], ex[4];

	ex[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 5), buf);
	cr_assert_eq(refuse(23, NULL, 0, ex, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: attn_mask has 4 along the query axis, "
			 "which does not broadcast to 3");
	ex[0] = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(3, 5), buf);
	cr_assert_eq(refuse(23, NULL, 0, ex, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Attention: attn_mask is int32; only a bool or a float "
			 "mask is supported");
	ex[0] = ABSENT;
	ex[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 2, 4), buf);
	cr_assert_eq(refuse(23, NULL, 0, ex, 2), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Attention: past_key and past_value go together; only "
			 "past_key is given");
	ex[2] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 3, 4), buf);
	cr_assert_eq(refuse(23, NULL, 0, ex, 3), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: past_value has 3 rows but past_key has 2");
	ex[2] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 2, 4), buf);
	ex[3] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), np);
	cr_assert_eq(refuse(24, NULL, 0, ex, 4), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Attention: nonpad_kv_seqlen cannot be used with "
			 "past_key and past_value");
	ex[1] = ex[2] = ABSENT;
	ex[3] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), np);
	cr_assert_eq(refuse(24, NULL, 0, ex, 4), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: nonpad_kv_seqlen must hold one count per "
			 "batch entry (1)");
	/* Q, K and V themselves. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 3, 12), buf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 5, 8), buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 5, 8), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "Attention: 3-D Q, K and V need the attributes "
			 "q_num_heads and kv_num_heads");
	cr_assert_eq(oh_run("Attention", 23, heads, 2, in, 3, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: 3 query heads do not share 2 key and value "
			 "heads evenly");
	heads[0] = oh_int("q_num_heads", 5);
	cr_assert_eq(oh_run("Attention", 23, heads, 2, in, 3, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: Q's hidden size 12 does not split into "
			 "q_num_heads=5 heads");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, heads, 2, in, 3, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: Q, K and V must have one rank; K has 4 and "
			 "Q 3");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 3, 4), buf);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 3), buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: K has 3 elements per head but Q has 4");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(1, 2, 5, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "Attention: K is float16 but Q is float32");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(1, 2, 5, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Attention: V is float16 but Q is float32; only Q, K and "
			 "V of one type are supported");
	in[0] = oh_tensor(CEP_DTYPE_INT32, 4, DIMS(1, 2, 3, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "Attention: Q is int32, a float type is needed");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 4), buf);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 5, 4), buf);
	cr_assert_eq(oh_run("Attention", 23, NULL, 0, in, 3, out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Attention: Q has rank 2, not 3 or 4");
}
