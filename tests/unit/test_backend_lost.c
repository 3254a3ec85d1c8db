/*
 * test_backend_lost.c — a lost context behind the backend seam (gpu/
 * backend.h), on the host backend of a fault-injection build (this binary
 * links the objects compiled with CEP_FAULT_INJECT, as
 * build/tests/cudaepd-fault does).
 *
 * Checked: before the fault the backend is healthy; fault injection loses
 * the context at once (backend_lost(), backend_health() and the message);
 * afterwards every launch, copy, sync, event, fence and host function
 * fails with CEP_ECONTEXT; work queued before the fault and not yet done
 * is dropped, its host function never runs (a kernel held running across
 * the fault makes that deterministic); and a lost backend is still freed
 * whole, streams, events, memory and registrations included; a new
 * backend made after a lost one works.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 (elsewhere it skips, visibly):
 * the CUDA backend's injected fault (a kernel writing to address 0x10) is
 * CUDA_ERROR_ILLEGAL_ADDRESS and loses the context; the lost backend is
 * freed (its primary context reset), and a new CUDA backend cannot be
 * made in this process: the driver answers with the same error (measured,
 * driver 580), which is why the daemon's recovery falls back to the host
 * backend on a GPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "kernels/ops.h"

/* A kernel that waits until it is let go, so that the work behind it is
 * still queued when the fault comes. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_entered, gate_open;

static int held_kernel(struct op_call *call)
{
	pthread_mutex_lock(&gate_lock);
	gate_entered = true;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return 0;
}

static _Atomic int host_fn_calls;

static void count_host_fn(void *arg)
{
	atomic_fetch_add(&host_fn_calls, 1);
}

static int nop_kernel(struct op_call *call)
{
	return 0;
}

Test(backend_lost, a_poisoned_host_backend_fails_every_call_and_frees_whole)
{
	struct backend *be;
	struct backend_stream *s, *s2 = NULL;
	struct backend_event *e;
	struct op_call held, later;
	uint64_t *page;
	char src[64] = "x", dst[64];
	void *dev;
	int ret;

	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &be), 0);
	cr_assert_eq(backend_stream_new(be, CEP_PRIORITY_NORMAL, &s), 0);
	cr_assert_eq(backend_event_new(be, &e), 0);
	cr_assert_eq(backend_mem_alloc(be, 4096, &dev), 0);
	page = aligned_alloc(4096, 4096);
	cr_assert_not_null(page);
	memset(page, 0, 4096);
	cr_assert_eq(backend_host_register(be, page, 4096), 0);
	cr_assert_not(backend_lost(be));
	cr_assert_eq(backend_health(be), 0);
	cr_assert_str_eq(backend_lost_why(be), "");

	/* Work queued before the fault: a held kernel, then a fence and a
	 * host function behind it. */
	memset(&held, 0, sizeof(held));
	memset(&later, 0, sizeof(later));
	cr_assert_eq(backend_launch(be, s, held_kernel, &held), 0);
	cr_assert_eq(backend_stream_write_value64(be, s, page, 7), 0);
	cr_assert_eq(backend_stream_host_fn(be, s, count_host_fn, NULL), 0);
	pthread_mutex_lock(&gate_lock);
	while (!gate_entered)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);

	ret = backend_fault_inject(be);
	cr_assert_eq(ret, CEP_ECONTEXT, "fault injection returned %d", ret);
	cr_assert(backend_lost(be));
	cr_assert_not_null(strstr(backend_lost_why(be), "poisoned"), "%s",
			   backend_lost_why(be));
	cr_assert_eq(backend_health(be), CEP_ECONTEXT);

	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);

	/* Every later call fails as on a CUDA context after a sticky error. */
	cr_assert_eq(backend_stream_sync(be, s), CEP_ECONTEXT);
	cr_assert_eq(backend_launch(be, s, nop_kernel, &later), CEP_ECONTEXT);
	cr_assert_eq(backend_copy_h2d(be, s, dev, src, sizeof(src)), CEP_ECONTEXT);
	cr_assert_eq(backend_copy_d2h(be, s, dst, dev, sizeof(dst)), CEP_ECONTEXT);
	cr_assert_eq(backend_event_record(be, e, s), CEP_ECONTEXT);
	cr_assert_eq(backend_event_query(be, e), CEP_ECONTEXT);
	cr_assert_eq(backend_stream_write_value64(be, s, page + 1, 9), CEP_ECONTEXT);
	cr_assert_eq(backend_stream_host_fn(be, s, count_host_fn, NULL), CEP_ECONTEXT);
	cr_assert_eq(backend_stream_new(be, CEP_PRIORITY_NORMAL, &s2), CEP_ECONTEXT);
	cr_assert_null(s2);
	cr_assert_not_null(strstr(cep_last_error(), "lost"), "%s", cep_last_error());

	/* Freeing still works and waits for nothing that will not come; the
	 * work queued behind the held kernel was dropped. */
	backend_stream_free(be, s);
	cr_assert_eq(atomic_load(&host_fn_calls), 0, "a host function ran after the fault");
	cr_assert_eq(page[0], 0, "a fence queued before the fault was written after it");
	backend_event_free(be, e);
	backend_mem_free(be, dev, 4096);
	backend_host_unregister(be, page);
	backend_free(be);
	free(page);
}

