/*
 * precision.c — the half-precision rewrite of a loaded graph
 * (engine/precision.h).
 *
 * Three walks over the nodes, in the order they had when the pass began.
 * The first decides how each node computes: it tries the node with its
 * float32 inputs, and the attributes that name float32, in half, through
 * the node's own inference and the registry's kernel lookup for the
 * backend; a node passes both or stays float32. The second converts the
 * constants, now that it is known in which types each one is read. The
 * third rewires: every input slot reads its value in the type the slot
 * wants (a Cast is added once per value and type), every output is made
 * in the node's type, and a graph output made in half becomes a Cast back
 * to float32 under its own name. The Casts added are not walked: they are
 * made consistent. Sorting and inference then run over the result, which
 * settles every type and shape again.
 */
#include "engine/precision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/model.h"
#include "kernels/registry.h"
#include "engine/shape.h"

/* How a node computes. */
enum mode {
	MODE_NONE,   /* no float32 tensor, or reads only shapes: untouched */
	MODE_HALF,   /* in the half type */
	MODE_FLOAT,  /* in float32, with Casts around it where needed */
};

/* In which types a float32 constant is read. */
enum want {
	WANT_HALF = 1u << 0,
	WANT_FLOAT = 1u << 1,
};

/* The state of one conversion. Arrays "per value" cover the values the
 * graph had when it began (n0), except twin, which covers those added. */
struct conv {
	struct graph *g;
	cep_dtype half;
	enum backend_kind be;
	int opset;                         /* ai.onnx opset of the Casts added */
	const struct op_schema *cast;      /* their schema */
	const struct op_kernel *cast_host; /* converts constants */
	int n0;                            /* values when the pass began */
	int *order;                        /* (n_order) the nodes as ordered then */
	int n_order;
	unsigned char *mode;               /* per node: enum mode */
	bool *was_f32;                     /* per value: float32 when it began */
	cep_dtype *made_as;                /* per value: its type as a half node
	                                    * makes it (float32 for some) */
	unsigned char *want;               /* per value: enum want */
	int *twin;                         /* (2 * n0) per value: the same value
	                                    * in the other float type, or -1 */
	struct op_tensor *in, *out;        /* scratch for one node */
	struct engine_precision_stats st;
};

static int nomem(void)
{
	return cep__set_error(CEP_ENOMEM, "out of memory converting the model to half precision");
}

cep_dtype precision_half_dtype(cep_precision p)
{
	switch (p) {
	case CEP_PRECISION_FP16: return CEP_DTYPE_FLOAT16;
	case CEP_PRECISION_BF16: return CEP_DTYPE_BFLOAT16;
	default: return CEP_DTYPE_UNDEFINED;
	}
}

const char *precision_name(cep_precision p)
{
	static const char *const names[] = { "fp32", "tf32", "fp16", "bf16" };

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* ------------------------------------------------------------------ rules */

static bool is_op(const struct graph_node *node, const char *op_type)
{
	return op_domain_equal(node->op.domain, "") && strcmp(node->op.op_type, op_type) == 0;
}

/* Whether input i of node stays float32 whatever the node computes in:
 * Resize's roi and scales and Upsample's scales are float32 by their
 * schemas, and the output's shape is computed from them; OneHot's
 * indices and depth are counts, which rounding would move (and bfloat16
 * is not a type they may have); GridSample's grid holds positions, which
 * float16 would move by a quarter of a pixel across 1024 of them and
 * bfloat16 by two (its own type, T2, may differ from X's). */
static bool slot_keeps_float(const struct graph_node *node, int i)
{
	if (is_op(node, "OneHot"))
		return i < 2;
	if (is_op(node, "GridSample"))
		return i == 1;
	return i > 0 && (is_op(node, "Resize") || is_op(node, "Upsample"));
}

/* Whether node computes in float32 whatever kernels there are: Range's
 * element count comes from its values, which rounding would change;
 * IsInf's answer, which rounding to half would change for the finite
 * values past half's range (1e5 is infinite in float16); AffineGrid,
 * whose output is a grid of positions (GridSample's grid above). The quantized
 * operators turn floats into integers or back by their scales: a scale
 * rounded to half (8 bits of bfloat16) moves every quantized value, and
 * so does an x rounded before it is quantized, so they keep the float32
 * model's scales and inputs and give its integers exactly; their float
 * outputs are cast where half nodes read them. Control flow (If, Loop,
 * Scan) too: its subgraphs are not converted, so it takes and makes its
 * values, outer ones included, in float32, with Casts around it. */
static bool node_keeps_float(const struct graph_node *node)
{
	static const char *const keep[] = {
		"Range", "IsInf", "AffineGrid", "QuantizeLinear", "DequantizeLinear",
		"DynamicQuantizeLinear", "QLinearMatMul", "QLinearConv",
	};
	size_t i;

	if (node->schema->flags & OP_CONTROL)
		return true;
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		if (is_op(node, keep[i]))
			return true;
	}
	return false;
}

