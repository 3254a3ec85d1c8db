/*
 * cuda_dl.h — finding and opening a CUDA toolkit library at run time
 * (NVRTC, cuBLASLt, ...): the one search rule of gpu/, so that every
 * library is looked for in the same places and a failure says the same
 * things. The driver (libcuda.so.1) is not a toolkit library and is opened
 * by gpu/cuda/cuda_driver.c.
 */
#ifndef CEP_GPU_CUDA_DL_H
#define CEP_GPU_CUDA_DL_H

#include <stddef.h>

/*
 * Opens path with dlopen when path is not NULL; otherwise tries each of
 * the NULL-terminated names in $CUDA_HOME/lib64, then /usr/local/cuda/lib64,
 * then by bare name for the loader's own search. On success stores the
 * handle in *handle (the caller's, for dlclose()), what opened in
 * opened (len bytes) and returns 0. Otherwise returns CEP_ENOTSUP with a
 * message "no WHAT: ..." naming the places tried and dlopen's last error.
 */
int cuda_dl_open(const char *path, const char *const *names, const char *what,
		 void **handle, char *opened, size_t len);

#endif
