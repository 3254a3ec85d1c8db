/*
 * backend_host.c — the host backend: the backend seam (gpu/backend.h) on
 * the CPU.
 *
 * Device memory comes from an arena (alloc/arena.h) over the host
 * provider: process memory, mapped in granules, pooled and trimmed as on a
 * GPU, so the daemon's memory accounting and `cudaepctl trim` are real in
 * CI. Weights are still used in place (BACKEND_CAP_HOST_MEMORY) unless
 * BACKEND_HOST_UPLOAD_WEIGHTS asks for uploads. A stream runs each copy and launch
 * in the calling thread as it is queued (so events are complete as soon as
 * they are recorded), and the kernels are the reference kernels of
 * kernels/cpu. It is what cudaepd runs when there is no GPU and what GPU
 * kernels are checked against, so it is a real backend, not a mock.
 *
 * Registered memory is only recorded, fences are release stores made at
 * once, and host functions are called at once: the work before them is
 * done already.
 *
 * Graphs: with BACKEND_HOST_GRAPHS a stream between graph_begin and
 * graph_end records its copies and launches instead of running them, and a
 * replay runs the record in order, exactly the contract of a CUDA graph.
 * Without the flag the backend says it has no graphs and the executor runs
 * everything eagerly.
 */
#include "backend.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cudaep.h"
#include "error.h"
#include "ops.h"

enum rec_kind {
	REC_COPY,
	REC_LAUNCH,
};

/* One recorded operation of a graph. */
struct rec {
	enum rec_kind kind;
	void *dst;              /* REC_COPY */
	const void *src;
	size_t bytes;
	backend_kernel_fn fn;   /* REC_LAUNCH */
	struct op_call *call;
};

struct backend_stream {
	bool capturing;
	int capture_err;        /* first failure while recording, reported at end */
	struct rec *recs;       /* (n_recs) while capturing */
	size_t n_recs, cap_recs;
};

struct backend_event {
	bool recorded;
};

struct backend_graph {
	struct rec *recs;       /* (n_recs), owned */
	size_t n_recs;
};

struct host_ctx {
	unsigned flags;               /* enum backend_host_flags */
	struct alloc_provider *prov;  /* owned; the memfd behind the arena */
	struct arena *arena;          /* owned; device memory */
};

/* ----------------------------------------------------------------- memory */

/* The arena charges nothing: the engine charges its owners itself
 * (daemon/engine.h), so the block's owner and role here are placeholders. */
static int host_mem_alloc(struct backend *b, size_t bytes, void **out)
{
	struct host_ctx *ctx = b->ctx;
	struct arena_block *blk;
	int ret;

	ret = arena_block_alloc(ctx->arena, bytes, BACKEND_ALIGN, ALLOC_OWNER_SHARED,
				ALLOC_ROLE_ACTIVATIONS, &blk);
	if (ret < 0)
		return ret;
	*out = (void *)(uintptr_t)arena_block_addr(blk);
	return 0;
}

/* Host work is complete when queued, so a block is free to reuse at once. */
static void host_mem_free(struct backend *b, void *ptr)
{
	struct host_ctx *ctx = b->ctx;
	struct arena_block *blk = arena_block_lookup(ctx->arena, (uint64_t)(uintptr_t)ptr);

	if (blk == NULL) {
		fprintf(stderr, "<3>cudaep: host backend: freeing %p, which it never "
			"allocated\n", ptr);
		return;
	}
	arena_block_free(ctx->arena, blk);
}

/* ---------------------------------------------------------------- streams */

static int host_stream_new(struct backend *b, int priority,
			   struct backend_stream **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : cep__set_error(CEP_ENOMEM, NULL);
}

static void host_stream_free(struct backend *b, struct backend_stream *s)
{
	free(s->recs);
	free(s);
}

static int host_stream_sync(struct backend *b, struct backend_stream *s)
{
	return 0;
}

static int host_stream_wait(struct backend *b, struct backend_stream *s,
			    struct backend_event *e)
{
	return 0;
}

/* Appends an operation to a capturing stream; a failure is remembered and
 * reported by graph_end, as CUDA reports an invalidated capture. */
