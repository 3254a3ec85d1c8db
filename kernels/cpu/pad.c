/*
 * pad.c — Pad: grows (or, with negative pads, crops) each dimension of a
 * tensor at both ends, filling with a constant or with the tensor's own
 * elements mirrored (reflect), repeated at the border (edge) or wrapped
 * around (wrap, from opset 19).
 *
 * The pads are an attribute before opset 11 (called paddings at opset 1,
 * of the same layout) and an input from then on,
 * with the constant an input too and, from opset 18, an optional axes
 * input naming the dimensions the pads are for. Negative pads crop first
 * and the fill then mirrors or repeats what is left, as onnxruntime does;
 * reflection and wrapping continue periodically when the pads are wider
 * than the dimension, as numpy.pad does. The kernel copies bytes, so every
 * stored type is exact; rows of the innermost dimension are copied whole.
 * The mode and the pads are read by functions of kernels/cpu/pad.h, which
 * the CUDA kernel of kernels/cuda/pad.c shares.
 */
#include "kernels/cpu/pad.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ reading */

int cpu_pad_mode_get(const struct op_node *node, enum cpu_pad_mode *mode)
{
	const char *s;
	int ret;

	ret = op_attr_check(node, "mode", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, "mode", "constant");
	if (strcmp(s, "constant") == 0)
		*mode = CPU_PAD_CONSTANT;
	else if (strcmp(s, "reflect") == 0)
		*mode = CPU_PAD_REFLECT;
	else if (strcmp(s, "edge") == 0)
		*mode = CPU_PAD_EDGE;
	else if (strcmp(s, "wrap") == 0 && node->opset >= 19)
		*mode = CPU_PAD_WRAP;
	else if (strcmp(s, "wrap") == 0)
		return cep__set_error(CEP_EMODEL, "Pad: mode 'wrap' needs opset 19 (the model has %d)",
				      node->opset);
	else
		return cep__set_error(CEP_EMODEL, "Pad: mode '%s' is not constant, reflect, edge "
				      "or wrap", s);
	return 0;
}

/* Reads the axes input (opset 18 on) into axes, normalized; returns the
 * count, rank when the input is absent, -1 when it is not known yet. */
static int pad_axes(const struct op_node *node, const struct op_tensor *in, int n_in,
		    int rank, int *axes, int *err)
{
	const struct op_tensor *t = n_in > 3 ? &in[3] : NULL;
	bool seen[CEP_MAX_RANK] = { false };
	int64_t n, i, v;

	*err = 0;
	if (!t || !op_tensor_present(t)) {
		for (i = 0; i < rank; i++)
			axes[i] = (int)i;
		return rank;
	}
	if (t->dtype != CEP_DTYPE_INT64 && t->dtype != CEP_DTYPE_INT32) {
		*err = cep__set_error(CEP_EDTYPE, "Pad: axes are %s, not int32 or int64",
				      cep_dtype_name(t->dtype));
		return -1;
	}
	if (!t->data)
		return -1;
	if (t->rank != 1) {
		*err = cep__set_error(CEP_ESHAPE, "Pad: axes must be 1-D, it has rank %d", t->rank);
		return -1;
	}
	n = t->dims[0];
	if (n > rank) {
		*err = cep__set_error(CEP_EMODEL, "Pad: %" PRId64 " axes for rank %d", n, rank);
		return -1;
	}
	for (i = 0; i < n; i++) {
		op_tensor_get_int(t, i, &v);
		*err = op_axis_normalize(node, v, rank, &axes[i]);
		if (*err < 0)
			return -1;
		if (seen[axes[i]]) {
			*err = cep__set_error(CEP_EMODEL, "Pad: axis %" PRId64 " appears twice", v);
			return -1;
		}
		seen[axes[i]] = true;
	}
	return (int)n;
}

