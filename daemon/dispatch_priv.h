/*
 * dispatch_priv.h — what the request handlers of cudaepd share: the
 * request being served, the reply bodies, the one encoder of responses
 * (dispatch_reply.c) and a client's job on the thread pool
 * (dispatch_job.c). Internal to daemon/dispatch*.c.
 *
 * The files, from the bottom: dispatch_reply.c (encoding, the fds of a
 * request, names), dispatch_job.c (work off the loop and its reply),
 * then the handlers: dispatch_load.c (LoadModel, SessionInfo, Unload),
 * dispatch_run.c (Run), dispatch_admin.c (Status, Clients, Sessions,
 * Stats, KillSession), dispatch_memory.c (Memory, Trim),
 * dispatch_inspect.c (Graphs, Kernels); dispatch.c on
 * top decodes, checks and routes, and serves the session-less requests.
 */
#ifndef CEPD_DISPATCH_PRIV_H
#define CEPD_DISPATCH_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "cudaep.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/reqarena.h"
#include "daemon/run.h"

struct client;
struct session;
struct cep_gen_ring;

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
	Cudaep__V1__GenerateReply generate;
};

/* One request being served. */
struct req {
	struct dispatch *d;
	struct client *c;
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

/* ------------------------------------------------------------------ reply */

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
void dispatch__response_encode(Cudaep__V1__Response *resp, int code, uint8_t *out,
			       size_t *out_len);

/* The session id of c's, or the error of a request naming it: unknown (or
 * killed: access_session_gone()), not restored after a recovery, or
 * without a model. */
int dispatch__session_get(struct client *c, uint64_t id, struct session **out);

/* -------------------------------------------------------------------- job */

enum job_kind {
	JOB_LOAD = 1,                 /* a LoadModel */
	JOB_RUN,                      /* a Run without a fence */
	JOB_FENCED,                   /* a cold step of a run with a fence:
	                               * its state says which (run.h) */
	JOB_GEN,                      /* a Generate's steps (dispatch_gen.c) */
};

/* A Run tensor as the job keeps it: the request arena is gone by the time
 * the job runs. */
struct job_tensor {
	char name[CEP_MAX_TENSOR_NAME];
	uint64_t region_id;
	uint64_t offset;              /* bytes into the region */
	int64_t dims[CEP_MAX_RANK];   /* inputs: the shape given */
};

/* A client's work off the event loop; one per client (its job slot),
 * allocated on first use and reused: a warm Run allocates nothing. */
struct job {
	uv_work_t work;               /* the thread pool's; container_of */
	struct dispatch *d;
	struct client *c;             /* the owner, CLIENT_JOB while it runs */
	uint64_t req_id;
	enum job_kind kind;
	bool describe;                /* JOB_FENCED: describe it (it waits
	                               * after), else submit it */
	bool queued;                  /* JOB_FENCED: a waiting run whose turn
	                               * came, answered when it arrived */
	int ret;                      /* the result: 0 or a CEP_E* code */
	char msg[CEP_MAX_STATUS_MSG]; /* the worker thread's error message */
	uint64_t start_ns;            /* uv_hrtime() at arrival */
	void (*work_fn)(struct job *j);  /* off the loop */
	void (*after_fn)(struct job *j); /* back on the loop */
	struct {
		int model_fd;         /* owned while the job lasts; -1: none */
		int dir_fd;           /* owned likewise; -1: none */
		const void *bytes;    /* a region slice instead of model_fd */
		size_t len;
		char name[CEP_MAX_OBJ_NAME];
		struct engine_session_options opts;
		bool batching;        /* SessionOptions.batching */
		uint64_t session_id;  /* taken on the loop; its table entry
		                       * waits for es */
		engine_session *es;   /* the result, until a session owns it */
	} load;
	struct {
		struct session *sess;
		size_t n_in, n_out;
		struct engine_input in[CEP_MAX_IO];
		struct engine_output out[CEP_MAX_IO];
		struct job_tensor tin[CEP_MAX_IO];
		struct job_tensor tout[CEP_MAX_IO];
		struct run *r;        /* JOB_FENCED: its record */
	} run;
	struct {
		struct session *sess;
		engine_gen *g;        /* owned until the job ends */
		struct region *region; /* the ring's, held */
		struct cep_gen_ring *ring;
		int64_t *tokens;      /* the ring's slots */
		uint32_t slots;
		uint32_t every;       /* tokens between wake-ups */
		int fd;               /* the client's socket, polled for its end */
	} gen;
};

/* c's job slot, made on first use and reset for a request of id req_id
 * of kind kind. Returns 0 with *out or CEP_ENOMEM. */
int dispatch__job_get(struct dispatch *d, struct client *c, uint64_t req_id,
		      enum job_kind kind, struct job **out);

/* The id of the session that c's work (a job, or a run in a batch
 * window) uses, 0 when c is idle. */
uint64_t dispatch__job_session(const struct client *c);

/* The id of the session whose generation is c's job now, or 0. */
uint64_t dispatch__job_gen(const struct client *c);

/* Runs j->work_fn here and now, keeping its error message in j->msg as
 * the thread pool's run does: for a client without a socket, or when the
 * pool refuses the work. */
void dispatch__job_inline(struct job *j);

/*
 * Runs j->work_fn on the thread pool, then j->after_fn on the loop; c is
 * CLIENT_JOB meanwhile (not read). Returns 0, or the libuv error after
 * which nothing was queued (the caller works on the loop instead).
 */
int dispatch__job_queue(struct job *j);

/*
 * The end of j on the loop when its reply is due: builds it with finish
 * (which returns the request's result, as a handler does), sends it, ends
 * c's work (reading it again) and then tells j->run.r, when finish left
 * it there, that its reply went (run_replied()); a job whose work failed
 * on a lost context begins the recovery.
 */
void dispatch__job_reply(struct job *j, int (*finish)(struct job *j, struct req *r));

/* Closes *fd (a request's fd a job kept), counting it; -1 afterwards. */
void dispatch__fd_close(struct dispatch *d, int *fd);

/* --------------------------------------------------------------- handlers */

/* Each returns 0 with the reply set in r->resp, DISPATCH__DEFERRED, or an
 * error. */
int dispatch__load_model(struct req *r, const Cudaep__V1__LoadModel *m);
int dispatch__session_info(struct req *r, const Cudaep__V1__SessionInfo *m);
int dispatch__unload(struct req *r, const Cudaep__V1__Unload *m);
int dispatch__run(struct req *r, const Cudaep__V1__Run *m);
int dispatch__generate(struct req *r, const Cudaep__V1__Generate *m);
int dispatch__status(struct req *r);
int dispatch__clients(struct req *r);
int dispatch__sessions(struct req *r);
int dispatch__stats(struct req *r);
int dispatch__kill_session(struct req *r, const Cudaep__V1__KillSession *m);
int dispatch__memory(struct req *r);
int dispatch__trim(struct req *r);

/* An array of n message pointers, each pointing at a zeroed struct of
 * size bytes, all in r's arena; NULL when it is out of room. */
void **dispatch__alloc_list(struct req *r, size_t n, size_t size);

/* The out-of-arena error of a reply being built. */
int dispatch__out_of_arena(void);

/* The inspection requests (dispatch_inspect.c): Graphs lists the plans
 * the sessions the asker may see cache (as Sessions: its own, an admin
 * every client's), Kernels the backend's device kernels (anyone; a reply
 * with device_kernels false on the host backend). */
int dispatch__graphs(struct req *r);
int dispatch__kernels(struct req *r);

#endif
