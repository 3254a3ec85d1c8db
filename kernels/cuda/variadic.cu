/*
 * variadic.cu — the kernels of variadic.cuh for float32, float16,
 * bfloat16, int64, int32, int8 and uint8 (variadic_wide.cu has the other
 * types). Launcher: kernels/cuda/variadic.c.
 */
#include "variadic.cuh"

#define VAR_FLOATS(name, OP)                    \
	VAR_KERNEL(name, OP, float, f32)        \
	VAR_KERNEL(name, OP, f16, f16)          \
	VAR_KERNEL(name, OP, bf16, bf16)

#define VAR_INTS(name, OP)                      \
	VAR_KERNEL(name, OP, i64, i64)          \
	VAR_KERNEL(name, OP, i32, i32)          \
	VAR_KERNEL(name, OP, i8, i8)            \
	VAR_KERNEL(name, OP, u8, u8)

VAR_FLOATS(min, VAR_MIN)
VAR_INTS(min, VAR_MIN)
VAR_FLOATS(max, VAR_MAX)
VAR_INTS(max, VAR_MAX)
VAR_FLOATS(sum, VAR_SUM)
VAR_FLOATS(mean, VAR_MEAN)
