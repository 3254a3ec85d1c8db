/*
 * fuzz_check.h — what every fuzz target of tests/fuzz shares: a check
 * that, when it fails, says where and what and aborts, so that libFuzzer
 * keeps the input as a crash.
 */
#ifndef CEP_FUZZ_CHECK_H
#define CEP_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#endif
