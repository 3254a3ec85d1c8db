/*
 * qmatmul.c — matrix products of quantized integers, with numpy's MatMul
 * shapes (1-D operands promoted and demoted, batch dims broadcast):
 * MatMulInteger (opset 10), whose int32 result is the sum of (a -
 * a_zero_point) * (b - b_zero_point), and QLinearMatMul (10; 21 with
 * float16 and bfloat16 scales), which requantizes that sum:
 *
 *	y = saturate(round(sum * (a_scale * b_scale / y_scale)) + y_zero_point)
 *
 * the multiplier in the scales' type, rounded at each step as that type
 * computes, the product with the sum in double, rounding half to even
 * (quant.h). Every operand is int8 or uint8, each of its own type. The
 * sums accumulate in 32 bits and wrap, as the specification allows.
 *
 * A's zero point and scale are a scalar or a value per row (M values, or
 * [..., M, 1], per batch too when its batch dims are A's); B's per column
 * (N, or [..., 1, N]); the output's a scalar. The layout is struct
 * cpu_qmm (quant.h), which the device kernels read too.
 *
 * The host kernel streams each row of A against the rows of B into a row
 * of accumulators in the workspace, with B's zero points of the matrix
 * beside it: the reference, not the fast path.
 */
#include "kernels/cpu/quant.h"

#include <inttypes.h>

/* Where each operand of the two operators is. */
struct qmm_slots {
	int a, b, azp, bzp, as, bs, ys, yzp; /* -1: the operator has none */
};

static const struct qmm_slots qmm_integer = { 0, 1, 2, 3, -1, -1, -1, -1 };
static const struct qmm_slots qmm_qlinear = { 0, 3, 2, 5, 1, 4, 6, 7 };

static const struct qmm_slots *qmm_slots_of(const struct op_node *node)
{
	return strcmp(node->op_type, "QLinearMatMul") == 0 ? &qmm_qlinear : &qmm_integer;
}

/* Input i of in, or NULL when i is -1, past n or absent. */
static const struct op_tensor *qmm_in(const struct op_tensor *in, int n, int i)
{
	return i >= 0 && i < n && op_tensor_present(&in[i]) ? &in[i] : NULL;
}

/* The matrix shapes: a 1-D a is a row (1 x K), a 1-D b a column (K x 1). */
static void qmm_split(const struct op_tensor *a, const struct op_tensor *b, int64_t *M,
		      int64_t *Ka, int64_t *Kb, int64_t *N)
{
	*M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	*Ka = a->dims[a->rank - 1];
	*Kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
	*N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
}

/* ---------------------------------------------------------------- inference */

/* Checks the types: a, b and their zero points int8 or uint8 in pairs;
 * QLinearMatMul's scales float32 (float16 and bfloat16 too from opset 21),
 * all of one type, and its output's zero point. */
static int qmm_infer_types(const struct op_infer *x, const struct qmm_slots *sl)
{
	const struct op_node *node = x->node;
	const struct op_tensor *a = &x->in[sl->a], *b = &x->in[sl->b];
	const struct op_tensor *azp = qmm_in(x->in, x->n_in, sl->azp);
	const struct op_tensor *bzp = qmm_in(x->in, x->n_in, sl->bzp);
	int ret, i;

	if ((ret = quant_check_dtype(node, "a", a->dtype, QUANT_DTS_Q)) < 0 ||
	    (ret = quant_check_dtype(node, "b", b->dtype, QUANT_DTS_Q)) < 0)
		return ret;
	if (azp != NULL && azp->dtype != a->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: a_zero_point is %s but a is %s", node->op_type,
				      cep_dtype_name(azp->dtype), cep_dtype_name(a->dtype));
	if (bzp != NULL && bzp->dtype != b->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: b_zero_point is %s but b is %s", node->op_type,
				      cep_dtype_name(bzp->dtype), cep_dtype_name(b->dtype));
	if (sl->ys < 0)
		return 0;
	for (i = 0; i < 3; i++) {
		static const char *const names[] = { "a_scale", "b_scale", "y_scale" };
		int k = i == 0 ? sl->as : i == 1 ? sl->bs : sl->ys;

		ret = quant_check_dtype(node, names[i], x->in[k].dtype,
					node->opset >= 21 ? QUANT_DTS_FLOAT : OP_DT(CEP_DTYPE_FLOAT32));
		if (ret < 0)
			return ret;
		if (x->in[k].dtype != x->in[sl->as].dtype)
			return cep__set_error(CEP_EDTYPE, "%s: %s is %s but a_scale is %s; the scales "
					      "must be of one type", node->op_type, names[i],
					      cep_dtype_name(x->in[k].dtype),
					      cep_dtype_name(x->in[sl->as].dtype));
	}
	return quant_check_dtype(node, "y_zero_point", x->in[sl->yzp].dtype, QUANT_DTS_Q);
}

