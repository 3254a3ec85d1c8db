/*
 * conv.c — the CUDA kernels of Conv (opset 7 on: float32 and float16,
 * bfloat16 from 22, as on the host) and of the internal FusedConv
 * (com.cudaep: Conv, then Z added, then Relu) through cuDNN
 * (gpu/cuda/cudnn.h); kernels/cuda/conv.cu only pads.
 *
 * The attributes are read and auto_pad resolved by the code the host
 * kernel uses (kernels/conv_geom.h), so both backends agree on every
 * window. 1-D convolutions are 2-D ones with a leading unit dimension;
 * 3-D ones use cuDNN's 5-D descriptors; groups (depthwise too) are the
 * convolution descriptor's group count. cuDNN pads both ends of a
 * dimension alike: when the two ends differ (SAME_UPPER over an even
 * size, or explicit pads), cuDNN pads the smaller amount and a small
 * kernel writes the rest, as zeros around a copy of X at the start of the
 * workspace.
 *
 * The bias and FusedConv's Z and Relu go through
 * cudnnConvolutionBiasActivationForward() where cuDNN allows it, else
 * through separate calls (gpu/cuda/cudnn.c decides). float32 runs with TF32
 * off unless the session's precision is tf32 (OP_CALL_TF32).
 *
 * prepare() builds everything (descriptors and the heuristic's algorithm,
 * cached per backend by cudnn_conv_get()) and asks for the workspace;
 * run() only queues work on call->stream.
 */
#include "kernels/cuda/launch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/conv_geom.h"
#include "gpu/cuda/cudnn.h"

/* The most workspace an algorithm may ask of the plan: enough for the
 * FFT and Winograd algorithms of the usual networks, which the heuristic
 * ranks first where they pay. */
#define CONV_WORKSPACE_MAX ((size_t)64 << 20)

/* Twin of struct cep_conv_pad (conv.cu). */
struct cuda_conv_pad {
	int64_t n;               /* elements of the padded tensor */
	int64_t out[3];          /* its spatial sizes, leading unit ones first */
	int64_t in[3];           /* X's spatial sizes, the same way */
	int64_t before[3];       /* zeros added before X along each */
};

struct conv_params {
	struct cudnn *dnn;                 /* the backend's */
	const struct cudnn_conv *plan;     /* NULL: an empty output */
	CUfunction pad;                    /* NULL: cuDNN's pads suffice */
	struct cuda_conv_pad pd;           /* the padding of X, with pad */
	size_t pad_bytes;                  /* of the padded X at the start of
	                                    * the workspace, a multiple of 256 */
};
CUDA_PARAMS_FIT(struct conv_params);

/* The operator as messages name it: FusedConv stands for the user's Conv
 * and the nodes folded into it. */
static const char *conv_name(const struct op_call *c)
{
	return strcmp(c->node->op_type, "FusedConv") == 0 ? "Conv (fused with its Relu)" : "Conv";
}

/* Turns the failure of a cuDNN step into the operator's error. */
static int conv_blame(const struct op_call *c, int err)
{
	char why[400];

	snprintf(why, sizeof(why), "%s", cep_last_error());
	return cep__set_error(err, "%s: %s", conv_name(c), why);
}

/* The handle of the call's backend, or the refusal that names why there
 * is none. */
static int conv_dnn(struct op_call *c, struct cudnn **dnn)
{
	const char *why;
	char text[400];
	int ret;

	ret = cuda_dnn_get(c->be, dnn);
	if (ret == 0)
		return 0;
	if (!cuda_backend_is(c->be))
		return conv_blame(c, ret);
	why = cep_last_error();
	if (strncmp(why, "no cuDNN: ", 10) == 0)
		why += 10;
	snprintf(text, sizeof(text), "%s", why);
	return cep__set_error(ret, "%s: no cuDNN on the cuda backend: %s", conv_name(c), text);
}

/* Fills d's spatial part and p's padding from the resolved window: cuDNN
 * pads min(begin, end) at both ends, the pad kernel the difference. */
static void conv_window(const struct conv_geom *g, struct cudnn_conv_desc *d,
			struct conv_params *p)
{
	int off = d->n - g->n, po = 3 - g->n, i;
	bool extra = false;

	for (i = 0; i < d->n; i++) {
		d->in[i] = d->k[i] = d->stride[i] = d->dilation[i] = d->out[i] = 1;
		d->pad[i] = 0;
	}
	for (i = 0; i < 3; i++)
		p->pd.out[i] = p->pd.in[i] = 1;
	p->pd.n = g->batch * g->c;
	for (i = 0; i < g->n; i++) {
		int64_t pb = g->w.pad_begin[i], pe = g->w.pad_end[i];
		int64_t sym = pb < pe ? pb : pe;

		p->pd.in[po + i] = g->in[i];
		p->pd.before[po + i] = pb - sym;
		p->pd.out[po + i] = g->in[i] + (pb - sym) + (pe - sym);
		p->pd.n *= p->pd.out[po + i];
		extra |= pb != pe;
		d->in[off + i] = p->pd.out[po + i];
		d->k[off + i] = g->w.kernel[i];
		d->pad[off + i] = sym;
		d->stride[off + i] = g->w.stride[i];
		d->dilation[off + i] = g->w.dilation[i];
		d->out[off + i] = g->out[i];
	}
	if (!extra)
		memset(&p->pd, 0, sizeof(p->pd));
}

