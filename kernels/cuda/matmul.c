/*
 * matmul.c — the CUDA kernels of MatMul and Gemm (opset 1 on, float32,
 * float16 and bfloat16, computed in float32; float32 products use TF32
 * tensor cores only for a call flagged OP_CALL_TF32, a tf32 session's)
 * through cuBLASLt (gpu/cuda/cublaslt.h); kernels/cuda/matmul.cu only fills an
 * output before the GEMM adds to it.
 *
 * Row-major tensors are column-major transposes, so Y = A B is computed
 * as Y^T = B^T A^T: cuBLASLt's first operand is always B. MatMul's batch
 * dims broadcast as numpy's do: they are merged where both operands walk
 * them evenly (cuda_bcast_init()), the innermost merged dim becomes one
 * strided-batched GEMM (stride 0 for an operand broadcast along it), and
 * any outer dims are looped over in run(), one batched GEMM per group. A
 * batch against a single matrix B is one GEMM with the batch folded
 * into M. Gemm's C is the bias epilogue when it is a float32 row vector
 * and beta is 1, cuBLASLt's C when it is a whole M x N matrix, and
 * otherwise broadcast into the output first (gemm_fill) for the GEMM to
 * add to.
 *
 * prepare() builds everything (descriptors, layouts, the heuristic's
 * algorithm: cached per backend by cublaslt_gemm_get()) and asks for the
 * algorithm's workspace; run() only queues work on call->stream.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cublaslt.h"

/* The most workspace an algorithm may ask of the plan. */
#define MATMUL_WORKSPACE_MAX ((size_t)32 << 20)

/* The widest power of two up to 256 (BACKEND_ALIGN, what every tensor
 * starts on) that divides each of the n byte offsets. */
static uint32_t matmul_align(const int64_t *v, int n)
{
	uint32_t a = 256;
	int i;

	for (i = 0; i < n; i++) {
		while (v[i] != 0 && v[i] % a != 0)
			a /= 2;
	}
	return a;
}

/* Turns the failure of a cuBLASLt step into the operator's error. */
static int matmul_blame(const struct op_call *c, int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "%s: %s", c->node->op_type, why);
}

/* The handle of the call's backend, the fill kernel of the output's type. */
static int matmul_setup(struct op_call *c, struct cublaslt **lt, CUfunction *fill)
{
	const char *sfx = cuda_dtype_suffix(c->out[0].dtype);
	char name[32];
	int ret;

	if (!op_dtype_in(c->out[0].dtype, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->out[0].dtype));
	ret = cuda_blas_get(c->be, lt);
	if (ret < 0)
		return matmul_blame(c, ret);
	snprintf(name, sizeof(name), "gemm_fill_%s", sfx);
	return cuda_function_get(c->be, "matmul", name, fill);
}

/* Queues fn over the m x n output o: scale times c broadcast through
 * (c_rs, c_cs), or zeros when c is NULL. */
static int matmul_fill(struct op_call *c, CUfunction fn, void *o, const void *cp, int64_t m,
		       int64_t n, int64_t c_rs, int64_t c_cs, float scale)
{
	void *args[] = { &o, &cp, &m, &n, &c_rs, &c_cs, &scale };

	return cuda_launch(c->be, c->stream, fn, cuda_grid(m * n), CUDA_BLOCK, 0, args);
}

/* Whether the call's float32 products may use TF32 tensor cores. */
static int32_t matmul_tf32(const struct op_call *c)
{
	return (c->flags & OP_CALL_TF32) && c->out[0].dtype == CEP_DTYPE_FLOAT32;
}

/* ------------------------------------------------------------------ MatMul */

#define MATMUL_OUTER (CEP_MAX_RANK - 2)

