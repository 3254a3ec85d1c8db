/*
 * model_graph.c — one GraphProto into the graph IR (engine/model.h): its
 * initializers, inputs, nodes with their attributes, and outputs, checked
 * one by one; and, for a node with graph attributes (If, Loop, Scan), its
 * subgraphs, loaded the same way into graphs of their own.
 *
 * A subgraph may name any value of an enclosing graph. A name it does not
 * define itself becomes an outer-scope reference: a trailing input of the
 * subgraph (GRAPH_VALUE_OUTER), resolved when the enclosing graph connects
 * the node that holds it, once every value there exists (a file need not
 * be sorted): the value becomes one of the node's implicit inputs, or, in
 * a subgraph, an outer reference of that graph in turn. A name no
 * enclosing graph defines is an error of the model graph's node. Every
 * output of a subgraph is made by a node of it (an Identity is added where
 * the file returns an input, a constant, an outer value or one value
 * twice), so that the executor may copy a loop's outputs into its inputs
 * without the two ever sharing memory.
 *
 * Called by model.c for the model's graph; calls itself for subgraphs.
 */
#include "engine/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

/* One graph being loaded. */
struct gload {
	const struct model__ctx *c;
	const Onnx__GraphProto *gp;
	struct graph *g;
	int cap_inputs;                /* room in g->inputs */
	struct model__declared *decl;  /* (outputs) of the model graph */
};

int64_t model_opset(const struct model *m, const char *domain)
{
	int i;

	for (i = 0; i < m->n_opsets; i++) {
		if (op_domain_equal(m->opsets[i].domain, domain))
			return m->opsets[i].version;
	}
	return -1;
}

static int nomem(void)
{
	return cep__set_error(CEP_ENOMEM, NULL);
}

static bool is_sub(const struct gload *l)
{
	return l->g->parent != NULL;
}

/* Appends value v to g's inputs. */
static int input_add(struct gload *l, int v)
{
	struct graph *g = l->g;

	if (g->n_inputs == l->cap_inputs) {
		int cap = l->cap_inputs ? 2 * l->cap_inputs : 8;
		int *in = realloc(g->inputs, (size_t)cap * sizeof(*in));

		if (!in)
			return nomem();
		g->inputs = in;
		l->cap_inputs = cap;
	}
	g->inputs[g->n_inputs++] = v;
	return 0;
}

/*
 * The value called name as seen from graph l->g: its own, else (in a
 * subgraph) an outer-scope reference to it, made on first use. Sets *v to
 * -1 when the model graph has no such value.
 */
static int value_resolve(struct gload *l, const char *name, int *v)
{
	struct graph *g = l->g;
	int ret;

	*v = graph_value_find(g, name);
	if (*v >= 0 || !is_sub(l))
		return 0;
	ret = graph_value_new(g, name, v);
	if (ret < 0)
		return ret;
	g->values[*v].flags |= GRAPH_VALUE_INPUT | GRAPH_VALUE_OUTER;
	g->n_outer++;
	return input_add(l, *v);
}

/* -------------------------------------------------------- initializers */

static int load_initializers(struct gload *l)
{
	const Onnx__GraphProto *gp = l->gp;
	struct graph *g = l->g;
	size_t i;

	if (gp->n_sparse_initializer)
		return cep__set_error(CEP_EUNSUPPORTED, "sparse initializers are not supported");
	for (i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		char what[200];
		struct op_tensor t;
		size_t bytes;
		int v, ret;

		if (!tp->name || !*tp->name)
			return cep__set_error(CEP_EMODEL, "initializer %zu has no name", i);
		snprintf(what, sizeof(what), "initializer '%s'", tp->name);
		ret = graph_value_new(g, tp->name, &v);
		if (ret == CEP_EEXIST)
			return cep__set_error(CEP_EMODEL, "%s is defined twice", what);
		if (ret < 0)
			return ret;
		ret = model__tensor_load(tp, l->c->dir_fd, what, &t, &bytes);
		if (ret < 0)
			return ret;
		g->values[v].t = t;
		g->values[v].t.data = NULL;
		graph_value_set_const(g, v, t.data, bytes);
	}
	return 0;
}

