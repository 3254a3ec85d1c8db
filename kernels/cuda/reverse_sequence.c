/*
 * reverse_sequence.c — the CUDA kernel of ReverseSequence for every type
 * and opset the reference kernel takes (kernels/cpu/reverse_sequence.c):
 * kernels/cuda/reverse_sequence.cu on the device, chosen by the element's
 * size. The lengths are read on the device; one outside [0, the time
 * axis] fails the run at the stream's sync with "ReverseSequence: the
 * value 9 read at run time for dimension 0 is not allowed (past the
 * limit)".
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_revseq (reverse_sequence.cu). */
struct cuda_revseq {
	int64_t d0, d1, inner;
	int32_t time_axis;
	int32_t pad;
};

struct revseq_params {
	CUfunction fn;
	int64_t n;
	struct cuda_revseq r;
};
CUDA_PARAMS_FIT(struct revseq_params);

static int revseq_prepare(struct op_call *c, size_t *workspace)
{
	struct revseq_params *p = (struct revseq_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	size_t es = cep_dtype_size(x->dtype);
	char name[40];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "ReverseSequence: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	p->r.d0 = x->dims[0];
	p->r.d1 = x->dims[1];
	p->r.inner = op_dims_product(x, 2, x->rank);
	p->r.time_axis = op_attr_int(c->node, "time_axis", 0) != 0;
	p->n = op_dims_product(x, 0, x->rank);
	snprintf(name, sizeof(name), "reverse_sequence_%zu", es);
	return cuda_function_get(c->be, "reverse_sequence", name, &p->fn);
}

static int revseq_run(struct op_call *c)
{
	struct revseq_params *p = (struct revseq_params *)c->params;
	const void *x = c->in[0].data, *lens = c->in[1].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &lens, &y, &p->r, &fault, &site };
	int ret;

	if (p->n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

/* The reference kernel's sets: bfloat16 came at 28. */
#define REVSEQ_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "ReverseSequence", 10, 27, BACKEND_CUDA, REVSEQ_NO_BF16, revseq_prepare,
	  revseq_run },
	{ "", "ReverseSequence", 28, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, revseq_prepare,
	  revseq_run },
};

const struct op_family op_family_cuda_reverse_sequence = {
	"cuda_reverse_sequence", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
