/*
 * cudaepctl_inspect.c — `cudaepctl graphs` and `cudaepctl kernels`: what
 * the daemon's caches hold. graphs lists each session's cached plans (one
 * per input signature), whether each was captured as a CUDA graph and how
 * its runs went (replays, eager launches); kernels lists the device
 * kernels the backend compiled with NVRTC or read from its disk cache,
 * with the cache's counters, and says so plainly on the host backend,
 * which has none.
 */
#include "tools/cudaepctl/cudaepctl.h"
#include "proto/cep_limits.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The daemon cuts what it sends to these limits (proto/cep_limits.h);
 * nanopb refuses anything longer, so the two must agree. */
#define FIELD_SIZE(type, f) sizeof(((type *)0)->f)
#define FIELD_COUNT(type, f) (sizeof(((type *)0)->f) / sizeof(((type *)0)->f[0]))
_Static_assert(FIELD_COUNT(cudaep_v1_GraphsReply, graphs) == CEP_MAX_GRAPHS &&
		       FIELD_SIZE(cudaep_v1_GraphEntry, signature) == CEP_MAX_SIGNATURE &&
		       FIELD_SIZE(cudaep_v1_GraphEntry, capture_error) ==
			       CEP_MAX_CAPTURE_ERROR &&
		       FIELD_SIZE(cudaep_v1_GraphEntry, session_name) == CEP_MAX_OBJ_NAME,
	       "proto/cudaep.options and proto/cep_limits.h disagree on GraphsReply");
_Static_assert(FIELD_COUNT(cudaep_v1_KernelsReply, kernels) == CEP_MAX_LIST &&
		       FIELD_SIZE(cudaep_v1_KernelEntry, name) == CEP_MAX_KERNEL_NAME &&
		       FIELD_SIZE(cudaep_v1_KernelsReply, cache_dir) == CEP_MAX_CACHE_DIR &&
		       FIELD_SIZE(cudaep_v1_KernelsReply, kernel_pack) == CEP_MAX_CACHE_DIR &&
		       FIELD_SIZE(cudaep_v1_KernelsReply, kernel_pack_note) == CEP_MAX_CACHE_DIR,
	       "proto/cudaep.options and proto/cep_limits.h disagree on KernelsReply");

/* ----------------------------------------------------------------- graphs */

static const struct ctl_field graph_columns[] = {
	CTL_COLUMN(cudaep_v1_GraphEntry, session_id, "SESSION", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, client_id, "CLIENT", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, session_name, "NAME", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, runs, "RUNS", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, captured, "CAPTURED", CTL_TYPE_BOOL, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, captures, "CAPTURES", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, replays, "REPLAYS", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, eager_runs, "EAGER", CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, steps, "STEPS", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, device_bytes, "PLAN MEM", CTL_TYPE_U64,
		   CTL_FMT_BYTES),
	CTL_COLUMN(cudaep_v1_GraphEntry, signature, "SIGNATURE", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, value_keys, NULL, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, capture_error, NULL, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_GraphEntry, busy, NULL, CTL_TYPE_BOOL, CTL_FMT_PLAIN),
};

