/*
 * conv_transpose.cu — ConvTranspose on the device where cuDNN does not do
 * it all (kernels/cuda/conv_transpose.c decides):
 *
 * convt_<type> computes it directly for any number of spatial dims: a
 * thread per output element starts from its channel's bias, then for
 * every kernel position whose window covers it (convt.cuh, ascending)
 * adds the sum over the group's input channels, in order, of weight times
 * input: the reference kernel's order and roundings (kernels/cpu/
 * conv_transpose.c: products and sums rounded to float32 one at a time,
 * no fused multiply-add), so float32 results match the host's bit for bit.
 * Half types are read into float32 and rounded once at the store.
 *
 * convt_crop_<type> finishes a cuDNN run whose output is not Y itself:
 * cuDNN's backward-data pass takes only symmetric pads and reaches at most
 * a stride past the last window, so the launcher has it write a larger
 * image Z into the workspace and this copies Y's window of it (zeros
 * where Y reaches past Z: positions no input lands on), adding the bias.
 */
#include "convt.cuh"

/* Twin: struct cuda_convt (kernels/cuda/conv_transpose.c). */
struct cep_convt {
	i64 n;              /* elements of Y */
	i64 c, m;           /* input and output channels */
	i64 cg, mg;         /* per group */
	i64 l;              /* input positions per channel */
	i64 p;              /* output positions per channel */
	i64 ks;             /* kernel positions */
	i32 bias;           /* 1: B is given */
	i32 pad;
	cep_convt_win w;    /* image: Y's spatial dims; blocks: X's */
};

template <typename T>
__device__ __forceinline__ void convt(const T *x, const T *wt, const T *b, T *y,
				      const cep_convt &p)
{
	CEP_FOR(e, p.n) {
		i64 pos = e % p.p, r = e / p.p;
		i64 mo = r % p.m, img = r / p.m;
		i64 grp = mo / p.mg, mi = mo - grp * p.mg;
		const T *xb = x + (img * p.c + grp * p.cg) * p.l;
		const T *wb = wt + (grp * p.cg * p.mg + mi) * p.ks;
		i64 wstep = p.mg * p.ks;
		float acc = p.bias ? ld_f(b, mo) : 0.0f;

		convt_for_entries(p.w, pos, [&](i64 kk, i64 l) {
			float part = 0.0f;

			for (i64 ci = 0; ci < p.cg; ci++)
				part = __fadd_rn(part, __fmul_rn(ld_f(wb, ci * wstep + kk),
								 ld_f(xb, ci * p.l + l)));
			acc = __fadd_rn(acc, part);
		});
		st_f(y, e, acc);
	}
}

/* Twin: struct cuda_convt_crop. Spatial dims padded to 3 with leading
 * unit ones. */
struct cep_convt_crop {
	i64 n;              /* elements of Y */
	i64 m;              /* channels */
	i64 out[3];         /* Y's spatial sizes */
	i64 z[3];           /* Z's */
	i64 off[3];         /* Y position i reads Z position i + off */
	i32 bias;           /* 1: B is added */
	i32 pad;
};

template <typename T>
__device__ __forceinline__ void convt_crop(const T *z, const T *b, T *y, const cep_convt_crop &p)
{
	CEP_FOR(e, p.n) {
		i64 o[3], r = e;
		bool in = true;
		float v = 0.0f;

		for (int d = 2; d >= 0; d--) {
			o[d] = r % p.out[d] + p.off[d];
			r /= p.out[d];
			in &= o[d] >= 0 && o[d] < p.z[d];
		}
		/* r is now the image and channel, as one index. */
		if (in)
			v = ld_f(z, ((r * p.z[0] + o[0]) * p.z[1] + o[1]) * p.z[2] + o[2]);
		if (p.bias)
			v = __fadd_rn(v, ld_f(b, r % p.m));
		st_f(y, e, v);
	}
}

#define CONVT_KERNELS(T, sfx)                                                               \
	extern "C" __global__ void convt_##sfx(const T *x, const T *w, const T *b, T *y,    \
					       cep_convt p)                                 \
	{                                                                                   \
		convt<T>(x, w, b, y, p);                                                    \
	}                                                                                   \
	extern "C" __global__ void convt_crop_##sfx(const T *z, const T *b, T *y,           \
						    cep_convt_crop p)                       \
	{                                                                                   \
		convt_crop<T>(z, b, y, p);                                                  \
	}

CONVT_KERNELS(float, f32)
CONVT_KERNELS(f16, f16)
CONVT_KERNELS(bf16, bf16)
