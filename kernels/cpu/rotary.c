/*
 * rotary.c — RotaryEmbedding (ai.onnx opset 23, and onnxruntime's
 * com.microsoft opset 1 with its own input order, position_ids and shape
 * rules; kernels/cpu/rotary.h says what they compute): the schemas,
 * inference, the geometry both backends read (cpu_rope_read()) and the
 * reference kernel they share. Each rotated element is
 * computed from its pair and the pair's cosine and sine with the two
 * products and their sum each rounded to X's type, as the
 * specification's reference computes them (numpy, in that type); for
 * float32 that is plain float32 arithmetic.
 */
#include "kernels/cpu/rotary.h"

#include <inttypes.h>

enum { ROPE_X, ROPE_COS, ROPE_SIN, ROPE_POS };

/* onnxruntime's domain, and its inputs by position. */
#define ROPE_MS "com.microsoft"
enum { MS_X, MS_POS, MS_COS, MS_SIN };

/* Whether position_ids is given. */
static bool rope_has_pos(const struct op_tensor *in, int n_in)
{
	return n_in > ROPE_POS && op_tensor_present(&in[ROPE_POS]);
}

static bool rope_is_ms(const struct op_node *node)
{
	return node->domain != NULL && strcmp(node->domain, ROPE_MS) == 0;
}

void cpu_rope_inputs(const struct op_node *node, struct rope_inputs *ix)
{
	if (rope_is_ms(node))
		*ix = (struct rope_inputs){ MS_X, MS_COS, MS_SIN, MS_POS };
	else
		*ix = (struct rope_inputs){ ROPE_X, ROPE_COS, ROPE_SIN, ROPE_POS };
}

static int rope_attrs_check(const struct op_node *node)
{
	static const char *const names[] = { "interleaved", "rotary_embedding_dim", "num_heads" };
	size_t i;
	int ret;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int64_t v = op_attr_int(node, names[i], 0);

		if ((ret = op_attr_check(node, names[i], OP_ATTR_INT)) < 0)
			return ret;
		if (i == 0 ? v != 0 && v != 1 : v < 0 || v > INT32_MAX)
			return cep__set_error(CEP_EMODEL, "RotaryEmbedding: %s is %" PRId64 ", %s",
					      names[i], v, i == 0 ? "not 0 or 1" :
					      "it must be a count (0: not given)");
	}
	return 0;
}

/* The head count and head size of X (rank 3 or 4), each fixed, symbolic or
 * unknown; fails for a hidden size that does not split into the heads. */
static int rope_heads(const struct op_node *node, const struct op_tensor *x, int64_t *h,
		      int64_t *d)
{
	int64_t nh = op_attr_int(node, "num_heads", 0), hidden = x->dims[2];

	if (x->rank == 4) {
		*h = x->dims[1];
		*d = x->dims[3];
		return 0;
	}
	if (nh == 0)
		return cep__set_error(CEP_EMODEL, "RotaryEmbedding: a 3-D input needs the attribute "
				      "num_heads");
	*h = nh;
	*d = nh == 1 ? hidden : OP_DIM_UNKNOWN;
	if (op_dim_fixed(hidden)) {
		if (hidden % nh != 0)
			return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: the hidden size %" PRId64
					      " does not split into num_heads=%" PRId64 " heads",
					      hidden, nh);
		*d = hidden / nh;
	}
	return 0;
}

/* Checks the rotary dimension against the head size d (when fixed) and
 * stores the pairs rotated per head in *half (unknown while d is). */
static int rope_half(const struct op_node *node, int64_t d, int64_t *half)
{
	int64_t r = op_attr_int(node, "rotary_embedding_dim", 0);

	*half = OP_DIM_UNKNOWN;
	if (r == 0 && !op_dim_fixed(d))
		return 0;
	if (r == 0)
		r = d;
	if (op_dim_fixed(d) && r > d)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: rotary_embedding_dim %" PRId64
				      " exceeds the head size %" PRId64, r, d);
	if (r % 2 != 0)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: %" PRId64 " elements are rotated "
				      "per head; they must pair up (an even count)", r);
	*half = r / 2;
	return 0;
}

