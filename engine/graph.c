/*
 * graph.c — the graph IR (engine/graph.h): values with a name index, nodes,
 * the arena their small parts live in, topological order, and the
 * clean-ups that every later stage relies on (Identity and dead-node
 * removal).
 */
#include "engine/graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ arena */

#define CHUNK_BYTES 65536

struct graph_chunk {
	struct graph_chunk *next;
	size_t used, cap;   /* bytes of data */
	max_align_t data[]; /* cap bytes */
};

void *graph_alloc(struct graph *g, size_t bytes)
{
	struct graph_chunk *c = g->chunks;
	void *p;

	bytes = (bytes + 15) & ~(size_t)15;
	if (bytes == 0)
		bytes = 16;
	if (!c || c->cap - c->used < bytes) {
		size_t cap = bytes > CHUNK_BYTES / 4 ? bytes : CHUNK_BYTES;

		if (cap > SIZE_MAX - sizeof(*c))
			return NULL;
		c = calloc(1, sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		/* A large block gets its own chunk behind the current one, so
		 * the space left in the current one is not wasted. */
		if (cap != CHUNK_BYTES && g->chunks) {
			c->next = g->chunks->next;
			g->chunks->next = c;
		} else {
			c->next = g->chunks;
			g->chunks = c;
		}
	}
	p = (unsigned char *)c->data + c->used;
	c->used += bytes;
	return p;
}

char *graph_strdup(struct graph *g, const char *s)
{
	size_t n;
	char *p;

	if (!s)
		s = "";
	n = strlen(s) + 1;
	p = graph_alloc(g, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* ------------------------------------------------------------- lifecycle */

int graph_init(struct graph *g)
{
	memset(g, 0, sizeof(*g));
	g->n_slots = 64;
	g->slots = calloc((size_t)g->n_slots, sizeof(*g->slots));
	return g->slots ? 0 : cep__set_error(CEP_ENOMEM, NULL);
}

/* Frees the data of node n's tensor attributes, the one part of a node
 * that lives outside the arena. */
static void node_free_tensors(struct graph_node *node)
{
	int i;

	for (i = 0; i < node->op.n_attrs; i++) {
		struct op_attr *a = (struct op_attr *)&node->op.attrs[i];

		if (a->type == OP_ATTR_TENSOR && a->t) {
			free(a->t->data);
			((struct op_tensor *)a->t)->data = NULL;
		}
	}
}

void graph_close(struct graph *g)
{
	struct graph_chunk *c, *next;
	int i, j;

	if (!g)
		return;
	for (i = 0; i < g->n_values; i++)
		free(g->values[i].t.data);
	for (i = 0; i < g->n_nodes; i++) {
		node_free_tensors(&g->nodes[i]);
		for (j = 0; j < g->nodes[i].n_subs; j++) {
			graph_close(g->nodes[i].subs[j].g);
			free(g->nodes[i].subs[j].g);
		}
	}
	free(g->values);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g->order);
	free(g->syms);
	free(g->slots);
	free(g->declared);
	for (c = g->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(g, 0, sizeof(*g));
}

/* ----------------------------------------------------------------- values */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

int graph_value_find(const struct graph *g, const char *name)
{
	size_t mask = (size_t)g->n_slots - 1;
	size_t i = (size_t)name_hash(name) & mask;

	for (; g->slots[i]; i = (i + 1) & mask) {
		int id = g->slots[i] - 1;

		if (strcmp(g->values[id].name, name) == 0)
			return id;
	}
	return -1;
}

static void slots_insert(int *slots, int n_slots, const char *name, int id)
{
	size_t mask = (size_t)n_slots - 1;
	size_t i = (size_t)name_hash(name) & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = id + 1;
}

static int slots_grow(struct graph *g)
{
	int n = g->n_slots * 2;
	int *slots = calloc((size_t)n, sizeof(*slots));
	int i;

	if (!slots)
		return CEP_ENOMEM;
	for (i = 0; i < g->n_values; i++)
		slots_insert(slots, n, g->values[i].name, i);
	free(g->slots);
	g->slots = slots;
	g->n_slots = n;
	return 0;
}

/* Grows *arr (of *cap elements of size each) to hold at least need. */
static int array_grow(void **arr, int *cap, int need, size_t size)
{
	int n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > INT32_MAX / 2)
			return CEP_ENOMEM;
		n *= 2;
	}
	p = realloc(*arr, (size_t)n * size);
	if (!p)
		return CEP_ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

int graph_value_new(struct graph *g, const char *name, int *id)
{
	struct graph_value *v;
	char *copy;

	if (graph_value_find(g, name) >= 0)
		return CEP_EEXIST;
	if ((g->n_values + 1) * 2 > g->n_slots && slots_grow(g) < 0)
		return cep__set_error(CEP_ENOMEM, NULL);
	if (array_grow((void **)&g->values, &g->cap_values, g->n_values + 1,
		       sizeof(*g->values)) < 0)
		return cep__set_error(CEP_ENOMEM, NULL);
	copy = graph_strdup(g, name);
	if (!copy)
		return cep__set_error(CEP_ENOMEM, NULL);
	v = &g->values[g->n_values];
	memset(v, 0, sizeof(*v));
	v->name = copy;
	v->t.rank = -1;
	v->producer = -1;
	slots_insert(g->slots, g->n_slots, copy, g->n_values);
	*id = g->n_values++;
	return 0;
}

void graph_value_set_const(struct graph *g, int v, void *data, size_t bytes)
{
	struct graph_value *val = &g->values[v];

	free(val->t.data);
	val->t.data = data;
	val->bytes = bytes;
	val->flags |= GRAPH_VALUE_CONST;
	val->producer = -1;
}

const struct graph *graph_root(const struct graph *g)
{
	while (g->parent)
		g = g->parent;
	return g;
}

int graph_symbol(struct graph *g, const char *name)
{
	char *copy;
	int i;

	while (g->parent)
		g = g->parent;
	for (i = 0; i < g->n_syms; i++) {
		if (strcmp(g->syms[i], name) == 0)
			return i;
	}
	if (array_grow((void **)&g->syms, &g->cap_syms, g->n_syms + 1,
		       sizeof(*g->syms)) < 0)
		return cep__set_error(CEP_ENOMEM, NULL);
	copy = graph_strdup(g, name);
	if (!copy)
		return cep__set_error(CEP_ENOMEM, NULL);
	g->syms[g->n_syms] = copy;
	return g->n_syms++;
}

/* ------------------------------------------------------------------ nodes */

int graph_node_new(struct graph *g, int n_in, int n_out, int *id)
{
	struct graph_node *node;
	int i;

	if (array_grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1,
		       sizeof(*g->nodes)) < 0)
		return cep__set_error(CEP_ENOMEM, NULL);
	node = &g->nodes[g->n_nodes];
	memset(node, 0, sizeof(*node));
	node->in = graph_alloc(g, sizeof(int) * (size_t)(n_in ? n_in : 1));
	node->out = graph_alloc(g, sizeof(int) * (size_t)(n_out ? n_out : 1));
	if (!node->in || !node->out)
		return cep__set_error(CEP_ENOMEM, NULL);
	node->n_in = n_in;
	node->n_out = n_out;
	for (i = 0; i < n_in; i++)
		node->in[i] = -1;
	for (i = 0; i < n_out; i++)
		node->out[i] = -1;
	node->op.name = "";
	node->op.op_type = "";
	node->op.domain = "";
	*id = g->n_nodes++;
	return 0;
}

void graph_node_kill(struct graph *g, int n)
{
	struct graph_node *node = &g->nodes[n];
	int i;

	node->dead = true;
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v >= 0 && g->values[v].producer == n)
			g->values[v].producer = -1;
	}
	node_free_tensors(node);
}

