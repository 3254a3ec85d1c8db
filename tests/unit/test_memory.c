/*
 * test_memory.c — the engine's memory accounting on the host backend over
 * its arena: a model loaded twice from the same bytes is parsed once and
 * its weights are uploaded once (shown with the account and the arena's
 * gauges), also when four clients load it at once, the session, client
 * and global limits fail the one request
 * with the account's message, and everything returns to zero, and mapped
 * bytes to nothing after a trim, once the sessions are gone.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "alloc/account.h"
#include "alloc/arena.h"
#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define ROWS 64
#define COLS 1024 /* the table is 256 KiB */

static float table[ROWS * COLS];
static float bias[COLS];

/* y = relu(x @ table + bias): x [batch, 64], table [64, 1024]. The seed
 * changes the weights, so two seeds give two different files. */
static uint8_t *model_bytes(unsigned seed, size_t *len)
{
	struct onnxb *b = onnxb_new(13);
	size_t i;

	for (i = 0; i < ROWS * COLS; i++)
		table[i] = (float)((i * 7 + seed) % 13) / 13.0f - 0.5f;
	for (i = 0; i < COLS; i++)
		bias[i] = (float)(i % 5) * 0.1f;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,64");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,1024");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "64,1024", table);
	onnxb_init(b, "b", CEP_DTYPE_FLOAT32, "1024", bias);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,b", "z");
	onnxb_node(b, "Relu", "z", "y");
	return onnxb_finish(b, len);
}

static engine_model *model_load(engine_model_cache *c, unsigned seed, bool *shared)
{
	engine_model *m = NULL;
	size_t len;
	uint8_t *bytes = model_bytes(seed, &len);

	cr_assert_eq(engine_model_load_shared(c, bytes, len, -1, NULL, &m, shared), 0, "%s",
		     cep_last_error());
	free(bytes);
	return m;
}

/* Runs a batch of ones; returns the engine's result. */
static int run(engine_session *s, int batch)
{
	float *x = calloc((size_t)batch * ROWS, sizeof(float));
	float *y = calloc((size_t)batch * COLS, sizeof(float));
	int64_t dims[2] = { batch, ROWS };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x,
				   sizeof(float) * (size_t)batch * ROWS };
	struct engine_output out = { .name = "y", .data = y,
				     .capacity = sizeof(float) * (size_t)batch * COLS };
	int ret, i;

	for (i = 0; i < batch * ROWS; i++)
		x[i] = 1.0f;
	ret = eu_run(s, &in, 1, &out, 1);
	free(x);
	free(y);
	return ret;
}

static engine_session *open_as(engine_model *m, struct backend *be, struct account *acc,
			       uint64_t client, uint64_t session, uint64_t limit)
{
	struct engine_session_options o = {
		.account = acc, .owner = { client, session }, .memory_limit = limit,
	};
	engine_session *s = NULL;

	cr_assert_eq(engine_session_new(m, be, &o, &s), 0, "%s", cep_last_error());
	return s;
}

static uint64_t arena_gauge_used(struct backend *be)
{
	struct arena_stats st;

	arena_stats_get(be->arena, &st);
	return st.used;
}

Test(memory, same_bytes_share_one_model)
{
	engine_model_cache *c;
	struct engine_model_cache_stats st;
	engine_model *a, *b, *other;
	bool shared;

	cr_assert_eq(engine_model_cache_new(&c), 0);
	a = model_load(c, 1, &shared);
	cr_assert(!shared);
	b = model_load(c, 1, &shared);
	cr_assert(shared, "identical bytes load the same model");
	cr_assert_eq(a, b);
	other = model_load(c, 2, &shared);
	cr_assert(!shared);
	cr_assert_neq(other, a);
	engine_model_cache_stats(c, &st);
	cr_assert_eq(st.models, 2);
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.misses, 2);
	engine_model_unref(a);
	engine_model_unref(b);
	engine_model_cache_stats(c, &st);
	cr_assert_eq(st.models, 1, "the last reference takes it out of the cache");
	/* Loaded again after it went: parsed anew. */
	a = model_load(c, 1, &shared);
	cr_assert(!shared);
	engine_model_unref(a);
	engine_model_unref(other);
	engine_model_cache_stats(c, &st);
	cr_assert_eq(st.models, 0);
	cr_assert_eq(st.bytes, 0);
	engine_model_cache_free(c);
}

