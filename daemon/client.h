/*
 * client.h — the daemon's record of one client: its identity from
 * SO_PEERCRED, its Hello state, what it owns (regions, sessions, its
 * fence page and its runs' records), its transport (conn.h), and the two
 * states that say what may happen to it.
 *
 * Work: at most one piece of a client's work is under way at a time, so
 * that its requests stay in order and its sessions and regions are used
 * by one thread at a time: idle, a job on the thread pool (a load or a
 * cold run), or a run waiting in a batch window. Meanwhile its connection
 * is not read (client_work_begin()/client_work_end()).
 *
 * Life: a live client goes (client_close()) when its peer is gone, it
 * broke the protocol, or the daemon stops. Whatever it owned is released
 * once its work has ended and its runs on the device have landed (until
 * then it is only no longer read); then its transport closes and its
 * memory goes.
 *
 * Everything here runs on the event loop.
 */
#ifndef CEPD_CLIENT_H
#define CEPD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/access.h"
#include "daemon/conn.h"
#include "daemon/fairq.h"
#include "daemon/fence.h"
#include "daemon/handover.h"
#include "daemon/region.h"
#include "daemon/run.h"
#include "daemon/session.h"
#include "proto/cep_limits.h"

struct account;
struct client_list;

enum client_life {
	CLIENT_LIVE,                    /* served */
	CLIENT_GOING,                   /* gone; waits for its work and runs */
	CLIENT_RELEASED,                /* released; its transport closes */
};

enum client_work {
	CLIENT_IDLE,
	CLIENT_JOB,                     /* a job of its on the thread pool */
	CLIENT_BATCH,                   /* its run waits in a batch window */
};

struct client {
	struct conn conn;               /* its transport; container_of */
	struct client_list *list;
	struct client *prev, *next;     /* in list, oldest first */
	uint64_t id;                    /* client id: global, never reused */
	pid_t pid;                      /* peer credentials */
	uid_t uid;
	gid_t gid;
	bool admin;                     /* sees every client */
	bool hello_done;                /* a Hello was accepted */
	enum client_life life;
	enum client_work work;
	char name[CEP_MAX_CLIENT_NAME]; /* from Hello, printable */
	uint64_t requests;              /* packets received */
	uint64_t connected_ns;          /* uv_hrtime() at creation */
	struct region_table regions;    /* owned */
	struct session_table sessions;  /* owned */
	struct fence_page page;         /* its fence page */
	struct run_table runs;          /* its runs with a fence */
	struct fairq_lanes lanes;       /* those of them waiting their turn */
	struct run *batched;            /* the run waiting in a batch window
	                                 * (work CLIENT_BATCH) */
	struct access_killed killed;    /* its sessions an admin killed */
	uint64_t kill_pending;          /* a killed session its job still
	                                 * uses, unloaded when the job ends;
	                                 * 0: none */
	void *job;                      /* its job slot (dispatch), made on
	                                 * first use; owned, plain memory */
};

/* Every client of a daemon, and what making and releasing one needs; in
 * struct server. */
struct client_list {
	struct client *head, *tail;
	uint32_t n;                     /* clients, detached ones included */
	uint32_t n_sock;                /* of those, the ones with a socket */
	uint64_t next_id;               /* the id the next client gets */
	struct conn_env conn_env;       /* the transports' */
	struct region_pool *regions;
	struct session_pool *sessions;
	struct run_queue *runs;
	struct fairq *fairq;
	struct account *account;
	struct stats *stats;
	void (*released)(struct client_list *l); /* after a client with a
	                                 * socket left the list; may be NULL */
};

/* Initializes l (caller memory; its pointers are filled in by the
 * caller). Ids start at 1. */
void client_list_init(struct client_list *l);

/*
 * Creates the client of an accepted socket fd (non-blocking; -1:
 * detached, for tests and the fuzzer) with its peer's credentials, and
 * starts reading it. Takes fd in every case. Returns 0 with *out owned by
 * l (it goes with client_close()), or CEP_ENOMEM or a libuv failure
 * mapped to CEP_E*.
 */
int client_new(struct client_list *l, int fd, pid_t pid, uid_t uid, gid_t gid, bool admin,
	       struct client **out);

/*
 * c goes: stops reading it, drops its runs waiting for their turn or in
 * a batch window, and releases everything it owned once its work has
 * ended and its runs on the device have landed (closing their fds), then
 * closes its transport; its memory goes after that. Accepts NULL and a
 * client already going.
 */
void client_close(struct client *c);

/* c's work of kind work (not CLIENT_IDLE) begins: c is not read until
 * client_work_end(). */
void client_work_begin(struct client *c, enum client_work work);

/* c's work ended: c is read again, or, when it went meanwhile and has no
 * run in flight, released now. */
void client_work_end(struct client *c);

/* c's last run in flight finished (run_queue_ops.idle): a client that
 * went meanwhile is released now. */
void client_runs_idle(struct client *c);

/* Whether a run of c may be started from the fair queue now. */
bool client_can_start(const struct client *c, const struct fairq *q);

/* ---------------------------------------------------------------- handover */

/* Puts c whole into a new HvClient of b (NULL when out of memory, which
 * b remembers): identity, Hello state, transport, page, regions,
 * sessions and killed ids. */
HvClient *client_save(const struct client *c, struct handover_build *b);

/* What client_restore() took over, for the recovery's log line. */
struct client_tally {
	uint32_t regions, regions_lost;
	uint32_t pages_lost;
};

/*
 * Re-creates the client hc of handover h in l, with its id (which must be
 * below l->next_client_id, set from the handover first, and not taken),
 * transport, Hello state, page (on be), regions and killed ids; its
 * sessions are the caller's to restore, as loading them needs the engine
 * (session_restore()). Returns 0 with *out owned by l, or an error saying
 * why it could not be taken over (nothing of it stays then).
 */
int client_restore(struct client_list *l, struct backend *be, struct access *a,
		   struct handover *h, const HvClient *hc, struct client_tally *t,
		   struct client **out);

#endif
