/*
 * fairq.h — the fair queue of runs with a fence: at most
 * max_runs_in_flight runs of one connection are submitted to the backend
 * at once; a run over that bound is accepted (its RunReply, with its
 * outputs' shapes, goes out at once, as for any run) and waits here until
 * its client's turn comes.
 *
 * Turns: waiting runs sit in lanes, one per connection and priority class
 * (the session's priority: high, normal, low). Whenever a run completes or
 * a connection's request work ends, fairq_pump() starts waiting runs:
 * every high-class lane first, then normal, then low; within a class the
 * lanes take turns, one run each, so a client with a hundred runs waiting
 * delays another client's run behind at most its own bound of runs on the
 * device, never behind all hundred. Within a lane runs start in the order
 * they came.
 *
 * Only connections with a socket on a backend that queues work
 * (BACKEND_CAP_ASYNC) queue: elsewhere a run is computed while it is
 * submitted (the host backend), one at a time per connection, and detached
 * connections (tests, the fuzzer) run everything inline.
 *
 * Everything here runs on the event loop. fairq_pump() is called only at
 * the top of a loop callback (a completion, a job's end, a connection's
 * packets, a reload), never inside a request's handler, so that the
 * connection whose request is being served is never started under it.
 */
#ifndef CEPD_FAIRQ_H
#define CEPD_FAIRQ_H

#include <stdbool.h>
#include <stdint.h>

struct server;
struct conn;
struct session;
struct fence_run;

/* Priority classes, served in this order. */
enum fairq_class {
	FAIRQ_HIGH,
	FAIRQ_NORMAL,
	FAIRQ_LOW,
	FAIRQ_CLASSES
};

/* The waiting runs of one connection and class; in struct fence. */
struct fairq_lane {
	struct fence_run *head, *tail;  /* in arrival order, through ->next */
	struct fairq_lane *prev, *next; /* in its class's ring while it has runs */
	struct conn *c;                 /* its connection */
};

/* The server's queue; in struct server. */
struct fairq {
	struct fairq_lane *turn[FAIRQ_CLASSES]; /* per class, the ring's lane
	                                         * whose turn is next; NULL:
	                                         * none waits */
	uint32_t lanes[FAIRQ_CLASSES];  /* lanes in each ring */
	uint32_t waiting;               /* runs waiting, all lanes */
};

/* The bound in force for each connection: max_runs_in_flight, or
 * FENCE_RUNS where it is 0 (no bound beyond the records). */
uint32_t fairq_bound(const struct server *s);

/* Whether runs of c are queued here at all (c has a socket and the
 * backend queues work). */
bool fairq_applies(const struct server *s, const struct conn *c);

/* Whether a new run of c must wait: c has runs waiting already (they go
 * first), or fairq_bound() runs submitted. */
bool fairq_must_wait(const struct server *s, const struct conn *c);

/* Puts r (accepted and answered, its inputs and outputs kept in r->io) at
 * the end of its connection's lane for its session's priority. Counts it
 * (runs_queued, runs_waiting). */
void fairq_push(struct server *s, struct fence_run *r);

/* Starts waiting runs while their connections are below the bound and
 * not busy with other work, by class and in turns (see above). A run that
 * cannot be submitted fails through its fence. */
void fairq_pump(struct server *s);

/* Drops every waiting run of c, whose client is gone: holds released,
 * records free, nothing sent. Called by conn_free(). */
void fairq_conn_cancel(struct server *s, struct conn *c);

/* Fails every waiting run of c on session sess (NULL: on any session)
 * with code and msg (sent to the client as the run's error, as a run that
 * fails on the device): for a session an administrator killed, or every
 * run of a recovery (recover.h). Returns how many it failed. */
uint32_t fairq_session_fail(struct server *s, struct conn *c, const struct session *sess,
			    int code, const char *msg);

#endif
