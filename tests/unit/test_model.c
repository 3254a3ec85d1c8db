/*
 * test_model.c — loading ONNX models: every validation error with the
 * message that names node, op, domain and opset; hostile files (truncated
 * at every byte, garbage, overflowing and negative dims, raw_data of the
 * wrong length, a million nodes, nesting without end), each a clear error
 * and never a crash; external data read below the model's directory, and
 * every way of leaving it refused.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/model.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

/* Packs b (and frees it) and loads the bytes; returns the error. */
static int load(struct onnxb *b, int dir_fd)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;
	int ret;

	buf = onnxb_finish(b, &len);
	ret = model_load(buf, len, dir_fd, &m);
	free(buf);
	if (ret == 0)
		cr_assert_not_null(m);
	else
		cr_assert_null(m);
	model_free(m);
	return ret;
}

/* A model with input x [2,3] float32 and output y, ready for nodes. */
static struct onnxb *base(int opset)
{
	struct onnxb *b = onnxb_new(opset);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_output(b, "y", 0, NULL);
	return b;
}

/* ------------------------------------------------------------- validation */

Test(model, a_valid_model_loads)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), 0, "%s", cep_last_error());
}

Test(model, unknown_op_is_named)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Relu", "x", "h");
	onnxb_node(b, "Frobnicate", "h", "y");
	cr_assert_eq(load(b, -1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "node 1 'y' (op Frobnicate, domain ai.onnx, opset 13): "
					   "unknown op Frobnicate in domain ai.onnx");
}

Test(model, unknown_op_in_another_domain)
{
	struct onnxb *b = base(13);
	Onnx__NodeProto *n;

	onnxb_opset(b, "com.example", 1);
	n = onnxb_node(b, "Foo", "x", "y");
	free(n->domain);
	n->domain = strdup("com.example");
	cr_assert_eq(load(b, -1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Foo, domain com.example, opset 1): "
					   "unknown op Foo in domain com.example");
}

Test(model, domain_not_imported)
{
	struct onnxb *b = base(13);
	Onnx__NodeProto *n = onnxb_node(b, "Foo", "x", "y");

	free(n->domain);
	n->domain = strdup("com.example");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "domain com.example is not imported by the model"),
		  "%s", cep_last_error());
}

Test(model, op_opset_out_of_range)
{
	struct onnxb *b = base(8);

	onnxb_node(b, "Erf", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Erf, domain ai.onnx, opset 8): "
					   "Erf: opset 8 is not supported (supported 9-28)");
}

Test(model, model_opset_beyond_this_build)
{
	struct onnxb *b = base(OP_OPSET_MAX + 2);

	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "the model imports ai.onnx opset 30; "
					   "this build supports opsets up to 28");
}

Test(model, missing_inputs)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Add", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Add, domain ai.onnx, opset 13): "
					   "1 inputs, Add needs at least 2");
	b = base(13);
	onnxb_node(b, "Add", "x,", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "input 1 is required but missing"), "%s",
		  cep_last_error());
}

Test(model, undefined_input)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Add", "x,ghost", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Add, domain ai.onnx, opset 13): "
					   "input 1 'ghost' is not a graph input, an initializer "
					   "or the output of any node");
}

Test(model, cycle_names_a_node_on_it)
{
	struct onnxb *b = base(13);

	/* x feeds a cycle a -> b -> c -> a; the tail y hangs off it. */
	onnxb_node(b, "Add", "x,c", "a");
	onnxb_node(b, "Relu", "a", "b");
	onnxb_node(b, "Relu", "b", "c");
	onnxb_node(b, "Relu", "c", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "is on a cycle through its input"), "%s",
		  cep_last_error());
	/* The node named is on the cycle, not the tail y hanging off it. */
	cr_assert(strstr(cep_last_error(), "'a' (op Add") || strstr(cep_last_error(), "'b' (op") ||
		  strstr(cep_last_error(), "'c' (op"), "%s", cep_last_error());
}

