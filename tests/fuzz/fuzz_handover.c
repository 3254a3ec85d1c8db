/*
 * fuzz_handover.c — libFuzzer target for the new image's side of a
 * handover (daemon/handover.h): arbitrary bytes become the memfd a
 * previous image would have left, which is read and restored into a
 * listening server on the host backend, as after a recovery's re-exec.
 * Nothing may crash or leak, every fd the handover could name must be
 * closed once the server is freed, and the loop must end with no handle
 * open.
 *
 * Input: a little-endian uint32 L, then L bytes of model files (they sit
 * in the memfd at offset 24, right after the header, where a handover's
 * model entries point), then the packed Handover message. The harness
 * writes the header. The fds a message can name are five the harness
 * opens afresh for each input at fixed numbers: FD_BASE is one end of a
 * SOCK_SEQPACKET socket pair (a client's socket), FD_BASE + 1 a sealed
 * memfd of a fence page's size, FD_BASE + 2 a sealed memfd of 64 KiB (a
 * region), FD_BASE + 3 a directory (a model's external data) and
 * FD_BASE + 4 /dev/null (an fd attached to a queued response).
 *
 * The committed seeds (tests/fuzz/corpus/fuzz_handover) are written by
 * this target itself: `CEP_FUZZ_WRITE_SEEDS=DIR fuzz_handover` builds
 * valid handovers (a client with its page, a region, a session of a small
 * Relu model, a queued response; and variants) and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

#include "common/log.h"
#include "daemon/config.h"
#include "daemon/handover.h"
#include "daemon/server.h"
#include "proto/cep_fence.h"
#include "tests/fuzz/fuzz_check.h"


#define FD_BASE 900
#define N_FDS 5
#define HEADER_BYTES 24

static struct config cfg;
static char sock_path[64];
static int peer = -1;

static int memfd_sealed(size_t size)
{
	int fd = memfd_create("fuzz-handover", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, (off_t)size) == 0);
	FUZZ_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	return fd;
}

/* Puts fd at number at (closing fd). */
static void fd_place(int fd, int at)
{
	FUZZ_CHECK(dup3(fd, at, O_CLOEXEC) == at);
	close(fd);
}

static void fds_open(int *fds)
{
	int sp[2];

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
			      sp) == 0);
	fd_place(sp[0], FD_BASE);
	peer = sp[1];
	fd_place(memfd_sealed(CEP_FENCE_SLOTS * CEP_FENCE_SLOT_BYTES), FD_BASE + 1);
	fd_place(memfd_sealed(64 * 1024), FD_BASE + 2);
	fd_place(open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC), FD_BASE + 3);
	fd_place(open("/dev/null", O_RDWR | O_CLOEXEC), FD_BASE + 4);
	for (int i = 0; i < N_FDS; i++)
		fds[i] = FD_BASE + i;
}

/* Every fd the handover could name is closed: by what took it, or by the
 * handover for the ones nothing took. */
static void fds_closed_check(void)
{
	for (int i = 0; i < N_FDS; i++)
		FUZZ_CHECK(fcntl(FD_BASE + i, F_GETFD) < 0 && errno == EBADF);
}

/* The memfd a previous image would have left: header, models, message. */
static int memfd_write(const uint8_t *models, size_t n_models, const uint8_t *msg, size_t n_msg)
{
	uint8_t hdr[HEADER_BYTES];
	uint64_t off = HEADER_BYTES + n_models, len = n_msg;
	int fd = memfd_create("fuzz-handover", MFD_CLOEXEC);

	FUZZ_CHECK(fd >= 0);
	memcpy(hdr, "CEPDHOV1", 8);
	memcpy(hdr + 8, &off, 8);
	memcpy(hdr + 16, &len, 8);
	FUZZ_CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	if (n_models > 0)
		FUZZ_CHECK(pwrite(fd, models, n_models, HEADER_BYTES) == (ssize_t)n_models);
	if (n_msg > 0)
		FUZZ_CHECK(pwrite(fd, msg, n_msg, (off_t)off) == (ssize_t)n_msg);
	return fd;
}

/* ------------------------------------------------------------------- seeds */

