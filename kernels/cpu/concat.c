/*
 * concat.c — Concat: inputs of one type and rank joined along `axis` (1
 * when absent before opset 4: kernels/legacy.h); all other dimensions
 * must agree. The kernel copies, for each outer index,
 * one contiguous chunk of every input in turn.
 */
#include "kernels/cpu/cpu.h"
#include "kernels/legacy.h"

#include <inttypes.h>

static int concat_infer(struct op_infer *x)
{
	const struct op_tensor *in0 = &x->in[0];
	struct op_tensor *out = &x->out[0];
	int64_t sum = 0;
	int axis, rank = -1, i, d, ret;

	ret = op_infer_same_dtype(x, 0, x->n_in - 1);
	if (ret < 0)
		return ret;
	out->dtype = in0->dtype;
	for (i = 0; i < x->n_in; i++) {
		if (x->in[i].rank < 0)
			continue;
		if (rank >= 0 && x->in[i].rank != rank)
			return cep__set_error(CEP_ESHAPE, "Concat: input %d has rank %d, input 0 rank %d",
					      i, x->in[i].rank, rank);
		rank = x->in[i].rank;
	}
	out->rank = rank;
	if (rank < 0)
		return 0;
	if (rank == 0)
		return cep__set_error(CEP_ESHAPE, "Concat: inputs must have rank >= 1");
	ret = op_axis_normalize(x->node, op_legacy_concat_axis(x->node), rank, &axis);
	if (ret < 0)
		return ret;
	for (d = 0; d < rank; d++)
		out->dims[d] = OP_DIM_UNKNOWN;
	for (i = 0; i < x->n_in; i++) {
		const struct op_tensor *t = &x->in[i];

		if (t->rank < 0) {
			sum = -1;
			continue;
		}
		for (d = 0; d < rank; d++) {
			if (d == axis)
				continue;
			if (op_dim_fixed(t->dims[d]) && op_dim_fixed(out->dims[d]) &&
			    t->dims[d] != out->dims[d])
				return cep__set_error(CEP_ESHAPE, "Concat: input %d has %" PRId64
						      " in dimension %d where others have %" PRId64,
						      i, t->dims[d], d, out->dims[d]);
			if (!op_dim_fixed(out->dims[d]) && t->dims[d] != OP_DIM_UNKNOWN)
				out->dims[d] = t->dims[d];
		}
		if (sum >= 0 && op_dim_fixed(t->dims[axis]) && t->dims[axis] <= OP_MAX_NUMEL)
			sum += t->dims[axis];
		else
			sum = -1;
	}
	out->dims[axis] = sum >= 0 ? sum : OP_DIM_UNKNOWN;
	return 0;
}

static int concat_run(struct op_call *c)
{
	const struct op_tensor *out = &c->out[0];
	size_t es = cep_dtype_size(out->dtype);
	unsigned char *dst = out->data;
	int64_t outer, inner, o;
	int axis, i;

	op_axis_normalize(c->node, op_legacy_concat_axis(c->node), out->rank, &axis);
	outer = op_dims_product(out, 0, axis);
	inner = op_dims_product(out, axis + 1, out->rank) * (int64_t)es;
	for (o = 0; o < outer; o++) {
		for (i = 0; i < c->n_in; i++) {
			int64_t chunk = c->in[i].dims[axis] * inner;

			if (chunk == 0)
				continue;
			memcpy(dst, (const unsigned char *)c->in[i].data + o * chunk, (size_t)chunk);
			dst += chunk;
		}
	}
	return 0;
}

/* 4 made axis required (it defaulted to 1) and took every type. */
static const struct op_schema schemas[] = {
	{ "", "Concat", 1, 3, 1, -1, 1, 1, 0, 0, concat_infer },
	{ "", "Concat", 4, OP_OPSET_MAX, 1, -1, 1, 1, 0, 0, concat_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Concat", 1, 3, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16), NULL,
	  concat_run },
	{ "", "Concat", 4, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, NULL, concat_run },
};

const struct op_family op_family_cpu_concat = {
	"cpu_concat", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
