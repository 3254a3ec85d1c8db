/*
 * rotary.cu — RotaryEmbedding (ai.onnx opset 23 and com.microsoft opset 1;
 * kernels/cpu/rotary.h says what they compute): one thread per element of Y, which reads its pair's two
 * members of X and the pair's cosine and sine and computes its member of
 * the rotation as the reference kernel does: the two products and their
 * sum each rounded to X's type, without fused multiply-adds; elements past
 * the rotary dimension are copied. A position outside [-rows, rows) of
 * the caches ([0, rows) in com.microsoft) is latched into the fault record (CEP_FAULT_INDEX, dimension
 * 0 of cos_cache) and its elements are not written. Launcher:
 * kernels/cuda/rotary.c. Kernels: rope_<type>.
 */
#include "common.cuh"

/* Twin: struct rope_geom (kernels/cpu/rotary.h). */
struct cep_rope {
	i64 B, H, S, D;
	i64 half;                       /* pairs rotated per head */
	i64 rows;                       /* cache rows with position_ids */
	i64 cb, cs;                     /* strides of b and s into the caches,
	                                 * or into position_ids */
	i32 rank3;
	i32 interleaved;
	i32 has_pos;
	i32 pos_step;                   /* position = position_ids[0] + s */
	i32 from_end;                   /* negative positions count from the end */
	i32 pad;
};

template <typename T>
__device__ __forceinline__ void rope(const T *x, const T *cosc, const T *sinc, const i64 *pos,
				     T *y, const cep_rope &g, cep_fault *fault, u64 site)
{
	CEP_FOR(e, g.B * g.H * g.S * g.D) {
		/* A head's elements are contiguous in both layouts; only b and s
		 * pick the position. */
		const i64 d = e % g.D, r = e / g.D;
		const i64 s = g.rank3 ? (r / g.H) % g.S : r % g.S;
		const i64 b = r / (g.H * g.S);
		const i64 base = e - d;
		float v = ld_f(x, e);

		if (d < 2 * g.half) {
			i64 row = b * g.cb + s * g.cs;

			if (g.has_pos) {
				i64 p = pos[row] + (g.pos_step ? s : 0);

				if (p < (g.from_end ? -g.rows : 0) || p >= g.rows) {
					cep_fault_latch(fault, site, 0, p, g.rows);
					continue;
				}
				row = (p < 0 ? p + g.rows : p) * g.half;
			}
			const bool second = g.interleaved ? (d & 1) != 0 : d >= g.half;
			const i64 k = g.interleaved ? d >> 1 : second ? d - g.half : d;
			const float co = ld_f(cosc, row + k), si = ld_f(sinc, row + k);
			const float x1 = ld_f(x, base + (g.interleaved ? 2 * k : k));
			const float x2 = ld_f(x, base + (g.interleaved ? 2 * k + 1 : k + g.half));

			v = second ? __fadd_rn(cep_round<T>(__fmul_rn(si, x1)), cep_round<T>(__fmul_rn(co, x2)))
				   : __fsub_rn(cep_round<T>(__fmul_rn(co, x1)), cep_round<T>(__fmul_rn(si, x2)));
		}
		st_f(y, e, v);
	}
}

#define ROPE_KERNEL(T, sfx)                                                                  \
	extern "C" __global__ void rope_##sfx(const T *x, const T *cosc, const T *sinc,        \
					      const i64 *pos, T *y, cep_rope g, cep_fault *fault, \
					      u64 site)                                        \
	{ rope<T>(x, cosc, sinc, pos, y, g, fault, site); }

ROPE_KERNEL(float, f32)
ROPE_KERNEL(f16, f16)
ROPE_KERNEL(bf16, bf16)
