/*
 * fence.c — runs in flight for libcudaep-client, beside regions and
 * sessions above the transport (conn.c). The daemon shares a fence page at
 * Hello (proto/cep_fence.h describes the protocol); run.c books a slot's
 * fence sequence number for each Run it sends with a fence.
 * cep_fence_wait() and cep_fence_poll() watch the run's slot: they spin on
 * the sequence number the GPU writes, then sleep on the slot's futex, and
 * read the status the daemon left beside it. The message of a failed run
 * follows its reply on the socket; whoever reads the socket hands it here
 * (fence_unasked(), the transport's callback), to be kept in the slot's
 * book until its waiter takes it.
 *
 * Waiting takes no lock and makes no system call while the run completes
 * within the spin; nothing here allocates.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE_BYTES (CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES)

/* How long a waiter spins before it sleeps: about what a small run takes
 * on a GPU, so that a quick one is seen without a system call. */
#define SPIN_NS 20000

/* The longest a waiter sleeps before it checks that the daemon is still
 * there. */
#define WAKE_SLICE_NS 100000000

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------- the page */

/* Keeps the error of a failed run (a RunDone response) for its waiter:
 * the transport's callback for responses that answer no call. Returns
 * whether resp was one; the caller holds the lock. */
static bool fence_unasked(void *arg, const cudaep_v1_Response *resp)
{
	cep_client *c = arg;
	struct cep__fence_book *b;
	uint64_t seq;
	int code;

	if (resp->which_body != cudaep_v1_Response_run_done_tag)
		return false;
	seq = resp->body.run_done.fence_seq;
	b = &c->fences.books[cep_fence_slot_of(seq)];
	if (atomic_load_explicit(&b->seq, memory_order_acquire) != seq || b->err_have)
		return true;
	code = resp->has_status ? resp->status.code : 0;
	if (code >= 0) {
		code = CEP_EPROTO;
		snprintf(b->err_msg, sizeof(b->err_msg), "cudaepd reported run %llu as "
			 "failed without an error code", (unsigned long long)seq);
	} else {
		snprintf(b->err_msg, sizeof(b->err_msg), "%s", resp->status.message);
	}
	b->err_code = code;
	b->err_have = true;
	return true;
}

void cep__fence_init(cep_client *c)
{
	c->conn.cb.unasked = fence_unasked;
	c->conn.cb.arg = c;
}

void cep__fence_open(cep_client *c, int fd, uint32_t slots)
{
	struct stat st;
	void *p;

	if (fd < 0)
		return;
	/* A page of another layout is left alone: runs then wait for their
	 * replies, which every daemon supports. */
	if (slots == CEP_FENCE_SLOTS && fstat(fd, &st) == 0 && st.st_size >= PAGE_BYTES) {
		p = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED)
			c->fences.page = p;
	}
	close(fd);
}

void cep__fence_close(cep_client *c)
{
	if (c->fences.page != NULL)
		munmap(c->fences.page, PAGE_BYTES);
	c->fences.page = NULL;
}

/* ------------------------------------------------------------- booking */

int cep__fence_book(cep_client *c, uint64_t *out)
{
	struct cep__fences *f = &c->fences;
	struct cep__fence_book *b;
	uint64_t seq;

	/* Sequence numbers need only grow: the next one whose slot is free
	 * is taken, so that one slow fence does not hold up the others. */
	for (seq = f->seq + 1; seq <= f->seq + CEP_FENCE_SLOTS; seq++) {
		b = &f->books[cep_fence_slot_of(seq)];
		if (atomic_load_explicit(&b->seq, memory_order_acquire) != 0)
			continue;
		f->seq = seq;
		/* The book is ready before the request goes: the run's error
		 * can only follow its reply, but is then kept at once. */
		b->err_have = false;
		atomic_store_explicit(&b->seq, seq, memory_order_relaxed);
		*out = seq;
		return 0;
	}
	return cep__set_error(CEP_EAGAIN, "%d fences of this client are in flight: "
			      "wait for one before submitting more", CEP_FENCE_SLOTS);
}

void cep__fence_unbook(cep_client *c, uint64_t seq)
{
	atomic_store_explicit(&c->fences.books[cep_fence_slot_of(seq)].seq, 0,
			      memory_order_relaxed);
}

/* ----------------------------------------------------------------- wait */

static bool slot_done(const struct cep_fence_slot *slot, uint64_t seq)
{
	return atomic_load_explicit(&slot->seq, memory_order_acquire) >= seq;
}

/* Waits until the slot shows seq, until deadline (INT64_MAX: no limit).
 * Returns 0, CEP_ETIMEDOUT, or CEP_ECONNRESET when the daemon went away
 * (then no fence of it will ever be signalled). */
