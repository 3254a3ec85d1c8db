/*
 * topk.c — TopK (opset 1: k an attribute; 10: k an int64 input holding one
 * value; 11: `largest` and `sorted`; integer types from 11, bfloat16 from
 * 24): the k largest (or smallest) elements along `axis` (default -1) and
 * their int64 indices, in order, ties going to the lower index first as
 * the specification says. A NaN counts as larger than every number, as in
 * numpy's sort, so it comes first among the largest and last among the
 * smallest. With sorted = 0 the order is left to the implementation; this
 * one gives the sorted order anyway, and so does the CUDA kernel.
 *
 * The outputs' shape depends on k: inference computes it when k is known
 * (an attribute, a constant, or a value the planner learnt from the run)
 * and the kernel checks it against the plan. Each column (the elements
 * along the axis at fixed other coordinates) is merge-sorted by position
 * in the workspace under that total order; values move as raw units of
 * their size.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* Reads k into *k (-1 while it is not known): the attribute before opset
 * 10, else the value of input 1 when inference or the run has it. Fails
 * for a missing attribute or a K input that is not one int64. */
static int topk_k(const struct op_node *node, const struct op_tensor *in, int n_in,
		  int64_t *k)
{
	int64_t n;
	int ret;

	*k = -1;
	if (node->opset < 10) {
		if ((ret = op_attr_check(node, "k", OP_ATTR_INT)) < 0)
			return ret;
		if (op_attr_find(node, "k") == NULL)
			return cep__set_error(CEP_EMODEL, "TopK: the k attribute is required before opset 10");
		*k = op_attr_int(node, "k", -1);
		if (*k < 0)
			return cep__set_error(CEP_EMODEL, "TopK: k is %" PRId64 ", it must not be negative",
					      *k);
		return 0;
	}
	if (n_in < 2 || !op_tensor_present(&in[1]))
		return cep__set_error(CEP_EMODEL, "TopK: the K input is required from opset 10");
	if (in[1].dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "TopK: K is %s, not int64", cep_dtype_name(in[1].dtype));
	/* The specification says 1-D of one value; a scalar is taken too. */
	if (op_tensor_numel(&in[1], &n) == 0 && (n != 1 || in[1].rank > 1))
		return cep__set_error(CEP_ESHAPE, "TopK: K must hold one value, it has %" PRId64
				      " elements in rank %d", n, in[1].rank);
	if (in[1].data == NULL || in[1].rank < 0)
		return 0;
	*k = shapeops_at(&in[1], 0);
	if (*k < 0)
		return cep__set_error(CEP_EINVAL, "TopK: k is %" PRId64 ", it must not be negative", *k);
	return 0;
}

static int topk_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	int64_t k;
	int axis, i, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "largest", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "sorted", OP_ATTR_INT)) < 0)
		return ret;
	for (i = 0; i < x->n_out; i++) {
		x->out[i].dtype = i == 0 ? in->dtype : CEP_DTYPE_INT64;
		x->out[i].rank = -1;
	}
	ret = topk_k(node, x->in, x->n_in, &k);
	if (ret < 0 || in->rank < 0)
		return ret;
	ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), in->rank, &axis);
	if (ret < 0)
		return ret;
	if (k >= 0 && op_dim_fixed(in->dims[axis]) && k > in->dims[axis])
		return cep__set_error(CEP_EINVAL, "TopK: k is %" PRId64 ", more than the %" PRId64
				      " elements along axis %d", k, in->dims[axis], axis);
	for (i = 0; i < x->n_out; i++) {
		x->out[i].rank = in->rank;
		memcpy(x->out[i].dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
		x->out[i].dims[axis] = k >= 0 ? k : OP_DIM_UNKNOWN;
	}
	return 0;
}

/* ------------------------------------------------------------------ kernel */

struct topk_params {
	int64_t outer, n, inner;   /* the input as (outer, n, inner) */
	int64_t k;                 /* the plan's */
	int axis;
	bool largest;
};

/* The output whose shape gives the plan's k: the first one present. */
static const struct op_tensor *topk_planned(const struct op_call *c)
{
	int i;

	for (i = 0; i < c->n_out; i++) {
		if (op_tensor_present(&c->out[i]) && c->out[i].rank == c->in[0].rank)
			return &c->out[i];
	}
	return NULL;
}

static int topk_prepare(struct op_call *c, size_t *workspace)
{
	struct topk_params *p = (struct topk_params *)c->params;
	const struct op_tensor *in = &c->in[0], *planned = topk_planned(c);
	int ret;

	*workspace = 0;
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", -1), in->rank, &p->axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(in, 0, p->axis);
	p->n = in->dims[p->axis];
	p->inner = op_dims_product(in, p->axis + 1, in->rank);
	p->k = planned ? planned->dims[p->axis] : 0;
	p->largest = c->node->opset < 11 || op_attr_int(c->node, "largest", 1) != 0;
	if (p->k > p->n)
		return cep__set_error(CEP_EINVAL, "TopK: k is %" PRId64 ", more than the %" PRId64
				      " elements along axis %d", p->k, p->n, p->axis);
	/* A column's positions, their merge buffer and its keys. */
	if (p->k > 0 && p->outer * p->inner > 0)
		*workspace = (size_t)p->n * 3 * sizeof(int64_t);
	return 0;
}

