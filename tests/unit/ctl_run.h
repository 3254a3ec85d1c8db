/*
 * ctl_run.h — running the built cudaepctl from a unit test and capturing
 * what it printed (tests/unit/test_client_ctl.c, test_ctl_ops.c).
 * Header-only and static, so that it is compiled only into the tests that
 * include it.
 */
#ifndef CEP_TEST_CTL_RUN_H
#define CEP_TEST_CTL_RUN_H

#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

extern char **environ;

struct ctl_result {
	int status;      /* exit status, or -1 when it did not exit */
	char out[32768]; /* stdout */
	char err[8192];  /* stderr */
};

/* $(BUILD)/tests/unit/test_X -> $(BUILD)/bin/cudaepctl */
static inline const char *ctl_path(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	cr_assert_gt(n, 0);
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/../../bin/cudaepctl", dirname(self));
	cr_assert_eq(access(path, X_OK), 0,
		     "%s not built (make ... $(BUILD)/bin/cudaepctl)", path);
	return path;
}

/* Reads fd to its end (at most len - 1 bytes kept) and closes it. */
static inline void ctl_read_all(int fd, char *buf, size_t len)
{
	size_t pos = 0;
	ssize_t n;

	while (pos + 1 < len && (n = read(fd, buf + pos, len - 1 - pos)) > 0)
		pos += (size_t)n;
	buf[pos] = '\0';
	close(fd);
}

/* Runs cudaepctl with the NULL-terminated args and captures its output. */
static inline void ctl_run(struct ctl_result *r, const char *const *args)
{
	const char *argv[16] = {"cudaepctl"};
	posix_spawn_file_actions_t fa;
	int out[2], err[2], st, n = 1;
	pid_t pid;

	for (; args[n - 1] != NULL && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	cr_assert_eq(pipe(out), 0);
	cr_assert_eq(pipe(err), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	posix_spawn_file_actions_addclose(&fa, err[0]);
	cr_assert_eq(posix_spawn(&pid, ctl_path(), &fa, NULL, (char **)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(err[1]);
	/* Small outputs: stdout to its end, then stderr, cannot block. */
	ctl_read_all(out[0], r->out, sizeof(r->out));
	ctl_read_all(err[0], r->err, sizeof(r->err));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
