/*
 * cublaslt.h — cuBLASLt loaded at run time, and the GEMM plans built on it.
 *
 * Like the driver and NVRTC, cuBLASLt is opened with dlopen, so one binary
 * runs where the library is absent: there MatMul and Gemm have no device
 * kernel, and a plan that needs them is refused with this file's message
 * ("no cuBLASLt: ..."), never a crash. Types and constants come from the
 * toolkit's <cublasLt.h>, at build time only.
 *
 * A struct cublaslt is one handle of one CUDA backend (the backend opens
 * it when a plan first needs a GEMM: gpu/cuda/cuda_kernels.h, cuda_blas_get())
 * and a cache of GEMM plans: matmul descriptor, matrix layouts and the
 * heuristic's algorithm, built once per distinct problem at plan time and
 * shared by every plan that multiplies the same shapes. Plans live as long
 * as the handle, which outlives every execution plan of its backend, so a
 * kernel may keep a pointer to one in its call->params: kernels have no
 * hook that runs when their plan is freed, which is why the plans are
 * owned here rather than by each call.
 *
 * Calls go through the table, wrapped in CEP_LT_CHECK():
 *
 *	ret = CEP_LT_CHECK(lib, lib->cublasLtMatmulDescCreate(&d, ...));
 *
 * Threads: the table is read-only once made; the plan cache has its own
 * lock, held only while a plan is looked up or built (never on a run).
 */
#ifndef CEP_GPU_CUBLASLT_H
#define CEP_GPU_CUBLASLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cublasLt.h>

#include "client/cudaep.h"
#include "gpu/cuda/cuda_check.h"

/* --------------------------------------------------------------- the library */

/* The entry points used, resolved with dlsym by these names. */
#define CUBLASLT_FUNCS(X)                       \
	X(cublasLtGetVersion)                   \
	X(cublasLtGetStatusName)                \
	X(cublasLtGetStatusString)              \
	X(cublasLtCreate)                       \
	X(cublasLtDestroy)                      \
	X(cublasLtMatmulDescCreate)             \
	X(cublasLtMatmulDescInit_internal)      \
	X(cublasLtMatmulDescSetAttribute)       \
	X(cublasLtMatmulDescDestroy)            \
	X(cublasLtMatrixLayoutCreate)           \
	X(cublasLtMatrixLayoutSetAttribute)     \
	X(cublasLtMatrixLayoutDestroy)          \
	X(cublasLtMatmulPreferenceCreate)       \
	X(cublasLtMatmulPreferenceSetAttribute) \
	X(cublasLtMatmulPreferenceDestroy)      \
	X(cublasLtMatmulAlgoGetHeuristic)       \
	X(cublasLtMatmul)

/* The loaded library: each member has the type <cublasLt.h> declares for
 * the function of the same name, so `lib->cublasLtMatmul(...)` is checked
 * against the header's prototype. */
struct cublaslt_lib {
	void *handle;            /* of dlopen */
	char path[512];          /* what dlopen was given */
	size_t version;          /* cublasLtGetVersion(): 130000 for 13.0.0 */
#define CUBLASLT__MEMBER(name) __typeof__(name) *name;
	CUBLASLT_FUNCS(CUBLASLT__MEMBER)
#undef CUBLASLT__MEMBER
};

/*
 * Loads cuBLASLt: from path when it is not NULL, else the first of
 * libcublasLt.so.13, libcublasLt.so.12 and libcublasLt.so found in
 * $CUDA_HOME/lib64, /usr/local/cuda/lib64, then the dynamic linker's own
 * search path. On success *out is the caller's, freed with
 * cublaslt_lib_free(). Fails with CEP_ENOTSUP and a message that starts
 * "no cuBLASLt: " and names what was tried and why it failed (or the
 * entry point missing), or CEP_ENOMEM. Needs no GPU.
 */
int cublaslt_lib_open(const char *path, struct cublaslt_lib **out);

/* Frees lib; the library stays loaded for the life of the process (it
 * registers exit handlers, as the driver does). Accepts NULL. */
void cublaslt_lib_free(struct cublaslt_lib *lib);

/*
 * Checks the cublasStatus_t of expr (gpu/cuda/cuda_check.h): evaluates to
 * 0 for CUBLAS_STATUS_SUCCESS; otherwise records the expression, function,
 * file, line and the library's status name and sentence for
 * cep_last_error() (and logs them at debug level), and evaluates to
 * CEP_EDEVMEM for CUBLAS_STATUS_ALLOC_FAILED, CEP_ENOTSUP for
 * CUBLAS_STATUS_NOT_SUPPORTED and CEP_EDEVICE for anything else. lib may
 * be NULL (the status is then named from a built-in list, or by number).
 * Never exits.
 */
