/*
 * test_cuda_backend.c — the CUDA backend behind the backend seam, and how
 * the daemon chooses its backend.
 *
 * Everywhere: a missing driver is a clear error; the daemon's auto choice
 * falls back to the host backend with a log line that says why, while
 * backend = cuda refuses to start; the planner names the node and operator
 * that has no CUDA kernel instead of falling back.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 (elsewhere they skip, visibly):
 * device memory from the arena, copies and their counters; events and
 * stream priorities; a consumer stream that waits for a deliberately slow
 * producer on another stream; graph replay equal to eager launches; a
 * failed capture that leaves the stream usable; a module restored from the
 * disk cache computing what a fresh compile computed; out of device memory
 * as an error for one request; a bad Gather index failing a replayed
 * graph; and a model through the engine on the CUDA backend matching the
 * host backend, with the warm path allocating nothing.
 */
#include "tests/unit/cuda_util.h"

#include <criterion/redirect.h>

#include "daemon/config.h"
#include "engine/engine.h"
#include "common/log.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "daemon/server.h"

/* ------------------------------------------------------------ everywhere */

Test(cuda_backend, a_missing_driver_is_a_clear_error)
{
	struct backend_cuda_config cfg;
	struct backend *be = NULL;

	backend_cuda_config_init(&cfg);
	cfg.driver_lib = "libcuda-that-is-not-there.so.1";
	cr_assert_eq(backend_cuda_new_config(&cfg, &be), CEP_ENOTSUP);
	cr_assert_null(be);
	cr_assert(strncmp(cep_last_error(), "no CUDA driver: libcuda-that-is-not-there.so.1: ",
			  48) == 0, "%s", cep_last_error());
}

Test(cuda_backend, device_kernels_refuse_another_backend)
{
	struct backend *be;
	CUfunction fn;
	uint64_t fault;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_not(cuda_backend_is(be));
	cr_assert_eq(cuda_function_get(be, "binary", "add_f32", &fn), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "device kernels need the cuda backend, not host");
	cr_assert_eq(cuda_fault_get(be, NULL, &fault), CEP_EINVAL);
	cr_assert_eq(cuda_backend_arch(be), 0);
	cr_assert_null(backend_stream_fault(be, NULL));
	backend_free(be);
}

/* Reads what the test wrote to stderr so far. */
static void stderr_read(char *buf, size_t len)
{
	FILE *f;
	size_t n;

	fflush(stderr);
	f = cr_get_redirected_stderr();
	cr_assert_not_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
}

Test(cuda_backend, auto_falls_back_to_the_host_and_says_why, .init = cr_redirect_stderr)
{
	struct backend *be = NULL;
	struct config cfg;
	char log[2048];

	log_level_set(LOG_INFO);
	config_init(&cfg);
	cr_assert_eq(server_backend_open(&cfg, "libcuda-that-is-not-there.so.1", &be), 0);
	cr_assert_not_null(be);
	cr_assert_str_eq(be->iface.name, "host");
	cr_assert_eq(be->device_memory, 0);
	backend_free(be);
	stderr_read(log, sizeof(log));
	cr_assert(strstr(log, "<5>no CUDA driver: libcuda-that-is-not-there.so.1: cannot open "
			 "shared object file") != NULL, "%s", log);
	cr_assert(strstr(log, "; serving on the host backend\n") != NULL, "%s", log);
}

Test(cuda_backend, backend_cuda_without_a_driver_does_not_start, .init = cr_redirect_stderr)
{
	struct backend *be = NULL;
	struct config cfg;
	char log[2048];

	log_level_set(LOG_INFO);
	config_init(&cfg);
	cfg.backend = CONFIG_BACKEND_CUDA;
	cr_assert_eq(server_backend_open(&cfg, "libcuda-that-is-not-there.so.1", &be),
		     CEP_ENOTSUP);
	cr_assert_null(be);
	cfg.backend = CONFIG_BACKEND_HOST;
	cr_assert_eq(server_backend_open(&cfg, "libcuda-that-is-not-there.so.1", &be), 0);
	cr_assert_str_eq(be->iface.name, "host");
	backend_free(be);
	stderr_read(log, sizeof(log));
	cr_assert(strstr(log, "<3>backend = cuda, but no CUDA driver: "
			 "libcuda-that-is-not-there.so.1") != NULL, "%s", log);
	cr_assert(strstr(log, "<5>serving on the host backend (backend = host)\n") != NULL,
		  "%s", log);
}

