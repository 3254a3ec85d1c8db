/*
 * engine.h — the inference engine, and its one public header: load an
 * ONNX model from bytes, open sessions of it on a backend, check a run's
 * tensors against the model, run them. Everything below (model loading,
 * graph IR, shapes, plans, executor) is reached through here.
 *
 * A caller reads a model file into memory and calls engine_model_load()
 * (parsing, checking and folding take time: a caller with an event loop
 * does it on a worker thread), then engine_session_new() with a backend
 * it owns. engine_model_input()/output() describe what the model takes
 * and gives. A run's tensors are host buffers: engine_run_check() checks
 * them against the model once, where they come in from outside, and
 * engine_run(), engine_run_submit(), engine_run_describe() and
 * engine_run_submit_batch() trust them and do not check them again.
 *
 * Errors: 0 or a negative CEP_E* code; the detailed message ("node 3 'mm'
 * (op MatMul, domain ai.onnx, opset 13): ...", "input 'x': dimension 1 is
 * 3, the model wants 4") is in cep_last_error() of the calling thread, so a
 * caller on a worker thread must copy it there.
 *
 * Memory: the engine charges every backend allocation it makes for a
 * session to an account (alloc/account.h), which is the one place limits
 * are enforced. A session's plan blocks are charged to the session's owner
 * (client, session) as activations and workspace; the model's constants,
 * uploaded once per (model, backend, account) and shared by every session
 * of the model there, are charged once to the shared owner
 * (ALLOC_OWNER_SHARED) as weights, so only the global limit counts them.
 * On a backend of host memory constants are used in place and cost
 * nothing. The caller passes the account and owner in the session
 * options; the backend's allocator stays untagged.
 *
 * Sharing models: engine_model_load_shared() returns the model already
 * loaded from identical bytes (XXH3-64 and length, then a byte compare)
 * for the same precision from a cache, so two clients loading one file
 * share one engine_model and therefore one device copy of its weights.
 *
 * Precision: a model is loaded for a precision. fp32 and tf32 sessions
 * run the graph as the file has it (tf32 only lets float32 GEMMs and
 * convolutions use TF32 tensor cores: OP_CALL_TF32); fp16 and bf16
 * sessions run a converted graph (engine/precision.h), which is a model
 * of its own, loaded with engine_model_load_as() for the precision and
 * the backend kind whose kernels it is converted for.
 *
 * Threads: a model is immutable once loaded and may be shared by sessions
 * on any threads (its reference count is atomic; its device copies and a
 * cache are locked). A session is used by one thread at a time.
 */
#ifndef CEP_DAEMON_ENGINE_H
#define CEP_DAEMON_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/account.h"
#include "gpu/backend.h"
#include "client/cudaep.h"

typedef struct engine_model engine_model;
typedef struct engine_session engine_session;
typedef struct engine_model_cache engine_model_cache;

#define ENGINE_DEFAULT_PLANS 16 /* plans a session keeps by default */

/* ------------------------------------------------------------------ models */

/*
 * Loads, validates and optimizes the ONNX model in bytes (len of them,
 * still the caller's afterwards). External data is read below dir_fd (-1:
 * none allowed). On success *out holds one reference, owned by the caller
 * and dropped with engine_model_unref(). Fails with CEP_EMODEL,
 * CEP_EUNSUPPORTED, CEP_EDTYPE, CEP_ESHAPE, CEP_EACCES, CEP_ELIMIT or
 * CEP_ENOMEM (see engine/model.h).
 */
int engine_model_load(const void *bytes, size_t len, int dir_fd,
		      engine_model **out);

/* How a model is loaded. Zeroed: for fp32 (and tf32) sessions. */
struct engine_model_options {
	cep_precision precision;    /* FP32 and TF32: the graph as it is;
	                             * FP16, BF16: converted to that half type */
	enum backend_kind backend;  /* half only: whose kernels decide which
	                             * nodes compute in half (engine/precision.h) */
};

/*
 * As engine_model_load(), for the precision and backend in o (NULL: fp32):
 * an fp16 or bf16 model is converted after it is optimized, and only
 * sessions of that precision on a backend of that kind may open it.
 * Fails as engine_model_load(), and with CEP_EINVAL for a precision out
 * of range.
 */
