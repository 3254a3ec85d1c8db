/*
 * test_cuda_index.c — the CUDA kernels of kernels/cuda/index and
 * depth_space (GatherND, ScatterND, ScatterElements, Scatter,
 * DepthToSpace, SpaceToDepth) against the reference kernels of
 * kernels/cpu on fresh random data, specials included, printing the worst
 * absolute and relative error of each case. The device must give the
 * host's bits: every kernel here only moves elements or folds them in the
 * host's order, so floats are compared exactly too (NaN matching NaN).
 * Scatter indices are drawn from a few values so that they repeat: with
 * reduction none the last update must win, and float sums and products
 * must round as the host's do. An index out of range fails the run with
 * the host's message.
 *
 * Everywhere NVRTC is installed (no GPU needed): every kernel the
 * launchers ask for by name is in the compiled sources. On a GPU machine
 * with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include <time.h>

#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
	CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT64,
	CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

static const char *const reds[] = { "none", "add", "mul", "max", "min" };
#define N_REDS (sizeof(reds) / sizeof(reds[0]))

/* ------------------------------------------------------------ everywhere */

/* The names kernels/cuda/index.c and depth_space.c build. */
Test(index_nvrtc, every_kernel_the_launchers_name_is_compiled)
{
	static const char *const isfx[2] = { "i32", "i64" };
	static const int units[4] = { 1, 2, 4, 8 };
	struct nvrtc_lib *lib = NULL;
	void *image, *wide;
	size_t size, wide_size, t, r, i, n = 0;
	char name[96];

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	image = cuda_compile_90(lib, "index", &size);
	wide = cuda_compile_90(lib, "index_wide", &wide_size);
	for (i = 0; i < 4; i++, n++) {
		snprintf(name, sizeof(name), "gather_nd_%d", units[i]);
		cr_assert(cuda_image_has(image, size, name), "%s", name);
	}
	for (t = 0; t < N_TYPES; t++) {
		/* The scatters of the types that joined later are index_wide's. */
		bool w = cuda_dtype_wide(all_types[t]);
		const void *img = w ? wide : image;
		size_t sz = w ? wide_size : size;

		for (r = 0; r < N_REDS; r++) {
			const char *sfx = cuda_dtype_suffix(all_types[t]);

			snprintf(name, sizeof(name), "scatter_nd_%s_%s", reds[r], sfx);
			cr_assert(cuda_image_has(img, sz, name), "%s", name);
			for (i = 0; i < 2; i++) {
				snprintf(name, sizeof(name), "scatter_elements_%s_%s_%s", reds[r], sfx,
					 isfx[i]);
				cr_assert(cuda_image_has(img, sz, name), "%s", name);
			}
			n += 3;
		}
	}
	free(image);
	free(wide);
	image = cuda_compile_90(lib, "depth_space", &size);
	for (i = 0; i < 4; i++, n++) {
		snprintf(name, sizeof(name), "depth_space_%d", units[i]);
		cr_assert(cuda_image_has(image, size, name), "%s", name);
	}
	free(image);
	printf("  %zu kernels found\n", n);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_index, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* An index tensor (int64, or int32 when i32) of shape whose last
 * dimension, when tuple is set, holds tuples: entry d of a tuple is drawn
 * from [-bound[d], bound[d]); without tuple every element from
 * [-bound[0], bound[0]). With few set, only from 3 values (repeats). */
static struct op_tensor indices(const char *shape, const int64_t *bound, bool tuple,
				bool i32, bool few, unsigned *seed)
{
	struct op_tensor t = { .dtype = i32 ? CEP_DTYPE_INT32 : CEP_DTYPE_INT64 };
	int64_t n, i;

	shape_parse(&t, shape);
	n = op_dims_product(&t, 0, t.rank);
	t.data = calloc(1, (size_t)(n ? n : 1) * 8);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++) {
		int64_t b = bound[tuple ? i % t.dims[t.rank - 1] : 0];
		int64_t v = (int64_t)(rnd(seed) % (unsigned)(2 * b)) - b;

		if (few)
			v = (int64_t)(rnd(seed) % 3) - 1; /* -1, 0, 1 */
		cpu_store_i(t.data, t.dtype, i, v);
	}
	return t;
}

/* Runs op on both backends over in and compares bit for bit (NaN
 * matching NaN); returns the mismatches. */
static int64_t check_exact(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			   const struct op_tensor *in, int n_in, const char *label)
{
	struct gpu_call d;
	char what[200];
	int64_t bad;
	size_t bytes;
	void *got;

	gpu_call_make(&d, op, opset, attrs, n_attrs, in, n_in, 1, -1);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s: %s", op,
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	bytes = op_tensor_bytes(&d.ref[0]);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out[0].data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &d.ref[0], got, 0.0, 0.0);
	free(got);
	gpu_call_free(&d);
	return bad;
}

/* The first opset of op that takes dtype (bfloat16 from 13). */
static int opset_for(cep_dtype dtype, int opset)
{
	return dtype == CEP_DTYPE_BFLOAT16 && opset < 13 ? 13 : opset;
}

