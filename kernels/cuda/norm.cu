/*
 * norm.cu — the layer normalizations and BatchNormalization (its
 * inference and training forms), with the arithmetic of the reference kernels
 * (kernels/cpu/norm.c): statistics and the affine step in double, each
 * result rounded once to its type.
 *
 * The layer normalizations (LayerNormalization and onnxruntime's
 * simplified and skip forms, one kernel) give each row of the input (seen
 * as rows x cols, split at axis) a block: the threads stride along the row
 * and combine the sum, then the sum of squared deviations, through warp
 * shuffles; the first thread stores the row's Mean and InvStdDev when they
 * are asked for. The simplified forms subtract no mean; the skip forms
 * normalize X + skip (+ bias), added in float, skip's rows repeating over
 * X's, and store that sum where input_skip_bias_sum is asked for. Scale
 * and B are read by column, as one value, or through numpy broadcasting
 * strides over the input's dims.
 *
 * Rows of at most 32 * V * NV elements (V per 16 bytes, cols a multiple
 * of V) whose Scale and B are read by column or as one value take the
 * warp kernels instead (layernorm_warp_<type>_<NV>): a warp per row, the
 * row held in registers (elem.cuh's cep_row_load), loaded once with
 * 16-byte accesses, the sums combined by shuffles; the statistics are
 * combined in double, the affine step is float (see layernorm_warp).
 *
 * BatchNormalization first folds each channel's (or element's, spatial=0)
 * scale, B, mean and var into y = x * a + b, with a and b in the
 * workspace (bn_coef), then maps every element (bn_apply_<type>). In
 * training mode (opset 14 on) a block per channel takes the batch's mean
 * and population variance in double, in two passes, instead of the
 * inputs', and writes the running statistics the model names
 * (bn_train_coef_<type>). Its parameters may be typed apart from X
 * (opsets 14 and 15), so they are loaded by a type code rather than
 * through a kernel per combination.
 *
 * Launcher: kernels/cuda/norm.c.
 */
#include "blockred.cuh"
#include "elem.cuh"

enum { LN_ABSENT, LN_ONE, LN_COLUMN, LN_BCAST }; /* enum cpu_ln_mode */

/* Twin: struct cuda_ln. */
struct cep_ln {
	i64 rows, cols;
	i64 skip_rows;                 /* rows of skip, repeated over X's; 0: none */
	double eps;
	i32 rank;
	i8 smode, bmode;               /* LN_* for Scale and B */
	i8 stash_bf16;                 /* Mean and InvStdDev are bfloat16, not float */
	i8 rms;                        /* the simplified forms: no mean subtracted */
	i64 dims[CEP_MAX_RANK];        /* (rank) of X */
	i64 sstride[CEP_MAX_RANK];     /* (rank) Scale's element strides, 0: broadcast */
	i64 bstride[CEP_MAX_RANK];     /* (rank) B's */
};

/* Element e of X's parameter q (Scale or B) as a double. */
template <typename T>
__device__ __forceinline__ double ln_param(const T *q, int mode, const i64 *stride,
					   const cep_ln &p, i64 e, i64 col)
{
	i64 off = 0;

	switch (mode) {
	case LN_ABSENT: return 0.0;
	case LN_ONE: return ld_f(q, 0);
	case LN_COLUMN: return ld_f(q, col);
	default:
		for (int d = p.rank - 1; d >= 0; d--) {
			i64 k = e % p.dims[d];

			off += k * stride[d];
			e /= p.dims[d];
		}
		return ld_f(q, off);
	}
}

/* Element j of row r of what is normalized, in float: X's, and for the
 * skip forms X + skip (+ bias), one rounded addition at a time. */
template <typename T>
__device__ __forceinline__ float ln_x(const T *x, const T *k, const T *a, const cep_ln &p, i64 r,
				      i64 j)
{
	float v = ld_f(x, r * p.cols + j);

	if (k != 0) {
		v = __fadd_rn(v, ld_f(k, (r % p.skip_rows) * p.cols + j));
		if (a != 0)
			v = __fadd_rn(v, ld_f(a, j));
	}
	return v;
}

