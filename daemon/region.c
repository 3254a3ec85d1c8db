/*
 * region.c — registering, finding and releasing shared-memory regions, and
 * the slice bounds check (see region.h). The fd arrives from a client, so
 * everything about it is verified before the daemon maps it: a region that
 * could shrink under the mapping would let the client SIGBUS the daemon.
 */
#include "daemon/region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/account.h"
#include "gpu/backend.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/reqarena.h"

#define SEALS_NEEDED (F_SEAL_SHRINK | F_SEAL_GROW)

void region_pool_init(struct region_pool *pool,
		      const struct region_limits *limits, struct stats *stats)
{
	memset(pool, 0, sizeof(*pool));
	pool->limits = *limits;
	pool->stats = stats;
	pool->next_id = 1;
}

void region_table_init(struct region_table *t, struct region_pool *pool)
{
	memset(t, 0, sizeof(*t));
	t->pool = pool;
}

static void region_fd_close(struct region_pool *pool, int fd)
{
	close(fd);
	stats_count(pool->stats, STATS_COUNTER_FDS_CLOSED, 1);
}

/* Unpins and unmaps r, closes its fd, frees it and takes it out of the
 * totals; the caller removes it from the table's array. */
static void region_destroy(struct region_table *t, struct region *r)
{
	struct region_pool *pool = t->pool;

	if (r->pinned) {
		backend_host_unregister(pool->backend, r->addr);
		if (pool->account != NULL)
			account_uncharge(pool->account,
					 (struct alloc_owner){ t->client_id, 0 },
					 ALLOC_ROLE_PINNED, r->size);
	}
	munmap(r->addr, r->size);
	region_fd_close(pool, r->fd);
	t->bytes -= r->size;
	pool->bytes -= r->size;
	pool->count--;
	stats_gauge_add(pool->stats, STATS_GAUGE_REGIONS, -1);
	stats_gauge_add(pool->stats, STATS_GAUGE_REGION_BYTES,
			-(int64_t)r->size);
	stats_count(pool->stats, STATS_COUNTER_REGIONS_RELEASED, 1);
	free(r);
}

void region_table_close(struct region_table *t)
{
	uint32_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->ids.count; i++)
		region_destroy(t, t->ids.items[i]);
	idtable_close(&t->ids);
}

struct region *region_table_find(const struct region_table *t, uint64_t id)
{
	return idtable_find(&t->ids, id);
}

int region_table_get(const struct region_table *t, uint64_t id,
		     struct region **out)
{
	*out = region_table_find(t, id);
	if (*out == NULL)
		return cep__set_error(CEP_ENOENT, "no region %llu on this "
				      "connection", (unsigned long long)id);
	return 0;
}

/* The limits, checked before anything is mapped. */
static int region_limits_check(const struct region_table *t, uint64_t size)
{
	const struct region_pool *pool = t->pool;
	const struct region_limits *lim = &pool->limits;

	if (t->ids.count >= lim->max_per_client)
		return cep__set_error(CEP_ELIMIT, "a new region would exceed "
				      "the per-client limit of %u regions (%u "
				      "registered)", lim->max_per_client,
				      t->ids.count);
	if (size > lim->bytes_per_client ||
	    t->bytes > lim->bytes_per_client - size)
		return cep__set_error(CEP_ELIMIT, "region of %llu bytes would "
				      "exceed the per-client region limit of "
				      "%llu bytes (%llu in use)",
				      (unsigned long long)size,
				      (unsigned long long)lim->bytes_per_client,
				      (unsigned long long)t->bytes);
	if (size > lim->bytes_total || pool->bytes > lim->bytes_total - size)
		return cep__set_error(CEP_ELIMIT, "region of %llu bytes would "
				      "exceed the total region limit of %llu "
				      "bytes (%llu in use)",
				      (unsigned long long)size,
				      (unsigned long long)lim->bytes_total,
				      (unsigned long long)pool->bytes);
	return 0;
}

