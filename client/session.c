/*
 * session.c — sessions of libcudaep-client: load an ONNX model into cudaepd
 * (the file and its directory travel as fds, so the daemon never opens a
 * path on a client's behalf), keep the model's input and output list, and
 * unload. The tensor lists arrive as repeated fields that nanopb hands to
 * callbacks here (cudaep.options), which copy them into heap arrays owned
 * by the session; loading is not the hot path. Above the transport
 * (conn.c) only; cep_close() (client.c) drops the ones left.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pb_decode.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A growing array of tensor infos, filled while a reply is decoded. */
struct tensor_list {
	cep_tensor_info *items; /* (cap) */
	int count;
	int cap;
	int *err;               /* where a failure to grow is recorded */
};

/* What the decode callbacks of one load reply write into. */
struct load_lists {
	struct tensor_list inputs;
	struct tensor_list outputs;
	int err;                /* 0, or CEP_ENOMEM */
};

/* ----------------------------------------------------------- decoding */

static void info_from_wire(cep_tensor_info *dst, const cudaep_v1_TensorInfo *src)
{
	memset(dst, 0, sizeof(*dst));
	snprintf(dst->name, sizeof(dst->name), "%s", src->name);
	dst->dtype = (cep_dtype)src->dtype;
	dst->rank = (int)src->shape_count;
	for (int i = 0; i < dst->rank; i++) {
		const cudaep_v1_Dim *d = &src->shape[i];

		dst->dims[i] = -1;
		if (d->which_kind == cudaep_v1_Dim_value_tag && d->kind.value >= 0)
			dst->dims[i] = d->kind.value;
		else if (d->which_kind == cudaep_v1_Dim_param_tag)
			snprintf(dst->dim_params[i], sizeof(dst->dim_params[i]),
				 "%s", d->kind.param);
	}
}

/* Called by nanopb once per element of SessionInfoReply.inputs/outputs. */
static bool tensor_list_decode(pb_istream_t *stream, const pb_field_t *field,
			       void **arg)
{
	struct tensor_list *l = *arg;
	cudaep_v1_TensorInfo ti = cudaep_v1_TensorInfo_init_zero;

	if (!pb_decode(stream, cudaep_v1_TensorInfo_fields, &ti))
		return false;
	if (l->count == l->cap) {
		int cap = l->cap != 0 ? 2 * l->cap : 4;
		cep_tensor_info *items;

		items = reallocarray(l->items, (size_t)cap, sizeof(*items));
		if (items == NULL) {
			*l->err = CEP_ENOMEM;
			return false;
		}
		l->items = items;
		l->cap = cap;
	}
	info_from_wire(&l->items[l->count++], &ti);
	return true;
}

/* Response.cb_body: nanopb has just zeroed the body it is about to decode;
 * point that body's tensor lists at ours. */
static bool body_prepare(pb_istream_t *stream, const pb_field_t *field,
			 void **arg)
{
	struct load_lists *lists = *arg;
	cudaep_v1_SessionInfoReply *info;

	if (field->tag == cudaep_v1_Response_load_model_tag)
		info = &((cudaep_v1_LoadModelReply *)field->pData)->info;
	else if (field->tag == cudaep_v1_Response_session_info_tag)
		info = field->pData;
	else
		return true;
	info->inputs.funcs.decode = tensor_list_decode;
	info->inputs.arg = &lists->inputs;
	info->outputs.funcs.decode = tensor_list_decode;
	info->outputs.arg = &lists->outputs;
	return true;
}

/* ------------------------------------------------------------ loading */

static int options_check(const cep_session_options *opts)
{
	if (opts == NULL)
		return 0;
	if ((unsigned)opts->precision > CEP_PRECISION_BF16)
		return cep__set_error(CEP_EINVAL, "unknown precision %d",
				      (int)opts->precision);
	if ((unsigned)opts->priority > CEP_PRIORITY_LOW)
		return cep__set_error(CEP_EINVAL, "unknown priority %d",
				      (int)opts->priority);
	if (opts->name != NULL && strlen(opts->name) >= CEP_MAX_OBJ_NAME)
		return cep__set_error(CEP_ENAMETOOLONG,
				      "session name '%s' is longer than %d bytes",
				      opts->name, CEP_MAX_OBJ_NAME - 1);
	return 0;
}

/* Loads with the fds given; name is the session's name (truncated to fit
 * when it is a default taken from the file name). */
static int session_load(cep_client *c, int model_fd, int dir_fd,
			const cep_session_options *opts, const char *name,
			cep_session **out)
{
	struct load_lists lists = {.err = 0};
	cudaep_v1_Request *req;
	cudaep_v1_LoadModel *lm;
	const cudaep_v1_LoadModelReply *reply;
	int fds[2] = {model_fd, dir_fd};
	cep_session *s = NULL;
	int ret;

	lists.inputs.err = &lists.err;
	lists.outputs.err = &lists.err;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "cannot allocate a session");
		goto out;
	}
	s->client = c;

	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, load_model);
	lm = &req->body.load_model;
	lm->source = cudaep_v1_ModelSource_MODEL_SOURCE_FD;
	lm->has_dir_fd = dir_fd >= 0;
	lm->has_options = true;
	snprintf(lm->options.name, sizeof(lm->options.name), "%s", name);
	if (opts != NULL) {
		lm->options.precision = (cudaep_v1_Precision)opts->precision;
		lm->options.priority = (cudaep_v1_Priority)opts->priority;
		lm->options.memory_limit = opts->memory_limit;
		lm->options.batching = opts->batching != 0;
	}
	c->conn.resp->cb_body.funcs.decode = body_prepare;
	c->conn.resp->cb_body.arg = &lists;
	ret = cep__conn_call(&c->conn, req, fds, dir_fd >= 0 ? 2 : 1,
			     c->conn.resp, cudaep_v1_Response_load_model_tag);
	c->conn.resp->cb_body.funcs.decode = NULL;
	c->conn.resp->cb_body.arg = NULL;
	reply = &c->conn.resp->body.load_model;
	if (lists.err != 0)
		ret = cep__set_error(lists.err,
				     "cannot allocate the model's tensor list");
	else if (ret == 0 && !reply->has_info)
		ret = cep__set_error(CEP_EPROTO,
				     "cudaepd's load reply lacks the session");
	if (ret == 0) {
		s->id = reply->info.session_id;
		s->inputs = lists.inputs.items;
		s->n_inputs = lists.inputs.count;
		s->outputs = lists.outputs.items;
		s->n_outputs = lists.outputs.count;
		lists.inputs.items = NULL;
		lists.outputs.items = NULL;
		cep__link_add(&c->sessions, &s->link);
	}
	pthread_mutex_unlock(&c->conn.lock);
	if (ret != 0)
		goto out;
	*out = s;
	s = NULL;
	ret = 0;
