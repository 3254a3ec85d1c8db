/*
 * cudaepctl_nvml.c — GPU utilisation and memory for `cudaepctl top`, read
 * through NVML (libnvidia-ml.so.1, shipped with NVIDIA's driver). It is
 * loaded with dlopen, so cudaepctl runs on machines without the driver and
 * says so instead. Only the handful of entry points top needs are
 * declared, with the types of NVML's documented, stable C ABI.
 */
#include "tools/cudaepctl/cudaepctl.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* NVML's own types, as far as they are used here. */
typedef int nvml_return;                 /* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t, opaque */

struct nvml_utilization {
	unsigned int gpu;    /* percent of time a kernel was running */
	unsigned int memory; /* percent of time memory was read or written */
};

struct nvml_memory {
	unsigned long long total; /* bytes */
	unsigned long long free;  /* bytes */
	unsigned long long used;  /* bytes */
};

#define NVML_OK 0
#define NVML_NAME_LEN 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */

struct ctl_nvml {
	void *lib; /* the dlopen handle */
	nvml_return (*init)(void);
	nvml_return (*shutdown)(void);
	nvml_return (*count)(unsigned int *n);
	nvml_return (*handle)(unsigned int index, nvml_device *dev);
	nvml_return (*name)(nvml_device dev, char *name, unsigned int len);
	nvml_return (*util)(nvml_device dev, struct nvml_utilization *u);
	nvml_return (*memory)(nvml_device dev, struct nvml_memory *m);
};

/* dlsym's void * as a function pointer: POSIX guarantees the two convert,
 * ISO C does not, hence the memcpy. */
static int nvml_sym(void *lib, const char *name, void *fnp, size_t size)
{
	void *sym = dlsym(lib, name);

	if (sym == NULL)
		return -1;
	memcpy(fnp, &sym, size);
	return 0;
}

#define NVML_SYM(n, field, name) \
	nvml_sym((n)->lib, name, &(n)->field, sizeof((n)->field))

struct ctl_nvml *ctl_nvml_new(void)
{
	struct ctl_nvml *n = calloc(1, sizeof(*n));

	if (n == NULL)
		return NULL;
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (n->lib == NULL)
		goto fail;
	if (NVML_SYM(n, init, "nvmlInit_v2") != 0 ||
	    NVML_SYM(n, shutdown, "nvmlShutdown") != 0 ||
	    NVML_SYM(n, count, "nvmlDeviceGetCount_v2") != 0 ||
	    NVML_SYM(n, handle, "nvmlDeviceGetHandleByIndex_v2") != 0 ||
	    NVML_SYM(n, name, "nvmlDeviceGetName") != 0 ||
	    NVML_SYM(n, util, "nvmlDeviceGetUtilizationRates") != 0 ||
	    NVML_SYM(n, memory, "nvmlDeviceGetMemoryInfo") != 0)
		goto fail;
	if (n->init() != NVML_OK)
		goto fail;
	return n;
fail:
	if (n->lib != NULL)
		dlclose(n->lib);
	free(n);
	return NULL;
}

int ctl_nvml_sample(struct ctl_nvml *n, struct ctl_gpu *gpus, int max)
{
	unsigned int count = 0, i;

	if (n == NULL || n->count(&count) != NVML_OK)
		return 0;
	if (count > (unsigned int)max)
		count = (unsigned int)max;
	for (i = 0; i < count; i++) {
		struct ctl_gpu *g = &gpus[i];
		struct nvml_utilization u;
		struct nvml_memory m;
		char name[NVML_NAME_LEN];
		nvml_device dev;

		memset(g, 0, sizeof(*g));
		snprintf(g->name, sizeof(g->name), "GPU %u", i);
		if (n->handle(i, &dev) != NVML_OK)
			continue;
		if (n->name(dev, name, sizeof(name)) == NVML_OK) {
			name[sizeof(name) - 1] = '\0';
			snprintf(g->name, sizeof(g->name), "%s", name);
		}
		if (n->util(dev, &u) != NVML_OK || n->memory(dev, &m) != NVML_OK)
			continue;
		g->util = u.gpu;
		g->mem_used = m.used;
		g->mem_total = m.total;
		g->ok = true;
	}
	return (int)count;
}

void ctl_nvml_free(struct ctl_nvml *n)
{
	if (n == NULL)
		return;
	n->shutdown();
	dlclose(n->lib);
	free(n);
}
