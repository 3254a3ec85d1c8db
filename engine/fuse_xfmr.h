/*
 * fuse_xfmr.h — the transformer fusions of the load-time optimizer
 * (engine/optimize.c calls them after folding):
 *
 *   GELU        x * 0.5 * (1 + Erf(x / sqrt 2)), in the orders exporters
 *               write it (Div or Mul by the constant, the half applied
 *               first, last or to the sum) -> one ai.onnx Gelu (opset 20);
 *   MatMulBias  MatMul by a constant matrix, Add of a constant bias along
 *               the last dim, optionally then Relu or Gelu -> one
 *               com.cudaep MatMulBias (one cuBLASLt GEMM with its epilogue
 *               on the CUDA backend);
 *   Attention   MatMul(Q, K^T) -> Div or Mul by a constant -> Add mask ->
 *               Softmax over the keys -> MatMul by V, on rank-4 operands ->
 *               one com.cudaep Attention (kernels/xfmr.h), which then
 *               absorbs the Transposes that feed Q, K and V and the one
 *               that reorders its output, reading and writing through
 *               strides.
 *
 * Casts to the type their input already has are dropped first (Hugging
 * Face writes softmax(..., dtype=float32), a no-op in a float32 model).
 * A chain is fused only when every value it makes on the way (all but its
 * last) is read by the next node of the chain alone and is not a graph
 * output, so nothing outside ever needed what the fusion drops; the
 * constants it needs must be known at load. The internal operators are
 * defined for every float type on the host and CUDA backends, so a fused
 * graph plans wherever the unfused one did.
 */
#ifndef CEP_DAEMON_FUSE_XFMR_H
#define CEP_DAEMON_FUSE_XFMR_H

#include "engine/graph.h"

/*
 * Runs the fusions above over the sorted, inferred graph g, then removes
 * what they left dead and sorts g again. Returns 0, or CEP_ENOMEM (the
 * graph is then unusable and the load fails), or an error of
 * graph_simplify().
 */
int fuse_xfmr(struct graph *g);

#endif
