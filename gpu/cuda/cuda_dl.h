/*
 * cuda_dl.h — finding, opening and resolving a CUDA library at run time:
 * the one loader of gpu/, so that every library is looked for in the same
 * places, resolved from a table, and a failure says the same things.
 *
 * A library is described once (struct cuda_dl_lib): what it is called in
 * messages, the file names to try, and its entry points as a table of
 * {symbol, offset of the function pointer in the caller's struct}.
 * cuda_dl_load() opens it and fills that struct. NVRTC, cuBLASLt and cuDNN
 * load through it; the driver (libcuda.so.1) is opened with cuda_dl_open()
 * but resolves its entry points itself, through cuGetProcAddress at the
 * ABI version of each (gpu/cuda/cuda_driver.c).
 *
 * Libraries are never unloaded once in use: they start threads and
 * register exit handlers that must not outlive their code.
 */
#ifndef CEP_GPU_CUDA_DL_H
#define CEP_GPU_CUDA_DL_H

#include <stdbool.h>
#include <stddef.h>

/* One entry point: found with dlsym by name, stored at offset. */
struct cuda_dl_sym {
	const char *name;    /* the exported symbol */
	size_t offset;       /* of its function pointer in the caller's struct */
	bool optional;       /* a library without it still loads (the pointer
	                      * stays NULL); else its absence refuses the library */
};

/* A library to load. */
struct cuda_dl_lib {
	const char *what;                 /* for messages: "no WHAT: ..." ("NVRTC") */
	const char *const *names;         /* the files to look for, NULL-terminated */
	const struct cuda_dl_sym *syms;   /* (n_syms) */
	size_t n_syms;
};

/*
 * Opens path with dlopen when path is not NULL (names may then be NULL);
 * otherwise tries each of the NULL-terminated names in $CUDA_HOME/lib64,
 * then /usr/local/cuda/lib64, then by bare name for the loader's own
 * search. On success stores the handle in *handle (the caller's, for
 * dlclose()), what opened in opened (len bytes; NULL and 0 when not
 * wanted) and returns 0. Otherwise returns CEP_ENOTSUP with a message
 * "no WHAT: ..." naming the places tried and dlopen's last error.
 */
int cuda_dl_open(const char *path, const char *const *names, const char *what,
		 void **handle, char *opened, size_t len);

/*
 * Opens lib as cuda_dl_open(path, lib->names, lib->what, ...) does, then
 * resolves every entry point of lib->syms into table (the caller's struct
 * the offsets point into; a missing optional one is set to NULL). On
 * success *handle is the caller's (for dlclose()), opened (len bytes) says
 * what was opened, and 0 is returned. Fails as cuda_dl_open() does, or
 * with CEP_ENOTSUP and "no WHAT: FILE has no SYMBOL" for the first
 * required entry point missing; the library is closed again then and
 * *handle is NULL.
 */
int cuda_dl_load(const struct cuda_dl_lib *lib, const char *path, void *table,
		 void **handle, char *opened, size_t len);

#endif
