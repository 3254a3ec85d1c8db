/*
 * sdpa.cu — ONNX's Attention operator (opsets 23 to 25; kernels/cpu/sdpa.h
 * says what it computes and how each step is rounded). Every step is
 * rounded as the reference kernel rounds it, so float16 and bfloat16
 * results are the host's (and the ONNX test data's), not a float32
 * evaluation a unit away from them. That needs a row's final maximum
 * before any of its weights and its sum (for bfloat16 a sum taken one key
 * at a time in key order) before any probability, so the keys are walked
 * three times, recomputing the scores rather than storing them: for the
 * maxima (and qk_matmul_output in modes 0 to 2), for the sums, and for
 * the probabilities (mode 3) and Y. sdpa_tc.cu has the tensor-core
 * kernel of float16 and bfloat16 heads up to 128 elements; these are the
 * others:
 *
 *   sdpa_tile<R>_<type>  heads up to 128 elements (R = 4) or 256 (R = 2):
 *       a block of four warps takes 4R query rows of one (b, h), R rows a
 *       warp, staged in shared memory as the scaled floats the host
 *       multiplies. Each walk takes the keys in tiles of 32, staged the
 *       same way (rows padded to an odd number of 16-byte units, so that
 *       the lanes reading keys j, j + 1, ... four elements at a time hit
 *       distinct banks); lane j scores key j of the tile against the
 *       warp's rows, and a row's maximum, sum and flags
 *       are combined across its warp through shuffles (the bfloat16 sum
 *       by broadcasting the weights one key at a time). In the last walk
 *       the weights go to shared memory, V's tile replaces K's in the
 *       same buffer, and lane c accumulates the output columns c, c + 32,
 *       ... of the warp's rows in registers.
 *   sdpa_rows_<type>  deeper heads, up to SDPA_MAX_DEPTH, and a few query
 *       rows (decoding): a block per query row, its threads taking a key
 *       each per step and the output columns in turn; the bfloat16 sum is
 *       taken by one thread.
 *   sdpa_concat_<type>  present_key or present_value: the past cache's
 *       rows, then the new ones, one thread per element.
 *
 * A row whose bias is -inf for every key is a zero row; a NaN score makes
 * its row NaN, as on the host. Launcher: kernels/cuda/sdpa.c.
 */
#include "sdpa.cuh"

#define SD_KEYS 32                      /* keys per tile: one per lane */
#define SD_WARPS 4

/* A row's state after the first walk: its maximum (0 where every score
 * is -inf, as the host's guard makes it), whether any key is open and
 * whether a score is NaN. */
struct sd_row {
	float mx, sum;
	bool open, nan;
};

__device__ __forceinline__ void sd_row_init(sd_row *r)
{
	r->mx = -CEP_INF_F;
	r->sum = 0.0f;
	r->open = false;
	r->nan = false;
}

/* Folds score s (bias bias) into the row's maximum and flags. */
__device__ __forceinline__ void sd_row_see(sd_row *r, float s, float bias, int u)
{
	sd_see(&r->mx, &r->open, &r->nan, s, bias, u);
}

/* ------------------------------------------------------------ the tiles */

/* Dynamic shared memory. Tiles: the block's scaled query rows (4R of
 * sd_dq()), a key or value tile (32 rows of max(sd_ldk(), Dv)) and the
 * weights of a tile (4R x 32). Rows: the query row (Dk), a chunk of weights (blockDim)
 * and the output sums (Dv). All floats. */
extern __shared__ __align__(16) float sd_shm[];

/* The query rows' stride in shared memory: the head padded with zeros to
 * a multiple of 4, for 16-byte loads; and the key rows', 4 or 8 more so
 * that it is an odd number of 16-byte units and the eight lanes of a
 * quarter warp reading keys j, j + 1, ... hit distinct banks. The
 * launcher sizes the shared memory with the same rule. */
__device__ __forceinline__ int sd_dq(int dk)
{
	return (dk + 3) & ~3;
}

__device__ __forceinline__ int sd_ldk(int dk)
{
	return sd_dq(dk) + ((sd_dq(dk) >> 2) & 1 ? 8 : 4);
}

/* Stages key tile j0 (32 rows, the scaled floats of the host) into kv,
 * rows ldk apart, zero past Dk; rows past T are zeros. */
