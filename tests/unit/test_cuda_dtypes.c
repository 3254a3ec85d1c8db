/*
 * test_cuda_dtypes.c — the device kernels of the types that joined the
 * first ones (float64, int16, uint16, uint32, uint64) against the
 * reference kernels of kernels/cpu on fresh random data, specials
 * included (NaN, infinities, float64 subnormals, integer extremes, uint64
 * values past 2^63), printing the worst absolute and relative error of
 * each case: Cast between every pair of stored types; Add, Sub, Mul and
 * Div, and the comparisons, under every broadcasting layout (the fast
 * paths and the general kernel); Where; the operators that move elements
 * (Identity, Reshape, Transpose, Concat, Gather, Slice, Expand, Tile, Pad,
 * Split, DepthToSpace, Trilu, GatherElements, ConstantOfShape, Range).
 * Elementwise and moving kernels must give the host's bits: float64 is
 * computed in double on both sides, integers exactly. The Reduce*
 * operators of these types are test_cuda_red.c's, the scatters
 * test_cuda_index.c's.
 *
 * Everywhere: the registry gives these operators a CUDA kernel for each
 * type and opset the host has one for, and every kernel name the
 * launchers build for the new types is in the compiled sources (where
 * NVRTC is installed; no GPU needed). On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include <time.h>

#include "gpu/cuda/nvrtc.h"
#include "kernels/cuda/launch.h"
#include "tests/unit/cuda_util.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
	CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8, CEP_DTYPE_UINT64,
	CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

/* The types this file is about. */
static const cep_dtype wide_types[] = {
	CEP_DTYPE_FLOAT64, CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32, CEP_DTYPE_UINT64,
};

/* The operators whose device kernels take the new types. */
static const char *const dev_ops[] = {
	"Cast", "CastLike", "Add", "Sub", "Mul", "Div", "Equal", "Less", "LessOrEqual",
	"Greater", "GreaterOrEqual", "Where", "Identity", "Reshape", "Flatten", "Squeeze",
	"Unsqueeze", "Transpose", "Concat", "Gather", "Slice", "Expand", "Tile", "Pad", "Split",
	"DepthToSpace", "SpaceToDepth", "Trilu", "GatherElements", "GatherND", "ScatterND",
	"ScatterElements", "ConstantOfShape", "Range", "ReduceSum", "ReduceMean", "ReduceMax",
	"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
	"ReduceLogSumExp",
};

/* ------------------------------------------------------------ everywhere */

Test(cuda_dtypes, the_device_covers_what_the_host_covers)
{
	int checked = 0, covered;
	size_t i;

	for (i = 0; i < N_OF(dev_ops); i++) {
		covered = cuda_covers_host("", dev_ops[i], wide_types, N_OF(wide_types));
		cr_assert_gt(covered, 0, "%s", dev_ops[i]);
		checked += covered;
	}
	cr_assert_gt(checked, 900, "%d", checked);
}

/* A device kernel that does not take a type is refused by the lookup,
 * with the types it takes. */
Test(cuda_dtypes, a_type_the_device_lacks_is_refused_by_name)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "Softmax", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_HOST, CEP_DTYPE_FLOAT64, &k), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_FLOAT64, &k), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "Softmax: dtype float64 is not supported on the cuda "
					   "backend (supported: float32, float16, bfloat16)");
	cr_assert_eq(op_schema_find("", "ArgMax", 13, &s), 0);
	cr_assert_eq(op_kernel_find(s, 13, BACKEND_CUDA, CEP_DTYPE_UINT64, &k), CEP_EUNSUPPORTED);
}

/* The names kernels/cuda/cast.c and binary.c build for the new types,
 * and that the wide sources hold none of the first types' kernels. */
