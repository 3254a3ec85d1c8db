/*
 * fence.c — fence pages, runs in flight and their completion (fence.h).
 *
 * A run's life: fence_run_open() on the loop takes a record and holds the
 * session; the dispatcher holds the regions and submits the run to the
 * engine, which queues fence_run_signal() behind it; the signal (on the
 * backend's thread) writes the client's slot, wakes it, and pushes the
 * record onto the server's queue; the loop, woken by the queue's async
 * handle, finishes it: completes it in the engine, drops the holds,
 * counts it, sends the error of a failed run, frees the record, and lets
 * a connection or session that went away meanwhile go too.
 *
 * A run over its client's bound waits in between, in the fair queue
 * (fairq.h), which submits it later or fails it through its fence.
 */
#include "daemon/fence.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cudaep.pb-c.h"

#include "daemon/batch.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "daemon/dispatch_priv.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/recover.h"
#include "daemon/region.h"
#include "daemon/server.h"
#include "daemon/session.h"

#define PAGE_BYTES (CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES)

/* ------------------------------------------------------------------ queue */

void fence_queue_init(struct fence_queue *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->landed, NULL);
}

void fence_queue_close(struct fence_queue *q)
{
	pthread_cond_destroy(&q->landed);
	pthread_mutex_destroy(&q->lock);
}

static void fence_on_async(uv_async_t *h)
{
	struct server *s = container_of(h, struct server, fences.async);

	fence_reap(s, false);
	/* Completions make room for runs waiting for their turn. */
	fairq_pump(s);
}

static void fence_on_async_close(uv_handle_t *h)
{
}