/* Whether node reads or makes a float64 tensor: it keeps float32 for its
 * float32 ones, so that a Cast between float32 and float64 (or any node
 * between them) sees the values an fp32 session has, and the float64
 * part of a graph computes as it does there. onnxruntime's float16
 * converter leaves float64 tensors alone as well. */
static bool node_has_f64(const struct graph *g, const struct graph_node *node)
{
	int i;

	for (i = 0; i < node->n_in; i++) {
		if (node->in[i] >= 0 && g->values[node->in[i]].t.dtype == CEP_DTYPE_FLOAT64)
			return true;
	}
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] >= 0 && g->values[node->out[i]].t.dtype == CEP_DTYPE_FLOAT64)
			return true;
	}
	return false;
}

/* Whether attribute a names float32 as the type of what the node makes. */
static bool attr_names_f32(const struct op_attr *a)
{
	if (a->type == OP_ATTR_INT)
		return (strcmp(a->name, "to") == 0 || strcmp(a->name, "dtype") == 0) &&
		       a->i == CEP_DTYPE_FLOAT32;
	return a->type == OP_ATTR_TENSOR && strcmp(a->name, "value") == 0 && a->t &&
	       a->t->dtype == CEP_DTYPE_FLOAT32;
}

/* Whether ConstantOfShape node makes its default, a float32 zero. */
static bool cos_default(const struct graph_node *node)
{
	return is_op(node, "ConstantOfShape") && !op_attr_find(&node->op, "value");
}

/* Whether node n's attributes change in half. A Cast whose result leaves
 * the graph keeps its target: the caller gets float32 anyway, and a detour
 * through half would only round (integers above 2048, for one). */
