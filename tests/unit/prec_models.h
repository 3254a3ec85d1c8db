/*
 * prec_models.h — what the precision tests share (test_precision.c on the
 * host backend, test_cuda_precision.c on the device): three float32 models
 * of the kinds people run in half precision (an MLP, a CNN with
 * BatchNormalization, a transformer block with LayerNormalization,
 * Softmax, a Shape -> Gather -> Concat -> Reshape chain, a Where mask and
 * an Erf GELU) and a quantized one (QuantizeLinear, DequantizeLinear,
 * QLinearMatMul), built with onnxb from fresh random weights, and a
 * comparison that runs one model in a precision on one backend against
 * the float32 model on the host over fresh random inputs and prints the
 * relative error of each output (the norm of the difference over the norm
 * of the reference); the quantized model's integers, and what is
 * dequantized from them, must be the float32 model's exactly.
 *
 * Header-only and static, so it is compiled into the tests that include
 * it and no other.
 */
#ifndef CEP_TEST_PREC_MODELS_H
#define CEP_TEST_PREC_MODELS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h"
#include "tests/unit/engine_util.h"
#include "tests/unit/onnxb.h"

#define PM_UNUSED __attribute__((unused))
#define PM_MAX_IO 4
#define PM_OUT_BYTES (1u << 20) /* room for any output of these models */

/* A graph input as the comparison feeds it. */
struct pm_input {
	const char *name;
	cep_dtype dtype;
	int rank;
	int64_t dims[CEP_MAX_RANK];
	int64_t hi;          /* integers: uniform in [0, hi], the first of each
	                      * row hi (a mask keeps one position per row) */
	float base, step;    /* floats: base + (k % 8) * step for element k when
	                      * either is set, else uniform in [-2, 2) */
};

/* A model: its file's bytes and what to feed it. */
struct pm_model {
	const char *what;
	uint8_t *bytes;      /* malloc'd */
	size_t len;
	struct pm_input in[PM_MAX_IO];
	int n_in;
	const char *out[PM_MAX_IO];
	int n_out;
};

static PM_UNUSED void pm_model_free(struct pm_model *pm)
{
	free(pm->bytes);
	pm->bytes = NULL;
}

static PM_UNUSED unsigned pm_rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* Uniform in [-1, 1). */
static PM_UNUSED float pm_uniform(unsigned *seed)
{
	return (float)(pm_rnd(seed) & 0xffff) / 32768.0f - 1.0f;
}

/* An initializer of n uniform values in [lo, hi), from seed. */
static PM_UNUSED void pm_init(struct onnxb *b, const char *name, const char *shape, size_t n,
			      float lo, float hi, unsigned *seed)
{
	float *w = malloc(sizeof(*w) * (n ? n : 1));
	size_t i;

	cr_assert_not_null(w);
	for (i = 0; i < n; i++)
		w[i] = lo + (hi - lo) * (pm_uniform(seed) + 1.0f) / 2.0f;
	onnxb_init(b, name, CEP_DTYPE_FLOAT32, shape, w);
	free(w);
}

static PM_UNUSED void pm_input_add(struct pm_model *pm, const char *name, cep_dtype dtype,
				   int rank, const int64_t *dims, int64_t hi)
{
	struct pm_input *in = &pm->in[pm->n_in++];

	in->name = name;
	in->dtype = dtype;
	in->rank = rank;
	memcpy(in->dims, dims, sizeof(int64_t) * (size_t)rank);
	in->hi = hi;
}

/*
 * The MLP: x [batch, 16] -> MatMul w1 [16, 32] -> Add -> Relu -> Gemm
 * (w2 [32, 10], c [10]) -> "logits" -> Softmax -> "probs"; both are
 * outputs. Fed a batch of 6.
 */
