/*
 * arena.c — the device-memory arena (alloc/arena.h): blocks carved from
 * one reservation, physical granules mapped under them on demand.
 *
 * Two structures, both on the host (device memory cannot hold headers):
 *
 *   blocks    a doubly linked list in address order that tiles the whole
 *             reservation, each block used or free; free blocks also sit in
 *             one of ARENA_BINS size-class lists (TLSF-style: four classes
 *             per power of two) with a bitmap of the non-empty ones.
 *   granules  a table indexed by granule number, grown on demand up to the
 *             highest granule ever mapped: the handle mapped there and how
 *             many live blocks touch it. Mapped granules no block touches
 *             are "idle" and sit on a list, waiting for a tick or a trim.
 *
 * An allocation first charges the account, then finds a free block, maps
 * whatever granules under it are unmapped (pool first, then new handles,
 * reclaiming idle granules if the provider runs dry) and only then changes
 * the block list, so every failure leaves the arena as it was.
 */
#include "alloc/arena.h"
#include "alloc/pool.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BINS 224               /* size classes up to 2^63 bytes */
#define ARENA_NONE ((size_t)-1)      /* no granule */
#define ARENA_UNSTAMPED UINT64_MAX   /* idle, but no tick has seen it yet */
#define ARENA_SPARE_MAX 256          /* block nodes kept for reuse */

struct arena_block {
	uint64_t addr;                 /* device address of the first byte */
	uint64_t size;                 /* bytes, a multiple of ARENA_MIN_ALIGN */
	struct arena_block *prev;      /* neighbours in address order */
	struct arena_block *next;
	struct arena_block *free_prev; /* in its bin, while free */
	struct arena_block *free_next;
	struct arena_block *live_next; /* in its address bucket, while used */
	struct alloc_owner owner;      /* while used */
	uint16_t bin;                  /* while free */
	uint8_t role;                  /* an enum alloc_role, while used */
	uint8_t used;
};

struct arena_granule {
	alloc_handle handle;           /* while mapped */
	uint64_t idle_since;           /* ns, of the first tick that saw it idle */
	size_t idle_prev;              /* on the idle list; ARENA_NONE at the ends */
	size_t idle_next;
	uint32_t live;                 /* live blocks that touch it */
	uint8_t mapped;
	uint8_t idle;                  /* on the idle list: mapped, no live block */
	uint8_t fresh;                 /* mapped by the allocation under way */
};

struct arena {
	pthread_mutex_t lock;
	struct alloc_provider *prov;   /* the caller's */
	struct account *acc;           /* the caller's; may be NULL */
	struct arena_config cfg;
	uint64_t base;                 /* the reservation */
	uint64_t reserved;             /* bytes */
	uint64_t granule;              /* bytes */
	unsigned granule_shift;

	struct arena_block *first;     /* at base: the list tiles the reservation */
	struct arena_block *bins[ARENA_BINS];
	uint64_t bin_map[(ARENA_BINS + 63) / 64];
	struct arena_block *spare;     /* unused nodes, chained through next */
	size_t n_spare;
	struct arena_block **live;     /* (n_live_buckets) used blocks by address */
	size_t n_live_buckets;         /* a power of two */

	struct arena_granule *gran;    /* (n_gran) */
	size_t n_gran;
	size_t max_gran;               /* granules in the reservation */
	size_t idle_head;              /* oldest idle granule */
	size_t idle_tail;
	size_t n_mapped;               /* granules */
	size_t n_idle;                 /* granules */

	struct arena__pool pool;
	struct arena_stats st;         /* the counters; gauges are computed */
};

void arena_config_init(struct arena_config *cfg)
{
	cfg->pool_limit = (size_t)256 << 20;
	cfg->idle_ns = 10ull * 1000 * 1000 * 1000;
}

static uint64_t arena_align_up(uint64_t x, uint64_t align)
{
	return (x + align - 1) & ~(align - 1);
}

/* ------------------------------------------------------------ size classes */

