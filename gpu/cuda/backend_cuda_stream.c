/*
 * backend_cuda_stream.c — the CUDA backend's streams, events and graphs
 * (gpu/cuda/backend_cuda_priv.h).
 *
 * Streams are non-blocking streams with priorities. Each owns a small
 * fault record in device memory where kernels that index with data
 * (Gather, ...) latch the first bad index they meet. A sync after such
 * work copies the record back with the stream's own work (no extra
 * synchronization) and turns a latched fault into the run's error; a run
 * that does not sync copies its own record back (stream_fault_save) into
 * registered memory instead.
 *
 * Graphs are captured from a stream (thread-local capture mode, so other
 * threads may keep allocating meanwhile) and replayed as instantiated CUDA
 * graphs; a graph that captured a checking kernel arms its stream's
 * record on every replay.
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <stdlib.h>
#include <string.h>

#include "alloc/arena.h"
#include "client/cudaep.h"
#include "common/error.h"

/* ---------------------------------------------------------------- streams */

/* CUDA's priorities run from least (0) to greatest (a negative number);
 * normal sits between the two so that low and high both mean something. */
static int cuda_priority(const struct cuda_ctx *cc, int priority)
{
	switch (priority) {
	case CEP_PRIORITY_HIGH:
		return cc->prio_greatest;
	case CEP_PRIORITY_LOW:
		return cc->prio_least;
	default:
		return cc->prio_least + (cc->prio_greatest - cc->prio_least) / 2;
	}
}

static void cuda_stream_free(struct backend *b, struct backend_stream *s);

static int cuda_stream_new(struct backend *b, int priority, struct backend_stream **out)
{
	struct cuda_ctx *cc = b->ctx;
	struct backend_stream *s;
	void *host = NULL;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	ret = CEP_CU_CHECK(cc->drv->cuStreamCreateWithPriority(&s->stream, CU_STREAM_NON_BLOCKING,
								 cuda_priority(cc, priority)));
	if (ret < 0)
		goto out;
	ret = arena_block_alloc(cc->arena, sizeof(struct cuda_fault), BACKEND_ALIGN,
				ALLOC_OWNER_SHARED, ALLOC_ROLE_WORKSPACE, &s->fault_block);
	if (ret < 0)
		goto out;
	s->fault_dev = arena_block_addr(s->fault_block);
	ret = CEP_CU_CHECK(cc->drv->cuMemAllocHost(&host, sizeof(struct cuda_fault)));
	if (ret < 0)
		goto out;
	s->fault_host = host;
	memset(s->fault_host, 0, sizeof(*s->fault_host));
	/* Work on s runs after this, so the record is clear before any kernel
	 * of s can latch into it; nobody waits here. */
	ret = CEP_CU_CHECK(cc->drv->cuMemsetD32Async(s->fault_dev, 0,
						     sizeof(struct cuda_fault) / 4, s->stream));
	if (ret < 0)
		goto out;
	*out = s;
	s = NULL;
out:
	if (s != NULL)
		cuda_stream_free(b, s);
	return ret;
}

static void cuda_stream_free(struct backend *b, struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	CUgraph graph = NULL;

	/* A lost context refuses every call; resetting it frees the stream
	 * and its pinned record (cuda_ctx_close()). */
	if (backend_lost(b) || backend_cuda__current(cc) < 0) {
		backend_cuda__done_drain(cc, s);
		arena_block_free(cc->arena, s->fault_block);
		free(s);
		return;
	}
	if (s->stream != NULL) {
		/* A capture left open would keep the stream from being destroyed. */
		if (s->capturing && cc->drv->cuStreamEndCapture(s->stream, &graph) == CUDA_SUCCESS &&
		    graph != NULL)
			cc->drv->cuGraphDestroy(graph);
		/* Queued kernels may still write the fault record. */
		(void)CEP_CU_CHECK(cc->drv->cuStreamSynchronize(s->stream));
		backend_cuda__done_drain(cc, s);
		(void)CEP_CU_CHECK(cc->drv->cuStreamDestroy(s->stream));
	}
	if (s->fault_host != NULL)
		(void)CEP_CU_CHECK(cc->drv->cuMemFreeHost(s->fault_host));
	arena_block_free(cc->arena, s->fault_block);
	free(s);
}

/* Turns the latched record into the run's error, and clears it on the
 * device (queued on s, so later work sees it clear) and here. */
