/*
 * reduce.c — the Reduce* operators: ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum
 * and ReduceLogSumExp, over any set of axes, with keepdims.
 *
 * Their axes were an attribute until ReduceSum's opset 13 and the others'
 * opset 18, an optional int64 input since; the input brought
 * noop_with_empty_axes, under which empty axes reduce nothing (the
 * elementwise part still applies: ReduceSumSquare squares, ReduceLogSum
 * takes the log). An empty reduction gives the operator's identity: 0 for
 * sums, 1 for the product, the lowest value of the type for ReduceMax, -inf
 * for the logs, NaN for a float mean.
 *
 * The kernel walks the input once in memory order. Dimensions of size 1
 * are dropped and neighbours that are both reduced or both kept are
 * merged, so each row of the walk either folds into one accumulator or
 * into a contiguous run of them. Accumulators live in the workspace, one
 * per output element: doubles for float types, int64 for integers (sums
 * and products wrap at the output's width as numpy's do; uint64 orders and
 * divides as unsigned). ReduceLogSumExp makes two walks, the maximum
 * first, so exp() never overflows.
 */
#include "kernels/cpu/chunk.h"

#include <inttypes.h>

enum red_op {
	RED_SUM,
	RED_MEAN,
	RED_MAX,
	RED_MIN,
	RED_PROD,
	RED_L1,
	RED_L2,
	RED_SUMSQ,
	RED_LOGSUM,
	RED_LSE,
};

/* The input walked as merged dimensions, reduced or kept. */
struct red_layout {
	int m;                          /* merged dimensions, >= 1 */
	int64_t dims[CEP_MAX_RANK];     /* (m) */
	bool red[CEP_MAX_RANK];         /* (m) whether dimension i is reduced */
	int64_t ostride[CEP_MAX_RANK];  /* (m) output elements; 0 when reduced */
	int64_t count;                  /* input elements per output element */
	int64_t out_n;                  /* output elements */
};

/* ------------------------------------------------------------------- axes */

/* The opset from which a node's axes are its input 1. */
static int reduce_axes_input_since(const struct op_node *node)
{
	return strcmp(node->op_type, "ReduceSum") == 0 ? 13 : 18;
}

/*
 * Sets mask[0..rank) to the axes that node reduces, from its attribute or
 * its input 1 (in, n_in). *known is false, and mask untouched, when the
 * input's value is not known yet; *n_axes is then the number of axes when
 * the input's shape tells it, else -1. Bad axes fail with code (CEP_EMODEL
 * while loading, CEP_EINVAL for data seen at run time).
 */
static int reduce_mask(const struct op_node *node, const struct op_tensor *in, int n_in,
		       int rank, int code, bool *mask, bool *known, int64_t *n_axes)
{
	const struct op_tensor *axes = NULL;
	const int64_t *attr = NULL;
	bool noop = false;
	int64_t n = 0, k;
	int i;

	*known = true;
	if (node->opset < reduce_axes_input_since(node)) {
		int cnt;

		attr = op_attr_ints(node, "axes", &cnt);
		n = cnt;
	} else {
		noop = op_attr_int(node, "noop_with_empty_axes", 0) != 0;
		if (n_in > 1 && op_tensor_present(&in[1])) {
			axes = &in[1];
			if (axes->rank == 0)
				n = 1;
			else if (axes->rank == 1 && op_dim_fixed(axes->dims[0]))
				n = axes->dims[0];
			else
				n = -1;
			if (n < 0 || (n > 0 && !axes->data)) {
				*known = false;
				*n_axes = n;
				return 0;
			}
		}
	}
	*n_axes = n;
	/* Empty axes reduce everything, unless noop_with_empty_axes. */
	for (i = 0; i < rank; i++)
		mask[i] = n == 0 && !noop;
	if (n > rank)
		return cep__set_error(code, "%s: %" PRId64 " axes for an input of rank %d",
				      node->op_type, n, rank);
	for (k = 0; k < n; k++) {
		int64_t a;

		if (attr)
			a = attr[k];
		else if (op_tensor_get_int(axes, k, &a) < 0)
			return cep__set_error(code, "%s: axes must be int64, not %s", node->op_type,
					      cep_dtype_name(axes->dtype));
		if (a < -rank || a >= rank)
			return cep__set_error(code, "%s: axis %" PRId64 " is out of range for rank %d",
					      node->op_type, a, rank);
		if (a < 0)
			a += rank;
		if (mask[a])
			return cep__set_error(code, "%s: axis %" PRId64 " appears twice in axes",
					      node->op_type, a);
		mask[a] = true;
	}
	return 0;
}

