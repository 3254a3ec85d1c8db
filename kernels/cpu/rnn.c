/*
 * rnn.c — the recurrent layers: RNN, GRU and LSTM, every opset from their
 * first (1; GRU's linear_before_reset from 3; output_sequence, which
 * opset 7 dropped, accepted and ignored before it: an output is made when
 * the node names it; layout from 14; bfloat16 from 22).
 *
 * Each direction of each batch entry runs its sequence alone: forward
 * from t = 0, or, reversed, from its last valid step sequence_lens[b] - 1
 * down to 0. Steps past an entry's length leave zeros in Y; Y_h and Y_c
 * are the state after its last step, zeros for a length of 0 (as
 * onnxruntime has them). The gates' inputs are clipped to [-clip, clip]
 * when clip is set; LSTM's cell state is not (h(C) reads it unclipped,
 * as onnxruntime does).
 *
 * Activations are named as the specification does (in any case); each one
 * that takes an alpha (or a beta) consumes the next of activation_alpha
 * (activation_beta) in the order the functions are listed, and one the
 * list runs out for takes the default of the ONNX operator of its name
 * (LeakyRelu 0.01, ThresholdedRelu 1, Elu 1, HardSigmoid 0.2 and 0.5;
 * Affine 1 and 0, ScaledTanh 1 and 1). ThresholdedRelu keeps x above
 * alpha, as the operator ThresholdedRelu does. A bidirectional node may
 * list one direction's functions for both.
 *
 * The reference computes every type in float32: each gate's dot products
 * are summed in double and rounded once, the states H and C are kept in
 * float32 between steps, and only Y, Y_h and Y_c are rounded to the
 * tensors' type. The device kernels (kernels/cuda/rnn.c) read their
 * parameters through rnn.h.
 */
#include "kernels/cpu/rnn.h"

#include <inttypes.h>
#include <stdio.h>

/* ------------------------------------------------------------- attributes */

/* The activations of the specification, with the defaults of the ONNX
 * operators of their names; params: 1 takes alpha, 2 alpha and beta. */
static const struct {
	const char *name;
	int32_t fn;
	int params;
	float alpha, beta;
} rnn_fns[] = {
	{ "Relu", CPU_RNN_RELU, 0, 0.0f, 0.0f },
	{ "Tanh", CPU_RNN_TANH, 0, 0.0f, 0.0f },
	{ "Sigmoid", CPU_RNN_SIGMOID, 0, 0.0f, 0.0f },
	{ "Affine", CPU_RNN_AFFINE, 2, 1.0f, 0.0f },
	{ "LeakyRelu", CPU_RNN_LEAKY_RELU, 1, 0.01f, 0.0f },
	{ "ThresholdedRelu", CPU_RNN_THRESHOLDED_RELU, 1, 1.0f, 0.0f },
	{ "ScaledTanh", CPU_RNN_SCALED_TANH, 2, 1.0f, 1.0f },
	{ "HardSigmoid", CPU_RNN_HARD_SIGMOID, 2, 0.2f, 0.5f },
	{ "Elu", CPU_RNN_ELU, 1, 1.0f, 0.0f },
	{ "Softsign", CPU_RNN_SOFTSIGN, 0, 0.0f, 0.0f },
	{ "Softplus", CPU_RNN_SOFTPLUS, 0, 0.0f, 0.0f },
};

#define RNN_N_FNS (int)(sizeof(rnn_fns) / sizeof(rnn_fns[0]))

/* The operator's defaults, per direction. */
static const int32_t rnn_default_acts[3][CPU_RNN_MAX_ACT] = {
	[CPU_RNN_SIMPLE] = { CPU_RNN_TANH },
	[CPU_RNN_GRU] = { CPU_RNN_SIGMOID, CPU_RNN_TANH },
	[CPU_RNN_LSTM] = { CPU_RNN_SIGMOID, CPU_RNN_TANH, CPU_RNN_TANH },
};

static bool name_is(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;

		if (x != y)
			return false;
	}
	return *a == *b;
}

