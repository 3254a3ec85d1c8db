/*
 * server_handover.c — the server's part of a handover (server.h,
 * handover.h): what only the server holds (the listener, the id counters,
 * the counters, the start time) and the order in which the clients and
 * their sessions are saved and restored; each client, connection, page,
 * region and session saves and restores its own fields.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/handover.h"
#include "daemon/server.h"

/* ================================================================ old image */

/* The counters, and the gauges' peaks and totals, by name. */
static void stats_save(struct handover_build *b, const struct stats *st, HvHandover *m)
{
	int i;

	m->counters = handover_alloc(b, sizeof(*m->counters) * STATS_COUNTER_COUNT);
	for (i = 0; m->counters != NULL && i < STATS_COUNTER_COUNT; i++) {
		HvCounter *hc = handover_alloc(b, sizeof(*hc));

		if (hc == NULL)
			return;
		cudaepd__handover__counter__init(hc);
		hc->name = (char *)stats_counter_name((enum stats_counter)i);
		hc->value = st->counters[i];
		m->counters[m->n_counters++] = hc;
	}
	m->gauges = handover_alloc(b, sizeof(*m->gauges) * STATS_GAUGE_COUNT);
	for (i = 0; m->gauges != NULL && i < STATS_GAUGE_COUNT; i++) {
		HvGauge *hg = handover_alloc(b, sizeof(*hg));

		if (hg == NULL)
			return;
		cudaepd__handover__gauge__init(hg);
		hg->name = (char *)stats_gauge_name((enum stats_gauge)i);
		hg->peak = st->gauges[i].peak;
		hg->total = st->gauges[i].total;
		m->gauges[m->n_gauges++] = hg;
	}
}

int server_handover(struct server *s, uint64_t fault_ns, uint32_t runs_failed,
		    const char *why)
{
	HvHandover m = CUDAEPD__HANDOVER__HANDOVER__INIT;
	HvListener l = CUDAEPD__HANDOVER__LISTENER__INIT;
	struct handover_build *b;
	const struct client *c;
	uint32_t n_sessions = 0, n_regions = 0;
	char summary[128];
	int ret;

	if (s->argv == NULL || s->argc < 1)
		return cep__set_error(CEP_EINVAL, "no command line to re-execute cudaepd with");
	ret = handover_build_new(&b);
	if (ret != 0)
		return ret;
	m.fault_ns = fault_ns;
	m.runs_failed = runs_failed;
	m.why = (char *)(why != NULL ? why : "");
	m.start_ns = s->start_ns;
	m.next_client_id = s->clients.next_id;
	m.next_session_id = s->sessions.next_id;
	m.next_region_id = s->regions.next_id;
	m.last_recovery_time = s->stats.gauges[STATS_GAUGE_LAST_RECOVERY].current;
	stats_save(b, &s->stats, &m);
	if (s->listen_fd >= 0) {
		l.fd = handover_keep_fd(b, s->listen_fd);
		l.path = s->socket_path;
		l.activated = s->activated;
		l.unlink_socket = s->unlink_socket;
		m.listener = &l;
	}
	m.clients = handover_alloc(b, sizeof(*m.clients) * s->clients.n);
	for (c = s->clients.head; m.clients != NULL && c != NULL; c = c->next) {
		/* Those on their way out are not handed over: their sockets
		 * close with the exec. */
		if (c->conn.fd < 0 || c->life != CLIENT_LIVE)
			continue;
		m.clients[m.n_clients] = client_save(c, b);
		if (m.clients[m.n_clients] == NULL)
			break;
		n_sessions += c->sessions.ids.count;
		n_regions += c->regions.ids.count;
		m.n_clients++;
	}
	snprintf(summary, sizeof(summary), "%zu clients, %u sessions, %u regions", m.n_clients,
		 n_sessions, n_regions);
	ret = handover_exec(b, &m, s->argv, summary);
	handover_build_free(b);
	return ret;
}

/* ================================================================ new image */

int server_listener_restore(struct server *s)
{
	const HvListener *l;
	int fd, fl;

	if (s->handover == NULL || (l = handover_msg(s->handover)->listener) == NULL)
		return 0;
	fd = handover_fd_take(s->handover, l->fd, "the listening socket");
	if (fd < 0)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0 || fl < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
		log_err("handover: fd %d is not a listening SOCK_SEQPACKET Unix socket; "
			"listening afresh", fd);
		close(fd);
		return 0;
	}
	s->listen_fd = fd;
	s->activated = l->activated;
	s->unlink_socket = l->unlink_socket;
	snprintf(s->socket_path, sizeof(s->socket_path), "%s", l->path ? l->path : "");
	return 1;
}

