/*
 * fakedaemon.c — the scripted cudaepd of the client's unit tests (see
 * fakedaemon.h): a listener thread that decodes requests with nanopb and
 * sends whatever the test's handler chose.
 */
#include "tests/unit/fakedaemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FAKE_MAX_RECV_FDS 8 /* more than a client may send, to see excess */

void fake_error(cudaep_v1_Response *resp, int code, const char *message)
{
	resp->has_status = true;
	resp->status.code = code;
	snprintf(resp->status.message, sizeof(resp->status.message), "%s",
		 message);
	resp->which_body = 0;
}

enum fake_action fake_default(struct fake_daemon *fake,
			      const cudaep_v1_Request *req, int *fds, int nfds,
			      cudaep_v1_Response *resp)
{
	cudaep_v1_HelloReply *h = &resp->body.hello;

	switch (req->which_body) {
	case cudaep_v1_Request_hello_tag:
		resp->which_body = cudaep_v1_Response_hello_tag;
		h->protocol_version = CEP_PROTOCOL_VERSION;
		snprintf(h->daemon_version, sizeof(h->daemon_version), "0.1.0");
		h->client_id = 7;
		snprintf(h->backend, sizeof(h->backend), "host");
		snprintf(h->device_name, sizeof(h->device_name), "fake cpu");
		h->max_packet = CEP_MAX_PACKET;
		break;
	case cudaep_v1_Request_ping_tag:
		resp->which_body = cudaep_v1_Response_ping_tag;
		resp->body.ping.payload = req->body.ping.payload;
		break;
	case cudaep_v1_Request_release_region_tag:
		resp->which_body = cudaep_v1_Response_release_region_tag;
		break;
	case cudaep_v1_Request_unload_tag:
		resp->which_body = cudaep_v1_Response_unload_tag;
		break;
	default:
		fake_error(resp, CEP_ENOTSUP, "the fake daemon does not do that");
		break;
	}
	return FAKE_REPLY;
}

static bool list_encode(pb_ostream_t *os, const pb_field_t *field,
			void *const *arg)
{
	const struct fake_tensor_list *l = *arg;

	for (size_t i = 0; i < l->count; i++)
		if (!pb_encode_tag_for_field(os, field) ||
		    !pb_encode_submessage(os, cudaep_v1_TensorInfo_fields,
					  &l->items[i]))
			return false;
	return true;
}

void fake_session_info(struct fake_daemon *fake,
		       cudaep_v1_SessionInfoReply *info,
		       const cudaep_v1_TensorInfo *in, size_t n_in,
		       const cudaep_v1_TensorInfo *out, size_t n_out)
{
	fake->lists[0].items = in;
	fake->lists[0].count = n_in;
	fake->lists[1].items = out;
	fake->lists[1].count = n_out;
	info->inputs.funcs.encode = list_encode;
	info->inputs.arg = &fake->lists[0];
	info->outputs.funcs.encode = list_encode;
	info->outputs.arg = &fake->lists[1];
}

static int packet_send(int fd, const void *buf, size_t len, const int *fds,
		       int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CEP_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

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
	return sendmsg(fd, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Reads and answers one request; false when the connection is over. */
static bool serve_one(struct fake_daemon *fake, int conn, uint8_t *buf)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FAKE_MAX_RECV_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = CEP_MAX_PACKET};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	int fds[FAKE_MAX_RECV_FDS];
	int nfds = 0;
	enum fake_action action;
	struct cmsghdr *cm;
	pb_istream_t is;
	pb_ostream_t os;
	ssize_t n;
	bool ok = true;

	n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return false;
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < k && nfds < FAKE_MAX_RECV_FDS; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	memset(fake->req, 0, sizeof(*fake->req));
	memset(fake->resp, 0, sizeof(*fake->resp));
	is = pb_istream_from_buffer(buf, (size_t)n);
	if (!pb_decode(&is, cudaep_v1_Request_fields, fake->req)) {
		/* As cudaepd does: id 0, since the request's is unknown. */
		fake_error(fake->resp, CEP_EBADMSG, "undecodable request");
		action = FAKE_REPLY;
	} else {
		fake->requests++;
		fake->resp->id = fake->req->id;
		action = fake->handler(fake, fake->req, fds, nfds, fake->resp);
	}
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);

	switch (action) {
	case FAKE_REPLY:
		os = pb_ostream_from_buffer(buf, CEP_MAX_PACKET);
		if (!pb_encode(&os, cudaep_v1_Response_fields, fake->resp)) {
			fprintf(stderr, "fake daemon: cannot encode: %s\n",
				PB_GET_ERROR(&os));
			ok = false;
			break;
		}
		ok = packet_send(conn, buf, os.bytes_written,
				 fake->reply_fds, fake->n_reply_fds) == 0;
		fake->n_reply_fds = 0;
		break;
	case FAKE_RAW:
		ok = packet_send(conn, fake->raw, fake->raw_len, NULL,
				 0) == 0;
		break;
	case FAKE_CLOSE:
		ok = false;
		break;
	case FAKE_SILENT:
		break;
	}
	return ok;
}

