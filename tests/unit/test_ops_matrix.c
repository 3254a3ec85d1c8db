/*
 * test_ops_matrix.c — EyeLike and Det of kernels/cpu/matrix.c, called the
 * way the engine calls them (schema inference, then the host kernel
 * through exec_host_eval): EyeLike's diagonals (inside, outside), its
 * dtype attribute against each opset's types, the shape it needs; Det of
 * matrices worked out by hand (one needing a row swap, a singular one),
 * batches, random 4 x 4 matrices against the cofactor expansion in
 * double, 0 x 0 and 1 x 1, NaN, the half types and the refusals.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cpu/cpu.h"
#include "tests/unit/ops_harness.h"

#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* ------------------------------------------------------------------ EyeLike */

/* 3 x 4 matrices: ones at (i, i + k) where that lies inside. */
Test(ops_matrix, eyelike_diagonals)
{
	static const int64_t ks[6] = { 0, 1, -1, 3, 4, -3 };
	float x[12] = { 7 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(3, 4), x), out;
	size_t t;
	int i, j;

	for (t = 0; t < 6; t++) {
		struct op_attr k = oh_int("k", ks[t]);

		cr_assert_eq(oh_run("EyeLike", 9, &k, 1, &in, 1, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT32);
		cr_assert_eq(out.dims[0], 3);
		cr_assert_eq(out.dims[1], 4);
		for (i = 0; i < 3; i++)
			for (j = 0; j < 4; j++)
				cr_assert_eq(((float *)out.data)[i * 4 + j], j - i == ks[t] ? 1.0f : 0.0f,
					     "k %lld (%d, %d)", (long long)ks[t], i, j);
		free(out.data);
	}
}

/* The dtype attribute names the output's type, whatever the input's;
 * bfloat16 is a type from opset 22; without it the input's type. float8
 * is stored but not an EyeLike type; complex64 is not stored. */
Test(ops_matrix, eyelike_types)
{
	int32_t x[4] = { 0 };
	uint16_t bf[4] = { 0 };
	struct op_attr to_bool = oh_int("dtype", CEP_DTYPE_BOOL);
	struct op_attr to_bf16 = oh_int("dtype", CEP_DTYPE_BFLOAT16);
	struct op_attr to_f64 = oh_int("dtype", CEP_DTYPE_FLOAT64);
	struct op_attr to_f8 = oh_int("dtype", CEP_DTYPE_FLOAT8E4M3FN);
	struct op_attr to_c64 = oh_int("dtype", 14 /* complex64 */);
	struct op_tensor in = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(2, 2), x), out;

	cr_assert_eq(oh_run("EyeLike", 9, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_INT32);
	cr_assert_eq(((int32_t *)out.data)[0], 1);
	cr_assert_eq(((int32_t *)out.data)[1], 0);
	cr_assert_eq(((int32_t *)out.data)[3], 1);
	free(out.data);
	cr_assert_eq(oh_run("EyeLike", 9, &to_bool, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_BOOL);
	cr_assert_eq(((uint8_t *)out.data)[0], 1);
	cr_assert_eq(((uint8_t *)out.data)[2], 0);
	free(out.data);
	cr_assert_eq(oh_run("EyeLike", 21, &to_bf16, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "EyeLike: bfloat16 is a type from opset 22, this node "
			 "has opset 21");
	cr_assert_eq(oh_run("EyeLike", 22, &to_bf16, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((uint16_t *)out.data)[0], 0x3f80);
	free(out.data);
	cr_assert_eq(oh_run("EyeLike", 9, &to_f64, 1, &in, 1, &out, 1), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT64);
	cr_assert_eq(((double *)out.data)[0], 1.0);
	cr_assert_eq(((double *)out.data)[1], 0.0);
	cr_assert_eq(((double *)out.data)[2], 0.0);
	cr_assert_eq(((double *)out.data)[3], 1.0);
	free(out.data);
	cr_assert_eq(oh_run("EyeLike", 22, &to_f8, 1, &in, 1, &out, 1), CEP_EMODEL);
	cr_assert_str_eq(cep_last_error(), "EyeLike: dtype 17 (float8e4m3fn) is not one of its "
			 "output types");
	cr_assert_eq(oh_run("EyeLike", 22, &to_c64, 1, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_str_eq(cep_last_error(), "EyeLike: dtype 14 (undefined) is not a type cudaep "
			 "stores");
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 2, DIMS(2, 2), bf);
	cr_assert_eq(oh_run("EyeLike", 21, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("EyeLike", 22, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	free(out.data);
}

Test(ops_matrix, eyelike_shapes)
{
	float x[6] = { 0 };
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT32, 3, DIMS(1, 2, 3), x), out;
	const struct op_schema *s;

	cr_assert_eq(oh_run("EyeLike", 9, NULL, 0, &in, 1, &out, 1), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "EyeLike: the input must be 2-D, it has rank 3");
	in = oh_tensor(CEP_DTYPE_FLOAT32, 2, DIMS(0, 3), x);
	cr_assert_eq(oh_run("EyeLike", 9, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(out.dims[0], 0);
	free(out.data);
	/* Only the shape is read: the planner may fold it over any input. */
	cr_assert_eq(op_schema_find("", "EyeLike", 22, &s), 0);
	cr_assert(s->flags & OP_SHAPE_ONLY);
}

/* ---------------------------------------------------------------------- Det */

static int det(cep_dtype t, int rank, const int64_t *dims, void *x, struct op_tensor *out)
{
	struct op_tensor in = oh_tensor(t, rank, dims, x);

	return oh_run("Det", 22, NULL, 0, &in, 1, out, 1);
}

/* [[1, 2], [3, 4]] is -2 (test_det_2d); [[0, 1], [1, 0]] needs a row
 * swap and is -1; [[1, 2, 3], [4, 5, 6], [7, 8, 10]] is -3;
 * [[2, 4], [1, 2]] is singular. */
Test(ops_matrix, det_by_hand)
{
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 0, 1, 1, 0 }, s[4] = { 2, 4, 1, 2 };
	float c[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 10 };
	struct op_tensor out;

	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), a, &out), 0, "%s", cep_last_error());
	cr_assert_eq(out.rank, 0);
	cr_assert_float_eq(((float *)out.data)[0], -2.0f, 1e-6f);
	free(out.data);
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), b, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], -1.0f);
	free(out.data);
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(3, 3), c, &out), 0, "%s", cep_last_error());
	cr_assert_float_eq(((float *)out.data)[0], -3.0f, 1e-5f);
	free(out.data);
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), s, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 0.0f);
	free(out.data);
}

