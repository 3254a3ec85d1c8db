/*
 * transpose.c — Transpose: output dimension i is input dimension perm[i]
 * (perm defaults to reversing the dimensions). The kernel walks the output
 * in order and gathers from the input through permuted strides, moving
 * elements by size so that one loop serves every type.
 */
#include "kernels/cpu/cpu.h"

#include <inttypes.h>

struct transpose_params {
	int rank;
	int64_t dims[CEP_MAX_RANK];    /* of the output */
	int64_t strides[CEP_MAX_RANK]; /* input element stride of each output dim */
};

/* Fills perm (of rank entries) from the attribute or the default. */
static int transpose_perm(const struct op_node *node, int rank, int *perm)
{
	bool seen[CEP_MAX_RANK] = { false };
	const int64_t *p;
	int n, i;

	p = op_attr_ints(node, "perm", &n);
	if (!p) {
		for (i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		return 0;
	}
	if (n != rank)
		return cep__set_error(CEP_EMODEL, "Transpose: perm has %d entries for rank %d", n,
				      rank);
	for (i = 0; i < n; i++) {
		if (p[i] < 0 || p[i] >= rank || seen[p[i]])
			return cep__set_error(CEP_EMODEL, "Transpose: perm is not a permutation of 0..%d",
					      rank - 1);
		seen[p[i]] = true;
		perm[i] = (int)p[i];
	}
	return 0;
}

static int transpose_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	int perm[CEP_MAX_RANK];
	int i, ret;

	out->dtype = in->dtype;
	out->rank = in->rank;
	if (in->rank < 0)
		return 0;
	ret = transpose_perm(x->node, in->rank, perm);
	if (ret < 0)
		return ret;
	for (i = 0; i < in->rank; i++)
		out->dims[i] = in->dims[perm[i]];
	return 0;
}

static int transpose_prepare(struct op_call *c, size_t *workspace)
{
	struct transpose_params *p = (struct transpose_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	int64_t in_strides[CEP_MAX_RANK];
	int perm[CEP_MAX_RANK];
	int64_t s = 1;
	int i, ret;

	ret = transpose_perm(c->node, in->rank, perm);
	if (ret < 0)
		return ret;
	for (i = in->rank - 1; i >= 0; i--) {
		in_strides[i] = s;
		s *= in->dims[i];
	}
	p->rank = in->rank;
	for (i = 0; i < in->rank; i++) {
		p->dims[i] = c->out[0].dims[i];
		p->strides[i] = in_strides[perm[i]];
	}
	*workspace = 0;
	return 0;
}

static int transpose_run(struct op_call *c)
{
	const struct transpose_params *p = (const struct transpose_params *)c->params;
	size_t es = cep_dtype_size(c->in[0].dtype);
	const unsigned char *src = c->in[0].data;
	unsigned char *dst = c->out[0].data;
	int64_t idx[CEP_MAX_RANK] = { 0 };
	int64_t n = cpu_numel(&c->out[0]);
	int64_t off = 0, i;
	int d;

	for (i = 0; i < n; i++) {
		memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
		for (d = p->rank - 1; d >= 0; d--) {
			off += p->strides[d];
			if (++idx[d] < p->dims[d])
				break;
			off -= p->strides[d] * p->dims[d];
			idx[d] = 0;
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Transpose", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, transpose_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Transpose", 1, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, transpose_prepare,
	  transpose_run },
};

const struct op_family op_family_cpu_transpose = {
	"cpu_transpose", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
