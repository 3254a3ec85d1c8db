/*
 * dispatch_load.c — the session requests but Run: LoadModel, SessionInfo
 * and Unload, and a session's reopening in a new image after a handover.
 *
 * A LoadModel takes its session id on the loop, before the work, so that
 * the engine charges the session's memory to (client, session) in the
 * account from the first byte; the session sits in the table without an
 * engine until the load finishes, and leaves it if the load fails. The
 * reading, parsing and weight upload run as the client's job on the
 * thread pool (inline for a detached client). Models come from the model
 * cache, so a file loaded twice is parsed once and its device weights are
 * shared.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/account.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/batch.h"
#include "daemon/client.h"
#include "daemon/config.h"
#include "daemon/dispatch_priv.h"
#include "daemon/recover.h"
#include "gpu/backend.h"

/* Protobuf messages cannot exceed 2 GiB; larger models keep their weights
 * as external data. */
#define MODEL_MAX_BYTES ((uint64_t)INT32_MAX)

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
		return cep__set_error(cep__from_errno(errno), "model fd: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cep__set_error(CEP_EINVAL, "the model fd is not a regular file");
	if (st.st_size <= 0)
		return cep__set_error(CEP_EMODEL, "the model file is empty");
	if ((uint64_t)st.st_size > MODEL_MAX_BYTES)
		return cep__set_error(CEP_ELIMIT, "the model file has %lld bytes; an ONNX file "
				      "holds at most 2 GiB, larger models keep their weights "
				      "as external data", (long long)st.st_size);
	size = (size_t)st.st_size;
	buf = malloc(size);
	if (buf == NULL)
		return cep__set_error(CEP_ENOMEM, "no memory to read a model of %zu bytes",
				      size);
	while (got < size) {
		n = pread(fd, buf + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return cep__set_error(n < 0 ? cep__from_errno(errno) : CEP_EMODEL,
					      "reading the model file: %s",
					      n < 0 ? strerror(errno) : "it shrank while read");
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
	struct engine_precision_stats st;

	if (engine_model_precision(m) == CEP_PRECISION_FP32)
		return;
	engine_model_precision_stats(m, &st);
	log_info("client %llu: session %llu runs in %s: %d nodes in half, %d kept in "
		 "float32%s%s%s, %d casts added", (unsigned long long)j->c->id,
		 (unsigned long long)j->load.session_id,
		 engine_precision_name(engine_model_precision(m)), st.half_nodes, st.float_nodes,
		 st.float_nodes ? " (the first: " : "", st.first_float,
		 st.float_nodes ? ")" : "", st.casts);
}

static void load_work(struct job *j)
{
	const struct engine_model_options mo = {
		.precision = j->load.opts.precision,
		.backend = j->d->backend->kind,
	};
	engine_model *m = NULL;
	void *owned = NULL;
	const void *bytes = j->load.bytes;
	size_t len = j->load.len;
	bool shared = false;
	int ret;

	if (j->load.model_fd >= 0) {
		ret = model_read(j->load.model_fd, &owned, &len);
		if (ret != 0) {
			j->ret = ret;
			return;
		}
		bytes = owned;
	}
	ret = engine_model_load_shared(j->d->models, bytes, len, j->load.dir_fd, &mo, &m,
				       &shared);
	free(owned);
	if (ret != 0) {
		j->ret = ret;
		return;
	}
	if (shared)
		log_debug("client %llu: the model of session %llu is already loaded; sharing "
			  "it", (unsigned long long)j->c->id,
			  (unsigned long long)j->load.session_id);
	else
		precision_log(j, m);
	j->ret = engine_session_new(m, j->d->backend, &j->load.opts, &j->load.es);
	engine_model_unref(m);
}

/* --------------------------------------------------------------- replies */

static Cudaep__V1__TensorInfo *tensor_info(struct req *r, const struct engine_tensor_info *t)
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
		Cudaep__V1__Dim *dm = reqarena_alloc(r->arena, sizeof(*dm));

		if (dm == NULL)
			return NULL;
		cudaep__v1__dim__init(dm);
		if (t->dims[k] >= 0) {
			dm->kind_case = CUDAEP__V1__DIM__KIND_VALUE;
			dm->value = t->dims[k];
		} else {
			dm->kind_case = CUDAEP__V1__DIM__KIND_PARAM;
			dm->param = (char *)(t->dim_params[k] ? t->dim_params[k] : "");
		}
		dims[k] = dm;
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
	return cep__set_error(CEP_ENOMEM, "out of request memory describing session %llu",
			      (unsigned long long)sess->id);
}

/* Puts a session that asked for batching into its model's group. One
 * whose model cannot batch runs alone, which the log says. */
static void batching_open(struct dispatch *d, struct client *c, struct session *sess)
{
	int ret;

	/* Detached clients (tests) run inline: nothing to wait with. */
	if (d->loop == NULL || c->conn.fd < 0)
		return;
	ret = batch_group_get(d->batches, sess->engine, sess->opts.priority, &sess->batch);
	if (ret != 0) {
		log_notice("client %llu session %llu asked for batching; its runs go alone: %s",
			   (unsigned long long)c->id, (unsigned long long)sess->id,
			   cep_last_error());
		return;
	}
	log_info("client %llu session %llu: its runs may be merged with other batching "
		 "sessions' runs of its model", (unsigned long long)c->id,
		 (unsigned long long)sess->id);
}

static int load_finish(struct job *j, struct req *r)
{
	Cudaep__V1__LoadModelReply *rep = &r->body->load_model;
	Cudaep__V1__SessionInfoReply *info;
	struct session *sess;
	int ret = j->ret;

	dispatch__fd_close(j->d, &j->load.model_fd);
	dispatch__fd_close(j->d, &j->load.dir_fd);
	sess = session_table_find(&j->c->sessions, j->load.session_id);
	if (ret == 0 && sess == NULL) {
		snprintf(j->msg, sizeof(j->msg), "session %llu went away while loading",
			 (unsigned long long)j->load.session_id);
		ret = CEP_EINTERNAL;
	}
	if (ret != 0) {
		engine_session_free(j->load.es);
		j->load.es = NULL;
		if (sess != NULL)
			(void)session_table_remove(&j->c->sessions, sess->id);
		stats_count(j->d->stats, STATS_COUNTER_MODEL_LOAD_ERRORS, 1);
		log_info("client %llu: model load failed: %s: %s", (unsigned long long)j->c->id,
			 cep_err_name(ret), j->msg);
		return cep__set_error(ret, "%s", j->msg);
	}
	sess->engine = j->load.es;
	sess->loaded_ns = uv_hrtime();
	j->load.es = NULL;
	if (j->load.batching)
		batching_open(j->d, j->c, sess);
	log_info("client %llu loaded session %llu '%s': %d nodes, %.1f ms",
		 (unsigned long long)j->c->id, (unsigned long long)sess->id, sess->name,
		 engine_model_node_count(engine_session_model(sess->engine)),
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

/* The end of a load's work on the loop. */
static void load_after(struct job *j)
{
	struct client *c = j->c;

	if (c->life != CLIENT_LIVE) {
		/* The client is gone: drop what the job made, reply to no one. */
		dispatch__fd_close(j->d, &j->load.model_fd);
		dispatch__fd_close(j->d, &j->load.dir_fd);
		engine_session_free(j->load.es);
		j->load.es = NULL;
		access_kill_finish(c);
		client_work_end(c);
		recover_note(j->d->recover);
		return;
	}
	dispatch__job_reply(j, load_finish);
}

/* --------------------------------------------------------------- handlers */

static void options_copy(struct engine_session_options *o, const Cudaep__V1__SessionOptions *m)
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
	struct dispatch *d = r->d;
	struct alloc_owner client = { r->c->id, 0 };
	struct session *sess;
	int ret;

	ret = access_session_admit(d->access, r->c);
	if (ret != 0)
		return ret;
	if (d->cfg->client_memory_limit) {
		ret = account_limit_set(d->account, client, d->cfg->client_memory_limit);
		if (ret != 0)
			return ret;
	}
	ret = session_table_add(&r->c->sessions, j->load.name, uv_hrtime(), &sess);
	if (ret != 0)
		return ret;
	j->load.session_id = sess->id;
	j->load.opts.account = d->account;
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

	ret = recover_refuse(r->d->recover, "LoadModel");
	if (ret != 0)
		return ret;
	switch (m->source) {
	case CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD:
		break;
	case CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_REGION:
		if (sl == NULL || sl->bytes == 0)
			return cep__set_error(CEP_EINVAL, "LoadModel from a region needs a "
					      "non-empty region slice");
		ret = region_table_get(&r->c->regions, sl->region_id, &reg);
		if (ret != 0)
			return ret;
		ret = region_slice_check(reg, sl->offset, sl->bytes, NULL);
		if (ret != 0)
			return ret;
		break;
	default:
		return cep__set_error(CEP_EINVAL, "LoadModel source %d is neither "
				      "MODEL_SOURCE_FD (0) nor MODEL_SOURCE_REGION (1)",
				      (int)m->source);
	}
	if (m->options && m->options->precision != CUDAEP__V1__PRECISION__PRECISION_FP32 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_TF32 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_FP16 &&
	    m->options->precision != CUDAEP__V1__PRECISION__PRECISION_BF16)
		return cep__set_error(CEP_EINVAL, "unknown precision %d",
				      (int)m->options->precision);
	ret = dispatch__job_get(r->d, r->c, r->resp->id, JOB_LOAD, &j);
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
		dispatch__fd_close(r->d, &j->load.model_fd);
		dispatch__fd_close(r->d, &j->load.dir_fd);
		return ret;
	}
	j->work_fn = load_work;
	j->after_fn = load_after;
	if (r->c->conn.fd >= 0 && dispatch__job_queue(j) == 0)
		return DISPATCH__DEFERRED;
	dispatch__job_inline(j);
	return load_finish(j, r);
}

int dispatch__session_info(struct req *r, const Cudaep__V1__SessionInfo *m)
{
	Cudaep__V1__SessionInfoReply *rep = &r->body->session_info;
	struct session *sess;
	int ret;

	ret = dispatch__session_get(r->c, m->session_id, &sess);
	if (ret != 0)
		return ret;
	ret = info_fill(r, sess, rep);
	if (ret != 0)
		return ret;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_SESSION_INFO;
	r->resp->session_info = rep;
	return 0;
}

int dispatch__unload(struct req *r, const Cudaep__V1__Unload *m)
{
	Cudaep__V1__UnloadReply *rep = &r->body->unload;
	int ret;

	ret = session_table_remove(&r->c->sessions, m->session_id);
	if (ret != 0)
		return access_session_gone(r->c, m->session_id, ret);
	log_info("client %llu unloaded session %llu", (unsigned long long)r->c->id,
		 (unsigned long long)m->session_id);
	cudaep__v1__unload_reply__init(rep);
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_UNLOAD;
	r->resp->unload = rep;
	return 0;
}

/* ---------------------------------------------------------------- handover */

int dispatch_session_reopen(struct dispatch *d, struct client *c, struct session *sess,
			    struct handover *h, const HvSession *hs)
{
	struct engine_model_options mo = {
		.precision = sess->opts.precision,
		.backend = d->backend->kind,
	};
	engine_model *m = NULL;
	const void *bytes;
	size_t len;
	bool shared;
	int dir_fd, ret;

	sess->opts.account = d->account;
	sess->opts.owner = (struct alloc_owner){ c->id, sess->id };
	ret = access_session_admit(d->access, c);
	if (ret == 0 && d->cfg->client_memory_limit != 0)
		ret = account_limit_set(d->account, (struct alloc_owner){ c->id, 0 },
					d->cfg->client_memory_limit);
	if (ret == 0)
		ret = handover_model_get(h, hs->model, &bytes, &len, &dir_fd);
	if (ret == 0)
		ret = engine_model_load_shared(d->models, bytes, len, dir_fd, &mo, &m, &shared);
	if (ret == 0)
		ret = engine_session_new(m, d->backend, &sess->opts, &sess->engine);
	engine_model_unref(m);
	if (ret != 0)
		return ret;
	engine_session_stats(sess->engine, &sess->stats);
	if (!hs->batching)
		return 0;
	ret = batch_group_get(d->batches, sess->engine, sess->opts.priority, &sess->batch);
	if (ret != 0)
		log_notice("client %llu session %llu: its batch group could not be made again; "
			   "its runs go alone: %s", (unsigned long long)c->id,
			   (unsigned long long)sess->id, cep_last_error());
	return 0;
}
