/*
 * pool.c — the CUDA kernels of MaxPool (Indices included), AveragePool,
 * LpPool, GlobalAveragePool and GlobalMaxPool for the types and opsets the
 * reference kernels take (kernels/cpu/pool.c): kernels/cuda/pool.cu on the
 * device. The attributes and the window are read by the host's own
 * cpu_pool_read() (kernels/cpu/pool.h), so both backends pool the same
 * windows; prepare() turns them into the geometry the kernel walks and
 * picks the kernel that indexes in 32 bits when every index fits.
 */
#include "kernels/cuda/launch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/pool.h"

/* Twin of struct cep_pool (pool.cu). */
struct cuda_pool {
	int64_t in[3], out[3];          /* spatial sizes, leading unit dims added */
	int64_t k[3], s[3], d[3];       /* kernel, stride, dilation */
	int64_t pb[3], pe[3];           /* pads in effect */
	int64_t planes;                 /* N * C */
	int32_t count_include_pad;
	int32_t column_major;
	float lowest;                   /* a maximum over no tap */
	float p;                        /* LpPool's exponent */
};

struct pool_params {
	CUfunction fn;
	unsigned grid, block;
	struct cuda_pool g;
};
CUDA_PARAMS_FIT(struct pool_params);

/* Indices below this bound, with room for a grid's stride past the last,
 * let the windowed pools compute in 32 bits. */
#define POOL_I32_LIMIT (INT32_MAX - (int64_t)CUDA_GRID_MAX * CUDA_BLOCK)

/* Planes of at least this many elements each get a block. */
#define GPOOL_BLOCK_MIN 128

static int pool_prepare(struct op_call *c, size_t *workspace)
{
	struct pool_params *p = (struct pool_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	struct cpu_window_geom geom;
	struct cpu_pool pool;
	bool small = true;
	char name[32];
	int ret, i;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(x->dtype));
	ret = cpu_pool_read(c->node, x, &pool);
	if (ret < 0)
		return ret;
	cpu_window_geom_init(&pool.w, x, y, &geom);
	memcpy(p->g.in, geom.in, sizeof(p->g.in));
	memcpy(p->g.out, geom.out, sizeof(p->g.out));
	memcpy(p->g.k, geom.k, sizeof(p->g.k));
	memcpy(p->g.s, geom.s, sizeof(p->g.s));
	memcpy(p->g.d, geom.d, sizeof(p->g.d));
	memcpy(p->g.pb, geom.pb, sizeof(p->g.pb));
	memcpy(p->g.pe, geom.pe, sizeof(p->g.pe));
	p->g.planes = op_dims_product(x, 0, 2);
	p->g.count_include_pad = pool.count_include_pad;
	p->g.column_major = pool.column_major;
	p->g.p = pool.p;
	/* The lowest value of the type, as the host's pool_lowest(). */
	p->g.lowest = x->dtype == CEP_DTYPE_INT8 ? -128.0f
		    : x->dtype == CEP_DTYPE_UINT8 ? 0.0f : -INFINITY;
	p->block = CUDA_BLOCK;
	p->grid = cuda_grid(op_dims_product(y, 0, y->rank));
	/* Window starts reach stride * out + pads and ends in + pads. */
	small = op_dims_product(x, 0, x->rank) < POOL_I32_LIMIT &&
		op_dims_product(y, 0, y->rank) < POOL_I32_LIMIT;
	for (i = 0; i < 3 && small; i++)
		small = p->g.s[i] * p->g.out[i] + p->g.in[i] + p->g.pb[i] + p->g.pe[i] +
				p->g.k[i] * p->g.d[i] < POOL_I32_LIMIT;
	snprintf(name, sizeof(name), "pool_%s_%s%s",
		 pool.is_max ? "max" : pool.is_lp ? "lp" : "avg", sfx,
		 small ? "_i32" : "");
	return cuda_function_get(c->be, "pool", name, &p->fn);
}

