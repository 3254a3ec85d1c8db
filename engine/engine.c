/*
 * engine.c — the daemon-facing engine (engine/engine.h): models with their
 * reference counts and input/output descriptions, sessions with their
 * backend homes for weights and their plan caches, and the run path, which
 * checks what the caller passed, finds or builds the plan (for the inputs'
 * shapes, and for the values of the few small inputs that a shape depends
 * on: engine/plan.h), and hands it to the executor.
 *
 * Everything a run needs beyond the plan (the signature buffer, the symbol
 * bindings, the pointer arrays) is allocated when the session opens, so a
 * run that hits the cache allocates nothing.
 *
 * Precision: a model is loaded for fp32 (which tf32 sessions use too) or
 * converted for fp16 or bf16 on one backend kind (engine/precision.h);
 * the cache keys models by that as well as by their bytes, and a session
 * opens only a model loaded for its precision.
 *
 * Memory: plan blocks are charged to the session's owner when a plan is
 * cached and uncharged when it leaves the cache; a model's device copy of
 * its constants (a "home", one per backend and account) is charged to the
 * shared owner by the session that uploads it and uncharged by the last
 * one to leave. The account refuses what would pass a limit; the planner
 * is told the room the limits leave so that it refuses before allocating.
 *
 * Cross-client batches (engine_run_submit_batch()) live in engine_batch.c
 * and the model cache in engine_cache.c; the structs and helpers the three
 * share are in engine_priv.h.
 */
#include "engine/engine_priv.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/exec.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/precision.h"
#include "engine/shape.h"

/* ------------------------------------------------------------------ models */

static void info_fill(const struct graph *g, int v, struct engine_tensor_info *info)
{
	const struct graph_value *val = &g->values[v];
	int i;

	info->name = val->name;
	info->dtype = val->t.dtype;
	info->rank = val->t.rank;
	for (i = 0; i < val->t.rank; i++) {
		int64_t d = val->t.dims[i];

		info->dims[i] = op_dim_fixed(d) ? d : -1;
		info->dim_params[i] = op_dim_symbolic(d) && op_dim_symbol(d) < g->n_syms
					      ? g->syms[op_dim_symbol(d)] : NULL;
	}
}

/* What a model loaded with o is, as the cache compares it: tf32 is fp32
 * (the same graph), and only a half graph depends on the backend kind.
 * Fails with CEP_EINVAL for a precision out of range. */
int engine__model_key(const struct engine_model_options *o, struct engine_model_options *key)
{
	memset(key, 0, sizeof(*key));
	if (!o)
		return 0;
	if ((unsigned)o->precision > CEP_PRECISION_BF16)
		return cep__set_error(CEP_EINVAL, "unknown precision %d", (int)o->precision);
	if (precision_half_dtype(o->precision) == CEP_DTYPE_UNDEFINED)
		return 0;
	key->precision = o->precision;
	key->backend = o->backend;
	return 0;
}

int engine_model_load(const void *bytes, size_t len, int dir_fd,
		      engine_model **out)
{
	return engine_model_load_as(bytes, len, dir_fd, NULL, out);
}

int engine_model_load_as(const void *bytes, size_t len, int dir_fd,
			 const struct engine_model_options *o, engine_model **out)
{
	engine_model *m = NULL;
	const struct graph *g;
	cep_dtype half;
	int i, ret;

	*out = NULL;
	cep__clear_error();
	m = calloc(1, sizeof(*m));
	if (!m)
		return cep__set_error(CEP_ENOMEM, NULL);
	atomic_init(&m->refs, 1);
	m->dir_fd = -1;
	pthread_mutex_init(&m->homes_lock, NULL);
	m->pstats.first_float_node = -1;
	ret = engine__model_key(o, &m->key);
	if (ret < 0)
		goto out;
	ret = model_load(bytes, len, dir_fd, &m->model);
	if (ret < 0)
		goto out;
	half = precision_half_dtype(m->key.precision);
	if (half != CEP_DTYPE_UNDEFINED) {
		ret = precision_model_convert(m->model, half, m->key.backend, &m->pstats);
		if (ret < 0)
			goto out;
	}
	g = &m->model->g;
	m->inputs = calloc((size_t)g->n_inputs + 1, sizeof(*m->inputs));
	m->outputs = calloc((size_t)g->n_outputs + 1, sizeof(*m->outputs));
	if (!m->inputs || !m->outputs) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	for (i = 0; i < g->n_inputs; i++)
		info_fill(g, g->inputs[i], &m->inputs[i]);
	for (i = 0; i < g->n_outputs; i++)
		info_fill(g, g->outputs[i], &m->outputs[i]);
	engine__batch_check(m);
	*out = m;
	m = NULL;
	ret = 0;
out:
	engine_model_unref(m);
	return ret;
}

