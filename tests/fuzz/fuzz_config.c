/*
 * fuzz_config.c — libFuzzer target for cudaepd's configuration file
 * (daemon/config.c): the INI text an administrator writes, read over the
 * defaults, every key's value parsed and checked.
 *
 * The whole input is read as a file through config_load_stream(). When it
 * holds a NUL byte, the text before the first one is also the --config
 * file (a memfd) of a command line given to config_load(), and the
 * NUL-separated strings after it are the rest of that command line's
 * arguments (--config itself is left out: it would open any path). Each
 * flag "--key=value" is also set alone with config_set() on a copy.
 *
 * What must hold: no crash, leak or undefined behaviour; a success leaves
 * every field inside the range config.h documents; a failure is CEP_EINVAL
 * with one line naming the file (and the line); a failed config_set()
 * leaves the configuration as it was; config_load() with the file alone
 * agrees with config_load_stream() on the same text.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/log.h"
#include "daemon/config.h"
#include "tests/fuzz/fuzz_check.h"


#define MAX_ARGS 16
#define NAME     "fuzz.conf"

static int file_fd = -1;           /* the memfd of the --config file */
static char file_path[64];         /* /proc/self/fd/N */
static char config_arg[80];        /* --config=/proc/self/fd/N */
static FILE *null_out;             /* --help and --version go here */
static char err_text[2048];        /* what config_load() prints on errors */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_level_set(LOG_CRIT);
	file_fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	FUZZ_CHECK(file_fd >= 0);
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	snprintf(config_arg, sizeof(config_arg), "--config=%s", file_path);
	null_out = fopen("/dev/null", "we");
	FUZZ_CHECK(null_out != NULL);
	return 0;
}

/* A string field is terminated inside its array. */
#define TERMINATED(field) (strnlen((field), sizeof(field)) < sizeof(field))

/* Every field is one the daemon may be started with (config.h). */
static void config_check(const struct config *c)
{
	FUZZ_CHECK(TERMINATED(c->socket));
	FUZZ_CHECK(c->log_level >= LOG_ERR && c->log_level <= LOG_DEBUG);
	FUZZ_CHECK(c->max_connections >= 1);
	FUZZ_CHECK(c->max_regions_per_client >= 1);
	FUZZ_CHECK(c->region_bytes_per_client > 0);
	FUZZ_CHECK(c->region_bytes_total > 0);
	FUZZ_CHECK(c->pool_bytes > 0);
	FUZZ_CHECK(c->max_runs_in_flight <= CONFIG_RUNS_IN_FLIGHT_MAX);
	FUZZ_CHECK(c->socket_mode <= 0777);
	FUZZ_CHECK(TERMINATED(c->socket_group));
	FUZZ_CHECK((c->socket_group[0] == '\0') == (c->socket_gid == -1));
	FUZZ_CHECK(c->socket_gid >= -1 && c->socket_gid < UINT32_MAX);
	FUZZ_CHECK(TERMINATED(c->admin_group));
	FUZZ_CHECK((c->admin_group[0] == '\0') == (c->admin_gid == -1));
	FUZZ_CHECK(c->admin_gid >= -1 && c->admin_gid < UINT32_MAX);
	FUZZ_CHECK(c->backend >= CONFIG_BACKEND_AUTO &&
		   c->backend <= CONFIG_BACKEND_HOST_ASYNC);
	FUZZ_CHECK(c->device >= 0);
	FUZZ_CHECK(TERMINATED(c->cache_dir));
	FUZZ_CHECK(c->cache_dir[0] == '\0' || c->cache_dir[0] == '/');
	FUZZ_CHECK(c->batch_window_us <= CONFIG_BATCH_WINDOW_MAX_US);
	FUZZ_CHECK(c->batch_max >= 1 && c->batch_max <= CONFIG_BATCH_MAX);
	FUZZ_CHECK(TERMINATED(c->file));
}

/* An error message: one line, starting with the file's name and a colon. */
static void message_check(const char *msg, const char *name)
{
	size_t n = strlen(name);

	FUZZ_CHECK(strncmp(msg, name, n) == 0 && msg[n] == ':');
	FUZZ_CHECK(strchr(msg, '\n') == NULL);
}

/* Reads len bytes of text as the file; returns config_load_stream()'s
 * answer with *cfg and the message in err. */
static int stream_load(struct config *cfg, const uint8_t *text, size_t len,
		       char *err, size_t errlen)
{
	/* A copy of exactly len bytes, so that reading past them is seen. */
	char *buf = malloc(len ? len : 1);
	FILE *f;
	int ret;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, text, len);
	f = fmemopen(buf, len, "r");
	FUZZ_CHECK(f != NULL);
	config_init(cfg);
	err[0] = '\0';
	ret = config_load_stream(cfg, f, NAME, err, errlen);
	fclose(f);
	free(buf);
	if (ret == 0) {
		config_check(cfg);
		FUZZ_CHECK(cfg->file[0] == '\0');
	} else {
		FUZZ_CHECK(ret == CEP_EINVAL);
		message_check(err, NAME);
	}
	return ret;
}

