/*
 * test_dispatch_fence.c — Runs with a fence through cudaepd's dispatch on
 * detached connections (host backend, no socket, no loop): the Hello
 * reply offers the page; a run is answered with its outputs' shapes and
 * signals its slot (sequence number, status, request id); sequence
 * numbers must grow; a run that fails while running still gets its reply
 * and reports through its slot; regions are registered with the backend
 * and charged to their client as pinned memory while they live; and a
 * warm Run with a fence allocates nothing.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/malloc_count.h"
#include "tests/unit/onnxb.h"

#include "alloc/account.h"
#include "proto/cep_fence.h"

/* y = Gather(x, idx): x [n, 4] float, idx [k] int64. */
static uint64_t gather_session(struct server *srv, struct client *c)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel lm = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__Response *r;
	struct onnxb *b = onnxb_new(13);
	uint64_t id;
	uint8_t *bytes;
	size_t len;
	int fd;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,4");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "k");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "k,4");
	onnxb_node(b, "Gather", "x,idx", "y");
	bytes = onnxb_finish(b, &len);
	fd = memfd_create("model", MFD_CLOEXEC);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	lm.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &lm;
	r = tu_call(srv, c, &q, &fd, 1, NULL);
	tu_expect_ok(r);
	id = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

/* x: 6 rows at offset 0 of the region; idx (k) at 1024; y at 2048. */
static size_t run_packet(uint64_t sess, uint64_t reg, int64_t k, uint64_t seq, uint64_t id,
			 uint8_t *buf)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Run m = CUDAEP__V1__RUN__INIT;
	Cudaep__V1__TensorRef x = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef idx = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef y = CUDAEP__V1__TENSOR_REF__INIT;
	Cudaep__V1__TensorRef *in[2] = { &x, &idx }, *out = &y;
	int64_t xs[2] = { 6, 4 }, ks[1] = { k };

	x.name = (char *)"x";
	x.region_id = reg;
	x.bytes = sizeof(float) * 24;
	x.dtype = CUDAEP__V1__DATA_TYPE__DT_FLOAT;
	x.n_shape = 2;
	x.shape = xs;
	idx.name = (char *)"idx";
	idx.region_id = reg;
	idx.offset = 1024;
	idx.bytes = sizeof(int64_t) * (uint64_t)k;
	idx.dtype = CUDAEP__V1__DATA_TYPE__DT_INT64;
	idx.n_shape = 1;
	idx.shape = ks;
	y.name = (char *)"y";
	y.region_id = reg;
	y.offset = 2048;
	y.bytes = 1024;
	m.session_id = sess;
	m.n_inputs = 2;
	m.inputs = in;
	m.n_outputs = 1;
	m.outputs = &out;
	m.fence_seq = seq;
	q.id = id;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RUN;
	q.run = &m;
	return cudaep__v1__request__pack(&q, buf);
}

struct fx {
	struct server *srv;
	struct client *c;
	uint64_t reg, sess;
	uint8_t *base;           /* the region, as the daemon maps it */
};

static void fx_open(struct fx *f)
{
	struct region *r;

	f->srv = tu_server(NULL);
	f->c = tu_conn(f->srv, 40001);
	tu_hello(f->srv, f->c);
	f->reg = tu_region(f->srv, f->c, 4096);
	f->sess = gather_session(f->srv, f->c);
	r = region_table_find(&f->c->regions, f->reg);
	f->base = r->addr;
	for (int i = 0; i < 24; i++)
		((float *)f->base)[i] = (float)i + 0.25f;
}

static Cudaep__V1__Response *fx_run(struct fx *f, const int64_t *idx, int k, uint64_t seq,
				    uint64_t id)
{
	static uint8_t pkt[2048];
	size_t len;

	memcpy(f->base + 1024, idx, sizeof(int64_t) * (size_t)k);
	memset(f->base + 2048, 0xa5, 1024);
	len = run_packet(f->sess, f->reg, k, seq, id, pkt);
	return tu_raw(f->srv, f->c, pkt, len, NULL, 0, 0, NULL);
}

/* tu_expect_ok(), then frees r. */
static void ok_free(Cudaep__V1__Response *r)
{
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
}

Test(dispatch_fence, hello_offers_a_registered_fence_page)
{
	Cudaep__V1__Response *r;
	struct server *srv = tu_server(NULL);
	struct client *c = tu_conn(srv, 40001);
	void *page;

	r = tu_hello_v(srv, c, CEP_PROTOCOL_VERSION, "unit", NULL);
	tu_expect_ok(r);
	cr_assert_eq(r->hello->fence_slots, CEP_FENCE_SLOTS);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_not_null(c->page.slots);
	page = c->page.slots;
	cr_assert(backend_host_registered(srv->backend, page,
					  CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES, NULL));
	client_close(c);
	cr_assert_not(backend_host_registered(srv->backend, page, 1, NULL),
		      "the page goes with its connection");
	server_free(srv);
}

