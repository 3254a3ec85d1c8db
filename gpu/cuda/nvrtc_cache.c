/*
 * nvrtc_cache.c — the cache of compiled kernels (gpu/cuda/nvrtc.h), in
 * four tiers: modules loaded in memory, the prebuilt set installed with
 * the daemon (gpu/cuda/kpack.h), CUBIN files in the cache directory, and
 * compiles through NVRTC (gpu/cuda/nvrtc.c).
 */
#include "gpu/cuda/nvrtc.h"
#include "gpu/cuda/cuda_check.h"

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
#include "gpu/cuda/kpack.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/fdio.h"
#include "common/log.h"

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
	struct kpack *pack;              /* the caller's; NULL: none */
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

uint64_t nvrtc_source_hash(const struct nvrtc_source *src)
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

void nvrtc_cache_use_pack(struct nvrtc_cache *c, struct kpack *p)
{
	pthread_mutex_lock(&c->lock);
	c->pack = p;
	pthread_mutex_unlock(&c->lock);
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
		     (unsigned long long)nvrtc_source_hash(src), c->arch, (unsigned)c->opt_hash,
		     nvrtc_lib_version(c->lib) / 1000, nvrtc_lib_version(c->lib) % 1000 / 10);
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
	    h.nvrtc_version != (uint32_t)nvrtc_lib_version(c->lib) ||
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
	h.nvrtc_version = (uint32_t)nvrtc_lib_version(c->lib);
	h.image_bytes = size;
	h.image_hash = XXH3_64bits(image, size);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		c->stats.disk_errors++;
		return;
	}
	ok = cep_write_all(fd, &h, sizeof(h)) == 0 && cep_write_all(fd, image, size) == 0;
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
	/* Said before and after: a compile takes seconds, inside whatever
	 * waits for it (a plan, so a load or a first run). */
	log_notice("kernels: compiling %s for sm_%d (not prebuilt for this device, not in "
		   "the cache directory)", src->name, c->arch);
	t0 = now_ns();
	ret = nvrtc_compile(c->lib, src, c->arch, image, size);
	if (ret < 0)
		return ret;
	c->stats.compiles++;
	c->stats.compile_ns += now_ns() - t0;
	log_notice("kernels: compiled %s for sm_%d in %.1f s", src->name, c->arch,
		   (double)(now_ns() - t0) / 1e9);
	disk_store(c, src, src_hash, *image, *size);
	return 0;
}

int nvrtc_cache_image(struct nvrtc_cache *c, const struct nvrtc_source *src,
		      void **image, size_t *size)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = image_locked(c, src, nvrtc_source_hash(src), image, size);
	report_publish(c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* Loads the prebuilt image img: true with *mod, or false (counted) when
 * the driver refuses it, as an older driver refuses a newer toolkit's
 * CUBIN. Not CEP_CU_CHECK: a refusal here is expected and only means the
 * next tier. */
static bool pack_try(struct nvrtc_cache *c, const struct kpack_image *img, CUmodule *mod)
{
	CUresult r = c->drv->cuModuleLoadData(mod, img->data);

	if (r == CUDA_SUCCESS)
		return true;
	c->stats.prebuilt_rejects++;
	log_info("kernels: the prebuilt %s for %s_%u was refused by the driver (error %d); "
		 "compiling it instead", img->name, img->kind == KPACK_PTX ? "compute" : "sm",
		 img->arch, (int)r);
	*mod = NULL;
	return false;
}

/* The module of the source keyed key from the prebuilt set: true with
 * *mod loaded and *bytes its image's size, false when the set holds no
 * image of it that the driver takes. The order is nvrtc_cache_use_pack()'s.
 * Called with the lock. */
static bool pack_module(struct nvrtc_cache *c, uint64_t key, CUmodule *mod, size_t *bytes)
{
	static const uint32_t kinds[] = { KPACK_CUBIN, KPACK_PTX };
	struct kpack_image img;
	uint32_t archs[64], a;
	char opts[256];
	size_t n, i, k;

	if (c->pack == NULL)
		return false;
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		n = kpack_archs(c->pack, kinds[k], archs, sizeof(archs) / sizeof(archs[0]));
		if (n > sizeof(archs) / sizeof(archs[0]))
			n = sizeof(archs) / sizeof(archs[0]);
		for (i = n; i-- > 0;) {
			a = archs[i];
			/* A CUBIN runs on its own major version only; PTX on
			 * any later architecture. */
			if (a > (uint32_t)c->arch ||
			    (kinds[k] == KPACK_CUBIN && a / 10 != (uint32_t)c->arch / 10))
				continue;
			if (kinds[k] == KPACK_CUBIN)
				nvrtc_options((int)a, opts, sizeof(opts));
			else
				nvrtc_options_ptx((int)a, opts, sizeof(opts));
			if (!kpack_find(c->pack, key, a, kinds[k], XXH3_64bits(opts, strlen(opts)),
					&img))
				continue;
			if (pack_try(c, &img, mod)) {
				*bytes = img.bytes;
				return true;
			}
		}
	}
	return false;
}

/* The loaded module of src, loading it when needed. Called with the lock. */
static int module_locked(struct nvrtc_cache *c, const struct nvrtc_source *src,
			 CUmodule *out)
{
	uint64_t key = nvrtc_source_hash(src);
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
	if (pack_module(c, key, &mod, &size)) {
		c->stats.prebuilt_hits++;
		info.origin = NVRTC_PREBUILT;
	} else {
		ret = image_locked(c, src, key, &image, &size);
		if (ret < 0)
			return ret;
		ret = CEP_CU_CHECK(c->drv->cuModuleLoadData(&mod, image));
		free(image);
		if (ret < 0)
			return ret;
		info.origin = c->stats.compiles == compiles ? NVRTC_DISK : NVRTC_COMPILED;
	}
	snprintf(info.name, sizeof(info.name), "%s", src->name);
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
