/*
 * fuse_xfmr.c — the transformer fusions of the optimizer (engine/
 * fuse_xfmr.h): GELU chains into Gelu, MatMul + bias (+ activation) into
 * MatMulBias, a residual Add after one into its fourth input, the
 * attention chain into Attention with its Transposes absorbed.
 *
 * A first pass turns Casts to their input's own type into Identities,
 * which the clean-up removes. Then each pass walks the sorted nodes
 * looking for the node a chain hangs on (Erf, MatMul, Softmax), follows
 * producers and consumers from it, and
 * when everything matches adds the fused node, which takes over the
 * chain's last value, and kills the chain's nodes. The graph's values are
 * never renamed or created, so the outputs keep their names and types.
 * Who reads what is recounted after every rewrite: a graph has a few
 * thousand nodes and a model a few hundred rewrites, and a fresh count is
 * the simplest thing to trust.
 */
#include "engine/fuse_xfmr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"
#include "kernels/legacy.h"
#include "kernels/xfmr.h"

/* Who reads each value, for the chain being matched. */
struct fx {
	struct graph *g;
	int *uses;    /* (n_values) input slots of live nodes that read it */
	int *reader;  /* (n_values) one live node that reads it, -1: none */
};

static void fx_index(struct fx *f)
{
	const struct graph *g = f->g;
	int i, j;

	for (i = 0; i < g->n_values; i++) {
		f->uses[i] = 0;
		f->reader[i] = -1;
	}
	for (i = 0; i < g->n_nodes; i++) {
		const struct graph_node *node = &g->nodes[i];

		if (node->dead)
			continue;
		for (j = 0; j < node->n_in; j++) {
			if (node->in[j] < 0)
				continue;
			f->uses[node->in[j]]++;
			f->reader[node->in[j]] = i;
		}
	}
}

/* ------------------------------------------------------------ matching */

/* Whether node n is live and the ai.onnx operator op. An operator of
 * opset 6 or older that broadcasts from an axis is never one: the chains
 * matched here broadcast numpy's way. */
static bool fx_is(const struct graph *g, int n, const char *op)
{
	const struct graph_node *node;

	if (n < 0)
		return false;
	node = &g->nodes[n];
	return !node->dead && op_domain_equal(node->op.domain, "") &&
	       strcmp(node->op.op_type, op) == 0 && !op_legacy_bcast_axis(&node->op);
}

/* Whether value v is made by a node and read by exactly one input slot of
 * one other node, and is not seen from outside: a chain through it may
 * drop it. */
static bool fx_passing(const struct fx *f, int v)
{
	const struct graph_value *val;

	if (v < 0)
		return false;
	val = &f->g->values[v];
	return val->producer >= 0 && f->uses[v] == 1 &&
	       !(val->flags & (GRAPH_VALUE_OUTPUT | GRAPH_VALUE_INPUT | GRAPH_VALUE_CONST));
}

/* The node of operator op that alone reads v (a passing value), or -1. */
static int fx_reader(const struct fx *f, int v, const char *op)
{
	return fx_passing(f, v) && fx_is(f->g, f->reader[v], op) ? f->reader[v] : -1;
}

/* The node of operator op that makes v, or -1. */
static int fx_maker(const struct fx *f, int v, const char *op)
{
	return v >= 0 && fx_is(f->g, f->g->values[v].producer, op) ? f->g->values[v].producer
								   : -1;
}

/* Whether v is a tensor of a float type the fused operators take (not
 * float64, which they would compute in float32) whose rank is known. */
static bool fx_float(const struct graph *g, int v)
{
	cep_dtype t = v >= 0 ? g->values[v].t.dtype : CEP_DTYPE_UNDEFINED;

	return cpu_is_float(t) && t != CEP_DTYPE_FLOAT64 && g->values[v].t.rank >= 0;
}

/* Whether constant c is one element of x's float type, near want, and of
 * no higher rank than x (so an operation with it keeps x's shape). */
