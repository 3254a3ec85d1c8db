/*
 * normalize.c — the normalizations over groups of elements:
 * InstanceNormalization (opset 6 semantics, from 7), GroupNormalization
 * (opset 18: scale and bias per group; 21: per channel, with stash_type),
 * RMSNormalization (opset 23) and LpNormalization (p 1 or 2).
 *
 * InstanceNormalization and GroupNormalization standardise each sample's
 * group of channels (X is (N, C, D1..Dn); a group per channel for
 * InstanceNormalization) with its mean and biased variance, then scale and
 * shift per channel (per group for GroupNormalization 18). RMSNormalization
 * divides each row of X seen as a matrix split at `axis` by the root of its
 * mean square plus epsilon and multiplies by Scale, which broadcasts one
 * way to X. LpNormalization divides each column along `axis` by its L1 or
 * L2 norm, a zero norm giving zeros.
 *
 * Statistics and norms are computed in double and each result is rounded
 * once to its type, so float16 and bfloat16 are computed in (more than)
 * float32, as every stash_type this accepts asks: float32 (1, the default)
 * or double (11). A half stash_type would round the intermediate results
 * to half, which is not done: it is refused. The device kernels
 * (kernels/cuda/normalize.c) read their parameters through normalize.h.
 */
#include "kernels/cpu/chunk.h"
#include "kernels/cpu/normalize.h"

#include <inttypes.h>

/* ------------------------------------------------------------- shared */

/* Checks stash_type: float32 or double (computed in double here). */
static int norm_stash_check(const struct op_node *node)
{
	int64_t st = op_attr_int(node, "stash_type", CEP_DTYPE_FLOAT32);
	int ret = op_attr_check(node, "stash_type", OP_ATTR_INT);

	if (ret < 0)
		return ret;
	if (st == CEP_DTYPE_FLOAT32 || st == 11 /* double */)
		return 0;
	if (st == CEP_DTYPE_FLOAT16 || st == CEP_DTYPE_BFLOAT16)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: stash_type %" PRId64
				      " (a half type) is not supported; only float32 (1) and double (11) are",
				      node->op_type, st);
	return cep__set_error(CEP_EMODEL, "%s: stash_type %" PRId64
			      " is not a float type", node->op_type, st);
}

/* Checks that input i of x, named name, is a vector of want elements
 * (fixed or symbolic) when its shape is known. */
static int norm_check_vector(const struct op_infer *x, int i, const char *name, int64_t want,
			     const char *what)
{
	const struct op_tensor *t = &x->in[i];
	char s[160];

	if (t->rank < 0)
		return 0;
	op_dims_format(t, NULL, 0, s, sizeof(s));
	if (t->rank != 1 || (op_dim_fixed(want) && op_dim_fixed(t->dims[0]) && t->dims[0] != want))
		return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be [%s]",
				      x->node->op_type, name, s, what);
	return 0;
}

/* --------------------------------------- Instance- and GroupNormalization */

static bool gn_is_instance(const struct op_node *node)
{
	return strcmp(node->op_type, "InstanceNormalization") == 0;
}

