/*
 * index.c — the CUDA kernels of GatherND, ScatterND, ScatterElements and
 * Scatter (kernels/cuda/index.cu), for every type and opset the reference
 * kernels take (kernels/cpu/index.c, whose inference they share). Indices
 * are data, so they are checked on the device: a bad one fails the run at
 * the stream's sync with the host's words, "ScatterND: index 9 is out of
 * range for dimension 1 of size 4" (gpu/cuda/cuda_kernels.h).
 *
 * A scatter is a copy of data into the output, then one launch that
 * applies the updates in the host's order (index.cu says how); the result
 * is the host's, bit for bit, whatever the duplicates.
 */
#include "kernels/cuda/launch.h"
#include "kernels/cpu/index.h"

#include <stdio.h>
#include <string.h>

/* The threads a scatter aims for when it splits its targets into parts:
 * enough to spread over every SM of an H200 a few warps deep. */
#define INDEX_THREADS (INT64_C(1) << 16)

/* Twin of struct cep_index_nd (index.cu). */
struct cuda_index_nd {
	int64_t n;                      /* GatherND: output elements; ScatterND: threads */
	int64_t batch;
	int64_t tuples;                 /* per batch */
	int64_t slice;                  /* elements */
	int64_t batch_elems;            /* data elements per batch */
	int64_t parts;                  /* ScatterND, >= 1 */
	int32_t k;
	int32_t first;
	int64_t dims[CEP_MAX_RANK];     /* (k) */
	int64_t stride[CEP_MAX_RANK];   /* (k) slices */
};

/* Twin of struct cep_scatter_elements (index.cu). */
struct cuda_scatter_elements {
	int64_t n;                      /* threads: lines times parts */
	int64_t lines;
	int64_t len;
	int64_t inner;
	int64_t dim;
	int64_t parts;                  /* >= 1 */
	int32_t rank;
	int32_t axis;
	int64_t udims[CEP_MAX_RANK];    /* (rank) */
	int64_t dstride[CEP_MAX_RANK];  /* (rank) elements */
};

struct nd_params {
	CUfunction fn;
	struct cuda_index_nd g;
};
CUDA_PARAMS_FIT(struct nd_params);

struct se_params {
	CUfunction fn;
	struct cuda_scatter_elements g;
};
CUDA_PARAMS_FIT(struct se_params);

/* How many parts width threads split targets into: 1 when width fills
 * INDEX_THREADS alone, never more than there are targets. */
static int64_t index_parts(int64_t width, int64_t targets)
{
	int64_t parts;

	if (width <= 0 || width >= INDEX_THREADS || targets <= 1)
		return 1;
	parts = (INDEX_THREADS + width - 1) / width;
	return parts < targets ? parts : targets;
}

/* Fills the device's view of an index layout. */
static void nd_fill(struct cuda_index_nd *d, const struct cpu_index_nd *g,
		    const struct op_tensor *data)
{
	memset(d, 0, sizeof(*d));
	d->batch = g->batch;
	d->tuples = g->tuples;
	d->slice = g->slice;
	d->batch_elems = op_dims_product(data, g->first, data->rank);
	d->parts = 1;
	d->k = g->k;
	d->first = g->first;
	memcpy(d->dims, g->dims, sizeof(d->dims));
	memcpy(d->stride, g->stride, sizeof(d->stride));
}

/* The source of a scatter's kernels for data of type t. */
static const char *index_scatter_source(cep_dtype t)
{
	return cuda_dtype_wide(t) ? "index_wide" : "index";
}

