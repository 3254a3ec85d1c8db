/*
 * cudaepctl.h — what the files of cudaepctl share. Calls go one way:
 *
 *   cudaepctl.c           main: options, the table of commands, usage
 *   cudaepctl_cmds.c      status, clients, sessions, mem, trim,
 *                         kill-session, stats, ping
 *   cudaepctl_inspect.c   graphs, kernels
 *   cudaepctl_metrics.c   metrics;  cudaepctl_top.c  top (and
 *                         cudaepctl_nvml.c, its NVML probe)
 *   cudaepctl_conn.c      connecting, one request and its reply, finishing
 *   cudaepctl_out.c       the printers
 *
 * One printer writes either human text in redis-INFO style ("# Section"
 * then key:value lines, tables for lists) or one JSON object per command;
 * commands describe their fields once and the printer chooses the form.
 */
#ifndef CEP_CUDAEPCTL_H
#define CEP_CUDAEPCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/un.h>

#include "client/cudaep.h"
#include "cudaep.pb.h"

#define CTL_MAX_DEPTH 8 /* JSON nesting levels */

struct ctl_out {
	FILE *f;
	bool json;
	int depth;                          /* JSON objects/arrays open */
	bool has_items[CTL_MAX_DEPTH];      /* the level at [depth] has members */
	bool any_section;                   /* text: a section was printed */
};

/* How a field is stored in its nanopb struct. */
enum ctl_type {
	CTL_TYPE_SECTION, /* no field: starts a text section titled head */
	CTL_TYPE_STR,     /* char[] */
	CTL_TYPE_U32,
	CTL_TYPE_U64,
	CTL_TYPE_I32,
	CTL_TYPE_I64,
	CTL_TYPE_PRECISION, /* a cudaep_v1_Precision, shown by name ("fp16")
	                     * in text and JSON alike */
	CTL_TYPE_BOOL,      /* bool, shown as "yes" or "no" */
};

/* How a number reads in text; JSON always carries the raw number. */
enum ctl_fmt {
	CTL_FMT_PLAIN,
	CTL_FMT_BYTES, /* 1.5 MiB */
	CTL_FMT_USEC,  /* microseconds as 3.2s, 5m03s, 2h05m */
	CTL_FMT_LIMIT, /* bytes; 0 reads "-" (no limit) */
};

/* One field of a reply struct: its JSON key, its text column heading (or a
 * section's title; NULL: a table column shown in JSON only), and where and
 * how it is stored. */
struct ctl_field {
	const char *key;
	const char *head;
	enum ctl_type type;
	enum ctl_fmt fmt;
	size_t offset; /* bytes into the struct */
};

/* Starts output to f; a JSON printer opens the command's object. */
void ctl_out_init(struct ctl_out *o, FILE *f, bool json);

/* Closes the command's JSON object and ends the line. Returns 0, or -1 when
 * writing failed (errno set). */
int ctl_out_finish(struct ctl_out *o);

/* The fields of one struct at p: "key:value" lines under their sections in
 * text, members of the current object in JSON. */
void ctl_out_fields(struct ctl_out *o, const struct ctl_field *fields,
		    size_t n, const void *p);

/* A list of count structs (stride bytes apart from rows) as an aligned text
 * table under section title, or as the JSON member key (an array) followed
 * by "total". total is how many the daemon has; more than count says the
 * list was cut. */
void ctl_out_table(struct ctl_out *o, const char *title, const char *key,
		   const struct ctl_field *fields, size_t n, const void *rows,
		   size_t stride, size_t count, uint32_t total);

/* Text: a "# title" section heading. JSON: opens the object member key
 * (pair with ctl_out_end()). */
void ctl_out_begin(struct ctl_out *o, const char *title, const char *key);
void ctl_out_end(struct ctl_out *o);

/* Single members of the current section or object. */
void ctl_out_str(struct ctl_out *o, const char *key, const char *s);
void ctl_out_u64(struct ctl_out *o, const char *key, uint64_t v, enum ctl_fmt fmt);
void ctl_out_double(struct ctl_out *o, const char *key, double v);

/* Writes s to f as a JSON string: quoted, with '"', '\' and control
 * characters escaped and each byte that is not part of valid UTF-8 replaced
 * by U+FFFD, so any bytes a client sent as its name give valid JSON. */
void ctl_json_string(FILE *f, const char *s);

/* Human forms of a byte count and of a duration in microseconds into buf. */
const char *ctl_fmt_bytes(char *buf, size_t len, uint64_t bytes);
const char *ctl_fmt_usec(char *buf, size_t len, uint64_t us);

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the bytes
 * there are not one: a stray continuation byte, an overlong form, a
 * surrogate, or a sequence cut short by the string's end. */
