/*
 * log.c — cudaepd's stderr log with syslog priority prefixes (see log.h).
 * Each line is formatted into a local buffer and written with one write(2),
 * so lines of concurrent writers (the libuv thread pool, later) never mix.
 */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/cudaep.h"

static int log_level = LOG_INFO;

static const char *const level_names[] = {
	[LOG_ERR] = "err",
	[LOG_WARNING] = "warning",
	[LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

void log_level_set(int level)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	log_level = level;
}

int log_level_get(void)
{
	return log_level;
}

int log_level_parse(const char *name, int *level)
{
	int i;

	for (i = LOG_ERR; i <= LOG_DEBUG; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	return CEP_EINVAL;
}

const char *log_level_name(int level)
{
	if (level < LOG_ERR || level > LOG_DEBUG)
		return "?";
	return level_names[level];
}

void log_printf(int priority, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int head, n;
	size_t len;

	if (priority > log_level)
		return;
	head = snprintf(line, sizeof(line), "<%d>", priority);
	va_start(ap, fmt);
	n = vsnprintf(line + head, sizeof(line) - head - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len = strlen(line);
	line[len++] = '\n';
	/* A short or failed write loses the line; there is nowhere to report
	 * that, and the daemon must not stall on a blocked stderr retrying. */
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}
