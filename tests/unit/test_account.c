/*
 * test_account.c — accounting by owner and role, and the four limits
 * (session, client, uid, global) with the messages a user sees, on their
 * own and through the arena.
 */
#include "alloc/account.h"
#include "alloc/arena.h"
#include "alloc/provider.h"
#include "client/cudaep.h"

#include <criterion/criterion.h>
#include <string.h>

static struct account *acc;

static void setup(void)
{
	cr_assert_eq(account_new(&acc), 0);
}

static void teardown(void)
{
	account_free(acc);
}

static struct account_usage usage(uint64_t client, uint64_t session)
{
	struct account_usage u;

	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ client, session }, &u), 0);
	return u;
}

TestSuite(account, .init = setup, .fini = teardown);

Test(account, role_names)
{
	cr_assert_str_eq(alloc_role_name(ALLOC_ROLE_WEIGHTS), "weights");
	cr_assert_str_eq(alloc_role_name(ALLOC_ROLE_PINNED), "pinned");
	cr_assert_str_eq(alloc_role_name(ALLOC_ROLE_COUNT), "unknown");
}

Test(account, current_and_peak_per_session_client_and_total)
{
	struct alloc_owner s1 = { 3, 1 }, s2 = { 3, 2 };
	struct account_usage u;

	cr_assert_eq(account_charge(acc, s1, ALLOC_ROLE_WEIGHTS, 1000), 0);
	cr_assert_eq(account_charge(acc, s1, ALLOC_ROLE_ACTIVATIONS, 500), 0);
	cr_assert_eq(account_charge(acc, s2, ALLOC_ROLE_WORKSPACE, 300), 0);
	cr_assert_eq(account_charge(acc, s2, ALLOC_ROLE_PINNED, 7000), 0);
	u = usage(3, 1);
	cr_assert_eq(u.current[ALLOC_ROLE_WEIGHTS], 1000);
	cr_assert_eq(u.current[ALLOC_ROLE_ACTIVATIONS], 500);
	cr_assert_eq(u.device, 1500);
	u = usage(3, 0);
	cr_assert_eq(u.device, 1800, "the client sums its sessions");
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 7000);
	account_uncharge(acc, s1, ALLOC_ROLE_ACTIVATIONS, 500);
	u = usage(3, 1);
	cr_assert_eq(u.current[ALLOC_ROLE_ACTIVATIONS], 0);
	cr_assert_eq(u.peak[ALLOC_ROLE_ACTIVATIONS], 500);
	cr_assert_eq(u.device_peak, 1500);
	account_totals(acc, &u);
	cr_assert_eq(u.device, 1300);
	cr_assert_eq(u.device_peak, 1800);
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 7000);
	account_uncharge(acc, s1, ALLOC_ROLE_WEIGHTS, 1000);
	account_uncharge(acc, s2, ALLOC_ROLE_WORKSPACE, 300);
	account_uncharge(acc, s2, ALLOC_ROLE_PINNED, 7000);
	account_totals(acc, &u);
	cr_assert_eq(u.device, 0);
	cr_assert_eq(u.current[ALLOC_ROLE_PINNED], 0);
	cr_assert_eq(usage(3, 0).device, 0);
}

Test(account, session_limit_with_message)
{
	struct alloc_owner s = { 3, 7 };

	cr_assert_eq(account_limit_set(acc, s, 1048576), 0);
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_ACTIVATIONS, 1046528), 0);
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WORKSPACE, 2048), 0, "exactly the limit fits");
	account_uncharge(acc, s, ALLOC_ROLE_WORKSPACE, 2048);
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WORKSPACE, 4096), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(),
			 "session 7 memory limit 1048576 bytes: asked 4096, in use 1046528");
	cr_assert_eq(usage(3, 7).current[ALLOC_ROLE_WORKSPACE], 0, "nothing charged");
	cr_assert_eq(usage(3, 0).device, 1046528);
	/* Another session of the client is not bound by it. */
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 3, 8 }, ALLOC_ROLE_WORKSPACE, 4096), 0);
	/* Pinned host memory is not device memory. */
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_PINNED, 1 << 30), 0);
}

Test(account, client_limit_sums_sessions)
{
	struct alloc_owner whole = { 5, 0 }, s1 = { 5, 1 }, s2 = { 5, 2 };

	cr_assert_eq(account_limit_set(acc, whole, 10000), 0);
	cr_assert_eq(account_charge(acc, s1, ALLOC_ROLE_WEIGHTS, 6000), 0);
	cr_assert_eq(account_charge(acc, whole, ALLOC_ROLE_WORKSPACE, 1000), 0);
	cr_assert_eq(account_charge(acc, s2, ALLOC_ROLE_ACTIVATIONS, 3001), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(),
			 "client 5 memory limit 10000 bytes: asked 3001, in use 7000");
	cr_assert_eq(account_charge(acc, s2, ALLOC_ROLE_ACTIVATIONS, 3000), 0);
	cr_assert_eq(usage(5, 0).device, 10000);
	/* Another client is not bound by it. */
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 6, 1 }, ALLOC_ROLE_WEIGHTS, 50000), 0);
}

