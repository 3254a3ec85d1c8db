/*
 * test_cuda_convt.c — the CUDA kernels of ConvTranspose
 * (kernels/cuda/conv_transpose.c) and Col2Im (kernels/cuda/col2im.c)
 * against the reference kernels of kernels/cpu on fresh random data,
 * printing the worst absolute and relative error of each call:
 *
 * - ConvTranspose over 1 to 4 spatial dims in float32, float16 and
 *   bfloat16, with random groups, strides, dilations, pads (unequal ends
 *   too), auto_pad, output_padding, output_shape (smaller and larger than
 *   the full result) and bias: through cuDNN where it takes the call,
 *   within cuDNN's tolerance, and on a backend without cuDNN, where the
 *   direct kernel must match the host bit for bit in float32; an empty X
 *   (Y is the bias alone);
 * - Col2Im over 1 to 4 spatial dims in every type, bit for bit, and
 *   values of image_shape and block_shape other than the plan's failing
 *   the run with the operator named;
 * - the model of convt_model.h in fp16 and bf16 sessions on the device
 *   against float32 on the host.
 *
 * Everywhere: the registry gives both a CUDA kernel for each type and
 * opset the host has one for; where NVRTC is installed (no device
 * needed) the kernels the launchers ask for are in the compiled sources;
 * the model is half for the device but for AffineGrid. On a GPU machine
 * with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"
#include "tests/unit/convt_model.h"

#include "gpu/cuda/cudnn.h"
#include "gpu/cuda/nvrtc.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ------------------------------------------------------------ everywhere */

/* The (opset, type) pairs op has a cuda kernel for, asserting that the
 * host has one for exactly the same. */
static int covered(const char *op)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, n = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", op, opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", op, opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			n += has_dev;
		}
	}
	cep__clear_error();
	return n;
}

Test(cuda_convt, the_device_covers_what_the_host_covers)
{
	/* float32 and float16 from 1, bfloat16 from 22. */
	cr_assert_eq(covered("ConvTranspose"), 2 * OP_OPSET_MAX + (OP_OPSET_MAX - 21));
	/* Every type from 18. */
	cr_assert_eq(covered("Col2Im"), 8 * (OP_OPSET_MAX - 17));
}

/* Compiles source src for sm_90 and asserts that it has the kernel
 * prefix_<suffix> of each of the n suffixes. */
static void assert_kernels(struct nvrtc_lib *lib, const char *src, const char *prefix,
			   const char *const *sfx, int n)
{
	struct nvrtc_source s;
	char name[40];
	void *image;
	size_t size;
	int i;

	cr_assert_eq(cuda_source_get(src, &s), 0, "%s", cep_last_error());
	cr_assert_eq(nvrtc_compile(lib, &s, 90, &image, &size), 0, "%s", cep_last_error());
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s_%s", prefix, sfx[i]);
		cr_assert(cuda_image_has(image, size, name), "%s.cu has no kernel %s", src, name);
	}
	free(image);
}

/* Compiling needs NVRTC, not a device. */
Test(cuda_convt, the_kernels_the_launchers_ask_for_exist)
{
	static const char *const fl[] = { "f32", "f16", "bf16" };
	static const char *const every[] = { "f32", "f16", "bf16", "i64", "i32", "i8", "u8",
					     "bool" };
	struct nvrtc_lib *lib = NULL;

	if (nvrtc_lib_open(NULL, &lib) != 0)
		GPU_SKIP("skipped: needs NVRTC (no GPU needed); %s", cep_last_error());
	assert_kernels(lib, "conv_transpose", "convt", fl, 3);
	assert_kernels(lib, "conv_transpose", "convt_crop", fl, 3);
	assert_kernels(lib, "col2im", "col2im", every, 8);
	nvrtc_lib_free(lib);
}

/* Converting for the device needs no device. */
Test(cuda_convt, the_model_is_half_for_the_device_but_affine_grid)
{
	unsigned seed = 61u ^ (unsigned)getpid();
	struct pm_model pm = convt_model(&seed);

	convt_model_half(&pm, CEP_PRECISION_FP16, BACKEND_CUDA);
	convt_model_half(&pm, CEP_PRECISION_BF16, BACKEND_CUDA);
	pm_model_free(&pm);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_convt, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

static int64_t rnd_in(unsigned *seed, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(seed) % (unsigned)(hi - lo + 1));
}