void engine_model_ref(engine_model *m)
{
	atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void engine_model_unref(engine_model *m)
{
	if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
		return;
	engine__cache_drop(m);
	free(m->bytes);
	if (m->dir_fd >= 0)
		close(m->dir_fd);
	pthread_mutex_destroy(&m->homes_lock);
	model_free(m->model);
	free(m->inputs);
	free(m->outputs);
	free(m);
}

int engine_model_input_count(const engine_model *m)
{
	return m->model->g.n_inputs;
}

int engine_model_output_count(const engine_model *m)
{
	return m->model->g.n_outputs;
}

const struct engine_tensor_info *engine_model_input(const engine_model *m, int i)
{
	return i >= 0 && i < m->model->g.n_inputs ? &m->inputs[i] : NULL;
}

const struct engine_tensor_info *engine_model_output(const engine_model *m, int i)
{
	return i >= 0 && i < m->model->g.n_outputs ? &m->outputs[i] : NULL;
}

int engine_model_node_count(const engine_model *m)
{
	return graph_live_nodes(&m->model->g);
}

cep_precision engine_model_precision(const engine_model *m)
{
	return m->key.precision;
}

void engine_model_precision_stats(const engine_model *m, struct precision_stats *out)
{
	*out = m->pstats;
}

/* ---------------------------------------------------------------- sessions */

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
static int weights_place(engine_session *s)
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
static void weights_leave(engine_session *s)
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

/* Opens the session's account: the caller's, or a private one, and the
 * session's limit in it. */
static int account_open(engine_session *s, const struct engine_session_options *o)
{
	int ret;

	if (o->account) {
		s->acc = o->account;
		s->owner = o->owner;
		/* The daemon's own session (batches of many clients' runs):
		 * no limit but the global one, no entry of its own. */
		if (o->owner.client == 0 && o->owner.session == 0) {
			s->shared_owner = true;
			return 0;
		}
		if (o->owner.client == 0 || o->owner.session == 0)
			return cep__set_error(CEP_EINVAL, "a session's owner needs a client "
					      "and a session id");
	} else {
		ret = account_new(&s->own_acc);
		if (ret < 0)
			return ret;
		s->acc = s->own_acc;
		s->owner = (struct alloc_owner){ 1, 1 };
	}
	/* Even without a limit: the entry makes the session visible in
	 * `cudaepctl mem` before it holds any memory of its own. */
	return account_limit_set(s->acc, s->owner, o->memory_limit);
}

/* Checks that m was loaded for sessions of precision p on be. */
static int precision_check(const engine_model *m, const struct backend *be, cep_precision p)
{
	const struct engine_model_options asked = { .precision = p, .backend = be->kind };
	const struct engine_model_options *has = &m->key;
	struct engine_model_options want;
	char what[64] = "";
	int ret;

	ret = engine__model_key(&asked, &want);
	if (ret < 0)
		return ret;
	if (engine__key_equal(&want, has))
		return 0;
	if (precision_half_dtype(has->precision) != CEP_DTYPE_UNDEFINED)
		snprintf(what, sizeof(what), " on the %s backend", backend_kind_name(has->backend));
	if (precision_half_dtype(p) == CEP_DTYPE_UNDEFINED)
		return cep__set_error(CEP_EINVAL, "a session of precision %s needs its model "
				      "loaded for fp32; this one was loaded for %s%s",
				      precision_name(p), precision_name(has->precision), what);
	return cep__set_error(CEP_EINVAL, "a session of precision %s needs its model loaded "
			      "for %s on the %s backend; this one was loaded for %s%s",
			      precision_name(p), precision_name(p), backend_kind_name(be->kind),
			      precision_name(has->precision), what);
}

int engine_session_new(engine_model *m, struct backend *be,
		       const struct engine_session_options *opts,
		       engine_session **out)
{
	struct engine_session_options o = { 0 };
	const struct graph *g = &m->model->g;
	engine_session *s = NULL;
	int ret;

	*out = NULL;
	cep__clear_error();
	if (opts)
		o = *opts;
	if (o.max_plans <= 0)
		o.max_plans = ENGINE_DEFAULT_PLANS;
	ret = precision_check(m, be, o.precision);
	if (ret < 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return cep__set_error(CEP_ENOMEM, NULL);
	engine_model_ref(m);
	s->m = m;
	s->be = be;
	s->precision = o.precision;
	if (o.precision == CEP_PRECISION_TF32)
		s->call_flags |= OP_CALL_TF32;
	ret = account_open(s, &o);
	if (ret < 0)
		goto out;
	ret = CEP_ENOMEM;
	s->const_dev = calloc((size_t)g->n_values + 1, sizeof(*s->const_dev));
	s->bind.n = g->n_syms;
	s->bind.vals = calloc((size_t)g->n_syms + 1, sizeof(*s->bind.vals));
	s->bind.from = calloc((size_t)g->n_syms + 1, sizeof(*s->bind.from));
	s->sig = calloc((size_t)g->n_inputs * (1 + CEP_MAX_RANK) + 1, sizeof(*s->sig));
	s->in_t = calloc((size_t)g->n_inputs + 1, sizeof(*s->in_t));
	s->in_ptr = calloc((size_t)g->n_inputs + 1, sizeof(*s->in_ptr));
	s->out_ptr = calloc((size_t)g->n_outputs + 1, sizeof(*s->out_ptr));
	if (!s->const_dev || !s->bind.vals || !s->bind.from || !s->sig || !s->in_t ||
	    !s->in_ptr || !s->out_ptr) {
		ret = cep__set_error(ret, "out of memory opening a session");
		goto out;
	}
	if (o.max_batch > 0) {
		size_t n = (size_t)o.max_batch;

		s->max_batch = o.max_batch;
		s->b_rows = calloc(n, sizeof(*s->b_rows));
		s->b_in = calloc(n * (size_t)g->n_inputs + 1, sizeof(*s->b_in));
		s->b_out = calloc(n * (size_t)g->n_outputs + 1, sizeof(*s->b_out));
		if (!s->b_rows || !s->b_in || !s->b_out) {
			ret = cep__set_error(ret, "out of memory for a session's batches of %d runs",
					     o.max_batch);
			goto out;
		}
	}
	ret = plan_cache_init(&s->plans, o.max_plans);
	if (ret < 0)
		goto out;
	ret = backend_stream_new(be, (int)o.priority, &s->stream);
	if (ret < 0)
		goto out;
	ret = weights_place(s);
	if (ret < 0)
		goto out;
	*out = s;
	s = NULL;
	ret = 0;
out:
	engine_session_free(s);
	return ret;
}

void engine_session_free(engine_session *s)
{
	if (!s)
		return;
	plan_cache_close(&s->plans, s->be);
	if (s->acc) {
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, s->plan_act);
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, s->plan_ws);
		/* Still charged only through a caller's bug; then the entry
		 * stays, visible in `cudaepctl mem`. The shared owner's entry
		 * is the daemon's, not the session's. */
		if (!s->shared_owner)
			(void)account_forget(s->acc, s->owner);
	}
	weights_leave(s);
	backend_stream_free(s->be, s->stream);
	free(s->const_dev);
	free(s->bind.vals);
	free(s->bind.from);
	free(s->sig);
	free(s->in_t);
	free(s->in_ptr);
	free(s->out_ptr);
	free(s->b_rows);
	free(s->b_in);
	free(s->b_out);
	engine_model_unref(s->m);
	account_free(s->own_acc);
	free(s);
}