int engine_model_load_as(const void *bytes, size_t len, int dir_fd,
			 const struct engine_model_options *o, engine_model **out);

/* ------------------------------------------------------------ model cache */

/* Makes an empty cache of loaded models. On success *out is the caller's,
 * freed with engine_model_cache_free(). Fails only with CEP_ENOMEM. */
int engine_model_cache_new(engine_model_cache **out);

/* Frees the cache. Models still referenced live on, no longer findable;
 * no load through c and no last unref of its models may run meanwhile
 * (free it after every session of its models). Accepts NULL. */
void engine_model_cache_free(engine_model_cache *c);

/*
 * As engine_model_load_as(), but first looks in c for a live model loaded
 * from the same bytes (same XXH3-64 hash and length, then compared byte by
 * byte) for the same precision (fp32 and tf32 count as one; a half one
 * also for the same backend kind) and, on a hit, returns another
 * reference to it with *shared set to true. A new model is added to c
 * (which keeps a copy of the bytes for the comparison, and drops the
 * entry when the model's last reference goes).
 * Concurrent loads of one file wait for the first to finish parsing and
 * then share its model. A model that references external data is never
 * shared (the data files below each client's directory may differ); one
 * that does not is shared whether or not a directory came with it. c may
 * be NULL (no sharing). Fails as engine_model_load().
 */
int engine_model_load_shared(engine_model_cache *c, const void *bytes, size_t len,
			     int dir_fd, const struct engine_model_options *o,
			     engine_model **out, bool *shared);

/* What a cache holds and has done. */
struct engine_model_cache_stats {
	uint64_t models;  /* live models findable now */
	uint64_t bytes;   /* of their files, kept for the byte compare */
	uint64_t hits;    /* loads that shared a live model */
	uint64_t misses;  /* loads that parsed a new one */
};

/* Copies c's counters into *out. */
void engine_model_cache_stats(engine_model_cache *c, struct engine_model_cache_stats *out);

/* Takes another reference to m (a session takes one). */
void engine_model_ref(engine_model *m);

/* Drops a reference; the last one frees the model. Accepts NULL. */
void engine_model_unref(engine_model *m);

/* A model input or output. dims[i] >= 0 is fixed; -1 is symbolic when
 * dim_params[i] names it, unknown when that is NULL. The strings live as
 * long as the model. */
struct engine_tensor_info {
	const char *name;
	cep_dtype dtype;
	int rank;                             /* -1: unknown */
	int64_t dims[CEP_MAX_RANK];           /* (rank) */
	const char *dim_params[CEP_MAX_RANK]; /* (rank) */
};

/* The model's inputs and outputs, in the model's order; the _input and
 * _output getters return NULL when i is out of range. */
int engine_model_input_count(const engine_model *m);
int engine_model_output_count(const engine_model *m);
const struct engine_tensor_info *engine_model_input(const engine_model *m, int i);
const struct engine_tensor_info *engine_model_output(const engine_model *m, int i);

/* Live nodes after optimization (for logs and tests). */
int engine_model_node_count(const engine_model *m);

/*
 * Whether runs of m may be merged into one along dimension 0: every input
 * and every output has rank 1 or more and a symbolic dimension 0, all
 * named by the same dim_param (the batch). Returns 0, or CEP_EINVAL with
 * a message naming the first tensor that does not ("output 'y' has no
 * symbolic dimension 0"). Rows that depend on each other (a reduction
 * over dimension 0) cannot be told from the file: merging is the
 * caller's choice.
 */
int engine_model_batchable(const engine_model *m);

/* The precision m was loaded for: CEP_PRECISION_FP32 (for fp32 and tf32
 * sessions), CEP_PRECISION_FP16 or CEP_PRECISION_BF16. */
cep_precision engine_model_precision(const engine_model *m);

/* "fp32", "tf32", "fp16", "bf16", or "?" for a value out of range. The
 * string is static. */
const char *engine_precision_name(cep_precision p);

/* What converting a model to half did (engine/precision.h). */
struct engine_precision_stats {
	int half_nodes;        /* nodes with float tensors computing in half */
	int float_nodes;       /* nodes with float tensors kept in float32 */
	int first_float_node;  /* the first of those in the order, -1: none */
	char first_float[192]; /* its label: "node 0 'c1' (op Conv, domain
	                        * ai.onnx, opset 13)", or "" */
	int casts;             /* Cast nodes added */
	int constants;         /* float32 constants converted (or twinned) */
	size_t constant_bytes; /* bytes those constants took in float32 */
};

