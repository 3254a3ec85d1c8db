/*
 * cuda_util.h — helpers of the CUDA backend's unit tests
 * (test_cuda_backend.c, test_cuda_kernels.c, ...): the visible skip
 * unless CUDAEP_TEST_GPU=1 and a device opens, one backend and stream per
 * test, tensors moved to and from the device, a kernel call built from
 * the registry as the planner builds one (with its workspace and every
 * output, beside the reference kernel's results), and the comparison
 * against the reference kernels that prints the worst absolute and
 * relative errors.
 * Header-only and static, so it is linked into no other test.
 */
#ifndef CEP_TESTS_CUDA_UTIL_H
#define CEP_TESTS_CUDA_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "gpu/cuda/cuda_kernels.h"
#include "client/cudaep.h"
#include "engine/exec.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

#define CU_UNUSED __attribute__((unused))

/* Criterion shows skips only when verbose, so the reason goes to stderr
 * too (not through cr_log_warn(), whose warnings make Criterion exit 1). */
#define GPU_SKIP(...)                                   \
	do {                                            \
		fprintf(stderr, "[SKIP] " __VA_ARGS__); \
		fputc('\n', stderr);                    \
		cr_skip_test(__VA_ARGS__);              \
	} while (0)

/* The backend and stream of the running test. */
static struct backend *gpu_be;
static struct backend_stream *gpu_s;

/* Why the GPU tests cannot run here, or "". */
static char gpu_why[400];

/* A kernel cache shared by every test process of the run, so that NVRTC
 * compiles each source once and later processes read it from disk. */
static CU_UNUSED const char *gpu_cache_dir(void)
{
	static char dir[128];

	snprintf(dir, sizeof(dir), "/tmp/cudaep-test-kernels-%u", (unsigned)geteuid());
	return dir;
}

/* Opens the device where GPU tests are asked for. A skip must happen in
 * the test's body (Criterion counts a skip from a suite's .init as a
 * failed run), so this only records why; GPU_REQUIRE() skips. */
static CU_UNUSED void gpu_setup(void)
{
	struct backend_cuda_config cfg;
	const char *on = getenv("CUDAEP_TEST_GPU");

	gpu_why[0] = '\0';
	if (on == NULL || strcmp(on, "1") != 0) {
		snprintf(gpu_why, sizeof(gpu_why), "GPU test skipped: set CUDAEP_TEST_GPU=1 on "
			 "a GPU machine (make test-gpu)");
		return;
	}
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = gpu_cache_dir();
	/* The prebuilt kernels where tests/gpu/run.sh names them, so that a
	 * fresh GPU machine does not compile every kernel again. */
	cfg.kernel_pack = getenv("CUDAEP_TEST_KPACK");
	if (backend_cuda_new_config(&cfg, &gpu_be) != 0) {
		snprintf(gpu_why, sizeof(gpu_why), "GPU test skipped: %s", cep_last_error());
		return;
	}
	cr_assert_eq(backend_stream_new(gpu_be, CEP_PRIORITY_NORMAL, &gpu_s), 0, "%s",
		     cep_last_error());
}

/* The device, or a visible skip: the first line of every GPU test. */
#define GPU_REQUIRE()                            \
	do {                                     \
		if (gpu_why[0] != '\0')          \
			GPU_SKIP("%s", gpu_why); \
	} while (0)

static CU_UNUSED void gpu_teardown(void)
{
	if (gpu_be != NULL) {
		backend_stream_free(gpu_be, gpu_s);
		backend_free(gpu_be);
	}
	gpu_be = NULL;
	gpu_s = NULL;
}

/* Asserts that the CUDA backend has a kernel of op (domain "" for
 * ai.onnx) for each of types[0..n) in exactly the opsets where the host
 * backend has one; returns how many (opset, type) kernels the device has. */
static CU_UNUSED int cuda_covers_host(const char *domain, const char *op, const cep_dtype *types,
				      size_t n)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, covered = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find(domain, op, opset, &s) != 0)
			continue;
		for (t = 0; t < n; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", op, opset,
				     cep_dtype_name(types[t]), has_host, has_dev);
			covered += has_dev;
		}
	}
	return covered;
}