/* Row r's Mean and InvStdDev, where asked for, in the stash type. */
__device__ __forceinline__ void ln_stash(void *mean_out, void *inv_out, const cep_ln &p, i64 r,
					 float m, float inv)
{
	if (mean_out != 0 && p.stash_bf16)
		st_f((bf16 *)mean_out, r, m);
	else if (mean_out != 0)
		st_f((float *)mean_out, r, m);
	if (inv_out != 0 && p.stash_bf16)
		st_f((bf16 *)inv_out, r, inv);
	else if (inv_out != 0)
		st_f((float *)inv_out, r, inv);
}

template <typename T>
__device__ __forceinline__ void layernorm(const T *x, const T *k, const T *a, const T *s,
					  const T *b, T *y, void *mean_out, void *inv_out,
					  T *sum_out, const cep_ln &p)
{
	for (i64 r = blockIdx.x; r < p.rows; r += gridDim.x) {
		i64 base = r * p.cols;
		double sum = 0.0, sq = 0.0, m = 0.0, inv;

		if (!p.rms) {
			for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x)
				sum += (double)ln_x(x, k, a, p, r, j);
			sum = cep_block_reduce<cep_add>(sum, 0.0);
			m = sum / (double)p.cols;
		}
		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			float v = ln_x(x, k, a, p, r, j);
			double d = (double)v - m;

			if (sum_out != 0)
				st_f(sum_out, base + j, v);
			sq += d * d;
		}
		sq = cep_block_reduce<cep_add>(sq, 0.0);
		inv = 1.0 / sqrt(sq / (double)p.cols + p.eps);
		if (threadIdx.x == 0)
			ln_stash(mean_out, inv_out, p, r, (float)m, (float)inv);
		for (i64 j = threadIdx.x; j < p.cols; j += blockDim.x) {
			i64 e = base + j;
			double sv = ln_param(s, p.smode, p.sstride, p, e, j);
			double bv = ln_param(b, p.bmode, p.bstride, p, e, j);

			/* Rounded step by step, as the host does it: no fused multiply-add. */
			st_f(y, e, (float)__dadd_rn(__dmul_rn(__dmul_rn((double)ln_x(x, k, a, p, r, j) - m,
								    inv), sv), bv));
		}
	}
}

/*
 * The warp kernels keep only the row in registers (Scale and B are read
 * per vector as the results are made, from the cache: keeping them too
 * took the kernel past 180 registers, a block per SM, and a chain of
 * waits per row). The skip forms add skip and bias into the row as it
 * arrives, a vector at a time, and store the sum there. The mean is
 * summed in double; the squared deviations are summed in float per lane
 * (at most 32 of them) and in double across lanes; the affine step is
 * float: (x - mean) * inv * scale + b, within a few float ulps of the
 * block kernel's double steps. A row holding an infinity or values past
 * 1e18, whose squares float cannot hold, goes through ln_row_wide() in
 * double instead.
 */
/* layernorm_warp()'s rare row of huge values, by one warp in double from
 * memory, as the block kernel computes (mean m already known). */
template <typename T>
__device__ __forceinline__ void ln_row_wide(const T *x, const T *k, const T *a, const T *s,
					 const T *b, T *y, void *mean_out, void *inv_out,
					 const cep_ln &p, i64 r, double m, float s1, float b1)
{
	const int lane = threadIdx.x & 31;
	const i64 base = r * p.cols;
	double sq = 0.0, inv;

	for (i64 j = lane; j < p.cols; j += 32) {
		double d = (double)ln_x(x, k, a, p, r, j) - m;

		sq += d * d;
	}
	sq = cep_warp_reduce<cep_add>(sq);
	inv = 1.0 / sqrt(sq / (double)p.cols + p.eps);
	if (lane == 0)
		ln_stash(mean_out, inv_out, p, r, (float)m, (float)inv);
	for (i64 j = lane; j < p.cols; j += 32) {
		double sc = p.smode == LN_COLUMN ? (double)ld_f(s, j) : p.smode == LN_ONE ? s1 : 0.0;
		double bc = p.bmode == LN_COLUMN ? (double)ld_f(b, j) : p.bmode == LN_ONE ? b1 : 0.0;

		st_f(y, base + j, (float)__dadd_rn(__dmul_rn(__dmul_rn((double)ln_x(x, k, a, p, r, j) - m,
								      inv), sc), bc));
	}
}

