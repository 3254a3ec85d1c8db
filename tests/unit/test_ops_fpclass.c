/*
 * test_ops_fpclass.c — IsInf and IsNaN of kernels/cpu/fpclass.c, called as
 * the engine calls them (schema inference, then the host kernel through
 * exec_host_eval): every combination of detect_positive and
 * detect_negative over infinities, NaN, the largest finite values and
 * zeros of float32, float16 and bfloat16 (their own bit patterns, quiet
 * and signalling NaN among them), the type sets of each opset and the
 * refusals by their messages. Then through the engine in fp16 and bf16
 * sessions: IsInf stays float32, so finite values past the half range do
 * not turn into infinities, while IsNaN computes in half.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "kernels/cpu/cpu.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"
#include "tests/unit/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int run(const char *op, int opset, const struct op_attr *attrs, int n_attrs,
	       const struct op_tensor *in, struct op_tensor *out)
{
	cep__clear_error();
	return oh_run(op, opset, attrs, n_attrs, in, 1, out, 1);
}

static void assert_refused(int ret, int err, const char *msg)
{
	cr_assert_eq(ret, err, "got %s (%s), expected %s", cep_err_name(ret), cep_last_error(),
		     cep_err_name(err));
	cr_assert_str_eq(cep_last_error(), msg);
}

/* The classes of the test values, in order. */
enum { V_POS_INF, V_NEG_INF, V_QNAN, V_SNAN, V_NEG_NAN, V_MAX, V_LOWEST, V_ZERO, V_NEG_ZERO,
       V_ONE, V_N };

/* The test values as bit patterns of each float type. */
static const uint32_t f32_bits[V_N] = { 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
					0xffc00000u, 0x7f7fffffu, 0xff7fffffu, 0x0u,
					0x80000000u, 0x3f800000u };
static const uint16_t f16_bits[V_N] = { 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x7bff,
					0xfbff, 0x0, 0x8000, 0x3c00 };
static const uint16_t bf16_bits[V_N] = { 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc0, 0x7f7f,
					 0xff7f, 0x0, 0x8000, 0x3f80 };

/* A tensor of the test values of float type t (data in buf). */
static struct op_tensor values(cep_dtype t, void *buf)
{
	static const int64_t n = V_N;

	if (t == CEP_DTYPE_FLOAT32)
		memcpy(buf, f32_bits, sizeof(f32_bits));
	else
		memcpy(buf, t == CEP_DTYPE_FLOAT16 ? f16_bits : bf16_bits, sizeof(f16_bits));
	return oh_tensor(t, 1, &n, buf);
}

Test(ops_fpclass, isinf_for_every_sign_choice_and_type)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	uint32_t buf[V_N];
	struct op_attr a[2];
	struct op_tensor in, out;
	size_t t;
	int pos, neg, i;

	for (t = 0; t < N_OF(types); t++) {
		for (pos = 0; pos <= 1; pos++) {
			for (neg = 0; neg <= 1; neg++) {
				a[0] = oh_int("detect_positive", pos);
				a[1] = oh_int("detect_negative", neg);
				in = values(types[t], buf);
				cr_assert_eq(run("IsInf", 20, a, 2, &in, &out), 0, "%s",
					     cep_last_error());
				cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
				cr_assert_eq(out.rank, 1);
				cr_assert_eq(out.dims[0], V_N);
				for (i = 0; i < V_N; i++) {
					int want = (i == V_POS_INF && pos) || (i == V_NEG_INF && neg);

					cr_assert_eq(((uint8_t *)out.data)[i], want,
						     "%s value %d, detect_positive %d, "
						     "detect_negative %d", cep_dtype_name(types[t]), i,
						     pos, neg);
				}
				free(out.data);
			}
		}
	}
}

