/*
 * matrix.c — the CUDA kernels of EyeLike and Det for every type and
 * opset the reference kernels take (kernels/cpu/matrix.c):
 * kernels/cuda/matrix.cu on the device. EyeLike's kernel is chosen by its
 * output's type, which may be any of CUDA_DTS_ALL whatever the input's. Det
 * eliminates each matrix in a block of its own, in double in the
 * workspace, at most DET_MAX_BLOCKS matrices at a time.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

struct eyelike_params {
	CUfunction fn;
	int64_t rows, cols, k;
};
CUDA_PARAMS_FIT(struct eyelike_params);

static int eyelike_prepare(struct op_call *c, size_t *workspace)
{
	struct eyelike_params *p = (struct eyelike_params *)c->params;
	const struct op_tensor *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(y->dtype);
	char name[32];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	/* The table checked the input's type; the output's is the dtype
	 * attribute's, which may name one matrix.cu has no kernel of. */
	if (sfx == NULL || !op_dtype_in(y->dtype, CUDA_DTS_ALL))
		return cep__set_error(CEP_EDTYPE, "EyeLike: no cuda kernel for an output of %s",
				      cep_dtype_name(y->dtype));
	p->rows = y->dims[0];
	p->cols = y->dims[1];
	p->k = op_attr_int(c->node, "k", 0);
	snprintf(name, sizeof(name), "eyelike_%s", sfx);
	return cuda_function_get(c->be, "matrix", name, &p->fn);
}

static int eyelike_run(struct op_call *c)
{
	struct eyelike_params *p = (struct eyelike_params *)c->params;
	void *y = c->out[0].data;
	void *args[] = { &y, &p->rows, &p->cols, &p->k };
	int64_t n = p->rows * p->cols;

	if (n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(n), CUDA_BLOCK, 0, args);
}

/* ---------------------------------------------------------------------- Det */

/* Matrices eliminated at once: the workspace holds one per block. */
#define DET_MAX_BLOCKS 1024

struct det_params {
	CUfunction fn;
	unsigned grid;
	int64_t mats, m;
};
CUDA_PARAMS_FIT(struct det_params);

static int det_prepare(struct op_call *c, size_t *workspace)
{
	struct det_params *p = (struct det_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	char name[32];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || !op_dtype_in(x->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "Det: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	p->m = x->dims[x->rank - 1];
	p->mats = op_dims_product(x, 0, x->rank - 2);
	p->grid = p->mats > DET_MAX_BLOCKS ? DET_MAX_BLOCKS : (unsigned)p->mats;
	*workspace = (size_t)p->grid * (size_t)(p->m * p->m) * sizeof(double);
	snprintf(name, sizeof(name), "det_%s", sfx);
	return cuda_function_get(c->be, "matrix", name, &p->fn);
}

static int det_run(struct op_call *c)
{
	struct det_params *p = (struct det_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data, *ws = c->workspace;
	void *args[] = { &x, &y, &ws, &p->mats, &p->m };

	if (p->mats == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, p->grid, CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

/* The reference kernels' sets: bfloat16 joined both at 22. */
#define MATRIX_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))
#define MATRIX_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "EyeLike", 9, 21, BACKEND_CUDA, MATRIX_NO_BF16, eyelike_prepare, eyelike_run },
	{ "", "EyeLike", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, eyelike_prepare,
	  eyelike_run },
	{ "", "Det", 11, 21, BACKEND_CUDA, MATRIX_F16, det_prepare, det_run },
	{ "", "Det", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, det_prepare, det_run },
};

const struct op_family op_family_cuda_matrix = {
	"cuda_matrix", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
