/*
 * test_cuda_nvrtc.c — NVRTC and the kernel cache without a GPU: loading
 * NVRTC fails with a clear error; the build embedded every file of
 * kernels/cuda byte for byte; and, where NVRTC is installed (it needs no
 * device), every embedded source compiles for the H200's sm_90, a broken
 * source reports NVRTC's log, and the disk cache writes, finds, rejects
 * (corrupt, foreign, truncated) and rebuilds its files, and refuses a
 * directory others may write. Without NVRTC those skip, visibly.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/cuda/cuda_kernels.h"
#include "client/cudaep.h"
#include "gpu/cuda/nvrtc.h"

/* Criterion shows skips only when verbose, so the reason goes to stderr
 * too (not through cr_log_warn(), whose warnings make Criterion exit 1). */
#define SKIP(...)                                       \
	do {                                            \
		fprintf(stderr, "[SKIP] " __VA_ARGS__); \
		fputc('\n', stderr);                    \
		cr_skip_test(__VA_ARGS__);              \
	} while (0)

static char tmpdir[] = "/tmp/cep-nvrtc-XXXXXX";

static void tmp_setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

/* ------------------------------------------------------------ everywhere */

Test(nvrtc, a_missing_library_is_a_clear_error)
{
	struct nvrtc_lib *lib = NULL;

	cr_assert_eq(nvrtc_lib_open("libnvrtc-that-is-not-there.so.13", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert(strncmp(cep_last_error(), "no NVRTC: ", 10) == 0, "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "libnvrtc-that-is-not-there.so.13") != NULL,
		  "%s", cep_last_error());
}

Test(nvrtc, a_library_without_the_entry_points_is_a_clear_error)
{
	struct nvrtc_lib *lib = NULL;

	cr_assert_eq(nvrtc_lib_open("libm.so.6", &lib), CEP_ENOTSUP);
	cr_assert_null(lib);
	cr_assert_str_eq(cep_last_error(), "no NVRTC: libm.so.6 has no nvrtcVersion");
}

Test(nvrtc, the_default_search_names_what_it_tried)
{
	struct nvrtc_lib *lib = NULL;
	int ret;

	setenv("CUDA_HOME", "/nonexistent-cuda", 1);
	ret = nvrtc_lib_open(NULL, &lib);
	if (ret == 0) {
		cr_log_info("NVRTC %d from %s", nvrtc_lib_version(lib), nvrtc_lib_path(lib));
		cr_assert_geq(nvrtc_lib_version(lib), 11000);
		nvrtc_lib_free(lib);
		return;
	}
	cr_assert_eq(ret, CEP_ENOTSUP);
	cr_assert(strstr(cep_last_error(), "/nonexistent-cuda/lib64") != NULL, "%s",
		  cep_last_error());
	cr_assert(strstr(cep_last_error(), "/usr/local/cuda/lib64") != NULL, "%s",
		  cep_last_error());
}

/* Reads a whole file into a malloc'd, NUL-terminated buffer. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

Test(nvrtc, every_kernels_cuda_file_is_embedded)
{
	DIR *d = opendir("kernels/cuda");
	struct dirent *e;
	int files = 0;

	cr_assert_not_null(d, "run the tests from the repository root");
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name), len;
		const struct cuda_source *src;
		char name[256], path[512], *text;

		if (n > 3 && strcmp(e->d_name + n - 3, ".cu") == 0)
			snprintf(name, sizeof(name), "%.*s", (int)(n - 3), e->d_name);
		else if (n > 4 && strcmp(e->d_name + n - 4, ".cuh") == 0)
			snprintf(name, sizeof(name), "%s", e->d_name);
		else
			continue;
		files++;
		src = cuda_source_find(name);
		cr_assert_not_null(src, "kernels/cuda/%s is not embedded", e->d_name);
		snprintf(path, sizeof(path), "kernels/cuda/%s", e->d_name);
		text = slurp(path, &len);
		cr_assert_eq(src->len, len, "%s: %zu bytes embedded, %zu on disk", name, src->len,
			     len);
		cr_assert_eq(memcmp(src->text, text, len), 0, "%s differs from the file", name);
		cr_assert_eq(src->text[len], '\0');
		free(text);
	}
	closedir(d);
	cr_assert_eq(files, cuda_source_count, "%d files, %d embedded", files, cuda_source_count);
	cr_assert_null(cuda_sources[cuda_source_count].name);
	cr_assert_geq(files, 7);
}

Test(nvrtc, sources_come_with_their_headers)
{
	struct nvrtc_source src;
	int i, found = 0;

	cr_assert_eq(cuda_source_get("binary", &src), 0);
	cr_assert_str_eq(src.name, "binary");
	for (i = 0; i < src.n_headers; i++)
		found += strcmp(src.header_names[i], "common.cuh") == 0;
	cr_assert_eq(found, 1);
	cr_assert_eq(cuda_source_get("nope", &src), CEP_ENOENT);
	cr_assert_str_eq(cep_last_error(), "no kernel source 'nope' is built in");
	cr_assert_eq(cuda_source_get("common.cuh", &src), CEP_ENOENT);
}

Test(nvrtc, the_default_cache_directory)
{
	char buf[256];

	if (geteuid() == 0) {
		cr_assert_eq(nvrtc_cache_dir_default(buf, sizeof(buf)), 0);
		cr_assert_str_eq(buf, "/var/cache/cudaep");
		return;
	}
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	setenv("HOME", "/home/someone", 1);
	cr_assert_eq(nvrtc_cache_dir_default(buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/x/cache/cudaep");
	unsetenv("XDG_CACHE_HOME");
	cr_assert_eq(nvrtc_cache_dir_default(buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/home/someone/.cache/cudaep");
	unsetenv("HOME");
	cr_assert_eq(nvrtc_cache_dir_default(buf, sizeof(buf)), CEP_ENOENT);
	setenv("HOME", "/home/someone", 1);
	cr_assert_eq(nvrtc_cache_dir_default(buf, 8), CEP_ENAMETOOLONG);
}

Test(nvrtc, options_name_the_architecture)
{
	char buf[128];

	nvrtc_options(90, buf, sizeof(buf));
	cr_assert_str_eq(buf, "--gpu-architecture=sm_90 -default-device --std=c++17");
}

/* ------------------------------------------------ where NVRTC is installed */

static struct nvrtc_lib *lib;
static char lib_why[400];

/* A skip must happen in the test's body (Criterion counts a skip from a
 * suite's .init as a failed run): this records why, NVRTC_REQUIRE() skips. */
static void lib_setup(void)
{
	tmp_setup();
	lib_why[0] = '\0';
	if (nvrtc_lib_open(NULL, &lib) != 0)
		snprintf(lib_why, sizeof(lib_why), "skipped: needs NVRTC (no GPU needed); %s",
			 cep_last_error());
}

#define NVRTC_REQUIRE()                        \
	do {                                   \
		if (lib_why[0] != '\0')        \
			SKIP("%s", lib_why);   \
	} while (0)

static void lib_teardown(void)
{
	nvrtc_lib_free(lib);
	lib = NULL;
	tmp_teardown();
}

TestSuite(nvrtc_compile, .init = lib_setup, .fini = lib_teardown, .timeout = 300);

/* A CUBIN is an ELF file. */
static void assert_cubin(const void *image, size_t size)
{
	cr_assert_gt(size, 64);
	cr_assert_eq(memcmp(image, "\177ELF", 4), 0);
}

/* Compiles every embedded source whose index is part modulo SOURCE_PARTS:
 * a whole compile of them all takes minutes on a small machine, so each
 * part is a test of its own, with its own time limit. */
#define SOURCE_PARTS 4

static void compile_sources(int part)
{
	struct nvrtc_source src;
	void *image;
	size_t size;
	int i, n = 0;

	NVRTC_REQUIRE();
	for (i = part; i < cuda_source_count; i += SOURCE_PARTS) {
		if (cuda_source_get(cuda_sources[i].name, &src) != 0)
			continue; /* a header */
		cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), 0, "%s",
			     cep_last_error());
		assert_cubin(image, size);
		free(image);
		n++;
	}
	cr_assert_geq(n, 2);
}

