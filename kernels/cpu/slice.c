/*
 * slice.c — Slice: a strided sub-tensor of data. Before opset 10 starts,
 * ends and axes are attributes; from opset 10 they are inputs, with steps
 * (negative steps walk backwards, 0 is refused). Bounds are clamped the
 * ONNX way, so INT64_MAX means "to the end" and INT64_MIN "to the start"
 * whatever the dimension.
 *
 * The output shape depends on the bounds' values: inference computes it
 * whenever they are known (constants at load, values the planner folded),
 * else leaves the sliced dimensions unknown for the planner to settle. The
 * kernel reads the same bounds again when it runs, so nothing about them
 * needs to live in the call.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* The bounds of one Slice node, validated against the rank of data. */
struct slice_args {
	int n;                           /* axes sliced */
	int axes[CEP_MAX_RANK];          /* (n) normalised, distinct */
	int64_t starts[CEP_MAX_RANK];    /* (n) as given, before clamping */
	int64_t ends[CEP_MAX_RANK];      /* (n) */
	int64_t steps[CEP_MAX_RANK];     /* (n) never 0 */
};

/* What is known of the bounds during inference. */
enum slice_known {
	SLICE_KNOWN,      /* every list known: the shape follows */
	SLICE_AXES_KNOWN, /* which axes are sliced, not by how much */
	SLICE_UNKNOWN,    /* not even which axes */
};

/* The names of the list inputs, by input index, for messages. */
static const char *const list_names[5] = { "data", "starts", "ends", "axes", "steps" };

/* Checks list input i (present) and reads it into v when its value is
 * known; *count gets its length (-1: not fixed). */
static int list_read(const struct op_node *node, const struct op_tensor *t, int i,
		     int64_t *v, int64_t *count, bool *known)
{
	int64_t k;
	int ret;

	ret = shapeops_list_check(node, t, list_names[i], SHAPEOPS_INDEX, count);
	if (ret < 0)
		return ret;
	*known = t->data != NULL && *count >= 0;
	if (*count > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "Slice: %s has %" PRId64
				      " entries, more than any tensor has axes (%d)",
				      list_names[i], *count, CEP_MAX_RANK);
	for (k = 0; *known && k < *count; k++)
		v[k] = shapeops_at(t, k);
	return 0;
}

