/*
 * engine_session.c — sessions (engine/engine.h): a model opened on a
 * backend with a stream, an account entry for its memory, a home for the
 * model's constants (engine_weights.c), a plan cache (engine_plans.c)
 * and the scratch every run needs (the signature buffer, the symbol
 * bindings, the pointer arrays), all allocated here, so that a run whose
 * plan is cached allocates nothing.
 *
 * A session opens only a model loaded for its precision: fp32 and tf32
 * sessions share the file's graph, an fp16 or bf16 session needs the
 * model converted for it on its backend's kind (engine/precision.h).
 *
 * Above models, weights and plans, below runs (engine_run.c) and batches
 * (engine_batch.c), which only use the session's fields.
 */
#include "engine/engine_priv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/model.h"
#include "engine/precision.h"

/* Opens the session's account: the caller's, or a private one, and the
 * session's limit in it. */
static int account_open(engine_session *s, const struct engine_session_options *o)
{
	int ret;

	if (o->account) {
		s->acc = o->account;
		s->owner = o->owner;
		/* A session of the shared owner (one serving many owners,
		 * such as batches of several clients' runs): no limit but the
		 * global one, no entry of its own. */
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
	/* Even without a limit: the entry makes the session visible in the
	 * account's breakdown before it holds any memory of its own. */
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
	ret = engine__weights_place(s);
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
	engine__plans_close(s);
	/* Still charged only through a caller's bug; then the entry stays,
	 * visible in the account's breakdown. The shared owner's entry is
	 * not the session's to forget. */
	if (s->acc && !s->shared_owner)
		(void)account_forget(s->acc, s->owner);
	engine__weights_leave(s);
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

engine_model *engine_session_model(const engine_session *s)
{
	return s->m;
}

cep_precision engine_session_precision(const engine_session *s)
{
	return s->precision;
}

void engine_session_stats(const engine_session *s, struct engine_stats *out)
{
	int i;

	*out = s->stats;
	out->plan_evictions = s->plans.evictions;
	out->plans_cached = s->plans.n;
	out->plan_bytes = 0;
	for (i = 0; i < s->plans.n; i++)
		out->plan_bytes += s->plans.plans[i]->block_bytes + s->plans.plans[i]->ctrl_bytes;
	out->weight_bytes = s->weight_bytes;
}
