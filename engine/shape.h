/*
 * shape.h — type and shape inference over the graph IR, and the binding of
 * symbolic dimensions to the shapes of actual inputs.
 *
 * At load (shape_infer_graph) every value gets a dtype and as much of its
 * shape as can be known: dim_param names carry through ("batch" stays
 * "batch" across a MatMul), unknown sizes stay unknown. At plan time the
 * planner binds the inputs' real shapes (shape_bind_input), checking them
 * against what the model declares, and runs the same inference functions
 * node by node with every dimension fixed (shape_infer_node).
 */
#ifndef CEP_DAEMON_SHAPE_H
#define CEP_DAEMON_SHAPE_H

#include "engine/graph.h"

/*
 * Infers the dtype and shape of every value computed by a live node of the
 * sorted graph g, in order. Returns 0 or the first failure (CEP_EDTYPE,
 * CEP_ESHAPE, CEP_EMODEL, CEP_EUNSUPPORTED) with a message that names the
 * node.
 */
int shape_infer_graph(struct graph *g);

/*
 * Runs node n's inference function on in (n_in tensors, data set where the
 * value is known on the host) into out (n_out tensors, overwritten) and
 * checks what it produced. Returns 0 or an error naming the node.
 */
int shape_infer_node(const struct graph *g, int n, const struct op_tensor *in,
		     struct op_tensor *out);

/* Symbols bound so far while checking a run's inputs; caller memory, sized
 * to the graph's n_syms. */
struct shape_binding {
	int64_t *vals; /* (n) the size each symbol stands for, -1: unbound */
	int *from;     /* (n) the graph input value that bound it */
	int n;
};

/* Marks every symbol of b unbound. */
void shape_binding_reset(struct shape_binding *b);

/*
 * Checks that an input of the given rank and dims fits graph input value v
 * of g: same rank, equal fixed dims, symbols consistent with earlier
 * inputs (binding them in b). Returns 0 or CEP_ESHAPE with a message such
 * as "input 'x': dimension 1 is 3, the model wants 4" or "input 'y':
 * dimension 0 is 3, but 'batch' is 2 from input 'x'".
 */
int shape_bind_input(const struct graph *g, int v, int rank, const int64_t *dims,
		     struct shape_binding *b);

#endif
