/*
 * test_cuda_conv.c — Conv and the internal FusedConv on the device through
 * cuDNN (kernels/cuda/conv.c, gpu/cuda/cudnn.c) against the reference kernels
 * of kernels/cpu/conv.c on fresh random data, printing the worst absolute
 * and relative error of each case: random 1-D, 2-D and 3-D shapes with
 * groups and depthwise, strides, dilations, explicit (often asymmetric)
 * pads and every auto_pad, with and without bias; float32 within 1e-4
 * (TF32 off), float16 and bfloat16 within 1e-2, float32 with TF32 allowed
 * within 1e-3, and within a small fraction of the output's root mean
 * square where sums cancel (conv_tol()); FusedConv with and without Z over an output
 * filled with NaN first; a second plan of one shape reusing the cached
 * cuDNN plan; a captured graph replaying exactly what the eager run
 * computed; a ResNet block through the engine (BatchNormalization folded,
 * FusedConv on the device) matching the host, replayed as a graph with no
 * allocation on the warm path; and a backend whose cuDNN does not load
 * refusing Conv by name while running everything else.
 *
 * Everywhere: the registry gives Conv a CUDA kernel wherever the host has
 * one, and FusedConv one for every float type; a library that cannot be
 * loaded fails with a message that says what was tried; status codes map
 * to the error space; the kernels refuse a backend that is not CUDA. On a
 * GPU machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include "tests/unit/cuda_util.h"

#include "gpu/cuda/cudnn.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

static const cep_dtype float_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16,
};

#define N_FLOATS (sizeof(float_types) / sizeof(float_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_conv, the_device_covers_conv_where_the_host_does)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0, refused = 0;
	size_t t;

	for (opset = 7; opset <= OP_OPSET_MAX; opset++) {
		cr_assert_eq(op_schema_find("", "Conv", opset, &s), 0, "%s", cep_last_error());
		for (t = 0; t < N_FLOATS; t++) {
			if (op_kernel_find(s, opset, BACKEND_HOST, float_types[t], &host) != 0) {
				/* bfloat16 before opset 22: neither has it. */
				cr_assert_neq(op_kernel_find(s, opset, BACKEND_CUDA, float_types[t],
							     &dev), 0);
				refused++;
				continue;
			}
			cr_assert_eq(op_kernel_find(s, opset, BACKEND_CUDA, float_types[t], &dev), 0,
				     "%s", cep_last_error());
			cr_assert_neq(dev, host);
			checked++;
		}
	}
	cr_assert_eq(checked + refused, (OP_OPSET_MAX - 6) * (int)N_FLOATS);
	cr_assert_eq(refused, 22 - 7);
	cr_assert_eq(op_schema_find(OP_DOMAIN_CUDAEP, "FusedConv", 1, &s), 0, "%s",
		     cep_last_error());
	cr_assert(s->flags & OP_INTERNAL);
	for (t = 0; t < N_FLOATS; t++) {
		cr_assert_eq(op_kernel_find(s, 1, BACKEND_HOST, float_types[t], &host), 0);
		cr_assert_eq(op_kernel_find(s, 1, BACKEND_CUDA, float_types[t], &dev), 0);
	}
}

Test(cuda_conv, a_library_that_is_not_there_is_a_clear_error)
{
	struct cudnn_lib *lib = (struct cudnn_lib *)1;
	struct cudnn *dnn = (struct cudnn *)1;

	cr_assert_eq(cudnn_lib_open("/nonexistent/lib64/libcudnn.so.9", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert_eq(strncmp(cep_last_error(), "no cuDNN: ", 10), 0, "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "/nonexistent/lib64/libcudnn.so.9"), "%s",
			   cep_last_error());
	/* The handle fails the same way, before it needs any device: what a
	 * CUDA backend configured with that path says when a plan first
	 * convolves (the GPU test below checks the operator's message). */
	cr_assert_eq(cudnn_new("/nonexistent/libcudnn.so.9", &dnn), CEP_ENOTSUP);
	cr_assert_null(dnn);
	cr_assert_eq(strncmp(cep_last_error(), "no cuDNN: ", 10), 0, "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "/nonexistent/libcudnn.so.9"), "%s",
			   cep_last_error());
}

Test(cuda_conv, a_library_without_the_entry_points_is_named)
{
	struct cudnn_lib *lib = NULL;

	/* A real shared library that is not cuDNN. */
	cr_assert_eq(cudnn_lib_open("libc.so.6", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert_not_null(strstr(cep_last_error(), "no cuDNN: libc.so.6 has no cudnnGetVersion"),
			   "%s", cep_last_error());
}

Test(cuda_conv, a_library_error_names_the_call_and_the_status)
{
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_SUCCESS), 0);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_NOT_SUPPORTED), CEP_ENOTSUP);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_NOT_SUPPORTED_SHAPE), CEP_ENOTSUP);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_BAD_PARAM_NULL_POINTER), CEP_EINVAL);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED),
		     CEP_EDEVMEM);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED),
		     CEP_ENOMEM);
	cr_assert_eq(CEP_DNN_CHECK(NULL, CUDNN_STATUS_EXECUTION_FAILED), CEP_EDEVICE);
	/* The expression as written, where it failed, and the status (by
	 * number when there is no library to name it). */
	cr_assert_not_null(strstr(cep_last_error(), "CUDNN_STATUS_EXECUTION_FAILED failed in "
				  "cuda_conv_a_library_error"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), "test_cuda_conv.c:"), "%s", cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), ": CUDNN_STATUS_5000"), "%s", cep_last_error());
}

