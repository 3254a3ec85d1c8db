/*
 * ms_attention.c — com.microsoft Attention (kernels/cpu/ms_attention.h):
 * its schema, its inference, shared with the device kernel, and its
 * reference kernel.
 *
 * The reference works in three steps through its workspace, as the device
 * does: the projection qkv = input x weights + bias, each element a
 * float32 sum over K in order plus the bias, rounded once to the type;
 * the additive mask, built in the type; then per (batch, head, query) the
 * scores (float32 dot products in order, scaled, plus the mask), a softmax
 * as kernels/cpu/softmax.c takes it (float maximum, double sum, float
 * division; a key at -inf weighs 0), and the weighted sum of the values.
 */
#include "kernels/cpu/ms_attention.h"

#include <inttypes.h>

#define MS_ATTN_INPUTS 7

static const char *const msa_inputs[MS_ATTN_INPUTS] = {
	"input", "weights", "bias", "mask_index", "past", "attention_bias",
	"past_sequence_length",
};

/* ---------------------------------------------------------------- inference */

/* Whether two sizes that must be equal may be (unknown ones may). */
static bool msa_same(int64_t a, int64_t b)
{
	return !op_dim_fixed(a) || !op_dim_fixed(b) || a == b;
}

/* The attributes onnxruntime defines that cudaep does not implement. */
static int msa_check_attrs(const struct op_node *node)
{
	static const char *const ints[] = { "num_heads", "unidirectional", "do_rotary",
					    "past_present_share_buffer", "rotary_embedding_dim" };
	const struct op_attr *heads = op_attr_find(node, "num_heads");
	size_t i;
	int ret;

	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if ((ret = op_attr_check(node, ints[i], OP_ATTR_INT)) < 0)
			return ret;
	}
	if ((ret = op_attr_check(node, "scale", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "mask_filter_value", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "qkv_hidden_sizes", OP_ATTR_INTS)) < 0)
		return ret;
	if (heads == NULL || heads->i < 1)
		return cep__set_error(CEP_EMODEL, "Attention: num_heads is %s; it is required and at least 1",
				      heads ? "below 1" : "missing");
	if (op_attr_int(node, "do_rotary", 0) != 0)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: do_rotary=1 (rotary embeddings) is not supported");
	if (op_attr_int(node, "past_present_share_buffer", 0) != 0)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: past_present_share_buffer is not supported");
	if (op_attr_int(node, "unidirectional", 0) & ~INT64_C(1))
		return cep__set_error(CEP_EMODEL, "Attention: unidirectional is %" PRId64 ", not 0 or 1",
				      op_attr_int(node, "unidirectional", 0));
	return 0;
}

/* The hidden sizes of Q, K and V from qkv_hidden_sizes, or the weights'
 * columns split in three; n is the weights' columns (maybe unknown). */
static int msa_sizes(const struct op_node *node, int64_t n, int64_t h[3])
{
	int64_t heads = op_attr_int(node, "num_heads", 1);
	const int64_t *v;
	int count, i;

	v = op_attr_ints(node, "qkv_hidden_sizes", &count);
	if (v == NULL) {
		for (i = 0; i < 3; i++)
			h[i] = op_dim_fixed(n) ? n / 3 : OP_DIM_UNKNOWN;
		if (op_dim_fixed(n) && n % 3 != 0)
			return cep__set_error(CEP_ESHAPE, "Attention: the weights have %" PRId64
					      " columns, not a multiple of 3 (and qkv_hidden_sizes is not given)",
					      n);
	} else {
		if (count != 3)
			return cep__set_error(CEP_EMODEL, "Attention: qkv_hidden_sizes has %d values, not 3",
					      count);
		for (i = 0; i < 3; i++)
			h[i] = v[i];
		if (op_dim_fixed(n) && h[0] + h[1] + h[2] != n)
			return cep__set_error(CEP_ESHAPE, "Attention: qkv_hidden_sizes sum to %" PRId64
					      ", the weights have %" PRId64 " columns",
					      h[0] + h[1] + h[2], n);
	}
	if (op_dim_fixed(h[0]) && h[0] != h[1])
		return cep__set_error(CEP_ESHAPE, "Attention: Q's hidden size %" PRId64
				      " differs from K's %" PRId64, h[0], h[1]);
	for (i = 0; i < 3; i++) {
		if (op_dim_fixed(h[i]) && (h[i] <= 0 || h[i] % heads != 0))
			return cep__set_error(CEP_ESHAPE, "Attention: hidden size %" PRId64
					      " is not a positive multiple of num_heads %" PRId64,
					      h[i], heads);
	}
	return 0;
}

