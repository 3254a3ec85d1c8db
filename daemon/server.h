/*
 * server.h — one cudaepd: where its parts are made and wired together.
 * The server owns the configuration, the backend, the memory account,
 * the counters, the pools, the landing queue of runs, the fair queue, the
 * batch groups, the clients, the recovery and the request layer, and,
 * once listening, its socket and libuv handles. It hands each part what
 * that part uses and connects their callbacks (the layers are drawn in
 * docs/ARCHITECTURE.md): nothing below calls back into the server but
 * through them.
 *
 * Everything is passed explicitly; there is no global server, so tests
 * and the fuzzer build one with server_new() and drive detached clients
 * (server_client_detached(), dispatch_packet()) without any socket or
 * loop.
 *
 * Lifecycle: server_new() -> server_listen(loop) -> uv_run() ... a signal
 * or server_stop() closes the listener and every client and handle, so
 * uv_run() returns -> server_free() -> uv_loop_close().
 */
#ifndef CEPD_SERVER_H
#define CEPD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "alloc/account.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/batch.h"
#include "daemon/client.h"
#include "daemon/config.h"
#include "daemon/dispatch.h"
#include "daemon/fairq.h"
#include "daemon/recover.h"
#include "daemon/region.h"
#include "daemon/reqarena.h"
#include "daemon/run.h"
#include "daemon/session.h"
#include "engine/engine.h"
#include "gpu/backend.h"

struct server {
	struct config cfg;              /* a copy; reloadable keys change */
	struct backend *backend;        /* where sessions run; owned */
	struct account *account;        /* device memory by client, session
	                                 * and role, with the limits; owned */
	engine_model_cache *models;     /* loaded models, shared by content;
	                                 * owned */
	uv_loop_t *loop;                /* NULL until server_listen() */
	struct stats stats;
	struct region_pool regions;     /* limits and totals of all regions */
	struct session_pool sessions;   /* ids and count of all sessions */
	struct run_queue runs;          /* runs with a fence, as they land */
	struct batcher batches;         /* groups of batching sessions */
	struct fairq fairq;             /* runs waiting for their turn */
	struct client_list clients;     /* every client, oldest first */
	struct access access;           /* per-uid limits */
	struct recover recover;         /* the recovery from a lost context */
	struct dispatch d;              /* what the request handlers use */
	struct reqarena arena;          /* the request being served */
	uint8_t *in_buf;                /* CEP_MAX_PACKET + 1 bytes */
	uint8_t *out_buf;               /* CEP_MAX_PACKET: its response */
	uint64_t start_ns;              /* uv_hrtime() at the first start */
	uid_t euid;                     /* the daemon's; its peers are admins */
	char socket_path[CONFIG_PATH_MAX]; /* where we listen; "" before */
	int listen_fd;                  /* -1 when not listening */
	bool unlink_socket;             /* we bound the path: unlink at stop */
	bool activated;                 /* the listener came from systemd */
	bool stopping;                  /* server_stop() was called */
	unsigned handles;               /* SERVER_H_* bits of live handles */
	uv_poll_t listen_poll;          /* readable: connections to accept */
	uv_timer_t accept_timer;        /* resumes accepting after EMFILE */
	uv_timer_t stop_timer;          /* ends a shutdown that hangs */
	uv_timer_t trim_timer;          /* unmaps idle granules of the arena */
	uint64_t trim_clock_ns;         /* its arena_tick() clock */
	uv_signal_t sigterm;
	uv_signal_t sigint;
	uv_signal_t sighup;             /* reloads the configuration */
	uv_timer_t watchdog_timer;      /* WATCHDOG=1 while the loop turns */
	uv_prepare_t pump;              /* the top of each loop turn: where
	                                 * waiting runs are started */
	int argc;                       /* the command line, for reloads and */
	char **argv;                    /* the re-exec of a recovery */
	struct handover *handover;      /* what the previous image handed over
	                                 * (handover.h), until server_listen()
	                                 * has taken it; owned */
	int exit_status;                /* for main() once the loop ends: 0, or
	                                 * 1 when a recovery could not go on */
};

/*
 * Gives s the command line the configuration came from (it outlives s), so
 * that SIGHUP can read the configuration again: the --config file and the
 * flags, which still win over the file. Without it SIGHUP only logs.
 */
void server_set_args(struct server *s, int argc, char **argv);

