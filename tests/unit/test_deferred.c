/*
 * test_deferred.c — deferred release with fake events that the tests
 * complete in any order: a block stays allocated (and out of anyone else's
 * hands) until every one of its events has completed, and is released as
 * soon as they all have, whatever the order.
 */
#include "alloc/deferred.h"
#include "alloc/arena.h"
#include "alloc/account.h"
#include "alloc/provider.h"
#include "client/cudaep.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#define G ((size_t)64 << 10)

struct fake_event {
	int complete;
	int error;   /* a CEP_E* code query() returns while set */
	int queries;
	int drops;
};

static int fake_query(void *ctx)
{
	struct fake_event *e = ctx;

	e->queries++;
	if (e->error)
		return e->error;
	return e->complete ? 0 : CEP_EAGAIN;
}

static void fake_drop(void *ctx)
{
	struct fake_event *e = ctx;

	e->drops++;
}

static struct alloc_event ev(struct fake_event *e)
{
	return (struct alloc_event){ .query = fake_query, .drop = fake_drop, .ctx = e };
}

static struct alloc_provider *prov;
static struct account *acc;
static struct arena *arena;
static struct deferred *dq;
static const struct alloc_owner owner = { 4, 2 };

static void setup(void)
{
	struct alloc_provider_host_config pc;

	alloc_provider_host_config_init(&pc);
	pc.granule = G;
	pc.capacity = 1024 * G;
	pc.reserve = 4096 * G;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	cr_assert_eq(account_new(&acc), 0);
	cr_assert_eq(arena_new(prov, acc, NULL, &arena), 0);
	cr_assert_eq(deferred_new(arena, &dq), 0);
}

static void teardown(void)
{
	deferred_free(dq);
	arena_free(arena);
	account_free(acc);
	alloc_provider_free(prov);
}

static struct arena_block *alloc_ok(size_t size)
{
	struct arena_block *b = NULL;

	cr_assert_eq(arena_block_alloc(arena, size, 0, owner, ALLOC_ROLE_ACTIVATIONS, &b), 0);
	return b;
}

static struct deferred_stats dstats(void)
{
	struct deferred_stats st;

	deferred_stats_get(dq, &st);
	return st;
}

static uint64_t used(void)
{
	struct arena_stats st;

	arena_stats_get(arena, &st);
	return st.used;
}

static size_t poll_ok(void)
{
	size_t n = 0;

	cr_assert_eq(deferred_poll(dq, &n), 0);
	return n;
}

TestSuite(deferred, .init = setup, .fini = teardown);

Test(deferred, no_events_frees_at_once)
{
	struct arena_block *b = alloc_ok(1000);

	cr_assert_eq(deferred_push(dq, b, NULL, 0), 0);
	cr_assert_eq(used(), 0);
	cr_assert_eq(dstats().pending, 0);
}

Test(deferred, held_until_every_event_completes)
{
	struct fake_event e1 = { 0 }, e2 = { 0 };
	struct alloc_event evs[2] = { ev(&e1), ev(&e2) };
	struct arena_block *b = alloc_ok(4096);
	struct account_usage u;

	cr_assert_eq(deferred_push(dq, b, evs, 2), 0);
	cr_assert_eq(dstats().pending, 1);
	cr_assert_eq(dstats().pending_bytes, 4096);
	cr_assert_eq(poll_ok(), 0);
	e2.complete = 1;
	cr_assert_eq(poll_ok(), 0, "one of two events is not enough");
	cr_assert_eq(used(), 4096, "still allocated while held");
	cr_assert_eq(account_usage_get(acc, owner, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_ACTIVATIONS], 4096, "still charged while held");
	e1.complete = 1;
	cr_assert_eq(poll_ok(), 1);
	cr_assert_eq(used(), 0);
	cr_assert_eq(dstats().pending, 0);
	cr_assert_eq(dstats().pending_bytes, 0);
	cr_assert_eq(dstats().released, 1);
	cr_assert_eq(e1.drops, 1);
	cr_assert_eq(e2.drops, 1);
	cr_assert_eq(e2.queries, 2, "a completed event is not asked again");
	cr_assert_eq(account_usage_get(acc, owner, &u), 0);
	cr_assert_eq(u.current[ALLOC_ROLE_ACTIVATIONS], 0);
}

Test(deferred, released_in_the_order_events_complete)
{
	struct fake_event e[3] = { { 0 } };
	struct arena_block *b[3];
	struct alloc_event one;
	int i;

	for (i = 0; i < 3; i++) {
		b[i] = alloc_ok(1024 * (size_t)(i + 1));
		one = ev(&e[i]);
		cr_assert_eq(deferred_push(dq, b[i], &one, 1), 0);
	}
	cr_assert_eq(dstats().pending_bytes, 1024 + 2048 + 3072);
	e[2].complete = 1;
	cr_assert_eq(poll_ok(), 1);
	cr_assert_eq(e[2].drops, 1);
	cr_assert_eq(e[0].drops + e[1].drops, 0);
	cr_assert_eq(dstats().pending_bytes, 1024 + 2048);
	cr_assert_eq(used(), 1024 + 2048);
	e[0].complete = 1;
	cr_assert_eq(poll_ok(), 1);
	cr_assert_eq(e[0].drops, 1);
	cr_assert_eq(e[1].drops, 0);
	cr_assert_eq(used(), 2048);
	e[1].complete = 1;
	cr_assert_eq(poll_ok(), 1);
	cr_assert_eq(used(), 0);
	cr_assert_eq(dstats().pushed, 3);
	cr_assert_eq(dstats().released, 3);
}

