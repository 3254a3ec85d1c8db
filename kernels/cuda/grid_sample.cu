/*
 * grid_sample.cu — GridSample and AffineGrid, computed as the reference
 * kernels compute them (kernels/cpu/grid_sample.c says what they are):
 * every float32 operation rounded one at a time in the host's order (no
 * fused multiply-add), so that positions, weights and sums, and with them
 * the results, match the host's bit for bit.
 *
 * gs_<x>_<grid>: a thread per output element (image, channel, position)
 * works out the taps of each spatial dim from its grid coordinate (the
 * last spatial dim first in the grid), then the nested weighted sums, the
 * last dim innermost; nearest copies the element (or writes zero outside).
 * X of every stored type, the grid float32, float16 or bfloat16.
 *
 * ag_<type>: a thread per grid value applies theta to the homogeneous
 * coordinates of its position. size is an int64 input whose values the
 * planner does not give the launcher: the kernel reads it and a size
 * other than the plan's output is latched into the fault record, nothing
 * written. Launcher: kernels/cuda/grid_sample.c.
 */
#include "common.cuh"

#define GS_MAX_DIMS (CEP_MAX_RANK - 2)
#define GS_FAR 1e9f
#define GS_CUBIC_A (-0.75f)

/* The values of enum cpu_gs_mode and enum cpu_gs_padding. */
enum { GS_LINEAR = 0, GS_NEAREST = 1, GS_CUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

/* Twin: struct cuda_gs (kernels/cuda/grid_sample.c). */
struct cep_gs {
	i64 n;                      /* elements of Y */
	i64 ch;                     /* channels */
	i64 pin, pout;              /* positions per channel of X and Y */
	i32 r;                      /* spatial dims */
	i32 mode, padding, align;
	i64 in[GS_MAX_DIMS];        /* (r) X's spatial sizes */
};

/* The taps of one output position along one input dim. */
struct gs_taps {
	int taps;
	i64 idx[4];                 /* input index; -1: outside (zeros) */
	float w[4];
};

__device__ __forceinline__ i64 gs_floor(float v)
{
	if (!(v > -GS_FAR))
		return -(i64)GS_FAR;
	if (v > GS_FAR)
		return (i64)GS_FAR;
	return (i64)floorf(v);
}

__device__ __forceinline__ float gs_reflect(float v, float lo, float hi)
{
	float range = __fsub_rn(hi, lo), dx, q, r;

	if (range <= 0.0f)
		return lo;
	if (v >= lo && v <= hi)
		return v;
	dx = v < lo ? __fsub_rn(lo, v) : __fsub_rn(v, hi);
	q = floorf(__fdiv_rn(dx, range));
	r = __fsub_rn(dx, __fmul_rn(q, range));
	if (fmodf(q, 2.0f) == 0.0f)
		return v < lo ? __fadd_rn(lo, r) : __fsub_rn(hi, r);
	return v < lo ? __fsub_rn(hi, r) : __fadd_rn(lo, r);
}

/* Keys' weights, as the host's gs_cubic() rounds them. */
__device__ __forceinline__ void gs_cubic(float t, float *w)
{
	const float a = GS_CUBIC_A;
	float x = fabsf(t), x1 = __fadd_rn(x, 1.0f), y = __fsub_rn(1.0f, x);
	float y1 = __fsub_rn(2.0f, x);
	float ap2 = __fadd_rn(a, 2.0f), ap3 = __fadd_rn(a, 3.0f);

	/* ((a * x1 - 5a) * x1 + 8a) * x1 - 4a */
	w[0] = __fsub_rn(__fmul_rn(__fadd_rn(__fmul_rn(__fsub_rn(__fmul_rn(a, x1),
							      __fmul_rn(5.0f, a)), x1),
					     __fmul_rn(8.0f, a)), x1), __fmul_rn(4.0f, a));
	/* ((a + 2) * x - (a + 3)) * x * x + 1 */
	w[1] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(__fmul_rn(ap2, x), ap3), x), x), 1.0f);
	w[2] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(__fmul_rn(ap2, y), ap3), y), y), 1.0f);
	w[3] = __fsub_rn(__fmul_rn(__fadd_rn(__fmul_rn(__fsub_rn(__fmul_rn(a, y1),
							      __fmul_rn(5.0f, a)), y1),
					     __fmul_rn(8.0f, a)), y1), __fmul_rn(4.0f, a));
}