/* Copies into *out what converting m to half did; nothing (zero counts,
 * first_float_node -1, first_float "") for an fp32 model. Cannot fail. */
void engine_model_precision_stats(const engine_model *m, struct engine_precision_stats *out);

/* ---------------------------------------------------------------- sessions */

struct engine_session_options {
	int max_plans;          /* plans cached; 0: ENGINE_DEFAULT_PLANS */
	cep_precision precision; /* FP32 (default) or TF32 on a model loaded
	                          * for fp32; FP16 or BF16 on a model loaded
	                          * for that precision and backend kind */
	cep_priority priority;  /* of the session's stream */
	uint64_t memory_limit;  /* bytes of backend memory for the session's
	                         * plans, set as the session's limit in the
	                         * account; 0: no limit */
	struct account *account; /* charged for the session's memory; must
	                          * outlive the session. NULL: a private one
	                          * of the session's own (memory_limit holds) */
	struct alloc_owner owner; /* the client and session charged (session
	                           * != 0), or ALLOC_OWNER_SHARED for a session
	                           * of the shared owner (memory_limit is then
	                           * ignored: only the global limit counts);
	                           * ignored without an account */
	int max_batch;          /* runs one engine_run_submit_batch() may
	                         * merge (its scratch is allocated here, so
	                         * that a warm batch allocates nothing); 0:
	                         * the session submits no batches */
};

/*
 * Opens a session of m on backend be (which must outlive it): takes a
 * reference to m, creates a stream, sets the session's limit in the
 * account, and gives the model's constants a home on the backend: used in
 * place on a backend of host memory, else the model's shared device copy
 * for (be, account), uploaded and charged by its first session. opts may
 * be NULL (defaults). On success *out is the caller's, released with
 * engine_session_free(). Fails with CEP_EINVAL for a precision the model
 * was not loaded for ("a session of precision fp16 needs its model loaded
 * for fp16 on the host backend; this one was loaded for fp32"), CEP_ELIMIT
 * when uploading the weights would pass the global limit (the account's
 * message), CEP_EDEVMEM / CEP_ENOMEM.
 */
int engine_session_new(engine_model *m, struct backend *be,
		       const struct engine_session_options *opts,
		       engine_session **out);

/* Frees the session and its plans (none may be in flight: complete their
 * runs first), uncharging them and forgetting the session's entry in the
 * account, releases its share of the model's
 * device weights (the last session frees and uncharges them), and drops
 * its reference to the model. Accepts NULL. */
void engine_session_free(engine_session *s);

/*
 * What m was loaded from, so that the same model can be loaded again
 * elsewhere (by another process, say): the file's bytes (*len of them;
 * NULL when m was not loaded through a cache, which alone keeps them) and
 * the directory fd its external data was read below (-1: none). Both stay
 * m's; they live as long as m. Cannot fail.
 */
void engine_model_source(const engine_model *m, const void **bytes, size_t *len,
			 int *dir_fd);

/* The session's model (no new reference). */
engine_model *engine_session_model(const engine_session *s);

/* The session's precision, as opened. */
cep_precision engine_session_precision(const engine_session *s);

/* --------------------------------------------------------------------- run */

/* A run input: a host buffer with its type and shape. */
struct engine_input {
	const char *name;     /* a model input */
	cep_dtype dtype;
	int rank;
	const int64_t *dims;  /* (rank) */
	const void *data;     /* bytes long, valid during engine_run() */
	size_t bytes;         /* must be the shape's element count times the size */
};

/* A run output: where to write it, and what was written. */
struct engine_output {
	const char *name;     /* a model output */
	void *data;           /* capacity bytes of host memory */
	size_t capacity;
	cep_dtype dtype;              /* set by engine_run() */
	int rank;                     /* set */
	int64_t dims[CEP_MAX_RANK];   /* set, (rank) */
	size_t bytes;                 /* set: bytes written */
};

