/*
 * backend.c — the wrappers of the backend seam (gpu/backend.h): one place
 * that checks arguments and keeps the counters for every backend, so that
 * the host and CUDA implementations stay plain and the counts mean the
 * same thing on both.
 */
#include "gpu/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "kernels/ops.h"

#define relaxed memory_order_relaxed

/* Passes ret through, remembering a lost context (backend.h). */
static int noted(struct backend *b, int ret)
{
	int none = 0;

	if (ret == CEP_ECONTEXT &&
	    atomic_compare_exchange_strong_explicit(&b->lost, &none, 1, memory_order_acq_rel,
						    memory_order_relaxed)) {
		snprintf(b->lost_why, sizeof(b->lost_why), "%s", cep_last_error());
		atomic_store_explicit(&b->lost, 2, memory_order_release);
	}
	return ret;
}

const char *backend_kind_name(enum backend_kind kind)
{
	switch (kind) {
	case BACKEND_HOST: return "host";
	case BACKEND_CUDA: return "cuda";
	case BACKEND_KIND_COUNT: break;
	}
	return "unknown";
}

void backend__init(struct backend *b)
{
	pthread_mutex_init(&b->regs_lock, NULL);
	pthread_mutex_init(&b->gate_lock, NULL);
	pthread_cond_init(&b->gate_open, NULL);
}

void backend_free(struct backend *b)
{
	if (!b)
		return;
	/* Whatever is still registered was the caller's to unregister; the
	 * device forgets it with its context. */
	free(b->regs);
	pthread_cond_destroy(&b->gate_open);
	pthread_mutex_destroy(&b->gate_lock);
	pthread_mutex_destroy(&b->regs_lock);
	b->iface.free(b);
}

bool backend_lost(const struct backend *b)
{
	return atomic_load_explicit(&b->lost, memory_order_acquire) != 0;
}

const char *backend_lost_why(const struct backend *b)
{
	return atomic_load_explicit(&b->lost, memory_order_acquire) == 2 ? b->lost_why : "";
}

int backend_health(struct backend *b)
{
	if (backend_lost(b))
		return cep__set_error(CEP_ECONTEXT, "the %s backend's context was lost "
				      "before", b->iface.name);
	return b->iface.health ? noted(b, b->iface.health(b)) : 0;
}

int backend_fault_inject(struct backend *b)
{
	if (!b->iface.fault_inject)
		return cep__set_error(CEP_ENOTSUP, "fault injection is compiled only into "
				      "test builds (CEP_FAULT_INJECT)");
	return noted(b, b->iface.fault_inject(b));
}

void backend_counters_get(const struct backend *b, struct backend_counters *out)
{
	out->allocs = atomic_load_explicit(&b->count.allocs, relaxed);
	out->frees = atomic_load_explicit(&b->count.frees, relaxed);
	out->bytes_live = atomic_load_explicit(&b->count.bytes_live, relaxed);
	out->bytes_peak = atomic_load_explicit(&b->count.bytes_peak, relaxed);
	out->copies_h2d = atomic_load_explicit(&b->count.copies_h2d, relaxed);
	out->copies_d2h = atomic_load_explicit(&b->count.copies_d2h, relaxed);
	out->copies_d2d = atomic_load_explicit(&b->count.copies_d2d, relaxed);
	out->bytes_h2d = atomic_load_explicit(&b->count.bytes_h2d, relaxed);
	out->bytes_d2h = atomic_load_explicit(&b->count.bytes_d2h, relaxed);
	out->bytes_d2d = atomic_load_explicit(&b->count.bytes_d2d, relaxed);
	out->bytes_h2d_pinned = atomic_load_explicit(&b->count.bytes_h2d_pinned, relaxed);
	out->bytes_h2d_pageable = out->bytes_h2d - out->bytes_h2d_pinned;
	out->bytes_d2h_pinned = atomic_load_explicit(&b->count.bytes_d2h_pinned, relaxed);
	out->bytes_d2h_pageable = out->bytes_d2h - out->bytes_d2h_pinned;
	out->launches = atomic_load_explicit(&b->count.launches, relaxed);
	out->captures = atomic_load_explicit(&b->count.captures, relaxed);
	out->replays = atomic_load_explicit(&b->count.replays, relaxed);
	out->syncs = atomic_load_explicit(&b->count.syncs, relaxed);
	out->host_registers = atomic_load_explicit(&b->count.host_registers, relaxed);
	out->host_unregisters = atomic_load_explicit(&b->count.host_unregisters, relaxed);
	out->host_bytes = atomic_load_explicit(&b->count.host_bytes, relaxed);
	out->fences = atomic_load_explicit(&b->count.fences, relaxed);
	out->host_fns = atomic_load_explicit(&b->count.host_fns, relaxed);
	out->fault_saves = atomic_load_explicit(&b->count.fault_saves, relaxed);
}

