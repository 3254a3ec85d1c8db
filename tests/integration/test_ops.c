/*
 * test_ops.c — cudaepd as operators see it: `cudaepctl metrics` against a
 * real daemon, read back by a small Prometheus text-format (0.0.4) parser
 * written here; `cudaepctl top --once`; the sd_notify messages the daemon
 * sends to $NOTIFY_SOCKET; and the exit statuses of both commands when
 * something is wrong. The units, `make install` and socket activation by
 * systemd-socket-activate are checked by tests/ops/check_ops.sh.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>

#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The daemon of the running test (each test is a process of its own),
 * stopped by the suite's fini even when an assertion cut the test short,
 * so that no daemon outlives its test holding the runner's stdout. */
static struct hdaemon d;

static void daemon_reap(void)
{
	if (d.pid != 0)
		h_daemon_stop(&d, SIGKILL);
}

TestSuite(ops, .timeout = 60, .fini = daemon_reap);

/* ------------------------------------------------------ running the tool */

struct run_result {
	int status;      /* exit status, or -1 when it did not exit */
	char out[65536]; /* stdout */
	char err[4096];  /* stderr */
};

static void read_all(int fd, char *buf, size_t len)
{
	size_t pos = 0;
	ssize_t n;

	while (pos + 1 < len && (n = read(fd, buf + pos, len - 1 - pos)) > 0)
		pos += (size_t)n;
	buf[pos] = '\0';
	close(fd);
}

