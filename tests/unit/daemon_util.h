/*
 * daemon_util.h — helpers for the daemon's unit tests: a server built from
 * a config without any socket, requests packed with protobuf-c and fed to
 * dispatch_packet() on detached connections, sealed memfds, and a count
 * of this process's open fds. Header-only and static, so that it is not
 * linked into other modules' unit tests (which do not have the daemon's
 * sources in their core archive).
 */
#ifndef CEP_TESTS_DAEMON_UTIL_H
#define CEP_TESTS_DAEMON_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cudaep.pb-c.h"

#include "proto/cep_limits.h"
#include "daemon/config.h"
#include "daemon/client.h"
#include "client/cudaep.h"
#include "daemon/dispatch.h"
#include "common/log.h"
#include "daemon/server.h"

#define TU_UNUSED __attribute__((unused))

/* A server from cfg (NULL: defaults), with the log quiet. Dispatch is
 * tested on the host backend even on a GPU machine, unless cfg names
 * another. */
static TU_UNUSED struct server *tu_server(const struct config *cfg)
{
	struct config def;
	struct server *s = NULL;

	log_level_set(LOG_CRIT);
	if (cfg == NULL)
		config_init(&def);
	else
		def = *cfg;
	if (def.backend == CONFIG_BACKEND_AUTO)
		def.backend = CONFIG_BACKEND_HOST;
	cr_assert_eq(server_new(&def, &s), 0);
	return s;
}

static TU_UNUSED struct client *tu_conn(struct server *s, uid_t uid)
{
	struct client *c = NULL;

	cr_assert_eq(server_client_detached(s, uid, uid, 4242, &c), 0);
	return c;
}

/* Feeds raw bytes to dispatch and decodes the response (free it with
 * cudaep__v1__response__free_unpacked(resp, NULL)). *dret gets
 * dispatch_packet()'s return when not NULL. */
static TU_UNUSED Cudaep__V1__Response *
tu_raw(struct server *s, struct client *c, const void *buf, size_t len,
       int *fds, int nfds, unsigned flags, int *dret)
{
	static uint8_t out[CEP_MAX_PACKET];
	Cudaep__V1__Response *resp;
	size_t out_len = 0;
	int ret;

	ret = dispatch_packet(&s->d, c, buf, len, fds, nfds, flags, out, &out_len);
	if (dret != NULL)
		*dret = ret;
	cr_assert(out_len > 0 && out_len <= CEP_MAX_PACKET);
	resp = cudaep__v1__response__unpack(NULL, out_len, out);
	cr_assert_not_null(resp, "the response does not decode");
	cr_assert_not_null(resp->status, "the response has no status");
	return resp;
}

/* Packs q and dispatches it; see tu_raw(). */
static TU_UNUSED Cudaep__V1__Response *
tu_call(struct server *s, struct client *c, Cudaep__V1__Request *q, int *fds,
	int nfds, int *dret)
{
	static uint8_t buf[CEP_MAX_PACKET];
	size_t len = cudaep__v1__request__get_packed_size(q);
	Cudaep__V1__Response *resp;

	cr_assert(len <= sizeof(buf));
	cudaep__v1__request__pack(q, buf);
	resp = tu_raw(s, c, buf, len, fds, nfds, 0, dret);
	cr_assert_eq(resp->id, q->id, "response id %llu for request %llu",
		     (unsigned long long)resp->id, (unsigned long long)q->id);
	return resp;
}

static TU_UNUSED int tu_code(Cudaep__V1__Response *resp)
{
	return resp->status->code;
}

/* Asserts that resp failed with code and a message containing want, then
 * frees it. */
static TU_UNUSED void tu_expect_error(Cudaep__V1__Response *resp, int code,
				      const char *want)
{
	cr_assert_eq(resp->status->code, code, "code %s (%s), want %s",
		     cep_err_name(resp->status->code), resp->status->message,
		     cep_err_name(code));
	cr_assert_eq(resp->body_case, CUDAEP__V1__RESPONSE__BODY__NOT_SET);
	cr_assert_not_null(strstr(resp->status->message, want),
			   "message '%s' lacks '%s'", resp->status->message,
			   want);
	cudaep__v1__response__free_unpacked(resp, NULL);
}

