/*
 * handover.c — the frame of a handover (handover.h): building its parts,
 * the memfd and its header, the fds across the exec; and in the new
 * image, reading it back and handing out what it carried.
 *
 * The memfd: a header (magic, the message's offset and length), the model
 * files' bytes, then the packed message, so that models of any size never
 * pass through the message (protobuf-c would copy them).
 */
#include "daemon/handover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"

extern char **environ;

#define HANDOVER_MAGIC  "CEPDHOV1"
#define HEADER_BYTES    24                    /* magic, offset, length */
#define MSG_MAX         ((uint64_t)1 << 30)   /* bytes of the message */
#define MODEL_MAX       ((uint64_t)INT32_MAX) /* bytes of a model file */

/* Reads (write false) or writes len bytes of buf at offset off of fd,
 * whatever pieces the kernel moves them in. Returns 0 or -errno (-EIO
 * for a file that ends first). */
static int pio_all(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Makes room for one more element of size elem in *arr. */
static bool grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	void **a = arr;
	size_t nc = *cap ? 2 * *cap : 16;
	void *p;

	if (n < *cap)
		return true;
	p = realloc(*a, nc * elem);
	if (p == NULL)
		return false;
	*a = p;
	*cap = nc;
	return true;
}

/* ================================================================ old image */

struct handover_build {
	void **ptrs;                   /* (n_ptrs) every part */
	size_t n_ptrs, cap_ptrs;
	const engine_model **models;   /* (n_models) distinct, in index order */
	size_t n_models, cap_models;
	int *keep;                     /* (n_keep) fds carried over */
	size_t n_keep, cap_keep;
	bool oom;
};

int handover_build_new(struct handover_build **out)
{
	*out = calloc(1, sizeof(**out));
	return *out != NULL ? 0 : cep__set_error(CEP_ENOMEM, "no memory for the handover");
}

void handover_build_free(struct handover_build *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->n_ptrs; i++)
		free(b->ptrs[i]);
	free(b->ptrs);
	free(b->models);
	free(b->keep);
	free(b);
}

void *handover_alloc(struct handover_build *b, size_t bytes)
{
	void *p;

	if (b->oom || !grow(&b->ptrs, &b->cap_ptrs, b->n_ptrs, sizeof(void *)) ||
	    (p = calloc(1, bytes ? bytes : 1)) == NULL) {
		b->oom = true;
		return NULL;
	}
	b->ptrs[b->n_ptrs++] = p;
	return p;
}

int32_t handover_keep_fd(struct handover_build *b, int fd)
{
	if (fd < 0)
		return 0;
	if (fd < 3)
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || !grow(&b->keep, &b->cap_keep, b->n_keep, sizeof(int))) {
		b->oom = b->oom || fd >= 0;
		return 0;
	}
	b->keep[b->n_keep++] = fd;
	return fd;
}

uint32_t handover_model(struct handover_build *b, const engine_model *m)
{
	const void *bytes;
	size_t i, len;
	int dir_fd;

	engine_model_source(m, &bytes, &len, &dir_fd);
	if (bytes == NULL)
		return 0;
	for (i = 0; i < b->n_models; i++)
		if (b->models[i] == m)
			return (uint32_t)i + 1;
	if (!grow(&b->models, &b->cap_models, b->n_models, sizeof(*b->models))) {
		b->oom = true;
		return 0;
	}
	b->models[b->n_models++] = m;
	return (uint32_t)b->n_models;
}

/* Writes every model's bytes into fd from offset *off on, and their
 * entries into m. */
static int models_write(struct handover_build *b, int fd, HvHandover *m, uint64_t *off)
{
	const void *bytes;
	size_t i, len;
	int dir_fd, ret;

	m->models = handover_alloc(b, sizeof(*m->models) * b->n_models);
	for (i = 0; m->models != NULL && i < b->n_models; i++) {
		HvModel *hm = handover_alloc(b, sizeof(*hm));

		if (hm == NULL)
			break;
		engine_model_source(b->models[i], &bytes, &len, &dir_fd);
		cudaepd__handover__model__init(hm);
		ret = pio_all(fd, (void *)bytes, len, *off, true);
		if (ret != 0)
			return cep__set_error(ret, "writing a model into the handover: %s",
					      strerror(-ret));
		hm->offset = *off;
		hm->len = len;
		hm->dir_fd = dir_fd >= 0 ? handover_keep_fd(b, dir_fd) : 0;
		*off += len;
		m->models[m->n_models++] = hm;
	}
	return b->oom ? cep__set_error(CEP_ENOMEM, "no memory for the handover") : 0;
}

