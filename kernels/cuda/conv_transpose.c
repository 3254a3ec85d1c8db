/*
 * conv_transpose.c — the CUDA kernel of ConvTranspose (opset 1 on: float32
 * and float16, bfloat16 from 22, as on the host), through cuDNN's
 * backward-data pass where it covers the call (gpu/cuda/cudnn.h) and
 * kernels/cuda/conv_transpose.cu's direct kernel elsewhere.
 *
 * The attributes are read and the output size and pads resolved by the
 * code the host kernel uses (kernels/convt_geom.h). ConvTranspose of X by
 * W is the backward-data pass of a convolution whose input is Y and whose
 * output is X, with W as its filter (both lay it out (C, M / group,
 * kernel...)), so cuDNN takes 1-D (as 2-D with a leading unit dim), 2-D
 * and 3-D calls with groups. It takes only symmetric pads q and makes an
 * image of s * (in - 1) + eff - 2q + r along a dim, r below the stride.
 * Where Y is that image (pads equal at both ends, output_padding below
 * the stride: the usual case) cuDNN writes Y and adds the bias itself;
 * otherwise (pads that differ, negative ones from an output_shape larger
 * than the full result, output_padding past the stride) it writes a
 * larger image Z into the workspace, with q the smaller of the two pads
 * (0 when that would leave part of Y uncovered), and convt_crop copies
 * Y's window of Z and adds the bias.
 *
 * The direct kernel takes everything else: more than 3 spatial dims, an
 * empty X (Y is then the bias alone), a backend without cuDNN, and a call
 * cuDNN refuses (no algorithm, a size past its int). float32 runs with
 * TF32 off unless the session's precision is tf32 (OP_CALL_TF32); the
 * direct kernel never uses it.
 *
 * prepare() builds everything (cuDNN's descriptors and algorithm, cached
 * per backend by cudnn_conv_get(), or the direct kernel's arguments) and
 * asks for the workspace; run() only queues work on call->stream.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cudnn.h"
#include "kernels/cuda/convt_win.h"

/* The most workspace cuDNN's algorithm may ask of the plan, Z aside. */
#define CONVT_WORKSPACE_MAX ((size_t)64 << 20)

/* How a call runs. */
enum convt_path {
	CONVT_EMPTY,            /* Y has no element */
	CONVT_DIRECT,           /* convt_<type> */
	CONVT_DNN,              /* cuDNN writes Y and adds B */
	CONVT_DNN_CROP,         /* cuDNN writes Z, convt_crop_<type> Y */
};

/* Twin of struct cep_convt (conv_transpose.cu). */
struct cuda_convt {
	int64_t n;
	int64_t c, m;
	int64_t cg, mg;
	int64_t l;
	int64_t p;
	int64_t ks;
	int32_t bias;
	int32_t pad;
	struct cuda_convt_win w;
};

/* Twin of struct cep_convt_crop (conv_transpose.cu). */
struct cuda_convt_crop {
	int64_t n;
	int64_t m;
	int64_t out[3];
	int64_t z[3];
	int64_t off[3];
	int32_t bias;
	int32_t pad;
};

struct convt_params {
	int32_t path;                          /* enum convt_path */
	int32_t pad;
	CUfunction fn;                         /* convt_ or convt_crop_ */
	union {
		struct cuda_convt k;           /* CONVT_DIRECT */
		struct {
			struct cudnn *dnn;             /* the backend's */
			const struct cudnn_conv *plan; /* transposed */
			size_t z_bytes;                /* of Z at the start of the
			                                * workspace, a multiple of 256 */
			struct cuda_convt_crop crop;   /* CONVT_DNN_CROP */
		} d;
	} u;
};
CUDA_PARAMS_FIT(struct convt_params);

/* Turns the failure of a cuDNN step into the operator's error. */
static int convt_blame(int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "ConvTranspose: %s", why);
}

/* ------------------------------------------------------------ cuDNN's way */

/* cuDNN's image along one dim, and where Y lies in it. */
struct convt_dnn_dim {
	int64_t q;              /* cuDNN's pad, at both ends */
	int64_t z;              /* its image size */
	int64_t off;            /* Y position i is image position i + off */
};