/* A model of y = Relu(x), x float [1, 4]. Returns its packed bytes
 * (malloc) in *len. */
static uint8_t *relu_model(size_t *len)
{
	Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
	Onnx__ValueInfoProto x = ONNX__VALUE_INFO_PROTO__INIT, y = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__TypeProto tx = ONNX__TYPE_PROTO__INIT, ty = ONNX__TYPE_PROTO__INIT;
	Onnx__TypeProto__Tensor ttx = ONNX__TYPE_PROTO__TENSOR__INIT;
	Onnx__TypeProto__Tensor tty = ONNX__TYPE_PROTO__TENSOR__INIT;
	Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
	Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
	Onnx__TensorShapeProto__Dimension d1 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
	Onnx__TensorShapeProto__Dimension *dims[2] = { &d0, &d1 };
	Onnx__OperatorSetIdProto *ops[1] = { &op };
	Onnx__NodeProto *nodes[1] = { &node };
	Onnx__ValueInfoProto *ins[1] = { &x }, *outs[1] = { &y };
	char *nin[1] = { (char *)"x" }, *nout[1] = { (char *)"y" };
	uint8_t *buf;

	d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
	d0.dim_value = 1;
	d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
	d1.dim_value = 4;
	shape.n_dim = 2;
	shape.dim = dims;
	ttx.has_elem_type = tty.has_elem_type = 1;
	ttx.elem_type = tty.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	ttx.shape = tty.shape = &shape;
	tx.value_case = ty.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tx.tensor_type = &ttx;
	ty.tensor_type = &tty;
	x.name = (char *)"x";
	x.type = &tx;
	y.name = (char *)"y";
	y.type = &ty;
	node.op_type = (char *)"Relu";
	node.n_input = 1;
	node.input = nin;
	node.n_output = 1;
	node.output = nout;
	g.name = (char *)"relu";
	g.n_node = 1;
	g.node = nodes;
	g.n_input = 1;
	g.input = ins;
	g.n_output = 1;
	g.output = outs;
	op.has_version = 1;
	op.version = 17;
	op.domain = (char *)"";
	m.has_ir_version = 1;
	m.ir_version = 8;
	m.n_opset_import = 1;
	m.opset_import = ops;
	m.graph = &g;
	*len = onnx__model_proto__get_packed_size(&m);
	buf = malloc(*len);
	FUZZ_CHECK(buf != NULL);
	onnx__model_proto__pack(&m, buf);
	return buf;
}

/* Writes one seed: variant 0 a whole client, 1 one without its page and
 * with a session of an option cudaepd lacks, 2 two clients naming the
 * same socket. */
