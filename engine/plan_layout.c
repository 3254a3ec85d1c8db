/*
 * plan_layout.c — where a plan's steps and values live (engine/plan.h):
 * the steps' calls with their workspaces, the views that may share their
 * input's bytes, the place of every value (a model constant's device
 * copy, or an offset in the plan's one block, by lifetime:
 * engine/plan_mem.c), and last the block itself, allocated, filled with
 * the values computed while planning and bound into every call.
 *
 * Called by the build's driver (engine/plan.c) through plan_priv.h once
 * the steps are known.
 */
#include "engine/plan_priv.h"

#include <stdlib.h>
#include <string.h>

/* Fills the steps' calls (tensors without data yet) and runs each
 * kernel's prepare; the largest workspace is what the plan reserves. */
int plan__calls_prepare(struct plan_builder *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	size_t n_tensors = 0, at = 0;
	int s, i, ret;

	for (s = 0; s < p->n_steps; s++) {
		const struct graph_node *node = &g->nodes[p->steps[s].node];

		n_tensors += (size_t)node->n_in + (size_t)node->n_out;
	}
	p->tensors = calloc(n_tensors + 1, sizeof(*p->tensors));
	if (!p->tensors)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	for (s = 0; s < p->n_steps; s++) {
		struct plan_step *st = &p->steps[s];
		const struct graph_node *node = &g->nodes[st->node];
		struct op_call *c = &st->call;
		size_t ws = 0;

		c->node = &node->op;
		c->be = b->env->be;
		c->flags = b->env->call_flags;
		c->n_in = node->n_in;
		c->n_out = node->n_out;
		c->in = &p->tensors[at];
		for (i = 0; i < node->n_in; i++) {
			if (node->in[i] >= 0) {
				p->tensors[at + (size_t)i] = b->vals[node->in[i]];
				p->tensors[at + (size_t)i].data = NULL;
			}
		}
		at += (size_t)node->n_in;
		c->out = &p->tensors[at];
		for (i = 0; i < node->n_out; i++) {
			if (node->out[i] >= 0)
				c->out[i] = b->vals[node->out[i]];
		}
		at += (size_t)node->n_out;
		if (st->kernel && st->kernel->prepare) {
			cep__clear_error();
			ret = st->kernel->prepare(c, &ws);
			if (ret < 0)
				return graph_node_wrap(g, st->node, ret);
		}
		c->workspace_bytes = ws;
		if (ws > p->workspace_bytes)
			p->workspace_bytes = ws;
	}
	return 0;
}

/* Whether node is an operator whose kernels copy the input unchanged
 * under a new shape, and skip the copy when input and output share
 * memory (kernels/cpu/reshape.c, kernels/cuda/reshape.c). */
static bool is_view(const struct graph_node *node)
{
	static const char *const ops[] = { "Reshape", "Flatten", "Squeeze", "Unsqueeze",
					   "Identity" };
	size_t i;

	if (!op_domain_equal(node->op.domain, "") || node->n_in < 1 || node->n_out != 1 ||
	    node->in[0] < 0 || node->out[0] < 0)
		return false;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(node->op.op_type, ops[i]) == 0)
			return true;
	}
	return false;
}

/* Lets the result of a view step live in the bytes of its input when that
 * input is a step's result that nothing reads later: the copy then has
 * nothing to do (an exported attention has four such Reshapes per layer).
 * share[v] becomes the value whose bytes v takes, v itself for most. */
static void view_shares(const struct plan_builder *b, int *share)
{
	const struct graph *g = b->env->g;
	const unsigned outside = GRAPH_VALUE_INPUT | GRAPH_VALUE_OUTPUT | GRAPH_VALUE_CONST;
	int s;

	for (s = 0; s < b->p->n_steps; s++) {
		const struct graph_node *node = &g->nodes[b->p->steps[s].node];
		int x, y;

		if (!is_view(node))
			continue;
		x = node->in[0];
		y = node->out[0];
		if (b->made_by[x] < 0 || b->last[x] != s || b->owned[x] || b->owned[y] ||
		    (g->values[x].flags & outside) || (g->values[y].flags & outside) ||
		    op_tensor_bytes(&b->vals[x]) != op_tensor_bytes(&b->vals[y]))
			continue;
		/* Steps run in order, so x's own share is settled already. */
		share[y] = share[x];
	}
}

