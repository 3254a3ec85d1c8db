/*
 * test_cuda_select.c — the CUDA kernels of NonZero and Compress
 * (kernels/cuda/select.c) against the reference kernels of
 * kernels/cpu/select.c on fresh random data, about half of it zeros and
 * with the float specials (NaN, infinities, -0) among the rest: every
 * type each opset takes, a scalar, empty inputs, inputs of one chunk and
 * of hundreds (where the scan crosses blocks), Compress along every axis
 * and flattened with conditions shorter than the axis; printing the
 * worst error of each. Data whose count is not the plan's, read on the
 * device, fails the run with the operator named.
 *
 * Everywhere: the registry gives both operators a CUDA kernel for each
 * type and opset the host has one for. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ------------------------------------------------------------ everywhere */

Test(cuda_select, the_device_covers_what_the_host_covers)
{
	static const char *const ops[] = { "NonZero", "Compress" };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t o, t;

	for (o = 0; o < 2; o++) {
		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", ops[o], opset, &s) != 0)
				continue;
			for (t = 0; t < N_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", ops[o],
					     opset, cep_dtype_name(all_types[t]), has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	cep__clear_error();
	/* NonZero: 7 types at 9-12, 8 from 13; Compress: 7 at 9-27, 8 from 28. */
	cr_assert_eq(checked, 7 * 4 + 8 * (OP_OPSET_MAX - 12) + 7 * 19 + 8 * (OP_OPSET_MAX - 27));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_select, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Makes about half of t's elements zero, so that the selections have
 * something to skip. */
static void sparsen(struct op_tensor *t, unsigned *seed)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++) {
		if (rnd(seed) % 2 == 0)
			cpu_store_i(t->data, t->dtype, i, 0);
	}
}

Test(gpu_select, nonzero_of_every_type_and_size_matches_the_host)
{
	static const char *const shapes[] = { "", "0", "1", "7", "3,0,2", "5,33",
					      "2,3,4,5", "1000", "300,1001", "4,5,6,7,8,9" };
	unsigned seed = 311u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < N_TYPES; t++) {
			int opset = all_types[t] == CEP_DTYPE_BFLOAT16 ? 13 : 9;
			struct op_tensor in = host_tensor(all_types[t], shapes[s], &seed, true);
			char label[96];

			sparsen(&in, &seed);
			snprintf(label, sizeof(label), "%s [%s]", cep_dtype_name(all_types[t]),
				 shapes[s]);
			bad += gpu_check("NonZero", opset, NULL, 0, &in, 1, 1, label);
			free(in.data);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* All zeros and none: the ends of the scan. */
Test(gpu_select, nonzero_of_all_and_none)
{
	unsigned seed = 313u ^ (unsigned)getpid();
	int64_t bad = 0, n, i;
	int all;

	GPU_REQUIRE();
	for (all = 0; all < 2; all++) {
		struct op_tensor in = host_tensor(CEP_DTYPE_INT32, "123,4567", &seed, false);

		n = op_dims_product(&in, 0, in.rank);
		for (i = 0; i < n; i++)
			((int32_t *)in.data)[i] = all ? (int32_t)(i % 5) + 1 : 0;
		bad += gpu_check("NonZero", 13, NULL, 0, &in, 1, 1,
				 all ? "int32 [123,4567] all nonzero" : "int32 [123,4567] all zero");
		free(in.data);
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A condition of n entries, about half true. */
static struct op_tensor condition(int64_t n, unsigned *seed)
{
	struct op_tensor c = { .dtype = CEP_DTYPE_BOOL, .rank = 1, .dims = { n } };
	int64_t i;

	c.data = calloc(1, n > 0 ? (size_t)n : 1);
	cr_assert_not_null(c.data);
	for (i = 0; i < n; i++)
		((uint8_t *)c.data)[i] = rnd(seed) % 2;
	return c;
}

Test(gpu_select, compress_along_every_axis_matches_the_host)
{
	static const char *const shapes[] = { "7", "5,33", "2,3,4,5", "3,0,2", "40,1001" };
	unsigned seed = 317u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int a;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < N_TYPES; t++) {
			int opset = all_types[t] == CEP_DTYPE_BFLOAT16 ? 28 : 11;
			struct op_tensor probe = { .dtype = all_types[t] };

			shape_parse(&probe, shapes[s]);
			/* a == probe.rank: no axis, the input flattened. */
			for (a = -probe.rank; a <= probe.rank; a++) {
				struct op_attr at = { .name = "axis", .type = OP_ATTR_INT, .i = a };
				int64_t len = a == probe.rank ? op_dims_product(&probe, 0, probe.rank)
					      : probe.dims[a < 0 ? a + probe.rank : a];
				int shorter;

				for (shorter = 0; shorter < 2; shorter++) {
					struct op_tensor in[2];
					char label[120];

					in[0] = host_tensor(all_types[t], shapes[s], &seed, true);
					in[1] = condition(shorter ? len / 2 : len, &seed);
					snprintf(label, sizeof(label), "%s [%s] axis %s%d%s",
						 cep_dtype_name(all_types[t]), shapes[s],
						 a == probe.rank ? "none " : "", a,
						 shorter ? " short condition" : "");
					bad += gpu_check("Compress", opset, &at, a == probe.rank ? 0 : 1,
							 in, 2, 1, label);
					free_all(in, 2);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_select, a_count_other_than_the_plans_fails_the_run_with_the_op_named)
{
	static const float planned[4] = { 1, 0, 2, 0 }, other[4] = { 1, 3, 2, 0 };
	struct op_tensor in = { .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 4 },
				.data = (void *)planned };
	struct gpu_call d;

	GPU_REQUIRE();
	gpu_call_make(&d, "NonZero", 13, NULL, 0, &in, 1, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[0].data, other, sizeof(other)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "NonZero: the values of its inputs give 3 elements "
			 "along dimension 1, where the plan made for the shapes has 2");
	printf("  a bad count: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[0].data, planned, sizeof(planned)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
}
