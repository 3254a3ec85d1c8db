/*
 * dispatch.c — one request in, one response out (see dispatch.h): the
 * decoding, the checks every request passes, the routing to the handlers
 * of dispatch_load.c, dispatch_run.c, dispatch_admin.c and
 * dispatch_memory.c, and the session-less requests (Hello, Ping, regions).
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

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/client.h"
#include "daemon/dispatch_priv.h"
#include "daemon/recover.h"
#include "gpu/backend.h"
#include "proto/cep_limits.h"

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
	case CUDAEP__V1__REQUEST__BODY_GENERATE: return "Generate";
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

static void fds_close(struct dispatch *d, int *fds, int nfds)
{
	int i;

	for (i = 0; i < nfds; i++) {
		if (fds[i] < 0)
			continue;
		close(fds[i]);
		fds[i] = -1;
		stats_count(d->stats, STATS_COUNTER_FDS_CLOSED, 1);
	}
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

/* ------------------------------------------------------------ session-less */

static int handle_hello(struct req *r, const Cudaep__V1__Hello *m)
{
	Cudaep__V1__HelloReply *rep = &r->body->hello;
	struct client *c = r->c;
	struct dispatch *d = r->d;
	bool pin;

	if (c->hello_done)
		return cep__set_error(CEP_EPROTO, "Hello was already received "
				      "on this connection");
	if (m->protocol_version != CEP_PROTOCOL_VERSION) {
		stats_count(d->stats, STATS_COUNTER_HELLO_REFUSED, 1);
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
	/* Without a page the client still runs, waiting for each reply. While
	 * the backend is lost, the new image of the recovery pins it with
	 * every other page. A detached client has nobody to pass its fd to. */
	pin = !d->recover->recovering && !backend_lost(d->backend);
	if (fence_page_open(&c->page, pin ? d->backend : NULL, c->conn.fd >= 0) != 0)
		log_warning("client %llu: no fence page: %s",
			    (unsigned long long)c->id, cep_last_error());
	log_info("client %llu connected: pid %d uid %u name '%s'",
		 (unsigned long long)c->id, (int)c->pid, (unsigned)c->uid,
		 c->name);
	cudaep__v1__hello_reply__init(rep);
	rep->protocol_version = CEP_PROTOCOL_VERSION;
	rep->daemon_version = (char *)CEP_VERSION;
	rep->client_id = c->id;
	rep->backend = (char *)d->backend->iface.name;
	rep->device_name = (char *)d->backend->iface.device;
	rep->device_memory = d->backend->device_memory;
	rep->max_packet = CEP_MAX_PACKET;
	rep->fence_slots = c->page.slots != NULL ? CEP_FENCE_SLOTS : 0;
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
	ret = recover_refuse(r->d->recover, "RegisterRegion");
	if (ret != 0)
		return ret;
	ret = access_region_admit(r->d->access, r->c);
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
	case CUDAEP__V1__REQUEST__BODY_GENERATE:
		return dispatch__generate(r, q->generate);
	case CUDAEP__V1__REQUEST__BODY_STATUS:
		return dispatch__status(r);
	case CUDAEP__V1__REQUEST__BODY_CLIENTS:
		return dispatch__clients(r);
	case CUDAEP__V1__REQUEST__BODY_SESSIONS:
		return dispatch__sessions(r);
	case CUDAEP__V1__REQUEST__BODY_MEMORY:
		return dispatch__memory(r);
	case CUDAEP__V1__REQUEST__BODY_STATS:
		return dispatch__stats(r);
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
	const struct client *c = r->c;
	int want;

	if (flags & DISPATCH_FDS_TRUNCATED) {
		stats_count(r->d->stats, STATS_COUNTER_BAD_PACKETS, 1);
		log_notice("client %llu: request %llu carried more than %d fds",
			   (unsigned long long)c->id,
			   (unsigned long long)q->id, CEP_MAX_FDS);
		return cep__set_error(CEP_EBADMSG, "request %llu carried more "
				      "than %d fds; all were closed",
				      (unsigned long long)q->id, CEP_MAX_FDS);
	}
	if (q->body_case == CUDAEP__V1__REQUEST__BODY__NOT_SET) {
		stats_count(r->d->stats, STATS_COUNTER_BAD_PACKETS, 1);
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

int dispatch_packet(struct dispatch *d, struct client *c, const uint8_t *buf, size_t len,
		    int *fds, int nfds, unsigned flags, uint8_t *out, size_t *out_len)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	Cudaep__V1__Request *q;
	union reply_body body;
	struct req r = {
		.d = d, .c = c, .arena = d->arena, .resp = &resp,
		.body = &body, .fds = fds, .nfds = nfds,
	};
	int ret;

	cep__clear_error();
	reqarena_reset(d->arena);
	stats_count(d->stats, STATS_COUNTER_REQUESTS, 1);
	stats_count(d->stats, STATS_COUNTER_FDS_RECEIVED, (uint64_t)nfds);
	c->requests++;
	if (flags & DISPATCH_OVERSIZED) {
		stats_count(d->stats, STATS_COUNTER_OVERSIZED_PACKETS, 1);
		log_notice("client %llu: packet over %d bytes refused",
			   (unsigned long long)c->id, CEP_MAX_PACKET);
		ret = cep__set_error(CEP_EMSGSIZE, "packet refused: requests "
				     "are limited to %d bytes", CEP_MAX_PACKET);
		goto out;
	}
	q = cudaep__v1__request__unpack(reqarena_allocator(d->arena), len,
					buf);
	if (q == NULL) {
		stats_count(d->stats, STATS_COUNTER_BAD_PACKETS, 1);
		log_notice("client %llu: malformed request of %zu bytes",
			   (unsigned long long)c->id, len);
		if (d->arena->failed)
			ret = cep__set_error(CEP_EBADMSG, "malformed request: "
					     "decoding its %zu bytes needs "
					     "more than %zu bytes of memory",
					     len, d->arena->limit);
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
	fds_close(d, fds, nfds);
	if (ret < 0) {
		stats_count(d->stats, STATS_COUNTER_REQUEST_ERRORS, 1);
		log_debug("client %llu: request %llu: %s: %s",
			  (unsigned long long)c->id,
			  (unsigned long long)resp.id, cep_err_name(ret),
			  cep_last_error());
	}
	if (ret == DISPATCH__DEFERRED) {
		*out_len = 0;
		reqarena_reset(d->arena);
		return DISPATCH_DEFERRED;
	}
	dispatch__response_encode(&resp, ret, out, out_len);
	reqarena_reset(d->arena);
	/* Without a socket there is no loop to finish runs later; with one,
	 * this reply must leave before any completion's error. */
	if (c->conn.fd < 0)
		run_queue_reap(d->runs, false);
	return r.close ? DISPATCH_CLOSE : 0;
}
