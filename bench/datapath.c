/*
 * datapath.c — the run round trip through cudaepd, against the driver's
 * floor measured in the same process run.
 *
 *   build/bench/datapath [--socket PATH] [--backend cuda|host]
 *                        [--clients 1,4] [--inflight 1,8] [--runs N]
 *                        [--bytes 4096] [--no-floor] [--bandwidth MiB]
 *
 * A trivial model (Relu over --bytes of float32 in, as many out) is loaded
 * by each of N client processes, which keep M runs in flight through
 * cep_run_submit()/cep_fence_wait(), each run reading its input from and
 * writing its output to the client's shared-memory region. Latency is from
 * submit to the fence's completion seen by the waiter (CLOCK_MONOTONIC);
 * throughput is all clients' runs over the wall time of the timed phase.
 * Every output is checked against max(x, 0) computed here.
 *
 * The floor (GPU machines): the same work done in this process with the
 * driver API and nothing else: copy --bytes in from pinned memory, the same
 * Relu as a hand-written PTX kernel, copy out to pinned memory, the GPU
 * writes a fence word into pinned memory (cuStreamWriteValue64) that the
 * host spins on; one at a time. Then the same runs pipelined on one stream,
 * 1 and 8 in flight, with and without a host function (cuLaunchHostFunc)
 * after each, as cudaepd queues one to finish each run: runs/s.
 *
 * --bandwidth MiB: one client runs a model that reads MiB of float32 from
 * its region as rows of 256 and multiplies them by a 256 x 1 weight (one
 * GEMV, whose output is 1/256 of the input), so the time is the
 * host-to-device copy: reported as GB/s.
 *
 * Without --socket it starts its own cudaepd ($CUDAEP_BUILD_DIR/bin or
 * build/bin) on a temporary socket, on --backend (default auto).
 */
#include "bench/bench_util.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/tinyonnx.h"

#define MAX_LIST 8
#define WARMUP 200

struct opts {
	const char *socket;
	const char *backend;
	int clients[MAX_LIST], n_clients;
	int inflight[MAX_LIST], n_inflight;
	int runs;                 /* timed runs per client */
	size_t bytes;             /* input (and output) bytes of a run */
	int floor;                /* measure the driver floor too */
	size_t bandwidth_mib;     /* 0: no bandwidth run */
};

static double pct_us(uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return (double)v[i] / 1e3;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "datapath: %s: %s (%s)\n", what, cep_last_error(), cep_strerror(ret));
	exit(1);
}

/* ------------------------------------------------------------------ models */

/* Writes a one-node model (op over float32 [n] into [out_n]) to path. */
static void model_write(const char *path, const char *op, int64_t n, int64_t out_n)
{
	struct tonnx m = {0};
	uint8_t *buf;
	size_t len;
	FILE *f;

	tonnx_input(&m, "x", 1, &n);
	tonnx_output(&m, "y", 1, &out_n);
	tonnx_node(&m, op, "x", NULL, "y");
	buf = tonnx_finish(&m, &len);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	free(buf);
}

/* Writes x [rows, 256] MatMul w [256, 1] -> y [rows, 1] to path. */
static void gemv_write(const char *path, int64_t rows)
{
	int64_t xd[2] = { rows, 256 }, wd[2] = { 256, 1 }, yd[2] = { rows, 1 };
	float w[256];
	struct tonnx m = {0};
	uint8_t *buf;
	size_t len;
	FILE *f;

	for (int i = 0; i < 256; i++)
		w[i] = 1.0f / 256;
	tonnx_input(&m, "x", 2, xd);
	tonnx_output(&m, "y", 2, yd);
	tonnx_weight(&m, "w", 2, wd, w);
	tonnx_node(&m, "MatMul", "x", "w", "y");
	buf = tonnx_finish(&m, &len);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	free(buf);
}

/* ------------------------------------------------------------------ client */

/* One client process: connects, loads the model, keeps inflight runs going
 * and writes its latencies (runs of them) to lat; returns its failures. */