/* ----------------------------------------------------------------- memory */

int backend_mem_alloc(struct backend *b, size_t bytes, void **out)
{
	uint64_t live, peak;
	int ret;

	*out = NULL;
	if (bytes == 0)
		bytes = 1;
	ret = noted(b, b->iface.mem_alloc(b, bytes, out));
	if (ret < 0)
		return ret;
	atomic_fetch_add_explicit(&b->count.allocs, 1, relaxed);
	live = atomic_fetch_add_explicit(&b->count.bytes_live, bytes, relaxed) + bytes;
	peak = atomic_load_explicit(&b->count.bytes_peak, relaxed);
	while (live > peak &&
	       !atomic_compare_exchange_weak_explicit(&b->count.bytes_peak, &peak,
						      live, relaxed, relaxed))
		;
	return 0;
}

void backend_mem_free(struct backend *b, void *ptr, size_t bytes)
{
	if (!ptr)
		return;
	if (bytes == 0)
		bytes = 1;
	b->iface.mem_free(b, ptr);
	atomic_fetch_add_explicit(&b->count.frees, 1, relaxed);
	atomic_fetch_sub_explicit(&b->count.bytes_live, bytes, relaxed);
}

/* ------------------------------------------------------- streams, events */

int backend_stream_new(struct backend *b, int priority,
		       struct backend_stream **out)
{
	*out = NULL;
	return noted(b, b->iface.stream_new(b, priority, out));
}

void backend_stream_free(struct backend *b, struct backend_stream *s)
{
	if (s)
		b->iface.stream_free(b, s);
}

int backend_stream_sync(struct backend *b, struct backend_stream *s)
{
	atomic_fetch_add_explicit(&b->count.syncs, 1, relaxed);
	return noted(b, b->iface.stream_sync(b, s));
}

int backend_stream_wait(struct backend *b, struct backend_stream *s,
			struct backend_event *e)
{
	return noted(b, b->iface.stream_wait(b, s, e));
}

int backend_event_new(struct backend *b, struct backend_event **out)
{
	*out = NULL;
	return noted(b, b->iface.event_new(b, out));
}

void backend_event_free(struct backend *b, struct backend_event *e)
{
	if (e)
		b->iface.event_free(b, e);
}

int backend_event_record(struct backend *b, struct backend_event *e,
			 struct backend_stream *s)
{
	return noted(b, b->iface.event_record(b, e, s));
}

int backend_timer_new(struct backend *b, struct backend_event **out)
{
	*out = NULL;
	if (!b->iface.timer_new)
		return cep__set_error(CEP_ENOTSUP, "the %s backend has no timers", b->iface.name);
	return b->iface.timer_new(b, out);
}

int backend_event_elapsed(struct backend *b, struct backend_event *start,
			  struct backend_event *end, double *ms)
{
	*ms = 0;
	if (!b->iface.event_elapsed)
		return cep__set_error(CEP_ENOTSUP, "the %s backend has no timers", b->iface.name);
	return b->iface.event_elapsed(b, start, end, ms);
}

int backend_event_query(struct backend *b, struct backend_event *e)
{
	return noted(b, b->iface.event_query(b, e));
}

int backend_event_sync(struct backend *b, struct backend_event *e)
{
	atomic_fetch_add_explicit(&b->count.syncs, 1, relaxed);
	return noted(b, b->iface.event_sync(b, e));
}

/* ----------------------------------------------------------------- copies */

int backend_copy_h2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_h2d, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_h2d, bytes, relaxed);
	if (backend_host_registered(b, src, bytes, NULL))
		atomic_fetch_add_explicit(&b->count.bytes_h2d_pinned, bytes, relaxed);
	return noted(b, b->iface.copy_h2d(b, s, dst, src, bytes));
}

int backend_copy_d2h(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_d2h, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_d2h, bytes, relaxed);
	if (backend_host_registered(b, dst, bytes, NULL))
		atomic_fetch_add_explicit(&b->count.bytes_d2h_pinned, bytes, relaxed);
	return noted(b, b->iface.copy_d2h(b, s, dst, src, bytes));
}

