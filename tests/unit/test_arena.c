/*
 * test_arena.c — the arena over the host provider: allocation patterns
 * (tiny, huge, aligned, fragmented and coalesced), mapping on demand, trim
 * and idle ticks, the handle pool and out-of-memory behaviour.
 */
#include "alloc/arena.h"
#include "alloc/account.h"
#include "alloc/provider.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#define G ((size_t)64 << 10) /* the tests' granule */

static struct alloc_provider *prov;
static struct account *acc;
static struct arena *arena;
static const struct alloc_owner owner = { 1, 1 };

/* An arena over a host provider of 64 KiB granules; capacity and reserve
 * in granules, the pool in bytes. */
static void make_arena(size_t capacity, size_t reserve, size_t pool_limit, uint64_t idle_ns)
{
	struct alloc_provider_host_config pc;
	struct arena_config ac;

	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	pc.capacity = capacity * G;
	pc.reserve = reserve * G;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0, "%s", cep_last_error());
	cr_assert_eq(account_new(&acc), 0);
	arena_config_init(&ac);
	ac.pool_limit = pool_limit;
	ac.idle_ns = idle_ns;
	cr_assert_eq(arena_new(prov, acc, &ac, &arena), 0, "%s", cep_last_error());
}

static void make_default(void)
{
	make_arena(4096, 65536, (size_t)1 << 20, 1000);
}

static void teardown(void)
{
	arena_free(arena);
	account_free(acc);
	alloc_provider_free(prov);
	arena = NULL;
	acc = NULL;
	prov = NULL;
}

static struct arena_block *alloc_ok(size_t size, size_t align)
{
	struct arena_block *b = NULL;
	int ret = arena_block_alloc(arena, size, align, owner, ALLOC_ROLE_ACTIVATIONS, &b);

	cr_assert_eq(ret, 0, "alloc %zu/%zu: %s", size, align, cep_last_error());
	return b;
}

static struct arena_stats stats(void)
{
	struct arena_stats st;

	arena_stats_get(arena, &st);
	return st;
}

static void fill(struct arena_block *b, unsigned char v)
{
	memset((void *)(uintptr_t)arena_block_addr(b), v, arena_block_size(b));
}

static int holds(struct arena_block *b, unsigned char v)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)arena_block_addr(b);
	size_t i;

	for (i = 0; i < arena_block_size(b); i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* Bytes of the granules that the given blocks touch. */
static uint64_t touched(struct arena_block **bs, size_t n)
{
	static uint8_t seen[65536];
	uint64_t base = UINT64_MAX, total = 0;
	size_t i, g;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++)
		if (bs[i] != NULL && arena_block_addr(bs[i]) < base)
			base = arena_block_addr(bs[i]) & ~(uint64_t)(G - 1);
	for (i = 0; i < n; i++) {
		uint64_t a, e;

		if (bs[i] == NULL)
			continue;
		a = arena_block_addr(bs[i]);
		e = a + arena_block_size(bs[i]) - 1;
		for (g = (a - base) / G; g <= (e - base) / G; g++) {
			cr_assert_lt(g, sizeof(seen));
			if (!seen[g]++)
				total += G;
		}
	}
	return total;
}

TestSuite(arena, .fini = teardown);

Test(arena, rejects_zero_size_and_bad_alignment)
{
	struct arena_block *b = NULL;

	make_default();
	cr_assert_eq(arena_block_alloc(arena, 0, 0, owner, ALLOC_ROLE_WEIGHTS, &b), CEP_EINVAL);
	cr_assert_eq(arena_block_alloc(arena, 64, 768, owner, ALLOC_ROLE_WEIGHTS, &b), CEP_EINVAL);
	cr_assert_eq(arena_block_alloc(arena, 64, 0, owner, ALLOC_ROLE_COUNT, &b), CEP_EINVAL);
	cr_assert_null(b);
	cr_assert_eq(stats().failures, 3);
	cr_assert_eq(stats().mapped, 0);
	cr_assert_eq(stats().used, 0);
}