static unsigned arena_bin_of(uint64_t size)
{
	uint64_t u = size / ARENA_MIN_ALIGN;
	unsigned fl;

	if (u < 8)
		return (unsigned)u;
	fl = 63 - (unsigned)__builtin_clzll(u);
	return 8 + (fl - 3) * 4 + (unsigned)((u >> (fl - 2)) & 3);
}

/* The first non-empty bin at or after from, or ARENA_BINS. */
static unsigned arena_bin_next(const struct arena *a, unsigned from)
{
	unsigned w = from / 64;
	uint64_t m;

	if (from >= ARENA_BINS)
		return ARENA_BINS;
	m = a->bin_map[w] & (~0ull << (from % 64));
	for (;;) {
		if (m != 0)
			return w * 64 + (unsigned)__builtin_ctzll(m);
		if (++w == sizeof(a->bin_map) / sizeof(a->bin_map[0]))
			return ARENA_BINS;
		m = a->bin_map[w];
	}
}

static void arena_bin_insert(struct arena *a, struct arena_block *b)
{
	unsigned bin = arena_bin_of(b->size);

	b->bin = (uint16_t)bin;
	b->free_prev = NULL;
	b->free_next = a->bins[bin];
	if (b->free_next != NULL)
		b->free_next->free_prev = b;
	a->bins[bin] = b;
	a->bin_map[bin / 64] |= 1ull << (bin % 64);
}

static void arena_bin_remove(struct arena *a, struct arena_block *b)
{
	if (b->free_prev != NULL)
		b->free_prev->free_next = b->free_next;
	else
		a->bins[b->bin] = b->free_next;
	if (b->free_next != NULL)
		b->free_next->free_prev = b->free_prev;
	if (a->bins[b->bin] == NULL)
		a->bin_map[b->bin / 64] &= ~(1ull << (b->bin % 64));
}

/* A free block with room for size bytes at a multiple of align, and that
 * address in *at; NULL when none has. First fit, from the request's own
 * size class upwards: blocks of higher classes are all large enough, so
 * only alignment can make them miss. */
static struct arena_block *arena_fit(const struct arena *a, uint64_t size,
				     uint64_t align, uint64_t *at)
{
	unsigned bin;
	struct arena_block *b;

	for (bin = arena_bin_next(a, arena_bin_of(size)); bin < ARENA_BINS;
	     bin = arena_bin_next(a, bin + 1)) {
		for (b = a->bins[bin]; b != NULL; b = b->free_next) {
			uint64_t p = arena_align_up(b->addr, align);
			uint64_t skip = p - b->addr;

			if (skip <= b->size && size <= b->size - skip) {
				*at = p;
				return b;
			}
		}
	}
	return NULL;
}

/* ----------------------------------------------------------- block nodes */

static struct arena_block *arena_node_get(struct arena *a)
{
	struct arena_block *b = a->spare;

	if (b == NULL)
		return calloc(1, sizeof(*b));
	a->spare = b->next;
	a->n_spare--;
	memset(b, 0, sizeof(*b));
	return b;
}

static void arena_node_put(struct arena *a, struct arena_block *b)
{
	if (b == NULL)
		return;
	if (a->n_spare >= ARENA_SPARE_MAX) {
		free(b);
		return;
	}
	b->next = a->spare;
	a->spare = b;
	a->n_spare++;
}

/* Links b into the address list right after prev. */
static void arena_link_after(struct arena_block *prev, struct arena_block *b)
{
	b->prev = prev;
	b->next = prev->next;
	if (b->next != NULL)
		b->next->prev = b;
	prev->next = b;
}

static void arena_unlink(struct arena_block *b)
{
	if (b->prev != NULL)
		b->prev->next = b->next;
	if (b->next != NULL)
		b->next->prev = b->prev;
}

/* ------------------------------------------------- used blocks by address */

static size_t arena_live_slot(const struct arena *a, uint64_t addr)
{
	uint64_t h = (addr / ARENA_MIN_ALIGN) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ (h >> 32)) & (a->n_live_buckets - 1);
}