/* ---------------------------------------------------------------- inference */

static int reduce_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool mask[CEP_MAX_RANK], keep, known;
	int64_t n_axes;
	int i, r = 0, ret;

	if ((ret = op_attr_check(node, "keepdims", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "axes", OP_ATTR_INTS)) < 0 ||
	    (ret = op_attr_check(node, "noop_with_empty_axes", OP_ATTR_INT)) < 0)
		return ret;
	if (node->opset >= reduce_axes_input_since(node) && op_attr_find(node, "axes"))
		return cep__set_error(CEP_EMODEL, "%s: from opset %d on, axes is an input, not an attribute",
				      node->op_type, reduce_axes_input_since(node));
	if (x->n_in > 1 && op_tensor_present(&x->in[1])) {
		const struct op_tensor *axes = &x->in[1];

		if (axes->dtype != CEP_DTYPE_INT64)
			return cep__set_error(CEP_EDTYPE, "%s: axes must be int64, not %s",
					      node->op_type, cep_dtype_name(axes->dtype));
		if (axes->rank > 1)
			return cep__set_error(CEP_ESHAPE, "%s: axes must be 1-D, not of rank %d",
					      node->op_type, axes->rank);
	}
	keep = op_attr_int(node, "keepdims", 1) != 0;
	out->dtype = in->dtype;
	if (in->rank < 0) {
		out->rank = -1;
		return 0;
	}
	ret = reduce_mask(node, x->in, x->n_in, in->rank, CEP_EMODEL, mask, &known, &n_axes);
	if (ret < 0)
		return ret;
	if (!known) {
		/* Which dimensions go is not known yet; how many may be. */
		if (n_axes > in->rank)
			return cep__set_error(CEP_EMODEL, "%s: %" PRId64 " axes for an input of rank %d",
					      node->op_type, n_axes, in->rank);
		if (keep) {
			out->rank = in->rank;
			for (i = 0; i < in->rank; i++)
				out->dims[i] = in->dims[i] == 1 ? 1 : OP_DIM_UNKNOWN;
		} else if (n_axes > 0) {
			out->rank = in->rank - (int)n_axes;
			for (i = 0; i < out->rank; i++)
				out->dims[i] = OP_DIM_UNKNOWN;
		} else {
			out->rank = -1;
		}
		return 0;
	}
	for (i = 0; i < in->rank; i++) {
		if (!mask[i])
			out->dims[r++] = in->dims[i];
		else if (keep)
			out->dims[r++] = 1;
	}
	out->rank = r;
	return 0;
}

/* ------------------------------------------------------------------ layout */

static void reduce_layout(const struct op_tensor *in, const bool *mask, struct red_layout *l)
{
	int64_t stride = 1;
	int i, m = 0;

	l->count = 1;
	l->out_n = 1;
	for (i = 0; i < in->rank; i++) {
		int64_t d = in->dims[i];

		if (mask[i])
			l->count *= d;
		else
			l->out_n *= d;
		if (d == 1)
			continue;
		if (m > 0 && l->red[m - 1] == mask[i]) {
			l->dims[m - 1] *= d;
			continue;
		}
		l->dims[m] = d;
		l->red[m] = mask[i];
		m++;
	}
	if (m == 0) {
		/* A single element: one kept dimension of 1. */
		l->dims[0] = 1;
		l->red[0] = false;
		m = 1;
	}
	l->m = m;
	for (i = m - 1; i >= 0; i--) {
		l->ostride[i] = l->red[i] ? 0 : stride;
		if (!l->red[i])
			stride *= l->dims[i];
	}
}