/* Checks the caches (and position_ids) against X's batch b, sequence s and
 * the pairs per head half. */
static int rope_caches_check(const struct op_tensor *in, int n_in, int64_t b, int64_t s,
			     int64_t half)
{
	const struct op_tensor *cos = &in[ROPE_COS], *sin = &in[ROPE_SIN], *pos = &in[ROPE_POS];
	bool has_pos = rope_has_pos(in, n_in);
	int rank = has_pos ? 2 : 3, i;
	char sc[160], ss[160];

	if (cos->rank < 0 || sin->rank < 0)
		return 0;
	op_dims_format(cos, NULL, 0, sc, sizeof(sc));
	op_dims_format(sin, NULL, 0, ss, sizeof(ss));
	if (cos->rank != sin->rank)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s but sin_cache "
				      "is %s", sc, ss);
	for (i = 0; i < cos->rank; i++) {
		if (op_dim_fixed(cos->dims[i]) && op_dim_fixed(sin->dims[i]) &&
		    cos->dims[i] != sin->dims[i])
			return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s but "
					      "sin_cache is %s", sc, ss);
	}
	if (cos->rank != rank)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s; it must be %s",
				      sc, has_pos ? "(max_position_id_plus_1, rotary_dim / 2) with "
				      "position_ids" : "(batch, sequence, rotary_dim / 2) without "
				      "position_ids");
	if (op_dim_fixed(half) && op_dim_fixed(cos->dims[rank - 1]) && cos->dims[rank - 1] != half)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s; its last "
				      "dimension must be rotary_dim / 2 = %" PRId64, sc, half);
	if (has_pos) {
		if (pos->dtype != CEP_DTYPE_INT64)
			return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: position_ids is %s, not "
					      "int64", cep_dtype_name(pos->dtype));
		if (pos->rank < 0)
			return 0;
		op_dims_format(pos, NULL, 0, sc, sizeof(sc));
		if (pos->rank != 2 ||
		    (pos->dims[0] != 1 && op_dim_fixed(b) && op_dim_fixed(pos->dims[0]) &&
		     pos->dims[0] != b) ||
		    (pos->dims[1] != 1 && op_dim_fixed(s) && op_dim_fixed(pos->dims[1]) &&
		     pos->dims[1] != s))
			return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: position_ids is %s; it "
					      "must be (batch, sequence) = (%" PRId64 ", %" PRId64 ")",
					      sc, b, s);
		return 0;
	}
	if ((cos->dims[0] != 1 && op_dim_fixed(b) && op_dim_fixed(cos->dims[0]) &&
	     cos->dims[0] != b) ||
	    (cos->dims[1] != 1 && op_dim_fixed(s) && op_dim_fixed(cos->dims[1]) &&
	     cos->dims[1] != s))
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s; without "
				      "position_ids it must be (batch, sequence, rotary_dim / 2) = "
				      "(%" PRId64 ", %" PRId64 ", ...)", sc, b, s);
	return 0;
}

/* Everything inference checks; the heads, head size and pairs in *h, *d
 * and *half. */
static int rope_check(const struct op_node *node, const struct op_tensor *in, int n_in,
		      int64_t *h, int64_t *d, int64_t *half)
{
	const struct op_tensor *x = &in[ROPE_X];
	int i, ret;

	if ((ret = rope_attrs_check(node)) < 0)
		return ret;
	if (!op_dtype_in(x->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: X is %s, a float type is needed",
				      cep_dtype_name(x->dtype));
	for (i = ROPE_COS; i <= ROPE_SIN; i++) {
		if (in[i].dtype != x->dtype)
			return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: %s is %s but X is %s",
					      i == ROPE_COS ? "cos_cache" : "sin_cache",
					      cep_dtype_name(in[i].dtype), cep_dtype_name(x->dtype));
	}
	*h = *d = *half = OP_DIM_UNKNOWN;
	if (x->rank < 0)
		return 0;
	if (x->rank != 3 && x->rank != 4)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: X has rank %d, not 3 or 4",
				      x->rank);
	if ((ret = rope_heads(node, x, h, d)) < 0 || (ret = rope_half(node, *d, half)) < 0)
		return ret;
	return rope_caches_check(in, n_in, x->dims[0], x->dims[x->rank == 4 ? 2 : 1], *half);
}

