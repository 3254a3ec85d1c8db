/*
 * cudaepctl.c — inspects a running cudaepd: the options, the table of
 * commands and the usage text. Each command lives in a file of its own
 * kind (see cudaepctl.h: the one-request views in cudaepctl_cmds.c, graphs
 * and kernels in cudaepctl_inspect.c, metrics, top) and calls down to
 * cudaepctl_conn.c for the daemon and cudaepctl_out.c for its output;
 * none of them calls back here.
 *
 * Exit status: 0 on success, 1 when the daemon cannot be reached or a
 * request fails, 2 for a usage error.
 */
#include "client/cudaep.h"
#include "tools/cudaepctl/cudaepctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

struct ctl_cmd {
	const char *name;
	const char *args; /* synopsis of the arguments, "" for none */
	const char *help;
	int max_args;
	int (*fn)(struct ctl *ctl, int argc, char **argv);
};

static void usage(FILE *f);

static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	usage(stdout);
	return CTL_EXIT_OK;
}

static const struct ctl_cmd commands[] = {
	{"status", "", "version, uptime, backend and counts", 0, ctl_cmd_status},
	{"clients", "", "connected clients: pid, uid, regions, sessions", 0,
	 ctl_cmd_clients},
	{"sessions", "", "loaded sessions", 0, ctl_cmd_sessions},
	{"mem", "", "memory by owner and role, with limits", 0, ctl_cmd_mem},
	{"trim", "", "unmap idle device memory and release the handle pool "
	 "(admins)", 0, ctl_cmd_trim},
	{"kill-session", "ID", "unload any client's session (admins)", 1,
	 ctl_cmd_kill_session},
	{"graphs", "", "each session's cached plans and their CUDA graphs", 0,
	 ctl_cmd_graphs},
	{"kernels", "", "device kernels compiled or read from the disk cache", 0,
	 ctl_cmd_kernels},
	{"stats", "", "every counter and gauge", 0, ctl_cmd_stats},
	{"ping", "[COUNT]", "time COUNT no-op round trips (default 1)", 1,
	 ctl_cmd_ping},
	{"metrics", "", "every counter and gauge as Prometheus text", 0,
	 ctl_cmd_metrics},
	{"top", "", "a live view, refreshed every second (q quits)", 0,
	 ctl_cmd_top},
	{"help", "", "this text", 0, cmd_help},
};

static const struct ctl_cmd *cmd_find(const char *name)
{
	for (size_t i = 0; i < CTL_N_OF(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* ----------------------------------------------------------------- main */

/* Long options without a short form. */
enum {
	CTL_OPT_ONCE = 256,
	CTL_OPT_INTERVAL,
};

#define CTL_INTERVAL_MIN 0.1    /* seconds: faster only loads the daemon */
#define CTL_INTERVAL_MAX 3600.0

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !(v >= CTL_INTERVAL_MIN) ||
	    v > CTL_INTERVAL_MAX) {
		fprintf(stderr, "cudaepctl: --interval takes seconds from %.1f "
			"to %.0f, not '%s'\n", CTL_INTERVAL_MIN, CTL_INTERVAL_MAX,
			s);
		return -1;
	}
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	if (cep_default_socket_path(path, sizeof(path)) != 0)
		snprintf(path, sizeof(path), "(too long)");
	fprintf(f, "Usage: cudaepctl [--socket PATH] [--json] [COMMAND [ARGS]]\n"
		   "\nInspects a running cudaepd. COMMAND is status when none "
		   "is given.\n\nCommands:\n");
	for (size_t i = 0; i < CTL_N_OF(commands); i++) {
		char head[32];

		snprintf(head, sizeof(head), "%s %s", commands[i].name,
			 commands[i].args);
		fprintf(f, "  %-16s%s\n", head, commands[i].help);
	}
	fprintf(f,
		"\nOptions:\n"
		"  -s, --socket PATH  the daemon's socket (here: %s)\n"
		"  -j, --json         print one JSON object\n"
		"      --once         top: print one frame and exit\n"
		"      --interval S   top: seconds between frames (default 1)\n"
		"  -h, --help         print this text\n"
		"  -V, --version      print the version\n"
		"\nExit status: 0 on success, 1 when cudaepd cannot be reached "
		"or a request fails,\n2 for a usage error.\n",
		path);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"once", no_argument, NULL, CTL_OPT_ONCE},
		{"interval", required_argument, NULL, CTL_OPT_INTERVAL},
		{NULL, 0, NULL, 0},
	};
	/* static: the request struct is tens of KiB. */
	static struct ctl ctl;
	const struct ctl_cmd *cmd;
	const char *name;
	int opt, nargs, ret;

	while ((opt = getopt_long(argc, argv, "s:jhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctl.socket = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf("cudaepctl %s\n", CEP_VERSION);
			return CTL_EXIT_OK;
		case CTL_OPT_ONCE:
			ctl.once = true;
			break;
		case CTL_OPT_INTERVAL:
			if (parse_interval(optarg, &ctl.interval) != 0)
				return CTL_EXIT_USAGE;
			break;
		default:
			fprintf(stderr, "Try 'cudaepctl --help'.\n");
			return CTL_EXIT_USAGE;
		}
	}
	name = optind < argc ? argv[optind] : "status";
	cmd = cmd_find(name);
	if (cmd == NULL) {
		fprintf(stderr, "cudaepctl: unknown command '%s'\n\n", name);
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	if ((ctl.once || ctl.interval > 0) && cmd->fn != ctl_cmd_top) {
		fprintf(stderr, "cudaepctl: --once and --interval are options "
			"of top\nTry 'cudaepctl --help'.\n");
		return CTL_EXIT_USAGE;
	}
	nargs = optind < argc ? argc - optind - 1 : 0;
	if (nargs > cmd->max_args) {
		fprintf(stderr, "cudaepctl: %s takes %s\nTry 'cudaepctl --help'.\n",
			cmd->name,
			cmd->max_args == 0 ? "no arguments" : cmd->args);
		return CTL_EXIT_USAGE;
	}
	if (ctl.socket != NULL)
		snprintf(ctl.path, sizeof(ctl.path), "%s", ctl.socket);
	else if (cep_default_socket_path(ctl.path, sizeof(ctl.path)) != 0)
		snprintf(ctl.path, sizeof(ctl.path), "(default path too long)");
	ctl.resp = calloc(1, sizeof(*ctl.resp));
	if (ctl.resp == NULL) {
		fprintf(stderr, "cudaepctl: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	ret = cmd->fn(&ctl, nargs, argv + optind + 1);
	cep_close(ctl.c);
	free(ctl.resp);
	return ret;
}