/* ------------------------------------------------------- compiled images */

/* Whether a compiled image (a CUBIN) names the symbol name: the name
 * between NULs in its string table. For the tests that check every
 * kernel a launcher names is compiled, which need no GPU. */
static CU_UNUSED bool cuda_image_has(const void *image, size_t size, const char *name)
{
	char key[128];
	size_t n = strlen(name) + 2;

	cr_assert(n <= sizeof(key), "name too long: %s", name);
	key[0] = '\0';
	memcpy(key + 1, name, n - 1);
	return memmem(image, size, key, n) != NULL;
}

/* The embedded source src_name compiled by NVRTC for sm_90, its size in
 * *size and its compile time printed; the caller frees it. */
static CU_UNUSED void *cuda_compile_90(struct nvrtc_lib *lib, const char *src_name, size_t *size)
{
	struct nvrtc_source src;
	struct timespec t0, t1;
	void *image = NULL;

	cr_assert_eq(cuda_source_get(src_name, &src), 0, "%s", cep_last_error());
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, size), 0, "%s: %s", src_name,
		     cep_last_error());
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("  %s.cu: %zu bytes of cubin in %.2f s\n", src_name, *size,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	return image;
}

/* ---------------------------------------------------------------- tensors */

/* Parses "3,4,5" ("" is a scalar) into t's rank and dims. */
static CU_UNUSED void shape_parse(struct op_tensor *t, const char *shape)
{
	const char *p = shape;

	t->rank = 0;
	while (*p != '\0') {
		t->dims[t->rank++] = strtoll(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
}

static CU_UNUSED unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* Fills t with random values: floats mostly in [-4, 4] with zeros,
 * infinities, NaN, huge and subnormal values among them when specials is
 * set (float64 with bits below float32's, so that a computation in float
 * shows); integers over their whole range with extremes and zeros; bools. */
static CU_UNUSED void fill_random(struct op_tensor *t, unsigned *seed, bool specials)
{
	static const float special_f[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f,
					   -7e4f, 70000.0f, 1e-40f, 3.5f, -2.5f, 0.5f };
	static const int64_t special_i[] = { 0, -1, 1, INT64_MIN, INT64_MAX, INT32_MIN,
					     INT32_MAX, -128, 127, 255 };
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed);

		if (t->dtype == CEP_DTYPE_FLOAT64) {
			double v = (double)(((uint64_t)rnd(seed) << 24) ^ rnd(seed)) * 0x1p-45 - 4.0;

			if (specials && r % 97 < 6)
				v = special_f[(r >> 16) % (sizeof(special_f) / sizeof(special_f[0]))];
			if (specials && r % 97 == 6)
				v = r & 1 ? 1e300 : -4.9e-324;
			((double *)t->data)[i] = v;
		} else if (cpu_is_float(t->dtype)) {
			float v = ((float)(r % 65536) / 8192.0f) - 4.0f;

			if (specials && r % 97 < 6)
				v = special_f[(r >> 16) % (sizeof(special_f) / sizeof(special_f[0]))];
			cpu_store_f(t->data, t->dtype, i, v);
		} else if (t->dtype == CEP_DTYPE_BOOL) {
			((uint8_t *)t->data)[i] = r & 1;
		} else {
			int64_t v = (int64_t)(((uint64_t)rnd(seed) << 40) ^ ((uint64_t)r << 16) ^ rnd(seed));

			if (r % 7 == 0)
				v = special_i[(r >> 8) % (sizeof(special_i) / sizeof(special_i[0]))];
			else if (r % 3 == 0)
				v = (int64_t)(r % 201) - 100;
			cpu_store_i(t->data, t->dtype, i, v);
		}
	}
}

/* A host tensor of dtype and shape, filled at random. */
static CU_UNUSED struct op_tensor host_tensor(cep_dtype dtype, const char *shape,
					      unsigned *seed, bool specials)
{
	struct op_tensor t = { .dtype = dtype };
	size_t bytes;

	shape_parse(&t, shape);
	bytes = op_tensor_bytes(&t);
	t.data = calloc(1, bytes ? bytes : 1);
	cr_assert_not_null(t.data);
	fill_random(&t, seed, specials);
	return t;
}

