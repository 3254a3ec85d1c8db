/*
 * config.c — cudaepd's configuration keys, their defaults, and the three
 * layers that set them: defaults < INI file < command-line flags (see
 * config.h). One table drives all of it, --help included, so a key cannot
 * be documented with one default and applied with another.
 */
#include "daemon/config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"

enum key_type {
	KEY_PATH,
	KEY_LEVEL,
	KEY_COUNT,
	KEY_MAX,     /* a count where 0 means none */
	KEY_SIZE,
	KEY_LIMIT,   /* a size where 0 means none */
	KEY_MSEC,    /* milliseconds, 0 allowed */
	KEY_RUNS,    /* runs in flight: 0 (no bound) up to the records' count */
	KEY_MODE,
	KEY_GROUP,
	KEY_BACKEND,
	KEY_ORDINAL,
	KEY_DIR,
	KEY_PACK,    /* an absolute file, "" (the default) or "none" */
	KEY_USEC,    /* microseconds, 0 to CONFIG_BATCH_WINDOW_MAX_US */
	KEY_BATCH,   /* a count, 1 to CONFIG_BATCH_MAX */
};

struct config_key {
	const char *name;    /* INI key; the flag is --name with dashes */
	enum key_type type;
	size_t field;        /* offsetof the value in struct config */
	size_t gid_field;    /* KEY_GROUP: offsetof the resolved gid */
	const char *def;     /* default, as a user would write it */
	const char *help;
};

#define FIELD(f) offsetof(struct config, f)

