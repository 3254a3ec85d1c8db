/*
 * harness.c — starts real cudaepd processes for the integration tests and
 * reads their state; see harness.h.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H_TIMEOUT_MS 10000

int64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

const char *h_backend(void)
{
	const char *gpu = getenv("CUDAEP_TEST_GPU");

	return gpu && strcmp(gpu, "1") == 0 ? "cuda" : "host";
}

const char *h_bin(const char *name)
{
	static _Thread_local char path[512];
	const char *dir = getenv("CUDAEP_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/bin/%s", dir && *dir ? dir : "build",
		 name);
	return path;
}

const char *h_test_bin(const char *name)
{
	static _Thread_local char path[512];
	const char *dir = getenv("CUDAEP_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/tests/%s", dir && *dir ? dir : "build",
		 name);
	return path;
}

int h_daemon_prepare(struct hdaemon *d)
{
	if (d->dir[0] != '\0')
		return 0;
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/cep-it-XXXXXX");
	if (mkdtemp(d->dir) == NULL)
		return -1;
	snprintf(d->sock, sizeof(d->sock), "%s/cudaep.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
	return 0;
}

static int try_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits until the daemon accepts a connection and answers it. */
static int wait_ready(struct hdaemon *d)
{
	int64_t deadline = h_now_ms() + H_TIMEOUT_MS;

	while (h_now_ms() < deadline) {
		int st, fd;

		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			d->status = st;
			h_daemon_dump_log(d);
			return -1;
		}
		fd = try_connect(d->sock);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		h_sleep_ms(10);
	}
	h_daemon_dump_log(d);
	return -1;
}

static void child_stdio(const struct hdaemon *d)
{
	int log = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (log >= 0)
		dup2(log, 2);
	if (null >= 0)
		dup2(null, 0);
}

/* The daemon inherits nothing of the test process (Criterion's arenas and
 * pipes): every fd above stdio closes at exec, but the one a test names in
 * $CUDAEPD_HANDOVER_FD to pose as a previous image of the daemon. Between
 * fork and exec: no allocation. */
static void child_fds(void)
{
	const char *keep = getenv("CUDAEPD_HANDOVER_FD");
	int k = keep != NULL ? atoi(keep) : -1;

	if (k < 3) {
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
		return;
	}
	if (k > 3)
		close_range(3, (unsigned)k - 1, CLOSE_RANGE_CLOEXEC);
	close_range((unsigned)k + 1, ~0U, CLOSE_RANGE_CLOEXEC);
}

int h_daemon_start(struct hdaemon *d, const char *const *extra_args)
{
	return h_daemon_start_prog(d, h_bin("cudaepd"), extra_args);
}

int h_daemon_start_prog(struct hdaemon *d, const char *prog,
			const char *const *extra_args)
{
	const char *argv[32];
	int n = 0;

	if (h_daemon_prepare(d) < 0)
		return -1;
	argv[n++] = prog;
	argv[n++] = "--socket";
	argv[n++] = d->sock;
	argv[n++] = "--backend";
	argv[n++] = h_backend();
	for (; extra_args && *extra_args && n < 30; extra_args++)
		argv[n++] = *extra_args;
	argv[n] = NULL;

	d->pid = fork();
	if (d->pid < 0)
		return -1;
	if (d->pid == 0) {
		child_stdio(d);
		child_fds();
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return wait_ready(d);
}

int h_daemon_start_activated(struct hdaemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (h_daemon_prepare(d) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->sock);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0) {
		close(fd);
		return -1;
	}
	d->pid = fork();
	if (d->pid < 0) {
		close(fd);
		return -1;
	}
	if (d->pid == 0) {
		char pid[32];

		child_stdio(d);
		if (dup2(fd, 3) < 0)
			_exit(126);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("LISTEN_PID", pid, 1);
		setenv("LISTEN_FDS", "1", 1);
		unsetenv("CUDAEP_SOCKET");
		execl(h_bin("cudaepd"), "cudaepd", (char *)NULL);
		_exit(127);
	}
	close(fd);
	return wait_ready(d);
}

