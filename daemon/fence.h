/*
 * fence.h — runs in flight and how their clients learn that they are
 * done: each connection's fence page (proto/cep_fence.h, shared with the
 * client), the records of its runs in flight, the function a run's stream
 * calls when the run's work has completed, and the queue that carries
 * those completions back to the event loop, which finishes them there:
 * it releases what the run held (its regions, its session, its plan) and
 * sends the error of a run that failed.
 *
 * Threads: the signal (fence_run_signal, a backend host function) runs on
 * a thread of the backend's, or inline where the backend completes work
 * at once; it writes the client's fence slot, wakes its waiters and hands
 * the record to the queue, and touches nothing else. Everything else here
 * runs on the event loop (or the thread that owns a server without one).
 *
 * A record is taken when its Run is accepted; a run over its client's
 * max_runs_in_flight waits in the fair queue (fairq.h) with its inputs
 * and outputs in its fence_io before it is submitted.
 *
 * Order: a run's RunReply always goes out before the error of its failure
 * (a completion that comes first waits for the reply to be sent), so the
 * client can tell the two apart by order as well as by body.
 */
#ifndef CEPD_FENCE_H
#define CEPD_FENCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "gpu/backend.h"
#include "proto/cep_fence.h"
#include "proto/cep_limits.h"
#include "engine/engine.h"
#include "daemon/fairq.h"

struct server;
struct conn;
struct session;
struct region;
struct batch_group;

/* Runs of one connection in flight at once: twice the slots, so that a
 * client which saw a run's fence before its host function ran can reuse
 * the slot at once. */
#define FENCE_RUNS (2 * CEP_FENCE_SLOTS)

/* What a run that waits for its turn (fairq.h) keeps of its request: the
 * engine's view of its inputs and outputs, their names pointing into the
 * session's model (which the run's hold on the session keeps) and their
 * shapes here. Made the first time a record waits and kept with it, so
 * that waiting again allocates nothing. */
struct fence_io {
	size_t n_in, n_out;
	struct engine_input in[CEP_MAX_IO];   /* (n_in) */
	struct engine_output out[CEP_MAX_IO]; /* (n_out) */
	int64_t dims[CEP_MAX_IO][CEP_MAX_RANK]; /* in[i].dims */
};

/* One run in flight: accepted, and waiting for its turn or submitted. */
struct fence_run {
	struct fence_run *next;        /* in the free list or the done queue */
	struct conn *c;                /* its connection, freed only after it */
	struct session *sess;          /* held (session_run_begin()) */
	struct backend_fault *fault;   /* its fault record, in registered memory */
	uint64_t seq;                  /* its fence sequence number */
	uint64_t req_id;               /* its Run request's id */
	int status;                    /* the signal's verdict: 0 or a CEP_E* */
	bool replied;                  /* its RunReply has been sent */
	bool done;                     /* signalled before it was replied */
	bool open;                     /* in flight: from fence_run_open() to
	                                * its release */
	_Atomic bool claimed;          /* its verdict is taken: by its signal,
	                                * or by a recovery that gave up on a
	                                * signal that will never come */
	bool completed;                /* engine_run_complete() has run ... */
	int result;                    /* ... and said this (its message in
	                                * er.msg) */
	bool submitted;                /* handed to the backend: counts in
	                                * its connection's submitted */
	uint8_t cls;                   /* enum fairq_class, while it waits */
	struct batch_group *batched_in; /* the group whose batch it went in,
	                                * told when it lands; else NULL */
	uint8_t batched_lane;          /* and the batch's lane there */
	struct fence_io *io;           /* owned; NULL until it first waits */
	struct engine_fence fence;     /* what the engine queues behind it */
	struct engine_run er;          /* the engine's state of it */
	uint32_t n_holds;
	struct region *holds[2 * CEP_MAX_IO]; /* (n_holds) distinct regions */
};

/* A connection's fence page and runs; in struct conn. */
struct fence {
	int fd;                        /* a dup of page_fd until the Hello reply
	                                * takes it; -1 */
	int page_fd;                   /* the page's memfd, kept for a handover
	                                * (daemon/handover.h); -1: none */
	struct cep_fence_slot *slots;  /* (CEP_FENCE_SLOTS) mapped shared with
	                                * the client; NULL: no page */
	bool pinned;                   /* slots are registered with the backend */
	uint64_t last_seq;             /* the largest fence_seq queued */
	struct fence_run *runs;        /* (FENCE_RUNS) from its first fenced run */
	struct backend_fault *faults;  /* (FENCE_RUNS) registered; one per record */
	size_t faults_bytes;
	struct fence_run *free;        /* records not in flight */
	uint32_t inflight;             /* records in flight */
	uint32_t submitted;            /* of those, handed to the backend */
	uint32_t waiting;              /* of those, waiting in lanes */
	struct fairq_lane lanes[FAIRQ_CLASSES]; /* its waiting runs */
};

/* The server's queue of completions; in struct server. */
struct fence_queue {
	pthread_mutex_t lock;          /* guards head, tail and live */
	pthread_cond_t landed;         /* a completion arrived */
	struct fence_run *head, *tail; /* signalled, not yet finished */
	uv_async_t async;              /* wakes the loop for them */
	bool live;                     /* async may be sent */
	bool stopping;                 /* close async when nothing is in flight */
	uint32_t inflight;             /* runs of every connection in flight */
};

