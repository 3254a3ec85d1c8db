/*
 * nvrtc.h — NVRTC loaded at run time, and the cache of compiled kernels.
 *
 * Device kernels ship as CUDA C++ sources embedded in the binary (the .cu
 * files of kernels/cuda). `make` compiles them all ahead of time into the
 * prebuilt set (gpu/cuda/kpack.h, by tools/cudaep-kpack), installed with
 * the daemon; whatever that set lacks (another architecture, a source
 * edited since, a driver too old for its images) is compiled here, once,
 * for the architecture of the device the daemon runs on. A cache answers
 * in four tiers: modules already loaded in memory (keyed by a hash of the
 * source, its headers and the compile options, never by a name), the
 * prebuilt set, CUBIN images in a cache directory on disk (so a restarted
 * daemon starts warm), and NVRTC itself. Every compile, hit and
 * millisecond is counted.
 *
 * Like the driver (gpu/cuda/cuda_driver.h), NVRTC is opened with dlopen so one
 * binary runs where the toolkit is absent; the few NVRTC types used are
 * declared in nvrtc.c, so this header and CUDA's own <nvrtc.h> never meet.
 *
 * On-disk files are named after their key (name, source hash,
 * architecture, options hash, NVRTC version), written atomically (a
 * temporary file renamed into place) and start with a header that repeats
 * the key and a hash of the image: a truncated, corrupt or foreign file is
 * counted as rejected, ignored and rebuilt. A directory that another user
 * owns or others may write is not used (a cache file is code the daemon
 * runs).
 *
 * Threads: a cache may be used from any thread; it has its own lock, held
 * while it compiles (compiles happen when plans are built, never on a
 * run).
 */
#ifndef CEP_GPU_NVRTC_H
#define CEP_GPU_NVRTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

struct cuda_driver;
struct kpack;
struct nvrtc_lib;
struct nvrtc_cache;

/* A CUDA C++ source to compile, with the headers it may #include. */
struct nvrtc_source {
	const char *name;                 /* for messages and file names: "binary" */
	const char *text;                 /* NUL-terminated */
	int n_headers;
	const char *const *header_names;  /* (n_headers), as written in #include "" */
	const char *const *header_texts;  /* (n_headers), NUL-terminated */
};

/* ------------------------------------------------------------- the library */

/*
 * Loads NVRTC: from path when it is not NULL, else the first of
 * libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so found in $CUDA_HOME/lib64,
 * /usr/local/cuda/lib64, then the dynamic linker's own search path. On
 * success *out is the caller's, freed with nvrtc_lib_free(). Fails with
 * CEP_ENOTSUP and a message that starts "no NVRTC: " and names what was
 * tried and why it failed (or the entry point missing), or CEP_ENOMEM.
 */
int nvrtc_lib_open(const char *path, struct nvrtc_lib **out);

/* Frees lib. The library stays loaded for the life of the process, as the
 * driver does. Accepts NULL. */
void nvrtc_lib_free(struct nvrtc_lib *lib);

/* NVRTC's version as 1000 * major + 10 * minor (13000 for 13.0). */
int nvrtc_lib_version(const struct nvrtc_lib *lib);

/* The file the library was loaded from, as given to dlopen. */
const char *nvrtc_lib_path(const struct nvrtc_lib *lib);

/*
 * Compiles src for sm_<arch> (arch is 10 * major + minor of the compute
 * capability: 90 on an H200) with the cache's options (see
 * nvrtc_options()) and returns the CUBIN in *image (malloc'd, the
 * caller's, free()) of *size bytes. Fails with CEP_EINVAL and NVRTC's log
 * (the first part of it) in the message when the source does not compile,
 * CEP_EDEVICE for other NVRTC failures (the message names the source, the
 * call and NVRTC's status), CEP_ENOMEM (here or inside NVRTC).
 */
int nvrtc_compile(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		  void **image, size_t *size);

/* nvrtc_compile() to PTX for compute_<arch> instead: *image is the PTX
 * text with its terminating NUL (counted in *size), as the driver loads
 * it on any later architecture. */
int nvrtc_compile_ptx(struct nvrtc_lib *lib, const struct nvrtc_source *src, int arch,
		      void **image, size_t *size);

/* The options every compile for arch uses, space separated, into buf (len
 * bytes): "--gpu-architecture=sm_90 -default-device --std=c++17". They are
 * part of every cache key. */
void nvrtc_options(int arch, char *buf, size_t len);

/* The same for a PTX compile: "--gpu-architecture=compute_90 ...". */
void nvrtc_options_ptx(int arch, char *buf, size_t len);

/* The architectures lib can compile for, ascending (52, ..., 90, 100,
 * 120), into out (max of them); returns how many there are, 0 when the
 * library cannot say (before NVRTC 11.2). */
int nvrtc_lib_archs(struct nvrtc_lib *lib, int *out, int max);

/* The hash that keys src everywhere (memory, prebuilt set, disk): of its
 * text and of every header's name and text. */
uint64_t nvrtc_source_hash(const struct nvrtc_source *src);

/* ----------------------------------------------------------------- the cache */

