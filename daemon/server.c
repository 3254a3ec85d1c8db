/*
 * server.c — one cudaepd (server.h): making its parts and wiring their
 * callbacks, the listening socket (systemd's, or bound at the configured
 * or default path), accepting clients with their peer credentials,
 * signals, timers, the configuration's reload and the orderly shutdown.
 * Requests themselves are dispatch.c's business, a client's transport
 * conn.c's; the handover's orchestration is server_handover.c's.
 */
#include "daemon/server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "alloc/arena.h"
#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sockpath.h"
#include "daemon/handover.h"
#include "daemon/listener.h"
#include "proto/cep_limits.h"

/* The request arena: its preallocated block serves every ordinary request;
 * the limit bounds what a hostile 64 KiB packet can make protobuf-c
 * allocate (a repeated empty message costs 2 wire bytes and ~100 bytes
 * decoded). */
#define ARENA_BLOCK   (256 * 1024)
#define ARENA_LIMIT   (32 * 1024 * 1024)

#define ACCEPT_BURST    64    /* connections accepted per wakeup */
#define ACCEPT_PAUSE_MS 100   /* after EMFILE, before trying again */
#define STOP_GRACE_MS   5000  /* for connections to drain at shutdown */

/* Bits of server->handles. */
enum {
	SERVER_H_LISTEN = 1u << 0,
	SERVER_H_ACCEPT_TIMER = 1u << 1,
	SERVER_H_STOP_TIMER = 1u << 2,
	SERVER_H_SIGTERM = 1u << 3,
	SERVER_H_SIGINT = 1u << 4,
	SERVER_H_TRIM_TIMER = 1u << 5,
	SERVER_H_SIGHUP = 1u << 6,
	SERVER_H_WATCHDOG = 1u << 7,
	SERVER_H_PUMP = 1u << 8,
};

int server_backend_open(const struct config *cfg, const char *driver_lib,
			struct backend **out)
{
	struct backend_cuda_config cc;
	int ret;

	*out = NULL;
	if (cfg->backend == CONFIG_BACKEND_HOST) {
		log_notice("serving on the host backend (backend = host)");
		return backend_host_new(0, out);
	}
	if (cfg->backend == CONFIG_BACKEND_HOST_ASYNC) {
		log_notice("serving on the host backend with queued streams "
			   "(backend = host-async)");
		return backend_host_new(BACKEND_HOST_ASYNC, out);
	}
	backend_cuda_config_init(&cc);
	cc.device = cfg->device;
	cc.cache_dir = cfg->cache_dir[0] != '\0' ? cfg->cache_dir : NULL;
	cc.kernel_pack = strcmp(cfg->kernel_pack, "none") == 0 ? ""
			 : cfg->kernel_pack[0] != '\0' ? cfg->kernel_pack : NULL;
	cc.pool_bytes = cfg->pool_bytes;
	cc.driver_lib = driver_lib;
	cep__clear_error();
	ret = backend_cuda_new_config(&cc, out);
	if (ret == 0) {
		log_notice("backend cuda: %s", (*out)->iface.device);
		return 0;
	}
	if (cfg->backend == CONFIG_BACKEND_CUDA) {
		log_err("backend = cuda, but %s", cep_last_error());
		return ret;
	}
	log_notice("%s; serving on the host backend", cep_last_error());
	return backend_host_new(0, out);
}

/* ------------------------------------------------------------------ wiring */

/* A packet of a client's connection: served, answered, and told whether
 * to read on. */
static bool on_packet(struct conn *cn, const uint8_t *buf, size_t len, int *fds, int nfds,
		      unsigned flags)
{
	struct client *c = container_of(cn, struct client, conn);
	struct server *s = container_of(cn->env, struct server, clients.conn_env);
	size_t out_len;
	int ret;

	ret = dispatch_packet(&s->d, c, buf, len, fds, nfds, flags, s->out_buf, &out_len);
	if (ret == DISPATCH_DEFERRED)
		return false;
	/* A Hello reply carries the fence page. */
	if (conn_send_fd(cn, s->out_buf, out_len, fence_page_fd_take(&c->page)) != 0)
		return false;
	if (ret == DISPATCH_CLOSE) {
		conn_drain(cn);
		return false;
	}
	return true;
}

