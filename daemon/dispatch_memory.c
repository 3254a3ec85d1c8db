/*
 * dispatch_memory.c — the memory requests of cudaepd (dispatch_priv.h):
 * Memory, which `cudaepctl mem` prints, and Trim, which `cudaepctl trim`
 * sends.
 *
 * A MemoryReply is a flat list of byte gauges (owner, role, current, peak,
 * limit), in this order:
 *   "total"/"regions" and "client:<id>"/"regions": shared-memory regions;
 *   "arena"/reserved, mapped, used, free, pool, deferred: the device
 *     arena's address space and physical memory (no limits), then its
 *     churn counters as plain numbers (creates, pool_hits, ...);
 *   "total"/device and per role: the account's totals, with the global
 *     limit on "device";
 *   "uid:<uid>"/device and per role: the clients of one user that have
 *     loaded a session, summed, with uid_max_bytes on "device" (which
 *     limits device and pinned memory together);
 *   "shared"/weights: model weights uploaded once and shared by sessions
 *     (the daemon's own owner, counted by the global limit only);
 *   "client:<id>" and "session:<id>"/device and per role, with their
 *     limits on "device".
 * Roles with nothing now and nothing ever are left out. Clients other than
 * the asker's (and their sessions), and uids other than the asker's, are
 * shown to admins only; the list is cut at CEP_MAX_LIST entries, with the
 * whole count in total.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "alloc/account.h"
#include "alloc/arena.h"
#include "daemon/client.h"
#include "client/cudaep.h"
#include "daemon/dispatch_priv.h"
#include "common/error.h"
#include "gpu/backend.h"

/* MemoryEntry.owner's size in proto/cudaep.options, NUL included. */
#define MEMORY_OWNER_MAX 32

/* The reply being built. */
struct mem_list {
	struct req *r;
	Cudaep__V1__MemoryEntry **items; /* (CEP_MAX_LIST) in the arena */
	size_t n;                        /* entries filled */
	uint32_t total;                  /* entries wanted, cut ones included */
	bool oom;                        /* the request arena ran out */
};

static int out_of_arena(void)
{
	return cep__set_error(CEP_ENOMEM, "out of request memory building the "
			      "memory reply");
}

/* Appends one entry; owner must live as long as the reply (a literal or
 * the arena's). Past CEP_MAX_LIST it is only counted. */
static void mem_add(struct mem_list *l, const char *owner, const char *role,
		    uint64_t current, uint64_t peak, uint64_t limit)
{
	Cudaep__V1__MemoryEntry *e;

	l->total++;
	if (l->n >= CEP_MAX_LIST)
		return;
	e = reqarena_alloc(l->r->arena, sizeof(*e));
	if (e == NULL) {
		l->oom = true;
		return;
	}
	cudaep__v1__memory_entry__init(e);
	e->owner = (char *)owner;
	e->role = (char *)role;
	e->current = current;
	e->peak = peak;
	e->limit = limit;
	l->items[l->n++] = e;
}

static bool client_visible(const struct req *r, uint64_t client)
{
	return r->c->admin || client == r->c->id;
}

static void regions_add(struct mem_list *l)
{
	const struct dispatch *d = l->r->d;
	const struct region_limits *lim = &d->regions->limits;
	struct client *c;
	char *owner;

	mem_add(l, "total", "regions", d->regions->bytes, d->regions->bytes_peak,
		lim->bytes_total);
	for (c = d->clients->head; c != NULL; c = c->next) {
		if (!client_visible(l->r, c->id))
			continue;
		owner = reqarena_printf(l->r->arena, MEMORY_OWNER_MAX, "client:%llu",
					(unsigned long long)c->id);
		if (owner == NULL) {
			l->oom = true;
			return;
		}
		mem_add(l, owner, "regions", c->regions.bytes, c->regions.bytes_peak,
			lim->bytes_per_client);
	}
}

