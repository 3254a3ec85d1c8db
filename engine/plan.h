/*
 * plan.h — execution plans: what the engine does for one signature of
 * input shapes, worked out once and replayed on every run with it.
 *
 * Building a plan binds every dimension, folds what the fixed shapes make
 * known (Shape and everything computed from it: the host kernels run it
 * here, once), picks a kernel per remaining node, sizes workspaces, and
 * places every intermediate value in one activation block by lifetime
 * (values alive at the same step never share bytes; greedy by size,
 * offsets aligned to BACKEND_ALIGN). The block is allocated once per plan;
 * after that a run only copies and launches (engine/exec.c), which is why
 * the warm path allocates nothing.
 *
 * Some shapes depend on values, not shapes: Reshape's target, Unsqueeze's
 * axes, Range's bounds, and the counts of the selections (NonZero,
 * NonMaxSuppression, Compress, Unique), whose inference runs the whole
 * selection when it has the value. When such a value comes from graph
 * inputs (maybe through small integer arithmetic: Shape, Gather, Concat,
 * Add), the planner reads the run's actual inputs, evaluates the chain on
 * the host and settles the shape; the plan is then valid only for those
 * values, so it is keyed by them as well (PLAN_KEY_MAX_ELEMS elements at
 * most per input, of a type in PLAN_KEY_DTYPES), and a run with other
 * values gets a plan of its own. A kernel whose output extent was settled
 * so counts again when it runs and fails the run if the count differs
 * (on a device, through the fault record's CEP_FAULT_SHAPE). A shape that
 * needs values the model computes at run time is refused: every shape of
 * a plan is fixed before it runs, and a run's reply describes its outputs
 * before the device has run it.
 *
 * Control flow (If, Loop, Scan) is a step of its own: each subgraph it
 * runs is planned as a plan of its own (a subplan, built with the same
 * planner for the shapes the node gives it, its outer-scope values as
 * extra inputs), and the executor runs the subplans from the host, in a
 * loop for Loop and Scan (engine/plan_ctrl.c, engine/exec_ctrl.c). Every
 * output shape of the node must be known when the plan is built: If's
 * from the branch taken, or both branches agreeing; Loop's scan outputs
 * from a trip count the planner can know. A plan with such a step is
 * never captured as a device graph.
 *
 * Plans are kept per session in a bounded LRU cache keyed by the input
 * shapes and those values.
 */
#ifndef CEP_DAEMON_PLAN_H
#define CEP_DAEMON_PLAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "engine/ctrl.h"
#include "engine/graph.h"

/* Values computed while planning stay on the host up to this size; larger
 * ones become steps of the plan. */
#define PLAN_FOLD_MAX_BYTES 65536

/* The graph inputs whose values may key a plan: few elements, of a type
 * that counts or sizes things (floating point joins for Range and
 * Resize's scales). A larger input, an activation more likely than a
 * shape, is refused rather than made into a plan per value. */
#define PLAN_KEY_MAX_ELEMS 64
#define PLAN_KEY_DTYPES (OP_DTS_INT | OP_DT(CEP_DTYPE_BOOL) | OP_DTS_FLOAT)

struct plan;

/* Subplans one control step may hold: a Loop whose body is planned per
 * iteration (its shapes depend on the iteration number) runs at most this
 * many iterations. */
#define PLAN_CTRL_MAX_PLANS 256

/* The iterations a Loop may run before the run fails: a loop that does
 * not end (a hostile or broken model) must not hold a thread for good. */
#define PLAN_LOOP_MAX_ITERATIONS (INT64_C(1) << 24)

/* Host slots the iteration numbers of a Loop are copied from, in turn. */
#define PLAN_CTRL_COUNTERS 64

/*
 * What a control step (If, Loop, Scan) runs and how: its subplans, and
 * what the executor (engine/exec_ctrl.c) needs to run them from the host.
 * Built by engine/plan_ctrl.c and freed with its plan; the run-time
 * fields are scratch of the one run using the plan at a time.
 */
