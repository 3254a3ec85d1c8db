/*
 * dispatch_run.c — the Run request, where a run enters the daemon: its
 * tensors are checked against the client's regions and its session, and
 * then, with a fence, its record (run.h) carries it through its life.
 *
 * Without a fence a run is computed and answered when done (on the thread
 * pool for a client with a socket). With one it is answered at once with
 * its outputs' shapes and completes later through its fence:
 *   - a warm plan on a backend that queues work is submitted right here on
 *     the loop, which costs no more than queuing;
 *   - planning, first runs and the host backend's computing go to the
 *     thread pool as the client's job;
 *   - a run of a batching session waits in its model's batch group
 *     (BATCHED) and is answered when the group lets it go;
 *   - a run over its client's max_runs_in_flight is only described (on the
 *     loop when its plan is cached, else on the pool), keeps its inputs and
 *     outputs in its record and waits in the fair queue (WAITING), which
 *     starts it later through dispatch_queued_start().
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/batch.h"
#include "daemon/client.h"
#include "daemon/dispatch_priv.h"
#include "daemon/fairq.h"
#include "daemon/recover.h"
#include "gpu/backend.h"

/* Whether runs of c wait in the fair queue at all: c has a socket and the
 * backend queues work. Elsewhere a run is computed while it is submitted
 * (the host backend), one at a time per client, and detached clients run
 * everything inline. */
static bool fairq_applies(const struct dispatch *d, const struct client *c)
{
	return c->conn.fd >= 0 && (d->backend->caps & BACKEND_CAP_ASYNC);
}

/* ------------------------------------------------------------ the boundary */

/*
 * Checks one tensor of a Run against its region and copies it into the
 * job: the region is this client's, the slice lies in it, its dtype is
 * one cudaep stores (an output may leave it out) and its shape a valid
 * one. What the model says of it is engine_run_check()'s, right after.
 */
static int tensor_take(struct req *r, const Cudaep__V1__TensorRef *t, bool input,
		       struct job_tensor *jt, struct region **reg)
{
	const char *what = input ? "input" : "output";
	const char *name = t->name ? t->name : "";
	size_t esz = cep_dtype_size((cep_dtype)t->dtype);
	uint64_t numel = 1;
	size_t k;
	int ret;

	if (name[0] == '\0')
		return cep__set_error(CEP_EINVAL, "an %s has no name", what);
	if (strlen(name) >= sizeof(jt->name))
		return cep__set_error(CEP_EINVAL, "%s name '%.40s...' is longer than %zu bytes",
				      what, name, sizeof(jt->name) - 1);
	ret = region_table_get(&r->c->regions, t->region_id, reg);
	if (ret != 0)
		return cep__set_error(ret, "%s '%s': no region %llu on this connection", what,
				      name, (unsigned long long)t->region_id);
	ret = region_slice_check(*reg, t->offset, t->bytes, NULL);
	if (ret != 0) {
		char why[CEP_MAX_STATUS_MSG];

		/* Copied first: cep_last_error() is the buffer written next. */
		snprintf(why, sizeof(why), "%s", cep_last_error());
		return cep__set_error(ret, "%s '%s': %s", what, name, why);
	}
	snprintf(jt->name, sizeof(jt->name), "%s", name);
	jt->region_id = t->region_id;
	jt->offset = t->offset;
	if (!input) {
		/* An output's dtype and shape are the model's (the reply says
		 * them); one given must still be a valid one, or left out. */
		if (t->dtype != 0 && esz == 0)
			return cep__set_error(CEP_EDTYPE, "output '%s': unknown dtype %d",
					      name, (int)t->dtype);
		if (t->n_shape > CEP_MAX_RANK)
			return cep__set_error(CEP_ESHAPE, "output '%s' has rank %zu, at most "
					      "%d is supported", name, t->n_shape, CEP_MAX_RANK);
		for (k = 0; k < t->n_shape; k++)
			if (t->shape[k] < 0)
				return cep__set_error(CEP_ESHAPE, "output '%s': dimension %zu "
						      "is %lld", name, k, (long long)t->shape[k]);
		return 0;
	}
	if (esz == 0)
		return cep__set_error(CEP_EDTYPE, "input '%s': element type %d is not one "
				      "cudaep stores", name, (int)t->dtype);
	if (t->n_shape > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "input '%s' has rank %zu, at most %d is "
				      "supported", name, t->n_shape, CEP_MAX_RANK);
	for (k = 0; k < t->n_shape; k++) {
		if (t->shape[k] < 0)
			return cep__set_error(CEP_ESHAPE, "input '%s': dimension %zu is %lld",
					      name, k, (long long)t->shape[k]);
		if (t->shape[k] != 0 && numel > UINT64_MAX / esz / (uint64_t)t->shape[k])
			return cep__set_error(CEP_ESHAPE, "input '%s': its shape overflows",
					      name);
		numel *= (uint64_t)t->shape[k];
		jt->dims[k] = t->shape[k];
	}
	/* Whether the bytes are what the shape needs is the model's check
	 * (engine_run_check()), with the model's dtype. */
	return 0;
}

