/*
 * gen.c — generation (cudaep.h, "generation"): a region for the token
 * ring (proto/cep_gen.h) with the prompt in it, the Generate request, and
 * the reader's side of the ring: tokens in order, a futex to sleep on,
 * the cancel word, and the end's reason and error.
 *
 * Above the objects (region.c, session.c) and the transport. The ring is
 * read without the client's lock: only one thread reads a generation, and
 * the daemon writes the ring, never the client's structures.
 */
#include "client/client_priv.h"
#include "common/error.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proto/cep_gen.h"

/* Token slots of a ring at most: a generation longer than this waits on
 * its reader now and then. */
#define GEN_SLOTS_MAX (1u << 16)

struct cep_generation {
	cep_session *session;
	cep_region *region;          /* the ring's */
	struct cep_gen_ring *ring;
	const int64_t *tokens;       /* the slots */
	uint32_t slots;
	uint64_t read;               /* tokens consumed */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int options_check(const cep_generate_options *o, size_t n_prompt)
{
	if (n_prompt == 0)
		return cep__set_error(CEP_EINVAL, "the prompt is empty");
	if (n_prompt > UINT32_MAX / 2)
		return cep__set_error(CEP_EINVAL, "a prompt of %zu tokens", n_prompt);
	if (o->max_new_tokens == 0)
		return cep__set_error(CEP_EINVAL, "max_new_tokens is 0; generate 1 or more");
	if (o->n_stop_tokens > CEP_GEN_STOP_MAX)
		return cep__set_error(CEP_EINVAL, "%u stop tokens; at most %d",
				      o->n_stop_tokens, CEP_GEN_STOP_MAX);
	if (o->n_stop_tokens && !o->stop_tokens)
		return cep__set_error(CEP_EINVAL, "stop tokens counted but not given");
	return 0;
}

int cep_generate_start(cep_session *s, const int64_t *prompt, size_t n_prompt,
		       const cep_generate_options *o, cep_generation **out)
{
	cep_client *c;
	cudaep_v1_Request *req;
	cudaep_v1_Generate *m;
	cep_generation *g;
	size_t bytes;
	uint32_t i;
	int ret;

	if (!s || !o || !out || (n_prompt && !prompt))
		return cep__set_error(CEP_EINVAL, "cep_generate_start: a NULL argument");
	*out = NULL;
	ret = options_check(o, n_prompt);
	if (ret < 0)
		return ret;
	c = s->client;
	g = calloc(1, sizeof(*g));
	if (!g)
		return cep__set_error(CEP_ENOMEM, "out of memory for a generation");
	g->session = s;
	g->slots = o->max_new_tokens < GEN_SLOTS_MAX ? o->max_new_tokens : GEN_SLOTS_MAX;
	bytes = CEP_GEN_HEADER + 8 * (n_prompt + g->slots);
	ret = cep_region_new(c, bytes, &g->region);
	if (ret < 0) {
		free(g);
		return ret;
	}
	g->ring = cep_region_data(g->region);
	memset(g->ring, 0, CEP_GEN_HEADER);
	memcpy((unsigned char *)g->ring + CEP_GEN_HEADER, prompt, 8 * n_prompt);
	g->tokens = (const int64_t *)((unsigned char *)g->ring + CEP_GEN_HEADER + 8 * n_prompt);

	pthread_mutex_lock(&c->conn.lock);
	req = CEP__REQ(&c->conn, generate);
	m = &req->body.generate;
	m->session_id = s->id;
	m->has_ring = true;
	m->ring.region_id = g->region->id;
	m->ring.offset = 0;
	m->ring.bytes = bytes;
	m->n_prompt = (uint32_t)n_prompt;
	m->slots = g->slots;
	m->max_new_tokens = o->max_new_tokens;
	m->capacity = o->capacity;
	m->temperature = o->temperature;
	m->top_k = o->top_k;
	m->top_p = o->top_p;
	m->repetition_penalty = o->repetition_penalty;
	m->seed = o->seed;
	m->stop_tokens_count = (pb_size_t)o->n_stop_tokens;
	for (i = 0; i < o->n_stop_tokens; i++)
		m->stop_tokens[i] = o->stop_tokens[i];
	m->signal_every = o->signal_every;
	ret = cep__conn_call(&c->conn, req, NULL, 0, c->conn.resp,
			     cudaep_v1_Response_generate_tag);
	pthread_mutex_unlock(&c->conn.lock);
	if (ret < 0) {
		char why[CEP_MAX_STATUS_MSG];

		snprintf(why, sizeof(why), "%s", cep_last_error());
		(void)cep_region_free(g->region);
		free(g);
		return cep__set_error(ret, "%s", why);
	}
	*out = g;
	return 0;
}

/* Waits on the ring's futex until something changes or deadline (ns on
 * the monotonic clock; UINT64_MAX: none) passes: 0, CEP_ETIMEDOUT, or
 * CEP_ECONNRESET when the daemon has gone. */
static int ring_wait(cep_generation *g, uint32_t seen, uint64_t deadline)
{
	cep_client *c = g->session->client;
	uint64_t now = now_ns(), left;
	struct timespec ts;

	if (deadline != UINT64_MAX && now >= deadline)
		return CEP_ETIMEDOUT;
	/* A tenth of a second at most, to notice a daemon that died. */
	left = deadline == UINT64_MAX || deadline - now > 100000000ull ? 100000000ull :
	       deadline - now;
	ts.tv_sec = (time_t)(left / 1000000000ull);
	ts.tv_nsec = (long)(left % 1000000000ull);
	if (syscall(SYS_futex, (uint32_t *)&g->ring->events, FUTEX_WAIT, seen, &ts, NULL, 0) != 0 &&
	    errno == ETIMEDOUT && cep__conn_gone(&c->conn))
		return cep__set_error(CEP_ECONNRESET, "cudaepd closed the connection during "
				      "the generation");
	return 0;
}

/* The end's error, once every token has been read. */
static int end_result(const cep_generation *g)
{
	int32_t err = g->ring->error;
	char msg[CEP_GEN_MSG];

	if (atomic_load_explicit(&g->ring->state, memory_order_acquire) != CEP_GEN_ERROR)
		return CEP_GEN_END;
	memcpy(msg, g->ring->message, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	/* Only codes of the error space; anything else is the daemon's fault. */
	if (err >= 0 || !cep_err_name(err))
		err = CEP_EINTERNAL;
	return cep__set_error(err, "%s", msg);
}

int cep_generate_read(cep_generation *g, int64_t *out, size_t max, size_t *n,
		      int64_t timeout_ns)
{
	uint64_t deadline;

	if (!g || !n || (max && !out))
		return cep__set_error(CEP_EINVAL, "cep_generate_read: a NULL argument");
	*n = 0;
	if (max == 0)
		return cep__set_error(CEP_EINVAL, "cep_generate_read: no room for a token");
	deadline = timeout_ns < 0 ? UINT64_MAX : now_ns() + (uint64_t)timeout_ns;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&g->ring->events, memory_order_acquire);
		uint32_t state = atomic_load_explicit(&g->ring->state, memory_order_acquire);
		uint64_t written = atomic_load_explicit(&g->ring->written, memory_order_acquire);
		int ret;

		/* The daemon writes at most a ring ahead of read. */
		if (written > g->read + g->slots)
			written = g->read + g->slots;
		if (written > g->read) {
			while (g->read < written && *n < max)
				out[(*n)++] = g->tokens[g->read++ % g->slots];
			atomic_store_explicit(&g->ring->read, g->read, memory_order_release);
			return 0;
		}
		if (state != CEP_GEN_RUNNING)
			return end_result(g);
		ret = ring_wait(g, seen, deadline);
		if (ret == CEP_ETIMEDOUT)
			return cep__set_error(CEP_ETIMEDOUT, "no token within the time given");
		if (ret < 0)
			return ret;
	}
}

