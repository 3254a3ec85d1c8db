/*
 * cudaepctl_top.c — `cudaepctl top`: a live view of a running cudaepd,
 * redrawn every --interval seconds (default 1) with plain ANSI (clear and
 * home): the daemon, request and run rates, mean run latency, memory, GPU
 * utilisation (through NVML when the driver has it, cudaepctl_nvml.c),
 * then the sessions, busiest first, and the clients.
 *
 * Rates are differences between two successive samples (five admin
 * requests each) over the time between them, so the first frame shows
 * "-" where a rate belongs. q or Ctrl-C quits; the terminal is put in
 * non-canonical mode to read q without Enter, and restored on the way out.
 * --once takes two samples an interval apart and prints one frame without
 * escape codes, for scripts and tests.
 */
#include "tools/cudaepctl/cudaepctl.h"
#include "client/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define TOP_INTERVAL_DEFAULT 1.0 /* seconds */
#define TOP_NAME_COLS 24         /* bytes of a name shown */
/* Lines of a frame besides the head and the rows of its two lists: a
 * blank line, a heading and a "... N more" line each, and the cursor's. */
#define TOP_LIST_ROWS 7

/* One look at the daemon: the bodies of five replies. */
struct top_sample {
	double t; /* seconds of the monotonic clock when taken */
	cudaep_v1_StatusReply status;
	cudaep_v1_StatsReply stats;
	cudaep_v1_ClientsReply clients;
	cudaep_v1_SessionsReply sessions;
	cudaep_v1_MemoryReply memory;
};

struct top {
	struct ctl *ctl;
	struct top_sample *cur;  /* the latest sample */
	struct top_sample *prev; /* the one before; NULL before a second */
	struct top_sample buf[2];
	struct ctl_nvml *nvml;   /* NULL: NVML not available */
	struct ctl_gpu gpus[CTL_NVML_MAX_GPUS];
	bool tty_out;            /* stdout is a terminal: clear between frames */
	int rows;                /* terminal lines; 0 = no limit */
};

struct top_row {
	size_t index; /* into the reply's list */
	double rate;  /* per second; < 0 when unknown */
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------- sampling */

static int top_sample_take(struct top *t, struct top_sample *s)
{
	struct ctl *ctl = t->ctl;
	cudaep_v1_Response *r = ctl->resp;

	if (ctl_call(ctl, "top", cudaep_v1_Request_status_tag,
		     cudaep_v1_Response_status_reply_tag, r) != 0)
		return -1;
	s->status = r->body.status_reply;
	if (ctl_call(ctl, "top", cudaep_v1_Request_stats_tag,
		     cudaep_v1_Response_stats_tag, r) != 0)
		return -1;
	s->stats = r->body.stats;
	if (ctl_call(ctl, "top", cudaep_v1_Request_clients_tag,
		     cudaep_v1_Response_clients_tag, r) != 0)
		return -1;
	s->clients = r->body.clients;
	if (ctl_call(ctl, "top", cudaep_v1_Request_sessions_tag,
		     cudaep_v1_Response_sessions_tag, r) != 0)
		return -1;
	s->sessions = r->body.sessions;
	if (ctl_call(ctl, "top", cudaep_v1_Request_memory_tag,
		     cudaep_v1_Response_memory_tag, r) != 0)
		return -1;
	s->memory = r->body.memory;
	s->t = mono_s();
	return 0;
}

/* Takes a new sample; the current one becomes the previous. */
static int top_advance(struct top *t)
{
	struct top_sample *next = t->cur == &t->buf[0] ? &t->buf[1] : &t->buf[0];

	if (top_sample_take(t, next) != 0)
		return -1;
	if (t->cur != NULL)
		t->prev = t->cur;
	t->cur = next;
	return 0;
}

static bool stat_counter(const cudaep_v1_StatsReply *st, const char *name,
			 uint64_t *v)
{
	for (pb_size_t i = 0; i < st->counters_count; i++) {
		if (strcmp(st->counters[i].name, name) == 0) {
			*v = st->counters[i].value;
			return true;
		}
	}
	return false;
}

/* Growth per second of counter name between the two samples; < 0 when it
 * cannot be known (one sample, the name missing, a restarted daemon). */
static double top_rate(const struct top *t, const char *name)
{
	uint64_t a, b;
	double dt;

	if (t->prev == NULL)
		return -1;
	dt = t->cur->t - t->prev->t;
	if (dt <= 0 || !stat_counter(&t->prev->stats, name, &a) ||
	    !stat_counter(&t->cur->stats, name, &b) || b < a)
		return -1;
	return (double)(b - a) / dt;
}

/* ------------------------------------------------------------ rendering */

/* s as it may go to a terminal, in buf (len bytes): C0 and C1 control
 * characters, which could move the cursor or change the terminal's
 * state, shown as '?', and cut where it no longer fits, never inside a
 * UTF-8 sequence. */
static const char *term_safe(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, k;

	while (*p != '\0' && n + 1 < len) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			buf[n++] = '?';
			p += 2;
			continue;
		}
		if (*p < 0x80) {
			buf[n++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
			p++;
			continue;
		}
		/* A stray byte passes alone: the terminal shows it as such. */
		k = ctl_utf8_len(p);
		if (k == 0)
			k = 1;
		if (n + k >= len)
			break;
		memcpy(buf + n, p, k);
		n += k;
		p += k;
	}
	buf[n] = '\0';
	return buf;
}

