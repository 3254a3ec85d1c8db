/*
 * provider_host.c — the host physical-memory provider (alloc/provider.h):
 * what the arena runs over in CI and on machines without a GPU.
 *
 * It mirrors the CUDA virtual memory API closely enough that the arena
 * cannot tell: the reservation is an mmap(PROT_NONE, MAP_NORESERVE) range;
 * "physical memory" is one memfd, and a handle is one granule-sized slot of
 * it; mapping a handle puts its slot at an address with MAP_FIXED, and
 * unmapping puts the PROT_NONE reservation back. A released slot has its
 * pages punched out, so memory really returns to the system and a slot
 * created again reads as zeros.
 */
#include "alloc/provider.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct host_provider {
	struct alloc_provider pub;
	int memfd;             /* the physical memory: slots of one granule */
	size_t granule;        /* bytes */
	size_t reserve_bytes;  /* bytes of address space reserve() takes */
	uint64_t capacity;     /* slots that may be live at once */
	uint64_t live;         /* slots created and not released */
	uint64_t high;         /* slots the memfd has been sized for */
	uint64_t *free_slots;  /* released slots, reused first; (cap_free) */
	size_t n_free;
	size_t cap_free;       /* always >= high, so release() never allocates */
	uint64_t resv_base;    /* the reservation, 0 while there is none */
	size_t resv_bytes;
};

static const int host_map_none = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

void alloc_provider_host_config_init(struct alloc_provider_host_config *cfg)
{
	cfg->granule = (size_t)2 << 20;
	cfg->reserve = (size_t)64 << 30;
	cfg->capacity = (size_t)16 << 30;
}

static int host_reserve(void *ctx, uint64_t *base, size_t *bytes)
{
	struct host_provider *hp = ctx;
	size_t want = hp->reserve_bytes;
	uintptr_t start, aligned;
	void *p;

	if (hp->resv_base != 0)
		return cep__set_error(CEP_EBUSY, "host provider: already reserved");
	/* mmap aligns to pages only; take a granule more and trim both ends
	 * so the reservation starts on a granule, as cuMemAddressReserve's
	 * alignment argument guarantees on a GPU. */
	p = mmap(NULL, want + hp->granule, PROT_NONE, host_map_none, -1, 0);
	if (p == MAP_FAILED)
		return cep__set_error(cep__from_errno(errno),
				      "host provider: reserving %zu bytes: %s",
				      want, cep_strerror(cep__from_errno(errno)));
	start = (uintptr_t)p;
	aligned = (start + hp->granule - 1) & ~(uintptr_t)(hp->granule - 1);
	if (aligned > start)
		munmap(p, aligned - start);
	munmap((void *)(aligned + want), start + hp->granule - aligned);
	hp->resv_base = aligned;
	hp->resv_bytes = want;
	*base = aligned;
	*bytes = want;
	return 0;
}

static void host_unreserve(void *ctx, uint64_t base, size_t bytes)
{
	struct host_provider *hp = ctx;

	munmap((void *)(uintptr_t)base, bytes);
	hp->resv_base = 0;
	hp->resv_bytes = 0;
}

static int host_create(void *ctx, alloc_handle *out)
{
	struct host_provider *hp = ctx;
	uint64_t slot;
	int err;

	if (hp->live >= hp->capacity)
		return cep__set_error(CEP_EDEVMEM,
				      "host provider: capacity of %llu bytes exhausted",
				      (unsigned long long)(hp->capacity * hp->granule));
	if (hp->n_free > 0) {
		slot = hp->free_slots[--hp->n_free];
		goto done;
	}
	if (hp->high >= hp->cap_free) {
		size_t cap = hp->cap_free ? hp->cap_free * 2 : 64;
		uint64_t *grown = realloc(hp->free_slots, cap * sizeof(*grown));

		if (grown == NULL)
			return cep__set_error(CEP_ENOMEM, "host provider: slot table");
		hp->free_slots = grown;
		hp->cap_free = cap;
	}
	if (ftruncate(hp->memfd, (off_t)((hp->high + 1) * hp->granule)) != 0) {
		err = cep__from_errno(errno);
		return cep__set_error(err, "host provider: growing the memfd: %s",
				      cep_strerror(err));
	}
	slot = hp->high++;
done:
	hp->live++;
	*out = slot + 1;
	return 0;
}

