/*
 * dispatch.h — cudaepd's requests: one packet in, exactly one encoded
 * Response out (now, or later for work that leaves the loop). The packet
 * is decoded with protobuf-c into the request arena, checked against the
 * client's state (Hello first) and against the fds that came with it,
 * and handed to the handler of its body. Errors of every kind, from a
 * packet that does not decode to a region limit, come back as a Response
 * with a negative status code and a message naming what was wrong; the
 * client goes on being served.
 *
 * This is the layer that knows requests: it is given what the handlers
 * use (struct dispatch) and calls down into clients, runs, the fair
 * queue, batches, the engine and the recovery. It needs no socket: tests
 * and the fuzzer feed packets to detached clients (client_new() with fd
 * -1), whose work then runs inline.
 */
#ifndef CEPD_DISPATCH_H
#define CEPD_DISPATCH_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/handover.h"
#include "engine/engine.h"

struct access;
struct account;
struct backend;
struct batcher;
struct client;
struct client_list;
struct config;
struct fairq;
struct recover;
struct region_pool;
struct reqarena;
struct run;
struct run_done;
struct run_queue;
struct session;
struct session_pool;
struct stats;

/* What the handlers use; in struct server, which fills it in. */
struct dispatch {
	const struct config *cfg;       /* the daemon's, reloaded in place */
	struct backend *backend;
	struct account *account;
	struct stats *stats;
	engine_model_cache *models;     /* loaded models, shared by content */
	struct batcher *batches;
	struct fairq *fairq;
	struct run_queue *runs;
	struct region_pool *regions;
	struct session_pool *sessions;
	struct client_list *clients;    /* for the admin views and kills */
	struct access *access;
	struct recover *recover;
	struct reqarena *arena;         /* the request being served */
	uv_loop_t *loop;                /* NULL: no loop, work runs inline */
	uint8_t *out_buf;               /* CEP_MAX_PACKET: a later reply's */
	const char *socket_path;        /* for Status */
	const uint64_t *start_ns;       /* uv_hrtime() at the first start */
	uint32_t jobs;                  /* clients' jobs on the thread pool */
	uint32_t gens;                  /* of all jobs, the generations */
	atomic_bool stopping;           /* set by server_stop(): generations end
	                                 * after their step (read off the loop) */
};

/* Flags of dispatch_packet(), from what recvmsg(2) reported (the same as
 * conn.h's). */
#define DISPATCH_OVERSIZED     0x1u /* the packet was over CEP_MAX_PACKET */
#define DISPATCH_FDS_TRUNCATED 0x2u /* more fds were sent than arrived */

/* dispatch_packet()'s answer when the connection must be closed once the
 * response has been sent (a Hello of another protocol version). */
#define DISPATCH_CLOSE 1

/* dispatch_packet()'s answer when no response was encoded now: the request
 * went off the loop (a model load, a run) and its response will be sent to
 * c when that work completes; c is not read until then (client.h). Only
 * clients with a socket defer; detached ones run such work inline. */
#define DISPATCH_DEFERRED 2

/*
 * Serves one packet of len bytes from client c. fds are the nfds file
 * descriptors (at most CEP_MAX_FDS) that came with it; dispatch takes all
 * of them: each is kept by what the request created (a region) or closed
 * before returning. The Response is encoded into out, which must hold
 * CEP_MAX_PACKET bytes, and its length stored in *out_len; there is one,
 * unless DISPATCH_DEFERRED is returned (then *out_len is 0). Returns 0,
 * DISPATCH_CLOSE when c must be closed after that response is sent, or
 * DISPATCH_DEFERRED. Uses and resets d->arena.
 */
int dispatch_packet(struct dispatch *d, struct client *c, const uint8_t *buf, size_t len,
		    int *fds, int nfds, unsigned flags, uint8_t *out, size_t *out_len);

/*
 * Encodes a Response with request id id and status code (negative) with
 * message into out (CEP_MAX_PACKET bytes), for packets refused before
 * they reach a client (max_connections). Sets *out_len. Cannot fail.
 */
void dispatch_encode_error(uint64_t id, int code, const char *message, uint8_t *out,
			   size_t *out_len);

/* Sends the error of run d of c, which failed, to c: a Response with the
 * Run's id, the error as its status and RunDone naming the fence. Does
 * nothing for a run that succeeded or a client that is going. */
void dispatch_run_done(struct client *c, const struct run_done *d);

/* Starts r, a waiting run of c whose turn has come (the fair queue's
 * start callback): on the loop when its plan is warm, else as c's job on
 * the thread pool. A run that cannot be queued fails through its fence. */
void dispatch_queued_start(struct dispatch *d, struct client *c, struct run *r);

/*
 * Opens session sess of c again after a handover (its record restored by
 * session_restore()): loads its model from the handover's model file
 * model, opens its engine session on d's backend charged to (c, sess) as
 * a LoadModel would, and joins its batch group when it batched. Returns 0
 * or the reason it could not (the caller sets restore_err).
 */
int dispatch_session_reopen(struct dispatch *d, struct client *c, struct session *sess,
			    struct handover *h, const HvSession *hs);

#endif
