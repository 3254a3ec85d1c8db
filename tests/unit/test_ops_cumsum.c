/*
 * test_ops_cumsum.c — CumSum and CumProd of kernels/cpu/cumsum.c, called
 * the way the engine calls them (schema inference, then the host kernel
 * through exec_host_eval): the specification's examples, every axis of a
 * 3-D input (negative ones, int32 and int64) with each of exclusive and
 * reverse against a reference written here from the definition, every
 * type each opset takes, integer wrapping, half types rounded once, the
 * errors (an axis out of range known at load or only at run time, a
 * non-scalar axis, a scalar input), inference with symbols, and a model
 * whose axis is fed at run time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

static struct op_tensor scalar64(int64_t *v)
{
	return oh_tensor(CEP_DTYPE_INT64, 0, NULL, v);
}

/* Runs op (opset, exclusive, reverse) over x and the axis tensor; out gets
 * the result (free() its data). */
static int scan(const char *op, int opset, int excl, int rev, struct op_tensor x,
		struct op_tensor axis, struct op_tensor *out)
{
	struct op_attr a[2] = { oh_int("exclusive", excl), oh_int("reverse", rev) };
	struct op_tensor in[2] = { x, axis };

	return oh_run(op, opset, a, 2, in, 2, out, 1);
}

/* --------------------------------------------------- the specification */

/* The examples of the specification's text, for both operators. */
Test(ops_cumsum, the_specification_examples)
{
	static const float want_sum[4][3] = {
		{ 1, 3, 6 }, { 0, 1, 3 }, { 6, 5, 3 }, { 5, 3, 0 },
	};
	static const float want_prod[4][3] = {
		{ 1, 2, 6 }, { 1, 1, 2 }, { 6, 6, 3 }, { 6, 3, 1 },
	};
	/* (exclusive, reverse) in the order of the examples. */
	static const int modes[4][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } };
	float x[3] = { 1, 2, 3 };
	int64_t axis = 0;
	struct op_tensor out;
	int m, i, p;

	for (p = 0; p < 2; p++) {
		for (m = 0; m < 4; m++) {
			cr_assert_eq(scan(p ? "CumProd" : "CumSum", p ? 26 : 14, modes[m][0],
					  modes[m][1], oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), x),
					  scalar64(&axis), &out), 0, "%s", cep_last_error());
			for (i = 0; i < 3; i++)
				cr_assert_eq(((float *)out.data)[i],
					     p ? want_prod[m][i] : want_sum[m][i],
					     "%s mode %d element %d", p ? "CumProd" : "CumSum", m, i);
			free(out.data);
		}
	}
}

/* ----------------------------------------------------------- reference */

/* The definition: element (c) of the result folds the elements of its
 * column at positions before it (exclusive) or up to it, counted from the
 * end when reversed. x holds small integers, exact in every type. */
static double ref_at(const double *x, const int64_t *dims, int rank, int axis, int64_t e,
		     bool prod, bool excl, bool rev)
{
	int64_t stride = 1, m, p, n = dims[axis];
	double acc = prod ? 1.0 : 0.0;
	int d;

	for (d = rank - 1; d > axis; d--)
		stride *= dims[d];
	m = (e / stride) % n;
	for (p = 0; p < n; p++) {
		bool in = rev ? (excl ? p > m : p >= m) : (excl ? p < m : p <= m);
		double v = x[e + (p - m) * stride];

		if (in)
			acc = prod ? acc * v : acc + v;
	}
	return acc;
}

/* Every axis of a [2, 3, 4] input, negative ones too, through an int32 and
 * an int64 axis, each mode, every type of the newest opsets. */
