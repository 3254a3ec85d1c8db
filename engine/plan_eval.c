/*
 * plan_eval.c — an If evaluated on the host while planning (engine/plan.h,
 * top): exported models compute shapes in branches (a 2-D or a 3-D
 * grid's sizes split from a shape input), and a shape further on needs
 * those values. When the condition and every value the branch reads are
 * known, the branch taken is evaluated here node by node with the host
 * kernels, as plan_values.c evaluates a chain of small nodes, and the If
 * folds like any of them. A branch with a node the host cannot evaluate
 * here (no host kernel, random, an output over PLAN_FOLD_MAX_BYTES, a
 * Loop or Scan) leaves the If to run as a step.
 *
 * Called by plan.c (an If whose inputs are all known) and plan_values.c
 * (an If whose outputs a shape needs); calls only inference and the host
 * kernels.
 */
#include "engine/plan_priv.h"

#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/shape.h"

static bool is_if(const struct graph_node *node)
{
	return (node->schema->flags & OP_CONTROL) && op_domain_equal(node->op.domain, "") &&
	       strcmp(node->op.op_type, "If") == 0;
}

/* Whether every live node of g (and of the branches of its Ifs) is an
 * operator the host may evaluate while planning. */
static bool graph_foldable(const struct graph *g)
{
	int k, i;

	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		if (node->schema->flags & OP_NO_FOLD) {
			if (!is_if(node))
				return false;
			for (i = 0; i < node->n_subs; i++) {
				if (!graph_foldable(node->subs[i].g))
					return false;
			}
		}
	}
	return true;
}

bool plan__if_foldable(const struct plan_builder *b, int n)
{
	const struct graph_node *node = &b->env->g->nodes[n];
	int i;

	if (!is_if(node))
		return false;
	for (i = 0; i < node->n_subs; i++) {
		if (!graph_foldable(node->subs[i].g))
			return false;
	}
	return true;
}

/*
 * Evaluates g with its inputs in (one per input, data set) into out (one
 * per output: type, shape and malloc'd data, the caller's). *done is
 * false, and nothing left allocated, when a node cannot be evaluated
 * here.
 */
