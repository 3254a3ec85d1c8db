/*
 * test_cuda_blas.c — MatMul and Gemm on the device through cuBLASLt
 * (kernels/cuda/matmul.c, gpu/cuda/cublaslt.c) against the reference kernels
 * of kernels/cpu/matmul.c on fresh random data, printing the worst
 * absolute and relative error of each case: square, tall and skinny,
 * K = 1 and K = 0, batched with broadcast batch dims (strided batches,
 * looped groups, a batch folded into M), 1-D operands, Gemm transposed,
 * with scalar, vector and matrix C and with alpha and beta; a captured
 * CUDA graph replaying over new inputs; identical GEMMs sharing one plan;
 * a model through the engine (plan workspace, capture, warm replays).
 * float32 within 1e-4 (TF32 off), float16 and bfloat16 within 1e-2, and
 * within 1e-4 of the output's root mean square where products cancel.
 *
 * Everywhere: the registry gives both operators a CUDA kernel wherever the
 * host has one; a library that cannot be loaded fails with a message that
 * says what was tried; the kernels refuse a backend that is not CUDA. On
 * a GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include "tests/unit/cuda_util.h"

#include "gpu/cuda/cublaslt.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

static const cep_dtype float_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
};

#define N_FLOATS (sizeof(float_types) / sizeof(float_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_blas, the_device_covers_matmul_and_gemm_where_the_host_does)
{
	static const char *const ops[] = { "MatMul", "Gemm" };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t i, t;

	for (i = 0; i < 2; i++) {
		for (opset = 7; opset <= OP_OPSET_MAX; opset++) {
			cr_assert_eq(op_schema_find("", ops[i], opset, &s), 0, "%s",
				     cep_last_error());
			for (t = 0; t < N_FLOATS; t++) {
				cep_dtype dt = float_types[t];

				cr_assert_eq(op_kernel_find(s, opset, BACKEND_HOST, dt, &host), 0);
				cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, dt, &dev), 0, "%s",
					     cep_last_error());
				cr_assert_neq(dev, host);
				checked++;
			}
			/* The host has no integer GEMM, and neither has the device. */
			cr_assert_neq(op_kernel_find(s, opset, BACKEND_CUDA, CEP_DTYPE_INT32, &dev),
				      0);
		}
	}
	cr_assert_eq(checked, 2 * (OP_OPSET_MAX - 6) * (int)N_FLOATS);
}

