/*
 * conn.c — a client connection: reading packets with their fds off a
 * SOCK_SEQPACKET socket, handing each to dispatch_packet(), sending the
 * response or queueing it, and tearing down everything the client owned
 * (see conn.h). libuv cannot carry SEQPACKET through uv_pipe_t, so the raw
 * non-blocking fd is watched with a uv_poll_t embedded in struct conn.
 */
#include "daemon/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "daemon/dispatch.h"
#include "common/error.h"
#include "daemon/fairq.h"
#include "common/log.h"
#include "daemon/server.h"

static void conn_on_poll(uv_poll_t *h, int status, int events);
static int conn_queue(struct conn *c, const uint8_t *buf, size_t len, int fd);
static int conn_take_fds(struct conn *c, struct msghdr *msg, int *fds,
			 unsigned *flags);

/* id 0: the next client id. */
static int conn_alloc(struct server *s, int fd, uint64_t id, pid_t pid, uid_t uid,
		      gid_t gid, bool admin, struct conn **out)
{
	struct conn *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (c == NULL)
		return CEP_ENOMEM;
	c->server = s;
	c->fd = fd;
	c->id = id != 0 ? id : s->next_client_id++;
	c->pid = pid;
	c->uid = uid;
	c->gid = gid;
	c->admin = admin;
	c->connected_ns = uv_hrtime();
	region_table_init(&c->regions, &s->regions);
	c->regions.client_id = c->id;
	session_table_init(&c->sessions, &s->sessions, c->id);
	c->fence.fd = -1;
	c->fence.page_fd = -1;
	*out = c;
	return 0;
}

