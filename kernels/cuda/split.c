/*
 * split.c — the CUDA kernel of Split (opset 1 on) for every type the
 * reference kernel takes (kernels/cpu/split.c): kernels/cuda/split.cu,
 * launched once per output the model names.
 *
 * Part sizes come from the split attribute (before opset 13), from equal
 * parts, or from the split input (int64 from opset 13; at opset 1 of the
 * data's float type, converted on the device). The first two are worked out on the
 * host, as the reference kernel does; the input's value is not given to
 * prepare() or run() on the host, so the kernel sums it on the device,
 * which also serves the parts of outputs the model leaves unnamed.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Twin of struct cep_split (split.cu). */
struct cuda_split {
	int64_t outer, dim, inner;
	int64_t size;
	int64_t at;
	int32_t part;
	int32_t axis;
};

struct split_params {
	CUfunction fn;
	int axis;
	bool listed;                 /* sizes from the split input, on the device */
	int64_t outer, dim, inner;   /* inner in elements */
	int64_t chunk, last;         /* equal parts: all but the last, the last */
};
CUDA_PARAMS_FIT(struct split_params);

static int split_prepare(struct op_call *c, size_t *workspace)
{
	struct split_params *p = (struct split_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	size_t es = cep_dtype_size(x->dtype);
	int64_t n = c->n_out;
	char name[24];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "Split: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), x->rank, &p->axis);
	if (ret < 0)
		return ret;
	p->outer = op_dims_product(x, 0, p->axis);
	p->dim = x->dims[p->axis];
	p->inner = op_dims_product(x, p->axis + 1, x->rank);
	p->listed = (c->node->opset >= 13 || c->node->opset < 2) && c->n_in > 1 &&
		    op_tensor_present(&c->in[1]);
	if (p->listed && c->node->opset >= 13 && c->in[1].dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "Split: split is %s, not int64",
				      cep_dtype_name(c->in[1].dtype));
	if (p->listed && c->node->opset < 2 && c->in[1].dtype != x->dtype)
		return cep__set_error(CEP_EDTYPE, "Split (opset 1): split is %s, not the input's %s",
				      cep_dtype_name(c->in[1].dtype), cep_dtype_name(x->dtype));
	/* Equal parts, as kernels/cpu/split.c divides them. */
	if (c->node->opset < 18) {
		p->chunk = p->last = n > 0 ? p->dim / n : 0;
	} else {
		p->chunk = n > 0 ? p->dim / n + (p->dim % n != 0) : 0;
		p->last = p->dim - p->chunk * (n - 1);
	}
	if (p->listed && c->node->opset < 2)
		snprintf(name, sizeof(name), "split_%zu_%s", es, cuda_dtype_suffix(x->dtype));
	else
		snprintf(name, sizeof(name), "split_%zu", es);
	return cuda_function_get(c->be, "split", name, &p->fn);
}

static int split_run(struct op_call *c)
{
	struct split_params *p = (struct split_params *)c->params;
	const void *x = c->in[0].data, *list = p->listed ? c->in[1].data : NULL;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	int cnt = 0, k, ret;
	const int64_t *sizes = c->node->opset < 13 ? op_attr_ints(c->node, "split", &cnt) : NULL;
	struct cuda_split s = { .outer = p->outer, .dim = p->dim, .inner = p->inner,
				.axis = p->axis };
	void *y = NULL;
	void *args[] = { &x, &y, &s, &list, &fault, &site };

	if (sizes != NULL && cnt != c->n_out)
		return cep__set_error(CEP_EINVAL, "Split: split has %d entries for %d outputs", cnt,
				      c->n_out);
	if (p->listed) {
		ret = cuda_fault_get(c->be, c->stream, &fault);
		if (ret < 0)
			return ret;
	}
	for (k = 0; k < c->n_out; k++) {
		const struct op_tensor *out = &c->out[k];
		int64_t size = sizes ? sizes[k] : k == c->n_out - 1 ? p->last : p->chunk;

		if (op_tensor_present(out)) {
			size = out->dims[p->axis];
			y = out->data;
			s.size = size;
			s.part = k;
			if (y != NULL && p->outer * size * p->inner > 0) {
				ret = cuda_launch(c->be, c->stream, p->fn,
						  cuda_grid(p->outer * size * p->inner), CUDA_BLOCK, 0,
						  args);
				if (ret < 0)
					return ret;
			}
		}
		s.at += size;
	}
	return 0;
}

static const struct op_kernel kernels[] = {
	{ "", "Split", 1, 1, BACKEND_CUDA, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  split_prepare, split_run },
	{ "", "Split", 2, 12, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), split_prepare,
	  split_run },
	{ "", "Split", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, split_prepare, split_run },
};

const struct op_family op_family_cuda_split = {
	"cuda_split", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
