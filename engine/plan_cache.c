/*
 * plan_cache.c — a session's plans kept for reuse (engine/plan.h): a
 * bounded LRU cache keyed by the input shapes' signature and, for plans
 * built from input values, those values. Lookups never allocate; a plan
 * that runs have in flight is never evicted.
 */
#include "engine/plan.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int plan_cache_init(struct plan_cache *c, int cap)
{
	memset(c, 0, sizeof(*c));
	if (cap < 1)
		cap = 1;
	c->plans = calloc((size_t)cap, sizeof(*c->plans));
	if (!c->plans)
		return cep__set_error(CEP_ENOMEM, NULL);
	c->cap = cap;
	return 0;
}

void plan_cache_close(struct plan_cache *c, struct backend *be)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		plan_free(c->plans[i], be);
	free(c->plans);
	memset(c, 0, sizeof(*c));
}

/* Whether the run's inputs in in_data hold the values p was built for. */
static bool keys_match(const struct plan *p, const void *const *in_data)
{
	int k;

	for (k = 0; k < p->n_keys; k++) {
		const struct plan_key *key = &p->keys[k];

		if (key->bytes == 0)
			continue;
		if (!in_data || !in_data[key->input] ||
		    memcmp(p->key_data + key->offset, in_data[key->input], key->bytes) != 0)
			return false;
	}
	return true;
}

struct plan *plan_cache_find(struct plan_cache *c, const int64_t *sig, int len,
			     uint64_t hash, const void *const *in_data)
{
	int i;

	c->clock++;
	for (i = 0; i < c->n; i++) {
		struct plan *p = c->plans[i];

		if (p->hash == hash && p->sig_len == len &&
		    memcmp(p->sig, sig, (size_t)len * sizeof(*sig)) == 0 &&
		    keys_match(p, in_data)) {
			p->last_used = c->clock;
			c->hits++;
			return p;
		}
	}
	c->misses++;
	return NULL;
}

/* A plan in flight stays: queued work still reads its block and launches
 * its calls, and its completion still names its nodes. */
bool plan_cache_evict(struct plan_cache *c, struct backend *be)
{
	int lru = -1, i;

	for (i = 0; i < c->n; i++) {
		if (atomic_load_explicit(&c->plans[i]->inflight, memory_order_acquire) != 0)
			continue;
		if (lru < 0 || c->plans[i]->last_used < c->plans[lru]->last_used)
			lru = i;
	}
	if (lru < 0)
		return false;
	plan_free(c->plans[lru], be);
	c->plans[lru] = c->plans[--c->n];
	c->evictions++;
	return true;
}

int plan_cache_insert(struct plan_cache *c, struct plan *p, struct backend *be)
{
	if (c->n == c->cap && !plan_cache_evict(c, be))
		return cep__set_error(CEP_EAGAIN, "each of the %d plans the session keeps is in "
				      "use by a run in flight", c->cap);
	p->last_used = ++c->clock;
	c->plans[c->n++] = p;
	return 0;
}
