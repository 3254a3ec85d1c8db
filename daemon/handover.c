/*
 * handover.c — the state handover of a recovery by re-exec (handover.h):
 * the old image writes its state and re-executes itself; the new image
 * reads it, checks every fd it names, and re-creates the connections,
 * fence pages, regions and sessions with their ids.
 *
 * Nothing in a handover is trusted more than a client's request: it is
 * parsed with protobuf-c, its sizes are bounded by the memfd's, and an fd
 * is taken only if the new image inherited it, only once, and only when
 * it is of the type its object needs.
 */
#include "daemon/handover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "handover.pb-c.h"

#include "daemon/access.h"
#include "daemon/batch.h"
#include "daemon/conn.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "common/error.h"
#include "daemon/fence.h"
#include "common/log.h"
#include "daemon/region.h"
#include "daemon/server.h"
#include "daemon/session.h"

extern char **environ;

#define HANDOVER_MAGIC  "CEPDHOV1"
#define HEADER_BYTES    24                    /* magic, offset, length */
#define MSG_MAX         ((uint64_t)1 << 30)   /* bytes of the message */
#define MODEL_MAX       ((uint64_t)INT32_MAX) /* bytes of a model file */

typedef Cudaepd__Handover__Handover HvHandover;
typedef Cudaepd__Handover__Client HvClient;
typedef Cudaepd__Handover__Region HvRegion;
typedef Cudaepd__Handover__Session HvSession;
typedef Cudaepd__Handover__Model HvModel;
typedef Cudaepd__Handover__Out HvOut;
typedef Cudaepd__Handover__Counter HvCounter;
typedef Cudaepd__Handover__Gauge HvGauge;

/* Reads (write false) or writes len bytes of buf at offset off of fd,
 * whole. Returns 0 or -errno. */
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

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return pio_all(fd, (void *)buf, len, off, true);
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return pio_all(fd, buf, len, off, false);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* ================================================================ old image */

/* The message being built: its parts are allocated one by one and freed
 * together once it is packed. */
struct build {
	void **ptrs;                   /* (n_ptrs) every allocation */
	size_t n_ptrs, cap_ptrs;
	const engine_model **models;   /* (n_models) distinct, in index order */
	size_t n_models, cap_models;
	int *keep;                     /* (n_keep) fds carried over */
	size_t n_keep, cap_keep;
	bool oom;
};

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

static void *b_alloc(struct build *b, size_t bytes)
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

/* Carries fd over: its number as the message holds it (never 0, 1 or 2,
 * which mean none: such an fd is moved up first), or 0 when it cannot. */
static int32_t b_keep(struct build *b, int fd)
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

/* 1 + the index of model m in the handover, added when new; 0 for a
 * model without its file's bytes (it cannot be loaded again). */
static uint32_t b_model(struct build *b, const engine_model *m)
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

static void b_free(struct build *b)
{
	size_t i;

	for (i = 0; i < b->n_ptrs; i++)
		free(b->ptrs[i]);
	free(b->ptrs);
	free(b->models);
	free(b->keep);
}

static HvSession *b_session(struct build *b, const struct session *sess)
{
	HvSession *hs = b_alloc(b, sizeof(*hs));

	if (hs == NULL)
		return NULL;
	cudaepd__handover__session__init(hs);
	hs->id = sess->id;
	hs->name = (char *)sess->name;
	hs->model = sess->engine != NULL ? b_model(b, engine_session_model(sess->engine)) : 0;
	hs->runs = sess->runs;
	hs->run_requests = sess->run_requests;
	hs->loaded_ns = sess->loaded_ns;
	hs->precision = (uint32_t)sess->opts.precision;
	hs->priority = (uint32_t)sess->opts.priority;
	hs->memory_limit = sess->opts.memory_limit;
	hs->batching = sess->batch != NULL;
	hs->batched_runs = sess->batched_runs;
	hs->restore_err = sess->engine != NULL ? 0 :
			  sess->restore_err != 0 ? sess->restore_err : CEP_ECONTEXT;
	return hs;
}