static void on_gone(struct conn *cn)
{
	client_close(container_of(cn, struct client, conn));
}

static const struct conn_ops conn_ops = {
	.packet = on_packet,
	.gone = on_gone,
};

static void on_run_finished(void *ctx, void *owner, const struct run_done *d)
{
	struct server *s = ctx;

	dispatch_run_done(owner, d);
	/* A run that failed on a lost context is how most recoveries begin
	 * (a cheap check of a flag otherwise). */
	recover_note(&s->recover);
}

static void on_runs_idle(void *ctx, void *owner)
{
	client_runs_idle(owner);
}

static void on_runs_drained(void *ctx)
{
	struct server *s = ctx;

	/* Nothing is in flight that a lost context could strand. */
	recover_stop(&s->recover);
}

static const struct run_queue_ops run_ops = {
	.finished = on_run_finished,
	.idle = on_runs_idle,
	.drained = on_runs_drained,
};

static bool on_can_start(void *ctx, void *owner)
{
	struct server *s = ctx;

	return client_can_start(owner, &s->fairq);
}

static void on_start(void *ctx, void *owner, struct run *r)
{
	struct server *s = ctx;

	dispatch_queued_start(&s->d, owner, r);
}

static const struct fairq_ops fairq_ops = {
	.can_start = on_can_start,
	.start = on_start,
};

static bool on_recover_idle(void *ctx)
{
	struct server *s = ctx;
	const struct client *c;

	for (c = s->clients.head; c != NULL; c = c->next)
		if (c->work != CLIENT_IDLE)
			return false;
	return true;
}

static void on_recover_handover(void *ctx, uint64_t fault_ns, uint32_t runs_failed,
				const char *why)
{
	(void)server_handover(ctx, fault_ns, runs_failed, why);
}

static void on_recover_stop(void *ctx)
{
	struct server *s = ctx;

	s->exit_status = 1;
	server_stop(s);
}

static const struct recover_ops recover_ops = {
	.idle = on_recover_idle,
	.handover = on_recover_handover,
	.stop = on_recover_stop,
};

static void server_stop_timer_close(struct server *s);

static void on_client_released(struct client_list *l)
{
	struct server *s = container_of(l, struct server, clients);

	if (s->stopping && l->n_sock == 0)
		server_stop_timer_close(s);
}

/* Fills in what the request handlers use. */
static void dispatch_wire(struct server *s)
{
	s->d = (struct dispatch){
		.cfg = &s->cfg,
		.backend = s->backend,
		.account = s->account,
		.stats = &s->stats,
		.models = s->models,
		.batches = &s->batches,
		.fairq = &s->fairq,
		.runs = &s->runs,
		.regions = &s->regions,
		.sessions = &s->sessions,
		.clients = &s->clients,
		.access = &s->access,
		.recover = &s->recover,
		.arena = &s->arena,
		.loop = s->loop,
		.out_buf = s->out_buf,
		.socket_path = s->socket_path,
		.start_ns = &s->start_ns,
	};
}