/* A model of one Relu. */
static engine_model *relu_model(void)
{
	struct onnxb *b = onnxb_new(14);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,3,2,2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "1,3,2,2");
	onnxb_node(b, "Relu", "x", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

Test(cuda_backend, the_planner_names_the_node_without_a_kernel)
{
	float x[12] = { 0 }, y[12];
	int64_t dims[4] = { 1, 3, 2, 2 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 4, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	engine_model *m = relu_model();
	engine_session *s;
	struct backend *be;

	/* Every operator of the host has a CUDA kernel, so the host backend
	 * plays one of a kind that has none: the planner looks up kernels by
	 * the backend's kind, and there the lookup fails. */
	cr_assert_eq(backend_host_new(0, &be), 0);
	be->kind = BACKEND_KIND_COUNT;
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "'y'") != NULL, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "Relu (opset 14) has no kernel on the "
			   "unknown backend")
		  != NULL, "%s", cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_backend, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300);

Test(gpu_backend, memory_copies_and_counters)
{
	static const size_t sizes[] = { 1, 1000, 3u << 20, 64u << 20 };
	struct backend_counters c;
	void *d[4], *d2;
	unsigned char *a, *b;
	size_t i, k;

	GPU_REQUIRE();
	cr_assert_str_eq(gpu_be->iface.name, "cuda");
	cr_assert(strstr(gpu_be->iface.device, "sm_") != NULL, "%s", gpu_be->iface.device);
	cr_assert_gt(gpu_be->device_memory, (uint64_t)1 << 30);
	cr_assert(gpu_be->caps & BACKEND_CAP_GRAPHS);
	cr_assert_not(gpu_be->caps & BACKEND_CAP_HOST_MEMORY);
	printf("  device: %s, arch sm_%d\n", gpu_be->iface.device, cuda_backend_arch(gpu_be));
	for (i = 0; i < 4; i++) {
		cr_assert_eq(backend_mem_alloc(gpu_be, sizes[i], &d[i]), 0, "%s", cep_last_error());
		cr_assert_eq((uintptr_t)d[i] % BACKEND_ALIGN, 0);
	}
	a = malloc(sizes[3]);
	b = malloc(sizes[3]);
	for (k = 0; k < sizes[3]; k++)
		a[k] = (unsigned char)(k * 131 + 7);
	memset(b, 0, sizes[3]);
	cr_assert_eq(backend_mem_alloc(gpu_be, sizes[3], &d2), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d[3], a, sizes[3]), 0);
	cr_assert_eq(backend_copy_d2d(gpu_be, gpu_s, d2, d[3], sizes[3]), 0);
	cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, b, d2, sizes[3]), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_eq(memcmp(a, b, sizes[3]), 0);
	backend_counters_get(gpu_be, &c);
	cr_assert_eq(c.allocs, 5);
	cr_assert_eq(c.copies_h2d, 1);
	cr_assert_eq(c.copies_d2d, 1);
	cr_assert_eq(c.copies_d2h, 1);
	cr_assert_eq(c.bytes_d2h, sizes[3]);
	for (i = 0; i < 4; i++)
		backend_mem_free(gpu_be, d[i], sizes[i]);
	backend_mem_free(gpu_be, d2, sizes[3]);
	backend_counters_get(gpu_be, &c);
	cr_assert_eq(c.bytes_live, 0);
	free(a);
	free(b);
}

Test(gpu_backend, out_of_device_memory_is_an_error_for_one_request)
{
	void *p = NULL, *q = NULL;

	GPU_REQUIRE();
	/* (Running out of physical memory is the arena's, tested with it in
	 * test_cuda_driver.c; through the backend it is the same error.) */
	cr_assert_eq(backend_mem_alloc(gpu_be, (size_t)1 << 52, &p), CEP_EDEVMEM);
	cr_assert_null(p);
	printf("  4 PiB: %s\n", cep_last_error());
	cr_assert_eq(backend_mem_alloc(gpu_be, 1 << 20, &q), 0, "the backend carries on");
	backend_mem_free(gpu_be, q, 1 << 20);
}