static const struct config_key config_keys[] = {
	{ "socket", KEY_PATH, FIELD(socket), 0, "",
	  "path of the listening socket; empty: $CUDAEP_SOCKET, else "
	  "/run/cudaep/cudaep.sock under systemd or as root, else "
	  "$XDG_RUNTIME_DIR/cudaep.sock" },
	{ "log_level", KEY_LEVEL, FIELD(log_level), 0, "info",
	  "most verbose messages logged: err, warning, notice, info or debug" },
	{ "max_connections", KEY_COUNT, FIELD(max_connections), 0, "1024",
	  "connections served at once; one more is answered with an error "
	  "and closed" },
	{ "max_regions_per_client", KEY_COUNT, FIELD(max_regions_per_client),
	  0, "1024", "shared-memory regions one connection may hold" },
	{ "region_bytes_per_client", KEY_SIZE, FIELD(region_bytes_per_client),
	  0, "16G", "bytes of regions one connection may hold (suffixes K, M, "
	  "G, T are powers of 1024)" },
	{ "region_bytes_total", KEY_SIZE, FIELD(region_bytes_total), 0, "64G",
	  "bytes of regions all connections together may hold" },
	{ "memory_limit", KEY_LIMIT, FIELD(memory_limit), 0, "0",
	  "bytes of device memory all sessions together may use; 0: the "
	  "device's memory (no limit on the host backend)" },
	{ "client_memory_limit", KEY_LIMIT, FIELD(client_memory_limit), 0, "0",
	  "bytes of device memory one connection's sessions may use; 0: no "
	  "limit (shared weights are not counted here)" },
	{ "uid_max_connections", KEY_MAX, FIELD(uid_max_connections), 0, "0",
	  "connections the processes of one uid may hold at once; one more "
	  "is answered with an error and closed; 0: no limit" },
	{ "uid_max_sessions", KEY_MAX, FIELD(uid_max_sessions), 0, "0",
	  "sessions all connections of one uid may hold together; 0: no "
	  "limit" },
	{ "uid_max_regions", KEY_MAX, FIELD(uid_max_regions), 0, "0",
	  "shared-memory regions all connections of one uid may hold "
	  "together; 0: no limit" },
	{ "uid_max_bytes", KEY_LIMIT, FIELD(uid_max_bytes), 0, "0",
	  "bytes of device and pinned memory the sessions of all connections "
	  "of one uid may use together; 0: no limit (shared weights are not "
	  "counted here)" },
	{ "max_runs_in_flight", KEY_RUNS, FIELD(max_runs_in_flight), 0, "8",
	  "runs with a fence of one connection submitted to the device at "
	  "once; more are accepted and wait in the daemon, and waiting runs "
	  "start by session priority (high, normal, low), the connections of "
	  "a priority taking turns, so that one flooding client cannot queue "
	  "far ahead of the others; at most 128; 0: no bound but that 128" },
	{ "pool_bytes", KEY_SIZE, FIELD(pool_bytes), 0, "256M",
	  "bytes of unmapped device memory the arena keeps to map again "
	  "without creating it anew (creating a 2 MiB granule costs about "
	  "55 us on an H200); more than a model's working set makes "
	  "load/unload churn create nothing" },
	{ "trim_idle_ms", KEY_MSEC, FIELD(trim_idle_ms), 0, "10000",
	  "milliseconds a wholly free granule of device memory stays mapped "
	  "before it is unmapped; 0: only on `cudaepctl trim`" },
	{ "socket_mode", KEY_MODE, FIELD(socket_mode), 0, "0660",
	  "permission bits of the socket file, in octal" },
	{ "socket_group", KEY_GROUP, FIELD(socket_group), FIELD(socket_gid), "",
	  "group (name or number) given the socket file; empty: the "
	  "daemon's own" },
	{ "admin_group", KEY_GROUP, FIELD(admin_group), FIELD(admin_gid), "",
	  "members see every client's connections, sessions and memory, as "
	  "root and the daemon's own user do; empty: no such group" },
	{ "backend", KEY_BACKEND, FIELD(backend), 0, "auto",
	  "where sessions run: cuda, host (the CPU), or auto: cuda when the "
	  "driver, NVRTC and the device can be used, else host (the log says "
	  "why); with cuda the daemon does not start without them. "
	  "host-async: the CPU with a GPU's timing (runs complete after "
	  "their replies), for testing clients" },
	{ "device", KEY_ORDINAL, FIELD(device), 0, "0",
	  "the CUDA device to use, by ordinal as the driver numbers them" },
	{ "cache_dir", KEY_DIR, FIELD(cache_dir), 0, "",
	  "directory of compiled kernels, kept across restarts; empty: "
	  "/var/cache/cudaep for root, else $XDG_CACHE_HOME/cudaep or "
	  "~/.cache/cudaep" },
	{ "kernel_pack", KEY_PACK, FIELD(kernel_pack), 0, "",
	  "the prebuilt device kernels `make` compiles for every architecture "
	  "and `make install` installs; empty: lib/cudaep/kernels.pack beside "
	  "the daemon's bin/ directory; none: compile every kernel on first "
	  "use; must belong to root or the daemon's user and be writable by "
	  "no one else, or it is not used" },
	{ "batch_window_us", KEY_USEC, FIELD(batch_window_us), 0, "100",
	  "microseconds a run of a batching session (SessionOptions.batching) "
	  "waits for runs of other batching sessions of the same model, "
	  "precision and priority to be merged with it; 0: merges only runs "
	  "already waiting; at most 1000000" },
	{ "batch_max", KEY_BATCH, FIELD(batch_max), 0, "32",
	  "most runs, and most rows (their dimension 0 summed), of one merged "
	  "batch; a full batch goes at once; 1 to 1024" },
};

#define N_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

static const char *const key_metavar[] = {
	[KEY_PATH] = "PATH", [KEY_LEVEL] = "LEVEL", [KEY_COUNT] = "N",
	[KEY_MAX] = "N", [KEY_RUNS] = "N",
	[KEY_SIZE] = "SIZE", [KEY_LIMIT] = "SIZE", [KEY_MSEC] = "MS",
	[KEY_MODE] = "MODE", [KEY_GROUP] = "GROUP",
	[KEY_BACKEND] = "NAME", [KEY_ORDINAL] = "N", [KEY_DIR] = "DIR",
	[KEY_PACK] = "FILE", [KEY_USEC] = "US", [KEY_BATCH] = "N",
};

static int say(char *err, size_t errlen, const char *fmt, ...)
	CEP_PRINTF(3, 4);

static int say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return CEP_EINVAL;
}

