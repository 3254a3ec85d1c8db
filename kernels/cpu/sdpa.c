/*
 * sdpa.c — ONNX's Attention operator (ai.onnx opsets 23, 24 and 25;
 * scaled dot-product attention, kernels/cpu/sdpa.h says what it computes
 * and how each step is rounded): its schemas, the inference of its four
 * outputs, the geometry both backends read (cpu_sdpa_read()) and its
 * reference kernel. It is not the internal com.cudaep Attention of the
 * transformer fusions (kernels/cpu/attention.c): this one has the
 * specification's causal frontier, caches, grouped heads, softcap,
 * windows and zero rows for fully masked queries.
 *
 * Opset 24 added nonpad_kv_seqlen and lets the mask's last dimension be
 * shorter than the keys, padding it with -inf; in opset 23 it broadcasts.
 * Opset 25 added left_window_size and right_window_size and refuses
 * q_num_heads and kv_num_heads with 4-D inputs. Q, K, V and the caches
 * must share one float type here (the specification lets V's differ); a
 * float mask of another float type than Q's is added as its float32
 * value.
 *
 * The float16 and bfloat16 steps are rounded where the specification's
 * reference (numpy) rounds them, so that half-precision results are the
 * ones the ONNX test data hold, not a more precise float32 evaluation
 * one unit away from them; float32 loses nothing to that.
 */
#include "kernels/cpu/sdpa.h"

#include <inttypes.h>

static const char *const in_names[7] = {
	"Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen",
};

/* Whether input i is there. */
static bool has_in(const struct op_tensor *in, int n_in, int i)
{
	return i < n_in && op_tensor_present(&in[i]);
}

/* ------------------------------------------------------------- attributes */

static int sdpa_attrs_check(const struct op_node *node)
{
	static const char *const ints[] = { "is_causal", "q_num_heads", "kv_num_heads",
					    "qk_matmul_output_mode", "softmax_precision" };
	int64_t v;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if ((ret = op_attr_check(node, ints[i], OP_ATTR_INT)) < 0)
			return ret;
	}
	if ((ret = op_attr_check(node, "scale", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "softcap", OP_ATTR_FLOAT)) < 0)
		return ret;
	v = op_attr_int(node, "is_causal", 0);
	if (v != 0 && v != 1)
		return cep__set_error(CEP_EMODEL, "Attention: is_causal is %" PRId64 ", not 0 or 1", v);
	v = op_attr_int(node, "qk_matmul_output_mode", 0);
	if (v < 0 || v > 3)
		return cep__set_error(CEP_EMODEL, "Attention: qk_matmul_output_mode is %" PRId64
				      ", not 0, 1, 2 or 3", v);
	v = op_attr_int(node, "softmax_precision", CEP_DTYPE_FLOAT32);
	if (v != CEP_DTYPE_FLOAT32 && v != CEP_DTYPE_FLOAT16 && v != CEP_DTYPE_BFLOAT16 &&
	    v != 11 /* double */)
		return cep__set_error(CEP_EMODEL, "Attention: softmax_precision is %" PRId64
				      ", not a float type (1, 10, 11 or 16)", v);
	if (!(op_attr_float(node, "softcap", 0.0f) >= 0.0f))
		return cep__set_error(CEP_EMODEL, "Attention: softcap is %g, it must not be negative",
				      (double)op_attr_float(node, "softcap", 0.0f));
	if (!(op_attr_float(node, "scale", 1.0f) >= 0.0f))
		return cep__set_error(CEP_EMODEL, "Attention: scale is %g; it must not be negative "
				      "(Q and K are each multiplied by its square root)",
				      (double)op_attr_float(node, "scale", 1.0f));
	for (i = 1; i < 3; i++) {
		const struct op_attr *a = op_attr_find(node, ints[i]);

		if (a != NULL && (a->i < 1 || a->i > INT32_MAX))
			return cep__set_error(CEP_EMODEL, "Attention: %s is %" PRId64
					      ", it must be a positive count", ints[i], a->i);
	}
	if (node->opset < 25)
		return 0;
	for (i = 0; i < 2; i++) {
		const char *w = i == 0 ? "left_window_size" : "right_window_size";

		if ((ret = op_attr_check(node, w, OP_ATTR_INT)) < 0)
			return ret;
		v = op_attr_int(node, w, -1);
		if (v < -1)
			return cep__set_error(CEP_EMODEL, "Attention: %s is %" PRId64 ", it must be -1 "
					      "(unbounded) or a count of keys", w, v);
	}
	return 0;
}

