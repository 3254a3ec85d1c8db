/*
 * resize.c — Resize (opsets 10, 11, 13, 18 and 19): nearest (every
 * nearest_mode), linear and cubic (cubic_coeff_a, exclude_outside)
 * interpolation over any dimensions, every coordinate_transformation_mode
 * of its opset, scales or sizes, and from opset 18 antialias, axes and
 * keep_aspect_ratio_policy.
 *
 * Opset 10 had neither coordinate modes nor nearest modes: it is read as
 * onnxruntime reads it (asymmetric coordinates; nearest rounds up when
 * shrinking and down otherwise), and so is Upsample (opsets 7 to 9, scales
 * an attribute before 9), which it replaced. Upsample-1 scaled the two
 * last dims of an (N, C, H, W) input by height_scale and width_scale, its
 * "bilinear" being opset 7's "linear" (ONNX's converter from 6 to 7 maps
 * the one to the other by scales [1, 1, height_scale, width_scale]). From 11 on, the numbers
 * follow the ONNX reference implementation, which the conformance data
 * come from: where a formula needs the output length it is the unrounded
 * in * scale, and pytorch_half_pixel maps a length-1 output to 0 as the
 * specification says.
 *
 * Nearest is a gather of elements, exact for every type. Linear and cubic
 * are separable: one pass per resized dimension, each output position a
 * weighted sum of a few input positions (edge ones repeated), computed in
 * float64 like the reference and rounded half to even into integer types.
 * The attributes and the target sizes are read by functions of
 * kernels/cpu/resize.h, which the CUDA kernels of kernels/cuda/resize.c
 * share.
 */
#include "kernels/cpu/resize.h"

#include <inttypes.h>

/* ---------------------------------------------------------------- attributes */

/* Looks s up in names (n of them); -1 when absent. */
static int resize_lookup(const char *s, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0)
			return i;
	}
	return -1;
}

static int resize_string(const struct op_node *node, const char *name, const char *dflt,
			 const char *const *names, int n, int *out)
{
	const char *s;
	int ret;

	ret = op_attr_check(node, name, OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, name, dflt);
	*out = resize_lookup(s, names, n);
	if (*out < 0)
		return cep__set_error(CEP_EMODEL, "%s: %s '%s' is not known at opset %d",
				      node->op_type, name, s, node->opset);
	return 0;
}

/* Refuses an attribute that does not exist yet at the node's opset. */
static int resize_since(const struct op_node *node, const char *name, int since)
{
	if (node->opset >= since || !op_attr_find(node, name))
		return 0;
	return cep__set_error(CEP_EMODEL, "%s: attribute '%s' needs opset %d (the model has %d)",
			      node->op_type, name, since, node->opset);
}

bool cpu_resize_legacy(const struct op_node *node)
{
	return node->opset < 11 || strcmp(node->op_type, "Upsample") == 0;
}

