/*
 * fuzz_request.c — libFuzzer target for cudaepd's request decoding and
 * dispatch: arbitrary bytes become a sequence of packets fed to one
 * detached connection, sometimes with real memfds (sealed or not) or other
 * fds attached, sometimes flagged as oversized or with truncated fds, as
 * recvmsg(2) would report them. Nothing may crash, every packet must get
 * exactly one well-formed Response within the client's decoding limits,
 * and once the connection is freed every gauge and fd must be back where
 * it started (LeakSanitizer checks the memory).
 *
 * Input: byte 0 says how the connection starts (bit 0: a valid Hello is
 * sent first; bit 1: the peer is root, an admin). Then records of
 *   control (1 byte), length (2 bytes, little-endian), packet bytes,
 * where control bit 0 attaches a sealed memfd of ((control >> 5) + 1) * 4
 * KiB, bit 1 an unsealed memfd, bit 2 /dev/null, bit 3 marks the packet
 * oversized and bit 4 marks its fds truncated.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudaep.pb-c.h"

#include "proto/cep_limits.h"
#include "daemon/config.h"
#include "daemon/client.h"
#include "daemon/dispatch.h"
#include "common/log.h"
#include "daemon/server.h"
#include "tests/fuzz/fuzz_check.h"


/* A fresh server per input keeps ids (client, region) the same from one
 * run of an input to the next, so the fuzzer can learn them and a crash
 * replays exactly. */
static struct server *srv;
static struct config cfg;
static int fd_baseline;
static unsigned long runs;
static uint8_t out[CEP_MAX_PACKET];

/* Open fds of the kinds this target hands the daemon: memfds and
 * /dev/null. (The sanitizer runtime opens pipes of its own now and then,
 * so counting every fd would blame the daemon for those.) */
static int fd_count(void)
{
	char path[64], target[256];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	ssize_t n;
	int count = 0;

	FUZZ_CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "/memfd:fuzz", 11) == 0 ||
		    strcmp(target, "/dev/null") == 0)
			count++;
	}
	closedir(d);
	return count;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* Small limits, so that the limit paths are reachable too. */
	config_init(&cfg);
	cfg.max_regions_per_client = 4;
	cfg.region_bytes_per_client = 64 * 1024;
	cfg.region_bytes_total = 96 * 1024;
	/* CEP_FUZZ_LOG=1 shows the daemon's log when replaying one input. */
	log_level_set(getenv("CEP_FUZZ_LOG") != NULL ? LOG_DEBUG : LOG_CRIT);
	fd_baseline = fd_count();
	return 0;
}

static int memfd(size_t size, int sealed)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, (off_t)size) == 0);
	if (sealed)
		FUZZ_CHECK(fcntl(fd, F_ADD_SEALS,
				 F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	return fd;
}

/* The response must decode and respect the client's nanopb limits. */
static void response_check(size_t len)
{
	Cudaep__V1__Response *r;

	FUZZ_CHECK(len > 0 && len <= CEP_MAX_PACKET);
	r = cudaep__v1__response__unpack(NULL, len, out);
	FUZZ_CHECK(r != NULL);
	FUZZ_CHECK(r->status != NULL);
	FUZZ_CHECK(strlen(r->status->message) < CEP_MAX_STATUS_MSG);
	FUZZ_CHECK((r->status->code == 0) ==
		   (r->body_case != CUDAEP__V1__RESPONSE__BODY__NOT_SET));
	if (r->body_case == CUDAEP__V1__RESPONSE__BODY_CLIENTS)
		FUZZ_CHECK(r->clients->n_clients <= CEP_MAX_LIST);
	if (r->body_case == CUDAEP__V1__RESPONSE__BODY_MEMORY)
		FUZZ_CHECK(r->memory->n_entries <= CEP_MAX_LIST);
	cudaep__v1__response__free_unpacked(r, NULL);
}

static void hello(struct client *c)
{
	Cudaep__V1__Request q = CUDAEP__V1__REQUEST__INIT;
	Cudaep__V1__Hello h = CUDAEP__V1__HELLO__INIT;
	uint8_t buf[64];
	size_t len, out_len;

	h.protocol_version = CEP_PROTOCOL_VERSION;
	h.client_name = (char *)"fuzz";
	q.id = 1;
	q.body_case = CUDAEP__V1__REQUEST__BODY_HELLO;
	q.hello = &h;
	len = cudaep__v1__request__pack(&q, buf);
	FUZZ_CHECK(dispatch_packet(&srv->d, c, buf, len, NULL, 0, 0, out,
				   &out_len) == 0);
	response_check(out_len);
	FUZZ_CHECK(c->hello_done);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client *c;
	size_t pos = 1, len, out_len;
	unsigned flags;
	uint8_t ctl;
	int fds[CEP_MAX_FDS], nfds, ret;

	if (size == 0)
		return 0;
	FUZZ_CHECK(server_new(&cfg, &srv) == 0);
	FUZZ_CHECK(server_client_detached(srv, (data[0] & 2) ? 0 : 40001, 40001,
				     4242, &c) == 0);
	if (data[0] & 1)
		hello(c);
	while (pos + 3 <= size) {
		ctl = data[pos];
		len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		nfds = 0;
		if (ctl & 1)
			fds[nfds++] = memfd(((size_t)(ctl >> 5) + 1) * 4096, 1);
		if (ctl & 2)
			fds[nfds++] = memfd(4096, 0);
		if ((ctl & 4) && nfds < CEP_MAX_FDS)
			fds[nfds++] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		flags = 0;
		if (ctl & 8)
			flags |= DISPATCH_OVERSIZED;
		if (ctl & 16)
			flags |= DISPATCH_FDS_TRUNCATED;
		ret = dispatch_packet(&srv->d, c, data + pos, len, fds, nfds, flags,
				      out, &out_len);
		response_check(out_len);
		pos += len;
		/* As the socket side does: nothing more is read. */
		if (ret == DISPATCH_CLOSE)
			break;
	}
	client_close(c);

	FUZZ_CHECK(srv->clients.n == 0);
	FUZZ_CHECK(srv->regions.count == 0 && srv->regions.bytes == 0);
	FUZZ_CHECK(srv->sessions.count == 0);
	FUZZ_CHECK(srv->stats.gauges[STATS_GAUGE_CONNECTIONS].current == 0);
	FUZZ_CHECK(srv->stats.gauges[STATS_GAUGE_REGIONS].current == 0);
	FUZZ_CHECK(srv->stats.gauges[STATS_GAUGE_REGION_BYTES].current == 0);
	FUZZ_CHECK(srv->stats.counters[STATS_COUNTER_FDS_RECEIVED] ==
		   srv->stats.counters[STATS_COUNTER_FDS_CLOSED]);
	FUZZ_CHECK(srv->arena.overflow == NULL);
	server_free(srv);
	srv = NULL;
	/* Reading /proc every time would slow the fuzzer down tenfold. */
	if (++runs % 512 == 0)
		FUZZ_CHECK(fd_count() == fd_baseline);
	return 0;
}
