/*
 * resize.cu — Resize and Upsample: nearest (every nearest_mode), linear and
 * cubic (cubic_coeff_a, exclude_outside, antialias), every coordinate
 * transformation, scales or sizes (keep_aspect_ratio_policy), axes, with
 * the arithmetic of the reference kernel (kernels/cpu/resize.c): the same
 * coordinates, taps and weights in double, every product and sum rounded
 * one by one (no fused multiply-add, which the host does not have), so
 * that the same input positions are picked and the interpolated values
 * agree to the last bit of a double.
 *
 * Two kernels per run. resize_table reads the scales or sizes (and the
 * roi) on the device, so that their values never need to be on the host,
 * checks that they make the output's planned shape (else the fault record
 * latches it), and writes, for each output position of each resized
 * dimension, its input positions and weights into the workspace, behind a
 * header per dimension (its taps, and whether it is left as it is). Then
 * a thread per output element reads them: nearest gathers one element
 * (the extrapolation value outside a tf_crop_and_resize roi); linear and
 * cubic nest the weighted sums of the resized dimensions, the lowest
 * dimension innermost, exactly as the host's passes (one per dimension,
 * in order) sum them. Every index read from the table is clamped, so a
 * table that a fault left unwritten cannot make a read outside the input.
 *
 * Launcher: kernels/cuda/resize.c. Kernels: resize_table,
 * resize_nearest_<bytes>, resize_interp_<type>.
 */
#include "common.cuh"

/* Twins of the host's enums (kernels/cpu/resize.h). */
enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum {
	RS_HALF_PIXEL, RS_HALF_PIXEL_SYMMETRIC, RS_PYTORCH_HALF_PIXEL, RS_ALIGN_CORNERS,
	RS_ASYMMETRIC, RS_TF_HALF_PIXEL_FOR_NN, RS_TF_CROP_AND_RESIZE,
};
enum { RS_ROUND_PREFER_FLOOR, RS_ROUND_PREFER_CEIL, RS_FLOOR, RS_CEIL, RS_ROUND_OPSET10 };
enum { RS_STRETCH, RS_NOT_LARGER, RS_NOT_SMALLER };

/* Where the target comes from. */
enum { RS_SRC_SCALES_GIVEN, RS_SRC_SCALES_F32, RS_SRC_SCALES_F16, RS_SRC_SIZES };

/* The roi's type. */
enum { RS_ROI_NONE, RS_ROI_F32, RS_ROI_F16, RS_ROI_BF16 };

#define RS_MAX_NUMEL (1LL << 40) /* the host's OP_MAX_NUMEL */

/* Twin: struct cuda_resize. */
struct cep_resize {
	i64 n;                          /* output elements */
	i64 table_n;                    /* output positions of the resized dims */
	i32 rank, n_axes;
	i32 mode, coord, round, policy;
	i32 antialias, exclude_outside;
	i32 upsample;                   /* Upsample: scales below 1 refused */
	i32 src, roi;
	i32 pad;
	i32 axes[CEP_MAX_RANK];         /* (n_axes) the dims scales, sizes, roi are for */
	double cubic_a, extrapolation;
	double scale[CEP_MAX_RANK];     /* per dim, for RS_SRC_SCALES_GIVEN */
	i64 idims[CEP_MAX_RANK], odims[CEP_MAX_RANK];
	i64 istride[CEP_MAX_RANK];      /* elements */
	i64 taps_max[CEP_MAX_RANK];     /* per dim; 0: not resized */
	i64 table[CEP_MAX_RANK];        /* byte offset of dim d's table in the workspace */
};

/* The header of a dim's table, at the start of the workspace. */
struct rs_head {
	i64 taps;                       /* taps per output position */
	i64 identity;                   /* 1: the dim is left as it is */
};

/* ----------------------------------------------------------- the target */

__device__ __forceinline__ double rs_ld_float(const void *p, int kind, i64 i)
{
	switch (kind) {
	case RS_ROI_F16: return (double)cep_f16_to_f32(((const u16 *)p)[i]);
	case RS_ROI_BF16: return (double)cep_bf16_to_f32(((const u16 *)p)[i]);
	default: return (double)((const float *)p)[i];
	}
}

