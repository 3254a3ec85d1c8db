/*
 * plan_ctrl.c — planning control flow (engine/plan.h, top): which
 * subplans an If, Loop or Scan node needs for the shapes it is given, and
 * its outputs once plan.c has built them.
 *
 * Every subplan is built for the inputs the node gives its subgraph
 * (engine/ctrl.h): a Loop body's iteration number and condition come with
 * their values (the iteration planned, and true, which the condition
 * always is when the body runs), outer-scope values with theirs when the
 * plan knows them, carried values and scan slices without. So a body's
 * shapes may depend on its iteration number (a Slice from i to i + 1):
 * that body is planned once per iteration, which needs the trip count
 * while planning. Each output's shape must be known when the plan is
 * built:
 *   If: the branch's, when the condition is known while planning (a
 *     constant, or learnt from the run's small inputs as plan_values.c
 *     learns a Reshape's target); else both branches are planned and must
 *     agree, or the condition is learnt after all. A branch that cannot be
 *     planned for these shapes (an unreachable one, often) is kept as an
 *     error that a run taking it fails with.
 *   Loop: carried values keep their shapes through an iteration (refused
 *     otherwise); scan outputs need the trip count, known from M and a
 *     condition that the body passes through unchanged or makes constant.
 *   Scan: states keep their shapes (the specification demands it); the
 *     length is the scan inputs'.
 * What the run must read back (If's condition, a Loop's M and conditions)
 * is noted for the executor (engine/exec_ctrl.c), and so is that the plan
 * waits on the device then.
 *
 * Called by the build's driver (engine/plan.c) through plan_priv.h; calls
 * engine/ctrl.c and plan_values.c, never plan.c.
 */
#include "engine/plan_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The condition a Loop body is given: it runs only while it is true. */
static const unsigned char cond_true = 1;

static int nomem(void)
{
	return cep__set_error(CEP_ENOMEM, "out of memory planning control flow");
}

static bool same_shape(const struct op_tensor *a, const struct op_tensor *b)
{
	int d;

	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (d = 0; d < a->rank; d++) {
		if (a->dims[d] != b->dims[d])
			return false;
	}
	return true;
}

static void dims_text(const struct plan_builder *b, const struct op_tensor *t, char *buf,
		      size_t len)
{
	const struct graph *root = graph_root(b->env->g);

	op_dims_format(t, root->syms, root->n_syms, buf, len);
}

/* Asks for the subplan of subgraph which (for iteration iter of a Loop's
 * body). */
static int request(struct plan_builder *b, struct plan_ctrl_build *cb, int which, int iter)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[cb->n];
	struct plan_ctrl *c = cb->c;
	const struct graph *sg = c->l.sub[which];
	int formal = sg->n_inputs - sg->n_outer, j, ret;

	free(cb->in);
	free(cb->bound);
	cb->in = calloc((size_t)sg->n_inputs + 1, sizeof(*cb->in));
	cb->bound = calloc((size_t)sg->n_inputs + 1, sizeof(*cb->bound));
	if (!cb->in || !cb->bound)
		return nomem();
	ret = ctrl_sub_inputs(g, cb->n, &c->l, which, b->in, cb->in);
	if (ret < 0)
		return ret;
	/* The model's constants are read where the session put them. */
	for (j = 0; j < sg->n_outer; j++) {
		int v = node->in[c->l.gs[which]->slot[j]];

		if (b->env->const_dev && (g->values[v].flags & GRAPH_VALUE_CONST))
			cb->bound[formal + j] = b->env->const_dev[v];
	}
	if (c->l.kind == CTRL_LOOP) {
		cb->iter_value = iter;
		cb->in[0].data = &cb->iter_value;
		cb->in[1].data = (void *)&cond_true;
	}
	cb->env = (struct plan_env){
		.g = sg,
		.be = b->env->be,
		.stream = b->env->stream,
		.const_dev = NULL,
		.max_block_bytes = b->env->max_block_bytes,
		.call_flags = b->env->call_flags,
		.inputs_stay = true,
		.input_dev = cb->bound,
	};
	cb->want = true;
	cb->which = which;
	cb->iter = iter;
	return 0;
}

