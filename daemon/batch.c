/*
 * batch.c — cross-client batching (batch.h): groups of sessions of one
 * model, their windows, and the batches they flush to the engine.
 *
 * A member's life: the dispatcher admits its run and holds its regions
 * as for any fenced run (run.h), then hands it to batch_add() instead of
 * the engine; its client is not read (its work is CLIENT_BATCH) until
 * the member's done function has answered it. When the group flushes, a
 * lone member, or a batch the engine refuses, goes back to the dispatcher
 * to run alone; a batch the engine takes is answered member by member.
 */
#include "daemon/batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "alloc/account.h"
#include "common/container_of.h"
#include "proto/cep_limits.h"
#include "common/stats.h"
#include "gpu/backend.h"

/* group_try(): fewer than two runs are left to merge. */
#define BATCH_TOO_FEW 2

/* A group's engine sessions, each with its stream: while one lane's batch
 * is on the device the next batch goes on the other, so the device is not
 * idle while a landed batch's clients come back. */
#define BATCH_LANES 2

struct batch_lane {
	engine_session *es;                 /* owned: its batches run here */
	uint32_t on_device;                 /* runs of its batch not landed yet
	                                     * (batch_run_landed()) */
};

struct batch_group {
	struct batch_group *next;           /* in the batcher's list */
	struct batcher *b;
	const engine_model *m;              /* the key (es holds a reference) */
	cep_precision precision;
	cep_priority priority;
	unsigned refs;                      /* sessions using it, and a flush
	                                     * running */
	uint32_t sessions;                  /* the sessions using it */
	struct batch_lane lane[BATCH_LANES];
	unsigned cur;                       /* the lane of the batch being
	                                     * submitted */
	struct batch_member *head, *tail;   /* waiting, oldest first */
	uint32_t n_wait;
	int64_t rows_wait;
	struct batch_member **batch;        /* (b->max) being submitted */
	struct engine_batch_run *runs;      /* (b->max) their runs */
	size_t n_batch;
	struct batch_member **alone;        /* (b->max) of those, the ones the
	                                     * engine refused, to run alone */
	size_t n_alone;
	bool busy;                          /* the batch is on the thread pool */
	bool armed;                         /* the window's timer is set */
	bool disabled;                      /* its batches cannot be planned */
	int tfd;                            /* the window's timerfd */
	uv_poll_t poll;                     /* readable: the window expired */
	uv_work_t work;                     /* a cold batch, planned off the loop */
	int work_ret;
	char work_msg[CEP_MAX_STATUS_MSG];
};

void batcher_init(struct batcher *b, uv_loop_t *loop, struct backend *be,
		  struct account *account, struct stats *st, uint32_t window_us, uint32_t max)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->backend = be;
	b->account = account;
	b->stats = st;
	b->window_ns = (uint64_t)window_us * 1000;
	/* A configuration not made by config_init() (tests): the default. */
	b->max = max ? max : 32;
}

/* ------------------------------------------------------------------ timer */

/* Sets the window to expire in ns nanoseconds (0: disarms it). */
static void timer_set(struct batch_group *g, uint64_t ns)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t junk;

	its.it_value.tv_sec = (time_t)(ns / 1000000000u);
	its.it_value.tv_nsec = (long)(ns % 1000000000u);
	/* Cannot fail for a valid fd and values. */
	(void)timerfd_settime(g->tfd, 0, &its, NULL);
	g->armed = ns != 0;
	if (ns == 0) {
		/* An expiry not yet read would wake the loop for nothing. */
		while (read(g->tfd, &junk, sizeof(junk)) < 0 && errno == EINTR)
			;
	}
}

static void group_flush(struct batch_group *g);
static void group_drop(struct batch_group *g);

static void group_on_timer(uv_poll_t *h, int status, int events)
{
	struct batch_group *g = container_of(h, struct batch_group, poll);
	uint64_t n;

	while (read(g->tfd, &n, sizeof(n)) < 0 && errno == EINTR)
		;
	g->armed = false;
	g->refs++;
	group_flush(g);
	group_drop(g);
}

/* ----------------------------------------------------------------- groups */

static void group_on_close(uv_handle_t *h)
{
	struct batch_group *g = container_of(h, struct batch_group, poll);

	close(g->tfd);
	free(g->batch);
	free(g->runs);
	free(g->alone);
	free(g);
}

static void group_lanes_free(struct batch_group *g)
{
	unsigned i;

	for (i = 0; i < BATCH_LANES; i++) {
		engine_session_free(g->lane[i].es);
		g->lane[i].es = NULL;
	}
}

