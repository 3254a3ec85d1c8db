/*
 * window.c — the sliding window of Conv and the pools (kernels/cpu/window.h):
 * attribute parsing with the checks every such operator needs, and output
 * sizes with auto_pad and ceil_mode resolved the way onnxruntime does.
 */
#include "kernels/cpu/window.h"

#include <inttypes.h>

/* Sizes, strides and pads come from a model: bounded so that the window
 * arithmetic below stays far from int64 overflow. */
#define WINDOW_ATTR_MAX INT64_C(0x7fffffff)

/* Reads INTS attribute name (count values, each in [lo, WINDOW_ATTR_MAX])
 * into v; absent, v is filled with dflt. */
static int window_ints(const struct op_node *node, const char *name, int count,
		       int64_t lo, int64_t dflt, int64_t *v)
{
	const int64_t *a;
	int n, i, ret;

	ret = op_attr_check(node, name, OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	a = op_attr_ints(node, name, &n);
	if (!a) {
		for (i = 0; i < count; i++)
			v[i] = dflt;
		return 0;
	}
	if (n != count)
		return cep__set_error(CEP_EMODEL, "%s: '%s' has %d values, expected %d",
				      node->op_type, name, n, count);
	for (i = 0; i < n; i++) {
		if (a[i] < lo || a[i] > WINDOW_ATTR_MAX)
			return cep__set_error(CEP_EMODEL, "%s: '%s' value %d is %" PRId64
					      " (must be in %" PRId64 "..%" PRId64 ")",
					      node->op_type, name, i, a[i], lo, WINDOW_ATTR_MAX);
		v[i] = a[i];
	}
	return 0;
}

/* An attribute the operator does not have at this opset is a model error:
 * ignoring it would compute something else than its author meant. */
static int window_absent(const struct op_node *node, const char *name)
{
	if (!op_attr_find(node, name))
		return 0;
	return cep__set_error(CEP_EMODEL, "%s: attribute '%s' does not exist at opset %d",
			      node->op_type, name, node->opset);
}

static int window_auto_pad(const struct op_node *node, enum cpu_window_pad *out)
{
	const char *s;
	int ret;

	ret = op_attr_check(node, "auto_pad", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, "auto_pad", "NOTSET");
	/* Some exporters write an empty string for the default. */
	if (strcmp(s, "NOTSET") == 0 || s[0] == '\0')
		*out = CPU_WINDOW_NOTSET;
	else if (strcmp(s, "SAME_UPPER") == 0)
		*out = CPU_WINDOW_SAME_UPPER;
	else if (strcmp(s, "SAME_LOWER") == 0)
		*out = CPU_WINDOW_SAME_LOWER;
	else if (strcmp(s, "VALID") == 0)
		*out = CPU_WINDOW_VALID;
	else
		return cep__set_error(CEP_EMODEL, "%s: auto_pad '%s' is not NOTSET, SAME_UPPER, "
				      "SAME_LOWER or VALID", node->op_type, s);
	return 0;
}

int cpu_window_parse(const struct op_node *node, int n, const int64_t *kernel,
		     unsigned flags, struct cpu_window *w)
{
	int64_t pads[2 * CPU_WINDOW_MAX];
	int i, ret;

	memset(w, 0, sizeof(*w));
	if ((flags & CPU_WINDOW_KERNEL_ATTR) && !op_attr_find(node, "kernel_shape"))
		return cep__set_error(CEP_EMODEL, "%s: attribute 'kernel_shape' is required",
				      node->op_type);
	if (n < 1 || n > CPU_WINDOW_MAX)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: %d spatial dimensions, only 1 to %d "
				      "are supported", node->op_type, n, CPU_WINDOW_MAX);
	w->n = n;
	ret = window_ints(node, "kernel_shape", n, 1, OP_DIM_UNKNOWN, w->kernel);
	if (ret < 0)
		return ret;
	for (i = 0; kernel && i < n; i++) {
		if (w->kernel[i] == OP_DIM_UNKNOWN)
			w->kernel[i] = kernel[i];
		else if (op_dim_fixed(kernel[i]) && kernel[i] != w->kernel[i])
			return cep__set_error(CEP_EMODEL, "%s: kernel_shape[%d] is %" PRId64
					      " but the weights have %" PRId64,
					      node->op_type, i, w->kernel[i], kernel[i]);
		if (op_dim_fixed(w->kernel[i]) && (w->kernel[i] < 1 || w->kernel[i] > WINDOW_ATTR_MAX))
			return cep__set_error(CEP_EMODEL, "%s: kernel size %" PRId64
					      " along spatial dimension %d", node->op_type,
					      w->kernel[i], i);
		if (!op_dim_fixed(w->kernel[i]))
			w->kernel[i] = OP_DIM_UNKNOWN;
	}
	ret = window_ints(node, "strides", n, 1, 1, w->stride);
	if (ret < 0)
		return ret;
	if (!(flags & CPU_WINDOW_DILATIONS)) {
		ret = window_absent(node, "dilations");
		if (ret < 0)
			return ret;
	}
	ret = window_ints(node, "dilations", n, 1, 1, w->dilation);
	if (ret < 0)
		return ret;
	ret = window_ints(node, "pads", 2 * n, 0, 0, pads);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		w->pad_begin[i] = pads[i];
		w->pad_end[i] = pads[n + i];
	}
	ret = window_auto_pad(node, &w->auto_pad);
	if (ret < 0)
		return ret;
	if (flags & CPU_WINDOW_CEIL_MODE) {
		ret = op_attr_check(node, "ceil_mode", OP_ATTR_INT);
		w->ceil_mode = op_attr_int(node, "ceil_mode", 0) != 0;
	} else {
		ret = window_absent(node, "ceil_mode");
	}
	return ret;
}

