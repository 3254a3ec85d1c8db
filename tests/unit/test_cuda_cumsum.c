/*
 * test_cuda_cumsum.c — the CUDA kernels of CumSum and CumProd
 * (kernels/cuda/cumsum.c) against the reference kernels of
 * kernels/cpu/cumsum.c on fresh random data, specials included, printing
 * the worst absolute and relative error of each case: every axis of
 * several shapes, negative ones, int32 and int64 axes, each of exclusive
 * and reverse, every type each opset takes; an axis out of range, read on
 * the device, failing the run with the operator named.
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

Test(cuda_cumsum, the_device_covers_what_the_host_covers)
{
	static const char *const ops[] = { "CumSum", "CumProd" };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t i, t;

	for (i = 0; i < 2; i++) {
		for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
			if (op_schema_find("", ops[i], opset, &s) != 0)
				continue;
			for (t = 0; t < N_TYPES; t++) {
				bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t],
							       &host) == 0;
				bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t],
							      &dev) == 0;

				cr_assert_eq(has_dev, has_host, "%s/%d %s: host %d, cuda %d", ops[i],
					     opset, cep_dtype_name(all_types[t]), has_host, has_dev);
				checked += has_dev;
			}
		}
	}
	cep__clear_error();
	/* CumSum: 3 types at 11-13, 5 at 14-28; CumProd: 5 at 26-28. */
	cr_assert_eq(checked, 3 * 3 + 5 * 15 + 5 * 3);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_cumsum, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* An axis scalar of int64 (wide) or int32. */
static struct op_tensor axis_tensor(int64_t a, bool wide)
{
	struct op_tensor t = { .dtype = wide ? CEP_DTYPE_INT64 : CEP_DTYPE_INT32, .rank = 0 };

	t.data = calloc(1, 8);
	cr_assert_not_null(t.data);
	if (wide)
		*(int64_t *)t.data = a;
	else
		*(int32_t *)t.data = (int32_t)a;
	return t;
}

Test(gpu_cumsum, every_axis_mode_and_type_matches_the_host)
{
	static const char *const shapes[] = { "1000", "7,33", "4,5,6", "3,1,130,2", "2,0,3" };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT32, CEP_DTYPE_INT64 };
	unsigned seed = 71u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t;
	int p, a, mode;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < 5; t++) {
			for (p = 0; p < 2; p++) {
				struct op_tensor probe = { .dtype = types[t] };
				const char *op = p ? "CumProd" : "CumSum";
				int opset = p ? 26 : (t >= 1 && t <= 2 ? 14 : 11);

				shape_parse(&probe, shapes[s]);
				for (a = -probe.rank; a < probe.rank; a++) {
					for (mode = 0; mode < 4; mode++) {
						struct op_attr at[2] = {
							{ .name = "exclusive", .type = OP_ATTR_INT, .i = mode & 1 },
							{ .name = "reverse", .type = OP_ATTR_INT, .i = mode >> 1 },
						};
						struct op_tensor in[2];
						char label[96];

						in[0] = host_tensor(types[t], shapes[s], &seed, true);
						in[1] = axis_tensor(a, (mode + a) % 2 == 0);
						snprintf(label, sizeof(label), "%s [%s] axis %d excl %d rev %d",
							 cep_dtype_name(types[t]), shapes[s], a, mode & 1,
							 mode >> 1);
						bad += gpu_check(op, opset, at, 2, in, 2, 1, label);
						free_all(in, 2);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_cumsum, an_axis_out_of_range_fails_the_run_with_the_op_named)
{
	static const int64_t good = 1, worse = 5;
	unsigned seed = 73u ^ (unsigned)getpid();
	struct op_tensor in[2];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "3,4,5", &seed, false);
	in[1] = axis_tensor(good, true);
	gpu_call_make(&d, "CumSum", 14, NULL, 0, in, 2, 1, -1);
	/* The plan was made for axis 1; the device now holds 5. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert(strncmp(cep_last_error(), "CumSum: axes entry 0 is 5, out of range for rank 3",
			  50) == 0, "%s", cep_last_error());
	printf("  a bad axis: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	/* The record was cleared: the stream carries on. */
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[1].data, &good, sizeof(good)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 2);
}
