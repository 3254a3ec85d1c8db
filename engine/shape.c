/*
 * shape.c — inference of types and shapes over the graph IR (engine/shape.h)
 * and the checking of real input shapes against the model's declarations.
 * The per-operator rules are the inference functions of the registry; this
 * file walks the graph and checks what they return. Control flow (If,
 * Loop, Scan) is inferred here over its subgraphs, each inferred in turn
 * with what the node gives it (the rules are engine/ctrl.c's).
 */
#include "engine/shape.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctrl.h"

/* Checks what inference made of node n's outputs. */
static int outputs_check(const struct graph *g, int n, const struct op_tensor *out)
{
	const struct graph_node *node = &g->nodes[n];
	int i, d;

	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] < 0)
			continue;
		if (cep_dtype_size(out[i].dtype) == 0)
			return graph_node_fail(g, n, CEP_EINTERNAL,
					       "inference left output %d without a type", i);
		if (out[i].rank > CEP_MAX_RANK)
			return graph_node_fail(g, n, CEP_EUNSUPPORTED,
					       "output %d has rank %d, above %d", i,
					       out[i].rank, CEP_MAX_RANK);
		for (d = 0; d < out[i].rank; d++) {
			if (out[i].dims[d] < 0 && !op_dim_symbolic(out[i].dims[d]) &&
			    out[i].dims[d] != OP_DIM_UNKNOWN)
				return graph_node_fail(g, n, CEP_ESHAPE,
						       "output %d has dimension %d of %" PRId64,
						       i, d, out[i].dims[d]);
		}
	}
	return 0;
}

int shape_infer_node(const struct graph *g, int n, const struct op_tensor *in,
		     struct op_tensor *out)
{
	const struct graph_node *node = &g->nodes[n];
	struct op_infer x = {
		.node = &node->op,
		.n_in = node->n_in,
		.n_out = node->n_out,
		.in = in,
		.out = out,
	};
	int i, ret;

	for (i = 0; i < node->n_out; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].rank = -1;
	}
	cep__clear_error();
	ret = node->schema->infer(&x);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	return outputs_check(g, n, out);
}

/* Fills t with what node input v is at load: its type and shape, and its
 * data when it is a constant; an omitted input is absent. */
static void load_input(const struct graph *g, int v, struct op_tensor *t)
{
	if (v < 0) {
		memset(t, 0, sizeof(*t));
		return;
	}
	*t = g->values[v].t;
	if (!(g->values[v].flags & GRAPH_VALUE_CONST))
		t->data = NULL;
}

/* What is known of a Loop's iterations at load, from its constants. */
static int64_t loop_trip(const struct graph *g, int n, const struct ctrl_layout *l,
			 const struct op_tensor *in)
{
	bool has_m = l->n_explicit > 0 && op_tensor_present(&in[0]);
	int64_t m = CTRL_TRIP_UNKNOWN;
	int cond0 = 1, outer;
	bool value;
	enum ctrl_cond cond = ctrl_loop_cond(l->sub[0], &outer, &value);

	if (has_m && in[0].data) {
		m = *(const int64_t *)in[0].data;
		m = m < 0 ? 0 : m;
	}
	if (l->n_explicit > 1 && op_tensor_present(&in[1]))
		cond0 = in[1].data ? *(const unsigned char *)in[1].data != 0 : -1;
	if (cond == CTRL_COND_OUTER) {
		const struct op_tensor *t = &in[l->gs[0]->slot[outer]];

		cond = t->data ? CTRL_COND_CONST : CTRL_COND_COMPUTED;
		value = t->data && *(const unsigned char *)t->data;
	}
	return ctrl_loop_trip(has_m, m, cond0, cond, value);
}

/* Infers subgraph which of control node n with the node's inputs in,
 * into out (one per output of the subgraph). */
static int sub_infer(struct graph *g, int n, const struct ctrl_layout *l, int which,
		     const struct op_tensor *in, struct op_tensor *out)
{
	struct graph *sg = l->gs[which]->g;
	struct op_tensor *sin;
	int k, ret;

	sin = calloc((size_t)sg->n_inputs + 1, sizeof(*sin));
	if (!sin)
		return cep__set_error(CEP_ENOMEM, "out of memory inferring shapes");
	ret = ctrl_sub_inputs(g, n, l, which, in, sin);
	for (k = 0; ret == 0 && k < sg->n_inputs; k++) {
		sg->values[sg->inputs[k]].t = sin[k];
		sg->values[sg->inputs[k]].t.data = NULL;
	}
	free(sin);
	if (ret == 0)
		ret = shape_infer_graph(sg);
	for (k = 0; ret == 0 && k < sg->n_outputs; k++) {
		out[k] = sg->values[sg->outputs[k]].t;
		out[k].data = NULL;
	}
	return ret == 0 ? ctrl_sub_declared(g, n, l, which, out) : ret;
}

/*
 * Infers control node n at load: each subgraph with the types and shapes
 * the node gives it (never data: the subgraph's values own theirs), then
 * the node's outputs from the subgraphs'. Changes the subgraphs, which
 * belong to g. An If whose condition is a constant infers the branch it
 * takes alone; one whose condition is not known yet sets aside a branch
 * that does not infer for these shapes, if the other does (the planner
 * does the same, and a run that takes it fails).
 */