static int graph_eval(const struct graph *g, const struct op_tensor *in, struct op_tensor *out,
		      bool *done)
{
	struct op_tensor *vals, *nin = NULL, *nout = NULL;
	bool *owned;
	int max_io = 1, k, i, ret = 0;

	*done = false;
	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		max_io = node->n_in > max_io ? node->n_in : max_io;
		max_io = node->n_out > max_io ? node->n_out : max_io;
	}
	vals = calloc((size_t)g->n_values + 1, sizeof(*vals));
	owned = calloc((size_t)g->n_values + 1, sizeof(*owned));
	nin = calloc((size_t)max_io, sizeof(*nin));
	nout = calloc((size_t)max_io, sizeof(*nout));
	if (!vals || !owned || !nin || !nout) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory planning control flow");
		goto out;
	}
	for (i = 0; i < g->n_values; i++) {
		if (g->values[i].flags & GRAPH_VALUE_CONST)
			vals[i] = g->values[i].t;
	}
	for (i = 0; i < g->n_inputs; i++)
		vals[g->inputs[i]] = in[i];
	for (k = 0; k < g->n_order; k++) {
		int n = g->order[k];
		const struct graph_node *node = &g->nodes[n];
		const struct op_kernel *kern;
		size_t total = 0;
		bool sub_done;

		for (i = 0; i < node->n_in; i++) {
			memset(&nin[i], 0, sizeof(nin[i]));
			if (node->in[i] < 0)
				continue;
			nin[i] = vals[node->in[i]];
			if (!nin[i].data && !(node->schema->flags & OP_SHAPE_ONLY))
				goto out; /* not known here after all */
		}
		if (is_if(node)) {
			const struct graph_sub *sub;
			struct op_tensor *sin;
			int branch, j;

			if (nin[0].dtype != CEP_DTYPE_BOOL)
				goto out;
			branch = *(const unsigned char *)nin[0].data ? 0 : 1;
			sub = NULL;
			for (j = 0; j < node->n_subs; j++) {
				if ((strcmp(node->subs[j].attr, "else_branch") == 0) == (branch == 1))
					sub = &node->subs[j];
			}
			if (!sub || sub->g->n_outputs != node->n_out ||
			    sub->g->n_inputs != sub->g->n_outer)
				goto out;
			sin = calloc((size_t)sub->g->n_inputs + 1, sizeof(*sin));
			if (!sin) {
				ret = cep__set_error(CEP_ENOMEM, "out of memory planning control flow");
				goto out;
			}
			for (j = 0; j < sub->g->n_outer; j++)
				sin[j] = nin[sub->slot[j]];
			ret = graph_eval(sub->g, sin, nout, &sub_done);
			free(sin);
			if (ret < 0 || !sub_done)
				goto out;
		} else {
			if (node->schema->flags & OP_NO_FOLD)
				goto out;
			ret = shape_infer_node(g, n, nin, nout);
			if (ret < 0)
				goto out;
			for (i = 0; i < node->n_out; i++) {
				int64_t numel;

				if (node->out[i] < 0)
					continue;
				if (op_tensor_numel(&nout[i], &numel) < 0) {
					cep__clear_error();
					goto out;
				}
				total += op_tensor_bytes(&nout[i]);
			}
			if (total > PLAN_FOLD_MAX_BYTES)
				goto out;
			if (op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
					   op_kernel_dtype(node->schema, nin, node->n_in, nout,
							   node->n_out), &kern) < 0) {
				cep__clear_error();
				goto out;
			}
			ret = exec_host_eval(&node->op, kern, nin, node->n_in, nout, node->n_out);
			if (ret < 0) {
				ret = graph_node_wrap(g, n, ret);
				goto out;
			}
		}
		for (i = 0; i < node->n_out; i++) {
			int v = node->out[i];

			if (v < 0) {
				free(nout[i].data);
				continue;
			}
			vals[v] = nout[i];
			owned[v] = true;
		}
	}
	for (i = 0; i < g->n_outputs; i++) {
		const struct op_tensor *t = &vals[g->outputs[i]];
		size_t bytes = op_tensor_bytes(t);

		out[i] = *t;
		out[i].data = malloc(bytes ? bytes : 1);
		if (!out[i].data) {
			while (i-- > 0)
				free(out[i].data);
			ret = cep__set_error(CEP_ENOMEM, "out of memory planning control flow");
			goto out;
		}
		if (bytes)
			memcpy(out[i].data, t->data, bytes);
	}
	*done = true;
out:
	for (i = 0; owned && vals && i < g->n_values; i++) {
		if (owned[i])
			free(vals[i].data);
	}
	free(vals);
	free(owned);
	free(nin);
	free(nout);
	return ret;
}

int plan__if_fold(const struct plan_builder *b, int n, const struct op_tensor *in,
		  struct op_tensor *out, bool *done)
{
	const struct graph *g = b->env->g;
	const struct graph_node *node = &g->nodes[n];
	struct op_tensor *sin;
	const struct graph_sub *sub = NULL;
	int i, ret;

	*done = false;
	if (!is_if(node) || !in[0].data || in[0].dtype != CEP_DTYPE_BOOL)
		return 0;
	for (i = 0; i < node->n_subs; i++) {
		if ((strcmp(node->subs[i].attr, "else_branch") == 0) ==
		    (*(const unsigned char *)in[0].data == 0))
			sub = &node->subs[i];
	}
	if (!sub || sub->g->n_inputs != sub->g->n_outer || sub->g->n_outputs != node->n_out)
		return 0;
	sin = calloc((size_t)sub->g->n_inputs + 1, sizeof(*sin));
	if (!sin)
		return cep__set_error(CEP_ENOMEM, "out of memory planning control flow");
	for (i = 0; i < sub->g->n_outer; i++)
		sin[i] = in[sub->slot[i]];
	ret = graph_eval(sub->g, sin, out, done);
	free(sin);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	return 0;
}