int fence_queue_start(struct server *s)
{
	struct fence_queue *q = &s->fences;
	int ret;

	ret = uv_async_init(s->loop, &q->async, fence_on_async);
	if (ret != 0)
		return ret;
	pthread_mutex_lock(&q->lock);
	q->live = true;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* Closes the async handle: under the lock, so that no signal sends to it
 * once it is closing. The recovery's timers go with it: nothing is in
 * flight that a lost context could strand. */
static void fence_queue_async_close(struct server *s)
{
	struct fence_queue *q = &s->fences;
	bool was;

	pthread_mutex_lock(&q->lock);
	was = q->live;
	q->live = false;
	pthread_mutex_unlock(&q->lock);
	if (was)
		uv_close((uv_handle_t *)&q->async, fence_on_async_close);
	recover_stop(s);
}

void fence_queue_stop(struct server *s)
{
	struct fence_queue *q = &s->fences;

	q->stopping = true;
	if (q->inflight == 0)
		fence_queue_async_close(s);
}

static void fence_queue_push(struct fence_queue *q, struct fence_run *r)
{
	pthread_mutex_lock(&q->lock);
	r->next = NULL;
	if (q->tail != NULL)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	pthread_cond_broadcast(&q->landed);
	if (q->live)
		uv_async_send(&q->async);
	pthread_mutex_unlock(&q->lock);
}

/* ----------------------------------------------------------------- signal */

static void futex_wake_all(_Atomic uint32_t *word)
{
	/* Not FUTEX_PRIVATE_FLAG: the waiters are other processes. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The run's host function: its work has completed. It decides the status,
 * writes the slot (the status before the sequence number, so that a
 * client that sees the number sees the status) unless the device wrote
 * the number already, wakes the waiters and queues the record for the
 * loop. No backend call, no allocation, and nothing of the record after
 * the push: the loop may reuse it at once.
 */
static void fence_run_signal(void *arg)
{
	struct fence_run *r = arg;
	struct cep_fence_slot *slot = &r->c->fence.slots[cep_fence_slot_of(r->seq)];
	struct fence_queue *q = &r->c->server->fences;
	int st = r->er.err;

	/* A recovery that gave up on the run has finished it already. */
	if (atomic_exchange_explicit(&r->claimed, true, memory_order_acq_rel))
		return;
	if (st == 0 && r->er.checked && r->fault->flag != 0)
		st = CEP_EINVAL;
	r->status = st;
	if (!r->er.seq_queued) {
		atomic_store_explicit(&slot->status, st, memory_order_relaxed);
		atomic_store_explicit(&slot->seq, r->seq, memory_order_release);
	}
	atomic_fetch_add_explicit(&slot->futex, 1, memory_order_release);
	futex_wake_all(&slot->futex);
	fence_queue_push(q, r);
}

/* ----------------------------------------------------------------- finish */

/* Sends the error of run r to its client: a Response with the Run's id,
 * the error as its status and RunDone naming the fence. */
static void fence_run_error_send(struct fence_run *r, int code)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	Cudaep__V1__RunDone done = CUDAEP__V1__RUN_DONE__INIT;
	/* A status message and two integers: far below a packet. */
	uint8_t buf[CEP_MAX_STATUS_MSG + 128];
	size_t len;

	resp.id = r->req_id;
	done.fence_seq = r->seq;
	resp.body_case = CUDAEP__V1__RESPONSE__BODY_RUN_DONE;
	resp.run_done = &done;
	dispatch__response_encode(&resp, code, buf, &len);
	conn_send(r->c, buf, len);
}

static void fence_run_release(struct fence_run *r)
{
	struct conn *c = r->c;
	uint32_t i;

	for (i = 0; i < r->n_holds; i++)
		region_hold_drop(&c->regions, r->holds[i]);
	r->n_holds = 0;
	if (r->submitted)
		c->fence.submitted--;
	r->submitted = false;
	session_run_end(&c->sessions, r->sess);
	r->sess = NULL;
	r->open = false;
	r->next = c->fence.free;
	c->fence.free = r;
	c->fence.inflight--;
	c->server->fences.inflight--;
	stats_gauge_add(&c->server->stats, STATS_GAUGE_RUNS_IN_FLIGHT, -1);
}

/* After the last run of a connection or of the server: what waited for
 * it may go now. */
static void fence_settle(struct server *s, struct conn *c)
{
	if (c->free_deferred && c->fence.inflight == 0 && !c->busy) {
		c->free_deferred = false;
		conn_free(c);
	}
	if (s->fences.stopping && s->fences.inflight == 0)
		fence_queue_async_close(s);
}

/* Ends r in the engine, once; later calls repeat its verdict. */
static int fence_run_complete(struct fence_run *r)
{
	if (r->completed)
		return r->result != 0 ? cep__set_error(r->result, "%s", r->er.msg) : 0;
	cep__clear_error();
	r->result = engine_run_complete(r->sess->engine, &r->er, r->fault);
	if (r->result != 0)
		snprintf(r->er.msg, sizeof(r->er.msg), "%s", cep_last_error());
	r->completed = true;
	return r->result;
}

static void fence_run_finish(struct server *s, struct fence_run *r)
{
	struct conn *c = r->c;
	struct session *sess = r->sess;
	int ret;

	if (r->er.plan == NULL && r->er.err != 0 && !r->completed) {
		/* Failed before anything was queued (fence_run_fail()). */
		cep__clear_error();
		ret = cep__set_error(r->er.err, "%s", r->er.msg);
	} else {
		ret = fence_run_complete(r);
	}
	stats_count(&s->stats, ret == 0 ? STATS_COUNTER_RUNS : STATS_COUNTER_RUN_ERRORS, 1);
	if (sess->engine)
		engine_session_stats(sess->engine, &sess->stats);
	if (ret == 0) {
		sess->runs++;
	} else {
		log_info("client %llu session %llu: run %llu failed: %s: %s",
			 (unsigned long long)c->id, (unsigned long long)sess->id,
			 (unsigned long long)r->seq, cep_err_name(ret), cep_last_error());
		if (!c->free_deferred && !c->closing)
			fence_run_error_send(r, ret);
	}
	if (r->batched_in != NULL) {
		batch_run_landed(r->batched_in, r->batched_lane);
		r->batched_in = NULL;
	}
	fence_run_release(r);
	fence_settle(s, c);
	/* A run that failed on a lost context is how most recoveries begin
	 * (a cheap check of a flag otherwise). */
	recover_note(s);
}

void fence_reap(struct server *s, bool force)
{
	struct fence_queue *q = &s->fences;
	struct fence_run *r, *next;

	pthread_mutex_lock(&q->lock);
	r = q->head;
	q->head = NULL;
	q->tail = NULL;
	pthread_mutex_unlock(&q->lock);
	for (; r != NULL; r = next) {
		next = r->next;
		if (!r->replied && !force) {
			/* fence_run_replied() finishes it. */
			r->done = true;
			continue;
		}
		fence_run_finish(s, r);
	}
}

void fence_drain(struct server *s)
{
	struct fence_queue *q = &s->fences;

	struct conn *c;

	/* Runs that wait for their turn would never land. */
	for (c = s->conns; c != NULL; c = c->next)
		fairq_conn_cancel(s, c);
	while (q->inflight > 0) {
		pthread_mutex_lock(&q->lock);
		while (q->head == NULL)
			pthread_cond_wait(&q->landed, &q->lock);
		pthread_mutex_unlock(&q->lock);
		fence_reap(s, true);
	}
}

/* ------------------------------------------------------------- the page */

/* Maps the fence page fd and, with pin, registers it with the backend.
 * Returns 0 with *out, or an error with nothing mapped. */
static int page_map(struct server *s, int fd, bool pin, void **out)
{
	void *addr = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int ret;

	if (addr == MAP_FAILED)
		return cep__set_error(cep__from_errno(errno), "mapping the fence page: %s",
				      strerror(errno));
	if (pin) {
		ret = backend_host_register(s->backend, addr, PAGE_BYTES);
		if (ret != 0) {
			munmap(addr, PAGE_BYTES);
			return ret;
		}
	}
	*out = addr;
	return 0;
}

int fence_page_open(struct server *s, struct conn *c)
{
	struct fence *f = &c->fence;
	void *addr = MAP_FAILED;
	bool pin;
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
	/* While the backend is lost, the new image of the recovery pins it
	 * with every other page (fence_page_adopt()). */
	pin = !s->recovering && !backend_lost(s->backend);
	ret = page_map(s, fd, pin, &addr);
	if (ret != 0)
		goto out;
	/* A detached connection has nobody to pass the fd to. */
	if (c->fd >= 0) {
		f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (f->fd < 0) {
			ret = cep__set_error(cep__from_errno(errno), "dup of the fence page: %s",
					     strerror(errno));
			if (pin)
				backend_host_unregister(s->backend, addr);
			goto out;
		}
		f->page_fd = fd;
	} else {
		close(fd);
	}
	f->slots = addr;
	f->pinned = pin;
	return 0;
out:
	if (addr != MAP_FAILED)
		munmap(addr, PAGE_BYTES);
	close(fd);
	return ret;
}

int fence_page_adopt(struct server *s, struct conn *c, int fd, uint64_t last_seq)
{
	struct fence *f = &c->fence;
	void *addr;
	struct stat sb;
	int ret;

	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != PAGE_BYTES)
		ret = cep__set_error(CEP_EINVAL, "fd %d is not a fence page (a memfd of %d "
				     "bytes)", fd, PAGE_BYTES);
	else
		ret = page_map(s, fd, true, &addr);
	if (ret != 0) {
		close(fd);
		return ret;
	}
	f->slots = addr;
	f->pinned = true;
	f->page_fd = fd;
	f->last_seq = last_seq;
	return 0;
}

