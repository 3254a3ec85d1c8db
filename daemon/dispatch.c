/*
 * dispatch.c — one request in, one response out (see dispatch.h): the
 * session-less and admin requests here, the sessions in dispatch_session.c,
 * memory in dispatch_memory.c and KillSession in access.c.
 *
 * Handlers fail the way the rest of cudaep does: a negative CEP_E* code,
 * with cep__set_error() saying what was wrong. dispatch__response_encode()
 * is the one place that turns such a code and message into the wire's
 * Status. Every fd that arrives with a packet is in the request's fds
 * array until a handler takes it; dispatch_packet() closes whatever is
 * left, so no path leaks one.
 */
#include "daemon/dispatch.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cudaep.pb-c.h"

#include "daemon/access.h"
#include "proto/cep_limits.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/recover.h"
#include "daemon/server.h"
#include "daemon/dispatch_priv.h"

static const char *body_name(Cudaep__V1__Request__BodyCase b)
{
	switch (b) {
	case CUDAEP__V1__REQUEST__BODY_HELLO: return "Hello";
	case CUDAEP__V1__REQUEST__BODY_PING: return "Ping";
	case CUDAEP__V1__REQUEST__BODY_REGISTER_REGION: return "RegisterRegion";
	case CUDAEP__V1__REQUEST__BODY_RELEASE_REGION: return "ReleaseRegion";
	case CUDAEP__V1__REQUEST__BODY_LOAD_MODEL: return "LoadModel";
	case CUDAEP__V1__REQUEST__BODY_SESSION_INFO: return "SessionInfo";
	case CUDAEP__V1__REQUEST__BODY_RUN: return "Run";
	case CUDAEP__V1__REQUEST__BODY_UNLOAD: return "Unload";
	case CUDAEP__V1__REQUEST__BODY_STATUS: return "Status";
	case CUDAEP__V1__REQUEST__BODY_CLIENTS: return "Clients";
	case CUDAEP__V1__REQUEST__BODY_SESSIONS: return "Sessions";
	case CUDAEP__V1__REQUEST__BODY_MEMORY: return "Memory";
	case CUDAEP__V1__REQUEST__BODY_STATS: return "Stats";
	case CUDAEP__V1__REQUEST__BODY_TRIM: return "Trim";
	case CUDAEP__V1__REQUEST__BODY_KILL_SESSION: return "KillSession";
	case CUDAEP__V1__REQUEST__BODY_GRAPHS: return "Graphs";
	case CUDAEP__V1__REQUEST__BODY_KERNELS: return "Kernels";
	case CUDAEP__V1__REQUEST__BODY__NOT_SET: break;
	default: break;
	}
	return "(none)";
}

/* --------------------------------------------------------------- helpers */

static void fds_close(struct server *s, int *fds, int nfds)
{
	int i;

	for (i = 0; i < nfds; i++) {
		if (fds[i] < 0)
			continue;
		close(fds[i]);
		fds[i] = -1;
		stats_count(&s->stats, STATS_COUNTER_FDS_CLOSED, 1);
	}
}

int dispatch__take_fd(struct req *r, int i)
{
	int fd = r->fds[i];

	r->fds[i] = -1;
	return fd;
}

static void *req_alloc(struct req *r, size_t size)
{
	return reqarena_alloc(r->arena, size);
}

static int out_of_arena(void)
{
	return cep__set_error(CEP_ENOMEM, "out of request memory building "
			      "the reply");
}

/* The fds a request must carry: RegisterRegion one; LoadModel one for a
 * model passed as an fd plus one for has_dir_fd; every other body none. */
static int fds_expected(const Cudaep__V1__Request *q)
{
	const Cudaep__V1__LoadModel *m;

	switch (q->body_case) {
	case CUDAEP__V1__REQUEST__BODY_REGISTER_REGION:
		return 1;
	case CUDAEP__V1__REQUEST__BODY_LOAD_MODEL:
		m = q->load_model;
		return (m->source ==
			CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD) +
		       (m->has_dir_fd ? 1 : 0);
	default:
		return 0;
	}
}

void dispatch__name_copy(char *dst, size_t size, const char *src)
{
	size_t n = reqarena_utf8_cut(src, size - 1), i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	dst[n] = '\0';
}

static bool conn_visible(const struct req *r, const struct conn *other)
{
	return r->c->admin || other == r->c;
}

static uint64_t since_us(uint64_t then_ns)
{
	return (uv_hrtime() - then_ns) / 1000;
}

