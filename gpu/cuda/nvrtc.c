/*
 * nvrtc.c — NVRTC through dlopen, and compiling a source with it
 * (gpu/cuda/nvrtc.h); the cache of what it compiles is nvrtc_cache.c.
 */
#include "gpu/cuda/nvrtc.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/cuda/cuda_dl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"

/* ---------------------------------------------------------------- NVRTC */

/* The slice of NVRTC's C API used here, declared by hand: its ABI has been
 * stable since CUDA 7, and it keeps CUDA's <nvrtc.h> out of the build. */
typedef int nvrtc_result;                  /* nvrtcResult; 0 is NVRTC_SUCCESS */
typedef struct nvrtc__program *nvrtc_prog; /* nvrtcProgram */

#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_COMPILATION 6

#define NVRTC_FUNCS(X)                                                        \
	X(nvrtcVersion, nvrtc_result, (int *major, int *minor))               \
	X(nvrtcGetErrorString, const char *, (nvrtc_result r))                \
	X(nvrtcCreateProgram, nvrtc_result,                                   \
	  (nvrtc_prog *prog, const char *src, const char *name, int n_headers,  \
	   const char *const *headers, const char *const *include_names))     \
	X(nvrtcDestroyProgram, nvrtc_result, (nvrtc_prog *prog))              \
	X(nvrtcCompileProgram, nvrtc_result,                                  \
	  (nvrtc_prog prog, int n_options, const char *const *options))       \
	X(nvrtcGetProgramLogSize, nvrtc_result, (nvrtc_prog prog, size_t *size)) \
	X(nvrtcGetProgramLog, nvrtc_result, (nvrtc_prog prog, char *log))     \
	X(nvrtcGetCUBINSize, nvrtc_result, (nvrtc_prog prog, size_t *size))   \
	X(nvrtcGetCUBIN, nvrtc_result, (nvrtc_prog prog, char *cubin))     \
	X(nvrtcGetPTXSize, nvrtc_result, (nvrtc_prog prog, size_t *size))     \
	X(nvrtcGetPTX, nvrtc_result, (nvrtc_prog prog, char *ptx))

/* Entry points of NVRTC 11.2 and later; a library without them still
 * loads and reports no architectures (nvrtc_lib_archs()). */
#define NVRTC_OPT_FUNCS(X)                                                    \
	X(nvrtcGetNumSupportedArchs, nvrtc_result, (int *n))                  \
	X(nvrtcGetSupportedArchs, nvrtc_result, (int *archs))

struct nvrtc_lib {
	void *handle;
	char path[512];   /* what dlopen was given */
	int version;      /* 1000 * major + 10 * minor */
#define NVRTC__MEMBER(name, ret, args) ret (*name) args;
	NVRTC_FUNCS(NVRTC__MEMBER)
	NVRTC_OPT_FUNCS(NVRTC__MEMBER)
#undef NVRTC__MEMBER
};

/* NVRTC's error space: nvrtcGetErrorString() names a status
 * ("NVRTC_ERROR_INVALID_OPTION"); out of memory is host memory. */
#define NVRTC_ERROR_OUT_OF_MEMORY 1

static int nvrtc_code(int status)
{
	return status == NVRTC_ERROR_OUT_OF_MEMORY ? CEP_ENOMEM : CEP_EDEVICE;
}

static void nvrtc_describe(const void *table, int status, char *buf, size_t len)
{
	const struct nvrtc_lib *lib = table;
	const char *name = lib != NULL ? lib->nvrtcGetErrorString(status) : NULL;

	if (name != NULL)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "NVRTC_ERROR_%d", status);
}

static const struct cuda_check_lib nvrtc_errors = {
	.code = nvrtc_code,
	.describe = nvrtc_describe,
};

/* Checks the nvrtc_result of expr as gpu/cuda/cuda_check.h says, with
 * lib's names for the statuses. */