/* Clears FD_CLOEXEC on the fds of b and sets it on every other but 0, 1
 * and 2: the lost backend's fds (its /dev/nvidia* among them) close with
 * the old image, and with them its device memory. */
static int fds_prepare(struct handover_build *b)
{
	struct dirent *e;
	DIR *d;
	int fd, fl;

	if (b->n_keep > 0)
		qsort(b->keep, b->n_keep, sizeof(int), int_cmp);
	d = opendir("/proc/self/fd");
	if (d == NULL)
		return cep__set_error(cep__from_errno(errno), "/proc/self/fd: %s",
				      strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd < 3 || fd == dirfd(d) || (fl = fcntl(fd, F_GETFD)) < 0)
			continue;
		if (b->n_keep > 0 &&
		    bsearch(&fd, b->keep, b->n_keep, sizeof(int), int_cmp) != NULL)
			fl &= ~FD_CLOEXEC;
		else
			fl |= FD_CLOEXEC;
		(void)fcntl(fd, F_SETFD, fl);
	}
	closedir(d);
	return 0;
}

int handover_exec(struct handover_build *b, HvHandover *m, char **argv, const char *summary)
{
	uint8_t hdr[HEADER_BYTES];
	uint8_t *msg = NULL;
	uint64_t off = HEADER_BYTES, len;
	char num[16];
	int fd, ret;

	if (argv == NULL || argv[0] == NULL)
		return cep__set_error(CEP_EINVAL, "no command line to re-execute cudaepd with");
	if (b->oom)
		return cep__set_error(CEP_ENOMEM, "no memory for the handover");
	fd = memfd_create("cudaepd-handover", MFD_CLOEXEC);
	if (fd < 0)
		return cep__set_error(cep__from_errno(errno), "memfd_create: %s",
				      strerror(errno));
	m->version = HANDOVER_VERSION;
	ret = models_write(b, fd, m, &off);
	if (ret != 0)
		goto out;
	len = cudaepd__handover__handover__get_packed_size(m);
	msg = malloc(len ? len : 1);
	if (msg == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the handover's %llu bytes",
				     (unsigned long long)len);
		goto out;
	}
	cudaepd__handover__handover__pack(m, msg);
	memcpy(hdr, HANDOVER_MAGIC, 8);
	memcpy(hdr + 8, &off, 8);
	memcpy(hdr + 16, &len, 8);
	ret = pio_all(fd, msg, len, off, true);
	if (ret == 0)
		ret = pio_all(fd, hdr, sizeof(hdr), 0, true);
	if (ret != 0) {
		ret = cep__set_error(ret, "writing the handover: %s", strerror(-ret));
		goto out;
	}
	if (handover_keep_fd(b, fd) != fd || b->oom) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the handover");
		goto out;
	}
	ret = fds_prepare(b);
	if (ret != 0)
		goto out;
	snprintf(num, sizeof(num), "%d", fd);
	if (setenv(HANDOVER_ENV, num, 1) != 0) {
		ret = cep__set_error(CEP_ENOMEM, "setenv %s: %s", HANDOVER_ENV, strerror(errno));
		goto out;
	}
	log_notice("re-executing cudaepd with its state: %s, %zu model files (%llu bytes of "
		   "handover)", summary, m->n_models, (unsigned long long)(off + len));
	fflush(NULL);
	execve("/proc/self/exe", argv, environ);
	ret = cep__set_error(cep__from_errno(errno), "execve /proc/self/exe: %s",
			     strerror(errno));
	unsetenv(HANDOVER_ENV);
out:
	free(msg);
	close(fd);
	return ret;
}

/* ================================================================ new image */

/* An fd the new image inherited. */
struct inherited {
	int fd;
	bool taken;                    /* an object took it */
};

/* A model file of the handover, read once for every session of it. */
struct blob {
	bool tried;
	int err;                       /* why it cannot be had, or 0 */
	void *bytes;                   /* (len) owned */
	size_t len;
	int dir_fd;                    /* owned; -1: none */
};

struct handover {
	HvHandover *msg;               /* parsed; owned */
	int memfd;                     /* -1: none */
	uint64_t size;                 /* its bytes */
	struct inherited *fds;         /* (n_fds) sorted by fd */
	size_t n_fds;
	struct blob *blobs;            /* (msg->n_models) */
};

