/*
 * dispatch_admin.c — the requests cudaepctl sends (dispatch_priv.h):
 * Status, Clients, Sessions and Stats, which a non-admin may send for
 * what is its own, and KillSession, which only an admin may.
 */
#include <stdio.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "alloc/account.h"
#include "daemon/access.h"
#include "daemon/client.h"
#include "daemon/config.h"
#include "daemon/dispatch_priv.h"
#include "daemon/fairq.h"
#include "gpu/backend.h"
#include "proto/cep_limits.h"

static bool client_visible(const struct req *r, const struct client *other)
{
	return r->c->admin || other == r->c;
}

/* What the account holds as sess's key/value cache. */
static uint64_t session_kv_bytes(const struct dispatch *d, const struct session *sess)
{
	struct account_usage u;
	struct alloc_owner o = { sess->client_id, sess->id };

	if (account_usage_get(d->account, o, &u) != 0)
		return 0;
	return u.current[ALLOC_ROLE_KV_CACHE];
}

static uint64_t since_us(uint64_t then_ns)
{
	return (uv_hrtime() - then_ns) / 1000;
}

int dispatch__status(struct req *r)
{
	Cudaep__V1__StatusReply *rep = &r->body->status;
	struct dispatch *d = r->d;

	cudaep__v1__status_reply__init(rep);
	rep->daemon_version = (char *)CEP_VERSION;
	rep->protocol_version = CEP_PROTOCOL_VERSION;
	rep->pid = getpid();
	rep->uptime_us = since_us(*d->start_ns);
	rep->backend = (char *)d->backend->iface.name;
	rep->device_name = (char *)d->backend->iface.device;
	rep->socket_path = reqarena_strcut(r->arena, d->socket_path, CONFIG_PATH_MAX);
	if (rep->socket_path == NULL)
		return dispatch__out_of_arena();
	rep->clients = d->clients->n;
	rep->sessions = d->sessions->count;
	rep->regions = d->regions->count;
	rep->region_bytes = d->regions->bytes;
	rep->requests = d->stats->counters[STATS_COUNTER_REQUESTS];
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_STATUS_REPLY;
	r->resp->status_reply = rep;
	return 0;
}

int dispatch__clients(struct req *r)
{
	Cudaep__V1__ClientsReply *rep = &r->body->clients;
	Cudaep__V1__ClientEntry **list, *e;
	struct client *c;
	uint32_t total = 0;
	size_t n = 0;

	for (c = r->d->clients->head; c != NULL; c = c->next)
		total += client_visible(r, c);
	list = (Cudaep__V1__ClientEntry **)dispatch__alloc_list(r,
		total < CEP_MAX_LIST ? total : CEP_MAX_LIST, sizeof(**list));
	if (list == NULL)
		return dispatch__out_of_arena();
	for (c = r->d->clients->head; c != NULL && n < CEP_MAX_LIST; c = c->next) {
		if (!client_visible(r, c))
			continue;
		e = list[n++];
		cudaep__v1__client_entry__init(e);
		e->client_id = c->id;
		e->name = c->name;
		e->pid = c->pid;
		e->uid = c->uid;
		e->gid = c->gid;
		e->regions = c->regions.ids.count;
		e->region_bytes = c->regions.bytes;
		e->sessions = c->sessions.ids.count;
		e->requests = c->requests;
		e->connected_us = since_us(c->connected_ns);
	}
	cudaep__v1__clients_reply__init(rep);
	rep->n_clients = n;
	rep->clients = list;
	rep->total = total;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_CLIENTS;
	r->resp->clients = rep;
	return 0;
}

int dispatch__sessions(struct req *r)
{
	Cudaep__V1__SessionsReply *rep = &r->body->sessions;
	Cudaep__V1__SessionEntry **list, *e;
	struct session *sess;
	struct client *c;
	uint32_t total = 0, i;
	size_t n = 0;

	for (c = r->d->clients->head; c != NULL; c = c->next)
		if (client_visible(r, c))
			total += c->sessions.ids.count;
	list = (Cudaep__V1__SessionEntry **)dispatch__alloc_list(r,
		total < CEP_MAX_LIST ? total : CEP_MAX_LIST, sizeof(**list));
	if (list == NULL)
		return dispatch__out_of_arena();
	for (c = r->d->clients->head; c != NULL; c = c->next) {
		if (!client_visible(r, c))
			continue;
		for (i = 0; i < c->sessions.ids.count && n < CEP_MAX_LIST; i++) {
			sess = c->sessions.ids.items[i];
			e = list[n++];
			cudaep__v1__session_entry__init(e);
			e->session_id = sess->id;
			e->client_id = sess->client_id;
			e->name = sess->name;
			e->runs = sess->runs;
			e->loaded_us = since_us(sess->loaded_ns);
			e->precision = (Cudaep__V1__Precision)sess->opts.precision;
			e->plans = (uint32_t)sess->stats.plans_cached;
			e->plan_hits = sess->stats.plan_hits;
			e->graph_replays = sess->stats.graph_replays;
			e->eager_runs = sess->stats.eager_runs;
			e->capture_failures = sess->stats.capture_failures;
			e->capture_error = sess->stats.capture_error;
			e->plan_bytes = sess->stats.plan_bytes;
			e->weight_bytes = sess->stats.weight_bytes;
			e->batching = sess->batch != NULL;
			e->batched_runs = sess->batched_runs;
			e->kv_bytes = session_kv_bytes(r->d, sess);
			e->generating = c->work == CLIENT_JOB && dispatch__job_gen(c) == sess->id;
		}
	}
	cudaep__v1__sessions_reply__init(rep);
	rep->n_sessions = n;
	rep->sessions = list;
	rep->total = total;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_SESSIONS;
	r->resp->sessions = rep;
	return 0;
}

