/*
 * norm.h — what the reference normalizations (kernels/cpu/norm.c) share
 * with the device ones: LRN's parameters, read from a node once, so that
 * kernels/cuda/lrn.c sums the same channels with the same constants.
 */
#ifndef CEP_KERNELS_CPU_NORM_H
#define CEP_KERNELS_CPU_NORM_H

#include "kernels/cpu/cpu.h"

/* LRN over X of fixed dims (N, C, D1, ..., Dn). */
struct cpu_lrn {
	int64_t batch, channels, inner;  /* X as (N, C, D1 * ... * Dn) */
	int64_t before, after;           /* channels summed below and above */
	double alpha_over_size, beta, bias;
};

/* Fills p from node's attributes (inference checked them) and the dims
 * of x (rank >= 2). Cannot fail. */
void cpu_lrn_read(const struct op_node *node, const struct op_tensor *x, struct cpu_lrn *p);

#endif