Test(arena, tiny_block_is_256_bytes_and_writable)
{
	struct arena_block *b;

	make_default();
	b = alloc_ok(1, 0);
	cr_assert_eq(arena_block_size(b), ARENA_MIN_ALIGN);
	cr_assert_eq(arena_block_addr(b) % ARENA_MIN_ALIGN, 0);
	fill(b, 0xa5);
	cr_assert(holds(b, 0xa5));
	cr_assert_eq(stats().used, 256);
	cr_assert_eq(stats().mapped, G, "one granule mapped under a tiny block");
	arena_block_free(arena, b);
	cr_assert_eq(stats().used, 0);
}

Test(arena, honours_every_alignment)
{
	static const size_t aligns[] = { 1, 8, 256, 512, 4096, 32768, G, 4 * G, (size_t)1 << 20 };
	struct arena_block *bs[2 * sizeof(aligns) / sizeof(aligns[0])];
	size_t i, n = sizeof(aligns) / sizeof(aligns[0]);

	make_default();
	/* An odd-sized block first, so the next free range starts unaligned. */
	for (i = 0; i < n; i++) {
		bs[2 * i] = alloc_ok(300, 0);
		bs[2 * i + 1] = alloc_ok(1000, aligns[i]);
		cr_assert_eq(arena_block_addr(bs[2 * i + 1]) % aligns[i], 0,
			     "alignment %zu", aligns[i]);
		cr_assert_eq(arena_block_addr(bs[2 * i + 1]) % ARENA_MIN_ALIGN, 0);
		fill(bs[2 * i + 1], (unsigned char)i);
	}
	for (i = 0; i < n; i++)
		cr_assert(holds(bs[2 * i + 1], (unsigned char)i), "alignment %zu", aligns[i]);
	for (i = 0; i < 2 * n; i++)
		arena_block_free(arena, bs[i]);
	cr_assert_eq(stats().free_ranges, 1);
	cr_assert_eq(stats().used, 0);
}

Test(arena, huge_block_takes_whole_granules)
{
	struct arena_block *b;
	struct arena_stats st;

	make_default();
	b = alloc_ok(10 * G + 1, 0);
	cr_assert_eq(arena_block_size(b), 11 * G);
	cr_assert_eq(arena_block_addr(b) % G, 0);
	fill(b, 0x3c);
	cr_assert(holds(b, 0x3c));
	st = stats();
	cr_assert_eq(st.mapped, 11 * G);
	cr_assert_eq(st.creates, 11);
	cr_assert_eq(st.maps, 11);
	arena_block_free(arena, b);
	cr_assert_eq(arena_trim(arena, 0), 0);
	cr_assert_eq(stats().mapped, 0, "a freed whole-granule block leaves nothing mapped");
}

Test(arena, a_granule_sized_request_is_granule_aligned)
{
	struct arena_block *small, *big;

	make_default();
	small = alloc_ok(256, 0);
	big = alloc_ok(G, 0);
	cr_assert_eq(arena_block_addr(big) % G, 0);
	cr_assert_eq(arena_block_size(big), G);
	cr_assert_geq(arena_block_addr(big), arena_block_addr(small) + 256);
	arena_block_free(arena, small);
	arena_block_free(arena, big);
}

Test(arena, fragmentation_coalesces_back_into_one_range)
{
	struct arena_block *bs[200];
	struct arena_stats st;
	size_t i;

	make_default();
	for (i = 0; i < 200; i++)
		bs[i] = alloc_ok(256 * (1 + i % 37), 0);
	for (i = 0; i < 200; i += 2)
		arena_block_free(arena, bs[i]);
	st = stats();
	cr_assert_geq(st.free_ranges, 100, "every other block freed leaves holes");
	cr_assert_eq(st.live_blocks, 100);
	for (i = 1; i < 200; i += 2)
		arena_block_free(arena, bs[i]);
	st = stats();
	cr_assert_eq(st.free_ranges, 1);
	cr_assert_eq(st.largest_free, st.reserved);
	cr_assert_eq(st.used, 0);
	cr_assert_eq(st.live_blocks, 0);
	cr_assert_eq(st.allocs, 200);
	cr_assert_eq(st.frees, 200);
}

