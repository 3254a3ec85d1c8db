/*
 * pool.c — the pooling operators over N x C x spatial tensors: MaxPool
 * (the optional Indices output from opset 8 with its storage_order,
 * ceil_mode and dilations from 10, int8 and uint8 from 12), AveragePool
 * (count_include_pad; ceil_mode from 10, dilations from 19), LpPool (the
 * p-norm of each window, (sum |x|^p)^(1/p), over the taps inside the
 * input, so pads add nothing; p a float at opset 1, an int from 2;
 * ceil_mode and dilations from 18), and the whole-plane GlobalAveragePool
 * and GlobalMaxPool. bfloat16 joins every one of them at opset 22.
 *
 * The windows are those of kernels/cpu/window.h. Each channel plane is
 * pooled on its own in float32: float32 planes are read in place, other
 * types are widened into the workspace first, which is exact for every
 * type a pool takes, so a maximum is always one of the input values;
 * float64, which float32 cannot hold, is left to the global pools, which
 * compute in double. Indices are flat positions in the input tensor, batch and channel
 * included, with the spatial part in row- or column-major order. The
 * attributes are read by cpu_pool_read() (kernels/cpu/pool.h), which the
 * CUDA kernels of kernels/cuda/pool.c share.
 */
#include "kernels/cpu/pool.h"

#include <float.h>
#include <inttypes.h>

/* ---------------------------------------------------------------- inference */

static bool pool_is_max(const struct op_node *node)
{
	return strcmp(node->op_type, "MaxPool") == 0;
}

static bool pool_is_lp(const struct op_node *node)
{
	return strcmp(node->op_type, "LpPool") == 0;
}

/* The attributes of the window at the node's opset. */
static unsigned pool_flags(const struct op_node *node)
{
	unsigned f = CPU_WINDOW_KERNEL_ATTR;

	if (pool_is_lp(node))
		return node->opset >= 18 ? f | CPU_WINDOW_CEIL_MODE | CPU_WINDOW_DILATIONS : f;
	if (node->opset >= 10)
		f |= CPU_WINDOW_CEIL_MODE;
	if (node->opset >= (pool_is_max(node) ? 10 : 19))
		f |= CPU_WINDOW_DILATIONS;
	return f;
}

/* LpPool's p: a float at opset 1, an int from 2, 2 by default; it must
 * be positive. */
static int pool_lp_p(const struct op_node *node, float *p)
{
	bool fl = node->opset < 2;
	int ret = op_attr_check(node, "p", fl ? OP_ATTR_FLOAT : OP_ATTR_INT);

	if (ret < 0)
		return ret;
	*p = fl ? op_attr_float(node, "p", 2.0f) : (float)op_attr_int(node, "p", 2);
	if (!(*p > 0.0f) || isinf(*p))
		return cep__set_error(CEP_EMODEL, "LpPool: p is %g, it must be a positive number",
				      (double)*p);
	return 0;
}

/* Checks the attributes that are not the window's. */
static int pool_check_attrs(const struct op_node *node)
{
	const char *name = pool_is_max(node) ? "storage_order" : "count_include_pad";
	int64_t v;
	float p;
	int ret;

	if (pool_is_lp(node))
		return pool_lp_p(node, &p);
	if (node->opset < (pool_is_max(node) ? 8 : 7) && op_attr_find(node, name))
		return cep__set_error(CEP_EMODEL, "%s: attribute '%s' does not exist at opset %d",
				      node->op_type, name, node->opset);
	ret = op_attr_check(node, name, OP_ATTR_INT);
	if (ret < 0)
		return ret;
	v = op_attr_int(node, name, 0);
	if (v != 0 && v != 1)
		return cep__set_error(CEP_EMODEL, "%s: %s is %" PRId64 ", must be 0 or 1",
				      node->op_type, name, v);
	return 0;
}

