/*
 * server.c — cudaepd's listening side: the socket (systemd's, or bound at
 * the configured or default path), accepting connections with their peer
 * credentials, the connection list, signals and the orderly shutdown (see
 * server.h). Requests themselves are conn.c's and dispatch.c's business.
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

#include "daemon/access.h"
#include "alloc/arena.h"
#include "proto/cep_limits.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "daemon/dispatch.h"
#include "daemon/handover.h"
#include "common/log.h"
#include "daemon/recover.h"
#include "common/sockpath.h"

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
	s->next_client_id = 1;
	s->start_ns = uv_hrtime();
	s->euid = geteuid();
	stats_init(&s->stats);
	limits.max_per_client = cfg->max_regions_per_client;
	limits.bytes_per_client = cfg->region_bytes_per_client;
	limits.bytes_total = cfg->region_bytes_total;
	region_pool_init(&s->regions, &limits, &s->stats);
	session_pool_init(&s->sessions, &s->stats);
	fence_queue_init(&s->fences);
	batcher_init(&s->batches, s);
	ret = reqarena_init(&s->arena, ARENA_BLOCK, ARENA_LIMIT);
	if (ret != 0)
		goto fail;
	ret = server_backend_open(cfg, NULL, &s->backend);
	if (ret != 0)
		goto fail;
	ret = account_new(&s->account);
	if (ret != 0)
		goto fail;
	/* Without a configured limit the device's memory is the limit, so
	 * that running out is a clear CEP_ELIMIT rather than a failed map. */
	account_limit_set_global(s->account, cfg->memory_limit != 0 ?
				 cfg->memory_limit : s->backend->device_memory);
	access_limits_set(s, cfg);
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
	*out = s;
	return 0;
fail:
	server_free(s);
	return ret;
}

void server_free(struct server *s)
{
	if (s == NULL)
		return;
	/* Queued runs still write into the connections' regions. */
	fence_drain(s);
	while (s->conns != NULL)
		conn_free(s->conns);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	handover_free(s->handover);
	engine_model_cache_free(s->models);
	backend_free(s->backend);
	account_free(s->account);
	reqarena_close(&s->arena);
	fence_queue_close(&s->fences);
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

/* ------------------------------------------------------------ connections */

void server__conn_link(struct server *s, struct conn *c)
{
	/* Appended, so that admin listings run oldest first. */
	c->next = NULL;
	c->prev = s->conns_tail;
	if (s->conns_tail != NULL)
		s->conns_tail->next = c;
	else
		s->conns = c;
	s->conns_tail = c;
	s->n_conns++;
	if (c->fd >= 0)
		s->n_sock_conns++;
	stats_count(&s->stats, STATS_COUNTER_CONNECTIONS_ACCEPTED, 1);
	stats_gauge_add(&s->stats, STATS_GAUGE_CONNECTIONS, 1);
}

static void server_stop_timer_close(struct server *s);

void server__conn_unlink(struct server *s, struct conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		s->conns_tail = c->prev;
	c->prev = NULL;
	c->next = NULL;
	s->n_conns--;
	if (c->fd >= 0)
		s->n_sock_conns--;
	/* Its sessions are gone, so nothing is charged to it any more; the
	 * entry and its limit go with it. */
	if (s->account != NULL)
		(void)account_forget(s->account, (struct alloc_owner){ c->id, 0 });
	stats_count(&s->stats, STATS_COUNTER_CONNECTIONS_CLOSED, 1);
	/* A socket's connection leaves the gauge when its fd is closed
	 * (conn.c), so that a reader who sees the gauge drop sees the fd
	 * gone too. */
	if (c->fd < 0)
		stats_gauge_add(&s->stats, STATS_GAUGE_CONNECTIONS, -1);
	if (s->stopping && s->n_sock_conns == 0)
		server_stop_timer_close(s);
}

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
	struct conn *c;
	bool admin;
	int ret;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
		log_warning("SO_PEERCRED: %s; dropping the connection",
			    strerror(errno));
		close(fd);
		return;
	}
	if (s->n_conns >= s->cfg.max_connections) {
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
	if (access_connection_check(s, cr.uid, cr.pid) != 0) {
		/* A copy: the refusal sets the thread's error from it. */
		snprintf(msg, sizeof(msg), "%s", cep_last_error());
		server_refuse(s, fd, msg);
		return;
	}
	admin = server_peer_admin(s, cr.uid, cr.gid, NULL, 0);
	if (!admin && s->cfg.admin_gid >= 0)
		admin = peer_groups_admin(s, fd, cr.uid, cr.gid);
	ret = conn_new(s, fd, cr.pid, cr.uid, cr.gid, admin, &c);
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

/* ----------------------------------------------------------------- socket */

static int socket_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path)) {
		log_err("socket path %s is too long", path);
		return CEP_ENAMETOOLONG;
	}
	strcpy(addr->sun_path, path);
	return 0;
}

