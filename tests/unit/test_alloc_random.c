/*
 * test_alloc_random.c — a long randomized sequence of allocations and
 * frees over the host provider, checked against a simple oracle: a list of
 * the live blocks with what was asked and a pattern written into each.
 * Blocks must honour size and alignment, never overlap, keep their
 * patterns, and the arena's counters must agree with the oracle at every
 * step (finding blocks by address included); trims and ticks are mixed in, and the provider's capacity is small
 * enough that some requests run out of memory.
 */
#include "alloc/arena.h"
#include "alloc/account.h"
#include "alloc/provider.h"
#include "client/cudaep.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define G ((size_t)64 << 10)
#define MAX_LIVE 600

struct live {
	struct arena_block *b;
	uint64_t addr;
	size_t asked;
	size_t align;
	uint32_t seed; /* of the pattern */
	enum alloc_role role;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, same sequence on every run. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t rng_size(void)
{
	uint64_t r = rng() % 100;

	if (r < 40)
		return 1 + rng() % 512;
	if (r < 75)
		return 1 + rng() % G;
	if (r < 95)
		return 1 + rng() % (16 * G);
	return 1 + rng() % (64 * G);
}

static size_t rng_align(void)
{
	uint64_t r = rng() % 10;

	if (r < 6)
		return 0;
	return (size_t)1 << (rng() % 21);
}

/* The pattern: a word per 8 bytes at a stride, plus both ends. Writing
 * every byte of multi-MiB blocks thousands of times is slow under the
 * sanitizers and checks nothing more. */
static uint64_t pat(uint32_t seed, size_t off)
{
	return ((uint64_t)seed << 32) ^ (off * 0x9e3779b97f4a7c15ull);
}

static void pattern_each(const struct live *l, int write, int *ok)
{
	uint64_t *p = (uint64_t *)(uintptr_t)l->addr;
	size_t words = (l->asked + 7) / 8, i, step = words > 4096 ? 509 : 1;

	for (i = 0; i < words; i += (i < 32 || i + 32 >= words) ? 1 : step) {
		if (write)
			p[i] = pat(l->seed, i);
		else if (p[i] != pat(l->seed, i))
			*ok = 0;
	}
}

static int overlaps(const struct live *l, size_t n, uint64_t addr, size_t size)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (addr < l[i].addr + arena_block_size(l[i].b) && l[i].addr < addr + size)
			return 1;
	return 0;
}

Test(alloc_random, oracle_agrees_over_thousands_of_operations, .timeout = 120)
{
	struct alloc_provider_host_config pc;
	struct arena_config ac;
	struct alloc_provider *prov;
	struct account *acc;
	struct arena *arena;
	static struct live live[MAX_LIVE];
	struct arena_stats st;
	struct account_usage tot;
	size_t n = 0, i, ooms = 0, allocs = 0, ops = 20000;
	uint64_t used = 0, now = 0;
	int ok = 1;

	rng_state = 0x5eed5eed12345678ull;
	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	pc.capacity = 1200 * G; /* 75 MiB: enough to hit the limit now and then */
	pc.reserve = (size_t)1 << 34;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	cr_assert_eq(account_new(&acc), 0);
	arena_config_init(&ac);
	ac.pool_limit = 64 * G;
	ac.idle_ns = 50;
	cr_assert_eq(arena_new(prov, acc, &ac, &arena), 0);

	for (size_t op = 0; op < ops; op++) {
		/* Phases of growth and shrinkage, so that both splitting and
		 * coalescing get their share. */
		unsigned p_alloc = (op / 2500) % 2 ? 35 : 65;
		int do_alloc = n == 0 || (n < MAX_LIVE && rng() % 100 < p_alloc);

		if (do_alloc) {
			struct live l = { 0 };
			int ret;

			l.asked = rng_size();
			l.align = rng_align();
			l.seed = (uint32_t)rng();
			l.role = (enum alloc_role)(rng() % ALLOC_ROLE_PINNED);
			ret = arena_block_alloc(arena, l.asked, l.align,
						(struct alloc_owner){ 1 + l.seed % 3, 1 + l.seed % 7 },
						l.role, &l.b);
			if (ret == CEP_EDEVMEM) {
				ooms++;
				continue;
			}
			cr_assert_eq(ret, 0, "op %zu: %s", op, cep_last_error());
			l.addr = arena_block_addr(l.b);
			cr_assert_geq(arena_block_size(l.b), l.asked);
			cr_assert_eq(arena_block_size(l.b) % ARENA_MIN_ALIGN, 0);
			cr_assert_eq(l.addr % ARENA_MIN_ALIGN, 0);
			if (l.align)
				cr_assert_eq(l.addr % l.align, 0, "op %zu align %zu", op, l.align);
			cr_assert(!overlaps(live, n, l.addr, arena_block_size(l.b)),
				  "op %zu: block at %#llx overlaps a live one", op,
				  (unsigned long long)l.addr);
			cr_assert_eq(arena_block_lookup(arena, l.addr), l.b);
			pattern_each(&l, 1, &ok);
			used += arena_block_size(l.b);
			live[n++] = l;
			allocs++;
		} else {
			i = rng() % n;
			pattern_each(&live[i], 0, &ok);
			cr_assert(ok, "op %zu: pattern of a live block was overwritten", op);
			used -= arena_block_size(live[i].b);
			arena_block_free(arena, live[i].b);
			cr_assert_null(arena_block_lookup(arena, live[i].addr));
			live[i] = live[--n];
		}
		if (op % 97 == 0)
			cr_assert_eq(arena_tick(arena, now += 30), 0);
		if (op % 1000 == 999) {
			cr_assert_eq(arena_trim(arena, op % 3000 == 2999 ? ARENA_TRIM_POOL : 0), 0);
			for (i = 0; i < n; i++)
				pattern_each(&live[i], 0, &ok);
			cr_assert(ok, "op %zu: a pattern did not survive", op);
		}
		arena_stats_get(arena, &st);
		cr_assert_eq(st.used, used, "op %zu", op);
		cr_assert_eq(st.live_blocks, n, "op %zu", op);
		cr_assert_eq(st.creates - st.releases, st.mapped / G + st.pool_handles, "op %zu", op);
		cr_assert_leq(st.pool_bytes, st.pool_limit);
		account_totals(acc, &tot);
		cr_assert_eq(tot.device, used, "op %zu", op);
	}
	cr_assert_gt(ooms, 0, "the capacity was meant to be reached");
	cr_assert_gt(allocs, ops / 3);
	cr_log_info("%zu allocations, %zu out of memory, %zu live at the end", allocs, ooms, n);

	while (n > 0) {
		pattern_each(&live[n - 1], 0, &ok);
		arena_block_free(arena, live[--n].b);
	}
	cr_assert(ok);
	arena_stats_get(arena, &st);
	cr_assert_eq(st.used, 0);
	cr_assert_eq(st.free_ranges, 1);
	cr_assert_eq(st.largest_free, st.reserved);
	cr_assert_eq(arena_trim(arena, ARENA_TRIM_POOL), 0);
	arena_stats_get(arena, &st);
	cr_assert_eq(st.mapped, 0);
	cr_assert_eq(st.creates, st.releases);
	account_totals(acc, &tot);
	for (i = 0; i < ALLOC_ROLE_COUNT; i++)
		cr_assert_eq(tot.current[i], 0);
	arena_free(arena);
	account_free(acc);
	alloc_provider_free(prov);
}