Test(ops_fpclass, isinf_defaults_and_the_spec_cases)
{
	/* test_isinf: [-1.2, nan, inf, 2.8, -inf, inf]; _positive and
	 * _negative turn one sign off. */
	float x[6] = { -1.2f, NAN, INFINITY, 2.8f, -INFINITY, INFINITY };
	const uint8_t both[6] = { 0, 0, 1, 0, 1, 1 }, pos[6] = { 0, 0, 1, 0, 0, 1 };
	const uint8_t neg[6] = { 0, 0, 0, 0, 1, 0 };
	int64_t d6[1] = { 6 };
	struct op_attr no_neg = oh_int("detect_negative", 0), no_pos = oh_int("detect_positive", 0);
	struct op_attr seven = oh_int("detect_positive", 7);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 1, d6, x), out;

	cr_assert_eq(run("IsInf", 10, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, both, 6);
	free(out.data);
	cr_assert_eq(run("IsInf", 10, &no_neg, 1, &in, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, pos, 6);
	free(out.data);
	cr_assert_eq(run("IsInf", 20, &no_pos, 1, &in, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, neg, 6);
	free(out.data);
	/* Any nonzero value leaves a sign on, as 1 does. */
	cr_assert_eq(run("IsInf", 20, &seven, 1, &in, &out), 0, "%s", cep_last_error());
	cr_assert_arr_eq(out.data, both, 6);
	free(out.data);
}

Test(ops_fpclass, isnan_for_every_type)
{
	static const cep_dtype types[] = { CEP_DTYPE_FLOAT32, CEP_DTYPE_FLOAT16,
					   CEP_DTYPE_BFLOAT16 };
	uint32_t buf[V_N];
	struct op_tensor in, out;
	size_t t;
	int i;

	for (t = 0; t < N_OF(types); t++) {
		in = values(types[t], buf);
		cr_assert_eq(run("IsNaN", 13, NULL, 0, &in, &out), 0, "%s", cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
		for (i = 0; i < V_N; i++)
			cr_assert_eq(((uint8_t *)out.data)[i],
				     i == V_QNAN || i == V_SNAN || i == V_NEG_NAN,
				     "%s value %d", cep_dtype_name(types[t]), i);
		free(out.data);
	}
}

Test(ops_fpclass, shapes_pass_through_as_bool)
{
	float s = NAN, x[6] = { 0 };
	int64_t dims[3] = { 1, 2, 3 }, empty[2] = { 4, 0 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s), out;

	cr_assert_eq(run("IsNaN", 9, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT32, 3, dims, x);
	cr_assert_eq(run("IsInf", 10, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
	cr_assert_eq(out.rank, 3);
	cr_assert_eq(out.dims[2], 3);
	free(out.data);
	in = oh_tensor(CEP_DTYPE_FLOAT16, 2, empty, NULL);
	cr_assert_eq(run("IsNaN", 9, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[1], 0);
	free(out.data);
}

Test(ops_fpclass, types_and_refusals)
{
	uint16_t h[1] = { 0x7c00 };
	int32_t i32[1] = { 1 };
	int64_t d1[1] = { 1 };
	struct op_attr bad = oh_float("detect_positive", 1.0f);
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT16, 1, d1, h), out;

	assert_refused(run("IsInf", 19, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "IsInf: dtype float16 is not supported on the host backend "
		       "(supported: float32, float64)");
	cr_assert_eq(run("IsInf", 20, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	free(out.data);
	cr_assert_eq(run("IsNaN", 9, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	free(out.data);
	in.dtype = CEP_DTYPE_BFLOAT16;
	assert_refused(run("IsNaN", 12, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "IsNaN: dtype bfloat16 is not supported on the host backend "
		       "(supported: float32, float16, float64)");
	cr_assert_eq(run("IsNaN", 13, NULL, 0, &in, &out), 0, "%s", cep_last_error());
	free(out.data);
	assert_refused(run("IsInf", 9, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "IsInf: opset 9 is not supported (supported 10-28)");
	assert_refused(run("IsNaN", 8, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "IsNaN: opset 8 is not supported (supported 9-28)");
	assert_refused(run("IsInf", 20, &bad, 1, &in, &out), CEP_EMODEL,
		       "IsInf: attribute 'detect_positive' is of type float, expected int");
	in = oh_tensor(CEP_DTYPE_INT32, 1, d1, i32);
	assert_refused(run("IsNaN", 20, NULL, 0, &in, &out), CEP_EUNSUPPORTED,
		       "IsNaN: dtype int32 is not supported on the host backend "
		       "(supported: float32, float16, bfloat16, float64)");
}

/* -------------------------------------------------------- half sessions */

/* y = IsInf(x), z = IsNaN(x), w = x * 1 over six values of x. */
static uint8_t *fpclass_model(size_t *len)
{
	static const float one = 1.0f;
	struct onnxb *b = onnxb_new(20);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "6");
	onnxb_output(b, "y", CEP_DTYPE_BOOL, "6");
	onnxb_output(b, "z", CEP_DTYPE_BOOL, "6");
	onnxb_output(b, "w", CEP_DTYPE_FLOAT32, "6");
	onnxb_init(b, "one", CEP_DTYPE_FLOAT32, "", &one);
	onnxb_node(b, "IsInf", "x", "y");
	onnxb_node(b, "IsNaN", "x", "z");
	onnxb_node(b, "Mul", "x,one", "w");
	return onnxb_finish(b, len);
}

Test(ops_fpclass, isinf_stays_float32_in_half_sessions)
{
	static const cep_precision prec[2] = { CEP_PRECISION_FP16, CEP_PRECISION_BF16 };
	/* FLT_MAX rounds to infinity in both halves, 1e5 in float16. */
	float x[6] = { FLT_MAX, 1e5f, INFINITY, -INFINITY, NAN, 1.0f }, w[6];
	const uint8_t want_inf[6] = { 0, 0, 1, 1, 0, 0 }, want_nan[6] = { 0, 0, 0, 0, 1, 0 };
	uint8_t y[6], z[6];
	int64_t dims[1] = { 6 };
	struct engine_input in = { "x", CEP_DTYPE_FLOAT32, 1, dims, x, sizeof(x) };
	struct engine_output o[3] = {
		{ .name = "y", .data = y, .capacity = sizeof(y) },
		{ .name = "z", .data = z, .capacity = sizeof(z) },
		{ .name = "w", .data = w, .capacity = sizeof(w) },
	};
	struct backend *be;
	int h;

	cr_assert_eq(backend_host_new(0, &be), 0, "%s", cep_last_error());
	for (h = 0; h < 2; h++) {
		struct engine_model_options mo = { .precision = prec[h] };
		struct engine_session_options so = { .precision = prec[h] };
		struct engine_precision_stats st;
		engine_model *m;
		engine_session *s;
		uint8_t *buf;
		size_t len;

		buf = fpclass_model(&len);
		cr_assert_eq(engine_model_load_as(buf, len, -1, &mo, &m), 0, "%s",
			     cep_last_error());
		free(buf);
		engine_model_precision_stats(m, &st);
		cr_assert_eq(st.float_nodes, 1, "only IsInf stays float32");
		cr_assert_eq(st.first_float_node, 0, "IsInf (node 0) stays float32: %s",
			     st.first_float);
		cr_assert_geq(st.half_nodes, 2, "IsNaN and Mul compute in half");
		cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
		cr_assert_eq(eu_run(s, &in, 1, o, 3), 0, "%s", cep_last_error());
		cr_assert_arr_eq(y, want_inf, 6, "IsInf in %s", h ? "bf16" : "fp16");
		cr_assert_arr_eq(z, want_nan, 6, "IsNaN in %s", h ? "bf16" : "fp16");
		/* Mul did round through half: the largest float32 is infinite
		 * or saturated there, not itself. */
		cr_assert_neq(w[0], FLT_MAX);
		engine_session_free(s);
		engine_model_unref(m);
	}
	backend_free(be);
}