/* ------------------------------------------------------------------ types */

static int sdpa_types_check(const struct op_node *node, const struct op_tensor *in, int n_in)
{
	cep_dtype q = in[SDPA_IN_Q].dtype, v = in[SDPA_IN_V].dtype;
	int i;

	if (!op_dtype_in(q, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Attention: Q is %s, a float type is needed",
				      cep_dtype_name(q));
	if (!op_dtype_in(v, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Attention: V is %s, a float type is needed",
				      cep_dtype_name(v));
	if (in[SDPA_IN_K].dtype != q)
		return cep__set_error(CEP_EDTYPE, "Attention: K is %s but Q is %s",
				      cep_dtype_name(in[SDPA_IN_K].dtype), cep_dtype_name(q));
	if (v != q)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: V is %s but Q is %s; only Q, K "
				      "and V of one type are supported", cep_dtype_name(v),
				      cep_dtype_name(q));
	for (i = SDPA_IN_PAST_K; i <= SDPA_IN_PAST_V; i++) {
		if (has_in(in, n_in, i) && in[i].dtype != q)
			return cep__set_error(CEP_EDTYPE, "Attention: %s is %s but Q is %s", in_names[i],
					      cep_dtype_name(in[i].dtype), cep_dtype_name(q));
	}
	if (has_in(in, n_in, SDPA_IN_MASK) && in[SDPA_IN_MASK].dtype != CEP_DTYPE_BOOL &&
	    !op_dtype_in(in[SDPA_IN_MASK].dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: attn_mask is %s; only a bool or "
				      "a float mask is supported",
				      cep_dtype_name(in[SDPA_IN_MASK].dtype));
	if (has_in(in, n_in, SDPA_IN_NONPAD) && in[SDPA_IN_NONPAD].dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "Attention: nonpad_kv_seqlen is %s, not int64",
				      cep_dtype_name(in[SDPA_IN_NONPAD].dtype));
	if (has_in(in, n_in, SDPA_IN_PAST_K) != has_in(in, n_in, SDPA_IN_PAST_V))
		return cep__set_error(CEP_EMODEL, "Attention: past_key and past_value go together; "
				      "only %s is given", has_in(in, n_in, SDPA_IN_PAST_K) ?
				      "past_key" : "past_value");
	if (has_in(in, n_in, SDPA_IN_NONPAD) && has_in(in, n_in, SDPA_IN_PAST_K))
		return cep__set_error(CEP_EMODEL, "Attention: nonpad_kv_seqlen cannot be used with "
				      "past_key and past_value");
	return 0;
}

/* ----------------------------------------------------------------- shapes */

/* The sizes of one node, each fixed, symbolic or OP_DIM_UNKNOWN. */
struct sdpa_dims {
	int64_t B, Hq, Hkv, Sq, Skv, P, T, Dk, Dv;
	int64_t y_hidden;         /* Hq * Dv, Y's last dim when 3-D */
	int64_t mdims[4];         /* the mask right-aligned to (b, h, i, j), 1
	                           * where it has no dim */
};

/* Whether two sizes that must be equal may be (unknown ones may). */
static bool dim_same(int64_t a, int64_t b)
{
	return !op_dim_fixed(a) || !op_dim_fixed(b) || a == b;
}

/* Of two sizes known to be equal, the better known: a fixed one, else a
 * symbol, else unknown. */
static int64_t dim_pick(int64_t a, int64_t b)
{
	if (op_dim_fixed(a) || (op_dim_symbolic(a) && !op_dim_fixed(b)))
		return a;
	return b;
}

/* Fails unless size a (what of tensor x) may equal size b (of tensor y). */
static int dim_check(const char *x, const char *what, int64_t a, const char *y, int64_t b)
{
	if (dim_same(a, b))
		return 0;
	return cep__set_error(CEP_ESHAPE, "Attention: %s has %" PRId64 " %s but %s has %" PRId64,
			      x, a, what, y, b);
}

/* The head size of a 3-D operand: its hidden size split into heads. */
static int dim_split(const char *x, int64_t hidden, int64_t heads, const char *attr,
		     int64_t *out)
{
	if (heads == 1) {
		*out = hidden;
		return 0;
	}
	if (!op_dim_fixed(hidden)) {
		*out = OP_DIM_UNKNOWN;
		return 0;
	}
	if (hidden % heads != 0)
		return cep__set_error(CEP_ESHAPE, "Attention: %s's hidden size %" PRId64 " does not "
				      "split into %s=%" PRId64 " heads", x, hidden, attr, heads);
	*out = hidden / heads;
	return 0;
}

/* B, H, S and D of Q, K and V (3-D or 4-D, ranks known and equal). */
static int sdpa_dims_qkv(const struct op_node *node, const struct op_tensor *in,
			 struct sdpa_dims *z)
{
	const struct op_tensor *q = &in[SDPA_IN_Q], *k = &in[SDPA_IN_K], *v = &in[SDPA_IN_V];
	const struct op_attr *qh = op_attr_find(node, "q_num_heads");
	const struct op_attr *kh = op_attr_find(node, "kv_num_heads");
	int64_t dk_k = OP_DIM_UNKNOWN;
	int ret;

	z->B = q->dims[0];
	if (q->rank == 3) {
		if (qh == NULL || kh == NULL)
			return cep__set_error(CEP_EMODEL, "Attention: 3-D Q, K and V need the "
					      "attributes q_num_heads and kv_num_heads");
		z->Hq = qh->i;
		z->Hkv = kh->i;
		z->Sq = q->dims[1];
		z->Skv = k->dims[1];
		if ((ret = dim_split("Q", q->dims[2], z->Hq, "q_num_heads", &z->Dk)) < 0 ||
		    (ret = dim_split("K", k->dims[2], z->Hkv, "kv_num_heads", &dk_k)) < 0 ||
		    (ret = dim_split("V", v->dims[2], z->Hkv, "kv_num_heads", &z->Dv)) < 0 ||
		    (ret = dim_check("V", "rows", v->dims[1], "K", z->Skv)) < 0)
			return ret;
	} else {
		if (node->opset >= 25 && (qh != NULL || kh != NULL))
			return cep__set_error(CEP_EMODEL, "Attention: from opset 25 q_num_heads and "
					      "kv_num_heads go only with 3-D Q, K and V");
		z->Hq = q->dims[1];
		z->Hkv = k->dims[1];
		z->Sq = q->dims[2];
		z->Skv = k->dims[2];
		z->Dk = q->dims[3];
		dk_k = k->dims[3];
		z->Dv = v->dims[3];
		if ((qh && (ret = dim_check("Q", "heads", z->Hq, "q_num_heads", qh->i)) < 0) ||
		    (kh && (ret = dim_check("K", "heads", z->Hkv, "kv_num_heads", kh->i)) < 0) ||
		    (ret = dim_check("V", "heads", v->dims[1], "K", z->Hkv)) < 0 ||
		    (ret = dim_check("V", "rows", v->dims[2], "K", z->Skv)) < 0)
			return ret;
		z->Hkv = dim_pick(z->Hkv, v->dims[1]);
	}
	if ((ret = dim_check("K", "batch entries", k->dims[0], "Q", z->B)) < 0 ||
	    (ret = dim_check("V", "batch entries", v->dims[0], "Q", z->B)) < 0 ||
	    (ret = dim_check("K", "elements per head", dk_k, "Q", z->Dk)) < 0)
		return ret;
	z->B = dim_pick(dim_pick(z->B, k->dims[0]), v->dims[0]);
	z->Dk = dim_pick(z->Dk, dk_k);
	z->Skv = dim_pick(z->Skv, v->dims[q->rank - 2]);
	if (op_dim_fixed(z->Hq) && op_dim_fixed(z->Hkv) &&
	    (z->Hkv == 0 ? z->Hq != 0 : z->Hq % z->Hkv != 0))
		return cep__set_error(CEP_ESHAPE, "Attention: %" PRId64 " query heads do not share "
				      "%" PRId64 " key and value heads evenly", z->Hq, z->Hkv);
	return 0;
}

/* The past caches: P, checked against the other sizes. */
static int sdpa_dims_past(const struct op_tensor *in, int n_in, struct sdpa_dims *z)
{
	const struct op_tensor *pk = &in[SDPA_IN_PAST_K], *pv = &in[SDPA_IN_PAST_V];
	int ret, i;

	z->P = 0;
	if (!has_in(in, n_in, SDPA_IN_PAST_K))
		return 0;
	z->P = OP_DIM_UNKNOWN;
	for (i = SDPA_IN_PAST_K; i <= SDPA_IN_PAST_V; i++) {
		if (in[i].rank >= 0 && in[i].rank != 4)
			return cep__set_error(CEP_ESHAPE, "Attention: %s has rank %d, not 4",
					      in_names[i], in[i].rank);
	}
	if (pk->rank < 0 || pv->rank < 0)
		return 0;
	if ((ret = dim_check("past_key", "batch entries", pk->dims[0], "Q", z->B)) < 0 ||
	    (ret = dim_check("past_value", "batch entries", pv->dims[0], "Q", z->B)) < 0 ||
	    (ret = dim_check("past_key", "heads", pk->dims[1], "K", z->Hkv)) < 0 ||
	    (ret = dim_check("past_value", "heads", pv->dims[1], "K", z->Hkv)) < 0 ||
	    (ret = dim_check("past_value", "rows", pv->dims[2], "past_key", pk->dims[2])) < 0 ||
	    (ret = dim_check("past_key", "elements per head", pk->dims[3], "Q", z->Dk)) < 0 ||
	    (ret = dim_check("past_value", "elements per head", pv->dims[3], "V", z->Dv)) < 0)
		return ret;
	z->P = dim_pick(pk->dims[2], pv->dims[2]);
	z->Dv = dim_pick(z->Dv, pv->dims[3]);
	return 0;
}

/* The mask against the scores (B, Hq, Sq, T) and nonpad_kv_seqlen against B. */
static int sdpa_dims_mask(const struct op_node *node, const struct op_tensor *in, int n_in,
			  struct sdpa_dims *z)
{
	const struct op_tensor *m = &in[SDPA_IN_MASK], *np = &in[SDPA_IN_NONPAD];
	const int64_t scores[4] = { z->B, z->Hq, z->Sq, z->T };
	static const char *const axis[4] = { "batch", "head", "query", "key" };
	int l;

	for (l = 0; l < 4; l++)
		z->mdims[l] = 1;
	if (has_in(in, n_in, SDPA_IN_NONPAD) && np->rank >= 0 &&
	    (np->rank != 1 || !dim_same(np->dims[0], z->B)))
		return cep__set_error(CEP_ESHAPE, "Attention: nonpad_kv_seqlen must hold one count "
				      "per batch entry (%" PRId64 ")", z->B);
	if (!has_in(in, n_in, SDPA_IN_MASK) || m->rank < 0)
		return 0;
	if (m->rank > 4)
		return cep__set_error(CEP_ESHAPE, "Attention: attn_mask has rank %d, above 4", m->rank);
	for (l = 4 - m->rank; l < 4; l++)
		z->mdims[l] = m->dims[l - (4 - m->rank)];
	for (l = 0; l < 4; l++) {
		int64_t d = z->mdims[l], want = scores[l];

		/* From opset 24 a short last dim is padded rather than broadcast. */
		if (l == 3 && node->opset >= 24 && m->rank > 0) {
			if (op_dim_fixed(d) && op_dim_fixed(want) && d > want)
				return cep__set_error(CEP_ESHAPE, "Attention: attn_mask covers %" PRId64
						      " keys, more than the %" PRId64 " there are",
						      d, want);
			continue;
		}
		if (d != 1 && !dim_same(d, want))
			return cep__set_error(CEP_ESHAPE, "Attention: attn_mask has %" PRId64 " along "
					      "the %s axis, which does not broadcast to %" PRId64,
					      d, axis[l], want);
	}
	return 0;
}

/* Every size of the node from its inputs (ranks of Q, K and V known). */
static int sdpa_dims(const struct op_node *node, const struct op_tensor *in, int n_in,
		     struct sdpa_dims *z)
{
	int ret;

	if ((ret = sdpa_dims_qkv(node, in, z)) < 0 || (ret = sdpa_dims_past(in, n_in, z)) < 0)
		return ret;
	if (op_dim_fixed(z->P) && op_dim_fixed(z->Skv))
		z->T = z->P + z->Skv;
	else
		z->T = z->P == 0 ? z->Skv : OP_DIM_UNKNOWN;
	if (op_dim_fixed(z->Hq) && op_dim_fixed(z->Dv)) {
		if (z->Dv > 0 && z->Hq > OP_MAX_NUMEL / z->Dv)
			return cep__set_error(CEP_ELIMIT, "Attention: %" PRId64 " heads of %" PRId64
					      " elements are too many", z->Hq, z->Dv);
		z->y_hidden = z->Hq * z->Dv;
	} else {
		/* As many query as value heads: Y's rows are as long as V's. */
		z->y_hidden = z->Hq == z->Hkv && in[SDPA_IN_V].rank == 3 ? in[SDPA_IN_V].dims[2]
									  : OP_DIM_UNKNOWN;
	}
	return sdpa_dims_mask(node, in, n_in, z);
}

/* -------------------------------------------------------------- inference */

static void out_set(struct op_tensor *o, cep_dtype dt, int rank, const int64_t *dims)
{
	o->dtype = dt;
	o->rank = rank;
	if (rank > 0)
		memcpy(o->dims, dims, sizeof(int64_t) * (size_t)rank);
}

static int sdpa_infer(struct op_infer *x)
{
	const struct op_tensor *in = x->in;
	cep_dtype t = in[SDPA_IN_Q].dtype;
	struct sdpa_dims z;
	int rank = in[SDPA_IN_Q].rank, i, ret;

	if ((ret = sdpa_attrs_check(x->node)) < 0 || (ret = sdpa_types_check(x->node, in, x->n_in)) < 0)
		return ret;
	for (i = 0; i < x->n_out; i++)
		out_set(&x->out[i], t, -1, NULL);
	for (i = SDPA_IN_Q; i <= SDPA_IN_V; i++) {
		if (in[i].rank >= 0 && in[i].rank != 3 && in[i].rank != 4)
			return cep__set_error(CEP_ESHAPE, "Attention: %s has rank %d, not 3 or 4",
					      in_names[i], in[i].rank);
		if (in[i].rank < 0)
			return 0;
		if (in[i].rank != rank)
			return cep__set_error(CEP_ESHAPE, "Attention: Q, K and V must have one rank; "
					      "%s has %d and Q %d", in_names[i], in[i].rank, rank);
	}
	ret = sdpa_dims(x->node, in, x->n_in, &z);
	if (ret < 0)
		return ret;
	if (rank == 3)
		out_set(&x->out[SDPA_OUT_Y], t, 3, (const int64_t[]){ z.B, z.Sq, z.y_hidden });
	else
		out_set(&x->out[SDPA_OUT_Y], t, 4, (const int64_t[]){ z.B, z.Hq, z.Sq, z.Dv });
	if (x->n_out > SDPA_OUT_PRESENT_K)
		out_set(&x->out[SDPA_OUT_PRESENT_K], t, 4, (const int64_t[]){ z.B, z.Hkv, z.T, z.Dk });
	if (x->n_out > SDPA_OUT_PRESENT_V)
		out_set(&x->out[SDPA_OUT_PRESENT_V], t, 4, (const int64_t[]){ z.B, z.Hkv, z.T, z.Dv });
	if (x->n_out > SDPA_OUT_QK)
		out_set(&x->out[SDPA_OUT_QK], t, 4, (const int64_t[]){ z.B, z.Hq, z.Sq, z.T });
	return 0;
}

/* --------------------------------------------------------------- geometry */

int cpu_sdpa_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		  struct sdpa_geom *g)
{
	cep_dtype t = in[SDPA_IN_Q].dtype;
	struct sdpa_dims z;
	int64_t c, prec;
	double scale;
	int l, ret;

	memset(g, 0, sizeof(*g));
	if ((ret = sdpa_attrs_check(node)) < 0 || (ret = sdpa_types_check(node, in, n_in)) < 0 ||
	    (ret = sdpa_dims(node, in, n_in, &z)) < 0)
		return ret;
	if (z.Dk > SDPA_MAX_DEPTH || z.Dv > SDPA_MAX_DEPTH)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: heads of %" PRId64 " and %" PRId64
				      " elements are deeper than the %d supported", z.Dk, z.Dv,
				      SDPA_MAX_DEPTH);
	g->B = z.B;
	g->Hq = z.Hq;
	g->Hkv = z.Hkv;
	g->Sq = z.Sq;
	g->Skv = z.Skv;
	g->P = z.P;
	g->T = z.T;
	g->Dk = z.Dk;
	g->Dv = z.Dv;
	scale = op_attr_find(node, "scale") != NULL ? (double)op_attr_float(node, "scale", 1.0f)
						    : z.Dk > 0 ? 1.0 / sqrt((double)z.Dk) : 1.0;
	g->sq = cpu_round_f((float)sqrt(scale), t);
	g->softcap = op_attr_float(node, "softcap", 0.0f);
	g->left = node->opset >= 25 ? op_attr_int(node, "left_window_size", -1) : -1;
	g->right = node->opset >= 25 ? op_attr_int(node, "right_window_size", -1) : -1;
	prec = op_attr_int(node, "softmax_precision", (int64_t)t);
	g->prec = prec == CEP_DTYPE_FLOAT16 || prec == CEP_DTYPE_BFLOAT16 ? (int32_t)prec
									  : CEP_DTYPE_FLOAT32;
	g->rank3 = in[SDPA_IN_Q].rank == 3;
	g->causal = op_attr_int(node, "is_causal", 0) != 0;
	g->nonpad = has_in(in, n_in, SDPA_IN_NONPAD);
	g->qk_mode = (int32_t)op_attr_int(node, "qk_matmul_output_mode", 0);
	g->mT = z.T;
	if (has_in(in, n_in, SDPA_IN_MASK)) {
		g->mask = in[SDPA_IN_MASK].dtype == CEP_DTYPE_BOOL ? SDPA_MASK_BOOL : SDPA_MASK_ADD;
		if (node->opset >= 24 && in[SDPA_IN_MASK].rank > 0)
			g->mT = z.mdims[3];
		/* Contiguous strides, 0 along a dim of 1 so that it broadcasts. */
		for (l = 3, c = 1; l >= 0; l--) {
			g->m[l] = z.mdims[l] == 1 ? 0 : c;
			c *= z.mdims[l];
		}
	}
	return 0;
}

