/*
 * test_graph.c — the graph IR on its own: the name index, topological
 * order of nodes given out of order, cycles (the node named is on the
 * cycle), Identity removal in its three cases, dead-node removal, and node
 * labels in messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/graph.h"

static int value(struct graph *g, const char *name)
{
	int v = graph_value_find(g, name);

	if (v < 0)
		cr_assert_eq(graph_value_new(g, name, &v), 0);
	return v;
}

/* Adds node "op(in) -> out" with one or two inputs (b may be NULL). */
static int node(struct graph *g, const char *op, const char *a, const char *b,
		const char *out)
{
	int n, va, vb, vo;

	cr_assert_eq(graph_node_new(g, b ? 2 : 1, 1, &n), 0);
	g->nodes[n].op.op_type = graph_strdup(g, op);
	g->nodes[n].op.name = graph_strdup(g, out);
	g->nodes[n].op.opset = 13;
	va = value(g, a);
	vb = b ? value(g, b) : -1;
	vo = value(g, out);
	g->nodes[n].in[0] = va;
	if (b)
		g->nodes[n].in[1] = vb;
	g->nodes[n].out[0] = vo;
	g->values[vo].producer = n;
	return n;
}

static void mark(struct graph *g, const char *name, unsigned flags)
{
	int v = value(g, name); /* may move g->values */

	g->values[v].flags |= flags;
}

/* The position of node n in g->order, -1 when not there. */
static int pos(const struct graph *g, int n)
{
	int k;

	for (k = 0; k < g->n_order; k++) {
		if (g->order[k] == n)
			return k;
	}
	return -1;
}

Test(graph, names_index_values)
{
	struct graph g;
	int a, b, i, v;
	char name[32];

	cr_assert_eq(graph_init(&g), 0);
	cr_assert_eq(graph_value_new(&g, "a", &a), 0);
	cr_assert_eq(graph_value_new(&g, "b", &b), 0);
	cr_assert_eq(graph_value_new(&g, "a", &v), CEP_EEXIST);
	cr_assert_eq(graph_value_find(&g, "a"), a);
	cr_assert_eq(graph_value_find(&g, "b"), b);
	cr_assert_eq(graph_value_find(&g, "c"), -1);
	/* Enough to grow the table several times. */
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		cr_assert_eq(graph_value_new(&g, name, &v), 0);
	}
	for (i = 0; i < 5000; i += 7) {
		snprintf(name, sizeof(name), "v%d", i);
		v = graph_value_find(&g, name);
		cr_assert_geq(v, 0);
		cr_assert_str_eq(g.values[v].name, name);
	}
	cr_assert_eq(graph_symbol(&g, "batch"), 0);
	cr_assert_eq(graph_symbol(&g, "seq"), 1);
	cr_assert_eq(graph_symbol(&g, "batch"), 0);
	graph_close(&g);
}

Test(graph, sort_orders_nodes_given_out_of_order)
{
	struct graph g;
	int n_d, n_c, n_b, n_a;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	/* Written last to first. */
	n_d = node(&g, "Add", "b", "c", "d");
	n_c = node(&g, "Relu", "a", NULL, "c");
	n_b = node(&g, "Relu", "a", NULL, "b");
	n_a = node(&g, "Relu", "x", NULL, "a");
	mark(&g, "d", GRAPH_VALUE_OUTPUT);
	cr_assert_eq(graph_sort(&g), 0);
	cr_assert_eq(g.n_order, 4);
	cr_assert_lt(pos(&g, n_a), pos(&g, n_b));
	cr_assert_lt(pos(&g, n_a), pos(&g, n_c));
	cr_assert_lt(pos(&g, n_b), pos(&g, n_d));
	cr_assert_lt(pos(&g, n_c), pos(&g, n_d));
	cr_assert_eq(g.values[value(&g, "a")].n_uses, 2);
	graph_close(&g);
}

Test(graph, cycle_error_names_a_node_on_the_cycle)
{
	struct graph g;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	node(&g, "Relu", "x", NULL, "t0");     /* 0: fine */
	node(&g, "Relu", "t0", NULL, "t1");    /* 1: fine */
	node(&g, "Add", "t1", "c3", "c1");     /* 2: on the cycle */
	node(&g, "Relu", "c1", NULL, "c2");    /* 3: on the cycle */
	node(&g, "Relu", "c2", NULL, "c3");    /* 4: on the cycle */
	node(&g, "Relu", "c3", NULL, "tail");  /* 5: after it, not on it */
	cr_assert_eq(graph_sort(&g), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "node 2 'c1'") || strstr(cep_last_error(), "node 3 'c2'") ||
		  strstr(cep_last_error(), "node 4 'c3'"), "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "is on a cycle through its input"), "%s",
		  cep_last_error());
	graph_close(&g);
}