/* Takes every tensor of m into j. */
static int tensors_take(struct req *r, const Cudaep__V1__Run *m, struct job *j)
{
	struct region *reg;
	size_t i;
	int ret;

	if (m->n_inputs > CEP_MAX_IO || m->n_outputs > CEP_MAX_IO)
		return cep__set_error(CEP_EINVAL, "a run names at most %d inputs and %d "
				      "outputs", CEP_MAX_IO, CEP_MAX_IO);
	j->run.n_in = m->n_inputs;
	j->run.n_out = m->n_outputs;
	for (i = 0; i < m->n_inputs; i++) {
		const Cudaep__V1__TensorRef *t = m->inputs[i];
		struct job_tensor *jt = &j->run.tin[i];

		ret = tensor_take(r, t, true, jt, &reg);
		if (ret != 0)
			return ret;
		j->run.in[i] = (struct engine_input){
			.name = jt->name,
			.dtype = (cep_dtype)t->dtype,
			.rank = (int)t->n_shape,
			.dims = jt->dims,
			.data = (const uint8_t *)reg->addr + t->offset,
			.bytes = t->bytes,
		};
	}
	for (i = 0; i < m->n_outputs; i++) {
		const Cudaep__V1__TensorRef *t = m->outputs[i];
		struct job_tensor *jt = &j->run.tout[i];

		ret = tensor_take(r, t, false, jt, &reg);
		if (ret != 0)
			return ret;
		memset(&j->run.out[i], 0, sizeof(j->run.out[i]));
		j->run.out[i].name = jt->name;
		j->run.out[i].data = (uint8_t *)reg->addr + t->offset;
		j->run.out[i].capacity = t->bytes;
	}
	return 0;
}

/* ---------------------------------------------------------------- replies */

/* The RunReply of j: every output as written (or to be written), or, for
 * CEP_ENOSPC (ret), with the room each one needs. */
static int run_reply(struct job *j, struct req *r, int ret)
{
	Cudaep__V1__RunReply *rep = &r->body->run;
	Cudaep__V1__TensorRef **refs;
	size_t i;

	refs = reqarena_alloc(r->arena, sizeof(*refs) * (j->run.n_out + 1));
	if (refs == NULL)
		return cep__set_error(CEP_ENOMEM, "out of request memory");
	for (i = 0; i < j->run.n_out; i++) {
		const struct engine_output *o = &j->run.out[i];
		Cudaep__V1__TensorRef *t = reqarena_alloc(r->arena, sizeof(*t));

		if (t == NULL)
			return cep__set_error(CEP_ENOMEM, "out of request memory");
		cudaep__v1__tensor_ref__init(t);
		t->name = j->run.tout[i].name;
		t->region_id = j->run.tout[i].region_id;
		t->offset = j->run.tout[i].offset;
		t->bytes = o->bytes;
		t->dtype = (Cudaep__V1__DataType)o->dtype;
		t->n_shape = o->rank > 0 ? (size_t)o->rank : 0;
		t->shape = (int64_t *)o->dims;
		refs[i] = t;
	}
	cudaep__v1__run_reply__init(rep);
	rep->n_outputs = j->run.n_out;
	rep->outputs = refs;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_RUN;
	r->resp->run = rep;
	return ret == 0 ? 0 : cep__set_error(ret, "%s", j->msg);
}

/* ------------------------------------------------------- runs without fence */