Test(account, global_limit_counts_everyone)
{
	account_limit_set_global(acc, 1 << 20);
	cr_assert_eq(account_charge(acc, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, 600000), 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 1, 1 }, ALLOC_ROLE_ACTIVATIONS,
				    400000), 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 2, 1 }, ALLOC_ROLE_ACTIVATIONS,
				    48577), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(),
			 "global memory limit 1048576 bytes: asked 48577, in use 1000000");
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 2, 1 }, ALLOC_ROLE_ACTIVATIONS,
				    48576), 0);
	account_limit_set_global(acc, 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 2, 1 }, ALLOC_ROLE_ACTIVATIONS,
				    1 << 30), 0, "0 lifts the limit");
}

Test(account, the_most_specific_limit_speaks_first)
{
	struct alloc_owner s = { 9, 4 };

	account_limit_set_global(acc, 100);
	cr_assert_eq(account_limit_set(acc, (struct alloc_owner){ 9, 0 }, 200), 0);
	cr_assert_eq(account_limit_set(acc, s, 300), 0);
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 400), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "session 4 ", 10) == 0, "%s", cep_last_error());
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 250), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "client 9 ", 9) == 0, "%s", cep_last_error());
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 150), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "global ", 7) == 0, "%s", cep_last_error());
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 100), 0);
}

static struct account_usage uid_usage(uint32_t uid)
{
	struct account_usage u;

	cr_assert_eq(account_uid_usage_get(acc, uid, &u), 0);
	return u;
}

Test(account, uid_limit_sums_its_clients_device_and_pinned)
{
	struct alloc_owner a1 = { 11, 1 }, b1 = { 12, 1 }, other = { 13, 1 };

	account_limit_set_uid(acc, 10000);
	cr_assert_eq(account_client_uid_set(acc, 11, 1000), 0);
	cr_assert_eq(account_client_uid_set(acc, 12, 1000), 0);
	cr_assert_eq(account_client_uid_set(acc, 13, 2000), 0);
	cr_assert_eq(account_charge(acc, a1, ALLOC_ROLE_ACTIVATIONS, 4000), 0);
	cr_assert_eq(account_charge(acc, b1, ALLOC_ROLE_PINNED, 3000), 0);
	cr_assert_eq(account_charge(acc, b1, ALLOC_ROLE_WORKSPACE, 3001), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(),
			 "uid 1000 memory limit 10000 bytes (its clients together, device "
			 "and pinned): asked 3001, in use 7000");
	cr_assert_eq(account_uid_refusals(acc), 1);
	cr_assert_eq(usage(12, 0).device, 0, "nothing charged");
	/* Pinned memory counts here, unlike for the other limits. */
	cr_assert_eq(account_charge(acc, a1, ALLOC_ROLE_PINNED, 3001), CEP_ELIMIT);
	cr_assert_eq(account_uid_refusals(acc), 2);
	cr_assert_eq(account_charge(acc, b1, ALLOC_ROLE_WORKSPACE, 3000), 0, "exactly fits");
	cr_assert_eq(uid_usage(1000).device, 7000);
	cr_assert_eq(uid_usage(1000).current[ALLOC_ROLE_PINNED], 3000);
	cr_assert_eq(uid_usage(1000).limit, 10000);
	/* Another uid has a limit of its own. */
	cr_assert_eq(account_charge(acc, other, ALLOC_ROLE_ACTIVATIONS, 10000), 0);
	/* Unbound clients have none. */
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 14, 1 }, ALLOC_ROLE_ACTIVATIONS,
				    50000), 0);
	/* Uncharges come off the uid too; a raised limit holds at once. */
	account_uncharge(acc, a1, ALLOC_ROLE_ACTIVATIONS, 4000);
	cr_assert_eq(uid_usage(1000).device, 3000);
	account_limit_set_uid(acc, 0);
	cr_assert_eq(account_charge(acc, a1, ALLOC_ROLE_ACTIVATIONS, 1 << 30), 0, "0 lifts it");
}

