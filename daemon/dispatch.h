/*
 * dispatch.h — cudaepd's request handling: one packet in, exactly one
 * encoded Response out. The packet is decoded with protobuf-c into the
 * server's request arena, checked against the connection's state (Hello
 * first) and against the fds that came with it, and handed to the handler
 * of its body. Errors of every kind, from a packet that does not decode to
 * a region limit, come back as a Response with a negative status code and
 * a message naming what was wrong; the connection goes on being served.
 *
 * It needs no socket: tests and the fuzzer call dispatch_packet() on
 * detached connections (conn_new_detached()).
 */
#ifndef CEPD_DISPATCH_H
#define CEPD_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct conn;

/* Flags of dispatch_packet(), from what recvmsg(2) reported. */
#define DISPATCH_OVERSIZED     0x1u /* the packet was over CEP_MAX_PACKET */
#define DISPATCH_FDS_TRUNCATED 0x2u /* more fds were sent than arrived */

/* dispatch_packet()'s answer when the connection must be closed once the
 * response has been sent (a Hello of another protocol version). */
#define DISPATCH_CLOSE 1

/* dispatch_packet()'s answer when no response was encoded now: the request
 * went off the loop (a model load, a run) and its response will be sent to
 * c when that work completes; c reads nothing more until then. Only
 * connections with a socket defer; detached ones run such work inline. */
#define DISPATCH_DEFERRED 2

/*
 * Serves one packet of len bytes from connection c of s. fds are the nfds
 * file descriptors (at most CEP_MAX_FDS) that came with it; dispatch takes
 * all of them: each is kept by what the request created (a region) or
 * closed before returning. The Response is encoded into out, which must
 * hold CEP_MAX_PACKET bytes, and its length stored in *out_len; there is
 * one, unless DISPATCH_DEFERRED is returned (then *out_len is 0). Returns
 * 0, DISPATCH_CLOSE when c must be closed after that response is sent, or
 * DISPATCH_DEFERRED. Uses and resets s->arena.
 */
int dispatch_packet(struct server *s, struct conn *c, const uint8_t *buf,
		    size_t len, int *fds, int nfds, unsigned flags,
		    uint8_t *out, size_t *out_len);

/* Frees a connection's job slot (struct conn's job), which must not be
 * running. Accepts NULL. */
struct job;
void dispatch_job_free(struct job *j);

/* For conn_free(): when c's run waits in a batch window (c->batch_waiting),
 * takes it out of the window and gives back its fence record, so that c is
 * no longer busy with it. Does nothing otherwise, or when the run is being
 * submitted already (its completion then finds c gone). */
void dispatch_batch_drop(struct conn *c);

/*
 * Encodes a Response with request id id and status code (negative) with
 * message into out (CEP_MAX_PACKET bytes), for packets refused before
 * they reach a connection (max_connections). Sets *out_len. Cannot fail.
 */
void dispatch_encode_error(uint64_t id, int code, const char *message,
			   uint8_t *out, size_t *out_len);

#endif
