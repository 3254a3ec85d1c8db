/*
 * engine_weights.c — where a session finds the model's constants
 * (engine/engine.h, "Memory"): in place on a backend of host memory, else
 * in the model's device copy for (backend, account), a "home" uploaded and
 * charged to the shared owner as weights by the first session there and
 * freed and uncharged by the last one to leave. Homes hang off the model
 * under its homes_lock, so sessions on other threads share one upload.
 *
 * Called by sessions (engine_session.c) as they open and close; calls
 * only the backend and the account.
 */
#include "engine/engine_priv.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/error.h"
#include "engine/model.h"

/* Whether constant value v is read at run time (by a node or as an output). */
static bool const_needed(const struct graph_value *v)
{
	return (v->flags & GRAPH_VALUE_CONST) &&
	       (v->n_uses > 0 || (v->flags & GRAPH_VALUE_OUTPUT));
}

/* The room of a constant of n bytes in the weights block: an empty one
 * (a Shape with start past end, folded) still gets an address of its own,
 * since a plan reads "no device copy" into a NULL one. */
static size_t align_up(size_t n)
{
	if (n == 0)
		n = 1;
	return (n + BACKEND_ALIGN - 1) & ~(size_t)(BACKEND_ALIGN - 1);
}

/* Bytes of one block holding every needed constant of g. */
static size_t weights_total(const struct graph *g)
{
	size_t total = 0;
	int v;

	for (v = 0; v < g->n_values; v++) {
		if (const_needed(&g->values[v]))
			total += align_up(g->values[v].bytes);
	}
	return total;
}

/* Makes the model's device copy for (s->be, s->acc): charges it to the
 * shared owner, allocates it and uploads every needed constant on s's
 * stream. Called with the model's homes_lock held, so a second session
 * waits for the first upload and shares it. */
static int home_make(engine_session *s, size_t total, struct model_home **out)
{
	const struct graph *g = &s->m->model->g;
	struct model_home *h;
	size_t at = 0;
	int v, ret;

	h = calloc(1, sizeof(*h));
	if (!h)
		return cep__set_error(CEP_ENOMEM, "out of memory placing the weights");
	h->be = s->be;
	h->acc = s->acc;
	h->bytes = total;
	ret = account_charge(s->acc, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, total);
	if (ret < 0) {
		free(h);
		return ret;
	}
	/* A model without constants needs no block. */
	if (total) {
		ret = backend_mem_alloc(s->be, total, &h->block);
		if (ret < 0)
			goto out;
	}
	for (v = 0; v < g->n_values; v++) {
		const struct graph_value *val = &g->values[v];

		if (!const_needed(val))
			continue;
		ret = backend_copy_h2d(s->be, s->stream, (unsigned char *)h->block + at,
				       val->t.data, val->bytes);
		if (ret < 0)
			goto out;
		at += align_up(val->bytes);
	}
	ret = backend_stream_sync(s->be, s->stream);
out:
	if (ret < 0) {
		backend_mem_free(s->be, h->block, total);
		account_uncharge(s->acc, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, total);
		free(h);
		return ret;
	}
	*out = h;
	return 0;
}

/* Gives each needed constant a home on the backend: in place on a backend
 * of host memory, else in the model's shared device copy. */
int engine__weights_place(engine_session *s)
{
	engine_model *m = s->m;
	const struct graph *g = &m->model->g;
	struct model_home *h;
	size_t at = 0;
	int v, ret = 0;

	if (s->be->caps & BACKEND_CAP_HOST_MEMORY) {
		for (v = 0; v < g->n_values; v++) {
			if (const_needed(&g->values[v]))
				s->const_dev[v] = g->values[v].t.data;
		}
		return 0;
	}
	pthread_mutex_lock(&m->homes_lock);
	for (h = m->homes; h; h = h->next) {
		if (h->be == s->be && h->acc == s->acc)
			break;
	}
	if (!h) {
		ret = home_make(s, weights_total(g), &h);
		if (ret == 0) {
			h->next = m->homes;
			m->homes = h;
		}
	}
	if (ret == 0)
		h->sessions++;
	pthread_mutex_unlock(&m->homes_lock);
	if (ret < 0)
		return ret;
	s->home = h;
	s->weight_bytes = h->bytes;
	for (v = 0; v < g->n_values; v++) {
		if (!const_needed(&g->values[v]))
			continue;
		s->const_dev[v] = (unsigned char *)h->block + at;
		at += align_up(g->values[v].bytes);
	}
	return 0;
}

/* Gives back s's share of the model's device copy; the last session
 * frees and uncharges it. Its runs have all completed (each ends with a
 * stream sync), so no queued work still reads it. */
void engine__weights_leave(engine_session *s)
{
	engine_model *m = s->m;
	struct model_home *h = s->home, **p;

	if (!h)
		return;
	pthread_mutex_lock(&m->homes_lock);
	if (--h->sessions == 0) {
		for (p = &m->homes; *p; p = &(*p)->next) {
			if (*p == h) {
				*p = h->next;
				break;
			}
		}
	} else {
		h = NULL;
	}
	pthread_mutex_unlock(&m->homes_lock);
	s->home = NULL;
	if (!h)
		return;
	backend_mem_free(h->be, h->block, h->bytes);
	account_uncharge(h->acc, ALLOC_OWNER_SHARED, ALLOC_ROLE_WEIGHTS, h->bytes);
	free(h);
}