int h_daemon_wait(struct hdaemon *d, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;

	if (d->pid == 0)
		return d->status;
	while (h_now_ms() < deadline) {
		int st;

		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			d->status = st;
			return st;
		}
		h_sleep_ms(5);
	}
	return -1;
}

int h_daemon_stop(struct hdaemon *d, int sig)
{
	int st;

	if (d->pid == 0)
		return d->status;
	kill(d->pid, sig);
	st = h_daemon_wait(d, H_TIMEOUT_MS);
	if (st == -1) {
		kill(d->pid, SIGKILL);
		h_daemon_wait(d, H_TIMEOUT_MS);
		h_daemon_dump_log(d);
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		h_daemon_dump_log(d);
		return st;
	}
	unlink(d->log);
	rmdir(d->dir); /* fails, harmlessly, while the socket file is there */
	return st;
}

void h_daemon_stop_clean(struct hdaemon *d, const char *what)
{
	int st = h_daemon_stop(d, SIGTERM);

	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "%s did not exit cleanly (status %#x)", what, st);
}

bool h_log_has(const struct hdaemon *d, const char *text)
{
	static char buf[65536];
	FILE *f = fopen(d->log, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

bool h_wait_log(const struct hdaemon *d, const char *text)
{
	int64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	static char buf[65536];

	do {
		FILE *f = fopen(d->log, "r");
		size_t n = 0;

		if (f != NULL) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
		if (strstr(buf, text) != NULL)
			return true;
		h_sleep_ms(10);
	} while (h_now_ms() < deadline);
	return false;
}

void h_daemon_dump_log(const struct hdaemon *d)
{
	char buf[4096];
	FILE *f = fopen(d->log, "r");
	size_t n;

	if (f == NULL)
		return;
	fprintf(stderr, "---- %s\n", d->log);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fprintf(stderr, "----\n");
	fclose(f);
}

int h_daemon_fd_count(const struct hdaemon *d)
{
	char path[64];
	DIR *dir;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)d->pid);
	dir = opendir(path);
	if (dir == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

int h_wait_fd_count(const struct hdaemon *d, int want)
{
	int64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	int n = h_daemon_fd_count(d);

	while (n != want && h_now_ms() < deadline) {
		h_sleep_ms(10);
		n = h_daemon_fd_count(d);
	}
	return n;
}

cep_client *h_connect(const struct hdaemon *d, const char *name)
{
	cep_client *c = NULL;
	int rc = cep_connect(d->sock, name, &c);

	if (rc != 0) {
		h_daemon_dump_log(d);
		cr_assert_fail("cep_connect(%s): %s: %s", d->sock,
			       cep_err_name(rc), cep_last_error());
	}
	return c;
}

/* ------------------------------------------------------------ stats */

static cudaep_v1_Response *stats_reply(cep_client *c)
{
	static _Thread_local cudaep_v1_Response *resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int rc;

	if (resp == NULL)
		resp = calloc(1, sizeof(*resp));
	cr_assert_not_null(resp);
	req.which_body = cudaep_v1_Request_stats_tag;
	rc = cep__call(c, &req, NULL, 0, resp);
	cr_assert_eq(rc, 0, "Stats request: %s: %s", cep_err_name(rc),
		     cep_last_error());
	cr_assert_eq(resp->which_body, cudaep_v1_Response_stats_tag);
	return resp;
}

int64_t h_mem_current(cep_client *c, const char *owner, const char *role)
{
	static _Thread_local cudaep_v1_Response *resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	if (resp == NULL)
		resp = calloc(1, sizeof(*resp));
	cr_assert_not_null(resp);
	req.which_body = cudaep_v1_Request_memory_tag;
	cr_assert_eq(cep__call(c, &req, NULL, 0, resp), 0, "Memory request: %s",
		     cep_last_error());
	for (pb_size_t i = 0; i < resp->body.memory.entries_count; i++) {
		const cudaep_v1_MemoryEntry *e = &resp->body.memory.entries[i];

		if (strcmp(e->owner, owner) == 0 && strcmp(e->role, role) == 0)
			return (int64_t)e->current;
	}
	return -1;
}

int64_t h_gauge(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->gauges_count; i++)
		if (strcmp(s->gauges[i].name, name) == 0)
			return s->gauges[i].current;
	cr_assert_fail("the daemon reports no gauge '%s'", name);
	return 0;
}

uint64_t h_counter(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->counters_count; i++)
		if (strcmp(s->counters[i].name, name) == 0)
			return s->counters[i].value;
	cr_assert_fail("the daemon reports no counter '%s'", name);
	return 0;
}

