/*
 * roi_align.cu — RoiAlign on the device, a thread per output element
 * (roi, channel, bin row, bin column), with the reference kernel's
 * float32 arithmetic step for step (kernels/cpu/roi_align.c): every
 * product, sum and quotient rounded on its own (__fmul_rn and friends,
 * never fused), the samples visited in the same order, so that the two
 * backends agree to the last bit for float32. A batch index out of range
 * latches CEP_FAULT_INDEX and leaves that roi's elements unwritten.
 * Launcher: kernels/cuda/roi_align.c. Kernels: roi_align_{avg,max}_<type>.
 */
#include "common.cuh"

/* Twin: struct cuda_roi_align. */
struct cep_roi_align {
	i64 rois, channels, height, width, batches;
	i64 out_h, out_w;
	i64 sampling_ratio;
	float spatial_scale;
	i32 half_pixel;
};

/* The weighted corners of the sample at (y, x) of an h x w plane, or all
 * weights 0 for one more than a pixel outside. */
__device__ __forceinline__ void roi_sample_at(float y, float x, i64 h, i64 w, i64 *pos,
					      float *wt)
{
	for (int k = 0; k < 4; k++) {
		pos[k] = 0;
		wt[k] = 0.0f;
	}
	if (y < -1.0f || y > (float)h || x < -1.0f || x > (float)w)
		return;
	if (y < 0.0f)
		y = 0.0f;
	if (x < 0.0f)
		x = 0.0f;
	i64 y0 = (i64)y, x0 = (i64)x, y1, x1;

	if (y0 >= h - 1) {
		y1 = y0 = h - 1;
		y = (float)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= w - 1) {
		x1 = x0 = w - 1;
		x = (float)x0;
	} else {
		x1 = x0 + 1;
	}
	float ly = __fsub_rn(y, (float)y0), lx = __fsub_rn(x, (float)x0);
	float hy = __fsub_rn(1.0f, ly), hx = __fsub_rn(1.0f, lx);

	pos[0] = y0 * w + x0;
	pos[1] = y0 * w + x1;
	pos[2] = y1 * w + x0;
	pos[3] = y1 * w + x1;
	wt[0] = __fmul_rn(hy, hx);
	wt[1] = __fmul_rn(hy, lx);
	wt[2] = __fmul_rn(ly, hx);
	wt[3] = __fmul_rn(ly, lx);
}

template <typename T, bool MAX>
__device__ __forceinline__ void roi_align(const T *x, const T *rois, const i64 *bi, T *y,
					  const cep_roi_align &p, cep_fault *fault, u64 site)
{
	i64 plane = p.out_h * p.out_w;

	CEP_FOR(e, p.rois * p.channels * plane) {
		i64 n = e / (p.channels * plane), r = e - n * p.channels * plane;
		i64 c = r / plane, q = r - c * plane, ph = q / p.out_w, pw = q - ph * p.out_w;
		i64 b = bi[n];

		if (b < 0 || b >= p.batches) {
			cep_fault_latch(fault, site, 0, b, p.batches);
			continue;
		}
		float off = p.half_pixel ? 0.5f : 0.0f;
		float x0 = __fsub_rn(__fmul_rn(ld_f(rois, n * 4 + 0), p.spatial_scale), off);
		float y0 = __fsub_rn(__fmul_rn(ld_f(rois, n * 4 + 1), p.spatial_scale), off);
		float x1 = __fsub_rn(__fmul_rn(ld_f(rois, n * 4 + 2), p.spatial_scale), off);
		float y1 = __fsub_rn(__fmul_rn(ld_f(rois, n * 4 + 3), p.spatial_scale), off);
		float rw = __fsub_rn(x1, x0), rh = __fsub_rn(y1, y0);

		if (!p.half_pixel) {
			rw = rw > 1.0f ? rw : 1.0f;
			rh = rh > 1.0f ? rh : 1.0f;
		}
		float bin_h = __fdiv_rn(rh, (float)p.out_h), bin_w = __fdiv_rn(rw, (float)p.out_w);
		i64 gh = p.sampling_ratio > 0 ? p.sampling_ratio : (i64)ceilf(bin_h);
		i64 gw = p.sampling_ratio > 0 ? p.sampling_ratio : (i64)ceilf(bin_w);
		i64 count = gh * gw > 1 ? gh * gw : 1;
		const T *src = x + (b * p.channels + c) * p.height * p.width;
		float acc = 0.0f;
		bool any = false;

		for (i64 iy = 0; iy < gh; iy++) {
			float sy = __fadd_rn(__fadd_rn(y0, __fmul_rn((float)ph, bin_h)),
					     __fdiv_rn(__fmul_rn(__fadd_rn((float)iy, 0.5f), bin_h),
						       (float)gh));

			for (i64 ix = 0; ix < gw; ix++) {
				float sx = __fadd_rn(__fadd_rn(x0, __fmul_rn((float)pw, bin_w)),
						     __fdiv_rn(__fmul_rn(__fadd_rn((float)ix, 0.5f),
									 bin_w),
							       (float)gw));
				i64 pos[4];
				float wt[4];

				roi_sample_at(sy, sx, p.height, p.width, pos, wt);
				if (!MAX) {
					float s = __fadd_rn(__fmul_rn(wt[0], ld_f(src, pos[0])),
							    __fmul_rn(wt[1], ld_f(src, pos[1])));

					s = __fadd_rn(s, __fmul_rn(wt[2], ld_f(src, pos[2])));
					s = __fadd_rn(s, __fmul_rn(wt[3], ld_f(src, pos[3])));
					acc = __fadd_rn(acc, s);
					continue;
				}
				float v = __fmul_rn(wt[0], ld_f(src, pos[0]));

				for (int k = 1; k < 4; k++) {
					float t = __fmul_rn(wt[k], ld_f(src, pos[k]));

					v = t > v ? t : v;
				}
				acc = !any || v > acc ? v : acc;
				any = true;
			}
		}
		st_f(y, e, MAX ? acc : __fdiv_rn(acc, (float)count));
	}
}

#define ROI_KERNELS(T, sfx)                                                                 \
	extern "C" __global__ void roi_align_avg_##sfx(const T *x, const T *rois, const i64 *bi, \
						       T *y, cep_roi_align p, cep_fault *fault, \
						       u64 site)                                \
	{ roi_align<T, false>(x, rois, bi, y, p, fault, site); }                             \
	extern "C" __global__ void roi_align_max_##sfx(const T *x, const T *rois, const i64 *bi, \
						       T *y, cep_roi_align p, cep_fault *fault, \
						       u64 site)                                \
	{ roi_align<T, true>(x, rois, bi, y, p, fault, site); }

ROI_KERNELS(float, f32)
ROI_KERNELS(f16, f16)
ROI_KERNELS(bf16, bf16)