static void seed_write(const char *dir, int variant)
{
	HvHandover m = CUDAEPD__HANDOVER__HANDOVER__INIT;
	HvClient hc = CUDAEPD__HANDOVER__CLIENT__INIT, hc2 = CUDAEPD__HANDOVER__CLIENT__INIT;
	HvRegion hr = CUDAEPD__HANDOVER__REGION__INIT;
	HvSession hs = CUDAEPD__HANDOVER__SESSION__INIT;
	HvModel hm = CUDAEPD__HANDOVER__MODEL__INIT;
	HvOut ho = CUDAEPD__HANDOVER__OUT__INIT;
	HvCounter cnt = CUDAEPD__HANDOVER__COUNTER__INIT;
	HvClient *clients[2] = { &hc, &hc2 };
	HvRegion *regions[1] = { &hr };
	HvSession *sessions[1] = { &hs };
	HvModel *models[1] = { &hm };
	HvOut *outs[1] = { &ho };
	HvCounter *counters[1] = { &cnt };
	uint64_t killed[2] = { 7, 0 };
	uint8_t reply[8] = { 0x08, 0x01, 0x12, 0x00 };
	size_t mlen, len;
	uint8_t *model = relu_model(&mlen), *buf;
	uint32_t l32 = (uint32_t)mlen;
	char path[512];
	FILE *f;

	m.version = HANDOVER_VERSION;
	m.fault_ns = 1;
	m.runs_failed = 2;
	m.why = (char *)"an illegal address (a test)";
	m.next_client_id = 5;
	m.next_session_id = 9;
	m.next_region_id = 4;
	cnt.name = (char *)"runs";
	cnt.value = 42;
	m.n_counters = 1;
	m.counters = counters;
	hm.offset = HEADER_BYTES;
	hm.len = mlen;
	hm.dir_fd = FD_BASE + 3;
	m.n_models = 1;
	m.models = models;
	hc.id = 3;
	hc.fd = FD_BASE;
	hc.pid = 1234;
	hc.uid = 1000;
	hc.gid = 1000;
	hc.hello_done = 1;
	hc.name = (char *)"seed";
	hc.requests = 10;
	hc.fence_fd = variant == 1 ? 0 : FD_BASE + 1;
	hc.fence_last_seq = 17;
	hr.id = 2;
	hr.fd = FD_BASE + 2;
	hr.size = 64 * 1024;
	hr.name = (char *)"io";
	hc.n_regions = 1;
	hc.regions = regions;
	hs.id = 8;
	hs.name = (char *)"relu";
	hs.model = 1;
	hs.runs = 3;
	hs.run_requests = 3;
	hs.precision = variant == 1 ? 9 : 0;
	hs.batching = variant == 2;
	hc.n_sessions = 1;
	hc.sessions = sessions;
	hc.n_killed = 2;
	hc.killed = killed;
	ho.data.data = reply;
	ho.data.len = 4;
	ho.fd = FD_BASE + 4;
	hc.n_out = 1;
	hc.out = outs;
	hc2.id = 4;
	hc2.fd = FD_BASE;
	m.n_clients = variant == 2 ? 2 : 1;
	m.clients = clients;
	len = cudaepd__handover__handover__get_packed_size(&m);
	buf = malloc(len);
	FUZZ_CHECK(buf != NULL);
	cudaepd__handover__handover__pack(&m, buf);
	snprintf(path, sizeof(path), "%s/handover_%d", dir, variant);
	f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(&l32, 4, 1, f) == 1);
	FUZZ_CHECK(fwrite(model, mlen, 1, f) == 1);
	FUZZ_CHECK(fwrite(buf, len, 1, f) == 1);
	fclose(f);
	free(buf);
	free(model);
}

/* ------------------------------------------------------------------ target */

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("CEP_FUZZ_WRITE_SEEDS");

	if (seeds != NULL) {
		for (int v = 0; v < 3; v++)
			seed_write(seeds, v);
		exit(0);
	}
	config_init(&cfg);
	cfg.backend = CONFIG_BACKEND_HOST;
	snprintf(sock_path, sizeof(sock_path), "/tmp/cep-fuzz-handover-%d.sock", (int)getpid());
	snprintf(cfg.socket, sizeof(cfg.socket), "%s", sock_path);
	/* CEP_FUZZ_LOG=1 shows the daemon's log when replaying one input. */
	log_level_set(getenv("CEP_FUZZ_LOG") != NULL ? LOG_DEBUG : LOG_CRIT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct handover *h = NULL;
	struct server *srv = NULL;
	uv_loop_t loop;
	uint32_t n_models;
	int fds[N_FDS], memfd, i;

	if (size < 4)
		return 0;
	memcpy(&n_models, data, 4);
	if (n_models > size - 4)
		n_models = (uint32_t)(size - 4);
	memfd = memfd_write(data + 4, n_models, data + 4 + n_models, size - 4 - n_models);
	fds_open(fds);
	if (handover_read_fd(memfd, fds, N_FDS, &h) != 0) {
		/* Not read: the fds stay the caller's. */
		for (i = 0; i < N_FDS; i++)
			close(fds[i]);
		close(peer);
		return 0;
	}
	FUZZ_CHECK(uv_loop_init(&loop) == 0);
	FUZZ_CHECK(server_new(&cfg, &srv) == 0);
	srv->handover = h;
	if (server_listen(srv, &loop) == 0) {
		/* The peer goes: whatever was restored meets a client that left. */
		close(peer);
		uv_run(&loop, UV_RUN_NOWAIT);
		server_stop(srv);
	} else {
		close(peer);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	server_free(srv);
	FUZZ_CHECK(uv_loop_close(&loop) == 0);
	fds_closed_check();
	return 0;
}
