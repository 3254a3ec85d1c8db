/*
 * roi_align.c — RoiAlign (opset 10; coordinate_transformation_mode from
 * 16; bfloat16 from 22): for each region of interest (rois: num_rois x 4,
 * [x1, y1, x2, y2] in the input's coordinates before spatial_scale) over
 * the image batch_indices names, an output_height x output_width grid of
 * bins over every channel of X (N x C x H x W), each bin the average
 * (mode avg) or maximum (mode max) of sampling_ratio x sampling_ratio
 * bilinear samples (ceil(bin size) per side when sampling_ratio is 0).
 *
 * The arithmetic is the onnx reference's (and onnxruntime's), in float32
 * for every type: the region shifted by half a pixel with half_pixel (the
 * default from opset 16; opset 10 has only output_half_pixel, which does
 * not shift and makes a region at least 1 x 1), each sample's position
 * ((iy + 0.5) * bin / grid from the bin's start), a sample more than one
 * pixel outside the image worth 0, a sample inside clamped to the last
 * row or column; the max mode takes, per sample, the largest of its four
 * weighted corners, as both references do. A batch index out of range
 * fails the run. The CUDA kernels of kernels/cuda/roi_align.c share
 * cpu_roi_align_read() for the attributes (kernels/cpu/roi_align.h).
 */
#include "kernels/cpu/roi_align.h"

#include <inttypes.h>

/* ---------------------------------------------------------------- attributes */

int cpu_roi_align_read(const struct op_node *node, struct cpu_roi_align *r)
{
	const char *mode, *ctm;
	int ret;

	memset(r, 0, sizeof(*r));
	if ((ret = op_attr_check(node, "mode", OP_ATTR_STRING)) < 0 ||
	    (ret = op_attr_check(node, "coordinate_transformation_mode", OP_ATTR_STRING)) < 0 ||
	    (ret = op_attr_check(node, "output_height", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "output_width", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "sampling_ratio", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "spatial_scale", OP_ATTR_FLOAT)) < 0)
		return ret;
	if (node->opset < 16 && op_attr_find(node, "coordinate_transformation_mode"))
		return cep__set_error(CEP_EMODEL, "RoiAlign: attribute "
				      "'coordinate_transformation_mode' does not exist at opset %d",
				      node->opset);
	mode = op_attr_string(node, "mode", "avg");
	if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
		return cep__set_error(CEP_EMODEL, "RoiAlign: mode is '%s', expected 'avg' or 'max'",
				      mode);
	ctm = op_attr_string(node, "coordinate_transformation_mode",
			     node->opset < 16 ? "output_half_pixel" : "half_pixel");
	if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
		return cep__set_error(CEP_EMODEL, "RoiAlign: coordinate_transformation_mode is '%s', "
				      "expected 'half_pixel' or 'output_half_pixel'", ctm);
	r->max = strcmp(mode, "max") == 0;
	r->half_pixel = strcmp(ctm, "half_pixel") == 0;
	r->out_h = op_attr_int(node, "output_height", 1);
	r->out_w = op_attr_int(node, "output_width", 1);
	r->sampling_ratio = op_attr_int(node, "sampling_ratio", 0);
	r->spatial_scale = op_attr_float(node, "spatial_scale", 1.0f);
	if (r->out_h < 1 || r->out_w < 1)
		return cep__set_error(CEP_EMODEL, "RoiAlign: output_height and output_width must "
				      "be at least 1, they are %" PRId64 " and %" PRId64, r->out_h,
				      r->out_w);
	if (r->sampling_ratio < 0)
		return cep__set_error(CEP_EMODEL, "RoiAlign: sampling_ratio is %" PRId64 ", it must "
				      "not be negative", r->sampling_ratio);
	return 0;
}