Test(graph, identity_between_nodes_disappears)
{
	struct graph g;
	int relu2;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	node(&g, "Relu", "x", NULL, "a");
	node(&g, "Identity", "a", NULL, "b");
	node(&g, "Identity", "b", NULL, "c");
	relu2 = node(&g, "Relu", "c", NULL, "y");
	mark(&g, "y", GRAPH_VALUE_OUTPUT);
	cr_assert_eq(graph_sort(&g), 0);
	cr_assert_eq(graph_simplify(&g), 0);
	cr_assert_eq(graph_live_nodes(&g), 2);
	cr_assert_eq(g.nodes[relu2].in[0], value(&g, "a"), "the Relu reads a directly");
	graph_close(&g);
}

Test(graph, identity_to_an_output_renames_its_producer)
{
	struct graph g;
	int relu;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	relu = node(&g, "Relu", "x", NULL, "a");
	node(&g, "Identity", "a", NULL, "y");
	mark(&g, "y", GRAPH_VALUE_OUTPUT);
	cr_assert_eq(graph_sort(&g), 0);
	cr_assert_eq(graph_simplify(&g), 0);
	cr_assert_eq(graph_live_nodes(&g), 1);
	cr_assert_eq(g.nodes[relu].out[0], value(&g, "y"));
	cr_assert_eq(g.values[value(&g, "y")].producer, relu);
	graph_close(&g);
}

Test(graph, identity_from_an_input_to_an_output_stays)
{
	struct graph g;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	node(&g, "Identity", "x", NULL, "y");
	mark(&g, "y", GRAPH_VALUE_OUTPUT);
	cr_assert_eq(graph_sort(&g), 0);
	cr_assert_eq(graph_simplify(&g), 0);
	cr_assert_eq(graph_live_nodes(&g), 1, "x and y must both stay visible");
	graph_close(&g);
}

Test(graph, dead_chains_are_removed)
{
	struct graph g;
	int keep;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	keep = node(&g, "Relu", "x", NULL, "y");
	node(&g, "Relu", "x", NULL, "d1");
	node(&g, "Relu", "d1", NULL, "d2");
	node(&g, "Add", "d2", "y", "d3");
	mark(&g, "y", GRAPH_VALUE_OUTPUT);
	cr_assert_eq(graph_sort(&g), 0);
	cr_assert_eq(graph_live_nodes(&g), 4);
	cr_assert_eq(graph_simplify(&g), 0);
	cr_assert_eq(graph_live_nodes(&g), 1);
	cr_assert_eq(g.n_order, 1);
	cr_assert_eq(g.order[0], keep);
	cr_assert_eq(g.values[value(&g, "x")].n_uses, 1);
	graph_close(&g);
}

Test(graph, labels_name_index_op_domain_and_opset)
{
	struct graph g;
	char buf[128];
	int n;

	cr_assert_eq(graph_init(&g), 0);
	mark(&g, "x", GRAPH_VALUE_INPUT);
	n = node(&g, "Relu", "x", NULL, "r");
	graph_node_label(&g, n, buf, sizeof(buf));
	cr_assert_str_eq(buf, "node 0 'r' (op Relu, domain ai.onnx, opset 13)");
	g.nodes[n].op.name = "";
	g.nodes[n].op.domain = "com.example";
	graph_node_label(&g, n, buf, sizeof(buf));
	cr_assert_str_eq(buf, "node 0 (op Relu, domain com.example, opset 13)");
	cr_assert_eq(graph_node_fail(&g, n, CEP_EMODEL, "bad %d", 7), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "node 0 (op Relu, domain com.example, opset 13): bad 7");
	cep__set_error(CEP_ESHAPE, "inner");
	cr_assert_eq(graph_node_wrap(&g, n, CEP_ESHAPE), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "node 0 (op Relu, domain com.example, opset 13): inner");
	graph_close(&g);
}

Test(graph, close_accepts_null_and_failed_init)
{
	struct graph g;

	graph_close(NULL);
	memset(&g, 0, sizeof(g));
	graph_close(&g);
}
