/*
 * backend_cuda.c — the CUDA backend: the backend seam (gpu/backend.h) on
 * the driver API, loaded with dlopen (gpu/cuda/cuda_driver.h). This file
 * opens and closes it: the driver, NVRTC and its kernel cache, the device
 * and its primary context, the provider and arena of device memory; and
 * it assembles the seam from the parts the other files of the backend
 * implement (gpu/cuda/backend_cuda_priv.h says which).
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/arena.h"
#include "alloc/provider.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "gpu/cuda/cublaslt.h"
#include "gpu/cuda/cudnn.h"
#include "gpu/cuda/kpack.h"
#include "gpu/cuda/nvrtc.h"

/* Releases everything of cc. lost: the context is unusable (a sticky
 * error), so it is reset, which destroys it with everything made in it
 * (streams, modules, pinned and device memory) and lets the next retain
 * create a fresh one; the host-side state is freed all the same. */
static void cuda_ctx_close(struct cuda_ctx *cc, bool lost)
{
	backend_cuda__done_stop(cc);
	if (cc->ctx != NULL && backend_cuda__current(cc) == 0) {
		if (cc->aux != NULL && !lost)
			(void)CEP_CU_CHECK(cc->drv->cuStreamDestroy(cc->aux));
		cublaslt_free(cc->blas.lib);
		cudnn_free(cc->dnn.lib);
		nvrtc_cache_free(cc->kernels);
	}
	kpack_close(cc->pack);
	pthread_mutex_destroy(&cc->blas.lock);
	pthread_mutex_destroy(&cc->dnn.lock);
	nvrtc_lib_free(cc->nvrtc);
	arena_free(cc->arena);
	alloc_provider_free(cc->prov);
	/* Resetting does not release our retain: both are needed. */
	if (cc->ctx != NULL && lost)
		backend_cuda__ctx_reset(cc);
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
	ret = backend_cuda__current(cc);
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuCtxGetStreamPriorityRange(&cc->prio_least,
								      &cc->prio_greatest));
	return ret;
}

int backend_cuda_pack_default(char *buf, size_t len)
{
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return cep__set_error(CEP_ENOENT, "no prebuilt kernels: /proc/self/exe: %s",
				      n < 0 ? strerror(errno) : "empty");
	exe[n] = '\0';
	/* .../bin/cudaepd -> .../lib/cudaep/kernels.pack */
	slash = strrchr(exe, '/');
	if (slash != NULL)
		*slash = '\0';
	slash = strrchr(exe, '/');
	if (slash != NULL)
		*slash = '\0';
	n = snprintf(buf, len, "%s/lib/cudaep/kernels.pack", exe);
	return n < 0 || (size_t)n >= len
	       ? cep__set_error(CEP_ENAMETOOLONG, "no prebuilt kernels: the path is too long")
	       : 0;
}

/* The prebuilt kernels, from the configured file or the one installed
 * beside the program. Not having them is not an error: kernels are then
 * compiled on first use, and the note says why. */
static void cuda_ctx_pack(struct cuda_ctx *cc, const struct backend_cuda_config *cfg)
{
	uint32_t archs[16];
	size_t n, i, at;
	int ret;

	cc->pack_note[0] = '\0';
	if (cfg->kernel_pack != NULL)
		snprintf(cc->pack_path, sizeof(cc->pack_path), "%s", cfg->kernel_pack);
	else if (backend_cuda_pack_default(cc->pack_path, sizeof(cc->pack_path)) < 0)
		cc->pack_path[0] = '\0';
	if (cc->pack_path[0] == '\0') {
		snprintf(cc->pack_note, sizeof(cc->pack_note), "no prebuilt kernels configured");
		return;
	}
	ret = kpack_open(cc->pack_path, &cc->pack);
	if (ret < 0) {
		snprintf(cc->pack_note, sizeof(cc->pack_note), "%s", cep_last_error());
		cc->pack = NULL;
		cep__clear_error();
		return;
	}
	n = kpack_archs(cc->pack, KPACK_CUBIN, archs, sizeof(archs) / sizeof(archs[0]));
	for (i = 0; i < n && i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i] / 10 == (uint32_t)cc->arch / 10 && archs[i] <= (uint32_t)cc->arch)
			break;
	if (i == n || i == sizeof(archs) / sizeof(archs[0])) {
		at = (size_t)snprintf(cc->pack_note, sizeof(cc->pack_note),
				      "%s has no CUBIN for sm_%d (it has", cc->pack_path, cc->arch);
		for (i = 0; i < n && i < sizeof(archs) / sizeof(archs[0]) &&
			    at < sizeof(cc->pack_note); i++)
			at += (size_t)snprintf(cc->pack_note + at, sizeof(cc->pack_note) - at,
					       " sm_%u", archs[i]);
		if (at < sizeof(cc->pack_note))
			snprintf(cc->pack_note + at, sizeof(cc->pack_note) - at,
				 "): its PTX or compiles are used");
	}
}

/* Says in the log where the kernels will come from: a user waiting for a
 * first run wants to know whether it compiles. */
static void cuda_ctx_pack_say(const struct cuda_ctx *cc)
{
	if (cc->pack == NULL)
		log_notice("kernels: %s; each kernel source is compiled by NVRTC on first "
			   "use (seconds each; then kept in the cache directory)", cc->pack_note);
	else if (cc->pack_note[0] != '\0')
		log_notice("kernels: %s", cc->pack_note);
	else
		log_info("kernels: prebuilt set %s (%zu images, built by NVRTC %u.%u)",
			 cc->pack_path, kpack_count(cc->pack), kpack_builder(cc->pack) / 1000,
			 kpack_builder(cc->pack) % 1000 / 10);
}

/* The kernel cache, in the configured directory or the default one, over
 * the prebuilt kernels when there are some. */
static int cuda_ctx_kernels(struct cuda_ctx *cc, const struct backend_cuda_config *cfg)
{
	char dir[1024] = "";
	int ret;

	if (cfg->cache_dir != NULL)
		snprintf(dir, sizeof(dir), "%s", cfg->cache_dir);
	else if (nvrtc_cache_dir_default(dir, sizeof(dir)) < 0)
		dir[0] = '\0'; /* no home: kernels are cached in memory only */
	cep__clear_error();
	ret = nvrtc_cache_new(cc->nvrtc, cc->drv, cc->arch, dir, &cc->kernels);
	if (ret < 0)
		return ret;
	cuda_ctx_pack(cc, cfg);
	cuda_ctx_pack_say(cc);
	nvrtc_cache_use_pack(cc->kernels, cc->pack);
	return 0;
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
	ret = backend_cuda__done_start(cc);
	if (ret < 0)
		goto out;
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
	};
	backend_cuda__iface_mem(&b->iface);
	backend_cuda__iface_stream(&b->iface);
	backend_cuda__iface_launch(&b->iface);
	backend_cuda__iface_lost(&b->iface);
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

