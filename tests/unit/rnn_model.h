/*
 * rnn_model.h — the model of recurrent layers that the half-precision
 * tests run (test_ops_rnn.c on the host backend, test_cuda_rnn.c on the
 * device): x [seq, 2, 4] -> a bidirectional LSTM (B, P, sequence_lens as
 * an int32 initializer) -> "ly"; a GRU with linear_before_reset -> its
 * Y_h alone, "gh"; a reversed RNN -> "ry"; opset 22, fresh random
 * weights. Fed a sequence of 5.
 *
 * Header-only and static, so it is compiled into the tests that include
 * it and no other.
 */
#ifndef CEP_TEST_RNN_MODEL_H
#define CEP_TEST_RNN_MODEL_H

#include "tests/unit/prec_models.h"

static PM_UNUSED struct pm_model rnn_model(unsigned *seed)
{
	static const int64_t xd[3] = { 5, 2, 4 };
	static const int32_t lens[2] = { 5, 3 };
	struct pm_model pm = { .what = "recurrent" };
	struct onnxb *b = onnxb_new(22);
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "seq,2,4");
	onnxb_output(b, "ly", CEP_DTYPE_FLOAT32, "seq,2,2,6");
	onnxb_output(b, "gh", CEP_DTYPE_FLOAT32, "1,2,5");
	onnxb_output(b, "ry", CEP_DTYPE_FLOAT32, "seq,1,2,3");
	pm_init(b, "lw", "2,24,4", 2 * 24 * 4, -0.5f, 0.5f, seed);
	pm_init(b, "lr", "2,24,6", 2 * 24 * 6, -0.5f, 0.5f, seed);
	pm_init(b, "lb", "2,48", 2 * 48, -0.3f, 0.3f, seed);
	pm_init(b, "lp", "2,18", 2 * 18, -0.3f, 0.3f, seed);
	onnxb_init(b, "lens", CEP_DTYPE_INT32, "2", lens);
	pm_init(b, "gw", "1,15,4", 15 * 4, -0.5f, 0.5f, seed);
	pm_init(b, "gr", "1,15,5", 15 * 5, -0.5f, 0.5f, seed);
	pm_init(b, "rw", "1,3,4", 3 * 4, -0.5f, 0.5f, seed);
	pm_init(b, "rr", "1,3,3", 3 * 3, -0.5f, 0.5f, seed);
	n = onnxb_node(b, "LSTM", "x,lw,lr,lb,lens,,,lp", "ly");
	onnxb_attr_int(n, "hidden_size", 6);
	onnxb_attr_string(n, "direction", "bidirectional");
	n = onnxb_node(b, "GRU", "x,gw,gr", ",gh");
	onnxb_attr_int(n, "hidden_size", 5);
	onnxb_attr_int(n, "linear_before_reset", 1);
	n = onnxb_node(b, "RNN", "x,rw,rr", "ry");
	onnxb_attr_int(n, "hidden_size", 3);
	onnxb_attr_string(n, "direction", "reverse");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 3, xd, 0);
	pm.out[pm.n_out++] = "ly";
	pm.out[pm.n_out++] = "gh";
	pm.out[pm.n_out++] = "ry";
	return pm;
}

/* Asserts that converting pm for precision p on backend kind leaves no
 * node in float32 (its three in half), printing what it did. */
static PM_UNUSED void rnn_model_all_half(const struct pm_model *pm, cep_precision p,
					 enum backend_kind kind)
{
	struct engine_model_options mo = { .precision = p, .backend = kind };
	struct engine_precision_stats st;
	engine_model *m;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	engine_model_precision_stats(m, &st);
	engine_model_unref(m);
	printf("  %s %s: %d half nodes, %d float32 nodes, %d casts\n", pm->what,
	       p == CEP_PRECISION_FP16 ? "fp16" : "bf16", st.half_nodes, st.float_nodes, st.casts);
	cr_assert_eq(st.float_nodes, 0, "%s", st.first_float);
	cr_assert_eq(st.half_nodes, 3);
}

#endif
