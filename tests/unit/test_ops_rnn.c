/*
 * test_ops_rnn.c — the recurrent layers of kernels/cpu/rnn.c: RNN, GRU
 * and LSTM worked by hand from the specification's equations (one hidden
 * unit: forward, reverse, shorter sequences, GRU's two ways of resetting,
 * LSTM's peepholes); then against a reference written here from the
 * equations, in double, over every operator, direction, layout and type
 * (bfloat16 from opset 22 only) with and without each optional input;
 * every activation function with its alpha and beta, consumed in the
 * order the functions are listed, their defaults, one list for both
 * directions; clip; sequence_lens shorter than the sequence and 0; every
 * optional output alone; GRU's linear_before_reset at every opset, LSTM's
 * input_forget; the refusals, each with its message; inference over
 * symbolic dims; and a model of all three run in fp16 and bf16 sessions
 * with every node in half (sequence_lens staying int32), matching
 * float32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"
#include "tests/unit/prec_models.h"
#include "tests/unit/rnn_model.h"

/* ------------------------------------------------------------------ helpers */

static struct op_attr a_strings(const char *name, int n, const char *const *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_STRINGS, .n = n, .strings = v };
}

static struct op_attr a_floats(const char *name, int n, const float *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOATS, .n = n, .floats = v };
}

/* A float32 tensor of the given dims over v (not copied). */
static struct op_tensor f32(int rank, const int64_t *dims, float *v)
{
	return oh_tensor(CEP_DTYPE_FLOAT32, rank, dims, v);
}

static float f_at(const struct op_tensor *t, int64_t i)
{
	return cpu_load_f(t->data, t->dtype, i);
}

/* Runs op with outputs out[0..n_out), those whose bit is set in absent
 * left unnamed as the planner leaves them (no type, no data of theirs). */
static int run_absent(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
		      const struct op_tensor *in, int n_in, struct op_tensor *out, int n_out,
		      unsigned absent)
{
	const struct op_node node = { "t", op, "", opset, n_attrs, attrs };
	const struct op_schema *s;
	const struct op_kernel *k;
	int i, ret;

	ret = oh_infer(op, opset, attrs, n_attrs, in, n_in, out, n_out);
	if (ret < 0)
		return ret;
	for (i = 0; i < n_out; i++) {
		if (absent & (1u << i))
			out[i] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
	}
	cr_assert_eq(op_schema_find("", op, opset, &s), 0);
	ret = op_kernel_find(s, opset, BACKEND_HOST, in[0].dtype, &k);
	if (ret < 0)
		return ret;
	return exec_host_eval(&node, k, in, n_in, out, n_out);
}

static void free_outs(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(out[i].data);
		out[i].data = NULL;
	}
}

/* ------------------------------------------------------ worked by hand */

/* H = 1, I = 1: W 0.5, R 0.25, Wb 0.1, Rb 0.2 over x = 1, 2, -1;
 * H_t = tanh(0.5 x_t + 0.25 H_t-1 + 0.3). */
