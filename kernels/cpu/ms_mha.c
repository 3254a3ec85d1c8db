/*
 * ms_mha.c — com.microsoft MultiHeadAttention (kernels/cpu/ms_mha.h): its
 * schema, its inference and its reference kernel.
 *
 * The reference gathers Q (B, N, S, H), K (B, N, T, H) and V (B, N, T, Hv)
 * into its workspace in the type, each element of a new key the input
 * plus its bias in float rounded once, the past keys copied ahead of them;
 * the present outputs are copies of K and V. Then Attention's mask
 * (ms_attn_mask_fill(), over S queries and T keys with the past as the
 * causal offset) and its attention proper (ms_attn_core()) over those
 * buffers, writing the output (B, S, N * Hv) through its strides.
 */
#include "kernels/cpu/ms_mha.h"

#include <inttypes.h>

static const char *const mha_inputs[MS_MHA_INPUTS] = {
	"query", "key", "value", "bias", "key_padding_mask", "attention_bias",
	"past_key", "past_value", "past_sequence_length", "cache_indirection",
};

/* ---------------------------------------------------------------- inference */

/* Whether two sizes that must be equal may be (unknown ones may). */
static bool mha_same(int64_t a, int64_t b)
{
	return !op_dim_fixed(a) || !op_dim_fixed(b) || a == b;
}

/* Input i when given, else NULL. */
static const struct op_tensor *mha_in(const struct op_tensor *in, int n_in, int i)
{
	return i < n_in && op_tensor_present(&in[i]) ? &in[i] : NULL;
}

static int mha_check_attrs(const struct op_node *node)
{
	const struct op_attr *heads = op_attr_find(node, "num_heads");
	int ret;

	if ((ret = op_attr_check(node, "num_heads", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "unidirectional", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "scale", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "mask_filter_value", OP_ATTR_FLOAT)) < 0)
		return ret;
	if (heads == NULL || heads->i < 1)
		return cep__set_error(CEP_EMODEL, "MultiHeadAttention: num_heads is %s; it is required and at least 1",
				      heads ? "below 1" : "missing");
	if (op_attr_int(node, "unidirectional", 0) & ~INT64_C(1))
		return cep__set_error(CEP_EMODEL, "MultiHeadAttention: unidirectional is %" PRId64 ", not 0 or 1",
				      op_attr_int(node, "unidirectional", 0));
	return 0;
}

/* The sizes every form tells, unknown (OP_DIM_UNKNOWN) where the dims do
 * not: batch, queries, new keys, past keys, depths, and where K and V come
 * from. Checks the forms of query, key, value, bias and the past. */
struct mha_dims {
	int64_t B, S, L, P, T, H, Hv;
	int kv;
};

static int mha_depth(int64_t hidden, int64_t heads, const char *what, int64_t *depth)
{
	*depth = OP_DIM_UNKNOWN;
	if (!op_dim_fixed(hidden))
		return 0;
	if (hidden % heads != 0)
		return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: %s's hidden size %" PRId64
				      " is not a multiple of num_heads %" PRId64, what, hidden, heads);
	*depth = hidden / heads;
	return 0;
}

static int mha_dims_of(const struct op_node *node, const struct op_tensor *in, int n_in,
		       struct mha_dims *d)
{
	const struct op_tensor *q = &in[MS_MHA_QUERY], *k = mha_in(in, n_in, MS_MHA_KEY);
	const struct op_tensor *v = mha_in(in, n_in, MS_MHA_VALUE);
	const struct op_tensor *bias = mha_in(in, n_in, MS_MHA_BIAS);
	const struct op_tensor *pk = mha_in(in, n_in, MS_MHA_PAST_KEY);
	const struct op_tensor *pv = mha_in(in, n_in, MS_MHA_PAST_VALUE);
	int64_t N = op_attr_int(node, "num_heads", 1), D = OP_DIM_UNKNOWN;
	int ret;