Test(model, self_loop)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Add", "x,y", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Add, domain ai.onnx, opset 13): "
					   "is on a cycle through its input 'y'");
}

Test(model, type_mismatch)
{
	struct onnxb *b = base(13);
	int64_t k[3] = { 1, 2, 3 };

	onnxb_init(b, "k", CEP_DTYPE_INT64, "3", k);
	onnxb_node(b, "Add", "x,k", "y");
	cr_assert_eq(load(b, -1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "node 0 'y' (op Add, domain ai.onnx, opset 13): "
					   "Add: input 1 is int64 but input 0 is float32");
}

Test(model, shape_mismatch_in_inference)
{
	struct onnxb *b = base(13);

	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,5", NULL);
	onnxb_node(b, "MatMul", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_ESHAPE);
	cr_assert(strstr(cep_last_error(), "MatMul: inner dimensions differ (3 and 4)"), "%s",
		  cep_last_error());
}

Test(model, duplicate_outputs)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Relu", "x", "h");
	onnxb_node(b, "Relu", "x", "h");
	onnxb_node(b, "Relu", "h", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "node 1 'h' (op Relu, domain ai.onnx, opset 13): "
					   "output 0 'h' is already defined by node 0 'h' "
					   "(op Relu, domain ai.onnx, opset 13)");
	b = base(13);
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "1", NULL);
	onnxb_node(b, "Relu", "x", "w");
	onnxb_node(b, "Relu", "w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "output 0 'w' is already defined by an initializer"),
		  "%s", cep_last_error());
}

Test(model, graph_input_without_type)
{
	struct onnxb *b = onnxb_new(13);
	Onnx__ValueInfoProto *vi;

	vi = onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2");
	protobuf_c_message_free_unpacked(&vi->type->base, NULL);
	vi->type = NULL;
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "graph input 'x' has no type");
	b = onnxb_new(13);
	onnxb_input(b, "x", 0, "2");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "graph input 'x' has no element type");
}

Test(model, unsupported_input_type)
{
	struct onnxb *b = onnxb_new(13);

	/* 14 is complex64. */
	onnxb_input(b, "x", (cep_dtype)14, "2");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(),
			 "graph input 'x' has type complex64, which cudaep does not support");
}

Test(model, graph_output_undefined_or_mistyped)
{
	struct onnxb *b = base(13);

	onnxb_output(b, "q", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "graph output 'q' is not a graph input, an initializer "
					   "or the output of any node");
	b = onnxb_new(13);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT16, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "graph output 'y' is declared float16 but computes float32");
}

Test(model, no_opset_import)
{
	struct onnxb *b = base(13);

	onnxb_node(b, "Relu", "x", "y");
	protobuf_c_message_free_unpacked(&b->model->opset_import[0]->base, NULL);
	free(b->model->opset_import);
	b->model->opset_import = NULL;
	b->model->n_opset_import = 0;
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "imports no operator set"), "%s", cep_last_error());
}

Test(model, bad_attribute_type)
{
	struct onnxb *b = base(13);
	Onnx__NodeProto *n = onnxb_node(b, "Cast", "x", "y");

	onnxb_attr_string(n, "to", "float");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "Cast: attribute 'to' (an int) is required"), "%s",
		  cep_last_error());
}

/* ---------------------------------------------------------------- hostile */

static uint8_t *mlp_bytes(size_t *len)
{
	struct onnxb *b = onnxb_new(13);
	float w[12] = { 0 };
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,4");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,3");
	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "4,3", w);
	onnxb_node(b, "MatMul", "x,w", "h");
	n = onnxb_node(b, "Softmax", "h", "y");
	onnxb_attr_int(n, "axis", -1);
	return onnxb_finish(b, len);
}

