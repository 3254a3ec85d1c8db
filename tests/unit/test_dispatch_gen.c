/*
 * test_dispatch_gen.c — the Generate request through dispatch, on the host
 * backend with a client without a socket (its generation runs before its
 * reply): the tokens in the ring equal the oracle's (decoder_model.h), the
 * end's reason and the counts are in the header, the stop tokens end it,
 * the cache's kv_cache charge returns to zero, and bad requests (no such
 * session, a ring too small or misaligned or of another region, a model
 * that is not a decoder, bad options) get clear errors while the daemon
 * keeps serving.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/unit/daemon_util.h"
#include "tests/unit/decoder_model.h"
#include "tests/unit/onnxb.h"
#include "proto/cep_gen.h"

static struct server *srv;

/* A region of size bytes, mapped here too. */
static uint64_t ring_region(struct client *c, size_t size, void **map)
{
	int fd = tu_memfd(size, true);
	Cudaep__V1__Response *r;
	uint64_t id;

	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(*map, MAP_FAILED);
	r = tu_register(srv, c, size, &fd, 1);
	tu_expect_ok(r);
	id = r->register_region->region_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

static Cudaep__V1__Response *generate(struct client *c, uint64_t sess, uint64_t region,
				      uint64_t offset, uint64_t bytes, uint32_t n_prompt,
				      uint32_t slots, uint32_t max_new, int64_t *stop,
				      size_t n_stop, float temperature)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Generate m = CUDAEP__V1__GENERATE__INIT;
	Cudaep__V1__RegionSlice ring = CUDAEP__V1__REGION_SLICE__INIT;

	ring.region_id = region;
	ring.offset = offset;
	ring.bytes = bytes;
	m.session_id = sess;
	m.ring = &ring;
	m.n_prompt = n_prompt;
	m.slots = slots;
	m.max_new_tokens = max_new;
	m.stop_tokens = stop;
	m.n_stop_tokens = n_stop;
	m.temperature = temperature;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_GENERATE;
	q.generate = &m;
	return tu_call(srv, c, &q, NULL, 0, NULL);
}

static uint64_t kv_total(void)
{
	struct account_usage u;

	account_totals(srv->account, &u);
	return u.current[ALLOC_ROLE_KV_CACHE];
}

static const int64_t prompt[] = { 5, 3, 8, 1 };
#define NP 4

/* The oracle's greedy tokens for the decoder of seed 11. */
static void oracle(int64_t *ref, int n)
{
	struct backend *be = NULL;
	engine_session *s = NULL;
	engine_model *m = dm_load(11, 1);

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	dm_reference(s, 1, prompt, NP, n, ref);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(dispatch_gen, tokens_come_through_the_ring)
{
	size_t len, size = 4096;
	uint8_t *bytes = dm_build(11, 1, &len);
	int64_t ref[16], stop[1];
	struct cep_gen_ring *ring;
	Cudaep__V1__Response *r;
	struct client *c;
	uint64_t sess, reg;
	int64_t *tok;
	void *map;
	int i;

	srv = tu_server(NULL);
	c = tu_conn(srv, getuid());
	tu_hello(srv, c);
	sess = tu_load_bytes(srv, c, bytes, len, "dec");
	free(bytes);
	reg = ring_region(c, size, &map);
	oracle(ref, 16);
	ring = map;
	memcpy((uint8_t *)map + CEP_GEN_HEADER, prompt, sizeof(prompt));
	tok = (int64_t *)((uint8_t *)map + CEP_GEN_HEADER + sizeof(prompt));
	r = generate(c, sess, reg, 0, size, NP, 16, 12, NULL, 0, 0.0f);
	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_GENERATE);
	cr_assert_eq(r->generate->capacity, NP + 12);
	cr_assert(r->generate->fixed_cache);
	cr_assert_gt(r->generate->kv_bytes, 0);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(atomic_load(&ring->state), CEP_GEN_LENGTH);
	cr_assert_eq(atomic_load(&ring->written), 12);
	cr_assert_eq(ring->error, 0);
	cr_assert_eq(ring->prompt_tokens, NP);
	cr_assert_gt(atomic_load(&ring->events), 0);
	for (i = 0; i < 12; i++)
		cr_assert_eq(tok[i], ref[i], "token %d: %lld, the oracle's %lld", i,
			     (long long)tok[i], (long long)ref[i]);
	cr_assert_eq(kv_total(), 0, "the cache outlived its generation");

	/* A stop token: the ring ends with it. */
	memset(map, 0, CEP_GEN_HEADER);
	stop[0] = ref[2];
	r = generate(c, sess, reg, 0, size, NP, 16, 12, stop, 1, 0.0f);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(atomic_load(&ring->state), CEP_GEN_STOP);
	for (i = 0; ref[i] != ref[2]; i++)
		;
	cr_assert_eq(atomic_load(&ring->written), (uint64_t)i + 1);

	/* A cancel already set: nothing is generated. */
	memset(map, 0, CEP_GEN_HEADER);
	atomic_store(&ring->cancel, 1);
	r = generate(c, sess, reg, 0, size, NP, 16, 12, NULL, 0, 0.0f);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_eq(atomic_load(&ring->state), CEP_GEN_CANCELLED);
	cr_assert_eq(atomic_load(&ring->written), 0);
	cr_assert_eq(kv_total(), 0);
	munmap(map, size);
	server_free(srv);
}

