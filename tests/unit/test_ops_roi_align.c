/*
 * test_ops_roi_align.c — RoiAlign of kernels/cpu/roi_align.c, called the
 * way the engine calls it (schema inference, then the host kernel through
 * exec_host_eval), on images whose values are a linear function of the
 * position (X = 4 y + x), where a bilinear sample is the function itself
 * and every bin's average is the function at the bin's center: a bin
 * worked out by hand in both coordinate modes and in max mode, random
 * regions inside the image against the bin centers, the adaptive sample
 * count, samples clamped at the last row and dropped more than a pixel
 * outside, the batch index choosing the image, each opset's default mode,
 * half types, and the refusals (attributes, types, shapes, a batch index
 * out of range).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* An image batch (n x c x h x w) whose element (b, ch, y, x) is
 * 100 b + 10 ch + w y + x. */
static float *linear_images(int64_t n, int64_t c, int64_t h, int64_t w)
{
	float *x = malloc(sizeof(float) * (size_t)(n * c * h * w));
	int64_t b, ch, i, j;

	cr_assert_not_null(x);
	for (b = 0; b < n; b++)
		for (ch = 0; ch < c; ch++)
			for (i = 0; i < h; i++)
				for (j = 0; j < w; j++)
					x[((b * c + ch) * h + i) * w + j] =
						(float)(100 * b + 10 * ch + w * i + j);
	return x;
}

/* RoiAlign at opset over images x (n x c x h x w) for the nr regions
 * rois with batch indices bi, attributes a. */
static int roi_align(int opset, const struct op_attr *a, int n_attrs, const float *x,
		     int64_t n, int64_t c, int64_t h, int64_t w, const float *rois,
		     const int64_t *bi, int64_t nr, struct op_tensor *out)
{
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(n, c, h, w), (void *)x),
		oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(nr, 4), (void *)rois),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(nr), (void *)bi),
	};

	return oh_run("RoiAlign", opset, a, n_attrs, in, 3, out, 1);
}

/* Region [0, 0, 2, 2] of a 4 x 4 image, one bin of 2 x 2 samples. With
 * half_pixel the region starts at -0.5, the samples at 0 and 1 in each
 * direction: (0 + 1 + 4 + 5) / 4. Without, at 0.5 and 1.5: 4 * 1 + 1. In
 * max mode each sample gives its largest weighted corner, a quarter of
 * the corner value, and the bin the largest of those: 10 / 4. */
