/*
 * argmax.c — ArgMax and ArgMin: the int64 index of the largest (smallest)
 * element along `axis`, the dimension kept as 1 or dropped (keepdims).
 * From opset 12, select_last_index picks the last of equal elements
 * instead of the first. A NaN counts as larger and as smaller than
 * anything, as in numpy, so the first (or last) NaN is the answer when
 * there is one. An empty axis has no index to give and fails.
 *
 * The input is seen as (outer, n, inner) around the axis. With inner 1
 * (the last axis, the common case) each row is scanned contiguously; else
 * the n rows of inner elements are swept in memory order against a
 * running best per column kept in the workspace.
 */
#include "kernels/cpu/chunk.h"

#include <inttypes.h>

struct arg_params {
	int64_t outer, n, inner;   /* the input as (outer, n, inner) */
	bool last;                 /* select_last_index */
};

static int arg_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool keep, empty_other = false;
	int axis, i, r = 0, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "keepdims", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "select_last_index", OP_ATTR_INT)) < 0)
		return ret;
	keep = op_attr_int(node, "keepdims", 1) != 0;
	out->dtype = CEP_DTYPE_INT64;
	if (in->rank < 0) {
		out->rank = -1;
		return 0;
	}
	ret = op_axis_normalize(node, op_attr_int(node, "axis", 0), in->rank, &axis);
	if (ret < 0)
		return ret;
	for (i = 0; i < in->rank; i++) {
		if (i != axis && in->dims[i] == 0)
			empty_other = true;
	}
	if (in->dims[axis] == 0 && !empty_other)
		return cep__set_error(CEP_ESHAPE, "%s: dimension %d (the axis) is empty, there is no index to return",
				      node->op_type, axis);
	for (i = 0; i < in->rank; i++) {
		if (i != axis)
			out->dims[r++] = in->dims[i];
		else if (keep)
			out->dims[r++] = 1;
	}
	out->rank = r;
	return 0;
}

static int arg_prepare(struct op_call *c, size_t *workspace)
{
	struct arg_params *p = (struct arg_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	int axis, ret;

	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), in->rank, &axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(in, 0, axis);
	p->n = in->dims[axis];
	p->inner = op_dims_product(in, axis + 1, in->rank);
	p->last = c->node->opset >= 12 && op_attr_int(c->node, "select_last_index", 0) != 0;
	if (p->n == 0 && p->outer * p->inner > 0)
		return cep__set_error(CEP_ESHAPE, "%s: dimension %d (the axis) is empty, there is no index to return",
				      c->node->op_type, axis);
	/* The running best of each column, when columns are swept. */
	*workspace = p->inner > 1 ? (size_t)p->inner * sizeof(double) : 0;
	return 0;
}

/* Whether v replaces the best b so far, for ArgMax (max) or ArgMin, taking
 * the first (ties keep b) or the last (ties replace b) of equals. */
static inline bool arg_better_d(double v, double b, bool max, bool last)
{
	if (v != v)
		return last || b == b;
	if (last)
		return max ? v >= b : v <= b;
	return max ? v > b : v < b;
}

static inline bool arg_better_i(int64_t v, int64_t b, bool max, bool last)
{
	if (last)
		return max ? v >= b : v <= b;
	return max ? v > b : v < b;
}

/* One contiguous row of n elements from at: the index of its best. */
static int64_t arg_row(const struct op_tensor *in, int64_t at, int64_t n, bool max, bool last)
{
	double bd[CHUNK_N], best_d = 0.0;
	int64_t bi[CHUNK_N], best_i = 0, best = 0, k0;
	bool integer = !cpu_is_float(in->dtype);
	int j;

	for (k0 = 0; k0 < n; k0 += CHUNK_N) {
		int cnt = n - k0 < CHUNK_N ? (int)(n - k0) : CHUNK_N;

		if (integer) {
			chunk_load_i(in->data, in->dtype, at + k0, cnt, bi);
			for (j = 0; j < cnt; j++)
				bi[j] = cpu_order_key(in->dtype, bi[j]);
			if (k0 == 0)
				best_i = bi[0];
			for (j = k0 == 0; j < cnt; j++) {
				if (arg_better_i(bi[j], best_i, max, last)) {
					best_i = bi[j];
					best = k0 + j;
				}
			}
		} else {
			chunk_load_d(in->data, in->dtype, at + k0, cnt, bd);
			if (k0 == 0)
				best_d = bd[0];
			for (j = k0 == 0; j < cnt; j++) {
				if (arg_better_d(bd[j], best_d, max, last)) {
					best_d = bd[j];
					best = k0 + j;
				}
			}
		}
	}
	return best;
}