struct graph *graph_node_sub(const struct graph *g, int n, const char *attr)
{
	const struct graph_node *node = &g->nodes[n];
	int i;

	for (i = 0; i < node->n_subs; i++) {
		if (strcmp(node->subs[i].attr, attr) == 0)
			return node->subs[i].g;
	}
	return NULL;
}

int graph_live_nodes(const struct graph *g)
{
	int i, n = 0;

	for (i = 0; i < g->n_nodes; i++)
		n += !g->nodes[i].dead;
	return n;
}

/* --------------------------------------------------------------- messages */

void graph_node_label(const struct graph *g, int n, char *buf, size_t len)
{
	const struct graph_node *node = &g->nodes[n];
	const char *scope = g->scope ? g->scope : "";

	if (node->op.name[0])
		snprintf(buf, len, "node %d '%s' (op %s, domain %s, opset %d)%s%s", n,
			 node->op.name, node->op.op_type, op_domain_name(node->op.domain),
			 node->op.opset, scope[0] ? " in " : "", scope);
	else
		snprintf(buf, len, "node %d (op %s, domain %s, opset %d)%s%s", n,
			 node->op.op_type, op_domain_name(node->op.domain), node->op.opset,
			 scope[0] ? " in " : "", scope);
}

int graph_node_fail(const struct graph *g, int n, int err, const char *fmt, ...)
{
	char label[256], msg[384];
	va_list ap;

	graph_node_label(g, n, label, sizeof(label));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cep__set_error(err, "%s: %s", label, msg);
}