Test(ops_rnn, rnn_worked_by_hand)
{
	float x[3] = { 1, 2, -1 }, w[1] = { 0.5f }, r[1] = { 0.25f }, b[2] = { 0.1f, 0.2f };
	float h0[2] = { 0.5f, 0.5f };
	int32_t lens[1] = { 2 };
	static const float fwd[3] = { 0.66403677f, 0.898813427f, 0.0246983328f };
	static const float rev[3] = { 0.766636161f, 0.848467537f, -0.19737532f };
	/* Of length 2 from H_0 = 0.5: forward, then reversed (from t = 1). */
	static const float fwd2[2] = { 0.728254206f, 0.901853887f };
	static const float rev2[2] = { 0.770947485f, 0.890637366f };
	int64_t dx[3] = { 3, 1, 1 }, dw[3] = { 1, 1, 1 }, db[2] = { 1, 2 }, dl[1] = { 1 };
	int64_t dh[3] = { 1, 1, 1 }, dh2[3] = { 2, 1, 1 }, dw2[3] = { 2, 1, 1 }, db2[2] = { 2, 2 };
	float w2[2] = { 0.5f, 0.5f }, r2[2] = { 0.25f, 0.25f }, b2[4] = { 0.1f, 0.2f, 0.1f, 0.2f };
	struct op_attr attrs[2] = { oh_int("hidden_size", 1), oh_string("direction", "reverse") };
	struct op_tensor in[6] = { f32(3, dx, x), f32(3, dw, w), f32(3, dw, r), f32(2, db, b) };
	struct op_tensor out[2];
	int i;

	cr_assert_eq(oh_run("RNN", 7, attrs, 1, in, 4, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 4);
	for (i = 0; i < 3; i++)
		cr_assert_float_eq(f_at(&out[0], i), fwd[i], 1e-6, "t %d", i);
	cr_assert_float_eq(f_at(&out[1], 0), fwd[2], 1e-6);
	free_outs(out, 2);
	cr_assert_eq(oh_run("RNN", 22, attrs, 2, in, 4, out, 2), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_float_eq(f_at(&out[0], i), rev[i], 1e-6, "t %d", i);
	cr_assert_float_eq(f_at(&out[1], 0), rev[0], 1e-6, "reverse ends at t = 0");
	free_outs(out, 2);
	/* sequence_lens 2 of 3, initial_h 0.5: Y[2] is 0. */
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl, lens);
	in[5] = f32(3, dh, h0);
	cr_assert_eq(oh_run("RNN", 14, attrs, 1, in, 6, out, 2), 0, "%s", cep_last_error());
	cr_assert_float_eq(f_at(&out[0], 0), fwd2[0], 1e-6);
	cr_assert_float_eq(f_at(&out[0], 1), fwd2[1], 1e-6);
	cr_assert_eq(f_at(&out[0], 2), 0.0f);
	cr_assert_float_eq(f_at(&out[1], 0), fwd2[1], 1e-6);
	free_outs(out, 2);
	/* Both directions at once: Y is [3, 2, 1, 1], Y_h [2, 1, 1]. */
	attrs[1].s = "bidirectional";
	in[1] = f32(3, dw2, w2);
	in[2] = f32(3, dw2, r2);
	in[3] = f32(2, db2, b2);
	in[5] = f32(3, dh2, h0);
	cr_assert_eq(oh_run("RNN", 22, attrs, 2, in, 6, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[1], 2);
	for (i = 0; i < 2; i++) {
		cr_assert_float_eq(f_at(&out[0], 2 * i), fwd2[i], 1e-6);
		cr_assert_float_eq(f_at(&out[0], 2 * i + 1), rev2[i], 1e-6);
	}
	cr_assert_eq(f_at(&out[0], 4), 0.0f);
	cr_assert_eq(f_at(&out[0], 5), 0.0f);
	cr_assert_float_eq(f_at(&out[1], 0), fwd2[1], 1e-6);
	cr_assert_float_eq(f_at(&out[1], 1), rev2[0], 1e-6);
	free_outs(out, 2);
}

/* H = 1, I = 1, x = 1, 2, -1 from H_0 = 0.5 (and C_0 = -0.5). GRU:
 * W (z, r, h) 0.5, -0.4, 0.3; R 0.2, 0.1, -0.3; Wb 0.1, 0.2, 0.3; Rb
 * -0.1, 0, 0.2. LSTM: W (i, o, f, c) 0.5, 0.4, 0.3, 0.2; R 0.1, 0.2,
 * 0.3, 0.4; Wb_i 0.1, Rb_f 0.1; P (i, o, f) 0.2, 0.1, 0.3. */
Test(ops_rnn, gru_and_lstm_worked_by_hand)
{
	float x[3] = { 1, 2, -1 }, h0[1] = { 0.5f }, c0[1] = { -0.5f };
	float gw[3] = { 0.5f, -0.4f, 0.3f }, gr[3] = { 0.2f, 0.1f, -0.3f };
	float gb[6] = { 0.1f, 0.2f, 0.3f, -0.1f, 0.0f, 0.2f };
	float lw[4] = { 0.5f, 0.4f, 0.3f, 0.2f }, lr[4] = { 0.1f, 0.2f, 0.3f, 0.4f };
	float lb[8] = { 0.1f, 0, 0, 0, 0, 0, 0.1f, 0 }, lp[3] = { 0.2f, 0.1f, 0.3f };
	static const float gru0[3] = { 0.543740588f, 0.60184866f, 0.292448595f };
	static const float gru1[3] = { 0.518887412f, 0.56999546f, 0.242035132f };
	static const float lstm[3] = { -0.0362331237f, 0.160679538f, 0.0233776508f };
	int64_t dx[3] = { 3, 1, 1 }, d3[3] = { 1, 3, 1 }, d4[3] = { 1, 4, 1 }, db6[2] = { 1, 6 };
	int64_t db8[2] = { 1, 8 }, dp[2] = { 1, 3 }, dh[3] = { 1, 1, 1 };
	struct op_attr attrs[2] = { oh_int("hidden_size", 1), oh_int("linear_before_reset", 0) };
	struct op_tensor in[8] = { f32(3, dx, x), f32(3, d3, gw), f32(3, d3, gr), f32(2, db6, gb),
				   { 0 }, f32(3, dh, h0) };
	struct op_tensor out[3];
	int lbr, i;

	for (lbr = 0; lbr < 2; lbr++) {
		attrs[1].i = lbr;
		cr_assert_eq(oh_run("GRU", 3, attrs, 2, in, 6, out, 2), 0, "%s", cep_last_error());
		for (i = 0; i < 3; i++)
			cr_assert_float_eq(f_at(&out[0], i), (lbr ? gru1 : gru0)[i], 1e-6,
					   "linear_before_reset %d, t %d", lbr, i);
		free_outs(out, 2);
	}
	in[1] = f32(3, d4, lw);
	in[2] = f32(3, d4, lr);
	in[3] = f32(2, db8, lb);
	in[6] = f32(3, dh, c0);
	in[7] = f32(2, dp, lp);
	cr_assert_eq(oh_run("LSTM", 1, attrs, 1, in, 8, out, 3), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++)
		cr_assert_float_eq(f_at(&out[0], i), lstm[i], 1e-6, "t %d", i);
	cr_assert_float_eq(f_at(&out[1], 0), lstm[2], 1e-6);
	cr_assert_float_eq(f_at(&out[2], 0), 0.0570197667f, 1e-6, "Y_c");
	free_outs(out, 3);
}

/* ------------------------------------------------- against the equations */

/* One case for the reference below. */
struct rcase {
	const char *op;
	int opset;
	const char *dir;             /* NULL: the default, forward */
	int layout;
	int S, B, I, H;
	cep_dtype dt;
	int n_acts;
	const char *acts[6];
	int n_alpha, n_beta;
	float alpha[6], beta[6];
	float clip;                  /* 0: none */
	int lbr, input_forget;
	bool b, h0, c0, p;           /* which optional inputs are given */
	const int32_t *lens;         /* (B), NULL: none */
};

static int gates_of(const char *op)
{
	return strcmp(op, "RNN") == 0 ? 1 : strcmp(op, "GRU") == 0 ? 3 : 4;
}

/* The activation called name (any case) with its alpha and beta. */
static double ref_act(const char *name, double a, double b, double v)
{
	if (strcasecmp(name, "Relu") == 0)
		return v > 0 ? v : 0;
	if (strcasecmp(name, "Tanh") == 0)
		return tanh(v);
	if (strcasecmp(name, "Sigmoid") == 0)
		return 1 / (1 + exp(-v));
	if (strcasecmp(name, "Affine") == 0)
		return a * v + b;
	if (strcasecmp(name, "LeakyRelu") == 0)
		return v >= 0 ? v : a * v;
	if (strcasecmp(name, "ThresholdedRelu") == 0)
		return v > a ? v : 0;
	if (strcasecmp(name, "ScaledTanh") == 0)
		return a * tanh(b * v);
	if (strcasecmp(name, "HardSigmoid") == 0)
		return fmin(fmax(a * v + b, 0), 1);
	if (strcasecmp(name, "Elu") == 0)
		return v >= 0 ? v : a * (exp(v) - 1);
	if (strcasecmp(name, "Softsign") == 0)
		return v / (1 + fabs(v));
	cr_assert(strcasecmp(name, "Softplus") == 0, "%s", name);
	return log1p(exp(v));
}

/* The functions of direction d, k-th of the operator's, with their
 * constants: the list consumes alpha and beta in its order. */
struct ref_fn {
	const char *name;
	double alpha, beta;
};

static void ref_fns(const struct rcase *c, int dirs, struct ref_fn fn[2][3])
{
	static const char *const defaults[3][3] = { { "Tanh" }, { "Sigmoid", "Tanh" },
						    { "Sigmoid", "Tanh", "Tanh" } };
	int per = gates_of(c->op) == 1 ? 1 : gates_of(c->op) == 3 ? 2 : 3;
	struct ref_fn list[6];
	int na = 0, nb = 0, i, d, k;

	for (i = 0; i < c->n_acts; i++) {
		const char *n = c->acts[i];
		bool takes_a = !strcasecmp(n, "Affine") || !strcasecmp(n, "LeakyRelu") ||
			       !strcasecmp(n, "ThresholdedRelu") || !strcasecmp(n, "ScaledTanh") ||
			       !strcasecmp(n, "HardSigmoid") || !strcasecmp(n, "Elu");
		bool takes_b = !strcasecmp(n, "Affine") || !strcasecmp(n, "ScaledTanh") ||
			       !strcasecmp(n, "HardSigmoid");

		list[i].name = n;
		list[i].alpha = !strcasecmp(n, "LeakyRelu") ? 0.01 : !strcasecmp(n, "HardSigmoid") ? 0.2 : 1.0;
		list[i].beta = !strcasecmp(n, "HardSigmoid") ? 0.5 : !strcasecmp(n, "ScaledTanh") ? 1.0 : 0.0;
		if (takes_a && na < c->n_alpha)
			list[i].alpha = c->alpha[na++];
		if (takes_b && nb < c->n_beta)
			list[i].beta = c->beta[nb++];
	}
	for (d = 0; d < dirs; d++) {
		for (k = 0; k < per; k++) {
			if (c->n_acts == 0)
				fn[d][k] = (struct ref_fn){ defaults[per - 1][k], 0, 0 };
			else
				fn[d][k] = list[c->n_acts == per * dirs ? d * per + k : k];
		}
	}
}

/* f(clip(v)). */
static double ref_gate(const struct rcase *c, const struct ref_fn *f, double v)
{
	if (c->clip > 0)
		v = fmin(fmax(v, -c->clip), c->clip);
	return ref_act(f->name, f->alpha, f->beta, v);
}

/* The reference: the tensors in, outputs into y, yh, yc (doubles, the
 * tensors' layouts), every step written out from the equations. */
static void ref_run(const struct rcase *c, const struct op_tensor *in, double *y, double *yh,
		    double *yc)
{
	int D = c->dir && !strcmp(c->dir, "bidirectional") ? 2 : 1, G = gates_of(c->op);
	int S = c->S, B = c->B, I = c->I, H = c->H, d, b, s, j, k, g;
	struct ref_fn fn[2][3];
	double hs[64], cs[64], a[4][64], hn[64];

	cr_assert(H <= 64);
	ref_fns(c, D, fn);
#define XA(t, bb, i) (c->layout ? ((bb) * S + (t)) * I + (i) : ((t) * B + (bb)) * I + (i))
#define YA(t, dd, bb) (c->layout ? (((bb) * S + (t)) * D + (dd)) * H : (((t) * D + (dd)) * B + (bb)) * H)
#define HA(dd, bb) (c->layout ? ((bb) * D + (dd)) * H : ((dd) * B + (bb)) * H)
#define OPT(t, i) (op_tensor_present(&in[t]) ? f_at(&in[t], i) : 0.0)
	memset(y, 0, sizeof(double) * (size_t)(S * D * B * H));
	for (d = 0; d < D; d++) {
		for (b = 0; b < B; b++) {
			int len = c->lens ? c->lens[b] : S;

			for (j = 0; j < H; j++) {
				hs[j] = OPT(5, HA(d, b) + j);
				cs[j] = G == 4 ? OPT(6, HA(d, b) + j) : 0;
			}
			for (s = 0; s < len; s++) {
				bool back = (c->dir && !strcmp(c->dir, "reverse")) || d == 1;
				int t = back ? len - 1 - s : s;

				/* a[g] = X W_g^T + Wb_g, plus H R_g^T + Rb_g but for GRU's h. */
				for (g = 0; g < G; g++) {
					for (j = 0; j < H; j++) {
						int row = g * H + j;
						double v = OPT(3, d * 2 * G * H + row);

						for (k = 0; k < I; k++)
							v += f_at(&in[1], (d * G * H + row) * I + k) *
							     f_at(&in[0], XA(t, b, k));
						if (G != 3 || g < 2) {
							v += OPT(3, d * 2 * G * H + G * H + row);
							for (k = 0; k < H; k++)
								v += f_at(&in[2], (d * G * H + row) * H + k) * hs[k];
						}
						a[g][j] = v;
					}
				}
				for (j = 0; j < H; j++) {
					if (G == 1) {
						hn[j] = ref_gate(c, &fn[d][0], a[0][j]);
					} else if (G == 3) {
						double z = ref_gate(c, &fn[d][0], a[0][j]), rec, hh;
						double rbh = OPT(3, d * 6 * H + 3 * H + 2 * H + j);

						rec = rbh;
						for (k = 0; k < H; k++) {
							double rk = ref_gate(c, &fn[d][0], a[1][k]);
							double wr = f_at(&in[2], (d * 3 * H + 2 * H + j) * H + k);

							rec += wr * (c->lbr ? hs[k] : rk * hs[k]);
						}
						if (c->lbr)
							rec = (rec) * ref_gate(c, &fn[d][0], a[1][j]);
						hh = ref_gate(c, &fn[d][1], a[2][j] + rec);
						hn[j] = (1 - z) * hh + z * hs[j];
					} else {
						double pi = OPT(7, d * 3 * H + j), po = OPT(7, d * 3 * H + H + j);
						double pf = OPT(7, d * 3 * H + 2 * H + j);
						double i_ = ref_gate(c, &fn[d][0], a[0][j] + pi * cs[j]);
						double f_ = c->input_forget ? 1 - i_ :
							    ref_gate(c, &fn[d][0], a[2][j] + pf * cs[j]);
						double g_ = ref_gate(c, &fn[d][1], a[3][j]), o_;

						cs[j] = f_ * cs[j] + i_ * g_;
						o_ = ref_gate(c, &fn[d][0], a[1][j] + po * cs[j]);
						hn[j] = o_ * ref_act(fn[d][2].name, fn[d][2].alpha,
								     fn[d][2].beta, cs[j]);
					}
				}
				for (j = 0; j < H; j++) {
					hs[j] = hn[j];
					y[YA(t, d, b) + j] = hn[j];
				}
			}
			for (j = 0; j < H; j++) {
				yh[HA(d, b) + j] = len ? hs[j] : 0;
				yc[HA(d, b) + j] = len ? cs[j] : 0;
			}
		}
	}
#undef XA
#undef YA
#undef HA
#undef OPT
}

/* A tensor of dt and dims with values in [-scale, scale), rounded to dt. */
static struct op_tensor rnd_tensor(cep_dtype dt, int rank, const int64_t *dims, float scale,
				   unsigned *seed)
{
	struct op_tensor t = oh_tensor(dt, rank, dims, NULL);
	int64_t n = op_dims_product(&t, 0, rank), i;

	t.data = calloc(1, (size_t)n * cep_dtype_size(dt) + 1);
	for (i = 0; i < n; i++)
		cpu_store_f(t.data, dt, i, scale * oh_rand(seed));
	return t;
}

/* Runs case c and compares every output with the reference; returns the
 * worst absolute error. */
static double run_case(const struct rcase *c, unsigned *seed)
{
	int D = c->dir && !strcmp(c->dir, "bidirectional") ? 2 : 1, G = gates_of(c->op);
	int lstm = G == 4, n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2, na = 0, i;
	int64_t S = c->S, B = c->B, I = c->I, H = c->H;
	int64_t dx[3] = { c->layout ? B : S, c->layout ? S : B, I }, dw[3] = { D, G * H, I };
	int64_t dr[3] = { D, G * H, H }, db[2] = { D, 2 * G * H }, dl[1] = { B };
	int64_t dh[3] = { c->layout ? B : D, c->layout ? D : B, H }, dp[2] = { D, 3 * H };
	struct op_attr attrs[10];
	struct op_tensor in[8], out[3];
	double *ref[3], tol, worst = 0;
	int64_t n[3] = { S * D * B * H, D * B * H, D * B * H }, e;

	memset(in, 0, sizeof(in));
	attrs[na++] = oh_int("hidden_size", H);
	if (c->dir)
		attrs[na++] = oh_string("direction", c->dir);
	if (c->opset >= 14)
		attrs[na++] = oh_int("layout", c->layout);
	if (c->n_acts)
		attrs[na++] = a_strings("activations", c->n_acts, c->acts);
	if (c->n_alpha)
		attrs[na++] = a_floats("activation_alpha", c->n_alpha, c->alpha);
	if (c->n_beta)
		attrs[na++] = a_floats("activation_beta", c->n_beta, c->beta);
	if (c->clip > 0)
		attrs[na++] = oh_float("clip", c->clip);
	if (G == 3 && c->opset >= 3)
		attrs[na++] = oh_int("linear_before_reset", c->lbr);
	if (lstm && c->input_forget)
		attrs[na++] = oh_int("input_forget", 1);
	in[0] = rnd_tensor(c->dt, 3, dx, 2.0f, seed);
	in[1] = rnd_tensor(c->dt, 3, dw, 1.0f, seed);
	in[2] = rnd_tensor(c->dt, 3, dr, 1.0f, seed);
	if (c->b)
		in[3] = rnd_tensor(c->dt, 2, db, 0.5f, seed);
	if (c->lens)
		in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl, (void *)c->lens);
	if (c->h0)
		in[5] = rnd_tensor(c->dt, 3, dh, 1.0f, seed);
	if (lstm && c->c0)
		in[6] = rnd_tensor(c->dt, 3, dh, 1.0f, seed);
	if (lstm && c->p)
		in[7] = rnd_tensor(c->dt, 2, dp, 0.5f, seed);
	cr_assert_eq(oh_run(c->op, c->opset, attrs, na, in, n_in, out, n_out), 0, "%s/%d: %s",
		     c->op, c->opset, cep_last_error());
	for (i = 0; i < 3; i++)
		ref[i] = calloc((size_t)n[i] + 1, sizeof(double));
	ref_run(c, in, ref[0], ref[1], ref[2]);
	/* Within the rounding of the type: float32 sums differ from double
	 * ones in their last bits, and over a wide layer's steps (sums of
	 * I + H products, fed back S times) that reaches a few units of
	 * float32's last place: 2e-6 failed now and then at H 40 on fresh
	 * random data (2.09e-6 seen; up to 5.3e-6 over 300 seeds). A wrong
	 * equation is off by 1e-2 or more. */
	tol = c->dt == CEP_DTYPE_FLOAT32 ? 2e-5 : c->dt == CEP_DTYPE_FLOAT16 ? 1e-3 : 8e-3;
	for (i = 0; i < n_out; i++) {
		cr_assert_eq(out[i].dtype, c->dt);
		cr_assert_eq(op_dims_product(&out[i], 0, out[i].rank), n[i]);
		for (e = 0; e < n[i]; e++) {
			double d = fabs(f_at(&out[i], e) - ref[i][e]);

			cr_assert(d <= tol * (1 + fabs(ref[i][e])),
				  "%s/%d %s %s layout %d: output %d element %lld is %.9g, the equations give %.9g",
				  c->op, c->opset, cep_dtype_name(c->dt), c->dir ? c->dir : "forward",
				  c->layout, i, (long long)e, f_at(&out[i], e), ref[i][e]);
			worst = d > worst ? d : worst;
		}
	}
	free_outs(out, n_out);
	for (i = 0; i < 8; i++) {
		if (i != 4)
			free(in[i].data);
	}
	for (i = 0; i < 3; i++)
		free(ref[i]);
	return worst;
}

Test(ops_rnn, every_op_direction_layout_and_type)
{
	static const char *const ops[] = { "RNN", "GRU", "LSTM" };
	static const char *const dirs[] = { NULL, "forward", "reverse", "bidirectional" };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	static const int opsets[] = { 7, 14, 22 };
	unsigned seed = 7u ^ (unsigned)getpid();
	int o, d, t, v, cases = 0;

	for (o = 0; o < 3; o++) {
		for (d = 0; d < 4; d++) {
			for (t = 0; t < 3; t++) {
				for (v = 0; v < 3; v++) {
					struct rcase c = { .op = ops[o], .opset = opsets[v], .dir = dirs[d],
							   .S = 4, .B = 3, .I = 5, .H = 6, .dt = types[t] };

					if (types[t] == CEP_DTYPE_BFLOAT16 && opsets[v] < 22)
						continue;
					c.layout = opsets[v] >= 14 && (d + t) % 2;
					/* Each optional input given in some cases, absent in others. */
					c.b = (d + v) % 2 == 0;
					c.h0 = (d + t + v) % 2 == 0;
					c.c0 = t % 2 == 0;
					c.p = (d + v) % 3 != 0;
					c.lbr = (d + t) % 2;
					run_case(&c, &seed);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(cases, 3 * 4 * 7);
}

/* A 40-unit layer over 33 inputs: sums long enough to show their order. */
Test(ops_rnn, a_wider_layer)
{
	static const char *const ops[] = { "RNN", "GRU", "LSTM" };
	unsigned seed = 11u ^ (unsigned)getpid();
	int o;

	for (o = 0; o < 3; o++) {
		struct rcase c = { .op = ops[o], .opset = 22, .dir = "bidirectional", .S = 7, .B = 2,
				   .I = 33, .H = 40, .dt = CEP_DTYPE_FLOAT32, .b = true, .h0 = true,
				   .c0 = true, .p = true };

		printf("  %s: worst error %.3g\n", ops[o], run_case(&c, &seed));
	}
}

/* ------------------------------------------------------------ activations */

Test(ops_rnn, every_activation_with_its_alpha_and_beta)
{
	static const char *const fns[] = { "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
					   "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
					   "Softsign", "Softplus" };
	unsigned seed = 13u ^ (unsigned)getpid();
	size_t f;

	for (f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		/* Each alone, with the ONNX operator's defaults, then with an
		 * alpha and beta of its own. */
		struct rcase c = { .op = "RNN", .opset = 14, .S = 3, .B = 2, .I = 3, .H = 4,
				   .dt = CEP_DTYPE_FLOAT32, .n_acts = 1, .acts = { fns[f] }, .b = true };

		run_case(&c, &seed);
		c.n_alpha = 1;
		c.alpha[0] = 0.7f;
		c.n_beta = 1;
		c.beta[0] = 0.3f;
		run_case(&c, &seed);
	}
}

/* alpha and beta are consumed in the order of the functions, by those
 * that take them: [LeakyRelu, HardSigmoid] with alpha [0.2, 0.3] and beta
 * [0.4] is LeakyRelu(0.2) and HardSigmoid(0.3, 0.4); a list shorter than
 * its takers leaves the defaults; names in any case; one direction's list
 * for both. */
Test(ops_rnn, alpha_and_beta_are_consumed_in_order)
{
	unsigned seed = 17u ^ (unsigned)getpid();
	struct rcase c = { .op = "RNN", .opset = 22, .dir = "bidirectional", .S = 3, .B = 2,
			   .I = 3, .H = 3, .dt = CEP_DTYPE_FLOAT32, .n_acts = 2,
			   .acts = { "LeakyRelu", "HardSigmoid" }, .n_alpha = 2, .alpha = { 0.2f, 0.3f },
			   .n_beta = 1, .beta = { 0.4f }, .b = true, .h0 = true };
	struct rcase g = { .op = "GRU", .opset = 22, .dir = "bidirectional", .S = 3, .B = 2,
			   .I = 3, .H = 3, .dt = CEP_DTYPE_FLOAT32, .n_acts = 4,
			   .acts = { "hardsigmoid", "TANH", "Sigmoid", "ScaledTanh" }, .n_alpha = 2,
			   .alpha = { 0.25f, 0.8f }, .n_beta = 1, .beta = { 0.45f }, .b = true };
	struct rcase l = { .op = "LSTM", .opset = 22, .dir = "bidirectional", .S = 3, .B = 2,
			   .I = 3, .H = 3, .dt = CEP_DTYPE_FLOAT32, .n_acts = 3,
			   .acts = { "HardSigmoid", "Softsign", "Elu" }, .n_alpha = 1,
			   .alpha = { 0.3f }, .b = true };
	struct ref_fn fn[2][3];

	ref_fns(&c, 2, fn);
	cr_assert_eq(fn[0][0].alpha, (double)0.2f);
	cr_assert_eq(fn[1][0].alpha, (double)0.3f);
	cr_assert_eq(fn[1][0].beta, (double)0.4f);
	run_case(&c, &seed);
	run_case(&g, &seed);
	/* Elu past the alphas keeps its default 1. */
	run_case(&l, &seed);
	/* RNN's default [Tanh, Tanh] shape for one direction: the first. */
	c.dir = "reverse";
	c.acts[0] = "Relu";
	run_case(&c, &seed);
}

Test(ops_rnn, clip_bounds_the_gate_inputs)
{
	static const char *const ops[] = { "RNN", "GRU", "LSTM" };
	unsigned seed = 19u ^ (unsigned)getpid();
	float x[4] = { 3, -3, 3, -3 }, w[1] = { 2 }, r[1] = { 0 };
	int64_t dx[3] = { 4, 1, 1 }, dw[3] = { 1, 1, 1 };
	struct op_attr attrs[3] = { oh_int("hidden_size", 1), oh_float("clip", 0.5f),
				    a_strings("activations", 1, (const char *const[]){ "Affine" }) };
	struct op_tensor in[3] = { f32(3, dx, x), f32(3, dw, w), f32(3, dw, r) }, out[2];
	int o, i;

	/* Affine (x) of the clipped 2 x: +-0.5. */
	cr_assert_eq(oh_run("RNN", 7, attrs, 3, in, 3, out, 2), 0, "%s", cep_last_error());
	for (i = 0; i < 4; i++)
		cr_assert_eq(f_at(&out[0], i), i % 2 ? -0.5f : 0.5f);
	free_outs(out, 2);
	for (o = 0; o < 3; o++) {
		struct rcase c = { .op = ops[o], .opset = 14, .dir = "bidirectional", .S = 5, .B = 2,
				   .I = 4, .H = 3, .dt = CEP_DTYPE_FLOAT32, .clip = 0.4f, .b = true,
				   .h0 = true, .c0 = true, .p = true };

		run_case(&c, &seed);
	}
}

/* --------------------------------------------------------- sequence_lens */

Test(ops_rnn, sequence_lens_shorter_and_zero)
{
	static const char *const ops[] = { "RNN", "GRU", "LSTM" };
	static const char *const dirs[] = { "forward", "reverse", "bidirectional" };
	static const int32_t lens[4] = { 5, 2, 0, 3 };
	unsigned seed = 23u ^ (unsigned)getpid();
	int o, d, layout;

	for (o = 0; o < 3; o++) {
		for (d = 0; d < 3; d++) {
			for (layout = 0; layout < 2; layout++) {
				struct rcase c = { .op = ops[o], .opset = 22, .dir = dirs[d],
						   .layout = layout, .S = 5, .B = 4, .I = 3, .H = 4,
						   .dt = CEP_DTYPE_FLOAT32, .b = true, .h0 = true,
						   .c0 = true, .lens = lens };

				run_case(&c, &seed);
				c.dt = CEP_DTYPE_FLOAT16;
				run_case(&c, &seed);
			}
		}
	}
}

/* What run_case() checks by comparison, checked directly: past an entry's
 * end Y is 0; Y_h is Y at its last step (t = len - 1 forward, t = 0
 * reversed); an entry of length 0 has Y_h and Y_c of 0, whatever
 * initial_h and initial_c are. */
Test(ops_rnn, past_the_end_and_the_last_state)
{
	enum { S = 4, B = 3, I = 2, H = 2, D = 2 };
	int32_t lens[B] = { 4, 1, 0 };
	int64_t dx[3] = { S, B, I }, dw[3] = { D, 4 * H, I }, dr[3] = { D, 4 * H, H };
	int64_t dl[1] = { B }, dh[3] = { D, B, H };
	struct op_attr attrs[2] = { oh_int("hidden_size", H), oh_string("direction", "bidirectional") };
	unsigned seed = 29u ^ (unsigned)getpid();
	struct op_tensor in[8] = { { 0 } }, out[3];
	int t, d, b, j, i;

	in[0] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dx, 1, &seed);
	in[1] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dw, 1, &seed);
	in[2] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dr, 1, &seed);
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl, lens);
	in[5] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dh, 1, &seed);
	in[6] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dh, 1, &seed);
	cr_assert_eq(oh_run("LSTM", 22, attrs, 2, in, 7, out, 3), 0, "%s", cep_last_error());
	for (d = 0; d < D; d++) {
		for (b = 0; b < B; b++) {
			int last = d == 0 ? lens[b] - 1 : 0;

			for (j = 0; j < H; j++) {
				float yh = f_at(&out[1], (d * B + b) * H + j);

				for (t = lens[b]; t < S; t++)
					cr_assert_eq(f_at(&out[0], ((t * D + d) * B + b) * H + j), 0.0f);
				if (lens[b] == 0) {
					cr_assert_eq(yh, 0.0f);
					cr_assert_eq(f_at(&out[2], (d * B + b) * H + j), 0.0f);
				} else {
					cr_assert_eq(yh, f_at(&out[0], ((last * D + d) * B + b) * H + j));
				}
			}
		}
	}
	free_outs(out, 3);
	for (i = 0; i < 8; i++) {
		if (i != 4)
			free(in[i].data);
	}
}