/* ----------------------------------------------------------------- kernel */

static int sdpa_prepare(struct op_call *c, size_t *workspace)
{
	struct sdpa_geom *g = (struct sdpa_geom *)c->params;
	int ret;

	_Static_assert(sizeof(*g) <= OP_PARAMS_BYTES, "params too large");
	ret = cpu_sdpa_read(c->node, c->in, c->n_in, g);
	if (ret < 0)
		return ret;
	/* A row of scores, the query row and the output sums. */
	*workspace = (size_t)(g->T + g->Dk + g->Dv) * sizeof(float);
	return 0;
}

/* Whether output i of the call is wanted. */
static bool out_wanted(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) && c->out[i].data != NULL;
}

/* Writes present_key or present_value (depth elements a row): the past
 * rows, then the new ones. */
static void sdpa_present(const struct sdpa_geom *g, void *dst, const void *past,
			 const void *now, int64_t depth, size_t es)
{
	int64_t b, kh, j;

	for (b = 0; b < g->B; b++) {
		for (kh = 0; kh < g->Hkv; kh++) {
			for (j = 0; j < g->T; j++) {
				const char *src = j < g->P ?
					(const char *)past + sdpa_cache_at(g, b, kh, j, g->P, depth) * es :
					(const char *)now + sdpa_kv_at(g, b, kh, j - g->P, depth) * es;

				memcpy((char *)dst + sdpa_cache_at(g, b, kh, j, g->T, depth) * es, src,
				       (size_t)depth * es);
			}
		}
	}
}

