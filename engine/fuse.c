/*
 * fuse.c — load-time fusions of the graph IR (engine/fuse.h): BatchNorm
 * folded into the Conv before it, then Conv + Relu and Conv + Add + Relu
 * rewritten into the internal FusedConv.
 *
 * Each fusion rewrites the Conv node in place (new inputs and attributes
 * from the graph's arena, new constants as new values) and kills the
 * nodes it absorbs; the Conv then writes the last absorbed node's output
 * value, and its own old output is left with no producer and no reader.
 * Uses are counted once per pass (graph_sort()), and a pass looks only at
 * values it has not changed, or updates what it changed.
 */
#include "engine/fuse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

/* Whether node is a live ai.onnx node of op. */
static bool node_is(const struct graph_node *node, const char *op)
{
	return !node->dead && strcmp(node->op.op_type, op) == 0 &&
	       op_domain_equal(node->op.domain, "");
}

/* A reader of each value among the live nodes (the only one where the
 * value has one use), -1 for none; malloc'd, NULL when out of memory. */
static int *fuse_readers(const struct graph *g)
{
	int *r = malloc(((size_t)g->n_values + 1) * sizeof(*r));
	int i, j;

	if (r == NULL)
		return NULL;
	for (i = 0; i < g->n_values; i++)
		r[i] = -1;
	for (i = 0; i < g->n_nodes; i++) {
		const struct graph_node *node = &g->nodes[i];

		for (j = 0; !node->dead && j < node->n_in; j++) {
			if (node->in[j] >= 0)
				r[node->in[j]] = i;
		}
	}
	return r;
}

/* The one node that reads v, through one input: -1 when v is a graph
 * output or has any other number of uses, which fusing would break. */
static int only_reader(const struct graph *g, const int *readers, int v)
{
	const struct graph_node *node;
	int n = readers[v], j, seen = 0;

	if ((g->values[v].flags & GRAPH_VALUE_OUTPUT) || g->values[v].n_uses != 1 || n < 0)
		return -1;
	node = &g->nodes[n];
	for (j = 0; j < node->n_in; j++)
		seen += node->in[j] == v;
	return node->dead || seen != 1 ? -1 : n;
}

/* The host data of constant v, or NULL when v is absent or not known. */
static const void *const_data(const struct graph *g, int v)
{
	if (v < 0 || !(g->values[v].flags & GRAPH_VALUE_CONST))
		return NULL;
	return g->values[v].t.data;
}

/* Whether a and b have the same type and the very same dims (symbols
 * included), so that one can be read with the other's indices. */
static bool same_shape(const struct op_tensor *a, const struct op_tensor *b)
{
	int i;

	if (a->dtype != b->dtype || a->rank < 0 || a->rank != b->rank)
		return false;
	for (i = 0; i < a->rank; i++) {
		if (a->dims[i] == OP_DIM_UNKNOWN || a->dims[i] != b->dims[i])
			return false;
	}
	return true;
}

/* Adds a constant value shaped like like, holding data (malloc'd, bytes
 * long; the value takes it, or it is freed on failure), named base plus
 * suffix (plus a number when that is taken); its id goes to *out. */
static int const_new(struct graph *g, const char *base, const char *suffix,
		     const struct op_tensor *like, void *data, size_t bytes, int *out)
{
	char name[512];
	int i, ret = CEP_EEXIST;

	for (i = 0; i < 1000 && ret == CEP_EEXIST; i++) {
		if (i == 0)
			snprintf(name, sizeof(name), "%s%s", base, suffix);
		else
			snprintf(name, sizeof(name), "%s%s.%d", base, suffix, i);
		ret = graph_value_new(g, name, out);
	}
	if (ret < 0) {
		free(data);
		return ret == CEP_EEXIST ? cep__set_error(CEP_EINTERNAL, "no free name for a "
							 "constant of the fusion of '%s'", base) : ret;
	}
	g->values[*out].t = *like;
	g->values[*out].t.data = NULL;
	graph_value_set_const(g, *out, data, bytes);
	return 0;
}