/* ------------------------------------------------------ optional outputs */

/* Each output alone (the others unnamed or omitted) is what the full run
 * made. */
Test(ops_rnn, every_optional_output_alone)
{
	static const char *const ops[] = { "RNN", "GRU", "LSTM" };
	unsigned seed = 31u ^ (unsigned)getpid();
	int64_t dx[3] = { 3, 2, 3 };
	struct op_attr attrs[2] = { oh_int("hidden_size", 4), oh_string("direction", "reverse") };
	struct op_tensor in[8], full[3], part[3];
	int o, k, i;

	for (o = 0; o < 3; o++) {
		int G = gates_of(ops[o]), n_out = G == 4 ? 3 : 2;
		int64_t dw[3] = { 1, G * 4, 3 }, dr[3] = { 1, G * 4, 4 }, db[2] = { 1, 2 * G * 4 };

		memset(in, 0, sizeof(in));
		in[0] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dx, 1, &seed);
		in[1] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dw, 1, &seed);
		in[2] = rnd_tensor(CEP_DTYPE_FLOAT32, 3, dr, 1, &seed);
		in[3] = rnd_tensor(CEP_DTYPE_FLOAT32, 2, db, 1, &seed);
		cr_assert_eq(oh_run(ops[o], 22, attrs, 2, in, 4, full, n_out), 0, "%s",
			     cep_last_error());
		for (k = 0; k < n_out; k++) {
			unsigned absent = ((1u << n_out) - 1) & ~(1u << k);
			size_t bytes = op_tensor_bytes(&full[k]);

			cr_assert_eq(run_absent(ops[o], 22, attrs, 2, in, 4, part, n_out, absent), 0,
				     "%s", cep_last_error());
			cr_assert_eq(memcmp(part[k].data, full[k].data, bytes), 0, "%s output %d alone",
				     ops[o], k);
			free_outs(part, n_out);
		}
		/* Only Y, the rest omitted. */
		cr_assert_eq(oh_run(ops[o], 22, attrs, 2, in, 4, part, 1), 0, "%s", cep_last_error());
		cr_assert_eq(memcmp(part[0].data, full[0].data, op_tensor_bytes(&full[0])), 0);
		free_outs(part, 1);
		free_outs(full, n_out);
		for (i = 0; i < 4; i++)
			free(in[i].data);
	}
}