Test(nvrtc_compile, every_embedded_source_compiles_for_sm_90_part_0) { compile_sources(0); }
Test(nvrtc_compile, every_embedded_source_compiles_for_sm_90_part_1) { compile_sources(1); }
Test(nvrtc_compile, every_embedded_source_compiles_for_sm_90_part_2) { compile_sources(2); }
Test(nvrtc_compile, every_embedded_source_compiles_for_sm_90_part_3) { compile_sources(3); }

Test(nvrtc_compile, a_broken_source_reports_the_log)
{
	static const char *text = "extern \"C\" __global__ void k(int *p) { p[0] = undeclared; }\n";
	struct nvrtc_source src = { .name = "broken", .text = text };
	void *image = NULL;
	size_t size = 0;

	NVRTC_REQUIRE();
	/* NVRTC's whole log goes to stderr too; keep the test's output clean. */
	cr_assert_not_null(freopen("/dev/null", "w", stderr));
	cr_assert_eq(nvrtc_compile(lib, &src, 90, &image, &size), CEP_EINVAL);
	cr_assert_null(image);
	cr_assert(strstr(cep_last_error(), "NVRTC could not compile broken for sm_90: ") != NULL,
		  "%s", cep_last_error());
	cr_assert(strstr(cep_last_error(), "undeclared") != NULL, "%s", cep_last_error());
}

