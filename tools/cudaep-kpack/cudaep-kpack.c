/*
 * cudaep-kpack — builds the prebuilt set of device kernels (gpu/cuda/kpack.h)
 * at `make`: every embedded source of kernels/cuda compiled by NVRTC into
 * a CUBIN for each architecture asked for, and into PTX for the newest,
 * which the driver compiles for any later device. Needs NVRTC (the CUDA
 * toolkit), not a GPU.
 *
 *   cudaep-kpack [--arch 80,86,...] [--ptx ARCH|none] [--jobs N] [--only NAME,...]
 *                [--add] OUT
 *
 * Architectures NVRTC cannot compile for are left out with a note. An
 * image the OUT already there holds under the same key (source, headers,
 * architecture, options) is kept rather than compiled again, so editing
 * one kernel rebuilds that kernel only; with --add, the images of other
 * architectures OUT holds stay too, where their source is unchanged (so
 * `make run`, which builds for this machine's GPUs, never takes away what
 * `make` built for others). An OUT that would not change is only touched.
 * Each image done is reported on
 * stderr with its time, so a long build says what it is doing. Exit status 0, 1 when a source did not compile (its
 * log is printed), 2 for bad usage, 3 when there is no NVRTC (no CUDA
 * toolkit: the daemon then serves on the host backend or compiles later).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include <xxhash.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "gpu/cuda/cuda_kernels.h"
#include "gpu/cuda/kpack.h"
#include "gpu/cuda/nvrtc.h"

/* What `make` builds for when not told: the architectures of the GPUs
 * people serve from (Ampere to Blackwell), where the toolkit has them. */
static const int default_archs[] = { 80, 86, 89, 90, 100, 120 };

#define ARCHS_MAX 32

struct job {
	struct nvrtc_source src;
	int arch;
	bool ptx;
	uint64_t opt_hash;
	bool kept;                /* taken from the previous pack */
	void *image;
	size_t bytes;
	double seconds;
	int err;
	char why[600];
};

struct build {
	struct nvrtc_lib *lib;
	struct job *jobs;
	size_t n_jobs;
	size_t next, done;        /* under lock */
	pthread_mutex_t lock;
	double t0;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct build *b = arg;
	struct job *j;
	char label[24];
	double t;

	for (;;) {
		pthread_mutex_lock(&b->lock);
		j = b->next < b->n_jobs ? &b->jobs[b->next++] : NULL;
		pthread_mutex_unlock(&b->lock);
		if (j == NULL)
			return NULL;
		if (j->kept)
			continue;
		t = now_s();
		j->err = j->ptx ? nvrtc_compile_ptx(b->lib, &j->src, j->arch, &j->image, &j->bytes)
				: nvrtc_compile(b->lib, &j->src, j->arch, &j->image, &j->bytes);
		j->seconds = now_s() - t;
		if (j->err < 0)
			snprintf(j->why, sizeof(j->why), "%s", cep_last_error());
		snprintf(label, sizeof(label), "%s_%d", j->ptx ? "compute" : "sm", j->arch);
		pthread_mutex_lock(&b->lock);
		b->done++;
		fprintf(stderr, "  KPACK   [%3zu/%zu] %-11s %-20s %5.1f s%s\n", b->done, b->n_jobs,
			label, j->src.name, j->seconds, j->err < 0 ? "  FAILED" : "");
		pthread_mutex_unlock(&b->lock);
	}
}

/* Parses "80,86,90" into out; returns the count, -1 when malformed. */
static int parse_archs(const char *s, int *out, int max)
{
	int n = 0;
	char *end;
	long v;

	while (*s != '\0') {
		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno != 0 || v < 30 || v > 1000 || n == max)
			return -1;
		out[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			return -1;
	}
	return n;
}

static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* With --add: appends to b's jobs, as kept, the images of old whose
 * source is one of today's unchanged and whose architecture or kind no
 * job has. Returns how many. */