static int pool_run(struct op_call *c)
{
	struct pool_params *p = (struct pool_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *indices = c->n_out > 1 && op_tensor_present(&c->out[1]) ? c->out[1].data : NULL;
	void *args[] = { &x, &y, &indices, &p->g };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

/* ---------------------------------------------------------- global pools */

struct gpool_params {
	CUfunction fn;
	unsigned grid, block;
	int64_t planes, n;              /* N * C planes of n elements */
};
CUDA_PARAMS_FIT(struct gpool_params);

static int gpool_prepare(struct op_call *c, size_t *workspace, const char *kind)
{
	struct gpool_params *p = (struct gpool_params *)c->params;
	const struct op_tensor *x = &c->in[0];
	const char *sfx = cuda_dtype_suffix(x->dtype);
	char name[40];

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (sfx == NULL || x->rank < 2)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s of rank %d",
				      c->node->op_type, cep_dtype_name(x->dtype), x->rank);
	p->planes = op_dims_product(x, 0, 2);
	p->n = op_dims_product(x, 2, x->rank);
	if (p->n >= GPOOL_BLOCK_MIN) {
		p->block = p->n >= CUDA_BLOCK ? CUDA_BLOCK : 32 * (unsigned)((p->n + 31) / 32);
		p->grid = p->planes > (int64_t)CUDA_GRID_MAX ? CUDA_GRID_MAX : (unsigned)p->planes;
	} else {
		p->block = CUDA_BLOCK;
		p->grid = cuda_grid(p->planes);
	}
	snprintf(name, sizeof(name), "gpool_%s_%s_%s", kind,
		 p->n >= GPOOL_BLOCK_MIN ? "block" : "thread", sfx);
	return cuda_function_get(c->be, "pool", name, &p->fn);
}

static int gpool_run(struct op_call *c)
{
	struct gpool_params *p = (struct gpool_params *)c->params;
	const void *x = c->in[0].data;
	void *y = c->out[0].data;
	void *args[] = { &x, &y, &p->planes, &p->n };

	return cuda_launch(c->be, c->stream, p->fn, p->grid, p->block, 0, args);
}

static int gavg_prepare(struct op_call *c, size_t *ws) { return gpool_prepare(c, ws, "avg"); }
static int gmax_prepare(struct op_call *c, size_t *ws) { return gpool_prepare(c, ws, "max"); }

/* ----------------------------------------------------------------- table */

/* The reference kernels' type sets: int8 and uint8 joined MaxPool at 12,
 * bfloat16 every pool at 22. */
#define POOL_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))
#define POOL_I8 (OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))

static const struct op_kernel kernels[] = {
	{ "", "MaxPool", 1, 11, BACKEND_CUDA, POOL_F16, pool_prepare, pool_run },
	{ "", "MaxPool", 12, 21, BACKEND_CUDA, POOL_F16 | POOL_I8, pool_prepare, pool_run },
	{ "", "MaxPool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT | POOL_I8, pool_prepare,
	  pool_run },
	{ "", "AveragePool", 1, 21, BACKEND_CUDA, POOL_F16, pool_prepare, pool_run },
	{ "", "AveragePool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, pool_prepare, pool_run },
	{ "", "LpPool", 1, 21, BACKEND_CUDA, POOL_F16, pool_prepare, pool_run },
	{ "", "LpPool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, pool_prepare, pool_run },
	{ "", "GlobalAveragePool", 1, 21, BACKEND_CUDA, POOL_F16, gavg_prepare, gpool_run },
	{ "", "GlobalAveragePool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, gavg_prepare,
	  gpool_run },
	{ "", "GlobalMaxPool", 1, 21, BACKEND_CUDA, POOL_F16, gmax_prepare, gpool_run },
	{ "", "GlobalMaxPool", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, gmax_prepare,
	  gpool_run },
};

const struct op_family op_family_cuda_pool = {
	"cuda_pool", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
