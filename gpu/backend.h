/*
 * backend.h — the backend seam: the one interface through which the engine
 * (engine/plan.c, engine/exec.c, engine/engine.c) reaches a device.
 *
 * A backend is a table of function pointers plus a context pointer, in the
 * manner of ggml's backend interface: device memory, streams, events, async
 * copies, graph capture and replay, and kernel launches. Two implement it:
 * the host backend (gpu/backend_host.c, the CPU, always there, the oracle
 * GPU kernels are checked against) and the CUDA backend
 * (gpu/cuda/backend_cuda.c, the driver API with NVRTC-compiled kernels). Callers use the backend_* wrappers below, never iface directly:
 * the wrappers keep the counters ("the warm path allocates nothing" is
 * checked against them) and check arguments once for every backend.
 *
 * Kernels come from the operator registry (kernels/registry.h); the backend
 * only launches them on a stream. Nothing here knows about graphs, plans or
 * sockets.
 *
 * Threads: a backend may be used from several threads at once, each with
 * its own streams; a stream, an event or a graph is used by one thread at a
 * time.
 */
#ifndef CEP_GPU_BACKEND_H
#define CEP_GPU_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct op_call;
typedef int (*backend_kernel_fn)(struct op_call *call);

/* A function a stream calls once the work queued before it has completed
 * (stream_host_fn). It runs on a thread of the backend's (the CUDA
 * driver's) or, on the host backend, at once in the caller's, and must not
 * call the backend: it may only record, store and wake. */
typedef void (*backend_host_fn)(void *arg);

/*
 * A stream's fault record as stream_fault_save() copies it back: where a
 * device kernel that indexes with data latched the first bad index it met
 * (kernels/cuda/common.cuh writes the same layout). flag 0: no fault.
 */
/* What a latched fault is (struct backend_fault's flag). */
enum backend_fault_kind {
	BACKEND_FAULT_INDEX = 1,    /* value out of [-limit, limit) on axis */
	BACKEND_FAULT_AXIS = 2,     /* axes entry axis names value: out of
	                             * range for rank limit, or repeated */
	BACKEND_FAULT_SHAPE = 3,    /* run-time values give value elements
	                             * along axis where the plan has limit */
	BACKEND_FAULT_STEP = 4,     /* a Slice step of 0 on axis */
	BACKEND_FAULT_TRAINING = 5, /* Dropout in training mode; value: the
	                             * ratio's float bits */
	BACKEND_FAULT_VALUE = 6,    /* an input's value for dimension axis,
	                             * value, is not allowed (limit: the bound
	                             * it broke, or 0) */
};

struct backend_fault {
	uint32_t flag;      /* 0: nothing; else an enum backend_fault_kind
	                     * (the fields below are set) */
	int32_t axis;       /* the dimension indexed */
	uint64_t site;      /* the address of the op_call whose launch latched it */
	int64_t value;      /* the bad index */
	int64_t limit;      /* the size of that dimension */
	/* Where the kernel said why itself (an asynchronous host stream): */
	int32_t code;       /* its CEP_E* code; 0: a bad index as above */
	char msg[220];      /* its message */
};

/* The kernel sets of the registry; every backend runs the kernels of one. */
enum backend_kind {
	BACKEND_HOST = 0,
	BACKEND_CUDA = 1,
	BACKEND_KIND_COUNT
};

/* "host" or "cuda". */
const char *backend_kind_name(enum backend_kind kind);

/* What a backend can do; see struct backend. */
enum backend_caps {
	/* Device memory is ordinary host memory: the engine may point kernels
	 * at host data (weights) instead of uploading a copy. */
	BACKEND_CAP_HOST_MEMORY = 1u << 0,
	/* graph_begin/end/replay record launches for replay; the executor
	 * captures a plan on its second run and replays it afterwards. */
	BACKEND_CAP_GRAPHS = 1u << 1,
	/* Copies and launches only queue work, which the device does later:
	 * a caller that must not block (the event loop) may submit runs. The
	 * host backend computes as it queues. */
	BACKEND_CAP_ASYNC = 1u << 2,
};

