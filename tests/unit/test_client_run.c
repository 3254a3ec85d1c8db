/*
 * test_client_run.c — cep_run() against a real cudaepd: what a tensor
 * means (an input's dtype, its bytes against its shape, a slice within its
 * region) is checked once, by the daemon at its trust boundary, and the
 * library hands its error back through cep_last_error(): the daemon's code,
 * a message naming the tensor, nothing run, and the session still runs.
 * What the library itself checks (what it needs to encode a Run) is
 * test_client_session.c's, against the fake daemon.
 *
 * The daemon is in this process: a listening server on the host backend,
 * its loop on a thread, the client on the test's thread.
 */
#include "tests/unit/daemon_util.h"
#include "tests/unit/onnxb.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "client/internal.h"

TestSuite(client_run, .timeout = 60);

static char tmpdir[] = "/tmp/cep-client-run-XXXXXX";

static struct {
	uv_loop_t loop;
	uv_async_t stop;
	struct server *s;
	pthread_t thread;
	char sock[108];
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

static void daemon_start(void)
{
	struct config cfg;

	log_level_set(LOG_CRIT);
	cr_assert_not_null(mkdtemp(tmpdir));
	config_init(&cfg);
	cfg.backend = CONFIG_BACKEND_HOST;
	snprintf(d.sock, sizeof(d.sock), "%s/cudaep.sock", tmpdir);
	snprintf(cfg.socket, sizeof(cfg.socket), "%s", d.sock);
	cr_assert_eq(uv_loop_init(&d.loop), 0);
	cr_assert_eq(server_new(&cfg, &d.s), 0);
	cr_assert_eq(uv_async_init(&d.loop, &d.stop, on_stop), 0);
	cr_assert_eq(server_listen(d.s, &d.loop), 0);
	cr_assert_eq(pthread_create(&d.thread, NULL, loop_main, NULL), 0);
}

/* Stops the daemon; returns how many runs it completed. */
static uint64_t daemon_stop(void)
{
	char cmd[128];
	uint64_t runs;

	uv_async_send(&d.stop);
	cr_assert_eq(pthread_join(d.thread, NULL), 0);
	runs = d.s->stats.counters[STATS_COUNTER_RUNS];
	cr_expect_eq(d.s->stats.gauges[STATS_GAUGE_REGIONS].current, 0);
	cr_expect_eq(d.s->stats.gauges[STATS_GAUGE_SESSIONS].current, 0);
	server_free(d.s);
	cr_assert_eq(uv_loop_close(&d.loop), 0, "handles left open");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
	return runs;
}

/* y = Relu(x), x and y float32 [a, b, c], saved as tmpdir/relu.onnx. */
static void model_write(char *path, size_t len)
{
	struct onnxb *b = onnxb_new(13);
	uint8_t *bytes;
	size_t n;
	FILE *f;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "a,b,c");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "a,b,c");
	onnxb_node(b, "Relu", "x", "y");
	bytes = onnxb_finish(b, &n);
	snprintf(path, len, "%s/relu.onnx", tmpdir);
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	fclose(f);
	free(bytes);
}

struct fixture {
	cep_client *c;
	cep_session *s;
	cep_region *r;
	cep_tensor in;
	cep_tensor out;
};

static void fixture_setup(struct fixture *f)
{
	char path[128];
	int rc;

	daemon_start();
	model_write(path, sizeof(path));
	cr_assert_eq(cep_connect(d.sock, "client_run", &f->c), 0, "%s",
		     cep_last_error());
	rc = cep_session_load(f->c, path, NULL, &f->s);
	cr_assert_eq(rc, 0, "load: %s: %s", cep_err_name(rc), cep_last_error());
	cr_assert_eq(cep_region_new(f->c, 65536, &f->r), 0, "%s",
		     cep_last_error());
	f->in = (cep_tensor){.name = "x", .region = f->r, .offset = 64,
			     .bytes = 2 * 3 * 4 * 4, .dtype = CEP_DTYPE_FLOAT32,
			     .rank = 3, .shape = {2, 3, 4}};
	f->out = (cep_tensor){.name = "y", .region = f->r, .offset = 4096,
			      .bytes = 16384, .dtype = CEP_DTYPE_UNDEFINED};
}

