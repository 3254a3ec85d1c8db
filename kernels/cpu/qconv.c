/*
 * qconv.c — convolutions of quantized integers (opset 10): ConvInteger,
 * whose int32 result sums (x - x_zero_point) * (w - w_zero_point) over
 * each window, and QLinearConv, which adds the int32 bias B to that sum
 * and requantizes it:
 *
 *	y = saturate(round(sum * (x_scale * w_scale / y_scale)) + y_zero_point)
 *
 * the multiplier in float32, rounded at each step, its product with the
 * sum in double, rounding half to even (quant.h). The window is Conv's
 * (kernel_shape, strides, dilations, pads or auto_pad, group; 1-D to 3-D:
 * kernels/conv_geom.h), and a padded position contributes nothing (it
 * holds the zero point). x, w and y are int8 or uint8, each of its own
 * type; x's zero point and scale, and y's, are scalars; w's are a scalar
 * or one per output channel. Sums wrap in 32 bits, as the specification
 * allows.
 *
 * The host kernel is a direct loop over each output's window, with the
 * weights less their zero points unpacked once per run into the
 * workspace: the reference, written for correctness.
 */
#include "kernels/conv_geom.h"
#include "kernels/cpu/quant.h"

#include <inttypes.h>

/* Where each operand of the two operators is. */
struct qconv_slots {
	int x, w, xzp, wzp, xs, ws, ys, yzp, b; /* -1: the operator has none */
};

static const struct qconv_slots qconv_integer = { 0, 1, 2, 3, -1, -1, -1, -1, -1 };
static const struct qconv_slots qconv_qlinear = { 0, 3, 2, 5, 1, 4, 6, 7, 8 };

static const struct qconv_slots *qconv_slots_of(const struct op_node *node)
{
	return strcmp(node->op_type, "QLinearConv") == 0 ? &qconv_qlinear : &qconv_integer;
}

/* Input i of in, or NULL when i is -1, past n or absent. */
static const struct op_tensor *qconv_in(const struct op_tensor *in, int n, int i)
{
	return i >= 0 && i < n && op_tensor_present(&in[i]) ? &in[i] : NULL;
}

/* ---------------------------------------------------------------- inference */

static int qconv_infer_types(const struct op_infer *x, const struct qconv_slots *sl)
{
	static const char *const scales[] = { "x_scale", "w_scale", "y_scale" };
	const struct op_node *node = x->node;
	const struct op_tensor *xt = &x->in[sl->x], *wt = &x->in[sl->w];
	const struct op_tensor *xzp = qconv_in(x->in, x->n_in, sl->xzp);
	const struct op_tensor *wzp = qconv_in(x->in, x->n_in, sl->wzp);
	const struct op_tensor *b = qconv_in(x->in, x->n_in, sl->b);
	int ret, i;

	if ((ret = quant_check_dtype(node, "x", xt->dtype, QUANT_DTS_Q)) < 0 ||
	    (ret = quant_check_dtype(node, "w", wt->dtype, QUANT_DTS_Q)) < 0)
		return ret;
	if (xzp != NULL && xzp->dtype != xt->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: x_zero_point is %s but x is %s", node->op_type,
				      cep_dtype_name(xzp->dtype), cep_dtype_name(xt->dtype));
	if (wzp != NULL && wzp->dtype != wt->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: w_zero_point is %s but w is %s", node->op_type,
				      cep_dtype_name(wzp->dtype), cep_dtype_name(wt->dtype));
	if (sl->ys < 0)
		return 0;
	for (i = 0; i < 3; i++) {
		int k = i == 0 ? sl->xs : i == 1 ? sl->ws : sl->ys;

		ret = quant_check_dtype(node, scales[i], x->in[k].dtype, OP_DT(CEP_DTYPE_FLOAT32));
		if (ret < 0)
			return ret;
	}
	if (b != NULL && (ret = quant_check_dtype(node, "B", b->dtype, OP_DT(CEP_DTYPE_INT32))) < 0)
		return ret;
	return quant_check_dtype(node, "y_zero_point", x->in[sl->yzp].dtype, QUANT_DTS_Q);
}

/* Whether t (present) is known to hold exactly one element, to hold
 * something else (false, *known true), or not known yet. */
