/*
 * client_priv.h — what the files of libcudaep-client share among themselves
 * and with nobody else. Not installed; cudaepctl and the tests see only
 * internal.h.
 *
 * The library's files call down only:
 *
 *   client.c             cep_client: connect, hello, close (which drops
 *                        the regions and sessions left), ping, the raw
 *                        call of internal.h
 *   run.c                runs: the Run request, sent with a fence or not
 *   region.c, session.c, regions; sessions; the fence page, its slots'
 *   fence.c              books and the waits (side by side: none of the
 *                        three calls another)
 *   conn.c               the transport: socket, request ids, send and
 *                        receive, the call
 *
 * The transport hands a response that answers no call (the error of a
 * run in flight) to the callback fence.c wires (struct cep__conn_cb).
 */
#ifndef CEP_CLIENT_PRIV_H
#define CEP_CLIENT_PRIV_H

#include "client/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/cep_fence.h"

_Static_assert(CEP_FENCES_MAX == CEP_FENCE_SLOTS, "one fence in flight per slot");

#define cep__container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ lists */

/* A node of a circular doubly linked list whose head is a sentinel. The
 * caller holds the lock of the client that owns the list. */
struct cep_link {
	struct cep_link *prev;
	struct cep_link *next;
};

static inline void cep__link_init(struct cep_link *head)
{
	head->prev = head;
	head->next = head;
}

