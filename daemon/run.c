/*
 * run.c — the life of a run with a fence (run.h): records, transitions,
 * the signal, the landing queue and the finish.
 *
 * A run is finished on the loop, never by its signal: the signal (on a
 * backend thread) writes the client's slot, wakes it and pushes the
 * record onto the landing queue; the loop, woken by the queue's async
 * handle, completes it in the engine, counts it, drops its holds, frees
 * the record and tells the layer above, which sends the error of a failed
 * run and lets a client that went away meanwhile go too.
 */
#include "daemon/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/region.h"
#include "daemon/session.h"

static void run_state_set(struct run *r, enum run_state st)
{
	atomic_store_explicit(&r->state, (uint8_t)st, memory_order_release);
}

/* Whether r, in state st, counts against its client's bound. */
static bool run_counts(const struct run *r, enum run_state st)
{
	switch (st) {
	case RUN_BATCHED:
	case RUN_ON_DEVICE:
		return true;
	case RUN_LANDED:
	case RUN_EARLY:
		return r->early_err == 0;
	default:
		return false;
	}
}

/* ------------------------------------------------------------------ queue */

static void queue_on_async(uv_async_t *h)
{
	struct run_queue *q = h->data;

	run_queue_reap(q, false);
}

static void queue_on_async_close(uv_handle_t *h)
{
}

void run_queue_init(struct run_queue *q, struct backend *be, struct stats *st,
		    const struct run_queue_ops *ops, void *ctx)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->landed, NULL);
	q->backend = be;
	q->stats = st;
	q->ops = ops;
	q->ctx = ctx;
}

void run_queue_close(struct run_queue *q)
{
	pthread_cond_destroy(&q->landed);
	pthread_mutex_destroy(&q->lock);
}