Test(memory, two_clients_upload_weights_once)
{
	struct backend *be;
	struct account *acc;
	engine_model_cache *c;
	engine_model *m1, *m2;
	engine_session *s1, *s2;
	struct account_usage tot, u;
	struct engine_stats es;
	struct arena_stats ast;
	uint64_t weights, used_one;
	bool shared;

	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(engine_model_cache_new(&c), 0);
	m1 = model_load(c, 1, &shared);
	s1 = open_as(m1, be, acc, 1, 10, 0);
	engine_session_stats(s1, &es);
	weights = es.weight_bytes;
	cr_assert_geq(weights, sizeof(table) + sizeof(bias));
	account_totals(acc, &tot);
	cr_assert_eq(tot.current[ALLOC_ROLE_WEIGHTS], weights);
	cr_assert_eq(account_usage_get(acc, ALLOC_OWNER_SHARED, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_WEIGHTS], weights, "charged to the shared owner");
	used_one = arena_gauge_used(be);
	cr_assert_geq(used_one, weights);

	/* A second client loads the same file. */
	m2 = model_load(c, 1, &shared);
	cr_assert(shared);
	s2 = open_as(m2, be, acc, 2, 11, 0);
	account_totals(acc, &tot);
	cr_assert_eq(tot.current[ALLOC_ROLE_WEIGHTS], weights, "the second load adds no weights");
	cr_assert_eq(arena_gauge_used(be), used_one, "nor device memory");

	/* Plans are the sessions' own. */
	cr_assert_eq(run(s1, 4), 0, "%s", cep_last_error());
	cr_assert_eq(run(s2, 8), 0, "%s", cep_last_error());
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 1, 10 }, &u), 0);
	cr_assert_gt(u.current[ALLOC_ROLE_ACTIVATIONS], 0);
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 2, 0 }, &u), 0);
	cr_assert_gt(u.device, 0);
	cr_assert_eq(u.current[ALLOC_ROLE_WEIGHTS], 0, "clients do not pay for shared weights");

	engine_session_free(s1);
	engine_model_unref(m1);
	account_totals(acc, &tot);
	cr_assert_eq(tot.current[ALLOC_ROLE_WEIGHTS], weights, "still used by the second");
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 1, 10 }, &u), CEP_ENOENT,
		     "an unloaded session is forgotten");
	engine_session_free(s2);
	engine_model_unref(m2);
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0, "everything uncharged");
	cr_assert_eq(arena_gauge_used(be), 0);
	cr_assert_eq(arena_trim(be->arena, ARENA_TRIM_POOL), 0);
	arena_stats_get(be->arena, &ast);
	cr_assert_eq(ast.mapped, 0, "trim brings mapped bytes back to the live total");

	engine_model_cache_free(c);
	account_free(acc);
	backend_free(be);
}

Test(memory, weights_in_place_cost_nothing)
{
	struct backend *be;
	struct account *acc;
	engine_model *m;
	engine_session *s;
	struct account_usage tot;
	bool shared;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert(be->caps & BACKEND_CAP_HOST_MEMORY);
	cr_assert_eq(account_new(&acc), 0);
	m = model_load(NULL, 1, &shared);
	s = open_as(m, be, acc, 1, 1, 0);
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	cr_assert_eq(run(s, 2), 0, "%s", cep_last_error());
	account_totals(acc, &tot);
	cr_assert_gt(tot.current[ALLOC_ROLE_ACTIVATIONS], 0);
	cr_assert_eq(tot.current[ALLOC_ROLE_WEIGHTS], 0);
	engine_session_free(s);
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	engine_model_unref(m);
	account_free(acc);
	backend_free(be);
}

Test(memory, session_limit_fails_the_run)
{
	struct backend *be;
	struct account *acc;
	engine_model *m;
	engine_session *s;
	struct account_usage tot;
	bool shared;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(account_new(&acc), 0);
	m = model_load(NULL, 1, &shared);
	/* Batch 1 needs a 4 KiB output and little else; batch 64 does not fit. */
	s = open_as(m, be, acc, 3, 7, 64 * 1024);
	cr_assert_eq(run(s, 1), 0, "%s", cep_last_error());
	cr_assert_eq(run(s, 64), CEP_ELIMIT);
	cr_assert(strstr(cep_last_error(), "session 7 memory limit 65536 bytes: asked"),
		  "%s", cep_last_error());
	/* The session is fine afterwards. */
	cr_assert_eq(run(s, 1), 0, "%s", cep_last_error());
	engine_session_free(s);
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	engine_model_unref(m);
	account_free(acc);
	backend_free(be);
}

