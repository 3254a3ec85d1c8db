/*
 * reduce_wide.cu — the Reduce* operators (reduce.cuh) for the types of
 * their definitions that the first device kernels did not have: float64
 * (accumulated in double), uint32 and uint64 (in int64, uint64 ordered
 * and divided as unsigned). Compiled apart from reduce.cu, so that a
 * model without them never waits for these. Launcher:
 * kernels/cuda/reduce.c. Kernels as reduce.cu's: reduce_sum_block_f64,
 * reduce_max_thread_u64, ...
 */
#include "reduce.cuh"

#define REDUCE_TYPES_WIDE(name, OP)          \
	REDUCE_KERNEL(name, OP, double, f64) \
	REDUCE_KERNEL(name, OP, u64, u64)    \
	REDUCE_KERNEL(name, OP, u32, u32)

REDUCE_TYPES_WIDE(sum, RED_SUM)
REDUCE_TYPES_WIDE(mean, RED_MEAN)
REDUCE_TYPES_WIDE(max, RED_MAX)
REDUCE_TYPES_WIDE(min, RED_MIN)
REDUCE_TYPES_WIDE(prod, RED_PROD)
REDUCE_TYPES_WIDE(l1, RED_L1)
REDUCE_TYPES_WIDE(l2, RED_L2)
REDUCE_TYPES_WIDE(sumsq, RED_SUMSQ)
REDUCE_TYPES_WIDE(logsum, RED_LOGSUM)
REDUCE_TYPES_WIDE(lse, RED_LSE)