/* Initializes q (caller memory). Release with fence_queue_close() once
 * nothing is in flight. */
void fence_queue_init(struct fence_queue *q);
void fence_queue_close(struct fence_queue *q);

/* Starts waking s->loop for completions / stops: the handle closes once
 * no run is in flight any more, so that the loop can end. Returns 0 or a
 * libuv error (mapped to CEP_E*). */
int fence_queue_start(struct server *s);
void fence_queue_stop(struct server *s);

/* Finishes the runs whose completions have arrived (not yet one whose
 * reply is still to be sent, unless force). On the loop. */
void fence_reap(struct server *s, bool force);

/* Waits for every run in flight and finishes it; for a server without a
 * loop and for server_free(). */
void fence_drain(struct server *s);

/*
 * Creates c's fence page: a memfd of CEP_FENCE_SLOTS slots sealed against
 * shrinking and growing, mapped here and registered with s's backend; the
 * memfd stays in c->fence.page_fd (a handover passes it on), a dup of it
 * waits in c->fence.fd for the Hello reply. Returns 0 or an error (the
 * connection then simply has no page: its runs wait for their replies).
 */
int fence_page_open(struct server *s, struct conn *c);

/*
 * Takes fd, the fence page memfd a previous image of the daemon handed
 * over (daemon/handover.h), as c's page: checks that it is a regular file
 * of the page's size, maps it and registers it with s's backend; its
 * slots keep what the client already saw, and the next fenced run must
 * have a sequence number above last_seq. Takes fd in every case. Returns
 * 0, or CEP_EINVAL (not a page: the message says why), a mapping error or
 * the backend's.
 */
int fence_page_adopt(struct server *s, struct conn *c, int fd, uint64_t last_seq);

/* Hands over the page's fd to the reply that carries it (-1 when there is
 * none to send). */
int fence_fd_take(struct fence *f);

/* Releases c's page and records; nothing may be in flight. */
void fence_close(struct server *s, struct conn *c);

/*
 * Opens the record of a Run of c on session sess with fence sequence
 * number seq and request id req_id: checks that c has a page and that seq
 * is above every earlier one, finds a free record (finishing completed
 * runs when none is free), clears the slot's status and stores req_id in
 * it, and holds sess. Fails with CEP_EINVAL (no page, a seq not above the
 * last), CEP_EAGAIN (FENCE_RUNS runs in flight) or CEP_ENOMEM.
 */
int fence_run_open(struct server *s, struct conn *c, struct session *sess,
		   uint64_t seq, uint64_t req_id, struct fence_run **out);

/* Holds reg for r (once per distinct region). */
void fence_run_hold(struct fence_run *r, struct region *reg);

/* Gives back r, for which nothing was queued (engine_run_submit() failed
 * or was not called): its holds go, its record is free again. */
void fence_run_abort(struct fence_run *r);

/* r is handed to the backend now (queued on the loop or about to be on
 * the thread pool): it counts against its connection's bound until it is
 * finished or given back. */
void fence_run_submit_mark(struct fence_run *r);

/* r's fence_io, made the first time r waits. Returns 0 or CEP_ENOMEM. */
int fence_run_io_get(struct fence_run *r, struct fence_io **out);

/* Fails r, for which nothing was queued (it waited, and could not be
 * submitted, or was cancelled): its status code and message msg go to
 * its slot and, once finished on the loop, to its client as its error,
 * as for a run that failed on the device. */
void fence_run_fail(struct fence_run *r, int code, const char *msg);

/* Gives back r, which waited and will never run because its client is
 * gone: holds released, record free, nothing sent. Unlike
 * fence_run_abort() it never frees the connection (conn_free() calls it). */
void fence_run_drop(struct fence_run *r);

/* r was submitted and its RunReply sent (or dropped with its client): its
 * completion may be finished now. */
void fence_run_replied(struct fence_run *r);

/* ---------------------------------------------------------------- recovery */

/*
 * For the recovery from a lost context (daemon/recover.c), on the loop,
 * once no job of any connection uses the backend: settles every run in
 * flight of every connection. A run whose signal ran (or is running)
 * lands as usual. One whose host function will never run is claimed
 * here: if the device had written its fence already, its outputs are in
 * place and it succeeded; otherwise its slot gets status CEP_ECONTEXT and
 * its sequence number, its waiters are woken, and it fails with why.
 * Waits until every run has landed, then completes each in the engine, so
 * that no plan is in flight and every engine session may be freed. The
 * runs stay in flight, holding their regions, until
 * fence_recover_finish(): the backend's streams may still be writing into
 * those regions until the engine sessions are freed. Returns how many
 * runs it failed.
 */
uint32_t fence_recover_settle(struct server *s, const char *why);

/* Finishes every run fence_recover_settle() settled, as fence_reap()
 * does: sends the failed ones' errors, drops their holds, counts them. A
 * connection or session that was waiting for them goes now. */
void fence_recover_finish(struct server *s);

#endif
