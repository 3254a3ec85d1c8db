/*
 * slice.c — the CUDA kernel of Slice (opset 7 on) for every type the
 * reference kernel takes (kernels/cpu/slice.c): kernels/cuda/slice.cu on
 * the device.
 *
 * Before opset 10 the bounds are attributes: prepare() clamps them and
 * keeps each dimension's first index and step. From 10 on they are inputs,
 * and the planner gives prepare() no input's value (only shapes), so the
 * kernel reads and clamps them on the device; the output's shape, fixed
 * by inference from the same (constant or folded) bounds, is what it
 * checks them against.
 */
#include "kernels/cuda/launch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Twin of struct cep_slice (slice.cu). */
struct cuda_slice {
	int64_t n;
	int32_t rank;
	int32_t n_lists;
	int32_t wide;
	int32_t pad;
	int64_t idims[CEP_MAX_RANK];
	int64_t odims[CEP_MAX_RANK];
	int64_t first[CEP_MAX_RANK];
	int64_t step[CEP_MAX_RANK];
};

struct slice_params {
	CUfunction fn;
	int32_t n_lists;                /* entries of the bound inputs, 0: none */
	int32_t wide;                   /* bit i: bound input i + 1 is int64 */
	int64_t first[CEP_MAX_RANK];    /* (rank) from the attributes */
	int64_t step[CEP_MAX_RANK];
};
CUDA_PARAMS_FIT(struct slice_params);

/* slice.cu's clamping, for the attributes of opsets 7 to 9. */
static int64_t slice_clamp(int64_t dim, int64_t start, int64_t end, int64_t *first)
{
	if (start < 0)
		start += dim;
	if (end < 0)
		end += dim;
	start = start < 0 ? 0 : start > dim ? dim : start;
	end = end < 0 ? 0 : end > dim ? dim : end;
	*first = start;
	return end > start ? end - start : 0;
}

/* First indices from the starts, ends and axes attributes (steps 1). */
static int slice_attrs(struct op_call *c, struct slice_params *p)
{
	const struct op_tensor *x = &c->in[0];
	int n_starts = 0, n_ends = 0, n_axes = 0, k;
	const int64_t *starts = op_attr_ints(c->node, "starts", &n_starts);
	const int64_t *ends = op_attr_ints(c->node, "ends", &n_ends);
	const int64_t *axes = op_attr_ints(c->node, "axes", &n_axes);

	if (starts == NULL || ends == NULL || n_starts != n_ends ||
	    (axes != NULL && n_axes != n_starts) || n_starts > x->rank)
		return cep__set_error(CEP_EMODEL, "Slice: starts, ends and axes do not match each other or rank %d",
				      x->rank);
	for (k = 0; k < n_starts; k++) {
		int64_t ax = axes ? axes[k] : k;

		if (ax < -x->rank || ax >= x->rank)
			return cep__set_error(CEP_EMODEL, "Slice: axis %" PRId64 " is out of range for rank %d",
					      ax, x->rank);
		if (ax < 0)
			ax += x->rank;
		if (slice_clamp(x->dims[ax], starts[k], ends[k], &p->first[ax]) != c->out[0].dims[ax])
			return cep__set_error(CEP_EINVAL, "Slice: axis %" PRId64 " does not take the %" PRId64
					      " elements the plan expected", ax, c->out[0].dims[ax]);
	}
	return 0;
}

static int slice_prepare(struct op_call *c, size_t *workspace)
{
	struct slice_params *p = (struct slice_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	size_t es = cep_dtype_size(x->dtype);
	char name[24];
	int i, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "Slice: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (c->out[0].rank != x->rank)
		return cep__set_error(CEP_ESHAPE, "Slice: data has rank %d, the output %d", x->rank,
				      c->out[0].rank);
	for (i = 0; i < CEP_MAX_RANK; i++)
		p->step[i] = 1;
	if (c->node->opset < 10) {
		ret = slice_attrs(c, p);
		if (ret < 0)
			return ret;
	} else {
		for (i = 1; i < 5 && i < c->n_in; i++) {
			const struct op_tensor *t = &c->in[i];

			if (!op_tensor_present(t))
				continue;
			if (t->dtype != CEP_DTYPE_INT64 && t->dtype != CEP_DTYPE_INT32)
				return cep__set_error(CEP_EDTYPE, "Slice: input %d is %s, not int32 or int64",
						      i, cep_dtype_name(t->dtype));
			if (t->dtype == CEP_DTYPE_INT64)
				p->wide |= 1 << (i - 1);
		}
		p->n_lists = c->in[1].rank == 1 ? (int32_t)c->in[1].dims[0] : 0;
		if (p->n_lists > x->rank)
			return cep__set_error(CEP_ESHAPE, "Slice: %d axes sliced but data has rank %d",
					      p->n_lists, x->rank);
	}
	snprintf(name, sizeof(name), "slice_%zu", es);
	return cuda_function_get(c->be, "slice", name, &p->fn);
}

static int slice_run(struct op_call *c)
{
	struct slice_params *p = (struct slice_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const void *data = x->data, *lists[4] = { NULL, NULL, NULL, NULL };
	void *out = y->data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	struct cuda_slice s = { .rank = x->rank > 0 ? x->rank : 1, .n_lists = p->n_lists,
				.wide = p->wide };
	void *args[] = { &data, &out, &s, &lists[0], &lists[1], &lists[2], &lists[3], &fault,
			 &site };
	int i, ret;

	s.n = op_dims_product(y, 0, y->rank);
	if (s.n == 0)
		return 0;
	for (i = 0; i < s.rank; i++) {
		s.idims[i] = x->rank > 0 ? x->dims[i] : 1;
		s.odims[i] = y->rank > 0 ? y->dims[i] : 1;
		s.first[i] = p->first[i];
		s.step[i] = p->step[i];
	}
	for (i = 0; i < 4 && p->n_lists > 0; i++) {
		if (i + 1 < c->n_in && op_tensor_present(&c->in[i + 1]))
			lists[i] = c->in[i + 1].data;
	}
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(s.n), CUDA_BLOCK, 0, args);
}

static const struct op_kernel kernels[] = {
	{ "", "Slice", 1, 12, BACKEND_CUDA, OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16), slice_prepare,
	  slice_run },
	{ "", "Slice", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, slice_prepare, slice_run },
};

const struct op_family op_family_cuda_slice = {
	"cuda_slice", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