/* -------------------------------------------------- GRU and LSTM options */

Test(ops_rnn, gru_linear_before_reset_at_every_opset)
{
	static const int opsets[] = { 1, 3, 7, 14, 22 };
	unsigned seed = 37u ^ (unsigned)getpid();
	size_t v;
	int lbr;

	for (v = 0; v < sizeof(opsets) / sizeof(opsets[0]); v++) {
		for (lbr = 0; lbr < (opsets[v] >= 3 ? 2 : 1); lbr++) {
			struct rcase c = { .op = "GRU", .opset = opsets[v], .dir = "bidirectional",
					   .S = 4, .B = 2, .I = 3, .H = 5, .dt = CEP_DTYPE_FLOAT32,
					   .lbr = lbr, .b = true, .h0 = true };

			run_case(&c, &seed);
		}
	}
}

Test(ops_rnn, lstm_peepholes_and_input_forget)
{
	unsigned seed = 41u ^ (unsigned)getpid();
	int p, f, v;

	for (v = 0; v < 2; v++) {
		for (p = 0; p < 2; p++) {
			for (f = 0; f < 2; f++) {
				struct rcase c = { .op = "LSTM", .opset = v ? 22 : 1, .dir = "bidirectional",
						   .S = 4, .B = 2, .I = 3, .H = 5,
						   .dt = v ? CEP_DTYPE_BFLOAT16 : CEP_DTYPE_FLOAT32,
						   .input_forget = f, .b = true, .h0 = true, .c0 = true,
						   .p = p };

				run_case(&c, &seed);
			}
		}
	}
}

