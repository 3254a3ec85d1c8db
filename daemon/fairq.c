/*
 * fairq.c — the fair queue of runs waiting for their client's turn
 * (fairq.h).
 *
 * Per class, the lanes that hold runs form a ring; turn[class] is the lane
 * served next, and a lane that gets a run started passes the turn to the
 * one after it. A new lane joins just before the turn, so it is served
 * after every lane that waited before it. The records themselves
 * (struct fence_run) are the connection's, made once: queuing links them
 * and allocates nothing.
 */
#include "daemon/fairq.h"

#include "daemon/conn.h"
#include "client/cudaep.h"
#include "daemon/dispatch_priv.h"
#include "daemon/fence.h"
#include "daemon/server.h"

_Static_assert(CONFIG_RUNS_IN_FLIGHT_MAX == FENCE_RUNS,
	       "max_runs_in_flight is capped at the records of a connection");

uint32_t fairq_bound(const struct server *s)
{
	uint32_t n = s->cfg.max_runs_in_flight;

	return n == 0 || n > FENCE_RUNS ? FENCE_RUNS : n;
}

bool fairq_applies(const struct server *s, const struct conn *c)
{
	return c->fd >= 0 && (s->backend->caps & BACKEND_CAP_ASYNC);
}

bool fairq_must_wait(const struct server *s, const struct conn *c)
{
	return fairq_applies(s, c) &&
	       (c->fence.waiting > 0 || c->fence.submitted >= fairq_bound(s));
}

static enum fairq_class class_of(const struct session *sess)
{
	switch (sess->opts.priority) {
	case CEP_PRIORITY_HIGH:
		return FAIRQ_HIGH;
	case CEP_PRIORITY_LOW:
		return FAIRQ_LOW;
	default:
		return FAIRQ_NORMAL;
	}
}

/* ------------------------------------------------------------------ rings */

static void ring_join(struct fairq *q, enum fairq_class cls, struct fairq_lane *l)
{
	struct fairq_lane *t = q->turn[cls];

	if (t == NULL) {
		l->prev = l->next = l;
		q->turn[cls] = l;
	} else {
		l->next = t;
		l->prev = t->prev;
		t->prev->next = l;
		t->prev = l;
	}
	q->lanes[cls]++;
}

static void ring_leave(struct fairq *q, enum fairq_class cls, struct fairq_lane *l)
{
	if (l->next == l) {
		q->turn[cls] = NULL;
	} else {
		l->prev->next = l->next;
		l->next->prev = l->prev;
		if (q->turn[cls] == l)
			q->turn[cls] = l->next;
	}
	l->prev = l->next = NULL;
	q->lanes[cls]--;
}

/* Takes r out of its lane (prev: the run before it, or NULL for the
 * head), and the lane out of its ring once empty. */
static void lane_unlink(struct server *s, struct fairq_lane *l, struct fence_run *prev,
			struct fence_run *r)
{
	struct fence *f = &r->c->fence;

	if (prev == NULL)
		l->head = r->next;
	else
		prev->next = r->next;
	if (l->tail == r)
		l->tail = prev;
	r->next = NULL;
	if (l->head == NULL)
		ring_leave(&s->fairq, (enum fairq_class)r->cls, l);
	f->waiting--;
	s->fairq.waiting--;
	stats_gauge_add(&s->stats, STATS_GAUGE_RUNS_WAITING, -1);
}

void fairq_push(struct server *s, struct fence_run *r)
{
	enum fairq_class cls = class_of(r->sess);
	struct fairq_lane *l = &r->c->fence.lanes[cls];

	r->cls = (uint8_t)cls;
	r->next = NULL;
	l->c = r->c;
	if (l->head == NULL) {
		l->head = r;
		ring_join(&s->fairq, cls, l);
	} else {
		l->tail->next = r;
	}
	l->tail = r;
	r->c->fence.waiting++;
	s->fairq.waiting++;
	stats_count(&s->stats, STATS_COUNTER_RUNS_QUEUED, 1);
	stats_gauge_add(&s->stats, STATS_GAUGE_RUNS_WAITING, 1);
}

/* ------------------------------------------------------------------- turns */

/* Whether c may have a run started now: below its bound, and not running
 * a request's work (which may use the same session on another thread), in
 * the middle of one of its requests, or on its way out. */
static bool conn_can_start(const struct server *s, const struct conn *c)
{
	return c->fence.submitted < fairq_bound(s) && !c->busy && !c->dispatching &&
	       !c->free_deferred && !c->closing;
}

/* One pass over the ring of cls from its turn: each lane whose connection
 * can start a run starts one. Returns whether any did. */
static bool class_pass(struct server *s, enum fairq_class cls)
{
	struct fairq *q = &s->fairq;
	uint32_t i, n = q->lanes[cls];
	struct fairq_lane *l;
	struct fence_run *r;
	bool started = false;

	for (i = 0; i < n && q->turn[cls] != NULL; i++) {
		l = q->turn[cls];
		q->turn[cls] = l->next;
		if (!conn_can_start(s, l->c))
			continue;
		r = l->head;
		lane_unlink(s, l, NULL, r);
		dispatch__queued_start(s, r);
		started = true;
	}
	return started;
}

void fairq_pump(struct server *s)
{
	int cls;

	if (s->fairq.waiting == 0)
		return;
	/* A class is served until none of its lanes can start a run, so that
	 * a connection's high-priority runs go before its normal ones. */
	for (cls = 0; cls < FAIRQ_CLASSES; cls++)
		while (s->fairq.waiting > 0 && class_pass(s, (enum fairq_class)cls))
			;
}

/* ---------------------------------------------------------------- cancels */

void fairq_conn_cancel(struct server *s, struct conn *c)
{
	struct fairq_lane *l;
	struct fence_run *r;
	int cls;

	for (cls = 0; cls < FAIRQ_CLASSES && c->fence.waiting > 0; cls++) {
		l = &c->fence.lanes[cls];
		while ((r = l->head) != NULL) {
			lane_unlink(s, l, NULL, r);
			fence_run_drop(r);
		}
	}
}

uint32_t fairq_session_fail(struct server *s, struct conn *c, const struct session *sess,
			    int code, const char *msg)
{
	struct fence_run *r, *prev, *next;
	struct fairq_lane *l;
	uint32_t n = 0;
	int cls;

	for (cls = 0; cls < FAIRQ_CLASSES && c->fence.waiting > 0; cls++) {
		l = &c->fence.lanes[cls];
		prev = NULL;
		for (r = l->head; r != NULL; r = next) {
			next = r->next;
			if (sess != NULL && r->sess != sess) {
				prev = r;
				continue;
			}
			lane_unlink(s, l, prev, r);
			fence_run_fail(r, code, msg);
			n++;
		}
	}
	return n;
}
