/*
 * plan.c — building execution plans, placing their memory, and keeping
 * them in an LRU cache (engine/plan.h).
 *
 * A build walks the graph once with every dimension fixed. Each node is
 * either evaluated right here on the host (its inputs are all known: the
 * model's constants, the inputs' shapes for Shape and Size, earlier
 * evaluations; and its result is small) or becomes a step with a kernel of
 * the session's backend. A node whose output shape still depends on values
 * nobody knows yet makes the build look back for where they come from: if
 * that is a chain of small nodes over small graph inputs, those inputs are
 * read from the run, the chain is evaluated here, and the inputs become
 * keys of the plan. Then every value a step, a copy or the caller touches
 * gets a home: the model's constants already have one (the session
 * uploaded them), everything else is placed in the plan's one block by
 * lifetime (engine/plan_mem.c).
 */
#include "engine/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/shape.h"

/* ------------------------------------------------------------------ build */

/* Where a value lives while a plan runs. */
enum home {
	HOME_NONE,   /* not needed at run time */
	HOME_CONST,  /* the session's copy of a model constant */
	HOME_BLOCK,  /* an offset in the plan's block */
};

/* Scratch state of one build, per value of the graph unless said. */
struct build {
	const struct plan_env *env;
	struct plan *p;
	struct op_tensor *vals;  /* fixed type and shape */
	void **host;             /* the value on the host when known here */
	bool *owned;             /* host[v] was computed here (free it) */
	const void **given;      /* a graph input's data in the run, or NULL */
	bool *keyed;             /* a graph input whose values were read */
	int *mark;               /* == stamp: needed by the current search */
	int *node_mark;          /* (per node) == stamp: to evaluate for it */
	int stamp;
	int *made_by;            /* the step producing it, -1 */
	int *last;               /* the last step reading it, -1 */
	enum home *home;
	size_t *offset;          /* in the block, for HOME_BLOCK */
	struct op_tensor *in, *out; /* per-node scratch */
	struct op_tensor *ein, *eout; /* scratch of evaluations for a shape */
};

static void build_close(struct build *b, int n_values)
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
	free(b->offset);
	free(b->in);
	free(b->out);
	free(b->ein);
	free(b->eout);
}

static int build_init(struct build *b, const struct plan_env *env, struct plan *p)
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
	b->offset = calloc(nv, sizeof(*b->offset));
	b->in = calloc((size_t)max_in, sizeof(*b->in));
	b->out = calloc((size_t)max_out, sizeof(*b->out));
	b->ein = calloc((size_t)max_in, sizeof(*b->ein));
	b->eout = calloc((size_t)max_out, sizeof(*b->eout));
	if (!b->vals || !b->host || !b->owned || !b->given || !b->keyed || !b->mark ||
	    !b->node_mark || !b->made_by || !b->last || !b->home || !b->offset || !b->in ||
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
	return 0;
}

/* Evaluates node n here if its inputs are known and its outputs small.
 * Returns 1 when it did, 0 when n must become a step. */
static int fold_here(struct build *b, int n)
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

/* ------------------------------------------------- values shapes depend on */

/* Stands in for the elements of an empty input: a NULL data pointer would
 * read as "value unknown" to inference. */
static const unsigned char empty_value[1];

/* Why values a shape needs cannot be known while planning. */
struct unknowable {
	int input;  /* a graph input that cannot key the plan, or -1 */
	int node;   /* a node that cannot be evaluated here, or -1 */
};

/* Fills in with node n's inputs as far as they are known (type and shape,
 * and the value on the host when there is one). */
static void inputs_fill(const struct build *b, int n, struct op_tensor *in)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	int i;

	for (i = 0; i < node->n_in; i++) {
		int v = node->in[i];

		if (v < 0) {
			memset(&in[i], 0, sizeof(in[i]));
			continue;
		}
		in[i] = b->vals[v];
		in[i].data = b->host[v];
	}
}

/* Fills out with node n's outputs as planned (type and shape, no data). */
static void outputs_fill(const struct build *b, int n, struct op_tensor *out)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	int i;

	for (i = 0; i < node->n_out; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (node->out[i] >= 0) {
			out[i] = b->vals[node->out[i]];
			out[i].data = NULL;
		}
	}
}

/* Sets *which to the first output of node n whose shape in b->out is not
 * fixed, -1 when all are; fails only for a tensor beyond OP_MAX_NUMEL. */
static int outputs_unfixed(const struct build *b, int n, int *which)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	int64_t numel;
	int i, ret;

	*which = -1;
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] < 0)
			continue;
		ret = op_tensor_numel(&b->out[i], &numel);
		if (ret == CEP_ESHAPE) {
			*which = i;
			return 0;
		}
		if (ret < 0)
			return graph_node_wrap(g, n, ret);
	}
	return 0;
}

