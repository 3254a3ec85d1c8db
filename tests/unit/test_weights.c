/*
 * test_weights.c — shared weights: one device copy per distinct content
 * (bytes, element type and shape), reference counted across sessions and
 * clients, charged once to the daemon's own owner; a model loaded by two
 * clients maps its weights once.
 */
#include "alloc/weights.h"
#include "alloc/arena.h"
#include "alloc/account.h"
#include "alloc/provider.h"
#include "client/cudaep.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#define G ((size_t)64 << 10)

static struct alloc_provider *prov;
static struct account *acc;
static struct arena *arena;
static struct weights *reg;

static void make(const struct weights_hooks *hooks)
{
	struct alloc_provider_host_config pc;

	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	pc.capacity = 4096 * G;
	pc.reserve = 16384 * G;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(arena_new(prov, acc, NULL, &arena), 0);
	cr_assert_eq(weights_new(arena, hooks, &reg), 0);
}

static void setup(void)
{
	make(NULL);
}

static void teardown(void)
{
	weights_free(reg);
	arena_free(arena);
	account_free(acc);
	alloc_provider_free(prov);
	reg = NULL;
	arena = NULL;
	acc = NULL;
	prov = NULL;
}

static struct weights_stats wstats(void)
{
	struct weights_stats st;

	weights_stats_get(reg, &st);
	return st;
}

static struct arena_stats astats(void)
{
	struct arena_stats st;

	arena_stats_get(arena, &st);
	return st;
}

/* A "model": a few initializers of assorted sizes, types and shapes. */
#define N_INIT 5
static float w0[64 * 3 * 7 * 7];
static float w1[1000 * 256];
static int64_t w2[10];
static uint16_t w3[4096];
static float w4[256];
static const int64_t s0[] = { 64, 3, 7, 7 }, s1[] = { 1000, 256 }, s2[] = { 10 },
		     s3[] = { 64, 64 }, s4[] = { 256 };

static struct weights_desc model[N_INIT] = {
	{ w0, sizeof(w0), CEP_DTYPE_FLOAT32, 4, s0 },
	{ w1, sizeof(w1), CEP_DTYPE_FLOAT32, 2, s1 },
	{ w2, sizeof(w2), CEP_DTYPE_INT64, 1, s2 },
	{ w3, sizeof(w3), CEP_DTYPE_FLOAT16, 2, s3 },
	{ w4, sizeof(w4), CEP_DTYPE_FLOAT32, 1, s4 },
};

static void fill_model(void)
{
	size_t i;

	for (i = 0; i < sizeof(w0) / sizeof(w0[0]); i++)
		w0[i] = (float)i * 0.5f;
	for (i = 0; i < sizeof(w1) / sizeof(w1[0]); i++)
		w1[i] = (float)(i % 977) - 3.0f;
	for (i = 0; i < 10; i++)
		w2[i] = (int64_t)i * 1000003;
	for (i = 0; i < 4096; i++)
		w3[i] = (uint16_t)(i * 31);
	for (i = 0; i < 256; i++)
		w4[i] = 1.0f / (float)(i + 1);
}

/* One session's load: a reference on each initializer. */
static void load(struct weights_entry **refs)
{
	int i;

	for (i = 0; i < N_INIT; i++)
		cr_assert_eq(weights_acquire(reg, &model[i], &refs[i]), 0, "%s", cep_last_error());
}

static void unload(struct weights_entry **refs)
{
	int i;

	for (i = 0; i < N_INIT; i++)
		weights_release(reg, refs[i]);
}

TestSuite(weights, .init = setup, .fini = teardown);

