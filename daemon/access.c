/*
 * access.c — the per-uid limits and KillSession of cudaepd (access.h).
 *
 * The per-uid counts are not kept as running totals: each check walks the
 * connections and sums what those of the uid hold. Checks come with a new
 * connection, session or region, which are rare next to runs, and a walk
 * over at most max_connections entries cannot drift from the truth the
 * way a counter missed on one teardown path would.
 */
#include "daemon/access.h"

#include <stdio.h>

#include "alloc/account.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "daemon/dispatch_priv.h"
#include "common/error.h"
#include "daemon/fairq.h"
#include "common/log.h"
#include "daemon/server.h"

void access_uid_use(const struct server *s, uid_t uid,
		    struct access_uid_use *out)
{
	const struct conn *c;

	out->connections = 0;
	out->sessions = 0;
	out->regions = 0;
	for (c = s->conns; c != NULL; c = c->next) {
		if (c->uid != uid)
			continue;
		out->connections++;
		out->sessions += c->sessions.ids.count;
		out->regions += c->regions.ids.count;
	}
}

int access_connection_check(struct server *s, uid_t uid, pid_t pid)
{
	struct access_uid_use use;
	uint32_t limit = s->cfg.uid_max_connections;

	if (limit == 0)
		return 0;
	access_uid_use(s, uid, &use);
	if (use.connections < limit)
		return 0;
	stats_count(&s->stats, STATS_COUNTER_UID_CONNECTIONS_REFUSED, 1);
	log_notice("refused a connection from pid %d uid %u: the uid holds "
		   "%u connections, uid_max_connections is %u", (int)pid,
		   (unsigned)uid, use.connections, limit);
	return cep__set_error(CEP_ELIMIT, "too many connections for uid %u: "
			      "its processes hold %u, the limit "
			      "(uid_max_connections) is %u; close one and try "
			      "again", (unsigned)uid, use.connections, limit);
}

int access_session_admit(struct server *s, struct conn *c)
{
	struct access_uid_use use;
	uint32_t limit = s->cfg.uid_max_sessions;

	if (limit != 0) {
		access_uid_use(s, c->uid, &use);
		if (use.sessions >= limit) {
			stats_count(&s->stats,
				    STATS_COUNTER_UID_SESSIONS_REFUSED, 1);
			log_info("client %llu: LoadModel refused: uid %u holds "
				 "%u sessions, uid_max_sessions is %u",
				 (unsigned long long)c->id, (unsigned)c->uid,
				 use.sessions, limit);
			return cep__set_error(CEP_ELIMIT, "uid %u holds %u "
					      "sessions on its %u connections, "
					      "the limit (uid_max_sessions) is "
					      "%u", (unsigned)c->uid,
					      use.sessions, use.connections,
					      limit);
		}
	}
	/* Bound even without a limit: a reload may set one, and `cudaepctl
	 * mem` shows each uid's memory. */
	return account_client_uid_set(s->account, c->id, (uint32_t)c->uid);
}

int access_region_admit(struct server *s, struct conn *c)
{
	struct access_uid_use use;
	uint32_t limit = s->cfg.uid_max_regions;
	int ret;

	/* Bound before its region is charged as pinned memory, so that the
	 * uid's byte limit counts regions registered before any session. */
	ret = account_client_uid_set(s->account, c->id, (uint32_t)c->uid);
	if (ret != 0)
		return ret;
	if (limit == 0)
		return 0;
	access_uid_use(s, c->uid, &use);
	if (use.regions < limit)
		return 0;
	stats_count(&s->stats, STATS_COUNTER_UID_REGIONS_REFUSED, 1);
	return cep__set_error(CEP_ELIMIT, "uid %u holds %u regions on its %u "
			      "connections, the limit (uid_max_regions) is %u",
			      (unsigned)c->uid, use.regions, use.connections,
			      limit);
}

/* --------------------------------------------------------------- killing */