/*
 * Checks a run's tensors against s's model, as they come from the caller:
 * every model input must be given once in inputs (any order), with the
 * model's dtype, a shape that binds to the model's dimensions (fixed ones
 * equal, each symbol one size across the inputs) and data of exactly the
 * shape's bytes; outputs names any subset of the model's outputs, each
 * once. Returns 0 or fails with CEP_EINVAL (a missing, unknown or
 * repeated name, dims or data missing), CEP_EDTYPE ("input 'x' is int64,
 * the model wants float32"), CEP_ESHAPE ("input 'x': dimension 1 is 3,
 * the model wants 4", "input 'y': dimension 0 is 3, but 'batch' is 2 from
 * input 'x'", a rank out of range, a negative dimension, or bytes that do
 * not match the shape) or CEP_ELIMIT (a shape of more than 2^40
 * elements), with a message naming the tensor. Safe on any data (NULL
 * names, NULL dims, huge dimensions); reads nothing behind data, writes
 * nothing of the caller's, allocates nothing. What engine_run() and the
 * other run functions check later depends on the plan only: an output's
 * room (CEP_ENOSPC) and its buffer. Like every call on s, not concurrent
 * with another call on s (it uses the session's scratch).
 */
int engine_run_check(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
		     const struct engine_output *outputs, size_t n_outputs);

/*
 * Runs the session: the inputs and outputs must have passed
 * engine_run_check(); they are not checked again. Looks up or builds the
 * plan for the inputs' shapes (and for the values of the small inputs
 * that an output shape depends on, such as a Reshape's target given as an
 * input: other values get another plan), runs it, writes the outputs and
 * fills in their dtype, shape and bytes. Fails, before computing
 * anything, with CEP_ENOSPC (an output's capacity is too small: every
 * output asked for then has its dtype, shape and needed bytes filled in)
 * or CEP_EINVAL (an output with bytes to write and no buffer); and with
 * the errors of planning (see plan_build(); CEP_ELIMIT when a new plan
 * would take the session, its client or the global account past a memory
 * limit even after evicting the session's older plans, with the account's
 * message: "session 7 memory limit N bytes: asked M, in use K") or of a
 * kernel. A run whose plan is cached allocates nothing.
 */
int engine_run(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
	       struct engine_output *outputs, size_t n_outputs);

/* ------------------------------------------------------------ runs in flight */

/* Where a run submitted without waiting says that it is done. */
struct engine_fence {
	uint64_t *seq;                 /* 8 bytes of registered host memory
	                                * (backend_host_register()) that the
	                                * device sets to value once the outputs
	                                * are in place, if the run can no longer
	                                * fail then (see engine_run.seq_queued);
	                                * NULL: none */
	uint64_t value;
	struct backend_fault *fault;   /* registered host memory for the run's
	                                * own fault record; NULL: do not check */
	backend_host_fn done;          /* queued last: called once, when the
	                                * run's work has completed */
	void *arg;                     /* done's argument */
};

/* A run in flight, from engine_run_submit() to engine_run_complete();
 * caller memory. */
struct engine_run {
	struct plan *plan;             /* the plan it runs, kept from eviction */
	int err;                       /* why queuing stopped part way, or 0 */
	bool checked;                  /* fault was queued to be copied back: the
	                                * run fails if it records a bad index */
	bool seq_queued;               /* the device writes the fence; otherwise
	                                * done must (after the status) */
	/* A run of a batch whose fault record is another run's: its host
	 * function copies that record into its own, then calls done. */
	const struct backend_fault *fault_from;
	struct backend_fault *fault_to;
	backend_host_fn done;
	void *arg;
	char msg[512];                 /* err's message */
};

/* engine_run_submit() flag: return ENGINE_RUN_COLD, having done nothing
 * but look the plan up, unless the plan is cached, has run once, is not
 * about to be captured and does not wait on the device in the middle of a
 * run (control flow that reads a condition back), so that a caller that
 * must not block (an event loop) can leave planning, first runs
 * (compiles, lazy set-up), graph capture and such runs to another
 * thread. */
#define ENGINE_SUBMIT_WARM 1u
#define ENGINE_RUN_COLD 1

