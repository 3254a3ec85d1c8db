/*
 * ctrl.c — the layout and the type and shape rules of If, Loop and Scan
 * (engine/ctrl.h), from the ONNX specification of every opset: If 1-,
 * Loop 1-, Scan 8 and 9- (axes counting from the end from 11). For the
 * tensors cudaep stores, the later opsets change nothing here but types
 * and If's shapes, which may differ between the branches from 11 on;
 * cudaep allows that at every opset.
 */
#include "engine/ctrl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool is_op(const struct graph_node *node, const char *op)
{
	return op_domain_equal(node->op.domain, "") && strcmp(node->op.op_type, op) == 0;
}

static int formal_inputs(const struct graph *sg)
{
	return sg->n_inputs - sg->n_outer;
}

/* The subgraph of attribute attr, checked to be one. */
static int sub_get(const struct graph *g, int n, const char *attr, struct ctrl_layout *l)
{
	const struct graph_node *node = &g->nodes[n];
	int i, ret;

	ret = op_attr_check(&node->op, attr, OP_ATTR_GRAPH);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	for (i = 0; i < node->n_subs; i++) {
		if (strcmp(node->subs[i].attr, attr) == 0) {
			l->gs[l->n_subs] = &node->subs[i];
			l->sub[l->n_subs++] = node->subs[i].g;
			return 0;
		}
	}
	return graph_node_fail(g, n, CEP_EMODEL, "%s needs the graph attribute %s",
			       node->op.op_type, attr);
}

/* Checks that the body takes `ins` inputs and returns `outs` outputs. */
static int body_counts(const struct graph *g, int n, const char *attr, const struct graph *sg,
		       int ins, int outs)
{
	if (formal_inputs(sg) != ins)
		return graph_node_fail(g, n, CEP_EMODEL, "%s has %d inputs; with the node's %d it "
				       "should have %d", attr, formal_inputs(sg),
				       g->nodes[n].n_in - g->nodes[n].n_implicit, ins);
	if (sg->n_outputs != outs)
		return graph_node_fail(g, n, CEP_EMODEL, "%s has %d outputs; with the node's %d it "
				       "should have %d", attr, sg->n_outputs, g->nodes[n].n_out,
				       outs);
	return 0;
}

static int layout_if(const struct graph *g, int n, struct ctrl_layout *l)
{
	const struct graph_node *node = &g->nodes[n];
	int ret, i;

	l->kind = CTRL_IF;
	ret = sub_get(g, n, "then_branch", l);
	if (ret == 0)
		ret = sub_get(g, n, "else_branch", l);
	for (i = 0; ret == 0 && i < 2; i++)
		ret = body_counts(g, n, i ? "else_branch" : "then_branch", l->sub[i], 0,
				  node->n_out);
	return ret;
}

static int layout_loop(const struct graph *g, int n, struct ctrl_layout *l)
{
	const struct graph_node *node = &g->nodes[n];
	const struct graph *body;
	int ret;

	l->kind = CTRL_LOOP;
	ret = sub_get(g, n, "body", l);
	if (ret < 0)
		return ret;
	body = l->sub[0];
	l->first_state = 2;
	l->n_state = l->n_explicit > 2 ? l->n_explicit - 2 : 0;
	l->n_scan_out = node->n_out - l->n_state;
	if (l->n_scan_out < 0)
		return graph_node_fail(g, n, CEP_EMODEL, "%d outputs for %d loop-carried values",
				       node->n_out, l->n_state);
	return body_counts(g, n, "body", body, 2 + l->n_state, 1 + node->n_out);
}

