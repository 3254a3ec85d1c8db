/*
 * attention.cu — the internal Attention operator (kernels/xfmr.h):
 *
 *	O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:] + mask[b,h,i,j]) V[b,h,j,:]
 *
 * with every operand addressed through element strides of its logical
 * (b, h, s, d) axes (0 along a broadcast one), so Q, K and V are read from
 * before the Transposes an exporter put around them and O is written past
 * the one after. Everything is computed in float32 whatever the storage
 * type; the softmax is the online one: each row keeps a running maximum
 * and sum over the keys seen so far and rescales its sums by
 * exp(old max - new max) when the maximum grows, so no exponent ever sees
 * more than 0 and the scores never need to be stored whole. A key whose
 * masked score is -inf weighs 0; a row whose scores are all -inf divides
 * 0 by 0 and is NaN, as the unfused Softmax makes it; a NaN score makes
 * its row NaN, as there.
 *
 * The kernels here work on CUDA cores for every type (attention_tc.cu
 * has the tensor-core one for 16-bit types; launcher: kernels/cuda/
 * attention.c):
 *
 *   attn_tile<DMAX>_<type>  depths up to DMAX (64 or 128): a block of four
 *       warps takes 16 query rows of one (b, h), four rows a warp, and
 *       walks the keys in tiles of 32 staged in shared memory as float;
 *       lane j scores key j of the tile against the warp's rows, the warp
 *       combines maxima and sums through shuffles, and lane c accumulates
 *       output columns c, c + 32, ... of its rows.
 *       Operands whose rows are DMAX contiguous 16-byte aligned elements
 *       (cep_attn.vec) are staged with 16-byte loads (at_stage_vec).
 *   attn_rows_<type>  any depth up to XFMR_ATTN_MAX_DEPTH: a block per
 *       query row, its threads taking a key each per step and the output
 *       columns in turn; slow, for the heads nobody exports.
 */
#include "attention.cuh"

#define AT_WARPS 4
#define AT_ROWS 4                       /* query rows per warp */
#define AT_QROWS (AT_WARPS * AT_ROWS)   /* query rows per block */
#define AT_KEYS 32                      /* keys per tile: one per lane */

/* The online softmax's step for one row: folds the scores s of a tile
 * (one per lane, -inf where a lane has no key) into the row's maximum mx
 * and sum l; returns the weight of the lane's key and sets *alpha to the
 * factor the row's earlier sums must be scaled by. */
__device__ __forceinline__ float attn_step(float s, float *mx, float *l, float *alpha)
{
	float mnew = cep_max_skip::f(*mx, cep_warp_reduce<cep_max_skip>(s));
	float p = s == -CEP_INF_F ? 0.0f : expf(s - mnew);

	/* Nothing was summed while the maximum was -inf. */
	*alpha = *mx == -CEP_INF_F ? 0.0f : expf(*mx - mnew);
	*l = *l * *alpha + cep_warp_reduce<cep_add>(p);
	*mx = mnew;
	return p;
}

/*
 * Stages ROWS rows of DMAX elements, row r at src + base + r * stride
 * (r from r0; rows at or past n are zeros), as float into dst, whose rows
 * are LD floats apart, with 16-byte loads: every load of the block's
 * share is issued before any is converted and stored, so the block waits
 * for memory once. Only for cep_attn.vec operands.
 */
template <typename T, int ROWS, int DMAX, int LD>
__device__ __forceinline__ void at_stage_vec(float *dst, const T *src, i64 base, i64 stride,
					     i64 r0, i64 n)
{
	const int V = 16 / sizeof(T), PER = DMAX / V, N = ROWS * PER / (AT_WARPS * 32);
	uint4 raw[N];

	#pragma unroll
	for (int u = 0; u < N; u++) {
		const int e = threadIdx.x + u * AT_WARPS * 32;
		const i64 r = r0 + e / PER;

		if (r < n) {
			raw[u] = *(const uint4 *)(src + base + r * stride + (e % PER) * V);
		} else {
			raw[u].x = raw[u].y = raw[u].z = raw[u].w = 0u;
		}
	}
	#pragma unroll
	for (int u = 0; u < N; u++) {
		const int e = threadIdx.x + u * AT_WARPS * 32;
		const T *t = (const T *)&raw[u];
		float *d = dst + (e / PER) * LD + (e % PER) * V;

		#pragma unroll
		for (int x = 0; x < V; x++)
			d[x] = ld_f(t, x);
	}
}