/* The fd must be a sealed regular file of exactly size bytes. */
static int region_fd_check(int fd, uint64_t size)
{
	struct stat sb;
	int seals;

	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return cep__set_error(CEP_EUNSEALED, "region fd cannot carry "
				      "seals (not a memfd?); it needs "
				      "F_SEAL_SHRINK and F_SEAL_GROW");
	if ((seals & SEALS_NEEDED) != SEALS_NEEDED)
		return cep__set_error(CEP_EUNSEALED, "region fd is not sealed "
				      "with%s%s",
				      seals & F_SEAL_SHRINK ? "" :
				      " F_SEAL_SHRINK",
				      seals & F_SEAL_GROW ? "" :
				      " F_SEAL_GROW");
	if (fstat(fd, &sb) != 0)
		return cep__set_error(cep__from_errno(errno), "fstat of the "
				      "region fd failed: %s", strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return cep__set_error(CEP_EINVAL, "region fd is not a regular "
				      "file");
	if ((uint64_t)sb.st_size != size)
		return cep__set_error(CEP_EINVAL, "region size %llu differs "
				      "from the size of its fd, %llu bytes",
				      (unsigned long long)size,
				      (unsigned long long)sb.st_size);
	return 0;
}

/* Charges the client for size bytes of pinned memory and registers the
 * mapping with the backend (both only where the pool has them). */
static int region_pin(struct region_table *t, void *addr, uint64_t size)
{
	struct region_pool *pool = t->pool;
	struct alloc_owner owner = { t->client_id, 0 };
	int ret;

	if (pool->backend == NULL)
		return 0;
	if (pool->account != NULL) {
		ret = account_charge(pool->account, owner, ALLOC_ROLE_PINNED, size);
		if (ret != 0)
			return ret;
	}
	ret = backend_host_register(pool->backend, addr, (size_t)size);
	if (ret != 0) {
		char why[CEP_MAX_STATUS_MSG];

		snprintf(why, sizeof(why), "%s", cep_last_error());
		if (pool->account != NULL)
			account_uncharge(pool->account, owner, ALLOC_ROLE_PINNED, size);
		return cep__set_error(ret, "cannot pin the region of %llu bytes for "
				      "the device: %s", (unsigned long long)size, why);
	}
	return 0;
}

/* region_table_register() and region_table_adopt(): id 0 takes a new id. */
static int region_add(struct region_table *t, int fd, uint64_t size,
		      const char *name, uint64_t id, struct region **out)
{
	struct region_pool *pool = t->pool;
	struct region *r = NULL;
	void *addr = MAP_FAILED;
	int ret;

	*out = NULL;
	if (size == 0) {
		ret = cep__set_error(CEP_EINVAL, "a region of 0 bytes");
		goto out;
	}
	ret = region_fd_check(fd, size);
	if (ret != 0)
		goto out;
	ret = region_limits_check(t, size);
	if (ret != 0) {
		stats_count(pool->stats, STATS_COUNTER_REGION_LIMIT_HITS, 1);
		goto out;
	}
	ret = idtable_reserve(&t->ids, "the region table");
	if (ret != 0)
		goto out;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory for a region");
		goto out;
	}
	addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED) {
		ret = cep__set_error(cep__from_errno(errno), "cannot map the "
				     "region of %llu bytes: %s",
				     (unsigned long long)size, strerror(errno));
		goto out;
	}
	ret = region_pin(t, addr, size);
	if (ret != 0)
		goto out;
	r->pinned = pool->backend != NULL;
	r->id = id != 0 ? id : pool->next_id++;
	r->fd = fd;
	r->addr = addr;
	r->size = size;
	if (name != NULL)
		memcpy(r->name, name,
		       reqarena_utf8_cut(name, sizeof(r->name) - 1));
	idtable_append(&t->ids, r);
	t->bytes += size;
	if (t->bytes > t->bytes_peak)
		t->bytes_peak = t->bytes;
	pool->count++;
	pool->bytes += size;
	if (pool->bytes > pool->bytes_peak)
		pool->bytes_peak = pool->bytes;
	stats_gauge_add(pool->stats, STATS_GAUGE_REGIONS, 1);
	stats_gauge_add(pool->stats, STATS_GAUGE_REGION_BYTES, (int64_t)size);
	stats_count(pool->stats, STATS_COUNTER_REGIONS_REGISTERED, 1);
	*out = r;
	return 0;