void engine_model_source(const engine_model *m, const void **bytes, size_t *len,
			 int *dir_fd)
{
	*bytes = m->bytes;
	*len = m->bytes != NULL ? m->len : 0;
	*dir_fd = m->dir_fd;
}

engine_model *engine_session_model(const engine_session *s)
{
	return s->m;
}

cep_precision engine_session_precision(const engine_session *s)
{
	return s->precision;
}

/* --------------------------------------------------------------------- run */

/* Checks the run's inputs against the model, fills s->in_t (shapes and
 * data) and s->in_ptr in graph order and the plan's shape signature;
 * returns its length in *sig_len. */
static int inputs_check(engine_session *s, const struct engine_input *in, size_t n_in,
			int *sig_len)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	int i, k = 0, d, ret;

	shape_binding_reset(&s->bind);
	for (j = 0; j < n_in; j++) {
		int v = in[j].name ? graph_value_find(g, in[j].name) : -1;

		if (v < 0 || !(g->values[v].flags & GRAPH_VALUE_INPUT))
			return cep__set_error(CEP_EINVAL, "'%s' is not an input of the model",
					      in[j].name ? in[j].name : "(null)");
	}
	for (i = 0; i < g->n_inputs; i++) {
		const struct graph_value *val = &g->values[g->inputs[i]];
		const struct engine_input *x = NULL;
		struct op_tensor *t = &s->in_t[i];
		int64_t numel;
		size_t want;

		for (j = 0; j < n_in; j++) {
			if (strcmp(in[j].name, val->name) != 0)
				continue;
			if (x)
				return cep__set_error(CEP_EINVAL, "input '%s' is given twice", val->name);
			x = &in[j];
		}
		if (!x)
			return cep__set_error(CEP_EINVAL, "input '%s' is missing", val->name);
		if (x->dtype != val->t.dtype)
			return cep__set_error(CEP_EDTYPE, "input '%s' is %s, the model wants %s",
					      val->name, cep_dtype_name(x->dtype),
					      cep_dtype_name(val->t.dtype));
		if (x->rank > 0 && !x->dims)
			return cep__set_error(CEP_EINVAL, "input '%s' has no dims", val->name);
		ret = shape_bind_input(g, g->inputs[i], x->rank, x->dims, &s->bind);
		if (ret < 0)
			return ret;
		memset(t, 0, sizeof(*t));
		t->dtype = x->dtype;
		t->rank = x->rank;
		if (x->rank > 0)
			memcpy(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
		ret = op_tensor_numel(t, &numel);
		if (ret < 0)
			return cep__set_error(ret, "input '%s' has more than 2^40 elements", val->name);
		want = (size_t)numel * cep_dtype_size(t->dtype);
		if (x->bytes != want)
			return cep__set_error(CEP_ESHAPE, "input '%s' has %zu bytes, its shape needs %zu",
					      val->name, x->bytes, want);
		if (want && !x->data)
			return cep__set_error(CEP_EINVAL, "input '%s' has no data", val->name);
		s->in_ptr[i] = x->data;
		/* The planner reads an input's values only where a shape needs
		 * them, and never writes them. */
		t->data = (void *)x->data;
		s->sig[k++] = x->rank;
		for (d = 0; d < x->rank; d++)
			s->sig[k++] = x->dims[d];
	}
	*sig_len = k;
	return 0;
}

