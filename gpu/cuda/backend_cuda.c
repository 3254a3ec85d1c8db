/*
 * backend_cuda.c — the CUDA backend: the backend seam (gpu/backend.h) on
 * the driver API, loaded with dlopen (gpu/cuda/cuda_driver.h).
 *
 * One primary context per backend, retained for its life and made current
 * on whichever thread calls in. Device memory comes from the VMM arena of
 * alloc/ over the CUDA provider; streams are non-blocking streams with
 * priorities; copies are the driver's async copies; graphs are captured
 * from a stream (thread-local capture mode, so other threads may keep
 * allocating meanwhile) and replayed as instantiated CUDA graphs. Kernels
 * are the registry's BACKEND_CUDA entries; their NVRTC-compiled code comes
 * from the module cache of gpu/cuda/nvrtc.h through the functions of
 * gpu/cuda/cuda_kernels.h, which are implemented here next to the state they
 * need.
 *
 * Each stream owns a small fault record in device memory where kernels
 * that index with data (Gather, ...) latch the first bad index they meet.
 * A sync after such work copies the record back with the stream's own
 * work (no extra synchronization) and turns a latched fault into the
 * run's error.
 *
 * Registered host memory is pinned and mapped (cuMemHostRegister), fences
 * are cuStreamWriteValue64 into it, and completions are host functions
 * (cuLaunchHostFunc). A run that does not sync copies its own fault
 * record back (stream_fault_save) into registered memory instead.
 *
 * Nothing here synchronizes the whole device: every wait is on one stream
 * or one event.
 */
#include "gpu/backend.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/arena.h"
#include "gpu/cuda/cublaslt.h"
#include "gpu/cuda/cuda_driver.h"
#include "gpu/cuda/cuda_kernels.h"
#include "client/cudaep.h"
#include "gpu/cuda/cudnn.h"
#include "common/error.h"
#include "gpu/cuda/nvrtc.h"
#include "kernels/ops.h"
#include "alloc/provider.h"

struct backend_stream {
	CUstream stream;
	struct arena_block *fault_block;   /* holds the device fault record */
	CUdeviceptr fault_dev;             /* its address */
	struct cuda_fault *fault_host;     /* pinned, where a sync reads it */
	bool armed;                        /* a checking kernel was queued since
	                                    * the last sync */
	bool capturing;                    /* between graph_begin and graph_end */
	bool capture_armed;                /* a checking kernel was captured */
	const struct op_call *fault_call;  /* the launch the last failed sync
	                                    * blamed, or NULL */
};

struct backend_event {
	CUevent ev;
};

struct backend_graph {
	CUgraph graph;
	CUgraphExec exec;
	bool checked;                      /* it holds a checking kernel */
};

/* A library opened on first use (cuBLASLt, cuDNN): large, and needed
 * only by some models. A failure to open is kept and repeated, so a
 * machine without the library is asked once. */
struct cuda_lazy {
	pthread_mutex_t lock;              /* guards the three below */
	void *lib;                         /* owned, or NULL */
	int err;                           /* why it could not open; 0: it did,
	                                    * or nobody asked yet */
	char why[400];                     /* that failure's message */
};

struct cuda_ctx {
	struct cuda_driver *drv;           /* owned */
	int ordinal;
	CUdevice dev;
	CUcontext ctx;                     /* the primary context, retained */
	int arch;                          /* 10 * major + minor: 90 on an H200 */
	int prio_least, prio_greatest;     /* the context's stream priorities */
	struct nvrtc_lib *nvrtc;           /* owned */
	struct nvrtc_cache *kernels;       /* owned */
	struct alloc_provider *prov;       /* owned */
	struct arena *arena;               /* owned; device memory */
	char desc[256];                    /* what iface.device shows */
	struct cuda_lazy blas;             /* struct cublaslt, opened by the
	                                    * first plan with a GEMM */
	struct cuda_lazy dnn;              /* struct cudnn, opened by the first
	                                    * plan with a convolution */
	char dnn_path[512];                /* the configured library; "": search */
	bool write64;                      /* streams can write 64-bit values
	                                    * (CAN_USE_64_BIT_STREAM_MEM_OPS) */
	CUstream aux;                      /* the backend's own stream, never
	                                    * given out: health queries (and,
	                                    * in test builds, injected faults) */
};

