/*
 * reduce.cu — the Reduce* operators over any set of axes, with the
 * semantics of the reference kernels (kernels/cpu/reduce.c): ReduceSum,
 * ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum and ReduceLogSumExp. Float types
 * accumulate in double, integers in int64 with sums and products wrapping
 * as numpy's do, uint64 ordering and dividing as unsigned
 * (ReduceLogSumExp is computed in double for every type); a
 * NaN wins a maximum or a minimum; an empty reduction gives the
 * operator's identity: 0, 1 for the product, the lowest or highest value
 * of the type, -inf for the logs, NaN for a float mean.
 *
 * Which dimensions are reduced comes either as a bit mask fixed when the
 * plan was made (the axes attribute, or an empty axes input), or from the
 * axes input itself, read here on the device so that its value never
 * needs to be on the host: a bad axis is latched into the fault record.
 * Each output element gathers its `count` inputs through the reduced
 * dims; with many of them a block takes the element and combines through
 * warp shuffles, with few a thread does. ReduceLogSumExp makes two sweeps
 * over its inputs, the maximum first, so that exp() never overflows.
 * Here the types of the first device kernels; float64, uint32 and uint64
 * are reduce_wide.cu's. Launcher: kernels/cuda/reduce.c. Kernels:
 * reduce_{sum,mean,max,min,prod,l1,l2,sumsq,logsum,lse}_{block,thread}_<type>.
 */
#include "reduce.cuh"

/* The types every Reduce* operator takes at some opset... */
#define REDUCE_TYPES(name, OP)              \
	REDUCE_KERNEL(name, OP, float, f32) \
	REDUCE_KERNEL(name, OP, f16, f16)   \
	REDUCE_KERNEL(name, OP, bf16, bf16) \
	REDUCE_KERNEL(name, OP, i64, i64)   \
	REDUCE_KERNEL(name, OP, i32, i32)

/* ...and those only ReduceMax and ReduceMin take. */
#define REDUCE_TYPES_MINMAX(name, OP)       \
	REDUCE_TYPES(name, OP)              \
	REDUCE_KERNEL(name, OP, i8, i8)     \
	REDUCE_KERNEL(name, OP, u8, u8)     \
	REDUCE_KERNEL(name, OP, b8, bool)

REDUCE_TYPES(sum, RED_SUM)
REDUCE_TYPES(mean, RED_MEAN)
REDUCE_TYPES_MINMAX(max, RED_MAX)
REDUCE_TYPES_MINMAX(min, RED_MIN)
REDUCE_TYPES(prod, RED_PROD)
REDUCE_TYPES(l1, RED_L1)
REDUCE_TYPES(l2, RED_L2)
REDUCE_TYPES(sumsq, RED_SUMSQ)
REDUCE_TYPES(logsum, RED_LOGSUM)
REDUCE_TYPES(lse, RED_LSE)
