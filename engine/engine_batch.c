/*
 * engine_batch.c — cross-client batches (engine/engine.h):
 * engine_run_submit_batch() takes several clients' runs, each checked
 * against the model already (engine_run_check()), checks them against
 * each other, stacks their inputs into one run of the summed rows on the
 * session's stream, and gives each run back its rows of the outputs, its
 * fence and its fault record. Whether a model's runs may be merged at all
 * is decided at load (engine_model.c).
 *
 * The top of the engine's run path: it plans through engine_plans.c and
 * counts and fails runs through engine_run.c's helpers; nothing calls
 * into it but callers of engine.h. The scratch it uses (s->b_rows, b_in,
 * b_out) is allocated when the session opens, for max_batch runs.
 */
#include "engine/engine_priv.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "engine/exec.h"
#include "engine/model.h"
#include "engine/shape.h"

/* ------------------------------------------------------------------ batches */

/* Takes input x of run k for graph input i: its rows, and its shape, which
 * must be run 0's (kept in s->in_t[i]) but for dimension 0. x has passed
 * engine_run_check(), so it has the model's dtype and rank (1 or more: the
 * model is batchable) and the same rows as the run's other inputs (their
 * dimension 0 is one symbol); only how it compares with the other runs is
 * left to check. */
static int batch_input_take(engine_session *s, size_t k, int i, const struct engine_input *x)
{
	const struct graph *g = &s->m->model->g;
	const char *name = g->values[g->inputs[i]].name;
	struct op_tensor *t = &s->in_t[i];
	int d;

	if (k == 0) {
		memset(t, 0, sizeof(*t));
		t->dtype = x->dtype;
		t->rank = x->rank;
		memcpy(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	}
	for (d = 1; d < x->rank; d++) {
		if (x->dims[d] != t->dims[d])
			return cep__set_error(CEP_ESHAPE, "run %zu of the batch: input '%s' has "
					      "dimension %d %lld, run 0's has %lld", k, name,
					      d, (long long)x->dims[d], (long long)t->dims[d]);
	}
	if (i == 0)
		s->b_rows[k] = x->dims[0];
	return 0;
}

/* Takes the runs' inputs, checking them against each other, and fills
 * s->b_rows, s->b_in (per run, in graph order) and, for the inputs
 * stacked along dimension 0 (*total rows), s->in_t and the signature
 * (*sig_len entries), once the stacked shapes are found to bind to the
 * model's. The stacked inputs have no data: a batch's plan is keyed by
 * shapes only. */
static int batch_inputs_take(engine_session *s, const struct engine_batch_run *runs,
			     size_t n, int *sig_len, int64_t *total, size_t *bad)
{
	const struct graph *g = &s->m->model->g;
	size_t k, n_in = (size_t)g->n_inputs;
	int i, d, q = 0, ret;

	*total = 0;
	for (k = 0; k < n; k++) {
		const struct engine_batch_run *r = &runs[k];

		*bad = k;
		for (i = 0; i < g->n_inputs; i++) {
			const struct engine_input *x =
				engine__input_find(r->inputs, r->n_inputs, g->values[g->inputs[i]].name);

			ret = batch_input_take(s, k, i, x);
			if (ret < 0)
				return ret;
			s->b_in[k * n_in + (size_t)i] = x->data;
		}
		*total += s->b_rows[k];
	}
	/* What fails from here on is the batch's: the stacked shapes may not
	 * bind where the batch's symbol is another dimension's too. */
	*bad = n;
	shape_binding_reset(&s->bind);
	for (i = 0; i < g->n_inputs; i++) {
		struct op_tensor *t = &s->in_t[i];

		t->dims[0] = *total;
		t->data = NULL;
		s->in_ptr[i] = NULL;
		ret = shape_bind_input(g, g->inputs[i], t->rank, t->dims, &s->bind);
		if (ret < 0)
			return ret;
		s->sig[q++] = t->rank;
		for (d = 0; d < t->rank; d++)
			s->sig[q++] = t->dims[d];
	}
	*sig_len = q;
	return 0;
}

/* Checks the plan of a batch of total rows (every output has them as
 * dimension 0) and each run's outputs (whose names engine_run_check() has
 * checked) for room for its rows, points s->b_out at them, and describes
 * them. */
static int batch_outputs_place(engine_session *s, const struct plan *p,
			       const struct engine_batch_run *runs, size_t n, int64_t total,
			       size_t *bad)
{
	const struct graph *g = &s->m->model->g;
	size_t k, j, n_out = (size_t)g->n_outputs;
	int i;

	for (i = 0; i < g->n_outputs; i++) {
		const struct op_tensor *t = &p->outputs[i].t;

		if (t->rank < 1 || t->dims[0] != total)
			return cep__set_error(CEP_ESHAPE, "output '%s' has %lld rows for a batch "
					      "of %lld: the model does not keep the runs' rows "
					      "apart", g->values[g->outputs[i]].name,
					      (long long)(t->rank < 1 ? 0 : t->dims[0]),
					      (long long)total);
	}
	for (k = 0; k < n; k++) {
		const struct engine_batch_run *r = &runs[k];
		void **slot = &s->b_out[k * n_out];

		*bad = k;
		for (i = 0; i < g->n_outputs; i++)
			slot[i] = NULL;
		for (j = 0; j < r->n_outputs; j++) {
			struct engine_output *o = &r->outputs[j];
			size_t bytes;

			i = engine__output_index(g, o->name);
			bytes = total ? p->outputs[i].bytes / (size_t)total * (size_t)s->b_rows[k] : 0;
			if (o->capacity < bytes)
				return cep__set_error(CEP_ENOSPC, "run %zu of the batch: output '%s' "
						      "needs %zu bytes, %zu are given", k, o->name,
						      bytes, o->capacity);
			if (bytes && !o->data)
				return cep__set_error(CEP_EINVAL, "run %zu of the batch: output '%s' "
						      "has no buffer", k, o->name);
			/* A marker for an empty one: the slot is taken, and exec
			 * copies nothing for no rows. */
			slot[i] = o->data ? o->data : (void *)o;
			o->dtype = p->outputs[i].t.dtype;
			o->rank = p->outputs[i].t.rank;
			memcpy(o->dims, p->outputs[i].t.dims, sizeof(o->dims));
			o->dims[0] = s->b_rows[k];
			o->bytes = bytes;
		}
	}
	*bad = n;
	return 0;
}

/* The host function of a run of a batch that takes its fault record from
 * another run's (engine_run_submit_batch()), which the device has written
 * and whose own host function comes later. */
static void batch_run_done(void *arg)
{
	struct engine_run *run = arg;

	memcpy(run->fault_to, run->fault_from, sizeof(*run->fault_to));
	/* The run may be reused once done is called: nothing after it. */
	run->done(run->arg);
}

int engine_run_submit_batch(engine_session *s, const struct engine_batch_run *runs,
			    size_t n, unsigned flags, size_t *bad)
{
	const struct graph *g = &s->m->model->g;
	struct plan_env env = {
		.g = g, .be = s->be, .stream = s->stream,
		.const_dev = (void *const *)s->const_dev,
		.call_flags = s->call_flags,
	};
	struct plan *p;
	size_t k, target = n;
	int64_t total = 0;
	bool had_error, checked = false;
	int sig_len = 0, ret;

	cep__clear_error();
	*bad = n;
	if (n < 1 || n > (size_t)s->max_batch)
		return cep__set_error(CEP_EINVAL, "a batch of %zu runs; this session takes 1 to %d",
				      n, s->max_batch);
	ret = engine_model_batchable(s->m);
	if (ret < 0)
		return ret;
	for (k = 0; k < n; k++)
		memset(runs[k].run, 0, sizeof(*runs[k].run));
	ret = batch_inputs_take(s, runs, n, &sig_len, &total, bad);
	if (ret < 0)
		return ret;
	p = plan_cache_find(&s->plans, s->sig, sig_len, plan_sig_hash(s->sig, sig_len), NULL);
	if ((flags & ENGINE_SUBMIT_WARM) &&
	    (!p || p->runs == 0 || exec_captures_next(p, s->be)))
		return ENGINE_RUN_COLD;
	if (!p) {
		ret = engine__plan_make(s, &env, sig_len, &p);
		if (ret < 0)
			return ret;
	} else {
		s->stats.plan_hits++;
	}
	ret = batch_outputs_place(s, p, runs, n, total, bad);
	if (ret < 0)
		return ret;
	atomic_fetch_add_explicit(&p->inflight, (uint32_t)n, memory_order_relaxed);
	for (k = 0; k < n; k++)
		runs[k].run->plan = p;
	had_error = p->capture_error != NULL;
	ret = exec_submit_batch(g, p, s->be, s->stream, n, s->b_rows,
				(const void *const *)s->b_in, (void *const *)s->b_out);
	engine__capture_note(s, p, had_error);
	/* The device's fault record is copied back once, into the last run
	 * that checks; the runs before it take theirs from there, in host
	 * functions that come before that run's own, which frees the record. */
	for (k = n; k-- > 0;) {
		if (runs[k].fence->fault) {
			target = k;
			break;
		}
	}
	if (ret == 0 && target < n) {
		ret = backend_stream_fault_save(s->be, s->stream, runs[target].fence->fault);
		checked = ret > 0;
		ret = ret > 0 ? 0 : ret;
	}
	for (k = 0; k < n && ret == 0; k++) {
		const struct engine_fence *f = runs[k].fence;
		struct engine_run *run = runs[k].run;

		run->checked = checked && f->fault;
		if (run->checked && k != target) {
			run->fault_from = runs[target].fence->fault;
			run->fault_to = f->fault;
		}
		if (f->seq && !run->checked) {
			ret = backend_stream_write_value64(s->be, s->stream, f->seq, f->value);
			run->seq_queued = ret == 0;
			if (ret == CEP_ENOTSUP) {
				cep__clear_error();
				ret = 0;
			}
		}
	}
	if (ret < 0) {
		for (k = 0; k < n; k++)
			engine__run_fail(runs[k].run, ret);
	} else {
		engine__run_count(s, p);
		s->stats.batches++;
		s->stats.batched_runs += n;
	}
	for (k = 0; k < n; k++) {
		const struct engine_fence *f = runs[k].fence;
		struct engine_run *run = runs[k].run;
		backend_host_fn fn = f->done;
		void *arg = f->arg;

		if (run->fault_to) {
			run->done = f->done;
			run->arg = f->arg;
			fn = batch_run_done;
			arg = run;
		}
		ret = backend_stream_host_fn(s->be, s->stream, fn, arg);
		if (ret < 0) {
			/* As for one run: wait for what was queued, then
			 * complete here. */
			engine__run_fail(run, ret);
			(void)backend_stream_sync(s->be, s->stream);
			fn(arg);
		}
	}
	return 0;
}