static HvClient *b_client(struct build *b, const struct conn *c)
{
	HvClient *hc = b_alloc(b, sizeof(*hc));
	const struct conn_out *o;
	const struct region *r;
	uint32_t i;
	size_t k;

	if (hc == NULL)
		return NULL;
	cudaepd__handover__client__init(hc);
	hc->id = c->id;
	hc->fd = b_keep(b, c->fd);
	hc->pid = (int32_t)c->pid;
	hc->uid = (uint32_t)c->uid;
	hc->gid = (uint32_t)c->gid;
	hc->admin = c->admin;
	hc->hello_done = c->hello_done;
	hc->name = (char *)c->name;
	hc->requests = c->requests;
	hc->connected_ns = c->connected_ns;
	hc->close_after_flush = c->close_after_flush;
	if (c->fence.slots != NULL && c->fence.page_fd >= 0) {
		hc->fence_fd = b_keep(b, c->fence.page_fd);
		hc->fence_last_seq = c->fence.last_seq;
	}
	hc->regions = b_alloc(b, sizeof(*hc->regions) * c->regions.ids.count);
	for (i = 0; hc->regions != NULL && i < c->regions.ids.count; i++) {
		HvRegion *hr = b_alloc(b, sizeof(*hr));

		if (hr == NULL)
			return NULL;
		r = c->regions.ids.items[i];
		cudaepd__handover__region__init(hr);
		hr->id = r->id;
		hr->fd = b_keep(b, r->fd);
		hr->size = r->size;
		hr->name = (char *)r->name;
		hc->regions[hc->n_regions++] = hr;
	}
	hc->sessions = b_alloc(b, sizeof(*hc->sessions) * c->sessions.ids.count);
	for (i = 0; hc->sessions != NULL && i < c->sessions.ids.count; i++) {
		HvSession *hs = b_session(b, c->sessions.ids.items[i]);

		if (hs == NULL)
			return NULL;
		hc->sessions[hc->n_sessions++] = hs;
	}
	hc->n_killed = ACCESS_KILLED_MAX;
	hc->killed = (uint64_t *)c->killed.ids;
	hc->killed_next = c->killed.next;
	hc->out = b_alloc(b, sizeof(*hc->out) * c->out_count);
	for (o = c->out_head, k = 0; hc->out != NULL && o != NULL && k < c->out_count;
	     o = o->next, k++) {
		HvOut *ho = b_alloc(b, sizeof(*ho));

		if (ho == NULL)
			return NULL;
		cudaepd__handover__out__init(ho);
		ho->data.data = (uint8_t *)o->data;
		ho->data.len = o->len;
		ho->fd = b_keep(b, o->fd);
		hc->out[hc->n_out++] = ho;
	}
	return b->oom ? NULL : hc;
}

/* The counters, and the gauges' peaks and totals, by name. */
static void b_stats(struct build *b, const struct stats *st, HvHandover *m)
{
	int i;

	m->counters = b_alloc(b, sizeof(*m->counters) * STATS_COUNTER_COUNT);
	for (i = 0; m->counters != NULL && i < STATS_COUNTER_COUNT; i++) {
		HvCounter *hc = b_alloc(b, sizeof(*hc));

		if (hc == NULL)
			return;
		cudaepd__handover__counter__init(hc);
		hc->name = (char *)stats_counter_name((enum stats_counter)i);
		hc->value = st->counters[i];
		m->counters[m->n_counters++] = hc;
	}
	m->gauges = b_alloc(b, sizeof(*m->gauges) * STATS_GAUGE_COUNT);
	for (i = 0; m->gauges != NULL && i < STATS_GAUGE_COUNT; i++) {
		HvGauge *hg = b_alloc(b, sizeof(*hg));

		if (hg == NULL)
			return;
		cudaepd__handover__gauge__init(hg);
		hg->name = (char *)stats_gauge_name((enum stats_gauge)i);
		hg->peak = st->gauges[i].peak;
		hg->total = st->gauges[i].total;
		m->gauges[m->n_gauges++] = hg;
	}
}

/* Writes every model's bytes into fd from offset *off on, and their
 * entries into m. */