/* Runs with f's tensors and expects code and a message naming tensor. */
static void expect_refused(struct fixture *f, int code, const char *tensor)
{
	int rc = cep_run(f->s, &f->in, 1, &f->out, 1);

	cr_expect_eq(rc, code, "%s instead of %s: %s", cep_err_name(rc),
		     cep_err_name(code), cep_last_error());
	cr_expect_not_null(strstr(cep_last_error(), tensor),
			   "message does not name %s: %s", tensor,
			   cep_last_error());
}

static void expect_runs(struct fixture *f)
{
	float *x = (float *)((char *)cep_region_data(f->r) + f->in.offset);
	const float *y = (const float *)((char *)cep_region_data(f->r) + f->out.offset);
	cep_tensor out = f->out;
	int rc;

	for (int i = 0; i < 24; i++)
		x[i] = (float)(i - 12);
	rc = cep_run(f->s, &f->in, 1, &out, 1);
	cr_assert_eq(rc, 0, "%s: %s", cep_err_name(rc), cep_last_error());
	cr_expect_eq(out.dtype, CEP_DTYPE_FLOAT32);
	cr_expect_eq(out.rank, 3);
	cr_expect_eq(out.bytes, 96);
	for (int i = 0; i < 24; i++)
		cr_expect_eq(y[i], i < 12 ? 0.0f : (float)(i - 12), "y[%d] = %g", i, y[i]);
}

Test(client_run, the_daemon_refuses_what_a_tensor_means)
{
	struct fixture f;

	fixture_setup(&f);
	expect_runs(&f);

	f.in.bytes += 4;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	f.in.bytes -= 4;

	f.in.shape[1] = -3;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	f.in.shape[1] = 3;

	f.in.dtype = (cep_dtype)8; /* ONNX strings: not a dense type */
	expect_refused(&f, CEP_EDTYPE, "input 'x'");
	f.in.dtype = CEP_DTYPE_FLOAT32;

	/* A shape whose byte count overflows 64 bits. */
	f.in.shape[0] = INT64_MAX;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	f.in.shape[0] = 2;

	f.in.offset = 65536 - 8;
	expect_refused(&f, CEP_EBOUNDS, "input 'x'");
	f.in.offset = SIZE_MAX - 8; /* offset + bytes wraps around */
	expect_refused(&f, CEP_EBOUNDS, "input 'x'");
	f.in.offset = 64;

	f.out.bytes = 65536;
	expect_refused(&f, CEP_EBOUNDS, "output 'y'");
	f.out.bytes = 16384;

	/* An output's dtype and shape are the model's, but one given must
	 * be a valid one. */
	f.out.dtype = (cep_dtype)99;
	expect_refused(&f, CEP_EDTYPE, "output 'y'");
	f.out.dtype = CEP_DTYPE_UNDEFINED;
	f.out.rank = 2;
	f.out.shape[0] = 2;
	f.out.shape[1] = -1;
	expect_refused(&f, CEP_ESHAPE, "output 'y'");
	f.out.rank = 0;

	/* The same refusals for a run submitted with a fence: nothing is
	 * queued. */
	{
		cep_fence fence;
		int rc;

		f.in.bytes += 4;
		rc = cep_run_submit(f.s, &f.in, 1, &f.out, 1, &fence);
		cr_expect_eq(rc, CEP_ESHAPE, "%s: %s", cep_err_name(rc), cep_last_error());
		cr_expect_null(fence.client);
		f.in.bytes -= 4;
	}

	/* The session is none the worse. */
	expect_runs(&f);
	cep_region_free(f.r);
	cep_session_free(f.s);
	cep_close(f.c);
	cr_expect_eq(daemon_stop(), 2, "a refused run was run");
}

Test(client_run, the_daemons_message_reaches_cep_last_error)
{
	struct fixture f;

	fixture_setup(&f);
	f.in.bytes = 100;
	expect_refused(&f, CEP_ESHAPE, "input 'x'");
	cr_expect_str_eq(cep_last_error(),
			 "input 'x' has 100 bytes, its shape needs 96");
	f.in.bytes = 96;
	f.in.offset = 65536 - 8;
	expect_refused(&f, CEP_EBOUNDS, "input 'x'");
	cr_expect_not_null(strstr(cep_last_error(), "input 'x': slice at offset "
				  "65528 of 96 bytes lies outside region "),
			   "%s", cep_last_error());
	cr_expect_not_null(strstr(cep_last_error(), " of 65536 bytes"), "%s",
			   cep_last_error());
	cep_close(f.c);
	cr_expect_eq(daemon_stop(), 0);
}