/*
 * Reads the configuration again from s's command line and applies what can
 * change while serving: log_level, max_connections, the region limits,
 * memory_limit, client_memory_limit, the uid_max_* limits,
 * max_runs_in_flight (starting waiting runs a larger bound lets go, at
 * the loop's next turn), trim_idle_ms, admin_group and batch_window_us. A
 * changed key that cannot (socket, socket_mode, socket_group, backend,
 * device, cache_dir, pool_bytes, batch_max) is logged as needing a
 * restart. An invalid configuration is logged and the old one kept.
 * Returns 0 or the configuration's exit status (2).
 */
int server_reload(struct server *s);

/*
 * Creates a server from cfg (copied) without touching any socket or loop:
 * pools, counters, buffers, the request arena and the wiring of its
 * parts. Returns 0 with *out owned by the caller (server_free()), or
 * CEP_ENOMEM or the backend's error.
 */
int server_new(const struct config *cfg, struct server **out);

/*
 * Opens the backend cfg asks for into *out (the caller's, backend_free()),
 * logging which one and why: "backend cuda: NVIDIA H200 (device 0, ...)",
 * or for auto without a usable GPU "no CUDA driver: libcuda.so.1: cannot
 * open shared object file: ...; serving on the host backend". driver_lib
 * names the CUDA driver to load (NULL: libcuda.so.1; tests name a missing
 * one). Returns 0, or the CUDA backend's error when cfg->backend is cuda
 * (logged; the daemon must not start), or CEP_ENOMEM.
 */
int server_backend_open(const struct config *cfg, const char *driver_lib,
			struct backend **out);

/*
 * Frees s and every detached client still open, after waiting for their
 * runs in flight. Clients with a socket and the libuv handles must be
 * closed already (server_stop(), then uv_run() until it returns). Accepts
 * NULL.
 */
void server_free(struct server *s);

/*
 * Starts serving on loop: takes the listening socket of s->handover (a
 * recovery's new image, handover.h) or the one systemd passed (LISTEN_FDS),
 * or binds the configured or default path (creating its directory,
 * replacing a stale socket, refusing when another daemon answers there),
 * and starts the signal handlers and timers; then takes over the
 * handover's clients, regions and sessions (server_restore()). Returns 0,
 * or a CEP_E* code after logging why; on failure every handle it started
 * is closing, so the caller runs the loop once more before server_free().
 */
int server_listen(struct server *s, uv_loop_t *loop);

/*
 * Begins an orderly shutdown: tells systemd STOPPING=1, stops accepting,
 * removes the socket file it created, lets each client's connection send
 * the replies it has queued and then releases everything it owned, and
 * closes every handle, so that uv_run() returns. Connections that do not
 * drain within a few seconds are dropped. Safe to call more than once.
 */
void server_stop(struct server *s);

/*
 * Whether a peer with these credentials is an admin (sees every client in
 * the admin replies): uid 0, the daemon's effective uid, or a member of
 * admin_group by its primary gid or one of its n supplementary groups.
 */
bool server_peer_admin(const struct server *s, uid_t uid, gid_t gid,
		       const gid_t *groups, size_t n);

/*
 * Creates a client without a socket, as if a peer with these credentials
 * had connected (admin per server_peer_admin() without supplementary
 * groups); tests and the fuzzer feed it packets with dispatch_packet().
 * Returns 0 with *out owned by s until client_close() (or server_free()),
 * or CEP_ENOMEM.
 */
int server_client_detached(struct server *s, uid_t uid, gid_t gid, pid_t pid,
			   struct client **out);

/* Replaces s's backend with be (taken), for tests that serve on a
 * backend of their own making: s must not be listening nor have a client
 * yet. */
void server_backend_replace(struct server *s, struct backend *be);

/* ---------------------------------------------------------------- handover */

/*
 * The recovery's last step (recover_ops.handover): saves s whole (its
 * listener, ids, counters and every client that is not on its way out)
 * and re-executes the daemon with it (handover_exec()). Returns only when
 * that failed, with a CEP_E* code and message.
 */
int server_handover(struct server *s, uint64_t fault_ns, uint32_t runs_failed,
		    const char *why);

/*
 * For server_listen(): takes the listening socket of s->handover into s.
 * Returns 1 when it did, 0 when there is none or it is not a listening
 * Unix SOCK_SEQPACKET socket (logged; the caller binds as usual).
 */
int server_listener_restore(struct server *s);

/*
 * Once s listens with its handles started: re-creates every client, fence
 * page, region and session of s->handover with their ids, restores the
 * counters, counts and logs the recovery, and frees the handover (closing
 * every fd nothing took). Objects that cannot be re-created are logged
 * and left out. Does nothing without a handover. Cannot fail as a whole.
 */
void server_restore(struct server *s);

#endif