static int client_main(const struct opts *o, const char *model, int inflight, uint64_t *lat,
		       uint64_t *t_begin, uint64_t *t_end)
{
	size_t n = o->bytes / sizeof(float), slot = (o->bytes + 255) / 256 * 256;
	cep_client *c = NULL;
	cep_session *s = NULL;
	cep_region *r = NULL;
	cep_tensor *in, *out;
	cep_fence *fence;
	uint64_t *t0;
	float *base;
	int ret, bad = 0, done = 0, sent = 0, total = WARMUP + o->runs;

	if ((ret = cep_connect(o->socket, "datapath", &c)) != 0)
		die("connect", ret);
	if ((ret = cep_session_load(c, model, NULL, &s)) != 0)
		die("load", ret);
	if ((ret = cep_region_new(c, 2 * slot * (size_t)inflight, &r)) != 0)
		die("region", ret);
	base = cep_region_data(r);
	in = calloc((size_t)inflight, sizeof(*in));
	out = calloc((size_t)inflight, sizeof(*out));
	fence = calloc((size_t)inflight, sizeof(*fence));
	t0 = calloc((size_t)inflight, sizeof(*t0));
	for (int k = 0; k < inflight; k++) {
		float *x = (float *)((char *)base + 2 * slot * (size_t)k);

		for (size_t i = 0; i < n; i++)
			x[i] = (float)((int)((i * 7 + (size_t)k * 13) % 11) - 5);
		in[k] = (cep_tensor){ "x", r, 2 * slot * (size_t)k, o->bytes, CEP_DTYPE_FLOAT32, 1,
				      { (int64_t)n } };
	}
	/* Keep inflight runs going: wait for the oldest, check it, submit
	 * the next in its slot. Timed runs are those after WARMUP. */
	for (int k = 0; k < inflight && sent < total; k++, sent++) {
		out[k] = (cep_tensor){ "y", r, 2 * slot * (size_t)k + slot, o->bytes,
				       CEP_DTYPE_FLOAT32, 1, { (int64_t)n } };
		t0[k] = now_ns();
		if ((ret = cep_run_submit(s, &in[k], 1, &out[k], 1, &fence[k])) != 0)
			die("submit", ret);
	}
	for (int k = 0; done < total; k = (k + 1) % inflight) {
		const float *x = (const float *)((char *)base + 2 * slot * (size_t)k);
		const float *y = (const float *)((char *)base + 2 * slot * (size_t)k + slot);
		uint64_t t;

		if ((ret = cep_fence_wait(&fence[k], CEP_WAIT_FOREVER)) != 0)
			die("wait", ret);
		t = now_ns();
		if (done == WARMUP)
			*t_begin = t0[k];
		if (done >= WARMUP)
			lat[done - WARMUP] = t - t0[k];
		done++;
		for (size_t i = 0; i < n; i++)
			bad += y[i] != (x[i] > 0 ? x[i] : 0.0f);
		((float *)y)[0] = NAN; /* the next run must write it again */
		if (sent < total) {
			out[k].bytes = o->bytes;
			t0[k] = now_ns();
			if ((ret = cep_run_submit(s, &in[k], 1, &out[k], 1, &fence[k])) != 0)
				die("submit", ret);
			sent++;
		}
	}
	*t_end = now_ns();
	cep_session_free(s);
	cep_region_free(r);
	cep_close(c);
	free(in);
	free(out);
	free(fence);
	free(t0);
	return bad;
}

