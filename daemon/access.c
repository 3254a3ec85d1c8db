/*
 * access.c — the per-uid limits and killed sessions of cudaepd (access.h).
 *
 * The per-uid counts are not kept as running totals: each check walks the
 * clients and sums what those of the uid hold. Checks come with a new
 * connection, session or region, which are rare next to runs, and a walk
 * over at most max_connections entries cannot drift from the truth the
 * way a counter missed on one teardown path would.
 */
#include "daemon/access.h"

#include <stdio.h>

#include "alloc/account.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/client.h"
#include "daemon/config.h"

void access_uid_use(const struct access *a, uid_t uid, struct access_uid_use *out)
{
	const struct client *c;

	out->connections = 0;
	out->sessions = 0;
	out->regions = 0;
	for (c = a->clients->head; c != NULL; c = c->next) {
		if (c->uid != uid)
			continue;
		out->connections++;
		out->sessions += c->sessions.ids.count;
		out->regions += c->regions.ids.count;
	}
}

int access_connection_check(struct access *a, uid_t uid, pid_t pid)
{
	struct access_uid_use use;
	uint32_t limit = a->uid_max_connections;

	if (limit == 0)
		return 0;
	access_uid_use(a, uid, &use);
	if (use.connections < limit)
		return 0;
	stats_count(a->stats, STATS_COUNTER_UID_CONNECTIONS_REFUSED, 1);
	log_notice("refused a connection from pid %d uid %u: the uid holds %u connections, "
		   "uid_max_connections is %u", (int)pid, (unsigned)uid, use.connections, limit);
	return cep__set_error(CEP_ELIMIT, "too many connections for uid %u: its processes hold "
			      "%u, the limit (uid_max_connections) is %u; close one and try "
			      "again", (unsigned)uid, use.connections, limit);
}

int access_session_admit(struct access *a, struct client *c)
{
	struct access_uid_use use;
	uint32_t limit = a->uid_max_sessions;

	if (limit != 0) {
		access_uid_use(a, c->uid, &use);
		if (use.sessions >= limit) {
			stats_count(a->stats, STATS_COUNTER_UID_SESSIONS_REFUSED, 1);
			log_info("client %llu: LoadModel refused: uid %u holds %u sessions, "
				 "uid_max_sessions is %u", (unsigned long long)c->id,
				 (unsigned)c->uid, use.sessions, limit);
			return cep__set_error(CEP_ELIMIT, "uid %u holds %u sessions on its %u "
					      "connections, the limit (uid_max_sessions) is %u",
					      (unsigned)c->uid, use.sessions, use.connections,
					      limit);
		}
	}
	/* Bound even without a limit: a reload may set one, and `cudaepctl
	 * mem` shows each uid's memory. */
	return account_client_uid_set(a->account, c->id, (uint32_t)c->uid);
}

int access_region_admit(struct access *a, struct client *c)
{
	struct access_uid_use use;
	uint32_t limit = a->uid_max_regions;
	int ret;

	/* Bound before its region is charged as pinned memory, so that the
	 * uid's byte limit counts regions registered before any session. */
	ret = account_client_uid_set(a->account, c->id, (uint32_t)c->uid);
	if (ret != 0)
		return ret;
	if (limit == 0)
		return 0;
	access_uid_use(a, c->uid, &use);
	if (use.regions < limit)
		return 0;
	stats_count(a->stats, STATS_COUNTER_UID_REGIONS_REFUSED, 1);
	return cep__set_error(CEP_ELIMIT, "uid %u holds %u regions on its %u connections, the "
			      "limit (uid_max_regions) is %u", (unsigned)c->uid, use.regions,
			      use.connections, limit);
}

/* --------------------------------------------------------------- killing */

void access_killed_note(struct client *c, uint64_t id)
{
	struct access_killed *k = &c->killed;

	k->ids[k->next] = id;
	k->next = (k->next + 1) % ACCESS_KILLED_MAX;
}

int access_session_gone(const struct client *c, uint64_t id, int ret)
{
	uint32_t i;

	if (ret != CEP_ENOENT || id == 0)
		return ret;
	for (i = 0; i < ACCESS_KILLED_MAX; i++)
		if (c->killed.ids[i] == id)
			return cep__set_error(CEP_ECANCELED, "session %llu was killed by an "
					      "administrator", (unsigned long long)id);
	return ret;
}

void access_kill_finish(struct client *c)
{
	uint64_t id = c->kill_pending;

	if (id == 0)
		return;
	c->kill_pending = 0;
	/* A load that failed meanwhile took its session out already. */
	if (session_table_remove(&c->sessions, id) == 0)
		log_info("client %llu: session %llu unloaded: its work ended after an "
			 "administrator killed it", (unsigned long long)c->id,
			 (unsigned long long)id);
}

/* ---------------------------------------------------------------- config */

void access_limits_set(struct access *a, const struct config *cfg)
{
	a->uid_max_connections = cfg->uid_max_connections;
	a->uid_max_sessions = cfg->uid_max_sessions;
	a->uid_max_regions = cfg->uid_max_regions;
	a->uid_max_bytes = cfg->uid_max_bytes;
	account_limit_set_uid(a->account, cfg->uid_max_bytes);
}

void access_stats_sync(struct access *a)
{
	a->stats->counters[STATS_COUNTER_UID_BYTES_REFUSED] = account_uid_refusals(a->account);
}

/* ---------------------------------------------------------------- handover */

void access_save(const struct client *c, HvClient *hc)
{
	hc->n_killed = ACCESS_KILLED_MAX;
	hc->killed = (uint64_t *)c->killed.ids;
	hc->killed_next = c->killed.next;
}

void access_restore(struct client *c, const HvClient *hc)
{
	size_t i;

	for (i = 0; i < hc->n_killed && i < ACCESS_KILLED_MAX; i++)
		c->killed.ids[i] = hc->killed[i];
	c->killed.next = hc->killed_next % ACCESS_KILLED_MAX;
}