/* Runs cudaepctl with the NULL-terminated args, stdin from /dev/null. */
static void ctl_run(struct run_result *r, const char *const *args)
{
	const char *argv[16] = {h_bin("cudaepctl")};
	int out[2], err[2], st, n = 1;
	pid_t pid;

	for (; args[n - 1] != NULL && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	cr_assert_eq(pipe(out), 0);
	cr_assert_eq(pipe(err), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	/* stdout to its end, then stderr: stderr stays far below a pipe's
	 * capacity, so the child cannot block on it meanwhile. */
	read_all(out[0], r->out, sizeof(r->out));
	read_all(err[0], r->err, sizeof(r->err));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --------------------------------------------- Prometheus text, 0.0.4 */

#define PROM_MAX_SAMPLES 512
#define PROM_MAX_LABELS  8
#define PROM_MAX_FAMILIES 256

struct prom_label {
	char name[64];
	char value[256]; /* unescaped */
};

struct prom_sample {
	char name[128];
	struct prom_label labels[PROM_MAX_LABELS];
	int n_labels;
	double value;
};

struct prom_family {
	char name[128];
	char type[16]; /* "" until its TYPE line */
	bool has_help;
	bool has_samples;
	bool closed;   /* another family's sample came after its own */
};

struct prom {
	struct prom_sample samples[PROM_MAX_SAMPLES];
	int n_samples;
	struct prom_family families[PROM_MAX_FAMILIES];
	int n_families;
	int last_family; /* of the previous sample, -1 before one */
	char err[256];   /* why parsing stopped */
};

static bool name_start(int c)
{
	return isalpha(c) || c == '_' || c == ':';
}

static bool name_char(int c)
{
	return isalnum(c) || c == '_' || c == ':';
}

/* Reads a metric name (or, colons refused, a label name) at *p into buf. */
static bool prom_read_name(const char **p, char *buf, size_t len, bool label)
{
	const char *s = *p;
	size_t n = 0;

	if (!name_start((unsigned char)*s) || (label && *s == ':'))
		return false;
	while (name_char((unsigned char)s[n]) && !(label && s[n] == ':')) {
		if (n + 1 >= len)
			return false;
		buf[n] = s[n];
		n++;
	}
	buf[n] = '\0';
	*p = s + n;
	return true;
}

/* A float as the format writes them: decimal, or +Inf, -Inf, NaN. */
static bool prom_read_value(const char **p, double *v)
{
	const char *s = *p;
	char *end;

	if (strncmp(s, "+Inf", 4) == 0 || strncmp(s, "-Inf", 4) == 0 ||
	    strncmp(s, "NaN", 3) == 0) {
		*v = s[0] == 'N' ? NAN : s[0] == '+' ? INFINITY : -INFINITY;
		*p = s + (s[0] == 'N' ? 3 : 4);
		return true;
	}
	if (!(isdigit((unsigned char)*s) || *s == '-' || *s == '+' || *s == '.'))
		return false;
	if (strchr("xX", s[1]) != NULL && s[1] != '\0')
		return false;
	*v = strtod(s, &end);
	if (end == s)
		return false;
	*p = end;
	return true;
}

/* Label value between quotes, unescaping \\, \" and \n (nothing else may
 * follow a backslash), and checking the bytes are UTF-8. */
static bool prom_read_label_value(const char **p, char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)*p;
	size_t n = 0;

	if (*s++ != '"')
		return false;
	while (*s != '"') {
		unsigned char c = *s;

		if (c == '\0' || c == '\n' || n + 5 >= len)
			return false;
		if (c == '\\') {
			s++;
			if (*s == '\\' || *s == '"')
				buf[n++] = (char)*s;
			else if (*s == 'n')
				buf[n++] = '\n';
			else
				return false;
			s++;
			continue;
		}
		if (c >= 0x80) {
			int k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;

			if (k == 0 || c > 0xf4)
				return false;
			for (int i = 1; i < k; i++)
				if ((s[i] & 0xc0) != 0x80)
					return false;
			memcpy(buf + n, s, (size_t)k);
			n += (size_t)k;
			s += k;
			continue;
		}
		buf[n++] = (char)c;
		s++;
	}
	buf[n] = '\0';
	*p = (const char *)s + 1;
	return true;
}

static int prom_family_find(struct prom *pr, const char *name, bool add)
{
	for (int i = 0; i < pr->n_families; i++)
		if (strcmp(pr->families[i].name, name) == 0)
			return i;
	if (!add || pr->n_families == PROM_MAX_FAMILIES)
		return -1;
	snprintf(pr->families[pr->n_families].name,
		 sizeof(pr->families[0].name), "%s", name);
	return pr->n_families++;
}

/* The family a sample name belongs to: itself, or for histograms and
 * summaries the name without _bucket, _sum or _count. */
static int prom_sample_family(struct prom *pr, const char *name)
{
	static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
	int f = prom_family_find(pr, name, false);
	char base[128];

	if (f >= 0)
		return f;
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(name), k = strlen(suffixes[i]);

		if (n <= k || strcmp(name + n - k, suffixes[i]) != 0)
			continue;
		snprintf(base, sizeof(base), "%.*s", (int)(n - k), name);
		f = prom_family_find(pr, base, false);
		if (f >= 0 && (strcmp(pr->families[f].type, "histogram") == 0 ||
			       strcmp(pr->families[f].type, "summary") == 0))
			return f;
	}
	return -1;
}

static bool prom_fail(struct prom *pr, int line, const char *why)
{
	snprintf(pr->err, sizeof(pr->err), "line %d: %s", line, why);
	return false;
}

/* "# HELP name text" or "# TYPE name type"; other comments are free. */
static bool prom_comment(struct prom *pr, const char *s, int line)
{
	static const char *const types[] = {"counter", "gauge", "histogram",
					    "summary", "untyped"};
	bool help = strncmp(s, "# HELP ", 7) == 0;
	char name[128];
	int f;

	if (!help && strncmp(s, "# TYPE ", 7) != 0)
		return true;
	s += 7;
	if (!prom_read_name(&s, name, sizeof(name), false))
		return prom_fail(pr, line, "bad metric name in HELP/TYPE");
	f = prom_family_find(pr, name, true);
	if (f < 0)
		return prom_fail(pr, line, "too many families");
	if (help) {
		if (*s != ' ' && *s != '\0')
			return prom_fail(pr, line, "HELP: junk after the name");
		for (const char *q = s; *q != '\0'; q++)
			if (*q == '\\' && q[1] != '\\' && q[1] != 'n')
				return prom_fail(pr, line, "HELP: bad escape");
			else if (*q == '\\')
				q++;
		if (pr->families[f].has_help)
			return prom_fail(pr, line, "second HELP for a family");
		pr->families[f].has_help = true;
		return true;
	}
	if (*s++ != ' ')
		return prom_fail(pr, line, "TYPE without a type");
	for (size_t i = 0; i < 5; i++) {
		if (strcmp(s, types[i]) != 0)
			continue;
		if (pr->families[f].type[0] != '\0')
			return prom_fail(pr, line, "second TYPE for a family");
		if (pr->families[f].has_samples)
			return prom_fail(pr, line, "TYPE after the samples");
		snprintf(pr->families[f].type, sizeof(pr->families[f].type),
			 "%s", s);
		return true;
	}
	return prom_fail(pr, line, "unknown type");
}

static bool prom_sample_line(struct prom *pr, const char *s, int line)
{
	struct prom_sample *sm;
	int f;

	if (pr->n_samples == PROM_MAX_SAMPLES)
		return prom_fail(pr, line, "too many samples");
	sm = &pr->samples[pr->n_samples];
	memset(sm, 0, sizeof(*sm));
	if (!prom_read_name(&s, sm->name, sizeof(sm->name), false))
		return prom_fail(pr, line, "bad metric name");
	if (*s == '{') {
		s++;
		while (*s != '}') {
			struct prom_label *l;

			if (sm->n_labels == PROM_MAX_LABELS)
				return prom_fail(pr, line, "too many labels");
			l = &sm->labels[sm->n_labels++];
			if (!prom_read_name(&s, l->name, sizeof(l->name), true))
				return prom_fail(pr, line, "bad label name");
			for (int i = 0; i + 1 < sm->n_labels; i++)
				if (strcmp(sm->labels[i].name, l->name) == 0)
					return prom_fail(pr, line,
							 "repeated label");
			if (*s++ != '=')
				return prom_fail(pr, line, "label without '='");
			if (!prom_read_label_value(&s, l->value,
						   sizeof(l->value)))
				return prom_fail(pr, line, "bad label value");
			if (*s == ',')
				s++;
			else if (*s != '}')
				return prom_fail(pr, line, "bad label list");
		}
		s++;
	}
	if (*s++ != ' ')
		return prom_fail(pr, line, "no space before the value");
	if (!prom_read_value(&s, &sm->value))
		return prom_fail(pr, line, "bad value");
	if (*s == ' ') {
		/* An optional timestamp: integer milliseconds. */
		s++;
		if (*s == '-')
			s++;
		if (!isdigit((unsigned char)*s))
			return prom_fail(pr, line, "bad timestamp");
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s != '\0')
		return prom_fail(pr, line, "junk after the value");
	f = prom_sample_family(pr, sm->name);
	if (f < 0 || pr->families[f].type[0] == '\0')
		return prom_fail(pr, line, "a sample without a TYPE line");
	if (pr->families[f].closed)
		return prom_fail(pr, line, "a family's samples are not together");
	if (pr->last_family >= 0 && pr->last_family != f)
		pr->families[pr->last_family].closed = true;
	pr->last_family = f;
	pr->families[f].has_samples = true;
	pr->n_samples++;
	return true;
}

/* Parses text (consumed: lines are cut in place). Returns true, or false
 * with pr->err saying which line is wrong and why. */
static bool prom_parse(struct prom *pr, char *text)
{
	char *line = text, *nl;
	int n = 0;

	memset(pr, 0, sizeof(*pr));
	pr->last_family = -1;
	if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
		return prom_fail(pr, 0, "the text does not end with a newline");
	for (; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = '\0';
		n++;
		if (line[0] == '\0')
			continue;
		if (line[0] == '#') {
			if (!prom_comment(pr, line, n))
				return false;
			continue;
		}
		if (!prom_sample_line(pr, line, n))
			return false;
	}
	return true;
}

static const char *label(const struct prom_sample *s, const char *name)
{
	for (int i = 0; i < s->n_labels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}

/* The sample called name whose label key is value (key NULL: any). */
static const struct prom_sample *find(const struct prom *pr, const char *name,
				      const char *key, const char *value)
{
	for (int i = 0; i < pr->n_samples; i++) {
		const struct prom_sample *s = &pr->samples[i];
		const char *v = key != NULL ? label(s, key) : NULL;

		if (strcmp(s->name, name) == 0 &&
		    (key == NULL || (v != NULL && strcmp(v, value) == 0)))
			return s;
	}
	return NULL;
}

static const char *family_type(struct prom *pr, const char *name)
{
	int f = prom_family_find(pr, name, false);

	return f >= 0 ? pr->families[f].type : "";
}

/* The parser itself must refuse what the format forbids, or a passing
 * metrics test would prove nothing. */
Test(ops, parser_refuses_malformed_text)
{
	static const char *const bad[] = {
		"cudaep_x 1\n",                                   /* no TYPE */
		"# TYPE a gauge\na{l=\"v} 1\n",                   /* open quote */
		"# TYPE a gauge\na{l=\"\\t\"} 1\n",               /* bad escape */
		"# TYPE a gauge\na{l=\"\xff\"} 1\n",              /* not UTF-8 */
		"# TYPE a gauge\na one\n",                        /* value */
		"# TYPE a gauge\na 1 2 3\n",                      /* junk */
		"# TYPE 1a gauge\n",                              /* name */
		"# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na 2\n", /* split */
		"# TYPE a gauge\na 1\n# TYPE a gauge\n",          /* TYPE twice */
		"# TYPE a gauge\na{l=\"v\",l=\"w\"} 1\n",         /* label twice */
		"# TYPE a gauge\na 1",                            /* no newline */
	};
	static struct prom pr;
	char text[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s", bad[i]);
		cr_expect_not(prom_parse(&pr, text), "accepted: %s", bad[i]);
	}
	snprintf(text, sizeof(text), "# HELP a h\\\\i\n# TYPE a counter\n"
		 "a{l=\"x\\\"y\\\\z\\n\"} 1.5e3 1700000000000\n\n# other\n");
	cr_assert(prom_parse(&pr, text), "%s", pr.err);
	cr_expect_str_eq(pr.samples[0].labels[0].value, "x\"y\\z\n");
	cr_expect_eq(pr.samples[0].value, 1500.0);
}

/* ------------------------------------------------------------- metrics */

Test(ops, metrics_parse_as_prometheus_text)
{
	static const char odd[] = "odd \"name\" \\ with \xc3\xa9";
	static struct run_result r;
	static struct prom pr;
	const struct prom_sample *s;
	cep_client *c;
	char pid[16];

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	c = h_connect(&d, odd);
	cr_assert_eq(cep_ping(c), 0);
	/* The start-up probe's connection is gone before counting. */
	cr_assert_eq(h_wait_gauge(c, "connections", 1), 1);
	ctl_run(&r, (const char *[]){"--socket", d.sock, "metrics", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	cr_assert(prom_parse(&pr, r.out), "%s", pr.err);

	/* The open connections: the odd client and cudaepctl itself. */
	s = find(&pr, "cudaep_connections", NULL, NULL);
	cr_assert_not_null(s);
	cr_expect_eq(s->value, 2.0);
	cr_expect_str_eq(family_type(&pr, "cudaep_connections"), "gauge");
	cr_expect_not_null(find(&pr, "cudaep_connections_peak", NULL, NULL));
	s = find(&pr, "cudaep_requests_total", NULL, NULL);
	cr_assert_not_null(s);
	cr_expect_geq(s->value, 2.0, "hello and ping at least: %g", s->value);
	cr_expect_str_eq(family_type(&pr, "cudaep_requests_total"), "counter");
	cr_expect_not_null(find(&pr, "cudaep_run_seconds_total", NULL, NULL));
	s = find(&pr, "cudaep_info", NULL, NULL);
	cr_assert_not_null(s);
	cr_expect_str_eq(label(s, "version"), CEP_VERSION);
	cr_expect_str_eq(label(s, "backend"), h_backend());

	/* The odd name comes back intact through the escaping. */
	s = find(&pr, "cudaep_client_requests_total", "name", odd);
	cr_assert_not_null(s, "no series for the odd client:\n%s", r.out);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	cr_expect_str_eq(label(s, "pid"), pid);
	cr_expect_geq(s->value, 1.0);
	cr_expect_not_null(find(&pr, "cudaep_client_regions", "name", odd));
	cr_expect_str_eq(family_type(&pr, "cudaep_session_runs_total"),
			 "counter");
	cep_close(c);
	cr_expect_eq(h_daemon_stop(&d, SIGTERM), 0);
}

Test(ops, metrics_without_a_daemon_print_nothing_and_exit_1)
{
	static struct run_result r;

	cr_assert_eq(h_daemon_prepare(&d), 0);
	ctl_run(&r, (const char *[]){"--socket", d.sock, "metrics", NULL});
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.out, "");
	cr_expect_not_null(strstr(r.err, d.sock), "%s", r.err);
	ctl_run(&r, (const char *[]){"--socket", d.sock, "--json", "metrics",
				     NULL});
	cr_expect_eq(r.status, 2);
	rmdir(d.dir);
}

/* ----------------------------------------------------------------- top */

#define HEAD "cudaepd " CEP_VERSION " at "

Test(ops, top_once_prints_one_frame)
{
	static struct run_result r;
	cep_client *c;

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	c = h_connect(&d, "watched-app");
	ctl_run(&r, (const char *[]){"--socket", d.sock, "top", "--once",
				     "--interval", "0.2", NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(strncmp(r.out, HEAD, sizeof(HEAD) - 1), 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, d.sock), "%s", r.out);
	cr_expect_null(strchr(r.out, '\033'), "--once wrote escape codes");
	/* Two samples were taken, so the rates are numbers, not "-". */
	cr_expect_not_null(strstr(r.out, "requests/s "), "%s", r.out);
	cr_expect_null(strstr(r.out, "requests/s -"), "%s", r.out);
	cr_expect(strstr(r.out, "GPU: NVML not available\n") != NULL ||
		  strstr(r.out, "\nGPU 0 ") != NULL, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "SESSION"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "watched-app\n"), "%s", r.out);
	cep_close(c);
	cr_expect_eq(h_daemon_stop(&d, SIGTERM), 0);
}

Test(ops, top_usage_errors_exit_2)
{
	static struct run_result r;

	ctl_run(&r, (const char *[]){"top", "--interval", "0", NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "--interval"), "%s", r.err);
	ctl_run(&r, (const char *[]){"top", "--interval", "fast", NULL});
	cr_expect_eq(r.status, 2);
	ctl_run(&r, (const char *[]){"status", "--once", NULL});
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "options of top"), "%s", r.err);
}

/* ------------------------------------------------------------ sd_notify */

/* Receives one datagram from fd into buf (10 s at most); false on timeout. */
static bool notify_recv(int fd, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, 10000) != 1)
		return false;
	n = recv(fd, buf, len - 1, 0);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