#define CEP_LT_CHECK(lib, expr)                                                         \
	CEP_GPU_CHECK_GEN(&cublaslt__errors, cublaslt__table(lib), (expr),              \
			  CUBLAS_STATUS_SUCCESS, #expr)

/* cuBLASLt's error space, for CEP_LT_CHECK(). */
extern const struct cuda_check_lib cublaslt__errors;

/* lib as the check takes it, after the compiler has seen its type. */
static inline const void *cublaslt__table(const struct cublaslt_lib *lib)
{
	return lib;
}

/* ------------------------------------------------------------------ the handle */

struct cublaslt;

/*
 * Opens the library (as cublaslt_lib_open(lib_path)) and creates a handle
 * on the device of the CUDA context current on the calling thread. On
 * success *out is the caller's, freed with cublaslt_free() while that
 * context is current. Fails as cublaslt_lib_open() does, or with the
 * check of cublasLtCreate().
 */
int cublaslt_new(const char *lib_path, struct cublaslt **out);

/* Destroys every cached plan and the handle (the context must be current
 * and no work using them may still be queued). Accepts NULL. */
void cublaslt_free(struct cublaslt *lt);

/* The library under lt. */
const struct cublaslt_lib *cublaslt_lib_of(const struct cublaslt *lt);

/* ------------------------------------------------------------------ GEMM plans */

/* The activation of a GEMM's epilogue, after the bias. */
enum cublaslt_act {
	CUBLASLT_ACT_NONE,
	CUBLASLT_ACT_RELU,       /* max(x, 0); cuBLASLt's gives 0 for NaN */
	CUBLASLT_ACT_GELU_TANH,  /* cuBLASLt's GELU, the tanh approximation
	                          * (PyTorch runs its own tanh GELU where it
	                          * cannot use the epilogue): not for
	                          * Gelu's exact erf form */
};

/*
 * One GEMM in cuBLAS's column-major terms:
 *
 *	D[i] = act(alpha * op(A[i]) * op(B[i]) + beta * C[i] (+ bias))
 *
 * for i < batch, D and C of m x n with leading dimension ldd, op(A) of
 * m x k, op(B) of k x n. Row-major callers swap the operands (row-major
 * X is column-major X^T). C is either absent (beta 0 and no pointer) or
 * laid out like D; it may be D itself. A description is compared byte for
 * byte, so fill it from a zeroed struct (cublaslt_gemm_desc_init()).
 */
struct cublaslt_gemm_desc {
	cep_dtype dtype;             /* of A, B, C, D and bias: float32, float16
	                              * or bfloat16; computed in float32 */
	int32_t trans_a, trans_b;    /* 1: op(X) = X^T */
	int32_t tf32;                /* 1: float32 products on TF32 tensor cores
	                              * (CUBLAS_COMPUTE_32F_FAST_TF32: 10-bit
	                              * mantissas in, float32 sums); float32 only */
	int64_t m, n, k;             /* >= 1 each */
	int64_t lda, ldb, ldd;       /* elements between columns as stored */
	int64_t batch;               /* matrices; 1: a single product */
	int64_t stride_a, stride_b;  /* elements between matrices; 0: one
	                              * matrix reused by every product */
	int64_t stride_d;            /* elements between matrices of D and C */
	float alpha, beta;
	int32_t bias;                /* 1: the bias epilogue adds a vector of m
	                              * elements to every column of D */
	int32_t act;                 /* enum cublaslt_act, applied last */
	uint32_t align_a, align_b;   /* bytes every pointer of A, B (each matrix
	                              * of the batch) is aligned to: a power of
	                              * two, at most 256 */
	uint32_t align_d;            /* the same for C and D */
};

/* Zeroes *d, then sets what almost every GEMM uses: batch 1, alpha 1,
 * alignments 256. */
void cublaslt_gemm_desc_init(struct cublaslt_gemm_desc *d);

/* A cached plan (opaque; immutable once built). */
struct cublaslt_gemm;

/*
 * Stores in *out the plan of d, built on first use: descriptors, layouts
 * and the best algorithm of cuBLASLt's heuristic that needs at most
 * max_workspace bytes of workspace (CUBLAS_COMPUTE_32F: float32 runs with
 * TF32 off, unless d->tf32 asks for CUBLAS_COMPUTE_32F_FAST_TF32). The
 * plan belongs to lt and lives until cublaslt_free(). For prepare()
 * functions: the context must be current. Fails with CEP_EINVAL for a
 * description it cannot take (a type other than the three float types,
 * tf32 with another type than float32, a dimension or leading dimension
 * out of range), CEP_ENOTSUP ("cuBLASLt has no algorithm for ...") when the
 * heuristic finds none, CEP_ENOMEM, or a library error.
 */
int cublaslt_gemm_get(struct cublaslt *lt, const struct cublaslt_gemm_desc *d,
		      size_t max_workspace, const struct cublaslt_gemm **out);

/* The workspace bytes g's algorithm needs (0 for many). */
size_t cublaslt_gemm_workspace(const struct cublaslt_gemm *g);

/* The number of distinct plans lt holds (built, not looked up). */
size_t cublaslt_gemm_count(struct cublaslt *lt);

/*
 * Queues g on stream: a, b, d as in the description; c laid out like D,
 * or NULL for D itself (read only when beta is not 0: BLAS reads no C
 * then); bias (m elements) when the plan has the bias epilogue,
 * else NULL; workspace of at least cublaslt_gemm_workspace(g) bytes,
 * device memory aligned to 256. Allocates nothing and never waits, so it
 * may be recorded into a CUDA graph. Returns 0 or the check of
 * cublasLtMatmul().
 */
int cublaslt_gemm_run(struct cublaslt *lt, const struct cublaslt_gemm *g, CUstream stream,
		      const void *a, const void *b, const void *c, void *d,
		      const void *bias, void *workspace);

#endif