static bool attrs_change(const struct conv *c, int n)
{
	const struct graph_node *node = &c->g->nodes[n];
	int i;

	if (is_op(node, "Cast") && node->out[0] >= 0 &&
	    (c->g->values[node->out[0]].flags & GRAPH_VALUE_OUTPUT))
		return false;
	if (cos_default(node))
		return true;
	for (i = 0; i < node->op.n_attrs; i++) {
		if (attr_names_f32(&node->op.attrs[i]))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------- data */

/* The largest finite value of half type t. */
static float half_max(cep_dtype t)
{
	return t == CEP_DTYPE_FLOAT16 ? 65504.0f : 3.38953139e38f;
}

/*
 * Converts numel elements at src from type `from` to `to` into *out (new,
 * malloc'd) as the Cast kernel does: floats round to nearest even, except
 * that finite float32 values beyond the half type's range saturate to its
 * largest finite value instead of becoming infinite. Models write "minus
 * the largest float32" for a masked position (Hugging Face's attention
 * mask) and multiply it by 0 where nothing is masked: an infinity there
 * would make NaN of every kept position.
 */
static int data_convert(const struct conv *c, const void *src, cep_dtype from, cep_dtype to,
			int64_t numel, void **out)
{
	const struct op_attr to_attr = { .name = "to", .type = OP_ATTR_INT, .i = to };
	const struct op_node node = {
		.name = "", .op_type = "Cast", .domain = "", .opset = c->opset,
		.n_attrs = 1, .attrs = &to_attr,
	};
	struct op_tensor in = { .data = (void *)src, .dtype = from, .rank = 1, .dims = { numel } };
	struct op_tensor o = { .dtype = to, .rank = 1, .dims = { numel } };
	float *sat = NULL;
	int ret;

	if (from == CEP_DTYPE_FLOAT32 && (to == CEP_DTYPE_FLOAT16 || to == CEP_DTYPE_BFLOAT16)) {
		const float *f = src, max = half_max(to);

		sat = malloc((size_t)(numel ? numel : 1) * sizeof(*sat));
		if (!sat)
			return nomem();
		for (int64_t i = 0; i < numel; i++)
			sat[i] = isfinite(f[i]) && fabsf(f[i]) > max ? copysignf(max, f[i]) : f[i];
		in.data = sat;
	}
	ret = exec_host_eval(&node, c->cast_host, &in, 1, &o, 1);
	free(sat);
	*out = o.data;
	return ret;
}

/* A copy of tensor t (float32, on the host) in half, in the graph's arena;
 * its data, malloc'd, is also stored in *data. */
static int tensor_half(struct conv *c, const struct op_tensor *t, const struct op_tensor **out,
		       void **data)
{
	struct op_tensor *h = graph_alloc(c->g, sizeof(*h));
	int64_t numel;
	int ret;

	if (!h)
		return nomem();
	ret = op_tensor_numel(t, &numel);
	if (ret < 0)
		return ret;
	*h = *t;
	h->dtype = c->half;
	ret = data_convert(c, t->data, t->dtype, c->half, numel, &h->data);
	if (ret < 0)
		return ret;
	*data = h->data;
	*out = h;
	return 0;
}

/*
 * A copy of node n's attributes, in the graph's arena, with float32 named
 * in half: "to" and "dtype", a float32 "value" tensor (converted), and for
 * a ConstantOfShape without a value a half zero. The converted tensor's
 * data (malloc'd; NULL if none) is in *data, for the caller to free if the
 * copy is not kept.
 */
static int attrs_half(struct conv *c, int n, struct op_attr **out, int *n_out, void **data)
{
	static const float zero;
	const struct op_tensor zero_t = { .data = (void *)&zero, .dtype = CEP_DTYPE_FLOAT32,
					  .rank = 1, .dims = { 1 } };
	const struct graph_node *node = &c->g->nodes[n];
	int n_attrs = node->op.n_attrs, i, ret;
	struct op_attr *a;

	*data = NULL;
	a = graph_alloc(c->g, sizeof(*a) * (size_t)(n_attrs + 1));
	if (!a)
		return nomem();
	if (n_attrs)
		memcpy(a, node->op.attrs, sizeof(*a) * (size_t)n_attrs);
	for (i = 0; i < n_attrs; i++) {
		if (!attr_names_f32(&a[i]))
			continue;
		if (a[i].type == OP_ATTR_INT) {
			a[i].i = c->half;
			continue;
		}
		ret = tensor_half(c, a[i].t, &a[i].t, data);
		if (ret < 0)
			return ret;
	}
	if (cos_default(node)) {
		a[n_attrs] = (struct op_attr){ .name = "value", .type = OP_ATTR_TENSOR };
		ret = tensor_half(c, &zero_t, &a[n_attrs].t, data);
		if (ret < 0)
			return ret;
		n_attrs++;
	}
	*out = a;
	*n_out = n_attrs;
	return 0;
}

/* Frees the data of node's float32 "value" tensor, which a converted copy
 * has replaced: node_free_tensors() of graph.c sees only the copy. */
static void value_data_free(const struct op_attr *attrs, int n_attrs)
{
	int i;

	for (i = 0; i < n_attrs; i++) {
		if (attrs[i].type == OP_ATTR_TENSOR && attr_names_f32(&attrs[i])) {
			free(attrs[i].t->data);
			((struct op_tensor *)attrs[i].t)->data = NULL;
		}
	}
}

/* ---------------------------------------------------------------- decide */

/* Whether node n has a float32 tensor (or makes one from an attribute). */
static bool node_has_f32(const struct conv *c, int n)
{
	const struct graph_node *node = &c->g->nodes[n];
	int i;

	for (i = 0; i < node->n_in; i++) {
		if (node->in[i] >= 0 && c->was_f32[node->in[i]])
			return true;
	}
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] >= 0 && c->was_f32[node->out[i]])
			return true;
	}
	return attrs_change(c, n);
}