/* ------------------------------------------------------- inputs, outputs */

/* Reads a ValueInfo's tensor type into t (dtype, rank, dims with symbols);
 * what names it in messages. */
static int type_load(struct graph *g, const Onnx__ValueInfoProto *vi, const char *what,
		     bool need_type, int *elem_type, struct op_tensor *t)
{
	const Onnx__TypeProto__Tensor *tt;
	int64_t numel = 1;
	size_t i;

	memset(t, 0, sizeof(*t));
	t->rank = -1;
	*elem_type = 0;
	if (!vi->type || vi->type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
		if (need_type)
			return cep__set_error(CEP_EMODEL, "%s has no type", what);
		return 0;
	}
	if (vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return cep__set_error(CEP_EUNSUPPORTED, "%s is not a tensor (sequences, maps and optionals are not supported)",
				      what);
	tt = vi->type->tensor_type;
	if (!tt->has_elem_type || tt->elem_type == 0) {
		if (need_type)
			return cep__set_error(CEP_EMODEL, "%s has no element type", what);
	} else if (!model__dtype_stored(tt->elem_type)) {
		return cep__set_error(CEP_EUNSUPPORTED, "%s has type %s, which cudaep does not support",
				      what, model__type_name(tt->elem_type));
	}
	*elem_type = tt->has_elem_type ? tt->elem_type : 0;
	t->dtype = (cep_dtype)*elem_type;
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > CEP_MAX_RANK)
		return cep__set_error(CEP_EUNSUPPORTED, "%s has rank %zu, above %d", what,
				      tt->shape->n_dim, CEP_MAX_RANK);
	t->rank = (int)tt->shape->n_dim;
	for (i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];

		t->dims[i] = OP_DIM_UNKNOWN;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return cep__set_error(CEP_EMODEL, "%s: dimension %zu is %" PRId64, what, i,
						      d->dim_value);
			t->dims[i] = d->dim_value;
			if (numel && d->dim_value > OP_MAX_NUMEL / (numel ? numel : 1))
				return cep__set_error(CEP_EMODEL,
						      "%s: its dimensions multiply to more than 2^40", what);
			numel *= d->dim_value;
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   d->dim_param && *d->dim_param) {
			int s = graph_symbol(g, d->dim_param);

			if (s < 0)
				return s;
			t->dims[i] = OP_DIM_SYM(s);
		}
	}
	return 0;
}


/* A subgraph's formal inputs may leave their types out (a loop body's
 * carried values take the Loop's); the model graph's must give them. */
static int load_inputs(struct gload *l)
{
	const Onnx__GraphProto *gp = l->gp;
	struct graph *g = l->g;
	const char *kind = is_sub(l) ? "subgraph input" : "graph input";
	size_t i;
	int ret;

	if (gp->n_input > INT32_MAX / 4)
		return cep__set_error(CEP_ELIMIT, "the graph has too many inputs");
	g->inputs = calloc(gp->n_input + 1, sizeof(*g->inputs));
	if (!g->inputs)
		return nomem();
	l->cap_inputs = (int)gp->n_input + 1;
	if (is_sub(l)) {
		g->declared = calloc(gp->n_input + gp->n_output + 1, sizeof(*g->declared));
		if (!g->declared)
			return nomem();
	}
	for (i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		char what[200];
		struct op_tensor t;
		int v, elem;

		if (!vi->name || !*vi->name)
			return cep__set_error(CEP_EMODEL, "%s %zu has no name", kind, i);
		snprintf(what, sizeof(what), "%s '%s'", kind, vi->name);
		v = graph_value_find(g, vi->name);
		if (v >= 0 && !is_sub(l) && (g->values[v].flags & GRAPH_VALUE_CONST))
			continue; /* an initializer's declaration (IR < 4 style) */
		if (v >= 0 && (g->values[v].flags & GRAPH_VALUE_CONST))
			return cep__set_error(CEP_EMODEL, "%s is an initializer too", what);
		if (v >= 0)
			return cep__set_error(CEP_EMODEL, "%s is listed twice", what);
		ret = type_load(g, vi, what, !is_sub(l), &elem, &t);
		if (ret < 0)
			return ret;
		ret = graph_value_new(g, vi->name, &v);
		if (ret < 0)
			return ret;
		g->values[v].t = t;
		g->values[v].flags |= GRAPH_VALUE_INPUT;
		if (is_sub(l))
			g->declared[g->n_inputs] = (cep_dtype)elem;
		g->inputs[g->n_inputs++] = v;
	}
	return 0;
}

