/*
 * norm.c — the normalizations: LayerNormalization (opset 17), the
 * inference form of BatchNormalization (opsets 7, 9, 14 and 15) and LRN.
 *
 * LayerNormalization standardises each row of the input seen as a matrix
 * split at `axis`, then scales and shifts by Scale and B, which broadcast
 * to the input one way (numpy style); the optional outputs Mean and
 * InvStdDev keep each row's statistics in the stash type (float32 unless
 * stash_type says bfloat16). Statistics are computed in double.
 *
 * BatchNormalization here is the inference form: per channel (dimension 1)
 * y = (x - mean) / sqrt(var + epsilon) * scale + B, folded into y = x * a +
 * b with a and b worked out per run in the workspace. Training mode (the
 * extra outputs before opset 14, is_test=0 before 7, training_mode=1 from
 * 14) is refused. spatial=0 before opset 9 gives per-activation
 * statistics of shape (C, D1..). Opset 1's consumed_inputs only hinted at
 * in-place use and is ignored.
 *
 * LRN divides each element by (bias + alpha / size * s)^beta, where s sums
 * the squares of the `size` neighbouring channels around it.
 */
#include "kernels/cpu/chunk.h"
#include "kernels/cpu/norm.h"

#include <inttypes.h>

/* ------------------------------------------------------ LayerNormalization */

/* How Scale or B is indexed from a row and a column of the input. */
enum ln_index {
	LN_INDEX_ABSENT,  /* no B */
	LN_INDEX_ONE,     /* one element for everything */
	LN_INDEX_COLUMN,  /* exactly the normalized dimensions: by column */
	LN_INDEX_BCAST,   /* anything else: through the broadcast iterator */
};

struct ln_params {
	int64_t rows, cols;        /* the input as (rows, cols) split at axis */
	double eps;
	enum ln_index scale, bias;
};

static int ln_stash_dtype(const struct op_node *node, cep_dtype *out)
{
	int64_t st = op_attr_int(node, "stash_type", 1);

	if (st == CEP_DTYPE_FLOAT32 || st == CEP_DTYPE_BFLOAT16) {
		*out = (cep_dtype)st;
		return 0;
	}
	return cep__set_error(CEP_EMODEL, "LayerNormalization: stash_type %" PRId64
			      " is not float32 (1) or bfloat16 (16)", st);
}

/* Checks that p (Scale or B, input i) broadcasts one way to x. */
static int ln_check_bcast(const struct op_tensor *x, const struct op_tensor *p, int i)
{
	static const char *const names[3] = { "X", "Scale", "B" };
	char sx[160], sp[160];
	int d;

	if (x->rank < 0 || p->rank < 0)
		return 0;
	op_dims_format(x, NULL, 0, sx, sizeof(sx));
	op_dims_format(p, NULL, 0, sp, sizeof(sp));
	if (p->rank > x->rank)
		return cep__set_error(CEP_ESHAPE, "LayerNormalization: %s of shape %s has a higher rank than X of shape %s",
				      names[i], sp, sx);
	for (d = 0; d < p->rank; d++) {
		int xd = x->rank - p->rank + d;
		int64_t pd = p->dims[d];

		if (!op_dim_fixed(pd) || pd == 1)
			continue;
		if (!op_dim_fixed(x->dims[xd]) || x->dims[xd] == pd)
			continue;
		return cep__set_error(CEP_ESHAPE, "LayerNormalization: %s of shape %s does not broadcast to X of shape %s",
				      names[i], sp, sx);
	}
	return 0;
}

static int ln_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	cep_dtype stash = CEP_DTYPE_FLOAT32;
	int axis = 0, i, k, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "stash_type", OP_ATTR_INT)) < 0 ||
	    (ret = ln_stash_dtype(node, &stash)) < 0 ||
	    (ret = op_infer_same_dtype(x, 0, 2)) < 0)
		return ret;
	for (i = 1; i < x->n_in && i < 3; i++) {
		if (op_tensor_present(&x->in[i]) && (ret = ln_check_bcast(in, &x->in[i], i)) < 0)
			return ret;
	}
	if (in->rank >= 0) {
		ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), in->rank, &axis);
		if (ret < 0)
			return ret;
	}
	ret = op_infer_like_input(x);
	/* Mean and InvStdDev: the leading dims, then 1 for each normalized one. */
	for (k = 1; k < x->n_out && k < 3; k++) {
		struct op_tensor *o = &x->out[k];

		o->dtype = stash;
		o->rank = in->rank;
		for (i = 0; i < in->rank; i++)
			o->dims[i] = i < axis ? in->dims[i] : 1;
	}
	return ret;
}