Test(dispatch_gen, bad_requests_get_clear_errors)
{
	size_t len, size = 4096;
	uint8_t *bytes = dm_build(11, 1, &len);
	Cudaep__V1__Response *r;
	struct client *c;
	uint64_t sess, reg, relu;
	void *map;

	srv = tu_server(NULL);
	c = tu_conn(srv, getuid());
	tu_hello(srv, c);
	sess = tu_load_bytes(srv, c, bytes, len, "dec");
	free(bytes);
	{
		struct onnxb *b = onnxb_new(17);

		onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n");
		onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n");
		onnxb_node(b, "Relu", "x", "y");
		bytes = onnxb_finish(b, &len);
		relu = tu_load_bytes(srv, c, bytes, len, "dec");
		free(bytes);
	}
	reg = ring_region(c, size, &map);
	memcpy((uint8_t *)map + CEP_GEN_HEADER, prompt, sizeof(prompt));

	r = generate(c, 999, reg, 0, size, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_ENOENT, "999");
	r = generate(c, sess, reg + 100, 0, size, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_ENOENT, "ring");
	r = generate(c, sess, reg, 0, CEP_GEN_HEADER + 8 * NP + 8, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EBOUNDS, "fewer than");
	r = generate(c, sess, reg, 4, 2048, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EINVAL, "aligned");
	r = generate(c, sess, reg, 2048, 4096, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EBOUNDS, "");
	r = generate(c, sess, reg, 0, size, 0, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EINVAL, "prompt is empty");
	r = generate(c, sess, reg, 0, size, NP, 16, 0, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EINVAL, "max_new_tokens");
	r = generate(c, sess, reg, 0, size, NP, 16, 4, NULL, 0, -1.0f);
	tu_expect_error(r, CEP_EINVAL, "temperature");
	r = generate(c, relu, reg, 0, size, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_error(r, CEP_EINVAL, "input 'x'");
	/* A token out of the vocabulary fails the generation itself. */
	((int64_t *)((uint8_t *)map + CEP_GEN_HEADER))[1] = 77;
	r = generate(c, sess, reg, 0, size, NP, 16, 4, NULL, 0, 0.0f);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	{
		struct cep_gen_ring *ring = map;

		cr_assert_eq(atomic_load(&ring->state), CEP_GEN_ERROR);
		cr_assert_eq(ring->error, CEP_EINVAL);
		cr_assert(strstr(ring->message, "token 77"), "%s", ring->message);
	}
	cr_assert_eq(kv_total(), 0);
	/* Still serving. */
	r = tu_ping(srv, c, 7, NULL, 0);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
	munmap(map, size);
	server_free(srv);
}
