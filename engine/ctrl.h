/*
 * ctrl.h — control flow as the engine sees it: how an If, Loop or Scan
 * node's inputs and outputs map onto its subgraphs' at each opset, checked
 * once, and the rules for the types and shapes that come out of it. Load-
 * time inference (engine/shape.c) and planning (engine/plan_ctrl.c) share
 * these; what runs the subgraphs is the planner's and the executor's
 * (engine/plan_ctrl.c, engine/exec_ctrl.c).
 *
 * The mapping, per ONNX:
 *   If (cond; outer...)         then_branch and else_branch: no inputs, the
 *                               node's outputs.
 *   Loop (M, cond, v...; outer) body (iteration, cond, v...) -> (cond, v...,
 *                               scan...); the node gives (v..., scan...),
 *                               each scan output the body's values of every
 *                               iteration stacked along a new axis 0.
 *   Scan 9+ (s..., x...; outer) body (s..., x[t]...) -> (s..., y...);
 *                               x[t] is x's element t along its
 *                               scan_input_axes entry, each y stacked
 *                               along its scan_output_axes entry.
 *   Scan 8 (lens, s..., x...)   the same for every row of a batch axis 0 of
 *                               every input and output, the scan axis 1.
 * Nothing here allocates or calls above the graph IR.
 */
#ifndef CEP_ENGINE_CTRL_H
#define CEP_ENGINE_CTRL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/graph.h"

enum ctrl_kind {
	CTRL_IF,
	CTRL_LOOP,
	CTRL_SCAN,
};

/* A control node's shape: its kind, subgraphs and how its inputs and
 * outputs divide. */
struct ctrl_layout {
	enum ctrl_kind kind;
	const struct graph *sub[2];   /* If: then, else; Loop, Scan: the body */
	const struct graph_sub *gs[2]; /* the same, with their outer slots */
	int n_subs;                   /* 2 for If, else 1 */
	int n_explicit;               /* the node's own inputs (not the implicit) */
	int n_state;                  /* N: Loop's carried values, Scan's states */
	int first_state;              /* the node input of state 0: Loop 2,
	                               * Scan 8 1, Scan 9+ 0 */
	int n_scan_in;                /* Scan's M */
	int n_scan_out;               /* K: scan outputs (Loop, Scan) */
	bool batch;                   /* Scan 8: a batch axis 0, scan axis 1 */
};

/*
 * Reads and checks the layout of control node n of g (its schema has
 * OP_CONTROL): the graph attributes it needs are there, and the counts of
 * the node's inputs and outputs fit its subgraphs'. Returns 0 or
 * CEP_EMODEL naming the node and what does not fit.
 */
int ctrl_layout(const struct graph *g, int n, struct ctrl_layout *l);

/*
 * Fills sub_in (one per input of subgraph which, formal then outer) with
 * what the subgraph is given from the node's inputs in (n_in of them,
 * implicit ones included): type and shape, and, for the outer ones, the
 * data in carries; the formal ones get no data. Checks the node's inputs
 * (a Loop's M and cond, If's cond: their types and element count; Scan's
 * axes and ranks) and the types the subgraph declares. Returns 0,
 * CEP_EMODEL (bad attributes), CEP_EDTYPE or CEP_ESHAPE naming the node.
 */
int ctrl_sub_inputs(const struct graph *g, int n, const struct ctrl_layout *l, int which,
		    const struct op_tensor *in, struct op_tensor *sub_in);

/* Checks the outputs of subgraph which, as inferred (sub_out, one per
 * output), against the element types the file declares. Returns 0 or
 * CEP_EDTYPE naming the node. */
int ctrl_sub_declared(const struct graph *g, int n, const struct ctrl_layout *l, int which,
		      const struct op_tensor *sub_out);

/* A Scan's length: the size of every scan input along its scan axis,
 * which must agree (CEP_ESHAPE naming the node otherwise); a dimension
 * not fixed yet gives OP_DIM_UNKNOWN. */
int ctrl_scan_length(const struct graph *g, int n, const struct ctrl_layout *l,
		     const struct op_tensor *in, int64_t *len);

/* Scan's axis and direction of scan input i (out: false) or of scan
 * output i (out: true) of rank rank (the scan output's, the new axis
 * counted). Returns 0 or CEP_EMODEL naming the node. */
int ctrl_scan_axis(const struct graph *g, int n, const struct ctrl_layout *l, bool out, int i,
		   int rank, int *axis, bool *reverse);

/*
 * The node's outputs from its subgraphs' (sub_out[which][output]):
 *   If: the branch taken when branch is 0 (then) or 1 (else); when it is
 *     -1 (not known), each output's type must agree between the branches
 *     and its dims are those both have (others OP_DIM_UNKNOWN, rank -1
 *     when the ranks differ).
 *   Loop: each carried value's type must be its initial value's, its
 *     shape what the initial and the body's agree on; each scan output is
 *     the body's with a new axis 0 of trip iterations (OP_DIM_UNKNOWN: not
 *     known).
 *   Scan: the states likewise; each scan output the body's with the
 *     length inserted at its axis (and the batch axis before, Scan 8).
 * in are the node's inputs. Returns 0, CEP_EDTYPE or CEP_ESHAPE naming
 * the node.
 */
int ctrl_outputs(const struct graph *g, int n, const struct ctrl_layout *l,
		 const struct op_tensor *in, const struct op_tensor *const *sub_out, int branch,
		 int64_t trip, struct op_tensor *out);

/* Node n of g being an If whose condition is a constant: the branch it
 * takes (0 then_branch, 1 else_branch); else -1. */
int ctrl_if_taken(const struct graph *g, int n);

/* Whether an If's branch that fails to infer or plan with err may be set
 * aside for the other, as a branch never taken for these shapes (an
 * exported model's 2-D branch of a 3-D input, say): shapes that do not
 * fit, or that cudaep cannot plan; never a type the file gets wrong, nor
 * the machine's errors. */
bool ctrl_branch_may_fail(int err);

/* How a Loop's body computes its condition (its output 0). */
enum ctrl_cond {
	CTRL_COND_KEEP,      /* passes its input cond through: it never changes */
	CTRL_COND_CONST,     /* a constant of the body */
	CTRL_COND_OUTER,     /* a value of an enclosing graph (its outer index) */
	CTRL_COND_COMPUTED,  /* anything else: known only by running it */
};

/* How body computes its condition, following Identity nodes back; *index
 * is the outer reference's index for CTRL_COND_OUTER, *value the
 * constant's for CTRL_COND_CONST. */
enum ctrl_cond ctrl_loop_cond(const struct graph *body, int *index, bool *value);

#define CTRL_TRIP_UNKNOWN INT64_C(-1) /* known only by running it */
#define CTRL_TRIP_ENDLESS INT64_C(-2) /* never ends */

/*
 * The iterations a Loop runs, from what is known: has_m (M is given) and
 * m (its value, 0 for a negative one, or CTRL_TRIP_UNKNOWN); cond0 (the initial cond: 1, 0, or
 * -1 when not known; an omitted cond is 1); how the body computes its
 * condition (cond; a condition known from a constant or an outer value is
 * CTRL_COND_CONST with its value in cond_value, an outer one not known
 * CTRL_COND_COMPUTED). Returns the count, CTRL_TRIP_UNKNOWN or
 * CTRL_TRIP_ENDLESS.
 */
int64_t ctrl_loop_trip(bool has_m, int64_t m, int cond0, enum ctrl_cond cond, bool cond_value);

#endif
