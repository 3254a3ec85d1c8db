/*
 * test_ops_quant_mm.c — the quantized products of kernels/cpu/qmatmul.c
 * and kernels/cpu/qconv.c on the host, called the way the engine calls
 * them: MatMulInteger and QLinearMatMul with the specification's examples
 * worked out by hand, numpy's shapes (1-D operands, broadcast batches),
 * zero points and scales per tensor, per row of a and per column of b
 * (per batch too), every pair of int8 and uint8, the 32-bit wrap of the
 * sums, float16 and bfloat16 scales from opset 21; ConvInteger and
 * QLinearConv with the examples, 1-D and 3-D windows, auto_pad, a bias,
 * per-channel weights and a random 2-D case (groups, strides, dilations,
 * asymmetric pads) against a direct convolution written here. And the
 * refusals, naming the operator and the input: types, shapes of zero
 * points and scales, mismatched dims.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "client/cudaep.h"
#include "kernels/cpu/cpu.h"
#include "kernels/registry.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void assert_ints(const struct op_tensor *out, const int64_t *want, int64_t n,
			const char *what)
{
	int64_t i;

	for (i = 0; i < n; i++)
		cr_assert_eq(cpu_load_i(out->data, out->dtype, i), want[i], "%s: element %lld is "
			     "%lld, want %lld", what, (long long)i,
			     (long long)cpu_load_i(out->data, out->dtype, i), (long long)want[i]);
}

static void assert_refused(int ret, int code, const char *const *pieces)
{
	const char *msg = cep_last_error();

	cr_assert_eq(ret, code, "got %d (%s), want %d", ret, msg, code);
	for (; *pieces != NULL; pieces++)
		cr_assert(strstr(msg, *pieces) != NULL, "'%s' does not say '%s'", msg, *pieces);
}

#define REFUSED(ret, code, ...) assert_refused((ret), (code), (const char *const[]){ __VA_ARGS__, NULL })

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* Fills n elements of int8 (sgn) or uint8 data at random over the range. */
static void fill8(void *p, int64_t n, unsigned *seed)
{
	int64_t i;

	for (i = 0; i < n; i++)
		((uint8_t *)p)[i] = (uint8_t)rnd(seed);
}

/* Element i of int8 (sgn) or uint8 data. */
static int32_t ld8(const void *p, bool sgn, int64_t i)
{
	return sgn ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* v in half type t (float16 or bfloat16), and back. */
static uint16_t half_bits(cep_dtype t, float v)
{
	return t == CEP_DTYPE_FLOAT16 ? cpu_f32_to_f16(v) : cpu_f32_to_bf16(v);
}

static float half_value(cep_dtype t, uint16_t h)
{
	return t == CEP_DTYPE_FLOAT16 ? cpu_f16_to_f32(h) : cpu_bf16_to_f32(h);
}

static cep_dtype t8(bool sgn)
{
	return sgn ? CEP_DTYPE_INT8 : CEP_DTYPE_UINT8;
}

/* The requantization as numpy computes it: the multiplier in float32,
 * rounded at each step, its product with the sum in double, rounded half
 * to even, the zero point added and the sum saturated. */
static int64_t requant(int32_t sum, float as, float bs, float ys, int32_t zp, bool sgn)
{
	float m = as * bs;
	double v;

	m = m / ys;
	v = nearbyint((double)sum * (double)m) + zp;
	if (v < (sgn ? -128 : 0))
		return sgn ? -128 : 0;
	if (v > (sgn ? 127 : 255))
		return sgn ? 127 : 255;
	return (int64_t)v;
}

/* ------------------------------------------------------------ MatMulInteger */

/* The specification's example: (A - 12) times B. */
Test(ops_quant_mm, matmulinteger_the_specification_example)
{
	uint8_t a[12] = { 11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0 }, b[6] = { 1, 4, 2, 5, 3, 6 };
	uint8_t azp = 12, bzp = 0;
	static const int64_t want[8] = { -38, -83, -44, -98, -50, -113, -56, -128 };
	static const int64_t want_nozp[8] = { 34, 97, 28, 82, 22, 67, 16, 52 };
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 3), a),
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(3, 2), b),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &azp),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &bzp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 4, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT32);
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 4);
	cr_assert_eq(out.dims[1], 2);
	assert_ints(&out, want, 8, "example");
	free(out.data);
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want_nozp, 8, "no zero points");
	free(out.data);
}

/* A reference product over one pair of matrices: y[m][n] = sum over k of
 * (a[m][k] - azp(m)) * (b[k][n] - bzp(n)), 64-bit, then wrapped to 32. */
