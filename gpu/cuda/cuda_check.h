/*
 * cuda_check.h — the one check of a CUDA library call's status, which the
 * driver's, NVRTC's, cuBLASLt's and cuDNN's check macros wrap.
 *
 * Each library describes its error space once (struct cuda_check_lib): how
 * a failed status maps into cudaep's one error space, and how the library
 * names it. CEP_GPU_CHECK_GEN() evaluates a status and, on failure, records
 * for cep_last_error() the expression as written, the function, file and
 * line, and the library's name for the status:
 *
 *	lt->lib->cublasLtCreate(&lt->handle) failed in cublaslt_new() at
 *	gpu/cuda/cublaslt.c:LINE: CUBLAS_STATUS_NOT_INITIALIZED (the library
 *	was not initialized)
 *
 * logs the same at debug level (the error goes back to the request that
 * made the call; the daemon logs what the request did), and yields the
 * CEP_E* code. It never exits. The per-library macros are
 * CEP_CU_CHECK (gpu/cuda/cuda_driver.h), CEP_LT_CHECK (gpu/cuda/cublaslt.h),
 * CEP_DNN_CHECK (gpu/cuda/cudnn.h) and NVRTC's, private to gpu/cuda/nvrtc.c.
 */
#ifndef CEP_GPU_CUDA_CHECK_H
#define CEP_GPU_CUDA_CHECK_H

#include <stddef.h>

/* One library's error space. Statuses are carried as int: every library
 * here has an int-sized enum of them. */
struct cuda_check_lib {
	/* The CEP_E* code of a failed status (never 0). */
	int (*code)(int status);
	/* Writes the library's name of status, with its description where
	 * it has one, into buf (len bytes): "CUDA_ERROR_OUT_OF_MEMORY (out
	 * of memory)". lib is the library's loaded table, or NULL when
	 * there is none to ask (a built-in name or the number then). */
	void (*describe)(const void *lib, int status, char *buf, size_t len);
};

/*
 * Evaluates to 0 when status equals success, else to the CEP_E* code
 * check->code() gives it, with the error recorded and logged as above.
 * text is the expression as written (the wrappers pass #expr, so that
 * macros inside it, such as cuda.h's versioned names, read as written).
 * Arguments are evaluated once.
 */
#define CEP_GPU_CHECK_GEN(check, lib, status, success, text)                         \
	cuda_check__status((check), (lib), (int)(status), (int)(success), (text), __func__, \
			   __FILE__, __LINE__)

/* The failure of CEP_GPU_CHECK_GEN(): records, logs, returns the code. */
int cuda_check__fail(const struct cuda_check_lib *check, const void *lib, int status,
		     const char *expr, const char *func, const char *file, int line);

static inline int cuda_check__status(const struct cuda_check_lib *check, const void *lib,
				     int status, int success, const char *expr,
				     const char *func, const char *file, int line)
{
	if (status == success)
		return 0;
	return cuda_check__fail(check, lib, status, expr, func, file, line);
}

#endif
