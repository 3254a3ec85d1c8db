/*
 * backend_cuda_priv.h — what the files of the CUDA backend share, and
 * nothing else includes: its state, and how each file adds its part of the
 * backend seam (gpu/backend.h).
 *
 * The backend is one primary context per device, retained for its life
 * and made current on whichever thread calls in. Its files:
 *
 *	backend_cuda.c         opening and closing: the driver, NVRTC, the
 *	                       device and its context, the arena; the seam
 *	backend_cuda_stream.c  streams and their fault records, events, graphs
 *	backend_cuda_mem.c     device memory, copies, registered host memory,
 *	                       fences and host functions
 *	backend_cuda_launch.c  the kernels' side (gpu/cuda/cuda_kernels.h):
 *	                       compiled functions, launches, cuBLASLt, cuDNN
 *	backend_cuda_lost.c    the lost context: health, reset, and the fault
 *	                       injection of test builds (CEP_FAULT_INJECT)
 *	backend_cuda_done.c    host functions finished from events, by a
 *	                       thread of the backend (experimental, opt-in)
 *
 * backend_cuda.c calls each of the others once, to fill in its part of
 * the seam; they call nothing of one another but backend_cuda_done.c's
 * backend_cuda__done_*(), which the host functions and syncs go through. Nothing here synchronizes
 * the whole device: every wait is on one stream or one event.
 */
#ifndef CEP_GPU_CUDA_BACKEND_CUDA_PRIV_H
#define CEP_GPU_CUDA_BACKEND_CUDA_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <cuda.h>

#include "gpu/backend.h"
#include "gpu/cuda/cuda_driver.h"
#include "gpu/cuda/cuda_kernels.h"

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
	struct kpack *pack;                /* owned: the prebuilt kernels, or
	                                    * NULL when none could be used */
	char pack_path[512];               /* where they were looked for */
	char pack_note[600];               /* why none is used; "" if one is */
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
	struct cuda_done *done;            /* owned: host functions finished
	                                    * from events, or NULL (cuLaunch-
	                                    * HostFunc; backend_cuda_done.c) */
	CUstream aux;                      /* the backend's own stream, never
	                                    * given out: health queries (and,
	                                    * in test builds, injected faults) */
};

/* The fault record kernels write is the one the seam copies back. */
_Static_assert(sizeof(struct cuda_fault) <= offsetof(struct backend_fault, code) &&
	       offsetof(struct cuda_fault, site) == offsetof(struct backend_fault, site) &&
	       offsetof(struct cuda_fault, limit) == offsetof(struct backend_fault, limit),
	       "struct cuda_fault and struct backend_fault differ");

/* Makes the backend's context current on the calling thread: every entry
 * point may come from another thread of the pool. Returns 0 or the
 * driver's error. */
static inline int backend_cuda__current(const struct cuda_ctx *cc)
{
	return CEP_CU_CHECK(cc->drv->cuCtxSetCurrent(cc->ctx));
}

/* backend_cuda__current() for work queued on s, except while s captures:
 * the thread that began the capture has the context current already, and
 * the capture should see nothing but the work itself. */
static inline int backend_cuda__enter(const struct cuda_ctx *cc, const struct backend_stream *s)
{
	return s != NULL && s->capturing ? 0 : backend_cuda__current(cc);
}

/* ------------------------------------------------------ parts of the seam */

/* Each sets the members of iface its file implements. */

/* backend_cuda_stream.c: stream_new, stream_free, stream_sync,
 * stream_wait, stream_fault, stream_fault_save, the event_ and timer_
 * members, the graph_ members. */
void backend_cuda__iface_stream(struct backend_iface *iface);

/* backend_cuda_mem.c: mem_alloc, mem_free, the copy_ members,
 * host_register, host_unregister, stream_write_value64, stream_host_fn. */
void backend_cuda__iface_mem(struct backend_iface *iface);

/* backend_cuda_launch.c: launch. */
void backend_cuda__iface_launch(struct backend_iface *iface);

/* backend_cuda_lost.c: health, and fault_inject in test builds. */
void backend_cuda__iface_lost(struct backend_iface *iface);

/* Resets the primary context of cc, which a sticky error left unusable:
 * that destroys it with everything made in it (streams, modules, pinned
 * and device memory), lets the next retain create a fresh one, and leaves
 * no context current on the calling thread. Our retain is not released
 * (backend_cuda_lost.c). */
void backend_cuda__ctx_reset(struct cuda_ctx *cc);

/* backend_cuda_done.c: host functions finished from events (with
 * CUDAEP_EVENT_COMPLETION=1; else cc->done stays NULL and none of these
 * but start and stop may be called). */
struct cuda_done;
int backend_cuda__done_start(struct cuda_ctx *cc);
void backend_cuda__done_stop(struct cuda_ctx *cc);
int backend_cuda__done_queue(struct cuda_ctx *cc, struct backend_stream *s,
			     backend_host_fn fn, void *arg);
void backend_cuda__done_drain(struct cuda_ctx *cc, struct backend_stream *s);

#endif
