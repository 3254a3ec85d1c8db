/*
 * plan_values.c — the values a shape depends on (engine/plan.h, top):
 * when a node's output shape is not fixed by the shapes alone (Reshape's
 * target, Unsqueeze's axes, Range's bounds given as inputs), the build
 * traces the values back through small nodes to graph inputs, reads
 * those from the run, evaluates the chain on the host and infers the node
 * again. The inputs read key the plan from then on. A shape that cannot
 * be settled so is refused, naming the input or node in the way.
 *
 * Called by the build's driver (engine/plan.c) through plan_priv.h; calls
 * only the host kernels and shape inference.
 */
#include "engine/plan_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/shape.h"

/* Stands in for the elements of an empty input: a NULL data pointer would
 * read as "value unknown" to inference. */
static const unsigned char empty_value[1];

/* Fills in with node n's inputs as far as they are known (type and shape,
 * and the value on the host when there is one). */
void plan__inputs_fill(const struct plan_builder *b, int n, struct op_tensor *in)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	int i;

	for (i = 0; i < node->n_in; i++) {
		int v = node->in[i];

		if (v < 0) {
			memset(&in[i], 0, sizeof(in[i]));
			continue;
		}
		in[i] = b->vals[v];
		in[i].data = b->host[v];
	}
}

/* Fills out with node n's outputs as planned (type and shape, no data). */
static void outputs_fill(const struct plan_builder *b, int n, struct op_tensor *out)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	int i;

	for (i = 0; i < node->n_out; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (node->out[i] >= 0) {
			out[i] = b->vals[node->out[i]];
			out[i].data = NULL;
		}
	}
}

/* Sets *which to the first output of node n whose shape in b->out is not
 * fixed, -1 when all are; fails only for a tensor beyond OP_MAX_NUMEL. */
int plan__outputs_unfixed(const struct plan_builder *b, int n, int *which)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	int64_t numel;
	int i, ret;

	*which = -1;
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] < 0)
			continue;
		ret = op_tensor_numel(&b->out[i], &numel);
		if (ret == CEP_ESHAPE) {
			*which = i;
			return 0;
		}
		if (ret < 0)
			return graph_node_wrap(g, n, ret);
	}
	return 0;
}

/* Whether node m, whose output shapes are fixed, can be evaluated on the
 * host while planning once its inputs are known. */
static bool host_evaluable(struct plan_builder *b, int m)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[m];
	const struct op_kernel *k;
	size_t total = 0;
	int i;

	if ((node->schema->flags & OP_NO_FOLD) && !plan__if_foldable(b, m))
		return false;
	outputs_fill(b, m, b->eout);
	for (i = 0; i < node->n_out; i++)
		total += op_tensor_bytes(&b->eout[i]);
	if (total > PLAN_FOLD_MAX_BYTES)
		return false;
	if (node->schema->flags & OP_CONTROL)
		return true; /* an If: plan_eval.c evaluates it */
	plan__inputs_fill(b, m, b->ein);
	if (op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
			   op_kernel_dtype(node->schema, b->ein, node->n_in, b->eout, node->n_out),
			   &k) < 0) {
		cep__clear_error();
		return false;
	}
	return true;
}

/* Whether graph input v may key the plan: the run gave its values, and
 * they are few and of a type that counts or sizes things. */
static bool input_keyable(const struct plan_builder *b, int v)
{
	const struct op_tensor *t = &b->vals[v];
	int64_t numel;

	if (op_tensor_numel(t, &numel) < 0 || (numel > 0 && !b->given[v]))
		return false;
	return op_dtype_in(t->dtype, PLAN_KEY_DTYPES) && numel <= PLAN_KEY_MAX_ELEMS;
}

/*
 * Finds what it takes to know value v, an input of the node at position k
 * of the order, while planning: marks (with a new stamp) the values it is
 * computed from and the nodes before k to evaluate for it, back to values
 * already known and to graph inputs. Returns false, with the culprit in
 * *why, when a node on the way cannot be evaluated here or a graph input
 * cannot key the plan. The order is topological, so one backward sweep
 * sees every producer after all of its consumers.
 */
