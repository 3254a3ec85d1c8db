/*
 * xfmr.c — what the host and device kernels of the internal transformer
 * operators share (kernels/xfmr.h): MatMulBias's activations and the
 * inference and geometry of Attention, so that both backends address the
 * operands the same way.
 */
#include "kernels/xfmr.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- MatMulBias */

static const char *const act_names[] = {
	[XFMR_ACT_NONE] = "none",
	[XFMR_ACT_RELU] = "relu",
	[XFMR_ACT_GELU] = "gelu",
	[XFMR_ACT_GELU_TANH] = "gelu_tanh",
};

const char *xfmr_act_name(enum xfmr_act act)
{
	return (unsigned)act < sizeof(act_names) / sizeof(act_names[0]) ? act_names[act] : "?";
}

int xfmr_act_parse(const struct op_node *node, enum xfmr_act *act)
{
	const char *s;
	size_t i;
	int ret;

	ret = op_attr_check(node, "activation", OP_ATTR_STRING);
	if (ret < 0)
		return ret;
	s = op_attr_string(node, "activation", "none");
	for (i = 0; i < sizeof(act_names) / sizeof(act_names[0]); i++) {
		if (strcmp(s, act_names[i]) == 0) {
			*act = (enum xfmr_act)i;
			return 0;
		}
	}
	return cep__set_error(CEP_EMODEL, "%s: activation is '%s', expected none, relu, gelu "
			      "or gelu_tanh", node->op_type, s);
}

float xfmr_act_apply(enum xfmr_act act, float v)
{
	/* The constants and forms of Gelu's reference (kernels/cpu/activation.c). */
	const float k_tanh = 0.7978845608028654f, k_erf = 0.7071067811865476f;

	switch (act) {
	case XFMR_ACT_RELU:
		return v < 0.0f ? 0.0f : v;
	case XFMR_ACT_GELU:
		return 0.5f * v * (1.0f + erff(v * k_erf));
	case XFMR_ACT_GELU_TANH:
		return 0.5f * v * (1.0f + tanhf(k_tanh * (v + 0.044715f * v * v * v)));
	default:
		return v;
	}
}

/* ----------------------------------------------------------------- Attention */

static const char *const attn_inputs[4] = { "Q", "K", "V", "mask" };
static const char *const attn_axes_attr[4] = { "q_axes", "k_axes", "v_axes", "out_axes" };

