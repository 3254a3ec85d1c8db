/*
 * variadic.cuh — Min, Max, Sum and Mean of any number of tensors with
 * numpy broadcasting, the device side of kernels/cpu/variadic.c, as the
 * template and the macro that makes a kernel of it for one type
 * (variadic.cu has the first types', variadic_wide.cu float64, int16,
 * uint16, uint32 and uint64). One launch
 * folds up to CEP_BCASTN_MAX inputs per output element in registers, in
 * the host's order and with its arithmetic: floats accumulate in float
 * (float16 and bfloat16 are rounded once, at the end), float64 in double,
 * Min and Max propagate NaN, integers (Min and Max only) compare in int64
 * (uint64 as unsigned).
 *
 * More inputs take several launches: each after the first starts from
 * the running result, which a launch that is not the last leaves in
 * float in acc (the output itself for float32, a workspace for float16
 * and bfloat16) or, for float64 and the integers, in the output at its
 * width, where nothing is lost. Launcher: kernels/cuda/variadic.c.
 * Kernels: <op>_<type>, e.g. sum_bf16.
 */
#ifndef CEP_CUDA_VARIADIC_CUH
#define CEP_CUDA_VARIADIC_CUH

#include "elem.cuh"

enum { VAR_MIN, VAR_MAX, VAR_SUM, VAR_MEAN };

/* The inputs of one launch, in cep_bcastn's order. */
struct var_ptrs {
	u64 p[CEP_BCASTN_MAX];
};

template <int OP> __device__ __forceinline__ float var_f(float acc, float v)
{
	switch (OP) {
	case VAR_MIN: return v < acc || v != v ? v : acc;
	case VAR_MAX: return v > acc || v != v ? v : acc;
	default: return acc + v;
	}
}

template <int OP> __device__ __forceinline__ double var_d(double acc, double v)
{
	switch (OP) {
	case VAR_MIN: return v < acc || v != v ? v : acc;
	case VAR_MAX: return v > acc || v != v ? v : acc;
	default: return acc + v;
	}
}

/* uint64 ordered as unsigned (cep_lt_i), as the host has it. */
template <typename T, int OP> __device__ __forceinline__ i64 var_i(i64 acc, i64 v)
{
	return OP == VAR_MIN ? (cep_lt_i<T>(v, acc) ? v : acc) : (cep_lt_i<T>(acc, v) ? v : acc);
}

/*
 * from_acc: the running result of earlier launches is there to fold into
 * (else input 0 starts it); last: store the result as T into o (dividing
 * by div for Mean), else leave it in acc for the next launch.
 */
template <typename T, int OP>
__device__ __forceinline__ void variadic(const var_ptrs &in, T *o, float *acc,
					 const cep_bcastn &p, int from_acc, int last,
					 float div)
{
	CEP_FOR(i, p.n) {
		i64 off[CEP_BCASTN_MAX];
		int k = 0;

		cep_bcastn_at<CEP_BCASTN_MAX>(p, i, off);
		if (cep_is_f64<T>::value) {
			/* In double, the running result in the output. */
			double a = from_acc ? ld_d(o, i) : ld_d((const T *)in.p[k++], off[0]);

			for (; k < p.n_in; k++)
				a = var_d<OP>(a, ld_d((const T *)in.p[k], off[k]));
			st_d(o, i, OP == VAR_MEAN && last ? a / (double)div : a);
		} else if (cep_is_float<T>::value) {
			float a = from_acc ? acc[i] : ld_f((const T *)in.p[k++], off[0]);

			for (; k < p.n_in; k++)
				a = var_f<OP>(a, ld_f((const T *)in.p[k], off[k]));
			if (!last)
				acc[i] = a;
			else
				st_f(o, i, OP == VAR_MEAN ? a / div : a);
		} else {
			i64 a = from_acc ? ld_i(o, i) : ld_i((const T *)in.p[k++], off[0]);

			for (; k < p.n_in; k++)
				a = var_i<T, OP>(a, ld_i((const T *)in.p[k], off[k]));
			st_i(o, i, a);
		}
	}
}

#define VAR_KERNEL(name, OP, T, sfx)                                            \
	extern "C" __global__ void name##_##sfx(var_ptrs in, T *o, float *acc,   \
						cep_bcastn p, int from_acc,     \
						int last, float div)            \
	{                                                                       \
		variadic<T, OP>(in, o, acc, p, from_acc, last, div);            \
	}

#endif