/* ----------------------------------------------------------- accumulation */

/* Folds v[0..n) into acc[0]: a row along reduced dimensions. The sum is
 * kept in a register, not in memory, so that the loop does not wait on
 * its own stores. */
static void reduce_row_d(enum red_op op, double *acc, const double *v, int n)
{
	double a = *acc;
	int j;

	switch (op) {
	case RED_SUM:
	case RED_MEAN:
	case RED_LOGSUM:
		for (j = 0; j < n; j++)
			a += v[j];
		break;
	case RED_SUMSQ:
	case RED_L2:
		for (j = 0; j < n; j++)
			a += v[j] * v[j];
		break;
	case RED_L1:
		for (j = 0; j < n; j++)
			a += fabs(v[j]);
		break;
	case RED_PROD:
		for (j = 0; j < n; j++)
			a *= v[j];
		break;
	case RED_MAX:
	case RED_LSE:
		/* A NaN wins and then stays, as numpy's maximum does. */
		for (j = 0; j < n; j++) {
			if (v[j] > a || v[j] != v[j])
				a = v[j];
		}
		break;
	case RED_MIN:
		for (j = 0; j < n; j++) {
			if (v[j] < a || v[j] != v[j])
				a = v[j];
		}
		break;
	}
	*acc = a;
}

/* Folds v[j] into acc[j] for j in [0, n): a row along kept dimensions. */
static void reduce_cols_d(enum red_op op, double *acc, const double *v, int n)
{
	int j;

	switch (op) {
	case RED_SUM:
	case RED_MEAN:
	case RED_LOGSUM:
		for (j = 0; j < n; j++)
			acc[j] += v[j];
		break;
	case RED_SUMSQ:
	case RED_L2:
		for (j = 0; j < n; j++)
			acc[j] += v[j] * v[j];
		break;
	case RED_L1:
		for (j = 0; j < n; j++)
			acc[j] += fabs(v[j]);
		break;
	case RED_PROD:
		for (j = 0; j < n; j++)
			acc[j] *= v[j];
		break;
	case RED_MAX:
	case RED_LSE:
		for (j = 0; j < n; j++) {
			if (v[j] > acc[j] || v[j] != v[j])
				acc[j] = v[j];
		}
		break;
	case RED_MIN:
		for (j = 0; j < n; j++) {
			if (v[j] < acc[j] || v[j] != v[j])
				acc[j] = v[j];
		}
		break;
	}
}

/* The second walk of ReduceLogSumExp: sums exp(v - max) into sum[0]
 * (step 0) or sum[j] (step 1). The terms are at most 1, so for a result
 * of float32 or narrower float exp() loses nothing that the double sum
 * would keep; a float64 result (wide) takes double exp(). */
static void reduce_acc_exp(double *sum, const double *max, int64_t step, const double *v, int n,
			   bool wide)
{
	double a = *sum, m = *max;
	int j;

	if (step == 0) {
		for (j = 0; j < n; j++)
			a += wide ? exp(v[j] - m) : expf((float)(v[j] - m));
		*sum = a;
		return;
	}
	for (j = 0; j < n; j++)
		sum[j] += wide ? exp(v[j] - max[j]) : expf((float)(v[j] - max[j]));
}

/* reduce_row_d for integers of type t. Unsigned arithmetic gives the
 * wrapping the integer types have. */
