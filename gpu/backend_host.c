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
 * With BACKEND_HOST_ASYNC a stream is a queue instead, run in order by a
 * thread of its own, as a GPU runs a stream: copies, launches, fences and
 * host functions are done after the call that queued them returns, events
 * complete when the queue reaches them, and a kernel's failure is latched
 * like a device fault, reported by the next sync or fault record. Clients
 * see the timing of a GPU (replies before completions) on any machine.
 *
 * A lost context: builds with CEP_FAULT_INJECT can poison the backend
 * (iface.fault_inject), after which it behaves as a CUDA context after an
 * illegal address: every copy, launch, sync, event and host function call
 * fails with CEP_ECONTEXT, the queued work of asynchronous streams is
 * dropped and their host functions never run. Freeing still works. The
 * poisoned flag is checked in every build (it is one load); only the
 * function that sets it is compiled into test builds.
 *
 * Graphs: with BACKEND_HOST_GRAPHS a stream between graph_begin and
 * graph_end records its copies and launches instead of running them, and a
 * replay runs the record in order, exactly the contract of a CUDA graph.
 * Without the flag the backend says it has no graphs and the executor runs
 * everything eagerly.
 */
#include "gpu/backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/arena.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "kernels/ops.h"

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

/* One operation queued on an asynchronous stream. */
enum hop_kind {
	HOP_REC,                /* a copy or a launch: rec */
	HOP_REPLAY,             /* a graph's records, in order */
	HOP_HOST_FN,
	HOP_WRITE64,
	HOP_WAIT,               /* until another queue has done ticket ops */
	HOP_FAULT_SAVE,         /* the latched failure into fault */
};

struct host_queue;

struct hop {
	enum hop_kind kind;
	union {
		struct rec rec;
		const struct backend_graph *graph;
		struct { backend_host_fn fn; void *arg; } host_fn;
		struct { uint64_t *addr; uint64_t value; } write;
		struct { struct host_queue *q; uint64_t ticket; } wait;
		struct backend_fault *fault;
	};
};

/* Ops a queue holds; a stream that has this many waiting blocks the
 * thread that queues more until one is done. */
#define QUEUE_OPS 4096

/* The work of an asynchronous stream, run in order by its own thread. */
struct host_queue {
	pthread_t thread;
	pthread_mutex_t lock;       /* guards everything below */
	pthread_cond_t work;        /* ops were queued, or stop */
	pthread_cond_t progress;    /* an op was done */
	struct hop ops[QUEUE_OPS];  /* op n is ops[n % QUEUE_OPS] */
	uint64_t queued;            /* ops queued so far */
	uint64_t done;              /* ops done so far */
	bool stop;
	int err;                    /* the first kernel failure since the last
	                             * sync or fault save, latched */
	char err_msg[220];          /* its message (as struct backend_fault's) */
	const struct op_call *err_call; /* the launch that failed */
	_Atomic bool *poisoned;     /* the backend's (struct host_ctx): ops
	                             * are dropped instead of done */
};

struct backend_stream {
	bool capturing;
	int capture_err;        /* first failure while recording, reported at end */
	struct rec *recs;       /* (n_recs) while capturing */
	size_t n_recs, cap_recs;
	struct host_queue *q;   /* BACKEND_HOST_ASYNC: its work; else NULL */
	const struct op_call *fault_call; /* the launch the last failed sync
	                                   * blamed, or NULL */
};

struct backend_event {
	bool recorded;
	uint64_t ns;            /* CLOCK_MONOTONIC when last recorded */
	struct host_queue *q;   /* on an asynchronous stream: complete when */
	uint64_t ticket;        /* q has done this many ops */
};

struct backend_graph {
	struct rec *recs;       /* (n_recs), owned */
	size_t n_recs;
};

struct host_ctx {
	unsigned flags;               /* enum backend_host_flags */
	_Atomic bool poisoned;        /* lost on purpose (fault injection) */
	struct alloc_provider *prov;  /* owned; the memfd behind the arena */
	struct arena *arena;          /* owned; device memory */
};

/* The error of every call on a poisoned backend. */
static int host_lost(void)
{
	return cep__set_error(CEP_ECONTEXT, "host backend: the context was lost (poisoned by "
			      "fault injection, as CUDA_ERROR_ILLEGAL_ADDRESS poisons a "
			      "CUDA context)");
}

static bool host_poisoned(const struct backend *b)
{
	return atomic_load_explicit(&((struct host_ctx *)b->ctx)->poisoned,
				    memory_order_acquire);
}

