/*
 * conv.c — Conv (opset 7 on): 1-D, 2-D and 3-D convolution with groups
 * (depthwise included), strides, dilations, explicit pads or auto_pad, and
 * an optional bias; float32 and float16, bfloat16 from opset 22. Also the
 * internal FusedConv of domain com.cudaep (opset 1), which the optimizer
 * makes of a Conv and the Relu after it, or of a Conv, an Add of a tensor
 * Z of the same shape and a Relu (engine/fuse.c): the same convolution,
 * with Z added and the Relu applied in float32 before the one rounding to
 * the output type.
 *
 * Each group of each image is one matrix product: the group's weights
 * (Mg x K, K = Cg times the kernel size) times the input unrolled into
 * columns (im2col, K x P for P output positions). The columns are built in
 * the workspace a chunk of positions at a time, so scratch stays bounded
 * whatever the image size; the weights are packed once per run into panels
 * of CONV_MR rows, and a register-tiled loop computes CONV_MR x CONV_NR
 * blocks of the output from them. Groups of fewer than CONV_MR output
 * channels (depthwise) take a row-at-a-time loop instead, where a tile
 * would mostly compute padding. Half types are widened while packing and
 * narrowed on the final store: everything is computed in float32.
 */
#include "kernels/conv_geom.h"

#include <inttypes.h>

/* The tile: 6 x 16 accumulators fit the vector registers of both gcc's and
 * clang's code at -O2 on x86-64 without spilling. */
#define CONV_MR 6
#define CONV_NR 16

/* Scratch for one chunk of columns; a chunk is at least CONV_NR wide. */
#define CONV_COL_BYTES (512 * 1024)

/* What prepare works out once per plan. */
struct conv_params {
	struct cpu_window w;   /* pads resolved */
	int64_t group;
	int64_t cg, mg;        /* input and output channels per group */
	int64_t ks;            /* kernel size: product of kernel dims */
	int64_t k;             /* rows of the columns: cg * ks */
	int64_t p;             /* output positions per image */
	int64_t chunk;         /* columns per chunk, a multiple of CONV_NR */
	int64_t panels;        /* weight panels per group: ceil(mg / CONV_MR) */
	bool relu;             /* FusedConv: the activation is Relu */
};

/* What is done to a row of outputs, in float32, before it is stored:
 * FusedConv's Z added (z laid out like Y) and its Relu. */
struct conv_post {
	const struct op_tensor *z;   /* NULL: none */
	bool relu;
};

/* ---------------------------------------------------------------- inference */

static int conv_infer(struct op_infer *x)
{
	const struct op_tensor *xt = &x->in[0], *wt = &x->in[1];
	const struct op_tensor *bt = x->n_in > 2 ? &x->in[2] : NULL;
	struct op_tensor *y = &x->out[0];
	int64_t kernel[CPU_WINDOW_MAX] = { 0 }, group, c, cg, m;
	struct cpu_window w;
	int rank, i, ret;

	ret = op_infer_same_dtype(x, 0, 2);
	if (ret < 0)
		return ret;
	y->dtype = xt->dtype;
	ret = op_attr_check(x->node, "group", OP_ATTR_INT);
	if (ret < 0)
		return ret;
	group = op_attr_int(x->node, "group", 1);
	if (group < 1)
		return cep__set_error(CEP_EMODEL, "Conv: group is %" PRId64 ", must be >= 1", group);
	rank = xt->rank >= 0 ? xt->rank : wt->rank;
	if (rank < 0) {
		y->rank = -1;
		return 0;
	}
	if (rank < 3)
		return cep__set_error(CEP_ESHAPE, "Conv: X must have rank >= 3 (N, C, spatial...), "
				      "it has %d", rank);
	if (wt->rank >= 0 && wt->rank != rank)
		return cep__set_error(CEP_ESHAPE, "Conv: W has rank %d but X has rank %d",
				      wt->rank, rank);
	conv_geom_kernel(wt, rank - 2, kernel);
	ret = cpu_window_parse(x->node, rank - 2, kernel, CPU_WINDOW_DILATIONS, &w);
	if (ret < 0)
		return ret;
	c = xt->rank >= 0 ? xt->dims[1] : OP_DIM_UNKNOWN;
	m = wt->rank >= 0 ? wt->dims[0] : OP_DIM_UNKNOWN;
	cg = wt->rank >= 0 ? wt->dims[1] : OP_DIM_UNKNOWN;
	if (op_dim_fixed(c) && op_dim_fixed(cg) && (c % group != 0 || c / group != cg))
		return cep__set_error(CEP_ESHAPE, "Conv: X has %" PRId64 " channels but W takes %"
				      PRId64 " per group times %" PRId64 " groups", c, cg, group);
	if (op_dim_fixed(m) && m % group != 0)
		return cep__set_error(CEP_ESHAPE, "Conv: %" PRId64 " output channels do not divide "
				      "into %" PRId64 " groups", m, group);
	if (bt && op_tensor_present(bt) && bt->rank >= 0) {
		if (bt->rank != 1)
			return cep__set_error(CEP_ESHAPE, "Conv: B must be 1-D, it has rank %d",
					      bt->rank);
		if (op_dim_fixed(bt->dims[0]) && op_dim_fixed(m) && bt->dims[0] != m)
			return cep__set_error(CEP_ESHAPE, "Conv: B has %" PRId64 " values for %" PRId64
					      " output channels", bt->dims[0], m);
	}
	y->rank = rank;
	y->dims[0] = xt->rank >= 0 ? xt->dims[0] : OP_DIM_UNKNOWN;
	y->dims[1] = m;
	if (xt->rank < 0) {
		for (i = 2; i < rank; i++)
			y->dims[i] = OP_DIM_UNKNOWN;
		return 0;
	}
	return cpu_window_out_dims(x->node, &w, xt, y);
}