/*
 * Decides how node n computes: in half when, with its float32 inputs
 * (those that may change) and its attributes in half, its inference
 * succeeds and the backend has a kernel for the type that picks one;
 * else in float32. A node going half keeps its rewritten attributes, and
 * the types its outputs are made in are noted.
 */
static int node_decide(struct conv *c, int n)
{
	struct graph *g = c->g;
	struct graph_node *node = &g->nodes[n];
	const struct op_attr *old_attrs = node->op.attrs;
	const struct op_kernel *k;
	struct op_attr *attrs = NULL;
	int old_n = node->op.n_attrs, n_attrs = old_n, i, ret;
	void *data = NULL;

	/* Shape and Size read only shapes, which every type has: they take
	 * their input in whichever type it is made. */
	c->mode[n] = MODE_NONE;
	if (!node_has_f32(c, n) || (node->schema->flags & OP_SHAPE_ONLY))
		return 0;
	c->mode[n] = MODE_FLOAT;
	if (node_keeps_float(node) || node_has_f64(g, node))
		return 0;
	for (i = 0; i < node->n_in; i++) {
		struct op_tensor *t = &c->in[i];
		int v = node->in[i];

		if (v < 0) {
			memset(t, 0, sizeof(*t));
			continue;
		}
		*t = g->values[v].t;
		if (!(g->values[v].flags & GRAPH_VALUE_CONST))
			t->data = NULL;
		if (c->was_f32[v] && !slot_keeps_float(node, i)) {
			t->dtype = c->half;
			t->data = NULL;
		}
	}
	if (attrs_change(c, n)) {
		ret = attrs_half(c, n, &attrs, &n_attrs, &data);
		if (ret < 0) {
			free(data);
			return ret;
		}
		node->op.attrs = attrs;
		node->op.n_attrs = n_attrs;
	}
	ret = shape_infer_node(g, n, c->in, c->out);
	if (ret == 0)
		ret = op_kernel_find(node->schema, node->op.opset, c->be,
				     op_kernel_dtype(node->schema, c->in, node->n_in, c->out,
						     node->n_out), &k);
	if (ret < 0) {
		/* No half for this node here: it stays float32. */
		cep__clear_error();
		node->op.attrs = old_attrs;
		node->op.n_attrs = old_n;
		free(data);
		return 0;
	}
	if (attrs)
		value_data_free(old_attrs, old_n);
	c->mode[n] = MODE_HALF;
	for (i = 0; i < node->n_out; i++) {
		if (node->out[i] >= 0 && node->out[i] < c->n0)
			c->made_as[node->out[i]] = c->out[i].dtype;
	}
	return 0;
}

/* ----------------------------------------------------------------- values */

/* Adds a value like v (shape, no data, no flags) of type t, named after v
 * and the type ("x/float16"; another suffix if that is taken), with no
 * producer yet. */
