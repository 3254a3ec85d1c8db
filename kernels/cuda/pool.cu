/*
 * pool.cu — MaxPool (with its Indices), AveragePool, LpPool,
 * GlobalAveragePool and GlobalMaxPool over N x C x spatial tensors, with
 * the arithmetic of the reference kernels (kernels/cpu/pool.c) so that
 * results agree bit for bit (LpPool's powers of a p other than 1 or 2 to
 * the last bits of powf): each window is pooled in float32, its taps
 * visited in the same order (depth, then rows, then columns), a maximum
 * taking its first tap and then any greater one; a global average sums
 * in double.
 *
 * The windowed pools give a thread to each output element. Spatial shapes
 * of one, two or three dimensions all arrive as three, with leading unit
 * ones (struct cpu_window_geom). The global pools give a block to each
 * plane when planes are large and a thread when they are small. Launcher:
 * kernels/cuda/pool.c. Kernels: pool_{max,avg,lp}_<type>[_i32] (_i32: all
 * indices in 32 bits), gpool_{max,avg}_{block,thread}_<type>.
 */
#include "blockred.cuh"

/* Twin: struct cuda_pool. */
struct cep_pool {
	i64 in[3], out[3];      /* spatial sizes */
	i64 k[3], s[3], d[3];   /* kernel, stride, dilation */
	i64 pb[3], pe[3];       /* pads in effect */
	i64 planes;             /* N * C */
	i32 count_include_pad;  /* AveragePool: divide by the whole window */
	i32 column_major;       /* MaxPool: Indices in column-major order */
	float lowest;           /* a maximum over no tap */
	float p;                /* LpPool's exponent */
};

enum { POOL_MAX, POOL_AVG, POOL_LP };

/* |v|^p and the p-th root, as the host's pool_lp_term() and
 * pool_lp_root(): exact for p of 1 and 2. */
__device__ __forceinline__ float pool_lp_term(float p, float v)
{
	if (p == 1.0f)
		return fabsf(v);
	if (p == 2.0f)
		return __fmul_rn(v, v);
	return powf(fabsf(v), p);
}

__device__ __forceinline__ float pool_lp_root(float p, float sum)
{
	if (p == 1.0f)
		return sum;
	if (p == 2.0f)
		return sqrtf(sum);
	return powf(sum, 1.0f / p);
}

/* x / d for a dilation d, skipping the division for the usual d = 1. */
template <typename I> __device__ __forceinline__ I pool_div(I x, I d)
{
	return d == 1 ? x : x / d;
}

/* The taps of a window along dimension i for output position o: those in
 * [*lo, *hi) land in the input; *n_pad counts the taps that land in the
 * input or its explicit pads (not in ceil_mode's overhang). I is the
 * index type, i32 when every index of the launch fits. */
template <typename I>
__device__ __forceinline__ void pool_taps(const cep_pool &p, int i, I o, I *start, I *lo,
					  I *hi, I *n_pad)
{
	I d = (I)p.d[i], k = (I)p.k[i], in = (I)p.in[i];
	I s = o * (I)p.s[i] - (I)p.pb[i];
	I end = in + (I)p.pe[i];

	*start = s;
	*lo = s < 0 ? pool_div<I>(-s + d - 1, d) : 0;
	*hi = s < in ? pool_div<I>(in - 1 - s, d) + 1 : 0;
	if (*hi > k)
		*hi = k;
	if (*lo > *hi)
		*lo = *hi;
	*n_pad = s < end ? pool_div<I>(end - 1 - s, d) + 1 : 0;
	if (*n_pad > k)
		*n_pad = k;
}

/*
 * A thread per output element, consecutive threads along the output's
 * innermost dim so that their windows' rows are read together. The
 * element's coordinates come from one set of divisions per element, in
 * 32 bits when the launch's indices fit (I = i32, the kernels named
 * *_i32); the window loops only add.
 */
template <typename T, int KIND, typename I>
__device__ __forceinline__ void pool(const T *x, T *y, i64 *indices, const cep_pool &p)
{
	const bool MAX = KIND == POOL_MAX;

	I in1 = (I)p.in[1], in2 = (I)p.in[2];
	I out0 = (I)p.out[0], out1 = (I)p.out[1], out2 = (I)p.out[2];
	I d0 = (I)p.d[0], d1 = (I)p.d[1], d2 = (I)p.d[2];
	I plane_in = (I)p.in[0] * in1 * in2;
	I plane_out = out0 * out1 * out2;
	I total = (I)p.planes * plane_out;

	for (I o = (I)(blockIdx.x * blockDim.x + threadIdx.x); o < total;
	     o += (I)(gridDim.x * blockDim.x)) {
		I q = o / out2, ox = o - q * out2;
		I q2 = q / out1, oy = q - q2 * out1;
		I pl = q2 / out0, oz = q2 - pl * out0;
		I sz, z0, z1, nz, sy, y0, y1, ny, sx, x0, x1, nx;
		I base = pl * plane_in;
		i64 best = -1;
		float acc = MAX ? p.lowest : 0.0f;

		pool_taps<I>(p, 0, oz, &sz, &z0, &z1, &nz);
		pool_taps<I>(p, 1, oy, &sy, &y0, &y1, &ny);
		pool_taps<I>(p, 2, ox, &sx, &x0, &x1, &nx);
		for (I a = z0; a < z1; a++) {
			I iz = sz + a * d0;

			for (I b = y0; b < y1; b++) {
				I iy = sy + b * d1;
				const T *row = x + base + (iz * in1 + iy) * in2;

				for (I e = x0; e < x1; e++) {
					I ix = sx + e * d2;
					float v = ld_f(row, ix);

					if (KIND == POOL_LP) {
						acc = __fadd_rn(acc, pool_lp_term(p.p, v));
					} else if (!MAX) {
						acc += v;
					} else if (best < 0 || v > acc) {
						acc = v;
						best = p.column_major
							? (i64)iz + (i64)iy * p.in[0] +
								  (i64)ix * p.in[0] * p.in[1]
							: ((i64)iz * in1 + iy) * in2 + ix;
					}
				}
			}
		}
		if (KIND == POOL_LP) {
			acc = pool_lp_root(p.p, acc);
		} else if (!MAX) {
			I count = p.count_include_pad ? nz * ny * nx
						      : (z1 - z0) * (y1 - y0) * (x1 - x0);

			acc /= (float)count;
		}
		st_f(y, o, acc);
		if (MAX && indices != 0)
			indices[o] = best < 0 ? -1 : (i64)base + best;
	}
}