/* Another backend is untouched by one's loss: the daemon replaces a lost
 * backend with a new one of the same kind. */
Test(backend_lost, a_new_backend_after_a_lost_one_works)
{
	struct backend *lost, *fresh;
	struct backend_stream *s;
	struct op_call call;

	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &lost), 0);
	cr_assert_eq(backend_fault_inject(lost), CEP_ECONTEXT);
	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &fresh), 0);
	cr_assert_not(backend_lost(fresh));
	cr_assert_eq(backend_stream_new(fresh, CEP_PRIORITY_NORMAL, &s), 0);
	memset(&call, 0, sizeof(call));
	cr_assert_eq(backend_launch(fresh, s, nop_kernel, &call), 0);
	cr_assert_eq(backend_stream_host_fn(fresh, s, count_host_fn, NULL), 0);
	cr_assert_eq(backend_stream_sync(fresh, s), 0);
	cr_assert_eq(backend_health(fresh), 0);
	backend_stream_free(fresh, s);
	backend_free(fresh);
	backend_free(lost);
}

/* ------------------------------------------------------- on the GPU machine */

/* Copies n bytes to the device and back on s; whether they came back. */
static bool round_trip(struct backend *be, struct backend_stream *s, void *dev, size_t n)
{
	unsigned char *a = malloc(n), *b = malloc(n);
	bool same;

	cr_assert(a != NULL && b != NULL);
	for (size_t i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 7 + 1);
	memset(b, 0, n);
	cr_assert_eq(backend_copy_h2d(be, s, dev, a, n), 0, "%s", cep_last_error());
	cr_assert_eq(backend_copy_d2h(be, s, b, dev, n), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_sync(be, s), 0, "%s", cep_last_error());
	same = memcmp(a, b, n) == 0;
	free(a);
	free(b);
	return same;
}

Test(backend_lost, a_cuda_context_lost_to_an_illegal_address_cannot_be_replaced_in_process)
{
	const char *gpu = getenv("CUDAEP_TEST_GPU");
	struct backend_cuda_config cfg;
	struct backend *be, *fresh;
	struct backend_stream *s;
	char cache[128];
	uint64_t *page;
	void *dev;
	int ret;

	if (gpu == NULL || strcmp(gpu, "1") != 0) {
		fprintf(stderr, "[SKIP] GPU test skipped: set CUDAEP_TEST_GPU=1 on a GPU machine "
			"(make test-gpu)\n");
		cr_skip_test("GPU test skipped: set CUDAEP_TEST_GPU=1 on a GPU machine");
	}
	snprintf(cache, sizeof(cache), "/tmp/cudaep-test-kernels-%u", (unsigned)geteuid());
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = cache;
	cr_assert_eq(backend_cuda_new_config(&cfg, &be), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_new(be, CEP_PRIORITY_NORMAL, &s), 0);
	cr_assert_eq(backend_mem_alloc(be, 1 << 20, &dev), 0);
	page = aligned_alloc(4096, 4096);
	cr_assert_not_null(page);
	cr_assert_eq(backend_host_register(be, page, 4096), 0, "%s", cep_last_error());
	cr_assert(round_trip(be, s, dev, 1 << 20));
	cr_assert_eq(backend_health(be), 0, "%s", cep_last_error());

	ret = backend_fault_inject(be);
	cr_assert_eq(ret, CEP_ECONTEXT, "fault injection returned %d: %s", ret, cep_last_error());
	cr_assert(backend_lost(be));
	cr_assert_not_null(strstr(backend_lost_why(be), "CUDA_ERROR_ILLEGAL_ADDRESS"), "%s",
			   backend_lost_why(be));
	cr_assert_eq(backend_stream_sync(be, s), CEP_ECONTEXT, "%s", cep_last_error());
	cr_assert_eq(backend_health(be), CEP_ECONTEXT);
	backend_stream_free(be, s);
	backend_mem_free(be, dev, 1 << 20);
	backend_host_unregister(be, page);
	backend_free(be);

	/*
	 * What the driver allows after a sticky error, as measured on the H200
	 * (driver 580, CUDA 13): neither retaining the reset primary context nor
	 * creating a context of one's own works again in this process; both
	 * report the illegal address. So the daemon cannot get a new CUDA
	 * context without a new process (daemon/recover.c serves on the host
	 * backend instead and says so). Should a driver ever allow it, this
	 * fails and the recovery can stay on the GPU.
	 */
	ret = backend_cuda_new_config(&cfg, &fresh);
	cr_assert_eq(ret, CEP_ECONTEXT, "a new CUDA backend after the fault returned %d (%s)",
		     ret, ret == 0 ? "it works: recovery may stay on the GPU" : cep_last_error());
	free(page);
}