static void arena_add(struct mem_list *l)
{
	struct arena *a = l->r->d->backend->arena;
	struct arena_stats st;

	if (a == NULL)
		return;
	arena_stats_get(a, &st);
	mem_add(l, "arena", "reserved", st.reserved, st.reserved, 0);
	mem_add(l, "arena", "mapped", st.mapped, st.mapped, 0);
	mem_add(l, "arena", "used", st.used, st.used_peak, 0);
	mem_add(l, "arena", "free", st.mapped - st.used, st.mapped - st.used, 0);
	mem_add(l, "arena", "pool", st.pool_bytes, st.pool_bytes, st.pool_limit);
	/* The engine frees device memory only after the stream that used it
	 * synchronized, so nothing waits in a deferred-release queue. */
	mem_add(l, "arena", "deferred", 0, 0, 0);
	mem_add(l, "arena", "creates", st.creates, st.creates, 0);
	mem_add(l, "arena", "pool_hits", st.pool_hits, st.pool_hits, 0);
	mem_add(l, "arena", "pool_misses", st.pool_misses, st.pool_misses, 0);
	mem_add(l, "arena", "maps", st.maps, st.maps, 0);
	mem_add(l, "arena", "unmaps", st.unmaps, st.unmaps, 0);
}

/* "device" with the limit, then each role that was ever used. */
static void usage_add(struct mem_list *l, const char *owner,
		      const struct account_usage *u, bool device)
{
	int role;

	if (device)
		mem_add(l, owner, "device", u->device, u->device_peak, u->limit);
	for (role = 0; role < ALLOC_ROLE_COUNT; role++) {
		if (u->peak[role] == 0)
			continue;
		mem_add(l, owner, alloc_role_name((enum alloc_role)role),
			u->current[role], u->peak[role], 0);
	}
}

static void owner_visit(void *arg, const struct account_entry *e)
{
	struct mem_list *l = arg;
	char *owner;

	if (l->oom)
		return;
	if (e->owner.client == 0) {
		/* Shared weights: only the global limit counts them. */
		usage_add(l, "shared", &e->usage, false);
		return;
	}
	if (!client_visible(l->r, e->owner.client))
		return;
	if (e->owner.session == 0)
		owner = reqarena_printf(l->r->arena, MEMORY_OWNER_MAX, "client:%llu",
					(unsigned long long)e->owner.client);
	else
		owner = reqarena_printf(l->r->arena, MEMORY_OWNER_MAX, "session:%llu",
					(unsigned long long)e->owner.session);
	if (owner == NULL) {
		l->oom = true;
		return;
	}
	usage_add(l, owner, &e->usage, true);
}

static void uid_visit(void *arg, const struct account_uid_entry *e)
{
	struct mem_list *l = arg;
	char *owner;

	if (l->oom || (!l->r->c->admin && e->uid != (uint32_t)l->r->c->uid))
		return;
	owner = reqarena_printf(l->r->arena, MEMORY_OWNER_MAX, "uid:%u", e->uid);
	if (owner == NULL) {
		l->oom = true;
		return;
	}
	usage_add(l, owner, &e->usage, true);
}

int dispatch__memory(struct req *r)
{
	Cudaep__V1__MemoryReply *rep = &r->body->memory;
	struct mem_list l = { .r = r };
	struct account_usage total;
	int ret;

	l.items = reqarena_alloc(r->arena, CEP_MAX_LIST * sizeof(*l.items));
	if (l.items == NULL)
		return out_of_arena();
	regions_add(&l);
	arena_add(&l);
	account_totals(r->d->account, &total);
	usage_add(&l, "total", &total, true);
	ret = account_uid_visit(r->d->account, uid_visit, &l);
	if (ret == 0)
		ret = account_visit(r->d->account, owner_visit, &l);
	if (ret != 0)
		return ret;
	if (l.oom)
		return out_of_arena();
	cudaep__v1__memory_reply__init(rep);
	rep->n_entries = l.n;
	rep->entries = l.items;
	rep->total = l.total;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_MEMORY;
	r->resp->memory = rep;
	return 0;
}

int dispatch__trim(struct req *r)
{
	Cudaep__V1__TrimReply *rep = &r->body->trim;
	struct arena *a = r->d->backend->arena;
	struct arena_stats before, after;
	int ret;

	if (!r->c->admin)
		return cep__set_error(CEP_EPERM, "trim is for admins (root, the "
				      "daemon's user or its admin_group)");
	cudaep__v1__trim_reply__init(rep);
	if (a != NULL) {
		arena_stats_get(a, &before);
		ret = arena_trim(a, ARENA_TRIM_POOL);
		if (ret != 0)
			return ret;
		arena_stats_get(a, &after);
		rep->unmapped = before.mapped - after.mapped;
		rep->mapped = after.mapped;
		rep->released = (after.releases - before.releases) *
				(uint64_t)arena_granule(a);
	}
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_TRIM;
	r->resp->trim = rep;
	return 0;
}