/* Works out each dim's scale and output size from the scales or sizes,
 * as the host's cpu_resize_target_get(); false, with the fault latched,
 * for values it refuses or that do not make the planned output. */
__device__ __forceinline__ bool rs_target(const cep_resize &p, const void *src, double *scale,
					  cep_fault *fault, u64 site)
{
	i64 out[CEP_MAX_RANK];
	double pick = 0.0;
	bool picked = false;

	for (int d = 0; d < p.rank; d++) {
		scale[d] = p.src == RS_SRC_SCALES_GIVEN ? p.scale[d] : 1.0;
		out[d] = p.idims[d];
	}
	for (int j = 0; j < p.n_axes; j++) {
		int d = p.axes[j];
		i64 n = p.idims[d];

		if (p.src != RS_SRC_SIZES) {
			double s = p.src == RS_SRC_SCALES_GIVEN ? p.scale[d]
				 : rs_ld_float(src, p.src == RS_SRC_SCALES_F16 ? RS_ROI_F16
									       : RS_ROI_F32, j);

			/* Above 0 and finite (NaN fails both). */
			if (!(s > 0.0 && s <= 1.7976931348623157e308) || (p.upsample && s < 1.0)) {
				cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, d, (i64)s, 0);
				return false;
			}
			scale[d] = s;
			out[d] = (i64)fmin(floor(__dmul_rn((double)n, s)), (double)RS_MAX_NUMEL + 1);
			continue;
		}
		i64 v = ((const i64 *)src)[j];

		if (v < 0 || v > RS_MAX_NUMEL || (n == 0 && v != 0)) {
			cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, d, v, RS_MAX_NUMEL);
			return false;
		}
		out[d] = v;
		scale[d] = n > 0 ? (double)v / (double)n : 1.0;
		if (n > 0 && (!picked ||
			      (p.policy == RS_NOT_LARGER ? scale[d] < pick : scale[d] > pick))) {
			pick = scale[d];
			picked = true;
		}
	}
	if (p.src == RS_SRC_SIZES && p.policy != RS_STRETCH) {
		for (int j = 0; j < p.n_axes; j++) {
			int d = p.axes[j];

			if (p.idims[d] > 0) {
				scale[d] = pick;
				out[d] = (i64)fmin(__dadd_rn(__dmul_rn(pick, (double)p.idims[d]), 0.5),
						   (double)RS_MAX_NUMEL + 1);
			}
		}
	}
	for (int d = 0; d < p.rank; d++) {
		if (out[d] != p.odims[d]) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, d, out[d], p.odims[d]);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------ coordinates and weights */

/* The input coordinate output position x maps to, as the host's
 * resize_coord(). */
__device__ __forceinline__ double rs_coord(const cep_resize &p, i64 x, double scale, i64 n,
					   i64 out, double roi_s, double roi_e)
{
	double xr = (double)x, out_w = __dmul_rn(scale, (double)n);
	double nm1 = (double)(n - 1);

	switch (p.coord) {
	case RS_HALF_PIXEL:
		return (xr + 0.5) / scale - 0.5;
	case RS_HALF_PIXEL_SYMMETRIC: {
		double adjust = (double)out / out_w;
		double offset = __dmul_rn((double)n / 2.0, 1.0 - adjust);

		return offset + (xr + 0.5) / scale - 0.5;
	}
	case RS_PYTORCH_HALF_PIXEL:
		return out > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
	case RS_ALIGN_CORNERS:
		return out == 1 ? 0.0 : __dmul_rn(xr, nm1) / (out_w - 1.0);
	case RS_ASYMMETRIC:
		return xr / scale;
	case RS_TF_HALF_PIXEL_FOR_NN:
		return (xr + 0.5) / scale;
	default: /* RS_TF_CROP_AND_RESIZE */
		if (out == 1)
			return __dmul_rn((roi_s + roi_e) / 2.0, nm1);
		return __dadd_rn(__dmul_rn(__dmul_rn(xr, roi_e - roi_s), nm1) / (out_w - 1.0),
				 __dmul_rn(roi_s, nm1));
	}
}