/* Notes every fd inherited (but memfd), marking it close-on-exec until an
 * object takes it. */
static int fds_note(struct handover *h)
{
	struct dirent *e;
	size_t cap = 0;
	DIR *d;
	int fd;

	d = opendir("/proc/self/fd");
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd < 3 || fd == dirfd(d) || fd == h->memfd)
			continue;
		if (!grow(&h->fds, &cap, h->n_fds, sizeof(*h->fds))) {
			closedir(d);
			return -ENOMEM;
		}
		h->fds[h->n_fds++] = (struct inherited){ .fd = fd };
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
	if (h->n_fds > 0)
		qsort(h->fds, h->n_fds, sizeof(*h->fds), int_cmp);
	return 0;
}

int handover_fd_take(struct handover *h, int32_t fd, const char *what)
{
	struct inherited key = { .fd = fd }, *e;

	if (fd < 3)
		return -1;
	e = h->n_fds > 0 ? bsearch(&key, h->fds, h->n_fds, sizeof(*h->fds), int_cmp) : NULL;
	if (e == NULL || e->taken) {
		log_warning("handover: fd %d, named as %s, was %s; leaving it out", (int)fd, what,
			    e == NULL ? "not passed to the new image" : "named twice");
		return -1;
	}
	e->taken = true;
	return fd;
}

/* Reads and parses the handover in h->memfd. Returns 0, or a CEP_E* code
 * with a message saying what is wrong. */
static int handover_parse(struct handover *h)
{
	uint8_t hdr[HEADER_BYTES], *buf;
	uint64_t off, len;
	struct stat sb;
	int ret;

	if (fstat(h->memfd, &sb) != 0 || !S_ISREG(sb.st_mode))
		return cep__set_error(CEP_EINVAL, "fd %d is not a memfd", h->memfd);
	h->size = (uint64_t)sb.st_size;
	if (h->size < HEADER_BYTES || pio_all(h->memfd, hdr, sizeof(hdr), 0, false) != 0 ||
	    memcmp(hdr, HANDOVER_MAGIC, 8) != 0)
		return cep__set_error(CEP_EINVAL, "no handover header in its %llu bytes",
				      (unsigned long long)h->size);
	memcpy(&off, hdr + 8, 8);
	memcpy(&len, hdr + 16, 8);
	if (off < HEADER_BYTES || off > h->size || len > h->size - off || len > MSG_MAX)
		return cep__set_error(CEP_EINVAL, "its message (%llu bytes at %llu) lies outside "
				      "its %llu bytes", (unsigned long long)len,
				      (unsigned long long)off, (unsigned long long)h->size);
	buf = malloc(len ? len : 1);
	if (buf == NULL)
		return cep__set_error(CEP_ENOMEM, "no memory for its %llu bytes",
				      (unsigned long long)len);
	ret = pio_all(h->memfd, buf, len, off, false);
	if (ret == 0)
		h->msg = cudaepd__handover__handover__unpack(NULL, len, buf);
	free(buf);
	if (ret != 0)
		return cep__set_error(ret, "reading it: %s", strerror(-ret));
	if (h->msg == NULL)
		return cep__set_error(CEP_EINVAL, "its message does not decode");
	if (h->msg->version != HANDOVER_VERSION)
		return cep__set_error(CEP_EINVAL, "it is of version %u, this cudaepd reads %d",
				      h->msg->version, HANDOVER_VERSION);
	h->blobs = calloc(h->msg->n_models ? h->msg->n_models : 1, sizeof(*h->blobs));
	if (h->blobs == NULL)
		return cep__set_error(CEP_ENOMEM, "no memory for its %zu model files",
				      h->msg->n_models);
	return 0;
}

struct handover *handover_take(void)
{
	const char *env = getenv(HANDOVER_ENV);
	struct handover *h;
	char *end;
	long v;
	int ret;