/* The flag's key as config_set() takes it ("--max-connections=8" gives
 * "max_connections" and value "8"); false for other arguments. */
static bool flag_split(const char *arg, char *key, size_t len,
		       const char **value)
{
	const char *eq = strchr(arg, '=');
	size_t n, i;

	if (strncmp(arg, "--", 2) != 0 || eq == NULL)
		return false;
	n = (size_t)(eq - arg - 2);
	if (n >= len)
		return false;
	for (i = 0; i < n; i++)
		key[i] = arg[2 + i] == '-' ? '_' : arg[2 + i];
	key[n] = '\0';
	*value = eq + 1;
	return true;
}

/* Whether config_load() would take arg (or the argument after it) as the
 * --config file's path. */
static bool is_config_flag(const char *arg)
{
	return strcmp(arg, "--config") == 0 ||
	       strncmp(arg, "--config=", 9) == 0;
}

/* The command line: text is the --config file, the NUL-separated strings
 * of args (len bytes) the other arguments. */
static void command_load(const uint8_t *text, size_t text_len,
			 const char *args, size_t len)
{
	char *argv[MAX_ARGS + 3], key[64], msg[768], stream_err[768];
	struct config cfg, base, tmp;
	const char *value;
	char *copy, *p, *end;
	int argc = 0, ret, stream_ret, i;
	FILE *errf;

	/* The last string ends with the input, NUL or not. */
	copy = malloc(len + 1);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, args, len);
	copy[len] = '\0';
	p = copy;
	end = copy + len;
	argv[argc++] = (char *)"cudaepd";
	argv[argc++] = config_arg;
	while (p < end && argc < MAX_ARGS + 2) {
		if (!is_config_flag(p))
			argv[argc++] = p;
		p += strlen(p) + 1;
	}
	argv[argc] = NULL;

	FUZZ_CHECK(ftruncate(file_fd, 0) == 0);
	FUZZ_CHECK(pwrite(file_fd, text, text_len, 0) == (ssize_t)text_len);
	errf = fmemopen(err_text, sizeof(err_text), "w");
	FUZZ_CHECK(errf != NULL);
	ret = config_load(&cfg, argc, argv, null_out, errf);
	fclose(errf);
	if (ret == CONFIG_RUN) {
		config_check(&cfg);
		FUZZ_CHECK(strcmp(cfg.file, file_path) == 0);
	} else if (ret == CONFIG_EXIT_USAGE) {
		/* One line but for what an argument itself holds. */
		FUZZ_CHECK(strncmp(err_text, "cudaepd: ", 9) == 0);
		FUZZ_CHECK(err_text[strlen(err_text) - 1] == '\n');
	} else {
		FUZZ_CHECK(ret == 0); /* --help or --version */
	}

	/* The file alone: the same answer as the stream gives, the same
	 * configuration but for the file's name, the same message after it. */
	stream_ret = stream_load(&base, text, text_len, stream_err,
				 sizeof(stream_err));
	if (argc == 2) {
		FUZZ_CHECK((ret == CONFIG_RUN) == (stream_ret == 0));
		if (ret == CONFIG_RUN) {
			memset(cfg.file, 0, sizeof(cfg.file));
			FUZZ_CHECK(memcmp(&cfg, &base, sizeof(cfg)) == 0);
		} else {
			size_t n = strlen("cudaepd: ") + strlen(file_path);

			FUZZ_CHECK(strncmp(err_text + n, stream_err + strlen(NAME),
					   strlen(stream_err) - strlen(NAME)) == 0);
		}
	}

	/* Each flag alone over the file's configuration: a failure changes
	 * nothing. */
	for (i = 2; stream_ret == 0 && i < argc; i++) {
		if (!flag_split(argv[i], key, sizeof(key), &value))
			continue;
		memcpy(&tmp, &base, sizeof(tmp));
		msg[0] = '\0';
		if (config_set(&tmp, key, value, msg, sizeof(msg)) == 0) {
			config_check(&tmp);
		} else {
			FUZZ_CHECK(msg[0] != '\0');
			FUZZ_CHECK(memcmp(&tmp, &base, sizeof(tmp)) == 0);
		}
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	struct config cfg;
	char err[768];

	stream_load(&cfg, data, size, err, sizeof(err));
	if (nul != NULL)
		command_load(data, (size_t)(nul - data), (const char *)nul + 1,
			     size - (size_t)(nul - data) - 1);
	return 0;
}
