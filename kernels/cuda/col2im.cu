/*
 * col2im.cu — Col2Im: a thread per image element gathers the column
 * entries that land on it (convt.cuh), in ascending kernel position, the
 * order in which the reference kernel adds them (kernels/cpu/col2im.c):
 * floats summed in float32 one addition at a time (half types rounded
 * once at the store), so results match the host's bit for bit; integers
 * in int64 wrapping to their width; bool as a logical or.
 *
 * image_shape and block_shape are int64 inputs that the planner gives the
 * launcher only as shapes, so every thread reads them here and works out
 * the block positions. A value that does not make the plan's shapes (an
 * image size other than the output's, a block size out of range or one
 * that does not fit the padded image, a block count or row count other
 * than the input's) is latched into the fault record and nothing is
 * written. Launcher: kernels/cuda/col2im.c. Kernels: col2im_<type>.
 */
#include "convt.cuh"

/* Twin: struct cuda_col2im (kernels/cuda/col2im.c). */
struct cep_col2im {
	i64 n;                           /* elements of the output */
	i64 ch;                          /* its channels */
	i64 rows, cols;                  /* the input's dims 1 and 2 */
	i64 p;                           /* image elements per channel */
	cep_convt_win w;                 /* block and blocks filled here */
	i32 pad_end[CEP_CONVT_DIMS];     /* (w.n) */
};

#define COL2IM_SIZE_MAX 0x7fffffffLL

/* a * b for a >= 0 and b >= 1, saturating (only messages see more). */
__device__ __forceinline__ i64 col2im_mul(i64 a, i64 b)
{
	return a > CEP_INT64_MAX / b ? CEP_INT64_MAX : a * b;
}

/* Fills w's block sizes and block counts from block_shape, after checking
 * both lists against the plan; false (the fault latched by the grid's
 * first thread) when they do not make its shapes. */
__device__ __forceinline__ bool col2im_window(const cep_col2im &p, const i64 *ishape,
					      const i64 *bshape, cep_convt_win *w, cep_fault *fault,
					      u64 site)
{
	bool first = blockIdx.x == 0 && threadIdx.x == 0;
	i64 ks = 1, l = 1, rows;

	*w = p.w;
	for (int i = 0; i < w->n; i++) {
		i64 b = bshape[i], eff, span;

		if (ishape[i] != w->image[i]) {
			if (first)
				cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 2 + i, ishape[i],
						     w->image[i]);
			return false;
		}
		eff = b >= 1 && b <= COL2IM_SIZE_MAX ? (b - 1) * w->dilation[i] + 1 : -1;
		span = w->image[i] + w->pad_begin[i] + p.pad_end[i] - eff;
		if (eff < 0 || span < 0 || span / w->stride[i] >= COL2IM_SIZE_MAX) {
			if (first)
				cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, i, b, 0);
			return false;
		}
		w->block[i] = (i32)b;
		w->blocks[i] = (i32)(span / w->stride[i] + 1);
		ks = col2im_mul(ks, b);
		l = col2im_mul(l, w->blocks[i]);
	}
	rows = p.ch > 0 ? col2im_mul(ks, p.ch) : 0;
	if (rows != p.rows) {
		if (first)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 1, rows, p.rows);
		return false;
	}
	if (l != p.cols) {
		if (first)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 2, l, p.cols);
		return false;
	}
	return true;
}

template <typename T>
__device__ __forceinline__ void col2im(const T *x, const i64 *ishape, const i64 *bshape, T *y,
				       const cep_col2im &p, cep_fault *fault, u64 site)
{
	cep_convt_win w;

	if (!col2im_window(p, ishape, bshape, &w, fault, site))
		return;
	CEP_FOR(e, p.n) {
		i64 b = e / p.p, pos = e - b * p.p;
		const T *src = x + b * (p.rows / p.ch) * p.cols;

		if (cep_is_float<T>::value) {
			float acc = 0.0f;

			convt_for_entries(w, pos, [&](i64 kk, i64 l) {
				acc = __fadd_rn(acc, ld_f(src, kk * p.cols + l));
			});
			st_f(y, e, acc);
		} else {
			u64 acc = 0;

			convt_for_entries(w, pos, [&](i64 kk, i64 l) {
				acc += (u64)ld_i(src, kk * p.cols + l);
			});
			st_i(y, e, (i64)acc);
		}
	}
}

#define COL2IM_KERNEL(T, sfx)                                                              \
	extern "C" __global__ void col2im_##sfx(const T *x, const i64 *ishape,             \
						const i64 *bshape, T *y, cep_col2im p,     \
						cep_fault *fault, u64 site)                \
	{                                                                                  \
		col2im<T>(x, ishape, bshape, y, p, fault, site);                           \
	}

COL2IM_KERNEL(float, f32)
COL2IM_KERNEL(f16, f16)
COL2IM_KERNEL(bf16, bf16)
COL2IM_KERNEL(i64, i64)
COL2IM_KERNEL(i32, i32)
COL2IM_KERNEL(i8, i8)
COL2IM_KERNEL(u8, u8)
COL2IM_KERNEL(b8, bool)