static bool fx_const_near(const struct graph *g, int c, int x, double want)
{
	const struct graph_value *cv, *xv;
	double unit, got;
	int64_t n;

	if (c < 0 || x < 0)
		return false;
	cv = &g->values[c];
	xv = &g->values[x];
	if (!(cv->flags & GRAPH_VALUE_CONST) || cv->t.data == NULL || !fx_float(g, x) ||
	    cv->t.dtype != xv->t.dtype || cv->t.rank > xv->t.rank ||
	    op_tensor_numel(&cv->t, &n) < 0 || n != 1)
		return false;
	/* The constant as the type can hold it: within a unit of its last
	 * place (exporters write sqrt(2) to float32 and then it may be
	 * rounded to a 16-bit type). */
	unit = cv->t.dtype == CEP_DTYPE_FLOAT32 ? 0x1p-20 :
	       cv->t.dtype == CEP_DTYPE_FLOAT16 ? 0x1p-10 : 0x1p-7;
	got = cpu_load_f(cv->t.data, cv->t.dtype, 0);
	return fabs(got - want) <= unit * fabs(want);
}

/* The value node n multiplies by mul (Mul by mul on either side, or Div
 * by 1 / mul), or -1. */
static int fx_scaled(const struct graph *g, int n, double mul)
{
	const struct graph_node *node;
	int i;

	if (fx_is(g, n, "Div")) {
		node = &g->nodes[n];
		return fx_const_near(g, node->in[1], node->in[0], 1.0 / mul) ? node->in[0] : -1;
	}
	if (!fx_is(g, n, "Mul"))
		return -1;
	node = &g->nodes[n];
	for (i = 0; i < 2; i++) {
		if (fx_const_near(g, node->in[i], node->in[1 - i], mul))
			return node->in[1 - i];
	}
	return -1;
}

/* The one element of constant v as a float (v known to be one). */
static bool fx_scalar(const struct graph *g, int v, float *out)
{
	const struct graph_value *val = &g->values[v];
	int64_t n;

	if (!(val->flags & GRAPH_VALUE_CONST) || val->t.data == NULL ||
	    !cpu_is_float(val->t.dtype) || op_tensor_numel(&val->t, &n) < 0 || n != 1)
		return false;
	*out = cpu_load_f(val->t.data, val->t.dtype, 0);
	return true;
}

/* The operand of binary node n other than v, or -1 when both are v. */
static int fx_other(const struct graph *g, int n, int v)
{
	const struct graph_node *node = &g->nodes[n];

	if (node->n_in != 2 || (node->in[0] == v) == (node->in[1] == v))
		return -1;
	return node->in[0] == v ? node->in[1] : node->in[0];
}

/* ------------------------------------------------------------ rewriting */

/* Adds a node of operator op (domain, opset) with n_in inputs and one
 * output, named as node like was, and stores its index in *id. */
static int fx_node(struct graph *g, const char *domain, const char *op, int opset, int like,
		   int n_in, int *id)
{
	const struct op_schema *s;
	struct graph_node *node;
	const char *name = g->nodes[like].op.name;
	int ret;

	ret = op_schema_find(domain, op, opset, &s);
	if (ret < 0)
		return ret;
	ret = graph_node_new(g, n_in, 1, id);
	if (ret < 0)
		return ret;
	node = &g->nodes[*id];
	node->op.name = name;
	node->op.op_type = op;
	node->op.domain = domain;
	node->op.opset = opset;
	node->schema = s;
	return 0;
}

/* Kills the n nodes of kill and has node made write v instead. */
static void fx_replace(struct fx *f, const int *kill, int n, int made, int v)
{
	struct graph *g = f->g;
	int i;

	for (i = 0; i < n; i++)
		graph_node_kill(g, kill[i]);
	g->nodes[made].out[0] = v;
	g->values[v].producer = made;
	fx_index(f);
}

/* ------------------------------------------------------------ no-op Casts */

/* A Cast to the type its input already has (Hugging Face's
 * softmax(..., dtype=float32) in a float32 model) becomes an Identity,
 * which graph_simplify() then removes: left in place it would hide the
 * chains around it. Returns 1 when changed, 0 when not, or an error. */
