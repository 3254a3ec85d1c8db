/*
 * run.h — the life of a run with a fence, from its admission to its
 * fence: one record per run, one state per record, named transitions.
 *
 *                 run_wait()         run_submit()
 *    FINISHED ──> ADMITTED ──> WAITING ─────────> ON_DEVICE ──> LANDED ──> FINISHED
 *     run_admit()    │   run_batch()  ↑               signal     run_finish()  ↑
 *                    ├──> BATCHED ────┘ (or alone)                  │          │
 *                    └─ run_submit() ─────────────────┘            └─> EARLY ─┘
 *                                                          reaped before its reply
 *
 *   - ADMITTED: accepted; the record holds the run's session and regions.
 *   - WAITING: answered at once (its outputs' shapes), waiting for its
 *     client's turn in the fair queue (fairq.h).
 *   - BATCHED: waiting in its model's batch window (batch.h).
 *   - ON_DEVICE: handed to the backend: its signal (a host function on the
 *     backend's thread) will come, or a recovery will claim it.
 *   - LANDED: its verdict is in (the signal, a failure before it reached
 *     the device, or a recovery's) and it waits in the daemon's landing
 *     queue for the event loop.
 *   - EARLY: the loop met it before its RunReply went out (a reply waits
 *     for work on the thread pool); it is finished when the reply goes,
 *     which its error must follow.
 *   - FINISHED: the loop completed it in the engine, counted it, dropped
 *     its holds and told its owner (run_queue_ops): the record is free.
 *
 * Transitions out of ADMITTED, WAITING and BATCHED that never reach the
 * device: run_fail() (a verdict, sent to the client like a device's),
 * run_abort() (nothing was queued: the request's own error answers it) and
 * run_drop() (its client is gone: nothing is sent).
 *
 * Threads: every transition runs on the event loop (or the thread that
 * owns a server without one), but ON_DEVICE -> LANDED, which the signal
 * takes on a backend thread, or a recovery on the loop, whichever comes
 * first (the state is atomic for that race). A landed record goes to the
 * landing queue; nothing of it is touched off the loop after that.
 *
 * The fence page (fence.h) is the run's completion channel: the record
 * arms its slot at admission and signals it with the verdict. The record
 * is owned by its client's run table; the client is its owner only through
 * the opaque pointer the callbacks hand back.
 */
#ifndef CEPD_RUN_H
#define CEPD_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/batch.h"
#include "daemon/fence.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "proto/cep_limits.h"

struct region;
struct region_table;
struct session;
struct session_table;
struct stats;
struct run_queue;

/* Records of one client: twice the fence slots, so that a client which
 * saw a run's fence before its host function ran can reuse the slot at
 * once. */
#define RUN_RECORDS (2 * CEP_FENCE_SLOTS)

enum run_state {
	RUN_FINISHED = 0,
	RUN_ADMITTED,
	RUN_WAITING,
	RUN_BATCHED,
	RUN_ON_DEVICE,
	RUN_LANDED,
	RUN_EARLY,
};

/* What a run that waits (in the fair queue) keeps of its request: the
 * engine's view of its inputs and outputs, their names pointing into the
 * session's model (which the run's hold on the session keeps) and their
 * shapes here. Made the first time a record waits and kept with it, so
 * that waiting again allocates nothing. */
struct run_io {
	size_t n_in, n_out;
	struct engine_input in[CEP_MAX_IO];   /* (n_in) */
	struct engine_output out[CEP_MAX_IO]; /* (n_out) */
	int64_t dims[CEP_MAX_IO][CEP_MAX_RANK]; /* in[i].dims */
};

