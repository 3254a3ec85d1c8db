/*
 * dispatch_gen.c — Generate: a decoder session's generation, as the
 * client's job (dispatch_priv.h).
 *
 * On the loop the handler checks the request (the session, the ring's
 * slice, the options), copies the prompt out of the ring and starts the
 * engine's generation, which checks the model and makes the sequence's
 * key/value cache (engine_gen_new()); its reply carries what that said.
 * Then the client's job runs the steps on the thread pool, writing each
 * token into the ring (proto/cep_gen.h) and waking the reader, until the
 * generation ends: a stop token, its length, a cancel in the ring, the
 * client's socket closing, a step's error. Back on the loop the cache is
 * freed and the client read again. Like every job, it keeps the client's
 * later requests waiting, so its sessions are one thread's at a time.
 */
#include "daemon/dispatch_priv.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/cep_gen.h"
#include "client/cudaep.h"
#include "common/error.h"
#include "common/log.h"
#include "daemon/access.h"
#include "daemon/client.h"
#include "daemon/fence.h"
#include "daemon/recover.h"
#include "daemon/region.h"
#include "daemon/session.h"

/* Generations the daemon runs at once: each holds a thread of the pool
 * while it lasts (main.c sizes the pool for them). */
#define GEN_MAX 16

static void ring_wake(struct cep_gen_ring *ring)
{
	atomic_fetch_add_explicit(&ring->events, 1, memory_order_release);
	fence_futex_wake(&ring->events);
}

/* Whether the client's socket has closed (or broke) under the job. */
static bool peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static bool gen_stop_asked(const struct job *j)
{
	return atomic_load_explicit(&j->gen.ring->cancel, memory_order_acquire) != 0 ||
	       peer_gone(j->gen.fd);
}

/* Waits until slot i is free (the reader has consumed token i - slots):
 * 0, 1 when a cancel or a closed socket came meanwhile, or CEP_ETIMEDOUT
 * after CEP_GEN_STALL_S seconds. */
