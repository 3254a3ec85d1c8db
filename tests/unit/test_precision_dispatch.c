/*
 * test_precision_dispatch.c — session precision through the daemon's
 * requests on detached connections: LoadModel with precision fp32, tf32,
 * fp16 and bf16 of one file, whose sessions coexist; the Sessions reply
 * says each one's precision; the "shared" weights in the Memory reply
 * grow by half the float32 bytes for the first fp16 session and by
 * nothing for a second one or a tf32 one; an unknown precision is refused
 * by name.
 *
 * The server's host backend is swapped for one that uploads weights as a
 * GPU backend does, so that weights take arena memory here.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

static struct server *srv;

#define ROWS 64
#define COLS 1024
static float table[ROWS * COLS];

/* y = relu(x @ w), w [64, 1024]: 256 KiB of float32 weights. */
static uint8_t *model_bytes(size_t *len)
{
	struct onnxb *b = onnxb_new(13);
	size_t i;

	for (i = 0; i < ROWS * COLS; i++)
		table[i] = (float)(i % 13) * 0.01f - 0.06f;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,1024");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "64,1024", table);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Relu", "h", "y");
	return onnxb_finish(b, len);
}

static Cudaep__V1__Response *load(struct client *c, int precision)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__SessionOptions o = CUDAEP__V1__SESSION_OPTIONS__INIT;
	size_t len;
	uint8_t *bytes = model_bytes(&len);
	int fd = memfd_create("model", MFD_CLOEXEC);

	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	o.precision = (Cudaep__V1__Precision)precision;
	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	m.options = &o;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	return tu_call(srv, c, &q, &fd, 1, NULL);
}

static uint64_t load_ok(struct client *c, int precision)
{
	Cudaep__V1__Response *r = load(c, precision);
	uint64_t id;

	tu_expect_ok(r);
	id = r->load_model->info->session_id;
	cr_assert_eq(r->load_model->info->inputs[0]->dtype, CUDAEP__V1__DATA_TYPE__DT_FLOAT,
		     "the interface stays float32");
	cr_assert_eq(r->load_model->info->outputs[0]->dtype, CUDAEP__V1__DATA_TYPE__DT_FLOAT);
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

/* current of ("shared", "weights") in the Memory reply. */
static uint64_t shared_weights(struct client *asker)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__MemoryRequest mem = CUDAEP__V1__MEMORY_REQUEST__INIT;
	Cudaep__V1__Response *r;
	uint64_t v = 0;
	size_t i;

	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_MEMORY;
	q.memory = &mem;
	r = tu_call(srv, asker, &q, NULL, 0, NULL);
	tu_expect_ok(r);
	for (i = 0; i < r->memory->n_entries; i++) {
		const Cudaep__V1__MemoryEntry *e = r->memory->entries[i];

		if (strcmp(e->owner, "shared") == 0 && strcmp(e->role, "weights") == 0)
			v = e->current;
	}
	cudaep__v1__response__free_unpacked(r, NULL);
	return v;
}

/* The precision the Sessions reply gives session id, -1 if not listed. */
static int listed_precision(struct client *asker, uint64_t id)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__SessionsRequest sr = CUDAEP__V1__SESSIONS_REQUEST__INIT;
	Cudaep__V1__Response *r;
	int p = -1;
	size_t i;

	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_SESSIONS;
	q.sessions = &sr;
	r = tu_call(srv, asker, &q, NULL, 0, NULL);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_SESSIONS);
	for (i = 0; i < r->sessions->n_sessions; i++) {
		if (r->sessions->sessions[i]->session_id == id)
			p = (int)r->sessions->sessions[i]->precision;
	}
	cudaep__v1__response__free_unpacked(r, NULL);
	return p;
}

Test(precision_dispatch, sessions_of_each_precision_coexist_and_fp16_weights_are_half)
{
	struct client *a, *b, *c, *root;
	uint64_t s32, stf, s16a, s16b, sbf, w32;
	struct backend *be;

	srv = tu_server(NULL);
	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	server_backend_replace(srv, be);
	a = tu_conn(srv, 42001);
	b = tu_conn(srv, 42002);
	c = tu_conn(srv, 42003);
	root = tu_conn(srv, 0);
	tu_hello(srv, a);
	tu_hello(srv, b);
	tu_hello(srv, c);
	tu_hello(srv, root);

	s32 = load_ok(a, CUDAEP__V1__PRECISION__PRECISION_FP32);
	w32 = shared_weights(root);
	cr_assert_geq(w32, sizeof(table));
	stf = load_ok(b, CUDAEP__V1__PRECISION__PRECISION_TF32);
	cr_assert_eq(shared_weights(root), w32, "tf32 shares the fp32 model and weights");
	s16a = load_ok(b, CUDAEP__V1__PRECISION__PRECISION_FP16);
	cr_assert_eq(shared_weights(root), w32 + w32 / 2, "fp16 weights take half the bytes");
	s16b = load_ok(c, CUDAEP__V1__PRECISION__PRECISION_FP16);
	cr_assert_eq(shared_weights(root), w32 + w32 / 2, "two fp16 sessions share theirs");
	sbf = load_ok(c, CUDAEP__V1__PRECISION__PRECISION_BF16);
	cr_assert_eq(shared_weights(root), w32 + w32, "bf16 has a copy of its own");

	cr_assert_eq(listed_precision(root, s32), CUDAEP__V1__PRECISION__PRECISION_FP32);
	cr_assert_eq(listed_precision(root, stf), CUDAEP__V1__PRECISION__PRECISION_TF32);
	cr_assert_eq(listed_precision(root, s16a), CUDAEP__V1__PRECISION__PRECISION_FP16);
	cr_assert_eq(listed_precision(c, s16b), CUDAEP__V1__PRECISION__PRECISION_FP16);
	cr_assert_eq(listed_precision(c, sbf), CUDAEP__V1__PRECISION__PRECISION_BF16);

	tu_expect_error(load(a, 7), CEP_EINVAL, "unknown precision 7");
	server_free(srv);
}
