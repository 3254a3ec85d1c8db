/*
 * fuzz_reply.c — libFuzzer target for libcudaep-client's handling of what
 * cudaepd sends: arbitrary bytes become the packets of a daemon on the far
 * end of a socketpair, queued before the client starts (then that end is
 * shut for writing, or closed, so the client meets end-of-file once they
 * are read),
 * and the library's real calls read them: the Hello reply and its fence
 * page, Ping, RegisterRegion, LoadModel with its tensor lists (the nanopb
 * callbacks of session.c), a raw SessionInfo and Stats call, Runs filling
 * the caller's cep_tensors (with and without a fence; CEP_ENOSPC), fences
 * completed and failed on a page this target writes, errors of runs in
 * flight arriving unasked, Unload and ReleaseRegion. Nothing may crash or
 * leak (LeakSanitizer, and this process's memfd and /dev/null fds and
 * mappings are counted), every return is 0 or a negative code, and what
 * the library hands the caller (outputs, tensor infos, strings) keeps to
 * its documented bounds.
 *
 * Input: byte 0 says how the daemon starts: bit 0, a fence page (a memfd
 * of CEP_FENCE_SLOTS slots) is made; bit 1, it is made too short to use;
 * bit 2, the daemon closes its end once the packets are queued (as one
 * that refuses a connection does), so that every request meets a closed
 * socket and the library reads why.
 * With bit 0, 4 pairs (seq, status) follow, each one byte (status
 * signed), written into slots 1 to 4 before anything runs, so the runs
 * with fences 1 to 4 find them completed (seq >= theirs) or not. Then
 * records of
 *   control (1 byte), length (2 bytes, little-endian), packet bytes,
 * each one packet the daemon sends, in order; control bit 0 attaches
 * /dev/null, bit 1 the fence page (a new fd of it each time), bit 2 pads
 * the packet with zeros past CEP_MAX_PACKET. A client's request ids are
 * 1 (Hello), 2, 3, ... in the order of the calls below (the seeds:
 * tests/fuzz/make_reply_corpus.py).
 *
 * Replaying: CEP_FUZZ_LOG=1 prints each call's result and counts the fds
 * after the input; CEP_FUZZ_FDS=1 counts them after every input while
 * fuzzing (else after every 256th).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/internal.h"
#include "proto/cep_fence.h"
#include "tests/fuzz/fuzz_check.h"


#define PAGE_BYTES (CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES)
#define MAX_PACKETS 64 /* packets queued per input */
#define ROOM 4096      /* bytes of each output slice */

static int fd_baseline, maps_baseline;
static unsigned long runs;
static bool trace;
static uint8_t pad[CEP_MAX_PACKET + 64];
/* What page_make() wrote into slots 1 to 4 (slot 0 unused); zeros when
 * there is no usable page. */
static uint64_t slot_seq[5];
static int32_t slot_status[5];
static cudaep_v1_Request *req;
static cudaep_v1_Response *resp;

/* Open fds of the kinds this target makes: memfds and /dev/null (the
 * sanitizer runtime opens pipes of its own now and then), each printed
 * when print. */
static int fd_list(bool print)
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
		if (strncmp(target, "/memfd:", 7) != 0 &&
		    strcmp(target, "/dev/null") != 0)
			continue;
		count++;
		if (print)
			fprintf(stderr, "fd %s: %s\n", e->d_name, target);
	}
	closedir(d);
	return count;
}

/* Mappings of memfds: the fence page and the regions. */
static int maps_count(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int count = 0;

	FUZZ_CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "/memfd:") != NULL)
			count++;
	fclose(f);
	return count;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	req = calloc(1, sizeof(*req));
	resp = calloc(1, sizeof(*resp));
	FUZZ_CHECK(req != NULL && resp != NULL);
	/* CEP_FUZZ_LOG=1 prints each call's result when replaying one input. */
	trace = getenv("CEP_FUZZ_LOG") != NULL;
	fd_baseline = fd_list(false);
	maps_baseline = maps_count();
	return 0;
}

/* ---------------------------------------------------------- the daemon */

/* A fence page of bytes bytes with slots 1 to 4 as the input says; its fd,
 * or -1 when the input holds no page. */
static int page_make(const uint8_t *data, size_t size, size_t *pos, size_t bytes)
{
	struct cep_fence_slot *slots;
	int fd;

	memset(slot_seq, 0, sizeof(slot_seq));
	memset(slot_status, 0, sizeof(slot_status));
	if (*pos + 8 > size)
		return -1;
	fd = memfd_create("fuzz-page", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, (off_t)bytes) == 0);
	if (bytes >= PAGE_BYTES) {
		slots = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		FUZZ_CHECK(slots != MAP_FAILED);
		for (int i = 1; i <= 4; i++) {
			slot_seq[i] = data[*pos];
			slot_status[i] = (int8_t)data[*pos + 1];
			slots[i].seq = slot_seq[i];
			slots[i].status = slot_status[i];
			*pos += 2;
		}
		munmap(slots, PAGE_BYTES);
	} else {
		*pos += 8;
	}
	return fd;
}