Test(ops_cumsum, every_axis_mode_and_type_matches_the_definition)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16, CEP_DTYPE_INT32, CEP_DTYPE_INT64 };
	const int64_t dims[3] = { 2, 3, 4 };
	double xd[24];
	unsigned char xbuf[24 * 8];
	int64_t axis64;
	int32_t axis32;
	struct op_tensor out;
	int t, a, mode, p, wide, e, checked = 0;

	for (e = 0; e < 24; e++)
		xd[e] = (double)((e * 5) % 7 - 3) / (e % 3 == 0 ? 1 : 2) + (e % 2);
	for (t = 0; t < 5; t++) {
		bool ints = !cpu_is_float(types[t]);

		for (e = 0; e < 24; e++) {
			if (ints)
				xd[e] = (double)((e * 5) % 7 - 3);
			cpu_store_f(xbuf, types[t], e, (float)xd[e]);
		}
		for (p = 0; p < 2; p++) {
			for (a = -3; a < 3; a++) {
				for (mode = 0; mode < 4; mode++) {
					for (wide = 0; wide < 2; wide++) {
						struct op_tensor ax = wide ? scalar64(&axis64)
							: oh_tensor(CEP_DTYPE_INT32, 0, NULL, &axis32);
						int norm = a < 0 ? a + 3 : a;

						axis64 = a;
						axis32 = a;
						cr_assert_eq(scan(p ? "CumProd" : "CumSum", p ? 26 : 14,
								  mode & 1, mode >> 1,
								  oh_tensor(types[t], 3, dims, xbuf), ax,
								  &out), 0, "%s", cep_last_error());
						cr_assert_eq(out.dtype, types[t]);
						cr_assert_eq(out.rank, 3);
						for (e = 0; e < 24; e++) {
							double want = ref_at(xd, dims, 3, norm, e, p,
									     mode & 1, mode >> 1);
							unsigned char w[8] = { 0 };

							/* Exact in double, rounded once to the type. */
							cpu_store_f(w, types[t], 0, (float)want);
							cr_assert_eq(cpu_load_f(out.data, types[t], e),
								     cpu_load_f(w, types[t], 0),
								     "%s %s axis %d mode %d element %d: %g, want %g",
								     p ? "CumProd" : "CumSum",
								     cep_dtype_name(types[t]), a, mode, e,
								     (double)cpu_load_f(out.data, types[t], e),
								     want);
						}
						free(out.data);
						checked++;
					}
				}
			}
		}
	}
	cr_assert_eq(checked, 5 * 2 * 6 * 4 * 2);
}

/* A long column through the middle axis: the column walk strides. */
Test(ops_cumsum, columns_across_the_inner_axis)
{
	float x[3 * 50 * 2], *y;
	int64_t axis = 1;
	struct op_tensor out;
	int o, k, j;

	for (o = 0; o < 300; o++)
		x[o] = (float)(o % 5);
	cr_assert_eq(scan("CumSum", 14, 0, 1, oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(3, 50, 2), x),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	y = out.data;
	for (o = 0; o < 3; o++) {
		for (j = 0; j < 2; j++) {
			float acc = 0;

			for (k = 49; k >= 0; k--) {
				acc += x[(o * 50 + k) * 2 + j];
				cr_assert_eq(y[(o * 50 + k) * 2 + j], acc);
			}
		}
	}
	free(out.data);
}

/* ------------------------------------------------------------------ types */

Test(ops_cumsum, types_follow_the_opset)
{
	uint16_t h[2] = { 0x3c00, 0x3c00 };
	int8_t b[2] = { 1, 2 };
	int64_t axis = 0;
	struct op_tensor out;

	/* float16 joined CumSum at 14. */
	cr_assert_eq(scan("CumSum", 13, 0, 0, oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(2), h),
			  scalar64(&axis), &out), CEP_EUNSUPPORTED);
	cr_assert(strstr(cep_last_error(), "CumSum: dtype float16 is not supported") != NULL,
		  "%s", cep_last_error());
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(2), h),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[1], 0x4000); /* 2.0 */
	free(out.data);
	/* int8 is in no opset's list. */
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), b),
			  scalar64(&axis), &out), CEP_EUNSUPPORTED);
	cr_assert_eq(scan("CumProd", 26, 0, 0, oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), b),
			  scalar64(&axis), &out), CEP_EUNSUPPORTED);
	/* CumSum before 11 and CumProd before 26 do not exist. */
	cr_assert_eq(scan("CumSum", 10, 0, 0, oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), b),
			  scalar64(&axis), &out), CEP_EUNSUPPORTED);
	cr_assert_eq(scan("CumProd", 25, 0, 0, oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), b),
			  scalar64(&axis), &out), CEP_EUNSUPPORTED);
}

