/*
 * onnxb.c — the test builder of ONNX models (tests/unit/onnxb.h): plain
 * protobuf-c structs filled with malloc'd parts, so that one
 * protobuf_c_message_free_unpacked() releases everything.
 */
#include "tests/unit/onnxb.h"

#include <criterion/criterion.h>

#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

/* Appends item to a protobuf-c repeated pointer field. */
#define APPEND(arr, n, item)                                                \
	do {                                                                \
		void *grown_ = realloc((arr), sizeof(*(arr)) * ((n) + 1));  \
		if (!grown_)                                                \
			abort();                                            \
		(arr) = grown_;                                             \
		(arr)[(n)++] = (item);                                      \
	} while (0)

struct onnxb *onnxb_new(int opset)
{
	struct onnxb *b = xalloc(sizeof(*b));

	b->model = xalloc(sizeof(*b->model));
	onnx__model_proto__init(b->model);
	b->model->has_ir_version = 1;
	b->model->ir_version = 8;
	b->model->producer_name = xstrdup("onnxb");
	b->graph = xalloc(sizeof(*b->graph));
	onnx__graph_proto__init(b->graph);
	b->graph->name = xstrdup("test");
	b->model->graph = b->graph;
	onnxb_opset(b, "", opset);
	return b;
}

void onnxb_free(struct onnxb *b)
{
	if (!b)
		return;
	protobuf_c_message_free_unpacked(&b->model->base, NULL);
	free(b);
}

void onnxb_opset(struct onnxb *b, const char *domain, int64_t version)
{
	Onnx__OperatorSetIdProto *op = xalloc(sizeof(*op));

	onnx__operator_set_id_proto__init(op);
	op->domain = xstrdup(domain);
	op->has_version = 1;
	op->version = version;
	APPEND(b->model->opset_import, b->model->n_opset_import, op);
}

/* Parses "a,4,?" into a TensorShapeProto. */
static Onnx__TensorShapeProto *shape_parse(const char *shape)
{
	Onnx__TensorShapeProto *s = xalloc(sizeof(*s));
	const char *p = shape;

	onnx__tensor_shape_proto__init(s);
	while (*p) {
		size_t n = strcspn(p, ",");
		Onnx__TensorShapeProto__Dimension *d = xalloc(sizeof(*d));
		char tok[64];

		onnx__tensor_shape_proto__dimension__init(d);
		snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
		if ((tok[0] >= '0' && tok[0] <= '9') || tok[0] == '-') {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = strtoll(tok, NULL, 10);
		} else if (strcmp(tok, "?") != 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = xstrdup(tok);
		}
		APPEND(s->dim, s->n_dim, d);
		p += n;
		p += *p == ',';
	}
	return s;
}