static void reduce_row_i(enum red_op op, cep_dtype t, int64_t *acc, const int64_t *v, int n)
{
	bool uns = cpu_is_unsigned(t);
	uint64_t u = (uint64_t)*acc;
	int64_t a = *acc;
	int j;

	switch (op) {
	case RED_SUM:
	case RED_MEAN:
	case RED_LOGSUM:
		for (j = 0; j < n; j++)
			u += (uint64_t)v[j];
		a = (int64_t)u;
		break;
	case RED_SUMSQ:
	case RED_L2:
		for (j = 0; j < n; j++)
			u += (uint64_t)v[j] * (uint64_t)v[j];
		a = (int64_t)u;
		break;
	case RED_L1:
		for (j = 0; j < n; j++)
			u += v[j] < 0 && !uns ? -(uint64_t)v[j] : (uint64_t)v[j];
		a = (int64_t)u;
		break;
	case RED_PROD:
		for (j = 0; j < n; j++)
			u *= (uint64_t)v[j];
		a = (int64_t)u;
		break;
	case RED_MAX:
		for (j = 0; j < n; j++)
			a = cpu_lt_i(t, a, v[j]) ? v[j] : a;
		break;
	case RED_MIN:
		for (j = 0; j < n; j++)
			a = cpu_lt_i(t, v[j], a) ? v[j] : a;
		break;
	case RED_LSE:
		break; /* computed in doubles */
	}
	*acc = a;
}

/* reduce_cols_d for integers of type t. */
static void reduce_cols_i(enum red_op op, cep_dtype t, int64_t *acc, const int64_t *v, int n)
{
	uint64_t *u = (uint64_t *)acc;
	bool uns = cpu_is_unsigned(t);
	int j;

	switch (op) {
	case RED_SUM:
	case RED_MEAN:
	case RED_LOGSUM:
		for (j = 0; j < n; j++)
			u[j] += (uint64_t)v[j];
		break;
	case RED_SUMSQ:
	case RED_L2:
		for (j = 0; j < n; j++)
			u[j] += (uint64_t)v[j] * (uint64_t)v[j];
		break;
	case RED_L1:
		for (j = 0; j < n; j++)
			u[j] += v[j] < 0 && !uns ? -(uint64_t)v[j] : (uint64_t)v[j];
		break;
	case RED_PROD:
		for (j = 0; j < n; j++)
			u[j] *= (uint64_t)v[j];
		break;
	case RED_MAX:
		for (j = 0; j < n; j++)
			acc[j] = cpu_lt_i(t, acc[j], v[j]) ? v[j] : acc[j];
		break;
	case RED_MIN:
		for (j = 0; j < n; j++)
			acc[j] = cpu_lt_i(t, v[j], acc[j]) ? v[j] : acc[j];
		break;
	case RED_LSE:
		break;
	}
}

enum red_pass {
	RED_PASS_D,   /* reduce_row_d / reduce_cols_d into acc */
	RED_PASS_I,   /* reduce_row_i / reduce_cols_i into acc */
	RED_PASS_EXP, /* reduce_acc_exp into acc against max */
};

/* Walks the input once in memory order, folding each element into the
 * accumulator of its output element. */
static void reduce_walk(const struct red_layout *l, const struct op_tensor *in,
			enum red_op op, enum red_pass pass, void *acc, const double *max)
{
	int64_t idx[CEP_MAX_RANK] = { 0 };
	int64_t inner = l->dims[l->m - 1], rows, r, obase = 0, j0;
	int64_t step = l->red[l->m - 1] ? 0 : 1;
	double bd[CHUNK_N];
	int64_t bi[CHUNK_N];
	int d;

