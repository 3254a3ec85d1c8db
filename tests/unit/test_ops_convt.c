/*
 * test_ops_convt.c — ConvTranspose, Col2Im, Einsum, GridSample and
 * AffineGrid on the host backend (kernels/cpu/conv_transpose.c,
 * col2im.c, einsum.c, grid_sample.c): values worked out with onnxruntime
 * 1.x's CPU kernels and onnx's reference implementation (the numbers
 * below are theirs), in float32, the half types and the integers where
 * the operator takes them; integer sums wrapping to their width; the
 * refusals, each naming the operator and what was wrong; and the model
 * of convt_model.h in fp16 and bf16 sessions against float32.
 */
#include <unistd.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/convt_model.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* Runs op over the n_in inputs and checks output 0 against want (n
 * values, as floats) within tol, for any output type. */
static void expect(const char *op, int opset, const struct op_attr *a, int n_attrs,
		   const struct op_tensor *in, int n_in, const float *want, int64_t n, float tol,
		   const char *what)
{
	struct op_tensor out;
	int64_t i;

	cr_assert_eq(oh_run(op, opset, a, n_attrs, in, n_in, &out, 1), 0, "%s: %s", what,
		     cep_last_error());
	cr_assert_eq(op_dims_product(&out, 0, out.rank), n, "%s: %lld elements", what,
		     (long long)op_dims_product(&out, 0, out.rank));
	for (i = 0; i < n; i++) {
		float v = cpu_load_f(out.data, out.dtype, i);

		cr_assert(fabsf(v - want[i]) <= tol * (1.0f + fabsf(want[i])),
			  "%s: element %lld is %g, expected %g", what, (long long)i, (double)v,
			  (double)want[i]);
	}
	free(out.data);
}

/* A tensor of dtype holding the n floats v (converted), malloc'd. */
static struct op_tensor make(cep_dtype dt, int rank, const int64_t *dims, const float *v)
{
	struct op_tensor t = oh_tensor(dt, rank, dims, NULL);
	int64_t n = op_dims_product(&t, 0, rank), i;

	t.data = calloc(1, (size_t)(n ? n : 1) * 8);
	cr_assert_not_null(t.data);
	for (i = 0; i < n; i++) {
		if (cpu_is_float(dt))
			cpu_store_f(t.data, dt, i, v[i]);
		else
			cpu_store_i(t.data, dt, i, (int64_t)v[i]);
	}
	return t;
}

#define ASSERT_REFUSED(ret, code, text)                                                  \
	do {                                                                             \
		cr_assert_eq((ret), (code), "returned %d: %s", (ret), cep_last_error());  \
		cr_assert_not_null(strstr(cep_last_error(), (text)), "got \"%s\"",        \
				   cep_last_error());                                     \
	} while (0)

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

/* ------------------------------------------------------------ ConvTranspose */