int cpu_resize_attrs_get(const struct op_node *node, int rank, struct cpu_resize_attrs *a)
{
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	/* In enum cpu_resize_coord's order; the last is valid at 11 and 12 only,
	 * half_pixel_symmetric from 19. */
	static const char *const coords[] = {
		"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
		"asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize",
	};
	static const char *const rounds[] = {
		"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
	};
	static const char *const policies[] = { "stretch", "not_larger", "not_smaller" };
	bool seen[CEP_MAX_RANK] = { false };
	const int64_t *axes;
	int v, i, ret;

	memset(a, 0, sizeof(*a));
	if (strcmp(node->op_type, "Upsample") == 0 && node->opset < 7) {
		static const char *const modes1[] = { "nearest", "bilinear" };

		ret = resize_string(node, "mode", "nearest", modes1, 2, &v);
	} else {
		ret = resize_string(node, "mode", "nearest", modes, cpu_resize_legacy(node) ? 2 : 3,
				    &v);
	}
	if (ret < 0)
		return ret;
	a->mode = (enum cpu_resize_mode)v;
	a->coord = CPU_RESIZE_ASYMMETRIC;
	a->round = CPU_RESIZE_ROUND_OPSET10;
	a->cubic_a = -0.75;
	a->n_axes = rank;
	for (i = 0; i < rank; i++)
		a->axes[i] = i;
	if (cpu_resize_legacy(node))
		return 0;
	ret = resize_string(node, "coordinate_transformation_mode", "half_pixel", coords, 7, &v);
	if (ret < 0)
		return ret;
	a->coord = (enum cpu_resize_coord)v;
	if ((a->coord == CPU_RESIZE_TF_HALF_PIXEL_FOR_NN && node->opset >= 13) ||
	    (a->coord == CPU_RESIZE_HALF_PIXEL_SYMMETRIC && node->opset < 19))
		return cep__set_error(CEP_EMODEL, "%s: coordinate_transformation_mode '%s' "
				      "does not exist at opset %d", node->op_type, coords[v],
				      node->opset);
	ret = resize_string(node, "nearest_mode", "round_prefer_floor", rounds, 4, &v);
	if (ret < 0)
		return ret;
	a->round = (enum cpu_resize_round)v;
	if ((ret = op_attr_check(node, "cubic_coeff_a", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "extrapolation_value", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "exclude_outside", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "antialias", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "axes", OP_ATTR_INTS)) < 0 ||
	    (ret = resize_since(node, "antialias", 18)) < 0 ||
	    (ret = resize_since(node, "axes", 18)) < 0 ||
	    (ret = resize_since(node, "keep_aspect_ratio_policy", 18)) < 0)
		return ret;
	a->cubic_a = op_attr_float(node, "cubic_coeff_a", -0.75f);
	a->extrapolation = op_attr_float(node, "extrapolation_value", 0.0f);
	a->exclude_outside = op_attr_int(node, "exclude_outside", 0) != 0;
	a->antialias = op_attr_int(node, "antialias", 0) != 0;
	ret = resize_string(node, "keep_aspect_ratio_policy", "stretch", policies, 3, &v);
	if (ret < 0)
		return ret;
	a->policy = (enum cpu_resize_policy)v;
	axes = op_attr_ints(node, "axes", &v);
	if (!axes || rank < 0)
		return 0;
	if (v > rank)
		return cep__set_error(CEP_EMODEL, "%s: %d axes for rank %d", node->op_type, v, rank);
	a->n_axes = v;
	for (i = 0; i < v; i++) {
		ret = op_axis_normalize(node, axes[i], rank, &a->axes[i]);
		if (ret < 0)
			return ret;
		if (seen[a->axes[i]])
			return cep__set_error(CEP_EMODEL, "%s: axis %" PRId64 " appears twice",
					      node->op_type, axes[i]);
		seen[a->axes[i]] = true;
	}
	return 0;
}

/* ------------------------------------------------------------------ targets */

const struct op_tensor *cpu_resize_input(const struct op_tensor *in, int n_in, int k)
{
	const struct op_tensor *t = k < n_in ? &in[k] : NULL;

	if (!t || !op_tensor_present(t))
		return NULL;
	if (t->rank == 1 && t->dims[0] == 0)
		return NULL;
	return t;
}

/* Checks that t is a 1-D tensor of count values. */
static int resize_check_len(const struct op_node *node, const struct op_tensor *t,
			    const char *what, int64_t count)
{
	if (t->rank >= 0 && t->rank != 1)
		return cep__set_error(CEP_ESHAPE, "%s: %s must be 1-D, it has rank %d",
				      node->op_type, what, t->rank);
	if (t->rank == 1 && op_dim_fixed(t->dims[0]) && t->dims[0] != count)
		return cep__set_error(CEP_ESHAPE, "%s: %s has %" PRId64 " values, expected %" PRId64,
				      node->op_type, what, t->dims[0], count);
	return 0;
}