static void ref_mm(const void *a, bool as, const void *b, bool bs, const void *azp,
		   int64_t azp_step, const void *bzp, int64_t bzp_step, int64_t M, int64_t K,
		   int64_t N, int32_t *y)
{
	int64_t m, n, k;

	for (m = 0; m < M; m++) {
		for (n = 0; n < N; n++) {
			int64_t s = 0;
			int32_t za = azp ? ld8(azp, as, m * azp_step) : 0;
			int32_t zb = bzp ? ld8(bzp, bs, n * bzp_step) : 0;

			for (k = 0; k < K; k++)
				s += (int64_t)(ld8(a, as, m * K + k) - za) *
				     (ld8(b, bs, k * N + n) - zb);
			y[m * N + n] = (int32_t)(uint32_t)(uint64_t)s;
		}
	}
}

/* Every pair of int8 and uint8, with zero points per tensor, per row of a
 * and per column of b, against ref_mm on random data. */
Test(ops_quant_mm, matmulinteger_every_type_pair_and_zero_point_layout)
{
	enum { M = 5, K = 7, N = 3 };
	unsigned seed = 11;
	uint8_t a[M * K], b[K * N], azp[M], bzp[N];
	int32_t want[M * N];
	int as, bs, layout;

	for (as = 0; as < 2; as++) {
		for (bs = 0; bs < 2; bs++) {
			for (layout = 0; layout < 3; layout++) {
				struct op_tensor in[4], out;
				int64_t w64[M * N];
				int i;

				fill8(a, M * K, &seed);
				fill8(b, K * N, &seed);
				fill8(azp, M, &seed);
				fill8(bzp, N, &seed);
				in[0] = oh_tensor(t8(as), 2, DIMS(M, K), a);
				in[1] = oh_tensor(t8(bs), 2, DIMS(K, N), b);
				if (layout == 0) {
					in[2] = oh_tensor(t8(as), 0, NULL, azp);
					in[3] = oh_tensor(t8(bs), 0, NULL, bzp);
				} else if (layout == 1) {
					in[2] = oh_tensor(t8(as), 1, DIMS(M), azp);
					in[3] = oh_tensor(t8(bs), 1, DIMS(N), bzp);
				} else {
					in[2] = oh_tensor(t8(as), 2, DIMS(M, 1), azp);
					in[3] = oh_tensor(t8(bs), 2, DIMS(1, N), bzp);
				}
				ref_mm(a, as, b, bs, azp, layout ? 1 : 0, bzp, layout ? 1 : 0, M, K, N,
				       want);
				for (i = 0; i < M * N; i++)
					w64[i] = want[i];
				cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 4, &out, 1), 0,
					     "%s", cep_last_error());
				assert_ints(&out, w64, M * N, "random");
				free(out.data);
			}
		}
	}
}

/* numpy's shapes: [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2], a's zero
 * points per batch and row ([2, 1, 3, 1]); 1-D operands promoted and
 * their dim dropped. */
Test(ops_quant_mm, matmulinteger_broadcasts_batches_and_takes_vectors)
{
	unsigned seed = 17;
	int8_t a[2 * 3 * 4], azp[2 * 3];
	uint8_t b[5 * 4 * 2], bzp = 3;
	int64_t want[2 * 5 * 3 * 2];
	int32_t y[3 * 2];
	struct op_tensor in[4], out;
	int i0, i1, e;

	fill8(a, 24, &seed);
	fill8(azp, 6, &seed);
	fill8(b, 40, &seed);
	for (i0 = 0; i0 < 2; i0++) {
		for (i1 = 0; i1 < 5; i1++) {
			ref_mm(a + i0 * 12, true, b + i1 * 8, false, azp + i0 * 3, 1, &bzp, 0, 3, 4, 2,
			       y);
			for (e = 0; e < 6; e++)
				want[(i0 * 5 + i1) * 6 + e] = y[e];
		}
	}
	in[0] = oh_tensor(CEP_DTYPE_INT8, 4, DIMS(2, 1, 3, 4), a);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 3, DIMS(5, 4, 2), b);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 4, DIMS(2, 1, 3, 1), azp);
	in[3] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &bzp);
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 4, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 5);
	cr_assert_eq(out.dims[2], 3);
	cr_assert_eq(out.dims[3], 2);
	assert_ints(&out, want, 60, "broadcast");
	free(out.data);

	/* [4] x [4, 2] -> [2]: the vector is a row. */
	in[0] = oh_tensor(CEP_DTYPE_INT8, 1, DIMS(4), a);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 2), b);
	ref_mm(a, true, b, false, NULL, 0, &bzp, 0, 1, 4, 2, y);
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(out.dims[0], 2);
	ref_mm(a, true, b, false, NULL, 0, NULL, 0, 1, 4, 2, y);
	for (e = 0; e < 2; e++)
		cr_assert_eq(((int32_t *)out.data)[e], y[e]);
	free(out.data);
	/* [3, 4] x [4] -> [3]; [4] x [4] -> a scalar. */
	in[0] = oh_tensor(CEP_DTYPE_INT8, 2, DIMS(3, 4), a);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(4), b);
	ref_mm(a, true, b, false, NULL, 0, NULL, 0, 3, 4, 1, y);
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 1);
	cr_assert_eq(out.dims[0], 3);
	for (e = 0; e < 3; e++)
		cr_assert_eq(((int32_t *)out.data)[e], y[e]);
	free(out.data);
	in[0] = oh_tensor(CEP_DTYPE_INT8, 1, DIMS(4), a);
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_eq(((int32_t *)out.data)[0], y[0]);
	free(out.data);
}

