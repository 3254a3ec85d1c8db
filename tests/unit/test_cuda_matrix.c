/*
 * test_cuda_matrix.c — the CUDA kernels of EyeLike and Det
 * (kernels/cuda/matrix.c) against the reference kernels of
 * kernels/cpu/matrix.c: EyeLike from every stored type to every stored
 * type with diagonals inside and outside the matrix; Det of fresh random
 * matrices from 0 x 0 to 64 x 64, in batches larger than one launch's
 * blocks, singular ones and NaNs among them, for every float type;
 * printing the worst error of each.
 *
 * Everywhere: the registry gives both a CUDA kernel for each type and
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

Test(cuda_matrix, the_device_covers_what_the_host_covers)
{
	static const char *const ops[] = { "EyeLike", "Det" };
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
	/* EyeLike: 7 types at 9-21, 8 from 22; Det: 2 at 11-21, 3 from 22. */
	cr_assert_eq(checked, 7 * 13 + 8 * (OP_OPSET_MAX - 21) + 2 * 11 + 3 * (OP_OPSET_MAX - 21));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_matrix, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

Test(gpu_matrix, eyelike_between_every_pair_of_types)
{
	static const char *const shapes[] = { "1,1", "3,4", "70,33", "0,5" };
	static const int64_t ks[] = { 0, 2, -1, 40, -70 };
	unsigned seed = 601u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t from, to, s, k;

	GPU_REQUIRE();
	for (from = 0; from < N_TYPES; from++) {
		for (to = 0; to < N_TYPES; to++) {
			for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
				for (k = 0; k < sizeof(ks) / sizeof(ks[0]); k++) {
					struct op_attr at[2] = {
						{ .name = "dtype", .type = OP_ATTR_INT, .i = all_types[to] },
						{ .name = "k", .type = OP_ATTR_INT, .i = ks[k] },
					};
					struct op_tensor in = host_tensor(all_types[from], shapes[s], &seed,
									  false);
					char label[96];

					snprintf(label, sizeof(label), "%s to %s [%s] k %lld",
						 cep_dtype_name(all_types[from]),
						 cep_dtype_name(all_types[to]), shapes[s], (long long)ks[k]);
					bad += gpu_check("EyeLike", 22, at, 2, &in, 1, 1, label);
					free(in.data);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* Copies row 0 of every matrix of t (m x m each) over its last row. */
static void make_singular(struct op_tensor *t, int64_t m)
{
	int64_t mats = op_dims_product(t, 0, t->rank - 2), b, j;
	size_t es = cep_dtype_size(t->dtype);
	unsigned char *d = t->data;

	for (b = 0; b < mats && m > 1; b++) {
		for (j = 0; j < m; j++)
			memcpy(d + ((b * m + m - 1) * m + j) * es, d + (b * m * m + j) * es, es);
	}
}

Test(gpu_matrix, det_of_random_matrices_matches_the_host)
{
	static const struct {
		const char *shape;
		int64_t m;
	} cases[] = { { "0,0", 0 }, { "1,1", 1 }, { "2,2", 2 }, { "7,3,3", 3 }, { "2,5,5", 5 },
		      { "3000,4,4", 4 }, { "2,16,16", 16 }, { "64,64", 64 } };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	unsigned seed = 607u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t;
	int variant;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < 3; t++) {
			/* Plain, singular, with the float specials. */
			for (variant = 0; variant < 3; variant++) {
				struct op_tensor in = host_tensor(types[t], cases[c].shape, &seed,
								  variant == 2);
				char label[96];

				if (variant == 1)
					make_singular(&in, cases[c].m);
				snprintf(label, sizeof(label), "%s [%s]%s", cep_dtype_name(types[t]),
					 cases[c].shape,
					 variant == 1 ? " singular" : variant == 2 ? " specials" : "");
				bad += gpu_check("Det", t == 2 ? 22 : 11, NULL, 0, &in, 1, 1, label);
				free(in.data);
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