/* -------------------------------------------------------------- refusals */

/* Runs RNN-family op over in with attrs and asserts code and a message
 * containing want. */
static void refused(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
		    const struct op_tensor *in, int n_in, int code, const char *want)
{
	struct op_tensor out[3];

	cr_assert_eq(oh_run(op, opset, attrs, n_attrs, in, n_in, out, 2), code, "%s: %s", want,
		     cep_last_error());
	cr_assert(strstr(cep_last_error(), want) != NULL, "'%s' does not say '%s'",
		  cep_last_error(), want);
}

Test(ops_rnn, refusals_name_what_is_wrong)
{
	float v[64] = { 0 };
	int32_t lens[2] = { 5, 1 }, neg[2] = { -1, 1 };
	int64_t lens64[2] = { 1, 1 };
	int64_t dx[3] = { 3, 2, 2 }, dw[3] = { 1, 12, 2 }, dr[3] = { 1, 12, 4 }, dl[1] = { 2 };
	int64_t dw15[3] = { 1, 15, 2 }, db[2] = { 1, 20 }, dh[3] = { 2, 1, 4 }, dl3[1] = { 3 };
	struct op_attr a[3] = { oh_int("hidden_size", 4) };
	struct op_tensor gru[6] = { f32(3, dx, v), f32(3, dw, v), f32(3, dr, v) };
	struct op_tensor in[6];
	static const char *const swish[2] = { "Sigmoid", "Swish" };
	static const char *const three[3] = { "Sigmoid", "Tanh", "Tanh" };

	a[1] = oh_string("direction", "sideways");
	refused("GRU", 7, a, 2, gru, 3, CEP_EMODEL,
		"GRU: direction is 'sideways'; it must be forward, reverse or bidirectional");
	a[1] = a_strings("activations", 2, swish);
	refused("GRU", 7, a, 2, gru, 3, CEP_EMODEL, "GRU: activation 1 is 'Swish', not one of");
	a[1] = a_strings("activations", 3, three);
	refused("GRU", 7, a, 2, gru, 3, CEP_EMODEL,
		"GRU: activations lists 3 functions; it takes 2 per direction (2 for 1 direction)");
	a[1] = oh_float("clip", 0.0f);
	refused("GRU", 7, a, 2, gru, 3, CEP_EMODEL, "GRU: clip is 0; it must be above 0");
	a[1] = oh_int("layout", 1);
	refused("GRU", 13, a, 2, gru, 3, CEP_EMODEL,
		"GRU: layout is 1, but the attribute came at opset 14 (the model's is 13)");
	a[1] = oh_int("layout", 2);
	refused("GRU", 14, a, 2, gru, 3, CEP_EMODEL, "GRU: layout is 2; it must be 0 or 1");
	a[1] = oh_int("linear_before_reset", 1);
	refused("GRU", 2, a, 2, gru, 3, CEP_EMODEL,
		"GRU: linear_before_reset is 1, but the attribute came at opset 3");
	a[1] = oh_int("direction", 1);
	refused("GRU", 7, a, 2, gru, 3, CEP_EMODEL, "direction");
	a[0].i = 0;
	refused("GRU", 7, a, 1, gru, 3, CEP_EMODEL, "GRU: hidden_size is 0; it must be at least 1");
	a[0].i = 4;

	/* Shapes. */
	memcpy(in, gru, sizeof(in));
	in[1] = f32(3, dw15, v);
	refused("GRU", 7, a, 1, in, 3, CEP_ESHAPE,
		"GRU: W has shape [1,15,2]; it must be [num_directions, 3*hidden_size, input_size] = [1,12,2]");
	in[1] = gru[1];
	in[3] = f32(2, db, v);
	refused("GRU", 7, a, 1, in, 4, CEP_ESHAPE,
		"GRU: B has shape [1,20]; it must be [num_directions, 6*hidden_size] = [1,24]");
	in[3] = (struct op_tensor){ 0 };
	in[5] = f32(3, dh, v);
	refused("GRU", 7, a, 1, in, 6, CEP_ESHAPE,
		"GRU: initial_h has shape [2,1,4]; it must be [num_directions, batch_size, hidden_size] = [1,2,4]");
	in[5] = (struct op_tensor){ 0 };
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl3, lens);
	refused("GRU", 7, a, 1, in, 5, CEP_ESHAPE,
		"GRU: sequence_lens has shape [3]; it must be [batch_size] = [2]");
	in[0].rank = 2;
	refused("GRU", 7, a, 1, in, 3, CEP_ESHAPE, "GRU: X has shape [3,2]; it must be");
	in[0].rank = 3;

	/* Types. */
	in[4] = oh_tensor(CEP_DTYPE_INT64, 1, dl, lens64);
	refused("GRU", 7, a, 1, in, 5, CEP_EDTYPE, "GRU: sequence_lens is int64; it must be int32");
	in[4] = (struct op_tensor){ 0 };
	in[1].dtype = CEP_DTYPE_FLOAT16;
	refused("GRU", 7, a, 1, in, 3, CEP_EDTYPE,
		"GRU: W is float16 and X float32; they must share one type");
	in[1].dtype = CEP_DTYPE_FLOAT32;
	in[0].dtype = in[1].dtype = in[2].dtype = CEP_DTYPE_INT32;
	refused("GRU", 7, a, 1, in, 3, CEP_EDTYPE, "GRU: X is int32; it must be a float type");
	in[0].dtype = in[1].dtype = in[2].dtype = CEP_DTYPE_BFLOAT16;
	refused("GRU", 21, a, 1, in, 3, CEP_EUNSUPPORTED, "bfloat16");
	in[0].dtype = in[1].dtype = in[2].dtype = CEP_DTYPE_FLOAT32;

	/* At run time: a length past seq_length, or below 0. */
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl, lens);
	refused("GRU", 7, a, 1, in, 5, CEP_EINVAL,
		"GRU: sequence_lens[0] is 5; it must be in [0, 3], the seq_length");
	in[4].data = neg;
	refused("GRU", 7, a, 1, in, 5, CEP_EINVAL, "GRU: sequence_lens[0] is -1");
}

