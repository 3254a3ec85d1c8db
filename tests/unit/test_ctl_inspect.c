/*
 * test_ctl_inspect.c — `cudaepctl graphs` and `cudaepctl kernels` against
 * the fake daemon, which can answer as a CUDA daemon would without a GPU:
 * the exact text tables, the lines for a failed capture and a busy
 * session, the JSON, a cut list, the kernels of a CUDA backend with the
 * cache's totals, and the host backend's no-device-kernels line.
 * tests/integration/test_inspect.c runs both against a real daemon.
 *
 * The tool is found beside this test binary: $(BUILD)/bin/cudaepctl.
 */
#include "tests/unit/fakedaemon.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "tests/unit/ctl_run.h"

TestSuite(ctl_inspect, .timeout = 30);

static struct fake_daemon fake;

#define NAME(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

/* Which kernels reply the fake gives: a CUDA daemon's, or the host's. */
static bool cuda;

static enum fake_action scripted(struct fake_daemon *f, const cudaep_v1_Request *req,
				 int *fds, int nfds, cudaep_v1_Response *resp)
{
	cudaep_v1_GraphsReply *g = &resp->body.graphs;
	cudaep_v1_KernelsReply *k = &resp->body.kernels;

	switch (req->which_body) {
	case cudaep_v1_Request_graphs_tag:
		resp->which_body = cudaep_v1_Response_graphs_tag;
		g->graphs_count = 3;
		g->total = 5;
		g->graphs[0].session_id = 3;
		g->graphs[0].client_id = 7;
		NAME(g->graphs[0].session_name, "bert");
		NAME(g->graphs[0].signature, "ids[1,128] mask[1,128]");
		g->graphs[0].captured = true;
		g->graphs[0].captures = 1;
		g->graphs[0].runs = 40;
		g->graphs[0].replays = 39;
		g->graphs[0].eager_runs = 1;
		g->graphs[0].steps = 212;
		g->graphs[0].device_bytes = 3 << 20;
		g->graphs[1].session_id = 3;
		g->graphs[1].client_id = 7;
		NAME(g->graphs[1].session_name, "bert");
		NAME(g->graphs[1].signature, "ids[2,\x1b""7] shape[2]={1,6}");
		g->graphs[1].value_keys = 1;
		g->graphs[1].runs = 2;
		g->graphs[1].eager_runs = 2;
		g->graphs[1].steps = 9;
		g->graphs[1].device_bytes = 1536;
		NAME(g->graphs[1].capture_error, "cuStreamEndCapture: not permitted");
		g->graphs[2].session_id = 4;
		g->graphs[2].client_id = 8;
		NAME(g->graphs[2].session_name, "resnet");
		g->graphs[2].busy = true;
		return FAKE_REPLY;
	case cudaep_v1_Request_kernels_tag:
		resp->which_body = cudaep_v1_Response_kernels_tag;
		if (!cuda) {
			NAME(k->backend, "host");
			return FAKE_REPLY;
		}
		NAME(k->backend, "cuda");
		k->device_kernels = true;
		k->arch = 90;
		k->kernels_count = 2;
		k->total = 2;
		NAME(k->kernels[0].name, "binary");
		k->kernels[0].arch = 90;
		NAME(k->kernels[0].origin, "compiled");
		k->kernels[0].compile_us = 1250000;
		k->kernels[0].load_us = 1262000;
		k->kernels[0].image_bytes = 46080;
		NAME(k->kernels[1].name, "activation");
		k->kernels[1].arch = 90;
		NAME(k->kernels[1].origin, "disk");
		k->kernels[1].load_us = 840;
		k->kernels[1].image_bytes = 20480;
		k->compiles = 1;
		k->compile_us = 1250000;
		k->disk_loads = 1;
		k->memory_hits = 17;
		k->disk_writes = 1;
		k->prebuilt_loads = 3;
		NAME(k->cache_dir, "/var/cache/cudaep");
		NAME(k->kernel_pack, "/usr/lib/cudaep/kernels.pack");
		return FAKE_REPLY;
	}
	return fake_default(f, req, fds, nfds, resp);
}

static void start(void)
{
	cr_assert_eq(fake_start(&fake, scripted, NULL), 0);
}

static void stop(void)
{
	fake_stop(&fake);
	cuda = false;
}

