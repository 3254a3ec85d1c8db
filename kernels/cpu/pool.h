/*
 * pool.h — the attributes of MaxPool, AveragePool and LpPool, read and checked
 * once for the reference kernels (kernels/cpu/pool.c) and the device ones
 * (kernels/cuda/pool.c): the window of kernels/cpu/window.h with the
 * flags of the node's opset and its pads resolved for a fixed input, and
 * the attributes that are not the window's.
 */
#ifndef CEP_KERNELS_CPU_POOL_H
#define CEP_KERNELS_CPU_POOL_H

#include "kernels/cpu/window.h"

/* A pool over a fixed input. */
struct cpu_pool {
	struct cpu_window w;    /* pads resolved */
	bool is_max;            /* MaxPool */
	bool is_lp;             /* LpPool; neither: AveragePool */
	bool count_include_pad; /* AveragePool: divide by the whole window */
	bool column_major;      /* MaxPool: storage_order 1 for Indices */
	float p;                /* LpPool: the norm's exponent, > 0 */
};

/*
 * Reads the pool of node (MaxPool, AveragePool or LpPool) over x, whose dims are
 * fixed (N, C and 1 to CPU_WINDOW_MAX spatial ones), into p. Returns 0 or
 * the error of cpu_window_parse() or cpu_window_out_dim(), with its
 * message, or CEP_EMODEL for an LpPool p of the wrong type or not
 * positive.
 */
int cpu_pool_read(const struct op_node *node, const struct op_tensor *x, struct cpu_pool *p);

#endif