template <typename T>
__device__ __forceinline__ void sd_stage_k(float *kv, int ldk, const T *k, const T *pk,
					   const cep_sdpa &g, i64 b, i64 kh, i64 j0)
{
	const int dk = (int)g.Dk, dq = sd_dq(dk);

	/* The previous tile may still be read. */
	__syncthreads();
	for (int e = threadIdx.x; e < SD_KEYS * dq; e += blockDim.x) {
		const int jj = e / dq, d = e - jj * dq;
		const i64 j = j0 + jj;
		float x = 0.0f;

		if (j < g.T && d < dk) {
			bool past;
			i64 at = sd_row_at(g, b, kh, j, g.Dk, &past);

			x = cep_round<T>(ld_f(past ? pk : k, at + d) * g.sq);
		}
		kv[jj * ldk + d] = x;
	}
	__syncthreads();
}

/* The R dot products of the warp's query rows qs (R rows of dq) with the
 * key row kr, four elements a load, summed in the host's order. */
template <int R>
__device__ __forceinline__ void sd_dots(const float *qs, int dq, const float *kr, float *dot)
{
#pragma unroll
	for (int r = 0; r < R; r++)
		dot[r] = 0.0f;
	for (int d = 0; d < dq; d += 4) {
		const float4 x = *(const float4 *)(kr + d);

#pragma unroll
		for (int r = 0; r < R; r++) {
			const float4 a = *(const float4 *)(qs + r * dq + d);

			dot[r] += a.x * x.x;
			dot[r] += a.y * x.y;
			dot[r] += a.z * x.z;
			dot[r] += a.w * x.w;
		}
	}
}

