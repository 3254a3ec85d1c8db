/*
 * test_cuda_nms.c — the CUDA kernel of NonMaxSuppression
 * (kernels/cuda/nms.c) against the reference kernel of kernels/cpu/nms.c
 * on fresh random boxes crowded into a small field, so that they overlap
 * often: both box formats (corners in either order, and centers), from
 * none to thousands of boxes, several batches and classes, scores with
 * ties and NaNs, every form of the optional inputs (absent, empty, a
 * score threshold, a limit above and below what survives), thresholds
 * from 0 to 1; printing the worst error of each. A selection whose count
 * is not the plan's fails the run with the operator named.
 *
 * Everywhere: the registry gives NonMaxSuppression a CUDA kernel for
 * each opset the host has one for. On a GPU machine with
 * CUDAEP_TEST_GPU=1 the rest runs; elsewhere it skips, visibly.
 */
#include "tests/unit/cuda_util.h"

/* ------------------------------------------------------------ everywhere */

Test(cuda_nms, the_device_covers_what_the_host_covers)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_INT64 };
	const struct op_schema *s;
	const struct op_kernel *host, *dev;
	int opset, checked = 0;
	size_t t;

	for (opset = 1; opset <= OP_OPSET_MAX; opset++) {
		if (op_schema_find("", "NonMaxSuppression", opset, &s) != 0)
			continue;
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			bool has_host = op_kernel_find(s, opset, BACKEND_HOST, types[t], &host) == 0;
			bool has_dev = op_kernel_find(s, opset, BACKEND_CUDA, types[t], &dev) == 0;

			cr_assert_eq(has_dev, has_host, "NonMaxSuppression/%d %s: host %d, cuda %d",
				     opset, cep_dtype_name(types[t]), has_host, has_dev);
			checked += has_dev;
		}
	}
	cep__clear_error();
	/* float32 only, from opset 10. */
	cr_assert_eq(checked, OP_OPSET_MAX - 9);
}

/* ------------------------------------------------------- on the GPU machine */

TestSuite(gpu_nms, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600);

/* Random boxes in a field of side 10: corners (in either order when
 * flip) or centers with sizes from 0.5 to 3. */
static struct op_tensor boxes_random(int64_t nb, int64_t n, bool center, bool flip,
				     unsigned *seed)
{
	char shape[64];
	struct op_tensor t;
	int64_t i;

	snprintf(shape, sizeof(shape), "%lld,%lld,4", (long long)nb, (long long)n);
	t = host_tensor(CEP_DTYPE_FLOAT32, shape, seed, false);
	for (i = 0; i < nb * n; i++) {
		float *b = (float *)t.data + 4 * i;
		float y = (float)(rnd(seed) % 10000) / 1000.0f, x = (float)(rnd(seed) % 10000) / 1000.0f;
		float h = 0.5f + (float)(rnd(seed) % 2500) / 1000.0f;
		float w = 0.5f + (float)(rnd(seed) % 2500) / 1000.0f;

		if (center) {
			b[0] = x;
			b[1] = y;
			b[2] = w;
			b[3] = h;
		} else if (flip && rnd(seed) % 2) {
			b[0] = y + h;
			b[1] = x + w;
			b[2] = y;
			b[3] = x;
		} else {
			b[0] = y;
			b[1] = x;
			b[2] = y + h;
			b[3] = x + w;
		}
	}
	return t;
}

/* Scores in [0, 1): with ties (a few distinct values) or NaNs among them
 * when asked. */
static struct op_tensor scores_random(int64_t nb, int64_t nc, int64_t n, bool ties,
				      bool nans, unsigned *seed)
{
	char shape[64];
	struct op_tensor t;
	int64_t i;

	snprintf(shape, sizeof(shape), "%lld,%lld,%lld", (long long)nb, (long long)nc,
		 (long long)n);
	t = host_tensor(CEP_DTYPE_FLOAT32, shape, seed, false);
	for (i = 0; i < nb * nc * n; i++) {
		float v = (float)(rnd(seed) % 100000) / 100000.0f;

		if (ties)
			v = (float)(rnd(seed) % 4) / 4.0f;
		if (nans && rnd(seed) % 10 == 0)
			v = NAN;
		((float *)t.data)[i] = v;
	}
	return t;
}

static struct op_tensor float_scalar(float v)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_FLOAT32, .rank = 1, .dims = { 1 } };

	t.data = malloc(sizeof(float));
	cr_assert_not_null(t.data);
	*(float *)t.data = v;
	return t;
}

