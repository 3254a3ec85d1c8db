/*
 * norm.c — the normalizations: the layer normalizations, the inference
 * form of BatchNormalization (opsets 7, 9, 14 and 15) and LRN.
 *
 * LayerNormalization (opset 17, and onnxruntime's form of it before 17)
 * standardises each row of the input seen as a matrix split at `axis`,
 * then scales and shifts by Scale and B, which broadcast to the input one
 * way (numpy style); the optional outputs Mean and InvStdDev keep each
 * row's statistics in the stash type (float32 unless stash_type says
 * bfloat16). onnxruntime's contrib forms share the kernel (norm.h's
 * struct cpu_ln_form): SimplifiedLayerNormalization divides by the root
 * mean square instead (no mean, no B), and com.microsoft's
 * SkipLayerNormalization and SkipSimplifiedLayerNormalization normalize
 * input + skip (+ bias) over the last dimension, with gamma and beta (or
 * gamma alone) of the hidden size, and may return that sum as
 * input_skip_bias_sum (added in float32 as onnxruntime does, in double
 * for float64). Statistics and the affine step are computed in double,
 * so float64 keeps its precision throughout.
 *
 * BatchNormalization: per channel (dimension 1) y = (x - mean) / sqrt(var
 * + epsilon) * scale + B, folded into y = x * a + b with a and b worked
 * out per run in the workspace. In inference mean and var are the inputs;
 * with training_mode=1 (opset 14 on) they are the batch's own statistics
 * (over N and the spatial dims, the variance the population one, both in
 * double and in two passes), and the optional outputs running_mean and
 * running_var are input * momentum + batch * (1 - momentum), momentum 0.9
 * by default, as the onnx reference computes them. The older training
 * forms (the extra outputs before opset 14, is_test=0 before 7) are
 * refused. spatial=0 before opset 9 gives per-activation statistics of
 * shape (C, D1..). Opset 1's consumed_inputs only hinted at in-place use
 * and is ignored.
 *
 * LRN divides each element by (bias + alpha / size * s)^beta, where s sums
 * the squares of the `size` neighbouring channels around it.
 */
#include "kernels/cpu/chunk.h"
#include "kernels/cpu/norm.h"

#include <inttypes.h>

/* ------------------------------------------------------ LayerNormalization */

/*
 * Where each form's operands sit: { op, rms, skip, add, scale, beta, mean,
 * inv, sum, epsilon's default }. onnxruntime's SimplifiedLayerNormalization
 * has no Mean output (its second output is InvStdDev), its skip forms
 * take gamma before the optional beta and bias, and the simplified one's
 * optional bias is input 3 since it has no beta.
 */
static const struct cpu_ln_form ln_forms[] = {
	{ "LayerNormalization", false, -1, -1, 1, 2, 1, 2, -1, 1e-5f },
	{ "SimplifiedLayerNormalization", true, -1, -1, 1, -1, -1, 1, -1, 1e-5f },
	{ "SkipLayerNormalization", false, 1, 4, 2, 3, 1, 2, 3, 1e-12f },
	{ "SkipSimplifiedLayerNormalization", true, 1, 3, 2, -1, 1, 2, 3, 1e-12f },
};

/* The inputs of each form, for messages. */
static const char *const ln_names[] = { "X", "Scale", "B" };
static const char *const skipln_names[] = { "input", "skip", "gamma", "beta", "bias" };
static const char *const skipsln_names[] = { "input", "skip", "gamma", "bias" };

const struct cpu_ln_form *cpu_ln_form_of(const struct op_node *node)
{
	size_t i;

	for (i = 0; i < sizeof(ln_forms) / sizeof(ln_forms[0]); i++) {
		if (strcmp(node->op_type, ln_forms[i].op) == 0)
			return &ln_forms[i];
	}
	return NULL;
}

/* Input i of a node with n_in inputs, or NULL when i is -1, past the
 * inputs or omitted. */
static const struct op_tensor *ln_input(const struct op_tensor *in, int n_in, int i)
{
	return i >= 0 && i < n_in && op_tensor_present(&in[i]) ? &in[i] : NULL;
}