/* What a restore did, for its log line. */
struct tally {
	uint32_t clients, clients_lost;
	uint32_t sessions, sessions_lost;
	struct client_tally c;
};

static void sessions_restore(struct server *s, struct client *c, const HvClient *hc,
			     struct tally *t)
{
	uint64_t now = uv_hrtime();
	struct session *sess;
	size_t i;
	int ret;

	for (i = 0; i < hc->n_sessions; i++) {
		const HvSession *hs = hc->sessions[i];

		cep__clear_error();
		ret = session_restore(&c->sessions, hs, now, &sess);
		if (sess == NULL) {
			log_warning("client %llu: a session could not be taken over: %s",
				    (unsigned long long)c->id, cep_last_error());
			t->sessions_lost++;
			continue;
		}
		if (ret == 0)
			ret = dispatch_session_reopen(&s->d, c, sess, s->handover, hs);
		if (ret != 0) {
			sess->restore_err = ret < 0 ? ret : CEP_EINTERNAL;
			t->sessions_lost++;
			log_warning("client %llu session %llu '%s' could not be restored on the "
				    "new context: %s: %s", (unsigned long long)c->id,
				    (unsigned long long)sess->id, sess->name, cep_err_name(ret),
				    cep_last_error());
			continue;
		}
		t->sessions++;
	}
}

/* The counters carry on; a gauge's value is what re-creating the objects
 * made it, its peak and total carry on. */
static void stats_restore(struct stats *st, const HvHandover *m)
{
	size_t i;
	int k;

	for (i = 0; i < m->n_counters; i++)
		for (k = 0; k < STATS_COUNTER_COUNT; k++)
			if (m->counters[i]->name != NULL &&
			    strcmp(m->counters[i]->name, stats_counter_name((enum stats_counter)k)) == 0)
				st->counters[k] = m->counters[i]->value;
	for (i = 0; i < m->n_gauges; i++) {
		for (k = 0; k < STATS_GAUGE_COUNT; k++) {
			struct stats_gauge_value *g = &st->gauges[k];

			if (m->gauges[i]->name == NULL ||
			    strcmp(m->gauges[i]->name, stats_gauge_name((enum stats_gauge)k)) != 0)
				continue;
			g->total = m->gauges[i]->total;
			g->peak = m->gauges[i]->peak > g->current ? m->gauges[i]->peak : g->current;
		}
	}
}

void server_restore(struct server *s)
{
	struct handover *h = s->handover;
	struct tally t = { 0 };
	const HvHandover *m;
	struct client *c;
	uint64_t now, ns;
	size_t i;

	if (h == NULL)
		return;
	m = handover_msg(h);
	if (m->next_client_id > s->clients.next_id)
		s->clients.next_id = m->next_client_id;
	if (m->next_session_id > s->sessions.next_id)
		s->sessions.next_id = m->next_session_id;
	if (m->next_region_id > s->regions.next_id)
		s->regions.next_id = m->next_region_id;
	now = uv_hrtime();
	if (m->start_ns != 0 && m->start_ns <= now)
		s->start_ns = m->start_ns;
	for (i = 0; i < m->n_clients; i++) {
		const HvClient *hc = m->clients[i];

		cep__clear_error();
		if (client_restore(&s->clients, s->backend, &s->access, h, hc, &t.c, &c) != 0) {
			log_warning("client %llu could not be taken over: %s",
				    (unsigned long long)hc->id, cep_last_error());
			t.clients_lost++;
			continue;
		}
		sessions_restore(s, c, hc, &t);
		t.clients++;
	}
	stats_restore(&s->stats, m);
	now = uv_hrtime();
	ns = m->fault_ns != 0 && m->fault_ns <= now ? now - m->fault_ns : 0;
	stats_count(&s->stats, STATS_COUNTER_RECOVERIES, 1);
	stats_count(&s->stats, STATS_COUNTER_HANDOVERS, 1);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_RUNS_FAILED, m->runs_failed);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_NS, ns);
	stats_gauge_add(&s->stats, STATS_GAUGE_LAST_RECOVERY,
			(int64_t)time(NULL) - s->stats.gauges[STATS_GAUGE_LAST_RECOVERY].current);
	log_warning("recovered from the lost context in %.1f ms on the %s backend (%s) in a "
		    "new image of cudaepd: %u runs failed, %u sessions restored, %u could not "
		    "be; %u clients and %u regions taken over, %u and %u could not be, %u fence "
		    "pages lost", (double)ns / 1e6, s->backend->iface.name,
		    s->backend->iface.device, m->runs_failed, t.sessions, t.sessions_lost,
		    t.clients, t.c.regions, t.clients_lost, t.c.regions_lost, t.c.pages_lost);
	s->handover = NULL;
	handover_free(h);
}
