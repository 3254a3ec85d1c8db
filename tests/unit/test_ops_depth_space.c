/*
 * test_ops_depth_space.c — DepthToSpace and SpaceToDepth on the host
 * backend (kernels/cpu/depth_space.c): both modes of each against the
 * specification's reshape-transpose-reshape formulas (worked out with
 * numpy), each the inverse of the other in either mode for every type,
 * the modes and types of each opset, inference with symbolic dimensions,
 * and the refusals.
 */
#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

#define ASSERT_MSG(want) \
	cr_assert_str_eq(cep_last_error(), want, "got \"%s\"", cep_last_error())

static const cep_dtype all_types[] = {
	CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64,
	CEP_DTYPE_INT32, CEP_DTYPE_INT8, CEP_DTYPE_UINT8, CEP_DTYPE_BOOL,
};
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* Runs op (blocksize 2, mode unless NULL) at opset over the int32 input
 * 0, 1, ... of dims and checks the output's dims and elements. */
static void check(const char *op, int opset, const char *mode, const int64_t *dims,
		  const int64_t *want_dims, const int32_t *want)
{
	struct op_attr a[2] = { oh_int("blocksize", 2), oh_string("mode", mode ? mode : "") };
	int32_t x[64];
	struct op_tensor in = oh_tensor(CEP_DTYPE_INT32, 4, dims, x), out;
	int64_t n = dims[0] * dims[1] * dims[2] * dims[3], i;
	int d;

	cr_assert_leq(n, 64);
	for (i = 0; i < n; i++)
		x[i] = (int32_t)i;
	cr_assert_eq(oh_run(op, opset, a, mode ? 2 : 1, &in, 1, &out, 1), 0, "%s %s: %s", op,
		     mode ? mode : "", cep_last_error());
	cr_assert_eq(out.rank, 4);
	for (d = 0; d < 4; d++)
		cr_assert_eq(out.dims[d], want_dims[d], "%s dim %d: %lld", op, d,
			     (long long)out.dims[d]);
	for (i = 0; i < n; i++)
		cr_assert_eq(((int32_t *)out.data)[i], want[i], "%s %s element %lld: %d, "
			     "expected %d", op, mode ? mode : "", (long long)i,
			     ((int32_t *)out.data)[i], want[i]);
	free(out.data);
}

Test(ops_depth_space, depth_to_space_in_both_modes)
{
	static const int32_t dcr[16] = { 0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15 };
	static const int32_t crd[16] = { 0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15 };

	/* (1, 8, 1, 2) with blocksize 2 is (1, 2, 2, 4). */
	check("DepthToSpace", 1, NULL, DIMS(1, 8, 1, 2), DIMS(1, 2, 2, 4), dcr);
	check("DepthToSpace", 11, NULL, DIMS(1, 8, 1, 2), DIMS(1, 2, 2, 4), dcr);
	check("DepthToSpace", 13, "DCR", DIMS(1, 8, 1, 2), DIMS(1, 2, 2, 4), dcr);
	check("DepthToSpace", 11, "CRD", DIMS(1, 8, 1, 2), DIMS(1, 2, 2, 4), crd);
	check("DepthToSpace", 28, "CRD", DIMS(1, 8, 1, 2), DIMS(1, 2, 2, 4), crd);
}

Test(ops_depth_space, space_to_depth_in_both_modes)
{
	static const int32_t one[16] = { 0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15 };
	static const int32_t dcr[32] = { 0, 2, 8, 10, 16, 18, 24, 26, 1, 3, 9, 11, 17, 19, 25, 27,
					 4, 6, 12, 14, 20, 22, 28, 30, 5, 7, 13, 15, 21, 23, 29, 31 };
	static const int32_t crd[32] = { 0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15,
					 16, 18, 24, 26, 17, 19, 25, 27, 20, 22, 28, 30, 21, 23, 29, 31 };

	check("SpaceToDepth", 1, NULL, DIMS(1, 1, 4, 4), DIMS(1, 4, 2, 2), one);
	check("SpaceToDepth", 13, NULL, DIMS(1, 2, 4, 4), DIMS(1, 8, 2, 2), dcr);
	check("SpaceToDepth", 27, "DCR", DIMS(1, 2, 4, 4), DIMS(1, 8, 2, 2), dcr);
	check("SpaceToDepth", 28, "DCR", DIMS(1, 2, 4, 4), DIMS(1, 8, 2, 2), dcr);
	check("SpaceToDepth", 28, "CRD", DIMS(1, 2, 4, 4), DIMS(1, 8, 2, 2), crd);
}

/* SpaceToDepth then DepthToSpace in the same mode gives the input back,
 * for every type, with a batch, several channels and blocksize 3. */
