/*
 * test_cuda_bitwise.c — the CUDA kernels of kernels/cuda/bitwise.c
 * (BitShift in both directions, BitwiseAnd, BitwiseOr, BitwiseXor,
 * BitwiseNot) and Xor (kernels/cuda/compare.c) against the reference
 * kernels of kernels/cpu, bit for bit, on fresh random integers of every
 * integer type (int16, uint16, uint32 and uint64 from bitwise_wide.cu,
 * uint64 values past 2^63 shifting right logically) over each
 * type's whole range with its extremes, zeros and -1 among them; shift
 * amounts around each width (negative, 0, width - 1, width, beyond) as
 * well as anywhere. Every layout the launchers tell apart: operands of
 * the output's shape, a row vector, a single element on either side, the
 * general broadcast, and more elements than one grid covers. Each case
 * prints its element count and worst error (and its first mismatch).
 *
 * Everywhere: the registry gives each of these operators a CUDA kernel
 * for every type and opset the host has one for, and no other. On a GPU
 * machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include "tests/unit/cuda_util.h"

static const char *const bit_ops[] = { "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
				       "BitwiseNot", "Xor" };

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
	CEP_DTYPE_FLOAT64, CEP_DTYPE_INT16, CEP_DTYPE_UINT16, CEP_DTYPE_UINT32,
	CEP_DTYPE_UINT64,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Layouts: the same shape, a row, a single element each side, the
 * general broadcast (twice), and one past a grid's reach. */
static const char *const shapes[][2] = {
	{ "37,64", "37,64" }, { "37,64", "64" }, { "37,64", "" }, { "", "37,64" },
	{ "3,1,5", "4,1" }, { "6,1,1,8", "1,5,7,1" }, { "4096,4097", "4097" },
};

/* ------------------------------------------------------------ everywhere */

Test(cuda_bitwise, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, covered = 0;

	for (i = 0; i < N_OF(bit_ops); i++) {
		int mine = 0;

		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", bit_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_TYPES; t++) {
				bool h = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
				bool d = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

				cr_assert_eq(d, h, "%s/%d %s: host %d, cuda %d", bit_ops[i], opset,
					     cep_dtype_name(all_types[t]), h, d);
				mine += d;
			}
		}
		cr_assert_gt(mine, 0, "%s", bit_ops[i]);
		covered += mine;
	}
	/* BitShift 17 x 4 unsigned types + 8 at 28, the Bitwise four 8 x 11
	 * each, Xor 28 (opsets 1 on). */
	cr_assert_eq(covered, 17 * 4 + 8 + 4 * 8 * 11 + 28);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_bitwise, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Runs op on the host (the reference) and on the device over the same
 * inputs and compares exactly; returns the mismatches. */
static int64_t check_op(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			const struct op_tensor *in, int n_in, const char *label)
{
	const struct op_kernel *host;
	struct op_tensor ref;
	struct dev_call d;
	char what[160];
	size_t bytes;
	int64_t bad;
	void *got;

	cr_assert_eq(dev_call_make(&d, op, opset, attrs, n_attrs, in, n_in), 0, "%s",
		     cep_last_error());
	ref = d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(d.schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d.schema, in, n_in, &ref, 1), &host), 0);
	cr_assert_eq(exec_host_eval(&d.node, host, in, n_in, &ref, 1), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&d), 0, "%s: %s", op, cep_last_error());
	bytes = op_tensor_bytes(&ref);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &ref, got, 0.0, 0.0);
	free(got);
	free(ref.data);
	dev_call_free(&d);
	return bad;
}

static bool host_takes(const char *op, int opset, cep_dtype dtype)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	return op_schema_find("", op, opset, &s) == 0 &&
	       op_kernel_find(s, opset, BACKEND_HOST, dtype, &k) == 0;
}

/* Shift amounts for elements of dtype: mostly -2 to width + 2, so that
 * every edge of the rule shows, and a few anywhere in the type's range
 * (those fill_random() left). */
