/*
 * test_backend.c — the host backend behind the backend seam: aligned
 * memory and its counters, copies, events and streams, and graph capture:
 * recorded launches do not run until replayed, and replay runs them in
 * order as often as asked; without BACKEND_HOST_GRAPHS there are no graphs.
 * Registered host memory: copies from it count as pinned, fences land in
 * it (and nowhere else), host functions run, and a registration waits for
 * a capture that is open on another thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "kernels/ops.h"

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

Test(backend, registered_memory_counts_copies_as_pinned)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_counters c;
	static uint8_t region[8192], other[64], dev[8192];
	uint64_t d = 0;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	for (size_t i = 0; i < sizeof(region); i++)
		region[i] = (uint8_t)(i * 7 + 1);
	cr_assert_eq(backend_host_register(be, region, sizeof(region)), 0);
	cr_assert(backend_host_registered(be, region + 100, 200, &d));
	cr_assert_eq(d, (uint64_t)(uintptr_t)(region + 100), "the host backend's device "
		     "address is the host address");
	cr_assert_not(backend_host_registered(be, region + 8000, 200, NULL),
		      "a range running past the end is not inside");
	cr_assert_not(backend_host_registered(be, other, 8, NULL));
	cr_assert_eq(backend_host_register(be, region + 4096, 16), CEP_EINVAL,
		     "overlapping registrations are refused");
	cr_assert_eq(backend_host_register(be, NULL, 16), CEP_EINVAL);

	cr_assert_eq(backend_copy_h2d(be, s, dev, region, 4096), 0);
	cr_assert_eq(backend_copy_h2d(be, s, dev, other, 64), 0);
	cr_assert_eq(backend_copy_d2h(be, s, region + 4096, dev, 4096), 0);
	cr_assert_eq(backend_copy_d2h(be, s, other, dev, 32), 0);
	/* dev holds region's first half, its first 64 bytes overwritten by
	 * other's zeros; the second half of region got that back. */
	for (size_t i = 0; i < 4096; i++)
		cr_assert_eq(region[4096 + i], i < 64 ? 0 : (uint8_t)(i * 7 + 1), "byte %zu", i);
	backend_counters_get(be, &c);
	cr_assert_eq(c.bytes_h2d, 4096 + 64);
	cr_assert_eq(c.bytes_h2d_pinned, 4096);
	cr_assert_eq(c.bytes_h2d_pageable, 64);
	cr_assert_eq(c.bytes_d2h_pinned, 4096);
	cr_assert_eq(c.bytes_d2h_pageable, 32);
	cr_assert_eq(c.host_registers, 1);
	cr_assert_eq(c.host_bytes, sizeof(region));

	backend_host_unregister(be, region);
	backend_host_unregister(be, region);   /* twice: ignored */
	backend_host_unregister(be, NULL);
	cr_assert_not(backend_host_registered(be, region, 1, NULL));
	backend_counters_get(be, &c);
	cr_assert_eq(c.host_unregisters, 1);
	cr_assert_eq(c.host_bytes, 0);
	backend_stream_free(be, s);
	backend_free(be);
}

static void note_call(void *arg)
{
	atomic_fetch_add((_Atomic int *)arg, 1);
}

Test(backend, fences_land_in_registered_memory_only)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_counters c;
	struct backend_fault *fault;
	uint64_t *page, loose = 0;
	_Atomic int calls = 0;

	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	page = aligned_alloc(4096, 4096);
	cr_assert_not_null(page);
	memset(page, 0xff, 4096);
	cr_assert_eq(backend_host_register(be, page, 4096), 0);
	cr_assert_eq(backend_stream_write_value64(be, s, &page[3], 0x1234567890abull), 0);
	cr_assert_eq(page[3], 0x1234567890abull);
	cr_assert_eq(page[2], UINT64_MAX, "nothing beside the fence is written");
	cr_assert_eq(page[4], UINT64_MAX);
	cr_assert_eq(backend_stream_write_value64(be, s, &loose, 5), CEP_EINVAL,
		     "a fence outside registered memory is refused");
	cr_assert_eq(loose, 0);
	cr_assert_eq(backend_stream_write_value64(be, s, (uint64_t *)((char *)page + 4), 5),
		     CEP_EINVAL, "an unaligned fence is refused");

	cr_assert_eq(backend_stream_host_fn(be, s, note_call, (void *)&calls), 0);
	cr_assert_eq(calls, 1, "the host backend calls a host function at once");

	fault = (struct backend_fault *)(page + 8);
	cr_assert_eq(backend_stream_fault_save(be, s, fault), 0,
		     "host kernels report their own errors: nothing to copy back");
	cr_assert_eq(fault->flag, 0, "the record is cleared");
	cr_assert_eq(backend_fault_error(fault, NULL), 0);
	cr_assert_eq(backend_stream_fault_save(be, s, (struct backend_fault *)&loose + 0),
		     CEP_EINVAL);

	backend_counters_get(be, &c);
	cr_assert_eq(c.fences, 1);
	cr_assert_eq(c.host_fns, 1);
	backend_host_unregister(be, page);
	free(page);
	backend_stream_free(be, s);
	backend_free(be);
}

