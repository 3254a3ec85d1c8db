/*
 * access.h — who may do what in cudaepd, beside the identity a client's
 * record takes from SO_PEERCRED and the admin flag the server gives a
 * peer:
 *
 *   - per-uid limits: connections, sessions, regions (counted over every
 *     client of the uid when a request would add one) and memory (the
 *     account's per-uid level, alloc/account.h), each refusal with a
 *     message naming the limit, the uid and the numbers, and a counter;
 *   - killed sessions: an admin may unload any client's session
 *     (KillSession, daemon/dispatch_admin.c); its owner's later requests
 *     naming it are told so, instead of hearing "no session".
 *
 * The other rule, that a request naming a session or region id finds only
 * the asking client's own (another's id is answered exactly as an unknown
 * one), holds because every lookup goes through the client's own tables
 * (client.h); this module only adds the killed-session answer.
 * Everything here runs on the event loop.
 */
#ifndef CEPD_ACCESS_H
#define CEPD_ACCESS_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon/handover.h"

struct account;
struct client;
struct client_list;
struct config;
struct stats;

/* Killed sessions a client remembers, so that its requests naming one
 * are told it was killed; older ones then read as unknown ids. */
#define ACCESS_KILLED_MAX 16

/* The sessions of one client that an admin killed (in struct client). */
struct access_killed {
	uint64_t ids[ACCESS_KILLED_MAX]; /* session ids; 0: an empty slot */
	uint32_t next;                   /* the slot the next kill takes */
};

/* The per-uid limits in force and what they are checked against; in
 * struct server. */
struct access {
	uint32_t uid_max_connections;    /* 0: no limit */
	uint32_t uid_max_sessions;
	uint32_t uid_max_regions;
	uint64_t uid_max_bytes;
	const struct client_list *clients;
	struct account *account;
	struct stats *stats;
};

/* What all clients of one uid hold now. */
struct access_uid_use {
	uint32_t connections;
	uint32_t sessions;     /* loading ones included */
	uint32_t regions;
};

/* Counts what the clients of uid hold, detached ones included. */
void access_uid_use(const struct access *a, uid_t uid, struct access_uid_use *out);

/*
 * Whether a process of uid (pid, for the log) may open one more
 * connection under uid_max_connections. Returns 0, or CEP_ELIMIT with a
 * message for the peer ("too many connections for uid 1000: ...") after
 * counting and logging the refusal.
 */
int access_connection_check(struct access *a, uid_t uid, pid_t pid);

/*
 * Admits one more session for c under uid_max_sessions (CEP_ELIMIT with a
 * message naming the limit, the uid and the counts), and binds c to its
 * uid in the memory account so that uid_max_bytes counts its sessions.
 * Returns 0, CEP_ELIMIT or CEP_ENOMEM.
 */
int access_session_admit(struct access *a, struct client *c);

/* Admits one more region for c under uid_max_regions, and binds c to its
 * uid in the memory account first, so that uid_max_bytes counts the
 * region's pinned bytes even before c loads a session. Returns 0,
 * CEP_ELIMIT with its message, or CEP_ENOMEM. */
int access_region_admit(struct access *a, struct client *c);

/* Remembers that an admin killed session id of c. */
void access_killed_note(struct client *c, uint64_t id);

/*
 * The answer to a request of c naming session id, which its table lookup
 * answered with ret: when ret is CEP_ENOENT and an admin killed that
 * session, CEP_ECANCELED with "session ID was killed by an administrator";
 * otherwise ret and its message unchanged.
 */
int access_session_gone(const struct client *c, uint64_t id, int ret);

/* Unloads the session of c that an admin killed while c's job was using
 * it; called when that job has ended. Does nothing when there is none. */
void access_kill_finish(struct client *c);

/* Takes the per-uid limits of cfg into a and its account. At start and
 * on reload; existing objects above a lowered limit stay, new ones are
 * refused. */
void access_limits_set(struct access *a, const struct config *cfg);

/* Brings the counters that other threads keep (the account's refusals)
 * into a's stats; before the stats are read. */
void access_stats_sync(struct access *a);

/* Puts c's killed sessions into hc / takes them back from it. */
void access_save(const struct client *c, HvClient *hc);
void access_restore(struct client *c, const HvClient *hc);

#endif