Test(ops_convt, conv_transpose_values)
{
	static const float x1[3] = { 1, 2, 3 }, w1[2] = { 1, 10 }, b1[1] = { 0.5f };
	static const float y1[7] = { 1.5f, 10.5f, 2.5f, 20.5f, 3.5f, 30.5f, 0.5f };
	static const float x2[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const float w2[8] = { -3, -2, -1, 0, 1, 2, 3, 4 };
	static const float y2[12] = { 0, -1, -6, -13, -2, -3, 12, 31, 6, 19, 18, 45 };
	static const float x3[2] = { 1, 2 }, w3[3] = { 1, 1, 1 };
	static const float y3[7] = { 0, 0, 1, 3, 3, 2, 0 };
	size_t t;

	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		int opset = dt == CEP_DTYPE_BFLOAT16 ? 22 : 11;
		/* 1-D, stride 2, output_padding 1 (a last position only the
		 * bias reaches), bias. */
		struct op_attr a1[2] = { oh_ints("strides", 1, DIMS(2)),
					 oh_ints("output_padding", 1, DIMS(1)) };
		/* 2-D, 2 groups, strides 2 x 1, pads at one end of each dim. */
		struct op_attr a2[3] = { oh_int("group", 2), oh_ints("strides", 2, DIMS(2, 1)),
					 oh_ints("pads", 4, DIMS(1, 0, 0, 1)) };
		/* An output_shape past the full result, split SAME_UPPER: two
		 * positions before nothing lands on, one after. */
		struct op_attr a3[2] = { oh_ints("output_shape", 1, DIMS(7)),
					 oh_string("auto_pad", "SAME_UPPER") };
		struct op_tensor in[3];

		in[0] = make(dt, 3, DIMS(1, 1, 3), x1);
		in[1] = make(dt, 3, DIMS(1, 1, 2), w1);
		in[2] = make(dt, 1, DIMS(1), b1);
		expect("ConvTranspose", opset, a1, 2, in, 3, y1, 7, 1e-2f, "1-D output_padding");
		free(in[0].data);
		free(in[1].data);
		free(in[2].data);
		in[0] = make(dt, 4, DIMS(1, 2, 2, 2), x2);
		in[1] = make(dt, 4, DIMS(2, 1, 2, 2), w2);
		expect("ConvTranspose", opset, a2, 3, in, 2, y2, 12, 1e-2f, "2-D groups, pads");
		free(in[0].data);
		free(in[1].data);
		in[0] = make(dt, 3, DIMS(1, 1, 2), x3);
		in[1] = make(dt, 3, DIMS(1, 1, 3), w3);
		expect("ConvTranspose", opset, a3, 2, in, 2, y3, 7, 1e-2f, "output_shape");
		free(in[0].data);
		free(in[1].data);
	}
}

Test(ops_convt, conv_transpose_refusals)
{
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 3, 4, 4), NULL),
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(3, 2, 3, 3), NULL),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(5), NULL),
	};
	struct op_attr op_big[2] = { oh_ints("strides", 2, DIMS(2, 2)),
				     oh_ints("output_padding", 2, DIMS(2, 0)) };
	struct op_attr group2 = oh_int("group", 2);
	struct op_attr pad = oh_string("auto_pad", "SAME");
	struct op_tensor out;

	ASSERT_REFUSED(oh_infer("ConvTranspose", 22, op_big, 2, in, 2, &out, 1), CEP_EMODEL,
		       "ConvTranspose: output_padding[0] is 2, it must be below the stride (2)");
	ASSERT_REFUSED(oh_infer("ConvTranspose", 22, &group2, 1, in, 2, &out, 1), CEP_ESHAPE,
		       "ConvTranspose: 3 input channels do not divide into 2 groups");
	ASSERT_REFUSED(oh_infer("ConvTranspose", 22, &pad, 1, in, 2, &out, 1), CEP_EMODEL,
		       "ConvTranspose: auto_pad 'SAME' is not NOTSET");
	ASSERT_REFUSED(oh_infer("ConvTranspose", 22, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		       "ConvTranspose: B has 5 values for 2 output channels");
	in[0].dtype = CEP_DTYPE_INT32;
	in[1].dtype = CEP_DTYPE_INT32;
	cr_assert_neq(oh_run("ConvTranspose", 22, NULL, 0, in, 2, &out, 1), 0);
}

/* ------------------------------------------------------------------ Col2Im */

Test(ops_convt, col2im_values_in_every_type)
{
	static const float x2[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const float y2[9] = { 1, 5, 2, 9, 13, 10, 3, 7, 4 };
	static const float x1[6] = { 1, 2, 3, 4, 5, 6 }, y1[4] = { 1, 6, 8, 6 };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT8, CEP_DTYPE_UINT8 };
	struct op_attr a2[2] = { oh_ints("strides", 2, DIMS(2, 2)),
				 oh_ints("pads", 4, DIMS(0, 0, 1, 1)) };
	int64_t img2[2] = { 3, 3 }, blk2[2] = { 2, 2 }, img1[1] = { 4 }, blk1[1] = { 2 };
	size_t t;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		struct op_tensor in[3];

		/* 2-D, stride 2, the blocks reaching into the end pads. */
		in[0] = make(types[t], 3, DIMS(1, 4, 4), x2);
		in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), img2);
		in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), blk2);
		expect("Col2Im", 18, a2, 2, in, 3, y2, 9, 1e-2f, cep_dtype_name(types[t]));
		free(in[0].data);
		/* 1-D, overlapping blocks. */
		in[0] = make(types[t], 3, DIMS(1, 2, 3), x1);
		in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), img1);
		in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), blk1);
		expect("Col2Im", 18, NULL, 0, in, 3, y1, 4, 1e-2f, cep_dtype_name(types[t]));
		free(in[0].data);
	}
}