/* Who defined value v, for "already defined" messages. */
static void definer(const struct graph *g, int v, char *buf, size_t len)
{
	const struct graph_value *val = &g->values[v];

	if (val->producer >= 0)
		graph_node_label(g, val->producer, buf, len);
	else if (val->flags & GRAPH_VALUE_CONST)
		snprintf(buf, len, "an initializer");
	else if (val->flags & GRAPH_VALUE_OUTER)
		snprintf(buf, len, "an enclosing graph");
	else
		snprintf(buf, len, "a graph input");
}

/* Makes a new value, produced by an Identity of v added to g, that a
 * subgraph returns in v's place (see the top of this file). */
static int output_copy(struct gload *l, int v, int *out)
{
	struct graph *g = l->g;
	const struct op_schema *s;
	struct graph_node *node;
	int64_t opset = model_opset(l->c->m, "");
	size_t len = strlen(g->values[v].name) + 32;
	char *name = malloc(len);
	int n, k, ret = CEP_EEXIST;

	if (!name)
		return nomem();
	for (k = 0; ret == CEP_EEXIST; k++) {
		snprintf(name, len, "%s/out%d", g->values[v].name, k);
		ret = graph_value_new(g, name, out);
	}
	free(name);
	if (ret < 0)
		return ret;
	if (opset < 1 || opset > OP_OPSET_MAX)
		opset = opset < 1 ? 1 : OP_OPSET_MAX;
	ret = op_schema_find("", "Identity", (int)opset, &s);
	if (ret == 0)
		ret = graph_node_new(g, 1, 1, &n);
	if (ret < 0)
		return ret;
	node = &g->nodes[n];
	node->op.name = g->values[*out].name;
	node->op.op_type = "Identity";
	node->op.domain = "";
	node->op.opset = (int)opset;
	node->schema = s;
	node->in[0] = v;
	node->out[0] = *out;
	g->values[*out].producer = n;
	return 0;
}

static int load_outputs(struct gload *l)
{
	const Onnx__GraphProto *gp = l->gp;
	struct graph *g = l->g;
	const char *kind = is_sub(l) ? "subgraph output" : "graph output";
	size_t i;

	g->outputs = calloc(gp->n_output + 1, sizeof(*g->outputs));
	if (!g->outputs)
		return nomem();
	if (!is_sub(l)) {
		l->decl = calloc(gp->n_output + 1, sizeof(*l->decl));
		if (!l->decl)
			return nomem();
	}
	if (gp->n_output == 0)
		return cep__set_error(CEP_EMODEL, "the %s has no outputs",
				      is_sub(l) ? "subgraph" : "graph");
	for (i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		char what[200];
		struct op_tensor t;
		int v, elem, ret;

		if (!vi->name || !*vi->name)
			return cep__set_error(CEP_EMODEL, "%s %zu has no name", kind, i);
		snprintf(what, sizeof(what), "%s '%s'", kind, vi->name);
		ret = value_resolve(l, vi->name, &v);
		if (ret < 0)
			return ret;
		if (v < 0)
			return cep__set_error(CEP_EMODEL,
					      "%s is not a graph input, an initializer or the output of any node",
					      what);
		ret = type_load(g, vi, what, false, &elem, &t);
		if (ret < 0)
			return ret;
		if (is_sub(l)) {
			const unsigned copied = GRAPH_VALUE_INPUT | GRAPH_VALUE_CONST |
						GRAPH_VALUE_OUTPUT;

			if (g->values[v].flags & copied) {
				ret = output_copy(l, v, &v);
				if (ret < 0)
					return ret;
			}
			g->declared[g->n_inputs - g->n_outer + (int)i] = (cep_dtype)elem;
		} else {
			struct model__declared *d = &l->decl[i];

			if (g->values[v].flags & GRAPH_VALUE_OUTPUT)
				return cep__set_error(CEP_EMODEL, "%s is listed twice", what);
			d->elem_type = elem;
			d->rank = t.rank;
			memcpy(d->dims, t.dims, sizeof(d->dims));
		}
		g->values[v].flags |= GRAPH_VALUE_OUTPUT;
		g->outputs[g->n_outputs++] = v;
	}
	return 0;
}

