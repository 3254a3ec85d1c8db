/*
 * graph.h — the engine's graph IR: values and the nodes that compute them.
 *
 * engine/model.c builds a graph from an ONNX file; engine/shape.c fills in
 * types and shapes; engine/optimize.c folds constants and drops what is not
 * needed; engine/plan.c turns it into an execution plan. A value has a
 * name, a type and a shape whose dimensions may be symbolic (kernels/ops.h
 * says how they are encoded), at most one producing node, and, when it is
 * known at load (an initializer or a folded result), its data on the host.
 * A node has its operator's schema, the opset in force for its domain,
 * typed attributes, and value ids for its inputs and outputs, -1 where an
 * optional one is omitted.
 *
 * A node of control flow (If, Loop, Scan) holds its subgraphs: graphs of
 * their own (values, nodes, order), whose parent is the node's graph. A
 * subgraph may read any value of an enclosing graph by name; such a
 * reference is a trailing input of the subgraph (GRAPH_VALUE_OUTER), and
 * the node reads the value it stands for as one of its implicit inputs,
 * the last n_implicit of in[], so that sorting, liveness and every rewrite
 * of the enclosing graph see the use. Symbols (dim_params) are the model
 * graph's, shared by every subgraph.
 *
 * Values and nodes are referred to by index, never by pointer: the arrays
 * grow. Nodes are never moved or deleted, only marked dead, so a node's
 * index stays the one it had in the model file and messages can name it.
 * Strings, attributes and index arrays live in the graph's arena and go
 * away with it; constant data is malloc'd and owned by its value.
 *
 * A graph is built and changed by one thread; once loaded it is read-only
 * and may be read from any number of threads.
 */
#ifndef CEP_DAEMON_GRAPH_H
#define CEP_DAEMON_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/registry.h"

enum graph_value_flags {
	GRAPH_VALUE_INPUT = 1u << 0,  /* given by the caller at run time */
	GRAPH_VALUE_OUTPUT = 1u << 1, /* returned to the caller */
	GRAPH_VALUE_CONST = 1u << 2,  /* known at load: t.data holds it */
	GRAPH_VALUE_OUTER = 1u << 3,  /* a subgraph's input standing for a value
	                               * of an enclosing graph (with INPUT) */
};

struct graph_value {
	const char *name;   /* unique in the graph; in the arena */
	struct op_tensor t; /* dtype, rank, dims (symbolic at load); data: the
	                     * constant's elements on the host (malloc, owned) */
	size_t bytes;       /* of t.data */
	int producer;       /* node index; -1 for inputs and constants */
	int n_uses;         /* input slots of live nodes that read it */
	unsigned flags;     /* enum graph_value_flags */
};

struct graph;

/* A graph attribute of a node (then_branch, else_branch, body). */
struct graph_sub {
	const char *attr;   /* the attribute's name, in the node's graph's arena */
	struct graph *g;    /* the subgraph (malloc, owned by the node's graph) */
	int *slot;          /* (g->n_outer) per outer reference of g, in order:
	                     * the index in the node's in[] of the value it
	                     * reads (one of the implicit inputs) */
};

struct graph_node {
	struct op_node op;  /* name, op_type, domain, opset, attributes */
	const struct op_schema *schema;
	int n_in, n_out;
	int *in;            /* (n_in) value ids, -1: omitted optional input;
	                     * the last n_implicit are the values of this graph
	                     * that its subgraphs read */
	int *out;           /* (n_out) value ids, -1: omitted optional output */
	int n_implicit;     /* of n_in; 0 for a node without subgraphs */
	struct graph_sub *subs; /* (n_subs) its graph attributes, in the arena */
	int n_subs;
	bool dead;          /* folded or removed; kept so indexes stay */
};

struct graph_chunk;