int cpu_resize_target_get(const struct op_node *node, const struct cpu_resize_attrs *a,
			  const struct op_tensor *in, int n_in, struct cpu_resize_target *t)
{
	const struct op_tensor *x = &in[0];
	bool legacy = cpu_resize_legacy(node);
	const struct op_tensor *scales = cpu_resize_input(in, n_in, legacy ? 1 : 2);
	const struct op_tensor *sizes = legacy ? NULL : cpu_resize_input(in, n_in, 3);
	bool upsample = strcmp(node->op_type, "Upsample") == 0;
	struct op_tensor attr_scales;
	float t1_scales[4];
	double pick = 0.0;
	bool picked = false, pick_known = true;
	int i, ret;

	for (i = 0; i < x->rank; i++) {
		t->scale[i] = 1.0;
		t->out[i] = x->dims[i];
		t->resized[i] = false;
	}
	for (i = 0; i < a->n_axes; i++)
		t->resized[a->axes[i]] = true;
	if (upsample && node->opset < 7) {
		const struct op_attr *h = op_attr_find(node, "height_scale");
		const struct op_attr *w = op_attr_find(node, "width_scale");

		if (!h || h->type != OP_ATTR_FLOAT || !w || w->type != OP_ATTR_FLOAT)
			return cep__set_error(CEP_EMODEL, "Upsample (opset %d): attributes "
					      "'height_scale' and 'width_scale' (floats) are required",
					      node->opset);
		if (x->rank != 4)
			return cep__set_error(CEP_ESHAPE, "Upsample (opset %d): the input must be "
					      "(N, C, H, W), not of rank %d", node->opset, x->rank);
		t1_scales[0] = t1_scales[1] = 1.0f;
		t1_scales[2] = h->f;
		t1_scales[3] = w->f;
		attr_scales = (struct op_tensor){ .data = t1_scales, .dtype = CEP_DTYPE_FLOAT32,
						  .rank = 1, .dims = { 4 } };
		scales = &attr_scales;
	} else if (upsample && node->opset < 9) {
		const struct op_attr *sa = op_attr_find(node, "scales");

		if (!sa || sa->type != OP_ATTR_FLOATS)
			return cep__set_error(CEP_EMODEL, "Upsample: attribute 'scales' (floats) "
					      "is required");
		attr_scales = (struct op_tensor){ .data = (void *)sa->floats,
						  .dtype = CEP_DTYPE_FLOAT32, .rank = 1,
						  .dims = { sa->n } };
		scales = &attr_scales;
	}
	if (scales && sizes)
		return cep__set_error(CEP_EMODEL, "%s: scales and sizes are both given",
				      node->op_type);
	if (!scales && !sizes)
		return cep__set_error(CEP_EMODEL, "%s: one of scales and sizes is required",
				      node->op_type);
	if (scales && scales->dtype != CEP_DTYPE_FLOAT32 && scales->dtype != CEP_DTYPE_FLOAT16)
		return cep__set_error(CEP_EDTYPE, "%s: scales are %s, not float32 or float16",
				      node->op_type, cep_dtype_name(scales->dtype));
	if (sizes && sizes->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: sizes are %s, not int64", node->op_type,
				      cep_dtype_name(sizes->dtype));
	ret = resize_check_len(node, scales ? scales : sizes, scales ? "scales" : "sizes",
			       a->n_axes);
	if (ret < 0)
		return ret;
	if (!(scales ? scales : sizes)->data)
		return 1;
	if (scales && a->policy != CPU_RESIZE_STRETCH)
		return cep__set_error(CEP_EMODEL, "%s: keep_aspect_ratio_policy applies to "
				      "sizes, not scales", node->op_type);
	for (i = 0; i < a->n_axes; i++) {
		int d = a->axes[i];
		int64_t n = x->dims[d], v;
		double s;

		if (scales) {
			s = cpu_load_f(scales->data, scales->dtype, i);
			if (!(s > 0.0) || !isfinite(s) || (upsample && s < 1.0))
				return cep__set_error(CEP_EMODEL, "%s: scale %d is %g, must be %s",
						      node->op_type, i, s, upsample ? ">= 1" : "> 0");
			t->scale[d] = s;
			if (op_dim_fixed(n))
				t->out[d] = (int64_t)fmin(floor((double)n * s), (double)OP_MAX_NUMEL + 1);
			else if (s != 1.0)
				t->out[d] = OP_DIM_UNKNOWN;
			continue;
		}
		v = ((const int64_t *)sizes->data)[i];
		if (v < 0 || v > OP_MAX_NUMEL)
			return cep__set_error(CEP_EMODEL, "%s: size %d is %" PRId64, node->op_type, i, v);
		if (n == 0 && v != 0)
			return cep__set_error(CEP_EMODEL, "%s: dimension %d is empty and cannot "
					      "grow to %" PRId64, node->op_type, d, v);
		t->out[d] = v;
		t->scale[d] = op_dim_fixed(n) && n > 0 ? (double)v / (double)n : 1.0;
		if (!op_dim_fixed(n)) {
			pick_known = false;
			continue;
		}
		s = t->scale[d];
		if (n > 0 && (!picked ||
			      (a->policy == CPU_RESIZE_NOT_LARGER ? s < pick : s > pick))) {
			pick = s;
			picked = true;
		}
	}
	if (sizes && a->policy != CPU_RESIZE_STRETCH) {
		/* One scale for every axis, the one that keeps the aspect
		 * ratio; sizes round half up from it. */
		for (i = 0; i < a->n_axes; i++) {
			int d = a->axes[i];

			if (!pick_known) {
				t->out[d] = OP_DIM_UNKNOWN;
			} else if (x->dims[d] > 0) {
				t->scale[d] = pick;
				t->out[d] = (int64_t)fmin(pick * (double)x->dims[d] + 0.5,
							  (double)OP_MAX_NUMEL + 1);
			}
		}
	}
	for (i = 0; i < x->rank; i++) {
		if (t->out[i] > OP_MAX_NUMEL)
			return cep__set_error(CEP_ELIMIT, "%s: dimension %d would grow beyond 2^40",
					      node->op_type, i);
	}
	return 0;
}