template <typename T, int NV>
__device__ __forceinline__ void layernorm_warp(const T *x, const T *k, const T *a, const T *s,
					       const T *b, T *y, void *mean_out, void *inv_out,
					       T *sum_out, const cep_ln &p)
{
	const int V = 16 / sizeof(T);
	int lane = threadIdx.x & 31;
	i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	i64 warps = ((i64)gridDim.x * blockDim.x) >> 5;
	bool vx = cep_vec_aligned<T, V>(x) && cep_vec_aligned<T, V>(y);
	bool vs = p.smode == LN_COLUMN && cep_vec_aligned<T, V>(s);
	bool vb = p.bmode == LN_COLUMN && cep_vec_aligned<T, V>(b);
	bool vk = k != 0 && cep_vec_aligned<T, V>(k);
	bool va = a != 0 && cep_vec_aligned<T, V>(a);
	bool vsum = sum_out != 0 && cep_vec_aligned<T, V>(sum_out);
	float s1 = p.smode == LN_ONE ? ld_f(s, 0) : 0.0f;
	float b1 = p.bmode == LN_ONE ? ld_f(b, 0) : 0.0f;

	for (i64 r = warp; r < p.rows; r += warps) {
		float v[NV][V];
		double sum = 0.0, sq;
		float sqf = 0.0f, mf, invf;

		float amax = 0.0f;

		cep_row_load<T, V, NV>(x + r * p.cols, p.cols, vx, v, 0.0f);
		if (k != 0) {
#pragma unroll
			for (int q = 0; q < NV; q++) {
				float w[V], c[V];

				cep_row_load1<T, V>(k + (r % p.skip_rows) * p.cols, p.cols, vk, q, w, 0.0f);
				if (a != 0)
					cep_row_load1<T, V>(a, p.cols, va, q, c, 0.0f);
#pragma unroll
				for (int e = 0; e < V; e++) {
					v[q][e] = __fadd_rn(v[q][e], w[e]);
					if (a != 0)
						v[q][e] = __fadd_rn(v[q][e], c[e]);
				}
			}
			if (sum_out != 0)
				cep_row_store<T, V, NV>(sum_out + r * p.cols, p.cols, vsum, v);
		}
#pragma unroll
		for (int q = 0; q < NV; q++) {
#pragma unroll
			for (int e = 0; e < V; e++) {
				sum += (double)v[q][e];
				amax = fmaxf(amax, fabsf(v[q][e]));
			}
		}
		sum = cep_warp_reduce<cep_add>(sum) / (double)p.cols;
		if (p.rms)
			sum = 0.0;
		amax = cep_warp_reduce<cep_max_skip>(amax);
		if (!(amax < 1e18f)) {
			/* Values whose squares overflow float (bfloat16 reaches
			 * float's range) or an infinity: this row in double. */
			ln_row_wide(x, k, a, s, b, y, mean_out, inv_out, p, r, sum, s1, b1);
			continue;
		}
		mf = (float)sum;
#pragma unroll
		for (int q = 0; q < NV; q++) {
#pragma unroll
			for (int e = 0; e < V; e++) {
				float d = v[q][e] - mf;

				/* Elements past the row must add nothing. */
				if (((i64)q * 32 + lane) * V < p.cols)
					sqf += d * d;
			}
		}
		sq = cep_warp_reduce<cep_add>((double)sqf);
		sq = 1.0 / sqrt(sq / (double)p.cols + p.eps);
		invf = (float)sq;
		if (lane == 0)
			ln_stash(mean_out, inv_out, p, r, mf, invf);
#pragma unroll
		for (int q = 0; q < NV; q++) {
			float sk[V], bk[V];

			if (p.smode == LN_COLUMN)
				cep_row_load1<T, V>(s, p.cols, vs, q, sk, 0.0f);
			if (p.bmode == LN_COLUMN)
				cep_row_load1<T, V>(b, p.cols, vb, q, bk, 0.0f);
#pragma unroll
			for (int e = 0; e < V; e++) {
				float sc = p.smode == LN_COLUMN ? sk[e] : p.smode == LN_ONE ? s1 : 0.0f;
				float bc = p.bmode == LN_COLUMN ? bk[e] : p.bmode == LN_ONE ? b1 : 0.0f;

				v[q][e] = (v[q][e] - mf) * invf * sc + bc;
			}
		}
		cep_row_store<T, V, NV>(y + r * p.cols, p.cols, vx, v);
	}
}

