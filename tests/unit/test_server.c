/*
 * test_server.c — cudaepd's socket side in-process: a server listening on
 * a temporary path with its loop on a thread, and raw SOCK_SEQPACKET
 * clients on this one. Covers the framing rules (oversized packets, too
 * many fds), a refused Hello closing the connection, max_connections,
 * backpressure on a client that does not read, the release of everything
 * a killed client owned, stale and live sockets at the path, and the
 * SIGTERM shutdown that removes the socket and closes every handle.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "tests/unit/daemon_util.h"

struct running {
	uv_loop_t loop;
	struct server *s;
	pthread_t thread;
	char path[108];
};

static char tmpdir[] = "/tmp/cep-server-XXXXXX";

static void setup(void)
{
	log_level_set(LOG_CRIT);
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 60);

static void *loop_main(void *arg)
{
	struct running *r = arg;

	uv_run(&r->loop, UV_RUN_DEFAULT);
	return NULL;
}

static void cfg_default(struct config *cfg, const char *name)
{
	config_init(cfg);
	snprintf(cfg->socket, sizeof(cfg->socket), "%s/%s", tmpdir, name);
}

static void start(struct running *r, const struct config *cfg)
{
	cr_assert_eq(uv_loop_init(&r->loop), 0);
	cr_assert_eq(server_new(cfg, &r->s), 0);
	cr_assert_eq(server_listen(r->s, &r->loop), 0);
	snprintf(r->path, sizeof(r->path), "%s", r->s->socket_path);
	cr_assert_eq(pthread_create(&r->thread, NULL, loop_main, r), 0);
}

/* Waits for the loop to end and checks that it left nothing behind. */
static void finish(struct running *r)
{
	struct stat sb;

	cr_assert_eq(pthread_join(r->thread, NULL), 0);
	cr_assert_eq(r->s->clients.n, 0);
	cr_assert_eq(r->s->stats.gauges[STATS_GAUGE_REGIONS].current, 0);
	server_free(r->s);
	cr_assert_eq(uv_loop_close(&r->loop), 0, "handles left open");
	cr_assert_neq(stat(r->path, &sb), 0, "socket file left behind");
}

/* SIGTERM, as systemd would send it; the loop must end on its own. */
static void stop(struct running *r)
{
	cr_assert_eq(raise(SIGTERM), 0);
	finish(r);
}

/* ------------------------------------------------------------ raw client */

static int dial(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0,
		     "connect %s: %s", path, strerror(errno));
	return fd;
}

static ssize_t send_fds(int sock, const void *buf, size_t len, const int *fds,
			int nfds, int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
}

static void send_req(int sock, Cudaep__V1__Request *q, const int *fds,
		     int nfds)
{
	uint8_t buf[4096];
	size_t len = cudaep__v1__request__pack(q, buf);

	cr_assert_eq(send_fds(sock, buf, len, fds, nfds, 0), (ssize_t)len,
		     "send: %s", strerror(errno));
}

/* The next response, or NULL when the daemon closed the connection. */
static Cudaep__V1__Response *recv_resp(int sock)
{
	static uint8_t buf[CEP_MAX_PACKET + 1];
	Cudaep__V1__Response *r;
	ssize_t n = recv(sock, buf, sizeof(buf), 0);

	cr_assert(n >= 0, "recv: %s", strerror(errno));
	if (n == 0)
		return NULL;
	r = cudaep__v1__response__unpack(NULL, (size_t)n, buf);
	cr_assert_not_null(r);
	cr_assert_not_null(r->status);
	return r;
}

static Cudaep__V1__Response *call(int sock, Cudaep__V1__Request *q,
				  const int *fds, int nfds)
{
	Cudaep__V1__Response *r;

	q->id = tu_next_id++;
	send_req(sock, q, fds, nfds);
	r = recv_resp(sock);
	cr_assert_not_null(r, "connection closed");
	cr_assert_eq(r->id, q->id);
	return r;
}

static void hello_v(int sock, uint32_t version, Cudaep__V1__Response **out)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Hello h = CUDAEP__V1__HELLO__INIT;

	h.protocol_version = version;
	h.client_name = (char *)"sock";
	q.body_case = CUDAEP__V1__REQUEST__BODY_HELLO;
	q.hello = &h;
	*out = call(sock, &q, NULL, 0);
}

static void hello(int sock)
{
	Cudaep__V1__Response *r;

	hello_v(sock, CEP_PROTOCOL_VERSION, &r);
	tu_expect_ok(r);
	cudaep__v1__response__free_unpacked(r, NULL);
}

static Cudaep__V1__Request ping_req(Cudaep__V1__Ping *p, uint64_t payload)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;

	cudaep__v1__ping__init(p);
	p->payload = payload;
	q.body_case = CUDAEP__V1__REQUEST__BODY_PING;
	q.ping = p;
	return q;
}