/* Sends len bytes with the fd attached (-1: none); false when the socket
 * is full (the rest of the input is then left out). */
static bool packet_send(int sock, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len;
}

/* Queues the input's packets on sock. */
static void daemon_queue(int sock, const uint8_t *data, size_t size, size_t pos,
			 int page_fd)
{
	size_t len;
	uint8_t ctl;
	bool sent;
	int fd;

	for (int n = 0; n < MAX_PACKETS && pos + 3 <= size; n++) {
		ctl = data[pos];
		len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		fd = -1;
		if (ctl & 1)
			fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		else if ((ctl & 2) && page_fd >= 0)
			fd = dup(page_fd);
		if (ctl & 4) {
			memset(pad, 0, sizeof(pad));
			memcpy(pad, data + pos, len);
			sent = packet_send(sock, pad, CEP_MAX_PACKET + 1, fd);
		} else {
			sent = packet_send(sock, data + pos, len, fd);
		}
		if (fd >= 0)
			close(fd);
		if (!sent)
			break;
		pos += len;
	}
}

/* ---------------------------------------------------------- the client */

/* The result of the call named what, which returned ret. */
static int check(const char *what, int ret)
{
	if (trace)
		fprintf(stderr, "%-28s %-12s %s\n", what, ret ? cep_err_name(ret) : "0",
			ret ? cep_last_error() : "");
	FUZZ_CHECK(ret <= 0);
	if (ret != 0)
		FUZZ_CHECK(strlen(cep_last_error()) < 4096);
	return ret;
}

#define CHECK(call) check(#call, (call))

static void check_info(const cep_tensor_info *t)
{
	FUZZ_CHECK(t != NULL);
	FUZZ_CHECK(memchr(t->name, '\0', sizeof(t->name)) != NULL);
	FUZZ_CHECK(t->rank >= 0 && t->rank <= CEP_MAX_RANK);
	for (int i = 0; i < t->rank; i++) {
		FUZZ_CHECK(t->dims[i] >= -1);
		FUZZ_CHECK(memchr(t->dim_params[i], '\0', sizeof(t->dim_params[i])) != NULL);
	}
}

static void check_session(const cep_session *s)
{
	int n_in = cep_session_input_count(s), n_out = cep_session_output_count(s);

	FUZZ_CHECK(n_in >= 0 && n_out >= 0);
	for (int i = 0; i < n_in; i++)
		check_info(cep_session_input(s, i));
	for (int i = 0; i < n_out; i++)
		check_info(cep_session_output(s, i));
	FUZZ_CHECK(cep_session_input(s, n_in) == NULL);
	FUZZ_CHECK(cep_session_output(s, n_out) == NULL);
}

static void outputs_init(cep_tensor *out, cep_region *r)
{
	out[0] = (cep_tensor){.name = "y", .region = r, .offset = 4096, .bytes = ROOM};
	out[1] = (cep_tensor){.name = "z", .region = r, .offset = 8192, .bytes = ROOM};
}

/* What a run left in outputs: after a success, what was written within
 * each one's room; after CEP_ENOSPC, the room needed (or nothing); after
 * any other failure, nothing touched. */
static void check_outputs(int ret, const cep_tensor *out, size_t n)
{
	cep_tensor fresh[2];

	outputs_init(fresh, out[0].region);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(out[i].rank >= 0 && out[i].rank <= CEP_MAX_RANK);
		FUZZ_CHECK(out[i].name == fresh[i].name && out[i].region == fresh[i].region &&
			   out[i].offset == fresh[i].offset);
		if (ret == 0)
			FUZZ_CHECK(out[i].bytes <= ROOM);
		else if (ret != CEP_ENOSPC)
			FUZZ_CHECK(memcmp(&out[i], &fresh[i], sizeof(fresh[i])) == 0);
	}
}

/* A raw call of body tag (an empty body, or session id for SessionInfo),
 * as cudaepctl makes them, into a response without callbacks. */
static void raw_call(cep_client *c, const char *what, pb_size_t tag,
		     uint64_t session_id)
{
	memset(req, 0, sizeof(*req));
	req->which_body = tag;
	req->body.session_info.session_id = session_id;
	check(what, cep__call(c, req, NULL, 0, resp));
}

/* Waits for f (poll: cep_fence_poll(), else a microsecond at most) and
 * checks the result against the slot this target wrote: a fence completes
 * with 0 exactly when its slot shows it done with status 0. */
