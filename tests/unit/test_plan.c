/*
 * test_plan.c — execution plans: the memory planner (values alive at the
 * same step never share bytes, values that are not reuse them, offsets
 * aligned), checked on hand-made lifetimes, on random ones, and on a real
 * plan's steps; workspaces sized up front; shapes that only data could
 * decide refused with the node named.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/model.h"
#include "tests/unit/onnxb.h"
#include "engine/plan.h"

static bool overlap_time(const struct plan_mem_item *a, const struct plan_mem_item *b)
{
	return a->first <= b->last && b->first <= a->last;
}

static bool overlap_bytes(size_t a, size_t an, size_t b, size_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

Test(memplan, values_alive_together_are_apart_and_others_share)
{
	struct plan_mem_item it[3] = {
		{ .bytes = 100, .first = 0, .last = 1 },
		{ .bytes = 100, .first = 1, .last = 2 },
		{ .bytes = 100, .first = 2, .last = 3 },
	};
	size_t total;

	cr_assert_eq(plan_mem_assign(it, 3, 256, &total), 0);
	cr_assert_neq(it[0].offset, it[1].offset);
	cr_assert_neq(it[1].offset, it[2].offset);
	cr_assert_eq(it[0].offset, it[2].offset, "a and c never live at once");
	cr_assert_eq(total, 512);
}

Test(memplan, largest_first_fills_gaps)
{
	/* A big value alive throughout, small ones around it. */
	struct plan_mem_item it[4] = {
		{ .bytes = 1000, .first = 0, .last = 9 },
		{ .bytes = 10, .first = 0, .last = 2 },
		{ .bytes = 10, .first = 3, .last = 5 },
		{ .bytes = 0, .first = 0, .last = 9 },
	};
	size_t total;

	cr_assert_eq(plan_mem_assign(it, 4, 256, &total), 0);
	cr_assert_eq(it[0].offset, 0);
	cr_assert_eq(it[1].offset, 1024);
	cr_assert_eq(it[2].offset, 1024);
	cr_assert_eq(total, 1280);
}

Test(memplan, random_lifetimes_never_collide)
{
	enum { N = 2000 };
	struct plan_mem_item *it = calloc(N, sizeof(*it));
	unsigned s = 99;
	size_t total, sum = 0, maxb = 0;
	int i, j, bad = 0;

	for (i = 0; i < N; i++) {
		s = s * 1103515245u + 12345u;
		it[i].first = (int)((s >> 8) % 400);
		s = s * 1103515245u + 12345u;
		it[i].last = it[i].first + (int)((s >> 8) % ((s >> 20) % 3 ? 8 : 200));
		s = s * 1103515245u + 12345u;
		it[i].bytes = (s >> 8) % 5000;
		sum += (it[i].bytes + 255) / 256 * 256;
		maxb = it[i].bytes > maxb ? it[i].bytes : maxb;
	}
	cr_assert_eq(plan_mem_assign(it, N, 256, &total), 0);
	for (i = 0; i < N; i++) {
		bad += it[i].offset % 256 != 0;
		bad += it[i].offset + it[i].bytes > total;
		for (j = i + 1; j < N; j++) {
			if (overlap_time(&it[i], &it[j]) &&
			    overlap_bytes(it[i].offset, it[i].bytes, it[j].offset, it[j].bytes))
				bad++;
		}
	}
	cr_assert_eq(bad, 0);
	cr_assert_leq(total, sum);
	cr_assert_lt(total, sum / 4, "lifetimes are short: memory must be reused");
	cr_assert_geq(total, maxb);
	free(it);
}

/* ------------------------------------------------------------- real plans */

struct built {
	struct model *m;
	struct backend *be;
	struct backend_stream *st;
	void **const_dev;
	struct plan *p;
};

