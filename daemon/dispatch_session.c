/*
 * dispatch_session.c — the session requests: LoadModel, SessionInfo, Run
 * and Unload (dispatch_priv.h).
 *
 * Loading a model (reading, parsing, checking, folding, placing weights)
 * and running one take long enough to leave the event loop. The handler
 * checks the request on the loop and packs it into the connection's job;
 * the libuv thread pool does the engine work; the completion, back on the
 * loop, builds and sends the reply. Meanwhile the connection reads nothing
 * more, so its requests stay in order and its sessions and regions are
 * used by one thread at a time; a connection that goes away meanwhile is
 * torn down when the job ends (conn_free(), conn_job_done()). Detached
 * connections (tests, the fuzzer) run the same work inline.
 *
 * A job is allocated once per connection, on its first load or run, and
 * reused: a warm Run allocates nothing here.
 *
 * Batching: a fenced Run of a session loaded with batching waits in its
 * model's batch group (batch.h) instead of going to the engine; the
 * connection stays busy, and the reply follows when the group flushes
 * (batch_member_done()), as for a job on the thread pool.
 *
 * Runs with a fence over their client's max_runs_in_flight are answered
 * at once all the same (their outputs described by the plan, without
 * queuing anything), keep their inputs and outputs in their record and
 * wait in the fair queue (fairq.h), which starts them later through
 * dispatch__queued_start(): on the loop when their plan is warm, else as
 * the connection's job on the thread pool.
 *
 * Memory: a LoadModel takes its session id on the loop, before the work,
 * so that the engine charges the session's memory to (client, session)
 * in the server's account from the first byte; the session sits in the
 * table without an engine until the load finishes, and leaves it if the
 * load fails. Models come from the server's model cache, so a file loaded
 * twice is parsed once and its device weights are shared.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/access.h"
#include "daemon/batch.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_priv.h"
#include "engine/engine.h"
#include "common/error.h"
#include "daemon/fairq.h"
#include "daemon/fence.h"
#include "common/log.h"
#include "engine/precision.h"
#include "daemon/recover.h"
#include "daemon/server.h"

/* Protobuf messages cannot exceed 2 GiB; larger models keep their weights
 * as external data. */
#define MODEL_MAX_BYTES ((uint64_t)INT32_MAX)

enum job_kind {
	JOB_LOAD = 1,
	JOB_RUN,
	JOB_RUN_FENCED,               /* a cold run with a fence: plan, submit */
	JOB_RUN_DESCRIBE,             /* a cold run over its client's bound:
	                               * plan and describe; it then waits */
	JOB_RUN_QUEUED,               /* a waiting run whose turn came, cold:
	                               * plan, submit; it was answered before */
};

/* A Run tensor as the job keeps it: the request arena is gone by the time
 * the job runs. */
struct job_tensor {
	char name[CEP_MAX_TENSOR_NAME];
	uint64_t region_id;
	uint64_t offset;              /* bytes into the region */
	int64_t dims[CEP_MAX_RANK];   /* inputs: the shape given */
};

struct job {
	uv_work_t work;               /* the thread pool's; container_of */
	struct server *s;
	struct conn *c;               /* the owner, busy while the job runs */
	uint64_t req_id;
	enum job_kind kind;
	int ret;                      /* the result: 0 or a CEP_E* code */
	char msg[CEP_MAX_STATUS_MSG]; /* the worker thread's error message */
	uint64_t start_ns;            /* uv_hrtime() at arrival */
	struct {
		int model_fd;         /* owned while the job lasts; -1: none */
		int dir_fd;           /* owned likewise; -1: none */
		const void *bytes;    /* a region slice instead of model_fd */
		size_t len;
		char name[CEP_MAX_OBJ_NAME];
		struct engine_session_options opts;
		bool batching;        /* SessionOptions.batching */
		uint64_t session_id;  /* taken on the loop; its table entry
		                       * waits for es */
		engine_session *es;   /* the result, until a session owns it */
	} load;
	struct {
		struct session *sess;
		size_t n_in, n_out;
		struct engine_input in[CEP_MAX_IO];
		struct engine_output out[CEP_MAX_IO];
		struct job_tensor tin[CEP_MAX_IO];
		struct job_tensor tout[CEP_MAX_IO];
		struct fence_run *fr; /* JOB_RUN_FENCED, _DESCRIBE, _QUEUED:
		                       * its record */
		struct batch_member bm; /* while it is its batch group's */
	} run;
};

void dispatch_job_free(struct job *j)
{
	free(j);
}

uint64_t dispatch__job_session(const struct conn *c)
{
	const struct job *j = c->job;

	if (!c->busy || j == NULL)
		return 0;
	return j->kind == JOB_LOAD ? j->load.session_id : j->run.sess->id;
}

