/*
 * tinyonnx.h — writes small ONNX models for the integration tests, which
 * link only the client library (no protobuf-c): float32 graph inputs,
 * outputs and initializers, and nodes without attributes, encoded by hand
 * as the protobuf wire format of onnx.proto's ModelProto.
 *
 * Header-only and static (every non-test .c file of tests/integration is
 * linked into each test). Out of memory aborts: this is test code.
 */
#ifndef CEP_TEST_TINYONNX_H
#define CEP_TEST_TINYONNX_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TONNX_UNUSED __attribute__((unused))

/* A growing buffer of protobuf bytes. */
struct tonnx_buf {
	uint8_t *p;
	size_t len, cap;
};

static TONNX_UNUSED void tonnx_put(struct tonnx_buf *b, const void *data,
				   size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (b->p == NULL)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static TONNX_UNUSED void tonnx_varint(struct tonnx_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v != 0)
			out[n] |= 0x80;
		n++;
	} while (v != 0);
	tonnx_put(b, out, n);
}

/* Field number f with wire type 0 (varint). */
static TONNX_UNUSED void tonnx_int(struct tonnx_buf *b, unsigned f, int64_t v)
{
	tonnx_varint(b, (uint64_t)f << 3);
	tonnx_varint(b, (uint64_t)v);
}

/* Field number f with wire type 2 (length-delimited). */
static TONNX_UNUSED void tonnx_bytes(struct tonnx_buf *b, unsigned f,
				     const void *data, size_t n)
{
	tonnx_varint(b, (uint64_t)f << 3 | 2);
	tonnx_varint(b, n);
	tonnx_put(b, data, n);
}

static TONNX_UNUSED void tonnx_str(struct tonnx_buf *b, unsigned f,
				   const char *s)
{
	tonnx_bytes(b, f, s, strlen(s));
}

/* Appends sub as embedded message f and frees it. */
static TONNX_UNUSED void tonnx_msg(struct tonnx_buf *b, unsigned f,
				   struct tonnx_buf *sub)
{
	tonnx_bytes(b, f, sub->p, sub->len);
	free(sub->p);
	memset(sub, 0, sizeof(*sub));
}

/* A model being built: its GraphProto so far. */
struct tonnx {
	struct tonnx_buf graph;
};

#define TONNX_FLOAT 1 /* TensorProto.DataType FLOAT */

/* A float32 graph input (field 11) or output (field 12) of rank dims;
 * a dimension below 0 is the symbolic "batch". */
static TONNX_UNUSED void tonnx_value(struct tonnx *m, unsigned field,
				     const char *name, int rank,
				     const int64_t *dims)
{
	struct tonnx_buf vi = {0}, type = {0}, tensor = {0}, shape = {0};

	for (int i = 0; i < rank; i++) {
		struct tonnx_buf dim = {0};

		if (dims[i] < 0)
			tonnx_str(&dim, 2, "batch");  /* dim_param */
		else
			tonnx_int(&dim, 1, dims[i]);  /* dim_value */
		tonnx_msg(&shape, 1, &dim);
	}
	tonnx_int(&tensor, 1, TONNX_FLOAT);           /* elem_type */
	tonnx_msg(&tensor, 2, &shape);                /* shape */
	tonnx_msg(&type, 1, &tensor);                 /* tensor_type */
	tonnx_str(&vi, 1, name);
	tonnx_msg(&vi, 2, &type);
	tonnx_msg(&m->graph, field, &vi);
}

static TONNX_UNUSED void tonnx_input(struct tonnx *m, const char *name,
				     int rank, const int64_t *dims)
{
	tonnx_value(m, 11, name, rank, dims);
}

static TONNX_UNUSED void tonnx_output(struct tonnx *m, const char *name,
				      int rank, const int64_t *dims)
{
	tonnx_value(m, 12, name, rank, dims);
}

/* A float32 initializer (GraphProto field 5) with raw data. */
static TONNX_UNUSED void tonnx_weight(struct tonnx *m, const char *name,
				      int rank, const int64_t *dims,
				      const float *data)
{
	struct tonnx_buf t = {0};
	size_t n = 1;

	for (int i = 0; i < rank; i++) {
		tonnx_int(&t, 1, dims[i]);                 /* dims */
		n *= (size_t)dims[i];
	}
	tonnx_int(&t, 2, TONNX_FLOAT);                     /* data_type */
	tonnx_str(&t, 8, name);                            /* name */
	tonnx_bytes(&t, 9, data, n * sizeof(float));      /* raw_data */
	tonnx_msg(&m->graph, 5, &t);
}

/* A node of op (default domain) with inputs a and b (b may be NULL) and
 * output out, named after its output. */
static TONNX_UNUSED void tonnx_node(struct tonnx *m, const char *op,
				    const char *a, const char *b,
				    const char *out)
{
	struct tonnx_buf n = {0};

	tonnx_str(&n, 1, a);
	if (b != NULL)
		tonnx_str(&n, 1, b);
	tonnx_str(&n, 2, out);
	tonnx_str(&n, 3, out);
	tonnx_str(&n, 4, op);
	tonnx_msg(&m->graph, 1, &n);
}

/* The ModelProto (IR version 8, ai.onnx opset 13) around the graph, as a
 * malloc'd buffer of *len bytes; the builder is emptied. */
static TONNX_UNUSED uint8_t *tonnx_finish(struct tonnx *m, size_t *len)
{
	struct tonnx_buf model = {0}, opset = {0};

	tonnx_str(&m->graph, 2, "tiny");                  /* GraphProto.name */
	tonnx_int(&model, 1, 8);                           /* ir_version */
	tonnx_str(&opset, 1, "");                          /* domain */
	tonnx_int(&opset, 2, 13);                          /* version */
	tonnx_msg(&model, 8, &opset);                      /* opset_import */
	tonnx_msg(&model, 7, &m->graph);                   /* graph */
	*len = model.len;
	return model.p;
}

#endif
