/*
 * kpack.c — the prebuilt kernel set's file: writing it, mapping it,
 * checking it and finding images in it (gpu/cuda/kpack.h).
 */
#include "gpu/cuda/kpack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/fdio.h"

#define KPACK_FILE_MAX ((uint64_t)4 << 30) /* bytes; a larger file is foreign */

struct kpack_header {
	char magic[8];
	uint32_t version;
	uint32_t n_entries;
	uint32_t builder;       /* NVRTC version, 1000 * major + 10 * minor */
	uint32_t reserved;
	uint64_t index_hash;    /* of the n_entries entries */
	uint64_t file_bytes;
	uint64_t reserved2[3];
};

struct kpack_entry {
	char name[KPACK_NAME_MAX];
	uint64_t src_hash;
	uint64_t opt_hash;
	uint32_t arch;
	uint32_t kind;
	uint64_t offset;
	uint64_t bytes;
	uint64_t image_hash;
};

struct kpack {
	char path[1024];
	const unsigned char *map;
	size_t map_bytes;
	const struct kpack_header *h;
	const struct kpack_entry *e;   /* (h->n_entries) */
	unsigned char *checked;        /* per entry: 0 not yet, 1 good, 2 bad */
	uint64_t rejects;
};

/* Images start 64-aligned in the file, so also in its mapping: the
 * driver reads them in place. */
static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

int kpack_write(const char *path, const struct kpack_image *images, size_t n,
		uint32_t builder)
{
	static const unsigned char zeros[64];
	struct kpack_header h;
	struct kpack_entry *e;
	char tmp[1100];
	size_t i, at;
	int fd, ok, err;

	if (n > UINT32_MAX)
		return cep__set_error(CEP_EINVAL, "%s: too many images (%zu)", path, n);
	for (i = 0; i < n; i++) {
		if (images[i].bytes == 0 || images[i].data == NULL)
			return cep__set_error(CEP_EINVAL, "%s: image %zu (%s) is empty", path, i,
					      images[i].name);
	}
	e = calloc(n ? n : 1, sizeof(*e));
	if (e == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	at = align64(sizeof(h) + n * sizeof(*e));
	for (i = 0; i < n; i++) {
		snprintf(e[i].name, sizeof(e[i].name), "%s", images[i].name);
		e[i].src_hash = images[i].src_hash;
		e[i].opt_hash = images[i].opt_hash;
		e[i].arch = images[i].arch;
		e[i].kind = images[i].kind;
		e[i].offset = at;
		e[i].bytes = images[i].bytes;
		e[i].image_hash = XXH3_64bits(images[i].data, images[i].bytes);
		at = align64(at + images[i].bytes);
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, KPACK_MAGIC, sizeof(h.magic));
	h.version = KPACK_VERSION;
	h.n_entries = (uint32_t)n;
	h.builder = builder;
	h.index_hash = XXH3_64bits(e, n * sizeof(*e));
	h.file_bytes = at;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		free(e);
		return cep__set_error(CEP_ENAMETOOLONG, "%s: path too long", path);
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = errno;
		free(e);
		return cep__set_error(CEP_EIO, "%s: cannot create: %s", tmp, strerror(err));
	}
	ok = cep_write_all(fd, &h, sizeof(h)) == 0 && cep_write_all(fd, e, n * sizeof(*e)) == 0 &&
	     cep_write_all(fd, zeros, align64(sizeof(h) + n * sizeof(*e)) -
				  (sizeof(h) + n * sizeof(*e))) == 0;
	for (i = 0; ok && i < n; i++) {
		size_t pad = align64(images[i].bytes) - images[i].bytes;

		ok = cep_write_all(fd, images[i].data, images[i].bytes) == 0 &&
		     cep_write_all(fd, zeros, pad) == 0;
	}
	err = errno;
	/* Readable by all (the daemon may run as its own user), writable by
	 * the owner only: kpack_open() refuses anything looser. */
	ok = ok && fchmod(fd, 0644) == 0;
	ok = close(fd) == 0 && ok;
	free(e);
	if (!ok || rename(tmp, path) != 0) {
		err = err ? err : errno;
		unlink(tmp);
		return cep__set_error(CEP_EIO, "%s: cannot write: %s", path, strerror(err));
	}
	return 0;
}

/* Checks the mapped file as a whole: header, index, every entry inside. */
static int check(struct kpack *p)
{
	const struct kpack_header *h = (const void *)p->map;
	const struct kpack_entry *e;
	size_t index_end, i;

	if (p->map_bytes < sizeof(*h) || memcmp(h->magic, KPACK_MAGIC, sizeof(h->magic)) != 0)
		return cep__set_error(CEP_EINVAL, "%s is not a prebuilt kernel set (no magic)",
				      p->path);
	if (h->version != KPACK_VERSION)
		return cep__set_error(CEP_EINVAL, "%s: prebuilt kernel set version %u, this daemon "
				      "reads %u (rebuild it with make)", p->path, h->version,
				      KPACK_VERSION);
	if (h->file_bytes != p->map_bytes)
		return cep__set_error(CEP_EINVAL, "%s: %zu bytes, its header says %llu (truncated?)",
				      p->path, p->map_bytes, (unsigned long long)h->file_bytes);
	index_end = sizeof(*h) + (size_t)h->n_entries * sizeof(*e);
	if ((uint64_t)h->n_entries * sizeof(*e) > p->map_bytes || index_end > p->map_bytes)
		return cep__set_error(CEP_EINVAL, "%s: its index of %u entries runs past the end",
				      p->path, h->n_entries);
	e = (const void *)(p->map + sizeof(*h));
	if (XXH3_64bits(e, (size_t)h->n_entries * sizeof(*e)) != h->index_hash)
		return cep__set_error(CEP_EINVAL, "%s: its index does not match its hash",
				      p->path);
	for (i = 0; i < h->n_entries; i++) {
		if (e[i].offset < index_end || e[i].offset > p->map_bytes || e[i].bytes == 0 ||
		    e[i].bytes > p->map_bytes - e[i].offset || memchr(e[i].name, 0,
								       KPACK_NAME_MAX) == NULL)
			return cep__set_error(CEP_EINVAL, "%s: entry %zu lies outside the file",
					      p->path, i);
	}
	p->h = h;
	p->e = e;
	return 0;
}