static void ping_ok(int sock)
{
	Cudaep__V1__Ping p;
	Cudaep__V1__Request q = ping_req(&p, 31337);
	Cudaep__V1__Response *r = call(sock, &q, NULL, 0);

	tu_expect_ok(r);
	cr_assert_eq(r->ping->payload, 31337);
	cudaep__v1__response__free_unpacked(r, NULL);
}

static Cudaep__V1__Response *register_sock(int sock, uint64_t size, int fd)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__RegisterRegion m = CUDAEP__V1__REGISTER_REGION__INIT;

	m.size = size;
	q.body_case = CUDAEP__V1__REQUEST__BODY_REGISTER_REGION;
	q.register_region = &m;
	return call(sock, &q, &fd, 1);
}

/* A gauge or counter, asked over the socket. */
static int64_t stat_of(int sock, const char *name)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__StatsRequest sr = CUDAEP__V1__STATS_REQUEST__INIT;
	Cudaep__V1__Response *r;
	int64_t v = -1;
	size_t i;

	q.body_case = CUDAEP__V1__REQUEST__BODY_STATS;
	q.stats = &sr;
	r = call(sock, &q, NULL, 0);
	tu_expect_ok(r);
	for (i = 0; i < r->stats->n_counters; i++)
		if (strcmp(r->stats->counters[i]->name, name) == 0)
			v = (int64_t)r->stats->counters[i]->value;
	for (i = 0; i < r->stats->n_gauges; i++)
		if (strcmp(r->stats->gauges[i]->name, name) == 0)
			v = r->stats->gauges[i]->current;
	cudaep__v1__response__free_unpacked(r, NULL);
	cr_assert_neq(v, -1, "no stat %s", name);
	return v;
}

/* ------------------------------------------------------------------ tests */

Test(server, serves_and_stops_on_sigterm)
{
	struct running r;
	struct config cfg;
	struct stat sb;
	int sock;

	cfg_default(&cfg, "d.sock");
	cfg.socket_mode = 0600;
	start(&r, &cfg);
	cr_assert_eq(stat(r.path, &sb), 0);
	cr_assert(S_ISSOCK(sb.st_mode));
	cr_assert_eq(sb.st_mode & 0777, 0600);
	sock = dial(r.path);
	hello(sock);
	ping_ok(sock);
	cr_assert_eq(stat_of(sock, "connections"), 1);
	stop(&r);
	/* The daemon closed our connection on its way out. */
	cr_assert_null(recv_resp(sock));
	close(sock);
}

Test(server, creates_the_socket_directory)
{
	struct running r;
	struct config cfg;
	struct stat sb;
	char dir[128];

	cfg_default(&cfg, "sub/d.sock");
	start(&r, &cfg);
	snprintf(dir, sizeof(dir), "%s/sub", tmpdir);
	cr_assert_eq(stat(dir, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, geteuid() == 0 ? 0755 : 0700);
	stop(&r);
}

Test(server, oversized_packet_and_too_many_fds)
{
	static uint8_t big[CEP_MAX_PACKET + 100];
	Cudaep__V1__Response *resp;
	Cudaep__V1__Request q;
	Cudaep__V1__Ping p;
	struct running r;
	struct config cfg;
	uint8_t buf[64];
	int sock, fds[3], i;
	size_t len;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);

	fds[0] = tu_memfd(4096, true);
	cr_assert_eq(send_fds(sock, big, sizeof(big), fds, 1, 0),
		     (ssize_t)sizeof(big), "%s", strerror(errno));
	resp = recv_resp(sock);
	cr_assert_eq(resp->id, 0);
	tu_expect_error(resp, CEP_EMSGSIZE, "limited to 65536 bytes");
	ping_ok(sock);

	q = ping_req(&p, 5);
	q.id = 4040;
	len = cudaep__v1__request__pack(&q, buf);
	for (i = 0; i < 3; i++)
		fds[i] = tu_memfd(4096, true);
	cr_assert_eq(send_fds(sock, buf, len, fds, 3, 0), (ssize_t)len);
	resp = recv_resp(sock);
	cr_assert_eq(resp->id, 4040);
	tu_expect_error(resp, CEP_EBADMSG, "more than 2 fds");
	ping_ok(sock);
	for (i = 0; i < 3; i++)
		close(fds[i]);

	cr_assert_eq(stat_of(sock, "oversized_packets"), 1);
	/* Every fd that reached the daemon has been closed there again. */
	cr_assert_eq(stat_of(sock, "fds_received"), stat_of(sock, "fds_closed"));
	cr_assert_geq(stat_of(sock, "fds_received"), 3);
	close(sock);
	stop(&r);
}