template <typename T, int R, int DV>
__device__ __forceinline__ void sdpa_tile(const T *q, const T *k, const T *v, const T *pk,
					  const T *pv, const void *mask, const i64 *nonpad, T *y,
					  T *qk, const cep_sdpa &g, int mdt)
{
	const int QT = SD_WARPS * R, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int dk = (int)g.Dk, dq = sd_dq(dk), dv = (int)g.Dv, ldk = sd_ldk(dk);
	const int ld = ldk > dv ? ldk : dv;
	const int u = g.prec;
	float *qs = sd_shm, *kv = qs + QT * dq, *ps = kv + SD_KEYS * ld;
	const float *qw = qs + warp * R * dq;
	const i64 qtiles = (g.Sq + QT - 1) / QT, tiles = g.B * g.Hq * qtiles;
	const i64 group = g.Hq / g.Hkv;

	for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
		const i64 i0 = (tile % qtiles) * QT, h = (tile / qtiles) % g.Hq;
		const i64 b = tile / (qtiles * g.Hq), kh = h / group;
		const i64 iw = i0 + warp * R; /* the warp's first row */
		sd_row row[R];
		float acc[R][DV / 32];

		/* The previous tile may still be reading qs. */
		__syncthreads();
		for (int e = threadIdx.x; e < QT * dq; e += blockDim.x) {
			const int r = e / dq, d = e - r * dq;
			const i64 i = i0 + r;

			qs[e] = i < g.Sq && d < dk ?
				cep_round<T>(ld_f(q, sd_q_at(g, b, h, i) + d) * g.sq) : 0.0f;
		}
#pragma unroll
		for (int r = 0; r < R; r++)
			sd_row_init(&row[r]);

		/* The maxima, and the scores qk_matmul_output shows before the
		 * softmax. */
		for (i64 j0 = 0; j0 < g.T; j0 += SD_KEYS) {
			const i64 j = j0 + lane;
			float dot[R], raw, capped;

			sd_stage_k(kv, ldk, k, pk, g, b, kh, j0);
			if (j >= g.T)
				continue;
			sd_dots<R>(qw, dq, kv + lane * ldk, dot);
#pragma unroll
			for (int r = 0; r < R; r++) {
				const i64 i = iw + r;

				if (i < g.Sq) {
					float bias = sd_bias(g, mask, mdt, nonpad, b, h, i, j);
					float s = sd_score<T>(g, dot[r], bias, &raw, &capped);

					sd_row_see(&row[r], s, bias, u);
					if (qk != 0 && g.qk_mode < 3)
						st_f(qk, sd_qk_at(g, b, h, i, j),
						     g.qk_mode == 0 ? raw : g.qk_mode == 1 ? capped : s);
				}
			}
		}
#pragma unroll
		for (int r = 0; r < R; r++) {
			row[r].mx = cep_warp_reduce<cep_max_skip>(row[r].mx);
			row[r].open = __any_sync(SD_FULL, row[r].open);
			row[r].nan = __any_sync(SD_FULL, row[r].nan);
			if (row[r].mx == -CEP_INF_F)
				row[r].mx = 0.0f;
		}

		/* The sums. */
		for (i64 j0 = 0; j0 < g.T; j0 += SD_KEYS) {
			const i64 j = j0 + lane;
			const int n = g.T - j0 < SD_KEYS ? (int)(g.T - j0) : SD_KEYS;
			float dot[R], e[R], raw, capped;

			sd_stage_k(kv, ldk, k, pk, g, b, kh, j0);
#pragma unroll
			for (int r = 0; r < R; r++)
				e[r] = 0.0f;
			if (j < g.T) {
				sd_dots<R>(qw, dq, kv + lane * ldk, dot);
#pragma unroll
				for (int r = 0; r < R; r++) {
					const i64 i = iw + r;

					if (i < g.Sq) {
						float bias = sd_bias(g, mask, mdt, nonpad, b, h, i, j);

						e[r] = sd_weight(sd_score<T>(g, dot[r], bias, &raw, &capped),
								 row[r].mx, u);
					}
				}
			}
#pragma unroll
			for (int r = 0; r < R; r++) {
				if (u == SD_U_BF16) {
					for (int jj = 0; jj < n; jj++)
						row[r].sum = cep_round<bf16>(row[r].sum +
									     __shfl_sync(SD_FULL, e[r], jj));
				} else {
					row[r].sum += cep_warp_reduce<cep_add>(e[r]);
				}
			}
		}
#pragma unroll
		for (int r = 0; r < R; r++) {
			row[r].sum = sd_round_u(row[r].sum, u);
			if (row[r].sum == 0.0f)
				row[r].sum = 1.0f;
#pragma unroll
			for (int c = 0; c < DV / 32; c++)
				acc[r][c] = 0.0f;
		}

		/* The probabilities, and Y. */
		for (i64 j0 = 0; j0 < g.T; j0 += SD_KEYS) {
			const i64 j = j0 + lane;
			const int n = g.T - j0 < SD_KEYS ? (int)(g.T - j0) : SD_KEYS;
			float dot[R], raw, capped;

			sd_stage_k(kv, ldk, k, pk, g, b, kh, j0);
			if (j < g.T)
				sd_dots<R>(qw, dq, kv + lane * ldk, dot);
#pragma unroll
			for (int r = 0; r < R; r++) {
				const i64 i = iw + r;
				float p = 0.0f;

				if (j < g.T && i < g.Sq) {
					float bias = sd_bias(g, mask, mdt, nonpad, b, h, i, j);
					float e = sd_weight(sd_score<T>(g, dot[r], bias, &raw, &capped),
							    row[r].mx, u);

					p = sd_prob<T>(e, row[r].sum, u, row[r].open, row[r].nan);
					if (qk != 0 && g.qk_mode == 3)
						st_f(qk, sd_qk_at(g, b, h, i, j), p);
				}
				ps[(warp * R + r) * SD_KEYS + lane] = p;
			}
			/* Every warp is done with the keys: the values replace them. */
			__syncthreads();
			for (int e = threadIdx.x; e < SD_KEYS * dv; e += blockDim.x) {
				const int jj = e / dv, d = e - jj * dv;
				bool past;
				i64 at;

				if (j0 + jj < g.T) {
					at = sd_row_at(g, b, kh, j0 + jj, g.Dv, &past);
					kv[e] = ld_f(past ? pv : v, at + d);
				} else {
					kv[e] = 0.0f;
				}
			}
			__syncthreads();
#pragma unroll
			for (int r = 0; r < R; r++) {
				const float *pr = ps + (warp * R + r) * SD_KEYS;

#pragma unroll
				for (int c = 0; c < DV / 32; c++) {
					const int col = lane + 32 * c;
					float a = acc[r][c];

					if (col >= dv)
						continue;
					for (int jj = 0; jj < n; jj++)
						a += pr[jj] * kv[jj * dv + col];
					acc[r][c] = a;
				}
			}
		}
#pragma unroll
		for (int r = 0; r < R; r++) {
			const i64 i = iw + r;

			if (i >= g.Sq)
				continue;
#pragma unroll
			for (int c = 0; c < DV / 32; c++) {
				const int col = lane + 32 * c;

				if (col < dv)
					st_f(y, sd_y_at(g, b, h, i) + col, acc[r][c]);
			}
		}
	}
}