Test(backend, a_fault_record_names_the_operator)
{
	struct op_node node = { 0 };
	struct op_call call = { 0 };
	struct backend_fault f = { 0 };
	const struct op_call *who = (void *)&f;

	cr_assert_eq(backend_fault_error(&f, &who), 0);
	cr_assert_null(who);
	node.op_type = "Gather";
	call.node = &node;
	f.flag = 1;
	f.axis = 1;
	f.site = (uint64_t)(uintptr_t)&call;
	f.value = -9;
	f.limit = 4;
	cr_assert_eq(backend_fault_error(&f, &who), CEP_EINVAL);
	cr_assert_eq(who, &call);
	cr_assert_str_eq(cep_last_error(), "Gather: index -9 is out of range for dimension 1 "
			 "of size 4");
}

struct gate_test {
	struct backend *be;
	uint8_t *mem;
	_Atomic int step;        /* the order things happened in */
	_Atomic int started;     /* the registering thread is about to call */
	int capture_ended;       /* step at which the capture was ending */
	int registered;          /* step at which the registration returned */
};

static void *gate_register(void *arg)
{
	struct gate_test *t = arg;

	atomic_store(&t->started, 1);
	cr_assert_eq(backend_host_register(t->be, t->mem, 4096), 0);
	t->registered = atomic_fetch_add(&t->step, 1);
	return NULL;
}

Test(backend, a_registration_waits_for_an_open_capture)
{
	struct gate_test t = { 0 };
	struct backend_stream *s;
	struct backend_graph *g;
	pthread_t th;

	cr_assert_eq(backend_host_new(BACKEND_HOST_GRAPHS, &t.be), 0);
	cr_assert_eq(backend_stream_new(t.be, 0, &s), 0);
	t.mem = aligned_alloc(4096, 4096);
	cr_assert_eq(backend_graph_begin(t.be, s), 0);
	cr_assert_eq(pthread_create(&th, NULL, gate_register, &t), 0);
	while (!atomic_load(&t.started))
		sched_yield();
	/* Give the other thread every chance to get in while the capture is
	 * open; with the gate it cannot, whatever the scheduling. */
	usleep(20000);
	t.capture_ended = atomic_fetch_add(&t.step, 1);
	cr_assert_eq(backend_graph_end(t.be, s, &g), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_gt(t.registered, t.capture_ended, "the registration returned while "
		     "the capture was open");
	cr_assert(backend_host_registered(t.be, t.mem, 4096, NULL));
	backend_host_unregister(t.be, t.mem);
	backend_graph_free(t.be, g);
	backend_stream_free(t.be, s);
	backend_free(t.be);
	free(t.mem);
}

/* ------------------------------------------------- asynchronous streams */

static _Atomic int gate_go;       /* the blocking kernel waits for this */
static _Atomic int order_next;    /* ranks of the calls below */

static int blocking_kernel(struct op_call *call)
{
	while (!atomic_load(&gate_go))
		sched_yield();
	return 0;
}

static int failing_kernel(struct op_call *call)
{
	return cep__set_error(CEP_EINVAL, "Gather: index 9 is out of range (test)");
}

struct seen {
	_Atomic int calls;
	int rank;
	uint64_t fence;             /* the fence word when the call ran */
	char copied[8];             /* the copy's target when the call ran */
};

static struct {
	uint64_t *fence;
	char *dst;
} watch;

static void seen_call(void *arg)
{
	struct seen *s = arg;

	s->rank = atomic_fetch_add(&order_next, 1);
	s->fence = atomic_load((_Atomic uint64_t *)watch.fence);
	memcpy(s->copied, watch.dst, sizeof(s->copied));
	atomic_fetch_add(&s->calls, 1);
}

Test(backend, an_async_stream_runs_its_work_later_and_in_order)
{
	struct backend *be;
	struct backend_stream *s;
	struct backend_event *e;
	struct op_call block = { 0 };
	struct seen first = { 0 }, second = { 0 };
	uint64_t *page;
	char src[8] = "abcdefg", dst[8] = "-------";

	atomic_store(&gate_go, 0);
	atomic_store(&order_next, 0);
	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &be), 0);
	cr_assert(be->caps & BACKEND_CAP_ASYNC);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	cr_assert_eq(backend_event_new(be, &e), 0);
	page = aligned_alloc(4096, 4096);
	memset(page, 0, 4096);
	cr_assert_eq(backend_host_register(be, page, 4096), 0);
	watch.fence = page;
	watch.dst = dst;

	cr_assert_eq(backend_launch(be, s, blocking_kernel, &block), 0);
	cr_assert_eq(backend_stream_host_fn(be, s, seen_call, &first), 0);
	cr_assert_eq(backend_copy_h2d(be, s, dst, src, sizeof(src)), 0);
	cr_assert_eq(backend_stream_write_value64(be, s, page, 77), 0);
	cr_assert_eq(backend_event_record(be, e, s), 0);
	cr_assert_eq(backend_stream_host_fn(be, s, seen_call, &second), 0);
	/* The kernel holds the stream until go: nothing after it has run. */
	cr_assert_eq(backend_event_query(be, e), CEP_EAGAIN);
	cr_assert_eq(atomic_load(&first.calls), 0);
	cr_assert_str_eq(dst, "-------");
	cr_assert_eq(page[0], 0);

	atomic_store(&gate_go, 1);
	cr_assert_eq(backend_event_sync(be, e), 0);
	cr_assert_eq(backend_event_query(be, e), 0);
	cr_assert_eq(backend_stream_sync(be, s), 0);
	cr_assert_eq(first.calls, 1);
	cr_assert_eq(second.calls, 1);
	cr_assert_eq(first.rank, 0);
	cr_assert_eq(second.rank, 1);
	cr_assert_eq(first.fence, 0, "the first call came before the fence");
	cr_assert_eq(memcmp(first.copied, "-------", 8), 0, "and before the copy");
	cr_assert_eq(second.fence, 77, "the second came after both");
	cr_assert_str_eq(second.copied, "abcdefg");

	backend_host_unregister(be, page);
	free(page);
	backend_event_free(be, e);
	backend_stream_free(be, s);
	backend_free(be);
}