	d->B = d->S = d->L = d->T = d->H = d->Hv = OP_DIM_UNKNOWN;
	d->P = 0;
	d->kv = -1;
	if ((pk == NULL) != (pv == NULL))
		return cep__set_error(CEP_EMODEL, "MultiHeadAttention: past_key and past_value must be given together");
	if (q->rank < 0)
		return 0;
	if (q->rank == 5) {
		if (k != NULL || v != NULL)
			return cep__set_error(CEP_EMODEL, "MultiHeadAttention: a packed query (batch, sequence, num_heads, 3, head_size) takes no key or value");
		if (!mha_same(q->dims[2], N) || !mha_same(q->dims[3], 3))
			return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: a packed query must be (batch, sequence, num_heads = %" PRId64 ", 3, head_size)",
					      N);
		d->B = q->dims[0];
		d->S = d->L = q->dims[1];
		d->H = d->Hv = q->dims[4];
		D = op_dim_fixed(d->H) ? N * d->H : OP_DIM_UNKNOWN;
		d->kv = MS_MHA_KV_QKV;
	} else if (q->rank == 3) {
		d->B = q->dims[0];
		d->S = q->dims[1];
		D = q->dims[2];
		if ((ret = mha_depth(D, N, "query", &d->H)) < 0)
			return ret;
		if (k == NULL)
			return cep__set_error(CEP_EUNSUPPORTED, "MultiHeadAttention: a query (batch, sequence, hidden) without key is not supported (packed Q, K and V must be (batch, sequence, num_heads, 3, head_size))");
		if (k->rank < 0 || (v != NULL && v->rank < 0))
			return 0;
		if (!mha_same(k->dims[0], d->B))
			return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: key's batch %" PRId64 " is not query's %" PRId64,
					      k->dims[0], d->B);
		switch (k->rank) {
		case 3:
			if (v == NULL || v->rank != 3)
				return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: a key (batch, kv_sequence, hidden) needs a value (batch, kv_sequence, v_hidden)");
			if (!mha_same(k->dims[2], D) || !mha_same(v->dims[0], d->B) ||
			    !mha_same(v->dims[1], k->dims[1]))
				return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: key must be (batch, kv_sequence, hidden) and value (batch, kv_sequence, v_hidden) with query's batch and hidden");
			d->L = k->dims[1];
			if ((ret = mha_depth(v->dims[2], N, "value", &d->Hv)) < 0)
				return ret;
			d->kv = MS_MHA_KV_BSD;
			break;
		case 5:
			if (v != NULL)
				return cep__set_error(CEP_EMODEL, "MultiHeadAttention: a packed key (batch, kv_sequence, num_heads, 2, head_size) takes no value");
			if (!mha_same(k->dims[2], N) || !mha_same(k->dims[3], 2) ||
			    !mha_same(k->dims[4], d->H))
				return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: a packed key must be (batch, kv_sequence, num_heads, 2, head_size)");
			d->L = k->dims[1];
			d->Hv = d->H;
			d->kv = MS_MHA_KV_PACKED;
			break;
		case 4:
			if (v == NULL || v->rank != 4)
				return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: a key (batch, num_heads, kv_sequence, head_size) needs a value (batch, num_heads, kv_sequence, v_head_size)");
			if (bias != NULL)
				return cep__set_error(CEP_EMODEL, "MultiHeadAttention: bias must be absent when key is (batch, num_heads, kv_sequence, head_size)");
			if (pk != NULL)
				return cep__set_error(CEP_EMODEL, "MultiHeadAttention: past_key and past_value must be absent when key is (batch, num_heads, kv_sequence, head_size)");
			if (!mha_same(k->dims[1], N) || !mha_same(k->dims[3], d->H) ||
			    !mha_same(v->dims[0], d->B) || !mha_same(v->dims[1], N) ||
			    !mha_same(v->dims[2], k->dims[2]))
				return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: key must be (batch, num_heads, kv_sequence, head_size) and value (batch, num_heads, kv_sequence, v_head_size)");
			d->L = k->dims[2];
			d->Hv = v->dims[3];
			d->kv = MS_MHA_KV_BNSH;
			break;
		default:
			return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: key has rank %d, not 3, 4 or 5",
					      k->rank);
		}
	} else {
		return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: query has rank %d, not 3 (batch, sequence, hidden) or 5 (packed Q, K and V)",
				      q->rank);
	}
	if (bias != NULL && bias->rank >= 0) {
		int64_t want = op_dim_fixed(D) && op_dim_fixed(d->Hv) ? 2 * D + N * d->Hv
								      : OP_DIM_UNKNOWN;

		if (bias->rank != 1 || !mha_same(bias->dims[0], want))
			return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: bias must have shape (hidden + hidden + v_hidden)");
	}
	if (pk != NULL && pk->rank >= 0 && pv->rank >= 0) {
		if (pk->rank != 4 || pv->rank != 4 || !mha_same(pk->dims[0], d->B) ||
		    !mha_same(pv->dims[0], d->B) || !mha_same(pk->dims[1], N) ||
		    !mha_same(pv->dims[1], N) || !mha_same(pk->dims[2], pv->dims[2]) ||
		    !mha_same(pk->dims[3], d->H) || !mha_same(pv->dims[3], d->Hv))
			return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: past_key must be (batch, num_heads, past_sequence, head_size) and past_value (batch, num_heads, past_sequence, v_head_size)");
		d->P = pk->dims[2];
	} else if (pk != NULL) {
		d->P = OP_DIM_UNKNOWN;
	}
	if (d->P == 0)
		d->T = d->L;
	else if (op_dim_fixed(d->P) && op_dim_fixed(d->L))
		d->T = d->P + d->L;
	return 0;
}

