/*
 * engine_run.c — single runs of a session (engine/engine.h): binding the
 * inputs, which engine_run_check() has checked and which are trusted here,
 * to the model's (their shapes make the plan's signature), finding
 * or building the plan (engine_plans.c), pointing the outputs at the
 * caller's buffers and describing them, and handing the plan to the
 * executor: at once and waiting (engine_run()), queued behind a fence
 * (engine_run_submit(), ended by engine_run_complete()), described only
 * (engine_run_describe()) or profiled launch by launch.
 *
 * Above sessions and plans; batches (engine_batch.c) use its helpers
 * (finding a tensor by name, counting and failing runs), and it calls
 * nothing of theirs.
 */
#include "engine/engine_priv.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/exec.h"
#include "engine/model.h"

/* --------------------------------------------------------------------- run */

const struct engine_input *engine__input_find(const struct engine_input *in, size_t n,
					      const char *name)
{
	size_t j;

	for (j = 0; j < n; j++) {
		if (strcmp(in[j].name, name) == 0)
			return &in[j];
	}
	return NULL;
}

int engine__output_index(const struct graph *g, const char *name)
{
	int i;

	for (i = 0; i < g->n_outputs; i++) {
		if (strcmp(name, g->values[g->outputs[i]].name) == 0)
			break;
	}
	return i;
}

int engine__inputs_bind(engine_session *s, const struct engine_input *in, size_t n_in)
{
	const struct graph *g = &s->m->model->g;
	int i, k = 0, d;

	for (i = 0; i < g->n_inputs; i++) {
		const struct engine_input *x = engine__input_find(in, n_in,
								  g->values[g->inputs[i]].name);
		struct op_tensor *t = &s->in_t[i];

		memset(t, 0, sizeof(*t));
		t->dtype = x->dtype;
		t->rank = x->rank;
		if (x->rank > 0)
			memcpy(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
		s->in_ptr[i] = x->data;
		/* The planner reads an input's values only where a shape needs
		 * them, and never writes them. */
		t->data = (void *)x->data;
		s->sig[k++] = x->rank;
		for (d = 0; d < x->rank; d++)
			s->sig[k++] = x->dims[d];
	}
	return k;
}

/* Fills in the dtype, shape and bytes of each output asked for. */
static void outputs_describe(const engine_session *s, const struct plan *p,
			     struct engine_output *out, size_t n_out)
{
	const struct graph *g = &s->m->model->g;
	size_t j;

	for (j = 0; j < n_out; j++) {
		int i = engine__output_index(g, out[j].name);

		out[j].dtype = p->outputs[i].t.dtype;
		out[j].rank = p->outputs[i].t.rank;
		memcpy(out[j].dims, p->outputs[i].t.dims, sizeof(out[j].dims));
		out[j].bytes = p->outputs[i].bytes;
	}
}

/* Points s->out_ptr at the caller's buffers for the outputs asked for,
 * whose names engine_run_check() has checked. Room too small for an
 * output is CEP_ENOSPC, reported with every output described so the
 * caller can make room; a buffer missing where the plan writes bytes is
 * CEP_EINVAL. */
static int outputs_place(engine_session *s, const struct plan *p,
			 struct engine_output *out, size_t n_out)
{
	const struct graph *g = &s->m->model->g;
	size_t j;
	bool too_small = false;
	int i;

	for (i = 0; i < g->n_outputs; i++)
		s->out_ptr[i] = NULL;
	for (j = 0; j < n_out; j++) {
		i = engine__output_index(g, out[j].name);
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

/* run_prepare() flag: only describe; a cached plan is enough, whether or
 * not it has run or is about to be captured. */
#define RUN_DESCRIBE (1u << 8)

/* What a run needs before anything is queued: the inputs bound, the plan
 * found or built (not with ENGINE_SUBMIT_WARM: then a plan that is not
 * cached, or has never run, is ENGINE_RUN_COLD), the outputs placed. */
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
	int sig_len, ret;

	cep__clear_error();
	sig_len = engine__inputs_bind(s, inputs, n_inputs);
	hash = plan_sig_hash(s->sig, sig_len);
	p = plan_cache_find(&s->plans, s->sig, sig_len, hash,
			    (const void *const *)s->in_ptr);
	if (p && (flags & ENGINE_SUBMIT_WARM) && !(flags & RUN_DESCRIBE) &&
	    (p->runs == 0 || exec_captures_next(p, s->be) || p->waits))
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
	ret = outputs_place(s, p, outputs, n_outputs);
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

int engine_session_profile(engine_session *s, const struct engine_input *inputs,
			   size_t n_inputs, struct engine_output *outputs, size_t n_outputs,
			   struct engine_step_time **times, int *n_times)
{
	const struct graph *g = &s->m->model->g;
	struct engine_step_time *t = NULL;
	double *ms = NULL;
	struct plan *p;
	int sig_len, i, ret;

	*times = NULL;
	*n_times = 0;
	/* An ordinary run first: it plans (or finds the plan) and places the
	 * outputs, so that the timed one below measures only launches. */
	ret = engine_run(s, inputs, n_inputs, outputs, n_outputs);
	if (ret < 0)
		return ret;
	sig_len = engine__inputs_bind(s, inputs, n_inputs);
	p = plan_cache_find(&s->plans, s->sig, sig_len, plan_sig_hash(s->sig, sig_len),
			    (const void *const *)s->in_ptr);
	if (!p)
		return cep__set_error(CEP_EINTERNAL, "the plan of the run just made is gone");
	ret = outputs_place(s, p, outputs, n_outputs);
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