out:
	free(lists.inputs.items);
	free(lists.outputs.items);
	free(s);
	return ret;
}

static int load_args_check(cep_client *c, const cep_session_options *opts,
			   cep_session **out)
{
	if (c == NULL || out == NULL)
		return cep__set_error(CEP_EINVAL,
				      "cep_session_load: NULL argument");
	*out = NULL;
	return options_check(opts);
}

int cep_session_load(cep_client *c, const char *path,
		     const cep_session_options *opts, cep_session **out)
{
	char dir[PATH_MAX];
	const char *slash, *base;
	struct stat st;
	int model_fd = -1;
	int dir_fd = -1;
	int ret, err;

	ret = load_args_check(c, opts, out);
	if (ret != 0)
		return ret;
	if (path == NULL)
		return cep__set_error(CEP_EINVAL, "cep_session_load: path is NULL");
	if (strlen(path) >= sizeof(dir))
		return cep__set_error(CEP_ENAMETOOLONG, "model path too long");

	slash = strrchr(path, '/');
	if (slash == NULL) {
		snprintf(dir, sizeof(dir), ".");
		base = path;
	} else {
		/* "/m.onnx" lives in "/", not in "". */
		size_t n = slash == path ? 1 : (size_t)(slash - path);

		memcpy(dir, path, n);
		dir[n] = '\0';
		base = slash + 1;
	}
	model_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (model_fd < 0) {
		err = errno;
		ret = cep__set_error(cep__from_errno(err),
				     "cannot open model %s: %s", path,
				     strerror(err));
		goto out;
	}
	if (fstat(model_fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = cep__set_error(CEP_EINVAL,
				     "model %s is a directory, not a file", path);
		goto out;
	}
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		err = errno;
		ret = cep__set_error(cep__from_errno(err),
				     "cannot open directory %s of model %s: %s",
				     dir, path, strerror(err));
		goto out;
	}
	ret = session_load(c, model_fd, dir_fd, opts,
			   opts != NULL && opts->name != NULL ? opts->name : base,
			   out);
out:
	if (dir_fd >= 0)
		close(dir_fd);
	if (model_fd >= 0)
		close(model_fd);
	return ret;
}

int cep_session_load_fd(cep_client *c, int model_fd, int dir_fd,
			const cep_session_options *opts, cep_session **out)
{
	char link[32];
	char target[PATH_MAX];
	const char *name = "";
	ssize_t n;
	int ret;

	ret = load_args_check(c, opts, out);
	if (ret != 0)
		return ret;
	if (model_fd < 0)
		return cep__set_error(CEP_EBADF, "model fd %d", model_fd);
	if (dir_fd < -1)
		return cep__set_error(CEP_EBADF, "directory fd %d", dir_fd);
	if (opts != NULL && opts->name != NULL) {
		name = opts->name;
	} else {
		/* The default name is the file's, as the kernel knows it. */
		snprintf(link, sizeof(link), "/proc/self/fd/%d", model_fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			const char *slash;

			target[n] = '\0';
			slash = strrchr(target, '/');
			name = slash != NULL ? slash + 1 : target;
		}
	}
	return session_load(c, model_fd, dir_fd, opts, name, out);
}

/* ----------------------------------------------------------- releasing */

void cep__session_drop(struct cep_session *s)
{
	free(s->inputs);
	free(s->outputs);
	free(s);
}

int cep_session_free(cep_session *s)
{
	cep_client *c;
	cudaep_v1_Request *req;
	int ret;

	if (s == NULL)
		return 0;
	c = s->client;
	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, unload);
	req->body.unload.session_id = s->id;
	/* The reply body is empty: any body, or none, will do. */
	ret = cep__conn_call(&c->conn, req, NULL, 0, c->conn.resp, 0);
	cep__link_del(&s->link);
	pthread_mutex_unlock(&c->conn.lock);
	cep__session_drop(s);
	return ret;
}

/* ---------------------------------------------------------- accessors */

uint64_t cep_session_id(const cep_session *s)
{
	return s != NULL ? s->id : 0;
}

int cep_session_input_count(const cep_session *s)
{
	return s != NULL ? s->n_inputs : 0;
}

int cep_session_output_count(const cep_session *s)
{
	return s != NULL ? s->n_outputs : 0;
}

const cep_tensor_info *cep_session_input(const cep_session *s, int i)
{
	if (s == NULL || i < 0 || i >= s->n_inputs)
		return NULL;
	return &s->inputs[i];
}

const cep_tensor_info *cep_session_output(const cep_session *s, int i)
{
	if (s == NULL || i < 0 || i >= s->n_outputs)
		return NULL;
	return &s->outputs[i];
}