static int b_models(struct build *b, int fd, HvHandover *m, uint64_t *off)
{
	const void *bytes;
	size_t i, len;
	int dir_fd, ret;

	m->models = b_alloc(b, sizeof(*m->models) * b->n_models);
	for (i = 0; m->models != NULL && i < b->n_models; i++) {
		HvModel *hm = b_alloc(b, sizeof(*hm));

		if (hm == NULL)
			break;
		engine_model_source(b->models[i], &bytes, &len, &dir_fd);
		cudaepd__handover__model__init(hm);
		ret = pwrite_all(fd, bytes, len, *off);
		if (ret != 0)
			return cep__set_error(ret, "writing a model into the handover: %s",
					      strerror(-ret));
		hm->offset = *off;
		hm->len = len;
		hm->dir_fd = dir_fd >= 0 ? b_keep(b, dir_fd) : 0;
		*off += len;
		m->models[m->n_models++] = hm;
	}
	return b->oom ? cep__set_error(CEP_ENOMEM, "no memory for the handover") : 0;
}

/* Clears FD_CLOEXEC on the fds of b and sets it on every other but 0, 1
 * and 2: the lost backend's fds (its /dev/nvidia* among them) close with
 * the old image, and with them its device memory. */
static int fds_prepare(struct build *b)
{
	struct dirent *e;
	DIR *d;
	int fd, fl;

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
		if (bsearch(&fd, b->keep, b->n_keep, sizeof(int), int_cmp) != NULL)
			fl &= ~FD_CLOEXEC;
		else
			fl |= FD_CLOEXEC;
		(void)fcntl(fd, F_SETFD, fl);
	}
	closedir(d);
	return 0;
}

int handover_exec(struct server *s, uint64_t fault_ns, uint32_t runs_failed,
		  const char *why)
{
	HvHandover m = CUDAEPD__HANDOVER__HANDOVER__INIT;
	Cudaepd__Handover__Listener l = CUDAEPD__HANDOVER__LISTENER__INIT;
	uint8_t hdr[HEADER_BYTES];
	struct build b = { 0 };
	const struct conn *c;
	uint8_t *msg = NULL;
	uint64_t off = HEADER_BYTES, len;
	uint32_t n_sessions = 0, n_regions = 0;
	char num[16];
	int fd, ret;

	if (s->argv == NULL || s->argc < 1)
		return cep__set_error(CEP_EINVAL, "no command line to re-execute cudaepd with");
	fd = memfd_create("cudaepd-handover", MFD_CLOEXEC);
	if (fd < 0)
		return cep__set_error(cep__from_errno(errno), "memfd_create: %s",
				      strerror(errno));
	m.version = HANDOVER_VERSION;
	m.fault_ns = fault_ns;
	m.runs_failed = runs_failed;
	m.why = (char *)(why != NULL ? why : "");
	m.start_ns = s->start_ns;
	m.next_client_id = s->next_client_id;
	m.next_session_id = s->sessions.next_id;
	m.next_region_id = s->regions.next_id;
	m.last_recovery_time = s->stats.gauges[STATS_GAUGE_LAST_RECOVERY].current;
	b_stats(&b, &s->stats, &m);
	if (s->listen_fd >= 0) {
		l.fd = b_keep(&b, s->listen_fd);
		l.path = s->socket_path;
		l.activated = s->activated;
		l.unlink_socket = s->unlink_socket;
		m.listener = &l;
	}
	m.clients = b_alloc(&b, sizeof(*m.clients) * s->n_conns);
	for (c = s->conns; m.clients != NULL && c != NULL; c = c->next) {
		/* Those on their way out are not handed over: their sockets
		 * close with the exec. */
		if (c->fd < 0 || c->closing || c->free_deferred)
			continue;
		m.clients[m.n_clients] = b_client(&b, c);
		if (m.clients[m.n_clients] == NULL)
			break;
		n_sessions += c->sessions.ids.count;
		n_regions += c->regions.ids.count;
		m.n_clients++;
	}
	if (b.oom) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the handover");
		goto out;
	}
	ret = b_models(&b, fd, &m, &off);
	if (ret != 0)
		goto out;
	len = cudaepd__handover__handover__get_packed_size(&m);
	msg = malloc(len ? len : 1);
	if (msg == NULL) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the handover's %llu bytes",
				     (unsigned long long)len);
		goto out;
	}
	cudaepd__handover__handover__pack(&m, msg);
	memcpy(hdr, HANDOVER_MAGIC, 8);
	memcpy(hdr + 8, &off, 8);
	memcpy(hdr + 16, &len, 8);
	ret = pwrite_all(fd, msg, len, off);
	if (ret == 0)
		ret = pwrite_all(fd, hdr, sizeof(hdr), 0);
	if (ret != 0) {
		ret = cep__set_error(ret, "writing the handover: %s", strerror(-ret));
		goto out;
	}
	if (b_keep(&b, fd) != fd || b.oom) {
		ret = cep__set_error(CEP_ENOMEM, "no memory for the handover");
		goto out;
	}
	ret = fds_prepare(&b);
	if (ret != 0)
		goto out;
	snprintf(num, sizeof(num), "%d", fd);
	if (setenv(HANDOVER_ENV, num, 1) != 0) {
		ret = cep__set_error(CEP_ENOMEM, "setenv %s: %s", HANDOVER_ENV, strerror(errno));
		goto out;
	}
	log_notice("re-executing cudaepd with its state: %zu clients, %u sessions, %u regions, "
		   "%zu model files (%llu bytes of handover)", m.n_clients, n_sessions,
		   n_regions, m.n_models, (unsigned long long)(off + len));
	fflush(NULL);
	execve("/proc/self/exe", s->argv, environ);
	ret = cep__set_error(cep__from_errno(errno), "execve /proc/self/exe: %s",
			     strerror(errno));
	unsetenv(HANDOVER_ENV);
