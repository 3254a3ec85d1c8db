/*
 * compare.cu — comparisons, logic and selection with numpy broadcasting,
 * the device side of kernels/cpu/compare.c: Equal, Less, LessOrEqual,
 * Greater, GreaterOrEqual, And, Or, Xor (bool out), Not, and Where. Floats
 * compare in float (so NaN is unequal to everything), integers and bool
 * in int64; Where moves elements as bits of their width and reads the
 * condition as a byte, nonzero true. The comparisons of float64 and the
 * other integer widths are compare_wide.cu's. Launcher:
 * kernels/cuda/compare.c.
 * Kernels: <op>_<type> (equal_f32, and_bool, not_bool) and where_<bits>;
 * the comparisons and logic also as <op>_<type>_<a><b>, the fast paths of
 * elem.cuh (a, b: f, r or s as in binary.cu), and Not walks its tensor
 * 16 bytes at a time.
 */
#include "compare.cuh"

#define COMPARE_TYPES(name, OP)                 \
	COMPARE_KERNEL(name, OP, float, f32)    \
	COMPARE_KERNEL(name, OP, f16, f16)      \
	COMPARE_KERNEL(name, OP, bf16, bf16)    \
	COMPARE_KERNEL(name, OP, i64, i64)      \
	COMPARE_KERNEL(name, OP, i32, i32)      \
	COMPARE_KERNEL(name, OP, i8, i8)        \
	COMPARE_KERNEL(name, OP, u8, u8)

COMPARE_TYPES(equal, CMP_EQ)
COMPARE_KERNEL(equal, CMP_EQ, b8, bool)
COMPARE_TYPES(less, CMP_LT)
COMPARE_TYPES(lessorequal, CMP_LE)
COMPARE_TYPES(greater, CMP_GT)
COMPARE_TYPES(greaterorequal, CMP_GE)
COMPARE_KERNEL(and, CMP_AND, b8, bool)
COMPARE_KERNEL(or, CMP_OR, b8, bool)
COMPARE_KERNEL(xor, CMP_XOR, b8, bool)

struct not_fn {
	__device__ __forceinline__ void operator()(const u8 *a, i64 ia, u8 *o, i64 io) const
	{
		o[io] = !a[ia];
	}
};

extern "C" __global__ void not_bool(const u8 *a, u8 *o, i64 n)
{
	cep_map1(a, o, n, not_fn());
}

/* ------------------------------------------------------------------ Where */

/* Operands in bc's order: the condition, X, Y. */
template <typename T>
__device__ __forceinline__ void where(const u8 *c, const T *x, const T *y, T *o,
				      const cep_bcastn &p)
{
	CEP_FOR(i, p.n) {
		i64 off[3];

		cep_bcastn_at<3>(p, i, off);
		o[i] = c[off[0]] ? x[off[1]] : y[off[2]];
	}
}

#define WHERE_KERNEL(T, bits)                                                   \
	extern "C" __global__ void where_##bits(const u8 *c, const T *x, const T *y, \
						T *o, cep_bcastn p)               \
	{                                                                       \
		where<T>(c, x, y, o, p);                                        \
	}

WHERE_KERNEL(u8, 8)
WHERE_KERNEL(u16, 16)
WHERE_KERNEL(u32, 32)
WHERE_KERNEL(u64, 64)