static int pool_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0];
	struct op_tensor *y = &x->out[0];
	struct cpu_window w;
	int n, i, ret;

	y->dtype = xt->dtype;
	if (x->n_out > 1)
		x->out[1].dtype = CEP_DTYPE_INT64;
	ret = pool_check_attrs(x->node);
	if (ret < 0)
		return ret;
	if (xt->rank >= 0 && xt->rank < 3)
		return cep__set_error(CEP_ESHAPE, "%s: X must have rank >= 3 (N, C, spatial...), "
				      "it has %d", x->node->op_type, xt->rank);
	/* Without the input's rank, kernel_shape still tells it. */
	if (xt->rank >= 0)
		n = xt->rank - 2;
	else if (!op_attr_ints(x->node, "kernel_shape", &n))
		n = 0;
	ret = cpu_window_parse(x->node, n, NULL, pool_flags(x->node), &w);
	if (ret < 0)
		return ret;
	y->rank = n + 2;
	if (xt->rank < 0) {
		for (i = 0; i < y->rank; i++)
			y->dims[i] = OP_DIM_UNKNOWN;
	} else {
		y->dims[0] = xt->dims[0];
		y->dims[1] = xt->dims[1];
		ret = cpu_window_out_dims(x->node, &w, xt, y);
		if (ret < 0)
			return ret;
	}
	if (x->n_out > 1) {
		x->out[1].rank = y->rank;
		memcpy(x->out[1].dims, y->dims, sizeof(y->dims));
	}
	return 0;
}

/* ------------------------------------------------------------------ kernels */

int cpu_pool_read(const struct op_node *node, const struct op_tensor *x, struct cpu_pool *p)
{
	struct op_tensor y = *x;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = cpu_window_parse(node, x->rank - 2, NULL, pool_flags(node), &p->w);
	if (ret < 0)
		return ret;
	ret = cpu_window_out_dims(node, &p->w, x, &y);
	if (ret < 0)
		return ret;
	p->is_max = pool_is_max(node);
	p->is_lp = pool_is_lp(node);
	p->count_include_pad = !p->is_max && !p->is_lp &&
			       op_attr_int(node, "count_include_pad", 0);
	p->column_major = p->is_max && op_attr_int(node, "storage_order", 0);
	return p->is_lp ? pool_lp_p(node, &p->p) : 0;
}

static int pool_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_pool *p = (struct cpu_pool *)c->params;
	const struct op_tensor *xt = &c->in[0];
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	ret = cpu_pool_read(c->node, xt, p);
	if (ret < 0)
		return ret;
	*workspace = 0;
	if (xt->dtype != CEP_DTYPE_FLOAT32)
		*workspace = (size_t)op_dims_product(xt, 2, xt->rank) * sizeof(float);
	return 0;
}

/* The taps of a window along dimension i of g for output position o:
 * those in [*lo, *hi) land in the input; *n_pad counts the taps that land
 * in the input or its explicit pads (not in ceil_mode's overhang). */
static void pool_taps(const struct cpu_window_geom *g, int i, int64_t o, int64_t *start,
		      int64_t *lo, int64_t *hi, int64_t *n_pad)
{
	int64_t s = o * g->s[i] - g->pb[i], d = g->d[i], k = g->k[i];
	int64_t end = g->in[i] + g->pe[i];

	*start = s;
	*lo = s < 0 ? (-s + d - 1) / d : 0;
	*hi = s < g->in[i] ? (g->in[i] - 1 - s) / d + 1 : 0;
	if (*hi > k)
		*hi = k;
	if (*lo > *hi)
		*lo = *hi;
	*n_pad = s < end ? (end - 1 - s) / d + 1 : 0;
	if (*n_pad > k)
		*n_pad = k;
}

/* The spatial part of an Indices value for input position (z, y, x). */
static int64_t pool_spatial_index(const struct cpu_window_geom *g, bool column_major,
				  int64_t z, int64_t y, int64_t x)
{
	if (column_major)
		return z + y * g->in[0] + x * g->in[0] * g->in[1];
	return (z * g->in[1] + y) * g->in[2] + x;
}

/* The value a maximum over no element takes: the lowest of the type. */
static float pool_lowest(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT8: return -128.0f;
	case CEP_DTYPE_UINT8: return 0.0f;
	default: return -INFINITY;
	}
}

/* |v|^p, exactly for the usual p of 1 and 2. */
static float pool_lp_term(float p, float v)
{
	if (p == 1.0f)
		return fabsf(v);
	if (p == 2.0f)
		return v * v;
	return powf(fabsf(v), p);
}