Test(gpu_backend, events_and_priorities)
{
	static const int prios[] = { CEP_PRIORITY_LOW, CEP_PRIORITY_NORMAL, CEP_PRIORITY_HIGH };
	struct backend_stream *s[3];
	struct backend_event *e, *never;
	int i;

	GPU_REQUIRE();
	for (i = 0; i < 3; i++)
		cr_assert_eq(backend_stream_new(gpu_be, prios[i], &s[i]), 0, "%s",
			     cep_last_error());
	cr_assert_eq(backend_event_new(gpu_be, &e), 0);
	cr_assert_eq(backend_event_new(gpu_be, &never), 0);
	cr_assert_eq(backend_event_query(gpu_be, never), 0, "a fresh event is complete");
	cr_assert_eq(backend_event_record(gpu_be, e, s[2]), 0);
	cr_assert_eq(backend_stream_wait(gpu_be, s[0], e), 0);
	cr_assert_eq(backend_event_sync(gpu_be, e), 0);
	cr_assert_eq(backend_event_query(gpu_be, e), 0);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(backend_stream_sync(gpu_be, s[i]), 0);
		backend_stream_free(gpu_be, s[i]);
	}
	backend_event_free(gpu_be, e);
	backend_event_free(gpu_be, never);
	backend_event_free(gpu_be, NULL);
	backend_stream_free(gpu_be, NULL);
}

/* Spins for about cycles clock ticks, then writes v to p[0..n). */
static const char *const slow_text =
	"#include \"common.cuh\"\n"
	"extern \"C\" __global__ void slow_fill(float *p, i64 n, float v, i64 cycles)\n"
	"{\n"
	"	i64 t0 = clock64();\n"
	"	while (clock64() - t0 < cycles)\n"
	"		;\n"
	"	CEP_FOR(i, n)\n"
	"		p[i] = v;\n"
	"}\n";

Test(gpu_backend, a_consumer_waits_for_a_slow_producer_on_another_stream)
{
	enum { N = 1 << 16 };
	struct backend_stream *copy_s;
	struct backend_event *ready;
	struct nvrtc_source src;
	struct op_tensor in[2];
	struct dev_call add;
	CUfunction slow;
	float *host, v = 3.0f;
	int64_t n = N, cycles = 200000000; /* about 0.1 s at 2 GHz */
	void *args[4];
	unsigned seed = 3;
	int i, query;

	GPU_REQUIRE();
	cr_assert_eq(cuda_source_get("unary", &src), 0);
	src.name = "slow";
	src.text = slow_text;
	cr_assert_eq(cuda_function_compile(gpu_be, &src, "slow_fill", &slow), 0, "%s",
		     cep_last_error());
	/* The consumer: z = x + y on the compute stream, x from the producer. */
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "65536", &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, "65536", &seed, false);
	memset(in[0].data, 0, sizeof(float) * N);
	cr_assert_eq(dev_call_make(&add, "Add", 14, NULL, 0, in, 2), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_eq(backend_stream_new(gpu_be, CEP_PRIORITY_LOW, &copy_s), 0);
	cr_assert_eq(backend_event_new(gpu_be, &ready), 0);
	args[0] = &add.in[0].data;
	args[1] = &n;
	args[2] = &v;
	args[3] = &cycles;
	cr_assert_eq(cuda_launch(gpu_be, copy_s, slow, 64, 256, 0, args), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_event_record(gpu_be, ready, copy_s), 0);
	query = backend_event_query(gpu_be, ready);
	printf("  right after the launch the producer is %s\n",
	       query == CEP_EAGAIN ? "still running (the host did not wait)" : "done");
	cr_assert_eq(backend_stream_wait(gpu_be, gpu_s, ready), 0);
	cr_assert_eq(dev_call_launch(&add), 0, "%s", cep_last_error());
	host = malloc(sizeof(float) * N);
	dev_get(host, add.out.data, sizeof(float) * N);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	for (i = 0; i < N; i++)
		cr_assert_eq(host[i], 3.0f + ((float *)in[1].data)[i], "element %d: %g", i,
			     host[i]);
	cr_assert_eq(backend_event_query(gpu_be, ready), 0);
	backend_event_free(gpu_be, ready);
	backend_stream_free(gpu_be, copy_s);
	dev_call_free(&add);
	free(host);
	free(in[0].data);
	free(in[1].data);
}