Test(arena, freed_neighbours_merge_into_a_reusable_range)
{
	struct arena_block *a, *b, *c, *guard, *ab;

	make_default();
	a = alloc_ok(1024, 0);
	b = alloc_ok(2048, 0);
	c = alloc_ok(512, 0);
	guard = alloc_ok(256, 0);
	cr_assert_eq(arena_block_addr(b), arena_block_addr(a) + 1024);
	cr_assert_eq(arena_block_addr(c), arena_block_addr(b) + 2048);
	arena_block_free(arena, a);
	arena_block_free(arena, c);
	arena_block_free(arena, b);
	/* a, b and c are one 3.5 KiB range now: an exact fit goes there. */
	ab = alloc_ok(3584, 0);
	cr_assert_eq(arena_block_addr(ab), arena_block_addr(guard) - 3584);
	arena_block_free(arena, ab);
	arena_block_free(arena, guard);
	cr_assert_eq(stats().free_ranges, 1);
}

Test(arena, trim_brings_mapped_back_to_the_live_granules)
{
	struct arena_block *bs[64];
	struct arena_stats st;
	size_t i;

	make_default();
	for (i = 0; i < 64; i++) {
		bs[i] = alloc_ok(i % 5 == 0 ? 3 * G : 20000, 0);
		fill(bs[i], (unsigned char)i);
	}
	for (i = 0; i < 64; i++) {
		if (i % 3 != 0) {
			arena_block_free(arena, bs[i]);
			bs[i] = NULL;
		}
	}
	st = stats();
	cr_assert_gt(st.mapped, touched(bs, 64), "freeing leaves idle granules mapped");
	cr_assert_eq(st.idle, st.mapped - touched(bs, 64));
	cr_assert_eq(arena_trim(arena, 0), 0);
	st = stats();
	cr_assert_eq(st.mapped, touched(bs, 64));
	cr_assert_eq(st.idle, 0);
	for (i = 0; i < 64; i++)
		if (bs[i] != NULL)
			cr_assert(holds(bs[i], (unsigned char)i), "block %zu survived trim", i);
	for (i = 0; i < 64; i++)
		arena_block_free(arena, bs[i]);
	cr_assert_eq(arena_trim(arena, 0), 0);
	cr_assert_eq(stats().mapped, 0);
}

Test(arena, churn_reuses_pooled_handles_and_creates_nothing)
{
	struct arena_block *b, *c;
	struct arena_stats warm, st;
	int i;

	make_arena(4096, 65536, 32 * G, 1000);
	/* Warm-up: the largest working set the loop will need. */
	b = alloc_ok(8 * G, 0);
	c = alloc_ok(1000, 0);
	arena_block_free(arena, b);
	arena_block_free(arena, c);
	cr_assert_eq(arena_trim(arena, 0), 0);
	warm = stats();
	cr_assert_eq(warm.pool_handles, 9);
	for (i = 0; i < 200; i++) {
		b = alloc_ok((size_t)(1 + i % 8) * G, 0);
		c = alloc_ok(1000 + (size_t)i * 7, 0);
		arena_block_free(arena, c);
		arena_block_free(arena, b);
		if (i % 2 == 0)
			cr_assert_eq(arena_trim(arena, 0), 0);
	}
	st = stats();
	cr_assert_eq(st.creates, warm.creates, "no new handle after warm-up");
	cr_assert_eq(st.releases, 0);
	cr_assert_gt(st.pool_hits, warm.pool_hits);
	cr_assert_gt(st.maps, warm.maps, "the loop did map granules, from the pool");
	cr_assert_eq(st.pool_misses, warm.pool_misses);
}

Test(arena, pool_keeps_no_more_than_its_bound)
{
	struct arena_block *b;
	struct arena_stats st;

	make_arena(4096, 65536, 4 * G, 1000);
	b = alloc_ok(10 * G, 0);
	arena_block_free(arena, b);
	cr_assert_eq(arena_trim(arena, 0), 0);
	st = stats();
	cr_assert_eq(st.pool_handles, 4);
	cr_assert_eq(st.pool_bytes, 4 * G);
	cr_assert_eq(st.pool_limit, 4 * G);
	cr_assert_eq(st.releases, 6, "what the pool cannot keep goes back");
	cr_assert_eq(st.creates - st.releases, st.pool_handles + st.mapped / G);
	cr_assert_eq(arena_trim(arena, ARENA_TRIM_POOL), 0);
	st = stats();
	cr_assert_eq(st.pool_handles, 0);
	cr_assert_eq(st.releases, 10);
}

