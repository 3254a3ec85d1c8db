/*
 * test_ops_shape.c — the shape-moving operators of kernels/cpu (Slice,
 * Split, GatherElements, Expand, Tile, ConstantOfShape, Range, CastLike,
 * and the Flatten and Size of reshape.c and constant.c), called the way
 * the engine calls them: the registry's schema and inference, then the
 * host kernel through exec_host_eval. Inference is also checked alone the
 * way load time sees it (values unknown, symbolic dimensions). The same
 * operators inside models run by the engine are in test_ops_shape_model.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "client/cudaep.h"
#include "engine/exec.h"
#include "tests/unit/ops_harness.h"
#include "kernels/registry.h"

/* ------------------------------------------------------------- helpers */

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define RANK(...) ((int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
/* A tensor of dtype over data with the given dims (at least one). */
#define T(dt, data, ...) tensor(dt, RANK(__VA_ARGS__), DIMS(__VA_ARGS__), data)
/* A 1-D int64 list. */
#define L64(arr) tensor(CEP_DTYPE_INT64, 1, DIMS((int64_t)(sizeof(arr) / sizeof((arr)[0]))), arr)

static struct op_tensor tensor(cep_dtype dt, int rank, const int64_t *dims, void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = rank };

	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	return t;
}

static struct op_tensor scalar(cep_dtype dt, void *data)
{
	struct op_tensor t = { .data = data, .dtype = dt, .rank = 0 };

	return t;
}

static struct op_tensor absent(void)
{
	struct op_tensor t = { .dtype = CEP_DTYPE_UNDEFINED };

	return t;
}

static void outs_free(struct op_tensor *out, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(out[i].data);
}

static struct op_attr attr_i(const char *name, int64_t v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INT, .i = v };
}

static struct op_attr attr_ints(const char *name, int n, const int64_t *v)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_INTS, .n = n, .ints = v };
}

static struct op_attr attr_t(const char *name, const struct op_tensor *t)
{
	return (struct op_attr){ .name = name, .type = OP_ATTR_TENSOR, .t = t };
}

static void assert_dims(const struct op_tensor *t, int rank, const int64_t *dims)
{
	int i;

	cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
	for (i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "dim %d is %lld, expected %lld", i,
			     (long long)t->dims[i], (long long)dims[i]);
}

#define ASSERT_DIMS(t, ...) assert_dims(t, RANK(__VA_ARGS__), DIMS(__VA_ARGS__))

static void assert_f32(const struct op_tensor *t, int n, const float *want)
{
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(((const float *)t->data)[i], want[i], "element %d is %g, expected %g",
			     i, ((const float *)t->data)[i], want[i]);
}

static void assert_i64(const struct op_tensor *t, int n, const int64_t *want)
{
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(((const int64_t *)t->data)[i], want[i], "element %d is %lld, expected %lld",
			     i, (long long)((const int64_t *)t->data)[i], (long long)want[i]);
}

/* The message of the last error contains s. */
#define ASSERT_MSG(s) cr_assert(strstr(cep_last_error(), s) != NULL, "message: %s", cep_last_error())

/* 0, 1, 2, ... as floats. */
static void iota_f(float *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = (float)i;
}

/* ------------------------------------------------------------------ Slice */

Test(ops_shape, slice_steps_and_negative_steps)
{
	float x[12], y[2 * 2] = { 0 };
	int64_t starts[2] = { 2, 0 }, ends[2] = { 0, 4 }, axes[2] = { 0, 1 }, steps[2] = { -1, 3 };
	struct op_tensor in[5], out;

	iota_f(x, 12);
	in[0] = T(CEP_DTYPE_FLOAT32, x, 3, 4);
	in[1] = L64(starts);
	in[2] = L64(ends);
	in[3] = L64(axes);
	in[4] = L64(steps);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	/* rows 2, 1; columns 0, 3 */
	y[0] = 8, y[1] = 11, y[2] = 4, y[3] = 7;
	assert_f32(&out, 4, y);
	free(out.data);
}