struct run {
	_Atomic uint8_t state;         /* enum run_state */
	bool replied;                  /* its RunReply went out: its error may
	                                * follow (the only fact of the request
	                                * rather than of the run) */
	uint8_t cls;                   /* its fair-queue class while WAITING */
	uint8_t batched_lane;          /* the lane of batched_in it went on */
	struct run *next;              /* free list, landing queue or lane */
	struct run_table *table;       /* its client's, which owns it */
	struct session *sess;          /* held from admission to finish */
	uint64_t seq;                  /* its fence sequence number */
	uint64_t req_id;               /* its Run request's id */
	int status;                    /* the signalled verdict: 0 or CEP_E* */
	int early_err;                 /* a verdict set before the device
	                                * (run_fail()), its message in er.msg;
	                                * 0: the engine's verdict counts */
	struct batch_group *batched_in; /* the group whose batch it went in,
	                                * told when it lands; else NULL */
	struct backend_fault *fault;   /* its fault record, in registered memory */
	struct run_io *io;             /* owned; NULL until it first waits */
	struct batch_member bm;        /* while BATCHED: its place in the group */
	struct engine_fence fence;     /* what the engine queues behind it */
	struct engine_run er;          /* the engine's state of it */
	uint32_t n_holds;
	struct region *holds[2 * CEP_MAX_IO]; /* (n_holds) distinct regions */
};

/* A client's records; in struct client. */
struct run_table {
	struct run_queue *q;           /* the daemon's landing queue */
	void *owner;                   /* handed to the queue's callbacks */
	struct fence_page *page;       /* the client's page */
	struct region_table *regions;  /* where its runs' holds go back */
	struct session_table *sessions;
	struct run_table *prev, *next; /* in q's tables */
	struct run *runs;              /* (RUN_RECORDS) from the first run */
	struct backend_fault *faults;  /* (RUN_RECORDS) registered, one each */
	size_t faults_bytes;
	struct run *free;              /* FINISHED records */
	uint32_t inflight;             /* records not FINISHED */
	uint32_t on_device;            /* of those, handed to the backend (they
	                                * count against the client's bound) */
};

/* How finished runs are reported to the layer above (the server). */
struct run_done {
	uint64_t req_id;               /* the Run's request id */
	uint64_t seq;                  /* its fence */
	uint64_t session_id;
	int result;                    /* 0 or its CEP_E* code ... */
	const char *msg;               /* ... and message; valid during the call */
};

struct run_queue_ops {
	/* A run of owner finished: its record is free already, d says how it
	 * went (the caller sends a failure to its client). */
	void (*finished)(void *ctx, void *owner, const struct run_done *d);
	/* owner's last run finished. */
	void (*idle)(void *ctx, void *owner);
	/* The queue stopped and nothing is in flight: its handle is closing. */
	void (*drained)(void *ctx);
};

/* The daemon's landing queue; in struct server. */
struct run_queue {
	pthread_mutex_t lock;          /* guards head, tail and live */
	pthread_cond_t landed;         /* a run landed */
	struct run *head, *tail;       /* landed, not yet met by the loop */
	uv_async_t async;              /* wakes the loop for them */
	bool live;                     /* async may be sent */
	bool stopping;                 /* close async when nothing is in flight */
	uint32_t inflight;             /* runs of every table not FINISHED */
	struct run_table *tables;      /* every client's */
	struct backend *backend;       /* fault records are registered here */
	struct stats *stats;
	const struct run_queue_ops *ops;
	void *ctx;
};

/* ------------------------------------------------------------------ queue */

/* Initializes q (caller memory) for runs on backend be, counted in st and
 * reported through ops with ctx. Release with run_queue_close() once
 * nothing is in flight. */
void run_queue_init(struct run_queue *q, struct backend *be, struct stats *st,
		    const struct run_queue_ops *ops, void *ctx);
void run_queue_close(struct run_queue *q);

/* Starts waking loop for landings. Returns 0 or a libuv error. */
int run_queue_start(struct run_queue *q, uv_loop_t *loop);

/* Stops: the handle closes (and ops->drained is told) once nothing is in
 * flight, so that the loop can end. */
void run_queue_stop(struct run_queue *q);