static int job_get(struct req *r, enum job_kind kind, struct job **out)
{
	struct conn *c = r->c;

	if (c->job == NULL) {
		c->job = calloc(1, sizeof(*c->job));
		if (c->job == NULL)
			return cep__set_error(CEP_ENOMEM, "no memory for the "
					      "request's work");
	}
	*out = c->job;
	(*out)->s = r->s;
	(*out)->c = c;
	(*out)->req_id = r->resp->id;
	(*out)->kind = kind;
	(*out)->ret = 0;
	(*out)->msg[0] = '\0';
	(*out)->start_ns = uv_hrtime();
	(*out)->load.model_fd = -1;
	(*out)->load.dir_fd = -1;
	(*out)->load.es = NULL;
	(*out)->load.bytes = NULL;
	(*out)->load.len = 0;
	return 0;
}

/* ------------------------------------------------------ off the event loop */

/* Reads the client's model file whole. pread rather than mmap: the client
 * could truncate a mapped file under us, and a SIGBUS would take the
 * daemon down. */
static int model_read(int fd, void **out, size_t *len)
{
	struct stat st;
	size_t size, got = 0;
	uint8_t *buf;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return cep__set_error(cep__from_errno(errno), "model fd: %s",
				      strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cep__set_error(CEP_EINVAL, "the model fd is not a "
				      "regular file");
	if (st.st_size <= 0)
		return cep__set_error(CEP_EMODEL, "the model file is empty");
	if ((uint64_t)st.st_size > MODEL_MAX_BYTES)
		return cep__set_error(CEP_ELIMIT, "the model file has %lld "
				      "bytes; an ONNX file holds at most 2 "
				      "GiB, larger models keep their weights "
				      "as external data",
				      (long long)st.st_size);
	size = (size_t)st.st_size;
	buf = malloc(size);
	if (buf == NULL)
		return cep__set_error(CEP_ENOMEM, "no memory to read a model "
				      "of %zu bytes", size);
	while (got < size) {
		n = pread(fd, buf + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return cep__set_error(n < 0 ? cep__from_errno(errno)
						    : CEP_EMODEL,
					      "reading the model file: %s",
					      n < 0 ? strerror(errno)
						    : "it shrank while read");
		}
		got += (size_t)n;
	}
	*out = buf;
	*len = size;
	return 0;
}

/* Logs what converting a half session's model did: which nodes compute
 * in half, and whether some stay float32 (no half kernel here). */
static void precision_log(const struct job *j, const engine_model *m)
{
	struct precision_stats st;

	if (engine_model_precision(m) == CEP_PRECISION_FP32)
		return;
	engine_model_precision_stats(m, &st);
	log_info("client %llu: session %llu runs in %s: %d nodes in half, %d kept in "
		 "float32%s%s%s, %d casts added", (unsigned long long)j->c->id,
		 (unsigned long long)j->load.session_id,
		 precision_name(engine_model_precision(m)), st.half_nodes, st.float_nodes,
		 st.float_nodes ? " (the first: " : "", st.first_float,
		 st.float_nodes ? ")" : "", st.casts);
}

static int job_load(struct job *j)
{
	const struct engine_model_options mo = {
		.precision = j->load.opts.precision,
		.backend = j->s->backend->kind,
	};
	engine_model *m = NULL;
	void *owned = NULL;
	const void *bytes = j->load.bytes;
	size_t len = j->load.len;
	bool shared = false;
	int ret;

	if (j->load.model_fd >= 0) {
		ret = model_read(j->load.model_fd, &owned, &len);
		if (ret != 0)
			return ret;
		bytes = owned;
	}
	ret = engine_model_load_shared(j->s->models, bytes, len, j->load.dir_fd, &mo,
				       &m, &shared);
	free(owned);
	if (ret != 0)
		return ret;
	if (shared)
		log_debug("client %llu: the model of session %llu is already "
			  "loaded; sharing it", (unsigned long long)j->c->id,
			  (unsigned long long)j->load.session_id);
	else
		precision_log(j, m);
	ret = engine_session_new(m, j->s->backend, &j->load.opts, &j->load.es);
	engine_model_unref(m);
	return ret;
}

/* Submits the fenced run of j (flags: ENGINE_SUBMIT_WARM on the loop). */
static int job_run_submit(struct job *j, unsigned flags)
{
	struct fence_run *fr = j->run.fr;

	return engine_run_submit(j->run.sess->engine, j->run.in, j->run.n_in,
				 j->run.out, j->run.n_out, flags, &fr->fence, &fr->er);
}

/* Submits the waiting run of j, whose inputs and outputs its record
 * keeps (flags: ENGINE_SUBMIT_WARM on the loop). */
static int job_queued_submit(struct job *j, unsigned flags)
{
	struct fence_run *fr = j->run.fr;
	struct fence_io *io = fr->io;

	return engine_run_submit(j->run.sess->engine, io->in, io->n_in, io->out, io->n_out,
				 flags, &fr->fence, &fr->er);
}

static void job_work(uv_work_t *w)
{
	struct job *j = container_of(w, struct job, work);

	cep__clear_error();
	if (j->kind == JOB_LOAD)
		j->ret = job_load(j);
	else if (j->kind == JOB_RUN_FENCED)
		j->ret = job_run_submit(j, 0);
	else if (j->kind == JOB_RUN_DESCRIBE)
		j->ret = engine_run_describe(j->run.sess->engine, j->run.in, j->run.n_in,
					     j->run.out, j->run.n_out, 0);
	else if (j->kind == JOB_RUN_QUEUED)
		j->ret = job_queued_submit(j, 0);
	else
		j->ret = engine_run(j->run.sess->engine, j->run.in,
				    j->run.n_in, j->run.out, j->run.n_out);
	/* The message lives in this worker thread's storage. */
	if (j->ret != 0)
		snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
}

/* ------------------------------------------------------------ completion */

static void fd_close(struct server *s, int *fd)
{
	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	stats_count(&s->stats, STATS_COUNTER_FDS_CLOSED, 1);
}

static Cudaep__V1__TensorInfo *tensor_info(struct req *r,
					   const struct engine_tensor_info *t)
{
	Cudaep__V1__TensorInfo *ti = reqarena_alloc(r->arena, sizeof(*ti));
	Cudaep__V1__Dim **dims;
	int k, rank = t->rank > 0 ? t->rank : 0;

	if (ti == NULL)
		return NULL;
	cudaep__v1__tensor_info__init(ti);
	ti->name = (char *)t->name;
	ti->dtype = (Cudaep__V1__DataType)t->dtype;
	dims = reqarena_alloc(r->arena, sizeof(*dims) * (size_t)(rank + 1));
	if (dims == NULL)
		return NULL;
	for (k = 0; k < rank; k++) {
		Cudaep__V1__Dim *d = reqarena_alloc(r->arena, sizeof(*d));

		if (d == NULL)
			return NULL;
		cudaep__v1__dim__init(d);
		if (t->dims[k] >= 0) {
			d->kind_case = CUDAEP__V1__DIM__KIND_VALUE;
			d->value = t->dims[k];
		} else {
			d->kind_case = CUDAEP__V1__DIM__KIND_PARAM;
			d->param = (char *)(t->dim_params[k] ? t->dim_params[k] : "");
		}
		dims[k] = d;
	}
	ti->n_shape = (size_t)rank;
	ti->shape = dims;
	return ti;
}

/* Fills rep with the session's inputs and outputs. */
static int info_fill(struct req *r, const struct session *sess,
		     Cudaep__V1__SessionInfoReply *rep)
{
	const engine_model *m = engine_session_model(sess->engine);
	int n_in = engine_model_input_count(m);
	int n_out = engine_model_output_count(m);
	int i;

	cudaep__v1__session_info_reply__init(rep);
	rep->session_id = sess->id;
	rep->name = (char *)sess->name;
	rep->inputs = reqarena_alloc(r->arena, sizeof(void *) * (size_t)(n_in + 1));
	rep->outputs = reqarena_alloc(r->arena, sizeof(void *) * (size_t)(n_out + 1));
	if (rep->inputs == NULL || rep->outputs == NULL)
		goto oom;
	for (i = 0; i < n_in; i++)
		if ((rep->inputs[i] = tensor_info(r, engine_model_input(m, i))) == NULL)
			goto oom;
	for (i = 0; i < n_out; i++)
		if ((rep->outputs[i] = tensor_info(r, engine_model_output(m, i))) == NULL)
			goto oom;
	rep->n_inputs = (size_t)n_in;
	rep->n_outputs = (size_t)n_out;
	return 0;
oom:
	return cep__set_error(CEP_ENOMEM, "out of request memory describing "
			      "session %llu", (unsigned long long)sess->id);
}

/* Puts a session that asked for batching into its model's group. One
 * whose model cannot batch runs alone, which the log says. */
static void batching_open(struct job *j, struct session *sess)
{
	int ret;

	/* Detached connections (tests) run inline: nothing to wait with. */
	if (j->s->loop == NULL || j->c->fd < 0)
		return;
	ret = batch_group_get(&j->s->batches, sess->engine, j->load.opts.priority,
			      &sess->batch);
	if (ret != 0) {
		log_notice("client %llu session %llu asked for batching; its runs go alone: "
			   "%s", (unsigned long long)j->c->id, (unsigned long long)sess->id,
			   cep_last_error());
		return;
	}
	log_info("client %llu session %llu: its runs may be merged with other batching "
		 "sessions' runs of its model", (unsigned long long)j->c->id,
		 (unsigned long long)sess->id);
}

static int load_finish(struct job *j, struct req *r)
{
	Cudaep__V1__LoadModelReply *rep = &r->body->load_model;
	Cudaep__V1__SessionInfoReply *info;
	struct session *sess;
	int ret = j->ret;

	fd_close(j->s, &j->load.model_fd);
	fd_close(j->s, &j->load.dir_fd);
	sess = session_table_find(&j->c->sessions, j->load.session_id);
	if (ret == 0 && sess == NULL) {
		snprintf(j->msg, sizeof(j->msg), "session %llu went away while "
			 "loading", (unsigned long long)j->load.session_id);
		ret = CEP_EINTERNAL;
	}
	if (ret != 0) {
		engine_session_free(j->load.es);
		j->load.es = NULL;
		if (sess != NULL)
			(void)session_table_remove(&j->c->sessions, sess->id);
		stats_count(&j->s->stats, STATS_COUNTER_MODEL_LOAD_ERRORS, 1);
		log_info("client %llu: model load failed: %s: %s",
			 (unsigned long long)j->c->id, cep_err_name(ret), j->msg);
		return cep__set_error(ret, "%s", j->msg);
	}
	sess->engine = j->load.es;
	sess->loaded_ns = uv_hrtime();
	j->load.es = NULL;
	if (j->load.batching)
		batching_open(j, sess);
	log_info("client %llu loaded session %llu '%s': %d nodes, %.1f ms",
		 (unsigned long long)j->c->id, (unsigned long long)sess->id,
		 sess->name, engine_model_node_count(engine_session_model(sess->engine)),
		 (double)(uv_hrtime() - j->start_ns) / 1e6);
	info = reqarena_alloc(r->arena, sizeof(*info));
	if (info == NULL)
		return cep__set_error(CEP_ENOMEM, "out of request memory");
	ret = info_fill(r, sess, info);
	if (ret != 0)
		return ret;
	cudaep__v1__load_model_reply__init(rep);
	rep->info = info;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_LOAD_MODEL;
	r->resp->load_model = rep;
	return 0;
}

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

/* The reply of a run without a fence, which has completed. */
static int run_finish(struct job *j, struct req *r)
{
	int ret = j->ret;

	stats_count(&j->s->stats, ret == 0 ? STATS_COUNTER_RUNS
					   : STATS_COUNTER_RUN_ERRORS, 1);
	stats_count(&j->s->stats, STATS_COUNTER_RUN_NS,
		    uv_hrtime() - j->start_ns);
	if (ret != 0 && ret != CEP_ENOSPC) {
		log_info("client %llu session %llu: run failed: %s: %s",
			 (unsigned long long)j->c->id,
			 (unsigned long long)j->run.sess->id, cep_err_name(ret),
			 j->msg);
		return cep__set_error(ret, "%s", j->msg);
	}
	if (ret == 0)
		j->run.sess->runs++;
	if (j->run.sess->engine)
		engine_session_stats(j->run.sess->engine, &j->run.sess->stats);
	return run_reply(j, r, ret);
}

/* The reply of a run with a fence once it is submitted (j->ret 0: its
 * outputs' shapes; it completes later) or refused (nothing was queued:
 * its record goes back). */
static int run_fenced_finish(struct job *j, struct req *r)
{
	struct fence_run *fr = j->run.fr;
	int ret = j->ret;

	stats_count(&j->s->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
	if (ret != 0) {
		fence_run_abort(fr);
		j->run.fr = NULL;
		stats_count(&j->s->stats, STATS_COUNTER_RUN_ERRORS, 1);
		if (ret != CEP_ENOSPC) {
			log_info("client %llu session %llu: run refused: %s: %s",
				 (unsigned long long)j->c->id,
				 (unsigned long long)j->run.sess->id, cep_err_name(ret),
				 j->msg);
			return cep__set_error(ret, "%s", j->msg);
		}
	} else {
		stats_count(&j->s->stats, STATS_COUNTER_RUNS_FENCED, 1);
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
 * them while it waits: the job serves the connection's next request. */
static int run_keep(struct job *j, struct fence_run *fr)
{
	const engine_model *m = engine_session_model(j->run.sess->engine);
	struct fence_io *io;
	size_t i;
	int ret;

	ret = fence_run_io_get(fr, &io);
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
static int run_wait_finish(struct job *j, struct req *r)
{
	struct fence_run *fr = j->run.fr;

	if (j->ret == 0 && j->c->kill_pending == j->run.sess->id) {
		/* Killed while it was planned: it would never start. */
		j->ret = CEP_ECANCELED;
		snprintf(j->msg, sizeof(j->msg), "session %llu was killed by an administrator "
			 "before this run started", (unsigned long long)j->run.sess->id);
	}
	if (j->ret == 0) {
		j->ret = run_keep(j, fr);
		if (j->ret != 0)
			snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
	}
	if (j->ret == 0) {
		fairq_push(r->s, fr);
		/* Nothing finishes it before this reply is sent: it starts from
		 * fairq_pump(), which runs only after. */
		fr->replied = true;
		j->run.fr = NULL;
		stats_count(&j->s->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
		stats_count(&j->s->stats, STATS_COUNTER_RUNS_FENCED, 1);
		return run_reply(j, r, 0);
	}
	return run_fenced_finish(j, r);
}

static int job_finish(struct job *j, struct req *r)
{
	switch (j->kind) {
	case JOB_LOAD:
		return load_finish(j, r);
	case JOB_RUN_FENCED:
		return run_fenced_finish(j, r);
	case JOB_RUN_DESCRIBE:
		return run_wait_finish(j, r);
	default:
		return run_finish(j, r);
	}
}

/* The end of a waiting run's submission on the thread pool: nothing to
 * answer (it was answered when it came); a run that could not be queued
 * fails through its fence. */
static void queued_after(struct job *j)
{
	struct fence_run *fr = j->run.fr;
	struct conn *c = j->c;

	j->run.fr = NULL;
	stats_count(&j->s->stats, STATS_COUNTER_RUN_NS, uv_hrtime() - j->start_ns);
	if (j->ret != 0) {
		log_info("client %llu session %llu: waiting run %llu could not start: %s: %s",
			 (unsigned long long)c->id, (unsigned long long)j->run.sess->id,
			 (unsigned long long)fr->seq, cep_err_name(j->ret), j->msg);
		fr->replied = true;
		fence_run_fail(fr, j->ret, j->msg);
	}
	access_kill_finish(c);
	/* The run in flight keeps c, freed after it when it went meanwhile. */
	conn_job_done(c);
	if (j->ret == 0)
		fence_run_replied(fr);
}

/* The end of a job that left the request's handler, on the loop: reply,
 * then let the connection go on (or go). */
static void job_reply(struct job *j)
{
	struct server *s = j->s;
	struct conn *c = j->c;
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	union reply_body body;
	struct req r = {
		.s = s, .c = c, .arena = &s->arena, .resp = &resp,
		.body = &body, .fds = NULL, .nfds = 0,
	};
	struct fence_run *fr = NULL;
	size_t len;
	int ret;

	if (j->kind == JOB_RUN_QUEUED) {
		queued_after(j);
		recover_note(s);
		fairq_pump(s);
		return;
	}
	if (c->free_deferred) {
		/* The client is gone: drop what the job made, reply to no one;
		 * a run it queued completes first. */
		fd_close(s, &j->load.model_fd);
		fd_close(s, &j->load.dir_fd);
		engine_session_free(j->load.es);
		j->load.es = NULL;
		if ((j->kind == JOB_RUN_FENCED && j->ret != 0) || j->kind == JOB_RUN_DESCRIBE)
			fence_run_abort(j->run.fr);
		else if (j->kind == JOB_RUN_FENCED)
			fence_run_replied(j->run.fr);
		j->run.fr = NULL;
		conn_job_done(c);
		recover_note(s);
		fairq_pump(s);
		return;
	}
	cep__clear_error();
	reqarena_reset(&s->arena);
	resp.id = j->req_id;
	ret = job_finish(j, &r);
	if (ret < 0)
		stats_count(&s->stats, STATS_COUNTER_REQUEST_ERRORS, 1);
	dispatch__response_encode(&resp, ret, s->out_buf, &len);
	reqarena_reset(&s->arena);
	access_kill_finish(c);
	/* Taken before the send, which frees the connection and its job
	 * when the peer is gone (a run in flight keeps the connection). */
	if (j->kind == JOB_RUN_FENCED) {
		fr = j->run.fr;
		j->run.fr = NULL;
	}
	conn_job_done(c);
	conn_send(c, s->out_buf, len);
	/* Its completion may have come already; it is finished after the
	 * reply, whose body it cannot overtake. */
	if (fr != NULL)
		fence_run_replied(fr);
	/* A job that failed on a lost context begins the recovery; one that
	 * a recovery waited for lets it go on. */
	recover_note(s);
	/* The connection may start waiting runs again, and completions
	 * finished here have made room. */
	fairq_pump(s);
}

/* The thread pool's completion. */
static void job_after(uv_work_t *w, int status)
{
	struct job *j = container_of(w, struct job, work);

	stats_gauge_add(&j->s->stats, STATS_GAUGE_JOBS, -1);
	if (status != 0 && j->ret == 0) {
		j->ret = CEP_ECANCELED;
		snprintf(j->msg, sizeof(j->msg), "the request was canceled");
	}
	job_reply(j);
}

/* ----------------------------------------------------------------- batches */

/* How a run of j left its batch group (batch.h), on the loop. */
static void batch_member_done(struct batch_member *bm, enum batch_outcome how)
{
	struct job *j = container_of(bm, struct job, run.bm);
	struct conn *c = j->c;
	int ret;

	c->batch_waiting = false;
	if (how == BATCH_SUBMITTED) {
		j->ret = 0;
		j->run.sess->batched_runs++;
		j->run.fr->batched_in = j->run.sess->batch;
		j->run.fr->batched_lane = bm->lane;
		job_reply(j);
		return;
	}
	/* Alone, as any fenced run; for a client gone meanwhile, not at all. */
	if (c->free_deferred) {
		j->ret = CEP_ECANCELED;
		job_reply(j);
		return;
	}
	if (j->s->backend->caps & BACKEND_CAP_ASYNC) {
		cep__clear_error();
		j->ret = job_run_submit(j, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			job_reply(j);
			return;
		}
	}
	j->ret = 0;
	ret = uv_queue_work(j->s->loop, &j->work, job_work, job_after);
	if (ret == 0) {
		stats_gauge_add(&j->s->stats, STATS_GAUGE_JOBS, 1);
		return;
	}
	log_warning("uv_queue_work: %s; working on the loop", uv_strerror(ret));
	job_work(&j->work);
	job_reply(j);
}

/* Hands the fenced run of j to its session's batch group; false when it
 * is to run alone now (nothing to batch along, or the group no longer
 * merges). */
static bool batch_start(struct job *j)
{
	struct fence_run *fr = j->run.fr;
	const struct engine_input *x = &j->run.in[0];

	if (j->run.n_in == 0 || x->rank < 1)
		return false;
	j->run.bm = (struct batch_member){
		.run = { j->run.in, j->run.n_in, j->run.out, j->run.n_out, &fr->fence, &fr->er },
		.rows = x->dims[0],
		.done = batch_member_done,
	};
	return batch_add(j->run.sess->batch, &j->run.bm);
}

void dispatch_batch_drop(struct conn *c)
{
	struct job *j = c->job;

	if (!c->batch_waiting || j == NULL || !batch_member_cancel(&j->run.bm))
		return;
	c->batch_waiting = false;
	stats_count(&c->server->stats, STATS_COUNTER_BATCH_DROPPED, 1);
	log_info("client %llu session %llu: its run waiting in a batch window is dropped",
		 (unsigned long long)c->id, (unsigned long long)j->run.sess->id);
	fence_run_abort(j->run.fr);
	j->run.fr = NULL;
	c->busy = false;
}

/* Runs j: on the thread pool for a connection with a socket (the reply
 * follows from job_after()), inline for a detached one. */
static int job_start(struct job *j, struct req *r)
{
	int ret;

	if (r->c->fd >= 0) {
		ret = uv_queue_work(r->s->loop, &j->work, job_work, job_after);
		if (ret == 0) {
			r->c->busy = true;
			stats_gauge_add(&r->s->stats, STATS_GAUGE_JOBS, 1);
			return DISPATCH__DEFERRED;
		}
		log_warning("uv_queue_work: %s; working on the loop",
			    uv_strerror(ret));
	}
	job_work(&j->work);
	return job_finish(j, r);
}

void dispatch__queued_start(struct server *s, struct fence_run *fr)
{
	struct conn *c = fr->c;
	struct job *j = c->job;
	int ret;

	fence_run_submit_mark(fr);
	/* The job is free (the connection is not busy) and made: the run came
	 * through it. */
	j->s = s;
	j->c = c;
	j->req_id = fr->req_id;
	j->kind = JOB_RUN_QUEUED;
	j->ret = 0;
	j->msg[0] = '\0';
	j->start_ns = uv_hrtime();
	j->run.sess = fr->sess;
	j->run.fr = fr;
	cep__clear_error();
	ret = job_queued_submit(j, ENGINE_SUBMIT_WARM);
	if (ret == ENGINE_RUN_COLD) {
		/* Planning, a first run or a capture: off the loop. Its
		 * completion waits for queued_after(), which alone may touch
		 * the session's counters meanwhile. */
		fr->replied = false;
		ret = uv_queue_work(s->loop, &j->work, job_work, job_after);
		if (ret == 0) {
			conn_job_begin(c);
			stats_gauge_add(&s->stats, STATS_GAUGE_JOBS, 1);
			return;
		}
		log_warning("uv_queue_work: %s; working on the loop", uv_strerror(ret));
		job_work(&j->work);
		queued_after(j);
		return;
	}
	j->run.fr = NULL;
	if (ret != 0) {
		log_info("client %llu session %llu: waiting run %llu could not start: %s: %s",
			 (unsigned long long)c->id, (unsigned long long)fr->sess->id,
			 (unsigned long long)fr->seq, cep_err_name(ret), cep_last_error());
		fence_run_fail(fr, ret, cep_last_error());
	}
}

/* ---------------------------------------------------------------- handlers */

static void options_copy(struct engine_session_options *o,
			 const Cudaep__V1__SessionOptions *m)
{
	memset(o, 0, sizeof(*o));
	if (m == NULL)
		return;
	o->precision = (cep_precision)m->precision;
	o->priority = (cep_priority)m->priority;
	o->memory_limit = m->memory_limit;
}

/* Takes the session's id and table entry, and points the engine's
 * accounting at (client, session) with the client's limit in place. */
static int memory_owner_open(struct req *r, struct job *j)
{
	struct alloc_owner client = { r->c->id, 0 };
	struct session *sess;
	int ret;

	ret = access_session_admit(r->s, r->c);
	if (ret != 0)
		return ret;
	if (r->s->cfg.client_memory_limit) {
		ret = account_limit_set(r->s->account, client,
					r->s->cfg.client_memory_limit);
		if (ret != 0)
			return ret;
	}
	ret = session_table_add(&r->c->sessions, j->load.name, uv_hrtime(),
				&sess);
	if (ret != 0)
		return ret;
	j->load.session_id = sess->id;
	j->load.opts.account = r->s->account;
	j->load.opts.owner = (struct alloc_owner){ r->c->id, sess->id };
	sess->opts = j->load.opts;
	return 0;
}

int dispatch__load_model(struct req *r, const Cudaep__V1__LoadModel *m)
{
	const Cudaep__V1__RegionSlice *sl = m->region;
	struct region *reg = NULL;
	struct job *j;
	int next_fd = 0, ret;

	ret = recover_refuse(r->s, "LoadModel");
	if (ret != 0)
		return ret;
	switch (m->source) {
	case CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD:
		break;
	case CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION:
		if (sl == NULL || sl->bytes == 0)
			return cep__set_error(CEP_EINVAL, "LoadModel from a "
					      "region needs a non-empty region "
					      "slice");
		ret = region_table_get(&r->c->regions, sl->region_id, &reg);
		if (ret != 0)
			return ret;
		ret = region_slice_check(reg, sl->offset, sl->bytes, NULL);
		if (ret != 0)
			return ret;
		break;
	default:
		return cep__set_error(CEP_EINVAL, "LoadModel source %d is "
				      "neither MODEL_SOURCE_FD (0) nor "
				      "MODEL_SOURCE_REGION (1)",
				      (int)m->source);
	}
	if (m->options && m->options->precision !=
	    CUDAEP__V1__PRECISION__PRECISION_FP32 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_TF32 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_FP16 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_BF16)
		return cep__set_error(CEP_EINVAL, "unknown precision %d",
				      (int)m->options->precision);
	ret = job_get(r, JOB_LOAD, &j);
	if (ret != 0)
		return ret;
	if (reg != NULL) {
		j->load.bytes = (const uint8_t *)reg->addr + sl->offset;
		j->load.len = sl->bytes;
	} else {
		j->load.model_fd = dispatch__take_fd(r, next_fd++);
	}
	if (m->has_dir_fd)
		j->load.dir_fd = dispatch__take_fd(r, next_fd);
	dispatch__name_copy(j->load.name, sizeof(j->load.name),
			    m->options && m->options->name ? m->options->name : "");
	options_copy(&j->load.opts, m->options);
	j->load.batching = m->options != NULL && m->options->batching;
	ret = memory_owner_open(r, j);
	if (ret != 0) {
		fd_close(r->s, &j->load.model_fd);
		fd_close(r->s, &j->load.dir_fd);
		return ret;
	}
	return job_start(j, r);
}

/* Session id of the connection, which has its engine session. */
static int session_get(struct req *r, uint64_t id, struct session **out)
{
	int ret = session_table_get(&r->c->sessions, id, out);

	if (ret != 0)
		return access_session_gone(r->c, id, ret);
	if ((*out)->engine == NULL && (*out)->restore_err != 0)
		return cep__set_error((*out)->restore_err, "session %llu could not be "
				      "restored after the device context was lost (%s); "
				      "unload it and load the model again",
				      (unsigned long long)id,
				      cep_err_name((*out)->restore_err));
	if ((*out)->engine == NULL)
		return cep__set_error(CEP_EINTERNAL, "session %llu has no "
				      "model", (unsigned long long)id);
	return 0;
}

int dispatch__session_info(struct req *r, const Cudaep__V1__SessionInfo *m)
{
	Cudaep__V1__SessionInfoReply *rep = &r->body->session_info;
	struct session *sess;
	int ret;

	ret = session_get(r, m->session_id, &sess);
	if (ret != 0)
		return ret;
	ret = info_fill(r, sess, rep);
	if (ret != 0)
		return ret;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_SESSION_INFO;
	r->resp->session_info = rep;
	return 0;
}

/*
 * Checks one tensor of a Run against its region and copies it into the
 * job: the region is this connection's, the slice lies in it, and for an
 * input the bytes are exactly what dtype and shape need.
 */
static int tensor_take(struct req *r, const Cudaep__V1__TensorRef *t,
		       bool input, struct job_tensor *jt, struct region **reg)
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
		return cep__set_error(CEP_EINVAL, "%s name '%.40s...' is longer "
				      "than %zu bytes", what, name,
				      sizeof(jt->name) - 1);
	ret = region_table_get(&r->c->regions, t->region_id, reg);
	if (ret != 0)
		return cep__set_error(ret, "%s '%s': no region %llu on this "
				      "connection", what, name,
				      (unsigned long long)t->region_id);
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
	if (!input)
		return 0;
	if (esz == 0)
		return cep__set_error(CEP_EDTYPE, "input '%s': element type %d "
				      "is not one cudaep stores", name,
				      (int)t->dtype);
	if (t->n_shape > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "input '%s' has rank %zu, at "
				      "most %d is supported", name, t->n_shape,
				      CEP_MAX_RANK);
	for (k = 0; k < t->n_shape; k++) {
		if (t->shape[k] < 0)
			return cep__set_error(CEP_ESHAPE, "input '%s': dimension "
					      "%zu is %lld", name, k,
					      (long long)t->shape[k]);
		if (t->shape[k] != 0 &&
		    numel > UINT64_MAX / esz / (uint64_t)t->shape[k])
			return cep__set_error(CEP_ESHAPE, "input '%s': its shape "
					      "overflows", name);
		numel *= (uint64_t)t->shape[k];
		jt->dims[k] = t->shape[k];
	}
	if (numel * esz != t->bytes)
		return cep__set_error(CEP_ESHAPE, "input '%s' has %llu bytes, "
				      "its %s shape needs %llu", name,
				      (unsigned long long)t->bytes,
				      cep_dtype_name((cep_dtype)t->dtype),
				      (unsigned long long)(numel * esz));
	return 0;
}

/*
 * A Run with a fence: checked and queued now, answered at once with the
 * outputs' shapes; it completes later (fence.c). Its record holds the
 * session and every region it names until then. A warm plan on a backend
 * that queues work is submitted right here on the loop, which costs no
 * more than queuing; planning, first runs and the host backend's
 * computing go to the thread pool. A run over its client's bound is only
 * described (on the loop when its plan is cached, else on the pool) and
 * waits in the fair queue.
 */
static int run_fenced(struct req *r, const Cudaep__V1__Run *m, struct job *j)
{
	struct fence_run *fr;
	size_t i;
	int ret;

	ret = fence_run_open(r->s, r->c, j->run.sess, m->fence_seq, r->resp->id, &fr);
	if (ret != 0)
		return ret;
	j->kind = JOB_RUN_FENCED;
	j->run.fr = fr;
	for (i = 0; i < j->run.n_in; i++)
		fence_run_hold(fr, region_table_find(&r->c->regions, j->run.tin[i].region_id));
	for (i = 0; i < j->run.n_out; i++)
		fence_run_hold(fr, region_table_find(&r->c->regions, j->run.tout[i].region_id));
	if (fairq_must_wait(r->s, r->c)) {
		cep__clear_error();
		j->ret = engine_run_describe(j->run.sess->engine, j->run.in, j->run.n_in,
					     j->run.out, j->run.n_out, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			ret = run_wait_finish(j, r);
			goto replied;
		}
		j->kind = JOB_RUN_DESCRIBE;
		ret = job_start(j, r);
		if (ret == DISPATCH__DEFERRED)
			return ret;
		goto replied;
	}
	fence_run_submit_mark(fr);
	/* A batching session's run waits in its group's window; the reply
	 * comes when the group flushes (batch_member_done()). */
	if (r->c->fd >= 0 && j->run.sess->batch != NULL && batch_start(j)) {
		r->c->busy = true;
		r->c->batch_waiting = true;
		return DISPATCH__DEFERRED;
	}
	if (r->c->fd >= 0 && (r->s->backend->caps & BACKEND_CAP_ASYNC)) {
		cep__clear_error();
		j->ret = job_run_submit(j, ENGINE_SUBMIT_WARM);
		if (j->ret != ENGINE_RUN_COLD) {
			if (j->ret != 0)
				snprintf(j->msg, sizeof(j->msg), "%s", cep_last_error());
			ret = run_fenced_finish(j, r);
			goto replied;
		}
	}
	ret = job_start(j, r);
	if (ret == DISPATCH__DEFERRED)
		return ret;
replied:
	/* The reply is encoded as soon as this returns, and nothing finishes
	 * a run on this thread before that: job_after() does the rest when
	 * the work went to the pool. */
	if (j->run.fr != NULL)
		j->run.fr->replied = true;
	j->run.fr = NULL;
	recover_note(r->s);
	return ret;
}

#ifdef CEP_FAULT_INJECT
/* Test builds only (recover.h): the third Run request of a session named
 * RECOVER_INJECT_NAME loses the device context before it is served, so
 * that it fails with CEP_ECONTEXT and every other client's runs in flight
 * meet the loss too. */
static void fault_inject_maybe(struct server *s, struct session *sess)
{
	if (sess->run_requests != 3 || strcmp(sess->name, RECOVER_INJECT_NAME) != 0)
		return;
	log_warning("session %llu '%s': injecting a fault into the %s backend (a test "
		    "build)", (unsigned long long)sess->id, sess->name, s->backend->iface.name);
	if (backend_fault_inject(s->backend) != CEP_ECONTEXT)
		log_err("the injected fault did not lose the context: %s", cep_last_error());
}
#endif

int dispatch__run(struct req *r, const Cudaep__V1__Run *m)
{
	struct session *sess;
	struct region *reg;
	struct job *j;
	size_t i;
	int ret;

	ret = session_get(r, m->session_id, &sess);
	if (ret != 0)
		return ret;
	sess->run_requests++;
#ifdef CEP_FAULT_INJECT
	fault_inject_maybe(r->s, sess);
#endif
	ret = recover_refuse(r->s, "Run");
	if (ret != 0)
		return ret;
	if (m->n_inputs > CEP_MAX_IO || m->n_outputs > CEP_MAX_IO)
		return cep__set_error(CEP_EINVAL, "a run names at most %d "
				      "inputs and %d outputs", CEP_MAX_IO,
				      CEP_MAX_IO);
	ret = job_get(r, JOB_RUN, &j);
	if (ret != 0)
		return ret;
	j->run.sess = sess;
	j->run.fr = NULL;
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
	if (m->fence_seq != 0)
		return run_fenced(r, m, j);
	return job_start(j, r);
}

int dispatch__unload(struct req *r, const Cudaep__V1__Unload *m)
{
	Cudaep__V1__UnloadReply *rep = &r->body->unload;
	int ret;

	ret = session_table_remove(&r->c->sessions, m->session_id);
	if (ret != 0)
		return access_session_gone(r->c, m->session_id, ret);
	log_info("client %llu unloaded session %llu",
		 (unsigned long long)r->c->id, (unsigned long long)m->session_id);
	cudaep__v1__unload_reply__init(rep);
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_UNLOAD;
	r->resp->unload = rep;
	return 0;
}
