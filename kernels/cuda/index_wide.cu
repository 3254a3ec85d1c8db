/*
 * index_wide.cu — ScatterND and ScatterElements (index.cuh) for the types
 * the first device kernels did not have: float64 (reductions in double),
 * int16, uint16, uint32 and uint64 (in int64, uint64 ordered as
 * unsigned). Compiled apart from index.cu, so that a model without them
 * never waits for these. Launcher: kernels/cuda/index.c. Kernels as
 * index.cu's: scatter_nd_add_f64, scatter_elements_max_u64_i64, ...
 */
#include "index.cuh"

SCATTER_TYPE(double, f64)
SCATTER_TYPE(i16, i16)
SCATTER_TYPE(u64, u64)
SCATTER_TYPE(u32, u32)
SCATTER_TYPE(u16, u16)