static bool qconv_is_one(const struct op_tensor *t, bool *known)
{
	int64_t n = 1;
	int d;

	*known = t->rank >= 0;
	for (d = 0; *known && d < t->rank; d++) {
		if (!op_dim_fixed(t->dims[d]))
			*known = false;
		else
			n *= t->dims[d];
	}
	return *known && n == 1;
}

/*
 * Checks the zero points, scales and bias against m output channels (m
 * may be symbolic): x's and y's a single value, w's one or a vector of m,
 * both of w's of one shape, B a vector of m. Returns 0 or CEP_ESHAPE.
 */
static int qconv_check_params(const struct op_node *node, const struct qconv_slots *sl,
			      const struct op_tensor *in, int n_in, int64_t m)
{
	static const char *const names[] = { "x_zero_point", "x_scale", "y_scale", "y_zero_point" };
	const int slots[4] = { sl->xzp, sl->xs, sl->ys, sl->yzp };
	const struct op_tensor *wzp = qconv_in(in, n_in, sl->wzp), *ws = qconv_in(in, n_in, sl->ws);
	const struct op_tensor *b = qconv_in(in, n_in, sl->b);
	char st[160], sz[160];
	bool known;
	int i;

	for (i = 0; i < 4; i++) {
		const struct op_tensor *t = qconv_in(in, n_in, slots[i]);

		if (t == NULL || qconv_is_one(t, &known) || !known)
			continue;
		op_dims_format(t, NULL, 0, st, sizeof(st));
		return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be a scalar "
				      "(per tensor)", node->op_type, names[i], st);
	}
	for (i = 0; i < 3; i++) {
		const struct op_tensor *t = i == 0 ? wzp : i == 1 ? ws : b;

		if (t == NULL || t->rank < 0 || (i < 2 && (qconv_is_one(t, &known) || !known)))
			continue;
		if (t->rank == 1 && (!op_dim_fixed(t->dims[0]) || !op_dim_fixed(m) || t->dims[0] == m))
			continue;
		op_dims_format(t, NULL, 0, st, sizeof(st));
		return cep__set_error(CEP_ESHAPE, "%s: %s has shape %s; it must be %s[%" PRId64 "] "
				      "(one value per output channel)", node->op_type,
				      i == 0 ? "w_zero_point" : i == 1 ? "w_scale" : "B", st,
				      i < 2 ? "a scalar or " : "", m);
	}
	if (wzp != NULL && ws != NULL && wzp->rank >= 0 && ws->rank >= 0 &&
	    (wzp->rank != ws->rank ||
	     (wzp->rank == 1 && op_dim_fixed(wzp->dims[0]) && op_dim_fixed(ws->dims[0]) &&
	      wzp->dims[0] != ws->dims[0]))) {
		op_dims_format(ws, NULL, 0, st, sizeof(st));
		op_dims_format(wzp, NULL, 0, sz, sizeof(sz));
		return cep__set_error(CEP_ESHAPE, "%s: w_scale has shape %s but w_zero_point has %s; "
				      "they must have the same shape", node->op_type, st, sz);
	}
	return 0;
}

