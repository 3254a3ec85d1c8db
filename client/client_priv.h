/*
 * client_priv.h — what the files of libcudaep-client share among themselves
 * and with nobody else: the client, region and session structs, the lists
 * that tie regions and sessions to their client, and the call made with the
 * client's lock held. Not installed; cudaepctl and the tests see only
 * internal.h.
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

/* What the client knows of the fence in flight in one slot. seq is read
 * without the lock (a wait consumes with a store); the rest is the lock's. */
struct cep__fence_book {
	_Atomic uint64_t seq;        /* the fence in flight here; 0: none */
	uint64_t req_id;             /* its Run request's id */
	bool err_have;               /* its failure's Response has arrived */
	int err_code;                /* that Response's status code */
	char err_msg[CEP_MAX_STATUS_MSG];
};

#define cep__container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* A node of a circular doubly linked list whose head is a sentinel. */
struct cep_link {
	struct cep_link *prev;
	struct cep_link *next;
};

struct cep_client {
	int fd;                     /* the connected SOCK_SEQPACKET socket */
	pthread_mutex_t lock;       /* serializes calls; guards what follows */
	uint64_t next_id;           /* id of the next request, from 1 */
	cudaep_v1_Request *req;     /* the library's own request, built under lock */
	cudaep_v1_Response *resp;   /* the library's own response, read under lock */
	uint8_t *send_buf;          /* CEP_MAX_PACKET bytes */
	uint8_t *recv_buf;          /* CEP_MAX_PACKET bytes */
	uint64_t client_id;         /* from the hello reply */
	char backend[16];           /* "host" or "cuda" */
	char device[CEP_MAX_DEVICE_NAME];
	struct cep_link regions;    /* live struct cep_region, by link */
	struct cep_link sessions;   /* live struct cep_session, by link */
	int recv_fd;                /* an fd the last response brought (Hello
	                             * only), until taken; -1 */
	struct cep_fence_slot *fence_page; /* (CEP_FENCE_SLOTS) mapped from the
	                             * Hello reply; NULL: runs wait for replies */
	uint64_t fence_seq;         /* the last fence sequence number sent */
	struct cep__fence_book fences[CEP_FENCE_SLOTS];
};

struct cep_region {
	struct cep_link link;       /* in client->regions */
	cep_client *client;
	uint64_t id;                /* the daemon's region id */
	void *data;                 /* size bytes, mapped shared with the daemon */
	size_t size;                /* bytes */
};

struct cep_session {
	struct cep_link link;       /* in client->sessions */
	cep_client *client;
	uint64_t id;                /* the daemon's session id */
	int n_inputs;
	int n_outputs;
	cep_tensor_info *inputs;    /* (n_inputs), heap, owned */
	cep_tensor_info *outputs;   /* (n_outputs), heap, owned */
};

/*
 * cep__call with c->lock already held by the caller, and with resp->cb_body
 * used as the caller set it (a zeroed one installs nothing). want_body is the
 * Response body tag a success must carry, or 0 to accept any body; a success
 * without it is CEP_EPROTO.
 */
int cep__call_locked(cep_client *c, cudaep_v1_Request *req, const int *fds,
		     int nfds, cudaep_v1_Response *resp, pb_size_t want_body);

/* Receives one packet into c->recv_buf (its length in *len), waiting at
 * most timeout_ms (-1: no limit; CEP_ETIMEDOUT when it passes). Keeps the
 * first fd attached in c->recv_fd when keep_fd, else closes every one. The
 * caller holds c->lock. */
int cep__packet_recv(cep_client *c, size_t *len, bool keep_fd, int timeout_ms);

/* Maps the fence page c->recv_fd carries (slots of them, from the Hello
 * reply) and closes the fd. A page that cannot be used is left out: runs
 * then wait for their replies. Never fails. */
void cep__fence_open(cep_client *c, uint32_t slots);

/* Unmaps the fence page. */
void cep__fence_close(cep_client *c);

/* Keeps the error of a failed run (a RunDone response) for its waiter.
 * Returns whether resp was one; the caller holds c->lock. */
bool cep__fence_stash(cep_client *c, const cudaep_v1_Response *resp);

/* Checks the tensors of a run (as cep_run documents), builds the Run with
 * fence_seq and calls the daemon with c->lock held; fills outputs from the
 * reply (also for CEP_ENOSPC). Returns 0 or the error. */
int cep__run_check(const cep_session *s, const cep_tensor *inputs, size_t n_inputs,
		   const cep_tensor *outputs, size_t n_outputs);
int cep__run_call_locked(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
			 cep_tensor *outputs, size_t n_outputs, uint64_t fence_seq);

/* Zeroes the header and the `name` body of c->req, selects that body and
 * returns c->req; the caller holds c->lock. Only the body in use is cleared
 * because the whole request is tens of KiB. */
#define CEP__REQ(c, name)                                     \
	cep__req_begin((c), cudaep_v1_Request_##name##_tag,   \
		       sizeof((c)->req->body.name))
cudaep_v1_Request *cep__req_begin(cep_client *c, pb_size_t tag,
				  size_t body_size);

/* List primitives; the caller holds the owning client's lock. */
void cep__link_init(struct cep_link *head);
void cep__link_add(struct cep_link *head, struct cep_link *node);
void cep__link_del(struct cep_link *node);

/* Frees a region or session here only, without telling the daemon (which
 * drops them with the connection). Used by cep_close(); the caller holds the
 * lock and the object is already unlinked. */
void cep__region_drop(struct cep_region *r);
void cep__session_drop(struct cep_session *s);

#endif