/* A text line without control characters (names come from clients). */
static void put_masked(FILE *f, const char *s)
{
	for (; *s != '\0'; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

int ctl_cmd_graphs(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_GraphsReply *r = &ctl->resp->body.graphs;
	const cudaep_v1_GraphEntry *g;
	cudaep_v1_GraphEntry *rows;
	size_t n = 0;
	uint32_t busy = 0;
	int ret = ctl_request(ctl, "graphs", cudaep_v1_Request_graphs_tag,
			      cudaep_v1_Response_graphs_tag);

	if (ret != 0)
		return ret;
	if (ctl->out.json) {
		ctl_out_table(&ctl->out, "Graphs", "graphs", graph_columns,
			      CTL_N_OF(graph_columns), r->graphs, sizeof(r->graphs[0]),
			      r->graphs_count, r->total);
		return ctl_finish(ctl);
	}
	/* A busy session has no plans to show: it gets a line, not a row. */
	rows = malloc(sizeof(*rows) * (r->graphs_count + 1));
	if (rows == NULL) {
		fprintf(stderr, "cudaepctl: graphs: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	for (pb_size_t i = 0; i < r->graphs_count; i++) {
		if (r->graphs[i].busy)
			busy++;
		else
			rows[n++] = r->graphs[i];
	}
	ctl_out_table(&ctl->out, "Graphs", NULL, graph_columns, CTL_N_OF(graph_columns),
		      rows, sizeof(*rows), n, r->total - busy);
	free(rows);
	for (pb_size_t i = 0; i < r->graphs_count; i++) {
		g = &r->graphs[i];
		if (g->busy) {
			fprintf(ctl->out.f, "session %" PRIu64 ": busy planning or running "
				"on the daemon's thread pool; its plans are not shown (ask "
				"again)\n", g->session_id);
		} else if (g->capture_error[0] != '\0') {
			fprintf(ctl->out.f, "session %" PRIu64 " plan ", g->session_id);
			put_masked(ctl->out.f, g->signature);
			fputs(": runs eagerly, its graph capture failed: ", ctl->out.f);
			put_masked(ctl->out.f, g->capture_error);
			fputc('\n', ctl->out.f);
		}
	}
	return ctl_finish(ctl);
}

/* ---------------------------------------------------------------- kernels */

static const struct ctl_field kernel_fields[] = {
	CTL_SECTION("Kernels"),
	CTL_FIELD(cudaep_v1_KernelsReply, backend, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, device_kernels, CTL_TYPE_BOOL, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, arch, CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, compiles, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, compile_us, CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_FIELD(cudaep_v1_KernelsReply, prebuilt_loads, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, prebuilt_rejects, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, disk_loads, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, memory_hits, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, disk_writes, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, disk_rejects, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, disk_errors, CTL_TYPE_U64, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, cache_dir, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, kernel_pack, CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_FIELD(cudaep_v1_KernelsReply, kernel_pack_note, CTL_TYPE_STR, CTL_FMT_PLAIN),
};

/* The first three of kernel_fields: all a backend without device kernels
 * has. */
#define KERNEL_FIELDS_NONE 3

static const struct ctl_field kernel_columns[] = {
	CTL_COLUMN(cudaep_v1_KernelEntry, name, "NAME", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_KernelEntry, arch, "ARCH", CTL_TYPE_U32, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_KernelEntry, origin, "ORIGIN", CTL_TYPE_STR, CTL_FMT_PLAIN),
	CTL_COLUMN(cudaep_v1_KernelEntry, compile_us, "COMPILE", CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_COLUMN(cudaep_v1_KernelEntry, load_us, "LOAD", CTL_TYPE_U64, CTL_FMT_USEC),
	CTL_COLUMN(cudaep_v1_KernelEntry, image_bytes, "SIZE", CTL_TYPE_U64, CTL_FMT_BYTES),
};

int ctl_cmd_kernels(struct ctl *ctl, int argc, char **argv)
{
	const cudaep_v1_KernelsReply *r = &ctl->resp->body.kernels;
	int ret = ctl_request(ctl, "kernels", cudaep_v1_Request_kernels_tag,
			      cudaep_v1_Response_kernels_tag);

	if (ret != 0)
		return ret;
	if (!r->device_kernels) {
		ctl_out_fields(&ctl->out, kernel_fields, KERNEL_FIELDS_NONE, r);
		if (!ctl->out.json)
			fprintf(ctl->out.f, "no device kernels: the %s backend runs the CPU "
				"reference kernels and compiles none\n", r->backend);
		return ctl_finish(ctl);
	}
	ctl_out_fields(&ctl->out, kernel_fields, CTL_N_OF(kernel_fields), r);
	ctl_out_table(&ctl->out, "Modules", "kernels", kernel_columns,
		      CTL_N_OF(kernel_columns), r->kernels, sizeof(r->kernels[0]),
		      r->kernels_count, r->total);
	return ctl_finish(ctl);
}
