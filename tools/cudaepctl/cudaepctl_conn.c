/*
 * cudaepctl_conn.c — what every command of cudaepctl shares: connecting to
 * the daemon, one admin request and its reply over libcudaep-client's raw
 * call (client/internal.h), and finishing the output. The lowest layer of
 * the tool: main (cudaepctl.c) picks a command, the command files call
 * down here, and nothing here calls back up.
 */
#include "tools/cudaepctl/cudaepctl.h"
#include "client/internal.h"

#include <string.h>

int ctl_connect(struct ctl *ctl)
{
	if (cep_connect(ctl->socket, "cudaepctl", &ctl->c) != 0) {
		fprintf(stderr, "cudaepctl: %s\n", cep_last_error());
		return CTL_EXIT_FAIL;
	}
	ctl_out_init(&ctl->out, stdout, ctl->json);
	return CTL_EXIT_OK;
}

int ctl_send(struct ctl *ctl, const char *what, pb_size_t want,
	     cudaep_v1_Response *resp)
{
	int ret;

	ret = cep__call(ctl->c, &ctl->req, NULL, 0, resp);
	if (ret != 0) {
		fprintf(stderr, "cudaepctl: %s: %s\n", what,
			cep_last_error()[0] != '\0' ? cep_last_error()
						    : cep_strerror(ret));
		return CTL_EXIT_FAIL;
	}
	if (resp->which_body != want) {
		fprintf(stderr, "cudaepctl: %s: cudaepd answered with body %u\n",
			what, (unsigned)resp->which_body);
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

int ctl_call(struct ctl *ctl, const char *what, pb_size_t tag, pb_size_t want,
	     cudaep_v1_Response *resp)
{
	memset(&ctl->req, 0, sizeof(ctl->req));
	ctl->req.which_body = tag;
	return ctl_send(ctl, what, want, resp);
}

int ctl_request(struct ctl *ctl, const char *what, pb_size_t tag, pb_size_t want)
{
	int ret = ctl_connect(ctl);

	if (ret != CTL_EXIT_OK)
		return ret;
	return ctl_call(ctl, what, tag, want, ctl->resp);
}

int ctl_finish(struct ctl *ctl)
{
	if (ctl_out_finish(&ctl->out) != 0) {
		fprintf(stderr, "cudaepctl: cannot write the output\n");
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}
