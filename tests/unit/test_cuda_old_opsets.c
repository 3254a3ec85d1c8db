/*
 * test_cuda_old_opsets.c — the CUDA kernels at the opsets before 7 where
 * the device reads a node differently from later opsets, against the
 * reference kernels on fresh random data, printing the worst absolute and
 * relative error of each case: B broadcast from `axis` by the binary
 * arithmetic, the comparisons, logic and Pow; PRelu's slope per channel;
 * Split-1's sizes as an input of the data's type, read on the device
 * (also with an output left unnamed); Concat-1's default axis; Tile-1;
 * Upsample-1's two scales (nearest and bilinear); Gemm-6's broadcast C;
 * Cast-1 by type name.
 *
 * On a GPU machine with CUDAEP_TEST_GPU=1 they run; elsewhere they skip,
 * visibly. That the device has a kernel for every type and opset the host
 * has one for is test_cuda_kernels.c's check, run everywhere.
 */
#include "tests/unit/cuda_util.h"

TestSuite(gpu_old, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

static struct op_attr attr_i(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr attr_f(const char *name, float v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_FLOAT, .f = v };
}

static struct op_attr attr_s(const char *name, const char *s)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_STRING, .s = s };
}

/* A float tensor of shape holding the n values v (copied). */
static struct op_tensor float_tensor(cep_dtype t, const char *shape, const float *v, int n)
{
	struct op_tensor x = { .dtype = t };
	int i;

	shape_parse(&x, shape);
	x.data = calloc((size_t)(n ? n : 1), cep_dtype_size(t));
	cr_assert_not_null(x.data);
	for (i = 0; i < n; i++)
		cpu_store_f(x.data, t, i, v[i]);
	return x;
}

