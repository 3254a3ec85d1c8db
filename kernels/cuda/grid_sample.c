/*
 * grid_sample.c — the CUDA kernels of GridSample (opset 16: 4-D; 20: any
 * number of spatial dims; bfloat16 from 22) and AffineGrid (opset 20), for
 * every type the reference kernels take (kernels/cpu/grid_sample.c):
 * kernels/cuda/grid_sample.cu on the device. GridSample's attributes are
 * read by the code the host uses (kernels/cpu/grid_sample.h); its kernel
 * is chosen by X's type and the grid's. AffineGrid's size is an int64
 * input that the planner gives prepare() only as a shape: the kernel
 * reads it on the device and a size other than the plan's fails the run
 * at the stream's sync, naming the operator.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/cpu/grid_sample.h"

/* ---------------------------------------------------------------- GridSample */

/* Twin of struct cep_gs (grid_sample.cu). */
struct cuda_gs {
	int64_t n;
	int64_t ch;
	int64_t pin, pout;
	int32_t r;
	int32_t mode, padding, align;
	int64_t in[GRID_SAMPLE_MAX_DIMS];
};

struct gs_params {
	CUfunction fn;
	struct cuda_gs k;
};
CUDA_PARAMS_FIT(struct gs_params);

static int gs_prepare(struct op_call *c, size_t *workspace)
{
	struct gs_params *p = (struct gs_params *)c->params;
	const struct op_tensor *x = &c->in[0], *g = &c->in[1], *y = &c->out[0];
	const char *xs = cuda_dtype_suffix(x->dtype), *gs = cuda_dtype_suffix(g->dtype);
	struct cpu_grid_sample a;
	char name[32];
	int d, ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (xs == NULL || gs == NULL || !op_dtype_in(g->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "GridSample: no cuda kernel for X of %s and a "
				      "grid of %s", cep_dtype_name(x->dtype),
				      cep_dtype_name(g->dtype));
	ret = cpu_grid_sample_attrs(c->node, &a);
	if (ret < 0)
		return ret;
	p->k.n = op_dims_product(y, 0, y->rank);
	p->k.ch = y->dims[1];
	p->k.pin = op_dims_product(x, 2, x->rank);
	p->k.pout = op_dims_product(y, 2, y->rank);
	p->k.r = x->rank - 2;
	p->k.mode = (int32_t)a.mode;
	p->k.padding = (int32_t)a.padding;
	p->k.align = a.align_corners;
	for (d = 0; d < p->k.r; d++)
		p->k.in[d] = x->dims[2 + d];
	snprintf(name, sizeof(name), "gs_%s_%s", xs, gs);
	return cuda_function_get(c->be, "grid_sample", name, &p->fn);
}

static int gs_run(struct op_call *c)
{
	struct gs_params *p = (struct gs_params *)c->params;
	const void *x = c->in[0].data, *g = c->in[1].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &g, &y, &p->k };

	if (p->k.n == 0)
		return 0;
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->k.n), CUDA_BLOCK, 0, args);
}

/* ---------------------------------------------------------------- AffineGrid */

/* Twin of struct cep_ag (grid_sample.cu). */
struct cuda_ag {
	int64_t n;
	int64_t plane;
	int64_t dims[4];
	int32_t r;
	int32_t align;
};

struct ag_params {
	CUfunction fn;
	struct cuda_ag k;
};
CUDA_PARAMS_FIT(struct ag_params);

static int ag_prepare(struct op_call *c, size_t *workspace)
{
	struct ag_params *p = (struct ag_params *)c->params;
	const struct op_tensor *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(y->dtype);
	char name[16];
	int d;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(y->dtype, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "AffineGrid: no cuda kernel for %s",
				      cep_dtype_name(y->dtype));
	if (c->in[1].dtype != CEP_DTYPE_INT64 || c->in[1].rank != 1 ||
	    c->in[1].dims[0] != y->rank)
		return cep__set_error(CEP_ESHAPE, "AffineGrid: size must be %d int64 values",
				      y->rank);
	p->k.r = y->rank - 2;
	p->k.n = op_dims_product(y, 0, y->rank);
	p->k.plane = op_dims_product(y, 1, y->rank - 1);
	for (d = 0; d <= p->k.r; d++)
		p->k.dims[d] = y->dims[d];
	p->k.align = op_attr_int(c->node, "align_corners", 0) != 0;
	snprintf(name, sizeof(name), "ag_%s", sfx);
	return cuda_function_get(c->be, "grid_sample", name, &p->fn);
}

static int ag_run(struct op_call *c)
{
	struct ag_params *p = (struct ag_params *)c->params;
	const void *theta = c->in[0].data, *size = c->in[1].data;
	void *y = c->out[0].data;
	uint64_t fault = 0, site = (uint64_t)(uintptr_t)c;
	void *args[] = { &theta, &size, &y, &p->k, &fault, &site };
	int ret;

	ret = cuda_fault_get(c->be, c->stream, &fault);
	if (ret < 0)
		return ret;
	/* One block even for an empty grid, which still checks size. */
	return cuda_launch(c->be, c->stream, p->fn, p->k.n > 0 ? cuda_grid(p->k.n) : 1, CUDA_BLOCK,
			   0, args);
}

/* ------------------------------------------------------------------- table */

#define GS_DTS_NO_BF16 (CUDA_DTS_ALL & ~OP_DT(CEP_DTYPE_BFLOAT16))

static const struct op_kernel kernels[] = {
	{ "", "GridSample", 16, 21, BACKEND_CUDA, GS_DTS_NO_BF16, gs_prepare, gs_run },
	{ "", "GridSample", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_ALL, gs_prepare, gs_run },
	{ "", "AffineGrid", 20, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, ag_prepare, ag_run },
};

const struct op_family op_family_cuda_grid_sample = {
	"cuda_grid_sample", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