/* Appends sub to c's plans. */
static int plan_add(struct plan_ctrl *c, struct plan *sub, int cap)
{
	if (c->n_plans == cap)
		return cep__set_error(CEP_EINTERNAL, "a control step holds %d subplans", cap);
	c->plans[c->n_plans++] = sub;
	return 0;
}

/* ------------------------------------------------------------------- Loop */

/* Whether value v's data is known while planning; *x gets it (an int64
 * or a bool). */
static bool known_int(const struct plan_builder *b, int v, int64_t *x)
{
	const struct op_tensor *t;

	if (v < 0 || !b->host[v])
		return false;
	t = &b->vals[v];
	*x = t->dtype == CEP_DTYPE_BOOL ? *(const unsigned char *)b->host[v] != 0
					: *(const int64_t *)b->host[v];
	return true;
}

/* What is known of a Loop's M, initial condition and body condition. */
static void loop_know(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	const struct graph_node *node = &b->env->g->nodes[cb->n];
	struct plan_ctrl *c = cb->c;
	int64_t x;
	int outer;

	c->has_m = c->l.n_explicit > 0 && node->in[0] >= 0;
	c->m = CTRL_TRIP_UNKNOWN;
	if (c->has_m && known_int(b, node->in[0], &x))
		c->m = x < 0 ? 0 : x;
	c->cond0 = 1;
	if (c->l.n_explicit > 1 && node->in[1] >= 0)
		c->cond0 = known_int(b, node->in[1], &x) ? (int)x : -1;
	c->cond = ctrl_loop_cond(c->l.sub[0], &outer, &c->cond_value);
	if (c->cond == CTRL_COND_OUTER) {
		int v = node->in[c->l.gs[0]->slot[outer]];

		c->cond = known_int(b, v, &x) ? CTRL_COND_CONST : CTRL_COND_COMPUTED;
		c->cond_value = c->cond == CTRL_COND_CONST && x;
	}
}

/* The trip count, learning M and the initial condition from the run where
 * they are not known yet and can be. *why says what was in the way of an
 * unknown one. */
static int loop_trip(struct plan_builder *b, struct plan_ctrl_build *cb, int64_t *trip,
		     const char **why)
{
	const struct graph_node *node = &b->env->g->nodes[cb->n];
	struct plan_ctrl *c = cb->c;
	struct plan_unknowable w;
	bool learnt;
	int ret;

	*why = "";
	if (c->has_m && c->m == CTRL_TRIP_UNKNOWN) {
		ret = plan__value_learn(b, cb->k, node->in[0], &learnt, &w);
		if (ret < 0)
			return ret;
		if (!learnt)
			*why = ": its trip count M is known only at run time";
	}
	if (c->cond0 < 0) {
		ret = plan__value_learn(b, cb->k, node->in[1], &learnt, &w);
		if (ret < 0)
			return ret;
		if (!learnt)
			*why = ": its initial condition is known only at run time";
	}
	loop_know(b, cb);
	plan__inputs_fill(b, cb->n, b->in);
	if (c->cond == CTRL_COND_COMPUTED)
		*why = ": its body computes the condition to go on";
	*trip = ctrl_loop_trip(c->has_m, c->m, c->cond0, c->cond, c->cond_value);
	return 0;
}

/* Whether subplan sub reads the values of its input i (they key it). */
static bool keyed_by(const struct plan *sub, int i)
{
	int k;

	for (k = 0; k < sub->n_keys; k++) {
		if (sub->keys[k].input == i)
			return true;
	}
	return false;
}

/* Iteration 0's body plan: the carried values must keep their shapes; a
 * plan keyed by the iteration number asks for one per iteration. */