Test(gpu_index, gather_nd_matches_the_host)
{
	static const struct {
		const char *data, *idx;
		int batch_dims;
		int64_t bound[3];
	} cases[] = {
		{ "5,7", "6,2", 0, { 5, 7 } },
		{ "5,7,33", "4,3,1", 0, { 5 } },
		{ "3,4,5,6", "3,8,2", 1, { 4, 5 } },
		{ "2,3,4,16", "2,3,5,1", 2, { 4 } },
		{ "64,128", "1000,2", 0, { 64, 128 } },
		{ "2,300,77", "2,40,1", 1, { 300 } },
	};
	unsigned seed = 20240711u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_TYPES; t++) {
			struct op_attr b = { .name = "batch_dims", .type = OP_ATTR_INT,
					     .i = cases[c].batch_dims };
			struct op_tensor in[2];
			char label[96];

			in[0] = host_tensor(all_types[t], cases[c].data, &seed, true);
			in[1] = indices(cases[c].idx, cases[c].bound, true, false, false, &seed);
			snprintf(label, sizeof(label), "%s %s by %s b=%d", cep_dtype_name(all_types[t]),
				 cases[c].data, cases[c].idx, cases[c].batch_dims);
			bad += check_exact("GatherND", opset_for(all_types[t], 12), &b, 1, in, 2,
					   label);
			free_inputs(in, 2);
		}
	}
	cr_assert_eq(bad, 0);
}

Test(gpu_index, scatter_nd_matches_the_host_with_duplicates)
{
	/* Tuples picking elements (slices of 1: the parts path), rows and
	 * planes; few: indices from three values, so they repeat. */
	static const struct {
		const char *data, *idx, *upd;
		int64_t bound[3];
		bool few;
	} cases[] = {
		{ "9,11", "500,2", "500", { 9, 11 }, false },
		{ "4,5,6", "300,3", "300", { 4, 5, 6 }, true },
		{ "8,33", "20,1", "20,33", { 8 }, false },
		{ "6,4,70", "3,5,2", "3,5,70", { 6, 4 }, true },
		{ "1000", "4000,1", "4000", { 1000 }, false },
		{ "16,16,16", "2,1", "2,16,16", { 16 }, true },
	};
	unsigned seed = 20240712u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t, r;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_TYPES; t++) {
			for (r = 0; r < N_REDS; r++) {
				struct op_attr red = { .name = "reduction", .type = OP_ATTR_STRING,
						       .s = reds[r] };
				struct op_tensor in[3];
				char label[128];

				in[0] = host_tensor(all_types[t], cases[c].data, &seed, true);
				in[1] = indices(cases[c].idx, cases[c].bound, true, false,
						cases[c].few, &seed);
				in[2] = host_tensor(all_types[t], cases[c].upd, &seed, true);
				snprintf(label, sizeof(label), "%s %s %s by %s",
					 cep_dtype_name(all_types[t]), reds[r], cases[c].data,
					 cases[c].idx);
				bad += check_exact("ScatterND", 18, &red, 1, in, 3, label);
				free_inputs(in, 3);
			}
		}
	}
	cr_assert_eq(bad, 0);
}

Test(gpu_index, scatter_elements_matches_the_host_with_duplicates)
{
	static const struct {
		const char *data, *idx;
		int axis;
		bool few;
	} cases[] = {
		{ "5000", "3000", 0, true },            /* one line: the parts path */
		{ "7,9", "7,9", 0, false },
		{ "7,9", "5,20", 1, true },
		{ "4,6,8", "3,6,30", -1, false },
		{ "4,6,8", "4,40,8", 1, true },
		{ "128,256", "128,64", 1, false },
	};
	unsigned seed = 20240713u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t, r;
	int i32;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_TYPES; t++) {
			for (r = 0; r < N_REDS; r++) {
				for (i32 = 0; i32 < 2; i32++) {
					struct op_attr a[2] = {
						{ .name = "axis", .type = OP_ATTR_INT, .i = cases[c].axis },
						{ .name = "reduction", .type = OP_ATTR_STRING,
						  .s = reds[r] },
					};
					struct op_tensor in[3];
					char label[128];
					int64_t bound;

					in[0] = host_tensor(all_types[t], cases[c].data, &seed, true);
					bound = in[0].dims[cases[c].axis < 0 ?
							   cases[c].axis + in[0].rank : cases[c].axis];
					in[1] = indices(cases[c].idx, &bound, false, i32, cases[c].few,
							&seed);
					in[2] = host_tensor(all_types[t], cases[c].idx, &seed, true);
					snprintf(label, sizeof(label), "%s %s %s by %s axis %d %s",
						 cep_dtype_name(all_types[t]), reds[r], cases[c].data,
						 cases[c].idx, cases[c].axis, i32 ? "int32" : "int64");
					bad += check_exact("ScatterElements", 18, a, 2, in, 3, label);
					/* The old Scatter, without reduction, on the same
					 * kernel. */
					if (r == 0 && all_types[t] != CEP_DTYPE_BFLOAT16)
						bad += check_exact("Scatter", 10, a, 1, in, 3, label);
					free_inputs(in, 3);
				}
			}
		}
	}
	cr_assert_eq(bad, 0);
}