out:
	free(msg);
	b_free(&b);
	close(fd);
	return ret;
}

/* ================================================================ new image */

/* An fd the new image inherited. */
struct inherited {
	int fd;
	bool taken;                    /* an object took it */
};

struct handover {
	HvHandover *msg;               /* parsed; owned */
	int memfd;                     /* -1: none */
	uint64_t size;                 /* its bytes */
	struct inherited *fds;         /* (n_fds) sorted by fd */
	size_t n_fds;
};

/* A model file of the handover, read once for every session of it. */
struct blob {
	bool tried;
	int err;                       /* why it cannot be had, or 0 */
	void *bytes;                   /* (len) owned */
	size_t len;
	int dir_fd;                    /* taken; -1: none */
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

/* Takes fd, which the handover names as what: it must be one the new
 * image inherited and not taken yet. Returns it, or -1 (logged) when it
 * cannot be; an fd below 3 is none and returns -1 silently. */
static int fd_take(struct handover *h, int32_t fd, const char *what)
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
static int handover_read(struct handover *h)
{
	uint8_t hdr[HEADER_BYTES], *buf;
	uint64_t off, len;
	struct stat sb;
	int ret;

	if (fstat(h->memfd, &sb) != 0 || !S_ISREG(sb.st_mode))
		return cep__set_error(CEP_EINVAL, "fd %d is not a memfd", h->memfd);
	h->size = (uint64_t)sb.st_size;
	if (h->size < HEADER_BYTES || pread_all(h->memfd, hdr, sizeof(hdr), 0) != 0 ||
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
	ret = pread_all(h->memfd, buf, len, off);
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
			   : handover_read(h);
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

void handover_free(struct handover *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n_fds; i++)
		if (!h->fds[i].taken)
			close(h->fds[i].fd);
	if (h->memfd >= 0)
		close(h->memfd);
	if (h->msg != NULL)
		cudaepd__handover__handover__free_unpacked(h->msg, NULL);
	free(h->fds);
	free(h);
}

int handover_listener(struct server *s)
{
	const Cudaepd__Handover__Listener *l;
	int fd, fl;

	if (s->handover == NULL || (l = s->handover->msg->listener) == NULL)
		return 0;
	fd = fd_take(s->handover, l->fd, "the listening socket");
	if (fd < 0)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0 || fl < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
		log_err("handover: fd %d is not a listening SOCK_SEQPACKET Unix socket; "
			"listening afresh", fd);
		close(fd);
		return 0;
	}
	s->listen_fd = fd;
	s->activated = l->activated;
	s->unlink_socket = l->unlink_socket;
	snprintf(s->socket_path, sizeof(s->socket_path), "%s", l->path ? l->path : "");
	return 1;
}

/* What a restore did, for its log line. */
struct tally {
	uint32_t clients, clients_lost;
	uint32_t sessions, sessions_lost;
	uint32_t regions, regions_lost;
	uint32_t pages_lost;
};

/* The bytes and directory of model i (1-based) of the handover, read
 * once. Returns 0 or a CEP_E* code with its message. */
static int blob_get(struct handover *h, struct blob *blobs, uint32_t i, struct blob **out)
{
	const HvModel *hm;
	struct blob *bl = NULL;
	struct stat sb;
	int ret;

	if (i == 0 || i > h->msg->n_models)
		return cep__set_error(CEP_ECONTEXT, "its model file did not come over");
	bl = &blobs[i - 1];
	hm = h->msg->models[i - 1];
	*out = bl;
	if (bl->tried)
		return bl->err != 0 ? cep__set_error(bl->err, "its model file could not be read "
						     "from the handover") : 0;
	bl->tried = true;
	bl->dir_fd = -1;
	if (hm->len == 0 || hm->len > MODEL_MAX || hm->offset > h->size ||
	    hm->len > h->size - hm->offset) {
		bl->err = cep__set_error(CEP_EINVAL, "its model file (%llu bytes at %llu) lies "
					 "outside the handover", (unsigned long long)hm->len,
					 (unsigned long long)hm->offset);
		return bl->err;
	}
	bl->bytes = malloc(hm->len);
	if (bl->bytes == NULL) {
		bl->err = cep__set_error(CEP_ENOMEM, "no memory for its model file");
		return bl->err;
	}
	ret = pread_all(h->memfd, bl->bytes, hm->len, hm->offset);
	if (ret != 0) {
		bl->err = cep__set_error(ret, "reading its model file: %s", strerror(-ret));
		return bl->err;
	}
	bl->len = hm->len;
	if (hm->dir_fd >= 3) {
		bl->dir_fd = fd_take(h, hm->dir_fd, "a model's directory");
		if (bl->dir_fd >= 0 && (fstat(bl->dir_fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
			log_warning("handover: fd %d is not a directory; a model's external "
				    "data cannot be read", bl->dir_fd);
			close(bl->dir_fd);
			bl->dir_fd = -1;
		}
	}
	return 0;
}

/* Loads sess's model again and opens its engine session on s's backend,
 * charged to (c, sess) as a LoadModel would. */
static int session_open(struct server *s, struct handover *h, struct blob *blobs,
			struct conn *c, struct session *sess, uint32_t model)
{
	struct engine_model_options mo = {
		.precision = sess->opts.precision,
		.backend = s->backend->kind,
	};
	engine_model *m = NULL;
	struct blob *bl = NULL;
	bool shared;
	int ret;

	ret = access_session_admit(s, c);
	if (ret == 0 && s->cfg.client_memory_limit != 0)
		ret = account_limit_set(s->account, (struct alloc_owner){ c->id, 0 },
					s->cfg.client_memory_limit);
	if (ret == 0)
		ret = blob_get(h, blobs, model, &bl);
	if (ret == 0)
		ret = engine_model_load_shared(s->models, bl->bytes, bl->len, bl->dir_fd, &mo,
					       &m, &shared);
	if (ret == 0)
		ret = engine_session_new(m, s->backend, &sess->opts, &sess->engine);
	engine_model_unref(m);
	return ret;
}

static void session_restore(struct server *s, struct handover *h, struct blob *blobs,
			    struct conn *c, const HvSession *hs, struct tally *t)
{
	uint64_t now = uv_hrtime();
	struct session *sess;
	int ret;

	cep__clear_error();
	ret = session_table_adopt(&c->sessions, hs->id, hs->name,
				  hs->loaded_ns <= now ? hs->loaded_ns : now, &sess);
	if (ret != 0) {
		log_warning("client %llu: a session could not be taken over: %s",
			    (unsigned long long)c->id, cep_last_error());
		t->sessions_lost++;
		return;
	}
	sess->runs = hs->runs;
	sess->run_requests = hs->run_requests;
	sess->batched_runs = hs->batched_runs;
	sess->opts.precision = (cep_precision)hs->precision;
	sess->opts.priority = (cep_priority)hs->priority;
	sess->opts.memory_limit = hs->memory_limit;
	sess->opts.account = s->account;
	sess->opts.owner = (struct alloc_owner){ c->id, sess->id };
	if (hs->precision > CEP_PRECISION_BF16 || hs->priority > CEP_PRIORITY_LOW)
		ret = cep__set_error(CEP_EINVAL, "its options (precision %u, priority %u) are "
				     "not ones cudaepd has", hs->precision, hs->priority);
	else if (hs->model == 0 && hs->restore_err < 0 && hs->restore_err > -4096)
		ret = cep__set_error(hs->restore_err, "an earlier recovery could not restore it");
	else
		ret = session_open(s, h, blobs, c, sess, hs->model);
	if (ret != 0) {
		sess->restore_err = ret < 0 ? ret : CEP_EINTERNAL;
		t->sessions_lost++;
		log_warning("client %llu session %llu '%s' could not be restored on the new "
			    "context: %s: %s", (unsigned long long)c->id,
			    (unsigned long long)sess->id, sess->name, cep_err_name(ret),
			    cep_last_error());
		return;
	}
	engine_session_stats(sess->engine, &sess->stats);
	t->sessions++;
	if (!hs->batching)
		return;
	ret = batch_group_get(&s->batches, sess->engine, sess->opts.priority, &sess->batch);
	if (ret != 0)
		log_notice("client %llu session %llu: its batch group could not be made again; "
			   "its runs go alone: %s", (unsigned long long)c->id,
			   (unsigned long long)sess->id, cep_last_error());
}

static void region_restore(struct server *s, struct handover *h, struct conn *c,
			   const HvRegion *hr, struct tally *t)
{
	struct region *r;
	int fd, ret;

	cep__clear_error();
	fd = fd_take(h, hr->fd, "a region");
	if (fd < 0) {
		ret = cep__set_error(CEP_EINVAL, "its memfd did not come over");
	} else {
		ret = access_region_admit(s, c);
		if (ret != 0)
			close(fd);
		else
			ret = region_table_adopt(&c->regions, fd, hr->size, hr->name, hr->id, &r);
	}
	if (ret == 0) {
		t->regions++;
		return;
	}
	t->regions_lost++;
	log_warning("client %llu: region %llu could not be taken over: %s",
		    (unsigned long long)c->id, (unsigned long long)hr->id, cep_last_error());
}

/* Queues the responses c's socket had not taken. Returns false when c
 * went with a failure. */
static bool out_restore(struct handover *h, struct conn *c, const HvClient *hc)
{
	size_t i;
	int fd;

	for (i = 0; i < hc->n_out; i++) {
		const HvOut *o = hc->out[i];

		fd = fd_take(h, o->fd, "an fd of a queued response");
		if (o->data.len == 0 || o->data.len > CEP_MAX_PACKET) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (c->out_count >= CONN_QUEUE_HIGH)
			c->read_paused = true;
		if (conn_queue_adopt(c, o->data.data, o->data.len, fd) != 0)
			return false;
	}
	return true;
}

static void client_restore(struct server *s, struct handover *h, struct blob *blobs,
			   const HvClient *hc, struct tally *t)
{
	uint64_t now = uv_hrtime();
	struct stat sb;
	struct conn *c;
	size_t i;
	int fd, ret;

	cep__clear_error();
	fd = fd_take(h, hc->fd, "a client's socket");
	if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode))) {
		log_warning("handover: fd %d of client %llu is not a socket",
			    fd, (unsigned long long)hc->id);
		close(fd);
		fd = -1;
	}
	ret = fd < 0 ? cep__set_error(CEP_EINVAL, "its socket did not come over")
		     : conn_adopt(s, fd, hc->id, (pid_t)hc->pid, (uid_t)hc->uid, (gid_t)hc->gid,
				  hc->admin, &c);
	if (ret != 0) {
		log_warning("client %llu could not be taken over: %s",
			    (unsigned long long)hc->id, cep_last_error());
		t->clients_lost++;
		return;
	}
	c->hello_done = hc->hello_done;
	snprintf(c->name, sizeof(c->name), "%s", hc->name != NULL ? hc->name : "");
	c->requests = hc->requests;
	if (hc->connected_ns <= now)
		c->connected_ns = hc->connected_ns;
	for (i = 0; i < hc->n_killed && i < ACCESS_KILLED_MAX; i++)
		c->killed.ids[i] = hc->killed[i];
	c->killed.next = hc->killed_next % ACCESS_KILLED_MAX;
	if (hc->fence_fd >= 3) {
		cep__clear_error();
		fd = fd_take(h, hc->fence_fd, "a fence page");
		ret = fd < 0 ? cep__set_error(CEP_EINVAL, "its memfd did not come over")
			     : fence_page_adopt(s, c, fd, hc->fence_last_seq);
		if (ret != 0) {
			t->pages_lost++;
			log_warning("client %llu: its fence page could not be taken over (%s); "
				    "its runs with a fence are refused", (unsigned long long)c->id,
				    cep_last_error());
		}
	}
	for (i = 0; i < hc->n_regions; i++)
		region_restore(s, h, c, hc->regions[i], t);
	for (i = 0; i < hc->n_sessions; i++)
		session_restore(s, h, blobs, c, hc->sessions[i], t);
	t->clients++;
	if (!out_restore(h, c, hc))
		return;
	if (hc->close_after_flush)
		conn_shutdown(c);
}