/* Doubles the table when it gets crowded; a failure only leaves chains
 * longer, so it is not reported. */
static void arena_live_grow(struct arena *a)
{
	size_t nb = a->n_live_buckets * 2, i;
	struct arena_block **t, *b, *next, **old = a->live;
	size_t n_old = a->n_live_buckets;

	if (a->st.live_blocks < 2 * a->n_live_buckets)
		return;
	t = calloc(nb, sizeof(*t));
	if (t == NULL)
		return;
	a->live = t;
	a->n_live_buckets = nb;
	for (i = 0; i < n_old; i++) {
		for (b = old[i]; b != NULL; b = next) {
			size_t at = arena_live_slot(a, b->addr);

			next = b->live_next;
			b->live_next = t[at];
			t[at] = b;
		}
	}
	free(old);
}

static void arena_live_insert(struct arena *a, struct arena_block *b)
{
	size_t at = arena_live_slot(a, b->addr);

	b->live_next = a->live[at];
	a->live[at] = b;
}

static void arena_live_remove(struct arena *a, struct arena_block *b)
{
	struct arena_block **pp = &a->live[arena_live_slot(a, b->addr)];

	while (*pp != b)
		pp = &(*pp)->live_next;
	*pp = b->live_next;
	b->live_next = NULL;
}

/* -------------------------------------------------------------- granules */

static size_t arena_gran_of(const struct arena *a, uint64_t addr)
{
	return (size_t)((addr - a->base) >> a->granule_shift);
}

static uint64_t arena_gran_addr(const struct arena *a, size_t g)
{
	return a->base + ((uint64_t)g << a->granule_shift);
}

/* Grows the table so that granule hi exists. */
static int arena_gran_cover(struct arena *a, size_t hi)
{
	size_t n, i;
	struct arena_granule *t;

	if (hi < a->n_gran)
		return 0;
	n = a->n_gran ? a->n_gran : 64;
	while (n <= hi)
		n *= 2;
	if (n > a->max_gran)
		n = a->max_gran;
	t = realloc(a->gran, n * sizeof(*t));
	if (t == NULL)
		return cep__set_error(CEP_ENOMEM, "arena: granule table of %zu entries", n);
	for (i = a->n_gran; i < n; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].idle_prev = ARENA_NONE;
		t[i].idle_next = ARENA_NONE;
	}
	a->gran = t;
	a->n_gran = n;
	return 0;
}

static void arena_idle_push(struct arena *a, size_t g)
{
	struct arena_granule *gr = &a->gran[g];

	gr->idle = 1;
	gr->idle_since = ARENA_UNSTAMPED;
	gr->idle_next = ARENA_NONE;
	gr->idle_prev = a->idle_tail;
	if (a->idle_tail != ARENA_NONE)
		a->gran[a->idle_tail].idle_next = g;
	else
		a->idle_head = g;
	a->idle_tail = g;
	a->n_idle++;
}

static void arena_idle_remove(struct arena *a, size_t g)
{
	struct arena_granule *gr = &a->gran[g];

	if (gr->idle_prev != ARENA_NONE)
		a->gran[gr->idle_prev].idle_next = gr->idle_next;
	else
		a->idle_head = gr->idle_next;
	if (gr->idle_next != ARENA_NONE)
		a->gran[gr->idle_next].idle_prev = gr->idle_prev;
	else
		a->idle_tail = gr->idle_prev;
	gr->idle = 0;
	gr->idle_prev = ARENA_NONE;
	gr->idle_next = ARENA_NONE;
	a->n_idle--;
}

/* Unmaps idle granule g and hands its handle to the pool. On failure it
 * stays mapped and idle. */
