/*
 * test_cuda_driver.c — the dlopen'd driver table, the CEP_CU_CHECK macro,
 * and the CUDA provider under the arena.
 *
 * Everywhere: a missing or wrong library fails cleanly with "no CUDA
 * driver", and the check macro maps errors and names them. On a GPU
 * machine with CUDAEP_TEST_GPU=1 (make test-gpu): a granule reserved,
 * created, mapped and read back through the provider; the arena on the
 * device; churn that creates nothing after warm-up; deferred release
 * behind a real CUDA event; shared weights uploaded once for two clients;
 * out of device memory as an error. Elsewhere those skip, visibly.
 */
#include "gpu/cuda/cuda_driver.h"
#include "alloc/arena.h"
#include "alloc/account.h"
#include "alloc/deferred.h"
#include "alloc/provider.h"
#include "alloc/weights.h"
#include "client/cudaep.h"
#include "common/log.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ everywhere */

Test(cuda_driver, a_missing_library_is_no_driver)
{
	struct cuda_driver *drv = NULL;

	cr_assert_eq(cuda_driver_new("libcuda-that-is-not-there.so.1", &drv), CEP_ENOTSUP);
	cr_assert_null(drv);
	cr_assert(strncmp(cep_last_error(), "no CUDA driver: ", 16) == 0, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "libcuda-that-is-not-there.so.1") != NULL);
}

Test(cuda_driver, a_library_without_the_entry_points_is_no_driver)
{
	struct cuda_driver *drv = NULL;

	cr_assert_eq(cuda_driver_new("libm.so.6", &drv), CEP_ENOTSUP);
	cr_assert_null(drv);
	cr_assert(strstr(cep_last_error(), "no CUDA driver: libm.so.6 has no cuGetErrorName") != NULL,
		  "%s", cep_last_error());
}

Test(cuda_driver, the_default_load_fails_cleanly_or_works)
{
	struct cuda_driver *drv = NULL;
	int ret = cuda_driver_new(NULL, &drv);

	if (ret == 0) {
		cr_assert_geq(drv->devices, 0);
		cr_assert_gt(drv->version, 0);
		cr_log_info("driver CUDA %d.%d, %d devices", drv->version / 1000,
			    drv->version % 1000 / 10, drv->devices);
		cuda_driver_free(drv);
		return;
	}
	cr_assert(ret == CEP_ENOTSUP || ret == CEP_EDEVICE, "%s", cep_err_name(ret));
	cr_assert_null(drv);
	cr_assert_neq(cep_last_error()[0], '\0');
	cr_log_info("%s", cep_last_error());
}

static CUresult fake_call(CUresult r)
{
	return r;
}

