/*
 * model.c — loading and validating an ONNX model (engine/model.h).
 *
 * The file arrives as bytes from a client: everything in it is hostile
 * until checked. The order below is what keeps that cheap: a wire-format
 * scan bounds nesting and node count before protobuf-c allocates anything;
 * tensors are read by engine/model_data.c, which allocates only once the
 * bytes that fill a tensor are known to be there; then the graph is built
 * and checked node by node.
 */
#include "engine/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "engine/optimize.h"
#include "engine/shape.h"

/* A graph output's declared type, checked against inference. */
struct declared {
	int elem_type;              /* 0: none declared */
	int rank;                   /* -1: no shape declared */
	int64_t dims[CEP_MAX_RANK]; /* symbols already mapped */
};

struct load_ctx {
	struct model *m;
	const Onnx__ModelProto *mp;
	int dir_fd;
	struct declared *decl;      /* (graph outputs) */
};

/* ------------------------------------------------------------- wire scan */

struct scan {
	size_t nodes;
	const uint8_t *base;
};

static bool wire_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
	uint64_t x = 0;
	int shift;

	for (shift = 0; *at < len && shift < 64; shift += 7) {
		uint8_t b = p[(*at)++];

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * Walks the message in p[0..len) field by field, descending into the
 * fields the descriptor says are messages, and fails on truncation, on
 * nesting beyond MODEL_MAX_DEPTH (protobuf-c recurses without a limit) and
 * on more than MODEL_MAX_NODES nodes, all before protobuf-c sees the bytes.
 */
static int scan_message(struct scan *s, const uint8_t *p, size_t len,
			const ProtobufCMessageDescriptor *desc, int depth)
{
	size_t at = 0;

	while (at < len) {
		const ProtobufCFieldDescriptor *fd;
		size_t start = at;
		uint64_t key, n;

		if (!wire_varint(p, len, &at, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
			goto bad;
		switch (key & 7) {
		case 0:
			if (!wire_varint(p, len, &at, &n))
				goto bad;
			break;
		case 1:
			if (len - at < 8)
				goto bad;
			at += 8;
			break;
		case 5:
			if (len - at < 4)
				goto bad;
			at += 4;
			break;
		case 2:
			if (!wire_varint(p, len, &at, &n) || n > len - at)
				goto bad;
			fd = desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
				  : NULL;
			if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
				int ret;

				if (depth >= MODEL_MAX_DEPTH)
					return cep__set_error(CEP_EMODEL,
							      "not a valid ONNX model: messages nested more than %d deep",
							      MODEL_MAX_DEPTH);
				if (fd->descriptor == &onnx__node_proto__descriptor &&
				    ++s->nodes > MODEL_MAX_NODES)
					return cep__set_error(CEP_ELIMIT,
							      "the model has more than %d nodes",
							      MODEL_MAX_NODES);
				ret = scan_message(s, p + at, (size_t)n, fd->descriptor, depth + 1);
				if (ret < 0)
					return ret;
			}
			at += (size_t)n;
			break;
		default:
			goto bad;
		}
		continue;
bad:
		return cep__set_error(CEP_EMODEL,
				      "not a valid ONNX model: malformed or truncated protobuf at byte %zu",
				      (size_t)(p - s->base) + start);
	}
	return 0;
}

/* ------------------------------------------------------------ the header */

static int load_header(struct load_ctx *c)
{
	const Onnx__ModelProto *mp = c->mp;
	struct model *m = c->m;
	size_t i;
	int j;

	m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
	if (!mp->graph)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: no graph");
	if (mp->n_opset_import == 0)
		return cep__set_error(CEP_EMODEL, "the model imports no operator set (IR version %"
				      PRId64 "; cudaep needs 3 or later)", m->ir_version);
	m->opsets = graph_alloc(&m->g, sizeof(*m->opsets) * mp->n_opset_import);
	if (!m->opsets)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
		const char *d = op->domain ? op->domain : "";

		for (j = 0; j < m->n_opsets; j++) {
			if (op_domain_equal(m->opsets[j].domain, d))
				return cep__set_error(CEP_EMODEL, "the model imports domain %s twice",
						      op_domain_name(d));
		}
		if (!op->has_version || op->version < 1)
			return cep__set_error(CEP_EMODEL, "the model imports domain %s without a version",
					      op_domain_name(d));
		if (op_domain_equal(d, "") && op->version > OP_OPSET_MAX)
			return cep__set_error(CEP_EUNSUPPORTED,
					      "the model imports ai.onnx opset %" PRId64
					      "; this build supports opsets up to %d",
					      op->version, OP_OPSET_MAX);
		m->opsets[m->n_opsets].domain = graph_strdup(&m->g, d);
		m->opsets[m->n_opsets].version = op->version;
		if (!m->opsets[m->n_opsets].domain)
			return cep__set_error(CEP_ENOMEM, NULL);
		m->n_opsets++;
	}
	if (mp->producer_name) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s%s%s", mp->producer_name,
			 mp->producer_version && *mp->producer_version ? " " : "",
			 mp->producer_version ? mp->producer_version : "");
		m->producer = graph_strdup(&m->g, buf);
	} else {
		m->producer = graph_strdup(&m->g, "");
	}
	return m->producer ? 0 : cep__set_error(CEP_ENOMEM, NULL);
}

