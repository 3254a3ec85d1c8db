/*
 * test_reqarena.c — the per-request bump arena: alignment, reuse after a
 * reset, overflow chunks past the preallocated block and their release,
 * the hard limit, UTF-8-safe string cuts, and protobuf-c decoding through
 * it.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cudaep.pb-c.h"

#include "client/cudaep.h"
#include "daemon/reqarena.h"

Test(reqarena, alignment_and_reset)
{
	struct reqarena a;
	void *p, *q, *first;
	int i;

	cr_assert_eq(reqarena_init(&a, 4096, 8192), 0);
	first = reqarena_alloc(&a, 1);
	for (i = 1; i < 50; i++) {
		p = reqarena_alloc(&a, (size_t)i);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % _Alignof(max_align_t), 0);
	}
	reqarena_reset(&a);
	q = reqarena_alloc(&a, 1);
	cr_assert_eq(q, first, "a reset starts over in the block");
	cr_assert_null(a.overflow);
	reqarena_close(&a);
	reqarena_close(NULL);
}

Test(reqarena, overflow_chunks_and_limit)
{
	struct reqarena a;
	unsigned char *p;

	cr_assert_eq(reqarena_init(&a, 1024, 4u << 20), 0);
	cr_assert_not_null(reqarena_alloc(&a, 1000));
	p = reqarena_alloc(&a, 100);
	cr_assert_not_null(p, "spills into an overflow chunk");
	cr_assert_not_null(a.overflow);
	memset(p, 0xab, 100);
	p = reqarena_alloc(&a, 3u << 20);
	cr_assert_not_null(p);
	memset(p, 0xcd, 3u << 20);
	cr_assert_null(reqarena_alloc(&a, 2u << 20), "past the limit");
	cr_assert(a.failed);
	reqarena_reset(&a);
	cr_assert_null(a.overflow);
	cr_assert_eq(a.held, 1024);
	cr_assert(!a.failed);
	cr_assert_not_null(reqarena_alloc(&a, 2u << 20),
			   "room again after a reset");
	reqarena_close(&a);
}

Test(reqarena, bad_sizes)
{
	struct reqarena a;

	cr_assert_eq(reqarena_init(&a, 0, 10), CEP_EINVAL);
	cr_assert_eq(reqarena_init(&a, 100, 10), CEP_EINVAL);
	cr_assert_eq(reqarena_init(&a, 64, 64), 0);
	cr_assert_null(reqarena_alloc(&a, SIZE_MAX));
	cr_assert_null(reqarena_alloc(&a, SIZE_MAX - 8));
	reqarena_close(&a);
}

Test(reqarena, utf8_cuts)
{
	struct reqarena a;
	char *s;

	cr_assert_eq(reqarena_init(&a, 4096, 4096), 0);
	cr_assert_eq(reqarena_utf8_cut("hello", 10), 5);
	cr_assert_eq(reqarena_utf8_cut("hello", 3), 3);
	/* "aé€" = a, c3 a9, e2 82 ac */
	cr_assert_eq(reqarena_utf8_cut("a\xc3\xa9\xe2\x82\xac", 2), 1);
	cr_assert_eq(reqarena_utf8_cut("a\xc3\xa9\xe2\x82\xac", 3), 3);
	cr_assert_eq(reqarena_utf8_cut("a\xc3\xa9\xe2\x82\xac", 5), 3);
	cr_assert_eq(reqarena_utf8_cut("a\xc3\xa9\xe2\x82\xac", 6), 6);
	cr_assert_eq(reqarena_utf8_cut("abc", 0), 0);

	s = reqarena_strcut(&a, "a\xc3\xa9\xe2\x82\xac", 5);
	cr_assert_str_eq(s, "a\xc3\xa9");
	s = reqarena_strcut(&a, NULL, 5);
	cr_assert_str_eq(s, "");
	s = reqarena_printf(&a, 8, "client:%d", 123456);
	cr_assert_str_eq(s, "client:");
	s = reqarena_printf(&a, 5, "%s", "\xe2\x82\xac\xe2\x82\xac");
	cr_assert_str_eq(s, "\xe2\x82\xac");
	s = reqarena_printf(&a, 32, "id %d", 7);
	cr_assert_str_eq(s, "id 7");
	reqarena_close(&a);
}

Test(reqarena, decodes_protobuf_without_malloc_per_request)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT, *got;
	Cudaep__V1__Hello h = CUDAEP__V1__HELLO__INIT;
	struct reqarena a;
	uint8_t buf[128];
	size_t len;
	unsigned char *base_end;

	h.protocol_version = 1;
	h.client_name = (char *)"arena";
	q.id = 42;
	q.body_case = CUDAEP__V1__REQUEST__BODY_HELLO;
	q.hello = &h;
	len = cudaep__v1__request__pack(&q, buf);
	cr_assert_eq(reqarena_init(&a, 4096, 4096), 0);
	base_end = a.base + a.cap;
	got = cudaep__v1__request__unpack(reqarena_allocator(&a), len, buf);
	cr_assert_not_null(got);
	cr_assert_eq(got->id, 42);
	cr_assert_str_eq(got->hello->client_name, "arena");
	/* Everything decoded lies in the preallocated block. */
	cr_assert((unsigned char *)got >= a.base &&
		  (unsigned char *)got < base_end);
	cr_assert((unsigned char *)got->hello->client_name >= a.base &&
		  (unsigned char *)got->hello->client_name < base_end);
	cr_assert_null(a.overflow);
	/* Freeing through the allocator is a no-op; the reset reclaims. */
	cudaep__v1__request__free_unpacked(got, reqarena_allocator(&a));
	reqarena_reset(&a);
	cr_assert_eq(a.used, 0);
	reqarena_close(&a);
}