/* The kernel-name suffix of a scatter's data type, or an error. */
static int scatter_suffix(const struct op_call *c, const char **sfx)
{
	*sfx = cuda_dtype_suffix(c->in[0].dtype);
	if (*sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	return 0;
}

/* ------------------------------------------------------------ GatherND */

static int gather_nd_prepare(struct op_call *c, size_t *workspace)
{
	struct nd_params *p = (struct nd_params *)c->params;
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	size_t es = cep_dtype_size(data->dtype);
	struct cpu_index_nd g;
	char name[32];

	*workspace = 0;
	if (idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "GatherND: indices are %s, not int64",
				      cep_dtype_name(idx->dtype));
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return cep__set_error(CEP_EDTYPE, "GatherND: no cuda kernel for %s",
				      cep_dtype_name(data->dtype));
	cpu_index_nd_init(&g, data, idx, (int)cpu_index_batch_dims(c->node));
	nd_fill(&p->g, &g, data);
	p->g.n = op_dims_product(&c->out[0], 0, c->out[0].rank);
	snprintf(name, sizeof(name), "gather_nd_%zu", es);
	return cuda_function_get(c->be, "index", name, &p->fn);
}

static int gather_nd_run(struct op_call *c)
{
	struct nd_params *p = (struct nd_params *)c->params;
	const void *data = c->in[0].data, *idx = c->in[1].data;
	void *out = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &data, &idx, &out, &p->g, &fault, &site };
	int ret;

	if (p->g.n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

/* ----------------------------------------------------------- ScatterND */

static int scatter_nd_prepare(struct op_call *c, size_t *workspace)
{
	struct nd_params *p = (struct nd_params *)c->params;
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1];
	enum cpu_index_red red;
	struct cpu_index_nd g;
	int64_t targets = 1;
	const char *sfx;
	char name[48];
	int d, ret;

	*workspace = 0;
	if (idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "ScatterND: indices are %s, not int64",
				      cep_dtype_name(idx->dtype));
	ret = scatter_suffix(c, &sfx);
	if (ret == 0)
		ret = cpu_index_red_get(c->node, &red);
	if (ret < 0)
		return ret;
	cpu_index_nd_init(&g, data, idx, 0);
	nd_fill(&p->g, &g, data);
	for (d = 0; d < g.k; d++)
		targets *= g.dims[d];
	p->g.parts = index_parts(g.slice, targets);
	p->g.n = g.slice * p->g.parts;
	snprintf(name, sizeof(name), "scatter_nd_%s_%s", cpu_index_red_name(red), sfx);
	return cuda_function_get(c->be, index_scatter_source(data->dtype), name, &p->fn);
}

static int scatter_nd_run(struct op_call *c)
{
	struct nd_params *p = (struct nd_params *)c->params;
	const void *idx = c->in[1].data, *upd = c->in[2].data;
	void *out = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &idx, &upd, &out, &p->g, &fault, &site };
	size_t bytes = op_tensor_bytes(&c->in[0]);
	int ret;

	if (bytes > 0) {
		ret = backend_copy_d2d(c->be, c->stream, out, c->in[0].data, bytes);
		if (ret < 0)
			return ret;
	}
	if (p->g.n == 0 || p->g.tuples == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------ ScatterElements, Scatter */

static int scatter_elements_prepare(struct op_call *c, size_t *workspace)
{
	struct se_params *p = (struct se_params *)c->params;
	const struct op_tensor *data = &c->in[0], *idx = &c->in[1], *upd = &c->in[2];
	struct cuda_scatter_elements *g = &p->g;
	enum cpu_index_red red;
	const char *sfx;
	char name[48];
	int64_t s = 1;
	int axis, d, ret;

	*workspace = 0;
	memset(g, 0, sizeof(*g));
	if (idx->dtype != CEP_DTYPE_INT32 && idx->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: indices are %s, not int32 or int64",
				      c->node->op_type, cep_dtype_name(idx->dtype));
	ret = scatter_suffix(c, &sfx);
	if (ret == 0)
		ret = cpu_index_red_get(c->node, &red);
	if (ret == 0)
		ret = op_axis_normalize(c->node, op_attr_int(c->node, "axis", 0), data->rank, &axis);
	if (ret < 0)
		return ret;
	g->rank = data->rank;
	g->axis = axis;
	g->len = upd->dims[axis];
	g->inner = op_dims_product(upd, axis + 1, upd->rank);
	g->lines = g->len > 0 ? op_dims_product(upd, 0, upd->rank) / g->len : 0;
	g->dim = data->dims[axis];
	for (d = data->rank - 1; d >= 0; d--) {
		g->udims[d] = upd->dims[d];
		g->dstride[d] = s;
		s *= data->dims[d];
	}
	g->parts = index_parts(g->lines, g->dim);
	g->n = g->lines * g->parts;
	snprintf(name, sizeof(name), "scatter_elements_%s_%s_%s", cpu_index_red_name(red), sfx,
		 idx->dtype == CEP_DTYPE_INT32 ? "i32" : "i64");
	return cuda_function_get(c->be, index_scatter_source(data->dtype), name, &p->fn);
}

static int scatter_elements_run(struct op_call *c)
{
	struct se_params *p = (struct se_params *)c->params;
	const void *idx = c->in[1].data, *upd = c->in[2].data;
	void *out = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &idx, &upd, &out, &p->g, &fault, &site };
	size_t bytes = op_tensor_bytes(&c->in[0]);
	int ret;

	if (bytes > 0) {
		ret = backend_copy_d2d(c->be, c->stream, out, c->in[0].data, bytes);
		if (ret < 0)
			return ret;
	}
	if (p->g.n == 0)
		return 0;
	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->g.n), CUDA_BLOCK, 0, args);
}

#define INDEX_NO_BF16 (OP_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "GatherND", 11, 12, BACKEND_CUDA, INDEX_NO_BF16, gather_nd_prepare, gather_nd_run },
	{ "", "GatherND", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, gather_nd_prepare,
	  gather_nd_run },
	{ "", "ScatterND", 11, 12, BACKEND_CUDA, INDEX_NO_BF16, scatter_nd_prepare,
	  scatter_nd_run },
	{ "", "ScatterND", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL, scatter_nd_prepare,
	  scatter_nd_run },
	{ "", "ScatterElements", 11, 12, BACKEND_CUDA, INDEX_NO_BF16, scatter_elements_prepare,
	  scatter_elements_run },
	{ "", "ScatterElements", 13, OP_OPSET_MAX, BACKEND_CUDA, OP_DTS_ALL,
	  scatter_elements_prepare, scatter_elements_run },
	{ "", "Scatter", 9, 10, BACKEND_CUDA, INDEX_NO_BF16, scatter_elements_prepare,
	  scatter_elements_run },
};

const struct op_family op_family_cuda_index = {
	"cuda_index", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
