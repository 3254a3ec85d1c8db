/*
 * test_access.c — access control against a real cudaepd with real
 * identities. Connections of other uids are made by children that drop to
 * them (setgroups, setresgid, setresuid) and hand the connected socket
 * back, so the daemon's SO_PEERCRED names that uid; that takes root (or
 * CAP_SETUID and CAP_SETGID), and without it those tests say SKIP and why.
 * The socket is made reachable for them with --socket-mode 0666 and a
 * traversable directory.
 *
 *   - a second uid cannot see or touch the first one's sessions and
 *     regions: every id of them is answered exactly as an unknown id; it
 *     cannot trim or kill (cudaepctl kill-session as that uid included);
 *     an admin (root) can, and the owner is told its session was killed;
 *   - the per-uid limits hold across a uid's connections, with their
 *     messages and counters, uid_max_bytes set by a SIGHUP reload;
 *   - a session killed while it runs finishes that run first.
 */
#include "tests/integration/harness.h"
#include "tests/integration/tinyonnx.h"

#include <criterion/criterion.h>
#include <pb_decode.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Two uids and gids nobody is expected to use. */
#define UID_A 60871
#define UID_B 60872

static struct hdaemon d;

static void daemon_reap(void)
{
	if (d.pid != 0)
		h_daemon_stop(&d, SIGKILL);
}

TestSuite(access, .timeout = 180, .fini = daemon_reap);

/* ---------------------------------------------------------- identities */

/* Drops this process to uid:gid for good. Returns 0 or an errno. */
static int become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		return errno;
	return 0;
}

/* Skips the test, saying why, unless this process may become another uid
 * (tried in a child, which then exits). */
static void need_other_uids(void)
{
	int p[2], err = 0, st;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		err = become(UID_A, UID_A);
		_exit(write(p[1], &err, sizeof(err)) == sizeof(err) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &err, sizeof(err)) != sizeof(err))
		err = EIO;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (err != 0) {
		fprintf(stderr, "[SKIP] connecting as another uid needs root or "
			"CAP_SETUID/CAP_SETGID (dropping to uid %d: %s)\n",
			UID_A, strerror(err));
		cr_skip_test("connecting as another uid needs root or "
			     "CAP_SETUID/CAP_SETGID (dropping to uid %d: %s)",
			     UID_A, strerror(err));
	}
}

/*
 * A connection to the daemon made by a process of uid (and gid uid): a
 * child becomes it, connects, passes the socket back over a socketpair and
 * exits. Returns the socket's fd here.
 */
