/*
 * unpool.c — MaxUnpool (opsets 9 and 11, which say the same; bfloat16
 * from 22): the partial inverse of MaxPool. Each element of X goes to the
 * flat position its index in I names, counted in the shape inferred from
 * the pool's attributes, (in - 1) * stride - pad_begin - pad_end + kernel
 * per spatial dimension (N and C kept); every other element is 0. With
 * the optional output_shape input the output has that shape instead, as
 * large or larger in every dimension, and the inferred block is laid
 * into it from its first element, as the onnx reference (which made the
 * conformance cases) does. Two elements sent to one position leave the
 * later one, on both backends. An index outside the inferred shape fails
 * the run.
 *
 * The output's shape comes from output_shape's value when it is given:
 * inference fixes it when the planner knows that value (a constant, or a
 * small graph input that then keys the plan).
 */
#include "kernels/cpu/unpool.h"

#include <inttypes.h>

/* Reads an INTS attribute of n entries into v (dflt where absent). */
static int unpool_ints(const struct op_node *node, const char *name, int n, int64_t dflt,
		       int64_t min, int64_t *v)
{
	const int64_t *a;
	int count, i, ret;

	ret = op_attr_check(node, name, OP_ATTR_INTS);
	if (ret < 0)
		return ret;
	a = op_attr_ints(node, name, &count);
	for (i = 0; i < n; i++)
		v[i] = dflt;
	if (!a)
		return 0;
	if (count != n)
		return cep__set_error(CEP_EMODEL, "MaxUnpool: %s has %d entries, it needs %d", name,
				      count, n);
	for (i = 0; i < n; i++) {
		if (a[i] < min)
			return cep__set_error(CEP_EMODEL, "MaxUnpool: %s[%d] is %" PRId64 ", below %"
					      PRId64, name, i, a[i], min);
		v[i] = a[i];
	}
	return 0;
}

int cpu_unpool_inferred(const struct op_node *node, const struct op_tensor *x,
			struct op_tensor *inferred)
{
	int64_t k[CEP_MAX_RANK], s[CEP_MAX_RANK], pads[2 * CEP_MAX_RANK];
	int n = x->rank - 2, i, ret;

	if (x->rank < 3)
		return cep__set_error(CEP_ESHAPE, "MaxUnpool: X must have rank 3 or more (N, C, "
				      "spatial...), it has %d", x->rank);
	if (!op_attr_find(node, "kernel_shape"))
		return cep__set_error(CEP_EMODEL, "MaxUnpool: attribute 'kernel_shape' is "
				      "required");
	if ((ret = unpool_ints(node, "kernel_shape", n, 1, 1, k)) < 0 ||
	    (ret = unpool_ints(node, "strides", n, 1, 1, s)) < 0 ||
	    (ret = unpool_ints(node, "pads", 2 * n, 0, 0, pads)) < 0)
		return ret;
	*inferred = *x;
	for (i = 0; i < n; i++) {
		int64_t d = x->dims[i + 2];

		if (!op_dim_fixed(d))
			continue;
		d = (d - 1) * s[i] - pads[i] - pads[n + i] + k[i];
		if (d < 1 && x->dims[i + 2] > 0)
			return cep__set_error(CEP_ESHAPE, "MaxUnpool: spatial dimension %d comes out "
					      "as %" PRId64, i, d);
		inferred->dims[i + 2] = x->dims[i + 2] > 0 ? d : 0;
	}
	return 0;
}