static int gn_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0];
	bool inst = gn_is_instance(node);
	const struct op_attr *ng = op_attr_find(node, "num_groups");
	int64_t c = in->rank >= 2 ? in->dims[1] : OP_DIM_UNKNOWN, want;
	int ret, i;

	if ((ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "num_groups", OP_ATTR_INT)) < 0 ||
	    (!inst && node->opset >= 21 && (ret = norm_stash_check(node)) < 0) ||
	    (ret = op_infer_same_dtype(x, 0, 2)) < 0)
		return ret;
	if (in->rank >= 0 && in->rank < 2)
		return cep__set_error(CEP_ESHAPE, "%s: X has rank %d; it must be (N, C, ...)",
				      node->op_type, in->rank);
	if (!inst && ng == NULL)
		return cep__set_error(CEP_EMODEL, "%s: the attribute num_groups is required",
				      node->op_type);
	if (!inst && ng->i < 1)
		return cep__set_error(CEP_EMODEL, "%s: num_groups is %" PRId64
				      ", it must be at least 1", node->op_type, ng->i);
	if (!inst && op_dim_fixed(c) && c % ng->i != 0)
		return cep__set_error(CEP_ESHAPE, "%s: the %" PRId64 " channels of X do not split into num_groups=%"
				      PRId64 " groups", node->op_type, c, ng->i);
	/* Opset 18's scale and bias hold a value per group, the others per channel. */
	want = !inst && node->opset < 21 ? ng->i : c;
	for (i = 1; i < 3; i++) {
		ret = norm_check_vector(x, i, i == 1 ? "scale" : "bias", want,
					!inst && node->opset < 21 ? "num_groups" : "C");
		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

int cpu_groupnorm_read(const struct op_node *node, const struct op_tensor *x,
		       int64_t n_scale, struct cpu_groupnorm *p)
{
	bool inst = gn_is_instance(node);
	int64_t c = x->dims[1];

	p->groups = inst ? c : op_attr_int(node, "num_groups", 1);
	if (p->groups < 1 || c % p->groups != 0)
		return cep__set_error(CEP_ESHAPE, "%s: the %" PRId64 " channels of X do not split into num_groups=%"
				      PRId64 " groups", node->op_type, c, p->groups);
	p->by_group = !inst && node->opset < 21;
	p->per_group = c / p->groups;
	p->inner = op_dims_product(x, 2, x->rank);
	p->rows = x->dims[0] * p->groups;
	p->cols = p->per_group * p->inner;
	p->eps = op_attr_float(node, "epsilon", 1e-5f);
	if (n_scale != (p->by_group ? p->groups : c))
		return cep__set_error(CEP_ESHAPE, "%s: scale and bias have %" PRId64 " elements, X needs %"
				      PRId64, node->op_type, n_scale, p->by_group ? p->groups : c);
	return 0;
}

static int gn_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_groupnorm *p = (struct cpu_groupnorm *)c->params;

	*workspace = 0;
	if (cpu_numel(&c->in[2]) != cpu_numel(&c->in[1]))
		return cep__set_error(CEP_ESHAPE, "%s: scale has %" PRId64 " elements and bias %" PRId64,
				      c->node->op_type, cpu_numel(&c->in[1]), cpu_numel(&c->in[2]));
	return cpu_groupnorm_read(c->node, &c->in[0], cpu_numel(&c->in[1]), p);
}

static int gn_run(struct op_call *c)
{
	const struct cpu_groupnorm *p = (const struct cpu_groupnorm *)c->params;
	const struct op_tensor *x = &c->in[0], *sc = &c->in[1], *bt = &c->in[2];
	const struct op_tensor *y = &c->out[0];
	double v[CHUNK_N];
	int64_t r, j0;
	int j, cnt;

	for (r = 0; r < p->rows; r++) {
		int64_t base = r * p->cols, g = r % p->groups;
		double sum = 0.0, sq = 0.0, m, inv;

		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, base + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sum += v[j];
		}
		m = sum / (double)p->cols;
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, base + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sq += (v[j] - m) * (v[j] - m);
		}
		inv = 1.0 / sqrt(sq / (double)p->cols + p->eps);
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, base + j0, cnt, v);
			for (j = 0; j < cnt; j++) {
				int64_t k = p->by_group ? g : g * p->per_group + (j0 + j) / p->inner;
				double s = cpu_load_d(sc->data, sc->dtype, k);
				double b = cpu_load_d(bt->data, bt->dtype, k);

				v[j] = (v[j] - m) * inv * s + b;
			}
			chunk_store_d(y->data, y->dtype, base + j0, cnt, v);
		}
	}
	return 0;
}

/* -------------------------------------------------------- RMSNormalization */