static PM_UNUSED struct pm_model pm_mlp(unsigned *seed)
{
	static const int64_t xd[2] = { 6, 16 };
	struct pm_model pm = { .what = "mlp" };
	struct onnxb *b = onnxb_new(17);

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,16");
	onnxb_output(b, "probs", CEP_DTYPE_FLOAT32, "batch,10");
	onnxb_output(b, "logits", CEP_DTYPE_FLOAT32, "batch,10");
	pm_init(b, "w1", "16,32", 16 * 32, -0.5f, 0.5f, seed);
	pm_init(b, "b1", "32", 32, -0.5f, 0.5f, seed);
	pm_init(b, "w2", "32,10", 32 * 10, -0.4f, 0.4f, seed);
	pm_init(b, "c2", "10", 10, -0.5f, 0.5f, seed);
	onnxb_node(b, "MatMul", "x,w1", "h1");
	onnxb_node(b, "Add", "h1,b1", "h2");
	onnxb_node(b, "Relu", "h2", "h3");
	onnxb_node(b, "Gemm", "h3,w2,c2", "logits");
	onnxb_attr_int(onnxb_node(b, "Softmax", "logits", "probs"), "axis", -1);
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 2, xd, 0);
	pm.out[pm.n_out++] = "probs";
	pm.out[pm.n_out++] = "logits";
	return pm;
}

/* A BatchNormalization of c channels named p ("bn1"): scale, B, mean and
 * a positive var as initializers. */
static PM_UNUSED void pm_bn(struct onnxb *b, const char *p, const char *x, const char *y,
			    int c, unsigned *seed)
{
	char names[4][32], in[160], shape[16];

	snprintf(shape, sizeof(shape), "%d", c);
	snprintf(names[0], sizeof(names[0]), "%s_scale", p);
	snprintf(names[1], sizeof(names[1]), "%s_b", p);
	snprintf(names[2], sizeof(names[2]), "%s_mean", p);
	snprintf(names[3], sizeof(names[3]), "%s_var", p);
	pm_init(b, names[0], shape, (size_t)c, 0.5f, 1.5f, seed);
	pm_init(b, names[1], shape, (size_t)c, -0.5f, 0.5f, seed);
	pm_init(b, names[2], shape, (size_t)c, -0.3f, 0.3f, seed);
	pm_init(b, names[3], shape, (size_t)c, 0.5f, 1.5f, seed);
	snprintf(in, sizeof(in), "%s,%s,%s,%s,%s", x, names[0], names[1], names[2], names[3]);
	onnxb_attr_float(onnxb_node(b, "BatchNormalization", in, y), "epsilon", 1e-5f);
}

/*
 * The CNN at opset: x [batch, 3, 12, 12] -> Conv 8x3x3x3 (bias, pads 1)
 * -> BatchNormalization -> Relu -> MaxPool 2x2 -> Conv 16x8x3x3 (no bias)
 * -> BatchNormalization -> Relu -> GlobalAveragePool -> Flatten -> Gemm
 * (transB, 10 x 16, c) -> y [batch, 10]. Fed a batch of 2.
 */
static PM_UNUSED struct pm_model pm_cnn(int opset, unsigned *seed)
{
	static const int64_t xd[4] = { 2, 3, 12, 12 };
	static const int64_t pads[4] = { 1, 1, 1, 1 }, k2[2] = { 2, 2 };
	struct pm_model pm = { .what = "cnn" };
	struct onnxb *b = onnxb_new(opset);
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,3,12,12");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,10");
	pm_init(b, "cw1", "8,3,3,3", 8 * 27, -0.4f, 0.4f, seed);
	pm_init(b, "cb1", "8", 8, -0.2f, 0.2f, seed);
	pm_init(b, "cw2", "16,8,3,3", 16 * 72, -0.15f, 0.15f, seed);
	pm_init(b, "fw", "10,16", 160, -0.5f, 0.5f, seed);
	pm_init(b, "fc", "10", 10, -0.5f, 0.5f, seed);
	n = onnxb_node(b, "Conv", "x,cw1,cb1", "c1");
	onnxb_attr_ints(n, "pads", 4, pads);
	pm_bn(b, "bn1", "c1", "n1", 8, seed);
	onnxb_node(b, "Relu", "n1", "r1");
	n = onnxb_node(b, "MaxPool", "r1", "p1");
	onnxb_attr_ints(n, "kernel_shape", 2, k2);
	onnxb_attr_ints(n, "strides", 2, k2);
	n = onnxb_node(b, "Conv", "p1,cw2", "c2");
	onnxb_attr_ints(n, "pads", 4, pads);
	pm_bn(b, "bn2", "c2", "n2", 16, seed);
	onnxb_node(b, "Relu", "n2", "r2");
	onnxb_node(b, "GlobalAveragePool", "r2", "g");
	onnxb_node(b, "Flatten", "g", "f");
	onnxb_attr_int(onnxb_node(b, "Gemm", "f,fw,fc", "y"), "transB", 1);
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 4, xd, 0);
	pm.out[pm.n_out++] = "y";
	return pm;
}