/* The alignment of every device allocation, in bytes. */
#define BACKEND_ALIGN 256

/* Where a module of device kernels came from (struct backend_kernel). */
enum backend_kernel_origin {
	BACKEND_KERNEL_COMPILED = 0, /* compiled (NVRTC) by this process */
	BACKEND_KERNEL_DISK = 1,     /* read from the on-disk kernel cache */
	BACKEND_KERNEL_PREBUILT = 2, /* from the prebuilt set made at `make` */
};

/* One module of device kernels a backend loaded: the compiled form of
 * one source (iface.kernels). */
struct backend_kernel {
	char name[48];          /* its source's name ("binary"), cut */
	int arch;               /* compiled for sm_<arch>: 10 * major + minor */
	enum backend_kernel_origin origin;
	uint64_t compile_ns;    /* in the compiler; 0 when read from disk */
	uint64_t load_ns;       /* from the lookup that missed to the loaded
	                         * module, reading or compiling included */
	uint64_t image_bytes;   /* of the compiled image (CUBIN) */
};

/* What a backend's kernel cache has done since the backend opened. */
struct backend_kernel_totals {
	int arch;               /* the device's sm_<arch> */
	uint64_t modules;       /* modules loaded now */
	uint64_t compiles;      /* sources compiled (images never loaded as
	                         * modules included) */
	uint64_t compile_ns;    /* ns spent in those compiles */
	uint64_t mem_hits;      /* lookups answered by a loaded module */
	uint64_t prebuilt_hits; /* modules loaded from the prebuilt set */
	uint64_t prebuilt_rejects; /* its images refused (compiled instead) */
	uint64_t disk_hits;     /* images read from the cache directory */
	uint64_t disk_writes;   /* images written to it */
	uint64_t disk_rejects;  /* files there that were corrupt or foreign */
	uint64_t disk_errors;   /* reads or writes that failed */
	char cache_dir[256];    /* the cache directory, cut; "" for none */
	char pack[256];         /* the prebuilt set's file, cut; "" for none */
	char pack_note[256];    /* why it is not used, cut; "" when it is */
};

struct backend;
struct backend_stream;  /* an ordered queue of copies and launches */
struct backend_event;   /* a point in a stream that others can wait for */
struct backend_graph;   /* a recorded sequence of launches, replayable */

/*
 * The operations a backend implements. Every function returns 0 or a
 * negative CEP_E* code with a message (cep__set_error); the _free functions
 * cannot fail. Copies and launches are asynchronous with respect to the
 * calling thread on a device backend and complete in stream order; on the
 * host backend they complete before returning, unless captured.
 */
struct backend_iface {
	const char *name;     /* "host", "cuda" */
	const char *device;   /* a human-readable device name */

	/* Releases the backend's context (streams, graphs and memory must have
	 * been freed). */
	void (*free)(struct backend *b);

	/* Device memory: BACKEND_ALIGN-aligned, at least one byte. The VMM
	 * arena of alloc/ plugs in here. CEP_EDEVMEM when there is none left. */
	int (*mem_alloc)(struct backend *b, size_t bytes, void **out);
	void (*mem_free)(struct backend *b, void *ptr);

	/* Streams; priority is a cep_priority. */
	int (*stream_new)(struct backend *b, int priority,
			  struct backend_stream **out);
	void (*stream_free)(struct backend *b, struct backend_stream *s);
	/* Waits until everything queued on s has completed. On a device
	 * backend it then also reports (once, clearing it) a bad index that
	 * a kernel latched on s since the last sync: CEP_EINVAL with the
	 * operator's message, and stream_fault names the launch. */
	int (*stream_sync)(struct backend *b, struct backend_stream *s);
	/* Makes later work on s wait for e. */
	int (*stream_wait)(struct backend *b, struct backend_stream *s,
			   struct backend_event *e);