/* Turns the n scores s of a row (values of type t) into its
 * probabilities, computed in precision u and rounded back to t as sdpa.h
 * says; all_masked: its bias is -inf for every key. */
static void sdpa_softmax(float *s, int64_t n, bool all_masked, cep_dtype t, cep_dtype u)
{
	float mx = -INFINITY, sum = 0.0f;
	bool nan = false;
	double wide = 0.0;
	int64_t j;

	for (j = 0; j < n; j++) {
		s[j] = cpu_round_f(s[j], u);
		if (s[j] != s[j])
			nan = true;
		else if (s[j] > mx)
			mx = s[j];
	}
	if (all_masked || nan) {
		for (j = 0; j < n; j++)
			s[j] = all_masked ? 0.0f : NAN;
		return;
	}
	/* Every score -inf: each weight is 0, as the reference's guarded
	 * maximum makes it. */
	if (mx == -INFINITY)
		mx = 0.0f;
	for (j = 0; j < n; j++) {
		s[j] = cpu_round_f(expf(cpu_round_f(s[j] - mx, u)), u);
		if (u == CEP_DTYPE_BFLOAT16)
			sum = cpu_round_f(sum + s[j], u);
		else
			wide += s[j];
	}
	if (u != CEP_DTYPE_BFLOAT16)
		sum = cpu_round_f((float)wide, u);
	if (sum == 0.0f)
		sum = 1.0f;
	for (j = 0; j < n; j++)
		s[j] = cpu_round_f(cpu_round_f(s[j] / sum, u), t);
}