/* ---------------------------------------------------------------- inference */

static int resize_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0];
	struct op_tensor *y = &x->out[0];
	struct cpu_resize_target t;
	struct cpu_resize_attrs a;
	int i, ret;

	y->dtype = xt->dtype;
	y->rank = xt->rank;
	ret = cpu_resize_attrs_get(x->node, xt->rank, &a);
	if (ret < 0)
		return ret;
	if (a.mode != CPU_RESIZE_NEAREST && xt->dtype == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: mode %s does not interpolate bool",
				      x->node->op_type, a.mode == CPU_RESIZE_LINEAR ? "linear" : "cubic");
	if (!cpu_resize_legacy(x->node) && x->n_in > 1 && op_tensor_present(&x->in[1]) &&
	    !cpu_is_float(x->in[1].dtype))
		return cep__set_error(CEP_EDTYPE, "%s: roi is %s, not a float type",
				      x->node->op_type, cep_dtype_name(x->in[1].dtype));
	if (a.coord == CPU_RESIZE_TF_CROP_AND_RESIZE && !cpu_resize_input(x->in, x->n_in, 1))
		return cep__set_error(CEP_EMODEL, "%s: tf_crop_and_resize needs roi", x->node->op_type);
	if (xt->rank < 0)
		return 0;
	ret = cpu_resize_target_get(x->node, &a, x->in, x->n_in, &t);
	if (ret < 0)
		return ret;
	for (i = 0; i < xt->rank; i++)
		y->dims[i] = ret == 1 && t.resized[i] ? OP_DIM_UNKNOWN : t.out[i];
	return 0;
}

/* ------------------------------------------------------------- coordinates */

/* The input coordinate output position x maps to along a dimension of n
 * inputs and out outputs at the given scale; roi_s and roi_e bound the
 * crop of tf_crop_and_resize. */
static double resize_coord(const struct cpu_resize_attrs *a, int64_t x, double scale, int64_t n,
			   int64_t out, double roi_s, double roi_e)
{
	double xr = (double)x, out_w = scale * (double)n;

	switch (a->coord) {
	case CPU_RESIZE_HALF_PIXEL:
		return (xr + 0.5) / scale - 0.5;
	case CPU_RESIZE_HALF_PIXEL_SYMMETRIC: {
		double adjust = (double)out / out_w;
		double offset = (double)n / 2.0 * (1.0 - adjust);

		return offset + (xr + 0.5) / scale - 0.5;
	}
	case CPU_RESIZE_PYTORCH_HALF_PIXEL:
		return out > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
	case CPU_RESIZE_ALIGN_CORNERS:
		return out == 1 ? 0.0 : xr * (double)(n - 1) / (out_w - 1.0);
	case CPU_RESIZE_ASYMMETRIC:
		return xr / scale;
	case CPU_RESIZE_TF_HALF_PIXEL_FOR_NN:
		return (xr + 0.5) / scale;
	case CPU_RESIZE_TF_CROP_AND_RESIZE:
		if (out == 1)
			return (roi_s + roi_e) / 2.0 * (double)(n - 1);
		return xr * (roi_e - roi_s) * (double)(n - 1) / (out_w - 1.0) +
		       roi_s * (double)(n - 1);
	}
	return 0.0;
}

/* Coordinates far outside the input all sample its edge (or nothing, with
 * exclude_outside): clamping them, and mapping NaN (from a NaN roi) to 0,
 * keeps the conversions to integers below defined. */
static double resize_coord_bound(double co, int64_t n, int64_t taps)
{
	double lim = (double)(n + taps + 2);

	if (co != co)
		return 0.0;
	return co < -lim ? -lim : co > lim ? lim : co;
}