Test(dispatch_fence, a_run_is_answered_with_shapes_and_signals_its_slot)
{
	static const int64_t idx[3] = { 4, 0, -1 };
	struct cep_fence_slot *slot;
	Cudaep__V1__Response *r;
	struct fx f;
	float *x, *y;

	fx_open(&f);
	r = fx_run(&f, idx, 3, 5, 900);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_RUN);
	cr_assert_eq(r->run->outputs[0]->n_shape, 2);
	cr_assert_eq(r->run->outputs[0]->shape[0], 3);
	cr_assert_eq(r->run->outputs[0]->shape[1], 4);
	cudaep__v1__response__free_unpacked(r, NULL);
	slot = &f.c->page.slots[cep_fence_slot_of(5)];
	cr_assert_eq(atomic_load(&slot->seq), 5);
	cr_assert_eq(atomic_load(&slot->status), 0);
	cr_assert_eq(atomic_load(&slot->request_id), 900);
	cr_assert_gt(atomic_load(&slot->futex), 0, "the signal bumped the futex word");
	x = (float *)f.base;
	y = (float *)(f.base + 2048);
	for (int i = 0; i < 12; i++)
		cr_assert_eq(y[i], x[((idx[i / 4] + 6) % 6) * 4 + i % 4], "y[%d]", i);
	cr_assert_eq(f.srv->stats.counters[STATS_COUNTER_RUNS_FENCED], 1);
	cr_assert_eq(f.srv->stats.counters[STATS_COUNTER_RUNS], 1);
	cr_assert_eq(f.srv->stats.gauges[STATS_GAUGE_RUNS_IN_FLIGHT].current, 0);
	cr_assert_eq(f.srv->stats.gauges[STATS_GAUGE_RUNS_IN_FLIGHT].total, 1);
	server_free(f.srv);
}

Test(dispatch_fence, sequence_numbers_must_grow)
{
	static const int64_t idx[2] = { 1, 2 };
	struct fx f;

	fx_open(&f);
	ok_free(fx_run(&f, idx, 2, 7, 901));
	tu_expect_error(fx_run(&f, idx, 2, 7, 902), CEP_EINVAL, "not above the last one, 7");
	tu_expect_error(fx_run(&f, idx, 2, 3, 903), CEP_EINVAL, "not above");
	ok_free(fx_run(&f, idx, 2, 8 + CEP_FENCE_SLOTS, 904));
	cr_assert_eq(atomic_load(&f.c->page.slots[cep_fence_slot_of(8)].seq),
		     8 + CEP_FENCE_SLOTS, "a later number reuses a slot");
	server_free(f.srv);
}

Test(dispatch_fence, a_run_that_fails_running_reports_through_its_slot)
{
	static const int64_t bad[2] = { 1, 6 }, good[2] = { 2, 3 };
	struct cep_fence_slot *slot;
	Cudaep__V1__Response *r;
	struct fx f;

	fx_open(&f);
	r = fx_run(&f, bad, 2, 11, 905);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_RUN, "the reply comes first");
	cudaep__v1__response__free_unpacked(r, NULL);
	slot = &f.c->page.slots[cep_fence_slot_of(11)];
	cr_assert_eq(atomic_load(&slot->seq), 11);
	cr_assert_eq(atomic_load(&slot->status), CEP_EINVAL);
	cr_assert_eq(f.srv->stats.counters[STATS_COUNTER_RUN_ERRORS], 1);
	ok_free(fx_run(&f, good, 2, 12, 906));
	cr_assert_eq(atomic_load(&f.c->page.slots[cep_fence_slot_of(12)].status), 0);
	cr_assert_eq(f.srv->stats.counters[STATS_COUNTER_RUNS], 1);
	server_free(f.srv);
}

Test(dispatch_fence, regions_are_pinned_and_charged_while_they_live)
{
	struct account_usage u;
	struct region *r;
	struct fx f;

	fx_open(&f);
	r = region_table_find(&f.c->regions, f.reg);
	cr_assert(backend_host_registered(f.srv->backend, r->addr, 4096, NULL));
	cr_assert_eq(account_usage_get(f.srv->account, (struct alloc_owner){ f.c->id, 0 }, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 4096);
	ok_free(tu_release(f.srv, f.c, f.reg));
	cr_assert_eq(account_usage_get(f.srv->account, (struct alloc_owner){ f.c->id, 0 }, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 0);
	server_free(f.srv);
}

Test(dispatch_fence, a_warm_run_with_a_fence_allocates_nothing)
{
	static const int64_t idx[4] = { 0, 5, 2, 2 };
	static uint8_t pkt[2048], out[CEP_MAX_PACKET];
	struct fx f;
	size_t len, out_len;
	long before;
	uint64_t seq = 1;

	fx_open(&f);
	memcpy(f.base + 1024, idx, sizeof(idx));
	for (int i = 0; i < 3; i++) {
		len = run_packet(f.sess, f.reg, 4, seq++, 1000, pkt);
		cr_assert_eq(dispatch_packet(&f.srv->d, f.c, pkt, len, NULL, 0, 0, out, &out_len), 0);
	}
	before = allocs;
	for (int i = 0; i < 50; i++) {
		len = run_packet(f.sess, f.reg, 4, seq++, 1000, pkt);
		cr_assert_eq(dispatch_packet(&f.srv->d, f.c, pkt, len, NULL, 0, 0, out, &out_len), 0);
	}
	cr_assert_eq(allocs - before, 0, "50 warm Run requests with a fence made %ld "
		     "allocator calls", allocs - before);
	cr_assert_eq(f.srv->stats.counters[STATS_COUNTER_RUNS], 53);
	cr_assert_eq(atomic_load(&f.c->page.slots[cep_fence_slot_of(seq - 1)].seq), seq - 1);
	server_free(f.srv);
}
