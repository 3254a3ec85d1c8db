/*
 * gated_daemon.h — an in-process daemon for tests that assert on the order
 * runs complete in, never on time (test_fairq.c, test_batch_flow.c): a
 * server on the host backend with queued streams (as a GPU queues work),
 * its loop on a thread, clients of libcudaep-client on the test's thread.
 *
 * The backend's host functions, which complete runs, are put in one order
 * across every stream: the order the daemon queued them, as one device
 * working through its work would, and are held behind a gate while the
 * test looks at the daemon. Each client has one session of y = Relu(x W)
 * and room for RUNS runs in one region.
 *
 * Static functions, for one test file each (which may not use them all).
 */
#ifndef CEP_TEST_GATED_DAEMON_H
#define CEP_TEST_GATED_DAEMON_H

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

#include "daemon/fairq.h"
#include "daemon/run.h"
#include "client/internal.h"

#pragma GCC diagnostic ignored "-Wunused-function"

#define D     8            /* y = Relu(x W): x [ROWS, D], W [D, D] */
#define ROWS  4
#define RUNS  64           /* runs one test client can have at once */
#define XB    (sizeof(float) * ROWS * D)

static char tmpdir[] = "/tmp/cep-gated-XXXXXX";
static float W[D * D];

static void setup(void)
{
	log_level_set(LOG_CRIT);
	cr_assert_not_null(mkdtemp(tmpdir));
	for (int i = 0; i < D * D; i++)
		W[i] = (float)((i * 7) % 11) / 8.0f - 0.5f;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

/* ------------------------------------------------------- ordered completion */

/* One queued host function, waiting for its turn to be called. */
struct ticket {
	backend_host_fn fn;
	void *arg;
	uint64_t no;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	bool open;               /* completions may happen */
	bool log_on;             /* log completions: every host function is a
	                          * run's signal (no batching) */
	uint64_t issued, done;   /* tickets handed out / called */
	uint64_t log[1024];      /* (client id << 32 | fence seq), as completed */
	size_t n_log;
	int (*host_fn)(struct backend *b, struct backend_stream *s, backend_host_fn fn,
		       void *arg);
} g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, true, true, 0, 0, { 0 }, 0, NULL };

/* On a stream's thread: waits until the gate is open and every host
 * function queued before this one was called, then calls it. */
static void gate_fn(void *arg)
{
	struct ticket *t = arg;
	const struct run *r = t->arg;

	pthread_mutex_lock(&g.lock);
	while (!g.open || g.done != t->no)
		pthread_cond_wait(&g.moved, &g.lock);
	if (g.log_on && g.n_log < sizeof(g.log) / sizeof(g.log[0]))
		g.log[g.n_log++] = ((const struct client *)r->table->owner)->id << 32 | r->seq;
	pthread_mutex_unlock(&g.lock);
	t->fn(t->arg);
	pthread_mutex_lock(&g.lock);
	g.done++;
	pthread_cond_broadcast(&g.moved);
	pthread_mutex_unlock(&g.lock);
	free(t);
}

/* The backend's stream_host_fn, numbering each call. A stream is used by
 * one thread at a time, so its tickets grow along its queue and every
 * ticket is reached. */
static int gate_host_fn(struct backend *b, struct backend_stream *s, backend_host_fn fn,
			void *arg)
{
	struct ticket *t = malloc(sizeof(*t));

	if (t == NULL)
		abort();
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&g.lock);
	t->no = g.issued++;
	pthread_mutex_unlock(&g.lock);
	return g.host_fn(b, s, gate_fn, t);
}

static void gate_set(bool open)
{
	pthread_mutex_lock(&g.lock);
	g.open = open;
	pthread_cond_broadcast(&g.moved);
	pthread_mutex_unlock(&g.lock);
}

/* Completions logged so far. */
static size_t log_mark(void)
{
	size_t n;

	pthread_mutex_lock(&g.lock);
	n = g.n_log;
	pthread_mutex_unlock(&g.lock);
	return n;
}

/* ------------------------------------------------------------------ server */

static struct {
	uv_loop_t loop;
	uv_async_t stop;
	struct server *s;
	pthread_t thread;
} d;

static void *loop_main(void *arg)
{
	uv_run(&d.loop, UV_RUN_DEFAULT);
	return NULL;
}

static void on_stop(uv_async_t *h)
{
	server_stop(d.s);
	uv_close((uv_handle_t *)h, NULL);
}

/* A listening server with the configuration keys kv (key, value, ...,
 * NULL) set, on the queued host backend whose completions go in one
 * order. */