Test(gpu_old, binary_ops_broadcast_from_an_axis)
{
	static const char *const arith[] = { "Add", "Sub", "Mul", "Div", "Pow" };
	static const char *const cmp[] = { "Equal", "Less", "Greater" };
	static const char *const logic[] = { "And", "Or", "Xor" };
	/* A's shape, B's, and axis (-1: none, suffix matching). */
	static const struct { const char *a, *b; int axis; } shapes[] = {
		{ "2,3,4,5", "3,4", 1 }, { "2,3,4,5", "2", 0 }, { "2,3,4,5", "4,5", -1 },
		{ "2,3,4,5", "1,1", 2 }, { "6,33", "6", 0 }, { "4,4", "4,4", -1 },
	};
	static const cep_dtype ftypes[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16 };
	unsigned seed = 61u ^ (unsigned)getpid();
	struct op_attr attrs[2] = { attr_i("broadcast", 1), attr_i("axis", 0) };
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t o, k, t;

	GPU_REQUIRE();
	for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		int n_attrs = shapes[k].axis < 0 ? 1 : 2;

		attrs[1].i = shapes[k].axis;
		for (t = 0; t < 2; t++) {
			for (o = 0; o < sizeof(arith) / sizeof(arith[0]); o++) {
				in[0] = host_tensor(ftypes[t], shapes[k].a, &seed, true);
				in[1] = host_tensor(ftypes[t], shapes[k].b, &seed, true);
				snprintf(label, sizeof(label), "%s [%s] [%s] axis %d",
					 cep_dtype_name(ftypes[t]), shapes[k].a, shapes[k].b,
					 shapes[k].axis);
				bad += gpu_check(arith[o], 6, attrs, n_attrs, in, 2, 1, label);
				free_all(in, 2);
			}
			for (o = 0; o < sizeof(cmp) / sizeof(cmp[0]); o++) {
				cep_dtype dt = o == 0 ? (t ? CEP_DTYPE_INT64 : CEP_DTYPE_INT32)
						      : ftypes[t];

				in[0] = host_tensor(dt, shapes[k].a, &seed, false);
				in[1] = host_tensor(dt, shapes[k].b, &seed, false);
				snprintf(label, sizeof(label), "%s [%s] [%s] axis %d",
					 cep_dtype_name(dt), shapes[k].a, shapes[k].b, shapes[k].axis);
				bad += gpu_check(cmp[o], 1, attrs, n_attrs, in, 2, 1, label);
				free_all(in, 2);
			}
		}
		for (o = 0; o < sizeof(logic) / sizeof(logic[0]); o++) {
			in[0] = host_tensor(CEP_DTYPE_BOOL, shapes[k].a, &seed, false);
			in[1] = host_tensor(CEP_DTYPE_BOOL, shapes[k].b, &seed, false);
			snprintf(label, sizeof(label), "bool [%s] [%s] axis %d", shapes[k].a,
				 shapes[k].b, shapes[k].axis);
			bad += gpu_check(logic[o], 1, attrs, n_attrs, in, 2, 1, label);
			free_all(in, 2);
		}
		/* Opset 6's int32 and int64 arithmetic. */
		in[0] = host_tensor(CEP_DTYPE_INT64, shapes[k].a, &seed, false);
		in[1] = host_tensor(CEP_DTYPE_INT64, shapes[k].b, &seed, false);
		snprintf(label, sizeof(label), "int64 [%s] [%s] axis %d", shapes[k].a, shapes[k].b,
			 shapes[k].axis);
		bad += gpu_check("Mul", 6, attrs, n_attrs, in, 2, 1, label);
		free_all(in, 2);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_old, prelu_slope_per_channel)
{
	static const char *const slopes[] = { "3", "3,1,1", "1", "5" };
	unsigned seed = 62u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t k;

	GPU_REQUIRE();
	for (k = 0; k < sizeof(slopes) / sizeof(slopes[0]); k++) {
		in[0] = host_tensor(CEP_DTYPE_FLOAT32, "2,3,4,5", &seed, true);
		in[1] = host_tensor(CEP_DTYPE_FLOAT32, slopes[k], &seed, false);
		snprintf(label, sizeof(label), "float32 [2,3,4,5] slope [%s]", slopes[k]);
		bad += gpu_check("PRelu", 6, NULL, 0, in, 2, 1, label);
		free_all(in, 2);
	}
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "2,3,7", &seed, true);
	in[1] = host_tensor(CEP_DTYPE_FLOAT16, "3", &seed, false);
	bad += gpu_check("PRelu", 1, NULL, 0, in, 2, 1, "float16 [2,3,7] slope [3]");
	free_all(in, 2);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_old, split1_sizes_from_an_input)
{
	static const float sizes[3] = { 2, 5, 3 };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16 };
	unsigned seed = 63u ^ (unsigned)getpid();
	const struct op_attr axis = attr_i("axis", 1);
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t t;
	int absent;

	GPU_REQUIRE();
	for (t = 0; t < 2; t++) {
		for (absent = -1; absent < 3; absent++) {
			in[0] = host_tensor(types[t], "3,10,7", &seed, true);
			in[1] = float_tensor(types[t], "3", sizes, 3);
			snprintf(label, sizeof(label), "%s [3,10,7] split [2,5,3], output %d unnamed",
				 cep_dtype_name(types[t]), absent);
			bad += gpu_check_absent("Split", 1, &axis, 1, in, 2, 3, absent, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_old, concat_tile_upsample_gemm_cast)
{
	static const float one = 1.0f, three = 3.0f;
	unsigned seed = 64u ^ (unsigned)getpid();
	const struct op_attr up[3] = { attr_f("height_scale", 2.0f), attr_f("width_scale", 3.0f),
				       attr_s("mode", "nearest") };
	const struct op_attr up_bl[3] = { attr_f("height_scale", 3.0f),
					  attr_f("width_scale", 2.0f), attr_s("mode", "bilinear") };
	const struct op_attr gemm[3] = { attr_i("broadcast", 1), attr_i("transB", 1),
					 attr_f("beta", 0.5f) };
	const struct op_attr to = attr_s("to", "INT32");
	struct op_tensor in[3];
	int64_t bad = 0;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "2,3,4", &seed, true);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, "2,5,4", &seed, true);
	bad += gpu_check("Concat", 1, NULL, 0, in, 2, 1, "float32 [2,3,4] [2,5,4], axis 1");
	free_all(in, 2);
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "2,3,4", &seed, true);
	in[1] = float_tensor(CEP_DTYPE_FLOAT16, "", &three, 1);
	in[2] = float_tensor(CEP_DTYPE_FLOAT16, "", &one, 1);
	bad += gpu_check("Tile", 1, NULL, 0, in, 3, 1, "float16 [2,3,4] 3 times along 1");
	free_all(in, 3);
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "2,3,5,4", &seed, false);
	bad += gpu_check("Upsample", 1, up, 3, in, 1, 1, "float32 [2,3,5,4] nearest 2x3");
	bad += gpu_check("Upsample", 6, up_bl, 3, in, 1, 1, "float32 [2,3,5,4] bilinear 3x2");
	free_all(in, 1);
	in[0] = host_tensor(CEP_DTYPE_INT64, "1,2,3,3", &seed, false);
	bad += gpu_check("Upsample", 1, up, 3, in, 1, 1, "int64 [1,2,3,3] nearest 2x3");
	free_all(in, 1);
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "7,9", &seed, false);
	in[1] = host_tensor(CEP_DTYPE_FLOAT32, "5,9", &seed, false);
	in[2] = host_tensor(CEP_DTYPE_FLOAT32, "5", &seed, false);
	bad += gpu_check("Gemm", 6, gemm, 3, in, 3, 1, "float32 [7,9] [5,9]^T + 0.5 [5]");
	free_all(in, 3);
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "64", &seed, false);
	bad += gpu_check("Cast", 1, &to, 1, in, 1, 1, "float32 [64] to \"INT32\"");
	free_all(in, 1);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