/* Copies an INTS attribute of a Slice before opset 10 into v. */
static int attr_read(const struct op_node *node, const char *name, int64_t *v,
		     int64_t *count, bool required)
{
	const int64_t *a;
	int n, ret;

	ret = op_attr_check(node, name, OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	a = op_attr_ints(node, name, &n);
	*count = a ? n : -1;
	if (!a && required)
		return cep__set_error(CEP_EMODEL, "Slice: attribute '%s' is required before opset 10",
				      name);
	if (n > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "Slice: %s has %d entries, more than any "
				      "tensor has axes (%d)", name, n, CEP_MAX_RANK);
	if (a)
		memcpy(v, a, sizeof(int64_t) * (size_t)n);
	return 0;
}

/*
 * Gathers the bounds of node for data of rank `rank` (-1: unknown) from
 * its attributes or inputs (in, n_in), checks them, and says in *known how
 * much is known. With SLICE_AXES_KNOWN only a->n and a->axes are set.
 */
static int slice_args_read(const struct op_node *node, const struct op_tensor *in,
			   int n_in, int rank, struct slice_args *a, enum slice_known *known)
{
	int64_t axes[CEP_MAX_RANK], cnt[5] = { 0, -1, -1, -1, -1 };
	bool have[5] = { false }, kn[5] = { true, false, false, true, true };
	bool seen[CEP_MAX_RANK] = { false };
	int i, k, ref, ret;

	memset(a, 0, sizeof(*a));
	*known = SLICE_UNKNOWN;
	if (node->opset < 10) {
		ret = attr_read(node, "starts", a->starts, &cnt[1], true);
		if (ret == 0)
			ret = attr_read(node, "ends", a->ends, &cnt[2], true);
		if (ret == 0)
			ret = attr_read(node, "axes", axes, &cnt[3], false);
		if (ret < 0)
			return ret;
		have[1] = have[2] = kn[1] = kn[2] = true;
		have[3] = cnt[3] >= 0;
	} else {
		int64_t *dst[5] = { NULL, a->starts, a->ends, axes, a->steps };

		for (i = 1; i < 5; i++) {
			have[i] = i < n_in && op_tensor_present(&in[i]);
			if (!have[i])
				continue;
			ret = list_read(node, &in[i], i, dst[i], &cnt[i], &kn[i]);
			if (ret < 0)
				return ret;
		}
		if (!have[1] || !have[2])
			return cep__set_error(CEP_EMODEL, "Slice: starts and ends are required");
	}
	/* Every list present must have as many entries as the first one
	 * whose length is known. */
	for (i = 1, ref = 0; i < 5; i++) {
		if (!have[i] || cnt[i] < 0)
			continue;
		if (ref == 0)
			ref = i;
		else if (cnt[i] != cnt[ref])
			return cep__set_error(CEP_ESHAPE, "Slice: %s has %" PRId64
					      " entries, %s has %" PRId64, list_names[i], cnt[i],
					      list_names[ref], cnt[ref]);
	}
	if (ref == 0)
		return 0;
	a->n = (int)cnt[ref];
	if (rank >= 0 && a->n > rank)
		return cep__set_error(CEP_ESHAPE, "Slice: %d axes sliced but data has rank %d",
				      a->n, rank);
	if ((have[3] && !kn[3]) || rank < 0)
		return 0;
	for (k = 0; k < a->n; k++) {
		int64_t ax = have[3] ? axes[k] : k;

		if (ax < -rank || ax >= rank)
			return cep__set_error(CEP_EMODEL, "Slice: axis %" PRId64
					      " is out of range for rank %d", ax, rank);
		a->axes[k] = (int)(ax < 0 ? ax + rank : ax);
		if (seen[a->axes[k]])
			return cep__set_error(CEP_EMODEL, "Slice: axis %" PRId64 " appears twice", ax);
		seen[a->axes[k]] = true;
	}
	*known = SLICE_AXES_KNOWN;
	if (!kn[1] || !kn[2] || (have[4] && !kn[4]))
		return 0;
	for (k = 0; k < a->n; k++) {
		if (!have[4])
			a->steps[k] = 1;
		else if (a->steps[k] == 0)
			return cep__set_error(CEP_EMODEL, "Slice: steps entry %d is 0", k);
	}
	*known = SLICE_KNOWN;
	return 0;
}

/*
 * Clamps start and end for an axis of size dim and a step, as the ONNX
 * definition does, stores the first index read in *first and returns the
 * number of elements taken. Never overflows, whatever the inputs.
 */
static int64_t slice_clamp(int64_t dim, int64_t start, int64_t end, int64_t step,
			   int64_t *first)
{
	uint64_t span, mag;

	if (start < 0)
		start += dim;
	if (end < 0)
		end += dim;
	if (step > 0) {
		start = start < 0 ? 0 : start > dim ? dim : start;
		end = end < 0 ? 0 : end > dim ? dim : end;
		*first = start;
		if (end <= start)
			return 0;
		span = (uint64_t)(end - start);
		mag = (uint64_t)step;
	} else {
		start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
		end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
		*first = start;
		if (start <= end)
			return 0;
		span = (uint64_t)(start - end);
		mag = (uint64_t)0 - (uint64_t)step;
	}
	return (int64_t)((span - 1) / mag + 1);
}

/* The length of a slice of a symbolic dimension: only taking the whole
 * axis, forwards or backwards, is known without the size. */
static int64_t slice_symbolic(int64_t dim, int64_t start, int64_t end, int64_t step)
{
	if (step == 1 && (start == 0 || start <= -OP_MAX_NUMEL) && end >= OP_MAX_NUMEL)
		return dim;
	if (step == -1 && (start == -1 || start >= OP_MAX_NUMEL) && end <= -OP_MAX_NUMEL - 1)
		return dim;
	return OP_DIM_UNKNOWN;
}

static int slice_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0];
	struct op_tensor *out = &x->out[0];
	enum slice_known known;
	struct slice_args a;
	int64_t first;
	int i, k, ret;

	out->dtype = data->dtype;
	ret = slice_args_read(x->node, x->in, x->n_in, data->rank, &a, &known);
	if (ret < 0)
		return ret;
	out->rank = data->rank;
	if (data->rank < 0)
		return 0;
	for (i = 0; i < data->rank; i++)
		out->dims[i] = known == SLICE_UNKNOWN ? OP_DIM_UNKNOWN : data->dims[i];
	for (k = 0; known != SLICE_UNKNOWN && k < a.n; k++) {
		int64_t d = data->dims[a.axes[k]];

		if (known == SLICE_AXES_KNOWN || d == OP_DIM_UNKNOWN)
			out->dims[a.axes[k]] = OP_DIM_UNKNOWN;
		else if (op_dim_symbolic(d))
			out->dims[a.axes[k]] = slice_symbolic(d, a.starts[k], a.ends[k], a.steps[k]);
		else
			out->dims[a.axes[k]] = slice_clamp(d, a.starts[k], a.ends[k], a.steps[k],
							   &first);
	}
	return 0;
}