/* Coordinates far outside the input all sample its edge; NaN (from a NaN
 * roi) maps to 0, keeping the conversions to integers defined. */
__device__ __forceinline__ double rs_coord_bound(double co, i64 n, i64 taps)
{
	double lim = (double)(n + taps + 2);

	if (co != co)
		return 0.0;
	return co < -lim ? -lim : co > lim ? lim : co;
}

__device__ __forceinline__ i64 rs_round(int r, double c, double scale)
{
	double f = floor(c), frac = c - f;

	switch (r) {
	case RS_ROUND_PREFER_FLOOR: return (i64)(frac <= 0.5 ? f : f + 1.0);
	case RS_ROUND_PREFER_CEIL: return (i64)(frac < 0.5 ? f : f + 1.0);
	case RS_FLOOR: return (i64)f;
	case RS_CEIL: return (i64)ceil(c);
	default: return (i64)(scale < 1.0 ? ceil(c) : f);
	}
}

__device__ __forceinline__ i64 rs_clamp(i64 i, i64 n)
{
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The interpolation kernel at distance x, as the host's resize_weight(),
 * one rounding per operation. */
__device__ __forceinline__ double rs_weight(const cep_resize &p, double x)
{
	double A = p.cubic_a, t;

	x = fabs(x);
	if (p.mode == RS_LINEAR)
		return x < 1.0 ? 1.0 - x : 0.0;
	if (x <= 1.0) {
		t = __dsub_rn(__dmul_rn(A + 2.0, x), A + 3.0);
		return __dadd_rn(__dmul_rn(__dmul_rn(t, x), x), 1.0);
	}
	if (x < 2.0) {
		t = __dsub_rn(__dmul_rn(A, x), __dmul_rn(5.0, A));
		t = __dadd_rn(__dmul_rn(t, x), __dmul_rn(8.0, A));
		return __dsub_rn(__dmul_rn(t, x), __dmul_rn(4.0, A));
	}
	return 0.0;
}

/* The taps a dim resized at scale needs: 2 * radius, more when an
 * antialiased kernel is stretched over a shrinking. */
__device__ __forceinline__ i64 rs_taps(const cep_resize &p, double scale)
{
	double s = p.antialias && scale < 1.0 ? scale : 1.0;
	double radius = p.mode == RS_CUBIC ? 2.0 : 1.0;

	return -2 * (i64)floor(-radius / s);
}

/* ------------------------------------------------------------- the table */

/* Thread t of table_n takes output position o of the j-th resized dim
 * (counted in axes order). */
extern "C" __global__ void resize_table(cep_resize p, const void *src, const void *roi,
					u8 *ws, cep_fault *fault, u64 site)
{
	double scale[CEP_MAX_RANK];
	rs_head *head = (rs_head *)ws;

	if (!rs_target(p, src, scale, fault, site))
		return;
	CEP_FOR(t, p.table_n) {
		i64 o = t;
		int j = 0, d;

		while (o >= p.odims[p.axes[j]]) {
			o -= p.odims[p.axes[j]];
			j++;
		}
		d = p.axes[j];
		i64 n = p.idims[d], out = p.odims[d], taps;
		double roi_s = 0.0, roi_e = 1.0, co;
		bool identity;

		if (p.roi != RS_ROI_NONE && p.coord == RS_TF_CROP_AND_RESIZE) {
			roi_s = (double)(float)rs_ld_float(roi, p.roi, j);
			roi_e = (double)(float)rs_ld_float(roi, p.roi, p.n_axes + j);
		}
		identity = out == n && scale[d] == 1.0 &&
			   (p.coord != RS_TF_CROP_AND_RESIZE || (roi_s == 0.0 && roi_e == 1.0));
		taps = p.mode == RS_NEAREST ? 1 : rs_taps(p, scale[d]);
		if (taps > p.taps_max[d]) {
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, d, taps, p.taps_max[d]);
			taps = p.taps_max[d];
		}
		if (o == 0) {
			head[d].taps = taps;
			head[d].identity = identity;
		}
		co = rs_coord(p, o, scale[d], n, out, roi_s, roi_e);
		bool outside = p.coord == RS_TF_CROP_AND_RESIZE && (co < 0.0 || co > (double)(n - 1));

		if (p.mode == RS_NEAREST) {
			i64 *tab = (i64 *)(ws + p.table[d]);

			tab[o] = identity ? o : outside ? -1
				 : rs_clamp(rs_round(p.round, rs_coord_bound(co, n, 1), scale[d]), n);
			continue;
		}
		if (identity)
			continue;

		/* The tap at or left of the coordinate (strictly left when it is
		 * a whole number), and how far the coordinate is past it. */
		i64 tmax = p.taps_max[d], k0 = 1 - taps / 2;
		double *w = (double *)(ws + p.table[d]) + o * tmax;
		i64 *ix = (i64 *)(ws + p.table[d] + out * tmax * 8) + o * tmax;
		u8 *tx = ws + p.table[d] + out * tmax * 16;
		double s = p.antialias && scale[d] < 1.0 ? scale[d] : 1.0, base, ratio, sum = 0.0;

		tx[o] = outside;
		co = rs_coord_bound(co, n, taps);
		base = ceil(co) - 1.0;
		ratio = co - base;
		for (i64 jj = 0; jj < taps; jj++) {
			i64 k = k0 + jj, pos = (i64)base + k;

			w[jj] = rs_weight(p, __dmul_rn(s, (double)k - ratio));
			if (p.exclude_outside && (pos < 0 || pos >= n))
				w[jj] = 0.0;
			sum += w[jj];
			ix[jj] = rs_clamp(pos, n);
		}
		/* Antialiased kernels are normalized; so are those that lost
		 * their outside taps. */
		if ((p.antialias || p.exclude_outside) && sum != 0.0) {
			for (i64 jj = 0; jj < taps; jj++)
				w[jj] /= sum;
		}
	}
}