Test(ops, sd_notify_ready_and_stopping)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char msg[256];
	int fd;

	cr_assert_eq(h_daemon_prepare(&d), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", d.dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* Criterion runs each test in a process of its own: this setting
	 * reaches this test's daemon only. */
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	unsetenv("NOTIFY_SOCKET");
	cr_assert(notify_recv(fd, msg, sizeof(msg)), "no READY=1 came");
	cr_expect_str_eq(msg, "READY=1");
	cr_expect_eq(h_daemon_stop(&d, SIGTERM), 0);
	cr_assert(notify_recv(fd, msg, sizeof(msg)), "no STOPPING=1 came");
	cr_expect_str_eq(msg, "STOPPING=1");
	close(fd);
	unlink(sa.sun_path);
	rmdir(d.dir);
}

/* Under systemd's watchdog (WATCHDOG_USEC) the event loop pings it. */
Test(ops, sd_notify_watchdog_while_serving)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char msg[256];
	int fd, watchdogs = 0;

	cr_assert_eq(h_daemon_prepare(&d), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", d.dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	setenv("WATCHDOG_USEC", "200000", 1);
	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	for (int i = 0; i < 10 && watchdogs < 3; i++) {
		cr_assert(notify_recv(fd, msg, sizeof(msg)), "no notification came");
		watchdogs += strcmp(msg, "WATCHDOG=1") == 0;
	}
	cr_expect_geq(watchdogs, 3, "the loop sent %d WATCHDOG=1", watchdogs);
	cr_expect_eq(h_daemon_stop(&d, SIGTERM), 0);
	close(fd);
	unlink(sa.sun_path);
	rmdir(d.dir);
}