	/* Events. query returns 0 when complete, CEP_EAGAIN while pending. */
	int (*event_new)(struct backend *b, struct backend_event **out);
	void (*event_free)(struct backend *b, struct backend_event *e);
	int (*event_record)(struct backend *b, struct backend_event *e,
			    struct backend_stream *s);
	int (*event_query)(struct backend *b, struct backend_event *e);
	int (*event_sync)(struct backend *b, struct backend_event *e);
	/* Timers (for profiling, never on the warm path): events that also
	 * keep when they completed; elapsed gives the milliseconds between
	 * two completed timers. NULL when the backend cannot time. */
	int (*timer_new)(struct backend *b, struct backend_event **out);
	int (*event_elapsed)(struct backend *b, struct backend_event *start,
			     struct backend_event *end, double *ms);

	/* Copies of bytes bytes between host memory and device memory or
	 * within device memory, queued on s. Host memory must stay valid and
	 * unchanged until the copy completes. */
	int (*copy_h2d)(struct backend *b, struct backend_stream *s, void *dst,
			const void *src, size_t bytes);
	int (*copy_d2h)(struct backend *b, struct backend_stream *s, void *dst,
			const void *src, size_t bytes);
	int (*copy_d2d)(struct backend *b, struct backend_stream *s, void *dst,
			const void *src, size_t bytes);
	/* rows copies of width bytes within device memory, the i-th from
	 * src + i * spitch to dst + i * dpitch, queued on s as one. NULL:
	 * the wrapper queues rows copy_d2d calls. */
	int (*copy_d2d_2d)(struct backend *b, struct backend_stream *s, void *dst,
			   size_t dpitch, const void *src, size_t spitch, size_t width,
			   size_t rows);

	/* Graph capture: between begin and end, launches and copies on s are
	 * recorded instead of run; end hands back the graph; replay queues all
	 * of it on a stream. NULL when the backend has no graphs. */
	int (*graph_begin)(struct backend *b, struct backend_stream *s);
	int (*graph_end)(struct backend *b, struct backend_stream *s,
			 struct backend_graph **out);
	int (*graph_replay)(struct backend *b, struct backend_graph *g,
			    struct backend_stream *s);
	void (*graph_free)(struct backend *b, struct backend_graph *g);

	/* Queues kernel fn on s with call (call->stream is set to the
	 * backend's handle of s first). call must stay valid and unchanged
	 * until the launch completes, and for as long as a graph that
	 * recorded it lives. */
	int (*launch)(struct backend *b, struct backend_stream *s,
		      backend_kernel_fn fn, struct op_call *call);

	/* After stream_sync failed because a device kernel found a bad
	 * index (a device backend checks for that when it syncs), the call
	 * whose launch found it; else NULL. NULL when the backend's kernels
	 * report such errors themselves (the host's). */
	const struct op_call *(*stream_fault)(struct backend *b,
					      struct backend_stream *s);

	/* Pins bytes of host memory at addr for the device (page-locked,
	 * portable, mapped into the device's address space) and stores the
	 * device's address of addr in *dev. The host backend only stores
	 * addr. Never called while a capture is open (backend.c sees to it). */
	int (*host_register)(struct backend *b, void *addr, size_t bytes, uint64_t *dev);
	void (*host_unregister)(struct backend *b, void *addr);

	/* Queues on s a write of value to the 8 bytes at host (registered
	 * memory, dev its device address), made after everything queued
	 * before it and after those writes are visible to the host.
	 * CEP_ENOTSUP when the device cannot write 64-bit values from a
	 * stream. */
	int (*stream_write_value64)(struct backend *b, struct backend_stream *s,
				    uint64_t *host, uint64_t dev, uint64_t value);

	/* Queues fn(arg) on s (see backend_host_fn). */
	int (*stream_host_fn)(struct backend *b, struct backend_stream *s,
			      backend_host_fn fn, void *arg);

