/*
 * deferred.c — the deferred-release queue (alloc/deferred.h).
 *
 * Held blocks form a list in push order; each carries its events and which
 * of them have completed, so an event is queried until it completes and
 * never after. Retired entries are unlinked under the lock and freed into
 * the arena after it is dropped, so the arena's lock is never taken while
 * this one is held.
 */
#include "alloc/deferred.h"
#include "client/cudaep.h"

#include <pthread.h>
#include <stdlib.h>

struct deferred_event {
	struct alloc_event ev;
	int done;
};

struct deferred_entry {
	struct deferred_entry *prev;
	struct deferred_entry *next;
	struct arena_block *block;
	size_t n_events;
	size_t n_done;
	struct deferred_event events[]; /* (n_events) */
};

struct deferred {
	pthread_mutex_t lock;
	struct arena *arena;           /* the caller's */
	struct deferred_entry *head;   /* oldest first */
	struct deferred_entry *tail;
	struct deferred_stats st;
};

int deferred_new(struct arena *a, struct deferred **out)
{
	struct deferred *dq = calloc(1, sizeof(*dq));

	if (dq == NULL)
		return CEP_ENOMEM;
	pthread_mutex_init(&dq->lock, NULL);
	dq->arena = a;
	*out = dq;
	return 0;
}

void deferred_free(struct deferred *dq)
{
	if (dq == NULL)
		return;
	deferred_flush(dq);
	pthread_mutex_destroy(&dq->lock);
	free(dq);
}

static void deferred_unlink(struct deferred *dq, struct deferred_entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		dq->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		dq->tail = e->prev;
	dq->st.pending--;
	dq->st.pending_bytes -= arena_block_size(e->block);
	dq->st.released++;
}

/* Frees the blocks of a chain of retired entries (linked through next) and
 * drops their events; called without the lock. */
static void deferred_retire(struct deferred *dq, struct deferred_entry *e)
{
	struct deferred_entry *next;
	size_t i;

	for (; e != NULL; e = next) {
		next = e->next;
		arena_block_free(dq->arena, e->block);
		for (i = 0; i < e->n_events; i++)
			if (e->events[i].ev.drop != NULL)
				e->events[i].ev.drop(e->events[i].ev.ctx);
		free(e);
	}
}

int deferred_push(struct deferred *dq, struct arena_block *b,
		  const struct alloc_event *events, size_t n)
{
	struct deferred_entry *e;
	size_t i;

	if (b == NULL)
		return 0;
	if (n == 0) {
		arena_block_free(dq->arena, b);
		return 0;
	}
	e = malloc(sizeof(*e) + n * sizeof(e->events[0]));
	if (e == NULL)
		return CEP_ENOMEM;
	e->block = b;
	e->n_events = n;
	e->n_done = 0;
	for (i = 0; i < n; i++) {
		e->events[i].ev = events[i];
		e->events[i].done = 0;
	}
	pthread_mutex_lock(&dq->lock);
	e->next = NULL;
	e->prev = dq->tail;
	if (dq->tail != NULL)
		dq->tail->next = e;
	else
		dq->head = e;
	dq->tail = e;
	dq->st.pending++;
	dq->st.pending_bytes += arena_block_size(b);
	dq->st.pushed++;
	pthread_mutex_unlock(&dq->lock);
	return 0;
}

int deferred_poll(struct deferred *dq, size_t *released)
{
	struct deferred_entry *e, *next, *done = NULL;
	size_t i, count = 0;
	int ret = 0, q;

	pthread_mutex_lock(&dq->lock);
	for (e = dq->head; e != NULL; e = next) {
		next = e->next;
		for (i = 0; i < e->n_events; i++) {
			if (e->events[i].done)
				continue;
			q = e->events[i].ev.query(e->events[i].ev.ctx);
			if (q == 0) {
				e->events[i].done = 1;
				e->n_done++;
			} else if (q != CEP_EAGAIN) {
				dq->st.query_errors++;
				if (ret == 0)
					ret = q;
			}
		}
		if (e->n_done < e->n_events)
			continue;
		deferred_unlink(dq, e);
		e->next = done;
		done = e;
		count++;
	}
	pthread_mutex_unlock(&dq->lock);
	deferred_retire(dq, done);
	if (released != NULL)
		*released = count;
	return ret;
}

void deferred_flush(struct deferred *dq)
{
	struct deferred_entry *all;

	pthread_mutex_lock(&dq->lock);
	all = dq->head;
	for (struct deferred_entry *e = all; e != NULL; e = e->next) {
		dq->st.pending--;
		dq->st.pending_bytes -= arena_block_size(e->block);
		dq->st.released++;
	}
	dq->head = NULL;
	dq->tail = NULL;
	pthread_mutex_unlock(&dq->lock);
	deferred_retire(dq, all);
}

void deferred_stats_get(struct deferred *dq, struct deferred_stats *out)
{
	pthread_mutex_lock(&dq->lock);
	*out = dq->st;
	pthread_mutex_unlock(&dq->lock);
}