Test(hostile, truncated_at_every_byte)
{
	size_t len, cut;
	uint8_t *full = mlp_bytes(&len);
	int failures = 0;

	for (cut = 0; cut < len; cut++) {
		uint8_t *part = malloc(cut ? cut : 1);
		struct model *m = NULL;
		int ret;

		memcpy(part, full, cut);
		ret = model_load(part, cut, -1, &m);
		/* A prefix may even be a valid, smaller model; what must never
		 * happen is a crash or an error without a message. */
		if (ret < 0 && cep_last_error()[0] == '\0')
			failures++;
		if (ret == 0)
			model_free(m);
		free(part);
	}
	cr_assert_eq(failures, 0);
	cr_assert_eq(model_load(full, len - 1, -1, &(struct model *){ NULL }), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "truncated"), "%s", cep_last_error());
	free(full);
}

Test(hostile, garbage_bytes)
{
	uint8_t junk[4096];
	unsigned s = 12345;
	int i, round;

	for (round = 0; round < 64; round++) {
		struct model *m = NULL;
		int ret;

		for (i = 0; i < (int)sizeof(junk); i++) {
			s = s * 1103515245u + 12345u;
			junk[i] = (uint8_t)(s >> 16);
		}
		ret = model_load(junk, sizeof(junk) >> (round % 8), -1, &m);
		cr_assert_lt(ret, 0);
		cr_assert_neq(cep_last_error()[0], '\0');
	}
}

Test(hostile, dims_overflow)
{
	struct onnxb *b = base(13);
	Onnx__TensorProto *t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "1", NULL);

	t->dims[0] = INT64_C(1) << 40;
	t->dims = realloc(t->dims, 2 * sizeof(int64_t));
	t->dims[1] = INT64_C(1) << 40;
	t->n_dims = 2;
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': its dimensions multiply to more than 2^40");
	b = base(13);
	t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "1,1", NULL);
	t->dims[0] = INT64_MAX;
	t->dims[1] = 4; /* INT64_MAX * 4 overflows int64 */
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	b = onnxb_new(13);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "1099511627776,1099511627776");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "graph input 'x': its dimensions multiply to more than 2^40");
}

Test(hostile, negative_dims)
{
	struct onnxb *b = base(13);

	onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "2,-3", NULL);
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': dimension 1 is -3");
	b = onnxb_new(13);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,-1");
	onnxb_output(b, "y", 0, NULL);
	onnxb_node(b, "Relu", "x", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "graph input 'x': dimension 1 is -1");
}

Test(hostile, raw_data_shorter_or_longer_than_the_shape)
{
	struct onnxb *b = base(13);
	Onnx__TensorProto *t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "2,3", NULL);

	t->raw_data.len = 20;
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': raw_data has 20 bytes, its shape needs 24");
	b = base(13);
	t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "2,3", NULL);
	t->raw_data.data = realloc(t->raw_data.data, 28);
	t->raw_data.len = 28;
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': raw_data has 28 bytes, its shape needs 24");
	/* A shape of 2^40 floats claimed with 4 bytes of data allocates nothing. */
	b = base(13);
	t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "1", NULL);
	t->dims[0] = INT64_C(1) << 38;
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "raw_data has 4 bytes"), "%s", cep_last_error());
}

Test(hostile, typed_data_count_mismatch)
{
	struct onnxb *b = base(13);
	Onnx__TensorProto *t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "3", NULL);

	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
	t->float_data = calloc(2, sizeof(float));
	t->n_float_data = 2;
	onnxb_node(b, "Add", "x,w", "y");
	cr_assert_eq(load(b, -1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w' has 2 values, its shape needs 3");
}

/* Appends a protobuf varint. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

Test(hostile, a_million_nodes)
{
	/* ModelProto { opset_import { version: 13 }, graph { node {} x 10^6 } }
	 * written directly: two bytes per empty node. */
	size_t nodes = 1000000, at = 0;
	size_t graph_len = nodes * 2;
	uint8_t *buf = malloc(graph_len + 64);
	struct model *m = NULL;
	size_t i;

	buf[at++] = 0x42; /* field 8, opset_import */
	buf[at++] = 2;
	buf[at++] = 0x10; /* field 2, version */
	buf[at++] = 13;
	buf[at++] = 0x3a; /* field 7, graph */
	at += put_varint(buf + at, graph_len);
	for (i = 0; i < nodes; i++) {
		buf[at++] = 0x0a; /* field 1, node */
		buf[at++] = 0;
	}
	cr_assert_eq(model_load(buf, at, -1, &m), CEP_ELIMIT);
	cr_assert_str_eq(cep_last_error(), "the model has more than 262144 nodes");
	cr_assert_null(m);
	free(buf);
}

