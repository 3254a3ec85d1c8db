/*
 * pad.h — what the reference Pad (kernels/cpu/pad.c) shares with the
 * device one (kernels/cuda/pad.c): its mode and its pads, read from a node
 * and its inputs and checked once.
 */
#ifndef CEP_KERNELS_CPU_PAD_H
#define CEP_KERNELS_CPU_PAD_H

#include "kernels/cpu/cpu.h"

enum cpu_pad_mode {
	CPU_PAD_CONSTANT,
	CPU_PAD_REFLECT,
	CPU_PAD_EDGE,
	CPU_PAD_WRAP,
};

/* Pads and crops of one tensor, per dimension. */
struct cpu_pad_amounts {
	int64_t begin[CEP_MAX_RANK]; /* elements added before; negative crops */
	int64_t end[CEP_MAX_RANK];   /* elements added after; negative crops */
};

/* Reads node's mode into *mode. Returns 0, or CEP_EMODEL with a message
 * for an unknown mode or one its opset does not have (wrap before 19). */
int cpu_pad_mode_get(const struct op_node *node, enum cpu_pad_mode *mode);

/*
 * Reads the pads of a node whose data has the given rank into *a: the
 * attribute before opset 11 (paddings at opset 1), the pads input (with the axes input from 18)
 * since, in (n_in inputs) holding their values where known. Returns 1
 * when they are not known (an input whose data is NULL: computed at run
 * time, or on the device), 0 when they are, or an error naming what is
 * wrong (a count that does not fit the axes, a pad beyond OP_MAX_NUMEL,
 * a bad axis, a type other than int32 or int64).
 */
int cpu_pad_amounts_get(const struct op_node *node, const struct op_tensor *in, int n_in,
			int rank, struct cpu_pad_amounts *a);

#endif