/* The n rows of inner elements of block o, swept in memory order. */
static void arg_columns(const struct op_call *c, int64_t o, bool max)
{
	const struct arg_params *p = (const struct arg_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	int64_t *idx = (int64_t *)c->out[0].data + o * p->inner;
	bool integer = !cpu_is_float(in->dtype);
	double *best_d = c->workspace, bd[CHUNK_N];
	int64_t *best_i = c->workspace, bi[CHUNK_N], k, j0;
	int j;

	for (k = 0; k < p->n; k++) {
		for (j0 = 0; j0 < p->inner; j0 += CHUNK_N) {
			int cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
			int64_t at = (o * p->n + k) * p->inner + j0;

			if (integer) {
				chunk_load_i(in->data, in->dtype, at, cnt, bi);
				for (j = 0; j < cnt; j++) {
					bi[j] = cpu_order_key(in->dtype, bi[j]);
					if (k == 0 || arg_better_i(bi[j], best_i[j0 + j], max, p->last)) {
						best_i[j0 + j] = bi[j];
						idx[j0 + j] = k;
					}
				}
			} else {
				chunk_load_d(in->data, in->dtype, at, cnt, bd);
				for (j = 0; j < cnt; j++) {
					if (k == 0 || arg_better_d(bd[j], best_d[j0 + j], max, p->last)) {
						best_d[j0 + j] = bd[j];
						idx[j0 + j] = k;
					}
				}
			}
		}
	}
}

static int arg_run(struct op_call *c, bool max)
{
	const struct arg_params *p = (const struct arg_params *)c->params;
	int64_t *idx = c->out[0].data;
	int64_t o;

	if (p->outer * p->inner == 0)
		return 0;
	if (p->n == 0)
		return cep__set_error(CEP_ESHAPE, "%s: the axis is empty, there is no index to return",
				      c->node->op_type);
	if (p->inner > 1 && c->workspace_bytes < (size_t)p->inner * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "%s: the workspace is too small",
				      c->node->op_type);
	for (o = 0; o < p->outer; o++) {
		if (p->inner == 1)
			idx[o] = arg_row(&c->in[0], o * p->n, p->n, max, p->last);
		else
			arg_columns(c, o, max);
	}
	return 0;
}

static int argmax_run(struct op_call *c) { return arg_run(c, true); }
static int argmin_run(struct op_call *c) { return arg_run(c, false); }

/* The types of the opset 1-12 definitions; bfloat16 came at 13. */
#define ARG_DTS_7 ((OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16)) | OP_DTS_INT)
#define ARG_DTS_13 (ARG_DTS_7 | OP_DT(CEP_DTYPE_BFLOAT16))

/* select_last_index arrived at 12. */
static const struct op_schema schemas[] = {
	{ "", "ArgMax", 1, 11, 1, 1, 1, 1, 0, 0, arg_infer },
	{ "", "ArgMax", 12, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, arg_infer },
	{ "", "ArgMin", 1, 11, 1, 1, 1, 1, 0, 0, arg_infer },
	{ "", "ArgMin", 12, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, arg_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "ArgMax", 1, 12, BACKEND_HOST, ARG_DTS_7, arg_prepare, argmax_run },
	{ "", "ArgMax", 13, OP_OPSET_MAX, BACKEND_HOST, ARG_DTS_13, arg_prepare, argmax_run },
	{ "", "ArgMin", 1, 12, BACKEND_HOST, ARG_DTS_7, arg_prepare, argmin_run },
	{ "", "ArgMin", 13, OP_OPSET_MAX, BACKEND_HOST, ARG_DTS_13, arg_prepare, argmin_run },
};

const struct op_family op_family_cpu_argmax = {
	"cpu_argmax", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