/* Device memory holding a copy of bytes of host data (bytes may be 0). */
static CU_UNUSED void *dev_put(const void *host, size_t bytes)
{
	void *d = NULL;

	cr_assert_eq(backend_mem_alloc(gpu_be, bytes, &d), 0, "%s", cep_last_error());
	if (bytes)
		cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d, host, bytes), 0, "%s",
			     cep_last_error());
	return d;
}

/* Fills bytes of device memory with 0xa5, so that an element a kernel
 * forgets to write shows. */
static CU_UNUSED void dev_poison(void *d, size_t bytes)
{
	void *junk;

	if (bytes == 0)
		return;
	junk = malloc(bytes);
	memset(junk, 0xa5, bytes);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d, junk, bytes), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	free(junk);
}

static CU_UNUSED void dev_get(void *host, const void *d, size_t bytes)
{
	if (bytes)
		cr_assert_eq(backend_copy_d2h(gpu_be, gpu_s, host, d, bytes), 0, "%s",
			     cep_last_error());
}

/* Frees the data of n host tensors. */
static CU_UNUSED void free_inputs(struct op_tensor *in, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(in[i].data);
}

/* The root mean square of a float tensor's finite elements (1 when it
 * has none): the scale that errors of cancelling sums are measured by. */
static CU_UNUSED double rms(const struct op_tensor *t)
{
	int64_t n = op_dims_product(t, 0, t->rank), i, k = 0;
	double s = 0.0;

	for (i = 0; i < n; i++) {
		double v = cpu_load_f(t->data, t->dtype, i);

		if (isfinite(v)) {
			s += v * v;
			k++;
		}
	}
	return k > 0 && s > 0.0 ? sqrt(s / (double)k) : 1.0;
}

/* ------------------------------------------------------------------ calls */

/* A kernel call on the device as the planner makes one: the node, its
 * inputs in device memory (copies of the host tensors), its output (shape
 * from the schema's inference) in poisoned device memory; prepared. */
struct dev_call {
	struct op_node node;
	const struct op_schema *schema;
	const struct op_kernel *kernel;    /* the cuda one */
	struct op_tensor in[8], out;       /* device pointers */
	struct op_call *call;
};

/* Infers the output of op (opset, attrs) over the host inputs into *out
 * (dtype, rank, dims; no data). */
static CU_UNUSED void infer_out(struct op_node *node, const struct op_schema **schema,
				const struct op_tensor *in, int n_in, struct op_tensor *out)
{
	struct op_infer x = { .node = node, .n_in = n_in, .n_out = 1, .in = in, .out = out };

	cr_assert_eq(op_schema_find(node->domain, node->op_type, node->opset, schema), 0, "%s",
		     cep_last_error());
	memset(out, 0, sizeof(*out));
	cr_assert_eq((*schema)->infer(&x), 0, "%s", cep_last_error());
}

/* Builds and prepares the cuda call of op over the host inputs; returns
 * non-zero (with the registry's message) when there is no cuda kernel. */
static CU_UNUSED int dev_call_make(struct dev_call *d, const char *op, int opset,
				   const struct op_attr *attrs, int n_attrs,
				   const struct op_tensor *in, int n_in)
{
	size_t ws = 0;
	int i, ret;

	memset(d, 0, sizeof(*d));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = "", .opset = opset,
				    .n_attrs = n_attrs, .attrs = attrs };
	infer_out(&d->node, &d->schema, in, n_in, &d->out);
	ret = op_kernel_find(d->schema, opset, BACKEND_CUDA,
			     op_kernel_dtype(d->schema, in, n_in, &d->out, 1), &d->kernel);
	if (ret < 0)
		return ret;
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&d->out), &d->out.data), 0,
		     "%s", cep_last_error());
	dev_poison(d->out.data, op_tensor_bytes(&d->out));
	d->call = calloc(1, sizeof(*d->call));
	d->call->node = &d->node;
	d->call->n_in = n_in;
	d->call->n_out = 1;
	d->call->in = d->in;
	d->call->out = &d->out;
	d->call->be = gpu_be;
	if (d->kernel->prepare != NULL) {
		ret = d->kernel->prepare(d->call, &ws);
		cr_assert_eq(ret, 0, "%s: %s", op, cep_last_error());
	}
	cr_assert_eq(ws, 0, "%s asks for a workspace", op);
	return 0;
}