/*
 * LayerNormalization 17 stashes Mean and InvStdDev in float32 or
 * bfloat16. onnxruntime's forms (LayerNormalization before 17,
 * SimplifiedLayerNormalization) name float32 or double; the kernels of
 * both backends stash float32 alone, so double is refused as unsupported.
 */
static int ln_stash_dtype(const struct op_node *node, cep_dtype *out)
{
	int64_t st = op_attr_int(node, "stash_type", 1);
	/* Only ai.onnx has a LayerNormalization. */
	bool onnx17 = node->opset >= 17 && strcmp(node->op_type, "LayerNormalization") == 0;

	if (st == CEP_DTYPE_FLOAT32 || (onnx17 && st == CEP_DTYPE_BFLOAT16)) {
		*out = (cep_dtype)st;
		return 0;
	}
	if (onnx17)
		return cep__set_error(CEP_EMODEL, "%s: stash_type %" PRId64
				      " is not float32 (1) or bfloat16 (16)", node->op_type, st);
	if (st == 11)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: stash_type 11 (double) is not supported; only float32 (1) is",
				      node->op_type);
	return cep__set_error(CEP_EMODEL, "%s: stash_type %" PRId64 " is not float32 (1) or double (11)",
			      node->op_type, st);
}

/* Checks that p (input i, Scale or B) broadcasts one way to x. */
static int ln_check_bcast(const struct op_node *node, const struct op_tensor *x,
			  const struct op_tensor *p, int i)
{
	char sx[160], sp[160];
	int d;

	if (x->rank < 0 || p->rank < 0)
		return 0;
	op_dims_format(x, NULL, 0, sx, sizeof(sx));
	op_dims_format(p, NULL, 0, sp, sizeof(sp));
	if (p->rank > x->rank)
		return cep__set_error(CEP_ESHAPE, "%s: %s of shape %s has a higher rank than X of shape %s",
				      node->op_type, ln_names[i], sp, sx);
	for (d = 0; d < p->rank; d++) {
		int xd = x->rank - p->rank + d;
		int64_t pd = p->dims[d];

		if (!op_dim_fixed(pd) || pd == 1)
			continue;
		if (!op_dim_fixed(x->dims[xd]) || x->dims[xd] == pd)
			continue;
		return cep__set_error(CEP_ESHAPE, "%s: %s of shape %s does not broadcast to X of shape %s",
				      node->op_type, ln_names[i], sp, sx);
	}
	return 0;
}

/* Mean and InvStdDev (output k, where the form has it): the stash type,
 * x's leading dims before axis, then 1 for each normalized one. */
static void ln_infer_stats(struct op_infer *x, int k, cep_dtype stash, int axis)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *o;
	int i;

	if (k < 0 || k >= x->n_out)
		return;
	o = &x->out[k];
	o->dtype = stash;
	o->rank = in->rank;
	for (i = 0; i < in->rank; i++)
		o->dims[i] = i < axis ? in->dims[i] : 1;
}

/* LayerNormalization and SimplifiedLayerNormalization: X, Scale[, B]. */
static int ln_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct cpu_ln_form *f = cpu_ln_form_of(node);
	const struct op_tensor *in = &x->in[0];
	cep_dtype stash = CEP_DTYPE_FLOAT32;
	int axis = 0, i, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "stash_type", OP_ATTR_INT)) < 0 ||
	    (ret = ln_stash_dtype(node, &stash)) < 0 ||
	    (ret = op_infer_same_dtype(x, 0, 2)) < 0)
		return ret;
	for (i = 1; i < x->n_in && i < 3; i++) {
		if (op_tensor_present(&x->in[i]) &&
		    (ret = ln_check_bcast(node, in, &x->in[i], i)) < 0)
			return ret;
	}
	if (in->rank >= 0) {
		ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), in->rank, &axis);
		if (ret < 0)
			return ret;
	}
	ret = op_infer_like_input(x);
	ln_infer_stats(x, f->mean, stash, axis);
	ln_infer_stats(x, f->inv, stash, axis);
	return ret;
}

