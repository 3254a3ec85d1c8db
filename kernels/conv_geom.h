/*
 * conv_geom.h — the geometry of one Conv call with every shape fixed,
 * worked out once from the node's attributes (kernel_shape, strides,
 * dilations, pads, auto_pad, group) and the shapes of X and W, for the
 * host kernel (kernels/cpu/conv.c), its fused form and the cuDNN kernel
 * (kernels/cuda/conv.c), so that both backends read the attributes with
 * the same checks and resolve auto_pad to the same pads. The attribute
 * rules themselves are those of the sliding window (kernels/cpu/window.h).
 */
#ifndef CEP_KERNELS_CONV_GEOM_H
#define CEP_KERNELS_CONV_GEOM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu/window.h"
#include "kernels/ops.h"

struct conv_geom {
	struct cpu_window w;                  /* pads resolved (auto_pad too) */
	int n;                                /* spatial dims: 1 to 3 */
	int64_t batch;                        /* images: N of X */
	int64_t c, m;                         /* input and output channels */
	int64_t group;
	int64_t cg, mg;                       /* channels per group: in, out */
	int64_t ks;                           /* kernel size: product of kernel dims */
	int64_t in[CPU_WINDOW_MAX];           /* (n) spatial sizes of X */
	int64_t out[CPU_WINDOW_MAX];          /* (n) spatial sizes of Y */
	int64_t positions;                    /* output positions per image */
};

/*
 * Fills *g for node (a Conv, or a fused Conv with the same attributes)
 * over X x and weights w, whose dims are fixed and already checked by the
 * operator's inference. Returns 0 or the window's error (CEP_EMODEL for a
 * bad attribute, CEP_ESHAPE when the window does not fit), with the
 * message naming the operator.
 */
int conv_geom_init(const struct op_node *node, const struct op_tensor *x,
		   const struct op_tensor *w, struct conv_geom *g);

/* The kernel size the weights imply for n spatial dims (OP_DIM_UNKNOWN
 * where W's rank is not n + 2), for cpu_window_parse(). */
void conv_geom_kernel(const struct op_tensor *w, int n, int64_t *kernel);

/*
 * Reads the activation attribute of a FusedConv node (com.cudaep, made by
 * the optimizer: engine/fuse.c). Returns 0 and sets *relu (when relu is
 * not NULL) for "Relu", the only activation fused today; otherwise
 * CEP_EMODEL with a message naming the value.
 */
int conv_fused_activation(const struct op_node *node, bool *relu);

#endif
