/*
 * session.h — the sessions of a connection: a loaded model a client runs.
 * A session holds the engine's session (engine/engine.h) of the model the
 * client loaded; unloading it, by request or with its connection, frees
 * that and the model's memory with it.
 *
 * A run in flight holds its session: a session unloaded meanwhile (by
 * request, or with its connection) leaves its table at once and is freed
 * when the last of those runs completes.
 *
 * A session_table holds one connection's sessions; a session_pool, shared
 * by every table of a server, holds the id counter and the count. Both are
 * single-threaded (the event loop's).
 */
#ifndef CEPD_SESSION_H
#define CEPD_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/batch.h"
#include "daemon/handover.h"
#include "proto/cep_limits.h"
#include "engine/engine.h"
#include "daemon/idtable.h"
#include "common/stats.h"

struct session {
	uint64_t id;                 /* global, never reused; first (idtable.h) */
	uint64_t client_id;          /* the owning connection's id */
	char name[CEP_MAX_OBJ_NAME]; /* shown by cudaepctl, may be "" */
	uint64_t runs;               /* Run requests completed */
	uint64_t loaded_ns;          /* uv_hrtime() when loaded */
	engine_session *engine;      /* owned; NULL only in unit tests */
	struct engine_stats stats;   /* the engine's counters, copied on the
	                              * event loop after each run so that
	                              * cudaepctl never reads them while a
	                              * run on the thread pool writes them */
	struct batch_group *batch;   /* its group (a reference) when its runs
	                              * may be merged with others'; NULL:
	                              * they run alone (batch.h) */
	uint64_t batched_runs;       /* of runs, those merged into a batch */
	uint32_t inflight;           /* runs in flight that hold it */
	bool unloaded;               /* out of its table, freed with its last
	                              * run */
	uint32_t run_requests;       /* Run requests received (fault injection
	                              * counts them) */
	struct engine_session_options opts; /* as asked for when loading (its
	                              * precision, its stream's priority, also
	                              * its waiting runs' class, fairq.h), and
	                              * what re-creates the engine session in a
	                              * new image of the daemon after the
	                              * device context was lost (handover.h) */
	int restore_err;             /* why a recovery could not restore it
	                              * (it then has no engine), or 0 */
};

struct session_pool {
	struct stats *stats;         /* sessions gauge and counters */
	uint64_t next_id;            /* the id the next session gets */
	uint32_t count;              /* sessions held by all tables */
};

struct session_table {
	struct session_pool *pool;
	uint64_t client_id;          /* stamped on each session */
	struct idtable ids;          /* its struct session, by id */
	uint32_t unloaded_held;      /* unloaded sessions with runs in flight */
};

/* Initializes pool (caller memory); stats must outlive it. Ids start at 1.
 * Nothing to close. */
void session_pool_init(struct session_pool *pool, struct stats *stats);

/* Initializes an empty table of pool for connection client_id. Release
 * with session_table_close(). */
void session_table_init(struct session_table *t, struct session_pool *pool,
			uint64_t client_id);

/* Unloads every session of t and frees t's array. No run may be in
 * flight. Accepts NULL. */
void session_table_close(struct session_table *t);

/*
 * Creates a session named name (NULL: "", cut to CEP_MAX_OBJ_NAME - 1
 * bytes) with a new id. On success *out is owned by t. Fails with
 * CEP_ENOMEM.
 */
int session_table_add(struct session_table *t, const char *name,
		      uint64_t now_ns, struct session **out);

/*
 * As session_table_add(), for a session a previous image of the daemon
 * handed over (daemon/handover.h): it keeps its id, which must be below
 * the pool's next_id (set from the handover first) and above every id in
 * t; CEP_EINVAL otherwise, or CEP_ENOMEM.
 */
int session_table_adopt(struct session_table *t, uint64_t id, const char *name,
			uint64_t loaded_ns, struct session **out);

/* Session id of t, or NULL. Never sets an error. */
struct session *session_table_find(const struct session_table *t,
				   uint64_t id);

/* As session_table_find(), failing with CEP_ENOENT and the message
 * "no session ID on this connection". */
int session_table_get(const struct session_table *t, uint64_t id,
		      struct session **out);

/* Unloads session id of t: it leaves the table now, and its engine
 * session is freed now or, with runs in flight, when the last of them
 * completes. Returns 0 or CEP_ENOENT (with its message). */
int session_table_remove(struct session_table *t, uint64_t id);

/* A run of s (of t) was queued / has completed; the completion of the last
 * run of an unloaded session frees it. */
void session_run_begin(struct session *s);
void session_run_end(struct session_table *t, struct session *s);

/* ---------------------------------------------------------------- handover */

/* Puts every session of t into hc: id, name, options, counts, whether it
 * batched, and its model's file (handover_model()). Returns 0 or
 * CEP_ENOMEM (b remembers it). */
int session_save(const struct session_table *t, struct handover_build *b, HvClient *hc);

/*
 * Takes session hs into t with its id, name, counts and options (its
 * engine session is the caller's to open: the model must be loaded again).
 * Returns 0 with *out; or, when hs cannot be opened again (options
 * cudaepd does not have, an earlier recovery's failure, no model), the
 * error with *out kept in t and its restore_err set (its requests are
 * answered with the reason); or the table's error with *out NULL.
 */
int session_restore(struct session_table *t, const HvSession *hs, uint64_t now_ns,
		    struct session **out);

#endif
