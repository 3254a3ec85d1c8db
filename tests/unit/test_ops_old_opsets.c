/*
 * test_ops_old_opsets.c — the operators other than the elementwise ones
 * at the opsets before 7, where their definitions differ from the later
 * ones: Cast-1's type names, Concat-1's default axis, Reshape-1's shape
 * attribute, Pad-1's paddings, Split-1's sizes and axis, Tile-1's tiles
 * and axis, Gemm-6's broadcast, BatchNormalization's and Dropout's
 * is_test, Upsample-1's two scales, Softmax-1's matrix at axis; and the
 * ones whose first version means what their later ones do, each run at
 * opset 1. Values are worked out from the specification's text; nodes are
 * run the way the engine runs them (tests/unit/ops_harness.h).
 * test_ops_old_elem.c covers the elementwise operators.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ops_harness.h"

/* Asserts that ret is err and the last message contains part. */
static void assert_refused(int ret, int err, const char *part)
{
	cr_assert_eq(ret, err, "got %d (%s), want %d", ret, cep_last_error(), err);
	cr_assert(strstr(cep_last_error(), part) != NULL, "message '%s' lacks '%s'",
		  cep_last_error(), part);
}

static void assert_dims(const struct op_tensor *t, int rank, const int64_t *dims)
{
	int i;

	cr_assert_eq(t->rank, rank, "rank %d, want %d", t->rank, rank);
	for (i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "dim %d is %lld, want %lld", i,
			     (long long)t->dims[i], (long long)dims[i]);
}

static void assert_floats(const struct op_tensor *t, const float *want, int n, float tol)
{
	const float *got = t->data;
	int i;

	for (i = 0; i < n; i++)
		cr_assert_float_eq(got[i], want[i], tol, "element %d is %g, want %g", i, got[i],
				   want[i]);
}

/* ------------------------------------------------------------------- Cast */

