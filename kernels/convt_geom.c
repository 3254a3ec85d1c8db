/*
 * convt_geom.c — the transposed sliding window of ConvTranspose and Col2Im
 * (kernels/convt_geom.h), shared by the host and CUDA kernels.
 */
#include "kernels/convt_geom.h"

#include <inttypes.h>
#include <string.h>

/* Sizes, strides and pads come from a model: bounded so that the window
 * arithmetic stays far from int64 overflow. */
#define CONVT_ATTR_MAX INT64_C(0x7fffffff)

/* Floor division by a positive d. */
static int64_t convt_floor_div(int64_t a, int64_t d)
{
	return a >= 0 ? a / d : -((-a + d - 1) / d);
}

/* Reads INTS attribute name into v: count values (or, when alt > 0, alt
 * values of which the last count are kept), each in [lo, CONVT_ATTR_MAX];
 * absent, v is filled with dflt and *given (when not NULL) is false. */
static int convt_ints(const struct op_node *node, const char *name, int count, int alt,
		      int64_t lo, int64_t dflt, int64_t *v, bool *given)
{
	const int64_t *a;
	int n, i, skip, ret;

	ret = op_attr_check(node, name, OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	a = op_attr_ints(node, name, &n);
	if (given)
		*given = a != NULL;
	if (!a) {
		for (i = 0; i < count; i++)
			v[i] = dflt;
		return 0;
	}
	if (n != count && (alt <= 0 || n != alt))
		return cep__set_error(CEP_EMODEL, "%s: '%s' has %d values, expected %d",
				      node->op_type, name, n, count);
	skip = n - count;
	for (i = 0; i < n; i++) {
		if (a[i] < lo || a[i] > CONVT_ATTR_MAX)
			return cep__set_error(CEP_EMODEL, "%s: '%s' value %d is %" PRId64
					      " (must be in %" PRId64 "..%" PRId64 ")",
					      node->op_type, name, i, a[i], lo, CONVT_ATTR_MAX);
		if (i >= skip)
			v[i - skip] = a[i];
	}
	return 0;
}

static int convt_auto_pad(const struct op_node *node, enum convt_pad *out)
{
	const char *s;
	int ret;

	ret = op_attr_check(node, "auto_pad", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, "auto_pad", "NOTSET");
	/* Some exporters write an empty string for the default. */
	if (strcmp(s, "NOTSET") == 0 || s[0] == '\0')
		*out = CONVT_NOTSET;
	else if (strcmp(s, "SAME_UPPER") == 0)
		*out = CONVT_SAME_UPPER;
	else if (strcmp(s, "SAME_LOWER") == 0)
		*out = CONVT_SAME_LOWER;
	else if (strcmp(s, "VALID") == 0)
		*out = CONVT_VALID;
	else
		return cep__set_error(CEP_EMODEL, "%s: auto_pad '%s' is not NOTSET, SAME_UPPER, "
				      "SAME_LOWER or VALID", node->op_type, s);
	return 0;
}

int convt_attrs_parse(const struct op_node *node, int n, const int64_t *kernel,
		      struct convt_attrs *a)
{
	int64_t group;
	int i, ret;

	memset(a, 0, sizeof(*a));
	if (n < 1 || n > CONVT_MAX_DIMS)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: %d spatial dimensions, only 1 to %d "
				      "are supported", node->op_type, n, CONVT_MAX_DIMS);
	a->n = n;
	ret = op_attr_check(node, "group", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	group = op_attr_int(node, "group", 1);
	if (group < 1 || group > CONVT_ATTR_MAX)
		return cep__set_error(CEP_EMODEL, "%s: group is %" PRId64 ", must be >= 1",
				      node->op_type, group);
	ret = convt_ints(node, "kernel_shape", n, 0, 1, OP_DIM_UNKNOWN, a->kernel, NULL);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		int64_t k = kernel ? kernel[i] : OP_DIM_UNKNOWN;

		if (a->kernel[i] == OP_DIM_UNKNOWN) {
			a->kernel[i] = op_dim_fixed(k) ? k : OP_DIM_UNKNOWN;
		} else if (op_dim_fixed(k) && k != a->kernel[i]) {
			return cep__set_error(CEP_EMODEL, "%s: kernel_shape[%d] is %" PRId64
					      " but the weights have %" PRId64, node->op_type, i,
					      a->kernel[i], k);
		}
		if (op_dim_fixed(a->kernel[i]) && (a->kernel[i] < 1 || a->kernel[i] > CONVT_ATTR_MAX))
			return cep__set_error(CEP_EMODEL, "%s: kernel size %" PRId64 " along spatial "
					      "dimension %d", node->op_type, a->kernel[i], i);
	}
	ret = convt_ints(node, "strides", n, 0, 1, 1, a->stride, NULL);
	if (ret == 0)
		ret = convt_ints(node, "dilations", n, 0, 1, 1, a->dilation, NULL);
	if (ret == 0)
		ret = convt_ints(node, "pads", 2 * n, 0, 0, 0, a->pads, NULL);
	if (ret == 0)
		ret = convt_ints(node, "output_padding", n, 0, 0, 0, a->output_padding, NULL);
	/* The specification asks for the spatial sizes only; some exporters
	 * wrote N and C in front, which are dropped. */
	if (ret == 0)
		ret = convt_ints(node, "output_shape", n, n + 2, 0, 0, a->output_shape,
				 &a->has_output_shape);
	if (ret == 0)
		ret = convt_auto_pad(node, &a->auto_pad);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		int64_t op = a->output_padding[i];

		if (op >= a->stride[i] && op >= a->dilation[i])
			return cep__set_error(CEP_EMODEL, "%s: output_padding[%d] is %" PRId64 ", it "
					      "must be below the stride (%" PRId64 ") or the "
					      "dilation (%" PRId64 ")", node->op_type, i, op,
					      a->stride[i], a->dilation[i]);
	}
	return 0;
}

