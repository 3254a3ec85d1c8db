/*
 * test_dispatch_session.c — the session requests through dispatch_packet()
 * on detached connections: LoadModel from an fd and from a region,
 * SessionInfo, Run with tensors in regions (results checked against a
 * reference computed here), the checks a Run makes before running, the
 * CEP_ENOSPC reply that tells a client the room its outputs need, and
 * Unload.
 */
#include <math.h>

#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

static struct server *srv;

/* y = relu(x @ w + b) with x: [batch, 3], w: [3, 2], b: [2]. */
static const float W[6] = {1.0f, -1.0f, 0.5f, 2.0f, -0.25f, 0.75f};
static const float B[2] = {0.1f, -0.2f};

static uint8_t *model_bytes(size_t *len)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,2");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "3,2", W);
	onnxb_init(b, "b", CEP_DTYPE_FLOAT32, "2", B);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,b", "z");
	onnxb_node(b, "Relu", "z", "y");
	return onnxb_finish(b, len);
}

static void reference(const float *x, int batch, float *y)
{
	for (int i = 0; i < batch; i++)
		for (int j = 0; j < 2; j++) {
			float acc = B[j];

			for (int k = 0; k < 3; k++)
				acc += x[i * 3 + k] * W[k * 2 + j];
			y[i * 2 + j] = acc > 0.0f ? acc : 0.0f;
		}
}

static Cudaep__V1__Response *load_fd(struct client *c, int fd)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__SessionOptions o = CUDAEP__V1__SESSION_OPTIONS__INIT;

	o.name = (char *)"mlp";
	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	m.options = &o;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(srv, c, &q, &fd, 1, NULL);
}

/* Loads the model through a memfd and returns the session id. */
static uint64_t load(struct client *c)
{
	size_t len;
	uint8_t *bytes = model_bytes(&len);
	int fd = memfd_create("model", MFD_CLOEXEC);
	Cudaep__V1__Response *r;
	uint64_t id;

	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	r = load_fd(c, fd);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_LOAD_MODEL);
	id = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert(!tu_fd_open(fd), "the model fd was kept");
	return id;
}

struct tref {
	const char *name;
	uint64_t region, offset, bytes;
	int dtype;
	int rank;
	int64_t shape[4];
};

static Cudaep__V1__Response *run(struct client *c, uint64_t sess,
				 const struct tref *in, int nin,
				 const struct tref *out, int nout)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Run m = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__TensorRef t[8], *pi[4], *po[4];

	for (int i = 0; i < nin + nout; i++) {
		const struct tref *s = i < nin ? &in[i] : &out[i - nin];

		cudaep__v1__tensor_ref__init(&t[i]);
		t[i].name = (char *)s->name;
		t[i].region_id = s->region;
		t[i].offset = s->offset;
		t[i].bytes = s->bytes;
		t[i].dtype = s->dtype;
		t[i].n_shape = (size_t)s->rank;
		t[i].shape = (int64_t *)s->shape;
		if (i < nin)
			pi[i] = &t[i];
		else
			po[i - nin] = &t[i];
	}
	m.session_id = sess;
	m.n_inputs = (size_t)nin;
	m.inputs = pi;
	m.n_outputs = (size_t)nout;
	m.outputs = po;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RUN;
	q.run = &m;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

/* The mapping of region id of c, as the daemon sees it. */
static void *region_addr(struct client *c, uint64_t id)
{
	struct region *reg = region_table_find(&c->regions, id);

	cr_assert_not_null(reg);
	return reg->addr;
}

static Cudaep__V1__Response *by_id(struct client *c,
				   Cudaep__V1__Request__BodyCase body,
				   uint64_t sess)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__SessionInfo info = CUDAEP__V1__SESSION_INFO__INIT;
	Cudaep__V1__Unload unload = CUDAEP__V1__UNLOAD__INIT;

	q.id = tu_next_id++;
	q.body_case = body;
	info.session_id = unload.session_id = sess;
	if (body == CUDAEP__V1__REQUEST__BODY_SESSION_INFO)
		q.session_info = &info;
	else
		q.unload = &unload;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

