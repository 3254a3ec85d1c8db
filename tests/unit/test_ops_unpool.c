/*
 * test_ops_unpool.c — MaxUnpool of kernels/cpu/unpool.c, called the way
 * the engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the conformance cases worked out by hand (with and
 * without output_shape), the inferred shape from strides and pads,
 * MaxPool's values and indices unpooled and pooled again, two elements
 * sent to one place (the later wins), the half types, and the refusals
 * (attributes, types, shapes, an output_shape too small, an index out of
 * range).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

static const int64_t k22[2] = { 2, 2 };

/* test_maxunpool_export_without_output_shape and _with_output_shape:
 * indices 5, 7, 13, 15 of the inferred 4 x 4, placed at the same
 * coordinates of a 5 x 5 output in the second. */
Test(ops_unpool, the_conformance_cases_by_hand)
{
	float x[4] = { 1, 2, 3, 4 };
	int64_t idx[4] = { 5, 7, 13, 15 }, shape[4] = { 1, 1, 5, 5 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 2, k22), oh_ints("strides", 2, k22) };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), x),
				   oh_tensor(CEP_DTYPE_INT64, 4, DIMS(1, 1, 2, 2), idx),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(4), shape) };
	struct op_tensor out;
	int i;

	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 4);
	cr_assert_eq(out.dims[3], 4);
	for (i = 0; i < 16; i++)
		cr_assert_eq(((float *)out.data)[i],
			     i == 5 ? 1.0f : i == 7 ? 2.0f : i == 13 ? 3.0f : i == 15 ? 4.0f : 0.0f,
			     "element %d", i);
	free(out.data);
	cr_assert_eq(oh_run("MaxUnpool", 9, a, 2, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 5);
	cr_assert_eq(out.dims[3], 5);
	for (i = 0; i < 25; i++)
		cr_assert_eq(((float *)out.data)[i],
			     i == 6 ? 1.0f : i == 8 ? 2.0f : i == 16 ? 3.0f : i == 18 ? 4.0f : 0.0f,
			     "element %d", i);
	free(out.data);
}

/* (in - 1) * stride - pads + kernel per spatial dim: 1-D 3 -> (3 - 1) * 3
 * - 1 - 0 + 2 = 7, 3-D 2 x 2 x 2 kernel 2 stride 2 -> 4 x 4 x 4. */
Test(ops_unpool, the_inferred_shape)
{
	float x[8] = { 0 };
	int64_t idx[8] = { 0 };
	int64_t k1[1] = { 2 }, s1[1] = { 3 }, p1[2] = { 1, 0 }, k3[3] = { 2, 2, 2 };
	struct op_attr a1[3] = { oh_ints("kernel_shape", 1, k1), oh_ints("strides", 1, s1),
				 oh_ints("pads", 2, p1) };
	struct op_attr a3[2] = { oh_ints("kernel_shape", 3, k3), oh_ints("strides", 3, k3) };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 1, 3), x),
				   oh_tensor(CEP_DTYPE_INT64, 3, DIMS(2, 1, 3), idx) };
	struct op_tensor out;

	cr_assert_eq(oh_infer("MaxUnpool", 11, a1, 3, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[2], 7);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 5, DIMS(1, 1, 2, 2, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 5, DIMS(1, 1, 2, 2, 2), idx);
	cr_assert_eq(oh_infer("MaxUnpool", 11, a3, 2, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[2], 4);
	cr_assert_eq(out.dims[3], 4);
	cr_assert_eq(out.dims[4], 4);
}

/* MaxPool over 2 x 3 planes of 6 x 8 (kernel 2, stride 2), then MaxUnpool
 * of its values and indices (which count N and C too): every maximum is
 * back in its place, every other element 0, and pooling that again gives
 * the same maxima. */
Test(ops_unpool, pool_unpool_pool_round_trip)
{
	enum { N = 2, C = 3, H = 6, W = 8 };
	float x[N * C * H * W];
	unsigned seed = 31;
	struct op_attr a[2] = { oh_ints("kernel_shape", 2, k22), oh_ints("strides", 2, k22) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(N, C, H, W), x), pooled[2];
	struct op_tensor un, again, uin[2];
	int64_t i, kept = 0;

	/* Positive, so that the zeros around them never win a window. */
	for (i = 0; i < N * C * H * W; i++)
		x[i] = oh_rand(&seed) + 1.5f;
	cr_assert_eq(oh_run("MaxPool", 12, a, 2, &in, 1, pooled, 2), 0, "%s", cep_last_error());
	uin[0] = pooled[0];
	uin[1] = pooled[1];
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, uin, 2, &un, 1), 0, "%s", cep_last_error());
	cr_assert_eq(un.dims[2], H);
	cr_assert_eq(un.dims[3], W);
	for (i = 0; i < N * C * H * W; i++) {
		float v = ((float *)un.data)[i];

		cr_assert(v == 0.0f || v == x[i], "element %lld", (long long)i);
		kept += v != 0.0f;
	}
	cr_assert_eq(kept, N * C * (H / 2) * (W / 2));
	cr_assert_eq(oh_run("MaxPool", 12, a, 2, &un, 1, &again, 1), 0, "%s", cep_last_error());
	for (i = 0; i < N * C * (H / 2) * (W / 2); i++)
		cr_assert_eq(((float *)again.data)[i], ((float *)pooled[0].data)[i]);
	free(again.data);
	free(un.data);
	free(pooled[0].data);
	free(pooled[1].data);
}