static struct op_tensor shift_amounts(cep_dtype dtype, const char *shape, unsigned *seed)
{
	struct op_tensor t = host_tensor(dtype, shape, seed, true);
	int64_t width = 8 * (int64_t)cep_dtype_size(dtype), n = op_dims_product(&t, 0, t.rank), i;
	bool is_unsigned = cpu_is_unsigned(dtype);

	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed);

		if (r % 8 == 0)
			continue;
		cpu_store_i(t.data, dtype, i,
			    is_unsigned ? (int64_t)(r % (unsigned)(width + 3))
					: (int64_t)(r % (unsigned)(width + 5)) - 2);
	}
	return t;
}

Test(gpu_bitwise, bitshift_matches_the_host_in_both_directions)
{
	static const char *const dirs[] = { "LEFT", "RIGHT" };
	static const int opsets[] = { 11, 27, 28 };
	unsigned seed = 79u ^ (unsigned)getpid();
	struct op_attr d = { .name = "direction", .type = OP_ATTR_STRING };
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t v, t, k, r;
	int cases = 0;

	GPU_REQUIRE();
	for (v = 0; v < N_OF(opsets); v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (!host_takes("BitShift", opsets[v], all_types[t]))
				continue;
			for (r = 0; r < N_OF(dirs); r++) {
				d.s = dirs[r];
				for (k = 0; k < N_OF(shapes); k++) {
					in[0] = host_tensor(all_types[t], shapes[k][0], &seed, true);
					in[1] = shift_amounts(all_types[t], shapes[k][1], &seed);
					snprintf(label, sizeof(label), "%s %s [%s] [%s]", dirs[r],
						 cep_dtype_name(all_types[t]), shapes[k][0],
						 shapes[k][1]);
					bad += check_op("BitShift", opsets[v], &d, 1, in, 2, label);
					free_inputs(in, 2);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	/* The four unsigned types at 11 and 27, eight at 28, both directions,
	 * every layout. */
	cr_assert_eq(cases, (4 + 4 + 8) * 2 * (int)N_OF(shapes));
}

Test(gpu_bitwise, and_or_xor_not_match_the_host)
{
	static const char *const ops[] = { "BitwiseAnd", "BitwiseOr", "BitwiseXor" };
	unsigned seed = 83u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t o, t, k;
	int cases = 0;

	GPU_REQUIRE();
	for (t = 0; t < N_TYPES; t++) {
		if (!host_takes("BitwiseAnd", 18, all_types[t]))
			continue;
		for (o = 0; o < N_OF(ops); o++) {
			for (k = 0; k < N_OF(shapes); k++) {
				in[0] = host_tensor(all_types[t], shapes[k][0], &seed, true);
				in[1] = host_tensor(all_types[t], shapes[k][1], &seed, true);
				snprintf(label, sizeof(label), "%s [%s] [%s]",
					 cep_dtype_name(all_types[t]), shapes[k][0], shapes[k][1]);
				bad += check_op(ops[o], 18, NULL, 0, in, 2, label);
				free_inputs(in, 2);
				cases++;
			}
		}
		in[0] = host_tensor(all_types[t], "1000003", &seed, true);
		snprintf(label, sizeof(label), "%s [1000003]", cep_dtype_name(all_types[t]));
		bad += check_op("BitwiseNot", 18, NULL, 0, in, 1, label);
		free(in[0].data);
		in[0] = host_tensor(all_types[t], "", &seed, true);
		snprintf(label, sizeof(label), "%s []", cep_dtype_name(all_types[t]));
		bad += check_op("BitwiseNot", 28, NULL, 0, in, 1, label);
		free(in[0].data);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_eq(cases, 8 * 3 * (int)N_OF(shapes));
}

Test(gpu_bitwise, xor_matches_the_host)
{
	unsigned seed = 89u ^ (unsigned)getpid();
	struct op_tensor in[2];
	char label[96];
	int64_t bad = 0;
	size_t k;

	GPU_REQUIRE();
	for (k = 0; k < N_OF(shapes); k++) {
		in[0] = host_tensor(CEP_DTYPE_BOOL, shapes[k][0], &seed, false);
		in[1] = host_tensor(CEP_DTYPE_BOOL, shapes[k][1], &seed, false);
		snprintf(label, sizeof(label), "bool [%s] [%s]", shapes[k][0], shapes[k][1]);
		bad += check_op("Xor", 7, NULL, 0, in, 2, label);
		free_inputs(in, 2);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
