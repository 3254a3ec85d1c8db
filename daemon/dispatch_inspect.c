/*
 * dispatch_inspect.c — the inspection requests of cudaepd (dispatch_priv.h):
 * Graphs, which `cudaepctl graphs` prints (the plans each session caches,
 * with their CUDA graphs), and Kernels, which `cudaepctl kernels` prints
 * (the device kernels the backend compiled or read from its disk cache).
 *
 * Graphs follows Sessions: a client sees its own connection's sessions, an
 * admin every client's. It reads each session's plan cache on the event
 * loop (engine_session_plans()), which is safe only while no job of the
 * session runs on the thread pool: a cold run plans there, and a plan
 * being built or captured is the cache changing under the reader. A
 * client whose work is under way (a job, dispatch_job.c, or a run in a
 * batch window) may be running any of its sessions, so its sessions are
 * answered as busy, without their plans; a warm run is submitted on the loop itself and cannot
 * overlap this. Runs merged into a batch run on the batch group's own
 * engine sessions (batch.h), so they are not among a session's plans.
 *
 * Kernels belong to the daemon, so anyone may list them. The backend
 * reports them without waiting for a compile in progress
 * (backend_kernels_get()); a backend that has none (the host's) is
 * answered with device_kernels false.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/client.h"
#include "daemon/dispatch_priv.h"
#include "daemon/session.h"
#include "engine/engine.h"
#include "gpu/backend.h"
#include "proto/cep_limits.h"

static int out_of_arena(const char *what)
{
	return cep__set_error(CEP_ENOMEM, "out of request memory building the %s reply",
			      what);
}

/* Whether the asker may see other's sessions: its own, or an admin's
 * (as for Sessions). */
static bool visible(const struct req *r, const struct client *other)
{
	return r->c->admin || other == r->c;
}

/* s copied into the arena for a field of max_size bytes (cut on a UTF-8
 * boundary), control characters made '?': tensor names come from the
 * client's model file. NULL when out of arena. */
static char *text_copy(struct req *r, const char *s, size_t max_size)
{
	char *t = reqarena_strcut(r->arena, s, max_size);
	size_t i;

	for (i = 0; t != NULL && t[i] != '\0'; i++) {
		if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
			t[i] = '?';
	}
	return t;
}

/* ----------------------------------------------------------------- graphs */

/* The reply being built. */
struct graph_list {
	struct req *r;
	Cudaep__V1__GraphEntry **items; /* (CEP_MAX_GRAPHS) in the arena */
	Cudaep__V1__GraphEntry *slots;  /* (CEP_MAX_GRAPHS) what items point at */
	size_t n;                       /* entries filled */
	uint32_t total;                 /* entries wanted, cut ones included */
};

/* A new entry for sess, or NULL past CEP_MAX_GRAPHS (it is only counted
 * then). */
static Cudaep__V1__GraphEntry *graph_add(struct graph_list *l, struct session *sess)
{
	Cudaep__V1__GraphEntry *e;

	l->total++;
	if (l->n == CEP_MAX_GRAPHS)
		return NULL;
	e = &l->slots[l->n];
	l->items[l->n++] = e;
	cudaep__v1__graph_entry__init(e);
	e->session_id = sess->id;
	e->client_id = sess->client_id;
	e->session_name = sess->name;
	return e;
}

/* One entry per cached plan of sess, most recently used first. */
static int graph_session(struct graph_list *l, struct session *sess,
			 struct engine_plan_info *info)
{
	Cudaep__V1__GraphEntry *e;
	int n, i;

	n = engine_session_plans(sess->engine, info, (int)(CEP_MAX_GRAPHS - l->n));
	for (i = 0; i < n; i++) {
		e = graph_add(l, sess);
		if (e == NULL)
			continue;
		e->signature = text_copy(l->r, info[i].signature, CEP_MAX_SIGNATURE);
		e->capture_error = text_copy(l->r, info[i].capture_error,
					     CEP_MAX_CAPTURE_ERROR);
		if (e->signature == NULL || e->capture_error == NULL)
			return out_of_arena("graphs");
		e->value_keys = (uint32_t)info[i].value_keys;
		e->captured = info[i].captured;
		e->device_bytes = info[i].block_bytes;
		e->runs = info[i].runs;
		e->captures = info[i].captures;
		e->replays = info[i].replays;
		e->eager_runs = info[i].eager_runs;
		e->steps = (uint32_t)info[i].steps;
	}
	return 0;
}