/* ---------------------------------------------------------------- encode */

/*
 * The one translation of an error code into the wire's Status: code 0 is
 * success; otherwise the body is dropped and the message is this thread's
 * cep__set_error() text (or the code's sentence), cut to what the client
 * can decode. A response too large for a packet becomes an error itself.
 */
void dispatch__response_encode(Cudaep__V1__Response *resp, int code,
			       uint8_t *out, size_t *out_len)
{
	Cudaep__V1__Status status = CUDAEP__V1__STATUS__INIT;
	char msg[CEP_MAX_STATUS_MSG], lost[CEP_MAX_STATUS_MSG];
	const char *text;
	size_t size;

	resp->status = &status;
	for (;;) {
		status.code = code;
		status.message = (char *)"";
		if (code != 0) {
			if (!(code == CEP_ENOSPC && resp->body_case ==
			      CUDAEP__V1__RESPONSE__BODY_RUN) &&
			    resp->body_case != CUDAEP__V1__RESPONSE__BODY_RUN_DONE)
				resp->body_case =
					CUDAEP__V1__RESPONSE__BODY__NOT_SET;
			text = cep_last_error();
			if (text[0] == '\0')
				text = cep_strerror(code);
			/* Every lost-context error tells the client what happens
			 * next (daemon/recover.h). */
			if (code == CEP_ECONTEXT) {
				snprintf(lost, sizeof(lost), "the device context was lost "
					 "(%s); this request did not complete; cudaepd "
					 "restores its sessions on a new context: run again",
					 text);
				text = lost;
			}
			dispatch__name_copy(msg, sizeof(msg), text);
			status.message = msg;
		}
		size = cudaep__v1__response__get_packed_size(resp);
		if (size <= CEP_MAX_PACKET)
			break;
		code = cep__set_error(CEP_EINTERNAL, "the reply would take %zu "
				      "bytes, more than a packet's %d",
				      size, CEP_MAX_PACKET);
	}
	*out_len = cudaep__v1__response__pack(resp, out);
}

void dispatch_encode_error(uint64_t id, int code, const char *message,
			   uint8_t *out, size_t *out_len)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;

	resp.id = id;
	cep__set_error(code, "%s", message);
	dispatch__response_encode(&resp, code, out, out_len);
}

/* ------------------------------------------------------------ session-less */

