/*
 * test_lifecycle.c — cudaepd as a process: clean shutdown on SIGTERM and
 * SIGINT (socket file removed, exit 0), a stale socket replaced, a live
 * daemon on the same path detected, bad configuration refused with exit
 * status 2, systemd socket activation, and cudaepctl against it all.
 */
#include "tests/integration/harness.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(lifecycle, .timeout = 60);

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void expect_clean_exit(int st, const char *what)
{
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "%s: cudaepd status %#x", what, st);
}

Test(lifecycle, sigterm_removes_socket)
{
	struct hdaemon d = {0};
	cep_client *c;
	cep_region *r = NULL;

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	c = h_connect(&d, "to-be-orphaned");
	cr_assert_eq(cep_region_new(c, 4096, &r), 0, "%s", cep_last_error());
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "SIGTERM");
	cr_expect(!exists(d.sock), "socket file left behind");
	/* The client sees the daemon gone, not a hang. */
	cr_expect_lt(cep_ping(c), 0);
	cep_region_free(r);
	cep_close(c);
}

Test(lifecycle, sigint_removes_socket)
{
	struct hdaemon d = {0};

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	expect_clean_exit(h_daemon_stop(&d, SIGINT), "SIGINT");
	cr_expect(!exists(d.sock), "socket file left behind");
}

/* Runs cudaepd with args to completion and returns its wait status, its
 * stderr in err (of errlen bytes). */