/* key_padding_mask over the dims: which form it is (MS_ATTN_MASK_NONE when
 * the dims do not tell yet). */
static int mha_check_mask(const struct op_tensor *m, const struct mha_dims *d, int *form)
{
	*form = MS_ATTN_MASK_NONE;
	if (m->dtype != CEP_DTYPE_INT32)
		return cep__set_error(CEP_EDTYPE, "MultiHeadAttention: key_padding_mask is %s, not int32",
				      cep_dtype_name(m->dtype));
	if (m->rank < 0)
		return 0;
	switch (m->rank) {
	case 1:
		if (mha_same(m->dims[0], d->B)) {
			*form = MS_ATTN_MASK_LENGTHS;
			return 0;
		}
		if (op_dim_fixed(d->B) && m->dims[0] == 3 * d->B + 2)
			return cep__set_error(CEP_EUNSUPPORTED, "MultiHeadAttention: key_padding_mask of shape (3 * batch + 2) (lengths and starts) is not supported");
		break;
	case 2:
		if (!mha_same(m->dims[0], d->B))
			break;
		if (mha_same(m->dims[1], d->T)) {
			*form = MS_ATTN_MASK_RAW2;
			return 0;
		}
		if (m->dims[1] == d->L)
			return cep__set_error(CEP_EUNSUPPORTED, "MultiHeadAttention: key_padding_mask of shape (batch, kv_sequence = %" PRId64
					      ") with %" PRId64 " past keys is not supported; (batch, total_sequence) is",
					      d->L, d->P);
		break;
	case 3:
		if (mha_same(m->dims[0], d->B) && mha_same(m->dims[1], d->S) &&
		    mha_same(m->dims[2], d->T)) {
			*form = MS_ATTN_MASK_RAW3;
			return 0;
		}
		break;
	default:
		break;
	}
	return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: key_padding_mask of rank %d must be (batch), (batch, total_sequence) or (batch, sequence, total_sequence)",
			      m->rank);
}

static int mha_check_ab(const struct op_tensor *ab, const struct mha_dims *d, int64_t N)
{
	if (ab->rank < 0)
		return 0;
	if (ab->rank != 4 || !(ab->dims[0] == 1 || mha_same(ab->dims[0], d->B)) ||
	    !(ab->dims[1] == 1 || mha_same(ab->dims[1], N)) || !mha_same(ab->dims[2], d->S) ||
	    !mha_same(ab->dims[3], d->T))
		return cep__set_error(CEP_ESHAPE, "MultiHeadAttention: attention_bias must have shape (batch or 1, num_heads or 1, sequence, total_sequence)");
	return 0;
}