/* Works out cuDNN's pad and image along spatial dim i of g; returns
 * whether Y is that image exactly. */
static bool convt_dnn_dim(const struct convt_geom *g, int i, struct convt_dnn_dim *dd)
{
	const struct convt_col2im *w = &g->win;
	int64_t s = w->stride[i], in = w->blocks[i], out = w->image[i], pb = w->pad_begin[i];
	int64_t eff = (w->block[i] - 1) * w->dilation[i] + 1;
	int64_t reach = s * (in - 1) + eff;       /* positions anything lands on */
	int64_t pe = g->pad_end[i], end, r;

	dd->q = pb < pe ? pb : pe;
	if (dd->q < 0)
		dd->q = 0;
	/* Y is the image when it starts at q and its size is one cuDNN
	 * makes. */
	r = out - (reach - 2 * dd->q);
	if (pb == dd->q && r >= 0 && r < s) {
		dd->z = out;
		dd->off = 0;
		return true;
	}
	/* Else the image, from q, must cover what Y reads of the positions
	 * something lands on: up to end. */
	end = pb + out < reach ? pb + out : reach;
	r = end - dd->q - (reach - 2 * dd->q);
	r = r < 0 ? 0 : r > s - 1 ? s - 1 : r;
	if (dd->q + reach - 2 * dd->q + r < end) {
		dd->q = 0;
		r = end - reach;
		r = r < 0 ? 0 : r > s - 1 ? s - 1 : r;
	}
	dd->z = reach - 2 * dd->q + r;
	dd->off = pb - dd->q;
	return false;
}

/* Sets up cuDNN's way for c; returns 0 when it takes the call, 1 when the
 * direct kernel must (no cuDNN, or cuDNN refuses: the error is cleared),
 * or an error. */
static int convt_dnn_prepare(struct op_call *c, const struct convt_geom *g, const char *sfx,
			     struct convt_params *p, size_t *workspace)
{
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	bool bias = c->n_in > 2 && op_tensor_present(&c->in[2]), exact = true;
	struct convt_dnn_dim dd[CUDNN_CONV_DIMS];
	struct cuda_convt_crop *cr = &p->u.d.crop;
	struct cudnn_conv_desc d;
	int nd = g->win.n, off, po, i, ret;
	int64_t zn = g->batch * g->m;
	char name[32];

	if (nd > CUDNN_CONV_DIMS || op_dims_product(x, 0, x->rank) == 0)
		return 1;
	if (cuda_dnn_get(c->be, &p->u.d.dnn) < 0) {
		if (!cuda_backend_is(c->be))
			return convt_blame(CEP_EINVAL);
		cep__clear_error();
		return 1;
	}
	memset(&d, 0, sizeof(d));
	d.dtype = y->dtype;
	d.n = nd == 1 ? 2 : nd;
	d.batch = g->batch;
	d.c = g->m;
	d.m = g->c;
	d.group = g->group;
	d.tf32 = y->dtype == CEP_DTYPE_FLOAT32 && (c->flags & OP_CALL_TF32) != 0;
	d.transposed = 1;
	off = d.n - nd;
	for (i = 0; i < d.n; i++)
		d.in[i] = d.k[i] = d.stride[i] = d.dilation[i] = d.out[i] = 1;
	for (i = 0; i < nd; i++) {
		exact &= convt_dnn_dim(g, i, &dd[i]);
		d.in[off + i] = dd[i].z;
		d.k[off + i] = g->win.block[i];
		d.pad[off + i] = dd[i].q;
		d.stride[off + i] = g->win.stride[i];
		d.dilation[off + i] = g->win.dilation[i];
		d.out[off + i] = g->win.blocks[i];
		zn *= dd[i].z;
	}
	d.bias = exact && bias;
	ret = cudnn_conv_get(p->u.d.dnn, &d, CONVT_WORKSPACE_MAX, &p->u.d.plan);
	if (ret == CEP_ENOTSUP || ret == CEP_EINVAL) {
		cep__clear_error();
		return 1;
	}
	if (ret < 0)
		return convt_blame(ret);
	*workspace = cudnn_conv_workspace(p->u.d.plan);
	if (exact) {
		p->path = CONVT_DNN;
		return 0;
	}
	p->path = CONVT_DNN_CROP;
	p->u.d.z_bytes = ((size_t)zn * cep_dtype_size(y->dtype) + 255) / 256 * 256;
	*workspace += p->u.d.z_bytes;
	cr->n = op_dims_product(y, 0, y->rank);
	cr->m = g->m;
	cr->bias = bias;
	po = 3 - nd;
	for (i = 0; i < 3; i++) {
		cr->out[i] = cr->z[i] = 1;
		cr->off[i] = 0;
	}
	for (i = 0; i < nd; i++) {
		cr->out[po + i] = g->win.image[i];
		cr->z[po + i] = dd[i].z;
		cr->off[po + i] = dd[i].off;
	}
	snprintf(name, sizeof(name), "convt_crop_%s", sfx);
	return cuda_function_get(c->be, "conv_transpose", name, &p->fn);
}