/* "The accumulation may overflow if and only if in 32 bits": 40000
 * products of 255 * 255 sum to 2601000000, which wraps to -1693967296. */
Test(ops_quant_mm, matmulinteger_sums_wrap_in_32_bits)
{
	enum { K = 40000 };
	static uint8_t a[K], b[K];
	struct op_tensor in[2] = {
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(1, K), a),
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(K, 1), b),
	};
	struct op_tensor out;

	memset(a, 255, sizeof(a));
	memset(b, 255, sizeof(b));
	cr_assert_eq(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((int32_t *)out.data)[0], -1693967296);
	free(out.data);
}

Test(ops_quant_mm, matmulinteger_refusals)
{
	uint8_t a[12] = { 0 }, zp[5] = { 0 };
	int8_t zi = 0;
	float f[12] = { 0 };
	struct op_tensor in[4], out;

	in[0] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(3, 4), a);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(3, 4), a);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		"MatMulInteger: inner dimensions differ (4 and 3)");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(4, 3), f);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), CEP_EDTYPE,
		"MatMulInteger: b is float32");
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 3), a);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zi);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 3, &out, 1), CEP_EDTYPE,
		"a_zero_point is int8 but a is uint8");
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(5), zp);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		"a_zero_point has shape [5]; it must be a scalar, [3] or [..., M, 1]");
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, zp);
	in[3] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 1), zp);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 4, &out, 1), CEP_ESHAPE,
		"b_zero_point has shape [4,1]");
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, a);
	REFUSED(oh_run("MatMulInteger", 10, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		"operands must have rank >= 1");
}

/* ------------------------------------------------------------ QLinearMatMul */

/* The specification's example (test_qlinearmatmul_2D_uint8_float32), with
 * float32 scales at 10 and 21 and float16 and bfloat16 ones at 21. */
Test(ops_quant_mm, qlinearmatmul_the_specification_example)
{
	uint8_t a[8] = { 208, 236, 0, 238, 3, 214, 255, 29 };
	uint8_t b[12] = { 152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247 };
	uint8_t azp = 113, bzp = 114, yzp = 118;
	float as = 0.0066f, bs = 0.00705f, ys = 0.0107f;
	static const int64_t want[6] = { 168, 115, 255, 1, 66, 151 };
	static const cep_dtype half[2] = { CEP_DTYPE_FLOAT16, CEP_DTYPE_BFLOAT16 };
	struct op_tensor in[8] = {
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(2, 4), a),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &as),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &azp),
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 3), b),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &bs),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &bzp),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ys),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &yzp),
	};
	struct op_tensor out;
	int o, h;

	for (o = 10; o <= 21; o += 11) {
		cr_assert_eq(oh_run("QLinearMatMul", o, NULL, 0, in, 8, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_UINT8);
		assert_ints(&out, want, 6, "float32 scales");
		free(out.data);
	}
	for (h = 0; h < 2; h++) {
		uint16_t s[3] = { half_bits(half[h], as), half_bits(half[h], bs),
				  half_bits(half[h], ys) };

		in[1] = oh_tensor(half[h], 0, NULL, &s[0]);
		in[4] = oh_tensor(half[h], 0, NULL, &s[1]);
		in[6] = oh_tensor(half[h], 0, NULL, &s[2]);
		cr_assert_eq(oh_run("QLinearMatMul", 21, NULL, 0, in, 8, &out, 1), 0, "%s",
			     cep_last_error());
		assert_ints(&out, want, 6, cep_dtype_name(half[h]));
		free(out.data);
		REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_EDTYPE,
			"QLinearMatMul: a_scale is", "opset 10 takes float32");
	}
}

/* The multiplier in half type t, rounded at each step as numpy computes
 * half types (in float32, then rounded). */
static float half_mult(cep_dtype t, float as, float bs, float ys)
{
	float p = half_value(t, half_bits(t, as * bs));

	return half_value(t, half_bits(t, p / ys));
}

/* Every pair of int8 and uint8 for a, b and y, scales and zero points per
 * tensor and per row and column, float32 and float16 scales, random data
 * against the reference formula. */
