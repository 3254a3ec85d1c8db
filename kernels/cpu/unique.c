/*
 * unique.c — Unique (opset 11; bfloat16 from 28): the distinct elements of
 * the flattened input, or with `axis` the distinct slices along it, as Y,
 * with the optional outputs indices (each one's first position), inverse
 * indices (for each element or slice of X, where it went in Y) and counts.
 * Y is in ascending order (sorted = 1, the default; slices compare
 * lexicographically, element by element in row-major order) or in the
 * order of first occurrence (sorted = 0).
 *
 * Values compare as numbers: -0 equals 0 (the first one seen is kept) and
 * every NaN equals every other NaN and sorts after all numbers, as numpy's
 * unique does. Items are merge-sorted by position under that order (ties
 * by position, so each run of equal items starts with its first
 * occurrence), runs become groups, and groups are renumbered by first
 * position for sorted = 0.
 *
 * Y's extent and indices' and counts' are the number of groups: inference
 * runs the whole grouping when X's value is known and the planner settles
 * it like NonZero's (kernels/cpu/select.c); the kernel checks it against
 * the plan. inverse_indices has one entry per item of X, known from its
 * shape alone.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>
#include <stdlib.h>

/* The input as items: n of them along the axis (or every element), each
 * of outer x inner elements, element (o, i, r) at (o * n + i) * inner + r. */
struct unique_items {
	const struct op_tensor *x;
	int64_t n, outer, inner;
	bool flat;                  /* no axis: the input flattened */
	int axis;
};

/* Reads the axis of node for x (rank >= 0) into u. Fails for an axis out
 * of range or on a scalar. */
static int unique_items_init(const struct op_node *node, const struct op_tensor *x,
			     struct unique_items *u)
{
	int ret;

	memset(u, 0, sizeof(*u));
	u->x = x;
	u->flat = op_attr_find(node, "axis") == NULL;
	if (u->flat) {
		u->n = op_dims_product(x, 0, x->rank);
		u->outer = u->inner = 1;
		return 0;
	}
	ret = op_axis_normalize(node, op_attr_int(node, "axis", 0), x->rank, &u->axis);
	if (ret < 0)
		return ret;
	u->n = x->dims[u->axis];
	u->outer = op_dims_product(x, 0, u->axis);
	u->inner = op_dims_product(x, u->axis + 1, x->rank);
	return 0;
}

/* Element e of x compared with element f: -1, 0, 1, NaN after numbers and
 * equal to NaN. Floats compare as doubles (exact for every float type),
 * integers in their own order (uint64 as unsigned). */
static int unique_cmp_elem(const struct op_tensor *x, int64_t e, int64_t f)
{
	cep_dtype t = x->dtype;

	if (cpu_is_float(t)) {
		double a = cpu_load_d(x->data, t, e), b = cpu_load_d(x->data, t, f);
		bool na = a != a, nb = b != b;

		if (na || nb)
			return na == nb ? 0 : na ? 1 : -1;
		return a < b ? -1 : a > b ? 1 : 0;
	} else {
		int64_t a = cpu_load_i(x->data, t, e), b = cpu_load_i(x->data, t, f);

		return cpu_lt_i(t, a, b) ? -1 : cpu_lt_i(t, b, a) ? 1 : 0;
	}
}

/* Item a compared with item b, lexicographically. */
static int unique_cmp(const struct unique_items *u, int64_t a, int64_t b)
{
	int64_t o, r;
	int c;

	for (o = 0; o < u->outer; o++) {
		for (r = 0; r < u->inner; r++) {
			c = unique_cmp_elem(u->x, (o * u->n + a) * u->inner + r,
					    (o * u->n + b) * u->inner + r);
			if (c != 0)
				return c;
		}
	}
	return 0;
}

/* Sorts the item numbers pos[0..n) stably, bottom-up through tmp; returns
 * the array holding the result. */
static int64_t *unique_sort(const struct unique_items *u, int64_t *pos, int64_t *tmp)
{
	int64_t n = u->n, w, lo, *src = pos, *dst = tmp, *t;

	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = unique_cmp(u, src[b], src[a]) < 0 ? src[b++] : src[a++];
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

/* The grouping of the items: group g (in output order) is item first[g]
 * and count[g] items in all; item i went to group inverse[i]. */
struct unique_groups {
	int64_t count_groups;
	int64_t *first, *count, *inverse; /* (count_groups), (count_groups), (n) */
	int64_t *scratch;                 /* what they point into */
};

static void unique_groups_free(struct unique_groups *g)
{
	free(g->scratch);
}

/* Groups the items of u, ordered by value (sorted) or by first position. */
static int unique_group(const struct unique_items *u, bool sorted, struct unique_groups *g)
{
	int64_t n = u->n, i, k, *pos, *tmp, *order, *rank;

	memset(g, 0, sizeof(*g));
	/* pos, tmp, first, count, inverse, rank: n each. */
	g->scratch = malloc((size_t)(n > 0 ? n : 1) * 6 * sizeof(int64_t));
	if (!g->scratch)
		return cep__set_error(CEP_ENOMEM, "Unique: out of memory for %" PRId64 " items", n);
	pos = g->scratch;
	tmp = pos + n;
	g->first = tmp + n;
	g->count = g->first + n;
	g->inverse = g->count + n;
	rank = g->inverse + n;
	for (i = 0; i < n; i++)
		pos[i] = i;
	order = unique_sort(u, pos, tmp);
	for (k = 0; k < n; k++) {
		if (k == 0 || unique_cmp(u, order[k - 1], order[k]) != 0) {
			g->first[g->count_groups] = order[k];
			g->count[g->count_groups++] = 0;
		}
		g->count[g->count_groups - 1]++;
		g->inverse[order[k]] = g->count_groups - 1;
	}
	if (sorted)
		return 0;
	/* Renumber the groups by first position, in one pass over the items:
	 * rank marks each group's first item, tmp maps old numbers to new. */
	for (i = 0; i < n; i++)
		rank[i] = -1;
	for (k = 0; k < g->count_groups; k++)
		rank[g->first[k]] = k;
	for (i = 0, k = 0; i < n; i++) {
		if (rank[i] >= 0)
			tmp[rank[i]] = k++;
	}
	for (k = 0; k < g->count_groups; k++) {
		pos[tmp[k]] = g->first[k];
		rank[tmp[k]] = g->count[k];
	}
	memcpy(g->first, pos, sizeof(int64_t) * (size_t)g->count_groups);
	memcpy(g->count, rank, sizeof(int64_t) * (size_t)g->count_groups);
	for (i = 0; i < n; i++)
		g->inverse[i] = tmp[g->inverse[i]];
	return 0;
}

/* ---------------------------------------------------------------- operator */

static int unique_check(const struct op_node *node, const struct op_tensor *x)
{
	int64_t s;
	int ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "sorted", OP_ATTR_INT)) < 0)
		return ret;
	s = op_attr_int(node, "sorted", 1);
	if (s != 0 && s != 1)
		return cep__set_error(CEP_EMODEL, "Unique: sorted is %" PRId64 ", must be 0 or 1", s);
	if (x->rank == 0 && op_attr_find(node, "axis"))
		return cep__set_error(CEP_ESHAPE, "Unique: a scalar has no axis");
	return 0;
}