Test(cuda_blas, a_library_that_is_not_there_is_a_clear_error)
{
	struct cublaslt_lib *lib = (struct cublaslt_lib *)1;
	struct cublaslt *lt = (struct cublaslt *)1;

	cr_assert_eq(cublaslt_lib_open("/nonexistent/lib64/libcublasLt.so.13", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert_eq(strncmp(cep_last_error(), "no cuBLASLt: ", 13), 0, "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "/nonexistent/lib64/libcublasLt.so.13"), "%s",
			   cep_last_error());
	/* The handle fails the same way, before it needs any device. */
	cr_assert_eq(cublaslt_new("/nonexistent/libcublasLt.so", &lt), CEP_ENOTSUP);
	cr_assert_null(lt);
	cr_assert_not_null(strstr(cep_last_error(), "no cuBLASLt: "), "%s", cep_last_error());
}

Test(cuda_blas, a_library_without_the_entry_points_is_named)
{
	struct cublaslt_lib *lib = NULL;

	/* A real shared library that is not cuBLASLt. */
	cr_assert_eq(cublaslt_lib_open("libc.so.6", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert_not_null(strstr(cep_last_error(), "no cuBLASLt: libc.so.6 has no cublasLt"),
			   "%s", cep_last_error());
}

Test(cuda_blas, a_library_error_names_the_call_and_the_status)
{
	cr_assert_eq(CEP_LT_CHECK(NULL, CUBLAS_STATUS_SUCCESS), 0);
	cr_assert_eq(CEP_LT_CHECK(NULL, CUBLAS_STATUS_ALLOC_FAILED), CEP_EDEVMEM);
	cr_assert_eq(CEP_LT_CHECK(NULL, CUBLAS_STATUS_NOT_SUPPORTED), CEP_ENOTSUP);
	cr_assert_eq(CEP_LT_CHECK(NULL, CUBLAS_STATUS_EXECUTION_FAILED), CEP_EDEVICE);
	/* The expression as written, where it failed, and the status's name
	 * (from a built-in list when there is no library to ask). */
	cr_assert_not_null(strstr(cep_last_error(), "CUBLAS_STATUS_EXECUTION_FAILED failed in "
				  "cuda_blas_a_library_error"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "test_cuda_blas.c:"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), ": CUBLAS_STATUS_EXECUTION_FAILED ("), "%s",
			   cep_last_error());
	cr_assert_eq(CEP_LT_CHECK(NULL, (cublasStatus_t)999), CEP_EDEVICE);
	cr_assert_not_null(strstr(cep_last_error(), ": CUBLAS_STATUS_999 ("), "%s",
			   cep_last_error());
}

Test(cuda_blas, the_installed_library_loads_without_a_device)
{
	struct cublaslt_lib *lib = NULL;

	if (cublaslt_lib_open(NULL, &lib) != 0)
		GPU_SKIP("no cuBLASLt on this machine: %s", cep_last_error());
	cr_assert_gt(lib->version, 10000, "version %zu of %s", lib->version, lib->path);
	cr_assert_not_null(lib->cublasLtMatmul);
	printf("  cuBLASLt %zu from %s\n", lib->version, lib->path);
	cublaslt_lib_free(lib);
}

Test(cuda_blas, the_kernels_refuse_a_backend_that_is_not_cuda)
{
	static const char *const ops[] = { "MatMul", "Gemm" };
	const struct op_schema *s;
	const struct op_kernel *k;
	struct op_tensor in[2] = {
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 4, 8 } },
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 8, 3 } },
	};
	struct op_tensor out = { .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 4, 3 } };
	struct op_node node = { .name = "n", .domain = "", .opset = 13 };
	struct op_call *call = calloc(1, sizeof(*call));
	struct backend *host = NULL;
	size_t ws = 0, i;

	cr_assert_eq(backend_host_new(0, &host), 0, "%s", cep_last_error());
	for (i = 0; i < 2; i++) {
		node.op_type = ops[i];
		cr_assert_eq(op_schema_find("", ops[i], 13, &s), 0);
		cr_assert_eq(op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_FLOAT32, &k), 0);
		memset(call, 0, sizeof(*call));
		*call = (struct op_call){ .node = &node, .n_in = 2, .n_out = 1, .in = in,
					  .out = &out, .be = host };
		cr_assert_eq(k->prepare(call, &ws), CEP_EINVAL);
		cr_assert_eq(strncmp(cep_last_error(), ops[i], strlen(ops[i])), 0, "%s",
			     cep_last_error());
		cr_assert_not_null(strstr(cep_last_error(), "cuda backend"), "%s", cep_last_error());
	}
	backend_free(host);
	free(call);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_blas, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* A prepared device call with the workspace its kernel asked for. */
struct blas_call {
	struct dev_call d;
	void *ws;                /* device memory, or NULL */
	size_t ws_bytes;
};

/* dev_call_make() for kernels that take a workspace; the output is
 * poisoned so that an element the GEMM forgets shows. */
static void blas_call_make(struct blas_call *bc, const char *op, int opset,
			   const struct op_attr *attrs, int n_attrs,
			   const struct op_tensor *in, int n_in)
{
	struct dev_call *d = &bc->d;
	int i;

	memset(bc, 0, sizeof(*bc));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = "", .opset = opset,
				    .n_attrs = n_attrs, .attrs = attrs };
	infer_out(&d->node, &d->schema, in, n_in, &d->out);
	cr_assert_eq(op_kernel_find(d->schema, opset, BACKEND_CUDA,
				    op_kernel_dtype(d->schema, in, n_in, &d->out, 1), &d->kernel),
		     0, "%s", cep_last_error());
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
	cr_assert_eq(d->kernel->prepare(d->call, &bc->ws_bytes), 0, "%s: %s", op, cep_last_error());
	cr_assert_leq(bc->ws_bytes, (size_t)32 << 20);
	if (bc->ws_bytes > 0) {
		cr_assert_eq(backend_mem_alloc(gpu_be, bc->ws_bytes, &bc->ws), 0, "%s",
			     cep_last_error());
		d->call->workspace = bc->ws;
		d->call->workspace_bytes = bc->ws_bytes;
	}
}

