/*
 * test_protocol.c — the wire protocol against a real cudaepd: handshake,
 * version mismatch, and every kind of bad packet (garbage, truncated,
 * oversized, fds where none belong and none where one does), each answered
 * with an error while the daemon keeps serving.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>
#include <pb_encode.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct hdaemon d;
static cudaep_v1_Response resp;

static void start(void)
{
	cr_assert_eq(h_daemon_start(&d, NULL), 0, "cudaepd did not start");
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd");
}

TestSuite(protocol, .init = start, .fini = stop, .timeout = 60);

Test(protocol, hello_reports_daemon)
{
	cep_client *c = h_connect(&d, "hello-test");

	cr_expect_gt(cep_client_id(c), 0);
	cr_expect_str_eq(cep_client_backend(c), h_backend());
	cr_expect_eq(cep_ping(c), 0, "%s", cep_last_error());
	cep_close(c);
}

Test(protocol, version_mismatch_is_refused_and_closed)
{
	int fd = h_raw_connect(&d);

	cr_assert_geq(fd, 0);
	cr_assert_eq(h_raw_hello(fd, CEP_PROTOCOL_VERSION + 6, &resp), 0);
	cr_expect_eq(resp.status.code, CEP_EVERSION);
	cr_expect_not_null(strstr(resp.status.message, "7"),
			   "message should name the client's version: %s",
			   resp.status.message);
	cr_expect_not_null(strstr(resp.status.message, "1"),
			   "message should name the daemon's version: %s",
			   resp.status.message);
	/* The daemon closes the connection after refusing. */
	cr_expect_eq(h_raw_recv(fd, &resp), 1);
	close(fd);
}

Test(protocol, request_before_hello_is_refused)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int fd = h_raw_connect(&d);

	req.id = 9;
	req.which_body = cudaep_v1_Request_ping_tag;
	cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, 9);
	cr_expect_eq(resp.status.code, CEP_EPROTO);
	close(fd);
}

/* After each bad packet the same connection still answers a ping. */
static void expect_ping(int fd, uint64_t id)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	req.id = id;
	req.which_body = cudaep_v1_Request_ping_tag;
	req.body.ping.payload = id * 3;
	cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, id);
	cr_expect_eq(resp.status.code, 0, "%s", resp.status.message);
	cr_expect_eq(resp.which_body, cudaep_v1_Response_ping_tag);
	cr_expect_eq(resp.body.ping.payload, id * 3);
}

static int hello_fd(void)
{
	int fd = h_raw_connect(&d);

	cr_assert_geq(fd, 0);
	cr_assert_eq(h_raw_hello(fd, CEP_PROTOCOL_VERSION, &resp), 0);
	cr_assert_eq(resp.status.code, 0, "%s", resp.status.message);
	return fd;
}

Test(protocol, garbage_packet)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12,
				       0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
	int fd = hello_fd();

	cr_assert_eq(h_raw_send(fd, junk, sizeof(junk), NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.status.code, CEP_EBADMSG, "got %d: %s",
		     resp.status.code, resp.status.message);
	expect_ping(fd, 2);
	close(fd);
}

Test(protocol, truncated_request)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	uint8_t buf[256];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof(buf));
	int fd = hello_fd();

	req.id = 77;
	req.which_body = cudaep_v1_Request_register_region_tag;
	req.body.register_region.size = 4096;
	snprintf(req.body.register_region.name,
		 sizeof(req.body.register_region.name), "a-region-name");
	cr_assert(pb_encode(&os, cudaep_v1_Request_fields, &req));
	cr_assert_gt(os.bytes_written, 6);
	cr_assert_eq(h_raw_send(fd, buf, os.bytes_written - 5, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.status.code, CEP_EBADMSG, "got %d: %s",
		     resp.status.code, resp.status.message);
	expect_ping(fd, 3);
	close(fd);
}

Test(protocol, empty_body)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int fd = hello_fd();

	req.id = 5;
	cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, 5);
	cr_expect_eq(resp.status.code, CEP_EBADMSG);
	expect_ping(fd, 6);
	close(fd);
}

Test(protocol, oversized_packet)
{
	size_t len = CEP_MAX_PACKET + 4096;
	uint8_t *big = calloc(1, len);
	int fd = hello_fd();
	int sndbuf = (int)len * 2;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	cr_assert_eq(h_raw_send(fd, big, len, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.status.code, CEP_EMSGSIZE, "got %d: %s",
		     resp.status.code, resp.status.message);
	expect_ping(fd, 4);
	free(big);
	close(fd);
}

Test(protocol, fd_where_none_belongs_is_closed)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int fd = hello_fd();
	int before = h_settled_fds_raw(&d, fd, 1);
	int mfd = h_memfd(4096, true);

	req.id = 11;
	req.which_body = cudaep_v1_Request_ping_tag;
	cr_assert_eq(h_raw_send_req(fd, &req, &mfd, 1), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, 11);
	cr_expect_eq(resp.status.code, CEP_EBADF, "got %d: %s",
		     resp.status.code, resp.status.message);
	cr_expect_eq(h_daemon_fd_count(&d), before,
		     "the daemon kept the stray fd");
	/* Garbage with an fd attached: the fd is closed too. */
	cr_assert_eq(h_raw_send(fd, "\xff\xff", 2, &mfd, 1), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_lt(resp.status.code, 0);
	cr_expect_eq(h_daemon_fd_count(&d), before,
		     "the daemon kept an fd that came with garbage");
	expect_ping(fd, 12);
	close(mfd);
	close(fd);
}

Test(protocol, missing_fd)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int fd = hello_fd();

	req.id = 13;
	req.which_body = cudaep_v1_Request_register_region_tag;
	req.body.register_region.size = 4096;
	cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_expect_eq(resp.id, 13);
	cr_expect_eq(resp.status.code, CEP_EBADF, "got %d: %s",
		     resp.status.code, resp.status.message);
	cr_expect_not_null(strstr(resp.status.message, "fd"), "%s",
			   resp.status.message);
	expect_ping(fd, 14);
	close(fd);
}

Test(protocol, bad_peer_does_not_disturb_others)
{
	cep_client *good = h_connect(&d, "bystander");
	int fd = hello_fd();

	for (int i = 0; i < 50; i++) {
		uint8_t junk[64];

		for (size_t j = 0; j < sizeof(junk); j++)
			junk[j] = (uint8_t)(i * 31 + j * 7);
		cr_assert_eq(h_raw_send(fd, junk, sizeof(junk), NULL, 0), 0);
		cr_assert_eq(h_raw_recv(fd, &resp), 0);
		cr_assert_eq(cep_ping(good), 0, "%s", cep_last_error());
	}
	close(fd);
	cr_expect_eq(cep_ping(good), 0, "%s", cep_last_error());
	cep_close(good);
}

Test(protocol, a_bad_model_is_refused_and_its_fds_closed)
{
	cep_client *c = h_connect(&d, "loader");
	cep_session *s = NULL;
	char path[128];
	FILE *f;
	int before = h_settled_fds(&d, c, 1);
	int rc;

	snprintf(path, sizeof(path), "%s/model.onnx", d.dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("not really a model", f);
	fclose(f);
	rc = cep_session_load(c, path, NULL, &s);
	cr_expect_lt(rc, 0);
	cr_expect_null(s);
	cr_expect_gt(strlen(cep_last_error()), 0);
	/* Polled: the count is read from outside while the daemon runs. */
	cr_expect_eq(h_wait_fd_count(&d, before), before,
		     "the daemon kept the model or directory fd");
	cep_close(c);
}
