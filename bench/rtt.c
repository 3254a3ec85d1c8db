/*
 * rtt.c — the no-op request round trip through cudaepd: one Ping request
 * and its Response over the Unix socket, as cep_ping() does it, timed per
 * request with CLOCK_MONOTONIC. Runs 1 and several client processes at once
 * and prints p50/p99 latency and the aggregate request rate.
 *
 *   build/bench/rtt [--socket PATH] [--requests N] [--clients 1,4,8]
 *
 * Without --socket it starts its own cudaepd (from $CUDAEP_BUILD_DIR/bin or
 * build/bin) on a temporary socket and stops it afterwards.
 */
#include "bench/bench_util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 1000

/* One client process: WARMUP untimed pings, then n timed ones into lat. */
static int client(const char *sock, uint64_t *lat, size_t n)
{
	cep_client *c = NULL;
	int rc = cep_connect(sock, "rtt", &c);

	if (rc != 0) {
		fprintf(stderr, "rtt: connect: %s: %s\n", cep_strerror(rc),
			cep_last_error());
		return 1;
	}
	for (int i = 0; i < WARMUP; i++)
		if (cep_ping(c) != 0)
			return 2;
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		if (cep_ping(c) != 0)
			return 3;
		lat[i] = now_ns() - t0;
	}
	cep_close(c);
	return 0;
}

static int run(const char *sock, int nclients, size_t n)
{
	size_t total = (size_t)nclients * n;
	uint64_t *lat = mmap(NULL, total * sizeof(uint64_t),
			     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			     -1, 0);
	uint64_t t0, t1;
	int failed = 0;

	if (lat == MAP_FAILED)
		return -1;
	t0 = now_ns();
	for (int i = 0; i < nclients; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(client(sock, lat + (size_t)i * n, n));
	}
	for (int i = 0; i < nclients; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	t1 = now_ns();
	if (failed) {
		fprintf(stderr, "rtt: %d client(s) failed\n", failed);
		munmap(lat, total * sizeof(uint64_t));
		return -1;
	}
	qsort(lat, total, sizeof(uint64_t), cmp_u64);
	printf("%7d  %10zu  %9.1f  %9.1f  %9.1f  %12.0f\n", nclients, total,
	       lat[total / 2] / 1e3, lat[total * 99 / 100] / 1e3,
	       lat[total - 1] / 1e3,
	       /* wall time includes the warm-up and connects: a lower bound */
	       (double)total / ((double)(t1 - t0) / 1e9));
	munmap(lat, total * sizeof(uint64_t));
	return 0;
}

int main(int argc, char **argv)
{
	char sock[108] = "", dir[] = "/tmp/cep-bench-XXXXXX";
	char clients[64] = "1,2,4,8";
	size_t n = 100000;
	pid_t daemon = 0;
	struct utsname un;
	int ret = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
			snprintf(sock, sizeof(sock), "%s", argv[++i]);
		else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
			snprintf(clients, sizeof(clients), "%s", argv[++i]);
		else {
			fprintf(stderr,
				"usage: rtt [--socket PATH] [--requests N] [--clients 1,2,4,8]\n");
			return 2;
		}
	}
	if (n == 0)
		n = 1;
	if (sock[0] == '\0') {
		daemon = -1;
		if (mkdtemp(dir) != NULL)
			daemon = bench_daemon_start(sock, sizeof(sock), dir, NULL);
		if (daemon < 0) {
			fprintf(stderr, "rtt: could not start cudaepd\n");
			return 1;
		}
	}
	uname(&un);
	printf("# rtt: no-op Ping round trips through cudaepd at %s\n", sock);
	printf("# %zu timed requests per client after %d warm-up, one request in flight per client,\n"
	       "# each client a separate process; latency per request from CLOCK_MONOTONIC;\n"
	       "# req/s = all timed requests / wall time of the whole round (incl. connect, warm-up).\n",
	       n, WARMUP);
	printf("# host %s, %s %s, %ld CPUs online\n", un.nodename, un.sysname,
	       un.release, sysconf(_SC_NPROCESSORS_ONLN));
	printf("clients    requests   p50 (us)   p99 (us)   max (us)         req/s\n");
	for (char *tok = strtok(clients, ","); tok; tok = strtok(NULL, ",")) {
		int k = atoi(tok);

		if (k > 0 && run(sock, k, n) != 0)
			ret = 1;
	}
	if (daemon > 0) {
		int st;

		kill(daemon, SIGTERM);
		waitpid(daemon, &st, 0);
		rmdir(dir);
	}
	return ret;
}
