/*
 * attention_tc.cu — the Attention operator (kernels/xfmr.h) on tensor
 * cores, for float16 and bfloat16 operands with depths up to 64 (BERT's
 * heads) on sm_80 and later; attention.cu has the float32 and deeper
 * kernels and says what is computed. Same geometry (attention.cuh), same
 * online softmax in float32, same treatment of -inf and NaN.
 *
 * A block of four warps takes 64 query rows of one (b, h), 16 a warp, and
 * walks the keys in tiles of 64 staged in shared memory as the 16-bit
 * values they are (V transposed, so that a fragment's two keys are
 * neighbours). Per tile each warp computes its 16 x 64 scores as 32
 * mma.sync products of Q and K^T (float32 sums), scales and masks them in
 * registers, folds them into its rows' running maxima and sums (a row's
 * values sit with the four lanes of a quad, combined through two
 * shuffles), rounds the weights to the operand type and multiplies them
 * by V with 32 more products; the score accumulators are laid out as the
 * next product's A fragments, so the weights never leave the registers.
 * Operands whose rows are 64 contiguous, 16-byte aligned elements
 * (cep_attn.vec: BERT's, read in place from the projections) are staged
 * with 16-byte loads, all of a tile's issued before any is stored, so
 * that the block waits for memory once per tile rather than once per
 * element.
 * The weights are rounded to float16 or bfloat16 for that product, as
 * every tensor-core attention does; the sums they are divided by are
 * not. Launcher: kernels/cuda/attention.c. Kernels: attn_tc64_<type>.
 */
#include "attention.cuh"
#include "mma.cuh"

#define TC_WARPS 4
#define TC_QROWS (16 * TC_WARPS)       /* query rows per block */
#define TC_KEYS 64                     /* keys per tile */
#define TC_D 64                        /* depth, zero-padded */
/* Shared rows of 72 halves (36 words): the eight groups of a warp reading
 * fragments of eight rows start four banks apart, so the 32 lanes hit 32
 * banks. */
#define TC_LD (TC_D + 8)
/* 16-byte loads per thread for a tile of 64 rows of 64 elements. */
#define TC_VLOADS (TC_QROWS * TC_D / 8 / (TC_WARPS * 32))

/* The 16-bit element i of p, as it is stored. */
__device__ __forceinline__ u16 tc_bits(const f16 *p, i64 i) { return p[i].bits; }
__device__ __forceinline__ u16 tc_bits(const bf16 *p, i64 i) { return p[i].bits; }

/* Eight 16-bit elements of a row whose start p + i is 16-byte aligned
 * (cep_attn.vec). */
template <typename T>
__device__ __forceinline__ uint4 tc_ld16(const T *p, i64 i)
{
	return *(const uint4 *)(p + i);
}

__device__ __forceinline__ uint4 tc_zero16(void)
{
	uint4 z;

	z.x = z.y = z.z = z.w = 0u;
	return z;
}

/* Two neighbouring 16-bit elements of shared memory as one register. */
__device__ __forceinline__ u32 tc_ld2(const u16 *p)
{
	return *(const u32 *)p;
}

/* lo and hi rounded to the operand type, packed as a fragment register. */
template <bool BF>
__device__ __forceinline__ u32 tc_pack(float lo, float hi)
{
	u32 a = BF ? cep_f32_to_bf16(lo) : cep_f32_to_f16(lo);
	u32 b = BF ? cep_f32_to_bf16(hi) : cep_f32_to_f16(hi);

	return a | (b << 16);
}

/* A row's maximum or sum across the four lanes of its quad. */
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

