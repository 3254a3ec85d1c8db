/*
 * client.c — the cep_client of libcudaep-client, its top layer: connect
 * and hello (whose reply brings the fence page, handed to fence.c), close
 * (which drops the regions and sessions still linked to the client, so it
 * calls down into region.c and session.c), ping, the client's accessors,
 * and the raw call that cudaepctl and the tests use (internal.h). The
 * transport under everything is conn.c.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

/* ------------------------------------------------------------ connecting */

/* Releases a client that holds no regions or sessions (or one being built,
 * whose socket may not be connected yet). */
static void client_free(cep_client *c)
{
	if (c == NULL)
		return;
	cep__fence_close(c);
	cep__conn_close(&c->conn);
	free(c);
}

static int client_alloc(cep_client **out)
{
	cep_client *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return cep__set_error(CEP_ENOMEM, "cannot allocate a client");
	ret = cep__conn_init(&c->conn);
	if (ret != 0) {
		free(c);
		return ret;
	}
	cep__link_init(&c->regions);
	cep__link_init(&c->sessions);
	cep__fence_init(c);
	*out = c;
	return 0;
}

static int client_hello(cep_client *c, const char *name)
{
	struct cep__conn *t = &c->conn;
	cudaep_v1_Request *req = CEP__REQ(t, hello);
	const cudaep_v1_HelloReply *hr = &t->resp->body.hello;
	int ret;

	req->body.hello.protocol_version = CEP_PROTOCOL_VERSION;
	snprintf(req->body.hello.client_name,
		 sizeof(req->body.hello.client_name), "%s", name);
	ret = cep__conn_call(t, req, NULL, 0, t->resp,
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
	cep__fence_open(c, cep__conn_take_fd(t), hr->fence_slots);
	return 0;
}

/* Says hello on c's connected socket; on success *out is c, else c is
 * freed. */
static int client_start(cep_client *c, const char *client_name,
			cep_client **out)
{
	int ret;

	if (client_name == NULL)
		client_name = program_invocation_short_name;
	/* Nobody else can see c yet; the lock is taken for the rule's sake. */
	pthread_mutex_lock(&c->conn.lock);
	ret = client_hello(c, client_name);
	pthread_mutex_unlock(&c->conn.lock);
	if (ret != 0) {
		client_free(c);
		return ret;
	}
	*out = c;
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

	ret = client_alloc(&c);
	if (ret != 0)
		return ret;
	ret = cep__conn_connect(&c->conn, path);
	if (ret != 0) {
		client_free(c);
		return ret;
	}
	return client_start(c, client_name, out);
}

int cep__connect_fd(int fd, const char *client_name, cep_client **out)
{
	cep_client *c = NULL;
	int ret;

	if (out == NULL || fd < 0) {
		if (fd >= 0)
			close(fd);
		return cep__set_error(CEP_EINVAL, "cep__connect_fd: fd %d, out %s",
				      fd, out == NULL ? "NULL" : "given");
	}
	*out = NULL;
	ret = client_alloc(&c);
	if (ret != 0) {
		close(fd);
		return ret;
	}
	c->conn.fd = fd;
	return client_start(c, client_name, out);
}

void cep_close(cep_client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->conn.lock);
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
	pthread_mutex_unlock(&c->conn.lock);
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
	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, ping);
	/* A payload that differs per call shows that the reply is this
	 * ping's echo. */
	payload = c->conn.next_id ^ UINT64_C(0x9e3779b97f4a7c15);
	req->body.ping.payload = payload;
	ret = cep__conn_call(&c->conn, req, NULL, 0, c->conn.resp,
			     cudaep_v1_Response_ping_tag);
	if (ret == 0 && c->conn.resp->body.ping.payload != payload)
		ret = cep__set_error(CEP_EPROTO,
				     "cudaepd echoed ping payload %llu, "
				     "sent %llu",
				     (unsigned long long)c->conn.resp->body.ping.payload,
				     (unsigned long long)payload);
	pthread_mutex_unlock(&c->conn.lock);
	return ret;
}

int cep_kernel_stats_get(cep_client *c, cep_kernel_stats *out)
{
	const cudaep_v1_KernelsReply *k;
	cudaep_v1_Request *req;
	int ret;

	if (c == NULL || out == NULL)
		return cep__set_error(CEP_EINVAL, "cep_kernel_stats_get: NULL argument");
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, kernels);
	ret = cep__conn_call(&c->conn, req, NULL, 0, c->conn.resp,
			     cudaep_v1_Response_kernels_tag);
	if (ret == 0 && c->conn.resp->body.kernels.device_kernels) {
		k = &c->conn.resp->body.kernels;
		out->arch = k->arch;
		out->modules = k->total;
		out->compiled = k->compiles;
		out->compile_us = k->compile_us;
		out->prebuilt = k->prebuilt_loads;
		out->from_disk = k->disk_loads;
	}
	pthread_mutex_unlock(&c->conn.lock);
	return ret;
}

int cep__call(cep_client *c, cudaep_v1_Request *req, const int *fds, int nfds,
	      cudaep_v1_Response *resp)
{
	int ret;

	if (c == NULL || req == NULL || resp == NULL)
		return cep__set_error(CEP_EINVAL, "cep__call: NULL argument");
	pthread_mutex_lock(&c->conn.lock);
	/* The caller's resp may be fresh from malloc: no callback of its own
	 * may run, so the session tensor lists are skipped. */
	resp->cb_body.funcs.decode = NULL;
	resp->cb_body.arg = NULL;
	ret = cep__conn_call(&c->conn, req, fds, nfds, resp, 0);
	pthread_mutex_unlock(&c->conn.lock);
	return ret;
}

/* ------------------------------------------------------------ accessors */

int cep__client_fd(const cep_client *c)
{
	return c != NULL ? c->conn.fd : -1;
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
