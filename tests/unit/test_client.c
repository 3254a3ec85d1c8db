/*
 * test_client.c — libcudaep-client's connection against a scripted fake
 * daemon (fakedaemon.c): hello and version checks, connect failures, the
 * daemon's error statuses and messages, request id correlation, a daemon
 * that closes or misbehaves on the wire (also one the test plays itself
 * on a socketpair), and calls from several threads.
 */
#include "tests/unit/fakedaemon.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

TestSuite(client, .timeout = 30);

static struct fake_daemon fake;

static void start(fake_handler h, void *arg)
{
	cr_assert_eq(fake_start(&fake, h, arg), 0, "fake_start: %s",
		     strerror(errno));
}

static cep_client *connect_ok(void)
{
	cep_client *c = NULL;
	int rc = cep_connect(fake.path, "unit", &c);

	cr_assert_eq(rc, 0, "cep_connect: %s: %s", cep_err_name(rc),
		     cep_last_error());
	cr_assert_not_null(c);
	return c;
}

/* ------------------------------------------------------------------ hello */

static uint32_t seen_version;
static char seen_name[CEP_MAX_CLIENT_NAME];

static enum fake_action record_hello(struct fake_daemon *f,
				     const cudaep_v1_Request *req, int *fds,
				     int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_hello_tag) {
		seen_version = req->body.hello.protocol_version;
		snprintf(seen_name, sizeof(seen_name), "%s",
			 req->body.hello.client_name);
	}
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, hello_sends_version_and_name)
{
	cep_client *c;

	start(record_hello, NULL);
	c = connect_ok();
	cr_expect_eq(seen_version, CEP_PROTOCOL_VERSION);
	cr_expect_str_eq(seen_name, "unit");
	cr_expect_eq(cep_client_id(c), 7);
	cr_expect_str_eq(cep_client_backend(c), "host");
	cr_expect_str_eq(cep_client_device(c), "fake cpu");
	cr_expect_geq(cep__client_fd(c), 0);
	cep_close(c);
	fake_stop(&fake);
}

Test(client, hello_defaults_to_program_name)
{
	cep_client *c = NULL;

	start(record_hello, NULL);
	cr_assert_eq(cep_connect(fake.path, NULL, &c), 0, "%s",
		     cep_last_error());
	cr_expect_str_eq(seen_name, program_invocation_short_name);
	cep_close(c);
	fake_stop(&fake);
}

static enum fake_action refuse_version(struct fake_daemon *f,
				       const cudaep_v1_Request *req, int *fds,
				       int nfds, cudaep_v1_Response *resp)
{
	fake_error(resp, CEP_EVERSION, "cudaepd speaks protocol 2, not 1");
	return FAKE_REPLY;
}

Test(client, version_refused_by_daemon)
{
	cep_client *c = (cep_client *)&fake; /* must be reset to NULL */

	start(refuse_version, NULL);
	cr_expect_eq(cep_connect(fake.path, "old", &c), CEP_EVERSION);
	cr_expect_null(c);
	cr_expect_str_eq(cep_last_error(), "cudaepd speaks protocol 2, not 1");
	fake_stop(&fake);
}

static enum fake_action newer_version(struct fake_daemon *f,
				      const cudaep_v1_Request *req, int *fds,
				      int nfds, cudaep_v1_Response *resp)
{
	enum fake_action a = fake_default(f, req, fds, nfds, resp);

	resp->body.hello.protocol_version = 99;
	return a;
}

Test(client, version_mismatch_in_reply)
{
	cep_client *c = NULL;

	start(newer_version, NULL);
	cr_expect_eq(cep_connect(fake.path, "x", &c), CEP_EVERSION);
	cr_expect_null(c);
	cr_expect_not_null(strstr(cep_last_error(), "99"), "%s",
			   cep_last_error());
	fake_stop(&fake);
}

/* ------------------------------------------------------- connect failures */