struct matmul_params {
	struct cublaslt *lt;             /* the backend's */
	const struct cublaslt_gemm *g;   /* one batched GEMM; NULL when K is 0 */
	CUfunction fill;                 /* zeros, when K is 0 */
	int64_t numel;                   /* of the output */
	int64_t group_bytes;             /* of the output per group */
	int32_t n_outer;                 /* dims looped over around the GEMM */
	int32_t pad;
	int64_t outer[MATMUL_OUTER];     /* (n_outer) sizes, outermost first */
	int64_t step_a[MATMUL_OUTER];    /* (n_outer) bytes of A per step */
	int64_t step_b[MATMUL_OUTER];    /* (n_outer) bytes of B per step */
};
CUDA_PARAMS_FIT(struct matmul_params);

/* A tensor of the batch dims of t alone (those before its matrix). */
static struct op_tensor matmul_batch(const struct op_tensor *t, int matrix_dims)
{
	struct op_tensor b = { .dtype = t->dtype };

	b.rank = t->rank > matrix_dims ? t->rank - matrix_dims : 0;
	memcpy(b.dims, t->dims, sizeof(int64_t) * (size_t)b.rank);
	return b;
}

static int matmul_prepare(struct op_call *c, size_t *workspace)
{
	struct matmul_params *p = (struct matmul_params *)c->params;
	const struct op_tensor *a = &c->in[0], *b = &c->in[1], *o = &c->out[0];
	int64_t es = (int64_t)cep_dtype_size(o->dtype);
	struct op_tensor ab, bb, ob;
	struct cublaslt_gemm_desc d;
	struct cuda_bcast bc;
	int64_t M, N, K, inner, sa, sb, v[MATMUL_OUTER + 2];
	int i, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = matmul_setup(c, &p->lt, &p->fill);
	if (ret < 0)
		return ret;
	/* 1-D operands per numpy: a is a row (1 x K), b a column (K x 1). */
	M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	K = a->dims[a->rank - 1];
	N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	p->numel = op_dims_product(o, 0, o->rank);
	if (p->numel == 0 || K == 0)
		return 0;
	ab = matmul_batch(a, 2);
	bb = matmul_batch(b, 2);
	ob = matmul_batch(o, (a->rank >= 2) + (b->rank >= 2));
	cuda_bcast_init(&bc, &ob, &ab, &bb);
	inner = bc.dims[bc.rank - 1];
	sa = bc.stride[0][bc.rank - 1];
	sb = bc.stride[1][bc.rank - 1];
	p->n_outer = bc.rank - 1;
	for (i = 0; i < p->n_outer; i++) {
		p->outer[i] = bc.dims[i];
		p->step_a[i] = bc.stride[0][i] * M * K * es;
		p->step_b[i] = bc.stride[1][i] * K * N * es;
	}
	if (p->n_outer == 0 && sa == 1 && sb == 0) {
		/* A batch of A against one B: a single GEMM of inner * M rows. */
		M *= inner;
		inner = 1;
	}
	p->group_bytes = inner * M * N * es;
	cublaslt_gemm_desc_init(&d);
	d.dtype = o->dtype;
	d.tf32 = matmul_tf32(c);
	d.m = N;
	d.n = M;
	d.k = K;
	d.lda = N;
	d.ldb = K;
	d.ldd = N;
	d.batch = inner;
	if (inner > 1) {
		d.stride_a = sb * K * N;
		d.stride_b = sa * M * K;
		d.stride_d = M * N;
	}
	for (i = 0; i < p->n_outer; i++)
		v[i] = p->step_b[i];
	v[i] = d.stride_a * es;
	d.align_a = matmul_align(v, p->n_outer + 1);
	for (i = 0; i < p->n_outer; i++)
		v[i] = p->step_a[i];
	v[i] = d.stride_b * es;
	d.align_b = matmul_align(v, p->n_outer + 1);
	v[0] = d.stride_d * es;
	v[1] = p->n_outer > 0 ? p->group_bytes : 0;
	d.align_d = matmul_align(v, 2);
	ret = cublaslt_gemm_get(p->lt, &d, MATMUL_WORKSPACE_MAX, &p->g);
	if (ret < 0)
		return matmul_blame(c, ret);
	*workspace = cublaslt_gemm_workspace(p->g);
	return 0;
}