static size_t keep_others(struct build *b, struct kpack *old)
{
	size_t n = b->n_jobs, added = 0, i, k;
	struct kpack_image img;
	struct nvrtc_source src;

	for (i = 0; i < kpack_count(old); i++) {
		struct job *j;

		if (!kpack_get(old, i, &img) || cuda_source_get(img.name, &src) < 0 ||
		    nvrtc_source_hash(&src) != img.src_hash)
			continue;
		for (k = 0; k < n; k++)
			if (strcmp(b->jobs[k].src.name, img.name) == 0 &&
			    b->jobs[k].arch == (int)img.arch &&
			    b->jobs[k].ptx == (img.kind == KPACK_PTX))
				break;
		if (k < n)
			continue;
		j = &b->jobs[b->n_jobs];
		j->image = malloc(img.bytes);
		if (j->image == NULL)
			continue;
		memcpy(j->image, img.data, img.bytes);
		j->src = src;
		j->arch = (int)img.arch;
		j->ptx = img.kind == KPACK_PTX;
		j->opt_hash = img.opt_hash;
		j->bytes = img.bytes;
		j->kept = true;
		b->n_jobs++;
		added++;
	}
	return added;
}

static int usage(void)
{
	fprintf(stderr, "usage: cudaep-kpack [--arch 80,86,...] [--ptx ARCH|none] [--jobs N] "
		"[--only NAME,...] [--add] OUT\n");
	return 2;
}

