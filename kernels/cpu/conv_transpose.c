/*
 * conv_transpose.c — ConvTranspose (opset 1 on): the transposed
 * convolution of X (N, C, in...) with W (C, M / group, kernel...) into Y
 * (N, M, out...), over 1 to 6 spatial dims, with groups, strides,
 * dilations, explicit pads or auto_pad, output_padding, output_shape and
 * an optional bias of M values; float32 and float16, bfloat16 from opset
 * 22. The output size and pads are resolved by kernels/convt_geom.h, which
 * the CUDA kernel shares.
 *
 * Each group of each image is a matrix product and a col2im: the
 * columns, one row per (output channel, kernel position) and one column
 * per input position, are W's group transposed times X's group; each
 * column entry then lands at the output position its input position and
 * kernel offset make (kernels/cpu/col2im.h), entries in the pads dropped.
 * The columns are built a block of output channels at a time, so scratch
 * stays bounded. Half types are widened on loading and narrowed on the
 * final store: everything is computed in float32, the bias first, then
 * each kernel position's sum over the group's input channels.
 */
#include "kernels/cpu/col2im.h"

#include <inttypes.h>

/* Scratch for the columns of a block of output channels, in floats. */
#define CONVT_COL_FLOATS (1024 * 1024)

/* What prepare works out once per plan. */
struct convt_params {
	int64_t mb;            /* output channels per block of columns */
};

/* ---------------------------------------------------------------- inference */

