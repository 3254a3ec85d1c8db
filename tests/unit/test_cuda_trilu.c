/*
 * test_cuda_trilu.c — the CUDA kernel of Trilu (kernels/cuda/trilu.c)
 * against the reference kernel of kernels/cpu/trilu.c on fresh random
 * data of every stored type: square, wide, tall, batched and empty
 * matrices, both triangles, diagonals from far below to far above and no
 * k at all, printing the worst error of each case (the elements are
 * copies or zeros, so any error is a wrong element).
 *
 * Everywhere: the registry gives Trilu a CUDA kernel for each type and
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

Test(cuda_trilu, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "Trilu", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "Trilu/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	cr_assert_eq(checked, 8 * (OP_OPSET_MAX - 13));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_trilu, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

Test(gpu_trilu, every_type_shape_and_diagonal_matches_the_host)
{
	static const char *const shapes[] = { "17,17", "5,40", "300,3", "3,2,33,65", "2,0,4",
					      "1,1" };
	static const int64_t ks[] = { INT64_MIN, -40, -1, 0, 1, 3, 64, INT64_MAX };
	unsigned seed = 79u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t s, t, k;
	int upper;

	GPU_REQUIRE();
	for (t = 0; t < N_TYPES; t++) {
		for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			for (k = 0; k <= sizeof(ks) / sizeof(ks[0]); k++) {
				for (upper = 0; upper < 2; upper++) {
					struct op_attr a = { .name = "upper", .type = OP_ATTR_INT,
							     .i = upper };
					bool with_k = k < sizeof(ks) / sizeof(ks[0]);
					struct op_tensor in[2];
					char label[96];

					in[0] = host_tensor(all_types[t], shapes[s], &seed, true);
					in[1] = int64_tensor(with_k ? &ks[k] : ks, -1);
					snprintf(label, sizeof(label), "%s [%s] upper %d k %s%lld",
						 cep_dtype_name(all_types[t]), shapes[s], upper,
						 with_k ? "" : "none ", with_k ? (long long)ks[k] : 0LL);
					bad += gpu_check("Trilu", 14, &a, 1, in, with_k ? 2 : 1, 1, label);
					free_all(in, 2);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