Test(memory, client_limit_spans_its_sessions)
{
	struct backend *be;
	struct account *acc;
	engine_model *m;
	engine_session *s1, *s2;
	struct account_usage u;
	bool shared;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(account_new(&acc), 0);
	m = model_load(NULL, 1, &shared);
	s1 = open_as(m, be, acc, 3, 1, 0);
	s2 = open_as(m, be, acc, 3, 2, 0);
	cr_assert_eq(run(s1, 16), 0, "%s", cep_last_error());
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 3, 0 }, &u), 0);
	/* Room for what s1 holds and a little more: s2's plan does not fit. */
	cr_assert_eq(account_limit_set(acc, (struct alloc_owner){ 3, 0 }, u.device + 4096), 0);
	cr_assert_eq(run(s2, 16), CEP_ELIMIT);
	cr_assert(strstr(cep_last_error(), "client 3 memory limit"), "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "in use"), "%s", cep_last_error());
	/* Once s1 goes, s2 fits. */
	engine_session_free(s1);
	cr_assert_eq(run(s2, 16), 0, "%s", cep_last_error());
	engine_session_free(s2);
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 3, 0 }, &u), 0);
	cr_assert_eq(u.device, 0);
	engine_model_unref(m);
	account_free(acc);
	backend_free(be);
}

Test(memory, global_limit_refuses_the_upload)
{
	struct engine_session_options o = { .owner = { 4, 1 } };
	struct backend *be;
	struct account *acc;
	engine_model *m;
	engine_session *s = NULL;
	struct account_usage tot;
	bool shared;

	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	cr_assert_eq(account_new(&acc), 0);
	account_limit_set_global(acc, 128 * 1024);
	m = model_load(NULL, 1, &shared);
	o.account = acc;
	cr_assert_eq(engine_session_new(m, be, &o, &s), CEP_ELIMIT);
	cr_assert_null(s);
	cr_assert(strstr(cep_last_error(), "global memory limit 131072 bytes: asked"),
		  "%s", cep_last_error());
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	cr_assert_eq(arena_gauge_used(be), 0, "nothing was allocated");
	/* Raised, the same model loads. */
	account_limit_set_global(acc, 1u << 20);
	cr_assert_eq(engine_session_new(m, be, &o, &s), 0, "%s", cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	account_free(acc);
	backend_free(be);
}

/* ------------------------------------------------ clients loading at once */

#define RACERS 4

struct racer {
	pthread_barrier_t *start;
	engine_model_cache *cache;
	struct backend *be;
	struct account *acc;
	const uint8_t *bytes;
	size_t len;
	uint64_t client;
	engine_model *m;
	engine_session *s;
	int ret;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct engine_session_options o = { .account = r->acc, .owner = { r->client, 1 } };
	bool shared;

	pthread_barrier_wait(r->start);
	r->ret = engine_model_load_shared(r->cache, r->bytes, r->len, -1, NULL, &r->m,
					  &shared);
	if (r->ret == 0)
		r->ret = engine_session_new(r->m, r->be, &o, &r->s);
	return NULL;
}

Test(memory, loads_at_once_parse_and_upload_once)
{
	struct racer r[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t start;
	struct engine_model_cache_stats st;
	struct account_usage tot;
	struct engine_stats es;
	struct backend *be;
	struct account *acc;
	engine_model_cache *c;
	uint8_t *bytes;
	size_t len;
	int i;

	cr_assert_eq(backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be), 0);
	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(engine_model_cache_new(&c), 0);
	bytes = model_bytes(3, &len);
	pthread_barrier_init(&start, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		r[i] = (struct racer){ .start = &start, .cache = c, .be = be, .acc = acc,
				       .bytes = bytes, .len = len, .client = (uint64_t)i + 1 };
		cr_assert_eq(pthread_create(&th[i], NULL, racer_main, &r[i]), 0);
	}
	for (i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	free(bytes);
	for (i = 0; i < RACERS; i++) {
		cr_assert_eq(r[i].ret, 0, "racer %d: %s", i, cep_err_name(r[i].ret));
		cr_assert_eq(r[i].m, r[0].m, "every racer has the one model");
	}
	engine_model_cache_stats(c, &st);
	cr_assert_eq(st.misses, 1, "parsed once");
	cr_assert_eq(st.hits, RACERS - 1);
	engine_session_stats(r[0].s, &es);
	account_totals(acc, &tot);
	cr_assert_eq(tot.current[ALLOC_ROLE_WEIGHTS], es.weight_bytes, "uploaded once");
	for (i = 0; i < RACERS; i++) {
		engine_session_free(r[i].s);
		engine_model_unref(r[i].m);
	}
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	engine_model_cache_free(c);
	account_free(acc);
	backend_free(be);
}