/* ------------------------------------------------------------------ nodes */

static enum op_attr_type attr_kind(const Onnx__AttributeProto *ap)
{
	if (ap->has_type) {
		switch (ap->type) {
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return OP_ATTR_FLOAT;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return OP_ATTR_INT;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return OP_ATTR_STRING;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return OP_ATTR_TENSOR;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return OP_ATTR_GRAPH;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return OP_ATTR_FLOATS;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return OP_ATTR_INTS;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return OP_ATTR_STRINGS;
		default: return OP_ATTR_OTHER;
		}
	}
	/* Writers before IR version 2 leave the type out: go by the field. */
	if (ap->n_floats)
		return OP_ATTR_FLOATS;
	if (ap->n_ints)
		return OP_ATTR_INTS;
	if (ap->n_strings)
		return OP_ATTR_STRINGS;
	if (ap->t)
		return OP_ATTR_TENSOR;
	if (ap->g)
		return OP_ATTR_GRAPH;
	if (ap->has_s)
		return OP_ATTR_STRING;
	if (ap->has_i)
		return OP_ATTR_INT;
	if (ap->has_f)
		return OP_ATTR_FLOAT;
	return OP_ATTR_OTHER;
}


/* Loads gp as the subgraph of node n's graph attribute attr. */
static int sub_load(struct gload *l, int n, const char *attr, const Onnx__GraphProto *gp)
{
	struct graph *g = l->g;
	struct graph_node *node = &g->nodes[n];
	struct graph_sub *subs;
	char label[320], *scope;
	struct graph *sg;
	int ret;

	if (g->depth + 1 > MODEL_MAX_GRAPH_DEPTH)
		return graph_node_fail(g, n, CEP_ELIMIT, "subgraphs are nested more than %d deep",
				       MODEL_MAX_GRAPH_DEPTH);
	subs = graph_alloc(g, sizeof(*subs) * (size_t)(node->n_subs + 1));
	sg = calloc(1, sizeof(*sg));
	if (!subs || !sg) {
		free(sg);
		return nomem();
	}
	if (node->n_subs)
		memcpy(subs, node->subs, sizeof(*subs) * (size_t)node->n_subs);
	/* Counted now, so that the graph frees it whatever happens next. */
	subs[node->n_subs] = (struct graph_sub){ .attr = attr, .g = sg };
	node->subs = subs;
	node->n_subs++;
	ret = graph_init(sg);
	if (ret < 0)
		return ret;
	sg->parent = g;
	sg->depth = g->depth + 1;
	graph_node_label(g, n, label, sizeof(label));
	scope = graph_alloc(sg, strlen(attr) + strlen(label) + 8);
	if (!scope)
		return nomem();
	sprintf(scope, "%s of %s", attr, label);
	sg->scope = scope;
	return model__graph_load(l->c, gp, sg, NULL);
}

static int attr_load(struct gload *l, int n, const Onnx__AttributeProto *ap,
		     struct op_attr *a)
{
	struct graph *g = l->g;
	int i;

