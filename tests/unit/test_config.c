/*
 * test_config.c — cudaepd's configuration: the defaults, the INI file, the
 * flags over the file, every class of error with its message, and the exit
 * status config_load() hands main() (2 for an error), tested without
 * exiting. Also checks that systemd/cudaepd.conf.example documents the
 * defaults the code applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "daemon/config.h"
#include "client/cudaep.h"

#define GIB (1024ull * 1024 * 1024)

static char tmpdir[] = "/tmp/cep-config-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(config, .init = setup, .fini = teardown);

/* Writes text to a file in the temp dir and returns its path (static). */
static const char *ini(const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cudaepd.conf", tmpdir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Runs config_load() on a NULL-terminated argument list; returns its
 * status, with what it printed in out and err (static buffers). */
static char out_text[8192], err_text[1024];

static int load(struct config *cfg, const char **args)
{
	const char *argv[32] = { "cudaepd" };
	FILE *out, *err;
	int argc = 1, ret;

	while (*args != NULL)
		argv[argc++] = *args++;
	memset(out_text, 0, sizeof(out_text));
	memset(err_text, 0, sizeof(err_text));
	out = fmemopen(out_text, sizeof(out_text) - 1, "w");
	err = fmemopen(err_text, sizeof(err_text) - 1, "w");
	ret = config_load(cfg, argc, (char **)argv, out, err);
	fclose(out);
	fclose(err);
	return ret;
}

#define LOAD(cfg, ...) load(cfg, (const char *[]){ __VA_ARGS__, NULL })

Test(config, defaults)
{
	struct config cfg;

	config_init(&cfg);
	cr_assert_str_eq(cfg.socket, "");
	cr_assert_eq(cfg.log_level, LOG_INFO);
	cr_assert_eq(cfg.max_connections, 1024);
	cr_assert_eq(cfg.max_regions_per_client, 1024);
	cr_assert_eq(cfg.region_bytes_per_client, 16 * GIB);
	cr_assert_eq(cfg.region_bytes_total, 64 * GIB);
	cr_assert_eq(cfg.socket_mode, 0660);
	cr_assert_eq(cfg.socket_gid, -1);
	cr_assert_eq(cfg.admin_gid, -1);
	cr_assert_str_eq(cfg.file, "");
}

Test(config, sizes)
{
	uint64_t v;

	cr_assert_eq(config_parse_size("0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(config_parse_size("512", &v), 0);
	cr_assert_eq(v, 512);
	cr_assert_eq(config_parse_size("4K", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(config_parse_size("3m", &v), 0);
	cr_assert_eq(v, 3 << 20);
	cr_assert_eq(config_parse_size("16G", &v), 0);
	cr_assert_eq(v, 16 * GIB);
	cr_assert_eq(config_parse_size("2T", &v), 0);
	cr_assert_eq(v, 2048 * GIB);
	cr_assert_eq(config_parse_size("16777215T", &v), 0);
	cr_assert_eq(config_parse_size("16777216T", &v), CEP_ERANGE);
	cr_assert_eq(config_parse_size("99999999999999999999", &v),
		     CEP_ERANGE);
	cr_assert_eq(config_parse_size("lots", &v), CEP_EINVAL);
	cr_assert_eq(config_parse_size("", &v), CEP_EINVAL);
	cr_assert_eq(config_parse_size("-1", &v), CEP_EINVAL);
	cr_assert_eq(config_parse_size(" 1", &v), CEP_EINVAL);
	cr_assert_eq(config_parse_size("1KB", &v), CEP_EINVAL);
	cr_assert_eq(config_parse_size("1X", &v), CEP_EINVAL);
}

Test(config, ini_file_sets_every_key)
{
	struct config cfg;
	char err[256] = "";

	config_init(&cfg);
	cr_assert_eq(config_load_file(&cfg, ini(
		"; a comment\n"
		"# another\n"
		"[daemon]\n"
		"socket = /tmp/some.sock\n"
		"log_level = debug\n"
		"max_connections = 7\n"
		"max_regions_per_client = 9\n"
		"region_bytes_per_client = 1M\n"
		"region_bytes_total = 2G\n"
		"socket_mode = 0600\n"
		"socket_group = 0\n"
		"admin_group = root\n"), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(cfg.socket, "/tmp/some.sock");
	cr_assert_eq(cfg.log_level, LOG_DEBUG);
	cr_assert_eq(cfg.max_connections, 7);
	cr_assert_eq(cfg.max_regions_per_client, 9);
	cr_assert_eq(cfg.region_bytes_per_client, 1 << 20);
	cr_assert_eq(cfg.region_bytes_total, 2 * GIB);
	cr_assert_eq(cfg.socket_mode, 0600);
	cr_assert_eq(cfg.socket_gid, 0);
	cr_assert_str_eq(cfg.admin_group, "root");
	cr_assert_eq(cfg.admin_gid, 0);
}

Test(config, backend_device_and_cache_dir)
{
	struct config cfg;
	char err[256] = "";

	config_init(&cfg);
	cr_assert_eq(cfg.backend, CONFIG_BACKEND_AUTO);
	cr_assert_eq(cfg.device, 0);
	cr_assert_str_eq(cfg.cache_dir, "");
	cr_assert_eq(LOAD(&cfg, "--backend", "host", "--device=3", "--cache-dir",
			  "/var/tmp/k"), CONFIG_RUN, "%s", err_text);
	cr_assert_eq(cfg.backend, CONFIG_BACKEND_HOST);
	cr_assert_eq(cfg.device, 3);
	cr_assert_str_eq(cfg.cache_dir, "/var/tmp/k");
	cr_assert_eq(config_set(&cfg, "backend", "cuda", err, sizeof(err)), 0);
	cr_assert_eq(cfg.backend, CONFIG_BACKEND_CUDA);
	cr_assert_eq(config_set(&cfg, "backend", "gpu", err, sizeof(err)), CEP_EINVAL);
	cr_assert_str_eq(err, "'gpu' is not a backend (auto, cuda or host)");
	cr_assert_eq(cfg.backend, CONFIG_BACKEND_CUDA);
	cr_assert_eq(config_set(&cfg, "device", "-1", err, sizeof(err)), CEP_EINVAL);
	cr_assert_str_eq(err, "'-1' is not a device number (0, 1, ...)");
	cr_assert_eq(config_set(&cfg, "cache_dir", "rel/dir", err, sizeof(err)), CEP_EINVAL);
	cr_assert_str_eq(err, "'rel/dir' is not an absolute path");
	cr_assert_str_eq(cfg.cache_dir, "/var/tmp/k");
}

Test(config, flags_override_the_file)
{
	struct config cfg;
	const char *path = ini("[daemon]\nlog_level = debug\n"
			       "max_connections = 7\nsocket = /tmp/a.sock\n");

	cr_assert_eq(LOAD(&cfg, "--max-connections", "9", "--config", path,
			  "--socket=/tmp/b.sock"), CONFIG_RUN, "%s", err_text);
	cr_assert_eq(cfg.max_connections, 9);
	cr_assert_str_eq(cfg.socket, "/tmp/b.sock");
	cr_assert_eq(cfg.log_level, LOG_DEBUG);
	cr_assert_str_eq(cfg.file, path);
	/* Underscores work in flags too. */
	cr_assert_eq(LOAD(&cfg, "--region_bytes_total", "1T"), CONFIG_RUN);
	cr_assert_eq(cfg.region_bytes_total, 1024 * GIB);
	/* The last of a repeated flag wins. */
	cr_assert_eq(LOAD(&cfg, "--log-level", "err", "--log-level", "notice"),
		     CONFIG_RUN);
	cr_assert_eq(cfg.log_level, LOG_NOTICE);
}

Test(config, no_arguments_run_with_defaults)
{
	struct config cfg;

	cr_assert_eq(load(&cfg, (const char *[]){ NULL }), CONFIG_RUN);
	cr_assert_eq(cfg.max_connections, 1024);
	cr_assert_str_eq(err_text, "");
}

Test(config, help_and_version_exit_0)
{
	struct config cfg;

	cr_assert_eq(LOAD(&cfg, "--help"), 0);
	cr_assert_not_null(strstr(out_text, "--region-bytes-total SIZE"));
	cr_assert_not_null(strstr(out_text, "default: 64G"));
	cr_assert_not_null(strstr(out_text, "--admin-group GROUP"));
	cr_assert_not_null(strstr(out_text, "--config FILE"));
	cr_assert_eq(LOAD(&cfg, "--log-level", "loud", "-h"), 0);
	cr_assert_eq(LOAD(&cfg, "--version"), 0);
	cr_assert_str_eq(out_text, "cudaepd " CEP_VERSION "\n");
}

/* Each class of error: status 2 and a message naming the culprit. */
static void expect_usage(int ret, const char *want)
{
	cr_assert_eq(ret, CONFIG_EXIT_USAGE, "status %d, stderr '%s'", ret,
		     err_text);
	cr_assert_not_null(strstr(err_text, want), "stderr '%s' lacks '%s'",
			   err_text, want);
	cr_assert_eq(strncmp(err_text, "cudaepd: ", 9), 0);
}

Test(config, flag_errors_exit_2)
{
	struct config cfg;

	expect_usage(LOAD(&cfg, "--region-bytes-total", "lots"),
		     "cudaepd: --region-bytes-total: 'lots' is not a size\n");
	expect_usage(LOAD(&cfg, "--region-bytes-total=0"),
		     "'0' is not a positive size");
	expect_usage(LOAD(&cfg, "--region-bytes-total=99999999T"),
		     "is too large");
	expect_usage(LOAD(&cfg, "--max-connections", "0"),
		     "--max-connections: '0' is not a positive integer");
	expect_usage(LOAD(&cfg, "--max-regions-per-client", "-3"),
		     "is not a positive integer");
	expect_usage(LOAD(&cfg, "--log-level", "loud"),
		     "--log-level: 'loud' is not a log level");
	expect_usage(LOAD(&cfg, "--socket-mode", "0999"),
		     "'0999' is not an octal file mode");
	expect_usage(LOAD(&cfg, "--socket-mode", "1777"), "octal file mode");
	expect_usage(LOAD(&cfg, "--socket-group", "no-such-group-cep"),
		     "--socket-group: 'no-such-group-cep' is not a group");
	expect_usage(LOAD(&cfg, "--admin-group", "no-such-group-cep"),
		     "is not a group");
	expect_usage(LOAD(&cfg, "--socket", "/tmp/0123456789012345678901234567"
			  "890123456789012345678901234567890123456789012345678"
			  "9012345678901234567890123456789.sock"),
		     "too long for a socket path");
	expect_usage(LOAD(&cfg, "--frobnicate", "1"),
		     "unknown option '--frobnicate'");
	expect_usage(LOAD(&cfg, "--socket"), "--socket needs a value");
	expect_usage(LOAD(&cfg, "stray"), "unexpected argument 'stray'");
	expect_usage(LOAD(&cfg, "--config"), "--config needs a value");
	expect_usage(LOAD(&cfg, "--batch-window-us", "1000001"),
		     "--batch-window-us: '1000001' is not a number of microseconds from 0 "
		     "to 1000000");
	expect_usage(LOAD(&cfg, "--batch-window-us", "-5"), "is not a number of microseconds");
	expect_usage(LOAD(&cfg, "--batch-window-us", "100us"), "is not a number of microseconds");
	expect_usage(LOAD(&cfg, "--batch-max", "0"),
		     "--batch-max: '0' is not a number from 1 to 1024");
	expect_usage(LOAD(&cfg, "--batch-max", "1025"), "is not a number from 1 to 1024");
}

Test(config, batch_keys)
{
	struct config cfg;

	config_init(&cfg);
	cr_assert_eq(cfg.batch_window_us, 100, "the default window is 100 us");
	cr_assert_eq(cfg.batch_max, 32);
	cr_assert_eq(LOAD(&cfg, "--batch-window-us", "0", "--batch-max=1024"), CONFIG_RUN);
	cr_assert_eq(cfg.batch_window_us, 0);
	cr_assert_eq(cfg.batch_max, 1024);
	cr_assert_eq(LOAD(&cfg, "--batch-window-us", "1000000", "--batch-max", "1"), CONFIG_RUN);
	cr_assert_eq(cfg.batch_window_us, 1000000);
	cr_assert_eq(cfg.batch_max, 1);
}

Test(config, file_errors_exit_2_with_file_and_line)
{
	char want[512];
	struct config cfg;
	const char *path;

	path = ini("[daemon]\n\nmax_connections = 4\n"
		   "region_bytes_total = lots\n");
	snprintf(want, sizeof(want),
		 "cudaepd: %s:4: region_bytes_total: 'lots' is not a size\n",
		 path);
	expect_usage(LOAD(&cfg, "--config", path), want);

	path = ini("[daemon]\nbogus_key = 1\n");
	snprintf(want, sizeof(want), "%s:2: unknown key 'bogus_key'", path);
	expect_usage(LOAD(&cfg, "--config", path), want);

	path = ini("log_level = info\n");
	snprintf(want, sizeof(want), "%s:1: log_level: keys belong in a "
		 "[daemon] section", path);
	expect_usage(LOAD(&cfg, "--config", path), want);

	path = ini("[daemon]\nlog_level = info\n[other]\nx = 1\n");
	snprintf(want, sizeof(want), "%s:4: unknown section [other]", path);
	expect_usage(LOAD(&cfg, "--config", path), want);

	path = ini("[daemon]\nlog_level = info\nthis line is not ini\n");
	snprintf(want, sizeof(want), "%s:3: syntax error", path);
	expect_usage(LOAD(&cfg, "--config", path), want);

	snprintf(want, sizeof(want), "%s/missing.conf", tmpdir);
	expect_usage(LOAD(&cfg, "--config", want), "cannot read: No such file");
	expect_usage(LOAD(&cfg, "--config", tmpdir), "cannot read: Is a "
		     "directory");
	/* Refused before it is opened: a FIFO would block the open, and
	 * /dev/zero would be read for ever. */
	snprintf(want, sizeof(want), "%s/fifo.conf", tmpdir);
	cr_assert_eq(mkfifo(want, 0600), 0);
	expect_usage(LOAD(&cfg, "--config", want), "cannot read: not a regular file");
	expect_usage(LOAD(&cfg, "--config", "/dev/zero"), "cannot read: not a regular file");
}

Test(config, a_bad_flag_after_a_good_file_still_fails)
{
	struct config cfg;
	const char *path = ini("[daemon]\nlog_level = debug\n");

	expect_usage(LOAD(&cfg, "--config", path, "--socket-mode", "abc"),
		     "--socket-mode: 'abc'");
}

Test(config, set_leaves_config_alone_on_error)
{
	struct config cfg;
	char err[128];

	config_init(&cfg);
	cr_assert_eq(config_set(&cfg, "max_connections", "12x", err,
				sizeof(err)), CEP_EINVAL);
	cr_assert_eq(cfg.max_connections, 1024);
	cr_assert_eq(config_set(&cfg, "nope", "1", err, sizeof(err)),
		     CEP_EINVAL);
	cr_assert_str_eq(err, "unknown key 'nope'");
	cr_assert_eq(config_set(&cfg, "socket_group", "", err, sizeof(err)), 0);
	cr_assert_eq(cfg.socket_gid, -1);
}

/*
 * The example file lists every key commented out with its default: with
 * the comment marks taken away it must parse, and give exactly the
 * built-in defaults.
 */
Test(config, example_file_documents_the_defaults)
{
	char line[512], *p, path[256];
	struct config want, got;
	FILE *in, *out;
	int keys = 0;

	in = fopen("systemd/cudaepd.conf.example", "r");
	cr_assert_not_null(in, "run the tests from the repository root");
	snprintf(path, sizeof(path), "%s/uncommented.conf", tmpdir);
	out = fopen(path, "w");
	cr_assert_not_null(out);
	while (fgets(line, sizeof(line), in) != NULL) {
		p = line;
		/* "#key = value" lines are settings; "# text" is prose. */
		if (p[0] == '#' && p[1] != ' ' && p[1] != '\n' && p[1] != '#') {
			p++;
			keys++;
		}
		fputs(p, out);
	}
	fclose(in);
	fclose(out);
	cr_assert_eq(keys, 24, "the example sets %d keys", keys);
	config_init(&want);
	config_init(&got);
	cr_assert_eq(config_load_file(&got, path, line, sizeof(line)), 0, "%s",
		     line);
	memset(got.file, 0, sizeof(got.file));
	cr_assert_eq(memcmp(&want, &got, sizeof(want)), 0);
}