/* ----------------------------------------------------------------- memory */

/* The arena charges nothing: the engine charges its owners itself
 * (engine/engine.h), so the block's owner and role here are placeholders. */
static int host_mem_alloc(struct backend *b, size_t bytes, void **out)
{
	struct host_ctx *ctx = b->ctx;
	struct arena_block *blk;
	int ret;

	if (host_poisoned(b))
		return host_lost();
	ret = arena_block_alloc(ctx->arena, bytes, BACKEND_ALIGN, ALLOC_OWNER_SHARED,
				ALLOC_ROLE_ACTIVATIONS, &blk);
	if (ret < 0)
		return ret;
	*out = (void *)(uintptr_t)arena_block_addr(blk);
	return 0;
}

/* The engine frees a block only once no queued work uses it (on a
 * synchronous stream, that is as soon as it is queued), so the arena may
 * reuse it at once. */
static void host_mem_free(struct backend *b, void *ptr)
{
	struct host_ctx *ctx = b->ctx;
	struct arena_block *blk = arena_block_lookup(ctx->arena, (uint64_t)(uintptr_t)ptr);

	if (blk == NULL) {
		log_err("host backend: freeing %p, which it never allocated", ptr);
		return;
	}
	arena_block_free(ctx->arena, blk);
}

/* ---------------------------------------------------------------- streams */

/* ----------------------------------------------------- asynchronous queue */

static void queue_latch(struct host_queue *q, int err, const struct op_call *call)
{
	pthread_mutex_lock(&q->lock);
	if (q->err == 0) {
		q->err = err;
		snprintf(q->err_msg, sizeof(q->err_msg), "%s", cep_last_error());
		q->err_call = call;
	}
	pthread_mutex_unlock(&q->lock);
}

static void queue_rec_run(struct host_queue *q, const struct rec *r)
{
	int ret;

	if (r->kind == REC_COPY) {
		memmove(r->dst, r->src, r->bytes);
		return;
	}
	cep__clear_error();
	ret = r->fn(r->call);
	/* A failed kernel does not stop the stream, as a device's latched
	 * fault does not: later work runs on whatever it left. */
	if (ret < 0)
		queue_latch(q, ret, r->call);
}

