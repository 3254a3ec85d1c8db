/*
 * internal.h — the client library's internals shared with cudaepctl and the
 * tests (not installed): the raw request call over nanopb structs.
 */
#ifndef CEP_CLIENT_INTERNAL_H
#define CEP_CLIENT_INTERNAL_H

#include "client/cudaep.h"
#include "cudaep.pb.h"
#include "proto/cep_limits.h"

/*
 * Sends req to the daemon with the fds attached (nfds of them, at most
 * CEP_MAX_FDS; the fds stay the caller's), waits for the response with the
 * same id and decodes it into *resp. req->id is assigned here. Returns 0 when
 * the response's status code is 0; otherwise that code (or a transport error
 * such as CEP_ECONNRESET), with cep_last_error() set to the daemon's message.
 * resp is the caller's (a cudaep_v1_Response is large: keep one around rather
 * than on a small stack). Serialized with the client's other calls.
 */
int cep__call(cep_client *c, cudaep_v1_Request *req, const int *fds, int nfds,
	      cudaep_v1_Response *resp);

/*
 * As cep_connect() over fd, a SOCK_SEQPACKET socket already connected to
 * a daemon (one end of a socketpair, in the fuzzer and tests that play the
 * daemon). fd becomes the library's: released by cep_close(), or closed
 * here when this fails.
 */
int cep__connect_fd(int fd, const char *client_name, cep_client **out);

/* The connected socket's fd (for tests that poke at the transport). */
int cep__client_fd(const cep_client *c);

#endif