/* ------------------------------------------------------------------ prepare */

static int conv_prepare(struct op_call *c, size_t *workspace)
{
	struct conv_params *p = (struct conv_params *)c->params;
	struct conv_geom geo;
	int64_t floats;
	int ret;

	_Static_assert(sizeof(*p) <= OP_PARAMS_BYTES, "params too large");
	memset(p, 0, sizeof(*p));
	ret = conv_geom_init(c->node, &c->in[0], &c->in[1], &geo);
	if (ret < 0)
		return ret;
	p->w = geo.w;
	p->ks = geo.ks;
	p->p = geo.positions;
	p->group = geo.group;
	p->cg = geo.cg;
	p->mg = geo.mg;
	p->k = p->cg * p->ks;
	p->panels = (p->mg + CONV_MR - 1) / CONV_MR;
	/* As many columns as fit the chunk budget, in whole tiles, but no
	 * more than the image has. */
	p->chunk = (int64_t)(CONV_COL_BYTES / sizeof(float)) / (p->k > 0 ? p->k : 1);
	p->chunk = p->chunk / CONV_NR * CONV_NR;
	if (p->chunk < CONV_NR)
		p->chunk = CONV_NR;
	if (p->chunk > (p->p + CONV_NR - 1) / CONV_NR * CONV_NR)
		p->chunk = (p->p + CONV_NR - 1) / CONV_NR * CONV_NR;
	if (p->chunk == 0)
		p->chunk = CONV_NR;
	/* Packed weights of every group, one chunk of columns, one row of
	 * accumulators for the small-group loop, and the bias in float32. */
	floats = p->group * p->panels * CONV_MR * p->k + p->k * p->chunk + p->chunk +
		 p->group * p->mg;
	*workspace = (size_t)floats * sizeof(float);
	return 0;
}

/* ------------------------------------------------------------------ packing */

/* Packs the weights of every group into panels: panel q of group g holds
 * rows g * mg + q * MR .. + MR (zero past mg) as ap[kk * MR + i]. */
static void conv_pack_weights(const struct conv_params *p, const struct op_tensor *wt,
			      float *ap)
{
	int64_t g, q, kk;
	int i;

	for (g = 0; g < p->group; g++) {
		for (q = 0; q < p->panels; q++) {
			float *dst = ap + (g * p->panels + q) * CONV_MR * p->k;

			for (i = 0; i < CONV_MR; i++) {
				int64_t m = q * CONV_MR + i;
				int64_t row = (g * p->mg + m) * p->k;

				if (m >= p->mg) {
					for (kk = 0; kk < p->k; kk++)
						dst[kk * CONV_MR + i] = 0.0f;
				} else if (wt->dtype == CEP_DTYPE_FLOAT32) {
					const float *src = (const float *)wt->data + row;

					for (kk = 0; kk < p->k; kk++)
						dst[kk * CONV_MR + i] = src[kk];
				} else {
					for (kk = 0; kk < p->k; kk++)
						dst[kk * CONV_MR + i] = cpu_load_f(wt->data, wt->dtype,
										   row + kk);
				}
			}
		}
	}
}

