/*
 * main.c — cudaepd's entry point: read the configuration, start the server
 * on a libuv loop, tell systemd when it is ready, and run until SIGTERM or
 * SIGINT has closed everything. Exit status: 0 after an orderly stop, 1
 * when the daemon cannot start (socket in use, no permission), 2 for a
 * configuration error.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/resource.h>

#include <systemd/sd-daemon.h>
#include <uv.h>

#include "daemon/config.h"
#include "client/cudaep.h"
#include "daemon/handover.h"
#include "common/log.h"
#include "daemon/server.h"

/* Every region a client registers keeps its memfd open in the daemon, so
 * the soft fd limit (often 1024) is raised to the hard one. */
static void fd_limit_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warning("cannot raise the open file limit");
}

int main(int argc, char **argv)
{
	struct server *srv = NULL;
	struct config cfg;
	uv_loop_t loop;
	int ret, status = 0;

	struct handover *ho;

	ret = config_load(&cfg, argc, argv, stdout, stderr);
	if (ret != CONFIG_RUN)
		return ret;
	log_level_set(cfg.log_level);
	/* A recovery's new image (handover.h): before anything opens an fd,
	 * so that every fd open now is one the old image passed. */
	ho = handover_take();
	/* A client that goes away mid-reply must cost an EPIPE, not the
	 * daemon. */
	signal(SIGPIPE, SIG_IGN);
	fd_limit_raise();
	if (cfg.file[0] != '\0')
		log_info("configuration read from %s", cfg.file);

	/* The thread pool runs loads and cold runs, and each generation holds
	 * one of its threads while it lasts (dispatch_gen.c runs at most 16):
	 * more than libuv's default of 4, unless the environment says. */
	if (!getenv("UV_THREADPOOL_SIZE"))
		setenv("UV_THREADPOOL_SIZE", "24", 0);
	ret = uv_loop_init(&loop);
	if (ret != 0) {
		log_err("cannot create the event loop: %s", uv_strerror(ret));
		handover_free(ho);
		return 1;
	}
	ret = server_new(&cfg, &srv);
	if (ret != 0) {
		log_err("cannot create the server: %s", cep_strerror(ret));
		handover_free(ho);
		uv_loop_close(&loop);
		return 1;
	}
	server_set_args(srv, argc, argv);
	srv->handover = ho;
	ret = server_listen(srv, &loop);
	if (ret != 0)
		status = 1;
	else
		/* Also after a recovery's re-exec: systemd takes it again. */
		sd_notify(0, "READY=1");
	/* On failure this only runs the close callbacks of what started. */
	uv_run(&loop, UV_RUN_DEFAULT);
	if (srv->exit_status != 0)
		status = srv->exit_status;
	server_free(srv);
	ret = uv_loop_close(&loop);
	if (ret != 0) {
		log_err("the event loop still had handles open at exit: %s",
			uv_strerror(ret));
		status = 1;
	}
	if (status == 0)
		log_notice("stopped");
	return status;
}
