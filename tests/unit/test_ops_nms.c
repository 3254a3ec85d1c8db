/*
 * test_ops_nms.c — NonMaxSuppression of kernels/cpu/nms.c, called the
 * way the engine calls it (schema inference, then the host kernel through
 * exec_host_eval): the conformance cases worked out by hand (suppression
 * by IoU, the center-point format, flipped corners, identical boxes, the
 * output limit, the score threshold, two batches, two classes), an IoU
 * exactly on the threshold (kept), ties and NaN scores, the optional
 * inputs left out or empty, random boxes against a selection written
 * here another way (each kept box suppressing those after it), the
 * refusals (attribute, types, shapes, an iou_threshold outside [0, 1], a
 * count the plan did not expect), inference without the data, and a model
 * whose boxes and scores are fed at run time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "gpu/backend.h"
#include "kernels/registry.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* The six boxes of most conformance cases, [y1, x1, y2, x2], and their
 * scores: 0 and 1 and 2 overlap, so do 3 and 4; 5 is alone. */
static const float corner_boxes[24] = {
	0.0f, 0.0f, 1.0f, 1.0f,   0.0f, 0.1f, 1.0f, 1.1f,   0.0f, -0.1f, 1.0f, 0.9f,
	0.0f, 10.0f, 1.0f, 11.0f, 0.0f, 10.1f, 1.0f, 11.1f, 0.0f, 100.0f, 1.0f, 101.0f,
};
static const float six_scores[6] = { 0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f };

/* Runs NonMaxSuppression at opset 11 over nb batches of nbox boxes and nc
 * classes, with max_output_boxes_per_class mo, iou_threshold iou and
 * score_threshold st (NAN: that input left out), center_point_box cpb. */
static int nms(const float *boxes, const float *scores, int64_t nb, int64_t nc, int64_t nbox,
	       int64_t mo, float iou, float st, int64_t cpb, struct op_tensor *out)
{
	struct op_attr a = oh_int("center_point_box", cpb);
	struct op_tensor in[5] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(nb, nbox, 4), (void *)boxes),
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(nb, nc, nbox), (void *)scores),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &mo),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), &iou),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), &st),
	};

	return oh_run("NonMaxSuppression", 11, &a, 1, in, isnan(st) ? 4 : 5, out, 1);
}

/* Asserts that out holds the n triples want (3 n values). */
static void assert_selected(const struct op_tensor *out, const int64_t *want, int n)
{
	int i;

	cr_assert_eq(out->dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out->rank, 2);
	cr_assert_eq(out->dims[0], n, "%lld selected, want %d", (long long)out->dims[0], n);
	cr_assert_eq(out->dims[1], 3);
	for (i = 0; i < 3 * n; i++)
		cr_assert_eq(((int64_t *)out->data)[i], want[i], "entry %d: %lld, want %lld", i,
			     (long long)((int64_t *)out->data)[i], (long long)want[i]);
}

/* test_nonmaxsuppression_suppress_by_IOU: 3 (0.95) suppresses 4, 0 (0.9)
 * suppresses 1 and 2, 5 is kept. */