/* conn_new() and conn_adopt(). */
static int conn_open(struct server *s, int fd, uint64_t id, pid_t pid, uid_t uid,
		     gid_t gid, bool admin, struct conn **out)
{
	struct conn *c;
	int ret;

	*out = NULL;
	ret = conn_alloc(s, fd, id, pid, uid, gid, admin, &c);
	if (ret != 0) {
		close(fd);
		return ret;
	}
	/* libuv's codes are negated errnos on Linux, as CEP_E* codes are. */
	ret = uv_poll_init(s->loop, &c->poll, fd);
	if (ret != 0) {
		free(c);
		close(fd);
		return ret;
	}
	server__conn_link(s, c);
	c->poll_events = UV_READABLE | UV_DISCONNECT;
	ret = uv_poll_start(&c->poll, c->poll_events, conn_on_poll);
	if (ret != 0) {
		/* The handle exists: c goes in its close callback. */
		conn_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int conn_new(struct server *s, int fd, pid_t pid, uid_t uid, gid_t gid,
	     bool admin, struct conn **out)
{
	return conn_open(s, fd, 0, pid, uid, gid, admin, out);
}

int conn_adopt(struct server *s, int fd, uint64_t id, pid_t pid, uid_t uid,
	       gid_t gid, bool admin, struct conn **out)
{
	const struct conn *c;

	*out = NULL;
	for (c = s->conns; c != NULL; c = c->next)
		if (c->id == id)
			break;
	if (id == 0 || id >= s->next_client_id || c != NULL) {
		close(fd);
		return cep__set_error(CEP_EINVAL, "client id %llu cannot be handed over "
				      "(the next id is %llu)", (unsigned long long)id,
				      (unsigned long long)s->next_client_id);
	}
	return conn_open(s, fd, id, pid, uid, gid, admin, out);
}

int conn_queue_adopt(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	return conn_queue(c, buf, len, fd);
}

int conn_new_detached(struct server *s, uid_t uid, gid_t gid, pid_t pid,
		      struct conn **out)
{
	bool admin = server_peer_admin(s, uid, gid, NULL, 0);
	int ret;

	ret = conn_alloc(s, -1, 0, pid, uid, gid, admin, out);
	if (ret != 0)
		return ret;
	server__conn_link(s, *out);
	return 0;
}

/* ------------------------------------------------------------- teardown */

static void conn_on_close(uv_handle_t *h)
{
	struct conn *c = container_of(h, struct conn, poll);

	close(c->fd);
	stats_gauge_add(&c->server->stats, STATS_GAUGE_CONNECTIONS, -1);
	free(c);
}

static void conn_queue_drop(struct conn *c)
{
	struct conn_out *o, *next;

	for (o = c->out_head; o != NULL; o = next) {
		next = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	stats_gauge_add(&c->server->stats, STATS_GAUGE_SEND_QUEUE,
			-(int64_t)c->out_count);
	c->out_head = NULL;
	c->out_tail = NULL;
	c->out_count = 0;
}

void conn_free(struct conn *c)
{
	if (c == NULL || c->closing)
		return;
	if (c->batch_waiting)
		dispatch_batch_drop(c);
	/* Runs waiting for their turn never start now; the ones on the
	 * device are waited for. */
	fairq_conn_cancel(c->server, c);
	if (c->busy || c->dispatching || c->fence.inflight > 0) {
		/* Its job may be reading its regions or running one of its
		 * sessions right now, and queued runs still copy into its
		 * regions: wait for them (conn_job_done(), fence.c). */
		c->free_deferred = true;
		if (c->poll_events != 0) {
			uv_poll_stop(&c->poll);
			c->poll_events = 0;
		}
		return;
	}
	c->closing = true;
	log_printf(c->hello_done ? LOG_INFO : LOG_DEBUG,
		   "client %llu disconnected after %llu requests: released "
		   "%u regions (%llu bytes) and %u sessions",
		   (unsigned long long)c->id, (unsigned long long)c->requests,
		   c->regions.ids.count, (unsigned long long)c->regions.bytes,
		   c->sessions.ids.count);
	session_table_close(&c->sessions);
	region_table_close(&c->regions);
	fence_close(c->server, c);
	dispatch_job_free(c->job);
	c->job = NULL;
	conn_queue_drop(c);
	server__conn_unlink(c->server, c);
	if (c->fd < 0) {
		free(c);
		return;
	}
	uv_close((uv_handle_t *)&c->poll, conn_on_close);
}

/* What to poll for follows from the state: read unless paused or on the
 * way out, write while something is queued. */
static void conn_poll_update(struct conn *c)
{
	int events = 0;

	if (c->closing || c->free_deferred)
		return;
	if (!c->read_paused && !c->close_after_flush && !c->busy)
		events |= UV_READABLE | UV_DISCONNECT;
	else if (c->batch_waiting)
		/* Its run waits for others to be merged with: a client that
		 * goes away meanwhile is dropped from the batch at once. */
		events |= UV_DISCONNECT;
	if (c->out_head != NULL)
		events |= UV_WRITABLE;
	if (events == c->poll_events)
		return;
	c->poll_events = events;
	if (events == 0)
		uv_poll_stop(&c->poll);
	else
		uv_poll_start(&c->poll, events, conn_on_poll);
}

/*
 * Closing a Unix socket with packets still unread makes the peer's next
 * recv fail with ECONNRESET, before the replies we did send: a client
 * would see that instead of, say, the reason its Hello was refused. So an
 * orderly close first stops the peer from sending more (its sends now fail
 * with EPIPE), reads and drops whatever it sent meanwhile (closing any
 * fds), then frees c.
 */
static void conn_close_orderly(struct conn *c)
{
	struct server *s = c->server;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
	} ctl;
	struct iovec iov;
	struct msghdr msg;
	int fds[CEP_MAX_FDS], nfds, i, n;
	unsigned flags;

	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RD);
	for (n = 0; c->fd >= 0 && n < 4096; n++) {
		iov.iov_base = s->in_buf;
		iov.iov_len = CEP_MAX_PACKET + 1;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		if (recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			break;
		flags = 0;
		nfds = conn_take_fds(c, &msg, fds, &flags);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		stats_count(&s->stats, STATS_COUNTER_FDS_RECEIVED,
			    (uint64_t)nfds);
		stats_count(&s->stats, STATS_COUNTER_FDS_CLOSED,
			    (uint64_t)nfds);
	}
	conn_free(c);
}

void conn_job_begin(struct conn *c)
{
	c->busy = true;
	conn_poll_update(c);
}

void conn_job_done(struct conn *c)
{
	c->busy = false;
	if (c->free_deferred) {
		c->free_deferred = false;
		conn_free(c);
		return;
	}
	conn_poll_update(c);
	/* Packets may have arrived meanwhile; level-triggered polling reports
	 * them on the next iteration. */
}

void conn_shutdown(struct conn *c)
{
	if (c->closing)
		return;
	if (c->fd < 0 || c->out_head == NULL) {
		conn_close_orderly(c);
		return;
	}
	c->close_after_flush = true;
	conn_poll_update(c);
}

/* ------------------------------------------------------------------ send */

static int conn_queue(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	struct conn_out *o = malloc(sizeof(*o) + len);

	if (o == NULL) {
		log_err("client %llu: no memory to queue a response; closing "
			"the connection", (unsigned long long)c->id);
		if (fd >= 0)
			close(fd);
		conn_free(c);
		return CEP_ENOMEM;
	}
	o->next = NULL;
	o->fd = fd;
	o->len = len;
	memcpy(o->data, buf, len);
	if (c->out_tail != NULL)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_count++;
	stats_count(&c->server->stats, STATS_COUNTER_RESPONSES_QUEUED, 1);
	stats_gauge_add(&c->server->stats, STATS_GAUGE_SEND_QUEUE, 1);
	conn_poll_update(c);
	return 0;
}

/* One sendmsg(2) of a whole packet, with fd attached when it is not -1:
 * 1 when sent, 0 when the socket is full, a CEP_E* code when the peer is
 * gone. */
static int conn_send_one(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n >= 0) {
		stats_count(&c->server->stats, STATS_COUNTER_BYTES_SENT,
			    (uint64_t)n);
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return 0;
	log_debug("client %llu: send: %s", (unsigned long long)c->id,
		  strerror(errno));
	return cep__from_errno(errno);
}

int conn_send_fd(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	int ret;

	if (c->fd < 0 || c->closing) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (c->out_head == NULL) {
		ret = conn_send_one(c, buf, len, fd);
		if (ret == 1) {
			/* The peer has its own copy of the descriptor now. */
			if (fd >= 0)
				close(fd);
			return 0;
		}
		if (ret < 0) {
			if (fd >= 0)
				close(fd);
			conn_free(c);
			return ret;
		}
	}
	return conn_queue(c, buf, len, fd);
}

int conn_send(struct conn *c, const uint8_t *buf, size_t len)
{
	return conn_send_fd(c, buf, len, -1);
}

static void conn_flush(struct conn *c)
{
	struct conn_out *o;
	int ret;

	while ((o = c->out_head) != NULL) {
		ret = conn_send_one(c, o->data, o->len, o->fd);
		if (ret == 0)
			break;
		if (ret < 0) {
			conn_free(c);
			return;
		}
		c->out_head = o->next;
		if (c->out_head == NULL)
			c->out_tail = NULL;
		c->out_count--;
		stats_gauge_add(&c->server->stats, STATS_GAUGE_SEND_QUEUE, -1);
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	if (c->out_head == NULL && c->close_after_flush) {
		conn_close_orderly(c);
		return;
	}
	if (c->read_paused && c->out_count <= CONN_QUEUE_LOW)
		c->read_paused = false;
	conn_poll_update(c);
}

/* ------------------------------------------------------------------ read */

/* Moves the fds of msg's SCM_RIGHTS messages into fds (CEP_MAX_FDS slots)
 * and returns how many; any beyond that are closed and flagged. */
static int conn_take_fds(struct conn *c, struct msghdr *msg, int *fds,
			 unsigned *flags)
{
	struct cmsghdr *cm;
	int nfds = 0, n, i, fd;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (nfds < CEP_MAX_FDS) {
				fds[nfds++] = fd;
				continue;
			}
			close(fd);
			stats_count(&c->server->stats,
				    STATS_COUNTER_FDS_RECEIVED, 1);
			stats_count(&c->server->stats, STATS_COUNTER_FDS_CLOSED,
				    1);
			*flags |= DISPATCH_FDS_TRUNCATED;
		}
	}
	return nfds;
}

static void conn_read(struct conn *c)
{
	struct server *s = c->server;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
	} ctl;
	struct iovec iov;
	struct msghdr msg;
	int fds[CEP_MAX_FDS], nfds, i, ret;
	unsigned flags;
	size_t out_len;
	ssize_t n;

	for (i = 0; i < CONN_READ_BURST; i++) {
		if (c->closing || c->close_after_flush || c->read_paused ||
		    c->busy || c->free_deferred)
			return;
		iov.iov_base = s->in_buf;
		iov.iov_len = CEP_MAX_PACKET + 1;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			log_printf(errno == ECONNRESET ? LOG_DEBUG : LOG_NOTICE,
				   "client %llu: recvmsg: %s",
				   (unsigned long long)c->id, strerror(errno));
			conn_free(c);
			return;
		}
		flags = 0;
		nfds = conn_take_fds(c, &msg, fds, &flags);
		if (n == 0 && nfds == 0) {
			/* The peer closed its end (or died). */
			conn_free(c);
			return;
		}
		if (msg.msg_flags & MSG_CTRUNC)
			flags |= DISPATCH_FDS_TRUNCATED;
		if ((msg.msg_flags & MSG_TRUNC) || n > CEP_MAX_PACKET)
			flags |= DISPATCH_OVERSIZED;
		stats_count(&s->stats, STATS_COUNTER_BYTES_RECEIVED,
			    (uint64_t)n);
		c->dispatching = true;
		ret = dispatch_packet(s, c, s->in_buf, (size_t)n, fds, nfds,
				      flags, s->out_buf, &out_len);
		c->dispatching = false;
		if (c->free_deferred) {
			/* It went while its request was served (a send of
			 * another run's error failed): nobody to answer. It
			 * goes now, or after its job and runs in flight. */
			c->free_deferred = false;
			conn_free(c);
			return;
		}
		if (ret == DISPATCH_DEFERRED) {
			/* Nothing more is read until the job is done. */
			conn_poll_update(c);
			return;
		}
		/* A Hello reply carries the fence page. */
		if (conn_send_fd(c, s->out_buf, out_len,
				 fence_fd_take(&c->fence)) != 0)
			return;
		if (ret == DISPATCH_CLOSE) {
			c->close_after_flush = true;
			if (c->out_head == NULL)
				conn_close_orderly(c);
			else
				conn_poll_update(c);
			return;
		}
		if (c->out_count > CONN_QUEUE_HIGH) {
			c->read_paused = true;
			conn_poll_update(c);
			return;
		}
	}
}