static int loop_first(struct plan_builder *b, struct plan_ctrl_build *cb, struct plan *sub)
{
	const struct graph *g = b->env->g;
	struct plan_ctrl *c = cb->c;
	char was[160], now[160];
	const char *why;
	int64_t trip;
	int k, ret;

	for (k = 0; k < c->l.n_state; k++) {
		const struct op_tensor *in = &sub->inputs[2 + k].t, *out = &sub->outputs[1 + k].t;

		if (in->dtype != out->dtype)
			return graph_node_fail(g, cb->n, CEP_EDTYPE, "loop-carried value %d is %s "
					       "going into the body and %s coming out", k,
					       cep_dtype_name(in->dtype), cep_dtype_name(out->dtype));
		if (same_shape(in, out))
			continue;
		dims_text(b, in, was, sizeof(was));
		dims_text(b, out, now, sizeof(now));
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "loop-carried value %d is %s "
				       "going into the body and %s coming out; cudaep runs loops "
				       "whose carried values keep their shapes", k, was, now);
	}
	if (!keyed_by(sub, 0))
		return 0;
	ret = loop_trip(b, cb, &trip, &why);
	if (ret < 0)
		return ret;
	if (trip < 0)
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "the body's shapes depend on "
				       "the iteration number, and how many iterations it runs is "
				       "not known while planning%s", why);
	if (trip > PLAN_CTRL_MAX_PLANS)
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "the body's shapes depend on "
				       "the iteration number, and it runs %" PRId64 " iterations: "
				       "cudaep plans such a body per iteration, %d at most", trip,
				       PLAN_CTRL_MAX_PLANS);
	c->per_iter = true;
	c->trip = trip;
	return trip > 1 ? request(b, cb, 0, 1) : 0;
}

/* The plan of a later iteration must give the outputs of the first. */
static int loop_later(struct plan_builder *b, struct plan_ctrl_build *cb, struct plan *sub)
{
	const struct graph *g = b->env->g;
	const struct plan *first = cb->c->plans[0];
	char was[160], now[160];
	int k;

	for (k = 0; k < sub->n_outputs; k++) {
		if (same_shape(&first->outputs[k].t, &sub->outputs[k].t))
			continue;
		dims_text(b, &first->outputs[k].t, was, sizeof(was));
		dims_text(b, &sub->outputs[k].t, now, sizeof(now));
		return graph_node_fail(g, cb->n, CEP_ESHAPE, "the body's output %d is %s %s in "
				       "iteration 0 and %s %s in iteration %d", k,
				       cep_dtype_name(first->outputs[k].t.dtype), was,
				       cep_dtype_name(sub->outputs[k].t.dtype), now, cb->iter);
	}
	return cb->iter + 1 < cb->c->trip ? request(b, cb, 0, cb->iter + 1) : 0;
}

/* The outputs of a Loop: its trip count is needed for scan outputs (and
 * was for a body planned per iteration); one that never ends is refused. */
static int loop_end(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	const struct graph *g = b->env->g;
	struct plan_ctrl *c = cb->c;
	const struct op_tensor *body[1];
	struct op_tensor *outs;
	const char *why = "";
	int64_t trip;
	int k, ret;

	if (c->l.n_scan_out > 0 || c->per_iter) {
		ret = loop_trip(b, cb, &trip, &why);
		if (ret < 0)
			return ret;
	} else {
		loop_know(b, cb);
		trip = ctrl_loop_trip(c->has_m, c->m, c->cond0, c->cond, c->cond_value);
	}
	if (trip == CTRL_TRIP_ENDLESS)
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "the loop never ends: it has "
				       "no trip count M, and its condition stays true");
	if (c->l.n_scan_out > 0 && trip < 0)
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "its scan outputs have a row per "
				       "iteration, and how many iterations it runs is known only at "
				       "run time%s", why);
	c->trip = trip;
	outs = calloc((size_t)c->plans[0]->n_outputs + 1, sizeof(*outs));
	if (!outs)
		return nomem();
	for (k = 0; k < c->plans[0]->n_outputs; k++)
		outs[k] = c->plans[0]->outputs[k].t;
	body[0] = outs;
	ret = ctrl_outputs(g, cb->n, &c->l, b->in, body, -1, trip >= 0 ? trip : OP_DIM_UNKNOWN,
			   b->out);
	free(outs);
	c->uses_iter = c->l.sub[0]->values[c->l.sub[0]->inputs[0]].n_uses > 0;
	/* M, the conditions and the iteration numbers cross to and fro. */
	c->waits = true;
	return ret;
}