/* Keeps those of want[] that lib compiles for; says which it drops. */
static int supported(struct nvrtc_lib *lib, const int *want, int n_want, int *out)
{
	int have[128], n_have = nvrtc_lib_archs(lib, have, 128), n = 0, i, k;

	for (i = 0; i < n_want; i++) {
		for (k = 0; k < n_have && k < 128 && have[k] != want[i]; k++)
			;
		if (n_have > 0 && (k == n_have || k == 128)) {
			fprintf(stderr, "cudaep-kpack: NVRTC %d.%d cannot compile for sm_%d; "
				"left out\n", nvrtc_lib_version(lib) / 1000,
				nvrtc_lib_version(lib) % 1000 / 10, want[i]);
			continue;
		}
		out[n++] = want[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	int want[ARCHS_MAX], archs[ARCHS_MAX], n_want = 0, n_archs, ptx = -1, jobs = 0, i, a;
	const char *out = NULL, *only = NULL;
	bool add = false;
	struct kpack_image *images = NULL;
	struct build b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t threads[64];
	char opts[256];
	int failed = 0, ret;
	size_t k, total = 0, kept = 0;
	struct kpack *old = NULL;

	memcpy(want, default_archs, sizeof(default_archs));
	n_want = (int)(sizeof(default_archs) / sizeof(default_archs[0]));
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
			n_want = parse_archs(argv[++i], want, ARCHS_MAX);
			if (n_want <= 0)
				return usage();
		} else if (strcmp(argv[i], "--ptx") == 0 && i + 1 < argc) {
			i++;
			ptx = strcmp(argv[i], "none") == 0 ? 0 : atoi(argv[i]);
			if (ptx < 0 || (ptx > 0 && ptx < 30))
				return usage();
		} else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
			jobs = atoi(argv[++i]);
			if (jobs <= 0)
				return usage();
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else if (strcmp(argv[i], "--add") == 0) {
			add = true;
		} else if (argv[i][0] == '-' || out != NULL) {
			return usage();
		} else {
			out = argv[i];
		}
	}
	if (out == NULL)
		return usage();
	if (nvrtc_lib_open(NULL, &b.lib) < 0) {
		fprintf(stderr, "cudaep-kpack: %s\n", cep_last_error());
		return 3;
	}
	n_archs = supported(b.lib, want, n_want, archs);
	if (ptx < 0) /* PTX of the newest, for the devices after it */
		for (i = 0; i < n_archs; i++)
			ptx = archs[i] > ptx ? archs[i] : ptx;
	if (jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		jobs = n > 0 ? (int)n : 1;
	}
	if (jobs > 64)
		jobs = 64;
	if (kpack_open(out, &old) < 0)
		old = NULL;
	b.jobs = calloc((size_t)cuda_source_count * (size_t)(n_archs + 1) +
			(old != NULL ? kpack_count(old) : 0), sizeof(*b.jobs));
	if (b.jobs == NULL) {
		fprintf(stderr, "cudaep-kpack: out of memory\n");
		return 1;
	}
	for (k = 0; k < (size_t)cuda_source_count; k++) {
		struct nvrtc_source src;

		if (cuda_source_get(cuda_sources[k].name, &src) < 0)
			continue; /* a header: compiled into every source */
		if (only != NULL && !listed(only, src.name))
			continue;
		for (a = 0; a <= n_archs; a++) {
			if (a == n_archs && ptx <= 0)
				break;
			b.jobs[b.n_jobs].src = src;
			b.jobs[b.n_jobs].arch = a < n_archs ? archs[a] : ptx;
			b.jobs[b.n_jobs].ptx = a == n_archs;
			b.n_jobs++;
		}
	}
	fprintf(stderr, "  KPACK   %zu images: %s for", b.n_jobs, out);
	for (a = 0; a < n_archs; a++)
		fprintf(stderr, " sm_%d", archs[a]);
	if (ptx > 0)
		fprintf(stderr, " + PTX compute_%d", ptx);
	fprintf(stderr, " with NVRTC %d.%d on %d threads\n", nvrtc_lib_version(b.lib) / 1000,
		nvrtc_lib_version(b.lib) % 1000 / 10, jobs);
	/* What the previous pack has under the same key is kept. */
	for (k = 0; k < b.n_jobs; k++) {
		struct job *j = &b.jobs[k];
		struct kpack_image prev;

		if (j->ptx)
			nvrtc_options_ptx(j->arch, opts, sizeof(opts));
		else
			nvrtc_options(j->arch, opts, sizeof(opts));
		j->opt_hash = XXH3_64bits(opts, strlen(opts));
		if (old == NULL || !kpack_find(old, nvrtc_source_hash(&j->src), (uint32_t)j->arch,
					       j->ptx ? KPACK_PTX : KPACK_CUBIN, j->opt_hash, &prev))
			continue;
		j->image = malloc(prev.bytes);
		if (j->image == NULL)
			continue;
		memcpy(j->image, prev.data, prev.bytes);
		j->bytes = prev.bytes;
		j->kept = true;
		kept++;
	}
	if (add && old != NULL)
		kept += keep_others(&b, old);
	if (old != NULL && kept == b.n_jobs && b.n_jobs == kpack_count(old)) {
		kpack_close(old);
		fprintf(stderr, "  KPACK   %s is up to date (%zu images)\n", out, b.n_jobs);
		return utime(out, NULL) == 0 ? 0 : 1;
	}
	kpack_close(old);
	if (kept > 0)
		fprintf(stderr, "  KPACK   %zu images kept from %s; %zu to compile\n", kept, out,
			b.n_jobs - kept);
	b.done = kept;
	b.t0 = now_s();
	for (i = 0; i < jobs; i++) {
		if (pthread_create(&threads[i], NULL, worker, &b) != 0) {
			jobs = i;
			break;
		}
	}
	if (jobs == 0)
		worker(&b);
	for (i = 0; i < jobs; i++)
		pthread_join(threads[i], NULL);
	images = calloc(b.n_jobs ? b.n_jobs : 1, sizeof(*images));
	if (images == NULL) {
		fprintf(stderr, "cudaep-kpack: out of memory\n");
		return 1;
	}
	for (k = 0; k < b.n_jobs; k++) {
		struct job *j = &b.jobs[k];

		if (j->err < 0) {
			fprintf(stderr, "cudaep-kpack: %s\n", j->why);
			failed = 1;
			continue;
		}
		snprintf(images[k].name, sizeof(images[k].name), "%s", j->src.name);
		images[k].src_hash = nvrtc_source_hash(&j->src);
		images[k].opt_hash = j->opt_hash;
		images[k].arch = (uint32_t)j->arch;
		images[k].kind = j->ptx ? KPACK_PTX : KPACK_CUBIN;
		images[k].data = j->image;
		images[k].bytes = j->bytes;
		total += j->bytes;
	}
	if (failed) {
		fprintf(stderr, "cudaep-kpack: %s not written: a kernel did not compile\n", out);
		return 1;
	}
	ret = kpack_write(out, images, b.n_jobs, (uint32_t)nvrtc_lib_version(b.lib));
	if (ret < 0) {
		fprintf(stderr, "cudaep-kpack: %s\n", cep_last_error());
		return 1;
	}
	fprintf(stderr, "  KPACK   wrote %s: %zu images, %.1f MiB, in %.0f s\n", out, b.n_jobs,
		(double)total / (1 << 20), now_s() - b.t0);
	for (k = 0; k < b.n_jobs; k++)
		free(b.jobs[k].image);
	free(b.jobs);
	free(images);
	nvrtc_lib_free(b.lib);
	return 0;
}