Test(ops_quant_mm, qlinearmatmul_every_type_and_layout)
{
	enum { M = 4, K = 9, N = 5 };
	unsigned seed = 23;
	uint8_t a[M * K], b[K * N], azp[M], bzp[N], yzp;
	float as[M], bs[N], ys;
	int tys, layout, f16, checked = 0;

	for (tys = 0; tys < 8; tys++) {
		bool sa = tys & 1, sb = tys & 2, sy = tys & 4;

		for (layout = 0; layout < 2; layout++) {
			for (f16 = 0; f16 < 2; f16++) {
				cep_dtype st = f16 ? CEP_DTYPE_FLOAT16 : CEP_DTYPE_FLOAT32;
				uint16_t ash[M], bsh[N], ysh;
				struct op_tensor in[8], out;
				int64_t want[M * N];
				int32_t sums[M * N];
				int i, m, n;

				fill8(a, M * K, &seed);
				fill8(b, K * N, &seed);
				fill8(azp, M, &seed);
				fill8(bzp, N, &seed);
				fill8(&yzp, 1, &seed);
				for (i = 0; i < M; i++)
					as[i] = 0.001f + (float)(rnd(&seed) % 1000) * 1e-5f;
				for (i = 0; i < N; i++)
					bs[i] = 0.001f + (float)(rnd(&seed) % 1000) * 1e-5f;
				ys = 0.02f + (float)(rnd(&seed) % 1000) * 1e-4f;
				for (i = 0; i < M; i++) {
					ash[i] = cpu_f32_to_f16(as[i]);
					if (f16)
						as[i] = cpu_f16_to_f32(ash[i]);
				}
				for (i = 0; i < N; i++) {
					bsh[i] = cpu_f32_to_f16(bs[i]);
					if (f16)
						bs[i] = cpu_f16_to_f32(bsh[i]);
				}
				ysh = cpu_f32_to_f16(ys);
				if (f16)
					ys = cpu_f16_to_f32(ysh);
				ref_mm(a, sa, b, sb, azp, layout, bzp, layout, M, K, N, sums);
				for (m = 0; m < M; m++) {
					for (n = 0; n < N; n++) {
						float am = as[layout ? m : 0], bn = bs[layout ? n : 0];

						if (f16) {
							double v = nearbyint((double)sums[m * N + n] *
									     half_mult(st, am, bn, ys));

							v += ld8(&yzp, sy, 0);
							v = fmax(sy ? -128 : 0, fmin(sy ? 127 : 255, v));
							want[m * N + n] = (int64_t)v;
						} else {
							want[m * N + n] = requant(sums[m * N + n], am, bn,
										  ys, ld8(&yzp, sy, 0), sy);
						}
					}
				}
				in[0] = oh_tensor(t8(sa), 2, DIMS(M, K), a);
				in[3] = oh_tensor(t8(sb), 2, DIMS(K, N), b);
				if (layout) {
					in[1] = oh_tensor(st, 1, DIMS(M), f16 ? (void *)ash : (void *)as);
					in[2] = oh_tensor(t8(sa), 1, DIMS(M), azp);
					in[4] = oh_tensor(st, 1, DIMS(N), f16 ? (void *)bsh : (void *)bs);
					in[5] = oh_tensor(t8(sb), 1, DIMS(N), bzp);
				} else {
					in[1] = oh_tensor(st, 0, NULL, f16 ? (void *)ash : (void *)as);
					in[2] = oh_tensor(t8(sa), 0, NULL, azp);
					in[4] = oh_tensor(st, 0, NULL, f16 ? (void *)bsh : (void *)bs);
					in[5] = oh_tensor(t8(sb), 0, NULL, bzp);
				}
				in[6] = oh_tensor(st, 0, NULL, f16 ? (void *)&ysh : (void *)&ys);
				in[7] = oh_tensor(t8(sy), 0, NULL, &yzp);
				cr_assert_eq(oh_run("QLinearMatMul", 21, NULL, 0, in, 8, &out, 1), 0,
					     "%s", cep_last_error());
				cr_assert_eq(out.dtype, t8(sy));
				assert_ints(&out, want, M * N, "random");
				free(out.data);
				checked++;
			}
		}
	}
	cr_assert_eq(checked, 32);
}

/* The multiplier is rounded to the scales' type: with the example's
 * scales in float16 it differs from the float32 one, and some product a *
 * b of two uint8s requantizes differently by the two; the kernel gives
 * the float16 answer. */
Test(ops_quant_mm, qlinearmatmul_uses_the_half_multiplier)
{
	uint16_t sh[3] = { cpu_f32_to_f16(0.0066f), cpu_f32_to_f16(0.00705f),
			   cpu_f32_to_f16(0.0107f) };
	float as = cpu_f16_to_f32(sh[0]), bs = cpu_f16_to_f32(sh[1]), ys = cpu_f16_to_f32(sh[2]);
	float m32 = as * bs / ys, m16 = half_mult(CEP_DTYPE_FLOAT16, as, bs, ys);
	uint8_t a = 0, b = 0, zero = 0;
	int64_t want = -1;
	int x, y;

	cr_assert_neq(m32, m16);
	for (x = 1; x < 256 && want < 0; x++) {
		for (y = x; y < 256 && want < 0; y++) {
			double v32 = nearbyint((double)(x * y) * m32);
			double v16 = nearbyint((double)(x * y) * m16);

			if (v32 != v16 && v16 <= 255) {
				a = (uint8_t)x;
				b = (uint8_t)y;
				want = (int64_t)v16;
			}
		}
	}
	cr_assert(want >= 0, "no product tells the multipliers apart");
	{
		struct op_tensor in[8] = {
			oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(1, 1), &a),
			oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh[0]),
			oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zero),
			oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(1, 1), &b),
			oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh[1]),
			oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zero),
			oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &sh[2]),
			oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zero),
		};
		struct op_tensor out;

		cr_assert_eq(oh_run("QLinearMatMul", 21, NULL, 0, in, 8, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(((uint8_t *)out.data)[0], want, "%d * %d: got %d, want %lld", a, b,
			     ((uint8_t *)out.data)[0], (long long)want);
		free(out.data);
	}
}

