/*
 * test_client_ctl.c — cudaepctl: its JSON string escaping and number
 * formats (cudaepctl_out.c, compiled in here since it is not part of any
 * library), and the built tool run against the fake daemon: INFO-style text,
 * exact JSON, tables, exit statuses and messages.
 *
 * The tool is found beside this test binary: $(BUILD)/bin/cudaepctl.
 */
#include "tests/unit/fakedaemon.h"

#include "tools/cudaepctl/cudaepctl_out.c"

#include <criterion/criterion.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/ctl_run.h"

TestSuite(client_ctl, .timeout = 30);

/* ------------------------------------------------------------ escaping */

static char *escaped(const char *s)
{
	static char buf[512];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	cr_assert_not_null(f);
	ctl_json_string(f, s);
	fclose(f);
	return buf;
}

Test(client_ctl, json_escapes_specials_and_controls)
{
	cr_expect_str_eq(escaped(""), "\"\"");
	cr_expect_str_eq(escaped("plain name"), "\"plain name\"");
	cr_expect_str_eq(escaped("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
	cr_expect_str_eq(escaped("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
	cr_expect_str_eq(escaped("\x01x\x1f\x7f"), "\"\\u0001x\\u001f\\u007f\"");
}

Test(client_ctl, json_keeps_utf8_and_replaces_invalid_bytes)
{
	/* é, 日本, an emoji: valid sequences pass through unchanged. */
	cr_expect_str_eq(escaped("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"),
			 "\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"");
	cr_expect_str_eq(escaped("\xff"), "\"\\ufffd\"");
	/* A lead byte cut short, then ASCII that must survive. */
	cr_expect_str_eq(escaped("\xc3z"), "\"\\ufffdz\"");
	/* Overlong '/', a UTF-16 surrogate, and a code point past U+10FFFF. */
	cr_expect_str_eq(escaped("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	cr_expect_str_eq(escaped("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	cr_expect_str_eq(escaped("\xf4\x90\x80\x80"),
			 "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* A truncated 3-byte sequence at the very end. */
	cr_expect_str_eq(escaped("ok\xe6\x97"), "\"ok\\ufffd\\ufffd\"");
}

Test(client_ctl, human_numbers)
{
	char b[32];

	cr_expect_str_eq(ctl_fmt_bytes(b, sizeof(b), 0), "0 B");
	cr_expect_str_eq(ctl_fmt_bytes(b, sizeof(b), 1023), "1023 B");
	cr_expect_str_eq(ctl_fmt_bytes(b, sizeof(b), 1536), "1.5 KiB");
	cr_expect_str_eq(ctl_fmt_bytes(b, sizeof(b), 3u << 30), "3.0 GiB");
	cr_expect_str_eq(ctl_fmt_bytes(b, sizeof(b), UINT64_MAX), "16.0 EiB");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 999), "999us");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 2500), "2.5ms");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 4200000), "4.2s");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 183000000), "3m03s");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 3723000000u), "1h02m");
	cr_expect_str_eq(ctl_fmt_usec(b, sizeof(b), 90000000000u), "1d01h");
}

/* ------------------------------------------------------- the tool itself */

static struct fake_daemon fake;

static const char odd_name[] = "a\"b\\c\nd\x01\xff";

/* Whether the fake lists two sessions (else none). */
static bool with_sessions;

