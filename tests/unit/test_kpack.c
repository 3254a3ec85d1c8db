/*
 * test_kpack.c — the prebuilt kernel set's file (gpu/cuda/kpack.h), on
 * any machine: images written are found again byte for byte under their
 * key and nothing else; a pack that is truncated, foreign, has a bad
 * index or an entry outside the file is refused with a message naming
 * the check; an image whose bytes were changed is never returned; a file
 * others may write, or that is missing, is not used.
 */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "gpu/cuda/kpack.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cep-kpack-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kernels.pack", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(kpack, .init = setup, .fini = teardown);

/* Three images of two sources: a CUBIN for sm_80 and sm_90 of "binary",
 * PTX of "reduce", with bytes that differ in every image. */
static unsigned char bytes[3][100];
static struct kpack_image images[3];

static void write_three(void)
{
	static const struct { const char *name; uint64_t src; uint32_t arch, kind; } k[3] = {
		{ "binary", 0x1111, 90, KPACK_CUBIN },
		{ "binary", 0x1111, 80, KPACK_CUBIN },
		{ "reduce", 0x2222, 90, KPACK_PTX },
	};
	size_t i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < sizeof(bytes[i]); j++)
			bytes[i][j] = (unsigned char)(i * 31 + j * 7 + 1);
		memset(&images[i], 0, sizeof(images[i]));
		snprintf(images[i].name, sizeof(images[i].name), "%s", k[i].name);
		images[i].src_hash = k[i].src;
		images[i].opt_hash = 0xabc0 + k[i].arch;
		images[i].arch = k[i].arch;
		images[i].kind = k[i].kind;
		images[i].data = bytes[i];
		images[i].bytes = 37 + i * 20; /* not multiples of the alignment */
	}
	cr_assert_eq(kpack_write(path, images, 3, 13000), 0, "%s", cep_last_error());
}

Test(kpack, images_written_are_found_by_their_key_only)
{
	struct kpack_image got;
	struct kpack *p = NULL;
	uint32_t archs[4];
	size_t i;

	write_three();
	cr_assert_eq(kpack_open(path, &p), 0, "%s", cep_last_error());
	cr_assert_eq(kpack_count(p), 3);
	cr_assert_eq(kpack_builder(p), 13000);
	cr_assert_str_eq(kpack_path(p), path);
	for (i = 0; i < 3; i++) {
		cr_assert(kpack_find(p, images[i].src_hash, images[i].arch, images[i].kind,
				     images[i].opt_hash, &got), "image %zu", i);
		cr_assert_eq(got.bytes, images[i].bytes);
		cr_assert_eq(memcmp(got.data, bytes[i], got.bytes), 0);
		cr_assert_str_eq(got.name, images[i].name);
		cr_assert_eq((uintptr_t)got.data % 64, 0, "images are 64-aligned");
	}
	/* Another source, architecture, kind or set of options: none. */
	cr_assert_not(kpack_find(p, 0x3333, 90, KPACK_CUBIN, 0xabc0 + 90, &got));
	cr_assert_not(kpack_find(p, 0x1111, 86, KPACK_CUBIN, 0xabc0 + 86, &got));
	cr_assert_not(kpack_find(p, 0x1111, 90, KPACK_PTX, 0xabc0 + 90, &got));
	cr_assert_not(kpack_find(p, 0x1111, 90, KPACK_CUBIN, 0xdead, &got));
	cr_assert_eq(kpack_rejects(p), 0);

	cr_assert_eq(kpack_archs(p, KPACK_CUBIN, archs, 4), 2);
	cr_assert_eq(archs[0], 80);
	cr_assert_eq(archs[1], 90);
	cr_assert_eq(kpack_archs(p, KPACK_CUBIN, archs, 1), 2, "the count, whatever max is");
	cr_assert_eq(archs[0], 80);
	cr_assert_eq(kpack_archs(p, KPACK_PTX, archs, 4), 1);
	cr_assert_eq(archs[0], 90);
	kpack_close(p);
}

Test(kpack, an_empty_pack_is_valid_and_holds_nothing)
{
	struct kpack_image got;
	struct kpack *p = NULL;
	uint32_t archs[2];

	cr_assert_eq(kpack_write(path, NULL, 0, 13000), 0, "%s", cep_last_error());
	cr_assert_eq(kpack_open(path, &p), 0, "%s", cep_last_error());
	cr_assert_eq(kpack_count(p), 0);
	cr_assert_eq(kpack_archs(p, KPACK_CUBIN, archs, 2), 0);
	cr_assert_not(kpack_find(p, 1, 90, KPACK_CUBIN, 1, &got));
	kpack_close(p);
}

