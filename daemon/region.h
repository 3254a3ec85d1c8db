/*
 * region.h — shared-memory regions: memfds a client created, sealed against
 * shrinking and growing, and passed over the socket. The daemon maps each
 * one, keeps its fd and registers the mapping with the backend (pinned for
 * DMA on a GPU, charged to the client as pinned host memory), so that
 * inputs are copied straight from it to the device and outputs straight
 * back. Tensors are slices of regions, bounds-checked here.
 *
 * A run in flight holds the regions it reads and writes: a region released
 * meanwhile (by request, or with its connection) leaves its table at once
 * but stays mapped and pinned until its last hold is dropped.
 *
 * A region_table holds one connection's regions; a region_pool, shared by
 * every table of a server, holds the limits, the totals and the id counter.
 * Both are single-threaded (the event loop's).
 */
#ifndef CEPD_REGION_H
#define CEPD_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/cep_limits.h"
#include "daemon/idtable.h"
#include "common/stats.h"
#include "daemon/handover.h"

struct region {
	uint64_t id;                 /* global, never reused; first (idtable.h) */
	int fd;                      /* the client's memfd, owned */
	void *addr;                  /* MAP_SHARED mapping of size bytes */
	uint64_t size;               /* bytes */
	char name[CEP_MAX_OBJ_NAME]; /* the client's label, may be "" */
	uint32_t holds;              /* runs in flight that use it */
	bool released;               /* out of its table, destroyed with its
	                              * last hold */
	bool pinned;                 /* registered with the pool's backend */
};

struct region_limits {
	uint32_t max_per_client;     /* regions per connection */
	uint64_t bytes_per_client;   /* bytes per connection */
	uint64_t bytes_total;        /* bytes, all connections */
};

struct backend;
struct account;

struct region_pool {
	struct region_limits limits;
	struct stats *stats;         /* regions, region_bytes, fds_closed... */
	struct backend *backend;     /* pins regions when set; outlives them */
	struct account *account;     /* charged for them (ALLOC_ROLE_PINNED) when
	                              * set; outlives them */
	uint64_t next_id;            /* the id the next region gets */
	uint32_t count;              /* regions held by all tables */
	uint64_t bytes;              /* their bytes */
	uint64_t bytes_peak;         /* most bytes ever held at once */
};

struct region_table {
	struct region_pool *pool;
	uint64_t client_id;          /* whose account entry regions charge */
	struct idtable ids;          /* its struct region, by id */
	uint32_t released_held;      /* released regions still held by runs */
	uint64_t bytes;              /* bytes of these regions */
	uint64_t bytes_peak;         /* most bytes this table held at once */
};

/* Initializes pool (caller memory) with the limits; stats must outlive it.
 * Ids start at 1. backend and account start NULL (regions are neither
 * pinned nor charged); the server sets them. Nothing to close. */
void region_pool_init(struct region_pool *pool,
		      const struct region_limits *limits, struct stats *stats);

/* Initializes an empty table of pool. Release with region_table_close(). */
void region_table_init(struct region_table *t, struct region_pool *pool);

/* Releases every region of t (unpins, unmaps, closes the fds) and frees
 * t's array. No region may be held. Accepts NULL. */
void region_table_close(struct region_table *t);

/*
 * Registers fd as a region of size bytes named name (NULL: ""). Takes the
 * fd in every case: it is kept by the new region or closed. The mapping is
 * registered with the pool's backend and charged to t's client as pinned
 * memory. On success *out is the region, owned by t. Fails with CEP_EINVAL
 * (size 0, not a regular file, size differs from the file's),
 * CEP_EUNSEALED (F_SEAL_SHRINK or F_SEAL_GROW missing), CEP_ELIMIT (count
 * or byte limits), CEP_EACCES or another system error from mmap, the
 * backend's error when it cannot pin the pages, CEP_ENOMEM; each with a
 * cep__set_error() message that names the sizes or the limit.
 */
int region_table_register(struct region_table *t, int fd, uint64_t size,
			  const char *name, struct region **out);

/*
 * As region_table_register(), for a region a previous image of the daemon
 * handed over (daemon/handover.h): it keeps its id, which must be below
 * the pool's next_id (set from the handover first) and above every id in
 * t (CEP_EINVAL otherwise). Takes fd in every case.
 */
int region_table_adopt(struct region_table *t, int fd, uint64_t size,
		       const char *name, uint64_t id, struct region **out);

/* Releases region id of t: it leaves the table now (the id is no longer
 * found), and is unpinned, unmapped and closed now or, while runs hold it,
 * when the last of them drops its hold. Returns 0, or CEP_ENOENT with the
 * message "no region ID on this connection". */
int region_table_release(struct region_table *t, uint64_t id);

/* Takes a hold on r (of t) for a run in flight: r stays mapped and pinned
 * until region_hold_drop(). */
void region_hold(struct region *r);

/* Drops a hold on r, a region of t; a region released meanwhile goes with
 * its last hold. */
void region_hold_drop(struct region_table *t, struct region *r);

/* Region id of t, or NULL. Never sets an error. */
struct region *region_table_find(const struct region_table *t, uint64_t id);

/* As region_table_find(), failing with CEP_ENOENT and its message. */
int region_table_get(const struct region_table *t, uint64_t id,
		     struct region **out);

/*
 * Checks that [offset, offset + bytes) lies in a region of size bytes
 * without overflowing. Returns 0, or CEP_EBOUNDS with a message naming
 * offset, bytes and size. An empty slice at offset <= size is inside.
 */
int region_span_check(uint64_t size, uint64_t offset, uint64_t bytes);

/* region_span_check() for slice of r, naming r's id in the message. On
 * success *ptr (if not NULL) is the slice's address in the daemon. */
int region_slice_check(const struct region *r, uint64_t offset,
		       uint64_t bytes, void **ptr);

/* ---------------------------------------------------------------- handover */

/* Puts every region of t (id, memfd, size, name) into hc. Returns 0 or
 * CEP_ENOMEM (b remembers it). */
int region_save(const struct region_table *t, struct handover_build *b, HvClient *hc);

/* Takes region hr of handover h into t with its id (region_table_adopt()
 * checks its memfd). Returns 0 or an error saying why it could not. */
int region_restore(struct region_table *t, struct handover *h, const HvRegion *hr);

#endif