Test(cuda_dtypes_nvrtc, every_kernel_the_launchers_name_is_compiled, .timeout = 300)
{
	static const char *const bin_ops[] = { "add", "sub", "mul", "div" };
	static const char *const fast[] = { "", "_ff", "_fr", "_rf", "_fs", "_sf" };
	struct nvrtc_lib *lib = NULL;
	size_t size, f, t, o, k, n = 0;
	void *image;
	char name[64];

	if (nvrtc_lib_open(NULL, &lib) != 0) {
		fprintf(stderr, "[SKIP] needs NVRTC (no GPU needed): %s\n", cep_last_error());
		cr_skip_test("needs NVRTC: %s", cep_last_error());
	}
	image = cuda_compile_90(lib, "cast", &size);
	for (f = 0; f < N_OF(all_types); f++) {
		for (t = 0; t < N_OF(all_types); t++, n++) {
			snprintf(name, sizeof(name), "cast_%s_%s", cuda_dtype_suffix(all_types[f]),
				 cuda_dtype_suffix(all_types[t]));
			cr_assert(cuda_image_has(image, size, name), "%s", name);
		}
	}
	free(image);
	image = cuda_compile_90(lib, "binary_wide", &size);
	for (o = 0; o < N_OF(bin_ops); o++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			for (k = 0; k < N_OF(fast); k++, n++) {
				snprintf(name, sizeof(name), "%s_%s%s", bin_ops[o],
					 cuda_dtype_suffix(wide_types[t]), fast[k]);
				cr_assert(cuda_image_has(image, size, name), "%s", name);
			}
		}
	}
	cr_assert_not(cuda_image_has(image, size, "add_f32"), "the first types stay in binary.cu");
	free(image);
	printf("  %zu kernels found\n", n);
	nvrtc_lib_free(lib);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_dtypes, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Cast between every pair of stored types, exactly. Float sources hold
 * NaN, infinities and values past every integer range, which each side
 * converts by the same rules (truncation, saturation, wrapping). */
