/*
 * unique.c — the CUDA kernels of Unique for every type and opset the
 * reference kernel takes (kernels/cpu/unique.c): kernels/cuda/unique.cu on
 * the device, six launches on the call's stream. The number of groups was
 * counted by inference while planning; the device counts again and a run
 * whose data gives another count fails at the stream's sync ("Unique: the
 * values of its inputs give 5 elements along dimension 0, where the plan
 * made for the shapes has 4"). The workspace holds seven arrays of one
 * entry per item (and one more) and the count.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_unique (unique.cu). */
struct cuda_unique {
	int64_t n, outer, inner;
	int64_t count;
	int32_t sorted;
	int32_t axis;
};

/* Twin of struct cep_unique_ws: device pointers into the workspace. */
struct cuda_unique_ws {
	void *rank, *order, *gid, *start, *first, *pos, *yorder, *groups;
};

struct unique_params {
	CUfunction rank_fn, heads_fn, scan_fn, place_fn, write_fn, index_fn;
	struct cuda_unique u;
	int64_t y_n;                    /* elements of Y */
};
CUDA_PARAMS_FIT(struct unique_params);

/* The workspace's arrays: seven of n + 1 entries, then the count. */
static size_t unique_ws_bytes(int64_t n)
{
	return (7 * (size_t)(n + 1) + 1) * sizeof(int64_t);
}

static int unique_prepare(struct op_call *c, size_t *workspace)
{
	struct unique_params *p = (struct unique_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	size_t es = cep_dtype_size(x->dtype);
	bool flat = op_attr_find(c->node, "axis") == NULL;
	char name[40];
	int axis = 0, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || (es != 1 && es != 2 && es != 4 && es != 8))
		return cep__set_error(CEP_EDTYPE, "Unique: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	if (!flat) {
		ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), x->rank, &axis);
		if (ret < 0)
			return ret;
	}
	p->u.n = flat ? op_dims_product(x, 0, x->rank) : x->dims[axis];
	p->u.outer = flat ? 1 : op_dims_product(x, 0, axis);
	p->u.inner = flat ? 1 : op_dims_product(x, axis + 1, x->rank);
	p->u.count = c->out[0].dims[axis];
	p->u.sorted = op_attr_int(c->node, "sorted", 1) != 0;
	p->u.axis = axis;
	p->y_n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	*workspace = unique_ws_bytes(p->u.n);
	snprintf(name, sizeof(name), "unique_rank_%s", sfx);
	if ((ret = cuda_function_get(c->be, "unique", name, &p->rank_fn)) < 0)
		return ret;
	snprintf(name, sizeof(name), "unique_heads_%s", sfx);
	if ((ret = cuda_function_get(c->be, "unique", name, &p->heads_fn)) < 0 ||
	    (ret = cuda_function_get(c->be, "unique", "unique_scan", &p->scan_fn)) < 0 ||
	    (ret = cuda_function_get(c->be, "unique", "unique_place", &p->place_fn)) < 0 ||
	    (ret = cuda_function_get(c->be, "unique", "unique_write_index", &p->index_fn)) < 0)
		return ret;
	snprintf(name, sizeof(name), "unique_write_%zu", es);
	return cuda_function_get(c->be, "unique", name, &p->write_fn);
}

/* Output i of c when the model names it, else NULL. */
static void *unique_out(const struct op_call *c, int i)
{
	return i < c->n_out && op_tensor_present(&c->out[i]) ? c->out[i].data : NULL;
}

static int unique_run(struct op_call *c)
{
	struct unique_params *p = (struct unique_params *)c->params;
	int64_t *ws = c->workspace, stride = p->u.n + 1;
	struct cuda_unique_ws w = {
		ws, ws + stride, ws + 2 * stride, ws + 3 * stride, ws + 4 * stride,
		ws + 5 * stride, ws + 6 * stride, ws + 7 * stride,
	};
	const void *x = c->in[0].data;
	void *y = c->out[0].data, *indices = unique_out(c, 1), *inverse = unique_out(c, 2);
	void *counts = unique_out(c, 3);
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *item_args[] = { &x, &w, &p->u };
	void *scan_args[] = { &w, &p->u, &fault, &site };
	void *place_args[] = { &w, &p->u };
	void *write_args[] = { &x, &w, &y, &p->u };
	void *index_args[] = { &w, &indices, &inverse, &counts, &p->u };
	int64_t most = p->u.count > p->u.n ? p->u.count : p->u.n;
	int ret;

	if (c->workspace_bytes < unique_ws_bytes(p->u.n))
		return cep__set_error(CEP_EINTERNAL, "Unique: the workspace is too small");
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->rank_fn, cuda_grid(p->u.n), CUDA_BLOCK, 0,
				  item_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->heads_fn, cuda_grid(p->u.n), CUDA_BLOCK, 0,
				  item_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->scan_fn, 1, CUDA_BLOCK, 0, scan_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->place_fn, cuda_grid(p->u.count), CUDA_BLOCK,
				  0, place_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->write_fn, cuda_grid(p->y_n), CUDA_BLOCK, 0,
				  write_args);
	if (ret == 0)
		ret = cuda_launch(c->be, c->stream, p->index_fn, cuda_grid(most), CUDA_BLOCK, 0,
				  index_args);
	return ret;
}

/* The reference kernel's sets: bfloat16 came at 28. */
#define UNIQUE_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "Unique", 11, 27, BACKEND_CUDA, UNIQUE_NO_BF16, unique_prepare, unique_run },
	{ "", "Unique", 28, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, unique_prepare, unique_run },
};

const struct op_family op_family_cuda_unique = {
	"cuda_unique", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