/* Two elements sent to one position leave the later; float16 and
 * bfloat16 (from 22) move as they are. */
Test(ops_unpool, the_later_element_wins_and_half_types)
{
	static const cep_dtype types[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	int64_t idx[4] = { 3, 3, 0, 1 }, k1[1] = { 2 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 1, k1), oh_ints("strides", 1, k1) };
	uint16_t x[4];
	struct op_tensor in[2], out;
	int t, i;

	for (t = 0; t < 2; t++) {
		for (i = 0; i < 4; i++)
			cpu_store_f(x, types[t], i, (float)(i + 1));
		in[0] = oh_tensor(types[t], 3, DIMS(1, 1, 4), x);
		in[1] = oh_tensor(CEP_DTYPE_INT64, 3, DIMS(1, 1, 4), idx);
		cr_assert_eq(oh_run("MaxUnpool", 22, a, 2, in, 2, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[2], 8);
		cr_assert_eq(cpu_load_f(out.data, types[t], 0), 3.0f);
		cr_assert_eq(cpu_load_f(out.data, types[t], 1), 4.0f);
		cr_assert_eq(cpu_load_f(out.data, types[t], 2), 0.0f);
		cr_assert_eq(cpu_load_f(out.data, types[t], 3), 2.0f);
		free(out.data);
	}
	cr_assert_eq(oh_run("MaxUnpool", 21, a, 2, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_unpool, refusals_name_what_is_wrong)
{
	float x[4] = { 1, 2, 3, 4 };
	int64_t idx[4] = { 5, 7, 13, 16 }, small[4] = { 1, 1, 3, 5 }, other_c[4] = { 1, 2, 4, 4 };
	int32_t idx32[4] = { 0 };
	int64_t k3[3] = { 2, 2, 2 };
	struct op_attr a[2] = { oh_ints("kernel_shape", 2, k22), oh_ints("strides", 2, k22) };
	struct op_attr bad = oh_ints("kernel_shape", 3, k3);
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), x),
				   oh_tensor(CEP_DTYPE_INT64, 4, DIMS(1, 1, 2, 2), idx),
				   oh_tensor(CEP_DTYPE_INT64, 1, DIMS(4), small) };
	struct op_tensor out;

	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: index 16 is out of range for the 16 "
			 "elements of the unpooled shape");
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 3, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: output_shape[2] is 3, it must be at least "
			 "the inferred 4");
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(4), other_c);
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 3, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: output_shape[1] is 2, it must be X's 1");
	cr_assert_eq(oh_run("MaxUnpool", 11, NULL, 0, in, 2, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: attribute 'kernel_shape' is required");
	cr_assert_eq(oh_run("MaxUnpool", 11, &bad, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: kernel_shape has 3 entries, it needs 2");
	in[1] = oh_tensor(CEP_DTYPE_INT32, 4, DIMS(1, 1, 2, 2), idx32);
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: I is int32, not int64");
	in[1] = oh_tensor(CEP_DTYPE_INT64, 4, DIMS(1, 1, 1, 4), idx);
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: I and X differ in dimension 2");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), x);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 2), idx);
	cr_assert_eq(oh_run("MaxUnpool", 11, a, 2, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "MaxUnpool: X must have rank 3 or more (N, C, "
			 "spatial...), it has 2");
}