Test(gpu_nms, random_boxes_match_the_host)
{
	static const int64_t sizes[][3] = { { 1, 1, 0 }, { 1, 1, 1 }, { 1, 1, 7 }, { 2, 3, 50 },
					    { 1, 80, 300 }, { 4, 2, 1000 }, { 1, 1, 3000 } };
	static const float ious[] = { 0.0f, 0.3f, 0.5f, 0.7f, 1.0f };
	unsigned seed = 401u ^ (unsigned)getpid();
	int64_t bad = 0;
	size_t z, q;
	int form, opt;

	GPU_REQUIRE();
	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		int64_t nb = sizes[z][0], nc = sizes[z][1], n = sizes[z][2];

		for (form = 0; form < 3; form++) {
			for (q = 0; q < sizeof(ious) / sizeof(ious[0]); q++) {
				for (opt = 0; opt < 4; opt++) {
					struct op_attr at = { .name = "center_point_box",
							      .type = OP_ATTR_INT, .i = form == 2 };
					int64_t limit = opt == 1 ? 3 : n + 5;
					struct op_tensor in[5];
					int n_in = opt == 3 ? 4 : 5;
					char label[160];

					in[0] = boxes_random(nb, n, form == 2, form == 1, &seed);
					in[1] = scores_random(nb, nc, n, opt == 2, opt == 3, &seed);
					in[2] = int64_tensor(&limit, 1);
					in[3] = float_scalar(ious[q]);
					in[4] = float_scalar(opt == 0 ? 0.5f : 0.1f);
					snprintf(label, sizeof(label),
						 "[%lld,%lld,%lld] %s iou %.1f limit %lld%s",
						 (long long)nb, (long long)nc, (long long)n,
						 form == 2 ? "centers" : form ? "flipped" : "corners",
						 (double)ious[q], (long long)limit,
						 opt == 2 ? " ties" : opt == 3 ? " nans, no score threshold"
									      : "");
					bad += gpu_check("NonMaxSuppression", 11, &at, 1, in, n_in, 1, label);
					free_all(in, 5);
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

/* The optional inputs left out or empty: nothing selected without a
 * limit; an empty threshold counts as absent. */
Test(gpu_nms, absent_and_empty_optional_inputs)
{
	unsigned seed = 409u ^ (unsigned)getpid();
	int64_t limit = 4, bad = 0;
	struct op_tensor in[5];

	GPU_REQUIRE();
	in[0] = boxes_random(2, 60, false, false, &seed);
	in[1] = scores_random(2, 3, 60, false, false, &seed);
	in[2] = int64_tensor(&limit, 1);
	in[3] = float_scalar(0.4f);
	in[4] = float_scalar(0.2f);
	bad += gpu_check("NonMaxSuppression", 10, NULL, 0, in, 2, 1, "boxes and scores only");
	bad += gpu_check("NonMaxSuppression", 10, NULL, 0, in, 3, 1, "a limit only");
	in[3].dims[0] = 0;
	bad += gpu_check("NonMaxSuppression", 10, NULL, 0, in, 5, 1, "an empty iou_threshold");
	in[3].dims[0] = 1;
	in[4].dims[0] = 0;
	bad += gpu_check("NonMaxSuppression", 10, NULL, 0, in, 5, 1, "an empty score_threshold");
	in[4].dims[0] = 1;
	free_all(in, 5);
	cr_assert_eq(bad, 0, "%lld mismatches", (long long)bad);
}

Test(gpu_nms, a_count_other_than_the_plans_fails_the_run_with_the_op_named)
{
	unsigned seed = 419u ^ (unsigned)getpid();
	int64_t limit = 2, more = 3;
	struct op_tensor in[3];
	struct gpu_call d;

	GPU_REQUIRE();
	in[0] = boxes_random(1, 40, false, false, &seed);
	in[1] = scores_random(1, 1, 40, false, false, &seed);
	in[2] = int64_tensor(&limit, 1);
	gpu_call_make(&d, "NonMaxSuppression", 11, NULL, 0, in, 3, 1, -1);
	cr_assert_eq(d.out[0].dims[0], 2);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, &more, sizeof(more)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0, "%s",
		     cep_last_error());
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: the values of its inputs give 3 "
			 "elements along dimension 0, where the plan made for the shapes has 2");
	printf("  a bad count: %s\n", cep_last_error());
	cr_assert_eq(backend_stream_fault(gpu_be, gpu_s), &d.call);
	cr_assert_eq(backend_copy_h2d(gpu_be, gpu_s, d.in[2].data, &limit, sizeof(limit)), 0);
	cr_assert_eq(backend_launch(gpu_be, gpu_s, d.kernel->run, &d.call), 0);
	cr_assert_eq(backend_stream_sync(gpu_be, gpu_s), 0, "%s", cep_last_error());
	gpu_call_free(&d);
	free_all(in, 3);
}