template <typename T, int DMAX>
__device__ __forceinline__ void attn_tile(const T *q, const T *k, const T *v, const T *mask,
					  T *o, const cep_attn &p)
{
	/* K rows padded by 4 floats: the lanes of a quarter warp reading
	 * float4s of eight different rows then hit 32 different banks. */
	__shared__ __align__(16) float qs[AT_QROWS][DMAX];
	__shared__ __align__(16) float ks[AT_KEYS][DMAX + 4];
	__shared__ __align__(16) float vs[AT_KEYS][DMAX];
	__shared__ __align__(16) float ps[AT_WARPS][AT_ROWS][AT_KEYS];
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	const int dk4 = (int)((p.Dk + 3) & ~3LL);
	const i64 tiles = p.B * p.H * p.q_tiles;

	for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
		const i64 qt = t % p.q_tiles, bh = t / p.q_tiles;
		const i64 h = bh % p.H, b = bh / p.H, i0 = qt * AT_QROWS;
		const i64 qb = b * p.q[0] + h * p.q[1], kb = b * p.k[0] + h * p.k[1];
		const i64 vb = b * p.v[0] + h * p.v[1], mb = b * p.m[0] + h * p.m[1];
		const i64 ob = b * p.o[0] + h * p.o[1];
		float mx[AT_ROWS], l[AT_ROWS], acc[AT_ROWS][DMAX / 32];

		/* The previous tile's rows are done with qs. */
		__syncthreads();
		if (p.vec) {
			at_stage_vec<T, AT_QROWS, DMAX, DMAX>(&qs[0][0], q, qb, p.q[2], i0, p.Sq);
		} else {
			for (int e = threadIdx.x; e < AT_QROWS * DMAX; e += blockDim.x) {
				int r = e / DMAX, d = e % DMAX;
				i64 i = i0 + r;

				qs[r][d] = i < p.Sq && d < p.Dk ? ld_f(q, qb + i * p.q[2] + d * p.q[3])
								: 0.0f;
			}
		}
		for (int r = 0; r < AT_ROWS; r++) {
			mx[r] = -CEP_INF_F;
			l[r] = 0.0f;
			for (int c = 0; c < DMAX / 32; c++)
				acc[r][c] = 0.0f;
		}
		for (i64 j0 = 0; j0 < p.Sk; j0 += AT_KEYS) {
			/* qs is written, or the last tile's keys are done with. */
			__syncthreads();
			if (p.vec) {
				at_stage_vec<T, AT_KEYS, DMAX, DMAX + 4>(&ks[0][0], k, kb, p.k[2], j0, p.Sk);
				at_stage_vec<T, AT_KEYS, DMAX, DMAX>(&vs[0][0], v, vb, p.v[2], j0, p.Sk);
			} else {
				for (int e = threadIdx.x; e < AT_KEYS * DMAX; e += blockDim.x) {
					int jj = e / DMAX, d = e % DMAX;
					i64 j = j0 + jj;
					bool in = j < p.Sk;

					ks[jj][d] = in && d < p.Dk ? ld_f(k, kb + j * p.k[2] + d * p.k[3])
								   : 0.0f;
					vs[jj][d] = in && d < p.Dv ? ld_f(v, vb + j * p.v[2] + d * p.v[3])
								   : 0.0f;
				}
			}
			__syncthreads();

			const i64 j = j0 + lane;
			const bool valid = j < p.Sk;
			float s[AT_ROWS];

			for (int r = 0; r < AT_ROWS; r++)
				s[r] = 0.0f;
			/* Depths past Dk are zeros on both sides. */
			for (int d = 0; d < dk4; d += 4) {
				float4 kv = *(const float4 *)&ks[lane][d];

				for (int r = 0; r < AT_ROWS; r++) {
					float4 qv = *(const float4 *)&qs[w * AT_ROWS + r][d];

					s[r] += qv.x * kv.x;
					s[r] += qv.y * kv.y;
					s[r] += qv.z * kv.z;
					s[r] += qv.w * kv.w;
				}
			}
			for (int r = 0; r < AT_ROWS; r++) {
				const i64 i = i0 + w * AT_ROWS + r;
				float sc = -CEP_INF_F, alpha;

				if (valid) {
					sc = s[r] * p.scale;
					if (p.has_mask && i < p.Sq)
						sc += ld_f(mask, mb + i * p.m[2] + j * p.m[3]);
				}
				ps[w][r][lane] = attn_step(sc, &mx[r], &l[r], &alpha);
				for (int c = 0; c < DMAX / 32; c++)
					acc[r][c] *= alpha;
			}
			__syncwarp();
			/* Keys past Sk have weight 0 and zero values. */
			for (int jj = 0; jj < AT_KEYS; jj += 4) {
				float4 pr[AT_ROWS];

				for (int r = 0; r < AT_ROWS; r++)
					pr[r] = *(const float4 *)&ps[w][r][jj];
				for (int c = 0; c < DMAX / 32; c++) {
					float v0 = vs[jj][lane + 32 * c], v1 = vs[jj + 1][lane + 32 * c];
					float v2 = vs[jj + 2][lane + 32 * c], v3 = vs[jj + 3][lane + 32 * c];

					for (int r = 0; r < AT_ROWS; r++) {
						acc[r][c] += pr[r].x * v0;
						acc[r][c] += pr[r].y * v1;
						acc[r][c] += pr[r].z * v2;
						acc[r][c] += pr[r].w * v3;
					}
				}
			}
		}
		for (int r = 0; r < AT_ROWS; r++) {
			const i64 i = i0 + w * AT_ROWS + r;

			if (i >= p.Sq)
				continue;
			for (int c = 0; c < DMAX / 32; c++) {
				int d = lane + 32 * c;

				/* No keys: MatMul over an empty K gives zeros. */
				if (d < p.Dv)
					st_f(o, ob + i * p.o[2] + d * p.o[3],
					     p.Sk > 0 ? acc[r][c] / l[r] : 0.0f);
			}
		}
	}
}