static int rms_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0], *s = &x->in[1];
	char sx[160], ss[160];
	int axis, d, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "epsilon", OP_ATTR_FLOAT)) < 0 ||
	    (ret = norm_stash_check(node)) < 0)
		return ret;
	/* The schema types Scale and Y apart from X (V and T), but its
	 * function body and ONNX's inference give Y the type of X: the two
	 * agree only when X and Scale share one. */
	if (op_tensor_present(s) && s->dtype != in->dtype)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: X is %s and Scale %s; only one type for both is supported",
				      node->op_type, cep_dtype_name(in->dtype), cep_dtype_name(s->dtype));
	if (in->rank >= 0) {
		ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), in->rank, &axis);
		if (ret < 0)
			return ret;
	}
	if (in->rank >= 0 && s->rank >= 0) {
		op_dims_format(in, NULL, 0, sx, sizeof(sx));
		op_dims_format(s, NULL, 0, ss, sizeof(ss));
		if (s->rank > in->rank)
			return cep__set_error(CEP_ESHAPE, "%s: Scale of shape %s has a higher rank than X of shape %s",
					      node->op_type, ss, sx);
		for (d = 0; d < s->rank; d++) {
			int64_t sd = s->dims[d], xd = in->dims[in->rank - s->rank + d];

			if (op_dim_fixed(sd) && sd != 1 && op_dim_fixed(xd) && xd != sd)
				return cep__set_error(CEP_ESHAPE, "%s: Scale of shape %s does not broadcast to X of shape %s",
						      node->op_type, ss, sx);
		}
	}
	return op_infer_like_input(x);
}

int cpu_rms_read(const struct op_node *node, const struct op_tensor *x,
		 const struct op_tensor *scale, struct cpu_rms *p)
{
	int64_t s = 1;
	int axis, d, ret;

	memset(p, 0, sizeof(*p));
	ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), x->rank, &axis);
	if (ret < 0)
		return ret;
	p->rows = op_dims_product(x, 0, axis);
	p->cols = op_dims_product(x, axis, x->rank);
	p->eps = op_attr_float(node, "epsilon", 1e-5f);
	p->rank = x->rank;
	p->mode = CPU_RMS_COLUMN;
	memcpy(p->dims, x->dims, sizeof(p->dims));
	for (d = x->rank - 1; d >= 0; d--) {
		int sd = d - (x->rank - scale->rank);
		int64_t size = sd >= 0 ? scale->dims[sd] : 1;

		p->stride[d] = size == 1 ? 0 : s;
		s *= size;
		if (d < axis ? size != 1 : size != x->dims[d])
			p->mode = CPU_RMS_BCAST;
	}
	if (s == 1)
		p->mode = CPU_RMS_ONE;
	return 0;
}

static int rms_prepare(struct op_call *c, size_t *workspace)
{
	*workspace = 0;
	return cpu_rms_read(c->node, &c->in[0], &c->in[1], (struct cpu_rms *)c->params);
}

static int rms_run(struct op_call *c)
{
	const struct cpu_rms *p = (const struct cpu_rms *)c->params;
	const struct op_tensor *x = &c->in[0], *sc = &c->in[1], *y = &c->out[0];
	double v[CHUNK_N];
	int64_t r, j0;
	int j, cnt;

	for (r = 0; r < p->rows; r++) {
		int64_t base = r * p->cols;
		double sq = 0.0, inv;

		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, base + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				sq += v[j] * v[j];
		}
		inv = 1.0 / sqrt(sq / (double)p->cols + p->eps);
		for (j0 = 0; j0 < p->cols; j0 += cnt) {
			cnt = p->cols - j0 < CHUNK_N ? (int)(p->cols - j0) : CHUNK_N;
			chunk_load_d(x->data, x->dtype, base + j0, cnt, v);
			for (j = 0; j < cnt; j++)
				v[j] = v[j] * inv * cpu_load_d(sc->data, sc->dtype,
							       cpu_rms_scale_at(p, base + j0 + j));
			chunk_store_d(y->data, y->dtype, base + j0, cnt, v);
		}
	}
	return 0;
}