/* Whether two sizes that must be equal may be (unknown ones may). */
static bool ln_same(int64_t a, int64_t b)
{
	return !op_dim_fixed(a) || !op_dim_fixed(b) || a == b;
}

/* skip: the input's shape, or for a rank-3 input (1, S, H) or (S, H),
 * which repeat over the batch. */
static int skipln_check_skip(const struct op_node *node, const struct op_tensor *in,
			     const struct op_tensor *k)
{
	char si[160], sk[160];
	bool ok = k->rank == in->rank || (in->rank == 3 && k->rank == 2);
	int d, at = in->rank - k->rank;

	for (d = 0; ok && d < k->rank; d++) {
		if (d == 0 && at == 0 && k->rank == 3 && k->dims[0] == 1)
			continue;
		ok = ln_same(k->dims[d], in->dims[at + d]);
	}
	if (ok)
		return 0;
	op_dims_format(in, NULL, 0, si, sizeof(si));
	op_dims_format(k, NULL, 0, sk, sizeof(sk));
	return cep__set_error(CEP_ESHAPE, "%s: skip of shape %s must have input's shape %s%s",
			      node->op_type, sk, si,
			      in->rank == 3 ? ", or be (1, S, H) or (S, H) of it" : "");
}

/* SkipLayerNormalization and SkipSimplifiedLayerNormalization. */
static int skipln_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct cpu_ln_form *f = cpu_ln_form_of(node);
	const char *const *names = f->rms ? skipsln_names : skipln_names;
	const struct op_tensor *in = &x->in[0];
	int64_t hidden;
	int i, ret;

	if ((ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_infer_same_dtype(x, 0, x->n_in - 1)) < 0)
		return ret;
	if (!op_dtype_in(in->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: input is %s, a float type is needed",
				      node->op_type, cep_dtype_name(in->dtype));
	ret = op_infer_like_input(x);
	for (i = 1; i < x->n_out; i++) {
		x->out[i].dtype = CEP_DTYPE_UNDEFINED;
		x->out[i].rank = -1;
	}
	if (in->rank < 0)
		return ret;
	if (in->rank != 2 && in->rank != 3)
		return cep__set_error(CEP_ESHAPE, "%s: input has rank %d; it must be (tokens, hidden) or (batch, sequence, hidden)",
				      node->op_type, in->rank);
	hidden = in->dims[in->rank - 1];
	if (x->in[1].rank >= 0 && (ret = skipln_check_skip(node, in, &x->in[1])) < 0)
		return ret;
	for (i = 2; i < x->n_in; i++) {
		const struct op_tensor *p = &x->in[i];

		if (!op_tensor_present(p) || p->rank < 0)
			continue;
		if (p->rank != 1 || !ln_same(p->dims[0], hidden))
			return cep__set_error(CEP_ESHAPE, "%s: %s must have shape (hidden) = (%" PRId64
					      ")", node->op_type, names[i], hidden);
	}
	ln_infer_stats(x, f->mean, CEP_DTYPE_FLOAT32, in->rank - 1);
	ln_infer_stats(x, f->inv, CEP_DTYPE_FLOAT32, in->rank - 1);
	if (f->sum < x->n_out) {
		x->out[f->sum] = x->out[0];
		x->out[f->sum].data = NULL;
	}
	return ret;
}

/* How q (Scale or B), broadcast one way to x, is read by (row, column),
 * and its strides over x's dims for CPU_LN_BCAST. */
static int8_t ln_mode_of(const struct op_tensor *x, const struct op_tensor *q, int axis,
			 int64_t *stride)
{
	int8_t mode = CPU_LN_COLUMN;
	int64_t s = 1;
	int d;

	if (q == NULL)
		return CPU_LN_ABSENT;
	for (d = x->rank - 1; d >= 0; d--) {
		int qd = d - (x->rank - q->rank);
		int64_t size = qd >= 0 ? q->dims[qd] : 1;

		stride[d] = size == 1 ? 0 : s;
		s *= size;
		if (d < axis ? size != 1 : size != x->dims[d])
			mode = CPU_LN_BCAST;
	}
	return s == 1 ? CPU_LN_ONE : mode;
}