/* Cast-1 names its target type; opset 6 numbers it. */
Test(old_cast, type_names)
{
	const int64_t d[1] = { 3 };
	float x[3] = { 1.7f, -2.5f, 300.0f };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out;
	const struct op_attr to_i32 = oh_string("to", "INT32");
	const struct op_attr to_u8 = oh_string("to", "uint8");
	const struct op_attr to_f64 = oh_string("to", "DOUBLE");
	const struct op_attr to_bad = oh_string("to", "REAL");
	const struct op_attr to_num = oh_int("to", CEP_DTYPE_INT32);
	const struct op_attr to_bf16 = oh_int("to", CEP_DTYPE_BFLOAT16);
	const int32_t *o;

	cr_assert_eq(oh_run("Cast", 1, &to_i32, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT32);
	o = out.data;
	cr_assert(o[0] == 1 && o[1] == -2 && o[2] == 300);
	free(out.data);
	cr_assert_eq(oh_run("Cast", 5, &to_u8, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_UINT8);
	free(out.data);
	cr_assert_eq(oh_run("Cast", 1, &to_f64, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT64);
	cr_assert_eq(((const double *)out.data)[0], (double)1.7f);
	cr_assert_eq(((const double *)out.data)[2], 300.0);
	free(out.data);
	assert_refused(oh_infer("Cast", 1, &to_bad, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "Cast (opset 1): 'to' is \"REAL\", not the name of a TensorProto data type");
	assert_refused(oh_infer("Cast", 5, &to_num, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "Cast (opset 5): attribute 'to' (a type name such as \"FLOAT\") is required");
	cr_assert_eq(oh_infer("Cast", 6, &to_num, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_refused(oh_infer("Cast", 6, &to_bf16, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "bfloat16 is not a type of this opset");
}

/* ----------------------------------------------------------------- Concat */

/* Concat-1 joins along axis 1 when none is given. */
Test(old_concat, default_axis_is_1)
{
	const int64_t da[2] = { 2, 1 }, db[2] = { 2, 2 }, want_d[2] = { 2, 3 };
	float a[2] = { 1, 2 }, b[4] = { 3, 4, 5, 6 };
	const float want[6] = { 1, 3, 4, 2, 5, 6 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, da, a),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, db, b) };
	struct op_tensor out;

	cr_assert_eq(oh_run("Concat", 1, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, want_d);
	assert_floats(&out, want, 6, 0.0f);
	free(out.data);
	/* From opset 4 the axis is required; along 0 these do not fit. */
	cr_assert_neq(oh_infer("Concat", 4, NULL, 0, in, 2, &out, 1), 0);
}

/* ---------------------------------------------------------------- Reshape */

/* Reshape-1 takes the shape as an attribute, 0 and -1 as Reshape-5 does. */
Test(old_reshape, shape_attribute)
{
	const int64_t d[3] = { 2, 3, 4 }, shape[2] = { 0, -1 }, want_d[2] = { 2, 12 };
	const int64_t ci[1] = { 0 };
	const struct op_attr attrs[2] = { oh_ints("shape", 2, shape),
					  oh_ints("consumed_inputs", 1, ci) };
	float x[24];
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 3, d, x), out;
	int i;

	for (i = 0; i < 24; i++)
		x[i] = (float)i;
	cr_assert_eq(oh_run("Reshape", 1, attrs, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, want_d);
	assert_floats(&out, x, 24, 0.0f);
	free(out.data);
	assert_refused(oh_infer("Reshape", 4, NULL, 0, &in, 1, &out, 1), CEP_EMODEL,
		       "Reshape (opset 4): attribute 'shape' is required");
}

/* -------------------------------------------------------------------- Pad */

/* Pad-1's paddings: [x1_begin, x2_begin, ..., x1_end, x2_end, ...]. */
Test(old_pad, paddings)
{
	const int64_t d[2] = { 2, 2 }, paddings[4] = { 0, 1, 1, 2 }, want_d[2] = { 3, 5 };
	const struct op_attr attrs[2] = { oh_ints("paddings", 4, paddings),
					  oh_float("value", 9.0f) };
	const struct op_attr as_pads = oh_ints("pads", 4, paddings);
	float x[4] = { 1, 2, 3, 4 };
	const float want[15] = { 9, 1, 2, 9, 9, 9, 3, 4, 9, 9, 9, 9, 9, 9, 9 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, d, x), out;

	cr_assert_eq(oh_run("Pad", 1, attrs, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, want_d);
	assert_floats(&out, want, 15, 0.0f);
	free(out.data);
	/* Opset 2 calls them pads; opset 1 knows only paddings. */
	cr_assert_eq(oh_run("Pad", 2, &as_pads, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	free(out.data);
	assert_refused(oh_infer("Pad", 1, &as_pads, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "Pad: attribute 'paddings' is required");
}

/* ------------------------------------------------------------------ Split */

/* Split-1: sizes from the attribute or the second input, of the data's
 * type; axis has no default. */
Test(old_split, sizes_and_axis)
{
	const int64_t d[2] = { 2, 3 }, d2[1] = { 2 }, sizes[2] = { 1, 2 };
	const int64_t w0[2] = { 2, 1 }, w1[2] = { 2, 2 };
	const struct op_attr by_attr[2] = { oh_int("axis", 1), oh_ints("split", 2, sizes) };
	const struct op_attr axis1 = oh_int("axis", 1);
	float x[6] = { 1, 2, 3, 4, 5, 6 }, list[2] = { 2, 1 };
	const float want0[2] = { 1, 4 }, want1[4] = { 2, 3, 5, 6 };
	const float want2[4] = { 1, 2, 4, 5 }, want3[2] = { 3, 6 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, d, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, d2, list) };
	struct op_tensor out[2];

	cr_assert_eq(oh_run("Split", 1, by_attr, 2, in, 1, out, 2), 0, "%s", cep_last_error());
	assert_dims(&out[0], 2, w0);
	assert_dims(&out[1], 2, w1);
	assert_floats(&out[0], want0, 2, 0.0f);
	assert_floats(&out[1], want1, 4, 0.0f);
	free(out[0].data);
	free(out[1].data);
	cr_assert_eq(oh_run("Split", 1, &axis1, 1, in, 2, out, 2), 0, "%s", cep_last_error());
	assert_dims(&out[0], 2, w1);
	assert_dims(&out[1], 2, w0);
	assert_floats(&out[0], want2, 4, 0.0f);
	assert_floats(&out[1], want3, 2, 0.0f);
	free(out[0].data);
	free(out[1].data);
	assert_refused(oh_infer("Split", 1, by_attr, 2, in, 2, out, 2), CEP_EMODEL,
		       "both the split input and the split attribute");
	assert_refused(oh_infer("Split", 1, NULL, 0, in, 1, out, 2), CEP_EMODEL,
		       "Split (opset 1): attribute 'axis' is required");
	/* Split-2 splits along 0 by default. */
	cr_assert_eq(oh_run("Split", 2, NULL, 0, in, 1, out, 2), 0, "%s", cep_last_error());
	free(out[0].data);
	free(out[1].data);
}

/* ------------------------------------------------------------------- Tile */

/* Tile-1 repeats one dimension, `axis`, `tiles` times; both are inputs of
 * the data's type. */
Test(old_tile, tiles_and_axis)
{
	const int64_t d[2] = { 2, 3 }, want_d[2] = { 2, 6 };
	float x[6] = { 1, 2, 3, 4, 5, 6 }, tiles = 2.0f, axis = 1.0f, half = 1.5f;
	const float want[12] = { 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, d, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &tiles),
				   oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &axis) };
	struct op_tensor out;

	cr_assert_eq(oh_run("Tile", 1, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, want_d);
	assert_floats(&out, want, 12, 0.0f);
	free(out.data);
	in[1].data = &half;
	assert_refused(oh_infer("Tile", 5, NULL, 0, in, 3, &out, 1), CEP_EMODEL,
		       "Tile (opset 5): tiles is 1.5, not a whole number");
	/* Without their values the output's shape waits for the plan. */
	in[1].data = NULL;
	cr_assert_eq(oh_infer("Tile", 1, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[1], OP_DIM_UNKNOWN);
}

/* ------------------------------------------------------------------- Gemm */

/* Gemm-1 and -6: C broadcasts only with broadcast=1; transA and transB
 * as later. */
Test(old_gemm, broadcast_attribute)
{
	const int64_t da[2] = { 3, 2 }, db[2] = { 3, 2 }, dc[1] = { 2 }, dc2[2] = { 2, 2 };
	/* A^T (2x3) times B (3x2). */
	float a[6] = { 1, 4, 2, 5, 3, 6 }, b[6] = { 1, 2, 3, 4, 5, 6 };
	float c[2] = { 10, 20 }, c2[4] = { 1, 2, 3, 4 };
	const struct op_attr bc[3] = { oh_int("broadcast", 1), oh_int("transA", 1),
				       oh_float("beta", 2.0f) };
	const struct op_attr no_bc[1] = { oh_int("transA", 1) };
	/* A^T B = [[22, 28], [49, 64]]. */
	const float want_bc[4] = { 42, 68, 69, 104 }, want_full[4] = { 23, 30, 52, 68 };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, da, a),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, db, b),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, c) };
	struct op_tensor out;

	cr_assert_eq(oh_run("Gemm", 6, bc, 3, in, 3, &out, 1), 0, "%s", cep_last_error());
	assert_floats(&out, want_bc, 4, 1e-4f);
	free(out.data);
	assert_refused(oh_infer("Gemm", 1, no_bc, 1, in, 3, &out, 1), CEP_ESHAPE,
		       "Gemm (opset 1): C of shape [2] is not (M, N) = (2, 2) and broadcast=1 is not set");
	in[2] = oh_tensor(CEP_DTYPE_FLOAT32, 2, dc2, c2);
	cr_assert_eq(oh_run("Gemm", 1, no_bc, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	assert_floats(&out, want_full, 4, 1e-4f);
	free(out.data);
	/* C is required before opset 11. */
	cr_assert_neq(oh_infer("Gemm", 6, no_bc, 1, in, 2, &out, 1), 0);
}

/* ----------------------------------------------------- is_test: inference */

/* BatchNormalization-1 and -6 run with is_test=1; is_test=0, the
 * default, is training and is refused. */
Test(old_bn, is_test)
{
	const int64_t dx[3] = { 1, 2, 2 }, dc[1] = { 2 }, ci[2] = { 0, 0 };
	float x[4] = { 1, 2, 3, 4 }, scale[2] = { 2, 1 }, bias[2] = { 0, 1 };
	float mean[2] = { 1, 3 }, var[2] = { 4, 1 };
	const struct op_attr test[3] = { oh_int("is_test", 1), oh_float("epsilon", 0.0f),
					 oh_ints("consumed_inputs", 2, ci) };
	const struct op_attr train = oh_int("is_test", 0);
	/* (x - mean) / sqrt(var) * scale + B per channel. */
	const float want[4] = { 0, 1, 1, 2 };
	struct op_tensor in[5] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, dx, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, scale),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, bias),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, mean),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, dc, var) };
	struct op_tensor out;

	cr_assert_eq(oh_run("BatchNormalization", 1, test, 3, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	assert_floats(&out, want, 4, 1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("BatchNormalization", 6, test, 2, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	assert_floats(&out, want, 4, 1e-6f);
	free(out.data);
	assert_refused(oh_infer("BatchNormalization", 6, &train, 1, in, 5, &out, 1),
		       CEP_EUNSUPPORTED, "BatchNormalization (opset 6): is_test=0 asks for training mode");
	assert_refused(oh_infer("BatchNormalization", 1, NULL, 0, in, 5, &out, 1),
		       CEP_EUNSUPPORTED, "is_test=0");
}

/* Dropout-1 and -6: is_test=1 passes the data; is_test=0 with a ratio
 * drops at random (training) and is refused; with ratio 0 it drops
 * nothing. The mask has the data's type. */
Test(old_dropout, is_test)
{
	const int64_t d[1] = { 3 };
	float x[3] = { 1, -2, 3 };
	const float ones[3] = { 1, 1, 1 };
	const struct op_attr test[2] = { oh_int("is_test", 1), oh_float("ratio", 0.3f) };
	const struct op_attr train0 = oh_float("ratio", 0.0f);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d, x), out[2];

	cr_assert_eq(oh_run("Dropout", 6, test, 2, &in, 1, out, 2), 0, "%s", cep_last_error());
	assert_floats(&out[0], x, 3, 0.0f);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT32);
	assert_floats(&out[1], ones, 3, 0.0f);
	free(out[0].data);
	free(out[1].data);
	assert_refused(oh_infer("Dropout", 1, NULL, 0, &in, 1, out, 1), CEP_EUNSUPPORTED,
		       "Dropout (opset 1): is_test=0 asks for training mode with ratio 0.5");
	cr_assert_eq(oh_run("Dropout", 6, &train0, 1, &in, 1, out, 1), 0, "%s", cep_last_error());
	assert_floats(&out[0], x, 3, 0.0f);
	free(out[0].data);
}

/* --------------------------------------------------------------- Upsample */

/* Upsample-1's own example (nearest), and bilinear, which is opset 7's
 * linear: input coordinate = output coordinate / scale, the edge held. */
Test(old_upsample, scales)
{
	const int64_t d[4] = { 1, 1, 2, 2 }, want_d[4] = { 1, 1, 4, 4 }, d3[3] = { 1, 2, 2 };
	float x[4] = { 1, 2, 3, 4 };
	const struct op_attr nearest[2] = { oh_float("height_scale", 2.0f),
					    oh_float("width_scale", 2.0f) };
	const struct op_attr bilinear[3] = { oh_float("height_scale", 2.0f),
					     oh_float("width_scale", 2.0f),
					     oh_string("mode", "bilinear") };
	const struct op_attr linear[3] = { oh_float("height_scale", 2.0f),
					   oh_float("width_scale", 2.0f),
					   oh_string("mode", "linear") };
	const float want_n[16] = { 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4 };
	const float want_b[16] = { 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 4, d, x), out;

	cr_assert_eq(oh_run("Upsample", 1, nearest, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 4, want_d);
	assert_floats(&out, want_n, 16, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Upsample", 6, bilinear, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_floats(&out, want_b, 16, 1e-6f);
	free(out.data);
	assert_refused(oh_infer("Upsample", 1, linear, 3, &in, 1, &out, 1), CEP_EMODEL,
		       "mode 'linear' is not known at opset 1");
	assert_refused(oh_infer("Upsample", 1, nearest, 1, &in, 1, &out, 1), CEP_EMODEL,
		       "'height_scale' and 'width_scale' (floats) are required");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, d3, x);
	assert_refused(oh_infer("Upsample", 1, nearest, 2, &in, 1, &out, 1), CEP_ESHAPE,
		       "must be (N, C, H, W), not of rank 3");
}

/* ---------------------------------------------------------------- Softmax */

/* Softmax-1 and LogSoftmax-1 normalize the input seen as a matrix split
 * at axis (default 1): each row of 12 here sums to 1. */
Test(old_softmax, matrix_at_axis)
{
	const int64_t d[3] = { 2, 3, 4 };
	float x[24];
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 3, d, x), out;
	const float *o;
	double sum, want;
	int i, r;

	for (i = 0; i < 24; i++)
		x[i] = (float)(i % 7) * 0.5f;
	cr_assert_eq(oh_run("Softmax", 1, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (r = 0; r < 2; r++) {
		for (sum = 0.0, i = 0; i < 12; i++)
			sum += exp(x[r * 12 + i]);
		for (i = 0; i < 12; i++) {
			want = exp(x[r * 12 + i]) / sum;
			cr_assert_float_eq(o[r * 12 + i], (float)want, 1e-6f);
		}
	}
	free(out.data);
	cr_assert_eq(oh_run("LogSoftmax", 1, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	o = out.data;
	for (r = 0; r < 2; r++) {
		for (sum = 0.0, i = 0; i < 12; i++)
			sum += exp(x[r * 12 + i]);
		for (i = 0; i < 12; i++)
			cr_assert_float_eq(o[r * 12 + i], (float)(x[r * 12 + i] - log(sum)), 1e-5f);
	}
	free(out.data);
}

/* ------------------------------------------------- unchanged since opset 1 */

/* Slice-1's starts, ends and axes; Squeeze-1 and Unsqueeze-1's axes;
 * Transpose-1's perm; Flatten-1's axis; Gather-1. */
Test(old_unchanged, shape_ops)
{
	const int64_t d[3] = { 2, 1, 3 }, starts[1] = { 1 }, ends[1] = { 3 }, axes[1] = { 2 };
	const int64_t sq[1] = { 1 }, unsq[1] = { 0 }, perm[3] = { 2, 1, 0 }, di[1] = { 2 };
	const int64_t w_slice[3] = { 2, 1, 2 }, w_sq[2] = { 2, 3 }, w_unsq[4] = { 1, 2, 1, 3 };
	const int64_t w_perm[3] = { 3, 1, 2 }, w_flat[2] = { 2, 3 }, w_gather[3] = { 2, 1, 2 };
	const struct op_attr slice[3] = { oh_ints("starts", 1, starts), oh_ints("ends", 1, ends),
					  oh_ints("axes", 1, axes) };
	const struct op_attr sqa = oh_ints("axes", 1, sq), unsqa = oh_ints("axes", 1, unsq);
	const struct op_attr perma = oh_ints("perm", 3, perm), gax = oh_int("axis", 2);
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t idx[2] = { 2, 0 };
	const float want_slice[4] = { 2, 3, 5, 6 }, want_perm[6] = { 1, 4, 2, 5, 3, 6 };
	const float want_gather[4] = { 3, 1, 6, 4 };
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 3, d, x),
				   oh_tensor(CEP_DTYPE_INT64, 1, di, idx) };
	struct op_tensor out;

	cr_assert_eq(oh_run("Slice", 1, slice, 3, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 3, w_slice);
	assert_floats(&out, want_slice, 4, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Squeeze", 1, &sqa, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, w_sq);
	free(out.data);
	cr_assert_eq(oh_run("Unsqueeze", 1, &unsqa, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 4, w_unsq);
	free(out.data);
	cr_assert_eq(oh_run("Transpose", 1, &perma, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 3, w_perm);
	assert_floats(&out, want_perm, 6, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Flatten", 1, NULL, 0, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 2, w_flat);
	free(out.data);
	cr_assert_eq(oh_run("Identity", 1, NULL, 0, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_floats(&out, x, 6, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("Gather", 1, &gax, 1, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 3, w_gather);
	assert_floats(&out, want_gather, 4, 0.0f);
	free(out.data);
}

/* ReduceMean-1 and ArgMax-1 take axes and axis as attributes, keepdims 1
 * by default; the pools, Conv, MatMul and the normalizations of opset 1
 * compute what their later definitions do. */
Test(old_unchanged, reduce_pool_conv)
{
	const int64_t d[4] = { 1, 1, 2, 2 }, axes[1] = { 3 }, k2[2] = { 2, 2 };
	const int64_t w_red[4] = { 1, 1, 2, 1 }, d22[2] = { 2, 2 }, w1[4] = { 1, 1, 1, 1 };
	const struct op_attr red = oh_ints("axes", 1, axes), amax = oh_int("axis", 3);
	const struct op_attr ks = oh_ints("kernel_shape", 2, k2);
	float x[4] = { 1, 5, 3, 2 }, w[4] = { 1, 0, 0, 1 }, b[1] = { 0.5f };
	const float want_red[2] = { 3, 2.5f };
	struct op_tensor in[3] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, d, x),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, w1, w),
				   oh_tensor(CEP_DTYPE_FLOAT32, 1, w1, b) };
	struct op_tensor out;
	float got;

	cr_assert_eq(oh_run("ReduceMean", 1, &red, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	assert_dims(&out, 4, w_red);
	assert_floats(&out, want_red, 2, 1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("ArgMax", 1, &amax, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert(((int64_t *)out.data)[0] == 1 && ((int64_t *)out.data)[1] == 0);
	free(out.data);
	cr_assert_eq(oh_run("MaxPool", 1, &ks, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 5.0f, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("AveragePool", 1, &ks, 1, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 2.75f, 1e-6f);
	free(out.data);
	cr_assert_eq(oh_run("GlobalMaxPool", 1, NULL, 0, in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 5.0f, 0.0f);
	free(out.data);
	/* Conv of a 2x2 kernel of the identity's diagonal, plus 0.5. */
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 4, (const int64_t[4]){ 1, 1, 2, 2 }, w);
	cr_assert_eq(oh_run("Conv", 1, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	got = ((float *)out.data)[0];
	cr_assert_float_eq(got, 1.0f + 2.0f + 0.5f, 1e-6f);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d22, x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, d22, w);
	cr_assert_eq(oh_run("MatMul", 1, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	assert_floats(&out, x, 4, 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("LpNormalization", 1, NULL, 0, in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 1.0f / sqrtf(26.0f), 1e-6f);
	free(out.data);
}