static void host_release(void *ctx, alloc_handle h)
{
	struct host_provider *hp = ctx;
	uint64_t slot = h - 1;

	/* Punching the hole gives the pages back now, not when the memfd is
	 * closed; a failure only delays that, so it is not reported. */
	(void)fallocate(hp->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)(slot * hp->granule), (off_t)hp->granule);
	hp->free_slots[hp->n_free++] = slot;
	hp->live--;
}

static int host_in_reservation(const struct host_provider *hp, uint64_t va, size_t n)
{
	return hp->resv_base != 0 && va >= hp->resv_base &&
	       n <= hp->resv_bytes / hp->granule &&
	       va - hp->resv_base <= hp->resv_bytes - n * hp->granule &&
	       (va & (hp->granule - 1)) == 0;
}

static int host_unmap(void *ctx, uint64_t va, size_t n)
{
	struct host_provider *hp = ctx;
	void *p;
	int err;

	if (!host_in_reservation(hp, va, n))
		return cep__set_error(CEP_EINVAL, "host provider: unmap outside the reservation");
	p = mmap((void *)(uintptr_t)va, n * hp->granule, PROT_NONE,
		 host_map_none | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED) {
		err = cep__from_errno(errno);
		return cep__set_error(err, "host provider: unmapping %zu granules: %s",
				      n, cep_strerror(err));
	}
	return 0;
}

static int host_map(void *ctx, uint64_t va, const alloc_handle *handles, size_t n)
{
	struct host_provider *hp = ctx;
	size_t i;
	void *p;
	int ret;

	if (!host_in_reservation(hp, va, n))
		return cep__set_error(CEP_EINVAL, "host provider: map outside the reservation");
	for (i = 0; i < n; i++) {
		uint64_t at = va + i * hp->granule;
		off_t off = (off_t)((handles[i] - 1) * hp->granule);

		p = mmap((void *)(uintptr_t)at, hp->granule, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, hp->memfd, off);
		if (p == MAP_FAILED) {
			ret = cep__from_errno(errno);
			cep__set_error(ret, "host provider: mapping a granule: %s",
				       cep_strerror(ret));
			goto out;
		}
	}
	return 0;
out:
	/* All or nothing: put the reservation back over what was mapped. */
	if (i > 0)
		(void)mmap((void *)(uintptr_t)va, i * hp->granule, PROT_NONE,
			   host_map_none | MAP_FIXED, -1, 0);
	return ret;
}

static void host_free(void *ctx)
{
	struct host_provider *hp = ctx;

	if (hp->resv_base != 0)
		munmap((void *)(uintptr_t)hp->resv_base, hp->resv_bytes);
	if (hp->memfd >= 0)
		close(hp->memfd);
	free(hp->free_slots);
	free(hp);
}

static const struct alloc_provider_i host_iface = {
	.reserve = host_reserve,
	.unreserve = host_unreserve,
	.create = host_create,
	.release = host_release,
	.map = host_map,
	.unmap = host_unmap,
	.free = host_free,
};

int alloc_provider_host_new(const struct alloc_provider_host_config *cfg,
			    struct alloc_provider **out)
{
	struct alloc_provider_host_config def;
	struct host_provider *hp = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int ret;

	if (cfg == NULL) {
		alloc_provider_host_config_init(&def);
		cfg = &def;
	}
	ret = CEP_EINVAL;
	if (cfg->granule < page || (cfg->granule & (cfg->granule - 1)) != 0) {
		cep__set_error(ret, "host provider: granule %zu is not a power-of-two "
			       "multiple of the page size", cfg->granule);
		goto out;
	}
	if (cfg->reserve < cfg->granule || cfg->capacity < cfg->granule) {
		cep__set_error(ret, "host provider: reservation and capacity must "
			       "hold at least one granule");
		goto out;
	}
	ret = CEP_ENOMEM;
	hp = calloc(1, sizeof(*hp));
	if (hp == NULL)
		goto out;
	hp->memfd = memfd_create("cudaep-host-provider", MFD_CLOEXEC);
	if (hp->memfd < 0) {
		ret = cep__from_errno(errno);
		cep__set_error(ret, "host provider: memfd_create: %s", cep_strerror(ret));
		goto out;
	}
	hp->granule = cfg->granule;
	hp->reserve_bytes = cfg->reserve & ~(cfg->granule - 1);
	hp->capacity = cfg->capacity / cfg->granule;
	hp->pub.iface = host_iface;
	hp->pub.context = hp;
	hp->pub.name = "host";
	hp->pub.granule = cfg->granule;
	*out = &hp->pub;
	hp = NULL;
	ret = 0;
out:
	if (hp != NULL)
		host_free(hp);
	return ret;
}
