/*
 * dropout.c — the CUDA kernel of Dropout in inference (opset 7 on) for the
 * float types the reference kernel takes (kernels/cpu/dropout.c):
 * kernels/cuda/dropout.cu copies the input and writes the optional mask
 * of ones. A training_mode input is read on the device, where true with a
 * nonzero ratio fails the run through the fault record (CUDA_FAULT_
 * TRAINING: CEP_EUNSUPPORTED with the host kernel's words); a constant
 * training_mode is already refused when the model loads.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>

/* Twin of struct cep_dropout (dropout.cu). */
struct cuda_dropout {
	int64_t n;
	uint32_t one;
	int32_t mask_bytes;
	int32_t ratio_type;
	int32_t pad;
};

struct dropout_params {
	CUfunction fn;
	struct cuda_dropout d;
};
CUDA_PARAMS_FIT(struct dropout_params);

static int dropout_prepare(struct op_call *c, size_t *workspace)
{
	struct dropout_params *p = (struct dropout_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const struct op_tensor *mask = c->n_out > 1 ? &c->out[1] : NULL;
	size_t es = cep_dtype_size(x->dtype);
	char name[24];

	*workspace = 0;
	p->d = (struct cuda_dropout){ .n = op_dims_product(x, 0, x->rank), .one = 1,
				      .mask_bytes = 1 };
	if (!op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Dropout: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	/* Before opset 10 the mask has the input's type: 1.0 in its bits. */
	if (mask != NULL && op_tensor_present(mask) && mask->dtype != CEP_DTYPE_BOOL) {
		switch (mask->dtype) {
		case CEP_DTYPE_FLOAT32: p->d.one = 0x3f800000u; p->d.mask_bytes = 4; break;
		case CEP_DTYPE_FLOAT16: p->d.one = 0x3c00u; p->d.mask_bytes = 2; break;
		case CEP_DTYPE_BFLOAT16: p->d.one = 0x3f80u; p->d.mask_bytes = 2; break;
		default:
			return cep__set_error(CEP_EDTYPE, "Dropout: a mask of %s is not supported",
					      cep_dtype_name(mask->dtype));
		}
	}
	if (c->n_in > 1 && op_tensor_present(&c->in[1]))
		p->d.ratio_type = c->in[1].dtype == CEP_DTYPE_FLOAT16 ? 1
				  : c->in[1].dtype == CEP_DTYPE_BFLOAT16 ? 2 : 0;
	snprintf(name, sizeof(name), "dropout_%zu", es);
	return cuda_function_get(c->be, "dropout", name, &p->fn);
}

static int dropout_run(struct op_call *c)
{
	struct dropout_params *p = (struct dropout_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data, *mask = c->n_out > 1 ? c->out[1].data : NULL;
	const void *ratio = c->n_in > 1 && op_tensor_present(&c->in[1]) ? c->in[1].data : NULL;
	const void *training = c->n_in > 2 && op_tensor_present(&c->in[2]) ? c->in[2].data : NULL;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &x, &y, &mask, &p->d, &training, &ratio, &fault, &site };
	int ret;

	if (training != NULL) {
		ret = cuda_fault_get(c->be, c->stream, &fault);
		if (ret < 0)
			return ret;
	}
	/* One block even when empty, so that training_mode is still checked. */
	return cuda_launch(c->be, c->stream, p->fn, p->d.n > 0 ? cuda_grid(p->d.n) : 1, CUDA_BLOCK,
			   0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Dropout", 1, 12, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  dropout_prepare, dropout_run },
	{ "", "Dropout", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, dropout_prepare, dropout_run },
};

const struct op_family op_family_cuda_dropout = {
	"cuda_dropout", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