/*
 * engine_run() without waiting, for inputs and outputs that have passed
 * engine_run_check() (not checked again): finds or builds the plan, checks
 * the outputs' room and describes every output asked for in outputs (dtype,
 * shape, bytes: the plan knows them before it runs), then queues on the
 * session's stream the copies straight from the inputs' memory, the plan
 * (its captured graph once warm), the copies straight into the outputs'
 * memory, the fault record copy and the fence of f, and last f->done.
 * Inputs must stay unchanged and outputs valid until done has been called.
 *
 * Returns, having queued nothing: a negative error as engine_run() does
 * (CEP_ENOSPC with the outputs described; CEP_EAGAIN when a new plan is
 * needed and every cached one is in flight), or ENGINE_RUN_COLD (see
 * ENGINE_SUBMIT_WARM). Returns 0 once done is queued, which it then is
 * exactly once; it may be called before this returns (on the host
 * backend, or after a device error). A failure while queuing leaves
 * run->err set and does not change the return. The warm path allocates
 * nothing.
 */
int engine_run_submit(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
		      struct engine_output *outputs, size_t n_outputs, unsigned flags,
		      const struct engine_fence *f, struct engine_run *run);

/*
 * What engine_run_submit() would say of the outputs, without queuing
 * anything, for inputs and outputs that have passed engine_run_check()
 * (not checked again): finds (or, without ENGINE_SUBMIT_WARM in flags,
 * builds) the plan, checks the outputs' room and describes every output
 * asked for (dtype, shape, bytes). For a run that is answered now and
 * submitted later (a caller's queue of waiting runs). Returns 0, a negative
 * error as engine_run_submit() does (CEP_ENOSPC with the outputs
 * described), or, with ENGINE_SUBMIT_WARM, ENGINE_RUN_COLD when the plan
 * is not cached (a cached plan that has not run yet is enough here).
 * Allocates nothing when the plan is cached.
 */
int engine_run_describe(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
			struct engine_output *outputs, size_t n_outputs, unsigned flags);

/*
 * Ends a run of s whose done function has been called: returns 0, or the
 * run's error with its message (run->err from queuing, or CEP_EINVAL for a
 * bad index recorded in fault, naming the node), and lets its plan go. s
 * may be any session of the run's model (it reads only the model): a run
 * of a batch may be completed with its client's session. It
 * touches nothing of s that a thread using s meanwhile does, so it may run
 * on any thread. Calling it for a run not in flight does nothing.
 */
int engine_run_complete(engine_session *s, struct engine_run *run,
			const struct backend_fault *fault);

/* One run of a batch: what engine_run_submit() takes for a single run. */
struct engine_batch_run {
	const struct engine_input *inputs;  /* (n_inputs) */
	size_t n_inputs;
	struct engine_output *outputs;      /* (n_outputs) */
	size_t n_outputs;
	const struct engine_fence *fence;   /* its own, as for one run */
	struct engine_run *run;             /* caller memory, as for one run */
};

/*
 * Submits n runs (1 <= n <= the session's max_batch) as one, each of which
 * has passed engine_run_check() on a session of s's model (they are not
 * checked against the model again): the plan for
 * their inputs stacked along dimension 0 (the batch: the sum of the runs'
 * dimension 0), per input one copy per run into its rows of the plan's
 * input block, the plan once, per output asked for one copy per run out
 * of its rows, then for each run in order its fault record (copied once
 * from the device, into the last checked run's record, and from there
 * into the others' by their host functions), its fence and its done
 * function. Each run's outputs are described as engine_run_submit()
 * describes them (dimension 0: its own rows), and each run is completed
 * with engine_run_complete() as usual; a failure while queuing, or a bad
 * index, fails every run of the batch with the same error.
 *
 * Refuses, having queued nothing, and sets *bad to the index of the run
 * that does not fit with the runs before it when the refusal is that
 * run's own (its shapes or output room; the caller may submit the others
 * without it), else to n (the caller then runs them one by one, which
 * gives each its own error): CEP_EINVAL for a model that cannot batch
 * (engine_model_batchable()) or n out of range; CEP_ESHAPE when the runs
 * differ in an input's dimension other than 0, when the stacked shapes do
 * not bind to the model's, or when the plan's outputs do not have the
 * batch as dimension 0; CEP_ENOSPC when a run's output room is too small,
 * CEP_EINVAL when an output with rows to write has no buffer; the errors
 * of planning (not with ENGINE_SUBMIT_WARM,
 * which returns ENGINE_RUN_COLD as for one run). Plans are built with no
 * input values: a model whose shapes depend on input values refuses with
 * the planner's CEP_EUNSUPPORTED. Returns 0 once every done function is
 * queued. The warm path allocates nothing.
 */