int convt_out_dim(const struct op_node *node, const struct convt_attrs *a, int i,
		  int64_t in, int64_t *out, int64_t *pb, int64_t *pe)
{
	int64_t k = a->kernel[i], s = a->stride[i], d = a->dilation[i];
	int64_t op = a->output_padding[i], eff, full, total, b, e, o;

	*out = OP_DIM_UNKNOWN;
	if (pb)
		*pb = 0;
	if (pe)
		*pe = 0;
	if (!op_dim_fixed(k))
		return 0;
	eff = (k - 1) * d + 1;
	b = a->pads[i];
	e = a->pads[a->n + i];
	if (!op_dim_fixed(in)) {
		if (a->has_output_shape)
			*out = a->output_shape[i];
		else if (s == 1 && (a->auto_pad == CONVT_SAME_UPPER || a->auto_pad == CONVT_SAME_LOWER))
			*out = in;
		else if (s == 1 && a->auto_pad == CONVT_VALID && op + eff - 1 == 0)
			*out = in;
		else if (s == 1 && a->auto_pad == CONVT_NOTSET && op + eff - 1 - b - e == 0)
			*out = in;
		return 0;
	}
	full = s * (in - 1) + op + eff;
	if (a->has_output_shape || a->auto_pad == CONVT_SAME_UPPER ||
	    a->auto_pad == CONVT_SAME_LOWER) {
		o = a->has_output_shape ? a->output_shape[i] : in * s;
		total = full - o;
		b = a->auto_pad == CONVT_SAME_UPPER ? convt_floor_div(total, 2)
						    : total - convt_floor_div(total, 2);
		e = total - b;
	} else if (a->auto_pad == CONVT_VALID) {
		b = e = 0;
		o = full;
	} else {
		o = full - b - e;
	}
	if (o < 0)
		return cep__set_error(CEP_ESHAPE, "%s: spatial dimension %d of the output would "
				      "be %" PRId64 " (input %" PRId64 ", kernel %" PRId64 ", pads %"
				      PRId64 "+%" PRId64 ")", node->op_type, i, o, in, k, b, e);
	*out = o;
	if (pb)
		*pb = b;
	if (pe)
		*pe = e;
	return 0;
}

int convt_geom_init(const struct op_node *node, const struct op_tensor *x,
		    const struct op_tensor *w, struct convt_geom *g)
{
	int64_t kernel[CONVT_MAX_DIMS] = { 0 };
	struct convt_col2im *win = &g->win;
	struct convt_attrs a;
	int n = x->rank - 2, i, ret;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < n && i < CONVT_MAX_DIMS; i++)
		kernel[i] = w->dims[2 + i];
	ret = convt_attrs_parse(node, n, kernel, &a);
	if (ret < 0)
		return ret;
	win->n = n;
	win->ks = win->l = win->p = 1;
	for (i = 0; i < n; i++) {
		ret = convt_out_dim(node, &a, i, x->dims[2 + i], &win->image[i], &win->pad_begin[i],
				    &g->pad_end[i]);
		if (ret < 0)
			return ret;
		win->block[i] = a.kernel[i];
		win->blocks[i] = x->dims[2 + i];
		win->stride[i] = a.stride[i];
		win->dilation[i] = a.dilation[i];
		win->ks *= win->block[i];
		win->l *= win->blocks[i];
		win->p *= win->image[i];
	}
	g->batch = x->dims[0];
	g->c = x->dims[1];
	g->group = op_attr_int(node, "group", 1);
	g->cg = g->c / g->group;
	g->mg = w->dims[1];
	g->m = g->mg * g->group;
	return 0;
}

/* ------------------------------------------------------------------ Col2Im */

int convt_col2im_attrs(const struct op_node *node, int n, struct convt_col2im *w,
		       int64_t *pad_end)
{
	int64_t pads[2 * CONVT_MAX_DIMS];
	int i, ret;

	if (n < 1 || n > CONVT_MAX_DIMS)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: %d spatial dimensions, only 1 to %d "
				      "are supported", node->op_type, n, CONVT_MAX_DIMS);
	w->n = n;
	ret = convt_ints(node, "strides", n, 0, 1, 1, w->stride, NULL);
	if (ret == 0)
		ret = convt_ints(node, "dilations", n, 0, 1, 1, w->dilation, NULL);
	if (ret == 0)
		ret = convt_ints(node, "pads", 2 * n, 0, 0, 0, pads, NULL);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		w->pad_begin[i] = pads[i];
		pad_end[i] = pads[n + i];
	}
	return 0;
}

int convt_col2im_blocks(const struct op_node *node, struct convt_col2im *w,
			const int64_t *pad_end)
{
	int i;

	w->ks = w->l = w->p = 1;
	for (i = 0; i < w->n; i++) {
		int64_t eff = (w->block[i] - 1) * w->dilation[i] + 1;
		int64_t span = w->image[i] + w->pad_begin[i] + pad_end[i] - eff;

		if (span < 0)
			return cep__set_error(CEP_ESHAPE, "%s: a block (%" PRId64 " wide with "
					      "dilation) does not fit in spatial dimension %d of size %"
					      PRId64 " padded by %" PRId64 "+%" PRId64, node->op_type,
					      eff, i, w->image[i], w->pad_begin[i], pad_end[i]);
		w->blocks[i] = span / w->stride[i] + 1;
		w->ks *= w->block[i];
		w->l *= w->blocks[i];
		w->p *= w->image[i];
	}
	return 0;
}
