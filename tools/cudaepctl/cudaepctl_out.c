/*
 * cudaepctl_out.c — the printers of cudaepctl: redis-INFO-style text
 * (sections of key:value lines, aligned tables for lists) or one JSON
 * object per command. Field lists (struct ctl_field) describe a reply's
 * nanopb struct once; both forms are produced from them. Names in replies
 * come from other clients, so text output masks control characters and
 * JSON output escapes them and repairs invalid UTF-8.
 */
#include "tools/cudaepctl/cudaepctl.h"

#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------- values */

struct ctl_val {
	const char *str; /* CTL_TYPE_STR, else NULL */
	bool is_bool;    /* CTL_TYPE_BOOL: str is "yes" or "no", JSON's
	                  * true or false */
	bool is_signed;
	int64_t i;
	uint64_t u;
};

/* The name of a session precision, as cudaep-run's --precision takes it. */
static const char *precision_text(cudaep_v1_Precision p)
{
	static const char *const names[] = {"fp32", "tf32", "fp16", "bf16"};

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

static struct ctl_val field_val(const struct ctl_field *fld, const void *p)
{
	const char *at = (const char *)p + fld->offset;
	struct ctl_val v = {0};
	cudaep_v1_Precision prec;
	uint32_t u32;
	int32_t i32;

	switch (fld->type) {
	case CTL_TYPE_STR:
		v.str = at;
		break;
	case CTL_TYPE_U32:
		memcpy(&u32, at, sizeof(u32));
		v.u = u32;
		break;
	case CTL_TYPE_U64:
		memcpy(&v.u, at, sizeof(v.u));
		break;
	case CTL_TYPE_I32:
		memcpy(&i32, at, sizeof(i32));
		v.is_signed = true;
		v.i = i32;
		break;
	case CTL_TYPE_I64:
		memcpy(&v.i, at, sizeof(v.i));
		v.is_signed = true;
		break;
	case CTL_TYPE_PRECISION:
		memcpy(&prec, at, sizeof(prec));
		v.str = precision_text(prec);
		break;
	case CTL_TYPE_BOOL:
		v.is_bool = true;
		v.str = *(const bool *)(const void *)at ? "yes" : "no";
		break;
	case CTL_TYPE_SECTION:
		break;
	}
	return v;
}

const char *ctl_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
					    "EiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const char *ctl_fmt_usec(char *buf, size_t len, uint64_t us)
{
	uint64_t s = us / 1000000;

	if (us < 1000)
		snprintf(buf, len, "%" PRIu64 "us", us);
	else if (us < 1000000)
		snprintf(buf, len, "%.1fms", (double)us / 1e3);
	else if (s < 60)
		snprintf(buf, len, "%.1fs", (double)us / 1e6);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
	return buf;
}

/* The text form of v: human units where fmt asks and the value allows. */
static const char *val_text(char *buf, size_t len, struct ctl_val v,
			    enum ctl_fmt fmt)
{
	if (v.str != NULL) {
		size_t i;

		/* Control characters could move the terminal's cursor. */
		for (i = 0; v.str[i] != '\0' && i + 1 < len; i++) {
			unsigned char ch = (unsigned char)v.str[i];

			buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
		}
		buf[i] = '\0';
		return buf;
	}
	if (v.is_signed && v.i < 0) {
		snprintf(buf, len, "%" PRId64, v.i);
		return buf;
	}
	if (v.is_signed)
		v.u = (uint64_t)v.i;
	switch (fmt) {
	case CTL_FMT_LIMIT:
		if (v.u == 0) {
			snprintf(buf, len, "-");
			return buf;
		}
		return ctl_fmt_bytes(buf, len, v.u);
	case CTL_FMT_BYTES:
		return ctl_fmt_bytes(buf, len, v.u);
	case CTL_FMT_USEC:
		return ctl_fmt_usec(buf, len, v.u);
	case CTL_FMT_PLAIN:
		break;
	}
	snprintf(buf, len, "%" PRIu64, v.u);
	return buf;
}

/* --------------------------------------------------------------- JSON */

size_t ctl_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

void ctl_json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s != '\0') {
		unsigned char c = *s;
		size_t n;

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, f);
			} else {
				n = ctl_utf8_len(s);
				if (n == 0) {
					fputs("\\ufffd", f);
					break;
				}
				fwrite(s, 1, n, f);
				s += n;
				continue;
			}
		}
		s++;
	}
	fputc('"', f);
}

/* Starts a member (or an array element when key is NULL) of the innermost
 * open JSON value. */
static void json_member(struct ctl_out *o, const char *key)
{
	if (o->has_items[o->depth])
		fputc(',', o->f);
	o->has_items[o->depth] = true;
	if (key != NULL) {
		ctl_json_string(o->f, key);
		fputc(':', o->f);
	}
}

static void json_open(struct ctl_out *o, const char *key, char brace)
{
	json_member(o, key);
	fputc(brace, o->f);
	o->depth++;
	o->has_items[o->depth] = false;
}

static void json_close(struct ctl_out *o, char brace)
{
	fputc(brace, o->f);
	o->depth--;
}

static void json_val(struct ctl_out *o, struct ctl_val v)
{
	if (v.is_bool)
		fputs(strcmp(v.str, "yes") == 0 ? "true" : "false", o->f);
	else if (v.str != NULL)
		ctl_json_string(o->f, v.str);
	else if (v.is_signed)
		fprintf(o->f, "%" PRId64, v.i);
	else
		fprintf(o->f, "%" PRIu64, v.u);
}

/* ----------------------------------------------------------- printers */

void ctl_out_init(struct ctl_out *o, FILE *f, bool json)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = json;
	if (json)
		fputc('{', f);
}