Test(ops_quant_mm, qlinearmatmul_refusals)
{
	uint8_t a[8] = { 0 }, zp[2] = { 0 };
	int8_t zi = 0;
	float s[5] = { 1, 1, 1, 1, 1 };
	uint16_t h = 0x3c00;
	struct op_tensor in[8] = {
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(2, 4), a),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
		oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 2), a),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
	};
	struct op_tensor out, keep;

	cr_assert_eq(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	keep = in[6];
	in[6] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), s);
	in[7] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(2), zp);
	REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_EUNSUPPORTED,
		"QLinearMatMul: y_scale has shape [2]; cudaep takes one value (per tensor)");
	in[6] = keep;
	in[7] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(5), s);
	REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_ESHAPE,
		"a_scale has shape [5] but a_zero_point has []");
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(5), s);
	REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_ESHAPE,
		"a_zero_point has shape [5]; it must be a scalar, [2] or [..., M, 1]");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]);
	in[2] = oh_tensor(CEP_DTYPE_INT8, 0, NULL, &zi);
	REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_EDTYPE,
		"a_zero_point is int8 but a is uint8");
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]);
	in[4] = oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &h);
	REFUSED(oh_run("QLinearMatMul", 21, NULL, 0, in, 8, &out, 1), CEP_EDTYPE,
		"b_scale is float16 but a_scale is float32; the scales must be of one type");
	in[4] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]);
	in[7] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]);
	REFUSED(oh_run("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1), CEP_EDTYPE,
		"y_zero_point is float32");
}

/* ------------------------------------------------------------- ConvInteger */

/* The conformance examples: x - 1 over 2 x 2 windows of ones, without and
 * with one of padding (which contributes nothing: it is the zero point). */
Test(ops_quant_mm, convinteger_the_examples)
{
	uint8_t x[9] = { 2, 3, 4, 5, 6, 7, 8, 9, 10 }, w[4] = { 1, 1, 1, 1 }, xzp = 1;
	static const int64_t want[4] = { 12, 16, 24, 28 };
	static const int64_t want_pad[16] = { 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17,
					      9 };
	struct op_attr pads = oh_ints("pads", 4, DIMS(1, 1, 1, 1));
	struct op_tensor in[3] = {
		oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(1, 1, 3, 3), x),
		oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(1, 1, 2, 2), w),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &xzp),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("ConvInteger", 10, NULL, 0, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT32);
	cr_assert_eq(out.rank, 4);
	cr_assert_eq(out.dims[2], 2);
	cr_assert_eq(out.dims[3], 2);
	assert_ints(&out, want, 4, "no padding");
	free(out.data);
	cr_assert_eq(oh_run("ConvInteger", 10, &pads, 1, in, 3, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[2], 4);
	cr_assert_eq(out.dims[3], 4);
	assert_ints(&out, want_pad, 16, "padding 1");
	free(out.data);
}