Test(arena, pool_of_zero_releases_at_once)
{
	struct arena_block *b;

	make_arena(4096, 65536, 0, 1000);
	b = alloc_ok(3 * G, 0);
	arena_block_free(arena, b);
	cr_assert_eq(arena_trim(arena, 0), 0);
	cr_assert_eq(stats().pool_handles, 0);
	cr_assert_eq(stats().releases, 3);
}

Test(arena, tick_unmaps_granules_idle_for_the_period)
{
	struct arena_block *a, *b;

	make_arena(4096, 65536, 32 * G, 100);
	a = alloc_ok(2 * G, 0);
	b = alloc_ok(2 * G, 0);
	arena_block_free(arena, a);
	cr_assert_eq(arena_tick(arena, 1000), 0);
	cr_assert_eq(stats().mapped, 4 * G, "first seen idle at 1000");
	cr_assert_eq(arena_tick(arena, 1099), 0);
	cr_assert_eq(stats().mapped, 4 * G);
	arena_block_free(arena, b);
	cr_assert_eq(arena_tick(arena, 1100), 0);
	cr_assert_eq(stats().mapped, 2 * G, "a's granules went after 100 ns, b's stay");
	cr_assert_eq(arena_tick(arena, 1199), 0);
	cr_assert_eq(stats().mapped, 2 * G);
	cr_assert_eq(arena_tick(arena, 1200), 0);
	cr_assert_eq(stats().mapped, 0);
	cr_assert_eq(stats().pool_handles, 4);
}

Test(arena, reuse_before_the_period_keeps_a_granule_mapped)
{
	struct arena_block *a;

	make_arena(4096, 65536, 32 * G, 100);
	a = alloc_ok(G, 0);
	arena_block_free(arena, a);
	cr_assert_eq(arena_tick(arena, 0), 0);
	a = alloc_ok(G, 0);
	cr_assert_eq(arena_tick(arena, 500), 0);
	cr_assert_eq(stats().mapped, G, "in use again: not idle");
	cr_assert_eq(stats().maps, 1);
	arena_block_free(arena, a);
	cr_assert_eq(arena_tick(arena, 600), 0);
	cr_assert_eq(stats().mapped, G, "idle again from 600, not from 0");
	cr_assert_eq(arena_tick(arena, 700), 0);
	cr_assert_eq(stats().mapped, 0);
}

Test(arena, provider_out_of_memory_fails_one_request_cleanly)
{
	struct arena_block *a, *b = NULL, *c;
	struct arena_stats before, after;
	struct account_usage u;

	make_arena(8, 65536, 32 * G, 1000);
	a = alloc_ok(6 * G, 0);
	fill(a, 0x11);
	before = stats();
	cr_assert_eq(arena_block_alloc(arena, 4 * G, 0, owner, ALLOC_ROLE_WORKSPACE, &b),
		     CEP_EDEVMEM);
	cr_assert_null(b);
	cr_assert(strstr(cep_last_error(), "out of device memory") != NULL, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "capacity") != NULL, "%s", cep_last_error());
	after = stats();
	cr_assert_eq(after.used, before.used);
	cr_assert_eq(after.mapped, before.mapped);
	cr_assert_eq(after.live_blocks, before.live_blocks);
	cr_assert_eq(after.free_ranges, before.free_ranges);
	cr_assert_eq(after.failures, before.failures + 1);
	cr_assert_eq(after.creates - after.releases, 8, "the two created are pooled");
	cr_assert_eq(after.pool_handles, 2);
	cr_assert_eq(account_usage_get(acc, owner, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_WORKSPACE], 0, "the charge was taken back");
	c = alloc_ok(2 * G, 0);
	cr_assert(holds(a, 0x11));
	arena_block_free(arena, c);
	arena_block_free(arena, a);
}

