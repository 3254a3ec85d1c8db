/*
 * reverse_sequence.c — ReverseSequence (opset 10; bfloat16 from 28): for
 * each slice b along batch_axis, the first sequence_lens[b] elements
 * along time_axis in reverse order and the rest as they were. The two
 * axes are 0 and 1, one each (time 0 and batch 1 by default), of an input
 * of rank 2 or more; elements move as raw units of their size. A length
 * outside [0, the time axis] fails the run. The CUDA kernel of
 * kernels/cuda/reverse_sequence.c gives a thread to each element.
 */
#include "kernels/cpu/shapeops.h"

#include <inttypes.h>

/* Reads and checks the axes of node into *time_axis and *batch_axis. */
static int revseq_axes(const struct op_node *node, int *time_axis, int *batch_axis)
{
	int64_t t, b;
	int ret;

	if ((ret = op_attr_check(node, "time_axis", OP_ATTR_INT)) < 0 ||
	    (ret = op_attr_check(node, "batch_axis", OP_ATTR_INT)) < 0)
		return ret;
	t = op_attr_int(node, "time_axis", 0);
	b = op_attr_int(node, "batch_axis", 1);
	if ((t != 0 && t != 1) || (b != 0 && b != 1) || t == b)
		return cep__set_error(CEP_EMODEL, "ReverseSequence: time_axis %" PRId64 " and "
				      "batch_axis %" PRId64 " must be 0 and 1, one each", t, b);
	*time_axis = (int)t;
	*batch_axis = (int)b;
	return 0;
}

static int revseq_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *lens = &x->in[1];
	int t, b, ret;

	ret = revseq_axes(x->node, &t, &b);
	if (ret < 0)
		return ret;
	if (lens->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "ReverseSequence: sequence_lens is %s, not int64",
				      cep_dtype_name(lens->dtype));
	if (in->rank >= 0 && in->rank < 2)
		return cep__set_error(CEP_ESHAPE, "ReverseSequence: the input must have rank 2 or "
				      "more, it has %d", in->rank);
	if (lens->rank >= 0 && lens->rank != 1)
		return cep__set_error(CEP_ESHAPE, "ReverseSequence: sequence_lens must be 1-D, not "
				      "of rank %d", lens->rank);
	if (in->rank >= 2 && lens->rank == 1 && op_dim_fixed(in->dims[b]) &&
	    op_dim_fixed(lens->dims[0]) && in->dims[b] != lens->dims[0])
		return cep__set_error(CEP_ESHAPE, "ReverseSequence: %" PRId64 " sequence lengths for "
				      "a batch of %" PRId64, lens->dims[0], in->dims[b]);
	return op_infer_like_input(x);
}

static int revseq_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0];
	const int64_t *lens = c->in[1].data;
	size_t es = cep_dtype_size(in->dtype);
	int64_t d0 = in->dims[0], d1 = in->dims[1], inner = op_dims_product(in, 2, in->rank);
	int64_t steps, i0, i1, r;
	int t, b;

	revseq_axes(c->node, &t, &b);
	steps = in->dims[t];
	for (i0 = 0; i0 < in->dims[b]; i0++) {
		if (lens[i0] < 0 || lens[i0] > steps)
			return cep__set_error(CEP_EINVAL, "ReverseSequence: sequence_lens[%" PRId64
					      "] is %" PRId64 ", outside [0, %" PRId64 "]", i0,
					      lens[i0], steps);
	}
	for (i0 = 0; i0 < d0; i0++) {
		for (i1 = 0; i1 < d1; i1++) {
			int64_t ts = t == 0 ? i0 : i1, len = lens[t == 0 ? i1 : i0];
			int64_t src = ts < len ? len - 1 - ts : ts;
			int64_t s0 = t == 0 ? src : i0, s1 = t == 0 ? i1 : src;

			for (r = 0; r < inner; r++)
				shapeops_elem_copy(c->out[0].data, (i0 * d1 + i1) * inner + r, in->data,
						   (s0 * d1 + s1) * inner + r, es);
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "ReverseSequence", 10, OP_OPSET_MAX, 2, 2, 1, 1, 0, 0, revseq_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "ReverseSequence", 10, 27, BACKEND_HOST, SHAPEOPS_DTS_NO_BF16, NULL, revseq_run },
	{ "", "ReverseSequence", 28, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, revseq_run },
};

const struct op_family op_family_cpu_reverse_sequence = {
	"cpu_reverse_sequence", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