int fence_fd_take(struct fence *f)
{
	int fd = f->fd;

	f->fd = -1;
	return fd;
}

void fence_close(struct server *s, struct conn *c)
{
	struct fence *f = &c->fence;

	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->page_fd >= 0)
		close(f->page_fd);
	f->page_fd = -1;
	if (f->slots != NULL) {
		if (f->pinned)
			backend_host_unregister(s->backend, f->slots);
		munmap(f->slots, PAGE_BYTES);
	}
	f->slots = NULL;
	f->pinned = false;
	if (f->faults != NULL) {
		backend_host_unregister(s->backend, f->faults);
		free(f->faults);
	}
	f->faults = NULL;
	for (size_t i = 0; f->runs != NULL && i < FENCE_RUNS; i++)
		free(f->runs[i].io);
	free(f->runs);
	f->runs = NULL;
	f->free = NULL;
}

/* ---------------------------------------------------------------- records */

/* The records, made at the connection's first fenced run. Their fault
 * records are registered so that the device copies into them directly. */
static int fence_runs_alloc(struct server *s, struct fence *f)
{
	size_t i;
	int ret;

	f->faults_bytes = (sizeof(*f->faults) * FENCE_RUNS + 4095) & ~(size_t)4095;
	f->runs = calloc(FENCE_RUNS, sizeof(*f->runs));
	f->faults = aligned_alloc(4096, f->faults_bytes);
	if (f->runs == NULL || f->faults == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the records of runs in flight");
		goto out;
	}
	memset(f->faults, 0, f->faults_bytes);
	ret = backend_host_register(s->backend, f->faults, f->faults_bytes);
	if (ret != 0)
		goto out;
	for (i = FENCE_RUNS; i-- > 0;) {
		f->runs[i].fault = &f->faults[i];
		f->runs[i].next = f->free;
		f->free = &f->runs[i];
	}
	return 0;
out:
	free(f->runs);
	free(f->faults);
	f->runs = NULL;
	f->faults = NULL;
	return ret;
}