static int matmul_run(struct op_call *c)
{
	const struct matmul_params *p = (const struct matmul_params *)c->params;
	const char *a = c->in[0].data, *b = c->in[1].data;
	char *o = c->out[0].data;
	CUstream s = cuda_stream_handle(c->stream);
	int64_t idx[MATMUL_OUTER] = { 0 }, groups = 1, off_a = 0, off_b = 0, g;
	int i, ret;

	if (p->numel == 0)
		return 0;
	if (p->g == NULL)
		return matmul_fill(c, p->fill, o, NULL, 1, p->numel, 0, 0, 0.0f);
	for (i = 0; i < p->n_outer; i++)
		groups *= p->outer[i];
	for (g = 0; g < groups; g++) {
		ret = cublaslt_gemm_run(p->lt, p->g, s, b + off_b, a + off_a, NULL,
					o + g * p->group_bytes, NULL, c->workspace);
		if (ret < 0)
			return matmul_blame(c, ret);
		/* The next group: an odometer over the outer dims. */
		for (i = p->n_outer - 1; i >= 0; i--) {
			off_a += p->step_a[i];
			off_b += p->step_b[i];
			if (++idx[i] < p->outer[i])
				break;
			off_a -= p->step_a[i] * p->outer[i];
			off_b -= p->step_b[i] * p->outer[i];
			idx[i] = 0;
		}
	}
	return 0;
}

/* -------------------------------------------------------------------- Gemm */

/* How Gemm's C reaches the output. */
enum gemm_c {
	GEMM_C_NONE,     /* no C (or beta 0 without NaN to keep: see prepare) */
	GEMM_C_BIAS,     /* a float32 row vector, beta 1: the bias epilogue */
	GEMM_C_DIRECT,   /* M x N: cuBLASLt's own C */
	GEMM_C_FILL,     /* broadcast into the output first, then added to */
};

struct gemm_params {
	struct cublaslt *lt;             /* the backend's */
	const struct cublaslt_gemm *g;   /* NULL when K is 0 */
	CUfunction fill;                 /* gemm_fill of the type */
	int32_t mode;                    /* enum gemm_c */
	float scale;                     /* of C as the fill writes it */
	int64_t m, n;                    /* of the output */
	int64_t c_rs, c_cs;              /* element strides of C over (m, n);
	                                  * 0: broadcast */
};
CUDA_PARAMS_FIT(struct gemm_params);

/* Whether C is a vector along N alone: [N] or [1, N]. */
static bool gemm_c_is_row(const struct op_tensor *ct, int64_t n)
{
	if (ct->rank == 1)
		return ct->dims[0] == n;
	return ct->rank == 2 && ct->dims[0] == 1 && ct->dims[1] == n;
}