/* 1-D (with SAME_UPPER padding) and 3-D windows. */
Test(ops_quant_mm, convinteger_1d_and_3d)
{
	uint8_t x[5] = { 1, 2, 3, 4, 5 }, x3[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	int8_t w[3] = { 1, 0, -1 }, w3[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, wzp = 1;
	static const int64_t want[3] = { -2, -2, -2 }, want_same[5] = { -2, -2, -2, -2, 4 };
	static const int64_t want3 = 28;
	struct op_attr same = oh_string("auto_pad", "SAME_UPPER");
	struct op_tensor in[4] = {
		oh_tensor(CEP_DTYPE_UINT8, 3, DIMS(1, 1, 5), x),
		oh_tensor(CEP_DTYPE_INT8, 3, DIMS(1, 1, 3), w),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("ConvInteger", 10, NULL, 0, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[2], 3);
	assert_ints(&out, want, 3, "1-D");
	free(out.data);
	cr_assert_eq(oh_run("ConvInteger", 10, &same, 1, in, 2, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dims[2], 5);
	assert_ints(&out, want_same, 5, "1-D SAME_UPPER");
	free(out.data);
	/* sum of (w - 1) = 0 + 1 + ... + 7 = 28. */
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 5, DIMS(1, 1, 2, 2, 2), x3);
	in[1] = oh_tensor(CEP_DTYPE_INT8, 5, DIMS(1, 1, 2, 2, 2), w3);
	in[2] = (struct op_tensor){ .dtype = CEP_DTYPE_UNDEFINED };
	in[3] = oh_tensor(CEP_DTYPE_INT8, 0, NULL, &wzp);
	cr_assert_eq(oh_run("ConvInteger", 10, NULL, 0, in, 4, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 5);
	assert_ints(&out, &want3, 1, "3-D");
	free(out.data);
}

/* The geometry of a 2-D convolution. */
struct conv2 {
	int64_t n, c, h, w, m, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

static int64_t conv2_oh(const struct conv2 *g)
{
	return (g->h + g->pt + g->pb - (g->kh - 1) * g->dh - 1) / g->sh + 1;
}

static int64_t conv2_ow(const struct conv2 *g)
{
	return (g->w + g->pl + g->pr - (g->kw - 1) * g->dw - 1) / g->sw + 1;
}

/* The int32 sums of a direct 2-D convolution by the definition: output
 * (n, m, oy, ox) sums (x - xzp) * (w - wzp[m]) over the window of its
 * group, padding left out; B added when given. */
static void ref_conv2(const struct conv2 *g, const void *x, bool sx, int32_t xzp, const void *w,
		      bool sw, const void *wzp, bool wzp_per_m, const int32_t *bias, int32_t *y)
{
	int64_t oh = conv2_oh(g), ow = conv2_ow(g), cg = g->c / g->group, mg = g->m / g->group;
	int64_t n, m, oy, ox, c, ky, kx;

	for (n = 0; n < g->n; n++)
		for (m = 0; m < g->m; m++)
			for (oy = 0; oy < oh; oy++)
				for (ox = 0; ox < ow; ox++) {
					int64_t s = bias ? bias[m] : 0;
					int32_t wz = wzp ? ld8(wzp, sw, wzp_per_m ? m : 0) : 0;

					for (c = 0; c < cg; c++)
						for (ky = 0; ky < g->kh; ky++)
							for (kx = 0; kx < g->kw; kx++) {
								int64_t iy = oy * g->sh - g->pt + ky * g->dh;
								int64_t ix = ox * g->sw - g->pl + kx * g->dw;
								int64_t ci = m / mg * cg + c;

								if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
									continue;
								s += (int64_t)(ld8(x, sx, ((n * g->c + ci) * g->h + iy) * g->w + ix) - xzp) *
								     (ld8(w, sw, ((m * cg + c) * g->kh + ky) * g->kw + kx) - wz);
							}
					y[((n * g->m + m) * oh + oy) * ow + ox] = (int32_t)(uint32_t)(uint64_t)s;
				}
}

/* Groups, strides, dilations and asymmetric pads, every pair of types,
 * w's zero point per tensor and per output channel. */
Test(ops_quant_mm, convinteger_random_against_a_direct_convolution)
{
	static const struct conv2 g = { 2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 1, 2, 1, 0, 0, 1 };
	int64_t oh = conv2_oh(&g), ow = conv2_ow(&g), ny = g.n * g.m * oh * ow;
	unsigned seed = 31;
	uint8_t x[2 * 4 * 7 * 6], w[6 * 2 * 3 * 2], xzp, wzp[6];
	struct op_attr at[5] = {
		oh_ints("kernel_shape", 2, DIMS(3, 2)), oh_ints("strides", 2, DIMS(2, 1)),
		oh_ints("dilations", 2, DIMS(1, 2)), oh_ints("pads", 4, DIMS(1, 0, 0, 1)),
		oh_int("group", 2),
	};
	int32_t want[2 * 6 * 3 * 5];
	int64_t w64[2 * 6 * 3 * 5];
	int sx, sw, per;

	cr_assert_eq(oh, 3);
	cr_assert_eq(ow, 5);
	for (sx = 0; sx < 2; sx++) {
		for (sw = 0; sw < 2; sw++) {
			for (per = 0; per < 2; per++) {
				struct op_tensor in[4], out;
				int64_t i;

				fill8(x, NA(x), &seed);
				fill8(w, NA(w), &seed);
				fill8(&xzp, 1, &seed);
				fill8(wzp, 6, &seed);
				in[0] = oh_tensor(t8(sx), 4, DIMS(2, 4, 7, 6), x);
				in[1] = oh_tensor(t8(sw), 4, DIMS(6, 2, 3, 2), w);
				in[2] = oh_tensor(t8(sx), 0, NULL, &xzp);
				in[3] = per ? oh_tensor(t8(sw), 1, DIMS(6), wzp)
					    : oh_tensor(t8(sw), 0, NULL, wzp);
				ref_conv2(&g, x, sx, ld8(&xzp, sx, 0), w, sw, wzp, per, NULL, want);
				for (i = 0; i < ny; i++)
					w64[i] = want[i];
				cr_assert_eq(oh_run("ConvInteger", 10, at, 5, in, 4, &out, 1), 0, "%s",
					     cep_last_error());
				cr_assert_eq(out.dims[0], 2);
				cr_assert_eq(out.dims[1], 6);
				cr_assert_eq(out.dims[2], 3);
				cr_assert_eq(out.dims[3], 5);
				assert_ints(&out, w64, ny, "random");
				free(out.data);
			}
		}
	}
}

Test(ops_quant_mm, convinteger_refusals)
{
	uint8_t x[32] = { 0 }, zp[3] = { 0 };
	struct op_attr g3 = oh_int("group", 3), g0 = oh_int("group", 0);
	struct op_tensor in[4], out;

	in[0] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(4, 4), x);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 2, DIMS(2, 2), x);
	REFUSED(oh_run("ConvInteger", 10, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		"ConvInteger: x must have rank >= 3");
	in[0] = oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(1, 2, 4, 4), x);
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(2, 1, 2, 2), x);
	REFUSED(oh_run("ConvInteger", 10, NULL, 0, in, 2, &out, 1), CEP_ESHAPE,
		"x has 2 channels but w takes 1 per group times 1 groups");
	REFUSED(oh_run("ConvInteger", 10, &g3, 1, in, 2, &out, 1), CEP_ESHAPE, "ConvInteger");
	REFUSED(oh_run("ConvInteger", 10, &g0, 1, in, 2, &out, 1), CEP_EMODEL,
		"group is 0, must be >= 1");
	in[1] = oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(2, 2, 2, 2), x);
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(2), zp);
	REFUSED(oh_run("ConvInteger", 10, NULL, 0, in, 3, &out, 1), CEP_ESHAPE,
		"x_zero_point has shape [2]; it must be a scalar (per tensor)");
	in[2] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, zp);
	in[3] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(3), zp);
	REFUSED(oh_run("ConvInteger", 10, NULL, 0, in, 4, &out, 1), CEP_ESHAPE,
		"w_zero_point has shape [3]; it must be a scalar or [2] (one value per output "
		"channel)");
	in[3] = oh_tensor(CEP_DTYPE_INT8, 0, NULL, zp);
	REFUSED(oh_run("ConvInteger", 10, NULL, 0, in, 4, &out, 1), CEP_EDTYPE,
		"w_zero_point is int8 but w is uint8");
}

