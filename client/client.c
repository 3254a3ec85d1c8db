/*
 * client.c — the connection of libcudaep-client to cudaepd: connect and
 * hello (which brings the fence page, fence.c), the request/response call
 * over the SOCK_SEQPACKET socket (nanopb on the wire, fds as SCM_RIGHTS;
 * the errors of runs in flight that arrive meanwhile are kept for their
 * waiters), ping, close, and the client's accessors.
 * region.c, session.c and run.c build their requests on top of
 * cep__call_locked(); cudaepctl and the tests use cep__call().
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

/* ------------------------------------------------------------------ lists */

void cep__link_init(struct cep_link *head)
{
	head->prev = head;
	head->next = head;
}

void cep__link_add(struct cep_link *head, struct cep_link *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

void cep__link_del(struct cep_link *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->prev = node;
	node->next = node;
}

/* -------------------------------------------------------------- transport */

static int closed_error(void)
{
	return cep__set_error(CEP_ECONNRESET, "cudaepd closed the connection");
}

static int packet_send(cep_client *c, size_t len, const int *fds, int nfds)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = c->send_buf, .iov_len = len};
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
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
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
 * c->recv_fd when keep_fd; everything else that arrives is closed, so a
 * misbehaving daemon cannot leak descriptors into the application. */
static void take_received_fds(cep_client *c, struct msghdr *msg, bool keep_fd)
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
			if (keep_fd && c->recv_fd < 0)
				c->recv_fd = fd;
			else
				close(fd);
		}
	}
}

int cep__packet_recv(cep_client *c, size_t *len, bool keep_fd, int timeout_ms)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = c->recv_buf, .iov_len = CEP_MAX_PACKET};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
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
		n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == ECONNRESET)
			return closed_error();
		return cep__set_error(cep__from_errno(errno),
				      "cannot receive from cudaepd: %s",
				      strerror(errno));
	}
	take_received_fds(c, &msg, keep_fd);
	if (n == 0)
		return closed_error();
	if (msg.msg_flags & MSG_TRUNC)
		return cep__set_error(CEP_EPROTO,
				      "a response from cudaepd exceeds %d bytes",
				      CEP_MAX_PACKET);
	*len = (size_t)n;
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
static int closed_reason(cep_client *c, cudaep_v1_Response *resp)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = c->recv_buf, .iov_len = CEP_MAX_PACKET};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	pb_istream_t is;
	ssize_t n;

	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return closed_error();
	take_received_fds(c, &msg, false);
	is = pb_istream_from_buffer(c->recv_buf, (size_t)n);
	if (!pb_decode(&is, cudaep_v1_Response_fields, resp) || resp->id != 0 ||
	    !resp->has_status || resp->status.code >= 0)
		return closed_error();
	return status_error(resp);
}

/* --------------------------------------------------------------- calling */

cudaep_v1_Request *cep__req_begin(cep_client *c, pb_size_t tag,
				  size_t body_size)
{
	cudaep_v1_Request *req = c->req;

	memset(req, 0, offsetof(cudaep_v1_Request, body));
	memset(&req->body, 0, body_size);
	req->which_body = tag;
	return req;
}