	/* Queues on s a copy of the fault record that kernels queued on s
	 * since the last save or sync latched into, into dst (registered
	 * host memory), and clears the record for the work after it.
	 * Returns 1 when it queued that, 0 when no checking kernel was
	 * queued since (dst is then cleared now). NULL when the backend's
	 * kernels report such errors themselves (the host's). */
	int (*stream_fault_save)(struct backend *b, struct backend_stream *s,
				 struct backend_fault *dst);

	/* Asks, without blocking, whether the context still works: 0, or
	 * CEP_ECONTEXT once an error has made it unusable (see
	 * backend_lost()). NULL: nothing can be lost but by a call's error. */
	int (*health)(struct backend *b);

	/* Makes the context unusable as a faulting kernel would: the CUDA
	 * backend launches a kernel that writes through an invalid pointer
	 * (CUDA_ERROR_ILLEGAL_ADDRESS), the host backend poisons itself.
	 * Set only in builds with CEP_FAULT_INJECT (tests); NULL otherwise. */
	int (*fault_inject)(struct backend *b);

	/* The device kernels loaded so far: the first max of them, in the
	 * order they were loaded, into out, their number into *n (which may
	 * exceed max), and the cache's counters into *totals. Never waits for
	 * a compile in progress, so the daemon's event loop may ask. NULL on
	 * a backend that runs host kernels and compiles none (the host's). */
	int (*kernels)(struct backend *b, struct backend_kernel *out, size_t max,
		       size_t *n, struct backend_kernel_totals *totals);
};

/* What the wrappers count; read with backend_counters_get(). */
struct backend_counters {
	uint64_t allocs;        /* successful mem_alloc calls */
	uint64_t frees;         /* mem_free calls */
	uint64_t bytes_live;    /* bytes allocated and not freed */
	uint64_t bytes_peak;    /* the most bytes_live has been */
	uint64_t copies_h2d;    /* calls */
	uint64_t copies_d2h;
	uint64_t copies_d2d;
	uint64_t bytes_h2d;     /* bytes */
	uint64_t bytes_d2h;
	uint64_t bytes_d2d;
	uint64_t bytes_h2d_pinned;   /* of bytes_h2d, copied from registered
	                              * host memory (straight DMA) */
	uint64_t bytes_h2d_pageable; /* of bytes_h2d, from any other memory */
	uint64_t bytes_d2h_pinned;   /* of bytes_d2h, into registered memory */
	uint64_t bytes_d2h_pageable; /* of bytes_d2h, into any other memory */
	uint64_t launches;      /* kernel launches queued (recorded ones too) */
	uint64_t captures;      /* graphs recorded */
	uint64_t replays;       /* graph replays */
	uint64_t syncs;         /* stream and event syncs */
	uint64_t host_registers;     /* successful host_register calls */
	uint64_t host_unregisters;   /* host_unregister calls */
	uint64_t host_bytes;         /* bytes of host memory registered now */
	uint64_t fences;        /* stream_write_value64 calls queued */
	uint64_t host_fns;      /* stream_host_fn calls queued */
	uint64_t fault_saves;   /* fault records queued for copying back */
};

/* One range of registered host memory (backend.c keeps them sorted). */
struct backend_host_reg {
	uintptr_t addr;          /* host address */
	size_t bytes;
	uint64_t dev;            /* the device's address of addr */
};

/* A backend: its operations, its context, its counters. Created by a
 * backend's constructor (backend_host_new(), ...) and released with
 * backend_free(). */