Test(ops_shape, slice_clamps_like_onnx)
{
	float x[10];
	int64_t s1[1] = { -3 }, e1[1] = { INT64_MAX };
	int64_t s2[1] = { INT64_MAX }, e2[1] = { INT64_MIN }, st2[1] = { -4 };
	int64_t s3[1] = { 20 }, e3[1] = { 30 };
	int64_t s4[1] = { 5 }, e4[1] = { 2 };
	int64_t s5[1] = { -100 }, e5[1] = { 2 }, st5[1] = { INT64_MIN };
	struct op_tensor in[5], out;

	iota_f(x, 10);
	in[0] = T(CEP_DTYPE_FLOAT32, x, 10);
	in[1] = L64(s1), in[2] = L64(e1);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 3);
	assert_f32(&out, 3, (const float[]){ 7, 8, 9 });
	free(out.data);
	/* Backwards from past the end to before the start, every 4th. */
	in[1] = L64(s2), in[2] = L64(e2), in[3] = absent(), in[4] = L64(st2);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 3);
	assert_f32(&out, 3, (const float[]){ 9, 5, 1 });
	free(out.data);
	/* The whole axis reversed reaches element 0. */
	st2[0] = -1;
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 10);
	assert_f32(&out, 10, (const float[]){ 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 });
	free(out.data);
	/* Entirely past the end, and start after end: empty. */
	in[1] = L64(s3), in[2] = L64(e3);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 0);
	free(out.data);
	in[1] = L64(s4), in[2] = L64(e4);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 0);
	free(out.data);
	/* The most negative step cannot overflow: start clamps to 0, end 2
	 * lies after it, so nothing is taken. */
	in[1] = L64(s5), in[2] = L64(e5), in[3] = absent(), in[4] = L64(st5);
	cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 0);
	free(out.data);
}

Test(ops_shape, slice_attributes_before_opset_10)
{
	int64_t x[2 * 4] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int64_t starts[2] = { 0, 1 }, ends[2] = { -1, 1000 }, axes[1] = { -1 };
	struct op_attr attrs[3] = { attr_ints("starts", 2, starts), attr_ints("ends", 2, ends) };
	struct op_tensor in = T(CEP_DTYPE_INT64, x, 2, 4), out;

	cr_assert_eq(oh_run("Slice", 9, attrs, 2, &in, 1, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 1, 3);
	assert_i64(&out, 3, (const int64_t[]){ 2, 3, 4 });
	free(out.data);
	/* One axis, counted from the end. */
	attrs[0] = attr_ints("starts", 1, (const int64_t[]){ 2 });
	attrs[1] = attr_ints("ends", 1, (const int64_t[]){ 4 });
	attrs[2] = attr_ints("axes", 1, axes);
	cr_assert_eq(oh_run("Slice", 7, attrs, 3, &in, 1, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 2);
	assert_i64(&out, 4, (const int64_t[]){ 3, 4, 7, 8 });
	free(out.data);
	/* Without ends the node is invalid. */
	cr_assert_eq(oh_infer("Slice", 9, attrs, 1, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("'ends' is required");
}

Test(ops_shape, slice_every_type_and_int32_bounds)
{
	static const cep_dtype types[] = {
		CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16, CEP_DTYPE_FLOAT64,
		CEP_DTYPE_INT64, CEP_DTYPE_INT32, CEP_DTYPE_INT16, CEP_DTYPE_INT8,
		CEP_DTYPE_UINT64, CEP_DTYPE_UINT32, CEP_DTYPE_UINT16, CEP_DTYPE_UINT8,
		CEP_DTYPE_BOOL,
	};
	unsigned char x[6 * 8], *o;
	int32_t starts[1] = { 1 }, ends[1] = { 6 }, steps[1] = { 2 };
	struct op_tensor in[5], out;
	size_t t, es;
	int i;

	for (i = 0; i < (int)sizeof(x); i++)
		x[i] = (unsigned char)(i * 7 + 1);
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		es = cep_dtype_size(types[t]);
		in[0] = T(types[t], x, 6);
		in[1] = T(CEP_DTYPE_INT32, starts, 1);
		in[2] = T(CEP_DTYPE_INT32, ends, 1);
		in[3] = absent();
		in[4] = T(CEP_DTYPE_INT32, steps, 1);
		cr_assert_eq(oh_run("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s: %s",
			     cep_dtype_name(types[t]), cep_last_error());
		ASSERT_DIMS(&out, 3);
		o = out.data;
		for (i = 0; i < 3; i++)
			cr_assert_eq(memcmp(o + (size_t)i * es, x + (size_t)(1 + 2 * i) * es, es), 0,
				     "%s element %d", cep_dtype_name(types[t]), i);
		free(out.data);
	}
	/* bfloat16 is refused before opset 13, which introduced it. */
	in[0] = T(CEP_DTYPE_BFLOAT16, x, 6);
	cr_assert_eq(oh_run("Slice", 11, NULL, 0, in, 5, &out, 1), CEP_EUNSUPPORTED);
	ASSERT_MSG("Slice: dtype bfloat16 is not supported on the host backend");
}

Test(ops_shape, slice_refuses_bad_bounds)
{
	float x[12] = { 0 };
	int64_t two[2] = { 0, 0 }, three[3] = { 0, 0, 0 }, zero[1] = { 0 }, one[1] = { 1 };
	int64_t same[2] = { 1, -1 }, big[1] = { 2 };
	float fl[1] = { 0 };
	struct op_tensor in[5], out;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 3, 4);
	in[1] = L64(two), in[2] = L64(two), in[3] = L64(three);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("Slice: axes has 3 entries, starts has 2");
	in[1] = L64(one), in[2] = L64(big), in[3] = absent(), in[4] = L64(zero);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 5, &out, 1), CEP_EMODEL);
	ASSERT_MSG("Slice: steps entry 0 is 0");
	in[1] = L64(two), in[2] = L64(two), in[3] = L64(same), in[4] = absent();
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), CEP_EMODEL);
	ASSERT_MSG("appears twice");
	in[1] = L64(one), in[2] = L64(one), in[3] = L64(big);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), CEP_EMODEL);
	ASSERT_MSG("axis 2 is out of range for rank 2");
	in[1] = T(CEP_DTYPE_FLOAT32, fl, 1);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("Slice: starts is float32, not int32 or int64");
	in[1] = T(CEP_DTYPE_INT64, two, 1, 2);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("starts must be 1-D");
}