static int rope_infer(struct op_infer *x)
{
	int64_t h, d, half;
	int ret;

	ret = rope_check(x->node, x->in, x->n_in, &h, &d, &half);
	if (ret < 0)
		return ret;
	return op_infer_like_input(x);
}

static int rope_ms_read(const struct op_node *node, const struct op_tensor *in, int n_in,
			struct rope_geom *g);

int cpu_rope_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		  struct rope_geom *g)
{
	const struct op_tensor *x = &in[ROPE_X];
	const struct op_tensor *by = rope_has_pos(in, n_in) ? &in[ROPE_POS] : &in[ROPE_COS];
	int64_t per;
	int ret;

	memset(g, 0, sizeof(*g));
	if (rope_is_ms(node))
		return rope_ms_read(node, in, n_in, g);
	ret = rope_check(node, in, n_in, &g->H, &g->D, &g->half);
	if (ret < 0)
		return ret;
	g->from_end = 1;
	g->rank3 = x->rank == 3;
	g->B = x->dims[0];
	g->S = x->dims[g->rank3 ? 1 : 2];
	g->interleaved = op_attr_int(node, "interleaved", 0) != 0;
	g->has_pos = rope_has_pos(in, n_in);
	g->rows = g->has_pos ? in[ROPE_COS].dims[0] : 0;
	/* Elements per (b, s) entry: one position, or a row of the caches. */
	per = g->has_pos ? 1 : g->half;
	g->cs = by->dims[1] == 1 ? 0 : per;
	g->cb = by->dims[0] == 1 ? 0 : per * by->dims[1];
	return 0;
}

/* --------------------------------------------------------- com.microsoft */

/*
 * onnxruntime's rules: 3-D input (B, S, hidden) or 4-D (B, N, S, H);
 * caches (max_positions, R / 2); R is rotary_embedding_dim, which needs
 * num_heads, or else the whole head, whose size is then 2 * the caches'
 * last dim for a 3-D input. num_heads, when given, must agree with the
 * shapes. Sets the heads, head size and pairs per head (each fixed,
 * symbolic or unknown).
 */
static int rope_ms_heads(const struct op_node *node, const struct op_tensor *x,
			 const struct op_tensor *cos, int64_t *h, int64_t *d, int64_t *half)
{
	int64_t nh = op_attr_int(node, "num_heads", 0), r = op_attr_int(node, "rotary_embedding_dim", 0);
	int64_t c1 = cos->rank == 2 ? cos->dims[1] : OP_DIM_UNKNOWN;

	*h = *d = *half = OP_DIM_UNKNOWN;
	if (r > 0 && nh == 0)
		return cep__set_error(CEP_EMODEL, "RotaryEmbedding: rotary_embedding_dim needs "
				      "num_heads (com.microsoft)");
	if (x->rank == 4) {
		*h = x->dims[1];
		*d = x->dims[3];
		if (nh > 0 && op_dim_fixed(*h) && nh != *h)
			return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: num_heads is %" PRId64 " but "
					      "the 4-D input has %" PRId64 " heads", nh, *h);
	} else if (nh > 0 && r > 0) {
		*h = nh;
		if (op_dim_fixed(x->dims[2])) {
			if (x->dims[2] % nh != 0)
				return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: the hidden size %"
						      PRId64 " does not split into num_heads=%" PRId64
						      " heads", x->dims[2], nh);
			*d = x->dims[2] / nh;
		}
	} else if (op_dim_fixed(c1)) {
		/* The whole head is rotated: its size is the caches'. */
		*d = 2 * c1;
		if (op_dim_fixed(x->dims[2])) {
			if (*d == 0 || x->dims[2] % *d != 0 || (nh > 0 && nh * *d != x->dims[2]))
				return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: the hidden size %"
						      PRId64 " is not %s heads of %" PRId64 " elements "
						      "(twice the caches' last dimension)", x->dims[2],
						      nh > 0 ? "num_heads" : "a count of", *d);
			*h = x->dims[2] / *d;
		}
	}
	if (r == 0) {
		*half = op_dim_fixed(*d) ? *d / 2 : OP_DIM_UNKNOWN;
		if (op_dim_fixed(*d) && *d % 2 != 0)
			return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: heads of %" PRId64 " elements "
					      "do not pair up", *d);
		return 0;
	}
	if (r % 2 != 0 || (op_dim_fixed(*d) && r > *d))
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: rotary_embedding_dim %" PRId64
				      " must be even and at most the head size %" PRId64, r, *d);
	*half = r / 2;
	return 0;
}