Test(ops_nms, the_conformance_cases_by_hand)
{
	static const int64_t three[9] = { 0, 0, 3, 0, 0, 0, 0, 0, 5 };
	static const float center_boxes[24] = {
		0.5f, 0.5f, 1.0f, 1.0f,  0.5f, 0.6f, 1.0f, 1.0f,  0.5f, 0.4f, 1.0f, 1.0f,
		0.5f, 10.5f, 1.0f, 1.0f, 0.5f, 10.6f, 1.0f, 1.0f, 0.5f, 100.5f, 1.0f, 1.0f,
	};
	static const float flipped[24] = {
		1.0f, 1.0f, 0.0f, 0.0f,   0.0f, 0.1f, 1.0f, 1.1f,   0.0f, 0.9f, 1.0f, -0.1f,
		0.0f, 10.0f, 1.0f, 11.0f, 1.0f, 10.1f, 0.0f, 11.1f, 1.0f, 101.0f, 0.0f, 100.0f,
	};
	struct op_tensor out;

	cr_assert_eq(nms(corner_boxes, six_scores, 1, 1, 6, 3, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, three, 3);
	free(out.data);
	/* test_nonmaxsuppression_center_point_box_format */
	cr_assert_eq(nms(center_boxes, six_scores, 1, 1, 6, 3, 0.5f, 0.0f, 1, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, three, 3);
	free(out.data);
	/* test_nonmaxsuppression_flipped_coordinates */
	cr_assert_eq(nms(flipped, six_scores, 1, 1, 6, 3, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, three, 3);
	free(out.data);
	/* test_nonmaxsuppression_limit_output_size: two of them. */
	cr_assert_eq(nms(corner_boxes, six_scores, 1, 1, 6, 2, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, three, 2);
	free(out.data);
	/* test_nonmaxsuppression_suppress_by_IOU_and_scores: 5 scores 0.3. */
	cr_assert_eq(nms(corner_boxes, six_scores, 1, 1, 6, 3, 0.5f, 0.4f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, three, 2);
	free(out.data);
}

/* test_nonmaxsuppression_identical_boxes, _single_box, _two_batches and
 * _two_classes. */
Test(ops_nms, identical_boxes_batches_and_classes)
{
	float same[40], same_scores[10], two_boxes[48], two_scores[12];
	static const int64_t first[3] = { 0, 0, 0 };
	static const int64_t batches[12] = { 0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0 };
	static const int64_t classes[12] = { 0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0 };
	struct op_tensor out;
	int i;

	for (i = 0; i < 40; i++)
		same[i] = i % 4 >= 2 ? 1.0f : 0.0f;
	for (i = 0; i < 10; i++)
		same_scores[i] = 0.9f;
	cr_assert_eq(nms(same, same_scores, 1, 1, 10, 3, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, first, 1);
	free(out.data);
	cr_assert_eq(nms(corner_boxes, six_scores, 1, 1, 1, 3, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, first, 1);
	free(out.data);
	memcpy(two_boxes, corner_boxes, sizeof(corner_boxes));
	memcpy(two_boxes + 24, corner_boxes, sizeof(corner_boxes));
	memcpy(two_scores, six_scores, sizeof(six_scores));
	memcpy(two_scores + 6, six_scores, sizeof(six_scores));
	cr_assert_eq(nms(two_boxes, two_scores, 2, 1, 6, 2, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, batches, 4);
	free(out.data);
	cr_assert_eq(nms(corner_boxes, two_scores, 1, 2, 6, 2, 0.5f, 0.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, classes, 4);
	free(out.data);
}

/* Box 1 covers the lower half of box 0: IoU 0.5 / (1 + 0.5 - 0.5) = 0.5
 * exactly, kept at threshold 0.5 ("strictly greater" suppresses), gone
 * below it. Touching boxes have no intersection at all. */
Test(ops_nms, an_iou_on_the_threshold_is_kept)
{
	static const float boxes[12] = { 0, 0, 1, 1, 0, 0, 0.5f, 1, 1, 0, 2, 1 };
	static const float scores[3] = { 0.9f, 0.8f, 0.7f };
	static const int64_t all[9] = { 0, 0, 0, 0, 0, 1, 0, 0, 2 }, two[6] = { 0, 0, 0, 0, 0, 2 };
	struct op_tensor out;

	cr_assert_eq(nms(boxes, scores, 1, 1, 3, 9, 0.5f, NAN, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, all, 3);
	free(out.data);
	cr_assert_eq(nms(boxes, scores, 1, 1, 3, 9, 0.4999f, NAN, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, two, 2);
	free(out.data);
	/* At threshold 0 any overlap suppresses; box 2 only touches box 0. */
	cr_assert_eq(nms(boxes, scores, 1, 1, 3, 9, 0.0f, NAN, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, two, 2);
	free(out.data);
}

/* Equal scores go to the lower index first; a NaN score after every
 * number, and out with any score threshold. Degenerate boxes (no area)
 * never suppress. */
Test(ops_nms, ties_nan_scores_and_empty_boxes)
{
	static const float boxes[16] = { 0, 0, 1, 1, 5, 5, 6, 6, 0, 0, 1, 1, 3, 3, 3, 4 };
	static const float scores[4] = { 0.5f, NAN, 0.5f, 0.1f };
	static const int64_t order[9] = { 0, 0, 0, 0, 0, 3, 0, 0, 1 };
	static const int64_t filtered[6] = { 0, 0, 0, 0, 0, 3 };
	static const float dup[8] = { 0, 0, 0, 1, 0, 0, 0, 1 };
	static const float dup_scores[2] = { 0.5f, 0.4f };
	static const int64_t both[6] = { 0, 0, 0, 0, 0, 1 };
	struct op_tensor out;

	cr_assert_eq(nms(boxes, scores, 1, 1, 4, 9, 0.5f, NAN, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, order, 3);
	free(out.data);
	cr_assert_eq(nms(boxes, scores, 1, 1, 4, 9, 0.5f, -1.0f, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, filtered, 2);
	free(out.data);
	cr_assert_eq(nms(dup, dup_scores, 1, 1, 2, 9, 0.0f, NAN, 0, &out), 0, "%s",
		     cep_last_error());
	assert_selected(&out, both, 2);
	free(out.data);
}

/* Without max_output_boxes_per_class nothing is selected; a negative one
 * selects nothing either; empty optional inputs count as absent. */
Test(ops_nms, the_optional_inputs)
{
	int64_t mo = -2;
	float iou = 0.5f;
	struct op_tensor in[5] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 6, 4), (void *)corner_boxes),
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 1, 6), (void *)six_scores),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &mo),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(0), &iou),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &iou),
	};
	static const int64_t top[3] = { 0, 0, 3 };
	struct op_tensor out;

	cr_assert_eq(oh_run("NonMaxSuppression", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
	cr_assert_eq(oh_run("NonMaxSuppression", 10, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
	/* One box per class; the empty iou_threshold is 0, the scalar score
	 * threshold 0.5 leaves 0 (0.9), 1 (0.75), 2 (0.6) and 3 (0.95). */
	mo = 1;
	cr_assert_eq(oh_run("NonMaxSuppression", 10, NULL, 0, in, 5, &out, 1), 0, "%s",
		     cep_last_error());
	assert_selected(&out, top, 1);
	free(out.data);
}

/* --------------------------------------------------------------- reference */

/* The IoU of two corner boxes [y1, x1, y2, x2] in double, corners sorted. */
static double ref_iou(const float *a, const float *b)
{
	double ay0 = fmin(a[0], a[2]), ay1 = fmax(a[0], a[2]);
	double ax0 = fmin(a[1], a[3]), ax1 = fmax(a[1], a[3]);
	double by0 = fmin(b[0], b[2]), by1 = fmax(b[0], b[2]);
	double bx0 = fmin(b[1], b[3]), bx1 = fmax(b[1], b[3]);
	double w = fmin(ax1, bx1) - fmax(ax0, bx0), h = fmin(ay1, by1) - fmax(ay0, by0);
	double inter, uni;

	if (w <= 0 || h <= 0)
		return 0.0;
	inter = w * h;
	uni = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter;
	return inter / uni;
}

/* The greedy selection the other way round: take the best box left, then
 * strike every box it overlaps; n boxes, scores distinct. */
static int ref_nms(const float *boxes, const float *scores, int n, int limit, double thr,
		   int64_t *sel)
{
	bool gone[64] = { false };
	int count = 0, i, best;

	while (count < limit) {
		best = -1;
		for (i = 0; i < n; i++) {
			if (!gone[i] && (best < 0 || scores[i] > scores[best]))
				best = i;
		}
		if (best < 0)
			break;
		sel[count++] = best;
		gone[best] = true;
		for (i = 0; i < n; i++) {
			if (!gone[i] && ref_iou(boxes + 4 * i, boxes + 4 * best) > thr)
				gone[i] = true;
		}
	}
	return count;
}

/* Random boxes in a small field, so that they overlap often, three
 * classes of distinct scores; the thresholds keep clear of every IoU by
 * 1e-4, so that float and double agree on each comparison. */
Test(ops_nms, random_boxes_match_a_selection_done_another_way)
{
	enum { N = 40, C = 3 };
	float boxes[N * 4], scores[C * N];
	int64_t want[C * N * 3], sel[N];
	unsigned seed = 7;
	int trial, c, i, j, k, n_want;

	for (trial = 0; trial < 20; trial++) {
		double thr = 0.1 + 0.04 * trial;
		struct op_tensor out;
		bool clear;

		do {
			for (i = 0; i < N; i++) {
				float y = (oh_rand(&seed) + 1.0f) * 4.0f, x = (oh_rand(&seed) + 1.0f) * 4.0f;
				float h = (oh_rand(&seed) + 1.5f) * 1.5f, w = (oh_rand(&seed) + 1.5f) * 1.5f;

				/* Corners in either order. */
				boxes[4 * i + 0] = trial % 2 ? y + h : y;
				boxes[4 * i + 1] = x;
				boxes[4 * i + 2] = trial % 2 ? y : y + h;
				boxes[4 * i + 3] = x + w;
			}
			clear = true;
			for (i = 0; i < N && clear; i++) {
				for (j = 0; j < N && clear; j++)
					clear = i == j || fabs(ref_iou(boxes + 4 * i, boxes + 4 * j) - thr) > 1e-4;
			}
		} while (!clear);
		for (i = 0; i < C * N; i++)
			scores[i] = (float)((i * 37 + trial * 11) % (C * N)) / (float)(C * N);
		n_want = 0;
		for (c = 0; c < C; c++) {
			int got = ref_nms(boxes, scores + c * N, N, 5 + trial, thr, sel);

			for (k = 0; k < got; k++) {
				want[3 * n_want + 0] = 0;
				want[3 * n_want + 1] = c;
				want[3 * n_want + 2] = sel[k];
				n_want++;
			}
		}
		cr_assert_eq(nms(boxes, scores, 1, C, N, 5 + trial, (float)thr, NAN, 0, &out), 0,
			     "%s", cep_last_error());
		assert_selected(&out, want, n_want);
		free(out.data);
	}
}

/* ----------------------------------------------------------------- errors */

Test(ops_nms, refusals_name_what_is_wrong)
{
	int64_t mo = 3, mo2[2] = { 1, 2 };
	float iou = 1.5f;
	int32_t bad[24] = { 0 };
	struct op_attr cpb = oh_int("center_point_box", 2);
	struct op_tensor in[5] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 6, 4), (void *)corner_boxes),
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 1, 6), (void *)six_scores),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &mo),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(1), &iou),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("NonMaxSuppression", 11, &cpb, 1, in, 2, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: center_point_box is 2, must be "
			 "0 or 1");
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 4, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: iou_threshold is 1.5, it must be "
			 "in [0, 1]");
	in[2] = oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), mo2);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: max_output_boxes_per_class must "
			 "hold one value, it has 2");
	in[0] = oh_tensor(CEP_DTYPE_INT32, 3, DIMS(1, 6, 4), bad);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: boxes is int32, not float32");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 8, 3), (void *)corner_boxes);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: boxes has 3 coordinates per "
			 "box, not 4");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(2, 3, 4), (void *)corner_boxes);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: boxes has 2 batches, scores 1");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 3, 4), (void *)corner_boxes);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: boxes has 3 boxes, scores 6");
	in[0] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(6, 4), (void *)corner_boxes);
	cr_assert_eq(oh_run("NonMaxSuppression", 11, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: boxes must have rank 3 "
			 "(batches, boxes, 4), it has 2");
	cr_assert_eq(oh_run("NonMaxSuppression", 9, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
}

/* Without the values only the triple's width is known; the kernel selects
 * again and checks the count against the plan's. */
Test(ops_nms, inference_and_the_plans_count)
{
	const struct op_node node = { "t", "NonMaxSuppression", "", 11, 0, NULL };
	int64_t mo = 3;
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 6, 4), NULL),
		oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 1, 6), (void *)six_scores),
		oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), &mo),
	};
	struct op_tensor out;
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(oh_infer("NonMaxSuppression", 11, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], OP_DIM_UNKNOWN);
	cr_assert_eq(out.dims[1], 3);
	in[0].data = (void *)corner_boxes;
	out = oh_tensor(CEP_DTYPE_INT64, 2, DIMS(2, 3), NULL);
	cr_assert_eq(op_schema_find("", "NonMaxSuppression", 11, &s), 0);
	cr_assert_eq(op_kernel_find(s, 11, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 3, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "NonMaxSuppression: 3 boxes are selected, the plan "
			 "expected 2");
}