/* t = x + y; u = t * y; v = Relu(u), as three calls on the device. */
struct chain {
	struct op_tensor x, y;   /* host */
	struct dev_call add, mul, relu;
};

static void chain_make(struct chain *c, unsigned *seed)
{
	struct op_tensor in[2];

	c->x = host_tensor(CEP_DTYPE_FLOAT32, "300,7", seed, false);
	c->y = host_tensor(CEP_DTYPE_FLOAT32, "7", seed, false);
	in[0] = c->x;
	in[1] = c->y;
	cr_assert_eq(dev_call_make(&c->add, "Add", 14, NULL, 0, in, 2), 0);
	in[0] = c->add.out;
	in[0].data = malloc(op_tensor_bytes(&in[0]));
	cr_assert_eq(dev_call_make(&c->mul, "Mul", 14, NULL, 0, in, 2), 0);
	free(in[0].data);
	/* Wire the calls together through device memory, as a plan does. */
	backend_mem_free(gpu_be, c->mul.in[0].data, op_tensor_bytes(&c->mul.in[0]));
	c->mul.in[0].data = c->add.out.data;
	backend_mem_free(gpu_be, c->mul.in[1].data, op_tensor_bytes(&c->mul.in[1]));
	c->mul.in[1].data = c->add.in[1].data;
	in[0] = c->mul.out;
	in[0].data = malloc(op_tensor_bytes(&in[0]));
	cr_assert_eq(dev_call_make(&c->relu, "Relu", 14, NULL, 0, in, 1), 0);
	free(in[0].data);
	backend_mem_free(gpu_be, c->relu.in[0].data, op_tensor_bytes(&c->relu.in[0]));
	c->relu.in[0].data = c->mul.out.data;
}

static void chain_free(struct chain *c)
{
	/* Only the memory each call made itself is freed through it. */
	c->relu.in[0].data = NULL;
	c->mul.in[0].data = c->mul.in[1].data = NULL;
	dev_call_free(&c->relu);
	dev_call_free(&c->mul);
	dev_call_free(&c->add);
	free(c->x.data);
	free(c->y.data);
}

static void chain_launch(struct chain *c)
{
	cr_assert_eq(dev_call_launch(&c->add), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&c->mul), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&c->relu), 0, "%s", cep_last_error());
}

/* What the chain computes, here. */
static float chain_at(const struct chain *c, int i)
{
	float x = ((float *)c->x.data)[i], y = ((float *)c->y.data)[i % 7];
	float u = (x + y) * y;

	return u > 0.0f ? u : 0.0f;
}

Test(gpu_backend, graph_replay_equals_eager_launches)
{
	enum { N = 300 * 7 };
	struct backend_graph *g = NULL;
	struct backend_counters c0, c1;
	struct chain ch;
	float eager[N], replay[N];
	unsigned seed = 31;
	int i, round;

	GPU_REQUIRE();
	chain_make(&ch, &seed);
	chain_launch(&ch);
	dev_get(eager, ch.relu.out.data, sizeof(eager));
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	for (i = 0; i < N; i++)
		cr_assert_eq(eager[i], chain_at(&ch, i));
	backend_counters_get(gpu_be, &c0);
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0, "%s", cep_last_error());
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), CEP_EBUSY);
	chain_launch(&ch);
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), 0, "%s", cep_last_error());
	cr_assert_not_null(g);
	for (round = 0; round < 3; round++) {
		dev_poison(ch.relu.out.data, sizeof(replay));
		if (round > 0) {
			/* New input data: a replay reads memory, not a snapshot. */
			fill_random(&ch.x, &seed, false);
			cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, ch.add.in[0].data, ch.x.data,
						      sizeof(float) * N), 0);
		}
		cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0, "%s", cep_last_error());
		dev_get(replay, ch.relu.out.data, sizeof(replay));
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
		if (round == 0)
			cr_assert_eq(memcmp(eager, replay, sizeof(eager)), 0);
		for (i = 0; i < N; i++)
			cr_assert_eq(replay[i], chain_at(&ch, i), "round %d element %d", round, i);
	}
	backend_counters_get(gpu_be, &c1);
	cr_assert_eq(c1.captures - c0.captures, 1);
	cr_assert_eq(c1.replays - c0.replays, 3);
	cr_assert_eq(c1.allocs, c0.allocs, "capture and replay allocate nothing");
	backend_graph_free(gpu_be, g);
	chain_free(&ch);
}

