/*
 * exec_ctrl.c — running a control step (engine/exec.h, internal part):
 * the host side of If, Loop and Scan. The executor (engine/exec.c) asks
 * exec__ctrl_next() for the subplan to run next and runs its steps; this
 * file does what lies between two runs, all queued on the run's stream:
 *   If: read the condition back (unless planning knew it), then copy the
 *     outer values into the branch's subplan and its outputs out.
 *   Loop: read M and the initial condition back where planning did not
 *     know them; per iteration write the iteration number and the
 *     condition (always true: the body runs only then) into the body,
 *     copy its scan outputs into their rows, read its condition back when
 *     the body computes it, and copy the carried values into the inputs of
 *     the next iteration's plan; last, the final values out.
 *   Scan: per iteration copy each scan input's slice in (strided where the
 *     axis is not the first) and each scan output's slice out, in the
 *     direction asked, and the states round; per batch row for Scan 8.
 * Reading back is a copy to the host and a stream sync: on a device, the
 * host waits there for everything queued before (the plan says so: its
 * waits flag). Copies between a subplan's outputs and its own inputs
 * never overlap: its inputs keep their bytes for the whole run and every
 * output is made by a node of its own (engine/model_graph.c).
 */
#include "engine/exec.h"

#include <inttypes.h>
#include <string.h>

/* A Loop body's condition input: it runs only while that is true. */
static const unsigned char cond_true = 1;

static int copy(const struct exec_ctrl *x, void *dst, const void *src, size_t bytes)
{
	if (dst == src || bytes == 0 || !dst)
		return 0;
	return backend_copy_d2d(x->be, x->s, dst, src, bytes);
}