/* MatMul by an initializer w (rows x cols) then Add of a bias (cols):
 * "x @ w + b" into y, through y's name with "_mm" appended. */
static PM_UNUSED void pm_linear(struct onnxb *b, const char *x, const char *w, int rows,
				int cols, const char *y, unsigned *seed)
{
	char shape[32], bias[40], mm[64], in[160];
	float s = 1.0f / sqrtf((float)rows);

	snprintf(shape, sizeof(shape), "%d,%d", rows, cols);
	pm_init(b, w, shape, (size_t)rows * (size_t)cols, -s * 1.7f, s * 1.7f, seed);
	snprintf(bias, sizeof(bias), "%s_b", w);
	snprintf(shape, sizeof(shape), "%d", cols);
	pm_init(b, bias, shape, (size_t)cols, -0.2f, 0.2f, seed);
	snprintf(mm, sizeof(mm), "%s_mm", y);
	snprintf(in, sizeof(in), "%s,%s", x, w);
	onnxb_node(b, "MatMul", in, mm);
	snprintf(in, sizeof(in), "%s,%s", mm, bias);
	onnxb_node(b, "Add", in, y);
}

/*
 * A transformer block at opset 17, pre-norm, d = 32, 4 heads of 8, a
 * feed-forward of 64: x [batch, seq, 32] and mask [batch, seq] (int64, 0
 * for padding) -> LayerNormalization -> Q, K, V (MatMul + Add) -> heads
 * by Reshape to (Gather of Shape(x) for batch and seq, Concat [4, 8]) and
 * Transpose -> MatMul -> Mul by 1/sqrt(8) -> Where(mask == 0, -1e4, .)
 * -> Softmax -> MatMul V -> Transpose -> Reshape back -> MatMul + Add ->
 * residual Add -> LayerNormalization -> MatMul + Add -> GELU through Erf
 * -> MatMul + Add -> residual Add -> y. The batch and seq are symbolic, so
 * the Shape chain stays in the graph until a plan folds it. Fed a batch
 * of 2 and 7 positions.
 */
