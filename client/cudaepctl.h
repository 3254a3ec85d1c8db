/*
 * cudaepctl.h — the output side of cudaepctl (client/cudaepctl_out.c),
 * shared with its commands (client/cudaepctl.c). One printer writes either
 * human text in redis-INFO style ("# Section" then key:value lines, tables
 * for lists) or one JSON object per command; commands describe their
 * fields once and the printer chooses the form.
 */
#ifndef CEP_CUDAEPCTL_H
#define CEP_CUDAEPCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
};

/* How a number reads in text; JSON always carries the raw number. */
enum ctl_fmt {
	CTL_FMT_PLAIN,
	CTL_FMT_BYTES, /* 1.5 MiB */
	CTL_FMT_USEC,  /* microseconds as 3.2s, 5m03s, 2h05m */
	CTL_FMT_LIMIT, /* bytes; 0 reads "-" (no limit) */
};

/* One field of a reply struct: its JSON key, its text column heading (or a
 * section's title), and where and how it is stored. */
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

#endif