static int stream_record(struct backend_stream *s, const struct rec *r)
{
	if (s->n_recs == s->cap_recs) {
		size_t cap = s->cap_recs ? s->cap_recs * 2 : 64;
		struct rec *recs = realloc(s->recs, cap * sizeof(*recs));

		if (!recs) {
			s->capture_err = CEP_ENOMEM;
			return cep__set_error(CEP_ENOMEM, "host backend: out of memory capturing");
		}
		s->recs = recs;
		s->cap_recs = cap;
	}
	s->recs[s->n_recs++] = *r;
	return 0;
}

/* ----------------------------------------------------------------- events */

static int host_event_new(struct backend *b, struct backend_event **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : cep__set_error(CEP_ENOMEM, NULL);
}

static void host_event_free(struct backend *b, struct backend_event *e)
{
	free(e);
}

static int host_event_record(struct backend *b, struct backend_event *e,
			     struct backend_stream *s)
{
	e->recorded = true;
	return 0;
}

/* Work on a host stream is done when queued, so a recorded event is always
 * complete; one never recorded is, like CUDA's, complete too. */
static int host_event_query(struct backend *b, struct backend_event *e)
{
	return 0;
}

static int host_event_sync(struct backend *b, struct backend_event *e)
{
	return 0;
}

/* ----------------------------------------------------------------- copies */

static int host_copy(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	if (s && s->capturing) {
		struct rec r = { .kind = REC_COPY, .dst = dst, .src = src, .bytes = bytes };

		return stream_record(s, &r);
	}
	memmove(dst, src, bytes);
	return 0;
}

/* ---------------------------------------------------------------- kernels */

static int host_launch(struct backend *b, struct backend_stream *s,
		       backend_kernel_fn fn, struct op_call *call)
{
	call->stream = NULL;
	if (s && s->capturing) {
		struct rec r = { .kind = REC_LAUNCH, .fn = fn, .call = call };

		return stream_record(s, &r);
	}
	return fn(call);
}

/* ----------------------------------------------------------------- graphs */

static void host_graph_free(struct backend *b, struct backend_graph *g);

static int host_graph_begin(struct backend *b, struct backend_stream *s)
{
	if (s->capturing)
		return cep__set_error(CEP_EBUSY, "host backend: the stream is already capturing");
	s->capturing = true;
	s->capture_err = 0;
	s->n_recs = 0;
	return 0;
}

static int host_graph_end(struct backend *b, struct backend_stream *s,
			  struct backend_graph **out)
{
	struct backend_graph *g = NULL;
	int ret;

	if (!s->capturing)
		return cep__set_error(CEP_EINVAL, "host backend: the stream is not capturing");
	s->capturing = false;
	if (((struct host_ctx *)b->ctx)->flags & BACKEND_HOST_FAIL_CAPTURE) {
		ret = cep__set_error(CEP_ENOTSUP, "host backend: captures are refused "
				     "(BACKEND_HOST_FAIL_CAPTURE)");
		goto out;
	}
	if (s->capture_err) {
		ret = cep__set_error(s->capture_err, "host backend: the capture failed");
		goto out;
	}
	g = calloc(1, sizeof(*g));
	if (g && s->n_recs)
		g->recs = malloc(s->n_recs * sizeof(*g->recs));
	if (!g || (s->n_recs && !g->recs)) {
		ret = cep__set_error(CEP_ENOMEM, "host backend: out of memory ending a capture");
		goto out;
	}
	if (s->n_recs)
		memcpy(g->recs, s->recs, s->n_recs * sizeof(*g->recs));
	g->n_recs = s->n_recs;
	*out = g;
	g = NULL;
	ret = 0;
out:
	s->n_recs = 0;
	if (g)
		host_graph_free(b, g);
	return ret;
}

static int host_graph_replay(struct backend *b, struct backend_graph *g,
			     struct backend_stream *s)
{
	size_t i;
	int ret;