static int layout_scan(const struct graph *g, int n, struct ctrl_layout *l)
{
	const struct graph_node *node = &g->nodes[n];
	const struct op_attr *a;
	int ret;

	l->kind = CTRL_SCAN;
	ret = sub_get(g, n, "body", l);
	if (ret < 0)
		return ret;
	ret = op_attr_check(&node->op, "num_scan_inputs", OP_ATTR_INT);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	a = op_attr_find(&node->op, "num_scan_inputs");
	if (!a)
		return graph_node_fail(g, n, CEP_EMODEL, "Scan needs the attribute num_scan_inputs");
	l->batch = node->op.opset < 9;
	l->first_state = l->batch ? 1 : 0;
	if (a->i < 1 || a->i > l->n_explicit - l->first_state)
		return graph_node_fail(g, n, CEP_EMODEL, "num_scan_inputs is %" PRId64 " with %d "
				       "inputs", a->i, l->n_explicit);
	l->n_scan_in = (int)a->i;
	l->n_state = l->n_explicit - l->first_state - l->n_scan_in;
	l->n_scan_out = node->n_out - l->n_state;
	if (l->n_scan_out < 0)
		return graph_node_fail(g, n, CEP_EMODEL, "%d outputs for %d states", node->n_out,
				       l->n_state);
	return body_counts(g, n, "body", l->sub[0], l->n_state + l->n_scan_in, node->n_out);
}

int ctrl_layout(const struct graph *g, int n, struct ctrl_layout *l)
{
	const struct graph_node *node = &g->nodes[n];

	memset(l, 0, sizeof(*l));
	l->n_explicit = node->n_in - node->n_implicit;
	if (is_op(node, "If"))
		return layout_if(g, n, l);
	if (is_op(node, "Loop"))
		return layout_loop(g, n, l);
	if (is_op(node, "Scan"))
		return layout_scan(g, n, l);
	return graph_node_fail(g, n, CEP_EINTERNAL, "not control flow");
}

/* ---------------------------------------------------------------- inputs */

/* Checks that the node's input i, if present, is a single element of
 * type want. */
static int scalar_check(const struct graph *g, int n, const struct op_tensor *t, int i,
			const char *what, cep_dtype want)
{
	int64_t numel;

	if (!op_tensor_present(t))
		return 0;
	if (t->dtype != want)
		return graph_node_fail(g, n, CEP_EDTYPE, "%s (input %d) is %s; it must be %s", what,
				       i, cep_dtype_name(t->dtype), cep_dtype_name(want));
	if (op_tensor_numel(t, &numel) == 0 && numel != 1)
		return graph_node_fail(g, n, CEP_ESHAPE, "%s (input %d) has %" PRId64 " elements; "
				       "it must have one", what, i, numel);
	return 0;
}

static void scalar_make(struct op_tensor *t, cep_dtype dtype)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->rank = 0;
}

/* t without dimensions from..from+count-1. */
static void dims_drop(const struct op_tensor *t, int from, int count, struct op_tensor *out)
{
	int d, k = 0;

	*out = *t;
	out->data = NULL;
	if (t->rank < 0)
		return;
	for (d = 0; d < t->rank; d++) {
		if (d < from || d >= from + count)
			out->dims[k++] = t->dims[d];
	}
	out->rank = k;
}

static int present_check(const struct graph *g, int n, const struct op_tensor *t, int i)
{
	if (!op_tensor_present(t))
		return graph_node_fail(g, n, CEP_EMODEL, "input %d is required but missing", i);
	return 0;
}

