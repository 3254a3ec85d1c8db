/*
 * plan_priv.h — what the planner's files share (engine/plan.h is their
 * public face): the scratch state of one build and the steps of a build
 * that live in files of their own.
 *
 * plan.c drives a build: it walks the graph node by node (folding what it
 * can, making steps of the rest) and calls down into plan_values.c, which
 * learns the values a shape depends on from the run's inputs, and
 * plan_layout.c, which prepares the steps' calls and gives every value a
 * home in memory, and plan_ctrl.c, which says which subplans a control
 * node needs and what its outputs are once plan.c has built them. None
 * calls back into plan.c. Internal to engine/plan*.c: nothing else
 * includes it.
 */
#ifndef CEP_ENGINE_PLAN_PRIV_H
#define CEP_ENGINE_PLAN_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/plan.h"

/* Where a value lives while a plan runs. */
enum plan_home {
	PLAN_HOME_NONE,   /* not needed at run time */
	PLAN_HOME_CONST,  /* the session's copy of a model constant */
	PLAN_HOME_BLOCK,  /* an offset in the plan's block */
	PLAN_HOME_BOUND,  /* a graph input read in place (env->input_dev) */
};

/* Scratch state of one build, per value of the graph unless said. */
struct plan_builder {
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
	enum plan_home *home;
	void **bound;            /* a graph input's env->input_dev, or NULL */
	size_t *offset;          /* in the block, for PLAN_HOME_BLOCK */
	struct op_tensor *in, *out; /* per-node scratch */
	struct op_tensor *ein, *eout; /* scratch of evaluations for a shape */
};

/* Why values a shape needs cannot be known while planning. */
struct plan_unknowable {
	int input;  /* a graph input that cannot key the plan, or -1 */
	int node;   /* a node that cannot be evaluated here, or -1 */
};

/* ------------------------------------------ values shapes depend on: plan_values.c */

/* Fills in with node n's inputs as far as they are known (type and shape,
 * and the value on the host when there is one). */
void plan__inputs_fill(const struct plan_builder *b, int n, struct op_tensor *in);

/* Sets *which to the first output of node n whose shape in b->out is not
 * fixed, -1 when all are; fails only for a tensor beyond OP_MAX_NUMEL. */
int plan__outputs_unfixed(const struct plan_builder *b, int n, int *which);

/* Node n, at position k of the order, has an output whose shape is not
 * fixed: learns the values it depends on from the run where it can, until
 * every output is fixed. Leaves in *unfixed the output still not fixed
 * (-1: none) and in *why the first reason a value could not be learnt.
 * Fails with the errors of evaluating or inferring a node. */
int plan__values_resolve(struct plan_builder *b, int k, int n, int *unfixed,
			 struct plan_unknowable *why);

/* The CEP_EUNSUPPORTED refusal of node n, whose output o has a shape that
 * could not be settled, saying why when that is known. */
int plan__unfixed_refuse(const struct plan_builder *b, int n, int o,
			 const struct plan_unknowable *why);

/* Learns value v, read by the node at position k of the order, while
 * planning, as plan__values_resolve() learns what a shape needs: sets
 * *learnt and leaves it in b->host[v], or leaves *learnt false with the
 * reason in *why. Fails with the errors of evaluating a node. */
int plan__value_learn(struct plan_builder *b, int k, int v, bool *learnt,
		      struct plan_unknowable *why);

/* ------------------------------------------ an If on the host: plan_eval.c */

/* Whether If node n can be evaluated on the host while planning once its
 * inputs are known: every node of its branches (their Ifs' included) is
 * an operator the host may evaluate then. */
bool plan__if_foldable(const struct plan_builder *b, int n);

/*
 * Evaluates If node n on the host with its inputs in (the node's, data
 * set where known): the branch its condition takes, node by node. On
 * success with *done set, out (n_out) holds the outputs' types, shapes
 * and malloc'd data, the caller's. *done stays false, nothing allocated,
 * when the condition or a value the branch reads is not known, or a node
 * cannot be evaluated here (no host kernel, an output over
 * PLAN_FOLD_MAX_BYTES). Fails with the errors of inference and kernels,
 * naming the node.
 */
int plan__if_fold(const struct plan_builder *b, int n, const struct op_tensor *in,
		  struct op_tensor *out, bool *done);

/* ------------------------------------------- control flow: plan_ctrl.c */

/* A control node being planned: the subplan it wants built next. plan.c
 * builds each one asked for (want) with env and in, and hands it over. */
struct plan_ctrl_build {
	struct plan_ctrl *c;
	int k, n;                  /* the node, and its position in the order */
	bool want;                 /* a subplan is to be built: */
	int which;                 /* of subgraph which */
	int iter;                  /* for iteration iter (a Loop's body) */
	struct plan_env env;
	struct op_tensor *in;      /* (the subgraph's inputs) its inputs */
	void **bound;              /* (the same) env.input_dev */
	int64_t iter_value;        /* the data of a Loop body's iteration input */
	struct plan *drop;         /* planned and not needed after all: the
	                            * caller frees it */
};

/* Starts planning control node n at position k (b->in holds its inputs):
 * makes *out, which the caller owns (and frees with its plan) even on
 * failure, and asks for the first subplan. Fails with CEP_ENOMEM or the
 * errors of the node's layout and inputs (engine/ctrl.h). */
int plan__ctrl_begin(struct plan_builder *b, int k, int n, struct plan_ctrl **out,
		     struct plan_ctrl_build *cb);

/* Takes the subplan asked for (sub, owned from now on, NULL when its
 * build failed with ret), and asks for the next one, if any. Fails with
 * ret when the node cannot do without it, or with what the subplan's
 * shapes refuse. */
int plan__ctrl_take(struct plan_builder *b, struct plan_ctrl_build *cb, int ret,
		    struct plan *sub);

/* Once no subplan is wanted: settles the node's outputs into b->out
 * (every shape fixed) and what its run reads back, and adds what the
 * subplans hold to b->p. Fails with CEP_EUNSUPPORTED (an output shape or
 * trip count that only running would tell, a loop that never ends),
 * CEP_ESHAPE / CEP_EDTYPE, naming the node. */
int plan__ctrl_end(struct plan_builder *b, struct plan_ctrl_build *cb);

/* After the subplan asked for failed with CEP_EUNSUPPORTED (a shape that
 * needs a value): learns the integer values of the enclosing graph it
 * reads and does not know, where the run can tell them, into cb->in.
 * Sets *again when it learnt one (build the subplan again). Fails with
 * the errors of evaluating a node. */
int plan__ctrl_learn(struct plan_builder *b, struct plan_ctrl_build *cb, bool *again);

/* Frees cb's scratch (never a plan). */
void plan__ctrl_build_close(struct plan_ctrl_build *cb);

/* --------------------------------------------- calls and memory: plan_layout.c */

/* Fills the steps' calls (tensors without data yet) and runs each
 * kernel's prepare; the largest workspace is what the plan reserves.
 * Fails with CEP_ENOMEM or a kernel's error naming the node. */
int plan__calls_prepare(struct plan_builder *b);

/* Decides where each value lives and places those of the block; fails
 * with CEP_ELIMIT past env->max_block_bytes, CEP_ENOMEM, CEP_EINTERNAL. */
int plan__memory_place(struct plan_builder *b);

/* Allocates the block, uploads plan-time values and points every call and
 * copy at its memory. Fails with the backend's errors or CEP_ENOMEM. */
int plan__block_bind(struct plan_builder *b);

#endif /* CEP_ENGINE_PLAN_PRIV_H */