static bool value_trace(struct plan_builder *b, int k, int v, struct plan_unknowable *why)
{
	const struct graph *g = b->env->g;
	int pos, i;

	why->input = why->node = -1;
	b->stamp++;
	b->mark[v] = b->stamp;
	for (pos = k - 1; pos >= 0; pos--) {
		int m = g->order[pos];
		const struct graph_node *node = &g->nodes[m];
		bool needed = false;

		for (i = 0; i < node->n_out; i++) {
			int o = node->out[i];

			needed |= o >= 0 && b->mark[o] == b->stamp && !b->host[o];
		}
		if (!needed)
			continue;
		if (!host_evaluable(b, m)) {
			why->node = m;
			return false;
		}
		b->node_mark[m] = b->stamp;
		if (node->schema->flags & OP_SHAPE_ONLY)
			continue;
		for (i = 0; i < node->n_in; i++) {
			int u = node->in[i];

			if (u >= 0 && !b->host[u])
				b->mark[u] = b->stamp;
		}
	}
	for (i = 0; i < g->n_inputs; i++) {
		int u = g->inputs[i];

		if (b->mark[u] == b->stamp && !b->host[u] && !input_keyable(b, u)) {
			why->input = u;
			return false;
		}
	}
	return true;
}

/* Evaluates If node m (b->ein its inputs, known) into b->eout, whose
 * shapes its step was planned with. */
static int if_eval(struct plan_builder *b, int m)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[m];
	struct op_tensor *planned = b->eout, *got;
	bool done, same = true;
	int i, d, ret;

	got = calloc((size_t)node->n_out + 1, sizeof(*got));
	if (!got)
		return cep__set_error(CEP_ENOMEM, "out of memory building a plan");
	ret = plan__if_fold(b, m, b->ein, got, &done);
	if (ret == 0 && !done)
		ret = graph_node_fail(g, m, CEP_EUNSUPPORTED, "a value a shape needs comes from "
				      "its branch, which cannot be evaluated while planning");
	for (i = 0; ret == 0 && i < node->n_out; i++) {
		if (node->out[i] < 0)
			continue;
		same &= got[i].dtype == planned[i].dtype && got[i].rank == planned[i].rank;
		for (d = 0; same && d < got[i].rank; d++)
			same &= got[i].dims[d] == planned[i].dims[d];
	}
	if (ret == 0 && !same)
		ret = graph_node_fail(g, m, CEP_EINTERNAL, "its branch evaluated here gives "
				      "other shapes than it was planned for");
	for (i = 0; i < node->n_out; i++) {
		if (ret == 0) {
			planned[i].data = got[i].data;
		} else if (done) {
			free(got[i].data);
		}
	}
	free(got);
	return ret;
}

/* Makes known what the last successful value_trace() marked: reads the
 * marked graph inputs from the run (they key the plan from now on) and
 * evaluates the marked nodes in order. */
static int value_eval(struct plan_builder *b, int k)
{
	const struct graph *g = b->env->g;
	int pos, i, ret;

	for (i = 0; i < g->n_inputs; i++) {
		int v = g->inputs[i];

		if (b->mark[v] != b->stamp || b->host[v])
			continue;
		b->host[v] = b->given[v] ? (void *)b->given[v] : (void *)empty_value;
		b->keyed[v] = true;
	}
	for (pos = 0; pos < k; pos++) {
		int m = g->order[pos];
		const struct graph_node *node = &g->nodes[m];
		const struct op_kernel *kern;

		if (b->node_mark[m] != b->stamp)
			continue;
		plan__inputs_fill(b, m, b->ein);
		outputs_fill(b, m, b->eout);
		cep__clear_error();
		if (node->schema->flags & OP_CONTROL) {
			ret = if_eval(b, m);
			if (ret < 0)
				return ret;
		} else {
			ret = op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
					     op_kernel_dtype(node->schema, b->ein, node->n_in,
							     b->eout, node->n_out), &kern);
			if (ret == 0)
				ret = exec_host_eval(&node->op, kern, b->ein, node->n_in, b->eout,
						     node->n_out);
			if (ret < 0)
				return graph_node_wrap(g, m, ret);
		}
		for (i = 0; i < node->n_out; i++) {
			int v = node->out[i];

			if (v < 0) {
				free(b->eout[i].data);
				continue;
			}
			b->host[v] = b->eout[i].data;
			b->owned[v] = true;
		}
		b->p->folded++;
	}
	return 0;
}

