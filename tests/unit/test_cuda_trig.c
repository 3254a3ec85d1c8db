/*
 * test_cuda_trig.c — the CUDA kernels of the float functions added with
 * kernels/cuda/trig.c (Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh,
 * Asinh, Acosh, Atanh), of ThresholdedRelu and Mish (kernels/cuda/
 * activation.c) and of IsInf and IsNaN (kernels/cuda/fpclass.c), against
 * the reference kernels of kernels/cpu on fresh random data with NaN,
 * infinities, subnormals, huge values and the edges of each domain among
 * it, printing the worst absolute and relative error of each case: every
 * operator for every type the host takes, at the opsets where its type
 * set changes, over a scalar, lengths that take the vectorized path and
 * its tail, and more elements than one grid covers.
 *
 * Everywhere: the registry gives each of these operators a CUDA kernel
 * for every type and opset the host has one for, and no other. On a GPU
 * machine with CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips,
 * visibly.
 */
#include <float.h>

#include "tests/unit/cuda_util.h"

static const char *const trig_ops[] = { "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
					"Sinh", "Cosh", "Asinh", "Acosh", "Atanh" };
static const char *const float_ops[] = { "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
					 "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
					 "ThresholdedRelu", "Mish", "IsInf", "IsNaN" };

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_trig, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	size_t i, t;
	int opset, covered = 0;

	for (i = 0; i < N_OF(float_ops); i++) {
		int mine = 0;

		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", float_ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_TYPES; t++) {
				bool h = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
				bool d = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

				cr_assert_eq(d, h, "%s/%d %s: host %d, cuda %d", float_ops[i], opset,
					     cep_dtype_name(all_types[t]), h, d);
				mine += d;
			}
		}
		cr_assert_gt(mine, 0, "%s", float_ops[i]);
		covered += mine;
	}
	/* 11 functions over opsets 7 or 9 to 28 (2 types, 3 from 22),
	 * ThresholdedRelu, Mish, IsInf and IsNaN. */
	cr_assert_gt(covered, 500);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_trig, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Runs op on the host (the reference) and on the device over the same
 * inputs and compares; returns the mismatches. */
static int64_t check_op(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
			const struct op_tensor *in, const char *label)
{
	const struct op_kernel *host;
	struct op_tensor ref;
	struct dev_call d;
	double rtol, atol;
	char what[160];
	size_t bytes;
	int64_t bad;
	void *got;

	cr_assert_eq(dev_call_make(&d, op, opset, attrs, n_attrs, in, 1), 0, "%s",
		     cep_last_error());
	ref = d.out;
	ref.data = NULL;
	cr_assert_eq(op_kernel_find(d.schema, opset, BACKEND_HOST,
				    op_kernel_dtype(d.schema, in, 1, &ref, 1), &host), 0);
	cr_assert_eq(exec_host_eval(&d.node, host, in, 1, &ref, 1), 0, "%s", cep_last_error());
	cr_assert_eq(dev_call_launch(&d), 0, "%s: %s", op, cep_last_error());
	bytes = op_tensor_bytes(&ref);
	got = malloc(bytes ? bytes : 1);
	dev_get(got, d.out.data, bytes);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s: %s", op, cep_last_error());
	tolerance(ref.dtype, &rtol, &atol);
	snprintf(what, sizeof(what), "%s/%d %s", op, opset, label);
	bad = compare_tensor(what, &ref, got, rtol, atol);
	free(got);
	free(ref.data);
	dev_call_free(&d);
	return bad;
}

/* Whether the host has a kernel for op at opset over inputs of dtype. */
static bool host_takes(const char *op, int opset, cep_dtype dtype)
{
	const struct op_schema *s;
	const struct op_kernel *k;

	return op_schema_find("", op, opset, &s) == 0 &&
	       op_kernel_find(s, opset, BACKEND_HOST, dtype, &k) == 0;
}

/*
 * A random float tensor whose first elements are the values where these
 * functions change behaviour: both zeros and infinities, NaN, the largest
 * finite float, +-1 (the ends of Asin's, Acos's and Atanh's domains, and
 * Acosh's start), just past them, pi/2 (Tan's pole), where Sinh and Cosh
 * overflow float32, subnormals, and the threshold of ThresholdedRelu.
 */
static struct op_tensor edgy_tensor(cep_dtype t, const char *shape, unsigned *seed)
{
	static const float edges[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX,
				       1.0f, -1.0f, 1.0000001f, -1.0000001f, 0.99999994f,
				       1.5707964f, -1.5707964f, 3.1415927f, 89.0f, 89.5f,
				       -89.5f, 1e-40f, -1e-45f, 1e-20f, -20.0f, 30.0f,
				       0.25f, 2.0f, 1e30f, -7e4f, 70000.0f };
	struct op_tensor x = host_tensor(t, shape, seed, true);
	int64_t n = op_dims_product(&x, 0, x.rank), i;

	for (i = 0; i < n && i < (int64_t)N_OF(edges); i++)
		cpu_store_f(x.data, t, i, edges[i]);
	return x;
}