int cpu_ln_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		struct cpu_ln *p)
{
	const struct cpu_ln_form *f = cpu_ln_form_of(node);
	const struct op_tensor *x = &in[0], *k;
	int axis = x->rank - 1, ret;

	memset(p, 0, sizeof(*p));
	if (f == NULL)
		return cep__set_error(CEP_EINTERNAL, "%s is not a layer normalization",
				      node->op_type);
	p->form = f;
	if (f->skip < 0) {
		ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), x->rank, &axis);
		if (ret < 0)
			return ret;
	}
	p->rows = op_dims_product(x, 0, axis);
	p->cols = op_dims_product(x, axis, x->rank);
	p->eps = op_attr_float(node, "epsilon", f->eps);
	p->rank = x->rank;
	p->stash_bf16 = op_attr_int(node, "stash_type", 1) == CEP_DTYPE_BFLOAT16;
	memcpy(p->dims, x->dims, sizeof(p->dims));
	p->smode = ln_mode_of(x, ln_input(in, n_in, f->scale), axis, p->sstride);
	p->bmode = ln_mode_of(x, ln_input(in, n_in, f->beta), axis, p->bstride);
	k = ln_input(in, n_in, f->skip);
	if (k != NULL)
		p->skip_rows = p->cols > 0 ? op_dims_product(k, 0, k->rank) / p->cols : 1;
	return 0;
}

static int ln_prepare(struct op_call *c, size_t *workspace)
{
	*workspace = 0;
	return cpu_ln_read(c->node, c->in, c->n_in, (struct cpu_ln *)c->params);
}

/* a + b as the skip forms add them: in float32, but for float64 in
 * double. */
static double ln_add(double a, double b, bool f64)
{
	return f64 ? a + b : (double)((float)a + (float)b);
}

/*
 * Elements j0 .. j0 + n of row r of what is normalized: X's, and for the
 * skip forms X + skip (+ bias), added one addition at a time (ln_add()).
 */
static void ln_row_load(const struct op_call *c, const struct cpu_ln *p, int64_t r,
			int64_t j0, int n, double *v)
{
	const struct op_tensor *x = &c->in[0];
	const struct op_tensor *k = ln_input(c->in, c->n_in, p->form->skip);
	const struct op_tensor *a = ln_input(c->in, c->n_in, p->form->add);
	bool f64 = x->dtype == CEP_DTYPE_FLOAT64;
	double w[CHUNK_N];
	int j;

	chunk_load_d(x->data, x->dtype, r * p->cols + j0, n, v);
	if (k == NULL)
		return;
	chunk_load_d(k->data, k->dtype, (r % p->skip_rows) * p->cols + j0, n, w);
	for (j = 0; j < n; j++)
		v[j] = ln_add(v[j], w[j], f64);
	if (a == NULL)
		return;
	chunk_load_d(a->data, a->dtype, j0, n, w);
	for (j = 0; j < n; j++)
		v[j] = ln_add(v[j], w[j], f64);
}

/* Scale (which 0) or B (which 1) for elements j0 .. j0 + n of row r. */
static void ln_param_load(const struct op_tensor *q, const struct cpu_ln *p, int which,
			  int64_t r, int64_t j0, int n, double *v)
{
	int mode = which ? p->bmode : p->smode;
	int j;

	if (mode == CPU_LN_COLUMN) {
		chunk_load_d(q->data, q->dtype, j0, n, v);
		return;
	}
	for (j = 0; j < n; j++) {
		int64_t e = r * p->cols + j0 + j;

		v[j] = mode == CPU_LN_ABSENT
			       ? 0.0
			       : cpu_load_d(q->data, q->dtype, cpu_ln_param_at(p, which, e, j0 + j));
	}
}

/* Output k of c, or NULL where the form or the model leaves it out. */
static const struct op_tensor *ln_output(const struct op_call *c, int k)
{
	return k >= 0 && k < c->n_out && c->out[k].data ? &c->out[k] : NULL;
}

/*
 * Each row in three passes over its chunks: the mean (0 for the
 * simplified forms), the sum of squared deviations, then the result.
 * Statistics and the affine step are computed in double.
 */
