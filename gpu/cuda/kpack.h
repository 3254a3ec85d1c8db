/*
 * kpack.h — the prebuilt set of device kernels: one file of compiled
 * images (CUBIN for each architecture built, PTX for newer ones), written
 * at `make` by tools/cudaep-kpack and installed with the daemon, so that
 * a fresh daemon compiles none of its own kernels.
 *
 * The file is read-only code for the device, so it is trusted only as a
 * cache directory is (gpu/cuda/nvrtc.h): a regular file that belongs to
 * root or to the daemon's user and that no one else may write. It is
 * mapped, not read, and checked once when opened (magic, version, an
 * index that lies inside the file and hashes right); each image's own
 * hash is checked when it is first looked up. A pack that fails a check
 * is refused with a message naming the file and the check; an image
 * whose hash is wrong is never returned.
 *
 * Entries are keyed as the kernel cache keys them: the source's hash (its
 * text and every header: an edited kernel never matches an old image),
 * the architecture, the kind (CUBIN or PTX) and a hash of the NVRTC
 * options it was compiled with.
 *
 * Layout (little-endian, as every machine CUDA runs on): a header, the
 * index of n entries, then the images, each at a 64-aligned offset; a
 * PTX image keeps its terminating NUL, which the driver needs.
 *
 * Threads: a pack is immutable once opened; any thread may look up.
 */
#ifndef CEP_GPU_KPACK_H
#define CEP_GPU_KPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KPACK_MAGIC "CEPKPAK1"
#define KPACK_VERSION 1u
#define KPACK_NAME_MAX 48

enum kpack_kind {
	KPACK_CUBIN = 1,
	KPACK_PTX = 2,
};

/* One image, as the writer is given it and the reader reports it. */
struct kpack_image {
	char name[KPACK_NAME_MAX];  /* the source's name ("binary"), cut */
	uint64_t src_hash;          /* of the source and its headers */
	uint64_t opt_hash;          /* of the compile options */
	uint32_t arch;              /* sm_<arch> or compute_<arch> */
	uint32_t kind;              /* enum kpack_kind */
	const void *data;
	size_t bytes;
};

struct kpack;

/*
 * Writes images[0..n) as a pack to path: to a temporary file beside it,
 * renamed into place, so a reader sees the old pack, the new one or none.
 * builder is the NVRTC version that compiled them (1000 * major + 10 *
 * minor), recorded for `cudaepctl kernels`. Returns 0, or CEP_EIO with
 * the path and errno's text, CEP_EINVAL (an empty image), CEP_ENOMEM.
 */
int kpack_write(const char *path, const struct kpack_image *images, size_t n,
		uint32_t builder);

/*
 * Opens the pack at path and checks it. On success *out is the caller's,
 * closed with kpack_close(). Fails with CEP_ENOENT when there is no file
 * (the message says so; not having a pack is a normal state), CEP_EPERM
 * when its owner or mode make it untrusted, CEP_EINVAL when it is not a
 * valid pack (the message names the check), CEP_EIO, CEP_ENOMEM.
 */
int kpack_open(const char *path, struct kpack **out);

/* Unmaps and frees. Accepts NULL. */
void kpack_close(struct kpack *p);

/*
 * The image of (src_hash, arch, kind) whose options hashed to opt_hash:
 * true with *out filled (data points into the mapping, valid until
 * kpack_close()), false when there is none or its hash is wrong (counted
 * by kpack_rejects()).
 */
bool kpack_find(struct kpack *p, uint64_t src_hash, uint32_t arch, uint32_t kind,
		uint64_t opt_hash, struct kpack_image *out);

/* Image i (below kpack_count()) as kpack_find() would return it: false
 * when its hash is wrong. */
bool kpack_get(struct kpack *p, size_t i, struct kpack_image *out);

/* The architectures the pack holds images of kind for, ascending, into
 * out (max of them); returns how many there are. */
size_t kpack_archs(const struct kpack *p, uint32_t kind, uint32_t *out, size_t max);

/* How many images the pack holds. */
size_t kpack_count(const struct kpack *p);

/* The NVRTC version that built it, as kpack_write() was given it. */
uint32_t kpack_builder(const struct kpack *p);

/* The path it was opened from. */
const char *kpack_path(const struct kpack *p);

/* Images whose hash was found wrong since the pack was opened. */
uint64_t kpack_rejects(const struct kpack *p);

#endif
