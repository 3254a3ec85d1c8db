/*
 * test_cuda_center_crop_pad.c — the CUDA kernel of CenterCropPad
 * (kernels/cuda/center_crop_pad.c) against the reference kernel of
 * kernels/cpu/center_crop_pad.c on fresh random data of every stored
 * type: crops and pads by odd and even amounts, to zero, along every axis
 * or some of them; printing the worst error of each.
 *
 * Everywhere: the registry gives CenterCropPad a CUDA kernel for each
 * type the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1 the
 * rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};

#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

Test(cuda_center_crop_pad, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "CenterCropPad", opset, &s) != 0)
			continue;
		for (t = 0; t < N_TYPES; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, all_types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, all_types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "CenterCropPad/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(all_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	cr_assert_eq(checked, 8 * (OP_OPSET_MAX - 17));
}

TestSuite(gpu_center_crop_pad, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

Test(gpu_center_crop_pad, crops_and_pads_match_the_host)
{
	static const struct {
		const char *x;
		int n;                  /* entries of shape and axes; axes[0] = 99: none */
		int64_t shape[4], axes[4];
	} cases[] = {
		{ "20,10,3", 3, { 10, 7, 3 }, { 99 } },
		{ "20,8,3", 3, { 10, 10, 3 }, { 99 } },
		{ "3,20,8", 2, { 10, 9 }, { 1, 2 } },
		{ "20,8,3", 2, { 11, 9 }, { -3, -2 } },
		{ "7", 1, { 0 }, { 99 } },
		{ "5,1,6,2", 2, { 9, 1 }, { 1, 3 } },
		{ "300,301", 2, { 517, 2 }, { 99 } },
	};
	unsigned seed = 801u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t c, t;

	GPU_REQUIRE();
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (t = 0; t < N_TYPES; t++) {
			struct op_attr at = { .name = "axes", .type = OP_ATTR_INTS, .n = cases[c].n,
					      .ints = cases[c].axes };
			struct op_tensor in[2];
			char label[96];

			in[0] = host_tensor(all_types[t], cases[c].x, &seed, true);
			in[1] = int64_tensor(cases[c].shape, cases[c].n);
			snprintf(label, sizeof(label), "%s [%s] case %zu", cep_dtype_name(all_types[t]),
				 cases[c].x, c);
			bad += gpu_check("CenterCropPad", 18, &at, cases[c].axes[0] == 99 ? 0 : 1, in,
					 2, 1, label);
			free_all(in, 2);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}
