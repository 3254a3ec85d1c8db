/*
 * test_ops_ms_mha.c — com.microsoft MultiHeadAttention on the host
 * (kernels/cpu/ms_mha.c), run as the engine runs a node (schema
 * inference, then the host kernel): a case worked out by hand, then every
 * form of Q, K and V (separate, packed K and V, K and V already in heads,
 * packed Q, K and V) with bias, each key_padding_mask form taken,
 * attention_bias broadcast either way, past and present, unidirectional,
 * a custom scale and mask_filter_value, against a reference worked out
 * here in double from the logical Q, K and V, in float32, float16 and
 * bfloat16; the inference of symbolic shapes; and the refusals, by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define MS OP_DOMAIN_MS

static const struct op_tensor none = { .dtype = CEP_DTYPE_UNDEFINED };

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(out[i].data);
		out[i].data = NULL;
	}
}

static double at(const struct op_tensor *o, int64_t i)
{
	return cpu_load_f(o->data, o->dtype, i);
}

/* n random values in [-scale, scale) rounded to t: as doubles in v[], and
 * stored as t in a new buffer (returned, malloc'ed). */
static void *rand_in(cep_dtype t, int64_t n, float scale, unsigned *seed, double *v)
{
	void *raw = malloc((size_t)(n ? n : 1) * cep_dtype_size(t));
	int64_t i;

	cr_assert(raw);
	for (i = 0; i < n; i++) {
		cpu_store_f(raw, t, i, oh_rand(seed) * scale);
		v[i] = cpu_load_f(raw, t, i);
	}
	return raw;
}

/* v rounded to t. */
static double round_to(cep_dtype t, double v)
{
	uint64_t raw;

	cpu_store_f(&raw, t, 0, (float)v);
	return cpu_load_f(&raw, t, 0);
}

/* ------------------------------------------------------------- hand-worked */

/*
 * One query (q = 1), two new keys (0 and ln 3), values 4 and 8, scale 1:
 * scores 0 and ln 3, weights 1/4 and 3/4, output 1 + 6 = 7. With the raw
 * mask (1, 0) the second key gets -10000 and the output is 4. With a past
 * key 0 of value 2 ahead of them (T = 3): weights 1/5, 1/5, 3/5, output
 * 2/5 + 4/5 + 24/5 = 6, and present_key / present_value are (0, 0, ln 3) and
 * (2, 4, 8). With the bias (q: 0, k: ln 3, v: 1), q . k_j picks up the bias:
 * keys ln 3 and 2 ln 3, so scores ln 3, 2 ln 3 and weights 1/4, 3/4 over
 * values 5 and 9: 5/4 + 27/4 = 8.
 */
