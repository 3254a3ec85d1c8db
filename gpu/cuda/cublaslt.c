/*
 * cublaslt.c — cuBLASLt through dlopen, its handle, and the cache of GEMM
 * plans (descriptors, layouts, the heuristic's algorithm) that the MatMul
 * and Gemm kernels of kernels/cuda/matmul.c run (gpu/cuda/cublaslt.h).
 */
#include "gpu/cuda/cublaslt.h"
#include "gpu/cuda/cuda_dl.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/error.h"

/* ---------------------------------------------------------------- library */

static const char *const cublaslt_names[] = {
	"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL,
};

static const struct cuda_dl_sym cublaslt_syms[] = {
#define CUBLASLT__SYM(name) { #name, offsetof(struct cublaslt_lib, name), false },
	CUBLASLT_FUNCS(CUBLASLT__SYM)
#undef CUBLASLT__SYM
};

static const struct cuda_dl_lib cublaslt_dl = {
	.what = "cuBLASLt",
	.names = cublaslt_names,
	.syms = cublaslt_syms,
	.n_syms = sizeof(cublaslt_syms) / sizeof(cublaslt_syms[0]),
};

int cublaslt_lib_open(const char *path, struct cublaslt_lib **out)
{
	struct cublaslt_lib *lib;
	int ret;

	*out = NULL;
	lib = calloc(1, sizeof(*lib));
	if (lib == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	ret = cuda_dl_load(&cublaslt_dl, path, lib, &lib->handle, lib->path, sizeof(lib->path));
	if (ret < 0) {
		free(lib);
		return ret;
	}
	lib->version = lib->cublasLtGetVersion();
	*out = lib;
	return 0;
}

void cublaslt_lib_free(struct cublaslt_lib *lib)
{
	free(lib);
}

/* Names of the statuses, for a check without a library to ask. */
static const struct {
	cublasStatus_t st;
	const char *name;
} cublaslt_known[] = {
	{ CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED" },
	{ CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED" },
	{ CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE" },
	{ CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH" },
	{ CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED" },
	{ CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR" },
	{ CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED" },
};

static int cublaslt_code(int status)
{
	switch ((cublasStatus_t)status) {
	case CUBLAS_STATUS_ALLOC_FAILED:
		return CEP_EDEVMEM;
	case CUBLAS_STATUS_NOT_SUPPORTED:
		return CEP_ENOTSUP;
	default:
		return CEP_EDEVICE;
	}
}

static void cublaslt_describe(const void *table, int status, char *buf, size_t len)
{
	const struct cublaslt_lib *lib = table;
	cublasStatus_t st = (cublasStatus_t)status;
	const char *name = NULL, *text = NULL;
	char num[32];
	size_t i;

	if (lib != NULL) {
		name = lib->cublasLtGetStatusName(st);
		text = lib->cublasLtGetStatusString(st);
	}
	for (i = 0; name == NULL && i < sizeof(cublaslt_known) / sizeof(cublaslt_known[0]); i++) {
		if (cublaslt_known[i].st == st)
			name = cublaslt_known[i].name;
	}
	if (name == NULL) {
		snprintf(num, sizeof(num), "CUBLAS_STATUS_%d", (int)st);
		name = num;
	}
	snprintf(buf, len, "%s (%s)", name, text != NULL ? text : "no description");
}

const struct cuda_check_lib cublaslt__errors = {
	.code = cublaslt_code,
	.describe = cublaslt_describe,
};

/* ----------------------------------------------------------------- handle */

struct cublaslt_gemm {
	struct cublaslt_gemm *next;      /* the cache's list */
	uint64_t hash;                   /* of d */
	struct cublaslt_gemm_desc d;     /* what it computes; alpha and beta are
	                                  * read from here on every run */
	cublasLtMatmulDesc_t op;         /* owned */
	cublasLtMatrixLayout_t la, lb;   /* owned */
	cublasLtMatrixLayout_t ld;       /* owned; C's layout too */
	cublasLtMatmulAlgo_t algo;       /* the heuristic's first choice */
	size_t workspace;                /* bytes algo needs */
};

struct cublaslt {
	struct cublaslt_lib *lib;        /* owned */
	cublasLtHandle_t handle;
	pthread_mutex_t lock;            /* guards the list */
	struct cublaslt_gemm *plans;     /* owned, newest first */
	size_t n_plans;
};

static const char *cublaslt_version_text(const struct cublaslt_lib *lib, char *buf, size_t len)
{
	snprintf(buf, len, "%zu.%zu.%zu", lib->version / 10000, lib->version / 100 % 100,
		 lib->version % 100);
	return buf;
}

int cublaslt_new(const char *lib_path, struct cublaslt **out)
{
	struct cublaslt *lt;
	int ret;

	*out = NULL;
	lt = calloc(1, sizeof(*lt));
	if (lt == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	pthread_mutex_init(&lt->lock, NULL);
	ret = cublaslt_lib_open(lib_path, &lt->lib);
	if (ret < 0)
		goto out;
	ret = CEP_LT_CHECK(lt->lib, lt->lib->cublasLtCreate(&lt->handle));
	if (ret < 0)
		goto out;
	*out = lt;
	lt = NULL;
out:
	cublaslt_free(lt);
	return ret;
}

static void gemm_free(const struct cublaslt_lib *lib, struct cublaslt_gemm *g)
{
	if (g->op != NULL)
		(void)CEP_LT_CHECK(lib, lib->cublasLtMatmulDescDestroy(g->op));
	if (g->la != NULL)
		(void)CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutDestroy(g->la));
	if (g->lb != NULL)
		(void)CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutDestroy(g->lb));
	if (g->ld != NULL)
		(void)CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutDestroy(g->ld));
	free(g);
}

void cublaslt_free(struct cublaslt *lt)
{
	struct cublaslt_gemm *g, *next;

	if (lt == NULL)
		return;
	for (g = lt->plans; g != NULL; g = next) {
		next = g->next;
		gemm_free(lt->lib, g);
	}
	if (lt->handle != NULL)
		(void)CEP_LT_CHECK(lt->lib, lt->lib->cublasLtDestroy(lt->handle));
	cublaslt_lib_free(lt->lib);
	pthread_mutex_destroy(&lt->lock);
	free(lt);
}

const struct cublaslt_lib *cublaslt_lib_of(const struct cublaslt *lt)
{
	return lt->lib;
}

/* ------------------------------------------------------------------- plans */

void cublaslt_gemm_desc_init(struct cublaslt_gemm_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->batch = 1;
	d->alpha = 1.0f;
	d->align_a = d->align_b = d->align_d = 256;
}

static bool gemm_type(cep_dtype t, cudaDataType_t *out)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: *out = CUDA_R_32F; return true;
	case CEP_DTYPE_FLOAT16: *out = CUDA_R_16F; return true;
	case CEP_DTYPE_BFLOAT16: *out = CUDA_R_16BF; return true;
	default: return false;
	}
}

/* The compute type of d: float32 sums always; TF32 products when asked. */
static cublasComputeType_t gemm_compute(const struct cublaslt_gemm_desc *d)
{
	return d->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static bool align_ok(uint32_t a)
{
	return a >= 1 && a <= 256 && (a & (a - 1)) == 0;
}

/* Refuses what cuBLASLt would refuse less clearly. */
static int gemm_check(const struct cublaslt_gemm_desc *d)
{
	cudaDataType_t t;

	if (!gemm_type(d->dtype, &t))
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: no %s GEMM (float32, float16 "
				      "and bfloat16 only)", cep_dtype_name(d->dtype));
	if (d->tf32 && d->dtype != CEP_DTYPE_FLOAT32)
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: TF32 is for float32 GEMMs, "
				      "not %s", cep_dtype_name(d->dtype));
	if (d->m < 1 || d->n < 1 || d->k < 1 || d->batch < 1 || d->batch > INT32_MAX)
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: bad sizes m %lld n %lld k %lld "
				      "batch %lld", (long long)d->m, (long long)d->n,
				      (long long)d->k, (long long)d->batch);
	if (d->lda < (d->trans_a ? d->k : d->m) || d->ldb < (d->trans_b ? d->n : d->k) ||
	    d->ldd < d->m)
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: a leading dimension is below "
				      "its rows (lda %lld ldb %lld ldd %lld)", (long long)d->lda,
				      (long long)d->ldb, (long long)d->ldd);
	if (d->act < CUBLASLT_ACT_NONE || d->act > CUBLASLT_ACT_GELU_TANH)
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: no activation %d", (int)d->act);
	if (!align_ok(d->align_a) || !align_ok(d->align_b) || !align_ok(d->align_d))
		return cep__set_error(CEP_EINVAL, "cuBLASLt GEMM: alignments must be powers of "
				      "two up to 256");
	return 0;
}

/* The epilogue of d: its bias, then its activation. */
static cublasLtEpilogue_t gemm_epilogue(const struct cublaslt_gemm_desc *d)
{
	switch (d->act) {
	case CUBLASLT_ACT_RELU:
		return d->bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
	case CUBLASLT_ACT_GELU_TANH:
		return d->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
	default:
		return d->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
	}
}

/* The attributes of a matmul descriptor that a description decides;
 * shared by the cached descriptor and the one a bias run builds. */
static int gemm_op_set(const struct cublaslt_lib *lib, cublasLtMatmulDesc_t op,
		       const struct cublaslt_gemm_desc *d)
{
	cublasOperation_t ta = d->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t tb = d->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtEpilogue_t epi = gemm_epilogue(d);
	int ret;

	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
								     &ta, sizeof(ta)));
	if (ret == 0)
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescSetAttribute(
			op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
	if (ret == 0)
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescSetAttribute(
			op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
	return ret;
}

/* A layout of rows x cols (column-major, leading dimension ld) repeated
 * batch times every stride elements. */
static int gemm_layout(const struct cublaslt_lib *lib, cudaDataType_t t, int64_t rows,
		       int64_t cols, int64_t ld, int64_t batch, int64_t stride,
		       cublasLtMatrixLayout_t *out)
{
	int32_t count = (int32_t)batch;
	int ret;

	ret = CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutCreate(out, t, (uint64_t)rows,
								 (uint64_t)cols, ld));
	if (ret < 0 || batch == 1)
		return ret;
	ret = CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutSetAttribute(
		*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
	if (ret == 0)
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatrixLayoutSetAttribute(
			*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
	return ret;
}

/* The heuristic's best algorithm for g within max_workspace bytes. */
static int gemm_algo(struct cublaslt *lt, struct cublaslt_gemm *g, size_t max_workspace)
{
	const struct cublaslt_lib *lib = lt->lib;
	const struct cublaslt_gemm_desc *d = &g->d;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res[4];
	uint64_t ws = max_workspace;
	/* Split-K partial sums kept in float32 only: the in-place and
	 * output-type schemes round them to a 16-bit output type, which
	 * loses the float32 accumulation the host has (seen on the H200:
	 * bfloat16 sums over K = 700 off by many units of their last place). */
	uint32_t reduction = d->dtype == CEP_DTYPE_FLOAT32 ? CUBLASLT_REDUCTION_SCHEME_MASK :
			     CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
	uint32_t al[4] = { d->align_a, d->align_b, d->align_d, d->align_d };
	static const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
	};
	int i, found = 0, ret;

	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulPreferenceCreate(&pref));
	if (ret < 0)
		return ret;
	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulPreferenceSetAttribute(
		pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
	if (ret == 0)
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
			sizeof(reduction)));
	/* Tensors start BACKEND_ALIGN-aligned, but a batch's later matrices
	 * and the groups of a broadcast batch may not: the heuristic must
	 * pick an algorithm that does not assume more than holds. */
	for (i = 0; i < 4 && ret == 0; i++)
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulPreferenceSetAttribute(
			pref, al_attr[i], &al[i], sizeof(al[i])));
	if (ret < 0)
		goto out;
	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulAlgoGetHeuristic(lt->handle, g->op, g->la, g->lb,
								     g->ld, g->ld, pref, 4, res,
								     &found));
	if (ret == CEP_ENOTSUP) {
		found = 0;
		ret = 0;
	}
	if (ret < 0)
		goto out;
	for (i = 0; i < found; i++) {
		if (res[i].state == CUBLAS_STATUS_SUCCESS)
			break;
	}
	if (i >= found) {
		ret = cep__set_error(CEP_ENOTSUP, "cuBLASLt has no algorithm for a %s GEMM of "
				     "m %lld n %lld k %lld batch %lld%s%s (workspace up to %zu "
				     "bytes, alignment %u/%u/%u)", cep_dtype_name(d->dtype),
				     (long long)d->m, (long long)d->n, (long long)d->k,
				     (long long)d->batch, d->bias ? " with bias" : "",
				     d->act == CUBLASLT_ACT_RELU ? " and relu" :
				     d->act == CUBLASLT_ACT_GELU_TANH ? " and gelu" : "",
				     max_workspace, d->align_a, d->align_b, d->align_d);
		goto out;
	}
	g->algo = res[i].algo;
	g->workspace = res[i].workspaceSize;
