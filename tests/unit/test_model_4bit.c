/*
 * test_model_4bit.c — 4-bit initializers (int4, uint4, float4e2m1): the
 * loader unpacks them, packed two to a byte in the file with an odd count
 * padded, to a byte each, from raw_data, from int32_data in ONNX's form
 * (two elements to a value) and in the one-element-a-value form, and
 * from external data; a 4-bit graph output comes back a byte each (an
 * int4 sign-extended); hostile tensors whose data is too short or too
 * long, or whose shape claims far more than the bytes there, are a clear
 * error and allocate nothing on the claim.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/model.h"
#include "gpu/backend.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

/* An initializer w of 4-bit dtype and n elements with the packed bytes
 * (n + 1) / 2 of packed as raw_data. */
static Onnx__TensorProto *init_4bit(struct onnxb *b, cep_dtype dtype, int n,
				    const uint8_t *packed, size_t len)
{
	char shape[16];
	Onnx__TensorProto *t;

	snprintf(shape, sizeof(shape), "%d", n);
	/* onnxb sizes raw_data a byte an element: replace it. */
	t = onnxb_init(b, "w", dtype, shape, NULL);
	free(t->raw_data.data);
	t->raw_data.data = malloc(len ? len : 1);
	cr_assert_not_null(t->raw_data.data);
	memcpy(t->raw_data.data, packed, len);
	t->raw_data.len = len;
	return t;
}

/* Moves t's data from raw_data into int32_data (n values). */
static void to_int32_data(Onnx__TensorProto *t, const int32_t *v, size_t n)
{
	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
	t->int32_data = malloc(n * sizeof(int32_t));
	cr_assert_not_null(t->int32_data);
	memcpy(t->int32_data, v, n * sizeof(int32_t));
	t->n_int32_data = n;
}

/* y = x + Cast(w, float32) (opset 23), x float32 [n]. */
static struct onnxb *cast_model(int n)
{
	struct onnxb *b = onnxb_new(23);
	char shape[16];
	Onnx__NodeProto *c;

	snprintf(shape, sizeof(shape), "%d", n);
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, shape);
	onnxb_output(b, "y", 0, NULL);
	c = onnxb_node(b, "Cast", "w", "wf");
	onnxb_attr_int(c, "to", CEP_DTYPE_FLOAT32);
	onnxb_node(b, "Add", "x,wf", "y");
	return b;
}

/* Loads b, runs it on x = 100, 200, ... and checks y - x against want. */
static void run_expect(struct onnxb *b, int dir_fd, const float *want, int n)
{
	float x[8], y[8];
	int64_t dims[1] = { n };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, (size_t)n * 4 };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int i;

	cr_assert(n <= 8);
	for (i = 0; i < n; i++)
		x[i] = 100.0f * (float)(i + 1);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, dir_fd, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < n; i++)
		cr_assert_eq(y[i] - x[i], want[i], "element %d: %g, want %g", i, y[i] - x[i],
			     want[i]);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}

/* Loads b and returns the error, asserting that it fails. */
static int load_fails(struct onnxb *b)
{
	struct model *m = NULL;
	uint8_t *buf;
	size_t len;
	int ret;

	buf = onnxb_finish(b, &len);
	ret = model_load(buf, len, -1, &m);
	free(buf);
	cr_assert_neq(ret, 0);
	cr_assert_null(m);
	return ret;
}

/* int4 -8, 7, -1, 3, 5: (-8 | 7 << 4), (-1 | 3 << 4), 5 and a padding
 * nibble, which is not read. */
static const uint8_t i4_packed[3] = { 0x78, 0x3f, 0xa5 };
static const float i4_want[5] = { -8, 7, -1, 3, 5 };

/* ---------------------------------------------------------------- forms */

Test(model_4bit, raw_data_with_an_odd_count_unpacks_low_nibble_first)
{
	static const uint8_t u4[2] = { 0x0f, 0x09 };           /* 15, 0, 9 */
	static const float u4_want[3] = { 15, 0, 9 };
	static const uint8_t f4[2] = { 0xf1, 0x05 };           /* 0.5, -6, 3 */
	static const float f4_want[3] = { 0.5f, -6.0f, 3.0f };
	struct onnxb *b;

	b = cast_model(5);
	init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3);
	run_expect(b, -1, i4_want, 5);
	b = cast_model(3);
	init_4bit(b, CEP_DTYPE_UINT4, 3, u4, 2);
	run_expect(b, -1, u4_want, 3);
	b = cast_model(3);
	init_4bit(b, CEP_DTYPE_FLOAT4E2M1, 3, f4, 2);
	run_expect(b, -1, f4_want, 3);
}

Test(model_4bit, int32_data_two_elements_a_value_as_onnx_writes_it)
{
	static const int32_t v[3] = { 0x78, 0x3f, 0x05 };
	struct onnxb *b = cast_model(5);

	to_int32_data(init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3), v, 3);
	run_expect(b, -1, i4_want, 5);
}

Test(model_4bit, int32_data_one_element_a_value)
{
	static const int32_t v[5] = { -8, 7, -1, 3, 5 };
	static const int32_t u[4] = { 1, 15, 8, 0 };
	static const float u_want[4] = { 1, 15, 8, 0 };
	struct onnxb *b = cast_model(5);

	to_int32_data(init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3), v, 5);
	run_expect(b, -1, i4_want, 5);
	b = cast_model(4);
	to_int32_data(init_4bit(b, CEP_DTYPE_UINT4, 4, i4_packed, 2), u, 4);
	run_expect(b, -1, u_want, 4);
}