/* The fault record kernels write is the one the seam copies back. */
_Static_assert(sizeof(struct cuda_fault) <= offsetof(struct backend_fault, code) &&
	       offsetof(struct cuda_fault, site) == offsetof(struct backend_fault, site) &&
	       offsetof(struct cuda_fault, limit) == offsetof(struct backend_fault, limit),
	       "struct cuda_fault and struct backend_fault differ");

static int cuda_launch_op(struct backend *b, struct backend_stream *s,
			  backend_kernel_fn fn, struct op_call *call);

/* Makes the backend's context current on the calling thread: every entry
 * point may come from another thread of the pool. */
static int cuda_current(const struct cuda_ctx *cc)
{
	return CEP_CU_CHECK(cc->drv->cuCtxSetCurrent(cc->ctx));
}

/* cuda_current() for work queued on s, except while s captures: the thread
 * that began the capture has the context current already, and the capture
 * should see nothing but the work itself. */
static int cuda_enter(const struct cuda_ctx *cc, const struct backend_stream *s)
{
	return s != NULL && s->capturing ? 0 : cuda_current(cc);
}

/* ----------------------------------------------------------------- memory */

static int cuda_mem_alloc(struct backend *b, size_t bytes, void **out)
{
	struct cuda_ctx *cc = b->ctx;
	struct arena_block *blk;
	int ret;

	ret = arena_block_alloc(cc->arena, bytes, BACKEND_ALIGN, ALLOC_OWNER_SHARED,
				ALLOC_ROLE_ACTIVATIONS, &blk);
	if (ret < 0)
		return ret;
	*out = (void *)(uintptr_t)arena_block_addr(blk);
	return 0;
}

/* The engine frees a block only after the runs that used it completed
 * (each run ends with a stream sync), so the arena may reuse it at once. */
static void cuda_mem_free(struct backend *b, void *ptr)
{
	struct cuda_ctx *cc = b->ctx;
	struct arena_block *blk = arena_block_lookup(cc->arena, (uint64_t)(uintptr_t)ptr);

	if (blk == NULL) {
		fprintf(stderr, "<3>cudaep: cuda backend: freeing %p, which it never "
			"allocated\n", ptr);
		return;
	}
	arena_block_free(cc->arena, blk);
}

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

	ret = cuda_current(cc);
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
	if (backend_lost(b) || cuda_current(cc) < 0) {
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

	ret = cuda_enter(cc, s);
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
	ret = cuda_enter(cc, s);
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

	ret = cuda_current(cc);
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
	int ret = cuda_current(cc);

	if (ret == 0)
		ret = CEP_CU_CHECK(cc->drv->cuEventElapsedTime(&f, start->ev, end->ev));
	*ms = f;
	return ret;
}

static void cuda_event_free(struct backend *b, struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;

	if (!backend_lost(b) && cuda_current(cc) == 0)
		(void)CEP_CU_CHECK(cc->drv->cuEventDestroy(e->ev));
	free(e);
}

static int cuda_event_record(struct backend *b, struct backend_event *e,
			     struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = cuda_enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuEventRecord(e->ev, s->stream));
}

static int cuda_event_query(struct backend *b, struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;
	CUresult r;
	int ret;

	ret = cuda_current(cc);
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
	int ret = cuda_current(cc);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuEventSynchronize(e->ev));
}

static int cuda_stream_wait(struct backend *b, struct backend_stream *s,
			    struct backend_event *e)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = cuda_enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuStreamWaitEvent(s->stream, e->ev, 0));
}

/* ----------------------------------------------------------------- copies */

static int cuda_copy_h2d(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = cuda_enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst,
								       src, bytes, s->stream));
}

static int cuda_copy_d2h(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = cuda_enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyDtoHAsync(dst,
								       (CUdeviceptr)(uintptr_t)src,
								       bytes, s->stream));
}

static int cuda_copy_d2d(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = cuda_enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst,
								       (CUdeviceptr)(uintptr_t)src,
								       bytes, s->stream));
}

/* ---------------------------------------------- registered memory, fences */

/* Portable: any context may use it; device-mapped: streams can write
 * fences into it, and copies from it need no staging buffer. */
