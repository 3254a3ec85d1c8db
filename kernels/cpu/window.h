/*
 * window.h — the sliding window of Conv and the pooling operators
 * (kernels/cpu/conv.c, kernels/cpu/pool.c): kernel_shape, strides,
 * dilations, pads and auto_pad read from a node, checked once, and the
 * output size and effective pads of each spatial dimension worked out from
 * them, symbolic input sizes included. Internal to kernels/cpu, and shared
 * with the device pools of kernels/cuda/pool.c through kernels/cpu/pool.h.
 *
 * Tensors are N x C x D1 x ... x Dn with n (the spatial rank) from 1 to
 * CPU_WINDOW_MAX; an output dimension is
 *
 *	floor((in + pad_begin + pad_end - ((kernel - 1) * dilation + 1)) / stride) + 1
 *
 * (ceil with ceil_mode, as long as the last window still starts inside the
 * input or its leading pad), ceil(in / stride) for SAME_UPPER and
 * SAME_LOWER, whose pads are then whatever makes that fit, and the NOTSET
 * formula without pads for VALID.
 */
#ifndef CEP_KERNELS_CPU_WINDOW_H
#define CEP_KERNELS_CPU_WINDOW_H

#include "kernels/cpu/cpu.h"

#define CPU_WINDOW_MAX 3 /* spatial dimensions: 1-D, 2-D and 3-D */

enum cpu_window_pad {
	CPU_WINDOW_NOTSET,
	CPU_WINDOW_SAME_UPPER,
	CPU_WINDOW_SAME_LOWER,
	CPU_WINDOW_VALID,
};

/* What may appear on the node: Conv has no ceil_mode, the pools before
 * opset 10 none, dilations came to MaxPool at 10 and AveragePool at 19. */
enum cpu_window_flags {
	CPU_WINDOW_KERNEL_ATTR = 1u << 0, /* kernel_shape is required */
	CPU_WINDOW_DILATIONS = 1u << 1,
	CPU_WINDOW_CEIL_MODE = 1u << 2,
};

/* A window over n spatial dimensions. Sizes are in elements; a kernel
 * size of OP_DIM_UNKNOWN means it is not known yet (a Conv whose weight
 * shape is symbolic, during inference). */
struct cpu_window {
	int n;                                /* spatial dimensions */
	enum cpu_window_pad auto_pad;
	bool ceil_mode;
	int64_t kernel[CPU_WINDOW_MAX];       /* (n) */
	int64_t stride[CPU_WINDOW_MAX];       /* (n) */
	int64_t dilation[CPU_WINDOW_MAX];     /* (n) */
	int64_t pad_begin[CPU_WINDOW_MAX];    /* (n); auto_pad's once resolved */
	int64_t pad_end[CPU_WINDOW_MAX];      /* (n) */
};

/*
 * Reads the window of node (an operator with n spatial dimensions) into w.
 * kernel (n sizes, may be NULL) is the kernel size the weights imply for a
 * Conv; kernel_shape must then agree with it where both are known. flags
 * says which attributes the operator has at the node's opset. Returns 0,
 * CEP_EMODEL with a message naming the operator and the attribute (a wrong
 * count, a size below 1, a negative pad, an unknown auto_pad, an attribute
 * the opset does not have), or CEP_EUNSUPPORTED when n is not 1 to
 * CPU_WINDOW_MAX.
 */
int cpu_window_parse(const struct op_node *node, int n, const int64_t *kernel,
		     unsigned flags, struct cpu_window *w);

/*
 * The output size of spatial dimension i for an input of size in, which
 * may be symbolic: stored in *out (a symbol is carried when the window
 * keeps the size, OP_DIM_UNKNOWN when it cannot be known yet). For a fixed
 * in, also stores the pads in effect (auto_pad resolved) in w->pad_begin[i]
 * and w->pad_end[i]. Returns 0, or CEP_ESHAPE with a message when the
 * window does not fit in the padded input.
 */
int cpu_window_out_dim(const struct op_node *node, struct cpu_window *w, int i,
		       int64_t in, int64_t *out);

/* A resolved window over fixed shapes, padded out to three spatial dims
 * with leading unit ones so that one loop nest serves 1-D, 2-D and 3-D. */
struct cpu_window_geom {
	int64_t in[3], out[3];         /* input and output spatial sizes */
	int64_t k[3], s[3], d[3];      /* kernel, stride, dilation */
	int64_t pb[3], pe[3];          /* pads in effect */
};

/* Fills g from w (pads resolved) and the spatial dims of x and y. */
void cpu_window_geom_init(const struct cpu_window *w, const struct op_tensor *x,
			  const struct op_tensor *y, struct cpu_window_geom *g);

/*
 * Fills y's spatial dims (2 .. 2 + w->n) from x's through
 * cpu_window_out_dim(), resolving w's pads where x's dims are fixed.
 * Returns 0 or its error.
 */
int cpu_window_out_dims(const struct op_node *node, struct cpu_window *w,
			const struct op_tensor *x, struct op_tensor *y);

#endif