Test(client, no_daemon_names_the_path)
{
	char dir[] = "/tmp/cep-nodaemon-XXXXXX";
	char path[128], want[256];
	cep_client *c = NULL;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cudaep.sock", dir);
	cr_expect_eq(cep_connect(path, "x", &c), CEP_ENOENT);
	cr_expect_null(c);
	snprintf(want, sizeof(want),
		 "cannot connect to cudaepd at %s: No such file or directory",
		 path);
	cr_expect_str_eq(cep_last_error(), want);
	rmdir(dir);
}

Test(client, nobody_listening_is_refused)
{
	char dir[] = "/tmp/cep-refused-XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	cep_client *c = NULL;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/cudaep.sock", dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* Bound but not listening: what a dead daemon's socket file gives. */
	cr_expect_eq(cep_connect(sa.sun_path, "x", &c), CEP_ECONNREFUSED);
	cr_expect_not_null(strstr(cep_last_error(), sa.sun_path));
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
}

Test(client, path_too_long)
{
	char path[200];
	cep_client *c = NULL;

	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	cr_expect_eq(cep_connect(path, "x", &c), CEP_ENAMETOOLONG);
	cr_expect_eq(cep_connect(NULL, "x", NULL), CEP_EINVAL);
}

/* ---------------------------------------------------------- error status */

static int ping_code;
static const char *ping_message;

static enum fake_action ping_fails(struct fake_daemon *f,
				   const cudaep_v1_Request *req, int *fds,
				   int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_ping_tag && ping_code != 0) {
		fake_error(resp, ping_code, ping_message);
		ping_code = 0; /* once */
		return FAKE_REPLY;
	}
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, error_status_returns_code_and_message)
{
	cep_client *c;

	ping_code = CEP_ELIMIT;
	ping_message = "client 7 holds 3 regions, the limit is 2";
	start(ping_fails, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_ELIMIT);
	cr_expect_str_eq(cep_last_error(),
			 "client 7 holds 3 regions, the limit is 2");
	/* An error answer leaves the connection usable. */
	cr_expect_eq(cep_ping(c), 0, "%s", cep_last_error());
	cep_close(c);
	fake_stop(&fake);
}

Test(client, error_status_without_message)
{
	cep_client *c;

	ping_code = CEP_EDEVMEM;
	ping_message = "";
	start(ping_fails, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EDEVMEM);
	cr_expect_str_eq(cep_last_error(), cep_strerror(CEP_EDEVMEM));
	cep_close(c);
	fake_stop(&fake);
}

Test(client, positive_status_code_is_protocol_error)
{
	cep_client *c;

	ping_code = 5;
	ping_message = "five";
	start(ping_fails, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cep_close(c);
	fake_stop(&fake);
}

/* --------------------------------------------------------- id correlation */

#define N_IDS 5
static uint64_t ids[N_IDS + 1];
static int n_ids;

static enum fake_action record_ids(struct fake_daemon *f,
				   const cudaep_v1_Request *req, int *fds,
				   int nfds, cudaep_v1_Response *resp)
{
	if (n_ids <= N_IDS)
		ids[n_ids++] = req->id;
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, request_ids_increase)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	cudaep_v1_Response *resp = calloc(1, sizeof(*resp));
	cep_client *c;

	start(record_ids, NULL);
	c = connect_ok();
	for (int i = 0; i < N_IDS - 1; i++)
		cr_assert_eq(cep_ping(c), 0, "%s", cep_last_error());
	/* cep__call assigns the id whatever the caller left there. */
	req.id = 12345;
	req.which_body = cudaep_v1_Request_ping_tag;
	req.body.ping.payload = 77;
	cr_assert_eq(cep__call(c, &req, NULL, 0, resp), 0, "%s",
		     cep_last_error());
	cr_expect_eq(resp->which_body, cudaep_v1_Response_ping_tag);
	cr_expect_eq(resp->body.ping.payload, 77);
	cr_expect_eq(resp->id, req.id);
	cr_assert_eq(n_ids, N_IDS + 1); /* hello and the five */
	cr_expect_neq(ids[0], 0);
	for (int i = 1; i <= N_IDS; i++)
		cr_expect_gt(ids[i], ids[i - 1], "id %d: %llu after %llu", i,
			     (unsigned long long)ids[i],
			     (unsigned long long)ids[i - 1]);
	cr_expect_eq(req.id, ids[N_IDS]);
	cep_close(c);
	free(resp);
	fake_stop(&fake);
}

