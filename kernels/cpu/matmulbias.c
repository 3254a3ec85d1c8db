/*
 * matmulbias.c — the internal operator MatMulBias (kernels/xfmr.h): a
 * MatMul by a constant matrix, the Add of a bias along the last dim and an
 * optional activation, as engine/fuse_xfmr.c fuses them. Its schema and
 * reference kernel.
 *
 * The reference computes each output row exactly as the unfused nodes do
 * on the host (kernels/cpu/matmul.c's row loop: products summed in float32
 * in the order of k from zero, then the bias added, then the activation
 * of kernels/cpu/activation.c), so on float32 the fusion changes no bit.
 * float16 and bfloat16 operands are widened into the workspace and the
 * result rounded once. The optional residual R (the Add of a residual
 * connection that engine/fuse_xfmr.c folds in, activation "none" only) is
 * added to the row as rounded to its type, and the sum rounded again: the
 * unfused Add's arithmetic, bit for bit.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

#include "kernels/xfmr.h"

struct mmb_params {
	int64_t M, K, N;            /* X as M x K, W K x N */
	enum xfmr_act act;
};

static int mmb_infer(struct op_infer *x)
{
	const struct op_tensor *a = &x->in[0], *w = &x->in[1], *b = &x->in[2];
	struct op_tensor *o = &x->out[0];
	enum xfmr_act act;
	int64_t n;
	int i, ret;

	ret = xfmr_act_parse(x->node, &act);
	if (ret < 0)
		return ret;
	ret = op_infer_same_dtype(x, 0, 2);
	if (ret < 0)
		return ret;
	if (!op_dtype_in(a->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "MatMulBias: X is %s, a float type is needed",
				      cep_dtype_name(a->dtype));
	o->dtype = a->dtype;
	o->rank = -1;
	if (w->rank != 2)
		return cep__set_error(CEP_ESHAPE, "MatMulBias: W has rank %d, not 2", w->rank);
	n = w->dims[1];
	if (b->rank < 1 || !op_dim_fixed(n) || b->dims[b->rank - 1] != n)
		return cep__set_error(CEP_ESHAPE, "MatMulBias: the bias is not a vector of W's %"
				      PRId64 " columns", n);
	for (i = 0; i < b->rank - 1; i++) {
		if (b->dims[i] != 1)
			return cep__set_error(CEP_ESHAPE, "MatMulBias: the bias has dimension %d "
					      "of %" PRId64 ", not 1", i, b->dims[i]);
	}
	if (x->n_in > 3 && op_tensor_present(&x->in[3]) && act != XFMR_ACT_NONE)
		return cep__set_error(CEP_EMODEL, "MatMulBias: a residual input needs activation "
				      "\"none\", not \"%s\"", xfmr_act_name(act));
	if (a->rank < 0)
		return 0;
	if (a->rank < 2 || a->rank > CEP_MAX_RANK)
		return cep__set_error(CEP_ESHAPE, "MatMulBias: X has rank %d, 2 to %d are "
				      "taken", a->rank, CEP_MAX_RANK);
	if (op_dim_fixed(a->dims[a->rank - 1]) && op_dim_fixed(w->dims[0]) &&
	    a->dims[a->rank - 1] != w->dims[0])
		return cep__set_error(CEP_ESHAPE, "MatMulBias: inner dimensions differ (%" PRId64
				      " and %" PRId64 ")", a->dims[a->rank - 1], w->dims[0]);
	*o = *a;
	o->data = NULL;
	o->dims[o->rank - 1] = n;
	if (x->n_in > 3 && op_tensor_present(&x->in[3])) {
		const struct op_tensor *r = &x->in[3];

		if (r->dtype != o->dtype)
			return cep__set_error(CEP_EDTYPE, "MatMulBias: the residual is %s, the "
					      "output %s", cep_dtype_name(r->dtype),
					      cep_dtype_name(o->dtype));
		if (r->rank >= 0 && r->rank != o->rank)
			return cep__set_error(CEP_ESHAPE, "MatMulBias: the residual has rank %d, "
					      "the output %d", r->rank, o->rank);
		for (i = 0; r->rank >= 0 && i < o->rank; i++) {
			if (op_dim_fixed(r->dims[i]) && op_dim_fixed(o->dims[i]) &&
			    r->dims[i] != o->dims[i])
				return cep__set_error(CEP_ESHAPE, "MatMulBias: the residual's "
						      "dimension %d is %" PRId64 ", the output's %"
						      PRId64, i, r->dims[i], o->dims[i]);
		}
	}
	return 0;
}

static int mmb_prepare(struct op_call *c, size_t *workspace)
{
	struct mmb_params *p = (struct mmb_params *)c->params;
	const struct op_tensor *a = &c->in[0];
	size_t floats;
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	ret = xfmr_act_parse(c->node, &p->act);
	if (ret < 0)
		return ret;
	p->M = op_dims_product(a, 0, a->rank - 1);
	p->K = a->dims[a->rank - 1];
	p->N = c->in[1].dims[1];
	/* A row of sums; for 16-bit types also W, the bias and a row of X
	 * widened to float32. */
	floats = (size_t)p->N;
	if (a->dtype != CEP_DTYPE_FLOAT32)
		floats += (size_t)(p->K * p->N + p->N + p->K);
	*workspace = floats * sizeof(float);
	return 0;
}

static int mmb_run(struct op_call *c)
{
	const struct mmb_params *p = (const struct mmb_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	int64_t M = p->M, K = p->K, N = p->N, i, j, k;
	float *acc = c->workspace;
	const float *w = c->in[1].data, *bias = c->in[2].data, *x = c->in[0].data;
	const void *resid = c->n_in > 3 ? c->in[3].data : NULL;
	float *xrow = NULL;

	if (t != CEP_DTYPE_FLOAT32) {
		float *ww = acc + N, *wb = ww + K * N;

		xrow = wb + N;
		for (i = 0; i < K * N; i++)
			ww[i] = cpu_load_f(c->in[1].data, t, i);
		for (j = 0; j < N; j++)
			wb[j] = cpu_load_f(c->in[2].data, t, j);
		w = ww;
		bias = wb;
	}
	for (i = 0; i < M; i++) {
		const float *xi = x + i * K;

		if (xrow != NULL) {
			for (k = 0; k < K; k++)
				xrow[k] = cpu_load_f(c->in[0].data, t, i * K + k);
			xi = xrow;
		}
		memset(acc, 0, (size_t)N * sizeof(float));
		for (k = 0; k < K; k++) {
			float av = xi[k];
			const float *wk = w + k * N;

			for (j = 0; j < N; j++)
				acc[j] += av * wk[j];
		}
		for (j = 0; j < N; j++)
			cpu_store_f(c->out[0].data, t, i * N + j,
				    xfmr_act_apply(p->act, acc[j] + bias[j]));
		if (resid == NULL)
			continue;
		for (j = 0; j < N; j++)
			cpu_store_f(c->out[0].data, t, i * N + j,
				    cpu_load_f(c->out[0].data, t, i * N + j) +
				    cpu_load_f(resid, t, i * N + j));
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ XFMR_DOMAIN, "MatMulBias", 1, 1, 3, 4, 1, 1, 0, OP_INTERNAL, mmb_infer },
};

static const struct op_kernel kernels[] = {
	{ XFMR_DOMAIN, "MatMulBias", 1, 1, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, mmb_prepare, mmb_run },
};

const struct op_family op_family_cpu_matmulbias = {
	"cpu_matmulbias", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