#define LN_WARP_KERNEL(T, sfx, NV)                                                          \
	extern "C" __global__ void layernorm_warp_##sfx##_##NV(                             \
		const T *x, const T *k, const T *a, const T *s, const T *b, T *y,           \
		void *mean_out, void *inv_out, T *sum_out, cep_ln p)                        \
	{                                                                                   \
		layernorm_warp<T, NV>(x, k, a, s, b, y, mean_out, inv_out, sum_out, p);     \
	}

#define LN_KERNEL(T, sfx)                                                                   \
	extern "C" __global__ void layernorm_##sfx(const T *x, const T *k, const T *a,       \
						   const T *s, const T *b, T *y,             \
						   void *mean_out, void *inv_out, T *sum_out, \
						   cep_ln p)                                 \
	{                                                                                   \
		layernorm<T>(x, k, a, s, b, y, mean_out, inv_out, sum_out, p);              \
	}

LN_KERNEL(float, f32)
LN_KERNEL(f16, f16)
LN_KERNEL(bf16, bf16)
/* Up to 1024 columns: NV vectors of 4 floats or 8 halves per lane. */
LN_WARP_KERNEL(float, f32, 1)
LN_WARP_KERNEL(float, f32, 2)
LN_WARP_KERNEL(float, f32, 3)
LN_WARP_KERNEL(float, f32, 4)
LN_WARP_KERNEL(float, f32, 6)
LN_WARP_KERNEL(float, f32, 8)
LN_WARP_KERNEL(f16, f16, 1)
LN_WARP_KERNEL(f16, f16, 2)
LN_WARP_KERNEL(f16, f16, 3)
LN_WARP_KERNEL(f16, f16, 4)
LN_WARP_KERNEL(bf16, bf16, 1)
LN_WARP_KERNEL(bf16, bf16, 2)
LN_WARP_KERNEL(bf16, bf16, 3)
LN_WARP_KERNEL(bf16, bf16, 4)

/* ------------------------------------------------------ BatchNormalization */

enum { BN_F32, BN_F16, BN_BF16 };

/* Element i of a float tensor whose type is a BN_* code. */
__device__ __forceinline__ double bn_load(const void *q, int code, i64 i)
{
	switch (code) {
	case BN_F16: return ld_f((const f16 *)q, i);
	case BN_BF16: return ld_f((const bf16 *)q, i);
	default: return ld_f((const float *)q, i);
	}
}

/* Twin: struct cuda_bn. */
struct cep_bn {
	i64 n;                 /* elements of X */
	i64 channels, inner;   /* X as (N, channels, inner) */
	i64 n_params;          /* elements of each of scale, B, mean, var */
	double eps;
	i32 spatial;           /* one a, b per channel, else per (channel, inner) */
	i32 code_sb, code_mv;  /* BN_* types of scale and B, of mean and var */
	i32 training;          /* training_mode: the batch's statistics */
	double momentum;       /* training: of the running statistics */
};

/* Stores v into element i of a float tensor whose type is a BN_* code. */
__device__ __forceinline__ void bn_store(void *q, int code, i64 i, double v)
{
	switch (code) {
	case BN_F16: st_f((f16 *)q, i, (float)v); break;
	case BN_BF16: st_f((bf16 *)q, i, (float)v); break;
	default: st_f((float *)q, i, (float)v); break;
	}
}

/*
 * Training: a block per channel sums it over N and the spatial dims, then
 * sums its squared deviations from the mean; the first thread folds the
 * batch's statistics into a and b and writes running_mean and running_var
 * (NULL: not named) as input * momentum + batch * (1 - momentum).
 */
