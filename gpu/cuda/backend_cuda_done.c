/*
 * backend_cuda_done.c — host functions finished from events, not from the
 * stream (experimental: CUDAEP_EVENT_COMPLETION=1 in the daemon's
 * environment; off by default).
 *
 * backend_stream_host_fn() normally queues cuLaunchHostFunc(), which holds
 * the stream until the function has run on the driver's own thread: every
 * run a session has in flight then waits for the previous run's host
 * function, so runs in flight on one stream do not overlap (bench/datapath
 * measures the floor with and without one). Here the call instead records
 * an event on the stream and hands (event, fn, arg) to one thread of the
 * backend, which polls the events it holds in the order they were queued
 * and calls fn once its event has completed. The contract stays the one
 * of backend_stream_host_fn(): fn runs after everything queued before it,
 * the functions of one stream run in the order they were queued, and a
 * sync of the stream returns after the functions queued before it have
 * run (backend_cuda__done_drain()).
 *
 * The thread spins (yielding) for a while after the last completion, then
 * sleeps in short steps: a completion is seen within tens of
 * microseconds, at the cost of a CPU while runs are in flight.
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"

#define DONE_SPIN_NS 200000u   /* spin this long after the last completion */
#define DONE_SLEEP_NS 10000u   /* then sleep in steps of this */
#define DONE_BLOCKED_MAX 64    /* streams held back in one scan */

struct done_item {
	CUevent ev;
	backend_host_fn fn;
	void *arg;
	struct backend_stream *s;
	struct done_item *next;
};

struct cuda_done {
	struct cuda_ctx *cc;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more;       /* an item was queued, or stop */
	pthread_cond_t drained;    /* items were finished */
	struct done_item *head;    /* in the order queued */
	struct done_item *spare;   /* finished items, their events reusable */
	bool stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool blocked_has(struct backend_stream *const *b, size_t n, struct backend_stream *s)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] == s)
			return true;
	return false;
}

/* Takes off d's list, in order, the items whose event has completed and
 * that no earlier item of their stream holds back; returns them as a
 * list. Called with the lock. */
static struct done_item *done_take(struct cuda_done *d)
{
	struct backend_stream *blocked[DONE_BLOCKED_MAX];
	struct done_item **pp = &d->head, *it, *out = NULL, **tail = &out;
	size_t n_blocked = 0;
	CUresult r;

	while ((it = *pp) != NULL) {
		if (blocked_has(blocked, n_blocked, it->s)) {
			pp = &it->next;
			continue;
		}
		r = d->cc->drv->cuEventQuery(it->ev);
		if (r == CUDA_ERROR_NOT_READY) {
			if (n_blocked == DONE_BLOCKED_MAX)
				break;
			blocked[n_blocked++] = it->s;
			pp = &it->next;
			continue;
		}
		/* Completed, or the context is gone (a sticky error): either
		 * way nothing more will happen on the stream before it. */
		*pp = it->next;
		it->next = NULL;
		*tail = it;
		tail = &it->next;
	}
	return out;
}

static void *done_main(void *arg)
{
	struct cuda_done *d = arg;
	struct done_item *ready, *it, *next;
	uint64_t last = now_ns();
	struct timespec nap = { 0, DONE_SLEEP_NS };

	/* Sleeps of 10 us, not the default slack's 50 us more. */
	(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	(void)d->cc->drv->cuCtxSetCurrent(d->cc->ctx);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (d->head == NULL && !d->stop)
			pthread_cond_wait(&d->more, &d->lock);
		if (d->head == NULL && d->stop)
			break;
		ready = done_take(d);
		if (ready == NULL) {
			pthread_mutex_unlock(&d->lock);
			if (now_ns() - last < DONE_SPIN_NS)
				sched_yield();
			else
				nanosleep(&nap, NULL);
			pthread_mutex_lock(&d->lock);
			continue;
		}
		pthread_mutex_unlock(&d->lock);
		for (it = ready; it != NULL; it = it->next)
			it->fn(it->arg);
		last = now_ns();
		pthread_mutex_lock(&d->lock);
		for (it = ready; it != NULL; it = next) {
			next = it->next;
			it->next = d->spare;
			d->spare = it;
		}
		pthread_cond_broadcast(&d->drained);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int backend_cuda__done_start(struct cuda_ctx *cc)
{
	const char *on = getenv("CUDAEP_EVENT_COMPLETION");
	struct cuda_done *d;

	if (on == NULL || strcmp(on, "1") != 0)
		return 0;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	d->cc = cc;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->more, NULL);
	pthread_cond_init(&d->drained, NULL);
	if (pthread_create(&d->thread, NULL, done_main, d) != 0) {
		pthread_cond_destroy(&d->drained);
		pthread_cond_destroy(&d->more);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return cep__set_error(CEP_ENOMEM, "cuda backend: no thread for completions");
	}
	cc->done = d;
	log_notice("cuda backend: runs are finished from events (CUDAEP_EVENT_COMPLETION=1, "
		   "experimental)");
	return 0;
}

void backend_cuda__done_stop(struct cuda_ctx *cc)
{
	struct cuda_done *d = cc->done;
	struct done_item *it, *next;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->more);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	for (it = d->spare; it != NULL; it = next) {
		next = it->next;
		(void)cc->drv->cuEventDestroy(it->ev);
		free(it);
	}
	pthread_cond_destroy(&d->drained);
	pthread_cond_destroy(&d->more);
	pthread_mutex_destroy(&d->lock);
	free(d);
	cc->done = NULL;
}

int backend_cuda__done_queue(struct cuda_ctx *cc, struct backend_stream *s,
			     backend_host_fn fn, void *arg)
{
	struct cuda_done *d = cc->done;
	struct done_item *it, **pp;
	int ret;

	pthread_mutex_lock(&d->lock);
	it = d->spare;
	if (it != NULL)
		d->spare = it->next;
	pthread_mutex_unlock(&d->lock);
	if (it == NULL) {
		it = calloc(1, sizeof(*it));
		if (it == NULL)
			return cep__set_error(CEP_ENOMEM, NULL);
		ret = CEP_CU_CHECK(cc->drv->cuEventCreate(&it->ev, CU_EVENT_DISABLE_TIMING));
		if (ret < 0) {
			free(it);
			return ret;
		}
	}
	ret = CEP_CU_CHECK(cc->drv->cuEventRecord(it->ev, s->stream));
	pthread_mutex_lock(&d->lock);
	if (ret < 0) {
		it->next = d->spare;
		d->spare = it;
		pthread_mutex_unlock(&d->lock);
		return ret;
	}
	it->fn = fn;
	it->arg = arg;
	it->s = s;
	it->next = NULL;
	for (pp = &d->head; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = it;
	pthread_cond_signal(&d->more);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void backend_cuda__done_drain(struct cuda_ctx *cc, struct backend_stream *s)
{
	struct cuda_done *d = cc->done;
	struct done_item *it;
	bool pending;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		pending = false;
		for (it = d->head; it != NULL && !pending; it = it->next)
			pending = it->s == s;
		if (!pending)
			break;
		pthread_cond_wait(&d->drained, &d->lock);
	}
	pthread_mutex_unlock(&d->lock);
}
