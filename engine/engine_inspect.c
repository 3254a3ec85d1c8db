/*
 * engine_inspect.c — a session's plan cache as operators see it
 * (engine_session_plans() of engine/engine.h, for `cudaepctl graphs`):
 * per cached plan the input signature it is for, written as text, whether
 * its steps were captured as a graph, how its runs were queued and what
 * memory it holds.
 *
 * Read-only: it walks the cache of engine/plan.h without touching its
 * clock, so looking never changes which plan is evicted next. The caller
 * keeps other threads off the session meanwhile (see engine.h).
 */
#include "engine/engine_priv.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- text */

/* The signature being written: size bytes at buf, at of them used. Once
 * something did not fit, cut is set and the text ends in "...". */
struct sig_text {
	char *buf;
	size_t size;
	size_t at;
	bool cut;
};

#define SIG_ELLIPSIS "..."

/* Appends n bytes of s, or as many as fit before the room kept for the
 * ellipsis, cut at the start of a UTF-8 sequence. */
static void sig_put(struct sig_text *t, const char *s, size_t n)
{
	size_t room;

	if (t->cut)
		return;
	room = t->size - t->at - (sizeof(SIG_ELLIPSIS) - 1) - 1;
	if (n > room) {
		n = room;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		t->cut = true;
	}
	memcpy(t->buf + t->at, s, n);
	t->at += n;
	if (t->cut) {
		memcpy(t->buf + t->at, SIG_ELLIPSIS, sizeof(SIG_ELLIPSIS) - 1);
		t->at += sizeof(SIG_ELLIPSIS) - 1;
	}
	t->buf[t->at] = '\0';
}

static void sig_str(struct sig_text *t, const char *s)
{
	sig_put(t, s, strlen(s));
}

static void sig_i64(struct sig_text *t, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRId64, v);

	sig_put(t, num, (size_t)n);
}

/* The values of keyed input data (bytes of dtype) as "{1,6}": integers,
 * the first few of them; other types only say that values key the plan. */
#define SIG_MAX_VALUES 8

static void sig_values(struct sig_text *t, cep_dtype dtype, const unsigned char *data,
		       size_t bytes)
{
	size_t size = cep_dtype_size(dtype), n, i;
	int64_t v;
	int32_t v32;

	if (dtype != CEP_DTYPE_INT64 && dtype != CEP_DTYPE_INT32) {
		sig_str(t, "={...}");
		return;
	}
	n = bytes / size;
	sig_str(t, "={");
	for (i = 0; i < n && i < SIG_MAX_VALUES; i++) {
		if (i > 0)
			sig_str(t, ",");
		if (dtype == CEP_DTYPE_INT64) {
			memcpy(&v, data + i * size, sizeof(v));
		} else {
			memcpy(&v32, data + i * size, sizeof(v32));
			v = v32;
		}
		sig_i64(t, v);
	}
	if (n > SIG_MAX_VALUES)
		sig_str(t, ",...");
	sig_str(t, "}");
}

/* The key of input i of p, or NULL when its values do not key p. */
static const struct plan_key *key_of(const struct plan *p, int i)
{
	int k;

	for (k = 0; k < p->n_keys; k++) {
		if (p->keys[k].input == i)
			return &p->keys[k];
	}
	return NULL;
}

/* "x[2,3] shape[2]={1,6}": p's signature (per graph input, in order: its
 * rank, then its dimensions) with the inputs' names. */
static void sig_write(const engine_session *s, const struct plan *p, char *buf, size_t size)
{
	struct sig_text t = { buf, size, 0, false };
	const struct plan_key *key;
	int i, d, k = 0, rank;

	buf[0] = '\0';
	for (i = 0; i < engine_model_input_count(s->m) && k < p->sig_len; i++) {
		rank = (int)p->sig[k++];
		if (i > 0)
			sig_str(&t, " ");
		sig_str(&t, engine_model_input(s->m, i)->name);
		sig_str(&t, "[");
		for (d = 0; d < rank && k < p->sig_len; d++, k++) {
			if (d > 0)
				sig_str(&t, ",");
			sig_i64(&t, p->sig[k]);
		}
		sig_str(&t, "]");
		key = key_of(p, i);
		if (key != NULL && i < p->n_inputs)
			sig_values(&t, p->inputs[i].t.dtype, p->key_data + key->offset,
				   key->bytes);
	}
}

/* ---------------------------------------------------------------- plans */

static void plan_describe(const engine_session *s, const struct plan *p,
			  struct engine_plan_info *out)
{
	memset(out, 0, sizeof(*out));
	sig_write(s, p, out->signature, sizeof(out->signature));
	out->value_keys = p->n_keys;
	out->steps = p->n_steps;
	out->captured = p->graph != NULL;
	out->runs = p->runs;
	out->captures = p->captures;
	out->replays = p->replays;
	out->eager_runs = p->eager_runs;
	out->inflight = atomic_load_explicit(&p->inflight, memory_order_relaxed);
	out->block_bytes = p->block_bytes + p->ctrl_bytes;
	out->activation_bytes = p->activation_bytes + p->ctrl_bytes;
	out->workspace_bytes = p->workspace_bytes;
	if (p->capture_error != NULL)
		snprintf(out->capture_error, sizeof(out->capture_error), "%s", p->capture_error);
}

/* Whether plan a (at index ia) was used more recently than b (at ib); ties,
 * which the cache's clock does not make, go to the lower index. */
static bool newer(const struct plan *a, int ia, const struct plan *b, int ib)
{
	return a->last_used > b->last_used || (a->last_used == b->last_used && ia < ib);
}

int engine_session_plans(const engine_session *s, struct engine_plan_info *out, int max)
{
	const struct plan_cache *c = &s->plans;
	int k, i, best, prev = -1;

	/* Most recently used first, by selection: caches are small, and
	 * sorting a copy would allocate. */
	for (k = 0; k < max && k < c->n; k++) {
		best = -1;
		for (i = 0; i < c->n; i++) {
			if (prev >= 0 && !newer(c->plans[prev], prev, c->plans[i], i))
				continue;
			if (best < 0 || newer(c->plans[i], i, c->plans[best], best))
				best = i;
		}
		plan_describe(s, c->plans[best], &out[k]);
		prev = best;
	}
	return c->n;
}
