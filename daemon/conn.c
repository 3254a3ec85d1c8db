/*
 * conn.c — a client's transport (conn.h): reading packets with their fds
 * off a SOCK_SEQPACKET socket, sending responses or queueing them, and
 * the orderly close. libuv cannot carry SEQPACKET through uv_pipe_t, so
 * the raw non-blocking fd is watched with a uv_poll_t embedded in struct
 * conn.
 */
#include "daemon/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/container_of.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stats.h"
#include "proto/cep_limits.h"

static void conn_on_poll(uv_poll_t *h, int status, int events);

int conn_open(struct conn *c, const struct conn_env *env, int fd, uint64_t id)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->env = env;
	c->fd = fd;
	c->id = id;
	if (fd < 0)
		return 0;
	/* libuv's codes are negated errnos on Linux, as CEP_E* codes are. */
	ret = uv_poll_init(env->loop, &c->poll, fd);
	if (ret != 0) {
		close(fd);
		c->fd = -1;
		return ret;
	}
	c->poll_events = UV_READABLE | UV_DISCONNECT;
	ret = uv_poll_start(&c->poll, c->poll_events, conn_on_poll);
	if (ret != 0) {
		/* The handle exists: it is closed as any other's. */
		c->poll_events = 0;
		c->state = CONN_BROKEN;
		return ret;
	}
	return 0;
}

/* What to poll for follows from the state: read unless held, paused or on
 * the way out, write while something is queued; a broken connection
 * polls for anything, so that the next turn reports it gone. */
static void conn_poll_update(struct conn *c)
{
	int events = 0;

	if (c->fd < 0 || c->state == CONN_GONE || c->state == CONN_CLOSING)
		return;
	if (c->state == CONN_BROKEN) {
		events = UV_WRITABLE | UV_READABLE | UV_DISCONNECT;
	} else if (c->state == CONN_DRAINING) {
		/* Writable: flush what is queued, then end. */
		events = UV_WRITABLE;
	} else {
		if (c->state == CONN_OPEN && !c->read_paused && c->hold == CONN_READ)
			events |= UV_READABLE | UV_DISCONNECT;
		else if (c->state == CONN_OPEN && c->hold == CONN_HELD_WATCHED)
			events |= UV_DISCONNECT;
		if (c->out_head != NULL)
			events |= UV_WRITABLE;
	}
	if (events == c->poll_events)
		return;
	c->poll_events = events;
	if (events == 0)
		uv_poll_stop(&c->poll);
	else
		uv_poll_start(&c->poll, events, conn_on_poll);
}

/* The peer is gone: reported on the next turn (conn_on_poll). */
static void conn_break(struct conn *c)
{
	if (c->state != CONN_OPEN && c->state != CONN_DRAINING)
		return;
	c->state = CONN_BROKEN;
	conn_poll_update(c);
}

/* Reports c gone to its owner: from the poll callback only. */
static void conn_gone(struct conn *c)
{
	if (c->state == CONN_GONE || c->state == CONN_CLOSING)
		return;
	c->state = CONN_GONE;
	if (c->poll_events != 0) {
		uv_poll_stop(&c->poll);
		c->poll_events = 0;
	}
	c->env->ops->gone(c);
}

void conn_hold(struct conn *c, enum conn_hold hold)
{
	c->hold = hold;
	conn_poll_update(c);
}

/* ------------------------------------------------------------- teardown */

