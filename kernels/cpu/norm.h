/*
 * norm.h — what the reference normalizations (kernels/cpu/norm.c) share
 * with the device ones: the parameters of the layer normalizations and of
 * LRN, read from a node once, so that kernels/cuda/norm.c and lrn.c
 * normalize the same rows with the same constants.
 */
#ifndef CEP_KERNELS_CPU_NORM_H
#define CEP_KERNELS_CPU_NORM_H

#include "kernels/cpu/cpu.h"

/*
 * The layer normalizations: ai.onnx LayerNormalization, and the forms
 * onnxruntime adds (SimplifiedLayerNormalization, in ai.onnx and
 * com.microsoft; com.microsoft SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization). Each normalizes the rows of a matrix
 * view of its input; a form says where its operands sit among the node's
 * inputs and outputs (-1: it has none) and whether the row's mean is
 * subtracted (the simplified, root-mean-square forms do not). The skip
 * forms first add skip (and bias) to the input, in float32 (double for
 * float64), one addition at a time: that sum is what is normalized and
 * what input_skip_bias_sum holds.
 */
struct cpu_ln_form {
	const char *op;
	bool rms;                /* y = x / sqrt(mean(x^2) + eps) * scale */
	int8_t skip, add;        /* inputs added to X before: skip, bias */
	int8_t scale, beta;      /* inputs applied after */
	int8_t mean, inv, sum;   /* outputs besides Y (index 0) */
	float eps;               /* epsilon's default */
};

/* The form of node's operator, or NULL when it is none of them. */
const struct cpu_ln_form *cpu_ln_form_of(const struct op_node *node);

/* How Scale or B, broadcast one way to X, is read. */
enum cpu_ln_mode {
	CPU_LN_ABSENT,  /* not given */
	CPU_LN_ONE,     /* one element for everything */
	CPU_LN_COLUMN,  /* exactly the normalized dimensions: by column */
	CPU_LN_BCAST,   /* anything else: through strides over X's dims */
};

/* A layer normalization over X of fixed dims seen as (rows, cols). */
struct cpu_ln {
	const struct cpu_ln_form *form;
	int64_t rows, cols;
	int64_t skip_rows;              /* rows of skip, repeated over X's; 0: none */
	double eps;
	int32_t rank;                   /* of X */
	int8_t smode, bmode;            /* enum cpu_ln_mode of Scale and B */
	int8_t stash_bf16;              /* Mean and InvStdDev are bfloat16 */
	int64_t dims[CEP_MAX_RANK];     /* (rank) X's */
	int64_t sstride[CEP_MAX_RANK];  /* (rank) Scale's element strides along
	                                 * X's dims, 0 where it broadcasts */
	int64_t bstride[CEP_MAX_RANK];  /* (rank) B's */
};

/* Fills p for node over its inputs in (n_in of them, dims fixed) as
 * inference accepted them. Returns 0, or CEP_EMODEL for an attribute that
 * inference should have refused. */
int cpu_ln_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		struct cpu_ln *p);

/* The element of Scale (which 0) or B (which 1) that element e of X
 * (row-major, column col of its row) is combined with. */
static inline int64_t cpu_ln_param_at(const struct cpu_ln *p, int which, int64_t e,
				      int64_t col)
{
	const int64_t *stride = which ? p->bstride : p->sstride;
	int mode = which ? p->bmode : p->smode;
	int64_t off = 0;
	int d;

	if (mode == CPU_LN_ONE)
		return 0;
	if (mode == CPU_LN_COLUMN)
		return col;
	for (d = p->rank - 1; d >= 0; d--) {
		off += (e % p->dims[d]) * stride[d];
		e /= p->dims[d];
	}
	return off;
}

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
