/*
 * batch.h — cross-client batching: fenced runs of sessions that opted in
 * (SessionOptions.batching) and share one model, precision and priority
 * wait up to batch_window_us in their group, then go to the engine as one
 * run stacked along dimension 0 (engine_run_submit_batch()) on sessions
 * the group owns, whose memory is charged to the daemon's shared owner.
 * Each run keeps its own fence record, so its client sees its fence, its
 * reply and its error exactly as if it had run alone.
 *
 * A group has two lanes (engine sessions, each with its stream), and a
 * batch goes only on a lane with no batch on the device: while both are
 * busy its runs wait, and the clients of a batch, which come back as it
 * lands, join the next one, so batches grow to what the clients offer
 * (batch_run_landed()) while the other lane keeps the device busy. With a
 * lane free a group flushes when its window expires, or at once when
 * every session of the group has a run waiting, or when it holds
 * batch_max runs or batch_max rows. One run flushes alone, as an ordinary
 * run; so do runs the engine refuses to merge (shapes that differ, too
 * little output room, a plan that does not fit), each getting then what
 * it would have got alone. A batch whose plan is cold is planned and
 * submitted on the thread pool, meanwhile the group gathers the next.
 *
 * The window is a timerfd watched by the loop (libuv's timers count in
 * milliseconds, windows in microseconds).
 *
 * Everything here runs on the event loop, but for the group's work on the
 * thread pool, which touches only the group's engine session and the runs
 * of the batch it was given.
 */
#ifndef CEPD_BATCH_H
#define CEPD_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "engine/engine.h"

struct account;
struct backend;
struct stats;
struct batch_group;

/* How a member's run left its group (batch_member's done). */
enum batch_outcome {
	BATCH_SUBMITTED = 0,  /* queued in a batch: its outputs are described,
	                       * its fence and done function are queued */
	BATCH_ALONE,          /* not merged: run it as an ordinary run */
};

/* A run waiting in a group; caller memory (the run's record, run.h), valid
 * until done is called or batch_member_cancel() takes it back. */
struct batch_member {
	struct batch_member *next;          /* in the group's list */
	struct batch_group *group;          /* set while it is the group's */
	struct engine_batch_run run;        /* its tensors, fence and run */
	int64_t rows;                       /* its dimension 0 */
	uint8_t lane;                       /* BATCH_SUBMITTED: its batch's
	                                     * lane, for batch_run_landed() */
	void (*done)(struct batch_member *m, enum batch_outcome how);
	                                    /* on the loop, exactly once unless
	                                     * cancelled */
};

/* The groups of a daemon; in struct server. */
struct batcher {
	uv_loop_t *loop;                    /* watches the windows */
	struct backend *backend;            /* the groups' engine sessions run here */
	struct account *account;            /* charged to its shared owner */
	struct stats *stats;
	struct batch_group *groups;         /* live ones */
	uint64_t window_ns;                 /* batch_window_us, in ns */
	uint32_t max;                       /* batch_max: runs, and rows */
};

/* Initializes b (caller memory) for groups on loop and be, charged to
 * account and counted in st, with batch_window_us window_us and batch_max
 * max (0: 32); nothing to close (every group goes with the last session
 * that uses it). */
void batcher_init(struct batcher *b, uv_loop_t *loop, struct backend *be,
		  struct account *account, struct stats *st, uint32_t window_us, uint32_t max);

/*
 * The group of sessions of engine session es's model and precision and of
 * the priority es was opened with, made on first use (its two lanes'
 * engine sessions on the server's backend, charged to the daemon's shared
 * owner, and its timer), with a
 * new reference for the caller, dropped with batch_group_unref(). Needs
 * the loop. Fails with CEP_EINVAL (the model cannot batch: the message
 * says why, see engine_model_batchable()), the errors of
 * engine_session_new(), or CEP_ENOMEM / a timerfd or libuv error.
 */
int batch_group_get(struct batcher *b, engine_session *es, cep_priority priority,
		    struct batch_group **out);

/* Drops a reference; the last one frees the group (no run of it may be
 * waiting or in flight: the sessions that hold it hold those). Accepts
 * NULL. */
void batch_group_unref(struct batch_group *g);

/*
 * Adds m to g: m->run, m->rows and m->done set, m->run.fence and
 * m->run.run valid until done. It waits for the window, or flushes with
 * the loop's next turn when the group is full; done is never called
 * before this returns. Returns false, taking nothing, when g no longer
 * merges runs (its model's batches cannot be planned): run it alone.
 */
bool batch_add(struct batch_group *g, struct batch_member *m);

/* A run of a batch of g that was submitted on lane (its member's done
 * said BATCH_SUBMITTED) has landed or failed; on the loop, once per such
 * run. The last of its batch frees the lane for what waits in g. */
void batch_run_landed(struct batch_group *g, unsigned lane);

/* Takes m out of its group if it is still waiting there (its client went
 * away): returns true, and done will not be called. Returns false once it
 * is being submitted (done will come). */
bool batch_member_cancel(struct batch_member *m);

#endif