/* dst[t] = element ix0 + t * step of the row src, for t in [0, n), where
 * every index is inside the row. */
static void conv_row_load(float *dst, const void *src, cep_dtype dt, int64_t ix0,
			  int64_t step, int64_t n)
{
	int64_t t;

	if (dt == CEP_DTYPE_FLOAT32) {
		const float *s = (const float *)src + ix0;

		if (step == 1) {
			memcpy(dst, s, (size_t)n * sizeof(float));
			return;
		}
		for (t = 0; t < n; t++)
			dst[t] = s[t * step];
		return;
	}
	for (t = 0; t < n; t++)
		dst[t] = cpu_load_f(src, dt, ix0 + t * step);
}

/*
 * im2col of one chunk: output positions [j0, j0 + nc) of the image whose
 * group input starts at element x0 of xt, into cols (p->k rows of ld
 * floats; the columns from nc to ld are zeroed). Row kk is input channel
 * kk / ks at kernel offset kk % ks; positions falling in the pads read 0.
 */
static void conv_im2col(const struct conv_params *p, const struct cpu_window_geom *g,
			const struct op_tensor *xt, int64_t x0, int64_t j0, int64_t nc,
			int64_t ld, float *cols)
{
	int64_t plane = g->in[0] * g->in[1] * g->in[2];
	int64_t kk;

	for (kk = 0; kk < p->k; kk++) {
		int64_t ch = kk / p->ks, r = kk % p->ks;
		int64_t kx = r % g->k[2], ky = r / g->k[2] % g->k[1], kz = r / g->k[2] / g->k[1];
		int64_t xc = x0 + ch * plane;
		int64_t ox = j0 % g->out[2], oy = j0 / g->out[2] % g->out[1];
		int64_t oz = j0 / g->out[2] / g->out[1];
		float *dst = cols + kk * ld;
		int64_t left = nc;

		while (left > 0) {
			int64_t run = g->out[2] - ox < left ? g->out[2] - ox : left;
			int64_t iz = oz * g->s[0] - g->pb[0] + kz * g->d[0];
			int64_t iy = oy * g->s[1] - g->pb[1] + ky * g->d[1];
			int64_t ix0 = ox * g->s[2] - g->pb[2] + kx * g->d[2];
			int64_t lo = 0, hi = 0;

			if (iz >= 0 && iz < g->in[0] && iy >= 0 && iy < g->in[1] &&
			    ix0 < g->in[2]) {
				/* The run [lo, hi) whose columns land inside the row. */
				if (ix0 < 0)
					lo = (-ix0 + g->s[2] - 1) / g->s[2];
				hi = (g->in[2] - 1 - ix0) / g->s[2] + 1;
				if (hi > run)
					hi = run;
				if (lo > hi)
					lo = hi;
			}
			memset(dst, 0, (size_t)lo * sizeof(float));
			if (hi > lo)
				conv_row_load(dst + lo, xt->data, xt->dtype,
					      xc + (iz * g->in[1] + iy) * g->in[2] + ix0 + lo * g->s[2],
					      g->s[2], hi - lo);
			memset(dst + hi, 0, (size_t)(run - hi) * sizeof(float));
			dst += run;
			left -= run;
			ox += run;
			if (ox == g->out[2]) {
				ox = 0;
				if (++oy == g->out[1]) {
					oy = 0;
					oz++;
				}
			}
		}
		memset(dst, 0, (size_t)(ld - nc) * sizeof(float));
	}
}

/* ------------------------------------------------------------------ compute */

/* acc = A panel (k x MR, packed) times B (k rows of ldb floats, CONV_NR
 * columns used). */
static void conv_tile(int64_t k, const float *restrict a, const float *restrict b,
		      int64_t ldb, float acc[CONV_MR][CONV_NR])
{
	float t[CONV_MR][CONV_NR];
	int64_t kk;
	int i, j;

	memset(t, 0, sizeof(t));
	for (kk = 0; kk < k; kk++) {
		const float *ak = a + kk * CONV_MR, *bk = b + kk * ldb;

		for (i = 0; i < CONV_MR; i++)
			for (j = 0; j < CONV_NR; j++)
				t[i][j] += ak[i] * bk[j];
	}
	memcpy(acc, t, sizeof(t));
}