int ms_mha_infer(struct op_infer *x)
{
	const struct op_tensor *q = &x->in[MS_MHA_QUERY], *m, *ab;
	int64_t N = op_attr_int(x->node, "num_heads", 1);
	static const int typed[] = { MS_MHA_KEY, MS_MHA_VALUE, MS_MHA_BIAS, MS_MHA_AB,
				     MS_MHA_PAST_KEY, MS_MHA_PAST_VALUE };
	struct mha_dims d;
	int i, form, ret;

	if ((ret = mha_check_attrs(x->node)) < 0)
		return ret;
	for (i = MS_MHA_PAST_SEQ; i < x->n_in; i++) {
		if (op_tensor_present(&x->in[i]))
			return cep__set_error(CEP_EUNSUPPORTED, "MultiHeadAttention: input %s (%s) is not supported",
					      mha_inputs[i], i == MS_MHA_PAST_SEQ ? "past and present sharing a buffer"
					      : "beam search");
	}
	if (x->n_out > 3)
		return cep__set_error(CEP_EUNSUPPORTED, "MultiHeadAttention: output qk is not supported");
	if (q->dtype != CEP_DTYPE_FLOAT32 && q->dtype != CEP_DTYPE_FLOAT16 &&
	    q->dtype != CEP_DTYPE_BFLOAT16)
		return cep__set_error(CEP_EDTYPE, "MultiHeadAttention: query is %s, not float32, float16 or bfloat16",
				      cep_dtype_name(q->dtype));
	for (i = 0; i < (int)(sizeof(typed) / sizeof(typed[0])); i++) {
		const struct op_tensor *t = mha_in(x->in, x->n_in, typed[i]);

		if (t != NULL && t->dtype != q->dtype)
			return cep__set_error(CEP_EDTYPE, "MultiHeadAttention: %s is %s but query is %s",
					      mha_inputs[typed[i]], cep_dtype_name(t->dtype),
					      cep_dtype_name(q->dtype));
	}
	for (i = 0; i < x->n_out; i++) {
		int j;

		x->out[i].dtype = q->dtype;
		x->out[i].rank = i == 0 ? 3 : 4;
		for (j = 0; j < x->out[i].rank; j++)
			x->out[i].dims[j] = OP_DIM_UNKNOWN;
	}
	if ((ret = mha_dims_of(x->node, x->in, x->n_in, &d)) < 0)
		return ret;
	x->out[0].dims[0] = d.B;
	x->out[0].dims[1] = d.S;
	x->out[0].dims[2] = op_dim_fixed(d.Hv) ? N * d.Hv : OP_DIM_UNKNOWN;
	for (i = 1; i < x->n_out; i++) {
		x->out[i].dims[0] = d.B;
		x->out[i].dims[1] = N;
		x->out[i].dims[2] = d.T;
		x->out[i].dims[3] = i == 1 ? d.H : d.Hv;
	}
	if ((m = mha_in(x->in, x->n_in, MS_MHA_MASK)) != NULL &&
	    (ret = mha_check_mask(m, &d, &form)) < 0)
		return ret;
	if ((ab = mha_in(x->in, x->n_in, MS_MHA_AB)) != NULL && (ret = mha_check_ab(ab, &d, N)) < 0)
		return ret;
	return 0;
}

int ms_mha_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		struct ms_mha *a)
{
	const struct op_tensor *m = mha_in(in, n_in, MS_MHA_MASK);
	const struct op_tensor *ab = mha_in(in, n_in, MS_MHA_AB);
	float scale = op_attr_float(node, "scale", 0.0f);
	struct ms_attn_mspec *ms = &a->m;
	struct mha_dims d;
	int form = MS_ATTN_MASK_NONE, ret;

	memset(a, 0, sizeof(*a));
	if ((ret = mha_dims_of(node, in, n_in, &d)) < 0)
		return ret;
	if (m != NULL && (ret = mha_check_mask(m, &d, &form)) < 0)
		return ret;
	a->B = d.B;
	a->S = d.S;
	a->L = d.L;
	a->P = d.P;
	a->T = d.T;
	a->N = op_attr_int(node, "num_heads", 1);
	a->H = d.H;
	a->Hv = d.Hv;
	a->kv = d.kv;
	a->scale = scale != 0.0f ? scale : (float)(1.0 / sqrt((double)a->H));
	a->filt = op_attr_float(node, "mask_filter_value", -10000.0f);
	a->has_bias = mha_in(in, n_in, MS_MHA_BIAS) != NULL;
	a->has_past = mha_in(in, n_in, MS_MHA_PAST_KEY) != NULL;
	ms->S = a->S;
	ms->T = a->T;
	ms->P = a->P;
	ms->filt = a->filt;
	ms->form = form;
	ms->causal = op_attr_int(node, "unidirectional", 0) != 0;
	if (ab != NULL) {
		ms->ab_b = ab->dims[0];
		ms->ab_h = ab->dims[1];
	}
	if (form == MS_ATTN_MASK_NONE && !ms->causal && ab == NULL)
		return 0;
	ms->mb = form != MS_ATTN_MASK_NONE || (ab != NULL && ms->ab_b > 1) ? a->B : 1;
	ms->mh = ab != NULL ? ms->ab_h : 1;
	ms->mi = ms->causal || form == MS_ATTN_MASK_RAW3 || ab != NULL ? a->S : 1;
	return 0;
}

