/*
 * loss.h — what the reference losses (kernels/cpu/loss.c:
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss) share with the
 * device ones (kernels/cuda/loss.c): the parameters of a node over fixed
 * shapes, read once, so both backends pick the same elements, weights and
 * reduction.
 */
#ifndef CEP_KERNELS_CPU_LOSS_H
#define CEP_KERNELS_CPU_LOSS_H

#include "kernels/cpu/cpu.h"

/* The reduction attribute's values. */
enum cpu_loss_reduction {
	CPU_LOSS_NONE,   /* the loss per position, of the labels' shape */
	CPU_LOSS_SUM,    /* a scalar: the sum */
	CPU_LOSS_MEAN,   /* a scalar: the sum over the sum of the weights */
};

/*
 * A loss over scores (N, C, D1..Dk) and labels (N, D1..Dk): position
 * (n, d) reads class labels[n, d] of the scores at n * C * inner + d,
 * its C classes inner apart. A position whose label is ignore_index adds
 * nothing and weighs nothing; every other weighs weights[label] (1
 * without weights).
 */
struct cpu_loss {
	int64_t batch, classes, inner;  /* N, C, D1 * ... * Dk */
	int64_t ignore;                 /* ignore_index, when has_ignore */
	int32_t has_ignore;
	int32_t weighted;               /* the weights input is present */
	int32_t reduction;              /* enum cpu_loss_reduction */
	int32_t pad;
};

/* Fills p for node over scores (rank >= 2, dims fixed) and whether
 * weights are given. Cannot fail (inference checked the attributes). */
void cpu_loss_read(const struct op_node *node, const struct op_tensor *scores, bool weighted,
		   struct cpu_loss *p);

#endif