Test(model_4bit, external_data_is_packed_too)
{
	char dir[] = "/tmp/cep_4bit_XXXXXX", path[64];
	static const uint8_t file[5] = { 0xee, 0xee, 0x78, 0x3f, 0x05 };
	const char *keys[3] = { "location", "offset", "length" };
	const char *vals[3] = { "w.bin", "2", "3" };
	struct onnxb *b = cast_model(5);
	Onnx__TensorProto *t = init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3);
	FILE *f;
	int fd, i;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/w.bin", dir);
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(file, 1, sizeof(file), f), sizeof(file));
	fclose(f);
	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->external_data = calloc(3, sizeof(*t->external_data));
	for (i = 0; i < 3; i++) {
		Onnx__StringStringEntryProto *e = calloc(1, sizeof(*e));

		onnx__string_string_entry_proto__init(e);
		e->key = strdup(keys[i]);
		e->value = strdup(vals[i]);
		t->external_data[i] = e;
	}
	t->n_external_data = 3;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	run_expect(b, fd, i4_want, 5);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* A graph output of int4 comes back a byte each, sign-extended; uint4 and
 * float4e2m1 in the low nibble. */
Test(model_4bit, outputs_are_a_byte_each)
{
	struct onnxb *b = onnxb_new(23);
	static const float x[6] = { -8, -1, 7, 2.5f, -0.5f, 15 };
	static const uint8_t want_i4[6] = { 0xf8, 0xff, 0x07, 0x02, 0x00, 0x00 };
	static const uint8_t want_u4[6] = { 0x00, 0x00, 0x07, 0x02, 0x00, 0x0f };
	static const uint8_t want_f4[6] = { 0x0f, 0x0a, 0x07, 0x04, 0x09, 0x07 };
	int64_t dims[1] = { 6 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, (void *)x, sizeof(x) };
	uint8_t y[3][6];
	struct engine_output out[3] = {
		{ .name = "i4", .data = y[0], .capacity = 6 },
		{ .name = "u4", .data = y[1], .capacity = 6 },
		{ .name = "f4", .data = y[2], .capacity = 6 },
	};
	const cep_dtype types[3] = { CEP_DTYPE_INT4, CEP_DTYPE_UINT4, CEP_DTYPE_FLOAT4E2M1 };
	struct backend *be;
	engine_model *m;
	engine_session *s;
	uint8_t *buf;
	size_t len;
	int i;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "6");
	for (i = 0; i < 3; i++) {
		onnxb_output(b, out[i].name, types[i], "6");
		onnxb_attr_int(onnxb_node(b, "Cast", "x", out[i].name), "to", types[i]);
	}
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, &in, 1, out, 3), 0, "%s", cep_last_error());
	for (i = 0; i < 3; i++) {
		cr_assert_eq(out[i].dtype, types[i]);
		cr_assert_eq(out[i].bytes, 6);
	}
	cr_assert_arr_eq(y[0], want_i4, 6);
	cr_assert_arr_eq(y[1], want_u4, 6);
	cr_assert_arr_eq(y[2], want_f4, 6);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
	cr_assert_eq(cep_dtype_size(CEP_DTYPE_INT4), 1);
	cr_assert_str_eq(cep_dtype_name(CEP_DTYPE_FLOAT4E2M1), "float4e2m1");
}

/* -------------------------------------------------------------- hostile */

Test(model_4bit, raw_data_too_short_or_too_long_is_a_clear_error)
{
	struct onnxb *b = cast_model(5);

	init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 2);
	cr_assert_eq(load_fails(b), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': raw_data has 2 bytes, its shape "
					   "needs 3 (5 int4 elements, two to a byte)");
	/* A byte an element, as memory holds them, is not the file's form. */
	b = cast_model(5);
	init_4bit(b, CEP_DTYPE_UINT4, 5, (const uint8_t *)"\1\2\3\4\5", 5);
	cr_assert_eq(load_fails(b), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w': raw_data has 5 bytes, its shape "
					   "needs 3 (5 uint4 elements, two to a byte)");
	b = cast_model(5);
	init_4bit(b, CEP_DTYPE_FLOAT4E2M1, 5, i4_packed, 0);
	cr_assert_eq(load_fails(b), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "raw_data has 0 bytes"), "%s", cep_last_error());
}

Test(model_4bit, int32_data_of_neither_count_is_a_clear_error)
{
	static const int32_t v[4] = { 1, 2, 3, 4 };
	struct onnxb *b = cast_model(5);

	to_int32_data(init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3), v, 4);
	cr_assert_eq(load_fails(b), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "initializer 'w' has 4 int32_data values, its shape "
					   "needs 3 (two int4 elements to a value)");
	b = cast_model(5);
	to_int32_data(init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3), v, 0);
	cr_assert_eq(load_fails(b), CEP_EMODEL);
}

/* A shape of 2^38 elements claimed with 3 bytes: refused before anything
 * of its size is allocated. */
Test(model_4bit, a_huge_shape_over_a_few_bytes_allocates_nothing)
{
	struct onnxb *b = cast_model(5);
	Onnx__TensorProto *t = init_4bit(b, CEP_DTYPE_INT4, 5, i4_packed, 3);

	t->dims[0] = INT64_C(1) << 38;
	cr_assert_eq(load_fails(b), CEP_EMODEL);
	cr_assert(strstr(cep_last_error(), "raw_data has 3 bytes, its shape needs 137438953472"),
		  "%s", cep_last_error());
}