static int arena_idle_unmap(struct arena *a, size_t g)
{
	struct arena_granule *gr = &a->gran[g];
	int ret;

	ret = alloc_provider_unmap(a->prov, arena_gran_addr(a, g), 1);
	if (ret)
		return ret;
	arena_idle_remove(a, g);
	gr->mapped = 0;
	a->n_mapped--;
	arena__pool_put(&a->pool, a->prov, gr->handle);
	gr->handle = 0;
	return 0;
}

/* Unmaps every idle granule outside [lo, hi] so that its physical memory
 * can serve an allocation there; returns how many were unmapped. */
static size_t arena_reclaim(struct arena *a, size_t lo, size_t hi)
{
	size_t g = a->idle_head, next, n = 0;

	for (; g != ARENA_NONE; g = next) {
		next = a->gran[g].idle_next;
		if (g >= lo && g <= hi)
			continue;
		if (arena_idle_unmap(a, g) == 0)
			n++;
	}
	a->st.reclaims += n;
	return n;
}

/* Fills hs with k handles: pooled ones first, then new ones. When the
 * provider is out of memory, idle granules outside [lo, hi] are unmapped
 * and their handles used. On failure every handle taken is put back. */
static int arena_handles_get(struct arena *a, alloc_handle *hs, size_t k,
			     size_t lo, size_t hi)
{
	size_t i;
	int ret;

	for (i = 0; i < k; i++) {
		if (arena__pool_take(&a->pool, &hs[i])) {
			a->st.pool_hits++;
			continue;
		}
		ret = alloc_provider_create(a->prov, &hs[i]);
		if (ret == CEP_EDEVMEM && arena_reclaim(a, lo, hi) > 0) {
			i--;
			continue;
		}
		if (ret)
			goto out;
		a->st.pool_misses++;
	}
	return 0;
out:
	while (i > 0)
		arena__pool_put(&a->pool, a->prov, hs[--i]);
	return ret;
}

/* Makes granules lo..hi mapped, mapping the unmapped ones in runs. On
 * failure, what this call mapped is unmapped again (or, if even that fails,
 * left mapped and idle) and the handles go back to the pool. */
static int arena_map_range(struct arena *a, size_t lo, size_t hi)
{
	alloc_handle *hs = NULL;
	size_t g, i, k = 0, j = 0, run;
	int ret;

	for (g = lo; g <= hi; g++)
		k += !a->gran[g].mapped;
	if (k == 0)
		return 0;
	ret = CEP_ENOMEM;
	hs = malloc(k * sizeof(*hs));
	if (hs == NULL)
		goto out;
	ret = arena_handles_get(a, hs, k, lo, hi);
	if (ret)
		goto out;
	for (g = lo; g <= hi;) {
		if (a->gran[g].mapped) {
			g++;
			continue;
		}
		for (run = g; g <= hi && !a->gran[g].mapped; g++)
			;
		ret = alloc_provider_map(a->prov, arena_gran_addr(a, run), hs + j, g - run);
		if (ret)
			goto unwind;
		for (i = run; i < g; i++) {
			a->gran[i].mapped = 1;
			a->gran[i].fresh = 1;
			a->gran[i].handle = hs[j++];
		}
	}
	for (g = lo; g <= hi; g++)
		a->gran[g].fresh = 0;
	a->n_mapped += k;
	ret = 0;
	goto out;
unwind:
	for (i = j; i < k; i++)
		arena__pool_put(&a->pool, a->prov, hs[i]);
	for (g = lo; g <= hi; g++) {
		struct arena_granule *gr = &a->gran[g];

		if (!gr->fresh)
			continue;
		gr->fresh = 0;
		a->n_mapped++;
		arena_idle_push(a, g);
		(void)arena_idle_unmap(a, g);
	}
out:
	free(hs);
	return ret;
}

/* ------------------------------------------------------------ lifecycle */

