/*
 * session.c — the per-connection sessions table (see session.h), an
 * idtable of struct session.
 */
#include "daemon/session.h"

#include <stdlib.h>
#include <string.h>

#include "client/cudaep.h"
#include "common/error.h"
#include "daemon/reqarena.h"

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
	/* After its own engine session: the group may take the model's last
	 * device copy of the weights with it. */
	batch_group_unref(s->batch);
	free(s);
}

void session_table_close(struct session_table *t)
{
	uint32_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->ids.count; i++)
		session_destroy(t, t->ids.items[i]);
	idtable_close(&t->ids);
}

/* session_table_add() and session_table_adopt(): id 0 takes a new id. */
static int session_add(struct session_table *t, uint64_t id, const char *name,
		       uint64_t now_ns, struct session **out)
{
	struct session *s;
	int ret;

	*out = NULL;
	ret = idtable_reserve(&t->ids, "the session table");
	if (ret != 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return cep__set_error(CEP_ENOMEM, "out of memory for a "
				      "session");
	s->id = id != 0 ? id : t->pool->next_id++;
	s->client_id = t->client_id;
	s->loaded_ns = now_ns;
	if (name != NULL)
		memcpy(s->name, name,
		       reqarena_utf8_cut(name, sizeof(s->name) - 1));
	idtable_append(&t->ids, s);
	t->pool->count++;
	stats_gauge_add(t->pool->stats, STATS_GAUGE_SESSIONS, 1);
	stats_count(t->pool->stats, STATS_COUNTER_SESSIONS_LOADED, 1);
	*out = s;
	return 0;
}

int session_table_add(struct session_table *t, const char *name,
		      uint64_t now_ns, struct session **out)
{
	return session_add(t, 0, name, now_ns, out);
}

int session_table_adopt(struct session_table *t, uint64_t id, const char *name,
			uint64_t loaded_ns, struct session **out)
{
	const struct session *last = t->ids.count > 0 ? t->ids.items[t->ids.count - 1] : NULL;

	*out = NULL;
	/* The table stays sorted: ids come in the order they were handed. */
	if (id == 0 || id >= t->pool->next_id || (last != NULL && last->id >= id))
		return cep__set_error(CEP_EINVAL, "session id %llu cannot be handed over here "
				      "(the next id is %llu)", (unsigned long long)id,
				      (unsigned long long)t->pool->next_id);
	return session_add(t, id, name, loaded_ns, out);
}

struct session *session_table_find(const struct session_table *t,
				   uint64_t id)
{
	return idtable_find(&t->ids, id);
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
	struct session *s = idtable_take(&t->ids, id);

	if (s == NULL)
		return cep__set_error(CEP_ENOENT, "no session %llu on this "
				      "connection", (unsigned long long)id);
	if (s->inflight > 0) {
		/* Its stream still runs its plans, into its client's regions. */
		s->unloaded = true;
		t->unloaded_held++;
		return 0;
	}
	session_destroy(t, s);
	return 0;
}

void session_run_begin(struct session *s)
{
	s->inflight++;
}

void session_run_end(struct session_table *t, struct session *s)
{
	if (--s->inflight > 0 || !s->unloaded)
		return;
	t->unloaded_held--;
	session_destroy(t, s);
}

/* ---------------------------------------------------------------- handover */

int session_save(const struct session_table *t, struct handover_build *b, HvClient *hc)
{
	const struct session *sess;
	uint32_t i;

	hc->sessions = handover_alloc(b, sizeof(*hc->sessions) * t->ids.count);
	for (i = 0; hc->sessions != NULL && i < t->ids.count; i++) {
		HvSession *hs = handover_alloc(b, sizeof(*hs));

		if (hs == NULL)
			return CEP_ENOMEM;
		sess = t->ids.items[i];
		cudaepd__handover__session__init(hs);
		hs->id = sess->id;
		hs->name = (char *)sess->name;
		hs->model = sess->engine != NULL ?
			    handover_model(b, engine_session_model(sess->engine)) : 0;
		hs->runs = sess->runs;
		hs->run_requests = sess->run_requests;
		hs->loaded_ns = sess->loaded_ns;
		hs->precision = (uint32_t)sess->opts.precision;
		hs->priority = (uint32_t)sess->opts.priority;
		hs->memory_limit = sess->opts.memory_limit;
		hs->batching = sess->batch != NULL;
		hs->batched_runs = sess->batched_runs;
		hs->restore_err = sess->engine != NULL ? 0 :
				  sess->restore_err != 0 ? sess->restore_err : CEP_ECONTEXT;
		hc->sessions[hc->n_sessions++] = hs;
	}
	return hc->sessions != NULL ? 0 : CEP_ENOMEM;
}

int session_restore(struct session_table *t, const HvSession *hs, uint64_t now_ns,
		    struct session **out)
{
	struct session *sess;
	int ret;

	*out = NULL;
	ret = session_table_adopt(t, hs->id, hs->name,
				  hs->loaded_ns <= now_ns ? hs->loaded_ns : now_ns, &sess);
	if (ret != 0)
		return ret;
	sess->runs = hs->runs;
	sess->run_requests = hs->run_requests;
	sess->batched_runs = hs->batched_runs;
	sess->opts.precision = (cep_precision)hs->precision;
	sess->opts.priority = (cep_priority)hs->priority;
	sess->opts.memory_limit = hs->memory_limit;
	*out = sess;
	if (hs->precision > CEP_PRECISION_BF16 || hs->priority > CEP_PRIORITY_LOW)
		ret = cep__set_error(CEP_EINVAL, "its options (precision %u, priority %u) are "
				     "not ones cudaepd has", hs->precision, hs->priority);
	else if (hs->model == 0 && hs->restore_err < 0 && hs->restore_err > -4096)
		ret = cep__set_error(hs->restore_err, "an earlier recovery could not restore it");
	else if (hs->model == 0)
		ret = cep__set_error(CEP_ECONTEXT, "its model file did not come over");
	if (ret != 0)
		sess->restore_err = ret;
	return ret;
}