static enum fake_action admin(struct fake_daemon *f,
			      const cudaep_v1_Request *req, int *fds, int nfds,
			      cudaep_v1_Response *resp)
{
	cudaep_v1_StatusReply *st = &resp->body.status_reply;
	cudaep_v1_ClientsReply *cl = &resp->body.clients;
	cudaep_v1_MemoryReply *mem = &resp->body.memory;
	cudaep_v1_StatsReply *stats = &resp->body.stats;

	if (f->arg != NULL && req->which_body != cudaep_v1_Request_hello_tag) {
		fake_error(resp, CEP_EPERM, f->arg);
		return FAKE_REPLY;
	}
	switch (req->which_body) {
	case cudaep_v1_Request_status_tag:
		resp->which_body = cudaep_v1_Response_status_reply_tag;
		snprintf(st->daemon_version, sizeof(st->daemon_version), "0.1.0");
		st->protocol_version = 1;
		st->pid = 1234;
		st->uptime_us = 3723000000u;
		snprintf(st->backend, sizeof(st->backend), "host");
		snprintf(st->device_name, sizeof(st->device_name), "fake \"cpu\"");
		snprintf(st->socket_path, sizeof(st->socket_path), "/s");
		st->clients = 2;
		st->regions = 3;
		st->region_bytes = 1572864;
		st->requests = 99;
		return FAKE_REPLY;
	case cudaep_v1_Request_clients_tag:
		resp->which_body = cudaep_v1_Response_clients_tag;
		cl->clients_count = 2;
		cl->total = 200;
		cl->clients[0].client_id = 7;
		snprintf(cl->clients[0].name, sizeof(cl->clients[0].name), "%s",
			 odd_name);
		cl->clients[0].pid = 4321;
		cl->clients[0].region_bytes = 2048;
		cl->clients[1].client_id = 8;
		snprintf(cl->clients[1].name, sizeof(cl->clients[1].name), "ctl");
		return FAKE_REPLY;
	case cudaep_v1_Request_sessions_tag:
		resp->which_body = cudaep_v1_Response_sessions_tag;
		if (!with_sessions)
			return FAKE_REPLY;
		resp->body.sessions.sessions_count = 2;
		resp->body.sessions.total = 2;
		resp->body.sessions.sessions[0].session_id = 3;
		resp->body.sessions.sessions[0].client_id = 7;
		resp->body.sessions.sessions[0].precision =
			cudaep_v1_Precision_PRECISION_FP16;
		snprintf(resp->body.sessions.sessions[0].name,
			 sizeof(resp->body.sessions.sessions[0].name), "bert");
		resp->body.sessions.sessions[1].session_id = 4;
		resp->body.sessions.sessions[1].client_id = 8;
		resp->body.sessions.sessions[1].runs = 12;
		resp->body.sessions.sessions[1].plans = 2;
		resp->body.sessions.sessions[1].graph_replays = 9;
		resp->body.sessions.sessions[1].eager_runs = 3;
		resp->body.sessions.sessions[1].plan_bytes = 3 << 20;
		resp->body.sessions.sessions[1].weight_bytes = 1536;
		resp->body.sessions.sessions[1].batching = true;
		resp->body.sessions.sessions[1].batched_runs = 11;
		resp->body.sessions.sessions[1].kv_bytes = 3u << 20;
		resp->body.sessions.sessions[1].generating = true;
		resp->body.sessions.sessions[1].capture_failures = 1;
		snprintf(resp->body.sessions.sessions[1].capture_error,
			 sizeof(resp->body.sessions.sessions[1].capture_error), "no graphs here");
		return FAKE_REPLY;
	case cudaep_v1_Request_memory_tag:
		resp->which_body = cudaep_v1_Response_memory_tag;
		mem->entries_count = 1;
		mem->total = 1;
		snprintf(mem->entries[0].owner, sizeof(mem->entries[0].owner),
			 "total");
		snprintf(mem->entries[0].role, sizeof(mem->entries[0].role),
			 "regions");
		mem->entries[0].current = 4096;
		mem->entries[0].peak = 8192;
		return FAKE_REPLY;
	case cudaep_v1_Request_stats_tag:
		resp->which_body = cudaep_v1_Response_stats_tag;
		stats->version = 1;
		stats->counters_count = 2;
		snprintf(stats->counters[0].name, sizeof(stats->counters[0].name),
			 "requests");
		stats->counters[0].value = 5;
		snprintf(stats->counters[1].name, sizeof(stats->counters[1].name),
			 "connections_accepted");
		stats->counters[1].value = 2;
		stats->gauges_count = 1;
		snprintf(stats->gauges[0].name, sizeof(stats->gauges[0].name),
			 "clients");
		stats->gauges[0].current = 1;
		stats->gauges[0].peak = 3;
		stats->gauges[0].total = 4;
		return FAKE_REPLY;
	}
	return fake_default(f, req, fds, nfds, resp);
}