int xfmr_attn_axes(const struct op_node *node, const char *name, int axes[4])
{
	const int64_t *v;
	bool seen[4] = { false, false, false, false };
	int n, i, ret;

	ret = op_attr_check(node, name, OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	v = op_attr_ints(node, name, &n);
	if (v == NULL) {
		for (i = 0; i < 4; i++)
			axes[i] = i;
		return 0;
	}
	if (n != 4)
		return cep__set_error(CEP_EMODEL, "%s: %s has %d values, not 4", node->op_type,
				      name, n);
	for (i = 0; i < 4; i++) {
		if (v[i] < 0 || v[i] > 3 || seen[v[i]])
			return cep__set_error(CEP_EMODEL, "%s: %s is not a permutation of 0..3",
					      node->op_type, name);
		seen[v[i]] = true;
		axes[i] = (int)v[i];
	}
	return 0;
}

/* One dimension of numpy broadcasting, as op_broadcast() decides it. */
static int64_t attn_bdim(int64_t a, int64_t b, bool *bad)
{
	if (a == b || b == 1)
		return a;
	if (a == 1)
		return b;
	if (op_dim_fixed(a) && op_dim_fixed(b)) {
		*bad = true;
		return a;
	}
	if (op_dim_fixed(a))
		return a;
	if (op_dim_fixed(b))
		return b;
	return OP_DIM_UNKNOWN;
}

/* Whether two sizes that must be equal may be (unknown ones may). */
static bool attn_same(int64_t a, int64_t b)
{
	return !op_dim_fixed(a) || !op_dim_fixed(b) || a == b;
}

/* The logical (b, h, s, d) sizes of rank-4 input t read through axes. */
static void attn_logical(const struct op_tensor *t, const int axes[4], int64_t out[4])
{
	int l;

	for (l = 0; l < 4; l++)
		out[l] = t->dims[axes[l]];
}

/* The mask's size along logical axis l of the scores, 1 where it has none. */
static int64_t attn_mask_dim(const struct op_tensor *m, int l)
{
	int at = l - (4 - m->rank);

	return at >= 0 ? m->dims[at] : 1;
}

/* Sizes of the scores and the output: (B, H, Sq, Sk) in s[], Dk, Dv. */
struct attn_sizes {
	int64_t s[4];
	int64_t dk, dv;
};

static int attn_sizes(const struct op_node *node, const struct op_tensor *in, int n_in,
		      const int axes[4][4], struct attn_sizes *z)
{
	const struct op_tensor *m = n_in > 3 && op_tensor_present(&in[3]) ? &in[3] : NULL;
	int64_t q[4], k[4], v[4];
	bool bad = false;
	int l;

	attn_logical(&in[0], axes[0], q);
	attn_logical(&in[1], axes[1], k);
	attn_logical(&in[2], axes[2], v);
	z->s[XFMR_B] = attn_bdim(attn_bdim(q[XFMR_B], k[XFMR_B], &bad), v[XFMR_B], &bad);
	z->s[XFMR_H] = attn_bdim(attn_bdim(q[XFMR_H], k[XFMR_H], &bad), v[XFMR_H], &bad);
	z->s[2] = q[XFMR_S];
	z->s[3] = k[XFMR_S];
	if (bad)
		return cep__set_error(CEP_ESHAPE, "%s: the batch or head dims of Q, K and V do "
				      "not broadcast", node->op_type);
	if (!attn_same(q[XFMR_D], k[XFMR_D]))
		return cep__set_error(CEP_ESHAPE, "%s: Q's depth %" PRId64 " differs from K's %"
				      PRId64, node->op_type, q[XFMR_D], k[XFMR_D]);
	if (m != NULL) {
		for (l = 0; l < 4; l++)
			z->s[l] = attn_bdim(z->s[l], attn_mask_dim(m, l), &bad);
		if (bad)
			return cep__set_error(CEP_ESHAPE, "%s: the mask does not broadcast to the "
					      "scores", node->op_type);
	}
	if (!attn_same(z->s[3], v[XFMR_S]))
		return cep__set_error(CEP_ESHAPE, "%s: %" PRId64 " keys but V has %" PRId64
				      " rows", node->op_type, z->s[3], v[XFMR_S]);
	z->dk = op_dim_fixed(q[XFMR_D]) ? q[XFMR_D] : k[XFMR_D];
	z->dv = v[XFMR_D];
	return 0;
}

/* Reads the four axes attributes. */
static int attn_all_axes(const struct op_node *node, int axes[4][4])
{
	int i, ret;

	for (i = 0; i < 4; i++) {
		ret = xfmr_attn_axes(node, attn_axes_attr[i], axes[i]);
		if (ret < 0)
			return ret;
	}
	return op_attr_check(node, "scale", OP_ATTR_FLOAT);
}

int xfmr_attn_infer(struct op_infer *x)
{
	struct op_tensor *o = &x->out[0];
	struct attn_sizes z;
	int axes[4][4];
	int i, l, ret;

	ret = attn_all_axes(x->node, axes);
	if (ret < 0)
		return ret;
	ret = op_infer_same_dtype(x, 0, 3);
	if (ret < 0)
		return ret;
	if (!op_dtype_in(x->in[0].dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: Q is %s, a float type is needed",
				      x->node->op_type, cep_dtype_name(x->in[0].dtype));
	o->dtype = x->in[0].dtype;
	o->rank = 4;
	for (i = 0; i < 4; i++)
		o->dims[i] = OP_DIM_UNKNOWN;
	for (i = 0; i < 3; i++) {
		if (x->in[i].rank < 0)
			return 0;
		if (x->in[i].rank != 4)
			return cep__set_error(CEP_ESHAPE, "%s: %s has rank %d, not 4",
					      x->node->op_type, attn_inputs[i], x->in[i].rank);
	}
	if (x->n_in > 3 && op_tensor_present(&x->in[3])) {
		if (x->in[3].rank < 0)
			return 0;
		if (x->in[3].rank > 4)
			return cep__set_error(CEP_ESHAPE, "%s: the mask has rank %d, above 4",
					      x->node->op_type, x->in[3].rank);
	}
	ret = attn_sizes(x->node, x->in, x->n_in, axes, &z);
	if (ret < 0)
		return ret;
	for (l = 0; l < 3; l++)
		o->dims[axes[3][l]] = z.s[l];
	o->dims[axes[3][XFMR_D]] = z.dv;
	return 0;
}

/* Element strides of logical (b, h, s, d) of rank-4 t read through axes;
 * a dim of size 1 gets stride 0, so it broadcasts. */
static void attn_strides(const struct op_tensor *t, const int axes[4], int64_t st[4])
{
	int64_t c[4];
	int r, l;

	c[3] = 1;
	for (r = 2; r >= 0; r--)
		c[r] = c[r + 1] * t->dims[r + 1];
	for (l = 0; l < 4; l++)
		st[l] = t->dims[axes[l]] == 1 ? 0 : c[axes[l]];
}

int xfmr_attn_init(struct xfmr_attn *a, const struct op_node *node,
		   const struct op_tensor *in, int n_in, const struct op_tensor *out)
{
	static const int ident[4] = { 0, 1, 2, 3 };
	const struct op_tensor *m = n_in > 3 && op_tensor_present(&in[3]) ? &in[3] : NULL;
	struct attn_sizes z;
	int axes[4][4];
	int64_t c[4];
	int r, l, ret;

	memset(a, 0, sizeof(*a));
	ret = attn_all_axes(node, axes);
	if (ret < 0)
		return ret;
	ret = attn_sizes(node, in, n_in, axes, &z);
	if (ret < 0)
		return ret;
	a->B = z.s[XFMR_B];
	a->H = z.s[XFMR_H];
	a->Sq = z.s[2];
	a->Sk = z.s[3];
	a->Dk = z.dk;
	a->Dv = z.dv;
	a->scale = op_attr_float(node, "scale", 1.0f);
	attn_strides(&in[0], axes[0], a->q);
	attn_strides(&in[1], axes[1], a->k);
	attn_strides(&in[2], axes[2], a->v);
	a->has_mask = m != NULL;
	if (m != NULL) {
		/* The mask, right-aligned to (b, h, i, j), in its own order. */
		struct op_tensor m4 = { .dtype = m->dtype, .rank = 4 };

		for (l = 0; l < 4; l++)
			m4.dims[l] = attn_mask_dim(m, l);
		attn_strides(&m4, ident, a->m);
	}
	c[3] = 1;
	for (r = 2; r >= 0; r--)
		c[r] = c[r + 1] * out->dims[r + 1];
	for (l = 0; l < 4; l++)
		a->o[l] = c[axes[3][l]];
	return 0;
}