/* Applies q to the n outputs in v whose first element is y0 of Y. */
static void conv_post_apply(const struct conv_post *q, float *v, int64_t y0, int64_t n)
{
	int64_t j;

	if (q->z != NULL) {
		for (j = 0; j < n; j++)
			v[j] += cpu_load_f(q->z->data, q->z->dtype, y0 + j);
	}
	if (q->relu) {
		/* As the Relu kernel: NaN becomes 0, like anything not above 0. */
		for (j = 0; j < n; j++)
			v[j] = v[j] > 0.0f ? v[j] : 0.0f;
	}
}

/* Stores n floats of v as elements y0.. of Y. */
static void conv_row_store(const struct op_tensor *yt, int64_t y0, const float *v, int64_t n)
{
	int64_t j;

	if (yt->dtype == CEP_DTYPE_FLOAT32) {
		memcpy((float *)yt->data + y0, v, (size_t)n * sizeof(float));
		return;
	}
	for (j = 0; j < n; j++)
		cpu_store_f(yt->data, yt->dtype, y0 + j, v[j]);
}

/* Stores rows [0, mr) and columns [0, nr) of acc plus the bias of each row
 * into y (element y0 of row 0, rows ldy apart), through q. */
static void conv_store(float acc[CONV_MR][CONV_NR], int mr, int nr, const float *bias,
		       const struct conv_post *q, const struct op_tensor *yt, int64_t y0,
		       int64_t ldy)
{
	int i, j;

	for (i = 0; i < mr; i++) {
		float b = bias ? bias[i] : 0.0f;

		for (j = 0; j < nr; j++)
			acc[i][j] += b;
		conv_post_apply(q, acc[i], y0 + i * ldy, nr);
		conv_row_store(yt, y0 + i * ldy, acc[i], nr);
	}
}

/* The output rows of a group too small for tiles: row by row, each an
 * accumulation of scaled column rows (vectorizes along the columns). */
static void conv_rows(const struct conv_params *p, const float *ap, const float *cols,
		      int64_t ld, int64_t nc, const float *bias, float *acc,
		      const struct conv_post *q, const struct op_tensor *yt, int64_t y0)
{
	int64_t m, kk, j;

	for (m = 0; m < p->mg; m++) {
		float b = bias ? bias[m] : 0.0f;

		for (j = 0; j < nc; j++)
			acc[j] = b;
		for (kk = 0; kk < p->k; kk++) {
			const float *ck = cols + kk * ld;
			float wv = ap[kk * CONV_MR + m];

			for (j = 0; j < nc; j++)
				acc[j] += wv * ck[j];
		}
		conv_post_apply(q, acc, y0 + m * p->p, nc);
		conv_row_store(yt, y0 + m * p->p, acc, nc);
	}
}

/*
 * One chunk of one group of one image: output channels of the group (the
 * first at y0 of yt, planes p->p apart), columns [0, nc) of cols (ld
 * apart) standing for nc consecutive positions. bias holds the group's
 * p->mg values or is NULL; acc is a row of scratch for the small path.
 */
static void conv_chunk(const struct conv_params *p, const float *ap, const float *cols,
		       int64_t ld, int64_t nc, const float *bias, float *acc,
		       const struct conv_post *q, const struct op_tensor *yt, int64_t y0)
{
	int64_t jb, k;

	if (p->mg < CONV_MR) {
		conv_rows(p, ap, cols, ld, nc, bias, acc, q, yt, y0);
		return;
	}
	/* Each column block stays in cache while every panel passes it. */
	for (jb = 0; jb < nc; jb += CONV_NR) {
		int nr = nc - jb < CONV_NR ? (int)(nc - jb) : CONV_NR;

		for (k = 0; k < p->panels; k++) {
			float tile[CONV_MR][CONV_NR];
			int64_t m0 = k * CONV_MR;
			int mr = p->mg - m0 < CONV_MR ? (int)(p->mg - m0) : CONV_MR;

			conv_tile(p->k, ap + m0 * p->k, cols + jb, ld, tile);
			conv_store(tile, mr, nr, bias ? bias + m0 : NULL, q, yt,
				   y0 + m0 * p->p + jb, p->p);
		}
	}
}