/* --------------------------------------------------------------- nearest */

template <typename U>
__device__ __forceinline__ void resize_nearest(const U *x, U *y, const cep_resize &p,
					       const u8 *ws, U fill)
{
	CEP_FOR(o, p.n) {
		i64 r = o, off = 0;
		bool outside = false;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = r / p.odims[d], c = r - q * p.odims[d];

			if (p.taps_max[d] > 0) {
				c = ((const i64 *)(ws + p.table[d]))[c];
				c = c < 0 ? -1 : c >= p.idims[d] ? p.idims[d] - 1 : c;
				outside = outside || c < 0;
			}
			off += c * p.istride[d];
			r = q;
		}
		y[o] = outside ? fill : x[off];
	}
}

/* ------------------------------------------------------- linear and cubic */

template <typename T> __device__ __forceinline__ double rs_ld_d(const T *p, i64 i)
{
	return cep_is_float<T>::value ? (double)ld_f(p, i) : (double)ld_i(p, i);
}

/* Stores v as the host's cpu_resize_store(): floats rounded to float,
 * integers rounded half to even and saturated to the type. */
template <typename T> __device__ __forceinline__ void rs_store(T *p, i64 i, double v, double lo,
							       double hi)
{
	if (cep_is_float<T>::value) {
		st_f(p, i, (float)v);
		return;
	}
	v = rint(v);
	v = v < lo ? lo : v > hi ? hi : v;
	if (v != v)
		st_i(p, i, 0);
	else if (v >= 9223372036854775807.0)
		st_i(p, i, CEP_INT64_MAX);
	else
		st_i(p, i, (i64)v);
}