struct backend {
	struct backend_iface iface;
	void *ctx;               /* the implementation's state */
	enum backend_kind kind;  /* which kernels of the registry it runs */
	unsigned caps;           /* enum backend_caps */
	uint64_t device_memory;  /* bytes of device memory; 0 on the host */
	struct arena *arena;     /* the arena mem_alloc carves from (alloc/
	                          * arena.h), the backend's: for the daemon's
	                          * `cudaepctl mem` and trim; NULL if none */
	struct {
		_Atomic uint64_t allocs, frees, bytes_live, bytes_peak;
		_Atomic uint64_t copies_h2d, copies_d2h, copies_d2d;
		_Atomic uint64_t bytes_h2d, bytes_d2h, bytes_d2d;
		_Atomic uint64_t bytes_h2d_pinned, bytes_d2h_pinned;
		_Atomic uint64_t launches, captures, replays, syncs;
		_Atomic uint64_t host_registers, host_unregisters, host_bytes;
		_Atomic uint64_t fences, host_fns, fault_saves;
	} count;
	/* Registered host memory, kept by the wrappers for every backend so
	 * that copies can be counted as pinned or pageable and fences can
	 * find their device addresses. */
	pthread_mutex_t regs_lock;        /* guards the three below */
	struct backend_host_reg *regs;    /* (n_regs), sorted by addr, disjoint */
	size_t n_regs, cap_regs;
	/* Registering pins pages, which CUDA forbids while a stream captures
	 * (it would invalidate the capture): registrations wait for open
	 * captures to end, and captures for a registration. */
	pthread_mutex_t gate_lock;        /* guards captures_open; held by a
	                                   * registration throughout */
	pthread_cond_t gate_open;         /* signalled when captures_open drops */
	unsigned captures_open;           /* graph_begin without graph_end */
	/* Set when a call failed with CEP_ECONTEXT: the context is unusable
	 * for good (a sticky device error), and only a new backend works.
	 * 0: working; 1: being marked; 2: lost, lost_why is set. */
	_Atomic int lost;
	char lost_why[256];               /* the first such error's message */
};

/* Initializes the wrappers' state of a backend a constructor made (its
 * locks and registry); backend_free() releases it. For gpu/ only. */
void backend__init(struct backend *b);

/* ------------------------------------------------------------ host backend */

enum backend_host_flags {
	/* Advertise BACKEND_CAP_GRAPHS: record launches between graph_begin
	 * and graph_end and run them on replay, as a device backend would. By
	 * default the host backend has no graphs and runs everything eagerly,
	 * which is as fast on a CPU. */
	BACKEND_HOST_GRAPHS = 1u << 0,
	/* Do not advertise BACKEND_CAP_HOST_MEMORY: the engine uploads
	 * weights into the arena as it does on a GPU, so that tests of
	 * weight sharing and accounting run on the CPU. */
	BACKEND_HOST_UPLOAD_WEIGHTS = 1u << 1,
	/* With BACKEND_HOST_GRAPHS: every graph_end fails, as a CUDA capture
	 * does when a recorded operation cannot be captured, so that tests
	 * see the executor fall back to eager launches. */
	BACKEND_HOST_FAIL_CAPTURE = 1u << 2,
	/* Streams are queues run by a thread each, as a device runs them:
	 * work is done after the call that queues it returns, a kernel's
	 * failure is latched and reported by the next sync or fault record
	 * (BACKEND_CAP_ASYNC). For clients and tests that need a GPU's timing
	 * without a GPU. */
	BACKEND_HOST_ASYNC = 1u << 3,
};

/*
 * Creates the host backend: device memory comes from an arena (alloc/
 * arena.h) over the host provider, so it is ordinary process memory with
 * the arena's mapping, pooling and trimming; streams
 * run their work synchronously in the caller's thread, events complete
 * when recorded, kernels are the reference kernels of kernels/cpu. flags
 * are enum backend_host_flags. On success *out is the caller's, released
 * with backend_free(). Fails with CEP_ENOMEM.
 */
int backend_host_new(unsigned flags, struct backend **out);

/* ------------------------------------------------------------ CUDA backend */

/* How to open the CUDA backend; backend_cuda_config_init() fills the
 * defaults. */