out:
	if (addr != MAP_FAILED)
		munmap(addr, size);
	free(r);
	if (fd >= 0)
		region_fd_close(pool, fd);
	return ret;
}

int region_table_register(struct region_table *t, int fd, uint64_t size,
			  const char *name, struct region **out)
{
	return region_add(t, fd, size, name, 0, out);
}

int region_table_adopt(struct region_table *t, int fd, uint64_t size,
		       const char *name, uint64_t id, struct region **out)
{
	const struct region *last = t->ids.count > 0 ? t->ids.items[t->ids.count - 1] : NULL;

	*out = NULL;
	/* The table stays sorted: ids come in the order they were handed. */
	if (id == 0 || id >= t->pool->next_id || (last != NULL && last->id >= id)) {
		if (fd >= 0)
			region_fd_close(t->pool, fd);
		return cep__set_error(CEP_EINVAL, "region id %llu cannot be handed over here "
				      "(the next id is %llu)", (unsigned long long)id,
				      (unsigned long long)t->pool->next_id);
	}
	return region_add(t, fd, size, name, id, out);
}

int region_table_release(struct region_table *t, uint64_t id)
{
	struct region *r = idtable_take(&t->ids, id);

	if (r == NULL)
		return cep__set_error(CEP_ENOENT, "no region %llu on this "
				      "connection", (unsigned long long)id);
	if (r->holds > 0) {
		/* Queued copies still read or write it. */
		r->released = true;
		t->released_held++;
		return 0;
	}
	region_destroy(t, r);
	return 0;
}

void region_hold(struct region *r)
{
	r->holds++;
}

void region_hold_drop(struct region_table *t, struct region *r)
{
	if (--r->holds > 0 || !r->released)
		return;
	t->released_held--;
	region_destroy(t, r);
}

int region_span_check(uint64_t size, uint64_t offset, uint64_t bytes)
{
	/* offset + bytes may wrap; offset <= size first makes the subtraction
	 * safe instead. */
	if (offset > size || bytes > size - offset)
		return cep__set_error(CEP_EBOUNDS, "slice at offset %llu of "
				      "%llu bytes lies outside the region of "
				      "%llu bytes",
				      (unsigned long long)offset,
				      (unsigned long long)bytes,
				      (unsigned long long)size);
	return 0;
}

int region_slice_check(const struct region *r, uint64_t offset,
		       uint64_t bytes, void **ptr)
{
	if (offset > r->size || bytes > r->size - offset)
		return cep__set_error(CEP_EBOUNDS, "slice at offset %llu of "
				      "%llu bytes lies outside region %llu of "
				      "%llu bytes",
				      (unsigned long long)offset,
				      (unsigned long long)bytes,
				      (unsigned long long)r->id,
				      (unsigned long long)r->size);
	if (ptr != NULL)
		*ptr = (char *)r->addr + offset;
	return 0;
}

/* ---------------------------------------------------------------- handover */

int region_save(const struct region_table *t, struct handover_build *b, HvClient *hc)
{
	const struct region *r;
	uint32_t i;

	hc->regions = handover_alloc(b, sizeof(*hc->regions) * t->ids.count);
	for (i = 0; hc->regions != NULL && i < t->ids.count; i++) {
		HvRegion *hr = handover_alloc(b, sizeof(*hr));

		if (hr == NULL)
			return CEP_ENOMEM;
		r = t->ids.items[i];
		cudaepd__handover__region__init(hr);
		hr->id = r->id;
		hr->fd = handover_keep_fd(b, r->fd);
		hr->size = r->size;
		hr->name = (char *)r->name;
		hc->regions[hc->n_regions++] = hr;
	}
	return hc->regions != NULL ? 0 : CEP_ENOMEM;
}

int region_restore(struct region_table *t, struct handover *h, const HvRegion *hr)
{
	struct region *r;
	int fd;

	fd = handover_fd_take(h, hr->fd, "a region");
	if (fd < 0)
		return cep__set_error(CEP_EINVAL, "its memfd did not come over");
	return region_table_adopt(t, fd, hr->size, hr->name, hr->id, &r);
}
