/*
 * normalize.h — what the reference kernels of kernels/cpu/normalize.c
 * (InstanceNormalization, GroupNormalization, RMSNormalization,
 * LpNormalization) share with the device ones of kernels/cuda/normalize.c:
 * each operator's parameters, read from a node and fixed shapes once, so
 * that both backends normalize the same elements with the same constants.
 * Inference has checked the attributes; the read functions check what only
 * fixed shapes tell.
 */
#ifndef CEP_KERNELS_CPU_NORMALIZE_H
#define CEP_KERNELS_CPU_NORMALIZE_H

#include "kernels/cpu/cpu.h"

/* InstanceNormalization and GroupNormalization over X of (N, C, D1..Dn):
 * row r = n * groups + g holds the channels g * per_group .. of sample n,
 * contiguous, and is normalized as one. */
struct cpu_groupnorm {
	int64_t rows;         /* N * groups */
	int64_t cols;         /* per_group * inner: elements of a row */
	int64_t groups;
	int64_t per_group;    /* channels of a group, C / groups */
	int64_t inner;        /* D1 * ... * Dn */
	double eps;
	bool by_group;        /* GroupNormalization 18: scale and bias per group,
	                       * else per channel */
};

/*
 * Fills p for node (InstanceNormalization: a group per channel) over x
 * (rank >= 2, dims fixed) with scale of n_scale elements (and bias as
 * many). Returns 0, or CEP_ESHAPE with a message when the channels do not
 * split into the groups or scale has the wrong size.
 */
int cpu_groupnorm_read(const struct op_node *node, const struct op_tensor *x,
		       int64_t n_scale, struct cpu_groupnorm *p);

/* How RMSNormalization's Scale, broadcast one way to X, is indexed. */
enum cpu_rms_mode {
	CPU_RMS_ONE,     /* one element for everything */
	CPU_RMS_COLUMN,  /* exactly the normalized dimensions: by column */
	CPU_RMS_BCAST,   /* anything else: through stride over X's dims */
};

/* RMSNormalization over X seen as (rows, cols), split at axis. */
struct cpu_rms {
	int64_t rows, cols;
	double eps;
	int32_t rank;                  /* of X */
	int32_t mode;                  /* enum cpu_rms_mode */
	int64_t dims[CEP_MAX_RANK];    /* (rank) X's */
	int64_t stride[CEP_MAX_RANK];  /* (rank) Scale's element strides along X's
	                                * dims; 0 where it broadcasts */
};

/* Fills p for node over x and scale (dims fixed, scale broadcasting one
 * way to x as inference checked). Returns 0 or CEP_EMODEL for an axis out
 * of range. */
int cpu_rms_read(const struct op_node *node, const struct op_tensor *x,
		 const struct op_tensor *scale, struct cpu_rms *p);

/* The element of Scale that element e of X (row-major) is multiplied by. */
static inline int64_t cpu_rms_scale_at(const struct cpu_rms *p, int64_t e)
{
	int64_t off = 0;
	int d;

	if (p->mode == CPU_RMS_ONE)
		return 0;
	if (p->mode == CPU_RMS_COLUMN)
		return e % p->cols;
	for (d = p->rank - 1; d >= 0; d--) {
		off += (e % p->dims[d]) * p->stride[d];
		e /= p->dims[d];
	}
	return off;
}

/* LpNormalization along axis: X seen as (outer, n, inner) blocks, each
 * column of n elements (inner apart) divided by its p-norm. */
struct cpu_lpnorm {
	int64_t outer, n, inner;
	int32_t p;                     /* 1 or 2 */
};

/* Fills p for node over x (dims fixed). Returns 0 or CEP_EMODEL for an
 * axis out of range. */
int cpu_lpnorm_read(const struct op_node *node, const struct op_tensor *x,
		    struct cpu_lpnorm *p);

#endif