struct plan_ctrl {
	struct ctrl_layout l;       /* the node's layout */
	struct plan **plans;        /* (n_plans), owned. If: then, else (NULL:
	                             * not planned); Loop: the body, or one per
	                             * iteration when per_iter; Scan: the body */
	int n_plans;
	char *unplanned[2];         /* If: why branch i could not be planned
	                             * for these shapes: a run that takes it
	                             * fails so; owned, NULL when planned */
	int unplanned_err[2];       /* its error code */
	/* If */
	int branch;                 /* taken, known while planning: 0 then, 1
	                             * else; -1: read the condition at run time */
	/* Loop */
	int64_t trip;               /* iterations, known while planning;
	                             * CTRL_TRIP_UNKNOWN: found while running */
	bool has_m;                 /* M is given */
	int64_t m;                  /* its value, known while planning; -1:
	                             * read back at run time */
	int cond0;                  /* the initial condition: 1, 0, or -1:
	                             * read back at run time */
	enum ctrl_cond cond;        /* KEEP, CONST (cond_value), or COMPUTED:
	                             * read back after every iteration */
	bool cond_value;
	bool per_iter;              /* plans[i] is iteration i's */
	bool waits;                 /* a run reads values back (a stream sync),
	                             * here or in a subplan */
	bool uses_iter;             /* the body reads its iteration number */
	/* Scan */
	int64_t len;                /* the scan length */
	int64_t batch;              /* Scan 8's batch; 1 otherwise */
	int *axis;                  /* (n_scan_in + n_scan_out) scan inputs'
	                             * then outputs' axes; malloc */
	bool *reverse;              /* (the same) their directions; malloc */
	/* Run-time scratch (host memory copies read from or land in) */
	int64_t counter[PLAN_CTRL_COUNTERS]; /* iteration numbers, in turn */
	int64_t m_read;             /* M read back */
	unsigned char flag;         /* a condition read back */
};

/* One step of a plan: a kernel launch, or control flow. */
struct plan_step {
	int node;                       /* graph node index */
	const struct op_kernel *kernel; /* NULL for a control step */
	struct op_call call;            /* ready to launch, reused every run;
	                                 * a control step's has its tensors
	                                 * (implicit inputs included) */
	struct plan_ctrl *ctrl;         /* a control step's, owned; else NULL */
};

/* A graph input or output as the plan sees it. */
struct plan_io {
	int value;         /* graph value id */
	void *dev;         /* where it lives in the backend's memory */
	size_t bytes;
	struct op_tensor t; /* dtype, rank, dims (data: dev) */
};

/* A graph input whose values the plan was built for. */
struct plan_key {
	int input;         /* index among the graph inputs */
	size_t offset;     /* of its bytes in plan->key_data */
	size_t bytes;
};

struct plan {
	int64_t *sig;                  /* (sig_len) the input shapes it is for */
	int sig_len;
	uint64_t hash;                 /* of sig */
	struct plan_key *keys;         /* (n_keys) inputs whose values it is for */
	int n_keys;
	unsigned char *key_data;       /* their values, copied; NULL if none */
	struct plan_step *steps;       /* (n_steps) in execution order */
	int n_steps;
	struct op_tensor *tensors;     /* the steps' input and output arrays */
	struct plan_io *inputs;        /* (n_inputs) per graph input, in order */
	int n_inputs;
	struct plan_io *outputs;       /* (n_outputs) per graph output, in order */
	int n_outputs;
	void *block;                   /* backend memory, block_bytes long */
	size_t block_bytes;            /* activations + plan constants + workspace */
	size_t activation_bytes;       /* of which activations and plan constants */
	size_t workspace_bytes;        /* of which the shared workspace */
	int folded;                    /* nodes evaluated while planning */
	int ctrl_steps;                /* of n_steps: control steps */
	size_t ctrl_bytes;             /* held by its control steps' subplans
	                                * (their blocks and theirs in turn) */
	bool waits;                    /* a control step reads values back in
	                                * the middle of a run (a stream sync):
	                                * a caller that must not block does not
	                                * submit it */
	struct backend_graph *graph;   /* the captured steps, once captured */
	char *capture_error;           /* why capturing the steps failed (then
	                                * the plan runs eagerly for good); NULL
	                                * while it has not failed; owned */
	uint64_t runs;                 /* runs queued (the second is captured) */
	uint64_t last_used;            /* the cache's clock at the last lookup */
	_Atomic uint32_t inflight;     /* runs queued and not yet completed: the
	                                * cache never evicts it meanwhile; the
	                                * completing thread may not be the
	                                * session's */
	/* How its steps were queued (exec.c), for engine_session_plans(). */
	uint64_t captures;             /* graphs recorded of them: 0 or 1 */
	uint64_t replays;              /* runs that replayed the graph */
	uint64_t eager_runs;           /* runs that launched them one by one */
};

