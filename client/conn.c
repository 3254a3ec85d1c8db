/*
 * conn.c — the transport of libcudaep-client, its lowest layer: the
 * SOCK_SEQPACKET socket to cudaepd, request ids, nanopb on the wire, fds as
 * SCM_RIGHTS, and the call (send a request, wait for the response with its
 * id). A response that answers no call (the error of a run in flight,
 * which may come while another call waits) goes to the callback the layer
 * above wired (struct cep__conn_cb, fence.c's). It knows nothing of
 * regions, sessions or fences.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The nanopb limits (proto/cudaep.options) must be the ones C code assumes
 * (proto/cep_limits.h, client/cudaep.h): a mismatch would truncate or
 * overrun silently. */
#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)
#define FIELD_COUNT(type, field) \
	(sizeof(((type *)0)->field) / sizeof(((type *)0)->field[0]))
_Static_assert(FIELD_SIZE(cudaep_v1_Status, message) == CEP_MAX_STATUS_MSG,
	       "Status.message");
_Static_assert(FIELD_SIZE(cudaep_v1_Hello, client_name) == CEP_MAX_CLIENT_NAME,
	       "Hello.client_name");
_Static_assert(FIELD_SIZE(cudaep_v1_HelloReply, device_name) ==
		       CEP_MAX_DEVICE_NAME,
	       "HelloReply.device_name");
_Static_assert(FIELD_SIZE(cudaep_v1_SessionOptions, name) == CEP_MAX_OBJ_NAME,
	       "SessionOptions.name");
_Static_assert(FIELD_SIZE(cudaep_v1_TensorInfo, name) == CEP_MAX_TENSOR_NAME &&
		       FIELD_SIZE(cudaep_v1_TensorRef, name) ==
			       CEP_MAX_TENSOR_NAME &&
		       FIELD_SIZE(cep_tensor_info, name) == CEP_MAX_TENSOR_NAME,
	       "tensor names");
_Static_assert(FIELD_SIZE(cudaep_v1_Dim, kind.param) == CEP_MAX_DIM_PARAM &&
		       FIELD_SIZE(cep_tensor_info, dim_params[0]) ==
			       CEP_MAX_DIM_PARAM,
	       "Dim.param");
_Static_assert(FIELD_COUNT(cudaep_v1_TensorInfo, shape) == CEP_MAX_RANK &&
		       FIELD_COUNT(cudaep_v1_TensorRef, shape) == CEP_MAX_RANK,
	       "shapes");
_Static_assert(FIELD_COUNT(cudaep_v1_Run, inputs) == CEP_MAX_IO &&
		       FIELD_COUNT(cudaep_v1_Run, outputs) == CEP_MAX_IO &&
		       FIELD_COUNT(cudaep_v1_RunReply, outputs) == CEP_MAX_IO,
	       "Run tensors");
_Static_assert(FIELD_COUNT(cudaep_v1_ClientsReply, clients) == CEP_MAX_LIST &&
		       FIELD_COUNT(cudaep_v1_SessionsReply, sessions) ==
			       CEP_MAX_LIST &&
		       FIELD_COUNT(cudaep_v1_MemoryReply, entries) ==
			       CEP_MAX_LIST,
	       "admin lists");
_Static_assert(FIELD_COUNT(cudaep_v1_StatsReply, counters) ==
			       CEP_MAX_COUNTERS &&
		       FIELD_COUNT(cudaep_v1_StatsReply, gauges) ==
			       CEP_MAX_GAUGES,
	       "stats");

/* Room for the most fds one packet may carry, aligned for cmsghdr. */
union fd_control {
	char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
	struct cmsghdr align;
};

/* ------------------------------------------------------------- setting up */

int cep__conn_init(struct cep__conn *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->recv_fd = -1;
	t->next_id = 1;
	if (pthread_mutex_init(&t->lock, NULL) != 0)
		return cep__set_error(CEP_ENOMEM, "cannot create a mutex");
	/* calloc for resp: its callback slot must start empty. */
	t->req = malloc(sizeof(*t->req));
	t->resp = calloc(1, sizeof(*t->resp));
	t->send_buf = malloc(CEP_MAX_PACKET);
	t->recv_buf = malloc(CEP_MAX_PACKET);
	if (t->req == NULL || t->resp == NULL || t->send_buf == NULL ||
	    t->recv_buf == NULL) {
		cep__conn_close(t);
		return cep__set_error(CEP_ENOMEM, "cannot allocate a client");
	}
	return 0;
}

