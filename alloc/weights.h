/*
 * weights.h — shared weights: each initializer is uploaded once per
 * distinct content and shared by every session that loads it.
 *
 * The key of an initializer is its content: XXH3-64 over its bytes, its
 * element type and its shape, plus its length. On a hash hit the stored
 * bytes are compared with the new ones, so a hash collision yields two
 * entries, never wrong weights. Entries are reference counted across
 * sessions and clients; releasing the last reference frees the device
 * block.
 *
 * Charging: a shared copy belongs to no session, so it is charged once, to
 * the daemon's own owner (ALLOC_OWNER_SHARED) under ALLOC_ROLE_WEIGHTS.
 * Two clients loading one model therefore map its weights once, and the
 * global limit counts them once; client and session limits do not count
 * shared weights.
 *
 * Threads: every function may be called from any thread. Lookup, upload
 * and comparison run under the registry's lock (taken before the arena's),
 * so a concurrent acquirer of the same content waits and then shares the
 * finished copy.
 */
#ifndef CEP_ALLOC_WEIGHTS_H
#define CEP_ALLOC_WEIGHTS_H

#include "alloc/arena.h"
#include "client/cudaep.h"

#include <stddef.h>
#include <stdint.h>

/* An initializer as the model holds it, in host memory. */
struct weights_desc {
	const void *data;     /* (bytes) the tensor's raw little-endian bytes */
	size_t bytes;         /* may be 0 for an empty tensor */
	cep_dtype dtype;
	int rank;             /* 0 ..  CEP_MAX_RANK */
	const int64_t *shape; /* (rank); may be NULL when rank is 0 */
};

/* How bytes reach the device and are read back for the collision check.
 * Each returns 0 or a negative CEP_E* code. NULL hooks, or a NULL member,
 * mean the arena's memory is addressable by the process (the host
 * provider): memcpy and memcmp. */
struct weights_hooks {
	/* Copies len bytes from host src to device address dst and returns
	 * once the copy is complete or ordered before any later use. */
	int (*upload)(void *ctx, uint64_t dst, const void *src, size_t len);
	/* Returns 0 when the len bytes at device address addr equal src, 1
	 * when they differ. */
	int (*compare)(void *ctx, uint64_t addr, const void *src, size_t len);
	void *ctx;
};

struct weights_stats {
	uint64_t entries;    /* distinct contents held now */
	uint64_t bytes;      /* bytes of those (as allocated) */
	uint64_t refs;       /* references held now, over every entry */
	uint64_t hits;       /* acquisitions that shared an existing copy */
	uint64_t misses;     /* acquisitions that uploaded a new copy */
	uint64_t collisions; /* equal keys whose bytes differed */
};

struct weights;
struct weights_entry;

/* Makes an empty registry that allocates from a (which must outlive it).
 * hooks may be NULL; it is copied. On success *out is the caller's, freed
 * with weights_free(). Fails only with CEP_ENOMEM. */
int weights_new(struct arena *a, const struct weights_hooks *hooks,
		struct weights **out);

/* Frees every entry's block, whatever its references, and the registry;
 * for shutdown, after every session is gone. Accepts NULL. */
void weights_free(struct weights *w);

/*
 * Finds the device copy of d's content, or makes one: allocates a block
 * from the arena (charged to ALLOC_OWNER_SHARED as weights) and uploads
 * d->data into it. Either way the caller holds one more reference, *out,
 * given back with weights_release(). Fails with CEP_EINVAL (a bad
 * descriptor), the arena's errors (CEP_ELIMIT, CEP_EDEVMEM, CEP_ENOMEM) or
 * a hook's error; nothing is held then.
 */
int weights_acquire(struct weights *w, const struct weights_desc *d,
		    struct weights_entry **out);

/* Gives back one reference; the last one frees the device block at once,
 * so the caller must know that no queued work still reads it (the daemon
 * releases a session's weights after its last event completed). Accepts
 * NULL. */
void weights_release(struct weights *w, struct weights_entry *e);

/* The entry's device address, its length in bytes, its content hash and
 * its current reference count. */
uint64_t weights_entry_addr(const struct weights_entry *e);
size_t weights_entry_bytes(const struct weights_entry *e);
uint64_t weights_entry_hash(const struct weights_entry *e);
unsigned weights_entry_refs(struct weights *w, const struct weights_entry *e);

/* Copies the registry's gauges and counters into *out. */
void weights_stats_get(struct weights *w, struct weights_stats *out);

#endif
