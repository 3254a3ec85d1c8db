/*
 * test_cuda_topk.c — the CUDA kernel of TopK (kernels/cuda/topk.c) against
 * the reference kernel of kernels/cpu/topk.c on fresh random data,
 * specials included (NaN, infinities, signed zeros), and on data full of
 * ties: every axis of several shapes, k from 0 to the whole axis, largest
 * and smallest, every type each opset takes, k as an attribute (opset 1)
 * and as an input, either output left out; printing the worst error of
 * each output. A k other than the plan's, read on the device, fails the
 * run with the operator named.
 *
 * Everywhere: the registry gives TopK a CUDA kernel for each type and
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

Test(cuda_topk, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "TopK", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "TopK/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 2 types at 1-10, 6 at 11-23, 7 from 24. */
	cr_assert_eq(checked, 2 * 10 + 6 * 13 + 7 * (OP_OPSET_MAX - 23));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_topk, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Keeps t's elements to a few distinct values, so that ties abound. */
static void few_values(struct op_tensor *t, unsigned *seed)
{
	int64_t n = op_dims_product(t, 0, t->rank), i;

	for (i = 0; i < n; i++)
		cpu_store_i(t->data, t->dtype, i, (int64_t)(rnd(seed) % 5) - 2);
}

Test(gpu_topk, every_axis_k_and_type_matches_the_host)
{
	static const char *const shapes[] = { "1", "100", "6,37", "3,4,5", "2,300,3", "0,4" };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	unsigned seed = 97u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int a, largest, ties, which;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			struct op_tensor probe = { .dtype = types[t] };
			int opset = types[t] == CEP_DTYPE_BFLOAT16 ? 24 : t < 2 ? 10 + (int)s % 2 : 11;

			shape_parse(&probe, shapes[s]);
			for (a = -probe.rank; a < probe.rank; a++) {
				int64_t n = probe.dims[a < 0 ? a + probe.rank : a];
				/* k of 1 only where the axis has an element. */
				int64_t ks[4] = { 0, n > 0, n / 2, n };

				for (which = 0; which < 4; which++) {
					for (largest = 0; largest < 2; largest++) {
						for (ties = 0; ties < 2; ties++) {
							struct op_attr at[2] = {
								{ .name = "axis", .type = OP_ATTR_INT, .i = a },
								{ .name = "largest", .type = OP_ATTR_INT,
								  .i = largest },
							};
							struct op_tensor in[2];
							char label[120];

							in[0] = host_tensor(types[t], shapes[s], &seed, true);
							if (ties)
								few_values(&in[0], &seed);
							in[1] = int64_tensor(&ks[which], 1);
							snprintf(label, sizeof(label),
								 "%s [%s] axis %d k %lld largest %d%s",
								 cep_dtype_name(types[t]), shapes[s], a,
								 (long long)ks[which], largest,
								 ties ? " ties" : "");
							bad += gpu_check("TopK", opset, at, 2, in, 2, 2, label);
							free_all(in, 2);
						}
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Opset 1's attribute k; each output left unnamed in turn. */
Test(gpu_topk, the_attribute_k_and_a_missing_output)
{
	unsigned seed = 101u ^ (unsigned)getpid();
	struct op_attr at[2] = { { .name = "k", .type = OP_ATTR_INT, .i = 7 },
				 { .name = "axis", .type = OP_ATTR_INT, .i = 0 } };
	int64_t k = 7, bad = 0;
	struct op_tensor in[2];
	int absent;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT16, "40,9", &seed, true);
	bad += gpu_check("TopK", 1, at, 2, in, 1, 2, "float16 [40,9] attribute k 7 axis 0");
	in[1] = int64_tensor(&k, 1);
	for (absent = 0; absent < 2; absent++)
		bad += gpu_check_absent("TopK", 11, &at[1], 1, in, 2, 2, absent,
					absent ? "float16 [40,9] k 7, no indices"
					       : "float16 [40,9] k 7, no values");
	free_all(in, 2);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_topk, a_k_other_than_the_plans_fails_the_run_with_the_op_named)
{
	static const int64_t good = 3, worse = 2;
	unsigned seed = 103u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "4,5", &seed, false);
	in[1] = int64_tensor(&good, 1);
	gpu_call_make(&d, "TopK", 11, NULL, 0, in, 2, 2, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "TopK: the values of its inputs give 2 elements along "
			 "dimension 1, where the plan made for the shapes has 3");
	printf("  a bad k: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &good, sizeof(good)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}