static int convt_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0], *wt = &x->in[1];
	const struct op_tensor *bt = x->n_in > 2 ? &x->in[2] : NULL;
	struct op_tensor *y = &x->out[0];
	int64_t kernel[CONVT_MAX_DIMS], group, c, cw, m;
	struct convt_attrs a;
	int rank, i, ret;

	ret = op_infer_same_dtype(x, 0, 2);
	if (ret < 0)
		return ret;
	y->dtype = xt->dtype;
	rank = xt->rank >= 0 ? xt->rank : wt->rank;
	if (rank < 0) {
		y->rank = -1;
		return 0;
	}
	if (rank < 3)
		return cep__set_error(CEP_ESHAPE, "ConvTranspose: X must have rank >= 3 (N, C, "
				      "spatial...), it has %d", rank);
	if (wt->rank >= 0 && wt->rank != rank)
		return cep__set_error(CEP_ESHAPE, "ConvTranspose: W has rank %d but X has rank %d",
				      wt->rank, rank);
	for (i = 0; i < rank - 2 && i < CONVT_MAX_DIMS; i++)
		kernel[i] = wt->rank >= 0 ? wt->dims[2 + i] : OP_DIM_UNKNOWN;
	ret = convt_attrs_parse(x->node, rank - 2, kernel, &a);
	if (ret < 0)
		return ret;
	group = op_attr_int(x->node, "group", 1);
	c = xt->rank >= 0 ? xt->dims[1] : OP_DIM_UNKNOWN;
	cw = wt->rank >= 0 ? wt->dims[0] : OP_DIM_UNKNOWN;
	m = wt->rank >= 0 && op_dim_fixed(wt->dims[1]) ? wt->dims[1] * group : OP_DIM_UNKNOWN;
	if (op_dim_fixed(c) && op_dim_fixed(cw) && c != cw)
		return cep__set_error(CEP_ESHAPE, "ConvTranspose: X has %" PRId64 " channels but W "
				      "is for %" PRId64, c, cw);
	if (op_dim_fixed(c) && c % group != 0)
		return cep__set_error(CEP_ESHAPE, "ConvTranspose: %" PRId64 " input channels do not "
				      "divide into %" PRId64 " groups", c, group);
	if (op_dim_fixed(m) && m > OP_MAX_NUMEL)
		return cep__set_error(CEP_ELIMIT, "ConvTranspose: %" PRId64 " output channels",
				      m);
	if (bt && op_tensor_present(bt) && bt->rank >= 0) {
		if (bt->rank != 1)
			return cep__set_error(CEP_ESHAPE, "ConvTranspose: B must be 1-D, it has rank %d",
					      bt->rank);
		if (op_dim_fixed(bt->dims[0]) && op_dim_fixed(m) && bt->dims[0] != m)
			return cep__set_error(CEP_ESHAPE, "ConvTranspose: B has %" PRId64 " values for %"
					      PRId64 " output channels", bt->dims[0], m);
	}
	y->rank = rank;
	y->dims[0] = xt->rank >= 0 ? xt->dims[0] : OP_DIM_UNKNOWN;
	y->dims[1] = m;
	for (i = 0; i < rank - 2; i++) {
		ret = convt_out_dim(x->node, &a, i, xt->rank >= 0 ? xt->dims[2 + i] : OP_DIM_UNKNOWN,
				    &y->dims[2 + i], NULL, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------ kernel */

/* The workspace in floats: the weights, one group of X, the columns of a
 * block of mb output channels, their output planes, and the bias. */
static int64_t convt_floats(const struct convt_geom *g, int64_t mb)
{
	const struct convt_col2im *w = &g->win;

	return g->c * g->mg * w->ks + g->cg * w->l + mb * w->ks * w->l + mb * w->p + g->m;
}

static int convt_prepare(struct op_call *c, size_t *workspace)
{
	struct convt_params *p = (struct convt_params *)c->params;
	struct convt_geom g;
	int64_t per;
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	ret = convt_geom_init(c->node, &c->in[0], &c->in[1], &g);
	if (ret < 0)
		return ret;
	per = g.win.ks * g.win.l + g.win.p;
	p->mb = per > 0 ? CONVT_COL_FLOATS / per : g.mg;
	if (p->mb > g.mg)
		p->mb = g.mg;
	if (p->mb < 1)
		p->mb = 1;
	*workspace = (size_t)convt_floats(&g, p->mb) * sizeof(float);
	return 0;
}

/* Loads n elements of t from element at into the floats dst. */
static void convt_load(float *dst, const struct op_tensor *t, int64_t at, int64_t n)
{
	int64_t i;

	if (t->dtype == CEP_DTYPE_FLOAT32) {
		memcpy(dst, (const float *)t->data + at, (size_t)n * sizeof(float));
		return;
	}
	for (i = 0; i < n; i++)
		dst[i] = cpu_load_f(t->data, t->dtype, at + i);
}

/* cols (mb * ks rows of l) = the group's weights for output channels
 * m0.. of the group (transposed) times the group's input xf (cg rows of
 * l), summed over the input channels in order. */
static void convt_columns(const struct convt_geom *g, const float *wf, const float *xf,
			  int64_t grp, int64_t m0, int64_t mb, float *cols)
{
	int64_t rows = mb * g->win.ks, l = g->win.l, ci, r, i;

	memset(cols, 0, (size_t)(rows * l) * sizeof(float));
	for (ci = 0; ci < g->cg; ci++) {
		const float *xr = xf + ci * l;
		const float *wr = wf + (grp * g->cg + ci) * g->mg * g->win.ks + m0 * g->win.ks;

		for (r = 0; r < rows; r++) {
			float wv = wr[r];
			float *cr = cols + r * l;

			for (i = 0; i < l; i++)
				cr[i] += wv * xr[i];
		}
	}
}

static int convt_run(struct op_call *c)
{
	const struct convt_params *p = (const struct convt_params *)c->params;
	const struct op_tensor *xt = &c->in[0], *wt = &c->in[1], *yt = &c->out[0];
	const struct op_tensor *bt = c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
	float *wf = c->workspace, *xf, *cols, *acc, *bias;
	int64_t n, grp, m0, mi, o;
	struct convt_geom g;
	int ret;

	ret = convt_geom_init(c->node, xt, wt, &g);
	if (ret < 0)
		return ret;
	if (g.batch == 0 || g.m == 0 || g.win.p == 0)
		return 0;
	xf = wf + g.c * g.mg * g.win.ks;
	cols = xf + g.cg * g.win.l;
	acc = cols + p->mb * g.win.ks * g.win.l;
	bias = acc + p->mb * g.win.p;
	convt_load(wf, wt, 0, g.c * g.mg * g.win.ks);
	for (o = 0; o < g.m; o++)
		bias[o] = bt ? cpu_load_f(bt->data, bt->dtype, o) : 0.0f;
	for (n = 0; n < g.batch; n++) {
		for (grp = 0; grp < g.group; grp++) {
			convt_load(xf, xt, (n * g.c + grp * g.cg) * g.win.l, g.cg * g.win.l);
			for (m0 = 0; m0 < g.mg; m0 += p->mb) {
				int64_t mb = g.mg - m0 < p->mb ? g.mg - m0 : p->mb;

				convt_columns(&g, wf, xf, grp, m0, mb, cols);
				for (mi = 0; mi < mb; mi++) {
					int64_t ch = grp * g.mg + m0 + mi;
					int64_t y0 = (n * g.m + ch) * g.win.p;
					float *plane = acc + mi * g.win.p;

					for (o = 0; o < g.win.p; o++)
						plane[o] = bias[ch];
					cpu_col2im_add_f(&g.win, cols + mi * g.win.ks * g.win.l, plane);
					if (yt->dtype == CEP_DTYPE_FLOAT32) {
						memcpy((float *)yt->data + y0, plane,
						       (size_t)g.win.p * sizeof(float));
						continue;
					}
					for (o = 0; o < g.win.p; o++)
						cpu_store_f(yt->data, yt->dtype, y0 + o, plane[o]);
				}
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "ConvTranspose", 1, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, convt_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "ConvTranspose", 1, 21, BACKEND_HOST,
	  OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16), convt_prepare, convt_run },
	{ "", "ConvTranspose", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, convt_prepare,
	  convt_run },
};

const struct op_family op_family_cpu_conv_transpose = {
	"cpu_conv_transpose", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