/* -------------------------------------------------------------- QLinearConv */

/* Worked by hand: x {10, 20, 30, 40} less 10, times w {2, -3} less the
 * per-channel zero points {0, -1}, plus B {4, -100}, by the multipliers
 * 0.5 * {0.25, 1} / 1: channel 0 is {4, 24, 44, 64} * 0.125 = {0.5, 3,
 * 5.5, 8} -> {0, 3, 6, 8} (halves to even), channel 1 {-100, -120, -140,
 * -160} * 0.5 -> {-50, -60, -70, -80}. */
Test(ops_quant_mm, qlinearconv_by_hand)
{
	uint8_t x[4] = { 10, 20, 30, 40 }, xzp = 10;
	int8_t w[2] = { 2, -3 }, wzp[2] = { 0, -1 }, yzp = 0;
	float xs = 0.5f, ws[2] = { 0.25f, 1.0f }, ys = 1.0f;
	int32_t bias[2] = { 4, -100 };
	static const int64_t want[8] = { 0, 3, 6, 8, -50, -60, -70, -80 };
	/* Without B: {0, 20, 40, 60} * 0.125 = {0, 2.5, 5, 7.5} -> {0, 2, 5,
	 * 8}, and {0, -20, -40, -60} * 0.5. */
	static const int64_t want_nob[8] = { 0, 2, 5, 8, 0, -10, -20, -30 };
	struct op_tensor in[9] = {
		oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(1, 1, 2, 2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &xs),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &xzp),
		oh_tensor(CEP_DTYPE_INT8, 4, DIMS(2, 1, 1, 1), w),
		oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), ws),
		oh_tensor(CEP_DTYPE_INT8, 1, DIMS(2), wzp),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ys),
		oh_tensor(CEP_DTYPE_INT8, 0, NULL, &yzp),
		oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), bias),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT8);
	cr_assert_eq(out.dims[1], 2);
	assert_ints(&out, want, 8, "with B");
	free(out.data);
	cr_assert_eq(oh_run("QLinearConv", 10, NULL, 0, in, 8, &out, 1), 0, "%s",
		     cep_last_error());
	assert_ints(&out, want_nob, 8, "without B");
	free(out.data);
}

/* Random 2-D cases against the direct convolution and the reference
 * requantization: every type of x, w and y, w's scale and zero point per
 * tensor and per channel, with and without B. */