static int cuda_host_register(struct backend *b, void *addr, size_t bytes, uint64_t *dev)
{
	struct cuda_ctx *cc = b->ctx;
	CUdeviceptr d = 0;
	int ret;

	ret = cuda_current(cc);
	if (ret < 0)
		return ret;
	ret = CEP_CU_CHECK(cc->drv->cuMemHostRegister(addr, bytes, CU_MEMHOSTREGISTER_PORTABLE |
							       CU_MEMHOSTREGISTER_DEVICEMAP));
	if (ret < 0)
		return ret;
	ret = CEP_CU_CHECK(cc->drv->cuMemHostGetDevicePointer(&d, addr, 0));
	if (ret < 0) {
		(void)CEP_CU_CHECK(cc->drv->cuMemHostUnregister(addr));
		return ret;
	}
	*dev = (uint64_t)d;
	return 0;
}

static void cuda_host_unregister(struct backend *b, void *addr)
{
	struct cuda_ctx *cc = b->ctx;

	/* A lost context's reset unpins everything itself. */
	if (!backend_lost(b) && cuda_current(cc) == 0)
		(void)CEP_CU_CHECK(cc->drv->cuMemHostUnregister(addr));
}

/* The default flags put a system-wide memory fence before the write, so
 * the copies into host memory queued before it are visible first. */
static int cuda_write_value64(struct backend *b, struct backend_stream *s, uint64_t *host,
			      uint64_t dev, uint64_t value)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	if (!cc->write64)
		return cep__set_error(CEP_ENOTSUP, "cuda backend: device %d cannot write "
				      "64-bit values from a stream", cc->ordinal);
	ret = cuda_enter(cc, s);
	if (ret < 0)
		return ret;
	return CEP_CU_CHECK(cc->drv->cuStreamWriteValue64(s->stream, (CUdeviceptr)dev, value,
							   CU_STREAM_WRITE_VALUE_DEFAULT));
}

static int cuda_stream_host_fn(struct backend *b, struct backend_stream *s,
			       backend_host_fn fn, void *arg)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	if (s->capturing)
		return cep__set_error(CEP_EINVAL, "cuda backend: a host function cannot be "
				      "queued while the stream captures");
	ret = cuda_current(cc);
	if (ret < 0)
		return ret;
	return CEP_CU_CHECK(cc->drv->cuLaunchHostFunc(s->stream, fn, arg));
}

/* ----------------------------------------------------------------- graphs */

static int cuda_graph_begin(struct backend *b, struct backend_stream *s)
{
	struct cuda_ctx *cc = b->ctx;
	int ret;

	if (s->capturing)
		return cep__set_error(CEP_EBUSY, "cuda backend: the stream is already capturing");
	ret = cuda_current(cc);
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
	ret = cuda_enter(cc, s);
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

	ret = cuda_current(cc);
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

	if (!backend_lost(b) && cuda_current(cc) == 0) {
		(void)CEP_CU_CHECK(cc->drv->cuGraphExecDestroy(g->exec));
		(void)CEP_CU_CHECK(cc->drv->cuGraphDestroy(g->graph));
	}
	free(g);
}

/* ---------------------------------------------------------------- kernels */

static int cuda_launch_op(struct backend *b, struct backend_stream *s,
			  backend_kernel_fn fn, struct op_call *call)
{
	int ret = cuda_enter(b->ctx, s);

	if (ret < 0)
		return ret;
	call->stream = s;
	return fn(call);
}

bool cuda_backend_is(const struct backend *be)
{
	return be != NULL && be->kind == BACKEND_CUDA && be->iface.launch == cuda_launch_op;
}

static int not_cuda(const struct backend *be)
{
	return cep__set_error(CEP_EINVAL, "device kernels need the cuda backend, not %s",
			      be != NULL ? be->iface.name : "none");
}

int cuda_function_compile(struct backend *be, const struct nvrtc_source *src,
			  const char *func, CUfunction *out)
{
	struct cuda_ctx *cc;
	int ret;

	*out = NULL;
	if (!cuda_backend_is(be))
		return not_cuda(be);
	cc = be->ctx;
	ret = cuda_current(cc);
	if (ret < 0)
		return ret;
	return nvrtc_cache_function(cc->kernels, src, func, out);
}

int cuda_function_get(struct backend *be, const char *src_name, const char *func,
		      CUfunction *out)
{
	struct nvrtc_source src;
	int ret;

	*out = NULL;
	if (!cuda_backend_is(be))
		return not_cuda(be);
	ret = cuda_source_get(src_name, &src);
	if (ret < 0)
		return ret;
	return cuda_function_compile(be, &src, func, out);
}

