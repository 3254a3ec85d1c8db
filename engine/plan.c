/*
 * plan.c — building execution plans (engine/plan.h): the driver of a
 * build, which walks the graph once with every dimension fixed, and the
 * plan's own life (its signature hash, plan_free()).
 *
 * Each node is either evaluated right here on the host (its inputs are
 * all known: the model's constants, the inputs' shapes for Shape and
 * Size, earlier evaluations; and its result is small) or becomes a step
 * with a kernel of the session's backend. A node whose output shape still
 * depends on values nobody knows yet makes the build look back for where
 * they come from (engine/plan_values.c): if that is a chain of small nodes
 * over small graph inputs, those inputs are read from the run, the chain
 * is evaluated here, and the inputs become keys of the plan. Then every
 * value a step, a copy or the caller touches gets a home
 * (engine/plan_layout.c): the model's constants already have one (the
 * session uploaded them), everything else is placed in the plan's one
 * block by lifetime (engine/plan_mem.c). The cache of built plans is
 * engine/plan_cache.c.
 */
#include "engine/plan_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/shape.h"

/* ------------------------------------------------------------------ build */

/* Frees a control step's subplans and what it holds. */
static void ctrl_free(struct plan_ctrl *c, struct backend *be)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < c->n_plans; i++)
		plan_free(c->plans[i], be);
	free(c->plans);
	free(c->unplanned[0]);
	free(c->unplanned[1]);
	free(c->axis);
	free(c->reverse);
	free(c);
}


static void build_close(struct plan_builder *b, int n_values)
{
	int v;

	if (b->host && b->owned) {
		for (v = 0; v < n_values; v++) {
			if (b->owned[v])
				free(b->host[v]);
		}
	}
	free(b->vals);
	free(b->host);
	free(b->owned);
	free(b->given);
	free(b->keyed);
	free(b->mark);
	free(b->node_mark);
	free(b->made_by);
	free(b->last);
	free(b->home);
	free(b->bound);
	free(b->offset);
	free(b->in);
	free(b->out);
	free(b->ein);
	free(b->eout);
}

static int build_init(struct plan_builder *b, const struct plan_env *env, struct plan *p)
{
	const struct graph *g = env->g;
	size_t nv = (size_t)g->n_values + 1;
	int max_in = 1, max_out = 1, k, v;

	memset(b, 0, sizeof(*b));
	b->env = env;
	b->p = p;
	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		if (node->n_in > max_in)
			max_in = node->n_in;
		if (node->n_out > max_out)
			max_out = node->n_out;
	}
	b->vals = calloc(nv, sizeof(*b->vals));
	b->host = calloc(nv, sizeof(*b->host));
	b->owned = calloc(nv, sizeof(*b->owned));
	b->given = calloc(nv, sizeof(*b->given));
	b->keyed = calloc(nv, sizeof(*b->keyed));
	b->mark = calloc(nv, sizeof(*b->mark));
	b->node_mark = calloc((size_t)g->n_nodes + 1, sizeof(*b->node_mark));
	b->made_by = malloc(nv * sizeof(*b->made_by));
	b->last = malloc(nv * sizeof(*b->last));
	b->home = calloc(nv, sizeof(*b->home));
	b->bound = calloc(nv, sizeof(*b->bound));
	b->offset = calloc(nv, sizeof(*b->offset));
	b->in = calloc((size_t)max_in, sizeof(*b->in));
	b->out = calloc((size_t)max_out, sizeof(*b->out));
	b->ein = calloc((size_t)max_in, sizeof(*b->ein));
	b->eout = calloc((size_t)max_out, sizeof(*b->eout));
	if (!b->vals || !b->host || !b->owned || !b->given || !b->keyed || !b->mark ||
	    !b->node_mark || !b->made_by || !b->last || !b->home || !b->bound || !b->offset ||
	    !b->in ||
	    !b->out || !b->ein || !b->eout)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	for (v = 0; v < g->n_values; v++) {
		b->made_by[v] = -1;
		b->last[v] = -1;
		if (g->values[v].flags & GRAPH_VALUE_CONST) {
			b->vals[v] = g->values[v].t;
			b->host[v] = g->values[v].t.data;
		}
	}
	for (k = 0; env->input_dev && k < g->n_inputs; k++)
		b->bound[g->inputs[k]] = env->input_dev[k];
	return 0;
}

/* Evaluates node n here if its inputs are known and its outputs small.
 * Returns 1 when it did, 0 when n must become a step. */
static int fold_here(struct plan_builder *b, int n)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	bool shape_only = node->schema->flags & OP_SHAPE_ONLY;
	const struct op_kernel *k;
	size_t total = 0;
	int i, ret;

	if (node->schema->flags & OP_NO_FOLD)
		return 0;
	for (i = 0; i < node->n_in; i++) {
		if (node->in[i] >= 0 && !b->in[i].data && !shape_only)
			return 0;
	}
	for (i = 0; i < node->n_out; i++)
		total += node->out[i] >= 0 ? op_tensor_bytes(&b->out[i]) : 0;
	if (total > PLAN_FOLD_MAX_BYTES)
		return 0;
	if (op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
			   op_kernel_dtype(node->schema, b->in, node->n_in, b->out, node->n_out),
			   &k) < 0) {
		cep__clear_error();
		return 0;
	}
	ret = exec_host_eval(&node->op, k, b->in, node->n_in, b->out, node->n_out);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v < 0) {
			free(b->out[i].data);
			continue;
		}
		b->host[v] = b->out[i].data;
		b->owned[v] = true;
	}
	b->p->folded++;
	return 1;
}

