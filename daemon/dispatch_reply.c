/*
 * dispatch_reply.c — the bottom of the request layer (dispatch_priv.h):
 * the one encoder of responses and the translation of an error code into
 * the wire's Status, the error of a run that failed, the fds and names a
 * request brings, and the lookups every handler shares.
 */
#include "daemon/dispatch_priv.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "common/stats.h"
#include "daemon/access.h"
#include "daemon/client.h"
#include "proto/cep_limits.h"

int dispatch__take_fd(struct req *r, int i)
{
	int fd = r->fds[i];

	r->fds[i] = -1;
	return fd;
}

void dispatch__fd_close(struct dispatch *d, int *fd)
{
	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	stats_count(d->stats, STATS_COUNTER_FDS_CLOSED, 1);
}

void dispatch__name_copy(char *dst, size_t size, const char *src)
{
	size_t n = reqarena_utf8_cut(src, size - 1), i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	dst[n] = '\0';
}

void **dispatch__alloc_list(struct req *r, size_t n, size_t size)
{
	void **list;
	char *items;
	size_t i;

	list = reqarena_alloc(r->arena, (n ? n : 1) * sizeof(*list));
	items = reqarena_alloc(r->arena, (n ? n : 1) * size);
	if (list == NULL || items == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		list[i] = items + i * size;
	return list;
}

int dispatch__out_of_arena(void)
{
	return cep__set_error(CEP_ENOMEM, "out of request memory building the reply");
}

int dispatch__session_get(struct client *c, uint64_t id, struct session **out)
{
	int ret = session_table_get(&c->sessions, id, out);

	if (ret != 0)
		return access_session_gone(c, id, ret);
	if ((*out)->engine == NULL && (*out)->restore_err != 0)
		return cep__set_error((*out)->restore_err, "session %llu could not be "
				      "restored after the device context was lost (%s); "
				      "unload it and load the model again",
				      (unsigned long long)id, cep_err_name((*out)->restore_err));
	if ((*out)->engine == NULL)
		return cep__set_error(CEP_EINTERNAL, "session %llu has no model",
				      (unsigned long long)id);
	return 0;
}

/* ---------------------------------------------------------------- encode */

void dispatch__response_encode(Cudaep__V1__Response *resp, int code, uint8_t *out,
			       size_t *out_len)
{
	Cudaep__V1__Status status = CUDAEP__V1__STATUS__INIT;
	char msg[CEP_MAX_STATUS_MSG], lost[CEP_MAX_STATUS_MSG];
	const char *text;
	size_t size;

	resp->status = &status;
	for (;;) {
		status.code = code;
		status.message = (char *)"";
		if (code != 0) {
			if (!(code == CEP_ENOSPC && resp->body_case ==
			      CUDAEP__V1__RESPONSE__BODY_RUN) &&
			    resp->body_case != CUDAEP__V1__RESPONSE__BODY_RUN_DONE)
				resp->body_case = CUDAEP__V1__RESPONSE__BODY__NOT_SET;
			text = cep_last_error();
			if (text[0] == '\0')
				text = cep_strerror(code);
			/* Every lost-context error tells the client what happens
			 * next (daemon/recover.h). */
			if (code == CEP_ECONTEXT) {
				snprintf(lost, sizeof(lost), "the device context was lost "
					 "(%s); this request did not complete; cudaepd "
					 "restores its sessions on a new context: run again",
					 text);
				text = lost;
			}
			dispatch__name_copy(msg, sizeof(msg), text);
			status.message = msg;
		}
		size = cudaep__v1__response__get_packed_size(resp);
		if (size <= CEP_MAX_PACKET)
			break;
		code = cep__set_error(CEP_EINTERNAL, "the reply would take %zu bytes, more than "
				      "a packet's %d", size, CEP_MAX_PACKET);
	}
	*out_len = cudaep__v1__response__pack(resp, out);
}

void dispatch_encode_error(uint64_t id, int code, const char *message, uint8_t *out,
			   size_t *out_len)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;

	resp.id = id;
	cep__set_error(code, "%s", message);
	dispatch__response_encode(&resp, code, out, out_len);
}

void dispatch_run_done(struct client *c, const struct run_done *d)
{
	Cudaep__V1__Response resp = CUDAEP__V1__RESPONSE__INIT;
	Cudaep__V1__RunDone done = CUDAEP__V1__RUN_DONE__INIT;
	/* A status message and two integers: far below a packet. */
	uint8_t buf[CEP_MAX_STATUS_MSG + 128];
	size_t len;

	if (d->result == 0 || c->life != CLIENT_LIVE)
		return;
	resp.id = d->req_id;
	done.fence_seq = d->seq;
	resp.body_case = CUDAEP__V1__RESPONSE__BODY_RUN_DONE;
	resp.run_done = &done;
	cep__clear_error();
	cep__set_error(d->result, "%s", d->msg);
	dispatch__response_encode(&resp, d->result, buf, &len);
	(void)conn_send(&c->conn, buf, len);
}