/* How p, broadcast to x, is indexed by (row, column). */
static enum ln_index ln_index_of(const struct op_tensor *x, const struct op_tensor *p, int axis)
{
	int d;

	if (!op_tensor_present(p))
		return LN_INDEX_ABSENT;
	if (cpu_numel(p) == 1)
		return LN_INDEX_ONE;
	for (d = 0; d < x->rank; d++) {
		int pd = d - (x->rank - p->rank);
		int64_t size = pd >= 0 ? p->dims[pd] : 1;

		if (d < axis ? size != 1 : size != x->dims[d])
			return LN_INDEX_BCAST;
	}
	return LN_INDEX_COLUMN;
}

static int ln_prepare(struct op_call *c, size_t *workspace)
{
	struct ln_params *p = (struct ln_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	int axis, ret;

	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", -1), x->rank, &axis);
	if (ret < 0)
		return ret;
	p->rows = op_dims_product(x, 0, axis);
	p->cols = op_dims_product(x, axis, x->rank);
	p->eps = op_attr_float(c->node, "epsilon", 1e-5f);
	p->scale = ln_index_of(x, &c->in[1], axis);
	p->bias = c->n_in > 2 ? ln_index_of(x, &c->in[2], axis) : LN_INDEX_ABSENT;
	/* Each row's mean and 1/stddev, for the second pass. */
	*workspace = 2 * (size_t)p->rows * sizeof(double);
	return 0;
}

/* The second pass for Scale and B that vary along the rows too. */
static void ln_apply_bcast(struct op_call *c, const double *mean, const double *inv)
{
	const struct ln_params *p = (const struct ln_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	bool has_b = p->bias != LN_INDEX_ABSENT;
	const struct op_tensor *ins[3] = { x, &c->in[1], has_b ? &c->in[2] : NULL };
	const struct op_tensor *y = &c->out[0];
	struct cpu_bcast bc;
	int64_t r, j;

	cpu_bcast_init(&bc, y, ins, has_b ? 3 : 2);
	for (r = 0; r < bc.rows; r++) {
		for (j = 0; j < bc.inner; j++) {
			int64_t e = r * bc.inner + j, row = e / p->cols;
			double v = cpu_load_d(x->data, x->dtype, bc.off[0] + j * bc.step[0]);
			double s = cpu_load_d(ins[1]->data, ins[1]->dtype, bc.off[1] + j * bc.step[1]);
			double b = has_b ? cpu_load_d(ins[2]->data, ins[2]->dtype,
						      bc.off[2] + j * bc.step[2]) : 0.0;

			cpu_store_d(y->data, y->dtype, e, (v - mean[row]) * inv[row] * s + b);
		}
		cpu_bcast_next(&bc);
	}
}

static int ln_run(struct op_call *c)
{
	const struct ln_params *p = (const struct ln_params *)c->params;
	const struct op_tensor *x = &c->in[0], *sc = &c->in[1];
	const struct op_tensor *bt = c->n_in > 2 ? &c->in[2] : NULL;
	const struct op_tensor *y = &c->out[0];
	const struct op_tensor *mean_out = c->n_out > 1 && c->out[1].data ? &c->out[1] : NULL;
	const struct op_tensor *inv_out = c->n_out > 2 && c->out[2].data ? &c->out[2] : NULL;
	double *mean = c->workspace, *inv = mean + p->rows;
	double v[CHUNK_N], s[CHUNK_N], b[CHUNK_N], s_one = 0.0, b_one = 0.0;
	int64_t r, j0;
	int j, cnt;

	if (p->rows == 0)
		return 0;
	if (c->workspace_bytes < 2 * (size_t)p->rows * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "LayerNormalization: the workspace is too small");
	for (r = 0; r < p->rows; r++) {
		double sum = 0.0, sq = 0.0, m;

		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, r * p->cols + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sum += v[j];
		}
		m = sum / (double)p->cols;
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, r * p->cols + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sq += (v[j] - m) * (v[j] - m);
		}
		mean[r] = m;
		inv[r] = 1.0 / sqrt(sq / (double)p->cols + p->eps);
		if (mean_out)
			cpu_store_d(mean_out->data, mean_out->dtype, r, mean[r]);
		if (inv_out)
			cpu_store_d(inv_out->data, inv_out->dtype, r, inv[r]);
	}
	if (p->scale == LN_INDEX_BCAST || p->bias == LN_INDEX_BCAST) {
		ln_apply_bcast(c, mean, inv);
		return 0;
	}
	if (p->scale == LN_INDEX_ONE)
		s_one = cpu_load_d(sc->data, sc->dtype, 0);
	if (p->bias == LN_INDEX_ONE)
		b_one = cpu_load_d(bt->data, bt->dtype, 0);
	for (r = 0; r < p->rows; r++) {
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			int64_t at = r * p->cols + j0;

			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, at, cnt, v);
			if (p->scale == LN_INDEX_COLUMN)
				chunk_load_d(sc->data, sc->dtype, j0, cnt, s);
			else
				for (j = 0; j < cnt; j++)
					s[j] = s_one;
			if (p->bias == LN_INDEX_COLUMN)
				chunk_load_d(bt->data, bt->dtype, j0, cnt, b);
			else
				for (j = 0; j < cnt; j++)
					b[j] = b_one;
			for (j = 0; j < cnt; j++)
				v[j] = (v[j] - mean[r]) * inv[r] * s[j] + b[j];
			chunk_store_d(y->data, y->dtype, at, cnt, v);
		}
	}
	return 0;
}