/* ------------------------------------------------------------- inference */

Test(ops_rnn, inference_over_symbols)
{
	int64_t dx[3] = { OP_DIM_SYM(0), OP_DIM_SYM(1), 4 }, dx1[3] = { OP_DIM_SYM(1), OP_DIM_SYM(0), 4 };
	int64_t dw[3] = { 2, 12, 4 }, dr[3] = { 2, 12, 3 }, dl[1] = { OP_DIM_SYM(1) };
	int64_t dws[3] = { 1, OP_DIM_SYM(2), 4 }, drs[3] = { 1, OP_DIM_SYM(2), OP_DIM_SYM(3) };
	int64_t dl7[1] = { 7 }, dx2[3] = { OP_DIM_SYM(0), 2, 4 };
	struct op_attr a[3] = { oh_int("hidden_size", 3), oh_string("direction", "bidirectional"),
				oh_int("layout", 1) };
	struct op_tensor in[8] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 3, dw, NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 3, dr, NULL), { 0 },
				   oh_tensor(CEP_DTYPE_INT32, 1, dl, NULL) };
	struct op_tensor out[3];

	cr_assert_eq(oh_infer("LSTM", 22, a, 2, in, 5, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 4);
	cr_assert_eq(out[0].dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out[0].dims[1], 2);
	cr_assert_eq(out[0].dims[2], OP_DIM_SYM(1));
	cr_assert_eq(out[0].dims[3], 3);
	cr_assert_eq(out[1].rank, 3);
	cr_assert_eq(out[1].dims[0], 2);
	cr_assert_eq(out[1].dims[1], OP_DIM_SYM(1));
	cr_assert_eq(out[2].dims[2], 3);
	cr_assert_eq(out[2].dtype, CEP_DTYPE_FLOAT32);
	/* layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden],
	 * Y_h [batch, dirs, hidden]. */
	in[0].dims[0] = dx1[0];
	in[0].dims[1] = dx1[1];
	cr_assert_eq(oh_infer("LSTM", 14, a, 3, in, 5, out, 3), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[0], OP_DIM_SYM(1));
	cr_assert_eq(out[0].dims[1], OP_DIM_SYM(0));
	cr_assert_eq(out[0].dims[2], 2);
	cr_assert_eq(out[1].dims[0], OP_DIM_SYM(1));
	cr_assert_eq(out[1].dims[1], 2);
	/* Without hidden_size: R's last dim, a symbol here. */
	in[0].dims[0] = dx[0];
	in[0].dims[1] = dx[1];
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dws, NULL);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, drs, NULL);
	cr_assert_eq(oh_infer("RNN", 7, NULL, 0, in, 3, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].dims[3], OP_DIM_SYM(3));
	cr_assert_eq(out[1].dims[2], OP_DIM_SYM(3));
	cr_assert_eq(out[0].dims[1], 1);
	/* X of unknown rank: the outputs' ranks are still known. */
	in[0].rank = -1;
	cr_assert_eq(oh_infer("GRU", 7, NULL, 0, in, 3, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(out[0].rank, 4);
	cr_assert_eq(out[0].dims[0], OP_DIM_UNKNOWN);
	/* A symbolic batch says nothing of sequence_lens' size; a fixed one does. */
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, NULL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dw, NULL);
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dr, NULL);
	in[4] = oh_tensor(CEP_DTYPE_INT32, 1, dl7, NULL);
	cr_assert_eq(oh_infer("LSTM", 22, a, 2, in, 5, out, 3), 0, "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, dx2, NULL);
	cr_assert_eq(oh_infer("LSTM", 22, a, 2, in, 5, out, 3), CEP_ESHAPE);
}

/* ------------------------------------------------------------ half sessions */

/* The model of rnn_model.h in fp16 and bf16 sessions: each node computes
 * in half (its recurrence in float32), sequence_lens stays int32. */
Test(ops_rnn, a_half_session_computes_them_in_half)
{
	unsigned seed = 43u ^ (unsigned)getpid();
	struct pm_model pm = rnn_model(&seed);
	struct backend *be;
	cep_precision p;

	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		rnn_model_all_half(&pm, p, BACKEND_HOST);
		pm_compare(&pm, be, p, be, &seed, 2, p == CEP_PRECISION_FP16 ? 5e-3 : 3e-2);
	}
	backend_free(be);
	pm_model_free(&pm);
}