Test(gpu_backend, a_failed_capture_leaves_the_stream_usable)
{
	struct backend_graph *g = NULL;
	struct chain ch;
	float out[300 * 7];
	unsigned seed = 37;
	int i;

	GPU_REQUIRE();
	chain_make(&ch, &seed);
	cr_assert_not_null(freopen("/dev/null", "w", stderr)); /* the driver's error lines */
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0);
	chain_launch(&ch);
	/* Waiting on a capturing stream cannot be recorded: it breaks the
	 * capture. */
	cr_assert_neq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), CEP_ENOTSUP);
	cr_assert_null(g);
	cr_assert(strstr(cep_last_error(), "the graph capture failed: CUDA_ERROR_STREAM_CAPTURE_")
		  != NULL, "%s", cep_last_error());
	printf("  %s\n", cep_last_error());
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), CEP_EINVAL, "capture is over");
	chain_launch(&ch);
	dev_get(out, ch.relu.out.data, sizeof(out));
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	for (i = 0; i < 300 * 7; i++)
		cr_assert_eq(out[i], chain_at(&ch, i));
	/* And it captures again. */
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0);
	chain_launch(&ch);
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), 0, "%s", cep_last_error());
	backend_graph_free(gpu_be, g);
	chain_free(&ch);
}

Test(gpu_backend, a_bad_index_fails_a_replayed_graph)
{
	static const int64_t good[] = { 4, -1, 0 }, bad[] = { 4, 5, 0 };
	struct backend_graph *g = NULL;
	struct op_tensor in[2];
	struct dev_call d;
	float out[9];
	unsigned seed = 41;
	int i;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "5,3", &seed, false);
	in[1] = (struct op_tensor){ .data = (void *)good, .dtype = CEP_DTYPE_INT64, .rank = 1,
				    .dims = { 3 } };
	cr_assert_eq(dev_call_make(&d, "Gather", 13, NULL, 0, in, 2), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0);
	cr_assert_eq(dev_call_launch(&d), 0);
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), 0, "%s", cep_last_error());
	cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0);
	dev_get(out, d.out.data, sizeof(out));
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	for (i = 0; i < 9; i++)
		cr_assert_eq(out[i], ((float *)in[0].data)[(i / 3 == 0 ? 4 : i / 3 == 1 ? 4 : 0) * 3 +
							    i % 3]);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, bad, sizeof(bad)), 0);
	cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Gather: index 5 is out of range for dimension 0 of size 5");
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, good, sizeof(good)), 0);
	cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	backend_graph_free(gpu_be, g);
	dev_call_free(&d);
	free(in[0].data);
}

/* Adds two random vectors with a backend whose kernel cache is dir;
 * returns its kernel counters. */
static void add_with_cache(const char *dir, float *result, struct nvrtc_stats *st)
{
	struct backend_cuda_config cfg;
	struct op_tensor in[2];
	struct dev_call d;
	unsigned seed = 43;

	gpu_teardown();
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = dir;
	cr_assert_eq(backend_cuda_new_config(&cfg, &gpu_be), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_new(gpu_be, CEP_PRIORITY_NORMAL, &gpu_s), 0);
	in[0] = host_tensor(CEP_DTYPE_BFLOAT16, "1000", &seed, true);
	in[1] = host_tensor(CEP_DTYPE_BFLOAT16, "1000", &seed, true);
	cr_assert_eq(dev_call_make(&d, "Add", 14, NULL, 0, in, 2), 0);
	cr_assert_eq(dev_call_launch(&d), 0);
	dev_get(result, d.out.data, 2000);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	cr_assert_eq(cuda_kernel_stats(gpu_be, st), 0);
	dev_call_free(&d);
	free(in[0].data);
	free(in[1].data);
}