static void start_with(const char *const *kv)
{
	struct config cfg;
	char err[256];

	config_init(&cfg);
	cfg.backend = CONFIG_BACKEND_HOST_ASYNC;
	snprintf(cfg.socket, sizeof(cfg.socket), "%s/gated.sock", tmpdir);
	for (; kv[0] != NULL; kv += 2)
		cr_assert_eq(config_set(&cfg, kv[0], kv[1], err, sizeof(err)), 0, "%s", err);
	g.issued = g.done = 0;
	g.n_log = 0;
	g.open = true;
	g.log_on = true;
	cr_assert_eq(uv_loop_init(&d.loop), 0);
	cr_assert_eq(server_new(&cfg, &d.s), 0);
	g.host_fn = d.s->backend->iface.stream_host_fn;
	d.s->backend->iface.stream_host_fn = gate_host_fn;
	cr_assert_eq(uv_async_init(&d.loop, &d.stop, on_stop), 0);
	cr_assert_eq(server_listen(d.s, &d.loop), 0);
	cr_assert_eq(pthread_create(&d.thread, NULL, loop_main, NULL), 0);
}

/* Stops the server and checks that it left nothing behind. */
static void stop(void)
{
	gate_set(true);
	uv_async_send(&d.stop);
	cr_assert_eq(pthread_join(d.thread, NULL), 0);
	cr_assert_eq(d.s->clients.n, 0);
	cr_assert_eq(d.s->fairq.waiting, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_RUNS_WAITING].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_RUNS_IN_FLIGHT].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_REGIONS].current, 0);
	cr_assert_eq(d.s->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	server_free(d.s);
	cr_assert_eq(uv_loop_close(&d.loop), 0, "handles left open");
}

/* ------------------------------------------------------------------ client */

/* A client with one session and room for RUNS runs in one region. */
struct cl {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	cep_tensor in[RUNS], out[RUNS];
	cep_fence fence[RUNS];
	uint64_t seq[RUNS];        /* each run's fence number */
	unsigned seed;
};

static cep_client *dial(const char *name)
{
	cep_client *c = NULL;
	int ret = cep_connect(d.s->socket_path, name, &c);

	cr_assert_eq(ret, 0, "cep_connect: %s: %s", cep_err_name(ret), cep_last_error());
	return c;
}

static cep_session *load(cep_client *c, cep_priority prio, bool batching)
{
	cep_session_options o = { .name = "mlp", .priority = prio, .batching = batching };
	struct onnxb *b = onnxb_new(13);
	cep_session *s = NULL;
	uint8_t *bytes;
	size_t len;
	int fd, ret;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,8");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "8,8", W);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Relu", "h", "y");
	bytes = onnxb_finish(b, &len);
	fd = memfd_create("model", MFD_CLOEXEC);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	ret = cep_session_load_fd(c, fd, -1, &o, &s);
	close(fd);
	cr_assert_eq(ret, 0, "load: %s: %s", cep_err_name(ret), cep_last_error());
	return s;
}

/* Lays out run i's tensors in the region: x, then y. */
static void cl_tensors(struct cl *t, cep_session *s)
{
	uint8_t *base = cep_region_data(t->r);

	for (int i = 0; i < RUNS; i++) {
		t->in[i] = (cep_tensor){ .name = "x", .region = t->r, .offset = 2 * XB * (size_t)i,
					 .bytes = XB, .dtype = CEP_DTYPE_FLOAT32, .rank = 2,
					 .shape = { ROWS, D } };
		t->out[i] = (cep_tensor){ .name = "y", .region = t->r,
					  .offset = 2 * XB * (size_t)i + XB, .bytes = XB };
		(void)base;
	}
	t->s = s;
}

static void cl_open(struct cl *t, const char *name, cep_priority prio, bool batching)
{
	memset(t, 0, sizeof(*t));
	t->c = dial(name);
	t->seed = (unsigned)name[0] * 7919u;
	cr_assert_eq(cep_region_new(t->c, 2 * XB * RUNS, &t->r), 0, "%s", cep_last_error());
	cl_tensors(t, load(t->c, prio, batching));
}

static void cl_close(struct cl *t)
{
	cr_assert_eq(cep_session_free(t->s), 0, "%s", cep_last_error());
	cr_assert_eq(cep_region_free(t->r), 0, "%s", cep_last_error());
	cep_close(t->c);
}

static float *xs(struct cl *t, int i)
{
	return (float *)((uint8_t *)cep_region_data(t->r) + t->in[i].offset);
}

static float *ys(struct cl *t, int i)
{
	return (float *)((uint8_t *)cep_region_data(t->r) + t->out[i].offset);
}