static enum fake_action wrong_id(struct fake_daemon *f,
				 const cudaep_v1_Request *req, int *fds,
				 int nfds, cudaep_v1_Response *resp)
{
	enum fake_action a = fake_default(f, req, fds, nfds, resp);

	if (req->which_body == cudaep_v1_Request_ping_tag)
		resp->id = req->id + 1;
	return a;
}

Test(client, response_with_other_id_is_protocol_error)
{
	cep_client *c;

	start(wrong_id, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cr_expect_not_null(strstr(cep_last_error(), "id"), "%s",
			   cep_last_error());
	cep_close(c);
	fake_stop(&fake);
}

static enum fake_action id_zero(struct fake_daemon *f,
				const cudaep_v1_Request *req, int *fds,
				int nfds, cudaep_v1_Response *resp)
{
	enum fake_action a = fake_default(f, req, fds, nfds, resp);

	if (req->which_body == cudaep_v1_Request_ping_tag) {
		resp->id = 0;
		if (f->arg != NULL)
			fake_error(resp, CEP_EBADMSG, "cannot decode request");
	}
	return a;
}

Test(client, id_zero_error_belongs_to_call_in_flight)
{
	cep_client *c;

	start(id_zero, "with error");
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EBADMSG);
	cr_expect_str_eq(cep_last_error(), "cannot decode request");
	cep_close(c);
	fake_stop(&fake);
}

Test(client, id_zero_success_is_protocol_error)
{
	cep_client *c;

	start(id_zero, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cep_close(c);
	fake_stop(&fake);
}

static enum fake_action wrong_body(struct fake_daemon *f,
				   const cudaep_v1_Request *req, int *fds,
				   int nfds, cudaep_v1_Response *resp)
{
	enum fake_action a = fake_default(f, req, fds, nfds, resp);

	if (req->which_body == cudaep_v1_Request_ping_tag)
		resp->which_body = cudaep_v1_Response_unload_tag;
	return a;
}

Test(client, reply_with_other_body_is_protocol_error)
{
	cep_client *c;

	start(wrong_body, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cep_close(c);
	fake_stop(&fake);
}

/* --------------------------------------------------------- broken wire */

static enum fake_action close_on_ping(struct fake_daemon *f,
				      const cudaep_v1_Request *req, int *fds,
				      int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_ping_tag)
		return FAKE_CLOSE;
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, daemon_closing_is_connection_reset)
{
	cep_client *c;

	start(close_on_ping, NULL);
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_ECONNRESET);
	cr_expect_str_eq(cep_last_error(), "cudaepd closed the connection");
	/* And stays so: the send now meets a closed peer. */
	cr_expect_eq(cep_ping(c), CEP_ECONNRESET);
	cr_expect_str_eq(cep_last_error(), "cudaepd closed the connection");
	cep_close(c);
	fake_stop(&fake);
}

static enum fake_action raw_on_ping(struct fake_daemon *f,
				    const cudaep_v1_Request *req, int *fds,
				    int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_ping_tag)
		return FAKE_RAW;
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, oversized_response_is_protocol_error)
{
	cep_client *c;

	start(raw_on_ping, NULL);
	/* Valid padding would not matter: the size alone is refused. */
	fake.raw_len = CEP_MAX_PACKET + 1;
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cr_expect_not_null(strstr(cep_last_error(), "65536"), "%s",
			   cep_last_error());
	cep_close(c);
	fake_stop(&fake);
}