int arena_new(struct alloc_provider *prov, struct account *acc,
	      const struct arena_config *cfg, struct arena **out)
{
	struct arena_config def;
	struct arena *a = NULL;
	struct arena_block *all = NULL;
	uint64_t base;
	size_t bytes;
	int ret;

	if (cfg == NULL) {
		arena_config_init(&def);
		cfg = &def;
	}
	ret = CEP_EINVAL;
	if (prov == NULL || prov->granule < ARENA_MIN_ALIGN ||
	    (prov->granule & (prov->granule - 1)) != 0)
		goto out;
	ret = CEP_ENOMEM;
	a = calloc(1, sizeof(*a));
	all = calloc(1, sizeof(*all));
	if (a == NULL || all == NULL)
		goto out;
	a->n_live_buckets = 256;
	a->live = calloc(a->n_live_buckets, sizeof(*a->live));
	if (a->live == NULL)
		goto out;
	if (arena__pool_init(&a->pool, cfg->pool_limit / prov->granule) != 0)
		goto out;
	a->prov = prov;
	a->acc = acc;
	a->cfg = *cfg;
	a->granule = prov->granule;
	a->granule_shift = (unsigned)__builtin_ctzll(prov->granule);
	a->idle_head = ARENA_NONE;
	a->idle_tail = ARENA_NONE;
	ret = alloc_provider_reserve(prov, &base, &bytes);
	if (ret)
		goto out;
	a->base = base;
	a->reserved = bytes;
	a->max_gran = bytes / prov->granule;
	all->addr = base;
	all->size = bytes;
	a->first = all;
	arena_bin_insert(a, all);
	a->st.free_ranges = 1;
	pthread_mutex_init(&a->lock, NULL);
	*out = a;
	a = NULL;
	all = NULL;
	ret = 0;
out:
	if (a != NULL) {
		arena__pool_close(&a->pool, prov);
		free(a->live);
	}
	free(all);
	free(a);
	return ret;
}