int run_queue_start(struct run_queue *q, uv_loop_t *loop)
{
	int ret;

	ret = uv_async_init(loop, &q->async, queue_on_async);
	if (ret != 0)
		return ret;
	q->async.data = q;
	pthread_mutex_lock(&q->lock);
	q->live = true;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* Closes the async handle: under the lock, so that no signal sends to it
 * once it is closing. */
static void queue_async_close(struct run_queue *q)
{
	bool was;

	pthread_mutex_lock(&q->lock);
	was = q->live;
	q->live = false;
	pthread_mutex_unlock(&q->lock);
	if (was) {
		uv_close((uv_handle_t *)&q->async, queue_on_async_close);
		q->ops->drained(q->ctx);
	}
}

/* What waited for the last run in flight may go now. */
static void queue_settle(struct run_queue *q)
{
	if (q->stopping && q->inflight == 0)
		queue_async_close(q);
}

void run_queue_stop(struct run_queue *q)
{
	q->stopping = true;
	queue_settle(q);
}

static void queue_push(struct run_queue *q, struct run *r)
{
	pthread_mutex_lock(&q->lock);
	r->next = NULL;
	if (q->tail != NULL)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	pthread_cond_broadcast(&q->landed);
	if (q->live)
		uv_async_send(&q->async);
	pthread_mutex_unlock(&q->lock);
}

static struct run *queue_take(struct run_queue *q)
{
	struct run *r;

	pthread_mutex_lock(&q->lock);
	r = q->head;
	q->head = NULL;
	q->tail = NULL;
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* ----------------------------------------------------------------- signal */

/*
 * The run's host function: its work has completed. Takes ON_DEVICE (or
 * BATCHED, for a batch whose signal beats its members' answer on the
 * loop) to LANDED unless a recovery claimed the run first, decides the
 * verdict, writes the slot, wakes its waiters and pushes the record to
 * the loop. No backend call, no allocation, and nothing of the record
 * after the push: the loop may reuse it at once.
 */
static void run_signal(void *arg)
{
	struct run *r = arg;
	uint8_t expect = RUN_ON_DEVICE;
	int st = r->er.err;

	if (!atomic_compare_exchange_strong(&r->state, &expect, RUN_LANDED)) {
		expect = RUN_BATCHED;
		if (!atomic_compare_exchange_strong(&r->state, &expect, RUN_LANDED))
			return;
	}
	if (st == 0 && r->er.checked && r->fault->flag != 0)
		st = CEP_EINVAL;
	r->status = st;
	fence_slot_signal(r->table->page, r->seq, st, r->er.seq_queued);
	queue_push(r->table->q, r);
}

/* ----------------------------------------------------------------- finish */

/* LANDED/EARLY/ADMITTED/WAITING/BATCHED/ON_DEVICE -> FINISHED: holds
 * dropped, record free, counts down. */
static void run_release(struct run *r, enum run_state was)
{
	struct run_table *t = r->table;
	uint32_t i;

	for (i = 0; i < r->n_holds; i++)
		region_hold_drop(t->regions, r->holds[i]);
	r->n_holds = 0;
	if (run_counts(r, was))
		t->on_device--;
	session_run_end(t->sessions, r->sess);
	r->sess = NULL;
	r->batched_in = NULL;
	run_state_set(r, RUN_FINISHED);
	r->next = t->free;
	t->free = r;
	t->inflight--;
	t->q->inflight--;
	stats_gauge_add(t->q->stats, STATS_GAUGE_RUNS_IN_FLIGHT, -1);
}

/* LANDED or EARLY -> FINISHED on the loop: the engine's verdict (or the
 * early one), counted, the batch told, the owner told. */
static void run_finish(struct run *r)
{
	struct run_table *t = r->table;
	struct run_queue *q = t->q;
	struct session *sess = r->sess;
	enum run_state was = run_state(r);
	char msg[CEP_MAX_STATUS_MSG];
	struct run_done d = {
		.req_id = r->req_id, .seq = r->seq, .session_id = sess->id, .msg = msg,
	};

	msg[0] = '\0';
	if (r->early_err != 0) {
		d.result = r->early_err;
		snprintf(msg, sizeof(msg), "%s", r->er.msg);
	} else {
		cep__clear_error();
		d.result = engine_run_complete(sess->engine, &r->er, r->fault);
		if (d.result != 0)
			snprintf(msg, sizeof(msg), "%s", cep_last_error());
	}
	stats_count(q->stats, d.result == 0 ? STATS_COUNTER_RUNS : STATS_COUNTER_RUN_ERRORS, 1);
	if (sess->engine)
		engine_session_stats(sess->engine, &sess->stats);
	if (d.result == 0)
		sess->runs++;
	else
		log_info("client %llu session %llu: run %llu failed: %s: %s",
			 (unsigned long long)sess->client_id, (unsigned long long)sess->id,
			 (unsigned long long)r->seq, cep_err_name(d.result), msg);
	if (r->batched_in != NULL)
		batch_run_landed(r->batched_in, r->batched_lane);
	run_release(r, was);
	q->ops->finished(q->ctx, t->owner, &d);
	if (t->inflight == 0)
		q->ops->idle(q->ctx, t->owner);
	queue_settle(q);
}

void run_queue_reap(struct run_queue *q, bool force)
{
	struct run *r, *next;

	for (r = queue_take(q); r != NULL; r = next) {
		next = r->next;
		if (!r->replied && !force) {
			/* run_replied() finishes it. */
			run_state_set(r, RUN_EARLY);
			continue;
		}
		r->replied = true;
		run_finish(r);
	}
}

/* Finishes the runs that landed early (their replies will never go).
 * Listed first: finishing a client's last run may release the client,
 * and its table with it. */
static void queue_early_finish(struct run_queue *q)
{
	struct run *list = NULL, *r, *next;
	struct run_table *t;
	uint32_t i;

	for (t = q->tables; t != NULL; t = t->next) {
		for (i = 0; t->runs != NULL && i < RUN_RECORDS; i++) {
			r = &t->runs[i];
			if (run_state(r) != RUN_EARLY)
				continue;
			r->next = list;
			list = r;
		}
	}
	for (r = list; r != NULL; r = next) {
		next = r->next;
		r->replied = true;
		run_finish(r);
	}
}

void run_queue_drain(struct run_queue *q)
{
	queue_early_finish(q);
	while (q->inflight > 0) {
		pthread_mutex_lock(&q->lock);
		while (q->head == NULL)
			pthread_cond_wait(&q->landed, &q->lock);
		pthread_mutex_unlock(&q->lock);
		run_queue_reap(q, true);
	}
}

/* ------------------------------------------------------------------ table */

void run_table_init(struct run_table *t, struct run_queue *q, void *owner,
		    struct fence_page *page, struct region_table *regions,
		    struct session_table *sessions)
{
	memset(t, 0, sizeof(*t));
	t->q = q;
	t->owner = owner;
	t->page = page;
	t->regions = regions;
	t->sessions = sessions;
	t->next = q->tables;
	if (q->tables != NULL)
		q->tables->prev = t;
	q->tables = t;
}

void run_table_close(struct run_table *t)
{
	size_t i;

	if (t->prev != NULL)
		t->prev->next = t->next;
	else if (t->q->tables == t)
		t->q->tables = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
	if (t->faults != NULL) {
		backend_host_unregister(t->q->backend, t->faults);
		free(t->faults);
	}
	t->faults = NULL;
	for (i = 0; t->runs != NULL && i < RUN_RECORDS; i++)
		free(t->runs[i].io);
	free(t->runs);
	t->runs = NULL;
	t->free = NULL;
}

/* The records, made at the client's first fenced run. Their fault
 * records are registered so that the device copies into them directly. */
static int table_alloc(struct run_table *t)
{
	size_t i;
	int ret;

	t->faults_bytes = (sizeof(*t->faults) * RUN_RECORDS + 4095) & ~(size_t)4095;
	t->runs = calloc(RUN_RECORDS, sizeof(*t->runs));
	t->faults = aligned_alloc(4096, t->faults_bytes);
	if (t->runs == NULL || t->faults == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the records of runs in flight");
		goto out;
	}
	memset(t->faults, 0, t->faults_bytes);
	ret = backend_host_register(t->q->backend, t->faults, t->faults_bytes);
	if (ret != 0)
		goto out;
	for (i = RUN_RECORDS; i-- > 0;) {
		t->runs[i].table = t;
		t->runs[i].fault = &t->faults[i];
		t->runs[i].next = t->free;
		t->free = &t->runs[i];
	}
	return 0;
out:
	free(t->runs);
	free(t->faults);
	t->runs = NULL;
	t->faults = NULL;
	return ret;
}

/* ------------------------------------------------------------ transitions */

int run_admit(struct run_table *t, struct session *sess, uint64_t seq, uint64_t req_id,
	      struct run **out)
{
	struct run *r;
	int ret;

	*out = NULL;
	ret = fence_seq_check(t->page, seq);
	if (ret != 0)
		return ret;
	if (t->runs == NULL) {
		ret = table_alloc(t);
		if (ret != 0)
			return ret;
	}
	if (t->free == NULL)
		run_queue_reap(t->q, false);
	if (t->free == NULL)
		return cep__set_error(CEP_EAGAIN, "%d runs of this connection are in flight; "
				      "wait for one to complete", RUN_RECORDS);
	r = t->free;
	t->free = r->next;
	r->next = NULL;
	r->sess = sess;
	r->seq = seq;
	r->req_id = req_id;
	r->status = 0;
	r->early_err = 0;
	r->replied = false;
	r->batched_in = NULL;
	r->n_holds = 0;
	memset(&r->er, 0, sizeof(r->er));
	r->fence = (struct engine_fence){
		.seq = fence_slot_arm(t->page, seq, req_id),
		.value = seq,
		.fault = r->fault,
		.done = run_signal,
		.arg = r,
	};
	run_state_set(r, RUN_ADMITTED);
	session_run_begin(sess);
	t->inflight++;
	t->q->inflight++;
	stats_gauge_add(t->q->stats, STATS_GAUGE_RUNS_IN_FLIGHT, 1);
	*out = r;
	return 0;
}

void run_hold(struct run *r, struct region *reg)
{
	uint32_t i;

	for (i = 0; i < r->n_holds; i++)
		if (r->holds[i] == reg)
			return;
	region_hold(reg);
	r->holds[r->n_holds++] = reg;
}

int run_io_get(struct run *r, struct run_io **out)
{
	if (r->io == NULL) {
		r->io = malloc(sizeof(*r->io));
		if (r->io == NULL)
			return cep__set_error(CEP_ENOMEM, "no memory to keep a waiting run's "
					      "inputs and outputs");
	}
	*out = r->io;
	return 0;
}

void run_wait(struct run *r, uint8_t cls)
{
	r->cls = cls;
	run_state_set(r, RUN_WAITING);
}

void run_batch(struct run *r)
{
	r->table->on_device++;
	run_state_set(r, RUN_BATCHED);
}

void run_submit(struct run *r)
{
	uint8_t expect = RUN_BATCHED;

	switch (run_state(r)) {
	case RUN_ADMITTED:
	case RUN_WAITING:
		r->table->on_device++;
		run_state_set(r, RUN_ON_DEVICE);
		break;
	case RUN_BATCHED:
		/* Its batch's signal may have landed it already. */
		(void)atomic_compare_exchange_strong(&r->state, &expect, RUN_ON_DEVICE);
		break;
	default:
		break;
	}
}

void run_batched_in(struct run *r, struct batch_group *g, uint8_t lane)
{
	r->batched_in = g;
	r->batched_lane = lane;
}

void run_fail(struct run *r, int code, const char *msg)
{
	enum run_state was = run_state(r);

	if (run_counts(r, was))
		r->table->on_device--;
	memset(&r->er, 0, sizeof(r->er));
	r->early_err = code;
	snprintf(r->er.msg, sizeof(r->er.msg), "%s", msg);
	r->status = code;
	run_state_set(r, RUN_LANDED);
	fence_slot_signal(r->table->page, r->seq, code, false);
	/* On the loop: finished by the next reap like any landing. */
	queue_push(r->table->q, r);
}

void run_abort(struct run *r)
{
	struct run_table *t = r->table;

	run_release(r, run_state(r));
	if (t->inflight == 0)
		t->q->ops->idle(t->q->ctx, t->owner);
	queue_settle(t->q);
}

void run_drop(struct run *r)
{
	struct run_queue *q = r->table->q;

	run_release(r, run_state(r));
	queue_settle(q);
}

void run_replied(struct run *r)
{
	r->replied = true;
	if (run_state(r) == RUN_EARLY)
		run_finish(r);
}

/* ---------------------------------------------------------------- recovery */

/* Decides r, whose host function will never run: the device wrote its
 * fence before the context was lost (its outputs are in place), or it
 * fails with why. Writes its slot and wakes its waiters as the signal
 * would. */
static void run_give_up(struct run *r, const char *why)
{
	struct fence_page *p = r->table->page;

	if (r->er.seq_queued && fence_slot_reached(p, r->seq)) {
		r->status = 0;
		fence_slot_signal(p, r->seq, 0, true);
		return;
	}
	r->er.err = CEP_ECONTEXT;
	r->er.checked = false;
	snprintf(r->er.msg, sizeof(r->er.msg), "%s", why);
	r->status = CEP_ECONTEXT;
	fence_slot_signal(p, r->seq, CEP_ECONTEXT, false);
}

/* Runs of every table on the device (their signal has not come). */
static uint32_t queue_unlanded(const struct run_queue *q)
{
	const struct run_table *t;
	uint32_t i, n = 0;

	for (t = q->tables; t != NULL; t = t->next)
		for (i = 0; t->runs != NULL && i < RUN_RECORDS; i++)
			n += run_state(&t->runs[i]) == RUN_ON_DEVICE ||
			     run_state(&t->runs[i]) == RUN_BATCHED;
	return n;
}

uint32_t run_queue_recover(struct run_queue *q, const char *why)
{
	struct run *landed = NULL, *r, *next;
	struct run_table *t;
	uint32_t i, failed = 0;
	uint8_t expect;

	for (t = q->tables; t != NULL; t = t->next) {
		for (i = 0; t->runs != NULL && i < RUN_RECORDS; i++) {
			r = &t->runs[i];
			expect = RUN_ON_DEVICE;
			if (!atomic_compare_exchange_strong(&r->state, &expect, RUN_LANDED))
				continue;
			run_give_up(r, why);
			failed += r->status != 0;
			queue_push(q, r);
		}
	}
	/* A signal that won its claim pushes at once: wait for the last, and
	 * keep every landing for the finish below. */
	for (;;) {
		for (r = queue_take(q); r != NULL; r = next) {
			next = r->next;
			r->next = landed;
			landed = r;
		}
		if (queue_unlanded(q) == 0)
			break;
		pthread_mutex_lock(&q->lock);
		while (q->head == NULL)
			pthread_cond_wait(&q->landed, &q->lock);
		pthread_mutex_unlock(&q->lock);
	}
	for (r = landed; r != NULL; r = next) {
		next = r->next;
		r->replied = true;
		run_finish(r);
	}
	queue_early_finish(q);
	return failed;
}