int cep_generate_cancel(cep_generation *g)
{
	if (g)
		atomic_store_explicit(&g->ring->cancel, 1, memory_order_release);
	return 0;
}

int cep_generate_stats_get(const cep_generation *g, cep_generate_stats *st)
{
	uint32_t state;

	if (!g)
		return 0;
	state = atomic_load_explicit(&g->ring->state, memory_order_acquire);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->prompt_tokens = g->ring->prompt_tokens;
		st->tokens = atomic_load_explicit(&g->ring->written, memory_order_acquire);
		st->first_token_ns = g->ring->first_token_ns;
		st->total_ns = state ? g->ring->total_ns : 0;
		st->reason = (cep_gen_reason)state;
	}
	return state != CEP_GEN_RUNNING;
}

int cep_generate_free(cep_generation *g, cep_generate_stats *st)
{
	int ret = 0;

	if (!g)
		return 0;
	cep_generate_cancel(g);
	while (atomic_load_explicit(&g->ring->state, memory_order_acquire) == CEP_GEN_RUNNING) {
		uint32_t seen = atomic_load_explicit(&g->ring->events, memory_order_acquire);
		uint64_t written;

		/* Make room, so that a daemon waiting on a full ring sees the
		 * cancel at once. */
		written = atomic_load_explicit(&g->ring->written, memory_order_acquire);
		atomic_store_explicit(&g->ring->read, written, memory_order_release);
		if (atomic_load_explicit(&g->ring->state, memory_order_acquire) != CEP_GEN_RUNNING)
			break;
		ret = ring_wait(g, seen, UINT64_MAX);
		if (ret < 0)
			break;
	}
	(void)cep_generate_stats_get(g, st);
	if (ret == 0 && atomic_load_explicit(&g->ring->state, memory_order_acquire) ==
			CEP_GEN_ERROR)
		ret = end_result(g);
	/* The daemon lets go of the ring before it reads the release. */
	(void)cep_region_free(g->region);
	free(g);
	return ret;
}