	if (l->count == 0 || l->out_n == 0)
		return;
	rows = l->count * l->out_n / inner;
	for (r = 0; r < rows; r++) {
		for (j0 = 0; j0 < inner; j0 += CHUNK_N) {
			int n = inner - j0 < CHUNK_N ? (int)(inner - j0) : CHUNK_N;
			int64_t at = r * inner + j0, o = obase + j0 * step;

			switch (pass) {
			case RED_PASS_D:
				chunk_load_d(in->data, in->dtype, at, n, bd);
				if (step == 0)
					reduce_row_d(op, (double *)acc + o, bd, n);
				else
					reduce_cols_d(op, (double *)acc + o, bd, n);
				break;
			case RED_PASS_I:
				chunk_load_i(in->data, in->dtype, at, n, bi);
				if (step == 0)
					reduce_row_i(op, in->dtype, (int64_t *)acc + o, bi, n);
				else
					reduce_cols_i(op, in->dtype, (int64_t *)acc + o, bi, n);
				break;
			case RED_PASS_EXP:
				chunk_load_d(in->data, in->dtype, at, n, bd);
				reduce_acc_exp((double *)acc + o, max + o, step, bd, n,
					       in->dtype == CEP_DTYPE_FLOAT64);
				break;
			}
		}
		for (d = l->m - 2; d >= 0; d--) {
			idx[d]++;
			obase += l->ostride[d];
			if (idx[d] < l->dims[d])
				break;
			obase -= l->ostride[d] * l->dims[d];
			idx[d] = 0;
		}
	}
}

/* ------------------------------------------------------------------ kernel */

/* The lowest and highest values of an integer type, as cpu_load_i()
 * gives them (uint64's highest is all ones). */
static int64_t int_lowest(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MIN;
	case CEP_DTYPE_INT8: return INT8_MIN;
	case CEP_DTYPE_UINT64:
	case CEP_DTYPE_UINT32:
	case CEP_DTYPE_UINT8:
	case CEP_DTYPE_BOOL: return 0;
	default: return INT64_MIN;
	}
}

static int64_t int_highest(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MAX;
	case CEP_DTYPE_INT8: return INT8_MAX;
	case CEP_DTYPE_UINT64: return (int64_t)UINT64_MAX;
	case CEP_DTYPE_UINT32: return UINT32_MAX;
	case CEP_DTYPE_UINT8: return UINT8_MAX;
	case CEP_DTYPE_BOOL: return 1;
	default: return INT64_MAX;
	}
}

/* Integer types are reduced in int64 except by ReduceLogSumExp. */
static bool reduce_in_int(enum red_op op, cep_dtype t)
{
	return !cpu_is_float(t) && op != RED_LSE;
}

static int reduce_prepare(struct op_call *c, size_t *workspace)
{
	int64_t out_n = cpu_numel(&c->out[0]);
	size_t per = strcmp(c->node->op_type, "ReduceLogSumExp") == 0 ? 2 : 1;

	*workspace = (size_t)out_n * sizeof(double) * per;
	return 0;
}

/* The result of one output element from its accumulators. */
static double reduce_final_d(enum red_op op, double acc, double max, int64_t count)
{
	switch (op) {
	case RED_MEAN: return acc / (double)count;
	case RED_L2: return sqrt(acc);
	case RED_LOGSUM: return log(acc);
	case RED_LSE:
		/* All -inf (or an empty set) gives -inf; +inf gives +inf. */
		if (isinf(max))
			return max;
		return log(acc) + max;
	default: return acc;
	}
}

/* acc holds a value of integer type t as cpu_load_i() gives it. */
static int64_t reduce_final_i(enum red_op op, cep_dtype t, int64_t acc, int64_t count)
{
	switch (op) {
	case RED_MEAN:
		if (count <= 0)
			return 0;
		if (t == CEP_DTYPE_UINT64)
			return (int64_t)((uint64_t)acc / (uint64_t)count);
		return acc / count;
	case RED_L2: return cpu_f2u(sqrt(cpu_i2d(t, acc)));
	case RED_LOGSUM: return cpu_f2u(log(cpu_i2d(t, acc)));
	default: return acc;
	}
}