/* Launches the call on the test's stream. */
static CU_UNUSED int dev_call_launch(struct dev_call *d)
{
	return backend_launch(gpu_be, gpu_s, d->kernel->run, d->call);
}

static CU_UNUSED void dev_call_free(struct dev_call *d)
{
	int i;

	for (i = 0; i < d->call->n_in; i++)
		backend_mem_free(gpu_be, d->in[i].data, op_tensor_bytes(&d->in[i]));
	backend_mem_free(gpu_be, d->out.data, op_tensor_bytes(&d->out));
	free(d->call);
}

/* ------------------------------------------------------------- comparing */

/* Compares got with the reference ref (same dtype and shape): integer and
 * bool types exactly; float types within atol + rtol * |ref|, NaN matching
 * NaN and infinities matching exactly. Prints the worst absolute and
 * relative errors under the label what. Returns the mismatches. */
static CU_UNUSED int64_t compare_tensor(const char *what, const struct op_tensor *ref,
					const void *got, double rtol, double atol)
{
	int64_t n = op_dims_product(ref, 0, ref->rank), i, bad = 0, first = -1;
	double max_abs = 0.0, max_rel = 0.0;

	for (i = 0; i < n; i++) {
		if (cpu_is_float(ref->dtype)) {
			double r = cpu_load_d(ref->data, ref->dtype, i);
			double g = cpu_load_d(got, ref->dtype, i);
			double d = fabs(r - g);

			if (isnan(r) && isnan(g))
				continue;
			if (isinf(r) || isinf(g) || isnan(r) || isnan(g)) {
				if (r != g && bad++ == 0)
					first = i;
				continue;
			}
			if (d > max_abs)
				max_abs = d;
			if (r != 0.0 && d / fabs(r) > max_rel)
				max_rel = d / fabs(r);
			if (d > atol + rtol * fabs(r) && bad++ == 0)
				first = i;
		} else if (cpu_load_i(ref->data, ref->dtype, i) != cpu_load_i(got, ref->dtype, i)) {
			if (bad++ == 0)
				first = i;
		}
	}
	printf("  %-44s %9lld elements  max abs %.3g  max rel %.3g%s\n", what, (long long)n,
	       max_abs, max_rel, bad ? "  MISMATCH" : "");
	if (bad)
		printf("    first mismatch at %lld: want %.17g (%lld), got %.17g (%lld)\n",
		       (long long)first, cpu_load_d(ref->data, ref->dtype, first),
		       (long long)cpu_load_i(ref->data, ref->dtype, first),
		       cpu_load_d(got, ref->dtype, first),
		       (long long)cpu_load_i(got, ref->dtype, first));
	fflush(stdout);
	return bad;
}

/* The tolerance of a float type: float32 results differ from the host's
 * only in the last bits of transcendental functions; float16 and bfloat16
 * results, rounded from those, by at most one unit of their last place;
 * float64 ones, computed in double on both sides, only by the order of a
 * sum (far below what a float32 computation would miss by). */
static CU_UNUSED void tolerance(cep_dtype t, double *rtol, double *atol)
{
	*atol = t == CEP_DTYPE_FLOAT64 ? 1e-12 : 1e-6;
	*rtol = t == CEP_DTYPE_BFLOAT16 ? 1e-2 : t == CEP_DTYPE_FLOAT16 ? 1.5e-3
	      : t == CEP_DTYPE_FLOAT64 ? 1e-12 : 1e-5;
}

/* ---------------------------------------------------- calls with scratch */

/* The calls of kernels with a workspace or several outputs (the tests of
 * test_cuda_red.c and test_cuda_window.c), of up to GPU_MAX_IN inputs. */