int backend_copy_d2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_d2d, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_d2d, bytes, relaxed);
	return noted(b, b->iface.copy_d2d(b, s, dst, src, bytes));
}

int backend_copy_d2d_2d(struct backend *b, struct backend_stream *s, void *dst,
			size_t dpitch, const void *src, size_t spitch, size_t width,
			size_t rows)
{
	size_t i;
	int ret = 0;

	if (width == 0 || rows == 0)
		return 0;
	if (dpitch < width || spitch < width)
		return cep__set_error(CEP_EINVAL, "a 2-D copy of rows of %zu bytes with "
				      "pitches %zu and %zu", width, dpitch, spitch);
	atomic_fetch_add_explicit(&b->count.copies_d2d, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_d2d, width * rows, relaxed);
	if (b->iface.copy_d2d_2d)
		return noted(b, b->iface.copy_d2d_2d(b, s, dst, dpitch, src, spitch, width,
						     rows));
	for (i = 0; i < rows && ret == 0; i++)
		ret = b->iface.copy_d2d(b, s, (unsigned char *)dst + i * dpitch,
					(const unsigned char *)src + i * spitch, width);
	return noted(b, ret);
}

/* ----------------------------------------------------------------- graphs */

static int no_graphs(const struct backend *b)
{
	return cep__set_error(CEP_ENOTSUP, "the %s backend does not capture graphs",
			      b->iface.name);
}

/* A capture closes the gate for registrations until it ends. */
static void gate_capture_enter(struct backend *b)
{
	pthread_mutex_lock(&b->gate_lock);
	b->captures_open++;
	pthread_mutex_unlock(&b->gate_lock);
}

static void gate_capture_leave(struct backend *b)
{
	pthread_mutex_lock(&b->gate_lock);
	if (--b->captures_open == 0)
		pthread_cond_broadcast(&b->gate_open);
	pthread_mutex_unlock(&b->gate_lock);
}

int backend_graph_begin(struct backend *b, struct backend_stream *s)
{
	int ret;

	if (!(b->caps & BACKEND_CAP_GRAPHS) || !b->iface.graph_begin)
		return no_graphs(b);
	gate_capture_enter(b);
	ret = noted(b, b->iface.graph_begin(b, s));
	if (ret < 0)
		gate_capture_leave(b);
	return ret;
}

int backend_graph_end(struct backend *b, struct backend_stream *s,
		      struct backend_graph **out)
{
	int ret;

	*out = NULL;
	if (!(b->caps & BACKEND_CAP_GRAPHS) || !b->iface.graph_end)
		return no_graphs(b);
	ret = noted(b, b->iface.graph_end(b, s, out));
	/* Only a stream that was not capturing is refused with EINVAL; any
	 * other outcome ended a capture that began through the gate. */
	if (ret != CEP_EINVAL)
		gate_capture_leave(b);
	if (ret == 0)
		atomic_fetch_add_explicit(&b->count.captures, 1, relaxed);
	return ret;
}

int backend_graph_replay(struct backend *b, struct backend_graph *g,
			 struct backend_stream *s)
{
	if (!(b->caps & BACKEND_CAP_GRAPHS) || !b->iface.graph_replay)
		return no_graphs(b);
	atomic_fetch_add_explicit(&b->count.replays, 1, relaxed);
	return noted(b, b->iface.graph_replay(b, g, s));
}

void backend_graph_free(struct backend *b, struct backend_graph *g)
{
	if (g && b->iface.graph_free)
		b->iface.graph_free(b, g);
}

/* ---------------------------------------------------------------- kernels */

int backend_launch(struct backend *b, struct backend_stream *s,
		   backend_kernel_fn fn, struct op_call *call)
{
	atomic_fetch_add_explicit(&b->count.launches, 1, relaxed);
	return noted(b, b->iface.launch(b, s, fn, call));
}

const struct op_call *backend_stream_fault(struct backend *b,
					   struct backend_stream *s)
{
	return b->iface.stream_fault ? b->iface.stream_fault(b, s) : NULL;
}

/* ------------------------------------------- registered memory, fences */

/* The index of the first range that starts above addr. Called with
 * regs_lock held. */