out:
	(void)CEP_LT_CHECK(lib, lib->cublasLtMatmulPreferenceDestroy(pref));
	return ret;
}

/* Builds the plan of d (not yet in the cache). */
static int gemm_build(struct cublaslt *lt, const struct cublaslt_gemm_desc *d,
		      size_t max_workspace, struct cublaslt_gemm **out)
{
	const struct cublaslt_lib *lib = lt->lib;
	struct cublaslt_gemm *g;
	cudaDataType_t t = CUDA_R_32F;
	int ret;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	g->d = *d;
	gemm_type(d->dtype, &t);
	/* CUBLAS_COMPUTE_32F unless the session is tf32: float32 products
	 * keep their 24-bit mantissas, as the host reference does. */
	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescCreate(&g->op, gemm_compute(d),
							       CUDA_R_32F));
	if (ret == 0)
		ret = gemm_op_set(lib, g->op, d);
	if (ret == 0)
		ret = gemm_layout(lib, t, d->trans_a ? d->k : d->m, d->trans_a ? d->m : d->k,
				  d->lda, d->batch, d->stride_a, &g->la);
	if (ret == 0)
		ret = gemm_layout(lib, t, d->trans_b ? d->n : d->k, d->trans_b ? d->k : d->n,
				  d->ldb, d->batch, d->stride_b, &g->lb);
	if (ret == 0)
		ret = gemm_layout(lib, t, d->m, d->n, d->ldd, d->batch, d->stride_d, &g->ld);
	if (ret == 0)
		ret = gemm_algo(lt, g, max_workspace);
	if (ret < 0) {
		gemm_free(lib, g);
		return ret;
	}
	*out = g;
	return 0;
}

