/*
 * weights.c — the content-addressed registry of shared weights
 * (alloc/weights.h).
 *
 * Entries sit in a chained hash table keyed by the content hash; a chain
 * also holds entries whose hashes differ only above the bucket bits, and
 * entries whose keys collided but whose bytes differ. The hash is computed
 * before the lock is taken, since it reads every byte of the tensor.
 */
#include "alloc/weights.h"
#include "common/error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct weights_entry {
	struct weights_entry *next;    /* in its bucket */
	struct arena_block *block;     /* the device copy */
	uint64_t hash;                 /* XXH3-64 of bytes, dtype and shape */
	size_t bytes;
	cep_dtype dtype;
	int rank;
	int64_t shape[CEP_MAX_RANK];   /* (rank) */
	unsigned refs;
};

struct weights {
	pthread_mutex_t lock;
	struct arena *arena;           /* the caller's */
	struct weights_hooks hooks;
	struct weights_entry **buckets; /* (n_buckets) */
	size_t n_buckets;              /* a power of two */
	struct weights_stats st;
};

/* What the hash covers besides the bytes, laid out without padding. */
struct weights_key {
	uint64_t bytes;
	int64_t dtype;
	int64_t rank;
	int64_t shape[CEP_MAX_RANK];
};

static int weights_upload_host(void *ctx, uint64_t dst, const void *src, size_t len)
{
	memcpy((void *)(uintptr_t)dst, src, len);
	return 0;
}

static int weights_compare_host(void *ctx, uint64_t addr, const void *src, size_t len)
{
	return memcmp((const void *)(uintptr_t)addr, src, len) != 0;
}

int weights_new(struct arena *a, const struct weights_hooks *hooks,
		struct weights **out)
{
	struct weights *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return CEP_ENOMEM;
	w->n_buckets = 256;
	w->buckets = calloc(w->n_buckets, sizeof(*w->buckets));
	if (w->buckets == NULL) {
		free(w);
		return CEP_ENOMEM;
	}
	if (hooks != NULL)
		w->hooks = *hooks;
	if (w->hooks.upload == NULL)
		w->hooks.upload = weights_upload_host;
	if (w->hooks.compare == NULL)
		w->hooks.compare = weights_compare_host;
	w->arena = a;
	pthread_mutex_init(&w->lock, NULL);
	*out = w;
	return 0;
}

void weights_free(struct weights *w)
{
	size_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n_buckets; i++) {
		struct weights_entry *e = w->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			arena_block_free(w->arena, e->block);
			free(e);
		}
	}
	free(w->buckets);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* Doubles the table; a failure only leaves chains longer. */
