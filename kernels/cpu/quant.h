/*
 * quant.h — what the quantized operators share: the reference kernels of
 * kernels/cpu/quant.c (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear), kernels/cpu/qmatmul.c (MatMulInteger,
 * QLinearMatMul) and kernels/cpu/qconv.c (ConvInteger, QLinearConv), and
 * their device twins of kernels/cuda/quant.c, qmatmul.c and qconv.c.
 *
 * The quantized types are int8 and uint8 (int32 for DequantizeLinear's
 * input and the accumulators), and for QuantizeLinear and
 * DequantizeLinear also the float8 types (opset 19 on), int16, uint16,
 * int4 and uint4 (21 on) and float4e2m1 (23 on), whose conversions are
 * in kernels/cpu/qtypes.h. The arithmetic is written once here so that
 * both backends round the same way:
 *
 *  - a quotient or product is computed exactly or in double and rounded
 *    once to the type the specification computes it in (enum
 *    quant_round): float32, float16 or bfloat16. Rounding a double that
 *    is itself the rounded quotient of two such values gives the
 *    correctly rounded result of that type (double has more than twice
 *    their precision), so this is the arithmetic of that type;
 *  - a real becomes an integer by rounding half to even, then the zero
 *    point is added and the sum saturates to the type's range; NaN counts
 *    as 0 (it gives the zero point), infinities saturate.
 *
 * The read functions check what fixed shapes tell and fill the layouts
 * both backends index by; inference has checked types and attributes.
 */
#ifndef CEP_KERNELS_CPU_QUANT_H
#define CEP_KERNELS_CPU_QUANT_H

#include <math.h>

#include "kernels/cpu/cpu.h"
#include "kernels/cpu/qtypes.h"
#include "kernels/cpu/window.h"

/* The quantized types: what a zero point or quantized output may be. */
#define QUANT_DTS_Q (OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))

/* int16 and uint16, which QuantizeLinear and DequantizeLinear take from
 * opset 21 (quant_range(), the device's 16-bit kernels). */
#define QUANT_DTS_Q16 (OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_UINT16))

/* The float types quantized to: float8 (opset 19 on) and float4e2m1 (23
 * on). Their zero point must be 0; QuantizeLinear rounds to nearest even
 * and saturates or not as `saturate` says (float4e2m1 always saturates). */
#define QUANT_DTS_QFLOAT (OP_DTS_FLOAT8 | OP_DT(CEP_DTYPE_FLOAT4E2M1))

/* The float types of the quantized operators' definitions: float64 is
 * none of them. */
#define QUANT_DTS_FLOAT (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_FLOAT64))

/* The quantized types of QuantizeLinear and DequantizeLinear at opset. */
#define QUANT_DTS_Q_AT(opset)                                                   \
	(QUANT_DTS_Q | ((opset) >= 19 ? OP_DTS_FLOAT8 : 0u) |                  \
	 ((opset) >= 21 ? QUANT_DTS_Q16 | OP_DTS_INT4 : 0u) |                   \
	 ((opset) >= 23 ? OP_DT(CEP_DTYPE_FLOAT4E2M1) : 0u))

/* The types of DequantizeLinear's x at opset: the quantized ones and int32. */
#define QUANT_DTS_DQL_AT(opset) (QUANT_DTS_Q_AT(opset) | OP_DT(CEP_DTYPE_INT32))

/* The types of QuantizeLinear's x (before and from opset 19) and of
 * DequantizeLinear's (before 19, 19 and 20, from 21), which pick their
 * kernels on both backends (inference refuses a type the node's opset
 * has not: float4e2m1 before 23). */
#define QUANT_DTS_QL_10 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_INT32))
#define QUANT_DTS_QL_19 (QUANT_DTS_FLOAT | OP_DT(CEP_DTYPE_INT32))
#define QUANT_DTS_DQL QUANT_DTS_DQL_AT(10)
#define QUANT_DTS_DQL_19 QUANT_DTS_DQL_AT(19)
#define QUANT_DTS_DQL_21 QUANT_DTS_DQL_AT(23)

/* ------------------------------------------------------------ arithmetic */

/* The type a real is rounded to; the values are shared with the NVRTC
 * sources (kernels/cuda/quant.cuh). */
enum quant_round {
	QUANT_ROUND_F64 = 0,   /* not rounded: double (int32 operands) */
	QUANT_ROUND_F32 = 1,
	QUANT_ROUND_F16 = 2,
	QUANT_ROUND_BF16 = 3,
};