/* ----------------------------------------------------------------- engine */

/* Boxes, scores and limits fed at run time: the planner reads them and
 * counts; each selection gets its plan. */
Test(ops_nms, engine_plans_by_the_inputs_values)
{
	struct onnxb *b = onnxb_new(11);
	int64_t bd[3] = { 1, 6, 4 }, sd[3] = { 1, 1, 6 }, one[1] = { 1 }, mo = 3, y[18];
	float scores[6], iou = 0.5f;
	struct engine_input in[4] = {
		{ "boxes", CEP_DTYPE_FLOAT32, 3, bd, corner_boxes, sizeof(corner_boxes) },
		{ "scores", CEP_DTYPE_FLOAT32, 3, sd, scores, sizeof(scores) },
		{ "mo", CEP_DTYPE_INT64, 1, one, &mo, sizeof(mo) },
		{ "iou", CEP_DTYPE_FLOAT32, 1, one, &iou, sizeof(iou) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	static const int64_t three[9] = { 0, 0, 3, 0, 0, 0, 0, 0, 5 };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	size_t len;
	uint8_t *buf;
	int i;

	memcpy(scores, six_scores, sizeof(scores));
	onnxb_input(b, "boxes", CEP_DTYPE_FLOAT32, "1,6,4");
	onnxb_input(b, "scores", CEP_DTYPE_FLOAT32, "1,1,6");
	onnxb_input(b, "mo", CEP_DTYPE_INT64, "1");
	onnxb_input(b, "iou", CEP_DTYPE_FLOAT32, "1");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "NonMaxSuppression", "boxes,scores,mo,iou", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	for (i = 0; i < 9; i++)
		cr_assert_eq(y[i], three[i]);
	/* Box 4 now outscores 3 and takes its place. */
	scores[4] = 0.99f;
	cr_assert_eq(eu_run(s, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	cr_assert_eq(y[2], 4);
	mo = 6;
	iou = 0.0f;
	cr_assert_eq(eu_run(s, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 3);
	iou = 1.0f;
	cr_assert_eq(eu_run(s, in, 4, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 6);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