Test(server, refused_hello_closes_after_the_reply)
{
	Cudaep__V1__Response *resp;
	struct running r;
	struct config cfg;
	int sock, other;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	other = dial(r.path);
	hello(other);
	sock = dial(r.path);
	hello_v(sock, 99, &resp);
	tu_expect_error(resp, CEP_EVERSION,
			"client speaks protocol 99, cudaepd speaks 1");
	cr_assert_null(recv_resp(sock), "connection still open");
	close(sock);

	/* Requests pipelined behind the refused Hello are dropped, and the
	 * refusal still arrives first, not a connection reset. */
	sock = dial(r.path);
	{
		Cudaep__V1__Request hq = CUDAEP__V1__REQUEST__INIT, pq;
		Cudaep__V1__Hello h = CUDAEP__V1__HELLO__INIT;
		Cudaep__V1__Ping p;
		int i;

		h.protocol_version = 99;
		hq.id = 1;
		hq.body_case = CUDAEP__V1__REQUEST__BODY_HELLO;
		hq.hello = &h;
		send_req(sock, &hq, NULL, 0);
		for (i = 0; i < 20; i++) {
			uint8_t buf[64];
			size_t len;

			pq = ping_req(&p, (uint64_t)i);
			pq.id = 2 + (uint64_t)i;
			len = cudaep__v1__request__pack(&pq, buf);
			/* Once the daemon has shut its side, sends fail. */
			if (send_fds(sock, buf, len, NULL, 0, 0) < 0)
				break;
		}
	}
	resp = recv_resp(sock);
	cr_assert_eq(resp->id, 1);
	tu_expect_error(resp, CEP_EVERSION, "protocol 99");
	cr_assert_null(recv_resp(sock), "connection still open");
	close(sock);
	cr_assert_eq(stat_of(other, "hello_refused"), 2);
	ping_ok(other);
	close(other);
	stop(&r);
}

Test(server, max_connections)
{
	Cudaep__V1__Response *resp;
	struct running r;
	struct config cfg;
	int a, b;

	cfg_default(&cfg, "d.sock");
	cfg.max_connections = 1;
	start(&r, &cfg);
	a = dial(r.path);
	hello(a);
	b = dial(r.path);
	resp = recv_resp(b);
	cr_assert_not_null(resp);
	cr_assert_eq(resp->id, 0);
	tu_expect_error(resp, CEP_ELIMIT, "max_connections = 1");
	cr_assert_null(recv_resp(b));
	close(b);
	ping_ok(a);
	cr_assert_eq(stat_of(a, "connections_refused"), 1);
	close(a);
	stop(&r);
}

/*
 * Sends pings numbered from first without reading until the daemon has
 * more than CONN_QUEUE_HIGH responses queued for sock and has stopped
 * reading it. Returns how many were sent.
 */
static uint64_t flood(struct running *r, int sock, uint64_t first)
{
	int64_t *queued = &r->s->stats.gauges[STATS_GAUGE_SEND_QUEUE].current;
	Cudaep__V1__Request q;
	Cudaep__V1__Ping p;
	uint64_t sent = 0;
	uint8_t buf[64];
	size_t len;

	while (__atomic_load_n(queued, __ATOMIC_RELAXED) <= CONN_QUEUE_HIGH) {
		q = ping_req(&p, first + sent);
		q.id = first + sent;
		len = cudaep__v1__request__pack(&q, buf);
		if (send_fds(sock, buf, len, NULL, 0, MSG_DONTWAIT) < 0) {
			cr_assert(errno == EAGAIN, "%s", strerror(errno));
			sched_yield();
			continue;
		}
		sent++;
	}
	cr_assert_gt(sent, CONN_QUEUE_HIGH);
	return sent;
}

/* Reads responses numbered from first until the daemon closes; returns
 * how many came. */
static uint64_t drain(int sock, uint64_t first)
{
	Cudaep__V1__Response *resp;
	uint64_t n = 0;

	while ((resp = recv_resp(sock)) != NULL) {
		cr_assert_eq(resp->id, first + n);
		tu_expect_ok(resp);
		cudaep__v1__response__free_unpacked(resp, NULL);
		n++;
	}
	return n;
}

Test(server, backpressure_on_a_client_that_does_not_read)
{
	Cudaep__V1__Response *resp;
	struct running r;
	struct config cfg;
	uint64_t first, sent, i;
	int sock;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);
	first = tu_next_id;
	sent = flood(&r, sock, first);
	/* Now every response arrives, in order, none lost. */
	for (i = 0; i < sent; i++) {
		resp = recv_resp(sock);
		cr_assert_not_null(resp);
		cr_assert_eq(resp->id, first + i);
		cr_assert_eq(resp->ping->payload, first + i);
		cudaep__v1__response__free_unpacked(resp, NULL);
	}
	tu_next_id = first + sent;
	cr_assert_gt(stat_of(sock, "responses_queued"), CONN_QUEUE_HIGH);
	cr_assert_eq(stat_of(sock, "send_queue"), 0);
	ping_ok(sock);
	close(sock);
	stop(&r);
}

