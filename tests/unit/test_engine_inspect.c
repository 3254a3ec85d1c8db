/*
 * test_engine_inspect.c — engine_session_plans() (engine/engine_inspect.c)
 * on the host backend: one entry per cached plan, most recently used
 * first, with the signature it is for written out, its run counts as the
 * runs made (eager without graphs; captured on the second run and
 * replayed after with BACKEND_HOST_GRAPHS; eager for good, with the
 * reason, when the capture fails), the values of an input that keys it,
 * runs in flight, the max bound, and a long name cut with "..." on a
 * character boundary.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "tests/unit/onnxb.h"

struct fixture {
	struct backend *be;
	engine_model *m;
	engine_session *s;
};

static void fixture_open(struct fixture *f, struct onnxb *b, unsigned host_flags)
{
	uint8_t *buf;
	size_t len;

	memset(f, 0, sizeof(*f));
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &f->m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(host_flags, &f->be), 0);
	cr_assert_eq(engine_session_new(f->m, f->be, NULL, &f->s), 0, "%s", cep_last_error());
}

static void fixture_close(struct fixture *f)
{
	engine_session_free(f->s);
	engine_model_unref(f->m);
	backend_free(f->be);
}

/* y = Relu(x), x float32 [batch, 3], input named name: one step. */
static void relu_open(struct fixture *f, const char *name, unsigned host_flags)
{
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, name, CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_node(b, "Relu", name, "y");
	fixture_open(f, b, host_flags);
}

/* One run of the Relu model with batch rows. */
static void relu_run(struct fixture *f, const char *name, int64_t batch)
{
	float x[3 * 8], y[3 * 8];
	int64_t dims[2] = { batch, 3 };
	struct engine_input in = { name, CEP_DTYPE_FLOAT32, 2, dims, x,
				   (size_t)batch * 3 * sizeof(float) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };

	cr_assert_leq(batch, 8);
	memset(x, 0, sizeof(x));
	cr_assert_eq(engine_run(f->s, &in, 1, &out, 1), 0, "%s", cep_last_error());
}

Test(engine_inspect, plans_are_listed_most_recent_first_with_their_runs)
{
	struct engine_plan_info info[4];
	struct engine_stats st;
	struct fixture f;
	int i, n;

	relu_open(&f, "x", 0);
	cr_assert_eq(engine_session_plans(f.s, info, 4), 0, "a new session has no plans");
	for (i = 0; i < 3; i++)
		relu_run(&f, "x", 2);
	for (i = 0; i < 2; i++)
		relu_run(&f, "x", 5);
	n = engine_session_plans(f.s, info, 4);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(info[0].signature, "x[5,3]");
	cr_assert_str_eq(info[1].signature, "x[2,3]");
	cr_assert_eq(info[0].runs, 2);
	cr_assert_eq(info[1].runs, 3);
	for (i = 0; i < 2; i++) {
		/* The host backend has no graphs: every run is eager. */
		cr_assert_not(info[i].captured);
		cr_assert_eq(info[i].captures, 0);
		cr_assert_eq(info[i].replays, 0);
		cr_assert_eq(info[i].eager_runs, info[i].runs);
		cr_assert_eq(info[i].steps, 1);
		cr_assert_eq(info[i].value_keys, 0);
		cr_assert_eq(info[i].inflight, 0);
		cr_assert_str_eq(info[i].capture_error, "");
		cr_assert_gt(info[i].block_bytes, 0);
		cr_assert_eq(info[i].block_bytes,
			     info[i].activation_bytes + info[i].workspace_bytes);
	}
	/* The session's own counters agree with the plans'. */
	engine_session_stats(f.s, &st);
	cr_assert_eq(st.eager_runs, info[0].eager_runs + info[1].eager_runs);
	cr_assert_eq(st.plan_bytes, info[0].block_bytes + info[1].block_bytes);

	/* A run with batch 2 makes its plan the most recent; looking does
	 * not change the order. */
	relu_run(&f, "x", 2);
	cr_assert_eq(engine_session_plans(f.s, info, 4), 2);
	cr_assert_eq(engine_session_plans(f.s, info, 4), 2);
	cr_assert_str_eq(info[0].signature, "x[2,3]");
	cr_assert_eq(info[0].runs, 4);
	cr_assert_str_eq(info[1].signature, "x[5,3]");
	fixture_close(&f);
}

Test(engine_inspect, max_bounds_what_is_written_not_the_count)
{
	struct engine_plan_info info[2];
	struct fixture f;

	relu_open(&f, "x", 0);
	relu_run(&f, "x", 1);
	relu_run(&f, "x", 2);
	relu_run(&f, "x", 3);
	memset(info, 0x5a, sizeof(info));
	cr_assert_eq(engine_session_plans(f.s, info, 1), 3);
	cr_assert_str_eq(info[0].signature, "x[3,3]");
	/* The second slot is untouched. */
	cr_assert_eq(((unsigned char *)&info[1])[0], 0x5a);
	cr_assert_eq(engine_session_plans(f.s, NULL, 0), 3);
	fixture_close(&f);
}