int cpu_pad_amounts_get(const struct op_node *node, const struct op_tensor *in, int n_in,
			int rank, struct cpu_pad_amounts *a)
{
	const struct op_tensor *t = n_in > 1 ? &in[1] : NULL;
	int64_t v[2 * CEP_MAX_RANK];
	int axes[CEP_MAX_RANK];
	int n_axes = rank, count, i, err;

	memset(a, 0, sizeof(*a));
	if (node->opset < 11) {
		/* Opset 2 renamed opset 1's paddings, of the same layout. */
		const char *name = node->opset < 2 ? "paddings" : "pads";
		const int64_t *p;

		err = op_attr_check(node, name, OP_ATTR_INTS);
		if (err < 0)
			return err;
		p = op_attr_ints(node, name, &count);
		if (!p)
			return cep__set_error(CEP_EMODEL, "Pad: attribute '%s' is required", name);
		if (count != 2 * rank)
			return cep__set_error(CEP_EMODEL, "Pad: %s has %d values for rank %d",
					      name, count, rank);
		memcpy(v, p, sizeof(int64_t) * (size_t)count);
		for (i = 0; i < rank; i++)
			axes[i] = i;
	} else {
		if (!t || !op_tensor_present(t))
			return cep__set_error(CEP_EMODEL, "Pad: input 'pads' is required");
		if (t->dtype != CEP_DTYPE_INT64 && t->dtype != CEP_DTYPE_INT32)
			return cep__set_error(CEP_EDTYPE, "Pad: pads are %s, not int64",
					      cep_dtype_name(t->dtype));
		if (node->opset >= 18) {
			n_axes = pad_axes(node, in, n_in, rank, axes, &err);
			if (err < 0)
				return err;
			if (n_axes < 0)
				return 1;
		} else {
			for (i = 0; i < rank; i++)
				axes[i] = i;
		}
		if (t->rank >= 0 && t->rank != 1)
			return cep__set_error(CEP_ESHAPE, "Pad: pads must be 1-D, it has rank %d",
					      t->rank);
		if (t->rank == 1 && op_dim_fixed(t->dims[0]) && t->dims[0] != 2 * n_axes)
			return cep__set_error(CEP_ESHAPE, "Pad: pads has %" PRId64 " values for %d axes",
					      t->dims[0], n_axes);
		if (!t->data || t->rank != 1)
			return 1;
		count = 2 * n_axes;
		for (i = 0; i < count; i++)
			op_tensor_get_int(t, i, &v[i]);
	}
	for (i = 0; i < count; i++) {
		if (v[i] > OP_MAX_NUMEL || v[i] < -OP_MAX_NUMEL)
			return cep__set_error(CEP_ELIMIT, "Pad: pad %d is %" PRId64, i, v[i]);
	}
	for (i = 0; i < count / 2; i++) {
		a->begin[axes[i]] = v[i];
		a->end[axes[i]] = v[count / 2 + i];
	}
	return 0;
}

/* ---------------------------------------------------------------- inference */