/* A child registers two regions and is SIGKILLed: the daemon must release
 * them, close their fds and drop the connection from every gauge. */
Test(server, killed_client_releases_everything)
{
	Cudaep__V1__Response *resp;
	struct running r;
	struct config cfg;
	int sock, ready[2], status;
	int64_t fds_before;
	char c;
	pid_t pid;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);
	/* The Hello reply carried the fence page's fd, which the daemon closes
	 * right after sending it, possibly after the reply has reached us: a
	 * round trip later it is closed. (Counted open, it made fds_before one
	 * too many whenever the machine was busy.) */
	ping_ok(sock);
	fds_before = tu_fd_count();
	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int child = dial(r.path), i, fd;

		hello(child);
		for (i = 0; i < 2; i++) {
			fd = tu_memfd(1 << 20, true);
			resp = register_sock(child, 1 << 20, fd);
			if (resp->status->code != 0)
				_exit(3);
			close(fd);
		}
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the child failed");
	close(ready[0]);
	cr_assert_eq(stat_of(sock, "regions"), 2);
	cr_assert_eq(stat_of(sock, "region_bytes"), 2 << 20);
	cr_assert_eq(stat_of(sock, "connections"), 2);
	cr_assert_eq(tu_fd_count(), fds_before + 4, "2 region fds, the child's "
		     "connection and its fence page (kept open for a handover)");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	/* The hang-up reaches the loop on its own time: ask until it has. */
	while (stat_of(sock, "connections") != 1)
		sched_yield();
	cr_assert_eq(stat_of(sock, "regions"), 0);
	cr_assert_eq(stat_of(sock, "region_bytes"), 0);
	cr_assert_eq(stat_of(sock, "fds_received"), stat_of(sock, "fds_closed"));
	/* The connection's own fd goes in its close callback, right after. */
	while (tu_fd_count() != fds_before)
		sched_yield();
	close(sock);
	stop(&r);
}

Test(server, stale_socket_is_replaced)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct running r;
	struct config cfg;
	int fd, sock;

	cfg_default(&cfg, "d.sock");
	/* A socket file whose owner is gone: bound, never listened. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", cfg.socket);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	close(fd);
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);
	ping_ok(sock);
	close(sock);
	stop(&r);
}

Test(server, live_daemon_and_foreign_files_are_not_replaced)
{
	struct server *second;
	struct running r;
	struct config cfg;
	uv_loop_t loop;
	int sock, fd;
	char path[96];

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(server_new(&cfg, &second), 0);
	cr_assert_eq(server_listen(second, &loop), CEP_EBUSY);
	uv_run(&loop, UV_RUN_DEFAULT);
	server_free(second);
	cr_assert_eq(uv_loop_close(&loop), 0);
	/* The first one was not disturbed. */
	sock = dial(r.path);
	hello(sock);
	ping_ok(sock);
	close(sock);
	stop(&r);

	snprintf(path, sizeof(path), "%s/plain", tmpdir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert(fd >= 0);
	close(fd);
	snprintf(cfg.socket, sizeof(cfg.socket), "%s", path);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(server_new(&cfg, &second), 0);
	cr_assert_eq(server_listen(second, &loop), CEP_EEXIST);
	uv_run(&loop, UV_RUN_DEFAULT);
	server_free(second);
	cr_assert_eq(uv_loop_close(&loop), 0);
	cr_assert_eq(access(path, F_OK), 0, "the file was removed");
}

/* At SIGTERM the replies already queued are still delivered before the
 * connection is closed. */
Test(server, shutdown_sends_queued_replies)
{
	struct running r;
	struct config cfg;
	uint64_t first, sent, got;
	int sock;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);
	first = tu_next_id;
	sent = flood(&r, sock, first);
	cr_assert_eq(raise(SIGTERM), 0);
	got = drain(sock, first);
	/* Requests it had not read yet are dropped, never half-answered. */
	cr_assert_gt(got, CONN_QUEUE_HIGH);
	cr_assert_leq(got, sent);
	close(sock);
	finish(&r);
}

/* A client that never reads cannot hold the daemon's shutdown hostage: it
 * is dropped after the grace period. */
Test(server, shutdown_drops_a_client_that_never_reads)
{
	struct running r;
	struct config cfg;
	int sock;

	cfg_default(&cfg, "d.sock");
	start(&r, &cfg);
	sock = dial(r.path);
	hello(sock);
	flood(&r, sock, tu_next_id);
	cr_assert_eq(raise(SIGTERM), 0);
	finish(&r);
	close(sock);
}