static void blas_call_free(struct blas_call *bc)
{
	if (bc->ws != NULL)
		backend_mem_free(gpu_be, bc->ws, bc->ws_bytes);
	dev_call_free(&bc->d);
}

/* The tolerance of the issue: float32 with TF32 off 1e-4, the 16-bit
 * types 1e-2 (a unit of their last place where the host and the device
 * round float32 sums that differ in the last bits to different sides). */
static double blas_rtol(cep_dtype t)
{
	return t == CEP_DTYPE_FLOAT32 ? 1e-4 : 1e-2;
}

/* Where a sum cancels, the absolute error is all there is to judge: both
 * sides add in float32, so it stays far below 1e-4 of the output's root
 * mean square for every type; partial sums rounded to a 16-bit type (a
 * split-K reduction in the output type) exceed it. */
#define BLAS_ATOL_RMS 1e-4

/* Compares the device's output of bc with the host's over the host
 * inputs in; returns the mismatches. */
static int64_t blas_compare(struct blas_call *bc, const struct op_tensor *in, int n_in,
			    const char *label)
{
	const struct op_kernel *host;
	struct op_tensor ref = bc->d.out;
	double rtol = blas_rtol(ref.dtype);
	size_t bytes = op_tensor_bytes(&ref);
	void *got = malloc(bytes ? bytes : 1);
	char what[200];
	int64_t bad;

	ref.data = NULL;
	cr_assert_eq(op_kernel_find(bc->d.schema, bc->d.node.opset, BACKEND_HOST, ref.dtype,
				    &host), 0);
	cr_assert_eq(exec_host_eval(&bc->d.node, host, in, n_in, &ref, 1), 0, "%s",
		     cep_last_error());
	dev_get(got, bc->d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "%s/%d %s", bc->d.node.op_type, bc->d.node.opset, label);
	bad = compare_tensor(what, &ref, got, rtol, BLAS_ATOL_RMS * rms(&ref));
	free(got);
	free(ref.data);
	return bad;
}

/* Runs op once on the device and compares it with the host. */
static int64_t check_blas(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			  const struct op_tensor *in, int n_in, const char *label)
{
	struct blas_call bc;
	int64_t bad;

	blas_call_make(&bc, op, opset, attrs, n_attrs, in, n_in);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, bc.d.kernel->run, bc.d.call), 0, "%s: %s", op,
		     cep_last_error());
	bad = blas_compare(&bc, in, n_in, label);
	blas_call_free(&bc);
	return bad;
}