int kpack_open(const char *path, struct kpack **out)
{
	struct kpack *p;
	struct stat st;
	void *map;
	int fd, err, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = errno;
		return cep__set_error(err == ENOENT ? CEP_ENOENT : CEP_EIO, "%s: %s", path,
				      strerror(err));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cep__set_error(CEP_EINVAL, "%s is not a regular file", path);
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022) != 0) {
		close(fd);
		return cep__set_error(CEP_EPERM, "%s is not used: it must belong to root or uid %u "
				      "and be writable by no one else (owner %u, mode %04o)", path,
				      (unsigned)geteuid(), (unsigned)st.st_uid,
				      (unsigned)(st.st_mode & 07777));
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > KPACK_FILE_MAX) {
		close(fd);
		return cep__set_error(CEP_EINVAL, "%s: %lld bytes is not a prebuilt kernel set",
				      path, (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = errno;
	close(fd);
	if (map == MAP_FAILED)
		return cep__set_error(CEP_EIO, "%s: mmap: %s", path, strerror(err));
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		munmap(map, (size_t)st.st_size);
		return cep__set_error(CEP_ENOMEM, NULL);
	}
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->map = map;
	p->map_bytes = (size_t)st.st_size;
	ret = check(p);
	if (ret == 0) {
		p->checked = calloc(p->h->n_entries ? p->h->n_entries : 1, 1);
		if (p->checked == NULL)
			ret = cep__set_error(CEP_ENOMEM, NULL);
	}
	if (ret < 0) {
		kpack_close(p);
		return ret;
	}
	*out = p;
	return 0;
}

void kpack_close(struct kpack *p)
{
	if (p == NULL)
		return;
	if (p->map != NULL)
		munmap((void *)p->map, p->map_bytes);
	free(p->checked);
	free(p);
}

bool kpack_get(struct kpack *p, size_t i, struct kpack_image *out)
{
	const struct kpack_entry *e;
	unsigned char state;

	if (i >= p->h->n_entries)
		return false;
	e = &p->e[i];
	/* Checked once: a bad byte in the file never reaches the device.
	 * Racing threads both hash; both agree. */
	state = __atomic_load_n(&p->checked[i], __ATOMIC_ACQUIRE);
	if (state == 0) {
		state = XXH3_64bits(p->map + e->offset, e->bytes) == e->image_hash ? 1 : 2;
		__atomic_store_n(&p->checked[i], state, __ATOMIC_RELEASE);
	}
	if (state != 1) {
		__atomic_add_fetch(&p->rejects, 1, __ATOMIC_RELAXED);
		return false;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out->name, e->name, sizeof(out->name));
	out->src_hash = e->src_hash;
	out->opt_hash = e->opt_hash;
	out->arch = e->arch;
	out->kind = e->kind;
	out->data = p->map + e->offset;
	out->bytes = e->bytes;
	return true;
}

bool kpack_find(struct kpack *p, uint64_t src_hash, uint32_t arch, uint32_t kind,
		uint64_t opt_hash, struct kpack_image *out)
{
	const struct kpack_entry *e;
	size_t i;

	for (i = 0; i < p->h->n_entries; i++) {
		e = &p->e[i];
		if (e->src_hash != src_hash || e->arch != arch || e->kind != kind ||
		    e->opt_hash != opt_hash)
			continue;
		if (kpack_get(p, i, out))
			return true;
	}
	return false;
}

size_t kpack_archs(const struct kpack *p, uint32_t kind, uint32_t *out, size_t max)
{
	uint32_t seen[64];
	size_t n = 0, i, j;

	for (i = 0; i < p->h->n_entries; i++) {
		uint32_t a = p->e[i].arch;

		if (p->e[i].kind != kind)
			continue;
		for (j = 0; j < n && seen[j] < a; j++)
			;
		if ((j < n && seen[j] == a) || n == sizeof(seen) / sizeof(seen[0]))
			continue;
		memmove(&seen[j + 1], &seen[j], (n - j) * sizeof(seen[0]));
		seen[j] = a;
		n++;
	}
	memcpy(out, seen, (n < max ? n : max) * sizeof(seen[0]));
	return n;
}

size_t kpack_count(const struct kpack *p)
{
	return p->h->n_entries;
}

uint32_t kpack_builder(const struct kpack *p)
{
	return p->h->builder;
}

const char *kpack_path(const struct kpack *p)
{
	return p->path;
}

uint64_t kpack_rejects(const struct kpack *p)
{
	return __atomic_load_n(&p->rejects, __ATOMIC_RELAXED);
}
