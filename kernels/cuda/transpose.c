/*
 * transpose.c — the CUDA kernel of Transpose for every type: output
 * element i gathers from the input through permuted strides
 * (kernels/cuda/transpose.cu). prepare() drops unit dims and merges output
 * dims that stay adjacent in the input, so a transpose that only moves
 * unit dims becomes a copy of rank 1.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_transpose (transpose.cu). */
struct cuda_transpose {
	int32_t rank;
	int32_t pad;
	int64_t n;
	int64_t dims[CEP_MAX_RANK];    /* output dims */
	int64_t stride[CEP_MAX_RANK];  /* input element stride per output dim */
};

struct transpose_params {
	CUfunction fn;
	struct cuda_transpose t;
};
CUDA_PARAMS_FIT(struct transpose_params);

static int transpose_prepare(struct op_call *c, size_t *workspace)
{
	struct transpose_params *p = (struct transpose_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	int64_t in_stride[CEP_MAX_RANK], s = 1;
	int perm[CEP_MAX_RANK], n, i, m = 0;
	const int64_t *attr = op_attr_ints(c->node, "perm", &n);
	char name[32];

	*workspace = 0;
	if (attr != NULL && n != in->rank)
		return cep__set_error(CEP_EMODEL, "Transpose: perm has %d entries for rank %d", n,
				      in->rank);
	for (i = 0; i < in->rank; i++)
		perm[i] = attr != NULL ? (int)attr[i] : in->rank - 1 - i;
	for (i = in->rank - 1; i >= 0; i--) {
		in_stride[i] = s;
		s *= in->dims[i];
	}
	memset(&p->t, 0, sizeof(p->t));
	p->t.n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	for (i = 0; i < in->rank; i++) {
		int64_t d = in->dims[perm[i]], st = in_stride[perm[i]];

		if (d == 1)
			continue;
		if (m > 0 && p->t.stride[m - 1] == st * d) {
			p->t.dims[m - 1] *= d;
			p->t.stride[m - 1] = st;
			continue;
		}
		p->t.dims[m] = d;
		p->t.stride[m] = st;
		m++;
	}
	if (m == 0) {
		p->t.dims[0] = 1;
		p->t.stride[0] = 0;
		m = 1;
	}
	p->t.rank = m;
	snprintf(name, sizeof(name), "transpose_%zu", cep_dtype_size(in->dtype));
	return cuda_function_get(c->be, "transpose", name, &p->fn);
}

static int transpose_run(struct op_call *c)
{
	const struct transpose_params *p = (const struct transpose_params *)c->params;
	const void *in = c->in[0].data;
	void *out = c->out[0].data;
	void *args[] = { &in, &out, (void *)&p->t };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->t.n), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Transpose", 1, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, transpose_prepare,
	  transpose_run },
};

const struct op_family op_family_cuda_transpose = {
	"cuda_transpose", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
