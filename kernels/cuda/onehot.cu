/*
 * onehot.cu — OneHot: every output element is values[1] (on) where its
 * coordinate along the inserted axis equals the index at its other
 * coordinates, values[0] (off) elsewhere, as the reference kernel decides
 * (kernels/cpu/onehot.c): indices cast to int64 (floats truncated), from
 * opset 11 a negative one counting from the end, one out of range giving
 * off. depth, of any index type, is read here on the device and checked
 * against the plan's: a mismatch is latched into the fault record
 * (CEP_FAULT_SHAPE) and nothing is written. values move as raw units of
 * their size. Launcher: kernels/cuda/onehot.c. Kernels:
 * onehot_<bytes>_<index type>.
 */
#include "common.cuh"

/* Twin: struct cuda_onehot. */
struct cep_onehot {
	i64 n;                      /* output elements */
	i64 depth;                  /* the plan's */
	i64 inner;                  /* index elements after the axis */
	i32 axis;
	i32 wrap;                   /* opset 11: negative indices count back */
	i32 depth_type;             /* depth's cep_dtype */
	i32 pad;
};

/* Element 0 of p, of dtype t (ONNX's numbering), as an int64. */
__device__ __forceinline__ i64 onehot_scalar(const void *p, int t)
{
	switch (t) {
	case 1: return ld_i((const float *)p, 0);
	case 2: return ld_i((const u8 *)p, 0);
	case 3: return ld_i((const i8 *)p, 0);
	case 6: return ld_i((const i32 *)p, 0);
	case 7: return ld_i((const i64 *)p, 0);
	case 10: return ld_i((const f16 *)p, 0);
	default: return -1;
	}
}

template <typename T, typename I>
__device__ __forceinline__ void onehot(const I *idx, const void *depth, const T *values, T *y,
				       const cep_onehot &p, cep_fault *fault, u64 site)
{
	i64 d = onehot_scalar(depth, p.depth_type);

	if (d != p.depth) {
		if (blockIdx.x == 0 && threadIdx.x == 0)
			cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, p.axis, d, p.depth);
		return;
	}
	CEP_FOR(e, p.n) {
		i64 r = e / p.inner, j = e - r * p.inner;
		i64 o = r / p.depth, k = r - o * p.depth;
		i64 v = ld_i(idx, o * p.inner + j);

		if (p.wrap && v < 0)
			v += p.depth;
		y[e] = values[v == k ? 1 : 0];
	}
}

#define ONEHOT_KERNEL(T, bytes, I, isfx)                                                  \
	extern "C" __global__ void onehot_##bytes##_##isfx(const I *idx, const void *depth, \
							   const T *values, T *y,           \
							   cep_onehot p, cep_fault *fault,  \
							   u64 site)                        \
	{ onehot<T, I>(idx, depth, values, y, p, fault, site); }

#define ONEHOT_UNITS(I, isfx)             \
	ONEHOT_KERNEL(u8, 1, I, isfx)     \
	ONEHOT_KERNEL(u16, 2, I, isfx)    \
	ONEHOT_KERNEL(u32, 4, I, isfx)    \
	ONEHOT_KERNEL(u64, 8, I, isfx)

ONEHOT_UNITS(float, f32)
ONEHOT_UNITS(f16, f16)
ONEHOT_UNITS(i64, i64)
ONEHOT_UNITS(i32, i32)
ONEHOT_UNITS(i8, i8)
ONEHOT_UNITS(u8, u8)