/*
 * Node n, at position k of the order, has an output whose shape depends on
 * values not known yet: learns them from the run where it can, inferring n
 * again each time, until every output is fixed. Stopping as soon as the
 * shapes are fixed keeps an input that is only data from keying the plan,
 * so the inputs likeliest to decide a shape go first: integer ones (a
 * target shape, axes, pads, bounds) before the others (Pad's fill value,
 * Resize's region), and within each, last first (Reshape's shape, Slice's
 * steps and Range's delta come after the data). Leaves in *unfixed the
 * output still not fixed (-1: none) and in *why the first reason a value
 * could not be learnt.
 */
int plan__values_resolve(struct plan_builder *b, int k, int n, int *unfixed,
			 struct plan_unknowable *why)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	const uint32_t integral = OP_DTS_INT | OP_DT(CEP_DTYPE_BOOL);
	struct plan_unknowable w;
	int pass, i, ret;

	why->input = why->node = -1;
	for (pass = 0; pass < 2; pass++) {
		for (i = node->n_in - 1; i >= 0 && *unfixed >= 0; i--) {
			int v = node->in[i];

			if (v < 0 || b->host[v] ||
			    op_dtype_in(b->vals[v].dtype, integral) != (pass == 0))
				continue;
			if (!value_trace(b, k, v, &w)) {
				if (why->input < 0 && why->node < 0)
					*why = w;
				continue;
			}
			ret = value_eval(b, k);
			if (ret < 0)
				return ret;
			plan__inputs_fill(b, n, b->in);
			ret = shape_infer_node(g, n, b->in, b->out);
			if (ret < 0)
				return ret;
			ret = plan__outputs_unfixed(b, n, unfixed);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int plan__value_learn(struct plan_builder *b, int k, int v, bool *learnt,
		      struct plan_unknowable *why)
{
	*learnt = false;
	why->input = why->node = -1;
	if (b->host[v]) {
		*learnt = true;
		return 0;
	}
	if (!value_trace(b, k, v, why))
		return 0;
	*learnt = true;
	return value_eval(b, k);
}

/* The refusal of node n, whose output o has a shape that could not be
 * settled, saying why when that is known. */
int plan__unfixed_refuse(const struct plan_builder *b, int n, int o,
			 const struct plan_unknowable *why)
{
	const struct graph *g = b->env->g;
	char dims[160], label[200], because[400] = "";

	op_dims_format(&b->out[o], graph_root(g)->syms, graph_root(g)->n_syms, dims, sizeof(dims));
	if (why->input >= 0) {
		const struct graph_value *val = &g->values[why->input];
		const struct op_tensor *t = &b->vals[why->input];
		int64_t numel = 0;

		op_tensor_numel(t, &numel);
		/* Without the run's values (a caller planning from shapes
		 * alone) there is nothing more to say. */
		if (!op_dtype_in(t->dtype, PLAN_KEY_DTYPES) && b->given[why->input])
			snprintf(because, sizeof(because), ": it needs the values of input '%s', "
				 "whose type %s cannot key a plan", val->name,
				 cep_dtype_name(t->dtype));
		else if (numel > PLAN_KEY_MAX_ELEMS && b->given[why->input])
			snprintf(because, sizeof(because), ": it needs the values of input '%s', "
				 "whose %" PRId64 " elements are more than the %d a plan can be "
				 "keyed by", val->name, numel, PLAN_KEY_MAX_ELEMS);
	} else if (why->node >= 0) {
		graph_node_label(g, why->node, label, sizeof(label));
		snprintf(because, sizeof(because), ": it needs values that %s computes at run time",
			 label);
	}
	return graph_node_fail(g, n, CEP_EUNSUPPORTED,
			       "the shape %s of output '%s' depends on values known only at run time%s",
			       dims, g->values[g->nodes[n].out[o]].name, because);
}
