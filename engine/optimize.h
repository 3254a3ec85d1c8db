/*
 * optimize.h — graph rewrites run once per model at load: constant folding
 * (nodes whose inputs are all known run once on the host kernels; Shape of
 * a value with fixed dims folds too, so exported Shape -> Gather -> Concat
 * -> Reshape chains disappear), then Identity and dead-node removal, then
 * the fusions of engine/fuse.h (BatchNormalization folded into a Conv;
 * Conv + Relu and Conv + Add + Relu as the internal FusedConv) and of
 * engine/fuse_xfmr.h (GELU chains, MatMul + bias (+ activation) as
 * MatMulBias, the attention chain as Attention).
 */
#ifndef CEP_DAEMON_OPTIMIZE_H
#define CEP_DAEMON_OPTIMIZE_H

#include "engine/graph.h"

/* Outputs larger than this are left to run time rather than folded, so a
 * ConstantOfShape of gigabytes does not balloon the model in memory. */
#define OPTIMIZE_FOLD_MAX_BYTES (64u << 20)

/*
 * Folds, fuses (the transformer chains of engine/fuse_xfmr.h: GELU,
 * MatMul + bias + activation, attention), simplifies and re-sorts the
 * sorted, inferred graph g. Returns 0 or an error: a folded kernel that
 * fails (the model computes something invalid from its own constants)
 * fails the load with the node named.
 */
int optimize_graph(struct graph *g);

#endif
