/*
 * binary.cu — elementwise arithmetic with numpy broadcasting: Add, Sub,
 * Mul, Div (binary.cuh) for float32, float16, bfloat16 and int64, int32,
 * int8, uint8; the other types are binary_wide.cu's. Float types are
 * computed in float (float16 and bfloat16 converted on load and store),
 * float64 in double, integers in int64 with two's complement wrapping,
 * stored back at their width (uint64 divides as unsigned); integer
 * division truncates and a division by zero gives 0, as the reference
 * kernels (kernels/cpu/binary.c) do. Launcher: kernels/cuda/binary.c.
 * Kernels: <op>_<type>, e.g. add_f32, for any broadcast, and
 * <op>_<type>_<a><b> for the fast paths of elem.cuh, a and b each f (the
 * output's shape), r (a row over the last dim) or s (one element):
 * add_f16_ff, mul_f32_fs, div_f32_sf.
 */
#include "binary.cuh"

#define BINARY_TYPES(name, OP)               \
	BINARY_KERNEL(name, OP, float, f32)  \
	BINARY_KERNEL(name, OP, f16, f16)    \
	BINARY_KERNEL(name, OP, bf16, bf16)  \
	BINARY_KERNEL(name, OP, i64, i64)    \
	BINARY_KERNEL(name, OP, i32, i32)    \
	BINARY_KERNEL(name, OP, i8, i8)      \
	BINARY_KERNEL(name, OP, u8, u8)

BINARY_TYPES(add, BIN_ADD)
BINARY_TYPES(sub, BIN_SUB)
BINARY_TYPES(mul, BIN_MUL)
BINARY_TYPES(div, BIN_DIV)
