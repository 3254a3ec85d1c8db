/*
 * col2im.c — Col2Im (opset 18): the inverse of the im2col unfolding,
 * as PyTorch's fold. The input (N, C * prod(block_shape), L) holds, for
 * each image and channel, one column of prod(block_shape) entries per
 * block position, L of them; each entry is added into the image of
 * image_shape at the position its kernel offset and block position make
 * (kernels/convt_geom.h), with strides, dilations and pads; entries that
 * land in the pads are dropped. The output is (N, C, image_shape...).
 * Every stored type: floats summed in float32 (half types rounded once at
 * the end), float64 in double, integers in int64 wrapping to their width,
 * bool as a logical or.
 *
 * image_shape and block_shape are int64 inputs: the output's shape
 * depends on their values, which inference uses when they are known (a
 * constant, or values the planner read from the run). The kernel reads
 * them again and checks them against the plan.
 *
 * Also the adding of columns into an image that ConvTranspose shares
 * (kernels/cpu/col2im.h).
 */
#include "kernels/cpu/col2im.h"

#include <inttypes.h>

#include "kernels/cpu/shapeops.h"

/* The largest image or block size along a dimension. */
#define COL2IM_SIZE_MAX INT64_C(0x7fffffff)

/* ------------------------------------------------------------- the core */

/*
 * For each kernel position, each row of block positions (every dim but
 * the last) whose outer coordinates land inside the image, then the run
 * of the last dim that lands inside it.
 */
#define COL2IM_ADD(name, T)                                                                  \
	void name(const struct convt_col2im *g, const T *cols, T *img)                       \
	{                                                                                    \
		int n = g->n, last = g->n - 1, i;                                            \
		int64_t nb = g->blocks[last], ni = g->image[last], s = g->stride[last];      \
		int64_t rows = nb > 0 ? g->l / nb : 0, kk, r;                                \
                                                                                             \
		for (kk = 0; kk < g->ks; kk++) {                                             \
			int64_t kidx[CONVT_MAX_DIMS], rem = kk;                              \
			int64_t o0, lo, hi, t;                                               \
                                                                                             \
			for (i = n - 1; i >= 0; i--) {                                       \
				kidx[i] = rem % g->block[i];                                 \
				rem /= g->block[i];                                          \
			}                                                                    \
			o0 = kidx[last] * g->dilation[last] - g->pad_begin[last];            \
			lo = o0 < 0 ? (-o0 + s - 1) / s : 0;                                 \
			hi = o0 < ni ? (ni - 1 - o0) / s + 1 : 0;                            \
			if (hi > nb)                                                         \
				hi = nb;                                                     \
			if (lo >= hi)                                                        \
				continue;                                                    \
			for (r = 0; r < rows; r++) {                                         \
				int64_t off = 0, rr = r;                                     \
				const T *src = cols + kk * g->l + r * nb;                    \
				T *dst;                                                      \
				bool in = true;                                              \
				int64_t lidx[CONVT_MAX_DIMS];                                \
                                                                                             \
				for (i = last - 1; i >= 0; i--) {                            \
					lidx[i] = rr % g->blocks[i];                         \
					rr /= g->blocks[i];                                  \
				}                                                            \
				for (i = 0; i < last && in; i++) {                           \
					int64_t o = lidx[i] * g->stride[i] - g->pad_begin[i] + \
						    kidx[i] * g->dilation[i];                \
                                                                                             \
					in = o >= 0 && o < g->image[i];                      \
					off = off * g->image[i] + o;                         \
				}                                                            \
				if (!in)                                                     \
					continue;                                            \
				dst = img + off * ni + o0;                                   \
				for (t = lo; t < hi; t++)                                    \
					dst[t * s] += src[t];                                \
			}                                                                    \
		}                                                                            \
	}

COL2IM_ADD(cpu_col2im_add_f, float)
COL2IM_ADD(cpu_col2im_add_d, double)
COL2IM_ADD(cpu_col2im_add_u, uint64_t)

/* ------------------------------------------------------------ inference */

/* Reads the n sizes of the list input t (values on the host) into v,
 * each in [1, COL2IM_SIZE_MAX]. */
