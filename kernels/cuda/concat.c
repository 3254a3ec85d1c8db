/*
 * concat.c — the CUDA kernel of Concat for every type: one strided copy
 * per input into its columns of the output (kernels/cuda/concat.cu), in
 * the widest unit that the lengths and addresses allow.
 */
#include "kernels/cuda/launch.h"
#include "kernels/legacy.h"

#include <stdio.h>

#define CONCAT_UNITS 5 /* copy2d_1 .. copy2d_16 */

struct concat_params {
	CUfunction fn[CONCAT_UNITS];  /* by log2 of the unit */
	int axis;
	int64_t outer;                /* rows: product of the dims before axis */
	int64_t inner_bytes;          /* of one index along axis */
};
CUDA_PARAMS_FIT(struct concat_params);

static int concat_prepare(struct op_call *c, size_t *workspace)
{
	struct concat_params *p = (struct concat_params *)c->params;
	const struct op_tensor *out = &c->out[0];
	char name[32];
	int i, ret;

	*workspace = 0;
	ret = op_axis_normalize(c->node, op_legacy_concat_axis(c->node), out->rank, &p->axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(out, 0, p->axis);
	p->inner_bytes = op_dims_product(out, p->axis + 1, out->rank) *
			 (int64_t)cep_dtype_size(out->dtype);
	for (i = 0; i < CONCAT_UNITS; i++) {
		snprintf(name, sizeof(name), "copy2d_%d", 1 << i);
		ret = cuda_function_get(c->be, "concat", name, &p->fn[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int concat_run(struct op_call *c)
{
	const struct concat_params *p = (const struct concat_params *)c->params;
	const struct op_tensor *out = &c->out[0];
	int64_t dpitch = out->dims[p->axis] * p->inner_bytes, at = 0;
	int i, ret;

	for (i = 0; i < c->n_in; i++) {
		int64_t spitch = c->in[i].dims[p->axis] * p->inner_bytes;
		const void *src = c->in[i].data;
		void *dst = (unsigned char *)out->data + at;
		uint64_t sizes[] = { (uint64_t)spitch, (uint64_t)dpitch, (uint64_t)(uintptr_t)src,
				     (uint64_t)(uintptr_t)dst };
		unsigned u;
		int lg = 0;
		int64_t rows = p->outer, cols, sp, dp;
		void *args[] = { &src, &dst, &rows, &cols, &sp, &dp };

		at += spitch;
		if (spitch == 0 || rows == 0)
			continue;
		u = cuda_unit(sizes, 4);
		while ((1u << lg) < u)
			lg++;
		cols = spitch / u;
		sp = spitch / u;
		dp = dpitch / u;
		ret = cuda_launch(c->be, c->stream, p->fn[lg], cuda_grid(rows * cols), CUDA_BLOCK, 0,
				  args);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static const struct op_kernel kernels[] = {
	{ "", "Concat", 1, 3, BACKEND_CUDA, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  concat_prepare, concat_run },
	{ "", "Concat", 4, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, concat_prepare, concat_run },
};

const struct op_family op_family_cuda_concat = {
	"cuda_concat", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