Test(gpu_index, depth_to_space_and_back_match_the_host)
{
	static const struct {
		const char *op, *x;
		int64_t bs;
	} cases[] = {
		{ "DepthToSpace", "1,8,3,5", 2 },
		{ "DepthToSpace", "2,36,7,4", 3 },
		{ "DepthToSpace", "4,256,16,16", 4 },
		{ "SpaceToDepth", "1,3,6,10", 2 },
		{ "SpaceToDepth", "2,5,9,12", 3 },
		{ "SpaceToDepth", "4,16,64,64", 4 },
	};
	static const char *const modes[2] = { "DCR", "CRD" };
	unsigned seed = 20240714u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t;
	int m;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_TYPES; t++) {
			for (m = 0; m < 2; m++) {
				struct op_attr a[2] = {
					{ .name = "blocksize", .type = OP_ATTR_INT, .i = cases[c].bs },
					{ .name = "mode", .type = OP_ATTR_STRING, .s = modes[m] },
				};
				struct op_tensor x = host_tensor(all_types[t], cases[c].x, &seed, true);
				char label[96];

				snprintf(label, sizeof(label), "%s %s bs %lld %s",
					 cep_dtype_name(all_types[t]), cases[c].x,
					 (long long)cases[c].bs, modes[m]);
				bad += check_exact(cases[c].op, 28, a, 2, &x, 1, label);
				if (m == 0)
					bad += check_exact(cases[c].op, opset_for(all_types[t], 1), a, 1,
							   &x, 1, label);
				free(x.data);
			}
		}
	}
	cr_assert_eq(bad, 0);
}

/* Launches op over in (indices holding a bad value) and checks that the
 * run fails with the host's words. */
static void fails_the_run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			  const struct op_tensor *in, int n_in, const char *want)
{
	const struct op_schema *s;
	const struct op_kernel *host;
	struct op_tensor ref = { 0 };
	struct op_infer x = { 0 };
	struct op_node node = { .name = "n", .op_type = op, .domain = "", .opset = opset,
				.n_attrs = n_attrs, .attrs = attrs };
	struct dev_call d;

	/* The host's failure, the reference for the words. */
	cr_assert_eq(op_schema_find("", op, opset, &s), 0);
	x = (struct op_infer){ .node = &node, .n_in = n_in, .n_out = 1, .in = in, .out = &ref };
	cr_assert_eq(s->infer(&x), 0, "%s", cep_last_error());
	cr_assert_eq(op_kernel_find(s, opset, BACKEND_HOST, in[0].dtype, &host), 0);
	cr_assert_eq(exec_host_eval(&node, host, in, n_in, &ref, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), want);

	cr_assert_eq(dev_call_make(&d, op, opset, attrs, n_attrs, in, n_in), 0, "%s",
		     cep_last_error());
	cr_assert_eq(dev_call_launch(&d), 0, "%s", cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), want);
	printf("  a bad index: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), d.call);
	/* The record is cleared: the next sync of the stream succeeds. */
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0);
	dev_call_free(&d);
}

/* One bad index each, so that the device latches the one the host names. */
Test(gpu_index, an_index_out_of_range_fails_the_run)
{
	static const int64_t nd_bad[6] = { 0, 1, 4, -8, 2, 3 };
	static const int32_t el_bad[4] = { 0, 2, -6, 1 };
	struct op_attr axis1 = { .name = "axis", .type = OP_ATTR_INT, .i = 1 };
	unsigned seed = 23u;
	struct op_tensor in[3];

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "5,7", &seed, false);
	in[1] = (struct op_tensor){ .data = (void *)nd_bad, .dtype = CEP_DTYPE_INT64, .rank = 2,
				    .dims = { 3, 2 } };
	fails_the_run("GatherND", 13, NULL, 0, in, 2,
		      "GatherND: index -8 is out of range for dimension 1 of size 7");
	in[2] = host_tensor(CEP_DTYPE_FLOAT32, "3", &seed, false);
	fails_the_run("ScatterND", 13, NULL, 0, in, 3,
		      "ScatterND: index -8 is out of range for dimension 1 of size 7");
	free(in[2].data);
	free(in[0].data);

	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "2,5", &seed, false);
	in[1] = (struct op_tensor){ .data = (void *)el_bad, .dtype = CEP_DTYPE_INT32, .rank = 2,
				    .dims = { 2, 2 } };
	in[2] = host_tensor(CEP_DTYPE_FLOAT16, "2,2", &seed, false);
	fails_the_run("ScatterElements", 13, &axis1, 1, in, 3,
		      "ScatterElements: index -6 is out of range for dimension 1 of size 5");
	fails_the_run("Scatter", 9, &axis1, 1, in, 3,
		      "Scatter: index -6 is out of range for dimension 1 of size 5");
	free_inputs(in, 1);
	free(in[2].data);
}