static int slot_wait(const cep_client *c, struct cep_fence_slot *slot, uint64_t seq,
		     int64_t deadline)
{
	struct timespec ts;
	int64_t t0 = now_ns(), now = t0, left;
	uint32_t v;
	int i;

	while (now - t0 < SPIN_NS && now < deadline) {
		for (i = 0; i < 64; i++) {
			if (slot_done(slot, seq))
				return 0;
			cpu_relax();
		}
		now = now_ns();
	}
	for (;;) {
		/* The futex word first: a signal after this load changes it,
		 * so the FUTEX_WAIT below returns at once instead of missing
		 * the wake. */
		v = atomic_load_explicit(&slot->futex, memory_order_acquire);
		if (slot_done(slot, seq))
			return 0;
		now = now_ns();
		if (now >= deadline)
			return cep__set_error(CEP_ETIMEDOUT, "run %llu has not completed yet",
					      (unsigned long long)seq);
		/* In slices, so that a daemon that died is noticed. */
		left = deadline - now;
		if (left > WAKE_SLICE_NS)
			left = WAKE_SLICE_NS;
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
		/* Shared, not FUTEX_PRIVATE_FLAG: the daemon wakes it. */
		if (syscall(SYS_futex, (uint32_t *)&slot->futex, FUTEX_WAIT, v, &ts, NULL, 0) != 0 &&
		    errno == ETIMEDOUT && cep__conn_gone(&c->conn))
			return cep__set_error(CEP_ECONNRESET, "cudaepd closed the connection "
					      "while run %llu was in flight",
					      (unsigned long long)seq);
	}
}

static void fence_consume(cep_fence *f, struct cep__fence_book *b)
{
	atomic_store_explicit(&b->seq, 0, memory_order_release);
	f->client = NULL;
}

/* The run failed: its message comes on the socket (it may have come
 * already, while another call read it). Waits for it until deadline. */
static int fence_failed(cep_fence *f, struct cep__fence_book *b, int64_t deadline)
{
	cep_client *c = f->client;
	char msg[CEP_MAX_STATUS_MSG];
	int64_t left;
	int ret = 0, code = 0, ms;

	pthread_mutex_lock(&c->conn.lock);
	while (!b->err_have) {
		ms = -1;
		if (deadline != INT64_MAX) {
			left = deadline - now_ns();
			left = left <= 0 ? 0 : (left + 999999) / 1000000;
			ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		ret = cep__conn_pump(&c->conn, ms);
		if (ret != 0)
			break;
	}
	if (ret == CEP_ETIMEDOUT) {
		pthread_mutex_unlock(&c->conn.lock);
		return ret;
	}
	if (ret == 0) {
		code = b->err_code;
		memcpy(msg, b->err_msg, sizeof(msg));
	}
	/* Without its message (the connection broke) the run still failed:
	 * the fence is done either way. */
	fence_consume(f, b);
	pthread_mutex_unlock(&c->conn.lock);
	if (ret != 0)
		return ret;
	return cep__set_error(code, "%s", msg);
}

static int fence_wait(cep_fence *f, int64_t timeout_ns, bool poll)
{
	struct cep__fence_book *b;
	struct cep_fence_slot *slot;
	cep_client *c;
	int64_t deadline;
	unsigned i;
	int ret;

	if (f == NULL || f->client == NULL)
		return cep__set_error(CEP_EINVAL, "not a fence in flight (consumed already?)");
	c = f->client;
	if (f->seq == 0) {
		/* Completed when it was submitted. */
		f->client = NULL;
		return 0;
	}
	i = cep_fence_slot_of(f->seq);
	b = &c->fences.books[i];
	slot = &c->fences.page[i];
	if (atomic_load_explicit(&b->seq, memory_order_acquire) != f->seq)
		return cep__set_error(CEP_EINVAL, "fence %llu was consumed already",
				      (unsigned long long)f->seq);
	deadline = now_ns();
	if (timeout_ns < 0 || timeout_ns > INT64_MAX - deadline)
		deadline = INT64_MAX;
	else
		deadline += timeout_ns;
	if (!slot_done(slot, f->seq)) {
		if (timeout_ns == 0 && cep__conn_gone(&c->conn))
			ret = cep__set_error(CEP_ECONNRESET, "cudaepd closed the connection "
					     "while run %llu was in flight",
					     (unsigned long long)f->seq);
		else if (timeout_ns == 0)
			ret = cep__set_error(CEP_ETIMEDOUT, "run %llu has not completed yet",
					     (unsigned long long)f->seq);
		else
			ret = slot_wait(c, slot, f->seq, deadline);
		if (ret == CEP_ECONNRESET) {
			/* It can never complete now. */
			fence_consume(f, b);
			return ret;
		}
		if (ret != 0)
			return poll ? cep__set_error(CEP_EAGAIN, "run %llu has not completed yet",
						     (unsigned long long)f->seq) : ret;
	}
	if (atomic_load_explicit(&slot->status, memory_order_relaxed) == 0) {
		fence_consume(f, b);
		return 0;
	}
	ret = fence_failed(f, b, deadline);
	if (ret == CEP_ETIMEDOUT && poll)
		return cep__set_error(CEP_EAGAIN, "run %llu failed; its message has not arrived "
				      "yet", (unsigned long long)f->seq);
	return ret;
}

int cep_fence_wait(cep_fence *fence, int64_t timeout_ns)
{
	return fence_wait(fence, timeout_ns, false);
}

int cep_fence_poll(cep_fence *fence)
{
	return fence_wait(fence, 0, true);
}