static const struct config_key *key_find(const char *name)
{
	size_t i;

	for (i = 0; i < N_KEYS; i++)
		if (strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	return NULL;
}

/* ---------------------------------------------------------------- values */

int config_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return CEP_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return CEP_ERANGE;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end != '\0')
		return CEP_EINVAL;
	if (shift > 0 && v > (UINT64_MAX >> shift))
		return CEP_ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_count(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return CEP_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno == ERANGE || v == 0 || v > UINT32_MAX)
		return CEP_EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_mode(const char *s, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '7')
		return CEP_EINVAL;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (*end != '\0' || errno == ERANGE || v > 0777)
		return CEP_EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_backend(const char *s, int *out)
{
	if (strcmp(s, "auto") == 0)
		*out = CONFIG_BACKEND_AUTO;
	else if (strcmp(s, "cuda") == 0)
		*out = CONFIG_BACKEND_CUDA;
	else if (strcmp(s, "host") == 0)
		*out = CONFIG_BACKEND_HOST;
	else if (strcmp(s, "host-async") == 0)
		*out = CONFIG_BACKEND_HOST_ASYNC;
	else
		return CEP_EINVAL;
	return 0;
}

/* A number from 0 up (a device ordinal). */
static int parse_ordinal(const char *s, int *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return CEP_EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || errno == ERANGE || v > 4096)
		return CEP_EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_group(const char *s, int64_t *gid)
{
	struct group grp, *found = NULL;
	unsigned long long v;
	char *buf, *end;
	size_t len = 4096;
	int ret;

	if (s[0] == '\0') {
		*gid = -1;
		return 0;
	}
	if (isdigit((unsigned char)s[0])) {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (*end != '\0' || errno == ERANGE || v >= UINT32_MAX)
			return CEP_EINVAL;
		*gid = (int64_t)v;
		return 0;
	}
	for (;;) {
		buf = malloc(len);
		if (buf == NULL)
			return CEP_ENOMEM;
		ret = getgrnam_r(s, &grp, buf, len, &found);
		if (ret != ERANGE || len >= (1u << 20))
			break;
		free(buf);
		len *= 4;
	}
	if (ret == 0 && found != NULL)
		*gid = (int64_t)found->gr_gid;
	free(buf);
	return ret == 0 && found != NULL ? 0 : CEP_EINVAL;
}