/* Whether node m, whose output shapes are fixed, can be evaluated on the
 * host while planning once its inputs are known. */
static bool host_evaluable(struct build *b, int m)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[m];
	const struct op_kernel *k;
	size_t total = 0;
	int i;

	if (node->schema->flags & OP_NO_FOLD)
		return false;
	outputs_fill(b, m, b->eout);
	for (i = 0; i < node->n_out; i++)
		total += op_tensor_bytes(&b->eout[i]);
	if (total > PLAN_FOLD_MAX_BYTES)
		return false;
	inputs_fill(b, m, b->ein);
	if (op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
			   op_kernel_dtype(node->schema, b->ein, node->n_in, b->eout, node->n_out),
			   &k) < 0) {
		cep__clear_error();
		return false;
	}
	return true;
}

/* Whether graph input v may key the plan: the run gave its values, and
 * they are few and of a type that counts or sizes things. */
static bool input_keyable(const struct build *b, int v)
{
	const struct op_tensor *t = &b->vals[v];
	int64_t numel;

	if (op_tensor_numel(t, &numel) < 0 || (numel > 0 && !b->given[v]))
		return false;
	return op_dtype_in(t->dtype, PLAN_KEY_DTYPES) && numel <= PLAN_KEY_MAX_ELEMS;
}

/*
 * Finds what it takes to know value v, an input of the node at position k
 * of the order, while planning: marks (with a new stamp) the values it is
 * computed from and the nodes before k to evaluate for it, back to values
 * already known and to graph inputs. Returns false, with the culprit in
 * *why, when a node on the way cannot be evaluated here or a graph input
 * cannot key the plan. The order is topological, so one backward sweep
 * sees every producer after all of its consumers.
 */
static bool value_trace(struct build *b, int k, int v, struct unknowable *why)
{
	const struct graph *g = b->env->g;
	int pos, i;

	why->input = why->node = -1;
	b->stamp++;
	b->mark[v] = b->stamp;
	for (pos = k - 1; pos >= 0; pos--) {
		int m = g->order[pos];
		const struct graph_node *node = &g->nodes[m];
		bool needed = false;

		for (i = 0; i < node->n_out; i++) {
			int o = node->out[i];

			needed |= o >= 0 && b->mark[o] == b->stamp && !b->host[o];
		}
		if (!needed)
			continue;
		if (!host_evaluable(b, m)) {
			why->node = m;
			return false;
		}
		b->node_mark[m] = b->stamp;
		if (node->schema->flags & OP_SHAPE_ONLY)
			continue;
		for (i = 0; i < node->n_in; i++) {
			int u = node->in[i];

			if (u >= 0 && !b->host[u])
				b->mark[u] = b->stamp;
		}
	}
	for (i = 0; i < g->n_inputs; i++) {
		int u = g->inputs[i];

		if (b->mark[u] == b->stamp && !b->host[u] && !input_keyable(b, u)) {
			why->input = u;
			return false;
		}
	}
	return true;
}

/* Makes known what the last successful value_trace() marked: reads the
 * marked graph inputs from the run (they key the plan from now on) and
 * evaluates the marked nodes in order. */
static int value_eval(struct build *b, int k)
{
	const struct graph *g = b->env->g;
	int pos, i, ret;

	for (i = 0; i < g->n_inputs; i++) {
		int v = g->inputs[i];

		if (b->mark[v] != b->stamp || b->host[v])
			continue;
		b->host[v] = b->given[v] ? (void *)b->given[v] : (void *)empty_value;
		b->keyed[v] = true;
	}
	for (pos = 0; pos < k; pos++) {
		int m = g->order[pos];
		const struct graph_node *node = &g->nodes[m];
		const struct op_kernel *kern;

		if (b->node_mark[m] != b->stamp)
			continue;
		inputs_fill(b, m, b->ein);
		outputs_fill(b, m, b->eout);
		cep__clear_error();
		ret = op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
				     op_kernel_dtype(node->schema, b->ein, node->n_in, b->eout,
						     node->n_out), &kern);
		if (ret == 0)
			ret = exec_host_eval(&node->op, kern, b->ein, node->n_in, b->eout,
					     node->n_out);
		if (ret < 0)
			return graph_node_wrap(g, m, ret);
		for (i = 0; i < node->n_out; i++) {
			int v = node->out[i];

			if (v < 0) {
				free(b->eout[i].data);
				continue;
			}
			b->host[v] = b->eout[i].data;
			b->owned[v] = true;
		}
		b->p->folded++;
	}
	return 0;
}

/*
 * Node n, at position k of the order, has an output whose shape depends on
 * values not known yet: learns them from the run where it can, inferring n
 * again each time, until every output is fixed. Stopping as soon as the
 * shapes are fixed keeps an input that is only data from keying the plan,
 * so the inputs likeliest to decide a shape go first: integer ones (a
 * target shape, axes, pads, bounds) before the others (Pad's fill value,
 * Resize's region), and within each, last first (Reshape's shape, Slice's
 * steps and Range's delta come after the data). Leaves in *unfixed the
 * output still not fixed (-1: none) and in *why the first reason a value
 * could not be learnt.
 */