static PM_UNUSED struct pm_model pm_transformer(unsigned *seed)
{
	static const int64_t xd[3] = { 2, 7, 32 }, md[2] = { 2, 7 };
	static const int64_t i0[1] = { 0 }, i1[1] = { 1 }, heads[2] = { 4, 8 }, d[1] = { 32 };
	static const int64_t zero = 0, axes12[2] = { 1, 2 };
	static const int64_t p_q[4] = { 0, 2, 1, 3 }, p_k[4] = { 0, 2, 3, 1 };
	static const float scale = 0.35355339f, neg = -1e4f, half_v = 0.5f, one = 1.0f;
	static const float sqrt2 = 1.41421356f;
	struct pm_model pm = { .what = "transformer" };
	struct onnxb *b = onnxb_new(17);
	Onnx__NodeProto *n;

	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,seq,32");
	onnxb_input(b, "mask", CEP_DTYPE_INT64, "batch,seq");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,seq,32");
	pm_init(b, "g1", "32", 32, 0.8f, 1.2f, seed);
	pm_init(b, "be1", "32", 32, -0.1f, 0.1f, seed);
	pm_init(b, "g2", "32", 32, 0.8f, 1.2f, seed);
	pm_init(b, "be2", "32", 32, -0.1f, 0.1f, seed);
	onnxb_init(b, "i0", CEP_DTYPE_INT64, "1", i0);
	onnxb_init(b, "i1", CEP_DTYPE_INT64, "1", i1);
	onnxb_init(b, "heads", CEP_DTYPE_INT64, "2", heads);
	onnxb_init(b, "dmodel", CEP_DTYPE_INT64, "1", d);
	onnxb_init(b, "zero", CEP_DTYPE_INT64, "", &zero);
	onnxb_init(b, "axes12", CEP_DTYPE_INT64, "2", axes12);
	onnxb_init(b, "scale", CEP_DTYPE_FLOAT32, "", &scale);
	onnxb_init(b, "neg", CEP_DTYPE_FLOAT32, "", &neg);
	onnxb_init(b, "halfc", CEP_DTYPE_FLOAT32, "", &half_v);
	onnxb_init(b, "one", CEP_DTYPE_FLOAT32, "", &one);
	onnxb_init(b, "sqrt2", CEP_DTYPE_FLOAT32, "", &sqrt2);

	onnxb_attr_int(onnxb_node(b, "LayerNormalization", "x,g1,be1", "ln1"), "axis", -1);
	pm_linear(b, "ln1", "wq", 32, 32, "q", seed);
	pm_linear(b, "ln1", "wk", 32, 32, "k", seed);
	pm_linear(b, "ln1", "wv", 32, 32, "v", seed);
	onnxb_node(b, "Shape", "x", "sx");
	onnxb_node(b, "Gather", "sx,i0", "bsz");
	onnxb_node(b, "Gather", "sx,i1", "slen");
	onnxb_attr_int(onnxb_node(b, "Concat", "bsz,slen,heads", "hshape"), "axis", 0);
	onnxb_attr_int(onnxb_node(b, "Concat", "bsz,slen,dmodel", "dshape"), "axis", 0);
	onnxb_node(b, "Reshape", "q,hshape", "qh");
	onnxb_node(b, "Reshape", "k,hshape", "kh");
	onnxb_node(b, "Reshape", "v,hshape", "vh");
	onnxb_attr_ints(onnxb_node(b, "Transpose", "qh", "qt"), "perm", 4, p_q);
	onnxb_attr_ints(onnxb_node(b, "Transpose", "kh", "kt"), "perm", 4, p_k);
	onnxb_attr_ints(onnxb_node(b, "Transpose", "vh", "vt"), "perm", 4, p_q);
	onnxb_node(b, "MatMul", "qt,kt", "scores");
	onnxb_node(b, "Mul", "scores,scale", "scaled");
	onnxb_node(b, "Equal", "mask,zero", "pad");
	onnxb_node(b, "Unsqueeze", "pad,axes12", "pad4");
	onnxb_node(b, "Where", "pad4,neg,scaled", "masked");
	onnxb_attr_int(onnxb_node(b, "Softmax", "masked", "att"), "axis", -1);
	onnxb_node(b, "MatMul", "att,vt", "ctx");
	onnxb_attr_ints(onnxb_node(b, "Transpose", "ctx", "ctxt"), "perm", 4, p_q);
	onnxb_node(b, "Reshape", "ctxt,dshape", "ctx2");
	pm_linear(b, "ctx2", "wo", 32, 32, "attn", seed);
	onnxb_node(b, "Add", "x,attn", "r1");
	n = onnxb_node(b, "LayerNormalization", "r1,g2,be2", "ln2");
	onnxb_attr_int(n, "axis", -1);
	onnxb_attr_float(n, "epsilon", 1e-5f);
	pm_linear(b, "ln2", "wf1", 32, 64, "f1", seed);
	onnxb_node(b, "Div", "f1,sqrt2", "f1s");
	onnxb_node(b, "Erf", "f1s", "erf");
	onnxb_node(b, "Add", "erf,one", "erf1");
	onnxb_node(b, "Mul", "f1,erf1", "gx");
	onnxb_node(b, "Mul", "gx,halfc", "gelu");
	pm_linear(b, "gelu", "wf2", 64, 32, "f2", seed);
	onnxb_node(b, "Add", "r1,f2", "y");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 3, xd, 0);
	pm_input_add(&pm, "mask", CEP_DTYPE_INT64, 2, md, 1);
	pm.out[pm.n_out++] = "y";
	return pm;
}

