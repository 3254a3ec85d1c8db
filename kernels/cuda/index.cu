/*
 * index.cu — GatherND, ScatterND and ScatterElements (Scatter too) on the
 * device. Launcher: kernels/cuda/index.c; reference: kernels/cpu/index.c.
 *
 * Every index is checked where it is read: one out of range is latched
 * into the stream's fault record with the launch's site and its element
 * is skipped, so no kernel reads or writes outside its tensors.
 *
 * The scatters copy data to the output first (the launcher), then apply
 * the updates. Their result must not depend on the order the device
 * happens to run threads in, since updates may repeat an index: with
 * reduction none the last update in row-major order wins on the host,
 * and float sums and products depend on their order. So no element is
 * written by two threads: each thread owns a fixed set of output
 * elements and applies every update that lands on them in row-major
 * order, the host's. That gives the host's bits for every type and
 * reduction without atomics (which would fix neither the winner of
 * none nor the rounding of a float sum):
 *
 *   ScatterElements: an update lands in its own line along the axis
 *       (its other coordinates are its own), so a thread per (line of
 *       the updates, part p) walks that line in order and applies the
 *       updates whose index v has v % parts == p.
 *   ScatterND: a thread per (element j of a slice, part p) walks every
 *       index tuple in order and applies those whose target slice s has
 *       s % parts == p, to element j of it.
 *
 * parts is 1 where there are lines or slice elements enough to fill the
 * device; where there are few (a 1-D ScatterElements, a ScatterND whose
 * tuples pick single elements) the launcher splits the targets into
 * parts, so that more threads run, each reading every index of its line
 * or every tuple (one broadcast read per warp) but writing only its
 * share.
 *
 * Kernels: gather_nd_<bytes>; scatter_nd_<reduction>_<type>;
 * scatter_elements_<reduction>_<type>_<index type>, the scatters of
 * float64, int16, uint16, uint32 and uint64 in index_wide.cu.
 */
#include "index.cuh"

GATHER_ND_KERNEL(u8, 1)
GATHER_ND_KERNEL(u16, 2)
GATHER_ND_KERNEL(u32, 4)
GATHER_ND_KERNEL(u64, 8)

SCATTER_TYPE(float, f32)
SCATTER_TYPE(f16, f16)
SCATTER_TYPE(bf16, bf16)
SCATTER_TYPE(i64, i64)
SCATTER_TYPE(i32, i32)
SCATTER_TYPE(i8, i8)
SCATTER_TYPE(u8, u8)
SCATTER_TYPE(b8, bool)