int cublaslt_gemm_get(struct cublaslt *lt, const struct cublaslt_gemm_desc *d,
		      size_t max_workspace, const struct cublaslt_gemm **out)
{
	uint64_t h = XXH3_64bits(d, sizeof(*d)) ^ max_workspace;
	struct cublaslt_gemm *g;
	int ret;

	*out = NULL;
	ret = gemm_check(d);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&lt->lock);
	for (g = lt->plans; g != NULL; g = g->next) {
		if (g->hash == h && memcmp(&g->d, d, sizeof(*d)) == 0)
			break;
	}
	if (g == NULL) {
		ret = gemm_build(lt, d, max_workspace, &g);
		if (ret == 0) {
			g->hash = h;
			g->next = lt->plans;
			lt->plans = g;
			lt->n_plans++;
		}
	}
	pthread_mutex_unlock(&lt->lock);
	*out = g;
	return ret;
}

size_t cublaslt_gemm_workspace(const struct cublaslt_gemm *g)
{
	return g->workspace;
}

size_t cublaslt_gemm_count(struct cublaslt *lt)
{
	size_t n;

	pthread_mutex_lock(&lt->lock);
	n = lt->n_plans;
	pthread_mutex_unlock(&lt->lock);
	return n;
}

int cublaslt_gemm_run(struct cublaslt *lt, const struct cublaslt_gemm *g, CUstream stream,
		      const void *a, const void *b, const void *c, void *d,
		      const void *bias, void *workspace)
{
	const struct cublaslt_lib *lib = lt->lib;
	cublasLtMatmulDescOpaque_t storage;
	cublasLtMatmulDesc_t op = g->op;
	int ret;

	if (g->d.bias) {
		/* The bias pointer is an attribute of the descriptor, which the
		 * cache shares between plans: each run of a bias GEMM sets up a
		 * descriptor of its own in stack memory (no allocation). */
		op = &storage;
		ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescInit_internal(op, sizeof(storage),
									      gemm_compute(&g->d),
									      CUDA_R_32F));
		if (ret == 0)
			ret = gemm_op_set(lib, op, &g->d);
		if (ret == 0)
			ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescSetAttribute(
				op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
		if (ret < 0)
			return ret;
	}
	return CEP_LT_CHECK(lib, lib->cublasLtMatmul(lt->handle, op, &g->d.alpha, a, g->la, b, g->lb,
						      &g->d.beta, c != NULL ? c : d, g->ld, d, g->ld,
						      &g->algo, workspace, g->workspace,
						      (cudaStream_t)stream));
}