/* mask_index of rank r over (B, S): which forms it may be. */
static int msa_check_mask(const struct op_tensor *m, int64_t B, int64_t S)
{
	bool ok;

	if (m->dtype != CEP_DTYPE_INT32)
		return cep__set_error(CEP_EDTYPE, "Attention: mask_index is %s, not int32",
				      cep_dtype_name(m->dtype));
	if (m->rank < 0)
		return 0;
	switch (m->rank) {
	case 1:
		if (op_dim_fixed(m->dims[0]) && op_dim_fixed(B) && m->dims[0] != B)
			return cep__set_error(CEP_EUNSUPPORTED, "Attention: mask_index of shape (%" PRId64
					      ") is not the lengths (batch = %" PRId64 "); the left-padding "
					      "(2 * batch) and (3 * batch + 2) forms are not supported",
					      m->dims[0], B);
		return 0;
	case 2:
		ok = msa_same(m->dims[0], B) && msa_same(m->dims[1], S);
		break;
	case 3:
		ok = msa_same(m->dims[0], B) && msa_same(m->dims[1], S) && msa_same(m->dims[2], S);
		break;
	case 4:
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: mask_index of rank 4 (the (batch, 1, max_sequence, max_sequence) form) is not supported");
	default:
		ok = false;
		break;
	}
	if (!ok)
		return cep__set_error(CEP_ESHAPE, "Attention: mask_index of rank %d must be (batch), (batch, sequence) or (batch, sequence, sequence)",
				      m->rank);
	return 0;
}