/* The determinant of a 4 x 4 matrix by cofactor expansion along the first
 * row, in double: another route to the same number. */
static double cofactor4(const float *a)
{
	double total = 0.0;
	int c, i, j;

	for (c = 0; c < 4; c++) {
		double m[9];
		int k = 0;

		for (i = 1; i < 4; i++)
			for (j = 0; j < 4; j++)
				if (j != c)
					m[k++] = a[i * 4 + j];
		total += (c % 2 ? -1.0 : 1.0) * a[c] *
			 (m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
			  m[2] * (m[3] * m[7] - m[4] * m[6]));
	}
	return total;
}

/* A batch of 2 x 3 random 4 x 4 matrices (test_det_nd's shape), output
 * [2, 3]. */
Test(ops_matrix, det_of_a_batch_against_the_cofactor_expansion)
{
	float x[6 * 16];
	unsigned seed = 21;
	struct op_tensor out;
	int i, b;

	for (i = 0; i < 6 * 16; i++)
		x[i] = oh_rand(&seed) * 4.0f;
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 4, DIMS(2, 3, 4, 4), x, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(out.rank, 2);
	cr_assert_eq(out.dims[0], 2);
	cr_assert_eq(out.dims[1], 3);
	for (b = 0; b < 6; b++) {
		double want = cofactor4(x + 16 * b);
		float got = ((float *)out.data)[b];

		cr_assert(fabs(got - want) <= 1e-5 * fabs(want) + 1e-5, "matrix %d: %g, want %g", b,
			  (double)got, want);
	}
	free(out.data);
}