Test(ops_convt, col2im_wraps_integers_and_ors_bools)
{
	static const float big[6] = { 100, 100, 100, 100, 100, 100 }, y8[4] = { 100, -56, -56, 100 };
	static const float b[6] = { 0, 1, 0, 0, 0, 0 }, yb[4] = { 0, 1, 0, 0 };
	int64_t img[1] = { 4 }, blk[1] = { 2 };
	struct op_tensor in[3] = {
		make(CEP_DTYPE_INT8, 3, DIMS(1, 2, 3), big),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), img),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), blk),
	};

	/* 100 + 100 is -56 in int8. */
	expect("Col2Im", 18, NULL, 0, in, 3, y8, 4, 0.0f, "int8");
	free(in[0].data);
	in[0] = make(CEP_DTYPE_BOOL, 3, DIMS(1, 2, 3), b);
	expect("Col2Im", 18, NULL, 0, in, 3, yb, 4, 0.0f, "bool");
	free(in[0].data);
}

Test(ops_convt, col2im_refusals)
{
	int64_t img[2] = { 3, 3 }, blk[2] = { 4, 2 }, blk_ok[2] = { 2, 2 }, img0[2] = { 0, 3 };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 8, 4), NULL),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), img),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), blk),
	};
	struct op_tensor out;

	ASSERT_REFUSED(oh_infer("Col2Im", 18, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		       "Col2Im: a block (4 wide with dilation) does not fit in spatial dimension 0");
	in[2].data = blk_ok;
	in[0].dims[1] = 6;
	ASSERT_REFUSED(oh_infer("Col2Im", 18, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		       "Col2Im: the input's 6 rows are not a multiple of the block size 4");
	in[0].dims[1] = 8;
	in[0].dims[2] = 5;
	ASSERT_REFUSED(oh_infer("Col2Im", 18, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		       "Col2Im: the input has 5 columns but image_shape, block_shape and the "
		       "attributes make 4 blocks");
	in[1].data = img0;
	ASSERT_REFUSED(oh_infer("Col2Im", 18, NULL, 0, in, 3, &out, 1), CEP_EINVAL,
		       "Col2Im: image_shape[0] is 0");
}

/* ------------------------------------------------------------------ Einsum */

Test(ops_convt, einsum_values)
{
	static const float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, 0, 1, 2, -1 };
	static const float ab[4] = { 7, -1, 16, -1 }, at[6] = { 1, 4, 2, 5, 3, 6 };
	static const float m[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	static const float diag[3] = { 0, 4, 8 }, trace[1] = { 12 };
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT64, CEP_DTYPE_INT32,
					   CEP_DTYPE_INT8 };
	size_t t;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		int opset = types[t] == CEP_DTYPE_BFLOAT16 ? 28 : 12;
		struct op_attr mm = oh_string("equation", "ij,jk");
		struct op_attr tr = oh_string("equation", "ij->ji");
		struct op_attr dg = oh_string("equation", "ii->i");
		struct op_attr tc = oh_string("equation", "i i");
		struct op_tensor in[2];

		in[0] = make(types[t], 2, DIMS(2, 3), a);
		in[1] = make(types[t], 2, DIMS(3, 2), b);
		expect("Einsum", opset, &mm, 1, in, 2, ab, 4, 1e-2f, "implicit matmul");
		expect("Einsum", opset, &tr, 1, in, 1, at, 6, 0.0f, "transpose");
		free(in[0].data);
		free(in[1].data);
		in[0] = make(types[t], 2, DIMS(3, 3), m);
		expect("Einsum", opset, &dg, 1, in, 1, diag, 3, 0.0f, "diagonal");
		expect("Einsum", opset, &tc, 1, in, 1, trace, 1, 0.0f, "trace, spaces");
		free(in[0].data);
	}
}

