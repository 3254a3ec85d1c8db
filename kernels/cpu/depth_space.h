/*
 * depth_space.h — what the reference DepthToSpace and SpaceToDepth
 * (kernels/cpu/depth_space.c) share with their device kernel
 * (kernels/cuda/depth_space.c): both are one permutation of six
 * dimensions, read from the node and the input's fixed shape once.
 */
#ifndef CEP_KERNELS_CPU_DEPTH_SPACE_H
#define CEP_KERNELS_CPU_DEPTH_SPACE_H

#include "kernels/cpu/cpu.h"

/*
 * The output of either operator, seen as six dimensions in row-major
 * order, and for each the step in input elements that moving along it
 * takes: output element (i0, ..., i5) is input element
 * sum(i_d * stride[d]).
 */
struct cpu_depth_space {
	int64_t dims[6];    /* (6) the output's layout, product = its elements */
	int64_t stride[6];  /* (6) input elements per step along each */
};

/*
 * Fills *g for node (DepthToSpace or SpaceToDepth; blocksize and mode
 * already checked by the schema's inference) over x, a 4-D input of fixed
 * shape (N, C, H, W).
 */
void cpu_depth_space_init(struct cpu_depth_space *g, const struct op_node *node,
			  const struct op_tensor *x);

#endif