int dispatch__stats(struct req *r)
{
	Cudaep__V1__StatsReply *rep = &r->body->stats;
	struct stats *st = r->d->stats;
	struct backend_counters bc;
	Cudaep__V1__Counter **counters;
	Cudaep__V1__Gauge **gauges;
	size_t i;

	access_stats_sync(r->d->access);
	/* The backend counts its copies itself; they are read here. */
	backend_counters_get(r->d->backend, &bc);
	st->counters[STATS_COUNTER_COPY_BYTES_PINNED] = bc.bytes_h2d_pinned + bc.bytes_d2h_pinned;
	st->counters[STATS_COUNTER_COPY_BYTES_PAGEABLE] =
		bc.bytes_h2d_pageable + bc.bytes_d2h_pageable;
	counters = (Cudaep__V1__Counter **)dispatch__alloc_list(r, STATS_COUNTER_COUNT,
								 sizeof(**counters));
	gauges = (Cudaep__V1__Gauge **)dispatch__alloc_list(r, STATS_GAUGE_COUNT,
							     sizeof(**gauges));
	if (counters == NULL || gauges == NULL)
		return dispatch__out_of_arena();
	for (i = 0; i < STATS_COUNTER_COUNT; i++) {
		cudaep__v1__counter__init(counters[i]);
		counters[i]->name = (char *)stats_counter_name(i);
		counters[i]->value = st->counters[i];
	}
	for (i = 0; i < STATS_GAUGE_COUNT; i++) {
		cudaep__v1__gauge__init(gauges[i]);
		gauges[i]->name = (char *)stats_gauge_name(i);
		gauges[i]->current = st->gauges[i].current;
		gauges[i]->peak = st->gauges[i].peak;
		gauges[i]->total = st->gauges[i].total;
	}
	cudaep__v1__stats_reply__init(rep);
	rep->version = STATS_VERSION;
	rep->n_counters = STATS_COUNTER_COUNT;
	rep->counters = counters;
	rep->n_gauges = STATS_GAUGE_COUNT;
	rep->gauges = gauges;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_STATS;
	r->resp->stats = rep;
	return 0;
}

int dispatch__kill_session(struct req *r, const Cudaep__V1__KillSession *m)
{
	Cudaep__V1__KillSessionReply *rep = &r->body->kill_session;
	struct session *sess = NULL;
	char why[CEP_MAX_STATUS_MSG];
	struct client *o;
	bool later;

	/* Refused before any lookup, so that the answer says nothing about
	 * which ids exist. */
	if (!r->c->admin)
		return cep__set_error(CEP_EPERM, "kill-session is for admins (root, the "
				      "daemon's user or its admin_group)");
	for (o = r->d->clients->head; o != NULL; o = o->next) {
		sess = session_table_find(&o->sessions, m->session_id);
		if (sess != NULL)
			break;
	}
	if (sess == NULL)
		return cep__set_error(CEP_ENOENT, "no session %llu",
				      (unsigned long long)m->session_id);
	/* The job of a busy client may be running this very session on the
	 * thread pool: it goes when that job ends. */
	later = dispatch__job_session(o) == m->session_id;
	log_notice("client %llu (pid %d uid %u) killed session %llu '%s' of client %llu "
		   "(pid %d uid %u)%s", (unsigned long long)r->c->id, (int)r->c->pid,
		   (unsigned)r->c->uid, (unsigned long long)m->session_id, sess->name,
		   (unsigned long long)o->id, (int)o->pid, (unsigned)o->uid,
		   later ? "; it goes when its work in progress ends" : "");
	/* Its runs waiting for their turn never start: they fail as runs
	 * of a killed session, and let go of it. */
	snprintf(why, sizeof(why), "session %llu was killed by an administrator before "
		 "this run started", (unsigned long long)m->session_id);
	(void)fairq_fail(r->d->fairq, &o->lanes, sess, CEP_ECANCELED, why);
	if (later)
		o->kill_pending = m->session_id;
	else
		(void)session_table_remove(&o->sessions, m->session_id);
	access_killed_note(o, m->session_id);
	stats_count(r->d->stats, STATS_COUNTER_SESSIONS_KILLED, 1);
	cudaep__v1__kill_session_reply__init(rep);
	rep->client_id = o->id;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_KILL_SESSION;
	r->resp->kill_session = rep;
	return 0;
}