int ctrl_scan_axis(const struct graph *g, int n, const struct ctrl_layout *l, bool out, int i,
		   int rank, int *axis, bool *reverse)
{
	const struct op_node *node = &g->nodes[n].op;
	const char *an = out ? "scan_output_axes" : "scan_input_axes";
	const char *dn = l->batch ? "directions"
			 : out ? "scan_output_directions" : "scan_input_directions";
	int want = out ? l->n_scan_out : l->n_scan_in;
	const int64_t *ints;
	int64_t a = 0, dir = 0;
	int count, ret;

	*reverse = false;
	ret = op_attr_check(node, dn, OP_ATTR_INTS);
	if (ret == 0 && !l->batch)
		ret = op_attr_check(node, an, OP_ATTR_INTS);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	if (!l->batch || !out) {
		ints = op_attr_ints(node, dn, &count);
		if (ints && count != want)
			return graph_node_fail(g, n, CEP_EMODEL, "%s has %d entries for %d %s", dn,
					       count, want, out ? "scan outputs" : "scan inputs");
		dir = ints ? ints[i] : 0;
		if (dir != 0 && dir != 1)
			return graph_node_fail(g, n, CEP_EMODEL, "%s[%d] is %" PRId64 "; a direction "
					       "is 0 or 1", dn, i, dir);
		*reverse = dir == 1;
	}
	if (l->batch) {
		*axis = 1;
		return 0;
	}
	ints = op_attr_ints(node, an, &count);
	if (ints && count != want)
		return graph_node_fail(g, n, CEP_EMODEL, "%s has %d entries for %d %s", an, count,
				       want, out ? "scan outputs" : "scan inputs");
	a = ints ? ints[i] : 0;
	if (a < 0 && node->opset < 11)
		return graph_node_fail(g, n, CEP_EMODEL, "%s[%d] is %" PRId64 "; axes count from "
				       "the end only from opset 11", an, i, a);
	if (rank < 1 || a < -rank || a >= rank)
		return graph_node_fail(g, n, CEP_EMODEL, "%s[%d] is %" PRId64 ", out of range for "
				       "rank %d", an, i, a, rank);
	*axis = (int)(a < 0 ? a + rank : a);
	return 0;
}

static int scan_inputs(const struct graph *g, int n, const struct ctrl_layout *l,
		       const struct op_tensor *in, struct op_tensor *sub_in)
{
	int k, axis, ret;
	bool rev;

	for (k = 0; k < l->n_state; k++) {
		const struct op_tensor *t = &in[l->first_state + k];

		ret = present_check(g, n, t, l->first_state + k);
		if (ret < 0)
			return ret;
		if (l->batch && t->rank == 0)
			return graph_node_fail(g, n, CEP_ESHAPE, "state %d is a scalar; Scan-8 states "
					       "have a batch axis", k);
		dims_drop(t, 0, l->batch ? 1 : 0, &sub_in[k]);
	}
	for (k = 0; k < l->n_scan_in; k++) {
		int i = l->first_state + l->n_state + k;
		const struct op_tensor *t = &in[i];

		ret = present_check(g, n, t, i);
		if (ret < 0)
			return ret;
		if (t->rank < 0) {
			dims_drop(t, 0, 0, &sub_in[l->n_state + k]);
			continue;
		}
		if (l->batch && t->rank < 2)
			return graph_node_fail(g, n, CEP_ESHAPE, "scan input %d has rank %d; Scan-8 "
					       "scan inputs have batch and sequence axes", k, t->rank);
		ret = ctrl_scan_axis(g, n, l, false, k, t->rank, &axis, &rev);
		if (ret < 0)
			return ret;
		if (l->batch)
			dims_drop(t, 0, 2, &sub_in[l->n_state + k]);
		else
			dims_drop(t, axis, 1, &sub_in[l->n_state + k]);
	}
	return 0;
}