template <typename T>
__device__ __forceinline__ void bn_train_coef(const T *x, const void *scale, const void *bias,
					      const void *mean, const void *var, double *ab,
					      void *rmean, void *rvar, const cep_bn &p)
{
	i64 count = (p.n / (p.channels * p.inner > 0 ? p.channels * p.inner : 1)) * p.inner;

	for (i64 ch = blockIdx.x; ch < p.channels; ch += gridDim.x) {
		double sum = 0.0, sq = 0.0;

		for (i64 e = threadIdx.x; e < count; e += blockDim.x) {
			i64 n = e / p.inner, j = e - n * p.inner;

			sum += (double)ld_f(x, (n * p.channels + ch) * p.inner + j);
		}
		sum = cep_block_reduce<cep_add>(sum, 0.0);
		double bm = count > 0 ? sum / (double)count : 0.0;

		for (i64 e = threadIdx.x; e < count; e += blockDim.x) {
			i64 n = e / p.inner, j = e - n * p.inner;
			double d = (double)ld_f(x, (n * p.channels + ch) * p.inner + j) - bm;

			sq = __dadd_rn(sq, __dmul_rn(d, d));
		}
		sq = cep_block_reduce<cep_add>(sq, 0.0);
		if (threadIdx.x != 0)
			continue;
		double bv = count > 0 ? sq / (double)count : 0.0;
		double a = bn_load(scale, p.code_sb, ch) / sqrt(bv + p.eps);

		ab[ch] = a;
		ab[p.n_params + ch] = __dsub_rn(bn_load(bias, p.code_sb, ch), __dmul_rn(bm, a));
		if (rmean != 0)
			bn_store(rmean, p.code_mv, ch,
				 __dadd_rn(__dmul_rn(bn_load(mean, p.code_mv, ch), p.momentum),
					   __dmul_rn(bm, 1.0 - p.momentum)));
		if (rvar != 0)
			bn_store(rvar, p.code_mv, ch,
				 __dadd_rn(__dmul_rn(bn_load(var, p.code_mv, ch), p.momentum),
					   __dmul_rn(bv, 1.0 - p.momentum)));
	}
}

/* ab[k] = scale / sqrt(var + eps), ab[n_params + k] = B - mean * ab[k]. */
extern "C" __global__ void bn_coef(const void *scale, const void *bias, const void *mean,
				   const void *var, double *ab, cep_bn p)
{
	CEP_FOR(k, p.n_params) {
		double a = bn_load(scale, p.code_sb, k) / sqrt(bn_load(var, p.code_mv, k) + p.eps);

		ab[k] = a;
		ab[p.n_params + k] = __dsub_rn(bn_load(bias, p.code_sb, k),
					       __dmul_rn(bn_load(mean, p.code_mv, k), a));
	}
}

template <typename T>
__device__ __forceinline__ void bn_apply(const T *x, T *y, const double *ab, const cep_bn &p)
{
	i64 per = p.channels * p.inner;

	CEP_FOR(i, p.n) {
		i64 k = p.spatial ? (i / p.inner) % p.channels : i % per;

		st_f(y, i, (float)__dadd_rn(__dmul_rn((double)ld_f(x, i), ab[k]), ab[p.n_params + k]));
	}
}

#define BN_KERNEL(T, sfx)                                                              \
	extern "C" __global__ void bn_apply_##sfx(const T *x, T *y, const double *ab, cep_bn p) \
	{                                                                              \
		bn_apply<T>(x, y, ab, p);                                              \
	}

BN_KERNEL(float, f32)
BN_KERNEL(f16, f16)
BN_KERNEL(bf16, bf16)

#define BN_TRAIN_KERNEL(T, sfx)                                                         \
	extern "C" __global__ void bn_train_coef_##sfx(const T *x, const void *scale,       \
						       const void *bias, const void *mean,  \
						       const void *var, double *ab,         \
						       void *rmean, void *rvar, cep_bn p)    \
	{ bn_train_coef<T>(x, scale, bias, mean, var, ab, rmean, rvar, p); }

BN_TRAIN_KERNEL(float, f32)
BN_TRAIN_KERNEL(f16, f16)
BN_TRAIN_KERNEL(bf16, bf16)