/* Appends ",v" for each of the n values to buf (at *at of len). */
static void dims_text(char *buf, size_t len, size_t *at, const int64_t *v, int n)
{
	int i;

	for (i = 0; i < n && *at < len; i++)
		*at += (size_t)snprintf(buf + *at, len - *at, ",%lld", (long long)v[i]);
}

/* Appends " name" and the n values joined by 'x' ("s2x1") to buf. */
static void list_text(char *buf, size_t len, size_t *at, const char *name, const int64_t *v,
		      int n)
{
	int i;

	if (*at < len)
		*at += (size_t)snprintf(buf + *at, len - *at, " %s", name);
	for (i = 0; i < n && *at < len; i++)
		*at += (size_t)snprintf(buf + *at, len - *at, "%s%lld", i ? "x" : "",
					(long long)v[i]);
}

/* Runs op on the device (with its workspace) and on the host over in,
 * compares within rtol + atol_rms times the reference's root mean square
 * (0 and 0: bit for bit); returns the mismatches. */
static int64_t check_rms(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			 const struct op_tensor *in, int n_in, double rtol, double atol_rms,
			 const char *label)
{
	struct gpu_call d;
	size_t bytes;
	char what[300];
	int64_t bad;
	void *got;

	gpu_call_make(&d, op, opset, attrs, n_attrs, in, n_in, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", label,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", label, cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &d.ref[0], got,
			     rtol, atol_rms > 0.0 ? atol_rms * rms(&d.ref[0]) : 0.0);
	free(got);
	gpu_call_free(&d);
	return bad;
}

/* ------------------------------------------------------------ ConvTranspose */

/* A ConvTranspose problem and the node's attributes. */
struct ct_case {
	int n;                       /* spatial dims */
	int64_t batch, c, mg, group;
	int64_t in[4], k[4], s[4], d[4], op[4], os[4];
	int64_t pads[8];             /* (2n) begins, then ends */
	const char *auto_pad;        /* NULL: explicit pads */
	bool bias, out_shape;
	struct op_attr attrs[8];
	int n_attrs;
	char x_shape[64], w_shape[64], b_shape[16], label[240];
};

/* Whether the inference of the case accepts it (and Y has an element). */
static bool ct_valid(struct ct_case *cc)
{
	struct op_tensor in[2] = { { .dtype = CEP_DTYPE_FLOAT32 }, { .dtype = CEP_DTYPE_FLOAT32 } };
	struct op_tensor out = { 0 };
	struct op_node node = { .name = "n", .op_type = "ConvTranspose", .domain = "",
				.opset = 22, .n_attrs = cc->n_attrs, .attrs = cc->attrs };
	struct op_infer x = { .node = &node, .n_in = 2, .n_out = 1, .in = in, .out = &out };
	const struct op_schema *s;
	bool ok;

	shape_parse(&in[0], cc->x_shape);
	shape_parse(&in[1], cc->w_shape);
	cr_assert_eq(op_schema_find("", "ConvTranspose", 22, &s), 0);
	ok = s->infer(&x) == 0 && op_dims_product(&out, 0, out.rank) > 0 &&
	     op_dims_product(&out, 0, out.rank) < 200000;
	cep__clear_error();
	return ok;
}

