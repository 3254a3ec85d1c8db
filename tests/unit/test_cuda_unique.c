/*
 * test_cuda_unique.c — the CUDA kernels of Unique (kernels/cuda/unique.c)
 * against the reference kernel of kernels/cpu/unique.c on fresh random
 * data drawn from a few values (so that items repeat), the float specials
 * among them: flattened and along every axis, sorted and in
 * first-occurrence order, every stored type, all four outputs and Y
 * alone; printing the worst error of each. Data whose count is not the
 * plan's, read on the device, fails the run with the operator named.
 *
 * Everywhere: the registry gives Unique a CUDA kernel for each type and
 * opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1 the
 * rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

Test(cuda_unique, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "Unique", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "Unique/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 7 types at 11-27, 8 from 28. */
	cr_assert_eq(checked, 7 * 17 + 8 * (OP_OPSET_MAX - 27));
}

TestSuite(gpu_unique, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Replaces most of t's elements with one of four values, so that
 * elements and slices repeat. */
static void few_values(struct op_tensor *t, unsigned *seed)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++) {
		unsigned r = rnd(seed);

		if (r % 8 != 0)
			cpu_store_i(t->data, t->dtype, i, (int64_t)(r % 4) - 1);
	}
}

Test(gpu_unique, random_items_match_the_host)
{
	static const char *const shapes[] = { "1", "0", "7", "200", "3,0", "6,2", "5,4,3",
					      "3000" };
	unsigned seed = 1001u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int a, sorted, n_out;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < N_TYPES; t++) {
			struct op_tensor probe = { .dtype = all_types[t] };

			shape_parse(&probe, shapes[s]);
			/* a == probe.rank: no axis, the input flattened. */
			for (a = -probe.rank; a <= probe.rank; a++) {
				for (sorted = 0; sorted < 2; sorted++) {
					for (n_out = 1; n_out <= 4; n_out += 3) {
						struct op_attr at[2] = {
							{ .name = "sorted", .type = OP_ATTR_INT, .i = sorted },
							{ .name = "axis", .type = OP_ATTR_INT, .i = a },
						};
						struct op_tensor in;
						char label[120];

						in = host_tensor(all_types[t], shapes[s], &seed, true);
						few_values(&in, &seed);
						snprintf(label, sizeof(label), "%s [%s] %s%d sorted %d, %d out",
							 cep_dtype_name(all_types[t]), shapes[s],
							 a == probe.rank ? "no axis " : "axis ", a, sorted,
							 n_out);
						bad += gpu_check("Unique", all_types[t] == CEP_DTYPE_BFLOAT16 ? 28
							 : 11, at, a == probe.rank ? 1 : 2, &in, 1, n_out,
							 label);
						free(in.data);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_unique, a_count_other_than_the_plans_fails_the_run_with_the_op_named)
{
	static const int32_t planned[6] = { 1, 2, 1, 2, 3, 3 }, other[6] = { 1, 2, 1, 4, 3, 3 };
	struct op_tensor in = { .dtype = CEP_DTYPE_INT32, .rank = 1, .dims = { 6 },
				.data = (void *)planned };
	struct gpu_call d;

	GPU_REQUIRE();
	gpu_call_make(&d, "Unique", 11, NULL, 0, &in, 1, 4, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[0].data, other, sizeof(other)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Unique: the values of its inputs give 4 elements "
			 "along dimension 0, where the plan made for the shapes has 3");
	printf("  a bad count: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[0].data, planned, sizeof(planned)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
}