/*
 * Long reductions that a half accumulator would get wrong: "ones" [4096]
 * of 1.0 -> ReduceSum (4096: a float16 sum stalls at 2048) and ReduceMean
 * into "sum" [2], Softmax (1/4096 each) into the first row of "p" [3,
 * 4096]; "big" [2, 4096] of 1024 + (k % 8) * 8 (exact
 * in both half types) -> ReduceMean (1052; the sum, 4.3e6, overflows
 * float16), LayerNormalization over the row and Softmax. Every output is
 * compared as a whole, so an accumulator in half fails the comparison.
 */
static PM_UNUSED struct pm_model pm_accumulate(void)
{
	static const int64_t od[1] = { 4096 }, bd[2] = { 2, 4096 }, ax[1] = { -1 }, a0[1] = { 0 };
	struct pm_model pm = { .what = "accumulate" };
	struct onnxb *b = onnxb_new(17);
	float *ones = malloc(sizeof(float) * 4096), *zeros = calloc(4096, sizeof(float));
	Onnx__NodeProto *n;
	int i;

	cr_assert(ones && zeros);
	for (i = 0; i < 4096; i++)
		ones[i] = 1.0f;
	onnxb_input(b, "ones", CEP_DTYPE_FLOAT32, "4096");
	onnxb_input(b, "big", CEP_DTYPE_FLOAT32, "2,4096");
	onnxb_output(b, "sum", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "mean", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "p", CEP_DTYPE_FLOAT32, NULL);
	onnxb_output(b, "ln", CEP_DTYPE_FLOAT32, NULL);
	onnxb_init(b, "axes", CEP_DTYPE_INT64, "1", ax);
	onnxb_init(b, "axis0", CEP_DTYPE_INT64, "1", a0);
	onnxb_init(b, "g", CEP_DTYPE_FLOAT32, "4096", ones);
	onnxb_init(b, "b0", CEP_DTYPE_FLOAT32, "4096", zeros);
	onnxb_node(b, "ReduceSum", "ones,axes", "s1");
	onnxb_node(b, "ReduceMean", "ones", "m1");
	onnxb_attr_int(onnxb_node(b, "Softmax", "ones", "p1"), "axis", -1);
	onnxb_node(b, "Unsqueeze", "p1,axis0", "p1r");
	n = onnxb_node(b, "ReduceMean", "big", "m2");
	onnxb_attr_int(n, "keepdims", 0);
	onnxb_attr_ints(n, "axes", 1, ax);
	onnxb_attr_int(onnxb_node(b, "Softmax", "big", "p2"), "axis", -1);
	onnxb_attr_int(onnxb_node(b, "LayerNormalization", "big,g,b0", "ln"), "axis", -1);
	onnxb_attr_int(onnxb_node(b, "Concat", "s1,m1", "sum"), "axis", 0);
	onnxb_node(b, "Identity", "m2", "mean");
	onnxb_attr_int(onnxb_node(b, "Concat", "p1r,p2", "p"), "axis", 0);
	pm.bytes = onnxb_finish(b, &pm.len);
	free(ones);
	free(zeros);
	pm_input_add(&pm, "ones", CEP_DTYPE_FLOAT32, 1, od, 0);
	pm.in[0].base = 1.0f;
	pm_input_add(&pm, "big", CEP_DTYPE_FLOAT32, 2, bd, 0);
	pm.in[1].base = 1024.0f;
	pm.in[1].step = 8.0f;
	pm.out[pm.n_out++] = "sum";
	pm.out[pm.n_out++] = "mean";
	pm.out[pm.n_out++] = "p";
	pm.out[pm.n_out++] = "ln";
	return pm;
}

/*
 * A quantized model (opset 21) as quantization tools write them: x [batch,
 * 16] -> QuantizeLinear (scale 0.0173, zero point 100) -> "q" ->
 * DequantizeLinear -> "xd" -> MatMul by int8 weights [16, 4] dequantized
 * per column (a constant the optimizer folds) -> "y"; and q ->
 * QLinearMatMul by uint8 weights [16, 4] -> "qm". q and qm are uint8
 * outputs, xd and y float32. Fed a batch of 8.
 */