/* The p-th root of a window's sum of terms. */
static float pool_lp_root(float p, float sum)
{
	if (p == 1.0f)
		return sum;
	if (p == 2.0f)
		return sqrtf(sum);
	return powf(sum, 1.0f / p);
}

/* Pools one plane src (float32, g->in sized) into elements y0.. of y and,
 * unless idx is NULL, the plane's indices into idx; in0 is where the plane
 * starts in the input, the base of its indices. */
static void pool_plane(const struct cpu_pool *p, const struct cpu_window_geom *g,
		       const float *src, const struct op_tensor *yt, int64_t y0,
		       int64_t *idx, int64_t in0)
{
	int64_t oz, oy, ox, o = 0;

	for (oz = 0; oz < g->out[0]; oz++) {
		int64_t sz, z0, z1, nz;

		pool_taps(g, 0, oz, &sz, &z0, &z1, &nz);
		for (oy = 0; oy < g->out[1]; oy++) {
			int64_t sy, y0w, y1w, ny;

			pool_taps(g, 1, oy, &sy, &y0w, &y1w, &ny);
			for (ox = 0; ox < g->out[2]; ox++, o++) {
				int64_t sx, x0w, x1w, nx, a, b, e;
				float acc = p->is_max ? pool_lowest(yt->dtype) : 0.0f;
				int64_t best = -1;

				pool_taps(g, 2, ox, &sx, &x0w, &x1w, &nx);
				for (a = z0; a < z1; a++) {
					int64_t iz = sz + a * g->d[0];

					for (b = y0w; b < y1w; b++) {
						int64_t iy = sy + b * g->d[1];
						const float *row = src + (iz * g->in[1] + iy) * g->in[2];

						for (e = x0w; e < x1w; e++) {
							int64_t ix = sx + e * g->d[2];
							float v = row[ix];

							if (p->is_lp) {
								acc += pool_lp_term(p->p, v);
							} else if (!p->is_max) {
								acc += v;
							} else if (best < 0 || v > acc) {
								acc = v;
								best = pool_spatial_index(g, p->column_major,
											  iz, iy, ix);
							}
						}
					}
				}
				if (p->is_lp) {
					acc = pool_lp_root(p->p, acc);
				} else if (!p->is_max) {
					int64_t count = p->count_include_pad
						? nz * ny * nx
						: (z1 - z0) * (y1w - y0w) * (x1w - x0w);

					acc /= (float)count;
				}
				cpu_store_f(yt->data, yt->dtype, y0 + o, acc);
				if (idx)
					idx[o] = best < 0 ? -1 : in0 + best;
			}
		}
	}
}

static int pool_run(struct op_call *c)
{
	const struct cpu_pool *p = (const struct cpu_pool *)c->params;
	const struct op_tensor *xt = &c->in[0], *yt = &c->out[0];
	const struct op_tensor *it = c->n_out > 1 && c->out[1].data ? &c->out[1] : NULL;
	struct cpu_window_geom g;
	int64_t planes, plane_in, plane_out, pl, i;

	cpu_window_geom_init(&p->w, xt, yt, &g);
	planes = xt->dims[0] * xt->dims[1];
	plane_in = g.in[0] * g.in[1] * g.in[2];
	plane_out = g.out[0] * g.out[1] * g.out[2];
	for (pl = 0; pl < planes; pl++) {
		const float *src = (const float *)xt->data + pl * plane_in;

		if (xt->dtype != CEP_DTYPE_FLOAT32) {
			float *w = c->workspace;

			for (i = 0; i < plane_in; i++)
				w[i] = cpu_load_f(xt->data, xt->dtype, pl * plane_in + i);
			src = w;
		}
		pool_plane(p, &g, src, yt, pl * plane_out,
			   it ? (int64_t *)it->data + pl * plane_out : NULL, pl * plane_in);
	}
	return 0;
}

/* ------------------------------------------------------------ global pools */