/* Fills in the dtype, shape and bytes of each output asked for (whose
 * names outputs_check() has checked). */
static void outputs_describe(const engine_session *s, const struct plan *p,
			     struct engine_output *out, size_t n_out)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	int i;

	for (j = 0; j < n_out; j++) {
		for (i = 0; i < g->n_outputs; i++) {
			if (strcmp(out[j].name, g->values[g->outputs[i]].name) == 0)
				break;
		}
		out[j].dtype = p->outputs[i].t.dtype;
		out[j].rank = p->outputs[i].t.rank;
		memcpy(out[j].dims, p->outputs[i].t.dims, sizeof(out[j].dims));
		out[j].bytes = p->outputs[i].bytes;
	}
}

/* Points s->out_ptr at the caller's buffers for the outputs asked for.
 * Room too small for an output is CEP_ENOSPC, reported once every name is
 * checked, with every output described so the caller can make room. */
static int outputs_check(engine_session *s, const struct plan *p,
			 struct engine_output *out, size_t n_out)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	bool too_small = false;
	int i;

	for (i = 0; i < g->n_outputs; i++)
		s->out_ptr[i] = NULL;
	for (j = 0; j < n_out; j++) {
		for (i = 0; i < g->n_outputs; i++) {
			if (out[j].name && strcmp(out[j].name, g->values[g->outputs[i]].name) == 0)
				break;
		}
		if (i == g->n_outputs)
			return cep__set_error(CEP_EINVAL, "'%s' is not an output of the model",
					      out[j].name ? out[j].name : "(null)");
		if (s->out_ptr[i])
			return cep__set_error(CEP_EINVAL, "output '%s' is asked for twice", out[j].name);
		if (out[j].capacity < p->outputs[i].bytes) {
			if (!too_small)
				cep__set_error(CEP_ENOSPC, "output '%s' needs %zu bytes, "
					       "%zu are given", out[j].name,
					       p->outputs[i].bytes, out[j].capacity);
			too_small = true;
			s->out_ptr[i] = (void *)&out[j];
			continue;
		}
		if (p->outputs[i].bytes && !out[j].data)
			return cep__set_error(CEP_EINVAL, "output '%s' has no buffer", out[j].name);
		/* A non-NULL marker even for zero bytes, so the slot counts as
		 * taken; exec copies nothing for it. */
		s->out_ptr[i] = out[j].data ? out[j].data : (void *)&out[j];
	}
	if (too_small) {
		outputs_describe(s, p, out, n_out);
		return CEP_ENOSPC;
	}
	return 0;
}