static int cuda_fault_report(struct cuda_ctx *cc, struct backend_stream *s)
{
	struct backend_fault f = { 0 };
	int ret;

	memcpy(&f, s->fault_host, sizeof(struct cuda_fault));
	memset(s->fault_host, 0, sizeof(*s->fault_host));
	ret = CEP_CU_CHECK(cc->drv->cuMemsetD32Async(s->fault_dev, 0,
						     sizeof(struct cuda_fault) / 4, s->stream));
	if (ret < 0)
		return ret;
	return backend_fault_error(&f, &s->fault_call);
}

static int cuda_stream_sync(struct backend *b, struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	bool armed = s->armed;
	int ret;

	ret = backend_cuda__enter(cc, s);
	if (ret < 0)
		return ret;
	s->fault_call = NULL;
	/* The record comes back behind the stream's own work. */
	if (armed) {
		ret = CEP_CU_CHECK(cc->drv->cuMemcpyDtoHAsync(s->fault_host, s->fault_dev,
							      sizeof(struct cuda_fault), s->stream));
		if (ret < 0)
			return ret;
	}
	ret = CEP_CU_CHECK(cc->drv->cuStreamSynchronize(s->stream));
	/* The host functions queued before have run, as with cuLaunchHostFunc. */
	backend_cuda__done_drain(cc, s);
	if (ret < 0)
		return ret;
	s->armed = false;
	if (armed && s->fault_host->flag != 0)
		return cuda_fault_report(cc, s);
	return 0;
}

static const struct op_call *cuda_stream_fault(struct backend *b, struct backend_stream *s)
{
	return s->fault_call;
}

/* The run's own copy of the record: queued behind the work that may have
 * latched into it, then the device's record is cleared for the work
 * after, so runs in flight on one stream each see their own faults. */
static int cuda_stream_fault_save(struct backend *b, struct backend_stream *s,
				  struct backend_fault *dst)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	if (!s->armed) {
		memset(dst, 0, sizeof(*dst));
		return 0;
	}
	ret = backend_cuda__enter(cc, s);
	if (ret < 0)
		return ret;
	/* The device fills in the record's first part; the rest stays clear. */
	memset(dst, 0, sizeof(*dst));
	ret = CEP_CU_CHECK(cc->drv->cuMemcpyDtoHAsync(dst, s->fault_dev, sizeof(struct cuda_fault),
						      s->stream));
	if (ret < 0)
		return ret;
	ret = CEP_CU_CHECK(cc->drv->cuMemsetD32Async(s->fault_dev, 0,
						     sizeof(struct cuda_fault) / 4, s->stream));
	if (ret < 0)
		return ret;
	s->armed = false;
	return 1;
}

/* ----------------------------------------------------------------- events */

/* An event with the driver's flags. */
static int cuda_event_make(struct backend *b, unsigned flags, struct backend_event **out)
{
	struct cuda_ctx *cc = b->ctx;
	struct backend_event *e;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	ret = CEP_CU_CHECK(cc->drv->cuEventCreate(&e->ev, flags));
	if (ret < 0) {
		free(e);
		return ret;
	}
	*out = e;
	return 0;
}

static int cuda_event_new(struct backend *b, struct backend_event **out)
{
	return cuda_event_make(b, CU_EVENT_DISABLE_TIMING, out);
}

/* An event that keeps time (CU_EVENT_DEFAULT), for profiling. */
static int cuda_timer_new(struct backend *b, struct backend_event **out)
{
	return cuda_event_make(b, CU_EVENT_DEFAULT, out);
}

static int cuda_event_elapsed(struct backend *b, struct backend_event *start,
			      struct backend_event *end, double *ms)
{
	struct cuda_ctx *cc = b->ctx;
	float f = 0;
	int ret = backend_cuda__current(cc);

	if (ret == 0)
		ret = CEP_CU_CHECK(cc->drv->cuEventElapsedTime(&f, start->ev, end->ev));
	*ms = f;
	return ret;
}

static void cuda_event_free(struct backend *b, struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;

	if (!backend_lost(b) && backend_cuda__current(cc) == 0)
		(void)CEP_CU_CHECK(cc->drv->cuEventDestroy(e->ev));
	free(e);
}

static int cuda_event_record(struct backend *b, struct backend_event *e,
			     struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuEventRecord(e->ev, s->stream));
}

