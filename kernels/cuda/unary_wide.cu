/*
 * unary_wide.cu — the kernels of unary.cuh for float64 (every function,
 * in double) and int16 (Relu, Neg, Abs, Erf of opsets 9 to 12), uint16,
 * uint32 and uint64 (Abs, Erf of opsets 9 to 12); apart from unary.cu so
 * that a model without them never waits for their compile. Launcher:
 * kernels/cuda/unary.c.
 */
#include "unary.cuh"

#define UNARY_F64(name, OP) UNARY_KERNEL(name, OP, double, f64, unary_d)

UNARY_F64(relu, UN_RELU)
UNARY_F64(sigmoid, UN_SIGMOID)
UNARY_F64(tanh, UN_TANH)
UNARY_F64(exp, UN_EXP)
UNARY_F64(sqrt, UN_SQRT)
UNARY_F64(reciprocal, UN_RECIPROCAL)
UNARY_F64(neg, UN_NEG)
UNARY_F64(abs, UN_ABS)
UNARY_F64(log, UN_LOG)
UNARY_F64(erf, UN_ERF)
UNARY_F64(floor, UN_FLOOR)
UNARY_F64(ceil, UN_CEIL)
UNARY_F64(round, UN_ROUND)

UNARY_KERNEL(relu, UN_RELU, i16, i16, unary_i)
UNARY_KERNEL(neg, UN_NEG, i16, i16, unary_i)
UNARY_KERNEL(abs, UN_ABS, i16, i16, unary_i)
UNARY_KERNEL(abs, UN_ABS, u16, u16, unary_i)
UNARY_KERNEL(abs, UN_ABS, u32, u32, unary_i)
UNARY_KERNEL(abs, UN_ABS, u64, u64, unary_i)
UNARY_KERNEL(erf, UN_ERF, i16, i16, unary_f)
UNARY_KERNEL(erf, UN_ERF, u16, u16, unary_f)
UNARY_KERNEL(erf, UN_ERF, u32, u32, unary_f)
UNARY_KERNEL(erf, UN_ERF, u64, u64, unary_f)