static void ct_attrs(struct ct_case *cc)
{
	int a = 0, n = cc->n;
	size_t at;

	cc->attrs[a++] = (struct op_attr){ .name = "group", .type = OP_ATTR_INT, .i = cc->group };
	cc->attrs[a++] = (struct op_attr){ .name = "strides", .type = OP_ATTR_INTS, .n = n,
					   .ints = cc->s };
	cc->attrs[a++] = (struct op_attr){ .name = "dilations", .type = OP_ATTR_INTS, .n = n,
					   .ints = cc->d };
	cc->attrs[a++] = (struct op_attr){ .name = "output_padding", .type = OP_ATTR_INTS,
					   .n = n, .ints = cc->op };
	if (cc->auto_pad != NULL)
		cc->attrs[a++] = (struct op_attr){ .name = "auto_pad", .type = OP_ATTR_STRING,
						   .s = cc->auto_pad };
	else
		cc->attrs[a++] = (struct op_attr){ .name = "pads", .type = OP_ATTR_INTS,
						   .n = 2 * n, .ints = cc->pads };
	if (cc->out_shape)
		cc->attrs[a++] = (struct op_attr){ .name = "output_shape", .type = OP_ATTR_INTS,
						   .n = n, .ints = cc->os };
	cc->n_attrs = a;
	at = (size_t)snprintf(cc->x_shape, sizeof(cc->x_shape), "%lld,%lld",
			      (long long)cc->batch, (long long)cc->c);
	dims_text(cc->x_shape, sizeof(cc->x_shape), &at, cc->in, n);
	at = (size_t)snprintf(cc->w_shape, sizeof(cc->w_shape), "%lld,%lld", (long long)cc->c,
			      (long long)cc->mg);
	dims_text(cc->w_shape, sizeof(cc->w_shape), &at, cc->k, n);
	snprintf(cc->b_shape, sizeof(cc->b_shape), "%lld", (long long)(cc->mg * cc->group));
	at = (size_t)snprintf(cc->label, sizeof(cc->label), "%d-D X[%s] W[%s] g%lld", n,
			      cc->x_shape, cc->w_shape, (long long)cc->group);
	list_text(cc->label, sizeof(cc->label), &at, "s", cc->s, n);
	list_text(cc->label, sizeof(cc->label), &at, "d", cc->d, n);
	list_text(cc->label, sizeof(cc->label), &at, "op", cc->op, n);
	if (cc->auto_pad != NULL)
		at += (size_t)snprintf(cc->label + at, sizeof(cc->label) - at, " %s", cc->auto_pad);
	else
		list_text(cc->label, sizeof(cc->label), &at, "p", cc->pads, 2 * n);
	if (cc->out_shape)
		list_text(cc->label, sizeof(cc->label), &at, "os", cc->os, n);
	snprintf(cc->label + at, sizeof(cc->label) - at, "%s", cc->bias ? " +B" : "");
}

/* A random valid case of n spatial dims. */
static void ct_random(struct ct_case *cc, int n, unsigned *seed)
{
	static const char *const pads[] = { "SAME_UPPER", "SAME_LOWER", "VALID" };
	int i, kind;

	do {
		memset(cc, 0, sizeof(*cc));
		cc->n = n;
		cc->batch = rnd_in(seed, 1, 2);
		cc->group = rnd_in(seed, 0, 2) == 0 ? rnd_in(seed, 2, 3) : 1;
		cc->c = cc->group * rnd_in(seed, 1, 3);
		cc->mg = rnd_in(seed, 1, 3);
		for (i = 0; i < n; i++) {
			int64_t full;

			cc->in[i] = n >= 3 ? rnd_in(seed, 1, 4) : n == 2 ? rnd_in(seed, 1, 9) :
				    rnd_in(seed, 1, 20);
			cc->k[i] = rnd_in(seed, 1, n >= 3 ? 2 : 4);
			cc->s[i] = rnd_in(seed, 1, 3);
			cc->d[i] = rnd_in(seed, 0, 3) == 0 ? 2 : 1;
			/* Below the stride or the dilation. */
			cc->op[i] = rnd_in(seed, 0, 2) == 0 ?
				    rnd_in(seed, 0, (cc->s[i] > cc->d[i] ? cc->s[i] : cc->d[i]) - 1) : 0;
			full = cc->s[i] * (cc->in[i] - 1) + cc->op[i] + (cc->k[i] - 1) * cc->d[i] + 1;
			cc->os[i] = full + rnd_in(seed, -2, 2);
		}
		kind = (int)rnd_in(seed, 0, 6);
		cc->auto_pad = kind < 3 ? pads[kind] : NULL;
		for (i = 0; i < 2 * n; i++)
			cc->pads[i] = rnd_in(seed, 0, 2);
		cc->out_shape = rnd_in(seed, 0, 3) == 0;
		cc->bias = rnd_in(seed, 0, 1) == 1;
		ct_attrs(cc);
	} while (!ct_valid(cc));
}

/* The tolerances of cuDNN's way: as test_cuda_conv.c's (its products may
 * round in another order, and cuDNN rounds a half result before it adds
 * the bias). */
static void ct_tol(cep_dtype t, double *rtol, double *atol_rms)
{
	*rtol = t != CEP_DTYPE_FLOAT32 ? 1e-2 : 1e-4;
	*atol_rms = t == CEP_DTYPE_BFLOAT16 ? 3e-2 : t == CEP_DTYPE_FLOAT16 ? 1e-2 : 1e-4;
}

/* Runs case cc in dtype (exact: the direct kernel, bit for bit where
 * dtype is float32) and returns the mismatches. */