/* --------------------------------------------------------------------- If */

static int if_take(struct plan_builder *b, struct plan_ctrl_build *cb, int ret,
		   struct plan *sub)
{
	struct plan_ctrl *c = cb->c;
	int which = cb->which;

	if (ret < 0) {
		if (c->branch >= 0 || !ctrl_branch_may_fail(ret))
			return ret;
		c->unplanned[which] = strdup(cep_last_error());
		c->unplanned_err[which] = ret;
		if (!c->unplanned[which])
			return nomem();
		cep__clear_error();
	} else {
		c->plans[which] = sub;
	}
	if (which == 0 && c->branch < 0)
		return request(b, cb, 1, 0);
	if (!c->plans[0] && !c->plans[1])
		return cep__set_error(c->unplanned_err[0], "%s", c->unplanned[0]);
	return 0;
}

/* The outputs of If: the branch taken's, or what both give. When they
 * differ, the condition is learnt from the run if it can be. */
static int if_end(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[cb->n];
	struct plan_ctrl *c = cb->c;
	struct op_tensor *outs[2] = { NULL, NULL };
	const struct op_tensor *sub_out[2];
	struct plan_unknowable why = { -1, -1 };
	int branch = c->branch, i, k, ret = 0, unfixed;
	bool learnt;

	if (branch < 0 && (!c->plans[0] || !c->plans[1]))
		branch = c->plans[0] ? 0 : 1;
	for (i = 0; i < 2; i++) {
		outs[i] = calloc((size_t)node->n_out + 1, sizeof(*outs[i]));
		if (!outs[i]) {
			ret = nomem();
			goto out;
		}
		for (k = 0; c->plans[i] && k < node->n_out; k++)
			outs[i][k] = c->plans[i]->outputs[k].t;
		sub_out[i] = outs[i];
	}
	ret = ctrl_outputs(g, cb->n, &c->l, b->in, sub_out, branch, OP_DIM_UNKNOWN, b->out);
	if (ret == 0)
		ret = plan__outputs_unfixed(b, cb->n, &unfixed);
	if (ret < 0 || unfixed < 0 || c->branch >= 0 || branch >= 0)
		goto out;
	/* The branches' shapes differ: the run's condition decides them. */
	ret = plan__value_learn(b, cb->k, node->in[0], &learnt, &why);
	if (ret < 0)
		goto out;
	if (!learnt) {
		ret = plan__unfixed_refuse(b, cb->n, unfixed, &why);
		goto out;
	}
	plan__inputs_fill(b, cb->n, b->in);
	c->branch = *(const unsigned char *)b->in[0].data ? 0 : 1;
	cb->drop = c->plans[1 - c->branch];
	c->plans[1 - c->branch] = NULL;
	ret = ctrl_outputs(g, cb->n, &c->l, b->in, sub_out, c->branch, OP_DIM_UNKNOWN, b->out);
out:
	if (ret == 0 && c->branch < 0)
		c->waits = true;
	free(outs[0]);
	free(outs[1]);
	return ret;
}

/* ------------------------------------------------------------------- Scan */

/* Scan-8's sequence_lens, when given, must be the full length of every
 * sequence: shorter sequences (outputs padded) are not supported. */
