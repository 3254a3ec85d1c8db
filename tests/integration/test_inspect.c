/*
 * test_inspect.c — `cudaepctl graphs` and `cudaepctl kernels` against a
 * real cudaepd (the host backend, or CUDA with CUDAEP_TEST_GPU=1):
 *
 *   - a client loads the MLP, runs it with 2 rows three times and with 4
 *     rows twice; the Graphs reply on its own connection and cudaepctl's
 *     table and JSON (as root, an admin) show its two plans with those
 *     run counts: all eager on the host; on a GPU captured on the second
 *     run, then replayed;
 *   - a client of another uid sees its own session's plans only, never
 *     root's, and cudaepctl run as that uid sees none (SKIP without the
 *     rights to become another uid);
 *   - kernels on the host backend prints its no-device-kernels line;
 *   - kernels on a GPU, after a run of a model with NVRTC kernels, lists
 *     them, compiled or read from the disk cache (SKIP without
 *     CUDAEP_TEST_GPU=1).
 */
#include "tests/integration/harness.h"
#include "tests/integration/mlp_slot.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UID_OTHER 60873 /* a uid nobody is expected to use */
#define D 8             /* the MLP's width */

static struct hdaemon d;

static void daemon_reap(void)
{
	if (d.pid != 0)
		h_daemon_stop(&d, SIGKILL);
}

TestSuite(inspect, .timeout = 120, .fini = daemon_reap);

static bool on_gpu(void)
{
	return strcmp(h_backend(), "cuda") == 0;
}

/* Criterion shows skips only when verbose, so the reason goes to stderr
 * too. */
#define SKIP(...)                                       \
	do {                                            \
		fprintf(stderr, "[SKIP] " __VA_ARGS__); \
		fputc('\n', stderr);                    \
		cr_skip_test(__VA_ARGS__);              \
	} while (0)

/* ---------------------------------------------------------- the daemon */

static float w[D * D];
static char mlp_path[256];

/* Starts the daemon with a socket and a model file other uids may use,
 * plus extra flags. */
static void start(const char *const *extra)
{
	const char *args[16] = {"--socket-mode", "0666"};
	int n = 2;

	for (; extra != NULL && *extra != NULL && n < 15; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(h_daemon_prepare(&d), 0);
	/* mkdtemp's 0700 would keep the other uid from the socket. */
	cr_assert_eq(chmod(d.dir, 0711), 0);
	cr_assert_eq(h_daemon_start(&d, args), 0, "cudaepd did not start");
	mlp_model_write(mlp_path, sizeof(mlp_path), d.dir, w, D, 11, 4.0f);
	cr_assert_eq(chmod(mlp_path, 0644), 0);
}

/* Runs s times times with rows rows in region r, checking the outputs
 * (a plain check in a child, which reports rather than asserts). */
static bool run_rows(cep_session *s, cep_region *r, int rows, int times)
{
	static unsigned seed = 5;
	struct mlp_slot t;
	int at = -1;

	mlp_slot_init(&t, r, 0, rows, D);
	for (int i = 0; i < times; i++) {
		mlp_slot_fill(&t, &seed);
		if (cep_run(s, &t.in, 1, &t.out, 1) != 0 || !mlp_slot_check(&t, w, &at))
			return false;
	}
	return true;
}

/* The Graphs reply on c's own connection, into *resp (large: static). */
static void graphs_of(cep_client *c, cudaep_v1_Response *resp)
{
	static cudaep_v1_Request req;

	memset(&req, 0, sizeof(req));
	req.which_body = cudaep_v1_Request_graphs_tag;
	cr_assert_eq(cep__call(c, &req, NULL, 0, resp), 0, "%s", cep_last_error());
	cr_assert_eq(resp->which_body, cudaep_v1_Response_graphs_tag);
}

/* The entry of session sess with signature sig, or NULL. */
static const cudaep_v1_GraphEntry *entry_of(const cudaep_v1_GraphsReply *r, uint64_t sess,
					    const char *sig)
{
	for (pb_size_t i = 0; i < r->graphs_count; i++) {
		if (r->graphs[i].session_id == sess && strcmp(r->graphs[i].signature, sig) == 0)
			return &r->graphs[i];
	}
	return NULL;
}

/* Asserts that a plan run runs times went as the backend runs plans:
 * eagerly on the host; on a GPU its first run eagerly, its second
 * captured into a graph and replayed, and the rest replayed. */
static void expect_counts(uint64_t runs, bool captured, uint64_t captures, uint64_t replays,
			  uint64_t eager, const char *what)
{
	if (on_gpu()) {
		cr_expect(captured, "%s: not captured", what);
		cr_expect_eq(captures, 1, "%s: %" PRIu64 " captures", what, captures);
		cr_expect_eq(replays, runs - 1, "%s: %" PRIu64 " replays", what, replays);
		cr_expect_eq(eager, 1, "%s: %" PRIu64 " eager runs", what, eager);
	} else {
		cr_expect_not(captured, "%s: captured on the host", what);
		cr_expect_eq(captures, 0, "%s", what);
		cr_expect_eq(replays, 0, "%s", what);
		cr_expect_eq(eager, runs, "%s: %" PRIu64 " eager runs of %" PRIu64, what,
			     eager, runs);
	}
}

/* ------------------------------------------------------ running the tool */

struct run_result {
	int status;      /* exit status, or -1 when it did not exit */
	char out[32768]; /* stdout */
	char err[4096];  /* stderr */
};

static void read_all(int fd, char *buf, size_t len)
{
	size_t pos = 0;
	ssize_t n;

	while (pos + 1 < len && (n = read(fd, buf + pos, len - 1 - pos)) > 0)
		pos += (size_t)n;
	buf[pos] = '\0';
	close(fd);
}

/* Drops this process to uid:gid for good. Returns 0 or an errno. */
static int become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		return errno;
	return 0;
}