int ctrl_sub_inputs(const struct graph *g, int n, const struct ctrl_layout *l, int which,
		    const struct op_tensor *in, struct op_tensor *sub_in)
{
	const struct graph *sg = l->sub[which];
	const struct graph_sub *gs = l->gs[which];
	int formal = formal_inputs(sg), k, ret = 0;

	switch (l->kind) {
	case CTRL_IF:
		ret = scalar_check(g, n, &in[0], 0, "the condition", CEP_DTYPE_BOOL);
		break;
	case CTRL_LOOP:
		if (l->n_explicit > 0)
			ret = scalar_check(g, n, &in[0], 0, "M, the trip count", CEP_DTYPE_INT64);
		if (ret == 0 && l->n_explicit > 1)
			ret = scalar_check(g, n, &in[1], 1, "the condition", CEP_DTYPE_BOOL);
		if (ret < 0)
			return ret;
		scalar_make(&sub_in[0], CEP_DTYPE_INT64);
		scalar_make(&sub_in[1], CEP_DTYPE_BOOL);
		for (k = 0; k < l->n_state; k++) {
			ret = present_check(g, n, &in[2 + k], 2 + k);
			if (ret < 0)
				return ret;
			sub_in[2 + k] = in[2 + k];
			sub_in[2 + k].data = NULL;
		}
		break;
	case CTRL_SCAN:
		if (l->batch && op_tensor_present(&in[0]) && in[0].dtype != CEP_DTYPE_INT64)
			return graph_node_fail(g, n, CEP_EDTYPE, "sequence_lens is %s; it must be "
					       "int64", cep_dtype_name(in[0].dtype));
		ret = scan_inputs(g, n, l, in, sub_in);
		break;
	}
	if (ret < 0)
		return ret;
	for (k = 0; k < formal; k++) {
		cep_dtype want = sg->declared ? sg->declared[k] : CEP_DTYPE_UNDEFINED;

		if (want != CEP_DTYPE_UNDEFINED && want != sub_in[k].dtype)
			return graph_node_fail(g, n, CEP_EDTYPE, "input %d '%s' of its %s is declared "
					       "%s, and the node gives it %s", k,
					       sg->values[sg->inputs[k]].name, gs->attr,
					       cep_dtype_name(want), cep_dtype_name(sub_in[k].dtype));
	}
	for (k = 0; k < sg->n_outer; k++)
		sub_in[formal + k] = in[gs->slot[k]];
	return 0;
}

int ctrl_sub_declared(const struct graph *g, int n, const struct ctrl_layout *l, int which,
		      const struct op_tensor *sub_out)
{
	const struct graph *sg = l->sub[which];
	int formal = formal_inputs(sg), k;

	for (k = 0; sg->declared && k < sg->n_outputs; k++) {
		cep_dtype want = sg->declared[formal + k];

		if (want != CEP_DTYPE_UNDEFINED && want != sub_out[k].dtype)
			return graph_node_fail(g, n, CEP_EDTYPE, "output %d '%s' of its %s is "
					       "declared %s but computes %s", k,
					       sg->values[sg->outputs[k]].name, l->gs[which]->attr,
					       cep_dtype_name(want), cep_dtype_name(sub_out[k].dtype));
	}
	return 0;
}

int ctrl_scan_length(const struct graph *g, int n, const struct ctrl_layout *l,
		     const struct op_tensor *in, int64_t *len)
{
	int64_t batch = OP_DIM_UNKNOWN;
	int k, axis, ret;
	bool rev;

	*len = OP_DIM_UNKNOWN;
	for (k = 0; k < l->n_state + l->n_scan_in; k++) {
		const struct op_tensor *t = &in[l->first_state + k];
		bool is_scan = k >= l->n_state;
		int64_t d;

		if (t->rank < 0)
			continue;
		if (l->batch && t->rank > 0 && op_dim_fixed(t->dims[0])) {
			if (op_dim_fixed(batch) && t->dims[0] != batch)
				return graph_node_fail(g, n, CEP_ESHAPE, "input %d has a batch of %"
						       PRId64 ", input %d of %" PRId64,
						       l->first_state + k, t->dims[0], l->first_state,
						       batch);
			batch = t->dims[0];
		}
		if (!is_scan)
			continue;
		ret = ctrl_scan_axis(g, n, l, false, k - l->n_state, t->rank, &axis, &rev);
		if (ret < 0)
			return ret;
		d = t->dims[axis];
		if (!op_dim_fixed(d))
			continue;
		if (op_dim_fixed(*len) && d != *len)
			return graph_node_fail(g, n, CEP_ESHAPE, "scan input %d has %" PRId64
					       " elements along its axis %d, an earlier one %" PRId64,
					       k - l->n_state, d, axis, *len);
		*len = d;
	}
	return 0;
}

/* --------------------------------------------------------------- outputs */

/* What a and b agree on: their dims where equal, OP_DIM_UNKNOWN where
 * not, rank -1 where the ranks differ. */
static void shape_merge(const struct op_tensor *a, const struct op_tensor *b,
			struct op_tensor *out)
{
	int d;

	*out = *a;
	out->data = NULL;
	if (a->rank != b->rank) {
		out->rank = -1;
		return;
	}
	for (d = 0; d < a->rank; d++) {
		if (a->dims[d] != b->dims[d])
			out->dims[d] = OP_DIM_UNKNOWN;
	}
}