static void sync_work(struct job *j)
{
	j->ret = engine_run(j->run.sess->engine, j->run.in, j->run.n_in, j->run.out,
			    j->run.n_out);
}

/* The reply of a run without a fence, which has completed. */
static int sync_finish(struct job *j, struct req *r)
{
	int ret = j->ret;

	stats_count(j->d->stats, ret == 0 ? STATS_COUNTER_RUNS : STATS_COUNTER_RUN_ERRORS, 1);
	stats_count(j->d->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
	if (ret != 0 && ret != CEP_ENOSPC) {
		log_info("client %llu session %llu: run failed: %s: %s",
			 (unsigned long long)j->c->id, (unsigned long long)j->run.sess->id,
			 cep_err_name(ret), j->msg);
		return cep__set_error(ret, "%s", j->msg);
	}
	if (ret == 0)
		j->run.sess->runs++;
	if (j->run.sess->engine)
		engine_session_stats(j->run.sess->engine, &j->run.sess->stats);
	return run_reply(j, r, ret);
}

static void sync_after(struct job *j)
{
	if (j->c->life != CLIENT_LIVE) {
		access_kill_finish(j->c);
		client_work_end(j->c);
		recover_note(j->d->recover);
		return;
	}
	dispatch__job_reply(j, sync_finish);
}

/* ----------------------------------------------------- runs with a fence */

static void fenced_after(struct job *j);

/* Submits the fenced run of j from the job's tensors, or, for a run that
 * waited, from its record's (flags: ENGINE_SUBMIT_WARM on the loop). */
static int fenced_submit(struct job *j, unsigned flags)
{
	struct run *r = j->run.r;
	const struct run_io *io = r->io;

	if (j->queued)
		return engine_run_submit(j->run.sess->engine, io->in, io->n_in,
					 (struct engine_output *)io->out, io->n_out, flags,
					 &r->fence, &r->er);
	return engine_run_submit(j->run.sess->engine, j->run.in, j->run.n_in, j->run.out,
				 j->run.n_out, flags, &r->fence, &r->er);
}

static int fenced_describe(struct job *j, unsigned flags)
{
	return engine_run_describe(j->run.sess->engine, j->run.in, j->run.n_in, j->run.out,
				   j->run.n_out, flags);
}

static void fenced_work(struct job *j)
{
	j->ret = j->describe ? fenced_describe(j, 0) : fenced_submit(j, 0);
}

/* Runs a fenced step of j on the thread pool (its reply follows from
 * fenced_after()), or inline where it cannot go there. Returns
 * DISPATCH__DEFERRED, or the step's reply built by finish. */
static int fenced_start(struct job *j, struct req *r, int (*finish)(struct job *, struct req *))
{
	j->work_fn = fenced_work;
	j->after_fn = fenced_after;
	if (r->c->conn.fd >= 0 && dispatch__job_queue(j) == 0)
		return DISPATCH__DEFERRED;
	dispatch__job_inline(j);
	return finish(j, r);
}

/* The reply of a run with a fence once it is submitted (j->ret 0: its
 * outputs' shapes; it completes later) or refused (nothing was queued:
 * its record goes back). */
static int fenced_finish(struct job *j, struct req *r)
{
	struct run *run = j->run.r;
	int ret = j->ret;

	stats_count(j->d->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
	if (ret != 0) {
		run_abort(run);
		j->run.r = NULL;
		stats_count(j->d->stats, STATS_COUNTER_RUN_ERRORS, 1);
		if (ret != CEP_ENOSPC) {
			log_info("client %llu session %llu: run refused: %s: %s",
				 (unsigned long long)j->c->id,
				 (unsigned long long)j->run.sess->id, cep_err_name(ret), j->msg);
			return cep__set_error(ret, "%s", j->msg);
		}
	} else {
		stats_count(j->d->stats, STATS_COUNTER_RUNS_FENCED, 1);
	}
	return run_reply(j, r, ret);
}

/* The name of the model's input (or output) called name, which lives as
 * long as the model; NULL when there is none. */
static const char *model_name(const engine_model *m, bool input, const char *name)
{
	int k, n = input ? engine_model_input_count(m) : engine_model_output_count(m);
	const struct engine_tensor_info *t;

	for (k = 0; k < n; k++) {
		t = input ? engine_model_input(m, k) : engine_model_output(m, k);
		if (strcmp(t->name, name) == 0)
			return t->name;
	}
	return NULL;
}

/* Copies the inputs and outputs of j's run into its record, which keeps
 * them while it waits: the job serves the client's next request. */
static int run_keep(struct job *j, struct run *run)
{
	const engine_model *m = engine_session_model(j->run.sess->engine);
	struct run_io *io;
	size_t i;
	int ret;

	ret = run_io_get(run, &io);
	if (ret != 0)
		return ret;
	io->n_in = j->run.n_in;
	io->n_out = j->run.n_out;
	for (i = 0; i < j->run.n_in; i++) {
		io->in[i] = j->run.in[i];
		memcpy(io->dims[i], j->run.in[i].dims,
		       sizeof(int64_t) * (size_t)(j->run.in[i].rank > 0 ? j->run.in[i].rank : 0));
		io->in[i].dims = io->dims[i];
		io->in[i].name = model_name(m, true, j->run.in[i].name);
		if (io->in[i].name == NULL)
			return cep__set_error(CEP_EINTERNAL, "input '%s' is not the model's",
					      j->run.in[i].name);
	}
	for (i = 0; i < j->run.n_out; i++) {
		io->out[i] = j->run.out[i];
		io->out[i].name = model_name(m, false, j->run.out[i].name);
		if (io->out[i].name == NULL)
			return cep__set_error(CEP_EINTERNAL, "output '%s' is not the model's",
					      j->run.out[i].name);
	}
	return 0;
}

/* The reply of a run over its client's bound once it is described (j->ret
 * 0: its outputs' shapes; it waits for its turn now) or refused (its
 * record goes back). */
static int wait_finish(struct job *j, struct req *r)
{
	struct run *run = j->run.r;

	if (j->ret == 0 && j->c->kill_pending == j->run.sess->id) {
		/* Killed while it was planned: it would never start. */
		j->ret = CEP_ECANCELED;
		snprintf(j->msg, sizeof(j->msg), "session %llu was killed by an administrator "
			 "before this run started", (unsigned long long)j->run.sess->id);
	}
	if (j->ret == 0) {
		j->ret = run_keep(j, run);
		if (j->ret != 0)
			snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
	}
	if (j->ret == 0) {
		fairq_push(j->d->fairq, &j->c->lanes, run);
		/* Nothing starts it before this reply is sent: the fair queue is
		 * pumped only at the top of the loop's next turn. */
		run->replied = true;
		j->run.r = NULL;
		stats_count(j->d->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
		stats_count(j->d->stats, STATS_COUNTER_RUNS_FENCED, 1);
		return run_reply(j, r, 0);
	}
	return fenced_finish(j, r);
}

/* The end of a waiting run's submission on the thread pool: nothing to
 * answer (it was answered when it came); a run that could not be queued
 * fails through its fence. */
static void queued_after(struct job *j)
{
	struct run *run = j->run.r;
	struct client *c = j->c;

	j->run.r = NULL;
	stats_count(j->d->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
	if (j->ret != 0) {
		log_info("client %llu session %llu: waiting run %llu could not start: %s: %s",
			 (unsigned long long)c->id, (unsigned long long)j->run.sess->id,
			 (unsigned long long)run->seq, cep_err_name(j->ret), j->msg);
		run->replied = true;
		run_fail(run, j->ret, j->msg);
	}
	access_kill_finish(c);
	/* The run in flight keeps c, released after it when it went
	 * meanwhile. */
	client_work_end(c);
	if (j->ret == 0)
		run_replied(run);
}

/* The end of a cold step of a fenced run on the loop. */
static void fenced_after(struct job *j)
{
	struct client *c = j->c;
	struct run *run = j->run.r;

	if (j->queued) {
		queued_after(j);
		recover_note(j->d->recover);
		return;
	}
	if (c->life != CLIENT_LIVE) {
		/* The client is gone: reply to no one; a run it queued
		 * completes first. */
		j->run.r = NULL;
		if (j->describe || j->ret != 0)
			run_abort(run);
		access_kill_finish(c);
		client_work_end(c);
		if (!j->describe && j->ret == 0)
			run_replied(run);
		recover_note(j->d->recover);
		return;
	}
	dispatch__job_reply(j, j->describe ? wait_finish : fenced_finish);
}

void dispatch_queued_start(struct dispatch *d, struct client *c, struct run *run)
{
	struct job *j = c->job;
	int ret;

	run_submit(run);
	/* The job is free (the client is idle) and made: the run came
	 * through it. */
	j->d = d;
	j->c = c;
	j->req_id = run->req_id;
	j->kind = JOB_FENCED;
	j->describe = false;
	j->queued = true;
	j->ret = 0;
	j->msg[0] = '\0';
	j->start_ns = uv_hrtime();
	j->run.sess = run->sess;
	j->run.r = run;
	cep__clear_error();
	ret = fenced_submit(j, ENGINE_SUBMIT_WARM);
	if (ret == ENGINE_RUN_COLD) {
		/* Planning, a first run or a capture: off the loop. Its
		 * completion waits for queued_after(), which alone may touch
		 * the session's counters meanwhile. */
		run->replied = false;
		j->work_fn = fenced_work;
		j->after_fn = fenced_after;
		if (dispatch__job_queue(j) == 0)
			return;
		dispatch__job_inline(j);
		queued_after(j);
		return;
	}
	j->run.r = NULL;
	if (ret != 0) {
		log_info("client %llu session %llu: waiting run %llu could not start: %s: %s",
			 (unsigned long long)c->id, (unsigned long long)run->sess->id,
			 (unsigned long long)run->seq, cep_err_name(ret), cep_last_error());
		run_fail(run, ret, cep_last_error());
	}
}

/* ----------------------------------------------------------------- batches */

/* How a run of a batching session left its group (batch.h), on the loop. */
static void batch_member_done(struct batch_member *bm, enum batch_outcome how)
{
	struct run *run = container_of(bm, struct run, bm);
	struct client *c = run->table->owner;
	struct job *j = c->job;

	if (how == BATCH_SUBMITTED) {
		j->ret = 0;
		j->run.sess->batched_runs++;
		run_batched_in(run, j->run.sess->batch, bm->lane);
		run_submit(run);
		if (c->life != CLIENT_LIVE)
			fenced_after(j);
		else
			dispatch__job_reply(j, fenced_finish);
		return;
	}
	/* Alone, as any fenced run; for a client gone meanwhile, not at all. */
	run_submit(run);
	if (c->life != CLIENT_LIVE) {
		j->ret = CEP_ECANCELED;
		fenced_after(j);
		return;
	}
	if (j->d->backend->caps & BACKEND_CAP_ASYNC) {
		cep__clear_error();
		j->ret = fenced_submit(j, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			dispatch__job_reply(j, fenced_finish);
			return;
		}
	}
	j->ret = 0;
	j->work_fn = fenced_work;
	j->after_fn = fenced_after;
	if (dispatch__job_queue(j) == 0)
		return;
	dispatch__job_inline(j);
	dispatch__job_reply(j, fenced_finish);
}

/* Hands the fenced run of j to its session's batch group; false when it
 * is to run alone now (nothing to batch along, or the group no longer
 * merges). */
static bool batch_start(struct job *j)
{
	struct run *run = j->run.r;
	const struct engine_input *x = &j->run.in[0];

	if (j->run.n_in == 0 || x->rank < 1)
		return false;
	run->bm = (struct batch_member){
		.run = { j->run.in, j->run.n_in, j->run.out, j->run.n_out, &run->fence, &run->er },
		.rows = x->dims[0],
		.done = batch_member_done,
	};
	run_batch(run);
	if (batch_add(j->run.sess->batch, &run->bm))
		return true;
	/* Not merged: back to the state it came in. */
	run_submit(run);
	return false;
}

/* A Run with a fence: admitted and answered now, completed later (see the
 * top of this file). */
static int run_fenced(struct req *r, const Cudaep__V1__Run *m, struct job *j)
{
	struct dispatch *d = r->d;
	struct client *c = r->c;
	struct run *run;
	size_t i;
	int ret;

	ret = run_admit(&c->runs, j->run.sess, m->fence_seq, r->resp->id, &run);
	if (ret != 0)
		return ret;
	j->kind = JOB_FENCED;
	j->run.r = run;
	for (i = 0; i < j->run.n_in; i++)
		run_hold(run, region_table_find(&c->regions, j->run.tin[i].region_id));
	for (i = 0; i < j->run.n_out; i++)
		run_hold(run, region_table_find(&c->regions, j->run.tout[i].region_id));
	if (fairq_applies(d, c) && fairq_must_wait(d->fairq, &c->lanes, &c->runs)) {
		cep__clear_error();
		j->ret = fenced_describe(j, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			ret = wait_finish(j, r);
			goto replied;
		}
		j->describe = true;
		ret = fenced_start(j, r, wait_finish);
		if (ret == DISPATCH__DEFERRED)
			return ret;
		goto replied;
	}
	/* A batching session's run waits in its group's window; the reply
	 * comes when the group lets it go (batch_member_done()). */
	if (c->conn.fd >= 0 && j->run.sess->batch != NULL && batch_start(j)) {
		client_work_begin(c, CLIENT_BATCH);
		c->batched = run;
		return DISPATCH__DEFERRED;
	}
	run_submit(run);
	if (c->conn.fd >= 0 && (d->backend->caps & BACKEND_CAP_ASYNC)) {
		cep__clear_error();
		j->ret = fenced_submit(j, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			ret = fenced_finish(j, r);
			goto replied;
		}
	}
	ret = fenced_start(j, r, fenced_finish);
	if (ret == DISPATCH__DEFERRED)
		return ret;
replied:
	/* The reply is encoded as soon as this returns, and nothing finishes
	 * a run on this thread before that. */
	if (j->run.r != NULL)
		j->run.r->replied = true;
	j->run.r = NULL;
	recover_note(d->recover);
	return ret;
}

#ifdef CEP_FAULT_INJECT
/* Test builds only (recover.h): the third Run request of a session named
 * RECOVER_INJECT_NAME loses the device context before it is served, so
 * that it fails with CEP_ECONTEXT and every other client's runs in flight
 * meet the loss too. */
static void fault_inject_maybe(struct dispatch *d, struct session *sess)
{
	if (sess->run_requests != 3 || strcmp(sess->name, RECOVER_INJECT_NAME) != 0)
		return;
	log_warning("session %llu '%s': injecting a fault into the %s backend (a test build)",
		    (unsigned long long)sess->id, sess->name, d->backend->iface.name);
	if (backend_fault_inject(d->backend) != CEP_ECONTEXT)
		log_err("the injected fault did not lose the context: %s", cep_last_error());
}
#endif

int dispatch__run(struct req *r, const Cudaep__V1__Run *m)
{
	struct session *sess;
	struct job *j;
	int ret;

	ret = dispatch__session_get(r->c, m->session_id, &sess);
	if (ret != 0)
		return ret;
	sess->run_requests++;
#ifdef CEP_FAULT_INJECT
	fault_inject_maybe(r->d, sess);
#endif
	ret = recover_refuse(r->d->recover, "Run");
	if (ret != 0)
		return ret;
	if (m->n_inputs > CEP_MAX_IO || m->n_outputs > CEP_MAX_IO)
		return cep__set_error(CEP_EINVAL, "a run names at most %d inputs and %d "
				      "outputs", CEP_MAX_IO, CEP_MAX_IO);
	ret = dispatch__job_get(r->d, r->c, r->resp->id, JOB_RUN, &j);
	if (ret != 0)
		return ret;
	j->run.sess = sess;
	ret = tensors_take(r, m, j);
	if (ret != 0)
		return ret;
	/* Checked against the model once, here: what runs them trusts them. */
	ret = engine_run_check(sess->engine, j->run.in, j->run.n_in, j->run.out, j->run.n_out);
	if (ret != 0) {
		stats_count(r->d->stats, STATS_COUNTER_RUN_ERRORS, 1);
		log_info("client %llu session %llu: run refused: %s: %s",
			 (unsigned long long)r->c->id, (unsigned long long)sess->id,
			 cep_err_name(ret), cep_last_error());
		return ret;
	}
	if (m->fence_seq != 0)
		return run_fenced(r, m, j);
	j->work_fn = sync_work;
	j->after_fn = sync_after;
	if (r->c->conn.fd >= 0 && dispatch__job_queue(j) == 0)
		return DISPATCH__DEFERRED;
	dispatch__job_inline(j);
	return sync_finish(j, r);
}