/* Runs cudaepctl --socket <daemon's> with the NULL-terminated args, as
 * uid (0: as this process is). */
static void ctl_run(struct run_result *r, uid_t uid, const char *const *args)
{
	const char *argv[16] = {h_bin("cudaepctl"), "--socket", d.sock};
	int out[2], err[2], st, n = 3;
	pid_t pid;

	for (; *args != NULL && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	cr_assert_eq(pipe(out), 0);
	cr_assert_eq(pipe(err), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		if (uid != 0 && become(uid, uid) != 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	read_all(out[0], r->out, sizeof(r->out));
	read_all(err[0], r->err, sizeof(r->err));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The text row of the graphs table whose signature (its last column) is
 * sig and whose session is sess, parsed. Returns whether there is one. */
struct graph_row {
	uint64_t session, client, runs, captures, replays, eager;
	unsigned steps;
	char name[64], captured[8];
};

static bool row_of(const char *out, uint64_t sess, const char *sig, struct graph_row *g)
{
	const char *line = out, *end;
	size_t n = strlen(sig);

	for (; *line != '\0'; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		if ((size_t)(end - line) <= n || strncmp(end - n, sig, n) != 0 || end[-n - 1] != ' ')
			continue;
		if (sscanf(line, "%" SCNu64 " %" SCNu64 " %63s %" SCNu64 " %7s %" SCNu64
			   " %" SCNu64 " %" SCNu64 " %u", &g->session, &g->client, g->name,
			   &g->runs, g->captured, &g->captures, &g->replays, &g->eager,
			   &g->steps) == 9 && g->session == sess)
			return true;
	}
	return false;
}

/* ----------------------------------------------------------------- tests */

Test(inspect, graphs_show_each_plan_with_the_runs_made)
{
	static const char head[] = "# Graphs\nSESSION  CLIENT  NAME  RUNS  CAPTURED  CAPTURES  "
				   "REPLAYS  EAGER  STEPS  PLAN MEM  SIGNATURE\n";
	static cudaep_v1_Response resp;
	static struct run_result r;
	const cudaep_v1_GraphEntry *e2, *e4;
	cep_session_options o = { .name = "mlp" };
	cep_session *s = NULL;
	cep_region *reg = NULL;
	struct graph_row row;
	char want[160];
	uint64_t sid;
	cep_client *c;

	start(NULL);
	c = h_connect(&d, "inspect-app");
	cr_assert_eq(cep_session_load(c, mlp_path, &o, &s), 0, "%s", cep_last_error());
	sid = cep_session_id(s);
	cr_assert_eq(cep_region_new(c, 4096, &reg), 0, "%s", cep_last_error());
	cr_assert(run_rows(s, reg, 2, 3), "%s", cep_last_error());
	cr_assert(run_rows(s, reg, 4, 2), "%s", cep_last_error());

	/* The raw reply, on the client's own connection. */
	graphs_of(c, &resp);
	cr_assert_eq(resp.body.graphs.graphs_count, 2);
	cr_assert_eq(resp.body.graphs.total, 2);
	cr_expect_str_eq(resp.body.graphs.graphs[0].signature, "x[4,8]", "most recent first");
	e2 = entry_of(&resp.body.graphs, sid, "x[2,8]");
	e4 = entry_of(&resp.body.graphs, sid, "x[4,8]");
	cr_assert_not_null(e2);
	cr_assert_not_null(e4);
	cr_expect_str_eq(e2->session_name, "mlp");
	cr_expect_eq(e2->runs, 3);
	cr_expect_eq(e4->runs, 2);
	expect_counts(e2->runs, e2->captured, e2->captures, e2->replays, e2->eager_runs,
		      "x[2,8]");
	expect_counts(e4->runs, e4->captured, e4->captures, e4->replays, e4->eager_runs,
		      "x[4,8]");
	cr_expect_gt(e2->steps, 0);
	cr_expect_gt(e2->device_bytes, 0);
	cr_expect_not(e2->busy);
	cr_expect_str_eq(e2->capture_error, "");

	/* The table, as root: an admin sees the app's session. */
	ctl_run(&r, 0, (const char *[]){"graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
	cr_assert(row_of(r.out, sid, "x[2,8]", &row), "no row of x[2,8] in:\n%s", r.out);
	cr_expect_eq(row.client, resp.body.graphs.graphs[0].client_id);
	cr_expect_str_eq(row.name, "mlp");
	cr_expect_eq(row.runs, 3);
	cr_expect_str_eq(row.captured, on_gpu() ? "yes" : "no");
	cr_expect_eq(row.captures, e2->captures);
	cr_expect_eq(row.replays, e2->replays);
	cr_expect_eq(row.eager, e2->eager_runs);
	cr_expect_eq(row.steps, e2->steps);
	cr_assert(row_of(r.out, sid, "x[4,8]", &row), "no row of x[4,8] in:\n%s", r.out);
	cr_expect_eq(row.runs, 2);

	ctl_run(&r, 0, (const char *[]){"--json", "graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof(want), "{\"session_id\":%" PRIu64 ",", sid);
	cr_expect_not_null(strstr(r.out, want), "%s", r.out);
	snprintf(want, sizeof(want), "\"session_name\":\"mlp\",\"runs\":3,\"captured\":%s,",
		 on_gpu() ? "true" : "false");
	cr_expect_not_null(strstr(r.out, want), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"signature\":\"x[2,8]\""), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "],\"total\":2}\n"), "%s", r.out);

	cep_region_free(reg);
	cep_session_free(s);
	cep_close(c);
	h_daemon_stop_clean(&d, "cudaepd");
}

/* What a client of another uid saw, sent back from its child. */
struct other_view {
	int err;            /* 0, or the step's errno / CEP_E* that failed */
	char step[32];      /* that step */
	uint64_t session;   /* its own session's id */
	uint32_t count, total;
	uint64_t ids[4];    /* the sessions of the first entries */
	uint64_t runs;      /* of its first entry */
};

/* In a child of uid UID_OTHER: connects, loads the MLP, runs it once,
 * asks for Graphs on its own connection, writes what it saw to fd. */
static void other_client(int fd)
{
	static cudaep_v1_Request req;
	static cudaep_v1_Response resp;
	struct other_view v = { 0 };
	cep_session *s = NULL;
	cep_region *reg = NULL;
	cep_client *c = NULL;
	int mfd;

	snprintf(v.step, sizeof(v.step), "setuid");
	v.err = become(UID_OTHER, UID_OTHER);
	if (v.err == 0) {
		snprintf(v.step, sizeof(v.step), "connect");
		v.err = cep_connect(d.sock, "other-app", &c);
	}
	if (v.err == 0) {
		/* By fd: the daemon's directory (0711) cannot be opened as the
		 * model's directory by this uid, but the file can be read. */
		snprintf(v.step, sizeof(v.step), "load");
		mfd = open(mlp_path, O_RDONLY | O_CLOEXEC);
		v.err = mfd < 0 ? errno : cep_session_load_fd(c, mfd, -1, NULL, &s);
		if (mfd >= 0)
			close(mfd);
	}
	if (v.err == 0) {
		snprintf(v.step, sizeof(v.step), "region");
		v.err = cep_region_new(c, 4096, &reg);
	}
	if (v.err == 0) {
		snprintf(v.step, sizeof(v.step), "run");
		v.err = run_rows(s, reg, 1, 1) ? 0 : -1;
	}
	if (v.err == 0) {
		snprintf(v.step, sizeof(v.step), "graphs");
		v.session = cep_session_id(s);
		req.which_body = cudaep_v1_Request_graphs_tag;
		v.err = cep__call(c, &req, NULL, 0, &resp);
	}
	if (v.err == 0) {
		v.count = resp.body.graphs.graphs_count;
		v.total = resp.body.graphs.total;
		for (pb_size_t i = 0; i < v.count && i < 4; i++)
			v.ids[i] = resp.body.graphs.graphs[i].session_id;
		if (v.count > 0)
			v.runs = resp.body.graphs.graphs[0].runs;
	}
	(void)!write(fd, &v, sizeof(v));
	cep_region_free(reg);
	cep_session_free(s);
	cep_close(c);
}

/* Skips unless this process may become another uid. */
static void need_other_uid(void)
{
	int p[2], err = 0, st;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		err = become(UID_OTHER, UID_OTHER);
		_exit(write(p[1], &err, sizeof(err)) == sizeof(err) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &err, sizeof(err)) != sizeof(err))
		err = EIO;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (err != 0)
		SKIP("seeing as another uid needs root or CAP_SETUID/CAP_SETGID "
		     "(dropping to uid %d: %s)", UID_OTHER, strerror(err));
}

Test(inspect, a_client_sees_its_own_sessions_graphs_only)
{
	static cudaep_v1_Response resp;
	static struct run_result r;
	struct other_view v;
	cep_session *s = NULL;
	cep_region *reg = NULL;
	uint64_t mine;
	cep_client *c;
	int p[2], st;
	pid_t pid;

	need_other_uid();
	start(NULL);
	c = h_connect(&d, "root-app");
	cr_assert_eq(cep_session_load(c, mlp_path, NULL, &s), 0, "%s", cep_last_error());
	mine = cep_session_id(s);
	cr_assert_eq(cep_region_new(c, 4096, &reg), 0, "%s", cep_last_error());
	cr_assert(run_rows(s, reg, 3, 2), "%s", cep_last_error());

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		other_client(p[1]);
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &v, sizeof(v)), (ssize_t)sizeof(v));
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(v.err, 0, "the other uid's client failed at %s: %d", v.step, v.err);
	cr_expect_eq(v.count, 1, "it sees %u plans", v.count);
	cr_expect_eq(v.total, 1, "root's plans are not even counted for it");
	cr_expect_eq(v.ids[0], v.session, "it sees session %" PRIu64, v.ids[0]);
	cr_expect_neq(v.ids[0], mine);
	cr_expect_eq(v.runs, 1);

	/* cudaepctl as that uid is a client of its own, with no sessions. */
	ctl_run(&r, UID_OTHER, (const char *[]){"--json", "graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "{\"graphs\":[],\"total\":0}\n");
	ctl_run(&r, UID_OTHER, (const char *[]){"graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "\n(none)\n"), "%s", r.out);

	/* Root's own connection sees its session only; root's cudaepctl, an
	 * admin, sees it (the other client is gone with its session). */
	graphs_of(c, &resp);
	cr_expect_eq(resp.body.graphs.graphs_count, 1);
	cr_expect_eq(resp.body.graphs.graphs[0].session_id, mine);
	cr_expect_eq(resp.body.graphs.graphs[0].runs, 2);
	ctl_run(&r, 0, (const char *[]){"graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "x[3,8]\n"), "%s", r.out);

	cep_region_free(reg);
	cep_session_free(s);
	cep_close(c);
	h_daemon_stop_clean(&d, "cudaepd");
}

Test(inspect, kernels_on_the_host_backend_say_there_are_none)
{
	static const char *const host[] = {"--backend", "host", NULL};
	static struct run_result r;

	start(host);
	ctl_run(&r, 0, (const char *[]){"kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "# Kernels\nbackend:host\ndevice_kernels:no\n"
				"no device kernels: the host backend runs the CPU reference "
				"kernels and compiles none\n");
	ctl_run(&r, 0, (const char *[]){"--json", "kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "{\"backend\":\"host\",\"device_kernels\":false}\n");
	h_daemon_stop_clean(&d, "cudaepd");
}

Test(inspect, kernels_on_a_gpu_are_listed_after_a_run)
{
	static cudaep_v1_Request req;
	static cudaep_v1_Response resp;
	static struct run_result r;
	const cudaep_v1_KernelsReply *k = &resp.body.kernels;
	unsigned compiled = 0, disk = 0;
	bool softmax = false;
	char path[300], line[64];
	cep_session *s = NULL;
	cep_region *reg = NULL;
	struct om m = { 0 };
	struct mlp_slot t;
	unsigned seed = 3;
	cep_client *c;

	if (!on_gpu())
		SKIP("GPU test skipped: set CUDAEP_TEST_GPU=1 on a GPU machine (make test-gpu)");
	start(NULL);
	/* Softmax has a kernel of its own (kernels/cuda/softmax.cu), which
	 * NVRTC compiles, or the disk cache gives, when the plan is built. */
	snprintf(path, sizeof(path), "%s/softmax.onnx", d.dir);
	om_input(&m, "x", 1, "n,8");
	om_output(&m, "y", 1, "n,8");
	om_node(&m, "Softmax", "x", "y", "axis", 1);
	cr_assert_eq(om_save(&m, path), 0);
	c = h_connect(&d, "gpu-app");
	cr_assert_eq(cep_session_load(c, path, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(cep_region_new(c, 4096, &reg), 0, "%s", cep_last_error());
	mlp_slot_init(&t, reg, 0, 2, D);
	mlp_slot_fill(&t, &seed);
	cr_assert_eq(cep_run(s, &t.in, 1, &t.out, 1), 0, "%s", cep_last_error());

	req.which_body = cudaep_v1_Request_kernels_tag;
	cr_assert_eq(cep__call(c, &req, NULL, 0, &resp), 0, "%s", cep_last_error());
	cr_assert_eq(resp.which_body, cudaep_v1_Response_kernels_tag);
	cr_assert_str_eq(k->backend, "cuda");
	cr_assert(k->device_kernels);
	cr_assert_gt(k->arch, 0);
	cr_assert_gt(k->kernels_count, 0, "no kernels listed after a run");
	cr_expect_eq(k->total, k->kernels_count);
	for (pb_size_t i = 0; i < k->kernels_count; i++) {
		const cudaep_v1_KernelEntry *e = &k->kernels[i];

		cr_expect_eq(e->arch, k->arch, "%s", e->name);
		cr_expect_gt(e->image_bytes, 0, "%s", e->name);
		if (strcmp(e->origin, "compiled") == 0) {
			compiled++;
			cr_expect_gt(e->compile_us, 0, "%s", e->name);
		} else {
			cr_expect_str_eq(e->origin, "disk", "%s", e->name);
			cr_expect_eq(e->compile_us, 0, "%s", e->name);
			disk++;
		}
		cr_expect_geq(e->load_us, e->compile_us, "%s", e->name);
		softmax = softmax || strcmp(e->name, "softmax") == 0;
	}
	cr_expect(softmax, "no softmax module among %u", (unsigned)k->kernels_count);
	/* Every module came from a compile or a disk load. */
	cr_expect_geq(k->compiles, compiled);
	cr_expect_geq(k->disk_loads, disk);
	cr_expect_gt(k->compiles + k->disk_loads, 0);

	ctl_run(&r, 0, (const char *[]){"kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "# Kernels\nbackend:cuda\ndevice_kernels:yes\n",
			     strlen("# Kernels\nbackend:cuda\ndevice_kernels:yes\n")), 0, "%s", r.out);
	snprintf(line, sizeof(line), "\narch:%u\n", (unsigned)k->arch);
	cr_expect_not_null(strstr(r.out, line), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\n# Modules\nNAME "), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "softmax "), "%s", r.out);

	cep_region_free(reg);
	cep_session_free(s);
	cep_close(c);
	h_daemon_stop_clean(&d, "cudaepd");
}