static int cast_noop(struct fx *f, int n)
{
	struct graph *g = f->g;
	struct graph_node *node = &g->nodes[n];
	const struct op_schema *s;
	int ret;

	if (node->n_in != 1 || node->n_out != 1 || node->in[0] < 0 || node->out[0] < 0 ||
	    g->values[node->in[0]].t.dtype == CEP_DTYPE_UNDEFINED ||
	    g->values[node->in[0]].t.dtype != g->values[node->out[0]].t.dtype)
		return 0;
	ret = op_schema_find("", "Identity", node->op.opset, &s);
	if (ret < 0)
		return ret;
	node->op.op_type = "Identity";
	node->op.n_attrs = 0;
	node->schema = s;
	return 1;
}

/* ----------------------------------------------------------------- GELU */

/* The Gelu opset: 20 introduced it; a newer model keeps its own. */
static int gelu_opset(int opset)
{
	return opset > 20 ? opset : 20;
}

/*
 * Matches the chain around Erf node e:
 *
 *	u = x / sqrt2 (or x * (1/sqrt2)), r = Erf(u), a = r + 1, then
 *	  (x * a) * 0.5,  (a * 0.5) * x,  or  (x * 0.5) * a  (any operand
 *	  order, Div by 2 for * 0.5)
 *
 * and replaces it with Gelu(x). Returns 1 when fused, 0 when not, or an
 * error.
 */
static int gelu_fuse(struct fx *f, int e)
{
	struct graph *g = f->g;
	int kill[5], n_kill = 0;
	int d, x, a_node, m1, m2, h, a, o, y, node, ret;

	d = g->values[g->nodes[e].in[0]].producer;
	if (!fx_passing(f, g->nodes[e].in[0]) || d < 0)
		return 0;
	x = fx_scaled(g, d, M_SQRT1_2);
	if (x < 0)
		return 0;
	a_node = fx_reader(f, g->nodes[e].out[0], "Add");
	if (a_node < 0 || !fx_const_near(g, fx_other(g, a_node, g->nodes[e].out[0]), x, 1.0))
		return 0;
	a = g->nodes[a_node].out[0];
	m1 = fx_reader(f, a, "Mul");
	if (m1 < 0)
		return 0;
	o = fx_other(g, m1, a);
	kill[n_kill++] = d;
	kill[n_kill++] = e;
	kill[n_kill++] = a_node;
	kill[n_kill++] = m1;
	if (o == x) {
		/* (x * a) * 0.5 */
		m2 = f->reader[g->nodes[m1].out[0]];
		if (!fx_passing(f, g->nodes[m1].out[0]) ||
		    fx_scaled(g, m2, 0.5) != g->nodes[m1].out[0])
			return 0;
		kill[n_kill++] = m2;
		y = g->nodes[m2].out[0];
	} else if (fx_const_near(g, o, x, 0.5)) {
		/* (a * 0.5) * x */
		m2 = fx_reader(f, g->nodes[m1].out[0], "Mul");
		if (m2 < 0 || fx_other(g, m2, g->nodes[m1].out[0]) != x)
			return 0;
		kill[n_kill++] = m2;
		y = g->nodes[m2].out[0];
	} else {
		/* (x * 0.5) * a */
		h = o >= 0 ? g->values[o].producer : -1;
		if (!fx_passing(f, o) || h < 0 || fx_scaled(g, h, 0.5) != x)
			return 0;
		kill[n_kill++] = h;
		y = g->nodes[m1].out[0];
	}
	ret = fx_node(g, "", "Gelu", gelu_opset(g->nodes[e].op.opset), kill[n_kill - 1], 1, &node);
	if (ret < 0)
		return ret;
	g->nodes[node].in[0] = x;
	fx_replace(f, kill, n_kill, node, y);
	return 1;
}

/* ----------------------------------------------------------- MatMulBias */

/* Whether constant v can be MatMulBias's bias for an output of rank
 * out_rank and n columns: [.., 1, n] of rank at most out_rank. */
static bool bias_fits(const struct graph *g, int v, cep_dtype dtype, int out_rank, int64_t n)
{
	const struct graph_value *b = &g->values[v];
	int i;

	if (!(b->flags & GRAPH_VALUE_CONST) || b->t.data == NULL || b->t.dtype != dtype ||
	    b->t.rank < 1 || b->t.rank > out_rank || b->t.dims[b->t.rank - 1] != n)
		return false;
	for (i = 0; i < b->t.rank - 1; i++) {
		if (b->t.dims[i] != 1)
			return false;
	}
	return true;
}