static void weights_grow(struct weights *w)
{
	size_t nb = w->n_buckets * 2, i;
	struct weights_entry **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return;
	for (i = 0; i < w->n_buckets; i++) {
		struct weights_entry *e = w->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(w->buckets);
	w->buckets = b;
	w->n_buckets = nb;
}

static uint64_t weights_hash(const struct weights_desc *d)
{
	struct weights_key k;
	uint64_t h = XXH3_64bits(d->data, d->bytes);

	memset(&k, 0, sizeof(k));
	k.bytes = d->bytes;
	k.dtype = d->dtype;
	k.rank = d->rank;
	if (d->rank > 0)
		memcpy(k.shape, d->shape, (size_t)d->rank * sizeof(k.shape[0]));
	return XXH3_64bits_withSeed(&k, sizeof(k), h);
}

static int weights_same_key(const struct weights_entry *e, uint64_t hash,
			    const struct weights_desc *d)
{
	return e->hash == hash && e->bytes == d->bytes && e->dtype == d->dtype &&
	       e->rank == d->rank &&
	       (d->rank == 0 || memcmp(e->shape, d->shape, (size_t)d->rank * sizeof(e->shape[0])) == 0);
}

static int weights_desc_check(const struct weights_desc *d)
{
	int i;

	if (d->rank < 0 || d->rank > CEP_MAX_RANK)
		return cep__set_error(CEP_EINVAL, "initializer of rank %d (at most %d)",
				      d->rank, CEP_MAX_RANK);
	if ((d->rank > 0 && d->shape == NULL) || (d->bytes > 0 && d->data == NULL))
		return cep__set_error(CEP_EINVAL, "initializer without shape or data");
	if (cep_dtype_size(d->dtype) == 0)
		return cep__set_error(CEP_EINVAL, "initializer of element type %d",
				      (int)d->dtype);
	for (i = 0; i < d->rank; i++)
		if (d->shape[i] < 0)
			return cep__set_error(CEP_EINVAL, "initializer dimension %d is %lld",
					      i, (long long)d->shape[i]);
	return 0;
}

int weights_acquire(struct weights *w, const struct weights_desc *d,
		    struct weights_entry **out)
{
	struct weights_entry *e = NULL, **chain;
	struct arena_block *b = NULL;
	uint64_t hash;
	int ret, same;

	ret = weights_desc_check(d);
	if (ret)
		return ret;
	hash = weights_hash(d);
	pthread_mutex_lock(&w->lock);
	chain = &w->buckets[hash & (w->n_buckets - 1)];
	for (e = *chain; e != NULL; e = e->next) {
		if (!weights_same_key(e, hash, d))
			continue;
		same = d->bytes == 0 ? 0 : w->hooks.compare(w->hooks.ctx, arena_block_addr(e->block),
							     d->data, d->bytes);
		if (same < 0) {
			ret = same;
			goto out;
		}
		if (same == 0) {
			e->refs++;
			w->st.refs++;
			w->st.hits++;
			*out = e;
			e = NULL;
			ret = 0;
			goto out;
		}
		w->st.collisions++;
	}
	ret = CEP_ENOMEM;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		goto out;
	/* An empty tensor still gets an address of its own. */
	ret = arena_block_alloc(w->arena, d->bytes ? d->bytes : 1, 0, ALLOC_OWNER_SHARED,
				ALLOC_ROLE_WEIGHTS, &b);
	if (ret)
		goto out;
	if (d->bytes > 0) {
		ret = w->hooks.upload(w->hooks.ctx, arena_block_addr(b), d->data, d->bytes);
		if (ret)
			goto out;
	}
	e->block = b;
	e->hash = hash;
	e->bytes = d->bytes;
	e->dtype = d->dtype;
	e->rank = d->rank;
	if (d->rank > 0)
		memcpy(e->shape, d->shape, (size_t)d->rank * sizeof(e->shape[0]));
	e->refs = 1;
	if (w->st.entries >= 2 * w->n_buckets) {
		weights_grow(w);
		chain = &w->buckets[hash & (w->n_buckets - 1)];
	}
	e->next = *chain;
	*chain = e;
	w->st.entries++;
	w->st.bytes += arena_block_size(b);
	w->st.refs++;
	w->st.misses++;
	*out = e;
	e = NULL;
	b = NULL;
	ret = 0;
out:
	pthread_mutex_unlock(&w->lock);
	arena_block_free(w->arena, b);
	free(e);
	return ret;
}

void weights_release(struct weights *w, struct weights_entry *e)
{
	struct weights_entry **pp;
	struct arena_block *b = NULL;

	if (e == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->st.refs--;
	if (--e->refs > 0)
		goto out;
	for (pp = &w->buckets[e->hash & (w->n_buckets - 1)]; *pp != e; pp = &(*pp)->next)
		;
	*pp = e->next;
	b = e->block;
	w->st.entries--;
	w->st.bytes -= arena_block_size(b);
	free(e);
out:
	pthread_mutex_unlock(&w->lock);
	arena_block_free(w->arena, b);
}

uint64_t weights_entry_addr(const struct weights_entry *e)
{
	return arena_block_addr(e->block);
}

size_t weights_entry_bytes(const struct weights_entry *e)
{
	return e->bytes;
}

uint64_t weights_entry_hash(const struct weights_entry *e)
{
	return e->hash;
}

unsigned weights_entry_refs(struct weights *w, const struct weights_entry *e)
{
	unsigned refs;

	pthread_mutex_lock(&w->lock);
	refs = e->refs;
	pthread_mutex_unlock(&w->lock);
	return refs;
}

void weights_stats_get(struct weights *w, struct weights_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	pthread_mutex_unlock(&w->lock);
}