/* t with a new dimension of size at axis. */
static int dims_insert(const struct graph *g, int n, const struct op_tensor *t, int axis,
		       int64_t size, struct op_tensor *out)
{
	int d;

	*out = *t;
	out->data = NULL;
	if (t->rank < 0)
		return 0;
	if (t->rank + 1 > CEP_MAX_RANK)
		return graph_node_fail(g, n, CEP_EUNSUPPORTED, "a scan output of rank %d is above %d",
				       t->rank + 1, CEP_MAX_RANK);
	for (d = t->rank; d > axis; d--)
		out->dims[d] = t->dims[d - 1];
	out->dims[axis] = size;
	out->rank = t->rank + 1;
	return 0;
}

static int carried_check(const struct graph *g, int n, const char *what, int k,
			 const struct op_tensor *init, const struct op_tensor *body)
{
	if (init->dtype != body->dtype)
		return graph_node_fail(g, n, CEP_EDTYPE, "%s %d is %s going into the body and %s "
				       "coming out", what, k, cep_dtype_name(init->dtype),
				       cep_dtype_name(body->dtype));
	return 0;
}

static int outputs_if(const struct graph *g, int n, const struct op_tensor *const *sub_out,
		      int branch, struct op_tensor *out)
{
	const struct graph_node *node = &g->nodes[n];
	int k;

	for (k = 0; k < node->n_out; k++) {
		const struct op_tensor *t = &sub_out[0][k], *e = &sub_out[1][k];

		if (branch >= 0) {
			out[k] = sub_out[branch][k];
			out[k].data = NULL;
			continue;
		}
		if (t->dtype != e->dtype)
			return graph_node_fail(g, n, CEP_EDTYPE, "output %d is %s in then_branch and "
					       "%s in else_branch", k, cep_dtype_name(t->dtype),
					       cep_dtype_name(e->dtype));
		shape_merge(t, e, &out[k]);
	}
	return 0;
}

static int outputs_loop(const struct graph *g, int n, const struct ctrl_layout *l,
			const struct op_tensor *in, const struct op_tensor *body, int64_t trip,
			struct op_tensor *out)
{
	int k, ret;

