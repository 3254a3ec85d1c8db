/*
 * test_warm.c — "the warm path allocates nothing", checked against the
 * C library itself: this test binary interposes malloc and friends with
 * counting wrappers around glibc's own (__libc_malloc, ...), and a run of
 * a cached plan must not call any of them on the test's thread, nor
 * allocate backend memory, nor build a plan. Under AddressSanitizer the
 * allocator belongs to the sanitizer, so there only the engine's and the
 * backend's counters are checked (test_engine.c checks those too).
 * The same holds for plans keyed by input values (engine/plan.h): finding
 * one compares the values without allocating.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#include "tests/unit/malloc_count.h"

/* x [n, 16] -> MatMul -> Add -> Transpose -> Softmax -> Cast(fp16) -> y,
 * with a Shape -> Gather chain folded at plan time on the way. */
static engine_model *model_load(void)
{
	struct onnxb *b = onnxb_new(13);
	int64_t zero = 0;
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT16, NULL);
	onnxb_output(b, "rows", CEP_DTYPE_INT64, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "16,8", NULL);
	onnxb_init(b, "bias", CEP_DTYPE_FLOAT32, "8", NULL);
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "", &zero);
	onnxb_node(b, "MatMul", "x,w", "h");
	onnxb_node(b, "Add", "h,bias", "h2");
	onnxb_node(b, "Transpose", "h2", "t");
	onnxb_node(b, "Softmax", "t", "p");
	n = onnxb_node(b, "Cast", "p", "y");
	onnxb_attr_int(n, "to", CEP_DTYPE_FLOAT16);
	onnxb_node(b, "Shape", "x", "s");
	onnxb_node(b, "Gather", "s,zero", "rows");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

Test(warm, cached_runs_call_no_allocator)
{
	static float x[4 * 16];
	static uint16_t y[8 * 4];
	int64_t rows = 0, dims[2] = { 4, 16 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out[2] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "rows", .data = &rows, .capacity = sizeof(rows) },
	};
	struct backend_counters before, after;
	struct engine_stats s0, s1;
	struct backend *be;
	engine_model *m = model_load();
	engine_session *s;
	long counted;
	int i, failures = 0;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, out, 2), 0, "%s", cep_last_error());
	cr_assert_eq(rows, 4);
	backend_counters_get(be, &before);
	engine_session_stats(s, &s0);
	counted = allocs;
	for (i = 0; i < 100; i++)
		failures += eu_run(s, &in, 1, out, 2) != 0;
	counted = allocs - counted;
	backend_counters_get(be, &after);
	engine_session_stats(s, &s1);
	cr_assert_eq(failures, 0);
	cr_assert_eq(counted, 0, "%ld allocator calls on the warm path", counted);
	cr_assert_eq(after.allocs, before.allocs);
	cr_assert_eq(s1.plans_built, s0.plans_built);
	cr_assert_eq(s1.runs, s0.runs + 100);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* y = Reshape(x, Concat(Gather(Shape(x), [0]), v)): a plan keyed by the
 * value of v as well as by the shapes. */
static engine_model *value_model_load(void)
{
	struct onnxb *b = onnxb_new(13);
	int64_t zero = 0;
	engine_model *m = NULL;
	Onnx__NodeProto *n;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,3,4");
	onnxb_input(b, "v", CEP_DTYPE_INT64, "1");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "1", &zero);
	onnxb_node(b, "Shape", "x", "s");
	onnxb_node(b, "Gather", "s,zero", "d0");
	n = onnxb_node(b, "Concat", "d0,v", "t");
	onnxb_attr_int(n, "axis", 0);
	onnxb_node(b, "Reshape", "x,t", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

Test(warm, value_keyed_runs_call_no_allocator)
{
	static float x[2 * 3 * 4], y[2 * 3 * 4];
	int64_t v = 12, dims[3] = { 2, 3, 4 }, vdims[1] = { 1 };
	struct engine_input in[2] = {
		{ "x", CEP_DTYPE_FLOAT32, 3, dims, x, sizeof(x) },
		{ "v", CEP_DTYPE_INT64, 1, vdims, &v, sizeof(v) },
	};
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend_counters before, after;
	struct engine_stats s0, s1;
	struct backend *be;
	engine_model *m = value_model_load();
	engine_session *s;
	long counted;
	int i, failures = 0, wrong = 0;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	/* Two plans for two values of v, each run once (and captured where
	 * the backend captures) before counting. */
	for (i = 0; i < 4; i++) {
		v = i % 2 ? -1 : 12;
		cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	}
	engine_session_stats(s, &s0);
	cr_assert_eq(s0.plans_built, 2);
	backend_counters_get(be, &before);
	counted = allocs;
	for (i = 0; i < 100; i++) {
		v = i % 2 ? -1 : 12;
		failures += eu_run(s, in, 2, &out, 1) != 0;
		wrong += out.rank != 2 || out.dims[0] != 2 || out.dims[1] != 12;
	}
	counted = allocs - counted;
	backend_counters_get(be, &after);
	engine_session_stats(s, &s1);
	cr_assert_eq(failures, 0);
	cr_assert_eq(wrong, 0);
	cr_assert_eq(counted, 0, "%ld allocator calls on the warm path", counted);
	cr_assert_eq(after.allocs, before.allocs);
	cr_assert_eq(s1.plans_built, s0.plans_built);
	cr_assert_eq(s1.plan_hits, s0.plan_hits + 100);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

Test(warm, the_counter_does_count)
{
	long before = allocs;
	/* volatile, so that the compiler keeps a malloc it could see through */
	char *volatile p = malloc(32);

	cr_assert_not_null(p);
	p[0] = 1;
	free(p);
	/* Without interposition (sanitizer builds) nothing is counted. */
	cr_assert_eq(allocs - before, COUNT_MALLOC ? 1 : 0);
}