__device__ __forceinline__ i64 gs_tap_index(const cep_gs &p, i64 i, i64 n, float lo, float hi)
{
	if (i >= 0 && i < n)
		return i;
	if (p.padding == GS_BORDER)
		return i < 0 ? 0 : n - 1;
	if (p.padding == GS_REFLECTION) {
		i64 j = (i64)gs_reflect((float)i, lo, hi);

		return j < 0 ? 0 : j >= n ? n - 1 : j;
	}
	return -1;
}

__device__ __forceinline__ void gs_taps_of(const cep_gs &p, float g, i64 n, gs_taps *t)
{
	float fn = (float)n, fn1 = (float)(n - 1);
	float lo = p.align ? 0.0f : -0.5f;
	float hi = p.align ? fn1 : __fsub_rn(fn, 0.5f);
	float v = p.align ? __fmul_rn(__fdiv_rn(__fadd_rn(g, 1.0f), 2.0f), fn1)
			  : __fdiv_rn(__fsub_rn(__fmul_rn(__fadd_rn(g, 1.0f), fn), 1.0f), 2.0f);
	i64 x0;

	if (p.mode == GS_NEAREST)
		v = rintf(v);
	if (v < lo || v > hi) {
		if (p.padding == GS_BORDER)
			v = v < 0.0f ? 0.0f : v > fn1 ? fn1 : v;
		else if (p.padding == GS_REFLECTION)
			v = gs_reflect(v, lo, hi);
	}
	x0 = gs_floor(v);
	if (p.mode == GS_NEAREST) {
		t->taps = 1;
		t->idx[0] = gs_tap_index(p, x0, n, lo, hi);
		t->w[0] = 1.0f;
		return;
	}
	if (p.mode == GS_LINEAR) {
		t->taps = 2;
		t->w[1] = __fsub_rn(v, (float)x0);
		t->w[0] = __fsub_rn(1.0f, t->w[1]);
	} else {
		t->taps = 4;
		gs_cubic(__fsub_rn(v, (float)x0), t->w);
		x0 -= 1;
	}
	for (int k = 0; k < t->taps; k++)
		t->idx[k] = gs_tap_index(p, x0 + k, n, lo, hi);
}

template <typename T>
__device__ __forceinline__ float gs_interp(const T *x, const cep_gs &p, const gs_taps *t)
{
	float part[GS_MAX_DIMS];
	int k[GS_MAX_DIMS], r = p.r, d;

	for (d = 0; d < r; d++) {
		part[d] = 0.0f;
		k[d] = 0;
	}
	for (;;) {
		i64 off = 0;
		bool inside = true;
		float v = 0.0f;

		for (d = 0; d < r; d++) {
			i64 i = t[d].idx[k[d]];

			inside &= i >= 0;
			off = off * p.in[d] + i;
		}
		if (inside)
			v = ld_f(x, off);
		part[r - 1] = __fadd_rn(part[r - 1], __fmul_rn(t[r - 1].w[k[r - 1]], v));
		for (d = r - 1; d >= 0; d--) {
			if (++k[d] < t[d].taps)
				break;
			k[d] = 0;
			if (d == 0)
				return part[0];
			part[d - 1] = __fadd_rn(part[d - 1], __fmul_rn(t[d - 1].w[k[d - 1]], part[d]));
			part[d] = 0.0f;
		}
	}
}