/* Fills run i's input with fresh numbers and its output with a pattern
 * no run writes. */
static void fill(struct cl *t, int i)
{
	float *x = xs(t, i);

	for (int k = 0; k < t->in[i].shape[0] * D; k++) {
		t->seed = t->seed * 1103515245u + 12345u;
		x[k] = (float)((t->seed >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
	memset(ys(t, i), 0xa5, XB);
}

/* Fills run i and submits it. */
static void submit(struct cl *t, int i)
{
	int ret;

	fill(t, i);
	ret = cep_run_submit(t->s, &t->in[i], 1, &t->out[i], 1, &t->fence[i]);
	cr_assert_eq(ret, 0, "submit %d: %s: %s", i, cep_err_name(ret), cep_last_error());
	t->seq[i] = t->fence[i].seq;
	cr_assert_gt(t->seq[i], 0, "the run has a fence");
}

/* Waits for run i and checks y = Relu(x W). */
static void wait_ok(struct cl *t, int i)
{
	const float *x = xs(t, i), *y = ys(t, i);
	int ret = cep_fence_wait(&t->fence[i], CEP_WAIT_FOREVER);

	cr_assert_eq(ret, 0, "run %d: %s: %s", i, cep_err_name(ret), cep_last_error());
	for (int r = 0; r < t->in[i].shape[0]; r++)
		for (int j = 0; j < D; j++) {
			float s = 0.0f;

			for (int k = 0; k < D; k++)
				s += x[r * D + k] * W[k * D + j];
			s = s > 0.0f ? s : 0.0f;
			cr_assert(fabsf(y[r * D + j] - s) <= 1e-5f + 1e-5f * fabsf(s),
				  "run %d y[%d][%d] = %g, want %g", i, r, j, y[r * D + j], s);
		}
}

static int64_t gauge_settled(cep_client *c, const char *name, int64_t want);

/* Plans and warms the session's plan, so that later runs are submitted on
 * the loop and nothing syncs a stream that the gate holds; returns once
 * the daemon has finished them (a client sees its fence first), so that
 * they no longer count against the bound. */
static void warm(struct cl *t)
{
	for (int i = 0; i < 3; i++) {
		submit(t, i);
		wait_ok(t, i);
	}
	cr_assert_eq(gauge_settled(t->c, "runs_in_flight", 0), 0);
}

/* The completion of t's run i in the log: its index from mark on, or -1. */
static long done_at(struct cl *t, int i, size_t mark)
{
	uint64_t key = cep_client_id(t->c) << 32 | t->seq[i];
	long at = -1;

	pthread_mutex_lock(&g.lock);
	for (size_t k = mark; k < g.n_log; k++)
		if (g.log[k] == key)
			at = (long)(k - mark);
	pthread_mutex_unlock(&g.lock);
	return at;
}

/* ------------------------------------------------------------------ stats */

static cudaep_v1_Response *stats_reply(cep_client *c)
{
	static cudaep_v1_Response *resp;
	cudaep_v1_Request req = cudaep_v1_Request_init_zero;
	int ret;

	if (resp == NULL)
		resp = calloc(1, sizeof(*resp));
	cr_assert_not_null(resp);
	req.which_body = cudaep_v1_Request_stats_tag;
	ret = cep__call(c, &req, NULL, 0, resp);
	cr_assert_eq(ret, 0, "Stats: %s: %s", cep_err_name(ret), cep_last_error());
	cr_assert_eq(resp->which_body, cudaep_v1_Response_stats_tag);
	return resp;
}

static int64_t gauge(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->gauges_count; i++)
		if (strcmp(s->gauges[i].name, name) == 0)
			return s->gauges[i].current;
	cr_assert_fail("no gauge '%s'", name);
	return 0;
}

static uint64_t counter(cep_client *c, const char *name)
{
	cudaep_v1_StatsReply *s = &stats_reply(c)->body.stats;

	for (pb_size_t i = 0; i < s->counters_count; i++)
		if (strcmp(s->counters[i].name, name) == 0)
			return s->counters[i].value;
	cr_assert_fail("no counter '%s'", name);
	return 0;
}

/* The gauge once it is want, or its value after ten seconds of asking
 * (what the daemon does after a client's request is not ordered with
 * another client's). */
static int64_t gauge_settled(cep_client *c, const char *name, int64_t want)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	int64_t v = gauge(c, name);

	for (int i = 0; v != want && i < 2000; i++) {
		nanosleep(&ts, NULL);
		v = gauge(c, name);
	}
	return v;
}


#endif