struct backend_cuda_config {
	int device;              /* the device ordinal */
	const char *cache_dir;   /* NVRTC's disk cache; NULL: the default
	                          * (nvrtc_cache_dir_default()); "": none */
	const char *driver_lib;  /* NULL: libcuda.so.1 */
	const char *nvrtc_lib;   /* NULL: the search of nvrtc_lib_open() */
	const char *kernel_pack; /* the prebuilt kernels (gpu/cuda/kpack.h);
	                          * NULL: backend_cuda_pack_default(); "":
	                          * none, every kernel compiles on first use */
	const char *cudnn_lib;   /* NULL: the search of cudnn_lib_open();
	                          * opened when a plan first convolves, so a
	                          * path that does not load refuses Conv
	                          * then, and nothing else */
	size_t pool_bytes;       /* bytes of unmapped physical memory the
	                          * arena keeps for reuse; 0: the arena's
	                          * default (alloc/arena.h) */
};

/* Fills cfg with the defaults: device 0, the default cache directory, the
 * libraries found where they usually are. */
void backend_cuda_config_init(struct backend_cuda_config *cfg);

/* Where the prebuilt kernels are when none is configured, into buf (len
 * bytes): lib/cudaep/kernels.pack beside the program's bin/ directory
 * (/usr/local/bin/cudaepd: /usr/local/lib/cudaep/kernels.pack; in the
 * build tree build/lib/cudaep/kernels.pack). 0, CEP_ENOENT or
 * CEP_ENAMETOOLONG. */
int backend_cuda_pack_default(char *buf, size_t len);

/*
 * Opens the CUDA backend on cfg->device: loads the driver and NVRTC with
 * dlopen, retains the device's primary context for the backend's life,
 * and puts device memory behind the VMM arena of alloc/ (every allocation
 * BACKEND_ALIGN aligned). Streams are non-blocking CUDA streams with
 * priorities, copies are async driver copies, graphs are CUDA graphs
 * (BACKEND_CAP_GRAPHS), kernels are those of kernels/cuda, compiled with
 * NVRTC for the device's architecture when a plan first needs them and
 * cached in memory and in cfg->cache_dir. Device memory is not host
 * memory: no BACKEND_CAP_HOST_MEMORY. On success *out is the caller's,
 * released with backend_free(). Fails, with a message meant for a log
 * line, with CEP_ENOTSUP ("no CUDA driver: ...", "no NVRTC: ...", a
 * device without virtual memory management), CEP_EINVAL (no such device,
 * a bad cache directory), CEP_EDEVICE (the driver's error), CEP_EDEVMEM or
 * CEP_ENOMEM.
 */
int backend_cuda_new_config(const struct backend_cuda_config *cfg,
			    struct backend **out);

/* backend_cuda_new_config() with the defaults for device. */
int backend_cuda_new(int device, struct backend **out);

/* ---------------------------------------------------------------- wrappers */

/*
 * A lost context. Some device errors leave the context unusable: a kernel
 * that touched an illegal address, an illegal instruction, a misaligned
 * address, a hardware stack error, an invalid PC or address space, an
 * uncorrectable ECC error, or a launch that failed. Every later call then
 * fails, and host functions queued behind work never run. The backends
 * report those errors as CEP_ECONTEXT; the wrappers below remember the
 * first one, after which backend_lost() is true for good. The daemon then
 * fails the runs in flight, frees everything it made on b and replaces b
 * with a new backend (daemon/recover.c).
 *
 * backend_free() and every _free and unregister function still work on a
 * lost backend: they release what lives in host memory and skip what the
 * device would refuse (the CUDA backend resets the primary context, which
 * frees the rest).
 */

/* Frees the backend (see iface.free). Accepts NULL. */
void backend_free(struct backend *b);

/* Whether a call on b has failed with CEP_ECONTEXT (see above). Never
 * blocks; any thread. */
bool backend_lost(const struct backend *b);

/* The message of the error that lost b's context ("cuStreamSynchronize
 * ... CUDA_ERROR_ILLEGAL_ADDRESS ..."), or "" while it is not lost. */
const char *backend_lost_why(const struct backend *b);

