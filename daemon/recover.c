/*
 * recover.c — replacing a lost device context while clients carry on
 * (recover.h): noticing the loss, waiting for the thread pool's jobs,
 * settling the runs in flight, and moving every session, region and
 * fence page from the dead backend to a new one.
 */
#include "recover.h"

#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "batch.h"
#include "conn.h"
#include "fairq.h"
#include "cudaep.h"
#include "error.h"
#include "fence.h"
#include "log.h"
#include "region.h"
#include "server.h"
#include "session.h"

/* ----------------------------------------------------------------- timers */

static void recover_run(struct server *s);

static void recover_on_timer(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, recover_timer);
	const struct conn *c;

	if (!s->recovering)
		return;
	/* A job on the thread pool may be using the backend; its end notes
	 * again (dispatch_session.c). */
	for (c = s->conns; c != NULL; c = c->next)
		if (c->busy)
			return;
	recover_run(s);
}

/* Runs whose host functions will never run would wait for ever: while
 * some are in flight, ask the backend now and then. A loss that a call
 * outside any run met (pinning a region, say) is taken up here too. */
static void recover_on_health(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, health_timer);

	if (s->recovering)
		return;
	if (backend_lost(s->backend) ||
	    (s->fences.inflight > 0 && backend_health(s->backend) == CEP_ECONTEXT))
		recover_note(s);
}

static void recover_on_close(uv_handle_t *h)
{
}

int recover_start(struct server *s)
{
	int ret;

	uv_timer_init(s->loop, &s->recover_timer);
	uv_timer_init(s->loop, &s->health_timer);
	s->recover_live = true;
	/* Neither keeps a loop alive: the fence queue's handle does while
	 * runs are in flight, and closes these with it. */
	uv_unref((uv_handle_t *)&s->recover_timer);
	uv_unref((uv_handle_t *)&s->health_timer);
	ret = uv_timer_start(&s->health_timer, recover_on_health, RECOVER_HEALTH_MS,
			     RECOVER_HEALTH_MS);
	return ret;
}

void recover_stop(struct server *s)
{
	if (!s->recover_live)
		return;
	s->recover_live = false;
	uv_close((uv_handle_t *)&s->recover_timer, recover_on_close);
	uv_close((uv_handle_t *)&s->health_timer, recover_on_close);
}

void recover_note(struct server *s)
{
	if (!s->recover_live)
		return;
	if (!s->recovering) {
		if (!backend_lost(s->backend))
			return;
		s->recovering = true;
		log_warning("the %s backend's device context was lost: %s; failing the runs "
			    "in flight and restoring every session on a new context",
			    s->backend->iface.name, backend_lost_why(s->backend));
	}
	uv_timer_start(&s->recover_timer, recover_on_timer, 0, 0);
}

int recover_refuse(struct server *s, const char *what)
{
	if (s->recovering)
		return cep__set_error(CEP_EAGAIN, "%s: cudaepd is restoring its sessions on a "
				      "new device context after the old one was lost; try "
				      "again in a moment", what);
	if (!backend_lost(s->backend))
		return 0;
	recover_note(s);
	return cep__set_error(CEP_ECONTEXT, "%s", backend_lost_why(s->backend));
}

/* ------------------------------------------------------------- the work */

/* What a recovery did, for its log line. */
struct recover_tally {
	uint32_t runs_failed;
	uint32_t sessions;          /* restored */
	uint32_t sessions_lost;     /* that could not be */
	uint32_t regions_unpinned;  /* that could not be pinned again */
	uint32_t pages_unpinned;    /* fence pages likewise */
};

/* Frees the engine session of every session, keeping a reference to its
 * model for recover_sessions_open(). Sessions unloaded while their runs
 * were in flight are not in a table: their runs still name them. */
static void recover_sessions_close(struct server *s)
{
	struct session *sess;
	struct conn *c;
	uint32_t i;

	for (c = s->conns; c != NULL; c = c->next) {
		for (i = 0; i < c->sessions.ids.count; i++) {
			sess = c->sessions.ids.items[i];
			if (sess->engine == NULL)
				continue;
			sess->restore_model = engine_session_model(sess->engine);
			engine_model_ref(sess->restore_model);
			engine_session_free(sess->engine);
			sess->engine = NULL;
		}
		for (i = 0; c->fence.runs != NULL && i < FENCE_RUNS; i++) {
			sess = c->fence.runs[i].sess;
			/* An unloaded session is not restored: its runs still
			 * waiting for their turn can never start. */
			if (c->fence.runs[i].open && !c->fence.runs[i].submitted && sess->unloaded)
				fairq_session_fail(s, c, sess, CEP_ECONTEXT, "the device context "
						   "was lost before this run of an unloaded session "
						   "started");
			if (c->fence.runs[i].open && sess->unloaded && sess->engine != NULL) {
				engine_session_free(sess->engine);
				sess->engine = NULL;
			}
		}
	}
}