static inline void cep__link_add(struct cep_link *head, struct cep_link *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void cep__link_del(struct cep_link *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->prev = node;
	node->next = node;
}

/* -------------------------------------------------------- conn.c: transport */

/* What the layer above is told by the transport: unasked is given each
 * response that answers no call (a RunDone, say), with the lock held, and
 * returns whether it was one it expected; the transport fails any other
 * with CEP_EPROTO. NULL: none is expected. */
struct cep__conn_cb {
	bool (*unasked)(void *arg, const cudaep_v1_Response *resp);
	void *arg;
};

struct cep__conn {
	int fd;                     /* the connected SOCK_SEQPACKET socket; -1 */
	pthread_mutex_t lock;       /* the client's lock: serializes calls;
	                             * guards what follows, and the fence books
	                             * and object lists of the layers above */
	uint64_t next_id;           /* id of the next request, from 1 */
	cudaep_v1_Request *req;     /* the library's own request, built under lock */
	cudaep_v1_Response *resp;   /* the library's own response, read under lock */
	uint8_t *send_buf;          /* CEP_MAX_PACKET bytes */
	uint8_t *recv_buf;          /* CEP_MAX_PACKET bytes */
	int recv_fd;                /* the fd a Hello reply brought, until
	                             * taken; -1 */
	struct cep__conn_cb cb;
};

/* Sets up t (in caller memory) without a socket. Returns 0 or CEP_ENOMEM;
 * on failure t needs no cep__conn_close(). */
int cep__conn_init(struct cep__conn *t);

/* Closes the socket and any fd not taken and frees the buffers. */
void cep__conn_close(struct cep__conn *t);

/* Connects t to the daemon's socket at path (shorter than sun_path).
 * Returns 0 or the error, with a message naming path. */
int cep__conn_connect(struct cep__conn *t, const char *path);

/*
 * Sends req with the fds attached (nfds, at most CEP_MAX_FDS; they stay the
 * caller's) and waits for the response with req's id, decoded into *resp
 * with resp->cb_body as the caller set it (a zeroed one installs nothing);
 * a response that answers nothing in between goes to t->cb. req->id is
 * assigned here. want_body is the body tag a success must carry, or 0 for
 * any; a success without it is CEP_EPROTO. Returns 0, the daemon's status
 * code with its message (the one place a Status becomes a CEP_E* code),
 * or a transport error. The caller holds t->lock.
 */
int cep__conn_call(struct cep__conn *t, cudaep_v1_Request *req, const int *fds,
		   int nfds, cudaep_v1_Response *resp, pb_size_t want_body);

/* Receives one response that answers no call, waiting at most timeout_ms
 * (-1: no limit; CEP_ETIMEDOUT when it passes), and hands it to t->cb.
 * Returns 0, CEP_EPROTO for a response nobody expected, or a transport
 * error. The caller holds t->lock. */
int cep__conn_pump(struct cep__conn *t, int timeout_ms);

/* The fd the Hello reply carried, now the caller's; -1 when none came. */
int cep__conn_take_fd(struct cep__conn *t);

/* Whether the daemon has closed the connection (it died, say). Reads
 * nothing, so it needs no lock. */
bool cep__conn_gone(const struct cep__conn *t);

/* Zeroes the header and the `name` body of t->req, selects that body and
 * returns t->req; the caller holds t->lock. Only the body in use is
 * cleared because the whole request is tens of KiB. */
#define CEP__REQ(t, name)                                     \
	cep__conn_req((t), cudaep_v1_Request_##name##_tag,    \
		      sizeof((t)->req->body.name))
cudaep_v1_Request *cep__conn_req(struct cep__conn *t, pb_size_t tag,
				 size_t body_size);

/* ------------------------------------------------------ fence.c: fences */

/* What the client knows of the fence in flight in one slot. seq is read
 * without the lock (a wait consumes with a store); the rest is the lock's. */
struct cep__fence_book {
	_Atomic uint64_t seq;        /* the fence in flight here; 0: none */
	bool err_have;               /* its failure's Response has arrived */
	int err_code;                /* that Response's status code */
	char err_msg[CEP_MAX_STATUS_MSG];
};

struct cep__fences {
	struct cep_fence_slot *page; /* (CEP_FENCE_SLOTS) mapped from the
	                              * Hello reply; NULL: runs wait for replies */
	uint64_t seq;                /* the last fence sequence number booked */
	struct cep__fence_book books[CEP_FENCE_SLOTS];
};

/* ------------------------------------------------------------- objects */

struct cep_client {
	struct cep__conn conn;       /* the transport, and the lock */
	struct cep__fences fences;   /* fence.c's */
	uint64_t client_id;          /* from the hello reply */
	char backend[16];            /* "host" or "cuda" */
	char device[CEP_MAX_DEVICE_NAME];
	struct cep_link regions;     /* live struct cep_region, by link */
	struct cep_link sessions;    /* live struct cep_session, by link */
};

struct cep_region {
	struct cep_link link;        /* in client->regions */
	cep_client *client;
	uint64_t id;                 /* the daemon's region id */
	void *data;                  /* size bytes, mapped shared with the daemon */
	size_t size;                 /* bytes */
};

struct cep_session {
	struct cep_link link;        /* in client->sessions */
	cep_client *client;
	uint64_t id;                 /* the daemon's session id */
	int n_inputs;
	int n_outputs;
	cep_tensor_info *inputs;     /* (n_inputs), heap, owned */
	cep_tensor_info *outputs;    /* (n_outputs), heap, owned */
};

/* Wires c's transport to hand the errors of runs in flight to c's fence
 * books; c has no page yet. */
void cep__fence_init(cep_client *c);

/* Maps the fence page fd carries (slots of them, from the Hello reply) and
 * closes fd (-1: none came). A page that cannot be used is left out: runs
 * then wait for their replies. Never fails. */
void cep__fence_open(cep_client *c, int fd, uint32_t slots);

/* Unmaps the fence page. */
void cep__fence_close(cep_client *c);

/* Books the next fence sequence number whose slot is free into *seq, for
 * a Run about to be sent. Returns 0, or CEP_EAGAIN when every slot has a
 * fence in flight. The caller holds the lock. */
int cep__fence_book(cep_client *c, uint64_t *seq);

/* Gives back a booked seq whose Run failed; the caller holds the lock. */
void cep__fence_unbook(cep_client *c, uint64_t seq);

/* ------------------------------------------ region.c, session.c: objects */

/* Frees a region or session here only, without telling the daemon (which
 * drops them with the connection). Used by cep_close(); the caller holds the
 * lock and the object is already unlinked. */
void cep__region_drop(struct cep_region *r);
void cep__session_drop(struct cep_session *s);

#endif
