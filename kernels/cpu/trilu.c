/*
 * trilu.c — Trilu (opset 14): the upper (upper = 1, the default) or lower
 * triangle of each matrix of the last two dimensions of an input of rank
 * 2 or more, every other element 0. The optional int64 scalar input k
 * moves the diagonal: element (i, j) is kept when j - i >= k for the
 * upper triangle, j - i <= k for the lower. k is read when the kernel
 * runs; it changes no shape. Elements move as raw units of their size,
 * and 0 is all bits clear in every stored type.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

static int trilu_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	int64_t n;
	int ret;

	if ((ret = op_attr_check(x->node, "upper", OP_ATTR_INT)) < 0)
		return ret;
	if (in->rank >= 0 && in->rank < 2)
		return cep__set_error(CEP_ESHAPE, "Trilu: the input has rank %d, it needs 2 or more",
				      in->rank);
	if (x->n_in > 1 && op_tensor_present(&x->in[1])) {
		const struct op_tensor *k = &x->in[1];

		if (k->dtype != CEP_DTYPE_INT64)
			return cep__set_error(CEP_EDTYPE, "Trilu: k is %s, not int64",
					      cep_dtype_name(k->dtype));
		/* The specification says 0-D; a tensor of one element is
		 * taken too. */
		if (op_tensor_numel(k, &n) == 0 && (n != 1 || k->rank > 1))
			return cep__set_error(CEP_ESHAPE, "Trilu: k must be a scalar, it has %" PRId64
					      " elements in rank %d", n, k->rank);
	}
	return op_infer_like_input(x);
}

static int trilu_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0];
	size_t es = cep_dtype_size(in->dtype);
	bool upper = op_attr_int(c->node, "upper", 1) != 0;
	int64_t k = 0, rows, cols, mats, m, i, j, at = 0;

	if (c->n_in > 1 && op_tensor_present(&c->in[1]))
		k = shapeops_at(&c->in[1], 0);
	rows = in->dims[in->rank - 2];
	cols = in->dims[in->rank - 1];
	mats = op_dims_product(in, 0, in->rank - 2);
	for (m = 0; m < mats; m++) {
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++, at++) {
				bool keep = upper ? j - i >= k : j - i <= k;

				if (keep)
					shapeops_elem_copy(c->out[0].data, at, in->data, at, es);
				else
					memset((unsigned char *)c->out[0].data + at * (int64_t)es, 0, es);
			}
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Trilu", 14, OP_OPSET_MAX, 1, 2, 1, 1, 0, 0, trilu_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Trilu", 14, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, trilu_run },
};

const struct op_family op_family_cpu_trilu = {
	"cpu_trilu", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
