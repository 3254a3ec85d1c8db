/*
 * cuda_driver.h — the CUDA driver API, loaded at run time.
 *
 * cudaepd is one binary for machines with and without a GPU, so it never
 * links libcuda: cuda_driver_new() dlopens libcuda.so.1 and fills a table
 * with the entry points the project uses, resolved through the driver's
 * cuGetProcAddress at the ABI version this file names for each (so a newer
 * driver cannot hand back a function with a changed signature), or with
 * dlsym of the versioned symbol (cuMemcpyHtoDAsync_v2, ...) on drivers
 * before CUDA 11.3. Types and constants come from the toolkit's cuda.h;
 * nothing else of the toolkit is needed at build time.
 *
 * Calls go through the table, wrapped in CEP_CU_CHECK():
 *
 *	ret = CEP_CU_CHECK(drv->cuMemCreate(&h, bytes, &prop, 0));
 *	if (ret)
 *		goto out;
 *
 * Threads: the table is read-only once made; use it from any thread.
 */
#ifndef CEP_GPU_CUDA_DRIVER_H
#define CEP_GPU_CUDA_DRIVER_H

#include <stdbool.h>

#include <cudaTypedefs.h>

#include "gpu/cuda/cuda_check.h"

/*
 * The entry points: X(name, version). version is the CUDA release whose ABI
 * the table uses (1000 * major + 10 * minor), and selects the PFN_ type of
 * cudaTypedefs.h. Where cuda.h maps a name to a versioned symbol
 * (cuDeviceTotalMem -> cuDeviceTotalMem_v2), the version given here is the
 * one of that symbol, and the table's member carries the mapped name too,
 * so `drv->cuDeviceTotalMem(...)` reads as a plain driver call.
 */
#define CUDA_DRIVER_FUNCS(X)                          \
	X(cuGetErrorName, 6000)                       \
	X(cuGetErrorString, 6000)                     \
	X(cuInit, 2000)                               \
	X(cuDriverGetVersion, 2020)                   \
	X(cuDeviceGet, 2000)                          \
	X(cuDeviceGetCount, 2000)                     \
	X(cuDeviceGetName, 2000)                      \
	X(cuDeviceTotalMem, 3020)                     \
	X(cuDeviceGetAttribute, 2000)                 \
	X(cuDevicePrimaryCtxRetain, 7000)             \
	X(cuDevicePrimaryCtxRelease, 11000)           \
	X(cuDevicePrimaryCtxReset, 11000)             \
	X(cuCtxSetCurrent, 4000)                      \
	X(cuMemGetInfo, 3020)                         \
	X(cuMemGetAllocationGranularity, 10020)       \
	X(cuMemAddressReserve, 10020)                 \
	X(cuMemAddressFree, 10020)                    \
	X(cuMemCreate, 10020)                         \
	X(cuMemRelease, 10020)                        \
	X(cuMemMap, 10020)                            \
	X(cuMemUnmap, 10020)                          \
	X(cuMemSetAccess, 10020)                      \
	X(cuStreamCreateWithPriority, 5050)           \
	X(cuStreamDestroy, 4000)                      \
	X(cuStreamSynchronize, 2000)                  \
	X(cuStreamQuery, 2000)                        \
	X(cuEventCreate, 2000)                        \
	X(cuEventRecord, 2000)                        \
	X(cuEventElapsedTime, 2000)                   \
	X(cuEventQuery, 2000)                         \
	X(cuEventSynchronize, 2000)                   \
	X(cuEventDestroy, 4000)                       \
	X(cuMemHostRegister, 6050)                    \
	X(cuMemHostUnregister, 4000)                  \
	X(cuMemHostGetDevicePointer, 3020)            \
	X(cuLaunchHostFunc, 10000)                    \
	X(cuMemcpyHtoDAsync, 3020)                    \
	X(cuMemcpyDtoHAsync, 3020)                    \
	X(cuStreamWriteValue64, 11070)                \
	X(cuCtxGetStreamPriorityRange, 5050)          \
	X(cuStreamWaitEvent, 3020)                    \
	X(cuMemcpyDtoDAsync, 3020)                    \
	X(cuMemcpy2DAsync, 3020)                      \
	X(cuMemsetD32Async, 3020)                     \
	X(cuMemAllocHost, 3020)                       \
	X(cuMemFreeHost, 2000)                        \
	X(cuModuleLoadData, 2000)                     \
	X(cuModuleGetFunction, 2000)                  \
	X(cuModuleUnload, 2000)                       \
	X(cuLaunchKernel, 4000)                       \
	X(cuStreamBeginCapture, 10010)                \
	X(cuStreamEndCapture, 10000)                  \
	X(cuGraphInstantiateWithFlags, 11040)         \
	X(cuGraphLaunch, 10000)                       \
	X(cuGraphExecDestroy, 10000)                  \
	X(cuGraphDestroy, 10000)

struct cuda_driver {
	void *lib;       /* the dlopen handle of libcuda */
	int version;     /* the driver's CUDA version, e.g. 12040 */
	int devices;     /* devices the driver sees */
#define CUDA_DRIVER__MEMBER(name, ver) PFN_##name##_v##ver name;
	CUDA_DRIVER_FUNCS(CUDA_DRIVER__MEMBER)
#undef CUDA_DRIVER__MEMBER
};

/*
 * Loads the driver from lib (NULL: "libcuda.so.1", found the way the
 * dynamic linker finds libraries), resolves every entry point and calls
 * cuInit(0). On success *out is the caller's, freed with
 * cuda_driver_free(). Never crashes a machine without a GPU: fails with
 * CEP_ENOTSUP and a message that starts "no CUDA driver" when the library
 * cannot be loaded or lacks an entry point (a driver too old), and with
 * CEP_EDEVICE and the driver's error when cuInit fails (no device, a
 * mismatched kernel module). CEP_ENOMEM otherwise.
 */
int cuda_driver_new(const char *lib, struct cuda_driver **out);

/* Frees the table. The library stays loaded for the life of the process:
 * the driver starts threads and registers exit handlers that must not
 * outlive their code. Accepts NULL. */
void cuda_driver_free(struct cuda_driver *drv);

/* The driver's name for a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), from the
 * loaded driver when there is one, from a short built-in list otherwise,
 * else "CUDA_ERROR_<number>" (in a thread-local buffer). Never NULL. */
const char *cuda_driver_error_name(CUresult r);

/*
 * Checks the CUresult of expr (gpu/cuda/cuda_check.h): evaluates to 0 for
 * CUDA_SUCCESS; otherwise records the expression, function, file, line and
 * the driver's error name and sentence for cep_last_error() (and logs
 * them at debug level), and evaluates to CEP_EDEVMEM for
 * CUDA_ERROR_OUT_OF_MEMORY, CEP_ECONTEXT for an error that leaves the
 * context unusable (cuda_driver_error_sticky()) and CEP_EDEVICE for
 * anything else. It never exits: the error goes back to the one request
 * (and a lost context to the daemon's recovery, gpu/backend.h).
 */
#define CEP_CU_CHECK(expr) \
	CEP_GPU_CHECK_GEN(&cuda_driver__errors, NULL, (expr), CUDA_SUCCESS, #expr)

/* The driver's error space, for CEP_CU_CHECK(). */
extern const struct cuda_check_lib cuda_driver__errors;

/* Whether r is one of the errors after which the context is unusable and
 * every later call fails with it (a "sticky" error): an illegal address,
 * a failed launch, an illegal instruction, a misaligned address, a
 * hardware stack error, an invalid PC or address space, an uncorrectable
 * ECC error. */
bool cuda_driver_error_sticky(CUresult r);

#endif