/* Reads the pack file into a buffer, for the tests that spoil it. */
static unsigned char *slurp(size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long len;

	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static void spit(const unsigned char *buf, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, 0644), 0);
}

/* Opens the spoilt pack: refused with CEP_EINVAL and a message that
 * contains what. */
static void refused(const char *what)
{
	struct kpack *p = (struct kpack *)1;

	cr_assert_eq(kpack_open(path, &p), CEP_EINVAL, "%s", what);
	cr_assert_null(p);
	cr_assert_not_null(strstr(cep_last_error(), what), "'%s' in: %s", what, cep_last_error());
	cr_assert_not_null(strstr(cep_last_error(), path), "names the file: %s", cep_last_error());
}

/* Offsets of the file's layout (kpack.c): the header is 64 bytes; an
 * entry is 48 (name) + 8 + 8 + 4 + 4 + 8 (offset) + 8 + 8. */
#define HDR_N_ENTRIES 12
#define HDR_INDEX_HASH 24
#define HDR_BYTES 64
#define ENTRY_BYTES 96
#define ENTRY_OFFSET 72

Test(kpack, a_spoilt_file_is_refused_naming_the_check)
{
	unsigned char *good, *bad;
	uint64_t h, off;
	size_t n;

	write_three();
	good = slurp(&n);
	bad = malloc(n);
	cr_assert_not_null(bad);

	memcpy(bad, good, n);
	memcpy(bad, "ELF\x7f....", 8);
	spit(bad, n);
	refused("no magic");

	spit(good, n - 5);
	refused("truncated");

	memcpy(bad, good, n);
	bad[HDR_BYTES + 3] ^= 0x40; /* a name in the index */
	spit(bad, n);
	refused("does not match its hash");

	/* An index that claims more entries than the file holds. */
	memcpy(bad, good, n);
	bad[HDR_N_ENTRIES + 3] = 0x7f;
	spit(bad, n);
	refused("runs past the end");

	/* An entry whose image lies past the end, with the index's hash made
	 * right again: the bounds are checked, not only the hash. */
	memcpy(bad, good, n);
	off = (uint64_t)n - 8;
	memcpy(bad + HDR_BYTES + ENTRY_BYTES + ENTRY_OFFSET, &off, 8);
	h = XXH3_64bits(bad + HDR_BYTES, 3 * ENTRY_BYTES);
	memcpy(bad + HDR_INDEX_HASH, &h, 8);
	spit(bad, n);
	refused("outside the file");

	spit((const unsigned char *)"x", 1);
	refused("no magic");
	free(bad);
	free(good);
}

Test(kpack, an_image_whose_bytes_changed_is_never_returned)
{
	struct kpack_image got;
	struct kpack *p = NULL;
	unsigned char *buf;
	uint64_t off;
	size_t n;

	write_three();
	buf = slurp(&n);
	/* The first entry's image, one byte changed. */
	memcpy(&off, buf + HDR_BYTES + ENTRY_OFFSET, 8);
	buf[off + 10] ^= 1;
	spit(buf, n);
	free(buf);
	cr_assert_eq(kpack_open(path, &p), 0, "%s", cep_last_error());
	cr_assert_not(kpack_find(p, images[0].src_hash, images[0].arch, images[0].kind,
				 images[0].opt_hash, &got));
	cr_assert_not(kpack_find(p, images[0].src_hash, images[0].arch, images[0].kind,
				 images[0].opt_hash, &got), "and not the second time either");
	cr_assert_eq(kpack_rejects(p), 2);
	cr_assert(kpack_find(p, images[1].src_hash, images[1].arch, images[1].kind,
			     images[1].opt_hash, &got), "the others still are");
	kpack_close(p);
}

Test(kpack, a_file_others_may_write_or_none_is_not_used)
{
	struct kpack *p = NULL;
	char other[160];

	write_three();
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(kpack_open(path, &p), CEP_EPERM);
	cr_assert_null(p);
	cr_assert_not_null(strstr(cep_last_error(), "writable by no one else"), "%s",
			   cep_last_error());
	snprintf(other, sizeof(other), "%s/none.pack", dir);
	cr_assert_eq(kpack_open(other, &p), CEP_ENOENT);
	cr_assert_not_null(strstr(cep_last_error(), other), "%s", cep_last_error());
	/* A directory is not a pack. */
	cr_assert_eq(kpack_open(dir, &p), CEP_EINVAL);
}

Test(kpack, an_empty_image_is_not_written)
{
	struct kpack_image img = { .name = "x", .arch = 90, .kind = KPACK_CUBIN };
	struct stat st;

	img.data = "";
	img.bytes = 0;
	cr_assert_eq(kpack_write(path, &img, 1, 13000), CEP_EINVAL);
	cr_assert_neq(stat(path, &st), 0, "nothing was left behind");
}
