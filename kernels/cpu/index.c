/*
 * index.c — the operators that read or write data at places an index
 * tensor gives, as the ONNX specification defines them:
 *
 *   GatherND         opset 11; batch_dims from 12; bfloat16 from 13
 *   ScatterND        opset 11; reduction add and mul from 16, max and min
 *                    from 18; bfloat16 from 13
 *   ScatterElements  opset 11; the same reductions by opset
 *   Scatter          opsets 9 and 10: ScatterElements without reduction
 *                    under its old name (deprecated by 11)
 *
 * Indices may be negative (counting from the end of their dimension); one
 * out of range fails the run with "ScatterND: index 9 is out of range for
 * dimension 1 of size 4", the words of every backend (gpu/backend.c).
 *
 * Duplicate indices: a scatter applies its updates in the order of the
 * update tensor's elements (row-major), so with reduction none the last
 * update in that order wins, and a reduction folds them into the element
 * in that order. The specification leaves the order undefined; cudaep
 * fixes it, and its device kernels keep the same order
 * (kernels/cuda/index.cu), so both backends give the same bits.
 *
 * Reductions compute as the other reference kernels do: float16 and
 * bfloat16 in float32 (rounded back after each update), integers in int64
 * wrapping to their width, bool as 0 and 1 (add is or, mul is and).
 */
#include "kernels/cpu/index.h"
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* -------------------------------------------------------------- shared */

static const char *const red_names[] = { "none", "add", "mul", "max", "min" };

const char *cpu_index_red_name(enum cpu_index_red red)
{
	return (unsigned)red < sizeof(red_names) / sizeof(red_names[0]) ? red_names[red] : "?";
}

int cpu_index_red_get(const struct op_node *node, enum cpu_index_red *red)
{
	const char *s;
	int ret, i;

	*red = CPU_INDEX_RED_NONE;
	ret = op_attr_check(node, "reduction", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, "reduction", "none");
	for (i = 0; i < (int)(sizeof(red_names) / sizeof(red_names[0])); i++) {
		if (strcmp(s, red_names[i]) == 0)
			break;
	}
	if (i == (int)(sizeof(red_names) / sizeof(red_names[0])))
		return cep__set_error(CEP_EMODEL, "%s: reduction \"%s\" is not one of none, add, "
				      "mul, max, min", node->op_type, s);
	if ((i != CPU_INDEX_RED_NONE && node->opset < 16) ||
	    ((i == CPU_INDEX_RED_MAX || i == CPU_INDEX_RED_MIN) && node->opset < 18))
		return cep__set_error(CEP_EMODEL, "%s: reduction %s needs opset %d (the model "
				      "has %d)", node->op_type, s, i >= CPU_INDEX_RED_MAX ? 18 : 16,
				      node->opset);
	*red = (enum cpu_index_red)i;
	return 0;
}

void cpu_index_nd_init(struct cpu_index_nd *g, const struct op_tensor *data,
		       const struct op_tensor *idx, int first)
{
	int64_t s = 1;
	int d;

	memset(g, 0, sizeof(*g));
	g->first = first;
	g->k = (int)idx->dims[idx->rank - 1];
	g->batch = op_dims_product(data, 0, first);
	g->tuples = op_dims_product(idx, first, idx->rank - 1);
	g->slice = op_dims_product(data, first + g->k, data->rank);
	for (d = g->k - 1; d >= 0; d--) {
		g->dims[d] = data->dims[first + d];
		g->stride[d] = s;
		s *= g->dims[d];
	}
}

/* Reads index tuple t (its k entries) of idx, checks each against its
 * dimension and stores in *slice which slice of its batch it picks.
 * Returns 0, or CEP_EINVAL naming the entry out of range. */
static int tuple_slice(const struct op_node *node, const struct cpu_index_nd *g,
		       const int64_t *idx, int64_t t, int64_t *slice)
{
	int64_t at = 0;
	int d;

	for (d = 0; d < g->k; d++) {
		int64_t v = idx[t * g->k + d], dim = g->dims[d];

		if (v < -dim || v >= dim)
			return cep__set_error(CEP_EINVAL, "%s: index %" PRId64 " is out of range for "
					      "dimension %d of size %" PRId64, node->op_type, v,
					      g->first + d, dim);
		if (v < 0)
			v += dim;
		at += v * g->stride[d];
	}
	*slice = at;
	return 0;
}

/* Combines update element ui of upd into element oi of out (both of
 * dtype, es bytes each). */
