/*
 * conn.h — the transport of one client: its SOCK_SEQPACKET socket,
 * packets read with their fds, responses sent or queued while the socket
 * is full, and an orderly close.
 *
 * A connection knows bytes and fds, not requests: each packet goes to the
 * layer above through conn_ops.packet, and the end of the peer (it closed,
 * died, or a send to it failed) through conn_ops.gone, which is only ever
 * called from the connection's own poll callback, at the top of a loop
 * turn: never under a caller of conn_send(). The owner stops the reading
 * while it works on a request (conn_hold()) and ends the transport with
 * conn_close(), whose callback says when its memory may go.
 *
 * A detached connection has no socket (tests and the fuzzer): it reads
 * nothing and drops what is sent to it.
 */
#ifndef CEPD_CONN_H
#define CEPD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "daemon/handover.h"

struct stats;
struct conn;

/* Flags of conn_ops.packet, from what recvmsg(2) reported. */
#define CONN_OVERSIZED     0x1u /* the packet was over CEP_MAX_PACKET */
#define CONN_FDS_TRUNCATED 0x2u /* more fds were sent than arrived */

struct conn_ops {
	/*
	 * A packet of len bytes arrived with nfds fds (the callee takes all
	 * of them) and flags. The callee sends its response (conn_send_fd())
	 * and returns whether to read on; false when it held the connection
	 * or started its close.
	 */
	bool (*packet)(struct conn *c, const uint8_t *buf, size_t len, int *fds, int nfds,
		       unsigned flags);
	/* The peer is gone (or a send to it failed, or a draining connection
	 * has flushed): the owner tears down and calls conn_close(). */
	void (*gone)(struct conn *c);
};

/* What every connection of a daemon shares; in struct server. */
struct conn_env {
	uv_loop_t *loop;
	struct stats *stats;
	uint8_t *in_buf;                /* CEP_MAX_PACKET + 1 bytes */
	const struct conn_ops *ops;
};

/* A response waiting for the socket. */
struct conn_out {
	struct conn_out *next;
	int fd;                         /* attached to it, owned; -1: none */
	size_t len;                     /* bytes in data */
	uint8_t data[];                 /* one encoded Response */
};

/* Packets read per readable wakeup, so that one busy client cannot starve
 * the others. */
#define CONN_READ_BURST  32
/* Queued responses above which the connection is not read (backpressure),
 * and below which reading resumes. */
#define CONN_QUEUE_HIGH  64
#define CONN_QUEUE_LOW   16

enum conn_state {
	CONN_OPEN,                      /* read and written */
	CONN_DRAINING,                  /* not read; gone once its queue is sent */
	CONN_BROKEN,                    /* the peer is gone: gone is reported
	                                 * on the next turn */
	CONN_GONE,                      /* gone was reported */
	CONN_CLOSING,                   /* conn_close(): its handle closes */
};

/* How the owner holds a connection's reading (conn_hold()). */
enum conn_hold {
	CONN_READ,                      /* read packets */
	CONN_HELD,                      /* read nothing until released */
	CONN_HELD_WATCHED,              /* read nothing, but report a hang-up */
};

struct conn {
	uv_poll_t poll;                 /* socket only; container_of */
	const struct conn_env *env;
	int fd;                         /* the socket; -1 when detached */
	uint64_t id;                    /* its client's, for the log */
	enum conn_state state;
	enum conn_hold hold;
	bool read_paused;               /* the queue is too long to read more */
	int poll_events;                /* UV_* events polled now */
	struct conn_out *out_head;      /* responses waiting for the socket */
	struct conn_out *out_tail;
	uint32_t out_count;             /* entries in that queue */
	void (*closed)(struct conn *c); /* conn_close()'s callback */
};

/*
 * Opens c (caller memory, which must stay until c is closed) on socket fd
 * (non-blocking; -1: detached) for the client id, and starts reading.
 * Takes fd in every case. Returns 0, or a libuv error mapped to CEP_E*:
 * when the socket could not be watched at all, c needs no close (its fd
 * is closed); when the watch could not start (c->state is CONN_BROKEN),
 * c must still be closed with conn_close(), its memory kept until then.
 */
int conn_open(struct conn *c, const struct conn_env *env, int fd, uint64_t id);

/*
 * Sets how c is read: a request's work off the loop holds it (CONN_HELD),
 * a run waiting in a batch window holds it but wants a hang-up reported
 * (CONN_HELD_WATCHED), and CONN_READ reads again (packets that arrived
 * meanwhile are reported on the next turn).
 */
void conn_hold(struct conn *c, enum conn_hold hold);

/*
 * Sends one encoded response, with fd attached (SCM_RIGHTS) when fd >= 0,
 * queueing it when the socket is full. Takes fd in every case. Returns 0,
 * or a CEP_E* code when the peer is gone or nothing could be queued: c is
 * then broken and gone is reported on the next turn. A detached
 * connection, or one on its way out, drops the bytes and returns 0.
 */
int conn_send_fd(struct conn *c, const uint8_t *buf, size_t len, int fd);
int conn_send(struct conn *c, const uint8_t *buf, size_t len);

/* Stops reading c; once its queued responses are sent (at once when none
 * are), the peer is shut out orderly and gone is reported. For the end of
 * a Hello of another protocol version, and for the daemon's stop. */
void conn_drain(struct conn *c);

/*
 * Ends c: drops what it had queued and closes its socket. closed(c) is
 * called once c's memory may go: at once for a detached connection,
 * from its handle's close callback otherwise. Once per connection.
 */
void conn_close(struct conn *c, void (*closed)(struct conn *c));

/* ---------------------------------------------------------------- handover */

/* Puts c's socket, whether it was draining and the responses it had not
 * sent yet into hc. */
void conn_save(const struct conn *c, struct handover_build *b, HvClient *hc);

/*
 * Opens c on hc's socket from h (checked to be a socket) as conn_open()
 * does, queues the responses hc had not sent and drains it if it was
 * draining. Returns 0, or CEP_EINVAL (no socket came over) or as
 * conn_open(); a response that cannot be queued breaks c (it is then
 * reported gone).
 */
int conn_restore(struct conn *c, const struct conn_env *env, struct handover *h,
		 const HvClient *hc);

#endif