/* The input position nearest to coordinate c under the rounding rule. */
static int64_t resize_round(enum cpu_resize_round r, double c, double scale)
{
	double f = floor(c), frac = c - f;

	switch (r) {
	case CPU_RESIZE_ROUND_PREFER_FLOOR: return (int64_t)(frac <= 0.5 ? f : f + 1.0);
	case CPU_RESIZE_ROUND_PREFER_CEIL: return (int64_t)(frac < 0.5 ? f : f + 1.0);
	case CPU_RESIZE_FLOOR: return (int64_t)f;
	case CPU_RESIZE_CEIL: return (int64_t)ceil(c);
	case CPU_RESIZE_ROUND_OPSET10: return (int64_t)(scale < 1.0 ? ceil(c) : f);
	}
	return 0;
}

static int64_t resize_clamp(int64_t i, int64_t n)
{
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The interpolation kernel at distance x (in input positions, scaled). */
static double resize_weight(const struct cpu_resize_attrs *a, double x)
{
	double A = a->cubic_a;

	x = fabs(x);
	if (a->mode == CPU_RESIZE_LINEAR)
		return x < 1.0 ? 1.0 - x : 0.0;
	if (x <= 1.0)
		return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
	if (x < 2.0)
		return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
	return 0.0;
}

/* Half the width of the kernel in input positions: 1 linear, 2 cubic. */
static int resize_radius(const struct cpu_resize_attrs *a)
{
	return a->mode == CPU_RESIZE_CUBIC ? 2 : 1;
}

/* The taps of a dimension resized at scale: 2 * radius, more when an
 * antialiased kernel is stretched to cover a shrinking. */
static int64_t resize_taps(const struct cpu_resize_attrs *a, double scale)
{
	double s = a->antialias && scale < 1.0 ? scale : 1.0;

	return -2 * (int64_t)floor(-(double)resize_radius(a) / s);
}

int64_t cpu_resize_taps_bound(const struct cpu_resize_attrs *a, int64_t n, int64_t out)
{
	int64_t r = resize_radius(a), q;

	if (!a->antialias || out <= 0)
		return 2 * r;
	q = (2 * r * n + out - 1) / out;
	return 2 * (q > r ? q : r) + 2;
}

/* ------------------------------------------------------------------ kernel */

/* Whether dimension d of the run needs no work: same size, unit scale,
 * and no crop. */
static bool resize_identity(const struct cpu_resize_attrs *a, const struct cpu_resize_target *t,
			    const double *roi, int rank, int64_t n, int d)
{
	if (t->out[d] != n || t->scale[d] != 1.0)
		return false;
	return a->coord != CPU_RESIZE_TF_CROP_AND_RESIZE || (roi[d] == 0.0 && roi[rank + d] == 1.0);
}

/* Workspace of one dimension's weights: out positions of `taps` indices
 * and weights, and an extrapolation flag each. */
static size_t resize_table_bytes(int64_t out, int64_t taps)
{
	return (size_t)(out * taps) * (sizeof(int64_t) + sizeof(double)) + (size_t)out;
}

static int resize_prepare(struct op_call *c, size_t *workspace)
{
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	struct cpu_resize_attrs a;
	int64_t cur = 1, table = 0, d;
	int ret;

	ret = cpu_resize_attrs_get(c->node, x->rank, &a);
	if (ret < 0)
		return ret;
	if (a.mode == CPU_RESIZE_NEAREST) {
		for (d = 0; d < x->rank; d++)
			table += y->dims[d];
		*workspace = (size_t)table * sizeof(int64_t);
		return 0;
	}
	/* Two float64 buffers, each as large as the largest of the input,
	 * the output and every state in between (dimensions resized in
	 * order), and the largest table. */
	for (d = 0; d < x->rank; d++) {
		int64_t m = x->dims[d] > y->dims[d] ? x->dims[d] : y->dims[d];
		int64_t taps = cpu_resize_taps_bound(&a, x->dims[d], y->dims[d]);
		int64_t sz = (int64_t)resize_table_bytes(y->dims[d], taps);

		if (m > 0 && cur > OP_MAX_NUMEL / m)
			return cep__set_error(CEP_ELIMIT, "%s: the intermediate tensors would have "
					      "more than 2^40 elements", c->node->op_type);
		cur *= m;
		if (sz > table)
			table = sz;
	}
	*workspace = 2 * (size_t)cur * sizeof(double) + (size_t)table;
	return 0;
}

/* Reads the roi of a tf_crop_and_resize (one start and one end per
 * dimension, [0, 1] where not resized) into roi (2 * rank values). */
static int resize_roi(const struct op_call *c, const struct cpu_resize_attrs *a, double *roi)
{
	const struct op_tensor *t = cpu_resize_input(c->in, c->n_in, 1);
	int rank = c->in[0].rank, i, ret;

	for (i = 0; i < rank; i++) {
		roi[i] = 0.0;
		roi[rank + i] = 1.0;
	}
	if (a->coord != CPU_RESIZE_TF_CROP_AND_RESIZE)
		return 0;
	if (!t || !t->data)
		return cep__set_error(CEP_EMODEL, "%s: tf_crop_and_resize needs roi", c->node->op_type);
	ret = resize_check_len(c->node, t, "roi", 2 * (int64_t)a->n_axes);
	if (ret < 0)
		return ret;
	for (i = 0; i < a->n_axes; i++) {
		roi[a->axes[i]] = cpu_load_d(t->data, t->dtype, i);
		roi[rank + a->axes[i]] = cpu_load_d(t->data, t->dtype, a->n_axes + i);
	}
	return 0;
}

void cpu_resize_store(const struct op_tensor *y, int64_t i, double v)
{
	double lo, hi;

	switch (y->dtype) {
	case CEP_DTYPE_INT8: lo = -128.0; hi = 127.0; break;
	case CEP_DTYPE_UINT8: lo = 0.0; hi = 255.0; break;
	case CEP_DTYPE_INT16: lo = -32768.0; hi = 32767.0; break;
	case CEP_DTYPE_UINT16: lo = 0.0; hi = 65535.0; break;
	case CEP_DTYPE_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
	case CEP_DTYPE_UINT32: lo = 0.0; hi = 4294967295.0; break;
	case CEP_DTYPE_INT64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
	case CEP_DTYPE_UINT64: lo = 0.0; hi = 18446744073709551615.0; break;
	case CEP_DTYPE_FLOAT64:
		cpu_store_d(y->data, y->dtype, i, v);
		return;
	default:
		cpu_store_f(y->data, y->dtype, i, (float)v);
		return;
	}
	v = nearbyint(v);
	cpu_store_d(y->data, y->dtype, i, v < lo ? lo : v > hi ? hi : v);
}

/* Nearest: a gather through one index table per dimension, -1 standing
 * for the extrapolation value. */
static void resize_nearest(const struct op_call *c, const struct cpu_resize_attrs *a,
			   const struct cpu_resize_target *t, const double *roi)
{
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	int rank = x->rank, d;
	size_t es = cep_dtype_size(x->dtype);
	int64_t *tab[CEP_MAX_RANK], *at = c->workspace;
	int64_t stride[CEP_MAX_RANK], idx[CEP_MAX_RANK] = { 0 };
	int64_t rows, row, inner, o;
	unsigned char fill[8] = { 0 };
	const unsigned char *src = x->data;
	unsigned char *dst = y->data;

	struct op_tensor fill_t = { .data = fill, .dtype = y->dtype };

	cpu_resize_store(&fill_t, 0, a->extrapolation);
	for (d = rank - 1; d >= 0; d--) {
		int64_t n = x->dims[d], k;
		bool same = resize_identity(a, t, roi, rank, n, d);

		stride[d] = d == rank - 1 ? 1 : stride[d + 1] * x->dims[d + 1];
		tab[d] = at;
		at += t->out[d];
		for (k = 0; k < t->out[d]; k++) {
			double co;

			if (same) {
				tab[d][k] = k;
				continue;
			}
			co = resize_coord(a, k, t->scale[d], n, t->out[d], roi[d], roi[rank + d]);
			if (a->coord == CPU_RESIZE_TF_CROP_AND_RESIZE &&
			    (co < 0.0 || co > (double)(n - 1)))
				tab[d][k] = -1;
			else
				tab[d][k] = resize_clamp(resize_round(a->round,
								      resize_coord_bound(co, n, 1),
								      t->scale[d]), n);
		}
	}
	if (cpu_numel(y) == 0)
		return;
	if (rank == 0) {
		memcpy(dst, src, es);
		return;
	}
	inner = t->out[rank - 1];
	rows = cpu_numel(y) / inner;
	for (row = 0; row < rows; row++) {
		unsigned char *out = dst + (size_t)(row * inner) * es;
		int64_t base = 0;

		for (d = 0; d < rank - 1 && base >= 0; d++)
			base = tab[d][idx[d]] < 0 ? -1 : base + tab[d][idx[d]] * stride[d];
		for (o = 0; o < inner; o++) {
			int64_t k = tab[rank - 1][o];

			memcpy(out + (size_t)o * es,
			       base < 0 || k < 0 ? fill : src + (size_t)(base + k) * es, es);
		}
		for (d = rank - 2; d >= 0; d--) {
			if (++idx[d] < t->out[d])
				break;
			idx[d] = 0;
		}
	}
}

/* The weights of dimension d (n inputs to t->out[d] outputs, taps each)
 * into ti (indices, clamped), tw and tx (extrapolated positions). */
static void resize_table(const struct cpu_resize_attrs *a, const struct cpu_resize_target *t,
			 const double *roi, int rank, int d, int64_t n, int64_t taps,
			 int64_t *ti, double *tw, unsigned char *tx)
{
	double scale = t->scale[d];
	double s = a->antialias && scale < 1.0 ? scale : 1.0;
	int64_t k0 = 1 - taps / 2, o, j;

	for (o = 0; o < t->out[d]; o++) {
		double co = resize_coord(a, o, scale, n, t->out[d], roi[d], roi[rank + d]);
		double base, ratio, sum = 0.0;
		int64_t *ix = ti + o * taps;
		double *w = tw + o * taps;

		tx[o] = a->coord == CPU_RESIZE_TF_CROP_AND_RESIZE &&
			(co < 0.0 || co > (double)(n - 1));
		/* The tap at or left of the coordinate, strictly left when it
		 * is a whole number, and how far the coordinate is past it. */
		co = resize_coord_bound(co, n, taps);
		base = ceil(co) - 1.0;
		ratio = co - base;
		for (j = 0; j < taps; j++) {
			int64_t k = k0 + j, pos = (int64_t)base + k;

			w[j] = resize_weight(a, s * ((double)k - ratio));
			if (a->exclude_outside && (pos < 0 || pos >= n))
				w[j] = 0.0;
			sum += w[j];
			ix[j] = resize_clamp(pos, n);
		}
		/* Antialiased kernels are normalized; so are those that lost
		 * their outside taps. */
		if ((a->antialias || a->exclude_outside) && sum != 0.0) {
			for (j = 0; j < taps; j++)
				w[j] /= sum;
		}
	}
}

/* One pass: dimension of n inputs (outer blocks before it, inner
 * elements after it) resized to out positions through the table. */
static void resize_pass(const double *src, double *dst, int64_t outer, int64_t n,
			int64_t out, int64_t inner, int64_t taps, const int64_t *ti,
			const double *tw, const unsigned char *tx, double fill)
{
	int64_t b, o, j, i;

	for (b = 0; b < outer; b++) {
		const double *sb = src + b * n * inner;

		for (o = 0; o < out; o++) {
			double *dp = dst + (b * out + o) * inner;

			if (tx[o]) {
				for (i = 0; i < inner; i++)
					dp[i] = fill;
				continue;
			}
			for (i = 0; i < inner; i++)
				dp[i] = 0.0;
			for (j = 0; j < taps; j++) {
				const double *sp = sb + ti[o * taps + j] * inner;
				double w = tw[o * taps + j];

				if (w == 0.0)
					continue;
				for (i = 0; i < inner; i++)
					dp[i] += w * sp[i];
			}
		}
	}
}

static int resize_interpolate(const struct op_call *c, const struct cpu_resize_attrs *a,
			      const struct cpu_resize_target *t, const double *roi)
{
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	int rank = x->rank, d;
	int64_t cur[CEP_MAX_RANK], big = 1, n_in = cpu_numel(x), n_out = cpu_numel(y), i;
	double *buf[2];
	unsigned char *table;
	int which = 0;

	for (d = 0; d < rank; d++) {
		cur[d] = x->dims[d];
		big *= x->dims[d] > t->out[d] ? x->dims[d] : t->out[d];
	}
	buf[0] = c->workspace;
	buf[1] = buf[0] + big;
	table = (unsigned char *)(buf[1] + big);
	if (n_out == 0)
		return 0;
	for (i = 0; i < n_in; i++) {
		/* Integers exact to 2^53, beyond float32's 24 bits. */
		if (x->dtype == CEP_DTYPE_FLOAT32)
			buf[0][i] = ((const float *)x->data)[i];
		else
			buf[0][i] = cpu_load_d(x->data, x->dtype, i);
	}
	for (d = 0; d < rank; d++) {
		int64_t n = x->dims[d], taps = resize_taps(a, t->scale[d]);
		int64_t outer = 1, inner = 1, k;
		int64_t *ti;
		double *tw;
		unsigned char *tx;

		if (resize_identity(a, t, roi, rank, n, d))
			continue;
		if (taps > cpu_resize_taps_bound(a, n, t->out[d]))
			return cep__set_error(CEP_EINTERNAL, "%s: dimension %d needs %" PRId64
					      " taps, more than prepared for", c->node->op_type, d, taps);
		for (k = 0; k < d; k++)
			outer *= cur[k];
		for (k = d + 1; k < rank; k++)
			inner *= cur[k];
		tw = (double *)table;
		ti = (int64_t *)(tw + t->out[d] * taps);
		tx = (unsigned char *)(ti + t->out[d] * taps);
		resize_table(a, t, roi, rank, d, n, taps, ti, tw, tx);
		resize_pass(buf[which], buf[!which], outer, n, t->out[d], inner, taps, ti, tw, tx,
			    a->extrapolation);
		which = !which;
		cur[d] = t->out[d];
	}
	for (i = 0; i < n_out; i++)
		cpu_resize_store(y, i, buf[which][i]);
	return 0;
}

static int resize_run(struct op_call *c)
{
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	double roi[2 * CEP_MAX_RANK];
	struct cpu_resize_target t;
	struct cpu_resize_attrs a;
	int d, ret;

	ret = cpu_resize_attrs_get(c->node, x->rank, &a);
	if (ret < 0)
		return ret;
	ret = cpu_resize_target_get(c->node, &a, c->in, c->n_in, &t);
	if (ret < 0)
		return ret;
	if (ret == 1)
		return cep__set_error(CEP_EINVAL, "%s: the scales or sizes are not known at run time",
				      c->node->op_type);
	/* The plan was sized for these shapes; a kernel never trusts a
	 * shape it did not see. */
	for (d = 0; d < x->rank; d++) {
		if (t.out[d] != y->dims[d])
			return cep__set_error(CEP_ESHAPE, "%s: dimension %d resizes to %" PRId64
					      " but the output has %" PRId64, c->node->op_type, d,
					      t.out[d], y->dims[d]);
	}
	ret = resize_roi(c, &a, roi);
	if (ret < 0)
		return ret;
	if (a.mode == CPU_RESIZE_NEAREST) {
		resize_nearest(c, &a, &t, roi);
		return 0;
	}
	return resize_interpolate(c, &a, &t, roi);
}

/* ------------------------------------------------------------------- table */

#define RESIZE_NO_BF16 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))
/* Upsample-1's own set: bool, int32, int64 and the float types. */
#define RESIZE_DTS_UPSAMPLE1 (OP_DT(CEP_DTYPE_BOOL) | OP_DT(CEP_DTYPE_INT32) | \
			      OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_FLOAT32) | \
			      OP_DT(CEP_DTYPE_FLOAT16) | OP_DT(CEP_DTYPE_FLOAT64))