int dispatch__graphs(struct req *r)
{
	Cudaep__V1__GraphsReply *rep = &r->body->graphs;
	struct graph_list l = { .r = r };
	struct engine_plan_info *info;
	Cudaep__V1__GraphEntry *e;
	struct session *sess;
	struct client *c;
	uint32_t i;
	int ret;

	l.items = reqarena_alloc(r->arena, CEP_MAX_GRAPHS * sizeof(*l.items));
	l.slots = reqarena_alloc(r->arena, CEP_MAX_GRAPHS * sizeof(*l.slots));
	info = reqarena_alloc(r->arena, CEP_MAX_GRAPHS * sizeof(*info));
	if (l.items == NULL || l.slots == NULL || info == NULL)
		return out_of_arena("graphs");
	for (c = r->d->clients->head; c != NULL; c = c->next) {
		if (!visible(r, c))
			continue;
		for (i = 0; i < c->sessions.ids.count; i++) {
			sess = c->sessions.ids.items[i];
			/* A session a recovery could not restore has no engine,
			 * and so no plans. */
			if (sess->engine == NULL)
				continue;
			if (c->work != CLIENT_IDLE) {
				e = graph_add(&l, sess);
				if (e != NULL) {
					e->busy = true;
					e->signature = (char *)"";
					e->capture_error = (char *)"";
				}
				continue;
			}
			ret = graph_session(&l, sess, info);
			if (ret != 0)
				return ret;
		}
	}
	cudaep__v1__graphs_reply__init(rep);
	rep->n_graphs = l.n;
	rep->graphs = l.items;
	rep->total = l.total;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_GRAPHS;
	r->resp->graphs = rep;
	return 0;
}

/* ---------------------------------------------------------------- kernels */

static uint64_t ns_to_us(uint64_t ns)
{
	return ns / 1000;
}

int dispatch__kernels(struct req *r)
{
	Cudaep__V1__KernelsReply *rep = &r->body->kernels;
	struct backend_kernel_totals t;
	struct backend_kernel *k;
	Cudaep__V1__KernelEntry **list, *e;
	size_t n = 0, i, shown;
	int ret;

	cudaep__v1__kernels_reply__init(rep);
	rep->backend = (char *)r->d->backend->iface.name;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_KERNELS;
	r->resp->kernels = rep;
	k = reqarena_alloc(r->arena, CEP_MAX_LIST * sizeof(*k));
	if (k == NULL)
		return out_of_arena("kernels");
	ret = backend_kernels_get(r->d->backend, k, CEP_MAX_LIST, &n, &t);
	if (ret == CEP_ENOTSUP) {
		/* Not an error: the answer is that there are none. */
		cep__clear_error();
		return 0;
	}
	if (ret < 0)
		return ret;
	shown = n < CEP_MAX_LIST ? n : CEP_MAX_LIST;
	list = reqarena_alloc(r->arena, (shown + 1) * sizeof(*list));
	e = reqarena_alloc(r->arena, (shown + 1) * sizeof(*e));
	if (list == NULL || e == NULL)
		return out_of_arena("kernels");
	for (i = 0; i < shown; i++) {
		list[i] = &e[i];
		cudaep__v1__kernel_entry__init(&e[i]);
		e[i].name = text_copy(r, k[i].name, CEP_MAX_KERNEL_NAME);
		if (e[i].name == NULL)
			return out_of_arena("kernels");
		e[i].arch = (uint32_t)k[i].arch;
		e[i].origin = (char *)(k[i].origin == BACKEND_KERNEL_PREBUILT ? "prebuilt"
				       : k[i].origin == BACKEND_KERNEL_DISK ? "disk" : "compiled");
		e[i].compile_us = ns_to_us(k[i].compile_ns);
		e[i].load_us = ns_to_us(k[i].load_ns);
		e[i].image_bytes = k[i].image_bytes;
	}
	rep->device_kernels = true;
	rep->arch = (uint32_t)t.arch;
	rep->n_kernels = shown;
	rep->kernels = list;
	rep->total = (uint32_t)n;
	rep->compiles = t.compiles;
	rep->compile_us = ns_to_us(t.compile_ns);
	rep->disk_loads = t.disk_hits;
	rep->prebuilt_loads = t.prebuilt_hits;
	rep->prebuilt_rejects = t.prebuilt_rejects;
	rep->memory_hits = t.mem_hits;
	rep->disk_writes = t.disk_writes;
	rep->disk_rejects = t.disk_rejects;
	rep->disk_errors = t.disk_errors;
	rep->cache_dir = text_copy(r, t.cache_dir, CEP_MAX_CACHE_DIR);
	rep->kernel_pack = text_copy(r, t.pack, CEP_MAX_CACHE_DIR);
	rep->kernel_pack_note = text_copy(r, t.pack_note, CEP_MAX_CACHE_DIR);
	if (rep->cache_dir == NULL || rep->kernel_pack == NULL || rep->kernel_pack_note == NULL)
		return out_of_arena("kernels");
	return 0;
}