int cuda_launch(struct backend *be, struct backend_stream *s, CUfunction fn,
		unsigned grid, unsigned block, unsigned shmem, void **args)
{
	struct cuda_ctx *cc;
	int ret;

	if (!cuda_backend_is(be))
		return not_cuda(be);
	if (grid == 0)
		return 0;
	cc = be->ctx;
	ret = cuda_enter(cc, s);
	if (ret < 0)
		return ret;
	return CEP_CU_CHECK(cc->drv->cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shmem,
						    s->stream, args, NULL));
}

int cuda_fault_get(struct backend *be, struct backend_stream *s, uint64_t *out)
{
	*out = 0;
	if (!cuda_backend_is(be))
		return not_cuda(be);
	*out = s->fault_dev;
	if (s->capturing)
		s->capture_armed = true;
	else
		s->armed = true;
	return 0;
}

int cuda_kernel_stats(struct backend *be, struct nvrtc_stats *out)
{
	struct cuda_ctx *cc;

	memset(out, 0, sizeof(*out));
	if (!cuda_backend_is(be))
		return not_cuda(be);
	cc = be->ctx;
	nvrtc_cache_stats(cc->kernels, out);
	return 0;
}

/* iface.kernels: the modules of the NVRTC cache (gpu/cuda/nvrtc.h), read
 * under the cache's report lock, which no compile holds. */
static int cuda_kernels(struct backend *be, struct backend_kernel *out, size_t max,
			size_t *n, struct backend_kernel_totals *totals)
{
	struct cuda_ctx *cc = be->ctx;
	struct nvrtc_module_info *mods = NULL;
	struct nvrtc_stats st;
	size_t i;

	if (max > 0) {
		mods = calloc(max, sizeof(*mods));
		if (mods == NULL)
			return cep__set_error(CEP_ENOMEM, "out of memory listing the kernels");
	}
	*n = nvrtc_cache_modules(cc->kernels, mods, max, &st);
	for (i = 0; i < *n && i < max; i++) {
		snprintf(out[i].name, sizeof(out[i].name), "%s", mods[i].name);
		out[i].arch = cc->arch;
		out[i].origin = mods[i].from_disk ? BACKEND_KERNEL_DISK : BACKEND_KERNEL_COMPILED;
		out[i].compile_ns = mods[i].compile_ns;
		out[i].load_ns = mods[i].load_ns;
		out[i].image_bytes = mods[i].image_bytes;
	}
	free(mods);
	totals->arch = cc->arch;
	totals->modules = *n;
	totals->compiles = st.compiles;
	totals->compile_ns = st.compile_ns;
	totals->mem_hits = st.mem_hits;
	totals->disk_hits = st.disk_hits;
	totals->disk_writes = st.disk_writes;
	totals->disk_rejects = st.disk_rejects;
	totals->disk_errors = st.disk_errors;
	snprintf(totals->cache_dir, sizeof(totals->cache_dir), "%s",
		 nvrtc_cache_dir(cc->kernels));
	return 0;
}

int cuda_backend_arch(const struct backend *be)
{
	return cuda_backend_is(be) ? ((const struct cuda_ctx *)be->ctx)->arch : 0;
}

CUstream cuda_stream_handle(const struct backend_stream *s)
{
	return s != NULL ? s->stream : NULL;
}

/* The library of l, opened with open(path) on first use, in *out. Every
 * caller goes on to use it at plan time, which needs the context current
 * on its thread; a context that cannot be made current is this call's
 * error, not the library's: only the opening's failure is kept. */