/* ------------------------------------------------------------- the rows */

/* Score j of query row (b, h, i) whose scaled query is qs, straight from
 * K: the raw product in *raw, after the softcap in *capped, the bias in
 * *bias; returns the biased score. */
template <typename T>
__device__ __forceinline__ float sd_row_score(const cep_sdpa &g, const float *qs, const T *k,
					      const T *pk, const void *mask, int mdt,
					      const i64 *nonpad, i64 b, i64 h, i64 kh, i64 i, i64 j,
					      float *raw, float *capped, float *bias)
{
	bool past;
	i64 at = sd_row_at(g, b, kh, j, g.Dk, &past);
	const T *kr = (past ? pk : k) + at;
	float dot = 0.0f;

	for (i64 d = 0; d < g.Dk; d++)
		dot += qs[d] * cep_round<T>(ld_f(kr, d) * g.sq);
	*bias = sd_bias(g, mask, mdt, nonpad, b, h, i, j);
	return sd_score<T>(g, dot, *bias, raw, capped);
}

template <typename T>
__device__ __forceinline__ void sdpa_rows(const T *q, const T *k, const T *v, const T *pk,
					  const T *pv, const void *mask, const i64 *nonpad, T *y,
					  T *qk, const cep_sdpa &g, int mdt)
{
	__shared__ float sum_shared;
	float *qs = sd_shm, *ps = qs + g.Dk, *acc = ps + blockDim.x;
	const i64 rows = g.B * g.Hq * g.Sq, group = g.Hq / g.Hkv;
	const int u = g.prec;

	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const i64 i = r % g.Sq, h = (r / g.Sq) % g.Hq, b = r / (g.Sq * g.Hq), kh = h / group;
		const i64 qa = sd_q_at(g, b, h, i);
		float raw, capped, bias, s;
		sd_row row;

		/* The previous row may still be reading qs and acc. */
		__syncthreads();
		for (i64 d = threadIdx.x; d < g.Dk; d += blockDim.x)
			qs[d] = cep_round<T>(ld_f(q, qa + d) * g.sq);
		for (i64 d = threadIdx.x; d < g.Dv; d += blockDim.x)
			acc[d] = 0.0f;
		__syncthreads();
		sd_row_init(&row);
		for (i64 j = threadIdx.x; j < g.T; j += blockDim.x) {
			s = sd_row_score(g, qs, k, pk, mask, mdt, nonpad, b, h, kh, i, j, &raw, &capped,
					 &bias);
			sd_row_see(&row, s, bias, u);
			if (qk != 0 && g.qk_mode < 3)
				st_f(qk, sd_qk_at(g, b, h, i, j),
				     g.qk_mode == 0 ? raw : g.qk_mode == 1 ? capped : s);
		}
		row.open = __syncthreads_or(row.open);
		row.nan = __syncthreads_or(row.nan);
		row.mx = cep_block_reduce<cep_max_skip>(row.mx, -CEP_INF_F);
		if (row.mx == -CEP_INF_F)
			row.mx = 0.0f;

		/* The sum: one thread adds a chunk's weights in order for
		 * bfloat16, the block sums them otherwise. */
		if (threadIdx.x == 0)
			sum_shared = 0.0f;
		for (i64 j0 = 0; j0 < g.T; j0 += blockDim.x) {
			const i64 j = j0 + threadIdx.x;
			float e = 0.0f;

			if (j < g.T) {
				s = sd_row_score(g, qs, k, pk, mask, mdt, nonpad, b, h, kh, i, j, &raw,
						 &capped, &bias);
				e = sd_weight(s, row.mx, u);
			}
			if (u == SD_U_BF16) {
				const i64 n = g.T - j0 < (i64)blockDim.x ? g.T - j0 : (i64)blockDim.x;

				ps[threadIdx.x] = e;
				__syncthreads();
				if (threadIdx.x == 0) {
					for (i64 jj = 0; jj < n; jj++)
						sum_shared = cep_round<bf16>(sum_shared + ps[jj]);
				}
				__syncthreads();
			} else {
				row.sum += e;
			}
		}
		if (u != SD_U_BF16)
			row.sum = cep_block_reduce<cep_add>(row.sum, 0.0f);
		else
			row.sum = sum_shared;
		row.sum = sd_round_u(row.sum, u);
		if (row.sum == 0.0f)
			row.sum = 1.0f;

		/* The probabilities, and Y. */
		for (i64 j0 = 0; j0 < g.T; j0 += blockDim.x) {
			const i64 j = j0 + threadIdx.x;
			const i64 n = g.T - j0 < (i64)blockDim.x ? g.T - j0 : (i64)blockDim.x;

			if (j < g.T) {
				s = sd_row_score(g, qs, k, pk, mask, mdt, nonpad, b, h, kh, i, j, &raw,
						 &capped, &bias);
				float p = sd_prob<T>(sd_weight(s, row.mx, u), row.sum, u, row.open,
						     row.nan);

				ps[threadIdx.x] = p;
				if (qk != 0 && g.qk_mode == 3)
					st_f(qk, sd_qk_at(g, b, h, i, j), p);
			}
			__syncthreads();
			for (i64 d = threadIdx.x; d < g.Dv; d += blockDim.x) {
				float a = acc[d];

				for (i64 jj = 0; jj < n; jj++) {
					bool past;
					i64 at = sd_row_at(g, b, kh, j0 + jj, g.Dv, &past);

					a += ps[jj] * ld_f(past ? pv : v, at + d);
				}
				acc[d] = a;
			}
			__syncthreads();
		}
		for (i64 d = threadIdx.x; d < g.Dv; d += blockDim.x)
			st_f(y, sd_y_at(g, b, h, i) + d, acc[d]);
	}
}