int engine_run_submit_batch(engine_session *s, const struct engine_batch_run *runs,
			    size_t n, unsigned flags, size_t *bad);

/* ------------------------------------------------------------------- stats */

struct engine_stats {
	uint64_t runs;          /* successful engine_run() calls */
	uint64_t plans_built;   /* the only host allocations of a run happen here */
	uint64_t plan_hits;     /* runs that found their plan cached */
	uint64_t plan_evictions;
	int plans_cached;
	size_t plan_bytes;      /* backend memory of the cached plans' blocks */
	size_t weight_bytes;    /* backend memory of the constants the session
	                         * uses (shared with the model's other sessions) */
	int last_steps;         /* kernel launches of the last run's plan */
	int last_folded;        /* nodes that plan evaluated while planning */
	uint64_t graph_replays; /* runs that replayed a captured graph */
	uint64_t eager_runs;    /* runs that launched their steps one by one */
	uint64_t capture_failures; /* plans whose capture failed: they run
	                            * eagerly (capture_error says why) */
	char capture_error[160];   /* the last capture failure's message, or "" */
	uint64_t batches;          /* engine_run_submit_batch() calls that queued */
	uint64_t batched_runs;     /* the runs they merged */
};

/* One kernel launch of a profiled run. */
struct engine_step_time {
	const char *node;     /* the node's name, or its first output's when it
	                       * has none (lives as long as the model) */
	const char *op_type;  /* its operator */
	double ms;            /* from its launch to the next one's, on the device */
};

/*
 * Profiles one run, of inputs and outputs that have passed
 * engine_run_check(): runs the session as engine_run() does (planning if
 * needed), then runs the same plan again launch by launch with a backend
 * timer between every two launches, never replaying a graph. On success
 * *times is a malloc'd array of *n_times entries, one per launch in order,
 * owned by the caller (free()). For tools (bench/profile): it allocates.
 * Fails as engine_run() does, or with CEP_ENOTSUP on a backend without
 * timers.
 */
int engine_session_profile(engine_session *s, const struct engine_input *inputs,
			   size_t n_inputs, struct engine_output *outputs, size_t n_outputs,
			   struct engine_step_time **times, int *n_times);

/* Copies the session's counters into *out. */
void engine_session_stats(const engine_session *s, struct engine_stats *out);

/* -------------------------------------------------------------- inspection */

#define ENGINE_SIGNATURE_MAX 256 /* bytes of a plan's signature text, NUL included */

/* One cached plan of a session, as engine_session_plans() describes it. */
struct engine_plan_info {
	char signature[ENGINE_SIGNATURE_MAX]; /* the input shapes it is for, in the
	                            * model's input order: "x[2,3] mask[2,7]"; an
	                            * input whose values key it too shows them
	                            * ("shape[2]={1,6}"); cut with "..." when
	                            * longer, never inside a UTF-8 sequence */
	int value_keys;            /* inputs whose values key it */
	int steps;                 /* kernel launches of one run */
	bool captured;             /* its steps are a backend graph, replayed */
	uint64_t runs;             /* runs queued with it */
	uint64_t captures;         /* graphs recorded of its steps: 0 or 1 */
	uint64_t replays;          /* runs that replayed the graph */
	uint64_t eager_runs;       /* runs that launched the steps one by one */
	uint32_t inflight;         /* runs queued and not completed yet */
	size_t block_bytes;        /* backend memory of its block (and of its
	                            * control flow's subplans): */
	size_t activation_bytes;   /* of which activations and plan constants
	                            * (the subplans' whole) */
	size_t workspace_bytes;    /* of which workspace */
	char capture_error[160];   /* why its capture failed (it then runs
	                            * eagerly for good), or "" */
};

/*
 * Describes s's cached plans, most recently used first: the first max of
 * them into out (max >= 0). Returns how many plans s caches, which may be
 * more than max (the rest are left out). Reads the plan cache without
 * changing it, allocates nothing and cannot fail.
 *
 * Threads: the plan cache belongs to the thread using s. Call this only
 * where no run, description or profile of s can be going on in another
 * thread (for the daemon: on the event loop, while no job of s runs on the
 * thread pool, as for engine_session_stats()). Runs of s in flight on the
 * device are fine: their completion (engine_run_complete(), on any thread)
 * touches only a plan's atomic inflight count.
 */