static int cuda_lazy_get(struct cuda_ctx *cc, struct cuda_lazy *l,
			 int (*open)(const char *path, void **out), const char *path,
			 void **out)
{
	int ret;

	pthread_mutex_lock(&l->lock);
	ret = cuda_current(cc);
	if (ret == 0 && l->lib == NULL && l->err == 0 && (ret = open(path, &l->lib)) < 0) {
		l->err = ret;
		snprintf(l->why, sizeof(l->why), "%s", cep_last_error());
	}
	if (ret == 0 && l->err != 0)
		ret = cep__set_error(l->err, "%s", l->why);
	*out = l->lib;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

static int blas_open(const char *path, void **out)
{
	struct cublaslt *lt = NULL;
	int ret = cublaslt_new(path, &lt);

	*out = lt;
	return ret;
}

static int dnn_open(const char *path, void **out)
{
	struct cudnn *dnn = NULL;
	int ret = cudnn_new(path, &dnn);

	*out = dnn;
	return ret;
}

/* cuBLASLt is large (over 500 MiB mapped) and most backends of the tests
 * never multiply matrices. */
int cuda_blas_get(struct backend *be, struct cublaslt **out)
{
	void *lib = NULL;
	int ret;

	*out = NULL;
	if (!cuda_backend_is(be))
		return not_cuda(be);
	ret = cuda_lazy_get(be->ctx, &((struct cuda_ctx *)be->ctx)->blas, blas_open, NULL, &lib);
	*out = lib;
	return ret;
}

/* cuDNN is larger still, and only models with convolutions need it. */
int cuda_dnn_get(struct backend *be, struct cudnn **out)
{
	struct cuda_ctx *cc;
	void *lib = NULL;
	int ret;

	*out = NULL;
	if (!cuda_backend_is(be))
		return not_cuda(be);
	cc = be->ctx;
	ret = cuda_lazy_get(cc, &cc->dnn, dnn_open, cc->dnn_path[0] ? cc->dnn_path : NULL, &lib);
	*out = lib;
	return ret;
}

/* ----------------------------------------------------- health, faults */

/* The aux stream never has work of its own (but an injected fault), so
 * querying it costs nothing and reports only what the context reports: a
 * sticky error of any stream. */
static int cuda_health(struct backend *b)
{
	struct cuda_ctx *cc = b->ctx;
	CUresult r;
	int ret;

	ret = cuda_current(cc);
	if (ret < 0)
		return ret;
	r = cc->drv->cuStreamQuery(cc->aux);
	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return CEP_CU_CHECK(r);
}

#ifdef CEP_FAULT_INJECT
/* Writes through a pointer nothing is mapped at: the kernel dies with
 * CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the whole context. */
static const char fault_source[] =
	"extern \"C\" __global__ void cep_fault_inject(unsigned long long *p)\n"
	"{\n"
	"	*p = 0xdeadull;\n"
	"}\n";

static int cuda_fault_inject(struct backend *b)
{
	const struct nvrtc_source src = { .name = "cep_fault_inject", .text = fault_source };
	struct cuda_ctx *cc = b->ctx;
	/* Low addresses are never mapped on the device. */
	unsigned long long *bad = (unsigned long long *)(uintptr_t)0x10;
	void *args[] = { &bad };
	CUfunction fn;
	int ret;

	ret = cuda_current(cc);
	if (ret == 0)
		ret = nvrtc_cache_function(cc->kernels, &src, "cep_fault_inject", &fn);
	if (ret < 0)
		return ret;
	fprintf(stderr, "<4>cudaep: cuda backend: injecting a fault (a kernel that writes "
		"to address 0x10) on device %d\n", cc->ordinal);
	ret = CEP_CU_CHECK(cc->drv->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, cc->aux, args, NULL));
	/* Waited for, so that the context is known lost when this returns,
	 * as on the host backend: tests can tell which runs it hits. */
	if (ret == 0)
		ret = CEP_CU_CHECK(cc->drv->cuStreamSynchronize(cc->aux));
	if (ret == 0)
		ret = cep__set_error(CEP_EDEVICE, "cuda backend: the injected fault did not "
				     "fault");
	return ret;
}
#endif

/* ------------------------------------------------------------- the backend */

/* Releases everything of cc. lost: the context is unusable (a sticky
 * error), so it is reset, which destroys it with everything made in it
 * (streams, modules, pinned and device memory) and lets the next retain
 * create a fresh one; the host-side state is freed all the same. */