static struct model *load(struct onnxb *b)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;

	buf = onnxb_finish(b, &len);
	cr_assert_eq(model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* Builds a plan of m for one input of the given dtype and dims; returns
 * the error and leaves the plan in bt->p. */
static int build(struct built *bt, struct model *m, cep_dtype dt, int rank, const int64_t *dims)
{
	struct op_tensor in = { .dtype = dt, .rank = rank };
	struct plan_env env;
	int v;

	memset(bt, 0, sizeof(*bt));
	bt->m = m;
	cr_assert_eq(backend_host_new(0, &bt->be), 0);
	cr_assert_eq(backend_stream_new(bt->be, 0, &bt->st), 0);
	bt->const_dev = calloc((size_t)m->g.n_values + 1, sizeof(void *));
	for (v = 0; v < m->g.n_values; v++)
		bt->const_dev[v] = m->g.values[v].t.data;
	memcpy(in.dims, dims, sizeof(int64_t) * (size_t)rank);
	env = (struct plan_env){ .g = &m->g, .be = bt->be, .stream = bt->st,
				.const_dev = bt->const_dev };
	return plan_build(&env, &in, dims, rank, &bt->p);
}

static void built_close(struct built *bt)
{
	plan_free(bt->p, bt->be);
	backend_stream_free(bt->be, bt->st);
	backend_free(bt->be);
	free(bt->const_dev);
	model_free(bt->m);
}

Test(plan, step_values_alive_together_never_overlap)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[2] = { 8, 16 };
	struct built bt;
	struct plan *p;
	int first[64], last[64];
	void *ptr[64];
	size_t bytes[64];
	int s, i, j, v, bad = 0;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_node(b, "Relu", "x", "a");
	onnxb_node(b, "Sigmoid", "x", "b");
	onnxb_node(b, "Tanh", "x", "c");
	onnxb_node(b, "Add", "a,b", "d");
	onnxb_node(b, "Exp", "d", "e");
	onnxb_node(b, "Add", "e,c", "f");
	onnxb_node(b, "Mul", "f,x", "y");
	cr_assert_eq(build(&bt, load(b), CEP_DTYPE_FLOAT32, 2, dims), 0, "%s", cep_last_error());
	p = bt.p;
	cr_assert_eq(p->n_steps, 7);
	for (v = 0; v < 64; v++) {
		first[v] = 1 << 30;
		last[v] = -1;
		ptr[v] = NULL;
	}
	/* Lifetimes from the steps themselves; the input lives from the start,
	 * the output to the end. */
	for (s = 0; s < p->n_steps; s++) {
		const struct graph_node *node = &bt.m->g.nodes[p->steps[s].node];

		for (i = 0; i < node->n_in; i++) {
			v = node->in[i];
			last[v] = s;
			ptr[v] = p->steps[s].call.in[i].data;
			bytes[v] = op_tensor_bytes(&p->steps[s].call.in[i]);
			if (bt.m->g.values[v].flags & GRAPH_VALUE_INPUT)
				first[v] = 0;
		}
		v = node->out[0];
		first[v] = s;
		ptr[v] = p->steps[s].call.out[0].data;
		bytes[v] = op_tensor_bytes(&p->steps[s].call.out[0]);
		if (bt.m->g.values[v].flags & GRAPH_VALUE_OUTPUT)
			last[v] = p->n_steps;
	}
	for (i = 0; i < bt.m->g.n_values; i++) {
		for (j = i + 1; j < bt.m->g.n_values; j++) {
			if (!ptr[i] || !ptr[j] || first[i] > last[j] || first[j] > last[i])
				continue;
			bad += overlap_bytes((size_t)ptr[i], bytes[i], (size_t)ptr[j], bytes[j]);
		}
	}
	cr_assert_eq(bad, 0);
	/* Eight values of 512 bytes, at most five alive at once (at the
	 * first Add: x, a, b, c and d). */
	cr_assert_eq(p->activation_bytes, 5 * 512);
	built_close(&bt);
}

/* x [8, 16] -> Relu a -> Reshape r [128] -> Exp e, and, with reread, a
 * read again after the Reshape (Add of a and Reshape back). */