/* present_key or present_value (depth elements a row) from the past cache
 * and the new rows. */
template <typename T>
__device__ __forceinline__ void sdpa_concat(const T *past, const T *now, T *dst,
					    const cep_sdpa &g, i64 depth)
{
	CEP_FOR(e, g.B * g.Hkv * g.T * depth) {
		const i64 d = e % depth, r = e / depth, j = r % g.T, bh = r / g.T;
		const i64 kh = bh % g.Hkv, b = bh / g.Hkv;
		bool from_past;
		i64 at = sd_row_at(g, b, kh, j, depth, &from_past);

		dst[e] = (from_past ? past : now)[at + d];
	}
}

#define SDPA_ARGS(T)                                                                          \
	const T *q, const T *k, const T *v, const T *pk, const T *pv, const void *mask,         \
		const i64 *nonpad, T *y, T *qk, cep_sdpa g, int mdt
#define SDPA_KERNELS(T, sfx)                                                                  \
	extern "C" __global__ void sdpa_tile4_##sfx(SDPA_ARGS(T))                               \
	{ sdpa_tile<T, 4, 128>(q, k, v, pk, pv, mask, nonpad, y, qk, g, mdt); }                  \
	extern "C" __global__ void sdpa_tile2_##sfx(SDPA_ARGS(T))                               \
	{ sdpa_tile<T, 2, 256>(q, k, v, pk, pv, mask, nonpad, y, qk, g, mdt); }                  \
	extern "C" __global__ void sdpa_rows_##sfx(SDPA_ARGS(T))                                \
	{ sdpa_rows<T>(q, k, v, pk, pv, mask, nonpad, y, qk, g, mdt); }                          \
	extern "C" __global__ void sdpa_concat_##sfx(const T *past, const T *now, T *dst,       \
						     cep_sdpa g, i64 depth)                     \
	{ sdpa_concat<T>(past, now, dst, g, depth); }

SDPA_KERNELS(float, f32)
SDPA_KERNELS(f16, f16)
SDPA_KERNELS(bf16, bf16)