static int global_pool_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0];
	struct op_tensor *y = &x->out[0];
	int i;

	y->dtype = xt->dtype;
	y->rank = xt->rank;
	if (xt->rank < 0)
		return 0;
	if (xt->rank < 2)
		return cep__set_error(CEP_ESHAPE, "%s: X must have rank >= 2 (N, C, spatial...), "
				      "it has %d", x->node->op_type, xt->rank);
	y->dims[0] = xt->dims[0];
	y->dims[1] = xt->dims[1];
	for (i = 2; i < xt->rank; i++)
		y->dims[i] = 1;
	return 0;
}

static int global_pool_run(struct op_call *c, bool max)
{
	const struct op_tensor *xt = &c->in[0], *yt = &c->out[0];
	int64_t planes = op_dims_product(xt, 0, 2);
	int64_t n = op_dims_product(xt, 2, xt->rank);
	int64_t pl, i;

	for (pl = 0; pl < planes; pl++) {
		int64_t base = pl * n;
		double sum = 0.0, best = -INFINITY;

		if (xt->dtype == CEP_DTYPE_FLOAT32) {
			const float *src = (const float *)xt->data + base;

			for (i = 0; i < n; i++) {
				sum += src[i];
				if (i == 0 || src[i] > best)
					best = src[i];
			}
		} else {
			for (i = 0; i < n; i++) {
				double v = cpu_load_d(xt->data, xt->dtype, base + i);

				sum += v;
				if (i == 0 || v > best)
					best = v;
			}
		}
		/* An empty plane averages to NaN (0 / 0), as a division would. */
		cpu_store_d(yt->data, yt->dtype, pl, max ? best : sum / (double)n);
	}
	return 0;
}

static int global_avg_run(struct op_call *c) { return global_pool_run(c, false); }
static int global_max_run(struct op_call *c) { return global_pool_run(c, true); }

/* ------------------------------------------------------------------- table */

#define POOL_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))
/* The global pools compute in double: float64 too. */
#define POOL_GLOBAL_1 (POOL_F16 | OP_DT(CEP_DTYPE_FLOAT64))
#define POOL_I8 (OP_DT(CEP_DTYPE_INT8) | OP_DT(CEP_DTYPE_UINT8))

static const struct op_schema schemas[] = {
	/* Opset 8 added Indices and storage_order, 10 ceil_mode and dilations. */
	{ "", "MaxPool", 1, 7, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "MaxPool", 8, 9, 1, 1, 1, 2, 0, 0, pool_infer },
	{ "", "MaxPool", 10, OP_OPSET_MAX, 1, 1, 1, 2, 0, 0, pool_infer },
	/* Opset 10 added ceil_mode, 19 dilations. */
	{ "", "AveragePool", 1, 9, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "AveragePool", 10, 18, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "AveragePool", 19, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, pool_infer },
	/* Opset 2 made p an int, 18 added ceil_mode and dilations. */
	{ "", "LpPool", 1, 1, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "LpPool", 2, 17, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "LpPool", 18, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, pool_infer },
	{ "", "GlobalAveragePool", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, global_pool_infer },
	{ "", "GlobalMaxPool", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, global_pool_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "MaxPool", 1, 11, BACKEND_HOST, POOL_F16, pool_prepare, pool_run },
	{ "", "MaxPool", 12, 21, BACKEND_HOST, POOL_F16 | POOL_I8, pool_prepare, pool_run },
	{ "", "MaxPool", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64 | POOL_I8,
	  pool_prepare, pool_run },
	{ "", "AveragePool", 1, 21, BACKEND_HOST, POOL_F16, pool_prepare, pool_run },
	{ "", "AveragePool", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, pool_prepare,
	  pool_run },
	{ "", "LpPool", 1, 21, BACKEND_HOST, POOL_F16, pool_prepare, pool_run },
	{ "", "LpPool", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, pool_prepare,
	  pool_run },
	{ "", "GlobalAveragePool", 1, 21, BACKEND_HOST, POOL_GLOBAL_1, NULL, global_avg_run },
	{ "", "GlobalAveragePool", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, NULL,
	  global_avg_run },
	{ "", "GlobalMaxPool", 1, 21, BACKEND_HOST, POOL_GLOBAL_1, NULL, global_max_run },
	{ "", "GlobalMaxPool", 22, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, NULL, global_max_run },
};

const struct op_family op_family_cpu_pool = {
	"cpu_pool", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