static void combine(void *out, int64_t oi, const void *upd, int64_t ui, cep_dtype dtype,
		    size_t es, enum cpu_index_red red)
{
	if (red == CPU_INDEX_RED_NONE) {
		shapeops_elem_copy(out, oi, upd, ui, es);
	} else if (dtype == CEP_DTYPE_FLOAT64) {
		double a = cpu_load_d(out, dtype, oi), b = cpu_load_d(upd, dtype, ui), r;

		switch (red) {
		case CPU_INDEX_RED_ADD: r = a + b; break;
		case CPU_INDEX_RED_MUL: r = a * b; break;
		case CPU_INDEX_RED_MAX: r = (a != a || a > b) ? a : b; break;
		default: r = (a != a || a < b) ? a : b; break;
		}
		cpu_store_d(out, dtype, oi, r);
	} else if (cpu_is_float(dtype)) {
		float a = cpu_load_f(out, dtype, oi), b = cpu_load_f(upd, dtype, ui), r;

		switch (red) {
		case CPU_INDEX_RED_ADD: r = a + b; break;
		case CPU_INDEX_RED_MUL: r = a * b; break;
		case CPU_INDEX_RED_MAX: r = (a != a || a > b) ? a : b; break;
		default: r = (a != a || a < b) ? a : b; break;
		}
		cpu_store_f(out, dtype, oi, r);
	} else {
		int64_t a = cpu_load_i(out, dtype, oi), b = cpu_load_i(upd, dtype, ui), r;

		switch (red) {
		case CPU_INDEX_RED_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
		case CPU_INDEX_RED_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
		case CPU_INDEX_RED_MAX: r = cpu_lt_i(dtype, b, a) ? a : b; break;
		default: r = cpu_lt_i(dtype, a, b) ? a : b; break;
		}
		cpu_store_i(out, dtype, oi, r);
	}
}

/* Checks that dimension gd of got (called gname in the message) equals
 * dimension wd of want (wname) where both are fixed. */
static int dims_agree(const struct op_node *node, const struct op_tensor *got, int gd,
		      const char *gname, const struct op_tensor *want, int wd, const char *wname)
{
	int64_t g = got->dims[gd], w = want->dims[wd];

	if (op_dim_fixed(g) && op_dim_fixed(w) && g != w)
		return cep__set_error(CEP_ESHAPE, "%s: %s have %" PRId64 " in dimension %d where "
				      "%s have %" PRId64 " in dimension %d", node->op_type, gname, g,
				      gd, wname, w, wd);
	return 0;
}

/* The dimension of both a and b: the fixed one where either is fixed. */
static int64_t dim_meet(int64_t a, int64_t b)
{
	return op_dim_fixed(a) ? a : b;
}

/* ------------------------------------------------------------ GatherND */

static int gather_nd_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0], *idx = &x->in[1];
	struct op_tensor *out = &x->out[0];
	int64_t b = cpu_index_batch_dims(x->node), k;
	int q = idx->rank, r = data->rank, d, n = 0, ret;

	out->dtype = data->dtype;
	out->rank = -1;
	if (idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "GatherND: indices are %s, not int64",
				      cep_dtype_name(idx->dtype));
	ret = op_attr_check(x->node, "batch_dims", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	if (x->node->opset < 12 && op_attr_find(x->node, "batch_dims") != NULL)
		return cep__set_error(CEP_EMODEL, "GatherND: batch_dims needs opset 12 (the "
				      "model has %d)", x->node->opset);
	if (r < 0 || q < 0)
		return 0;
	if (r < 1 || q < 1)
		return cep__set_error(CEP_ESHAPE, "GatherND: data (rank %d) and indices (rank %d) "
				      "must have rank >= 1", r, q);
	if (b < 0 || b >= r || b >= q)
		return cep__set_error(CEP_EMODEL, "GatherND: batch_dims %" PRId64 " must be >= 0 "
				      "and below the ranks of data (%d) and indices (%d)", b, r, q);
	for (d = 0; d < b; d++) {
		ret = dims_agree(x->node, idx, d, "indices", data, d, "data");
		if (ret < 0)
			return ret;
	}
	k = idx->dims[q - 1];
	if (!op_dim_fixed(k))
		return 0; /* the output's rank depends on it */
	if (k < 1 || k > r - b)
		return cep__set_error(CEP_ESHAPE, "GatherND: index tuples have %" PRId64 " entries; "
				      "data of rank %d with batch_dims %" PRId64 " takes 1 to %" PRId64,
				      k, r, b, r - b);
	if (q - 1 + r - k - b > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "GatherND: rank %" PRId64 " is above %d",
				      q - 1 + r - k - b, CEP_MAX_RANK);
	for (d = 0; d < b; d++)
		out->dims[n++] = dim_meet(data->dims[d], idx->dims[d]);
	for (d = (int)b; d < q - 1; d++)
		out->dims[n++] = idx->dims[d];
	for (d = (int)(b + k); d < r; d++)
		out->dims[n++] = data->dims[d];
	out->rank = n;
	return 0;
}

