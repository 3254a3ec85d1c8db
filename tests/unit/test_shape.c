/*
 * test_shape.c — shape and type inference with symbolic dimensions: names
 * such as batch and seq carry through MatMul, broadcasting, Reshape with 0
 * and -1, Transpose, Gather, Unsqueeze, Concat and Flatten at load; the
 * binding of real input shapes checks fixed dims and symbol consistency
 * with messages naming input and dimension.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/model.h"
#include "tests/unit/onnxb.h"
#include "engine/shape.h"

static struct model *load_ok(struct onnxb *b)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;

	buf = onnxb_finish(b, &len);
	cr_assert_eq(model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}

/* The dims of value name as text, symbols by name. */
static const char *dims_of(const struct model *m, const char *name)
{
	static char buf[160];
	int v = graph_value_find(&m->g, name);

	cr_assert_geq(v, 0, "no value %s", name);
	op_dims_format(&m->g.values[v].t, m->g.syms, m->g.n_syms, buf, sizeof(buf));
	return buf;
}

static cep_dtype dtype_of(const struct model *m, const char *name)
{
	return m->g.values[graph_value_find(&m->g, name)].t.dtype;
}

Test(shape, symbols_carry_through_an_attention_block)
{
	struct onnxb *b = onnxb_new(13);
	int64_t shape4[4] = { 0, 0, 4, 8 }, flat[2] = { 0, -1 }, axes[1] = { 1 };
	int64_t perm[4] = { 0, 2, 1, 3 }, idx[1] = { 1 };
	Onnx__NodeProto *n;
	struct model *m;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,seq,32");
	onnxb_input(b, "mask", CEP_DTYPE_FLOAT32, "batch,1,seq");
	onnxb_output(b, "y", 0, NULL);
	onnxb_output(b, "f", 0, NULL);
	onnxb_output(b, "g", 0, NULL);
	onnxb_output(b, "u", 0, NULL);
	onnxb_output(b, "c", 0, NULL);
	onnxb_output(b, "fl", 0, NULL);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "32,32", NULL);
	onnxb_init(b, "s4", CEP_DTYPE_INT64, "4", shape4);
	onnxb_init(b, "s2", CEP_DTYPE_INT64, "2", flat);
	onnxb_init(b, "ax", CEP_DTYPE_INT64, "1", axes);
	onnxb_init(b, "i1", CEP_DTYPE_INT64, "1", idx);
	onnxb_node(b, "MatMul", "x,w", "q");             /* [batch,seq,32] */
	onnxb_node(b, "Reshape", "q,s4", "q4");          /* [batch,seq,4,8] */
	n = onnxb_node(b, "Transpose", "q4", "qt");      /* [batch,4,seq,8] */
	onnxb_attr_ints(n, "perm", 4, perm);
	onnxb_node(b, "Add", "q,mask", "y");             /* [batch,seq,32] */
	onnxb_node(b, "Reshape", "q,s2", "f");           /* [batch,?] */
	n = onnxb_node(b, "Gather", "qt,i1", "g");       /* [batch,1,seq,8] */
	onnxb_attr_int(n, "axis", 1);
	onnxb_node(b, "Unsqueeze", "q,ax", "u");         /* [batch,1,seq,32] */
	n = onnxb_node(b, "Concat", "q,q", "c");         /* [batch,seq,64] */
	onnxb_attr_int(n, "axis", -1);
	n = onnxb_node(b, "Flatten", "qt", "fl");        /* [batch,?] */
	onnxb_attr_int(n, "axis", 1);
	m = load_ok(b);
	cr_assert_str_eq(dims_of(m, "q"), "[batch,seq,32]");
	cr_assert_str_eq(dims_of(m, "q4"), "[batch,seq,4,8]");
	cr_assert_str_eq(dims_of(m, "qt"), "[batch,4,seq,8]");
	/* [batch,seq,32] + [batch,1,seq]: seq against 32 can only be 32. */
	cr_assert_str_eq(dims_of(m, "y"), "[batch,seq,32]");
	cr_assert_str_eq(dims_of(m, "f"), "[batch,?]");
	cr_assert_str_eq(dims_of(m, "g"), "[batch,1,seq,8]");
	cr_assert_str_eq(dims_of(m, "u"), "[batch,1,seq,32]");
	cr_assert_str_eq(dims_of(m, "c"), "[batch,seq,64]");
	cr_assert_str_eq(dims_of(m, "fl"), "[batch,?]");
	cr_assert_eq(dtype_of(m, "g"), CEP_DTYPE_FLOAT32);
	model_free(m);
}