static int unpool_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *idx = &x->in[1];
	const struct op_tensor *os = x->n_in > 2 && op_tensor_present(&x->in[2]) ? &x->in[2] : NULL;
	struct op_tensor *y = &x->out[0], inferred;
	int i, ret;

	y->dtype = in->dtype;
	y->rank = -1;
	if (idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "MaxUnpool: I is %s, not int64",
				      cep_dtype_name(idx->dtype));
	if (in->rank >= 0 && idx->rank >= 0 && idx->rank != in->rank)
		return cep__set_error(CEP_ESHAPE, "MaxUnpool: I has rank %d, X %d", idx->rank,
				      in->rank);
	for (i = 0; in->rank >= 0 && i < idx->rank; i++) {
		if (op_dim_fixed(in->dims[i]) && op_dim_fixed(idx->dims[i]) &&
		    in->dims[i] != idx->dims[i])
			return cep__set_error(CEP_ESHAPE, "MaxUnpool: I and X differ in dimension %d",
					      i);
	}
	if (os && os->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "MaxUnpool: output_shape is %s, not int64",
				      cep_dtype_name(os->dtype));
	if (in->rank < 0)
		return 0;
	ret = cpu_unpool_inferred(x->node, in, &inferred);
	if (ret < 0)
		return ret;
	y->rank = in->rank;
	memcpy(y->dims, inferred.dims, sizeof(y->dims));
	if (!os)
		return 0;
	if (os->rank >= 0 && (os->rank != 1 || (op_dim_fixed(os->dims[0]) &&
						 os->dims[0] != in->rank)))
		return cep__set_error(CEP_ESHAPE, "MaxUnpool: output_shape must list the %d dims of "
				      "the output", in->rank);
	for (i = 0; i < in->rank; i++) {
		int64_t v;

		y->dims[i] = OP_DIM_UNKNOWN;
		if (!os->data || os->rank != 1)
			continue;
		v = ((const int64_t *)os->data)[i];
		if (op_dim_fixed(inferred.dims[i]) &&
		    (i < 2 ? v != inferred.dims[i] : v < inferred.dims[i]))
			return cep__set_error(CEP_EINVAL, "MaxUnpool: output_shape[%d] is %" PRId64
					      ", it must be %s %" PRId64, i, v,
					      i < 2 ? "X's" : "at least the inferred",
					      inferred.dims[i]);
		y->dims[i] = v;
	}
	return 0;
}

static int unpool_run(struct op_call *c)
{
	const struct op_tensor *x = &c->in[0], *yt = &c->out[0];
	const int64_t *idx = c->in[1].data;
	struct op_tensor inferred;
	size_t es = cep_dtype_size(x->dtype);
	int64_t n = cpu_numel(x), total, stride[CEP_MAX_RANK], e, o, pos;
	int rank = x->rank, d, ret;

	ret = cpu_unpool_inferred(c->node, x, &inferred);
	if (ret < 0)
		return ret;
	total = cpu_numel(&inferred);
	for (d = rank - 1; d >= 0; d--)
		stride[d] = d == rank - 1 ? 1 : stride[d + 1] * inferred.dims[d + 1];
	memset(yt->data, 0, op_tensor_bytes(yt));
	for (e = 0; e < n; e++) {
		if (idx[e] < 0 || idx[e] >= total)
			return cep__set_error(CEP_EINVAL, "MaxUnpool: index %" PRId64 " is out of "
					      "range for the %" PRId64 " elements of the unpooled "
					      "shape", idx[e], total);
		/* The index's coordinates in the inferred shape, placed in the
		 * output's. */
		pos = idx[e];
		o = 0;
		for (d = 0; d < rank; d++) {
			o = o * yt->dims[d] + pos / stride[d];
			pos %= stride[d];
		}
		memcpy((unsigned char *)yt->data + o * (int64_t)es,
		       (const unsigned char *)x->data + e * (int64_t)es, es);
	}
	return 0;
}

/* Elements are moved as bytes: every float type, float64 included, before
 * bfloat16 joined them at 22. */
#define UNPOOL_NO_BF16 (OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_schema schemas[] = {
	{ "", "MaxUnpool", 9, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, unpool_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "MaxUnpool", 9, 21, BACKEND_HOST, UNPOOL_NO_BF16, NULL, unpool_run },
	{ "", "MaxUnpool", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, NULL, unpool_run },
};

const struct op_family op_family_cpu_unpool = {
	"cpu_unpool", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