Test(ops_convt, einsum_wraps_integers)
{
	static const float a[2] = { 100, 100 }, b[2] = { 2, 1 }, want[1] = { 44 };
	struct op_attr dot = oh_string("equation", "i,i->");
	struct op_tensor in[2] = { make(CEP_DTYPE_INT8, 1, DIMS(2), a),
				   make(CEP_DTYPE_INT8, 1, DIMS(2), b) };

	/* 300 is 44 in int8. */
	expect("Einsum", 12, &dot, 1, in, 2, want, 1, 0.0f, "int8 dot");
	free(in[0].data);
	free(in[1].data);
}

Test(ops_convt, einsum_refusals)
{
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 2), NULL) };
	struct op_attr bad_char = oh_string("equation", "i1,jk");
	struct op_attr terms = oh_string("equation", "ij->ij");
	struct op_attr sizes = oh_string("equation", "ij,jk->ik");
	struct op_attr out_idx = oh_string("equation", "ij,jk->iz");
	struct op_tensor out;

	ASSERT_REFUSED(oh_infer("Einsum", 12, &bad_char, 1, in, 2, &out, 1), CEP_EMODEL,
		       "Einsum: term 0 has the character '1'");
	ASSERT_REFUSED(oh_infer("Einsum", 12, &terms, 1, in, 2, &out, 1), CEP_EMODEL,
		       "Einsum: the equation has 1 terms but there are 2 inputs");
	ASSERT_REFUSED(oh_infer("Einsum", 12, &sizes, 1, in, 2, &out, 1), CEP_ESHAPE,
		       "Einsum: index 'j' has size 4 in input 1 but 3 before");
	ASSERT_REFUSED(oh_infer("Einsum", 12, &out_idx, 1, in, 2, &out, 1), CEP_EMODEL,
		       "Einsum: output index 'z' is in no input term");
	in[0].dtype = in[1].dtype = CEP_DTYPE_BFLOAT16;
	in[1].dims[0] = 3;
	cr_assert_neq(oh_run("Einsum", 27, &sizes, 1, in, 2, &out, 1), 0,
		      "bfloat16 before opset 28");
}

/* ------------------------------------------------------- GridSample, AffineGrid */

Test(ops_convt, grid_sample_values)
{
	static const float x[4] = { 0, 10, 20, 30 };
	static const float g1[8] = { -1, 0, 0, 0, 1, 0, 0.3f, 0 };
	static const float align[4] = { 0, 15, 30, 19.5f }, noalign[4] = { 0, 15, 15, 21 };
	static const float nearest[4] = { 0, 20, 0, 20 };
	static const float g2[4] = { -1.3f, 0, 1.2f, 0 };
	static const float border[2] = { 0, 30 }, reflect[2] = { 1, 30 };
	static const float cubic[2] = { 0, 2.527494f };
	size_t t;

	for (t = 0; t < 3; t++) {
		cep_dtype dt = float_types[t];
		int opset = dt == CEP_DTYPE_BFLOAT16 ? 22 : 20;
		struct op_attr al[1] = { oh_int("align_corners", 1) };
		struct op_attr ne[1] = { oh_string("mode", "nearest") };
		struct op_attr bo[1] = { oh_string("padding_mode", "border") };
		struct op_attr re[1] = { oh_string("padding_mode", "reflection") };
		struct op_attr cu[1] = { oh_string("mode", "cubic") };
		struct op_tensor in[2];

		in[0] = make(dt, 4, DIMS(1, 1, 1, 4), x);
		in[1] = make(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 4, 2), g1);
		expect("GridSample", opset, al, 1, in, 2, align, 4, 1e-2f, "align_corners");
		expect("GridSample", opset, NULL, 0, in, 2, noalign, 4, 1e-2f, "zeros");
		expect("GridSample", opset, ne, 1, in, 2, nearest, 4, 0.0f, "nearest");
		free(in[1].data);
		in[1] = make(CEP_DTYPE_FLOAT32, 4, DIMS(1, 1, 2, 2), g2);
		expect("GridSample", opset, bo, 1, in, 2, border, 2, 1e-2f, "border");
		expect("GridSample", opset, re, 1, in, 2, reflect, 2, 1e-2f, "reflection");
		expect("GridSample", opset, cu, 1, in, 2, cubic, 2, 1e-2f, "cubic");
		free(in[0].data);
		free(in[1].data);
	}
}