void arena_free(struct arena *a)
{
	struct arena_block *b, *next;
	size_t g;

	if (a == NULL)
		return;
	for (b = a->first; b != NULL; b = next) {
		next = b->next;
		if (b->used && a->acc != NULL)
			account_uncharge(a->acc, b->owner, (enum alloc_role)b->role, b->size);
		free(b);
	}
	while (a->spare != NULL) {
		b = a->spare;
		a->spare = b->next;
		free(b);
	}
	/* Teardown is best effort: a granule that will not unmap still has
	 * its handle released, and the driver frees it with the mapping. */
	for (g = 0; g < a->n_gran; g++) {
		if (!a->gran[g].mapped)
			continue;
		(void)alloc_provider_unmap(a->prov, arena_gran_addr(a, g), 1);
		alloc_provider_release(a->prov, a->gran[g].handle);
	}
	free(a->gran);
	free(a->live);
	arena__pool_close(&a->pool, a->prov);
	alloc_provider_unreserve(a->prov, a->base, a->reserved);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* ------------------------------------------------------------ alloc, free */

/* Takes [at, at + size) out of free block f and makes it used; front and
 * tail are spare nodes for the free remainders (returned unused if not). */
static struct arena_block *arena_carve(struct arena *a, struct arena_block *f,
				       uint64_t at, uint64_t size,
				       struct arena_block **front, struct arena_block **tail)
{
	struct arena_block *u = f;
	uint64_t end = f->addr + f->size;

	arena_bin_remove(a, f);
	a->st.free_ranges--;
	if (at > f->addr) {
		u = *front;
		*front = NULL;
		u->addr = at;
		f->size = at - f->addr;
		arena_link_after(f, u);
		arena_bin_insert(a, f);
		a->st.free_ranges++;
	}
	u->size = size;
	if (at + size < end) {
		struct arena_block *t = *tail;

		*tail = NULL;
		t->addr = at + size;
		t->size = end - t->addr;
		arena_link_after(u, t);
		arena_bin_insert(a, t);
		a->st.free_ranges++;
	}
	u->used = 1;
	return u;
}

int arena_block_alloc(struct arena *a, size_t size, size_t align,
		      struct alloc_owner owner, enum alloc_role role,
		      struct arena_block **out)
{
	struct arena_block *front = NULL, *tail = NULL, *f, *u;
	uint64_t want, at;
	size_t lo, hi, g;
	int charged = 0;
	int ret;

	if (align == 0 || align < ARENA_MIN_ALIGN)
		align = ARENA_MIN_ALIGN;
	if (size == 0 || (align & (align - 1)) != 0 || (unsigned)role >= ALLOC_ROLE_COUNT) {
		pthread_mutex_lock(&a->lock);
		a->st.failures++;
		pthread_mutex_unlock(&a->lock);
		return cep__set_error(CEP_EINVAL, "arena: bad request of %zu bytes aligned to %zu",
				      size, align);
	}
	pthread_mutex_lock(&a->lock);
	ret = CEP_EDEVMEM;
	if (size > a->reserved || align > a->reserved) {
		cep__set_error(ret, "out of device memory: asked %zu bytes, the arena "
			       "reserves %llu", size, (unsigned long long)a->reserved);
		goto out;
	}
	want = arena_align_up(size, ARENA_MIN_ALIGN);
	if (want >= a->granule) {
		want = arena_align_up(size, a->granule);
		if (align < a->granule)
			align = a->granule;
	}
	if (a->acc != NULL) {
		ret = account_charge(a->acc, owner, role, want);
		if (ret)
			goto out;
		charged = 1;
	}
	ret = CEP_ENOMEM;
	front = arena_node_get(a);
	tail = arena_node_get(a);
	if (front == NULL || tail == NULL) {
		cep__set_error(ret, "arena: no host memory for block records");
		goto out;
	}
	ret = CEP_EDEVMEM;
	f = arena_fit(a, want, align, &at);
	if (f == NULL) {
		cep__set_error(ret, "out of device memory: no free address range of %llu "
			       "bytes aligned to %zu in the %llu reserved",
			       (unsigned long long)want, align,
			       (unsigned long long)a->reserved);
		goto out;
	}
	lo = arena_gran_of(a, at);
	hi = arena_gran_of(a, at + want - 1);
	ret = arena_gran_cover(a, hi);
	if (ret)
		goto out;
	ret = arena_map_range(a, lo, hi);
	if (ret) {
		char why[256];

		snprintf(why, sizeof(why), "%s", cep_last_error());
		cep__set_error(ret, "%s: asked %zu bytes with %llu mapped and %llu in use: %s",
			       ret == CEP_EDEVMEM ? "out of device memory"
						  : "mapping device memory failed",
			       size, (unsigned long long)a->n_mapped * a->granule,
			       (unsigned long long)a->st.used, why);
		goto out;
	}
	u = arena_carve(a, f, at, want, &front, &tail);
	u->owner = owner;
	u->role = (uint8_t)role;
	arena_live_grow(a);
	arena_live_insert(a, u);
	for (g = lo; g <= hi; g++)
		if (a->gran[g].live++ == 0 && a->gran[g].idle)
			arena_idle_remove(a, g);
	a->st.used += want;
	if (a->st.used > a->st.used_peak)
		a->st.used_peak = a->st.used;
	a->st.allocs++;
	a->st.live_blocks++;
	*out = u;
	charged = 0;
	ret = 0;
out:
	if (ret)
		a->st.failures++;
	arena_node_put(a, front);
	arena_node_put(a, tail);
	pthread_mutex_unlock(&a->lock);
	if (charged)
		account_uncharge(a->acc, owner, role, want);
	return ret;
}

void arena_block_free(struct arena *a, struct arena_block *b)
{
	struct arena_block *n;
	size_t lo, hi, g;

	if (b == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	lo = arena_gran_of(a, b->addr);
	hi = arena_gran_of(a, b->addr + b->size - 1);
	for (g = lo; g <= hi; g++)
		if (--a->gran[g].live == 0)
			arena_idle_push(a, g);
	if (a->acc != NULL)
		account_uncharge(a->acc, b->owner, (enum alloc_role)b->role, b->size);
	arena_live_remove(a, b);
	a->st.used -= b->size;
	a->st.frees++;
	a->st.live_blocks--;
	b->used = 0;
	a->st.free_ranges++;
	n = b->prev;
	if (n != NULL && !n->used) {
		arena_bin_remove(a, n);
		n->size += b->size;
		arena_unlink(b);
		arena_node_put(a, b);
		b = n;
		a->st.free_ranges--;
	}
	n = b->next;
	if (n != NULL && !n->used) {
		arena_bin_remove(a, n);
		b->size += n->size;
		arena_unlink(n);
		arena_node_put(a, n);
		a->st.free_ranges--;
	}
	arena_bin_insert(a, b);
	pthread_mutex_unlock(&a->lock);
}

struct arena_block *arena_block_lookup(struct arena *a, uint64_t addr)
{
	struct arena_block *b;

	pthread_mutex_lock(&a->lock);
	for (b = a->live[arena_live_slot(a, addr)]; b != NULL; b = b->live_next)
		if (b->addr == addr)
			break;
	pthread_mutex_unlock(&a->lock);
	return b;
}

uint64_t arena_block_addr(const struct arena_block *b)
{
	return b->addr;
}

size_t arena_block_size(const struct arena_block *b)
{
	return (size_t)b->size;
}

struct alloc_owner arena_block_owner(const struct arena_block *b)
{
	return b->owner;
}

enum alloc_role arena_block_role(const struct arena_block *b)
{
	return (enum alloc_role)b->role;
}

size_t arena_granule(const struct arena *a)
{
	return (size_t)a->granule;
}

/* ------------------------------------------------------ trim, tick, stats */

int arena_trim(struct arena *a, unsigned flags)
{
	size_t g, next;
	int ret = 0, err;

	pthread_mutex_lock(&a->lock);
	for (g = a->idle_head; g != ARENA_NONE; g = next) {
		next = a->gran[g].idle_next;
		err = arena_idle_unmap(a, g);
		if (err && ret == 0)
			ret = err;
	}
	if (flags & ARENA_TRIM_POOL)
		arena__pool_drain(&a->pool, a->prov);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int arena_tick(struct arena *a, uint64_t now_ns)
{
	size_t g, next;
	int ret = 0, err;

	pthread_mutex_lock(&a->lock);
	for (g = a->idle_head; g != ARENA_NONE; g = next) {
		struct arena_granule *gr = &a->gran[g];

		next = gr->idle_next;
		if (gr->idle_since == ARENA_UNSTAMPED)
			gr->idle_since = now_ns;
		if (now_ns - gr->idle_since < a->cfg.idle_ns)
			continue;
		err = arena_idle_unmap(a, g);
		if (err && ret == 0)
			ret = err;
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

void arena_stats_get(struct arena *a, struct arena_stats *out)
{
	const struct alloc_provider_counters *pc;
	struct arena_block *b;
	unsigned bin, top = ARENA_BINS;

	pthread_mutex_lock(&a->lock);
	*out = a->st;
	pc = &a->prov->counters;
	out->reserved = a->reserved;
	out->mapped = (uint64_t)a->n_mapped * a->granule;
	out->idle = (uint64_t)a->n_idle * a->granule;
	out->pool_handles = a->pool.n;
	out->pool_bytes = (uint64_t)a->pool.n * a->granule;
	out->pool_limit = (uint64_t)a->pool.cap * a->granule;
	out->creates = pc->creates;
	out->releases = pc->releases;
	out->maps = pc->maps;
	out->unmaps = pc->unmaps;
	/* Classes grow with size, so the largest free range is in the highest
	 * non-empty bin. */
	for (bin = arena_bin_next(a, 0); bin < ARENA_BINS; bin = arena_bin_next(a, bin + 1))
		top = bin;
	out->largest_free = 0;
	if (top < ARENA_BINS)
		for (b = a->bins[top]; b != NULL; b = b->free_next)
			if (b->size > out->largest_free)
				out->largest_free = b->size;
	pthread_mutex_unlock(&a->lock);
}
