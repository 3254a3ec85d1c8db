/*
 * test_ops_pad.c — Pad on the host backend (kernels/cpu/pad.c): every mode
 * against numpy.pad's results (reflection and wrapping continued past the
 * dimension), negative pads that crop before the fill, the three forms of
 * the operator (pads an attribute before opset 11, an input after, axes
 * from 18), the types of each opset, inference with unknown pads and
 * symbolic dims, and the refusals.
 */
#include <criterion/criterion.h>

#include "tests/unit/ops_harness.h"

static const int32_t data23[6] = { 1, 2, 3, 4, 5, 6 };

/* Pads the 2 x 3 matrix data23 (int32) by pads (4 values) in mode at
 * opset 19 and checks the 5 x 8 result against want. */
static void pad_check(const char *mode, const int64_t *pads, const int32_t *want, int64_t rows,
		      int64_t cols)
{
	int64_t dd[2] = { 2, 3 }, pd[1] = { 4 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_INT32, 2, dd, (void *)data23),
				   oh_tensor(CEP_DTYPE_INT64, 1, pd, (void *)pads) };
	struct op_attr a = oh_string("mode", mode);
	struct op_tensor out;
	int64_t i;

	cr_assert_eq(oh_run("Pad", 19, &a, 1, in, 2, &out, 1), 0, "%s: %s", mode, cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], rows);
	cr_assert_eq(out.dims[1], cols);
	for (i = 0; i < rows * cols; i++)
		cr_assert_eq(((int32_t *)out.data)[i], want[i], "%s element %ld: %d, want %d", mode,
			     (long)i, ((int32_t *)out.data)[i], want[i]);
	free(out.data);
}

Test(ops_pad, modes_match_numpy_even_past_the_dimension)
{
	static const int64_t pads[4] = { 1, 2, 2, 3 };
	static const int32_t reflect[40] = {
		6, 5, 4, 5, 6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2, 6, 5, 4, 5,
		6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2, 6, 5, 4, 5, 6, 5, 4, 5,
	};
	static const int32_t edge[40] = {
		1, 1, 1, 2, 3, 3, 3, 3, 1, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4, 5,
		6, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6, 6,
	};
	static const int32_t wrap[40] = {
		5, 6, 4, 5, 6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3, 5, 6, 4, 5,
		6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3, 5, 6, 4, 5, 6, 4, 5, 6,
	};
	static const int32_t constant[40] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 4, 5,
		6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};

	pad_check("reflect", pads, reflect, 5, 8);
	pad_check("edge", pads, edge, 5, 8);
	pad_check("wrap", pads, wrap, 5, 8);
	pad_check("constant", pads, constant, 5, 8);
}

Test(ops_pad, negative_pads_crop_before_the_fill)
{
	static const int64_t crop_edge[4] = { 0, -1, 0, 2 };
	static const int32_t want_edge[8] = { 2, 3, 3, 3, 5, 6, 6, 6 };
	static const int64_t crop_rows[4] = { -1, 1, 0, -1 };
	static const int32_t want_rows[3] = { 0, 4, 5 };

	pad_check("edge", crop_edge, want_edge, 2, 4);
	pad_check("constant", crop_rows, want_rows, 1, 3);
}