static int roi_align_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *rois = &x->in[1], *bi = &x->in[2];
	struct op_tensor *y = &x->out[0];
	struct cpu_roi_align r;
	int64_t n = OP_DIM_UNKNOWN;
	int ret;

	y->dtype = in->dtype;
	y->rank = 4;
	ret = cpu_roi_align_read(x->node, &r);
	if (ret < 0)
		return ret;
	ret = op_infer_same_dtype(x, 0, 1);
	if (ret < 0)
		return ret;
	if (bi->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "RoiAlign: batch_indices is %s, not int64",
				      cep_dtype_name(bi->dtype));
	if (in->rank >= 0 && in->rank != 4)
		return cep__set_error(CEP_ESHAPE, "RoiAlign: X must have rank 4 (N, C, H, W), it "
				      "has %d", in->rank);
	if (rois->rank >= 0 && (rois->rank != 2 || (op_dim_fixed(rois->dims[1]) &&
						     rois->dims[1] != 4)))
		return cep__set_error(CEP_ESHAPE, "RoiAlign: rois must be (num_rois, 4)");
	if (bi->rank >= 0 && bi->rank != 1)
		return cep__set_error(CEP_ESHAPE, "RoiAlign: batch_indices must be 1-D, not of rank "
				      "%d", bi->rank);
	if (rois->rank == 2)
		n = rois->dims[0];
	if (bi->rank == 1) {
		if (op_dim_fixed(n) && op_dim_fixed(bi->dims[0]) && n != bi->dims[0])
			return cep__set_error(CEP_ESHAPE, "RoiAlign: %" PRId64 " rois but %" PRId64
					      " batch indices", n, bi->dims[0]);
		if (!op_dim_fixed(n))
			n = bi->dims[0];
	}
	y->dims[0] = n;
	y->dims[1] = in->rank == 4 ? in->dims[1] : OP_DIM_UNKNOWN;
	y->dims[2] = r.out_h;
	y->dims[3] = r.out_w;
	return 0;
}

/* ------------------------------------------------------------------ kernel */

/* One bilinear sample of a plane: the four corners' offsets and weights,
 * or all weights 0 for a sample more than a pixel outside. */
struct roi_sample {
	int64_t pos[4];
	float w[4];
};

/* The sample at (y, x) of an h x w plane, as the reference places it. */
static void roi_sample_at(float y, float x, int64_t h, int64_t w, struct roi_sample *s)
{
	int64_t y0, x0, y1, x1;
	float ly, lx, hy, hx;

	memset(s, 0, sizeof(*s));
	if (y < -1.0f || y > (float)h || x < -1.0f || x > (float)w)
		return;
	if (y < 0.0f)
		y = 0.0f;
	if (x < 0.0f)
		x = 0.0f;
	y0 = (int64_t)y;
	x0 = (int64_t)x;
	if (y0 >= h - 1) {
		y1 = y0 = h - 1;
		y = (float)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= w - 1) {
		x1 = x0 = w - 1;
		x = (float)x0;
	} else {
		x1 = x0 + 1;
	}
	ly = y - (float)y0;
	lx = x - (float)x0;
	hy = 1.0f - ly;
	hx = 1.0f - lx;
	s->pos[0] = y0 * w + x0;
	s->pos[1] = y0 * w + x1;
	s->pos[2] = y1 * w + x0;
	s->pos[3] = y1 * w + x1;
	s->w[0] = hy * hx;
	s->w[1] = hy * lx;
	s->w[2] = ly * hx;
	s->w[3] = ly * lx;
}

/* Where one region's bins and samples lie. */
struct roi_geom {
	float start_h, start_w;  /* the region's corner in X's pixels */
	float bin_h, bin_w;      /* a bin's size */
	int64_t grid_h, grid_w;  /* samples per bin along each side */
	int64_t count;           /* samples averaged, at least 1 */
};

/* The geometry of region roi ([x1, y1, x2, y2]) under r. */
static void roi_geom_init(const struct cpu_roi_align *r, const float *roi, struct roi_geom *g)
{
	float off = r->half_pixel ? 0.5f : 0.0f;
	float x0 = roi[0] * r->spatial_scale - off, y0 = roi[1] * r->spatial_scale - off;
	float x1 = roi[2] * r->spatial_scale - off, y1 = roi[3] * r->spatial_scale - off;
	float rw = x1 - x0, rh = y1 - y0;

	if (!r->half_pixel) {
		rw = rw > 1.0f ? rw : 1.0f;
		rh = rh > 1.0f ? rh : 1.0f;
	}
	g->start_h = y0;
	g->start_w = x0;
	g->bin_h = rh / (float)r->out_h;
	g->bin_w = rw / (float)r->out_w;
	g->grid_h = r->sampling_ratio > 0 ? r->sampling_ratio : (int64_t)ceilf(rh / (float)r->out_h);
	g->grid_w = r->sampling_ratio > 0 ? r->sampling_ratio : (int64_t)ceilf(rw / (float)r->out_w);
	g->count = g->grid_h * g->grid_w > 1 ? g->grid_h * g->grid_w : 1;
}