/* Bytes the cached plans hold, as activations and as workspace. */
static void plans_sum(const engine_session *s, uint64_t *act, uint64_t *ws)
{
	int i;

	*act = 0;
	*ws = 0;
	for (i = 0; i < s->plans.n; i++) {
		*act += s->plans.plans[i]->activation_bytes;
		*ws += s->plans.plans[i]->workspace_bytes;
	}
}

/* Evicts the least recently used plan not in flight and uncharges what it
 * held. Returns whether there was one. */
static bool plan_evict(engine_session *s)
{
	uint64_t act, ws;

	if (!plan_cache_evict(&s->plans, s->be))
		return false;
	plans_sum(s, &act, &ws);
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, s->plan_act - act);
	account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, s->plan_ws - ws);
	s->plan_act = act;
	s->plan_ws = ws;
	return true;
}

/* The smaller of limit - used and room, where a limit of 0 is none. */
static uint64_t room_min(uint64_t room, const struct account_usage *u)
{
	uint64_t left;

	if (!u->limit)
		return room;
	left = u->device < u->limit ? u->limit - u->device : 0;
	return left < room ? left : room;
}

/* What the session's, its client's and the global limit leave for a new
 * plan, or UINT64_MAX when none applies. Only a hint for the planner, so
 * that it refuses before allocating: the charge itself decides. */
static uint64_t room_left(const engine_session *s)
{
	struct alloc_owner client = { s->owner.client, 0 };
	struct account_usage u;
	uint64_t room = UINT64_MAX;

	if (account_usage_get(s->acc, s->owner, &u) == 0)
		room = room_min(room, &u);
	if (account_usage_get(s->acc, client, &u) == 0)
		room = room_min(room, &u);
	account_totals(s->acc, &u);
	return room_min(room, &u);
}

/* env->max_block_bytes for a room: 0 means no limit to the planner, so a
 * full account asks for at most one byte. */
