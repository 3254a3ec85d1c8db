/*
 * test_clients.c — many client processes against one cudaepd: 64 connecting
 * at once, and clients killed with SIGKILL in the middle of a conversation,
 * after which the daemon's gauges and open fds are back at their baseline.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct hdaemon d;

static void start(void)
{
	cr_assert_eq(h_daemon_start(&d, NULL), 0, "cudaepd did not start");
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd");
}

TestSuite(clients, .init = start, .fini = stop, .timeout = 120);

/* A child's whole life: connect, region, pings, check its bytes, leave. */
static int child_session(const char *sock, int idx)
{
	cep_client *c = NULL;
	cep_region *r = NULL;
	char name[32];
	uint8_t *p;

	snprintf(name, sizeof(name), "child-%d", idx);
	if (cep_connect(sock, name, &c) != 0)
		return 10;
	if (cep_region_new(c, 4096 * (size_t)(1 + idx % 4), &r) != 0)
		return 11;
	p = cep_region_data(r);
	memset(p, idx, cep_region_size(r));
	for (int i = 0; i < 20; i++)
		if (cep_ping(c) != 0)
			return 12;
	for (size_t i = 0; i < cep_region_size(r); i++)
		if (p[i] != (uint8_t)idx)
			return 13;
	if (cep_region_free(r) != 0)
		return 14;
	cep_close(c);
	return 0;
}

Test(clients, sixty_four_at_once)
{
	enum { N = 64 };
	cep_client *watch = h_connect(&d, "watcher");
	int64_t base_conn = 1; /* the watcher */
	int64_t base_regions = h_gauge(watch, "regions");
	int base_fds = h_settled_fds(&d, watch, 1);
	uint64_t accepted = h_counter(watch, "connections_accepted");
	int go[2];
	pid_t pids[N];

	cr_assert_eq(pipe(go), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0) {
			char b;

			close(go[1]);
			/* Everyone starts together when the pipe closes. */
			if (read(go[0], &b, 1) < 0)
				_exit(20);
			_exit(child_session(d.sock, i));
		}
	}
	close(go[0]);
	close(go[1]);
	for (int i = 0; i < N; i++) {
		int st;

		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "child %d failed with status %#x", i, st);
	}
	cr_expect_eq(h_counter(watch, "connections_accepted"), accepted + N);
	cr_expect_eq(h_wait_gauge(watch, "connections", base_conn), base_conn);
	cr_expect_eq(h_wait_gauge(watch, "regions", base_regions), base_regions);
	{
		int fds = h_wait_fd_count(&d, base_fds);

		cr_expect_eq(fds, base_fds, "daemon has %d fds open, %d before",
			     fds, base_fds);
	}
	cep_close(watch);
}

Test(clients, sigkill_mid_conversation_releases_everything)
{
	cep_client *watch = h_connect(&d, "watcher");
	int64_t base_conn = 1; /* the watcher */
	int64_t base_regions = h_gauge(watch, "regions");
	int64_t base_bytes = h_gauge(watch, "region_bytes");
	int base_fds = h_settled_fds(&d, watch, 1);

	for (int round = 0; round < 5; round++) {
		int ready[2];
		pid_t pid;
		char b;

		cr_assert_eq(pipe(ready), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			cep_client *c = NULL;
			cep_region *r[3];

			close(ready[0]);
			if (cep_connect(d.sock, "victim", &c) != 0)
				_exit(1);
			for (int i = 0; i < 3; i++)
				if (cep_region_new(c, 65536, &r[i]) != 0)
					_exit(2);
			if (write(ready[1], "x", 1) != 1)
				_exit(3);
			/* Keep talking until killed. */
			for (;;)
				cep_ping(c);
		}
		close(ready[1]);
		cr_assert_eq(read(ready[0], &b, 1), 1, "victim did not get ready");
		close(ready[0]);
		cr_expect_eq(h_gauge(watch, "regions"), base_regions + 3);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		cr_expect_eq(h_wait_gauge(watch, "connections", base_conn),
			     base_conn, "round %d", round);
		cr_expect_eq(h_wait_gauge(watch, "regions", base_regions),
			     base_regions, "round %d", round);
		cr_expect_eq(h_gauge(watch, "region_bytes"), base_bytes);
		cr_expect_eq(h_wait_fd_count(&d, base_fds), base_fds,
			     "round %d: daemon fds not back to baseline", round);
	}
	cr_expect_eq(cep_ping(watch), 0);
	cep_close(watch);
}

Test(clients, admin_views_list_connections)
{
	cep_client *a = h_connect(&d, "alpha");
	cep_client *b = h_connect(&d, "beta");
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	cudaep_v1_Response *resp = calloc(1, sizeof(*resp));
	bool seen_a = false, seen_b = false;

	/* Tests run as the daemon's own uid, so they see every client. */
	req.which_body = cudaep_v1_Request_clients_tag;
	cr_assert_eq(cep__call(a, &req, NULL, 0, resp), 0, "%s",
		     cep_last_error());
	cr_assert_eq(resp->which_body, cudaep_v1_Response_clients_tag);
	cr_expect_eq(resp->body.clients.total, resp->body.clients.clients_count);
	for (pb_size_t i = 0; i < resp->body.clients.clients_count; i++) {
		const cudaep_v1_ClientEntry *e = &resp->body.clients.clients[i];

		if (e->client_id == cep_client_id(a)) {
			seen_a = true;
			cr_expect_str_eq(e->name, "alpha");
			cr_expect_eq(e->pid, getpid());
			cr_expect_eq(e->uid, getuid());
		}
		if (e->client_id == cep_client_id(b))
			seen_b = e->pid == getpid();
	}
	cr_expect(seen_a && seen_b);

	cr_assert_eq(h_wait_gauge(a, "connections", 2), 2);
	memset(&req, 0, sizeof(req));
	req.which_body = cudaep_v1_Request_status_tag;
	cr_assert_eq(cep__call(b, &req, NULL, 0, resp), 0, "%s",
		     cep_last_error());
	cr_expect_eq(resp->body.status_reply.pid, d.pid);
	cr_expect_eq(resp->body.status_reply.clients, 2);
	cr_expect_str_eq(resp->body.status_reply.socket_path, d.sock);
	free(resp);
	cep_close(a);
	cep_close(b);
}