static int qconv_infer(struct op_infer *x)
{
	const struct qconv_slots *sl = qconv_slots_of(x->node);
	const struct op_node *node = x->node;
	const struct op_tensor *xt = &x->in[sl->x], *wt = &x->in[sl->w];
	struct op_tensor *y = &x->out[0];
	int64_t kernel[CPU_WINDOW_MAX] = { 0 }, group, c, cg, m;
	struct cpu_window w;
	int rank, i, ret;

	ret = qconv_infer_types(x, sl);
	if (ret < 0)
		return ret;
	y->dtype = sl->yzp >= 0 ? x->in[sl->yzp].dtype : CEP_DTYPE_INT32;
	ret = op_attr_check(node, "group", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	group = op_attr_int(node, "group", 1);
	if (group < 1)
		return cep__set_error(CEP_EMODEL, "%s: group is %" PRId64 ", must be >= 1",
				      node->op_type, group);
	rank = xt->rank >= 0 ? xt->rank : wt->rank;
	m = wt->rank >= 1 ? wt->dims[0] : OP_DIM_UNKNOWN;
	ret = qconv_check_params(node, sl, x->in, x->n_in, m);
	if (ret < 0)
		return ret;
	if (rank < 0) {
		y->rank = -1;
		return 0;
	}
	if (rank < 3)
		return cep__set_error(CEP_ESHAPE, "%s: x must have rank >= 3 (N, C, spatial...), "
				      "it has %d", node->op_type, rank);
	if (wt->rank >= 0 && wt->rank != rank)
		return cep__set_error(CEP_ESHAPE, "%s: w has rank %d but x has rank %d",
				      node->op_type, wt->rank, rank);
	conv_geom_kernel(wt, rank - 2, kernel);
	ret = cpu_window_parse(node, rank - 2, kernel, CPU_WINDOW_DILATIONS, &w);
	if (ret < 0)
		return ret;
	c = xt->rank >= 0 ? xt->dims[1] : OP_DIM_UNKNOWN;
	cg = wt->rank >= 0 ? wt->dims[1] : OP_DIM_UNKNOWN;
	if (op_dim_fixed(c) && op_dim_fixed(cg) && (c % group != 0 || c / group != cg))
		return cep__set_error(CEP_ESHAPE, "%s: x has %" PRId64 " channels but w takes %"
				      PRId64 " per group times %" PRId64 " groups", node->op_type,
				      c, cg, group);
	if (op_dim_fixed(m) && m % group != 0)
		return cep__set_error(CEP_ESHAPE, "%s: %" PRId64 " output channels do not divide "
				      "into %" PRId64 " groups", node->op_type, m, group);
	y->rank = rank;
	y->dims[0] = xt->rank >= 0 ? xt->dims[0] : OP_DIM_UNKNOWN;
	y->dims[1] = m;
	if (xt->rank < 0) {
		for (i = 2; i < rank; i++)
			y->dims[i] = OP_DIM_UNKNOWN;
		return 0;
	}
	return cpu_window_out_dims(node, &w, xt, y);
}

/* ----------------------------------------------------------------- geometry */

int cpu_qconv_read(const struct op_node *node, const struct op_tensor *in, int n_in,
		   const struct op_tensor *y, struct cpu_qconv *p)
{
	const struct qconv_slots *sl = qconv_slots_of(node);
	const struct op_tensor *wzp = qconv_in(in, n_in, sl->wzp), *ws = qconv_in(in, n_in, sl->ws);
	struct conv_geom geo;
	bool known;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = conv_geom_init(node, &in[sl->x], &in[sl->w], &geo);
	if (ret < 0)
		return ret;
	ret = qconv_check_params(node, sl, in, n_in, geo.m);
	if (ret < 0)
		return ret;
	cpu_window_geom_init(&geo.w, &in[sl->x], y, &p->g);
	p->batch = geo.batch;
	p->c = geo.c;
	p->m = geo.m;
	p->group = geo.group;
	p->cg = geo.cg;
	p->mg = geo.mg;
	p->ks = geo.ks;
	p->positions = geo.positions;
	p->w_per_channel = (wzp != NULL && !qconv_is_one(wzp, &known)) ||
			   (ws != NULL && !qconv_is_one(ws, &known));
	return 0;
}

/* ------------------------------------------------------------------- kernel */

static int qconv_prepare(struct op_call *c, size_t *workspace)
{
	struct cpu_qconv *p = (struct cpu_qconv *)c->params;
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	ret = cpu_qconv_read(c->node, c->in, c->n_in, &c->out[0], p);
	/* The weights less their zero points, as int32. */
	*workspace = (size_t)(p->m * p->cg * p->ks) * sizeof(int32_t);
	return ret;
}

/* The sum of output position (oz, oy, ox) of channel m over the window,
 * from plane x0 of x (the group's first channel) and the unpacked
 * weights wm of m. */
static uint32_t qconv_window(const struct cpu_qconv *p, const struct op_tensor *xt, int64_t x0,
			     int32_t xz, const int32_t *wm, int64_t oz, int64_t oy, int64_t ox)
{
	const struct cpu_window_geom *g = &p->g;
	int64_t plane = g->in[0] * g->in[1] * g->in[2], ch, kz, ky, kx;
	uint32_t acc = 0;

	for (ch = 0; ch < p->cg; ch++) {
		int64_t xc = x0 + ch * plane;

		for (kz = 0; kz < g->k[0]; kz++) {
			int64_t iz = oz * g->s[0] - g->pb[0] + kz * g->d[0];

			for (ky = 0; ky < g->k[1]; ky++) {
				int64_t iy = oy * g->s[1] - g->pb[1] + ky * g->d[1];
				const int32_t *wk = wm + ((ch * g->k[0] + kz) * g->k[1] + ky) * g->k[2];

				if (iz < 0 || iz >= g->in[0] || iy < 0 || iy >= g->in[1])
					continue;
				for (kx = 0; kx < g->k[2]; kx++) {
					int64_t ix = ox * g->s[2] - g->pb[2] + kx * g->d[2];
					int32_t xv;

					if (ix < 0 || ix >= g->in[2])
						continue;
					xv = (int32_t)cpu_load_i(xt->data, xt->dtype,
								 xc + (iz * g->in[1] + iy) * g->in[2] + ix);
					acc += (uint32_t)((xv - xz) * wk[kx]);
				}
			}
		}
	}
	return acc;
}

static int qconv_run(struct op_call *c)
{
	const struct cpu_qconv *p = (const struct cpu_qconv *)c->params;
	const struct qconv_slots *sl = qconv_slots_of(c->node);
	const struct op_tensor *xt = &c->in[sl->x], *wt = &c->in[sl->w], *y = &c->out[0];
	const struct op_tensor *xzp = qconv_in(c->in, c->n_in, sl->xzp);
	const struct op_tensor *wzp = qconv_in(c->in, c->n_in, sl->wzp);
	const struct op_tensor *xs = qconv_in(c->in, c->n_in, sl->xs);
	const struct op_tensor *ws = qconv_in(c->in, c->n_in, sl->ws);
	const struct op_tensor *ys = qconv_in(c->in, c->n_in, sl->ys);
	const struct op_tensor *yzp = qconv_in(c->in, c->n_in, sl->yzp);
	const struct op_tensor *bt = qconv_in(c->in, c->n_in, sl->b);
	const struct cpu_window_geom *g = &p->g;
	int64_t taps = p->cg * p->ks, plane_in = g->in[0] * g->in[1] * g->in[2];
	int32_t *wq = c->workspace, xz = (int32_t)quant_zp(xzp, 0);
	int64_t n, m, e, oz, oy, ox, lo = 0, hi = 0, yz = quant_zp(yzp, 0);

	for (m = 0; m < p->m; m++) {
		int32_t wz = (int32_t)quant_zp(wzp, p->w_per_channel ? m : 0);

		for (e = 0; e < taps; e++)
			wq[m * taps + e] = (int32_t)cpu_load_i(wt->data, wt->dtype, m * taps + e) - wz;
	}
	if (sl->ys >= 0)
		quant_range(y->dtype, &lo, &hi);
	for (n = 0; n < p->batch; n++) {
		for (m = 0; m < p->m; m++) {
			int64_t x0 = (n * p->group + m / p->mg) * p->cg * plane_in;
			int64_t y0 = (n * p->m + m) * p->positions, k = p->w_per_channel ? m : 0;
			double mult = 1.0;

			if (sl->ys >= 0) {
				mult = quant_round_to(quant_load_d(xs->data, xs->dtype, 0) *
						      quant_load_d(ws->data, ws->dtype, k),
						      QUANT_ROUND_F32);
				mult = quant_round_to(mult / quant_load_d(ys->data, ys->dtype, 0),
						      QUANT_ROUND_F32);
			}
			for (oz = 0, e = 0; oz < g->out[0]; oz++) {
				for (oy = 0; oy < g->out[1]; oy++) {
					for (ox = 0; ox < g->out[2]; ox++, e++) {
						uint32_t acc = qconv_window(p, xt, x0, xz, wq + m * taps,
									    oz, oy, ox);

						if (sl->ys < 0) {
							((int32_t *)y->data)[y0 + e] = (int32_t)acc;
							continue;
						}
						if (bt != NULL)
							acc += (uint32_t)((const int32_t *)bt->data)[m];
						cpu_store_i(y->data, y->dtype, y0 + e,
							    quant_saturate((double)(int32_t)acc * mult,
									   yz, lo, hi));
					}
				}
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "ConvInteger", 10, OP_OPSET_MAX, 2, 4, 1, 1, 0, 0, qconv_infer },
	{ "", "QLinearConv", 10, OP_OPSET_MAX, 8, 9, 1, 1, 0, 0, qconv_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "ConvInteger", 10, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_Q, qconv_prepare, qconv_run },
	{ "", "QLinearConv", 10, OP_OPSET_MAX, BACKEND_HOST, QUANT_DTS_Q, qconv_prepare, qconv_run },
};

const struct op_family op_family_cpu_qconv = {
	"cpu_qconv", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
