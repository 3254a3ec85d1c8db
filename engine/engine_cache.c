/*
 * engine_cache.c — the model cache of the engine (engine.h): a file that
 * several clients load, for the same precision, is parsed and converted
 * once and its engine_model shared, keyed by the file's bytes (an XXH3
 * hash, then a full compare) and what it was loaded for. Loads of a file
 * already in progress wait for it instead of parsing their own copy.
 *
 * Above models (engine_model.c), which it loads, references and drops.
 * A model leaves the cache with its last reference: the cache wires the
 * model's release function when it adds it, and engine_model_unref()
 * calls that.
 */
#include "engine/engine_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/error.h"
#include "engine/model.h"

/* A model being parsed, so that concurrent loads of the same file wait
 * for it instead of parsing (and uploading) their own copy. Lives on the
 * loading thread's stack while it is in the cache's list. */
struct cache_flight {
	uint64_t hash;
	size_t len;
	const void *bytes;                  /* the loader's, valid while listed */
	struct engine_model_options key;    /* as engine__model_key() writes it */
	struct cache_flight *next;
};

struct engine_model_cache {
	pthread_mutex_t lock;
	pthread_cond_t landed;              /* a flight left the list */
	engine_model *models;               /* live ones, newest first */
	struct cache_flight *flights;       /* loads in progress */
	struct engine_model_cache_stats st;
};

/* Takes a reference unless the count already reached zero (the model is
 * on its way out of a cache): for lookups under the cache's lock. */