/* Whether every dim of the n tensors is fixed. */
static bool qmm_all_fixed(const struct op_tensor *in, int n)
{
	int i, d;

	for (i = 0; i < n; i++) {
		if (!op_tensor_present(&in[i]))
			continue;
		if (in[i].rank < 0)
			return false;
		for (d = 0; d < in[i].rank; d++) {
			if (!op_dim_fixed(in[i].dims[d]))
				return false;
		}
	}
	return true;
}

static int qmm_infer(struct op_infer *x)
{
	const struct qmm_slots *sl = qmm_slots_of(x->node);
	const struct op_tensor *a = &x->in[sl->a], *b = &x->in[sl->b];
	struct op_tensor ab = *a, bb = *b, ob = { 0 };
	struct op_tensor *o = &x->out[0];
	int64_t M, Ka, Kb, N;
	struct cpu_qmm p;
	int ret, r;

	ret = qmm_infer_types(x, sl);
	if (ret < 0)
		return ret;
	o->dtype = sl->yzp >= 0 ? x->in[sl->yzp].dtype : CEP_DTYPE_INT32;
	if (a->rank < 0 || b->rank < 0) {
		o->rank = -1;
		return 0;
	}
	if (a->rank == 0 || b->rank == 0)
		return cep__set_error(CEP_ESHAPE, "%s: operands must have rank >= 1 (ranks %d and %d)",
				      x->node->op_type, a->rank, b->rank);
	qmm_split(a, b, &M, &Ka, &Kb, &N);
	if (op_dim_fixed(Ka) && op_dim_fixed(Kb) && Ka != Kb)
		return cep__set_error(CEP_ESHAPE, "%s: inner dimensions differ (%" PRId64 " and %"
				      PRId64 ")", x->node->op_type, Ka, Kb);
	ab.rank = a->rank > 2 ? a->rank - 2 : 0;
	bb.rank = b->rank > 2 ? b->rank - 2 : 0;
	ret = op_broadcast(x->node, &ab, &bb, &ob);
	if (ret < 0)
		return ret;
	r = ob.rank;
	if (a->rank >= 2)
		ob.dims[r++] = M;
	if (b->rank >= 2)
		ob.dims[r++] = N;
	if (r > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: rank %d is above %d", x->node->op_type,
				      r, CEP_MAX_RANK);
	memcpy(o->dims, ob.dims, sizeof(o->dims));
	o->rank = r;
	/* The zero points and scales, once every shape is known (plan time
	 * checks them again otherwise). */
	if (qmm_all_fixed(x->in, x->n_in) && qmm_all_fixed(o, 1))
		return cpu_qmm_read(x->node, x->in, x->n_in, o, &p);
	return 0;
}

/* ----------------------------------------------------------------- layout */

/*
 * The layout of the zero point or scale t (called name) of operand op,
 * per row (rows: A) or per column of v values: *bs and *vs as struct
 * cpu_qmm keeps them. Returns 0, CEP_ESHAPE or CEP_EUNSUPPORTED.
 */
static int qmm_side(const struct op_node *node, const char *name, const struct op_tensor *t,
		    const struct op_tensor *op, bool rows, int64_t v, int64_t *bs, int64_t *vs)
{
	int64_t numel;
	char st[160];
	int r = op->rank, d;
	bool ones = true, same = true;

	*bs = *vs = 0;
	if (t == NULL)
		return 0;
	numel = op_dims_product(t, 0, t->rank);
	if (numel == 1 && t->rank <= (r > 1 ? r : 1))
		return 0;
	if (t->rank == 1 && t->dims[0] == v) {
		*vs = 1;
		return 0;
	}
	op_dims_format(t, NULL, 0, st, sizeof(st));
	if (r >= 2 && t->rank == r && t->dims[r - 2] == (rows ? v : 1) &&
	    t->dims[r - 1] == (rows ? 1 : v)) {
		for (d = 0; d < r - 2; d++) {
			ones = ones && t->dims[d] == 1;
			same = same && t->dims[d] == op->dims[d];
		}
		if (ones || same) {
			*vs = 1;
			*bs = same && !ones ? v : 0;
			return 0;
		}
		return cep__set_error(CEP_EUNSUPPORTED, "%s: %s has shape %s, which broadcasts over "
				      "some batch dims of %s only; cudaep takes one value per %s "
				      "for every batch or for each", node->op_type, name, st,
				      rows ? "a" : "b", rows ? "row" : "column");
	}
	return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be a scalar, [%" PRId64 "] "
			      "or [..., %s] (one value per %s of %s)", node->op_type, name, st, v,
			      rows ? "M, 1" : "1, N", rows ? "row" : "column", rows ? "a" : "b");
}

