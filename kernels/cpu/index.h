/*
 * index.h — what the reference index operators (kernels/cpu/index.c:
 * GatherND, ScatterND, ScatterElements, Scatter) share with their device
 * kernels (kernels/cuda/index.c): the reduction a scatter applies, read
 * from the node and checked against its opset, and the layout of GatherND
 * and ScatterND (which dimensions an index tuple picks, what a slice is),
 * computed once from fixed shapes.
 */
#ifndef CEP_KERNELS_CPU_INDEX_H
#define CEP_KERNELS_CPU_INDEX_H

#include "kernels/cpu/cpu.h"

/* How a scatter combines an update with the element it lands on. The
 * device kernels number them the same (RED_* of kernels/cuda/index.cu)
 * and carry cpu_index_red_name() in their names. */
enum cpu_index_red {
	CPU_INDEX_RED_NONE,     /* replaced: the last update in index order wins */
	CPU_INDEX_RED_ADD,
	CPU_INDEX_RED_MUL,
	CPU_INDEX_RED_MAX,      /* NaN wins */
	CPU_INDEX_RED_MIN,      /* NaN wins */
};

/*
 * Reads the reduction attribute of a ScatterND, ScatterElements or Scatter
 * node into *red. Returns 0, or CEP_EMODEL with a message naming the
 * operator for a value that is not one of none, add, mul, max, min, or one
 * its opset does not have yet (any reduction before 16, max and min
 * before 18).
 */
int cpu_index_red_get(const struct op_node *node, enum cpu_index_red *red);

/* The name of red in kernel names and messages: "none", "add", ... */
const char *cpu_index_red_name(enum cpu_index_red red);

/*
 * Where the index tuples of a GatherND or ScatterND point. data is seen as
 * (batch, dims[0], ..., dims[k-1], slice): the tuple of length k of each
 * of the `tuples` entries of a batch picks one slice of `slice` elements.
 * ScatterND has no batch (batch 1, first 0).
 */
struct cpu_index_nd {
	int k;                          /* tuple length, 1..rank - first */
	int first;                      /* data's dimension tuple entry 0 indexes */
	int64_t batch;                  /* product of the batch dimensions */
	int64_t tuples;                 /* index tuples per batch */
	int64_t slice;                  /* elements of one slice */
	int64_t dims[CEP_MAX_RANK];     /* (k) data's sizes along the indexed dims */
	int64_t stride[CEP_MAX_RANK];   /* (k) slices per step along them */
};

/*
 * Fills *g for data and indices (shapes fixed and already checked by the
 * schema's inference) with batch_dims first: GatherND's attribute, 0 for
 * ScatterND.
 */
void cpu_index_nd_init(struct cpu_index_nd *g, const struct op_tensor *data,
		       const struct op_tensor *idx, int first);

/* The batch_dims of a GatherND node (0 before opset 12). */
static inline int64_t cpu_index_batch_dims(const struct op_node *node)
{
	return node->opset >= 12 ? op_attr_int(node, "batch_dims", 0) : 0;
}

#endif