Test(ops_roi_align, one_bin_by_hand)
{
	float *x = linear_images(1, 1, 4, 4);
	static const float roi[4] = { 0, 0, 2, 2 };
	static const int64_t bi[1] = { 0 };
	struct op_attr a[3] = { oh_int("sampling_ratio", 2),
				oh_string("coordinate_transformation_mode", "output_half_pixel"),
				oh_string("mode", "max") };
	struct op_tensor out;

	cr_assert_eq(roi_align(16, a, 1, x, 1, 1, 4, 4, roi, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], 1);
	cr_assert_eq(out.dims[2], 1);
	cr_assert_float_eq(((float *)out.data)[0], 2.5f, 1e-6f);
	free(out.data);
	cr_assert_eq(roi_align(16, a, 2, x, 1, 1, 4, 4, roi, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 5.0f, 1e-6f);
	free(out.data);
	cr_assert_eq(roi_align(16, a, 3, x, 1, 1, 4, 4, roi, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 2.5f, 1e-6f);
	free(out.data);
	/* Opset 10 knows only output_half_pixel, which is what it does. */
	cr_assert_eq(roi_align(10, a, 1, x, 1, 1, 4, 4, roi, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 5.0f, 1e-6f);
	free(out.data);
	free(x);
}

/* Random regions well inside a 3-channel 20 x 24 image, 3 x 4 bins: every
 * bin is the linear function at its center, whatever the sample count
 * (sampling_ratio 0 adapts it to the bin's size). */
Test(ops_roi_align, bins_are_the_function_at_their_centers)
{
	enum { H = 20, W = 24, C = 3, R = 16, OH = 3, OW = 4 };
	float *x = linear_images(2, C, H, W), rois[R * 4];
	int64_t bi[R];
	unsigned seed = 5;
	int sr, r, ch, i, j;

	for (r = 0; r < R; r++) {
		float x1 = 1.5f + (oh_rand(&seed) + 1.0f) * 4.0f;
		float y1 = 1.5f + (oh_rand(&seed) + 1.0f) * 4.0f;

		rois[4 * r + 0] = x1;
		rois[4 * r + 1] = y1;
		rois[4 * r + 2] = x1 + 1.0f + (oh_rand(&seed) + 1.0f) * 5.0f;
		rois[4 * r + 3] = y1 + 1.0f + (oh_rand(&seed) + 1.0f) * 4.0f;
		bi[r] = r % 2;
	}
	for (sr = 0; sr < 4; sr++) {
		struct op_attr a[3] = { oh_int("sampling_ratio", sr), oh_int("output_height", OH),
					oh_int("output_width", OW) };
		struct op_tensor out;

		cr_assert_eq(roi_align(22, a, 3, x, 2, C, H, W, rois, bi, R, &out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dims[1], C);
		cr_assert_eq(out.dims[2], OH);
		cr_assert_eq(out.dims[3], OW);
		for (r = 0; r < R; r++) {
			double sx = rois[4 * r] - 0.5, sy = rois[4 * r + 1] - 0.5;
			double bw = (rois[4 * r + 2] - rois[4 * r]) / OW;
			double bh = (rois[4 * r + 3] - rois[4 * r + 1]) / OH;

			for (ch = 0; ch < C; ch++) {
				for (i = 0; i < OH; i++) {
					for (j = 0; j < OW; j++) {
						double want = 100.0 * (double)bi[r] + 10.0 * ch +
							      W * (sy + (i + 0.5) * bh) + (sx + (j + 0.5) * bw);
						float got = ((float *)out.data)
							[((r * C + ch) * OH + i) * OW + j];

						cr_assert(fabs(got - want) < 2e-4 * fabs(want) + 1e-4,
							  "ratio %d roi %d ch %d bin %d,%d: %g, want %g",
							  sr, r, ch, i, j, (double)got, want);
					}
				}
			}
		}
		free(out.data);
	}
	free(x);
}

/* Samples between the last row and a pixel past it read the last row;
 * samples more than a pixel outside are 0, so a region far outside gives
 * 0 and one half outside averages only what is in. */
Test(ops_roi_align, samples_at_and_past_the_edge)
{
	float *x = linear_images(1, 1, 4, 4);
	/* Row sample at y = 3.5 (clamped to 3), column at x = 1. */
	static const float edge[4] = { 1.0f, 3.5f, 2.0f, 4.5f };
	static const float far[4] = { 10, 10, 12, 12 };
	/* Samples at x = 2.5 and x = 7.5 (outside, 0), y = 0.5. */
	static const float half[4] = { 0.5f, 0.5f, 10.5f, 1.5f };
	static const int64_t bi[1] = { 0 };
	struct op_attr a[2] = { oh_int("sampling_ratio", 1), oh_int("output_width", 2) };
	struct op_tensor out;

	cr_assert_eq(roi_align(16, a, 1, x, 1, 1, 4, 4, edge, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 13.0f, 1e-6f);
	free(out.data);
	cr_assert_eq(roi_align(16, a, 1, x, 1, 1, 4, 4, far, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	free(out.data);
	cr_assert_eq(roi_align(16, a, 2, x, 1, 1, 4, 4, half, bi, 1, &out), 0, "%s",
		     cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], 4.0f * 0.5f + 2.5f, 1e-6f);
	cr_assert_eq(((float *)out.data)[1], 0.0f);
	free(out.data);
	free(x);
}

/* float16 and bfloat16 compute in float and round the result; bfloat16
 * only from opset 22. */
Test(ops_roi_align, half_types)
{
	static const cep_dtype types[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	float *x = linear_images(1, 1, 4, 4);
	static const float roi[4] = { 0, 0, 2, 2 };
	int64_t bi = 0;
	uint16_t hx[16], hroi[4];
	struct op_attr a = oh_int("sampling_ratio", 2);
	struct op_tensor in[3], out;
	int t, i;

	for (t = 0; t < 2; t++) {
		for (i = 0; i < 16; i++)
			cpu_store_f(hx, types[t], i, x[i]);
		for (i = 0; i < 4; i++)
			cpu_store_f(hroi, types[t], i, roi[i]);
		in[0] = oh_tensor(types[t], 4, DIMS(1, 1, 4, 4), hx);
		in[1] = oh_tensor(types[t], 2, DIMS(1, 4), hroi);
		in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &bi);
		cr_assert_eq(oh_run("RoiAlign", 22, &a, 1, in, 3, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, types[t]);
		cr_assert_eq(cpu_load_f(out.data, types[t], 0), 2.5f);
		free(out.data);
	}
	cr_assert_eq(oh_run("RoiAlign", 21, &a, 1, in, 3, &out, 1), CEP_EUNSUPPORTED);
	free(x);
}

Test(ops_roi_align, refusals_name_what_is_wrong)
{
	float *x = linear_images(2, 1, 4, 4);
	static const float roi[8] = { 0, 0, 2, 2, 1, 1, 3, 3 };
	int64_t bi[2] = { 0, 2 };
	int32_t bi32[2] = { 0, 0 };
	struct op_attr bad[5] = { oh_string("mode", "sum"),
				  oh_string("coordinate_transformation_mode", "align_corners"),
				  oh_int("output_height", 0), oh_int("sampling_ratio", -1),
				  oh_string("coordinate_transformation_mode", "half_pixel") };
	struct op_tensor in[3], out;

	cr_assert_eq(roi_align(16, bad, 1, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: mode is 'sum', expected 'avg' or 'max'");
	cr_assert_eq(roi_align(16, bad + 1, 1, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: coordinate_transformation_mode is "
			 "'align_corners', expected 'half_pixel' or 'output_half_pixel'");
	cr_assert_eq(roi_align(16, bad + 2, 1, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: output_height and output_width must be at "
			 "least 1, they are 0 and 1");
	cr_assert_eq(roi_align(16, bad + 3, 1, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: sampling_ratio is -1, it must not be "
			 "negative");
	cr_assert_eq(roi_align(10, bad + 4, 1, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: attribute 'coordinate_transformation_mode' "
			 "does not exist at opset 10");
	/* Batch index 2 of two images. */
	cr_assert_eq(roi_align(16, NULL, 0, x, 2, 1, 4, 4, roi, bi, 2, &out), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: batch index 2 of roi 1 is out of range for "
			 "2 images");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 4, DIMS(2, 1, 4, 4), x);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 4), (void *)roi);
	in[2] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), bi32);
	cr_assert_eq(oh_run("RoiAlign", 16, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: batch_indices is int32, not int64");
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), bi);
	cr_assert_eq(oh_run("RoiAlign", 16, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: 2 rois but 1 batch indices");
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), bi);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(1, 8), (void *)roi);
	cr_assert_eq(oh_run("RoiAlign", 16, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: rois must be (num_rois, 4)");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 4), (void *)roi);
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 4, 4), x);
	cr_assert_eq(oh_run("RoiAlign", 16, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: X must have rank 4 (N, C, H, W), it has 3");
	free(x);
}

/* Inference needs no values: (num_rois, C, output_height, output_width),
 * the roi count from either input. */
Test(ops_roi_align, inference_from_shapes)
{
	struct op_attr a[2] = { oh_int("output_height", 7), oh_int("output_width", 5) };
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT16, 4, DIMS(OP_DIM_SYM(0), 256, 50, 60), NULL),
		oh_tensor(CEP_DTYPE_FLOAT16, 2, DIMS(OP_DIM_SYM(1), 4), NULL),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(300), NULL),
	};
	struct op_tensor out;

	cr_assert_eq(oh_infer("RoiAlign", 16, a, 2, in, 3, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT16);
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], 300);
	cr_assert_eq(out.dims[1], 256);
	cr_assert_eq(out.dims[2], 7);
	cr_assert_eq(out.dims[3], 5);
}