template <typename T>
__device__ __forceinline__ void resize_interp(const T *x, T *y, const cep_resize &p,
					      const u8 *ws, double lo, double hi)
{
	const rs_head *head = (const rs_head *)ws;

	CEP_FOR(o, p.n) {
		/* Level k of the nested sums is the k-th resized dim from the
		 * lowest; level m - 1 the outermost. */
		const double *lw[CEP_MAX_RANK];
		const i64 *li[CEP_MAX_RANK];
		i64 ltaps[CEP_MAX_RANK], lstride[CEP_MAX_RANK], ln[CEP_MAX_RANK];
		bool ltx[CEP_MAX_RANK];
		double acc[CEP_MAX_RANK], v = 0.0;
		i64 jt[CEP_MAX_RANK], off[CEP_MAX_RANK], c[CEP_MAX_RANK], base = 0, r = o;
		int m = 0, k;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = r / p.odims[d];

			c[d] = r - q * p.odims[d];
			r = q;
		}
		for (int d = 0; d < p.rank; d++) {
			/* A dim left as it is has as many outputs as inputs, but
			 * a header a fault left unwritten may say so of any. */
			if (p.taps_max[d] == 0 || head[d].identity) {
				base += rs_clamp(c[d], p.idims[d]) * p.istride[d];
				continue;
			}
			i64 tmax = p.taps_max[d], out = p.odims[d];
			const u8 *tab = ws + p.table[d];

			ltaps[m] = head[d].taps < 0 ? 0 : head[d].taps > tmax ? tmax : head[d].taps;
			lw[m] = (const double *)tab + c[d] * tmax;
			li[m] = (const i64 *)(tab + out * tmax * 8) + c[d] * tmax;
			ltx[m] = (tab + out * tmax * 16)[c[d]] != 0;
			lstride[m] = p.istride[d];
			ln[m] = p.idims[d];
			m++;
		}
		if (m == 0) {
			v = rs_ld_d(x, base);
		} else if (ltx[m - 1]) {
			v = p.extrapolation;
		} else {
			k = m - 1;
			acc[k] = 0.0;
			jt[k] = 0;
			off[k] = base;
			for (;;) {
				if (jt[k] >= ltaps[k]) {
					double val = acc[k];

					if (k == m - 1) {
						v = val;
						break;
					}
					k++;
					acc[k] = __dadd_rn(acc[k], __dmul_rn(lw[k][jt[k]], val));
					jt[k]++;
					continue;
				}
				double w = lw[k][jt[k]];

				if (w == 0.0) {
					jt[k]++;
					continue;
				}
				i64 at = off[k] + rs_clamp(li[k][jt[k]], ln[k]) * lstride[k];

				if (k == 0) {
					acc[0] = __dadd_rn(acc[0], __dmul_rn(w, rs_ld_d(x, at)));
					jt[0]++;
					continue;
				}
				if (ltx[k - 1]) {
					/* The level below is the extrapolation value whole. */
					acc[k] = __dadd_rn(acc[k], __dmul_rn(w, p.extrapolation));
					jt[k]++;
					continue;
				}
				k--;
				off[k] = at;
				acc[k] = 0.0;
				jt[k] = 0;
			}
		}
		rs_store(y, o, v, lo, hi);
	}
}

#define RESIZE_NEAREST_KERNEL(U, bytes)                                                   \
	extern "C" __global__ void resize_nearest_##bytes(const U *x, U *y, cep_resize p,  \
							  const u8 *ws, U fill)            \
	{ resize_nearest<U>(x, y, p, ws, fill); }

#define RESIZE_INTERP_KERNEL(T, sfx)                                                      \
	extern "C" __global__ void resize_interp_##sfx(const T *x, T *y, cep_resize p,     \
						       const u8 *ws, double lo, double hi) \
	{ resize_interp<T>(x, y, p, ws, lo, hi); }

RESIZE_NEAREST_KERNEL(u8, 1)
RESIZE_NEAREST_KERNEL(u16, 2)
RESIZE_NEAREST_KERNEL(u32, 4)
RESIZE_NEAREST_KERNEL(u64, 8)
RESIZE_INTERP_KERNEL(float, f32)
RESIZE_INTERP_KERNEL(f16, f16)
RESIZE_INTERP_KERNEL(bf16, bf16)
RESIZE_INTERP_KERNEL(i64, i64)
RESIZE_INTERP_KERNEL(i32, i32)
RESIZE_INTERP_KERNEL(i8, i8)
RESIZE_INTERP_KERNEL(u8, u8)