Test(gpu_backend, a_module_from_the_disk_cache_computes_the_same)
{
	char dir[] = "/tmp/cep-cuda-cache-XXXXXX", cmd[128];
	struct nvrtc_stats fresh, restored;
	float a[500], b[500];

	GPU_REQUIRE();
	cr_assert_not_null(mkdtemp(dir));
	add_with_cache(dir, a, &fresh);
	printf("  fresh: %llu compiles in %.1f ms, %llu disk hits, %llu written\n",
	       (unsigned long long)fresh.compiles, fresh.compile_ns / 1e6,
	       (unsigned long long)fresh.disk_hits, (unsigned long long)fresh.disk_writes);
	cr_assert_eq(fresh.compiles, 1);
	cr_assert_eq(fresh.disk_hits, 0);
	cr_assert_eq(fresh.disk_writes, 1);
	cr_assert_eq(fresh.modules, 1);
	add_with_cache(dir, b, &restored);
	printf("  restored: %llu compiles, %llu disk hits\n",
	       (unsigned long long)restored.compiles, (unsigned long long)restored.disk_hits);
	cr_assert_eq(restored.compiles, 0);
	cr_assert_eq(restored.disk_hits, 1);
	cr_assert_eq(memcmp(a, b, sizeof(a)), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(gpu_backend, a_missing_nvrtc_is_named)
{
	struct backend_cuda_config cfg;
	struct backend *be = NULL;

	GPU_REQUIRE();
	backend_cuda_config_init(&cfg);
	cfg.nvrtc_lib = "libnvrtc-that-is-not-there.so.13";
	cr_assert_eq(backend_cuda_new_config(&cfg, &be), CEP_ENOTSUP);
	cr_assert_null(be);
	cr_assert(strncmp(cep_last_error(), "no NVRTC: ", 10) == 0, "%s", cep_last_error());
}

/* ------------------------------------------------- the engine on the GPU */

/*
 * y = Sigmoid(Reshape(Gather(Concat(Cast(Cast(T), f32), T), idx, axis 1)))
 * with T = Transpose(Relu((x + w) * (x + w) - x)): every CUDA family once.
 */
static engine_model *mixed_model(void)
{
	static const float w[6] = { 0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.5f };
	static const int64_t shape[2] = { -1, 24 }, perm[3] = { 0, 2, 1 };
	struct onnxb *b = onnxb_new(13);
	Onnx__NodeProto *n;
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,4,6");
	onnxb_input(b, "idx", CEP_DTYPE_INT64, "3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,24");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "6", w);
	onnxb_init(b, "shape", CEP_DTYPE_INT64, "2", shape);
	onnxb_node(b, "Add", "x,w", "a");
	onnxb_node(b, "Mul", "a,a", "m");
	onnxb_node(b, "Sub", "m,x", "s");
	onnxb_node(b, "Relu", "s", "r");
	n = onnxb_node(b, "Transpose", "r", "t");
	onnxb_attr_ints(n, "perm", 3, perm);
	n = onnxb_node(b, "Cast", "t", "h");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT16);
	n = onnxb_node(b, "Cast", "h", "f");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT32);
	n = onnxb_node(b, "Concat", "f,t", "c");
	onnxb_attr_int(n, "axis", 2);
	n = onnxb_node(b, "Gather", "c,idx", "g");
	onnxb_attr_int(n, "axis", 1);
	onnxb_node(b, "Reshape", "g,shape", "z");
	onnxb_node(b, "Sigmoid", "z", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Runs the model on batch rows of fresh random input with idx; returns
 * engine_run()'s answer, the output in y. */
static int mixed_run(engine_session *s, int batch, const int64_t *idx, unsigned *seed, float *y)
{
	int64_t xdims[3] = { batch, 4, 6 }, idims[1] = { 3 };
	struct op_tensor x = { .dtype = CEP_DTYPE_FLOAT32, .rank = 3, .dims = { batch, 4, 6 } };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, xdims, NULL, sizeof(float) * (size_t)batch * 24 },
		{ "idx", CEP_DTYPE_INT64, 1, idims, idx, sizeof(int64_t) * 3 },
	};
	struct engine_output out = { .name = "y", .data = y,
				     .capacity = sizeof(float) * (size_t)batch * 24 };
	int ret;

	x.data = malloc(in[0].bytes);
	fill_random(&x, seed, false);
	in[0].data = x.data;
	ret = eu_run(s, in, 2, &out, 1);
	free(x.data);
	return ret;
}