Test(client, undecodable_response_is_protocol_error)
{
	cep_client *c;

	start(raw_on_ping, NULL);
	memset(fake.raw, 0xff, 16);
	fake.raw_len = 16;
	c = connect_ok();
	cr_expect_eq(cep_ping(c), CEP_EPROTO);
	cr_expect_not_null(strstr(cep_last_error(), "decode"), "%s",
			   cep_last_error());
	cep_close(c);
	fake_stop(&fake);
}

static int stray_fd = -1;

static enum fake_action ping_with_fd(struct fake_daemon *f,
				     const cudaep_v1_Request *req, int *fds,
				     int nfds, cudaep_v1_Response *resp)
{
	if (req->which_body == cudaep_v1_Request_ping_tag) {
		f->reply_fds[0] = stray_fd;
		f->n_reply_fds = 1;
	}
	return fake_default(f, req, fds, nfds, resp);
}

Test(client, fds_in_a_response_are_closed)
{
	cep_client *c;
	int pipefd[2];
	int before;

	cr_assert_eq(pipe(pipefd), 0);
	stray_fd = pipefd[0];
	start(ping_with_fd, NULL);
	c = connect_ok();
	before = fake_count_fds();
	cr_expect_eq(cep_ping(c), 0, "%s", cep_last_error());
	cr_expect_eq(fake_count_fds(), before, "a received fd leaked");
	cep_close(c);
	fake_stop(&fake);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* A socketpair whose far end the test plays the daemon on: the client on
 * sv[0] has said hello (answered from here), sv[1] is the daemon's. */
static cep_client *pair_connect(int sv[2])
{
	cudaep_v1_Response hr = cudaep_v1_Response_init_zero;
	uint8_t buf[256];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof(buf));
	cep_client *c = NULL;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	hr.id = 1;
	hr.which_body = cudaep_v1_Response_hello_tag;
	hr.body.hello.protocol_version = CEP_PROTOCOL_VERSION;
	cr_assert(pb_encode(&os, cudaep_v1_Response_fields, &hr));
	cr_assert_eq(send(sv[1], buf, os.bytes_written, 0), (ssize_t)os.bytes_written);
	cr_assert_eq(cep__connect_fd(sv[0], "pair", &c), 0, "%s", cep_last_error());
	return c;
}

/* Sends an empty packet with /dev/null attached on sock. */
static void send_empty_with_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)"", .iov_len = 0};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	memset(&ctl, 0, sizeof(ctl));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	cr_assert_eq(sendmsg(sock, &msg, 0), 0);
	close(fd);
}

/* Found by fuzz_reply: why a closed connection went was read, but the fds
 * of an empty packet were left open. */
Test(client, fds_of_an_empty_packet_after_a_close_are_closed)
{
	int sv[2], before;
	cep_client *c = pair_connect(sv);

	send_empty_with_fd(sv[1]);
	close(sv[1]);
	before = fake_count_fds();
	cr_expect_eq(cep_ping(c), CEP_ECONNRESET);
	cr_expect_eq(fake_count_fds(), before, "a received fd leaked");
	cep_close(c);
}

Test(client, fds_of_an_empty_packet_are_closed)
{
	int sv[2], before;
	cep_client *c = pair_connect(sv);

	send_empty_with_fd(sv[1]);
	before = fake_count_fds();
	cr_expect_eq(cep_ping(c), CEP_ECONNRESET);
	cr_expect_eq(fake_count_fds(), before, "a received fd leaked");
	close(sv[1]);
	cep_close(c);
}

/* ------------------------------------------------------------- threads */

#define N_THREADS 4
#define N_PINGS 200

static void *pinger(void *arg)
{
	cep_client *c = arg;

	for (int i = 0; i < N_PINGS; i++)
		if (cep_ping(c) != 0)
			return (void *)cep_last_error();
	return NULL;
}