static const char *const small_text =
	"#include \"common.cuh\"\n"
	"extern \"C\" __global__ void twice(float *p, i64 n) { CEP_FOR(i, n) p[i] *= 2.0f; }\n";

static struct nvrtc_source small_source(void)
{
	struct nvrtc_source src;

	cr_assert_eq(cuda_source_get("unary", &src), 0); /* for the headers */
	src.name = "small";
	src.text = small_text;
	return src;
}

static void cache_image(struct nvrtc_cache *c, const struct nvrtc_source *src, void **image,
			size_t *size)
{
	cr_assert_eq(nvrtc_cache_image(c, src, image, size), 0, "%s", cep_last_error());
	assert_cubin(*image, *size);
}

Test(nvrtc_compile, the_disk_cache_writes_finds_and_rebuilds)
{
	struct nvrtc_source src = small_source(), other = src;
	struct nvrtc_cache *c;
	struct nvrtc_stats st;
	char dir[256], path[1200], other_path[1200], key[64];
	void *first, *again;
	size_t n1, n2;
	struct stat sb;
	FILE *f;

	NVRTC_REQUIRE();
	snprintf(dir, sizeof(dir), "%s/made/here", tmpdir);
	cr_assert_eq(nvrtc_cache_new(lib, NULL, 90, dir, &c), 0);
	cache_image(c, &src, &first, &n1);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.compiles, 1);
	cr_assert_eq(st.disk_writes, 1);
	cr_assert_eq(st.disk_hits, 0);
	cr_assert_gt(st.compile_ns, 0);
	cr_assert_str_eq(nvrtc_cache_disk_note(c), "");
	cr_assert_eq(nvrtc_cache_path(c, &src, path, sizeof(path)), 0);
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	cr_assert_eq(stat(dir, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700);
	/* The name carries the key: source hash, architecture, options, NVRTC. */
	cr_assert(strstr(path, "/small-") != NULL, "%s", path);
	cr_assert(strstr(path, "-sm_90-") != NULL, "%s", path);
	snprintf(key, sizeof(key), "-nvrtc%d.%d.cubin", nvrtc_lib_version(lib) / 1000,
		 nvrtc_lib_version(lib) % 1000 / 10);
	cr_assert(strstr(path, key) != NULL, "%s", path);
	nvrtc_cache_free(c);

	/* A new cache (a restarted daemon) finds the same image on disk. */
	cr_assert_eq(nvrtc_cache_new(lib, NULL, 90, dir, &c), 0);
	cache_image(c, &src, &again, &n2);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.compiles, 0);
	cr_assert_eq(st.disk_hits, 1);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(first, again, n1), 0);
	free(again);

	/* A flipped byte in the image: rejected, compiled again, rewritten. */
	f = fopen(path, "r+b");
	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, -10, SEEK_END), 0);
	fputc(0x5a ^ fgetc(f), f);
	fclose(f);
	cache_image(c, &src, &again, &n2);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.disk_rejects, 1);
	cr_assert_eq(st.compiles, 1);
	cr_assert_eq(st.disk_writes, 1);
	cr_assert_eq(memcmp(first, again, n1), 0);
	free(again);
	cache_image(c, &src, &again, &n2);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.disk_hits, 2, "the rewritten file is good");
	free(again);

	/* Another source's file put in its place is foreign. */
	other.name = "small";
	other.text = "extern \"C\" __global__ void other(int *p) { p[0] = 1; }\n";
	cache_image(c, &other, &again, &n2);
	free(again);
	cr_assert_eq(nvrtc_cache_path(c, &other, other_path, sizeof(other_path)), 0);
	cr_assert_str_neq(path, other_path, "another source, another key");
	cr_assert_eq(rename(other_path, path), 0);
	cache_image(c, &src, &again, &n2);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.disk_rejects, 2);
	cr_assert_eq(memcmp(first, again, n1), 0);
	free(again);

	/* A truncated file (a crash mid-write by another tool) too. */
	cr_assert_eq(truncate(path, 20), 0);
	cache_image(c, &src, &again, &n2);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.disk_rejects, 3);
	free(again);
	free(first);
	nvrtc_cache_free(c);
}