static int ctrl_infer(struct graph *g, int n, const struct op_tensor *in, struct op_tensor *out)
{
	const struct op_tensor *sub_out[2] = { NULL, NULL };
	struct op_tensor *outs[2] = { NULL, NULL };
	struct ctrl_layout l;
	int64_t trip = CTRL_TRIP_UNKNOWN;
	int branch = -1, failed = -1, err[2] = { 0, 0 }, i, ret;
	char why[512] = "";

	ret = ctrl_layout(g, n, &l);
	if (ret == 0 && l.kind == CTRL_IF && in[0].data && op_tensor_present(&in[0]) &&
	    in[0].dtype == CEP_DTYPE_BOOL)
		branch = *(const unsigned char *)in[0].data ? 0 : 1;
	for (i = 0; ret == 0 && i < l.n_subs; i++) {
		if (branch >= 0 && i != branch)
			continue;
		outs[i] = calloc((size_t)l.sub[i]->n_outputs + 1, sizeof(*outs[i]));
		if (!outs[i]) {
			ret = cep__set_error(CEP_ENOMEM, "out of memory inferring shapes");
			break;
		}
		sub_out[i] = outs[i];
		err[i] = sub_infer(g, n, &l, i, in, outs[i]);
		if (err[i] == 0)
			continue;
		/* Only an If's branch, while its condition is not known, may. */
		if (l.kind != CTRL_IF || branch >= 0 || !ctrl_branch_may_fail(err[i])) {
			ret = err[i];
			break;
		}
		if (failed >= 0) {
			/* Neither branch infers: the first one's error. */
			ret = cep__set_error(err[failed], "%s", why);
			break;
		}
		failed = i;
		snprintf(why, sizeof(why), "%s", cep_last_error());
		cep__clear_error();
	}
	if (ret == 0 && failed >= 0)
		branch = 1 - failed;
	if (ret == 0 && l.kind == CTRL_LOOP)
		trip = loop_trip(g, n, &l, in);
	if (ret == 0)
		ret = ctrl_outputs(g, n, &l, in, sub_out, branch, trip, out);
	if (ret == 0)
		ret = outputs_check(g, n, out);
	free(outs[0]);
	free(outs[1]);
	return ret;
}

int shape_infer_graph(struct graph *g)
{
	struct op_tensor *in = NULL, *out = NULL;
	int max_in = 1, max_out = 1;
	int k, i, ret;

	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		if (node->n_in > max_in)
			max_in = node->n_in;
		if (node->n_out > max_out)
			max_out = node->n_out;
	}
	in = calloc((size_t)max_in, sizeof(*in));
	out = calloc((size_t)max_out, sizeof(*out));
	if (!in || !out) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory inferring shapes");
		goto out;
	}
	for (k = 0; k < g->n_order; k++) {
		int n = g->order[k];
		const struct graph_node *node = &g->nodes[n];

		for (i = 0; i < node->n_in; i++)
			load_input(g, node->in[i], &in[i]);
		if (node->schema->flags & OP_CONTROL)
			ret = ctrl_infer(g, n, in, out);
		else
			ret = shape_infer_node(g, n, in, out);
		if (ret < 0)
			goto out;
		for (i = 0; i < node->n_out; i++) {
			int v = node->out[i];

			if (v < 0)
				continue;
			out[i].data = NULL;
			g->values[v].t = out[i];
		}
	}
	ret = 0;
out:
	free(in);
	free(out);
	return ret;
}

void shape_binding_reset(struct shape_binding *b)
{
	int i;

	for (i = 0; i < b->n; i++) {
		b->vals[i] = -1;
		b->from[i] = -1;
	}
}

int shape_bind_input(const struct graph *g, int v, int rank, const int64_t *dims,
		     struct shape_binding *b)
{
	const struct graph_value *val = &g->values[v];
	int i;

	if (rank < 0 || rank > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "input '%s': rank %d is out of range 0..%d",
				      val->name, rank, CEP_MAX_RANK);
	if (val->t.rank >= 0 && rank != val->t.rank)
		return cep__set_error(CEP_ESHAPE, "input '%s': rank is %d, the model wants %d",
				      val->name, rank, val->t.rank);
	for (i = 0; i < rank; i++) {
		int64_t want = val->t.rank >= 0 ? val->t.dims[i] : OP_DIM_UNKNOWN;
		int s;

		if (dims[i] < 0)
			return cep__set_error(CEP_ESHAPE, "input '%s': dimension %d is %" PRId64,
					      val->name, i, dims[i]);
		if (op_dim_fixed(want) && dims[i] != want)
			return cep__set_error(CEP_ESHAPE, "input '%s': dimension %d is %" PRId64
					      ", the model wants %" PRId64,
					      val->name, i, dims[i], want);
		if (!op_dim_symbolic(want))
			continue;
		s = op_dim_symbol(want);
		if (s >= b->n)
			continue;
		if (b->vals[s] < 0) {
			b->vals[s] = dims[i];
			b->from[s] = v;
		} else if (b->vals[s] != dims[i]) {
			return cep__set_error(CEP_ESHAPE, "input '%s': dimension %d is %" PRId64
					      ", but '%s' is %" PRId64 " from input '%s'",
					      val->name, i, dims[i], g->syms[s], b->vals[s],
					      g->values[b->from[s]].name);
		}
	}
	return 0;
}