/* Frees g: its engine sessions now (nothing of them is in flight), the
 * rest once its handle has closed. */
static void group_free(struct batch_group *g)
{
	struct batch_group **p;

	for (p = &g->b->groups; *p; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	stats_gauge_add(g->b->stats, STATS_GAUGE_BATCH_GROUPS, -1);
	group_lanes_free(g);
	if (g->armed)
		timer_set(g, 0);
	uv_close((uv_handle_t *)&g->poll, group_on_close);
}

/* Drops a reference that is not a session's. */
static void group_drop(struct batch_group *g)
{
	if (--g->refs == 0)
		group_free(g);
}

void batch_group_unref(struct batch_group *g)
{
	if (!g)
		return;
	g->sessions--;
	group_drop(g);
}

static int group_new(struct batcher *b, engine_session *es, cep_priority priority,
		     struct batch_group **out)
{
	struct engine_session_options o = {
		.precision = engine_session_precision(es),
		.priority = priority,
		.account = b->account,
		/* Runs of many clients share it: only the global limit counts. */
		.owner = ALLOC_OWNER_SHARED,
		.max_batch = (int)b->max,
	};
	struct batch_group *g;
	unsigned i;
	int ret;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return cep__set_error(CEP_ENOMEM, "out of memory for a batch group");
	g->tfd = -1;
	g->batch = calloc(b->max, sizeof(*g->batch));
	g->runs = calloc(b->max, sizeof(*g->runs));
	g->alone = calloc(b->max, sizeof(*g->alone));
	if (!g->batch || !g->runs || !g->alone) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory for a batch group of %u runs",
				     b->max);
		goto fail;
	}
	g->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (g->tfd < 0) {
		ret = cep__set_error(cep__from_errno(errno), "timerfd_create: %s",
				     strerror(errno));
		goto fail;
	}
	for (i = 0; i < BATCH_LANES; i++) {
		ret = engine_session_new(engine_session_model(es), b->backend, &o,
					 &g->lane[i].es);
		if (ret < 0)
			goto fail;
	}
	ret = uv_poll_init(b->loop, &g->poll, g->tfd);
	if (ret != 0) {
		ret = cep__set_error(CEP_EINTERNAL, "watching a batch window: %s",
				     uv_strerror(ret));
		goto fail;
	}
	ret = uv_poll_start(&g->poll, UV_READABLE, group_on_timer);
	if (ret != 0) {
		ret = cep__set_error(CEP_EINTERNAL, "watching a batch window: %s",
				     uv_strerror(ret));
		/* An initialized handle must be closed; the callback frees. */
		group_lanes_free(g);
		uv_close((uv_handle_t *)&g->poll, group_on_close);
		return ret;
	}
	g->b = b;
	g->m = engine_session_model(es);
	g->precision = o.precision;
	g->priority = priority;
	g->next = b->groups;
	b->groups = g;
	stats_gauge_add(b->stats, STATS_GAUGE_BATCH_GROUPS, 1);
	*out = g;
	return 0;
fail:
	group_lanes_free(g);
	if (g->tfd >= 0)
		close(g->tfd);
	free(g->batch);
	free(g->runs);
	free(g->alone);
	free(g);
	return ret;
}

int batch_group_get(struct batcher *b, engine_session *es, cep_priority priority,
		    struct batch_group **out)
{
	const engine_model *m = engine_session_model(es);
	cep_precision precision = engine_session_precision(es);
	struct batch_group *g;
	int ret;

	*out = NULL;
	ret = engine_model_batchable(m);
	if (ret < 0)
		return ret;
	for (g = b->groups; g; g = g->next) {
		if (g->m == m && g->precision == precision && g->priority == priority)
			break;
	}
	if (!g) {
		ret = group_new(b, es, priority, &g);
		if (ret < 0)
			return ret;
	}
	g->refs++;
	g->sessions++;
	*out = g;
	return 0;
}

/* ---------------------------------------------------------------- batches */

static void member_finish(struct batch_member *m, enum batch_outcome how)
{
	m->group = NULL;
	m->next = NULL;
	m->done(m, how);
}

/* Counts a batch of n runs the engine took. */
static void batch_count(struct stats *st, size_t n)
{
	static const struct { size_t max; enum stats_counter c; } sizes[] = {
		{ 2, STATS_COUNTER_BATCH_SIZE_2 },
		{ 4, STATS_COUNTER_BATCH_SIZE_3_4 },
		{ 8, STATS_COUNTER_BATCH_SIZE_5_8 },
		{ 16, STATS_COUNTER_BATCH_SIZE_9_16 },
		{ 32, STATS_COUNTER_BATCH_SIZE_17_32 },
	};
	size_t i;

	stats_count(st, STATS_COUNTER_BATCHES, 1);
	stats_count(st, STATS_COUNTER_BATCH_RUNS, n);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (n <= sizes[i].max) {
			stats_count(st, sizes[i].c, 1);
			return;
		}
	}
	stats_count(st, STATS_COUNTER_BATCH_SIZE_33_UP, 1);
}