static int64_t ct_check(struct ct_case *cc, cep_dtype dt, bool exact, unsigned *seed)
{
	int opset = dt == CEP_DTYPE_BFLOAT16 ? 22 : 11 + (int)(rnd(seed) % 12);
	int n_in = cc->bias ? 3 : 2;
	struct op_tensor in[3];
	double rtol, atol;
	char label[300];
	int64_t bad;

	in[0] = host_tensor(dt, cc->x_shape, seed, false);
	in[1] = host_tensor(dt, cc->w_shape, seed, false);
	if (cc->bias)
		in[2] = host_tensor(dt, cc->b_shape, seed, false);
	ct_tol(dt, &rtol, &atol);
	/* The direct kernel: the same float32 sums, rounded once for half. */
	if (exact)
		rtol = atol = 0.0;
	snprintf(label, sizeof(label), "%s %s", cep_dtype_name(dt), cc->label);
	bad = check_rms("ConvTranspose", opset, cc->attrs, cc->n_attrs, in, n_in, rtol, atol,
			label);
	free_inputs(in, n_in);
	return bad;
}

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

#define CT_CASES 12

Test(gpu_convt, conv_transpose_through_cudnn_matches_the_host)
{
	/* The shapes are the same on every run, the data new. */
	unsigned shapes = 20261202u, data = 31u ^ (unsigned)getpid();
	struct cudnn *dnn = NULL;
	struct ct_case cc;
	size_t before, t;
	int64_t bad = 0;
	int n, k;

	GPU_REQUIRE();
	cr_assert_eq(cuda_dnn_get(gpu_be, &dnn), 0, "%s", cep_last_error());
	before = cudnn_conv_count(dnn);
	for (n = 1; n <= 4; n++) {
		for (k = 0; k < CT_CASES; k++) {
			ct_random(&cc, n, &shapes);
			for (t = 0; t < 3; t++)
				bad += ct_check(&cc, float_types[t], n == 4, &data);
		}
	}
	printf("  %zu transposed cuDNN plans built\n", cudnn_conv_count(dnn) - before);
	cr_assert_gt(cudnn_conv_count(dnn), before, "cuDNN took none of the 1- to 3-D cases");
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_convt, conv_transpose_without_cudnn_is_the_host_bit_for_bit)
{
	unsigned shapes = 777u, data = 37u ^ (unsigned)getpid();
	struct backend_cuda_config cfg;
	struct backend *be = NULL, *keep_be = gpu_be;
	struct backend_stream *s = NULL, *keep_s = gpu_s;
	struct ct_case cc;
	int64_t bad = 0;
	size_t t;
	int n, k;

	GPU_REQUIRE();
	backend_cuda_config_init(&cfg);
	cfg.cache_dir = gpu_cache_dir();
	cfg.cudnn_lib = "/nonexistent/lib64/libcudnn.so.9";
	cr_assert_eq(backend_cuda_new_config(&cfg, &be), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_new(be, CEP_PRIORITY_NORMAL, &s), 0, "%s", cep_last_error());
	gpu_be = be;
	gpu_s = s;
	for (n = 1; n <= 3; n++) {
		for (k = 0; k < CT_CASES; k++) {
			ct_random(&cc, n, &shapes);
			for (t = 0; t < 3; t++)
				bad += ct_check(&cc, float_types[t], true, &data);
		}
	}
	gpu_be = keep_be;
	gpu_s = keep_s;
	backend_stream_free(be, s);
	backend_free(be);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Fixed cases at the edges: the ONNX examples' shapes, pads at one end
 * only, an output_shape far past the full result, a 1x1 kernel with
 * stride 3 (most outputs the bias alone), depthwise groups, an empty X
 * whose Y is the bias alone, an empty batch. */
Test(gpu_convt, conv_transpose_edges)
{
	static const int64_t s1[1] = { 1 }, s2[2] = { 2, 2 }, s3[2] = { 3, 3 };
	static const int64_t p_one_end[4] = { 0, 2, 1, 0 }, op1[2] = { 1, 1 };
	static const int64_t os_big[2] = { 15, 13 }, k33[2] = { 3, 3 };
	unsigned seed = 41u ^ (unsigned)getpid();
	struct {
		const char *x, *w, *b;
		struct op_attr attrs[4];
		int n_attrs;
	} cases[] = {
		{ "1,1,3,3", "1,2,3,3", NULL, { { .name = "strides", .type = OP_ATTR_INTS, .n = 2,
						  .ints = s2 } }, 1 },
		{ "2,3,4,5", "3,2,3,3", "2", {
			{ .name = "strides", .type = OP_ATTR_INTS, .n = 2, .ints = s2 },
			{ .name = "pads", .type = OP_ATTR_INTS, .n = 4, .ints = p_one_end },
			{ .name = "output_padding", .type = OP_ATTR_INTS, .n = 2, .ints = op1 } }, 3 },
		{ "1,2,4,3", "2,3,3,3", "3", {
			{ .name = "strides", .type = OP_ATTR_INTS, .n = 2, .ints = s2 },
			{ .name = "output_shape", .type = OP_ATTR_INTS, .n = 2, .ints = os_big },
			{ .name = "auto_pad", .type = OP_ATTR_STRING, .s = "SAME_UPPER" } }, 3 },
		{ "2,4,3,3", "4,1,1,1", "4", {
			{ .name = "strides", .type = OP_ATTR_INTS, .n = 2, .ints = s3 },
			{ .name = "group", .type = OP_ATTR_INT, .i = 4 } }, 2 },
		{ "1,6,5,5", "6,2,3,3", "12", {
			{ .name = "group", .type = OP_ATTR_INT, .i = 6 },
			{ .name = "kernel_shape", .type = OP_ATTR_INTS, .n = 2, .ints = k33 } }, 2 },
		{ "1,2,0", "2,3,4", "3", { { .name = "strides", .type = OP_ATTR_INTS, .n = 1,
					     .ints = s1 } }, 1 },
		{ "0,2,3,3", "2,3,3,3", "3", { { .name = "strides", .type = OP_ATTR_INTS, .n = 2,
						 .ints = s2 } }, 1 },
	};
	int64_t bad = 0;
	size_t i, t;

	GPU_REQUIRE();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (t = 0; t < 3; t++) {
			cep_dtype dt = float_types[t];
			int n_in = cases[i].b ? 3 : 2;
			struct op_tensor in[3];
			double rtol, atol;
			char label[160];

			in[0] = host_tensor(dt, cases[i].x, &seed, false);
			in[1] = host_tensor(dt, cases[i].w, &seed, false);
			if (cases[i].b)
				in[2] = host_tensor(dt, cases[i].b, &seed, false);
			ct_tol(dt, &rtol, &atol);
			snprintf(label, sizeof(label), "%s X[%s] W[%s]%s edge %zu", cep_dtype_name(dt),
				 cases[i].x, cases[i].w, cases[i].b ? " +B" : "", i);
			bad += check_rms("ConvTranspose", dt == CEP_DTYPE_BFLOAT16 ? 22 : 11,
					 cases[i].attrs, cases[i].n_attrs, in, n_in, rtol, atol, label);
			free_inputs(in, n_in);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* ------------------------------------------------------------------ Col2Im */

struct c2i_case {
	int n;
	int64_t batch, c;
	int64_t image[4], block[4], s[4], d[4], pads[8];
	int64_t ks, l;
	struct op_attr attrs[3];
	char x_shape[48], label[200];
};

/* A random case of n spatial dims whose blocks fit. */
static void c2i_random(struct c2i_case *cc, int n, unsigned *seed)
{
	bool fits;
	size_t at;
	int i;

	do {
		memset(cc, 0, sizeof(*cc));
		cc->n = n;
		cc->batch = rnd_in(seed, 1, 2);
		cc->c = rnd_in(seed, 1, 3);
		cc->ks = cc->l = 1;
		fits = true;
		for (i = 0; i < n; i++) {
			cc->image[i] = n >= 3 ? rnd_in(seed, 1, 6) : rnd_in(seed, 1, 12);
			cc->block[i] = rnd_in(seed, 1, 3);
			cc->s[i] = rnd_in(seed, 1, 3);
			cc->d[i] = rnd_in(seed, 1, 2);
			cc->pads[i] = rnd_in(seed, 0, 2);
			cc->pads[n + i] = rnd_in(seed, 0, 2);
		}
		for (i = 0; i < n; i++) {
			int64_t eff = (cc->block[i] - 1) * cc->d[i] + 1;
			int64_t span = cc->image[i] + cc->pads[i] + cc->pads[n + i] - eff;

			fits &= span >= 0;
			if (span >= 0)
				cc->l *= span / cc->s[i] + 1;
			cc->ks *= cc->block[i];
		}
	} while (!fits);
	cc->attrs[0] = (struct op_attr){ .name = "strides", .type = OP_ATTR_INTS, .n = n,
					 .ints = cc->s };
	cc->attrs[1] = (struct op_attr){ .name = "dilations", .type = OP_ATTR_INTS, .n = n,
					 .ints = cc->d };
	cc->attrs[2] = (struct op_attr){ .name = "pads", .type = OP_ATTR_INTS, .n = 2 * n,
					 .ints = cc->pads };
	snprintf(cc->x_shape, sizeof(cc->x_shape), "%lld,%lld,%lld", (long long)cc->batch,
		 (long long)(cc->c * cc->ks), (long long)cc->l);
	at = (size_t)snprintf(cc->label, sizeof(cc->label), "%d-D X[%s]", n, cc->x_shape);
	list_text(cc->label, sizeof(cc->label), &at, "image", cc->image, n);
	list_text(cc->label, sizeof(cc->label), &at, "block", cc->block, n);
	list_text(cc->label, sizeof(cc->label), &at, "s", cc->s, n);
	list_text(cc->label, sizeof(cc->label), &at, "d", cc->d, n);
	list_text(cc->label, sizeof(cc->label), &at, "p", cc->pads, 2 * n);
}

Test(gpu_convt, col2im_matches_the_host_in_every_type)
{
	unsigned shapes = 4242u, data = 43u ^ (unsigned)getpid();
	struct c2i_case cc;
	int64_t bad = 0;
	size_t t;
	int n, k;

	GPU_REQUIRE();
	for (n = 1; n <= 4; n++) {
		for (k = 0; k < 8; k++) {
			c2i_random(&cc, n, &shapes);
			for (t = 0; t < N_TYPES; t++) {
				struct op_tensor in[3];
				char label[260];

				in[0] = host_tensor(all_types[t], cc.x_shape, &data, true);
				in[1] = int64_tensor(cc.image, n);
				in[2] = int64_tensor(cc.block, n);
				snprintf(label, sizeof(label), "%s %s", cep_dtype_name(all_types[t]),
					 cc.label);
				bad += check_rms("Col2Im", 18, cc.attrs, 3, in, 3, 0.0, 0.0, label);
				free_all(in, 3);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Values read at run time that do not make the plan's shapes. */
Test(gpu_convt, col2im_values_other_than_the_plans_fail_the_run)
{
	static const int64_t image[2] = { 4, 4 }, block[2] = { 2, 2 };
	static const int64_t other_block[2] = { 3, 1 }, other_image[2] = { 4, 5 };
	static const int64_t zero_block[2] = { 0, 2 };
	unsigned seed = 47u ^ (unsigned)getpid();
	struct op_tensor in[3];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "1,8,9", &seed, false);
	in[1] = int64_tensor(image, 2);
	in[2] = int64_tensor(block, 2);
	gpu_call_make(&d, "Col2Im", 18, NULL, 0, in, 3, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, other_block,
				      sizeof(other_block)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Col2Im: the values of its inputs give 6 elements along "
			 "dimension 1, where the plan made for the shapes has 8");
	printf("  a bad block_shape: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, zero_block,
				      sizeof(zero_block)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Col2Im: the value 0 read at run time for dimension 0 "
			 "is not allowed");
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, block, sizeof(block)), 0);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, other_image,
				      sizeof(other_image)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Col2Im: the values of its inputs give 5 elements along "
			 "dimension 3, where the plan made for the shapes has 4");
	printf("  a bad image_shape: %s\n", cep_last_error());
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, image, sizeof(image)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 3);
}

/* ------------------------------------------------------------ half sessions */

/* The model of convt_model.h in fp16 and bf16 on the device against
 * float32 on the host, and in float32 on both. */
Test(gpu_convt, half_sessions_on_the_device)
{
	unsigned seed = 53u ^ (unsigned)getpid();
	struct pm_model pm;
	struct backend *host;
	cep_precision p;

	GPU_REQUIRE();
	pm = convt_model(&seed);
	cr_assert_eq(backend_host_new(0, &host), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++)
		pm_compare(&pm, gpu_be, p, host, &seed, 3, p == CEP_PRECISION_FP16 ? 5e-3 : 3e-2);
	pm_compare(&pm, gpu_be, CEP_PRECISION_FP32, host, &seed, 2, 1e-5);
	backend_free(host);
	pm_model_free(&pm);
}
