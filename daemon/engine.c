/*
 * engine.c — the daemon-facing engine (daemon/engine.h): models with their
 * reference counts and input/output descriptions, sessions with their
 * backend homes for weights and their plan caches, and the run path, which
 * checks what the caller passed, finds or builds the plan (for the inputs'
 * shapes, and for the values of the few small inputs that a shape depends
 * on: daemon/plan.h), and hands it to the executor.
 *
 * Everything a run needs beyond the plan (the signature buffer, the symbol
 * bindings, the pointer arrays) is allocated when the session opens, so a
 * run that hits the cache allocates nothing.
 */
#include "engine.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "model.h"
#include "plan.h"
#include "shape.h"

struct engine_model {
	atomic_int refs;
	struct model *model;
	struct engine_tensor_info *inputs;  /* (graph inputs) */
	struct engine_tensor_info *outputs; /* (graph outputs) */
};

struct engine_session {
	engine_model *m;
	struct backend *be;
	struct backend_stream *stream;
	void **const_dev;            /* per value: its constant on the backend */
	void *weights;               /* one allocation for them, or NULL */
	size_t weight_bytes;
	struct plan_cache plans;
	struct shape_binding bind;   /* per symbol */
	int64_t *sig;                /* inputs * (1 + CEP_MAX_RANK) */
	struct op_tensor *in_t;      /* per graph input */
	const void **in_ptr;         /* per graph input */
	void **out_ptr;              /* per graph output */
	uint64_t memory_limit;       /* bytes; 0: none */
	struct engine_stats stats;
};

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