/* Folds If node n here when its condition and the values its branch
 * reads are known (engine/plan_eval.c). Returns 1 when it did. */
static int fold_if(struct plan_builder *b, int n)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	bool done;
	int i, ret;

	if (!plan__if_foldable(b, n))
		return 0;
	ret = plan__if_fold(b, n, b->in, b->out, &done);
	if (ret < 0 || !done)
		return ret;
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v < 0) {
			free(b->out[i].data);
			continue;
		}
		b->vals[v] = b->out[i];
		b->vals[v].data = NULL;
		b->host[v] = b->out[i].data;
		b->owned[v] = true;
	}
	b->p->folded++;
	return 1;
}

/* Makes control node n (at position k of the order) a step: builds the
 * subplans engine/plan_ctrl.c asks for (once more, when a subplan's shape
 * needed an integer of this graph that the run can tell), then lets it
 * settle the node's outputs. The step is counted first, so that its plan
 * frees what it holds whatever happens. */
static int build_ctrl(struct plan_builder *b, int k, int n)
{
	static const int64_t no_sig[1] = { 0 };
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	struct plan *p = b->p;
	struct plan_step *st;
	struct plan_ctrl_build cb;
	int i, ret;

	plan__inputs_fill(b, n, b->in);
	ret = fold_if(b, n);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	st = &p->steps[p->n_steps];
	st->node = n;
	st->kernel = NULL;
	p->n_steps++;
	p->ctrl_steps++;
	ret = plan__ctrl_begin(b, k, n, &st->ctrl, &cb);
	while (ret == 0 && cb.want) {
		struct plan *sub = NULL;
		bool again = false;

		cep__clear_error();
		ret = plan_build(&cb.env, cb.in, no_sig, 0, &sub);
		if (ret == CEP_EUNSUPPORTED) {
			char why[512];

			snprintf(why, sizeof(why), "%s", cep_last_error());
			ret = plan__ctrl_learn(b, &cb, &again);
			if (ret == 0 && again)
				ret = plan_build(&cb.env, cb.in, no_sig, 0, &sub);
			else if (ret == 0)
				ret = cep__set_error(CEP_EUNSUPPORTED, "%s", why);
		}
		ret = plan__ctrl_take(b, &cb, ret, sub);
	}
	if (ret == 0)
		ret = plan__ctrl_end(b, &cb);
	plan_free(cb.drop, b->env->be);
	plan__ctrl_build_close(&cb);
	if (ret < 0)
		return ret;
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v < 0)
			continue;
		b->vals[v] = b->out[i];
		b->vals[v].data = NULL;
	}
	return 0;
}

/* Infers node n (at position k of the order) with fixed shapes, then folds
 * it or makes it a step. */
static int build_node(struct plan_builder *b, int k, int n)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	struct plan *p = b->p;
	struct plan_step *st;
	struct plan_unknowable why;
	int unfixed, i, ret;

	if (node->schema->flags & OP_CONTROL)
		return build_ctrl(b, k, n);
	plan__inputs_fill(b, n, b->in);
	ret = shape_infer_node(g, n, b->in, b->out);
	if (ret < 0)
		return ret;
	ret = plan__outputs_unfixed(b, n, &unfixed);
	if (ret < 0)
		return ret;
	if (unfixed >= 0) {
		ret = plan__values_resolve(b, k, n, &unfixed, &why);
		if (ret < 0)
			return ret;
		if (unfixed >= 0)
			return plan__unfixed_refuse(b, n, unfixed, &why);
	}
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v < 0)
			continue;
		b->vals[v] = b->out[i];
		b->vals[v].data = NULL;
	}
	ret = fold_here(b, n);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	st = &p->steps[p->n_steps];
	st->node = n;
	cep__clear_error();
	ret = op_kernel_find(node->schema, node->op.opset, b->env->be->kind,
			     op_kernel_dtype(node->schema, b->in, node->n_in, b->out, node->n_out),
			     &st->kernel);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	p->n_steps++;
	return 0;
}

/* Drops the steps whose results planning has computed after all (for a
 * shape further on), so that they become plan constants, then records
 * which step makes and which step last reads each value. */