/* ------------------------------------------------------ BatchNormalization */

struct bn_params {
	int64_t batch, channels, inner;  /* X as (N, C, D1 * ... * Dn) */
	int64_t n_params;                /* elements of each of scale..var */
	double eps;
	bool spatial;                    /* statistics per channel, not per element */
};

static bool bn_spatial(const struct op_node *node)
{
	return node->opset >= 9 || op_attr_int(node, "spatial", 1) != 0;
}

static int bn_infer(struct op_infer *x)
{
	static const char *const names[5] = { "X", "scale", "B", "mean", "var" };
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	bool spatial = bn_spatial(node);
	int i, d, ret;

	if ((ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "momentum", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "spatial", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "training_mode", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "is_test", OP_ATTR_INT)) < 0)
		return ret;
	/* Before 7 the node said which mode it is for, training by default. */
	if (node->opset < 7 && op_attr_int(node, "is_test", 0) == 0)
		return cep__set_error(CEP_EUNSUPPORTED, "BatchNormalization (opset %d): is_test=0 asks for training mode (statistics of the batch); only inference, is_test=1, is supported",
				      node->opset);
	if (node->opset < 14 && x->n_out > 1)
		return cep__set_error(CEP_EUNSUPPORTED, "BatchNormalization: %d outputs ask for training mode (running and saved statistics); only inference, with the one output Y, is supported",
				      x->n_out);
	if (node->opset >= 14 && op_attr_int(node, "training_mode", 0) != 0)
		return cep__set_error(CEP_EUNSUPPORTED, "BatchNormalization: training_mode=1 is not supported; only inference is");
	if (node->opset >= 14 && x->n_out > 1)
		return cep__set_error(CEP_EMODEL, "BatchNormalization: outputs running_mean and running_var exist only in training mode");
	/* One type throughout until 14; then scale and B may differ from X,
	 * and from 15 mean and var from both. */
	if (node->opset < 14)
		ret = op_infer_same_dtype(x, 0, 4);
	else if (node->opset == 14)
		ret = op_infer_same_dtype(x, 0, 2);
	else
		ret = op_infer_same_dtype(x, 1, 2);
	if (ret < 0 || (ret = op_infer_same_dtype(x, 3, 4)) < 0)
		return ret;
	if (in->rank == 0)
		return cep__set_error(CEP_ESHAPE, "BatchNormalization: X must have rank >= 1");
	for (i = 1; i < 5 && in->rank >= 1; i++) {
		const struct op_tensor *p = &x->in[i];
		int64_t want = in->rank >= 2 ? in->dims[1] : 1;

		if (p->rank < 0)
			continue;
		if (spatial) {
			if (p->rank != 1 || (op_dim_fixed(want) && op_dim_fixed(p->dims[0]) &&
					     p->dims[0] != want))
				return cep__set_error(CEP_ESHAPE, "BatchNormalization: %s must have shape [C], C=%" PRId64
						      " the channels of X (dimension 1)",
						      names[i], want);
			continue;
		}
		/* Not spatial: one statistic per element of a sample. */
		if (p->rank != in->rank - 1)
			return cep__set_error(CEP_ESHAPE, "BatchNormalization: with spatial=0, %s must have the shape of X without its first dimension",
					      names[i]);
		for (d = 0; d < p->rank; d++) {
			if (op_dim_fixed(p->dims[d]) && op_dim_fixed(in->dims[d + 1]) &&
			    p->dims[d] != in->dims[d + 1])
				return cep__set_error(CEP_ESHAPE, "BatchNormalization: with spatial=0, %s must have the shape of X without its first dimension",
						      names[i]);
		}
	}
	return op_infer_like_input(x);
}