/* Integers wrap at their width, as accumulating at that width would. */
Test(ops_cumsum, integers_wrap)
{
	int32_t x32[3] = { INT32_MAX, 1, 5 }, p32[3] = { 65536, 65536, 3 };
	int64_t x64[2] = { INT64_MAX, 2 }, axis = -1;
	struct op_tensor out;

	cr_assert_eq(scan("CumSum", 11, 0, 0, oh_tensor(CEP_DTYPE_INT32, 1, DIMS(3), x32),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[1], INT32_MIN);
	cr_assert_eq(((int32_t *)out.data)[2], INT32_MIN + 5);
	free(out.data);
	cr_assert_eq(scan("CumProd", 26, 0, 0, oh_tensor(CEP_DTYPE_INT32, 1, DIMS(3), p32),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[1], 0); /* 2^32 */
	cr_assert_eq(((int32_t *)out.data)[2], 0);
	free(out.data);
	cr_assert_eq(scan("CumSum", 11, 0, 0, oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), x64),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((int64_t *)out.data)[1], INT64_MIN + 1);
	free(out.data);
}

/* Half types sum in double and round once per element, so a running sum
 * of 0.1s does not drift the way a float16 accumulator would. */
Test(ops_cumsum, half_types_round_once)
{
	uint16_t h[64];
	int64_t axis = 0;
	struct op_tensor out;
	double exact = 0.0;
	int i;

	for (i = 0; i < 64; i++)
		h[i] = cpu_f32_to_f16(0.1f);
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT16, 1, DIMS(64), h),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	for (i = 0; i < 64; i++) {
		exact += cpu_f16_to_f32(cpu_f32_to_f16(0.1f));
		cr_assert_eq(((uint16_t *)out.data)[i], cpu_f32_to_f16((float)exact), "element %d", i);
	}
	free(out.data);
}

/* Empty inputs give empty outputs; NaN and infinities carry on. */
Test(ops_cumsum, empty_inputs_and_specials)
{
	float x[4] = { 1, NAN, 2, INFINITY }, e[1];
	int64_t axis = 0;
	struct op_tensor out;

	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(0, 3), e),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), x),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 1.0f);
	cr_assert(isnan(((float *)out.data)[1]) && isnan(((float *)out.data)[3]));
	free(out.data);
	x[1] = 3;
	cr_assert_eq(scan("CumProd", 26, 1, 1, oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), x),
			  scalar64(&axis), &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[3], 1.0f);
	cr_assert_eq(((float *)out.data)[0], INFINITY);
	free(out.data);
}

/* ----------------------------------------------------------------- errors */

Test(ops_cumsum, bad_axes_and_shapes_are_refused_with_a_message)
{
	float x[6] = { 0 };
	int64_t axis = 2, two[2] = { 0, 1 };
	float faxis = 0;
	struct op_tensor out;

	/* Known at load time: the model is wrong. */
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  scalar64(&axis), &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "CumSum: axis 2 is out of range for rank 2");
	axis = -3;
	cr_assert_eq(scan("CumProd", 26, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  scalar64(&axis), &out), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "CumProd: axis -3 is out of range for rank 2");
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  oh_tensor(CEP_DTYPE_INT64, 1, DIMS(2), two), &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "CumSum: axis must be a scalar, it has 2 elements in rank 1");
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &faxis), &out), CEP_EDTYPE);
	cr_assert_str_eq(cep_last_error(), "CumSum: axis is float32, not int32 or int64");
	axis = 0;
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, x),
			  scalar64(&axis), &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "CumSum: the input is a scalar, it has no axis");
	/* A one-element 1-D axis is taken like a scalar. */
	cr_assert_eq(scan("CumSum", 14, 0, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  oh_tensor(CEP_DTYPE_INT64, 1, DIMS(1), two), &out), 0, "%s",
		     cep_last_error());
	free(out.data);
	cr_assert_eq(scan("CumSum", 14, 2, 0, oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
			  scalar64(&axis), &out), 0, "exclusive is a flag: any non-zero value");
	free(out.data);
}