/* Finishes the runs that landed (a run whose reply is still to go waits
 * for it in EARLY, unless force). On the loop. */
void run_queue_reap(struct run_queue *q, bool force);

/* Waits for every run in flight and finishes it: for a server without a
 * loop and for server_free(). No run may wait (fair queue, batch). */
void run_queue_drain(struct run_queue *q);

/* ------------------------------------------------------------------ table */

/* Initializes t (caller memory) for owner, whose page, regions and
 * sessions those are, and links it into q. */
void run_table_init(struct run_table *t, struct run_queue *q, void *owner,
		    struct fence_page *page, struct region_table *regions,
		    struct session_table *sessions);

/* Frees t's records and unlinks it; nothing of it may be in flight. */
void run_table_close(struct run_table *t);

/* ------------------------------------------------------------ transitions */

/*
 * FINISHED -> ADMITTED: takes a record of t for a Run on session sess with
 * fence sequence number seq and request id req_id: checks seq against the
 * page, finds a free record (finishing landed runs when none is free),
 * arms the slot and holds sess. Fails with CEP_EINVAL (no page, a seq not
 * above the last), CEP_EAGAIN (RUN_RECORDS runs in flight) or CEP_ENOMEM.
 */
int run_admit(struct run_table *t, struct session *sess, uint64_t seq, uint64_t req_id,
	      struct run **out);

/* Holds reg for r until r finishes (once per distinct region). */
void run_hold(struct run *r, struct region *reg);

/* r's run_io, made the first time r waits. Returns 0 or CEP_ENOMEM. */
int run_io_get(struct run *r, struct run_io **out);

/* ADMITTED -> WAITING (the fair queue links it). */
void run_wait(struct run *r, uint8_t cls);

/* ADMITTED -> BATCHED (its batch group holds it). */
void run_batch(struct run *r);

/* ADMITTED, WAITING or BATCHED -> ON_DEVICE: r is being handed to the
 * backend (on the loop now or about to be on the thread pool); it counts
 * against its client's bound until it finishes. Idempotent. */
void run_submit(struct run *r);

/* r went on the device in a batch of g, on lane: g is told when it lands. */
void run_batched_in(struct run *r, struct batch_group *g, uint8_t lane);

/*
 * ADMITTED, WAITING, BATCHED, or ON_DEVICE when nothing was queued -> LANDED
 * with verdict code and message msg: its slot and, once finished on the
 * loop, its client get the error as from a run that failed on the device.
 */
void run_fail(struct run *r, int code, const char *msg);

/* ADMITTED, BATCHED, or ON_DEVICE when nothing was queued -> FINISHED,
 * silently: its request's own error answers it. */
void run_abort(struct run *r);

/* WAITING or BATCHED -> FINISHED, silently: its client is gone. Unlike
 * run_abort(), its owner is not told it went idle (the client, going
 * away, drops them itself). */
void run_drop(struct run *r);

/* r's RunReply went out: finishes it when it landed early. */
void run_replied(struct run *r);

/* Whether r is in flight (not FINISHED). */
static inline enum run_state run_state(const struct run *r)
{
	return (enum run_state)atomic_load_explicit(&r->state, memory_order_acquire);
}

/* ---------------------------------------------------------------- recovery */

/*
 * For the recovery from a lost context (recover.h), on the loop, once no
 * work of any client uses the backend: settles every run ON_DEVICE of
 * every table. A run whose signal ran (or is running) lands as usual. One
 * whose host function will never run is claimed here: if the device had
 * written its fence already, its outputs are in place and it succeeded;
 * otherwise its slot gets CEP_ECONTEXT and it fails with why. Waits until
 * every such run has landed, then finishes each (completing it in the
 * engine, so that no plan is in flight any more), sending the failures.
 * Returns how many it failed.
 */
uint32_t run_queue_recover(struct run_queue *q, const char *why);

#endif