	if (!ap->name || !*ap->name)
		return graph_node_fail(g, n, CEP_EMODEL, "an attribute has no name");
	if (ap->ref_attr_name && *ap->ref_attr_name)
		return graph_node_fail(g, n, CEP_EUNSUPPORTED,
				       "attribute '%s' refers to a function attribute", ap->name);
	a->name = graph_strdup(g, ap->name);
	if (!a->name)
		return cep__set_error(CEP_ENOMEM, NULL);
	a->type = attr_kind(ap);
	switch (a->type) {
	case OP_ATTR_FLOAT:
		a->f = ap->f;
		return 0;
	case OP_ATTR_INT:
		a->i = ap->i;
		return 0;
	case OP_ATTR_STRING: {
		char *s = graph_alloc(g, ap->s.len + 1);

		if (!s)
			return cep__set_error(CEP_ENOMEM, NULL);
		if (ap->s.len)
			memcpy(s, ap->s.data, ap->s.len);
		a->s = s;
		return 0;
	}
	case OP_ATTR_TENSOR: {
		struct op_tensor *t = graph_alloc(g, sizeof(*t));
		char what[300];
		size_t bytes;
		int ret;

		if (!t)
			return cep__set_error(CEP_ENOMEM, NULL);
		if (!ap->t)
			return graph_node_fail(g, n, CEP_EMODEL, "attribute '%s' has no tensor", ap->name);
		snprintf(what, sizeof(what), "attribute '%s'", ap->name);
		ret = model__tensor_load(ap->t, l->c->dir_fd, what, t, &bytes);
		if (ret < 0)
			return graph_node_wrap(g, n, ret);
		a->t = t;
		return 0;
	}
	case OP_ATTR_FLOATS: {
		float *f = graph_alloc(g, sizeof(float) * (ap->n_floats + 1));

		if (!f)
			return cep__set_error(CEP_ENOMEM, NULL);
		if (ap->n_floats)
			memcpy(f, ap->floats, sizeof(float) * ap->n_floats);
		a->floats = f;
		a->n = (int)ap->n_floats;
		return 0;
	}
	case OP_ATTR_INTS: {
		int64_t *v = graph_alloc(g, sizeof(int64_t) * (ap->n_ints + 1));

		if (!v)
			return cep__set_error(CEP_ENOMEM, NULL);
		if (ap->n_ints)
			memcpy(v, ap->ints, sizeof(int64_t) * ap->n_ints);
		a->ints = v;
		a->n = (int)ap->n_ints;
		return 0;
	}
	case OP_ATTR_STRINGS: {
		char **s = graph_alloc(g, sizeof(char *) * (ap->n_strings + 1));

		if (!s)
			return cep__set_error(CEP_ENOMEM, NULL);
		for (i = 0; i < (int)ap->n_strings; i++) {
			s[i] = graph_alloc(g, ap->strings[i].len + 1);
			if (!s[i])
				return cep__set_error(CEP_ENOMEM, NULL);
			if (ap->strings[i].len)
				memcpy(s[i], ap->strings[i].data, ap->strings[i].len);
		}
		a->strings = (const char *const *)s;
		a->n = (int)ap->n_strings;
		return 0;
	}
	case OP_ATTR_GRAPH:
		if (!ap->g)
			return graph_node_fail(g, n, CEP_EMODEL, "attribute '%s' has no graph", ap->name);
		return sub_load(l, n, a->name, ap->g);
	case OP_ATTR_OTHER:
		return 0;
	}
	return 0;
}

/* Whether the model defines a function called op_type in domain. */
static bool is_local_function(const Onnx__ModelProto *mp, const char *domain,
			      const char *op_type)
{
	size_t i;

	for (i = 0; i < mp->n_functions; i++) {
		const Onnx__FunctionProto *f = mp->functions[i];

		if (f->name && strcmp(f->name, op_type) == 0 &&
		    op_domain_equal(f->domain ? f->domain : "", domain))
			return true;
	}
	return false;
}


/* Creates node i with its operator, attributes (subgraphs included) and
 * outputs; inputs are resolved once every node's outputs exist (files
 * need not be sorted). */
