/*
 * convt_geom.h — the transposed sliding window of ConvTranspose and
 * Col2Im, shared by the host kernels (kernels/cpu/conv_transpose.c,
 * kernels/cpu/col2im.c) and the CUDA launchers (kernels/cuda/
 * conv_transpose.c, kernels/cuda/col2im.c), so that both backends read the
 * attributes with the same checks and resolve the output size and pads to
 * the same numbers.
 *
 * Both operators add columns into an image: column entry (k, l) of one
 * channel, kernel position k and block position l (one multi-index each
 * over n spatial dims), lands at image position
 *
 *	o[i] = l[i] * stride[i] - pad_begin[i] + k[i] * dilation[i]
 *
 * when that lies inside the image, and is dropped otherwise. For Col2Im
 * the columns are the input; for ConvTranspose they are the weights times
 * the input (the blocks are X's positions, the image is Y). A
 * ConvTranspose's pads may be negative: an output_shape larger than the
 * full result extends it with positions nothing lands on.
 *
 * ConvTranspose's output size along a dim of input size in, with
 * eff = (kernel - 1) * dilation + 1:
 *
 *	output_shape given:     output_shape[i]; the pads follow from
 *	                        total = stride * (in - 1) + output_padding + eff - out
 *	SAME_UPPER, SAME_LOWER: in * stride, pads from total as above
 *	VALID:                  stride * (in - 1) + output_padding + eff
 *	NOTSET:                 the same minus pad_begin and pad_end
 *
 * and total splits as pad_begin = floor(total / 2) for SAME_UPPER,
 * total - floor(total / 2) otherwise (floor, not truncation: a negative
 * total extends the end). Opset 1's text states this split both ways at
 * once; onnx's own shape inference and reference and onnxruntime apply
 * opset 11's at every opset, and so does cudaep.
 */
#ifndef CEP_KERNELS_CONVT_GEOM_H
#define CEP_KERNELS_CONVT_GEOM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ops.h"

#define CONVT_MAX_DIMS (CEP_MAX_RANK - 2) /* spatial dims */

enum convt_pad {
	CONVT_NOTSET,
	CONVT_SAME_UPPER,
	CONVT_SAME_LOWER,
	CONVT_VALID,
};

/* ConvTranspose's attributes over n spatial dims, checked. */
struct convt_attrs {
	int n;
	enum convt_pad auto_pad;
	bool has_output_shape;
	int64_t kernel[CONVT_MAX_DIMS];        /* (n) OP_DIM_UNKNOWN: not known yet */
	int64_t stride[CONVT_MAX_DIMS];        /* (n) >= 1 */
	int64_t dilation[CONVT_MAX_DIMS];      /* (n) >= 1 */
	int64_t pads[2 * CONVT_MAX_DIMS];      /* (2n) begins, then ends; >= 0 */
	int64_t output_padding[CONVT_MAX_DIMS];/* (n) >= 0 */
	int64_t output_shape[CONVT_MAX_DIMS];  /* (n) when has_output_shape */
};

/*
 * Reads the attributes of ConvTranspose node with n spatial dims into a.
 * kernel (n sizes, entries may be OP_DIM_UNKNOWN) is what W's shape
 * implies; kernel_shape must agree with it where both are known. Returns 0,
 * CEP_EMODEL with a message naming the attribute (a wrong count, a value
 * out of range, an output_padding not below its stride or dilation, an
 * unknown auto_pad, group below 1), or CEP_EUNSUPPORTED when n is not 1 to
 * CONVT_MAX_DIMS.
 */
int convt_attrs_parse(const struct op_node *node, int n, const int64_t *kernel,
		      struct convt_attrs *a);

/*
 * The output size of spatial dim i for an input size in (fixed or
 * symbolic) into *out: a symbol is carried where the size keeps it,
 * OP_DIM_UNKNOWN where it cannot be known yet. For a fixed in, also the
 * pads in effect into *pb and *pe (either may be NULL). Returns 0, or
 * CEP_ESHAPE with a message when the size would be negative.
 */
int convt_out_dim(const struct op_node *node, const struct convt_attrs *a, int i,
		  int64_t in, int64_t *out, int64_t *pb, int64_t *pe);

/*
 * The columns-into-image layout of one call, every size fixed. For
 * Col2Im: image = image_shape, block = block_shape, blocks = the number
 * of block positions along each dim. For ConvTranspose: image = Y's
 * spatial dims, block = the kernel, blocks = X's spatial dims.
 */
struct convt_col2im {
	int n;                                 /* spatial dims */
	int64_t image[CONVT_MAX_DIMS];         /* (n) */
	int64_t block[CONVT_MAX_DIMS];         /* (n) kernel sizes */
	int64_t blocks[CONVT_MAX_DIMS];        /* (n) block positions */
	int64_t stride[CONVT_MAX_DIMS];        /* (n) */
	int64_t dilation[CONVT_MAX_DIMS];      /* (n) */
	int64_t pad_begin[CONVT_MAX_DIMS];     /* (n); may be negative */
	int64_t ks;                            /* product of block: column rows */
	int64_t l;                             /* product of blocks: columns */
	int64_t p;                             /* product of image */
};

/* A ConvTranspose call's geometry: X (N, C, in...), W (C, M / group,
 * kernel...), Y (N, M, out...). */
struct convt_geom {
	struct convt_col2im win;               /* image = out, blocks = in */
	int64_t pad_end[CONVT_MAX_DIMS];       /* (n) in effect; may be negative */
	int64_t batch, c, m, group;
	int64_t cg, mg;                        /* channels per group: in, out */
};

/*
 * Fills *g for ConvTranspose node over x and w, whose dims are fixed and
 * checked by the operator's inference. Returns 0 or convt_attrs_parse()'s
 * or convt_out_dim()'s error.
 */
int convt_geom_init(const struct op_node *node, const struct op_tensor *x,
		    const struct op_tensor *w, struct convt_geom *g);

/*
 * Reads Col2Im's strides, dilations and pads for n spatial dims into w
 * (stride, dilation, pad_begin), and the pads' ends into pad_end (n
 * values). Returns 0, or CEP_EMODEL with a message naming the attribute.
 */
int convt_col2im_attrs(const struct op_node *node, int n, struct convt_col2im *w,
		       int64_t *pad_end);

/*
 * Completes w for a Col2Im whose image and block sizes are set (and the
 * attributes read by convt_col2im_attrs()): the block positions along each
 * dim, and ks, l, p. Returns 0, or CEP_ESHAPE with a message when a block
 * does not fit in the padded image.
 */
int convt_col2im_blocks(const struct op_node *node, struct convt_col2im *w,
			const int64_t *pad_end);

#endif