Test(ops_shape, slice_inference_with_symbols_and_unknown_bounds)
{
	int64_t s1[1] = { 1 }, e1[1] = { 3 }, a1[1] = { 1 };
	int64_t s2[2] = { 0, -1 }, e2[2] = { INT64_MAX, INT64_MIN }, st2[2] = { 1, -1 };
	struct op_tensor in[5], out;

	/* Fixed axis sliced, symbolic axis untouched. */
	in[0] = T(CEP_DTYPE_FLOAT32, NULL, OP_DIM_SYM(0), 8);
	in[1] = L64(s1), in[2] = L64(e1), in[3] = L64(a1);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_SYM(0), 2);
	/* Whole axes forwards and backwards keep their symbols. */
	in[0] = T(CEP_DTYPE_FLOAT32, NULL, OP_DIM_SYM(0), OP_DIM_SYM(1));
	in[1] = L64(s2), in[2] = L64(e2), in[3] = absent(), in[4] = L64(st2);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 5, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_SYM(0), OP_DIM_SYM(1));
	/* A part of a symbolic axis is not known until planning. */
	in[0] = T(CEP_DTYPE_FLOAT32, NULL, 4, OP_DIM_SYM(0));
	in[1] = L64(s1), in[2] = L64(e1), in[3] = L64(a1), in[4] = absent();
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, OP_DIM_UNKNOWN);
	/* Bounds computed at run time: known axes, unknown sizes there. */
	in[0] = T(CEP_DTYPE_FLOAT32, NULL, 4, 5);
	in[1] = T(CEP_DTYPE_INT64, NULL, 1);
	in[2] = T(CEP_DTYPE_INT64, NULL, 1);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, OP_DIM_UNKNOWN);
	/* Unknown axes: every dimension may change. */
	in[3] = T(CEP_DTYPE_INT64, NULL, 1);
	cr_assert_eq(oh_infer("Slice", 13, NULL, 0, in, 4, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_UNKNOWN, OP_DIM_UNKNOWN);
}

/* ------------------------------------------------------------------ Split */

Test(ops_shape, split_sizes_from_input_attribute_and_equal_parts)
{
	float x[2 * 6], want[6];
	int64_t split[3] = { 1, 3, 2 };
	struct op_attr attrs[2] = { attr_i("axis", -1) };
	struct op_tensor in[2], out[3];
	int r, c, k, at;

	iota_f(x, 12);
	in[0] = T(CEP_DTYPE_FLOAT32, x, 2, 6);
	in[1] = L64(split);
	cr_assert_eq(oh_run("Split", 13, attrs, 1, in, 2, out, 3), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], 2, 1);
	ASSERT_DIMS(&out[1], 2, 3);
	ASSERT_DIMS(&out[2], 2, 2);
	for (k = 0, at = 0; k < 3; at += (int)split[k], k++) {
		for (r = 0; r < 2; r++)
			for (c = 0; c < split[k]; c++)
				want[r * split[k] + c] = x[r * 6 + at + c];
		assert_f32(&out[k], 2 * (int)split[k], want);
	}
	outs_free(out, 3);
	/* The same sizes as the attribute of opset 11. */
	attrs[1] = attr_ints("split", 3, split);
	cr_assert_eq(oh_run("Split", 11, attrs, 2, in, 1, out, 3), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[1], 2, 3);
	assert_f32(&out[2], 4, (const float[]){ 4, 5, 10, 11 });
	outs_free(out, 3);
	/* Equal parts along axis 0. */
	cr_assert_eq(oh_run("Split", 13, NULL, 0, in, 1, out, 2), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], 1, 6);
	assert_f32(&out[1], 6, x + 6);
	outs_free(out, 2);
}