static int handle_hello(struct req *r, const Cudaep__V1__Hello *m)
{
	Cudaep__V1__HelloReply *rep = &r->body->hello;
	struct conn *c = r->c;

	if (c->hello_done)
		return cep__set_error(CEP_EPROTO, "Hello was already received "
				      "on this connection");
	if (m->protocol_version != CEP_PROTOCOL_VERSION) {
		stats_count(&r->s->stats, STATS_COUNTER_HELLO_REFUSED, 1);
		log_notice("client %llu (pid %d uid %u) refused: it speaks "
			   "protocol %u, cudaepd speaks %d",
			   (unsigned long long)c->id, (int)c->pid,
			   (unsigned)c->uid, m->protocol_version,
			   CEP_PROTOCOL_VERSION);
		r->close = true;
		return cep__set_error(CEP_EVERSION, "client speaks protocol "
				      "%u, cudaepd speaks %d",
				      m->protocol_version,
				      CEP_PROTOCOL_VERSION);
	}
	dispatch__name_copy(c->name, sizeof(c->name), m->client_name);
	c->hello_done = true;
	/* Without a page the client still runs, waiting for each reply. */
	if (fence_page_open(r->s, c) != 0)
		log_warning("client %llu: no fence page: %s",
			    (unsigned long long)c->id, cep_last_error());
	log_info("client %llu connected: pid %d uid %u name '%s'",
		 (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
		 c->name);
	cudaep__v1__hello_reply__init(rep);
	rep->protocol_version = CEP_PROTOCOL_VERSION;
	rep->daemon_version = (char *)CEP_VERSION;
	rep->client_id = c->id;
	rep->backend = (char *)r->s->backend->iface.name;
	rep->device_name = (char *)r->s->backend->iface.device;
	rep->device_memory = r->s->backend->device_memory;
	rep->max_packet = CEP_MAX_PACKET;
	rep->fence_slots = c->fence.slots != NULL ? CEP_FENCE_SLOTS : 0;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_HELLO;
	r->resp->hello = rep;
	return 0;
}

static int handle_ping(struct req *r, const Cudaep__V1__Ping *m)
{
	Cudaep__V1__PingReply *rep = &r->body->ping;

	cudaep__v1__ping_reply__init(rep);
	rep->payload = m->payload;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_PING;
	r->resp->ping = rep;
	return 0;
}

static int handle_register_region(struct req *r,
				  const Cudaep__V1__RegisterRegion *m)
{
	Cudaep__V1__RegisterRegionReply *rep = &r->body->register_region;
	struct region *reg;
	int ret;

	/* Refused before the fd is taken: dispatch_packet() closes it. */
	ret = recover_refuse(r->s, "RegisterRegion");
	if (ret != 0)
		return ret;
	ret = access_region_admit(r->s, r->c);
	if (ret != 0)
		return ret;
	ret = region_table_register(&r->c->regions, dispatch__take_fd(r, 0),
				    m->size, m->name, &reg);
	if (ret != 0)
		return ret;
	log_debug("client %llu registered region %llu of %llu bytes",
		  (unsigned long long)r->c->id, (unsigned long long)reg->id,
		  (unsigned long long)reg->size);
	cudaep__v1__register_region_reply__init(rep);
	rep->region_id = reg->id;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_REGISTER_REGION;
	r->resp->register_region = rep;
	return 0;
}

static int handle_release_region(struct req *r,
				 const Cudaep__V1__ReleaseRegion *m)
{
	Cudaep__V1__ReleaseRegionReply *rep = &r->body->release_region;
	int ret;

	ret = region_table_release(&r->c->regions, m->region_id);
	if (ret != 0)
		return ret;
	cudaep__v1__release_region_reply__init(rep);
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_RELEASE_REGION;
	r->resp->release_region = rep;
	return 0;
}

/* ------------------------------------------------------------------ admin */

static int handle_status(struct req *r)
{
	Cudaep__V1__StatusReply *rep = &r->body->status;
	struct server *s = r->s;

	cudaep__v1__status_reply__init(rep);
	rep->daemon_version = (char *)CEP_VERSION;
	rep->protocol_version = CEP_PROTOCOL_VERSION;
	rep->pid = getpid();
	rep->uptime_us = since_us(s->start_ns);
	rep->backend = (char *)r->s->backend->iface.name;
	rep->device_name = (char *)r->s->backend->iface.device;
	rep->socket_path = reqarena_strcut(r->arena, s->socket_path,
					   CONFIG_PATH_MAX);
	if (rep->socket_path == NULL)
		return out_of_arena();
	rep->clients = s->n_conns;
	rep->sessions = s->sessions.count;
	rep->regions = s->regions.count;
	rep->region_bytes = s->regions.bytes;
	rep->requests = s->stats.counters[STATS_COUNTER_REQUESTS];
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_STATUS_REPLY;
	r->resp->status_reply = rep;
	return 0;
}

/* An array of n message pointers, each pointing at a zeroed struct of
 * size bytes, all in the arena. */
static void **req_alloc_list(struct req *r, size_t n, size_t size)
{
	void **list;
	char *items;
	size_t i;

	list = req_alloc(r, (n ? n : 1) * sizeof(*list));
	items = req_alloc(r, (n ? n : 1) * size);
	if (list == NULL || items == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		list[i] = items + i * size;
	return list;
}

static int handle_clients(struct req *r)
{
	Cudaep__V1__ClientsReply *rep = &r->body->clients;
	Cudaep__V1__ClientEntry **list, *e;
	struct conn *c;
	uint32_t total = 0;
	size_t n = 0;

	for (c = r->s->conns; c != NULL; c = c->next)
		total += conn_visible(r, c);
	list = (Cudaep__V1__ClientEntry **)req_alloc_list(r,
		total < CEP_MAX_LIST ? total : CEP_MAX_LIST, sizeof(**list));
	if (list == NULL)
		return out_of_arena();
	for (c = r->s->conns; c != NULL && n < CEP_MAX_LIST; c = c->next) {
		if (!conn_visible(r, c))
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

static int handle_sessions(struct req *r)
{
	Cudaep__V1__SessionsReply *rep = &r->body->sessions;
	Cudaep__V1__SessionEntry **list, *e;
	struct session *sess;
	struct conn *c;
	uint32_t total = 0, i;
	size_t n = 0;

	for (c = r->s->conns; c != NULL; c = c->next)
		if (conn_visible(r, c))
			total += c->sessions.ids.count;
	list = (Cudaep__V1__SessionEntry **)req_alloc_list(r,
		total < CEP_MAX_LIST ? total : CEP_MAX_LIST, sizeof(**list));
	if (list == NULL)
		return out_of_arena();
	for (c = r->s->conns; c != NULL; c = c->next) {
		if (!conn_visible(r, c))
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

/*
 * "total" (every region of the daemon: the same figure Status gives anyone)
 * then one "client:<id>" entry per connection the caller may see.
 */
static int handle_stats(struct req *r)
{
	Cudaep__V1__StatsReply *rep = &r->body->stats;
	struct stats *st = &r->s->stats;
	struct backend_counters bc;
	Cudaep__V1__Counter **counters;
	Cudaep__V1__Gauge **gauges;
	size_t i;

	access_stats_sync(r->s);
	/* The backend counts its copies itself; they are read here. */
	backend_counters_get(r->s->backend, &bc);
	st->counters[STATS_COUNTER_COPY_BYTES_PINNED] = bc.bytes_h2d_pinned + bc.bytes_d2h_pinned;
	st->counters[STATS_COUNTER_COPY_BYTES_PAGEABLE] =
		bc.bytes_h2d_pageable + bc.bytes_d2h_pageable;
	counters = (Cudaep__V1__Counter **)req_alloc_list(r,
		STATS_COUNTER_COUNT, sizeof(**counters));
	gauges = (Cudaep__V1__Gauge **)req_alloc_list(r, STATS_GAUGE_COUNT,
		sizeof(**gauges));
	if (counters == NULL || gauges == NULL)
		return out_of_arena();
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

/* -------------------------------------------------------------- dispatch */

static int req_handle(struct req *r, const Cudaep__V1__Request *q)
{
	switch (q->body_case) {
	case CUDAEP__V1__REQUEST__BODY_HELLO:
		return handle_hello(r, q->hello);
	case CUDAEP__V1__REQUEST__BODY_PING:
		return handle_ping(r, q->ping);
	case CUDAEP__V1__REQUEST__BODY_REGISTER_REGION:
		return handle_register_region(r, q->register_region);
	case CUDAEP__V1__REQUEST__BODY_RELEASE_REGION:
		return handle_release_region(r, q->release_region);
	case CUDAEP__V1__REQUEST__BODY_LOAD_MODEL:
		return dispatch__load_model(r, q->load_model);
	case CUDAEP__V1__REQUEST__BODY_SESSION_INFO:
		return dispatch__session_info(r, q->session_info);
	case CUDAEP__V1__REQUEST__BODY_RUN:
		return dispatch__run(r, q->run);
	case CUDAEP__V1__REQUEST__BODY_UNLOAD:
		return dispatch__unload(r, q->unload);
	case CUDAEP__V1__REQUEST__BODY_STATUS:
		return handle_status(r);
	case CUDAEP__V1__REQUEST__BODY_CLIENTS:
		return handle_clients(r);
	case CUDAEP__V1__REQUEST__BODY_SESSIONS:
		return handle_sessions(r);
	case CUDAEP__V1__REQUEST__BODY_MEMORY:
		return dispatch__memory(r);
	case CUDAEP__V1__REQUEST__BODY_STATS:
		return handle_stats(r);
	case CUDAEP__V1__REQUEST__BODY_TRIM:
		return dispatch__trim(r);
	case CUDAEP__V1__REQUEST__BODY_KILL_SESSION:
		return dispatch__kill_session(r, q->kill_session);
	case CUDAEP__V1__REQUEST__BODY_GRAPHS:
		return dispatch__graphs(r);
	case CUDAEP__V1__REQUEST__BODY_KERNELS:
		return dispatch__kernels(r);
	case CUDAEP__V1__REQUEST__BODY__NOT_SET:
	default:
		break;
	}
	return cep__set_error(CEP_EINTERNAL, "no handler for body %d",
			      (int)q->body_case);
}

/* Checks what must hold before any handler runs: a whole packet that
 * decodes as a Request with a body, Hello first, the body's fd count. */
static int req_check(struct req *r, const Cudaep__V1__Request *q,
		     unsigned flags)
{
	const struct conn *c = r->c;
	int want;

	if (flags & DISPATCH_FDS_TRUNCATED) {
		stats_count(&r->s->stats, STATS_COUNTER_BAD_PACKETS, 1);
		log_notice("client %llu: request %llu carried more than %d fds",
			   (unsigned long long)c->id,
			   (unsigned long long)q->id, CEP_MAX_FDS);
		return cep__set_error(CEP_EBADMSG, "request %llu carried more "
				      "than %d fds; all were closed",
				      (unsigned long long)q->id, CEP_MAX_FDS);
	}
	if (q->body_case == CUDAEP__V1__REQUEST__BODY__NOT_SET) {
		stats_count(&r->s->stats, STATS_COUNTER_BAD_PACKETS, 1);
		log_notice("client %llu: request %llu has no body",
			   (unsigned long long)c->id,
			   (unsigned long long)q->id);
		if (q->base.n_unknown_fields > 0)
			return cep__set_error(CEP_EBADMSG, "request %llu has "
					      "an unknown body (field %u)",
					      (unsigned long long)q->id,
					      q->base.unknown_fields[0].tag);
		return cep__set_error(CEP_EBADMSG, "request %llu has no body",
				      (unsigned long long)q->id);
	}
	if (!c->hello_done &&
	    q->body_case != CUDAEP__V1__REQUEST__BODY_HELLO)
		return cep__set_error(CEP_EPROTO, "say Hello first (got %s)",
				      body_name(q->body_case));
	want = fds_expected(q);
	if (r->nfds != want) {
		log_notice("client %llu: %s with %d fds",
			   (unsigned long long)c->id, body_name(q->body_case),
			   r->nfds);
		return cep__set_error(CEP_EBADF, "%s expects %d fd%s, got %d",
				      body_name(q->body_case), want,
				      want == 1 ? "" : "s", r->nfds);
	}
	return 0;
}

int dispatch_packet(struct server *s, struct conn *c, const uint8_t *buf,
		    size_t len, int *fds, int nfds, unsigned flags,
		    uint8_t *out, size_t *out_len)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	Cudaep__V1__Request *q;
	union reply_body body;
	struct req r = {
		.s = s, .c = c, .arena = &s->arena, .resp = &resp,
		.body = &body, .fds = fds, .nfds = nfds,
	};
	int ret;

	cep__clear_error();
	reqarena_reset(&s->arena);
	stats_count(&s->stats, STATS_COUNTER_REQUESTS, 1);
	stats_count(&s->stats, STATS_COUNTER_FDS_RECEIVED, (uint64_t)nfds);
	c->requests++;
	if (flags & DISPATCH_OVERSIZED) {
		stats_count(&s->stats, STATS_COUNTER_OVERSIZED_PACKETS, 1);
		log_notice("client %llu: packet over %d bytes refused",
			   (unsigned long long)c->id, CEP_MAX_PACKET);
		ret = cep__set_error(CEP_EMSGSIZE, "packet refused: requests "
				     "are limited to %d bytes", CEP_MAX_PACKET);
		goto out;
	}
	q = cudaep__v1__request__unpack(reqarena_allocator(&s->arena), len,
					buf);
	if (q == NULL) {
		stats_count(&s->stats, STATS_COUNTER_BAD_PACKETS, 1);
		log_notice("client %llu: malformed request of %zu bytes",
			   (unsigned long long)c->id, len);
		if (s->arena.failed)
			ret = cep__set_error(CEP_EBADMSG, "malformed request: "
					     "decoding its %zu bytes needs "
					     "more than %zu bytes of memory",
					     len, s->arena.limit);
		else
			ret = cep__set_error(CEP_EBADMSG, "malformed request: "
					     "%zu bytes do not decode as a "
					     "Request", len);
		goto out;
	}
	resp.id = q->id;
	ret = req_check(&r, q, flags);
	if (ret == 0)
		ret = req_handle(&r, q);
out:
	fds_close(s, fds, nfds);
	if (ret < 0) {
		stats_count(&s->stats, STATS_COUNTER_REQUEST_ERRORS, 1);
		log_debug("client %llu: request %llu: %s: %s",
			  (unsigned long long)c->id,
			  (unsigned long long)resp.id, cep_err_name(ret),
			  cep_last_error());
	}
	if (ret == DISPATCH__DEFERRED) {
		*out_len = 0;
		reqarena_reset(&s->arena);
		return DISPATCH_DEFERRED;
	}
	dispatch__response_encode(&resp, ret, out, out_len);
	reqarena_reset(&s->arena);
	/* Without a socket there is no loop to finish runs later; with one,
	 * this reply must leave before any completion's error. */
	if (c->fd < 0)
		fence_reap(s, false);
	return r.close ? DISPATCH_CLOSE : 0;
}