Test(cuda_conv, the_installed_library_loads_without_a_device)
{
	struct cudnn_lib *lib = NULL;

	if (cudnn_lib_open(NULL, &lib) != 0)
		GPU_SKIP("no cuDNN on this machine: %s", cep_last_error());
	cr_assert_eq(lib->version / 10000, 9, "version %zu of %s", lib->version, lib->path);
	cr_assert_not_null(lib->cudnnConvolutionBiasActivationForward);
	printf("  cuDNN %zu from %s\n", lib->version, lib->path);
	/* With the library, the status has its own name. */
	cr_assert_eq(CEP_DNN_CHECK(lib, CUDNN_STATUS_BAD_PARAM), CEP_EINVAL);
	cr_assert_not_null(strstr(cep_last_error(), ": CUDNN_STATUS_BAD_PARAM"), "%s",
			   cep_last_error());
	cudnn_lib_free(lib);
}

Test(cuda_conv, the_kernels_refuse_a_backend_that_is_not_cuda)
{
	static const struct {
		const char *domain, *op;
		int opset;
	} ops[] = { { "", "Conv", 13 }, { OP_DOMAIN_CUDAEP, "FusedConv", 1 } };
	struct op_attr act = { .name = "activation", .type = OP_ATTR_STRING, .s = "Relu" };
	struct op_tensor in[3] = {
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 2, 5, 5 } },
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 3, 2, 3, 3 } },
		{ .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 3 } },
	};
	struct op_tensor out = { .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 1, 3, 3, 3 } };
	struct op_node node = { .name = "n" };
	struct op_call *call = calloc(1, sizeof(*call));
	const struct op_schema *s;
	const struct op_kernel *k;
	struct backend *host = NULL;
	size_t ws = 0, i;

	cr_assert_eq(backend_host_new(0, &host), 0, "%s", cep_last_error());
	for (i = 0; i < 2; i++) {
		node.domain = ops[i].domain;
		node.op_type = ops[i].op;
		node.opset = ops[i].opset;
		node.n_attrs = i == 1;
		node.attrs = &act;
		cr_assert_eq(op_schema_find(ops[i].domain, ops[i].op, ops[i].opset, &s), 0);
		cr_assert_eq(op_kernel_find(s, ops[i].opset, BACKEND_CUDA, CEP_DTYPE_FLOAT32, &k), 0);
		memset(call, 0, sizeof(*call));
		*call = (struct op_call){ .node = &node, .n_in = 3, .n_out = 1, .in = in,
					  .out = &out, .be = host };
		cr_assert_eq(k->prepare(call, &ws), CEP_EINVAL);
		cr_assert_eq(strncmp(cep_last_error(), "Conv", 4), 0, "%s", cep_last_error());
		cr_assert_not_null(strstr(cep_last_error(), "cuda backend"), "%s", cep_last_error());
	}
	backend_free(host);
	free(call);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_conv, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* A prepared device call with the workspace its kernel asked for. */
struct conv_call {
	struct dev_call d;
	void *ws;                /* device memory, or NULL */
	size_t ws_bytes;
};

/* Builds and prepares the cuda call of domain/op over the host inputs,
 * with the planner's call flags, its output filled with poison bytes. */