Test(ops_depth_space, each_undoes_the_other_for_every_type)
{
	static const char *const modes[2] = { "DCR", "CRD" };
	const int64_t dims[4] = { 2, 3, 6, 9 };
	const int64_t n = 2 * 3 * 6 * 9;
	size_t t;
	int m;

	for (t = 0; t < N_TYPES; t++) {
		for (m = 0; m < 2; m++) {
			struct op_attr a[2] = { oh_int("blocksize", 3), oh_string("mode", modes[m]) };
			void *x = malloc((size_t)n * cep_dtype_size(all_types[t]));
			struct op_tensor in = oh_tensor(all_types[t], 4, dims, x), mid, back;
			int64_t i;

			for (i = 0; i < n; i++)
				cpu_store_i(x, all_types[t], i, (i * 7) % 101);
			cr_assert_eq(oh_run("SpaceToDepth", 28, a, 2, &in, 1, &mid, 1), 0, "%s",
				     cep_last_error());
			cr_assert(mid.dims[1] == 27 && mid.dims[2] == 2 && mid.dims[3] == 3);
			cr_assert_eq(oh_run("DepthToSpace", 28, a, 2, &mid, 1, &back, 1), 0, "%s",
				     cep_last_error());
			cr_assert_eq(memcmp(back.data, x, (size_t)n * cep_dtype_size(all_types[t])), 0,
				     "%s %s", cep_dtype_name(all_types[t]), modes[m]);
			free(mid.data);
			free(back.data);
			/* bfloat16 only from opset 13. */
			cr_assert_eq(oh_run("SpaceToDepth", 12, a, 1, &in, 1, &mid, 1),
				     all_types[t] == CEP_DTYPE_BFLOAT16 ? CEP_EUNSUPPORTED : 0);
			if (all_types[t] != CEP_DTYPE_BFLOAT16)
				free(mid.data);
			free(x);
		}
	}
}

Test(ops_depth_space, inference_keeps_symbols_where_it_can)
{
	const int64_t n = OP_DIM_SYM(0), h = OP_DIM_SYM(1), w = OP_DIM_SYM(2);
	struct op_attr bs2 = oh_int("blocksize", 2), bs1 = oh_int("blocksize", 1);
	struct op_tensor in, out;

	in = oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(n, 12, h, w), NULL);
	cr_assert_eq(oh_infer("DepthToSpace", 13, &bs2, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert(out.rank == 4 && out.dims[0] == n && out.dims[1] == 3);
	cr_assert(out.dims[2] == OP_DIM_UNKNOWN && out.dims[3] == OP_DIM_UNKNOWN);
	cr_assert_eq(oh_infer("SpaceToDepth", 13, &bs1, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert(out.dims[0] == n && out.dims[1] == 12 && out.dims[2] == h && out.dims[3] == w);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(n, h, 8, 6), NULL);
	cr_assert_eq(oh_infer("SpaceToDepth", 13, &bs2, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert(out.dims[0] == n && out.dims[1] == OP_DIM_UNKNOWN && out.dims[2] == 4 &&
		  out.dims[3] == 3);
	in.rank = -1;
	cr_assert_eq(oh_infer("SpaceToDepth", 13, &bs2, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, -1);
}

Test(ops_depth_space, refusals)
{
	struct op_attr a[2] = { oh_int("blocksize", 2), oh_string("mode", "CRD") };
	struct op_attr zero = oh_int("blocksize", 0), xyz = oh_string("mode", "XYZ");
	struct op_attr bad[2] = { oh_int("blocksize", 2), xyz };
	struct op_tensor in, out;

	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 6, 2, 2), NULL);
	cr_assert_eq(oh_infer("DepthToSpace", 13, a, 1, &in, 1, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("DepthToSpace: channel count 6 is not a multiple of 4");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 4, 3, 2), NULL);
	cr_assert_eq(oh_infer("SpaceToDepth", 13, a, 1, &in, 1, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("SpaceToDepth: height 3 is not a multiple of 2");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 4, 2, 5), NULL);
	cr_assert_eq(oh_infer("SpaceToDepth", 13, a, 1, &in, 1, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("SpaceToDepth: width 5 is not a multiple of 2");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(4, 2, 2), NULL);
	cr_assert_eq(oh_infer("DepthToSpace", 13, a, 1, &in, 1, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("DepthToSpace: the input must be 4-D (N, C, H, W), not of rank 3");

	in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 4, 2, 2), NULL);
	cr_assert_eq(oh_infer("DepthToSpace", 13, NULL, 0, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("DepthToSpace: the blocksize attribute is required");
	cr_assert_eq(oh_infer("SpaceToDepth", 13, &zero, 1, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("SpaceToDepth: blocksize 0 is not in 1..1048576");
	cr_assert_eq(oh_infer("DepthToSpace", 13, bad, 2, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("DepthToSpace: mode \"XYZ\" is neither DCR nor CRD");
	/* The mode came to DepthToSpace at 11, to SpaceToDepth at 28. */
	cr_assert_eq(oh_infer("DepthToSpace", 10, a, 2, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("DepthToSpace: mode CRD needs opset 11 (the model has 10)");
	cr_assert_eq(oh_infer("SpaceToDepth", 27, a, 2, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("SpaceToDepth: mode CRD needs opset 28 (the model has 27)");
	cr_assert_eq(oh_infer("SpaceToDepth", 28, a, 2, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
}
