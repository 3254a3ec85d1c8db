/*
 * onnxb.h — a small builder of ONNX models in C for the unit tests: add
 * inputs, outputs, initializers and nodes, then pack the ModelProto into
 * bytes with protobuf-c. Shapes are written as text: "batch,4" is a
 * symbolic dimension then a fixed one, "?" an unknown dimension, "" a
 * scalar, NULL no shape at all.
 *
 * Linked into every unit test binary (a helper in tests/unit), so it keeps
 * to its onnxb_ prefix, has no main() and needs only protobuf-c and the
 * generated onnx.pb-c.h. Out of memory aborts: this is test code.
 * Everything it returns points into the builder's model, which tests may
 * edit directly to make hostile files.
 */
#ifndef CEP_TEST_ONNXB_H
#define CEP_TEST_ONNXB_H

#include <stddef.h>
#include <stdint.h>

#include "client/cudaep.h"
#include "onnx.pb-c.h"

struct onnxb {
	Onnx__ModelProto *model;
	Onnx__GraphProto *graph;
};

/* A model importing ai.onnx at opset (IR version 8), with an empty graph.
 * Released with onnxb_free(). */
struct onnxb *onnxb_new(int opset);

/* Frees the builder and everything in its model. Accepts NULL. */
void onnxb_free(struct onnxb *b);

/* Imports another operator set. */
void onnxb_opset(struct onnxb *b, const char *domain, int64_t version);

/* Declares a graph input or output of dtype (0: no element type) and shape
 * (see above). */
Onnx__ValueInfoProto *onnxb_input(struct onnxb *b, const char *name, cep_dtype dtype,
				  const char *shape);
Onnx__ValueInfoProto *onnxb_output(struct onnxb *b, const char *name, cep_dtype dtype,
				   const char *shape);

/* A tensor with data copied into raw_data (bytes from the shape and dtype;
 * data may be NULL for zeros), not attached anywhere. */
Onnx__TensorProto *onnxb_tensor(const char *name, cep_dtype dtype, const char *shape,
				const void *data);

/* Adds an initializer (raw_data), returning it for edits. */
Onnx__TensorProto *onnxb_init(struct onnxb *b, const char *name, cep_dtype dtype,
			      const char *shape, const void *data);

/* Adds a node of op_type in the default domain; inputs and outputs are
 * comma-separated names ("x,,w": the middle input omitted). The node is
 * named after its first output. */
Onnx__NodeProto *onnxb_node(struct onnxb *b, const char *op_type, const char *inputs,
			    const char *outputs);

/* Attributes of a node. */
void onnxb_attr_int(Onnx__NodeProto *n, const char *name, int64_t v);
void onnxb_attr_float(Onnx__NodeProto *n, const char *name, float v);
void onnxb_attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
void onnxb_attr_string(Onnx__NodeProto *n, const char *name, const char *s);
void onnxb_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);

/* A new, empty graph attached to node n as its graph attribute name, and
 * a builder of it (by value: onnxb_input(), _output(), _init() and
 * _node() of &it fill the subgraph). It belongs to b's model and is freed
 * with it; never pass it to onnxb_free(), _pack() or _finish(). */
struct onnxb onnxb_subgraph(struct onnxb *b, Onnx__NodeProto *n, const char *name);

/* Packs the model; returns a malloc'd buffer of *len bytes (free()). */
uint8_t *onnxb_pack(struct onnxb *b, size_t *len);

/* Packs and frees the builder in one go. */
uint8_t *onnxb_finish(struct onnxb *b, size_t *len);

/* onnxb_finish(), then engine_model_load() of the bytes (no directory),
 * asserting (Criterion) that it loads; the model is the caller's
 * (engine_model_unref()). */
struct engine_model;
struct engine_model *onnxb_load(struct onnxb *b);

#endif