static int reduce_run(struct op_call *c, enum red_op op)
{
	const struct op_tensor *in = &c->in[0];
	const struct op_tensor *out = &c->out[0];
	bool mask[CEP_MAX_RANK], known;
	struct red_layout l;
	int64_t n_axes, i, j0;
	int ret;

	ret = reduce_mask(c->node, c->in, c->n_in, in->rank, CEP_EINVAL, mask, &known, &n_axes);
	if (ret < 0)
		return ret;
	if (!known)
		return cep__set_error(CEP_EINVAL, "%s: the axes input has no value", c->node->op_type);
	reduce_layout(in, mask, &l);
	if (l.out_n != cpu_numel(out))
		return cep__set_error(CEP_ESHAPE, "%s: the axes make %" PRId64
				      " output elements, the plan has room for %" PRId64,
				      c->node->op_type, l.out_n, cpu_numel(out));
	if (l.out_n == 0)
		return 0;
	if (c->workspace_bytes < (size_t)l.out_n * sizeof(double) * (op == RED_LSE ? 2 : 1))
		return cep__set_error(CEP_EINTERNAL, "%s: the workspace is too small",
				      c->node->op_type);
	if (reduce_in_int(op, in->dtype)) {
		int64_t *acc = c->workspace, init = 0, bi[CHUNK_N];

		if (op == RED_PROD)
			init = 1;
		else if (op == RED_MAX)
			init = int_lowest(in->dtype);
		else if (op == RED_MIN)
			init = int_highest(in->dtype);
		for (i = 0; i < l.out_n; i++)
			acc[i] = init;
		reduce_walk(&l, in, op, RED_PASS_I, acc, NULL);
		for (j0 = 0; j0 < l.out_n; j0 += CHUNK_N) {
			int n = l.out_n - j0 < CHUNK_N ? (int)(l.out_n - j0) : CHUNK_N, j;

			for (j = 0; j < n; j++)
				bi[j] = reduce_final_i(op, in->dtype, acc[j0 + j], l.count);
			chunk_store_i(out->data, out->dtype, j0, n, bi);
		}
	} else {
		double *acc = c->workspace, *max = NULL, init = 0.0, bd[CHUNK_N];

		if (op == RED_PROD)
			init = 1.0;
		else if (op == RED_MAX)
			init = -INFINITY;
		else if (op == RED_MIN)
			init = INFINITY;
		if (op == RED_LSE) {
			max = acc + l.out_n;
			for (i = 0; i < l.out_n; i++)
				max[i] = -INFINITY;
			reduce_walk(&l, in, RED_MAX, RED_PASS_D, max, NULL);
		}
		for (i = 0; i < l.out_n; i++)
			acc[i] = init;
		reduce_walk(&l, in, op, op == RED_LSE ? RED_PASS_EXP : RED_PASS_D, acc, max);
		for (j0 = 0; j0 < l.out_n; j0 += CHUNK_N) {
			int n = l.out_n - j0 < CHUNK_N ? (int)(l.out_n - j0) : CHUNK_N, j;

			for (j = 0; j < n; j++)
				bd[j] = reduce_final_d(op, acc[j0 + j], max ? max[j0 + j] : 0.0,
						       l.count);
			chunk_store_d(out->data, out->dtype, j0, n, bd);
		}
	}
	return 0;
}

static int sum_run(struct op_call *c) { return reduce_run(c, RED_SUM); }
static int mean_run(struct op_call *c) { return reduce_run(c, RED_MEAN); }
static int max_run(struct op_call *c) { return reduce_run(c, RED_MAX); }
static int min_run(struct op_call *c) { return reduce_run(c, RED_MIN); }
static int prod_run(struct op_call *c) { return reduce_run(c, RED_PROD); }
static int l1_run(struct op_call *c) { return reduce_run(c, RED_L1); }
static int l2_run(struct op_call *c) { return reduce_run(c, RED_L2); }
static int sumsq_run(struct op_call *c) { return reduce_run(c, RED_SUMSQ); }
static int logsum_run(struct op_call *c) { return reduce_run(c, RED_LOGSUM); }
static int lse_run(struct op_call *c) { return reduce_run(c, RED_LSE); }

/* ------------------------------------------------------------------- table */