/* Checks without blocking whether b's context still works (iface.health,
 * which a lost context fails with CEP_ECONTEXT, setting backend_lost()).
 * Returns 0 or CEP_ECONTEXT with the device's message. For a watchdog
 * that must notice a lost context while nothing else calls the backend
 * (runs in flight whose host functions will never run). */
int backend_health(struct backend *b);

/* Makes b's context unusable on purpose (see iface.fault_inject): for
 * tests of recovery. Returns CEP_ECONTEXT with the fault's message once
 * the context is lost (backend_lost() is then true: the CUDA backend
 * waits for its faulting kernel), or CEP_ENOTSUP in builds without
 * CEP_FAULT_INJECT. */
int backend_fault_inject(struct backend *b);

/* Copies the counters into *out (each read atomically; the set is not a
 * snapshot when other threads use the backend meanwhile). */
void backend_counters_get(const struct backend *b, struct backend_counters *out);

/*
 * The device kernels b has loaded (see iface.kernels): up to max of them
 * into out (caller memory), their number into *n and the kernel cache's
 * counters into *totals; both are zeroed first. Returns 0, or CEP_ENOTSUP,
 * saying so, on a backend that has no device kernels (the host backend
 * runs the reference kernels of kernels/cpu). Never blocks on a compile.
 */
int backend_kernels_get(struct backend *b, struct backend_kernel *out, size_t max,
			size_t *n, struct backend_kernel_totals *totals);

/* Allocates bytes of device memory (at least one byte, BACKEND_ALIGN
 * aligned) into *out, owned by the caller and released with
 * backend_mem_free(). Fails with CEP_EDEVMEM or CEP_ENOMEM. */
int backend_mem_alloc(struct backend *b, size_t bytes, void **out);

/* Releases memory from backend_mem_alloc() of bytes bytes (the size given
 * when allocating, for the counters). Accepts NULL. */
void backend_mem_free(struct backend *b, void *ptr, size_t bytes);

/* Streams and events: see struct backend_iface. The _free functions accept
 * NULL. */
int backend_stream_new(struct backend *b, int priority,
		       struct backend_stream **out);
void backend_stream_free(struct backend *b, struct backend_stream *s);
int backend_stream_sync(struct backend *b, struct backend_stream *s);
int backend_stream_wait(struct backend *b, struct backend_stream *s,
			struct backend_event *e);
int backend_event_new(struct backend *b, struct backend_event **out);
void backend_event_free(struct backend *b, struct backend_event *e);
int backend_event_record(struct backend *b, struct backend_event *e,
			 struct backend_stream *s);
int backend_event_query(struct backend *b, struct backend_event *e);
int backend_event_sync(struct backend *b, struct backend_event *e);

/* A timer (an event, freed with backend_event_free()) and the milliseconds
 * between two completed ones; CEP_ENOTSUP when the backend cannot time. */
int backend_timer_new(struct backend *b, struct backend_event **out);
int backend_event_elapsed(struct backend *b, struct backend_event *start,
			  struct backend_event *end, double *ms);

/* Copies; 0 bytes is a no-op that succeeds. */
int backend_copy_h2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes);
int backend_copy_d2h(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes);
int backend_copy_d2d(struct backend *b, struct backend_stream *s, void *dst,
		     const void *src, size_t bytes);
/* rows copies of width bytes within device memory, the i-th from src + i *
 * spitch to dst + i * dpitch (pitches >= width), queued as one copy where
 * the backend can (CUDA: cuMemcpy2DAsync), else one per row. The rows must
 * not overlap. Counted as one copy of rows * width bytes. */
int backend_copy_d2d_2d(struct backend *b, struct backend_stream *s, void *dst,
			size_t dpitch, const void *src, size_t spitch, size_t width,
			size_t rows);

/* Graphs; CEP_ENOTSUP when the backend has none (no BACKEND_CAP_GRAPHS).
 * backend_graph_free() accepts NULL. */