Test(engine_inspect, a_plan_is_captured_on_its_second_run_and_replayed)
{
	struct engine_plan_info info[1];
	struct fixture f;
	int i;

	relu_open(&f, "x", BACKEND_HOST_GRAPHS);
	relu_run(&f, "x", 4);
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	cr_assert_not(info[0].captured, "the first run goes eagerly");
	cr_assert_eq(info[0].eager_runs, 1);
	for (i = 0; i < 4; i++)
		relu_run(&f, "x", 4);
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	cr_assert(info[0].captured);
	cr_assert_eq(info[0].runs, 5);
	cr_assert_eq(info[0].captures, 1);
	cr_assert_eq(info[0].eager_runs, 1);
	cr_assert_eq(info[0].replays, 4, "the captured run replays, and so do the later ones");
	cr_assert_str_eq(info[0].capture_error, "");
	fixture_close(&f);
}

Test(engine_inspect, a_failed_capture_runs_eagerly_and_says_why)
{
	struct engine_plan_info info[1];
	struct fixture f;
	int i;

	relu_open(&f, "x", BACKEND_HOST_GRAPHS | BACKEND_HOST_FAIL_CAPTURE);
	for (i = 0; i < 3; i++)
		relu_run(&f, "x", 4);
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	cr_assert_not(info[0].captured);
	cr_assert_eq(info[0].captures, 0);
	cr_assert_eq(info[0].replays, 0);
	cr_assert_eq(info[0].eager_runs, 3);
	cr_assert(strstr(info[0].capture_error, "captures are refused") != NULL, "%s",
		  info[0].capture_error);
	fixture_close(&f);
}

/* x float32 [2,3,4] -> Reshape(x, shape) -> y: shape's values key the plan. */
Test(engine_inspect, values_that_key_a_plan_are_shown)
{
	static const int64_t xdims[3] = { 2, 3, 4 }, sdims[1] = { 2 };
	struct onnxb *b = onnxb_new(13);
	struct engine_plan_info info[2];
	float x[24], y[24];
	int64_t shape[2];
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, xdims, x, sizeof(x) },
		{ "shape", CEP_DTYPE_INT64, 1, sdims, shape, sizeof(shape) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct fixture f;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3,4");
	onnxb_input(b, "shape", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Reshape", "x,shape", "y");
	fixture_open(&f, b, 0);
	memset(x, 0, sizeof(x));
	shape[0] = 6;
	shape[1] = 4;
	cr_assert_eq(engine_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	shape[0] = -1;
	shape[1] = 12;
	cr_assert_eq(engine_run(f.s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_plans(f.s, info, 2), 2);
	cr_assert_str_eq(info[0].signature, "x[2,3,4] shape[2]={-1,12}");
	cr_assert_str_eq(info[1].signature, "x[2,3,4] shape[2]={6,4}");
	cr_assert_eq(info[0].value_keys, 1);
	fixture_close(&f);
}

static void done_noop(void *arg)
{
	*(bool *)arg = true;
}

Test(engine_inspect, runs_in_flight_are_counted_until_completed)
{
	float x[6], y[6];
	int64_t dims[2] = { 2, 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct engine_plan_info info[1];
	struct engine_run run;
	struct fixture f;
	bool done = false;
	struct engine_fence fence = { .done = done_noop, .arg = &done };

	relu_open(&f, "x", 0);
	memset(x, 0, sizeof(x));
	cr_assert_eq(engine_run_submit(f.s, &in, 1, &out, 1, 0, &fence, &run), 0, "%s",
		     cep_last_error());
	cr_assert(done, "the host backend completes as it queues");
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	cr_assert_eq(info[0].inflight, 1);
	cr_assert_eq(info[0].runs, 1);
	cr_assert_eq(info[0].eager_runs, 1);
	cr_assert_eq(engine_run_complete(f.s, &run, NULL), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	cr_assert_eq(info[0].inflight, 0);
	fixture_close(&f);
}

Test(engine_inspect, a_long_name_is_cut_on_a_character_boundary)
{
	char name[301];
	struct engine_plan_info info[1];
	struct fixture f;
	size_t len, i;

	/* 150 two-byte characters: é, 300 bytes, more than a signature holds. */
	for (i = 0; i < 150; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[300] = '\0';
	relu_open(&f, name, 0);
	relu_run(&f, name, 1);
	cr_assert_eq(engine_session_plans(f.s, info, 1), 1);
	len = strlen(info[0].signature);
	cr_assert_lt(len, ENGINE_SIGNATURE_MAX);
	cr_assert_geq(len, ENGINE_SIGNATURE_MAX - 6, "cut near the end, not early: %zu", len);
	cr_assert_str_eq(info[0].signature + len - 3, "...");
	/* Whole characters only before the ellipsis. */
	cr_assert_eq((len - 3) % 2, 0, "%zu bytes", len - 3);
	cr_assert_eq(memcmp(info[0].signature, name, len - 3), 0);
	fixture_close(&f);
}