/* A roi's four values as floats, widened from its type. */
static void roi_load(const struct op_tensor *rois, int64_t n, float *roi)
{
	int k;

	for (k = 0; k < 4; k++)
		roi[k] = cpu_load_f(rois->data, rois->dtype, n * 4 + k);
}

/* One bin (ph, pw) of plane src (h x w floats, widened) for region g. */
static float roi_bin(const struct cpu_roi_align *r, const struct roi_geom *g,
		     const float *src, int64_t h, int64_t w, int64_t ph, int64_t pw)
{
	float acc = 0.0f;
	bool any = false;
	int64_t iy, ix;
	int k;

	for (iy = 0; iy < g->grid_h; iy++) {
		float y = g->start_h + (float)ph * g->bin_h +
			  ((float)iy + 0.5f) * g->bin_h / (float)g->grid_h;

		for (ix = 0; ix < g->grid_w; ix++) {
			float x = g->start_w + (float)pw * g->bin_w +
				  ((float)ix + 0.5f) * g->bin_w / (float)g->grid_w;
			struct roi_sample s;
			float v;

			roi_sample_at(y, x, h, w, &s);
			if (!r->max) {
				acc += s.w[0] * src[s.pos[0]] + s.w[1] * src[s.pos[1]] +
				       s.w[2] * src[s.pos[2]] + s.w[3] * src[s.pos[3]];
				continue;
			}
			v = s.w[0] * src[s.pos[0]];
			for (k = 1; k < 4; k++) {
				float t = s.w[k] * src[s.pos[k]];

				v = t > v ? t : v;
			}
			acc = !any || v > acc ? v : acc;
			any = true;
		}
	}
	return r->max ? acc : acc / (float)g->count;
}

static int roi_align_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_roi_align *r = (struct cpu_roi_align *)c->params;
	const struct op_tensor *x = &c->in[0];

	_Static_assert(sizeof(*r) <= OP_PARAMS_BYTES, "params too large");
	*workspace = x->dtype == CEP_DTYPE_FLOAT32 ? 0
		     : (size_t)(x->dims[2] * x->dims[3]) * sizeof(float);
	return cpu_roi_align_read(c->node, r);
}

static int roi_align_run(struct op_call *c)
{
	const struct cpu_roi_align *r = (const struct cpu_roi_align *)c->params;
	const struct op_tensor *x = &c->in[0], *rois = &c->in[1], *yt = &c->out[0];
	const int64_t *bi = c->in[2].data;
	int64_t nb = x->dims[0], ch = x->dims[1], h = x->dims[2], w = x->dims[3];
	int64_t n_rois = yt->dims[0], n, ci, ph, pw, i, at = 0;
	struct roi_geom g;
	float roi[4];

	for (n = 0; n < n_rois; n++) {
		if (bi[n] < 0 || bi[n] >= nb)
			return cep__set_error(CEP_EINVAL, "RoiAlign: batch index %" PRId64 " of roi %"
					      PRId64 " is out of range for %" PRId64 " images", bi[n],
					      n, nb);
		roi_load(rois, n, roi);
		roi_geom_init(r, roi, &g);
		for (ci = 0; ci < ch; ci++) {
			int64_t base = (bi[n] * ch + ci) * h * w;
			const float *src = (const float *)x->data + base;

			if (x->dtype != CEP_DTYPE_FLOAT32) {
				float *wk = c->workspace;

				for (i = 0; i < h * w; i++)
					wk[i] = cpu_load_f(x->data, x->dtype, base + i);
				src = wk;
			}
			for (ph = 0; ph < r->out_h; ph++) {
				for (pw = 0; pw < r->out_w; pw++)
					cpu_store_f(yt->data, yt->dtype, at++,
						    roi_bin(r, &g, src, h, w, ph, pw));
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define ROI_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_schema schemas[] = {
	/* 16 added coordinate_transformation_mode, half_pixel by default:
	 * opset 10's regions are output_half_pixel ones. */
	{ "", "RoiAlign", 10, 15, 3, 3, 1, 1, 0, 0, roi_align_infer },
	{ "", "RoiAlign", 16, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, roi_align_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "RoiAlign", 10, 21, BACKEND_HOST, ROI_F16, roi_align_prepare, roi_align_run },
	{ "", "RoiAlign", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, roi_align_prepare,
	  roi_align_run },
};

const struct op_family op_family_cpu_roi_align = {
	"cpu_roi_align", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
