/*
 * account.h — who uses how much memory, and the limits that hold.
 *
 * Every allocation of the daemon names an owner (a client, a session of
 * that client, or the daemon itself for shared weights) and a role
 * (weights, activations, workspace, graphs, pinned host regions). The
 * account keeps current and peak bytes per (owner, role), per client (its
 * sessions summed), per user (the clients bound to one uid, summed) and in
 * total, and enforces four limits: global (--memory-limit), per client
 * and per session (a session option) on device memory, and per uid
 * (--uid-max-bytes) on device and pinned memory together. A charge over a
 * limit fails that one request with CEP_ELIMIT and a message that says
 * which limit, how much was asked and how much is in use.
 *
 * The arena (alloc/arena.h) charges and uncharges for device blocks; the
 * region code charges pinned host regions directly. `cudaepctl mem` lists
 * the entries with account_visit().
 *
 * Threads: every function may be called from any thread; an account has
 * its own lock, taken after the arena's and never before it.
 */
#ifndef CEP_ALLOC_ACCOUNT_H
#define CEP_ALLOC_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

/* What memory is for. Pinned host regions are host memory: they are
 * counted and shown, but no device limit applies to them. */
#define ALLOC_ROLE_LIST(X)                                \
	X(WEIGHTS, "weights")                             \
	X(ACTIVATIONS, "activations")                     \
	X(WORKSPACE, "workspace")                         \
	X(GRAPHS, "graphs")                               \
	X(KV_CACHE, "kv_cache")                           \
	X(PINNED, "pinned")

enum alloc_role {
#define ALLOC__ROLE_ENUM(name, text) ALLOC_ROLE_##name,
	ALLOC_ROLE_LIST(ALLOC__ROLE_ENUM)
#undef ALLOC__ROLE_ENUM
	ALLOC_ROLE_COUNT
};

/* "weights", "activations", ...; "unknown" outside the enum. */
const char *alloc_role_name(enum alloc_role role);

/* Whom memory is charged to. client 0 is the daemon itself, which owns the
 * shared weights (alloc/weights.h); session 0 is the client as a whole
 * (what is not tied to one of its sessions, such as its regions). Session
 * ids are unique within their client. */
struct alloc_owner {
	uint64_t client;
	uint64_t session;
};

#define ALLOC_OWNER_SHARED ((struct alloc_owner){ 0, 0 })

/* Bytes in use by one owner (or in total), per role and summed. */
struct account_usage {
	uint64_t current[ALLOC_ROLE_COUNT]; /* bytes now, per role */
	uint64_t peak[ALLOC_ROLE_COUNT];    /* highest current[] seen, per role */
	uint64_t device;                    /* bytes now of every role but PINNED */
	uint64_t device_peak;               /* highest device seen */
	uint64_t limit;                     /* device bytes allowed; 0: no limit */
};

/* One line of `cudaepctl mem`: a client (owner.session == 0, its sessions
 * summed) or one of its sessions. */
struct account_entry {
	struct alloc_owner owner;
	struct account_usage usage;
};

/* One user's line of `cudaepctl mem`: the clients bound to uid, summed. */
struct account_uid_entry {
	uint32_t uid;
	uint32_t clients;           /* client entries bound to it now */
	struct account_usage usage; /* limit: the per-uid one */
};

struct account;

/* Makes an empty account with no limits. On success *out is the caller's,
 * freed with account_free(). Fails only with CEP_ENOMEM. */
int account_new(struct account **out);

/* Frees the account, whatever is still charged. Accepts NULL. */
void account_free(struct account *acc);

/* Sets the global device-memory limit in bytes (0: none). A limit below
 * what is in use makes further charges fail; nothing already charged is
 * taken back. */
void account_limit_set_global(struct account *acc, uint64_t bytes);

/* Sets the device-memory limit of a session (owner.session != 0) or of a
 * client (owner.session == 0) in bytes, 0 for none. Returns 0, CEP_EINVAL
 * for the daemon's own owner (client 0), or CEP_ENOMEM. */
int account_limit_set(struct account *acc, struct alloc_owner owner, uint64_t bytes);

/* Sets the limit in bytes that the clients of each uid have together, on
 * device and pinned memory (0: none). Like the global limit, a limit below
 * what a uid uses makes its further charges fail and takes nothing back. */
void account_limit_set_uid(struct account *acc, uint64_t bytes);

/*
 * Binds client (owner.session == 0 of it; client != 0) to the user uid:
 * from now on its charges, and what it holds already, count for uid too.
 * A client belongs to one uid for life: binding it again to the same uid
 * does nothing, to another fails with CEP_EINVAL. The binding ends when
 * the client is forgotten (account_forget()). Returns 0, CEP_EINVAL or
 * CEP_ENOMEM.
 */
int account_client_uid_set(struct account *acc, uint64_t client, uint32_t uid);

/*
 * Charges bytes of role to owner: the session, its client, its client's
 * uid (when bound) and the total. Checks the session's limit, then the
 * client's, then the uid's, then the global one, and fails with CEP_ELIMIT
 * (charging nothing) at the first that would be exceeded; the message
 * reads e.g. "session 7 memory limit 1073741824 bytes: asked 4194304, in
 * use 1071644672" (or "client 3 ...", "uid 1000 ...", "global ..."). The
 * session, client and global limits are on device roles only; the uid's
 * counts PINNED too. Fails with CEP_EINVAL for a role outside the enum,
 * CEP_ENOMEM when a new owner's entry cannot be made.
 */
int account_charge(struct account *acc, struct alloc_owner owner,
		   enum alloc_role role, uint64_t bytes);

/* Takes back a charge made with account_charge() with the same owner, role
 * and bytes. Cannot fail; an uncharge of more than is charged (a caller's
 * bug) stops at zero. */
void account_uncharge(struct account *acc, struct alloc_owner owner,
		      enum alloc_role role, uint64_t bytes);

/* Copies the usage of a session or a client (session 0) into *out. Returns
 * 0, or CEP_ENOENT when nothing was ever charged to it and no limit set. */
int account_usage_get(struct account *acc, struct alloc_owner owner,
		      struct account_usage *out);

/* Copies the totals over every owner (limit: the global one) into *out. */
void account_totals(struct account *acc, struct account_usage *out);

/* Copies what the clients bound to uid use together (limit: the per-uid
 * one) into *out. Returns 0, or CEP_ENOENT when no client is bound to it
 * and it holds nothing. */
int account_uid_usage_get(struct account *acc, uint32_t uid, struct account_usage *out);

/* How many charges the per-uid limit has refused since the account was
 * made. */
uint64_t account_uid_refusals(struct account *acc);

/* Forgets a session (owner.session != 0), or a client and all its sessions
 * (owner.session == 0), with their limits and peaks, once their memory has
 * been given back; a forgotten client leaves its uid, whose entry goes
 * with its last client. Returns 0, CEP_ENOENT when unknown, or CEP_EBUSY
 * (and forgets nothing) while any of it is still charged. */
int account_forget(struct account *acc, struct alloc_owner owner);

/* Calls fn once per entry, sorted by client then session (each client
 * before its sessions), with copies taken at one instant under the lock;
 * fn runs without the lock held and may call into the account. Returns 0,
 * or CEP_ENOMEM (fn not called). */
int account_visit(struct account *acc,
		  void (*fn)(void *arg, const struct account_entry *entry), void *arg);

/* The same for the uids with a bound client or memory held, sorted by
 * uid. Returns 0, or CEP_ENOMEM (fn not called). */
int account_uid_visit(struct account *acc,
		      void (*fn)(void *arg, const struct account_uid_entry *entry),
		      void *arg);

#endif