Test(weights, a_model_loaded_by_two_clients_maps_its_weights_once)
{
	struct weights_entry *c1[N_INIT], *c2[N_INIT];
	struct arena_stats one, two;
	struct account_usage shared, total;
	size_t bytes = 0;
	int i;

	fill_model();
	load(c1);
	one = astats();
	load(c2);
	two = astats();
	for (i = 0; i < N_INIT; i++) {
		cr_assert_eq(c1[i], c2[i]);
		cr_assert_eq(weights_entry_refs(reg, c1[i]), 2);
		cr_assert_eq(memcmp((const void *)(uintptr_t)weights_entry_addr(c1[i]),
				    model[i].data, model[i].bytes), 0, "initializer %d uploaded", i);
		bytes += (model[i].bytes + 255) / 256 * 256;
	}
	/* w1 is a granule or more, so it takes whole granules. */
	bytes += ((sizeof(w1) + G - 1) / G * G) - (sizeof(w1) + 255) / 256 * 256;
	cr_assert_eq(two.mapped, one.mapped, "the second client mapped nothing");
	cr_assert_eq(two.maps, one.maps);
	cr_assert_eq(two.creates, one.creates);
	cr_assert_eq(two.used, bytes);
	cr_assert_eq(wstats().entries, N_INIT);
	cr_assert_eq(wstats().hits, N_INIT);
	cr_assert_eq(wstats().misses, N_INIT);
	cr_assert_eq(wstats().refs, 2 * N_INIT);
	cr_assert_eq(account_usage_get(acc, ALLOC_OWNER_SHARED, &shared), 0);
	cr_assert_eq(shared.current[ALLOC_ROLE_WEIGHTS], bytes, "charged once, to the daemon");
	account_totals(acc, &total);
	cr_assert_eq(total.device, bytes);

	unload(c1);
	cr_assert_eq(astats().used, bytes, "the other client still uses them");
	cr_assert_eq(memcmp((const void *)(uintptr_t)weights_entry_addr(c2[1]), w1, sizeof(w1)), 0);
	unload(c2);
	cr_assert_eq(astats().used, 0, "the last user freed them");
	cr_assert_eq(wstats().entries, 0);
	cr_assert_eq(wstats().refs, 0);
	account_totals(acc, &total);
	cr_assert_eq(total.device, 0);
}

Test(weights, equal_bytes_of_another_type_or_shape_are_another_weight)
{
	static float data[1024];
	int64_t flat[] = { 1024 }, square[] = { 32, 32 };
	struct weights_desc a = { data, sizeof(data), CEP_DTYPE_FLOAT32, 1, flat };
	struct weights_desc b = { data, sizeof(data), CEP_DTYPE_FLOAT32, 2, square };
	struct weights_desc c = { data, sizeof(data), CEP_DTYPE_INT32, 1, flat };
	struct weights_entry *ea, *eb, *ec, *ea2;

	cr_assert_eq(weights_acquire(reg, &a, &ea), 0);
	cr_assert_eq(weights_acquire(reg, &b, &eb), 0);
	cr_assert_eq(weights_acquire(reg, &c, &ec), 0);
	cr_assert_neq(ea, eb);
	cr_assert_neq(ea, ec);
	cr_assert_neq(weights_entry_hash(ea), weights_entry_hash(eb));
	cr_assert_neq(weights_entry_hash(ea), weights_entry_hash(ec));
	cr_assert_eq(wstats().entries, 3);
	data[5] = 1.0f;
	cr_assert_eq(weights_acquire(reg, &a, &ea2), 0);
	cr_assert_neq(ea2, ea, "other bytes, other weight");
	weights_release(reg, ea);
	weights_release(reg, eb);
	weights_release(reg, ec);
	weights_release(reg, ea2);
	cr_assert_eq(astats().used, 0);
}

Test(weights, empty_tensors_share_too)
{
	int64_t shape[] = { 0, 4 };
	struct weights_desc d = { NULL, 0, CEP_DTYPE_FLOAT32, 2, shape };
	struct weights_entry *a, *b;

	cr_assert_eq(weights_acquire(reg, &d, &a), 0);
	cr_assert_eq(weights_acquire(reg, &d, &b), 0);
	cr_assert_eq(a, b);
	cr_assert_eq(weights_entry_bytes(a), 0);
	cr_assert_neq(weights_entry_addr(a), 0);
	weights_release(reg, a);
	weights_release(reg, b);
	cr_assert_eq(astats().used, 0);
}

Test(weights, bad_descriptors)
{
	static float data[4];
	int64_t neg[] = { -1 }, nine[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 4 };
	struct weights_desc d = { data, sizeof(data), CEP_DTYPE_FLOAT32, 1, neg };
	struct weights_entry *e = NULL;

	cr_assert_eq(weights_acquire(reg, &d, &e), CEP_EINVAL);
	d.shape = nine;
	d.rank = 9;
	cr_assert_eq(weights_acquire(reg, &d, &e), CEP_EINVAL);
	d.rank = 1;
	d.shape = NULL;
	cr_assert_eq(weights_acquire(reg, &d, &e), CEP_EINVAL);
	d.shape = nine + 8;
	d.dtype = CEP_DTYPE_UNDEFINED;
	cr_assert_eq(weights_acquire(reg, &d, &e), CEP_EINVAL);
	cr_assert_null(e);
	cr_assert_eq(astats().used, 0);
}