static int col2im_sizes(const struct op_node *node, const struct op_tensor *t,
			const char *what, int n, int64_t *v)
{
	int i;

	for (i = 0; i < n; i++) {
		v[i] = shapeops_at(t, i);
		if (v[i] < 1 || v[i] > COL2IM_SIZE_MAX)
			return cep__set_error(CEP_EINVAL, "%s: %s[%d] is %" PRId64 ", it must be in "
					      "1..%" PRId64, node->op_type, what, i, v[i],
					      COL2IM_SIZE_MAX);
	}
	return 0;
}

/*
 * The geometry of node over input, image_shape and block_shape as far as
 * it is known: *n the spatial dims (0: not known yet); w's image and
 * block where the values are known (*have_image, *have_block), its
 * blocks too when both are. Checks every attribute and value it sees.
 */
static int col2im_geom(const struct op_node *node, const struct op_tensor *ishape,
		       const struct op_tensor *bshape, int *n, struct convt_col2im *w,
		       bool *have_image, bool *have_block)
{
	int64_t ni = -1, nb = -1, pe[CONVT_MAX_DIMS], numel = 1;
	int i, ret;

	memset(w, 0, sizeof(*w));
	*n = 0;
	*have_image = *have_block = false;
	ret = shapeops_list_check(node, ishape, "image_shape", SHAPEOPS_INT64, &ni);
	if (ret == 0)
		ret = shapeops_list_check(node, bshape, "block_shape", SHAPEOPS_INT64, &nb);
	if (ret < 0)
		return ret;
	if (ni >= 0 && nb >= 0 && ni != nb)
		return cep__set_error(CEP_ESHAPE, "Col2Im: image_shape has %" PRId64 " values but "
				      "block_shape %" PRId64, ni, nb);
	if (ni < 0)
		ni = nb;
	if (ni < 0)
		return 0;
	if (ni < 1 || ni > CONVT_MAX_DIMS)
		return cep__set_error(CEP_EUNSUPPORTED, "Col2Im: %" PRId64 " spatial dimensions, "
				      "only 1 to %d are supported", ni, CONVT_MAX_DIMS);
	*n = (int)ni;
	ret = convt_col2im_attrs(node, *n, w, pe);
	if (ret < 0)
		return ret;
	if (ishape->data != NULL) {
		ret = col2im_sizes(node, ishape, "image_shape", *n, w->image);
		if (ret < 0)
			return ret;
		for (i = 0; i < *n; i++) {
			numel *= w->image[i];
			if (numel > OP_MAX_NUMEL)
				return cep__set_error(CEP_ELIMIT, "Col2Im: image_shape makes more than "
						      "2^40 elements");
		}
		*have_image = true;
	}
	if (bshape->data != NULL) {
		ret = col2im_sizes(node, bshape, "block_shape", *n, w->block);
		if (ret < 0)
			return ret;
		w->ks = 1;
		for (i = 0; i < *n; i++) {
			w->ks *= w->block[i];
			if (w->ks > OP_MAX_NUMEL)
				return cep__set_error(CEP_ELIMIT, "Col2Im: block_shape makes more than "
						      "2^40 elements");
		}
		*have_block = true;
	}
	if (*have_image && *have_block)
		return convt_col2im_blocks(node, w, pe);
	return 0;
}

static int col2im_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor *out = &x->out[0];
	bool have_image, have_block;
	struct convt_col2im w;
	int n, i, ret;

	out->dtype = in->dtype;
	out->rank = -1;
	if (in->rank >= 0 && in->rank != 3)
		return cep__set_error(CEP_ESHAPE, "Col2Im: the input must be 3-D (N, C times the "
				      "block size, L), it has rank %d", in->rank);
	ret = col2im_geom(x->node, &x->in[1], &x->in[2], &n, &w, &have_image, &have_block);
	if (ret < 0 || n == 0)
		return ret;
	out->rank = n + 2;
	for (i = 0; i < out->rank; i++)
		out->dims[i] = OP_DIM_UNKNOWN;
	if (in->rank == 3)
		out->dims[0] = in->dims[0];
	for (i = 0; have_image && i < n; i++)
		out->dims[2 + i] = w.image[i];
	if (!have_block || in->rank != 3)
		return 0;
	if (op_dim_fixed(in->dims[1])) {
		if (in->dims[1] % w.ks != 0)
			return cep__set_error(CEP_ESHAPE, "Col2Im: the input's %" PRId64 " rows are "
					      "not a multiple of the block size %" PRId64,
					      in->dims[1], w.ks);
		out->dims[1] = in->dims[1] / w.ks;
	} else if (w.ks == 1) {
		out->dims[1] = in->dims[1];
	}
	if (have_image && op_dim_fixed(in->dims[2]) && in->dims[2] != w.l)
		return cep__set_error(CEP_ESHAPE, "Col2Im: the input has %" PRId64 " columns but "
				      "image_shape, block_shape and the attributes make %" PRId64
				      " blocks", in->dims[2], w.l);
	return 0;
}

