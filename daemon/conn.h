/*
 * conn.h — one client connection of cudaepd: its peer identity from
 * SO_PEERCRED, the Hello state, the regions and sessions it owns, and, for
 * a real socket, the libuv poll handle that reads its packets and the
 * queue of responses the socket has not taken yet.
 *
 * Whatever a connection owns is released when it goes, whether the client
 * closed it, died, broke the protocol or the daemon is stopping, once its
 * runs in flight have completed (until then it is only no longer read). A
 * detached connection has no socket: tests and the fuzzer create one and
 * feed it packets through dispatch_packet() (dispatch.h).
 */
#ifndef CEPD_CONN_H
#define CEPD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "daemon/access.h"
#include "proto/cep_limits.h"
#include "daemon/fence.h"
#include "daemon/region.h"
#include "daemon/session.h"

struct server;

/* A response waiting for the socket. */
struct conn_out {
	struct conn_out *next;
	int fd;                         /* attached to it, owned; -1: none */
	size_t len;                     /* bytes in data */
	uint8_t data[];                 /* one encoded Response */
};

/* Packets read per readable wakeup, so that one busy client cannot starve
 * the others. */
#define CONN_READ_BURST  32
/* Queued responses above which the connection is not read (backpressure),
 * and below which reading resumes. */
#define CONN_QUEUE_HIGH  64
#define CONN_QUEUE_LOW   16

struct conn {
	uv_poll_t poll;                 /* socket only; container_of */
	struct server *server;
	struct conn *prev, *next;       /* in server->conns */
	int fd;                         /* the socket; -1 when detached */
	uint64_t id;                    /* client id: global, never reused */
	pid_t pid;                      /* peer credentials */
	uid_t uid;
	gid_t gid;
	bool admin;                     /* sees every client */
	bool hello_done;                /* a Hello was accepted */
	bool close_after_flush;         /* close once the queue is sent */
	bool read_paused;               /* the queue is too long to read more */
	bool closing;                   /* torn down, waiting for its handle */
	bool busy;                      /* a job of its request is running */
	bool dispatching;               /* inside dispatch_packet(), which may
	                                 * finish runs and so fail a send */
	bool free_deferred;             /* gone; free it when the job ends */
	bool batch_waiting;             /* busy with a run waiting in a batch
	                                 * window (batch.h): its going away is
	                                 * watched, to drop the run at once */
	int poll_events;                /* UV_* events polled now */
	char name[CEP_MAX_CLIENT_NAME]; /* from Hello, printable */
	uint64_t requests;              /* packets received */
	uint64_t connected_ns;          /* uv_hrtime() at creation */
	struct region_table regions;    /* owned */
	struct session_table sessions;  /* owned */
	struct conn_out *out_head;      /* responses waiting for the socket */
	struct conn_out *out_tail;
	uint32_t out_count;             /* entries in that queue */
	struct job *job;                /* its job slot (dispatch_session.c),
	                                 * allocated on first use, owned */
	struct access_killed killed;    /* its sessions an admin killed */
	uint64_t kill_pending;          /* a killed session its job still
	                                 * uses, unloaded when the job ends;
	                                 * 0: none */
	struct fence fence;             /* its fence page and runs in flight */
};

/*
 * Creates the connection of an accepted socket fd (non-blocking) with its
 * peer's credentials and starts reading it on s->loop. Takes fd in every
 * case. Returns 0 with *out owned by s (it frees itself when it closes),
 * or CEP_ENOMEM or a libuv failure mapped to CEP_E*.
 */
int conn_new(struct server *s, int fd, pid_t pid, uid_t uid, gid_t gid,
	     bool admin, struct conn **out);

/*
 * As conn_new(), for a connection a previous image of the daemon handed
 * over (daemon/handover.h): it keeps its client id, which must be below
 * s->next_client_id (set from the handover first) and not taken. Takes fd
 * in every case. Returns 0 with *out owned by s, CEP_EINVAL for an id
 * that cannot be, or as conn_new().
 */
int conn_adopt(struct server *s, int fd, uint64_t id, pid_t pid, uid_t uid,
	       gid_t gid, bool admin, struct conn **out);

/* Queues one encoded response (len bytes of buf, with fd attached when
 * fd >= 0) that the previous image had queued for c's socket, behind any
 * queued now. Takes fd in every case. Returns 0, or CEP_ENOMEM after
 * which c has been torn down. */
int conn_queue_adopt(struct conn *c, const uint8_t *buf, size_t len, int fd);

/*
 * Creates a connection without a socket, as if a peer with these
 * credentials had connected (admin per server_peer_admin() without
 * supplementary groups). Returns 0 with *out owned by the caller until
 * conn_free() (or server_free()), or CEP_ENOMEM.
 */
int conn_new_detached(struct server *s, uid_t uid, gid_t gid, pid_t pid,
		      struct conn **out);

/*
 * Tears c down now: releases its sessions, regions and fence page (closing
 * their fds), drops unsent responses and takes it out of the server. A
 * detached connection is freed at once; a socket's memory and fd go in its
 * handle's close callback. While a job of c is running (c->busy), or runs
 * of c are in flight, which may still use its sessions and regions, c
 * only stops being read, and the teardown happens when the last of them
 * ends. Accepts NULL and a connection already closing.
 */
void conn_free(struct conn *c);

/* Marks c busy with a job that was not started by its own request (a
 * waiting run's submission, dispatch_session.c): c is not read until
 * conn_job_done(). */
void conn_job_begin(struct conn *c);

/* Marks the end of c's job (c->busy): c reads again, or, when it went
 * away while the job ran, is freed now. */
void conn_job_done(struct conn *c);

/* Stops reading c and frees it once its queued responses are sent (or at
 * once when none are). For server_stop(). */
void conn_shutdown(struct conn *c);

/*
 * Sends one encoded response to c's socket, queueing it when the socket is
 * full. Returns 0, or a CEP_E* code after which c has been torn down (the
 * peer is gone, or no memory to queue). A detached connection discards the
 * bytes and returns 0.
 */
int conn_send(struct conn *c, const uint8_t *buf, size_t len);

/* conn_send() with fd attached (SCM_RIGHTS) when fd >= 0. Takes fd in
 * every case: it is closed once sent, queued or dropped. */
int conn_send_fd(struct conn *c, const uint8_t *buf, size_t len, int fd);

#endif