size_t ctl_utf8_len(const unsigned char *s);

/* ------------------------------------------------------------ commands */

/* Exit statuses of every command. */
enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAIL = 1,  /* cudaepd unreachable, a request failed */
	CTL_EXIT_USAGE = 2,
};

/* One run of cudaepctl: the options and the connection of its command. */
struct ctl {
	const char *socket;          /* --socket, NULL for the default */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* for messages */
	bool json;
	bool once;                   /* top --once */
	double interval;             /* top --interval, seconds; 0 = default */
	cep_client *c;               /* NULL until a command connects */
	cudaep_v1_Request req;
	cudaep_v1_Response *resp;    /* heap: large, and cep__call wants it kept */
	struct ctl_out out;
};

/* ------------------------------------------- calling (cudaepctl_conn.c) */

/* Connects to the daemon as client "cudaepctl" and starts ctl->out on
 * stdout. Returns CTL_EXIT_OK, or CTL_EXIT_FAIL after printing why. */
int ctl_connect(struct ctl *ctl);

/* Sends ctl->req, as the caller filled it in, on ctl's connection and
 * checks that the reply, decoded into *resp (the caller's), carries body
 * want. Returns CTL_EXIT_OK, or CTL_EXIT_FAIL after printing
 * "cudaepctl: what:" and the daemon's message to stderr. */
int ctl_send(struct ctl *ctl, const char *what, pb_size_t want,
	     cudaep_v1_Response *resp);

/* ctl_send() of the body-less admin request tag. */
int ctl_call(struct ctl *ctl, const char *what, pb_size_t tag, pb_size_t want,
	     cudaep_v1_Response *resp);

/* ctl_connect(), then ctl_call() into the command's own ctl->resp: the
 * one request of most commands. */
int ctl_request(struct ctl *ctl, const char *what, pb_size_t tag, pb_size_t want);

/* Finishes ctl->out. Returns CTL_EXIT_OK, or CTL_EXIT_FAIL after saying
 * that the output could not be written. */
int ctl_finish(struct ctl *ctl);

/* Field lists of reply structs (struct ctl_field): a key:value line or a
 * column named like the field, a column with a heading of its own (NULL:
 * JSON only), a text section's title. */
#define CTL_FIELD(type, name, kind, fmt) \
	{#name, #name, kind, fmt, offsetof(type, name)}
#define CTL_COLUMN(type, name, head, kind, fmt) \
	{#name, head, kind, fmt, offsetof(type, name)}
#define CTL_SECTION(title) {NULL, title, CTL_TYPE_SECTION, CTL_FMT_PLAIN, 0}
#define CTL_N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The commands; argc/argv are the command's arguments (main has checked
 * their number). Each returns an exit status. */
int ctl_cmd_status(struct ctl *ctl, int argc, char **argv);       /* cudaepctl_cmds.c */
int ctl_cmd_clients(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_sessions(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_mem(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_trim(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_kill_session(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_stats(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_ping(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_graphs(struct ctl *ctl, int argc, char **argv);       /* cudaepctl_inspect.c */
int ctl_cmd_kernels(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_metrics(struct ctl *ctl, int argc, char **argv);      /* cudaepctl_metrics.c */
int ctl_cmd_top(struct ctl *ctl, int argc, char **argv);          /* cudaepctl_top.c */

/* --------------------------------------------------------------- NVML */

#define CTL_NVML_MAX_GPUS 16

struct ctl_gpu {
	char name[96];
	unsigned util;      /* percent of NVML's last sample period busy */
	uint64_t mem_used;  /* bytes */
	uint64_t mem_total; /* bytes */
	bool ok;            /* the figures above could be read */
};

/* NVML, loaded with dlopen: absent on machines without NVIDIA's driver. */
struct ctl_nvml;

/* Loads libnvidia-ml.so.1 and initialises it. Returns the handle (the
 * caller's, for ctl_nvml_free), or NULL when NVML is not available: no
 * library, a missing entry point, or nvmlInit_v2 failing (no driver). */
struct ctl_nvml *ctl_nvml_new(void);

/* Reads up to max GPUs, in NVML's order, into gpus; returns how many were
 * filled in. A GPU whose figures cannot be read has ok false. */
int ctl_nvml_sample(struct ctl_nvml *nvml, struct ctl_gpu *gpus, int max);

/* Shuts NVML down and unloads it. Accepts NULL. */
void ctl_nvml_free(struct ctl_nvml *nvml);

#endif
