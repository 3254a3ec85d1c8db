/*
 * recover.c — replacing a lost device context while clients carry on
 * (recover.h): noticing the loss, waiting for the thread pool's jobs,
 * settling the runs in flight, and handing everything to a new image of
 * the daemon (handover.h).
 */
#include "daemon/recover.h"

#include <stdio.h>

#include "daemon/conn.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/fairq.h"
#include "daemon/fence.h"
#include "daemon/handover.h"
#include "common/log.h"
#include "daemon/server.h"

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
		s->recover_t0 = uv_hrtime();
		log_warning("the %s backend's device context was lost: %s; failing the runs "
			    "in flight and re-executing cudaepd to restore every session on a "
			    "new context", s->backend->iface.name, backend_lost_why(s->backend));
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

static void recover_run(struct server *s)
{
	char why[CEP_MAX_STATUS_MSG], waiting[CEP_MAX_STATUS_MSG];
	uint32_t failed;
	struct conn *c;

	snprintf(why, sizeof(why), "%s", backend_lost_why(s->backend));
	/* Nothing completes on the lost context any more; settling also
	 * frees every plan that was in flight. */
	failed = fence_recover_settle(s, why);
	/* Runs waiting for their turn are not handed over (recover.h). */
	snprintf(waiting, sizeof(waiting), "%.*s; this run was waiting for its turn",
		 (int)sizeof(waiting) - 40, why);
	for (c = s->conns; c != NULL; c = c->next)
		failed += fairq_session_fail(s, c, NULL, CEP_ECONTEXT, waiting);
	fence_recover_finish(s);
	fence_reap(s, true);
	cep__clear_error();
	(void)handover_exec(s, s->recover_t0, failed, why);
	/* Still here: the lost backend can serve nothing, and no other
	 * image could be started. */
	log_printf(LOG_CRIT, "cudaepd cannot re-execute itself to recover from the lost "
		   "context: %s; stopping, so that the service manager restarts it",
		   cep_last_error());
	s->exit_status = 1;
	server_stop(s);
}