/* The global pools of planes of n elements. The maximum is the host's
 * `if (i == 0 || v > best)`: the first element, then any greater one, so
 * NaN wins only as the first. */
template <typename T, bool MAX, bool BLOCK>
__device__ __forceinline__ void gpool(const T *x, T *y, i64 planes, i64 n)
{
	i64 o0 = BLOCK ? blockIdx.x : (i64)blockIdx.x * blockDim.x + threadIdx.x;
	i64 ostep = BLOCK ? gridDim.x : (i64)gridDim.x * blockDim.x;
	i64 k0 = BLOCK ? threadIdx.x : 0, kstep = BLOCK ? blockDim.x : 1;

	for (i64 pl = o0; pl < planes; pl += ostep) {
		i64 base = pl * n;
		double sum = 0.0;
		float best = -CEP_INF_F;

		for (i64 i = k0; i < n; i += kstep) {
			float v = ld_f(x, base + i);

			if (MAX)
				best = cep_max_skip::f(best, v);
			else
				sum += v;
		}
		if (BLOCK) {
			if (MAX)
				best = cep_block_reduce<cep_max_skip>(best, -CEP_INF_F);
			else
				sum = cep_block_reduce<cep_add>(sum, 0.0);
		}
		if (BLOCK && threadIdx.x != 0)
			continue;
		if (MAX) {
			float first = n > 0 ? ld_f(x, base) : 0.0f;

			st_f(y, pl, first != first ? first : best);
		} else {
			/* An empty plane averages to NaN (0 / 0), as on the host. */
			st_f(y, pl, (float)(sum / (double)n));
		}
	}
}

#define POOL_KERNELS(T, sfx)                                                                 \
	extern "C" __global__ void pool_max_##sfx(const T *x, T *y, i64 *indices, cep_pool p)     \
	{ pool<T, POOL_MAX, i64>(x, y, indices, p); }                                         \
	extern "C" __global__ void pool_max_##sfx##_i32(const T *x, T *y, i64 *indices, cep_pool p) \
	{ pool<T, POOL_MAX, i32>(x, y, indices, p); }

#define POOL_AVG_KERNELS(T, sfx)                                                             \
	extern "C" __global__ void pool_avg_##sfx(const T *x, T *y, i64 *indices, cep_pool p)     \
	{ pool<T, POOL_AVG, i64>(x, y, indices, p); }                                         \
	extern "C" __global__ void pool_avg_##sfx##_i32(const T *x, T *y, i64 *indices, cep_pool p) \
	{ pool<T, POOL_AVG, i32>(x, y, indices, p); }                                         \
	extern "C" __global__ void pool_lp_##sfx(const T *x, T *y, i64 *indices, cep_pool p)      \
	{ pool<T, POOL_LP, i64>(x, y, indices, p); }                                          \
	extern "C" __global__ void pool_lp_##sfx##_i32(const T *x, T *y, i64 *indices, cep_pool p) \
	{ pool<T, POOL_LP, i32>(x, y, indices, p); }

#define GPOOL_KERNELS(T, sfx)                                                             \
	extern "C" __global__ void gpool_max_block_##sfx(const T *x, T *y, i64 planes, i64 n)  \
	{ gpool<T, true, true>(x, y, planes, n); }                                        \
	extern "C" __global__ void gpool_max_thread_##sfx(const T *x, T *y, i64 planes, i64 n) \
	{ gpool<T, true, false>(x, y, planes, n); }                                       \
	extern "C" __global__ void gpool_avg_block_##sfx(const T *x, T *y, i64 planes, i64 n)  \
	{ gpool<T, false, true>(x, y, planes, n); }                                       \
	extern "C" __global__ void gpool_avg_thread_##sfx(const T *x, T *y, i64 planes, i64 n) \
	{ gpool<T, false, false>(x, y, planes, n); }

POOL_KERNELS(float, f32)
POOL_KERNELS(f16, f16)
POOL_KERNELS(bf16, bf16)
POOL_KERNELS(i8, i8)
POOL_KERNELS(u8, u8)
POOL_AVG_KERNELS(float, f32)
POOL_AVG_KERNELS(f16, f16)
POOL_AVG_KERNELS(bf16, bf16)
GPOOL_KERNELS(float, f32)
GPOOL_KERNELS(f16, f16)
GPOOL_KERNELS(bf16, bf16)
