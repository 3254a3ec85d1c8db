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
 * Plans are kept per session in a bounded LRU cache keyed by the input
 * shapes and those values.
 */
#ifndef CEP_DAEMON_PLAN_H
#define CEP_DAEMON_PLAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"
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

/* One kernel launch of a plan. */
struct plan_step {
	int node;                       /* graph node index */
	const struct op_kernel *kernel;
	struct op_call call;            /* ready to launch, reused every run */
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
	                                * constant a step or output reads */
	size_t max_block_bytes;        /* refuse plans needing more; 0: no limit */
	size_t *needed_bytes;          /* if not NULL, set to the block size of a
	                                * plan refused for max_block_bytes */
	unsigned call_flags;           /* enum op_call_flags of every step */
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

/* Releases the plan, its block and its captured graph. Accepts NULL. */
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
