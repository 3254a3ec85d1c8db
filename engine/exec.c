/*
 * exec.c — the executor (engine/exec.h). A run is: copy the inputs into
 * the plan's block, launch the steps in order (or replay them once
 * captured), copy the wanted outputs out, and wait (exec_run) or return
 * at once and check for a device fault once the work has completed
 * (exec_submit, exec_fault). Everything it touches was
 * placed by the planner, so nothing here allocates after the first run.
 * A control step (If, Loop, Scan) runs its subplans' steps here, as
 * engine/exec_ctrl.c hands them out.
 */
#include "engine/exec.h"

#include <stdlib.h>
#include <string.h>

int exec_host_eval(const struct op_node *node, const struct op_kernel *k,
		   const struct op_tensor *in, int n_in, struct op_tensor *out,
		   int n_out)
{
	struct op_call *call = NULL;
	size_t ws = 0;
	int i, ret = 0;

	for (i = 0; i < n_out; i++)
		out[i].data = NULL;
	/* The call is large (its params block): keep it off small stacks. */
	call = calloc(1, sizeof(*call));
	if (!call)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (i = 0; i < n_out; i++) {
		size_t bytes = op_tensor_bytes(&out[i]);

		out[i].data = malloc(bytes ? bytes : 1);
		if (!out[i].data) {
			ret = cep__set_error(CEP_ENOMEM, "%s: out of memory for %zu bytes",
					     node->op_type, bytes);
			goto out;
		}
	}
	call->node = node;
	call->n_in = n_in;
	call->n_out = n_out;
	call->in = in;
	call->out = out;
	if (k->prepare) {
		ret = k->prepare(call, &ws);
		if (ret < 0)
			goto out;
	}
	if (ws) {
		call->workspace = malloc(ws);
		if (!call->workspace) {
			ret = cep__set_error(CEP_ENOMEM, "%s: out of memory for a workspace of %zu bytes",
					     node->op_type, ws);
			goto out;
		}
		call->workspace_bytes = ws;
	}
	ret = k->run(call);
out:
	if (ret < 0) {
		for (i = 0; i < n_out; i++) {
			free(out[i].data);
			out[i].data = NULL;
		}
	}
	free(call->workspace);
	free(call);
	return ret;
}

/* The graph and step whose launch is call, among p's steps and those of
 * its subplans (g is p's graph); false when none is. */
static bool call_find(const struct graph *g, const struct plan *p, const struct op_call *call,
		      const struct graph **sg, int *node)
{
	int i, j;

	for (i = 0; call && i < p->n_steps; i++) {
		const struct plan_ctrl *c = p->steps[i].ctrl;

		if (&p->steps[i].call == call) {
			*sg = g;
			*node = p->steps[i].node;
			return true;
		}
		for (j = 0; c && j < c->n_plans; j++) {
			const struct graph *sub = c->l.sub[c->l.kind == CTRL_IF ? j : 0];

			if (c->plans[j] && call_find(sub, c->plans[j], call, sg, node))
				return true;
		}
	}
	return false;
}

static int launch_steps(const struct graph *g, struct plan *p, struct backend *be,
			struct backend_stream *s);

/* Runs control step st of a plan of g: its subplans' steps, as
 * exec_ctrl.c hands them out. Its own errors name the node, but a sync
 * that reports a bad index some kernel of a subplan met names that
 * kernel's node instead. */
static int ctrl_run(const struct graph *g, const struct plan_step *st, struct backend *be,
		    struct backend_stream *s)
{
	const struct plan_ctrl *c = st->ctrl;
	const struct op_call *call;
	const struct graph *fg;
	struct exec_ctrl x;
	bool more = false;
	int ret, node, j;

	ret = exec__ctrl_begin(&x, g, st, be, s);
	while (ret == 0) {
		ret = exec__ctrl_next(&x, &more);
		if (ret < 0 || !more)
			break;
		ret = launch_steps(x.sub_g, x.p, be, s);
		if (ret < 0)
			return ret;
	}
	if (ret == 0)
		return 0;
	call = backend_stream_fault(be, s);
	for (j = 0; call && j < c->n_plans; j++) {
		const struct graph *sub = c->l.sub[c->l.kind == CTRL_IF ? j : 0];

		if (c->plans[j] && call_find(sub, c->plans[j], call, &fg, &node))
			return graph_node_wrap(fg, node, ret);
	}
	return graph_node_wrap(g, st->node, ret);
}

