/*
 * test_cuda_fence.c — the zero-copy data path on the CUDA backend: host
 * memory registered with the backend (pinned and mapped), fences the
 * device writes into it, host functions behind the work, and each run's
 * own fault record copied back without a sync.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 (elsewhere every test skips,
 * visibly): a registered page receives the fence value only after a
 * deliberately slow kernel and the copy behind it are done, so a host
 * that sees the value sees the data; host functions and fences of many
 * queued runs are each delivered exactly once and in order; copies from a
 * registered region count as pinned, from malloc'd memory as pageable;
 * and runs submitted through the engine without a sync complete in order,
 * with a bad Gather index failing only its own run, named by node.
 */
#include "tests/unit/cuda_util.h"

#include <stdatomic.h>
#include <time.h>

#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

TestSuite(gpu_fence, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

/* Spins for about cycles clock ticks, then writes v to p[0..n). */
static const char *const spin_text =
	"#include \"common.cuh\"\n"
	"extern \"C\" __global__ void spin_fill(float *p, i64 n, float v, i64 cycles)\n"
	"{\n"
	"	i64 t0 = clock64();\n"
	"	while (clock64() - t0 < cycles)\n"
	"		;\n"
	"	CEP_FOR(i, n)\n"
	"		p[i] = v;\n"
	"}\n";

static CUfunction spin_kernel(void)
{
	struct nvrtc_source src;
	CUfunction fn;

	cr_assert_eq(cuda_source_get("unary", &src), 0);
	src.name = "spin";
	src.text = spin_text;
	cr_assert_eq(cuda_function_compile(gpu_be, &src, "spin_fill", &fn), 0, "%s",
		     cep_last_error());
	return fn;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A page-aligned buffer registered with the backend, filled with fill. */
static void *page_new(size_t bytes, int fill)
{
	void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);

	cr_assert_not_null(p);
	memset(p, fill, bytes);
	cr_assert_eq(backend_host_register(gpu_be, p, bytes), 0, "%s", cep_last_error());
	return p;
}

static void page_free(void *p)
{
	backend_host_unregister(gpu_be, p);
	free(p);
}

Test(gpu_fence, the_fence_follows_a_slow_kernel_and_its_copy)
{
	enum { N = 1 << 14 };
	_Atomic uint64_t *seq;
	float *data;
	char *page;
	void *dev;
	CUfunction spin;
	float v = 7.5f;
	int64_t n = N, cycles = 200000000; /* about 0.1 s at 2 GHz */
	int64_t deadline;
	void *args[4];
	uint64_t seen;
	int i;

	GPU_REQUIRE();
	spin = spin_kernel();
	page = page_new(4096 + sizeof(float) * N, 0);
	seq = (_Atomic uint64_t *)page;
	data = (float *)(page + 4096);
	cr_assert_eq(backend_mem_alloc(gpu_be, sizeof(float) * N, &dev), 0);
	args[0] = &dev;
	args[1] = &n;
	args[2] = &v;
	args[3] = &cycles;
	cr_assert_eq(cuda_launch(gpu_be, gpu_s, spin, 64, 256, 0, args), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, data, dev, sizeof(float) * N), 0);
	cr_assert_eq(backend_stream_write_value64(gpu_be, gpu_s, (uint64_t *)seq, 41), 0, "%s",
		     cep_last_error());
	seen = atomic_load_explicit(seq, memory_order_acquire);
	printf("  right after queueing, the fence reads %llu (%s)\n", (unsigned long long)seen,
	       seen == 0 ? "the kernel still spins" : "already written");
	/* A generous bound against a hang, not a timing check. */
	deadline = now_ns() + 60 * 1000000000LL;
	while ((seen = atomic_load_explicit(seq, memory_order_acquire)) == 0 && now_ns() < deadline)
		;
	cr_assert_eq(seen, 41, "the device never wrote the fence");
	for (i = 0; i < N; i++)
		cr_assert_eq(data[i], 7.5f, "element %d was not there when the fence was", i);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	backend_mem_free(gpu_be, dev, sizeof(float) * N);
	page_free(page);
}

struct calls {
	_Atomic int count[64];      /* per host function: times called */
	_Atomic int order[64];      /* per host function: the call's rank */
	_Atomic int next;
};

static struct calls calls;

static void count_call(void *arg)
{
	int i = (int)(intptr_t)arg;

	atomic_fetch_add(&calls.count[i], 1);
	atomic_store(&calls.order[i], atomic_fetch_add(&calls.next, 1));
}