struct graph {
	struct graph_value *values;  /* (n_values) */
	int n_values, cap_values;
	struct graph_node *nodes;    /* (n_nodes), in model file order */
	int n_nodes, cap_nodes;
	int *inputs;                 /* (n_inputs) value ids of the graph inputs */
	int n_inputs;
	int *outputs;                /* (n_outputs) value ids of the graph outputs */
	int n_outputs;
	int *order;                  /* (n_order) live nodes, topologically */
	int n_order;
	const char **syms;           /* (n_syms) names of symbolic dims */
	int n_syms, cap_syms;
	int *slots;                  /* (n_slots) name hash: value id + 1, 0 empty */
	int n_slots;
	struct graph_chunk *chunks;  /* the arena */
	/* A subgraph's place in the model: */
	struct graph *parent;        /* the graph of the node holding it; NULL
	                              * for the model's graph */
	int depth;                   /* subgraphs above it: 0 for the model's */
	int n_outer;                 /* of inputs: the last n_outer are outer-scope
	                              * references (GRAPH_VALUE_OUTER) */
	const char *scope;           /* NULL for the model's graph; else where
	                              * it is, for messages ("body of node 0
	                              * (op Loop, ...)"); in the arena */
	cep_dtype *declared;         /* of a subgraph: (formal inputs, then
	                              * outputs) the element types its file
	                              * declares, CEP_DTYPE_UNDEFINED where it
	                              * declares none; malloc; NULL for the
	                              * model's graph */
};

/* Makes g an empty graph in caller memory. Returns 0 or CEP_ENOMEM. */
int graph_init(struct graph *g);

/* Releases everything g holds, constant data and subgraphs included.
 * Accepts NULL and a graph whose init failed. */
void graph_close(struct graph *g);

/* bytes of zeroed memory that live as long as g; NULL when out of memory. */
void *graph_alloc(struct graph *g, size_t bytes);

/* A copy of s (NULL: "") in g's arena; NULL when out of memory. */
char *graph_strdup(struct graph *g, const char *s);

/*
 * Adds a value called name (copied) with no type, producer or flags and
 * stores its id in *id. Fails with CEP_EEXIST when the name is taken (no
 * message: the caller knows what the name was for) or CEP_ENOMEM.
 */
int graph_value_new(struct graph *g, const char *name, int *id);

/* The id of the value called name, or -1. */
int graph_value_find(const struct graph *g, const char *name);

/* Hands data (bytes long, malloc'd; NULL for zero bytes) to value v as its
 * constant contents: v becomes GRAPH_VALUE_CONST with no producer. */
void graph_value_set_const(struct graph *g, int v, void *data, size_t bytes);

/* Adds a node with n_in inputs and n_out outputs (all -1), no operator
 * yet, and stores its index in *id. Returns 0 or CEP_ENOMEM. */
int graph_node_new(struct graph *g, int n_in, int n_out, int *id);

/* Marks node n dead: its outputs lose their producer, its tensor
 * attributes' data is freed. */
void graph_node_kill(struct graph *g, int n);

/* The index of symbol name, added when new, among the symbols of g's
 * model graph (every subgraph shares them); a negative CEP_ENOMEM on
 * failure. */
int graph_symbol(struct graph *g, const char *name);

/* The model graph above g (g itself for the model's graph): the one that
 * holds the symbols. */
const struct graph *graph_root(const struct graph *g);

/* The subgraph of node n's graph attribute attr, or NULL. */
struct graph *graph_node_sub(const struct graph *g, int n, const char *attr);

/*
 * Recounts uses and recomputes g->order, the live nodes in topological
 * order (Kahn's algorithm, ties kept in file order). Returns 0, CEP_EMODEL
 * naming a node on a cycle ("node 4 'b' (op Add, ...): is on a cycle
 * through its input 'x'"), or CEP_ENOMEM.
 */
int graph_sort(struct graph *g);

/*
 * Removes Identity nodes (their consumers read the Identity's input; one
 * that feeds a graph output renames its input's producer instead when it
 * can) and nodes whose results nobody needs, frees the data of constants
 * nobody reads, and sorts again. g must be sorted. Returns 0 or an error of
 * graph_sort().
 */
int graph_simplify(struct graph *g);

/* The number of live nodes. */
int graph_live_nodes(const struct graph *g);

/* Writes "node 3 'mm' (op MatMul, domain ai.onnx, opset 13)" into buf,
 * followed by " in <scope>" for a node of a subgraph. */
void graph_node_label(const struct graph *g, int n, char *buf, size_t len);

/* Records "<label of node n>: <fmt ...>" as the thread's error message and
 * returns err. */
int graph_node_fail(const struct graph *g, int n, int err, const char *fmt, ...)
	CEP_PRINTF(4, 5);

/* Prefixes the thread's current error message with the label of node n and
 * returns err, for errors raised below (inference, kernels, registry). */
int graph_node_wrap(const struct graph *g, int n, int err);

#endif