Test(hostile, nesting_without_end)
{
	/* graph.node.attribute.g.node.attribute.g... 200 levels deep. */
	static const uint8_t fields[3] = { 0x0a, 0x2a, 0x32 }; /* node, attribute, g */
	uint8_t *buf = calloc(1, 8192), *tmp = calloc(1, 8192);
	size_t len = 0, i;
	struct model *m = NULL;

	for (i = 0; i < 600; i++) {
		uint8_t hdr[12];
		size_t h = 0;

		hdr[h++] = fields[(599 - i) % 3]; /* outermost: node */
		h += put_varint(hdr + h, len);
		memcpy(tmp, hdr, h);
		memcpy(tmp + h, buf, len);
		len += h;
		memcpy(buf, tmp, len);
	}
	memmove(buf + 3, buf, len);
	buf[0] = 0x3a; /* ModelProto.graph */
	buf[1] = (uint8_t)(len | 0x80);
	buf[2] = (uint8_t)(len >> 7);
	cr_assert_lt(len, 1u << 14);
	cr_assert_eq(model_load(buf, len + 3, -1, &m), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "not a valid ONNX model: messages nested more than 64 deep");
	free(buf);
	free(tmp);
}

Test(hostile, a_long_chain_loads_and_runs)
{
	struct onnxb *b = onnxb_new(13);
	struct backend *be;
	engine_model *m;
	engine_session *s;
	float x[3] = { -1, 0.5f, 2 }, y[3];
	int64_t dims[1] = { 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	char a[32], c[32];
	uint8_t *buf;
	size_t len;
	int i, n = 20000;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "3");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "3");
	for (i = 0; i < n; i++) {
		snprintf(a, sizeof(a), i ? "v%d" : "x", i);
		snprintf(c, sizeof(c), i == n - 1 ? "y" : "v%d", i + 1);
		onnxb_node(b, "Relu", a, c);
	}
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 0.0f);
	cr_assert_eq(y[2], 2.0f);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* ---------------------------------------------------------- external data */

struct tmpdir {
	char path[64];
	int fd;
};

static void tmpdir_open(struct tmpdir *t)
{
	snprintf(t->path, sizeof(t->path), "/tmp/cep-model-XXXXXX");
	cr_assert_not_null(mkdtemp(t->path));
	t->fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(t->fd, 0);
}