static int bn_prepare(struct op_call *c, size_t *workspace)
{
	struct bn_params *p = (struct bn_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	int i;

	p->batch = x->dims[0];
	p->channels = x->rank >= 2 ? x->dims[1] : 1;
	p->inner = op_dims_product(x, 2, x->rank);
	p->spatial = bn_spatial(c->node);
	p->n_params = p->spatial ? p->channels : p->channels * p->inner;
	p->eps = op_attr_float(c->node, "epsilon", 1e-5f);
	for (i = 1; i < 5; i++) {
		if (cpu_numel(&c->in[i]) != p->n_params)
			return cep__set_error(CEP_ESHAPE, "BatchNormalization: input %d has %" PRId64
					      " elements, X needs %" PRId64,
					      i, cpu_numel(&c->in[i]), p->n_params);
	}
	/* a and b of y = x * a + b, per channel (or element). */
	*workspace = 2 * (size_t)p->n_params * sizeof(double);
	return 0;
}

static int bn_run(struct op_call *c)
{
	const struct bn_params *p = (const struct bn_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	double *a = c->workspace, *b = a + p->n_params, v[CHUNK_N];
	int64_t i, n, ch, j0, row;
	int j, cnt;

	if (p->n_params == 0 || p->batch == 0 || p->inner == 0)
		return 0;
	if (c->workspace_bytes < 2 * (size_t)p->n_params * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "BatchNormalization: the workspace is too small");
	for (i = 0; i < p->n_params; i++) {
		double scale = cpu_load_d(c->in[1].data, c->in[1].dtype, i);
		double bias = cpu_load_d(c->in[2].data, c->in[2].dtype, i);
		double mean = cpu_load_d(c->in[3].data, c->in[3].dtype, i);
		double var = cpu_load_d(c->in[4].data, c->in[4].dtype, i);

		a[i] = scale / sqrt(var + p->eps);
		b[i] = bias - mean * a[i];
	}
	for (n = 0; n < p->batch; n++) {
		for (ch = 0; ch < p->channels; ch++) {
			row = (n * p->channels + ch) * p->inner;
			for (j0 = 0; j0 < p->inner; j0 += cnt) {
				cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
				chunk_load_d(x->data, x->dtype, row + j0, cnt, v);
				if (p->spatial) {
					for (j = 0; j < cnt; j++)
						v[j] = v[j] * a[ch] + b[ch];
				} else {
					int64_t at = ch * p->inner + j0;

					for (j = 0; j < cnt; j++)
						v[j] = v[j] * a[at + j] + b[at + j];
				}
				chunk_store_d(y->data, y->dtype, row + j0, cnt, v);
			}
		}
	}
	return 0;
}

/* --------------------------------------------------------------------- LRN */

static int lrn_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_attr *size = op_attr_find(node, "size");
	int ret;

	if ((ret = op_attr_check(node, "size", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "alpha", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "beta", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "bias", OP_ATTR_FLOAT)) < 0)
		return ret;
	if (!size)
		return cep__set_error(CEP_EMODEL, "LRN: the attribute size is required");
	if (size->i < 1)
		return cep__set_error(CEP_EMODEL, "LRN: size is %" PRId64 ", it must be at least 1",
				      size->i);
	if (x->in[0].rank >= 0 && x->in[0].rank < 2)
		return cep__set_error(CEP_ESHAPE, "LRN: X has rank %d; it must be (N, C, ...)",
				      x->in[0].rank);
	return op_infer_like_input(x);
}

void cpu_lrn_read(const struct op_node *node, const struct op_tensor *x, struct cpu_lrn *p)
{
	int64_t size = op_attr_int(node, "size", 1);

	p->batch = x->dims[0];
	p->channels = x->dims[1];
	p->inner = op_dims_product(x, 2, x->rank);
	p->before = (size - 1) / 2;
	p->after = size / 2; /* ceil((size - 1) / 2) */
	p->alpha_over_size = op_attr_float(node, "alpha", 1e-4f) / (double)size;
	p->beta = op_attr_float(node, "beta", 0.75f);
	p->bias = op_attr_float(node, "bias", 1.0f);
}

static int lrn_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_lrn *p = (struct cpu_lrn *)c->params;

	cpu_lrn_read(c->node, &c->in[0], p);
	/* One row of square sums. */
	*workspace = (size_t)p->inner * sizeof(double);
	return 0;
}