static int node_create(struct gload *l, size_t i)
{
	const Onnx__NodeProto *np = l->gp->node[i];
	struct graph *g = l->g;
	struct graph_node *node;
	struct op_attr *attrs;
	int64_t opset;
	int n, j, k, ret;

	if (np->n_input > INT32_MAX / 4 || np->n_output > INT32_MAX / 4)
		return cep__set_error(CEP_ELIMIT, "node %zu has too many inputs or outputs", i);
	ret = graph_node_new(g, (int)np->n_input, (int)np->n_output, &n);
	if (ret < 0)
		return ret;
	node = &g->nodes[n];
	node->op.name = graph_strdup(g, np->name);
	node->op.op_type = graph_strdup(g, np->op_type);
	node->op.domain = graph_strdup(g, np->domain);
	if (!node->op.name || !node->op.op_type || !node->op.domain)
		return nomem();
	if (!node->op.op_type[0])
		return graph_node_fail(g, n, CEP_EMODEL, "the node has no op_type");
	opset = model_opset(l->c->m, node->op.domain);
	if (opset < 0)
		return graph_node_fail(g, n, CEP_EMODEL, "domain %s is not imported by the model",
				       op_domain_name(node->op.domain));
	node->op.opset = opset > INT32_MAX ? INT32_MAX : (int)opset;
	attrs = graph_alloc(g, sizeof(*attrs) * (np->n_attribute + 1));
	if (!attrs)
		return nomem();
	for (j = 0; j < (int)np->n_attribute; j++) {
		/* Counted before loading, so that any failure from here on
		 * still frees the attribute's tensor data with the graph. */
		node->op.attrs = attrs;
		node->op.n_attrs = j + 1;
		ret = attr_load(l, n, np->attribute[j], &attrs[j]);
		if (ret < 0)
			return ret;
		node = &g->nodes[n];
		for (k = 0; k < j; k++) {
			if (strcmp(attrs[k].name, attrs[j].name) == 0)
				return graph_node_fail(g, n, CEP_EMODEL, "attribute '%s' is given twice",
						       attrs[j].name);
		}
	}
	node->op.attrs = attrs;
	for (j = 0; j < (int)np->n_output; j++) {
		const char *name = np->output[j];
		int v;

		if (!name || !*name)
			continue;
		ret = graph_value_new(g, name, &v);
		if (ret == CEP_EEXIST) {
			char who[320];

			definer(g, graph_value_find(g, name), who, sizeof(who));
			return graph_node_fail(g, n, CEP_EMODEL, "output %d '%s' is already defined by %s",
					       j, name, who);
		}
		if (ret < 0)
			return ret;
		node = &g->nodes[n];
		node->out[j] = v;
		g->values[v].producer = n;
	}
	return 0;
}

/* Makes the values node n's subgraphs read from outside themselves its
 * implicit inputs: each outer reference of a subgraph is a value of this
 * graph (or, in a subgraph, an outer reference of this one in turn), read
 * once by the node however many of its subgraphs name it. */
static int implicit_connect(struct gload *l, int n)
{
	struct graph *g = l->g;
	struct graph_node *node = &g->nodes[n];
	int total = 0, i, k, j, ret;
	int *in;

	for (i = 0; i < node->n_subs; i++)
		total += node->subs[i].g->n_outer;
	if (total == 0)
		return 0;
	in = graph_alloc(g, sizeof(*in) * (size_t)(node->n_in + total));
	if (!in)
		return nomem();
	memcpy(in, node->in, sizeof(*in) * (size_t)node->n_in);
	node->in = in;
	for (i = 0; i < node->n_subs; i++) {
		struct graph_sub *sub = &node->subs[i];
		const struct graph *sg = sub->g;

		sub->slot = graph_alloc(g, sizeof(*sub->slot) * (size_t)(sg->n_outer + 1));
		if (!sub->slot)
			return nomem();
		for (k = 0; k < sg->n_outer; k++) {
			const char *name = sg->values[sg->inputs[sg->n_inputs - sg->n_outer + k]].name;
			int v;

			ret = value_resolve(l, name, &v);
			if (ret < 0)
				return ret;
			node = &g->nodes[n];
			if (v < 0)
				return graph_node_fail(g, n, CEP_EMODEL,
						       "its %s reads '%s', which no enclosing graph "
						       "defines", sub->attr, name);
			for (j = node->n_in - node->n_implicit; j < node->n_in && in[j] != v; j++)
				;
			if (j == node->n_in) {
				in[node->n_in++] = v;
				node->n_implicit++;
			}
			sub->slot[k] = j;
		}
	}
	return 0;
}