static void conn_on_poll_io(struct conn *c, int status, int events);

static void conn_on_poll(uv_poll_t *h, int status, int events)
{
	struct conn *c = container_of(h, struct conn, poll);
	struct server *s = c->server;

	conn_on_poll_io(c, status, events);
	/* Its requests may have finished runs (making room) or queued some:
	 * waiting runs of any connection may start now. */
	fairq_pump(s);
}

static void conn_on_poll_io(struct conn *c, int status, int events)
{
	if (status < 0) {
		/* libuv reports POLLERR as UV_EBADF: on a Unix socket that is
		 * a peer that went away with data unread (killed), which is
		 * the client's business, not the daemon's. */
		if (status == UV_EBADF)
			log_info("client %llu: the connection failed (the peer went away)",
				 (unsigned long long)c->id);
		else
			log_notice("client %llu: poll: %s", (unsigned long long)c->id,
				   uv_strerror(status));
		conn_free(c);
		return;
	}
	if (c->busy && (events & UV_DISCONNECT)) {
		/* Watched while busy only for a run that waits, or waited, in
		 * a batch window (nothing is read meanwhile): the peer is gone. */
		log_info("client %llu went away with a run pending", (unsigned long long)c->id);
		conn_free(c);
		return;
	}
	if (events & UV_WRITABLE)
		conn_flush(c);
	/* A hang-up is read like data: what the peer sent before it went is
	 * still answered (into the void), then the zero-length read ends it. */
	if (!c->closing && (events & (UV_READABLE | UV_DISCONNECT)))
		conn_read(c);
}