/*
 * Matches MatMul node mm by a constant [K, N] matrix, then an Add of a
 * constant bias of N, then optionally Relu or Gelu, and replaces it with
 * MatMulBias. Returns 1 when fused, 0 when not, or an error.
 */
static int mmb_fuse(struct fx *f, int mm)
{
	struct graph *g = f->g;
	const struct graph_value *xv, *wv;
	enum xfmr_act act = XFMR_ACT_NONE;
	struct op_attr *attr;
	int kill[3], n_kill = 0;
	int add, bias, y, r, node, ret;

	xv = &g->values[g->nodes[mm].in[0]];
	wv = &g->values[g->nodes[mm].in[1]];
	if (!fx_float(g, g->nodes[mm].in[0]) || xv->t.rank < 2 ||
	    !(wv->flags & GRAPH_VALUE_CONST) || wv->t.data == NULL || wv->t.rank != 2 ||
	    wv->t.dtype != xv->t.dtype)
		return 0;
	add = fx_reader(f, g->nodes[mm].out[0], "Add");
	if (add < 0)
		return 0;
	bias = fx_other(g, add, g->nodes[mm].out[0]);
	if (bias < 0 || !bias_fits(g, bias, xv->t.dtype, xv->t.rank, wv->t.dims[1]))
		return 0;
	kill[n_kill++] = mm;
	kill[n_kill++] = add;
	y = g->nodes[add].out[0];
	if ((r = fx_reader(f, y, "Relu")) >= 0) {
		act = XFMR_ACT_RELU;
	} else if ((r = fx_reader(f, y, "Gelu")) >= 0) {
		const char *how = op_attr_string(&g->nodes[r].op, "approximate", "none");

		if (strcmp(how, "none") == 0)
			act = XFMR_ACT_GELU;
		else if (strcmp(how, "tanh") == 0)
			act = XFMR_ACT_GELU_TANH;
		else
			r = -1;
	}
	if (r >= 0) {
		kill[n_kill++] = r;
		y = g->nodes[r].out[0];
	}
	ret = fx_node(g, XFMR_DOMAIN, "MatMulBias", 1, kill[n_kill - 1], 3, &node);
	if (ret < 0)
		return ret;
	attr = graph_alloc(g, sizeof(*attr));
	if (attr == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory fusing a MatMul");
	attr->name = "activation";
	attr->type = OP_ATTR_STRING;
	attr->s = xfmr_act_name(act);
	g->nodes[node].op.attrs = attr;
	g->nodes[node].op.n_attrs = 1;
	g->nodes[node].in[0] = g->nodes[mm].in[0];
	g->nodes[node].in[1] = g->nodes[mm].in[1];
	g->nodes[node].in[2] = bias;
	fx_replace(f, kill, n_kill, node, y);
	return 1;
}

/*
 * Whether values a and b may be taken to have one shape: the same rank
 * and, dim by dim, the same fixed size, or a size not fixed on one side
 * or both (a batch traced through Shape and Reshape is unknown) and not a
 * fixed 1 on the other. The second case trusts that an Add of a Linear's
 * output and another value with an open batch does not broadcast along
 * it, as a residual connection never does; should one, MatMulBias's
 * inference at plan time refuses the shapes (CEP_ESHAPE) rather than
 * compute wrongly.
 */
static bool fx_same_shape(const struct graph *g, int a, int b)
{
	const struct op_tensor *x = &g->values[a].t, *y = &g->values[b].t;
	int i;

	if (x->rank < 0 || x->rank != y->rank)
		return false;
	for (i = 0; i < x->rank; i++) {
		bool fx = op_dim_fixed(x->dims[i]), fy = op_dim_fixed(y->dims[i]);

		if (fx && fy && x->dims[i] != y->dims[i])
			return false;
		/* A fixed 1 against an open size is a broadcast in waiting. */
		if (fx != fy && (fx ? x->dims[i] : y->dims[i]) == 1)
			return false;
	}
	return true;
}

/*
 * Matches Add node add of a MatMulBias's output (activation none, no
 * residual yet; the Add its only reader) and another value of the same
 * shape and type: a residual connection (BERT has two a layer). The Add
 * becomes MatMulBias's fourth input R, which its kernels add for free
 * (cuBLASLt's C). Returns 1 when fused, 0 when not, or an error.
 */
static int resid_fuse(struct fx *f, int add)
{
	struct graph *g = f->g;
	const struct graph_node *a = &g->nodes[add];
	int side, node, ret;

	if (a->n_in != 2 || a->in[0] < 0 || a->in[1] < 0 || a->out[0] < 0 ||
	    a->in[0] == a->in[1])
		return 0;
	for (side = 0; side < 2; side++) {
		int v = a->in[side], r = a->in[1 - side], y = a->out[0];
		int mm = g->values[v].producer, kill[2];
		const struct graph_node *m;

		if (mm < 0 || !fx_passing(f, v))
			continue;
		m = &g->nodes[mm];
		if (m->dead || !op_domain_equal(m->op.domain, XFMR_DOMAIN) ||
		    strcmp(m->op.op_type, "MatMulBias") != 0 || m->n_in != 3 ||
		    strcmp(op_attr_string(&m->op, "activation", "none"), "none") != 0)
			continue;
		if (g->values[r].t.dtype != g->values[v].t.dtype ||
		    g->values[y].t.dtype != g->values[v].t.dtype ||
		    !fx_same_shape(g, v, r) || !fx_same_shape(g, v, y))
			continue;
		ret = fx_node(g, XFMR_DOMAIN, "MatMulBias", 1, add, 4, &node);
		if (ret < 0)
			return ret;
		/* fx_node may have moved the nodes. */
		m = &g->nodes[mm];
		g->nodes[node].op.attrs = m->op.attrs;
		g->nodes[node].op.n_attrs = m->op.n_attrs;
		g->nodes[node].in[0] = m->in[0];
		g->nodes[node].in[1] = m->in[1];
		g->nodes[node].in[2] = m->in[2];
		g->nodes[node].in[3] = r;
		kill[0] = mm;
		kill[1] = add;
		fx_replace(f, kill, 2, node, y);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ Attention */

/* What the attention chain around a Softmax is made of. */
struct attn_match {
	int kill[5], n_kill;
	int mm1, mm2;            /* the two MatMuls */
	int mask;                /* value, -1: none */
	float scale;
};

/* Follows passing value v back through an optional Div or Mul by a
 * constant to the MatMul of Q and K^T; fills mm1 and scale. */
static bool attn_scores(const struct fx *f, int v, struct attn_match *m)
{
	const struct graph *g = f->g;
	int p, z;

	if (!fx_passing(f, v))
		return false;
	p = g->values[v].producer;
	m->scale = 1.0f;
	if (fx_is(g, p, "Div") && fx_scalar(g, g->nodes[p].in[1], &m->scale) &&
	    g->values[g->nodes[p].in[1]].t.rank <= 4) {
		m->scale = 1.0f / m->scale;
		z = g->nodes[p].in[0];
	} else if (fx_is(g, p, "Mul") && fx_scalar(g, g->nodes[p].in[1], &m->scale) &&
		   g->values[g->nodes[p].in[1]].t.rank <= 4) {
		z = g->nodes[p].in[0];
	} else if (fx_is(g, p, "Mul") && fx_scalar(g, g->nodes[p].in[0], &m->scale) &&
		   g->values[g->nodes[p].in[0]].t.rank <= 4) {
		z = g->nodes[p].in[1];
	} else {
		z = v;
		p = -1;
	}
	if (p >= 0) {
		if (!fx_passing(f, z))
			return false;
		m->kill[m->n_kill++] = p;
	}
	m->mm1 = fx_maker(f, z, "MatMul");
	if (m->mm1 < 0)
		return false;
	m->kill[m->n_kill++] = m->mm1;
	return true;
}

/* Whether value v is a rank-4 tensor of dtype. */
static bool attn_rank4(const struct graph *g, int v, cep_dtype dtype)
{
	return v >= 0 && g->values[v].t.rank == 4 && g->values[v].t.dtype == dtype;
}

/* Whether the depth of rank-4 v along axis is unknown or within what the
 * kernels take. */
static bool attn_depth_ok(const struct graph *g, int v, int axis)
{
	int64_t d = g->values[v].t.dims[axis];

	return !op_dim_fixed(d) || d <= XFMR_ATTN_MAX_DEPTH;
}

/* Matches the chain around Softmax node s into *m. */
static bool attn_match(const struct fx *f, int s, struct attn_match *m)
{
	const struct graph *g = f->g;
	int sin = g->nodes[s].in[0], p, side, axis, q, kt, v;
	cep_dtype t;

	memset(m, 0, sizeof(*m));
	m->mask = -1;
	if (!fx_float(g, sin) || g->values[sin].t.rank != 4 ||
	    op_softmax_axis(&g->nodes[s].op, 4, &axis) < 0 || axis != 3 || !fx_passing(f, sin))
		return false;
	t = g->values[sin].t.dtype;
	m->kill[m->n_kill++] = s;
	p = g->values[sin].producer;
	if (fx_is(g, p, "Add")) {
		m->kill[m->n_kill++] = p;
		for (side = 0; side < 2; side++) {
			int n_kill = m->n_kill;

			if (attn_scores(f, g->nodes[p].in[side], m)) {
				m->mask = g->nodes[p].in[1 - side];
				break;
			}
			m->n_kill = n_kill;
		}
		if (side == 2 || !fx_float(g, m->mask) || g->values[m->mask].t.dtype != t ||
		    g->values[m->mask].t.rank > 4)
			return false;
	} else if (!attn_scores(f, sin, m)) {
		return false;
	}
	m->mm2 = fx_reader(f, g->nodes[s].out[0], "MatMul");
	if (m->mm2 < 0 || g->nodes[m->mm2].in[0] != g->nodes[s].out[0])
		return false;
	m->kill[m->n_kill++] = m->mm2;
	q = g->nodes[m->mm1].in[0];
	kt = g->nodes[m->mm1].in[1];
	v = g->nodes[m->mm2].in[1];
	return attn_rank4(g, q, t) && attn_rank4(g, kt, t) && attn_rank4(g, v, t) &&
	       attn_depth_ok(g, q, 3) && attn_depth_ok(g, v, 3);
}

/* Reads Transpose node n's perm of a rank-4 input into perm; false when
 * it is anything else. */
static bool attn_perm(const struct graph *g, int n, int perm[4])
{
	const int64_t *p;
	bool seen[4] = { false, false, false, false };
	int count, i;

	if (g->values[g->nodes[n].in[0]].t.rank != 4)
		return false;
	p = op_attr_ints(&g->nodes[n].op, "perm", &count);
	if (p == NULL) {
		for (i = 0; i < 4; i++)
			perm[i] = 3 - i;
		return op_attr_find(&g->nodes[n].op, "perm") == NULL;
	}
	if (count != 4)
		return false;
	for (i = 0; i < 4; i++) {
		if (p[i] < 0 || p[i] > 3 || seen[p[i]])
			return false;
		seen[p[i]] = true;
		perm[i] = (int)p[i];
	}
	return true;
}

/*
 * Has Attention node a read its inputs from before the Transposes that
 * make them and write its output past the Transpose that reads it, as
 * long as those values pass from one node to the other alone. axes is
 * the node's q_axes, k_axes, v_axes and out_axes, 4 each, updated.
 */
static void attn_absorb(struct fx *f, int a, int64_t *axes)
{
	struct graph *g = f->g;
	int perm[4], inv[4], i, l, t;

	for (i = 0; i < 3; i++) {
		while ((t = fx_maker(f, g->nodes[a].in[i], "Transpose")) >= 0 &&
		       fx_passing(f, g->nodes[a].in[i]) && attn_perm(g, t, perm)) {
			/* Axis k of the Transpose's output is axis perm[k] of its input. */
			for (l = 0; l < 4; l++)
				axes[4 * i + l] = perm[axes[4 * i + l]];
			g->nodes[a].in[i] = g->nodes[t].in[0];
			graph_node_kill(g, t);
			fx_index(f);
		}
	}
	while ((t = fx_reader(f, g->nodes[a].out[0], "Transpose")) >= 0 && attn_perm(g, t, perm)) {
		for (l = 0; l < 4; l++)
			inv[perm[l]] = l;
		for (l = 0; l < 4; l++)
			axes[12 + l] = inv[axes[12 + l]];
		graph_node_kill(g, t);
		g->values[g->nodes[a].out[0]].producer = -1;
		g->nodes[a].out[0] = g->nodes[t].out[0];
		g->values[g->nodes[t].out[0]].producer = a;
		fx_index(f);
	}
}

/* Matches the attention chain around Softmax node s and replaces it with
 * an Attention node. Returns 1 when fused, 0 when not, or an error. */
static int attn_fuse(struct fx *f, int s)
{
	static const char *const names[4] = { "q_axes", "k_axes", "v_axes", "out_axes" };
	/* K arrives as MatMul's K^T: (b, h, d, s). */
	static const int64_t first[16] = { 0, 1, 2, 3, 0, 1, 3, 2, 0, 1, 2, 3, 0, 1, 2, 3 };
	struct graph *g = f->g;
	struct attn_match m;
	struct op_attr *attrs;
	int64_t *axes;
	int node, i, ret;

	if (!attn_match(f, s, &m))
		return 0;
	ret = fx_node(g, XFMR_DOMAIN, "Attention", 1, m.mm2, m.mask >= 0 ? 4 : 3, &node);
	if (ret < 0)
		return ret;
	attrs = graph_alloc(g, 5 * sizeof(*attrs));
	axes = graph_alloc(g, sizeof(first));
	if (attrs == NULL || axes == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory fusing an attention");
	memcpy(axes, first, sizeof(first));
	for (i = 0; i < 4; i++) {
		attrs[i].name = names[i];
		attrs[i].type = OP_ATTR_INTS;
		attrs[i].n = 4;
		attrs[i].ints = axes + 4 * i;
	}
	attrs[4].name = "scale";
	attrs[4].type = OP_ATTR_FLOAT;
	attrs[4].f = m.scale;
	g->nodes[node].op.attrs = attrs;
	g->nodes[node].op.n_attrs = 5;
	g->nodes[node].in[0] = g->nodes[m.mm1].in[0];
	g->nodes[node].in[1] = g->nodes[m.mm1].in[1];
	g->nodes[node].in[2] = g->nodes[m.mm2].in[1];
	if (m.mask >= 0)
		g->nodes[node].in[3] = m.mask;
	fx_replace(f, m.kill, m.n_kill, node, g->nodes[m.mm2].out[0]);
	attn_absorb(f, node, axes);
	return 1;
}

/* ----------------------------------------------------------------- passes */

/* Calls fuse on every live node of operator op, in order. */
static int fx_pass(struct fx *f, const char *op, int (*fuse)(struct fx *f, int n))
{
	int k, ret;

	for (k = 0; k < f->g->n_order; k++) {
		int n = f->g->order[k];

		if (!fx_is(f->g, n, op))
			continue;
		ret = fuse(f, n);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int fuse_xfmr(struct graph *g)
{
	struct fx f = { .g = g };
	int ret;

	f.uses = calloc((size_t)g->n_values + 1, sizeof(*f.uses));
	f.reader = calloc((size_t)g->n_values + 1, sizeof(*f.reader));
	if (f.uses == NULL || f.reader == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory fusing the graph");
		goto out;
	}
	ret = fx_pass(&f, "Cast", cast_noop);
	if (ret == 0)
		ret = graph_simplify(g);
	if (ret < 0)
		goto out;
	fx_index(&f);
	/* Gelu first, so that MatMulBias takes it as its activation. */
	ret = fx_pass(&f, "Erf", gelu_fuse);
	if (ret == 0)
		ret = fx_pass(&f, "MatMul", mmb_fuse);
	if (ret == 0)
		ret = fx_pass(&f, "Add", resid_fuse);
	if (ret == 0)
		ret = fx_pass(&f, "Softmax", attn_fuse);
	if (ret == 0)
		ret = graph_simplify(g);
out:
	free(f.uses);
	free(f.reader);
	return ret;
}
