/*
 * backend_cuda_mem.c — the CUDA backend's memory (gpu/cuda/backend_cuda_priv.h):
 * device blocks from the VMM arena of alloc/ over the CUDA provider,
 * copies (the driver's async copies on a stream), and registered host
 * memory, which is pinned and mapped (cuMemHostRegister) so that fences
 * are cuStreamWriteValue64 into it; completions are host functions
 * (cuLaunchHostFunc).
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <stdint.h>

#include "alloc/arena.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"

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
		log_err("cuda backend: freeing %p, which it never allocated", ptr);
		return;
	}
	arena_block_free(cc->arena, blk);
}

/* ----------------------------------------------------------------- copies */

static int cuda_copy_h2d(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst,
								       src, bytes, s->stream));
}

static int cuda_copy_d2h(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyDtoHAsync(dst,
								       (CUdeviceptr)(uintptr_t)src,
								       bytes, s->stream));
}

static int cuda_copy_d2d(struct backend *b, struct backend_stream *s, void *dst,
			 const void *src, size_t bytes)
{
	struct cuda_ctx *cc = b->ctx;
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst,
								       (CUdeviceptr)(uintptr_t)src,
								       bytes, s->stream));
}

static int cuda_copy_d2d_2d(struct backend *b, struct backend_stream *s, void *dst,
			    size_t dpitch, const void *src, size_t spitch, size_t width,
			    size_t rows)
{
	struct cuda_ctx *cc = b->ctx;
	CUDA_MEMCPY2D c = {
		.srcMemoryType = CU_MEMORYTYPE_DEVICE,
		.srcDevice = (CUdeviceptr)(uintptr_t)src,
		.srcPitch = spitch,
		.dstMemoryType = CU_MEMORYTYPE_DEVICE,
		.dstDevice = (CUdeviceptr)(uintptr_t)dst,
		.dstPitch = dpitch,
		.WidthInBytes = width,
		.Height = rows,
	};
	int ret = backend_cuda__enter(cc, s);

	return ret < 0 ? ret : CEP_CU_CHECK(cc->drv->cuMemcpy2DAsync(&c, s->stream));
}

/* ---------------------------------------------- registered memory, fences */

/* Portable: any context may use it; device-mapped: streams can write
 * fences into it, and copies from it need no staging buffer. */
static int cuda_host_register(struct backend *b, void *addr, size_t bytes, uint64_t *dev)
{
	struct cuda_ctx *cc = b->ctx;
	CUdeviceptr d = 0;
	int ret;

	ret = backend_cuda__current(cc);
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
	if (!backend_lost(b) && backend_cuda__current(cc) == 0)
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
	ret = backend_cuda__enter(cc, s);
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
	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	if (cc->done != NULL)
		return backend_cuda__done_queue(cc, s, fn, arg);
	return CEP_CU_CHECK(cc->drv->cuLaunchHostFunc(s->stream, fn, arg));
}

/* ------------------------------------------------------------- the seam */

void backend_cuda__iface_mem(struct backend_iface *iface)
{
	iface->mem_alloc = cuda_mem_alloc;
	iface->mem_free = cuda_mem_free;
	iface->copy_h2d = cuda_copy_h2d;
	iface->copy_d2h = cuda_copy_d2h;
	iface->copy_d2d = cuda_copy_d2d;
	iface->copy_d2d_2d = cuda_copy_d2d_2d;
	iface->host_register = cuda_host_register;
	iface->host_unregister = cuda_host_unregister;
	iface->stream_write_value64 = cuda_write_value64;
	iface->stream_host_fn = cuda_stream_host_fn;
}