int ms_attn_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *w = &x->in[1];
	struct op_tensor *o = &x->out[0];
	int64_t h[3], B, S, heads = op_attr_int(x->node, "num_heads", 1);
	int i, ret;

	if ((ret = msa_check_attrs(x->node)) < 0)
		return ret;
	for (i = 4; i < x->n_in; i++) {
		if (i != 5 && op_tensor_present(&x->in[i]))
			return cep__set_error(CEP_EUNSUPPORTED, "Attention: input %s (past state) is not supported",
					      msa_inputs[i]);
	}
	if (x->n_out > 1)
		return cep__set_error(CEP_EUNSUPPORTED, "Attention: output present (past state) is not supported");
	if ((ret = op_infer_same_dtype(x, 0, 2)) < 0)
		return ret;
	if (x->n_in > 5 && op_tensor_present(&x->in[5]) && x->in[5].dtype != in->dtype)
		return cep__set_error(CEP_EDTYPE, "Attention: attention_bias is %s but input is %s",
				      cep_dtype_name(x->in[5].dtype), cep_dtype_name(in->dtype));
	if (!op_dtype_in(in->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Attention: input is %s, a float type is needed",
				      cep_dtype_name(in->dtype));
	o->dtype = in->dtype;
	o->rank = 3;
	for (i = 0; i < 3; i++)
		o->dims[i] = OP_DIM_UNKNOWN;
	if (in->rank >= 0 && in->rank != 3)
		return cep__set_error(CEP_ESHAPE, "Attention: input has rank %d, not 3 (batch, sequence, hidden)",
				      in->rank);
	if (w->rank >= 0 && w->rank != 2)
		return cep__set_error(CEP_ESHAPE, "Attention: weights have rank %d, not 2", w->rank);
	ret = msa_sizes(x->node, w->rank == 2 ? w->dims[1] : OP_DIM_UNKNOWN, h);
	if (ret < 0)
		return ret;
	if (in->rank < 0)
		return 0;
	B = in->dims[0];
	S = in->dims[1];
	o->dims[0] = B;
	o->dims[1] = S;
	o->dims[2] = h[2];
	if (w->rank == 2 && !msa_same(w->dims[0], in->dims[2]))
		return cep__set_error(CEP_ESHAPE, "Attention: the weights have %" PRId64
				      " rows, the input's hidden size is %" PRId64,
				      w->dims[0], in->dims[2]);
	if (x->n_in > 2 && op_tensor_present(&x->in[2]) && x->in[2].rank >= 0 &&
	    (x->in[2].rank != 1 || (w->rank == 2 && !msa_same(x->in[2].dims[0], w->dims[1]))))
		return cep__set_error(CEP_ESHAPE, "Attention: bias must have shape (hidden_q + hidden_k + hidden_v)");
	if (x->n_in > 3 && op_tensor_present(&x->in[3]) &&
	    (ret = msa_check_mask(&x->in[3], B, S)) < 0)
		return ret;
	if (x->n_in > 5 && op_tensor_present(&x->in[5]) && x->in[5].rank >= 0) {
		const struct op_tensor *ab = &x->in[5];

		if (ab->rank != 4 || !(ab->dims[0] == 1 || msa_same(ab->dims[0], B)) ||
		    !(ab->dims[1] == 1 || msa_same(ab->dims[1], heads)) ||
		    !msa_same(ab->dims[2], S) || !msa_same(ab->dims[3], S))
			return cep__set_error(CEP_ESHAPE, "Attention: attention_bias must have shape (batch or 1, num_heads or 1, sequence, sequence)");
	}
	return 0;
}

int ms_attn_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		 struct ms_attn *a)
{
	const struct op_tensor *m = n_in > 3 && op_tensor_present(&in[3]) ? &in[3] : NULL;
	const struct op_tensor *ab = n_in > 5 && op_tensor_present(&in[5]) ? &in[5] : NULL;
	float scale = op_attr_float(node, "scale", 0.0f);
	int64_t h[3];
	int ret;

	memset(a, 0, sizeof(*a));
	ret = msa_sizes(node, in[1].dims[1], h);
	if (ret < 0)
		return ret;
	a->B = in[0].dims[0];
	a->S = in[0].dims[1];
	a->K = in[0].dims[2];
	a->hq = h[0];
	a->hk = h[1];
	a->hv = h[2];
	a->H = op_attr_int(node, "num_heads", 1);
	a->dq = a->hq / a->H;
	a->dv = a->hv / a->H;
	a->scale = scale != 0.0f ? scale : (float)(1.0 / sqrt((double)a->dq));
	a->filt = op_attr_float(node, "mask_filter_value", -10000.0f);
	a->causal = op_attr_int(node, "unidirectional", 0) != 0;
	a->has_bias = n_in > 2 && op_tensor_present(&in[2]);
	if (m != NULL) {
		ret = msa_check_mask(m, a->B, a->S);
		if (ret < 0)
			return ret;
		a->mask = m->rank == 1 ? MS_ATTN_MASK_LENGTHS
			  : m->rank == 2 ? MS_ATTN_MASK_RAW2 : MS_ATTN_MASK_RAW3;
	}
	if (ab != NULL) {
		a->has_ab = 1;
		a->ab_b = ab->dims[0];
		a->ab_h = ab->dims[1];
	}
	if (a->mask == MS_ATTN_MASK_NONE && !a->causal && !a->has_ab)
		return 0;
	a->mb = a->mask != MS_ATTN_MASK_NONE || (a->has_ab && a->ab_b > 1) ? a->B : 1;
	a->mh = a->has_ab ? a->ab_h : 1;
	a->mi = a->causal || a->mask == MS_ATTN_MASK_RAW3 || a->has_ab ? a->S : 1;
	return 0;
}

