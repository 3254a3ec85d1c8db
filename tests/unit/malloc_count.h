/*
 * malloc_count.h — counts this thread's calls into the C allocator, for
 * the "the warm path allocates nothing" tests: including it interposes
 * malloc and friends with counting wrappers around glibc's own
 * (__libc_malloc, ...). Include it in exactly one file of a test binary.
 * Under AddressSanitizer the allocator belongs to the sanitizer, so
 * COUNT_MALLOC is 0 and `allocs` stays 0: tests then check only their
 * other counters.
 */
#ifndef CEP_TESTS_MALLOC_COUNT_H
#define CEP_TESTS_MALLOC_COUNT_H

#include <errno.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_MALLOC 0
#endif
#endif
#ifndef COUNT_MALLOC
#define COUNT_MALLOC 1
#endif

/* Calls on this thread only: the test runner's own threads may allocate. */
static _Thread_local long allocs;

#if COUNT_MALLOC
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	allocs++;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	allocs++;
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	allocs++;
	return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	allocs++;
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	allocs++;
	*out = __libc_memalign(align, n);
	return *out ? 0 : ENOMEM;
}

void free(void *p)
{
	__libc_free(p);
}
#endif

#endif