Test(gpu_blas, matmul_of_every_shape_and_type)
{
	static const char *const shapes[][2] = {
		{ "64,64", "64,64" },              /* square */
		{ "1000,16", "16,3" },             /* tall and skinny */
		{ "3,700", "700,5" },              /* long K */
		{ "37,1", "1,45" },                /* K = 1 */
		{ "3,0", "0,4" },                  /* K = 0: zeros */
		{ "0,5", "5,4" },                  /* empty output */
		{ "3,20,30", "3,30,10" },          /* one strided batch */
		{ "5,7,16", "16,9" },              /* batch folded into M */
		{ "7,16", "4,16,9" },              /* one A for a batch of B */
		{ "2,1,8,16", "1,3,16,5" },        /* broadcast: looped groups */
		{ "4,3,8,16", "3,16,5" },          /* B broadcast along the outer dim */
		{ "2,3,1,5,7", "3,4,7,6" },        /* two outer dims */
		{ "16", "5,16,9" },                /* 1-D A */
		{ "6,16", "16" },                  /* 1-D B */
		{ "2,3,16", "16" },                /* 1-D B under a batch */
		{ "33", "33" },                    /* two vectors: a scalar */
		{ "9,13", "13,11" },               /* odd sizes: unaligned rows */
	};
	unsigned seed = 20261130u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t t, k;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			in[0] = host_tensor(float_types[t], shapes[k][0], &seed, false);
			in[1] = host_tensor(float_types[t], shapes[k][1], &seed, false);
			snprintf(label, sizeof(label), "%s [%s] x [%s]",
				 cep_dtype_name(float_types[t]), shapes[k][0], shapes[k][1]);
			bad += check_blas("MatMul", 13, NULL, 0, in, 2, label);
			free_inputs(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_blas, gemm_with_every_kind_of_c)
{
	static const struct {
		const char *a, *b, *c;     /* shapes; c NULL: no C */
		int ta, tb;
		float alpha, beta;
		int opset;
	} cases[] = {
		{ "30,40", "40,50", NULL, 0, 0, 1.0f, 1.0f, 13 },
		{ "40,30", "40,50", NULL, 1, 0, 1.0f, 1.0f, 13 },     /* transA */
		{ "30,40", "50,40", NULL, 0, 1, 1.0f, 1.0f, 13 },     /* transB */
		{ "40,30", "50,40", NULL, 1, 1, 0.5f, 1.0f, 13 },     /* both, alpha */
		{ "30,40", "40,50", "", 0, 0, 1.0f, 1.0f, 13 },       /* scalar C */
		{ "30,40", "40,50", "1", 0, 0, 1.0f, 1.0f, 13 },
		{ "30,40", "40,50", "50", 0, 0, 1.0f, 1.0f, 13 },     /* bias (float32) */
		{ "30,40", "50,40", "1,50", 0, 1, 2.0f, 1.0f, 7 },    /* bias, alpha */
		{ "30,40", "40,50", "50", 0, 0, 0.5f, 2.0f, 13 },     /* vector, beta */
		{ "30,40", "40,50", "30,1", 0, 0, 1.0f, 1.0f, 13 },   /* column */
		{ "30,40", "40,50", "1,1", 0, 0, 1.0f, -1.5f, 13 },
		{ "30,40", "40,50", "30,50", 0, 0, 1.0f, 1.0f, 13 },  /* matrix C */
		{ "40,30", "50,40", "30,50", 1, 1, 0.25f, 3.0f, 11 },
		{ "1,40", "40,50", "1,50", 0, 0, 1.0f, 0.5f, 13 },    /* M = 1: C is M x N */
		{ "30,1", "1,50", "50", 0, 0, 1.0f, 1.0f, 13 },       /* K = 1 */
		{ "30,0", "0,50", "30,50", 0, 0, 1.0f, 2.0f, 13 },    /* K = 0: beta C */
		{ "255,129", "129,63", "63", 0, 0, 1.0f, 1.0f, 13 },  /* odd sizes, bias */
	};
	unsigned seed = 4242u ^ (unsigned)getpid();
	struct op_attr attrs[4] = {
		{ .name = "transA", .type = OP_ATTR_INT },
		{ .name = "transB", .type = OP_ATTR_INT },
		{ .name = "alpha", .type = OP_ATTR_FLOAT },
		{ .name = "beta", .type = OP_ATTR_FLOAT },
	};
	struct op_tensor in[3];
	char label[160];
	int64_t bad = 0;
	size_t t, k;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			int n_in = cases[k].c != NULL ? 3 : 2;

			attrs[0].i = cases[k].ta;
			attrs[1].i = cases[k].tb;
			attrs[2].f = cases[k].alpha;
			attrs[3].f = cases[k].beta;
			in[0] = host_tensor(float_types[t], cases[k].a, &seed, false);
			in[1] = host_tensor(float_types[t], cases[k].b, &seed, false);
			if (n_in == 3)
				in[2] = host_tensor(float_types[t], cases[k].c, &seed, false);
			snprintf(label, sizeof(label), "%s A[%s]%s B[%s]%s C[%s] a=%g b=%g",
				 cep_dtype_name(float_types[t]), cases[k].a, cases[k].ta ? "'" : "",
				 cases[k].b, cases[k].tb ? "'" : "",
				 cases[k].c != NULL ? cases[k].c : "none", cases[k].alpha,
				 cases[k].beta);
			bad += check_blas("Gemm", cases[k].opset, attrs, 4, in, n_in, label);
			free_inputs(in, n_in);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_blas, gemm_with_beta_0_keeps_the_nan_of_0_times_c)
{
	unsigned seed = 77u ^ (unsigned)getpid();
	struct op_attr beta = { .name = "beta", .type = OP_ATTR_FLOAT, .f = 0.0f };
	struct op_tensor in[3];
	int64_t bad = 0, nan = 0, i;
	size_t t;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		in[0] = host_tensor(float_types[t], "24,32", &seed, false);
		in[1] = host_tensor(float_types[t], "32,40", &seed, false);
		/* C with infinities and NaN among its values. */
		in[2] = host_tensor(float_types[t], "24,40", &seed, true);
		for (i = 0; i < 24 * 40; i++)
			nan += !isfinite(cpu_load_f(in[2].data, in[2].dtype, i));
		bad += check_blas("Gemm", 13, &beta, 1, in, 3, cep_dtype_name(float_types[t]));
		free_inputs(in, 3);
	}
	cr_assert_gt(nan, 0, "the data had no NaN or infinity to keep");
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_blas, a_captured_graph_replays_over_new_inputs)
{
	static const struct {
		const char *op, *a, *b, *c;
	} cases[] = {
		{ "MatMul", "2,1,24,32", "1,3,32,20", NULL },  /* looped groups */
		{ "MatMul", "6,24,32", "32,20", NULL },        /* folded */
		{ "Gemm", "24,32", "32,20", "20" },             /* bias epilogue */
		{ "Gemm", "24,32", "32,20", "24,1" },           /* fill, then GEMM */
	};
	unsigned seed = 31337u ^ (unsigned)getpid();
	struct op_tensor in[3];
	struct backend_graph *g = NULL;
	struct blas_call bc;
	char label[160];
	int64_t bad = 0;
	size_t k;
	int n_in, r, i;

	GPU_REQUIRE();
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		n_in = cases[k].c != NULL ? 3 : 2;
		in[0] = host_tensor(CEP_DTYPE_FLOAT32, cases[k].a, &seed, false);
		in[1] = host_tensor(CEP_DTYPE_FLOAT32, cases[k].b, &seed, false);
		if (n_in == 3)
			in[2] = host_tensor(CEP_DTYPE_FLOAT32, cases[k].c, &seed, false);
		blas_call_make(&bc, cases[k].op, 13, NULL, 0, in, n_in);
		/* The engine runs a plan eagerly once, then captures it. */
		cr_assert_eq(backend_launch(gpu_be, gpu_s, bc.d.kernel->run, bc.d.call), 0, "%s",
			     cep_last_error());
		cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
		cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0, "%s", cep_last_error());
		cr_assert_eq(backend_launch(gpu_be, gpu_s, bc.d.kernel->run, bc.d.call), 0, "%s",
			     cep_last_error());
		cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), 0, "%s", cep_last_error());
		for (r = 0; r < 2; r++) {
			/* New data in the same device memory, then the replay. */
			for (i = 0; i < n_in; i++) {
				fill_random(&in[i], &seed, false);
				cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, bc.d.in[i].data,
							      in[i].data, op_tensor_bytes(&in[i])),
					     0);
			}
			dev_poison(bc.d.out.data, op_tensor_bytes(&bc.d.out));
			cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0, "%s",
				     cep_last_error());
			snprintf(label, sizeof(label), "float32 [%s] [%s]%s%s replay %d", cases[k].a,
				 cases[k].b, n_in == 3 ? " C " : "", n_in == 3 ? cases[k].c : "", r);
			bad += blas_compare(&bc, in, n_in, label);
		}
		backend_graph_free(gpu_be, g);
		blas_call_free(&bc);
		free_inputs(in, n_in);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_blas, identical_gemms_share_one_cached_plan)
{
	unsigned seed = 5u;
	struct op_tensor in[2];
	struct blas_call one, two;
	struct cublaslt *lt = NULL;
	size_t before;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "48,80", &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT16, "80,24", &seed, false);
	cr_assert_eq(cuda_blas_get(gpu_be, &lt), 0, "%s", cep_last_error());
	before = cublaslt_gemm_count(lt);
	blas_call_make(&one, "MatMul", 13, NULL, 0, in, 2);
	cr_assert_eq(cublaslt_gemm_count(lt), before + 1);
	blas_call_make(&two, "MatMul", 13, NULL, 0, in, 2);
	cr_assert_eq(cublaslt_gemm_count(lt), before + 1, "the second plan built its own GEMM");
	cr_assert_eq(memcmp(one.d.call->params, two.d.call->params, OP_PARAMS_BYTES), 0);
	blas_call_free(&one);
	blas_call_free(&two);
	free_inputs(in, 2);
}