Test(gpu_fence, every_fence_and_host_function_arrives_once_in_order)
{
	enum { RUNS = 64 };
	uint64_t *page;
	void *dev;
	CUfunction spin;
	float v = 1.0f;
	int64_t n = 1024, cycles = 2000000;
	void *args[4];
	int i;

	GPU_REQUIRE();
	spin = spin_kernel();
	page = page_new(4096, 0);
	memset(&calls, 0, sizeof(calls));
	cr_assert_eq(backend_mem_alloc(gpu_be, sizeof(float) * 1024, &dev), 0);
	args[0] = &dev;
	args[1] = &n;
	args[2] = &v;
	args[3] = &cycles;
	for (i = 0; i < RUNS; i++) {
		cr_assert_eq(cuda_launch(gpu_be, gpu_s, spin, 4, 256, 0, args), 0);
		cr_assert_eq(backend_stream_write_value64(gpu_be, gpu_s, &page[i % 8], i + 1), 0);
		cr_assert_eq(backend_stream_host_fn(gpu_be, gpu_s, count_call, (void *)(intptr_t)i),
			     0, "%s", cep_last_error());
	}
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	/* A host function may still be returning after the sync; the last
	 * one's store is what the loop below waits for. */
	while (atomic_load(&calls.next) < RUNS)
		;
	for (i = 0; i < RUNS; i++) {
		cr_assert_eq(atomic_load(&calls.count[i]), 1, "host function %d ran %d times", i,
			     atomic_load(&calls.count[i]));
		cr_assert_eq(atomic_load(&calls.order[i]), i, "host function %d ran out of order",
			     i);
	}
	for (i = 0; i < 8; i++)
		cr_assert_eq(page[i], (uint64_t)(RUNS - 8 + i + 1), "slot %d holds the last fence "
			     "written to it", i);
	backend_mem_free(gpu_be, dev, sizeof(float) * 1024);
	page_free(page);
}

Test(gpu_fence, copies_from_a_registered_region_are_counted_as_pinned)
{
	enum { BYTES = 4 << 20 };
	struct backend_counters c0, c1;
	unsigned char *region, *plain, *back;
	void *dev;
	size_t k;

	GPU_REQUIRE();
	region = page_new(BYTES, 0);
	plain = malloc(BYTES);
	back = malloc(BYTES);
	for (k = 0; k < BYTES; k++) {
		region[k] = (unsigned char)(k * 31 + 5);
		plain[k] = (unsigned char)(k * 17 + 3);
	}
	cr_assert_eq(backend_mem_alloc(gpu_be, BYTES, &dev), 0);
	backend_counters_get(gpu_be, &c0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, dev, region, BYTES), 0);
	cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, back, dev, BYTES), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, dev, plain, BYTES), 0);
	cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, region, dev, BYTES), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	backend_counters_get(gpu_be, &c1);
	for (k = 0; k < BYTES; k++) {
		cr_assert_eq(back[k], (unsigned char)(k * 31 + 5), "byte %zu", k);
		cr_assert_eq(region[k], plain[k], "byte %zu", k);
	}
	cr_assert_eq(c1.bytes_h2d_pinned - c0.bytes_h2d_pinned, BYTES);
	cr_assert_eq(c1.bytes_h2d_pageable - c0.bytes_h2d_pageable, BYTES);
	cr_assert_eq(c1.bytes_d2h_pinned - c0.bytes_d2h_pinned, BYTES);
	cr_assert_eq(c1.bytes_d2h_pageable - c0.bytes_d2h_pageable, BYTES);
	backend_mem_free(gpu_be, dev, BYTES);
	page_free(region);
	free(plain);
	free(back);
}

/* ----------------------------------------- runs submitted through the engine */