/* 0 x 0 is 1 and 1 x 1 its element; NaN is carried; float16 and
 * bfloat16 (from 22) are computed in double and rounded. */
Test(ops_matrix, det_edges_and_half_types)
{
	float one[1] = { -2.5f }, nan[4] = { 1, NAN, 3, 4 };
	uint16_t h[4];
	struct op_tensor out, in;
	int i;

	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 3, DIMS(2, 0, 0), one, &out), 0, "%s",
		     cep_last_error());
	cr_assert_eq(((float *)out.data)[0], 1.0f);
	cr_assert_eq(((float *)out.data)[1], 1.0f);
	free(out.data);
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(1, 1), one, &out), 0, "%s", cep_last_error());
	cr_assert_eq(((float *)out.data)[0], -2.5f);
	free(out.data);
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(2, 2), nan, &out), 0, "%s", cep_last_error());
	cr_assert(isnan(((float *)out.data)[0]));
	free(out.data);
	for (i = 0; i < 4; i++)
		cpu_store_f(h, CEP_DTYPE_FLOAT16, i, (float)(i + 1));
	cr_assert_eq(det(CEP_DTYPE_FLOAT16, 2, DIMS(2, 2), h, &out), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_FLOAT16, 0), -2.0f);
	free(out.data);
	for (i = 0; i < 4; i++)
		cpu_store_f(h, CEP_DTYPE_BFLOAT16, i, (float)(i + 1));
	in = oh_tensor(CEP_DTYPE_BFLOAT16, 2, DIMS(2, 2), h);
	cr_assert_eq(oh_run("Det", 21, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("Det", 22, NULL, 0, &in, 1, &out, 1), 0, "%s", cep_last_error());
	cr_assert_eq(cpu_load_f(out.data, CEP_DTYPE_BFLOAT16, 0), -2.0f);
	free(out.data);
}

/* float64 is eliminated in double and stored without a float32 step, at
 * opset 11 as at 22: [[1, 1], [1, 1 + 1e-10]] keeps the 1e-10 that
 * float32 would lose. */
Test(ops_matrix, det_float64)
{
	double a[4] = { 1.0, 1.0, 1.0, 1.0 + 1e-10 }, want = (1.0 + 1e-10) - 1.0;
	struct op_tensor in = oh_tensor(CEP_DTYPE_FLOAT64, 2, DIMS(2, 2), a), out;
	int opset;

	for (opset = 11; opset <= 22; opset += 11) {
		cr_assert_eq(oh_run("Det", opset, NULL, 0, &in, 1, &out, 1), 0, "%s",
			     cep_last_error());
		cr_assert_eq(out.dtype, CEP_DTYPE_FLOAT64);
		cr_assert_eq(((double *)out.data)[0], want, "opset %d: %.17g", opset,
			     ((double *)out.data)[0]);
		free(out.data);
	}
}

Test(ops_matrix, det_refusals)
{
	float x[6] = { 0 };
	int32_t xi[4] = { 0 };
	struct op_tensor out, in = oh_tensor(CEP_DTYPE_INT32, 2, DIMS(2, 2), xi);

	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 2, DIMS(2, 3), x, &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Det: the matrices are 2 x 3, not square");
	cr_assert_eq(det(CEP_DTYPE_FLOAT32, 1, DIMS(4), x, &out), CEP_ESHAPE);
	cr_assert_str_eq(cep_last_error(), "Det: the input must have rank 2 or more, it has 1");
	cr_assert_eq(oh_run("Det", 11, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
	cr_assert_eq(oh_run("Det", 10, NULL, 0, &in, 1, &out, 1), CEP_EUNSUPPORTED);
}
