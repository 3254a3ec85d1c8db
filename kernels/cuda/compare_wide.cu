/*
 * compare_wide.cu — Equal, Less, LessOrEqual, Greater and GreaterOrEqual
 * (compare.cuh) for the types the first device kernels did not have:
 * float64 (in double), int16, uint16, uint32 and uint64 (in int64, uint64
 * ordered as unsigned). Compiled apart from compare.cu, so that a model
 * without them never waits for these. Launcher: kernels/cuda/compare.c.
 * Kernels as compare.cu's: less_f64, equal_u64_fs, ...
 */
#include "compare.cuh"

#define COMPARE_TYPES_WIDE(name, OP)            \
	COMPARE_KERNEL(name, OP, double, f64)   \
	COMPARE_KERNEL(name, OP, i16, i16)      \
	COMPARE_KERNEL(name, OP, u64, u64)      \
	COMPARE_KERNEL(name, OP, u32, u32)      \
	COMPARE_KERNEL(name, OP, u16, u16)

COMPARE_TYPES_WIDE(equal, CMP_EQ)
COMPARE_TYPES_WIDE(less, CMP_LT)
COMPARE_TYPES_WIDE(lessorequal, CMP_LE)
COMPARE_TYPES_WIDE(greater, CMP_GT)
COMPARE_TYPES_WIDE(greaterorequal, CMP_GE)