Test(backend, an_async_stream_waits_for_an_event_of_another)
{
	struct backend *be;
	struct backend_stream *a, *b;
	struct backend_event *e;
	struct op_call block = { 0 };
	struct seen after = { 0 };
	uint64_t *page;
	char dst[8] = "-------";

	atomic_store(&gate_go, 0);
	atomic_store(&order_next, 0);
	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &a), 0);
	cr_assert_eq(backend_stream_new(be, 0, &b), 0);
	cr_assert_eq(backend_event_new(be, &e), 0);
	page = aligned_alloc(4096, 4096);
	memset(page, 0, 4096);
	cr_assert_eq(backend_host_register(be, page, 4096), 0);
	watch.fence = page;
	watch.dst = dst;
	cr_assert_eq(backend_launch(be, a, blocking_kernel, &block), 0);
	cr_assert_eq(backend_stream_write_value64(be, a, page, 5), 0);
	cr_assert_eq(backend_event_record(be, e, a), 0);
	cr_assert_eq(backend_stream_wait(be, b, e), 0);
	cr_assert_eq(backend_stream_host_fn(be, b, seen_call, &after), 0);
	atomic_store(&gate_go, 1);
	cr_assert_eq(backend_stream_sync(be, b), 0);
	cr_assert_eq(after.calls, 1);
	cr_assert_eq(after.fence, 5, "b ran its call only after a reached the event");
	backend_host_unregister(be, page);
	free(page);
	backend_event_free(be, e);
	backend_stream_free(be, a);
	backend_stream_free(be, b);
	backend_free(be);
}

Test(backend, an_async_stream_latches_a_kernel_failure)
{
	struct backend *be;
	struct backend_stream *s;
	struct op_call bad = { 0 }, good = { 0 };
	struct backend_fault *f;
	const struct op_call *who;
	uint64_t *page;
	int n = 0;

	cr_assert_eq(backend_host_new(BACKEND_HOST_ASYNC, &be), 0);
	cr_assert_eq(backend_stream_new(be, 0, &s), 0);
	page = aligned_alloc(4096, 4096);
	memset(page, 0xee, 4096);
	cr_assert_eq(backend_host_register(be, page, 4096), 0);
	good.workspace = &n;
	good.workspace_bytes = 3;

	/* Through a sync: the launch itself succeeds, the sync reports it. */
	cr_assert_eq(backend_launch(be, s, failing_kernel, &bad), 0);
	cr_assert_eq(backend_launch(be, s, counter_kernel, &good), 0);
	cr_assert_eq(backend_stream_sync(be, s), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Gather: index 9 is out of range (test)");
	cr_assert_eq(backend_stream_fault(be, s), &bad);
	cr_assert_eq(n, 3, "work after the failure still ran");
	cr_assert_eq(backend_stream_sync(be, s), 0, "a sync reports a failure once");

	/* Through a run's own record, which the next run's does not see. */
	f = (struct backend_fault *)page;
	cr_assert_eq(backend_launch(be, s, failing_kernel, &bad), 0);
	cr_assert_eq(backend_stream_fault_save(be, s, &f[0]), 1);
	cr_assert_eq(backend_launch(be, s, counter_kernel, &good), 0);
	cr_assert_eq(backend_stream_fault_save(be, s, &f[1]), 1);
	cr_assert_eq(backend_stream_sync(be, s), 0, "the records took the failure");
	cr_assert_eq(backend_fault_error(&f[0], &who), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "Gather: index 9 is out of range (test)");
	cr_assert_eq(who, &bad);
	cr_assert_eq(backend_fault_error(&f[1], &who), 0);
	cr_assert_null(who);
	backend_host_unregister(be, page);
	free(page);
	backend_stream_free(be, s);
	backend_free(be);
}
