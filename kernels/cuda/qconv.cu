/*
 * qconv.cu — ConvInteger and QLinearConv with the arithmetic of the
 * reference kernels (kernels/cpu/qconv.c, quant.cuh): int32 sums of (x -
 * x_zero_point) * (w - w_zero_point) over each window, padded positions
 * contributing nothing, wrapping in 32 bits; QLinearConv adds B and
 * requantizes in double with the multiplier in float32.
 *
 * A direct kernel: a thread per output element walks its window (1-D to
 * 3-D, padded to three dims with leading unit ones). int8 and uint8 are
 * read as bytes and sign-extended where signed (the flags), so one kernel
 * takes every combination of types.
 *
 * Launcher: kernels/cuda/qconv.c.
 */
#include "quant.cuh"

/* Twin: struct cuda_qconv. */
struct cep_qconv {
	i64 in[3], out[3];            /* spatial sizes */
	i64 k[3], s[3], d[3], pb[3];  /* kernel, stride, dilation, leading pads */
	i64 n;                        /* output elements */
	i64 m, cg, mg;                /* output channels; per group: in, out */
	i32 flags;                    /* QCONV_* */
	i32 pad;
};

enum { QCONV_X_SIGNED = 1, QCONV_W_SIGNED = 2, QCONV_Y_SIGNED = 4, QCONV_W_PER_CHANNEL = 8 };

template <bool QL>
__device__ __forceinline__ void qconv(const u8 *x, const u8 *w, const u8 *xzp, const u8 *wzp,
				      const float *xs, const float *ws, const float *ys,
				      const u8 *yzp, const i32 *bias, void *y, const cep_qconv &p)
{
	int sx = p.flags & QCONV_X_SIGNED, sw = p.flags & QCONV_W_SIGNED;
	i64 positions = p.out[0] * p.out[1] * p.out[2];
	i64 plane = p.in[0] * p.in[1] * p.in[2];
	i64 ks = p.k[0] * p.k[1] * p.k[2];
	int xz = xzp != 0 ? cep_q_ld8(xzp, sx, 0) : 0;

	CEP_FOR(i, p.n) {
		i64 e = i % positions, cm = i / positions;
		i64 m = cm % p.m, nimg = cm / p.m;
		i64 ox = e % p.out[2], oy = e / p.out[2] % p.out[1], oz = e / p.out[2] / p.out[1];
		i64 kc = p.flags & QCONV_W_PER_CHANNEL ? m : 0;
		int wz = wzp != 0 ? cep_q_ld8(wzp, sw, kc) : 0;
		i64 x0 = (nimg * (p.m / p.mg) + m / p.mg) * p.cg * plane;
		const u8 *wm = w + m * p.cg * ks;
		u32 acc = 0;

		for (i64 ch = 0; ch < p.cg; ch++) {
			for (i64 kz = 0; kz < p.k[0]; kz++) {
				i64 iz = oz * p.s[0] - p.pb[0] + kz * p.d[0];

				if (iz < 0 || iz >= p.in[0])
					continue;
				for (i64 ky = 0; ky < p.k[1]; ky++) {
					i64 iy = oy * p.s[1] - p.pb[1] + ky * p.d[1];
					i64 wk = ((ch * p.k[0] + kz) * p.k[1] + ky) * p.k[2];
					i64 xr = x0 + ch * plane + (iz * p.in[1] + iy) * p.in[2];

					if (iy < 0 || iy >= p.in[1])
						continue;
					for (i64 kx = 0; kx < p.k[2]; kx++) {
						i64 ix = ox * p.s[2] - p.pb[2] + kx * p.d[2];

						if (ix < 0 || ix >= p.in[2])
							continue;
						acc += (u32)((cep_q_ld8(x, sx, xr + ix) - xz) *
							     (cep_q_ld8(wm, sw, wk + kx) - wz));
					}
				}
			}
		}
		if (!QL) {
			((i32 *)y)[i] = (i32)acc;
			continue;
		}
		if (bias != 0)
			acc += (u32)bias[m];
		double mult = cep_q_round(__dmul_rn((double)xs[0], (double)ws[kc]), CEP_Q_F32);
		int ysg = p.flags & QCONV_Y_SIGNED;

		mult = cep_q_round(__ddiv_rn(mult, (double)ys[0]), CEP_Q_F32);
		((u8 *)y)[i] = (u8)cep_q_saturate(__dmul_rn((double)(i32)acc, mult),
						  cep_q_ld8(yzp, ysg, 0), ysg ? -128 : 0,
						  ysg ? 127 : 255);
	}
}

extern "C" __global__ void convinteger(const u8 *x, const u8 *w, const u8 *xzp, const u8 *wzp,
				       i32 *y, cep_qconv p)
{
	qconv<false>(x, w, xzp, wzp, 0, 0, 0, 0, 0, y, p);
}

extern "C" __global__ void qlinearconv(const u8 *x, const float *xs, const u8 *xzp, const u8 *w,
				       const float *ws, const u8 *wzp, const float *ys,
				       const u8 *yzp, const i32 *bias, u8 *y, cep_qconv p)
{
	qconv<true>(x, w, xzp, wzp, xs, ws, ys, yzp, bias, y, p);
}