static const struct op_schema schemas[] = {
	/* 11 brought roi, sizes and the coordinate modes; 13 made scales
	 * optional and dropped tf_half_pixel_for_nn; 18 brought antialias,
	 * axes and keep_aspect_ratio_policy; 19 half_pixel_symmetric. */
	{ "", "Resize", 10, 10, 2, 2, 1, 1, 0, 0, resize_infer },
	{ "", "Resize", 11, 12, 3, 4, 1, 1, 0, 0, resize_infer },
	{ "", "Resize", 13, 17, 1, 4, 1, 1, 0, 0, resize_infer },
	{ "", "Resize", 18, 18, 1, 4, 1, 1, 0, 0, resize_infer },
	{ "", "Resize", 19, OP_OPSET_MAX, 1, 4, 1, 1, 0, 0, resize_infer },
	/* Resize 10's predecessor: scales an attribute, an input from 9; at 1
	 * height_scale and width_scale. */
	{ "", "Upsample", 1, 6, 1, 1, 1, 1, 0, 0, resize_infer },
	{ "", "Upsample", 7, 8, 1, 1, 1, 1, 0, 0, resize_infer },
	{ "", "Upsample", 9, 9, 2, 2, 1, 1, 0, 0, resize_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Resize", 10, 12, BACKEND_HOST, RESIZE_NO_BF16, resize_prepare, resize_run },
	{ "", "Resize", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, resize_prepare, resize_run },
	{ "", "Upsample", 1, 6, BACKEND_HOST, RESIZE_DTS_UPSAMPLE1, resize_prepare, resize_run },
	{ "", "Upsample", 7, 9, BACKEND_HOST, RESIZE_NO_BF16, resize_prepare, resize_run },
};

const struct op_family op_family_cpu_resize = {
	"cpu_resize", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
