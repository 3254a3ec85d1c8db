/*
 * sdpa_tc.cu — ONNX's Attention operator (kernels/cpu/sdpa.h) on tensor
 * cores, for float16 and bfloat16 heads of up to 128 elements on sm_80
 * and later; sdpa.cu has the other kernels and says why the keys are
 * walked three times (maxima, sums, probabilities and Y) with every step
 * rounded as the host rounds it.
 *
 * A block of four warps takes 64 query rows of one (b, h), 16 a warp, and
 * walks the keys in tiles of 64 staged in shared memory as 16-bit values
 * of the type: Q and K already multiplied by sqrt(scale) and rounded, as
 * the host multiplies them, so that the products mma.sync forms are the
 * host's exactly and only their float32 sums are taken in another order.
 * Each warp computes its 16 x 64 scores as products of Q and K^T, whose
 * accumulators hold two rows and sixteen keys a lane (a row's values sit
 * with the four lanes of a quad); the elementwise steps and the bias are
 * applied there; bfloat16 sums are taken one key at a time in key order
 * by broadcasting the quad's weights. In the last walk the probabilities,
 * rounded to the type as the host rounds them, are the A fragments of the
 * product with V, which is staged transposed so that a fragment's two
 * keys are neighbours. Launcher: kernels/cuda/sdpa.c. Kernels:
 * sdpa_tc<64|128>_<type>.
 */
#include "mma.cuh"
#include "sdpa.cuh"

#define TC_WARPS 4
#define TC_QROWS (16 * TC_WARPS)       /* query rows per block */
#define TC_KEYS 64                     /* keys per tile */

/* Two neighbouring 16-bit elements of shared memory as one register. */
__device__ __forceinline__ u32 tc_ld2(const u16 *p)
{
	return *(const u32 *)p;
}

/* The bits of x rounded to the 16-bit type. */
template <bool BF>
__device__ __forceinline__ u16 tc_bits(float x)
{
	return BF ? cep_f32_to_bf16(x) : cep_f32_to_f16(x);
}

template <bool BF>
__device__ __forceinline__ u32 tc_pack(float lo, float hi)
{
	return (u32)tc_bits<BF>(lo) | ((u32)tc_bits<BF>(hi) << 16);
}