#define GPU_MAX_IN 12 /* QLinearConv's 9; variadic ops with 10 */
#define GPU_MAX_OUT 4

/* A call of up to GPU_MAX_OUT outputs, with its workspace, as the planner
 * makes one; the reference outputs computed on the host beside it. */
struct gpu_call {
	struct op_node node;
	const struct op_schema *schema;
	const struct op_kernel *kernel;
	struct op_tensor in[GPU_MAX_IN], out[GPU_MAX_OUT];  /* device pointers */
	struct op_tensor ref[GPU_MAX_OUT];         /* host results */
	struct op_call call;
	int n_in, n_out;
};

/* The call flags gpu_call_make() gives its calls (enum op_call_flags), as
 * the planner sets them from a session's options before prepare(). */
static unsigned gpu_call_flags;

/* gpu_call_make() of op in domain ("" for ai.onnx). */
static CU_UNUSED void gpu_call_make_in(struct gpu_call *d, const char *domain, const char *op,
				       int opset, const struct op_attr *attrs, int n_attrs,
				       const struct op_tensor *in, int n_in, int n_out,
				       int absent)
{
	struct op_infer x = { .node = &d->node, .n_in = n_in, .n_out = n_out, .in = in,
			      .out = d->out };
	void *dev[GPU_MAX_IN + GPU_MAX_OUT];
	const struct op_kernel *host;
	size_t ws = 0;
	int i;

	cr_assert(n_in <= GPU_MAX_IN && n_out <= GPU_MAX_OUT);
	memset(d, 0, sizeof(*d));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = domain,
				    .opset = opset, .n_attrs = n_attrs, .attrs = attrs };
	d->n_in = n_in;
	d->n_out = n_out;
	x.out = d->out;
	cr_assert_eq(op_schema_find(domain, op, opset, &d->schema), 0, "%s", cep_last_error());
	cr_assert_eq(d->schema->infer(&x), 0, "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(d->schema, opset, BACKEND_CUDA,
				    op_kernel_dtype(d->schema, in, n_in, d->out, n_out),
				    &d->kernel), 0, "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(d->schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d->schema, in, n_in, d->out, n_out), &host), 0,
		     "%s", cep_last_error());
	for (i = 0; i < n_out; i++) {
		d->ref[i] = d->out[i];
		d->ref[i].data = NULL;
	}
	cr_assert_eq(exec_host_eval(&d->node, host, in, n_in, d->ref, n_out), 0, "%s",
		     cep_last_error());
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	/* An output the model leaves unnamed: the planner gives it no
	 * tensor at all. */
	if (absent >= 0)
		d->out[absent] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
	for (i = 0; i < n_out; i++) {
		if (i == absent)
			continue;
		cr_assert_eq(backend_mem_alloc(gpu_be, op_tensor_bytes(&d->out[i]), &d->out[i].data),
			     0, "%s", cep_last_error());
		dev_poison(d->out[i].data, op_tensor_bytes(&d->out[i]));
	}
	d->call = (struct op_call){ .node = &d->node, .n_in = n_in, .n_out = n_out, .in = d->in,
				    .out = d->out, .be = gpu_be, .flags = gpu_call_flags };
	/* As the planner does, prepare() sees shapes but no data. */
	for (i = 0; i < n_in; i++) {
		dev[i] = d->in[i].data;
		d->in[i].data = NULL;
	}
	for (i = 0; i < n_out; i++) {
		dev[n_in + i] = d->out[i].data;
		d->out[i].data = NULL;
	}
	if (d->kernel->prepare != NULL)
		cr_assert_eq(d->kernel->prepare(&d->call, &ws), 0, "%s: %s", op, cep_last_error());
	for (i = 0; i < n_in; i++)
		d->in[i].data = dev[i];
	for (i = 0; i < n_out; i++)
		d->out[i].data = dev[n_in + i];
	d->call.workspace_bytes = ws;
	if (ws)
		cr_assert_eq(backend_mem_alloc(gpu_be, ws, &d->call.workspace), 0, "%s",
			     cep_last_error());
}