int engine_model_load(const void *bytes, size_t len, int dir_fd,
		      engine_model **out)
{
	engine_model *m = NULL;
	const struct graph *g;
	int i, ret;

	*out = NULL;
	cep__clear_error();
	m = calloc(1, sizeof(*m));
	if (!m)
		return cep__set_error(CEP_ENOMEM, NULL);
	atomic_init(&m->refs, 1);
	ret = model_load(bytes, len, dir_fd, &m->model);
	if (ret < 0)
		goto out;
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

/* ---------------------------------------------------------------- sessions */

/* Whether constant value v is read at run time (by a node or as an output). */
static bool const_needed(const struct graph_value *v)
{
	return (v->flags & GRAPH_VALUE_CONST) &&
	       (v->n_uses > 0 || (v->flags & GRAPH_VALUE_OUTPUT));
}

/* Gives each needed constant a home on the backend: in place on a backend
 * of host memory, else one allocation holding them all, uploaded once. */
static int weights_place(engine_session *s)
{
	const struct graph *g = &s->m->model->g;
	size_t total = 0, at = 0;
	int v, ret;

	for (v = 0; v < g->n_values; v++) {
		if (!const_needed(&g->values[v]))
			continue;
		if (s->be->caps & BACKEND_CAP_HOST_MEMORY)
			s->const_dev[v] = g->values[v].t.data;
		else
			total += (g->values[v].bytes + BACKEND_ALIGN - 1) & ~(size_t)(BACKEND_ALIGN - 1);
	}
	if (s->be->caps & BACKEND_CAP_HOST_MEMORY)
		return 0;
	if (s->memory_limit && total > s->memory_limit)
		return cep__set_error(CEP_ELIMIT, "the model's weights need %zu bytes, the session's "
				      "limit is %" PRIu64, total, s->memory_limit);
	ret = backend_mem_alloc(s->be, total, &s->weights);
	if (ret < 0)
		return ret;
	s->weight_bytes = total;
	for (v = 0; v < g->n_values; v++) {
		const struct graph_value *val = &g->values[v];

		if (!const_needed(val))
			continue;
		s->const_dev[v] = (unsigned char *)s->weights + at;
		ret = backend_copy_h2d(s->be, s->stream, s->const_dev[v], val->t.data, val->bytes);
		if (ret < 0)
			return ret;
		at += (val->bytes + BACKEND_ALIGN - 1) & ~(size_t)(BACKEND_ALIGN - 1);
	}
	return backend_stream_sync(s->be, s->stream);
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
	if (o.precision == CEP_PRECISION_FP16 || o.precision == CEP_PRECISION_BF16)
		return cep__set_error(CEP_EUNSUPPORTED, "precision %s is not implemented yet",
				      o.precision == CEP_PRECISION_FP16 ? "fp16" : "bf16");
	s = calloc(1, sizeof(*s));
	if (!s)
		return cep__set_error(CEP_ENOMEM, NULL);
	engine_model_ref(m);
	s->m = m;
	s->be = be;
	s->memory_limit = o.memory_limit;
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
	backend_mem_free(s->be, s->weights, s->weight_bytes);
	backend_stream_free(s->be, s->stream);
	free(s->const_dev);
	free(s->bind.vals);
	free(s->bind.from);
	free(s->sig);
	free(s->in_t);
	free(s->in_ptr);
	free(s->out_ptr);
	engine_model_unref(s->m);
	free(s);
}

engine_model *engine_session_model(const engine_session *s)
{
	return s->m;
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

/* Backend memory the session holds: weights and cached plans. */
static uint64_t session_bytes(const engine_session *s)
{
	uint64_t used = s->weight_bytes;
	int i;

	for (i = 0; i < s->plans.n; i++)
		used += s->plans.plans[i]->block_bytes;
	return used;
}

/* What the session's memory limit leaves for a new plan; 0: no limit. */
static size_t room_left(const engine_session *s)
{
	uint64_t used = session_bytes(s);

	if (!s->memory_limit)
		return 0;
	return used < s->memory_limit ? (size_t)(s->memory_limit - used) : 1;
}

/* Builds and caches the plan for the signature in s->sig and the inputs
 * in s->in_t (whose values key it where a shape needs them). A full cache
 * gives up its least recently used plan first; a plan refused for the
 * session's memory limit is built again once older plans have made room,
 * if they can. */
static int plan_make(engine_session *s, struct plan_env *env, int sig_len, struct plan **out)
{
	size_t needed = 0;
	int ret;

	if (s->plans.n == s->plans.cap)
		plan_cache_evict(&s->plans, s->be);
	env->needed_bytes = &needed;
	env->max_block_bytes = room_left(s);
	ret = plan_build(env, s->in_t, s->sig, sig_len, out);
	if (ret == CEP_ELIMIT && needed && s->plans.n > 0) {
		while (s->plans.n > 0 && room_left(s) < needed)
			plan_cache_evict(&s->plans, s->be);
		if (room_left(s) >= needed) {
			env->max_block_bytes = room_left(s);
			ret = plan_build(env, s->in_t, s->sig, sig_len, out);
		}
	}
	if (ret < 0)
		return ret;
	plan_cache_insert(&s->plans, *out, s->be);
	s->stats.plans_built++;
	return 0;
}

int engine_run(engine_session *s, const struct engine_input *inputs, size_t n_inputs,
	       struct engine_output *outputs, size_t n_outputs)
{
	const struct graph *g = &s->m->model->g;
	struct plan_env env = {
		.g = g, .be = s->be, .stream = s->stream,
		.const_dev = (void *const *)s->const_dev,
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
	if (!p) {
		ret = plan_make(s, &env, sig_len, &p);
		if (ret < 0)
			return ret;
	} else {
		s->stats.plan_hits++;
	}
	ret = outputs_check(s, p, outputs, n_outputs);
	if (ret < 0)
		return ret;
	ret = exec_run(g, p, s->be, s->stream, (const void *const *)s->in_ptr,
		       (void *const *)s->out_ptr);
	if (ret < 0)
		return ret;
	outputs_describe(s, p, outputs, n_outputs);
	s->stats.runs++;
	s->stats.last_steps = p->n_steps;
	s->stats.last_folded = p->folded;
	return 0;
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