/* x (4, 8, 32) -> MatMul w1 (32, 24) -> Reshape (32, 24) -> Gemm w2 (24, 10)
 * with the bias c (10) -> y (32, 10): both kernels through the planner,
 * whose workspace and graph capture they use. */
static engine_model *blas_model(unsigned *seed)
{
	static const int64_t shape[2] = { -1, 24 };
	struct op_tensor w1 = host_tensor(CEP_DTYPE_FLOAT32, "32,24", seed, false);
	struct op_tensor w2 = host_tensor(CEP_DTYPE_FLOAT32, "24,10", seed, false);
	struct op_tensor c = host_tensor(CEP_DTYPE_FLOAT32, "10", seed, false);
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "4,8,32");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "32,10");
	onnxb_init(b, "w1", CEP_DTYPE_FLOAT32, "32,24", w1.data);
	onnxb_init(b, "w2", CEP_DTYPE_FLOAT32, "24,10", w2.data);
	onnxb_init(b, "c", CEP_DTYPE_FLOAT32, "10", c.data);
	onnxb_init(b, "shape", CEP_DTYPE_INT64, "2", shape);
	onnxb_node(b, "MatMul", "x,w1", "h");
	onnxb_node(b, "Reshape", "h,shape", "r");
	onnxb_node(b, "Gemm", "r,w2,c", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	free(w1.data);
	free(w2.data);
	free(c.data);
	return m;
}

