/*
 * variadic_wide.cu — the kernels of variadic.cuh for float64 (Min, Max,
 * Sum and Mean) and int16, uint16, uint32 and uint64 (Min and Max),
 * apart from variadic.cu so that a model without them never waits for
 * their compile. Launcher: kernels/cuda/variadic.c.
 */
#include "variadic.cuh"

#define VAR_WIDE_INTS(name, OP)                 \
	VAR_KERNEL(name, OP, i16, i16)          \
	VAR_KERNEL(name, OP, u16, u16)          \
	VAR_KERNEL(name, OP, u32, u32)          \
	VAR_KERNEL(name, OP, u64, u64)

VAR_KERNEL(min, VAR_MIN, double, f64)
VAR_WIDE_INTS(min, VAR_MIN)
VAR_KERNEL(max, VAR_MAX, double, f64)
VAR_WIDE_INTS(max, VAR_MAX)
VAR_KERNEL(sum, VAR_SUM, double, f64)
VAR_KERNEL(mean, VAR_MEAN, double, f64)
