/*
 * test_ctl_ops.c — cudaepctl's metrics and top commands against the fake
 * daemon, which can send what a real one would not yet: counters unknown
 * to this cudaepctl, names with every character that needs escaping or
 * masking, bytes that are not UTF-8, lists cut at the reply limit. The
 * exposition is checked line by line; tests/integration/test_ops.c parses
 * a real daemon's.
 *
 * The tool is found beside this test binary: $(BUILD)/bin/cudaepctl.
 */
#include "tests/unit/fakedaemon.h"

#include <criterion/criterion.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/ctl_run.h"

TestSuite(ctl_ops, .timeout = 30);

static struct fake_daemon fake;

/* A quote, a backslash, a line feed, a C0 control and a stray byte. */
static const char odd_name[] = "a\"b\\c\nd\x01\xff";
/* An escape sequence and a C1 control (CSI, U+009B) for the terminal. */
static const char rogue_name[] = "\x1b[31mred\xc2\x9b";

#define NAME(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

static enum fake_action scripted(struct fake_daemon *f,
				 const cudaep_v1_Request *req, int *fds,
				 int nfds, cudaep_v1_Response *resp)
{
	cudaep_v1_StatusReply *st = &resp->body.status_reply;
	cudaep_v1_StatsReply *stats = &resp->body.stats;
	cudaep_v1_ClientsReply *cl = &resp->body.clients;
	cudaep_v1_SessionsReply *se = &resp->body.sessions;
	cudaep_v1_MemoryReply *mem = &resp->body.memory;

	switch (req->which_body) {
	case cudaep_v1_Request_status_tag:
		resp->which_body = cudaep_v1_Response_status_reply_tag;
		NAME(st->daemon_version, "9.8.7");
		NAME(st->backend, "host");
		NAME(st->device_name, "fake \"cpu\"");
		NAME(st->socket_path, "/s");
		st->pid = 77;
		st->uptime_us = 2500000;
		st->clients = 2;
		st->sessions = 1;
		return FAKE_REPLY;
	case cudaep_v1_Request_stats_tag:
		resp->which_body = cudaep_v1_Response_stats_tag;
		stats->version = 1;
		stats->counters_count = 4;
		NAME(stats->counters[0].name, "requests");
		stats->counters[0].value = 5;
		NAME(stats->counters[1].name, "run_ns");
		stats->counters[1].value = 1500000000;
		NAME(stats->counters[2].name, "widgets");
		stats->counters[2].value = 3;
		NAME(stats->counters[3].name, "bad-name!");
		stats->counters[3].value = 1;
		stats->gauges_count = 1;
		NAME(stats->gauges[0].name, "sessions");
		stats->gauges[0].current = 2;
		stats->gauges[0].peak = 5;
		stats->gauges[0].total = 9;
		return FAKE_REPLY;
	case cudaep_v1_Request_clients_tag:
		resp->which_body = cudaep_v1_Response_clients_tag;
		cl->clients_count = 2;
		cl->total = 200;
		cl->clients[0].client_id = 7;
		NAME(cl->clients[0].name, odd_name);
		cl->clients[0].pid = 4321;
		cl->clients[0].uid = 1000;
		cl->clients[0].regions = 2;
		cl->clients[0].region_bytes = 8192;
		cl->clients[0].sessions = 1;
		cl->clients[0].requests = 11;
		cl->clients[1].client_id = 8;
		NAME(cl->clients[1].name, rogue_name);
		return FAKE_REPLY;
	case cudaep_v1_Request_sessions_tag:
		resp->which_body = cudaep_v1_Response_sessions_tag;
		se->sessions_count = 1;
		se->total = 1;
		se->sessions[0].session_id = 9;
		se->sessions[0].client_id = 7;
		se->sessions[0].runs = 42;
		NAME(se->sessions[0].name, rogue_name);
		return FAKE_REPLY;
	case cudaep_v1_Request_kernels_tag:
		/* A CUDA daemon's kernel counters. */
		resp->which_body = cudaep_v1_Response_kernels_tag;
		NAME(resp->body.kernels.backend, "cuda");
		resp->body.kernels.device_kernels = true;
		resp->body.kernels.total = 12;
		resp->body.kernels.compiles = 2;
		resp->body.kernels.compile_us = 3500000;
		resp->body.kernels.prebuilt_loads = 10;
		resp->body.kernels.prebuilt_rejects = 1;
		resp->body.kernels.disk_loads = 4;
		return FAKE_REPLY;
	case cudaep_v1_Request_memory_tag:
		resp->which_body = cudaep_v1_Response_memory_tag;
		mem->entries_count = 1;
		mem->total = 1;
		NAME(mem->entries[0].owner, "total");
		NAME(mem->entries[0].role, "regions");
		mem->entries[0].current = 4096;
		mem->entries[0].peak = 8192;
		mem->entries[0].limit = 1 << 20;
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
}

/* out holds line as one whole line. */
static void expect_line(const char *out, const char *line)
{
	size_t n = strlen(line);
	const char *p = out;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == out || p[-1] == '\n') && p[n] == '\n')
			return;
		p++;
	}
	cr_expect_fail("no line '%s' in:\n%s", line, out);
}