template <typename T, bool BF>
__device__ __forceinline__ void attn_tc(const T *q, const T *k, const T *v, const T *mask,
					T *o, const cep_attn &p)
{
	__shared__ __align__(16) u16 qs[TC_QROWS][TC_LD];
	__shared__ __align__(16) u16 ks[TC_KEYS][TC_LD];
	__shared__ __align__(16) u16 vt[TC_D][TC_KEYS + 8];
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
	const i64 tiles = p.B * p.H * p.q_tiles;

	for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
		const i64 qt = t % p.q_tiles, bh = t / p.q_tiles;
		const i64 h = bh % p.H, b = bh / p.H, i0 = qt * TC_QROWS;
		const i64 qb = b * p.q[0] + h * p.q[1], kb = b * p.k[0] + h * p.k[1];
		const i64 vb = b * p.v[0] + h * p.v[1], mb = b * p.m[0] + h * p.m[1];
		const i64 ob = b * p.o[0] + h * p.o[1];
		/* This lane's two rows: g and g + 8 of the warp's 16. */
		const i64 row[2] = { i0 + 16 * w + g, i0 + 16 * w + g + 8 };
		u32 qa[TC_D / 16][4];
		float acc[TC_D / 8][4], mx[2], l[2];

		/* The previous tile's rows are done with qs. */
		__syncthreads();
		if (p.vec) {
			uint4 qr[TC_VLOADS];

			#pragma unroll
			for (int u = 0; u < TC_VLOADS; u++) {
				const int e = threadIdx.x + u * TC_WARPS * 32, r = e >> 3, c = (e & 7) * 8;
				const i64 i = i0 + r;

				qr[u] = i < p.Sq ? tc_ld16(q, qb + i * p.q[2] + c) : tc_zero16();
			}
			#pragma unroll
			for (int u = 0; u < TC_VLOADS; u++) {
				const int e = threadIdx.x + u * TC_WARPS * 32;

				*(uint4 *)&qs[e >> 3][(e & 7) * 8] = qr[u];
			}
		} else {
			for (int e = threadIdx.x; e < TC_QROWS * TC_D; e += blockDim.x) {
				int r = e / TC_D, d = e % TC_D;
				i64 i = i0 + r;

				qs[r][d] = i < p.Sq && d < p.Dk ? tc_bits(q, qb + i * p.q[2] + d * p.q[3]) : 0;
			}
		}
		__syncthreads();
		#pragma unroll
		for (int kk = 0; kk < TC_D / 16; kk++) {
			const int r = 16 * w + g, c = 16 * kk + 2 * tq;

			qa[kk][0] = tc_ld2(&qs[r][c]);
			qa[kk][1] = tc_ld2(&qs[r + 8][c]);
			qa[kk][2] = tc_ld2(&qs[r][c + 8]);
			qa[kk][3] = tc_ld2(&qs[r + 8][c + 8]);
		}
		#pragma unroll
		for (int n = 0; n < TC_D / 8; n++)
			acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
		mx[0] = mx[1] = -CEP_INF_F;
		l[0] = l[1] = 0.0f;
		for (i64 j0 = 0; j0 < p.Sk; j0 += TC_KEYS) {
			float s[TC_KEYS / 8][4], tmax[2] = { -CEP_INF_F, -CEP_INF_F };
			float psum[2] = { 0.0f, 0.0f }, alpha[2];

			/* The last tile's keys are done with. */
			__syncthreads();
			if (p.vec) {
				uint4 kr[TC_VLOADS], vr[TC_VLOADS];

				/* Every load first, so that they are in flight together. */
				#pragma unroll
				for (int u = 0; u < TC_VLOADS; u++) {
					const int e = threadIdx.x + u * TC_WARPS * 32, c = (e & 7) * 8;
					const i64 j = j0 + (e >> 3);

					kr[u] = j < p.Sk ? tc_ld16(k, kb + j * p.k[2] + c) : tc_zero16();
					vr[u] = j < p.Sk ? tc_ld16(v, vb + j * p.v[2] + c) : tc_zero16();
				}
				#pragma unroll
				for (int u = 0; u < TC_VLOADS; u++) {
					const int e = threadIdx.x + u * TC_WARPS * 32, jj = e >> 3;
					const int c = (e & 7) * 8;
					const u16 *h = (const u16 *)&vr[u];

					*(uint4 *)&ks[jj][c] = kr[u];
					#pragma unroll
					for (int x = 0; x < 8; x++)
						vt[c + x][jj] = h[x];
				}
			} else {
				for (int e = threadIdx.x; e < TC_KEYS * TC_D; e += blockDim.x) {
					int jj = e / TC_D, d = e % TC_D;
					i64 j = j0 + jj;
					bool in = j < p.Sk;

					ks[jj][d] = in && d < p.Dk ? tc_bits(k, kb + j * p.k[2] + d * p.k[3]) : 0;
					vt[d][jj] = in && d < p.Dv ? tc_bits(v, vb + j * p.v[2] + d * p.v[3]) : 0;
				}
			}
			__syncthreads();
			/* Scores: key column n of the tile's eight groups of 8. */
			#pragma unroll
			for (int n = 0; n < TC_KEYS / 8; n++) {
				s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
				#pragma unroll
				for (int kk = 0; kk < TC_D / 16; kk++) {
					const int c = 16 * kk + 2 * tq;
					u32 bk[2] = { tc_ld2(&ks[8 * n + g][c]), tc_ld2(&ks[8 * n + g][c + 8]) };

					cep_mma16816<BF>(s[n], qa[kk], bk);
				}
			}
			#pragma unroll
			for (int n = 0; n < TC_KEYS / 8; n++) {
				#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int rr = e >> 1;
					const i64 j = j0 + 8 * n + 2 * tq + (e & 1);
					float sc = -CEP_INF_F;

					if (j < p.Sk) {
						sc = s[n][e] * p.scale;
						if (p.has_mask && row[rr] < p.Sq)
							sc += ld_f(mask, mb + row[rr] * p.m[2] + j * p.m[3]);
					}
					s[n][e] = sc;
					tmax[rr] = cep_max_skip::f(tmax[rr], sc);
				}
			}
			#pragma unroll
			for (int rr = 0; rr < 2; rr++) {
				float mnew = cep_max_skip::f(mx[rr], tc_quad_max(tmax[rr]));

				/* Nothing was summed while the maximum was -inf. */
				alpha[rr] = mx[rr] == -CEP_INF_F ? 0.0f : expf(mx[rr] - mnew);
				mx[rr] = mnew;
			}
			#pragma unroll
			for (int n = 0; n < TC_KEYS / 8; n++) {
				#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int rr = e >> 1;
					float w8 = s[n][e] == -CEP_INF_F ? 0.0f : expf(s[n][e] - mx[rr]);

					s[n][e] = w8;
					psum[rr] += w8;
				}
			}
			#pragma unroll
			for (int rr = 0; rr < 2; rr++)
				l[rr] = l[rr] * alpha[rr] + tc_quad_sum(psum[rr]);
			#pragma unroll
			for (int n = 0; n < TC_D / 8; n++) {
				acc[n][0] *= alpha[0];
				acc[n][1] *= alpha[0];
				acc[n][2] *= alpha[1];
				acc[n][3] *= alpha[1];
			}
			/* Weights of keys 16kk .. 16kk + 15 as A fragments: score
			 * groups 2kk and 2kk + 1 hold exactly a0 .. a7. */
			#pragma unroll
			for (int kk = 0; kk < TC_KEYS / 16; kk++) {
				u32 pa[4] = {
					tc_pack<BF>(s[2 * kk][0], s[2 * kk][1]),
					tc_pack<BF>(s[2 * kk][2], s[2 * kk][3]),
					tc_pack<BF>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
					tc_pack<BF>(s[2 * kk + 1][2], s[2 * kk + 1][3]),
				};

				#pragma unroll
				for (int n = 0; n < TC_D / 8; n++) {
					const int c = 16 * kk + 2 * tq;
					u32 bv[2] = { tc_ld2(&vt[8 * n + g][c]), tc_ld2(&vt[8 * n + g][c + 8]) };

					cep_mma16816<BF>(acc[n], pa, bv);
				}
			}
		}
		#pragma unroll
		for (int rr = 0; rr < 2; rr++) {
			if (row[rr] >= p.Sq)
				continue;
			#pragma unroll
			for (int n = 0; n < TC_D / 8; n++) {
				#pragma unroll
				for (int e = 0; e < 2; e++) {
					const int d = 8 * n + 2 * tq + e;

					/* No keys: MatMul over an empty K gives zeros. */
					if (d < p.Dv)
						st_f(o, ob + row[rr] * p.o[2] + d * p.o[3],
						     p.Sk > 0 ? acc[n][2 * rr + e] / l[rr] : 0.0f);
				}
			}
		}
	}
}

#define ATTN_TC_KERNEL(T, sfx, BF)                                                    \
	extern "C" __global__ void __launch_bounds__(TC_WARPS * 32)                   \
	attn_tc64_##sfx(const T *q, const T *k, const T *v, const T *mask, T *o,      \
			cep_attn p)                                                   \
	{ attn_tc<T, BF>(q, k, v, mask, o, p); }

ATTN_TC_KERNEL(f16, f16, false)
ATTN_TC_KERNEL(bf16, bf16, true)