int ctl_out_finish(struct ctl_out *o)
{
	if (o->json)
		fputs("}\n", o->f);
	return fflush(o->f) != 0 || ferror(o->f) ? -1 : 0;
}

void ctl_out_begin(struct ctl_out *o, const char *title, const char *key)
{
	if (o->json) {
		json_open(o, key, '{');
		return;
	}
	fprintf(o->f, "%s# %s\n", o->any_section ? "\n" : "", title);
	o->any_section = true;
}

void ctl_out_end(struct ctl_out *o)
{
	if (o->json)
		json_close(o, '}');
}

static void out_val(struct ctl_out *o, const char *key, struct ctl_val v,
		    enum ctl_fmt fmt)
{
	char buf[256];

	if (o->json) {
		json_member(o, key);
		json_val(o, v);
		return;
	}
	fprintf(o->f, "%s:%s\n", key, val_text(buf, sizeof(buf), v, CTL_FMT_PLAIN));
	/* As redis's used_memory_human: the exact number stays greppable. */
	if (v.str == NULL && (fmt == CTL_FMT_BYTES || fmt == CTL_FMT_USEC))
		fprintf(o->f, "%s_human:%s\n", key,
			val_text(buf, sizeof(buf), v, fmt));
}

void ctl_out_str(struct ctl_out *o, const char *key, const char *s)
{
	struct ctl_val v = {.str = s};

	out_val(o, key, v, CTL_FMT_PLAIN);
}

void ctl_out_u64(struct ctl_out *o, const char *key, uint64_t u,
		 enum ctl_fmt fmt)
{
	struct ctl_val v = {.u = u};

	out_val(o, key, v, fmt);
}

void ctl_out_double(struct ctl_out *o, const char *key, double d)
{
	if (o->json) {
		json_member(o, key);
		fprintf(o->f, "%.3f", d);
		return;
	}
	fprintf(o->f, "%s:%.3f\n", key, d);
}

void ctl_out_fields(struct ctl_out *o, const struct ctl_field *fields,
		    size_t n, const void *p)
{
	for (size_t i = 0; i < n; i++) {
		const struct ctl_field *fld = &fields[i];

		if (fld->type == CTL_TYPE_SECTION) {
			if (!o->json)
				ctl_out_begin(o, fld->head, NULL);
			continue;
		}
		out_val(o, fld->key, field_val(fld, p), fld->fmt);
	}
}

static void table_json(struct ctl_out *o, const char *key,
		       const struct ctl_field *fields, size_t n,
		       const char *rows, size_t stride, size_t count,
		       uint32_t total)
{
	json_open(o, key, '[');
	for (size_t r = 0; r < count; r++) {
		json_open(o, NULL, '{');
		for (size_t i = 0; i < n; i++) {
			if (fields[i].type == CTL_TYPE_SECTION)
				continue;
			json_member(o, fields[i].key);
			json_val(o, field_val(&fields[i], rows + r * stride));
		}
		json_close(o, '}');
	}
	json_close(o, ']');
	json_member(o, "total");
	fprintf(o->f, "%" PRIu32, total);
}

#define CTL_MAX_COLS 24

void ctl_out_table(struct ctl_out *o, const char *title, const char *key,
		   const struct ctl_field *fields, size_t n, const void *rows,
		   size_t stride, size_t count, uint32_t total)
{
	const char *base = rows;
	size_t width[CTL_MAX_COLS], last_shown = 0;
	char buf[256];

	if (n > CTL_MAX_COLS)
		n = CTL_MAX_COLS;
	if (o->json) {
		table_json(o, key, fields, n, base, stride, count, total);
		return;
	}
	ctl_out_begin(o, title, NULL);
	/* A field without a heading is for JSON only; the last shown
	 * column ends the line. */
	for (size_t i = 0; i < n; i++)
		if (fields[i].head != NULL)
			last_shown = i;
	/* Two passes over the cells: widths first, then the lines, so no
	 * row needs to be kept. */
	for (size_t i = 0; i < n; i++) {
		if (fields[i].head == NULL)
			continue;
		width[i] = strlen(fields[i].head);
		for (size_t r = 0; r < count; r++) {
			struct ctl_val v = field_val(&fields[i], base + r * stride);
			size_t w;

			w = strlen(val_text(buf, sizeof(buf), v, fields[i].fmt));
			if (w > width[i])
				width[i] = w;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool last = i == last_shown;

		if (fields[i].head == NULL)
			continue;
		/* Headings align as their column's values do. */
		if (fields[i].type == CTL_TYPE_STR || fields[i].type == CTL_TYPE_PRECISION ||
		    fields[i].type == CTL_TYPE_BOOL)
			fprintf(o->f, "%-*s", last ? 0 : (int)width[i],
				fields[i].head);
		else
			fprintf(o->f, "%*s", (int)width[i], fields[i].head);
		fputs(last ? "\n" : "  ", o->f);
	}
	for (size_t r = 0; r < count; r++) {
		for (size_t i = 0; i < n; i++) {
			struct ctl_val v = field_val(&fields[i], base + r * stride);
			bool last = i == last_shown;
			int w = (int)width[i];

			if (fields[i].head == NULL)
				continue;
			val_text(buf, sizeof(buf), v, fields[i].fmt);
			/* Numbers line up on the right, names on the left. */
			if (v.str != NULL)
				fprintf(o->f, "%-*s", last ? 0 : w, buf);
			else
				fprintf(o->f, "%*s", w, buf);
			fputs(last ? "\n" : "  ", o->f);
		}
	}
	if (count == 0)
		fputs("(none)\n", o->f);
	else if (total > count)
		fprintf(o->f, "(%zu of %" PRIu32 " shown)\n", count, total);
}