Test(arena, idle_granules_are_reclaimed_when_the_provider_runs_out)
{
	struct arena_block *a, *b, *c, *d = NULL;
	struct arena_stats st;

	make_arena(8, 65536, 32 * G, 1000);
	a = alloc_ok(3 * G, 0);
	b = alloc_ok(4 * G, 0);
	arena_block_free(arena, a);
	cr_assert_eq(stats().idle, 3 * G);
	/* 4 granules do not fit a's hole, so they go after b: one can still
	 * be created, the other three must be a's idle ones. */
	c = alloc_ok(4 * G, 0);
	cr_assert_gt(arena_block_addr(c), arena_block_addr(b));
	st = stats();
	cr_assert_eq(st.reclaims, 3);
	cr_assert_eq(st.creates, 8);
	cr_assert_eq(st.mapped, 8 * G);
	cr_assert_eq(st.idle, 0);
	/* Nothing idle is left to reclaim. */
	cr_assert_eq(arena_block_alloc(arena, 1, 0, owner, ALLOC_ROLE_WORKSPACE, &d),
		     CEP_EDEVMEM);
	arena_block_free(arena, b);
	arena_block_free(arena, c);
}

/* A provider whose map() fails on request, over the host one. */
static struct alloc_provider faulty;
static int faulty_maps_left = -1; /* successful maps before one fails; -1: never */

static int faulty_map(void *ctx, uint64_t va, const alloc_handle *handles, size_t n)
{
	if (faulty_maps_left == 0)
		return cep__set_error(CEP_EDEVICE, "injected map failure");
	if (faulty_maps_left > 0)
		faulty_maps_left--;
	return prov->iface.map(ctx, va, handles, n);
}