/* Sends the runs the engine refused on their own account to run alone. */
static void group_alone_finish(struct batch_group *g)
{
	size_t k, n = g->n_alone;

	g->n_alone = 0;
	stats_count(g->b->stats, STATS_COUNTER_BATCH_ALONE, n);
	for (k = 0; k < n; k++)
		member_finish(g->alone[k], BATCH_ALONE);
}

/* Answers the members of the batch g submitted (ret 0) or could not
 * (they run alone, each getting what it would have got anyway; so do the
 * ones the engine refused on their own). */
static void group_done(struct batch_group *g, int ret, const char *msg)
{
	struct stats *st = g->b->stats;
	size_t k, n = g->n_batch;

	g->n_batch = 0;
	group_alone_finish(g);
	if (ret == BATCH_TOO_FEW) {
		stats_count(st, STATS_COUNTER_BATCH_ALONE, n);
	} else if (ret == 0) {
		batch_count(st, n);
		g->lane[g->cur].on_device += (uint32_t)n;
	} else {
		stats_count(st, STATS_COUNTER_BATCH_REFUSED, 1);
		stats_count(st, STATS_COUNTER_BATCH_ALONE, n);
		log_debug("a batch of %zu runs was refused, they run alone: %s: %s", n,
			  cep_err_name(ret), msg);
		/* A plan the model cannot have now will not come later. */
		if (ret == CEP_EUNSUPPORTED && !g->disabled) {
			g->disabled = true;
			log_notice("runs of a model of batching sessions go alone from now "
				   "on: its batches cannot be planned: %s", msg);
		}
	}
	for (k = 0; k < n; k++) {
		g->batch[k]->lane = (uint8_t)g->cur;
		member_finish(g->batch[k], ret == 0 ? BATCH_SUBMITTED : BATCH_ALONE);
	}
}

/*
 * Submits the batch of g (with flags), setting aside each run the engine
 * refuses on its own account (a shape of its own, too little output
 * room) and trying the others again. Returns as engine_run_submit_batch()
 * for what is left, or BATCH_TOO_FEW when fewer than two runs are left.
 * On the loop or, while g is busy, on the thread pool: it touches nothing
 * but g's batch.
 */
static int group_try(struct batch_group *g, unsigned flags)
{
	size_t k, bad;
	int ret;

	for (;;) {
		if (g->n_batch < 2)
			return BATCH_TOO_FEW;
		for (k = 0; k < g->n_batch; k++)
			g->runs[k] = g->batch[k]->run;
		ret = engine_run_submit_batch(g->lane[g->cur].es, g->runs, g->n_batch, flags,
					      &bad);
		if (ret >= 0 || bad >= g->n_batch)
			return ret;
		g->alone[g->n_alone++] = g->batch[bad];
		memmove(&g->batch[bad], &g->batch[bad + 1],
			(g->n_batch - bad - 1) * sizeof(*g->batch));
		g->n_batch--;
	}
}

/* A lane of g with no batch on the device, the one after the last used
 * first (so both are planned and warm before the load needs both), or
 * -1. */
static int lane_free(const struct batch_group *g)
{
	unsigned i, k;

	for (i = 1; i <= BATCH_LANES; i++) {
		k = (g->cur + i) % BATCH_LANES;
		if (g->lane[k].on_device == 0)
			return (int)k;
	}
	return -1;
}

/*
 * Decides when what waits in g goes: not while every lane has a batch on
 * the device or a batch is being planned (a landing, or the planning's
 * end, decides again), at once when every session of g has a run waiting
 * or g is full, else when the window ends. Waiting for a lane lets the
 * runs of a landed batch's clients, which come back as it lands, join the
 * next one: batches grow to what the clients offer instead of settling
 * into many small ones queued behind each other. Never flushes here and
 * now (its callers are still answering a request or finishing a run): the
 * timer's next turn does.
 */
static void group_kick(struct batch_group *g)
{
	uint32_t max = g->b->max;
	uint32_t full = g->sessions < max ? g->sessions : max;

	if (g->busy || !g->head || lane_free(g) < 0)
		return;
	if (g->n_wait >= full || g->rows_wait >= (int64_t)max)
		timer_set(g, 1);
	else if (!g->armed)
		timer_set(g, g->b->window_ns ? g->b->window_ns : 1);
}

