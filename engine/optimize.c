/*
 * optimize.c — load-time rewrites of the graph IR (engine/optimize.h).
 *
 * Constant folding walks the nodes in order and runs every node whose
 * inputs are all known (initializers, Constant nodes, earlier folds) on the
 * host kernels, once; operators flagged OP_SHAPE_ONLY (Shape, Size) fold as
 * soon as their input's dims are fixed. A folded node's outputs become
 * constants and the node dies; Identity and dead-node removal then clean
 * up, and inference runs again so that shapes computed from folded values
 * (a Reshape whose target shape was a chain of Shape, Gather and Concat)
 * are known from here on. The fusions of engine/fuse.h run between the
 * clean-up and that last inference, and then each subgraph of control
 * flow (If, Loop, Scan) is optimized the same way: constants of its own
 * fold, those of an enclosing graph do not (its outer references are
 * inputs to it).
 */
#include "engine/optimize.h"

#include <stdlib.h>
#include <string.h>

#include "engine/ctrl.h"
#include "engine/exec.h"
#include "engine/fuse.h"
#include "engine/shape.h"
#include "engine/fuse_xfmr.h"

static bool dims_fixed(const struct op_tensor *t)
{
	int i;

	if (t->rank < 0)
		return false;
	for (i = 0; i < t->rank; i++) {
		if (!op_dim_fixed(t->dims[i]))
			return false;
	}
	return true;
}

/* Whether node n can be evaluated now; fills in[] with its inputs. */
static bool foldable(const struct graph *g, int n, struct op_tensor *in)
{
	const struct graph_node *node = &g->nodes[n];
	bool shape_only = node->schema->flags & OP_SHAPE_ONLY;
	int i;

	if (node->schema->flags & OP_NO_FOLD)
		return false;
	for (i = 0; i < node->n_in; i++) {
		int v = node->in[i];

		if (v < 0) {
			memset(&in[i], 0, sizeof(in[i]));
			continue;
		}
		in[i] = g->values[v].t;
		if (g->values[v].flags & GRAPH_VALUE_CONST) {
			if (!in[i].data)
				return false;
			continue;
		}
		if (!shape_only || !dims_fixed(&in[i]))
			return false;
		in[i].data = NULL;
	}
	return true;
}

/* Folds node n if it can; returns 1 when folded, 0 when left alone. */
static int fold_node(struct graph *g, int n, struct op_tensor *in, struct op_tensor *out)
{
	const struct graph_node *node = &g->nodes[n];
	const struct op_kernel *k;
	size_t total = 0;
	int i, ret;

	if (!foldable(g, n, in))
		return 0;
	ret = shape_infer_node(g, n, in, out);
	if (ret < 0)
		return ret;
	for (i = 0; i < node->n_out; i++) {
		int64_t numel;

		if (node->out[i] < 0)
			continue;
		if (op_tensor_numel(&out[i], &numel) < 0)
			return 0;
		total += (size_t)numel * cep_dtype_size(out[i].dtype);
		if (total > OPTIMIZE_FOLD_MAX_BYTES)
			return 0;
	}
	/* No host kernel for this type: leave it to run time, which will say
	 * so if no backend has one either. */
	if (op_kernel_find(node->schema, node->op.opset, BACKEND_HOST,
			   op_kernel_dtype(node->schema, in, node->n_in, out, node->n_out),
			   &k) < 0) {
		cep__clear_error();
		return 0;
	}
	ret = exec_host_eval(&node->op, k, in, node->n_in, out, node->n_out);
	if (ret < 0)
		return graph_node_wrap(g, n, ret);
	for (i = 0; i < node->n_out; i++) {
		int v = node->out[i];

		if (v < 0) {
			free(out[i].data);
			continue;
		}
		g->values[v].t = out[i];
		g->values[v].t.data = NULL;
		graph_value_set_const(g, v, out[i].data, op_tensor_bytes(&out[i]));
	}
	graph_node_kill(g, n);
	return 1;
}

/* Optimizes the subgraphs of g's live nodes, whose inputs' types the last
 * inference of g has set. An If whose condition is a constant by now
 * optimizes only the branch it takes; one whose condition is not known
 * keeps a branch that does not infer for these shapes as it is (sorted
 * again), as inference did (engine/shape.c), for the planner to set aside
 * in its turn. */
static int subgraphs_optimize(struct graph *g)
{
	int k, i, ret;

	for (k = 0; k < g->n_order; k++) {
		int n = g->order[k];
		const struct graph_node *node = &g->nodes[n];
		int taken = ctrl_if_taken(g, n);
		bool is_if = node->n_subs == 2 && op_domain_equal(node->op.domain, "") &&
			     strcmp(node->op.op_type, "If") == 0;

		for (i = 0; i < node->n_subs; i++) {
			struct graph *sg = node->subs[i].g;
			int branch = strcmp(node->subs[i].attr, "else_branch") == 0;

			if (taken >= 0 && branch != taken)
				continue;
			ret = optimize_graph(sg);
			if (ret < 0 && is_if && taken < 0 && ctrl_branch_may_fail(ret)) {
				cep__clear_error();
				ret = graph_sort(sg);
			}
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int optimize_graph(struct graph *g)
{
	struct op_tensor *in = NULL, *out = NULL;
	int max_in = 1, max_out = 1;
	int k, ret;

	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		if (node->n_in > max_in)
			max_in = node->n_in;
		if (node->n_out > max_out)
			max_out = node->n_out;
	}
	in = calloc((size_t)max_in, sizeof(*in));
	out = calloc((size_t)max_out, sizeof(*out));
	if (!in || !out) {
		ret = cep__set_error(CEP_ENOMEM, "out of memory folding constants");
		goto out;
	}
	for (k = 0; k < g->n_order; k++) {
		ret = fold_node(g, g->order[k], in, out);
		if (ret < 0)
			goto out;
	}
	/* Folded chains (Shape -> Reshape targets) are constants by now: infer
	 * again so that the fusions see the ranks and sizes they give (an
	 * exported BERT's hidden states have no known rank before). The
	 * folded nodes go first: inference must not touch their outputs,
	 * which are constants now. */
	ret = graph_simplify(g);
	if (ret == 0)
		ret = shape_infer_graph(g);
	if (ret < 0)
		goto out;
	ret = fuse_xfmr(g);
	if (ret < 0)
		goto out;
	ret = graph_simplify(g);
	if (ret < 0)
		goto out;
	ret = fuse_graph(g);
	if (ret < 0)
		goto out;
	ret = subgraphs_optimize(g);
	if (ret < 0)
		goto out;
	ret = shape_infer_graph(g);
out:
	free(in);
	free(out);
	return ret;
}