/* Decides where each value lives and places those of the block. */
int plan__memory_place(struct plan_builder *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	struct plan_mem_item *items = NULL;
	int *item_value = NULL, *item_of = NULL, *share = NULL;
	int n_items = 0, end = p->n_steps, v, i, ret;
	size_t total;

	items = calloc((size_t)g->n_values + 1, sizeof(*items));
	item_value = calloc((size_t)g->n_values + 1, sizeof(*item_value));
	item_of = calloc((size_t)g->n_values + 1, sizeof(*item_of));
	share = calloc((size_t)g->n_values + 1, sizeof(*share));
	if (!items || !item_value || !item_of || !share) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory building a plan");
		goto out;
	}
	for (v = 0; v < g->n_values; v++)
		share[v] = v;
	view_shares(b, share);
	for (v = 0; v < g->n_values; v++) {
		const struct graph_value *val = &g->values[v];
		bool is_input = val->flags & GRAPH_VALUE_INPUT;
		bool is_output = val->flags & GRAPH_VALUE_OUTPUT;
		struct plan_mem_item *it = &items[n_items];

		if (!is_input && !is_output && b->last[v] < 0 && b->made_by[v] < 0)
			continue;
		if ((val->flags & GRAPH_VALUE_CONST) && !b->env->const_dev) {
			/* A subplan's constants live in its block, uploaded once. */
			b->home[v] = PLAN_HOME_BLOCK;
			it->bytes = val->bytes;
			it->first = 0;
			it->last = end;
			item_value[n_items] = v;
			item_of[v] = n_items++;
			continue;
		}
		if (b->bound[v]) {
			b->home[v] = PLAN_HOME_BOUND;
			continue;
		}
		if (val->flags & GRAPH_VALUE_CONST) {
			if (!b->env->const_dev[v]) {
				ret = cep__set_error(CEP_EINTERNAL, "constant '%s' has no device copy",
						     val->name);
				goto out;
			}
			b->home[v] = PLAN_HOME_CONST;
			continue;
		}
		b->home[v] = PLAN_HOME_BLOCK;
		it->bytes = op_tensor_bytes(&b->vals[v]);
		if (b->made_by[v] >= 0) {
			it->first = b->made_by[v];
		} else {
			/* Inputs are copied in and plan-time values uploaded
			 * before the first step. */
			it->first = 0;
		}
		if (b->owned[v] && b->made_by[v] < 0)
			it->last = end; /* uploaded once, must survive every run */
		else
			it->last = b->last[v] > it->first ? b->last[v] : it->first;
		if (is_output || (is_input && b->env->inputs_stay))
			it->last = end;
		item_value[n_items] = v;
		item_of[v] = n_items++;
	}
	/* A view's bytes are its input's, kept until the view's last reader;
	 * its input was made before it, so has its item already. */
	for (v = 0; v < g->n_values; v++) {
		struct plan_mem_item *it;

		if (share[v] == v)
			continue;
		it = &items[item_of[share[v]]];
		if (items[item_of[v]].last > it->last)
			it->last = items[item_of[v]].last;
		items[item_of[v]].bytes = 0;
	}
	ret = plan_mem_assign(items, n_items, BACKEND_ALIGN, &total);
	if (ret < 0)
		goto out;
	for (i = 0; i < n_items; i++)
		b->offset[item_value[i]] = items[item_of[share[item_value[i]]]].offset;
	p->activation_bytes = total;
	p->block_bytes = total + p->workspace_bytes;
	if (b->env->max_block_bytes &&
	    p->block_bytes + p->ctrl_bytes > b->env->max_block_bytes) {
		if (b->env->needed_bytes)
			*b->env->needed_bytes = p->block_bytes + p->ctrl_bytes;
		ret = cep__set_error(CEP_ELIMIT, "the plan needs %zu bytes of memory, the session's "
				     "limit leaves %zu", p->block_bytes + p->ctrl_bytes,
				     b->env->max_block_bytes);
		goto out;
	}
	ret = 0;
out:
	free(items);
	free(item_value);
	free(item_of);
	free(share);
	return ret;
}

static void *value_dev(const struct plan_builder *b, int v)
{
	if (v < 0)
		return NULL;
	switch (b->home[v]) {
	case PLAN_HOME_CONST:
		return b->env->const_dev[v];
	case PLAN_HOME_BLOCK:
		return (unsigned char *)b->p->block + b->offset[v];
	case PLAN_HOME_BOUND:
		return b->bound[v];
	case PLAN_HOME_NONE:
		break;
	}
	return NULL;
}

static void io_fill(const struct plan_builder *b, struct plan_io *io, int v)
{
	io->value = v;
	io->dev = value_dev(b, v);
	io->t = b->vals[v];
	io->t.data = io->dev;
	io->bytes = op_tensor_bytes(&b->vals[v]);
}

/* Allocates the block, uploads plan-time values and points every call and
 * copy at its memory. */
int plan__block_bind(struct plan_builder *b)
{
	const struct graph *g = b->env->g;
	struct backend *be = b->env->be;
	struct plan *p = b->p;
	int v, s, i, ret;

	ret = backend_mem_alloc(be, p->block_bytes, &p->block);
	if (ret < 0)
		return ret;
	for (v = 0; v < g->n_values; v++) {
		if (b->home[v] != PLAN_HOME_BLOCK ||
		    !(b->owned[v] || (g->values[v].flags & GRAPH_VALUE_CONST)))
			continue;
		ret = backend_copy_h2d(be, b->env->stream, value_dev(b, v), b->host[v],
				       op_tensor_bytes(&b->vals[v]));
		if (ret < 0)
			return ret;
	}
	ret = backend_stream_sync(be, b->env->stream);
	if (ret < 0)
		return ret;
	for (s = 0; s < p->n_steps; s++) {
		struct plan_step *st = &p->steps[s];
		const struct graph_node *node = &g->nodes[st->node];
		struct op_tensor *in = (struct op_tensor *)st->call.in;

		for (i = 0; i < node->n_in; i++)
			in[i].data = value_dev(b, node->in[i]);
		for (i = 0; i < node->n_out; i++)
			st->call.out[i].data = value_dev(b, node->out[i]);
		if (st->call.workspace_bytes)
			st->call.workspace = (unsigned char *)p->block + p->activation_bytes;
	}
	p->inputs = calloc((size_t)g->n_inputs + 1, sizeof(*p->inputs));
	p->outputs = calloc((size_t)g->n_outputs + 1, sizeof(*p->outputs));
	if (!p->inputs || !p->outputs)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	for (i = 0; i < g->n_inputs; i++)
		io_fill(b, &p->inputs[i], g->inputs[i]);
	for (i = 0; i < g->n_outputs; i++)
		io_fill(b, &p->outputs[i], g->outputs[i]);
	p->n_inputs = g->n_inputs;
	p->n_outputs = g->n_outputs;
	return 0;
}