__device__ __forceinline__ float tc_quad_max(float v)
{
	v = cep_max_skip::f(v, __shfl_xor_sync(0xffffffffu, v, 1));
	return cep_max_skip::f(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float tc_quad_sum(float v)
{
	v += __shfl_xor_sync(0xffffffffu, v, 1);
	return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

__device__ __forceinline__ bool tc_quad_any(bool v)
{
	unsigned m = __ballot_sync(0xffffffffu, v);

	return ((m >> (threadIdx.x & 28)) & 0xfu) != 0;
}

/*
 * Shared memory, as 16-bit elements: the key tile ks (64 rows of LD) and
 * one buffer that holds the block's query rows (64 of LD) while they are
 * read into fragments, then V's tile transposed (D rows of 64 + 8).
 */
template <typename T, bool BF, int D>
__device__ __forceinline__ void sdpa_tc(const T *q, const T *k, const T *v, const T *pk,
					const T *pv, const void *mask, const i64 *nonpad, T *y,
					T *qk, const cep_sdpa &g, int mdt)
{
	const int LD = D + 8, VLD = TC_KEYS + 8;
	__shared__ __align__(16) u16 ks[TC_KEYS * (D + 8)];
	__shared__ __align__(16) u16 buf[(TC_QROWS * (D + 8) > D * (TC_KEYS + 8)) ?
					 TC_QROWS * (D + 8) : D * (TC_KEYS + 8)];
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, gq = lane >> 2, tq = lane & 3;
	const int u = g.prec, dk = (int)g.Dk, dv = (int)g.Dv;
	const i64 qtiles = (g.Sq + TC_QROWS - 1) / TC_QROWS, tiles = g.B * g.Hq * qtiles;
	const i64 group = g.Hq / g.Hkv;

	for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
		const i64 i0 = (t % qtiles) * TC_QROWS, h = (t / qtiles) % g.Hq;
		const i64 b = t / (qtiles * g.Hq), kh = h / group;
		/* This lane's two rows: gq and gq + 8 of the warp's 16. */
		const i64 row[2] = { i0 + 16 * w + gq, i0 + 16 * w + gq + 8 };
		u32 qa[D / 16][4];
		float mx[2], sum[2];
		bool open[2], nan[2];

		/* The previous tile may still be reading buf (as V). */
		__syncthreads();
		for (int e = threadIdx.x; e < TC_QROWS * D; e += blockDim.x) {
			const int r = e / D, d = e - r * D;
			const i64 i = i0 + r;

			buf[r * LD + d] = i < g.Sq && d < dk ?
				tc_bits<BF>(ld_f(q, sd_q_at(g, b, h, i) + d) * g.sq) : 0;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			const int r = 16 * w + gq, c = 16 * kk + 2 * tq;

			qa[kk][0] = tc_ld2(&buf[r * LD + c]);
			qa[kk][1] = tc_ld2(&buf[(r + 8) * LD + c]);
			qa[kk][2] = tc_ld2(&buf[r * LD + c + 8]);
			qa[kk][3] = tc_ld2(&buf[(r + 8) * LD + c + 8]);
		}
#pragma unroll
		for (int rr = 0; rr < 2; rr++) {
			mx[rr] = -CEP_INF_F;
			sum[rr] = 0.0f;
			open[rr] = nan[rr] = false;
		}

		for (int walk = 0; walk < 3; walk++) {
			float acc[D / 8][4];

#pragma unroll
			for (int n = 0; n < D / 8; n++)
				acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
			for (i64 j0 = 0; j0 < g.T; j0 += TC_KEYS) {
				float s[TC_KEYS / 8][4];

				/* The last tile's keys (and values) are done with. */
				__syncthreads();
				for (int e = threadIdx.x; e < TC_KEYS * D; e += blockDim.x) {
					const int jj = e / D, d = e - jj * D;
					const i64 j = j0 + jj;
					u16 x = 0;

					if (j < g.T && d < dk) {
						bool past;
						i64 at = sd_row_at(g, b, kh, j, g.Dk, &past);

						x = tc_bits<BF>(ld_f(past ? pk : k, at + d) * g.sq);
					}
					ks[jj * LD + d] = x;
				}
				if (walk == 2) {
					for (int e = threadIdx.x; e < TC_KEYS * D; e += blockDim.x) {
						const int jj = e / D, d = e - jj * D;
						const i64 j = j0 + jj;
						u16 x = 0;

						if (j < g.T && d < dv) {
							bool past;
							i64 at = sd_row_at(g, b, kh, j, g.Dv, &past);

							x = ((const u16 *)(past ? pv : v))[at + d];
						}
						buf[d * VLD + jj] = x;
					}
				}
				__syncthreads();
#pragma unroll
				for (int n = 0; n < TC_KEYS / 8; n++) {
					s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
					for (int kk = 0; kk < D / 16; kk++) {
						const int c = 16 * kk + 2 * tq;
						u32 bk[2] = { tc_ld2(&ks[(8 * n + gq) * LD + c]),
							      tc_ld2(&ks[(8 * n + gq) * LD + c + 8]) };

						cep_mma16816<BF>(s[n], qa[kk], bk);
					}
				}
				/* The elementwise steps, in place: walk 0 leaves the
				 * scores (u(s)), walk 1 the weights, walk 2 the
				 * probabilities in T. */
#pragma unroll
				for (int n = 0; n < TC_KEYS / 8; n++) {
#pragma unroll
					for (int e = 0; e < 4; e++) {
						const int rr = e >> 1;
						const i64 i = row[rr], j = j0 + 8 * n + 2 * tq + (e & 1);
						float raw, capped, bias, sc, x = 0.0f;

						if (j < g.T && i < g.Sq) {
							bias = sd_bias(g, mask, mdt, nonpad, b, h, i, j);
							sc = sd_score<T>(g, s[n][e], bias, &raw, &capped);
							if (walk == 0) {
								sd_see(&mx[rr], &open[rr], &nan[rr], sc, bias, u);
								if (qk != 0 && g.qk_mode < 3)
									st_f(qk, sd_qk_at(g, b, h, i, j),
									     g.qk_mode == 0 ? raw :
									     g.qk_mode == 1 ? capped : sc);
							} else {
								x = sd_weight(sc, mx[rr], u);
								if (walk == 2) {
									x = sd_prob<T>(x, sum[rr], u, open[rr],
										       nan[rr]);
									if (qk != 0 && g.qk_mode == 3)
										st_f(qk, sd_qk_at(g, b, h, i, j), x);
								}
							}
						}
						s[n][e] = x;
					}
				}
				if (walk == 1) {
					if (u == SD_U_BF16) {
						/* Key by key in order: key 8n + 2t + e is lane t's of
						 * the quad. */
#pragma unroll
						for (int n = 0; n < TC_KEYS / 8; n++) {
#pragma unroll
							for (int tt = 0; tt < 4; tt++) {
#pragma unroll
								for (int e = 0; e < 2; e++) {
									const int src = (lane & ~3) | tt;
									float a = __shfl_sync(0xffffffffu, s[n][e], src);
									float c = __shfl_sync(0xffffffffu, s[n][2 + e], src);

									sum[0] = cep_round<bf16>(sum[0] + a);
									sum[1] = cep_round<bf16>(sum[1] + c);
								}
							}
						}
					} else {
						float ps[2] = { 0.0f, 0.0f };

#pragma unroll
						for (int n = 0; n < TC_KEYS / 8; n++) {
							ps[0] += s[n][0] + s[n][1];
							ps[1] += s[n][2] + s[n][3];
						}
						sum[0] += tc_quad_sum(ps[0]);
						sum[1] += tc_quad_sum(ps[1]);
					}
				}
				if (walk != 2)
					continue;
				/* Probabilities of keys 16kk .. 16kk + 15 as A fragments:
				 * score groups 2kk and 2kk + 1 hold exactly a0 .. a7. */
#pragma unroll
				for (int kk = 0; kk < TC_KEYS / 16; kk++) {
					u32 pa[4] = {
						tc_pack<BF>(s[2 * kk][0], s[2 * kk][1]),
						tc_pack<BF>(s[2 * kk][2], s[2 * kk][3]),
						tc_pack<BF>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
						tc_pack<BF>(s[2 * kk + 1][2], s[2 * kk + 1][3]),
					};

#pragma unroll
					for (int n = 0; n < D / 8; n++) {
						const int c = 16 * kk + 2 * tq;
						u32 bv[2] = { tc_ld2(&buf[(8 * n + gq) * VLD + c]),
							      tc_ld2(&buf[(8 * n + gq) * VLD + c + 8]) };

						cep_mma16816<BF>(acc[n], pa, bv);
					}
				}
			}
			if (walk == 0) {
#pragma unroll
				for (int rr = 0; rr < 2; rr++) {
					mx[rr] = tc_quad_max(mx[rr]);
					open[rr] = tc_quad_any(open[rr]);
					nan[rr] = tc_quad_any(nan[rr]);
					if (mx[rr] == -CEP_INF_F)
						mx[rr] = 0.0f;
				}
			} else if (walk == 1) {
#pragma unroll
				for (int rr = 0; rr < 2; rr++) {
					sum[rr] = sd_round_u(sum[rr], u);
					if (sum[rr] == 0.0f)
						sum[rr] = 1.0f;
				}
			} else {
#pragma unroll
				for (int rr = 0; rr < 2; rr++) {
					if (row[rr] >= g.Sq)
						continue;
#pragma unroll
					for (int n = 0; n < D / 8; n++) {
#pragma unroll
						for (int e = 0; e < 2; e++) {
							const int d = 8 * n + 2 * tq + e;

							if (d < dv)
								st_f(y, sd_y_at(g, b, h, row[rr]) + d,
								     acc[n][2 * rr + e]);
						}
					}
				}
			}
		}
	}
}

#define SDPA_TC_KERNEL(T, sfx, BF, D)                                                        \
	extern "C" __global__ void __launch_bounds__(TC_WARPS * 32)                      \
	sdpa_tc##D##_##sfx(const T *q, const T *k, const T *v, const T *pk, const T *pv, \
			   const void *mask, const i64 *nonpad, T *y, T *qk, cep_sdpa g, \
			   int mdt)                                                      \
	{ sdpa_tc<T, BF, D>(q, k, v, pk, pv, mask, nonpad, y, qk, g, mdt); }

SDPA_TC_KERNEL(f16, f16, false, 64)
SDPA_TC_KERNEL(f16, f16, false, 128)
SDPA_TC_KERNEL(bf16, bf16, true, 64)
SDPA_TC_KERNEL(bf16, bf16, true, 128)