int fence_run_open(struct server *s, struct conn *c, struct session *sess,
		   uint64_t seq, uint64_t req_id, struct fence_run **out)
{
	struct fence *f = &c->fence;
	struct cep_fence_slot *slot;
	struct fence_run *r;
	int ret;

	*out = NULL;
	if (f->slots == NULL)
		return cep__set_error(CEP_EINVAL, "this connection has no fence page; run "
				      "with fence_seq 0");
	if (seq <= f->last_seq)
		return cep__set_error(CEP_EINVAL, "fence sequence number %llu is not above "
				      "the last one, %llu", (unsigned long long)seq,
				      (unsigned long long)f->last_seq);
	if (f->runs == NULL) {
		ret = fence_runs_alloc(s, f);
		if (ret != 0)
			return ret;
	}
	if (f->free == NULL)
		fence_reap(s, false);
	if (f->free == NULL)
		return cep__set_error(CEP_EAGAIN, "%d runs of this connection are in flight; "
				      "wait for one to complete", FENCE_RUNS);
	r = f->free;
	f->free = r->next;
	r->next = NULL;
	r->c = c;
	r->sess = sess;
	r->seq = seq;
	r->req_id = req_id;
	r->status = 0;
	r->replied = false;
	r->done = false;
	r->open = true;
	atomic_store_explicit(&r->claimed, false, memory_order_relaxed);
	r->completed = false;
	r->result = 0;
	r->submitted = false;
	r->batched_in = NULL;
	r->n_holds = 0;
	memset(&r->er, 0, sizeof(r->er));
	r->fence = (struct engine_fence){
		.seq = (uint64_t *)&f->slots[cep_fence_slot_of(seq)].seq,
		.value = seq,
		.fault = r->fault,
		.done = fence_run_signal,
		.arg = r,
	};
	f->last_seq = seq;
	slot = &f->slots[cep_fence_slot_of(seq)];
	atomic_store_explicit(&slot->status, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->request_id, req_id, memory_order_relaxed);
	/* The device may write the sequence number without us: the status
	 * must be visible to the client before anything is queued. */
	atomic_thread_fence(memory_order_seq_cst);
	session_run_begin(sess);
	f->inflight++;
	s->fences.inflight++;
	stats_gauge_add(&s->stats, STATS_GAUGE_RUNS_IN_FLIGHT, 1);
	*out = r;
	return 0;
}

void fence_run_hold(struct fence_run *r, struct region *reg)
{
	uint32_t i;

	for (i = 0; i < r->n_holds; i++)
		if (r->holds[i] == reg)
			return;
	region_hold(reg);
	r->holds[r->n_holds++] = reg;
}

void fence_run_abort(struct fence_run *r)
{
	struct server *s = r->c->server;
	struct conn *c = r->c;

	fence_run_release(r);
	fence_settle(s, c);
}

void fence_run_submit_mark(struct fence_run *r)
{
	if (r->submitted)
		return;
	r->submitted = true;
	r->c->fence.submitted++;
}

int fence_run_io_get(struct fence_run *r, struct fence_io **out)
{
	if (r->io == NULL) {
		r->io = malloc(sizeof(*r->io));
		if (r->io == NULL)
			return cep__set_error(CEP_ENOMEM, "no memory to keep a waiting run's "
					      "inputs and outputs");
	}
	*out = r->io;
	return 0;
}

void fence_run_fail(struct fence_run *r, int code, const char *msg)
{
	memset(&r->er, 0, sizeof(r->er));
	r->er.err = code;
	snprintf(r->er.msg, sizeof(r->er.msg), "%s", msg);
	/* On the loop: the record goes to the queue, and is finished by the
	 * next reap like any completion. */
	fence_run_signal(r);
}

