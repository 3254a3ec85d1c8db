/*
 * test_backend.c — the host backend behind the backend seam: aligned
 * memory and its counters, copies, events and streams, and graph capture:
 * recorded launches do not run until replayed, and replay runs them in
 * order as often as asked; without BACKEND_HOST_GRAPHS there are no graphs.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "cudaep.h"
#include "ops.h"

Test(backend, memory_is_aligned_and_counted)
{
	struct backend *be;
	struct backend_counters c;
	void *a, *b;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_str_eq(be->iface.name, "host");
	cr_assert(be->caps & BACKEND_CAP_HOST_MEMORY);
	cr_assert_not(be->caps & BACKEND_CAP_GRAPHS);
	cr_assert_eq(backend_mem_alloc(be, 1000, &a), 0);
	cr_assert_eq(backend_mem_alloc(be, 0, &b), 0);
	cr_assert_eq((uintptr_t)a % BACKEND_ALIGN, 0);
	cr_assert_eq((uintptr_t)b % BACKEND_ALIGN, 0);
	backend_counters_get(be, &c);
	cr_assert_eq(c.allocs, 2);
	cr_assert_eq(c.bytes_live, 1001);
	backend_mem_free(be, a, 1000);
	backend_mem_free(be, b, 0);
	backend_mem_free(be, NULL, 5);
	backend_counters_get(be, &c);
	cr_assert_eq(c.frees, 2);
	cr_assert_eq(c.bytes_live, 0);
	cr_assert_eq(c.bytes_peak, 1001);
	backend_free(be);
	backend_free(NULL);
}

Test(backend, copies_events_and_streams)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_event *e;
	struct backend_counters c;
	char src[16] = "hello, backend!", dst[16] = { 0 }, dev[16];

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(backend_stream_new(be, CEP_PRIORITY_HIGH, &s), 0);
	cr_assert_eq(backend_event_new(be, &e), 0);
	cr_assert_eq(backend_copy_h2d(be, s, dev, src, sizeof(src)), 0);
	cr_assert_eq(backend_copy_d2d(be, s, dst, dev, sizeof(src)), 0);
	cr_assert_eq(backend_copy_d2h(be, s, dst, dst, 0), 0);
	cr_assert_eq(backend_event_record(be, e, s), 0);
	cr_assert_eq(backend_stream_wait(be, s, e), 0);
	cr_assert_eq(backend_event_query(be, e), 0);
	cr_assert_eq(backend_event_sync(be, e), 0);
	cr_assert_eq(backend_stream_sync(be, s), 0);
	cr_assert_str_eq(dst, src);
	backend_counters_get(be, &c);
	cr_assert_eq(c.copies_h2d, 1);
	cr_assert_eq(c.copies_d2d, 1);
	cr_assert_eq(c.copies_d2h, 0, "empty copies are not counted");
	cr_assert_eq(c.bytes_h2d, 16);
	cr_assert_eq(c.syncs, 2);
	backend_event_free(be, e);
	backend_event_free(be, NULL);
	backend_stream_free(be, s);
	backend_stream_free(be, NULL);
	backend_free(be);
}

static int counter_kernel(struct op_call *call)
{
	int *n = call->workspace;

	*n = *n * 10 + (int)call->workspace_bytes;
	return 0;
}

Test(backend, captured_launches_run_only_on_replay)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_graph *g;
	struct op_call c1 = { 0 }, c2 = { 0 };
	int n = 0, staged = 0, seen = 0;

	cr_assert_eq(backend_host_new(BACKEND_HOST_GRAPHS, &be), 0);
	cr_assert(be->caps & BACKEND_CAP_GRAPHS);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	c1.workspace = &n;
	c1.workspace_bytes = 1;
	c2.workspace = &n;
	c2.workspace_bytes = 2;
	cr_assert_eq(backend_graph_begin(be, s), 0);
	cr_assert_eq(backend_graph_begin(be, s), CEP_EBUSY);
	cr_assert_eq(backend_launch(be, s, counter_kernel, &c1), 0);
	cr_assert_eq(backend_copy_h2d(be, s, &seen, &staged, sizeof(int)), 0);
	cr_assert_eq(backend_launch(be, s, counter_kernel, &c2), 0);
	cr_assert_eq(backend_graph_end(be, s, &g), 0);
	cr_assert_eq(n, 0, "nothing ran while capturing");
	staged = 7;
	cr_assert_eq(backend_graph_replay(be, g, s), 0);
	cr_assert_eq(n, 12, "c1 then c2");
	cr_assert_eq(seen, 7, "the copy reads its source at replay time");
	cr_assert_eq(backend_graph_replay(be, g, s), 0);
	cr_assert_eq(n, 1212);
	backend_graph_free(be, g);
	backend_graph_free(be, NULL);
	cr_assert_eq(backend_graph_end(be, s, &g), CEP_EINVAL);
	backend_stream_free(be, s);
	backend_free(be);
}

Test(backend, no_graphs_unless_asked)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_graph *g;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	cr_assert_eq(backend_graph_begin(be, s), CEP_ENOTSUP);
	cr_assert_str_eq(cep_last_error(), "the host backend does not capture graphs");
	cr_assert_eq(backend_graph_end(be, s, &g), CEP_ENOTSUP);
	cr_assert_null(g);
	cr_assert_str_eq(backend_kind_name(BACKEND_CUDA), "cuda");
	backend_stream_free(be, s);
	backend_free(be);
}