static int key_apply(struct config *cfg, const struct config_key *k,
		     const char *value, char *err, size_t errlen)
{
	char *field = (char *)cfg + k->field;
	uint64_t size;
	uint32_t u32;
	int64_t gid;
	int level, ret;

	switch (k->type) {
	case KEY_PATH:
		if (strlen(value) >= CONFIG_PATH_MAX)
			return say(err, errlen, "'%s' is too long for a socket "
				   "path (at most %d bytes)", value,
				   CONFIG_PATH_MAX - 1);
		strcpy(field, value);
		return 0;
	case KEY_LEVEL:
		if (log_level_parse(value, &level) != 0)
			return say(err, errlen, "'%s' is not a log level (err, "
				   "warning, notice, info or debug)", value);
		*(int *)(void *)field = level;
		return 0;
	case KEY_COUNT:
		if (parse_count(value, &u32) != 0)
			return say(err, errlen,
				   "'%s' is not a positive integer", value);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_MAX:
	case KEY_MSEC:
		/* "0" means no limit, or turns the timer off, which
		 * parse_count() refuses. */
		if (strcmp(value, "0") == 0)
			u32 = 0;
		else if (parse_count(value, &u32) != 0)
			return say(err, errlen, k->type == KEY_MAX ?
				   "'%s' is not a number (0 for no limit)" :
				   "'%s' is not a number of milliseconds", value);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_USEC:
		if (strcmp(value, "0") == 0)
			u32 = 0;
		else if (parse_count(value, &u32) != 0 || u32 > CONFIG_BATCH_WINDOW_MAX_US)
			return say(err, errlen, "'%s' is not a number of microseconds from 0 "
				   "to %d", value, CONFIG_BATCH_WINDOW_MAX_US);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_BATCH:
		if (parse_count(value, &u32) != 0 || u32 > CONFIG_BATCH_MAX)
			return say(err, errlen, "'%s' is not a number from 1 to %d", value,
				   CONFIG_BATCH_MAX);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_RUNS:
		if (strcmp(value, "0") == 0)
			u32 = 0;
		else if (parse_count(value, &u32) != 0)
			return say(err, errlen, "'%s' is not a number of runs (0 for "
				   "no bound)", value);
		else if (u32 > CONFIG_RUNS_IN_FLIGHT_MAX)
			return say(err, errlen, "'%s' is more than %d, the runs a "
				   "connection may have in flight at all", value,
				   CONFIG_RUNS_IN_FLIGHT_MAX);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_SIZE:
	case KEY_LIMIT:
		ret = config_parse_size(value, &size);
		if (ret == CEP_ERANGE)
			return say(err, errlen, "'%s' is too large", value);
		if (ret != 0)
			return say(err, errlen, "'%s' is not a size", value);
		if (size == 0 && k->type == KEY_SIZE)
			return say(err, errlen, "'%s' is not a positive size",
				   value);
		*(uint64_t *)(void *)field = size;
		return 0;
	case KEY_MODE:
		if (parse_mode(value, &u32) != 0)
			return say(err, errlen, "'%s' is not an octal file "
				   "mode such as 0660", value);
		*(uint32_t *)(void *)field = u32;
		return 0;
	case KEY_GROUP:
		if (strlen(value) >= CONFIG_GROUP_MAX)
			return say(err, errlen, "'%s' is too long for a group",
				   value);
		ret = parse_group(value, &gid);
		if (ret == CEP_ENOMEM)
			return say(err, errlen, "out of memory looking up '%s'",
				   value);
		if (ret != 0)
			return say(err, errlen, "'%s' is not a group", value);
		strcpy(field, value);
		*(int64_t *)(void *)((char *)cfg + k->gid_field) = gid;
		return 0;
	case KEY_BACKEND:
		if (parse_backend(value, (int *)(void *)field) != 0)
			return say(err, errlen, "'%s' is not a backend (auto, cuda "
				   "or host)", value);
		return 0;
	case KEY_ORDINAL:
		if (parse_ordinal(value, (int *)(void *)field) != 0)
			return say(err, errlen, "'%s' is not a device number "
				   "(0, 1, ...)", value);
		return 0;
	case KEY_PACK:
		if (strcmp(value, "none") == 0) {
			strcpy(field, value);
			return 0;
		}
		/* Else a path, checked as a directory is. */
		/* fall through */
	case KEY_DIR:
		if (value[0] != '\0' && value[0] != '/')
			return say(err, errlen, "'%s' is not an absolute path",
				   value);
		if (strlen(value) >= CONFIG_DIR_MAX)
			return say(err, errlen, "'%.40s...' is too long for a "
				   "directory (at most %d bytes)", value,
				   CONFIG_DIR_MAX - 1);
		strcpy(field, value);
		return 0;
	}
	return say(err, errlen, "internal error: key type %d", (int)k->type);
}

int config_set(struct config *cfg, const char *key, const char *value,
	       char *err, size_t errlen)
{
	const struct config_key *k = key_find(key);

	if (k == NULL)
		return say(err, errlen, "unknown key '%s'", key);
	return key_apply(cfg, k, value, err, errlen);
}

void config_init(struct config *cfg)
{
	char err[256];
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->socket_gid = -1;
	cfg->admin_gid = -1;
	/* The defaults are strings of the table; applying them the way a file
	 * would keeps --help and the example config honest. None can fail. */
	for (i = 0; i < N_KEYS; i++)
		key_apply(cfg, &config_keys[i], config_keys[i].def, err,
			  sizeof(err));
}

/* ------------------------------------------------------------------ file */

struct ini_state {
	struct config *cfg;
	FILE *f;
	int line;        /* lines read so far */
	int err_line;    /* line of the first error of ours; 0 = none */
	char err[512];   /* its message, without file and line */
};