static void group_work(uv_work_t *w)
{
	struct batch_group *g = container_of(w, struct batch_group, work);

	cep__clear_error();
	g->work_ret = group_try(g, 0);
	/* The message lives in this worker thread's storage. */
	if (g->work_ret != 0)
		snprintf(g->work_msg, sizeof(g->work_msg), "%s", cep_last_error());
}

static void group_after(uv_work_t *w, int status)
{
	struct batch_group *g = container_of(w, struct batch_group, work);

	stats_gauge_add(g->b->stats, STATS_GAUGE_JOBS, -1);
	g->busy = false;
	if (status != 0 && g->work_ret == 0) {
		g->work_ret = CEP_ECANCELED;
		snprintf(g->work_msg, sizeof(g->work_msg), "the batch was canceled");
	}
	g->refs++;
	group_done(g, g->work_ret, g->work_msg);
	group_kick(g);
	group_drop(g);
}

/* Submits the batch of g->n_batch members: on the loop when its plan is
 * warm and the backend queues work, else on the thread pool. */
static void group_submit(struct batch_group *g)
{
	struct batcher *b = g->b;
	int ret;

	if (b->backend->caps & BACKEND_CAP_ASYNC) {
		cep__clear_error();
		ret = group_try(g, ENGINE_SUBMIT_WARM);
		if (ret != ENGINE_RUN_COLD) {
			group_done(g, ret, cep_last_error());
			return;
		}
	}
	g->work_ret = 0;
	g->work_msg[0] = '\0';
	/* What the engine refused so far goes now, not after the planning. */
	group_alone_finish(g);
	ret = uv_queue_work(b->loop, &g->work, group_work, group_after);
	if (ret == 0) {
		g->busy = true;
		stats_gauge_add(b->stats, STATS_GAUGE_JOBS, 1);
		return;
	}
	log_warning("uv_queue_work: %s; a batch runs alone", uv_strerror(ret));
	group_done(g, CEP_EINTERNAL, "the thread pool refused the batch");
}

/* Sends what waits in g while a lane is free: batches of at most max
 * runs and max rows (a run of more rows goes alone in its own), a lone
 * run alone. */
static void group_flush(struct batch_group *g)
{
	struct stats *st = g->b->stats;
	uint32_t max = g->b->max;
	int lane;

	if (g->armed)
		timer_set(g, 0);
	while (g->head && !g->busy && (lane = lane_free(g)) >= 0) {
		struct batch_member *m;
		int64_t rows = 0;
		size_t n = 0;

		while (g->head && n < max && (n == 0 || rows + g->head->rows <= (int64_t)max)) {
			m = g->head;
			g->head = m->next;
			rows += m->rows;
			g->batch[n++] = m;
		}
		if (!g->head)
			g->tail = NULL;
		g->n_wait -= (uint32_t)n;
		g->rows_wait -= rows;
		stats_gauge_add(st, STATS_GAUGE_BATCH_WAITING, -(int64_t)n);
		if (n == 1) {
			stats_count(st, STATS_COUNTER_BATCH_ALONE, 1);
			member_finish(g->batch[0], BATCH_ALONE);
			continue;
		}
		g->cur = (unsigned)lane;
		g->n_batch = n;
		group_submit(g);
	}
}

bool batch_add(struct batch_group *g, struct batch_member *m)
{
	if (g->disabled)
		return false;
	m->group = g;
	m->next = NULL;
	if (g->tail)
		g->tail->next = m;
	else
		g->head = m;
	g->tail = m;
	g->n_wait++;
	g->rows_wait += m->rows;
	stats_gauge_add(g->b->stats, STATS_GAUGE_BATCH_WAITING, 1);
	group_kick(g);
	return true;
}

void batch_run_landed(struct batch_group *g, unsigned lane)
{
	if (--g->lane[lane].on_device == 0)
		group_kick(g);
}

bool batch_member_cancel(struct batch_member *m)
{
	struct batch_group *g = m->group;
	struct batch_member **p, *prev = NULL;

	if (!g)
		return false;
	for (p = &g->head; *p; prev = *p, p = &(*p)->next) {
		if (*p != m)
			continue;
		*p = m->next;
		if (g->tail == m)
			g->tail = prev;
		g->n_wait--;
		g->rows_wait -= m->rows;
		stats_gauge_add(g->b->stats, STATS_GAUGE_BATCH_WAITING, -1);
		m->group = NULL;
		m->next = NULL;
		if (!g->head && g->armed)
			timer_set(g, 0);
		return true;
	}
	/* In the batch being submitted: its done comes. */
	return false;
}