/* An axis known only when the kernel runs is checked there. */
Test(ops_cumsum, the_kernel_checks_the_axis_it_reads)
{
	const struct op_node node = { "t", "CumSum", "", 14, 0, NULL };
	float x[6] = { 0 };
	int64_t axis = 5;
	struct op_tensor in[2] = { oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x),
				   scalar64(&axis) };
	struct op_tensor out = in[0];
	const struct op_schema *s;
	const struct op_kernel *k;

	cr_assert_eq(op_schema_find("", "CumSum", 14, &s), 0);
	cr_assert_eq(op_kernel_find(s, 14, BACKEND_HOST, CEP_DTYPE_FLOAT32, &k), 0);
	cr_assert_eq(exec_host_eval(&node, k, in, 2, &out, 1), CEP_EINVAL);
	cr_assert_str_eq(cep_last_error(), "CumSum: axis 5 is out of range for rank 2");
}

Test(ops_cumsum, inference_keeps_symbols)
{
	struct op_tensor in[2] = {
		oh_tensor(CEP_DTYPE_BFLOAT16, 3, DIMS(OP_DIM_SYM(0), 4, OP_DIM_SYM(1)), NULL),
		oh_tensor(CEP_DTYPE_INT32, 0, NULL, NULL),
	}, out;

	cr_assert_eq(oh_infer("CumSum", 14, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BFLOAT16);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[0], OP_DIM_SYM(0));
	cr_assert_eq(out.dims[1], 4);
	cr_assert_eq(out.dims[2], OP_DIM_SYM(1));
	in[0].rank = -1;
	cr_assert_eq(oh_infer("CumProd", 26, NULL, 0, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, -1);
}

/* ----------------------------------------------------------------- engine */

/* The axis a graph input, fed at run time: one plan serves every axis. */
Test(ops_cumsum, engine_runs_an_axis_fed_at_run_time)
{
	struct onnxb *b = onnxb_new(14);
	int64_t dims[2] = { 2, 3 }, axis = 0;
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6];
	struct engine_input in[2] = { { "x", CEP_DTYPE_FLOAT32, 2, dims, x, sizeof(x) },
				      { "axis", CEP_DTYPE_INT64, 0, NULL, &axis, sizeof(axis) } };
	struct engine_output out = { .name = "y", .data = y, .capacity = sizeof(y) };
	Onnx__NodeProto *n;
	struct backend *be;
	engine_model *m;
	engine_session *s = NULL;
	size_t len;
	uint8_t *buf;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3");
	onnxb_input(b, "axis", CEP_DTYPE_INT64, "");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "2,3");
	n = onnxb_node(b, "CumSum", "x,axis", "y");
	onnxb_attr_int(n, "exclusive", 1);
	buf = onnxb_finish(b, &len);
	cr_assert_eq(engine_model_load(buf, len, -1, &m), 0, "%s", cep_last_error());
	free(buf);
	cr_assert_eq(backend_host_new(0, &be), 0);
	cr_assert_eq(engine_session_new(m, be, NULL, &s), 0, "%s", cep_last_error());
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 0.0f);
	cr_assert_eq(y[3], 1.0f);
	cr_assert_eq(y[5], 3.0f);
	axis = 1;
	cr_assert_eq(eu_run(s, in, 2, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(y[0], 0.0f);
	cr_assert_eq(y[2], 3.0f);
	cr_assert_eq(y[5], 9.0f);
	axis = 2;
	cr_assert_neq(eu_run(s, in, 2, &out, 1), 0);
	cr_assert(strstr(cep_last_error(), "CumSum: axis 2 is out of range for rank 2") != NULL,
		  "%s", cep_last_error());
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
}
