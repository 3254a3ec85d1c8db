/*
 * provider_cuda.c — the CUDA physical-memory provider (alloc/provider.h):
 * the driver's virtual memory management API, through the dlopen'd table
 * of gpu/cuda/cuda_driver.h.
 *
 * Address space comes from cuMemAddressReserve, physical memory from
 * cuMemCreate in granules of the device's minimum granularity, and mapping
 * is cuMemMap followed by cuMemSetAccess for the device. Handles are
 * mapped and unmapped one granule at a time, because cuMemUnmap may not
 * split a mapping and the arena unmaps single idle granules.
 */
#include "alloc/provider.h"
#include "gpu/cuda/cuda_driver.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_PROV_RESERVE_MIN ((size_t)1 << 40)  /* the ladder starts at least here */
#define CUDA_PROV_RESERVE_FLOOR ((size_t)64 << 30) /* and stops here */

struct cuda_provider {
	struct alloc_provider pub;
	const struct cuda_driver *drv; /* the caller's */
	int ordinal;
	CUdevice dev;
	CUcontext ctx;                 /* the primary context, retained */
	char name[128];                /* the device's, for messages */
	size_t total;                  /* bytes of device memory */
	CUmemAllocationProp prop;      /* what cuMemCreate makes */
	CUmemAccessDesc access;        /* read-write for the device */
};

/* Rewrites the last error as "device N (name): <it>", so that every
 * failure says which device. Returns err. */
static int cuda_prov_blame(const struct cuda_provider *cp, int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "device %d (%s): %s", cp->ordinal, cp->name, why);
}

static int cuda_prov_current(const struct cuda_provider *cp)
{
	int ret = CEP_CU_CHECK(cp->drv->cuCtxSetCurrent(cp->ctx));

	return ret ? cuda_prov_blame(cp, ret) : 0;
}

static int cuda_reserve(void *ctx, uint64_t *base, size_t *bytes)
{
	struct cuda_provider *cp = ctx;
	size_t g = cp->pub.granule;
	size_t size = cp->total > CUDA_PROV_RESERVE_MIN / 16 ? cp->total * 16
							      : CUDA_PROV_RESERVE_MIN;
	CUdeviceptr ptr = 0;
	CUresult r;
	int ret;

	ret = cuda_prov_current(cp);
	if (ret)
		return ret;
	/* A failed rung is expected (the driver caps address space by
	 * device and system), so only the last one is reported. */
	for (;;) {
		size &= ~(g - 1);
		r = cp->drv->cuMemAddressReserve(&ptr, size, g, 0, 0);
		if (r == CUDA_SUCCESS)
			break;
		if (size <= CUDA_PROV_RESERVE_FLOOR)
			return cep__set_error(CEP_EDEVMEM, "device %d (%s): cuMemAddressReserve "
					      "failed down to %zu bytes: %s", cp->ordinal, cp->name,
					      size, cuda_driver_error_name(r));
		size = size / 2 > CUDA_PROV_RESERVE_FLOOR ? size / 2 : CUDA_PROV_RESERVE_FLOOR;
	}
	*base = ptr;
	*bytes = size;
	return 0;
}

static void cuda_unreserve(void *ctx, uint64_t base, size_t bytes)
{
	struct cuda_provider *cp = ctx;

	(void)CEP_CU_CHECK(cp->drv->cuMemAddressFree(base, bytes));
}

static int cuda_create(void *ctx, alloc_handle *out)
{
	struct cuda_provider *cp = ctx;
	CUmemGenericAllocationHandle h;
	CUresult r;
	int ret;

	ret = cuda_prov_current(cp);
	if (ret)
		return ret;
	r = cp->drv->cuMemCreate(&h, cp->pub.granule, &cp->prop, 0);
	/* Running out is routine under pressure (the arena then reclaims idle
	 * granules), so it is reported to the caller without a log line. */
	if (r == CUDA_ERROR_OUT_OF_MEMORY)
		return cep__set_error(CEP_EDEVMEM, "device %d (%s): cuMemCreate of a %zu-byte "
				      "granule: %s", cp->ordinal, cp->name, cp->pub.granule,
				      cuda_driver_error_name(r));
	ret = CEP_CU_CHECK(r);
	if (ret)
		return cuda_prov_blame(cp, ret);
	*out = h;
	return 0;
}

static void cuda_release(void *ctx, alloc_handle h)
{
	struct cuda_provider *cp = ctx;

	(void)CEP_CU_CHECK(cp->drv->cuMemRelease(h));
}