/* -------------------------------------------------------------- the call */

static int convt_prepare(struct op_call *c, size_t *workspace)
{
	struct convt_params *p = (struct convt_params *)c->params;
	const struct op_tensor *y = &c->out[0];
	const char *sfx = cuda_dtype_suffix(y->dtype);
	struct cuda_convt *k = &p->u.k;
	struct convt_geom g;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(y->dtype, CUDA_DTS_FLOAT) || sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "ConvTranspose: no cuda kernel for %s",
				      cep_dtype_name(y->dtype));
	ret = convt_geom_init(c->node, &c->in[0], &c->in[1], &g);
	if (ret < 0)
		return ret;
	if (op_dims_product(y, 0, y->rank) == 0) {
		p->path = CONVT_EMPTY;
		return 0;
	}
	ret = convt_dnn_prepare(c, &g, sfx, p, workspace);
	if (ret <= 0)
		return ret;
	memset(p, 0, sizeof(*p));
	*workspace = 0;
	p->path = CONVT_DIRECT;
	k->n = op_dims_product(y, 0, y->rank);
	k->c = g.c;
	k->m = g.m;
	k->cg = g.cg;
	k->mg = g.mg;
	k->l = g.win.l;
	k->p = g.win.p;
	k->ks = g.win.ks;
	k->bias = c->n_in > 2 && op_tensor_present(&c->in[2]);
	ret = cuda_convt_win_init("ConvTranspose", &g.win, &k->w);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "convt_%s", sfx);
	return cuda_function_get(c->be, "conv_transpose", name, &p->fn);
}

static int convt_run(struct op_call *c)
{
	struct convt_params *p = (struct convt_params *)c->params;
	const void *x = c->in[0].data, *w = c->in[1].data;
	const void *b = c->n_in > 2 && op_tensor_present(&c->in[2]) ? c->in[2].data : NULL;
	void *y = c->out[0].data;
	char *ws = c->workspace;
	int ret;

	switch (p->path) {
	case CONVT_DIRECT: {
		void *args[] = { &x, &w, &b, &y, &p->u.k };

		return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->u.k.n), CUDA_BLOCK, 0, args);
	}
	case CONVT_DNN:
		ret = cudnn_convt_run(p->u.d.dnn, p->u.d.plan, cuda_stream_handle(c->stream), x, w, b,
				      y, ws);
		return ret < 0 ? convt_blame(ret) : 0;
	case CONVT_DNN_CROP: {
		void *z = ws;
		void *args[] = { &z, &b, &y, &p->u.d.crop };

		ret = cudnn_convt_run(p->u.d.dnn, p->u.d.plan, cuda_stream_handle(c->stream), x, w,
				      NULL, z, ws + p->u.d.z_bytes);
		if (ret < 0)
			return convt_blame(ret);
		return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->u.d.crop.n), CUDA_BLOCK, 0,
				   args);
	}
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------- table */

static const struct op_kernel kernels[] = {
	{ "", "ConvTranspose", 1, 21, BACKEND_CUDA,
	  OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16), convt_prepare, convt_run },
	{ "", "ConvTranspose", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, convt_prepare,
	  convt_run },
};

const struct op_family op_family_cuda_conv_transpose = {
	"cuda_conv_transpose", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