void cep__conn_close(struct cep__conn *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->recv_fd >= 0)
		close(t->recv_fd);
	t->fd = -1;
	t->recv_fd = -1;
	free(t->req);
	free(t->resp);
	free(t->send_buf);
	free(t->recv_buf);
	t->req = NULL;
	t->resp = NULL;
	t->send_buf = NULL;
	t->recv_buf = NULL;
	pthread_mutex_destroy(&t->lock);
}

int cep__conn_connect(struct cep__conn *t, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	t->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (t->fd < 0) {
		err = errno;
		return cep__set_error(cep__from_errno(err),
				      "cannot create a socket: %s",
				      strerror(err));
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(t->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		return cep__set_error(cep__from_errno(err),
				      "cannot connect to cudaepd at %s: %s",
				      path, strerror(err));
	}
	return 0;
}

int cep__conn_take_fd(struct cep__conn *t)
{
	int fd = t->recv_fd;

	t->recv_fd = -1;
	return fd;
}

bool cep__conn_gone(const struct cep__conn *t)
{
	struct pollfd pfd = {.fd = t->fd, .events = POLLRDHUP};

	return poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* -------------------------------------------------------------- packets */

static int closed_error(void)
{
	return cep__set_error(CEP_ECONNRESET, "cudaepd closed the connection");
}

static int packet_send(struct cep__conn *t, size_t len, const int *fds, int nfds)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = t->send_buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	do {
		n = sendmsg(t->fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EPIPE || errno == ECONNRESET)
			return closed_error();
		return cep__set_error(cep__from_errno(errno),
				      "cannot send to cudaepd: %s",
				      strerror(errno));
	}
	/* A SOCK_SEQPACKET send is all or nothing; anything else is a bug. */
	if ((size_t)n != len)
		return cep__set_error(CEP_EIO, "short send to cudaepd");
	return 0;
}

/* Only the Hello reply carries an fd (the fence page), kept in
 * t->recv_fd when keep_fd; everything else that arrives is closed, so a
 * misbehaving daemon cannot leak descriptors into the application. */
static void take_received_fds(struct cep__conn *t, struct msghdr *msg,
			      bool keep_fd)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (keep_fd && t->recv_fd < 0)
				t->recv_fd = fd;
			else
				close(fd);
		}
	}
}

/* Receives one packet into t->recv_buf (its length in *len), waiting at
 * most timeout_ms (-1: no limit). */
static int packet_recv(struct cep__conn *t, size_t *len, bool keep_fd,
		       int timeout_ms)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = t->recv_buf, .iov_len = CEP_MAX_PACKET};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
	ssize_t n;
	int r;

	if (timeout_ms >= 0) {
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0)
			return cep__set_error(CEP_ETIMEDOUT, "no answer from cudaepd "
					      "in %d ms", timeout_ms);
	}
	do {
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(t->fd, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == ECONNRESET)
			return closed_error();
		return cep__set_error(cep__from_errno(errno),
				      "cannot receive from cudaepd: %s",
				      strerror(errno));
	}
	take_received_fds(t, &msg, keep_fd);
	if (n == 0)
		return closed_error();
	if (msg.msg_flags & MSG_TRUNC)
		return cep__set_error(CEP_EPROTO,
				      "a response from cudaepd exceeds %d bytes",
				      CEP_MAX_PACKET);
	*len = (size_t)n;
	return 0;
}

/* Decodes the len bytes received into resp. */
static int response_decode(struct cep__conn *t, size_t len,
			   cudaep_v1_Response *resp)
{
	pb_istream_t is = pb_istream_from_buffer(t->recv_buf, len);

	if (!pb_decode(&is, cudaep_v1_Response_fields, resp))
		return cep__set_error(CEP_EPROTO,
				      "cannot decode a response from cudaepd: %s",
				      PB_GET_ERROR(&is));
	return 0;
}

/* The one place where a protobuf Status becomes a CEP_E* return. */
static int status_error(const cudaep_v1_Response *resp)
{
	int code = resp->has_status ? resp->status.code : 0;

	if (code == 0)
		return 0;
	if (code > 0)
		return cep__set_error(CEP_EPROTO,
				      "cudaepd sent status code %d, which is "
				      "not an error code",
				      code);
	if (resp->status.message[0] == '\0')
		return cep__set_error(code, NULL);
	return cep__set_error(code, "%s", resp->status.message);
}