/* ------------------------------------------------------------------ kernel */

/* The rows and columns of one channel, and the image, from the shapes
 * alone (the planner gives prepare no values). */
static void col2im_sizes_of(const struct op_call *c, int64_t *cols, int64_t *img)
{
	const struct op_tensor *in = &c->in[0], *out = &c->out[0];
	int64_t ch = out->dims[1];

	*cols = ch > 0 ? in->dims[1] / ch * in->dims[2] : 0;
	*img = op_dims_product(out, 2, out->rank);
}

static int col2im_prepare(struct op_call *c, size_t *workspace)
{
	int64_t cols, img;

	col2im_sizes_of(c, &cols, &img);
	*workspace = (size_t)(cols + img) * sizeof(uint64_t);
	return 0;
}

static int col2im_run(struct op_call *c)
{
	const struct op_tensor *in = &c->in[0], *out = &c->out[0];
	bool fl = cpu_is_float(in->dtype), have_image, have_block;
	int64_t cols, img, ch = out->dims[1], b, k, j;
	struct convt_col2im w;
	int n, i, ret;

	ret = col2im_geom(c->node, &c->in[1], &c->in[2], &n, &w, &have_image, &have_block);
	if (ret < 0)
		return ret;
	col2im_sizes_of(c, &cols, &img);
	for (i = 0; i < n; i++) {
		if (w.image[i] != out->dims[2 + i])
			return cep__set_error(CEP_ESHAPE, "Col2Im: image_shape[%d] is %" PRId64
					      " but the plan has %" PRId64, i, w.image[i],
					      out->dims[2 + i]);
	}
	if (n + 2 != out->rank || w.ks * ch != in->dims[1] || w.l != in->dims[2])
		return cep__set_error(CEP_ESHAPE, "Col2Im: block_shape does not make the plan's "
				      "shapes");
	for (b = 0; b < in->dims[0] * ch; b++) {
		int64_t src = b * cols, dst = b * img;

		if (in->dtype == CEP_DTYPE_FLOAT64) {
			/* The workspace holds 8 bytes an entry, a double's. */
			double *cd = c->workspace, *imd = cd + cols;

			memcpy(cd, (const double *)in->data + src, (size_t)cols * sizeof(double));
			memset(imd, 0, (size_t)img * sizeof(double));
			cpu_col2im_add_d(&w, cd, imd);
			memcpy((double *)out->data + dst, imd, (size_t)img * sizeof(double));
		} else if (fl) {
			float *cf = c->workspace, *imf = cf + cols;

			for (j = 0; j < cols; j++)
				cf[j] = cpu_load_f(in->data, in->dtype, src + j);
			memset(imf, 0, (size_t)img * sizeof(float));
			cpu_col2im_add_f(&w, cf, imf);
			for (k = 0; k < img; k++)
				cpu_store_f(out->data, out->dtype, dst + k, imf[k]);
		} else {
			uint64_t *cu = c->workspace, *imu = cu + cols;

			for (j = 0; j < cols; j++)
				cu[j] = (uint64_t)cpu_load_i(in->data, in->dtype, src + j);
			memset(imu, 0, (size_t)img * sizeof(uint64_t));
			cpu_col2im_add_u(&w, cu, imu);
			for (k = 0; k < img; k++)
				cpu_store_i(out->data, out->dtype, dst + k, (int64_t)imu[k]);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_schema schemas[] = {
	{ "", "Col2Im", 18, OP_OPSET_MAX, 3, 3, 1, 1, 0, 0, col2im_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "Col2Im", 18, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_ALL, col2im_prepare, col2im_run },
};

const struct op_family op_family_cpu_col2im = {
	"cpu_col2im", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
