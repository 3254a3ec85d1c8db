/*
 * matmul.c — matrix products: MatMul (numpy semantics: 1-D operands
 * promoted and demoted, batch dimensions broadcast) and Gemm (alpha, beta,
 * transA, transB, C broadcast to the output; before opset 7 only with
 * broadcast=1, C of the output's shape without).
 *
 * One plain float32 loop nest does both; float16 and bfloat16 operands are
 * widened into the workspace first and the result narrowed back, so the
 * products are computed in float32 as the issue asks. float64 has the
 * same loops in double, on the tensors themselves. It is the reference,
 * not the fast path: cuBLASLt is.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

/* C (M x N, row stride N) += alpha * A * B, where A(i, k) is at
 * a[i * a_rs + k * a_cs] and B(k, j) at b[k * b_rs + j * b_cs]. */
static void gemm_f32(int64_t M, int64_t N, int64_t K, float alpha,
		     const float *a, int64_t a_rs, int64_t a_cs,
		     const float *b, int64_t b_rs, int64_t b_cs, float *c)
{
	int64_t i, j, k;

	if (b_cs == 1) {
		/* Rows of B are contiguous: stream them into rows of C. */
		for (i = 0; i < M; i++) {
			float *ci = c + i * N;

			for (k = 0; k < K; k++) {
				float av = alpha * a[i * a_rs + k * a_cs];
				const float *bk = b + k * b_rs;

				for (j = 0; j < N; j++)
					ci[j] += av * bk[j];
			}
		}
		return;
	}
	/* B is transposed: each output is a dot product along contiguous k. */
	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			float s = 0.0f;

			for (k = 0; k < K; k++)
				s += a[i * a_rs + k * a_cs] * b[k * b_rs + j * b_cs];
			c[i * N + j] += alpha * s;
		}
	}
}

/* gemm_f32() in double. */
static void gemm_f64(int64_t M, int64_t N, int64_t K, double alpha,
		     const double *a, int64_t a_rs, int64_t a_cs,
		     const double *b, int64_t b_rs, int64_t b_cs, double *c)
{
	int64_t i, j, k;

	if (b_cs == 1) {
		for (i = 0; i < M; i++) {
			double *ci = c + i * N;

			for (k = 0; k < K; k++) {
				double av = alpha * a[i * a_rs + k * a_cs];
				const double *bk = b + k * b_rs;

				for (j = 0; j < N; j++)
					ci[j] += av * bk[j];
			}
		}
		return;
	}
	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			double s = 0.0;

			for (k = 0; k < K; k++)
				s += a[i * a_rs + k * a_cs] * b[k * b_rs + j * b_cs];
			c[i * N + j] += alpha * s;
		}
	}
}

/* Widens n elements of type t at src (starting at element off) into dst. */
static void widen(float *dst, const void *src, cep_dtype t, int64_t off, int64_t n)
{
	int64_t i;

	for (i = 0; i < n; i++)
		dst[i] = cpu_load_f(src, t, off + i);
}

/* ------------------------------------------------------------------ MatMul */

/* What prepare works out once per plan for MatMul. */
struct matmul_params {
	int64_t M, N, K;
	int a_rank, b_rank, o_rank;      /* of the batch dims alone */
	int64_t a_dims[CEP_MAX_RANK - 2]; /* (a_rank) */
	int64_t b_dims[CEP_MAX_RANK - 2]; /* (b_rank) */
	int64_t o_dims[CEP_MAX_RANK - 2]; /* (o_rank) */
};

/* Splits MatMul's operand shapes into batch dims and the matrix: a 1-D a
 * is a row (1 x K), a 1-D b a column (K x 1). */
static void matmul_split(const struct op_tensor *a, const struct op_tensor *b,
			 int64_t *M, int64_t *Ka, int64_t *Kb, int64_t *N)
{
	*M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	*Ka = a->dims[a->rank - 1];
	*Kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
	*N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
}