static TU_UNUSED void tu_expect_ok(Cudaep__V1__Response *resp)
{
	cr_assert_eq(resp->status->code, 0, "failed: %s: %s",
		     cep_err_name(resp->status->code), resp->status->message);
}

static TU_UNUSED uint64_t tu_next_id = 1;

static TU_UNUSED Cudaep__V1__Response *tu_hello_v(struct server *s,
						   struct client *c,
						   uint32_t version,
						   const char *name, int *dret)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Hello h = CUDAEP__V1__HELLO__INIT;

	h.protocol_version = version;
	h.client_name = (char *)name;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_HELLO;
	q.hello = &h;
	return tu_call(s, c, &q, NULL, 0, dret);
}

static TU_UNUSED void tu_hello(struct server *s, struct client *c)
{
	Cudaep__V1__Response *r = tu_hello_v(s, c, CEP_PROTOCOL_VERSION,
					     "unit", NULL);

	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
}

static TU_UNUSED Cudaep__V1__Response *tu_ping(struct server *s,
					       struct client *c, uint64_t payload,
					       int *fds, int nfds)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Ping p = CUDAEP__V1__PING__INIT;

	p.payload = payload;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_PING;
	q.ping = &p;
	return tu_call(s, c, &q, fds, nfds, NULL);
}

static TU_UNUSED Cudaep__V1__Response *tu_register(struct server *s,
						   struct client *c,
						   uint64_t size, int *fds,
						   int nfds)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__RegisterRegion m = CUDAEP__V1__REGISTER_REGION__INIT;

	m.size = size;
	m.name = (char *)"t";
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_REGISTER_REGION;
	q.register_region = &m;
	return tu_call(s, c, &q, fds, nfds, NULL);
}

static TU_UNUSED Cudaep__V1__Response *tu_release(struct server *s,
						  struct client *c, uint64_t id)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__ReleaseRegion m = CUDAEP__V1__RELEASE_REGION__INIT;

	m.region_id = id;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_RELEASE_REGION;
	q.release_region = &m;
	return tu_call(s, c, &q, NULL, 0, NULL);
}

/* A memfd of size bytes, sealed against shrinking and growing when
 * sealed. */
static TU_UNUSED int tu_memfd(size_t size, bool sealed)
{
	int fd = memfd_create("cudaep-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	if (sealed)
		cr_assert_eq(fcntl(fd, F_ADD_SEALS,
				   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			     0);
	return fd;
}

/* Registers a fresh sealed memfd of size bytes; returns the region id. */
static TU_UNUSED uint64_t tu_region(struct server *s, struct client *c,
				    uint64_t size)
{
	int fd = tu_memfd(size, true);
	Cudaep__V1__Response *r = tu_register(s, c, size, &fd, 1);
	uint64_t id;

	tu_expect_ok(r);
	cr_assert_eq(r->body_case, CUDAEP__V1__RESPONSE__BODY_REGISTER_REGION);
	id = r->register_region->region_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

/* Loads the model bytes (len of them) through a memfd as session name;
 * asserts that it loads and returns the session id. */
static TU_UNUSED uint64_t tu_load_bytes(struct server *s, struct client *c,
					const void *bytes, size_t len, const char *name)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__LoadModel m = CUDAEP__V1__LOAD_MODEL__INIT;
	Cudaep__V1__SessionOptions o = CUDAEP__V1__SESSION_OPTIONS__INIT;
	int fd = memfd_create("model", MFD_CLOEXEC);
	Cudaep__V1__Response *r;
	uint64_t id;

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	o.name = (char *)name;
	m.source = CUDAEP__V1__MODEL_SOURCE__MODEL_SOURCE_FD;
	m.options = &o;
	q.id = tu_next_id++;
	q.body_case = CUDAEP__V1__REQUEST__BODY_LOAD_MODEL;
	q.load_model = &m;
	r = tu_call(s, c, &q, &fd, 1, NULL);
	tu_expect_ok(r);
	id = r->load_model->info->session_id;
	cudaep__v1__response__free_unpacked(r, NULL);
	return id;
}

static TU_UNUSED bool tu_fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

/* This process's open fds, as /proc/self/fd lists them. */
static TU_UNUSED int tu_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

#endif