/*
 * Copies the slice: dims after the innermost axis not taken whole form one
 * contiguous block; along that axis blocks are copied one by one (or as a
 * single run when its step is 1), and the outer axes are walked with an
 * odometer.
 */
static void slice_copy(const struct op_tensor *data, const struct op_tensor *out,
		       const int64_t *first, const int64_t *step)
{
	size_t es = cep_dtype_size(data->dtype);
	const unsigned char *src = data->data;
	unsigned char *dst = out->data;
	int64_t stride[CEP_MAX_RANK], idx[CEP_MAX_RANK] = { 0 };
	int64_t s = 1, rows, row, k, n;
	size_t block;
	int r = data->rank, p, d;

	for (d = r - 1; d >= 0; d--) {
		stride[d] = s;
		s *= data->dims[d];
	}
	for (p = r - 1; p >= 0; p--) {
		if (first[p] != 0 || step[p] != 1 || out->dims[p] != data->dims[p])
			break;
	}
	if (p < 0) {
		memcpy(dst, src, (size_t)s * es);
		return;
	}
	block = (size_t)stride[p] * es;
	n = out->dims[p];
	rows = op_dims_product(out, 0, p);
	for (row = 0; row < rows; row++) {
		int64_t off = first[p] * stride[p];

		for (d = 0; d < p; d++)
			off += (first[d] + idx[d] * step[d]) * stride[d];
		if (step[p] == 1) {
			memcpy(dst, src + (size_t)off * es, (size_t)n * block);
			dst += (size_t)n * block;
		} else if (block == es) {
			for (k = 0; k < n; k++)
				shapeops_elem_copy(dst, k, src, off + k * step[p], es);
			dst += (size_t)n * es;
		} else {
			for (k = 0; k < n; k++) {
				memcpy(dst, src + (size_t)(off + k * step[p] * stride[p]) * es, block);
				dst += block;
			}
		}
		for (d = p - 1; d >= 0; d--) {
			if (++idx[d] < out->dims[d])
				break;
			idx[d] = 0;
		}
	}
}

static int slice_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *out = &c->out[0];
	int64_t first[CEP_MAX_RANK], step[CEP_MAX_RANK], numel;
	enum slice_known known;
	struct slice_args a;
	int i, k, ret;

	ret = slice_args_read(c->node, c->in, c->n_in, data->rank, &a, &known);
	if (ret < 0)
		return ret;
	if (known != SLICE_KNOWN)
		return cep__set_error(CEP_EINTERNAL, "Slice: the bounds are not on the host");
	for (i = 0; i < data->rank; i++) {
		first[i] = 0;
		step[i] = 1;
	}
	for (k = 0; k < a.n; k++) {
		int ax = a.axes[k];
		int64_t len = slice_clamp(data->dims[ax], a.starts[k], a.ends[k], a.steps[k],
					  &first[ax]);

		/* The plan was made with these bounds; different ones mean
		 * the bounds changed after planning. */
		if (len != out->dims[ax])
			return cep__set_error(CEP_EINVAL, "Slice: axis %d takes %" PRId64
					      " elements, the plan expected %" PRId64,
					      ax, len, out->dims[ax]);
		step[ax] = a.steps[k];
	}
	numel = cpu_numel(out);
	if (numel > 0)
		slice_copy(data, out, first, step);
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Slice", 1, 9, 1, 1, 1, 1, 0, 0, slice_infer },
	{ "", "Slice", 10, OP_OPSET_MAX, 3, 5, 1, 1, 0, 0, slice_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Slice", 1, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, slice_run },
	{ "", "Slice", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, slice_run },
};

const struct op_family op_family_cpu_slice = {
	"cpu_slice", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