static int matmul_infer(struct op_infer *x)
{
	const struct op_tensor *a = &x->in[0], *b = &x->in[1];
	struct op_tensor ab = *a, bb = *b, ob = { 0 };
	struct op_tensor *o = &x->out[0];
	int64_t M, Ka, Kb, N;
	int ret, r;

	ret = op_infer_same_dtype(x, 0, 1);
	if (ret < 0)
		return ret;
	o->dtype = a->dtype;
	if (a->rank < 0 || b->rank < 0) {
		o->rank = -1;
		return 0;
	}
	if (a->rank == 0 || b->rank == 0)
		return cep__set_error(CEP_ESHAPE, "MatMul: operands must have rank >= 1 (ranks %d and %d)",
				      a->rank, b->rank);
	matmul_split(a, b, &M, &Ka, &Kb, &N);
	if (op_dim_fixed(Ka) && op_dim_fixed(Kb) && Ka != Kb)
		return cep__set_error(CEP_ESHAPE, "MatMul: inner dimensions differ (%" PRId64
				      " and %" PRId64 ")", Ka, Kb);
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
		return cep__set_error(CEP_EUNSUPPORTED, "MatMul: rank %d is above %d", r,
				      CEP_MAX_RANK);
	memcpy(o->dims, ob.dims, sizeof(o->dims));
	o->rank = r;
	return 0;
}

static int matmul_prepare(struct op_call *c, size_t *workspace)
{
	struct matmul_params *p = (struct matmul_params *)c->params;
	const struct op_tensor *a = &c->in[0], *b = &c->in[1];
	int64_t Kb;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	matmul_split(a, b, &p->M, &p->K, &Kb, &p->N);
	p->a_rank = a->rank > 2 ? a->rank - 2 : 0;
	p->b_rank = b->rank > 2 ? b->rank - 2 : 0;
	/* The output's batch dims are what precedes its matrix dims. */
	p->o_rank = c->out[0].rank - (a->rank >= 2) - (b->rank >= 2);
	memcpy(p->a_dims, a->dims, sizeof(int64_t) * (size_t)p->a_rank);
	memcpy(p->b_dims, b->dims, sizeof(int64_t) * (size_t)p->b_rank);
	memcpy(p->o_dims, c->out[0].dims, sizeof(int64_t) * (size_t)p->o_rank);
	*workspace = 0;
	if (a->dtype != CEP_DTYPE_FLOAT32 && a->dtype != CEP_DTYPE_FLOAT64)
		*workspace = (size_t)(p->M * p->K + p->K * p->N + p->M * p->N) * sizeof(float);
	return 0;
}