static int gather_nd_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	size_t es = cep_dtype_size(data->dtype);
	const unsigned char *src = data->data;
	unsigned char *dst = c->out[0].data;
	struct cpu_index_nd g;
	int64_t bt, t, per_batch;
	int ret;

	cpu_index_nd_init(&g, data, idx, (int)cpu_index_batch_dims(c->node));
	per_batch = op_dims_product(data, g.first, data->rank);
	for (bt = 0; bt < g.batch; bt++) {
		for (t = 0; t < g.tuples; t++) {
			int64_t s, at = bt * g.tuples + t;

			ret = tuple_slice(c->node, &g, idx->data, at, &s);
			if (ret < 0)
				return ret;
			memcpy(dst + (size_t)(at * g.slice) * es,
			       src + (size_t)(bt * per_batch + s * g.slice) * es, (size_t)g.slice * es);
		}
	}
	return 0;
}

/* ----------------------------------------------------------- ScatterND */

static int scatter_nd_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0], *idx = &x->in[1], *upd = &x->in[2];
	enum cpu_index_red red;
	int q = idx->rank, r = data->rank, d, ret;
	int64_t k;

	ret = op_infer_like_input(x);
	if (ret < 0)
		return ret;
	ret = cpu_index_red_get(x->node, &red);
	if (ret < 0)
		return ret;
	if (idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "ScatterND: indices are %s, not int64",
				      cep_dtype_name(idx->dtype));
	if (upd->dtype != data->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: updates are %s but data is %s",
				      x->node->op_type, cep_dtype_name(upd->dtype),
				      cep_dtype_name(data->dtype));
	if (r < 0 || q < 0)
		return 0;
	if (r < 1 || q < 1)
		return cep__set_error(CEP_ESHAPE, "ScatterND: data (rank %d) and indices (rank %d) "
				      "must have rank >= 1", r, q);
	k = idx->dims[q - 1];
	if (!op_dim_fixed(k))
		return 0;
	if (k < 1 || k > r)
		return cep__set_error(CEP_ESHAPE, "ScatterND: index tuples have %" PRId64 " entries;"
				      " data of rank %d takes 1 to %d", k, r, r);
	if (upd->rank < 0)
		return 0;
	if (upd->rank != q - 1 + r - k)
		return cep__set_error(CEP_ESHAPE, "ScatterND: updates have rank %d, not %" PRId64
				      " (indices' %d - 1, plus data's %d - %" PRId64 ")", upd->rank,
				      q - 1 + r - k, q, r, k);
	for (d = 0; d < q - 1; d++) {
		ret = dims_agree(x->node, upd, d, "updates", idx, d, "indices");
		if (ret < 0)
			return ret;
	}
	for (d = (int)k; d < r; d++) {
		ret = dims_agree(x->node, upd, q - 1 + d - (int)k, "updates", data, d, "data");
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int scatter_nd_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1], *upd = &c->in[2];
	size_t es = cep_dtype_size(data->dtype);
	enum cpu_index_red red;
	struct cpu_index_nd g;
	int64_t t, j;
	int ret;

	ret = cpu_index_red_get(c->node, &red);
	if (ret < 0)
		return ret;
	memcpy(c->out[0].data, data->data, op_tensor_bytes(data));
	cpu_index_nd_init(&g, data, idx, 0);
	for (t = 0; t < g.tuples; t++) {
		int64_t s;

		ret = tuple_slice(c->node, &g, idx->data, t, &s);
		if (ret < 0)
			return ret;
		for (j = 0; j < g.slice; j++)
			combine(c->out[0].data, s * g.slice + j, upd->data, t * g.slice + j,
				data->dtype, es, red);
	}
	return 0;
}

/* ----------------------------------------------- ScatterElements, Scatter */