/* Launches step i of p on s (a control step runs its subplans), naming
 * the node of a failing one. */
static int step_launch(const struct graph *g, struct plan *p, int i, struct backend *be,
		       struct backend_stream *s)
{
	struct plan_step *st = &p->steps[i];
	int ret;

	cep__clear_error();
	if (st->ctrl)
		return ctrl_run(g, st, be, s);
	ret = backend_launch(be, s, st->kernel->run, &st->call);
	return ret < 0 ? graph_node_wrap(g, st->node, ret) : 0;
}

/* Launches every step of p on s, naming the node of a failing one. */
static int launch_steps(const struct graph *g, struct plan *p, struct backend *be,
			struct backend_stream *s)
{
	int i, ret;

	for (i = 0; i < p->n_steps; i++) {
		ret = step_launch(g, p, i, be, s);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Records p's steps into a graph of the backend, kept in p->graph. */
static int capture_steps(const struct graph *g, struct plan *p, struct backend *be,
			 struct backend_stream *s)
{
	struct backend_graph *graph = NULL;
	int ret, end;

	ret = backend_graph_begin(be, s);
	if (ret < 0)
		return ret;
	ret = launch_steps(g, p, be, s);
	/* Capture must end even after a failure, or the stream stays in it. */
	end = backend_graph_end(be, s, &graph);
	if (ret == 0)
		ret = end;
	if (ret < 0) {
		backend_graph_free(be, graph);
		return ret;
	}
	p->graph = graph;
	return 0;
}

/* The node whose launch is call (in p or a subplan), wrapped around the
 * error ret. */
static int fault_blame(const struct graph *g, const struct plan *p,
		       const struct op_call *call, int ret)
{
	const struct graph *fg;
	int node;

	if (call_find(g, p, call, &fg, &node))
		return graph_node_wrap(fg, node, ret);
	return ret;
}

bool exec_captures_next(const struct plan *p, const struct backend *be)
{
	return !p->graph && !p->capture_error && (be->caps & BACKEND_CAP_GRAPHS) &&
	       p->runs >= 1 && p->n_steps > 0;
}

int exec_queue_steps(const struct graph *g, struct plan *p, struct backend *be,
		      struct backend_stream *s)
{
	int ret;

	/* The first run goes eagerly (lazy set-up inside kernels must not be
	 * captured); the second is captured; later ones replay. */
	if (exec_captures_next(p, be)) {
		ret = capture_steps(g, p, be, s);
		/* A plan that cannot be captured still runs: eagerly, for good,
		 * keeping why for the stats. Nothing ran during the capture,
		 * and a real fault of a step shows again in the eager launch. */
		if (ret < 0) {
			p->capture_error = strdup(cep_last_error());
			if (!p->capture_error)
				return cep__set_error(CEP_ENOMEM, NULL);
			cep__clear_error();
		} else {
			p->captures++;
		}
	}
	if (p->graph) {
		ret = backend_graph_replay(be, p->graph, s);
		p->replays += ret == 0;
		return ret;
	}
	ret = launch_steps(g, p, be, s);
	p->eager_runs += ret == 0;
	return ret;
}

/* Copies in, steps, copies out, queued on s. */
static int exec_queue(const struct graph *g, struct plan *p, struct backend *be,
		      struct backend_stream *s, const void *const *inputs,
		      void *const *outputs)
{
	int i, ret;

	for (i = 0; i < p->n_inputs; i++) {
		ret = backend_copy_h2d(be, s, p->inputs[i].dev, inputs[i], p->inputs[i].bytes);
		if (ret < 0)
			return ret;
	}
	ret = exec_queue_steps(g, p, be, s);
	if (ret < 0)
		return ret;
	for (i = 0; i < p->n_outputs; i++) {
		if (!outputs[i])
			continue;
		ret = backend_copy_d2h(be, s, outputs[i], p->outputs[i].dev, p->outputs[i].bytes);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int exec_run(const struct graph *g, struct plan *p, struct backend *be,
	     struct backend_stream *s, const void *const *inputs,
	     void *const *outputs)
{
	int ret;

	ret = exec_queue(g, p, be, s, inputs, outputs);
	if (ret < 0)
		return ret;
	ret = backend_stream_sync(be, s);
	/* A sync that failed because a device kernel met a bad index names
	 * the node whose launch latched it. */
	if (ret < 0)
		return fault_blame(g, p, backend_stream_fault(be, s), ret);
	p->runs++;
	return 0;
}

int exec_profile(const struct graph *g, struct plan *p, struct backend *be,
		 struct backend_stream *s, const void *const *inputs,
		 void *const *outputs, double *step_ms)
{
	struct backend_event **ev;
	int i, ret = 0;

	ev = calloc((size_t)p->n_steps + 1, sizeof(*ev));
	if (!ev)
		return cep__set_error(CEP_ENOMEM, "out of memory profiling a run");
	for (i = 0; i <= p->n_steps && ret == 0; i++)
		ret = backend_timer_new(be, &ev[i]);
	for (i = 0; i < p->n_inputs && ret == 0; i++)
		ret = backend_copy_h2d(be, s, p->inputs[i].dev, inputs[i], p->inputs[i].bytes);
	/* Step by step, never replayed: a timer between every two launches. */
	for (i = 0; i < p->n_steps && ret == 0; i++) {
		struct plan_step *st = &p->steps[i];

		ret = backend_event_record(be, ev[i], s);
		if (ret == 0 && st->ctrl)
			ret = step_launch(g, p, i, be, s);
		else if (ret == 0)
			ret = backend_launch(be, s, st->kernel->run, &st->call);
		if (ret < 0 && !st->ctrl)
			ret = graph_node_wrap(g, st->node, ret);
	}
	if (ret == 0)
		ret = backend_event_record(be, ev[p->n_steps], s);
	for (i = 0; i < p->n_outputs && ret == 0; i++) {
		if (outputs[i])
			ret = backend_copy_d2h(be, s, outputs[i], p->outputs[i].dev,
					       p->outputs[i].bytes);
	}
	if (ret == 0) {
		ret = backend_stream_sync(be, s);
		if (ret < 0)
			ret = fault_blame(g, p, backend_stream_fault(be, s), ret);
	}
	for (i = 0; i < p->n_steps && ret == 0; i++)
		ret = backend_event_elapsed(be, ev[i], ev[i + 1], &step_ms[i]);
	for (i = 0; i <= p->n_steps; i++)
		backend_event_free(be, ev[i]);
	free(ev);
	return ret;
}

int exec_submit(const struct graph *g, struct plan *p, struct backend *be,
		struct backend_stream *s, const void *const *inputs,
		void *const *outputs)
{
	int ret = exec_queue(g, p, be, s, inputs, outputs);

	if (ret == 0)
		p->runs++;
	return ret;
}

int exec_submit_batch(const struct graph *g, struct plan *p, struct backend *be,
		      struct backend_stream *s, size_t n, const int64_t *rows,
		      const void *const *inputs, void *const *outputs)
{
	int64_t total = 0;
	size_t k, at;
	int i, ret;

	for (k = 0; k < n; k++)
		total += rows[k];
	/* Each run's rows are a contiguous slice of every input and output:
	 * the row's bytes are the tensor's over the batch. */
	for (i = 0; i < p->n_inputs && total > 0; i++) {
		size_t row = p->inputs[i].bytes / (size_t)total;

		for (k = 0, at = 0; k < n; at += row * (size_t)rows[k], k++) {
			if (rows[k] == 0 || row == 0)
				continue;
			ret = backend_copy_h2d(be, s, (unsigned char *)p->inputs[i].dev + at,
					       inputs[k * (size_t)p->n_inputs + (size_t)i],
					       row * (size_t)rows[k]);
			if (ret < 0)
				return ret;
		}
	}
	ret = exec_queue_steps(g, p, be, s);
	if (ret < 0)
		return ret;
	for (i = 0; i < p->n_outputs && total > 0; i++) {
		size_t row = p->outputs[i].bytes / (size_t)total;

		for (k = 0, at = 0; k < n; at += row * (size_t)rows[k], k++) {
			void *dst = outputs[k * (size_t)p->n_outputs + (size_t)i];

			if (!dst || rows[k] == 0 || row == 0)
				continue;
			ret = backend_copy_d2h(be, s, dst, (unsigned char *)p->outputs[i].dev + at,
					       row * (size_t)rows[k]);
			if (ret < 0)
				return ret;
		}
	}
	p->runs++;
	return 0;
}

int exec_fault(const struct graph *g, const struct plan *p,
	       const struct backend_fault *f)
{
	const struct op_call *call;
	int ret = backend_fault_error(f, &call);

	return ret < 0 ? fault_blame(g, p, call, ret) : 0;
}
