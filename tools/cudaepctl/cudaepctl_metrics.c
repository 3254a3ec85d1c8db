/*
 * cudaepctl_metrics.c — `cudaepctl metrics`: everything the daemon counts,
 * in the Prometheus text exposition format (version 0.0.4), for
 * node_exporter's textfile collector or any scraper that runs a command.
 *
 * Four admin requests (Status, Stats, Clients, Sessions) become:
 *   cudaep_info{version,backend,device} 1, cudaep_uptime_seconds;
 *   per counter NAME, cudaep_NAME_total (a counter; NAME_ns counters are
 *   exported in seconds as cudaep_NAME_seconds_total, Prometheus's base
 *   unit);
 *   per gauge NAME, cudaep_NAME (its current value) and cudaep_NAME_peak;
 *   per client, cudaep_client_{regions,region_bytes,sessions} and
 *   cudaep_client_requests_total labelled client, pid, uid, name;
 *   per session, cudaep_session_runs_total labelled session, client, name.
 * The Stats reply names its counters but does not describe them, so HELP
 * text comes from the daemon's own X-macro list (common/stats.h), compiled
 * in here; a name this cudaepctl does not know (a newer daemon) gets a
 * generic line. The text is built in memory and written only when every
 * request succeeded, so `cudaepctl metrics > f.$$ && mv f.$$ f.prom`
 * never leaves a partial file for the collector.
 */
#include "tools/cudaepctl/cudaepctl.h"
#include "client/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h" /* daemon/: the names and descriptions of the stats */

struct metrics_help {
	const char *name;
	const char *help;
};

static const struct metrics_help counter_help[] = {
#define METRICS__HELP(id, name, help) {name, help},
	STATS_COUNTERS(METRICS__HELP)
};

static const struct metrics_help gauge_help[] = {
	STATS_GAUGES(METRICS__HELP)
#undef METRICS__HELP
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The replies one exposition is made of. */
struct metrics_replies {
	cudaep_v1_Response status;
	cudaep_v1_Response stats;
	cudaep_v1_Response clients;
	cudaep_v1_Response sessions;
	cudaep_v1_Response kernels;
};

static const char *help_find(const struct metrics_help *table, size_t n,
			     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(table[i].name, name) == 0)
			return table[i].help;
	return NULL;
}

/* --------------------------------------------------------------- format */

/* HELP text escapes only backslash and line feed. */
static void prom_help_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* A label value: backslash, double quote and line feed escaped, and each
 * byte that is not part of valid UTF-8 replaced by U+FFFD, since scrapers
 * reject an exposition that is not UTF-8 (client names are any bytes a
 * client chose). */
static void prom_label_value(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s != '\0') {
		size_t n;

		if (*s == '\\') {
			fputs("\\\\", f);
		} else if (*s == '"') {
			fputs("\\\"", f);
		} else if (*s == '\n') {
			fputs("\\n", f);
		} else if (*s < 0x80) {
			fputc(*s, f);
		} else {
			n = ctl_utf8_len(s);
			if (n == 0) {
				fputs("\xef\xbf\xbd", f);
			} else {
				fwrite(s, 1, n, f);
				s += n;
				continue;
			}
		}
		s++;
	}
}

/* "cudaep_" name suffix, with every character a metric name may not hold
 * turned into '_' (names come from the daemon). */