Test(account, uid_limit_speaks_after_the_client_before_the_global)
{
	struct alloc_owner s = { 21, 1 };

	account_limit_set_global(acc, 100);
	account_limit_set_uid(acc, 200);
	cr_assert_eq(account_limit_set(acc, (struct alloc_owner){ 21, 0 }, 300), 0);
	cr_assert_eq(account_client_uid_set(acc, 21, 5), 0);
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 400), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "client 21 ", 10) == 0, "%s", cep_last_error());
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 250), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "uid 5 ", 6) == 0, "%s", cep_last_error());
	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_WEIGHTS, 150), CEP_ELIMIT);
	cr_assert(strncmp(cep_last_error(), "global ", 7) == 0, "%s", cep_last_error());
}

Test(account, uid_binding_takes_what_is_held_and_ends_with_the_client)
{
	struct alloc_owner s = { 31, 2 };
	struct account_usage u;

	cr_assert_eq(account_charge(acc, s, ALLOC_ROLE_GRAPHS, 500), 0);
	cr_assert_eq(account_uid_usage_get(acc, 77, &u), CEP_ENOENT);
	cr_assert_eq(account_client_uid_set(acc, 31, 77), 0);
	cr_assert_eq(uid_usage(77).device, 500, "what the client held came along");
	cr_assert_eq(account_client_uid_set(acc, 31, 77), 0, "again: nothing changes");
	cr_assert_eq(uid_usage(77).device, 500);
	cr_assert_eq(account_client_uid_set(acc, 31, 78), CEP_EINVAL);
	cr_assert_eq(account_client_uid_set(acc, 0, 78), CEP_EINVAL);
	cr_assert_eq(account_client_uid_set(acc, 32, 77), 0);
	account_uncharge(acc, s, ALLOC_ROLE_GRAPHS, 500);
	cr_assert_eq(uid_usage(77).device, 0);
	cr_assert_eq(uid_usage(77).peak[ALLOC_ROLE_GRAPHS], 500);
	cr_assert_eq(account_forget(acc, (struct alloc_owner){ 31, 0 }), 0);
	cr_assert_eq(account_uid_usage_get(acc, 77, &u), 0, "client 32 keeps it");
	cr_assert_eq(account_forget(acc, (struct alloc_owner){ 32, 0 }), 0);
	cr_assert_eq(account_uid_usage_get(acc, 77, &u), CEP_ENOENT,
		     "the uid went with its last client");
}

struct uid_log {
	struct account_uid_entry e[8];
	int n;
};

static void uid_visit_one(void *arg, const struct account_uid_entry *entry)
{
	struct uid_log *log = arg;

	cr_assert_lt(log->n, 8);
	log->e[log->n++] = *entry;
}

Test(account, uid_visit_lists_uids_sorted)
{
	struct uid_log log = { .n = 0 };

	account_limit_set_uid(acc, 4096);
	cr_assert_eq(account_client_uid_set(acc, 1, 3000), 0);
	cr_assert_eq(account_client_uid_set(acc, 2, 10), 0);
	cr_assert_eq(account_client_uid_set(acc, 3, 3000), 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 3, 1 }, ALLOC_ROLE_WEIGHTS, 64), 0);
	cr_assert_eq(account_uid_visit(acc, uid_visit_one, &log), 0);
	cr_assert_eq(log.n, 2);
	cr_assert_eq(log.e[0].uid, 10);
	cr_assert_eq(log.e[0].clients, 1);
	cr_assert_eq(log.e[1].uid, 3000);
	cr_assert_eq(log.e[1].clients, 2);
	cr_assert_eq(log.e[1].usage.device, 64);
	cr_assert_eq(log.e[1].usage.limit, 4096);
}

Test(account, bad_arguments)
{
	struct account_usage u;

	cr_assert_eq(account_limit_set(acc, ALLOC_OWNER_SHARED, 5), CEP_EINVAL);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 1, 1 }, ALLOC_ROLE_COUNT, 5),
		     CEP_EINVAL);
	cr_assert_eq(account_usage_get(acc, (struct alloc_owner){ 42, 42 }, &u), CEP_ENOENT);
}

Test(account, forget_only_what_is_given_back)
{
	struct alloc_owner s1 = { 2, 1 }, s2 = { 2, 2 }, whole = { 2, 0 };
	struct account_usage u;

	cr_assert_eq(account_charge(acc, s1, ALLOC_ROLE_WEIGHTS, 10), 0);
	cr_assert_eq(account_charge(acc, s2, ALLOC_ROLE_WEIGHTS, 20), 0);
	cr_assert_eq(account_forget(acc, s1), CEP_EBUSY);
	account_uncharge(acc, s1, ALLOC_ROLE_WEIGHTS, 10);
	cr_assert_eq(account_forget(acc, s1), 0);
	cr_assert_eq(account_usage_get(acc, s1, &u), CEP_ENOENT);
	cr_assert_eq(account_forget(acc, s1), CEP_ENOENT);
	cr_assert_eq(account_forget(acc, whole), CEP_EBUSY, "session 2 still holds memory");
	account_uncharge(acc, s2, ALLOC_ROLE_WEIGHTS, 20);
	cr_assert_eq(account_forget(acc, whole), 0);
	cr_assert_eq(account_usage_get(acc, s2, &u), CEP_ENOENT, "its sessions went with it");
	cr_assert_eq(account_usage_get(acc, whole, &u), CEP_ENOENT);
}

