/*
 * test_cuda_reverse_sequence.c — the CUDA kernel of ReverseSequence
 * (kernels/cuda/reverse_sequence.c) against the reference kernel of
 * kernels/cpu/reverse_sequence.c on fresh random data and lengths (0 to
 * the whole time axis): both axis orders, inner dimensions, every stored
 * type; printing the worst error of each. A length outside the time axis,
 * read on the device, fails the run with the operator named.
 *
 * Everywhere: the registry gives ReverseSequence a CUDA kernel for each
 * type and opset the host has one for. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

Test(cuda_reverse_sequence, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "ReverseSequence", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "ReverseSequence/%d %s: host %d, cuda %d",
				     opset, cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 7 types at 10-27, 8 from 28. */
	cr_assert_eq(checked, 7 * 18 + 8 * (OP_OPSET_MAX - 27));
}

TestSuite(gpu_reverse_sequence, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* n random lengths in [0, steps]. */
static struct op_tensor lengths(int64_t n, int64_t steps, unsigned *seed)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_INT64, .rank = 1, .dims = { n } };
	int64_t i;

	t.data = calloc(1, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++)
		((int64_t *)t.data)[i] = (int64_t)(rnd(seed) % (unsigned)(steps + 1));
	return t;
}

Test(gpu_reverse_sequence, random_lengths_match_the_host)
{
	static const char *const shapes[] = { "4,4", "1,7", "9,1", "13,5,3", "6,40,2,3", "0,3",
					      "500,300" };
	unsigned seed = 701u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int time_axis;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < N_TYPES; t++) {
			for (time_axis = 0; time_axis < 2; time_axis++) {
				struct op_attr at[2] = {
					{ .name = "time_axis", .type = OP_ATTR_INT, .i = time_axis },
					{ .name = "batch_axis", .type = OP_ATTR_INT, .i = 1 - time_axis },
				};
				struct op_tensor in[2];
				char label[96];

				in[0] = host_tensor(all_types[t], shapes[s], &seed, true);
				in[1] = lengths(in[0].dims[1 - time_axis], in[0].dims[time_axis], &seed);
				snprintf(label, sizeof(label), "%s [%s] time axis %d",
					 cep_dtype_name(all_types[t]), shapes[s], time_axis);
				bad += gpu_check("ReverseSequence", all_types[t] == CEP_DTYPE_BFLOAT16 ? 28
								    : 10, at, 2, in, 2, 1, label);
				free_all(in, 2);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_reverse_sequence, a_length_past_the_time_axis_fails_the_run_with_the_op_named)
{
	static const int64_t good[3] = { 1, 2, 3 }, worse[3] = { 1, 9, 3 };
	unsigned seed = 709u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "4,3,2", &seed, false);
	in[1] = int64_tensor(good, 3);
	gpu_call_make(&d, "ReverseSequence", 10, NULL, 0, in, 2, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "ReverseSequence: the value 9 read at run time for "
			 "dimension 0 is not allowed (past the limit)");
	printf("  a bad length: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	gpu_call_free(&d);
	free_all(in, 2);
}
