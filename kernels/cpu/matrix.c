/*
 * matrix.c — operators on matrices: EyeLike (opset 9; bfloat16 from 22),
 * a matrix of the input's shape (it must be 2-D) with ones on diagonal k
 * (element (i, i + k)) and zeros elsewhere, of the type the dtype
 * attribute names or else the input's; and Det (opset 11; bfloat16 from
 * 22), the determinant of each square matrix of the last two dimensions,
 * [*, M, M] giving [*].
 *
 * EyeLike reads only its input's shape, so it folds while planning
 * whenever it is small. Det is Gaussian elimination with partial
 * pivoting in double (the first row of the largest magnitude is the
 * pivot), the determinant the product of the pivots with the sign of the
 * row swaps, 0 when a column has no nonzero pivot left, NaN carried; the
 * CUDA kernel does the same operations in the same order
 * (kernels/cuda/matrix.cu). A 0 x 0 matrix has determinant 1.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

/* ------------------------------------------------------------------ EyeLike */

static int eyelike_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	const struct op_attr *dt = op_attr_find(x->node, "dtype");
	cep_dtype to = in->dtype;
	int ret;

	if ((ret = op_attr_check(x->node, "dtype", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(x->node, "k", OP_ATTR_INT)) < 0)
		return ret;
	if (dt) {
		if (dt->i < 0 || dt->i > 31 || !op_dtype_in((cep_dtype)dt->i, OP_DTS_STORED))
			return cep__set_error(CEP_EUNSUPPORTED, "EyeLike: dtype %" PRId64 " (%s) is "
					      "not a type cudaep stores", dt->i,
					      cep_dtype_name((cep_dtype)dt->i));
		/* float8 is stored, but no EyeLike lists it. */
		if (!op_dtype_in((cep_dtype)dt->i, OP_DTS_ALL))
			return cep__set_error(CEP_EMODEL, "EyeLike: dtype %" PRId64 " (%s) is not "
					      "one of its output types", dt->i,
					      cep_dtype_name((cep_dtype)dt->i));
		to = (cep_dtype)dt->i;
		if (to == CEP_DTYPE_BFLOAT16 && x->node->opset < 22)
			return cep__set_error(CEP_EMODEL, "EyeLike: bfloat16 is a type from opset "
					      "22, this node has opset %d", x->node->opset);
	}
	if (in->rank >= 0 && in->rank != 2)
		return cep__set_error(CEP_ESHAPE, "EyeLike: the input must be 2-D, it has rank %d",
				      in->rank);
	ret = op_infer_like_input(x);
	x->out[0].dtype = to;
	return ret;
}

static int eyelike_run(struct op_call *c)
{
	const struct op_tensor *y = &c->out[0];
	int64_t k = op_attr_int(c->node, "k", 0), rows = y->dims[0], cols = y->dims[1], i;

	memset(y->data, 0, op_tensor_bytes(y));
	for (i = 0; i < rows; i++) {
		/* k may be anything: only the diagonals inside count. */
		if (k >= -i && k < cols - i)
			cpu_store_i(y->data, y->dtype, i * cols + i + k, 1);
	}
	return 0;
}

/* ---------------------------------------------------------------------- Det */

static int det_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *y = &x->out[0];
	int i;

	y->dtype = in->dtype;
	y->rank = in->rank < 0 ? -1 : in->rank - 2;
	if (in->rank < 0)
		return 0;
	if (in->rank < 2)
		return cep__set_error(CEP_ESHAPE, "Det: the input must have rank 2 or more, it has "
				      "%d", in->rank);
	if (op_dim_fixed(in->dims[in->rank - 1]) && op_dim_fixed(in->dims[in->rank - 2]) &&
	    in->dims[in->rank - 1] != in->dims[in->rank - 2])
		return cep__set_error(CEP_ESHAPE, "Det: the matrices are %" PRId64 " x %" PRId64
				      ", not square", in->dims[in->rank - 2], in->dims[in->rank - 1]);
	for (i = 0; i < y->rank; i++)
		y->dims[i] = in->dims[i];
	return 0;
}

/* The determinant of the m x m matrix a (row-major doubles), eliminated in
 * place. */
static double det_lu(double *a, int64_t m)
{
	double det = 1.0;
	int64_t k, i, j, piv;

	for (k = 0; k < m; k++) {
		double best = fabs(a[k * m + k]);

		piv = k;
		for (i = k + 1; i < m; i++) {
			if (fabs(a[i * m + k]) > best) {
				best = fabs(a[i * m + k]);
				piv = i;
			}
		}
		if (a[piv * m + k] == 0.0)
			return 0.0;
		if (piv != k) {
			for (j = 0; j < m; j++) {
				double t = a[k * m + j];

				a[k * m + j] = a[piv * m + j];
				a[piv * m + j] = t;
			}
			det = -det;
		}
		det *= a[k * m + k];
		for (i = k + 1; i < m; i++) {
			double f = a[i * m + k] / a[k * m + k];

			for (j = k + 1; j < m; j++)
				a[i * m + j] -= f * a[k * m + j];
		}
	}
	return det;
}

static int det_prepare(struct op_call *c, size_t *workspace)
{
	int64_t m = c->in[0].dims[c->in[0].rank - 1];

	*workspace = (size_t)(m * m) * sizeof(double);
	return 0;
}

static int det_run(struct op_call *c)
{
	const struct op_tensor *x = &c->in[0];
	int64_t m = x->dims[x->rank - 1], mats = op_dims_product(x, 0, x->rank - 2), b, i;
	double *a = c->workspace;

	for (b = 0; b < mats; b++) {
		for (i = 0; i < m * m; i++)
			a[i] = cpu_load_d(x->data, x->dtype, b * m * m + i);
		cpu_store_d(c->out[0].data, x->dtype, b, det_lu(a, m));
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define MATRIX_NO_BF16 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))
/* Det's float types before bfloat16 joined them: float64 included, which
 * det_lu() computes in. */
#define MATRIX_FLOAT_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "EyeLike", 9, OP_OPSET_MAX, 1, 1, 1, 1, 0, OP_SHAPE_ONLY, eyelike_infer },
	{ "", "Det", 11, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, det_infer },
};

/* EyeLike's kernel is picked by its input's type; the output may be any
 * stored type, which inference checked. */
static const struct op_kernel kernels[] = {
	{ "", "EyeLike", 9, 21, BACKEND_HOST, MATRIX_NO_BF16, NULL, eyelike_run },
	{ "", "EyeLike", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, eyelike_run },
	{ "", "Det", 11, 21, BACKEND_HOST, MATRIX_FLOAT_NO_BF16, det_prepare, det_run },
	{ "", "Det", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, det_prepare, det_run },
};

const struct op_family op_family_cpu_matrix = {
	"cpu_matrix", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