static size_t room_block(uint64_t room)
{
	if (room == UINT64_MAX || room > SIZE_MAX)
		return 0;
	return room ? (size_t)room : 1;
}

/* Charges a new plan's block to the session's owner. */
static int plan_charge(engine_session *s, const struct plan *p)
{
	int ret;

	ret = account_charge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, p->activation_bytes);
	if (ret < 0)
		return ret;
	ret = account_charge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, p->workspace_bytes);
	if (ret < 0) {
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, p->activation_bytes);
		return ret;
	}
	s->plan_act += p->activation_bytes;
	s->plan_ws += p->workspace_bytes;
	return 0;
}

/* Builds and caches the plan for the signature in s->sig and the inputs
 * in s->in_t (whose values key it where a shape needs them). A full cache
 * gives up its least recently used plan first; a plan refused for a memory
 * limit is built again once older plans have made room, if they can; if
 * they cannot, the account's charge names the limit. */
int engine__plan_make(engine_session *s, struct plan_env *env, int sig_len, struct plan **out)
{
	size_t needed = 0;
	int ret;

	if (s->plans.n == s->plans.cap && !plan_evict(s))
		return cep__set_error(CEP_EAGAIN, "each of the %d plans the session keeps is "
				      "in use by a run in flight; wait for one to finish",
				      s->plans.cap);
	env->needed_bytes = &needed;
	env->max_block_bytes = room_block(room_left(s));
	ret = plan_build(env, s->in_t, s->sig, sig_len, out);
	if (ret == CEP_ELIMIT && needed) {
		while (s->plans.n > 0 && room_left(s) < needed && plan_evict(s))
			;
		if (room_left(s) >= needed) {
			env->max_block_bytes = room_block(room_left(s));
			ret = plan_build(env, s->in_t, s->sig, sig_len, out);
		} else {
			/* Let the account say which limit is in the way. */
			ret = account_charge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, needed);
			if (ret == 0) {
				account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, needed);
				ret = cep__set_error(CEP_ELIMIT, "the plan needs %zu bytes, more "
						     "than the memory limits leave", needed);
			}
		}
	}
	if (ret < 0)
		return ret;
	ret = plan_charge(s, *out);
	if (ret < 0) {
		plan_free(*out, s->be);
		*out = NULL;
		return ret;
	}
	/* Room was made above, and nothing but this thread adds plans. */
	ret = plan_cache_insert(&s->plans, *out, s->be);
	if (ret < 0) {
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_ACTIVATIONS, (*out)->activation_bytes);
		account_uncharge(s->acc, s->owner, ALLOC_ROLE_WORKSPACE, (*out)->workspace_bytes);
		s->plan_act -= (*out)->activation_bytes;
		s->plan_ws -= (*out)->workspace_bytes;
		plan_free(*out, s->be);
		*out = NULL;
		return ret;
	}
	s->stats.plans_built++;
	return 0;
}

/* run_prepare() flag: only describe; a cached plan is enough, whether or
 * not it has run or is about to be captured. */
#define RUN_DESCRIBE (1u << 8)

/* What a run needs before anything is queued: the inputs checked, the
 * plan found or built (not with ENGINE_SUBMIT_WARM: then a plan that is
 * not cached, or has never run, is ENGINE_RUN_COLD), the outputs checked
 * and described. */
static int run_prepare(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
		       struct engine_output *outputs, size_t n_outputs, unsigned flags,
		       struct plan **out)
{
	struct plan_env env = {
		.g = &s->m->model->g, .be = s->be, .stream = s->stream,
		.const_dev = (void *const *)s->const_dev,
		.call_flags = s->call_flags,
	};
	struct plan *p;
	uint64_t hash;
	int sig_len = 0, ret;