static int lrn_run(struct op_call *c)
{
	const struct cpu_lrn *p = (const struct cpu_lrn *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	double *sq = c->workspace, v[CHUNK_N];
	int64_t n, ch, k, j0, lo, hi;
	int j, cnt;

	if (p->batch * p->channels * p->inner == 0)
		return 0;
	if (c->workspace_bytes < (size_t)p->inner * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "LRN: the workspace is too small");
	for (n = 0; n < p->batch; n++) {
		for (ch = 0; ch < p->channels; ch++) {
			lo = ch - p->before > 0 ? ch - p->before : 0;
			hi = ch + p->after < p->channels - 1 ? ch + p->after : p->channels - 1;
			for (j0 = 0; j0 < p->inner; j0++)
				sq[j0] = 0.0;
			for (k = lo; k <= hi; k++) {
				int64_t row = (n * p->channels + k) * p->inner;

				for (j0 = 0; j0 < p->inner; j0 += cnt) {
					cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
					chunk_load_d(x->data, x->dtype, row + j0, cnt, v);
					for (j = 0; j < cnt; j++)
						sq[j0 + j] += v[j] * v[j];
				}
			}
			for (j0 = 0; j0 < p->inner; j0 += cnt) {
				int64_t at = (n * p->channels + ch) * p->inner + j0;

				cnt = p->inner - j0 < CHUNK_N ? (int)(p->inner - j0) : CHUNK_N;
				chunk_load_d(x->data, x->dtype, at, cnt, v);
				if (p->beta == 0.75) {
					/* The usual beta, without pow(): t^0.75 is
					 * sqrt(t) * sqrt(sqrt(t)). */
					for (j = 0; j < cnt; j++) {
						double t = sqrt(p->bias + p->alpha_over_size * sq[j0 + j]);

						v[j] /= t * sqrt(t);
					}
				} else {
					for (j = 0; j < cnt; j++)
						v[j] /= pow(p->bias + p->alpha_over_size * sq[j0 + j],
							    p->beta);
				}
				chunk_store_d(y->data, y->dtype, at, cnt, v);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define NORM_DTS_7 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "LayerNormalization", 17, OP_OPSET_MAX, 2, 3, 1, 3, 0, 0, ln_infer },
	/* 1: is_test and spatial; 7: no is_test; 9: no spatial; 14:
	 * training_mode, two outputs fewer; 15: scale, B and mean, var typed
	 * apart from X. */
	{ "", "BatchNormalization", 1, 6, 5, 5, 1, 5, 0, 0, bn_infer },
	{ "", "BatchNormalization", 7, 8, 5, 5, 1, 5, 0, 0, bn_infer },
	{ "", "BatchNormalization", 9, 13, 5, 5, 1, 5, 0, 0, bn_infer },
	{ "", "BatchNormalization", 14, 14, 5, 5, 1, 3, 0, 0, bn_infer },
	{ "", "BatchNormalization", 15, OP_OPSET_MAX, 5, 5, 1, 3, 0, 0, bn_infer },
	{ "", "LRN", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, lrn_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "LayerNormalization", 17, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ "", "BatchNormalization", 1, 13, BACKEND_HOST, NORM_DTS_7, bn_prepare, bn_run },
	{ "", "BatchNormalization", 14, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  bn_prepare, bn_run },
	{ "", "LRN", 1, 12, BACKEND_HOST, NORM_DTS_7, lrn_prepare, lrn_run },
	{ "", "LRN", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, lrn_prepare, lrn_run },
};

const struct op_family op_family_cpu_norm = {
	"cpu_norm", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
