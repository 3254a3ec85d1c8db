/*
 * recover.c — replacing a lost device context while clients carry on
 * (recover.h): noticing the loss, waiting for the clients' work on the
 * thread pool, settling the runs in flight and the waiting ones, then
 * asking the server to hand everything to a new image of the daemon.
 */
#include "daemon/recover.h"

#include <stdio.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/fairq.h"
#include "daemon/run.h"
#include "gpu/backend.h"

void recover_init(struct recover *rc, struct backend *be, struct run_queue *runs,
		  struct fairq *fairq, const struct recover_ops *ops, void *ctx)
{
	memset(rc, 0, sizeof(*rc));
	rc->backend = be;
	rc->runs = runs;
	rc->fairq = fairq;
	rc->ops = ops;
	rc->ctx = ctx;
}

/* ----------------------------------------------------------------- timers */

static void recover_run(struct recover *rc);

static void recover_on_timer(uv_timer_t *t)
{
	struct recover *rc = container_of(t, struct recover, timer);

	if (!rc->recovering)
		return;
	/* Work on the thread pool may be using the backend; its end notes
	 * again. */
	if (!rc->ops->idle(rc->ctx))
		return;
	recover_run(rc);
}

/* Runs whose host functions will never run would wait for ever: while
 * some are in flight, ask the backend now and then. A loss that a call
 * outside any run met (pinning a region, say) is taken up here too. */
static void recover_on_health(uv_timer_t *t)
{
	struct recover *rc = container_of(t, struct recover, health);

	if (rc->recovering)
		return;
	if (backend_lost(rc->backend) ||
	    (rc->runs->inflight > 0 && backend_health(rc->backend) == CEP_ECONTEXT))
		recover_note(rc);
}

static void recover_on_close(uv_handle_t *h)
{
}

int recover_start(struct recover *rc, uv_loop_t *loop)
{
	rc->loop = loop;
	uv_timer_init(loop, &rc->timer);
	uv_timer_init(loop, &rc->health);
	rc->live = true;
	/* Neither keeps a loop alive: the landing queue's handle does while
	 * runs are in flight, and closes these with it. */
	uv_unref((uv_handle_t *)&rc->timer);
	uv_unref((uv_handle_t *)&rc->health);
	return uv_timer_start(&rc->health, recover_on_health, RECOVER_HEALTH_MS,
			      RECOVER_HEALTH_MS);
}

void recover_stop(struct recover *rc)
{
	if (!rc->live)
		return;
	rc->live = false;
	uv_close((uv_handle_t *)&rc->timer, recover_on_close);
	uv_close((uv_handle_t *)&rc->health, recover_on_close);
}

void recover_note(struct recover *rc)
{
	if (!rc->live)
		return;
	if (!rc->recovering) {
		if (!backend_lost(rc->backend))
			return;
		rc->recovering = true;
		rc->t0 = uv_hrtime();
		log_warning("the %s backend's device context was lost: %s; failing the runs "
			    "in flight and re-executing cudaepd to restore every session on a "
			    "new context", rc->backend->iface.name, backend_lost_why(rc->backend));
	}
	uv_timer_start(&rc->timer, recover_on_timer, 0, 0);
}

int recover_refuse(struct recover *rc, const char *what)
{
	if (rc->recovering)
		return cep__set_error(CEP_EAGAIN, "%s: cudaepd is restoring its sessions on a "
				      "new device context after the old one was lost; try "
				      "again in a moment", what);
	if (!backend_lost(rc->backend))
		return 0;
	recover_note(rc);
	return cep__set_error(CEP_ECONTEXT, "%s", backend_lost_why(rc->backend));
}

/* ------------------------------------------------------------- the work */

static void recover_run(struct recover *rc)
{
	char why[CEP_MAX_STATUS_MSG], waiting[CEP_MAX_STATUS_MSG];
	uint32_t failed;

	snprintf(why, sizeof(why), "%s", backend_lost_why(rc->backend));
	/* Nothing completes on the lost context any more; settling also
	 * frees every plan that was in flight. */
	failed = run_queue_recover(rc->runs, why);
	/* Runs waiting for their turn are not handed over (recover.h). */
	snprintf(waiting, sizeof(waiting), "%.*s; this run was waiting for its turn",
		 (int)sizeof(waiting) - 40, why);
	failed += fairq_fail_all(rc->fairq, CEP_ECONTEXT, waiting);
	run_queue_reap(rc->runs, true);
	cep__clear_error();
	rc->ops->handover(rc->ctx, rc->t0, failed, why);
	/* Still here: the lost backend can serve nothing, and no other
	 * image could be started. */
	log_printf(LOG_CRIT, "cudaepd cannot re-execute itself to recover from the lost "
		   "context: %s; stopping, so that the service manager restarts it",
		   cep_last_error());
	rc->ops->stop(rc->ctx);
}