/* ------------------------------------------------------------------ kernel */

static int msa_prepare(struct op_call *c, size_t *workspace)
{
	struct ms_attn *a = (struct ms_attn *)c->params;
	cep_dtype t = c->in[0].dtype;
	int ret;

	_Static_assert(sizeof(*a) <= OP_PARAMS_BYTES, "params too large");
	*workspace = 0;
	ret = ms_attn_read(c->node, c->in, c->n_in, a);
	if (ret < 0)
		return ret;
	/* qkv and the mask in the type, then a row of scores and of sums. */
	*workspace = ms_attn_region(ms_attn_qkv_numel(a), t) +
		     ms_attn_region(ms_attn_mask_numel(a), t) +
		     (size_t)(a->S + a->dv) * sizeof(float);
	return 0;
}

/* qkv[r, n] = sum_k input[r, k] weights[k, n] + bias[n], rounded to t. */
static void msa_project(const struct op_call *c, const struct ms_attn *a, void *qkv)
{
	cep_dtype t = c->in[0].dtype;
	const void *x = c->in[0].data, *w = c->in[1].data;
	const void *bias = a->has_bias ? c->in[2].data : NULL;
	int64_t n_cols = a->hq + a->hk + a->hv, r, n, k;

	for (r = 0; r < a->B * a->S; r++) {
		for (n = 0; n < n_cols; n++) {
			float acc = 0.0f;

			for (k = 0; k < a->K; k++)
				acc += cpu_load_f(x, t, r * a->K + k) * cpu_load_f(w, t, k * n_cols + n);
			if (bias != NULL)
				acc += cpu_load_f(bias, t, n);
			cpu_store_f(qkv, t, r * n_cols + n, acc);
		}
	}
}

/* ------------------------------------------------ shared with MultiHeadAttention */

void ms_attn_mask_fill(const struct ms_attn_mspec *m, const int32_t *mi32, const void *ab,
		       cep_dtype t, void *out)
{
	int64_t b, h, i, j, at = 0, S = m->S, T = m->T;

	for (b = 0; b < m->mb; b++) {
		for (h = 0; h < m->mh; h++) {
			for (i = 0; i < m->mi; i++) {
				for (j = 0; j < T; j++, at++) {
					float v = 0.0f;

					if (m->form == MS_ATTN_MASK_LENGTHS && j >= mi32[b])
						v = m->filt;
					else if (m->form == MS_ATTN_MASK_RAW2)
						v = (float)(1 - mi32[b * T + j]) * m->filt;
					else if (m->form == MS_ATTN_MASK_RAW3)
						v = (float)(1 - mi32[(b * S + i) * T + j]) * m->filt;
					if (ab != NULL)
						v += cpu_load_f(ab, t, (((m->ab_b > 1 ? b : 0) * m->ab_h +
									 (m->ab_h > 1 ? h : 0)) * S + i) * T + j);
					if (m->causal && j > m->P + i)
						v = -INFINITY;
					cpu_store_f(out, t, at, v);
				}
			}
		}
	}
}

void ms_attn_softmax(float *s, int64_t n)
{
	float mx = -INFINITY;
	double sum = 0.0;
	int64_t j;

	for (j = 0; j < n; j++) {
		if (s[j] > mx)
			mx = s[j];
	}
	for (j = 0; j < n; j++)
		sum += expf(s[j] - mx);
	for (j = 0; j < n; j++)
		s[j] = expf(s[j] - mx) / (float)sum;
}