Test(ops_quant_mm, qlinearconv_random_against_a_direct_convolution)
{
	static const struct conv2 g = { 2, 4, 6, 5, 4, 2, 2, 3, 1, 2, 2, 1, 0, 1, 1, 0 };
	int64_t oh = conv2_oh(&g), ow = conv2_ow(&g), ny = g.n * g.m * oh * ow, i;
	unsigned seed = 37;
	uint8_t x[2 * 4 * 6 * 5], w[4 * 2 * 2 * 3], xzp, wzp[4], yzp;
	float xs, ws[4], ys;
	int32_t bias[4], sums[2 * 4 * 6 * 5];
	int64_t want[2 * 4 * 6 * 5];
	struct op_attr at[4] = {
		oh_ints("strides", 2, DIMS(1, 2)), oh_ints("dilations", 2, DIMS(2, 1)),
		oh_ints("pads", 4, DIMS(0, 1, 1, 0)), oh_int("group", 2),
	};
	int tys, per, withb;

	for (tys = 0; tys < 8; tys++) {
		bool sx = tys & 1, sw = tys & 2, sy = tys & 4;

		for (per = 0; per < 2; per++) {
			for (withb = 0; withb < 2; withb++) {
				struct op_tensor in[9], out;

				fill8(x, NA(x), &seed);
				fill8(w, NA(w), &seed);
				fill8(&xzp, 1, &seed);
				fill8(wzp, 4, &seed);
				fill8(&yzp, 1, &seed);
				xs = 0.001f + (float)(rnd(&seed) % 1000) * 1e-5f;
				for (i = 0; i < 4; i++) {
					ws[i] = 0.001f + (float)(rnd(&seed) % 1000) * 1e-5f;
					bias[i] = (int32_t)(rnd(&seed) % 20001) - 10000;
				}
				ys = 0.01f + (float)(rnd(&seed) % 1000) * 1e-4f;
				ref_conv2(&g, x, sx, ld8(&xzp, sx, 0), w, sw, wzp, per,
					  withb ? bias : NULL, sums);
				for (i = 0; i < ny; i++) {
					int64_t m = i / (oh * ow) % g.m;

					want[i] = requant(sums[i], xs, ws[per ? m : 0], ys,
							  ld8(&yzp, sy, 0), sy);
				}
				in[0] = oh_tensor(t8(sx), 4, DIMS(2, 4, 6, 5), x);
				in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &xs);
				in[2] = oh_tensor(t8(sx), 0, NULL, &xzp);
				in[3] = oh_tensor(t8(sw), 4, DIMS(4, 2, 2, 3), w);
				in[4] = per ? oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(4), ws)
					    : oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, ws);
				in[5] = per ? oh_tensor(t8(sw), 1, DIMS(4), wzp)
					    : oh_tensor(t8(sw), 0, NULL, wzp);
				in[6] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &ys);
				in[7] = oh_tensor(t8(sy), 0, NULL, &yzp);
				in[8] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(4), bias);
				cr_assert_eq(oh_run("QLinearConv", 10, at, 4, in, withb ? 9 : 8, &out, 1),
					     0, "%s", cep_last_error());
				cr_assert_eq(out.dtype, t8(sy));
				cr_assert_eq(out.dims[2], oh);
				cr_assert_eq(out.dims[3], ow);
				assert_ints(&out, want, ny, "random");
				free(out.data);
			}
		}
	}
}

Test(ops_quant_mm, qlinearconv_refusals)
{
	uint8_t x[16] = { 0 }, zp[3] = { 0 };
	float s[3] = { 1, 1, 1 };
	uint16_t h = 0x3c00;
	struct op_tensor in[9] = {
		oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(1, 1, 4, 4), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
		oh_tensor(CEP_DTYPE_UINT8, 4, DIMS(2, 1, 2, 2), x),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
		oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, &s[0]),
		oh_tensor(CEP_DTYPE_UINT8, 0, NULL, &zp[0]),
		oh_tensor(CEP_DTYPE_INT32, 1, DIMS(2), s),
	};
	struct op_tensor out;

	cr_assert_eq(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), 0, "%s",
		     cep_last_error());
	free(out.data);
	in[4] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(3), s);
	in[5] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(3), zp);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_ESHAPE,
		"QLinearConv: w_zero_point has shape [3]; it must be a scalar or [2]");
	in[5] = oh_tensor(CEP_DTYPE_UINT8, 1, DIMS(2), zp);
	in[4] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, s);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_ESHAPE,
		"w_scale has shape [] but w_zero_point has [2]");
	in[5] = oh_tensor(CEP_DTYPE_UINT8, 0, NULL, zp);
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), s);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_ESHAPE,
		"x_scale has shape [2]; it must be a scalar (per tensor)");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT16, 0, NULL, &h);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_EDTYPE,
		"x_scale is float16; opset 10 takes float32");
	in[1] = oh_tensor(CEP_DTYPE_FLOAT32, 0, NULL, s);
	in[8] = oh_tensor(CEP_DTYPE_FLOAT32, 1, DIMS(2), s);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_EDTYPE, "B is float32");
	in[8] = oh_tensor(CEP_DTYPE_INT32, 1, DIMS(3), s);
	REFUSED(oh_run("QLinearConv", 10, NULL, 0, in, 9, &out, 1), CEP_ESHAPE,
		"B has shape [3]; it must be [2] (one value per output channel)");
}