int server_new(const struct config *cfg, struct server **out)
{
	struct region_limits limits;
	struct server *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return CEP_ENOMEM;
	s->cfg = *cfg;
	s->listen_fd = -1;
	s->start_ns = uv_hrtime();
	s->euid = geteuid();
	stats_init(&s->stats);
	limits.max_per_client = cfg->max_regions_per_client;
	limits.bytes_per_client = cfg->region_bytes_per_client;
	limits.bytes_total = cfg->region_bytes_total;
	region_pool_init(&s->regions, &limits, &s->stats);
	session_pool_init(&s->sessions, &s->stats);
	client_list_init(&s->clients);
	ret = reqarena_init(&s->arena, ARENA_BLOCK, ARENA_LIMIT);
	if (ret != 0)
		goto fail;
	ret = server_backend_open(cfg, NULL, &s->backend);
	if (ret != 0)
		goto fail;
	ret = account_new(&s->account);
	if (ret != 0)
		goto fail;
	run_queue_init(&s->runs, s->backend, &s->stats, &run_ops, s);
	fairq_init(&s->fairq, fairq_bound_of(cfg->max_runs_in_flight), &s->stats, &fairq_ops, s);
	batcher_init(&s->batches, NULL, s->backend, s->account, &s->stats, cfg->batch_window_us,
		     cfg->batch_max);
	recover_init(&s->recover, s->backend, &s->runs, &s->fairq, &recover_ops, s);
	/* Without a configured limit the device's memory is the limit, so
	 * that running out is a clear CEP_ELIMIT rather than a failed map. */
	account_limit_set_global(s->account, cfg->memory_limit != 0 ?
				 cfg->memory_limit : s->backend->device_memory);
	s->access.clients = &s->clients;
	s->access.account = s->account;
	s->access.stats = &s->stats;
	access_limits_set(&s->access, cfg);
	/* Regions are pinned for the device and charged to their client. */
	s->regions.backend = s->backend;
	s->regions.account = s->account;
	ret = engine_model_cache_new(&s->models);
	if (ret != 0)
		goto fail;
	s->in_buf = malloc(CEP_MAX_PACKET + 1);
	s->out_buf = malloc(CEP_MAX_PACKET);
	if (s->in_buf == NULL || s->out_buf == NULL) {
		ret = CEP_ENOMEM;
		goto fail;
	}
	s->clients.conn_env = (struct conn_env){
		.loop = NULL, .stats = &s->stats, .in_buf = s->in_buf, .ops = &conn_ops,
	};
	s->clients.regions = &s->regions;
	s->clients.sessions = &s->sessions;
	s->clients.runs = &s->runs;
	s->clients.fairq = &s->fairq;
	s->clients.account = s->account;
	s->clients.stats = &s->stats;
	s->clients.released = on_client_released;
	dispatch_wire(s);
	*out = s;
	return 0;
fail:
	server_free(s);
	return ret;
}

void server_free(struct server *s)
{
	struct client *c, *next;

	if (s == NULL)
		return;
	/* Runs that wait for their turn would never land; queued runs still
	 * write into the clients' regions. */
	for (c = s->clients.head; c != NULL; c = c->next)
		fairq_cancel(&s->fairq, &c->lanes);
	if (s->backend != NULL)
		run_queue_drain(&s->runs);
	for (c = s->clients.head; c != NULL; c = next) {
		next = c->next;
		client_close(c);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	handover_free(s->handover);
	engine_model_cache_free(s->models);
	backend_free(s->backend);
	account_free(s->account);
	reqarena_close(&s->arena);
	if (s->backend != NULL)
		run_queue_close(&s->runs);
	free(s->in_buf);
	free(s->out_buf);
	free(s);
}

bool server_peer_admin(const struct server *s, uid_t uid, gid_t gid,
		       const gid_t *groups, size_t n)
{
	size_t i;

	if (uid == 0 || uid == s->euid)
		return true;
	if (s->cfg.admin_gid < 0)
		return false;
	if ((int64_t)gid == s->cfg.admin_gid)
		return true;
	for (i = 0; i < n; i++)
		if ((int64_t)groups[i] == s->cfg.admin_gid)
			return true;
	return false;
}

void server_backend_replace(struct server *s, struct backend *be)
{
	backend_free(s->backend);
	s->backend = be;
	s->runs.backend = be;
	s->batches.backend = be;
	s->recover.backend = be;
	s->regions.backend = be;
	s->d.backend = be;
}

int server_client_detached(struct server *s, uid_t uid, gid_t gid, pid_t pid,
			   struct client **out)
{
	return client_new(&s->clients, -1, pid, uid, gid,
			  server_peer_admin(s, uid, gid, NULL, 0), out);
}

/* ------------------------------------------------------------ connections */

/* Whether a peer with only its primary gid known is in admin_group by one
 * of its supplementary groups (SO_PEERGROUPS, Linux 4.13+). */
static bool peer_groups_admin(const struct server *s, int fd, uid_t uid,
			      gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool admin = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) {
		if (errno != ERANGE)
			return false;
		groups = malloc(len);
		if (groups == NULL)
			goto out;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
			goto out;
	}
	admin = server_peer_admin(s, uid, gid, groups, len / sizeof(gid_t));
out:
	if (groups != small)
		free(groups);
	return admin;
}