static void conv_call_make(struct conv_call *cc, const char *domain, const char *op, int opset,
			   const struct op_attr *attrs, int n_attrs, const struct op_tensor *in,
			   int n_in, unsigned flags, int poison)
{
	struct dev_call *d = &cc->d;
	size_t bytes;
	void *junk;
	int i;

	memset(cc, 0, sizeof(*cc));
	d->node = (struct op_node){ .name = "n", .op_type = op, .domain = domain, .opset = opset,
				    .n_attrs = n_attrs, .attrs = attrs };
	infer_out(&d->node, &d->schema, in, n_in, &d->out);
	cr_assert_eq(op_kernel_find(d->schema, opset, BACKEND_CUDA, d->out.dtype, &d->kernel), 0,
		     "%s", cep_last_error());
	for (i = 0; i < n_in; i++) {
		d->in[i] = in[i];
		if (op_tensor_present(&in[i]))
			d->in[i].data = dev_put(in[i].data, op_tensor_bytes(&in[i]));
	}
	bytes = op_tensor_bytes(&d->out);
	cr_assert_eq(backend_mem_alloc(gpu_be, bytes, &d->out.data), 0, "%s", cep_last_error());
	junk = malloc(bytes ? bytes : 1);
	memset(junk, poison, bytes);
	if (bytes)
		cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d->out.data, junk, bytes), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	free(junk);
	d->call = calloc(1, sizeof(*d->call));
	d->call->node = &d->node;
	d->call->n_in = n_in;
	d->call->n_out = 1;
	d->call->in = d->in;
	d->call->out = &d->out;
	d->call->be = gpu_be;
	d->call->flags = flags;
	cr_assert_eq(d->kernel->prepare(d->call, &cc->ws_bytes), 0, "%s: %s", op, cep_last_error());
	if (cc->ws_bytes > 0) {
		cr_assert_eq(backend_mem_alloc(gpu_be, cc->ws_bytes, &cc->ws), 0, "%s",
			     cep_last_error());
		d->call->workspace = cc->ws;
		d->call->workspace_bytes = cc->ws_bytes;
	}
}

static void conv_call_free(struct conv_call *cc)
{
	if (cc->ws != NULL)
		backend_mem_free(gpu_be, cc->ws, cc->ws_bytes);
	dev_call_free(&cc->d);
}

/* The tolerances: float32 1e-4, the 16-bit types 1e-2, float32 with TF32
 * 1e-3 of each value; and, where sums cancel, a fraction of the output's
 * root mean square: the same for float32 and float16; 3e-3 for TF32's
 * 10-bit products (four standard deviations of their rounding over a
 * sum); 3e-2 for bfloat16, four units of its last place at that scale,
 * since cuDNN may round the convolution to bfloat16 before it adds the
 * bias, Z or both, where the host rounds once. */
static void conv_tol(cep_dtype t, bool tf32, double *rtol, double *atol_rms)
{
	*rtol = t != CEP_DTYPE_FLOAT32 ? 1e-2 : tf32 ? 1e-3 : 1e-4;
	*atol_rms = t == CEP_DTYPE_BFLOAT16 ? 3e-2 : t == CEP_DTYPE_FLOAT16 ? 1e-2 :
		    tf32 ? 3e-3 : 1e-4;
}

/* Compares the device's output of cc with the host's over the host
 * inputs in (the output already computed and synced: got); returns the
 * mismatches. */
static int64_t conv_compare(struct conv_call *cc, const struct op_tensor *in, int n_in,
			    const void *got, bool tf32, const char *label)
{
	const struct op_kernel *host;
	struct op_tensor ref = cc->d.out;
	double rtol, atol_rms;
	char what[240];
	int64_t bad;

	ref.data = NULL;
	cr_assert_eq(op_kernel_find(cc->d.schema, cc->d.node.opset, BACKEND_HOST, ref.dtype,
				    &host), 0);
	cr_assert_eq(exec_host_eval(&cc->d.node, host, in, n_in, &ref, 1), 0, "%s",
		     cep_last_error());
	conv_tol(ref.dtype, tf32, &rtol, &atol_rms);
	snprintf(what, sizeof(what), "%s %s", cc->d.node.op_type, label);
	bad = compare_tensor(what, &ref, got, rtol, atol_rms * rms(&ref));
	free(ref.data);
	return bad;
}

/* Copies the output of cc back (after syncing the stream). */
static void *conv_get(struct conv_call *cc)
{
	size_t bytes = op_tensor_bytes(&cc->d.out);
	void *got = malloc(bytes ? bytes : 1);

	dev_get(got, cc->d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	return got;
}

/* ---------------------------------------------------------- random cases */

/* A convolution problem with its attributes, as the node will carry them. */
struct conv_case {
	int n;                       /* spatial dims */
	int64_t batch, c, m, group;
	int64_t in[3], k[3], s[3], d[3];
	int64_t pads[6];             /* (2n): begins, then ends */
	const char *auto_pad;        /* NULL: explicit pads */
	bool bias;
	struct op_attr attrs[6];     /* filled by case_attrs() */
	int n_attrs;
	char x_shape[64], w_shape[64], b_shape[16], label[200];
};

static int64_t rnd_in(unsigned *seed, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(seed) % (unsigned)(hi - lo + 1));
}

/* Whether the window fits every padded spatial dim. */
static bool case_fits(const struct conv_case *cc)
{
	int i;

	for (i = 0; i < cc->n; i++) {
		int64_t eff = (cc->k[i] - 1) * cc->d[i] + 1;
		int64_t pads = cc->auto_pad == NULL ? cc->pads[i] + cc->pads[cc->n + i] : 0;

		if (cc->auto_pad != NULL && strncmp(cc->auto_pad, "SAME", 4) == 0)
			continue;
		if (eff > cc->in[i] + pads)
			return false;
	}
	return true;
}