Test(deferred, a_held_block_is_never_handed_out)
{
	struct fake_event e = { 0 };
	struct alloc_event one = ev(&e);
	struct arena_block *b = alloc_ok(G), *others[32];
	unsigned char *p = (unsigned char *)(uintptr_t)arena_block_addr(b);
	uint64_t lo = arena_block_addr(b), hi = lo + G;
	size_t i;

	memset(p, 0xee, G);
	cr_assert_eq(deferred_push(dq, b, &one, 1), 0);
	/* Everything else allocated meanwhile lands elsewhere and leaves the
	 * held bytes as the "still running kernel" left them. */
	for (i = 0; i < 32; i++) {
		others[i] = alloc_ok(i % 2 ? G : 4096);
		cr_assert(arena_block_addr(others[i]) >= hi ||
			  arena_block_addr(others[i]) + arena_block_size(others[i]) <= lo);
		memset((void *)(uintptr_t)arena_block_addr(others[i]), 0x11,
		       arena_block_size(others[i]));
	}
	for (i = 0; i < G; i++)
		cr_assert_eq(p[i], 0xee);
	e.complete = 1;
	cr_assert_eq(poll_ok(), 1);
	for (i = 0; i < 32; i++)
		arena_block_free(arena, others[i]);
	cr_assert_eq(used(), 0);
}

Test(deferred, a_failing_event_keeps_its_block_and_reports)
{
	struct fake_event bad = { .error = CEP_EDEVICE }, good = { .complete = 1 };
	struct alloc_event e1 = ev(&bad), e2 = ev(&good);
	struct arena_block *b1 = alloc_ok(512), *b2 = alloc_ok(768);
	size_t n = 99;

	cr_assert_eq(deferred_push(dq, b1, &e1, 1), 0);
	cr_assert_eq(deferred_push(dq, b2, &e2, 1), 0);
	cr_assert_eq(deferred_poll(dq, &n), CEP_EDEVICE);
	cr_assert_eq(n, 1, "the other block is still released");
	cr_assert_eq(dstats().pending, 1);
	cr_assert_eq(dstats().query_errors, 1);
	cr_assert_eq(used(), 512);
	bad.error = 0;
	bad.complete = 1;
	cr_assert_eq(poll_ok(), 1);
	cr_assert_eq(used(), 0);
}

Test(deferred, flush_releases_everything_without_asking)
{
	struct fake_event e[4] = { { 0 } };
	struct alloc_event one;
	int i;

	for (i = 0; i < 4; i++) {
		one = ev(&e[i]);
		cr_assert_eq(deferred_push(dq, alloc_ok(2000), &one, 1), 0);
	}
	deferred_flush(dq);
	cr_assert_eq(used(), 0);
	cr_assert_eq(dstats().pending, 0);
	cr_assert_eq(dstats().released, 4);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(e[i].queries, 0);
		cr_assert_eq(e[i].drops, 1);
	}
}

Test(deferred, free_with_pending_blocks_releases_them)
{
	struct fake_event e = { 0 };
	struct alloc_event one = ev(&e);

	cr_assert_eq(deferred_push(dq, alloc_ok(G), &one, 1), 0);
	deferred_free(dq);
	dq = NULL;
	cr_assert_eq(used(), 0);
	cr_assert_eq(e.drops, 1);
}

Test(deferred, many_events_complete_in_shuffled_order)
{
	enum { N = 64, E = 3 };
	static struct fake_event e[N][E];
	struct alloc_event evs[E];
	size_t order[N * E], i, j, released = 0, n;
	uint64_t x = 12345;

	memset(e, 0, sizeof(e));
	for (i = 0; i < N; i++) {
		for (j = 0; j < E; j++)
			evs[j] = ev(&e[i][j]);
		cr_assert_eq(deferred_push(dq, alloc_ok(256 * (i + 1)), evs, E), 0);
	}
	for (i = 0; i < N * E; i++)
		order[i] = i;
	for (i = N * E - 1; i > 0; i--) {
		size_t k, t;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		k = (size_t)(x >> 33) % (i + 1);
		t = order[i];
		order[i] = order[k];
		order[k] = t;
	}
	for (i = 0; i < N * E; i++) {
		size_t blk = order[i] / E, done = 0;

		e[blk][order[i] % E].complete = 1;
		for (j = 0; j < E; j++)
			done += (size_t)e[blk][j].complete;
		n = poll_ok();
		cr_assert_eq(n, done == E ? 1u : 0u, "block %zu: %zu of %d events", blk, done, E);
		released += n;
		cr_assert_eq(dstats().pending, N - released);
	}
	cr_assert_eq(used(), 0);
}