/* Gives node n inputs of at least n_in slots (the new ones -1). */
static int node_inputs_grow(struct graph *g, int n, int n_in)
{
	struct graph_node *node = &g->nodes[n];
	int *in, j;

	if (node->n_in >= n_in)
		return 0;
	in = graph_alloc(g, sizeof(int) * (size_t)n_in);
	if (in == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (j = 0; j < n_in; j++)
		in[j] = j < node->n_in ? node->in[j] : -1;
	node->in = in;
	node->n_in = n_in;
	return 0;
}

/* Node n takes over writing value v from the node that made it (dead by
 * now), and its own first output is dropped. */
static void node_output_take(struct graph *g, int n, int v)
{
	g->values[g->nodes[n].out[0]].producer = -1;
	g->nodes[n].out[0] = v;
	g->values[v].producer = n;
}

/* ------------------------------------------------------------- BatchNorm */

/* The BatchNormalization that alone reads Conv n's output, when it can be
 * folded: spatial, one output, every parameter a constant of M values;
 * else -1. */
static int bn_after(const struct graph *g, const int *readers, int n, int64_t m)
{
	const struct graph_node *bn;
	int b, i;

	b = only_reader(g, readers, g->nodes[n].out[0]);
	if (b < 0 || !node_is(&g->nodes[b], "BatchNormalization"))
		return -1;
	bn = &g->nodes[b];
	if (bn->n_in != 5 || bn->out[0] < 0)
		return -1;
	for (i = 1; i < bn->n_out; i++) {
		if (bn->out[i] >= 0)
			return -1;
	}
	if (bn->op.opset < 9 && op_attr_int(&bn->op, "spatial", 1) == 0)
		return -1;
	for (i = 1; i < 5; i++) {
		const struct op_tensor *t = &g->values[bn->in[i]].t;

		if (const_data(g, bn->in[i]) == NULL || !op_dtype_in(t->dtype, OP_DTS_FLOAT) ||
		    t->rank != 1 || t->dims[0] != m)
			return -1;
	}
	return b;
}

/* Folds the BatchNormalization after Conv n into its W and B, if there is
 * one to fold; *done says whether it did. */
static int fold_bn(struct graph *g, int *readers, int n, bool *done)
{
	struct graph_node *conv = &g->nodes[n];
	const void *wd, *bd = NULL, *p[4];
	struct op_tensor wt, bt;
	int64_t m, per, i, j;
	cep_dtype st[4];
	void *nw = NULL, *nb = NULL;
	int b, wv, bv, w_new, b_new, k, ret;
	double eps;

	*done = false;
	if (!node_is(conv, "Conv") || conv->n_out != 1 || conv->out[0] < 0)
		return 0;
	wv = conv->in[1];
	bv = conv->n_in > 2 ? conv->in[2] : -1;
	wd = const_data(g, wv);
	if (wd == NULL || (bv >= 0 && (bd = const_data(g, bv)) == NULL))
		return 0;
	wt = g->values[wv].t;
	if (!op_dtype_in(wt.dtype, OP_DTS_FLOAT) || wt.rank < 3 || wt.dims[0] < 1)
		return 0;
	m = wt.dims[0];
	b = bn_after(g, readers, n, m);
	if (b < 0)
		return 0;
	per = op_dims_product(&wt, 1, wt.rank);
	for (k = 0; k < 4; k++) {
		p[k] = const_data(g, g->nodes[b].in[1 + k]);
		st[k] = g->values[g->nodes[b].in[1 + k]].t.dtype;
	}
	eps = op_attr_float(&g->nodes[b].op, "epsilon", 1e-5f);
	nw = malloc(op_tensor_bytes(&wt));
	nb = malloc((size_t)m * cep_dtype_size(wt.dtype));
	if (nw == NULL || nb == NULL) {
		free(nw);
		free(nb);
		return cep__set_error(CEP_ENOMEM, "out of memory folding a BatchNormalization");
	}
	/* In double, as the BatchNormalization kernel computes its factors:
	 * y = (conv + B - mean) * a + beta with a = scale / sqrt(var + eps). */
	for (i = 0; i < m; i++) {
		double a = cpu_load_d(p[0], st[0], i) / sqrt(cpu_load_d(p[3], st[3], i) + eps);
		double bias = bd != NULL ? cpu_load_d(bd, wt.dtype, i) : 0.0;

		for (j = 0; j < per; j++)
			cpu_store_d(nw, wt.dtype, i * per + j, cpu_load_d(wd, wt.dtype, i * per + j) * a);
		cpu_store_d(nb, wt.dtype, i,
			    (bias - cpu_load_d(p[2], st[2], i)) * a + cpu_load_d(p[1], st[1], i));
	}
	bt = (struct op_tensor){ .dtype = wt.dtype, .rank = 1, .dims = { m } };
	ret = const_new(g, g->values[wv].name, "/bn_folded", &wt, nw, op_tensor_bytes(&wt), &w_new);
	if (ret < 0) {
		free(nb);
		return ret;
	}
	ret = const_new(g, g->values[conv->out[0]].name, "/bn_folded_bias", &bt, nb,
			op_tensor_bytes(&bt), &b_new);
	if (ret == 0)
		ret = node_inputs_grow(g, n, 3);
	if (ret < 0)
		return ret;
	conv->in[1] = w_new;
	conv->in[2] = b_new;
	graph_node_kill(g, b);
	node_output_take(g, n, g->nodes[b].out[0]);
	*done = true;
	return 0;
}

/* ------------------------------------------------------------ FusedConv */

/* Rewrites Conv n into a FusedConv that reads z (-1: none) and writes
 * value y, with a zero bias when it had none. */
static int fused_rewrite(struct graph *g, int n, int z, int y)
{
	struct graph_node *conv = &g->nodes[n];
	const struct op_tensor *yt = &g->values[conv->out[0]].t;
	const struct op_schema *s;
	struct op_attr *attrs;
	int b_new, ret;

	ret = op_schema_find(OP_DOMAIN_CUDAEP, "FusedConv", 1, &s);
	if (ret < 0)
		return ret;
	ret = node_inputs_grow(g, n, z >= 0 ? 4 : 3);
	if (ret < 0)
		return ret;
	if (conv->in[2] < 0) {
		struct op_tensor bt = { .dtype = yt->dtype, .rank = 1, .dims = { yt->dims[1] } };
		size_t bytes = op_tensor_bytes(&bt);
		void *zeros = calloc(1, bytes ? bytes : 1);

		if (zeros == NULL)
			return cep__set_error(CEP_ENOMEM, NULL);
		ret = const_new(g, g->values[conv->out[0]].name, "/zero_bias", &bt, zeros, bytes,
				&b_new);
		if (ret < 0)
			return ret;
		conv->in[2] = b_new;
	}
	if (z >= 0)
		conv->in[3] = z;
	attrs = graph_alloc(g, sizeof(*attrs) * (size_t)(conv->op.n_attrs + 1));
	if (attrs == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	if (conv->op.n_attrs > 0)
		memcpy(attrs, conv->op.attrs, sizeof(*attrs) * (size_t)conv->op.n_attrs);
	attrs[conv->op.n_attrs] = (struct op_attr){ .name = "activation", .type = OP_ATTR_STRING,
						    .s = "Relu" };
	conv->op.attrs = attrs;
	conv->op.n_attrs++;
	conv->op.op_type = "FusedConv";
	conv->op.domain = OP_DOMAIN_CUDAEP;
	conv->op.opset = 1;
	conv->schema = s;
	node_output_take(g, n, y);
	return 0;
}

/* Fuses Conv n with the Relu, or the Add and Relu, after it, if they are
 * there to fuse; *done says whether it did. */
static int fuse_relu(struct graph *g, int *readers, int n, bool *done)
{
	const struct graph_node *conv = &g->nodes[n];
	const struct op_kernel *k;
	struct op_tensor yt;
	int r, add = -1, z = -1, y, ret;

	*done = false;
	if (!node_is(conv, "Conv") || conv->n_out != 1 || conv->out[0] < 0)
		return 0;
	y = conv->out[0];
	yt = g->values[y].t;
	if (!op_dtype_in(yt.dtype, OP_DTS_FLOAT) || yt.rank < 3 || !op_dim_fixed(yt.dims[1]))
		return 0;
	/* What the Conv alone would refuse stays a Conv, refused as one. */
	if (op_kernel_find(conv->schema, conv->op.opset, BACKEND_HOST, yt.dtype, &k) < 0) {
		cep__clear_error();
		return 0;
	}
	r = only_reader(g, readers, y);
	if (r >= 0 && node_is(&g->nodes[r], "Add") && g->nodes[r].n_in == 2 &&
	    g->nodes[r].n_out == 1 && g->nodes[r].out[0] >= 0) {
		add = r;
		z = g->nodes[add].in[0] == y ? g->nodes[add].in[1] : g->nodes[add].in[0];
		if (z < 0 || z == y || !same_shape(&g->values[z].t, &yt))
			return 0;
		r = only_reader(g, readers, g->nodes[add].out[0]);
	}
	if (r < 0 || !node_is(&g->nodes[r], "Relu") || g->nodes[r].n_in != 1 ||
	    g->nodes[r].n_out != 1 || g->nodes[r].out[0] < 0)
		return 0;
	if (add >= 0)
		graph_node_kill(g, add);
	graph_node_kill(g, r);
	ret = fused_rewrite(g, n, z, g->nodes[r].out[0]);
	if (ret < 0)
		return ret;
	if (z >= 0)
		readers[z] = n;
	*done = true;
	return 0;
}

/* ------------------------------------------------------------------ pass */

/* Runs one fusion over every live node in order. */
static int fuse_pass(struct graph *g, int (*fn)(struct graph *, int *, int, bool *), int *count)
{
	int *readers = fuse_readers(g);
	bool done;
	int k, ret = 0;

	if (readers == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory fusing the graph");
	for (k = 0; k < g->n_order && ret == 0; k++) {
		ret = fn(g, readers, g->order[k], &done);
		*count += done;
	}
	free(readers);
	return ret;
}

int fuse_graph(struct graph *g)
{
	int folded = 0, fused = 0, ret;

	ret = fuse_pass(g, fold_bn, &folded);
	/* A folded Conv now writes what its BatchNormalization wrote: count
	 * uses afresh before looking at what reads it. */
	if (ret == 0 && folded > 0)
		ret = graph_sort(g);
	if (ret == 0)
		ret = fuse_pass(g, fuse_relu, &fused);
	if (ret == 0 && folded + fused > 0)
		ret = graph_simplify(g);
	return ret;
}