static int matmul_run(struct op_call *c)
{
	const struct matmul_params *p = (const struct matmul_params *)c->params;
	struct op_tensor ab = { .rank = p->a_rank }, bb = { .rank = p->b_rank };
	struct op_tensor ob = { .rank = p->o_rank };
	const struct op_tensor *ins[2] = { &ab, &bb };
	cep_dtype t = c->in[0].dtype;
	int64_t M = p->M, N = p->N, K = p->K;
	struct cpu_bcast bc;
	int64_t r, j, batch = 0;

	memcpy(ab.dims, p->a_dims, sizeof(p->a_dims));
	memcpy(bb.dims, p->b_dims, sizeof(p->b_dims));
	memcpy(ob.dims, p->o_dims, sizeof(p->o_dims));
	cpu_bcast_init(&bc, &ob, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		for (j = 0; j < bc.inner; j++, batch++) {
			int64_t ia = (bc.off[0] + j * bc.step[0]) * M * K;
			int64_t ib = (bc.off[1] + j * bc.step[1]) * K * N;
			int64_t io = batch * M * N;

			if (t == CEP_DTYPE_FLOAT32) {
				float *o = (float *)c->out[0].data + io;

				memset(o, 0, (size_t)(M * N) * sizeof(float));
				gemm_f32(M, N, K, 1.0f, (const float *)c->in[0].data + ia, K, 1,
					 (const float *)c->in[1].data + ib, N, 1, o);
			} else if (t == CEP_DTYPE_FLOAT64) {
				double *o = (double *)c->out[0].data + io;

				memset(o, 0, (size_t)(M * N) * sizeof(double));
				gemm_f64(M, N, K, 1.0, (const double *)c->in[0].data + ia, K, 1,
					 (const double *)c->in[1].data + ib, N, 1, o);
			} else {
				float *wa = c->workspace, *wb = wa + M * K, *wo = wb + K * N;
				int64_t i;

				widen(wa, c->in[0].data, t, ia, M * K);
				widen(wb, c->in[1].data, t, ib, K * N);
				memset(wo, 0, (size_t)(M * N) * sizeof(float));
				gemm_f32(M, N, K, 1.0f, wa, K, 1, wb, N, 1, wo);
				for (i = 0; i < M * N; i++)
					cpu_store_f(c->out[0].data, t, io + i, wo[i]);
			}
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

/* -------------------------------------------------------------------- Gemm */

struct gemm_params {
	int64_t M, N, K;
	int64_t a_rs, a_cs, b_rs, b_cs; /* element strides of op(A), op(B) */
	int64_t c_rs, c_cs;             /* of C broadcast to M x N; 0: repeated */
	float alpha, beta;
};

static int gemm_infer(struct op_infer *x)
{
	const struct op_tensor *a = &x->in[0], *b = &x->in[1];
	bool ta = op_attr_int(x->node, "transA", 0) != 0;
	bool tb = op_attr_int(x->node, "transB", 0) != 0;
	bool has_c = x->n_in > 2 && op_tensor_present(&x->in[2]);
	struct op_tensor mn = { 0 }, bcast = { 0 };
	int64_t M, Ka, Kb, N;
	int ret;

	ret = op_infer_same_dtype(x, 0, 2);
	if (ret < 0)
		return ret;
	x->out[0].dtype = a->dtype;
	if (!has_c && x->node->opset < 11)
		return cep__set_error(CEP_EMODEL, "Gemm: input C is required before opset 11");
	if (a->rank < 0 || b->rank < 0) {
		x->out[0].rank = 2;
		x->out[0].dims[0] = x->out[0].dims[1] = OP_DIM_UNKNOWN;
		return 0;
	}
	if (a->rank != 2 || b->rank != 2)
		return cep__set_error(CEP_ESHAPE, "Gemm: A and B must be matrices (ranks %d and %d)",
				      a->rank, b->rank);
	M = a->dims[ta ? 1 : 0];
	Ka = a->dims[ta ? 0 : 1];
	Kb = b->dims[tb ? 1 : 0];
	N = b->dims[tb ? 0 : 1];
	if (op_dim_fixed(Ka) && op_dim_fixed(Kb) && Ka != Kb)
		return cep__set_error(CEP_ESHAPE, "Gemm: inner dimensions differ (%" PRId64
				      " and %" PRId64 ")", Ka, Kb);
	x->out[0].rank = 2;
	x->out[0].dims[0] = M;
	x->out[0].dims[1] = N;
	if (has_c && x->node->opset < 7 && op_attr_int(x->node, "broadcast", 0) == 0 &&
	    x->in[2].rank >= 0) {
		const struct op_tensor *c = &x->in[2];

		if ((ret = op_attr_check(x->node, "broadcast", OP_ATTR_INT)) < 0)
			return ret;
		if (c->rank != 2 ||
		    (op_dim_fixed(c->dims[0]) && op_dim_fixed(M) && c->dims[0] != M) ||
		    (op_dim_fixed(c->dims[1]) && op_dim_fixed(N) && c->dims[1] != N)) {
			char sc[160];

			op_dims_format(c, NULL, 0, sc, sizeof(sc));
			return cep__set_error(CEP_ESHAPE, "Gemm (opset %d): C of shape %s is not (M, N) = "
					      "(%" PRId64 ", %" PRId64 ") and broadcast=1 is not set",
					      x->node->opset, sc, M, N);
		}
	}
	if (has_c && x->in[2].rank >= 0) {
		if (x->in[2].rank > 2)
			return cep__set_error(CEP_ESHAPE, "Gemm: C has rank %d, at most 2 broadcasts to (M, N)",
					      x->in[2].rank);
		mn = x->out[0];
		ret = op_broadcast(x->node, &mn, &x->in[2], &bcast);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int gemm_prepare(struct op_call *c, size_t *workspace)
{
	struct gemm_params *p = (struct gemm_params *)c->params;
	const struct op_tensor *a = &c->in[0], *b = &c->in[1];
	bool ta = op_attr_int(c->node, "transA", 0) != 0;
	bool tb = op_attr_int(c->node, "transB", 0) != 0;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	p->M = c->out[0].dims[0];
	p->N = c->out[0].dims[1];
	p->K = a->dims[ta ? 0 : 1];
	p->a_rs = ta ? 1 : a->dims[1];
	p->a_cs = ta ? a->dims[1] : 1;
	p->b_rs = tb ? 1 : b->dims[1];
	p->b_cs = tb ? b->dims[1] : 1;
	p->alpha = op_attr_float(c->node, "alpha", 1.0f);
	p->beta = op_attr_float(c->node, "beta", 1.0f);
	p->c_rs = p->c_cs = 0;
	if (c->n_in > 2 && op_tensor_present(&c->in[2])) {
		const struct op_tensor *ct = &c->in[2];

		if (ct->rank >= 1 && ct->dims[ct->rank - 1] != 1)
			p->c_cs = 1;
		if (ct->rank == 2 && ct->dims[0] != 1)
			p->c_rs = ct->dims[1];
	}
	*workspace = 0;
	if (a->dtype != CEP_DTYPE_FLOAT32 && a->dtype != CEP_DTYPE_FLOAT64)
		*workspace = (size_t)(p->M * p->K + p->K * p->N + p->M * p->N) * sizeof(float);
	return 0;
}

/* gemm_run() for float64, on the tensors themselves. */
static void gemm_run_f64(const struct op_call *c)
{
	const struct gemm_params *p = (const struct gemm_params *)c->params;
	bool has_c = c->n_in > 2 && op_tensor_present(&c->in[2]);
	double *o = c->out[0].data;
	int64_t i, j;

	for (i = 0; i < p->M; i++) {
		for (j = 0; j < p->N; j++) {
			o[i * p->N + j] = has_c ? (double)p->beta *
							  cpu_load_d(c->in[2].data, c->in[2].dtype,
								     i * p->c_rs + j * p->c_cs)
						: 0.0;
		}
	}
	gemm_f64(p->M, p->N, p->K, p->alpha, c->in[0].data, p->a_rs, p->a_cs, c->in[1].data,
		 p->b_rs, p->b_cs, o);
}

static int gemm_run(struct op_call *c)
{
	const struct gemm_params *p = (const struct gemm_params *)c->params;
	bool has_c = c->n_in > 2 && op_tensor_present(&c->in[2]);
	cep_dtype t = c->in[0].dtype;
	int64_t M = p->M, N = p->N, K = p->K;
	float *o = t == CEP_DTYPE_FLOAT32 ? c->out[0].data : NULL;
	const float *a = c->in[0].data, *b = c->in[1].data;
	int64_t a_rs = p->a_rs, a_cs = p->a_cs, b_rs = p->b_rs, b_cs = p->b_cs;
	int64_t i, j;

	if (t == CEP_DTYPE_FLOAT64) {
		gemm_run_f64(c);
		return 0;
	}
	if (t != CEP_DTYPE_FLOAT32) {
		/* Widened copies keep the operands' layout, so strides hold. */
		float *wa = c->workspace, *wb = wa + M * K;

		widen(wa, c->in[0].data, t, 0, M * K);
		widen(wb, c->in[1].data, t, 0, K * N);
		a = wa;
		b = wb;
		o = wb + K * N;
	}
	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			o[i * N + j] = has_c ? p->beta * cpu_load_f(c->in[2].data, c->in[2].dtype,
								    i * p->c_rs + j * p->c_cs)
					     : 0.0f;
		}
	}
	gemm_f32(M, N, K, p->alpha, a, a_rs, a_cs, b, b_rs, b_cs, o);
	if (t != CEP_DTYPE_FLOAT32) {
		for (i = 0; i < M * N; i++)
			cpu_store_f(c->out[0].data, t, i, o[i]);
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "MatMul", 1, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, matmul_infer },
	/* 7: C broadcasts without being told. */
	{ "", "Gemm", 1, 6, 3, 3, 1, 1, 0, 0, gemm_infer },
	{ "", "Gemm", 7, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, gemm_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "MatMul", 1, 6, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  matmul_prepare, matmul_run },
	{ "", "MatMul", 7, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, matmul_prepare, matmul_run },
	{ "", "Gemm", 1, 6, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  gemm_prepare, gemm_run },
	{ "", "Gemm", 7, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, gemm_prepare, gemm_run },
};

const struct op_family op_family_cpu_matmul = {
	"cpu_matmul", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