/* One query row (b, h, i): its scores into s (qk_matmul_output as its
 * mode asks), the softmax, and Y's row from the sums in acc; q holds the
 * scaled query row. */
static void sdpa_row(const struct op_call *c, const struct sdpa_geom *g, int64_t b, int64_t h,
		     int64_t i, float *s, float *q, float *acc)
{
	cep_dtype t = c->in[SDPA_IN_Q].dtype;
	const void *k = c->in[SDPA_IN_K].data, *v = c->in[SDPA_IN_V].data;
	const void *pk = g->P ? c->in[SDPA_IN_PAST_K].data : NULL;
	const void *pv = g->P ? c->in[SDPA_IN_PAST_V].data : NULL;
	const void *mask = g->mask ? c->in[SDPA_IN_MASK].data : NULL;
	cep_dtype mdt = g->mask ? c->in[SDPA_IN_MASK].dtype : CEP_DTYPE_UNDEFINED;
	const int64_t *nonpad = g->nonpad ? c->in[SDPA_IN_NONPAD].data : NULL;
	void *qk = out_wanted(c, SDPA_OUT_QK) ? c->out[SDPA_OUT_QK].data : NULL;
	int64_t kh = h / (g->Hq / g->Hkv), qa = sdpa_q_at(g, b, h, i), j, d;
	bool all_masked = true;

	for (d = 0; d < g->Dk; d++)
		q[d] = cpu_round_f(cpu_load_f(c->in[SDPA_IN_Q].data, t, qa + d) * g->sq, t);
	for (j = 0; j < g->T; j++) {
		const void *kp = j < g->P ? pk : k;
		int64_t ka = j < g->P ? sdpa_cache_at(g, b, kh, j, g->P, g->Dk)
				      : sdpa_kv_at(g, b, kh, j - g->P, g->Dk);
		float bias = sdpa_bias(g, mask, mdt, nonpad, b, h, i, j), dot = 0.0f, raw, capped;

		for (d = 0; d < g->Dk; d++)
			dot += q[d] * cpu_round_f(cpu_load_f(kp, t, ka + d) * g->sq, t);
		raw = cpu_round_f(dot, t);
		capped = sdpa_softcap(g, raw, t);
		s[j] = cpu_round_f(capped + bias, t);
		if (bias != -INFINITY)
			all_masked = false;
		if (qk != NULL && g->qk_mode < 3)
			cpu_store_f(qk, t, sdpa_qk_at(g, b, h, i, j),
				    g->qk_mode == 0 ? raw : g->qk_mode == 1 ? capped : s[j]);
	}
	sdpa_softmax(s, g->T, all_masked, t, (cep_dtype)g->prec);
	memset(acc, 0, (size_t)g->Dv * sizeof(float));
	for (j = 0; j < g->T; j++) {
		const void *vp = j < g->P ? pv : v;
		int64_t va = j < g->P ? sdpa_cache_at(g, b, kh, j, g->P, g->Dv)
				      : sdpa_kv_at(g, b, kh, j - g->P, g->Dv);

		if (qk != NULL && g->qk_mode == 3)
			cpu_store_f(qk, t, sdpa_qk_at(g, b, h, i, j), s[j]);
		for (d = 0; d < g->Dv; d++)
			acc[d] += s[j] * cpu_load_f(vp, t, va + d);
	}
	for (d = 0; d < g->Dv; d++)
		cpu_store_f(c->out[SDPA_OUT_Y].data, t, sdpa_y_at(g, b, h, i) + d, acc[d]);
}