static int value_add(struct conv *c, int v, cep_dtype t, int *out)
{
	struct graph *g = c->g;
	const char *base = g->values[v].name;
	size_t len = strlen(base) + 48;
	char *name = malloc(len);
	int k, ret = CEP_EEXIST;

	if (!name)
		return nomem();
	for (k = 0; ret == CEP_EEXIST; k++) {
		if (k == 0)
			snprintf(name, len, "%s/%s", base, cep_dtype_name(t));
		else
			snprintf(name, len, "%s/%s~%d", base, cep_dtype_name(t), k);
		ret = graph_value_new(g, name, out);
	}
	free(name);
	if (ret < 0)
		return ret;
	g->values[*out].t = g->values[v].t;
	g->values[*out].t.data = NULL;
	g->values[*out].t.dtype = t;
	c->twin[v] = *out;
	c->twin[*out] = v;
	return 0;
}

/* Adds the node Cast(from) -> to, converting to type t, named after to. */
static int cast_add(struct conv *c, int from, int to, cep_dtype t)
{
	struct graph *g = c->g;
	struct op_attr *a = graph_alloc(g, sizeof(*a));
	struct graph_node *node;
	int n, ret;

	if (!a)
		return nomem();
	ret = graph_node_new(g, 1, 1, &n);
	if (ret < 0)
		return ret;
	*a = (struct op_attr){ .name = "to", .type = OP_ATTR_INT, .i = t };
	node = &g->nodes[n];
	node->op.name = g->values[to].name;
	node->op.op_type = "Cast";
	node->op.domain = "";
	node->op.opset = c->opset;
	node->op.n_attrs = 1;
	node->op.attrs = a;
	node->schema = c->cast;
	node->in[0] = from;
	node->out[0] = to;
	g->values[to].producer = n;
	c->st.casts++;
	return 0;
}

/* Stores in *out the value holding v in type t: v itself, its twin, or a
 * twin made now by a Cast from v. */
static int value_in(struct conv *c, int v, cep_dtype t, int *out)
{
	int w, ret;

	if (c->g->values[v].t.dtype == t) {
		*out = v;
		return 0;
	}
	if (c->twin[v] >= 0) {
		*out = c->twin[v];
		return 0;
	}
	if (c->g->values[v].flags & GRAPH_VALUE_CONST)
		return cep__set_error(CEP_EINTERNAL, "constant '%s' has no %s copy",
				      c->g->values[v].name, cep_dtype_name(t));
	ret = value_add(c, v, t, &w);
	if (ret < 0)
		return ret;
	ret = cast_add(c, v, w, t);
	if (ret < 0)
		return ret;
	*out = w;
	return 0;
}

/* -------------------------------------------------------------- constants */

/* Whether input i of node n reads its float32 value in half. */
static bool slot_half(const struct conv *c, int n, int i)
{
	return c->mode[n] == MODE_HALF && !slot_keeps_float(&c->g->nodes[n], i);
}

/* Converts each float32 constant read in half: in place when nothing
 * reads it in float32 (a graph output is read so), else into a twin. */
static int consts_convert(struct conv *c)
{
	struct graph *g = c->g;
	int k, i, v, ret;

	for (k = 0; k < c->n_order; k++) {
		int n = c->order[k];
		const struct graph_node *node = &g->nodes[n];

		if (c->mode[n] == MODE_NONE)
			continue;
		for (i = 0; i < node->n_in; i++) {
			v = node->in[i];
			if (v < 0 || !c->was_f32[v] || !(g->values[v].flags & GRAPH_VALUE_CONST))
				continue;
			c->want[v] |= slot_half(c, n, i) ? WANT_HALF : WANT_FLOAT;
		}
	}
	for (v = 0; v < c->n0; v++) {
		struct graph_value *val = &g->values[v];
		int64_t numel;
		void *data;
		int w;

		if (!c->was_f32[v] || !(val->flags & GRAPH_VALUE_CONST) || !(c->want[v] & WANT_HALF))
			continue;
		ret = op_tensor_numel(&val->t, &numel);
		if (ret < 0)
			return ret;
		ret = data_convert(c, val->t.data, CEP_DTYPE_FLOAT32, c->half, numel, &data);
		if (ret < 0)
			return ret;
		c->st.constants++;
		c->st.constant_bytes += val->bytes;
		if (!(c->want[v] & WANT_FLOAT) && !(val->flags & GRAPH_VALUE_OUTPUT)) {
			val->t.dtype = c->half;
			graph_value_set_const(g, v, data, (size_t)numel * cep_dtype_size(c->half));
			continue;
		}
		ret = value_add(c, v, c->half, &w);
		if (ret < 0) {
			free(data);
			return ret;
		}
		graph_value_set_const(g, w, data, (size_t)numel * cep_dtype_size(c->half));
	}
	return 0;
}

