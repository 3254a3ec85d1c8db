/*
 * test_cuda_roi_align.c — the CUDA kernels of RoiAlign
 * (kernels/cuda/roi_align.c) against the reference kernel of
 * kernels/cpu/roi_align.c on fresh random images and regions (inside,
 * across the edges, far outside, inverted, smaller than a pixel): both
 * modes, both coordinate modes and opset 10's, sampling ratios from 0
 * (adaptive) to 3, several bin grids, every type each opset takes, the
 * float specials in the image once; printing the worst error of each. A
 * batch index out of range fails the run with the operator named.
 *
 * Everywhere: the registry gives RoiAlign a CUDA kernel for each type and
 * opset the host has one for. On a GPU machine with CUDAEP_TEST_GPU=1 the
 * rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

static const cep_dtype float_types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					 CEP_DTYPE_BFLOAT16 };

/* ------------------------------------------------------------ everywhere */

Test(cuda_roi_align, the_device_covers_what_the_host_covers)
{
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "RoiAlign", opset, &s) != 0)
			continue;
		for (t = 0; t < 3; t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, float_types[t],
						       &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, float_types[t],
						      &dev) == 0;

			cr_assert_eq(has_dev, has_host, "RoiAlign/%d %s: host %d, cuda %d", opset,
				     cep_dtype_name(float_types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* 2 types at 10-21, 3 from 22. */
	cr_assert_eq(checked, 2 * 12 + 3 * (OP_OPSET_MAX - 21));
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_roi_align, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* nr random regions of type t over images of h x w: mostly inside, some
 * across the edges or beyond, some inverted or tiny. */
static struct op_tensor rois_random(cep_dtype t, int64_t nr, int64_t h, int64_t w,
				    unsigned *seed)
{
	char shape[32];
	struct op_tensor r;
	int64_t i;

	snprintf(shape, sizeof(shape), "%lld,4", (long long)nr);
	r = host_tensor(t, shape, seed, false);
	for (i = 0; i < nr; i++) {
		float x1 = (float)(rnd(seed) % 1000) / 1000.0f * (float)(w + 4) - 2.0f;
		float y1 = (float)(rnd(seed) % 1000) / 1000.0f * (float)(h + 4) - 2.0f;
		float bw = (float)(rnd(seed) % 1000) / 1000.0f * (float)w * 0.7f;
		float bh = (float)(rnd(seed) % 1000) / 1000.0f * (float)h * 0.7f;
		unsigned kind = rnd(seed) % 10;

		if (kind == 0) {
			bw = -bw;
		} else if (kind == 1) {
			bw *= 0.01f;
			bh *= 0.01f;
		} else if (kind == 2) {
			x1 += (float)(2 * w);
		}
		cpu_store_f(r.data, t, 4 * i + 0, x1);
		cpu_store_f(r.data, t, 4 * i + 1, y1);
		cpu_store_f(r.data, t, 4 * i + 2, x1 + bw);
		cpu_store_f(r.data, t, 4 * i + 3, y1 + bh);
	}
	return r;
}

static struct op_tensor batch_indices(int64_t nr, int64_t nb, unsigned *seed)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_INT64, .rank = 1, .dims = { nr } };
	int64_t i;

	t.data = calloc(1, sizeof(int64_t) * (size_t)(nr > 0 ? nr : 1));
	cr_assert_not_null(t.data);
	for (i = 0; i < nr; i++)
		((int64_t *)t.data)[i] = (int64_t)(rnd(seed) % (unsigned)nb);
	return t;
}

/* One comparison: type t, mode (avg, max), coordinate mode k (0
 * half_pixel, 1 output_half_pixel, 2 the opset's default), bins gh x gw,
 * sampling ratio sr. */
