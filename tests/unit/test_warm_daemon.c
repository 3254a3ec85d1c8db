/*
 * test_warm_daemon.c — "the warm path allocates nothing" for a whole Run
 * request through cudaepd's dispatch: decoding into the request arena, the
 * checks against the regions, the connection's job, the engine run and the
 * encoded reply. A detached connection runs the job inline, on this
 * thread, so malloc_count.h sees every allocation the request makes.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/malloc_count.h"
#include "tests/unit/onnxb.h"

static uint8_t *model(size_t *len)
{
	static const float w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,3", w);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Relu", "h", "y");
	return onnxb_finish(b, len);
}

/* A packed Run request for x: [batch, 4] at offset 0 and y at 4096. */
static size_t run_packet(uint64_t sess, uint64_t reg, int64_t batch,
			 uint8_t *buf)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Run m = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__TensorRef in = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef out = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef *pin = &in, *pout = &out;
	int64_t shape[2] = {batch, 4};

	in.name = (char *)"x";
	in.region_id = reg;
	in.bytes = (uint64_t)batch * 16;
	in.dtype = CUDAEP__V1__DATA_TYPE__DT_FLOAT;
	in.n_shape = 2;
	in.shape = shape;
	out.name = (char *)"y";
	out.region_id = reg;
	out.offset = 4096;
	out.bytes = 4096;
	m.session_id = sess;
	m.n_inputs = 1;
	m.inputs = &pin;
	m.n_outputs = 1;
	m.outputs = &pout;
	q.id = 77;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RUN;
	q.run = &m;
	return cudaep__v1__request__pack(&q, buf);
}

Test(warm_daemon, a_cached_run_request_allocates_nothing)
{
	static uint8_t pkt[1024], out[CEP_MAX_PACKET];
	struct server *srv = tu_server(NULL);
	struct client *c = tu_conn(srv, 40001);
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel lm = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__Response *r;
	uint64_t reg, sess;
	size_t len, mlen, out_len;
	uint8_t *bytes;
	long before;
	int fd;

	tu_hello(srv, c);
	reg = tu_region(srv, c, 8192);
	bytes = model(&mlen);
	fd = memfd_create("model", MFD_CLOEXEC);
	cr_assert_eq(write(fd, bytes, mlen), (ssize_t)mlen);
	free(bytes);
	lm.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	q.id = 1;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &lm;
	r = tu_call(srv, c, &q, &fd, 1, NULL);
	tu_expect_ok(r);
	sess = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);

	/* The first run of a shape plans (and allocates); the next ones not. */
	for (int batch = 1; batch <= 3; batch += 2) {
		len = run_packet(sess, reg, batch, pkt);
		cr_assert_eq(dispatch_packet(&srv->d, c, pkt, len, NULL, 0, 0, out,
					     &out_len), 0);
		r = cudaep__v1__response__unpack(NULL, out_len, out);
		tu_expect_ok(r);
		cudaep__v1__response__free_unpacked(r, NULL);
	}
	before = allocs;
	for (int i = 0; i < 50; i++) {
		len = run_packet(sess, reg, i % 2 ? 3 : 1, pkt);
		cr_assert_eq(dispatch_packet(&srv->d, c, pkt, len, NULL, 0, 0, out,
					     &out_len), 0);
	}
	cr_assert_eq(allocs - before, 0, "50 warm Run requests made %ld "
		     "allocator calls", allocs - before);
	r = cudaep__v1__response__unpack(NULL, out_len, out);
	tu_expect_ok(r);
	cr_assert_eq(r->run->outputs[0]->shape[0], 3);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(srv->stats.counters[STATS_COUNTER_RUNS], 52);
	server_free(srv);
}