	cep__clear_error();
	ret = inputs_check(s, inputs, n_inputs, &sig_len);
	if (ret < 0)
		return ret;
	hash = plan_sig_hash(s->sig, sig_len);
	p = plan_cache_find(&s->plans, s->sig, sig_len, hash,
			    (const void *const *)s->in_ptr);
	if (p && (flags & ENGINE_SUBMIT_WARM) && !(flags & RUN_DESCRIBE) &&
	    (p->runs == 0 || exec_captures_next(p, s->be)))
		return ENGINE_RUN_COLD;
	if (!p) {
		if (flags & ENGINE_SUBMIT_WARM)
			return ENGINE_RUN_COLD;
		ret = engine__plan_make(s, &env, sig_len, &p);
		if (ret < 0)
			return ret;
	} else if (!(flags & RUN_DESCRIBE)) {
		/* A description is followed by the run, which counts. */
		s->stats.plan_hits++;
	}
	ret = outputs_check(s, p, outputs, n_outputs);
	if (ret < 0)
		return ret;
	*out = p;
	return 0;
}

/* Counts a run that queued all its work. */
void engine__run_count(engine_session *s, const struct plan *p)
{
	if (p->graph)
		s->stats.graph_replays++;
	else
		s->stats.eager_runs++;
	s->stats.runs++;
	s->stats.last_steps = p->n_steps;
	s->stats.last_folded = p->folded;
}

/* Keeps why the capture of p failed, the first time it does. */
void engine__capture_note(engine_session *s, const struct plan *p, bool had_error)
{
	if (had_error || !p->capture_error)
		return;
	s->stats.capture_failures++;
	snprintf(s->stats.capture_error, sizeof(s->stats.capture_error), "%s",
		 p->capture_error);
}

int engine_run(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
	       struct engine_output *outputs, size_t n_outputs)
{
	const struct graph *g = &s->m->model->g;
	struct plan *p = NULL;
	bool had_error;
	int ret;

	ret = run_prepare(s, inputs, n_inputs, outputs, n_outputs, 0, &p);
	if (ret < 0)
		return ret;
	had_error = p->capture_error != NULL;
	ret = exec_run(g, p, s->be, s->stream, (const void *const *)s->in_ptr,
		       (void *const *)s->out_ptr);
	engine__capture_note(s, p, had_error);
	if (ret < 0)
		return ret;
	outputs_describe(s, p, outputs, n_outputs);
	engine__run_count(s, p);
	return 0;
}

int engine_run_describe(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
			struct engine_output *outputs, size_t n_outputs, unsigned flags)
{
	struct plan *p = NULL;
	int ret;

	ret = run_prepare(s, inputs, n_inputs, outputs, n_outputs,
			  (flags & ENGINE_SUBMIT_WARM) | RUN_DESCRIBE, &p);
	if (ret != 0)
		return ret;
	outputs_describe(s, p, outputs, n_outputs);
	return 0;
}

/* The run's error, kept for engine_run_complete() (the message is this
 * thread's, and the completion may run on another). */
void engine__run_fail(struct engine_run *run, int err)
{
	if (run->err)
		return;
	run->err = err;
	snprintf(run->msg, sizeof(run->msg), "%s", cep_last_error());
}

int engine_run_submit(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
		      struct engine_output *outputs, size_t n_outputs, unsigned flags,
		      const struct engine_fence *f, struct engine_run *run)
{
	const struct graph *g = &s->m->model->g;
	struct plan *p = NULL;
	bool had_error;
	int ret;

	memset(run, 0, sizeof(*run));
	ret = run_prepare(s, inputs, n_inputs, outputs, n_outputs, flags, &p);
	if (ret != 0)
		return ret;
	/* The reply can tell the shapes now: they are the plan's. */
	outputs_describe(s, p, outputs, n_outputs);
	atomic_fetch_add_explicit(&p->inflight, 1, memory_order_relaxed);
	run->plan = p;
	had_error = p->capture_error != NULL;
	ret = exec_submit(g, p, s->be, s->stream, (const void *const *)s->in_ptr,
			  (void *const *)s->out_ptr);
	engine__capture_note(s, p, had_error);
	if (ret == 0 && f->fault) {
		ret = backend_stream_fault_save(s->be, s->stream, f->fault);
		run->checked = ret > 0;
		ret = ret > 0 ? 0 : ret;
	}
	/* A run that may still turn out to have failed leaves the fence to
	 * its host function, which writes it after the status; so does a
	 * device that cannot write it. */
	if (ret == 0 && f->seq && !run->checked) {
		ret = backend_stream_write_value64(s->be, s->stream, f->seq, f->value);
		run->seq_queued = ret == 0;
		if (ret == CEP_ENOTSUP) {
			cep__clear_error();
			ret = 0;
		}
	}
	if (ret < 0)
		engine__run_fail(run, ret);
	else
		engine__run_count(s, p);
	ret = backend_stream_host_fn(s->be, s->stream, f->done, f->arg);
	if (ret < 0) {
		/* Nothing will call back: wait for what was queued (a device
		 * that refuses to queue has failed already), then complete
		 * here. */
		engine__run_fail(run, ret);
		(void)backend_stream_sync(s->be, s->stream);
		f->done(f->arg);
	}
	return 0;
}

