/*
 * pool.h — the arena's bounded pool of unmapped physical handles
 * (alloc/pool.c). Internal to alloc/: the arena keeps one under its lock.
 *
 * Creating a granule costs about 55 µs on an H200 (cuMemCreate), mapping a
 * pooled one far less, so handles the arena unmaps wait here, up to a bound,
 * to be mapped again; churn then creates nothing after warm-up.
 */
#ifndef CEP_ALLOC_POOL_H
#define CEP_ALLOC_POOL_H

#include "alloc/provider.h"

#include <stddef.h>
#include <stdint.h>

struct arena__pool {
	alloc_handle *handles; /* (cap) stack; the top is handles[n - 1] */
	size_t n;              /* handles kept */
	size_t cap;            /* most handles kept: the bound over the granule */
};

/* Makes an empty pool that keeps at most cap handles (0: keeps none).
 * Returns 0 or CEP_ENOMEM. */
int arena__pool_init(struct arena__pool *pool, size_t cap);

/* Releases every kept handle through p and frees the pool's memory.
 * Accepts NULL. */
void arena__pool_close(struct arena__pool *pool, struct alloc_provider *p);

/* Takes a kept handle into *out and returns 1, or returns 0 when the pool
 * is empty. */
int arena__pool_take(struct arena__pool *pool, alloc_handle *out);

/* Keeps h if there is room, else releases it through p. */
void arena__pool_put(struct arena__pool *pool, struct alloc_provider *p, alloc_handle h);

/* Releases every kept handle through p; the pool stays usable. */
void arena__pool_drain(struct arena__pool *pool, struct alloc_provider *p);

#endif
