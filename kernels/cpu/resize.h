/*
 * resize.h — what the reference Resize and Upsample (kernels/cpu/resize.c)
 * share with the device ones (kernels/cuda/resize.c): the attributes read
 * and checked once, the target sizes and scales from scales or sizes
 * (with keep_aspect_ratio_policy), the bound on the taps of an
 * interpolation, and the rounding of a result into its type. The device
 * kernels compute the coordinates and weights with the same formulas
 * (kernels/cuda/resize.cu); the enums' values are what they take.
 */
#ifndef CEP_KERNELS_CPU_RESIZE_H
#define CEP_KERNELS_CPU_RESIZE_H

#include "kernels/cpu/cpu.h"

enum cpu_resize_mode { CPU_RESIZE_NEAREST, CPU_RESIZE_LINEAR, CPU_RESIZE_CUBIC };

enum cpu_resize_coord {
	CPU_RESIZE_HALF_PIXEL,
	CPU_RESIZE_HALF_PIXEL_SYMMETRIC,
	CPU_RESIZE_PYTORCH_HALF_PIXEL,
	CPU_RESIZE_ALIGN_CORNERS,
	CPU_RESIZE_ASYMMETRIC,
	CPU_RESIZE_TF_HALF_PIXEL_FOR_NN,
	CPU_RESIZE_TF_CROP_AND_RESIZE,
};

enum cpu_resize_round {
	CPU_RESIZE_ROUND_PREFER_FLOOR,
	CPU_RESIZE_ROUND_PREFER_CEIL,
	CPU_RESIZE_FLOOR,
	CPU_RESIZE_CEIL,
	CPU_RESIZE_ROUND_OPSET10, /* ceil when shrinking, floor otherwise */
};

enum cpu_resize_policy {
	CPU_RESIZE_STRETCH,
	CPU_RESIZE_NOT_LARGER,
	CPU_RESIZE_NOT_SMALLER,
};

/* The attributes of a node, read and checked. */
struct cpu_resize_attrs {
	enum cpu_resize_mode mode;
	enum cpu_resize_coord coord;
	enum cpu_resize_round round;
	enum cpu_resize_policy policy;
	bool antialias, exclude_outside;
	double cubic_a, extrapolation;
	int n_axes;                /* the dimensions scales, sizes and roi are for */
	int axes[CEP_MAX_RANK];    /* (n_axes); all of them without the attribute */
};

/* Where the output comes from, per dimension of the input. */
struct cpu_resize_target {
	double scale[CEP_MAX_RANK];     /* output over input; 1 where not resized */
	int64_t out[CEP_MAX_RANK];      /* output size, possibly symbolic */
	bool resized[CEP_MAX_RANK];     /* named by axes */
};

/* Whether node has Resize's first form: Resize 10, or the Upsample (7 to
 * 9) it replaced, which means the same (no roi, no sizes, asymmetric
 * coordinates). */
bool cpu_resize_legacy(const struct op_node *node);

/* Reads the attributes of node into a; rank (-1: unknown) normalizes the
 * axes. Returns 0, or CEP_EMODEL with a message naming the attribute (an
 * unknown mode, one the opset does not have, a bad axis). */
int cpu_resize_attrs_get(const struct op_node *node, int rank, struct cpu_resize_attrs *a);

/* Input k of in (n_in inputs) when present and not empty; NULL otherwise. */
const struct op_tensor *cpu_resize_input(const struct op_tensor *in, int n_in, int k);

/*
 * Works out the target of a Resize of in[0] (rank known) from scales,
 * sizes or (Upsample before opset 9) the scales attribute into t. Returns
 * 1 when their values are not known (data NULL), after checking their
 * types and lengths; 0 when t is filled in (output sizes symbolic or
 * OP_DIM_UNKNOWN where the input's are); or an error with a message (a
 * scale not above 0, a size out of range, scales and sizes both or
 * neither given, a dimension beyond OP_MAX_NUMEL).
 */
int cpu_resize_target_get(const struct op_node *node, const struct cpu_resize_attrs *a,
			  const struct op_tensor *in, int n_in, struct cpu_resize_target *t);

/*
 * The most taps a dimension of n inputs resized to out can need (linear or
 * cubic), known before the scales are (prepare): the scale is then at
 * least out / (2n), because sizes round half up and scales floor.
 */
int64_t cpu_resize_taps_bound(const struct cpu_resize_attrs *a, int64_t n, int64_t out);

/* Stores v into element i of y: floats as they are, integers rounded half
 * to even and saturated, as the reference casts. */
void cpu_resize_store(const struct op_tensor *y, int64_t i, double v);

#endif