int engine_run_complete(engine_session *s, struct engine_run *run,
			const struct backend_fault *fault)
{
	const struct graph *g = &s->m->model->g;
	struct plan *p = run->plan;
	int ret = 0;

	if (!p)
		return 0;
	if (run->err)
		ret = cep__set_error(run->err, "%s", run->msg);
	else if (run->checked)
		ret = exec_fault(g, p, fault);
	atomic_fetch_sub_explicit(&p->inflight, 1, memory_order_release);
	run->plan = NULL;
	return ret;
}

void engine_session_stats(const engine_session *s, struct engine_stats *out)
{
	int i;

	*out = s->stats;
	out->plan_evictions = s->plans.evictions;
	out->plans_cached = s->plans.n;
	out->plan_bytes = 0;
	for (i = 0; i < s->plans.n; i++)
		out->plan_bytes += s->plans.plans[i]->block_bytes;
	out->weight_bytes = s->weight_bytes;
}

int engine_session_profile(engine_session *s, const struct engine_input *inputs,
			   size_t n_inputs, struct engine_output *outputs, size_t n_outputs,
			   struct engine_step_time **times, int *n_times)
{
	const struct graph *g = &s->m->model->g;
	struct engine_step_time *t = NULL;
	double *ms = NULL;
	struct plan *p;
	int sig_len = 0, i, ret;

	*times = NULL;
	*n_times = 0;
	/* An ordinary run first: it plans (or finds the plan) and checks
	 * everything, so that the timed one below measures only launches. */
	ret = engine_run(s, inputs, n_inputs, outputs, n_outputs);
	if (ret < 0)
		return ret;
	ret = inputs_check(s, inputs, n_inputs, &sig_len);
	if (ret < 0)
		return ret;
	p = plan_cache_find(&s->plans, s->sig, sig_len, plan_sig_hash(s->sig, sig_len),
			    (const void *const *)s->in_ptr);
	if (!p)
		return cep__set_error(CEP_EINTERNAL, "the plan of the run just made is gone");
	ret = outputs_check(s, p, outputs, n_outputs);
	if (ret < 0)
		return ret;
	ms = calloc((size_t)p->n_steps + 1, sizeof(*ms));
	t = calloc((size_t)p->n_steps + 1, sizeof(*t));
	if (!ms || !t) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory profiling a run");
		goto out;
	}
	ret = exec_profile(g, p, s->be, s->stream, (const void *const *)s->in_ptr,
			   (void *const *)s->out_ptr, ms);
	if (ret < 0)
		goto out;
	for (i = 0; i < p->n_steps; i++) {
		const struct graph_node *gn = &g->nodes[p->steps[i].node];
		const struct op_node *node = &gn->op;

		/* Fused nodes have no name of their own: their output's. */
		t[i].node = node->name && node->name[0] ? node->name :
			    gn->out[0] >= 0 ? g->values[gn->out[0]].name : "";
		t[i].op_type = node->op_type;
		t[i].ms = ms[i];
	}
	*times = t;
	*n_times = p->n_steps;
	t = NULL;
out:
	free(ms);
	free(t);
	return ret;
}
