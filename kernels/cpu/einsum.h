/*
 * einsum.h — an Einsum equation resolved against its operands' shapes,
 * shared by the reference kernel (kernels/cpu/einsum.c) and the CUDA
 * launcher (kernels/cuda/einsum.c).
 *
 * Every distinct index of the equation becomes a loop: first one per
 * output dimension, in the output's order (an ellipsis standing for its
 * dimensions), then one per index summed over, in the order the indices
 * first appear. Each operand axis names the loop it walks: a repeated
 * index of one operand (a diagonal, a trace) names one loop from two
 * axes, whose strides then add up. A size-1 axis against a larger loop
 * broadcasts (stride 0).
 *
 *	output[out loops] = sum over summed loops of prod over operands of
 *	                    operand[sum over its axes of index * stride]
 */
#ifndef CEP_KERNELS_CPU_EINSUM_H
#define CEP_KERNELS_CPU_EINSUM_H

#include <stdint.h>

#include "kernels/ops.h"

#define EINSUM_MAX_OPS 8                      /* operands */
#define EINSUM_MAX_SUMMED 8                   /* indices summed over */
#define EINSUM_MAX_LOOPS (CEP_MAX_RANK + EINSUM_MAX_SUMMED)
#define EINSUM_MAX_EQUATION 512               /* characters */

struct cpu_einsum {
	int8_t n_ops;
	int8_t n_out;                             /* output dims: loops [0, n_out) */
	int8_t n_loops;                           /* n_out plus the summed ones */
	int8_t rank[EINSUM_MAX_OPS];              /* (n_ops) */
	int8_t loop[EINSUM_MAX_OPS][CEP_MAX_RANK];/* (n_ops, rank) the loop of each axis */
	int64_t size[EINSUM_MAX_LOOPS];           /* (n_loops); symbolic during inference */
};

/*
 * Resolves node's equation against the n_in operands in (ranks known,
 * dims fixed or symbolic) into *e. Returns 0; CEP_EMODEL with a message
 * for an equation that is not valid (a character other than a letter,
 * ',', '->', '...' or a space, a term count other than the operand
 * count, a term whose indices do not match its operand's rank, ellipses
 * of different lengths, an output index that is not an input's or is
 * repeated, an ellipsis in the inputs but not in an explicit output);
 * CEP_ESHAPE when the sizes of one index differ (and neither is 1
 * between operands); CEP_EUNSUPPORTED past EINSUM_MAX_OPS operands,
 * CEP_MAX_RANK output dims or EINSUM_MAX_SUMMED summed indices.
 */
int cpu_einsum_parse(const struct op_node *node, const struct op_tensor *in, int n_in,
		     struct cpu_einsum *e);

/* The element stride of every operand along every loop (0 where it does
 * not walk it or broadcasts) for operands in, whose dims are fixed. */
void cpu_einsum_strides(const struct cpu_einsum *e, const struct op_tensor *in,
			int64_t stride[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS]);

#endif
