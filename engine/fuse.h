/*
 * fuse.h — load-time fusions of the graph IR, run by optimize_graph()
 * (engine/optimize.h) once constants are folded, on every backend alike:
 *
 *   - a BatchNormalization (inference form, per channel) that is the only
 *     reader of a Conv's output, where the Conv's W and B and the BN's
 *     four parameters are constants, folds into the Conv: new constants
 *     W' = W * a and B' = (B - mean) * a + beta, with a = scale /
 *     sqrt(var + epsilon) per output channel, and the BN disappears;
 *   - a Conv whose output only a Relu reads, and a Conv whose output only
 *     an Add reads, with a tensor Z of the very same type and shape, where
 *     only a Relu reads the sum, become one node of the internal FusedConv
 *     of domain com.cudaep (kernels/cpu/conv.c, kernels/cuda/conv.c): X,
 *     W, B (zeros when the Conv had none) and Z as inputs, the Conv's
 *     attributes plus activation "Relu".
 *
 * No value that is a graph output or that another node reads is fused
 * away. A Conv is fused only where the host has a Conv kernel for its
 * type at its opset, so fusing never accepts what the Conv alone would
 * refuse; FusedConv has a host and a CUDA kernel for every float type, so
 * a fused graph plans wherever the unfused one did. The rewritten Conv
 * keeps its node index and name, so messages still name the user's node.
 */
#ifndef CEP_DAEMON_FUSE_H
#define CEP_DAEMON_FUSE_H

#include "engine/graph.h"

/*
 * Applies the fusions above to the sorted graph g with uses counted (as
 * graph_simplify() leaves it), then simplifies and sorts it again; shapes
 * must be inferred again afterwards. Returns 0, or CEP_ENOMEM (the graph
 * may then be half rewritten and must be discarded).
 */
int fuse_graph(struct graph *g);

#endif