static int conv_run(struct op_call *c)
{
	const struct conv_params *p = (const struct conv_params *)c->params;
	const struct op_tensor *xt = &c->in[0], *wt = &c->in[1], *yt = &c->out[0];
	const struct op_tensor *bt = c->n_in > 2 && op_tensor_present(&c->in[2]) ? &c->in[2] : NULL;
	struct conv_post q = {
		.z = c->n_in > 3 && op_tensor_present(&c->in[3]) ? &c->in[3] : NULL,
		.relu = p->relu,
	};
	float *ap = c->workspace;
	float *cols = ap + p->group * p->panels * CONV_MR * p->k;
	float *acc = cols + p->k * p->chunk;
	float *bias = acc + p->chunk;
	int64_t batch = xt->dims[0], plane_in, n, g, j0, m;
	struct cpu_window_geom geo;

	if (batch == 0 || p->p == 0 || p->mg == 0)
		return 0;
	cpu_window_geom_init(&p->w, xt, yt, &geo);
	plane_in = geo.in[0] * geo.in[1] * geo.in[2];
	conv_pack_weights(p, wt, ap);
	for (m = 0; bt && m < p->group * p->mg; m++)
		bias[m] = cpu_load_f(bt->data, bt->dtype, m);
	for (n = 0; n < batch; n++) {
		for (g = 0; g < p->group; g++) {
			int64_t x0 = (n * p->group + g) * p->cg * plane_in;
			int64_t y0 = (n * p->group + g) * p->mg * p->p;

			for (j0 = 0; j0 < p->p; j0 += p->chunk) {
				int64_t nc = p->p - j0 < p->chunk ? p->p - j0 : p->chunk;
				int64_t ld = (nc + CONV_NR - 1) / CONV_NR * CONV_NR;

				conv_im2col(p, &geo, xt, x0, j0, nc, ld, cols);
				conv_chunk(p, ap + g * p->panels * CONV_MR * p->k, cols, ld, nc,
					   bt ? bias + g * p->mg : NULL, acc, &q, yt, y0 + j0);
			}
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- FusedConv */

/* Inputs X, W, B as Conv's, and Z; the attributes of Conv and activation. */
static int fused_infer(struct op_infer *x)
{
	struct op_infer conv = *x;
	const struct op_tensor *z = x->n_in > 3 && op_tensor_present(&x->in[3]) ? &x->in[3] : NULL;
	const struct op_tensor *y = &x->out[0];
	int i, ret;

	ret = conv_fused_activation(x->node, NULL);
	if (ret < 0)
		return ret;
	conv.n_in = x->n_in > 3 ? 3 : x->n_in;
	ret = conv_infer(&conv);
	if (ret < 0 || z == NULL)
		return ret;
	if (z->dtype != y->dtype)
		return cep__set_error(CEP_EDTYPE, "FusedConv: Z is %s but Y is %s",
				      cep_dtype_name(z->dtype), cep_dtype_name(y->dtype));
	if (z->rank < 0 || y->rank < 0)
		return 0;
	if (z->rank != y->rank)
		return cep__set_error(CEP_ESHAPE, "FusedConv: Z has rank %d but Y has rank %d",
				      z->rank, y->rank);
	for (i = 0; i < y->rank; i++) {
		if (op_dim_fixed(z->dims[i]) && op_dim_fixed(y->dims[i]) && z->dims[i] != y->dims[i])
			return cep__set_error(CEP_ESHAPE, "FusedConv: Z has %" PRId64 " in dimension %d "
					      "but Y has %" PRId64, z->dims[i], i, y->dims[i]);
	}
	return 0;
}

static int fused_prepare(struct op_call *c, size_t *workspace)
{
	struct conv_params *p = (struct conv_params *)c->params;
	const struct op_tensor *z = c->n_in > 3 && op_tensor_present(&c->in[3]) ? &c->in[3] : NULL;
	bool relu = false;
	int ret;

	ret = conv_fused_activation(c->node, &relu);
	if (ret < 0)
		return ret;
	/* Z is read with Y's indices: it must have Y's very shape. */
	if (z != NULL && (z->rank != c->out[0].rank ||
			  memcmp(z->dims, c->out[0].dims, sizeof(int64_t) * (size_t)z->rank) != 0))
		return cep__set_error(CEP_ESHAPE, "FusedConv: Z does not have the shape of Y");
	ret = conv_prepare(c, workspace);
	p->relu = relu;
	return ret;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "Conv", 1, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, conv_infer },
	{ OP_DOMAIN_CUDAEP, "FusedConv", 1, 1, 3, 4, 1, 1, 0, OP_INTERNAL, fused_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Conv", 1, 21, BACKEND_HOST, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  conv_prepare, conv_run },
	{ "", "Conv", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, conv_prepare, conv_run },
	{ OP_DOMAIN_CUDAEP, "FusedConv", 1, 1, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64, fused_prepare,
	  conv_run },
};

const struct op_family op_family_cpu_conv = {
	"cpu_conv", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