static void conn_queue_drop(struct conn *c)
{
	struct conn_out *o, *next;

	for (o = c->out_head; o != NULL; o = next) {
		next = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	stats_gauge_add(c->env->stats, STATS_GAUGE_SEND_QUEUE, -(int64_t)c->out_count);
	c->out_head = NULL;
	c->out_tail = NULL;
	c->out_count = 0;
}

static void conn_on_close(uv_handle_t *h)
{
	struct conn *c = container_of(h, struct conn, poll);

	close(c->fd);
	c->fd = -1;
	c->closed(c);
}

void conn_close(struct conn *c, void (*closed)(struct conn *c))
{
	c->state = CONN_CLOSING;
	c->closed = closed;
	conn_queue_drop(c);
	if (c->fd < 0) {
		closed(c);
		return;
	}
	uv_close((uv_handle_t *)&c->poll, conn_on_close);
}

/* Moves the fds of msg's SCM_RIGHTS messages into fds (CEP_MAX_FDS slots)
 * and returns how many; any beyond that are closed and flagged. */
static int conn_take_fds(struct conn *c, struct msghdr *msg, int *fds, unsigned *flags)
{
	struct cmsghdr *cm;
	int nfds = 0, n, i, fd;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (nfds < CEP_MAX_FDS) {
				fds[nfds++] = fd;
				continue;
			}
			close(fd);
			stats_count(c->env->stats, STATS_COUNTER_FDS_RECEIVED, 1);
			stats_count(c->env->stats, STATS_COUNTER_FDS_CLOSED, 1);
			*flags |= CONN_FDS_TRUNCATED;
		}
	}
	return nfds;
}

/*
 * Closing a Unix socket with packets still unread makes the peer's next
 * recv fail with ECONNRESET, before the replies we did send: a client
 * would see that instead of, say, the reason its Hello was refused. So an
 * orderly end first stops the peer from sending more (its sends now fail
 * with EPIPE), reads and drops whatever it sent meanwhile (closing any
 * fds), then reports c gone.
 */
static void conn_end_orderly(struct conn *c)
{
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
		iov.iov_base = c->env->in_buf;
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
		stats_count(c->env->stats, STATS_COUNTER_FDS_RECEIVED, (uint64_t)nfds);
		stats_count(c->env->stats, STATS_COUNTER_FDS_CLOSED, (uint64_t)nfds);
	}
	conn_gone(c);
}

void conn_drain(struct conn *c)
{
	if (c->state != CONN_OPEN)
		return;
	c->state = CONN_DRAINING;
	/* Even with nothing queued the next turn ends it (the socket is
	 * writable); never under the caller. */
	conn_poll_update(c);
}

/* ------------------------------------------------------------------ send */

static int conn_queue(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	struct conn_out *o = malloc(sizeof(*o) + len);

	if (o == NULL) {
		log_err("client %llu: no memory to queue a response; closing the connection",
			(unsigned long long)c->id);
		if (fd >= 0)
			close(fd);
		conn_break(c);
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
	stats_count(c->env->stats, STATS_COUNTER_RESPONSES_QUEUED, 1);
	stats_gauge_add(c->env->stats, STATS_GAUGE_SEND_QUEUE, 1);
	if (c->out_count > CONN_QUEUE_HIGH)
		c->read_paused = true;
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
		stats_count(c->env->stats, STATS_COUNTER_BYTES_SENT, (uint64_t)n);
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return 0;
	log_debug("client %llu: send: %s", (unsigned long long)c->id, strerror(errno));
	return cep__from_errno(errno);
}

int conn_send_fd(struct conn *c, const uint8_t *buf, size_t len, int fd)
{
	int ret;

	if (c->fd < 0 || (c->state != CONN_OPEN && c->state != CONN_DRAINING)) {
		if (fd >= 0)
			close(fd);
		return c->fd < 0 || c->state == CONN_CLOSING ? 0 : CEP_EPIPE;
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
			conn_break(c);
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
			conn_break(c);
			return;
		}
		c->out_head = o->next;
		if (c->out_head == NULL)
			c->out_tail = NULL;
		c->out_count--;
		stats_gauge_add(c->env->stats, STATS_GAUGE_SEND_QUEUE, -1);
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	if (c->out_head == NULL && c->state == CONN_DRAINING) {
		conn_end_orderly(c);
		return;
	}
	if (c->read_paused && c->out_count <= CONN_QUEUE_LOW)
		c->read_paused = false;
	conn_poll_update(c);
}

/* ------------------------------------------------------------------ read */

static void conn_read(struct conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
	} ctl;
	struct iovec iov;
	struct msghdr msg;
	int fds[CEP_MAX_FDS], nfds, i;
	unsigned flags;
	ssize_t n;

	for (i = 0; i < CONN_READ_BURST; i++) {
		if (c->state != CONN_OPEN || c->read_paused || c->hold != CONN_READ)
			return;
		iov.iov_base = c->env->in_buf;
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
				   "client %llu: recvmsg: %s", (unsigned long long)c->id,
				   strerror(errno));
			conn_gone(c);
			return;
		}
		flags = 0;
		nfds = conn_take_fds(c, &msg, fds, &flags);
		if (n == 0 && nfds == 0) {
			/* The peer closed its end (or died). */
			conn_gone(c);
			return;
		}
		if (msg.msg_flags & MSG_CTRUNC)
			flags |= CONN_FDS_TRUNCATED;
		if ((msg.msg_flags & MSG_TRUNC) || n > CEP_MAX_PACKET)
			flags |= CONN_OVERSIZED;
		stats_count(c->env->stats, STATS_COUNTER_BYTES_RECEIVED, (uint64_t)n);
		if (!c->env->ops->packet(c, c->env->in_buf, (size_t)n, fds, nfds, flags))
			return;
	}
}