int graph_node_wrap(const struct graph *g, int n, int err)
{
	char label[256], msg[512];

	graph_node_label(g, n, label, sizeof(label));
	snprintf(msg, sizeof(msg), "%s", cep_last_error()[0] ? cep_last_error()
							     : cep_strerror(err));
	return cep__set_error(err, "%s: %s", label, msg);
}

/* ------------------------------------------------------------------- sort */

/* Names a node on the cycle that kept the nodes not in `done` from being
 * ordered: walking from any of them to a producer that is not done either
 * must, after as many steps as there are nodes, be going round a cycle. */
static int cycle_error(const struct graph *g, const bool *done)
{
	int n = -1, steps, i;

	for (i = 0; i < g->n_nodes && n < 0; i++) {
		if (!g->nodes[i].dead && !done[i])
			n = i;
	}
	for (steps = 0; steps <= g->n_nodes; steps++) {
		const struct graph_node *node = &g->nodes[n];
		int next = -1;

		for (i = 0; i < node->n_in && next < 0; i++) {
			int v = node->in[i];
			int p = v >= 0 ? g->values[v].producer : -1;

			if (p >= 0 && !done[p])
				next = p;
		}
		if (next < 0)
			break;
		n = next;
	}
	for (i = 0; i < g->nodes[n].n_in; i++) {
		int v = g->nodes[n].in[i];
		int p = v >= 0 ? g->values[v].producer : -1;

		if (p >= 0 && !done[p])
			return graph_node_fail(g, n, CEP_EMODEL,
					       "is on a cycle through its input '%s'",
					       g->values[v].name);
	}
	return graph_node_fail(g, n, CEP_EMODEL, "is on a cycle");
}

int graph_sort(struct graph *g)
{
	int *indeg = NULL, *ustart = NULL, *ulist = NULL, *queue = NULL;
	bool *done = NULL;
	int n_live = 0, head = 0, tail = 0, total = 0;
	int i, j, ret;

	ret = CEP_ENOMEM;
	indeg = calloc((size_t)g->n_nodes + 1, sizeof(*indeg));
	ustart = calloc((size_t)g->n_values + 1, sizeof(*ustart));
	queue = malloc(((size_t)g->n_nodes + 1) * sizeof(*queue));
	done = calloc((size_t)g->n_nodes + 1, sizeof(*done));
	if (!indeg || !ustart || !queue || !done)
		goto out;
	for (i = 0; i < g->n_values; i++)
		g->values[i].n_uses = 0;
	for (i = 0; i < g->n_nodes; i++) {
		const struct graph_node *node = &g->nodes[i];

		if (node->dead)
			continue;
		n_live++;
		for (j = 0; j < node->n_in; j++) {
			int v = node->in[j];

			if (v < 0)
				continue;
			g->values[v].n_uses++;
			total++;
			if (g->values[v].producer >= 0)
				indeg[i]++;
		}
	}
	/* Consumers of each value, as one array sliced by ustart. */
	ulist = malloc(((size_t)total + 1) * sizeof(*ulist));
	if (!ulist)
		goto out;
	for (i = 0; i < g->n_values; i++)
		ustart[i + 1] = ustart[i] + g->values[i].n_uses;
	for (i = 0; i < g->n_values; i++)
		g->values[i].n_uses = 0;
	for (i = 0; i < g->n_nodes; i++) {
		const struct graph_node *node = &g->nodes[i];

		if (node->dead)
			continue;
		for (j = 0; j < node->n_in; j++) {
			int v = node->in[j];

			if (v >= 0)
				ulist[ustart[v] + g->values[v].n_uses++] = i;
		}
	}
	for (i = 0; i < g->n_nodes; i++) {
		if (!g->nodes[i].dead && indeg[i] == 0)
			queue[tail++] = i;
	}
	free(g->order);
	g->order = malloc(((size_t)n_live + 1) * sizeof(*g->order));
	g->n_order = 0;
	if (!g->order)
		goto out;
	while (head < tail) {
		const struct graph_node *node = &g->nodes[queue[head]];

		done[queue[head]] = true;
		g->order[g->n_order++] = queue[head++];
		for (i = 0; i < node->n_out; i++) {
			int v = node->out[i];

			if (v < 0)
				continue;
			for (j = ustart[v]; j < ustart[v + 1]; j++) {
				if (--indeg[ulist[j]] == 0)
					queue[tail++] = ulist[j];
			}
		}
	}
	if (g->n_order < n_live) {
		ret = cycle_error(g, done);
		goto out;
	}
	ret = 0;
out:
	free(indeg);
	free(ustart);
	free(ulist);
	free(queue);
	free(done);
	return ret == CEP_ENOMEM ? cep__set_error(ret, "out of memory sorting the graph") : ret;
}