int64_t model_opset(const struct model *m, const char *domain)
{
	int i;

	for (i = 0; i < m->n_opsets; i++) {
		if (op_domain_equal(m->opsets[i].domain, domain))
			return m->opsets[i].version;
	}
	return -1;
}

/* -------------------------------------------------------- initializers */

static int load_initializers(struct load_ctx *c)
{
	const Onnx__GraphProto *gp = c->mp->graph;
	struct graph *g = &c->m->g;
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
		ret = model__tensor_load(tp, c->dir_fd, what, &t, &bytes);
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

static int load_inputs(struct load_ctx *c)
{
	const Onnx__GraphProto *gp = c->mp->graph;
	struct graph *g = &c->m->g;
	size_t i;

	g->inputs = calloc(gp->n_input + 1, sizeof(*g->inputs));
	if (!g->inputs)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		char what[200];
		struct op_tensor t;
		int v, elem, ret;

		if (!vi->name || !*vi->name)
			return cep__set_error(CEP_EMODEL, "graph input %zu has no name", i);
		snprintf(what, sizeof(what), "graph input '%s'", vi->name);
		v = graph_value_find(g, vi->name);
		if (v >= 0 && (g->values[v].flags & GRAPH_VALUE_CONST))
			continue; /* an initializer's declaration (IR < 4 style) */
		if (v >= 0)
			return cep__set_error(CEP_EMODEL, "%s is listed twice", what);
		ret = type_load(g, vi, what, true, &elem, &t);
		if (ret < 0)
			return ret;
		ret = graph_value_new(g, vi->name, &v);
		if (ret < 0)
			return ret;
		g->values[v].t = t;
		g->values[v].flags |= GRAPH_VALUE_INPUT;
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
	else
		snprintf(buf, len, "a graph input");
}

static int load_outputs(struct load_ctx *c)
{
	const Onnx__GraphProto *gp = c->mp->graph;
	struct graph *g = &c->m->g;
	size_t i;

	g->outputs = calloc(gp->n_output + 1, sizeof(*g->outputs));
	c->decl = calloc(gp->n_output + 1, sizeof(*c->decl));
	if (!g->outputs || !c->decl)
		return cep__set_error(CEP_ENOMEM, NULL);
	if (gp->n_output == 0)
		return cep__set_error(CEP_EMODEL, "the graph has no outputs");
	for (i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		struct declared *d = &c->decl[i];
		char what[200];
		struct op_tensor t;
		int v, ret;

		if (!vi->name || !*vi->name)
			return cep__set_error(CEP_EMODEL, "graph output %zu has no name", i);
		snprintf(what, sizeof(what), "graph output '%s'", vi->name);
		v = graph_value_find(g, vi->name);
		if (v < 0)
			return cep__set_error(CEP_EMODEL,
					      "%s is not a graph input, an initializer or the output of any node",
					      what);
		if (g->values[v].flags & GRAPH_VALUE_OUTPUT)
			return cep__set_error(CEP_EMODEL, "%s is listed twice", what);
		ret = type_load(g, vi, what, false, &d->elem_type, &t);
		if (ret < 0)
			return ret;
		d->rank = t.rank;
		memcpy(d->dims, t.dims, sizeof(d->dims));
		g->values[v].flags |= GRAPH_VALUE_OUTPUT;
		g->outputs[g->n_outputs++] = v;
	}
	return 0;
}

/* After inference: declared output types must match; declared dims fill
 * in what inference could not know. */
static int check_outputs(struct load_ctx *c)
{
	struct graph *g = &c->m->g;
	int i, d;

	for (i = 0; i < g->n_outputs; i++) {
		struct graph_value *v = &g->values[g->outputs[i]];
		const struct declared *dc = &c->decl[i];

		if (dc->elem_type && (int)v->t.dtype != dc->elem_type)
			return cep__set_error(CEP_EDTYPE,
					      "graph output '%s' is declared %s but computes %s",
					      v->name, model__type_name(dc->elem_type),
					      cep_dtype_name(v->t.dtype));
		if (dc->rank < 0)
			continue;
		if (v->t.rank < 0) {
			v->t.rank = dc->rank;
			for (d = 0; d < dc->rank; d++)
				v->t.dims[d] = dc->dims[d];
			continue;
		}
		if (v->t.rank != dc->rank)
			continue;
		for (d = 0; d < dc->rank; d++) {
			if (v->t.dims[d] == OP_DIM_UNKNOWN)
				v->t.dims[d] = dc->dims[d];
		}
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

static int attr_load(struct load_ctx *c, int n, const Onnx__AttributeProto *ap,
		     struct op_attr *a)
{
	struct graph *g = &c->m->g;
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
		ret = model__tensor_load(ap->t, c->dir_fd, what, t, &bytes);
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

/* Creates node i with its operator, attributes and outputs; inputs are
 * resolved once every node's outputs exist (files need not be sorted). */
static int node_create(struct load_ctx *c, size_t i)
{
	const Onnx__NodeProto *np = c->mp->graph->node[i];
	struct graph *g = &c->m->g;
	struct graph_node *node;
	struct op_attr *attrs;
	int64_t opset;
	int n, j, k, ret;

	if (np->n_input > INT32_MAX / 2 || np->n_output > INT32_MAX / 2)
		return cep__set_error(CEP_ELIMIT, "node %zu has too many inputs or outputs", i);
	ret = graph_node_new(g, (int)np->n_input, (int)np->n_output, &n);
	if (ret < 0)
		return ret;
	node = &g->nodes[n];
	node->op.name = graph_strdup(g, np->name);
	node->op.op_type = graph_strdup(g, np->op_type);
	node->op.domain = graph_strdup(g, np->domain);
	if (!node->op.name || !node->op.op_type || !node->op.domain)
		return cep__set_error(CEP_ENOMEM, NULL);
	if (!node->op.op_type[0])
		return graph_node_fail(g, n, CEP_EMODEL, "the node has no op_type");
	opset = model_opset(c->m, node->op.domain);
	if (opset < 0)
		return graph_node_fail(g, n, CEP_EMODEL, "domain %s is not imported by the model",
				       op_domain_name(node->op.domain));
	node->op.opset = opset > INT32_MAX ? INT32_MAX : (int)opset;
	attrs = graph_alloc(g, sizeof(*attrs) * (np->n_attribute + 1));
	if (!attrs)
		return cep__set_error(CEP_ENOMEM, NULL);
	for (j = 0; j < (int)np->n_attribute; j++) {
		/* Counted before loading, so that any failure from here on
		 * still frees the attribute's tensor data with the graph. */
		node->op.attrs = attrs;
		node->op.n_attrs = j + 1;
		ret = attr_load(c, n, np->attribute[j], &attrs[j]);
		if (ret < 0)
			return ret;
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
			char who[256];

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

/* Resolves node n's inputs and checks them and its outputs against its
 * operator's schema. */
static int node_connect(struct load_ctx *c, int n)
{
	const Onnx__NodeProto *np = c->mp->graph->node[n];
	struct graph *g = &c->m->g;
	struct graph_node *node = &g->nodes[n];
	const struct op_schema *s;
	int j, ret;

	for (j = 0; j < (int)np->n_input; j++) {
		const char *name = np->input[j];

		if (!name || !*name)
			continue;
		node->in[j] = graph_value_find(g, name);
		if (node->in[j] < 0)
			return graph_node_fail(g, n, CEP_EMODEL,
					       "input %d '%s' is not a graph input, an initializer or the output of any node",
					       j, name);
	}
	cep__clear_error();
	ret = op_schema_find(node->op.domain, node->op.op_type, node->op.opset, &s);
	if (ret < 0) {
		if (is_local_function(c->mp, node->op.domain, node->op.op_type))
			return graph_node_fail(g, n, CEP_EUNSUPPORTED,
					       "model-local functions are not supported");
		return graph_node_wrap(g, n, ret);
	}
	if (s->flags & OP_INTERNAL)
		return graph_node_fail(g, n, CEP_EMODEL, "%s of domain %s is internal to cudaep "
				       "(made by its optimizer); a model may not use it",
				       node->op.op_type, op_domain_name(node->op.domain));
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
	return 0;
}

static int load_nodes(struct load_ctx *c)
{
	const Onnx__GraphProto *gp = c->mp->graph;
	size_t i;
	int ret;

	for (i = 0; i < gp->n_node; i++) {
		ret = node_create(c, i);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < gp->n_node; i++) {
		ret = node_connect(c, (int)i);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------- load */

void model_free(struct model *m)
{
	if (!m)
		return;
	graph_close(&m->g);
	free(m);
}

int model_load(const void *bytes, size_t len, int dir_fd, struct model **out)
{
	struct load_ctx c = { .dir_fd = dir_fd };
	struct scan scan = { .base = bytes };
	Onnx__ModelProto *mp = NULL;
	struct model *m = NULL;
	int ret;

	*out = NULL;
	model__wanted_dir = false;
	if (!bytes || len == 0)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: the file is empty");
	if ((uint64_t)len > MODEL_MAX_BYTES)
		return cep__set_error(CEP_ELIMIT, "the model is %zu bytes, above the 2 GiB of protobuf",
				      len);
	ret = scan_message(&scan, bytes, len, &onnx__model_proto__descriptor, 0);
	if (ret < 0)
		return ret;
	mp = onnx__model_proto__unpack(NULL, len, bytes);
	if (!mp)
		return cep__set_error(CEP_EMODEL, "not a valid ONNX model: protobuf decoding failed");
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = cep__set_error(CEP_ENOMEM, NULL);
		goto out;
	}
	ret = graph_init(&m->g);
	if (ret < 0)
		goto out;
	c.m = m;
	c.mp = mp;
	ret = load_header(&c);
	if (ret < 0)
		goto out;
	ret = load_initializers(&c);
	if (ret < 0)
		goto out;
	ret = load_inputs(&c);
	if (ret < 0)
		goto out;
	ret = load_nodes(&c);
	if (ret < 0)
		goto out;
	ret = load_outputs(&c);
	if (ret < 0)
		goto out;
	ret = graph_sort(&m->g);
	if (ret < 0)
		goto out;
	ret = shape_infer_graph(&m->g);
	if (ret < 0)
		goto out;
	ret = optimize_graph(&m->g);
	if (ret < 0)
		goto out;
	ret = check_outputs(&c);
	if (ret < 0)
		goto out;
	*out = m;
	m = NULL;
	ret = 0;
out:
	free(c.decl);
	model_free(m);
	onnx__model_proto__free_unpacked(mp, NULL);
	return ret;
}