	for (k = 0; k < l->n_state; k++) {
		ret = carried_check(g, n, "loop-carried value", k, &in[2 + k], &body[1 + k]);
		if (ret < 0)
			return ret;
		shape_merge(&in[2 + k], &body[1 + k], &out[k]);
	}
	for (k = 0; k < l->n_scan_out; k++) {
		ret = dims_insert(g, n, &body[1 + l->n_state + k], 0,
				  trip >= 0 ? trip : OP_DIM_UNKNOWN, &out[l->n_state + k]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int outputs_scan(const struct graph *g, int n, const struct ctrl_layout *l,
			const struct op_tensor *in, const struct op_tensor *body,
			struct op_tensor *out)
{
	int64_t len, batch = OP_DIM_UNKNOWN;
	struct op_tensor t;
	int k, axis, ret;
	bool rev;

	ret = ctrl_scan_length(g, n, l, in, &len);
	if (ret < 0)
		return ret;
	if (l->batch && in[1].rank > 0)
		batch = in[1].dims[0];
	for (k = 0; k < l->n_state; k++) {
		const struct op_tensor *init = &in[l->first_state + k];

		ret = carried_check(g, n, "state", k, init, &body[k]);
		if (ret < 0)
			return ret;
		if (!l->batch) {
			shape_merge(init, &body[k], &out[k]);
			continue;
		}
		dims_drop(init, 0, 1, &t);
		shape_merge(&t, &body[k], &t);
		ret = dims_insert(g, n, &t, 0, init->rank > 0 ? init->dims[0] : OP_DIM_UNKNOWN,
				  &out[k]);
		if (ret < 0)
			return ret;
	}
	for (k = 0; k < l->n_scan_out; k++) {
		const struct op_tensor *y = &body[l->n_state + k];

		if (l->batch) {
			ret = dims_insert(g, n, y, 0, len, &t);
			if (ret == 0)
				ret = dims_insert(g, n, &t, 0, batch, &out[l->n_state + k]);
			if (ret < 0)
				return ret;
			continue;
		}
		if (y->rank < 0) {
			out[l->n_state + k] = *y;
			continue;
		}
		ret = ctrl_scan_axis(g, n, l, true, k, y->rank + 1, &axis, &rev);
		if (ret == 0)
			ret = dims_insert(g, n, y, axis, len, &out[l->n_state + k]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int ctrl_outputs(const struct graph *g, int n, const struct ctrl_layout *l,
		 const struct op_tensor *in, const struct op_tensor *const *sub_out, int branch,
		 int64_t trip, struct op_tensor *out)
{
	switch (l->kind) {
	case CTRL_IF:
		return outputs_if(g, n, sub_out, branch, out);
	case CTRL_LOOP:
		return outputs_loop(g, n, l, in, sub_out[0], trip, out);
	case CTRL_SCAN:
		return outputs_scan(g, n, l, in, sub_out[0], out);
	}
	return 0;
}

/* ------------------------------------------------------------ conditions */

int ctrl_if_taken(const struct graph *g, int n)
{
	const struct graph_node *node = &g->nodes[n];
	const struct graph_value *cond;

	if (!is_op(node, "If") || node->n_in < 1 || node->in[0] < 0)
		return -1;
	cond = &g->values[node->in[0]];
	if (!(cond->flags & GRAPH_VALUE_CONST) || !cond->t.data || cond->bytes == 0 ||
	    cond->t.dtype != CEP_DTYPE_BOOL)
		return -1;
	return *(const unsigned char *)cond->t.data ? 0 : 1;
}

bool ctrl_branch_may_fail(int err)
{
	return err == CEP_ESHAPE || err == CEP_EUNSUPPORTED;
}

enum ctrl_cond ctrl_loop_cond(const struct graph *body, int *index, bool *value)
{
	int v = body->outputs[0], guard, k;

	*index = -1;
	*value = false;
	for (guard = 0; guard <= body->n_nodes; guard++) {
		const struct graph_value *val = &body->values[v];
		const struct graph_node *p;

		if (val->flags & GRAPH_VALUE_CONST) {
			*value = val->t.data && val->bytes && *(const unsigned char *)val->t.data;
			return CTRL_COND_CONST;
		}
		if (val->flags & GRAPH_VALUE_OUTER) {
			for (k = 0; k < body->n_outer; k++) {
				if (body->inputs[body->n_inputs - body->n_outer + k] == v)
					*index = k;
			}
			return CTRL_COND_OUTER;
		}
		if (val->flags & GRAPH_VALUE_INPUT)
			return v == body->inputs[1] ? CTRL_COND_KEEP : CTRL_COND_COMPUTED;
		if (val->producer < 0)
			return CTRL_COND_COMPUTED;
		p = &body->nodes[val->producer];
		if (!is_op(p, "Identity") || p->in[0] < 0)
			return CTRL_COND_COMPUTED;
		v = p->in[0];
	}
	return CTRL_COND_COMPUTED;
}

int64_t ctrl_loop_trip(bool has_m, int64_t m, int cond0, enum ctrl_cond cond, bool cond_value)
{
	if (has_m && m != CTRL_TRIP_UNKNOWN && m <= 0)
		return 0;
	if (cond0 == 0)
		return 0;
	if (cond0 < 0)
		return CTRL_TRIP_UNKNOWN;
	if (cond == CTRL_COND_KEEP || (cond == CTRL_COND_CONST && cond_value)) {
		if (!has_m)
			return CTRL_TRIP_ENDLESS;
		return m;
	}
	if (cond == CTRL_COND_CONST) {
		/* The first iteration runs, then the condition stops it. */
		if (!has_m || m != CTRL_TRIP_UNKNOWN)
			return 1;
		return CTRL_TRIP_UNKNOWN;
	}
	return CTRL_TRIP_UNKNOWN;
}
