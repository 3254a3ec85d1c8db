/*
 * test_cuda_normalize.c — the CUDA kernels of kernels/cuda/normalize.c
 * against the reference kernels of kernels/cpu/normalize.c on fresh
 * random data (specials among it in some cases), in float32, float16 and
 * bfloat16 where each opset takes them, printing the worst absolute and
 * relative error of each case: InstanceNormalization and
 * GroupNormalization (opset 18's per-group scale, 21's per-channel) over
 * short, long and empty rows; RMSNormalization with every way Scale
 * broadcasts; LpNormalization with p 1 and 2 along contiguous and strided
 * axes.
 *
 * Everywhere: the registry gives each of these operators a CUDA kernel for
 * each type and opset the host has one for. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const char *const norm_ops[] = {
	"InstanceNormalization", "GroupNormalization", "RMSNormalization", "LpNormalization",
};

static const cep_dtype norm_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_NORM_TYPES (sizeof(norm_types) / sizeof(norm_types[0]))
#define N_FLOAT_TYPES 3 /* the first three of norm_types */

/* ------------------------------------------------------------ everywhere */

Test(cuda_normalize, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, checked = 0;

	for (i = 0; i < sizeof(norm_ops) / sizeof(norm_ops[0]); i++) {
		for (opset = 7; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", norm_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_NORM_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, norm_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, norm_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d",
					     norm_ops[i], opset, cep_dtype_name(norm_types[t]),
					     has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	/* Instance 22 x 2 + 7 x 3 ... : every float type from its opset on. */
	cr_assert_gt(checked, 100);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_normalize, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* The opset a case runs at for dtype: bfloat16 only where it is taken. */
static int opset_for(int opset, int bf16_from, cep_dtype t)
{
	return t == CEP_DTYPE_BFLOAT16 && opset < bf16_from ? bf16_from : opset;
}

Test(gpu_normalize, instance_and_group_norms_over_short_long_and_empty_rows)
{
	static const struct {
		const char *op;
		int opset, groups;          /* groups: 0 for InstanceNormalization */
		const char *x;
		bool specials;
	} cases[] = {
		{ "InstanceNormalization", 7, 0, "2,3,4,5", true },
		{ "InstanceNormalization", 22, 0, "3,4", false },
		{ "InstanceNormalization", 22, 0, "2,8,33,17", false },
		{ "InstanceNormalization", 22, 0, "2,3,0", false },
		{ "GroupNormalization", 18, 3, "2,6,7", true },
		{ "GroupNormalization", 21, 3, "2,6,7", false },
		{ "GroupNormalization", 21, 32, "1,64,32,32", false },
		{ "GroupNormalization", 18, 1, "3,4,50", false },
		{ "GroupNormalization", 21, 2, "1,4,100000", false },
	};
	unsigned seed = 51u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-3f },
		{ .name = "num_groups", .type = OP_ATTR_INT },
	};
	struct op_tensor in[3];
	char label[160], pshape[24];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			int opset = opset_for(cases[c].opset, cases[c].groups ? 18 : 22, norm_types[t]);
			int64_t ch;

			in[0] = host_tensor(norm_types[t], cases[c].x, &seed, cases[c].specials);
			ch = in[0].dims[1];
			attrs[1].i = cases[c].groups;
			snprintf(pshape, sizeof(pshape), "%lld",
				 (long long)(cases[c].groups && opset < 21 ? cases[c].groups : ch));
			in[1] = host_tensor(norm_types[t], pshape, &seed, false);
			in[2] = host_tensor(norm_types[t], pshape, &seed, false);
			snprintf(label, sizeof(label), "%s [%s] groups %d", cep_dtype_name(norm_types[t]),
				 cases[c].x, cases[c].groups);
			bad += gpu_check(cases[c].op, opset, attrs, cases[c].groups ? 2 : 1, in, 3, 1,
					 label);
			free_all(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_normalize, rmsnorm_with_every_scale_layout)
{
	static const struct {
		const char *x, *scale;
		int axis;
		bool specials;
	} cases[] = {
		{ "8,64", "64", -1, true }, { "4,5,6", "5,6", 1, false }, { "4,5,6", "1", -1, false },
		{ "3,4096", "4096", -1, false }, { "4,5,6", "4,1,6", 2, false },
		{ "2,3,4", "2,3,4", 0, false }, { "6,7", "7", 0, false }, { "3,0", "0", 1, false },
		{ "1000,96", "96", -1, false },
	};
	unsigned seed = 53u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "axis", .type = OP_ATTR_INT },
		{ .name = "epsilon", .type = OP_ATTR_FLOAT, .f = 1e-4f },
	};
	struct op_tensor in[2];
	char label[160];
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_FLOAT_TYPES; t++) {
			attrs[0].i = cases[c].axis;
			in[0] = host_tensor(norm_types[t], cases[c].x, &seed, cases[c].specials);
			in[1] = host_tensor(norm_types[t], cases[c].scale, &seed, false);
			snprintf(label, sizeof(label), "%s [%s] [%s] axis %d",
				 cep_dtype_name(norm_types[t]), cases[c].x, cases[c].scale,
				 cases[c].axis);
			bad += gpu_check("RMSNormalization", 23, attrs, 2, in, 2, 1, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_normalize, lpnorm_p1_p2_along_rows_and_columns)
{
	static const struct {
		const char *shape;
		int axis;
	} cases[] = {
		{ "37,91", -1 }, { "4,5,6", 1 }, { "4,5,6", 0 }, { "3,1000", 1 }, { "2,0,3", 1 },
		{ "1000,3", 0 }, { "7", 0 },
	};
	static const int opsets[] = { 7, 22 };
	unsigned seed = 57u ^ (unsigned)getpid();
	struct op_attr attrs[2] = {
		{ .name = "axis", .type = OP_ATTR_INT },
		{ .name = "p", .type = OP_ATTR_INT },
	};
	struct op_tensor in;
	char label[160];
	int64_t bad = 0;
	size_t c, t, o;
	int p;

	GPU_REQUIRE();
	for (o = 0; o < 2; o++) {
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			for (t = 0; t < N_FLOAT_TYPES; t++) {
				if (opsets[o] < 22 && norm_types[t] == CEP_DTYPE_BFLOAT16)
					continue;
				for (p = 1; p <= 2; p++) {
					attrs[0].i = cases[c].axis;
					attrs[1].i = p;
					in = host_tensor(norm_types[t], cases[c].shape, &seed, c % 2 == 0);
					snprintf(label, sizeof(label), "%s [%s] axis %d p %d",
						 cep_dtype_name(norm_types[t]), cases[c].shape,
						 cases[c].axis, p);
					bad += gpu_check("LpNormalization", opsets[o], attrs, 2, &in, 1, 1,
							 label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