/* --------------------------------------------------------------- simplify */

static int rep_find(int *rep, int v)
{
	while (v >= 0 && rep[v] != v) {
		rep[v] = rep[rep[v]];
		v = rep[v];
	}
	return v;
}

static bool is_identity(const struct graph_node *node)
{
	return strcmp(node->op.op_type, "Identity") == 0 &&
	       op_domain_equal(node->op.domain, "") && node->n_in == 1 &&
	       node->n_out == 1 && node->in[0] >= 0 && node->out[0] >= 0;
}

/* Drops Identity nodes; rep maps each value to the one that replaces it. */
static void remove_identities(struct graph *g, int *rep)
{
	int k, i, j;

	for (k = 0; k < g->n_order; k++) {
		int n = g->order[k];
		struct graph_node *node = &g->nodes[n];
		int x, y, p;

		for (i = 0; i < node->n_in; i++)
			node->in[i] = rep_find(rep, node->in[i]);
		if (!is_identity(node))
			continue;
		x = node->in[0];
		y = node->out[0];
		if (!(g->values[y].flags & GRAPH_VALUE_OUTPUT)) {
			rep[y] = x;
			graph_node_kill(g, n);
			continue;
		}
		/* y is returned to the caller: have x's producer write y
		 * directly, unless x must itself stay visible. */
		p = g->values[x].producer;
		if (p < 0 || (g->values[x].flags &
			      (GRAPH_VALUE_INPUT | GRAPH_VALUE_OUTPUT | GRAPH_VALUE_CONST)))
			continue;
		for (j = 0; j < g->nodes[p].n_out; j++) {
			if (g->nodes[p].out[j] == x)
				g->nodes[p].out[j] = y;
		}
		g->values[y].producer = p;
		g->values[x].producer = -1;
		rep[x] = y;
		graph_node_kill(g, n);
	}
	for (i = 0; i < g->n_nodes; i++) {
		struct graph_node *node = &g->nodes[i];

		if (node->dead)
			continue;
		for (j = 0; j < node->n_in; j++)
			node->in[j] = rep_find(rep, node->in[j]);
	}
}

/* Kills nodes none of whose outputs is read or returned, last first so
 * that whole dead chains go in one pass. */
static void remove_dead(struct graph *g)
{
	int i, j, k;

	for (i = 0; i < g->n_values; i++)
		g->values[i].n_uses = 0;
	for (i = 0; i < g->n_nodes; i++) {
		const struct graph_node *node = &g->nodes[i];

		if (node->dead)
			continue;
		for (j = 0; j < node->n_in; j++) {
			if (node->in[j] >= 0)
				g->values[node->in[j]].n_uses++;
		}
	}
	for (k = g->n_order - 1; k >= 0; k--) {
		int n = g->order[k];
		struct graph_node *node = &g->nodes[n];
		bool needed = false;

		if (node->dead)
			continue;
		for (j = 0; j < node->n_out && !needed; j++) {
			int v = node->out[j];

			needed = v >= 0 && (g->values[v].n_uses > 0 ||
					    (g->values[v].flags & GRAPH_VALUE_OUTPUT));
		}
		if (needed)
			continue;
		for (j = 0; j < node->n_in; j++) {
			if (node->in[j] >= 0)
				g->values[node->in[j]].n_uses--;
		}
		graph_node_kill(g, n);
	}
	/* Constants nobody reads any more (folded away) give their memory back. */
	for (i = 0; i < g->n_values; i++) {
		struct graph_value *v = &g->values[i];

		if ((v->flags & GRAPH_VALUE_CONST) && v->n_uses == 0 &&
		    !(v->flags & GRAPH_VALUE_OUTPUT) && v->t.data) {
			free(v->t.data);
			v->t.data = NULL;
			v->bytes = 0;
		}
	}
}

int graph_simplify(struct graph *g)
{
	int *rep;
	int i;

	rep = malloc(((size_t)g->n_values + 1) * sizeof(*rep));
	if (!rep)
		return cep__set_error(CEP_ENOMEM, "out of memory simplifying the graph");
	for (i = 0; i < g->n_values; i++)
		rep[i] = i;
	remove_identities(g, rep);
	free(rep);
	remove_dead(g);
	return graph_sort(g);
}
