/*
 * backend.c — the wrappers of the backend seam (gpu/backend.h): one place
 * that checks arguments and keeps the counters for every backend, so that
 * the host and CUDA implementations stay plain and the counts mean the
 * same thing on both.
 */
#include "backend.h"

#include "cudaep.h"
#include "error.h"

#define relaxed memory_order_relaxed

const char *backend_kind_name(enum backend_kind kind)
{
	switch (kind) {
	case BACKEND_HOST: return "host";
	case BACKEND_CUDA: return "cuda";
	case BACKEND_KIND_COUNT: break;
	}
	return "unknown";
}

void backend_free(struct backend *b)
{
	if (b)
		b->iface.free(b);
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
	out->launches = atomic_load_explicit(&b->count.launches, relaxed);
	out->captures = atomic_load_explicit(&b->count.captures, relaxed);
	out->replays = atomic_load_explicit(&b->count.replays, relaxed);
	out->syncs = atomic_load_explicit(&b->count.syncs, relaxed);
}

/* ----------------------------------------------------------------- memory */

int backend_mem_alloc(struct backend *b, size_t bytes, void **out)
{
	uint64_t live, peak;
	int ret;

	*out = NULL;
	if (bytes == 0)
		bytes = 1;
	ret = b->iface.mem_alloc(b, bytes, out);
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
	return b->iface.stream_new(b, priority, out);
}

void backend_stream_free(struct backend *b, struct backend_stream *s)
{
	if (s)
		b->iface.stream_free(b, s);
}

int backend_stream_sync(struct backend *b, struct backend_stream *s)
{
	atomic_fetch_add_explicit(&b->count.syncs, 1, relaxed);
	return b->iface.stream_sync(b, s);
}

int backend_stream_wait(struct backend *b, struct backend_stream *s,
			struct backend_event *e)
{
	return b->iface.stream_wait(b, s, e);
}

int backend_event_new(struct backend *b, struct backend_event **out)
{
	*out = NULL;
	return b->iface.event_new(b, out);
}

void backend_event_free(struct backend *b, struct backend_event *e)
{
	if (e)
		b->iface.event_free(b, e);
}

int backend_event_record(struct backend *b, struct backend_event *e,
			 struct backend_stream *s)
{
	return b->iface.event_record(b, e, s);
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
	return b->iface.event_query(b, e);
}

int backend_event_sync(struct backend *b, struct backend_event *e)
{
	atomic_fetch_add_explicit(&b->count.syncs, 1, relaxed);
	return b->iface.event_sync(b, e);
}

/* ----------------------------------------------------------------- copies */

int backend_copy_h2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_h2d, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_h2d, bytes, relaxed);
	return b->iface.copy_h2d(b, s, dst, src, bytes);
}

int backend_copy_d2h(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_d2h, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_d2h, bytes, relaxed);
	return b->iface.copy_d2h(b, s, dst, src, bytes);
}

int backend_copy_d2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (bytes == 0)
		return 0;
	atomic_fetch_add_explicit(&b->count.copies_d2d, 1, relaxed);
	atomic_fetch_add_explicit(&b->count.bytes_d2d, bytes, relaxed);
	return b->iface.copy_d2d(b, s, dst, src, bytes);
}

/* ----------------------------------------------------------------- graphs */

static int no_graphs(const struct backend *b)
{
	return cep__set_error(CEP_ENOTSUP, "the %s backend does not capture graphs",
			      b->iface.name);
}

int backend_graph_begin(struct backend *b, struct backend_stream *s)
{
	if (!(b->caps & BACKEND_CAP_GRAPHS) || !b->iface.graph_begin)
		return no_graphs(b);
	return b->iface.graph_begin(b, s);
}

int backend_graph_end(struct backend *b, struct backend_stream *s,
		      struct backend_graph **out)
{
	int ret;

	*out = NULL;
	if (!(b->caps & BACKEND_CAP_GRAPHS) || !b->iface.graph_end)
		return no_graphs(b);
	ret = b->iface.graph_end(b, s, out);
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
	return b->iface.graph_replay(b, g, s);
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
	return b->iface.launch(b, s, fn, call);
}

const struct op_call *backend_stream_fault(struct backend *b,
					   struct backend_stream *s)
{
	return b->iface.stream_fault ? b->iface.stream_fault(b, s) : NULL;
}