int backend_graph_begin(struct backend *b, struct backend_stream *s);
int backend_graph_end(struct backend *b, struct backend_stream *s,
		      struct backend_graph **out);
int backend_graph_replay(struct backend *b, struct backend_graph *g,
			 struct backend_stream *s);
void backend_graph_free(struct backend *b, struct backend_graph *g);

/* Queues fn(call) on s; see iface.launch. */
int backend_launch(struct backend *b, struct backend_stream *s,
		   backend_kernel_fn fn, struct op_call *call);

/* The launch whose kernel made the last backend_stream_sync() of s fail
 * with a bad index, or NULL (see iface.stream_fault), so that the caller
 * can name the node. */
const struct op_call *backend_stream_fault(struct backend *b,
					   struct backend_stream *s);

/* ------------------------------------------- registered memory, fences */

/*
 * Registers bytes of host memory at addr with the backend: on a GPU it is
 * pinned and mapped for the device (cuMemHostRegister with PORTABLE and
 * DEVICEMAP), so copies from and into it run as direct DMA without a
 * staging copy and the device can write fences into it; on the host
 * backend it is only remembered. Waits while a graph capture is open on
 * any stream of b (pinning would invalidate it), and holds new captures
 * off meanwhile. The memory must stay mapped until
 * backend_host_unregister(). Fails with CEP_EINVAL (NULL, 0 bytes, a
 * range overlapping one registered before), CEP_ENOMEM, or the device's
 * error (CEP_EDEVICE, CEP_EDEVMEM when nothing more can be pinned).
 */
int backend_host_register(struct backend *b, void *addr, size_t bytes);

/* Unpins memory registered at addr (waiting for open captures likewise).
 * No queued work may still use it. Accepts NULL and an address never
 * registered (ignored). */
void backend_host_unregister(struct backend *b, void *addr);

/* Whether [addr, addr + bytes) lies in one registered range; if so and
 * dev is not NULL, *dev is the device's address of addr. */
bool backend_host_registered(struct backend *b, const void *addr, size_t bytes,
			     uint64_t *dev);

/*
 * Queues on s a write of value into *addr, which must be 8-byte aligned
 * in registered host memory, after every write of the work queued before
 * it (copies into host memory included) is visible: a host that reads
 * value there may read the outputs. On a GPU the device writes it
 * (cuStreamWriteValue64); the host backend stores it now, with release
 * ordering. Fails with CEP_EINVAL (unregistered or unaligned), CEP_ENOTSUP
 * when the device cannot (the caller then writes the value itself from a
 * host function), or the device's error.
 */
int backend_stream_write_value64(struct backend *b, struct backend_stream *s,
				 uint64_t *addr, uint64_t value);

/* Queues fn(arg) on s, to run once everything queued before it has
 * completed (see backend_host_fn); the host backend calls it now. Not
 * while s captures. Fails with the device's error, in which case fn is
 * never called. */
int backend_stream_host_fn(struct backend *b, struct backend_stream *s,
			   backend_host_fn fn, void *arg);

/*
 * Queues on s a copy of the fault record of s into *dst (registered host
 * memory), so that a run's bad index can be told apart from the next
 * run's without a sync: once the work queued before has completed (a
 * host function queued after this has run), backend_fault_error(dst)
 * says whether a kernel latched one. Clears the device's record behind
 * the copy. Returns 1 when a copy was queued, 0 when no kernel that
 * checks indices was queued on s since the last save or sync (dst is
 * cleared now, nothing is queued; always so on the host backend), or a
 * negative error (CEP_EINVAL for dst outside registered memory).
 */
int backend_stream_fault_save(struct backend *b, struct backend_stream *s,
			      struct backend_fault *dst);

/* 0 when f records no fault; else CEP_EINVAL with the operator's message
 * ("Gather: index 7 is out of range for dimension 0 of size 5") and, if
 * call is not NULL, *call the launch that latched it (its op_call must
 * still live). */
int backend_fault_error(const struct backend_fault *f, const struct op_call **call);

#endif