static int ln_run(struct op_call *c)
{
	const struct cpu_ln *p = (const struct cpu_ln *)c->params;
	const struct cpu_ln_form *f = p->form;
	const struct op_tensor *sc = ln_input(c->in, c->n_in, f->scale);
	const struct op_tensor *bt = ln_input(c->in, c->n_in, f->beta);
	const struct op_tensor *y = &c->out[0];
	const struct op_tensor *mean_out = ln_output(c, f->mean);
	const struct op_tensor *inv_out = ln_output(c, f->inv);
	const struct op_tensor *sum_out = ln_output(c, f->sum);
	double v[CHUNK_N], s[CHUNK_N], b[CHUNK_N];
	int64_t r, j0;
	int j, cnt;

	for (r = 0; r < p->rows; r++) {
		double sum = 0.0, sq = 0.0, m = 0.0, inv;

		for (j0 = 0; j0 < p->cols && !f->rms; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			ln_row_load(c, p, r, j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sum += v[j];
		}
		if (!f->rms)
			m = sum / (double)p->cols;
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			ln_row_load(c, p, r, j0, cnt, v);
			if (sum_out)
				chunk_store_d(sum_out->data, sum_out->dtype, r * p->cols + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sq += (v[j] - m) * (v[j] - m);
		}
		inv = 1.0 / sqrt(sq / (double)p->cols + p->eps);
		if (mean_out)
			cpu_store_d(mean_out->data, mean_out->dtype, r, m);
		if (inv_out)
			cpu_store_d(inv_out->data, inv_out->dtype, r, inv);
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			ln_row_load(c, p, r, j0, cnt, v);
			ln_param_load(sc, p, 0, r, j0, cnt, s);
			ln_param_load(bt, p, 1, r, j0, cnt, b);
			for (j = 0; j < cnt; j++)
				v[j] = (v[j] - m) * inv * s[j] + b[j];
			chunk_store_d(y->data, y->dtype, r * p->cols + j0, cnt, v);
		}
	}
	return 0;
}

/* ------------------------------------------------------ BatchNormalization */

struct bn_params {
	int64_t batch, channels, inner;  /* X as (N, C, D1 * ... * Dn) */
	int64_t n_params;                /* elements of each of scale..var */
	double eps;
	double momentum;                 /* training: of the running statistics */
	bool spatial;                    /* statistics per channel, not per element */
	bool training;                   /* statistics of the batch, not the inputs */
};

static bool bn_spatial(const struct op_node *node)
{
	return node->opset >= 9 || op_attr_int(node, "spatial", 1) != 0;
}

