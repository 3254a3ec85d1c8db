/*
 * cudaepctl_cmds.c — the commands of cudaepctl that are one request each
 * (status, clients, sessions, mem, trim, kill-session, stats) and ping:
 * each connects, asks, and describes the reply's fields to the printer
 * (cudaepctl_out.c), which writes INFO-style text or JSON.
 */
#include "tools/cudaepctl/cudaepctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct ctl_field status_fields[] = {
	CTL_SECTION("Server"),
	CTL_FIELD(cudaep_v1_StatusReply, daemon_version, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, protocol_version, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, pid, CTL_TYPE_I64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, uptime_us, CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_FIELD(cudaep_v1_StatusReply, socket_path, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_SECTION("Device"),
	CTL_FIELD(cudaep_v1_StatusReply, backend, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, device_name, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_SECTION("Clients"),
	CTL_FIELD(cudaep_v1_StatusReply, clients, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, sessions, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, regions, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_StatusReply, region_bytes, CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_FIELD(cudaep_v1_StatusReply, requests, CTL_TYPE_U64, CTL_FMT_PLAIN),
};

int ctl_cmd_status(struct ctl *ctl, int argc, char **argv)
{
	int ret = ctl_request(ctl, "status", cudaep_v1_Request_status_tag,
			      cudaep_v1_Response_status_reply_tag);
	if (ret != 0)
		return ret;
	ctl_out_fields(&ctl->out, status_fields, CTL_N_OF(status_fields),
		       &ctl->resp->body.status_reply);
	return ctl_finish(ctl);
}

static const struct ctl_field client_columns[] = {
	CTL_COLUMN(cudaep_v1_ClientEntry, client_id, "ID", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, pid, "PID", CTL_TYPE_I32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, uid, "UID", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, gid, "GID", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, regions, "REGIONS", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, region_bytes, "REGION_BYTES", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_ClientEntry, sessions, "SESSIONS", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, requests, "REQUESTS", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_ClientEntry, connected_us, "CONNECTED", CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_COLUMN(cudaep_v1_ClientEntry, name, "NAME", CTL_TYPE_STR, CTL_FMT_PLAIN),
};

int ctl_cmd_clients(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_ClientsReply *r = &ctl->resp->body.clients;
	int ret = ctl_request(ctl, "clients", cudaep_v1_Request_clients_tag,
			      cudaep_v1_Response_clients_tag);
	if (ret != 0)
		return ret;
	ctl_out_table(&ctl->out, "Clients", "clients", client_columns,
		      CTL_N_OF(client_columns), r->clients, sizeof(r->clients[0]),
		      r->clients_count, r->total);
	return ctl_finish(ctl);
}

static const struct ctl_field session_columns[] = {
	CTL_COLUMN(cudaep_v1_SessionEntry, session_id, "ID", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, client_id, "CLIENT", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, runs, "RUNS", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, plans, "PLANS", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, graph_replays, "REPLAYS", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, eager_runs, "EAGER", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, plan_bytes, "PLAN MEM", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_SessionEntry, plan_hits, NULL, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, capture_failures, NULL, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, capture_error, NULL, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, weight_bytes, "WEIGHTS", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_SessionEntry, kv_bytes, "KV CACHE", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_SessionEntry, generating, "GENERATING", CTL_TYPE_BOOL,
	       CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, loaded_us, "LOADED", CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_COLUMN(cudaep_v1_SessionEntry, precision, "PRECISION", CTL_TYPE_PRECISION,
	       CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, batching, "BATCHING", CTL_TYPE_BOOL, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, batched_runs, "BATCHED", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_SessionEntry, name, "NAME", CTL_TYPE_STR, CTL_FMT_PLAIN),
};

int ctl_cmd_sessions(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_SessionsReply *r = &ctl->resp->body.sessions;
	int ret = ctl_request(ctl, "sessions", cudaep_v1_Request_sessions_tag,
			      cudaep_v1_Response_sessions_tag);
	if (ret != 0)
		return ret;
	ctl_out_table(&ctl->out, "Sessions", "sessions", session_columns,
		      CTL_N_OF(session_columns), r->sessions, sizeof(r->sessions[0]),
		      r->sessions_count, r->total);
	/* The JSON rows carry every field; the table says only where a
	 * capture failed, which is rare and worth a line of its own. */
	for (pb_size_t i = 0; !ctl->json && i < r->sessions_count; i++) {
		if (r->sessions[i].capture_failures)
			fprintf(ctl->out.f, "session %" PRIu64 ": runs eagerly, its graph "
				"capture failed: %s\n", r->sessions[i].session_id,
				r->sessions[i].capture_error);
	}
	return ctl_finish(ctl);
}

static const struct ctl_field memory_columns[] = {
	CTL_COLUMN(cudaep_v1_MemoryEntry, owner, "OWNER", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_MemoryEntry, role, "ROLE", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_MemoryEntry, current, "CURRENT", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_MemoryEntry, peak, "PEAK", CTL_TYPE_U64, CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_MemoryEntry, limit, "LIMIT", CTL_TYPE_U64, CTL_FMT_LIMIT),
};

/* The arena's churn counters are numbers, not bytes. */
static const struct ctl_field counter_columns[] = {
	CTL_COLUMN(cudaep_v1_MemoryEntry, role, "COUNTER", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_MemoryEntry, current, "VALUE", CTL_TYPE_U64, CTL_FMT_PLAIN),
};

/* The text sections of `mem`, by owner: totals and shared weights, the
 * device arena, its counters, users (uids), clients, sessions. */
enum mem_section {
	MEM_TOTAL, MEM_ARENA, MEM_COUNTERS, MEM_USERS, MEM_CLIENTS, MEM_SESSIONS,
	MEM_N
};

static const char *const mem_titles[MEM_N] = {
	"Memory", "Arena", "Arena counters", "Users", "Clients", "Sessions",
};

static enum mem_section mem_section_of(const cudaep_v1_MemoryEntry *e)
{
	static const char *const gauges[] = {
		"reserved", "mapped", "used", "free", "pool", "deferred",
	};

	if (strcmp(e->owner, "arena") == 0) {
		for (size_t i = 0; i < CTL_N_OF(gauges); i++)
			if (strcmp(e->role, gauges[i]) == 0)
				return MEM_ARENA;
		return MEM_COUNTERS;
	}
	if (strncmp(e->owner, "uid:", 4) == 0)
		return MEM_USERS;
	if (strncmp(e->owner, "client:", 7) == 0)
		return MEM_CLIENTS;
	if (strncmp(e->owner, "session:", 8) == 0)
		return MEM_SESSIONS;
	return MEM_TOTAL;
}

int ctl_cmd_mem(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_MemoryReply *r = &ctl->resp->body.memory;
	cudaep_v1_MemoryEntry *rows;
	int ret = ctl_request(ctl, "mem", cudaep_v1_Request_memory_tag,
			      cudaep_v1_Response_memory_tag);
	if (ret != 0)
		return ret;
	if (ctl->out.json) {
		ctl_out_table(&ctl->out, "Memory", "entries", memory_columns,
			      CTL_N_OF(memory_columns), r->entries,
			      sizeof(r->entries[0]), r->entries_count, r->total);
		return ctl_finish(ctl);
	}
	rows = malloc(sizeof(*rows) * (r->entries_count + 1));
	if (rows == NULL) {
		fprintf(stderr, "cudaepctl: mem: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	for (int sec = 0; sec < MEM_N; sec++) {
		size_t n = 0;

		for (pb_size_t i = 0; i < r->entries_count; i++)
			if (mem_section_of(&r->entries[i]) == (enum mem_section)sec)
				rows[n++] = r->entries[i];
		if (n == 0)
			continue;
		if (sec == MEM_COUNTERS)
			ctl_out_table(&ctl->out, mem_titles[sec], NULL, counter_columns,
				      CTL_N_OF(counter_columns), rows, sizeof(*rows), n,
				      (uint32_t)n);
		else
			ctl_out_table(&ctl->out, mem_titles[sec], NULL, memory_columns,
				      CTL_N_OF(memory_columns), rows, sizeof(*rows), n,
				      (uint32_t)n);
	}
	free(rows);
	if (r->total > r->entries_count)
		fprintf(ctl->out.f, "(%u of %u entries shown)\n",
			(unsigned)r->entries_count, (unsigned)r->total);
	return ctl_finish(ctl);
}

int ctl_cmd_trim(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_TrimReply *r = &ctl->resp->body.trim;
	struct ctl_out *o = &ctl->out;
	int ret = ctl_request(ctl, "trim", cudaep_v1_Request_trim_tag,
			      cudaep_v1_Response_trim_tag);
	if (ret != 0)
		return ret;
	if (!o->json)
		ctl_out_begin(o, "Trim", NULL);
	ctl_out_u64(o, "unmapped", r->unmapped, CTL_FMT_BYTES);
	ctl_out_u64(o, "mapped", r->mapped, CTL_FMT_BYTES);
	ctl_out_u64(o, "released", r->released, CTL_FMT_BYTES);
	return ctl_finish(ctl);
}

int ctl_cmd_kill_session(struct ctl *ctl, int argc, char **argv)
{
	unsigned long long id = 0;
	char *end = NULL;
	int ret;

	if (argc == 1) {
		errno = 0;
		id = strtoull(argv[0], &end, 10);
	}
	if (argc != 1 || *argv[0] == '\0' || *end != '\0' || errno != 0 ||
	    id == 0 || argv[0][0] == '-') {
		fprintf(stderr, "cudaepctl: kill-session takes one session id "
			"(see cudaepctl sessions)%s%s%s\n",
			argc == 1 ? ", not '" : "", argc == 1 ? argv[0] : "",
			argc == 1 ? "'" : "");
		return CTL_EXIT_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret != 0)
		return ret;
	memset(&ctl->req, 0, sizeof(ctl->req));
	ctl->req.which_body = cudaep_v1_Request_kill_session_tag;
	ctl->req.body.kill_session.session_id = id;
	ret = ctl_send(ctl, "kill-session", cudaep_v1_Response_kill_session_tag, ctl->resp);
	if (ret != 0)
		return ret;
	if (!ctl->out.json)
		ctl_out_begin(&ctl->out, "Killed", NULL);
	ctl_out_u64(&ctl->out, "session_id", id, CTL_FMT_PLAIN);
	ctl_out_u64(&ctl->out, "client_id",
		    ctl->resp->body.kill_session.client_id, CTL_FMT_PLAIN);
	return ctl_finish(ctl);
}

static const struct ctl_field gauge_columns[] = {
	CTL_COLUMN(cudaep_v1_Gauge, name, "NAME", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_Gauge, current, "CURRENT", CTL_TYPE_I64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_Gauge, peak, "PEAK", CTL_TYPE_I64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_Gauge, total, "TOTAL", CTL_TYPE_U64, CTL_FMT_PLAIN),
};

int ctl_cmd_stats(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_StatsReply *r = &ctl->resp->body.stats;
	struct ctl_out *o = &ctl->out;
	int ret = ctl_request(ctl, "stats", cudaep_v1_Request_stats_tag,
			      cudaep_v1_Response_stats_tag);
	if (ret != 0)
		return ret;
	if (!o->json)
		ctl_out_begin(o, "Stats", NULL);
	ctl_out_u64(o, "version", r->version, CTL_FMT_PLAIN);
	/* Counters and gauges are keyed by name in JSON, so that a script
	 * reads .counters.requests rather than searching a list. */
	ctl_out_begin(o, "Counters", "counters");
	for (pb_size_t i = 0; i < r->counters_count; i++)
		ctl_out_u64(o, r->counters[i].name, r->counters[i].value,
			    CTL_FMT_PLAIN);
	ctl_out_end(o);
	if (o->json) {
		ctl_out_begin(o, NULL, "gauges");
		for (pb_size_t i = 0; i < r->gauges_count; i++) {
			ctl_out_begin(o, NULL, r->gauges[i].name);
			ctl_out_fields(o, gauge_columns + 1,
				       CTL_N_OF(gauge_columns) - 1, &r->gauges[i]);
			ctl_out_end(o);
		}
		ctl_out_end(o);
	} else {
		ctl_out_table(o, "Gauges", "gauges", gauge_columns,
			      CTL_N_OF(gauge_columns), r->gauges,
			      sizeof(r->gauges[0]), r->gauges_count,
			      r->gauges_count);
	}
	return ctl_finish(ctl);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int ctl_cmd_ping(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_out *o = &ctl->out;
	unsigned long count = 1;
	double min = 0, max = 0, sum = 0;
	char *end;
	int ret;

	if (argc > 0) {
		count = strtoul(argv[0], &end, 10);
		if (*argv[0] == '\0' || *end != '\0' || count == 0 ||
		    count > 1000000) {
			fprintf(stderr,
				"cudaepctl: ping: COUNT must be 1 to 1000000, "
				"not '%s'\n",
				argv[0]);
			return CTL_EXIT_USAGE;
		}
	}
	ret = ctl_connect(ctl);
	if (ret != 0)
		return ret;
	for (unsigned long i = 0; i < count; i++) {
		double t0 = now_us(), rtt;

		ret = cep_ping(ctl->c);
		rtt = now_us() - t0;
		if (ret != 0) {
			fprintf(stderr, "cudaepctl: ping: %s\n", cep_last_error());
			return CTL_EXIT_FAIL;
		}
		if (i == 0 || rtt < min)
			min = rtt;
		if (rtt > max)
			max = rtt;
		sum += rtt;
		if (!o->json)
			fprintf(o->f, "PONG from cudaepd at %s in %.1f us\n",
				ctl->path, rtt);
	}
	if (o->json) {
		ctl_out_str(o, "socket", ctl->path);
		ctl_out_u64(o, "count", count, CTL_FMT_PLAIN);
		ctl_out_double(o, "min_us", min);
		ctl_out_double(o, "avg_us", sum / (double)count);
		ctl_out_double(o, "max_us", max);
	} else if (count > 1) {
		fprintf(o->f, "%lu pings: min/avg/max = %.1f/%.1f/%.1f us\n",
			count, min, sum / (double)count, max);
	}
	return ctl_finish(ctl);
}