Test(gpu_trig, trig_functions_match_the_host_for_every_type)
{
	/* 1: a scalar; 77: one vector and a tail; 4096 x 4097: more than
	 * one grid. */
	static const char *const shapes[] = { "", "77", "41,67", "4096,4097" };
	static const int opsets[] = { 9, 21, 22 };
	unsigned seed = 67u ^ (unsigned)getpid();
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t o, v, t, k;
	int cases = 0;

	GPU_REQUIRE();
	for (o = 0; o < N_OF(trig_ops); o++) {
		for (v = 0; v < N_OF(opsets); v++) {
			for (t = 0; t < N_TYPES; t++) {
				if (!host_takes(trig_ops[o], opsets[v], all_types[t]))
					continue;
				for (k = 0; k < N_OF(shapes); k++) {
					/* The big one once per operator and type. */
					if (k == 3 && v != 2)
						continue;
					in = edgy_tensor(all_types[t], shapes[k], &seed);
					snprintf(label, sizeof(label), "%s [%s]",
						 cep_dtype_name(all_types[t]), shapes[k]);
					bad += check_op(trig_ops[o], opsets[v], NULL, 0, &in, label);
					free(in.data);
					cases++;
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 150);
}

Test(gpu_trig, thresholded_relu_and_mish_match_the_host)
{
	static const struct op_attr alphas[] = {
		{ .name = "alpha", .type = OP_ATTR_FLOAT, .f = 0.5f },
		{ .name = "alpha", .type = OP_ATTR_FLOAT, .f = -2.0f },
		{ .name = "alpha", .type = OP_ATTR_FLOAT, .f = 1.0f },
	};
	static const int tr_opsets[] = { 10, 22 }, mish_opsets[] = { 18, 22 };
	unsigned seed = 71u ^ (unsigned)getpid();
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t v, t, a;

	GPU_REQUIRE();
	for (v = 0; v < 2; v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (host_takes("ThresholdedRelu", tr_opsets[v], all_types[t])) {
				in = edgy_tensor(all_types[t], "41,67", &seed);
				snprintf(label, sizeof(label), "%s [41,67] alpha 1 (default)",
					 cep_dtype_name(all_types[t]));
				bad += check_op("ThresholdedRelu", tr_opsets[v], NULL, 0, &in, label);
				for (a = 0; a < N_OF(alphas); a++) {
					snprintf(label, sizeof(label), "%s [41,67] alpha %g",
						 cep_dtype_name(all_types[t]), (double)alphas[a].f);
					bad += check_op("ThresholdedRelu", tr_opsets[v], &alphas[a], 1,
							&in, label);
				}
				free(in.data);
			}
			if (host_takes("Mish", mish_opsets[v], all_types[t])) {
				in = edgy_tensor(all_types[t], "41,67", &seed);
				snprintf(label, sizeof(label), "%s [41,67]",
					 cep_dtype_name(all_types[t]));
				bad += check_op("Mish", mish_opsets[v], NULL, 0, &in, label);
				free(in.data);
				in = edgy_tensor(all_types[t], "1000003", &seed);
				bad += check_op("Mish", mish_opsets[v], NULL, 0, &in, "[1000003]");
				free(in.data);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_trig, isinf_and_isnan_match_the_host_bit_for_bit)
{
	static const int64_t choices[4][2] = { { 1, 1 }, { 1, 0 }, { 0, 1 }, { 0, 0 } };
	static const int opsets[] = { 12, 19, 20 };
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_attr a[2] = { { .name = "detect_positive", .type = OP_ATTR_INT },
				{ .name = "detect_negative", .type = OP_ATTR_INT } };
	struct op_tensor in;
	char label[96];
	int64_t bad = 0;
	size_t v, t, c;
	int cases = 0;

	GPU_REQUIRE();
	for (v = 0; v < N_OF(opsets); v++) {
		for (t = 0; t < N_TYPES; t++) {
			if (host_takes("IsInf", opsets[v], all_types[t])) {
				in = edgy_tensor(all_types[t], "3001", &seed);
				for (c = 0; c < N_OF(choices); c++) {
					a[0].i = choices[c][0];
					a[1].i = choices[c][1];
					snprintf(label, sizeof(label), "%s [3001] +inf %d -inf %d",
						 cep_dtype_name(all_types[t]), (int)a[0].i, (int)a[1].i);
					bad += check_op("IsInf", opsets[v], a, 2, &in, label);
					cases++;
				}
				bad += check_op("IsInf", opsets[v], NULL, 0, &in, "defaults");
				free(in.data);
			}
			if (host_takes("IsNaN", opsets[v], all_types[t])) {
				in = edgy_tensor(all_types[t], "3001", &seed);
				snprintf(label, sizeof(label), "%s [3001]", cep_dtype_name(all_types[t]));
				bad += check_op("IsNaN", opsets[v], NULL, 0, &in, label);
				free(in.data);
				cases++;
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
	cr_assert_gt(cases, 20);
}