/* --------------------------------------------------------- LpNormalization */

static int lp_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	int64_t p = op_attr_int(node, "p", 2);
	int axis, ret;

	if ((ret = op_attr_check(node, "axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "p", OP_ATTR_INT)) < 0)
		return ret;
	if (p != 1 && p != 2)
		return cep__set_error(CEP_EMODEL, "%s: p is %" PRId64 "; only 1 and 2 are defined",
				      node->op_type, p);
	if (x->in[0].rank >= 0) {
		ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), x->in[0].rank, &axis);
		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

int cpu_lpnorm_read(const struct op_node *node, const struct op_tensor *x,
		    struct cpu_lpnorm *p)
{
	int axis, ret;

	ret = op_axis_normalize(node, op_attr_int(node, "axis", -1), x->rank, &axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(x, 0, axis);
	p->n = x->dims[axis];
	p->inner = op_dims_product(x, axis + 1, x->rank);
	p->p = (int32_t)op_attr_int(node, "p", 2);
	return 0;
}

static int lp_prepare(struct op_call *c, size_t *workspace)
{
	*workspace = 0;
	return cpu_lpnorm_read(c->node, &c->in[0], (struct cpu_lpnorm *)c->params);
}

static int lp_run(struct op_call *c)
{
	const struct cpu_lpnorm *p = (const struct cpu_lpnorm *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	int64_t o, j, k;

	for (o = 0; o < p->outer; o++) {
		for (j = 0; j < p->inner; j++) {
			int64_t base = o * p->n * p->inner + j;
			double norm = 0.0;

			for (k = 0; k < p->n; k++) {
				double v = cpu_load_d(x->data, x->dtype, base + k * p->inner);

				norm += p->p == 1 ? fabs(v) : v * v;
			}
			if (p->p == 2)
				norm = sqrt(norm);
			for (k = 0; k < p->n; k++) {
				int64_t at = base + k * p->inner;
				double v = cpu_load_d(x->data, x->dtype, at);

				/* A zero norm (every element 0) gives 0, not 0/0. */
				cpu_store_d(y->data, y->dtype, at, norm == 0.0 ? 0.0 : v / norm);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

/* bfloat16 arrived at opset 22 for InstanceNormalization and LpNormalization. */
#define NORMALIZE_DTS_7 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "InstanceNormalization", 1, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, gn_infer },
	/* 18: scale and bias per group; 21: per channel, and stash_type. */
	{ "", "GroupNormalization", 18, 20, 3, 3, 1, 1, 0, 0, gn_infer },
	{ "", "GroupNormalization", 21, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, gn_infer },
	{ "", "RMSNormalization", 23, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, rms_infer },
	{ "", "LpNormalization", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, lp_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "InstanceNormalization", 1, 21, BACKEND_HOST, NORMALIZE_DTS_7, gn_prepare, gn_run },
	{ "", "InstanceNormalization", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT,
	  gn_prepare, gn_run },
	{ "", "GroupNormalization", 18, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, gn_prepare, gn_run },
	{ "", "RMSNormalization", 23, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, rms_prepare, rms_run },
	{ "", "LpNormalization", 1, 21, BACKEND_HOST, NORMALIZE_DTS_7, lp_prepare, lp_run },
	{ "", "LpNormalization", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, lp_prepare, lp_run },
};

_Static_assert(sizeof(struct cpu_groupnorm) <= OP_PARAMS_BYTES, "cpu_groupnorm is too big");
_Static_assert(sizeof(struct cpu_rms) <= OP_PARAMS_BYTES, "cpu_rms is too big");

const struct op_family op_family_cpu_normalize = {
	"cpu_normalize", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