/* The node attributes and shape texts of cc. */
static void case_attrs(struct conv_case *cc)
{
	static const char *const dims[] = { "", "1-D", "2-D", "3-D" };
	int i, a = 0;
	size_t at;

	cc->attrs[a++] = (struct op_attr){ .name = "group", .type = OP_ATTR_INT, .i = cc->group };
	cc->attrs[a++] = (struct op_attr){ .name = "kernel_shape", .type = OP_ATTR_INTS,
					   .n = cc->n, .ints = cc->k };
	cc->attrs[a++] = (struct op_attr){ .name = "strides", .type = OP_ATTR_INTS, .n = cc->n,
					   .ints = cc->s };
	cc->attrs[a++] = (struct op_attr){ .name = "dilations", .type = OP_ATTR_INTS, .n = cc->n,
					   .ints = cc->d };
	if (cc->auto_pad != NULL)
		cc->attrs[a++] = (struct op_attr){ .name = "auto_pad", .type = OP_ATTR_STRING,
						   .s = cc->auto_pad };
	else
		cc->attrs[a++] = (struct op_attr){ .name = "pads", .type = OP_ATTR_INTS,
						   .n = 2 * cc->n, .ints = cc->pads };
	cc->n_attrs = a;
	at = (size_t)snprintf(cc->x_shape, sizeof(cc->x_shape), "%lld,%lld",
			      (long long)cc->batch, (long long)cc->c);
	for (i = 0; i < cc->n; i++)
		at += (size_t)snprintf(cc->x_shape + at, sizeof(cc->x_shape) - at, ",%lld",
				       (long long)cc->in[i]);
	at = (size_t)snprintf(cc->w_shape, sizeof(cc->w_shape), "%lld,%lld", (long long)cc->m,
			      (long long)(cc->c / cc->group));
	for (i = 0; i < cc->n; i++)
		at += (size_t)snprintf(cc->w_shape + at, sizeof(cc->w_shape) - at, ",%lld",
				       (long long)cc->k[i]);
	snprintf(cc->b_shape, sizeof(cc->b_shape), "%lld", (long long)cc->m);
	at = (size_t)snprintf(cc->label, sizeof(cc->label), "%s X[%s] W[%s] g%lld s",
			      dims[cc->n], cc->x_shape, cc->w_shape, (long long)cc->group);
	for (i = 0; i < cc->n; i++)
		at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, "%lld",
				       (long long)cc->s[i]);
	at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, " d");
	for (i = 0; i < cc->n; i++)
		at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, "%lld",
				       (long long)cc->d[i]);
	if (cc->auto_pad != NULL) {
		at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, " %s", cc->auto_pad);
	} else {
		at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, " p");
		for (i = 0; i < 2 * cc->n; i++)
			at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, "%lld",
					       (long long)cc->pads[i]);
	}
	snprintf(cc->label + at, sizeof(cc->label) - at, "%s", cc->bias ? " +B" : "");
}

/* A random case of n spatial dims that fits. */
static void case_random(struct conv_case *cc, int n, unsigned *seed)
{
	static const char *const pads[] = { "SAME_UPPER", "SAME_LOWER", "VALID" };
	int i, kind;

	do {
		memset(cc, 0, sizeof(*cc));
		cc->n = n;
		cc->batch = rnd_in(seed, 1, 2);
		kind = (int)rnd_in(seed, 0, 3);
		if (kind == 2) {
			/* Depthwise, with a channel multiplier of 1 or 2. */
			cc->group = cc->c = rnd_in(seed, 2, 6);
			cc->m = cc->c * rnd_in(seed, 1, 2);
		} else {
			cc->group = kind == 1 ? rnd_in(seed, 2, 3) : 1;
			cc->c = cc->group * rnd_in(seed, 1, 4);
			cc->m = cc->group * rnd_in(seed, 1, 5);
		}
		for (i = 0; i < n; i++) {
			cc->in[i] = n == 3 ? rnd_in(seed, 3, 7) : n == 2 ? rnd_in(seed, 4, 13) :
				    rnd_in(seed, 5, 30);
			cc->k[i] = rnd_in(seed, 1, n == 1 ? 5 : 3);
			cc->s[i] = rnd_in(seed, 1, 2);
			cc->d[i] = rnd_in(seed, 0, 3) == 0 ? 2 : 1;
		}
		kind = (int)rnd_in(seed, 0, 5);
		cc->auto_pad = kind < 3 ? pads[kind] : NULL;
		for (i = 0; i < 2 * n; i++)
			cc->pads[i] = rnd_in(seed, 0, 2);
		cc->bias = rnd_in(seed, 0, 1) == 1;
	} while (!case_fits(cc));
	case_attrs(cc);
}

/* Runs case cc once for dtype at opset on the device and compares with
 * the host; returns the mismatches. */
