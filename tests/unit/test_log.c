/*
 * test_log.c — the daemon's stderr log: the "<N>" syslog priority prefix
 * journald reads, one line per call, filtering by level, and the names of
 * the levels the configuration accepts.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "common/log.h"

/* Runs the logging calls with stderr redirected to a temp file and returns
 * what was written (static). */
static const char *captured(void (*fn)(void))
{
	static char text[4096];
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	cr_assert_not_null(f);
	cr_assert(saved >= 0);
	cr_assert(dup2(fileno(f), STDERR_FILENO) >= 0);
	fn();
	cr_assert(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void at_info(void)
{
	log_level_set(LOG_INFO);
	log_err("client %d refused", 3);
	log_notice("stopping");
	log_info("client 3 connected: pid %d", 1234);
	log_debug("not shown");
}

static void at_err(void)
{
	log_level_set(LOG_ERR);
	log_warning("not shown");
	log_err("shown");
}

static void long_line(void)
{
	char big[3000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_level_set(LOG_DEBUG);
	log_info("%s", big);
	log_info("after");
}

Test(log, prefixes_and_filters)
{
	cr_assert_str_eq(captured(at_info), "<3>client 3 refused\n"
			 "<5>stopping\n"
			 "<6>client 3 connected: pid 1234\n");
	cr_assert_str_eq(captured(at_err), "<3>shown\n");
}

Test(log, long_lines_are_cut_but_stay_one_line)
{
	const char *text = captured(long_line);
	const char *nl = strchr(text, '\n');

	cr_assert_not_null(nl);
	cr_assert_eq(strncmp(text, "<6>xxx", 6), 0);
	cr_assert_str_eq(nl + 1, "<6>after\n");
}

Test(log, level_names)
{
	int level = -1;

	cr_assert_eq(log_level_parse("debug", &level), 0);
	cr_assert_eq(level, LOG_DEBUG);
	cr_assert_eq(log_level_parse("err", &level), 0);
	cr_assert_eq(level, LOG_ERR);
	cr_assert_eq(log_level_parse("warning", &level), 0);
	cr_assert_eq(level, LOG_WARNING);
	cr_assert_eq(log_level_parse("verbose", &level), CEP_EINVAL);
	cr_assert_eq(level, LOG_WARNING);
	cr_assert_str_eq(log_level_name(LOG_NOTICE), "notice");
	cr_assert_str_eq(log_level_name(99), "?");
	log_level_set(42);
	cr_assert_eq(log_level_get(), LOG_DEBUG);
}