static void tmpdir_write(struct tmpdir *t, const char *name, const void *data, size_t len)
{
	int fd = openat(t->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void tmpdir_close(struct tmpdir *t)
{
	char cmd[128];

	close(t->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
	cr_assert_eq(system(cmd), 0);
}

static void external_set(Onnx__TensorProto *t, const char *loc, const char *off,
			 const char *len)
{
	const char *keys[3] = { "location", "offset", "length" };
	const char *vals[3] = { loc, off, len };
	int i;

	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	for (i = 0; i < 3; i++) {
		Onnx__StringStringEntryProto *e;

		if (!vals[i])
			continue;
		e = calloc(1, sizeof(*e));
		onnx__string_string_entry_proto__init(e);
		e->key = strdup(keys[i]);
		e->value = strdup(vals[i]);
		t->external_data = realloc(t->external_data,
					   sizeof(*t->external_data) * (t->n_external_data + 1));
		t->external_data[t->n_external_data++] = e;
	}
}

/* y = x + w with w [2,3] stored externally at loc. */
static struct onnxb *external_model(const char *loc, const char *off, const char *len)
{
	struct onnxb *b = base(13);
	Onnx__TensorProto *t = onnxb_init(b, "w", CEP_DTYPE_FLOAT32, "2,3", NULL);

	external_set(t, loc, off, len);
	onnxb_node(b, "Add", "x,w", "y");
	return b;
}

Test(external, data_is_read_below_the_directory)
{
	float pad[4] = { 9, 9, 9, 9 }, w[6] = { 1, 2, 3, 4, 5, 6 };
	float file[10], x[6] = { 10, 20, 30, 40, 50, 60 }, y[6];
	int64_t dims[2] = { 2, 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct tmpdir d;
	struct backend *be;
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int i;

	tmpdir_open(&d);
	memcpy(file, pad, sizeof(pad));
	memcpy(file + 4, w, sizeof(w));
	cr_assert_eq(mkdirat(d.fd, "sub", 0700), 0);
	tmpdir_write(&d, "sub/w.bin", file, sizeof(file));
	buf = onnxb_finish(external_model("sub/w.bin", "16", "24"), &len);
	cr_assert_eq(engine_model_load(buf, len, d.fd, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(y[i], x[i] + w[i]);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
	/* Without a length, the rest of the file from offset must fit. */
	cr_assert_eq(load(external_model("sub/w.bin", "16", NULL), d.fd), 0, "%s",
		     cep_last_error());
	tmpdir_close(&d);
}

/* Two clients with the same model file but different data files beside
 * it: each must get its own weights, so a model with external data is
 * never shared, while one without is shared even when a directory came
 * with it (cep_session_load() always sends one). */
Test(external, models_with_external_data_are_not_shared)
{
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { -1, -2, -3, -4, -5, -6 };
	float x[6] = { 0 }, y[6];
	int64_t dims[2] = { 2, 3 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct tmpdir da, db;
	struct onnxb *pb;
	engine_model_cache *cache;
	engine_model *ma, *mb, *mc, *md;
	engine_session *s;
	struct backend *be;
	uint8_t *buf, *plain;
	size_t len, plain_len;
	bool shared;

	tmpdir_open(&da);
	tmpdir_open(&db);
	tmpdir_write(&da, "w.bin", a, sizeof(a));
	tmpdir_write(&db, "w.bin", b, sizeof(b));
	buf = onnxb_finish(external_model("w.bin", "0", "24"), &len);
	cr_assert_eq(engine_model_cache_new(&cache), 0);
	cr_assert_eq(engine_model_load_shared(cache, buf, len, da.fd, NULL, &ma, &shared), 0,
		     "%s", cep_last_error());
	cr_assert_eq(engine_model_load_shared(cache, buf, len, db.fd, NULL, &mb, &shared), 0,
		     "%s", cep_last_error());
	cr_assert(!shared, "a model with external data was shared");
	cr_assert_neq(ma, mb);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(mb, be, NULL, &s), 0);
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[5], -6.0f, "the second client got the first one's weights");
	engine_session_free(s);

	pb = base(13);
	onnxb_init(pb, "w", CEP_DTYPE_FLOAT32, "2,3", a);
	onnxb_node(pb, "Add", "x,w", "y");
	plain = onnxb_finish(pb, &plain_len);
	cr_assert_eq(engine_model_load_shared(cache, plain, plain_len, da.fd, NULL, &mc,
					      &shared), 0,
		     "%s", cep_last_error());
	cr_assert_eq(engine_model_load_shared(cache, plain, plain_len, db.fd, NULL, &md,
					      &shared), 0,
		     "%s", cep_last_error());
	cr_assert(shared, "a model without external data was not shared");
	cr_assert_eq(mc, md);
	engine_model_unref(ma);
	engine_model_unref(mb);
	engine_model_unref(mc);
	engine_model_unref(md);
	engine_model_cache_free(cache);
	backend_free(be);
	free(buf);
	free(plain);
	tmpdir_close(&da);
	tmpdir_close(&db);
}

Test(external, escaping_paths_are_refused)
{
	float w[6] = { 0 };
	struct tmpdir d;

	tmpdir_open(&d);
	tmpdir_write(&d, "w.bin", w, sizeof(w));
	cr_assert_eq(load(external_model("/etc/passwd", NULL, NULL), d.fd), CEP_EACCES);
	cr_assert_str_eq(cep_last_error(),
			 "initializer 'w': external data location '/etc/passwd' is an absolute path");
	cr_assert_eq(load(external_model("../w.bin", NULL, NULL), d.fd), CEP_EACCES);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': external data location '../w.bin' "
					   "leaves the model's directory");
	cr_assert_eq(load(external_model("a/../../w.bin", NULL, NULL), d.fd), CEP_EACCES);
	/* A symlink inside the directory pointing out of it. */
	cr_assert_eq(symlinkat("/etc/hostname", d.fd, "link.bin"), 0);
	cr_assert_eq(load(external_model("link.bin", NULL, NULL), d.fd), CEP_EACCES);
	cr_assert(strstr(cep_last_error(), "leaves the model's directory"), "%s", cep_last_error());
	cr_assert_eq(symlinkat("..", d.fd, "up"), 0);
	cr_assert_eq(load(external_model("up/w.bin", NULL, NULL), d.fd), CEP_EACCES);
	tmpdir_close(&d);
}

Test(external, ranges_and_missing_files)
{
	float w[6] = { 0 };
	struct tmpdir d;

	tmpdir_open(&d);
	tmpdir_write(&d, "w.bin", w, sizeof(w));
	cr_assert_eq(load(external_model("w.bin", "8", NULL), d.fd), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': external data needs bytes 8..32 of "
					   "'w.bin', which has 24");
	cr_assert_eq(load(external_model("w.bin", NULL, "20"), d.fd), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': external data length is 20, the shape "
					   "needs 24 bytes");
	cr_assert_eq(load(external_model("w.bin", "-4", NULL), d.fd), CEP_EMODEL);
	cr_assert_eq(load(external_model("nope.bin", NULL, NULL), d.fd), CEP_ENOENT);
	cr_assert_eq(load(external_model("w.bin", NULL, NULL), -1), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "no directory was given"), "%s", cep_last_error());
	cr_assert_eq(load(external_model(NULL, NULL, NULL), d.fd), CEP_EMODEL);
	cr_assert_eq(load(external_model("w.bin", NULL, NULL), d.fd), 0, "%s", cep_last_error());
	tmpdir_close(&d);
}

Test(external, both_ways_of_opening_stay_below_the_directory)
{
	struct tmpdir d;
	int walk, fd;

	tmpdir_open(&d);
	tmpdir_write(&d, "w.bin", "abc", 3);
	cr_assert_eq(mkdirat(d.fd, "sub", 0700), 0);
	tmpdir_write(&d, "sub/v.bin", "xyz", 3);
	cr_assert_eq(symlinkat("/etc/hostname", d.fd, "out.bin"), 0);
	cr_assert_eq(symlinkat("../..", d.fd, "sub/up2"), 0);
	for (walk = 0; walk < 2; walk++) {
		fd = model__open_beneath(d.fd, "w.bin", walk);
		cr_assert_geq(fd, 0, "walk %d", walk);
		close(fd);
		fd = model__open_beneath(d.fd, "./sub/v.bin", walk);
		cr_assert_geq(fd, 0, "walk %d", walk);
		close(fd);
		cr_assert_lt(model__open_beneath(d.fd, "out.bin", walk), 0, "walk %d", walk);
		cr_assert_lt(model__open_beneath(d.fd, "sub/up2/w.bin", walk), 0, "walk %d", walk);
		cr_assert_lt(model__open_beneath(d.fd, "missing", walk), 0);
	}
	tmpdir_close(&d);
}