static Onnx__ValueInfoProto *value_info(const char *name, cep_dtype dtype, const char *shape)
{
	Onnx__ValueInfoProto *vi = xalloc(sizeof(*vi));
	Onnx__TypeProto *tp = xalloc(sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = xalloc(sizeof(*tt));

	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	vi->name = xstrdup(name);
	if (dtype) {
		tt->has_elem_type = 1;
		tt->elem_type = (int32_t)dtype;
	}
	if (shape)
		tt->shape = shape_parse(shape);
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->type = tp;
	return vi;
}

Onnx__ValueInfoProto *onnxb_input(struct onnxb *b, const char *name, cep_dtype dtype,
				  const char *shape)
{
	Onnx__ValueInfoProto *vi = value_info(name, dtype, shape);

	APPEND(b->graph->input, b->graph->n_input, vi);
	return vi;
}

Onnx__ValueInfoProto *onnxb_output(struct onnxb *b, const char *name, cep_dtype dtype,
				   const char *shape)
{
	Onnx__ValueInfoProto *vi = value_info(name, dtype, shape);

	APPEND(b->graph->output, b->graph->n_output, vi);
	return vi;
}

Onnx__TensorProto *onnxb_tensor(const char *name, cep_dtype dtype, const char *shape,
				const void *data)
{
	Onnx__TensorProto *t = xalloc(sizeof(*t));
	const char *p = shape;
	size_t numel = 1, bytes;

	onnx__tensor_proto__init(t);
	t->name = xstrdup(name);
	t->has_data_type = 1;
	t->data_type = (int32_t)dtype;
	while (*p) {
		int64_t d = strtoll(p, NULL, 10);

		APPEND(t->dims, t->n_dims, d);
		numel *= d > 0 ? (size_t)d : 0;
		p += strcspn(p, ",");
		p += *p == ',';
	}
	bytes = numel * cep_dtype_size(dtype);
	t->has_raw_data = 1;
	t->raw_data.len = bytes;
	t->raw_data.data = xalloc(bytes);
	if (data && bytes)
		memcpy(t->raw_data.data, data, bytes);
	return t;
}

Onnx__TensorProto *onnxb_init(struct onnxb *b, const char *name, cep_dtype dtype,
			      const char *shape, const void *data)
{
	Onnx__TensorProto *t = onnxb_tensor(name, dtype, shape, data);

	APPEND(b->graph->initializer, b->graph->n_initializer, t);
	return t;
}

/* Splits "a,,b" into a malloc'd array of malloc'd names. */
static char **names_split(const char *list, size_t *count)
{
	char **v = NULL;
	const char *p = list;

	*count = 0;
	if (!*p)
		return NULL;
	for (;;) {
		size_t n = strcspn(p, ",");
		char *name = xalloc(n + 1);

		memcpy(name, p, n);
		APPEND(v, *count, name);
		if (!p[n])
			break;
		p += n + 1;
	}
	return v;
}

Onnx__NodeProto *onnxb_node(struct onnxb *b, const char *op_type, const char *inputs,
			    const char *outputs)
{
	Onnx__NodeProto *n = xalloc(sizeof(*n));

	onnx__node_proto__init(n);
	n->op_type = xstrdup(op_type);
	n->domain = xstrdup("");
	n->input = names_split(inputs, &n->n_input);
	n->output = names_split(outputs, &n->n_output);
	n->name = xstrdup(n->n_output ? n->output[0] : op_type);
	APPEND(b->graph->node, b->graph->n_node, n);
	return n;
}

static Onnx__AttributeProto *attr_new(Onnx__NodeProto *n, const char *name,
				      Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = xalloc(sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = xstrdup(name);
	a->has_type = 1;
	a->type = type;
	APPEND(n->attribute, n->n_attribute, a);
	return a;
}

void onnxb_attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

void onnxb_attr_float(Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

void onnxb_attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->ints = xalloc(sizeof(int64_t) * (size_t)count);
	memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
	a->n_ints = (size_t)count;
}

void onnxb_attr_string(Onnx__NodeProto *n, const char *name, const char *s)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.len = strlen(s);
	a->s.data = (uint8_t *)xstrdup(s);
}

void onnxb_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);

	a->t = t;
}

struct onnxb onnxb_subgraph(struct onnxb *b, Onnx__NodeProto *n, const char *name)
{
	Onnx__AttributeProto *a = attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
	struct onnxb sub = { .model = b->model };

	a->g = xalloc(sizeof(*a->g));
	onnx__graph_proto__init(a->g);
	a->g->name = xstrdup(name);
	sub.graph = a->g;
	return sub;
}

uint8_t *onnxb_pack(struct onnxb *b, size_t *len)
{
	size_t n = onnx__model_proto__get_packed_size(b->model);
	uint8_t *buf = xalloc(n);

	*len = onnx__model_proto__pack(b->model, buf);
	return buf;
}

uint8_t *onnxb_finish(struct onnxb *b, size_t *len)
{
	uint8_t *buf = onnxb_pack(b, len);

	onnxb_free(b);
	return buf;
}

engine_model *onnxb_load(struct onnxb *b)
{
	engine_model *m = NULL;
	size_t len;
	uint8_t *buf = onnxb_finish(b, &len);

	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	return m;
}