static PM_UNUSED struct pm_model pm_qdq(unsigned *seed)
{
	static const int64_t xd[2] = { 8, 16 };
	static const float s = 0.0173f, s2 = 0.011f, ys = 0.9f;
	static const uint8_t z = 100, z2 = 131, yz = 120;
	struct pm_model pm = { .what = "qdq" };
	struct onnxb *b = onnxb_new(21);
	uint8_t wq[16 * 4], wu[16 * 4];
	float ws[4];
	int i;

	for (i = 0; i < 16 * 4; i++) {
		wq[i] = (uint8_t)pm_rnd(seed);
		wu[i] = (uint8_t)pm_rnd(seed);
	}
	for (i = 0; i < 4; i++)
		ws[i] = 0.002f + 0.001f * (float)i;
	onnxb_input(b, "x", CEP_DTYPE_FLOAT32, "batch,16");
	onnxb_output(b, "q", CEP_DTYPE_UINT8, "batch,16");
	onnxb_output(b, "xd", CEP_DTYPE_FLOAT32, "batch,16");
	onnxb_output(b, "y", CEP_DTYPE_FLOAT32, "batch,4");
	onnxb_output(b, "qm", CEP_DTYPE_UINT8, "batch,4");
	onnxb_init(b, "s", CEP_DTYPE_FLOAT32, "", &s);
	onnxb_init(b, "z", CEP_DTYPE_UINT8, "", &z);
	onnxb_init(b, "wq", CEP_DTYPE_INT8, "16,4", wq);
	onnxb_init(b, "ws", CEP_DTYPE_FLOAT32, "4", ws);
	onnxb_init(b, "wu", CEP_DTYPE_UINT8, "16,4", wu);
	onnxb_init(b, "s2", CEP_DTYPE_FLOAT32, "", &s2);
	onnxb_init(b, "z2", CEP_DTYPE_UINT8, "", &z2);
	onnxb_init(b, "ys", CEP_DTYPE_FLOAT32, "", &ys);
	onnxb_init(b, "yz", CEP_DTYPE_UINT8, "", &yz);
	onnxb_node(b, "QuantizeLinear", "x,s,z", "q");
	onnxb_node(b, "DequantizeLinear", "q,s,z", "xd");
	onnxb_attr_int(onnxb_node(b, "DequantizeLinear", "wq,ws", "w"), "axis", 1);
	onnxb_node(b, "MatMul", "xd,w", "y");
	onnxb_node(b, "QLinearMatMul", "q,s,z,wu,s2,z2,ys,yz", "qm");
	pm.bytes = onnxb_finish(b, &pm.len);
	pm_input_add(&pm, "x", CEP_DTYPE_FLOAT32, 2, xd, 0);
	pm.out[pm.n_out++] = "q";
	pm.out[pm.n_out++] = "xd";
	pm.out[pm.n_out++] = "y";
	pm.out[pm.n_out++] = "qm";
	return pm;
}

/* ------------------------------------------------------------ comparing */

/* Fresh random values for the inputs of pm: floats uniform in [-2, 2),
 * integers as struct pm_input says. data[i] is malloc'd, bytes[i] long. */
static PM_UNUSED void pm_inputs_make(const struct pm_model *pm, unsigned *seed,
				     struct engine_input *in, void **data)
{
	int i;

	for (i = 0; i < pm->n_in; i++) {
		const struct pm_input *p = &pm->in[i];
		int64_t n = 1, row = p->rank > 0 ? p->dims[p->rank - 1] : 1, k;
		size_t bytes;
		int d;

		for (d = 0; d < p->rank; d++)
			n *= p->dims[d];
		bytes = (size_t)n * cep_dtype_size(p->dtype);
		data[i] = malloc(bytes ? bytes : 1);
		cr_assert_not_null(data[i]);
		for (k = 0; k < n; k++) {
			if (p->dtype == CEP_DTYPE_FLOAT32 && (p->base != 0.0f || p->step != 0.0f))
				((float *)data[i])[k] = p->base + (float)(k % 8) * p->step;
			else if (p->dtype == CEP_DTYPE_FLOAT32)
				((float *)data[i])[k] = 2.0f * pm_uniform(seed);
			else if (p->dtype == CEP_DTYPE_INT64)
				((int64_t *)data[i])[k] = k % row == 0 ? p->hi :
							  (int64_t)(pm_rnd(seed) % (unsigned)(p->hi + 1));
			else
				cr_assert_fail("pm_inputs_make: no %s inputs", cep_dtype_name(p->dtype));
		}
		in[i] = (struct engine_input){ p->name, p->dtype, p->rank, p->dims, data[i], bytes };
	}
}