Test(ops_shape, split_uneven_parts_from_opset_18)
{
	int32_t x[7] = { 1, 2, 3, 4, 5, 6, 7 };
	struct op_attr attrs[1] = { attr_i("num_outputs", 3) };
	struct op_tensor in = T(CEP_DTYPE_INT32, x, 7), out[4];

	cr_assert_eq(oh_run("Split", 18, attrs, 1, &in, 1, out, 3), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], 3);
	ASSERT_DIMS(&out[1], 3);
	ASSERT_DIMS(&out[2], 1);
	cr_assert_eq(((int32_t *)out[2].data)[0], 7);
	outs_free(out, 3);
	/* Before opset 18 the parts must be equal. */
	cr_assert_eq(oh_infer("Split", 13, NULL, 0, &in, 1, out, 3), CEP_ESHAPE);
	ASSERT_MSG("does not split into 3 equal parts");
	/* 7 in 4 parts of 2 leaves -1 for the last. */
	attrs[0] = attr_i("num_outputs", 4);
	in = T(CEP_DTYPE_INT32, x, 5);
	cr_assert_eq(oh_infer("Split", 18, attrs, 1, &in, 1, out, 4), CEP_ESHAPE);
	attrs[0] = attr_i("num_outputs", 2);
	cr_assert_eq(oh_infer("Split", 18, attrs, 1, &in, 1, out, 3), CEP_EMODEL);
	ASSERT_MSG("num_outputs is 2 but the node has 3 outputs");
}

Test(ops_shape, split_zero_parts_and_errors)
{
	int64_t x[4] = { 9, 8, 7, 6 }, split[3] = { 0, 4, 0 }, bad[2] = { 1, 2 }, neg[2] = { 5, -1 };
	struct op_attr num = attr_i("num_outputs", 2);
	struct op_tensor in[2], out[3];

	in[0] = T(CEP_DTYPE_INT64, x, 4);
	in[1] = L64(split);
	cr_assert_eq(oh_run("Split", 18, NULL, 0, in, 2, out, 3), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], 0);
	ASSERT_DIMS(&out[1], 4);
	ASSERT_DIMS(&out[2], 0);
	assert_i64(&out[1], 4, x);
	outs_free(out, 3);
	in[1] = L64(bad);
	cr_assert_eq(oh_infer("Split", 13, NULL, 0, in, 2, out, 2), CEP_ESHAPE);
	ASSERT_MSG("the parts add up to 3 but the axis has 4");
	cr_assert_eq(oh_infer("Split", 13, NULL, 0, in, 2, out, 3), CEP_EMODEL);
	ASSERT_MSG("split has 2 entries for 3 outputs");
	in[1] = L64(neg);
	cr_assert_eq(oh_infer("Split", 13, NULL, 0, in, 2, out, 2), CEP_ESHAPE);
	ASSERT_MSG("part 1 has size -1");
	in[1] = L64(bad);
	cr_assert_eq(oh_infer("Split", 18, &num, 1, in, 2, out, 2), CEP_EMODEL);
	ASSERT_MSG("both the split input and 'num_outputs'");
	in[0] = scalar(CEP_DTYPE_INT64, x);
	cr_assert_eq(oh_infer("Split", 13, NULL, 0, in, 1, out, 2), CEP_ESHAPE);
}

Test(ops_shape, split_inference_with_symbols)
{
	int64_t split[2] = { 3, 5 };
	struct op_attr axis = attr_i("axis", 1);
	struct op_tensor in[2], out[2];

	in[0] = T(CEP_DTYPE_FLOAT16, NULL, OP_DIM_SYM(0), 8);
	in[1] = L64(split);
	cr_assert_eq(oh_infer("Split", 13, &axis, 1, in, 2, out, 2), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], OP_DIM_SYM(0), 3);
	ASSERT_DIMS(&out[1], OP_DIM_SYM(0), 5);
	cr_assert_eq(out[1].dtype, CEP_DTYPE_FLOAT16);
	/* Equal parts of a symbolic axis are unknown until planning. */
	in[0] = T(CEP_DTYPE_FLOAT16, NULL, 2, OP_DIM_SYM(0));
	cr_assert_eq(oh_infer("Split", 13, &axis, 1, in, 1, out, 2), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[0], 2, OP_DIM_UNKNOWN);
	/* Sizes computed at run time: unknown, but the rest is known. */
	in[1] = T(CEP_DTYPE_INT64, NULL, 2);
	cr_assert_eq(oh_infer("Split", 13, &axis, 1, in, 2, out, 2), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out[1], 2, OP_DIM_UNKNOWN);
}