/* Resolves node n's inputs and checks them and its outputs against its
 * operator's schema. */
static int node_connect(struct gload *l, int n)
{
	const Onnx__NodeProto *np = l->gp->node[n];
	struct graph *g = l->g;
	struct graph_node *node = &g->nodes[n];
	const struct op_schema *s;
	int j, ret;

	for (j = 0; j < (int)np->n_input; j++) {
		const char *name = np->input[j];

		if (!name || !*name)
			continue;
		ret = value_resolve(l, name, &node->in[j]);
		if (ret < 0)
			return ret;
		node = &g->nodes[n];
		if (node->in[j] < 0)
			return graph_node_fail(g, n, CEP_EMODEL,
					       "input %d '%s' is not a graph input, an initializer or the output of any node",
					       j, name);
	}
	cep__clear_error();
	ret = op_schema_find(node->op.domain, node->op.op_type, node->op.opset, &s);
	if (ret < 0) {
		if (is_local_function(l->c->mp, node->op.domain, node->op.op_type))
			return graph_node_fail(g, n, CEP_EUNSUPPORTED,
					       "model-local functions are not supported");
		return graph_node_wrap(g, n, ret);
	}
	if (s->flags & OP_INTERNAL)
		return graph_node_fail(g, n, CEP_EMODEL, "%s of domain %s is internal to cudaep "
				       "(made by its optimizer); a model may not use it",
				       node->op.op_type, op_domain_name(node->op.domain));
	if (node->n_subs && !(s->flags & OP_CONTROL))
		return graph_node_fail(g, n, CEP_EMODEL, "attribute '%s' is a graph, which %s does "
				       "not take", node->subs[0].attr, node->op.op_type);
	node->schema = s;
	if (node->n_in < s->min_in)
		return graph_node_fail(g, n, CEP_EMODEL, "%d inputs, %s needs at least %d",
				       node->n_in, node->op.op_type, s->min_in);
	if (s->max_in >= 0 && node->n_in > s->max_in)
		return graph_node_fail(g, n, CEP_EMODEL, "%d inputs, %s takes at most %d",
				       node->n_in, node->op.op_type, s->max_in);
	for (j = 0; j < s->min_in; j++) {
		if (node->in[j] < 0)
			return graph_node_fail(g, n, CEP_EMODEL, "input %d is required but missing", j);
	}
	if (node->n_out < s->min_out || node->n_out > s->max_out)
		return graph_node_fail(g, n, CEP_EMODEL, "%d outputs, %s has %d to %d",
				       node->n_out, node->op.op_type, s->min_out, s->max_out);
	for (j = 0; j < s->min_out; j++) {
		if (node->out[j] < 0)
			return graph_node_fail(g, n, CEP_EMODEL, "output %d is required but missing", j);
	}
	/* After the schema's counts, which are of the node's own inputs. */
	return implicit_connect(l, n);
}

static int load_nodes(struct gload *l)
{
	const Onnx__GraphProto *gp = l->gp;
	size_t i;
	int ret;

	for (i = 0; i < gp->n_node; i++) {
		ret = node_create(l, i);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < gp->n_node; i++) {
		ret = node_connect(l, (int)i);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------ graph */

int model__graph_load(const struct model__ctx *c, const struct Onnx__GraphProto *gp,
		      struct graph *g, struct model__declared **decl)
{
	struct gload l = { .c = c, .gp = gp, .g = g };
	int ret;

	if (decl)
		*decl = NULL;
	ret = load_initializers(&l);
	if (ret == 0)
		ret = load_inputs(&l);
	if (ret == 0)
		ret = load_nodes(&l);
	if (ret == 0)
		ret = load_outputs(&l);
	if (ret == 0)
		ret = graph_sort(g);
	if (ret == 0 && decl) {
		*decl = l.decl;
		l.decl = NULL;
	}
	free(l.decl);
	return ret;
}