	if (env == NULL)
		return NULL;
	errno = 0;
	v = strtol(env, &end, 10);
	/* Not for a later exec or child. */
	unsetenv(HANDOVER_ENV);
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		log_err("no memory to take the handover over; starting afresh");
		return NULL;
	}
	h->memfd = end != env && *end == '\0' && errno == 0 && v >= 3 && v <= INT32_MAX &&
		   fcntl((int)v, F_GETFD) >= 0 ? (int)v : -1;
	if (h->memfd >= 0)
		(void)fcntl(h->memfd, F_SETFD, FD_CLOEXEC);
	ret = fds_note(h);
	if (ret != 0) {
		log_err("handover: cannot list the inherited fds: %s", strerror(-ret));
		goto fail;
	}
	cep__clear_error();
	ret = h->memfd < 0 ? cep__set_error(CEP_EINVAL, "%s names no open fd", HANDOVER_ENV)
			   : handover_parse(h);
	if (ret != 0) {
		log_err("the state handed over by the previous image of cudaepd cannot be read "
			"(%s); closing the %zu fds it passed and starting afresh",
			cep_last_error(), h->n_fds);
		goto fail;
	}
	return h;
fail:
	handover_free(h);
	return NULL;
}

int handover_read_fd(int memfd, const int *fds, size_t n, struct handover **out)
{
	struct handover *h;
	size_t i;
	int ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		close(memfd);
		return cep__set_error(CEP_ENOMEM, "no memory for a handover");
	}
	h->memfd = memfd;
	h->fds = calloc(n ? n : 1, sizeof(*h->fds));
	if (h->fds == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for a handover's fds");
		goto fail;
	}
	for (i = 0; i < n; i++)
		h->fds[h->n_fds++] = (struct inherited){ .fd = fds[i] };
	if (h->n_fds > 0)
		qsort(h->fds, h->n_fds, sizeof(*h->fds), int_cmp);
	ret = handover_parse(h);
	if (ret != 0)
		goto fail;
	*out = h;
	return 0;
fail:
	/* The fds stay the caller's. */
	h->n_fds = 0;
	handover_free(h);
	return ret;
}

const HvHandover *handover_msg(const struct handover *h)
{
	return h->msg;
}

int handover_model_get(struct handover *h, uint32_t i, const void **bytes, size_t *len,
		       int *dir_fd)
{
	const HvModel *hm;
	struct blob *bl;
	struct stat sb;
	int ret;

	if (i == 0 || i > h->msg->n_models)
		return cep__set_error(CEP_ECONTEXT, "its model file did not come over");
	bl = &h->blobs[i - 1];
	hm = h->msg->models[i - 1];
	if (!bl->tried) {
		bl->tried = true;
		bl->dir_fd = -1;
		if (hm->len == 0 || hm->len > MODEL_MAX || hm->offset > h->size ||
		    hm->len > h->size - hm->offset) {
			bl->err = cep__set_error(CEP_EINVAL, "its model file (%llu bytes at %llu) "
						 "lies outside the handover",
						 (unsigned long long)hm->len,
						 (unsigned long long)hm->offset);
			return bl->err;
		}
		bl->bytes = malloc(hm->len);
		if (bl->bytes == NULL) {
			bl->err = cep__set_error(CEP_ENOMEM, "no memory for its model file");
			return bl->err;
		}
		ret = pio_all(h->memfd, bl->bytes, hm->len, hm->offset, false);
		if (ret != 0) {
			bl->err = cep__set_error(ret, "reading its model file: %s", strerror(-ret));
			return bl->err;
		}
		bl->len = hm->len;
		bl->dir_fd = handover_fd_take(h, hm->dir_fd, "a model's directory");
		if (bl->dir_fd >= 0 && (fstat(bl->dir_fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
			log_warning("handover: fd %d is not a directory; a model's external "
				    "data cannot be read", bl->dir_fd);
			close(bl->dir_fd);
			bl->dir_fd = -1;
		}
	}
	if (bl->err != 0)
		return cep__set_error(bl->err, "its model file could not be read from the "
				      "handover");
	*bytes = bl->bytes;
	*len = bl->len;
	*dir_fd = bl->dir_fd;
	return 0;
}

void handover_free(struct handover *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n_fds; i++)
		if (!h->fds[i].taken)
			close(h->fds[i].fd);
	for (i = 0; h->blobs != NULL && h->msg != NULL && i < h->msg->n_models; i++) {
		free(h->blobs[i].bytes);
		if (h->blobs[i].tried && h->blobs[i].dir_fd >= 0)
			close(h->blobs[i].dir_fd);
	}
	free(h->blobs);
	if (h->memfd >= 0)
		close(h->memfd);
	if (h->msg != NULL)
		cudaepd__handover__handover__free_unpacked(h->msg, NULL);
	free(h->fds);
	free(h);
}