struct visit_log {
	struct account_entry e[16];
	int n;
};

static void visit_one(void *arg, const struct account_entry *entry)
{
	struct visit_log *log = arg;

	cr_assert_lt(log->n, 16);
	log->e[log->n++] = *entry;
}

Test(account, visit_lists_entries_sorted)
{
	struct visit_log log = { .n = 0 };

	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 7, 3 }, ALLOC_ROLE_GRAPHS, 30), 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 2, 9 }, ALLOC_ROLE_GRAPHS, 90), 0);
	cr_assert_eq(account_charge(acc, (struct alloc_owner){ 7, 1 }, ALLOC_ROLE_WEIGHTS, 10), 0);
	cr_assert_eq(account_charge(acc, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, 5), 0);
	cr_assert_eq(account_visit(acc, visit_one, &log), 0);
	cr_assert_eq(log.n, 6);
	cr_assert_eq(log.e[0].owner.client, 0);
	cr_assert_eq(log.e[0].usage.current[ALLOC_ROLE_WEIGHTS], 5);
	cr_assert_eq(log.e[1].owner.client, 2);
	cr_assert_eq(log.e[1].owner.session, 0);
	cr_assert_eq(log.e[2].owner.session, 9);
	cr_assert_eq(log.e[3].owner.client, 7);
	cr_assert_eq(log.e[3].owner.session, 0);
	cr_assert_eq(log.e[3].usage.device, 40);
	cr_assert_eq(log.e[4].owner.session, 1);
	cr_assert_eq(log.e[5].owner.session, 3);
	cr_assert_eq(log.e[5].usage.current[ALLOC_ROLE_GRAPHS], 30);
}

Test(account, many_owners)
{
	uint64_t c, s;
	struct account_usage u;

	for (c = 1; c <= 40; c++)
		for (s = 1; s <= 10; s++)
			cr_assert_eq(account_charge(acc, (struct alloc_owner){ c, s },
						    ALLOC_ROLE_ACTIVATIONS, c * 100 + s), 0);
	for (c = 1; c <= 40; c++)
		cr_assert_eq(usage(c, 0).device, c * 1000 + 55);
	for (c = 1; c <= 40; c++)
		for (s = 1; s <= 10; s++)
			account_uncharge(acc, (struct alloc_owner){ c, s }, ALLOC_ROLE_ACTIVATIONS,
					 c * 100 + s);
	account_totals(acc, &u);
	cr_assert_eq(u.device, 0);
}

/* Limits through the arena: the request that would pass a limit fails
 * with the limit's message, and the arena is unchanged. */
Test(account, arena_requests_obey_limits)
{
	struct alloc_provider_host_config pc;
	struct alloc_provider *prov;
	struct arena *arena;
	struct arena_block *a, *b = NULL;
	struct arena_stats before, after;
	struct alloc_owner s = { 11, 3 };

	alloc_provider_host_config_init(&pc);
	pc.granule = 64 << 10;
	cr_assert_eq(alloc_provider_host_new(&pc, &prov), 0);
	cr_assert_eq(arena_new(prov, acc, NULL, &arena), 0);
	cr_assert_eq(account_limit_set(acc, s, 1 << 20), 0);
	cr_assert_eq(arena_block_alloc(arena, 1000000, 0, s, ALLOC_ROLE_WEIGHTS, &a), 0);
	cr_assert_eq(arena_block_size(a), 1 << 20, "a granule or more rounds to granules");
	arena_stats_get(arena, &before);
	cr_assert_eq(arena_block_alloc(arena, 1, 0, s, ALLOC_ROLE_ACTIVATIONS, &b), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(),
			 "session 3 memory limit 1048576 bytes: asked 256, in use 1048576");
	cr_assert_null(b);
	arena_stats_get(arena, &after);
	cr_assert_eq(after.used, before.used);
	cr_assert_eq(after.mapped, before.mapped);
	cr_assert_eq(after.failures, before.failures + 1);
	arena_block_free(arena, a);
	cr_assert_eq(usage(11, 3).device, 0);
	cr_assert_eq(usage(11, 0).device, 0);
	arena_free(arena);
	alloc_provider_free(prov);
}