/* Answers a connection with one CEP_ELIMIT error saying msg and closes
 * it. */
static void server_refuse(struct server *s, int fd, const char *msg)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = s->in_buf,
			     .iov_len = CEP_MAX_PACKET + 1 };
	struct msghdr m;
	struct cmsghdr *cm;
	size_t len, i, k;
	int fdr;

	dispatch_encode_error(0, CEP_ELIMIT, msg, s->out_buf, &len);
	/* Best effort: a fresh socket has room for one small packet. */
	if (send(fd, s->out_buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("refused connection: send: %s", strerror(errno));
	/* The client has usually sent its Hello already. Closing with it
	 * unread would make the client's recv fail with ECONNRESET before it
	 * read the refusal, so, as conn.c's orderly close does, stop it from
	 * sending more, drop what it sent (closing any fds), then close. */
	shutdown(fd, SHUT_RD);
	for (i = 0; i < 4096; i++) {
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		if (recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			break;
		for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			     k++) {
				memcpy(&fdr, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(int));
				close(fdr);
			}
		}
	}
	close(fd);
}

static void server_accept_one(struct server *s, int fd)
{
	char msg[CEP_MAX_STATUS_MSG];
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct client *c;
	bool admin;
	int ret;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
		log_warning("SO_PEERCRED: %s; dropping the connection",
			    strerror(errno));
		close(fd);
		return;
	}
	if (s->clients.n >= s->cfg.max_connections) {
		stats_count(&s->stats, STATS_COUNTER_CONNECTIONS_REFUSED, 1);
		log_notice("refused a connection from pid %d uid %u: %u "
			   "connections is the limit", (int)cr.pid,
			   (unsigned)cr.uid, s->cfg.max_connections);
		snprintf(msg, sizeof(msg), "too many connections: cudaepd's "
			 "limit (max_connections = %u) is reached; try again "
			 "later", s->cfg.max_connections);
		server_refuse(s, fd, msg);
		return;
	}
	if (access_connection_check(&s->access, cr.uid, cr.pid) != 0) {
		/* A copy: the refusal sets the thread's error from it. */
		snprintf(msg, sizeof(msg), "%s", cep_last_error());
		server_refuse(s, fd, msg);
		return;
	}
	admin = server_peer_admin(s, cr.uid, cr.gid, NULL, 0);
	if (!admin && s->cfg.admin_gid >= 0)
		admin = peer_groups_admin(s, fd, cr.uid, cr.gid);
	ret = client_new(&s->clients, fd, cr.pid, cr.uid, cr.gid, admin, &c);
	if (ret != 0) {
		log_err("cannot serve a connection from pid %d: %s",
			(int)cr.pid, cep_strerror(ret));
		return;
	}
	log_debug("client %llu: connection from pid %d uid %u gid %u%s",
		  (unsigned long long)c->id, (int)cr.pid, (unsigned)cr.uid,
		  (unsigned)cr.gid, admin ? " (admin)" : "");
}

static void server_on_accept_timer(uv_timer_t *t);

