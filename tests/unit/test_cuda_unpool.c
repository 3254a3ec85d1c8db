/*
 * test_cuda_unpool.c — the CUDA kernel of MaxUnpool (kernels/cuda/unpool.c)
 * against the reference kernel of kernels/cpu/unpool.c on fresh random
 * data and indices: 1-D, 2-D and 3-D windows, strides and pads, an
 * output_shape larger than the inferred one, indices that repeat (the
 * later element wins on both), every float type; printing the worst
 * error of each. An index out of range, read on the device, fails the
 * run with the operator named.
 *
 * Everywhere: the registry gives MaxUnpool a CUDA kernel for each type
 * and opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1
 * the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

Test(cuda_unpool, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "MaxUnpool", opset, &s) != 0)
			continue;
		for (t = 0; t < 3; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, float_types[t],
						       &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, float_types[t],
						      &dev) == 0;

			cr_assert_eq(has_dev, has_host, "MaxUnpool/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(float_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 2 types at 9-21, 3 from 22. */
	cr_assert_eq(checked, 2 * 13 + 3 * (OP_OPSET_MAX - 21));
}

TestSuite(gpu_unpool, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Indices for x's elements into total positions: distinct ones when
 * unique (a shuffled prefix of 0 .. total - 1), else any. */
static struct op_tensor indices(const struct op_tensor *x, int64_t total, bool unique,
				unsigned *seed)
{
	struct op_tensor t = *x;
	int64_t n = op_dims_product(x, 0, x->rank), i, *perm;

	t.dtype = CEP_DTYPE_INT64;
	t.data = calloc(1, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
	perm = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
	cr_assert(t.data && perm);
	for (i = 0; i < total; i++)
		perm[i] = i;
	for (i = 0; i < total; i++) {
		int64_t j = i + (int64_t)(rnd(seed) % (unsigned)(total - i)), v = perm[i];

		perm[i] = perm[j];
		perm[j] = v;
	}
	for (i = 0; i < n; i++)
		((int64_t *)t.data)[i] = unique ? perm[i] : (int64_t)(rnd(seed) % (unsigned)total);
	free(perm);
	return t;
}

Test(gpu_unpool, random_indices_match_the_host)
{
	static const struct {
		const char *x;
		int n;
		int64_t k[3], s[3], pads[6];
		int64_t total;                  /* elements of the inferred shape */
		int64_t out[5];                 /* output_shape, or out[0] 0: none */
	} cases[] = {
		{ "2,3,5", 1, { 2 }, { 2 }, { 0, 0 }, 2 * 3 * 10, { 0 } },
		{ "1,2,4,4", 2, { 2, 2 }, { 2, 2 }, { 0 }, 2 * 64, { 0 } },
		{ "1,2,4,4", 2, { 2, 2 }, { 2, 2 }, { 0 }, 2 * 64, { 1, 2, 9, 11 } },
		{ "2,1,5,3", 2, { 3, 2 }, { 2, 1 }, { 1, 0, 0, 1 }, 2 * 10 * 3, { 0 } },
		{ "1,2,2,3,2", 3, { 2, 2, 2 }, { 2, 2, 2 }, { 0 }, 2 * 4 * 6 * 4, { 0 } },
		{ "4,16,30,30", 2, { 2, 2 }, { 2, 2 }, { 0 }, 4 * 16 * 60 * 60, { 0 } },
	};
	unsigned seed = 901u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t;
	int unique;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < 3; t++) {
			for (unique = 0; unique < 2; unique++) {
				int sp = cases[c].n, n_in = cases[c].out[0] ? 3 : 2;
				struct op_attr at[3] = {
					{ .name = "kernel_shape", .type = OP_ATTR_INTS, .n = sp,
					  .ints = cases[c].k },
					{ .name = "strides", .type = OP_ATTR_INTS, .n = sp,
					  .ints = cases[c].s },
					{ .name = "pads", .type = OP_ATTR_INTS, .n = 2 * sp,
					  .ints = cases[c].pads },
				};
				struct op_tensor in[3];
				char label[96];

				in[0] = host_tensor(float_types[t], cases[c].x, &seed, true);
				in[1] = indices(&in[0], cases[c].total, unique, &seed);
				in[2] = int64_tensor(cases[c].out, in[0].rank);
				snprintf(label, sizeof(label), "%s [%s]%s%s",
					 cep_dtype_name(float_types[t]), cases[c].x,
					 unique ? "" : " repeated indices",
					 n_in == 3 ? " output_shape" : "");
				bad += gpu_check("MaxUnpool", t == 2 ? 22 : 11, at, 3, in, n_in, 1,
						 label);
				free_all(in, 3);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_unpool, an_index_out_of_range_fails_the_run_with_the_op_named)
{
	static const int64_t k[2] = { 2, 2 }, good[4] = { 0, 3, 9, 15 }, worse[4] = { 0, 99, 9, 15 };
	unsigned seed = 907u ^ (unsigned)getpid();
	struct op_attr at[2] = { { .name = "kernel_shape", .type = OP_ATTR_INTS, .n = 2, .ints = k },
				 { .name = "strides", .type = OP_ATTR_INTS, .n = 2, .ints = k } };
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "1,1,2,2", &seed, false);
	in[1] = int64_tensor(good, 4);
	in[1].rank = 4;
	in[1].dims[0] = in[1].dims[1] = 1;
	in[1].dims[2] = in[1].dims[3] = 2;
	gpu_call_make(&d, "MaxUnpool", 11, at, 2, in, 2, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: index 99 is out of range for dimension 0 "
			 "of size 16");
	printf("  a bad index: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	gpu_call_free(&d);
	free_all(in, 2);
}