static int scan_lens(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[cb->n];
	const struct plan_ctrl *c = cb->c;
	struct plan_unknowable why;
	int64_t numel, i;
	bool learnt;
	int ret;

	if (!c->l.batch || node->in[0] < 0)
		return 0;
	ret = plan__value_learn(b, cb->k, node->in[0], &learnt, &why);
	if (ret < 0)
		return ret;
	if (!learnt)
		return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "sequence_lens is known only "
				       "at run time; cudaep runs Scan-8 with whole sequences");
	numel = op_dims_product(&b->vals[node->in[0]], 0, b->vals[node->in[0]].rank);
	for (i = 0; i < numel; i++) {
		int64_t len = ((const int64_t *)b->host[node->in[0]])[i];

		if (len != c->len)
			return graph_node_fail(g, cb->n, CEP_EUNSUPPORTED, "sequence_lens[%" PRId64
					       "] is %" PRId64 " of %" PRId64 "; cudaep runs Scan-8 "
					       "with whole sequences", i, len, c->len);
	}
	return 0;
}

static int scan_end(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	const struct graph *g = b->env->g;
	struct plan_ctrl *c = cb->c;
	const struct plan *body = c->plans[0];
	const struct op_tensor *sub_out[1];
	struct op_tensor *outs;
	char was[160], now[160];
	int n_axes = c->l.n_scan_in + c->l.n_scan_out, k, ret;

	for (k = 0; k < c->l.n_state; k++) {
		const struct op_tensor *in = &body->inputs[k].t, *out = &body->outputs[k].t;

		if (in->dtype == out->dtype && !same_shape(in, out)) {
			dims_text(b, in, was, sizeof(was));
			dims_text(b, out, now, sizeof(now));
			return graph_node_fail(g, cb->n, CEP_ESHAPE, "state %d is %s going into the "
					       "body and %s coming out; a state keeps its shape", k,
					       was, now);
		}
	}
	ret = ctrl_scan_length(g, cb->n, &c->l, b->in, &c->len);
	if (ret < 0)
		return ret;
	if (!op_dim_fixed(c->len))
		return graph_node_fail(g, cb->n, CEP_EINTERNAL, "the scan length is not fixed");
	c->batch = c->l.batch ? b->in[c->l.first_state].dims[0] : 1;
	ret = scan_lens(b, cb);
	if (ret < 0)
		return ret;
	c->axis = calloc((size_t)n_axes + 1, sizeof(*c->axis));
	c->reverse = calloc((size_t)n_axes + 1, sizeof(*c->reverse));
	if (!c->axis || !c->reverse)
		return nomem();
	for (k = 0; k < n_axes && ret == 0; k++) {
		bool out = k >= c->l.n_scan_in;
		int i = out ? k - c->l.n_scan_in : k;
		int rank = out ? body->outputs[c->l.n_state + i].t.rank + 1 + c->l.batch
			       : b->in[c->l.first_state + c->l.n_state + i].rank;

		ret = ctrl_scan_axis(g, cb->n, &c->l, out, i, rank, &c->axis[k], &c->reverse[k]);
	}
	if (ret < 0)
		return ret;
	outs = calloc((size_t)body->n_outputs + 1, sizeof(*outs));
	if (!outs)
		return nomem();
	for (k = 0; k < body->n_outputs; k++)
		outs[k] = body->outputs[k].t;
	sub_out[0] = outs;
	ret = ctrl_outputs(g, cb->n, &c->l, b->in, sub_out, -1, OP_DIM_UNKNOWN, b->out);
	free(outs);
	return ret;
}

/* -------------------------------------------------------------- the steps */

int plan__ctrl_begin(struct plan_builder *b, int k, int n, struct plan_ctrl **out,
		     struct plan_ctrl_build *cb)
{
	const struct graph *g = b->env->g;
	struct plan_ctrl *c;
	int ret;