static void server_on_accept(uv_poll_t *h, int status, int events)
{
	struct server *s = container_of(h, struct server, listen_poll);
	int i, fd;

	if (status < 0) {
		log_err("listening socket: %s", uv_strerror(status));
		return;
	}
	for (i = 0; i < ACCEPT_BURST && !s->stopping; i++) {
		fd = accept4(s->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			server_accept_one(s, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* The connection stays in the backlog and the socket
			 * stays readable: wait instead of spinning. */
			log_warning("cannot accept: %s; pausing for %d ms",
				    strerror(errno), ACCEPT_PAUSE_MS);
			uv_poll_stop(&s->listen_poll);
			uv_timer_start(&s->accept_timer, server_on_accept_timer,
				       ACCEPT_PAUSE_MS, 0);
			return;
		}
		log_err("accept: %s", strerror(errno));
		return;
	}
}

static void server_on_accept_timer(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, accept_timer);

	if (!s->stopping)
		uv_poll_start(&s->listen_poll, UV_READABLE, server_on_accept);
}

/* ---------------------------------------------------------------- handles */

static void server_on_listen_close(uv_handle_t *h)
{
	struct server *s = container_of(h, struct server, listen_poll);

	close(s->listen_fd);
	s->listen_fd = -1;
}

static void server_on_handle_close(uv_handle_t *h)
{
}

static void server_handle_close(struct server *s, unsigned bit,
				uv_handle_t *h, uv_close_cb cb)
{
	if (!(s->handles & bit))
		return;
	s->handles &= ~bit;
	uv_close(h, cb);
}

static void server_stop_timer_close(struct server *s)
{
	server_handle_close(s, SERVER_H_STOP_TIMER,
			    (uv_handle_t *)&s->stop_timer,
			    server_on_handle_close);
}

/* Stops accepting: closes the listener and removes the socket file we
 * created, so a new daemon may start at once. */
static void server_listener_close(struct server *s)
{
	if (s->unlink_socket) {
		if (unlink(s->socket_path) != 0 && errno != ENOENT)
			log_warning("cannot remove %s: %s", s->socket_path,
				    strerror(errno));
		s->unlink_socket = false;
	}
	if (s->handles & SERVER_H_LISTEN)
		server_handle_close(s, SERVER_H_LISTEN,
				    (uv_handle_t *)&s->listen_poll,
				    server_on_listen_close);
	else if (s->listen_fd >= 0) {
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	server_handle_close(s, SERVER_H_ACCEPT_TIMER,
			    (uv_handle_t *)&s->accept_timer,
			    server_on_handle_close);
}

static void server_on_signal(uv_signal_t *h, int signum)
{
	struct server *s = h->data;

	log_notice("%s received", signum == SIGTERM ? "SIGTERM" : "SIGINT");
	server_stop(s);
}

static void server_on_stop_timer(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, stop_timer);
	struct client *c, *next;

	log_warning("%u connections did not drain in %d ms; dropping them",
		    s->clients.n_sock, STOP_GRACE_MS);
	for (c = s->clients.head; c != NULL; c = next) {
		next = c->next;
		if (c->conn.fd >= 0)
			client_close(c);
	}
	server_stop_timer_close(s);
}

/* The idle trim. The arena's idle period is fixed when the backend makes
 * it, so the timer fires every trim_idle_ms and hands arena_tick() a clock
 * that advances one arena period per firing: a granule is unmapped one to
 * two firings after its last block is freed. */
static void server_on_trim_timer(uv_timer_t *t)
{
	struct server *s = container_of(t, struct server, trim_timer);
	struct arena_config def;

	arena_config_init(&def);
	s->trim_clock_ns += def.idle_ns;
	if (arena_tick(s->backend->arena, s->trim_clock_ns) != 0)
		log_warning("idle trim: %s", cep_last_error());
}

static void server_on_sighup(uv_signal_t *h, int signum)
{
	struct server *s = h->data;

	log_notice("SIGHUP received: reloading the configuration");
	(void)server_reload(s);
}

/* systemd's watchdog: a wedged loop stops these and gets restarted. */
static void server_on_watchdog(uv_timer_t *t)
{
	sd_notify(0, "WATCHDOG=1");
}

static int trim_timer_apply(struct server *s)
{
	uv_timer_stop(&s->trim_timer);
	if (s->cfg.trim_idle_ms == 0 || s->backend->arena == NULL)
		return 0;
	return uv_timer_start(&s->trim_timer, server_on_trim_timer,
			      s->cfg.trim_idle_ms, s->cfg.trim_idle_ms);
}