int cep__call_locked(cep_client *c, cudaep_v1_Request *req, const int *fds,
		     int nfds, cudaep_v1_Response *resp, pb_size_t want_body)
{
	pb_ostream_t os;
	pb_istream_t is;
	size_t len = 0;
	int ret;

	if (nfds < 0 || nfds > CEP_MAX_FDS || (nfds > 0 && fds == NULL))
		return cep__set_error(CEP_EINVAL,
				      "%d fds for one request (at most %d)",
				      nfds, CEP_MAX_FDS);
	req->id = c->next_id++;
	os = pb_ostream_from_buffer(c->send_buf, CEP_MAX_PACKET);
	if (!pb_encode(&os, cudaep_v1_Request_fields, req))
		return cep__set_error(CEP_EMSGSIZE,
				      "cannot encode a request: %s",
				      PB_GET_ERROR(&os));
	ret = packet_send(c, os.bytes_written, fds, nfds);
	if (ret == CEP_ECONNRESET)
		return closed_reason(c, resp);
	if (ret != 0)
		return ret;
	/* The errors of runs in flight may come first: each is kept for its
	 * fence's waiter. */
	do {
		ret = cep__packet_recv(c, &len,
				       req->which_body == cudaep_v1_Request_hello_tag, -1);
		if (ret != 0)
			return ret;
		is = pb_istream_from_buffer(c->recv_buf, len);
		if (!pb_decode(&is, cudaep_v1_Response_fields, resp))
			return cep__set_error(CEP_EPROTO,
					      "cannot decode a response from cudaepd: %s",
					      PB_GET_ERROR(&is));
	} while (resp->id != req->id && cep__fence_stash(c, resp));
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

int cep__call(cep_client *c, cudaep_v1_Request *req, const int *fds, int nfds,
	      cudaep_v1_Response *resp)
{
	int ret;

	if (c == NULL || req == NULL || resp == NULL)
		return cep__set_error(CEP_EINVAL, "cep__call: NULL argument");
	pthread_mutex_lock(&c->lock);
	/* The caller's resp may be fresh from malloc: no callback of its own
	 * may run, so the session tensor lists are skipped. */
	resp->cb_body.funcs.decode = NULL;
	resp->cb_body.arg = NULL;
	ret = cep__call_locked(c, req, fds, nfds, resp, 0);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int cep__client_fd(const cep_client *c)
{
	return c != NULL ? c->fd : -1;
}

/* ------------------------------------------------------------ connecting */

/* Releases a client that holds no regions or sessions (or one being built:
 * every member may still be unset). */
static void client_free(cep_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if (c->recv_fd >= 0)
		close(c->recv_fd);
	cep__fence_close(c);
	free(c->req);
	free(c->resp);
	free(c->send_buf);
	free(c->recv_buf);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int client_alloc(cep_client **out)
{
	cep_client *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return cep__set_error(CEP_ENOMEM, "cannot allocate a client");
	c->fd = -1;
	c->recv_fd = -1;
	c->next_id = 1;
	cep__link_init(&c->regions);
	cep__link_init(&c->sessions);
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return cep__set_error(CEP_ENOMEM, "cannot create a mutex");
	}
	/* calloc for resp: its callback slot must start empty. */
	c->req = malloc(sizeof(*c->req));
	c->resp = calloc(1, sizeof(*c->resp));
	c->send_buf = malloc(CEP_MAX_PACKET);
	c->recv_buf = malloc(CEP_MAX_PACKET);
	if (c->req == NULL || c->resp == NULL || c->send_buf == NULL ||
	    c->recv_buf == NULL) {
		client_free(c);
		return cep__set_error(CEP_ENOMEM, "cannot allocate a client");
	}
	*out = c;
	return 0;
}

static int socket_connect(cep_client *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		err = errno;
		return cep__set_error(cep__from_errno(err),
				      "cannot create a socket: %s",
				      strerror(err));
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		return cep__set_error(cep__from_errno(err),
				      "cannot connect to cudaepd at %s: %s",
				      path, strerror(err));
	}
	return 0;
}

static int client_hello(cep_client *c, const char *name)
{
	cudaep_v1_Request *req = CEP__REQ(c, hello);
	const cudaep_v1_HelloReply *hr = &c->resp->body.hello;
	int ret;

	req->body.hello.protocol_version = CEP_PROTOCOL_VERSION;
	snprintf(req->body.hello.client_name,
		 sizeof(req->body.hello.client_name), "%s", name);
	ret = cep__call_locked(c, req, NULL, 0, c->resp,
			       cudaep_v1_Response_hello_tag);
	if (ret != 0)
		return ret;
	if (hr->protocol_version != CEP_PROTOCOL_VERSION)
		return cep__set_error(CEP_EVERSION,
				      "cudaepd speaks protocol version %u, "
				      "this library %u",
				      (unsigned)hr->protocol_version,
				      (unsigned)CEP_PROTOCOL_VERSION);
	c->client_id = hr->client_id;
	snprintf(c->backend, sizeof(c->backend), "%s", hr->backend);
	snprintf(c->device, sizeof(c->device), "%s", hr->device_name);
	cep__fence_open(c, hr->fence_slots);
	return 0;
}

int cep_connect(const char *socket_path, const char *client_name,
		cep_client **out)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	cep_client *c = NULL;
	int ret;

	if (out == NULL)
		return cep__set_error(CEP_EINVAL, "cep_connect: out is NULL");
	*out = NULL;
	if (socket_path == NULL) {
		ret = cep_default_socket_path(path, sizeof(path));
		if (ret != 0)
			return cep__set_error(ret,
					      "the default socket path is "
					      "longer than %zu bytes",
					      sizeof(path) - 1);
	} else if (strlen(socket_path) >= sizeof(path)) {
		return cep__set_error(CEP_ENAMETOOLONG,
				      "socket path %s is longer than %zu bytes",
				      socket_path, sizeof(path) - 1);
	} else {
		memcpy(path, socket_path, strlen(socket_path) + 1);
	}
	if (client_name == NULL)
		client_name = program_invocation_short_name;

	ret = client_alloc(&c);
	if (ret != 0)
		goto out;
	ret = socket_connect(c, path);
	if (ret != 0)
		goto out;
	/* Nobody else can see c yet; the lock is taken for the rule's sake. */
	pthread_mutex_lock(&c->lock);
	ret = client_hello(c, client_name);
	pthread_mutex_unlock(&c->lock);
	if (ret != 0)
		goto out;
	*out = c;
	c = NULL;
	ret = 0;
out:
	client_free(c);
	return ret;
}

void cep_close(cep_client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->sessions.next != &c->sessions) {
		struct cep_link *l = c->sessions.next;

		cep__link_del(l);
		cep__session_drop(cep__container_of(l, struct cep_session, link));
	}
	while (c->regions.next != &c->regions) {
		struct cep_link *l = c->regions.next;

		cep__link_del(l);
		cep__region_drop(cep__container_of(l, struct cep_region, link));
	}
	pthread_mutex_unlock(&c->lock);
	client_free(c);
}

/* --------------------------------------------------------- simple calls */

int cep_ping(cep_client *c)
{
	cudaep_v1_Request *req;
	uint64_t payload;
	int ret;

	if (c == NULL)
		return cep__set_error(CEP_EINVAL, "cep_ping: client is NULL");
	pthread_mutex_lock(&c->lock);
	req = CEP__REQ(c, ping);
	/* A payload that differs per call shows that the reply is this
	 * ping's echo. */
	payload = c->next_id ^ UINT64_C(0x9e3779b97f4a7c15);
	req->body.ping.payload = payload;
	ret = cep__call_locked(c, req, NULL, 0, c->resp,
			       cudaep_v1_Response_ping_tag);
	if (ret == 0 && c->resp->body.ping.payload != payload)
		ret = cep__set_error(CEP_EPROTO,
				     "cudaepd echoed ping payload %llu, "
				     "sent %llu",
				     (unsigned long long)c->resp->body.ping.payload,
				     (unsigned long long)payload);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

uint64_t cep_client_id(const cep_client *c)
{
	return c != NULL ? c->client_id : 0;
}

const char *cep_client_backend(const cep_client *c)
{
	return c != NULL ? c->backend : "";
}

const char *cep_client_device(const cep_client *c)
{
	return c != NULL ? c->device : "";
}
