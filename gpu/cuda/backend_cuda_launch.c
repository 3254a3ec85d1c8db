/*
 * backend_cuda_launch.c — the kernels' side of the CUDA backend: the
 * functions of gpu/cuda/cuda_kernels.h, next to the state they need
 * (gpu/cuda/backend_cuda_priv.h).
 *
 * Kernels are the registry's BACKEND_CUDA entries. Their NVRTC-compiled
 * code comes from the module cache of gpu/cuda/nvrtc.h, their launches go
 * on the caller's stream, and the libraries some of them run (cuBLASLt,
 * cuDNN) are opened on first use, once per backend.
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "gpu/cuda/cublaslt.h"
#include "gpu/cuda/cudnn.h"
#include "gpu/cuda/nvrtc.h"
#include "kernels/ops.h"

/* ------------------------------------------------------ functions, launches */

static int cuda_launch_op(struct backend *b, struct backend_stream *s,
			  backend_kernel_fn fn, struct op_call *call)
{
	int ret = backend_cuda__enter(b->ctx, s);

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
	ret = backend_cuda__current(cc);
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
	ret = backend_cuda__enter(cc, s);
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
		out[i].origin = mods[i].origin == NVRTC_PREBUILT ? BACKEND_KERNEL_PREBUILT
				: mods[i].origin == NVRTC_DISK ? BACKEND_KERNEL_DISK
							       : BACKEND_KERNEL_COMPILED;
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
	totals->prebuilt_hits = st.prebuilt_hits;
	totals->prebuilt_rejects = st.prebuilt_rejects;
	totals->disk_hits = st.disk_hits;
	totals->disk_writes = st.disk_writes;
	totals->disk_rejects = st.disk_rejects;
	totals->disk_errors = st.disk_errors;
	snprintf(totals->cache_dir, sizeof(totals->cache_dir), "%s",
		 nvrtc_cache_dir(cc->kernels));
	snprintf(totals->pack, sizeof(totals->pack), "%.255s",
		 cc->pack != NULL ? cc->pack_path : "");
	snprintf(totals->pack_note, sizeof(totals->pack_note), "%.255s", cc->pack_note);
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

/* ------------------------------------------------- cuBLASLt and cuDNN */

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
	ret = backend_cuda__current(cc);
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

/* ------------------------------------------------------------- the seam */

void backend_cuda__iface_launch(struct backend_iface *iface)
{
	iface->launch = cuda_launch_op;
	iface->kernels = cuda_kernels;
}
