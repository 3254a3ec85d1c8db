/*
 * fairq.c — the fair queue of runs waiting for their client's turn
 * (fairq.h).
 *
 * Per class, the lanes that hold runs form a ring; turn[class] is the lane
 * served next, and a lane that gets a run started passes the turn to the
 * one after it. A new lane joins just before the turn, so it is served
 * after every lane that waited before it. The records themselves
 * (struct run) are their client's, made once: queuing links them and
 * allocates nothing.
 */
#include "daemon/fairq.h"

#include "client/cudaep.h"
#include "common/stats.h"
#include "daemon/config.h"
#include "daemon/session.h"

#include <string.h>

_Static_assert(CONFIG_RUNS_IN_FLIGHT_MAX == RUN_RECORDS,
	       "max_runs_in_flight is capped at the records of a connection");

void fairq_init(struct fairq *q, uint32_t bound, struct stats *st,
		const struct fairq_ops *ops, void *ctx)
{
	memset(q, 0, sizeof(*q));
	q->bound = bound;
	q->stats = st;
	q->ops = ops;
	q->ctx = ctx;
}

uint32_t fairq_bound_of(uint32_t n)
{
	return n == 0 || n > RUN_RECORDS ? RUN_RECORDS : n;
}

void fairq_lanes_init(struct fairq_lanes *l, void *owner)
{
	int cls;

	memset(l, 0, sizeof(*l));
	l->owner = owner;
	for (cls = 0; cls < FAIRQ_CLASSES; cls++)
		l->lane[cls].of = l;
}

bool fairq_below_bound(const struct fairq *q, const struct run_table *t)
{
	return t->on_device < q->bound;
}

bool fairq_must_wait(const struct fairq *q, const struct fairq_lanes *l,
		     const struct run_table *t)
{
	return l->waiting > 0 || !fairq_below_bound(q, t);
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
static void lane_unlink(struct fairq *q, struct fairq_lane *l, struct run *prev,
			struct run *r)
{
	if (prev == NULL)
		l->head = r->next;
	else
		prev->next = r->next;
	if (l->tail == r)
		l->tail = prev;
	r->next = NULL;
	if (l->head == NULL)
		ring_leave(q, (enum fairq_class)r->cls, l);
	l->of->waiting--;
	q->waiting--;
	stats_gauge_add(q->stats, STATS_GAUGE_RUNS_WAITING, -1);
}

void fairq_push(struct fairq *q, struct fairq_lanes *ls, struct run *r)
{
	enum fairq_class cls = class_of(r->sess);
	struct fairq_lane *l = &ls->lane[cls];

	run_wait(r, (uint8_t)cls);
	r->next = NULL;
	if (l->head == NULL) {
		l->head = r;
		ring_join(q, cls, l);
	} else {
		l->tail->next = r;
	}
	l->tail = r;
	ls->waiting++;
	q->waiting++;
	stats_count(q->stats, STATS_COUNTER_RUNS_QUEUED, 1);
	stats_gauge_add(q->stats, STATS_GAUGE_RUNS_WAITING, 1);
}

/* ------------------------------------------------------------------- turns */

/* One pass over the ring of cls from its turn: each lane whose client can
 * start a run starts one. Returns whether any did. */
static bool class_pass(struct fairq *q, enum fairq_class cls)
{
	uint32_t i, n = q->lanes[cls];
	struct fairq_lane *l;
	struct run *r;
	bool started = false;

	for (i = 0; i < n && q->turn[cls] != NULL; i++) {
		l = q->turn[cls];
		q->turn[cls] = l->next;
		if (!q->ops->can_start(q->ctx, l->of->owner))
			continue;
		r = l->head;
		lane_unlink(q, l, NULL, r);
		q->ops->start(q->ctx, l->of->owner, r);
		started = true;
	}
	return started;
}

void fairq_pump(struct fairq *q)
{
	int cls;

	if (q->waiting == 0)
		return;
	/* A class is served until none of its lanes can start a run, so that
	 * a client's high-priority runs go before its normal ones. */
	for (cls = 0; cls < FAIRQ_CLASSES; cls++)
		while (q->waiting > 0 && class_pass(q, (enum fairq_class)cls))
			;
}

/* ---------------------------------------------------------------- cancels */

void fairq_cancel(struct fairq *q, struct fairq_lanes *ls)
{
	struct fairq_lane *l;
	struct run *r;
	int cls;

	for (cls = 0; cls < FAIRQ_CLASSES && ls->waiting > 0; cls++) {
		l = &ls->lane[cls];
		while ((r = l->head) != NULL) {
			lane_unlink(q, l, NULL, r);
			run_drop(r);
		}
	}
}

uint32_t fairq_fail(struct fairq *q, struct fairq_lanes *ls, const struct session *sess,
		    int code, const char *msg)
{
	struct run *r, *prev, *next;
	struct fairq_lane *l;
	uint32_t n = 0;
	int cls;

	for (cls = 0; cls < FAIRQ_CLASSES && ls->waiting > 0; cls++) {
		l = &ls->lane[cls];
		prev = NULL;
		for (r = l->head; r != NULL; r = next) {
			next = r->next;
			if (sess != NULL && r->sess != sess) {
				prev = r;
				continue;
			}
			lane_unlink(q, l, prev, r);
			run_fail(r, code, msg);
			n++;
		}
	}
	return n;
}

uint32_t fairq_fail_all(struct fairq *q, int code, const char *msg)
{
	uint32_t n = 0;
	int cls;

	for (cls = 0; cls < FAIRQ_CLASSES; cls++)
		while (q->turn[cls] != NULL)
			n += fairq_fail(q, q->turn[cls]->of, NULL, code, msg);
	return n;
}
