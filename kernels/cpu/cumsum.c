/*
 * cumsum.c — CumSum (opset 11; float16 and bfloat16 from 14) and CumProd
 * (opset 26): the running sum (product) of the input along the axis given
 * by a scalar int32 or int64 input. `exclusive` leaves each element out
 * of its own result (the first gets 0, or 1 for a product); `reverse`
 * runs from the end of the axis to its start.
 *
 * The axis is an input, so it is read when the kernel runs; inference
 * checks it only when its value is known. Floats accumulate in double and
 * are rounded once per output element; integers accumulate in wrapping
 * 64-bit arithmetic and are wrapped to their width on the way out, which
 * gives what wrapping at that width at every step would. The CUDA kernel
 * (kernels/cuda/cumsum.c) computes the same way, step for step.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

/* Reads the axis input t (values on the host) into *axis, normalised for
 * rank. Fails with code (CEP_EMODEL for a constant the model holds,
 * CEP_EINVAL for a value a run gave) when it is out of range. */
static int scan_axis_read(const struct op_node *node, const struct op_tensor *t, int rank,
			  int code, int *axis)
{
	int64_t a = cpu_load_i(t->data, t->dtype, 0);

	if (a < -(int64_t)rank || a >= rank)
		return cep__set_error(code, "%s: axis %" PRId64 " is out of range for rank %d",
				      node->op_type, a, rank);
	*axis = (int)(a < 0 ? a + rank : a);
	return 0;
}

static int scan_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const struct op_tensor *in = &x->in[0], *ax = &x->in[1];
	int64_t n;
	int axis, ret;

	if ((ret = op_attr_check(node, "exclusive", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "reverse", OP_ATTR_INT)) < 0)
		return ret;
	if (ax->dtype != CEP_DTYPE_INT32 && ax->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: axis is %s, not int32 or int64",
				      node->op_type, cep_dtype_name(ax->dtype));
	/* The specification says 0-D; a tensor of one element is taken too. */
	if (op_tensor_numel(ax, &n) == 0 && (n != 1 || ax->rank > 1))
		return cep__set_error(CEP_ESHAPE, "%s: axis must be a scalar, it has %" PRId64
				      " elements in rank %d", node->op_type, n, ax->rank);
	if (in->rank == 0)
		return cep__set_error(CEP_ESHAPE, "%s: the input is a scalar, it has no axis",
				      node->op_type);
	if (in->rank > 0 && ax->data != NULL && ax->rank >= 0) {
		ret = scan_axis_read(node, ax, in->rank, CEP_EMODEL, &axis);
		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

/* Stores a float running value: float64 as it is, the narrower types
 * through float32 as the CUDA kernel rounds them. */
static void scan_store_f(void *out, cep_dtype t, int64_t at, double acc)
{
	if (t == CEP_DTYPE_FLOAT64)
		cpu_store_d(out, t, at, acc);
	else
		cpu_store_f(out, t, at, (float)acc);
}

/* One column of n elements from base, step apart: the running sum or
 * product, forward or reversed, inclusive or not. */
static void scan_column(const struct op_call *c, int64_t base, int64_t n, int64_t step,
			bool prod, bool excl, bool rev)
{
	const struct op_tensor *in = &c->in[0];
	void *out = c->out[0].data;
	bool fl = cpu_is_float(in->dtype);
	double accf = prod ? 1.0 : 0.0;
	uint64_t acci = prod ? 1 : 0;
	int64_t k;

	for (k = 0; k < n; k++) {
		int64_t at = base + (rev ? n - 1 - k : k) * step;

		if (fl) {
			double v = cpu_load_d(in->data, in->dtype, at);

			if (excl)
				scan_store_f(out, in->dtype, at, accf);
			accf = prod ? accf * v : accf + v;
			if (!excl)
				scan_store_f(out, in->dtype, at, accf);
		} else {
			uint64_t v = (uint64_t)cpu_load_i(in->data, in->dtype, at);

			if (excl)
				cpu_store_i(out, in->dtype, at, (int64_t)acci);
			acci = prod ? acci * v : acci + v;
			if (!excl)
				cpu_store_i(out, in->dtype, at, (int64_t)acci);
		}
	}
}

static int scan_run(struct op_call *c, bool prod)
{
	const struct op_tensor *in = &c->in[0];
	bool excl = op_attr_int(c->node, "exclusive", 0) != 0;
	bool rev = op_attr_int(c->node, "reverse", 0) != 0;
	int64_t outer, n, inner, o, j;
	int axis, ret;

	ret = scan_axis_read(c->node, &c->in[1], in->rank, CEP_EINVAL, &axis);
	if (ret < 0)
		return ret;
	outer = op_dims_product(in, 0, axis);
	n = in->dims[axis];
	inner = op_dims_product(in, axis + 1, in->rank);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++)
			scan_column(c, o * n * inner + j, n, inner, prod, excl, rev);
	}
	return 0;
}

static int cumsum_run(struct op_call *c) { return scan_run(c, false); }
static int cumprod_run(struct op_call *c) { return scan_run(c, true); }

static const struct op_schema schemas[] = {
	{ "", "CumSum", 11, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, scan_infer },
	{ "", "CumProd", 26, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, scan_infer },
};

/* The stored types of T: float16 and bfloat16 joined CumSum at 14. */
#define SCAN_DTS_11 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT64) | \
		     OP_DT(CEP_DTYPE_INT32) | OP_DT(CEP_DTYPE_INT64) | \
		     OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))
#define SCAN_DTS_14 (SCAN_DTS_11 | OP_DT(CEP_DTYPE_FLOAT16) | OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "CumSum", 11, 13, BACKEND_HOST, SCAN_DTS_11, NULL, cumsum_run },
	{ "", "CumSum", 14, OP_OPSET_MAX, BACKEND_HOST, SCAN_DTS_14, NULL, cumsum_run },
	{ "", "CumProd", 26, OP_OPSET_MAX, BACKEND_HOST, SCAN_DTS_14, NULL, cumprod_run },
};

const struct op_family op_family_cpu_cumsum = {
	"cpu_cumsum", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
