/*
 * arena.h — the one device-memory arena of the daemon.
 *
 * The arena reserves one huge range of virtual addresses from a provider
 * (alloc/provider.h) and carves blocks out of it. Blocks are sized in
 * multiples of 256 bytes and found by size class in segregated free lists;
 * freeing a block merges it with free neighbours, so a fully freed arena
 * is one free range again. Requests of a granule or more take whole
 * granules, aligned to a granule, so that freeing them frees granules.
 *
 * Physical memory follows the blocks: a granule is mapped when a block
 * first needs it and stays mapped while any block overlaps it. A wholly free
 * granule stays mapped (cheap to reuse) until arena_tick() finds it idle
 * for the configured period, or arena_trim() is called; unmapped handles go
 * to a bounded pool and are mapped again before any new one is created.
 * When the provider runs out, idle granules are unmapped and their handles
 * reused before the allocation gives up.
 *
 * Every block names its owner and role and is charged to an account
 * (alloc/account.h) if the arena has one, so limits hold at allocation.
 *
 * Memory that queued GPU work may still read is not freed here directly
 * but through the deferred-release queue (alloc/deferred.h).
 *
 * Threads: every function may be called from any thread; the arena has
 * its own lock and runs no threads of its own (the daemon drives idle
 * unmapping by calling arena_tick()).
 */
#ifndef CEP_ALLOC_ARENA_H
#define CEP_ALLOC_ARENA_H

#include "alloc/account.h"
#include "alloc/provider.h"

#include <stddef.h>
#include <stdint.h>

#define ARENA_MIN_ALIGN 256 /* bytes: every block starts and ends on this */

struct arena_config {
	size_t pool_limit; /* bytes of unmapped handles kept for reuse */
	uint64_t idle_ns;  /* ns a wholly free granule stays mapped */
};

/* Fills cfg with the defaults: a 256 MiB pool and 10 s before an idle
 * granule is unmapped. */
void arena_config_init(struct arena_config *cfg);

/* The arena's gauges and counters, defined once: X(field, description).
 * Bytes unless said otherwise; counters count since arena_new(). */
#define ARENA_STAT_LIST(X)                                                     \
	X(reserved, "bytes of address space reserved")                         \
	X(mapped, "bytes of granules mapped")                                  \
	X(used, "bytes in live blocks")                                        \
	X(used_peak, "highest used")                                           \
	X(idle, "bytes of mapped granules that no live block touches")         \
	X(pool_bytes, "bytes of unmapped handles kept for reuse")              \
	X(pool_handles, "unmapped handles kept for reuse")                     \
	X(pool_limit, "most bytes the pool keeps")                             \
	X(pool_hits, "granules mapped with a pooled handle")                   \
	X(pool_misses, "granules mapped with a newly created handle")          \
	X(creates, "physical handles created")                                 \
	X(releases, "physical handles released")                               \
	X(maps, "granules mapped")                                             \
	X(unmaps, "granules unmapped")                                         \
	X(reclaims, "idle granules unmapped because the provider ran out")     \
	X(allocs, "blocks allocated")                                          \
	X(frees, "blocks freed")                                               \
	X(live_blocks, "blocks allocated and not yet freed")                   \
	X(failures, "allocations refused")                                     \
	X(free_ranges, "free address ranges")                                  \
	X(largest_free, "bytes of the largest free address range")

struct arena_stats {
#define ARENA__STAT_FIELD(name, text) uint64_t name;
	ARENA_STAT_LIST(ARENA__STAT_FIELD)
#undef ARENA__STAT_FIELD
};

struct arena;
struct arena_block;

/*
 * Makes an arena over prov: reserves its address range at once (on a GPU
 * the provider walks its reservation ladder). acc, if not NULL, is charged
 * for every block. cfg may be NULL (defaults). prov and acc stay the
 * caller's and must outlive the arena. On success *out is the caller's,
 * freed with arena_free(). Fails with the provider's error (CEP_EDEVMEM
 * when no reservation could be made) or CEP_ENOMEM.
 */
int arena_new(struct alloc_provider *prov, struct account *acc,
	      const struct arena_config *cfg, struct arena **out);

/* Unmaps and releases all physical memory, gives the reservation back and
 * frees the arena. Blocks still allocated are freed with it (and their
 * charges taken back); their handles must not be used afterwards. Accepts
 * NULL. */
void arena_free(struct arena *a);

/*
 * Allocates a block of at least size bytes whose address is a multiple of
 * align (a power of two; 0 means ARENA_MIN_ALIGN, and less is raised to it)
 * and charges it to owner under role. Its memory is mapped and readable and
 * writable by the device (on the host provider, by the process); its
 * contents are unspecified. On success *out is the caller's until
 * arena_block_free() or deferred_push(). Fails, with the arena unchanged,
 * with CEP_EINVAL (size 0, align not a power of two), CEP_ELIMIT (a limit
 * of the account; the message says which), CEP_EDEVMEM (the provider is
 * out of memory or the address range has no room; the message says which
 * and how much was asked) or CEP_ENOMEM.
 */
int arena_block_alloc(struct arena *a, size_t size, size_t align,
		      struct alloc_owner owner, enum alloc_role role,
		      struct arena_block **out);

/* Frees b (merging it with free neighbours) and takes back its charge. Its
 * granules stay mapped until they are idle long enough or trimmed. Only for
 * memory no queued GPU work can still read; otherwise use deferred_push().
 * Accepts NULL. */
void arena_block_free(struct arena *a, struct arena_block *b);

/* The live block that starts at device address addr, or NULL: for callers
 * that hand out bare pointers (the backend's mem_free takes one). */
struct arena_block *arena_block_lookup(struct arena *a, uint64_t addr);

/* The block's device address, its usable size in bytes (the request
 * rounded up to 256, or to granules for a granule or more), its owner and
 * its role. Valid until the block is freed. */
uint64_t arena_block_addr(const struct arena_block *b);
size_t arena_block_size(const struct arena_block *b);
struct alloc_owner arena_block_owner(const struct arena_block *b);
enum alloc_role arena_block_role(const struct arena_block *b);

/* Bytes per granule of the arena's provider. */
size_t arena_granule(const struct arena *a);

#define ARENA_TRIM_POOL 1u /* also release the pooled handles */

/* Unmaps every granule that no live block touches (their handles go to the
 * pool while it has room) and, with ARENA_TRIM_POOL, releases the pool too:
 * what `cudaepctl trim` does. Afterwards mapped bytes equal the granules
 * that live blocks touch. Returns 0, or the provider's first error (what
 * failed stays mapped). */
int arena_trim(struct arena *a, unsigned flags);

/* Unmaps the granules that have been idle for the configured period as of
 * now_ns (any monotonic clock, the same on every call). A granule counts as
 * idle from the first tick that sees it wholly free, so it is unmapped
 * between one and two periods after its last block is freed, if ticks come
 * once per period. Returns 0 or the provider's first error. */
int arena_tick(struct arena *a, uint64_t now_ns);

/* Copies the arena's gauges and counters into *out. */
void arena_stats_get(struct arena *a, struct arena_stats *out);

#endif