void server_set_args(struct server *s, int argc, char **argv)
{
	s->argc = argc;
	s->argv = argv;
}

/* A key that only a restart applies: say so when it changed. */
#define RELOAD_FIXED(field, name)                                            \
	do {                                                                 \
		if (memcmp(&nc.field, &s->cfg.field, sizeof(nc.field)) != 0) \
			log_warning("%s changed: it takes effect when cudaepd " \
				    "restarts", name);                       \
	} while (0)

int server_reload(struct server *s)
{
	struct config nc;
	struct region_limits limits;
	struct client *c;
	char *msg = NULL;
	size_t msg_len = 0;
	FILE *err;
	int ret;

	if (s->argv == NULL) {
		log_warning("no command line to reload the configuration from");
		return 0;
	}
	err = open_memstream(&msg, &msg_len);
	if (err == NULL)
		return 2;
	ret = config_load(&nc, s->argc, s->argv, err, err);
	fclose(err);
	if (ret != CONFIG_RUN) {
		msg_len = strcspn(msg ? msg : "", "\n");
		log_err("configuration not reloaded, the old one stays: %.*s",
			(int)msg_len, msg ? msg : "");
		free(msg);
		return ret;
	}
	free(msg);
	RELOAD_FIXED(socket, "socket");
	RELOAD_FIXED(socket_mode, "socket_mode");
	RELOAD_FIXED(socket_gid, "socket_group");
	RELOAD_FIXED(backend, "backend");
	RELOAD_FIXED(device, "device");
	RELOAD_FIXED(cache_dir, "cache_dir");
	RELOAD_FIXED(kernel_pack, "kernel_pack");
	RELOAD_FIXED(pool_bytes, "pool_bytes");
	RELOAD_FIXED(batch_max, "batch_max");
	s->cfg.batch_window_us = nc.batch_window_us;
	s->batches.window_ns = (uint64_t)nc.batch_window_us * 1000;
	s->cfg.log_level = nc.log_level;
	log_level_set(nc.log_level);
	s->cfg.max_connections = nc.max_connections;
	s->cfg.max_regions_per_client = nc.max_regions_per_client;
	s->cfg.region_bytes_per_client = nc.region_bytes_per_client;
	s->cfg.region_bytes_total = nc.region_bytes_total;
	limits.max_per_client = nc.max_regions_per_client;
	limits.bytes_per_client = nc.region_bytes_per_client;
	limits.bytes_total = nc.region_bytes_total;
	s->regions.limits = limits;
	s->cfg.memory_limit = nc.memory_limit;
	account_limit_set_global(s->account, nc.memory_limit != 0 ?
				 nc.memory_limit : s->backend->device_memory);
	s->cfg.client_memory_limit = nc.client_memory_limit;
	for (c = s->clients.head; c != NULL; c = c->next)
		if (c->sessions.ids.count > 0)
			(void)account_limit_set(s->account,
						(struct alloc_owner){ c->id, 0 },
						nc.client_memory_limit);
	access_limits_set(&s->access, &nc);
	s->cfg.admin_gid = nc.admin_gid;
	memcpy(s->cfg.admin_group, nc.admin_group, sizeof(nc.admin_group));
	if (s->cfg.trim_idle_ms != nc.trim_idle_ms) {
		s->cfg.trim_idle_ms = nc.trim_idle_ms;
		if ((s->handles & SERVER_H_TRIM_TIMER) && trim_timer_apply(s) != 0)
			log_warning("cannot restart the idle trim timer");
	}
	/* A larger bound lets waiting runs start at the loop's next turn. */
	s->cfg.max_runs_in_flight = nc.max_runs_in_flight;
	s->fairq.bound = fairq_bound_of(nc.max_runs_in_flight);
	log_notice("configuration reloaded%s%s", nc.file[0] ? " from " : "",
		   nc.file);
	return 0;
}

