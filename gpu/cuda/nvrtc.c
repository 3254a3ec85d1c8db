/*
 * nvrtc.c — NVRTC through dlopen, and the three-tier cache of compiled
 * kernels: loaded modules, CUBIN files on disk, compiles (gpu/cuda/nvrtc.h).
 */
#include "gpu/cuda/nvrtc.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/cuda/cuda_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "gpu/cuda/cuda_driver.h"
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
	X(nvrtcGetCUBIN, nvrtc_result, (nvrtc_prog prog, char *cubin))

struct nvrtc_lib {
	void *handle;
	char path[512];   /* what dlopen was given */
	int version;      /* 1000 * major + 10 * minor */
#define NVRTC__MEMBER(name, ret, args) ret (*name) args;
	NVRTC_FUNCS(NVRTC__MEMBER)
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

void nvrtc_options(int arch, char *buf, size_t len)
{
	static const char *const fixed[] = { NVRTC_FIXED_OPTIONS };
	size_t at, i;

	snprintf(buf, len, "--gpu-architecture=sm_%d", arch);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		at = strlen(buf);
		snprintf(buf + at, len - at, " %s", fixed[i]);
	}
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

int nvrtc_compile(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		  void **image, size_t *size)
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
	snprintf(arch_opt, sizeof(arch_opt), "--gpu-architecture=sm_%d", arch);
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
		ret = CEP_NVRTC_CHECK(lib, lib->nvrtcGetCUBINSize(prog, &n));
	if (ret == 0 && n == 0)
		ret = cep__set_error(CEP_EDEVICE, "nvrtcGetCUBINSize() gave an empty image");
	if (ret < 0) {
		ret = nvrtc_blame(src, arch, ret);
		goto out;
	}
	bin = malloc(n);
	if (bin == NULL) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	ret = CEP_NVRTC_CHECK(lib, lib->nvrtcGetCUBIN(prog, bin));
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

/* ---------------------------------------------------------------- the cache */

#define DISK_MAGIC "CEPCUBN1"
#define DISK_IMAGE_MAX ((size_t)256 << 20) /* bytes; a larger file is foreign */

/* What a cache file starts with; the image follows. */
struct disk_header {
	char magic[8];
	uint64_t src_hash;       /* of the source and its headers */
	uint64_t opt_hash;       /* of the options */
	uint32_t arch;           /* sm_<arch> */
	uint32_t nvrtc_version;  /* 1000 * major + 10 * minor */
	uint64_t image_bytes;
	uint64_t image_hash;     /* of the image */
};

/* A module loaded from one source. */
struct mod_entry {
	uint64_t key;            /* the source hash */
	size_t text_len;         /* a second check against hash collisions */
	CUmodule mod;
	struct nvrtc_module_info info; /* what nvrtc_cache_modules() reports */
};

struct nvrtc_cache {
	struct nvrtc_lib *lib;           /* the caller's */
	const struct cuda_driver *drv;   /* the caller's; NULL: images only */
	int arch;
	uint64_t opt_hash;
	char dir[1024];                  /* "" when none */
	int disk_state;                  /* 0 unchecked, 1 usable, -1 not used */
	char disk_note[1200];            /* why not */
	pthread_mutex_t lock;
	struct mod_entry *mods;          /* (n_mods), cap_mods allocated */
	size_t n_mods, cap_mods;
	struct nvrtc_stats stats;
	/* What nvrtc_cache_modules() reads, so that a reader never waits
	 * for a compile under lock: mods and n_mods change with both locks
	 * held, and shown is stats as of the end of the last operation. */
	pthread_mutex_t report_lock;
	struct nvrtc_stats shown;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t source_hash(const struct nvrtc_source *src)
{
	uint64_t h = XXH3_64bits(src->text, strlen(src->text));
	int i;