/* Opens every session again on s->backend, with its model and options. */
static void recover_sessions_open(struct server *s, struct recover_tally *t)
{
	struct session *sess;
	struct conn *c;
	uint32_t i;
	int ret;

	for (c = s->conns; c != NULL; c = c->next) {
		for (i = 0; i < c->sessions.ids.count; i++) {
			sess = c->sessions.ids.items[i];
			if (sess->restore_model == NULL)
				continue;
			cep__clear_error();
			ret = engine_session_new(sess->restore_model, s->backend, &sess->opts,
						 &sess->engine);
			engine_model_unref(sess->restore_model);
			sess->restore_model = NULL;
			if (ret == 0) {
				engine_session_stats(sess->engine, &sess->stats);
				t->sessions++;
				continue;
			}
			sess->engine = NULL;
			sess->restore_err = ret;
			t->sessions_lost++;
			log_warning("client %llu session %llu '%s' could not be restored on "
				    "the new context: %s: %s", (unsigned long long)c->id,
				    (unsigned long long)sess->id, sess->name,
				    cep_err_name(ret), cep_last_error());
		}
	}
}

/* Replaces s->backend, whose context is lost, by a new one of the same
 * configuration, or the host backend when that cannot be opened. */
static void recover_backend_replace(struct server *s)
{
	struct backend *nb = NULL;
	int ret;

	backend_free(s->backend);
	s->backend = NULL;
	ret = server_backend_open(&s->cfg, NULL, &nb);
	if (ret != 0) {
		log_err("the configured backend could not be opened again after its "
			"context was lost (%s); serving on the host backend until cudaepd "
			"restarts", cep_last_error());
		ret = backend_host_new(0, &nb);
	}
	if (ret != 0) {
		/* Out of host memory with every session and client depending on a
		 * backend: nothing sensible is left to do. */
		log_printf(LOG_CRIT, "cannot open any backend after the context was lost: %s",
			   cep_strerror(ret));
		abort();
	}
	s->backend = nb;
	s->regions.backend = nb;
	account_limit_set_global(s->account, s->cfg.memory_limit != 0 ?
				 s->cfg.memory_limit : nb->device_memory);
}

static void recover_run(struct server *s)
{
	struct recover_tally t = { 0 };
	uint64_t t0 = uv_hrtime(), ns;
	int64_t now = (int64_t)time(NULL);
	struct conn *c;

	/* Nothing completes on the lost context any more; settling also
	 * frees every plan that was in flight. */
	t.runs_failed = fence_recover_settle(s, backend_lost_why(s->backend));
	/* Joins the sessions' streams: after this nothing writes into a
	 * client's region, and the runs may drop their holds. */
	recover_sessions_close(s);
	batcher_sessions_close(&s->batches);
	fence_recover_finish(s);
	for (c = s->conns; c != NULL; c = c->next) {
		fence_page_unpin(s, c);
		region_table_unpin(&c->regions);
	}
	recover_backend_replace(s);
	for (c = s->conns; c != NULL; c = c->next) {
		if (fence_page_pin(s, c) != 0) {
			t.pages_unpinned++;
			log_warning("client %llu: its fence page could not be pinned again: %s",
				    (unsigned long long)c->id, cep_last_error());
		}
		t.regions_unpinned += region_table_repin(&c->regions);
	}
	recover_sessions_open(s, &t);
	batcher_sessions_open(&s->batches);
	ns = uv_hrtime() - t0;
	stats_count(&s->stats, STATS_COUNTER_RECOVERIES, 1);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_RUNS_FAILED, t.runs_failed);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_NS, ns);
	stats_gauge_add(&s->stats, STATS_GAUGE_LAST_RECOVERY,
			now - s->stats.gauges[STATS_GAUGE_LAST_RECOVERY].current);
	s->recovering = false;
	log_warning("recovered from the lost context in %.1f ms on the %s backend (%s): "
		    "%u runs in flight failed, %u sessions restored, %u could not be; "
		    "%u regions and %u fence pages could not be pinned again",
		    (double)ns / 1e6, s->backend->iface.name, s->backend->iface.device,
		    t.runs_failed, t.sessions, t.sessions_lost, t.regions_unpinned,
		    t.pages_unpinned);
}
