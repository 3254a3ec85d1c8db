/*
 * reverse_sequence.cu — ReverseSequence on the device, a thread per
 * output element reading its source along the time axis, as the
 * reference kernel of kernels/cpu/reverse_sequence.c places it; elements
 * move as raw units of their size. A sequence length outside [0, the time
 * axis], read here, latches CEP_FAULT_VALUE and that element is left
 * unwritten. Launcher: kernels/cuda/reverse_sequence.c. Kernels:
 * reverse_sequence_<bytes>.
 */
#include "common.cuh"

/* Twin: struct cuda_revseq. */
struct cep_revseq {
	i64 d0, d1, inner;      /* the input as (d0, d1, inner) */
	i32 time_axis;          /* 0 or 1; the batch axis is the other */
	i32 pad;
};

template <typename U>
__device__ __forceinline__ void reverse_sequence(const U *x, const i64 *lens, U *y,
						 const cep_revseq &p, cep_fault *fault, u64 site)
{
	i64 steps = p.time_axis == 0 ? p.d0 : p.d1;

	CEP_FOR(e, p.d0 * p.d1 * p.inner) {
		i64 q = e / p.inner, r = e - q * p.inner, i0 = q / p.d1, i1 = q - i0 * p.d1;
		i64 ts = p.time_axis == 0 ? i0 : i1, len = lens[p.time_axis == 0 ? i1 : i0];

		if (len < 0 || len > steps) {
			cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, p.time_axis, len, steps);
			continue;
		}
		i64 src = ts < len ? len - 1 - ts : ts;
		i64 s0 = p.time_axis == 0 ? src : i0, s1 = p.time_axis == 0 ? i1 : src;

		y[e] = x[(s0 * p.d1 + s1) * p.inner + r];
	}
}

#define REVSEQ_KERNEL(U, bytes)                                                          \
	extern "C" __global__ void reverse_sequence_##bytes(const U *x, const i64 *lens, U *y, \
							    cep_revseq p, cep_fault *fault,   \
							    u64 site)                         \
	{ reverse_sequence<U>(x, lens, y, p, fault, site); }

REVSEQ_KERNEL(u8, 1)
REVSEQ_KERNEL(u16, 2)
REVSEQ_KERNEL(u32, 4)
REVSEQ_KERNEL(u64, 8)