static size_t regs_upper(const struct backend *b, uintptr_t addr)
{
	size_t lo = 0, hi = b->n_regs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->regs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool backend_host_registered(struct backend *b, const void *addr, size_t bytes,
			     uint64_t *dev)
{
	uintptr_t a = (uintptr_t)addr;
	const struct backend_host_reg *r;
	bool in = false;
	size_t i;

	pthread_mutex_lock(&b->regs_lock);
	i = regs_upper(b, a);
	if (i > 0) {
		r = &b->regs[i - 1];
		in = a - r->addr < r->bytes && bytes <= r->bytes - (a - r->addr);
		if (in && dev)
			*dev = r->dev + (a - r->addr);
	}
	pthread_mutex_unlock(&b->regs_lock);
	return in;
}

/* Whether [a, a + bytes) overlaps a registered range. Called with
 * regs_lock held; i is regs_upper(a). */
static bool regs_overlap(const struct backend *b, size_t i, uintptr_t a, size_t bytes)
{
	if (i > 0 && a - b->regs[i - 1].addr < b->regs[i - 1].bytes)
		return true;
	return i < b->n_regs && b->regs[i].addr - a < bytes;
}

static int regs_insert(struct backend *b, uintptr_t a, size_t bytes, uint64_t dev)
{
	size_t i;

	pthread_mutex_lock(&b->regs_lock);
	if (b->n_regs == b->cap_regs) {
		size_t cap = b->cap_regs ? 2 * b->cap_regs : 16;
		struct backend_host_reg *regs = realloc(b->regs, cap * sizeof(*regs));

		if (!regs) {
			pthread_mutex_unlock(&b->regs_lock);
			return cep__set_error(CEP_ENOMEM, "out of memory registering host memory");
		}
		b->regs = regs;
		b->cap_regs = cap;
	}
	i = regs_upper(b, a);
	memmove(&b->regs[i + 1], &b->regs[i], (b->n_regs - i) * sizeof(*b->regs));
	b->regs[i] = (struct backend_host_reg){ .addr = a, .bytes = bytes, .dev = dev };
	b->n_regs++;
	pthread_mutex_unlock(&b->regs_lock);
	return 0;
}

/* Waits until no capture is open, and returns with gate_lock held, so
 * that none opens until the caller is done. */
static void gate_register_enter(struct backend *b)
{
	pthread_mutex_lock(&b->gate_lock);
	while (b->captures_open > 0)
		pthread_cond_wait(&b->gate_open, &b->gate_lock);
}

int backend_host_register(struct backend *b, void *addr, size_t bytes)
{
	uintptr_t a = (uintptr_t)addr;
	uint64_t dev = 0;
	bool overlap;
	int ret;

	if (!addr || bytes == 0 || a + bytes < a)
		return cep__set_error(CEP_EINVAL, "registering %zu bytes at %p", bytes, addr);
	gate_register_enter(b);
	pthread_mutex_lock(&b->regs_lock);
	overlap = regs_overlap(b, regs_upper(b, a), a, bytes);
	pthread_mutex_unlock(&b->regs_lock);
	if (overlap) {
		ret = cep__set_error(CEP_EINVAL, "host memory at %p (%zu bytes) overlaps "
				     "memory registered before", addr, bytes);
		goto out;
	}
	ret = noted(b, b->iface.host_register(b, addr, bytes, &dev));
	if (ret < 0)
		goto out;
	ret = regs_insert(b, a, bytes, dev);
	if (ret < 0) {
		b->iface.host_unregister(b, addr);
		goto out;
	}
	atomic_fetch_add_explicit(&b->count.host_registers, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.host_bytes, bytes, relaxed);
out:
	pthread_mutex_unlock(&b->gate_lock);
	return ret;
}

void backend_host_unregister(struct backend *b, void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i, bytes = 0;
	bool found = false;

	if (!addr)
		return;
	gate_register_enter(b);
	pthread_mutex_lock(&b->regs_lock);
	i = regs_upper(b, a);
	if (i > 0 && b->regs[i - 1].addr == a) {
		bytes = b->regs[i - 1].bytes;
		memmove(&b->regs[i - 1], &b->regs[i], (b->n_regs - i) * sizeof(*b->regs));
		b->n_regs--;
		found = true;
	}
	pthread_mutex_unlock(&b->regs_lock);
	if (found) {
		b->iface.host_unregister(b, addr);
		atomic_fetch_add_explicit(&b->count.host_unregisters, 1, relaxed);
		atomic_fetch_sub_explicit(&b->count.host_bytes, bytes, relaxed);
	}
	pthread_mutex_unlock(&b->gate_lock);
}

int backend_stream_write_value64(struct backend *b, struct backend_stream *s,
				 uint64_t *addr, uint64_t value)
{
	uint64_t dev;
	int ret;

	if ((uintptr_t)addr % sizeof(uint64_t) != 0 ||
	    !backend_host_registered(b, addr, sizeof(*addr), &dev))
		return cep__set_error(CEP_EINVAL, "a fence at %p is not 8 bytes of aligned "
				      "registered host memory", (void *)addr);
	ret = noted(b, b->iface.stream_write_value64(b, s, addr, dev, value));
	if (ret == 0)
		atomic_fetch_add_explicit(&b->count.fences, 1, relaxed);
	return ret;
}

int backend_stream_host_fn(struct backend *b, struct backend_stream *s,
			   backend_host_fn fn, void *arg)
{
	/* Counted first: on the host backend fn runs inside the call, and
	 * may be what a waiter checks the count after. */
	atomic_fetch_add_explicit(&b->count.host_fns, 1, relaxed);
	return noted(b, b->iface.stream_host_fn(b, s, fn, arg));
}

int backend_stream_fault_save(struct backend *b, struct backend_stream *s,
			      struct backend_fault *dst)
{
	int ret;

	if (!backend_host_registered(b, dst, sizeof(*dst), NULL))
		return cep__set_error(CEP_EINVAL, "a fault record at %p is not in registered "
				      "host memory", (void *)dst);
	if (!b->iface.stream_fault_save) {
		memset(dst, 0, sizeof(*dst));
		return 0;
	}
	ret = noted(b, b->iface.stream_fault_save(b, s, dst));
	if (ret > 0)
		atomic_fetch_add_explicit(&b->count.fault_saves, 1, relaxed);
	return ret;
}

/* The error of fault record f (a kind of enum backend_fault_kind) of a
 * launch of op. */
static int fault_kind_error(const struct backend_fault *f, const char *op)
{
	union {
		int32_t i;
		float f;
	} ratio;

	switch (f->flag) {
	case BACKEND_FAULT_INDEX:
		return cep__set_error(CEP_EINVAL, "%s: index %" PRId64 " is out of range for "
				      "dimension %d of size %" PRId64, op, f->value,
				      (int)f->axis, f->limit);
	case BACKEND_FAULT_AXIS:
		return cep__set_error(CEP_EINVAL, "%s: axes entry %d is %" PRId64 ", out of range "
				      "for rank %" PRId64 " or repeated", op, (int)f->axis,
				      f->value, f->limit);
	case BACKEND_FAULT_SHAPE:
		return cep__set_error(CEP_EINVAL, "%s: the values of its inputs give %" PRId64
				      " elements along dimension %d, where the plan made for "
				      "the shapes has %" PRId64, op, f->value, (int)f->axis,
				      f->limit);
	case BACKEND_FAULT_STEP:
		return cep__set_error(CEP_EINVAL, "%s: the step along dimension %d is 0", op,
				      (int)f->axis);
	case BACKEND_FAULT_TRAINING:
		ratio.i = (int32_t)f->value;
		return cep__set_error(CEP_EUNSUPPORTED, "%s: training_mode is true with ratio "
				      "%g; only inference (training_mode false) is supported",
				      op, (double)ratio.f);
	case BACKEND_FAULT_VALUE:
		return cep__set_error(CEP_EINVAL, "%s: the value %" PRId64 " read at run time for "
				      "dimension %d is not allowed%s", op, f->value, (int)f->axis,
				      f->limit ? " (past the limit)" : "");
	default:
		return cep__set_error(CEP_EDEVICE, "%s: the device latched fault kind %u", op,
				      (unsigned)f->flag);
	}
}

int backend_fault_error(const struct backend_fault *f, const struct op_call **call)
{
	const struct op_call *c;

	if (call)
		*call = NULL;
	if (f->flag == 0)
		return 0;
	/* site is what the launcher passed to its kernel: the address of its
	 * op_call, which lives as long as the plan that made it. */
	c = (const struct op_call *)(uintptr_t)f->site;
	if (call)
		*call = c;
	if (f->code != 0)
		return cep__set_error(f->code, "%.*s", (int)sizeof(f->msg), f->msg);
	return fault_kind_error(f, c != NULL && c->node != NULL ? c->node->op_type : "a kernel");
}

/* ------------------------------------------------------------ inspection */

int backend_kernels_get(struct backend *b, struct backend_kernel *out, size_t max,
			size_t *n, struct backend_kernel_totals *totals)
{
	*n = 0;
	memset(totals, 0, sizeof(*totals));
	if (!b->iface.kernels)
		return cep__set_error(CEP_ENOTSUP, "the %s backend has no device kernels: it "
				      "runs the CPU reference kernels", b->iface.name);
	return b->iface.kernels(b, out, max, n, totals);
}
