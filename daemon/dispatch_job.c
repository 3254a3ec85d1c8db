/*
 * dispatch_job.c — a client's work off the event loop (dispatch_priv.h).
 *
 * Loading a model (reading, parsing, checking, folding, placing weights)
 * and the cold steps of a run (planning, first runs, captures) take long
 * enough to leave the event loop. The handler checks the request on the
 * loop and packs it into the client's job; the libuv thread pool does the
 * engine work; back on the loop the handler's after function builds and
 * sends the reply (dispatch__job_reply()). Meanwhile the client is not
 * read (CLIENT_JOB), so its requests stay in order and its sessions and
 * regions are used by one thread at a time; a client that goes away
 * meanwhile is released when the job ends.
 */
#include "daemon/dispatch_priv.h"

#include <stdio.h>
#include <stdlib.h>

#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/client.h"
#include "daemon/recover.h"

int dispatch__job_get(struct dispatch *d, struct client *c, uint64_t req_id,
		      enum job_kind kind, struct job **out)
{
	struct job *j = c->job;

	if (j == NULL) {
		j = calloc(1, sizeof(*j));
		if (j == NULL)
			return cep__set_error(CEP_ENOMEM, "no memory for the request's work");
		c->job = j;
	}
	j->d = d;
	j->c = c;
	j->req_id = req_id;
	j->kind = kind;
	j->describe = false;
	j->queued = false;
	j->ret = 0;
	j->msg[0] = '\0';
	j->start_ns = uv_hrtime();
	j->work_fn = NULL;
	j->after_fn = NULL;
	j->load.model_fd = -1;
	j->load.dir_fd = -1;
	j->load.es = NULL;
	j->load.bytes = NULL;
	j->load.len = 0;
	j->run.r = NULL;
	*out = j;
	return 0;
}

uint64_t dispatch__job_gen(const struct client *c)
{
	const struct job *j = c->job;

	return c->work == CLIENT_JOB && j != NULL && j->kind == JOB_GEN ? j->gen.sess->id : 0;
}

uint64_t dispatch__job_session(const struct client *c)
{
	const struct job *j = c->job;

	if (c->work == CLIENT_IDLE || j == NULL)
		return 0;
	if (j->kind == JOB_GEN)
		return j->gen.sess->id;
	return j->kind == JOB_LOAD ? j->load.session_id : j->run.sess->id;
}

void dispatch__job_inline(struct job *j)
{
	cep__clear_error();
	j->work_fn(j);
	/* The message lives in this thread's storage. */
	if (j->ret != 0)
		snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
}

static void job_work(uv_work_t *w)
{
	dispatch__job_inline(container_of(w, struct job, work));
}

static void job_after(uv_work_t *w, int status)
{
	struct job *j = container_of(w, struct job, work);

	stats_gauge_add(j->d->stats, STATS_GAUGE_JOBS, -1);
	if (status != 0 && j->ret == 0) {
		j->ret = CEP_ECANCELED;
		snprintf(j->msg, sizeof(j->msg), "the request was canceled");
	}
	j->after_fn(j);
}

int dispatch__job_queue(struct job *j)
{
	int ret;

	ret = uv_queue_work(j->d->loop, &j->work, job_work, job_after);
	if (ret != 0) {
		log_warning("uv_queue_work: %s; working on the loop", uv_strerror(ret));
		return ret;
	}
	client_work_begin(j->c, CLIENT_JOB);
	stats_gauge_add(j->d->stats, STATS_GAUGE_JOBS, 1);
	return 0;
}

void dispatch__job_reply(struct job *j, int (*finish)(struct job *j, struct req *r))
{
	struct dispatch *d = j->d;
	struct client *c = j->c;
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	union reply_body body;
	struct req r = {
		.d = d, .c = c, .arena = d->arena, .resp = &resp,
		.body = &body, .fds = NULL, .nfds = 0,
	};
	struct run *run;
	size_t len;
	int ret;

	cep__clear_error();
	reqarena_reset(d->arena);
	resp.id = j->req_id;
	ret = finish(j, &r);
	if (ret < 0)
		stats_count(d->stats, STATS_COUNTER_REQUEST_ERRORS, 1);
	dispatch__response_encode(&resp, ret, d->out_buf, &len);
	reqarena_reset(d->arena);
	access_kill_finish(c);
	run = j->run.r;
	j->run.r = NULL;
	client_work_end(c);
	(void)conn_send(&c->conn, d->out_buf, len);
	/* Its completion may have come already; it is finished after the
	 * reply, whose body it cannot overtake. */
	if (run != NULL)
		run_replied(run);
	/* A job that failed on a lost context begins the recovery; one that
	 * a recovery waited for lets it go on. */
	recover_note(d->recover);
}