/* Checks that the zero point and scale of a pair have one shape. */
static int qmm_pair(const struct op_node *node, const char *zname, const struct op_tensor *zp,
		    const char *sname, const struct op_tensor *s)
{
	char a[160], b[160];

	if (zp == NULL || s == NULL)
		return 0;
	if (zp->rank == s->rank &&
	    memcmp(zp->dims, s->dims, sizeof(int64_t) * (size_t)s->rank) == 0)
		return 0;
	op_dims_format(s, NULL, 0, a, sizeof(a));
	op_dims_format(zp, NULL, 0, b, sizeof(b));
	return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s but %s has %s; they must have the "
			      "same shape", node->op_type, sname, a, zname, b);
}

int cpu_qmm_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		 const struct op_tensor *y, struct cpu_qmm *p)
{
	const struct qmm_slots *sl = qmm_slots_of(node);
	const struct op_tensor *a = &in[sl->a], *b = &in[sl->b];
	const struct op_tensor *azp = qmm_in(in, n_in, sl->azp), *bzp = qmm_in(in, n_in, sl->bzp);
	const struct op_tensor *as = qmm_in(in, n_in, sl->as), *bs = qmm_in(in, n_in, sl->bs);
	int64_t Kb, sa = 1, sb = 1, str_a[QMM_MAX_BATCH], str_b[QMM_MAX_BATCH];
	int ab = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, d, ret;

	memset(p, 0, sizeof(*p));
	qmm_split(a, b, &p->M, &p->K, &Kb, &p->N);
	p->rank = y->rank - (a->rank >= 2) - (b->rank >= 2);
	for (d = ab - 1; d >= 0; d--) {
		str_a[d] = sa;
		sa *= a->dims[d];
	}
	for (d = bb - 1; d >= 0; d--) {
		str_b[d] = sb;
		sb *= b->dims[d];
	}
	p->batch = 1;
	for (d = 0; d < p->rank; d++) {
		int da = d - (p->rank - ab), db = d - (p->rank - bb);

		p->dims[d] = y->dims[d];
		p->batch *= y->dims[d];
		p->a_str[d] = da >= 0 && a->dims[da] != 1 ? str_a[da] : 0;
		p->b_str[d] = db >= 0 && b->dims[db] != 1 ? str_b[db] : 0;
	}
	/* A pair has one shape: the zero point's (a scale alone when it is
	 * absent) gives the layout of both. */
	if ((ret = qmm_pair(node, "a_zero_point", azp, "a_scale", as)) < 0 ||
	    (ret = qmm_pair(node, "b_zero_point", bzp, "b_scale", bs)) < 0 ||
	    (ret = qmm_side(node, azp ? "a_zero_point" : "a_scale", azp ? azp : as, a, true, p->M,
			    &p->a_bs, &p->a_vs)) < 0 ||
	    (ret = qmm_side(node, bzp ? "b_zero_point" : "b_scale", bzp ? bzp : bs, b, false, p->N,
			    &p->b_bs, &p->b_vs)) < 0)
		return ret;
	for (d = 0; sl->ys >= 0 && d < 2; d++) {
		const struct op_tensor *t = &in[d == 0 ? sl->ys : sl->yzp];
		char st[160];

		if (op_dims_product(t, 0, t->rank) == 1)
			continue;
		op_dims_format(t, NULL, 0, st, sizeof(st));
		return cep__set_error(CEP_EUNSUPPORTED, "%s: %s has shape %s; cudaep takes one value "
				      "(per tensor) for the output", node->op_type,
				      d == 0 ? "y_scale" : "y_zero_point", st);
	}
	return 0;
}

/* ------------------------------------------------------------------- kernel */

struct qmm_params {
	struct cpu_qmm q;
	int32_t round;            /* of the scales' type */
	int32_t pad;
};