Test(dispatch_session, load_info_run_unload)
{
	struct client *c;
	Cudaep__V1__Response *r;
	Cudaep__V1__SessionInfoReply *info;
	uint64_t sess, reg;
	float *mem, want[8];
	int fds_before;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fds_before = tu_fd_count();
	sess = load(c);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_SESSIONS].current, 1);
	cr_assert_eq(tu_fd_count(), fds_before);

	r = by_id(c, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sess);
	tu_expect_ok(r);
	info = r->session_info;
	cr_assert_str_eq(info->name, "mlp");
	cr_assert_eq(info->n_inputs, 1);
	cr_assert_eq(info->n_outputs, 1);
	cr_assert_str_eq(info->inputs[0]->name, "x");
	cr_assert_eq(info->inputs[0]->dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(info->inputs[0]->n_shape, 2);
	cr_assert_eq(info->inputs[0]->shape[0]->kind_case, CUDAEP__V1__DIM__KIND_PARAM);
	cr_assert_str_eq(info->inputs[0]->shape[0]->param, "batch");
	cr_assert_eq(info->inputs[0]->shape[1]->kind_case, CUDAEP__V1__DIM__KIND_VALUE);
	cr_assert_eq(info->inputs[0]->shape[1]->value, 3);
	cudaep__v1__response__free_unpacked(r, NULL);

	reg = tu_region(srv, c, 4096);
	mem = region_addr(c, reg);
	for (int i = 0; i < 12; i++)
		mem[i] = (float)(i % 5) - 1.5f;
	reference(mem, 4, want);
	{
		struct tref in = {"x", reg, 0, 48, CEP_DTYPE_FLOAT32, 2, {4, 3}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		r = run(c, sess, &in, 1, &out, 1);
	}
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_RUN);
	cr_assert_eq(r->run->n_outputs, 1);
	cr_assert_str_eq(r->run->outputs[0]->name, "y");
	cr_assert_eq(r->run->outputs[0]->region_id, reg);
	cr_assert_eq(r->run->outputs[0]->offset, 1024);
	cr_assert_eq(r->run->outputs[0]->bytes, 32);
	cr_assert_eq(r->run->outputs[0]->dtype, CEP_DTYPE_FLOAT32);
	cr_assert_eq(r->run->outputs[0]->n_shape, 2);
	cr_assert_eq(r->run->outputs[0]->shape[0], 4);
	cr_assert_eq(r->run->outputs[0]->shape[1], 2);
	cudaep__v1__response__free_unpacked(r, NULL);
	for (int i = 0; i < 8; i++)
		cr_expect(fabsf(mem[256 + i] - want[i]) < 1e-6f,
			  "y[%d] = %g, want %g", i, mem[256 + i], want[i]);
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_RUNS], 1);

	r = by_id(c, CUDAEP__V1__REQUEST__BODY_UNLOAD, sess);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	tu_expect_error(by_id(c, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sess),
			CEP_ENOENT, "no session");
	server_free(srv);
}

Test(dispatch_session, run_checks_name_the_tensor)
{
	struct client *c;
	uint64_t sess, reg;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	sess = load(c);
	reg = tu_region(srv, c, 4096);
	{
		struct tref in = {"x", 999, 0, 48, CEP_DTYPE_FLOAT32, 2, {4, 3}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_ENOENT,
				"input 'x': no region 999");
	}
	{
		struct tref in = {"x", reg, 4090, 48, CEP_DTYPE_FLOAT32, 2, {4, 3}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_EBOUNDS,
				"input 'x'");
	}
	{
		struct tref in = {"x", reg, 0, 44, CEP_DTYPE_FLOAT32, 2, {4, 3}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_ESHAPE,
				"input 'x' has 44 bytes");
	}
	{
		struct tref in = {"x", reg, 0, 64, CEP_DTYPE_FLOAT32, 2, {4, 4}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_ESHAPE,
				"dimension 1 is 4, the model wants 3");
	}
	{
		struct tref in = {"x", reg, 0, 96, CEP_DTYPE_INT64, 2, {4, 3}};
		struct tref out = {"y", reg, 1024, 64, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_EDTYPE,
				"input 'x' is int64");
	}
	{
		struct tref in = {"x", reg, 0, 48, CEP_DTYPE_FLOAT32, 2, {4, 3}};
		struct tref out = {"y", reg, 4000, 200, 0, 0, {0}};

		tu_expect_error(run(c, sess, &in, 1, &out, 1), CEP_EBOUNDS,
				"output 'y'");
	}
	server_free(srv);
}

/* Too little room for an output: CEP_ENOSPC, and the reply still says the
 * shape and bytes each output needs, so the client can make room. */
Test(dispatch_session, small_output_reports_the_room_needed)
{
	struct tref in = {"x", 0, 0, 120, CEP_DTYPE_FLOAT32, 2, {10, 3}};
	struct tref out = {"y", 0, 1024, 16, 0, 0, {0}};
	Cudaep__V1__Response *r;
	struct client *c;
	uint64_t sess;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	sess = load(c);
	in.region = out.region = tu_region(srv, c, 4096);
	r = run(c, sess, &in, 1, &out, 1);
	cr_assert_eq(r->status->code, CEP_ENOSPC, "%s", r->status->message);
	cr_assert_not_null(strstr(r->status->message, "needs 80 bytes"), "%s",
			   r->status->message);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_RUN);
	cr_assert_eq(r->run->outputs[0]->bytes, 80);
	cr_assert_eq(r->run->outputs[0]->shape[0], 10);
	cr_assert_eq(r->run->outputs[0]->shape[1], 2);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_RUN_ERRORS], 1);
	server_free(srv);
}

Test(dispatch_session, sessions_are_per_connection)
{
	struct client *a, *b;
	uint64_t sess;

	srv = tu_server(NULL);
	a = tu_conn(srv, 40001);
	b = tu_conn(srv, 40002);
	tu_hello(srv, a);
	tu_hello(srv, b);
	sess = load(a);
	tu_expect_error(by_id(b, CUDAEP__V1__REQUEST__BODY_UNLOAD, sess),
			CEP_ENOENT, "no session");
	tu_expect_error(by_id(b, CUDAEP__V1__REQUEST__BODY_SESSION_INFO, sess),
			CEP_ENOENT, "no session");
	/* Tearing the owner down unloads it. */
	client_close(a);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	server_free(srv);
}

Test(dispatch_session, bad_models_are_clear_errors)
{
	static const char junk[] = "\x0a\xff\xff\xff\xff\x0f not a model";
	struct client *c;
	int fd;

	srv = tu_server(NULL);
	c = tu_conn(srv, 40001);
	tu_hello(srv, c);
	fd = memfd_create("junk", MFD_CLOEXEC);
	cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	tu_expect_error(load_fd(c, fd), CEP_EMODEL, "ONNX");
	cr_assert(!tu_fd_open(fd));
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_MODEL_LOAD_ERRORS], 1);
	cr_assert_eq(srv->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	server_free(srv);
}