/* --------------------------------------------------------- GatherElements */

Test(ops_shape, gather_elements_along_each_axis)
{
	float x[3 * 3] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	int64_t i0[2 * 3] = { 1, 2, 0, 2, 0, 0 };
	int32_t i1[3 * 2] = { 0, -1, 2, 1, -3, 0 };
	struct op_attr axis = attr_i("axis", 1);
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 3, 3);
	in[1] = T(CEP_DTYPE_INT64, i0, 2, 3);
	cr_assert_eq(oh_run("GatherElements", 13, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 2, 3);
	assert_f32(&out, 6, (const float[]){ 4, 8, 3, 7, 2, 3 });
	free(out.data);
	/* Axis 1 with int32 indices, negative ones among them; the indices
	 * have fewer columns than data. */
	in[1] = T(CEP_DTYPE_INT32, i1, 3, 2);
	cr_assert_eq(oh_run("GatherElements", 11, &axis, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 3, 2);
	assert_f32(&out, 6, (const float[]){ 1, 3, 6, 5, 7, 7 });
	free(out.data);
}

Test(ops_shape, gather_elements_checks_indices)
{
	uint8_t x[2 * 3] = { 0 };
	int64_t bad[2 * 1] = { 0, 3 }, ok[4 * 1] = { 0, 0, 0, 0 };
	struct op_attr axis = attr_i("axis", -1);
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_UINT8, x, 2, 3);
	in[1] = T(CEP_DTYPE_INT64, bad, 2, 1);
	cr_assert_eq(oh_run("GatherElements", 13, &axis, 1, in, 2, &out, 1), CEP_EINVAL);
	ASSERT_MSG("GatherElements: index 3 is out of range for axis 1 of size 3");
	in[1] = T(CEP_DTYPE_INT64, ok, 4, 1);
	cr_assert_eq(oh_infer("GatherElements", 13, &axis, 1, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("indices have 4 in dimension 0, data only 2");
	in[1] = T(CEP_DTYPE_INT64, ok, 4);
	cr_assert_eq(oh_infer("GatherElements", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("indices have rank 1, data rank 2");
	in[1] = T(CEP_DTYPE_FLOAT32, ok, 2, 1);
	cr_assert_eq(oh_infer("GatherElements", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	/* Empty indices give an empty output. */
	in[1] = T(CEP_DTYPE_INT64, ok, 2, 0);
	cr_assert_eq(oh_run("GatherElements", 13, &axis, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 2, 0);
	free(out.data);
}

/* ----------------------------------------------------------------- Expand */

Test(ops_shape, expand_broadcasts_both_ways)
{
	float x[3] = { 1, 2, 3 }, want[2 * 3 * 4];
	int64_t shape[3] = { 2, 1, 4 }, small[1] = { 1 }, bad[2] = { 2, 2 };
	struct op_tensor in[2], out;
	int i, j, k;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 3, 1);
	in[1] = L64(shape);
	cr_assert_eq(oh_run("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 3, 4);
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = x[j];
	assert_f32(&out, 24, want);
	free(out.data);
	/* A shape smaller than the input leaves it as it is. */
	in[1] = L64(small);
	cr_assert_eq(oh_run("Expand", 8, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 3, 1);
	assert_f32(&out, 3, x);
	free(out.data);
	in[1] = L64(bad);
	cr_assert_eq(oh_infer("Expand", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("Expand: shapes [3,1] and [2,2] do not broadcast");
}

Test(ops_shape, expand_of_a_scalar_and_of_bools)
{
	uint8_t b[2] = { 1, 0 };
	uint16_t h = cpu_f32_to_f16(2.5f);
	int64_t shape[2] = { 3, 2 }, empty[2] = { 0, 2 };
	struct op_tensor in[2], out;
	int i;

	in[0] = scalar(CEP_DTYPE_FLOAT16, &h);
	in[1] = L64(shape);
	cr_assert_eq(oh_run("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 3, 2);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint16_t *)out.data)[i], h);
	free(out.data);
	in[0] = T(CEP_DTYPE_BOOL, b, 2);
	cr_assert_eq(oh_run("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	for (i = 0; i < 6; i++)
		cr_assert_eq(((uint8_t *)out.data)[i], b[i % 2]);
	free(out.data);
	in[1] = L64(empty);
	cr_assert_eq(oh_run("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 0, 2);
	free(out.data);
}

Test(ops_shape, expand_inference_with_symbols_and_unknown_shape)
{
	int64_t shape[3] = { 4, 1, 5 }, neg[1] = { -2 };
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, NULL, OP_DIM_SYM(0), 1);
	in[1] = L64(shape);
	cr_assert_eq(oh_infer("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, OP_DIM_SYM(0), 5);
	/* Unknown values of a known length: a dimension other than 1 stays. */
	in[0] = T(CEP_DTYPE_FLOAT32, NULL, 7, 1);
	in[1] = T(CEP_DTYPE_INT64, NULL, 3);
	cr_assert_eq(oh_infer("Expand", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_UNKNOWN, 7, OP_DIM_UNKNOWN);
	in[1] = L64(neg);
	cr_assert_eq(oh_infer("Expand", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("shape entry 0 is -2");
	in[1] = T(CEP_DTYPE_INT32, NULL, 3);
	cr_assert_eq(oh_infer("Expand", 13, NULL, 0, in, 2, &out, 1), CEP_EDTYPE);
	ASSERT_MSG("Expand: shape is int32, not int64");
}

/* ------------------------------------------------------------------- Tile */

Test(ops_shape, tile_repeats_every_axis)
{
	int8_t x[2 * 3] = { 1, 2, 3, 4, 5, 6 };
	int64_t reps[2] = { 2, 3 }, none[2] = { 1, 0 };
	struct op_tensor in[2], out;
	int i, j;

	in[0] = T(CEP_DTYPE_INT8, x, 2, 3);
	in[1] = L64(reps);
	cr_assert_eq(oh_run("Tile", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4, 9);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 9; j++)
			cr_assert_eq(((int8_t *)out.data)[i * 9 + j], x[(i % 2) * 3 + j % 3],
				     "element %d,%d", i, j);
	free(out.data);
	in[1] = L64(none);
	cr_assert_eq(oh_run("Tile", 7, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2, 0);
	free(out.data);
}

Test(ops_shape, tile_inference_and_errors)
{
	int64_t reps[2] = { 1, 3 }, one[1] = { 2 }, neg[2] = { 1, -1 };
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, NULL, OP_DIM_SYM(0), 4);
	in[1] = L64(reps);
	cr_assert_eq(oh_infer("Tile", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_SYM(0), 12);
	in[1] = T(CEP_DTYPE_INT64, NULL, 2);
	cr_assert_eq(oh_infer("Tile", 13, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, OP_DIM_UNKNOWN, OP_DIM_UNKNOWN);
	in[1] = L64(one);
	cr_assert_eq(oh_infer("Tile", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("Tile: repeats has 1 entries for an input of rank 2");
	in[1] = L64(neg);
	cr_assert_eq(oh_infer("Tile", 13, NULL, 0, in, 2, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("repeats entry 1 is -1");
}

/* -------------------------------------------------------- ConstantOfShape */

Test(ops_shape, constant_of_shape_fills)
{
	int64_t shape[2] = { 2, 3 }, seven = 7, none[1] = { 0 };
	struct op_tensor value = scalar(CEP_DTYPE_INT64, &seven);
	struct op_attr attr = attr_t("value", &value);
	struct op_tensor in, out;
	int i;

	in = L64(shape);
	cr_assert_eq(oh_run("ConstantOfShape", 9, NULL, 0, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
	ASSERT_DIMS(&out, 2, 3);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((float *)out.data)[i], 0.0f);
	free(out.data);
	cr_assert_eq(oh_run("ConstantOfShape", 20, &attr, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	for (i = 0; i < 6; i++)
		cr_assert_eq(((int64_t *)out.data)[i], 7);
	free(out.data);
	/* An empty shape makes a scalar; a 0 in it an empty tensor. */
	in = T(CEP_DTYPE_INT64, shape, 0);
	cr_assert_eq(oh_run("ConstantOfShape", 9, &attr, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((int64_t *)out.data)[0], 7);
	free(out.data);
	in = L64(none);
	cr_assert_eq(oh_run("ConstantOfShape", 9, &attr, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	ASSERT_DIMS(&out, 0);
	free(out.data);
}

Test(ops_shape, constant_of_shape_inference_and_errors)
{
	int64_t two[2] = { 1, 2 }, neg[2] = { 2, -1 };
	double d = 0.1; /* not a float32 value */
	struct op_tensor v2 = T(CEP_DTYPE_INT64, two, 2), vd = scalar(CEP_DTYPE_FLOAT64, &d);
	struct op_attr attr;
	struct op_tensor in, out;

	in = T(CEP_DTYPE_INT64, NULL, 3);
	cr_assert_eq(oh_infer("ConstantOfShape", 9, NULL, 0, &in, 1, &out, 1), 0);
	ASSERT_DIMS(&out, OP_DIM_UNKNOWN, OP_DIM_UNKNOWN, OP_DIM_UNKNOWN);
	in = T(CEP_DTYPE_INT64, NULL, OP_DIM_SYM(0));
	cr_assert_eq(oh_infer("ConstantOfShape", 9, NULL, 0, &in, 1, &out, 1), 0);
	cr_assert_eq(out.rank, -1);
	in = L64(neg);
	cr_assert_eq(oh_infer("ConstantOfShape", 9, NULL, 0, &in, 1, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("shape entry 1 is -1");
	in = L64(two);
	attr = attr_t("value", &v2);
	cr_assert_eq(oh_infer("ConstantOfShape", 9, &attr, 1, &in, 1, &out, 1), CEP_EMODEL);
	ASSERT_MSG("one element");
	attr = attr_t("value", &vd);
	cr_assert_eq(oh_run("ConstantOfShape", 9, &attr, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT64);
	ASSERT_DIMS(&out, 1, 2);
	cr_assert(((const double *)out.data)[0] == d && ((const double *)out.data)[1] == d);
	free(out.data);
	in = T(CEP_DTYPE_INT32, two, 2);
	cr_assert_eq(oh_infer("ConstantOfShape", 9, NULL, 0, &in, 1, &out, 1), CEP_EDTYPE);
}

/* ------------------------------------------------------------------ Range */

Test(ops_shape, range_counts_and_values)
{
	int32_t s = 10, l = 4, d = -3;
	int64_t s64 = INT64_MIN, l64 = INT64_MAX, d64 = INT64_C(1) << 62;
	float fs = 1.0f, fl = 2.0f, fd = 0.25f;
	struct op_tensor in[3], out;

	in[0] = scalar(CEP_DTYPE_INT32, &s);
	in[1] = scalar(CEP_DTYPE_INT32, &l);
	in[2] = scalar(CEP_DTYPE_INT32, &d);
	cr_assert_eq(oh_run("Range", 11, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 2);
	cr_assert_eq(((int32_t *)out.data)[0], 10);
	cr_assert_eq(((int32_t *)out.data)[1], 7);
	free(out.data);
	/* The full int64 span cannot overflow the count. */
	in[0] = scalar(CEP_DTYPE_INT64, &s64);
	in[1] = scalar(CEP_DTYPE_INT64, &l64);
	in[2] = scalar(CEP_DTYPE_INT64, &d64);
	cr_assert_eq(oh_run("Range", 11, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4);
	assert_i64(&out, 4, (const int64_t[]){ INT64_MIN, -(INT64_C(1) << 62), 0,
					       INT64_C(1) << 62 });
	free(out.data);
	in[0] = scalar(CEP_DTYPE_FLOAT32, &fs);
	in[1] = scalar(CEP_DTYPE_FLOAT32, &fl);
	in[2] = scalar(CEP_DTYPE_FLOAT32, &fd);
	cr_assert_eq(oh_run("Range", 11, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 4);
	assert_f32(&out, 4, (const float[]){ 1.0f, 1.25f, 1.5f, 1.75f });
	free(out.data);
	/* Empty when the limit lies behind. */
	fd = -1.0f;
	cr_assert_eq(oh_run("Range", 11, NULL, 0, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 0);
	free(out.data);
}

Test(ops_shape, range_half_types_from_opset_27)
{
	uint16_t s = cpu_f32_to_bf16(0.5f), l = cpu_f32_to_bf16(3.0f), d = cpu_f32_to_bf16(1.0f);
	struct op_attr stash = attr_i("stash_type", 11);
	struct op_tensor in[3], out;

	in[0] = scalar(CEP_DTYPE_BFLOAT16, &s);
	in[1] = scalar(CEP_DTYPE_BFLOAT16, &l);
	in[2] = scalar(CEP_DTYPE_BFLOAT16, &d);
	cr_assert_eq(oh_run("Range", 27, &stash, 1, in, 3, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 3);
	cr_assert_eq(cpu_bf16_to_f32(((uint16_t *)out.data)[2]), 2.5f);
	free(out.data);
	cr_assert_eq(oh_run("Range", 26, NULL, 0, in, 3, &out, 1), CEP_EUNSUPPORTED);
	ASSERT_MSG("Range: dtype bfloat16 is not supported on the host backend");
	stash = attr_i("stash_type", 10);
	cr_assert_eq(oh_infer("Range", 27, &stash, 1, in, 3, &out, 1), CEP_EMODEL);
	ASSERT_MSG("stash_type 10");
}

Test(ops_shape, range_refuses_bad_inputs)
{
	int64_t zero = 0, one = 1, two[2] = { 1, 2 }, huge = INT64_C(1) << 50;
	int32_t i32 = 1;
	float nan = NAN, f0 = 0.0f, f1 = 1.0f;
	struct op_tensor in[3], out;

	in[0] = scalar(CEP_DTYPE_INT64, &zero);
	in[1] = scalar(CEP_DTYPE_INT64, &one);
	in[2] = scalar(CEP_DTYPE_INT64, &zero);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), CEP_EINVAL);
	ASSERT_MSG("Range: delta is 0");
	in[1] = scalar(CEP_DTYPE_INT64, &huge);
	in[2] = scalar(CEP_DTYPE_INT64, &one);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), CEP_ELIMIT);
	in[1] = L64(two);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), CEP_ESHAPE);
	ASSERT_MSG("limit must be a scalar");
	in[1] = scalar(CEP_DTYPE_INT32, &i32);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), CEP_EDTYPE);
	in[0] = scalar(CEP_DTYPE_FLOAT32, &f0);
	in[1] = scalar(CEP_DTYPE_FLOAT32, &nan);
	in[2] = scalar(CEP_DTYPE_FLOAT32, &f1);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), CEP_EINVAL);
	/* Values unknown: a 1-D output of unknown length. */
	in[1] = scalar(CEP_DTYPE_FLOAT32, NULL);
	cr_assert_eq(oh_infer("Range", 11, NULL, 0, in, 3, &out, 1), 0);
	ASSERT_DIMS(&out, OP_DIM_UNKNOWN);
}

/* --------------------------------------------------------------- CastLike */

Test(ops_shape, castlike_takes_the_type_of_its_second_input)
{
	float x[4] = { -2.7f, 0.0f, 3.9f, 300.0f };
	struct op_tensor in[2], out;

	in[0] = T(CEP_DTYPE_FLOAT32, x, 2, 2);
	in[1] = T(CEP_DTYPE_INT32, NULL, 7);
	cr_assert_eq(oh_run("CastLike", 15, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT32);
	ASSERT_DIMS(&out, 2, 2);
	cr_assert_eq(((int32_t *)out.data)[0], -2);
	cr_assert_eq(((int32_t *)out.data)[3], 300);
	free(out.data);
	in[1] = scalar(CEP_DTYPE_BOOL, NULL);
	cr_assert_eq(oh_run("CastLike", 21, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	cr_assert_eq(((uint8_t *)out.data)[1], 0);
	free(out.data);
	in[1] = scalar(CEP_DTYPE_FLOAT16, NULL);
	cr_assert_eq(oh_run("CastLike", 19, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_f16_to_f32(((uint16_t *)out.data)[2]), cpu_f16_to_f32(cpu_f32_to_f16(3.9f)));
	free(out.data);
	in[1] = scalar(CEP_DTYPE_FLOAT64, NULL);
	cr_assert_eq(oh_run("CastLike", 15, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT64);
	cr_assert_eq(((const double *)out.data)[0], (double)-2.7f);
	cr_assert_eq(((const double *)out.data)[2], (double)3.9f);
	free(out.data);
	cr_assert_eq(oh_run("CastLike", 14, NULL, 0, in, 2, &out, 1), CEP_EUNSUPPORTED);
	ASSERT_MSG("opset 14 is not supported");
}

/* --------------------------------------------------------- Flatten, Size */

Test(ops_shape, flatten_and_size)
{
	int64_t x[2 * 3 * 4];
	struct op_attr axis = attr_i("axis", -1);
	struct op_tensor in = T(CEP_DTYPE_INT64, x, 2, 3, 4), out;
	int i;

	for (i = 0; i < 24; i++)
		x[i] = i;
	cr_assert_eq(oh_run("Flatten", 13, &axis, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 6, 4);
	assert_i64(&out, 24, x);
	free(out.data);
	axis = attr_i("axis", 0);
	cr_assert_eq(oh_run("Flatten", 9, &axis, 1, &in, 1, &out, 1), 0, "%s", cep_last_error());
	ASSERT_DIMS(&out, 1, 24);
	free(out.data);
	cr_assert_eq(oh_run("Size", 13, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT64);
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((int64_t *)out.data)[0], 24);
	free(out.data);
	in = T(CEP_DTYPE_FLOAT32, NULL, OP_DIM_SYM(0), 3, 4);
	axis = attr_i("axis", 1);
	cr_assert_eq(oh_infer("Flatten", 13, &axis, 1, &in, 1, &out, 1), 0);
	ASSERT_DIMS(&out, OP_DIM_SYM(0), 12);
}