static int values_resolve(struct build *b, int k, int n, int *unfixed,
			  struct unknowable *why)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	const uint32_t integral = OP_DTS_INT | OP_DT(CEP_DTYPE_BOOL);
	struct unknowable w;
	int pass, i, ret;

	why->input = why->node = -1;
	for (pass = 0; pass < 2; pass++) {
		for (i = node->n_in - 1; i >= 0 && *unfixed >= 0; i--) {
			int v = node->in[i];

			if (v < 0 || b->host[v] ||
			    op_dtype_in(b->vals[v].dtype, integral) != (pass == 0))
				continue;
			if (!value_trace(b, k, v, &w)) {
				if (why->input < 0 && why->node < 0)
					*why = w;
				continue;
			}
			ret = value_eval(b, k);
			if (ret < 0)
				return ret;
			inputs_fill(b, n, b->in);
			ret = shape_infer_node(g, n, b->in, b->out);
			if (ret < 0)
				return ret;
			ret = outputs_unfixed(b, n, unfixed);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* The refusal of node n, whose output o has a shape that could not be
 * settled, saying why when that is known. */
static int unfixed_refuse(const struct build *b, int n, int o, const struct unknowable *why)
{
	const struct graph *g = b->env->g;
	char dims[160], label[200], because[400] = "";

	op_dims_format(&b->out[o], g->syms, g->n_syms, dims, sizeof(dims));
	if (why->input >= 0) {
		const struct graph_value *val = &g->values[why->input];
		const struct op_tensor *t = &b->vals[why->input];
		int64_t numel = 0;

		op_tensor_numel(t, &numel);
		/* Without the run's values (a caller planning from shapes
		 * alone) there is nothing more to say. */
		if (!op_dtype_in(t->dtype, PLAN_KEY_DTYPES) && b->given[why->input])
			snprintf(because, sizeof(because), ": it needs the values of input '%s', "
				 "whose type %s cannot key a plan", val->name,
				 cep_dtype_name(t->dtype));
		else if (numel > PLAN_KEY_MAX_ELEMS && b->given[why->input])
			snprintf(because, sizeof(because), ": it needs the values of input '%s', "
				 "whose %" PRId64 " elements are more than the %d a plan can be "
				 "keyed by", val->name, numel, PLAN_KEY_MAX_ELEMS);
	} else if (why->node >= 0) {
		graph_node_label(g, why->node, label, sizeof(label));
		snprintf(because, sizeof(because), ": it needs values that %s computes at run time",
			 label);
	}
	return graph_node_fail(g, n, CEP_EUNSUPPORTED,
			       "the shape %s of output '%s' depends on values known only at run time%s",
			       dims, g->values[g->nodes[n].out[o]].name, because);
}

/* Infers node n (at position k of the order) with fixed shapes, then folds
 * it or makes it a step. */
static int build_node(struct build *b, int k, int n)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	struct plan *p = b->p;
	struct plan_step *st;
	struct unknowable why;
	int unfixed, i, ret;

	inputs_fill(b, n, b->in);
	ret = shape_infer_node(g, n, b->in, b->out);
	if (ret < 0)
		return ret;
	ret = outputs_unfixed(b, n, &unfixed);
	if (ret < 0)
		return ret;
	if (unfixed >= 0) {
		ret = values_resolve(b, k, n, &unfixed, &why);
		if (ret < 0)
			return ret;
		if (unfixed >= 0)
			return unfixed_refuse(b, n, unfixed, &why);
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
static void build_lifetimes(struct build *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	int s, kept = 0, i;

	for (s = 0; s < p->n_steps; s++) {
		const struct graph_node *node = &g->nodes[p->steps[s].node];
		bool known = true;

		for (i = 0; i < node->n_out; i++)
			known &= node->out[i] < 0 || b->host[node->out[i]] != NULL;
		if (!known)
			p->steps[kept++] = p->steps[s];
	}
	p->n_steps = kept;
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
static int build_keys(struct build *b)
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

/* Fills the steps' calls (tensors without data yet) and runs each
 * kernel's prepare; the largest workspace is what the plan reserves. */
static int build_calls(struct build *b)
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
		if (st->kernel->prepare) {
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
static void view_shares(const struct build *b, int *share)
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
static int build_memory(struct build *b)
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
		if (val->flags & GRAPH_VALUE_CONST) {
			if (!b->env->const_dev[v]) {
				ret = cep__set_error(CEP_EINTERNAL, "constant '%s' has no device copy",
						     val->name);
				goto out;
			}
			b->home[v] = HOME_CONST;
			continue;
		}
		b->home[v] = HOME_BLOCK;
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
		if (is_output)
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
	if (b->env->max_block_bytes && p->block_bytes > b->env->max_block_bytes) {
		if (b->env->needed_bytes)
			*b->env->needed_bytes = p->block_bytes;
		ret = cep__set_error(CEP_ELIMIT, "the plan needs %zu bytes of memory, the session's "
				     "limit leaves %zu", p->block_bytes, b->env->max_block_bytes);
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

static void *value_dev(const struct build *b, int v)
{
	if (v < 0)
		return NULL;
	switch (b->home[v]) {
	case HOME_CONST:
		return b->env->const_dev[v];
	case HOME_BLOCK:
		return (unsigned char *)b->p->block + b->offset[v];
	case HOME_NONE:
		break;
	}
	return NULL;
}

static void io_fill(const struct build *b, struct plan_io *io, int v)
{
	io->value = v;
	io->dev = value_dev(b, v);
	io->t = b->vals[v];
	io->t.data = io->dev;
	io->bytes = op_tensor_bytes(&b->vals[v]);
}

/* Allocates the block, uploads plan-time values and points every call and
 * copy at its memory. */
static int build_bind(struct build *b)
{
	const struct graph *g = b->env->g;
	struct backend *be = b->env->be;
	struct plan *p = b->p;
	int v, s, i, ret;

	ret = backend_mem_alloc(be, p->block_bytes, &p->block);
	if (ret < 0)
		return ret;
	for (v = 0; v < g->n_values; v++) {
		if (b->home[v] != HOME_BLOCK || !b->owned[v])
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

int plan_build(const struct plan_env *env, const struct op_tensor *inputs,
	       const int64_t *sig, int sig_len, struct plan **out)
{
	const struct graph *g = env->g;
	struct build b = { 0 };
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
	ret = build_calls(&b);
	if (ret < 0)
		goto out;
	ret = build_memory(&b);
	if (ret < 0)
		goto out;
	ret = build_bind(&b);
	if (ret < 0)
		goto out;
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
	if (!p)
		return;
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

/* ------------------------------------------------------------------ cache */

int plan_cache_init(struct plan_cache *c, int cap)
{
	memset(c, 0, sizeof(*c));
	if (cap < 1)
		cap = 1;
	c->plans = calloc((size_t)cap, sizeof(*c->plans));
	if (!c->plans)
		return cep__set_error(CEP_ENOMEM, NULL);
	c->cap = cap;
	return 0;
}

void plan_cache_close(struct plan_cache *c, struct backend *be)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		plan_free(c->plans[i], be);
	free(c->plans);
	memset(c, 0, sizeof(*c));
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

/* Whether the run's inputs in in_data hold the values p was built for. */
static bool keys_match(const struct plan *p, const void *const *in_data)
{
	int k;

	for (k = 0; k < p->n_keys; k++) {
		const struct plan_key *key = &p->keys[k];

		if (key->bytes == 0)
			continue;
		if (!in_data || !in_data[key->input] ||
		    memcmp(p->key_data + key->offset, in_data[key->input], key->bytes) != 0)
			return false;
	}
	return true;
}

struct plan *plan_cache_find(struct plan_cache *c, const int64_t *sig, int len,
			     uint64_t hash, const void *const *in_data)
{
	int i;

	c->clock++;
	for (i = 0; i < c->n; i++) {
		struct plan *p = c->plans[i];

		if (p->hash == hash && p->sig_len == len &&
		    memcmp(p->sig, sig, (size_t)len * sizeof(*sig)) == 0 &&
		    keys_match(p, in_data)) {
			p->last_used = c->clock;
			c->hits++;
			return p;
		}
	}
	c->misses++;
	return NULL;
}

/* A plan in flight stays: queued work still reads its block and launches
 * its calls, and its completion still names its nodes. */
bool plan_cache_evict(struct plan_cache *c, struct backend *be)
{
	int lru = -1, i;

	for (i = 0; i < c->n; i++) {
		if (atomic_load_explicit(&c->plans[i]->inflight, memory_order_acquire) != 0)
			continue;
		if (lru < 0 || c->plans[i]->last_used < c->plans[lru]->last_used)
			lru = i;
	}
	if (lru < 0)
		return false;
	plan_free(c->plans[lru], be);
	c->plans[lru] = c->plans[--c->n];
	c->evictions++;
	return true;
}

int plan_cache_insert(struct plan_cache *c, struct plan *p, struct backend *be)
{
	if (c->n == c->cap && !plan_cache_evict(c, be))
		return cep__set_error(CEP_EAGAIN, "each of the %d plans the session keeps is in "
				      "use by a run in flight", c->cap);
	p->last_used = ++c->clock;
	c->plans[c->n++] = p;
	return 0;
}
