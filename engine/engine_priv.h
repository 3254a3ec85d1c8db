/*
 * engine_priv.h — what the files behind engine/engine.h share: the model
 * and session structs and the helpers each layer offers the ones above.
 *
 * The layers, each calling only those below it:
 *
 *   engine_batch.c    cross-client batches            (runs, plans, models)
 *   engine_run.c      single runs: bind, plan, submit (plans)
 *   engine_check.c    a run's tensors against the model
 *   engine_session.c  sessions                        (weights, plans, models)
 *   engine_plans.c    a session's plans under the memory limits
 *   engine_weights.c  the model's constants on a backend
 *   engine_cache.c    the model cache                 (models)
 *   engine_model.c    models
 *
 * A lower layer that must tell a higher one something does it through a
 * pointer the higher one wires (engine_model.release). Internal to
 * engine/engine*.c: nothing else includes it.
 */
#ifndef CEPD_ENGINE_PRIV_H
#define CEPD_ENGINE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/plan.h"
#include "engine/precision.h"
#include "engine/shape.h"

/* A model's constants on one device backend, for one account: one block
 * holding them all, shared by the model's sessions there. */
struct model_home {
	struct backend *be;
	struct account *acc;         /* charged, as ALLOC_OWNER_SHARED weights */
	void *block;                 /* weight_bytes of device memory */
	size_t bytes;
	unsigned sessions;           /* sessions using it; the last frees it */
	struct model_home *next;
};

struct engine_model {
	atomic_int refs;
	struct model *model;
	struct engine_model_options key;    /* what it was loaded for, as
	                                     * engine__model_key() writes it */
	struct engine_precision_stats pstats; /* of the conversion to half */
	struct engine_tensor_info *inputs;  /* (graph inputs) */
	struct engine_tensor_info *outputs; /* (graph outputs) */
	int batch_err;                      /* engine_model_batchable(): 0 or */
	char batch_why[160];                /* the error and why */
	pthread_mutex_t homes_lock;         /* guards homes, held while uploading */
	struct model_home *homes;           /* its device copies */
	/* Set while the model is findable in a cache (under its lock). */
	engine_model_cache *cache;
	uint64_t hash;                      /* XXH3-64 of the file's bytes */
	size_t len;                         /* bytes of the file */
	void *bytes;                        /* (len) a copy, for the compare
	                                     * and for a handover (loads through
	                                     * a cache keep it) */
	int dir_fd;                         /* a dup of the directory its
	                                     * external data was read below,
	                                     * kept for engine_model_source();
	                                     * -1: none */
	engine_model *next;                 /* in the cache's list */
	/* Called by the last engine_model_unref(), before the model is
	 * freed, when set: the cache that added it takes it out. */
	void (*release)(engine_model *m);
};

struct engine_session {
	engine_model *m;
	struct backend *be;
	struct backend_stream *stream;
	void **const_dev;            /* per value: its constant on the backend */
	struct model_home *home;     /* the model's device copy, or NULL */
	size_t weight_bytes;
	struct account *acc;         /* what is charged */
	struct account *own_acc;     /* acc when the caller gave none; owned */
	struct alloc_owner owner;
	bool shared_owner;           /* owner is ALLOC_OWNER_SHARED */
	cep_precision precision;     /* as opened */
	uint64_t plan_act, plan_ws;  /* bytes charged for the cached plans */
	struct plan_cache plans;
	unsigned call_flags;         /* enum op_call_flags from the options */
	struct shape_binding bind;   /* per symbol */
	int64_t *sig;                /* inputs * (1 + CEP_MAX_RANK) */
	struct op_tensor *in_t;      /* per graph input */
	const void **in_ptr;         /* per graph input */
	void **out_ptr;              /* per graph output */
	/* engine_run_submit_batch()'s scratch, for max_batch runs. */
	int max_batch;
	int64_t *b_rows;             /* (max_batch) each run's dimension 0 */
	const void **b_in;           /* (max_batch, graph inputs) */
	void **b_out;                /* (max_batch, graph outputs) */
	struct engine_stats stats;
};

/* ------------------------------------------------- models: engine_model.c */

/* What a model loaded with o is, as the cache compares it, in *key (tf32
 * is fp32; only a half graph depends on the backend kind). Returns 0, or
 * CEP_EINVAL for a precision out of range. */
int engine__model_key(const struct engine_model_options *o, struct engine_model_options *key);

/* Whether two keys written by engine__model_key() load the same graph. */
static inline bool engine__key_equal(const struct engine_model_options *a,
				     const struct engine_model_options *b)
{
	return a->precision == b->precision && a->backend == b->backend;
}

/* ----------------------------------------------- weights: engine_weights.c */

/* Gives each constant of s's model that a run reads a home on s's
 * backend (s->const_dev): in place on a backend of host memory, else in
 * the model's shared device copy for (s->be, s->acc), made, uploaded and
 * charged if s is its first session. Fails with the account's CEP_ELIMIT,
 * CEP_EDEVMEM or CEP_ENOMEM. */
int engine__weights_place(engine_session *s);

/* Gives back s's share of the model's device copy; the last session
 * frees and uncharges it. Accepts a session that placed none. */
void engine__weights_leave(engine_session *s);

/* ---------------------------------------------------- plans: engine_plans.c */

/* Builds and caches the plan for the signature in s->sig (sig_len
 * entries) and the inputs in s->in_t, charging its memory to the
 * session's owner; *out is the cache's. Returns 0 or an error: CEP_EAGAIN
 * when every cached plan is in flight, CEP_ELIMIT when the memory limits
 * leave no room even once older plans are gone. */
int engine__plan_make(engine_session *s, struct plan_env *env, int sig_len, struct plan **out);

/* Frees s's plans (none may be in flight) and uncharges their blocks. */
void engine__plans_close(engine_session *s);

/* -------------------------------------------------------- runs: engine_run.c */

/* The first of the n inputs in named name; NULL when none is (never for
 * inputs that engine_run_check() has passed and a name of the model). */
const struct engine_input *engine__input_find(const struct engine_input *in, size_t n,
					      const char *name);

/* The index among g's outputs of the one named name, g->n_outputs when
 * none is (never for an output name engine_run_check() has passed). */
int engine__output_index(const struct graph *g, const char *name);

/* Fills s->in_t (shapes and data) and s->in_ptr in graph order from the
 * run's inputs, which engine_run_check() has checked, and s->sig, the
 * plan's shape signature; returns its length. */
int engine__inputs_bind(engine_session *s, const struct engine_input *in, size_t n_in);

/* Counts a run of p that queued all its work. */
void engine__run_count(engine_session *s, const struct plan *p);

/* Keeps why the capture of p failed, the first time it does; had_error:
 * whether p had failed a capture before this run. */
void engine__capture_note(engine_session *s, const struct plan *p, bool had_error);

/* Keeps the run's first error and this thread's message with it, for
 * engine_run_complete(). */
void engine__run_fail(struct engine_run *run, int err);

#endif /* CEPD_ENGINE_PRIV_H */