/* The top of each loop turn, after every callback of the last one: the
 * one place that starts runs waiting for their turn, so that none starts
 * under a request being served. */
static void server_on_pump(uv_prepare_t *h)
{
	struct server *s = container_of(h, struct server, pump);

	fairq_pump(&s->fairq);
}

static int server_handles_start(struct server *s)
{
	uint64_t watchdog_us = 0;
	int ret;

	ret = uv_poll_init(s->loop, &s->listen_poll, s->listen_fd);
	if (ret != 0)
		return ret;
	s->handles |= SERVER_H_LISTEN;
	ret = run_queue_start(&s->runs, s->loop);
	if (ret != 0)
		return ret;
	ret = recover_start(&s->recover, s->loop);
	if (ret != 0)
		return ret;
	uv_prepare_init(s->loop, &s->pump);
	s->handles |= SERVER_H_PUMP;
	/* Never what keeps a stopping loop alive. */
	uv_unref((uv_handle_t *)&s->pump);
	ret = uv_prepare_start(&s->pump, server_on_pump);
	if (ret != 0)
		return ret;
	ret = uv_poll_start(&s->listen_poll, UV_READABLE, server_on_accept);
	if (ret != 0)
		return ret;
	uv_timer_init(s->loop, &s->accept_timer);
	s->handles |= SERVER_H_ACCEPT_TIMER;
	uv_timer_init(s->loop, &s->stop_timer);
	s->handles |= SERVER_H_STOP_TIMER;
	uv_timer_init(s->loop, &s->trim_timer);
	s->handles |= SERVER_H_TRIM_TIMER;
	if (s->cfg.trim_idle_ms != 0 && s->backend->arena != NULL) {
		ret = uv_timer_start(&s->trim_timer, server_on_trim_timer,
				     s->cfg.trim_idle_ms, s->cfg.trim_idle_ms);
		if (ret != 0)
			return ret;
		/* Idle trims must not keep a stopping loop alive. */
		uv_unref((uv_handle_t *)&s->trim_timer);
	}
	ret = uv_signal_init(s->loop, &s->sigterm);
	if (ret != 0)
		return ret;
	s->handles |= SERVER_H_SIGTERM;
	s->sigterm.data = s;
	ret = uv_signal_start(&s->sigterm, server_on_signal, SIGTERM);
	if (ret != 0)
		return ret;
	ret = uv_signal_init(s->loop, &s->sighup);
	if (ret != 0)
		return ret;
	s->handles |= SERVER_H_SIGHUP;
	s->sighup.data = s;
	ret = uv_signal_start(&s->sighup, server_on_sighup, SIGHUP);
	if (ret != 0)
		return ret;
	uv_timer_init(s->loop, &s->watchdog_timer);
	s->handles |= SERVER_H_WATCHDOG;
	if (sd_watchdog_enabled(0, &watchdog_us) > 0 && watchdog_us > 0) {
		/* Twice per period, as sd_watchdog_enabled(3) suggests. */
		uint64_t ms = watchdog_us / 2000 ? watchdog_us / 2000 : 1;

		ret = uv_timer_start(&s->watchdog_timer, server_on_watchdog, ms, ms);
		if (ret != 0)
			return ret;
		uv_unref((uv_handle_t *)&s->watchdog_timer);
		log_info("systemd watchdog: WATCHDOG=1 every %llu ms",
			 (unsigned long long)ms);
	}
	ret = uv_signal_init(s->loop, &s->sigint);
	if (ret != 0)
		return ret;
	s->handles |= SERVER_H_SIGINT;
	s->sigint.data = s;
	return uv_signal_start(&s->sigint, server_on_signal, SIGINT);
}

static void server_trim_timer_close(struct server *s)
{
	server_handle_close(s, SERVER_H_TRIM_TIMER,
			    (uv_handle_t *)&s->trim_timer,
			    server_on_handle_close);
}