Test(gpu_blas, a_model_through_the_engine_matches_the_host_and_replays)
{
	unsigned seed = 2718u ^ (unsigned)getpid();
	engine_model *m = blas_model(&seed);
	struct engine_session_options opts = { 0 };
	struct backend_counters warm, later;
	struct op_tensor x = { .dtype = CEP_DTYPE_FLOAT32, .rank = 3, .dims = { 4, 8, 32 } };
	struct op_tensor ref = { .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .dims = { 32, 10 } };
	float xv[4 * 8 * 32], gy[32 * 10], hy[32 * 10];
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 3, x.dims, xv, sizeof(xv) };
	struct engine_output gout = { .name = "y", .data = gy, .capacity = sizeof(gy) };
	struct engine_output hout = { .name = "y", .data = hy, .capacity = sizeof(hy) };
	struct backend *host;
	engine_session *gs, *hs;
	int64_t bad = 0;
	int run;

	GPU_REQUIRE();
	x.data = xv;
	ref.data = hy;
	cr_assert_eq(backend_host_new(0, &host), 0);
	cr_assert_eq(engine_session_new(m, gpu_be, &opts, &gs), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, host, &opts, &hs), 0, "%s", cep_last_error());
	for (run = 0; run < 6; run++) {
		fill_random(&x, &seed, false);
		memset(gy, 0xa5, sizeof(gy));
		cr_assert_eq(eu_run(gs, &in, 1, &gout, 1), 0, "run %d: %s", run,
			     cep_last_error());
		cr_assert_eq(eu_run(hs, &in, 1, &hout, 1), 0, "%s", cep_last_error());
		bad += compare_tensor("engine: MatMul, Reshape, Gemm + bias", &ref, gy, 1e-4,
				      BLAS_ATOL_RMS * rms(&ref));
		if (run == 2)
			backend_counters_get(gpu_be, &warm);
	}
	backend_counters_get(gpu_be, &later);
	cr_assert_eq(bad, 0);
	cr_assert_eq(later.allocs, warm.allocs, "the warm path allocates nothing");
	cr_assert_eq(later.replays - warm.replays, 3, "the plan is replayed as a graph");
	cr_assert_eq(later.launches, warm.launches, "no eager launches once captured");
	engine_session_free(gs);
	engine_session_free(hs);
	backend_free(host);
	engine_model_unref(m);
}