	for (i = 0; i < src->n_headers; i++) {
		h = XXH3_64bits_withSeed(src->header_names[i], strlen(src->header_names[i]), h);
		h = XXH3_64bits_withSeed(src->header_texts[i], strlen(src->header_texts[i]), h);
	}
	return h;
}

int nvrtc_cache_new(struct nvrtc_lib *lib, const struct cuda_driver *drv, int arch,
		    const char *dir, struct nvrtc_cache **out)
{
	struct nvrtc_cache *c;
	char opts[256];

	*out = NULL;
	if (dir != NULL && dir[0] != '\0' && dir[0] != '/')
		return cep__set_error(CEP_EINVAL, "the kernel cache directory '%s' is not an "
				      "absolute path", dir);
	if (dir != NULL && strlen(dir) >= sizeof(c->dir) - 128)
		return cep__set_error(CEP_EINVAL, "the kernel cache directory '%.60s...' is "
				      "too long", dir);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	c->lib = lib;
	c->drv = drv;
	c->arch = arch;
	nvrtc_options(arch, opts, sizeof(opts));
	c->opt_hash = XXH3_64bits(opts, strlen(opts));
	if (dir != NULL)
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
	/* Trailing slashes would only make file names uglier. */
	while (strlen(c->dir) > 1 && c->dir[strlen(c->dir) - 1] == '/')
		c->dir[strlen(c->dir) - 1] = '\0';
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->report_lock, NULL);
	*out = c;
	return 0;
}

void nvrtc_cache_free(struct nvrtc_cache *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n_mods; i++)
		(void)CEP_CU_CHECK(c->drv->cuModuleUnload(c->mods[i].mod));
	free(c->mods);
	pthread_mutex_destroy(&c->report_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void nvrtc_cache_stats(struct nvrtc_cache *c, struct nvrtc_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	out->modules = c->n_mods;
	pthread_mutex_unlock(&c->lock);
}

size_t nvrtc_cache_modules(struct nvrtc_cache *c, struct nvrtc_module_info *out, size_t max,
			   struct nvrtc_stats *stats)
{
	size_t n, i;

	pthread_mutex_lock(&c->report_lock);
	n = c->n_mods;
	for (i = 0; i < n && i < max; i++)
		out[i] = c->mods[i].info;
	if (stats != NULL)
		*stats = c->shown;
	pthread_mutex_unlock(&c->report_lock);
	return n;
}

/* Makes what nvrtc_cache_modules() reports of the counters current.
 * Called with the lock, at the end of each operation. */
static void report_publish(struct nvrtc_cache *c)
{
	pthread_mutex_lock(&c->report_lock);
	c->shown = c->stats;
	c->shown.modules = c->n_mods;
	pthread_mutex_unlock(&c->report_lock);
}

const char *nvrtc_cache_dir(const struct nvrtc_cache *c)
{
	return c->dir;
}

const char *nvrtc_cache_disk_note(struct nvrtc_cache *c)
{
	return c->disk_note;
}

int nvrtc_cache_dir_default(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/cudaep");
	else if (xdg != NULL && xdg[0] == '/')
		n = snprintf(buf, len, "%s/cudaep", xdg);
	else if (home != NULL && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/cudaep", home);
	else
		return cep__set_error(CEP_ENOENT, "no kernel cache directory: neither "
				      "XDG_CACHE_HOME nor HOME is set");
	if (n < 0 || (size_t)n >= len)
		return cep__set_error(CEP_ENAMETOOLONG, "the kernel cache directory is too long");
	return 0;
}

int nvrtc_cache_path(struct nvrtc_cache *c, const struct nvrtc_source *src, char *buf,
		     size_t len)
{
	char name[64];
	size_t i;
	int n;

	if (c->dir[0] == '\0')
		return CEP_ENOENT;
	/* Only harmless characters of the name reach the file system. */
	for (i = 0; src->name[i] != '\0' && i + 1 < sizeof(name); i++) {
		char ch = src->name[i];

		name[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'
			  ? ch : '_';
	}
	name[i] = '\0';
	n = snprintf(buf, len, "%s/%s-%016llx-sm_%d-%08x-nvrtc%d.%d.cubin", c->dir, name,
		     (unsigned long long)source_hash(src), c->arch, (unsigned)c->opt_hash,
		     c->lib->version / 1000, c->lib->version % 1000 / 10);
	return n < 0 || (size_t)n >= len ? CEP_ENAMETOOLONG : 0;
}

/* Makes dir and its parents (mode 0700 for the ones made here). */
static int mkdir_parents(const char *dir)
{
	char path[1024];
	size_t i;

	snprintf(path, sizeof(path), "%s", dir);
	for (i = 1; path[i] != '\0'; i++) {
		if (path[i] != '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return -errno;
		path[i] = '/';
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Decides once whether the directory is used: it must exist (it is made
 * when missing), be a directory owned by us, and be writable by nobody
 * else, since what is in it runs on the device. Called with the lock. */
static bool disk_usable(struct nvrtc_cache *c)
{
	struct stat st;
	int err;

	if (c->dir[0] == '\0')
		return false;
	if (c->disk_state != 0)
		return c->disk_state > 0;
	c->disk_state = -1;
	err = mkdir_parents(c->dir);
	if (err < 0) {
		snprintf(c->disk_note, sizeof(c->disk_note), "%s: cannot create: %s", c->dir,
			 strerror(-err));
		return false;
	}
	if (lstat(c->dir, &st) != 0) {
		snprintf(c->disk_note, sizeof(c->disk_note), "%s: %s", c->dir, strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(c->disk_note, sizeof(c->disk_note), "%s is not a directory", c->dir);
		return false;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		snprintf(c->disk_note, sizeof(c->disk_note), "%s is not used: it must belong "
			 "to uid %u and be writable by no one else (owner %u, mode %04o)",
			 c->dir, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return false;
	}
	c->disk_state = 1;
	return true;
}

/* Reads path fully into a malloc'd buffer; 0, or a negative errno. */
static int read_file(const char *path, unsigned char **out, size_t *size)
{
	unsigned char *buf = NULL;
	struct stat st;
	size_t at = 0;
	ssize_t n;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ret = -EINVAL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (size_t)st.st_size < sizeof(struct disk_header) ||
	    (size_t)st.st_size > sizeof(struct disk_header) + DISK_IMAGE_MAX)
		goto out;
	ret = -ENOMEM;
	buf = malloc((size_t)st.st_size);
	if (buf == NULL)
		goto out;
	while (at < (size_t)st.st_size) {
		n = read(fd, buf + at, (size_t)st.st_size - at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EINVAL;
			goto out;
		}
		at += (size_t)n;
	}
	*out = buf;
	*size = at;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

/* The image of src from its cache file: 1 with *image set (malloc'd), 0
 * when there is no valid file. Called with the lock. */
static int disk_load(struct nvrtc_cache *c, const struct nvrtc_source *src,
		     uint64_t src_hash, void **image, size_t *size)
{
	struct disk_header h;
	unsigned char *buf = NULL;
	char path[1200];
	size_t n = 0;
	int ret;

	if (!disk_usable(c) || nvrtc_cache_path(c, src, path, sizeof(path)) != 0)
		return 0;
	ret = read_file(path, &buf, &n);
	if (ret == -ENOENT)
		return 0;
	if (ret == -EINVAL) {
		c->stats.disk_rejects++;
		return 0;
	}
	if (ret < 0) {
		c->stats.disk_errors++;
		return 0;
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, DISK_MAGIC, sizeof(h.magic)) != 0 || h.src_hash != src_hash ||
	    h.opt_hash != c->opt_hash || h.arch != (uint32_t)c->arch ||
	    h.nvrtc_version != (uint32_t)c->lib->version ||
	    h.image_bytes != n - sizeof(h) || h.image_bytes == 0 ||
	    h.image_hash != XXH3_64bits(buf + sizeof(h), n - sizeof(h))) {
		c->stats.disk_rejects++;
		free(buf);
		return 0;
	}
	memmove(buf, buf + sizeof(h), n - sizeof(h));
	*image = buf;
	*size = n - sizeof(h);
	c->stats.disk_hits++;
	return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	ssize_t w;

	while (n > 0) {
		w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes the image to src's cache file: a temporary file renamed into
 * place, so a reader sees the old file, the new one or none. Failures only
 * count. Called with the lock. */
static void disk_store(struct nvrtc_cache *c, const struct nvrtc_source *src,
		       uint64_t src_hash, const void *image, size_t size)
{
	struct disk_header h;
	char path[1200], tmp[1220];
	int fd, ok;

	if (!disk_usable(c) || nvrtc_cache_path(c, src, path, sizeof(path)) != 0)
		return;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, DISK_MAGIC, sizeof(h.magic));
	h.src_hash = src_hash;
	h.opt_hash = c->opt_hash;
	h.arch = (uint32_t)c->arch;
	h.nvrtc_version = (uint32_t)c->lib->version;
	h.image_bytes = size;
	h.image_hash = XXH3_64bits(image, size);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		c->stats.disk_errors++;
		return;
	}
	ok = write_all(fd, &h, sizeof(h)) == 0 && write_all(fd, image, size) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		c->stats.disk_errors++;
		return;
	}
	c->stats.disk_writes++;
}

/* nvrtc_cache_image() with the lock held. */
static int image_locked(struct nvrtc_cache *c, const struct nvrtc_source *src,
			uint64_t src_hash, void **image, size_t *size)
{
	uint64_t t0;
	int ret;

	if (disk_load(c, src, src_hash, image, size))
		return 0;
	t0 = now_ns();
	ret = nvrtc_compile(c->lib, src, c->arch, image, size);
	if (ret < 0)
		return ret;
	c->stats.compiles++;
	c->stats.compile_ns += now_ns() - t0;
	disk_store(c, src, src_hash, *image, *size);
	return 0;
}

int nvrtc_cache_image(struct nvrtc_cache *c, const struct nvrtc_source *src,
		      void **image, size_t *size)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = image_locked(c, src, source_hash(src), image, size);
	report_publish(c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* The loaded module of src, loading it when needed. Called with the lock. */
static int module_locked(struct nvrtc_cache *c, const struct nvrtc_source *src,
			 CUmodule *out)
{
	uint64_t key = source_hash(src);
	size_t len = strlen(src->text), i;
	void *image = NULL;
	size_t size = 0;
	CUmodule mod = NULL;
	struct nvrtc_module_info info = { .name = "" };
	uint64_t t0, compiles, compile_ns;
	int ret;

	for (i = 0; i < c->n_mods; i++) {
		if (c->mods[i].key == key && c->mods[i].text_len == len) {
			c->stats.mem_hits++;
			*out = c->mods[i].mod;
			return 0;
		}
	}
	if (c->n_mods == c->cap_mods) {
		size_t cap = c->cap_mods ? c->cap_mods * 2 : 16;
		struct mod_entry *mods;

		pthread_mutex_lock(&c->report_lock);
		mods = realloc(c->mods, cap * sizeof(*mods));
		if (mods != NULL) {
			c->mods = mods;
			c->cap_mods = cap;
		}
		pthread_mutex_unlock(&c->report_lock);
		if (mods == NULL)
			return cep__set_error(CEP_ENOMEM, NULL);
	}
	t0 = now_ns();
	compiles = c->stats.compiles;
	compile_ns = c->stats.compile_ns;
	ret = image_locked(c, src, key, &image, &size);
	if (ret < 0)
		return ret;
	ret = CEP_CU_CHECK(c->drv->cuModuleLoadData(&mod, image));
	free(image);
	if (ret < 0)
		return ret;
	snprintf(info.name, sizeof(info.name), "%s", src->name);
	info.from_disk = c->stats.compiles == compiles;
	info.compile_ns = c->stats.compile_ns - compile_ns;
	info.load_ns = now_ns() - t0;
	info.image_bytes = size;
	pthread_mutex_lock(&c->report_lock);
	c->mods[c->n_mods++] = (struct mod_entry){ key, len, mod, info };
	pthread_mutex_unlock(&c->report_lock);
	*out = mod;
	return 0;
}

int nvrtc_cache_function(struct nvrtc_cache *c, const struct nvrtc_source *src,
			 const char *func, CUfunction *out)
{
	CUmodule mod = NULL;
	CUresult r;
	int ret;

	*out = NULL;
	if (c->drv == NULL)
		return cep__set_error(CEP_EINVAL, "the kernel cache has no driver to load %s",
				      src->name);
	pthread_mutex_lock(&c->lock);
	ret = module_locked(c, src, &mod);
	report_publish(c);
	pthread_mutex_unlock(&c->lock);
	if (ret < 0)
		return ret;
	r = c->drv->cuModuleGetFunction(out, mod, func);
	if (r == CUDA_ERROR_NOT_FOUND)
		return cep__set_error(CEP_EUNSUPPORTED, "the kernels of %s have no %s",
				      src->name, func);
	return CEP_CU_CHECK(r);
}
