/*
 * fence.c — a client's fence page (fence.h): making, adopting and closing
 * it, arming and signalling its slots.
 */
#include "daemon/fence.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "gpu/backend.h"

#define PAGE_BYTES (CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES)

void fence_page_init(struct fence_page *p)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->page_fd = -1;
}

/* Maps the page's fd and, with be, registers it there. Returns 0 with
 * *out, or an error with nothing mapped. */
static int page_map(int fd, struct backend *be, void **out)
{
	void *addr = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int ret;

	if (addr == MAP_FAILED)
		return cep__set_error(cep__from_errno(errno), "mapping the fence page: %s",
				      strerror(errno));
	if (be != NULL) {
		ret = backend_host_register(be, addr, PAGE_BYTES);
		if (ret != 0) {
			munmap(addr, PAGE_BYTES);
			return ret;
		}
	}
	*out = addr;
	return 0;
}

int fence_page_open(struct fence_page *p, struct backend *be, bool share)
{
	void *addr = MAP_FAILED;
	int fd, ret;

	fd = memfd_create("cudaep-fence", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return cep__set_error(cep__from_errno(errno), "memfd_create: %s", strerror(errno));
	/* Sealed, so that the client cannot shrink it under our mapping. */
	if (ftruncate(fd, PAGE_BYTES) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		ret = cep__set_error(cep__from_errno(errno), "sizing the fence page: %s",
				     strerror(errno));
		goto out;
	}
	ret = page_map(fd, be, &addr);
	if (ret != 0)
		goto out;
	if (share) {
		p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (p->fd < 0) {
			ret = cep__set_error(cep__from_errno(errno), "dup of the fence page: %s",
					     strerror(errno));
			if (be != NULL)
				backend_host_unregister(be, addr);
			goto out;
		}
		p->page_fd = fd;
	} else {
		close(fd);
	}
	p->slots = addr;
	p->pinned = be;
	return 0;
out:
	if (addr != MAP_FAILED)
		munmap(addr, PAGE_BYTES);
	close(fd);
	return ret;
}

int fence_page_adopt(struct fence_page *p, struct backend *be, int fd, uint64_t last_seq)
{
	void *addr;
	struct stat sb;
	int ret;

	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != PAGE_BYTES)
		ret = cep__set_error(CEP_EINVAL, "fd %d is not a fence page (a memfd of %d "
				     "bytes)", fd, PAGE_BYTES);
	else
		ret = page_map(fd, be, &addr);
	if (ret != 0) {
		close(fd);
		return ret;
	}
	p->slots = addr;
	p->pinned = be;
	p->page_fd = fd;
	p->last_seq = last_seq;
	return 0;
}

int fence_page_fd_take(struct fence_page *p)
{
	int fd = p->fd;

	p->fd = -1;
	return fd;
}

void fence_page_close(struct fence_page *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (p->page_fd >= 0)
		close(p->page_fd);
	p->page_fd = -1;
	if (p->slots != NULL) {
		if (p->pinned != NULL)
			backend_host_unregister(p->pinned, p->slots);
		munmap(p->slots, PAGE_BYTES);
	}
	p->slots = NULL;
	p->pinned = NULL;
}

/* ------------------------------------------------------------------- slots */

int fence_seq_check(const struct fence_page *p, uint64_t seq)
{
	if (p->slots == NULL)
		return cep__set_error(CEP_EINVAL, "this connection has no fence page; run "
				      "with fence_seq 0");
	if (seq <= p->last_seq)
		return cep__set_error(CEP_EINVAL, "fence sequence number %llu is not above "
				      "the last one, %llu", (unsigned long long)seq,
				      (unsigned long long)p->last_seq);
	return 0;
}

uint64_t *fence_slot_arm(struct fence_page *p, uint64_t seq, uint64_t req_id)
{
	struct cep_fence_slot *slot = &p->slots[cep_fence_slot_of(seq)];

	p->last_seq = seq;
	atomic_store_explicit(&slot->status, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->request_id, req_id, memory_order_relaxed);
	/* The device may write the sequence number without us: the status
	 * must be visible to the client before anything is queued. */
	atomic_thread_fence(memory_order_seq_cst);
	return (uint64_t *)&slot->seq;
}

void fence_futex_wake(_Atomic uint32_t *word)
{
	/* Not FUTEX_PRIVATE_FLAG: the waiters are other processes. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void fence_slot_signal(struct fence_page *p, uint64_t seq, int status, bool seq_written)
{
	struct cep_fence_slot *slot = &p->slots[cep_fence_slot_of(seq)];

	/* The status before the sequence number: a client that sees the
	 * number sees the status. */
	if (!seq_written) {
		atomic_store_explicit(&slot->status, status, memory_order_relaxed);
		atomic_store_explicit(&slot->seq, seq, memory_order_release);
	}
	atomic_fetch_add_explicit(&slot->futex, 1, memory_order_release);
	fence_futex_wake(&slot->futex);
}

bool fence_slot_reached(const struct fence_page *p, uint64_t seq)
{
	const struct cep_fence_slot *slot = &p->slots[cep_fence_slot_of(seq)];

	return atomic_load_explicit(&slot->seq, memory_order_acquire) >= seq;
}

/* ---------------------------------------------------------------- handover */

void fence_save(const struct fence_page *p, struct handover_build *b, HvClient *hc)
{
	if (p->slots == NULL || p->page_fd < 0)
		return;
	hc->fence_fd = handover_keep_fd(b, p->page_fd);
	hc->fence_last_seq = p->last_seq;
}

int fence_restore(struct fence_page *p, struct backend *be, struct handover *h,
		  const HvClient *hc)
{
	int fd;

	if (hc->fence_fd < 3)
		return 0;
	fd = handover_fd_take(h, hc->fence_fd, "a fence page");
	if (fd < 0)
		return cep__set_error(CEP_EINVAL, "its memfd did not come over");
	return fence_page_adopt(p, be, fd, hc->fence_last_seq);
}
