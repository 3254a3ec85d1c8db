/*
 * harness.h — integration-test harness: starts a real cudaepd on a socket in
 * a fresh temporary directory, talks to it as a client would (through
 * libcudaep-client) or as a hostile peer would (raw packets), and reads its
 * state (stats gauges, open fds) so tests can prove that everything returns
 * to its baseline.
 *
 * The daemon binary is $CUDAEP_BUILD_DIR/bin/cudaepd (the Makefile exports
 * it), else build/bin/cudaepd.
 */
#ifndef CEP_TEST_HARNESS_H
#define CEP_TEST_HARNESS_H

#include "client/cudaep.h"
#include "client/internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hdaemon {
	pid_t pid;      /* the daemon's pid, 0 once reaped */
	char dir[64];   /* temporary directory holding the socket and log */
	char sock[108]; /* socket path */
	char log[128];  /* the daemon's stderr */
	int status;     /* wait status once reaped */
};

/* The backend the tests run the daemon on: "cuda" when CUDAEP_TEST_GPU=1
 * (make test-gpu on the GPU machine), else "host". */
const char *h_backend(void);

/* Path of a built program ("cudaepd", "cudaepctl") in the build's bin/. */
const char *h_bin(const char *name);

/* Path of a program the build makes for tests only ("cudaepd-fault") in
 * the build's tests/. */
const char *h_test_bin(const char *name);

/* Creates the temporary directory and fills in the paths of a zeroed d;
 * does nothing when d->dir is already set. Returns 0 or -1. */
int h_daemon_prepare(struct hdaemon *d);

/* Starts cudaepd --socket <dir>/cudaep.sock --backend h_backend()
 * (h_daemon_prepare first) plus the NULL-terminated extra arguments and
 * waits until it accepts connections (10 s at most). Returns 0
 * or -1 (the test should fail; the daemon's log is printed). */
int h_daemon_start(struct hdaemon *d, const char *const *extra_args);

/* As h_daemon_start, running the daemon program prog (a path) instead of
 * cudaepd. */
int h_daemon_start_prog(struct hdaemon *d, const char *prog,
			const char *const *extra_args);

/* As h_daemon_start, but the socket is created and bound here and handed to
 * the daemon as systemd would (fd 3, LISTEN_FDS=1, LISTEN_PID). */
int h_daemon_start_activated(struct hdaemon *d);

/* Sends sig, waits for the daemon to exit (10 s at most, then SIGKILL) and
 * returns its wait status (or -1). Removes the temporary directory's log
 * unless the daemon exited abnormally. */
int h_daemon_stop(struct hdaemon *d, int sig);

/* h_daemon_stop(d, SIGTERM), expecting (cr_expect) that the daemon exits
 * with status 0; what names it in the message. For a suite's .fini. */
void h_daemon_stop_clean(struct hdaemon *d, const char *what);

/* Waits for an already signalled or exiting daemon; returns wait status or
 * -1 after timeout_ms. */
int h_daemon_wait(struct hdaemon *d, int timeout_ms);

/* Polls the daemon's log until it contains text (10 s at most); returns
 * whether it did. */
/* Whether the daemon's log holds text now (the first 64 KiB). */
bool h_log_has(const struct hdaemon *d, const char *text);

bool h_wait_log(const struct hdaemon *d, const char *text);

/* Prints the daemon's log to stderr (for failing tests). */
void h_daemon_dump_log(const struct hdaemon *d);

/* Number of open fds of the daemon (entries of /proc/PID/fd). */
int h_daemon_fd_count(const struct hdaemon *d);

/* Connects a client named name; aborts the test on failure. */
cep_client *h_connect(const struct hdaemon *d, const char *name);

/* The current bytes of owner/role in the daemon's memory account (a
 * Memory request: "total"/"device", "shared"/"weights", ...), or -1 when
 * there is no such entry. */
int64_t h_mem_current(cep_client *c, const char *owner, const char *role);

/* Sleeps ms milliseconds. */
void h_sleep_ms(int ms);

/* A stats gauge's current value or a counter's value, read through a fresh
 * request on c. Aborts the test if the daemon does not report that name. */
int64_t h_gauge(cep_client *c, const char *name);
uint64_t h_counter(cep_client *c, const char *name);

/* Polls until gauge name equals want (10 s at most); returns its last value. */
int64_t h_wait_gauge(cep_client *c, const char *name, int64_t want);

/* The daemon's fd count once its "connections" gauge, read through c, is
 * conns and one more request has been answered: a connection closed just
 * before (say the start-up probe) has then released its fd too. Use it for
 * baselines. */
int h_settled_fds(const struct hdaemon *d, cep_client *c, int64_t conns);

/* The same through a raw connection that has said Hello. */
int h_settled_fds_raw(const struct hdaemon *d, int fd, int64_t conns);

/* Polls until the daemon's fd count equals want (10 s at most); returns the
 * last count. */
int h_wait_fd_count(const struct hdaemon *d, int want);

/* ------------------------------------------------------------ raw peers */

/* A raw SOCK_SEQPACKET connection to the daemon; -1 on failure. */
int h_raw_connect(const struct hdaemon *d);

/* Sends one packet of len bytes with nfds fds attached. Returns 0 or -errno. */
int h_raw_send(int fd, const void *buf, size_t len, const int *fds, int nfds);

/* Encodes req with nanopb and sends it. Returns 0 or -1. */
int h_raw_send_req(int fd, const cudaep_v1_Request *req, const int *fds,
		   int nfds);

/* Receives one packet and decodes it as a Response into *resp (waits 10 s
 * at most). Returns 0, 1 when the daemon closed the connection, -1 on
 * timeout or a packet that does not decode. */
int h_raw_recv(int fd, cudaep_v1_Response *resp);

/* Sends a Hello with the given protocol version and receives the reply. */
int h_raw_hello(int fd, uint32_t version, cudaep_v1_Response *resp);

/* A memfd of size bytes, sealed against shrinking and growing when sealed. */
int h_memfd(size_t size, bool sealed);

/* Milliseconds of the monotonic clock. */
int64_t h_now_ms(void);

#endif