/* The norm of got - ref over the norm of ref, over n float32 elements; a
 * NaN anywhere makes it NaN. */
static PM_UNUSED double pm_rel_err(const float *ref, const float *got, size_t n)
{
	double num = 0.0, den = 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d = (double)got[i] - (double)ref[i];

		num += d * d;
		den += (double)ref[i] * (double)ref[i];
	}
	return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/*
 * Loads pm for precision p on backend be (a model converted for be's
 * kind when p is fp16 or bf16) and for fp32 on the host backend ref, runs
 * both `runs` times on fresh random inputs, and asserts that every output
 * is float32 of the reference's shape with a relative error (printed) of
 * at most tol. Returns the largest error seen.
 */
static PM_UNUSED double pm_compare(const struct pm_model *pm, struct backend *be, cep_precision p,
				   struct backend *ref, unsigned *seed, int runs, double tol)
{
	static const char *const names[] = { "fp32", "tf32", "fp16", "bf16" };
	struct engine_model_options mo = { .precision = p, .backend = be->kind };
	struct engine_session_options so = { .precision = p };
	struct engine_input in[PM_MAX_IO];
	struct engine_output got[PM_MAX_IO], want[PM_MAX_IO];
	void *data[PM_MAX_IO];
	engine_model *m, *m32;
	engine_session *s, *s32;
	double worst = 0.0;
	int r, i;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	cr_assert_eq(engine_model_load(pm->bytes, pm->len, -1, &m32), 0, "%s", cep_last_error());
	for (i = 0; i < engine_model_input_count(m); i++)
		cr_assert_eq(engine_model_input(m, i)->dtype, engine_model_input(m32, i)->dtype,
			     "input %d changed type", i);
	for (i = 0; i < engine_model_output_count(m); i++)
		cr_assert_eq(engine_model_output(m, i)->dtype, engine_model_output(m32, i)->dtype,
			     "output %d changed type", i);
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m32, ref, NULL, &s32), 0, "%s", cep_last_error());
	for (i = 0; i < pm->n_out; i++) {
		got[i] = (struct engine_output){ .name = pm->out[i], .capacity = PM_OUT_BYTES };
		want[i] = got[i];
		got[i].data = malloc(PM_OUT_BYTES);
		want[i].data = malloc(PM_OUT_BYTES);
	}
	for (r = 0; r < runs; r++) {
		pm_inputs_make(pm, seed, in, data);
		cr_assert_eq(eu_run(s, in, (size_t)pm->n_in, got, (size_t)pm->n_out), 0,
			     "%s %s run %d: %s", pm->what, names[p], r, cep_last_error());
		cr_assert_eq(eu_run(s32, in, (size_t)pm->n_in, want, (size_t)pm->n_out), 0,
			     "%s", cep_last_error());
		for (i = 0; i < pm->n_out; i++) {
			double e;

			cr_assert_eq(got[i].dtype, CEP_DTYPE_FLOAT32, "output '%s' is %s", pm->out[i],
				     cep_dtype_name(got[i].dtype));
			cr_assert_eq(got[i].rank, want[i].rank);
			cr_assert_eq(memcmp(got[i].dims, want[i].dims,
					    sizeof(int64_t) * (size_t)got[i].rank), 0);
			cr_assert_eq(got[i].bytes, want[i].bytes);
			e = pm_rel_err(want[i].data, got[i].data, want[i].bytes / sizeof(float));
			printf("  %-12s %-6s on %-4s run %d: %-8s relative error %.3g\n", pm->what,
			       names[p], backend_kind_name(be->kind), r, pm->out[i], e);
			cr_assert(e <= tol, "%s in %s on %s: output '%s' is off by %.3g (relative), "
				  "more than %.3g", pm->what, names[p], backend_kind_name(be->kind),
				  pm->out[i], e, tol);
			if (e > worst)
				worst = e;
		}
		for (i = 0; i < pm->n_in; i++)
			free(data[i]);
	}
	fflush(stdout);
	for (i = 0; i < pm->n_out; i++) {
		free(got[i].data);
		free(want[i].data);
	}
	engine_session_free(s);
	engine_session_free(s32);
	engine_model_unref(m);
	engine_model_unref(m32);
	return worst;
}