static void queue_wait(struct host_queue *q, uint64_t ticket)
{
	pthread_mutex_lock(&q->lock);
	while (q->done < ticket)
		pthread_cond_wait(&q->progress, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

static void queue_op_run(struct host_queue *q, const struct hop *op)
{
	struct backend_fault *f;
	size_t i;

	switch (op->kind) {
	case HOP_REC:
		queue_rec_run(q, &op->rec);
		break;
	case HOP_REPLAY:
		for (i = 0; i < op->graph->n_recs; i++)
			queue_rec_run(q, &op->graph->recs[i]);
		break;
	case HOP_HOST_FN:
		op->host_fn.fn(op->host_fn.arg);
		break;
	case HOP_WRITE64:
		atomic_store_explicit((_Atomic uint64_t *)op->write.addr, op->write.value,
				      memory_order_release);
		break;
	case HOP_WAIT:
		queue_wait(op->wait.q, op->wait.ticket);
		break;
	case HOP_FAULT_SAVE:
		f = op->fault;
		memset(f, 0, sizeof(*f));
		pthread_mutex_lock(&q->lock);
		if (q->err != 0) {
			f->flag = 1;
			f->code = q->err;
			f->site = (uint64_t)(uintptr_t)q->err_call;
			snprintf(f->msg, sizeof(f->msg), "%s", q->err_msg);
			q->err = 0;
		}
		pthread_mutex_unlock(&q->lock);
		break;
	}
}

static void *queue_main(void *arg)
{
	struct host_queue *q = arg;
	struct hop op;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (q->done == q->queued && !q->stop)
			pthread_cond_wait(&q->work, &q->lock);
		if (q->done == q->queued)
			break;
		op = q->ops[q->done % QUEUE_OPS];
		pthread_mutex_unlock(&q->lock);
		/* A lost device does nothing more, host functions included. */
		if (!atomic_load_explicit(q->poisoned, memory_order_acquire))
			queue_op_run(q, &op);
		pthread_mutex_lock(&q->lock);
		q->done++;
		pthread_cond_broadcast(&q->progress);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* Queues op; returns the number of ops queued with it (its ticket). */
static uint64_t queue_push(struct host_queue *q, const struct hop *op)
{
	uint64_t ticket;

	pthread_mutex_lock(&q->lock);
	while (q->queued - q->done == QUEUE_OPS)
		pthread_cond_wait(&q->progress, &q->lock);
	q->ops[q->queued % QUEUE_OPS] = *op;
	ticket = ++q->queued;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	return ticket;
}

static uint64_t queue_tail(struct host_queue *q)
{
	uint64_t t;

	pthread_mutex_lock(&q->lock);
	t = q->queued;
	pthread_mutex_unlock(&q->lock);
	return t;
}

/* Waits for everything queued, stops the thread and frees q. */
static void queue_free(struct host_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	pthread_cond_destroy(&q->progress);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

static int queue_new(_Atomic bool *poisoned, struct host_queue **out)
{
	struct host_queue *q = calloc(1, sizeof(*q));

	*out = NULL;
	if (!q)
		return cep__set_error(CEP_ENOMEM, "host backend: out of memory for a stream");
	q->poisoned = poisoned;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->progress, NULL);
	if (pthread_create(&q->thread, NULL, queue_main, q) != 0) {
		pthread_cond_destroy(&q->progress);
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->lock);
		free(q);
		return cep__set_error(CEP_ENOMEM, "host backend: cannot start a stream's thread");
	}
	*out = q;
	return 0;
}

/* ---------------------------------------------------------------- streams */

static int host_stream_new(struct backend *b, int priority,
			   struct backend_stream **out)
{
	struct host_ctx *ctx = b->ctx;
	int ret;

	if (host_poisoned(b))
		return host_lost();
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return cep__set_error(CEP_ENOMEM, NULL);
	if (ctx->flags & BACKEND_HOST_ASYNC) {
		ret = queue_new(&ctx->poisoned, &(*out)->q);
		if (ret < 0) {
			free(*out);
			*out = NULL;
			return ret;
		}
	}
	return 0;
}

static void host_stream_free(struct backend *b, struct backend_stream *s)
{
	if (s->q)
		queue_free(s->q);
	free(s->recs);
	free(s);
}

/* Waits for the queue, then reports a kernel's failure latched since the
 * last sync, as a device reports a fault. */
static int host_stream_sync(struct backend *b, struct backend_stream *s)
{
	struct host_queue *q = s->q;
	int ret = 0;

	s->fault_call = NULL;
	if (host_poisoned(b))
		return host_lost();
	if (!q)
		return 0;
	queue_wait(q, queue_tail(q));
	pthread_mutex_lock(&q->lock);
	if (q->err != 0) {
		s->fault_call = q->err_call;
		ret = cep__set_error(q->err, "%s", q->err_msg);
		q->err = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static const struct op_call *host_stream_fault(struct backend *b, struct backend_stream *s)
{
	return s->fault_call;
}

static int host_stream_wait(struct backend *b, struct backend_stream *s,
			    struct backend_event *e)
{
	struct hop op = { .kind = HOP_WAIT };

	if (host_poisoned(b))
		return host_lost();
	if (!s->q || !e->q || e->q == s->q)
		return 0;
	op.wait.q = e->q;
	op.wait.ticket = e->ticket;
	queue_push(s->q, &op);
	return 0;
}

/* Each run keeps its own record of a failure, as a device copies its
 * fault record back behind the run. */
static int host_stream_fault_save(struct backend *b, struct backend_stream *s,
				  struct backend_fault *dst)
{
	struct hop op = { .kind = HOP_FAULT_SAVE, .fault = dst };

	if (host_poisoned(b))
		return host_lost();
	if (!s->q) {
		memset(dst, 0, sizeof(*dst));
		return 0;
	}
	queue_push(s->q, &op);
	return 1;
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
	if (host_poisoned(b))
		return host_lost();
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
	struct timespec ts;

	if (host_poisoned(b))
		return host_lost();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	e->recorded = true;
	e->q = s ? s->q : NULL;
	e->ticket = e->q ? queue_tail(e->q) : 0;
	e->ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

/* On a synchronous host stream work is done when queued, so the time an
 * event was recorded is the time everything before it completed (on an
 * asynchronous one it is only when it was queued: profile on the former). */
static int host_event_elapsed(struct backend *b, struct backend_event *start,
			      struct backend_event *end, double *ms)
{
	*ms = ((double)end->ns - (double)start->ns) / 1e6;
	return 0;
}

/* Work on a synchronous host stream is done when queued, so an event
 * recorded there is complete at once; one never recorded is, like CUDA's,
 * complete too. */
static int host_event_query(struct backend *b, struct backend_event *e)
{
	int ret = 0;

	if (host_poisoned(b))
		return host_lost();
	if (!e->q)
		return 0;
	pthread_mutex_lock(&e->q->lock);
	if (e->q->done < e->ticket)
		ret = CEP_EAGAIN;
	pthread_mutex_unlock(&e->q->lock);
	return ret;
}

static int host_event_sync(struct backend *b, struct backend_event *e)
{
	if (host_poisoned(b))
		return host_lost();
	if (e->q)
		queue_wait(e->q, e->ticket);
	return 0;
}

/* ----------------------------------------------------------------- copies */

static int host_copy(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes)
{
	struct hop op = { .kind = HOP_REC };

	if (host_poisoned(b))
		return host_lost();
	if (s && s->capturing) {
		struct rec r = { .kind = REC_COPY, .dst = dst, .src = src, .bytes = bytes };

		return stream_record(s, &r);
	}
	if (s && s->q) {
		op.rec = (struct rec){ .kind = REC_COPY, .dst = dst, .src = src, .bytes = bytes };
		queue_push(s->q, &op);
		return 0;
	}
	memmove(dst, src, bytes);
	return 0;
}

/* ---------------------------------------------------------------- kernels */

static int host_launch(struct backend *b, struct backend_stream *s,
		       backend_kernel_fn fn, struct op_call *call)
{
	struct hop op = { .kind = HOP_REC };

	if (host_poisoned(b))
		return host_lost();
	call->stream = NULL;
	if (s && s->capturing) {
		struct rec r = { .kind = REC_LAUNCH, .fn = fn, .call = call };

		return stream_record(s, &r);
	}
	if (s && s->q) {
		op.rec = (struct rec){ .kind = REC_LAUNCH, .fn = fn, .call = call };
		queue_push(s->q, &op);
		return 0;
	}
	return fn(call);
}

/* ----------------------------------------------------------------- graphs */

static void host_graph_free(struct backend *b, struct backend_graph *g);

static int host_graph_begin(struct backend *b, struct backend_stream *s)
{
	if (host_poisoned(b))
		return host_lost();
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
	struct hop op = { .kind = HOP_REPLAY, .graph = g };
	size_t i;
	int ret;

	if (host_poisoned(b))
		return host_lost();
	if (s->q) {
		queue_push(s->q, &op);
		return 0;
	}
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
	struct hop op = { .kind = HOP_WRITE64, .write = { host, value } };

	if (host_poisoned(b))
		return host_lost();
	if (s && s->capturing)
		return cep__set_error(CEP_EINVAL, "host backend: a fence cannot be captured");
	if (s && s->q) {
		queue_push(s->q, &op);
		return 0;
	}
	atomic_store_explicit((_Atomic uint64_t *)host, value, memory_order_release);
	return 0;
}

static int host_stream_host_fn(struct backend *b, struct backend_stream *s,
			       backend_host_fn fn, void *arg)
{
	struct hop op = { .kind = HOP_HOST_FN, .host_fn = { fn, arg } };

	if (host_poisoned(b))
		return host_lost();
	if (s && s->capturing)
		return cep__set_error(CEP_EINVAL, "host backend: a host function cannot be "
				      "captured");
	if (s && s->q) {
		queue_push(s->q, &op);
		return 0;
	}
	fn(arg);
	return 0;
}

/* ----------------------------------------------------- health, faults */

static int host_health(struct backend *b)
{
	return host_poisoned(b) ? host_lost() : 0;
}

#ifdef CEP_FAULT_INJECT
/* Loses the context at once: work queued on any stream is dropped from
 * here on and its host functions never run, as on a faulted GPU. */
static int host_fault_inject(struct backend *b)
{
	atomic_store_explicit(&((struct host_ctx *)b->ctx)->poisoned, true,
			      memory_order_release);
	log_warning("host backend: fault injected; the context is lost");
	return host_lost();
}
#endif

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
	if (flags & BACKEND_HOST_ASYNC)
		b->caps |= BACKEND_CAP_ASYNC;
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
		.timer_new = host_event_new,
		.event_elapsed = host_event_elapsed,
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
		.health = host_health,
	};
#ifdef CEP_FAULT_INJECT
	b->iface.fault_inject = host_fault_inject;
#endif
	if (flags & BACKEND_HOST_ASYNC) {
		b->iface.stream_fault = host_stream_fault;
		b->iface.stream_fault_save = host_stream_fault_save;
	}
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