Test(cuda_driver, check_maps_and_names_errors, .init = cr_redirect_stderr)
{
	char log[1024] = "";
	FILE *f;

	/* The detail goes to the log at debug level (the error itself goes
	 * back to the caller). */
	log_level_set(LOG_DEBUG);
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_SUCCESS)), 0);
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_ERROR_OUT_OF_MEMORY)), CEP_EDEVMEM);
	cr_assert(strstr(cep_last_error(), "fake_call(CUDA_ERROR_OUT_OF_MEMORY) failed in ") != NULL,
		  "%s", cep_last_error());
	/* Criterion renames the test's function; the name is in there. */
	cr_assert(strstr(cep_last_error(), "check_maps_and_names_errors") != NULL);
	cr_assert(strstr(cep_last_error(), "test_cuda_driver.c:") != NULL);
	cr_assert(strstr(cep_last_error(), ": CUDA_ERROR_OUT_OF_MEMORY") != NULL);
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_ERROR_INVALID_VALUE)), CEP_EDEVICE);
	cr_assert(strstr(cep_last_error(), "CUDA_ERROR_INVALID_VALUE") != NULL);
	/* Errors that leave the context unusable are the lost context's. */
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_ERROR_ILLEGAL_ADDRESS)), CEP_ECONTEXT);
	cr_assert(strstr(cep_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
	fflush(stderr);
	f = cr_get_redirected_stderr();
	cr_assert_not_null(f);
	cr_assert_gt(fread(log, 1, sizeof(log) - 1, f), 0);
	cr_assert(strncmp(log, "<7>fake_call(CUDA_ERROR_OUT_OF_MEMORY) failed", 45) == 0,
		  "%s", log);
	cr_assert(strstr(log, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", log);
}

Test(cuda_driver, a_failed_check_is_not_logged_above_debug, .init = cr_redirect_stderr)
{
	char log[256] = "";
	FILE *f;

	log_level_set(LOG_INFO);
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_ERROR_ILLEGAL_ADDRESS)), CEP_ECONTEXT);
	cr_assert(strstr(cep_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
	fflush(stderr);
	f = cr_get_redirected_stderr();
	cr_assert_not_null(f);
	cr_assert_eq(fread(log, 1, sizeof(log) - 1, f), 0, "%s", log);
}

Test(cuda_driver, sticky_errors_are_a_lost_context, .init = cr_redirect_stderr)
{
	static const CUresult sticky[] = {
		CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
		CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_MISALIGNED_ADDRESS,
		CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_INVALID_PC,
		CUDA_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_ECC_UNCORRECTABLE,
	};
	static const CUresult other[] = {
		CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_READY,
		CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
	};
	size_t i;

	for (i = 0; i < sizeof(sticky) / sizeof(sticky[0]); i++)
		cr_assert(cuda_driver_error_sticky(sticky[i]), "%s",
			  cuda_driver_error_name(sticky[i]));
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		cr_assert_not(cuda_driver_error_sticky(other[i]), "%s",
			      cuda_driver_error_name(other[i]));
	cr_assert_eq(CEP_CU_CHECK(fake_call(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)), CEP_EDEVICE);
}

Test(cuda_driver, error_names_without_a_driver)
{
	cr_assert_str_eq(cuda_driver_error_name(CUDA_ERROR_NOT_SUPPORTED), "CUDA_ERROR_NOT_SUPPORTED");
	cr_assert_str_eq(cuda_driver_error_name((CUresult)12345), "CUDA_ERROR_12345");
}

Test(cuda_driver, the_provider_refuses_without_a_driver)
{
	struct alloc_provider *p = NULL;

	cr_assert_eq(alloc_provider_cuda_new(NULL, 0, &p), CEP_EINVAL);
	cr_assert_null(p);
}

/* -------------------------------------------------- on the GPU machine */

static struct cuda_driver *drv;

/* Criterion shows skips only when verbose, so the reason goes to stderr
 * too (not through cr_log_warn(), whose warnings make Criterion exit 1). */
#define GPU_SKIP(...)                                  \
	do {                                           \
		fprintf(stderr, "[SKIP] " __VA_ARGS__); \
		fputc('\n', stderr);                   \
		cr_skip_test(__VA_ARGS__);             \
	} while (0)

/* Why the GPU checks cannot run here, or NULL. */
static char gpu_why[256];

/* Opens the driver where GPU checks are asked for. A skip must happen in
 * the test's body (Criterion counts a skip from a suite's .init as a
 * failed run), so this only records why; GPU_REQUIRE() skips. */
static void gpu_setup(void)
{
	const char *on = getenv("CUDAEP_TEST_GPU");

	gpu_why[0] = '\0';
	if (on == NULL || strcmp(on, "1") != 0)
		snprintf(gpu_why, sizeof(gpu_why), "GPU test skipped: set CUDAEP_TEST_GPU=1 "
			 "on a GPU machine (make test-gpu)");
	else if (cuda_driver_new(NULL, &drv) != 0)
		snprintf(gpu_why, sizeof(gpu_why), "GPU test skipped: %s", cep_last_error());
	else if (drv->devices == 0)
		snprintf(gpu_why, sizeof(gpu_why), "GPU test skipped: the driver sees no device");
}

/* The driver, or a visible skip: GPU checks run only where asked for. */
#define GPU_REQUIRE()                                 \
	do {                                          \
		if (gpu_why[0] != '\0')               \
			GPU_SKIP("%s", gpu_why);      \
	} while (0)

static void gpu_teardown(void)
{
	cuda_driver_free(drv);
	drv = NULL;
}

TestSuite(gpu, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

#define CU_OK(expr)                                                     \
	do {                                                            \
		int cu_ok_ret = CEP_CU_CHECK(expr);                     \
		cr_assert_eq(cu_ok_ret, 0, "%s", cep_last_error());     \
	} while (0)

static void put(uint64_t dst, const void *src, size_t n)
{
	CU_OK(drv->cuMemcpyHtoDAsync(dst, src, n, NULL));
	CU_OK(drv->cuStreamSynchronize(NULL));
}

static void get(void *dst, uint64_t src, size_t n)
{
	CU_OK(drv->cuMemcpyDtoHAsync(dst, src, n, NULL));
	CU_OK(drv->cuStreamSynchronize(NULL));
}

static void pattern(uint32_t *p, size_t words, uint32_t seed)
{
	size_t i;

	for (i = 0; i < words; i++)
		p[i] = seed ^ (uint32_t)(i * 2654435761u);
}

Test(gpu, the_provider_maps_a_granule_and_keeps_its_contents)
{
	GPU_REQUIRE();
	struct alloc_provider *p;
	alloc_handle h;
	uint64_t base;
	size_t bytes, g;
	uint32_t *in, *out;

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	g = p->granule;
	cr_log_info("device 0: granule %zu bytes", g);
	cr_assert_eq(g & (g - 1), 0);
	cr_assert_eq(alloc_provider_reserve(p, &base, &bytes), 0, "%s", cep_last_error());
	cr_log_info("reserved %zu bytes (%zu GiB) at %#llx", bytes, bytes >> 30,
		    (unsigned long long)base);
	cr_assert_geq(bytes, (size_t)64 << 30);
	cr_assert_eq(base % g, 0);
	cr_assert_eq(alloc_provider_create(p, &h), 0, "%s", cep_last_error());
	cr_assert_eq(alloc_provider_map(p, base, &h, 1), 0, "%s", cep_last_error());
	in = malloc(g);
	out = malloc(g);
	pattern(in, g / 4, 0xc0ffee);
	put(base, in, g);
	cr_assert_eq(alloc_provider_unmap(p, base, 1), 0);
	/* The same physical granule at another address holds the same bytes. */
	cr_assert_eq(alloc_provider_map(p, base + 5 * g, &h, 1), 0, "%s", cep_last_error());
	get(out, base + 5 * g, g);
	cr_assert_eq(memcmp(in, out, g), 0);
	cr_assert_eq(alloc_provider_unmap(p, base + 5 * g, 1), 0);
	alloc_provider_release(p, h);
	alloc_provider_unreserve(p, base, bytes);
	cr_assert_eq(p->counters.creates, 1);
	cr_assert_eq(p->counters.maps, 2);
	cr_assert_eq(p->counters.unmaps, 2);
	cr_assert_eq(p->counters.releases, 1);
	free(in);
	free(out);
	alloc_provider_free(p);
}

static size_t device_free(void)
{
	size_t fr = 0, total = 0;

	CU_OK(drv->cuMemGetInfo(&fr, &total));
	return fr;
}

Test(gpu, the_arena_on_the_device)
{
	GPU_REQUIRE();
	static const size_t sizes[] = { 1, 1000, 5u << 20, 64u << 20, 3u << 20 };
	struct arena_block *b[5];
	struct alloc_provider *p;
	struct account *acc;
	struct arena *a;
	struct arena_stats st;
	size_t free0, free1, free2, i;
	uint32_t *in = malloc(64u << 20), *out = malloc(64u << 20);

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	cr_assert_eq(account_new(&acc), 0);
	free0 = device_free();
	cr_assert_eq(arena_new(p, acc, NULL, &a), 0, "%s", cep_last_error());
	for (i = 0; i < 5; i++) {
		size_t n = (sizes[i] + 3) / 4 * 4;

		cr_assert_eq(arena_block_alloc(a, sizes[i], 0, (struct alloc_owner){ 1, 1 },
					       ALLOC_ROLE_ACTIVATIONS, &b[i]), 0, "%s",
			     cep_last_error());
		pattern(in, n / 4, (uint32_t)i);
		put(arena_block_addr(b[i]), in, n);
	}
	for (i = 0; i < 5; i++) {
		size_t n = (sizes[i] + 3) / 4 * 4;

		pattern(in, n / 4, (uint32_t)i);
		get(out, arena_block_addr(b[i]), n);
		cr_assert_eq(memcmp(in, out, n), 0, "block %zu", i);
	}
	free1 = device_free();
	arena_stats_get(a, &st);
	cr_log_info("reserved %llu GiB; mapped %llu MiB for %llu MiB used; device free %zu -> %zu MiB",
		    (unsigned long long)(st.reserved >> 30), (unsigned long long)(st.mapped >> 20),
		    (unsigned long long)(st.used >> 20), free0 >> 20, free1 >> 20);
	cr_assert_geq(free0 - free1, st.mapped, "mapped granules are device memory");
	for (i = 0; i < 5; i++)
		arena_block_free(a, b[i]);
	cr_assert_eq(arena_trim(a, ARENA_TRIM_POOL), 0);
	arena_stats_get(a, &st);
	cr_assert_eq(st.mapped, 0);
	cr_assert_eq(st.creates, st.releases);
	free2 = device_free();
	cr_log_info("after trim: device free %zu MiB (baseline %zu MiB)", free2 >> 20, free0 >> 20);
	cr_assert_geq(free2, free0 - (free0 - free1) / 2,
		      "trimming gave the device memory back");
	arena_free(a);
	account_free(acc);
	alloc_provider_free(p);
	free(in);
	free(out);
}

Test(gpu, churn_creates_nothing_after_warm_up)
{
	GPU_REQUIRE();
	struct alloc_provider *p;
	struct arena *a;
	struct arena_block *big, *small;
	struct arena_stats warm, st;
	int i;

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	cr_assert_eq(arena_new(p, NULL, NULL, &a), 0, "%s", cep_last_error());
	cr_assert_eq(arena_block_alloc(a, 64u << 20, 0, ALLOC_OWNER_SHARED, ALLOC_ROLE_WORKSPACE,
				       &big), 0);
	cr_assert_eq(arena_block_alloc(a, 4096, 0, ALLOC_OWNER_SHARED, ALLOC_ROLE_WORKSPACE,
				       &small), 0);
	arena_block_free(a, big);
	arena_block_free(a, small);
	cr_assert_eq(arena_trim(a, 0), 0);
	arena_stats_get(a, &warm);
	for (i = 0; i < 1000; i++) {
		size_t mb = 1 + (size_t)(i * 7919) % 64;

		cr_assert_eq(arena_block_alloc(a, mb << 20, 0, ALLOC_OWNER_SHARED,
					       ALLOC_ROLE_WORKSPACE, &big), 0, "%s", cep_last_error());
		cr_assert_eq(arena_block_alloc(a, 256 + (size_t)i, 0, ALLOC_OWNER_SHARED,
					       ALLOC_ROLE_WORKSPACE, &small), 0);
		arena_block_free(a, small);
		arena_block_free(a, big);
		if (i % 3 == 0)
			cr_assert_eq(arena_trim(a, 0), 0);
	}
	arena_stats_get(a, &st);
	cr_log_info("churn: creates %llu (after warm-up %llu), maps %llu, unmaps %llu, "
		    "pool hits %llu, pool %llu handles",
		    (unsigned long long)st.creates, (unsigned long long)warm.creates,
		    (unsigned long long)st.maps, (unsigned long long)st.unmaps,
		    (unsigned long long)st.pool_hits, (unsigned long long)st.pool_handles);
	cr_assert_eq(st.creates, warm.creates, "no cuMemCreate after warm-up");
	cr_assert_gt(st.maps, warm.maps);
	arena_free(a);
	alloc_provider_free(p);
}

static int event_query(void *ctx)
{
	CUresult r = drv->cuEventQuery((CUevent)ctx);

	if (r == CUDA_ERROR_NOT_READY)
		return CEP_EAGAIN;
	return CEP_CU_CHECK(r);
}

static int event_drops;

static void event_drop(void *ctx)
{
	(void)CEP_CU_CHECK(drv->cuEventDestroy((CUevent)ctx));
	event_drops++;
}

Test(gpu, a_block_behind_a_cuda_event_is_held_until_it_completes)
{
	GPU_REQUIRE();
	size_t bytes = 256u << 20, released = 0;
	struct alloc_provider *p;
	struct arena *a;
	struct deferred *dq;
	struct arena_block *held, *other;
	struct alloc_event ev;
	CUstream s;
	CUevent e;
	void *host;

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	cr_assert_eq(arena_new(p, NULL, NULL, &a), 0);
	cr_assert_eq(deferred_new(a, &dq), 0);
	CU_OK(drv->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
	cr_assert_eq(posix_memalign(&host, 4096, bytes), 0);
	memset(host, 0x5a, bytes);
	CU_OK(drv->cuMemHostRegister(host, bytes, 0));
	cr_assert_eq(arena_block_alloc(a, bytes, 0, ALLOC_OWNER_SHARED, ALLOC_ROLE_ACTIVATIONS,
				       &held), 0);
	/* The "work still reading it": a copy queued on the stream. */
	CU_OK(drv->cuMemcpyDtoHAsync(host, arena_block_addr(held), bytes, s));
	CU_OK(drv->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CU_OK(drv->cuEventRecord(e, s));
	ev = (struct alloc_event){ event_query, event_drop, e };
	cr_assert_eq(deferred_push(dq, held, &ev, 1), 0);
	cr_assert_eq(arena_block_alloc(a, bytes, 0, ALLOC_OWNER_SHARED, ALLOC_ROLE_ACTIVATIONS,
				       &other), 0);
	cr_assert_neq(arena_block_addr(other), arena_block_addr(held),
		      "a held block is not handed out again");
	CU_OK(drv->cuStreamSynchronize(s));
	cr_assert_eq(deferred_poll(dq, &released), 0);
	cr_assert_eq(released, 1, "complete event, released block");
	cr_assert_eq(event_drops, 1);
	arena_block_free(a, other);
	CU_OK(drv->cuMemHostUnregister(host));
	CU_OK(drv->cuStreamDestroy(s));
	free(host);
	deferred_free(dq);
	arena_free(a);
	alloc_provider_free(p);
}

Test(gpu, out_of_device_memory_is_an_error_for_one_request)
{
	GPU_REQUIRE();
	struct alloc_provider *p;
	struct arena *a;
	struct arena_block *b = NULL, *ok;
	struct arena_stats st;
	size_t fr = 0, total = 0;

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	cr_assert_eq(arena_new(p, NULL, NULL, &a), 0);
	CU_OK(drv->cuMemGetInfo(&fr, &total));
	cr_assert_eq(arena_block_alloc(a, total + total / 2, 0, ALLOC_OWNER_SHARED,
				       ALLOC_ROLE_WEIGHTS, &b), CEP_EDEVMEM);
	cr_log_info("%s", cep_last_error());
	cr_assert_null(b);
	arena_stats_get(a, &st);
	cr_assert_eq(st.used, 0);
	cr_assert_eq(st.mapped, 0);
	cr_assert_eq(st.creates - st.releases, st.pool_handles);
	cr_assert_eq(arena_block_alloc(a, 1 << 20, 0, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, &ok),
		     0, "the next request works");
	arena_block_free(a, ok);
	arena_free(a);
	alloc_provider_free(p);
}

static int gpu_upload(void *ctx, uint64_t dst, const void *src, size_t len)
{
	int ret = CEP_CU_CHECK(drv->cuMemcpyHtoDAsync(dst, src, len, NULL));

	return ret ? ret : CEP_CU_CHECK(drv->cuStreamSynchronize(NULL));
}

static int gpu_compare(void *ctx, uint64_t addr, const void *src, size_t len)
{
	void *back = malloc(len);
	int ret;

	if (back == NULL)
		return CEP_ENOMEM;
	ret = CEP_CU_CHECK(drv->cuMemcpyDtoHAsync(back, addr, len, NULL));
	if (ret == 0)
		ret = CEP_CU_CHECK(drv->cuStreamSynchronize(NULL));
	if (ret == 0)
		ret = memcmp(back, src, len) != 0;
	free(back);
	return ret;
}

Test(gpu, two_clients_map_shared_weights_once)
{
	GPU_REQUIRE();
	static const size_t sizes[] = { 100u << 20, 1u << 20, 1000 };
	struct weights_hooks hooks = { gpu_upload, gpu_compare, NULL };
	struct weights_entry *c1[3], *c2[3];
	struct alloc_provider *p;
	struct arena *a;
	struct weights *w;
	struct arena_stats s0, s1, s2;
	size_t f0, f1, f2, i;
	void *data[3];

	cr_assert_eq(alloc_provider_cuda_new(drv, 0, &p), 0, "%s", cep_last_error());
	cr_assert_eq(arena_new(p, NULL, NULL, &a), 0);
	cr_assert_eq(weights_new(a, &hooks, &w), 0);
	for (i = 0; i < 3; i++) {
		data[i] = malloc(sizes[i]);
		pattern(data[i], sizes[i] / 4, (uint32_t)(i + 7));
	}
	arena_stats_get(a, &s0);
	f0 = device_free();
	for (i = 0; i < 3; i++) {
		int64_t shape[1] = { (int64_t)(sizes[i] / 4) };
		struct weights_desc d = { data[i], sizes[i], CEP_DTYPE_FLOAT32, 1, shape };

		cr_assert_eq(weights_acquire(w, &d, &c1[i]), 0, "%s", cep_last_error());
	}
	arena_stats_get(a, &s1);
	f1 = device_free();
	for (i = 0; i < 3; i++) {
		int64_t shape[1] = { (int64_t)(sizes[i] / 4) };
		struct weights_desc d = { data[i], sizes[i], CEP_DTYPE_FLOAT32, 1, shape };

		cr_assert_eq(weights_acquire(w, &d, &c2[i]), 0, "%s", cep_last_error());
		cr_assert_eq(c2[i], c1[i]);
	}
	arena_stats_get(a, &s2);
	f2 = device_free();
	cr_log_info("weights: one client mapped %llu MiB (device free %zu -> %zu MiB); "
		    "the second mapped %llu more (device free %zu MiB)",
		    (unsigned long long)((s1.mapped - s0.mapped) >> 20), f0 >> 20, f1 >> 20,
		    (unsigned long long)((s2.mapped - s1.mapped) >> 20), f2 >> 20);
	cr_assert_eq(s2.mapped, s1.mapped);
	cr_assert_eq(s2.creates, s1.creates);
	cr_assert_eq(f2, f1, "the second client took no device memory");
	for (i = 0; i < 3; i++) {
		weights_release(w, c1[i]);
		weights_release(w, c2[i]);
		free(data[i]);
	}
	cr_assert_eq(arena_trim(a, ARENA_TRIM_POOL), 0);
	arena_stats_get(a, &s2);
	cr_assert_eq(s2.mapped, 0, "unloading both returns mapped bytes to the baseline");
	weights_free(w);
	arena_free(a);
	alloc_provider_free(p);
}
