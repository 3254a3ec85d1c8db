/*
 * pool.c — the bounded pool of unmapped physical handles (alloc/pool.h).
 * A plain stack: the most recently unmapped handle is mapped first, which
 * is as good as any order, since every handle is one whole granule.
 */
#include "alloc/pool.h"
#include "client/cudaep.h"

#include <stdlib.h>

int arena__pool_init(struct arena__pool *pool, size_t cap)
{
	pool->n = 0;
	pool->cap = cap;
	pool->handles = NULL;
	if (cap == 0)
		return 0;
	/* Allocated up front so that putting a handle back never fails. */
	pool->handles = malloc(cap * sizeof(*pool->handles));
	return pool->handles != NULL ? 0 : CEP_ENOMEM;
}

void arena__pool_close(struct arena__pool *pool, struct alloc_provider *p)
{
	if (pool == NULL)
		return;
	arena__pool_drain(pool, p);
	free(pool->handles);
	pool->handles = NULL;
	pool->cap = 0;
}

int arena__pool_take(struct arena__pool *pool, alloc_handle *out)
{
	if (pool->n == 0)
		return 0;
	*out = pool->handles[--pool->n];
	return 1;
}

void arena__pool_put(struct arena__pool *pool, struct alloc_provider *p, alloc_handle h)
{
	if (pool->n < pool->cap)
		pool->handles[pool->n++] = h;
	else
		alloc_provider_release(p, h);
}

void arena__pool_drain(struct arena__pool *pool, struct alloc_provider *p)
{
	while (pool->n > 0)
		alloc_provider_release(p, pool->handles[--pool->n]);
}