/*
 * Runs pm_qdq() in precision p on be and in float32 on ref over `runs`
 * fresh inputs: the integer outputs q and qm, and xd (dequantized in
 * float32 from them), must be exactly the float32 model's; y, the half
 * MatMul's, within tol of it (relative to its norm). Returns y's worst
 * error.
 */
static PM_UNUSED double pm_qdq_compare(const struct pm_model *pm, struct backend *be,
				       cep_precision p, struct backend *ref, unsigned *seed,
				       int runs)
{
	struct engine_model_options mo = { .precision = p, .backend = be->kind };
	struct engine_session_options so = { .precision = p };
	struct engine_input in[PM_MAX_IO];
	struct engine_output got[PM_MAX_IO], want[PM_MAX_IO];
	void *data[PM_MAX_IO];
	engine_model *m, *m32;
	engine_session *s, *s32;
	double worst = 0.0;
	int r, i;

	cr_assert_eq(engine_model_load_as(pm->bytes, pm->len, -1, &mo, &m), 0, "%s",
		     cep_last_error());
	cr_assert_eq(engine_model_load(pm->bytes, pm->len, -1, &m32), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m, be, &so, &s), 0, "%s", cep_last_error());
	cr_assert_eq(engine_session_new(m32, ref, NULL, &s32), 0, "%s", cep_last_error());
	for (i = 0; i < pm->n_out; i++) {
		got[i] = (struct engine_output){ .name = pm->out[i], .capacity = PM_OUT_BYTES };
		want[i] = got[i];
		got[i].data = malloc(PM_OUT_BYTES);
		want[i].data = malloc(PM_OUT_BYTES);
	}
	for (r = 0; r < runs; r++) {
		pm_inputs_make(pm, seed, in, data);
		cr_assert_eq(eu_run(s, in, (size_t)pm->n_in, got, (size_t)pm->n_out), 0, "%s",
			     cep_last_error());
		cr_assert_eq(eu_run(s32, in, (size_t)pm->n_in, want, (size_t)pm->n_out), 0, "%s",
			     cep_last_error());
		for (i = 0; i < pm->n_out; i++) {
			cr_assert_eq(got[i].dtype, want[i].dtype, "output '%s'", pm->out[i]);
			cr_assert_eq(got[i].bytes, want[i].bytes);
			if (strcmp(pm->out[i], "y") == 0) {
				double e = pm_rel_err(want[i].data, got[i].data,
						      want[i].bytes / sizeof(float));

				printf("  qdq %s on %s run %d: y relative error %.3g\n",
				       p == CEP_PRECISION_FP16 ? "fp16" : "bf16",
				       backend_kind_name(be->kind), r, e);
				cr_assert(e <= 1e-2, "y is off by %.3g", e);
				if (e > worst)
					worst = e;
				continue;
			}
			cr_assert_eq(memcmp(got[i].data, want[i].data, want[i].bytes), 0,
				     "output '%s' differs from the float32 model's", pm->out[i]);
		}
		for (i = 0; i < pm->n_in; i++)
			free(data[i]);
	}
	fflush(stdout);
	for (i = 0; i < pm->n_out; i++) {
		free(got[i].data);
		free(want[i].data);
	}
	engine_session_free(s);
	engine_session_free(s32);
	engine_model_unref(m);
	engine_model_unref(m32);
	return worst;
}

#endif
