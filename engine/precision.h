/*
 * precision.h — the graph pass behind fp16 and bf16 sessions: a loaded,
 * optimized float32 graph rewritten to compute in float16 or bfloat16.
 *
 * The engine runs it once per (model bytes, precision, backend kind) when
 * a half session's model is loaded (engine/engine_model.c), after
 * optimize_graph(), so constants are folded in float32 first and only the
 * results are rounded. What it does:
 *
 * - Every node that touches float32 computes in the half type when the
 *   backend has a kernel for it there and its inference accepts half
 *   inputs; its float32 inputs then arrive in half. Otherwise it stays in
 *   float32 (counted in float_nodes; nothing is refused for it), and so do
 *   Range (its element count comes from its float values, which rounding
 *   would change), IsInf, the quantized operators (QuantizeLinear,
 *   DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv:
 *   their scales and inputs stay the model's, so their integers are the
 *   float32 model's) and the roi and scales of Resize and Upsample (float32
 *   by their schemas: the output shape is computed from them), and control
 *   flow (If, Loop, Scan): its subgraphs are left in float32 whole, and the
 *   node reads every value it and its subgraphs take, outer ones included,
 *   in float32 through the Casts added before it.
 * - float32 constants that only half nodes read are converted once, in
 *   place, rounding to nearest even (the Cast kernel's conversion), so
 *   they take half the bytes; one read in both types is kept and given a
 *   half twin. Attributes that name float32 (Cast's "to", a "dtype", a
 *   float32 "value" tensor, ConstantOfShape's default zero) name the half
 *   type instead, except a Cast whose result is a graph output.
 * - Where a value is produced in one type and read in the other, a Cast
 *   node (one per value and type) converts it. Graph inputs and outputs
 *   keep float32, so the model's interface does not change: inputs are
 *   cast to half after they arrive, outputs back to float32 before they
 *   leave.
 * - Integer and bool tensors, every node that has no float32 tensor, and
 *   Shape and Size (which read only shapes), are untouched. float64
 *   tensors stay float64, and a node that reads or makes one keeps its
 *   float32 tensors float32 (counted in float_nodes): a Cast from float32
 *   to float64, or back, converts the values an fp32 session would, so
 *   the float64 part of a graph computes exactly as it does there
 *   (onnxruntime's float16 converter, too, converts float32 tensors only).
 *
 * Kernels of half types accumulate in float32 (or double) on both
 * backends: Softmax and LogSoftmax sums, LayerNormalization and
 * BatchNormalization statistics, the Reduce* accumulators, GEMMs and
 * convolutions; only the stored tensors are half.
 */
#ifndef CEP_DAEMON_PRECISION_H
#define CEP_DAEMON_PRECISION_H

#include <stddef.h>

#include "gpu/backend.h"
#include "client/cudaep.h"
#include "engine/engine.h" /* struct engine_precision_stats: what it did */

struct model;

/* The half type of a precision: CEP_DTYPE_FLOAT16 for CEP_PRECISION_FP16,
 * CEP_DTYPE_BFLOAT16 for CEP_PRECISION_BF16, CEP_DTYPE_UNDEFINED for the
 * float32 precisions (fp32 and tf32). */
cep_dtype precision_half_dtype(cep_precision p);

/* "fp32", "tf32", "fp16", "bf16", or "?" for a value out of range. */
const char *precision_name(cep_precision p);

/*
 * Rewrites the graph of m, which model_load() has returned, to compute in
 * half (CEP_DTYPE_FLOAT16 or CEP_DTYPE_BFLOAT16) with the kernels of the
 * backend kind be, as the file comment says, then sorts and infers it
 * again. Fills *st (may be NULL; engine/engine.h says what it counts).
 * Returns 0, CEP_EINVAL for another dtype, CEP_ENOMEM, or an error of
 * inference naming the node; after a failure the graph is half rewritten
 * and must only be freed.
 */
int precision_model_convert(struct model *m, cep_dtype half, enum backend_kind be,
			    struct engine_precision_stats *st);

#endif