/* The counters carry on; a gauge's value is what re-creating the objects
 * made it, its peak and total carry on. */
static void stats_restore(struct stats *st, const HvHandover *m)
{
	size_t i;
	int k;

	for (i = 0; i < m->n_counters; i++)
		for (k = 0; k < STATS_COUNTER_COUNT; k++)
			if (m->counters[i]->name != NULL &&
			    strcmp(m->counters[i]->name, stats_counter_name((enum stats_counter)k)) == 0)
				st->counters[k] = m->counters[i]->value;
	for (i = 0; i < m->n_gauges; i++) {
		for (k = 0; k < STATS_GAUGE_COUNT; k++) {
			struct stats_gauge_value *g = &st->gauges[k];

			if (m->gauges[i]->name == NULL ||
			    strcmp(m->gauges[i]->name, stats_gauge_name((enum stats_gauge)k)) != 0)
				continue;
			g->total = m->gauges[i]->total;
			g->peak = m->gauges[i]->peak > g->current ? m->gauges[i]->peak : g->current;
		}
	}
}

void handover_restore(struct server *s)
{
	struct handover *h = s->handover;
	struct tally t = { 0 };
	const HvHandover *m;
	struct blob *blobs;
	uint64_t now, ns;
	size_t i;

	if (h == NULL)
		return;
	s->handover = NULL;
	m = h->msg;
	if (m->next_client_id > s->next_client_id)
		s->next_client_id = m->next_client_id;
	if (m->next_session_id > s->sessions.next_id)
		s->sessions.next_id = m->next_session_id;
	if (m->next_region_id > s->regions.next_id)
		s->regions.next_id = m->next_region_id;
	now = uv_hrtime();
	if (m->start_ns != 0 && m->start_ns <= now)
		s->start_ns = m->start_ns;
	blobs = calloc(m->n_models ? m->n_models : 1, sizeof(*blobs));
	for (i = 0; blobs != NULL && i < m->n_clients; i++)
		client_restore(s, h, blobs, m->clients[i], &t);
	if (blobs == NULL)
		log_err("handover: no memory to restore its %zu clients", m->n_clients);
	for (i = 0; blobs != NULL && i < m->n_models; i++) {
		free(blobs[i].bytes);
		if (blobs[i].tried && blobs[i].dir_fd >= 0)
			close(blobs[i].dir_fd);
	}
	free(blobs);
	stats_restore(&s->stats, m);
	now = uv_hrtime();
	ns = m->fault_ns != 0 && m->fault_ns <= now ? now - m->fault_ns : 0;
	stats_count(&s->stats, STATS_COUNTER_RECOVERIES, 1);
	stats_count(&s->stats, STATS_COUNTER_HANDOVERS, 1);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_RUNS_FAILED, m->runs_failed);
	stats_count(&s->stats, STATS_COUNTER_RECOVERY_NS, ns);
	stats_gauge_add(&s->stats, STATS_GAUGE_LAST_RECOVERY,
			(int64_t)time(NULL) - s->stats.gauges[STATS_GAUGE_LAST_RECOVERY].current);
	log_warning("recovered from the lost context in %.1f ms on the %s backend (%s) in a "
		    "new image of cudaepd: %u runs failed, %u sessions restored, %u could not "
		    "be; %u clients and %u regions taken over, %u and %u could not be, %u fence "
		    "pages lost", (double)ns / 1e6, s->backend->iface.name,
		    s->backend->iface.device, m->runs_failed, t.sessions, t.sessions_lost,
		    t.clients, t.regions, t.clients_lost, t.regions_lost, t.pages_lost);
	handover_free(h);
}