static const char *fmt_rate(char *buf, size_t len, double rate)
{
	if (rate < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", rate);
	return buf;
}

static void frame_head(const struct top *t, FILE *f)
{
	const struct top_sample *s = t->cur;
	const cudaep_v1_StatusReply *st = &s->status;
	double runs = top_rate(t, "runs"), run_ns = top_rate(t, "run_ns");
	char a[48], b[48], c[48], dev[128];

	fprintf(f, "cudaepd %s at %s, pid %" PRId64 ", up %s\n",
		st->daemon_version, t->ctl->path, st->pid,
		ctl_fmt_usec(a, sizeof(a), st->uptime_us));
	fprintf(f, "backend %s: %s\n", st->backend,
		term_safe(dev, sizeof(dev), st->device_name));
	fprintf(f, "requests/s %s   runs/s %s   run errors/s %s   ",
		fmt_rate(a, sizeof(a), top_rate(t, "requests")),
		fmt_rate(b, sizeof(b), runs),
		fmt_rate(c, sizeof(c), top_rate(t, "run_errors")));
	/* The mean over the interval: time spent in runs / runs done. */
	if (runs > 0 && run_ns >= 0)
		fprintf(f, "mean run %s\n",
			ctl_fmt_usec(a, sizeof(a),
				     (uint64_t)(run_ns / runs / 1e3 + 0.5)));
	else
		fprintf(f, "mean run -\n");
	fprintf(f, "clients %" PRIu32 "   sessions %" PRIu32 "   regions %"
		PRIu32 " (%s)\n", st->clients, st->sessions, st->regions,
		ctl_fmt_bytes(a, sizeof(a), st->region_bytes));
	for (pb_size_t i = 0; i < s->memory.entries_count; i++) {
		const cudaep_v1_MemoryEntry *e = &s->memory.entries[i];

		if (strcmp(e->owner, "total") != 0)
			continue;
		fprintf(f, "memory %s: %s, peak %s, ", e->role,
			ctl_fmt_bytes(a, sizeof(a), e->current),
			ctl_fmt_bytes(b, sizeof(b), e->peak));
		if (e->limit != 0)
			fprintf(f, "limit %s\n",
				ctl_fmt_bytes(c, sizeof(c), e->limit));
		else
			fprintf(f, "no limit\n");
	}
}

static void frame_gpus(const struct top *t, FILE *f, int n)
{
	char a[48], b[48], name[sizeof(((struct ctl_gpu *)0)->name)];

	if (t->nvml == NULL) {
		fprintf(f, "GPU: NVML not available\n");
		return;
	}
	if (n == 0)
		fprintf(f, "GPU: none found by NVML\n");
	for (int i = 0; i < n; i++) {
		const struct ctl_gpu *g = &t->gpus[i];

		term_safe(name, sizeof(name), g->name);
		if (!g->ok) {
			fprintf(f, "GPU %d %s: cannot be read\n", i, name);
			continue;
		}
		fprintf(f, "GPU %d %s: %u%% busy, memory %s of %s\n", i, name,
			g->util, ctl_fmt_bytes(a, sizeof(a), g->mem_used),
			ctl_fmt_bytes(b, sizeof(b), g->mem_total));
	}
}

static int row_by_rate(const void *pa, const void *pb)
{
	const struct top_row *a = pa, *b = pb;

	if (a->rate != b->rate)
		return a->rate < b->rate ? 1 : -1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Prints "... N more" when a list had to be cut to fit the terminal. */
static void frame_more(FILE *f, size_t shown, size_t count, uint32_t total)
{
	size_t all = total > count ? total : count;

	if (all > shown)
		fprintf(f, "... %zu more\n", all - shown);
}

static void frame_sessions(const struct top *t, FILE *f, size_t max)
{
	const cudaep_v1_SessionsReply *r = &t->cur->sessions;
	const cudaep_v1_SessionsReply *p =
		t->prev != NULL ? &t->prev->sessions : NULL;
	double dt = t->prev != NULL ? t->cur->t - t->prev->t : 0;
	struct top_row rows[sizeof(r->sessions) / sizeof(r->sessions[0])];
	char a[48], b[48], name[TOP_NAME_COLS + 1];
	size_t n = r->sessions_count, i;

	for (i = 0; i < n; i++) {
		const cudaep_v1_SessionEntry *e = &r->sessions[i];

		rows[i].index = i;
		rows[i].rate = -1;
		for (pb_size_t j = 0; p != NULL && dt > 0 && j < p->sessions_count;
		     j++) {
			const cudaep_v1_SessionEntry *o = &p->sessions[j];

			if (o->session_id == e->session_id && e->runs >= o->runs)
				rows[i].rate = (double)(e->runs - o->runs) / dt;
		}
	}
	qsort(rows, n, sizeof(rows[0]), row_by_rate);
	fprintf(f, "\n%7s  %6s  %8s  %10s  %7s  %s\n", "SESSION", "CLIENT",
		"RUNS/S", "RUNS", "LOADED", "NAME");
	for (i = 0; i < n && i < max; i++) {
		const cudaep_v1_SessionEntry *e = &r->sessions[rows[i].index];

		fprintf(f, "%7" PRIu64 "  %6" PRIu64 "  %8s  %10" PRIu64
			"  %7s  %s\n", e->session_id, e->client_id,
			fmt_rate(a, sizeof(a), rows[i].rate), e->runs,
			ctl_fmt_usec(b, sizeof(b), e->loaded_us),
			term_safe(name, sizeof(name), e->name));
	}
	if (n == 0)
		fprintf(f, "(no sessions)\n");
	frame_more(f, i, n, r->total);
}

static void frame_clients(const struct top *t, FILE *f, size_t max)
{
	const cudaep_v1_ClientsReply *r = &t->cur->clients;
	const cudaep_v1_ClientsReply *p =
		t->prev != NULL ? &t->prev->clients : NULL;
	double dt = t->prev != NULL ? t->cur->t - t->prev->t : 0;
	char a[48], b[48], name[TOP_NAME_COLS + 1];
	size_t n = r->clients_count, i;

	fprintf(f, "\n%7s  %7s  %6s  %8s  %7s  %10s  %7s  %s\n", "CLIENT",
		"PID", "UID", "SESSIONS", "REGIONS", "REGION_B", "REQ/S",
		"NAME");
	for (i = 0; i < n && i < max; i++) {
		const cudaep_v1_ClientEntry *e = &r->clients[i];
		double rate = -1;

		for (pb_size_t j = 0; p != NULL && dt > 0 && j < p->clients_count;
		     j++) {
			const cudaep_v1_ClientEntry *o = &p->clients[j];

			if (o->client_id == e->client_id &&
			    e->requests >= o->requests)
				rate = (double)(e->requests - o->requests) / dt;
		}
		fprintf(f, "%7" PRIu64 "  %7" PRId32 "  %6" PRIu32 "  %8" PRIu32
			"  %7" PRIu32 "  %10s  %7s  %s\n", e->client_id, e->pid,
			e->uid, e->sessions, e->regions,
			ctl_fmt_bytes(a, sizeof(a), e->region_bytes),
			fmt_rate(b, sizeof(b), rate),
			term_safe(name, sizeof(name), e->name));
	}
	frame_more(f, i, n, r->total);
}

/* Draws the current sample: built in memory and written at once, so the
 * terminal never shows half a frame. */
static int top_draw(struct top *t)
{
	size_t max_sessions = SIZE_MAX, max_clients = SIZE_MAX, len = 0;
	char *text = NULL;
	FILE *f;
	int n, ret = -1;

	f = open_memstream(&text, &len);
	if (f == NULL)
		return -1;
	n = ctl_nvml_sample(t->nvml, t->gpus, CTL_NVML_MAX_GPUS);
	if (t->tty_out)
		fputs("\033[H\033[2J", f);
	frame_head(t, f);
	frame_gpus(t, f, n);
	if (t->rows > 0 && fflush(f) == 0) {
		/* Whatever the head and the lists' own lines leave goes to
		 * the sessions, up to half, and the rest to the clients. */
		size_t sessions = t->cur->sessions.sessions_count, left;
		int rows = t->rows - TOP_LIST_ROWS;

		for (size_t i = 0; i < len; i++)
			rows -= text[i] == '\n';
		left = rows > 2 ? (size_t)rows : 2;
		max_sessions = sessions < left / 2 ? (sessions ? sessions : 1)
						   : left / 2;
		max_clients = left - max_sessions;
	}
	frame_sessions(t, f, max_sessions);
	frame_clients(t, f, max_clients);
	if (fclose(f) != 0)
		goto out;
	if (fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0)
		ret = 0;
out:
	free(text);
	return ret;
}

/* -------------------------------------------------------------- the loop */

/* Set by SIGINT, SIGTERM and SIGHUP; SIGWINCH only interrupts the wait,
 * so the next frame fits the new size. */
static volatile sig_atomic_t top_quit;

static void top_on_signal(int sig)
{
	if (sig != SIGWINCH)
		top_quit = 1;
}

/* Waits up to interval seconds for a key, a signal or the deadline.
 * Returns 1 to quit (q, SIGINT, SIGTERM, SIGHUP), 0 to draw again. The
 * signals are blocked outside ppoll, so none slips in between a check and
 * the wait. */
static int top_wait(double interval, bool tty_in, const sigset_t *unblocked)
{
	double deadline = mono_s() + interval;
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};

	for (;;) {
		double left = deadline - mono_s();
		struct timespec ts;
		char key[16];
		ssize_t n;
		int r;

		if (left <= 0)
			return 0;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		r = ppoll(&pfd, tty_in ? 1 : 0, &ts, unblocked);
		if (r < 0)
			return errno == EINTR && !top_quit ? 0 : 1;
		if (r == 0)
			return 0;
		n = read(STDIN_FILENO, key, sizeof(key));
		if (n <= 0)
			return 1;
		if (memchr(key, 'q', (size_t)n) != NULL ||
		    memchr(key, 'Q', (size_t)n) != NULL)
			return 1;
	}
}

static int terminal_rows(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0)
		return 0;
	return ws.ws_row;
}

