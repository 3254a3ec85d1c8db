/*
 * nms.c — NonMaxSuppression (opsets 10 and 11, which say the same): for
 * each batch and class, the boxes taken greedily by falling score, a box
 * kept unless its intersection over union with one already kept is
 * strictly above iou_threshold, at most max_output_boxes_per_class of
 * them, and only those scoring strictly above score_threshold when that
 * is given. The output is int64 (selected, 3): batch, class and box
 * index, batch by batch, class by class, in the order they were taken.
 *
 * Boxes are float32 [y1, x1, y2, x2] corners in either order
 * (center_point_box 0) or [x_center, y_center, width, height] (1). The
 * arithmetic follows the onnx reference's step for step in float32, so
 * that a box on the threshold goes the same way: the intersection first
 * (none when its extent along x or y is not positive), then the areas
 * (either not positive: no overlap), the union as area1 + area2 minus the
 * intersection, and the quotient. Ties in score go to the lower box index;
 * a NaN score comes after every number. The optional inputs default to
 * no boxes (max_output_boxes_per_class), 0 (iou_threshold) and no filter
 * (score_threshold); an empty one counts as absent, as in the reference.
 *
 * The output's extent is the number selected: inference runs the whole
 * selection when every input's value is known, and the planner settles it
 * like NonZero's (kernels/cpu/select.c). The kernel selects again and
 * checks the count against the plan's.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>
#include <stdlib.h>

/* What the optional inputs ask for. */
struct nms_limits {
	int64_t max_per_class;          /* 0 when absent or negative */
	float iou_threshold;            /* 0 when absent */
	float score_threshold;
	bool has_score_threshold;       /* absent: every box is a candidate */
};

/* -------------------------------------------------------------- selection */

/* Python's max() and min() of two: the first unless the second wins. */
static float nms_max(float a, float b) { return b > a ? b : a; }
static float nms_min(float a, float b) { return b < a ? b : a; }

/* Both ends of one extent, as the reference's max_min(): (rhs, lhs) when
 * lhs >= rhs. */
static void nms_span(float lhs, float rhs, float *lo, float *hi)
{
	if (lhs >= rhs) {
		*lo = rhs;
		*hi = lhs;
	} else {
		*lo = lhs;
		*hi = rhs;
	}
}

/* The extent of box b (4 floats) along x (axis 1) or y (axis 0). */
static void nms_extent(const float *b, bool center, int axis, float *lo, float *hi)
{
	if (center) {
		float half = b[axis == 1 ? 2 : 3] / 2.0f;
		float mid = b[axis == 1 ? 0 : 1];

		*lo = mid - half;
		*hi = mid + half;
		return;
	}
	nms_span(b[axis], b[axis + 2], lo, hi);
}

/* Whether box a is suppressed by box b, already kept. */
static bool nms_suppresses(const float *a, const float *b, bool center, float iou_threshold)
{
	float ax0, ax1, bx0, bx1, ay0, ay1, by0, by1, ix0, ix1, iy0, iy1;
	float inter, area_a, area_b, uni;

	nms_extent(a, center, 1, &ax0, &ax1);
	nms_extent(b, center, 1, &bx0, &bx1);
	ix0 = nms_max(ax0, bx0);
	ix1 = nms_min(ax1, bx1);
	if (ix1 <= ix0)
		return false;
	nms_extent(a, center, 0, &ay0, &ay1);
	nms_extent(b, center, 0, &by0, &by1);
	iy0 = nms_max(ay0, by0);
	iy1 = nms_min(ay1, by1);
	if (iy1 <= iy0)
		return false;
	inter = (ix1 - ix0) * (iy1 - iy0);
	if (inter <= 0.0f)
		return false;
	area_a = (ax1 - ax0) * (ay1 - ay0);
	area_b = (bx1 - bx0) * (by1 - by0);
	uni = area_a + area_b - inter;
	if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f)
		return false;
	return inter / uni > iou_threshold;
}

/* Whether score a (box ia) is taken before score b (box ib). */
static bool nms_before(float a, int64_t ia, float b, int64_t ib)
{
	bool na = a != a, nb = b != b;

	if (na || nb)
		return na && nb ? ia < ib : nb;
	if (a != b)
		return a > b;
	return ia < ib;
}

/* Sorts the box indices pos[0..n) of scores sc by nms_before(), bottom-up
 * through tmp; returns the array holding the result. */