static void start(void *arg)
{
	cr_assert_eq(fake_start(&fake, admin, arg), 0, "%s", strerror(errno));
}

Test(client_ctl, status_as_json)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "status",
				     NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out,
			 "{\"daemon_version\":\"0.1.0\",\"protocol_version\":1,"
			 "\"pid\":1234,\"uptime_us\":3723000000,"
			 "\"socket_path\":\"/s\",\"backend\":\"host\","
			 "\"device_name\":\"fake \\\"cpu\\\"\",\"clients\":2,"
			 "\"sessions\":0,\"regions\":3,\"region_bytes\":1572864,"
			 "\"requests\":99}\n");
	cr_expect_str_eq(r.err, "");
	fake_stop(&fake);
}

Test(client_ctl, status_as_info_text_is_the_default)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"-s", fake.path, NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "# Server\ndaemon_version:0.1.0\n"),
			   "%s", r.out);
	cr_expect_not_null(strstr(r.out, "uptime_us:3723000000\n"
					 "uptime_us_human:1h02m\n"),
			   "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\n\n# Device\nbackend:host\n"), "%s",
			   r.out);
	cr_expect_not_null(strstr(r.out, "region_bytes_human:1.5 MiB\n"), "%s",
			   r.out);
	fake_stop(&fake);
}

Test(client_ctl, clients_json_escapes_names)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--json", "--socket", fake.path, "clients",
				     NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "{\"clients\":[{\"client_id\":7,", 27), 0,
		     "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"name\":\"a\\\"b\\\\c\\nd\\u0001\\ufffd\""),
			   "%s", r.out);
	cr_expect_not_null(strstr(r.out, "],\"total\":200}\n"), "%s", r.out);
	fake_stop(&fake);
}

Test(client_ctl, clients_table_masks_control_characters)
{
	struct ctl_result r;
	char *line;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "clients", NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "# Clients\nID   PID  UID", 23), 0, "%s",
		     r.out);
	line = strstr(r.out, "\n 7  4321    0");
	cr_expect_not_null(line, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "2.0 KiB"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "a\"b\\c?d?\xff\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "(2 of 200 shown)\n"), "%s", r.out);
	fake_stop(&fake);
}

Test(client_ctl, empty_sessions_and_memory_limits)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "sessions", NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "# Sessions\nID  CLIENT  RUNS  PLANS  REPLAYS  EAGER  PLAN MEM  "
				"WEIGHTS  KV CACHE  GENERATING  LOADED  PRECISION  BATCHING  "
				"BATCHED  NAME\n(none)\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "mem", NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "# Memory\n"
				"OWNER  ROLE     CURRENT     PEAK  LIMIT\n"
				"total  regions  4.0 KiB  8.0 KiB      -\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "mem", NULL});
	cr_expect_str_eq(r.out, "{\"entries\":[{\"owner\":\"total\",\"role\":"
				"\"regions\",\"current\":4096,\"peak\":8192,"
				"\"limit\":0}],\"total\":1}\n");
	fake_stop(&fake);
}