static int sdpa_run(struct op_call *c)
{
	const struct sdpa_geom *g = (const struct sdpa_geom *)c->params;
	size_t es = cep_dtype_size(c->in[SDPA_IN_Q].dtype);
	float *s = c->workspace, *q = s + g->T, *acc = q + g->Dk;
	const void *pk = g->P ? c->in[SDPA_IN_PAST_K].data : NULL;
	const void *pv = g->P ? c->in[SDPA_IN_PAST_V].data : NULL;
	int64_t b, h, i;

	if (out_wanted(c, SDPA_OUT_PRESENT_K))
		sdpa_present(g, c->out[SDPA_OUT_PRESENT_K].data, pk, c->in[SDPA_IN_K].data, g->Dk,
			     es);
	if (out_wanted(c, SDPA_OUT_PRESENT_V))
		sdpa_present(g, c->out[SDPA_OUT_PRESENT_V].data, pv, c->in[SDPA_IN_V].data, g->Dv,
			     es);
	for (b = 0; b < g->B; b++) {
		for (h = 0; h < g->Hq; h++) {
			for (i = 0; i < g->Sq; i++)
				sdpa_row(c, g, b, h, i, s, q, acc);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ table */

static const struct op_schema schemas[] = {
	{ "", "Attention", 23, 23, 3, 6, 1, 4, 0, 0, sdpa_infer },
	{ "", "Attention", 24, 24, 3, 7, 1, 4, 0, 0, sdpa_infer },
	{ "", "Attention", 25, OP_OPSET_MAX, 3, 7, 1, 4, 0, 0, sdpa_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Attention", 23, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, sdpa_prepare,
	  sdpa_run },
};

const struct op_family op_family_cpu_sdpa = {
	"cpu_sdpa", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