static char *ini_read_line(char *str, int num, void *stream)
{
	struct ini_state *st = stream;
	char *r = fgets(str, num, st->f);

	/* Counted here because the distribution's inih hands the handler no
	 * line number; a line longer than inih's buffer counts once per
	 * chunk, which only matters for lines that are errors anyway. */
	if (r != NULL)
		st->line++;
	return r;
}

static int ini_on_key(void *user, const char *section, const char *name,
		      const char *value)
{
	struct ini_state *st = user;
	char msg[400];

	if (st->err_line != 0)
		return 0;
	if (strcmp(section, "daemon") != 0) {
		if (section[0] == '\0')
			snprintf(st->err, sizeof(st->err), "%s: keys belong in "
				 "a [daemon] section", name);
		else
			snprintf(st->err, sizeof(st->err), "unknown section "
				 "[%s]", section);
		st->err_line = st->line;
		return 0;
	}
	if (key_find(name) == NULL) {
		snprintf(st->err, sizeof(st->err), "unknown key '%s'", name);
		st->err_line = st->line;
		return 0;
	}
	if (config_set(st->cfg, name, value, msg, sizeof(msg)) != 0) {
		snprintf(st->err, sizeof(st->err), "%s: %s", name, msg);
		st->err_line = st->line;
		return 0;
	}
	return 1;
}

int config_load_stream(struct config *cfg, FILE *f, const char *name,
		       char *err, size_t errlen)
{
	struct ini_state st = { .cfg = cfg, .f = f };
	int line;

	line = ini_parse_stream(ini_read_line, &st, ini_on_key, &st);
	if (ferror(st.f))
		return say(err, errlen, "%s: cannot read: %s", name,
			   strerror(errno));
	if (line == -2)
		return say(err, errlen, "%s: out of memory", name);
	if (line != 0) {
		/* inih reports the first bad line, ours or a syntax error it
		 * found on its own, whichever came first. */
		if (st.err_line != 0 && st.err_line <= line)
			return say(err, errlen, "%s:%d: %s", name, st.err_line,
				   st.err);
		return say(err, errlen, "%s:%d: syntax error (expected "
			   "[daemon] or key = value)", name, line);
	}
	return 0;
}

int config_load_file(struct config *cfg, const char *path, char *err,
		     size_t errlen)
{
	struct stat sb;
	FILE *f;
	int ret;

	if (strlen(path) >= CONFIG_FILE_MAX)
		return say(err, errlen, "%s: path too long", path);
	/* Looked at before it is opened: opening a FIFO would wait for a
	 * writer, and a device such as /dev/zero never ends a line. */
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return say(err, errlen, "%s: cannot read: %s", path, strerror(EISDIR));
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return say(err, errlen, "%s: cannot read: not a regular file", path);
	f = fopen(path, "re");
	if (f == NULL)
		return say(err, errlen, "%s: cannot read: %s", path,
			   strerror(errno));
	ret = config_load_stream(cfg, f, path, err, errlen);
	if (ret == 0)
		strcpy(cfg->file, path);
	fclose(f);
	return ret;
}

/* ----------------------------------------------------------- command line */

enum flag_kind {
	FLAG_KEY,
	FLAG_CONFIG,
	FLAG_HELP,
	FLAG_VERSION,
};

struct flag {
	enum flag_kind kind;
	char key[64];        /* FLAG_KEY: the INI key */
	const char *value;   /* FLAG_KEY, FLAG_CONFIG */
};

/* Reads the flag at argv[*i] (and its value, from "--k=v" or the next
 * argument) and moves *i past it. */