Test(client_ctl, sessions_show_their_precision_counters_and_capture_failures)
{
	struct ctl_result r;

	with_sessions = true;
	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "sessions", NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "# Sessions\n"
				"ID  CLIENT  RUNS  PLANS  REPLAYS  EAGER  PLAN MEM  WEIGHTS  "
				"KV CACHE  GENERATING  LOADED  PRECISION  BATCHING  BATCHED  NAME\n"
				" 3       7     0      0        0      0       0 B      0 B  "
				"     0 B  no             0us  fp16       no              0  bert\n"
				" 4       8    12      2        9      3   3.0 MiB  1.5 KiB  "
				" 3.0 MiB  yes            0us  fp32       yes            11  \n"
				"session 4: runs eagerly, its graph capture failed: no graphs here\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "sessions", NULL});
	cr_expect_not_null(strstr(r.out, "\"loaded_us\":0,\"precision\":\"fp16\","
				  "\"batching\":false,\"batched_runs\":0,\"name\":\"bert\"}"),
			   "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"kv_bytes\":3145728,\"generating\":true"), "%s",
			   r.out);
	cr_expect_not_null(strstr(r.out, "\"batching\":true,\"batched_runs\":11"), "%s",
			   r.out);
	cr_expect_not_null(strstr(r.out, "\"precision\":\"fp32\""), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"plan_hits\":0,\"capture_failures\":1,"
				  "\"capture_error\":\"no graphs here\""), "%s", r.out);
	fake_stop(&fake);
	with_sessions = false;
}

Test(client_ctl, stats_json_keys_by_name)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "stats",
				     NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "{\"version\":1,\"counters\":{\"requests\":5,"
				"\"connections_accepted\":2},\"gauges\":"
				"{\"clients\":{\"current\":1,\"peak\":3,"
				"\"total\":4}}}\n");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "stats", NULL});
	cr_expect_str_eq(r.out, "# Stats\nversion:1\n\n"
				"# Counters\nrequests:5\nconnections_accepted:2\n\n"
				"# Gauges\nNAME     CURRENT  PEAK  TOTAL\n"
				"clients        1     3      4\n");
	fake_stop(&fake);
}

Test(client_ctl, ping_counts_round_trips)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "--json", "ping", "3",
				     NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "{\"socket\":\"", 11), 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "\"count\":3,\"min_us\":"), "%s", r.out);
	cr_expect_eq(fake.requests, 1 + 3);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "ping", NULL});
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, "PONG from cudaepd at ", 21), 0, "%s", r.out);
	fake_stop(&fake);
}

Test(client_ctl, daemon_error_exits_1)
{
	struct ctl_result r;

	start("admin requests need root");
	ctl_run(&r, (const char *[]){"--socket", fake.path, "clients", NULL});
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.err, "cudaepctl: clients: admin requests need root\n");
	cr_expect_str_eq(r.out, "");
	fake_stop(&fake);
}

Test(client_ctl, no_daemon_exits_1_naming_the_socket)
{
	char dir[] = "/tmp/cep-ctl-XXXXXX";
	char path[64], want[160];
	struct ctl_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cudaep.sock", dir);
	ctl_run(&r, (const char *[]){"--socket", path, "status", NULL});
	cr_expect_eq(r.status, 1);
	snprintf(want, sizeof(want),
		 "cudaepctl: cannot connect to cudaepd at %s: No such file or "
		 "directory\n",
		 path);
	cr_expect_str_eq(r.err, want);
	rmdir(dir);
}

Test(client_ctl, usage_errors_exit_2_without_connecting)
{
	struct ctl_result r;

	start(NULL);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "frobnicate", NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "unknown command 'frobnicate'"), "%s",
			   r.err);
	cr_expect_not_null(strstr(r.err, "Usage: cudaepctl"), "%s", r.err);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "ping", "0", NULL});
	cr_expect_eq(r.status, 2);
	ctl_run(&r, (const char *[]){"--socket", fake.path, "status", "x", NULL});
	cr_expect_eq(r.status, 2);
	ctl_run(&r, (const char *[]){"--no-such-option", NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_eq(fake.connections, 0);

	ctl_run(&r, (const char *[]){"help", NULL});
	cr_expect_eq(r.status, 0);
	cr_expect_not_null(strstr(r.out, "Usage: cudaepctl"), "%s", r.out);
	ctl_run(&r, (const char *[]){"--version", NULL});
	cr_expect_eq(r.status, 0);
	cr_expect_str_eq(r.out, "cudaepctl " CEP_VERSION "\n");
	fake_stop(&fake);
}
