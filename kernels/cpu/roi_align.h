/*
 * roi_align.h — the attributes of RoiAlign, read and checked once for the
 * reference kernel (kernels/cpu/roi_align.c) and the device one
 * (kernels/cuda/roi_align.c), so that both pool the same bins.
 */
#ifndef CEP_KERNELS_CPU_ROI_ALIGN_H
#define CEP_KERNELS_CPU_ROI_ALIGN_H

#include "kernels/cpu/cpu.h"

/* RoiAlign's attributes at the node's opset. */
struct cpu_roi_align {
	int64_t out_h, out_w;   /* output_height, output_width: >= 1 */
	int64_t sampling_ratio; /* samples per bin side; 0: ceil(bin size) */
	float spatial_scale;    /* from roi coordinates to X's */
	bool max;               /* mode max, else avg */
	bool half_pixel;        /* coordinate_transformation_mode half_pixel
	                         * (opset 16's default), else output_half_pixel */
};

/*
 * Reads the attributes of node (RoiAlign) into r. Returns 0 or CEP_EMODEL
 * with a message naming the attribute: a wrong type, an unknown mode or
 * coordinate_transformation_mode (or one before opset 16), an output size
 * below 1, a negative sampling_ratio.
 */
int cpu_roi_align_read(const struct op_node *node, struct cpu_roi_align *r);

#endif
