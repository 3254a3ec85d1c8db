/*
 * deferred.h — deferred release: memory freed while queued GPU work may
 * still read it.
 *
 * A session's stream can still be running kernels that read a block when
 * the daemon decides to free it (an unloaded session, a dead client).
 * Handing the block to the arena at once would let another allocation
 * overwrite it under the running kernel. Instead the block is pushed here
 * with the events recorded on every stream that used it, and stays out of
 * circulation (still allocated and charged) until every one of those events
 * has completed. The daemon calls deferred_poll() from its loop; nothing
 * here ever waits, and nothing ever synchronizes the whole device.
 *
 * Events are an interface, so tests complete fake events in any order and
 * the daemon passes CUDA events (cuEventQuery).
 *
 * Threads: every function may be called from any thread; the queue has its
 * own lock, and never calls the arena or an event's drop() while holding it.
 */
#ifndef CEP_ALLOC_DEFERRED_H
#define CEP_ALLOC_DEFERRED_H

#include "alloc/arena.h"

#include <stddef.h>
#include <stdint.h>

/* Something queued GPU work will complete: an event recorded on a stream
 * after the last use of the memory. */
struct alloc_event {
	/* 0 once complete, CEP_EAGAIN while pending (as the backend's
	 * event_query), or another CEP_E* code: the block then stays held.
	 * Must not block. */
	int (*query)(void *ctx);
	/* Called once when the queue no longer needs the event (it may
	 * destroy or recycle it); may be NULL. */
	void (*drop)(void *ctx);
	void *ctx;
};

struct deferred_stats {
	uint64_t pending;       /* blocks held now */
	uint64_t pending_bytes; /* bytes of those blocks */
	uint64_t pushed;        /* blocks ever pushed (with at least one event) */
	uint64_t released;      /* blocks handed back to the arena */
	uint64_t query_errors;  /* event queries that failed */
};

struct deferred;

/* Makes an empty queue that frees into a (which must outlive it). On
 * success *out is the caller's, freed with deferred_free(). Fails only with
 * CEP_ENOMEM. */
int deferred_new(struct arena *a, struct deferred **out);

/* Releases every block still held (as deferred_flush()) and frees the
 * queue. Accepts NULL. */
void deferred_free(struct deferred *dq);

/*
 * Hands block b to the queue, to be freed once every one of the n events
 * has completed; the queue copies the event descriptors and calls each
 * one's drop() when done with it. With n == 0 the block is freed at once.
 * On success the block and the events are the queue's. Fails only with
 * CEP_ENOMEM, and then the block and the events stay the caller's.
 */
int deferred_push(struct deferred *dq, struct arena_block *b,
		  const struct alloc_event *events, size_t n);

/*
 * Queries the pending events and frees every block whose events have all
 * completed, in whatever order they complete. If released is not NULL it
 * gets how many blocks were freed. Returns 0, or the first error an event
 * query returned (that block stays held; the others are still processed).
 */
int deferred_poll(struct deferred *dq, size_t *released);

/* Frees every held block without asking its events: only for when no work
 * can be queued any more (after the context is synchronized at shutdown,
 * or lost). Drops the events. */
void deferred_flush(struct deferred *dq);

/* Copies the queue's gauges and counters into *out. */
void deferred_stats_get(struct deferred *dq, struct deferred_stats *out);

#endif