static void prom_name(char *buf, size_t len, const char *name,
		      const char *suffix)
{
	size_t i;

	snprintf(buf, len, "cudaep_%s%s", name, suffix);
	for (i = 0; buf[i] != '\0'; i++) {
		char c = buf[i];

		if (!(c == '_' || c == ':' || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			buf[i] = '_';
	}
}

static void prom_family(FILE *f, const char *metric, const char *type,
			const char *help)
{
	fprintf(f, "# HELP %s ", metric);
	prom_help_text(f, help);
	fprintf(f, "\n# TYPE %s %s\n", metric, type);
}

/* Opens a sample: the metric name and, when keys is not NULL, the labels
 * keys[i]="values[i]" (n of them). The caller prints " value\n". */
static void prom_sample(FILE *f, const char *metric, const char *const *keys,
			const char *const *values, size_t n)
{
	fputs(metric, f);
	if (keys == NULL)
		return;
	fputc('{', f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s%s=\"", i > 0 ? "," : "", keys[i]);
		prom_label_value(f, values[i]);
		fputc('"', f);
	}
	fputc('}', f);
}

/* ------------------------------------------------------------- families */

static void metrics_info(FILE *f, const cudaep_v1_StatusReply *st)
{
	static const char *const keys[] = {"version", "backend", "device"};
	const char *values[] = {st->daemon_version, st->backend,
				st->device_name};

	prom_family(f, "cudaep_info", "gauge",
		    "always 1: the daemon's version, and the backend and device "
		    "it runs sessions on");
	prom_sample(f, "cudaep_info", keys, values, N_OF(keys));
	fputs(" 1\n", f);
	prom_family(f, "cudaep_uptime_seconds", "gauge",
		    "seconds since the daemon started");
	fprintf(f, "cudaep_uptime_seconds %.3f\n", (double)st->uptime_us / 1e6);
}

static void metrics_counter(FILE *f, const cudaep_v1_Counter *c)
{
	const char *help = help_find(counter_help, N_OF(counter_help), c->name);
	size_t len = strlen(c->name);
	char metric[128], base[80], generic[96], text[sizeof(generic) + 64];

	if (help == NULL) {
		snprintf(generic, sizeof(generic), "cudaepd counter %s", c->name);
		help = generic;
	}
	if (len > 3 && strcmp(c->name + len - 3, "_ns") == 0 &&
	    len - 3 < sizeof(base)) {
		/* Nanoseconds become seconds, and the help says so. */
		snprintf(base, sizeof(base), "%.*s", (int)(len - 3), c->name);
		prom_name(metric, sizeof(metric), base, "_seconds_total");
		if (strncmp(help, "nanoseconds", 11) == 0)
			snprintf(text, sizeof(text), "seconds%s", help + 11);
		else
			snprintf(text, sizeof(text), "%s (in seconds)", help);
		prom_family(f, metric, "counter", text);
		fprintf(f, "%s %.9f\n", metric, (double)c->value / 1e9);
		return;
	}
	prom_name(metric, sizeof(metric), c->name, "_total");
	prom_family(f, metric, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", metric, c->value);
}

static void metrics_gauge(FILE *f, const cudaep_v1_Gauge *g)
{
	const char *help = help_find(gauge_help, N_OF(gauge_help), g->name);
	char metric[128], text[256];

	if (help == NULL) {
		snprintf(text, sizeof(text), "cudaepd gauge %s", g->name);
		help = text;
	}
	prom_name(metric, sizeof(metric), g->name, "");
	prom_family(f, metric, "gauge", help);
	/* text is free again: the peak's help is built in it. */
	fprintf(f, "%s %" PRId64 "\n", metric, g->current);
	snprintf(text, sizeof(text), "highest value of %s since the daemon "
		 "started", metric);
	prom_name(metric, sizeof(metric), g->name, "_peak");
	prom_family(f, metric, "gauge", text);
	fprintf(f, "%s %" PRId64 "\n", metric, g->peak);
}

/* A list the daemon cut at its reply limit says so in a comment. */
static void metrics_cut(FILE *f, const char *what, size_t count,
			uint32_t total)
{
	if (total > count)
		fprintf(f, "# cudaep: %zu of %" PRIu32 " %s listed\n", count,
			total, what);
}

/* The per-client families, one after the other: a family's samples must
 * stand together. */
static void metrics_clients(FILE *f, const cudaep_v1_ClientsReply *r)
{
	static const char *const keys[] = {"client", "pid", "uid", "name"};
	static const struct {
		const char *metric, *type, *help;
	} fam[] = {
		{"cudaep_client_regions", "gauge",
		 "shared-memory regions the client holds"},
		{"cudaep_client_region_bytes", "gauge",
		 "bytes of the client's shared-memory regions"},
		{"cudaep_client_sessions", "gauge",
		 "sessions the client has loaded"},
		{"cudaep_client_requests_total", "counter",
		 "requests the client has sent"},
	};

	metrics_cut(f, "clients", r->clients_count, r->total);
	for (size_t k = 0; k < N_OF(fam); k++) {
		prom_family(f, fam[k].metric, fam[k].type, fam[k].help);
		for (pb_size_t i = 0; i < r->clients_count; i++) {
			const cudaep_v1_ClientEntry *e = &r->clients[i];
			const uint64_t v[] = {e->regions, e->region_bytes,
					      e->sessions, e->requests};
			char id[24], pid[16], uid[16];
			const char *values[] = {id, pid, uid, e->name};

			snprintf(id, sizeof(id), "%" PRIu64, e->client_id);
			snprintf(pid, sizeof(pid), "%" PRId32, e->pid);
			snprintf(uid, sizeof(uid), "%" PRIu32, e->uid);
			prom_sample(f, fam[k].metric, keys, values, N_OF(keys));
			fprintf(f, " %" PRIu64 "\n", v[k]);
		}
	}
}

static void metrics_sessions(FILE *f, const cudaep_v1_SessionsReply *r)
{
	static const char *const keys[] = {"session", "client", "name"};

	static const struct {
		const char *metric, *type, *help;
	} fam[] = {
		{"cudaep_session_runs_total", "counter",
		 "Run requests the session has completed"},
		{"cudaep_session_graph_replays_total", "counter",
		 "runs that replayed a captured CUDA graph"},
		{"cudaep_session_eager_runs_total", "counter",
		 "runs that launched their kernels one by one"},
		{"cudaep_session_capture_failures_total", "counter",
		 "plans whose graph capture failed (they run eagerly)"},
		{"cudaep_session_plans", "gauge",
		 "plans cached, one per input signature"},
		{"cudaep_session_plan_bytes", "gauge",
		 "device memory of the session's cached plans"},
	};

	metrics_cut(f, "sessions", r->sessions_count, r->total);
	for (size_t k = 0; k < N_OF(fam); k++) {
		prom_family(f, fam[k].metric, fam[k].type, fam[k].help);
		for (pb_size_t i = 0; i < r->sessions_count; i++) {
			const cudaep_v1_SessionEntry *e = &r->sessions[i];
			const uint64_t v[] = {e->runs, e->graph_replays, e->eager_runs,
					      e->capture_failures, e->plans, e->plan_bytes};
			char id[24], client[24];
			const char *values[] = {id, client, e->name};

			snprintf(id, sizeof(id), "%" PRIu64, e->session_id);
			snprintf(client, sizeof(client), "%" PRIu64, e->client_id);
			prom_sample(f, fam[k].metric, keys, values, N_OF(keys));
			fprintf(f, " %" PRIu64 "\n", v[k]);
		}
	}
}

/* The kernel cache's counters: where the device kernels came from. A
 * backend without device kernels has none to show. */
static void metrics_kernels(FILE *f, const cudaep_v1_KernelsReply *k)
{
	static const struct {
		const char *metric, *type, *help;
	} fam[] = {
		{"cudaep_kernels_compiled_total", "counter",
		 "kernel sources NVRTC compiled in this daemon"},
		{"cudaep_kernels_compile_seconds_total", "counter",
		 "seconds spent compiling them"},
		{"cudaep_kernels_prebuilt_loads_total", "counter",
		 "kernel modules loaded from the prebuilt set made at make"},
		{"cudaep_kernels_prebuilt_rejects_total", "counter",
		 "prebuilt images the driver refused (compiled instead)"},
		{"cudaep_kernels_disk_loads_total", "counter",
		 "kernel images read from the cache directory"},
		{"cudaep_kernels_modules", "gauge", "kernel modules loaded"},
	};

	if (!k->device_kernels)
		return;
	for (size_t i = 0; i < N_OF(fam); i++) {
		prom_family(f, fam[i].metric, fam[i].type, fam[i].help);
		if (i == 1)
			fprintf(f, "%s %.6f\n", fam[i].metric, (double)k->compile_us / 1e6);
		else
			fprintf(f, "%s %" PRIu64 "\n", fam[i].metric,
				i == 0 ? k->compiles : i == 2 ? k->prebuilt_loads
					: i == 3 ? k->prebuilt_rejects : i == 4 ? k->disk_loads
										 : k->total);
	}
}

static void metrics_write(FILE *f, const struct metrics_replies *r)
{
	const cudaep_v1_StatsReply *st = &r->stats.body.stats;

	metrics_info(f, &r->status.body.status_reply);
	for (pb_size_t i = 0; i < st->counters_count; i++)
		metrics_counter(f, &st->counters[i]);
	for (pb_size_t i = 0; i < st->gauges_count; i++)
		metrics_gauge(f, &st->gauges[i]);
	metrics_clients(f, &r->clients.body.clients);
	metrics_sessions(f, &r->sessions.body.sessions);
	metrics_kernels(f, &r->kernels.body.kernels);
}

/* -------------------------------------------------------------- command */

int ctl_cmd_metrics(struct ctl *ctl, int argc, char **argv)
{
	struct metrics_replies *r = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int ret;

	if (ctl->json) {
		fprintf(stderr, "cudaepctl: metrics prints Prometheus text; "
			"--json does not apply\n");
		return CTL_EXIT_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret != 0)
		return ret;
	ret = CTL_EXIT_FAIL;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		fprintf(stderr, "cudaepctl: metrics: out of memory\n");
		goto out;
	}
	if (ctl_call(ctl, "metrics", cudaep_v1_Request_status_tag,
		     cudaep_v1_Response_status_reply_tag, &r->status) != 0 ||
	    ctl_call(ctl, "metrics", cudaep_v1_Request_stats_tag,
		     cudaep_v1_Response_stats_tag, &r->stats) != 0 ||
	    ctl_call(ctl, "metrics", cudaep_v1_Request_clients_tag,
		     cudaep_v1_Response_clients_tag, &r->clients) != 0 ||
	    ctl_call(ctl, "metrics", cudaep_v1_Request_sessions_tag,
		     cudaep_v1_Response_sessions_tag, &r->sessions) != 0 ||
	    ctl_call(ctl, "metrics", cudaep_v1_Request_kernels_tag,
		     cudaep_v1_Response_kernels_tag, &r->kernels) != 0)
		goto out;
	mem = open_memstream(&text, &len);
	if (mem == NULL) {
		fprintf(stderr, "cudaepctl: metrics: out of memory\n");
		goto out;
	}
	metrics_write(mem, r);
	if (fclose(mem) != 0) {
		mem = NULL;
		fprintf(stderr, "cudaepctl: metrics: out of memory\n");
		goto out;
	}
	mem = NULL;
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
		fprintf(stderr, "cudaepctl: cannot write the output\n");
		goto out;
	}
	ret = CTL_EXIT_OK;
out:
	if (mem != NULL)
		fclose(mem);
	free(text);
	free(r);
	return ret;
}