static int unique_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct unique_items u;
	struct unique_groups g;
	int64_t groups = OP_DIM_UNKNOWN, numel;
	int i, ret;

	x->out[0].dtype = in->dtype;
	x->out[0].rank = -1;
	for (i = 1; i < x->n_out; i++) {
		x->out[i].dtype = CEP_DTYPE_INT64;
		x->out[i].rank = 1;
		x->out[i].dims[0] = OP_DIM_UNKNOWN;
	}
	ret = unique_check(x->node, in);
	if (ret < 0 || in->rank < 0)
		return ret;
	if (op_attr_find(x->node, "axis")) {
		int axis;

		ret = op_axis_normalize(x->node, op_attr_int(x->node, "axis", 0), in->rank, &axis);
		if (ret < 0)
			return ret;
		x->out[0] = *in;
		x->out[0].data = NULL;
		x->out[0].dims[axis] = OP_DIM_UNKNOWN;
		if (x->n_out > 2)
			x->out[2].dims[0] = in->dims[axis];
	} else {
		x->out[0].rank = 1;
		x->out[0].dims[0] = OP_DIM_UNKNOWN;
		if (x->n_out > 2 && op_tensor_numel(in, &numel) == 0)
			x->out[2].dims[0] = numel;
	}
	if (!in->data || op_tensor_numel(in, &numel) != 0)
		return 0;
	ret = unique_items_init(x->node, in, &u);
	if (ret == 0)
		ret = unique_group(&u, op_attr_int(x->node, "sorted", 1) != 0, &g);
	if (ret < 0)
		return ret;
	groups = g.count_groups;
	unique_groups_free(&g);
	x->out[0].dims[u.flat ? 0 : u.axis] = groups;
	if (x->n_out > 1)
		x->out[1].dims[0] = groups;
	if (x->n_out > 3)
		x->out[3].dims[0] = groups;
	return 0;
}

/* Output i of c when the model names it, else NULL. */
static int64_t *unique_out(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) ? c->out[i].data : NULL;
}

static int unique_run(struct op_call *c)
{
	const struct op_tensor *x = &c->in[0], *yt = &c->out[0];
	size_t es = cep_dtype_size(x->dtype);
	int64_t *indices = unique_out(c, 1), *inverse = unique_out(c, 2), *counts = unique_out(c, 3);
	struct unique_items u;
	struct unique_groups g;
	int64_t o, q, r, at = 0;
	int ret;

	ret = unique_items_init(c->node, x, &u);
	if (ret == 0)
		ret = unique_group(&u, op_attr_int(c->node, "sorted", 1) != 0, &g);
	if (ret < 0)
		return ret;
	if (g.count_groups != yt->dims[u.flat ? 0 : u.axis]) {
		ret = cep__set_error(CEP_EINVAL, "Unique: the input has %" PRId64 " distinct items, "
				     "the plan expected %" PRId64, g.count_groups,
				     yt->dims[u.flat ? 0 : u.axis]);
		goto out;
	}
	for (o = 0; o < u.outer; o++) {
		for (q = 0; q < g.count_groups; q++) {
			for (r = 0; r < u.inner; r++)
				shapeops_elem_copy(yt->data, at++, x->data,
						   (o * u.n + g.first[q]) * u.inner + r, es);
		}
	}
	if (indices)
		memcpy(indices, g.first, sizeof(int64_t) * (size_t)g.count_groups);
	if (counts)
		memcpy(counts, g.count, sizeof(int64_t) * (size_t)g.count_groups);
	if (inverse)
		memcpy(inverse, g.inverse, sizeof(int64_t) * (size_t)u.n);
	ret = 0;
out:
	unique_groups_free(&g);
	return ret;
}

static const struct op_schema schemas[] = {
	{ "", "Unique", 11, OP_OPSET_MAX, 1, 1, 1, 4, 0, 0, unique_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Unique", 11, 27, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, unique_run },
	{ "", "Unique", 28, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, unique_run },
};

const struct op_family op_family_cpu_unique = {
	"cpu_unique", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
