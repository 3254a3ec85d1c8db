/*
 * fairq.h — the fair queue of runs with a fence: at most
 * max_runs_in_flight runs of one client are on the device at once; a run
 * over that bound is accepted (its RunReply, with its outputs' shapes,
 * goes out at once, as for any run) and waits here (RUN_WAITING, run.h)
 * until its client's turn comes.
 *
 * Turns: waiting runs sit in lanes, one per client and priority class
 * (the session's priority: high, normal, low). fairq_pump() starts
 * waiting runs: every high-class lane first, then normal, then low;
 * within a class the lanes take turns, one run each, so a client with a
 * hundred runs waiting delays another client's run behind at most its own
 * bound of runs on the device, never behind all hundred. Within a lane
 * runs start in the order they came.
 *
 * The queue does not start runs itself: the layer above says whether a
 * lane's client may start one now and starts it (fairq_ops), and calls
 * fairq_pump() from one place, at the top of each loop turn (server.c),
 * so that no run is started under a request being served.
 *
 * Everything here runs on the event loop.
 */
#ifndef CEPD_FAIRQ_H
#define CEPD_FAIRQ_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/run.h"

struct session;
struct stats;

/* Priority classes, served in this order. */
enum fairq_class {
	FAIRQ_HIGH,
	FAIRQ_NORMAL,
	FAIRQ_LOW,
	FAIRQ_CLASSES
};

/* The waiting runs of one client and class. */
struct fairq_lane {
	struct run *head, *tail;        /* in arrival order, through ->next */
	struct fairq_lane *prev, *next; /* in its class's ring while it has runs */
	struct fairq_lanes *of;         /* its client's lanes */
};

/* A client's lanes; in struct client. */
struct fairq_lanes {
	struct fairq_lane lane[FAIRQ_CLASSES];
	uint32_t waiting;               /* runs in them */
	void *owner;                    /* handed to fairq_ops */
};

struct fairq_ops {
	/* Whether owner may have a run started now. */
	bool (*can_start)(void *ctx, void *owner);
	/* Starts r, which left its lane (RUN_WAITING still). */
	void (*start)(void *ctx, void *owner, struct run *r);
};

/* The daemon's queue; in struct server. */
struct fairq {
	struct fairq_lane *turn[FAIRQ_CLASSES]; /* per class, the ring's lane
	                                         * whose turn is next; NULL:
	                                         * none waits */
	uint32_t lanes[FAIRQ_CLASSES];  /* lanes in each ring */
	uint32_t waiting;               /* runs waiting, all lanes */
	uint32_t bound;                 /* runs of a client on the device */
	struct stats *stats;
	const struct fairq_ops *ops;
	void *ctx;
};

/* Initializes q (caller memory) with its bound (fairq_bound_of()), its
 * counters and the callbacks that start runs; nothing to close. */
void fairq_init(struct fairq *q, uint32_t bound, struct stats *st,
		const struct fairq_ops *ops, void *ctx);

/* The bound for max_runs_in_flight n: n, or RUN_RECORDS where it is 0 (no
 * bound beyond the records) or larger. */
uint32_t fairq_bound_of(uint32_t n);

/* Initializes a client's lanes (caller memory). */
void fairq_lanes_init(struct fairq_lanes *l, void *owner);

/* Whether a new run of a client with lanes l and runs t must wait: it has
 * runs waiting already (they go first), or q->bound runs on the device. */
bool fairq_must_wait(const struct fairq *q, const struct fairq_lanes *l,
		     const struct run_table *t);

/* Whether a client with runs t is below the bound. */
bool fairq_below_bound(const struct fairq *q, const struct run_table *t);

/* ADMITTED -> WAITING: puts r (answered, its inputs and outputs kept in
 * r->io) at the end of its client's lane for its session's priority.
 * Counts it (runs_queued, runs_waiting). */
void fairq_push(struct fairq *q, struct fairq_lanes *l, struct run *r);

/* Starts waiting runs while their clients may, by class and in turns
 * (see above). */
void fairq_pump(struct fairq *q);

/* Drops every waiting run of l, whose client is gone: holds released,
 * records free, nothing sent (run_drop()). */
void fairq_cancel(struct fairq *q, struct fairq_lanes *l);

/* Fails every waiting run of l on session sess (NULL: on any session)
 * with code and msg (run_fail(): sent to the client as the run's error):
 * for a session an administrator killed. Returns how many it failed. */
uint32_t fairq_fail(struct fairq *q, struct fairq_lanes *l, const struct session *sess,
		    int code, const char *msg);

/* Fails every waiting run of every client, as fairq_fail(): for a
 * recovery (recover.h). Returns how many. */
uint32_t fairq_fail_all(struct fairq *q, int code, const char *msg);

#endif