static CU_UNUSED void gpu_call_make(struct gpu_call *d, const char *op, int opset,
				    const struct op_attr *attrs, int n_attrs,
				    const struct op_tensor *in, int n_in, int n_out,
				    int absent)
{
	gpu_call_make_in(d, "", op, opset, attrs, n_attrs, in, n_in, n_out, absent);
}

static CU_UNUSED void gpu_call_free(struct gpu_call *d)
{
	int i;

	for (i = 0; i < d->n_in; i++)
		backend_mem_free(gpu_be, d->in[i].data, op_tensor_bytes(&d->in[i]));
	for (i = 0; i < d->n_out; i++) {
		if (d->out[i].data)
			backend_mem_free(gpu_be, d->out[i].data, op_tensor_bytes(&d->out[i]));
		free(d->ref[i].data);
	}
	if (d->call.workspace)
		backend_mem_free(gpu_be, d->call.workspace, d->call.workspace_bytes);
}

/* Runs op of domain ("" for ai.onnx) on both backends and compares every
 * output but absent (-1: none), which the device call leaves unnamed, with
 * the tolerance of its type, loosened to rtol_min where that is larger;
 * returns the mismatches. */
static CU_UNUSED int64_t gpu_check_tol_in(const char *domain, const char *op, int opset,
					  const struct op_attr *attrs, int n_attrs,
					  const struct op_tensor *in, int n_in, int n_out,
					  int absent, double rtol_min, const char *label)
{
	struct gpu_call d;
	int64_t bad = 0;
	int i;

	gpu_call_make_in(&d, domain, op, opset, attrs, n_attrs, in, n_in, n_out, absent);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", op,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	for (i = 0; i < n_out; i++) {
		size_t bytes = op_tensor_bytes(&d.ref[i]);
		double rtol, atol;
		char what[200];
		void *got;

		if (i == absent)
			continue;
		got = malloc(bytes ? bytes : 1);
		dev_get(got, d.out[i].data, bytes);
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		tolerance(d.ref[i].dtype, &rtol, &atol);
		if (rtol < rtol_min)
			rtol = rtol_min;
		if (i == 0)
			snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
		else
			snprintf(what, sizeof(what), "%s/%d %s (output %d)", op, opset, label, i);
		bad += compare_tensor(what, &d.ref[i], got, rtol, atol);
		free(got);
	}
	gpu_call_free(&d);
	return bad;
}

/* gpu_check_tol_in() of an ai.onnx operator. */
static CU_UNUSED int64_t gpu_check_tol(const char *op, int opset, const struct op_attr *attrs,
				       int n_attrs, const struct op_tensor *in, int n_in,
				       int n_out, int absent, double rtol_min, const char *label)
{
	return gpu_check_tol_in("", op, opset, attrs, n_attrs, in, n_in, n_out, absent, rtol_min,
				label);
}

static CU_UNUSED int64_t gpu_check_absent(const char *op, int opset,
					  const struct op_attr *attrs, int n_attrs,
					  const struct op_tensor *in, int n_in, int n_out,
					  int absent, const char *label)
{
	return gpu_check_tol(op, opset, attrs, n_attrs, in, n_in, n_out, absent, 0.0, label);
}

static CU_UNUSED int64_t gpu_check(const char *op, int opset, const struct op_attr *attrs,
				   int n_attrs, const struct op_tensor *in, int n_in, int n_out,
				   const char *label)
{
	return gpu_check_absent(op, opset, attrs, n_attrs, in, n_in, n_out, -1, label);
}

/* An int64 host tensor of the n values v (rank 1; rank 0 when n is -1). */
static CU_UNUSED struct op_tensor int64_tensor(const int64_t *v, int n)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_INT64, .rank = n < 0 ? 0 : 1 };
	int count = n < 0 ? 1 : n;

	t.dims[0] = count;
	t.data = calloc(1, sizeof(int64_t) * (size_t)(count ? count : 1));
	cr_assert_not_null(t.data);
	if (count)
		memcpy(t.data, v, sizeof(int64_t) * (size_t)count);
	return t;
}

static CU_UNUSED void free_all(struct op_tensor *in, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(in[i].data);
}

#endif