Test(ctl_inspect, graphs_table_with_capture_failures_and_busy_sessions, .init = start,
     .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	cr_expect_str_eq(r.out,
		"# Graphs\n"
		"SESSION  CLIENT  NAME  RUNS  CAPTURED  CAPTURES  REPLAYS  EAGER  STEPS  PLAN MEM  "
		"SIGNATURE\n"
		"      3       7  bert    40  yes              1       39      1    212   3.0 MiB  "
		"ids[1,128] mask[1,128]\n"
		"      3       7  bert     2  no               0        0      2      9   1.5 KiB  "
		"ids[2,?7] shape[2]={1,6}\n"
		"(2 of 4 shown)\n"
		"session 3 plan ids[2,?7] shape[2]={1,6}: runs eagerly, its graph capture failed: "
		"cuStreamEndCapture: not permitted\n"
		"session 4: busy planning or running on the daemon's thread pool; its plans are "
		"not shown (ask again)\n");
}

Test(ctl_inspect, graphs_json_carries_every_field, .init = start, .fini = stop)
{
	static const char head[] =
		"{\"graphs\":[{\"session_id\":3,\"client_id\":7,\"session_name\":\"bert\","
		"\"runs\":40,\"captured\":true,\"captures\":1,\"replays\":39,"
		"\"eager_runs\":1,\"steps\":212,\"device_bytes\":3145728,"
		"\"signature\":\"ids[1,128] mask[1,128]\",\"value_keys\":0,"
		"\"capture_error\":\"\",\"busy\":false},";
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "graphs", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"signature\":\"ids[2,\\u001b7] shape[2]={1,6}\","
				  "\"value_keys\":1,\"capture_error\":\"cuStreamEndCapture: "
				  "not permitted\",\"busy\":false}"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"session_name\":\"resnet\",\"runs\":0"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"busy\":true}],\"total\":5}\n"), "%s", r.out);
}

Test(ctl_inspect, kernels_of_a_cuda_daemon, .init = start, .fini = stop)
{
	static struct ctl_result r;

	cuda = true;
	ctl_run(&r, (const char *[]){"--socket", fake.path, "kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out,
		"# Kernels\n"
		"backend:cuda\n"
		"device_kernels:yes\n"
		"arch:90\n"
		"compiles:1\n"
		"compile_us:1250000\n"
		"compile_us_human:1.2s\n"
		"prebuilt_loads:3\n"
		"prebuilt_rejects:0\n"
		"disk_loads:1\n"
		"memory_hits:17\n"
		"disk_writes:1\n"
		"disk_rejects:0\n"
		"disk_errors:0\n"
		"cache_dir:/var/cache/cudaep\n"
		"kernel_pack:/usr/lib/cudaep/kernels.pack\n"
		"kernel_pack_note:\n"
		"\n"
		"# Modules\n"
		"NAME        ARCH  ORIGIN    COMPILE   LOAD      SIZE\n"
		"binary        90  compiled     1.2s   1.3s  45.0 KiB\n"
		"activation    90  disk          0us  840us  20.0 KiB\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out,
		"{\"backend\":\"cuda\",\"device_kernels\":true,\"arch\":90,\"compiles\":1,"
		"\"compile_us\":1250000,\"prebuilt_loads\":3,\"prebuilt_rejects\":0,\"disk_loads\":1,\"memory_hits\":17,\"disk_writes\":1,"
		"\"disk_rejects\":0,\"disk_errors\":0,\"cache_dir\":\"/var/cache/cudaep\","
		"\"kernel_pack\":\"/usr/lib/cudaep/kernels.pack\",\"kernel_pack_note\":\"\","
		"\"kernels\":[{\"name\":\"binary\",\"arch\":90,\"origin\":\"compiled\","
		"\"compile_us\":1250000,\"load_us\":1262000,\"image_bytes\":46080},"
		"{\"name\":\"activation\",\"arch\":90,\"origin\":\"disk\",\"compile_us\":0,"
		"\"load_us\":840,\"image_bytes\":20480}],\"total\":2}\n");
}

Test(ctl_inspect, kernels_on_the_host_backend_say_there_are_none, .init = start,
     .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "kernels", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "# Kernels\nbackend:host\ndevice_kernels:no\n"
				"no device kernels: the host backend runs the CPU reference "
				"kernels and compiles none\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "kernels", NULL});
	cr_expect_str_eq(r.out, "{\"backend\":\"host\",\"device_kernels\":false}\n");
}

Test(ctl_inspect, both_take_no_arguments, .init = start, .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "graphs", "3", NULL});
	cr_expect_eq(r.status, 2);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "kernels", "x", NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_eq(fake.connections, 0);
}