Test(ops_pad, the_attribute_form_before_opset_11)
{
	float x[6] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f };
	int64_t xd[2] = { 3, 2 }, pads[4] = { 0, 2, 0, 0 };
	struct op_attr a[3] = { oh_ints("pads", 4, pads), oh_string("mode", "constant"),
				oh_float("value", 1.5f) };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, xd, x);
	struct op_tensor out;
	static const float want[12] = { 1.5f, 1.5f, 1.0f, 1.2f, 1.5f, 1.5f, 2.3f, 3.4f,
					1.5f, 1.5f, 4.5f, 5.7f };
	static const float reflect[12] = { 1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f,
					   4.5f, 5.7f, 4.5f, 5.7f };
	int i;

	cr_assert_eq(oh_run("Pad", 7, a, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], 4);
	for (i = 0; i < 12; i++)
		cr_assert_eq(((float *)out.data)[i], want[i]);
	free(out.data);
	a[1] = oh_string("mode", "reflect");
	cr_assert_eq(oh_run("Pad", 10, a, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 12; i++)
		cr_assert_eq(((float *)out.data)[i], reflect[i]);
	free(out.data);
	/* No pads attribute, or one of the wrong length. */
	cr_assert_eq(oh_infer("Pad", 7, a + 1, 1, &in, 1, &out, 1), CEP_EMODEL);
	a[0] = oh_ints("pads", 3, pads);
	cr_assert_eq(oh_infer("Pad", 7, a, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "pads has 3 values for rank 2"), "%s", cep_last_error());
	/* Integers came with opset 11. */
	in = oh_tensor(CEP_DTYPE_INT32, 2, xd, x);
	a[0] = oh_ints("pads", 4, pads);
	cr_assert_eq(oh_run("Pad", 10, a, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
}

Test(ops_pad, constant_value_input_and_axes)
{
	int64_t x[6] = { 1, 2, 3, 4, 5, 6 }, cv = -9;
	int64_t xd[3] = { 1, 2, 3 }, pd[1] = { 2 }, ad[1] = { 1 }, one[1] = { 1 };
	int64_t pads[2] = { 1, 0 }, axes[1] = { -1 };
	struct op_tensor in[4] = { oh_tensor(CEP_DTYPE_INT64, 3, xd, x),
				   oh_tensor(CEP_DTYPE_INT64, 1, pd, pads),
				   oh_tensor(CEP_DTYPE_INT64, 0, one, &cv),
				   oh_tensor(CEP_DTYPE_INT64, 1, ad, axes) };
	struct op_tensor out;
	static const int64_t want[8] = { -9, 1, 2, 3, -9, 4, 5, 6 };
	int i;

	cr_assert_eq(oh_run("Pad", 18, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[1], 2);
	cr_assert_eq(out.dims[2], 4);
	for (i = 0; i < 8; i++)
		cr_assert_eq(((int64_t *)out.data)[i], want[i]);
	free(out.data);
	/* Without axes before 18 the pads are for every dim: 2 values do
	 * not cover rank 3. */
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "pads has 2 values for 3 axes"), "%s", cep_last_error());
	/* A constant of another type. */
	in[2] = oh_tensor(CEP_DTYPE_INT32, 0, one, &cv);
	cr_assert_eq(oh_infer("Pad", 18, NULL, 0, in, 4, &out, 1), CEP_EDTYPE);
	/* An axis twice. */
	{
		int64_t twice[2] = { 0, -3 }, p4[4] = { 0, 0, 0, 0 }, d2[1] = { 2 }, d4[1] = { 4 };

		in[2] = oh_tensor(CEP_DTYPE_UNDEFINED, 0, one, NULL);
		in[1] = oh_tensor(CEP_DTYPE_INT64, 1, d4, p4);
		in[3] = oh_tensor(CEP_DTYPE_INT64, 1, d2, twice);
		cr_assert_eq(oh_infer("Pad", 18, NULL, 0, in, 4, &out, 1), CEP_EMODEL);
		cr_assert(strstr(cep_last_error(), "appears twice"), "%s", cep_last_error());
	}
}

Test(ops_pad, types_by_opset)
{
	uint8_t b[4] = { 1, 0, 0, 1 };
	uint16_t h[4] = { 0x3c00, 0x4000, 0x4200, 0x4400 };
	int64_t d[2] = { 2, 2 }, pd[1] = { 4 }, pads[4] = { 0, 1, 0, 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_BOOL, 2, d, b),
				   oh_tensor(CEP_DTYPE_INT64, 1, pd, pads) };
	struct op_attr edge = oh_string("mode", "edge");
	struct op_tensor out;

	cr_assert_eq(oh_run("Pad", 13, &edge, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	cr_assert_eq(((uint8_t *)out.data)[3], 0);
	free(out.data);
	cr_assert_eq(oh_run("Pad", 12, &edge, 1, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "dtype bool is not supported"), "%s", cep_last_error());
	in[0] = oh_tensor(CEP_DTYPE_BFLOAT16, 2, d, h);
	cr_assert_eq(oh_run("Pad", 12, &edge, 1, in, 2, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("Pad", 13, &edge, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[0], 0x3c00);
	cr_assert_eq(((uint16_t *)out.data)[5], 0x4400);
	free(out.data);
}

Test(ops_pad, inference_and_refusals)
{
	int64_t xd[3] = { OP_DIM_SYM(0), 4, 0 }, pd[1] = { 6 };
	int64_t pads[6] = { 0, 1, 0, 0, 2, 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, xd, NULL),
				   oh_tensor(CEP_DTYPE_INT64, 1, pd, NULL) };
	struct op_attr a;
	struct op_tensor out;

	/* Pads not known yet: the rank is, the sizes are not. */
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	in[1].data = pads;
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0), "an unpadded symbol stays");
	cr_assert_eq(out.dims[1], 7);
	cr_assert_eq(out.dims[2], 0);
	/* Edge has nothing to repeat in an empty dimension. */
	pads[2] = 1;
	a = oh_string("mode", "edge");
	cr_assert_eq(oh_infer("Pad", 13, &a, 1, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "nothing of it is left"), "%s", cep_last_error());
	pads[2] = 0;
	/* Crops beyond the size. */
	pads[1] = -3;
	pads[4] = -2;
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	pads[1] = 1;
	a = oh_string("mode", "wrap");
	cr_assert_eq(oh_infer("Pad", 18, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "'wrap' needs opset 19"), "%s", cep_last_error());
	a = oh_string("mode", "mirror");
	cr_assert_eq(oh_infer("Pad", 19, &a, 1, in, 2, &out, 1), CEP_EMODEL);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, pd, pads);
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_eq(oh_infer("Pad", 13, NULL, 0, in, 1, &out, 1), CEP_EMODEL);
}

Test(ops_pad, scalars_and_empty_results)
{
	float x = 3.5f, e[1];
	int64_t none[1] = { 0 }, xd[2] = { 2, 0 }, pd[1] = { 4 }, pads[4] = { -2, 0, 0, 0 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 0, none, &x),
				   oh_tensor(CEP_DTYPE_INT64, 1, none, pads) };
	struct op_tensor out;

	cr_assert_eq(oh_run("Pad", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((float *)out.data)[0], 3.5f);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, xd, e);
	in[1] = oh_tensor(CEP_DTYPE_INT64, 1, pd, pads);
	cr_assert_eq(oh_run("Pad", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
}