static void conn_on_poll(uv_poll_t *h, int status, int events)
{
	struct conn *c = container_of(h, struct conn, poll);

	if (c->state == CONN_BROKEN) {
		conn_gone(c);
		return;
	}
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
		conn_gone(c);
		return;
	}
	if (c->hold == CONN_HELD_WATCHED && (events & UV_DISCONNECT)) {
		/* Watched while held only for a run that waits in a batch
		 * window (nothing is read meanwhile): the peer is gone. */
		log_info("client %llu went away with a run pending", (unsigned long long)c->id);
		conn_gone(c);
		return;
	}
	if (events & UV_WRITABLE)
		conn_flush(c);
	/* A hang-up is read like data: what the peer sent before it went is
	 * still answered (into the void), then the zero-length read ends it. */
	if (c->state == CONN_OPEN && (events & (UV_READABLE | UV_DISCONNECT)))
		conn_read(c);
}

/* ---------------------------------------------------------------- handover */

void conn_save(const struct conn *c, struct handover_build *b, HvClient *hc)
{
	const struct conn_out *o;
	size_t k;

	hc->fd = handover_keep_fd(b, c->fd);
	hc->close_after_flush = c->state == CONN_DRAINING;
	hc->out = handover_alloc(b, sizeof(*hc->out) * c->out_count);
	for (o = c->out_head, k = 0; hc->out != NULL && o != NULL && k < c->out_count;
	     o = o->next, k++) {
		HvOut *ho = handover_alloc(b, sizeof(*ho));

		if (ho == NULL)
			return;
		cudaepd__handover__out__init(ho);
		ho->data.data = (uint8_t *)o->data;
		ho->data.len = o->len;
		ho->fd = handover_keep_fd(b, o->fd);
		hc->out[hc->n_out++] = ho;
	}
}

int conn_restore(struct conn *c, const struct conn_env *env, struct handover *h,
		 const HvClient *hc)
{
	struct stat sb;
	size_t i;
	int fd, ret;

	fd = handover_fd_take(h, hc->fd, "a client's socket");
	if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode))) {
		log_warning("handover: fd %d of client %llu is not a socket", fd,
			    (unsigned long long)hc->id);
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return cep__set_error(CEP_EINVAL, "its socket did not come over");
	ret = conn_open(c, env, fd, hc->id);
	if (ret != 0)
		return ret;
	for (i = 0; i < hc->n_out && c->state == CONN_OPEN; i++) {
		const HvOut *o = hc->out[i];

		fd = handover_fd_take(h, o->fd, "an fd of a queued response");
		if (o->data.len == 0 || o->data.len > CEP_MAX_PACKET) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		(void)conn_queue(c, o->data.data, o->data.len, fd);
	}
	if (hc->close_after_flush)
		conn_drain(c);
	return 0;
}