Test(nvrtc_compile, a_directory_others_may_write_is_not_used)
{
	struct nvrtc_source src = small_source();
	struct nvrtc_cache *c;
	struct nvrtc_stats st;
	char dir[256];
	void *image;
	size_t size;

	NVRTC_REQUIRE();
	snprintf(dir, sizeof(dir), "%s/open", tmpdir);
	cr_assert_eq(mkdir(dir, 0777), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_assert_eq(nvrtc_cache_new(lib, NULL, 90, dir, &c), 0);
	cache_image(c, &src, &image, &size);
	free(image);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.compiles, 1);
	cr_assert_eq(st.disk_writes, 0);
	cr_assert(strstr(nvrtc_cache_disk_note(c), "writable by no one else") != NULL, "%s",
		  nvrtc_cache_disk_note(c));
	nvrtc_cache_free(c);
}

Test(nvrtc_compile, without_a_directory_images_stay_in_memory_only)
{
	struct nvrtc_source src = small_source();
	struct nvrtc_cache *c;
	struct nvrtc_stats st;
	CUfunction fn;
	char path[64];
	void *image;
	size_t size;

	NVRTC_REQUIRE();
	cr_assert_eq(nvrtc_cache_new(lib, NULL, 90, "", &c), 0);
	cache_image(c, &src, &image, &size);
	free(image);
	nvrtc_cache_stats(c, &st);
	cr_assert_eq(st.disk_writes + st.disk_errors, 0);
	cr_assert_eq(nvrtc_cache_path(c, &src, path, sizeof(path)), CEP_ENOENT);
	cr_assert_eq(nvrtc_cache_function(c, &src, "twice", &fn), CEP_EINVAL);
	nvrtc_cache_free(c);
	cr_assert_eq(nvrtc_cache_new(lib, NULL, 90, "relative/dir", &c), CEP_EINVAL);
}
