/*
 * fdio.h — writing a whole buffer to a file descriptor, across short
 * writes and interrupted calls.
 */
#ifndef CEP_COMMON_FDIO_H
#define CEP_COMMON_FDIO_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Writes the n bytes at p to fd. Returns 0, or -1 with errno set (a
 * write that wrote nothing reports EIO). */
static inline int cep_write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	ssize_t w;

	while (n > 0) {
		w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

#endif
