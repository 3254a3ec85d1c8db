/*
 * reqarena.h — the per-request bump arena of cudaepd. A request is decoded
 * by protobuf-c into it and its response is built in it; after the response
 * is encoded the whole arena is reset at once. A preallocated block serves
 * every ordinary request, so the hot path never calls malloc; a pathological
 * packet (tens of thousands of tiny repeated fields) spills into overflow
 * chunks that are freed at the next reset, up to a hard limit beyond which
 * allocations fail and the request is refused as malformed.
 */
#ifndef CEPD_REQARENA_H
#define CEPD_REQARENA_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "common/error.h"

struct reqarena_chunk;

struct reqarena {
	unsigned char *base;             /* preallocated, cap bytes */
	size_t cap;                      /* bytes in base */
	unsigned char *cur;              /* next free byte of the block */
	unsigned char *end;              /* end of the current block */
	struct reqarena_chunk *overflow; /* malloc'd past base, newest first */
	size_t held;                     /* bytes in base + overflow chunks */
	size_t limit;                    /* most bytes held before failing */
	size_t peak;                     /* most bytes used in one cycle */
	size_t used;                     /* bytes handed out since the reset */
	int failed;                      /* an allocation hit the limit */
	ProtobufCAllocator allocator;    /* hands protobuf-c this arena */
};

/*
 * Initializes a in caller memory with a preallocated block of cap bytes and
 * a limit of limit bytes in all (limit >= cap). Returns 0, CEP_EINVAL for
 * bad sizes or CEP_ENOMEM. Release with reqarena_close().
 */
int reqarena_init(struct reqarena *a, size_t cap, size_t limit);

/* Frees the block and any overflow. Accepts NULL and a zeroed struct. */
void reqarena_close(struct reqarena *a);

/*
 * Returns size bytes aligned for any type, valid until the next reset, or
 * NULL when the limit would be passed (a->failed is then set). Never frees
 * anything individually.
 */
void *reqarena_alloc(struct reqarena *a, size_t size);

/* Forgets every allocation and frees the overflow chunks. */
void reqarena_reset(struct reqarena *a);

/*
 * Copies s into the arena, cut to fit a field of max_size bytes with its
 * NUL (so at most max_size - 1 bytes) on a UTF-8 character boundary.
 * Returns the copy, or NULL when out of arena. s NULL copies "".
 */
char *reqarena_strcut(struct reqarena *a, const char *s, size_t max_size);

/* printf into the arena, cut like reqarena_strcut(). NULL when out of
 * arena. */
char *reqarena_printf(struct reqarena *a, size_t max_size, const char *fmt,
		      ...) CEP_PRINTF(3, 4);

/* The protobuf-c allocator over a: its free is a no-op. */
static inline ProtobufCAllocator *reqarena_allocator(struct reqarena *a)
{
	return &a->allocator;
}

/* The length of s cut to at most max bytes without splitting a UTF-8
 * sequence. */
size_t reqarena_utf8_cut(const char *s, size_t max);

#endif
