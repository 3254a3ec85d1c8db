/*
 * plan.c — building execution plans, placing their memory, and keeping
 * them in an LRU cache (daemon/plan.h).
 *
 * A build walks the graph once with every dimension fixed. Each node is
 * either evaluated right here on the host (its inputs are all known: the
 * model's constants, the inputs' shapes for Shape and Size, earlier
 * evaluations; and its result is small) or becomes a step with a kernel of
 * the session's backend. Then every value a step, a copy or the caller
 * touches gets a home: the model's constants already have one (the
 * session uploaded them), everything else is placed in the plan's one
 * block by lifetime.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "shape.h"

/* ------------------------------------------------------------ memory plan */

static size_t round_up(size_t n, size_t align)
{
	return (n + align - 1) / align * align;
}

/* What the items are sorted by: size, largest first, then first use. */
struct mem_key {
	size_t bytes;
	int first;
	int index;
};

static int key_cmp(const void *a, const void *b)
{
	const struct mem_key *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->index - y->index;
}

/* Placed items are filed by the segments of SEG_STEPS steps their
 * lifetimes touch, so that finding the items alive at the same time as a
 * new one looks at its neighbours in time only, not at every item. */
#define SEG_STEPS 32

struct seg {
	int *items;  /* (n) indexes of placed items */
	int n, cap;
};

/* A byte range taken by an item alive at the same time. */
struct span {
	size_t begin, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int seg_add(struct seg *sg, int item)
{
	if (sg->n == sg->cap) {
		int cap = sg->cap ? sg->cap * 2 : 8;
		int *items = realloc(sg->items, (size_t)cap * sizeof(*items));

		if (!items)
			return CEP_ENOMEM;
		sg->items = items;
		sg->cap = cap;
	}
	sg->items[sg->n++] = item;
	return 0;
}

int plan_mem_assign(struct plan_mem_item *items, int n, size_t align, size_t *total)
{
	struct mem_key *order = NULL;
	struct seg *segs = NULL;
	struct span *spans = NULL;
	int *stamp = NULL;
	int n_segs, tmax = 0, i, k, s, ret;
	size_t end = 0;

	*total = 0;
	for (i = 0; i < n; i++)
		tmax = items[i].last > tmax ? items[i].last : tmax;
	n_segs = tmax / SEG_STEPS + 1;
	order = malloc(((size_t)n + 1) * sizeof(*order));
	spans = malloc(((size_t)n + 1) * sizeof(*spans));
	stamp = calloc((size_t)n + 1, sizeof(*stamp));
	segs = calloc((size_t)n_segs, sizeof(*segs));
	ret = CEP_ENOMEM;
	if (!order || !spans || !stamp || !segs)
		goto out;
	for (i = 0; i < n; i++)
		order[i] = (struct mem_key){ items[i].bytes, items[i].first, i };
	qsort(order, (size_t)n, sizeof(*order), key_cmp);
	for (k = 0; k < n; k++) {
		struct plan_mem_item *it = &items[order[k].index];
		size_t size = round_up(it->bytes, align), off = 0;
		int s0 = it->first / SEG_STEPS, s1 = it->last / SEG_STEPS;
		int n_spans = 0, j, c;

		it->offset = 0;
		if (size == 0)
			continue;
		for (s = s0; s <= s1; s++) {
			for (j = 0; j < segs[s].n; j++) {
				const struct plan_mem_item *p = &items[segs[s].items[j]];

				if (stamp[segs[s].items[j]] == k + 1)
					continue;
				stamp[segs[s].items[j]] = k + 1;
				if (p->last < it->first || p->first > it->last)
					continue;
				spans[n_spans].begin = p->offset;
				spans[n_spans].end = p->offset + round_up(p->bytes, align);
				n_spans++;
			}
		}
		/* The lowest gap between the busy spans that is big enough. */
		qsort(spans, (size_t)n_spans, sizeof(*spans), span_cmp);
		for (c = 0; c < n_spans; c++) {
			if (spans[c].begin >= off + size)
				break;
			if (spans[c].end > off)
				off = spans[c].end;
		}
		it->offset = off;
		if (off + size > end)
			end = off + size;
		for (s = s0; s <= s1; s++) {
			if (seg_add(&segs[s], order[k].index) < 0)
				goto out;
		}
	}
	*total = end;
	ret = 0;
out:
	if (segs) {
		for (s = 0; s < n_segs; s++)
			free(segs[s].items);
	}
	free(segs);
	free(order);
	free(spans);
	free(stamp);
	return ret < 0 ? cep__set_error(ret, "out of memory planning memory") : 0;
}

/* ------------------------------------------------------------------ build */

/* Where a value lives while a plan runs. */
enum home {
	HOME_NONE,   /* not needed at run time */
	HOME_CONST,  /* the session's copy of a model constant */
	HOME_BLOCK,  /* an offset in the plan's block */
};

/* Scratch state of one build, per value of the graph. */
struct build {
	const struct plan_env *env;
	struct plan *p;
	struct op_tensor *vals;  /* fixed type and shape */
	void **host;             /* the value on the host when known here */
	bool *owned;             /* host[v] was computed here (free it) */
	int *made_by;            /* the step producing it, -1 */
	int *last;               /* the last step reading it, -1 */
	enum home *home;
	size_t *offset;          /* in the block, for HOME_BLOCK */
	struct op_tensor *in, *out; /* per-node scratch */
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
	free(b->made_by);
	free(b->last);
	free(b->home);
	free(b->offset);
	free(b->in);
	free(b->out);
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
	b->made_by = malloc(nv * sizeof(*b->made_by));
	b->last = malloc(nv * sizeof(*b->last));
	b->home = calloc(nv, sizeof(*b->home));
	b->offset = calloc(nv, sizeof(*b->offset));
	b->in = calloc((size_t)max_in, sizeof(*b->in));
	b->out = calloc((size_t)max_out, sizeof(*b->out));
	if (!b->vals || !b->host || !b->owned || !b->made_by || !b->last || !b->home ||
	    !b->offset || !b->in || !b->out)
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

/* Infers node n with fixed shapes, then folds it or makes it a step. */
static int build_node(struct build *b, int n)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	struct plan *p = b->p;
	struct plan_step *st;
	int i, ret;