int engine_session_plans(const engine_session *s, struct engine_plan_info *out, int max);


/* -------------------------------------------------------------- generation */

typedef struct engine_gen engine_gen;

/* How a generation keeps its key/value cache (engine_gen_params.kv_mode). */
enum engine_kv_mode {
	ENGINE_KV_AUTO = 0,  /* fixed when the model takes attention_mask and
	                      * position_ids, else exact */
	ENGINE_KV_FIXED = 1, /* the past inputs always span the capacity, the
	                      * slots not written masked out by attention_mask
	                      * and positions given by position_ids: one plan for
	                      * every decode step, captured and replayed */
	ENGINE_KV_EXACT = 2, /* the past inputs span what was written: a plan
	                      * per length */
};

struct engine_gen_params {
	uint32_t max_new_tokens;   /* >= 1 */
	uint32_t capacity;         /* cache positions, prompt included; 0: the
	                            * prompt + max_new_tokens */
	float temperature;         /* 0: greedy */
	uint32_t top_k;            /* 0: all */
	float top_p;               /* (0, 1]; 0: 1 */
	float repetition_penalty;  /* > 0; 0: 1 */
	uint64_t seed;
	const int64_t *stop;       /* stop tokens (copied) */
	uint32_t n_stop;           /* <= CEP_GEN_STOP_MAX */
	enum engine_kv_mode kv_mode;
};

/* What a generation has done (engine_gen_info()). */
struct engine_gen_info {
	uint64_t prompt_tokens;
	uint64_t tokens;           /* generated */
	uint64_t positions;        /* in the cache */
	uint32_t capacity;
	enum engine_kv_mode kv_mode; /* the one in use */
	uint64_t kv_bytes;         /* the cache's, charged as kv_cache */
	int64_t vocab;
	cep_gen_reason reason;     /* CEP_GEN_RUNNING until it ends */
};

/*
 * Starts a generation of session s's model (a decoder: see cudaep.h's
 * cep_generate_start() for the interface it must have) from the n_prompt
 * >= 1 tokens of prompt (copied), with parameters p (copied): checks them
 * and the model, and allocates the cache (capacity positions of every
 * past input) on s's backend, zeroed and charged to s's owner as
 * ALLOC_ROLE_KV_CACHE. Nothing runs yet. On success *out is the caller's,
 * freed with engine_gen_free(), and s must outlive it and not be used by
 * anything else while it lives (runs of s would overwrite nothing of the
 * cache, but the session is one thread's at a time). Fails with
 * CEP_EINVAL (a parameter out of range, naming it; a model that is not a
 * decoder, saying what it lacks), CEP_ENOSPC (a capacity smaller than the
 * prompt), CEP_ELIMIT (the account's message) or CEP_EDEVMEM / CEP_ENOMEM.
 */
int engine_gen_new(engine_session *s, const int64_t *prompt, size_t n_prompt,
		   const struct engine_gen_params *p, engine_gen **out);

/*
 * Runs the generation's next step and waits for it: the prefill of the
 * prompt on the first call, then the decode of the token before. Sets
 * *token to the token it chose and returns 0 while the generation goes
 * on, 1 when this token ended it (a stop token, max_new_tokens, or a full
 * cache; engine_gen_info() says which). Fails with CEP_EINVAL for a token
 * outside the vocabulary (naming it) or a model whose outputs do not
 * behave as a decoder's (a present of the wrong length, logits of the
 * wrong shape), with the errors of planning and running as engine_run(),
 * and with CEP_EINVAL once the generation has ended; after a failure the
 * generation is over (free it).
 */
int engine_gen_step(engine_gen *g, int64_t *token);

/* What g has done, into *out. Cannot fail. */
void engine_gen_info(const engine_gen *g, struct engine_gen_info *out);

/* Ends g with reason CEP_GEN_CANCELLED when it has not ended. */
void engine_gen_cancel(engine_gen *g);

/* Frees the cache (uncharging it) and g. Accepts NULL. */
void engine_gen_free(engine_gen *g);

#endif