static void fence_check_wait(cep_fence *f, bool poll)
{
	uint64_t seq = f->seq;
	bool done, ok;
	int ret;

	ret = poll ? CHECK(cep_fence_poll(f)) : CHECK(cep_fence_wait(f, 1000));
	FUZZ_CHECK((f->client == NULL) == (ret != CEP_ETIMEDOUT && ret != CEP_EAGAIN));
	if (seq == 0) {
		FUZZ_CHECK(ret == 0);
		return;
	}
	FUZZ_CHECK(seq < 5);
	done = slot_seq[seq] >= seq;
	ok = done && slot_status[seq] == 0;
	FUZZ_CHECK((ret == 0) == ok);
	if (!done)
		FUZZ_CHECK(ret == CEP_ETIMEDOUT || ret == CEP_EAGAIN || ret == CEP_ECONNRESET);
}

/* The fenced runs: two submitted, then waited for in two ways. */
static void runs_fenced(cep_session *s, const cep_tensor *in, cep_region *r)
{
	cep_tensor out[2][2];
	cep_fence f[2];
	int ret;

	for (int i = 0; i < 2; i++) {
		outputs_init(out[i], r);
		ret = CHECK(cep_run_submit(s, in, 1, out[i], 2, &f[i]));
		check_outputs(ret, out[i], 2);
		if (ret != 0)
			FUZZ_CHECK(f[i].client == NULL);
	}
	/* A wait spins a microsecond at most: a slot the input left
	 * unfinished times out and stays in flight. */
	if (f[0].client != NULL)
		fence_check_wait(&f[0], false);
	if (f[1].client != NULL)
		fence_check_wait(&f[1], true);
	for (int i = 0; i < 2; i++)
		if (f[i].client != NULL)
			fence_check_wait(&f[i], false);
}

static void client_script(int sock, bool paged)
{
	static const cep_session_options opts = {.name = "m"};
	cep_tensor in, out[2];
	cep_client *c = NULL;
	cep_region *r = NULL;
	cep_session *s = NULL;
	cep_fence f;
	int model_fd, ret;

	ret = CHECK(cep__connect_fd(sock, "fuzz", &c));
	if (ret != 0) {
		FUZZ_CHECK(c == NULL);
		return;
	}
	FUZZ_CHECK(strlen(cep_client_backend(c)) < 16);
	FUZZ_CHECK(strlen(cep_client_device(c)) < CEP_MAX_DEVICE_NAME);
	CHECK(cep_ping(c));
	CHECK(cep_region_new(c, 16384, &r));
	model_fd = memfd_create("fuzz-model", MFD_CLOEXEC);
	FUZZ_CHECK(model_fd >= 0);
	ret = CHECK(cep_session_load_fd(c, model_fd, -1, &opts, &s));
	close(model_fd);
	FUZZ_CHECK((ret == 0) == (s != NULL));
	if (s != NULL)
		check_session(s);
	raw_call(c, "cep__call(SessionInfo)", cudaep_v1_Request_session_info_tag, cep_session_id(s));
	if (s != NULL && r != NULL) {
		in = (cep_tensor){.name = "x", .region = r, .bytes = 64,
				  .dtype = CEP_DTYPE_FLOAT32, .rank = 2, .shape = {4, 4}};
		if (!paged) {
			/* cep_run() waits as long as it takes: only where
			 * nothing can keep it waiting. */
			outputs_init(out, r);
			check_outputs(CHECK(cep_run(s, &in, 1, out, 2)), out, 2);
			outputs_init(out, r);
			ret = CHECK(cep_run_submit(s, &in, 1, out, 2, &f));
			check_outputs(ret, out, 2);
			if (ret == 0) {
				FUZZ_CHECK(f.seq == 0);
				FUZZ_CHECK(cep_fence_wait(&f, 0) == 0);
			}
		} else {
			runs_fenced(s, &in, r);
		}
	}
	raw_call(c, "cep__call(Stats)", cudaep_v1_Request_stats_tag, 0);
	CHECK(cep_session_free(s));
	CHECK(cep_region_free(r));
	CHECK(cep_ping(c));
	cep_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2], page_fd = -1;
	size_t pos = 1;

	if (size == 0)
		return 0;
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	if (data[0] & 1)
		page_fd = page_make(data, size, &pos, (data[0] & 2) ? PAGE_BYTES / 2
								    : PAGE_BYTES);
	daemon_queue(sv[1], data, size, pos, page_fd);
	if (data[0] & 4) {
		close(sv[1]);
		sv[1] = -1;
	} else {
		FUZZ_CHECK(shutdown(sv[1], SHUT_WR) == 0);
	}
	client_script(sv[0], page_fd >= 0);
	/* What the client sent, fds included, goes with the socket. */
	if (sv[1] >= 0)
		close(sv[1]);
	if (page_fd >= 0)
		close(page_fd);
	/* Reading /proc every time would slow the fuzzer down tenfold; when
	 * replaying with a trace it is done every time. */
	if (++runs % 256 == 0 || trace || getenv("CEP_FUZZ_FDS") != NULL) {
		if (fd_list(false) != fd_baseline)
			fd_list(true);
		FUZZ_CHECK(fd_list(false) == fd_baseline);
		FUZZ_CHECK(maps_count() == maps_baseline);
	}
	return 0;
}