#define CEP_NVRTC_CHECK(lib, expr) \
	CEP_GPU_CHECK_GEN(&nvrtc_errors, nvrtc_table(lib), (expr), NVRTC_SUCCESS, #expr)

static const void *nvrtc_table(const struct nvrtc_lib *lib)
{
	return lib;
}

static const char *const nvrtc_names[] = {
	"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL,
};

static const struct cuda_dl_sym nvrtc_syms[] = {
#define NVRTC__SYM(name, ret, args) { #name, offsetof(struct nvrtc_lib, name), false },
	NVRTC_FUNCS(NVRTC__SYM)
#undef NVRTC__SYM
#define NVRTC__OPT(name, ret, args) { #name, offsetof(struct nvrtc_lib, name), true },
	NVRTC_OPT_FUNCS(NVRTC__OPT)
#undef NVRTC__OPT
};

static const struct cuda_dl_lib nvrtc_dl = {
	.what = "NVRTC",
	.names = nvrtc_names,
	.syms = nvrtc_syms,
	.n_syms = sizeof(nvrtc_syms) / sizeof(nvrtc_syms[0]),
};

/* Asks the loaded library its version. Returns 0, or CEP_ENOTSUP. */
static int nvrtc_version_get(struct nvrtc_lib *lib)
{
	int major = 0, minor = 0;

	if (CEP_NVRTC_CHECK(lib, lib->nvrtcVersion(&major, &minor)) < 0)
		return cep__set_error(CEP_ENOTSUP, "no NVRTC: nvrtcVersion() of %s failed",
				      lib->path);
	lib->version = major * 1000 + minor * 10;
	return 0;
}

int nvrtc_lib_open(const char *path, struct nvrtc_lib **out)
{
	struct nvrtc_lib *lib;
	int ret;

	*out = NULL;
	lib = calloc(1, sizeof(*lib));
	if (lib == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	ret = cuda_dl_load(&nvrtc_dl, path, lib, &lib->handle, lib->path, sizeof(lib->path));
	if (ret == 0)
		ret = nvrtc_version_get(lib);
	if (ret < 0)
		goto out;
	*out = lib;
	lib = NULL;
out:
	if (lib != NULL && lib->handle != NULL)
		dlclose(lib->handle);
	free(lib);
	return ret;
}

void nvrtc_lib_free(struct nvrtc_lib *lib)
{
	free(lib);
}

int nvrtc_lib_version(const struct nvrtc_lib *lib)
{
	return lib->version;
}

const char *nvrtc_lib_path(const struct nvrtc_lib *lib)
{
	return lib->path;
}

/* -------------------------------------------------------------- compiling */

#define NVRTC_FIXED_OPTIONS "-default-device", "--std=c++17"

/* The architecture option of a compile to kind (CUBIN or PTX). */
static void arch_option(int arch, bool ptx, char *buf, size_t len)
{
	snprintf(buf, len, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", arch);
}

static void options_of(int arch, bool ptx, char *buf, size_t len)
{
	static const char *const fixed[] = { NVRTC_FIXED_OPTIONS };
	size_t at, i;

	arch_option(arch, ptx, buf, len);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		at = strlen(buf);
		snprintf(buf + at, len - at, " %s", fixed[i]);
	}
}

void nvrtc_options(int arch, char *buf, size_t len)
{
	options_of(arch, false, buf, len);
}

void nvrtc_options_ptx(int arch, char *buf, size_t len)
{
	options_of(arch, true, buf, len);
}

int nvrtc_lib_archs(struct nvrtc_lib *lib, int *out, int max)
{
	int n = 0, *all;

	if (lib->nvrtcGetNumSupportedArchs == NULL || lib->nvrtcGetSupportedArchs == NULL ||
	    lib->nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
		return 0;
	all = calloc((size_t)n, sizeof(*all));
	if (all == NULL || lib->nvrtcGetSupportedArchs(all) != NVRTC_SUCCESS) {
		free(all);
		return 0;
	}
	memcpy(out, all, (size_t)(n < max ? n : max) * sizeof(*out));
	free(all);
	return n;
}

/* The whole of a program's log into the daemon's log, a log line for each
 * of its lines: a kernel of cudaep that does not compile is a bug an
 * operator must be able to report in full. */
static void nvrtc_log_lines(const struct nvrtc_source *src, int arch, const char *log)
{
	const char *p = log, *nl;
	size_t n;

	log_err("NVRTC could not compile %s for sm_%d:", src->name, arch);
	for (; *p != '\0'; p += n + (nl != NULL)) {
		nl = strchr(p, '\n');
		n = nl != NULL ? (size_t)(nl - p) : strlen(p);
		if (n > 0)
			log_err("  %.*s", (int)n, p);
	}
}

/* Puts the start of the program's log into the error message (and all of
 * it into the log, where an operator can read the whole of it). */
static int nvrtc_log_error(struct nvrtc_lib *lib, nvrtc_prog prog,
			   const struct nvrtc_source *src, int arch)
{
	size_t size = 0;
	char *log = NULL;
	int ret;

	if (CEP_NVRTC_CHECK(lib, lib->nvrtcGetProgramLogSize(prog, &size)) == 0 && size > 0)
		log = malloc(size + 1);
	if (log != NULL && CEP_NVRTC_CHECK(lib, lib->nvrtcGetProgramLog(prog, log)) == 0) {
		log[size] = '\0';
		nvrtc_log_lines(src, arch, log);
	} else if (log != NULL) {
		log[0] = '\0';
	}
	ret = cep__set_error(CEP_EINVAL, "NVRTC could not compile %s for sm_%d: %.300s",
			     src->name, arch, log != NULL ? log : "(no log)");
	free(log);
	return ret;
}

/* Rewrites the last error, a failed NVRTC call's, as "NVRTC, compiling
 * SRC for sm_ARCH: <it>", so that it names the kernel as well as the
 * call. Returns err. */
static int nvrtc_blame(const struct nvrtc_source *src, int arch, int err)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "NVRTC, compiling %s for sm_%d: %s", src->name, arch, why);
}

/* Compiles src for arch into a CUBIN, or into PTX (NUL included). */
static int compile_as(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		      bool ptx, void **image, size_t *size)
{
	char arch_opt[48];
	const char *opts[] = { arch_opt, NVRTC_FIXED_OPTIONS };
	nvrtc_prog prog = NULL;
	nvrtc_result r;
	char *bin = NULL;
	size_t n = 0;
	int ret;

	*image = NULL;
	*size = 0;
	arch_option(arch, ptx, arch_opt, sizeof(arch_opt));
	ret = CEP_NVRTC_CHECK(lib, lib->nvrtcCreateProgram(&prog, src->text, src->name,
							   src->n_headers, src->header_texts,
							   src->header_names));
	if (ret < 0)
		return nvrtc_blame(src, arch, ret);
	r = lib->nvrtcCompileProgram(prog, (int)(sizeof(opts) / sizeof(opts[0])), opts);
	if (r == NVRTC_ERROR_COMPILATION) {
		ret = nvrtc_log_error(lib, prog, src, arch);
		goto out;
	}
	/* Checked after the call, since a source that does not compile is
	 * the log's error (above): the message names the call, not r. */
	ret = CEP_GPU_CHECK_GEN(&nvrtc_errors, lib, r, NVRTC_SUCCESS,
				"lib->nvrtcCompileProgram(prog, ...)");
	if (ret == 0)
		ret = ptx ? CEP_NVRTC_CHECK(lib, lib->nvrtcGetPTXSize(prog, &n))
			  : CEP_NVRTC_CHECK(lib, lib->nvrtcGetCUBINSize(prog, &n));
	if (ret == 0 && n == 0)
		ret = cep__set_error(CEP_EDEVICE, "NVRTC gave an empty image");
	if (ret < 0) {
		ret = nvrtc_blame(src, arch, ret);
		goto out;
	}
	bin = malloc(n);
	if (bin == NULL) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	ret = ptx ? CEP_NVRTC_CHECK(lib, lib->nvrtcGetPTX(prog, bin))
		  : CEP_NVRTC_CHECK(lib, lib->nvrtcGetCUBIN(prog, bin));
	if (ret < 0) {
		ret = nvrtc_blame(src, arch, ret);
		goto out;
	}
	*image = bin;
	*size = n;
	bin = NULL;
out:
	free(bin);
	lib->nvrtcDestroyProgram(&prog);
	return ret;
}

int nvrtc_compile(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		  void **image, size_t *size)
{
	return compile_as(lib, src, arch, false, image, size);
}

int nvrtc_compile_ptx(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		      void **image, size_t *size)
{
	return compile_as(lib, src, arch, true, image, size);
}
