/*
 * provider.h — the physical-memory provider under the arena (alloc/arena.c).
 *
 * A provider hands out three things: one large reservation of virtual
 * address space, physical handles of exactly one granule each, and the
 * mapping of handles at addresses inside the reservation. The arena's logic
 * runs over this interface only, so it is tested in CI over the host
 * provider (mmap and a memfd) and runs on a GPU over the CUDA provider
 * (cuMemAddressReserve, cuMemCreate, cuMemMap).
 *
 * Like ggml's backend interface, a provider is a table of function pointers
 * plus a context pointer. Callers go through the alloc_provider_* wrappers,
 * which keep the counters that make "churn creates nothing" provable.
 *
 * Threads: a provider is not locked; its one user (an arena) serializes
 * calls under its own lock.
 */
#ifndef CEP_ALLOC_PROVIDER_H
#define CEP_ALLOC_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

struct cuda_driver;

/* A physical handle of one granule (a CUmemGenericAllocationHandle on a GPU,
 * a slot of the memfd on the host). Never 0 when valid. */
typedef uint64_t alloc_handle;

/* The operations of one implementation. Every int-returning operation
 * returns 0 or a negative CEP_E* code and records a message with
 * cep__set_error(); on failure it leaves nothing half done. */
struct alloc_provider_i {
	/* Reserves the address range the arena carves from, aligned to a
	 * granule: *base and *bytes (a multiple of the granule) on success. */
	int (*reserve)(void *ctx, uint64_t *base, size_t *bytes);
	/* Gives the reservation back; nothing may be mapped in it any more. */
	void (*unreserve)(void *ctx, uint64_t base, size_t bytes);
	/* Creates one granule of physical memory. CEP_EDEVMEM when the
	 * device (or the host provider's capacity) is exhausted. */
	int (*create)(void *ctx, alloc_handle *out);
	/* Frees a handle created by create(); it must not be mapped. */
	void (*release)(void *ctx, alloc_handle h);
	/* Maps n handles at consecutive granules from va (granule aligned,
	 * inside the reservation, currently unmapped) and makes them readable
	 * and writable by the device. */
	int (*map)(void *ctx, uint64_t va, const alloc_handle *handles, size_t n);
	/* Unmaps n granules from va; their handles stay valid. */
	int (*unmap)(void *ctx, uint64_t va, size_t n);
	/* Frees the context (and whatever the implementation owns). */
	void (*free)(void *ctx);
};

/* What a provider has done since it was made: the counters behind the
 * "no new cuMemCreate after warm-up" checks. */
struct alloc_provider_counters {
	uint64_t creates;   /* handles created */
	uint64_t releases;  /* handles released */
	uint64_t maps;      /* granules mapped */
	uint64_t unmaps;    /* granules unmapped */
	uint64_t failures;  /* operations that returned an error */
};

struct alloc_provider {
	struct alloc_provider_i iface;
	void *context;                           /* the implementation's */
	const char *name;                        /* "host" or "cuda" */
	size_t granule;                          /* bytes per handle; a power of two */
	struct alloc_provider_counters counters; /* kept by the wrappers below */
};

/* ------------------------------------------------------------ the wrappers */

/* Each calls the implementation's operation and counts it; they return what
 * the operation returns. */
int alloc_provider_reserve(struct alloc_provider *p, uint64_t *base, size_t *bytes);
void alloc_provider_unreserve(struct alloc_provider *p, uint64_t base, size_t bytes);
int alloc_provider_create(struct alloc_provider *p, alloc_handle *out);
void alloc_provider_release(struct alloc_provider *p, alloc_handle h);
int alloc_provider_map(struct alloc_provider *p, uint64_t va,
		       const alloc_handle *handles, size_t n);
int alloc_provider_unmap(struct alloc_provider *p, uint64_t va, size_t n);

/* Frees the provider and its context. Handles and the reservation must have
 * been given back first (an arena does that in arena_free()). Accepts NULL. */
void alloc_provider_free(struct alloc_provider *p);

/* -------------------------------------------------------------------- host */

struct alloc_provider_host_config {
	size_t granule;  /* bytes per handle, a power of two >= the page size */
	size_t reserve;  /* bytes of address space to reserve */
	size_t capacity; /* bytes of physical memory it hands out at most */
};

/* Fills cfg with the defaults: 2 MiB granules (as on the H200), a 64 GiB
 * reservation and a capacity of 16 GiB (the memfd is sparse: capacity costs
 * nothing until granules are created). */
void alloc_provider_host_config_init(struct alloc_provider_host_config *cfg);

/*
 * Makes a host provider: the reservation is an mmap(PROT_NONE) range,
 * physical memory is one memfd whose granule-sized slots are the handles,
 * and mapping puts a slot at an address with MAP_FIXED. Contents survive an
 * unmap and a later map of the same handle, as device memory does; a handle
 * released and created again reads as zeros. cfg may be NULL (defaults).
 * On success *out is the caller's, freed with alloc_provider_free(). Fails
 * with CEP_EINVAL for a granule that is not a power-of-two multiple of the
 * page size, or with the memfd's system error.
 */
int alloc_provider_host_new(const struct alloc_provider_host_config *cfg,
			    struct alloc_provider **out);

/* -------------------------------------------------------------------- cuda */

/*
 * Makes a CUDA provider over device ordinal `device`, with the driver table
 * drv (gpu/cuda/cuda_driver.h; it must outlive the provider). It checks that the
 * device supports virtual memory management (CEP_ENOTSUP with a message that
 * names the device and the driver's answer otherwise: never a silent
 * fallback), retains the device's primary context for its own life and
 * makes it current on the calling thread, and uses the device's minimum
 * allocation granularity (2 MiB on an H200). reserve() walks a ladder: it
 * asks for max(16 x device memory, 1 TiB) and halves down to a 64 GiB floor.
 * Every operation makes the primary context current on the calling thread,
 * so the provider may be used from any thread (one at a time).
 * On success *out is the caller's, freed with alloc_provider_free().
 */
int alloc_provider_cuda_new(const struct cuda_driver *drv, int device,
			    struct alloc_provider **out);

#endif