Test(ctl_ops, metrics_families_help_and_types, .init = start, .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "metrics", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	expect_line(r.out, "cudaep_info{version=\"9.8.7\",backend=\"host\","
			   "device=\"fake \\\"cpu\\\"\"} 1");
	expect_line(r.out, "cudaep_uptime_seconds 2.500");
	expect_line(r.out, "# HELP cudaep_requests_total packets received "
			   "from clients");
	expect_line(r.out, "# TYPE cudaep_requests_total counter");
	expect_line(r.out, "cudaep_requests_total 5");
	/* Nanoseconds are exported in seconds, and the help says so. */
	expect_line(r.out, "# HELP cudaep_run_seconds_total seconds from a "
			   "Run's arrival to its reply");
	expect_line(r.out, "cudaep_run_seconds_total 1.500000000");
	cr_expect_null(strstr(r.out, "run_ns"), "%s", r.out);
	/* A counter this cudaepctl does not know, and a name to repair. */
	expect_line(r.out, "# HELP cudaep_widgets_total cudaepd counter widgets");
	expect_line(r.out, "cudaep_widgets_total 3");
	expect_line(r.out, "# TYPE cudaep_bad_name__total counter");
	expect_line(r.out, "cudaep_bad_name__total 1");
	expect_line(r.out, "# TYPE cudaep_sessions gauge");
	expect_line(r.out, "cudaep_sessions 2");
	expect_line(r.out, "# HELP cudaep_sessions_peak highest value of "
			   "cudaep_sessions since the daemon started");
	expect_line(r.out, "cudaep_sessions_peak 5");
	/* Where the device kernels came from. */
	expect_line(r.out, "# TYPE cudaep_kernels_compiled_total counter");
	expect_line(r.out, "cudaep_kernels_compiled_total 2");
	expect_line(r.out, "cudaep_kernels_compile_seconds_total 3.500000");
	expect_line(r.out, "cudaep_kernels_prebuilt_loads_total 10");
	expect_line(r.out, "cudaep_kernels_prebuilt_rejects_total 1");
	expect_line(r.out, "cudaep_kernels_disk_loads_total 4");
	expect_line(r.out, "# TYPE cudaep_kernels_modules gauge");
	expect_line(r.out, "cudaep_kernels_modules 12");
}

Test(ctl_ops, metrics_labels_are_escaped, .init = start, .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "metrics", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* \" \\ \n escaped, the control byte kept, 0xff made U+FFFD. */
	expect_line(r.out, "cudaep_client_region_bytes{client=\"7\",pid=\"4321\","
			   "uid=\"1000\",name=\"a\\\"b\\\\c\\nd\x01\xef\xbf\xbd\"} "
			   "8192");
	expect_line(r.out, "cudaep_client_requests_total{client=\"7\","
			   "pid=\"4321\",uid=\"1000\",name=\"a\\\"b\\\\c\\nd"
			   "\x01\xef\xbf\xbd\"} 11");
	expect_line(r.out, "# TYPE cudaep_client_requests_total counter");
	expect_line(r.out, "# cudaep: 2 of 200 clients listed");
	expect_line(r.out, "cudaep_session_runs_total{session=\"9\",client=\"7\","
			   "name=\"\x1b[31mred\xc2\x9b\"} 42");
	cr_expect_null(strstr(r.out, "sessions listed"), "%s", r.out);
}

Test(ctl_ops, metrics_refuses_json, .init = start, .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "metrics",
				     NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.out, "");
	cr_expect_eq(fake.connections, 0);
}

Test(ctl_ops, top_once_masks_what_would_drive_the_terminal, .init = start,
     .fini = stop)
{
	static struct ctl_result r;

	ctl_run(&r, (const char *[]){"--socket", fake.path, "top", "--once",
				     "--interval", "0.1", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "cudaepd 9.8.7 at ", 17), 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "backend host: fake \"cpu\"\n"), "%s",
			   r.out);
	cr_expect_null(strchr(r.out, '\x1b'), "%s", r.out);
	cr_expect_null(strstr(r.out, "\xc2\x9b"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "?[31mred?\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "a\"b\\c?d?\xff\n"), "%s", r.out);
	/* The fake's counters stand still: the rates are real zeros. */
	cr_expect_not_null(strstr(r.out, "requests/s 0.0 "), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "memory regions: 4.0 KiB, peak 8.0 KiB, "
					 "limit 1.0 MiB\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "... 198 more\n"), "%s", r.out);
	/* Two samples of five requests each, after the Hello. */
	cr_expect_eq(fake.requests, 1 + 2 * 5);
}