/* ---------------------------------------------------------------- rewire */

/* Points node n's inputs at their values in the types its slots want and
 * gives its outputs the types it makes them in. */
static int node_rewire(struct conv *c, int n)
{
	struct graph *g = c->g;
	int i, ret;

	if (c->mode[n] == MODE_NONE)
		return 0;
	for (i = 0; i < g->nodes[n].n_in; i++) {
		int v = g->nodes[n].in[i], w = -1;

		if (v < 0 || v >= c->n0 || !c->was_f32[v])
			continue;
		ret = value_in(c, v, slot_half(c, n, i) ? c->half : CEP_DTYPE_FLOAT32, &w);
		if (ret < 0)
			return ret;
		g->nodes[n].in[i] = w;
	}
	if (c->mode[n] != MODE_HALF)
		return 0;
	for (i = 0; i < g->nodes[n].n_out; i++) {
		int v = g->nodes[n].out[i], w = -1;

		if (v < 0 || v >= c->n0 || !c->was_f32[v] || c->made_as[v] == CEP_DTYPE_FLOAT32)
			continue;
		if (!(g->values[v].flags & GRAPH_VALUE_OUTPUT)) {
			g->values[v].t.dtype = c->made_as[v];
			continue;
		}
		/* The caller gets v in float32: the node makes its twin, and
		 * a Cast makes v from that. */
		ret = value_add(c, v, c->made_as[v], &w);
		if (ret < 0)
			return ret;
		g->nodes[n].out[i] = w;
		g->values[w].producer = n;
		ret = cast_add(c, w, v, CEP_DTYPE_FLOAT32);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------ main */

static int conv_init(struct conv *c, struct model *m, cep_dtype half, enum backend_kind be)
{
	struct graph *g = &m->g;
	int64_t opset = model_opset(m, "");
	int max_io = 1, k, v, ret;

	memset(c, 0, sizeof(*c));
	c->g = g;
	c->half = half;
	c->be = be;
	c->n0 = g->n_values;
	/* Cast takes bfloat16 from opset 13; an older model's Casts are
	 * opset-13 ones, which mean the same for every other type. */
	c->opset = opset < 13 ? 13 : opset > OP_OPSET_MAX ? OP_OPSET_MAX : (int)opset;
	ret = op_schema_find("", "Cast", c->opset, &c->cast);
	if (ret == 0)
		ret = op_kernel_find(c->cast, c->opset, BACKEND_HOST, CEP_DTYPE_FLOAT32,
				     &c->cast_host);
	if (ret < 0)
		return ret;
	for (k = 0; k < g->n_order; k++) {
		const struct graph_node *node = &g->nodes[g->order[k]];

		if (node->n_in > max_io)
			max_io = node->n_in;
		if (node->n_out > max_io)
			max_io = node->n_out;
	}
	c->n_order = g->n_order;
	c->order = malloc(((size_t)g->n_order + 1) * sizeof(*c->order));
	c->mode = calloc((size_t)g->n_nodes + 1, sizeof(*c->mode));
	c->was_f32 = calloc((size_t)c->n0 + 1, sizeof(*c->was_f32));
	c->made_as = calloc((size_t)c->n0 + 1, sizeof(*c->made_as));
	c->want = calloc((size_t)c->n0 + 1, sizeof(*c->want));
	c->twin = malloc((2 * (size_t)c->n0 + 1) * sizeof(*c->twin));
	c->in = calloc((size_t)max_io, sizeof(*c->in));
	c->out = calloc((size_t)max_io, sizeof(*c->out));
	if (!c->order || !c->mode || !c->was_f32 || !c->made_as || !c->want || !c->twin ||
	    !c->in || !c->out)
		return nomem();
	memcpy(c->order, g->order, (size_t)g->n_order * sizeof(*c->order));
	for (v = 0; v < c->n0; v++) {
		c->was_f32[v] = g->values[v].t.dtype == CEP_DTYPE_FLOAT32;
		c->made_as[v] = CEP_DTYPE_FLOAT32;
	}
	for (v = 0; v < 2 * c->n0 + 1; v++)
		c->twin[v] = -1;
	return 0;
}

/* Gives back to the graph outputs what inference alone cannot know, which
 * the model's declarations filled in at load (model.c): the outputs are
 * made again by the Casts, and inferred anew. */
static void outputs_restore(struct graph *g, const struct op_tensor *was)
{
	int i, d;

	for (i = 0; i < g->n_outputs; i++) {
		struct op_tensor *t = &g->values[g->outputs[i]].t;

		if (t->rank < 0) {
			t->rank = was[i].rank;
			memcpy(t->dims, was[i].dims, sizeof(t->dims));
			continue;
		}
		if (t->rank != was[i].rank)
			continue;
		for (d = 0; d < t->rank; d++) {
			if (t->dims[d] == OP_DIM_UNKNOWN)
				t->dims[d] = was[i].dims[d];
		}
	}
}

static void conv_close(struct conv *c)
{
	free(c->order);
	free(c->mode);
	free(c->was_f32);
	free(c->made_as);
	free(c->want);
	free(c->twin);
	free(c->in);
	free(c->out);
}

int precision_model_convert(struct model *m, cep_dtype half, enum backend_kind be,
			    struct engine_precision_stats *st)
{
	struct op_tensor *was = NULL;
	struct conv c;
	int k, ret;

	if (st) {
		memset(st, 0, sizeof(*st));
		st->first_float_node = -1;
	}
	if (half != CEP_DTYPE_FLOAT16 && half != CEP_DTYPE_BFLOAT16)
		return cep__set_error(CEP_EINVAL, "half precision is float16 or bfloat16, not %s",
				      cep_dtype_name(half));
	ret = conv_init(&c, m, half, be);
	if (ret < 0)
		goto out;
	was = calloc((size_t)m->g.n_outputs + 1, sizeof(*was));
	if (!was) {
		ret = nomem();
		goto out;
	}
	for (k = 0; k < m->g.n_outputs; k++)
		was[k] = m->g.values[m->g.outputs[k]].t;
	c.st.first_float_node = -1;
	for (k = 0; k < c.n_order; k++) {
		int n = c.order[k];

		ret = node_decide(&c, n);
		if (ret < 0)
			goto out;
		if (c.mode[n] == MODE_HALF)
			c.st.half_nodes++;
		if (c.mode[n] == MODE_FLOAT && c.st.float_nodes++ == 0) {
			c.st.first_float_node = n;
			graph_node_label(c.g, n, c.st.first_float, sizeof(c.st.first_float));
		}
	}
	ret = consts_convert(&c);
	if (ret < 0)
		goto out;
	for (k = 0; k < c.n_order; k++) {
		ret = node_rewire(&c, c.order[k]);
		if (ret < 0)
			goto out;
	}
	ret = graph_sort(c.g);
	if (ret < 0)
		goto out;
	ret = shape_infer_graph(c.g);
	if (ret < 0)
		goto out;
	outputs_restore(c.g, was);
	if (st)
		*st = c.st;
out:
	free(was);
	conv_close(&c);
	return ret;
}