Test(weights, the_global_limit_applies_once)
{
	static float big[100000];
	int64_t shape[] = { 100000 };
	struct weights_desc d = { big, sizeof(big), CEP_DTYPE_FLOAT32, 1, shape };
	struct weights_entry *a, *b = NULL;

	account_limit_set_global(acc, 7 * G);
	cr_assert_eq(weights_acquire(reg, &d, &a), 0, "%s", cep_last_error());
	/* 400000 bytes take 7 granules: a second copy would pass the limit,
	 * a shared reference does not. */
	cr_assert_eq(weights_acquire(reg, &d, &b), 0);
	big[0] = 2.0f;
	cr_assert_eq(weights_acquire(reg, &d, &b), CEP_ELIMIT);
	cr_assert(strstr(cep_last_error(), "global memory limit") != NULL, "%s", cep_last_error());
	weights_release(reg, a);
	weights_release(reg, a);
	cr_assert_eq(wstats().entries, 0);
}

/* ------------------------------------------------------ hooks: upload and
 * compare as a GPU backend would supply them */

struct hook_state {
	int uploads;
	int compares;
	int compare_says; /* what compare() answers */
	int upload_error;
};

static struct hook_state hs;

static int hook_upload(void *ctx, uint64_t dst, const void *src, size_t len)
{
	struct hook_state *s = ctx;

	s->uploads++;
	if (s->upload_error)
		return s->upload_error;
	memcpy((void *)(uintptr_t)dst, src, len);
	return 0;
}

static int hook_compare(void *ctx, uint64_t addr, const void *src, size_t len)
{
	struct hook_state *s = ctx;

	s->compares++;
	return s->compare_says;
}

static void setup_hooked(void)
{
	struct weights_hooks h = { hook_upload, hook_compare, &hs };

	memset(&hs, 0, sizeof(hs));
	make(&h);
}

TestSuite(weights_hooked, .init = setup_hooked, .fini = teardown);

Test(weights_hooked, a_key_collision_with_other_bytes_is_another_entry)
{
	static int32_t data[64];
	int64_t shape[] = { 64 };
	struct weights_desc d = { data, sizeof(data), CEP_DTYPE_INT32, 1, shape };
	struct weights_entry *a, *b, *c;

	cr_assert_eq(weights_acquire(reg, &d, &a), 0);
	cr_assert_eq(hs.uploads, 1);
	cr_assert_eq(hs.compares, 0);
	/* The bytes are compared on every hash hit; here the hook says they
	 * differ, as they would after a real XXH3 collision. */
	hs.compare_says = 1;
	cr_assert_eq(weights_acquire(reg, &d, &b), 0);
	cr_assert_neq(a, b);
	cr_assert_eq(hs.compares, 1);
	cr_assert_eq(hs.uploads, 2);
	cr_assert_eq(wstats().collisions, 1);
	cr_assert_eq(wstats().entries, 2);
	hs.compare_says = 0;
	cr_assert_eq(weights_acquire(reg, &d, &c), 0);
	cr_assert(c == a || c == b);
	weights_release(reg, a);
	weights_release(reg, b);
	weights_release(reg, c);
	cr_assert_eq(astats().used, 0);
}

Test(weights_hooked, a_failed_upload_holds_nothing)
{
	static int32_t data[64];
	int64_t shape[] = { 64 };
	struct weights_desc d = { data, sizeof(data), CEP_DTYPE_INT32, 1, shape };
	struct weights_entry *a = NULL;
	struct account_usage u;

	hs.upload_error = CEP_EDEVICE;
	cr_assert_eq(weights_acquire(reg, &d, &a), CEP_EDEVICE);
	cr_assert_null(a);
	cr_assert_eq(wstats().entries, 0);
	cr_assert_eq(astats().used, 0);
	account_totals(acc, &u);
	cr_assert_eq(u.device, 0);
	hs.upload_error = 0;
	cr_assert_eq(weights_acquire(reg, &d, &a), 0);
	weights_release(reg, a);
}

Test(weights, many_distinct_weights)
{
	static uint32_t data[3000];
	struct weights_entry *e[3000];
	int64_t shape[] = { 1 };
	size_t i;

	for (i = 0; i < 3000; i++) {
		struct weights_desc d = { &data[i], 4, CEP_DTYPE_UINT32, 1, shape };

		data[i] = (uint32_t)i;
		cr_assert_eq(weights_acquire(reg, &d, &e[i]), 0);
	}
	cr_assert_eq(wstats().entries, 3000);
	for (i = 0; i < 3000; i++) {
		struct weights_desc d = { &data[i], 4, CEP_DTYPE_UINT32, 1, shape };
		struct weights_entry *again;

		cr_assert_eq(weights_acquire(reg, &d, &again), 0);
		cr_assert_eq(again, e[i]);
		weights_release(reg, again);
		weights_release(reg, e[i]);
	}
	cr_assert_eq(wstats().entries, 0);
	cr_assert_eq(astats().used, 0);
}