/* What a cache has done since it was made. */
struct nvrtc_stats {
	uint64_t compiles;      /* sources NVRTC compiled */
	uint64_t compile_ns;    /* ns spent in those compiles */
	uint64_t mem_hits;      /* lookups answered by a loaded module */
	uint64_t prebuilt_hits; /* modules loaded from the prebuilt set */
	uint64_t prebuilt_rejects; /* its images the driver refused or whose
	                         * hash was wrong (then compiled instead) */
	uint64_t disk_hits;     /* images read from the cache directory */
	uint64_t disk_writes;   /* images written to it */
	uint64_t disk_rejects;  /* files there that were corrupt or foreign */
	uint64_t disk_errors;   /* reads or writes that failed (disk full, ...) */
	uint64_t modules;       /* modules loaded now */
};

/*
 * Makes a cache for sm_<arch> over lib (which must outlive it). drv (may
 * be NULL) is the driver table that loads modules: without it only
 * nvrtc_cache_image() works. dir is the cache directory, created (mode
 * 0700, parents too) when first written; NULL or "" keeps images in
 * memory only. On success *out is the caller's, freed with
 * nvrtc_cache_free(). Fails with CEP_EINVAL (a relative or too long dir)
 * or CEP_ENOMEM. A directory that cannot be used is not an error: the
 * cache then works without it and nvrtc_cache_disk_note() says why.
 */
int nvrtc_cache_new(struct nvrtc_lib *lib, const struct cuda_driver *drv, int arch,
		    const char *dir, struct nvrtc_cache **out);

/*
 * Gives the cache the prebuilt set p (which must outlive the cache; NULL
 * takes it away). A module is then taken from p when p holds an image of
 * its source for the cache's architecture: the CUBIN built for it, else
 * one built for an earlier architecture of the same major version (which
 * the driver runs: sm_80 on sm_86), else the newest PTX for an earlier
 * architecture (which the driver compiles: a device newer than every
 * CUBIN). An image the driver refuses is counted (prebuilt_rejects) and
 * the next tier is used. Call before the first lookup.
 */
void nvrtc_cache_use_pack(struct nvrtc_cache *c, struct kpack *p);

/* Unloads every module (the context they were loaded in must be current
 * on the calling thread) and frees the cache. Accepts NULL. */
void nvrtc_cache_free(struct nvrtc_cache *c);

/*
 * The CUBIN of src for the cache's architecture: read from the cache
 * directory when a valid file is there, else compiled and written there.
 * *image is malloc'd and the caller's; *size its bytes. Fails as
 * nvrtc_compile() does; disk trouble only counts (disk_errors).
 */
int nvrtc_cache_image(struct nvrtc_cache *c, const struct nvrtc_source *src,
		      void **image, size_t *size);

/*
 * The kernel func of src: the module of src is loaded once (from memory,
 * disk or a compile, in that order) into the context current on the
 * calling thread, and stays until the cache is freed. Fails with
 * CEP_EINVAL when the cache has no driver, CEP_EUNSUPPORTED when the module
 * has no kernel func (the message names both), the driver's error from
 * cuModuleLoadData, or as nvrtc_cache_image() does.
 */
int nvrtc_cache_function(struct nvrtc_cache *c, const struct nvrtc_source *src,
			 const char *func, CUfunction *out);

/* Copies the counters into *out. */
void nvrtc_cache_stats(struct nvrtc_cache *c, struct nvrtc_stats *out);

/* Where a module's image came from. */
enum nvrtc_origin {
	NVRTC_COMPILED = 0,     /* compiled by this process */
	NVRTC_DISK = 1,         /* read from the cache directory */
	NVRTC_PREBUILT = 2,     /* taken from the prebuilt set */
};

/* A module the cache loaded, as nvrtc_cache_modules() reports it. */
struct nvrtc_module_info {
	char name[48];          /* its source's name, cut */
	enum nvrtc_origin origin;
	uint64_t compile_ns;    /* in NVRTC; 0 when read from disk */
	uint64_t load_ns;       /* from the lookup that missed to the loaded
	                         * module, reading or compiling included */
	size_t image_bytes;     /* of its CUBIN */
};

/*
 * Copies the records of the first max modules loaded, in the order they
 * were loaded, into out (caller memory) and returns how many modules are
 * loaded (more than max: the rest were left out). *stats, when stats is
 * not NULL, gets the counters as they stood when the last lookup, load or
 * compile ended. Takes only a lock of the report's own, held while
 * copying, so it never waits for a compile in progress: for a caller that
 * must not block (the daemon's event loop). Cannot fail.
 */
size_t nvrtc_cache_modules(struct nvrtc_cache *c, struct nvrtc_module_info *out, size_t max,
			   struct nvrtc_stats *stats);

/* The cache directory as nvrtc_cache_new() was given it (without trailing
 * slashes), "" when there is none; valid for the cache's life. */
const char *nvrtc_cache_dir(const struct nvrtc_cache *c);

/* The path of src's file in the cache directory, into buf (len bytes).
 * Returns 0, or CEP_ENOENT when the cache has no directory, or
 * CEP_ENAMETOOLONG. */
int nvrtc_cache_path(struct nvrtc_cache *c, const struct nvrtc_source *src, char *buf,
		     size_t len);

/* Why the cache directory is not used ("" when it is, or when there is
 * none); valid for the cache's life. */
const char *nvrtc_cache_disk_note(struct nvrtc_cache *c);

/*
 * The default cache directory into buf (len bytes): /var/cache/cudaep for
 * root, else $XDG_CACHE_HOME/cudaep, else $HOME/.cache/cudaep. Returns 0,
 * CEP_ENOENT when neither variable is set for a user, or CEP_ENAMETOOLONG.
 */
int nvrtc_cache_dir_default(char *buf, size_t len);

#endif
