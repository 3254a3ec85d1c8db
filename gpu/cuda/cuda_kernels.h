/*
 * cuda_kernels.h — how a device kernel of kernels/cuda reaches its
 * compiled code and its stream on the CUDA backend.
 *
 * A CUDA operator is an ordinary entry of the registry (kernels/registry.h)
 * for BACKEND_CUDA with prepare() and run(), like the host ones. The
 * planner sets call->be before prepare(), and the backend sets
 * call->stream (its struct backend_stream) before run(). So:
 *
 *   prepare(): cuda_function_get(call->be, "binary", "add_f32", &fn) and
 *              keep fn in call->params. This is where NVRTC compiles (once
 *              per source and process, or never with a warm disk cache):
 *              at plan time, never on a run.
 *   run():     cuda_launch(call->be, call->stream, fn, grid, block, 0, args)
 *              with the tensors' device pointers; copies go through
 *              backend_copy_d2d(call->be, call->stream, ...).
 *
 * Why through the call rather than a global: the daemon has one backend,
 * but tests build several, and a launcher never needs to know which; the
 * call already travels from planner to backend to kernel, and run() stays
 * a plain function the backend can record into a CUDA graph (the launch
 * is captured with its arguments, which never change for a plan).
 *
 * Data-dependent indices are checked on the device: a kernel that meets a
 * bad index latches it, with the address of its op_call, into the fault
 * record of its stream (cuda_fault_get()) and skips the element; the
 * backend reads the record when the stream is synced, and the run fails
 * with the operator's message instead of reading out of bounds.
 *
 * The sources themselves (the .cu files of kernels/cuda, and the .cuh
 * headers every source may include) are embedded into the binary at build
 * time by the Makefile, as cuda_sources[].
 */
#ifndef CEP_GPU_CUDA_KERNELS_H
#define CEP_GPU_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "gpu/backend.h"
#include "gpu/cuda/nvrtc.h"

/* ------------------------------------------------------ embedded sources */

/* One file of kernels/cuda, as the Makefile embedded it. */
struct cuda_source {
	const char *name;  /* "binary" for binary.cu; headers keep the whole
	                    * name they are included by: "common.cuh" */
	const char *text;  /* the file, NUL-terminated */
	size_t len;        /* bytes, without the NUL */
};

/* Every file of kernels/cuda, sorted by file name (generated; the array
 * ends with an entry of NULLs after cuda_source_count entries). */
extern const struct cuda_source cuda_sources[];
extern const int cuda_source_count;

/* The embedded source or header called name, or NULL. */
const struct cuda_source *cuda_source_find(const char *name);

/*
 * Fills *out with the NVRTC source of the embedded source name, with every
 * embedded header available to #include. The strings are static. Returns
 * 0, or CEP_ENOENT (with a message) when there is no such source.
 */
int cuda_source_get(const char *name, struct nvrtc_source *out);

/* ------------------------------------------------------------ launchers */

/* The device's fault record, as kernels/cuda/common.cuh declares it. A
 * kernel latches the first bad index of a run here; the backend reads it
 * when the stream is synced and clears it. */
/* What a latched fault is; twin of the CEP_FAULT_ kinds of common.cuh. */
enum cuda_fault_kind {
	CUDA_FAULT_INDEX = BACKEND_FAULT_INDEX,
	CUDA_FAULT_AXIS = BACKEND_FAULT_AXIS,
	CUDA_FAULT_SHAPE = BACKEND_FAULT_SHAPE,
	CUDA_FAULT_STEP = BACKEND_FAULT_STEP,
	CUDA_FAULT_TRAINING = BACKEND_FAULT_TRAINING,
	CUDA_FAULT_VALUE = BACKEND_FAULT_VALUE,
};

struct cuda_fault {
	uint32_t flag;      /* 0: nothing; else an enum cuda_fault_kind (the
	                     * fields below are set) */
	int32_t axis;       /* the dimension indexed */
	uint64_t site;      /* the address of the op_call that launched it */
	int64_t value;      /* the bad index */
	int64_t limit;      /* the size of that dimension */
};

/* Whether be is the CUDA backend (and so may launch device kernels). */
bool cuda_backend_is(const struct backend *be);

/*
 * Stores in *out the kernel func of the embedded source src_name, compiled
 * for be's device (and cached: see gpu/cuda/nvrtc.h). For prepare() functions.
 * Fails with CEP_EINVAL when be is not the CUDA backend, CEP_ENOENT for an
 * unknown source, or as nvrtc_cache_function() does.
 */
int cuda_function_get(struct backend *be, const char *src_name, const char *func,
		      CUfunction *out);

/* The same for a source that is not embedded (tests, experiments). */
int cuda_function_compile(struct backend *be, const struct nvrtc_source *src,
			  const char *func, CUfunction *out);

/*
 * Queues fn on stream s of be: grid blocks of block threads, shmem bytes
 * of dynamic shared memory, args as cuLaunchKernel takes them (an array of
 * pointers to each argument's value, read before this returns). Returns 0
 * or the driver's error; a grid of 0 blocks launches nothing.
 */
int cuda_launch(struct backend *be, struct backend_stream *s, CUfunction fn,
		unsigned grid, unsigned block, unsigned shmem, void **args);

/*
 * Stores in *out the device address of the fault record of stream s, for
 * a kernel argument (a struct cuda_fault *), and marks s so that its next
 * sync reads the record (a replayed graph that was captured with such a
 * kernel marks it too). Returns 0, or CEP_EINVAL when be is not the CUDA
 * backend.
 */
int cuda_fault_get(struct backend *be, struct backend_stream *s, uint64_t *out);

/* Kernel cache counters of the CUDA backend be (CEP_EINVAL for another). */
int cuda_kernel_stats(struct backend *be, struct nvrtc_stats *out);

/* The device's architecture as NVRTC names it (90 for sm_90), 0 for
 * another backend. */
int cuda_backend_arch(const struct backend *be);

/* The CUstream under s, a stream of the CUDA backend (call->stream of a
 * device kernel), for libraries that take one (cuBLASLt); NULL for NULL. */
CUstream cuda_stream_handle(const struct backend_stream *s);

struct cublaslt;

/*
 * Stores in *out the cuBLASLt handle of be (gpu/cuda/cublaslt.h), which be
 * owns: opened on the first call (the library loaded, a handle created on
 * be's device) and freed with be. For prepare() functions. Fails with
 * CEP_EINVAL when be is not the CUDA backend, or with the failure of
 * cublaslt_new() ("no cuBLASLt: ..."), which is remembered and repeated
 * on later calls without trying again.
 */
int cuda_blas_get(struct backend *be, struct cublaslt **out);

struct cudnn;

/*
 * Stores in *out the cuDNN handle of be (gpu/cuda/cudnn.h), which be owns:
 * opened on the first call (the library loaded from the backend's
 * configured cudnn_lib or the usual places, a handle created on be's
 * device) and freed with be. Leaves be's context current on the calling
 * thread, as the handle's plan building needs. For prepare() functions.
 * Fails with CEP_EINVAL when be is not the CUDA backend, or with the
 * failure of cudnn_new() ("no cuDNN: ..."), which is remembered and
 * repeated on later calls without trying again.
 */
int cuda_dnn_get(struct backend *be, struct cudnn **out);

#endif