static void cuda_ctx_close(struct cuda_ctx *cc, bool lost)
{
	if (cc->ctx != NULL && cuda_current(cc) == 0) {
		if (cc->aux != NULL && !lost)
			(void)CEP_CU_CHECK(cc->drv->cuStreamDestroy(cc->aux));
		cublaslt_free(cc->blas.lib);
		cudnn_free(cc->dnn.lib);
		nvrtc_cache_free(cc->kernels);
	}
	pthread_mutex_destroy(&cc->blas.lock);
	pthread_mutex_destroy(&cc->dnn.lock);
	nvrtc_lib_free(cc->nvrtc);
	arena_free(cc->arena);
	alloc_provider_free(cc->prov);
	if (cc->ctx != NULL && lost) {
		/* Resetting does not release our retain: both are needed. */
		fprintf(stderr, "<4>cudaep: cuda backend: resetting the lost primary "
			"context of device %d\n", cc->ordinal);
		(void)CEP_CU_CHECK(cc->drv->cuDevicePrimaryCtxReset(cc->dev));
		/* The dead context must not stay current on this thread: the
		 * next retain would report its error. */
		(void)CEP_CU_CHECK(cc->drv->cuCtxSetCurrent(NULL));
	}
	if (cc->ctx != NULL)
		(void)CEP_CU_CHECK(cc->drv->cuDevicePrimaryCtxRelease(cc->dev));
	cuda_driver_free(cc->drv);
}

static void cuda_free(struct backend *b)
{
	cuda_ctx_close(b->ctx, backend_lost(b));
	free(b->ctx);
	free(b);
}

/* Rewrites the last error as "device N (name): <it>". Returns err. */
static int cuda_blame(const struct cuda_ctx *cc, const char *name, int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "cuda backend, device %d (%s): %s", cc->ordinal, name, why);
}

/* The device's identity, its context and its limits. */
static int cuda_ctx_device(struct cuda_ctx *cc, char *name, size_t name_len,
			   size_t *total)
{
	const struct cuda_driver *drv = cc->drv;
	int major = 0, minor = 0, ret;

	ret = CEP_CU_CHECK(drv->cuDeviceGet(&cc->dev, cc->ordinal));
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuDeviceGetName(name, (int)name_len, cc->dev));
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuDeviceTotalMem(total, cc->dev));
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuDeviceGetAttribute(&major,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cc->dev));
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuDeviceGetAttribute(&minor,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cc->dev));
	if (ret < 0)
		return ret;
	cc->arch = major * 10 + minor;
	/* Without 64-bit stream writes the fences are written by a host
	 * function instead: slower, never wrong. */
	if (CEP_CU_CHECK(drv->cuDeviceGetAttribute(&major,
		CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, cc->dev)) == 0)
		cc->write64 = major != 0;
	cep__clear_error();
	ret = CEP_CU_CHECK(drv->cuDevicePrimaryCtxRetain(&cc->ctx, cc->dev));
	if (ret < 0)
		return ret;
	ret = cuda_current(cc);
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuCtxGetStreamPriorityRange(&cc->prio_least,
								      &cc->prio_greatest));
	return ret;
}

/* The kernel cache, in the configured directory or the default one. */
static int cuda_ctx_kernels(struct cuda_ctx *cc, const struct backend_cuda_config *cfg)
{
	char dir[1024] = "";

	if (cfg->cache_dir != NULL)
		snprintf(dir, sizeof(dir), "%s", cfg->cache_dir);
	else if (nvrtc_cache_dir_default(dir, sizeof(dir)) < 0)
		dir[0] = '\0'; /* no home: kernels are cached in memory only */
	cep__clear_error();
	return nvrtc_cache_new(cc->nvrtc, cc->drv, cc->arch, dir, &cc->kernels);
}

void backend_cuda_config_init(struct backend_cuda_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
}