Test(shape, reshape_minus_one_cancels_symbols)
{
	struct onnxb *b = onnxb_new(14);
	int64_t s1[3] = { 0, -1, 8 }, s2[2] = { -1, 32 }, s3[3] = { 0, 0, -1 };
	struct model *m;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT16, "batch,4,8");
	onnxb_output(b, "a", 0, NULL);
	onnxb_output(b, "b", 0, NULL);
	onnxb_output(b, "c", 0, NULL);
	onnxb_init(b, "s1", CEP_DTYPE_INT64, "3", s1);
	onnxb_init(b, "s2", CEP_DTYPE_INT64, "2", s2);
	onnxb_init(b, "s3", CEP_DTYPE_INT64, "3", s3);
	onnxb_node(b, "Reshape", "x,s1", "a");
	onnxb_node(b, "Reshape", "x,s2", "b");
	onnxb_node(b, "Reshape", "x,s3", "c");
	m = load_ok(b);
	cr_assert_str_eq(dims_of(m, "a"), "[batch,4,8]");
	cr_assert_str_eq(dims_of(m, "b"), "[batch,32]");
	cr_assert_str_eq(dims_of(m, "c"), "[batch,4,8]");
	cr_assert_eq(dtype_of(m, "a"), CEP_DTYPE_FLOAT16);
	model_free(m);
}

Test(shape, reshape_of_fixed_dims_must_keep_the_count)
{
	struct onnxb *b = onnxb_new(13);
	int64_t s[2] = { 5, -1 };
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", 0, NULL);
	onnxb_init(b, "s", CEP_DTYPE_INT64, "2", s);
	onnxb_node(b, "Reshape", "x,s", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(model_load(buf, len, -1, &m), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Reshape: 6 elements do not divide into dimensions of 5"),
		  "%s", cep_last_error());
	free(buf);
}

Test(shape, broadcast_conflict_is_an_error)
{
	struct onnxb *b = onnxb_new(13);
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,3");
	onnxb_input(b, "z", CEP_DTYPE_FLOAT32, "4");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Add", "x,z", "y");
	buf = onnxb_finish(b, &len);
	cr_assert_eq(model_load(buf, len, -1, &m), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "Add: shapes [?0,3] and [4] do not broadcast "
					   "(dimension 1: 3 vs 4)"), "%s", cep_last_error());
	free(buf);
}

Test(shape, declared_output_dims_fill_what_inference_cannot_know)
{
	struct onnxb *b = onnxb_new(13);
	struct model *m;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "n,?");
	onnxb_input(b, "s", CEP_DTYPE_INT64, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "n,k");
	onnxb_node(b, "Reshape", "x,s", "y");
	m = load_ok(b);
	cr_assert_str_eq(dims_of(m, "y"), "[n,k]");
	model_free(m);
}

Test(shape, binding_checks_fixed_dims_and_symbols)
{
	struct onnxb *b = onnxb_new(13);
	int64_t vals[4];
	int from[4];
	struct shape_binding bind = { vals, from, 0 };
	int64_t a_ok[3] = { 2, 5, 3 }, b_bad[2] = { 3, 3 }, b_ok[2] = { 2, 3 };
	int64_t a_bad[3] = { 2, 5, 4 };
	struct model *m;
	int va, vb;

	onnxb_input(b, "a", CEP_DTYPE_FLOAT32, "batch,?,3");
	onnxb_input(b, "b", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Add", "a,b", "y");
	m = load_ok(b);
	bind.n = m->g.n_syms;
	cr_assert_eq(bind.n, 1);
	va = graph_value_find(&m->g, "a");
	vb = graph_value_find(&m->g, "b");
	shape_binding_reset(&bind);
	cr_assert_eq(shape_bind_input(&m->g, va, 3, a_bad, &bind), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'a': dimension 2 is 4, the model wants 3");
	shape_binding_reset(&bind);
	cr_assert_eq(shape_bind_input(&m->g, va, 2, a_ok, &bind), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'a': rank is 2, the model wants 3");
	shape_binding_reset(&bind);
	cr_assert_eq(shape_bind_input(&m->g, va, 3, a_ok, &bind), 0);
	cr_assert_eq(vals[0], 2);
	cr_assert_eq(shape_bind_input(&m->g, vb, 2, b_bad, &bind), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "input 'b': dimension 0 is 3, but 'batch' is 2 from input 'a'");
	cr_assert_eq(shape_bind_input(&m->g, vb, 2, b_ok, &bind), 0);
	model_free(m);
}

Test(shape, unknown_rank_propagates_without_failing)
{
	struct onnxb *b = onnxb_new(13);
	struct model *m;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "h");
	onnxb_node(b, "Softmax", "h", "y");
	m = load_ok(b);
	cr_assert_eq(m->g.values[graph_value_find(&m->g, "y")].t.rank, -1);
	cr_assert_eq(dtype_of(m, "y"), CEP_DTYPE_FLOAT32);
	model_free(m);
}
