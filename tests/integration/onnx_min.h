/*
 * onnx_min.h — just enough of the ONNX protobuf, written by hand, to give
 * the integration tests small models without the daemon's protobuf-c
 * code: a graph of nodes with float and int64 inputs, float initializers
 * and symbolic or fixed dimensions, saved to a file. Header-only and
 * static (integration tests link only the client library).
 *
 *	struct om m;
 *	om_init(&m, "x", ...);   then om_input/om_output/om_init_f32/om_node
 *	om_save(&m, path);
 */
#ifndef CEP_TESTS_ONNX_MIN_H
#define CEP_TESTS_ONNX_MIN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OM_UNUSED __attribute__((unused))

/* A growable byte buffer. */
struct om_buf {
	uint8_t *p;
	size_t n, cap;
};

static OM_UNUSED void om_put(struct om_buf *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (b->p == NULL)
			abort();
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

static OM_UNUSED void om_varint(struct om_buf *b, uint64_t v)
{
	uint8_t c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		om_put(b, &c, 1);
	} while (v);
}

/* Field number f with wire type w. */
static OM_UNUSED void om_tag(struct om_buf *b, unsigned f, unsigned w)
{
	om_varint(b, (uint64_t)f << 3 | w);
}

static OM_UNUSED void om_int(struct om_buf *b, unsigned f, int64_t v)
{
	om_tag(b, f, 0);
	om_varint(b, (uint64_t)v);
}

static OM_UNUSED void om_bytes(struct om_buf *b, unsigned f, const void *p, size_t n)
{
	om_tag(b, f, 2);
	om_varint(b, n);
	om_put(b, p, n);
}

static OM_UNUSED void om_str(struct om_buf *b, unsigned f, const char *s)
{
	om_bytes(b, f, s, strlen(s));
}

/* Appends sub as a length-delimited field f and frees it. */
static OM_UNUSED void om_sub(struct om_buf *b, unsigned f, struct om_buf *sub)
{
	om_bytes(b, f, sub->p, sub->n);
	free(sub->p);
	memset(sub, 0, sizeof(*sub));
}

/* A model under construction: its graph's fields, in order of addition. */
struct om {
	struct om_buf graph;
	int nodes;
};

/* ValueInfoProto of name, elem_type (ONNX's: 1 float, 7 int64) and dims
 * ("n,16": a name is symbolic). */
static OM_UNUSED void om_value(struct om *m, unsigned field, const char *name, int elem,
			       const char *dims)
{
	struct om_buf vi = { 0 }, type = { 0 }, tensor = { 0 }, shape = { 0 };
	const char *p = dims;

	while (*p) {
		struct om_buf dim = { 0 };
		char tok[64];
		size_t n = strcspn(p, ",");

		snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
		if (tok[0] >= '0' && tok[0] <= '9')
			om_int(&dim, 1, strtoll(tok, NULL, 10));
		else
			om_str(&dim, 2, tok);
		om_sub(&shape, 1, &dim);
		p += n;
		if (*p == ',')
			p++;
	}
	om_int(&tensor, 1, elem);
	om_sub(&tensor, 2, &shape);
	om_sub(&type, 1, &tensor);
	om_str(&vi, 1, name);
	om_sub(&vi, 2, &type);
	om_sub(&m->graph, field, &vi);
}

static OM_UNUSED void om_input(struct om *m, const char *name, int elem, const char *dims)
{
	om_value(m, 11, name, elem, dims);
}

static OM_UNUSED void om_output(struct om *m, const char *name, int elem, const char *dims)
{
	om_value(m, 12, name, elem, dims);
}

/* A float initializer of rank 2 (rows x cols) holding data. */
static OM_UNUSED void om_init_f32(struct om *m, const char *name, int64_t rows, int64_t cols,
				  const float *data)
{
	struct om_buf t = { 0 };

	om_int(&t, 1, rows);
	om_int(&t, 1, cols);
	om_int(&t, 2, 1);
	om_str(&t, 8, name);
	om_bytes(&t, 9, data, sizeof(float) * (size_t)(rows * cols));
	om_sub(&m->graph, 5, &t);
}

/* A node op_type(inputs) -> output; inputs comma-separated. An int64
 * attribute is added when attr is not NULL. */
static OM_UNUSED void om_node(struct om *m, const char *op_type, const char *inputs,
			      const char *output, const char *attr, int64_t attr_value)
{
	struct om_buf n = { 0 };
	const char *p = inputs;
	char name[32];

	while (*p) {
		char tok[64];
		size_t k = strcspn(p, ",");

		snprintf(tok, sizeof(tok), "%.*s", (int)k, p);
		om_str(&n, 1, tok);
		p += k;
		if (*p == ',')
			p++;
	}
	om_str(&n, 2, output);
	snprintf(name, sizeof(name), "n%d", m->nodes++);
	om_str(&n, 3, name);
	om_str(&n, 4, op_type);
	if (attr != NULL) {
		struct om_buf a = { 0 };

		om_str(&a, 1, attr);
		om_int(&a, 3, attr_value);
		om_int(&a, 20, 2); /* AttributeType INT */
		om_sub(&n, 5, &a);
	}
	om_sub(&m->graph, 1, &n);
}

/* Writes the model (ir_version 8, opset 13) to path and frees m's
 * buffers. Returns 0 or -1. */
static OM_UNUSED int om_save(struct om *m, const char *path)
{
	struct om_buf model = { 0 }, opset = { 0 };
	FILE *f;
	int ret = -1;

	om_str(&m->graph, 2, "test");
	om_int(&model, 1, 8);
	om_int(&opset, 2, 13);
	om_sub(&model, 8, &opset);
	om_sub(&model, 7, &m->graph);
	f = fopen(path, "wb");
	if (f != NULL) {
		ret = fwrite(model.p, 1, model.n, f) == model.n ? 0 : -1;
		if (fclose(f) != 0)
			ret = -1;
	}
	free(model.p);
	return ret;
}

#endif