static int64_t *nms_sort(int64_t *pos, int64_t *tmp, int64_t n, const float *sc)
{
	int64_t w, lo, *src = pos, *dst = tmp, *t;

	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = nms_before(sc[src[b]], src[b], sc[src[a]], src[a]) ? src[b++]
											 : src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/*
 * Selects the boxes of one batch (boxes: n x 4) and class (scores: n)
 * under lim into sel (room for n), using pos and tmp (n each) as scratch;
 * returns how many.
 */
static int64_t nms_class(const float *boxes, const float *scores, int64_t n,
			 const struct nms_limits *lim, bool center, int64_t *sel,
			 int64_t *pos, int64_t *tmp)
{
	int64_t m = 0, k, s, count = 0, *order;

	for (k = 0; k < n; k++) {
		if (!lim->has_score_threshold || scores[k] > lim->score_threshold)
			pos[m++] = k;
	}
	order = nms_sort(pos, tmp, m, scores);
	for (k = 0; k < m && count < lim->max_per_class; k++) {
		bool kept = true;

		for (s = 0; s < count && kept; s++)
			kept = !nms_suppresses(boxes + order[k] * 4, boxes + sel[s] * 4, center,
						   lim->iou_threshold);
		if (kept)
			sel[count++] = order[k];
	}
	return count;
}

/* --------------------------------------------------------------- inputs */

/* The optional inputs, for messages. */
static const char *const nms_inputs[5] = {
	"boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold",
};

/* Whether optional input i of in (n_in) is given with at least one element;
 * *n its count when its shape is fixed. */
static bool nms_given(const struct op_tensor *in, int n_in, int i, int64_t *n)
{
	*n = -1;
	if (i >= n_in || !op_tensor_present(&in[i]))
		return false;
	if (op_tensor_numel(&in[i], n) != 0)
		*n = -1;
	return *n != 0;
}

/* Checks the attribute and the inputs' types and shapes as far as they
 * are known. */
static int nms_check(const struct op_node *node, const struct op_tensor *in, int n_in)
{
	const struct op_tensor *boxes = &in[0], *scores = &in[1];
	int64_t cpb, n;
	int i, ret;

	ret = op_attr_check(node, "center_point_box", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	cpb = op_attr_int(node, "center_point_box", 0);
	if (cpb != 0 && cpb != 1)
		return cep__set_error(CEP_EMODEL, "NonMaxSuppression: center_point_box is %" PRId64
				      ", must be 0 or 1", cpb);
	for (i = 0; i < n_in && i < 5; i++) {
		cep_dtype want = i == 2 ? CEP_DTYPE_INT64 : CEP_DTYPE_FLOAT32;

		if (!op_tensor_present(&in[i]))
			continue;
		if (in[i].dtype != want)
			return cep__set_error(CEP_EDTYPE, "NonMaxSuppression: %s is %s, not %s",
					      nms_inputs[i], cep_dtype_name(in[i].dtype),
					      cep_dtype_name(want));
		if (i >= 2 && nms_given(in, n_in, i, &n) && n > 1)
			return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: %s must hold one value, "
					      "it has %" PRId64, nms_inputs[i], n);
	}
	if (boxes->rank >= 0 && boxes->rank != 3)
		return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: boxes must have rank 3 "
				      "(batches, boxes, 4), it has %d", boxes->rank);
	if (scores->rank >= 0 && scores->rank != 3)
		return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: scores must have rank 3 "
				      "(batches, classes, boxes), it has %d", scores->rank);
	if (boxes->rank < 0)
		return 0;
	if (op_dim_fixed(boxes->dims[2]) && boxes->dims[2] != 4)
		return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: boxes has %" PRId64
				      " coordinates per box, not 4", boxes->dims[2]);
	if (scores->rank < 0)
		return 0;
	if (op_dim_fixed(boxes->dims[0]) && op_dim_fixed(scores->dims[0]) &&
	    boxes->dims[0] != scores->dims[0])
		return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: boxes has %" PRId64
				      " batches, scores %" PRId64, boxes->dims[0], scores->dims[0]);
	if (op_dim_fixed(boxes->dims[1]) && op_dim_fixed(scores->dims[2]) &&
	    boxes->dims[1] != scores->dims[2])
		return cep__set_error(CEP_ESHAPE, "NonMaxSuppression: boxes has %" PRId64
				      " boxes, scores %" PRId64, boxes->dims[1], scores->dims[2]);
	return 0;
}

/* Reads the optional inputs (data on the host) into *lim; an iou_threshold
 * outside [0, 1] is CEP_EINVAL. */
