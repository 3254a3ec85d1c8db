/*
 * unary.cu — the kernels of unary.cuh for float32, float16, bfloat16 and
 * the first integer types (unary_wide.cu has float64, int16, uint16,
 * uint32 and uint64). Launcher: kernels/cuda/unary.c. Kernels:
 * <op>_<type>.
 */
#include "unary.cuh"

UNARY_FLOATS(relu, UN_RELU)
UNARY_SIGNED(relu, UN_RELU)
UNARY_FLOATS(sigmoid, UN_SIGMOID)
UNARY_FLOATS(tanh, UN_TANH)
UNARY_FLOATS(exp, UN_EXP)
UNARY_FLOATS(sqrt, UN_SQRT)
UNARY_FLOATS(reciprocal, UN_RECIPROCAL)
UNARY_FLOATS(neg, UN_NEG)
UNARY_SIGNED(neg, UN_NEG)
UNARY_FLOATS(abs, UN_ABS)
UNARY_SIGNED(abs, UN_ABS)
UNARY_KERNEL(abs, UN_ABS, u8, u8, unary_i)
UNARY_FLOATS(log, UN_LOG)
UNARY_FLOATS(erf, UN_ERF)
UNARY_KERNEL(erf, UN_ERF, i64, i64, unary_f)
UNARY_KERNEL(erf, UN_ERF, i32, i32, unary_f)
UNARY_KERNEL(erf, UN_ERF, i8, i8, unary_f)
UNARY_KERNEL(erf, UN_ERF, u8, u8, unary_f)
UNARY_FLOATS(floor, UN_FLOOR)
UNARY_FLOATS(ceil, UN_CEIL)
UNARY_FLOATS(round, UN_ROUND)