	for (i = 0; i < g->n_recs; i++) {
		const struct rec *r = &g->recs[i];

		if (r->kind == REC_COPY) {
			memmove(r->dst, r->src, r->bytes);
			continue;
		}
		ret = r->fn(r->call);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void host_graph_free(struct backend *b, struct backend_graph *g)
{
	free(g->recs);
	free(g);
}

/* ---------------------------------------------- registered memory, fences */

/* Host memory is what the "device" uses anyway: registering only records
 * the range (backend.c), so that fences and the pinned-copy counters work
 * as on a GPU. */
static int host_host_register(struct backend *b, void *addr, size_t bytes, uint64_t *dev)
{
	*dev = (uint64_t)(uintptr_t)addr;
	return 0;
}

static void host_host_unregister(struct backend *b, void *addr)
{
}

/* Everything queued before has completed, so the value goes out now; the
 * release store orders the outputs' writes before it for a reader that
 * loads it with acquire. */
static int host_write_value64(struct backend *b, struct backend_stream *s, uint64_t *host,
			      uint64_t dev, uint64_t value)
{
	if (s && s->capturing)
		return cep__set_error(CEP_EINVAL, "host backend: a fence cannot be captured");
	atomic_store_explicit((_Atomic uint64_t *)host, value, memory_order_release);
	return 0;
}

static int host_stream_host_fn(struct backend *b, struct backend_stream *s,
			       backend_host_fn fn, void *arg)
{
	if (s && s->capturing)
		return cep__set_error(CEP_EINVAL, "host backend: a host function cannot be "
				      "captured");
	fn(arg);
	return 0;
}

/* ------------------------------------------------------------- the backend */

static void host_ctx_free(struct host_ctx *ctx)
{
	if (!ctx)
		return;
	arena_free(ctx->arena);
	alloc_provider_free(ctx->prov);
	free(ctx);
}

static void host_free(struct backend *b)
{
	host_ctx_free(b->ctx);
	free(b);
}

int backend_host_new(unsigned flags, struct backend **out)
{
	struct backend *b = NULL;
	struct host_ctx *ctx = NULL;
	int ret = CEP_ENOMEM;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	ctx = calloc(1, sizeof(*ctx));
	if (!b || !ctx)
		goto out;
	ctx->flags = flags;
	ret = alloc_provider_host_new(NULL, &ctx->prov);
	if (ret < 0)
		goto out;
	ret = arena_new(ctx->prov, NULL, NULL, &ctx->arena);
	if (ret < 0)
		goto out;
	b->ctx = ctx;
	b->arena = ctx->arena;
	b->kind = BACKEND_HOST;
	b->caps = (flags & BACKEND_HOST_UPLOAD_WEIGHTS) ? 0 : BACKEND_CAP_HOST_MEMORY;
	if (flags & BACKEND_HOST_GRAPHS)
		b->caps |= BACKEND_CAP_GRAPHS;
	b->iface = (struct backend_iface){
		.name = "host",
		.device = "CPU (reference kernels)",
		.free = host_free,
		.mem_alloc = host_mem_alloc,
		.mem_free = host_mem_free,
		.stream_new = host_stream_new,
		.stream_free = host_stream_free,
		.stream_sync = host_stream_sync,
		.stream_wait = host_stream_wait,
		.event_new = host_event_new,
		.event_free = host_event_free,
		.event_record = host_event_record,
		.event_query = host_event_query,
		.event_sync = host_event_sync,
		.copy_h2d = host_copy,
		.copy_d2h = host_copy,
		.copy_d2d = host_copy,
		.graph_begin = host_graph_begin,
		.graph_end = host_graph_end,
		.graph_replay = host_graph_replay,
		.graph_free = host_graph_free,
		.launch = host_launch,
		.host_register = host_host_register,
		.host_unregister = host_host_unregister,
		.stream_write_value64 = host_write_value64,
		.stream_host_fn = host_stream_host_fn,
	};
	backend__init(b);
	*out = b;
	b = NULL;
	ctx = NULL;
	ret = 0;
out:
	host_ctx_free(ctx);
	free(b);
	if (ret == CEP_ENOMEM)
		return cep__set_error(ret, "host backend: out of memory");
	return ret;
}