/* The rounding of a float type (float32 for any other). */
static inline int quant_round_of(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_FLOAT16: return QUANT_ROUND_F16;
	case CEP_DTYPE_BFLOAT16: return QUANT_ROUND_BF16;
	default: return QUANT_ROUND_F32;
	}
}

/* v rounded to nearest even in type r. */
static inline double quant_round_to(double v, int r)
{
	switch (r) {
	case QUANT_ROUND_F32: return (double)(float)v;
	case QUANT_ROUND_F16: return (double)cpu_f16_to_f32(cpu_f32_to_f16((float)v));
	case QUANT_ROUND_BF16: return (double)cpu_bf16_to_f32(cpu_f32_to_bf16((float)v));
	default: return v;
	}
}

/* Element i of p (of a stored numeric type t) as a double, exactly. */
static inline double quant_load_d(const void *p, cep_dtype t, int64_t i)
{
	if (cpu_is_float(t))
		return (double)cpu_load_f(p, t, i);
	return (double)cpu_load_i(p, t, i);
}

/* The range of quantized integer type t (int8, uint8, int16, uint16, int4
 * or uint4). */
static inline void quant_range(cep_dtype t, int64_t *lo, int64_t *hi)
{
	switch (t) {
	case CEP_DTYPE_INT4: *lo = -8; *hi = 7; return;
	case CEP_DTYPE_UINT4: *lo = 0; *hi = 15; return;
	case CEP_DTYPE_INT8: *lo = -128; *hi = 127; return;
	case CEP_DTYPE_INT16: *lo = -32768; *hi = 32767; return;
	case CEP_DTYPE_UINT16: *lo = 0; *hi = 65535; return;
	default: *lo = 0; *hi = 255; return;
	}
}

/* v rounded half to even, plus zp, saturated to [lo, hi]; NaN gives zp. */
static inline int64_t quant_saturate(double v, int64_t zp, int64_t lo, int64_t hi)
{
	double r = v != v ? 0.0 : nearbyint(v);

	r += (double)zp;
	if (r <= (double)lo)
		return lo;
	if (r >= (double)hi)
		return hi;
	return (int64_t)r;
}

/* v, a real QuantizeLinear has divided and rounded, stored as element i
 * of p of float type t (float8, saturating or not, or float4e2m1). */
static inline void quant_store_qfloat(void *p, cep_dtype t, int64_t i, double v, bool saturate)
{
	if (t == CEP_DTYPE_FLOAT4E2M1)
		((uint8_t *)p)[i] = qtype_f4_encode(v);
	else
		cpu_store_f8(p, t, i, v, saturate);
}

/*
 * Returns 0 when every element of zp, a zero point of a float type
 * (float8, float4e2m1), is 0 (as the specification requires of them),
 * else CEP_EINVAL naming the operator, the input and the element.
 */
int quant_zp_check_zero(const struct op_node *node, const char *name,
			const struct op_tensor *zp);

/* The element i of a zero point (absent: NULL data), 0 when absent. */
static inline int64_t quant_zp(const struct op_tensor *zp, int64_t i)
{
	return zp != NULL && zp->data != NULL ? cpu_load_i(zp->data, zp->dtype, i) : 0;
}

/*
 * Returns 0 when dtype t of the input called name is in set, else
 * CEP_EDTYPE with a message naming the operator, the input, its type, the
 * opset and what it takes.
 */
int quant_check_dtype(const struct op_node *node, const char *name, cep_dtype t,
		      uint32_t set);

/* The name of ONNX element type t, for the types cudaep does not store
 * too ("int4", "float8e4m3fn"); "unknown" for a number ONNX has not. */
const char *quant_type_name(int64_t t);

/* ------------------------------------------ QuantizeLinear, DequantizeLinear */

/*
 * Where the scale and zero point of element i of x are, for every
 * granularity: x is seen as (outer, d, inner) around the axis, i as
 * (o, a, r), and both are read at o * so + (a / block) * sa + r * sr.
 * Per tensor every stride is 0; per axis sa is 1; blocked (opset 21),
 * the scale has x's shape but ceil(d / block) along the axis.
 */
struct cpu_quant {
	int64_t n;                  /* elements of x */
	int64_t d, inner;           /* >= 1 */
	int64_t block;              /* >= 1 */
	int64_t so, sa, sr;
};

/* The index of element i's scale and zero point under q. */
static inline int64_t cpu_quant_at(const struct cpu_quant *q, int64_t i)
{
	int64_t r = i % q->inner, t = i / q->inner;

	return t / q->d * q->so + t % q->d / q->block * q->sa + r * q->sr;
}