/*
 * Why a connection the daemon closed went: a daemon that refuses a
 * connection (too many for it, or for the uid) sends one error, with id
 * 0, and closes; a request sent after that fails, but the error may still
 * wait to be read. Returns its code, with its message, or CEP_ECONNRESET.
 */
static int closed_reason(struct cep__conn *t, cudaep_v1_Response *resp)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = t->recv_buf, .iov_len = CEP_MAX_PACKET};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	pb_istream_t is;
	ssize_t n;

	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(t->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return closed_error();
	/* An empty packet may carry fds too. */
	take_received_fds(t, &msg, false);
	if (n == 0)
		return closed_error();
	is = pb_istream_from_buffer(t->recv_buf, (size_t)n);
	if (!pb_decode(&is, cudaep_v1_Response_fields, resp) || resp->id != 0 ||
	    !resp->has_status || resp->status.code >= 0)
		return closed_error();
	return status_error(resp);
}

/* Whether the layer above took resp, which answers no call. */
static bool unasked(struct cep__conn *t, const cudaep_v1_Response *resp)
{
	return t->cb.unasked != NULL && t->cb.unasked(t->cb.arg, resp);
}

/* --------------------------------------------------------------- calling */

cudaep_v1_Request *cep__conn_req(struct cep__conn *t, pb_size_t tag,
				 size_t body_size)
{
	cudaep_v1_Request *req = t->req;

	memset(req, 0, offsetof(cudaep_v1_Request, body));
	memset(&req->body, 0, body_size);
	req->which_body = tag;
	return req;
}

int cep__conn_call(struct cep__conn *t, cudaep_v1_Request *req, const int *fds,
		   int nfds, cudaep_v1_Response *resp, pb_size_t want_body)
{
	pb_ostream_t os;
	size_t len = 0;
	int ret;

	if (nfds < 0 || nfds > CEP_MAX_FDS || (nfds > 0 && fds == NULL))
		return cep__set_error(CEP_EINVAL,
				      "%d fds for one request (at most %d)",
				      nfds, CEP_MAX_FDS);
	req->id = t->next_id++;
	os = pb_ostream_from_buffer(t->send_buf, CEP_MAX_PACKET);
	if (!pb_encode(&os, cudaep_v1_Request_fields, req))
		return cep__set_error(CEP_EMSGSIZE,
				      "cannot encode a request: %s",
				      PB_GET_ERROR(&os));
	ret = packet_send(t, os.bytes_written, fds, nfds);
	if (ret == CEP_ECONNRESET)
		return closed_reason(t, resp);
	if (ret != 0)
		return ret;
	/* The errors of runs in flight may come first: each goes up to be
	 * kept for its fence's waiter. */
	do {
		ret = packet_recv(t, &len,
				  req->which_body == cudaep_v1_Request_hello_tag, -1);
		if (ret == 0)
			ret = response_decode(t, len, resp);
		if (ret != 0)
			return ret;
	} while (resp->id != req->id && unasked(t, resp));
	if (resp->id != req->id) {
		/* Id 0: the daemon could not decode the request it answers,
		 * which can only be the one in flight. */
		if (resp->id == 0 && resp->has_status && resp->status.code != 0)
			return status_error(resp);
		return cep__set_error(CEP_EPROTO,
				      "cudaepd answered request %llu with id %llu",
				      (unsigned long long)req->id,
				      (unsigned long long)resp->id);
	}
	ret = status_error(resp);
	if (ret != 0)
		return ret;
	if (want_body != 0 && resp->which_body != want_body)
		return cep__set_error(CEP_EPROTO,
				      "cudaepd answered request %llu with body "
				      "%u, expected %u",
				      (unsigned long long)req->id,
				      (unsigned)resp->which_body,
				      (unsigned)want_body);
	return 0;
}

int cep__conn_pump(struct cep__conn *t, int timeout_ms)
{
	size_t len = 0;
	int ret;

	ret = packet_recv(t, &len, false, timeout_ms);
	if (ret != 0)
		return ret;
	/* No callback of a call: there is none in flight. */
	t->resp->cb_body.funcs.decode = NULL;
	t->resp->cb_body.arg = NULL;
	ret = response_decode(t, len, t->resp);
	if (ret != 0)
		return ret;
	/* Nothing else can be on its way: every call takes the lock and
	 * reads its own reply. */
	if (!unasked(t, t->resp))
		return cep__set_error(CEP_EPROTO, "cudaepd sent response %llu, "
				      "which nobody asked for",
				      (unsigned long long)t->resp->id);
	return 0;
}