Test(ms_mha, hand_worked)
{
	float q[1] = { 1 }, k[2] = { 0, logf(3) }, v[2] = { 4, 8 }, pk[1] = { 0 }, pv[1] = { 2 };
	float bias[3] = { 0, logf(3), 1 };
	int32_t raw[2] = { 1, 0 };
	int64_t dq[3] = { 1, 1, 1 }, dk[3] = { 1, 2, 1 }, dp[4] = { 1, 1, 1, 1 }, dm[2] = { 1, 2 };
	int64_t db[1] = { 3 };
	struct op_attr attrs[2] = { oh_int("num_heads", 1), oh_float("scale", 1.0f) };
	struct op_tensor in[8] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, dq, q), oh_tensor(CEP_DTYPE_FLOAT32, 3, dk, k),
		oh_tensor(CEP_DTYPE_FLOAT32, 3, dk, v), none, none, none, none, none,
	};
	struct op_tensor o[3];

	cr_assert_eq(oh_run_in(MS, "MultiHeadAttention", 1, attrs, 2, in, 3, o, 1), 0, "%s",
		     cep_last_error());
	cr_assert(o[0].rank == 3 && o[0].dims[0] == 1 && o[0].dims[1] == 1 && o[0].dims[2] == 1);
	cr_assert_float_eq(at(&o[0], 0), 7.0, 1e-5);
	outs_free(o, 1);

	in[4] = oh_tensor(CEP_DTYPE_INT32, 2, dm, raw);
	cr_assert_eq(oh_run_in(MS, "MultiHeadAttention", 1, attrs, 2, in, 5, o, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(at(&o[0], 0), 4.0, 1e-5);
	outs_free(o, 1);

	in[4] = none;
	in[6] = oh_tensor(CEP_DTYPE_FLOAT32, 4, dp, pk);
	in[7] = oh_tensor(CEP_DTYPE_FLOAT32, 4, dp, pv);
	cr_assert_eq(oh_run_in(MS, "MultiHeadAttention", 1, attrs, 2, in, 8, o, 3), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(at(&o[0], 0), 6.0, 1e-5);
	cr_assert(o[1].rank == 4 && o[1].dims[2] == 3 && o[2].rank == 4 && o[2].dims[2] == 3);
	cr_assert(at(&o[1], 0) == 0 && at(&o[1], 1) == 0 && at(&o[1], 2) == k[1]);
	cr_assert(at(&o[2], 0) == 2 && at(&o[2], 1) == 4 && at(&o[2], 2) == 8);
	outs_free(o, 3);

	in[3] = oh_tensor(CEP_DTYPE_FLOAT32, 1, db, bias);
	cr_assert_eq(oh_run_in(MS, "MultiHeadAttention", 1, attrs, 2, in, 4, o, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(at(&o[0], 0), 8.0, 1e-5);
	outs_free(o, 1);
}

/* ------------------------------------------------------------- reference */

enum { B = 2, S = 3, N = 2, H = 4, P = 2, FORMS = 4 };
enum { FORM_BSD, FORM_PACKED_KV, FORM_BNSH, FORM_QKV };

/* One case: the logical inputs (doubles, already rounded to the type). */
struct mcase {
	int form, L, Hv, P;           /* P: past keys (0: none) */
	bool bias, causal;
	int mask;                     /* 0 none, 1 lengths, 2 (B, T), 3 (B, S, T) */
	int ab;                       /* 0 none, 1 (1, N, S, T), 2 (B, 1, S, T) */
	double scale, filt;
	double q[B][S][N][H];
	double k[B][S + 1][N][H];     /* new keys (L of them) */
	double v[B][S + 1][N][H];     /* new values (Hv of depth) */
	double bq[N * H], bk[N * H], bv[N * H];
	double pk[B][N][P][H], pv[B][N][P][H];
	double abv[B * N * S * (S + 1 + P)];
	int32_t lens[B], raw2[B * (S + 1 + P)], raw3[B * S * (S + 1 + P)];
};

/* The output (B, S, N * Hv) and present K, V (B, N, T, H / Hv) of c. */
static void ref_mha(const struct mcase *c, cep_dtype t, double *out, double *pk, double *pv)
{
	int T = c->P + c->L, b, n, i, j, d;
	double s[S + 1 + P];

	for (b = 0; b < B; b++) {
		for (n = 0; n < N; n++) {
			for (j = 0; j < T; j++) {
				for (d = 0; d < H; d++) {
					int at = ((b * N + n) * T + j) * H + d;

					pk[at] = j < c->P ? c->pk[b][n][j][d]
						 : round_to(t, c->k[b][j - c->P][n][d] +
								   (c->bias ? c->bk[n * H + d] : 0));
				}
				for (d = 0; d < c->Hv; d++) {
					int at = ((b * N + n) * T + j) * c->Hv + d;

					pv[at] = j < c->P ? c->pv[b][n][j][d]
						 : round_to(t, c->v[b][j - c->P][n][d] +
								   (c->bias ? c->bv[n * c->Hv + d] : 0));
				}
			}
		}
	}
	for (b = 0; b < B; b++) {
		for (n = 0; n < N; n++) {
			for (i = 0; i < S; i++) {
				double mx = -INFINITY, sum = 0;

				for (j = 0; j < T; j++) {
					double dot = 0, add = 0;

					for (d = 0; d < H; d++)
						dot += round_to(t, c->q[b][i][n][d] + (c->bias ? c->bq[n * H + d] : 0)) *
						       pk[((b * N + n) * T + j) * H + d];
					if (c->mask == 1 && j >= c->lens[b])
						add = c->filt;
					if (c->mask == 2)
						add = (1 - c->raw2[b * T + j]) * c->filt;
					if (c->mask == 3)
						add = (1 - c->raw3[(b * S + i) * T + j]) * c->filt;
					if (c->ab == 1)
						add += c->abv[(n * S + i) * T + j];
					if (c->ab == 2)
						add += c->abv[(b * S + i) * T + j];
					s[j] = dot * c->scale + add;
					if (c->causal && j > c->P + i)
						s[j] = -INFINITY;
					mx = s[j] > mx ? s[j] : mx;
				}
				for (j = 0; j < T; j++)
					sum += exp(s[j] - mx);
				for (d = 0; d < c->Hv; d++) {
					double acc = 0;

					for (j = 0; j < T; j++)
						acc += exp(s[j] - mx) / sum * pv[((b * N + n) * T + j) * c->Hv + d];
					out[(b * S + i) * N * c->Hv + n * c->Hv + d] = acc;
				}
			}
		}
	}
}

/* Runs c in type t through the node and compares with ref_mha(). */
static void check_case(const struct mcase *c, cep_dtype t, const char *label)
{
	int T = c->P + c->L, L = c->L, Hv = c->Hv, b, s, n, d, i, n_in;
	size_t es = cep_dtype_size(t);
	unsigned char *qb = calloc(B * S * N * 3 * H, es), *kb = calloc(B * (S + 1) * N * 2 * H, es);
	unsigned char *vb = calloc(B * (S + 1) * N * H, es), *bb = calloc(3 * N * H, es);
	unsigned char *pkb = calloc(B * N * P * H, es), *pvb = calloc(B * N * P * H, es);
	unsigned char *abb = calloc(B * N * S * T, es);
	double *out = calloc(B * S * N * Hv, sizeof(double)), *rpk = calloc(B * N * T * H, sizeof(double));
	double *rpv = calloc(B * N * T * Hv, sizeof(double)), tol;
	int64_t dq[5], dk[5], dv[4], dbias[1] = { 2 * N * H + N * Hv }, dpk[4] = { B, N, c->P, H };
	int64_t dpv[4] = { B, N, c->P, Hv }, dl[1] = { B }, d2[2] = { B, T }, d3[3] = { B, S, T };
	int64_t dab[4] = { c->ab == 2 ? B : 1, c->ab == 1 ? N : 1, S, T };
	struct op_attr attrs[4] = { oh_int("num_heads", N), oh_float("scale", (float)c->scale),
				    oh_float("mask_filter_value", (float)c->filt),
				    oh_int("unidirectional", c->causal) };
	struct op_tensor in[8], o[3];

	cr_assert(qb && kb && vb && bb && pkb && pvb && abb && out && rpk && rpv);
	ref_mha(c, t, out, rpk, rpv);
	for (b = 0; b < B; b++) {
		for (s = 0; s < S + 1; s++) {
			for (n = 0; n < N; n++) {
				for (d = 0; d < H; d++) {
					if (s < S && c->form == FORM_QKV) {
						int64_t at = ((b * S + s) * N + n) * 3 * H + d;

						cpu_store_f(qb, t, at, (float)c->q[b][s][n][d]);
						cpu_store_f(qb, t, at + H, (float)c->k[b][s][n][d]);
						cpu_store_f(qb, t, at + 2 * H, (float)c->v[b][s][n][d]);
					} else if (s < S) {
						cpu_store_f(qb, t, (b * S + s) * N * H + n * H + d,
							    (float)c->q[b][s][n][d]);
					}
					if (s >= L || c->form == FORM_QKV)
						continue;
					if (c->form == FORM_PACKED_KV) {
						int64_t at = ((b * L + s) * N + n) * 2 * H + d;

						cpu_store_f(kb, t, at, (float)c->k[b][s][n][d]);
						cpu_store_f(kb, t, at + H, (float)c->v[b][s][n][d]);
					} else if (c->form == FORM_BNSH) {
						cpu_store_f(kb, t, ((b * N + n) * L + s) * H + d,
							    (float)c->k[b][s][n][d]);
						if (d < Hv)
							cpu_store_f(vb, t, ((b * N + n) * L + s) * Hv + d,
								    (float)c->v[b][s][n][d]);
					} else {
						cpu_store_f(kb, t, (b * L + s) * N * H + n * H + d,
							    (float)c->k[b][s][n][d]);
						if (d < Hv)
							cpu_store_f(vb, t, (b * L + s) * N * Hv + n * Hv + d,
								    (float)c->v[b][s][n][d]);
					}
				}
			}
		}
	}
	for (i = 0; i < N * H; i++) {
		cpu_store_f(bb, t, i, (float)c->bq[i]);
		cpu_store_f(bb, t, N * H + i, (float)c->bk[i]);
		if (i < N * Hv)
			cpu_store_f(bb, t, 2 * N * H + i, (float)c->bv[i]);
	}
	for (b = 0; b < B; b++)
		for (n = 0; n < N; n++)
			for (s = 0; s < c->P; s++)
				for (d = 0; d < H; d++) {
					cpu_store_f(pkb, t, ((b * N + n) * c->P + s) * H + d,
						    (float)c->pk[b][n][s][d]);
					if (d < Hv)
						cpu_store_f(pvb, t, ((b * N + n) * c->P + s) * Hv + d,
							    (float)c->pv[b][n][s][d]);
				}
	for (i = 0; i < dab[0] * dab[1] * S * T; i++)
		cpu_store_f(abb, t, i, (float)c->abv[i]);

	if (c->form == FORM_QKV) {
		int64_t d5[5] = { B, S, N, 3, H };

		memcpy(dq, d5, sizeof(d5));
		in[0] = oh_tensor(t, 5, dq, qb);
		in[1] = in[2] = none;
	} else {
		int64_t d3q[3] = { B, S, N * H };

		memcpy(dq, d3q, sizeof(d3q));
		in[0] = oh_tensor(t, 3, dq, qb);
		if (c->form == FORM_PACKED_KV) {
			int64_t d5[5] = { B, L, N, 2, H };

			memcpy(dk, d5, sizeof(d5));
			in[1] = oh_tensor(t, 5, dk, kb);
			in[2] = none;
		} else if (c->form == FORM_BNSH) {
			int64_t d4k[4] = { B, N, L, H }, d4v[4] = { B, N, L, Hv };

			memcpy(dk, d4k, sizeof(d4k));
			memcpy(dv, d4v, sizeof(d4v));
			in[1] = oh_tensor(t, 4, dk, kb);
			in[2] = oh_tensor(t, 4, dv, vb);
		} else {
			int64_t d3k[3] = { B, L, N * H }, d3v[3] = { B, L, N * Hv };

			memcpy(dk, d3k, sizeof(d3k));
			memcpy(dv, d3v, sizeof(d3v));
			in[1] = oh_tensor(t, 3, dk, kb);
			in[2] = oh_tensor(t, 3, dv, vb);
		}
	}
	in[3] = c->bias ? oh_tensor(t, 1, dbias, bb) : none;
	in[4] = c->mask == 1 ? oh_tensor(CEP_DTYPE_INT32, 1, dl, (void *)c->lens)
		: c->mask == 2 ? oh_tensor(CEP_DTYPE_INT32, 2, d2, (void *)c->raw2)
		: c->mask == 3 ? oh_tensor(CEP_DTYPE_INT32, 3, d3, (void *)c->raw3) : none;
	in[5] = c->ab ? oh_tensor(t, 4, dab, abb) : none;
	in[6] = c->P ? oh_tensor(t, 4, dpk, pkb) : none;
	in[7] = c->P ? oh_tensor(t, 4, dpv, pvb) : none;
	n_in = c->P ? 8 : c->ab ? 6 : c->mask ? 5 : c->bias ? 4 : 3;
	cr_assert_eq(oh_run_in(MS, "MultiHeadAttention", 1, attrs, 4, in, n_in, o, 3), 0, "%s: %s",
		     label, cep_last_error());
	cr_assert(o[0].rank == 3 && o[0].dims[0] == B && o[0].dims[1] == S &&
		  o[0].dims[2] == N * Hv && o[0].dtype == t, "%s", label);
	cr_assert(o[1].rank == 4 && o[1].dims[0] == B && o[1].dims[1] == N && o[1].dims[2] == T &&
		  o[1].dims[3] == H && o[2].dims[2] == T && o[2].dims[3] == Hv, "%s", label);
	tol = t == CEP_DTYPE_FLOAT32 ? 1e-5 : t == CEP_DTYPE_FLOAT16 ? 1e-2 : 6e-2;
	for (i = 0; i < B * S * N * Hv; i++)
		cr_assert(fabs(at(&o[0], i) - out[i]) <= tol * (1 + fabs(out[i])),
			  "%s %s output [%d]: %g, want %g", label, cep_dtype_name(t), i,
			  at(&o[0], i), out[i]);
	for (i = 0; i < B * N * T * H; i++)
		cr_assert(at(&o[1], i) == rpk[i], "%s %s present_key [%d]: %g, want %g", label,
			  cep_dtype_name(t), i, at(&o[1], i), rpk[i]);
	for (i = 0; i < B * N * T * Hv; i++)
		cr_assert(at(&o[2], i) == rpv[i], "%s %s present_value [%d]: %g, want %g", label,
			  cep_dtype_name(t), i, at(&o[2], i), rpv[i]);
	outs_free(o, 3);
	free(qb), free(kb), free(vb), free(bb), free(pkb), free(pvb), free(abb);
	free(out), free(rpk), free(rpv);
}

/* Fills c's logical inputs with random values rounded to t. */
static void fill_case(struct mcase *c, cep_dtype t, unsigned *seed)
{
	int T = c->P + c->L, i;
	double *all[] = { &c->q[0][0][0][0], &c->k[0][0][0][0], &c->v[0][0][0][0], c->bq, c->bk,
			  c->bv, &c->pk[0][0][0][0], &c->pv[0][0][0][0], c->abv };
	int64_t sizes[] = { B * S * N * H, B * (S + 1) * N * H, B * (S + 1) * N * H, N * H, N * H,
			    N * H, B * N * P * H, B * N * P * H, B * N * S * (S + 1 + P) };

	for (i = 0; i < 9; i++)
		free(rand_in(t, sizes[i], i == 8 ? 2.0f : 1.0f, seed, all[i]));
	for (i = 0; i < B; i++)
		c->lens[i] = 1 + i * (T - 1);
	for (i = 0; i < B * T; i++)
		c->raw2[i] = i % T == 0 || oh_rand(seed) > -0.4f;
	for (i = 0; i < B * S * T; i++)
		c->raw3[i] = i % T == 0 || oh_rand(seed) > -0.4f;
}

/* Every form with each option in turn and together, in the three types. */
Test(ms_mha, every_form_every_option_every_type)
{
	static const cep_dtype types[3] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					    CEP_DTYPE_BFLOAT16 };
	unsigned seed = 7;
	int ti, form, opt, cases = 0;

	for (ti = 0; ti < 3; ti++) {
		for (form = 0; form < FORMS; form++) {
			for (opt = 0; opt < 8; opt++) {
				struct mcase *c = calloc(1, sizeof(*c));
				char label[64];

				cr_assert(c);
				c->form = form;
				c->L = form == FORM_QKV ? S : S + 1;
				c->Hv = form == FORM_BSD || form == FORM_BNSH ? H / 2 : H;
				c->scale = opt == 3 ? 0.3 : 1 / sqrt(H);
				c->filt = opt == 2 ? -3.0 : -10000.0;
				/* 0 nothing; 1 bias and lengths; 2 bias, (B, T), filter
				 * -3; 3 (B, S, T), scale 0.3; 4 attention_bias (1, N)
				 * and causal; 5 (B, 1) bias, lengths, past; 6 past,
				 * causal, bias, (B, T); 7 everything. */
				c->bias = form != FORM_BNSH && (opt == 1 || opt == 2 || opt >= 5);
				c->mask = opt == 1 || opt == 5 ? 1 : opt == 2 || opt == 6 ? 2
					  : opt == 3 || opt == 7 ? 3 : 0;
				c->ab = opt == 4 || opt == 7 ? 1 : opt == 5 ? 2 : 0;
				c->causal = opt == 4 || opt == 6 || opt == 7;
				c->P = form != FORM_BNSH && opt >= 5 ? P : 0;
				fill_case(c, types[ti], &seed);
				snprintf(label, sizeof(label), "form %d option %d", form, opt);
				check_case(c, types[ti], label);
				free(c);
				cases++;
			}
		}
	}
	cr_assert_eq(cases, 96);
}

/* ------------------------------------------------------------- inference */

Test(ms_mha, inference_of_symbolic_shapes)
{
	int64_t dq[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 8 }, dk[3] = { OP_DIM_SYM(0), OP_DIM_SYM(2), 8 };
	int64_t dv[3] = { OP_DIM_SYM(0), OP_DIM_SYM(2), 6 }, dp[4] = { OP_DIM_SYM(0), 2, 5, 4 };
	int64_t dpv[4] = { OP_DIM_SYM(0), 2, 5, 3 }, dk4[4] = { 1, 2, 7, 4 }, dv4[4] = { 1, 2, 7, 3 };
	int64_t dq1[3] = { 1, 3, 8 };
	struct op_attr attrs[1] = { oh_int("num_heads", 2) };
	struct op_tensor in[8] = {
		oh_tensor(CEP_DTYPE_FLOAT16, 3, dq, NULL), oh_tensor(CEP_DTYPE_FLOAT16, 3, dk, NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 3, dv, NULL), none, none, none,
		oh_tensor(CEP_DTYPE_FLOAT16, 4, dp, NULL), oh_tensor(CEP_DTYPE_FLOAT16, 4, dpv, NULL),
	};
	struct op_tensor o[3];

	cr_assert_eq(oh_infer_in(MS, "MultiHeadAttention", 1, attrs, 1, in, 3, o, 3), 0, "%s",
		     cep_last_error());
	cr_assert(o[0].dtype == CEP_DTYPE_FLOAT16 && o[0].rank == 3 && o[0].dims[0] == OP_DIM_SYM(0) &&
		  o[0].dims[1] == OP_DIM_SYM(1) && o[0].dims[2] == 6);
	cr_assert(o[1].rank == 4 && o[1].dims[1] == 2 && o[1].dims[2] == OP_DIM_SYM(2) &&
		  o[1].dims[3] == 4 && o[2].dims[3] == 3);
	/* With a past, the total is unknown until the keys are known. */
	cr_assert_eq(oh_infer_in(MS, "MultiHeadAttention", 1, attrs, 1, in, 8, o, 3), 0, "%s",
		     cep_last_error());
	cr_assert(o[1].dims[2] == OP_DIM_UNKNOWN && o[2].dims[2] == OP_DIM_UNKNOWN);
	in[1].dims[1] = in[2].dims[1] = 4;
	cr_assert_eq(oh_infer_in(MS, "MultiHeadAttention", 1, attrs, 1, in, 8, o, 3), 0, "%s",
		     cep_last_error());
	cr_assert(o[1].dims[2] == 9 && o[2].dims[2] == 9 && o[2].dims[3] == 3);
	/* Keys already in heads: their length and V's depth. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT16, 3, dq1, NULL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 4, dk4, NULL);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT16, 4, dv4, NULL);
	cr_assert_eq(oh_infer_in(MS, "MultiHeadAttention", 1, attrs, 1, in, 3, o, 3), 0, "%s",
		     cep_last_error());
	cr_assert(o[0].dims[2] == 6 && o[1].dims[2] == 7 && o[2].dims[3] == 3);
}

/* ------------------------------------------------------------- refusals */

static void refused(const struct op_attr *attrs, int n_attrs, const struct op_tensor *in,
		    int n_in, int n_out, int err, const char *why)
{
	struct op_tensor o[4];

	cr_assert_eq(oh_infer_in(MS, "MultiHeadAttention", 1, attrs, n_attrs, in, n_in, o, n_out),
		     err, "want %s: %s", why, cep_last_error());
	cr_assert(strstr(cep_last_error(), why), "want \"%s\", got \"%s\"", why, cep_last_error());
	cr_assert(strstr(cep_last_error(), "MultiHeadAttention: "), "%s", cep_last_error());
}

Test(ms_mha, refusals_name_the_form_and_why)
{
	int64_t dq[3] = { 2, 3, 8 }, dk[3] = { 2, 4, 8 }, dk4[4] = { 2, 2, 4, 4 }, dq4[4] = { 2, 3, 2, 4 };
	int64_t dm[1] = { 8 }, dm2[2] = { 2, 4 }, dp[4] = { 2, 2, 1, 4 }, d1[1] = { 1 };
	int64_t db[1] = { 24 }, dab[4] = { 2, 3, 3, 4 }, dq5[5] = { 2, 3, 2, 3, 4 };
	struct op_attr heads[1] = { oh_int("num_heads", 2) };
	struct op_attr three[1] = { oh_int("num_heads", 3) };
	struct op_attr uni[2] = { oh_int("num_heads", 2), oh_int("unidirectional", 2) };
	const cep_dtype f = CEP_DTYPE_FLOAT32;
	struct op_tensor q = oh_tensor(f, 3, dq, NULL), k = oh_tensor(f, 3, dk, NULL);
	struct op_tensor in[10] = { q, k, k, none, none, none, none, none, none, none };

	refused(NULL, 0, in, 3, 1, CEP_EMODEL, "num_heads is missing");
	refused(uni, 2, in, 3, 1, CEP_EMODEL, "unidirectional is 2");
	refused(three, 1, in, 3, 1, CEP_ESHAPE, "query's hidden size 8 is not a multiple of num_heads 3");
	refused(heads, 1, in, 3, 4, CEP_EUNSUPPORTED, "output qk is not supported");
	in[8] = oh_tensor(CEP_DTYPE_INT32, 1, d1, NULL);
	refused(heads, 1, in, 9, 1, CEP_EUNSUPPORTED, "input past_sequence_length (past and present sharing a buffer)");
	in[8] = none;
	in[9] = oh_tensor(CEP_DTYPE_INT32, 1, d1, NULL);
	refused(heads, 1, in, 10, 1, CEP_EUNSUPPORTED, "input cache_indirection (beam search)");
	in[9] = none;
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dm, NULL);
	refused(heads, 1, in, 5, 1, CEP_EUNSUPPORTED, "(3 * batch + 2) (lengths and starts) is not supported");
	in[4] = oh_tensor(CEP_DTYPE_INT64, 2, dm2, NULL);
	refused(heads, 1, in, 5, 1, CEP_EDTYPE, "key_padding_mask is int64, not int32");
	in[4] = oh_tensor(CEP_DTYPE_INT32, 2, dm2, NULL);
	in[6] = oh_tensor(f, 4, dp, NULL);
	in[7] = oh_tensor(f, 4, dp, NULL);
	refused(heads, 1, in, 8, 1, CEP_EUNSUPPORTED, "(batch, kv_sequence = 4) with 1 past keys is not supported");
	in[4] = none;
	in[7] = none;
	refused(heads, 1, in, 8, 1, CEP_EMODEL, "past_key and past_value must be given together");
	in[6] = none;
	in[5] = oh_tensor(f, 4, dab, NULL);
	refused(heads, 1, in, 6, 1, CEP_ESHAPE, "attention_bias must have shape (batch or 1, num_heads or 1, sequence, total_sequence)");
	in[5] = none;
	in[1] = oh_tensor(f, 4, dk4, NULL);
	in[2] = oh_tensor(f, 4, dk4, NULL);
	in[3] = oh_tensor(f, 1, db, NULL);
	refused(heads, 1, in, 4, 1, CEP_EMODEL, "bias must be absent when key is (batch, num_heads, kv_sequence, head_size)");
	in[3] = none;
	in[6] = in[7] = oh_tensor(f, 4, dp, NULL);
	refused(heads, 1, in, 8, 1, CEP_EMODEL, "past_key and past_value must be absent when key is");
	in[6] = in[7] = none;
	in[1] = k;
	in[2] = none;
	refused(heads, 1, in, 3, 1, CEP_ESHAPE, "needs a value (batch, kv_sequence, v_hidden)");
	in[2] = oh_tensor(CEP_DTYPE_FLOAT16, 3, dk, NULL);
	refused(heads, 1, in, 3, 1, CEP_EDTYPE, "value is float16 but query is float32");
	in[1] = in[2] = none;
	refused(heads, 1, in, 1, 1, CEP_EUNSUPPORTED, "without key is not supported");
	in[0] = oh_tensor(f, 4, dq4, NULL);
	refused(heads, 1, in, 1, 1, CEP_ESHAPE, "query has rank 4, not 3");
	in[0] = oh_tensor(f, 5, dq5, NULL);
	in[1] = k;
	refused(heads, 1, in, 2, 1, CEP_EMODEL, "a packed query (batch, sequence, num_heads, 3, head_size) takes no key or value");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT64, 3, dq, NULL);
	refused(heads, 1, in, 1, 1, CEP_EDTYPE, "query is float64, not float32, float16 or bfloat16");
}