int64_t h_wait_gauge(cep_client *c, const char *name, int64_t want)
{
	int64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	int64_t v = h_gauge(c, name);

	while (v != want && h_now_ms() < deadline) {
		h_sleep_ms(10);
		v = h_gauge(c, name);
	}
	return v;
}

int h_settled_fds(const struct hdaemon *d, cep_client *c, int64_t conns)
{
	cr_assert_eq(h_wait_gauge(c, "connections", conns), conns);
	(void)h_gauge(c, "connections");
	return h_daemon_fd_count(d);
}

static int64_t raw_gauge(int fd, const char *name)
{
	static _Thread_local cudaep_v1_Response resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	req.id = 0x5157;
	req.which_body = cudaep_v1_Request_stats_tag;
	cr_assert_eq(h_raw_send_req(fd, &req, NULL, 0), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0);
	cr_assert_eq(resp.which_body, cudaep_v1_Response_stats_tag);
	for (pb_size_t i = 0; i < resp.body.stats.gauges_count; i++)
		if (strcmp(resp.body.stats.gauges[i].name, name) == 0)
			return resp.body.stats.gauges[i].current;
	cr_assert_fail("the daemon reports no gauge '%s'", name);
	return 0;
}

int h_settled_fds_raw(const struct hdaemon *d, int fd, int64_t conns)
{
	int64_t deadline = h_now_ms() + H_TIMEOUT_MS;

	while (raw_gauge(fd, "connections") != conns && h_now_ms() < deadline)
		h_sleep_ms(10);
	(void)raw_gauge(fd, "connections");
	return h_daemon_fd_count(d);
}

/* ------------------------------------------------------------ raw peers */

int h_raw_connect(const struct hdaemon *d)
{
	return try_connect(d->sock);
}

int h_raw_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds > 8)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

int h_raw_send_req(int fd, const cudaep_v1_Request *req, const int *fds,
		   int nfds)
{
	static _Thread_local uint8_t buf[CEP_MAX_PACKET];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof(buf));

	if (!pb_encode(&os, cudaep_v1_Request_fields, req))
		return -1;
	return h_raw_send(fd, buf, os.bytes_written, fds, nfds) == 0 ? 0 : -1;
}

int h_raw_recv(int fd, cudaep_v1_Response *resp)
{
	static _Thread_local uint8_t buf[CEP_MAX_PACKET + 1];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	pb_istream_t is;
	ssize_t n;

	if (poll(&p, 1, H_TIMEOUT_MS) != 1)
		return -1;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 1;
	if (n < 0)
		return -1;
	memset(resp, 0, sizeof(*resp));
	is = pb_istream_from_buffer(buf, (size_t)n);
	return pb_decode(&is, cudaep_v1_Response_fields, resp) ? 0 : -1;
}

int h_raw_hello(int fd, uint32_t version, cudaep_v1_Response *resp)
{
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;

	req.id = 1;
	req.which_body = cudaep_v1_Request_hello_tag;
	req.body.hello.protocol_version = version;
	snprintf(req.body.hello.client_name,
		 sizeof(req.body.hello.client_name), "raw");
	if (h_raw_send_req(fd, &req, NULL, 0) != 0)
		return -1;
	return h_raw_recv(fd, resp);
}

int h_memfd(size_t size, bool sealed)
{
	int fd = memfd_create("cep-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}