Test(gpu_backend, a_model_through_the_engine_matches_the_host)
{
	static const int64_t idx[3] = { 5, 0, -3 };
	engine_model *m = mixed_model();
	struct engine_session_options opts = { 0 };
	struct backend_counters warm, later;
	struct op_tensor ref = { .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 8, 24 } };
	struct backend *host;
	engine_session *gs, *hs;
	float gy[8 * 24], hy[8 * 24];
	unsigned gseed, hseed;
	int run;
	int64_t bad = 0;

	GPU_REQUIRE();
	cr_assert_eq(backend_host_new(0, &host), 0);
	cr_assert_eq(engine_session_new(m, gpu_be, &opts, &gs), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, host, &opts, &hs), 0, "%s", cep_last_error());
	for (run = 0; run < 6; run++) {
		gseed = hseed = 1000u + (unsigned)run;
		memset(gy, 0xa5, sizeof(gy));
		cr_assert_eq(mixed_run(gs, 8, idx, &gseed, gy), 0, "run %d: %s", run,
			     cep_last_error());
		cr_assert_eq(mixed_run(hs, 8, idx, &hseed, hy), 0, "%s", cep_last_error());
		ref.data = hy;
		bad += compare_tensor("engine: the mixed model, batch 8", &ref, gy, 1e-5, 1e-6);
		if (run == 2)
			backend_counters_get(gpu_be, &warm);
	}
	backend_counters_get(gpu_be, &later);
	printf("  warm path (runs 4-6): %llu allocs, %llu syncs, %llu replays, %llu launches; "
	       "%llu captures in all\n",
	       (unsigned long long)(later.allocs - warm.allocs),
	       (unsigned long long)(later.syncs - warm.syncs),
	       (unsigned long long)(later.replays - warm.replays),
	       (unsigned long long)(later.launches - warm.launches),
	       (unsigned long long)later.captures);
	cr_assert_eq(bad, 0);
	cr_assert_eq(later.allocs, warm.allocs, "the warm path allocates nothing");
	cr_assert_eq(later.syncs - warm.syncs, 3, "one sync per run, its completion");
	cr_assert_eq(later.replays - warm.replays, 3, "the plan is replayed as a graph");
	cr_assert_eq(later.launches, warm.launches, "no eager launches once captured");
	cr_assert_eq(later.captures, 1);
	engine_session_free(gs);
	engine_session_free(hs);
	backend_free(host);
	engine_model_unref(m);
}

Test(gpu_backend, a_bad_index_fails_the_run_and_names_the_node)
{
	static const int64_t good[3] = { 1, 2, 3 }, bad[3] = { 1, 7, 3 };
	engine_model *m = mixed_model();
	engine_session *s;
	float y[2 * 24];
	unsigned seed = 5;
	int run;

	GPU_REQUIRE();
	cr_assert_eq(engine_session_new(m, gpu_be, NULL, &s), 0, "%s", cep_last_error());
	/* A bad run eager (the plan's first), then while being captured (its
	 * second), then replayed; each good run after it succeeds. */
	for (run = 0; run < 4; run++) {
		cr_assert_eq(mixed_run(s, 2, bad, &seed, y), CEP_EINVAL, "run %d", run);
		cr_assert(strstr(cep_last_error(), "'g'") != NULL, "%s", cep_last_error());
		cr_assert(strstr(cep_last_error(), "Gather: index 7 is out of range for dimension "
				 "1 of size 6") != NULL, "%s", cep_last_error());
		if (run == 0)
			printf("  %s\n", cep_last_error());
		cr_assert_eq(mixed_run(s, 2, good, &seed, y), 0, "%s", cep_last_error());
	}
	engine_session_free(s);
	engine_model_unref(m);
}