static int room_wait(struct job *j, uint64_t i)
{
	struct cep_gen_ring *ring = j->gen.ring;
	uint64_t start = uv_hrtime();

	while (i - atomic_load_explicit(&ring->read, memory_order_acquire) >= j->gen.slots) {
		struct timespec ts = { 0, 200000 };

		if (gen_stop_asked(j))
			return 1;
		if (uv_hrtime() - start > (uint64_t)CEP_GEN_STALL_S * 1000000000ull)
			return cep__set_error(CEP_ETIMEDOUT, "the client read no token for "
					      "%d s while its ring of %u was full",
					      CEP_GEN_STALL_S, j->gen.slots);
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void gen_work(struct job *j)
{
	struct cep_gen_ring *ring = j->gen.ring;
	int64_t *slots = j->gen.tokens;
	struct engine_gen_info info;
	uint64_t i = 0;
	int ret = 0, end = 0;

	while (end == 0) {
		int64_t tok;

		if (atomic_load(&j->d->stopping)) {
			ret = cep__set_error(CEP_ECANCELED, "cudaepd is stopping; the generation "
					     "ended after %llu tokens", (unsigned long long)i);
			break;
		}
		if (gen_stop_asked(j)) {
			engine_gen_cancel(j->gen.g);
			break;
		}
		end = engine_gen_step(j->gen.g, &tok);
		if (end < 0) {
			ret = end;
			break;
		}
		ret = room_wait(j, i);
		if (ret != 0) {
			engine_gen_cancel(j->gen.g);
			break;
		}
		slots[i % j->gen.slots] = tok;
		atomic_store_explicit(&ring->written, i + 1, memory_order_release);
		if (i == 0)
			ring->first_token_ns = uv_hrtime() - j->start_ns;
		i++;
		if (i % j->gen.every == 0 && end == 0)
			ring_wake(ring);
	}
	engine_gen_info(j->gen.g, &info);
	j->ret = ret < 0 ? ret : 0;
	ring->error = ret < 0 ? ret : 0;
	if (ret < 0)
		snprintf(ring->message, sizeof(ring->message), "%s", cep_last_error());
	ring->total_ns = uv_hrtime() - j->start_ns;
	atomic_store_explicit(&ring->state,
			      ret < 0 ? (uint32_t)CEP_GEN_ERROR :
			      info.reason == CEP_GEN_RUNNING ? (uint32_t)CEP_GEN_CANCELLED :
			      (uint32_t)info.reason, memory_order_release);
	ring_wake(ring);
}

/* Back on the loop: the cache goes, the client is read again. */
static void gen_after(struct job *j)
{
	struct dispatch *d = j->d;
	struct client *c = j->c;

	if (j->ret < 0)
		log_info("client %llu: generation of session %llu failed: %s",
			 (unsigned long long)c->id, (unsigned long long)j->gen.sess->id, j->msg);
	engine_gen_free(j->gen.g);
	j->gen.g = NULL;
	engine_session_stats(j->gen.sess->engine, &j->gen.sess->stats);
	region_hold_drop(&c->regions, j->gen.region);
	j->gen.region = NULL;
	d->gens--;
	access_kill_finish(c);
	if (c->work == CLIENT_JOB)
		client_work_end(c);
	recover_note(d->recover);
}

/* The ring's slice: this client's, 8-byte aligned, room for the header,
 * the prompt and the slots. */
static int ring_take(struct req *r, const Cudaep__V1__Generate *m, struct region **reg,
		     unsigned char **base)
{
	uint64_t need;
	void *p;
	int ret;

	if (!m->ring)
		return cep__set_error(CEP_EINVAL, "Generate has no ring");
	if (m->n_prompt == 0)
		return cep__set_error(CEP_EINVAL, "the prompt is empty");
	if (m->slots == 0)
		return cep__set_error(CEP_EINVAL, "the ring has no slots");
	need = CEP_GEN_HEADER + 8ull * ((uint64_t)m->n_prompt + m->slots);
	if (m->ring->bytes < need)
		return cep__set_error(CEP_EBOUNDS, "the ring's %llu bytes are fewer than its "
				      "header, %u prompt tokens and %u slots need (%llu)",
				      (unsigned long long)m->ring->bytes, m->n_prompt, m->slots,
				      (unsigned long long)need);
	if (m->ring->offset % 8)
		return cep__set_error(CEP_EINVAL, "the ring's offset %llu is not 8-byte aligned",
				      (unsigned long long)m->ring->offset);
	ret = region_table_get(&r->c->regions, m->ring->region_id, reg);
	if (ret != 0)
		return cep__set_error(ret, "the ring: no region %llu on this connection",
				      (unsigned long long)m->ring->region_id);
	ret = region_slice_check(*reg, m->ring->offset, m->ring->bytes, &p);
	if (ret != 0) {
		char why[CEP_MAX_STATUS_MSG];

		snprintf(why, sizeof(why), "%s", cep_last_error());
		return cep__set_error(ret, "the ring: %s", why);
	}
	*base = p;
	return 0;
}

int dispatch__generate(struct req *r, const Cudaep__V1__Generate *m)
{
	struct dispatch *d = r->d;
	struct client *c = r->c;
	Cudaep__V1__GenerateReply *rep = &r->body->generate;
	struct engine_gen_params p = { 0 };
	struct engine_gen_info info;
	struct session *sess = NULL;
	struct region *reg = NULL;
	unsigned char *base = NULL;
	struct cep_gen_ring *ring;
	engine_gen *g = NULL;
	int64_t *prompt;
	struct job *j;
	int ret;

	ret = dispatch__session_get(c, m->session_id, &sess);
	if (ret < 0)
		return ret;
	ret = ring_take(r, m, &reg, &base);
	if (ret < 0)
		return ret;
	if (m->n_stop_tokens > CEP_GEN_STOP_MAX)
		return cep__set_error(CEP_EINVAL, "%zu stop tokens; at most %d",
				      m->n_stop_tokens, CEP_GEN_STOP_MAX);
	if (d->gens >= GEN_MAX)
		return cep__set_error(CEP_EBUSY, "%d generations run already; try again when "
				      "one ends", GEN_MAX);
	/* The prompt, copied once out of memory the client may still write. */
	prompt = malloc(8ull * m->n_prompt);
	if (!prompt)
		return cep__set_error(CEP_ENOMEM, "no memory for a prompt of %u tokens",
				      m->n_prompt);
	memcpy(prompt, base + CEP_GEN_HEADER, 8ull * m->n_prompt);
	p.max_new_tokens = m->max_new_tokens;
	p.capacity = m->capacity;
	p.temperature = m->temperature;
	p.top_k = m->top_k;
	p.top_p = m->top_p;
	p.repetition_penalty = m->repetition_penalty;
	p.seed = m->seed;
	p.stop = m->stop_tokens;
	p.n_stop = (uint32_t)m->n_stop_tokens;
	ret = engine_gen_new(sess->engine, prompt, m->n_prompt, &p, &g);
	free(prompt);
	if (ret < 0)
		return ret;
	ret = dispatch__job_get(d, c, r->resp->id, JOB_GEN, &j);
	if (ret < 0) {
		engine_gen_free(g);
		return ret;
	}
	ring = (struct cep_gen_ring *)base;
	ring->prompt_tokens = m->n_prompt;
	j->gen.sess = sess;
	j->gen.g = g;
	j->gen.region = reg;
	j->gen.ring = ring;
	j->gen.tokens = (int64_t *)(base + CEP_GEN_HEADER + 8ull * m->n_prompt);
	j->gen.slots = m->slots;
	j->gen.every = m->signal_every ? m->signal_every : 1;
	j->gen.fd = c->conn.fd;
	j->work_fn = gen_work;
	j->after_fn = gen_after;
	region_hold(reg);
	d->gens++;
	engine_gen_info(g, &info);
	cudaep__v1__generate_reply__init(rep);
	rep->capacity = info.capacity;
	rep->kv_bytes = info.kv_bytes;
	rep->fixed_cache = info.kv_mode == ENGINE_KV_FIXED;
	r->resp->body_case = CUDAEP__V1__RESPONSE__BODY_GENERATE;
	r->resp->generate = rep;
	log_debug("client %llu: session %llu generates up to %u tokens from %u (cache of %u, "
		  "%llu bytes)", (unsigned long long)c->id, (unsigned long long)sess->id,
		  m->max_new_tokens, m->n_prompt, info.capacity,
		  (unsigned long long)info.kv_bytes);
	/* The reply goes when this returns; the steps start now. A client
	 * without a socket (tests) generates here, before its reply. */
	if (c->conn.fd < 0 || !d->loop || dispatch__job_queue(j) != 0) {
		dispatch__job_inline(j);
		j->after_fn(j);
	}
	return 0;
}