/* Axes an attribute before opset `split`, an optional input from it on. */
#define REDUCE_SCHEMAS(op, split) \
	{ "", op, 1, (split) - 1, 1, 1, 1, 1, 0, 0, reduce_infer }, \
	{ "", op, split, OP_OPSET_MAX, 1, 2, 1, 1, 0, 0, reduce_infer }
#define REDUCE_KERNEL(op, since, until, dts, fn) \
	{ "", op, since, until, BACKEND_HOST, dts, reduce_prepare, fn }

/* The types of the opset 1 and 11 definitions; bfloat16 joined them all
 * at 13. */
#define RED_DTS_7 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
		   OP_DT(CEP_DTYPE_FLOAT64) | OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		   OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
#define RED_DTS_13 (RED_DTS_7 | OP_DT(CEP_DTYPE_BFLOAT16))
/* ReduceMax and ReduceMin took int8 and uint8 at 12, bool at 20. */
#define RED_DTS_MINMAX_12 (RED_DTS_7 | OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))
#define RED_DTS_MINMAX_13 (RED_DTS_MINMAX_12 | OP_DT(CEP_DTYPE_BFLOAT16))
#define RED_DTS_MINMAX_20 (RED_DTS_MINMAX_13 | OP_DT(CEP_DTYPE_BOOL))

#define REDUCE_KERNELS(op, fn) \
	REDUCE_KERNEL(op, 1, 12, RED_DTS_7, fn), \
	REDUCE_KERNEL(op, 13, OP_OPSET_MAX, RED_DTS_13, fn)
/* The logs lost their integer types at 28. */
#define REDUCE_KERNELS_LOG(op, fn) \
	REDUCE_KERNEL(op, 1, 12, RED_DTS_7, fn), \
	REDUCE_KERNEL(op, 13, 27, RED_DTS_13, fn), \
	REDUCE_KERNEL(op, 28, OP_OPSET_MAX, OP_DTS_FLOAT, fn)
#define REDUCE_KERNELS_MINMAX(op, fn) \
	REDUCE_KERNEL(op, 1, 11, RED_DTS_7, fn), \
	REDUCE_KERNEL(op, 12, 12, RED_DTS_MINMAX_12, fn), \
	REDUCE_KERNEL(op, 13, 19, RED_DTS_MINMAX_13, fn), \
	REDUCE_KERNEL(op, 20, OP_OPSET_MAX, RED_DTS_MINMAX_20, fn)

static const struct op_schema schemas[] = {
	REDUCE_SCHEMAS("ReduceSum", 13),
	REDUCE_SCHEMAS("ReduceMean", 18),
	REDUCE_SCHEMAS("ReduceMax", 18),
	REDUCE_SCHEMAS("ReduceMin", 18),
	REDUCE_SCHEMAS("ReduceProd", 18),
	REDUCE_SCHEMAS("ReduceL1", 18),
	REDUCE_SCHEMAS("ReduceL2", 18),
	REDUCE_SCHEMAS("ReduceSumSquare", 18),
	REDUCE_SCHEMAS("ReduceLogSum", 18),
	REDUCE_SCHEMAS("ReduceLogSumExp", 18),
};

static const struct op_kernel kernels[] = {
	REDUCE_KERNELS("ReduceSum", sum_run),
	REDUCE_KERNELS("ReduceMean", mean_run),
	REDUCE_KERNELS_MINMAX("ReduceMax", max_run),
	REDUCE_KERNELS_MINMAX("ReduceMin", min_run),
	REDUCE_KERNELS("ReduceProd", prod_run),
	REDUCE_KERNELS("ReduceL1", l1_run),
	REDUCE_KERNELS("ReduceL2", l2_run),
	REDUCE_KERNELS("ReduceSumSquare", sumsq_run),
	REDUCE_KERNELS_LOG("ReduceLogSum", logsum_run),
	REDUCE_KERNELS_LOG("ReduceLogSumExp", lse_run),
};

const struct op_family op_family_cpu_reduce = {
	"cpu_reduce", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
