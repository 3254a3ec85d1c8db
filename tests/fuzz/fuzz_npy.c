/*
 * fuzz_npy.c — libFuzzer target for cudaep-run's .npy files
 * (tools/cudaep-run/cudaep-run-npy.c): arbitrary bytes are a file given
 * to run_npy_read(), as `cudaep-run --input NAME=FILE` would read it (a
 * memfd, opened through its /proc/self/fd path).
 *
 * What must hold: no crash, leak or undefined behaviour; a failure is one
 * of the codes cudaep-run.h documents, leaves the array empty and names
 * the file in cep_last_error(); an array that reads is consistent (rank,
 * shape, bytes), can be checksummed, and goes round: run_npy_write() must
 * take it, reading what it wrote must give the same array, and writing
 * that again the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "tools/cudaep-run/cudaep-run.h"
#include "tests/fuzz/fuzz_check.h"


/* The input, the first write and the second write. */
static int fds[3];
static char paths[3][64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	for (int i = 0; i < 3; i++) {
		fds[i] = memfd_create("fuzz-npy", MFD_CLOEXEC);
		FUZZ_CHECK(fds[i] >= 0);
		snprintf(paths[i], sizeof(paths[i]), "/proc/self/fd/%d", fds[i]);
	}
	return 0;
}

static bool array_empty(const struct run_array *a)
{
	static const struct run_array zero;

	return memcmp(a, &zero, sizeof(zero)) == 0;
}

/* Reads the file at paths[i], which must be a .npy file: the array, or
 * the error. */
static int npy_read(struct run_array *a, int i)
{
	int ret = run_npy_read(a, paths[i]);

	if (ret != 0) {
		FUZZ_CHECK(ret == CEP_EBADMSG || ret == CEP_ENOTSUP ||
			   ret == CEP_ESHAPE || ret == CEP_ENOMEM);
		FUZZ_CHECK(array_empty(a));
		FUZZ_CHECK(strstr(cep_last_error(), paths[i]) != NULL);
		return ret;
	}
	FUZZ_CHECK(a->rank >= 0 && a->rank <= CEP_MAX_RANK);
	for (int d = 0; d < a->rank; d++)
		FUZZ_CHECK(a->shape[d] >= 0);
	FUZZ_CHECK(a->bytes == run_shape_numel(a->shape, a->rank) *
				       cep_dtype_size(a->dtype));
	FUZZ_CHECK((a->data == NULL) == (a->bytes == 0));
	return 0;
}

static bool array_equal(const struct run_array *a, const struct run_array *b)
{
	return a->dtype == b->dtype && a->rank == b->rank &&
	       memcmp(a->shape, b->shape, sizeof(a->shape[0]) * (size_t)a->rank) == 0 &&
	       a->bytes == b->bytes &&
	       (a->bytes == 0 || memcmp(a->data, b->data, a->bytes) == 0);
}

/* The whole of memfd i into a heap buffer (*len bytes). */
static unsigned char *file_bytes(int i, size_t *len)
{
	struct stat st;
	unsigned char *buf;

	FUZZ_CHECK(fstat(fds[i], &st) == 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len ? *len : 1);
	FUZZ_CHECK(buf != NULL);
	FUZZ_CHECK(pread(fds[i], buf, *len, 0) == (ssize_t)*len);
	return buf;
}

static void npy_write(const struct run_array *a, int i)
{
	int ret = run_npy_write(paths[i], a->dtype, a->rank, a->shape, a->data,
				a->bytes);

	if (ret != 0)
		fprintf(stderr, "run_npy_write: %s\n", cep_last_error());
	FUZZ_CHECK(ret == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_array a, b;
	unsigned char *first, *second;
	size_t first_len, second_len;
	double sum, abs_sum;

	FUZZ_CHECK(ftruncate(fds[0], 0) == 0);
	FUZZ_CHECK(pwrite(fds[0], data, size, 0) == (ssize_t)size);
	if (npy_read(&a, 0) != 0)
		return 0;
	FUZZ_CHECK(run_elem_checksum(a.data, a.dtype,
				     run_shape_numel(a.shape, a.rank), &sum,
				     &abs_sum) == 0);

	npy_write(&a, 1);
	FUZZ_CHECK(npy_read(&b, 1) == 0);
	FUZZ_CHECK(array_equal(&a, &b));
	npy_write(&b, 2);
	first = file_bytes(1, &first_len);
	second = file_bytes(2, &second_len);
	FUZZ_CHECK(first_len == second_len &&
		   memcmp(first, second, first_len) == 0);

	free(first);
	free(second);
	run_array_close(&a);
	run_array_close(&b);
	return 0;
}