void ms_attn_core(const struct ms_attn_view *x, cep_dtype t, float *scratch)
{
	float *s = scratch, *acc = scratch + x->T;
	int64_t b, h, i, j, d;

	for (b = 0; b < x->B; b++) {
		for (h = 0; h < x->H; h++) {
			for (i = 0; i < x->S; i++) {
				int64_t qi = b * x->qs[0] + h * x->qs[1] + i * x->qs[2];
				int64_t mi = b * x->ms[0] + h * x->ms[1] + i * x->ms[2];

				for (j = 0; j < x->T; j++) {
					int64_t kj = b * x->ks[0] + h * x->ks[1] + j * x->ks[2];
					float dot = 0.0f;

					for (d = 0; d < x->dk; d++)
						dot += cpu_load_f(x->q, t, qi + d) * cpu_load_f(x->k, t, kj + d);
					s[j] = dot * x->scale;
					if (x->m != NULL)
						s[j] += cpu_load_f(x->m, t, mi + j);
				}
				ms_attn_softmax(s, x->T);
				memset(acc, 0, (size_t)x->dv * sizeof(float));
				for (j = 0; j < x->T; j++) {
					int64_t vj = b * x->vs[0] + h * x->vs[1] + j * x->vs[2];

					for (d = 0; d < x->dv; d++)
						acc[d] += s[j] * cpu_load_f(x->v, t, vj + d);
				}
				for (d = 0; d < x->dv; d++)
					cpu_store_f(x->o, t, b * x->os[0] + h * x->os[1] + i * x->os[2] + d,
						    acc[d]);
			}
		}
	}
}

/* ------------------------------------------------------------------ run */

static int msa_run(struct op_call *c)
{
	const struct ms_attn *a = (const struct ms_attn *)c->params;
	cep_dtype t = c->in[0].dtype;
	size_t esize = cep_dtype_size(t);
	size_t qkv_bytes = ms_attn_region(ms_attn_qkv_numel(a), t);
	size_t mask_bytes = ms_attn_region(ms_attn_mask_numel(a), t);
	unsigned char *ws = c->workspace;
	unsigned char *qkv = ws;
	int64_t N = a->hq + a->hk + a->hv, S = a->S;
	struct ms_attn_mspec m = {
		.S = S, .T = S, .P = 0, .mb = a->mb, .mh = a->mh, .mi = a->mi,
		.ab_b = a->has_ab ? a->ab_b : 0, .ab_h = a->ab_h, .filt = a->filt,
		.form = a->mask, .causal = a->causal,
	};
	struct ms_attn_view x = {
		.B = a->B, .H = a->H, .S = S, .T = S, .dk = a->dq, .dv = a->dv,
		.q = qkv, .k = qkv + (size_t)a->hq * esize,
		.v = qkv + (size_t)(a->hq + a->hk) * esize,
		.m = a->mb > 0 ? ws + qkv_bytes : NULL, .o = c->out[0].data,
		.qs = { S * N, a->dq, N }, .ks = { S * N, a->dq, N }, .vs = { S * N, a->dv, N },
		.ms = { a->mb > 1 ? a->mh * a->mi * S : 0, a->mh > 1 ? a->mi * S : 0,
			a->mi > 1 ? S : 0 },
		.os = { S * a->hv, a->dv, a->hv }, .scale = a->scale,
	};

	if (c->workspace_bytes < qkv_bytes + mask_bytes + (size_t)(S + a->dv) * sizeof(float))
		return cep__set_error(CEP_EINTERNAL, "Attention: the workspace is too small");
	msa_project(c, a, qkv);
	if (a->mb > 0)
		ms_attn_mask_fill(&m, a->mask != MS_ATTN_MASK_NONE ? c->in[3].data : NULL,
				  a->has_ab ? c->in[5].data : NULL, t, ws + qkv_bytes);
	ms_attn_core(&x, t, (float *)(ws + qkv_bytes + mask_bytes));
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ OP_DOMAIN_MS, "Attention", 1, OP_MS_OPSET_MAX, 2, MS_ATTN_INPUTS, 1, 2, 0, 0,
	  ms_attn_infer },
};

static const struct op_kernel kernels[] = {
	{ OP_DOMAIN_MS, "Attention", 1, OP_MS_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64,
	  msa_prepare, msa_run },
};

const struct op_family op_family_cpu_ms_attention = {
	"cpu_ms_attention", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