/*
 * Checks the scale s and zero point zp (absent: dtype undefined) of node
 * (QuantizeLinear or DequantizeLinear) against x for the granularity the
 * opset and attributes give: a scalar, a vector along axis (opset 13 on),
 * or blocks of block_size along axis (21 on). Dims that are not fixed are
 * not checked; q, when not NULL, is filled (every dim then fixed).
 * Returns 0, CEP_ESHAPE or CEP_EMODEL (a bad axis or block_size) with a
 * message naming the operator and the inputs.
 */
int cpu_quant_read(const struct op_node *node, const struct op_tensor *x,
		   const struct op_tensor *s, const struct op_tensor *zp, struct cpu_quant *q);

/*
 * How QuantizeLinear divides: the rounding of its operands and of the
 * quotient. The scale's type is the type of the division (before opset 23
 * x has the scale's type, or the scale is float32); an int32 x before 23,
 * or an int32 scale, divides in double. The precision attribute (opset 23
 * on), when set, names the type both operands are rounded to and the
 * quotient computed in. Returns CEP_EUNSUPPORTED for a precision other
 * than float32, float16, bfloat16 or float64.
 */
int cpu_quant_div_round(const struct op_node *node, cep_dtype x, cep_dtype s, int *round);

/* --------------------------------------------- MatMulInteger, QLinearMatMul */

/* Batch dims of a matrix product: those of the output before its matrix. */
#define QMM_MAX_BATCH (CEP_MAX_RANK - 2)

/*
 * A product of A (batches of M x K) and B (batches of K x N) into Y
 * (batches of M x N): the output's batch dims and where each operand's
 * matrix of each (numpy-broadcast) batch starts. The zero point and scale
 * of A are read at a_mat * a_bs + m * a_vs, where a_mat is the index of
 * A's matrix: per tensor both are 0, per row a_vs is 1, and a_bs is M
 * when they also differ per batch; the same for B by column n.
 */
struct cpu_qmm {
	int64_t M, N, K;
	int64_t batch;                       /* output matrices */
	int32_t rank;                        /* output batch dims */
	int32_t pad;
	int64_t dims[QMM_MAX_BATCH];         /* (rank) output batch dims */
	int64_t a_str[QMM_MAX_BATCH];        /* (rank) in matrices; 0: broadcast */
	int64_t b_str[QMM_MAX_BATCH];
	int64_t a_bs, a_vs, b_bs, b_vs;
};

/* The matrices of A and B that output matrix bo reads. */
static inline void cpu_qmm_mats(const struct cpu_qmm *p, int64_t bo, int64_t *am, int64_t *bm)
{
	int64_t a = 0, b = 0;
	int d;

	for (d = p->rank - 1; d >= 0; d--) {
		int64_t k = bo % p->dims[d];

		a += k * p->a_str[d];
		b += k * p->b_str[d];
		bo /= p->dims[d];
	}
	*am = a;
	*bm = b;
}

/*
 * Fills p for node (MatMulInteger or QLinearMatMul) over the fixed shapes
 * of its inputs in (A, B and the zero points and scales at their places)
 * and output y. Returns 0, CEP_ESHAPE for a zero point or scale whose
 * shape is none of the specification's (scalar, per row of A, per column
 * of B), or CEP_EUNSUPPORTED for one that broadcasts over some batch dims
 * only, with a message naming it.
 */
int cpu_qmm_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		 const struct op_tensor *y, struct cpu_qmm *p);

/* ----------------------------------------------- ConvInteger, QLinearConv */

/* A convolution of integers: the window resolved over fixed shapes. */
struct cpu_qconv {
	struct cpu_window_geom g;  /* spatial, padded to three dims */
	int64_t batch, c, m, group, cg, mg;
	int64_t ks;                /* kernel taps: product of the kernel dims */
	int64_t positions;         /* output positions per image */
	bool w_per_channel;        /* w's zero point and scale per output channel */
};

/*
 * Fills p for node (ConvInteger or QLinearConv) over its inputs in (x and
 * w at 0 and 1, or 0 and 3 for QLinearConv) and output y, fixed shapes.
 * Returns 0 or the window's error (conv_geom_init()), or CEP_ESHAPE for a
 * zero point or scale of the wrong size.
 */
int cpu_qconv_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		   const struct op_tensor *y, struct cpu_qconv *p);

#endif