	for (i = 0; i < node->n_in; i++) {
		int v = node->in[i];

		if (v < 0) {
			memset(&b->in[i], 0, sizeof(b->in[i]));
			continue;
		}
		b->in[i] = b->vals[v];
		b->in[i].data = b->host[v];
	}
	ret = shape_infer_node(g, n, b->in, b->out);
	if (ret < 0)
		return ret;
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];
		int64_t numel;
		char dims[160];

		if (v < 0)
			continue;
		ret = op_tensor_numel(&b->out[i], &numel);
		if (ret == CEP_ESHAPE) {
			op_dims_format(&b->out[i], g->syms, g->n_syms, dims, sizeof(dims));
			return graph_node_fail(g, n, CEP_EUNSUPPORTED,
					       "the shape %s of output '%s' depends on values known only at run time",
					       dims, g->values[v].name);
		}
		if (ret < 0)
			return graph_node_wrap(g, n, ret);
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
	for (i = 0; i < node->n_in; i++) {
		if (node->in[i] >= 0)
			b->last[node->in[i]] = p->n_steps;
	}
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] >= 0)
			b->made_by[node->out[i]] = p->n_steps;
	}
	p->n_steps++;
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

/* Decides where each value lives and places those of the block. */
static int build_memory(struct build *b)
{
	const struct graph *g = b->env->g;
	struct plan *p = b->p;
	struct plan_mem_item *items = NULL;
	int *item_value = NULL;
	int n_items = 0, end = p->n_steps, v, i, ret;
	size_t total;

	items = calloc((size_t)g->n_values + 1, sizeof(*items));
	item_value = calloc((size_t)g->n_values + 1, sizeof(*item_value));
	if (!items || !item_value) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory building a plan");
		goto out;
	}
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
		item_value[n_items++] = v;
	}
	ret = plan_mem_assign(items, n_items, BACKEND_ALIGN, &total);
	if (ret < 0)
		goto out;
	for (i = 0; i < n_items; i++)
		b->offset[item_value[i]] = items[i].offset;
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
	}
	for (k = 0; k < g->n_order; k++) {
		ret = build_node(&b, g->order[k]);
		if (ret < 0)
			goto out;
	}
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
	backend_mem_free(be, p->block, p->block_bytes);
	free(p->steps);
	free(p->tensors);
	free(p->inputs);
	free(p->outputs);
	free(p->sig);
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

struct plan *plan_cache_find(struct plan_cache *c, const int64_t *sig, int len,
			     uint64_t hash)
{
	int i;

	c->clock++;
	for (i = 0; i < c->n; i++) {
		struct plan *p = c->plans[i];

		if (p->hash == hash && p->sig_len == len &&
		    memcmp(p->sig, sig, (size_t)len * sizeof(*sig)) == 0) {
			p->last_used = c->clock;
			c->hits++;
			return p;
		}
	}
	c->misses++;
	return NULL;
}

void plan_cache_evict(struct plan_cache *c, struct backend *be)
{
	int lru = 0, i;

	if (c->n == 0)
		return;
	for (i = 1; i < c->n; i++) {
		if (c->plans[i]->last_used < c->plans[lru]->last_used)
			lru = i;
	}
	plan_free(c->plans[lru], be);
	c->plans[lru] = c->plans[--c->n];
	c->evictions++;
}

void plan_cache_insert(struct plan_cache *c, struct plan *p, struct backend *be)
{
	if (c->n == c->cap)
		plan_cache_evict(c, be);
	p->last_used = ++c->clock;
	c->plans[c->n++] = p;
}