/* Checks that every attribute the node has is of its type. */
static int rnn_attr_types(const struct op_node *node)
{
	static const struct {
		const char *name;
		enum op_attr_type type;
	} types[] = {
		{ "direction", OP_ATTR_STRING }, { "hidden_size", OP_ATTR_INT },
		{ "layout", OP_ATTR_INT }, { "clip", OP_ATTR_FLOAT },
		{ "activations", OP_ATTR_STRINGS }, { "activation_alpha", OP_ATTR_FLOATS },
		{ "activation_beta", OP_ATTR_FLOATS }, { "linear_before_reset", OP_ATTR_INT },
		{ "input_forget", OP_ATTR_INT }, { "output_sequence", OP_ATTR_INT },
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		ret = op_attr_check(node, types[i].name, types[i].type);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Refuses attribute name, set to a value other than 0, at an opset before
 * since, the first that defines it. */
static int rnn_attr_since(const struct op_node *node, const char *name, int since)
{
	int64_t v = op_attr_int(node, name, 0);

	if (node->opset < since && v != 0)
		return cep__set_error(CEP_EMODEL, "%s: %s is %" PRId64 ", but the attribute came at opset %d (the model's is %d)",
				      node->op_type, name, v, since, node->opset);
	return 0;
}

/* Reads the activations and their constants into p->act. */
static int rnn_acts(const struct op_node *node, struct cpu_rnn *p)
{
	const struct op_attr *names = op_attr_find(node, "activations");
	const struct op_attr *al = op_attr_find(node, "activation_alpha");
	const struct op_attr *be = op_attr_find(node, "activation_beta");
	struct cpu_rnn_act list[2 * CPU_RNN_MAX_ACT];
	int n = names ? names->n : 0, na = 0, nb = 0, i, k, d;
	bool ok;

	if (n == 0) {
		for (d = 0; d < 2; d++) {
			for (k = 0; k < p->n_act; k++)
				p->act[d][k] = (struct cpu_rnn_act){ rnn_default_acts[p->op][k], 0.0f, 0.0f };
		}
		return 0;
	}
	/* One direction's list or every direction's; RNN's default, [Tanh,
	 * Tanh], has two whatever the direction, its forward one first. */
	ok = n == p->n_act || n == p->n_act * p->dirs || (p->op == CPU_RNN_SIMPLE && n == 2);
	if (!ok)
		return cep__set_error(CEP_EMODEL, "%s: activations lists %d functions; it takes %d per direction (%d for %d direction%s)",
				      node->op_type, n, p->n_act, p->n_act * p->dirs, p->dirs,
				      p->dirs > 1 ? "s" : "");
	for (i = 0; i < n; i++) {
		for (k = 0; k < RNN_N_FNS && !name_is(names->strings[i], rnn_fns[k].name); k++)
			;
		if (k == RNN_N_FNS)
			return cep__set_error(CEP_EMODEL, "%s: activation %d is '%s', not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
					      node->op_type, i, names->strings[i]);
		list[i] = (struct cpu_rnn_act){ rnn_fns[k].fn, rnn_fns[k].alpha, rnn_fns[k].beta };
		if (rnn_fns[k].params >= 1 && al != NULL && na < al->n)
			list[i].alpha = al->floats[na++];
		if (rnn_fns[k].params >= 2 && be != NULL && nb < be->n)
			list[i].beta = be->floats[nb++];
	}
	for (d = 0; d < 2; d++) {
		for (k = 0; k < p->n_act; k++)
			p->act[d][k] = list[n == p->n_act * p->dirs && d < p->dirs ? d * p->n_act + k : k];
	}
	return 0;
}

int cpu_rnn_attrs(const struct op_node *node, struct cpu_rnn *p)
{
	const char *dir = op_attr_string(node, "direction", "forward");
	const struct op_attr *clip = op_attr_find(node, "clip");
	const struct op_attr *hs = op_attr_find(node, "hidden_size");
	int ret;

	memset(p, 0, sizeof(*p));
	if ((ret = rnn_attr_types(node)) < 0)
		return ret;
	if (strcmp(node->op_type, "GRU") == 0) {
		p->op = CPU_RNN_GRU;
		p->gates = 3;
		p->n_act = 2;
	} else if (strcmp(node->op_type, "LSTM") == 0) {
		p->op = CPU_RNN_LSTM;
		p->gates = 4;
		p->n_act = 3;
	} else {
		p->op = CPU_RNN_SIMPLE;
		p->gates = 1;
		p->n_act = 1;
	}
	if (strcmp(dir, "forward") == 0) {
		p->dirs = 1;
	} else if (strcmp(dir, "reverse") == 0) {
		p->dirs = 1;
		p->reverse = 1;
	} else if (strcmp(dir, "bidirectional") == 0) {
		p->dirs = 2;
	} else {
		return cep__set_error(CEP_EMODEL, "%s: direction is '%s'; it must be forward, reverse or bidirectional",
				      node->op_type, dir);
	}
	p->hidden = -1;
	if (hs != NULL) {
		if (hs->i < 1)
			return cep__set_error(CEP_EMODEL, "%s: hidden_size is %" PRId64 "; it must be at least 1",
					      node->op_type, hs->i);
		p->hidden = hs->i;
	}
	if ((ret = rnn_attr_since(node, "layout", 14)) < 0 ||
	    (p->op == CPU_RNN_GRU && (ret = rnn_attr_since(node, "linear_before_reset", 3)) < 0))
		return ret;
	p->layout = (int32_t)op_attr_int(node, "layout", 0);
	if (p->layout != 0 && p->layout != 1)
		return cep__set_error(CEP_EMODEL, "%s: layout is %d; it must be 0 or 1", node->op_type,
				      p->layout);
	p->linear_before_reset = p->op == CPU_RNN_GRU && op_attr_int(node, "linear_before_reset", 0) != 0;
	p->input_forget = p->op == CPU_RNN_LSTM && op_attr_int(node, "input_forget", 0) != 0;
	if (clip != NULL) {
		if (!(clip->f > 0.0f))
			return cep__set_error(CEP_EMODEL, "%s: clip is %g; it must be above 0",
					      node->op_type, (double)clip->f);
		p->has_clip = 1;
		p->clip = clip->f;
	}
	return rnn_acts(node, p);
}

int cpu_rnn_read(const struct op_node *node, const struct op_tensor *in, struct cpu_rnn *p)
{
	int ret = cpu_rnn_attrs(node, p);

	if (ret < 0)
		return ret;
	p->seq = in[CPU_RNN_X].dims[p->layout ? 1 : 0];
	p->batch = in[CPU_RNN_X].dims[p->layout ? 0 : 1];
	p->input = in[CPU_RNN_X].dims[2];
	p->hidden = in[CPU_RNN_R].dims[2];
	return 0;
}

/* -------------------------------------------------------------- inference */

/* gates * dim, or unknown when dim is not fixed. */
static int64_t rnn_times(int64_t gates, int64_t dim)
{
	return op_dim_fixed(dim) ? gates * dim : OP_DIM_UNKNOWN;
}

/* Checks that input i, called name, present and of known rank, has rank
 * `rank` and the fixed dims of want where its own are fixed; what spells
 * the shape it must have. */
static int rnn_check(const struct op_infer *x, int i, const char *name, int rank,
		     const int64_t *want, const char *what)
{
	const struct op_tensor *t = &x->in[i];
	struct op_tensor w = { .rank = rank };
	char have[160], need[160];
	bool bad;
	int d;

	if (i >= x->n_in || !op_tensor_present(t) || t->rank < 0)
		return 0;
	bad = t->rank != rank;
	for (d = 0; d < rank && !bad; d++)
		bad = op_dim_fixed(want[d]) && op_dim_fixed(t->dims[d]) && t->dims[d] != want[d];
	if (!bad)
		return 0;
	memcpy(w.dims, want, sizeof(int64_t) * (size_t)rank);
	op_dims_format(t, NULL, 0, have, sizeof(have));
	op_dims_format(&w, NULL, 0, need, sizeof(need));
	return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be %s = %s",
			      x->node->op_type, name, have, what, need);
}

/* Checks the inputs' types: one float type for all but sequence_lens,
 * which is int32. */
static int rnn_types(const struct op_infer *x)
{
	static const char *const names[] = { "X", "W", "R", "B", "sequence_lens", "initial_h",
					     "initial_c", "P" };
	cep_dtype t = x->in[CPU_RNN_X].dtype;
	int i;

	if (!cpu_is_float(t))
		return cep__set_error(CEP_EDTYPE, "%s: X is %s; it must be a float type",
				      x->node->op_type, cep_dtype_name(t));
	for (i = 1; i < x->n_in && i < 8; i++) {
		const struct op_tensor *in = &x->in[i];

		if (!op_tensor_present(in))
			continue;
		if (i == CPU_RNN_LENS && in->dtype != CEP_DTYPE_INT32)
			return cep__set_error(CEP_EDTYPE, "%s: sequence_lens is %s; it must be int32",
					      x->node->op_type, cep_dtype_name(in->dtype));
		if (i != CPU_RNN_LENS && in->dtype != t)
			return cep__set_error(CEP_EDTYPE, "%s: %s is %s and X %s; they must share one type",
					      x->node->op_type, names[i], cep_dtype_name(in->dtype),
					      cep_dtype_name(t));
	}
	return 0;
}

static int rnn_infer(struct op_infer *x)
{
	const struct op_tensor *X = &x->in[CPU_RNN_X], *R = &x->in[CPU_RNN_R];
	int64_t seq = OP_DIM_UNKNOWN, batch = OP_DIM_UNKNOWN, input = OP_DIM_UNKNOWN, hid, g;
	int64_t w[4];
	const char *lay;
	struct cpu_rnn p;
	char what[96];
	int ret, i;

	if ((ret = cpu_rnn_attrs(x->node, &p)) < 0 || (ret = rnn_types(x)) < 0)
		return ret;
	g = p.gates;
	w[0] = w[1] = w[2] = OP_DIM_UNKNOWN;
	lay = p.layout ? "[batch_size, seq_length, input_size]" : "[seq_length, batch_size, input_size]";
	if ((ret = rnn_check(x, CPU_RNN_X, "X", 3, w, lay)) < 0)
		return ret;
	if (X->rank == 3) {
		seq = X->dims[p.layout ? 1 : 0];
		batch = X->dims[p.layout ? 0 : 1];
		input = X->dims[2];
	}
	hid = p.hidden >= 0 ? p.hidden : R->rank == 3 ? R->dims[2] : OP_DIM_UNKNOWN;
	w[0] = p.dirs;
	w[1] = rnn_times(g, hid);
	w[2] = input;
	snprintf(what, sizeof(what), "[num_directions, %d*hidden_size, input_size]", (int)g);
	if ((ret = rnn_check(x, CPU_RNN_W, "W", 3, w, what)) < 0)
		return ret;
	w[2] = hid;
	snprintf(what, sizeof(what), "[num_directions, %d*hidden_size, hidden_size]", (int)g);
	if ((ret = rnn_check(x, CPU_RNN_R, "R", 3, w, what)) < 0)
		return ret;
	w[1] = rnn_times(2 * g, hid);
	snprintf(what, sizeof(what), "[num_directions, %d*hidden_size]", (int)(2 * g));
	if ((ret = rnn_check(x, CPU_RNN_B, "B", 2, w, what)) < 0)
		return ret;
	if ((ret = rnn_check(x, CPU_RNN_LENS, "sequence_lens", 1, &batch, "[batch_size]")) < 0)
		return ret;
	w[p.layout ? 1 : 0] = p.dirs;
	w[p.layout ? 0 : 1] = batch;
	w[2] = hid;
	lay = p.layout ? "[batch_size, num_directions, hidden_size]" :
			 "[num_directions, batch_size, hidden_size]";
	if ((ret = rnn_check(x, CPU_RNN_H0, "initial_h", 3, w, lay)) < 0 ||
	    (p.op == CPU_RNN_LSTM && (ret = rnn_check(x, CPU_RNN_C0, "initial_c", 3, w, lay)) < 0))
		return ret;
	w[0] = p.dirs;
	w[1] = rnn_times(3, hid);
	if (p.op == CPU_RNN_LSTM &&
	    (ret = rnn_check(x, CPU_RNN_P, "P", 2, w, "[num_directions, 3*hidden_size]")) < 0)
		return ret;
	for (i = 0; i < x->n_out; i++) {
		struct op_tensor *o = &x->out[i];

		o->dtype = X->dtype;
		if (i == CPU_RNN_Y) {
			int64_t y0[4] = { seq, p.dirs, batch, hid }, y1[4] = { batch, seq, p.dirs, hid };

			o->rank = 4;
			memcpy(o->dims, p.layout ? y1 : y0, sizeof(y0));
		} else {
			o->rank = 3;
			o->dims[p.layout ? 1 : 0] = p.dirs;
			o->dims[p.layout ? 0 : 1] = batch;
			o->dims[2] = hid;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- kernels */

static float rnn_act(const struct cpu_rnn_act *a, float v)
{
	float h;

	switch (a->fn) {
	case CPU_RNN_RELU:
		return v < 0.0f ? 0.0f : v;
	case CPU_RNN_TANH:
		return tanhf(v);
	case CPU_RNN_SIGMOID:
		return 1.0f / (1.0f + expf(-v));
	case CPU_RNN_AFFINE:
		return a->alpha * v + a->beta;
	case CPU_RNN_LEAKY_RELU:
		return v < 0.0f ? a->alpha * v : v;
	case CPU_RNN_THRESHOLDED_RELU:
		return v > a->alpha ? v : 0.0f;
	case CPU_RNN_SCALED_TANH:
		return a->alpha * tanhf(a->beta * v);
	case CPU_RNN_HARD_SIGMOID:
		h = a->alpha * v + a->beta;
		return h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h;
	case CPU_RNN_ELU:
		return v < 0.0f ? a->alpha * expm1f(v) : v;
	case CPU_RNN_SOFTSIGN:
		return v / (1.0f + fabsf(v));
	case CPU_RNN_SOFTPLUS:
		/* log(1 + e^v) without overflowing e^v. */
		return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
	}
	return v;
}

/* Activation k of direction d over the gate input v, clipped first. */
static float rnn_gate(const struct cpu_rnn *p, int64_t d, int k, double v)
{
	float f = (float)v;

	if (p->has_clip)
		f = f < -p->clip ? -p->clip : f > p->clip ? p->clip : f;
	return rnn_act(&p->act[d][k], f);
}

/* The tensors of one call, absent optional ones NULL. */
struct rnn_io {
	const struct op_tensor *x, *w, *r, *b, *lens, *h0, *c0, *peep;
	const struct op_tensor *y, *yh, *yc;
};

static const struct op_tensor *rnn_opt_in(const struct op_call *c, int i)
{
	return i < c->n_in && op_tensor_present(&c->in[i]) ? &c->in[i] : NULL;
}

static const struct op_tensor *rnn_opt_out(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) ? &c->out[i] : NULL;
}

/* Row `row` of matrix m (n columns, from element base) times tensor v's
 * n elements from off. */
static double rnn_dot_t(const struct op_tensor *m, int64_t base, int64_t row,
			const struct op_tensor *v, int64_t off, int64_t n)
{
	double s = 0.0;
	int64_t k;

	for (k = 0; k < n; k++)
		s += (double)cpu_load_f(m->data, m->dtype, base + row * n + k) *
		     (double)cpu_load_f(v->data, v->dtype, off + k);
	return s;
}

/* The same times the floats h. */
static double rnn_dot_f(const struct op_tensor *m, int64_t base, int64_t row, const float *h,
			int64_t n)
{
	double s = 0.0;
	int64_t k;

	for (k = 0; k < n; k++)
		s += (double)cpu_load_f(m->data, m->dtype, base + row * n + k) * (double)h[k];
	return s;
}

/* Element i of the optional t, 0 when it is absent. */
static double rnn_opt(const struct op_tensor *t, int64_t i)
{
	return t ? (double)cpu_load_f(t->data, t->dtype, i) : 0.0;
}

/* The scratch of one direction of one batch entry (workspace floats). */
struct rnn_state {
	float *h;     /* (hidden) H */
	float *c;     /* (hidden) C, LSTM */
	float *a;     /* (gates * hidden) the gates */
	float *rh;    /* (hidden) GRU: r (.) H */
};

/* One step of direction d at time t (X's row xo): a[] gets every gate's
 * input, then the new state is made from it. */
static void rnn_step(const struct cpu_rnn *p, const struct rnn_io *io, int64_t d, int64_t xo,
		     struct rnn_state *st)
{
	int64_t H = p->hidden, G = p->gates, I = p->input, j;
	int64_t wb = d * G * H * I, rb = d * G * H * H, bb = d * 2 * G * H, pb = d * 3 * H;
	/* GRU: the h gate's recurrence is taken apart below. */
	int64_t rec_rows = p->op == CPU_RNN_GRU ? 2 * H : G * H, row;

	for (row = 0; row < G * H; row++) {
		double v = rnn_dot_t(io->w, wb, row, io->x, xo, I) + rnn_opt(io->b, bb + row);

		if (row < rec_rows)
			v += rnn_dot_f(io->r, rb, row, st->h, H) + rnn_opt(io->b, bb + G * H + row);
		st->a[row] = (float)v;
	}
	switch (p->op) {
	case CPU_RNN_SIMPLE:
		for (j = 0; j < H; j++)
			st->h[j] = rnn_gate(p, d, 0, st->a[j]);
		break;
	case CPU_RNN_GRU:
		for (j = 0; j < H; j++) {
			st->a[j] = rnn_gate(p, d, 0, st->a[j]);          /* z */
			st->a[H + j] = rnn_gate(p, d, 0, st->a[H + j]);  /* r */
			st->rh[j] = st->a[H + j] * st->h[j];
		}
		for (j = 0; j < H; j++) {
			int64_t hr = 2 * H + j;
			double rbh = rnn_opt(io->b, bb + G * H + hr), v;

			if (p->linear_before_reset)
				v = st->a[H + j] * (rnn_dot_f(io->r, rb, hr, st->h, H) + rbh);
			else
				v = rnn_dot_f(io->r, rb, hr, st->rh, H) + rbh;
			st->a[hr] = rnn_gate(p, d, 1, st->a[hr] + v);   /* h~ */
		}
		for (j = 0; j < H; j++) {
			float z = st->a[j];

			st->h[j] = (1.0f - z) * st->a[2 * H + j] + z * st->h[j];
		}
		break;
	case CPU_RNN_LSTM:
		for (j = 0; j < H; j++) {
			float c = st->c[j], i, f, g, o;

			i = rnn_gate(p, d, 0, st->a[j] + rnn_opt(io->peep, pb + j) * c);
			f = p->input_forget ? 1.0f - i :
			    rnn_gate(p, d, 0, st->a[2 * H + j] + rnn_opt(io->peep, pb + 2 * H + j) * c);
			g = rnn_gate(p, d, 1, st->a[3 * H + j]);
			c = f * c + i * g;
			o = rnn_gate(p, d, 0, st->a[H + j] + rnn_opt(io->peep, pb + H + j) * c);
			st->c[j] = c;
			st->h[j] = o * rnn_act(&p->act[d][2], c);
		}
		break;
	}
}

/* Runs direction d over batch entry b, of len steps. */
static void rnn_sequence(const struct cpu_rnn *p, const struct rnn_io *io, int64_t d, int64_t b,
			 int64_t len, struct rnn_state *st)
{
	int64_t H = p->hidden, at = cpu_rnn_h_at(p, d, b), s, t, j;

	for (j = 0; j < H; j++) {
		st->h[j] = (float)rnn_opt(io->h0, at + j);
		st->c[j] = (float)rnn_opt(io->c0, at + j);
	}
	for (s = 0; s < len; s++) {
		t = cpu_rnn_backwards(p, d) ? len - 1 - s : s;
		rnn_step(p, io, d, cpu_rnn_x_at(p, t, b), st);
		for (j = 0; io->y && j < H; j++)
			cpu_store_f(io->y->data, io->y->dtype, cpu_rnn_y_at(p, t, d, b) + j, st->h[j]);
	}
	for (t = len; io->y && t < p->seq; t++) {
		for (j = 0; j < H; j++)
			cpu_store_f(io->y->data, io->y->dtype, cpu_rnn_y_at(p, t, d, b) + j, 0.0f);
	}
	for (j = 0; j < H; j++) {
		if (io->yh)
			cpu_store_f(io->yh->data, io->yh->dtype, at + j, len > 0 ? st->h[j] : 0.0f);
		if (io->yc)
			cpu_store_f(io->yc->data, io->yc->dtype, at + j, len > 0 ? st->c[j] : 0.0f);
	}
}

static int rnn_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_rnn *p = (struct cpu_rnn *)c->params;
	int ret = cpu_rnn_read(c->node, c->in, p);

	*workspace = 0;
	if (ret < 0)
		return ret;
	/* One more float, so that a hidden_size of 0 still has a workspace. */
	*workspace = sizeof(float) * (size_t)((3 + p->gates) * p->hidden + 1);
	return 0;
}

static int rnn_run(struct op_call *c)
{
	const struct cpu_rnn *p = (const struct cpu_rnn *)c->params;
	struct rnn_io io = {
		.x = &c->in[CPU_RNN_X], .w = &c->in[CPU_RNN_W], .r = &c->in[CPU_RNN_R],
		.b = rnn_opt_in(c, CPU_RNN_B), .lens = rnn_opt_in(c, CPU_RNN_LENS),
		.h0 = rnn_opt_in(c, CPU_RNN_H0),
		.c0 = p->op == CPU_RNN_LSTM ? rnn_opt_in(c, CPU_RNN_C0) : NULL,
		.peep = p->op == CPU_RNN_LSTM ? rnn_opt_in(c, CPU_RNN_P) : NULL,
		.y = rnn_opt_out(c, CPU_RNN_Y), .yh = rnn_opt_out(c, CPU_RNN_YH),
		.yc = p->op == CPU_RNN_LSTM ? rnn_opt_out(c, CPU_RNN_YC) : NULL,
	};
	float *ws = c->workspace;
	struct rnn_state st = { ws, ws + p->hidden, ws + 2 * p->hidden,
				ws + (2 + p->gates) * p->hidden };
	int64_t b, d, len;

	for (b = 0; io.lens && b < p->batch; b++) {
		len = ((const int32_t *)io.lens->data)[b];
		if (len < 0 || len > p->seq)
			return cep__set_error(CEP_EINVAL, "%s: sequence_lens[%" PRId64 "] is %" PRId64
					      "; it must be in [0, %" PRId64 "], the seq_length",
					      c->node->op_type, b, len, p->seq);
	}
	for (d = 0; d < p->dirs; d++) {
		for (b = 0; b < p->batch; b++) {
			len = io.lens ? ((const int32_t *)io.lens->data)[b] : p->seq;
			rnn_sequence(p, &io, d, b, len, &st);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

/* bfloat16 arrived at opset 22. */
#define RNN_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_schema schemas[] = {
	/* 1: output_sequence (ignored); 7: without it; 14: layout. */
	{ "", "RNN", 1, 6, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "RNN", 7, 13, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "RNN", 14, OP_OPSET_MAX, 3, 6, 0, 2, 0, 0, rnn_infer },
	/* 3: linear_before_reset. */
	{ "", "GRU", 1, 2, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "GRU", 3, 6, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "GRU", 7, 13, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "GRU", 14, OP_OPSET_MAX, 3, 6, 0, 2, 0, 0, rnn_infer },
	{ "", "LSTM", 1, 6, 3, 8, 0, 3, 0, 0, rnn_infer },
	{ "", "LSTM", 7, 13, 3, 8, 0, 3, 0, 0, rnn_infer },
	{ "", "LSTM", 14, OP_OPSET_MAX, 3, 8, 0, 3, 0, 0, rnn_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "RNN", 1, 21, BACKEND_HOST, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "RNN", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, rnn_prepare, rnn_run },
	{ "", "GRU", 1, 21, BACKEND_HOST, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "GRU", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, rnn_prepare, rnn_run },
	{ "", "LSTM", 1, 21, BACKEND_HOST, RNN_DTS_1, rnn_prepare, rnn_run },
	{ "", "LSTM", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, rnn_prepare, rnn_run },
};

_Static_assert(sizeof(struct cpu_rnn) <= OP_PARAMS_BYTES, "cpu_rnn is too big");

const struct op_family op_family_cpu_rnn = {
	"cpu_rnn", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