/* Creates the socket's directory when it is missing (one level: its parent
 * is expected to exist, as /run and $XDG_RUNTIME_DIR do). */
static int socket_dir_make(const char *path, mode_t mode)
{
	char dir[CONFIG_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, mode) == 0) {
		log_info("created %s", dir);
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	log_err("cannot create the socket directory %s: %s", dir,
		strerror(errno));
	return cep__from_errno(errno);
}

/*
 * Makes path free for bind(): nothing there is fine; a socket nobody
 * answers on is a dead daemon's and is removed; a socket that answers
 * belongs to a live daemon and anything else is not ours to replace.
 */
static int socket_path_claim(const char *path)
{
	struct sockaddr_un addr;
	struct stat sb;
	int fd, ret, err;

	if (lstat(path, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		log_err("cannot inspect %s: %s", path, strerror(errno));
		return cep__from_errno(errno);
	}
	if (!S_ISSOCK(sb.st_mode)) {
		log_err("%s exists and is not a socket; refusing to replace "
			"it", path);
		return CEP_EEXIST;
	}
	ret = socket_addr(&addr, path);
	if (ret != 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("socket: %s", strerror(errno));
		return cep__from_errno(errno);
	}
	ret = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	err = errno;
	close(fd);
	if (ret == 0 || err == EAGAIN || err == EINPROGRESS) {
		/* EAGAIN: a full backlog, which only a live daemon has. */
		log_err("another cudaepd is already serving %s", path);
		return CEP_EBUSY;
	}
	if (err != ECONNREFUSED) {
		log_err("%s is in use (%s); refusing to replace it", path,
			strerror(err));
		return cep__from_errno(err);
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		log_err("cannot remove the stale socket %s: %s", path,
			strerror(errno));
		return cep__from_errno(errno);
	}
	log_notice("removed the stale socket %s of a daemon that is gone",
		   path);
	return 0;
}

static int socket_bind(struct server *s, bool system_wide)
{
	const char *path = s->socket_path;
	struct sockaddr_un addr;
	int fd = -1, ret;

	ret = socket_addr(&addr, path);
	if (ret != 0)
		return ret;
	ret = socket_dir_make(path, system_wide ? 0755 : 0700);
	if (ret != 0)
		return ret;
	ret = socket_path_claim(path);
	if (ret != 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = cep__from_errno(errno);
		log_err("socket: %s", strerror(errno));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot bind %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	s->unlink_socket = true;
	s->listen_fd = fd;
	/* Permissions are set before listen(): until then nobody can
	 * connect, so there is no moment with the wrong ones. */
	if (chmod(path, s->cfg.socket_mode) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot chmod %s to %04o: %s", path,
			s->cfg.socket_mode, strerror(errno));
		return ret;
	}
	if (s->cfg.socket_gid >= 0 &&
	    chown(path, (uid_t)-1, (gid_t)s->cfg.socket_gid) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot give %s to group %s: %s", path,
			s->cfg.socket_group, strerror(errno));
		return ret;
	}
	if (listen(fd, SOMAXCONN) != 0) {
		ret = cep__from_errno(errno);
		log_err("cannot listen on %s: %s", path, strerror(errno));
		return ret;
	}
	return 0;
}

/* Takes the socket systemd passed: 1 when there is one, 0 when not
 * activated, or an error. */
