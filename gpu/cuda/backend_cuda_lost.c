/*
 * backend_cuda_lost.c — the CUDA backend's lost context
 * (gpu/cuda/backend_cuda_priv.h): an error that leaves the context
 * unusable (an illegal address, ...) makes every later call fail with it.
 * Here the backend answers whether that happened (health), resets such a
 * context when it closes, and, in test builds (-DCEP_FAULT_INJECT: the
 * Makefile's FAULT_SRC compiles this file a second time), causes it.
 */
#include "gpu/cuda/backend_cuda_priv.h"

#include <stdint.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "gpu/cuda/nvrtc.h"

/* The aux stream never has work of its own (but an injected fault), so
 * querying it costs nothing and reports only what the context reports: a
 * sticky error of any stream. */
static int cuda_health(struct backend *b)
{
	struct cuda_ctx *cc = b->ctx;
	CUresult r;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret < 0)
		return ret;
	r = cc->drv->cuStreamQuery(cc->aux);
	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return CEP_CU_CHECK(r);
}

#ifdef CEP_FAULT_INJECT
/* Writes through a pointer nothing is mapped at: the kernel dies with
 * CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the whole context. */
static const char fault_source[] =
	"extern \"C\" __global__ void cep_fault_inject(unsigned long long *p)\n"
	"{\n"
	"	*p = 0xdeadull;\n"
	"}\n";

static int cuda_fault_inject(struct backend *b)
{
	const struct nvrtc_source src = { .name = "cep_fault_inject", .text = fault_source };
	struct cuda_ctx *cc = b->ctx;
	/* Low addresses are never mapped on the device. */
	unsigned long long *bad = (unsigned long long *)(uintptr_t)0x10;
	void *args[] = { &bad };
	CUfunction fn;
	int ret;

	ret = backend_cuda__current(cc);
	if (ret == 0)
		ret = nvrtc_cache_function(cc->kernels, &src, "cep_fault_inject", &fn);
	if (ret < 0)
		return ret;
	log_warning("cuda backend: injecting a fault (a kernel that writes to address 0x10) "
		    "on device %d", cc->ordinal);
	ret = CEP_CU_CHECK(cc->drv->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, cc->aux, args, NULL));
	/* Waited for, so that the context is known lost when this returns,
	 * as on the host backend: tests can tell which runs it hits. */
	if (ret == 0)
		ret = CEP_CU_CHECK(cc->drv->cuStreamSynchronize(cc->aux));
	if (ret == 0)
		ret = cep__set_error(CEP_EDEVICE, "cuda backend: the injected fault did not "
				     "fault");
	return ret;
}
#endif

/* The reset does not release our retain: cuda_ctx_close() does, after. */
void backend_cuda__ctx_reset(struct cuda_ctx *cc)
{
	log_warning("cuda backend: resetting the lost primary context of device %d",
		    cc->ordinal);
	(void)CEP_CU_CHECK(cc->drv->cuDevicePrimaryCtxReset(cc->dev));
	/* The dead context must not stay current on this thread: the next
	 * retain would report its error. */
	(void)CEP_CU_CHECK(cc->drv->cuCtxSetCurrent(NULL));
}

void backend_cuda__iface_lost(struct backend_iface *iface)
{
	iface->health = cuda_health;
#ifdef CEP_FAULT_INJECT
	iface->fault_inject = cuda_fault_inject;
#endif
}
