/*
 * select.c — the CUDA kernels of NonZero and Compress for every type and
 * opset the reference kernels take (kernels/cpu/select.c):
 * kernels/cuda/select.cu on the device. The extent each output has was
 * counted by inference while planning, from values the planner knew;
 * the kernels count again on the device (a chunk per block, then a scan)
 * and a run whose data gives another count fails at the stream's sync
 * with "NonZero: the values of its inputs give 5 elements along
 * dimension 1, where the plan made for the shapes has 4". The workspace
 * holds the chunks' counts and, for Compress, the map from output slice
 * to input slice.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

/* Twin of struct cep_select (select.cu). */
struct cuda_select {
	int64_t n;
	int64_t chunk;
	int64_t count;
	int32_t rank;
	int32_t axis;
	int64_t dims[CEP_MAX_RANK];
};

struct select_params {
	CUfunction count_fn, write_fn, gather_fn;
	unsigned blocks;                /* chunks of the counted elements */
	struct cuda_select s;
	int64_t len, inner, total;      /* Compress: input slices, their size, outputs */
};
CUDA_PARAMS_FIT(struct select_params);

/* The most chunks, so that each block sums the counts before it quickly. */
#define SELECT_MAX_BLOCKS 1024

/* Cuts s->n elements into chunks of whole tiles for p->blocks blocks
 * (one at least, which still checks the count) and returns the bytes of
 * their counts. */
static size_t select_chunks(struct select_params *p)
{
	int64_t per = (p->s.n + SELECT_MAX_BLOCKS - 1) / SELECT_MAX_BLOCKS;

	per = (per + CUDA_BLOCK - 1) / CUDA_BLOCK * CUDA_BLOCK;
	p->s.chunk = per < 4 * CUDA_BLOCK ? 4 * CUDA_BLOCK : per;
	p->blocks = (unsigned)((p->s.n + p->s.chunk - 1) / p->s.chunk);
	if (p->blocks == 0)
		p->blocks = 1;
	return (size_t)p->blocks * sizeof(int64_t);
}

/* Fetches the counting kernels of the type of t. */
static int select_functions(struct op_call *c, const struct op_tensor *t,
			    struct select_params *p)
{
	const char *sfx = cuda_dtype_suffix(t->dtype);
	char name[32];
	int ret;

	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(t->dtype));
	snprintf(name, sizeof(name), "select_count_%s", sfx);
	ret = cuda_function_get(c->be, "select", name, &p->count_fn);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "select_write_%s", sfx);
	return cuda_function_get(c->be, "select", name, &p->write_fn);
}

/* Queues both passes over x, writing the coordinates to out. */
static int select_launch(struct op_call *c, const struct select_params *p, const void *x,
			 void *out)
{
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *counts = c->workspace;
	void *count_args[] = { &x, &counts, (void *)&p->s };
	void *write_args[] = { &x, &counts, &out, (void *)&p->s, &fault, &site };
	int ret;

	if (c->workspace_bytes < (size_t)p->blocks * sizeof(int64_t))
		return cep__set_error(CEP_EINTERNAL, "%s: the workspace is too small",
				      c->node->op_type);
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	ret = cuda_launch(c->be, c->stream, p->count_fn, p->blocks, CUDA_BLOCK, 0, count_args);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->write_fn, p->blocks, CUDA_BLOCK, 0, write_args);
}

/* ------------------------------------------------------------------ NonZero */

static int nonzero_prepare(struct op_call *c, size_t *workspace)
{
	struct select_params *p = (struct select_params *)c->params;
	const struct op_tensor *x = &c->in[0];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	p->s.n = op_dims_product(x, 0, x->rank);
	p->s.count = c->out[0].dims[1];
	p->s.rank = x->rank;
	p->s.axis = 1;
	memcpy(p->s.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	*workspace = select_chunks(p);
	return select_functions(c, x, p);
}

static int nonzero_run(struct op_call *c)
{
	return select_launch(c, (const struct select_params *)c->params, c->in[0].data,
			     c->out[0].data);
}

/* ----------------------------------------------------------------- Compress */

static int compress_prepare(struct op_call *c, size_t *workspace)
{
	struct select_params *p = (struct select_params *)c->params;
	const struct op_tensor *x = &c->in[0], *cond = &c->in[1];
	size_t es = cep_dtype_size(x->dtype);
	bool flat = op_attr_find(c->node, "axis") == NULL;
	char name[32];
	int axis = 0, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!flat) {
		ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), x->rank, &axis);
		if (ret < 0)
			return ret;
	}
	p->len = flat ? op_dims_product(x, 0, x->rank) : x->dims[axis];
	p->inner = flat ? 1 : op_dims_product(x, axis + 1, x->rank);
	p->total = op_dims_product(&c->out[0], 0, c->out[0].rank);
	/* The map is NonZero of the condition's first len entries. */
	p->s.n = cond->dims[0] < p->len ? cond->dims[0] : p->len;
	p->s.count = c->out[0].dims[axis];
	p->s.rank = 1;
	p->s.axis = axis;
	p->s.dims[0] = p->s.n > 0 ? p->s.n : 1;
	*workspace = select_chunks(p) + (size_t)p->s.count * sizeof(int64_t);
	ret = select_functions(c, cond, p);
	if (ret < 0)
		return ret;
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "Compress: no cuda kernel for %s",
				      cep_dtype_name(x->dtype));
	snprintf(name, sizeof(name), "compress_gather_%zu", es);
	return cuda_function_get(c->be, "select", name, &p->gather_fn);
}

static int compress_run(struct op_call *c)
{
	const struct select_params *p = (const struct select_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *map = (unsigned char *)c->workspace + (size_t)p->blocks * sizeof(int64_t);
	void *args[] = { &x, &map, &y, (void *)&p->s.count, (void *)&p->len, (void *)&p->inner,
			 (void *)&p->total };
	int ret;

	ret = select_launch(c, p, c->in[1].data, map);
	if (ret < 0 || p->total == 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->gather_fn, cuda_grid(p->total), CUDA_BLOCK, 0,
			   args);
}

/* ------------------------------------------------------------------- table */

/* The reference kernels' sets: bfloat16 joined NonZero at 13, Compress at
 * 28. */
#define SELECT_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "NonZero", 9, 12, BACKEND_CUDA, SELECT_NO_BF16, nonzero_prepare, nonzero_run },
	{ "", "NonZero", 13, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, nonzero_prepare,
	  nonzero_run },
	{ "", "Compress", 9, 27, BACKEND_CUDA, SELECT_NO_BF16, compress_prepare, compress_run },
	{ "", "Compress", 28, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, compress_prepare,
	  compress_run },
};

const struct op_family op_family_cuda_select = {
	"cuda_select", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