/* ------------------------------------------------------------------ kernel */

/* Elements of the gathered Q, K and V, and of the mask. */
static int64_t mha_q_numel(const struct ms_mha *a)
{
	return a->B * a->N * a->S * a->H;
}

static int64_t mha_k_numel(const struct ms_mha *a)
{
	return a->B * a->N * a->T * a->H;
}

static int64_t mha_v_numel(const struct ms_mha *a)
{
	return a->B * a->N * a->T * a->Hv;
}

static int64_t mha_mask_numel(const struct ms_mha *a)
{
	return a->m.mb * a->m.mh * a->m.mi * a->T;
}

static int mha_prepare(struct op_call *c, size_t *workspace)
{
	struct ms_mha *a = (struct ms_mha *)c->params;
	cep_dtype t = c->in[0].dtype;
	int ret;

	_Static_assert(sizeof(*a) <= OP_PARAMS_BYTES, "params too large");
	*workspace = 0;
	ret = ms_mha_read(c->node, c->in, c->n_in, a);
	if (ret < 0)
		return ret;
	*workspace = ms_attn_region(mha_q_numel(a), t) + ms_attn_region(mha_k_numel(a), t) +
		     ms_attn_region(mha_v_numel(a), t) + ms_attn_region(mha_mask_numel(a), t) +
		     (size_t)(a->T + a->Hv) * sizeof(float);
	return 0;
}

/* Q (B, N, S, H) from query, plus the bias's first D. */
static void mha_gather_q(const struct op_call *c, const struct ms_mha *a, void *q)
{
	cep_dtype t = c->in[0].dtype;
	const void *src = c->in[MS_MHA_QUERY].data;
	const void *bias = a->has_bias ? c->in[MS_MHA_BIAS].data : NULL;
	int64_t N = a->N, H = a->H, b, s, n, h;

	for (b = 0; b < a->B; b++) {
		for (n = 0; n < N; n++) {
			for (s = 0; s < a->S; s++) {
				for (h = 0; h < H; h++) {
					int64_t from = a->kv == MS_MHA_KV_QKV
						       ? (((b * a->S + s) * N + n) * 3) * H + h
						       : (b * a->S + s) * N * H + n * H + h;
					float v = cpu_load_f(src, t, from);

					if (bias != NULL)
						v += cpu_load_f(bias, t, n * H + h);
					cpu_store_f(q, t, ((b * N + n) * a->S + s) * H + h, v);
				}
			}
		}
	}
}

/* K (which 0, depth H) or V (which 1, depth Hv) as (B, N, T, depth): the
 * past ahead of the new keys, which get their part of the bias. */