static int socket_activated(struct server *s)
{
	struct sockaddr_un addr;
	socklen_t len = sizeof(addr);
	int n, fd = SD_LISTEN_FDS_START, fl;

	n = sd_listen_fds(1);
	if (n < 0) {
		log_err("LISTEN_FDS: %s", strerror(-n));
		return n;
	}
	if (n == 0)
		return 0;
	if (n > 1) {
		log_err("systemd passed %d sockets; cudaepd takes one", n);
		return CEP_EINVAL;
	}
	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
		log_err("the socket systemd passed is not a listening "
			"SOCK_SEQPACKET Unix socket (check "
			"ListenSequentialPacket= in cudaepd.socket)");
		return CEP_EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		log_err("cannot set up the socket systemd passed: %s",
			strerror(errno));
		return cep__from_errno(errno);
	}
	s->listen_fd = fd;
	s->activated = true;
	if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 &&
	    len > offsetof(struct sockaddr_un, sun_path) &&
	    addr.sun_path[0] != '\0')
		snprintf(s->socket_path, sizeof(s->socket_path), "%.*s",
			 (int)sizeof(addr.sun_path), addr.sun_path);
	else
		snprintf(s->socket_path, sizeof(s->socket_path),
			 "(socket from systemd)");
	return 1;
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
	struct conn *c, *next;

	log_warning("%u connections did not drain in %d ms; dropping them",
		    s->n_sock_conns, STOP_GRACE_MS);
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->fd >= 0)
			conn_free(c);
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
	struct conn *c;
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
	for (c = s->conns; c != NULL; c = c->next)
		if (c->sessions.ids.count > 0)
			(void)account_limit_set(s->account,
						(struct alloc_owner){ c->id, 0 },
						nc.client_memory_limit);
	access_limits_set(s, &nc);
	s->cfg.admin_gid = nc.admin_gid;
	memcpy(s->cfg.admin_group, nc.admin_group, sizeof(nc.admin_group));
	if (s->cfg.trim_idle_ms != nc.trim_idle_ms) {
		s->cfg.trim_idle_ms = nc.trim_idle_ms;
		if ((s->handles & SERVER_H_TRIM_TIMER) && trim_timer_apply(s) != 0)
			log_warning("cannot restart the idle trim timer");
	}
	/* A larger bound lets waiting runs start now. */
	s->cfg.max_runs_in_flight = nc.max_runs_in_flight;
	fairq_pump(s);
	log_notice("configuration reloaded%s%s", nc.file[0] ? " from " : "",
		   nc.file);
	return 0;
}

static int server_handles_start(struct server *s)
{
	uint64_t watchdog_us = 0;
	int ret;

	ret = uv_poll_init(s->loop, &s->listen_poll, s->listen_fd);
	if (ret != 0)
		return ret;
	s->handles |= SERVER_H_LISTEN;
	ret = fence_queue_start(s);
	if (ret != 0)
		return ret;
	ret = recover_start(s);
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
	fence_queue_stop(s);
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
	/* systemd and root put the socket in /run/cudaep; LISTEN_FDS must be
	 * looked at before sd_listen_fds() unsets it. */
	system_wide = geteuid() == 0 || getenv("INVOCATION_ID") != NULL ||
		      getenv("LISTEN_FDS") != NULL;
	ret = handover_listener(s);
	if (ret == 0)
		ret = socket_activated(s);
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
		ret = socket_bind(s, system_wide);
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
	handover_restore(s);
	return 0;
fail:
	server_handles_close(s);
	return ret;
}

void server_stop(struct server *s)
{
	struct conn *c, *next;

	if (s->stopping)
		return;
	s->stopping = true;
	sd_notify(0, "STOPPING=1");
	log_notice("stopping: closing %u connections", s->n_sock_conns);
	/* Its handle stays until the runs in flight have completed. */
	fence_queue_stop(s);
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
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->fd >= 0)
			conn_shutdown(c);
	}
	if (s->n_sock_conns == 0)
		server_stop_timer_close(s);
	else if (s->handles & SERVER_H_STOP_TIMER)
		uv_timer_start(&s->stop_timer, server_on_stop_timer,
			       STOP_GRACE_MS, 0);
}
