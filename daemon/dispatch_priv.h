/*
 * dispatch_priv.h — what the request handlers of cudaepd share: the
 * request being served, the reply bodies, and the one encoder of
 * responses. dispatch.c serves the session-less and admin requests,
 * dispatch_memory.c Memory and Trim, dispatch_inspect.c Graphs and
 * Kernels, dispatch_session.c the sessions
 * (LoadModel, SessionInfo, Run, Unload),
 * whose slow parts run off the event loop, access.c KillSession. Internal
 * to daemon/.
 */
#ifndef CEPD_DISPATCH_PRIV_H
#define CEPD_DISPATCH_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudaep.pb-c.h"

#include "daemon/reqarena.h"

struct server;
struct conn;
struct fence_run;

/* The reply bodies; one lives on dispatch_packet()'s stack. */
union reply_body {
	Cudaep__V1__HelloReply hello;
	Cudaep__V1__PingReply ping;
	Cudaep__V1__RegisterRegionReply register_region;
	Cudaep__V1__ReleaseRegionReply release_region;
	Cudaep__V1__SessionInfoReply session_info;
	Cudaep__V1__LoadModelReply load_model;
	Cudaep__V1__RunReply run;
	Cudaep__V1__UnloadReply unload;
	Cudaep__V1__StatusReply status;
	Cudaep__V1__ClientsReply clients;
	Cudaep__V1__SessionsReply sessions;
	Cudaep__V1__MemoryReply memory;
	Cudaep__V1__StatsReply stats;
	Cudaep__V1__TrimReply trim;
	Cudaep__V1__KillSessionReply kill_session;
	Cudaep__V1__GraphsReply graphs;
	Cudaep__V1__KernelsReply kernels;
};

/* One request being served. */
struct req {
	struct server *s;
	struct conn *c;
	struct reqarena *arena;
	Cudaep__V1__Response *resp;
	union reply_body *body;
	int *fds;                 /* nfds slots; -1 once taken or closed */
	int nfds;
	bool close;               /* close the connection after the reply */
};

/* What a handler returns when its reply will be sent later, from the
 * completion of work it queued off the loop. */
#define DISPATCH__DEFERRED 1

/* Hands fd i of the request to a handler, which owns it from then on. */
int dispatch__take_fd(struct req *r, int i);

/* A client-chosen name made safe for logs and fixed-size fields: control
 * characters become '?', and it is cut on a character boundary. */
void dispatch__name_copy(char *dst, size_t size, const char *src);

/*
 * The one translation of an error code into the wire's Status, and the
 * encoding of resp into out (CEP_MAX_PACKET bytes), its length in *out_len.
 * Code 0 is success; otherwise the body is dropped, unless code is
 * CEP_ENOSPC and the body is a RunReply (it tells the client the room its
 * outputs need), and the message is this thread's cep__set_error() text.
 * A response too large for a packet becomes an error itself.
 */
void dispatch__response_encode(Cudaep__V1__Response *resp, int code,
			       uint8_t *out, size_t *out_len);

/* The session handlers (dispatch_session.c). Each returns 0 with the reply
 * set in r->resp, DISPATCH__DEFERRED, or an error. */
int dispatch__load_model(struct req *r, const Cudaep__V1__LoadModel *m);
int dispatch__session_info(struct req *r, const Cudaep__V1__SessionInfo *m);
int dispatch__run(struct req *r, const Cudaep__V1__Run *m);
int dispatch__unload(struct req *r, const Cudaep__V1__Unload *m);

/* Submits fr, a waiting run whose turn has come (fairq.c), for its
 * connection, which is neither busy nor serving a request: on the loop
 * when its plan is warm, else as the connection's job on the thread pool.
 * A run that cannot be queued fails through its fence. */
void dispatch__queued_start(struct server *s, struct fence_run *fr);

/* The id of the session that c's running job loads or runs, 0 when c has
 * no job running (dispatch_session.c). */
uint64_t dispatch__job_session(const struct conn *c);

/* KillSession (access.c): admins only, else CEP_EPERM. */
int dispatch__kill_session(struct req *r, const Cudaep__V1__KillSession *m);

/* The memory requests (dispatch_memory.c): Memory lists the regions, the
 * device arena and the account's owners; Trim (admins only, else
 * CEP_EPERM) unmaps the arena's idle granules and releases its pool. */
int dispatch__memory(struct req *r);
int dispatch__trim(struct req *r);

/* The inspection requests (dispatch_inspect.c): Graphs lists the plans
 * the sessions the asker may see cache (as Sessions: its own, an admin
 * every client's), Kernels the backend's device kernels (anyone; a reply
 * with device_kernels false on the host backend). */
int dispatch__graphs(struct req *r);
int dispatch__kernels(struct req *r);

#endif