static struct model *view_model(bool reread)
{
	static const int64_t flat[1] = { 128 }, back[2] = { 8, 16 };
	struct onnxb *b = onnxb_new(13);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "8,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "flat", CEP_DTYPE_INT64, "1", flat);
	onnxb_init(b, "back", CEP_DTYPE_INT64, "2", back);
	onnxb_node(b, "Relu", "x", "a");
	onnxb_node(b, "Reshape", "a,flat", "r");
	onnxb_node(b, "Exp", "r", "e");
	if (reread) {
		onnxb_node(b, "Reshape", "e,back", "e2");
		onnxb_node(b, "Add", "e2,a", "y");
	} else {
		onnxb_node(b, "Reshape", "e,back", "y");
	}
	return load(b);
}

Test(plan, a_reshape_takes_the_bytes_of_a_value_nothing_reads_later)
{
	int64_t dims[2] = { 8, 16 };
	struct built bt;
	const struct plan_step *st;

	cr_assert_eq(build(&bt, view_model(false), CEP_DTYPE_FLOAT32, 2, dims), 0, "%s",
		     cep_last_error());
	cr_assert_eq(bt.p->n_steps, 4);
	st = &bt.p->steps[1];
	cr_assert_str_eq(bt.m->g.nodes[st->node].op.op_type, "Reshape");
	cr_assert_eq(st->call.out[0].data, st->call.in[0].data, "r lives in a's bytes");
	/* The last Reshape makes the graph output, which keeps its own. */
	st = &bt.p->steps[3];
	cr_assert_neq(st->call.out[0].data, st->call.in[0].data);
	built_close(&bt);
	cr_assert_eq(build(&bt, view_model(true), CEP_DTYPE_FLOAT32, 2, dims), 0, "%s",
		     cep_last_error());
	st = &bt.p->steps[1];
	cr_assert_neq(st->call.out[0].data, st->call.in[0].data, "a is read after the Reshape");
	built_close(&bt);
}

Test(plan, workspace_is_sized_up_front)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[2] = { 4, 8 };
	struct built bt;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT16, "n,8");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT16, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT16, "8,2", NULL);
	onnxb_node(b, "MatMul", "x,w", "y");
	cr_assert_eq(build(&bt, load(b), CEP_DTYPE_FLOAT16, 2, dims), 0, "%s", cep_last_error());
	/* float16 is widened to float32 in the workspace: (4*8 + 8*2 + 4*2) * 4. */
	cr_assert_eq(bt.p->workspace_bytes, (size_t)(32 + 16 + 8) * 4);
	cr_assert_eq(bt.p->block_bytes, bt.p->activation_bytes + bt.p->workspace_bytes);
	cr_assert_eq(bt.p->steps[0].call.workspace,
		     (unsigned char *)bt.p->block + bt.p->activation_bytes);
	built_close(&bt);
}

Test(plan, data_dependent_shapes_are_refused)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[1] = { 6 };
	struct built bt;
	struct model *m;
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "6");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, NULL);
	n = onnxb_node(b, "Cast", "x", "xi");
	onnxb_attr_int(n, "to", CEP_DTYPE_INT64);
	onnxb_node(b, "Reshape", "x,xi", "y");
	m = load(b);
	/* Reshape's target shape is computed from x's values. */
	cr_assert_eq(build(&bt, m, CEP_DTYPE_FLOAT32, 1, dims), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "node 1 'y' (op Reshape, domain ai.onnx, opset 13): "
					   "the shape [?,?,?,?,?,?] of output 'y' depends on values known "
					   "only at run time");
	cr_assert_null(bt.p);
	built_close(&bt);
}

Test(plan, unsupported_dtype_is_refused_at_planning)
{
	struct onnxb *b = onnxb_new(13);
	int64_t dims[1] = { 6 };
	struct built bt;

	onnxb_input(b, "x", CEP_DTYPE_INT64, "6");
	onnxb_output(b, "y", CEP_DTYPE_INT64, NULL);
	onnxb_node(b, "Sigmoid", "x", "y");
	cr_assert_eq(build(&bt, load(b), CEP_DTYPE_INT64, 1, dims), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Sigmoid, domain ai.onnx, opset 13): "
					   "Sigmoid: dtype int64 is not supported on the host backend "
					   "(supported: float32, float16, bfloat16, float64)");
	built_close(&bt);
}