static int nms_limits_read(const struct op_tensor *in, int n_in, struct nms_limits *lim)
{
	int64_t n;

	memset(lim, 0, sizeof(*lim));
	if (nms_given(in, n_in, 2, &n)) {
		lim->max_per_class = *(const int64_t *)in[2].data;
		if (lim->max_per_class < 0)
			lim->max_per_class = 0;
	}
	if (nms_given(in, n_in, 3, &n)) {
		lim->iou_threshold = *(const float *)in[3].data;
		if (!(lim->iou_threshold >= 0.0f && lim->iou_threshold <= 1.0f))
			return cep__set_error(CEP_EINVAL, "NonMaxSuppression: iou_threshold is %g, "
					      "it must be in [0, 1]", (double)lim->iou_threshold);
	}
	if (nms_given(in, n_in, 4, &n)) {
		lim->has_score_threshold = true;
		lim->score_threshold = *(const float *)in[4].data;
	}
	return 0;
}

/*
 * Runs the selection over in (shapes fixed, data on the host), writing the
 * first cap of its (count, 3) triples to out (cap 0: only counting), and
 * stores the count in *count. Fails only for limits that cannot be read,
 * or CEP_ENOMEM.
 */
static int nms_select(const struct op_node *node, const struct op_tensor *in, int n_in,
		      int64_t *out, int64_t cap, int64_t *count)
{
	const struct op_tensor *boxes = &in[0], *scores = &in[1];
	int64_t nb = boxes->dims[0], n = boxes->dims[1], nc = scores->dims[1], b, c, s, got;
	bool center = op_attr_int(node, "center_point_box", 0) != 0;
	struct nms_limits lim;
	int64_t *scratch;
	int ret;

	*count = 0;
	ret = nms_limits_read(in, n_in, &lim);
	if (ret < 0 || n == 0 || lim.max_per_class == 0)
		return ret;
	scratch = malloc((size_t)n * 3 * sizeof(int64_t));
	if (!scratch)
		return cep__set_error(CEP_ENOMEM, "NonMaxSuppression: out of memory for %" PRId64
				      " boxes", n);
	for (b = 0; b < nb; b++) {
		for (c = 0; c < nc; c++) {
			got = nms_class((const float *)boxes->data + b * n * 4,
					(const float *)scores->data + (b * nc + c) * n, n, &lim,
					center, scratch, scratch + n, scratch + 2 * n);
			for (s = 0; s < got && *count + s < cap; s++) {
				out[(*count + s) * 3 + 0] = b;
				out[(*count + s) * 3 + 1] = c;
				out[(*count + s) * 3 + 2] = scratch[s];
			}
			*count += got;
		}
	}
	free(scratch);
	return 0;
}

/* ------------------------------------------------------------ operators */

static int nms_infer(struct op_infer *x)
{
	struct op_tensor *y = &x->out[0];
	int64_t count, numel;
	int i, ret;

	y->dtype = CEP_DTYPE_INT64;
	y->rank = 2;
	y->dims[0] = OP_DIM_UNKNOWN;
	y->dims[1] = 3;
	ret = nms_check(x->node, x->in, x->n_in);
	if (ret < 0)
		return ret;
	for (i = 0; i < x->n_in; i++) {
		if (op_tensor_present(&x->in[i]) &&
		    (!x->in[i].data || op_tensor_numel(&x->in[i], &numel) != 0))
			return 0;
	}
	ret = nms_select(x->node, x->in, x->n_in, NULL, 0, &count);
	if (ret < 0)
		return ret;
	y->dims[0] = count;
	return 0;
}

static int nms_run(struct op_call *c)
{
	int64_t count;
	int ret;

	ret = nms_select(c->node, c->in, c->n_in, c->out[0].data, c->out[0].dims[0], &count);
	if (ret < 0)
		return ret;
	if (count != c->out[0].dims[0])
		return cep__set_error(CEP_EINVAL, "NonMaxSuppression: %" PRId64 " boxes are "
				      "selected, the plan expected %" PRId64, count,
				      c->out[0].dims[0]);
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "NonMaxSuppression", 10, OP_OPSET_MAX, 2, 5, 1, 1, 0, 0, nms_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "NonMaxSuppression", 10, OP_OPSET_MAX, BACKEND_HOST, OP_DT(CEP_DTYPE_FLOAT32), NULL,
	  nms_run },
};

const struct op_family op_family_cpu_nms = {
	"cpu_nms", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