static int run_capture(const char *const *args, char *err, size_t errlen)
{
	int p[2];
	pid_t pid;
	int st;
	ssize_t n, got = 0;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	close(p[1]);
	while (got + 1 < (ssize_t)errlen &&
	       (n = read(p[0], err + got, errlen - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

Test(lifecycle, live_daemon_is_detected)
{
	struct hdaemon d = {0};
	char out[4096];
	int st;

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	{
		const char *args[] = {h_bin("cudaepd"), "--socket", d.sock, NULL};

		st = run_capture(args, out, sizeof(out));
	}
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0,
		  "second daemon started on a live socket");
	cr_expect_not_null(strstr(out, d.sock), "message should name the path: %s",
			   out);
	/* The first one is unharmed. */
	cep_client *c = h_connect(&d, "still-here");
	cr_expect_eq(cep_ping(c), 0);
	cep_close(c);
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "first daemon");
}

Test(lifecycle, stale_socket_is_replaced)
{
	struct hdaemon d = {0};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *sock = d.sock;
	int fd;

	cr_assert_eq(h_daemon_prepare(&d), 0);
	/* A socket file whose owner is gone: bound, then closed. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	cr_assert(exists(sock));

	cr_assert_eq(h_daemon_start(&d, NULL), 0,
		     "cudaepd did not replace the stale socket");
	{
		cep_client *c = NULL;

		cr_expect_eq(cep_connect(sock, "stale", &c), 0, "%s",
			     cep_last_error());
		cep_close(c);
	}
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "stale");
	cr_expect(!exists(sock));
}

Test(lifecycle, not_a_socket_is_refused)
{
	char dir[] = "/tmp/cep-file-XXXXXX";
	char path[108], out[4096];
	const char *args[] = {h_bin("cudaepd"), "--socket", path, NULL};
	int st, fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cudaep.sock", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	st = run_capture(args, out, sizeof(out));
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	cr_expect(exists(path), "cudaepd removed a regular file");
	unlink(path);
	rmdir(dir);
}

Test(lifecycle, bad_configuration_exits_2)
{
	char dir[] = "/tmp/cep-conf-XXXXXX";
	char conf[128], out[4096];
	FILE *f;
	int st;

	{
		const char *args[] = {h_bin("cudaepd"), "--max-connections",
				      "many", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2,
			  "bad flag value: status %#x: %s", st, out);
		cr_expect_not_null(strstr(out, "max"), "%s", out);
	}
	{
		const char *args[] = {h_bin("cudaepd"), "--no-such-flag", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2,
			  "unknown flag: status %#x", st);
	}
	cr_assert_not_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/cudaepd.conf", dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "[daemon]\nlog_level = info\nregion_bytes_total = lots\n");
	fclose(f);
	{
		const char *args[] = {h_bin("cudaepd"), "--config", conf, NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2,
			  "bad config file: status %#x: %s", st, out);
		cr_expect_not_null(strstr(out, "region_bytes_total"), "%s", out);
		cr_expect_not_null(strstr(out, conf), "%s", out);
	}
	{
		const char *args[] = {h_bin("cudaepd"), "--config",
				      "/nonexistent/cudaepd.conf", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2,
			  "missing config file: status %#x", st);
	}
	unlink(conf);
	rmdir(dir);
}

Test(lifecycle, config_file_is_applied)
{
	struct hdaemon d = {0};
	char conf[160];
	const char *args[] = {"--config", conf, NULL};
	cep_client *c;
	cep_region *r[3] = {NULL};
	FILE *f;

	snprintf(conf, sizeof(conf), "/tmp/cep-conf-%d.conf", (int)getpid());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "# a comment\n[daemon]\nmax_regions_per_client = 2\n");
	fclose(f);
	cr_assert_eq(h_daemon_start(&d, args), 0);
	c = h_connect(&d, "conf");
	cr_expect_eq(cep_region_new(c, 4096, &r[0]), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[1]), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[2]), CEP_ELIMIT);
	for (int i = 0; i < 3; i++)
		cep_region_free(r[i]);
	cep_close(c);
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "conf");
	unlink(conf);
}

Test(lifecycle, socket_activation)
{
	struct hdaemon d = {0};
	cep_client *c;

	cr_assert_eq(h_daemon_start_activated(&d), 0);
	c = h_connect(&d, "activated");
	cr_expect_eq(cep_ping(c), 0, "%s", cep_last_error());
	cep_close(c);
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "activated");
	/* The socket belongs to systemd: the daemon leaves the file alone. */
	cr_expect(exists(d.sock), "activated daemon removed systemd's socket");
	unlink(d.sock);
}

Test(lifecycle, cudaepctl)
{
	struct hdaemon d = {0};
	char out[16384];
	int st;

	cr_assert_eq(h_daemon_start(&d, NULL), 0);
	{
		const char *args[] = {h_bin("cudaepctl"), "--socket", d.sock,
				      "status", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", out);
		cr_expect_not_null(strstr(out, CEP_VERSION), "%s", out);
	}
	{
		const char *args[] = {h_bin("cudaepctl"), "--socket", d.sock,
				      "--json", "stats", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stats: %s", out);
		cr_expect_eq(out[0], '{', "%s", out);
		cr_expect_not_null(strstr(out, "\"connections_accepted\""), "%s",
				   out);
	}
	const char *cmds[] = {"clients", "sessions", "mem", "ping"};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[] = {h_bin("cudaepctl"), "--socket", d.sock,
				      cmds[i], NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s",
			  cmds[i], out);
	}
	{
		const char *args[] = {h_bin("cudaepctl"), "--socket", d.sock,
				      "no-such-command", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s", out);
	}
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "ctl");
	{
		const char *args[] = {h_bin("cudaepctl"), "--socket", d.sock,
				      "status", NULL};

		st = run_capture(args, out, sizeof(out));
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s", out);
		cr_expect_not_null(strstr(out, d.sock),
				   "error should name the socket: %s", out);
	}
}

/* SIGHUP reads the configuration again: a key that can change does. */
Test(lifecycle, sighup_reloads_the_configuration)
{
	struct hdaemon d = {0};
	char conf[160];
	const char *args[] = {"--config", conf, NULL};
	cep_client *c;
	cep_region *r[5] = {NULL};
	FILE *f;
	int rc = -1;

	snprintf(conf, sizeof(conf), "/tmp/cep-hup-%d.conf", (int)getpid());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "[daemon]\nmax_regions_per_client = 2\n");
	fclose(f);
	cr_assert_eq(h_daemon_start(&d, args), 0);
	c = h_connect(&d, "hup");
	cr_assert_eq(cep_region_new(c, 4096, &r[0]), 0);
	cr_assert_eq(cep_region_new(c, 4096, &r[1]), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[2]), CEP_ELIMIT);

	/* A bad file is refused and the old limit stays. */
	f = fopen(conf, "w");
	fprintf(f, "[daemon]\nmax_regions_per_client = many\n");
	fclose(f);
	kill(d.pid, SIGHUP);
	cr_expect(h_wait_log(&d, "configuration not reloaded"),
		  "the bad file was not refused");
	cr_expect_eq(cep_ping(c), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[2]), CEP_ELIMIT);

	f = fopen(conf, "w");
	fprintf(f, "[daemon]\nmax_regions_per_client = 4\n");
	fclose(f);
	kill(d.pid, SIGHUP);
	/* The signal is handled by the loop, between requests. */
	for (int64_t end = h_now_ms() + 10000; rc != 0 && h_now_ms() < end;)
		rc = cep_region_new(c, 4096, &r[2]);
	cr_expect_eq(rc, 0, "the new limit did not apply: %s", cep_last_error());
	cr_expect_eq(cep_region_new(c, 4096, &r[3]), 0);
	cr_expect_eq(cep_region_new(c, 4096, &r[4]), CEP_ELIMIT);
	for (int i = 0; i < 5; i++)
		cep_region_free(r[i]);
	cep_close(c);
	expect_clean_exit(h_daemon_stop(&d, SIGTERM), "hup");
	unlink(conf);
}