/* Dynamic shared memory of attn_rows: the query row (Dk), the output sums
 * (Dv) and a weight per thread. */
template <typename T>
__device__ __forceinline__ void attn_rows(const T *q, const T *k, const T *v, const T *mask,
					  T *o, const cep_attn &p)
{
	extern __shared__ float sh[];
	float *qs = sh, *acc = sh + p.Dk, *ws = acc + p.Dv;
	const i64 rows = p.B * p.H * p.Sq;

	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const i64 i = r % p.Sq, bh = r / p.Sq, h = bh % p.H, b = bh / p.H;
		const i64 qi = b * p.q[0] + h * p.q[1] + i * p.q[2];
		const i64 kb = b * p.k[0] + h * p.k[1], vb = b * p.v[0] + h * p.v[1];
		const i64 mi = b * p.m[0] + h * p.m[1] + i * p.m[2];
		const i64 oi = b * p.o[0] + h * p.o[1] + i * p.o[2];
		float mx = -CEP_INF_F, l = 0.0f;

		/* The previous row is done with the shared arrays. */
		__syncthreads();
		for (i64 d = threadIdx.x; d < p.Dk; d += blockDim.x)
			qs[d] = ld_f(q, qi + d * p.q[3]);
		for (i64 d = threadIdx.x; d < p.Dv; d += blockDim.x)
			acc[d] = 0.0f;
		for (i64 j0 = 0; j0 < p.Sk; j0 += blockDim.x) {
			const i64 j = j0 + threadIdx.x;
			const i64 n = p.Sk - j0 < (i64)blockDim.x ? p.Sk - j0 : (i64)blockDim.x;
			float s = -CEP_INF_F, mnew, alpha, w;

			/* qs is written, or the last step's weights are used. */
			__syncthreads();
			if (j < p.Sk) {
				float dot = 0.0f;

				for (i64 d = 0; d < p.Dk; d++)
					dot += qs[d] * ld_f(k, kb + j * p.k[2] + d * p.k[3]);
				s = dot * p.scale;
				if (p.has_mask)
					s += ld_f(mask, mi + j * p.m[3]);
			}
			mnew = cep_max_skip::f(mx, cep_block_reduce<cep_max_skip>(s, -CEP_INF_F));
			w = s == -CEP_INF_F ? 0.0f : expf(s - mnew);
			alpha = mx == -CEP_INF_F ? 0.0f : expf(mx - mnew);
			l = l * alpha + cep_block_reduce<cep_add>(w, 0.0f);
			mx = mnew;
			ws[threadIdx.x] = w;
			__syncthreads();
			for (i64 d = threadIdx.x; d < p.Dv; d += blockDim.x) {
				float a = acc[d] * alpha;

				for (i64 jj = 0; jj < n; jj++)
					a += ws[jj] * ld_f(v, vb + (j0 + jj) * p.v[2] + d * p.v[3]);
				acc[d] = a;
			}
		}
		/* Each thread stores the columns it summed. */
		for (i64 d = threadIdx.x; d < p.Dv; d += blockDim.x)
			st_f(o, oi + d * p.o[3], p.Sk > 0 ? acc[d] / l : 0.0f);
	}
}

#define ATTN_KERNELS(T, sfx)                                                            \
	extern "C" __global__ void __launch_bounds__(AT_WARPS * 32)                     \
	attn_tile64_##sfx(const T *q, const T *k, const T *v, const T *mask, T *o,      \
			  cep_attn p)                                                   \
	{ attn_tile<T, 64>(q, k, v, mask, o, p); }                                      \
	extern "C" __global__ void __launch_bounds__(AT_WARPS * 32)                     \
	attn_tile128_##sfx(const T *q, const T *k, const T *v, const T *mask, T *o,     \
			   cep_attn p)                                                  \
	{ attn_tile<T, 128>(q, k, v, mask, o, p); }                                     \
	extern "C" __global__ void attn_rows_##sfx(const T *q, const T *k, const T *v,  \
						   const T *mask, T *o, cep_attn p)     \
	{ attn_rows<T>(q, k, v, mask, o, p); }

ATTN_KERNELS(float, f32)
ATTN_KERNELS(f16, f16)
ATTN_KERNELS(bf16, bf16)