void fence_run_drop(struct fence_run *r)
{
	struct server *s = r->c->server;

	fence_run_release(r);
	if (s->fences.stopping && s->fences.inflight == 0)
		fence_queue_async_close(s);
}

void fence_run_replied(struct fence_run *r)
{
	r->replied = true;
	if (r->done)
		fence_run_finish(r->c->server, r);
}

/* --------------------------------------------------------------- recovery */

/* Decides r, whose host function will never run: the device wrote its
 * fence before the context was lost (its outputs are in place), or it
 * fails with why. Writes its slot and wakes its waiters as the signal
 * would. */
static void fence_run_give_up(struct fence_run *r, const char *why)
{
	struct cep_fence_slot *slot = &r->c->fence.slots[cep_fence_slot_of(r->seq)];

	if (r->er.seq_queued &&
	    atomic_load_explicit(&slot->seq, memory_order_acquire) >= r->seq) {
		r->status = 0;
	} else {
		r->er.err = CEP_ECONTEXT;
		r->er.checked = false;
		snprintf(r->er.msg, sizeof(r->er.msg), "%s", why);
		r->status = CEP_ECONTEXT;
		atomic_store_explicit(&slot->status, CEP_ECONTEXT, memory_order_relaxed);
		atomic_store_explicit(&slot->seq, r->seq, memory_order_release);
	}
	atomic_fetch_add_explicit(&slot->futex, 1, memory_order_release);
	futex_wake_all(&slot->futex);
}

/* Whether r was handed to the backend and is not yet finished: what a
 * recovery settles. A run waiting in the fair queue never reached the
 * backend; it stays and starts on the new one. */
static bool fence_run_on_device(const struct fence_run *r)
{
	return r->open && r->submitted;
}

/* Runs of every connection on the device that have not landed yet. */
static uint32_t fence_unlanded(const struct server *s)
{
	const struct conn *c;
	uint32_t i, n = 0;

	for (c = s->conns; c != NULL; c = c->next)
		for (i = 0; c->fence.runs != NULL && i < FENCE_RUNS; i++)
			if (fence_run_on_device(&c->fence.runs[i]) && !c->fence.runs[i].done)
				n++;
	return n;
}

uint32_t fence_recover_settle(struct server *s, const char *why)
{
	struct fence_queue *q = &s->fences;
	struct fence_run *r;
	struct conn *c;
	uint32_t i, failed = 0;

	for (c = s->conns; c != NULL; c = c->next) {
		for (i = 0; c->fence.runs != NULL && i < FENCE_RUNS; i++) {
			r = &c->fence.runs[i];
			if (!fence_run_on_device(r) ||
			    atomic_exchange_explicit(&r->claimed, true, memory_order_acq_rel))
				continue;
			fence_run_give_up(r, why);
			failed += r->status != 0;
			fence_queue_push(q, r);
		}
	}
	/* A signal that won its claim pushes at once: wait for the last. */
	for (;;) {
		pthread_mutex_lock(&q->lock);
		r = q->head;
		q->head = NULL;
		q->tail = NULL;
		pthread_mutex_unlock(&q->lock);
		for (; r != NULL; r = r->next)
			r->done = true;
		if (fence_unlanded(s) == 0)
			break;
		pthread_mutex_lock(&q->lock);
		while (q->head == NULL)
			pthread_cond_wait(&q->landed, &q->lock);
		pthread_mutex_unlock(&q->lock);
	}
	for (c = s->conns; c != NULL; c = c->next)
		for (i = 0; c->fence.runs != NULL && i < FENCE_RUNS; i++)
			if (fence_run_on_device(&c->fence.runs[i]))
				(void)fence_run_complete(&c->fence.runs[i]);
	return failed;
}

void fence_recover_finish(struct server *s)
{
	struct fence_run *list = NULL, *r, *next;
	struct conn *c;
	uint32_t i;

	/* Listed first: finishing a connection's last run may free it. */
	for (c = s->conns; c != NULL; c = c->next) {
		for (i = 0; c->fence.runs != NULL && i < FENCE_RUNS; i++) {
			r = &c->fence.runs[i];
			if (!fence_run_on_device(r))
				continue;
			r->replied = true;
			r->next = list;
			list = r;
		}
	}
	for (r = list; r != NULL; r = next) {
		next = r->next;
		fence_run_finish(s, r);
	}
}