static void killed_note(struct conn *c, uint64_t id)
{
	struct access_killed *k = &c->killed;

	k->ids[k->next] = id;
	k->next = (k->next + 1) % ACCESS_KILLED_MAX;
}

int access_session_gone(const struct conn *c, uint64_t id, int ret)
{
	uint32_t i;

	if (ret != CEP_ENOENT || id == 0)
		return ret;
	for (i = 0; i < ACCESS_KILLED_MAX; i++)
		if (c->killed.ids[i] == id)
			return cep__set_error(CEP_ECANCELED, "session %llu was "
					      "killed by an administrator",
					      (unsigned long long)id);
	return ret;
}

void access_kill_finish(struct conn *c)
{
	uint64_t id = c->kill_pending;

	if (id == 0)
		return;
	c->kill_pending = 0;
	/* A load that failed meanwhile took its session out already. */
	if (session_table_remove(&c->sessions, id) == 0)
		log_info("client %llu: session %llu unloaded: its work ended "
			 "after an administrator killed it",
			 (unsigned long long)c->id, (unsigned long long)id);
}

int dispatch__kill_session(struct req *r, const Cudaep__V1__KillSession *m)
{
	Cudaep__V1__KillSessionReply *rep = &r->body->kill_session;
	struct session *sess = NULL;
	char why[CEP_MAX_STATUS_MSG];
	struct conn *o;
	bool later;

	/* Refused before any lookup, so that the answer says nothing about
	 * which ids exist. */
	if (!r->c->admin)
		return cep__set_error(CEP_EPERM, "kill-session is for admins "
				      "(root, the daemon's user or its "
				      "admin_group)");
	for (o = r->s->conns; o != NULL; o = o->next) {
		sess = session_table_find(&o->sessions, m->session_id);
		if (sess != NULL)
			break;
	}
	if (sess == NULL)
		return cep__set_error(CEP_ENOENT, "no session %llu",
				      (unsigned long long)m->session_id);
	/* The job of a busy connection may be running this very session on
	 * the thread pool: it goes when that job ends. */
	later = o->busy && dispatch__job_session(o) == m->session_id;
	log_notice("client %llu (pid %d uid %u) killed session %llu '%s' of "
		   "client %llu (pid %d uid %u)%s", (unsigned long long)r->c->id,
		   (int)r->c->pid, (unsigned)r->c->uid,
		   (unsigned long long)m->session_id, sess->name,
		   (unsigned long long)o->id, (int)o->pid, (unsigned)o->uid,
		   later ? "; it goes when its work in progress ends" : "");
	/* Its runs waiting for their turn never start: they fail as runs
	 * of a killed session, and let go of it. */
	snprintf(why, sizeof(why), "session %llu was killed by an administrator before "
		 "this run started", (unsigned long long)m->session_id);
	(void)fairq_session_fail(r->s, o, sess, CEP_ECANCELED, why);
	if (later)
		o->kill_pending = m->session_id;
	else
		(void)session_table_remove(&o->sessions, m->session_id);
	killed_note(o, m->session_id);
	stats_count(&r->s->stats, STATS_COUNTER_SESSIONS_KILLED, 1);
	cudaep__v1__kill_session_reply__init(rep);
	rep->client_id = o->id;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_KILL_SESSION;
	r->resp->kill_session = rep;
	return 0;
}

/* ---------------------------------------------------------------- config */

void access_limits_set(struct server *s, const struct config *cfg)
{
	s->cfg.uid_max_connections = cfg->uid_max_connections;
	s->cfg.uid_max_sessions = cfg->uid_max_sessions;
	s->cfg.uid_max_regions = cfg->uid_max_regions;
	s->cfg.uid_max_bytes = cfg->uid_max_bytes;
	account_limit_set_uid(s->account, cfg->uid_max_bytes);
}

void access_stats_sync(struct server *s)
{
	s->stats.counters[STATS_COUNTER_UID_BYTES_REFUSED] =
		account_uid_refusals(s->account);
}
