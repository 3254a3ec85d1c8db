/*
 * cuda_dl.c — the one loader of the CUDA libraries (gpu/cuda/cuda_dl.h):
 * the search for a library's file, and the table of its entry points.
 */
#include "gpu/cuda/cuda_dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"

/* Tries one file: 0 when it opened, else -1 with dlerror()'s text in why. */
static int dl_try(const char *file, void **handle, char *why, size_t len)
{
	const char *err;

	*handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (*handle != NULL)
		return 0;
	err = dlerror();
	snprintf(why, len, "%s", err != NULL ? err : file);
	return -1;
}

int cuda_dl_open(const char *path, const char *const *names, const char *what,
		 void **handle, char *opened, size_t len)
{
	const char *home = getenv("CUDA_HOME");
	const char *dirs[2];
	char file[512], why[600] = "", tried[160] = "";
	size_t d, n, n_dirs = 0, at = 0;

	*handle = NULL;
	if (path != NULL) {
		if (dl_try(path, handle, why, sizeof(why)) != 0)
			return cep__set_error(CEP_ENOTSUP, "no %s: %s", what, why);
		snprintf(opened, len, "%s", path);
		return 0;
	}
	if (home != NULL && home[0] != '\0')
		dirs[n_dirs++] = home;
	dirs[n_dirs++] = "/usr/local/cuda";
	/* d == n_dirs: the bare name, for the loader's search. */
	for (d = 0; d <= n_dirs; d++) {
		for (n = 0; names[n] != NULL; n++) {
			if (d < n_dirs)
				snprintf(file, sizeof(file), "%s/lib64/%s", dirs[d], names[n]);
			else
				snprintf(file, sizeof(file), "%s", names[n]);
			if (dl_try(file, handle, why, sizeof(why)) == 0) {
				snprintf(opened, len, "%s", file);
				return 0;
			}
		}
	}
	for (n = 0; names[n] != NULL && at < sizeof(tried); n++)
		at += (size_t)snprintf(tried + at, sizeof(tried) - at, "%s%s",
				       n ? ", " : "", names[n]);
	return cep__set_error(CEP_ENOTSUP, "no %s: tried %s in %s%s/usr/local/cuda/lib64 "
			      "and the loader's path; last: %s", what, tried,
			      n_dirs > 1 ? home : "", n_dirs > 1 ? "/lib64, " : "", why);
}

int cuda_dl_load(const struct cuda_dl_lib *lib, const char *path, void *table,
		 void **handle, char *opened, size_t len)
{
	const struct cuda_dl_sym *s;
	void *fn;
	size_t i;
	int ret;

	ret = cuda_dl_open(path, lib->names, lib->what, handle, opened, len);
	if (ret < 0)
		return ret;
	for (i = 0; i < lib->n_syms; i++) {
		s = &lib->syms[i];
		fn = dlsym(*handle, s->name);
		if (fn == NULL && !s->optional) {
			ret = cep__set_error(CEP_ENOTSUP, "no %s: %s has no %s", lib->what, opened,
					     s->name);
			dlclose(*handle);
			*handle = NULL;
			return ret;
		}
		/* dlsym returns void *; copying it into a function pointer is
		 * what POSIX guarantees to work, and memcpy says so without a
		 * cast. */
		memcpy((char *)table + s->offset, &fn, sizeof(fn));
	}
	return 0;
}