Test(gpu_dtypes, cast_between_every_pair_matches_the_host)
{
	unsigned seed = 71u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t f, t;

	GPU_REQUIRE();
	for (f = 0; f < N_OF(all_types); f++) {
		for (t = 0; t < N_OF(all_types); t++) {
			struct op_attr to = { .name = "to", .type = OP_ATTR_INT, .i = all_types[t] };
			struct op_tensor in[2];
			char label[96];

			in[0] = host_tensor(all_types[f], "7,91", &seed, true);
			snprintf(label, sizeof(label), "%s to %s", cep_dtype_name(all_types[f]),
				 cep_dtype_name(all_types[t]));
			bad += gpu_check("Cast", 19, &to, 1, in, 1, 1, label);
			/* CastLike takes the type of its second input. */
			in[1] = host_tensor(all_types[t], "1", &seed, false);
			bad += gpu_check("CastLike", 15, NULL, 0, in, 2, 1, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* The broadcasting layouts of two operands: same shapes (the "ff" fast
 * path), a row vector on either side, a single element on either side,
 * and a general broadcast. */
static const struct {
	const char *a, *b;
} layouts[] = {
	{ "5,67", "5,67" }, { "5,64", "64" }, { "64", "5,64" }, { "5,67", "" }, { "", "5,67" },
	{ "4,1,6", "3,1" }, { "2,3,1,5", "1,3,7,1" }, { "0,3", "3" },
};

Test(gpu_dtypes, arithmetic_of_the_new_types_matches_the_host)
{
	static const char *const ops[] = { "Add", "Sub", "Mul", "Div" };
	unsigned seed = 73u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t o, t, l;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			for (l = 0; l < N_OF(layouts); l++) {
				struct op_tensor in[2];
				char label[96];

				in[0] = host_tensor(wide_types[t], layouts[l].a, &seed, true);
				in[1] = host_tensor(wide_types[t], layouts[l].b, &seed, true);
				snprintf(label, sizeof(label), "%s [%s] [%s]",
					 cep_dtype_name(wide_types[t]), layouts[l].a, layouts[l].b);
				/* float64 in double on both sides: exactly. */
				bad += gpu_check(ops[o], 14, NULL, 0, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_dtypes, comparisons_and_where_of_the_new_types_match_the_host)
{
	static const struct {
		const char *op;
		int opset;
	} ops[] = {
		{ "Equal", 13 }, { "Less", 13 }, { "LessOrEqual", 16 }, { "Greater", 13 },
		{ "GreaterOrEqual", 16 }, { "Equal", 11 }, { "Less", 9 },
	};
	unsigned seed = 79u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t o, t, l;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(ops); o++) {
		for (t = 0; t < N_OF(wide_types); t++) {
			for (l = 0; l < N_OF(layouts); l++) {
				struct op_tensor in[2];
				char label[96];

				in[0] = host_tensor(wide_types[t], layouts[l].a, &seed, true);
				in[1] = host_tensor(wide_types[t], layouts[l].b, &seed, true);
				/* Some equal pairs, so that Equal and the OrEqual
				 * ones see both answers. */
				if (op_dims_product(&in[0], 0, in[0].rank) > 0 &&
				    op_dims_product(&in[1], 0, in[1].rank) > 0)
					memcpy(in[1].data, in[0].data, cep_dtype_size(wide_types[t]));
				snprintf(label, sizeof(label), "%s [%s] [%s]",
					 cep_dtype_name(wide_types[t]), layouts[l].a, layouts[l].b);
				bad += gpu_check(ops[o].op, ops[o].opset, NULL, 0, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	for (t = 0; t < N_OF(wide_types); t++) {
		struct op_tensor in[3];
		char label[96];

		in[0] = host_tensor(CEP_DTYPE_BOOL, "4,1,33", &seed, false);
		in[1] = host_tensor(wide_types[t], "5,33", &seed, true);
		in[2] = host_tensor(wide_types[t], "4,5,1", &seed, true);
		snprintf(label, sizeof(label), "%s", cep_dtype_name(wide_types[t]));
		bad += gpu_check("Where", 16, NULL, 0, in, 3, 1, label);
		free_all(in, 3);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Runs op on x (and the int64 list inputs given, n of them) for every
 * new type; the first n_lists entries of lists are int64 tensors. */
static int64_t move_sweep(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			  const char *shape, const struct op_tensor *lists, int n_lists,
			  unsigned *seed)
{
	int64_t bad = 0;
	size_t t;
	int i;

	for (t = 0; t < N_OF(wide_types); t++) {
		struct op_tensor in[6];
		char label[96];

		in[0] = host_tensor(wide_types[t], shape, seed, true);
		for (i = 0; i < n_lists; i++)
			in[1 + i] = lists[i];
		snprintf(label, sizeof(label), "%s [%s]", cep_dtype_name(wide_types[t]), shape);
		bad += gpu_check(op, opset, attrs, n_attrs, in, 1 + n_lists, 1, label);
		free(in[0].data);
	}
	return bad;
}

Test(gpu_dtypes, operators_that_move_elements_give_the_host_s_bits)
{
	static const int64_t perm[3] = { 2, 0, 1 }, shape2[2] = { 6, -1 }, starts[2] = { 1, -5 };
	static const int64_t ends[2] = { 4, 100 }, axes[2] = { 0, 2 }, steps[2] = { 2, 1 };
	static const int64_t target[3] = { 2, 3, 33 }, reps[3] = { 2, 1, 3 };
	static const int64_t pads[6] = { 1, 0, 2, 0, 3, 1 }, idx[4] = { 2, 0, -1, 1 };
	static const int64_t split[1] = { 3 };
	unsigned seed = 83u ^ (unsigned)getpid();
	struct op_attr a_perm = { .name = "perm", .type = OP_ATTR_INTS, .n = 3, .ints = perm };
	struct op_attr a_axis0 = { .name = "axis", .type = OP_ATTR_INT, .i = 0 };
	struct op_attr a_axis1 = { .name = "axis", .type = OP_ATTR_INT, .i = 1 };
	struct op_attr a_block = { .name = "blocksize", .type = OP_ATTR_INT, .i = 2 };
	struct op_attr a_mode = { .name = "mode", .type = OP_ATTR_STRING };
	struct op_tensor lists[4];
	int64_t bad = 0;
	size_t t, m;

	GPU_REQUIRE();
	bad += move_sweep("Identity", 19, NULL, 0, "3,5,7", NULL, 0, &seed);
	lists[0] = int64_tensor(shape2, 2);
	bad += move_sweep("Reshape", 19, NULL, 0, "3,4,5", lists, 1, &seed);
	free(lists[0].data);
	bad += move_sweep("Transpose", 13, &a_perm, 1, "3,5,7", NULL, 0, &seed);
	lists[0] = int64_tensor(starts, 2);
	lists[1] = int64_tensor(ends, 2);
	lists[2] = int64_tensor(axes, 2);
	lists[3] = int64_tensor(steps, 2);
	bad += move_sweep("Slice", 13, NULL, 0, "5,3,9", lists, 4, &seed);
	free_all(lists, 4);
	lists[0] = int64_tensor(target, 3);
	bad += move_sweep("Expand", 13, NULL, 0, "3,1", lists, 1, &seed);
	free(lists[0].data);
	lists[0] = int64_tensor(reps, 3);
	bad += move_sweep("Tile", 13, NULL, 0, "2,3,5", lists, 1, &seed);
	free(lists[0].data);
	lists[0] = int64_tensor(idx, 4);
	bad += move_sweep("Gather", 13, &a_axis1, 1, "3,4,5", lists, 1, &seed);
	free(lists[0].data);
	lists[0] = int64_tensor(split, 1);
	bad += move_sweep("Split", 13, &a_axis1, 1, "2,3,4", lists, 1, &seed);
	free(lists[0].data);
	bad += move_sweep("DepthToSpace", 13, &a_block, 1, "1,8,3,5", NULL, 0, &seed);
	bad += move_sweep("SpaceToDepth", 13, &a_block, 1, "1,2,4,6", NULL, 0, &seed);
	bad += move_sweep("Trilu", 14, NULL, 0, "2,5,7", NULL, 0, &seed);
	for (m = 0; m < 3; m++) {
		static const char *const modes[3] = { "constant", "reflect", "edge" };

		a_mode.s = modes[m];
		lists[0] = int64_tensor(pads, 6);
		bad += move_sweep("Pad", 18, &a_mode, 1, "3,4,5", lists, 1, &seed);
		free(lists[0].data);
	}
	/* Concat and GatherElements: inputs of the data's type. */
	for (t = 0; t < N_OF(wide_types); t++) {
		struct op_tensor in[3];
		char label[96];

		in[0] = host_tensor(wide_types[t], "2,3,4", &seed, true);
		in[1] = host_tensor(wide_types[t], "2,1,4", &seed, true);
		in[2] = host_tensor(wide_types[t], "2,5,4", &seed, true);
		snprintf(label, sizeof(label), "%s", cep_dtype_name(wide_types[t]));
		bad += gpu_check("Concat", 13, &a_axis1, 1, in, 3, 1, label);
		free_all(in, 3);
		in[0] = host_tensor(wide_types[t], "4,6", &seed, true);
		in[1] = int64_tensor((const int64_t[]){ 3, 0, -1, 2, 1, 0 }, 6);
		in[1].rank = 2;
		in[1].dims[0] = 1;
		in[1].dims[1] = 6;
		bad += gpu_check("GatherElements", 13, &a_axis0, 1, in, 2, 1, label);
		free_all(in, 2);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_dtypes, constant_of_shape_and_range_of_the_new_types)
{
	static const int64_t shape[2] = { 3, 37 };
	unsigned seed = 89u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t t;

	GPU_REQUIRE();
	for (t = 0; t < N_OF(wide_types); t++) {
		struct op_tensor v = host_tensor(wide_types[t], "1", &seed, true);
		struct op_attr value = { .name = "value", .type = OP_ATTR_TENSOR, .t = &v };
		struct op_tensor in = int64_tensor(shape, 2);
		char label[96];

		snprintf(label, sizeof(label), "%s", cep_dtype_name(wide_types[t]));
		bad += gpu_check("ConstantOfShape", 20, &value, 1, &in, 1, 1, label);
		free(in.data);
		free(v.data);
	}
	/* Range takes float64 and int16 of the new types; float64 with
	 * steps that are no float32 value. */
	{
		double fs[3] = { -1.0 / 3.0, 7.25, 0.1 };
		int16_t is[3] = { 300, -200, -7 };
		struct op_tensor in[3];
		int i;

		for (i = 0; i < 3; i++)
			in[i] = (struct op_tensor){ .data = &fs[i], .dtype = CEP_DTYPE_FLOAT64 };
		bad += gpu_check("Range", 11, NULL, 0, in, 3, 1, "float64");
		for (i = 0; i < 3; i++)
			in[i] = (struct op_tensor){ .data = &is[i], .dtype = CEP_DTYPE_INT16 };
		bad += gpu_check("Range", 11, NULL, 0, in, 3, 1, "int16");
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