static int gemm_prepare(struct op_call *c, size_t *workspace)
{
	struct gemm_params *p = (struct gemm_params *)c->params;
	const struct op_tensor *a = &c->in[0], *b = &c->in[1];
	const struct op_tensor *ct = c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
	bool ta = op_attr_int(c->node, "transA", 0) != 0;
	bool tb = op_attr_int(c->node, "transB", 0) != 0;
	float alpha = op_attr_float(c->node, "alpha", 1.0f);
	float beta = op_attr_float(c->node, "beta", 1.0f);
	struct cublaslt_gemm_desc d;
	int64_t K = a->dims[ta ? 0 : 1];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	ret = matmul_setup(c, &p->lt, &p->fill);
	if (ret < 0)
		return ret;
	p->m = c->out[0].dims[0];
	p->n = c->out[0].dims[1];
	if (ct != NULL) {
		if (ct->rank >= 1 && ct->dims[ct->rank - 1] != 1)
			p->c_cs = 1;
		if (ct->rank == 2 && ct->dims[0] != 1)
			p->c_rs = ct->dims[1];
	}
	cublaslt_gemm_desc_init(&d);
	d.alpha = alpha;
	d.beta = beta;
	if (ct == NULL) {
		p->mode = GEMM_C_NONE;
		d.beta = 0.0f;
	} else if (beta == 0.0f) {
		/* BLAS reads no C when beta is 0, but the host computes 0 * C,
		 * which is NaN where C is NaN or infinite: the fill keeps that. */
		p->mode = GEMM_C_FILL;
		p->scale = 0.0f;
		d.beta = 1.0f;
	} else if (beta == 1.0f && gemm_c_is_row(ct, p->n) &&
		   c->out[0].dtype == CEP_DTYPE_FLOAT32) {
		/* Only for float32: on the H200 the epilogue of a bfloat16 GEMM
		 * (255 x 129 x 63) rounded the product before adding the bias,
		 * 8 units of the last place off the host's one rounding; the
		 * fill path has cuBLASLt add C as its beta term, in float32
		 * before the one rounding, as the host does. */
		p->mode = GEMM_C_BIAS;
		d.bias = 1;
		d.beta = 0.0f;
	} else if (ct->rank == 2 && ct->dims[0] == p->m && ct->dims[1] == p->n) {
		p->mode = GEMM_C_DIRECT;
	} else {
		p->mode = GEMM_C_FILL;
		p->scale = 1.0f;
	}
	if (p->m == 0 || p->n == 0)
		return 0;
	if (K == 0) {
		/* No product: Y is beta * C (or zeros), written by the fill. */
		p->scale = beta;
		return 0;
	}
	/* Operand order swapped (Y^T = op(B)^T op(A)^T); each stored matrix's
	 * row length is its leading dimension whether transposed or not. */
	d.dtype = c->out[0].dtype;
	d.tf32 = matmul_tf32(c);
	d.trans_a = tb;
	d.trans_b = ta;
	d.m = p->n;
	d.n = p->m;
	d.k = K;
	d.lda = b->dims[1];
	d.ldb = a->dims[1];
	d.ldd = p->n;
	ret = cublaslt_gemm_get(p->lt, &d, MATMUL_WORKSPACE_MAX, &p->g);
	if (ret < 0)
		return matmul_blame(c, ret);
	*workspace = cublaslt_gemm_workspace(p->g);
	return 0;
}

static int gemm_run(struct op_call *c)
{
	const struct gemm_params *p = (const struct gemm_params *)c->params;
	const void *cp = c->n_in > 2 && op_tensor_present(&c->in[2]) ? c->in[2].data : NULL;
	void *o = c->out[0].data;
	int ret;

	if (p->m == 0 || p->n == 0)
		return 0;
	if (p->g == NULL || p->mode == GEMM_C_FILL) {
		ret = matmul_fill(c, p->fill, o, cp, p->m, p->n, p->c_rs, p->c_cs, p->scale);
		if (ret < 0 || p->g == NULL)
			return ret;
	}
	ret = cublaslt_gemm_run(p->lt, p->g, cuda_stream_handle(c->stream), c->in[1].data,
				c->in[0].data, p->mode == GEMM_C_DIRECT ? cp : NULL, o,
				p->mode == GEMM_C_BIAS ? cp : NULL, c->workspace);
	return ret < 0 ? matmul_blame(c, ret) : 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_kernel kernels[] = {
	{ "", "MatMul", 1, 6, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  matmul_prepare, matmul_run },
	{ "", "MatMul", 7, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, matmul_prepare, matmul_run },
	{ "", "Gemm", 1, 6, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  gemm_prepare, gemm_run },
	{ "", "Gemm", 7, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, gemm_prepare, gemm_run },
};

const struct op_family op_family_cuda_matmul = {
	"cuda_matmul", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