/* N processes at once; prints one line. */
static void run_clients(const struct opts *o, const char *model, int nproc, int inflight)
{
	size_t per = (size_t)o->runs, all = per * (size_t)nproc;
	uint64_t *lat = mmap(NULL, all * sizeof(uint64_t) + 4096 * (size_t)nproc,
			     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t *span = lat + all, begin = UINT64_MAX, end = 0;
	pid_t pids[64];
	int bad = 0, status;

	if (nproc > 64)
		nproc = 64;
	for (int p = 0; p < nproc; p++) {
		pids[p] = fork();
		if (pids[p] == 0)
			_exit(client_main(o, model, inflight, lat + per * (size_t)p,
					  &span[2 * p], &span[2 * p + 1]) ? 3 : 0);
	}
	/* Only the clients: the daemon may be a child of this process too. */
	for (int p = 0; p < nproc; p++) {
		if (pids[p] < 0 || waitpid(pids[p], &status, 0) < 0)
			bad++;
		else
			bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	for (int p = 0; p < nproc; p++) {
		begin = span[2 * p] < begin ? span[2 * p] : begin;
		end = span[2 * p + 1] > end ? span[2 * p + 1] : end;
	}
	qsort(lat, all, sizeof(*lat), cmp_u64);
	printf("daemon  clients %2d  in flight %2d  p50 %8.1f us  p99 %8.1f us  %10.0f runs/s%s\n",
	       nproc, inflight, pct_us(lat, all, 0.50), pct_us(lat, all, 0.99),
	       (double)all / ((double)(end - begin) / 1e9), bad ? "  WRONG OUTPUTS" : "");
	munmap(lat, all * sizeof(uint64_t) + 4096 * (size_t)nproc);
}

/* One client, one large input multiplied down to 1/256 of it: the copy's
 * rate. */
static void run_bandwidth(const struct opts *o, const char *dir)
{
	size_t bytes = o->bandwidth_mib << 20, n = bytes / sizeof(float), rows = n / 256;
	char model[512];
	cep_client *c = NULL;
	cep_session *s = NULL;
	cep_region *r = NULL;
	uint64_t *lat = calloc(50, sizeof(*lat));
	float *x;
	int ret;

	snprintf(model, sizeof(model), "%s/big.onnx", dir);
	gemv_write(model, (int64_t)rows);
	if ((ret = cep_connect(o->socket, "datapath-bw", &c)) != 0)
		die("connect", ret);
	if ((ret = cep_session_load(c, model, NULL, &s)) != 0)
		die("load", ret);
	if ((ret = cep_region_new(c, bytes + rows * sizeof(float) + 4096, &r)) != 0)
		die("region", ret);
	x = cep_region_data(r);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(i % 1000);
	for (int i = 0; i < 55; i++) {
		cep_tensor in = { "x", r, 0, bytes, CEP_DTYPE_FLOAT32, 2, { (int64_t)rows, 256 } };
		cep_tensor out = { "y", r, bytes, rows * sizeof(float), CEP_DTYPE_FLOAT32, 2,
				   { (int64_t)rows, 1 } };
		uint64_t t = now_ns();

		if ((ret = cep_run(s, &in, 1, &out, 1)) != 0)
			die("run", ret);
		if (i >= 5)
			lat[i - 5] = now_ns() - t;
	}
	qsort(lat, 50, sizeof(*lat), cmp_u64);
	printf("daemon  H2D from a region: %zu MiB in %.1f us (p50): %.1f GB/s\n",
	       o->bandwidth_mib, pct_us(lat, 50, 0.5), (double)bytes / ((double)lat[25]));
	cep_session_free(s);
	cep_region_free(r);
	cep_close(c);
	free(lat);
}

/* ------------------------------------------------------------------- floor */

#define DRIVER_FUNCS(X) \
	X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
	X(cuStreamCreate) X(cuMemAlloc_v2) X(cuMemHostAlloc) \
	X(cuMemHostGetDevicePointer_v2) X(cuModuleLoadData) X(cuModuleGetFunction) \
	X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuLaunchKernel) \
	X(cuStreamWriteValue64_v2) X(cuStreamSynchronize) X(cuGetErrorString) \
	X(cuLaunchHostFunc)

static struct {
#define X(f) __typeof__(&f) f;
	DRIVER_FUNCS(X)
#undef X
} drv;

/* max(x, 0) over n floats: the floor's kernel, in PTX for the driver's JIT. */
static const char relu_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry relu(.param .u64 px, .param .u64 py, .param .u32 pn)\n{\n"
	"  .reg .pred %p;\n  .reg .b32 %r<6>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<6>;\n"
	"  ld.param.u64 %rd1, [px];\n  ld.param.u64 %rd2, [py];\n  ld.param.u32 %r1, [pn];\n"
	"  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
	"  mad.lo.s32 %r5, %r2, %r3, %r4;\n  setp.ge.u32 %p, %r5, %r1;\n  @%p bra DONE;\n"
	"  mul.wide.u32 %rd3, %r5, 4;\n  add.s64 %rd4, %rd1, %rd3;\n  add.s64 %rd5, %rd2, %rd3;\n"
	"  ld.global.f32 %f1, [%rd4];\n  max.f32 %f2, %f1, 0f00000000;\n"
	"  st.global.f32 [%rd5], %f2;\nDONE:\n  ret;\n}\n";

#define CK(call)                                                               \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			const char *m_ = "?";                                  \
			drv.cuGetErrorString(r_, &m_);                         \
			fprintf(stderr, "datapath: floor: %s: %s\n", #call, m_); \
			return -1;                                             \
		}                                                              \
	} while (0)

static void CUDA_CB floor_host_fn(void *arg)
{
	__atomic_add_fetch((uint64_t *)arg, 1, __ATOMIC_RELAXED);
}

/* The same run, k in flight on one stream, with or without a host
 * function queued after each run's fence (as cudaepd queues one to finish
 * every run): runs/s over o->runs runs. This is what shows whether the
 * host function, which holds the stream until it has run on the driver's
 * thread, is what keeps a pipelined client from going faster. */
static int floor_pipelined(const struct opts *o, CUstream st, CUfunction fn, CUdeviceptr dx,
			   CUdeviceptr dy, float *hx, float *hy, CUdeviceptr dfence,
			   volatile uint64_t *hfence, uint64_t *base, int k, int host_fn)
{
	unsigned un = (unsigned)(o->bytes / sizeof(float));
	uint64_t called = 0, t0, first = *base;
	double s;

	t0 = now_ns();
	for (int i = 0; i < o->runs; i++) {
		void *args[] = { &dx, &dy, &un };
		uint64_t seq = first + (uint64_t)i + 1;

		while (seq > (uint64_t)k && *hfence < seq - (uint64_t)k)
			;
		CK(drv.cuMemcpyHtoDAsync_v2(dx, hx, o->bytes, st));
		CK(drv.cuLaunchKernel(fn, (un + 255) / 256, 1, 1, 256, 1, 1, 0, st, args, NULL));
		CK(drv.cuMemcpyDtoHAsync_v2(hy, dy, o->bytes, st));
		CK(drv.cuStreamWriteValue64_v2(st, dfence, seq, 0));
		if (host_fn)
			CK(drv.cuLaunchHostFunc(st, floor_host_fn, &called));
	}
	while (*hfence != first + (uint64_t)o->runs)
		;
	CK(drv.cuStreamSynchronize(st));
	s = (double)(now_ns() - t0) / 1e9;
	*base = first + (uint64_t)o->runs;
	printf("floor   in process, %d in flight, %-30s %10.0f runs/s\n", k,
	       host_fn ? "a host function per run:" : "no host function:", o->runs / s);
	return 0;
}

static int floor_run(const struct opts *o)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	size_t n = o->bytes / sizeof(float);
	unsigned un = (unsigned)n;
	int total = WARMUP + o->runs;
	uint64_t *lat = calloc((size_t)o->runs, sizeof(*lat));
	CUdeviceptr dx, dy, dfence;
	CUcontext ctx;
	CUdevice dev;
	CUstream st;
	CUmodule mod;
	CUfunction fn;
	float *hx, *hy;
	volatile uint64_t *hfence;
	int bad = 0;

	if (lib == NULL) {
		printf("floor   (no CUDA driver here: %s)\n", dlerror());
		return 0;
	}
#define X(f) *(void **)&drv.f = dlsym(lib, #f);
	DRIVER_FUNCS(X)
#undef X
	CK(drv.cuInit(0));
	CK(drv.cuDeviceGet(&dev, 0));
	CK(drv.cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(drv.cuCtxSetCurrent(ctx));
	CK(drv.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CK(drv.cuMemAlloc_v2(&dx, o->bytes));
	CK(drv.cuMemAlloc_v2(&dy, o->bytes));
	CK(drv.cuMemHostAlloc((void **)&hx, o->bytes, CU_MEMHOSTALLOC_PORTABLE));
	CK(drv.cuMemHostAlloc((void **)&hy, o->bytes, CU_MEMHOSTALLOC_PORTABLE));
	CK(drv.cuMemHostAlloc((void **)&hfence, 64,
			      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
	CK(drv.cuMemHostGetDevicePointer_v2(&dfence, (void *)hfence, 0));
	CK(drv.cuModuleLoadData(&mod, relu_ptx));
	CK(drv.cuModuleGetFunction(&fn, mod, "relu"));
	*hfence = 0;
	for (size_t i = 0; i < n; i++)
		hx[i] = (float)((int)(i * 7 % 11) - 5);
	for (int i = 0; i < total; i++) {
		void *args[] = { &dx, &dy, &un };
		uint64_t t = now_ns(), seq = (uint64_t)i + 1;

		CK(drv.cuMemcpyHtoDAsync_v2(dx, hx, o->bytes, st));
		CK(drv.cuLaunchKernel(fn, (un + 255) / 256, 1, 1, 256, 1, 1, 0, st, args, NULL));
		CK(drv.cuMemcpyDtoHAsync_v2(hy, dy, o->bytes, st));
		CK(drv.cuStreamWriteValue64_v2(st, dfence, seq, 0));
		while (*hfence != seq)
			;
		if (i >= WARMUP)
			lat[i - WARMUP] = now_ns() - t;
		bad += hy[i % n] != (hx[i % n] > 0 ? hx[i % n] : 0.0f);
	}
	CK(drv.cuStreamSynchronize(st));
	qsort(lat, (size_t)o->runs, sizeof(*lat), cmp_u64);
	printf("floor   in process, driver API, one at a time:  p50 %8.1f us  p99 %8.1f us%s\n",
	       pct_us(lat, (size_t)o->runs, 0.50), pct_us(lat, (size_t)o->runs, 0.99),
	       bad ? "  WRONG OUTPUTS" : "");
	free(lat);
	{
		uint64_t base = (uint64_t)total;
		static const int ks[] = { 1, 8 };

		for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
			for (int h = 0; h < 2; h++)
				if (floor_pipelined(o, st, fn, dx, dy, hx, hy, dfence, hfence, &base,
						    ks[k], h) < 0)
					return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ daemon */

static int parse_list(const char *s, int *out)
{
	int n = 0;

	while (*s && n < MAX_LIST) {
		out[n++] = atoi(s);
		s = strchr(s, ',');
		if (s == NULL)
			break;
		s++;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct opts o = { .backend = "auto", .runs = 20000, .bytes = 4096, .floor = 1 };
	char dir[] = "/tmp/cudaep-datapath-XXXXXX", sock[256], model[512];
	pid_t daemon = 0;

	o.n_clients = parse_list("1,4", o.clients);
	o.n_inflight = parse_list("1,8", o.inflight);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-floor")) {
			o.floor = 0;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "datapath: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--socket"))
			o.socket = v;
		else if (!strcmp(a, "--backend"))
			o.backend = v;
		else if (!strcmp(a, "--clients"))
			o.n_clients = parse_list(v, o.clients);
		else if (!strcmp(a, "--inflight"))
			o.n_inflight = parse_list(v, o.inflight);
		else if (!strcmp(a, "--runs"))
			o.runs = atoi(v);
		else if (!strcmp(a, "--bytes"))
			o.bytes = (size_t)atol(v);
		else if (!strcmp(a, "--bandwidth"))
			o.bandwidth_mib = (size_t)atol(v);
		else {
			fprintf(stderr, "datapath: unknown option %s\n", a);
			return 2;
		}
	}
	if (o.runs < 1 || o.bytes < sizeof(float) || o.bytes % sizeof(float)) {
		fprintf(stderr, "datapath: --runs must be positive, --bytes a multiple of 4\n");
		return 2;
	}
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	if (o.socket == NULL) {
		daemon = bench_daemon_start(sock, sizeof(sock), dir, o.backend);
		if (daemon < 0) {
			fprintf(stderr, "datapath: cudaepd did not start\n");
			return 1;
		}
		o.socket = sock;
	}
	snprintf(model, sizeof(model), "%s/relu.onnx", dir);
	model_write(model, "Relu", (int64_t)(o.bytes / sizeof(float)),
		    (int64_t)(o.bytes / sizeof(float)));
	printf("datapath: Relu over %zu bytes in and out, %d timed runs per client after %d, "
	       "backend %s\n", o.bytes, o.runs, WARMUP, o.backend);
	for (int i = 0; i < o.n_clients; i++)
		for (int j = 0; j < o.n_inflight; j++)
			run_clients(&o, model, o.clients[i], o.inflight[j]);
	if (o.bandwidth_mib)
		run_bandwidth(&o, dir);
	if (daemon > 0) {
		kill(daemon, SIGTERM);
		waitpid(daemon, NULL, 0);
	}
	if (o.floor)
		floor_run(&o);
	unlink(model);
	snprintf(model, sizeof(model), "%s/big.onnx", dir);
	unlink(model);
	rmdir(dir);
	return 0;
}
