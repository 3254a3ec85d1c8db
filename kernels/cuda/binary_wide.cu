/*
 * binary_wide.cu — Add, Sub, Mul and Div (binary.cuh) for the types the
 * first device kernels did not have: float64 (in double), int16, uint16,
 * uint32 and uint64 (in int64, uint64 dividing as unsigned). Compiled
 * apart from binary.cu, so that a model without them never waits for
 * these. Launcher: kernels/cuda/binary.c. Kernels as binary.cu's:
 * add_f64, add_u64_ff, ...
 */
#include "binary.cuh"

#define BINARY_TYPES_WIDE(name, OP)          \
	BINARY_KERNEL(name, OP, double, f64) \
	BINARY_KERNEL(name, OP, i16, i16)    \
	BINARY_KERNEL(name, OP, u64, u64)    \
	BINARY_KERNEL(name, OP, u32, u32)    \
	BINARY_KERNEL(name, OP, u16, u16)

BINARY_TYPES_WIDE(add, BIN_ADD)
BINARY_TYPES_WIDE(sub, BIN_SUB)
BINARY_TYPES_WIDE(mul, BIN_MUL)
BINARY_TYPES_WIDE(div, BIN_DIV)
