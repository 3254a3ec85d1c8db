/*
 * bench_util.h — what the C benchmarks under bench/ share: a monotonic
 * clock, sorting latencies, and starting a private cudaepd. Header-only
 * and static: each benchmark is one .c file linked with the client
 * library alone.
 */
#ifndef CEP_BENCH_UTIL_H
#define CEP_BENCH_UTIL_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "client/cudaep.h"

#define BENCH_UNUSED __attribute__((unused))

/* CLOCK_MONOTONIC in nanoseconds. */
static BENCH_UNUSED uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* qsort() order of uint64_t values. */
static BENCH_UNUSED int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Starts cudaepd ($CUDAEP_BUILD_DIR/bin, else build/bin) on dir/cudaep.sock
 * (written into sock, len bytes), logging warnings only, on backend (NULL:
 * the daemon's default), and waits until a client can connect (up to 10
 * s). Returns its pid, or -1 (the daemon killed) when it did not come up.
 */
static BENCH_UNUSED pid_t bench_daemon_start(char *sock, size_t len, const char *dir,
					     const char *backend)
{
	const char *bd = getenv("CUDAEP_BUILD_DIR");
	char bin[512];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/bin/cudaepd", bd && *bd ? bd : "build");
	snprintf(sock, len, "%s/cudaep.sock", dir);
	pid = fork();
	if (pid == 0) {
		if (backend != NULL)
			execl(bin, "cudaepd", "--socket", sock, "--backend", backend,
			      "--log-level", "warning", (char *)NULL);
		else
			execl(bin, "cudaepd", "--socket", sock, "--log-level", "warning",
			      (char *)NULL);
		perror(bin);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 1000; i++) {
		cep_client *c = NULL;

		if (cep_connect(sock, "bench-probe", &c) == 0) {
			cep_close(c);
			return pid;
		}
		usleep(10000);
	}
	if (pid > 0)
		kill(pid, SIGKILL);
	return -1;
}

#endif