	memset(cb, 0, sizeof(*cb));
	cb->k = k;
	cb->n = n;
	c = calloc(1, sizeof(*c));
	*out = c;
	if (!c)
		return nomem();
	cb->c = c;
	c->branch = -1;
	c->trip = CTRL_TRIP_UNKNOWN;
	c->batch = 1;
	ret = ctrl_layout(g, n, &c->l);
	if (ret < 0)
		return ret;
	c->plans = calloc(c->l.kind == CTRL_LOOP ? PLAN_CTRL_MAX_PLANS : 2, sizeof(*c->plans));
	if (!c->plans)
		return nomem();
	switch (c->l.kind) {
	case CTRL_IF:
		c->n_plans = 2;
		/* The condition's type is checked first (request()). */
		ret = request(b, cb, 0, 0);
		if (ret == 0 && b->in[0].data) {
			c->branch = *(const unsigned char *)b->in[0].data ? 0 : 1;
			ret = request(b, cb, c->branch, 0);
		}
		return ret;
	case CTRL_LOOP:
		ret = request(b, cb, 0, 0);
		if (ret == 0)
			loop_know(b, cb);
		return ret;
	case CTRL_SCAN:
		return request(b, cb, 0, 0);
	}
	return 0;
}

int plan__ctrl_take(struct plan_builder *b, struct plan_ctrl_build *cb, int ret,
		    struct plan *sub)
{
	struct plan_ctrl *c = cb->c;

	cb->want = false;
	if (c->l.kind == CTRL_IF)
		return if_take(b, cb, ret, sub);
	if (ret < 0)
		return ret;
	ret = plan_add(c, sub, c->l.kind == CTRL_LOOP ? PLAN_CTRL_MAX_PLANS : 1);
	if (ret < 0) {
		cb->drop = sub;
		return ret;
	}
	if (c->l.kind == CTRL_SCAN)
		return 0;
	return cb->iter == 0 ? loop_first(b, cb, sub) : loop_later(b, cb, sub);
}

int plan__ctrl_end(struct plan_builder *b, struct plan_ctrl_build *cb)
{
	struct plan_ctrl *c = cb->c;
	struct plan_unknowable why = { -1, -1 };
	int unfixed, i, ret = 0;

	switch (c->l.kind) {
	case CTRL_IF:
		ret = if_end(b, cb);
		break;
	case CTRL_LOOP:
		ret = loop_end(b, cb);
		break;
	case CTRL_SCAN:
		ret = scan_end(b, cb);
		break;
	}
	if (ret == 0)
		ret = plan__outputs_unfixed(b, cb->n, &unfixed);
	if (ret == 0 && unfixed >= 0)
		ret = plan__unfixed_refuse(b, cb->n, unfixed, &why);
	if (ret < 0)
		return ret;
	for (i = 0; i < c->n_plans; i++)
		c->waits |= c->plans[i] && c->plans[i]->waits;
	return 0;
}

int plan__ctrl_learn(struct plan_builder *b, struct plan_ctrl_build *cb, bool *again)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[cb->n];
	const struct graph *sg = cb->c->l.sub[cb->which];
	const int *slot = cb->c->l.gs[cb->which]->slot;
	int formal = sg->n_inputs - sg->n_outer, j, ret;
	struct plan_unknowable why;
	bool learnt;

	*again = false;
	for (j = 0; j < sg->n_outer; j++) {
		int v = node->in[slot[j]];

		if (cb->in[formal + j].data ||
		    !op_dtype_in(b->vals[v].dtype, OP_DTS_INT | OP_DT(CEP_DTYPE_BOOL)))
			continue;
		ret = plan__value_learn(b, cb->k, v, &learnt, &why);
		if (ret < 0)
			return ret;
		if (!learnt)
			continue;
		cb->in[formal + j].data = b->host[v];
		*again = true;
	}
	plan__inputs_fill(b, cb->n, b->in);
	return 0;
}

void plan__ctrl_build_close(struct plan_ctrl_build *cb)
{
	free(cb->in);
	free(cb->bound);
	cb->in = NULL;
	cb->bound = NULL;
}