static int64_t conv_check(struct conv_case *cc, cep_dtype dt, int opset, unsigned flags,
			  unsigned *seed)
{
	struct op_tensor in[3];
	struct conv_call call;
	char label[260];
	int n_in = cc->bias ? 3 : 2;
	int64_t bad;
	void *got;

	in[0] = host_tensor(dt, cc->x_shape, seed, false);
	in[1] = host_tensor(dt, cc->w_shape, seed, false);
	if (cc->bias)
		in[2] = host_tensor(dt, cc->b_shape, seed, false);
	conv_call_make(&call, "", "Conv", opset, cc->attrs, cc->n_attrs, in, n_in, flags, 0xa5);
	cr_assert_eq(dev_call_launch(&call.d), 0, "%s: %s", cc->label, cep_last_error());
	got = conv_get(&call);
	snprintf(label, sizeof(label), "%s/%d%s %s", cep_dtype_name(dt), opset,
		 (flags & OP_CALL_TF32) ? " tf32" : "", cc->label);
	bad = conv_compare(&call, in, n_in, got, (flags & OP_CALL_TF32) != 0, label);
	free(got);
	conv_call_free(&call);
	free_inputs(in, n_in);
	return bad;
}

#define CASES_PER_DIM 14

Test(gpu_conv, random_shapes_in_float32)
{
	/* The shapes are the same on every run, the data new. */
	unsigned shapes = 20261201u, data = 17u ^ (unsigned)getpid();
	struct conv_case cc;
	int64_t bad = 0;
	int n, k;

	GPU_REQUIRE();
	for (n = 1; n <= 3; n++) {
		for (k = 0; k < CASES_PER_DIM; k++) {
			case_random(&cc, n, &shapes);
			bad += conv_check(&cc, CEP_DTYPE_FLOAT32, 11, 0, &data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_conv, random_shapes_in_the_half_types)
{
	unsigned shapes = 424242u, data = 23u ^ (unsigned)getpid();
	struct conv_case cc;
	int64_t bad = 0;
	int n, k;

	GPU_REQUIRE();
	for (n = 1; n <= 3; n++) {
		for (k = 0; k < CASES_PER_DIM; k++) {
			case_random(&cc, n, &shapes);
			bad += conv_check(&cc, CEP_DTYPE_FLOAT16, 11, 0, &data);
			bad += conv_check(&cc, CEP_DTYPE_BFLOAT16, 22, 0, &data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_conv, tf32_stays_within_its_precision)
{
	unsigned shapes = 777u, data = 29u ^ (unsigned)getpid();
	struct conv_case cc;
	int64_t bad = 0;
	int n, k;

	GPU_REQUIRE();
	for (n = 1; n <= 3; n++) {
		for (k = 0; k < CASES_PER_DIM / 2; k++) {
			case_random(&cc, n, &shapes);
			bad += conv_check(&cc, CEP_DTYPE_FLOAT32, 13, OP_CALL_TF32, &data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A fixed case: 2-D, 3x3, pads 1 on every side unless asym, where the
 * begin pads are 0 and the end pads 2 (cuDNN then pads 0 and the pad
 * kernel the rest). */
static void case_fixed(struct conv_case *cc, int64_t batch, int64_t c, int64_t m,
		       int64_t group, int64_t hw, bool asym)
{
	int i;

	memset(cc, 0, sizeof(*cc));
	cc->n = 2;
	cc->batch = batch;
	cc->c = c;
	cc->m = m;
	cc->group = group;
	for (i = 0; i < 2; i++) {
		cc->in[i] = hw;
		cc->k[i] = 3;
		cc->s[i] = cc->d[i] = 1;
		cc->pads[i] = asym ? 0 : 1;
		cc->pads[2 + i] = asym ? 2 : 1;
	}
	cc->bias = true;
	case_attrs(cc);
}

Test(gpu_conv, fused_relu_and_residual_match_the_host)
{
	static const struct {
		int64_t batch, c, m, group, hw;
		bool asym;
	} shapes[] = {
		{ 2, 8, 8, 1, 12, false },    /* a ResNet block's second conv */
		{ 1, 6, 6, 6, 9, false },     /* depthwise */
		{ 2, 4, 4, 2, 7, true },      /* groups, asymmetric pads */
		{ 1, 16, 16, 1, 5, true },
	};
	unsigned seed = 99u ^ (unsigned)getpid();
	struct op_tensor in[4];
	struct conv_case cc;
	struct conv_call call;
	char label[260];
	int64_t bad = 0;
	size_t k, t;
	int with_z;
	void *got;

	GPU_REQUIRE();
	for (t = 0; t < N_FLOATS; t++) {
		for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			for (with_z = 0; with_z < 2; with_z++) {
				int n_in = with_z ? 4 : 3;

				case_fixed(&cc, shapes[k].batch, shapes[k].c, shapes[k].m,
					   shapes[k].group, shapes[k].hw, shapes[k].asym);
				cc.attrs[cc.n_attrs++] = (struct op_attr){
					.name = "activation", .type = OP_ATTR_STRING, .s = "Relu" };
				in[0] = host_tensor(float_types[t], cc.x_shape, &seed, false);
				in[1] = host_tensor(float_types[t], cc.w_shape, &seed, false);
				in[2] = host_tensor(float_types[t], cc.b_shape, &seed, false);
				/* Z is shaped like Y, which the asymmetric pads keep
				 * as large as X. */
				if (with_z) {
					char zs[64];

					snprintf(zs, sizeof(zs), "%lld,%lld,%lld,%lld",
						 (long long)cc.batch, (long long)cc.m,
						 (long long)cc.in[0], (long long)cc.in[1]);
					in[3] = host_tensor(float_types[t], zs, &seed, false);
				}
				/* NaN everywhere in Y first: without Z, cuDNN is handed
				 * Y in Z's place with a factor of 0 and must not read it. */
				conv_call_make(&call, OP_DOMAIN_CUDAEP, "FusedConv", 1, cc.attrs,
					       cc.n_attrs, in, n_in, 0, 0xff);
				cr_assert_eq(dev_call_launch(&call.d), 0, "%s", cep_last_error());
				got = conv_get(&call);
				snprintf(label, sizeof(label), "%s %s%s", cep_dtype_name(float_types[t]),
					 cc.label, with_z ? " +Z" : "");
				bad += conv_compare(&call, in, n_in, got, false, label);
				free(got);
				conv_call_free(&call);
				free_inputs(in, n_in);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_conv, a_second_plan_of_one_shape_hits_the_cache)
{
	unsigned seed = 5u;
	struct op_tensor in[3];
	struct conv_case cc;
	struct conv_call one, two;
	struct cudnn *dnn = NULL;
	size_t before;

	GPU_REQUIRE();
	case_fixed(&cc, 2, 8, 12, 4, 10, true);
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, cc.x_shape, &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT16, cc.w_shape, &seed, false);
	in[2] = host_tensor(CEP_DTYPE_FLOAT16, cc.b_shape, &seed, false);
	cr_assert_eq(cuda_dnn_get(gpu_be, &dnn), 0, "%s", cep_last_error());
	before = cudnn_conv_count(dnn);
	conv_call_make(&one, "", "Conv", 13, cc.attrs, cc.n_attrs, in, 3, 0, 0);
	cr_assert_eq(cudnn_conv_count(dnn), before + 1);
	conv_call_make(&two, "", "Conv", 13, cc.attrs, cc.n_attrs, in, 3, 0, 0);
	cr_assert_eq(cudnn_conv_count(dnn), before + 1, "the second plan built its own");
	cr_assert_eq(memcmp(one.d.call->params, two.d.call->params, OP_PARAMS_BYTES), 0);
	cr_assert_eq(one.ws_bytes, two.ws_bytes);
	/* TF32 is part of the problem: another plan. */
	conv_call_free(&two);
	free_inputs(in, 3);
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, cc.x_shape, &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, cc.w_shape, &seed, false);
	in[2] = host_tensor(CEP_DTYPE_FLOAT32, cc.b_shape, &seed, false);
	conv_call_make(&two, "", "Conv", 13, cc.attrs, cc.n_attrs, in, 3, 0, 0);
	cr_assert_eq(cudnn_conv_count(dnn), before + 2);
	conv_call_free(&two);
	conv_call_make(&two, "", "Conv", 13, cc.attrs, cc.n_attrs, in, 3, OP_CALL_TF32, 0);
	cr_assert_eq(cudnn_conv_count(dnn), before + 3);
	conv_call_free(&one);
	conv_call_free(&two);
	free_inputs(in, 3);
}

Test(gpu_conv, a_captured_graph_replays_what_eager_computed)
{
	unsigned seed = 31337u ^ (unsigned)getpid();
	struct backend_graph *g = NULL;
	struct op_tensor in[3], eager;
	struct conv_case cc;
	struct conv_call call;
	void *got;
	size_t bytes;
	int64_t bad = 0;
	int i;

	GPU_REQUIRE();
	/* Asymmetric pads: the pad kernel and cuDNN both go into the graph. */
	case_fixed(&cc, 2, 6, 10, 2, 11, true);
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, cc.x_shape, &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, cc.w_shape, &seed, false);
	in[2] = host_tensor(CEP_DTYPE_FLOAT32, cc.b_shape, &seed, false);
	conv_call_make(&call, "", "Conv", 13, cc.attrs, cc.n_attrs, in, 3, 0, 0xa5);
	cr_assert_eq(dev_call_launch(&call.d), 0, "%s", cep_last_error());
	eager = call.d.out;
	eager.data = conv_get(&call);
	bytes = op_tensor_bytes(&eager);
	cr_assert_eq(backend_graph_begin(gpu_be, gpu_s), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&call.d), 0, "%s", cep_last_error());
	cr_assert_eq(backend_graph_end(gpu_be, gpu_s, &g), 0, "%s", cep_last_error());
	/* The same inputs: bit for bit what the eager run wrote. */
	dev_poison(call.d.out.data, bytes);
	cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0, "%s", cep_last_error());
	got = conv_get(&call);
	bad += compare_tensor("Conv replay vs eager, same inputs", &eager, got, 0.0, 0.0);
	free(got);
	/* New inputs in the same memory: the host's result again. */
	for (i = 0; i < 3; i++) {
		fill_random(&in[i], &seed, false);
		cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, call.d.in[i].data, in[i].data,
					      op_tensor_bytes(&in[i])), 0);
	}
	dev_poison(call.d.out.data, bytes);
	cr_assert_eq(backend_graph_replay(gpu_be, g, gpu_s), 0, "%s", cep_last_error());
	got = conv_get(&call);
	bad += conv_compare(&call, in, 3, got, false, "float32 replay over new inputs");
	free(got);
	free(eager.data);
	backend_graph_free(gpu_be, g);
	conv_call_free(&call);
	free_inputs(in, 3);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------------ the engine */

/* Random constant data of n floats in [lo, hi). */
static float *frand(int64_t n, unsigned *seed, float lo, float hi)
{
	float *p = malloc(sizeof(float) * (size_t)n);
	int64_t i;

	for (i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * (float)(rnd(seed) % 65536) / 65536.0f;
	return p;
}

/* Adds Conv (3x3, pads 1, 8 -> 8 channels) then BatchNormalization. */
static void model_conv_bn(struct onnxb *b, const char *tag, const char *x, const char *y,
			  unsigned *seed)
{
	static const int64_t p1[4] = { 1, 1, 1, 1 };
	char names[6][16], in[96], c[16];
	static const char *const kinds[6] = { "w", "b", "scale", "beta", "mean", "var" };
	Onnx__NodeProto *n;
	float *d;
	int i;

	for (i = 0; i < 6; i++)
		snprintf(names[i], sizeof(names[i]), "%s%s", kinds[i], tag);
	d = frand(8 * 8 * 9, seed, -0.25f, 0.25f);
	onnxb_init(b, names[0], CEP_DTYPE_FLOAT32, "8,8,3,3", d);
	free(d);
	for (i = 1; i < 6; i++) {
		d = i == 2 ? frand(8, seed, 0.5f, 1.5f) : i == 5 ? frand(8, seed, 0.5f, 2.0f) :
		    frand(8, seed, -0.5f, 0.5f);
		onnxb_init(b, names[i], CEP_DTYPE_FLOAT32, "8", d);
		free(d);
	}
	snprintf(c, sizeof(c), "c%s", tag);
	snprintf(in, sizeof(in), "%s,%s,%s", x, names[0], names[1]);
	n = onnxb_node(b, "Conv", in, c);
	onnxb_attr_ints(n, "pads", 4, p1);
	snprintf(in, sizeof(in), "%s,%s,%s,%s,%s", c, names[2], names[3], names[4], names[5]);
	onnxb_node(b, "BatchNormalization", in, y);
}

/* A ResNet block on x (batch, 8, 16, 16): Conv BN Relu, Conv BN, Add x,
 * Relu; two FusedConv nodes once loaded. */
static engine_model *resnet_model(unsigned *seed)
{
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,8,16,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	model_conv_bn(b, "1", "x", "n1", seed);
	onnxb_node(b, "Relu", "n1", "r1");
	model_conv_bn(b, "2", "r1", "n2", seed);
	onnxb_node(b, "Add", "n2,x", "a");
	onnxb_node(b, "Relu", "a", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(engine_model_node_count(m), 2, "the block is two FusedConv nodes");
	return m;
}

Test(gpu_conv, a_resnet_block_through_the_engine_matches_the_host_and_replays)
{
	unsigned seed = 2718u ^ (unsigned)getpid();
	engine_model *m = resnet_model(&seed);
	struct engine_session_options opts = { 0 }, tf32 = { .precision = CEP_PRECISION_TF32 };
	struct backend_counters warm, later;
	struct engine_stats st;
	int64_t dims[4] = { 2, 8, 16, 16 };
	struct op_tensor x = { .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 2, 8, 16, 16 } };
	struct op_tensor ref = { .dtype = CEP_DTYPE_FLOAT32, .rank = 4, .dims = { 2, 8, 16, 16 } };
	static float xv[2 * 8 * 16 * 16], gy[2 * 8 * 16 * 16], hy[2 * 8 * 16 * 16];
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 4, dims, xv, sizeof(xv) };
	struct engine_output gout = { .name = "y", .data = gy, .capacity = sizeof(gy) };
	struct engine_output hout = { .name = "y", .data = hy, .capacity = sizeof(hy) };
	struct backend *host;
	engine_session *gs, *ts, *hs;
	int64_t bad = 0;
	int run;

	GPU_REQUIRE();
	x.data = xv;
	ref.data = hy;
	cr_assert_eq(backend_host_new(0, &host), 0);
	cr_assert_eq(engine_session_new(m, gpu_be, &opts, &gs), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, gpu_be, &tf32, &ts), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, host, &opts, &hs), 0, "%s", cep_last_error());
	for (run = 0; run < 6; run++) {
		fill_random(&x, &seed, false);
		memset(gy, 0xa5, sizeof(gy));
		cr_assert_eq(eu_run(gs, &in, 1, &gout, 1), 0, "run %d: %s", run,
			     cep_last_error());
		cr_assert_eq(eu_run(hs, &in, 1, &hout, 1), 0, "%s", cep_last_error());
		bad += compare_tensor("engine: ResNet block, float32", &ref, gy, 1e-4,
				      1e-4 * rms(&ref));
		if (run == 2)
			backend_counters_get(gpu_be, &warm);
	}
	backend_counters_get(gpu_be, &later);
	engine_session_stats(gs, &st);
	cr_assert_eq(bad, 0);
	cr_assert_eq(st.capture_failures, 0, "the capture failed: %s", st.capture_error);
	cr_assert_eq(later.allocs, warm.allocs, "the warm path allocates nothing");
	cr_assert_eq(later.replays - warm.replays, 3, "the plan is replayed as a graph");
	cr_assert_eq(later.launches, warm.launches, "no eager launches once captured");
	/* The same model with TF32 allowed, within TF32's precision. */
	for (run = 0; run < 3; run++) {
		fill_random(&x, &seed, false);
		cr_assert_eq(eu_run(ts, &in, 1, &gout, 1), 0, "%s", cep_last_error());
		cr_assert_eq(eu_run(hs, &in, 1, &hout, 1), 0, "%s", cep_last_error());
		bad += compare_tensor("engine: ResNet block, tf32", &ref, gy, 1e-3,
				      3e-3 * rms(&ref));
	}
	cr_assert_eq(bad, 0);
	engine_session_free(gs);
	engine_session_free(ts);
	engine_session_free(hs);
	backend_free(host);
	engine_model_unref(m);
}

/* x (1, 4, 8, 8) -> Conv 4 -> 4 3x3 pads 1 [-> Relu] -> y, or Relu alone. */
static engine_model *small_model(bool conv, bool relu)
{
	static const int64_t p1[4] = { 1, 1, 1, 1 };
	static const float w[4 * 4 * 9];
	struct onnxb *b = onnxb_new(13);
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1,4,8,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	if (conv) {
		onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,4,3,3", w);
		n = onnxb_node(b, "Conv", "x,w", relu ? "c" : "y");
		onnxb_attr_ints(n, "pads", 4, p1);
	}
	if (relu)
		onnxb_node(b, "Relu", conv ? "c" : "x", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Plans and runs m on be; returns engine_run()'s result. */
static int small_run(engine_model *m, struct backend *be)
{
	static float x[4 * 64], y[4 * 64];
	int64_t dims[4] = { 1, 4, 8, 8 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 4, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	engine_session *s = NULL;
	int ret;

	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	ret = eu_run(s, &in, 1, &out, 1);
	engine_session_free(s);
	return ret;
}

Test(gpu_conv, without_cudnn_conv_is_refused_and_the_rest_runs)
{
	static const char *const bogus = "/nonexistent/lib64/libcudnn.so.9";
	struct backend_cuda_config cfg;
	struct backend *be = NULL;
	engine_model *conv, *fused, *relu;

	GPU_REQUIRE();
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = gpu_cache_dir();
	cfg.cudnn_lib = bogus;
	cr_assert_eq(backend_cuda_new_config(&cfg, &be), 0, "%s", cep_last_error());
	conv = small_model(true, false);
	fused = small_model(true, true);
	relu = small_model(false, true);
	cr_assert_eq(engine_model_node_count(fused), 1);
	cr_assert_eq(small_run(conv, be), CEP_ENOTSUP);
	cr_assert_not_null(strstr(cep_last_error(), "Conv: no cuDNN on the cuda backend: "), "%s",
			   cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), bogus), "%s", cep_last_error());
	/* The failure is remembered: said again, not tried again. */
	cr_assert_eq(small_run(fused, be), CEP_ENOTSUP);
	cr_assert_not_null(strstr(cep_last_error(), "Conv (fused with its Relu): no cuDNN on the "
				  "cuda backend: "), "%s", cep_last_error());
	cr_assert_eq(small_run(relu, be), 0, "%s", cep_last_error());
	engine_model_unref(conv);
	engine_model_unref(fused);
	engine_model_unref(relu);
	backend_free(be);
}