static int flag_next(int argc, char **argv, int *i, struct flag *f,
		     char *err, size_t errlen)
{
	const char *arg = argv[*i], *eq;
	size_t n, k;

	(*i)++;
	memset(f, 0, sizeof(*f));
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
		f->kind = FLAG_HELP;
		return 0;
	}
	if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
		f->kind = FLAG_VERSION;
		return 0;
	}
	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
		return say(err, errlen, "unexpected argument '%s' (see --help)",
			   arg);
	eq = strchr(arg, '=');
	n = eq != NULL ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	if (n >= sizeof(f->key))
		return say(err, errlen, "unknown option '%s' (see --help)",
			   arg);
	for (k = 0; k < n; k++)
		f->key[k] = arg[2 + k] == '-' ? '_' : arg[2 + k];
	f->key[n] = '\0';
	if (strcmp(f->key, "config") == 0)
		f->kind = FLAG_CONFIG;
	else if (key_find(f->key) != NULL)
		f->kind = FLAG_KEY;
	else
		return say(err, errlen, "unknown option '%.*s' (see --help)",
			   (int)(n + 2), arg);
	if (eq != NULL) {
		f->value = eq + 1;
	} else if (*i < argc) {
		f->value = argv[(*i)++];
	} else {
		return say(err, errlen, "%s needs a value", arg);
	}
	return 0;
}

static void flag_name(char *buf, size_t len, const char *key)
{
	size_t i;

	snprintf(buf, len, "--%s", key);
	for (i = 2; buf[i] != '\0'; i++)
		if (buf[i] == '_')
			buf[i] = '-';
}

int config_load(struct config *cfg, int argc, char **argv, FILE *out,
		FILE *errf)
{
	const char *file = NULL;
	char err[768], msg[512], name[80];
	struct flag f;
	int i;

	config_init(cfg);
	for (i = 1; i < argc;) {
		if (flag_next(argc, argv, &i, &f, err, sizeof(err)) != 0)
			goto usage;
		if (f.kind == FLAG_HELP) {
			config_print_help(out);
			return 0;
		}
		if (f.kind == FLAG_VERSION) {
			fprintf(out, "cudaepd %s\n", CEP_VERSION);
			return 0;
		}
		if (f.kind == FLAG_CONFIG)
			file = f.value;
	}
	if (file != NULL && config_load_file(cfg, file, err, sizeof(err)) != 0)
		goto usage;
	for (i = 1; i < argc;) {
		flag_next(argc, argv, &i, &f, err, sizeof(err));
		if (f.kind != FLAG_KEY)
			continue;
		if (config_set(cfg, f.key, f.value, msg, sizeof(msg)) != 0) {
			flag_name(name, sizeof(name), f.key);
			snprintf(err, sizeof(err), "%s: %s", name, msg);
			goto usage;
		}
	}
	return CONFIG_RUN;
usage:
	fprintf(errf, "cudaepd: %s\n", err);
	return CONFIG_EXIT_USAGE;
}

/* Prints text indented by indent columns, wrapped at 76. */
static void help_wrap(FILE *f, int indent, const char *text)
{
	const char *p = text, *word;
	int col = indent, n;

	fprintf(f, "%*s", indent, "");
	while (*p != '\0') {
		word = p;
		while (*p != '\0' && *p != ' ')
			p++;
		n = (int)(p - word);
		if (col > indent && col + 1 + n > 76) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", n, word);
		col += n;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

void config_print_help(FILE *f)
{
	const struct config_key *k;
	char name[80];
	size_t i;

	fprintf(f,
		"Usage: cudaepd [--config FILE] [--KEY VALUE]...\n"
		"\n"
		"cudaepd serves ONNX inference on one GPU to the processes of\n"
		"this machine over a Unix socket.\n"
		"\n"
		"  --config FILE\n");
	help_wrap(f, 6, "read the [daemon] section of an INI file; its keys "
		  "are the flags below with underscores (log_level = debug)");
	for (i = 0; i < N_KEYS; i++) {
		k = &config_keys[i];
		flag_name(name, sizeof(name), k->name);
		fprintf(f, "  %s %s\n", name, key_metavar[k->type]);
		help_wrap(f, 6, k->help);
		fprintf(f, "      default: %s\n",
			k->def[0] != '\0' ? k->def : "(empty)");
	}
	fprintf(f,
		"  -h, --help\n      print this help and exit\n"
		"  -V, --version\n      print the version and exit\n"
		"\n"
		"Flags override the file, which overrides the defaults. A bad\n"
		"value is an error: cudaepd then exits with status %d.\n",
		CONFIG_EXIT_USAGE);
}
