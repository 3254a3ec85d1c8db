/*
 * reqarena.c — bump allocation for one request's decode and reply (see
 * reqarena.h). Blocks are carved front to back; alignment is that of
 * max_align_t so protobuf-c may place any message struct in them.
 */
#include "daemon/reqarena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"

#define ARENA_ALIGN     _Alignof(max_align_t)
#define OVERFLOW_CHUNK  (256 * 1024)

struct reqarena_chunk {
	struct reqarena_chunk *next;
	size_t size;          /* bytes in data */
	max_align_t data[];   /* max_align_t keeps data aligned */
};

static void *arena_pb_alloc(void *data, size_t size)
{
	return reqarena_alloc(data, size);
}

static void arena_pb_free(void *data, void *ptr)
{
	/* Everything goes at the next reset. */
}

int reqarena_init(struct reqarena *a, size_t cap, size_t limit)
{
	memset(a, 0, sizeof(*a));
	if (cap == 0 || limit < cap)
		return CEP_EINVAL;
	a->base = malloc(cap);
	if (a->base == NULL)
		return CEP_ENOMEM;
	a->cap = cap;
	a->cur = a->base;
	a->end = a->base + cap;
	a->held = cap;
	a->limit = limit;
	a->allocator.alloc = arena_pb_alloc;
	a->allocator.free = arena_pb_free;
	a->allocator.allocator_data = a;
	return 0;
}

static void arena_free_overflow(struct reqarena *a)
{
	struct reqarena_chunk *c, *next;

	for (c = a->overflow; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->overflow = NULL;
	a->held = a->cap;
}

void reqarena_close(struct reqarena *a)
{
	if (a == NULL)
		return;
	arena_free_overflow(a);
	free(a->base);
	memset(a, 0, sizeof(*a));
}

void reqarena_reset(struct reqarena *a)
{
	arena_free_overflow(a);
	a->cur = a->base;
	a->end = a->base + a->cap;
	a->used = 0;
	a->failed = 0;
}

static void *arena_grow(struct reqarena *a, size_t size)
{
	struct reqarena_chunk *c;
	size_t want = size > OVERFLOW_CHUNK ? size : OVERFLOW_CHUNK;

	if (want > a->limit - a->held)
		want = size;
	if (want > a->limit - a->held || want > SIZE_MAX - sizeof(*c)) {
		a->failed = 1;
		return NULL;
	}
	c = malloc(sizeof(*c) + want);
	if (c == NULL) {
		a->failed = 1;
		return NULL;
	}
	c->size = want;
	c->next = a->overflow;
	a->overflow = c;
	a->held += want;
	a->cur = (unsigned char *)c->data + size;
	a->end = (unsigned char *)c->data + want;
	return c->data;
}

void *reqarena_alloc(struct reqarena *a, size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if (size > SIZE_MAX - ARENA_ALIGN) {
		a->failed = 1;
		return NULL;
	}
	size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (size <= (size_t)(a->end - a->cur)) {
		p = a->cur;
		a->cur += size;
	} else {
		p = arena_grow(a, size);
		if (p == NULL)
			return NULL;
	}
	a->used += size;
	if (a->used > a->peak)
		a->peak = a->used;
	return p;
}

size_t reqarena_utf8_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return n;
	n = max;
	/* Back off continuation bytes (10xxxxxx) so the cut falls before the
	 * lead byte of the character it would have split. */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

char *reqarena_strcut(struct reqarena *a, const char *s, size_t max_size)
{
	size_t n;
	char *p;

	if (s == NULL)
		s = "";
	n = max_size > 0 ? reqarena_utf8_cut(s, max_size - 1) : 0;
	p = reqarena_alloc(a, n + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *reqarena_printf(struct reqarena *a, size_t max_size, const char *fmt,
		      ...)
{
	char *p;
	va_list ap;
	int n;

	if (max_size == 0)
		return NULL;
	/* One byte more than will be kept, so that the cut can see whether
	 * the last kept byte starts a character that goes on. */
	p = reqarena_alloc(a, max_size + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	n = vsnprintf(p, max_size + 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p[reqarena_utf8_cut(p, max_size - 1)] = '\0';
	return p;
}