static void mha_gather_kv(const struct op_call *c, const struct ms_mha *a, int which, void *out)
{
	cep_dtype t = c->in[0].dtype;
	const void *past = a->has_past ? c->in[MS_MHA_PAST_KEY + which].data : NULL;
	const void *bias = a->has_bias ? c->in[MS_MHA_BIAS].data : NULL;
	const void *src = a->kv == MS_MHA_KV_QKV ? c->in[MS_MHA_QUERY].data
			  : a->kv == MS_MHA_KV_PACKED || which == 0 ? c->in[MS_MHA_KEY].data
								    : c->in[MS_MHA_VALUE].data;
	int64_t N = a->N, E = which ? a->Hv : a->H, L = a->L, P = a->P;
	int64_t boff = which ? 2 * N * a->H : N * a->H, b, n, j, e;

	for (b = 0; b < a->B; b++) {
		for (n = 0; n < N; n++) {
			for (j = 0; j < a->T; j++) {
				int64_t l = j - P, to = ((b * N + n) * a->T + j) * E;

				for (e = 0; e < E; e++) {
					int64_t from;
					float v;

					if (j < P) {
						cpu_store_f(out, t, to + e,
							    cpu_load_f(past, t, ((b * N + n) * P + j) * E + e));
						continue;
					}
					switch (a->kv) {
					case MS_MHA_KV_QKV:
						from = (((b * L + l) * N + n) * 3 + 1 + which) * E + e;
						break;
					case MS_MHA_KV_PACKED:
						from = (((b * L + l) * N + n) * 2 + which) * E + e;
						break;
					case MS_MHA_KV_BNSH:
						from = ((b * N + n) * L + l) * E + e;
						break;
					default:
						from = (b * L + l) * N * E + n * E + e;
						break;
					}
					v = cpu_load_f(src, t, from);
					if (bias != NULL)
						v += cpu_load_f(bias, t, boff + n * E + e);
					cpu_store_f(out, t, to + e, v);
				}
			}
		}
	}
}

static int mha_run(struct op_call *c)
{
	const struct ms_mha *a = (const struct ms_mha *)c->params;
	cep_dtype t = c->in[0].dtype;
	size_t qb = ms_attn_region(mha_q_numel(a), t), kb = ms_attn_region(mha_k_numel(a), t);
	size_t vb = ms_attn_region(mha_v_numel(a), t), mb = ms_attn_region(mha_mask_numel(a), t);
	unsigned char *ws = c->workspace, *q = ws, *k = ws + qb, *v = k + kb, *mask = v + vb;
	int64_t N = a->N, S = a->S, T = a->T, H = a->H, Hv = a->Hv;
	const struct ms_attn_mspec *m = &a->m;
	struct ms_attn_view x = {
		.B = a->B, .H = N, .S = S, .T = T, .dk = H, .dv = Hv,
		.q = q, .k = k, .v = v, .m = m->mb > 0 ? mask : NULL, .o = c->out[0].data,
		.qs = { N * S * H, S * H, H }, .ks = { N * T * H, T * H, H },
		.vs = { N * T * Hv, T * Hv, Hv },
		.ms = { m->mb > 1 ? m->mh * m->mi * T : 0, m->mh > 1 ? m->mi * T : 0,
			m->mi > 1 ? T : 0 },
		.os = { S * N * Hv, Hv, N * Hv }, .scale = a->scale,
	};

	if (c->workspace_bytes < qb + kb + vb + mb + (size_t)(T + Hv) * sizeof(float))
		return cep__set_error(CEP_EINTERNAL, "MultiHeadAttention: the workspace is too small");
	mha_gather_q(c, a, q);
	mha_gather_kv(c, a, 0, k);
	mha_gather_kv(c, a, 1, v);
	if (c->n_out > 1 && c->out[1].data != NULL)
		memcpy(c->out[1].data, k, (size_t)mha_k_numel(a) * cep_dtype_size(t));
	if (c->n_out > 2 && c->out[2].data != NULL)
		memcpy(c->out[2].data, v, (size_t)mha_v_numel(a) * cep_dtype_size(t));
	if (m->mb > 0)
		ms_attn_mask_fill(m, m->form != MS_ATTN_MASK_NONE ? c->in[MS_MHA_MASK].data : NULL,
				  m->ab_b > 0 ? c->in[MS_MHA_AB].data : NULL, t, mask);
	ms_attn_core(&x, t, (float *)(mask + mb));
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ OP_DOMAIN_MS, "MultiHeadAttention", 1, OP_MS_OPSET_MAX, 1, MS_MHA_INPUTS, 1, 4, 0, 0,
	  ms_mha_infer },
};

static const struct op_kernel kernels[] = {
	{ OP_DOMAIN_MS, "MultiHeadAttention", 1, OP_MS_OPSET_MAX, BACKEND_HOST,
	  CPU_DTS_FLOAT_NO_F64, mha_prepare, mha_run },
};

const struct op_family op_family_cpu_ms_mha = {
	"cpu_ms_mha", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