Test(client, calls_from_threads_are_serialized)
{
	pthread_t t[N_THREADS];
	cep_client *c;

	start(NULL, NULL);
	c = connect_ok();
	for (int i = 0; i < N_THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, pinger, c), 0);
	for (int i = 0; i < N_THREADS; i++) {
		void *err;

		pthread_join(t[i], &err);
		cr_expect_null(err, "thread %d: %s", i,
			       err ? (const char *)err : "");
	}
	cr_expect_eq(fake.requests, 1 + N_THREADS * N_PINGS);
	cep_close(c);
	fake_stop(&fake);
}

/* ---------------------------------------------------------- raw calls */

static const cudaep_v1_TensorInfo one_input[] = {
	{.name = "x", .dtype = cudaep_v1_DataType_DT_FLOAT, .shape_count = 1,
	 .shape = {{.which_kind = cudaep_v1_Dim_value_tag, .kind.value = 4}}},
};

static enum fake_action session_info(struct fake_daemon *f,
				     const cudaep_v1_Request *req, int *fds,
				     int nfds, cudaep_v1_Response *resp)
{
	cudaep_v1_SessionInfoReply *info = &resp->body.session_info;

	if (req->which_body != cudaep_v1_Request_session_info_tag)
		return fake_default(f, req, fds, nfds, resp);
	resp->which_body = cudaep_v1_Response_session_info_tag;
	info->session_id = req->body.session_info.session_id;
	snprintf(info->name, sizeof(info->name), "m");
	fake_session_info(f, info, one_input, 1, one_input, 1);
	return FAKE_REPLY;
}

Test(client, raw_call_ignores_callbacks_left_in_response)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	cudaep_v1_Response *resp = malloc(sizeof(*resp));
	cep_client *c;

	/* Garbage where the callback slots are: cep__call must not use it. */
	memset(resp, 0xa5, sizeof(*resp));
	start(session_info, NULL);
	c = connect_ok();
	req.which_body = cudaep_v1_Request_session_info_tag;
	req.body.session_info.session_id = 9;
	cr_assert_eq(cep__call(c, &req, NULL, 0, resp), 0, "%s",
		     cep_last_error());
	cr_expect_eq(resp->which_body, cudaep_v1_Response_session_info_tag);
	cr_expect_eq(resp->body.session_info.session_id, 9);
	cr_expect_str_eq(resp->body.session_info.name, "m");
	cep_close(c);
	free(resp);
	fake_stop(&fake);
}

Test(client, raw_call_checks_its_fd_count)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	cudaep_v1_Response *resp = calloc(1, sizeof(*resp));
	int fds[CEP_MAX_FDS + 1] = {0};
	cep_client *c;

	start(NULL, NULL);
	c = connect_ok();
	req.which_body = cudaep_v1_Request_ping_tag;
	cr_expect_eq(cep__call(c, &req, fds, CEP_MAX_FDS + 1, resp), CEP_EINVAL);
	cr_expect_eq(cep__call(c, &req, NULL, 1, resp), CEP_EINVAL);
	cr_expect_eq(cep__call(NULL, &req, NULL, 0, resp), CEP_EINVAL);
	cr_expect_eq(fake.requests, 1, "nothing but the hello was sent");
	cep_close(c);
	free(resp);
	fake_stop(&fake);
}

Test(client, null_handles_are_harmless)
{
	cep_close(NULL);
	cr_expect_eq(cep_region_free(NULL), 0);
	cr_expect_eq(cep_session_free(NULL), 0);
	cr_expect_eq(cep_client_id(NULL), 0);
	cr_expect_str_eq(cep_client_backend(NULL), "");
	cr_expect_eq(cep__client_fd(NULL), -1);
	cr_expect_null(cep_region_data(NULL));
	cr_expect_eq(cep_region_size(NULL), 0);
	cr_expect_eq(cep_session_input_count(NULL), 0);
	cr_expect_null(cep_session_output(NULL, 0));
	cr_expect_eq(cep_ping(NULL), CEP_EINVAL);
}
