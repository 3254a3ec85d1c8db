/*
 * session.c — the per-connection sessions table (see session.h): an array
 * sorted by id, searched by bisection, appended to because ids only grow.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "cudaep.h"
#include "error.h"
#include "reqarena.h"

void session_pool_init(struct session_pool *pool, struct stats *stats)
{
	memset(pool, 0, sizeof(*pool));
	pool->stats = stats;
	pool->next_id = 1;
}

void session_table_init(struct session_table *t, struct session_pool *pool,
			uint64_t client_id)
{
	memset(t, 0, sizeof(*t));
	t->pool = pool;
	t->client_id = client_id;
}

static void session_destroy(struct session_table *t, struct session *s)
{
	t->pool->count--;
	stats_gauge_add(t->pool->stats, STATS_GAUGE_SESSIONS, -1);
	stats_count(t->pool->stats, STATS_COUNTER_SESSIONS_UNLOADED, 1);
	engine_session_free(s->engine);
	free(s);
}

void session_table_close(struct session_table *t)
{
	uint32_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->count; i++)
		session_destroy(t, t->items[i]);
	free(t->items);
	t->items = NULL;
	t->count = 0;
	t->cap = 0;
}

static uint32_t table_index(const struct session_table *t, uint64_t id)
{
	uint32_t lo = 0, hi = t->count, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->items[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int session_table_add(struct session_table *t, const char *name,
		      uint64_t now_ns, struct session **out)
{
	struct session **items, *s;
	uint32_t cap;

	*out = NULL;
	if (t->count == t->cap) {
		cap = t->cap ? t->cap * 2 : 4;
		items = realloc(t->items, (size_t)cap * sizeof(*items));
		if (items == NULL)
			return cep__set_error(CEP_ENOMEM, "out of memory for "
					      "the session table");
		t->items = items;
		t->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory for a "
				      "session");
	s->id = t->pool->next_id++;
	s->client_id = t->client_id;
	s->loaded_ns = now_ns;
	if (name != NULL)
		memcpy(s->name, name,
		       reqarena_utf8_cut(name, sizeof(s->name) - 1));
	t->items[t->count++] = s;
	t->pool->count++;
	stats_gauge_add(t->pool->stats, STATS_GAUGE_SESSIONS, 1);
	stats_count(t->pool->stats, STATS_COUNTER_SESSIONS_LOADED, 1);
	*out = s;
	return 0;
}

struct session *session_table_find(const struct session_table *t,
				   uint64_t id)
{
	uint32_t i = table_index(t, id);

	return i < t->count && t->items[i]->id == id ? t->items[i] : NULL;
}

int session_table_get(const struct session_table *t, uint64_t id,
		      struct session **out)
{
	*out = session_table_find(t, id);
	if (*out == NULL)
		return cep__set_error(CEP_ENOENT, "no session %llu on this "
				      "connection", (unsigned long long)id);
	return 0;
}

int session_table_remove(struct session_table *t, uint64_t id)
{
	uint32_t i = table_index(t, id);

	if (i >= t->count || t->items[i]->id != id)
		return cep__set_error(CEP_ENOENT, "no session %llu on this "
				      "connection", (unsigned long long)id);
	session_destroy(t, t->items[i]);
	memmove(&t->items[i], &t->items[i + 1],
		(size_t)(t->count - i - 1) * sizeof(t->items[0]));
	t->count--;
	return 0;
}
