/*
 * qmatmul.cu — MatMulInteger and QLinearMatMul with the arithmetic of the
 * reference kernels (kernels/cpu/qmatmul.c, quant.cuh): int32 sums of
 * (a - a_zero_point) * (b - b_zero_point), wrapping in 32 bits, and for
 * QLinearMatMul their requantization in double with the multiplier in
 * the scales' type.
 *
 * A direct tiled kernel: a block of 256 threads computes a 16 x 16 tile of
 * one output matrix, staging 16 x 16 tiles of A and B (less their zero
 * points, as int32) in shared memory along K; blocks stride over every
 * tile of every batch. int8 and uint8 operands are read as bytes and
 * sign-extended where signed (the flags), so one kernel takes every pair.
 *
 * Launcher: kernels/cuda/qmatmul.c.
 */
#include "quant.cuh"

#define QMM_TILE 16
#define QMM_BATCH_MAX 6

/* Twin: struct cuda_qmm; the layout of struct cpu_qmm. */
struct cep_qmm {
	i64 M, N, K, batch;
	i64 dims[QMM_BATCH_MAX];      /* output batch dims */
	i64 a_str[QMM_BATCH_MAX];     /* in matrices; 0: broadcast */
	i64 b_str[QMM_BATCH_MAX];
	i64 a_bs, a_vs, b_bs, b_vs;   /* zero points and scales by row, column */
	i32 rank;
	i32 flags;                    /* QMM_* */
	i32 sdt;                      /* ONNX type of the scales */
	i32 round;                    /* their rounding (CEP_Q_*) */
};

enum { QMM_A_SIGNED = 1, QMM_B_SIGNED = 2, QMM_Y_SIGNED = 4 };

template <bool QL>
__device__ __forceinline__ void qmm(const u8 *a, const u8 *b, const u8 *azp, const u8 *bzp,
				    const void *as, const void *bs, const void *ys, const u8 *yzp,
				    void *y, const cep_qmm &p)
{
	__shared__ int ta[QMM_TILE][QMM_TILE + 1];
	__shared__ int tb[QMM_TILE][QMM_TILE + 1];
	int tx = threadIdx.x % QMM_TILE, ty = threadIdx.x / QMM_TILE;
	int sa = p.flags & QMM_A_SIGNED, sb = p.flags & QMM_B_SIGNED;
	i64 tn = (p.N + QMM_TILE - 1) / QMM_TILE, tm = (p.M + QMM_TILE - 1) / QMM_TILE;
	i64 tiles = p.batch * tm * tn;

	for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
		i64 bo = t / (tm * tn), rest = t % (tm * tn), q = bo, am = 0, bm = 0;
		i64 row = rest / tn * QMM_TILE + ty, col = rest % tn * QMM_TILE + tx;
		int za = 0, zb = 0;
		u32 acc = 0;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 k = q % p.dims[d];

			am += k * p.a_str[d];
			bm += k * p.b_str[d];
			q /= p.dims[d];
		}
		if (azp != 0 && row < p.M)
			za = cep_q_ld8(azp, sa, am * p.a_bs + row * p.a_vs);
		if (bzp != 0 && col < p.N)
			zb = cep_q_ld8(bzp, sb, bm * p.b_bs + col * p.b_vs);
		for (i64 k0 = 0; k0 < p.K; k0 += QMM_TILE) {
			i64 ka = k0 + tx, kb = k0 + ty;

			ta[ty][tx] = row < p.M && ka < p.K ?
				     cep_q_ld8(a, sa, (am * p.M + row) * p.K + ka) - za : 0;
			tb[ty][tx] = kb < p.K && col < p.N ?
				     cep_q_ld8(b, sb, (bm * p.K + kb) * p.N + col) - zb : 0;
			__syncthreads();
			/* Each product is at most 255 * 255: only the sum wraps. */
			for (int kk = 0; kk < QMM_TILE; kk++)
				acc += (u32)(ta[ty][kk] * tb[kk][tx]);
			__syncthreads();
		}
		if (row >= p.M || col >= p.N)
			continue;
		i64 o = (bo * p.M + row) * p.N + col;

		if (!QL) {
			((i32 *)y)[o] = (i32)acc;
			continue;
		}
		double m = cep_q_round(__dmul_rn(cep_q_real(as, p.sdt, am * p.a_bs + row * p.a_vs),
						 cep_q_real(bs, p.sdt, bm * p.b_bs + col * p.b_vs)),
				       p.round);
		int ysg = p.flags & QMM_Y_SIGNED;

		m = cep_q_round(__ddiv_rn(m, cep_q_real(ys, p.sdt, 0)), p.round);
		((u8 *)y)[o] = (u8)cep_q_saturate(__dmul_rn((double)(i32)acc, m), cep_q_ld8(yzp, ysg, 0),
						  ysg ? -128 : 0, ysg ? 127 : 255);
	}
}

extern "C" __global__ void matmulinteger(const u8 *a, const u8 *b, const u8 *azp, const u8 *bzp,
					 i32 *y, cep_qmm p)
{
	qmm<false>(a, b, azp, bzp, 0, 0, 0, 0, y, p);
}

extern "C" __global__ void qlinearmatmul(const u8 *a, const void *as, const u8 *azp, const u8 *b,
					 const void *bs, const u8 *bzp, const void *ys,
					 const u8 *yzp, u8 *y, cep_qmm p)
{
	qmm<true>(a, b, azp, bzp, as, bs, ys, yzp, y, p);
}
