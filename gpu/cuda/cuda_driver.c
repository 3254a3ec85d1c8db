/*
 * cuda_driver.c — loading the CUDA driver API with dlopen, and the error
 * space every driver call's check reads (gpu/cuda/cuda_driver.h).
 */
#include "gpu/cuda/cuda_driver.h"
#include "gpu/cuda/cuda_dl.h"
#include "client/cudaep.h"
#include "common/error.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_DRIVER__STR_(x) #x
#define CUDA_DRIVER__STR(x) CUDA_DRIVER__STR_(x)

/* One entry point: the name cuGetProcAddress knows it by, the symbol the
 * library exports for the ABI we use (cuda.h's mapping applied, which the
 * extra expansion of CUDA_DRIVER__STR does), the ABI's version and where
 * the pointer goes in the table. */
struct cuda_driver_sym {
	const char *name;
	const char *symbol;
	int version;
	size_t offset;
};

static const struct cuda_driver_sym cuda_driver_syms[] = {
#define CUDA_DRIVER__SYM(fn, ver) \
	{ #fn, CUDA_DRIVER__STR(fn), ver, offsetof(struct cuda_driver, fn) },
	CUDA_DRIVER_FUNCS(CUDA_DRIVER__SYM)
#undef CUDA_DRIVER__SYM
};

/* The loaded driver's cuGetErrorName, for CEP_CU_CHECK(), which has no
 * table at hand. A process loads one libcuda and never unloads it, so this
 * is as global as the library itself. */
static PFN_cuGetErrorName_v6000 _Atomic cuda_driver_error_name_fn;
static PFN_cuGetErrorString_v6000 _Atomic cuda_driver_error_string_fn;

/* Names of the errors most worth a clear name even before a driver is
 * loaded (or when it is missing). */
static const struct {
	CUresult r;
	const char *name;
} cuda_driver_known[] = {
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED" },
	{ CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY" },
	{ CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS" },
	{ CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED" },
	{ CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION" },
	{ CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS" },
	{ CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR" },
	{ CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN" },
};

const char *cuda_driver_error_name(CUresult r)
{
	static _Thread_local char buf[40];
	PFN_cuGetErrorName_v6000 fn = cuda_driver_error_name_fn;
	const char *name = NULL;
	size_t i;

	if (fn != NULL && fn(r, &name) == CUDA_SUCCESS && name != NULL)
		return name;
	for (i = 0; i < sizeof(cuda_driver_known) / sizeof(cuda_driver_known[0]); i++)
		if (cuda_driver_known[i].r == r)
			return cuda_driver_known[i].name;
	snprintf(buf, sizeof(buf), "CUDA_ERROR_%d", (int)r);
	return buf;
}

static const char *cuda_driver_error_string(CUresult r)
{
	PFN_cuGetErrorString_v6000 fn = cuda_driver_error_string_fn;
	const char *s = NULL;

	if (fn != NULL && fn(r, &s) == CUDA_SUCCESS && s != NULL)
		return s;
	return "no description without a driver";
}

bool cuda_driver_error_sticky(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
		return true;
	default:
		return false;
	}
}

static int cuda_driver_code(int status)
{
	CUresult r = (CUresult)status;

	if (r == CUDA_ERROR_OUT_OF_MEMORY)
		return CEP_EDEVMEM;
	return cuda_driver_error_sticky(r) ? CEP_ECONTEXT : CEP_EDEVICE;
}

static void cuda_driver_describe(const void *lib, int status, char *buf, size_t len)
{
	CUresult r = (CUresult)status;

	snprintf(buf, len, "%s (%s)", cuda_driver_error_name(r), cuda_driver_error_string(r));
}

const struct cuda_check_lib cuda_driver__errors = {
	.code = cuda_driver_code,
	.describe = cuda_driver_describe,
};

/* Finds one entry point: through cuGetProcAddress when the driver has it
 * (asking for the legacy default stream, as cuda.h's plain names mean),
 * else by its versioned symbol. */
static void *cuda_driver_resolve(void *lib, PFN_cuGetProcAddress_v12000 gpa2,
				 PFN_cuGetProcAddress_v11030 gpa1,
				 const struct cuda_driver_sym *s)
{
	CUdriverProcAddressQueryResult found;
	void *fn = NULL;

	if (gpa2 != NULL) {
		if (gpa2(s->name, &fn, s->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
			 &found) != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS)
			fn = NULL;
	} else if (gpa1 != NULL) {
		if (gpa1(s->name, &fn, s->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS)
			fn = NULL;
	}
	if (fn == NULL)
		fn = dlsym(lib, s->symbol);
	return fn;
}

int cuda_driver_new(const char *lib, struct cuda_driver **out)
{
	PFN_cuGetProcAddress_v12000 gpa2;
	PFN_cuGetProcAddress_v11030 gpa1 = NULL;
	struct cuda_driver *drv = NULL;
	const char *path = lib != NULL ? lib : "libcuda.so.1";
	void *h, *fn;
	size_t i;
	int ret, loaded = 0;

	/* Found the way the dynamic linker finds it, never in a toolkit's
	 * folder: the driver belongs to the kernel module it talks to. */
	ret = cuda_dl_open(path, NULL, "CUDA driver", &h, NULL, 0);
	if (ret < 0)
		return ret;
	ret = CEP_ENOMEM;
	drv = calloc(1, sizeof(*drv));
	if (drv == NULL)
		goto out;
	drv->lib = h;
	/* dlsym returns void *; copying it into a function pointer is what
	 * POSIX guarantees to work, and memcpy says so without a cast. */
	fn = dlsym(h, "cuGetProcAddress_v2");
	memcpy(&gpa2, &fn, sizeof(fn));
	if (gpa2 == NULL) {
		fn = dlsym(h, "cuGetProcAddress");
		memcpy(&gpa1, &fn, sizeof(fn));
	}
	ret = CEP_ENOTSUP;
	for (i = 0; i < sizeof(cuda_driver_syms) / sizeof(cuda_driver_syms[0]); i++) {
		const struct cuda_driver_sym *s = &cuda_driver_syms[i];

		fn = cuda_driver_resolve(h, gpa2, gpa1, s);
		if (fn == NULL) {
			cep__set_error(ret, "no CUDA driver: %s has no %s (%s of CUDA %d.%d); "
				       "the driver is too old", path, s->name, s->symbol,
				       s->version / 1000, s->version % 1000 / 10);
			goto out;
		}
		memcpy((char *)drv + s->offset, &fn, sizeof(fn));
	}
	cuda_driver_error_name_fn = drv->cuGetErrorName;
	cuda_driver_error_string_fn = drv->cuGetErrorString;
	loaded = 1;
	ret = CEP_CU_CHECK(drv->cuInit(0));
	if (ret)
		goto out;
	ret = CEP_CU_CHECK(drv->cuDriverGetVersion(&drv->version));
	if (ret)
		goto out;
	ret = CEP_CU_CHECK(drv->cuDeviceGetCount(&drv->devices));
	if (ret)
		goto out;
	*out = drv;
	drv = NULL;
	ret = 0;
out:
	/* A library that is not a usable driver is closed again; one whose
	 * error functions were published stays, as a loaded driver does. */
	if (ret && !loaded)
		dlclose(h);
	free(drv);
	return ret;
}

void cuda_driver_free(struct cuda_driver *drv)
{
	free(drv);
}
