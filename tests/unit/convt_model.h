/*
 * convt_model.h — the model of transposed convolution and sampling
 * operators that the half-precision tests run (test_precision.c on the
 * host backend, test_cuda_convt.c on the device), opset 28, fresh random
 * weights:
 *
 *	x [2, 3, 5, 5] -> ConvTranspose (w [3, 2, 3, 3], b [2]; stride 2,
 *	  pads 1, output_padding 1) -> "ct" [2, 2, 10, 10]
 *	theta [2, 2, 3] -> AffineGrid (size 2, 2, 6, 6) -> grid [2, 6, 6, 2]
 *	ct, grid -> GridSample (linear, border) -> "gs" [2, 2, 6, 6]
 *	gs -> Einsum "bchw,ck->bkhw" (e [2, 4]) -> Reshape [2, 4, 36]
 *	  -> Col2Im (image 7 x 7, blocks 2 x 2) -> "col" [2, 1, 7, 7]
 *
 * In half every node computes in half but AffineGrid, whose output (and
 * GridSample's grid input) stays float32 (engine/precision.c).
 *
 * Header-only and static, so it is compiled into the tests that include
 * it and no other.
 */
#ifndef CEP_TEST_CONVT_MODEL_H
#define CEP_TEST_CONVT_MODEL_H

#include "tests/unit/prec_models.h"

static PM_UNUSED struct pm_model convt_model(unsigned *seed)
{
	static const int64_t xd[4] = { 2, 3, 5, 5 }, td[3] = { 2, 2, 3 };
	static const int64_t two[2] = { 2, 2 }, ones[4] = { 1, 1, 1, 1 }, op[2] = { 1, 1 };
	static const int64_t size[4] = { 2, 2, 6, 6 }, image[2] = { 7, 7 };
	static const int64_t rs[3] = { 2, 4, 36 };
	struct pm_model pm = { .what = "transposed convolution and sampling" };
	struct onnxb *b = onnxb_new(28);
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "2,3,5,5");
	onnxb_input(b, "theta", CEP_DTYPE_FLOAT32, "2,2,3");
	onnxb_output(b, "ct", CEP_DTYPE_FLOAT32, "2,2,10,10");
	onnxb_output(b, "gs", CEP_DTYPE_FLOAT32, "2,2,6,6");
	onnxb_output(b, "col", CEP_DTYPE_FLOAT32, "2,1,7,7");
	pm_init(b, "w", "3,2,3,3", 3 * 2 * 9, -0.5f, 0.5f, seed);
	pm_init(b, "b", "2", 2, -0.3f, 0.3f, seed);
	pm_init(b, "e", "2,4", 8, -1.0f, 1.0f, seed);
	onnxb_init(b, "size", CEP_DTYPE_INT64, "4", size);
	onnxb_init(b, "image", CEP_DTYPE_INT64, "2", image);
	onnxb_init(b, "block", CEP_DTYPE_INT64, "2", two);
	onnxb_init(b, "rs", CEP_DTYPE_INT64, "3", rs);
	n = onnxb_node(b, "ConvTranspose", "x,w,b", "ct");
	onnxb_attr_ints(n, "strides", 2, two);
	onnxb_attr_ints(n, "pads", 4, ones);
	onnxb_attr_ints(n, "output_padding", 2, op);
	onnxb_node(b, "AffineGrid", "theta,size", "grid");
	n = onnxb_node(b, "GridSample", "ct,grid", "gs");
	onnxb_attr_string(n, "padding_mode", "border");
	n = onnxb_node(b, "Einsum", "gs,e", "ein");
	onnxb_attr_string(n, "equation", "bchw,ck->bkhw");
	onnxb_node(b, "Reshape", "ein,rs", "cols");
	onnxb_node(b, "Col2Im", "cols,image,block", "col");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 4, xd, 0);
	pm_input_add(&pm, "theta", CEP_DTYPE_FLOAT32, 3, td, 0);
	pm.out[pm.n_out++] = "ct";
	pm.out[pm.n_out++] = "gs";
	pm.out[pm.n_out++] = "col";
	return pm;
}

/* Asserts that converting pm for precision p on backend kind leaves only
 * AffineGrid in float32 and the other five nodes in half, printing what it
 * did. */
static PM_UNUSED void convt_model_half(const struct pm_model *pm, cep_precision p,
				       enum backend_kind kind)
{
	struct engine_model_options mo = { .precision = p, .backend = kind };
	struct engine_precision_stats st;
	engine_model *m;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	engine_model_precision_stats(m, &st);
	engine_model_unref(m);
	printf("  %s %s: %d half nodes, %d float32 nodes (first: %s), %d casts\n", pm->what,
	       p == CEP_PRECISION_FP16 ? "fp16" : "bf16", st.half_nodes, st.float_nodes,
	       st.first_float, st.casts);
	cr_assert_eq(st.float_nodes, 1, "%s", st.first_float);
	cr_assert_not_null(strstr(st.first_float, "AffineGrid"), "%s", st.first_float);
	cr_assert_eq(st.half_nodes, 5);
}

#endif
