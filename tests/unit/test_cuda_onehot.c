/*
 * test_cuda_onehot.c — the CUDA kernel of OneHot (kernels/cuda/onehot.c)
 * against the reference kernel of kernels/cpu/onehot.c on fresh random
 * data: indices of every type they may have (in and out of range,
 * negative ones, fractions for the float types), depth of several types,
 * values of every stored type at the opsets that take them, every axis,
 * both index rules (opsets 9 and 11), printing the worst error of each
 * case; a depth other than the plan's, read on the device, failing the
 * run with the operator named.
 *
 * Everywhere: the registry gives OneHot a CUDA kernel for each type and
 * opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1 the
 * rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_onehot, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "OneHot", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "OneHot/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 7 values types at 9-27, 8 from 28. */
	cr_assert_eq(checked, 7 * 19 + 8 * (OP_OPSET_MAX - 27));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_onehot, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Indices of type t and shape, random in [-depth - 2, depth + 2), with
 * fractions for the float types. */
static struct op_tensor indices(cep_dtype t, const char *shape, int64_t depth, unsigned *seed)
{
	struct op_tensor x = host_tensor(t, shape, seed, false);
	int64_t n = op_dims_product(&x, 0, x.rank), i;

	for (i = 0; i < n; i++) {
		int64_t v = (int64_t)(rnd(seed) % (unsigned)(2 * depth + 4)) - depth - 2;

		if (t == CEP_DTYPE_UINT8 && v < 0)
			v = -v;
		if (cpu_is_float(t))
			cpu_store_f(x.data, t, i, (float)v + (float)(rnd(seed) % 4) * 0.25f);
		else
			cpu_store_i(x.data, t, i, v);
	}
	return x;
}

/* A scalar depth of type t. */
static struct op_tensor depth_tensor(cep_dtype t, int64_t depth)
{
	struct op_tensor d = { .dtype = t, .rank = 0 };

	d.data = calloc(1, 8);
	cr_assert_not_null(d.data);
	cpu_store_i(d.data, t, 0, depth);
	return d;
}

Test(gpu_onehot, every_type_axis_and_rule_matches_the_host)
{
	static const cep_dtype idx_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					       CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT8,
					       CEP_DTYPE_UINT8 };
	static const char *const shapes[] = { "", "37", "5,9", "2,3,40" };
	unsigned seed = 83u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t ti, tv, s;
	int rule, a;

	GPU_REQUIRE();
	for (ti = 0; ti < 6; ti++) {
		for (tv = 0; tv < N_TYPES; tv++) {
			for (s = 0; s < 4; s++) {
				for (rule = 0; rule < 2; rule++) {
					int opset = all_types[tv] == CEP_DTYPE_BFLOAT16 ? 28
						    : rule ? 11 : 9;
					struct op_tensor probe = { .dtype = CEP_DTYPE_INT64 };

					shape_parse(&probe, shapes[s]);
					for (a = -probe.rank - 1; a <= probe.rank; a++) {
						struct op_attr at = { .name = "axis", .type = OP_ATTR_INT,
								      .i = a };
						int64_t depth = 1 + (int64_t)(rnd(&seed) % 12);
						struct op_tensor in[3];
						char label[120];

						in[0] = indices(idx_types[ti], shapes[s], depth, &seed);
						in[1] = depth_tensor(idx_types[((int)ti + (int)s + a + 6) % 6],
								     depth);
						in[2] = host_tensor(all_types[tv], "2", &seed, true);
						snprintf(label, sizeof(label),
							 "idx %s [%s] depth %lld (%s) values %s axis %d",
							 cep_dtype_name(idx_types[ti]), shapes[s],
							 (long long)depth, cep_dtype_name(in[1].dtype),
							 cep_dtype_name(all_types[tv]), a);
						bad += gpu_check("OneHot", opset, &at, 1, in, 3, 1, label);
						free_all(in, 3);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_onehot, a_depth_other_than_the_plans_fails_the_run_with_the_op_named)
{
	static const int64_t good = 3, worse = 4;
	unsigned seed = 89u ^ (unsigned)getpid();
	struct op_attr at = { .name = "axis", .type = OP_ATTR_INT, .i = 1 };
	struct op_tensor in[3];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = indices(CEP_DTYPE_INT64, "4,5", good, &seed);
	in[1] = depth_tensor(CEP_DTYPE_INT64, good);
	in[2] = host_tensor(CEP_DTYPE_FLOAT32, "2", &seed, false);
	gpu_call_make(&d, "OneHot", 11, &at, 1, in, 3, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "OneHot: the values of its inputs give 4 elements along "
			 "dimension 1, where the plan made for the shapes has 3");
	printf("  a bad depth: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &good, sizeof(good)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 3);
}
