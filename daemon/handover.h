/*
 * handover.h — cudaepd hands its client-visible state to a new image of
 * itself. After a sticky device error no new context can be had in the
 * process (the driver answers every retain or create with the error), so
 * the recovery (recover.h) ends with execve() of /proc/self/exe with the
 * same command line: the PID stays (systemd and the clients keep it), the
 * dead driver's fds close with the old image and its device memory goes,
 * and the new image opens a fresh context and takes everything over.
 *
 * What goes over, in a memfd named by $CUDAEPD_HANDOVER_FD (serialised as
 * proto/handover.proto, parsed with protobuf-c like any request): the
 * listening socket; every connection with its socket, credentials, name,
 * Hello state, request count, fence page (its memfd and last sequence
 * number: what the client saw stays valid), regions (same ids, memfds
 * mapped and pinned again), sessions (same ids, names and options; the
 * model loaded again from its file's bytes, kept by engine_model, and its
 * external data's directory fd; the weights uploaded again; a batching
 * session joins its group again), killed sessions, and the responses its
 * socket had not taken (bytes and fds); the id counters, the stats
 * counters (gauges are recomputed by re-creating the objects; their peaks
 * and totals carry over), the start time, and each session's Run count
 * (so that the test build's fault trigger does not fire again).
 *
 * Not handed over: runs in flight (the recovery failed them through
 * their fences before the exec) and runs waiting in the fair queue for
 * their turn (failed the same way, with the same context-lost error:
 * their client runs them again).
 *
 * fds travel as their numbers: the old image clears FD_CLOEXEC on the
 * ones listed and sets it on every other (the driver's among them), so
 * exactly those cross the exec. The new image checks each one's type
 * (a socket, a listening socket, a sealed memfd of the right size, a
 * directory) before it takes it; one that fails is logged and its object
 * left behind (the client's requests naming it get CEP errors). A
 * handover that cannot be read at all is logged, every fd it could have
 * passed is closed (clients see the disconnect instead of hanging), and
 * the daemon starts fresh.
 */
#ifndef CEPD_HANDOVER_H
#define CEPD_HANDOVER_H

#include <stdint.h>

struct server;
struct handover;

/* The environment variable naming the handover memfd (internal: set only
 * by cudaepd for its own next image). */
#define HANDOVER_ENV "CUDAEPD_HANDOVER_FD"

/* Bumped when the message changes meaning; a new image refuses another. */
#define HANDOVER_VERSION 1

/*
 * The old image: writes s's state into a memfd, marks every fd but 0, 1,
 * 2 and the ones handed over close-on-exec and re-executes /proc/self/exe
 * with s's command line (server_set_args()). fault_ns is uv_hrtime() when
 * the loss was noticed, runs_failed the runs the recovery failed and why
 * the loss's message, for the new image's log line. No run may be in
 * flight or waiting and no job running. Makes no backend call. Returns
 * only on failure, with a CEP_E* code after logging why (s is as it was;
 * nothing can be served on its lost backend).
 */
int handover_exec(struct server *s, uint64_t fault_ns, uint32_t runs_failed,
		  const char *why);

/*
 * The new image, first thing in main() before anything opens an fd: when
 * $CUDAEPD_HANDOVER_FD is set, unsets it, notes every inherited fd (marking
 * it close-on-exec) and reads and parses the handover. Returns the
 * handover, owned by the caller (handover_free(), or given to the server:
 * server->handover), or NULL: no handover, or one that could not be read
 * (logged; every inherited fd is closed then, and the daemon starts
 * fresh).
 */
struct handover *handover_take(void);

/*
 * For server_listen(): takes the handover's listening socket into s
 * (listen_fd, socket_path, activated, unlink_socket). Returns 1 when it
 * did, 0 when s has no handover or its listener is not a listening Unix
 * SOCK_SEQPACKET socket (logged; the caller binds as usual).
 */
int handover_listener(struct server *s);

/*
 * Once s listens with its handles started: re-creates every connection,
 * fence page, region and session of s->handover, restores the counters,
 * counts and logs the recovery, and frees the handover (closing every fd
 * it did not take). Objects that cannot be re-created are logged and left
 * out. Does nothing without a handover. Cannot fail as a whole.
 */
void handover_restore(struct server *s);

/* Frees h and closes every inherited fd nothing took. Accepts NULL. */
void handover_free(struct handover *h);

#endif