static void *serve(void *arg)
{
	struct fake_daemon *fake = arg;
	uint8_t *buf = malloc(CEP_MAX_PACKET);
	/* [0] the stop pipe, [1] the listener, then the connections. */
	struct pollfd p[2 + FAKE_MAX_CONNS];

	while (buf != NULL) {
		p[0] = (struct pollfd){.fd = fake->stop_pipe[0], .events = POLLIN};
		p[1] = (struct pollfd){.fd = fake->listen_fd, .events = POLLIN};
		for (int i = 0; i < FAKE_MAX_CONNS; i++)
			p[2 + i] = (struct pollfd){.fd = fake->conns[i],
						   .events = POLLIN};
		if (poll(p, 2 + FAKE_MAX_CONNS, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents != 0)
			break;
		for (int i = 0; i < FAKE_MAX_CONNS; i++) {
			if (p[2 + i].revents == 0 || fake->conns[i] < 0)
				continue;
			if (!serve_one(fake, fake->conns[i], buf)) {
				close(fake->conns[i]);
				fake->conns[i] = -1;
			}
		}
		if (p[1].revents != 0) {
			int i = 0;

			while (i < FAKE_MAX_CONNS && fake->conns[i] >= 0)
				i++;
			if (i == FAKE_MAX_CONNS)
				continue; /* full: it waits in the backlog */
			fake->conns[i] = accept4(fake->listen_fd, NULL, NULL,
						 SOCK_CLOEXEC);
			if (fake->conns[i] >= 0)
				fake->connections++;
		}
	}
	free(buf);
	return NULL;
}

int fake_start(struct fake_daemon *fake, fake_handler handler, void *arg)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(fake, 0, sizeof(*fake));
	fake->listen_fd = -1;
	for (int i = 0; i < FAKE_MAX_CONNS; i++)
		fake->conns[i] = -1;
	fake->stop_pipe[0] = -1;
	fake->stop_pipe[1] = -1;
	fake->handler = handler != NULL ? handler : fake_default;
	fake->arg = arg;
	snprintf(fake->dir, sizeof(fake->dir), "/tmp/cep-fake-XXXXXX");
	if (mkdtemp(fake->dir) == NULL) {
		fake->dir[0] = '\0';
		return -1;
	}
	snprintf(fake->path, sizeof(fake->path), "%s/cudaep.sock", fake->dir);
	fake->req = calloc(1, sizeof(*fake->req));
	fake->resp = calloc(1, sizeof(*fake->resp));
	fake->raw = calloc(1, CEP_MAX_PACKET + 1024);
	if (fake->req == NULL || fake->resp == NULL || fake->raw == NULL)
		return -1;
	fake->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fake->listen_fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fake->path);
	if (bind(fake->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fake->listen_fd, 8) != 0)
		return -1;
	if (pipe2(fake->stop_pipe, O_CLOEXEC) != 0)
		return -1;
	if (pthread_create(&fake->thread, NULL, serve, fake) != 0)
		return -1;
	fake->started = true;
	return 0;
}

void fake_stop(struct fake_daemon *fake)
{
	if (fake->started) {
		if (write(fake->stop_pipe[1], "x", 1) != 1)
			perror("fake daemon: stop");
		pthread_join(fake->thread, NULL);
		fake->started = false;
	}
	for (int i = 0; i < 2; i++)
		if (fake->stop_pipe[i] >= 0)
			close(fake->stop_pipe[i]);
	for (int i = 0; i < FAKE_MAX_CONNS; i++) {
		if (fake->conns[i] >= 0)
			close(fake->conns[i]);
		fake->conns[i] = -1;
	}
	if (fake->listen_fd >= 0)
		close(fake->listen_fd);
	fake->stop_pipe[0] = fake->stop_pipe[1] = -1;
	fake->listen_fd = -1;
	if (fake->dir[0] != '\0') {
		unlink(fake->path);
		rmdir(fake->dir);
		fake->dir[0] = '\0';
	}
	free(fake->req);
	free(fake->resp);
	free(fake->raw);
	fake->req = NULL;
	fake->resp = NULL;
	fake->raw = NULL;
}

int fake_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

int fake_count_maps(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return n;
}
