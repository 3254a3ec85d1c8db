/*
 * test_cuda_hardmax.c — the CUDA kernel of Hardmax (kernels/cuda/
 * hardmax.c) against the reference kernel of kernels/cpu/hardmax.c on
 * fresh random data, specials included, and on data full of ties: every
 * axis of several shapes under both axis rules (opsets 1 and 13, and
 * their defaults), every type each takes, printing the worst error of
 * each case.
 *
 * Everywhere: the registry gives Hardmax a CUDA kernel for each type and
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

Test(cuda_hardmax, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "Hardmax", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "Hardmax/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 2 types at 1-12, 3 from 13. */
	cr_assert_eq(checked, 2 * 12 + 3 * (OP_OPSET_MAX - 12));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_hardmax, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

Test(gpu_hardmax, both_axis_rules_and_every_type_match_the_host)
{
	static const char *const shapes[] = { "", "1000", "7,33", "4,5,6", "3,1,130,2", "2,0,3" };
	static const int opsets[] = { 1, 13 };
	unsigned seed = 107u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t, o;
	int a, ties;

	GPU_REQUIRE();
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (o = 0; o < 2; o++) {
			for (t = 0; t < 3; t++) {
				struct op_tensor probe = { .dtype = all_types[t] };

				if (all_types[t] == CEP_DTYPE_BFLOAT16 && opsets[o] < 13)
					continue;
				shape_parse(&probe, shapes[s]);
				/* a == rank: no attribute, the opset's default. */
				for (a = probe.rank ? -probe.rank : 0; a <= probe.rank; a++) {
					struct op_attr at = { .name = "axis", .type = OP_ATTR_INT, .i = a };
					bool dflt = a == probe.rank;

					if (dflt && opsets[o] < 13 && probe.rank < 2)
						continue; /* default axis 1 needs rank 2 */
					for (ties = 0; ties < 2; ties++) {
						struct op_tensor in = host_tensor(all_types[t], shapes[s],
										  &seed, !ties);
						int64_t n = op_dims_product(&in, 0, in.rank), i;
						char label[96];

						for (i = 0; ties && i < n; i++)
							cpu_store_f(in.data, in.dtype, i,
								    (float)(rnd(&seed) % 4));
						snprintf(label, sizeof(label), "%s [%s] axis %s%d%s",
							 cep_dtype_name(all_types[t]), shapes[s],
							 dflt ? "default " : "", dflt ? 0 : a,
							 ties ? " ties" : "");
						bad += gpu_check("Hardmax", opsets[o], &at, dflt ? 0 : 1,
								 &in, 1, 1, label);
						free(in.data);
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