/* training_mode=1, which exists from opset 14. */
static bool bn_training(const struct op_node *node)
{
	return node->opset >= 14 && op_attr_int(node, "training_mode", 0) != 0;
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
	if (node->opset >= 14 && !bn_training(node) && x->n_out > 1)
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
	ret = op_infer_like_input(x);
	/* Training's running statistics: mean's type and shape. */
	for (i = 1; i < x->n_out; i++) {
		x->out[i] = x->in[3];
		x->out[i].data = NULL;
	}
	return ret;
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
	p->training = bn_training(c->node);
	p->n_params = p->spatial ? p->channels : p->channels * p->inner;
	p->eps = op_attr_float(c->node, "epsilon", 1e-5f);
	p->momentum = op_attr_float(c->node, "momentum", 0.9f);
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

/* Training: the mean and population variance of channel ch of x over N
 * and the spatial dims, in double, in two passes. */
static void bn_batch_stats(const struct bn_params *p, const struct op_tensor *x, int64_t ch,
			   double *mean, double *var)
{
	double sum = 0.0, sq = 0.0, d;
	int64_t n, j, row, count = p->batch * p->inner;

	for (n = 0; n < p->batch; n++) {
		row = (n * p->channels + ch) * p->inner;
		for (j = 0; j < p->inner; j++)
			sum += cpu_load_d(x->data, x->dtype, row + j);
	}
	*mean = count > 0 ? sum / (double)count : 0.0;
	for (n = 0; n < p->batch; n++) {
		row = (n * p->channels + ch) * p->inner;
		for (j = 0; j < p->inner; j++) {
			d = cpu_load_d(x->data, x->dtype, row + j) - *mean;
			sq += d * d;
		}
	}
	*var = count > 0 ? sq / (double)count : 0.0;
}

static int bn_run(struct op_call *c)
{
	const struct bn_params *p = (const struct bn_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	double *a = c->workspace, *b = a + p->n_params, v[CHUNK_N];
	int64_t i, n, ch, j0, row;
	int j, cnt;

	if (p->n_params == 0)
		return 0;
	if (c->workspace_bytes < 2 * (size_t)p->n_params * sizeof(double))
		return cep__set_error(CEP_EINTERNAL, "BatchNormalization: the workspace is too small");
	for (i = 0; i < p->n_params; i++) {
		double scale = cpu_load_d(c->in[1].data, c->in[1].dtype, i);
		double bias = cpu_load_d(c->in[2].data, c->in[2].dtype, i);
		double mean = cpu_load_d(c->in[3].data, c->in[3].dtype, i);
		double var = cpu_load_d(c->in[4].data, c->in[4].dtype, i);

		if (p->training) {
			double bm, bv;

			bn_batch_stats(p, x, i, &bm, &bv);
			for (j = 1; j < c->n_out && j < 3; j++) {
				if (!op_tensor_present(&c->out[j]))
					continue;
				cpu_store_d(c->out[j].data, c->out[j].dtype, i,
					    (j == 1 ? mean : var) * p->momentum +
						    (j == 1 ? bm : bv) * (1.0 - p->momentum));
			}
			mean = bm;
			var = bv;
		}
		a[i] = scale / sqrt(var + p->eps);
		b[i] = bias - mean * a[i];
	}
	if (p->batch == 0 || p->inner == 0)
		return 0;
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
	/* Before 17: onnxruntime's own LayerNormalization, in the ai.onnx
	 * domain, which its transformer optimizer writes into models of
	 * older opsets; the same computation. */
	{ "", "LayerNormalization", 1, 16, 2, 3, 1, 3, 0, 0, ln_infer },
	{ "", "LayerNormalization", 17, OP_OPSET_MAX, 2, 3, 1, 3, 0, 0, ln_infer },
	/* onnxruntime defines it in ai.onnx at opset 1 (so every opset of a
	 * model has it); its CUDA kernels also take it in com.microsoft. */
	{ "", "SimplifiedLayerNormalization", 1, OP_OPSET_MAX, 2, 2, 1, 2, 0, 0, ln_infer },
	{ OP_DOMAIN_MS, "SimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, 2, 2, 1, 2, 0, 0,
	  ln_infer },
	{ OP_DOMAIN_MS, "SkipLayerNormalization", 1, OP_MS_OPSET_MAX, 3, 5, 1, 4, 0, 0,
	  skipln_infer },
	{ OP_DOMAIN_MS, "SkipSimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, 3, 4, 1, 4, 0, 0,
	  skipln_infer },
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
	{ "", "LayerNormalization", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ "", "SimplifiedLayerNormalization", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_HOST,
	  OP_DTS_FLOAT, ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SkipLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  ln_prepare, ln_run },
	{ OP_DOMAIN_MS, "SkipSimplifiedLayerNormalization", 1, OP_MS_OPSET_MAX, BACKEND_HOST,
	  OP_DTS_FLOAT, ln_prepare, ln_run },
	{ "", "BatchNormalization", 1, 13, BACKEND_HOST, NORM_DTS_7, bn_prepare, bn_run },
	{ "", "BatchNormalization", 14, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  bn_prepare, bn_run },
	{ "", "LRN", 1, 12, BACKEND_HOST, NORM_DTS_7, lrn_prepare, lrn_run },
	{ "", "LRN", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, lrn_prepare, lrn_run },
};

_Static_assert(sizeof(struct cpu_ln) <= OP_PARAMS_BYTES, "cpu_ln is too big");

const struct op_family op_family_cpu_norm = {
	"cpu_norm", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