static int pad_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0];
	struct op_tensor *out = &x->out[0];
	struct cpu_pad_amounts a;
	enum cpu_pad_mode mode;
	int i, ret;

	out->dtype = data->dtype;
	out->rank = data->rank;
	ret = cpu_pad_mode_get(x->node, &mode);
	if (ret < 0)
		return ret;
	if (x->node->opset >= 11 && x->n_in > 2 && op_tensor_present(&x->in[2])) {
		const struct op_tensor *cv = &x->in[2];

		if (cv->dtype != data->dtype)
			return cep__set_error(CEP_EDTYPE, "Pad: constant_value is %s but data is %s",
					      cep_dtype_name(cv->dtype), cep_dtype_name(data->dtype));
		if (cv->rank > 1 || (cv->rank == 1 && op_dim_fixed(cv->dims[0]) && cv->dims[0] > 1))
			return cep__set_error(CEP_ESHAPE, "Pad: constant_value must be a scalar");
	}
	if (data->rank < 0)
		return 0;
	ret = cpu_pad_amounts_get(x->node, x->in, x->n_in, data->rank, &a);
	if (ret < 0)
		return ret;
	for (i = 0; i < data->rank; i++) {
		int64_t d = data->dims[i], grow = a.begin[i] + a.end[i];

		if (ret == 1) {
			out->dims[i] = OP_DIM_UNKNOWN;
		} else if (!op_dim_fixed(d)) {
			out->dims[i] = grow == 0 ? d : OP_DIM_UNKNOWN;
		} else if (d + grow < 0) {
			return cep__set_error(CEP_ESHAPE, "Pad: dimension %d of size %" PRId64
					      " cannot lose %" PRId64, i, d, -grow);
		} else {
			int64_t left = d - (a.begin[i] < 0 ? -a.begin[i] : 0) -
				       (a.end[i] < 0 ? -a.end[i] : 0);

			if (left < 0)
				return cep__set_error(CEP_ESHAPE, "Pad: the crops of dimension %d "
						      "exceed its size %" PRId64, i, d);
			if (mode != CPU_PAD_CONSTANT && left == 0 && (a.begin[i] > 0 || a.end[i] > 0))
				return cep__set_error(CEP_ESHAPE, "Pad: mode %s cannot fill dimension %d: "
						      "nothing of it is left to copy",
						      op_attr_string(x->node, "mode", ""), i);
			out->dims[i] = d + grow;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ kernel */

/*
 * The input index that output index o of a dimension takes: n elements
 * are left after the crop, starting at input index first; pad elements
 * come before them. -1 means the constant.
 */
static int64_t pad_map(enum cpu_pad_mode mode, int64_t o, int64_t pad, int64_t n, int64_t first)
{
	int64_t i = o - pad, period, m;

	if (i >= 0 && i < n)
		return first + i;
	switch (mode) {
	case CPU_PAD_CONSTANT:
		return -1;
	case CPU_PAD_EDGE:
		return first + (i < 0 ? 0 : n - 1);
	case CPU_PAD_REFLECT:
		if (n == 1)
			return first;
		period = 2 * (n - 1);
		m = i % period;
		if (m < 0)
			m += period;
		return first + (m < n ? m : period - m);
	case CPU_PAD_WRAP:
		m = i % n;
		return first + (m < 0 ? m + n : m);
	}
	return -1;
}

/* Per dimension: what is left after the crops and where it starts. */
struct pad_dim {
	int64_t pad;   /* elements added before what is left */
	int64_t n;     /* elements left after the crops */
	int64_t first; /* input index of the first of them */
};

static int pad_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *out = &c->out[0];
	size_t es = cep_dtype_size(data->dtype);
	const unsigned char *src = data->data;
	unsigned char *dst = out->data;
	unsigned char cval[8] = { 0 };
	struct pad_dim dim[CEP_MAX_RANK];
	int64_t idx[CEP_MAX_RANK] = { 0 }, stride[CEP_MAX_RANK];
	int64_t rows, row, o, inner, numel;
	struct cpu_pad_amounts a;
	enum cpu_pad_mode mode;
	int r = data->rank, i, ret;

	ret = cpu_pad_mode_get(c->node, &mode);
	if (ret < 0)
		return ret;
	ret = cpu_pad_amounts_get(c->node, c->in, c->n_in, r, &a);
	if (ret < 0)
		return ret;
	if (ret == 1)
		return cep__set_error(CEP_EINVAL, "Pad: the pads are not known at run time");
	for (i = r - 1; i >= 0; i--) {
		dim[i].first = a.begin[i] < 0 ? -a.begin[i] : 0;
		dim[i].pad = a.begin[i] > 0 ? a.begin[i] : 0;
		dim[i].n = data->dims[i] - dim[i].first - (a.end[i] < 0 ? -a.end[i] : 0);
		stride[i] = i == r - 1 ? 1 : stride[i + 1] * data->dims[i + 1];
		/* Inference checked all this at plan time; the pads are
		 * constants, but a kernel never trusts a shape it did not see. */
		if (dim[i].n < 0 || out->dims[i] != data->dims[i] + a.begin[i] + a.end[i] ||
		    (dim[i].n == 0 && mode != CPU_PAD_CONSTANT && out->dims[i] > 0))
			return cep__set_error(CEP_ESHAPE, "Pad: pads do not fit dimension %d", i);
	}
	if (c->node->opset < 11)
		cpu_store_f(cval, data->dtype, 0, op_attr_float(c->node, "value", 0.0f));
	else if (c->n_in > 2 && op_tensor_present(&c->in[2]) && op_tensor_bytes(&c->in[2]) == es)
		memcpy(cval, c->in[2].data, es);
	numel = cpu_numel(out);
	if (numel == 0)
		return 0;
	if (r == 0) {
		memcpy(dst, src, es);
		return 0;
	}
	inner = out->dims[r - 1];
	rows = numel / inner;
	for (row = 0; row < rows; row++) {
		unsigned char *d = dst + (size_t)(row * inner) * es;
		const struct pad_dim *last = &dim[r - 1];
		int64_t base = 0;

		for (i = 0; i < r - 1; i++) {
			int64_t k = pad_map(mode, idx[i], dim[i].pad, dim[i].n, dim[i].first);

			if (k < 0)
				break;
			base += k * stride[i];
		}
		for (o = 0; o < inner; o++) {
			int64_t k = i < r - 1 ? -1 : pad_map(mode, o, last->pad, last->n, last->first);

			if (k >= 0 && o == last->pad && last->n > 0) {
				/* What is left of the row, in one copy. */
				memcpy(d + (size_t)o * es, src + (size_t)(base + k) * es,
				       (size_t)last->n * es);
				o += last->n - 1;
				continue;
			}
			memcpy(d + (size_t)o * es, k < 0 ? cval : src + (size_t)(base + k) * es, es);
		}
		for (i = r - 2; i >= 0; i--) {
			if (++idx[i] < out->dims[i])
				break;
			idx[i] = 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define PAD_DTS_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	/* Pads an attribute (paddings at 1); from 11 inputs; 18 adds axes,
	 * 19 mode wrap. */
	{ "", "Pad", 1, 1, 1, 1, 1, 1, 0, 0, pad_infer },
	{ "", "Pad", 2, 10, 1, 1, 1, 1, 0, 0, pad_infer },
	{ "", "Pad", 11, 17, 2, 3, 1, 1, 0, 0, pad_infer },
	{ "", "Pad", 18, 18, 2, 4, 1, 1, 0, 0, pad_infer },
	{ "", "Pad", 19, OP_OPSET_MAX, 2, 4, 1, 1, 0, 0, pad_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Pad", 1, 10, BACKEND_HOST, PAD_DTS_NO_BF16, NULL, pad_run },
	{ "", "Pad", 11, 12, BACKEND_HOST, PAD_DTS_NO_BF16 | OP_DTS_INT, NULL, pad_run },
	{ "", "Pad", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, pad_run },
};

const struct op_family op_family_cpu_pad = {
	"cpu_pad", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