Test(ops_convt, grid_sample_refusals)
{
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 2, 4, 4), NULL),
				   oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(1, 3, 3, 2), NULL) };
	struct op_attr linear16 = oh_string("mode", "linear");
	struct op_attr pad = oh_string("padding_mode", "wrap");
	struct op_tensor out;

	ASSERT_REFUSED(oh_infer("GridSample", 16, &linear16, 1, in, 2, &out, 1), CEP_EMODEL,
		       "GridSample: mode 'linear' is not bilinear, nearest or bicubic at opset 16");
	ASSERT_REFUSED(oh_infer("GridSample", 20, &pad, 1, in, 2, &out, 1), CEP_EMODEL,
		       "GridSample: padding_mode 'wrap' is not zeros, border or reflection");
	in[1].dims[3] = 3;
	ASSERT_REFUSED(oh_infer("GridSample", 20, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		       "GridSample: grid's last dimension is 3, it must be 2");
	in[1].dims[3] = 2;
	in[1].dtype = CEP_DTYPE_BFLOAT16;
	ASSERT_REFUSED(oh_infer("GridSample", 20, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		       "GridSample: grid is bfloat16, not float32 or float16");
}

Test(ops_convt, affine_grid_values)
{
	static const float id[6] = { 1, 0, 0, 0, 1, 0 };
	static const float idg[12] = { -2.0f / 3, -0.5f, 0, -0.5f, 2.0f / 3, -0.5f,
				       -2.0f / 3, 0.5f, 0, 0.5f, 2.0f / 3, 0.5f };
	static const float th[6] = { 0.5f, 0.25f, 0.1f, -1, 2, 0.3f };
	static const float thg[12] = { -0.65f, -0.7f, -0.15f, -1.7f, 0.35f, -2.7f,
				       -0.15f, 3.3f, 0.35f, 2.3f, 0.85f, 1.3f };
	int64_t size[4] = { 1, 1, 2, 3 };
	size_t t;

	for (t = 0; t < 3; t++) {
		struct op_attr al = oh_int("align_corners", 1);
		struct op_tensor in[2];

		in[1] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(4), size);
		in[0] = make(float_types[t], 3, DIMS(1, 2, 3), id);
		expect("AffineGrid", 20, NULL, 0, in, 2, idg, 12, 1e-2f, "identity");
		free(in[0].data);
		in[0] = make(float_types[t], 3, DIMS(1, 2, 3), th);
		expect("AffineGrid", 20, &al, 1, in, 2, thg, 12, 2e-2f, "align_corners");
		free(in[0].data);
	}
}

/* ------------------------------------------------------------ half sessions */

/* The model of convt_model.h in fp16 and bf16 sessions: every node in
 * half but AffineGrid, GridSample reading its float32 grid. */
Test(ops_convt, a_half_session_keeps_the_grid_float32)
{
	unsigned seed = 83u ^ (unsigned)getpid();
	struct pm_model pm = convt_model(&seed);
	struct backend *be;
	cep_precision p;

	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	for (p = CEP_PRECISION_FP16; p <= CEP_PRECISION_BF16; p++) {
		convt_model_half(&pm, p, BACKEND_HOST);
		pm_compare(&pm, be, p, be, &seed, 2, p == CEP_PRECISION_FP16 ? 5e-3 : 3e-2);
	}
	backend_free(be);
	pm_model_free(&pm);
}
