/*
 * cudaep-run-args.c — what the option parsers of cudaep-run share: the
 * message of a usage error and the parse of an unsigned count. Below both
 * parsers (cudaep-run.c's and the generation's, cudaep-run-gen.c), which
 * call each other only downwards.
 */
#include "tools/cudaep-run/cudaep-run.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

int run_usage_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("cudaep-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'cudaep-run --help'.\n", stderr);
	return RUN_EXIT_USAGE;
}

/* An unsigned decimal from lo to hi into *out; false for anything else. */
bool run_parse_ulong(const char *s, unsigned long long lo,
		     unsigned long long hi, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}