static void server_handles_close(struct server *s)
{
	run_queue_stop(&s->runs);
	server_handle_close(s, SERVER_H_PUMP, (uv_handle_t *)&s->pump, server_on_handle_close);
	server_listener_close(s);
	server_stop_timer_close(s);
	server_trim_timer_close(s);
	server_handle_close(s, SERVER_H_SIGTERM, (uv_handle_t *)&s->sigterm,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_SIGINT, (uv_handle_t *)&s->sigint,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_SIGHUP, (uv_handle_t *)&s->sighup,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_WATCHDOG,
			    (uv_handle_t *)&s->watchdog_timer,
			    server_on_handle_close);
}

int server_listen(struct server *s, uv_loop_t *loop)
{
	bool system_wide;
	int ret;

	s->loop = loop;
	s->clients.conn_env.loop = loop;
	s->batches.loop = loop;
	s->d.loop = loop;
	/* systemd and root put the socket in /run/cudaep; LISTEN_FDS must be
	 * looked at before sd_listen_fds() unsets it. */
	system_wide = geteuid() == 0 || getenv("INVOCATION_ID") != NULL ||
		      getenv("LISTEN_FDS") != NULL;
	ret = server_listener_restore(s);
	if (ret == 0) {
		ret = listener_activated(&s->listen_fd, s->socket_path, sizeof(s->socket_path));
		s->activated = ret == 1;
	}
	if (ret < 0)
		goto fail;
	if (ret == 0) {
		if (s->cfg.socket[0] != '\0') {
			snprintf(s->socket_path, sizeof(s->socket_path), "%s",
				 s->cfg.socket);
		} else {
			ret = cep__daemon_socket_path(s->socket_path,
						      sizeof(s->socket_path),
						      system_wide);
			if (ret != 0) {
				log_err("the default socket path is too long");
				goto fail;
			}
		}
		ret = listener_bind(s->socket_path, system_wide, s->cfg.socket_mode,
				    s->cfg.socket_gid, s->cfg.socket_group, &s->listen_fd);
		if (s->listen_fd >= 0)
			s->unlink_socket = true;
		if (ret != 0)
			goto fail;
	}
	ret = server_handles_start(s);
	if (ret != 0) {
		log_err("cannot start the event loop's handles: %s",
			uv_strerror(ret));
		goto fail;
	}
	log_notice("cudaepd %s serving on %s%s%s (backend %s: %s)", CEP_VERSION,
		   s->socket_path, s->activated ? " (socket activation)" : "",
		   s->handover != NULL ? " (handed over)" : "",
		   s->backend->iface.name, s->backend->iface.device);
	server_restore(s);
	return 0;
fail:
	server_handles_close(s);
	return ret;
}

void server_stop(struct server *s)
{
	struct client *c, *next;

	if (s->stopping)
		return;
	s->stopping = true;
	/* A generation would otherwise hold its connection to its end. */
	atomic_store(&s->d.stopping, true);
	sd_notify(0, "STOPPING=1");
	log_notice("stopping: closing %u connections", s->clients.n_sock);
	/* Its handle stays until the runs in flight have completed. */
	run_queue_stop(&s->runs);
	server_handle_close(s, SERVER_H_PUMP, (uv_handle_t *)&s->pump, server_on_handle_close);
	server_listener_close(s);
	server_trim_timer_close(s);
	server_handle_close(s, SERVER_H_SIGTERM, (uv_handle_t *)&s->sigterm,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_SIGINT, (uv_handle_t *)&s->sigint,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_SIGHUP, (uv_handle_t *)&s->sighup,
			    server_on_handle_close);
	server_handle_close(s, SERVER_H_WATCHDOG,
			    (uv_handle_t *)&s->watchdog_timer,
			    server_on_handle_close);
	for (c = s->clients.head; c != NULL; c = next) {
		next = c->next;
		if (c->conn.fd >= 0)
			conn_drain(&c->conn);
	}
	if (s->clients.n_sock == 0)
		server_stop_timer_close(s);
	else if (s->handles & SERVER_H_STOP_TIMER)
		uv_timer_start(&s->stop_timer, server_on_stop_timer,
			       STOP_GRACE_MS, 0);
}