template <typename T, typename G>
__device__ __forceinline__ void gs(const T *x, const G *grid, T *y, const cep_gs &p)
{
	CEP_FOR(e, p.n) {
		i64 pos = e % p.pout, bc = e / p.pout, b = bc / p.ch;
		i64 g0 = (b * p.pout + pos) * p.r;
		const T *xc = x + bc * p.pin;
		gs_taps t[GS_MAX_DIMS];

		/* grid[..., 0] is along the last spatial dim. */
		for (int d = 0; d < p.r; d++)
			gs_taps_of(p, ld_f(grid, g0 + p.r - 1 - d), p.in[d], &t[d]);
		if (p.mode == GS_NEAREST) {
			i64 off = 0;
			bool inside = true;
			T v{};

			for (int d = 0; d < p.r; d++) {
				inside &= t[d].idx[0] >= 0;
				off = off * p.in[d] + t[d].idx[0];
			}
			if (inside)
				v = xc[off];
			y[e] = v;
			continue;
		}
		st_f(y, e, gs_interp(xc, p, t));
	}
}

#define GS_KERNEL(T, tsfx, G, gsfx)                                                        \
	extern "C" __global__ void gs_##tsfx##_##gsfx(const T *x, const G *grid, T *y,     \
						      cep_gs p)                            \
	{                                                                                  \
		gs<T, G>(x, grid, y, p);                                                   \
	}

#define GS_KERNELS(T, tsfx)               \
	GS_KERNEL(T, tsfx, float, f32)    \
	GS_KERNEL(T, tsfx, f16, f16)      \
	GS_KERNEL(T, tsfx, bf16, bf16)

GS_KERNELS(float, f32)
GS_KERNELS(f16, f16)
GS_KERNELS(bf16, bf16)
GS_KERNELS(i64, i64)
GS_KERNELS(i32, i32)
GS_KERNELS(i8, i8)
GS_KERNELS(u8, u8)
GS_KERNELS(b8, bool)

/* ---------------------------------------------------------------- AffineGrid */

/* Twin: struct cuda_ag. */
struct cep_ag {
	i64 n;                      /* grid values */
	i64 plane;                  /* positions per image */
	i64 dims[4];                /* (r + 1) the grid's N, then its spatial dims */
	i32 r;                      /* 2 or 3 */
	i32 align;
};

/* The base coordinate of position i of n along one dim. */
__device__ __forceinline__ float ag_base(i64 i, i64 n, bool align)
{
	if (align)
		return n > 1 ? __fsub_rn(__fdiv_rn((float)(2 * i), (float)(n - 1)), 1.0f) : 0.0f;
	return __fsub_rn(__fdiv_rn((float)(2 * i + 1), (float)n), 1.0f);
}

template <typename T>
__device__ __forceinline__ void ag(const T *theta, const i64 *size, T *y, const cep_ag &p,
				   cep_fault *fault, u64 site)
{
	/* size is (N, C, spatial...): C is not the grid's. */
	for (int d = 0; d <= p.r; d++) {
		i64 v = size[d == 0 ? 0 : d + 1];

		if (v != p.dims[d]) {
			if (blockIdx.x == 0 && threadIdx.x == 0)
				cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, d, v, p.dims[d]);
			return;
		}
	}
	CEP_FOR(e, p.n) {
		i64 j = e % p.r, at = e / p.r, pos = at % p.plane, b = at / p.plane, q = pos;
		i64 t0 = (b * p.r + j) * (p.r + 1);
		float base[3], acc = 0.0f;

		/* base[0] is x (along the last dim), then y, z. */
		for (int d = p.r - 1; d >= 0; d--) {
			i64 len = p.dims[1 + d];

			base[p.r - 1 - d] = ag_base(q % len, len, p.align != 0);
			q /= len;
		}
		for (int d = 0; d < p.r; d++)
			acc = __fadd_rn(acc, __fmul_rn(ld_f(theta, t0 + d), base[d]));
		acc = __fadd_rn(acc, ld_f(theta, t0 + p.r));
		st_f(y, e, acc);
	}
}

#define AG_KERNEL(T, sfx)                                                                  \
	extern "C" __global__ void ag_##sfx(const T *theta, const i64 *size, T *y, cep_ag p, \
					    cep_fault *fault, u64 site)                    \
	{                                                                                  \
		ag<T>(theta, size, y, p, fault, site);                                     \
	}

AG_KERNEL(float, f32)
AG_KERNEL(f16, f16)
AG_KERNEL(bf16, bf16)