/* ------------------------------------------------- several threads at once */

#define THREADS 4

struct worker {
	struct arena *arena;
	struct account *acc;
	uint64_t seed;
	int bad;       /* patterns overwritten: blocks handed out twice */
	int errors;    /* allocations that failed */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct live l[64];
	size_t n = 0, i, op;
	uint64_t x = w->seed;
	int ok = 1;

	for (op = 0; op < 3000; op++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (n < 64 && (n == 0 || (x >> 40) % 100 < 55)) {
			l[n].asked = 1 + (size_t)(x >> 20) % (3 * G);
			l[n].seed = (uint32_t)(x >> 13);
			if (arena_block_alloc(w->arena, l[n].asked, 0, (struct alloc_owner){ w->seed, 1 },
					      ALLOC_ROLE_ACTIVATIONS, &l[n].b) != 0) {
				w->errors++;
				continue;
			}
			l[n].addr = arena_block_addr(l[n].b);
			pattern_each(&l[n], 1, &ok);
			n++;
		} else {
			i = (size_t)(x >> 33) % n;
			pattern_each(&l[i], 0, &ok);
			arena_block_free(w->arena, l[i].b);
			l[i] = l[--n];
		}
		if (op % 500 == 0)
			(void)arena_trim(w->arena, 0);
	}
	while (n > 0) {
		pattern_each(&l[n - 1], 0, &ok);
		arena_block_free(w->arena, l[--n].b);
	}
	w->bad = !ok;
	return NULL;
}

Test(alloc_random, threads_share_one_arena, .timeout = 120)
{
	struct alloc_provider_host_config pc;
	struct alloc_provider *prov;
	struct account *acc;
	struct arena *arena;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct arena_stats st;
	struct account_usage tot;
	int i;

	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	pc.capacity = 16384 * G;
	pc.reserve = (size_t)1 << 34;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(arena_new(prov, acc, NULL, &arena), 0);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ arena, acc, (uint64_t)i + 1, 0, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		cr_assert_eq(pthread_join(t[i], NULL), 0);
		cr_assert_eq(w[i].bad, 0, "thread %d found a pattern overwritten", i);
		cr_assert_eq(w[i].errors, 0, "thread %d: %d failed allocations", i, w[i].errors);
	}
	arena_stats_get(arena, &st);
	cr_assert_eq(st.used, 0);
	cr_assert_eq(st.live_blocks, 0);
	cr_assert_eq(st.free_ranges, 1);
	cr_assert_eq(st.allocs, st.frees);
	account_totals(acc, &tot);
	cr_assert_eq(tot.device, 0);
	arena_free(arena);
	account_free(acc);
	alloc_provider_free(prov);
}