static int scatter_elements_infer(struct op_infer *x)
{
	const struct op_tensor *data = &x->in[0], *idx = &x->in[1], *upd = &x->in[2];
	enum cpu_index_red red;
	int r = data->rank, axis, d, ret;

	ret = op_infer_like_input(x);
	if (ret < 0)
		return ret;
	ret = cpu_index_red_get(x->node, &red);
	if (ret < 0)
		return ret;
	if (!op_dtype_in(idx->dtype, SHAPEOPS_INDEX))
		return cep__set_error(CEP_EDTYPE, "%s: indices are %s, not int32 or int64",
				      x->node->op_type, cep_dtype_name(idx->dtype));
	if (upd->dtype != data->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: updates are %s but data is %s",
				      x->node->op_type, cep_dtype_name(upd->dtype),
				      cep_dtype_name(data->dtype));
	if (r < 0)
		return 0;
	if (r == 0)
		return cep__set_error(CEP_ESHAPE, "%s: data must have rank >= 1", x->node->op_type);
	ret = op_axis_normalize(x->node, op_attr_int(x->node, "axis", 0), r, &axis);
	if (ret < 0)
		return ret;
	if ((idx->rank >= 0 && idx->rank != r) || (upd->rank >= 0 && upd->rank != r))
		return cep__set_error(CEP_ESHAPE, "%s: data, indices and updates must have one "
				      "rank, not %d, %d and %d", x->node->op_type, r, idx->rank,
				      upd->rank);
	if (idx->rank < 0 || upd->rank < 0)
		return 0;
	for (d = 0; d < r; d++) {
		ret = dims_agree(x->node, upd, d, "updates", idx, d, "indices");
		if (ret < 0)
			return ret;
		if (d != axis && op_dim_fixed(idx->dims[d]) && op_dim_fixed(data->dims[d]) &&
		    idx->dims[d] > data->dims[d])
			return cep__set_error(CEP_ESHAPE, "%s: indices have %" PRId64 " in dimension "
					      "%d, data only %" PRId64, x->node->op_type,
					      idx->dims[d], d, data->dims[d]);
	}
	return 0;
}

/* Walks the updates in row-major order; each lands at its own coordinates
 * with the one along the axis replaced by its index. */
static int scatter_elements_run(struct op_call *c)
{
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1], *upd = &c->in[2];
	size_t es = cep_dtype_size(data->dtype);
	int64_t stride[CEP_MAX_RANK], pos[CEP_MAX_RANK] = { 0 };
	int64_t s = 1, n = cpu_numel(upd), at, dim;
	enum cpu_index_red red;
	int r = data->rank, axis, d, ret;

	ret = cpu_index_red_get(c->node, &red);
	if (ret < 0)
		return ret;
	op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), r, &axis);
	memcpy(c->out[0].data, data->data, op_tensor_bytes(data));
	for (d = r - 1; d >= 0; d--) {
		stride[d] = s;
		s *= data->dims[d];
	}
	dim = data->dims[axis];
	for (at = 0; at < n; at++) {
		int64_t i = cpu_load_i(idx->data, idx->dtype, at), off = 0;

		if (i < -dim || i >= dim)
			return cep__set_error(CEP_EINVAL, "%s: index %" PRId64 " is out of range for "
					      "dimension %d of size %" PRId64, c->node->op_type, i,
					      axis, dim);
		if (i < 0)
			i += dim;
		for (d = 0; d < r; d++)
			off += (d == axis ? i : pos[d]) * stride[d];
		combine(c->out[0].data, off, upd->data, at, data->dtype, es, red);
		for (d = r - 1; d >= 0; d--) {
			if (++pos[d] < upd->dims[d])
				break;
			pos[d] = 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------------- tables */

static const struct op_schema schemas[] = {
	{ "", "GatherND", 11, 11, 2, 2, 1, 1, 0, 0, gather_nd_infer },
	{ "", "GatherND", 12, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, gather_nd_infer },
	/* 16 brought reduction add and mul, 18 max and min. */
	{ "", "ScatterND", 11, 15, 3, 3, 1, 1, 0, 0, scatter_nd_infer },
	{ "", "ScatterND", 16, 17, 3, 3, 1, 1, 0, 0, scatter_nd_infer },
	{ "", "ScatterND", 18, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, scatter_nd_infer },
	{ "", "ScatterElements", 11, 15, 3, 3, 1, 1, 0, 0, scatter_elements_infer },
	{ "", "ScatterElements", 16, 17, 3, 3, 1, 1, 0, 0, scatter_elements_infer },
	{ "", "ScatterElements", 18, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, scatter_elements_infer },
	/* Deprecated by 11, where ScatterElements took its place. */
	{ "", "Scatter", 9, 10, 3, 3, 1, 1, 0, 0, scatter_elements_infer },
};

/* bfloat16 joined each operator's types at opset 13. */
static const struct op_kernel kernels[] = {
	{ "", "GatherND", 11, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, gather_nd_run },
	{ "", "GatherND", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, gather_nd_run },
	{ "", "ScatterND", 11, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, scatter_nd_run },
	{ "", "ScatterND", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, scatter_nd_run },
	{ "", "ScatterElements", 11, 12, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL,
	  scatter_elements_run },
	{ "", "ScatterElements", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL,
	  scatter_elements_run },
	{ "", "Scatter", 9, 10, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, scatter_elements_run },
};

const struct op_family op_family_cpu_index = {
	"cpu_index", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