/* y = Gather(x, idx, axis 0) * 2: x [n, 8], idx [k]. */
static engine_model *gather_model(void)
{
	static const float two[1] = { 2.0f };
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "k");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "k,8");
	onnxb_init(b, "two", CEP_DTYPE_FLOAT32, "1", two);
	onnxb_node(b, "Gather", "x,idx", "g");
	onnxb_node(b, "Mul", "g,two", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* One run's memory, all registered: x [16, 8], idx [4], y [4, 8], its
 * fence and its fault record. */
struct grun {
	float x[16 * 8];
	int64_t idx[4];
	float y[4 * 8];
	struct backend_fault fault;
	struct engine_run run;
};

static _Atomic int gdone[32];
static _Atomic int grank[32];
static _Atomic int gnext;

static void grun_done(void *arg)
{
	int i = (int)(intptr_t)arg;

	atomic_store(&grank[i], atomic_fetch_add(&gnext, 1));
	atomic_fetch_add(&gdone[i], 1);
}

Test(gpu_fence, runs_submitted_without_a_sync_complete_in_order_each_with_its_fault)
{
	enum { RUNS = 32, BAD = 13 };
	struct backend_counters c0, c1;
	engine_model *m = gather_model();
	engine_session *s;
	struct grun *g;
	uint64_t *fences;
	int64_t deadline;
	unsigned seed = 77;
	int i, j, ret;

	GPU_REQUIRE();
	cr_assert_eq(engine_session_new(m, gpu_be, NULL, &s), 0, "%s", cep_last_error());
	g = page_new(sizeof(*g) * RUNS, 0);
	fences = page_new(4096, 0);
	memset(gdone, 0, sizeof(gdone));
	for (int pass = 0; pass < 2; pass++) {
		/* The first pass plans, captures and warms up; the second is
		 * all replays, and is the one checked. */
		atomic_store(&gnext, 0);
		backend_counters_get(gpu_be, &c0);
		for (i = 0; i < RUNS; i++) {
			int64_t xd[2] = { 16, 8 }, kd[1] = { 4 };
			struct engine_input in[2] = {
				{ "x", CEP_DTYPE_FLOAT32, 2, xd, g[i].x, sizeof(g[i].x) },
				{ "idx", CEP_DTYPE_INT64, 1, kd, g[i].idx, sizeof(g[i].idx) },
			};
			struct engine_output out = { .name = "y", .data = g[i].y,
						     .capacity = sizeof(g[i].y) };
			struct engine_fence f = {
				.seq = &fences[i % 64], .value = (uint64_t)(pass * RUNS + i + 1),
				.fault = &g[i].fault, .done = grun_done, .arg = (void *)(intptr_t)i,
			};

			atomic_store(&gdone[i], 0);
			for (j = 0; j < 16 * 8; j++)
				g[i].x[j] = (float)(rnd(&seed) % 1000) / 8.0f;
			for (j = 0; j < 4; j++)
				g[i].idx[j] = (int64_t)(rnd(&seed) % 16);
			if (i == BAD)
				g[i].idx[2] = 16;
			memset(g[i].y, 0xa5, sizeof(g[i].y));
			ret = eu_run_submit(s, in, 2, &out, 1, 0, &f, &g[i].run);
			cr_assert_eq(ret, 0, "pass %d run %d: %s", pass, i, cep_last_error());
		}
		for (i = 0; i < RUNS; i++) {
			deadline = now_ns() + 60 * 1000000000LL;
			while (atomic_load(&gdone[i]) == 0 && now_ns() < deadline)
				sched_yield();
			cr_assert_eq(atomic_load(&gdone[i]), 1, "run %d completed %d times", i,
				     atomic_load(&gdone[i]));
			ret = engine_run_complete(s, &g[i].run, &g[i].fault);
			if (i == BAD) {
				cr_assert_eq(ret, CEP_EINVAL, "the bad run fails");
				cr_assert(strstr(cep_last_error(), "Gather: index 16 is out of range")
					  != NULL, "%s", cep_last_error());
				continue;
			}
			cr_assert_eq(ret, 0, "pass %d run %d: %s", pass, i, cep_last_error());
			cr_assert(g[i].run.checked, "a Gather checks its indices on the device");
			for (j = 0; j < 32; j++)
				cr_assert_eq(g[i].y[j], 2.0f * g[i].x[g[i].idx[j / 8] * 8 + j % 8],
					     "pass %d run %d y[%d]", pass, i, j);
		}
		backend_counters_get(gpu_be, &c1);
	}
	/* The order of completion: done[i] was stored in completion order on
	 * one stream, so ranks follow the submission. */
	for (i = 1; i < RUNS; i++)
		cr_assert_lt(atomic_load(&grank[i - 1]), atomic_load(&grank[i]));
	printf("  32 warm runs: %llu bytes in and out pinned, %llu pageable; %llu fences, "
	       "%llu fault records copied back, %llu syncs\n",
	       (unsigned long long)(c1.bytes_h2d_pinned + c1.bytes_d2h_pinned -
				    c0.bytes_h2d_pinned - c0.bytes_d2h_pinned),
	       (unsigned long long)(c1.bytes_h2d_pageable + c1.bytes_d2h_pageable -
				    c0.bytes_h2d_pageable - c0.bytes_d2h_pageable),
	       (unsigned long long)(c1.fences - c0.fences),
	       (unsigned long long)(c1.fault_saves - c0.fault_saves),
	       (unsigned long long)(c1.syncs - c0.syncs));
	cr_assert_eq(c1.bytes_h2d_pageable, c0.bytes_h2d_pageable, "no pageable input copy");
	cr_assert_eq(c1.bytes_d2h_pageable, c0.bytes_d2h_pageable, "no pageable output copy");
	cr_assert_eq(c1.bytes_h2d_pinned - c0.bytes_h2d_pinned,
		     (uint64_t)RUNS * (sizeof(g[0].x) + sizeof(g[0].idx)));
	cr_assert_eq(c1.syncs, c0.syncs, "nothing waited for the device");
	cr_assert_eq(c1.fault_saves - c0.fault_saves, RUNS, "each run copies its own record");
	cr_assert_eq(c1.fences, c0.fences, "a run that may still fail leaves its fence to its "
		     "host function");
	for (i = 0; i < RUNS; i++)
		cr_assert_eq(fences[i], 0);
	cr_assert_eq(c1.allocs, c0.allocs, "the warm runs allocate no device memory");
	engine_session_free(s);
	engine_model_unref(m);
	page_free(fences);
	page_free(g);
}