int cpu_window_out_dim(const struct op_node *node, struct cpu_window *w, int i,
		       int64_t in, int64_t *out)
{
	int64_t k = w->kernel[i], s = w->stride[i], d = w->dilation[i];
	int64_t eff, num, total;

	*out = OP_DIM_UNKNOWN;
	if (!op_dim_fixed(k))
		return 0;
	eff = (k - 1) * d + 1;
	if (w->auto_pad == CPU_WINDOW_VALID)
		w->pad_begin[i] = w->pad_end[i] = 0;
	if (w->auto_pad == CPU_WINDOW_SAME_UPPER || w->auto_pad == CPU_WINDOW_SAME_LOWER) {
		if (!op_dim_fixed(in)) {
			if (s == 1)
				*out = in;
			return 0;
		}
		*out = (in + s - 1) / s;
		total = (*out - 1) * s + eff - in;
		if (total < 0)
			total = 0;
		/* The odd pad goes to the end for SAME_UPPER, the start for
		 * SAME_LOWER. */
		w->pad_begin[i] = w->auto_pad == CPU_WINDOW_SAME_UPPER ? total / 2 : total - total / 2;
		w->pad_end[i] = total - w->pad_begin[i];
		return 0;
	}
	if (!op_dim_fixed(in)) {
		if (s == 1 && w->pad_begin[i] + w->pad_end[i] == eff - 1)
			*out = in;
		return 0;
	}
	num = in + w->pad_begin[i] + w->pad_end[i] - eff;
	if (num < 0)
		return cep__set_error(CEP_ESHAPE, "%s: the window (%" PRId64 " wide with dilation) "
				      "does not fit in spatial dimension %d of size %" PRId64
				      " padded by %" PRId64 "+%" PRId64, node->op_type, eff, i,
				      in, w->pad_begin[i], w->pad_end[i]);
	*out = num / s + 1;
	if (w->ceil_mode && num % s != 0) {
		*out += 1;
		/* The last window must start inside the input or its leading
		 * pad, never entirely in the trailing one. */
		if ((*out - 1) * s >= in + w->pad_begin[i])
			*out -= 1;
	}
	return 0;
}

int cpu_window_out_dims(const struct op_node *node, struct cpu_window *w,
			const struct op_tensor *x, struct op_tensor *y)
{
	int i, ret;

	for (i = 0; i < w->n; i++) {
		ret = cpu_window_out_dim(node, w, i, x->dims[2 + i], &y->dims[2 + i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void cpu_window_geom_init(const struct cpu_window *w, const struct op_tensor *x,
			  const struct op_tensor *y, struct cpu_window_geom *g)
{
	int off = 3 - w->n, i;

	for (i = 0; i < 3; i++) {
		g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
		g->pb[i] = g->pe[i] = 0;
	}
	for (i = 0; i < w->n; i++) {
		g->in[off + i] = x->dims[2 + i];
		g->out[off + i] = y->dims[2 + i];
		g->k[off + i] = w->kernel[i];
		g->s[off + i] = w->stride[i];
		g->d[off + i] = w->dilation[i];
		g->pb[off + i] = w->pad_begin[i];
		g->pe[off + i] = w->pad_end[i];
	}
}
