/*
 * log.h — cudaepd's log: one line per event on stderr, each prefixed with
 * its syslog priority as "<N>" so that journald files it at the right level
 * when the daemon runs under systemd. Lines below the configured level are
 * dropped. The level is process-wide: there is one stderr.
 */
#ifndef CEPD_LOG_H
#define CEPD_LOG_H

#include <syslog.h>

#include "common/error.h"

/* Sets the most verbose priority that is written: LOG_ERR (3) through
 * LOG_DEBUG (7) are the configurable levels, and tests may go lower to
 * silence even errors; values outside LOG_EMERG..LOG_DEBUG are clamped.
 * The default is LOG_INFO. */
void log_level_set(int level);

/* The current level. */
int log_level_get(void);

/* Parses "err", "warning", "notice", "info" or "debug" into *level.
 * Returns 0, or CEP_EINVAL for any other name (*level is left alone). */
int log_level_parse(const char *name, int *level);

/* The name of a level as log_level_parse() reads it, "?" for others. */
const char *log_level_name(int level);

/* Writes "<priority>message\n" to stderr in one write(2) when priority is
 * at or above the current level. Lines longer than about 1 KiB are cut.
 * Never fails visibly: a log line that cannot be written is lost. */
void log_printf(int priority, const char *fmt, ...) CEP_PRINTF(2, 3);

#define log_err(...)     log_printf(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_printf(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  log_printf(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    log_printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...)   log_printf(LOG_DEBUG, __VA_ARGS__)

#endif