static int rope_ms_check(const struct op_node *node, const struct op_tensor *in, int n_in,
			 int64_t *h, int64_t *d, int64_t *half)
{
	const struct op_tensor *x = &in[MS_X], *pos = &in[MS_POS];
	const struct op_tensor *cos = &in[MS_COS], *sin = &in[MS_SIN];
	int64_t n;
	char sc[160], ss[160];
	int i, ret;

	if ((ret = op_attr_check(node, "scale", OP_ATTR_FLOAT)) < 0 ||
	    (ret = op_attr_check(node, "is_packed_batching", OP_ATTR_INT)) < 0 ||
	    (ret = rope_attrs_check(node)) < 0)
		return ret;
	if (op_attr_int(node, "is_packed_batching", 0) != 0)
		return cep__set_error(CEP_EUNSUPPORTED, "RotaryEmbedding: is_packed_batching (ragged "
				      "batches, com.microsoft) is not supported");
	*h = *d = *half = OP_DIM_UNKNOWN;
	if (n_in < 4)
		return cep__set_error(CEP_EMODEL, "RotaryEmbedding: com.microsoft's takes input, "
				      "position_ids, cos_cache and sin_cache");
	if (!op_dtype_in(x->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: input is %s, a float type is "
				      "needed", cep_dtype_name(x->dtype));
	for (i = MS_COS; i <= MS_SIN; i++) {
		if (in[i].dtype != x->dtype)
			return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: %s is %s but input is %s",
					      i == MS_COS ? "cos_cache" : "sin_cache",
					      cep_dtype_name(in[i].dtype), cep_dtype_name(x->dtype));
	}
	if (pos->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "RotaryEmbedding: position_ids is %s, not int64",
				      cep_dtype_name(pos->dtype));
	if (x->rank < 0 || cos->rank < 0 || sin->rank < 0)
		return 0;
	if (x->rank != 3 && x->rank != 4)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: input has rank %d, not 3 or 4",
				      x->rank);
	op_dims_format(cos, NULL, 0, sc, sizeof(sc));
	op_dims_format(sin, NULL, 0, ss, sizeof(ss));
	if (cos->rank != 2 || sin->rank != 2 || !(cos->dims[0] == sin->dims[0] &&
						  cos->dims[1] == sin->dims[1]))
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s and sin_cache %s; "
				      "both must be (max_position_id_plus_1, rotary_dim / 2)", sc, ss);
	if ((ret = rope_ms_heads(node, x, cos, h, d, half)) < 0)
		return ret;
	if (op_dim_fixed(*half) && op_dim_fixed(cos->dims[1]) && cos->dims[1] != *half)
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: cos_cache is %s; its last "
				      "dimension must be rotary_dim / 2 = %" PRId64, sc, *half);
	if (pos->rank < 0)
		return 0;
	if (op_tensor_numel(pos, &n) == 0 && n == 1 && pos->rank <= 1)
		return 0;
	op_dims_format(pos, NULL, 0, sc, sizeof(sc));
	if (pos->rank != 2 ||
	    (op_dim_fixed(pos->dims[0]) && op_dim_fixed(x->dims[0]) && pos->dims[0] != x->dims[0]) ||
	    (op_dim_fixed(pos->dims[1]) && op_dim_fixed(x->dims[x->rank - 2]) &&
	     pos->dims[1] != x->dims[x->rank - 2]))
		return cep__set_error(CEP_ESHAPE, "RotaryEmbedding: position_ids is %s; it must be one "
				      "value or (batch, sequence)", sc);
	return 0;
}

