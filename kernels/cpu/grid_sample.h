/*
 * grid_sample.h — GridSample's attributes read once, for the reference
 * kernel (kernels/cpu/grid_sample.c) and the CUDA launcher
 * (kernels/cuda/grid_sample.c), which must agree on them.
 */
#ifndef CEP_KERNELS_CPU_GRID_SAMPLE_H
#define CEP_KERNELS_CPU_GRID_SAMPLE_H

#include <stdbool.h>

#include "kernels/ops.h"

#define GRID_SAMPLE_MAX_DIMS (CEP_MAX_RANK - 2) /* spatial dims */

/* The values are those of the device's GS_* (kernels/cuda/grid_sample.cu). */
enum cpu_gs_mode {
	CPU_GS_LINEAR = 0,     /* "bilinear" before opset 20 */
	CPU_GS_NEAREST = 1,
	CPU_GS_CUBIC = 2,      /* "bicubic" before opset 20 */
};

enum cpu_gs_padding {
	CPU_GS_ZEROS = 0,
	CPU_GS_BORDER = 1,
	CPU_GS_REFLECTION = 2,
};

struct cpu_grid_sample {
	enum cpu_gs_mode mode;
	enum cpu_gs_padding padding;
	bool align_corners;
};

/*
 * Reads mode, padding_mode and align_corners of GridSample node into *a:
 * the mode names of the node's opset (bilinear, nearest, bicubic before
 * 20; linear, nearest, cubic from 20). Returns 0, or CEP_EMODEL with a
 * message naming the attribute and the values it takes.
 */
int cpu_grid_sample_attrs(const struct op_node *node, struct cpu_grid_sample *a);

#endif
