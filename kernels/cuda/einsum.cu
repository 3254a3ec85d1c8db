/*
 * einsum.cu — the pieces of Einsum on the device (kernels/cuda/einsum.c
 * says which run when):
 *
 * einsum_<type> is the definition itself, for any equation: a thread per
 * output element sums over the summed indices (the last fastest) the
 * product of the operands taken in order, as the reference kernel does
 * (kernels/cpu/einsum.c): floats in float32 (float64 in double), each
 * product and sum rounded one at a time (no fused multiply-add), so
 * results match the host's bit for bit; integers in int64, wrapping to their width. Each operand is
 * read through its stride along every loop (0 where it does not walk it
 * or broadcasts; two axes of one index add up: a diagonal).
 *
 * einsum_gather_<bytes> copies a strided view into a dense tensor: the
 * transposes, diagonals and broadcasts around a batched GEMM, moved as
 * raw units of their element size.
 */
#include "common.cuh"

#define EINSUM_MAX_OPS 8
#define EINSUM_MAX_LOOPS (CEP_MAX_RANK + 8)

/* Twin: struct cuda_einsum (kernels/cuda/einsum.c). */
struct cep_einsum {
	i64 n;                                         /* output elements */
	i32 n_ops, n_out, n_loops, pad;
	i64 size[EINSUM_MAX_LOOPS];                    /* (n_loops) */
	i64 stride[EINSUM_MAX_OPS][EINSUM_MAX_LOOPS];  /* (n_ops, n_loops) elements */
};

/* The operands, passed by value. Twin: struct cuda_einsum_ops. */
struct cep_einsum_ops {
	const void *p[EINSUM_MAX_OPS];
};

template <typename T>
__device__ __forceinline__ void einsum(cep_einsum_ops ops, T *y, const cep_einsum &p)
{
	i64 sums = 1;

	for (int l = p.n_out; l < p.n_loops; l++)
		sums *= p.size[l];
	CEP_FOR(e, p.n) {
		i64 off[EINSUM_MAX_OPS], idx[EINSUM_MAX_LOOPS], rem = e;
		float facc = 0.0f;
		double dacc = 0.0;
		u64 iacc = 0;
		int o, l;

		for (o = 0; o < p.n_ops; o++)
			off[o] = 0;
		for (l = p.n_out - 1; l >= 0; l--) {
			i64 i = rem % p.size[l];

			rem /= p.size[l];
			for (o = 0; o < p.n_ops; o++)
				off[o] += i * p.stride[o][l];
		}
		for (l = p.n_out; l < p.n_loops; l++)
			idx[l] = 0;
		for (i64 r = 0; r < sums; r++) {
			if (cep_is_f64<T>::value) {
				double v = ld_d((const T *)ops.p[0], off[0]);

				for (o = 1; o < p.n_ops; o++)
					v = __dmul_rn(v, ld_d((const T *)ops.p[o], off[o]));
				dacc = __dadd_rn(dacc, v);
			} else if (cep_is_float<T>::value) {
				float v = ld_f((const T *)ops.p[0], off[0]);

				for (o = 1; o < p.n_ops; o++)
					v = __fmul_rn(v, ld_f((const T *)ops.p[o], off[o]));
				facc = __fadd_rn(facc, v);
			} else {
				u64 v = (u64)ld_i((const T *)ops.p[0], off[0]);

				for (o = 1; o < p.n_ops; o++)
					v *= (u64)ld_i((const T *)ops.p[o], off[o]);
				iacc += v;
			}
			/* The next summed position, the last index fastest. */
			for (l = p.n_loops - 1; l >= p.n_out; l--) {
				for (o = 0; o < p.n_ops; o++)
					off[o] += p.stride[o][l];
				if (++idx[l] < p.size[l])
					break;
				for (o = 0; o < p.n_ops; o++)
					off[o] -= p.stride[o][l] * p.size[l];
				idx[l] = 0;
			}
		}
		if (cep_is_f64<T>::value)
			st_d(y, e, dacc);
		else if (cep_is_float<T>::value)
			st_f(y, e, facc);
		else
			st_i(y, e, (i64)iacc);
	}
}

#define EINSUM_KERNEL(T, sfx)                                                              \
	extern "C" __global__ void einsum_##sfx(cep_einsum_ops ops, T *y, cep_einsum p)    \
	{                                                                                  \
		einsum<T>(ops, y, p);                                                      \
	}

EINSUM_KERNEL(float, f32)
EINSUM_KERNEL(f16, f16)
EINSUM_KERNEL(bf16, bf16)
EINSUM_KERNEL(i64, i64)
EINSUM_KERNEL(i32, i32)
EINSUM_KERNEL(i8, i8)
EINSUM_KERNEL(u8, u8)
/* Few enough to share the source with the first types. */
EINSUM_KERNEL(double, f64)
EINSUM_KERNEL(i16, i16)
EINSUM_KERNEL(u16, u16)
EINSUM_KERNEL(u32, u32)
EINSUM_KERNEL(u64, u64)

/* Twin: struct cuda_einsum_gather. A dense tensor of dims read from a
 * source through its element strides. */
struct cep_einsum_gather {
	i64 n;                                         /* elements */
	i32 rank, pad;
	i64 dims[EINSUM_MAX_LOOPS];                    /* (rank) */
	i64 stride[EINSUM_MAX_LOOPS];                  /* (rank) of the source */
};

template <typename T>
__device__ __forceinline__ void einsum_gather(const T *src, T *dst, const cep_einsum_gather &p)
{
	CEP_FOR(e, p.n) {
		i64 rem = e, off = 0;

		for (int d = p.rank - 1; d >= 0; d--) {
			i64 q = rem / p.dims[d];

			off += (rem - q * p.dims[d]) * p.stride[d];
			rem = q;
		}
		dst[e] = src[off];
	}
}

#define EINSUM_GATHER_KERNEL(T, bytes)                                                    \
	extern "C" __global__ void einsum_gather_##bytes(const T *src, T *dst,            \
							 cep_einsum_gather p)             \
	{                                                                                 \
		einsum_gather<T>(src, dst, p);                                            \
	}

EINSUM_GATHER_KERNEL(u16, 2)
EINSUM_GATHER_KERNEL(u32, 4)