static int cuda_event_query(struct backend *b, struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;
	CUresult r;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	r = cc->drv->cuEventQuery(e->ev);
	if (r == CUDA_ERROR_NOT_READY)
		return CEP_EAGAIN;
	return CEP_CU_CHECK(r);
}

static int cuda_event_sync(struct backend *b, struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__current(cc);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuEventSynchronize(e->ev));
}

static int cuda_stream_wait(struct backend *b, struct backend_stream *s,
			    struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuStreamWaitEvent(s->stream, e->ev, 0));
}

/* ----------------------------------------------------------------- graphs */

static int cuda_graph_begin(struct backend *b, struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	if (s->capturing)
		return cep__set_error(CEP_EBUSY, "cuda backend: the stream is already capturing");
	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	/* Thread-local mode: other threads (other sessions, the arena mapping
	 * granules) may go on calling the driver while this one captures. */
	ret = CEP_CU_CHECK(cc->drv->cuStreamBeginCapture(s->stream,
							 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	if (ret < 0)
		return ret;
	s->capturing = true;
	s->capture_armed = false;
	return 0;
}

static int cuda_graph_end(struct backend *b, struct backend_stream *s,
			  struct backend_graph **out)
{
	struct cuda_ctx *cc = b->ctx;
	struct backend_graph *g = NULL;
	CUgraph graph = NULL;
	CUresult r;
	int ret;

	if (!s->capturing)
		return cep__set_error(CEP_EINVAL, "cuda backend: the stream is not capturing");
	ret = backend_cuda__enter(cc, s);
	if (ret < 0)
		return ret;
	/* Ending the capture, even a failed one, gives the stream back to
	 * eager work; what failed is reported, not logged as a device error. */
	s->capturing = false;
	r = cc->drv->cuStreamEndCapture(s->stream, &graph);
	if (r != CUDA_SUCCESS) {
		ret = cep__set_error(CEP_ENOTSUP, "cuda backend: the graph capture failed: %s "
				     "(an operation during the capture cannot be recorded); "
				     "the stream runs eagerly again",
				     cuda_driver_error_name(r));
		goto out;
	}
	ret = CEP_ENOMEM;
	g = calloc(1, sizeof(*g));
	if (g == NULL) {
		cep__set_error(ret, NULL);
		goto out;
	}
	ret = CEP_CU_CHECK(cc->drv->cuGraphInstantiateWithFlags(&g->exec, graph, 0));
	if (ret < 0)
		goto out;
	g->graph = graph;
	g->checked = s->capture_armed;
	graph = NULL;
	*out = g;
	g = NULL;
out:
	if (graph != NULL)
		cc->drv->cuGraphDestroy(graph);
	free(g);
	return ret;
}

static int cuda_graph_replay(struct backend *b, struct backend_graph *g,
			     struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	ret = CEP_CU_CHECK(cc->drv->cuGraphLaunch(g->exec, s->stream));
	if (ret == 0 && g->checked)
		s->armed = true;
	return ret;
}

static void cuda_graph_free(struct backend *b, struct backend_graph *g)
{
	struct cuda_ctx *cc = b->ctx;

	if (!backend_lost(b) && backend_cuda__current(cc) == 0) {
		(void)CEP_CU_CHECK(cc->drv->cuGraphExecDestroy(g->exec));
		(void)CEP_CU_CHECK(cc->drv->cuGraphDestroy(g->graph));
	}
	free(g);
}

/* ------------------------------------------------------------- the seam */

void backend_cuda__iface_stream(struct backend_iface *iface)
{
	iface->stream_new = cuda_stream_new;
	iface->stream_free = cuda_stream_free;
	iface->stream_sync = cuda_stream_sync;
	iface->stream_wait = cuda_stream_wait;
	iface->stream_fault = cuda_stream_fault;
	iface->stream_fault_save = cuda_stream_fault_save;
	iface->event_new = cuda_event_new;
	iface->event_free = cuda_event_free;
	iface->event_record = cuda_event_record;
	iface->event_query = cuda_event_query;
	iface->event_sync = cuda_event_sync;
	iface->timer_new = cuda_timer_new;
	iface->event_elapsed = cuda_event_elapsed;
	iface->graph_begin = cuda_graph_begin;
	iface->graph_end = cuda_graph_end;
	iface->graph_replay = cuda_graph_replay;
	iface->graph_free = cuda_graph_free;
}