/* What building a plan needs from its session. */
struct plan_env {
	const struct graph *g;         /* loaded, inferred, optimized */
	struct backend *be;
	struct backend_stream *stream; /* for uploading plan constants */
	void *const *const_dev;        /* per value id: the device copy of a graph
	                                * constant a step or output reads; NULL:
	                                * the plan uploads the constants it needs
	                                * into its block (a subplan's) */
	size_t max_block_bytes;        /* refuse plans needing more; 0: no limit */
	size_t *needed_bytes;          /* if not NULL, set to the block size of a
	                                * plan refused for max_block_bytes */
	unsigned call_flags;           /* enum op_call_flags of every step */
	/* For subplans (engine/plan_ctrl.c): */
	bool inputs_stay;              /* graph inputs keep their bytes for the
	                                * whole run (nothing reuses them), so the
	                                * executor writes each once */
	void *const *input_dev;        /* NULL, or per graph input: where the
	                                * plan reads it in place (never copied
	                                * in), NULL for those copied in */
};

/*
 * Builds the plan of env->g for the graph inputs in inputs (one per graph
 * input, in order: dtype, rank and dims, which the caller has already
 * checked against the model, and data: the run's values on the host, or
 * NULL where not given). sig (sig_len entries) is the shape key the plan
 * keeps a copy of. The data is read only where a shape needs it (see the
 * top of this file); each input read is copied into the plan's keys. The
 * caller's data is not kept. On success *out is the caller's, released
 * with plan_free(). Fails with CEP_EUNSUPPORTED (no kernel; a shape that
 * depends on values computed only at run time, or on an input not given
 * or too large or of the wrong type to key a plan: the message names the
 * node, the output and the input), CEP_ESHAPE / CEP_EDTYPE from inference,
 * CEP_ELIMIT for tensors beyond OP_MAX_NUMEL or a block beyond
 * env->max_block_bytes, CEP_EDEVMEM / CEP_ENOMEM; messages name the node.
 */
int plan_build(const struct plan_env *env, const struct op_tensor *inputs,
	       const int64_t *sig, int sig_len, struct plan **out);

/* Releases the plan, its block, its captured graph and its subplans.
 * Accepts NULL. */
void plan_free(struct plan *p, struct backend *be);

/* ------------------------------------------------ memory plan: plan_mem.c */

/* A value to place: size and the steps it is alive for. */
struct plan_mem_item {
	size_t bytes;
	int first, last;   /* steps, inclusive: 0 <= first <= last */
	size_t offset;     /* the result */
};

/*
 * Gives each of the n items an offset, a multiple of align, such that items
 * whose [first, last] ranges intersect never overlap in bytes: largest
 * first, each at the lowest offset that fits beside those already placed.
 * Stores the bytes the whole block needs in *total. Returns 0 or
 * CEP_ENOMEM. Each item is compared with the items alive near its own
 * lifetime only, so long chains of short-lived values stay cheap.
 */
int plan_mem_assign(struct plan_mem_item *items, int n, size_t align,
		    size_t *total);

/* ---------------------------------------------------- cache: plan_cache.c */

/* A bounded LRU cache of plans; caller memory. */
struct plan_cache {
	struct plan **plans;  /* (n), cap entries allocated */
	int n, cap;
	uint64_t clock;       /* advances on every lookup */
	uint64_t hits, misses, evictions;
};

/* Makes an empty cache of cap plans (cap >= 1). Returns 0 or CEP_ENOMEM. */
int plan_cache_init(struct plan_cache *c, int cap);

/* Frees every plan in the cache and the cache's array; none may be in
 * flight. Accepts NULL. */
void plan_cache_close(struct plan_cache *c, struct backend *be);

/* Hashes a signature for the cache. */
uint64_t plan_sig_hash(const int64_t *sig, int len);

/* The plan for shape signature sig (len entries, hash from
 * plan_sig_hash()) whose keyed inputs hold the same bytes in in_data (one
 * host pointer per graph input, in order; NULL: no plan keyed by values
 * matches), or NULL. Counts a hit or a miss and marks the plan used.
 * Never allocates. */
struct plan *plan_cache_find(struct plan_cache *c, const int64_t *sig, int len,
			     uint64_t hash, const void *const *in_data);

/* Adds p (which must carry its sig and hash), evicting and freeing the
 * least recently used plan not in flight when the cache is full. The
 * cache owns p afterwards. Fails with CEP_EAGAIN, taking nothing, when
 * the cache is full of plans in flight. */
int plan_cache_insert(struct plan_cache *c, struct plan *p, struct backend *be);

/* Evicts and frees the least recently used plan that no run has in
 * flight (to make room before building a new one under a memory limit).
 * Returns whether it evicted one. */
bool plan_cache_evict(struct plan_cache *c, struct backend *be);

#endif