Test(arena, a_failed_map_leaves_the_arena_as_it_was)
{
	struct alloc_provider_host_config pc;
	struct arena_block *b, *c, *big = NULL;
	struct arena_stats st;

	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	faulty = *prov;
	faulty.iface.map = faulty_map;
	faulty.counters = (struct alloc_provider_counters){ 0 };
	cr_assert_eq(arena_new(&faulty, NULL, NULL, &arena), 0);
	/* Leave granule 1 mapped and idle between unmapped granules 0 and 2. */
	b = alloc_ok(G, 0);
	c = alloc_ok(G, 0);
	cr_assert_eq(arena_block_addr(c), arena_block_addr(b) + G);
	arena_block_free(arena, b);
	cr_assert_eq(arena_trim(arena, 0), 0);
	arena_block_free(arena, c);
	cr_assert_eq(stats().mapped, G);
	/* Granules 0..2 are two runs to map; the second one fails. */
	faulty_maps_left = 1;
	cr_assert_eq(arena_block_alloc(arena, 3 * G, 0, owner, ALLOC_ROLE_WORKSPACE, &big),
		     CEP_EDEVICE);
	cr_assert_null(big);
	cr_assert(strstr(cep_last_error(), "mapping device memory failed: asked 196608 bytes") != NULL,
		  "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "injected map failure") != NULL);
	st = stats();
	cr_assert_eq(st.mapped, G, "what the failed request mapped is unmapped again");
	cr_assert_eq(st.idle, G);
	cr_assert_eq(st.used, 0);
	cr_assert_eq(faulty.counters.maps - faulty.counters.unmaps, 1);
	cr_assert_eq(st.creates - st.releases, st.mapped / G + st.pool_handles);
	faulty_maps_left = -1;
	big = alloc_ok(3 * G, 0);
	cr_assert_eq(arena_block_addr(big), arena_block_addr(b));
	fill(big, 0x99);
	cr_assert(holds(big, 0x99));
	arena_block_free(arena, big);
	cr_assert_eq(arena_trim(arena, ARENA_TRIM_POOL), 0);
	cr_assert_eq(stats().mapped, 0);
	cr_assert_eq(faulty.counters.creates, faulty.counters.releases);
}

Test(arena, address_space_exhaustion_is_out_of_memory)
{
	struct arena_block *a, *b = NULL;

	make_arena(4096, 16, 0, 1000);
	cr_assert_eq(arena_block_alloc(arena, 17 * G, 0, owner, ALLOC_ROLE_WEIGHTS, &b),
		     CEP_EDEVMEM);
	cr_assert(strstr(cep_last_error(), "reserves") != NULL, "%s", cep_last_error());
	a = alloc_ok(12 * G, 0);
	cr_assert_eq(arena_block_alloc(arena, 8 * G, 0, owner, ALLOC_ROLE_WEIGHTS, &b),
		     CEP_EDEVMEM);
	cr_assert(strstr(cep_last_error(), "no free address range") != NULL, "%s",
		  cep_last_error());
	cr_assert_eq(stats().mapped, 12 * G);
	arena_block_free(arena, a);
}

Test(arena, handles_keep_contents_across_unmap_and_map)
{
	struct arena_block *a, *keep;

	make_arena(4096, 65536, 32 * G, 1000);
	keep = alloc_ok(G, 0);
	fill(keep, 0x77);
	a = alloc_ok(4 * G, 0);
	fill(a, 0x42);
	arena_block_free(arena, a);
	cr_assert_eq(arena_trim(arena, 0), 0);
	a = alloc_ok(4 * G, 0);
	cr_assert_eq(stats().pool_hits, 4);
	/* Pooled handles come back with what they held, as on a GPU. */
	cr_assert(holds(a, 0x42));
	cr_assert(holds(keep, 0x77));
	arena_block_free(arena, a);
	arena_block_free(arena, keep);
}

Test(arena, charges_the_account_by_owner_and_role)
{
	struct arena_block *a, *b;
	struct account_usage u;

	make_default();
	a = alloc_ok(1000, 0);
	cr_assert_eq(arena_block_alloc(arena, 3 * G, 0, owner, ALLOC_ROLE_GRAPHS, &b), 0);
	cr_assert_eq(arena_block_owner(b).session, 1);
	cr_assert_eq(arena_block_role(b), ALLOC_ROLE_GRAPHS);
	cr_assert_eq(account_usage_get(acc, owner, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_ACTIVATIONS], 1024);
	cr_assert_eq(u.current[ALLOC_ROLE_GRAPHS], 3 * G);
	cr_assert_eq(u.device, 1024 + 3 * G);
	arena_block_free(arena, a);
	arena_block_free(arena, b);
	account_totals(acc, &u);
	cr_assert_eq(u.device, 0);
	cr_assert_eq(u.device_peak, 1024 + 3 * G);
}

Test(arena, blocks_are_found_by_their_address)
{
	struct arena_block *bs[1000];
	uint64_t addr;
	size_t i;

	make_default();
	for (i = 0; i < 1000; i++)
		bs[i] = alloc_ok(256 + (i % 7) * 1000, i % 3 ? 0 : 4096);
	for (i = 0; i < 1000; i++) {
		cr_assert_eq(arena_block_lookup(arena, arena_block_addr(bs[i])), bs[i]);
		if (arena_block_size(bs[i]) > 256)
			cr_assert_null(arena_block_lookup(arena, arena_block_addr(bs[i]) + 256),
				       "only a block's first byte finds it");
	}
	for (i = 0; i < 1000; i += 2)
		arena_block_free(arena, bs[i]);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(arena_block_lookup(arena, arena_block_addr(bs[i | 1])), bs[i | 1]);
	addr = arena_block_addr(bs[1]);
	for (i = 1; i < 1000; i += 2)
		arena_block_free(arena, bs[i]);
	cr_assert_null(arena_block_lookup(arena, addr));
}

Test(arena, free_with_live_blocks_gives_everything_back)
{
	struct account_usage u;

	make_default();
	alloc_ok(1000, 0);
	alloc_ok(5 * G, 0);
	arena_free(arena);
	arena = NULL;
	account_totals(acc, &u);
	cr_assert_eq(u.device, 0);
	cr_assert_eq(prov->counters.creates, prov->counters.releases);
	cr_assert_eq(prov->counters.maps, prov->counters.unmaps);
}
