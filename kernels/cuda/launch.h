/*
 * launch.h — what the launchers of kernels/cuda share: grid sizes, the
 * kernel-name suffix of each element type, the widest unit a copy can
 * move, and the host twins of the structs the NVRTC sources take as
 * arguments (kernels/cuda/common.cuh and the .cu files), laid out with the
 * same explicit padding. Internal to kernels/cuda.
 *
 * A launcher follows one pattern: prepare() checks what it can, fetches
 * its CUfunction with cuda_function_get() (the compile happens there, at
 * plan time) and precomputes its arguments into call->params; run() only
 * fills the pointers and calls cuda_launch() on call->stream.
 */
#ifndef CEP_KERNELS_CUDA_LAUNCH_H
#define CEP_KERNELS_CUDA_LAUNCH_H

#include <stdint.h>

#include "gpu/cuda/cuda_kernels.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

/*
 * The types most device kernels store, as type sets for their kernel
 * tables: float32, float16 and bfloat16 (computed in float), int64,
 * int32, int8 and uint8 (computed in int64) and bool. The registry's own
 * sets (OP_DTS_* of kernels/ops.h) are every type the engine stores; a
 * device kernel that takes more than these (float64, the other integer
 * widths) names them itself, so that the lookup refuses the rest for the
 * cuda backend with the list of what it takes.
 */
#define CUDA_DTS_FLOAT (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
			OP_DT(CEP_DTYPE_BFLOAT16))
#define CUDA_DTS_INT (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32) | \
		      OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))
#define CUDA_DTS_NUMERIC (CUDA_DTS_FLOAT | CUDA_DTS_INT)
#define CUDA_DTS_ALL (CUDA_DTS_NUMERIC | OP_DT(CEP_DTYPE_BOOL))

#define CUDA_BLOCK 256          /* threads per block of the elementwise kernels */
#define CUDA_GRID_MAX 65535u    /* blocks; kernels loop over the rest */

/* Blocks for n elements, one per thread, at most CUDA_GRID_MAX. */
static inline unsigned cuda_grid(int64_t n)
{
	int64_t g = (n + CUDA_BLOCK - 1) / CUDA_BLOCK;

	return g > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)g;
}

/* Checks at compile time that a launcher's state fits call->params. */
#define CUDA_PARAMS_FIT(type) \
	_Static_assert(sizeof(type) <= OP_PARAMS_BYTES, #type " exceeds OP_PARAMS_BYTES")

/* The suffix of dtype in kernel names ("f32", "bf16", "f64", "u64",
 * "bool", "i4", "f4", "e4m3fn"), or NULL for a type the engine does not
 * store. A kernel source
 * has the types its table takes, not necessarily all of these. */
const char *cuda_dtype_suffix(cep_dtype dtype);

/* Whether dtype is one of the types the first device kernels did not have
 * (float64, int16, uint16, uint32, uint64): the families that take them
 * and keep a kernel per type (binary, compare, reduce, index) compile
 * them from a source of their own, <family>_wide.cu, so that a model
 * without them never waits for that compile. */
bool cuda_dtype_wide(cep_dtype dtype);

/* The widest of 16, 8, 4, 2, 1 bytes that divides each of the n values
 * (lengths, pitches and addresses in bytes). */
unsigned cuda_unit(const uint64_t *v, int n);

/* Twin of struct cep_bcast (common.cuh). */
struct cuda_bcast {
	int32_t rank;                           /* >= 1 */
	int32_t pad;
	int64_t n;                              /* output elements */
	int64_t dims[CEP_MAX_RANK];             /* (rank) output dims, merged */
	int64_t stride[2][CEP_MAX_RANK];        /* (2, rank) elements; 0: broadcast */
};

/* Fills p for out = f(a, b) under numpy broadcasting, merging dims that
 * both operands walk contiguously, so same-shaped operands make rank 1. */
void cuda_bcast_init(struct cuda_bcast *p, const struct op_tensor *out,
		     const struct op_tensor *a, const struct op_tensor *b);

/* How an operand of a fast path is read (twin of elem.cuh's CEP_OPND_*):
 * at each output element, at its column (a row vector over the last dim),
 * once (a single element), or not at all. */
enum cuda_opnd_mode {
	CUDA_OPND_FULL,
	CUDA_OPND_ROW,
	CUDA_OPND_SCALAR,
	CUDA_OPND_NONE,
};

/* A two-operand layout that a fast path (elem.cuh's cep_map2) covers. */
struct cuda_fast {
	int32_t mode[2];                        /* enum cuda_opnd_mode of a and b */
	int64_t cols;                           /* elements per output row, >= 1 */
	char name[3];                           /* kernel-name suffix: "ff", "fr", "rf", "fs", "sf" */
};

/* Fills f and returns true when the broadcast p (from cuda_bcast_init())
 * has a fast path: both operands of the output's shape, or one of them a
 * row over the output's last merged dim or a single element; returns
 * false (f unspecified) when only the general kernel covers it. */
bool cuda_fast_init(struct cuda_fast *f, const struct cuda_bcast *p);

/* Blocks for n elements taken vec (>= 1) per thread, at most
 * CUDA_GRID_MAX. */
static inline unsigned cuda_grid_vec(int64_t n, unsigned vec)
{
	return cuda_grid((n + vec - 1) / vec);
}

/* Blocks for the contiguous paths of elem.cuh over n elements of dtype
 * (the widest type a kernel moves): a thread per 16 bytes. */
static inline unsigned cuda_grid_elem(int64_t n, cep_dtype dtype)
{
	size_t size = cep_dtype_size(dtype);

	return cuda_grid_vec(n, size > 0 && size < 16 ? 16 / (unsigned)size : 1);
}

/* Operands of one launch of the kernels that broadcast more than two. */
#define CUDA_BCASTN_MAX 8

/* Twin of struct cep_bcastn (kernels/cuda/elem.cuh): up to
 * CUDA_BCASTN_MAX operands broadcast to the output, each described by the
 * dims it broadcasts along; the device derives the strides, since an
 * operand walks its other dims contiguously. Small enough for
 * call->params, unlike a stride table per operand. */
struct cuda_bcastn {
	int32_t rank;                           /* >= 1 */
	int32_t n_in;                           /* operands, <= CUDA_BCASTN_MAX */
	int64_t n;                              /* output elements */
	int64_t dims[CEP_MAX_RANK];             /* (rank) output dims, merged */
	uint32_t bmask[CUDA_BCASTN_MAX];        /* (n_in) bit d: broadcast along dim d */
};

/* Fills p for an output out computed from the n (<= CUDA_BCASTN_MAX)
 * operands ins under numpy broadcasting; a NULL entry of ins stands for
 * an operand of the output's own shape. Dims across which every operand
 * keeps the same broadcast pattern are merged. */
void cuda_bcastn_init(struct cuda_bcastn *p, const struct op_tensor *out,
		      const struct op_tensor *const *ins, int n);

#endif