static int connect_as(uid_t uid)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg = {0};
	struct iovec iov;
	struct cmsghdr *cm;
	int sp[2], err = 0, fd = -1, st;
	pid_t pid;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(sp[0]);
		err = become(uid, uid);
		if (err == 0) {
			fd = h_raw_connect(&d);
			err = fd < 0 ? errno : 0;
		}
		_exit(h_raw_send(sp[1], &err, sizeof(err), &fd, fd >= 0 ? 1 : 0) == 0 ? 0 : 1);
	}
	close(sp[1]);
	iov.iov_base = &err;
	iov.iov_len = sizeof(err);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	cr_assert_eq(recvmsg(sp[0], &msg, MSG_CMSG_CLOEXEC), sizeof(err));
	close(sp[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(err, 0, "connecting as uid %d: %s", (int)uid, strerror(err));
	cm = CMSG_FIRSTHDR(&msg);
	cr_assert(cm != NULL && cm->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Starts the daemon with a socket everyone may use, plus extra flags. */
static void start(const char *const *extra)
{
	const char *args[24] = {"--socket-mode", "0666", "--log-level", "info"};
	int n = 4;

	for (; extra != NULL && *extra != NULL && n < 23; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(h_daemon_prepare(&d), 0);
	/* mkdtemp's 0700 would keep the other uids from the socket. */
	cr_assert_eq(chmod(d.dir, 0711), 0);
	cr_assert_eq(h_daemon_start(&d, args), 0, "cudaepd did not start");
}

static void stop(void)
{
	h_daemon_stop_clean(&d, "cudaepd");
}

/* ------------------------------------------------------------- requests */

/* Large nanopb structs: one of each, reused. */
static cudaep_v1_Request req;
static cudaep_v1_Response resp;

/* A response's status, kept for comparing two. */
struct answer {
	int code;
	char msg[CEP_MAX_STATUS_MSG];
};

static void req_new(pb_size_t tag)
{
	memset(&req, 0, sizeof(req));
	req.which_body = tag;
}

/* Sends req on fd with the fds and receives its response into resp.
 * Returns the status code. */
static int call(int fd, const int *fds, int nfds)
{
	static uint64_t next_id = 1000;

	req.id = next_id++;
	cr_assert_eq(h_raw_send_req(fd, &req, fds, nfds), 0);
	cr_assert_eq(h_raw_recv(fd, &resp), 0, "no response to request %llu",
		     (unsigned long long)req.id);
	cr_assert_eq(resp.id, req.id);
	return resp.status.code;
}

static struct answer answer_now(void)
{
	struct answer a;

	a.code = resp.status.code;
	snprintf(a.msg, sizeof(a.msg), "%s", resp.status.message);
	return a;
}

/* Says Hello on fd; returns the connection's client id. */
static uint64_t hello(int fd)
{
	cr_assert_eq(h_raw_hello(fd, CEP_PROTOCOL_VERSION, &resp), 0);
	cr_assert_eq(resp.status.code, 0, "Hello: %s", resp.status.message);
	return resp.body.hello.client_id;
}

/* Registers a fresh region of size bytes on fd, mapped here at *map. */
static uint64_t region(int fd, size_t size, float **map)
{
	int mfd = h_memfd(size, true);

	cr_assert_geq(mfd, 0);
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	cr_assert_neq(*map, MAP_FAILED);
	req_new(cudaep_v1_Request_register_region_tag);
	req.body.register_region.size = size;
	cr_assert_eq(call(fd, &mfd, 1), 0, "RegisterRegion: %s",
		     resp.status.message);
	close(mfd);
	return resp.body.register_region.region_id;
}

/* Sends LoadModel of the model bytes on fd; returns the status code, the
 * session id in *id on success. */
static int load_code(int fd, const uint8_t *model, size_t len, uint64_t *id)
{
	int mfd = memfd_create("model", MFD_CLOEXEC), ret;

	cr_assert_geq(mfd, 0);
	cr_assert_eq(write(mfd, model, len), (ssize_t)len);
	req_new(cudaep_v1_Request_load_model_tag);
	req.body.load_model.source = cudaep_v1_ModelSource_MODEL_SOURCE_FD;
	ret = call(fd, &mfd, 1);
	close(mfd);
	if (ret == 0)
		*id = resp.body.load_model.info.session_id;
	return ret;
}

static uint64_t load(int fd, const uint8_t *model, size_t len)
{
	uint64_t id = 0;
	int ret = load_code(fd, model, len, &id);

	cr_assert_eq(ret, 0, "LoadModel: %s: %s", cep_err_name(ret),
		     resp.status.message);
	return id;
}

/* Requests naming one id: SessionInfo, Unload, KillSession, ReleaseRegion,
 * or LoadModel from bytes [0, 64) of region id. */
static int by_id(int fd, pb_size_t tag, uint64_t id)
{
	req_new(tag);
	switch (tag) {
	case cudaep_v1_Request_session_info_tag:
		req.body.session_info.session_id = id;
		break;
	case cudaep_v1_Request_unload_tag:
		req.body.unload.session_id = id;
		break;
	case cudaep_v1_Request_kill_session_tag:
		req.body.kill_session.session_id = id;
		break;
	case cudaep_v1_Request_release_region_tag:
		req.body.release_region.region_id = id;
		break;
	case cudaep_v1_Request_load_model_tag:
		req.body.load_model.source = cudaep_v1_ModelSource_MODEL_SOURCE_REGION;
		req.body.load_model.has_region = true;
		req.body.load_model.region.region_id = id;
		req.body.load_model.region.bytes = 64;
		break;
	default:
		cr_assert_fail("by_id: tag %u", (unsigned)tag);
	}
	return call(fd, NULL, 0);
}

/* ------------------------------------------------------------ the model */

/* y = relu(x @ w + b), x: [batch, 16], w: [16, 16], b: [16]. */
#define F 16
static float W[F * F], B[F];
static uint8_t *model;
static size_t model_len;

static float frand(void)
{
	return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static void model_make(void)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int64_t io[2] = {-1, F}, wd[2] = {F, F}, bd[1] = {F};
	struct tonnx m = {{0}};

	srand(seed);
	for (int i = 0; i < F * F; i++)
		W[i] = frand();
	for (int i = 0; i < F; i++)
		B[i] = frand() * 0.5f;
	tonnx_input(&m, "x", 2, io);
	tonnx_output(&m, "y", 2, io);
	tonnx_weight(&m, "w", 2, wd, W);
	tonnx_weight(&m, "b", 1, bd, B);
	tonnx_node(&m, "MatMul", "x", "w", "h");
	tonnx_node(&m, "Add", "h", "b", "z");
	tonnx_node(&m, "Relu", "z", NULL, "y");
	free(model);
	model = tonnx_finish(&m, &model_len);
}

/* A Run of batch rows: x at offset 0 of region in_reg, y at offset 4096
 * of region out_reg. Returns the status code. */
static int run_code(int fd, uint64_t sess, uint64_t in_reg, uint64_t out_reg,
		    int batch)
{
	cudaep_v1_TensorRef *x, *y;

	req_new(cudaep_v1_Request_run_tag);
	req.body.run.session_id = sess;
	req.body.run.inputs_count = 1;
	req.body.run.outputs_count = 1;
	x = &req.body.run.inputs[0];
	y = &req.body.run.outputs[0];
	snprintf(x->name, sizeof(x->name), "x");
	x->region_id = in_reg;
	x->bytes = (uint64_t)batch * F * sizeof(float);
	x->dtype = cudaep_v1_DataType_DT_FLOAT;
	x->shape_count = 2;
	x->shape[0] = batch;
	x->shape[1] = F;
	snprintf(y->name, sizeof(y->name), "y");
	y->region_id = out_reg;
	y->offset = 4096;
	y->bytes = (uint64_t)batch * F * sizeof(float);
	return call(fd, NULL, 0);
}

/* Runs sess on fresh random inputs in region reg (mapped at map, 8 KiB)
 * and checks every output against the reference. */
static void run_checked(int fd, uint64_t sess, uint64_t reg, float *map,
			int batch)
{
	float *x = map, *y = map + 1024, want[F];
	int ret;

	for (int i = 0; i < batch * F; i++)
		x[i] = frand() * 2.0f;
	ret = run_code(fd, sess, reg, reg, batch);
	cr_assert_eq(ret, 0, "Run: %s: %s", cep_err_name(ret), resp.status.message);
	for (int r = 0; r < batch; r++) {
		for (int j = 0; j < F; j++) {
			float acc = B[j];

			for (int k = 0; k < F; k++)
				acc += x[r * F + k] * W[k * F + j];
			want[j] = acc > 0.0f ? acc : 0.0f;
		}
		for (int j = 0; j < F; j++)
			cr_assert(fabsf(y[r * F + j] - want[j]) <=
				  1e-4f * (1.0f + fabsf(want[j])),
				  "y[%d][%d] = %g, want %g", r, j, y[r * F + j],
				  want[j]);
	}
}

/* ---------------------------------------------------------- comparisons */

/* msg with every occurrence of the decimal id replaced by '#'. */
static void id_blank(char *dst, size_t size, const char *msg, uint64_t id)
{
	char num[24];
	size_t n, o = 0;

	n = (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)id);
	while (*msg != '\0' && o + 1 < size) {
		if (strncmp(msg, num, n) == 0) {
			dst[o++] = '#';
			msg += n;
		} else {
			dst[o++] = *msg++;
		}
	}
	dst[o] = '\0';
}

/* The answers to a request naming another's id and to the same request
 * naming an id nobody holds cannot be told apart. */
static void expect_same(const char *what, const struct answer *theirs,
			uint64_t their_id, const struct answer *ghost,
			uint64_t ghost_id)
{
	char a[CEP_MAX_STATUS_MSG], b[CEP_MAX_STATUS_MSG];

	cr_expect_neq(theirs->code, 0, "%s: another uid's id was served", what);
	cr_expect_eq(theirs->code, ghost->code, "%s: %s for another's id, %s "
		     "for an unknown one", what, cep_err_name(theirs->code),
		     cep_err_name(ghost->code));
	id_blank(a, sizeof(a), theirs->msg, their_id);
	id_blank(b, sizeof(b), ghost->msg, ghost_id);
	cr_expect_str_eq(a, b, "%s: the messages differ", what);
}

/* by_id() for another's id and for an unknown one, compared. */
static void expect_same_by_id(const char *what, int fd, pb_size_t tag,
			      uint64_t theirs, uint64_t ghost)
{
	struct answer a, b;

	(void)by_id(fd, tag, theirs);
	a = answer_now();
	(void)by_id(fd, tag, ghost);
	b = answer_now();
	expect_same(what, &a, theirs, &b, ghost);
}

/* The MemoryReply entry (owner, "device") through fd: its current bytes
 * in *cur and limit in *limit; false when there is none. */
static bool memory_role(int fd, const char *owner, const char *role, uint64_t *cur,
			uint64_t *limit)
{
	req_new(cudaep_v1_Request_memory_tag);
	cr_assert_eq(call(fd, NULL, 0), 0);
	for (pb_size_t i = 0; i < resp.body.memory.entries_count; i++) {
		const cudaep_v1_MemoryEntry *e = &resp.body.memory.entries[i];

		if (strcmp(e->owner, owner) == 0 && strcmp(e->role, role) == 0) {
			if (cur != NULL)
				*cur = e->current;
			if (limit != NULL)
				*limit = e->limit;
			return true;
		}
	}
	return false;
}

static bool memory_device(int fd, const char *owner, uint64_t *cur,
			  uint64_t *limit)
{
	return memory_role(fd, owner, "device", cur, limit);
}

/* cudaepctl with args, as uid (or as this process when uid is -1); its
 * stdout and stderr together in out. Returns its exit status. */
static int ctl_as(int uid, const char *const *args, char *out, size_t len)
{
	const char *argv[16] = {h_bin("cudaepctl"), "--socket", d.sock};
	int p[2], n = 3, st;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	for (; *args != NULL && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		if (uid >= 0 && become((uid_t)uid, (gid_t)uid) != 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	while (got + 1 < len && (r = read(p[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---------------------------------------------------------------- tests */

Test(access, a_second_uid_cannot_see_or_touch_the_first_ones_objects)
{
	cep_client *admin;
	float *amap, *bmap;
	uint64_t a_id, b_id, sa, ra, sb, rb, ghost_s, ghost_r;
	struct answer x, y;
	char owner[32], out[4096], num[24], want[96];
	int a, b, root;

	need_other_uids();
	model_make();
	start(NULL);
	admin = h_connect(&d, "admin");
	root = h_raw_connect(&d);
	cr_assert_geq(root, 0);
	(void)hello(root);
	a = connect_as(UID_A);
	a_id = hello(a);
	ra = region(a, 8192, &amap);
	sa = load(a, model, model_len);
	run_checked(a, sa, ra, amap, 3);

	b = connect_as(UID_B);
	b_id = hello(b);
	rb = region(b, 8192, &bmap);
	sb = load(b, model, model_len);
	ghost_s = sb + 1000;
	ghost_r = rb + 1000;

	expect_same_by_id("SessionInfo", b, cudaep_v1_Request_session_info_tag,
			  sa, ghost_s);
	expect_same_by_id("Unload", b, cudaep_v1_Request_unload_tag, sa, ghost_s);
	expect_same_by_id("KillSession", b, cudaep_v1_Request_kill_session_tag,
			  sa, ghost_s);
	expect_same_by_id("ReleaseRegion", b, cudaep_v1_Request_release_region_tag,
			  ra, ghost_r);
	expect_same_by_id("LoadModel from a region", b,
			  cudaep_v1_Request_load_model_tag, ra, ghost_r);
	(void)run_code(b, sa, rb, rb, 1);
	x = answer_now();
	(void)run_code(b, ghost_s, rb, rb, 1);
	y = answer_now();
	expect_same("Run of the session", &x, sa, &y, ghost_s);
	(void)run_code(b, sb, ra, rb, 1);
	x = answer_now();
	(void)run_code(b, sb, ghost_r, rb, 1);
	y = answer_now();
	expect_same("Run with an input in the region", &x, ra, &y, ghost_r);
	(void)run_code(b, sb, rb, ra, 1);
	x = answer_now();
	(void)run_code(b, sb, rb, ghost_r, 1);
	y = answer_now();
	expect_same("Run with an output in the region", &x, ra, &y, ghost_r);
	req_new(cudaep_v1_Request_trim_tag);
	cr_expect_eq(call(b, NULL, 0), CEP_EPERM, "a non-admin trimmed");

	/* What b sees of the daemon is its own. */
	req_new(cudaep_v1_Request_sessions_tag);
	cr_assert_eq(call(b, NULL, 0), 0);
	cr_expect_eq(resp.body.sessions.total, 1);
	cr_expect_eq(resp.body.sessions.sessions[0].session_id, sb);
	req_new(cudaep_v1_Request_clients_tag);
	cr_assert_eq(call(b, NULL, 0), 0);
	cr_expect_eq(resp.body.clients.total, 1);
	cr_expect_eq(resp.body.clients.clients[0].client_id, b_id);
	cr_expect_eq(resp.body.clients.clients[0].uid, UID_B);
	snprintf(owner, sizeof(owner), "uid:%d", UID_A);
	cr_expect(!memory_device(b, owner, NULL, NULL), "b sees uid A's memory");
	snprintf(owner, sizeof(owner), "client:%llu", (unsigned long long)a_id);
	cr_expect(!memory_device(b, owner, NULL, NULL), "b sees a's memory");
	snprintf(owner, sizeof(owner), "uid:%d", UID_B);
	cr_expect(memory_device(b, owner, NULL, NULL));
	/* Root, an admin, sees both uids and both sessions. */
	snprintf(owner, sizeof(owner), "uid:%d", UID_A);
	cr_expect(memory_device(root, owner, NULL, NULL));
	snprintf(owner, sizeof(owner), "uid:%d", UID_B);
	cr_expect(memory_device(root, owner, NULL, NULL));
	req_new(cudaep_v1_Request_sessions_tag);
	cr_assert_eq(call(root, NULL, 0), 0);
	cr_expect_eq(resp.body.sessions.total, 2);
	run_checked(a, sa, ra, amap, 2);
	run_checked(b, sb, rb, bmap, 2);

	/* cudaepctl kill-session: refused to uid B whatever the id, done for
	 * root; the owner is told, others hear "no such session". */
	snprintf(num, sizeof(num), "%llu", (unsigned long long)sa);
	{
		const char *args[] = {"kill-session", num, NULL};

		cr_expect_eq(ctl_as(UID_B, args, out, sizeof(out)), 1, "%s", out);
		cr_expect_not_null(strstr(out, "kill-session is for admins"), "%s",
				   out);
		run_checked(a, sa, ra, amap, 1);
		cr_assert_eq(ctl_as(-1, args, out, sizeof(out)), 0, "%s", out);
		snprintf(want, sizeof(want), "client_id:%llu",
			 (unsigned long long)a_id);
		cr_expect_not_null(strstr(out, want), "%s", out);
	}
	snprintf(want, sizeof(want), "session %llu was killed by an administrator",
		 (unsigned long long)sa);
	cr_expect_eq(run_code(a, sa, ra, ra, 1), CEP_ECANCELED);
	cr_expect_str_eq(resp.status.message, want);
	cr_expect_eq(by_id(a, cudaep_v1_Request_session_info_tag, sa), CEP_ECANCELED);
	expect_same_by_id("SessionInfo of a killed session", b,
			  cudaep_v1_Request_session_info_tag, sa, ghost_s);
	run_checked(b, sb, rb, bmap, 2);
	snprintf(want, sizeof(want), "killed session %llu", (unsigned long long)sa);
	cr_expect(h_wait_log(&d, want), "the kill was not logged");
	cr_expect_eq(h_counter(admin, "sessions_killed"), 1);

	/* The admin may trim. */
	req_new(cudaep_v1_Request_trim_tag);
	cr_expect_eq(cep__call(admin, &req, NULL, 0, &resp), 0, "%s",
		     cep_last_error());
	close(a);
	close(b);
	close(root);
	cep_close(admin);
	stop();
}

/* A counter through the raw connection fd. */
static uint64_t counter(int fd, const char *name)
{
	req_new(cudaep_v1_Request_stats_tag);
	cr_assert_eq(call(fd, NULL, 0), 0);
	for (pb_size_t i = 0; i < resp.body.stats.counters_count; i++)
		if (strcmp(resp.body.stats.counters[i].name, name) == 0)
			return resp.body.stats.counters[i].value;
	cr_assert_fail("no counter %s", name);
	return 0;
}

/* cep_connect() in a child of uid: its code and message, in msg. */
static int lib_connect_as(uid_t uid, char *msg, size_t len)
{
	int p[2], st;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		cep_client *c = NULL;
		char buf[CEP_MAX_STATUS_MSG + 16];
		int rc;

		close(p[0]);
		if (become(uid, uid) != 0)
			_exit(126);
		rc = cep_connect(d.sock, "limited", &c);
		snprintf(buf, sizeof(buf), "%d %s", rc, cep_last_error());
		n = write(p[1], buf, strlen(buf) + 1);
		cep_close(c);
		_exit(n > 0 ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], msg, len - 1);
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(n > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	msg[n] = '\0';
	return atoi(msg);
}

Test(access, uid_limits_hold_across_a_uids_connections)
{
	char conf[160], msg[CEP_MAX_STATUS_MSG + 16], owner[32], want[96];
	uint64_t s1, s2, s3, sb, r1, r2, rb, used = 0, limit = 0, dummy, pinned, room;
	float *m1, *m2, *mb, *unused;
	int a1, a2, a3, b, root;
	FILE *f;

	need_other_uids();
	model_make();
	cr_assert_eq(h_daemon_prepare(&d), 0);
	snprintf(conf, sizeof(conf), "%s/cudaepd.conf", d.dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "[daemon]\n");
	fclose(f);
	{
		const char *args[] = {"--config", conf, "--uid-max-connections", "2",
				      "--uid-max-sessions", "2",
				      "--uid-max-regions", "3", NULL};

		start(args);
	}
	root = h_raw_connect(&d);
	(void)hello(root);

	/* Connections: the third of uid A is refused with a message, others
	 * are not held back. */
	a1 = connect_as(UID_A);
	a2 = connect_as(UID_A);
	(void)hello(a1);
	(void)hello(a2);
	a3 = connect_as(UID_A);
	cr_assert_eq(h_raw_recv(a3, &resp), 0, "no refusal was sent");
	cr_expect_eq(resp.status.code, CEP_ELIMIT);
	snprintf(want, sizeof(want), "too many connections for uid %d: its "
		 "processes hold 2, the limit (uid_max_connections) is 2", UID_A);
	cr_expect_not_null(strstr(resp.status.message, want), "%s",
			   resp.status.message);
	cr_expect_eq(h_raw_recv(a3, &resp), 1, "the refused connection stayed open");
	close(a3);
	cr_expect_eq(lib_connect_as(UID_A, msg, sizeof(msg)), CEP_ELIMIT, "%s", msg);
	cr_expect_not_null(strstr(msg, want), "%s", msg);
	b = connect_as(UID_B);
	(void)hello(b);
	cr_expect_eq(counter(root, "uid_connections_refused"), 2);

	/* Regions: three over the two connections of uid A. */
	r1 = region(a1, 8192, &m1);
	(void)region(a1, 8192, &unused);
	r2 = region(a2, 8192, &m2);
	{
		int mfd = h_memfd(8192, true);

		req_new(cudaep_v1_Request_register_region_tag);
		req.body.register_region.size = 8192;
		cr_expect_eq(call(a2, &mfd, 1), CEP_ELIMIT);
		close(mfd);
		snprintf(want, sizeof(want), "uid %d holds 3 regions on its 2 "
			 "connections, the limit (uid_max_regions) is 3", UID_A);
		cr_expect_str_eq(resp.status.message, want);
	}
	rb = region(b, 8192, &mb);
	cr_expect_eq(counter(root, "uid_regions_refused"), 1);

	/* Sessions: two over the two connections. */
	s1 = load(a1, model, model_len);
	s2 = load(a2, model, model_len);
	cr_expect_eq(load_code(a2, model, model_len, &dummy), CEP_ELIMIT);
	snprintf(want, sizeof(want), "uid %d holds 2 sessions on its 2 "
		 "connections, the limit (uid_max_sessions) is 2", UID_A);
	cr_expect_str_eq(resp.status.message, want);
	sb = load(b, model, model_len);
	cr_expect_eq(counter(root, "uid_sessions_refused"), 1);

	/* Memory: what one session of uid A uses, then a limit of one and a
	 * half of that beside the uid's pinned regions (the uid limit counts
	 * them too), set by reloading the file. */
	run_checked(a1, s1, r1, m1, 16);
	snprintf(owner, sizeof(owner), "uid:%d", UID_A);
	cr_assert(memory_device(root, owner, &used, &limit));
	cr_assert_gt(used, 0, "a run charged nothing to the uid");
	cr_expect_eq(limit, 0);
	if (!memory_role(root, owner, "pinned", &pinned, NULL))
		pinned = 0;
	room = used + used / 2 + pinned;
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "[daemon]\nuid_max_bytes = %llu\n",
		(unsigned long long)room);
	fclose(f);
	cr_assert_eq(kill(d.pid, SIGHUP), 0);
	cr_assert(h_wait_log(&d, "configuration reloaded"));
	cr_assert(memory_device(a1, owner, NULL, &limit));
	cr_expect_eq(limit, room);
	cr_expect_eq(run_code(a2, s2, r2, r2, 16), CEP_ELIMIT);
	snprintf(want, sizeof(want), "uid %d memory limit %llu bytes", UID_A,
		 (unsigned long long)room);
	cr_expect_not_null(strstr(resp.status.message, want), "%s",
			   resp.status.message);
	cr_expect_eq(counter(root, "uid_bytes_refused"), 1);
	/* Uid B has room of its own; and once a1's session goes, a2's runs. */
	run_checked(b, sb, rb, mb, 16);
	cr_assert_eq(by_id(a1, cudaep_v1_Request_unload_tag, s1), 0);
	run_checked(a2, s2, r2, m2, 16);
	/* The unload made room for a session, too. */
	s3 = load(a1, model, model_len);
	run_checked(a1, s3, r1, m1, 1);
	/* The flags still win over the file: the other limits stayed. */
	cr_expect_eq(load_code(a2, model, model_len, &dummy), CEP_ELIMIT);

	close(a1);
	close(a2);
	close(b);
	close(root);
	stop();
}

/* ------------------------------------------------- a kill during a run */

/* y = x @ w @ w ... (LAYERS times), x and w: [N, N]: a few tenths of a
 * second on the host backend, a few seconds under ASan, against the
 * microseconds it takes to see it running. */
#define N 512
#define LAYERS 8

Test(access, a_session_killed_while_it_runs_finishes_that_run_first)
{
	static float w[N * N];
	int64_t sq[2] = {N, N};
	struct tonnx m = {{0}};
	char name[2][8], want[96];
	const char *in;
	cep_client *admin;
	uint64_t sa, ra;
	float *map, row[N], next[N];
	struct pollfd pfd;
	bool seen_running = false;
	size_t len;
	uint8_t *slow;
	int a;

	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int i = 0; i < N * N; i++)
		w[i] = frand() / 16.0f;
	tonnx_input(&m, "x", 2, sq);
	tonnx_output(&m, "y", 2, sq);
	tonnx_weight(&m, "w", 2, sq, w);
	in = "x";
	for (int l = 0; l < LAYERS; l++) {
		snprintf(name[l % 2], sizeof(name[0]), "h%d", l);
		tonnx_node(&m, "MatMul", in, "w", l == LAYERS - 1 ? "y" : name[l % 2]);
		in = name[l % 2];
	}
	slow = tonnx_finish(&m, &len);
	start(NULL);
	admin = h_connect(&d, "admin");
	a = h_raw_connect(&d);
	(void)hello(a);
	ra = region(a, 2 * (size_t)N * N * sizeof(float), &map);
	sa = load(a, slow, len);
	free(slow);
	for (int i = 0; i < N * N; i++)
		map[i] = frand();

	/* Send the run, see it running, kill its session. */
	req_new(cudaep_v1_Request_run_tag);
	req.body.run.session_id = sa;
	req.body.run.inputs_count = 1;
	req.body.run.outputs_count = 1;
	snprintf(req.body.run.inputs[0].name, sizeof(req.body.run.inputs[0].name), "x");
	req.body.run.inputs[0].region_id = ra;
	req.body.run.inputs[0].bytes = (uint64_t)N * N * sizeof(float);
	req.body.run.inputs[0].dtype = cudaep_v1_DataType_DT_FLOAT;
	req.body.run.inputs[0].shape_count = 2;
	req.body.run.inputs[0].shape[0] = N;
	req.body.run.inputs[0].shape[1] = N;
	snprintf(req.body.run.outputs[0].name, sizeof(req.body.run.outputs[0].name), "y");
	req.body.run.outputs[0].region_id = ra;
	req.body.run.outputs[0].offset = (uint64_t)N * N * sizeof(float);
	req.body.run.outputs[0].bytes = (uint64_t)N * N * sizeof(float);
	req.id = 77;
	cr_assert_eq(h_raw_send_req(a, &req, NULL, 0), 0);
	pfd.fd = a;
	pfd.events = POLLIN;
	while (!seen_running && poll(&pfd, 1, 0) == 0)
		seen_running = h_gauge(admin, "jobs") == 1;
	if (!seen_running && strcmp(h_backend(), "host") == 0)
		cr_assert_fail("a run of %d matrix products of %d x %d ended "
			       "before it was seen running", LAYERS, N, N);
	memset(&req, 0, sizeof(req));
	req.which_body = cudaep_v1_Request_kill_session_tag;
	req.body.kill_session.session_id = sa;
	cr_assert_eq(cep__call(admin, &req, NULL, 0, &resp), 0, "%s",
		     cep_last_error());

	/* The run answers with its result, checked on row 0. */
	cr_assert_eq(h_raw_recv(a, &resp), 0);
	cr_assert_eq(resp.id, 77);
	cr_assert_eq(resp.status.code, 0, "the run in progress failed: %s",
		     resp.status.message);
	memcpy(row, map, sizeof(row));
	for (int l = 0; l < LAYERS; l++) {
		for (int j = 0; j < N; j++) {
			double acc = 0;

			for (int k = 0; k < N; k++)
				acc += (double)row[k] * w[k * N + j];
			next[j] = (float)acc;
		}
		memcpy(row, next, sizeof(row));
	}
	for (int j = 0; j < N; j++)
		cr_assert(fabsf(map[N * N + j] - row[j]) <= 1e-3f * (1.0f + fabsf(row[j])),
			  "y[0][%d] = %g, want %g", j, map[N * N + j], row[j]);
	if (seen_running)
		cr_expect(h_wait_log(&d, "it goes when its work in progress ends"));
	cr_expect_eq(h_wait_gauge(admin, "sessions", 0), 0);
	snprintf(want, sizeof(want), "session %llu was killed by an administrator",
		 (unsigned long long)sa);
	cr_expect_eq(by_id(a, cudaep_v1_Request_session_info_tag, sa), CEP_ECANCELED);
	cr_expect_str_eq(resp.status.message, want);
	req_new(cudaep_v1_Request_ping_tag);
	cr_expect_eq(call(a, NULL, 0), 0, "the connection did not go on");
	munmap(map, 2 * (size_t)N * N * sizeof(float));
	close(a);
	cep_close(admin);
	stop();
}
