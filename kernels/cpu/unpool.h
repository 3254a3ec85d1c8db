/*
 * unpool.h — the geometry of MaxUnpool, read once for the reference
 * kernel (kernels/cpu/unpool.c) and the device one (kernels/cuda/unpool.c):
 * the shape the indices count in, inferred from kernel_shape, strides and
 * pads, into which the output (that shape, or the larger one the
 * output_shape input names) is laid from its first element.
 */
#ifndef CEP_KERNELS_CPU_UNPOOL_H
#define CEP_KERNELS_CPU_UNPOOL_H

#include "kernels/cpu/cpu.h"

/*
 * Stores in *inferred the shape (rank and dims of x, whose N and C are
 * kept) that MaxUnpool node over x infers from its attributes, where a
 * dim of x that is not fixed stays as it is. Returns 0, or CEP_EMODEL
 * naming the attribute (kernel_shape missing, a count that does not match
 * the spatial rank, a size below 1, a negative pad), or CEP_ESHAPE when
 * an inferred size is below 1 or x has rank below 3.
 */
int cpu_unpool_inferred(const struct op_node *node, const struct op_tensor *x,
			struct op_tensor *inferred);

#endif
