/*
 * fakedaemon.h — a scripted stand-in for cudaepd in unit tests of
 * libcudaep-client and cudaepctl. It listens on a SOCK_SEQPACKET socket in a
 * fresh temporary directory, serves up to FAKE_MAX_CONNS connections on
 * its own thread, decodes each Request with nanopb and lets a test's handler decide
 * the answer: a Response, silence, a closed connection or raw bytes.
 *
 * Linked into every unit test binary (a helper in tests/unit), so it keeps
 * to its fake_ prefix and needs nothing but nanopb and the client headers.
 */
#ifndef CEP_TEST_FAKEDAEMON_H
#define CEP_TEST_FAKEDAEMON_H

#include "client/internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_MAX_CONNS 4 /* connections served at once */

enum fake_action {
	FAKE_REPLY,  /* send resp (with fake->reply_fds attached, if any) */
	FAKE_SILENT, /* send nothing and read the next request */
	FAKE_CLOSE,  /* close the connection */
	FAKE_RAW,    /* send fake->raw (raw_len bytes) as it is */
};

struct fake_daemon;

/*
 * Decides the answer to req, on the fake's thread. resp arrives zeroed with
 * its id set to req->id (no status: success). fds are the nfds descriptors
 * that came with the request; the fake closes them afterwards unless the
 * handler takes one by overwriting it with -1.
 */
typedef enum fake_action (*fake_handler)(struct fake_daemon *fake,
					 const cudaep_v1_Request *req,
					 int *fds, int nfds,
					 cudaep_v1_Response *resp);

/* Encoder state for one repeated TensorInfo list (fake_session_info). */
struct fake_tensor_list {
	const cudaep_v1_TensorInfo *items; /* (count) */
	size_t count;
};

struct fake_daemon {
	char dir[64];               /* temporary directory */
	char path[108];             /* its socket */
	int listen_fd;
	int conns[FAKE_MAX_CONNS];  /* connections served, -1 for none */
	int stop_pipe[2];           /* written by fake_stop() to end the thread */
	pthread_t thread;
	bool started;
	fake_handler handler;
	void *arg;                  /* the test's, for its handler */
	int requests;               /* requests decoded so far */
	int connections;            /* connections accepted so far */
	int reply_fds[CEP_MAX_FDS]; /* fds sent with the next FAKE_REPLY */
	int n_reply_fds;            /* reset to 0 after each reply */
	uint8_t *raw;               /* FAKE_RAW bytes, CEP_MAX_PACKET + 1024 room */
	size_t raw_len;
	cudaep_v1_Request *req;
	cudaep_v1_Response *resp;
	struct fake_tensor_list lists[2]; /* inputs, outputs of fake_session_info */
};

/* Starts serving with handler (NULL: fake_default) on a new socket; arg is
 * stored in fake->arg. Returns 0 or -1 (errno set). */
int fake_start(struct fake_daemon *fake, fake_handler handler, void *arg);

/* Stops the thread, closes every fd and removes the socket and directory.
 * Accepts a fake that never started. */
void fake_stop(struct fake_daemon *fake);

/* The answers of a well-behaved daemon: Hello gets a HelloReply (protocol
 * CEP_PROTOCOL_VERSION, client id 7, backend "host", device "fake cpu"),
 * Ping its echo, ReleaseRegion and Unload an empty reply, anything else
 * CEP_ENOTSUP. */
enum fake_action fake_default(struct fake_daemon *fake,
			      const cudaep_v1_Request *req, int *fds, int nfds,
			      cudaep_v1_Response *resp);

/* Sets a status error on resp. */
void fake_error(cudaep_v1_Response *resp, int code, const char *message);

/* Fills info's tensor lists with in and out (arrays the caller keeps alive
 * until the reply is sent), through nanopb encode callbacks. */
void fake_session_info(struct fake_daemon *fake,
		       cudaep_v1_SessionInfoReply *info,
		       const cudaep_v1_TensorInfo *in, size_t n_in,
		       const cudaep_v1_TensorInfo *out, size_t n_out);

/* Open fds of this process, and lines of /proc/self/maps containing
 * needle: for tests that prove nothing leaked. -1 on failure. */
int fake_count_fds(void);
int fake_count_maps(const char *needle);

#endif