static void build_lifetimes(struct plan_builder *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	int s, kept = 0, i;

	for (s = 0; s < p->n_steps; s++) {
		const struct graph_node *node = &g->nodes[p->steps[s].node];
		bool known = true;

		for (i = 0; i < node->n_out; i++)
			known &= node->out[i] < 0 || b->host[node->out[i]] != NULL;
		if (!known) {
			p->steps[kept++] = p->steps[s];
		} else if (p->steps[s].ctrl) {
			/* An If a shape further on had evaluated here. */
			ctrl_free(p->steps[s].ctrl, b->env->be);
			p->ctrl_steps--;
		}
	}
	p->n_steps = kept;
	for (s = 0; s < p->n_steps; s++) {
		const struct plan_ctrl *c = p->steps[s].ctrl;

		for (i = 0; c && i < c->n_plans; i++) {
			if (c->plans[i])
				p->ctrl_bytes += c->plans[i]->block_bytes + c->plans[i]->ctrl_bytes;
		}
		p->waits |= c && c->waits;
	}
	for (s = 0; s < p->n_steps; s++) {
		const struct graph_node *node = &g->nodes[p->steps[s].node];

		for (i = 0; i < node->n_in; i++) {
			if (node->in[i] >= 0)
				b->last[node->in[i]] = s;
		}
		for (i = 0; i < node->n_out; i++) {
			if (node->out[i] >= 0)
				b->made_by[node->out[i]] = s;
		}
	}
}

/* Copies the values of the graph inputs the build read into the plan's
 * keys. */
static int build_keys(struct plan_builder *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	size_t total = 0;
	int i, n = 0;

	for (i = 0; i < g->n_inputs; i++) {
		if (b->keyed[g->inputs[i]]) {
			n++;
			total += op_tensor_bytes(&b->vals[g->inputs[i]]);
		}
	}
	if (n == 0)
		return 0;
	p->keys = calloc((size_t)n, sizeof(*p->keys));
	p->key_data = malloc(total + 1);
	if (!p->keys || !p->key_data)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	total = 0;
	for (i = 0; i < g->n_inputs; i++) {
		int v = g->inputs[i];
		struct plan_key *key = &p->keys[p->n_keys];

		if (!b->keyed[v])
			continue;
		key->input = i;
		key->offset = total;
		key->bytes = op_tensor_bytes(&b->vals[v]);
		if (key->bytes)
			memcpy(p->key_data + total, b->given[v], key->bytes);
		total += key->bytes;
		p->n_keys++;
	}
	return 0;
}

int plan_build(const struct plan_env *env, const struct op_tensor *inputs,
	       const int64_t *sig, int sig_len, struct plan **out)
{
	const struct graph *g = env->g;
	struct plan_builder b = { 0 };
	struct plan *p = NULL;
	int i, k, ret;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	p->steps = calloc((size_t)g->n_order + 1, sizeof(*p->steps));
	p->sig = malloc(((size_t)sig_len + 1) * sizeof(*p->sig));
	if (!p->steps || !p->sig) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory building a plan");
		goto out;
	}
	memcpy(p->sig, sig, (size_t)sig_len * sizeof(*sig));
	p->sig_len = sig_len;
	p->hash = plan_sig_hash(sig, sig_len);
	ret = build_init(&b, env, p);
	if (ret < 0)
		goto out;
	for (i = 0; i < g->n_inputs; i++) {
		b.vals[g->inputs[i]] = inputs[i];
		b.vals[g->inputs[i]].data = NULL;
		b.given[g->inputs[i]] = inputs[i].data;
	}
	for (k = 0; k < g->n_order; k++) {
		ret = build_node(&b, k, g->order[k]);
		if (ret < 0)
			goto out;
	}
	build_lifetimes(&b);
	ret = build_keys(&b);
	if (ret < 0)
		goto out;
	ret = plan__calls_prepare(&b);
	if (ret < 0)
		goto out;
	ret = plan__memory_place(&b);
	if (ret < 0)
		goto out;
	ret = plan__block_bind(&b);
	if (ret < 0)
		goto out;
	/* The executor runs control steps one launch at a time from the host,
	 * reading some values back in between: there is no graph of them to
	 * capture. Said once, for the views. */
	if (p->ctrl_steps > 0) {
		p->capture_error = strdup("the plan has control flow (If, Loop, Scan), which "
					  "runs from the host and is not captured");
		if (!p->capture_error) {
			ret = cep__set_error(CEP_ENOMEM, "out of memory building a plan");
			goto out;
		}
	}
	*out = p;
	p = NULL;
	ret = 0;
out:
	build_close(&b, g->n_values);
	plan_free(p, env->be);
	return ret;
}

void plan_free(struct plan *p, struct backend *be)
{
	int i;

	if (!p)
		return;
	for (i = 0; p->steps && i < p->n_steps; i++)
		ctrl_free(p->steps[i].ctrl, be);
	backend_graph_free(be, p->graph);
	free(p->capture_error);
	backend_mem_free(be, p->block, p->block_bytes);
	free(p->steps);
	free(p->tensors);
	free(p->inputs);
	free(p->outputs);
	free(p->sig);
	free(p->keys);
	free(p->key_data);
	free(p);
}

uint64_t plan_sig_hash(const int64_t *sig, int len)
{
	uint64_t h = 1469598103934665603ull;
	int i;

	for (i = 0; i < len; i++) {
		h ^= (uint64_t)sig[i];
		h *= 1099511628211ull;
		h ^= h >> 29;
	}
	return h;
}