/* A column's elements, as the sort compares them. */
union topk_key {
	double f;
	int64_t i;
};

/* Whether element a (position ia) goes before element b (position ib). */
static bool topk_before(const union topk_key *key, bool fl, bool largest, int64_t ia,
			int64_t ib)
{
	if (fl) {
		double a = key[ia].f, b = key[ib].f;
		bool na = a != a, nb = b != b;

		if (na || nb)
			return na && nb ? ia < ib : largest ? na : nb;
		if (a != b)
			return largest ? a > b : a < b;
	} else {
		int64_t a = key[ia].i, b = key[ib].i;

		if (a != b)
			return largest ? a > b : a < b;
	}
	return ia < ib;
}

/* Sorts the positions pos[0..n) by topk_before(), bottom-up through tmp;
 * returns the array that holds the result (pos or tmp). */
static int64_t *topk_sort(int64_t *pos, int64_t *tmp, int64_t n, const union topk_key *key,
			  bool fl, bool largest)
{
	int64_t w, lo, *src = pos, *dst = tmp, *t;

	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = topk_before(key, fl, largest, src[b], src[a]) ? src[b++] : src[a++];
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

static int topk_run(struct op_call *c)
{
	const struct topk_params *p = (const struct topk_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	struct op_tensor *vals = c->out[0].data ? &c->out[0] : NULL;
	struct op_tensor *idx = c->n_out > 1 && c->out[1].data ? &c->out[1] : NULL;
	size_t es = cep_dtype_size(in->dtype);
	bool fl = cpu_is_float(in->dtype);
	int64_t k, o, j, m, *pos, *tmp, *order;
	union topk_key *key;
	int ret;

	ret = topk_k(c->node, c->in, c->n_in, &k);
	if (ret < 0)
		return ret;
	if (k != p->k)
		return cep__set_error(CEP_EINVAL, "TopK: k is %" PRId64 ", the plan expected %" PRId64,
				      k, p->k);
	if (p->k == 0 || p->outer * p->inner == 0)
		return 0;
	if (c->workspace_bytes < (size_t)p->n * 3 * sizeof(int64_t))
		return cep__set_error(CEP_EINTERNAL, "TopK: the workspace is too small");
	pos = c->workspace;
	tmp = pos + p->n;
	key = (union topk_key *)(tmp + p->n);
	for (o = 0; o < p->outer; o++) {
		for (j = 0; j < p->inner; j++) {
			int64_t base = o * p->n * p->inner + j, obase = o * p->k * p->inner + j;

			for (m = 0; m < p->n; m++) {
				pos[m] = m;
				if (fl)
					key[m].f = cpu_load_d(in->data, in->dtype, base + m * p->inner);
				else
					key[m].i = cpu_order_key(in->dtype,
								 cpu_load_i(in->data, in->dtype,
									    base + m * p->inner));
			}
			order = topk_sort(pos, tmp, p->n, key, fl, p->largest);
			for (m = 0; m < p->k; m++) {
				int64_t at = obase + m * p->inner;

				if (vals)
					shapeops_elem_copy(vals->data, at, in->data,
							   base + order[m] * p->inner, es);
				if (idx)
					((int64_t *)idx->data)[at] = order[m];
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "TopK", 1, 9, 1, 1, 1, 2, 0, 0, topk_infer },
	{ "", "TopK", 10, 10, 2, 2, 1, 2, 0, 0, topk_infer },
	{ "", "TopK", 11, OP_OPSET_MAX, 2, 2, 1, 2, 0, 0, topk_infer },
};

/* The stored types of T: the integers came at 11, bfloat16 at 24. */
#define TOPK_DTS_1 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | OP_DT(CEP_DTYPE_FLOAT64))
#define TOPK_DTS_11 (TOPK_DTS_1 | OP_DTS_INT)
#define TOPK_DTS_24 (TOPK_DTS_11 | OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "TopK", 1, 10, BACKEND_HOST, TOPK_DTS_1, topk_prepare, topk_run },
	{ "", "TopK", 11, 23, BACKEND_HOST, TOPK_DTS_11, topk_prepare, topk_run },
	{ "", "TopK", 24, OP_OPSET_MAX, BACKEND_HOST, TOPK_DTS_24, topk_prepare, topk_run },
};

const struct op_family op_family_cpu_topk = {
	"cpu_topk", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