int backend_cuda_new_config(const struct backend_cuda_config *cfg, struct backend **out)
{
	struct arena_config acfg;
	struct backend *b = NULL;
	struct cuda_ctx *cc = NULL;
	char name[128] = "unnamed";
	size_t total = 0;
	int ret;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	cc = calloc(1, sizeof(*cc));
	if (b == NULL || cc == NULL) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	cc->ordinal = cfg->device;
	pthread_mutex_init(&cc->blas.lock, NULL);
	pthread_mutex_init(&cc->dnn.lock, NULL);
	if (cfg->cudnn_lib != NULL)
		snprintf(cc->dnn_path, sizeof(cc->dnn_path), "%s", cfg->cudnn_lib);
	ret = cuda_driver_new(cfg->driver_lib, &cc->drv);
	if (ret < 0)
		goto out;
	/* NVRTC before the device: without it no kernel runs, and saying so
	 * costs nothing on the device. */
	ret = nvrtc_lib_open(cfg->nvrtc_lib, &cc->nvrtc);
	if (ret < 0)
		goto out;
	ret = CEP_ENOTSUP;
	if (cc->drv->devices == 0) {
		cep__set_error(ret, "no CUDA device: the driver (CUDA %d.%d) sees none",
			       cc->drv->version / 1000, cc->drv->version % 1000 / 10);
		goto out;
	}
	ret = CEP_EINVAL;
	if (cc->ordinal < 0 || cc->ordinal >= cc->drv->devices) {
		cep__set_error(ret, "no CUDA device %d: the driver sees %d", cc->ordinal,
			       cc->drv->devices);
		goto out;
	}
	ret = cuda_ctx_device(cc, name, sizeof(name), &total);
	if (ret < 0)
		goto blame;
	ret = cuda_ctx_kernels(cc, cfg);
	if (ret < 0)
		goto blame;
	ret = CEP_CU_CHECK(cc->drv->cuStreamCreateWithPriority(&cc->aux, CU_STREAM_NON_BLOCKING,
								0));
	if (ret < 0)
		goto blame;
	ret = alloc_provider_cuda_new(cc->drv, cc->ordinal, &cc->prov);
	if (ret < 0)
		goto out;
	arena_config_init(&acfg);
	if (cfg->pool_bytes != 0)
		acfg.pool_limit = cfg->pool_bytes;
	ret = arena_new(cc->prov, NULL, &acfg, &cc->arena);
	if (ret < 0)
		goto out;
	snprintf(cc->desc, sizeof(cc->desc), "%s (device %d, sm_%d, %.1f GiB, driver CUDA "
		 "%d.%d, NVRTC %d.%d)", name, cc->ordinal, cc->arch,
		 (double)total / (1u << 30), cc->drv->version / 1000,
		 cc->drv->version % 1000 / 10, nvrtc_lib_version(cc->nvrtc) / 1000,
		 nvrtc_lib_version(cc->nvrtc) % 1000 / 10);
	b->ctx = cc;
	b->kind = BACKEND_CUDA;
	b->arena = cc->arena;
	b->caps = BACKEND_CAP_GRAPHS | BACKEND_CAP_ASYNC;
	b->device_memory = total;
	b->iface = (struct backend_iface){
		.name = "cuda",
		.device = cc->desc,
		.free = cuda_free,
		.mem_alloc = cuda_mem_alloc,
		.mem_free = cuda_mem_free,
		.stream_new = cuda_stream_new,
		.stream_free = cuda_stream_free,
		.stream_sync = cuda_stream_sync,
		.stream_wait = cuda_stream_wait,
		.event_new = cuda_event_new,
		.event_free = cuda_event_free,
		.event_record = cuda_event_record,
		.event_query = cuda_event_query,
		.event_sync = cuda_event_sync,
		.timer_new = cuda_timer_new,
		.event_elapsed = cuda_event_elapsed,
		.copy_h2d = cuda_copy_h2d,
		.copy_d2h = cuda_copy_d2h,
		.copy_d2d = cuda_copy_d2d,
		.graph_begin = cuda_graph_begin,
		.graph_end = cuda_graph_end,
		.graph_replay = cuda_graph_replay,
		.graph_free = cuda_graph_free,
		.launch = cuda_launch_op,
		.stream_fault = cuda_stream_fault,
		.host_register = cuda_host_register,
		.host_unregister = cuda_host_unregister,
		.stream_write_value64 = cuda_write_value64,
		.stream_host_fn = cuda_stream_host_fn,
		.stream_fault_save = cuda_stream_fault_save,
		.health = cuda_health,
		.kernels = cuda_kernels,
	};
#ifdef CEP_FAULT_INJECT
	b->iface.fault_inject = cuda_fault_inject;
#endif
	backend__init(b);
	*out = b;
	b = NULL;
	cc = NULL;
	ret = 0;
	goto out;
blame:
	cuda_blame(cc, name, ret);
out:
	if (cc != NULL) {
		cuda_ctx_close(cc, false);
		free(cc);
	}
	free(b);
	return ret;
}

int backend_cuda_new(int device, struct backend **out)
{
	struct backend_cuda_config cfg;

	backend_cuda_config_init(&cfg);
	cfg.device = device;
	return backend_cuda_new_config(&cfg, out);
}
