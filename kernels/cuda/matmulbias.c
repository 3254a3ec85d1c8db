/*
 * matmulbias.c — the CUDA kernel of the internal MatMulBias
 * (kernels/xfmr.h): Y = act(X W + bias) for X [..., K] seen as an M x K
 * matrix, as one cuBLASLt GEMM (gpu/cuda/cublaslt.h) whose epilogue adds the
 * bias and applies the activation: BIAS, RELU_BIAS, or GELU_BIAS for
 * Gelu's tanh form. cuBLASLt's GELU is the tanh approximation, so the
 * exact (erf) GELU runs as a plain GEMM followed by one pass of
 * kernels/cuda/matmulbias.cu that adds the bias and applies it; so does
 * a problem for which cuBLASLt's heuristic offers no algorithm with the
 * epilogue, and an empty K, where the output is act(bias).
 *
 * A residual R (a fourth input, activation "none") is the GEMM's C with
 * beta 1, so the Add it replaces costs nothing; where no GEMM runs (K 0)
 * it is copied into Y first and the bias pass adds to it.
 *
 * Row-major Y = X W is column-major Y^T = W^T X^T: cuBLASLt's first
 * operand is W (N x K, leading dimension N), its second X (K x M), and
 * the bias is a vector along its m = N. prepare() builds the plan (cached
 * per backend) and asks for its workspace; run() queues the work.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cublaslt.h"
#include "kernels/xfmr.h"

/* The most workspace an algorithm may ask of the plan. */
#define MMB_WORKSPACE_MAX ((size_t)32 << 20)

struct mmb_params {
	struct cublaslt *lt;             /* the backend's */
	const struct cublaslt_gemm *g;   /* NULL when K is 0 */
	CUfunction post;                 /* mmb_epilogue of the type, or NULL */
	int64_t m, n;                    /* of Y as a matrix */
	int32_t act;                     /* enum xfmr_act, for post */
	int32_t add;                     /* post adds to the GEMM's output */
	int32_t bias;                    /* the GEMM's epilogue takes the bias */
	int32_t resid;                   /* in[3] is added (the GEMM's C) */
};
CUDA_PARAMS_FIT(struct mmb_params);

/* Turns the failure of a cuBLASLt step into the operator's error. */
static int mmb_blame(int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "MatMulBias: %s", why);
}

/* Makes the call finish with mmb_epilogue: the bias added to the GEMM's
 * output (add) or written alone, then the activation. */
static int mmb_post(struct op_call *c, const char *sfx, int add)
{
	struct mmb_params *p = (struct mmb_params *)c->params;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "mmb_epilogue_%s", sfx);
	ret = cuda_function_get(c->be, "matmulbias", name, &p->post);
	if (ret < 0)
		return mmb_blame(ret);
	p->add = add;
	return 0;
}

static int mmb_prepare(struct op_call *c, size_t *workspace)
{
	struct mmb_params *p = (struct mmb_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cublaslt_gemm_desc d;
	enum xfmr_act act;
	int64_t k;
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(x->dtype, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "MatMulBias: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	ret = xfmr_act_parse(c->node, &act);
	if (ret < 0)
		return ret;
	ret = cuda_blas_get(c->be, &p->lt);
	if (ret < 0)
		return mmb_blame(ret);
	p->m = op_dims_product(x, 0, x->rank - 1);
	p->n = c->in[1].dims[1];
	k = x->dims[x->rank - 1];
	p->act = act;
	p->resid = c->n_in > 3 && op_tensor_present(&c->in[3]);
	if (p->m == 0 || p->n == 0)
		return 0;
	if (k == 0 || act == XFMR_ACT_GELU) {
		ret = mmb_post(c, sfx, k > 0 || p->resid);
		if (ret < 0)
			return ret;
	}
	if (k == 0)
		return 0;
	cublaslt_gemm_desc_init(&d);
	d.dtype = x->dtype;
	/* A tf32 session's float32 products may use TF32 (a plan key). */
	d.tf32 = (c->flags & OP_CALL_TF32) && x->dtype == CEP_DTYPE_FLOAT32;
	d.m = p->n;
	d.n = p->m;
	d.k = k;
	d.lda = p->n;
	d.ldb = k;
	d.ldd = p->n;
	if (p->resid)
		d.beta = 1.0f;
	if (act != XFMR_ACT_GELU) {
		d.bias = 1;
		d.act = act == XFMR_ACT_RELU ? CUBLASLT_ACT_RELU :
			act == XFMR_ACT_GELU_TANH ? CUBLASLT_ACT_GELU_TANH : CUBLASLT_ACT_NONE;
	}
	p->bias = d.bias;
	ret = cublaslt_gemm_get(p->lt, &d, MMB_WORKSPACE_MAX, &p->g);
	if (ret == CEP_ENOTSUP && d.bias) {
		/* No algorithm takes that epilogue for this problem: the plain
		 * GEMM, then the bias and activation in one pass. */
		cep__clear_error();
		d.bias = 0;
		d.act = CUBLASLT_ACT_NONE;
		p->bias = 0;
		ret = mmb_post(c, sfx, 1);
		if (ret == 0)
			ret = cublaslt_gemm_get(p->lt, &d, MMB_WORKSPACE_MAX, &p->g);
	}
	if (ret < 0)
		return mmb_blame(ret);
	*workspace = cublaslt_gemm_workspace(p->g);
	return 0;
}

static int mmb_run(struct op_call *c)
{
	const struct mmb_params *p = (const struct mmb_params *)c->params;
	const void *bias = c->in[2].data;
	const void *resid = p->resid ? c->in[3].data : NULL;
	void *y = c->out[0].data;
	int ret;

	if (p->m == 0 || p->n == 0)
		return 0;
	if (p->g != NULL) {
		ret = cublaslt_gemm_run(p->lt, p->g, cuda_stream_handle(c->stream), c->in[1].data,
					c->in[0].data, resid, y, p->bias ? bias : NULL,
					c->workspace);
		if (ret < 0)
			return mmb_blame(ret);
	} else if (resid != NULL && resid != y) {
		/* K 0: Y = B + R, the bias pass adding to R's copy. */
		ret = backend_copy_d2d(c->be, c->stream, y, resid,
				       (size_t)(p->m * p->n) * cep_dtype_size(c->out[0].dtype));
		if (ret < 0)
			return ret;
	}
	if (p->post != NULL) {
		void *args[] = { &y, (void *)&bias, (void *)&p->m, (void *)&p->n,
				 (void *)&p->act, (void *)&p->add };

		return cuda_launch(c->be, c->stream, p->post, cuda_grid(p->m * p->n), CUDA_BLOCK,
				   0, args);
	}
	return 0;
}

static const struct op_kernel kernels[] = {
	{ XFMR_DOMAIN, "MatMulBias", 1, 1, BACKEND_CUDA, CUDA_DTS_FLOAT, mmb_prepare, mmb_run },
};

const struct op_family op_family_cuda_matmulbias = {
	"cuda_matmulbias", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