static int rope_ms_infer(struct op_infer *x)
{
	int64_t h, d, half;
	int ret;

	ret = rope_ms_check(x->node, x->in, x->n_in, &h, &d, &half);
	if (ret < 0)
		return ret;
	return op_infer_like_input(x);
}

static int rope_ms_read(const struct op_node *node, const struct op_tensor *in, int n_in,
			struct rope_geom *g)
{
	const struct op_tensor *x = &in[MS_X], *pos = &in[MS_POS];
	int ret;

	ret = rope_ms_check(node, in, n_in, &g->H, &g->D, &g->half);
	if (ret < 0)
		return ret;
	g->rank3 = x->rank == 3;
	g->B = x->dims[0];
	g->S = x->dims[g->rank3 ? 1 : 2];
	g->interleaved = op_attr_int(node, "interleaved", 0) != 0;
	g->has_pos = 1;
	g->rows = in[MS_COS].dims[0];
	/* One value: position p0 + s everywhere; else one per (b, s). */
	g->pos_step = pos->rank != 2;
	g->cb = g->pos_step ? 0 : g->S;
	g->cs = g->pos_step ? 0 : 1;
	return 0;
}

/* ----------------------------------------------------------------- kernel */

static int rope_prepare(struct op_call *c, size_t *workspace)
{
	struct rope_geom *g = (struct rope_geom *)c->params;

	_Static_assert(sizeof(*g) <= OP_PARAMS_BYTES, "params too large");
	*workspace = 0;
	return cpu_rope_read(c->node, c->in, c->n_in, g);
}

static int rope_run(struct op_call *c)
{
	const struct rope_geom *g = (const struct rope_geom *)c->params;
	struct rope_inputs ix;
	const void *x, *cos, *sin;
	const int64_t *pos;
	cep_dtype t;
	void *y = c->out[0].data;
	int64_t b, s, h, d;

	cpu_rope_inputs(c->node, &ix);
	x = c->in[ix.x].data;
	cos = c->in[ix.cos].data;
	sin = c->in[ix.sin].data;
	pos = g->has_pos ? c->in[ix.pos].data : NULL;
	t = c->in[ix.x].dtype;
	for (b = 0; b < g->B; b++) {
		for (s = 0; s < g->S; s++) {
			int64_t row = b * g->cb + s * g->cs;

			if (pos != NULL) {
				int64_t p = pos[row] + (g->pos_step ? s : 0);

				if (p < (g->from_end ? -g->rows : 0) || p >= g->rows)
					return cep__set_error(CEP_EINVAL, "RotaryEmbedding: index %" PRId64
							      " is out of range for dimension 0 of "
							      "size %" PRId64, p, g->rows);
				row = (p < 0 ? p + g->rows : p) * g->half;
			}
			for (h = 0; h < g->H; h++) {
				int64_t base = rope_x_at(g, b, h, s, 0);

				for (d = 0; d < g->D; d++) {
					float v = cpu_load_f(x, t, base + d);

					if (d < 2 * g->half) {
						bool second;
						int64_t k = rope_pair(g, d, &second);
						float co = cpu_load_f(cos, t, row + k);
						float si = cpu_load_f(sin, t, row + k);
						float x1 = cpu_load_f(x, t, base + rope_member(g, k, false));
						float x2 = cpu_load_f(x, t, base + rope_member(g, k, true));

						v = second ? cpu_round_f(si * x1, t) + cpu_round_f(co * x2, t)
							   : cpu_round_f(co * x1, t) - cpu_round_f(si * x2, t);
					}
					cpu_store_f(y, t, base + d, v);
				}
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ table */

static const struct op_schema schemas[] = {
	{ "", "RotaryEmbedding", 23, OP_OPSET_MAX, 3, 4, 1, 1, 0, 0, rope_infer },
	{ ROPE_MS, "RotaryEmbedding", 1, 1, 4, 4, 1, 1, 0, 0, rope_ms_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "RotaryEmbedding", 23, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64,
	  rope_prepare, rope_run },
	{ ROPE_MS, "RotaryEmbedding", 1, 1, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, rope_prepare,
	  rope_run },
};

const struct op_family op_family_cpu_rotary = {
	"cpu_rotary", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