static bool model_ref_try(engine_model *m)
{
	int n = atomic_load_explicit(&m->refs, memory_order_relaxed);

	while (n > 0) {
		if (atomic_compare_exchange_weak_explicit(&m->refs, &n, n + 1,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

static void cache_unlink(engine_model_cache *c, engine_model *m)
{
	engine_model **p;

	for (p = &c->models; *p; p = &(*p)->next) {
		if (*p == m) {
			*p = m->next;
			c->st.models--;
			c->st.bytes -= m->len;
			break;
		}
	}
	m->cache = NULL;
}

/* m->release of a cached model: takes m, whose last reference is going,
 * out of its cache, if it is still in one. m->cache is written under the
 * cache's lock only; a cache freed meanwhile has set it to NULL under
 * that same lock. */
static void cache_release(engine_model *m)
{
	engine_model_cache *c = m->cache;

	if (c) {
		pthread_mutex_lock(&c->lock);
		if (m->cache == c)
			cache_unlink(c, m);
		pthread_mutex_unlock(&c->lock);
	}
}

int engine_model_cache_new(engine_model_cache **out)
{
	engine_model_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return cep__set_error(CEP_ENOMEM, "out of memory for the model cache");
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->landed, NULL);
	*out = c;
	return 0;
}

void engine_model_cache_free(engine_model_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->models)
		cache_unlink(c, c->models);
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&c->landed);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* A live model of c loaded from these bytes for key, with a new
 * reference; NULL when there is none. Called with c->lock held. */
static engine_model *cache_find(engine_model_cache *c, uint64_t hash,
				const void *bytes, size_t len,
				const struct engine_model_options *key)
{
	engine_model *m;

	for (m = c->models; m; m = m->next) {
		if (m->hash != hash || m->len != len || !engine__key_equal(&m->key, key) ||
		    memcmp(m->bytes, bytes, len) != 0)
			continue;
		if (model_ref_try(m))
			return m;
	}
	return NULL;
}

/* Whether a load of these bytes for key is in progress. Called with
 * c->lock held. */
static bool flight_find(const engine_model_cache *c, uint64_t hash, const void *bytes,
			size_t len, const struct engine_model_options *key)
{
	const struct cache_flight *f;

	for (f = c->flights; f; f = f->next) {
		if (f->hash == hash && f->len == len && engine__key_equal(&f->key, key) &&
		    memcmp(f->bytes, bytes, len) == 0)
			return true;
	}
	return false;
}

static void flight_land(engine_model_cache *c, struct cache_flight *me)
{
	struct cache_flight **p;

	for (p = &c->flights; *p; p = &(*p)->next) {
		if (*p == me) {
			*p = me->next;
			break;
		}
	}
	pthread_cond_broadcast(&c->landed);
}

/* Loads a model whose external data lies below dir_fd for one client:
 * never cached, but keeping its bytes and a dup of dir_fd, which a
 * handover passes on (engine_model_source()). */
static int model_load_private(const void *bytes, size_t len, int dir_fd,
			      const struct engine_model_options *o, engine_model **out)
{
	engine_model *m = NULL;
	int ret;

	ret = engine_model_load_as(bytes, len, dir_fd, o, &m);
	if (ret != 0)
		return ret;
	m->bytes = malloc(len ? len : 1);
	m->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	if (m->bytes == NULL || m->dir_fd < 0) {
		ret = m->bytes == NULL ? CEP_ENOMEM : cep__from_errno(errno);
		engine_model_unref(m);
		return cep__set_error(ret, "keeping the model's bytes and its directory");
	}
	memcpy(m->bytes, bytes, len);
	m->len = len;
	*out = m;
	return 0;
}

int engine_model_load_shared(engine_model_cache *c, const void *bytes, size_t len,
			     int dir_fd, const struct engine_model_options *o,
			     engine_model **out, bool *shared)
{
	struct cache_flight me = { 0 };
	engine_model *m = NULL;
	void *copy = NULL;
	int ret;

	*out = NULL;
	*shared = false;
	if (!c)
		return engine_model_load_as(bytes, len, dir_fd, o, out);
	ret = engine__model_key(o, &me.key);
	if (ret < 0)
		return ret;
	me.hash = XXH3_64bits(bytes, len);
	me.len = len;
	me.bytes = bytes;
	pthread_mutex_lock(&c->lock);
	/* Clients started together load one file at once: the first parses
	 * it, the others wait and share its model (or, if it failed, one of
	 * them tries in turn). */
	for (;;) {
		m = cache_find(c, me.hash, bytes, len, &me.key);
		if (m || !flight_find(c, me.hash, bytes, len, &me.key))
			break;
		pthread_cond_wait(&c->landed, &c->lock);
	}
	if (m) {
		c->st.hits++;
		pthread_mutex_unlock(&c->lock);
		*out = m;
		*shared = true;
		return 0;
	}
	me.next = c->flights;
	c->flights = &me;
	pthread_mutex_unlock(&c->lock);

	/* Loaded without the directory first: a model whose bytes alone say
	 * what it is can be shared; one with external data cannot (another
	 * client's directory may hold other data), so it is loaded again
	 * below for this client only and never cached. */
	ret = engine_model_load_as(bytes, len, -1, o, &m);
	if (ret != 0 && dir_fd >= 0 && model_wanted_dir()) {
		pthread_mutex_lock(&c->lock);
		flight_land(c, &me);
		pthread_mutex_unlock(&c->lock);
		return model_load_private(bytes, len, dir_fd, o, out);
	}
	if (ret == 0) {
		copy = malloc(len ? len : 1);
		if (!copy) {
			engine_model_unref(m);
			m = NULL;
			ret = cep__set_error(CEP_ENOMEM, "out of memory keeping the model's bytes");
		} else {
			memcpy(copy, bytes, len);
		}
	}
	pthread_mutex_lock(&c->lock);
	if (ret == 0) {
		m->bytes = copy;
		m->len = len;
		m->hash = me.hash;
		m->cache = c;
		m->release = cache_release;
		m->next = c->models;
		c->models = m;
		c->st.models++;
		c->st.bytes += len;
		c->st.misses++;
	}
	flight_land(c, &me);
	pthread_mutex_unlock(&c->lock);
	*out = m;
	return ret;
}

void engine_model_cache_stats(engine_model_cache *c, struct engine_model_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	pthread_mutex_unlock(&c->lock);
}