static int qmm_prepare(struct op_call *c, size_t *workspace)
{
	struct qmm_params *p = (struct qmm_params *)c->params;
	const struct qmm_slots *sl = qmm_slots_of(c->node);
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	ret = cpu_qmm_read(c->node, c->in, c->n_in, &c->out[0], &p->q);
	p->round = sl->as >= 0 ? quant_round_of(c->in[sl->as].dtype) : QUANT_ROUND_F32;
	/* A row of accumulators and B's zero points by column. */
	*workspace = (size_t)p->q.N * (sizeof(uint32_t) + sizeof(int32_t));
	return ret;
}

/* Element i of a scale tensor as a double (1 when absent). */
static double qmm_scale(const struct op_tensor *s, int64_t i)
{
	return s != NULL ? quant_load_d(s->data, s->dtype, i) : 1.0;
}

static int qmm_run(struct op_call *c)
{
	const struct qmm_params *p = (const struct qmm_params *)c->params;
	const struct cpu_qmm *q = &p->q;
	const struct qmm_slots *sl = qmm_slots_of(c->node);
	const struct op_tensor *a = &c->in[sl->a], *b = &c->in[sl->b], *y = &c->out[0];
	const struct op_tensor *azp = qmm_in(c->in, c->n_in, sl->azp);
	const struct op_tensor *bzp = qmm_in(c->in, c->n_in, sl->bzp);
	const struct op_tensor *as = qmm_in(c->in, c->n_in, sl->as);
	const struct op_tensor *bs = qmm_in(c->in, c->n_in, sl->bs);
	const struct op_tensor *ys = qmm_in(c->in, c->n_in, sl->ys);
	const struct op_tensor *yzp = qmm_in(c->in, c->n_in, sl->yzp);
	uint32_t *acc = c->workspace;
	int32_t *bz = (int32_t *)(acc + q->N);
	int64_t M = q->M, N = q->N, K = q->K, bo, i, j, k, lo = 0, hi = 0;
	double ysv = ys != NULL ? qmm_scale(ys, 0) : 1.0;
	int64_t yz = quant_zp(yzp, 0);

	if (sl->ys >= 0)
		quant_range(y->dtype, &lo, &hi);
	for (bo = 0; bo < q->batch; bo++) {
		int64_t am, bm, ao, bo_;

		cpu_qmm_mats(q, bo, &am, &bm);
		ao = am * M * K;
		bo_ = bm * K * N;
		for (j = 0; j < N; j++)
			bz[j] = (int32_t)quant_zp(bzp, bm * q->b_bs + j * q->b_vs);
		for (i = 0; i < M; i++) {
			int64_t ka = am * q->a_bs + i * q->a_vs;
			int32_t az = (int32_t)quant_zp(azp, ka);
			int64_t yo = (bo * M + i) * N;

			memset(acc, 0, sizeof(*acc) * (size_t)N);
			for (k = 0; k < K; k++) {
				int32_t av = (int32_t)cpu_load_i(a->data, a->dtype, ao + i * K + k) - az;
				int64_t brow = bo_ + k * N;

				/* |av * (b - bz)| <= 255 * 255: the product never
				 * overflows; the sum wraps in 32 bits. */
				for (j = 0; j < N; j++)
					acc[j] += (uint32_t)(av * ((int32_t)cpu_load_i(b->data, b->dtype,
										       brow + j) - bz[j]));
			}
			if (sl->ys < 0) {
				for (j = 0; j < N; j++)
					((int32_t *)y->data)[yo + j] = (int32_t)acc[j];
				continue;
			}
			for (j = 0; j < N; j++) {
				double m = quant_round_to(qmm_scale(as, ka) *
							  qmm_scale(bs, bm * q->b_bs + j * q->b_vs),
							  p->round);

				m = quant_round_to(m / ysv, p->round);
				cpu_store_i(y->data, y->dtype, yo + j,
					    quant_saturate((double)(int32_t)acc[j] * m, yz, lo, hi));
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "MatMulInteger", 10, OP_OPSET_MAX, 2, 4, 1, 1, 0, 0, qmm_infer },
	{ "", "QLinearMatMul", 10, OP_OPSET_MAX, 8, 8, 1, 1, 0, 0, qmm_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "MatMulInteger", 10, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_Q, qmm_prepare, qmm_run },
	{ "", "QLinearMatMul", 10, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_Q, qmm_prepare, qmm_run },
};

const struct op_family op_family_cpu_qmatmul = {
	"cpu_qmatmul", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