static int top_live(struct top *t, double interval)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
	struct sigaction sa = {.sa_handler = top_on_signal};
	struct termios saved, raw;
	sigset_t block, unblocked;
	bool tty_in = isatty(STDIN_FILENO);
	bool restore = false;
	int ret = CTL_EXIT_FAIL;

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaddset(&block, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	sigprocmask(SIG_BLOCK, &block, &unblocked);
	if (tty_in && tcgetattr(STDIN_FILENO, &saved) == 0) {
		/* One key at a time, not echoed; ISIG stays on, so Ctrl-C is
		 * still SIGINT. */
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		restore = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	for (;;) {
		if (top_advance(t) != 0)
			goto out;
		t->rows = t->tty_out ? terminal_rows() : 0;
		if (top_draw(t) != 0) {
			fprintf(stderr, "cudaepctl: cannot write the output\n");
			goto out;
		}
		if (!t->tty_out)
			fputc('\n', stdout);
		if (top_wait(interval, tty_in, &unblocked) != 0)
			break;
	}
	ret = CTL_EXIT_OK;
out:
	if (restore)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	sigprocmask(SIG_SETMASK, &unblocked, NULL);
	return ret;
}

/* Two samples interval apart, one frame, no escape codes. */
static int top_once(struct top *t, double interval)
{
	struct timespec ts;

	if (top_advance(t) != 0)
		return CTL_EXIT_FAIL;
	ts.tv_sec = (time_t)interval;
	ts.tv_nsec = (long)((interval - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	if (top_advance(t) != 0)
		return CTL_EXIT_FAIL;
	if (top_draw(t) != 0) {
		fprintf(stderr, "cudaepctl: cannot write the output\n");
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

int ctl_cmd_top(struct ctl *ctl, int argc, char **argv)
{
	double interval = ctl->interval > 0 ? ctl->interval
					    : TOP_INTERVAL_DEFAULT;
	struct top *t;
	int ret;

	if (ctl->json) {
		fprintf(stderr, "cudaepctl: top has no JSON form; "
			"see 'cudaepctl --json stats'\n");
		return CTL_EXIT_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret != 0)
		return ret;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		fprintf(stderr, "cudaepctl: top: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	t->ctl = ctl;
	t->tty_out = !ctl->once && isatty(STDOUT_FILENO);
	t->nvml = ctl_nvml_new();
	ret = ctl->once ? top_once(t, interval) : top_live(t, interval);
	ctl_nvml_free(t->nvml);
	free(t);
	return ret;
}