/* count chunks of chunk bytes, src_stride and dst_stride apart. */
static int copy_strided(const struct exec_ctrl *x, unsigned char *dst, size_t dst_stride,
			const unsigned char *src, size_t src_stride, size_t count, size_t chunk)
{
	size_t i;
	int ret;

	if (!dst || count == 0 || chunk == 0)
		return 0;
	if (count == 1 || (dst_stride == chunk && src_stride == chunk))
		return copy(x, dst, src, count * chunk);
	for (i = 0; i < count; i++) {
		ret = copy(x, dst + i * dst_stride, src + i * src_stride, chunk);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Copies bytes of device memory at src to the host and waits for them. */
static int read_back(const struct exec_ctrl *x, void *dst, const void *src, size_t bytes)
{
	int ret = backend_copy_d2h(x->be, x->s, dst, src, bytes);

	if (ret == 0)
		ret = backend_stream_sync(x->be, x->s);
	return ret;
}

static size_t tensor_bytes(const struct op_tensor *t)
{
	return op_tensor_bytes(t);
}

/* Copies the node's values its subgraph which reads from outside into
 * subplan p, once per subplan and run. */
static int outer_copy(struct exec_ctrl *x, int which, struct plan *p)
{
	const struct graph *sg = x->c->l.sub[which];
	const struct graph_sub *gs = x->c->l.gs[which];
	int formal = sg->n_inputs - sg->n_outer, k, ret;

	if (x->primed == p)
		return 0;
	for (k = 0; k < sg->n_outer; k++) {
		const struct op_tensor *t = &x->st->call.in[gs->slot[k]];

		ret = copy(x, p->inputs[formal + k].dev, t->data, p->inputs[formal + k].bytes);
		if (ret < 0)
			return ret;
	}
	x->primed = p;
	return 0;
}

/* --------------------------------------------------------------------- If */

static int if_begin(struct exec_ctrl *x)
{
	struct plan_ctrl *c = x->c;
	int branch = c->branch, ret;

	if (branch < 0) {
		ret = read_back(x, &c->flag, x->st->call.in[0].data, 1);
		if (ret < 0)
			return ret;
		branch = c->flag ? 0 : 1;
	}
	if (!c->plans[branch])
		return cep__set_error(c->unplanned_err[branch], "the condition takes %s, which "
				      "could not be planned for these shapes: %s",
				      branch ? "else_branch" : "then_branch", c->unplanned[branch]);
	x->which = branch;
	x->p = c->plans[branch];
	return 0;
}

static int if_next(struct exec_ctrl *x, bool *more)
{
	const struct graph_node *node = &x->g->nodes[x->st->node];
	int k, ret;

	if (!x->ran) {
		x->ran = true;
		*more = true;
		return outer_copy(x, x->which, x->p);
	}
	for (k = 0; k < node->n_out; k++) {
		ret = copy(x, x->st->call.out[k].data, x->p->outputs[k].dev, x->p->outputs[k].bytes);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------- Loop */

static int loop_begin(struct exec_ctrl *x)
{
	struct plan_ctrl *c = x->c;
	const struct op_tensor *in = x->st->call.in;
	int cond0 = c->cond0, k, ret;

	x->max = INT64_MAX;
	if (c->has_m) {
		x->max = c->m;
		if (x->max < 0) {
			ret = read_back(x, &c->m_read, in[0].data, sizeof(c->m_read));
			if (ret < 0)
				return ret;
			x->max = c->m_read < 0 ? 0 : c->m_read;
		}
	}
	if (cond0 < 0) {
		ret = read_back(x, &c->flag, in[1].data, 1);
		if (ret < 0)
			return ret;
		cond0 = c->flag != 0;
	}
	if (cond0 && !c->has_m &&
	    (c->cond == CTRL_COND_KEEP || (c->cond == CTRL_COND_CONST && c->cond_value)))
		return cep__set_error(CEP_EUNSUPPORTED, "the loop never ends: it has no trip count "
				      "M, and its condition stays true");
	x->running = cond0 && x->max > 0;
	/* An earlier run's copies of iteration numbers may be pending. */
	x->counters_used = PLAN_CTRL_COUNTERS;
	x->p = c->plans[0];
	for (k = 0; x->running && k < c->l.n_state; k++) {
		ret = copy(x, x->p->inputs[2 + k].dev, in[2 + k].data, x->p->inputs[2 + k].bytes);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Queues iteration x->i's inputs into x->p. */
static int loop_prepare(struct exec_ctrl *x)
{
	struct plan_ctrl *c = x->c;
	int64_t *slot;
	int ret;

	if (x->i >= PLAN_LOOP_MAX_ITERATIONS)
		return cep__set_error(CEP_ELIMIT, "the loop ran %" PRId64 " iterations without "
				      "ending", x->i);
	if (c->uses_iter) {
		/* The host slot a copy reads must not change before it has. */
		if (x->counters_used == PLAN_CTRL_COUNTERS) {
			ret = backend_stream_sync(x->be, x->s);
			if (ret < 0)
				return ret;
			x->counters_used = 0;
		}
		slot = &c->counter[x->i % PLAN_CTRL_COUNTERS];
		*slot = x->i;
		x->counters_used++;
		ret = backend_copy_h2d(x->be, x->s, x->p->inputs[0].dev, slot, sizeof(*slot));
		if (ret < 0)
			return ret;
	}
	ret = backend_copy_h2d(x->be, x->s, x->p->inputs[1].dev, &cond_true, 1);
	if (ret < 0)
		return ret;
	x->ran = true;
	return outer_copy(x, 0, x->p);
}

/* Copies iteration x->i's results out of x->p and decides on the next. */
static int loop_collect(struct exec_ctrl *x, bool *again)
{
	struct plan_ctrl *c = x->c;
	const struct op_tensor *out = x->st->call.out;
	struct plan *p = x->p, *next;
	int n = c->l.n_state, k, ret;
	bool cond = true;

	for (k = 0; k < c->l.n_scan_out; k++) {
		const struct plan_io *o = &p->outputs[1 + n + k];
		unsigned char *dst = out[n + k].data;

		ret = copy(x, dst ? dst + (size_t)x->i * o->bytes : NULL, o->dev, o->bytes);
		if (ret < 0)
			return ret;
	}
	if (c->cond == CTRL_COND_COMPUTED) {
		ret = read_back(x, &c->flag, p->outputs[0].dev, 1);
		if (ret < 0)
			return ret;
		cond = c->flag != 0;
	} else if (c->cond == CTRL_COND_CONST) {
		cond = c->cond_value;
	}
	x->i++;
	*again = cond && x->i < x->max;
	if (!*again) {
		for (k = 0; k < n; k++) {
			ret = copy(x, out[k].data, p->outputs[1 + k].dev, p->outputs[1 + k].bytes);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	next = c->per_iter ? c->plans[x->i < c->n_plans ? x->i : c->n_plans - 1] : p;
	for (k = 0; k < n; k++) {
		ret = copy(x, next->inputs[2 + k].dev, p->outputs[1 + k].dev, p->outputs[1 + k].bytes);
		if (ret < 0)
			return ret;
	}
	x->p = next;
	return 0;
}

static int loop_next(struct exec_ctrl *x, bool *more)
{
	const struct op_tensor *in = x->st->call.in, *out = x->st->call.out;
	bool again = x->running;
	int k, ret;

	if (x->ran) {
		ret = loop_collect(x, &again);
		if (ret < 0)
			return ret;
	} else if (!again) {
		/* No iteration: the carried values leave as they came. */
		for (k = 0; k < x->c->l.n_state; k++) {
			ret = copy(x, out[k].data, in[2 + k].data, tensor_bytes(&in[2 + k]));
			if (ret < 0)
				return ret;
		}
	}
	if (!again)
		return 0;
	*more = true;
	return loop_prepare(x);
}

/* ------------------------------------------------------------------- Scan */

/* Scan input j's slice t, or scan output j's (out), as strided copies
 * between the node's tensor and the body's. */
static int scan_slice(struct exec_ctrl *x, bool out, int j, int64_t t)
{
	struct plan_ctrl *c = x->c;
	int n = c->l.n_state, a = out ? c->l.n_scan_in + j : j, d;
	const struct op_tensor *nt = out ? &x->st->call.out[n + j]
				      : &x->st->call.in[c->l.first_state + n + j];
	const struct plan_io *io = out ? &x->p->outputs[n + j] : &x->p->inputs[n + j];
	int axis = c->axis[a];
	int64_t len = nt->dims[axis], at = c->reverse[a] ? len - 1 - t : t;
	size_t inner = cep_dtype_size(nt->dtype), outer = 1;
	unsigned char *node_data = nt->data;

	if (!node_data)
		return 0;
	for (d = axis + 1; d < nt->rank; d++)
		inner *= (size_t)nt->dims[d];
	if (c->l.batch)
		node_data += ((size_t)x->row * (size_t)len) * inner;
	else
		for (d = 0; d < axis; d++)
			outer *= (size_t)nt->dims[d];
	node_data += (size_t)at * inner;
	if (out)
		return copy_strided(x, node_data, (size_t)len * inner, io->dev, inner, outer, inner);
	return copy_strided(x, io->dev, inner, node_data, (size_t)len * inner, outer, inner);
}

/* Copies the states of batch row x->row into the body (in) or the body's
 * back into the node's outputs. */
static int scan_states(struct exec_ctrl *x, bool in)
{
	struct plan_ctrl *c = x->c;
	int k, ret;

	for (k = 0; k < c->l.n_state; k++) {
		const struct op_tensor *t = in ? &x->st->call.in[c->l.first_state + k]
					       : &x->st->call.out[k];
		size_t row = x->p->inputs[k].bytes;
		unsigned char *at = t->data ? (unsigned char *)t->data + (size_t)x->row * row : NULL;

		ret = in ? copy(x, x->p->inputs[k].dev, at, row) : copy(x, at, x->p->inputs[k].dev, row);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int scan_begin(struct exec_ctrl *x)
{
	x->p = x->c->plans[0];
	x->running = x->c->batch > 0 && x->c->len > 0;
	if (!x->running) {
		const struct op_tensor *in = x->st->call.in, *out = x->st->call.out;
		int k, ret;

		/* Nothing to scan: the states leave as they came. */
		for (k = 0; k < x->c->l.n_state; k++) {
			ret = copy(x, out[k].data, in[x->c->l.first_state + k].data,
				   tensor_bytes(&out[k]));
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	return scan_states(x, true);
}

static int scan_next(struct exec_ctrl *x, bool *more)
{
	struct plan_ctrl *c = x->c;
	int k, ret;

	if (!x->running)
		return 0;
	if (x->ran) {
		for (k = 0; k < c->l.n_scan_out; k++) {
			ret = scan_slice(x, true, k, x->i);
			if (ret < 0)
				return ret;
		}
		for (k = 0; k < c->l.n_state; k++) {
			ret = copy(x, x->p->inputs[k].dev, x->p->outputs[k].dev, x->p->outputs[k].bytes);
			if (ret < 0)
				return ret;
		}
		if (++x->i == c->len) {
			ret = scan_states(x, false);
			if (ret < 0)
				return ret;
			if (++x->row == c->batch)
				return 0;
			x->i = 0;
			ret = scan_states(x, true);
			if (ret < 0)
				return ret;
		}
	}
	for (k = 0; k < c->l.n_scan_in; k++) {
		ret = scan_slice(x, false, k, x->i);
		if (ret < 0)
			return ret;
	}
	x->ran = true;
	*more = true;
	return outer_copy(x, 0, x->p);
}

/* ----------------------------------------------------------------- driver */

int exec__ctrl_begin(struct exec_ctrl *x, const struct graph *g, const struct plan_step *st,
		     struct backend *be, struct backend_stream *s)
{
	memset(x, 0, sizeof(*x));
	x->g = g;
	x->st = st;
	x->c = st->ctrl;
	x->be = be;
	x->s = s;
	switch (x->c->l.kind) {
	case CTRL_IF:
		return if_begin(x);
	case CTRL_LOOP:
		return loop_begin(x);
	case CTRL_SCAN:
		return scan_begin(x);
	}
	return 0;
}

int exec__ctrl_next(struct exec_ctrl *x, bool *more)
{
	int ret = 0;

	*more = false;
	switch (x->c->l.kind) {
	case CTRL_IF:
		ret = if_next(x, more);
		break;
	case CTRL_LOOP:
		ret = loop_next(x, more);
		break;
	case CTRL_SCAN:
		ret = scan_next(x, more);
		break;
	}
	x->sub_g = x->c->l.sub[x->which];
	return ret;
}