static int64_t check_random(cep_dtype t, int max, int k, int64_t gh, int64_t gw, int sr,
			    unsigned *seed)
{
	struct op_attr at[5] = {
		{ .name = "mode", .type = OP_ATTR_STRING, .s = max ? "max" : "avg" },
		{ .name = "output_height", .type = OP_ATTR_INT, .i = gh },
		{ .name = "output_width", .type = OP_ATTR_INT, .i = gw },
		{ .name = "sampling_ratio", .type = OP_ATTR_INT, .i = sr },
		{ .name = "coordinate_transformation_mode", .type = OP_ATTR_STRING,
		  .s = k ? "output_half_pixel" : "half_pixel" },
	};
	/* The default is opset 10's output_half_pixel, and 22's half_pixel
	 * for bfloat16, which came then. */
	int opset = t == CEP_DTYPE_BFLOAT16 ? 22 : k == 2 ? 10 : 16;
	struct op_tensor in[3];
	char label[160];
	int64_t bad;

	in[0] = host_tensor(t, "2,3,17,23", seed, false);
	in[1] = rois_random(t, 40, 17, 23, seed);
	in[2] = batch_indices(40, 2, seed);
	snprintf(label, sizeof(label), "%s %s %s %lldx%lld ratio %d", cep_dtype_name(t),
		 max ? "max" : "avg", k == 2 ? "default mode" : (const char *)at[4].s,
		 (long long)gh, (long long)gw, sr);
	bad = gpu_check("RoiAlign", opset, at, k == 2 ? 4 : 5, in, 3, 1, label);
	free_all(in, 3);
	return bad;
}

Test(gpu_roi_align, random_regions_match_the_host)
{
	static const int64_t grids[][2] = { { 1, 1 }, { 7, 7 }, { 3, 5 } };
	unsigned seed = 503u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t t, g;
	int m, k, sr;

	GPU_REQUIRE();
	for (t = 0; t < 3; t++)
		for (m = 0; m < 2; m++)
			for (k = 0; k < 3; k++)
				for (g = 0; g < 3; g++)
					for (sr = 0; sr < 4; sr++)
						bad += check_random(float_types[t], m, k, grids[g][0],
								    grids[g][1], sr, &seed);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* A larger image with NaN, infinities and huge values in it, and the
 * spatial scale of a feature map a sixteenth of its image. */
Test(gpu_roi_align, specials_and_a_spatial_scale)
{
	unsigned seed = 509u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t t;
	int m;

	GPU_REQUIRE();
	for (t = 0; t < 3; t++) {
		for (m = 0; m < 2; m++) {
			struct op_attr at[3] = {
				{ .name = "mode", .type = OP_ATTR_STRING, .s = m ? "max" : "avg" },
				{ .name = "spatial_scale", .type = OP_ATTR_FLOAT, .f = 0.0625f },
				{ .name = "output_height", .type = OP_ATTR_INT, .i = 7 },
			};
			struct op_tensor in[3];
			char label[96];

			in[0] = host_tensor(float_types[t], "1,64,50,38", &seed, true);
			in[1] = rois_random(float_types[t], 100, 50 * 16, 38 * 16, &seed);
			in[2] = batch_indices(100, 1, &seed);
			snprintf(label, sizeof(label), "%s %s specials, scale 1/16",
				 cep_dtype_name(float_types[t]), m ? "max" : "avg");
			bad += gpu_check("RoiAlign", 22, at, 3, in, 3, 1, label);
			free_all(in, 3);
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_roi_align, a_batch_index_out_of_range_fails_the_run_with_the_op_named)
{
	static const int64_t good[2] = { 0, 1 }, worse[2] = { 1, 5 };
	unsigned seed = 521u ^ (unsigned)getpid();
	struct op_tensor in[3];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = host_tensor(CEP_DTYPE_FLOAT32, "2,2,8,8", &seed, false);
	in[1] = rois_random(CEP_DTYPE_FLOAT32, 2, 8, 8, &seed);
	in[2] = int64_tensor(good, 2);
	gpu_call_make(&d, "RoiAlign", 16, NULL, 0, in, 3, 1, -1);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, worse, sizeof(worse)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "RoiAlign: index 5 is out of range for dimension 0 "
			 "of size 2");
	printf("  a bad batch index: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	gpu_call_free(&d);
	free_all(in, 3);
}