static int conv_prepare(struct op_call *c, size_t *workspace)
{
	struct conv_params *p = (struct conv_params *)c->params;
	const struct op_tensor *x = &c->in[0], *y = &c->out[0];
	const struct op_tensor *z = c->n_in > 3 && op_tensor_present(&c->in[3]) ? &c->in[3] : NULL;
	bool fused = strcmp(c->node->op_type, "FusedConv") == 0, relu = false;
	size_t esize = cep_dtype_size(y->dtype);
	struct cudnn_conv_desc d;
	struct conv_geom g;
	char name[32];
	int ret;

	*workspace = 0;
	memset(p, 0, sizeof(*p));
	if (!op_dtype_in(y->dtype, CUDA_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", conv_name(c),
				      cep_dtype_name(y->dtype));
	if (fused && (ret = conv_fused_activation(c->node, &relu)) < 0)
		return ret;
	if (z != NULL && (z->rank != y->rank ||
			  memcmp(z->dims, y->dims, sizeof(int64_t) * (size_t)y->rank) != 0))
		return cep__set_error(CEP_ESHAPE, "FusedConv: Z does not have the shape of Y");
	ret = conv_dnn(c, &p->dnn);
	if (ret < 0)
		return ret;
	ret = conv_geom_init(c->node, x, &c->in[1], &g);
	if (ret < 0)
		return ret;
	if (op_dims_product(y, 0, y->rank) == 0)
		return 0;
	if (op_dims_product(x, 0, x->rank) == 0)
		return cep__set_error(CEP_EUNSUPPORTED, "%s: X is empty but Y is not (the pads "
				      "alone make it); the cuda backend does not take that",
				      conv_name(c));
	memset(&d, 0, sizeof(d));
	d.dtype = y->dtype;
	d.n = g.n == 1 ? 2 : g.n;
	d.batch = g.batch;
	d.c = g.c;
	d.m = g.m;
	d.group = g.group;
	d.bias = c->n_in > 2 && op_tensor_present(&c->in[2]);
	d.z = z != NULL;
	d.relu = relu;
	/* Only float32 has a choice; the others would only split the cache. */
	d.tf32 = y->dtype == CEP_DTYPE_FLOAT32 && (c->flags & OP_CALL_TF32) != 0;
	conv_window(&g, &d, p);
	ret = cudnn_conv_get(p->dnn, &d, CONV_WORKSPACE_MAX, &p->plan);
	if (ret < 0)
		return conv_blame(c, ret);
	if (p->pd.n > 0) {
		p->pad_bytes = ((size_t)p->pd.n * esize + 255) / 256 * 256;
		snprintf(name, sizeof(name), "conv_pad_%zu", esize);
		ret = cuda_function_get(c->be, "conv", name, &p->pad);
		if (ret < 0)
			return ret;
	}
	*workspace = p->pad_bytes + cudnn_conv_workspace(p->plan);
	return 0;
}

static int conv_run(struct op_call *c)
{
	const struct conv_params *p = (const struct conv_params *)c->params;
	const void *x = c->in[0].data;
	const void *bias = c->n_in > 2 && op_tensor_present(&c->in[2]) ? c->in[2].data : NULL;
	const void *z = c->n_in > 3 && op_tensor_present(&c->in[3]) ? c->in[3].data : NULL;
	char *ws = c->workspace;
	int ret;

	if (p->plan == NULL)
		return 0;
	if (p->pad != NULL) {
		void *args[] = { &x, &ws, (void *)&p->pd };

		ret = cuda_launch(c->be, c->stream, p->pad, cuda_grid(p->pd.n), CUDA_BLOCK, 0, args);
		if (ret < 0)
			return conv_blame(c, ret);
		x = ws;
	}
	ret = cudnn_conv_run(p->dnn, p->plan, cuda_stream_handle(c->stream), x, c->in[1].data,
			     bias, z, c->out[0].data, ws != NULL ? ws + p->pad_bytes : NULL);
	return ret < 0 ? conv_blame(c, ret) : 0;
}

/* ------------------------------------------------------------------- table */

static const struct op_kernel kernels[] = {
	{ "", "Conv", 1, 21, BACKEND_CUDA, OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16),
	  conv_prepare, conv_run },
	{ "", "Conv", 22, OP_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, conv_prepare, conv_run },
	{ OP_DOMAIN_CUDAEP, "FusedConv", 1, 1, BACKEND_CUDA, CUDA_DTS_FLOAT, conv_prepare, conv_run },
};

const struct op_family op_family_cuda_conv = {
	"cuda_conv", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