static int cuda_unmap(void *ctx, uint64_t va, size_t n)
{
	struct cuda_provider *cp = ctx;
	size_t g = cp->pub.granule, i;
	int ret;

	ret = cuda_prov_current(cp);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = CEP_CU_CHECK(cp->drv->cuMemUnmap(va + i * g, g));
		if (ret)
			return cuda_prov_blame(cp, ret);
	}
	return 0;
}

static int cuda_map(void *ctx, uint64_t va, const alloc_handle *handles, size_t n)
{
	struct cuda_provider *cp = ctx;
	size_t g = cp->pub.granule, i;
	int ret;

	ret = cuda_prov_current(cp);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = CEP_CU_CHECK(cp->drv->cuMemMap(va + i * g, g, 0, handles[i], 0));
		if (ret)
			goto out;
	}
	/* One call for the whole run: access is per range, not per handle. */
	ret = CEP_CU_CHECK(cp->drv->cuMemSetAccess(va, n * g, &cp->access, 1));
	if (ret)
		goto out;
	return 0;
out:
	cuda_prov_blame(cp, ret);
	while (i > 0) {
		i--;
		(void)cp->drv->cuMemUnmap(va + i * g, g);
	}
	return ret;
}

static void cuda_free(void *ctx)
{
	struct cuda_provider *cp = ctx;

	if (cp->ctx != NULL)
		(void)CEP_CU_CHECK(cp->drv->cuDevicePrimaryCtxRelease(cp->dev));
	free(cp);
}

static const struct alloc_provider_i cuda_iface = {
	.reserve = cuda_reserve,
	.unreserve = cuda_unreserve,
	.create = cuda_create,
	.release = cuda_release,
	.map = cuda_map,
	.unmap = cuda_unmap,
	.free = cuda_free,
};

int alloc_provider_cuda_new(const struct cuda_driver *drv, int device,
			    struct alloc_provider **out)
{
	struct cuda_provider *cp = NULL;
	size_t gran = 0;
	int vmm = 0;
	int ret;

	ret = CEP_EINVAL;
	if (drv == NULL || device < 0 || device >= drv->devices) {
		cep__set_error(ret, "no CUDA device %d (the driver sees %d)", device,
			       drv != NULL ? drv->devices : 0);
		goto out;
	}
	ret = CEP_ENOMEM;
	cp = calloc(1, sizeof(*cp));
	if (cp == NULL)
		goto out;
	cp->drv = drv;
	cp->ordinal = device;
	snprintf(cp->name, sizeof(cp->name), "unnamed");
	ret = CEP_CU_CHECK(drv->cuDeviceGet(&cp->dev, device));
	if (ret)
		goto blame;
	ret = CEP_CU_CHECK(drv->cuDeviceGetName(cp->name, (int)sizeof(cp->name), cp->dev));
	if (ret)
		goto blame;
	ret = CEP_CU_CHECK(drv->cuDeviceTotalMem(&cp->total, cp->dev));
	if (ret)
		goto blame;
	ret = CEP_CU_CHECK(drv->cuDeviceGetAttribute(&vmm,
		CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cp->dev));
	if (ret)
		goto blame;
	if (!vmm) {
		ret = cep__set_error(CEP_ENOTSUP, "device %d (%s): the driver (CUDA %d.%d) reports "
				     "no virtual memory management support, which cudaep's "
				     "arena needs", device, cp->name, drv->version / 1000,
				     drv->version % 1000 / 10);
		goto out;
	}
	cp->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	cp->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	cp->prop.location.id = cp->dev;
	cp->access.location = cp->prop.location;
	cp->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	ret = CEP_CU_CHECK(drv->cuMemGetAllocationGranularity(&gran, &cp->prop,
		CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if (ret)
		goto blame;
	if (gran == 0 || (gran & (gran - 1)) != 0) {
		ret = cep__set_error(CEP_ENOTSUP, "device %d (%s): allocation granularity %zu "
				     "is not a power of two", device, cp->name, gran);
		goto out;
	}
	ret = CEP_CU_CHECK(drv->cuDevicePrimaryCtxRetain(&cp->ctx, cp->dev));
	if (ret)
		goto blame;
	ret = cuda_prov_current(cp);
	if (ret)
		goto out;
	cp->pub.iface = cuda_iface;
	cp->pub.context = cp;
	cp->pub.name = "cuda";
	cp->pub.granule = gran;
	*out = &cp->pub;
	cp = NULL;
	ret = 0;
	goto out;
blame:
	cuda_prov_blame(cp, ret);
out:
	if (cp != NULL)
		cuda_free(cp);
	return ret;
}
