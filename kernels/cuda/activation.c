/*
 * activation.c — the CUDA kernels of the activations with parameters of
 * kernels/cpu/activation.c: LeakyRelu, Elu, HardSigmoid, HardSwish,
 * Softplus, Gelu, ThresholdedRelu, Mish, Selu, Celu, Softsign, Swish,
 * Shrink, PRelu and Clip, with the host's type sets per opset, and
 * onnxruntime's com.microsoft Gelu, QuickGelu, FastGelu and BiasGelu.
 * Device side: kernels/cuda/activation.cu. prepare() reads the attributes
 * (and lays out PRelu's broadcast) once per plan; run() launches one grid.
 */
#include "kernels/cuda/launch.h"
#include "kernels/legacy.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* --------------------------------------------------- the attribute forms */

struct act_params {
	CUfunction fn;
	int64_t n;                  /* elements */
	float alpha, beta;          /* as the host's act_params */
	int64_t bias_n;             /* BiasGelu, FastGelu: the bias's elements; 0: none */
};
CUDA_PARAMS_FIT(struct act_params);

/* base names the kernel ("leakyrelu"); Gelu's tanh form has its own. */
static int act_prepare(struct op_call *c, size_t *workspace, const char *base,
		       float alpha, float beta)
{
	struct act_params *p = (struct act_params *)c->params;
	const char *sfx = cuda_dtype_suffix(c->in[0].dtype);
	char name[32];

	*workspace = 0;
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "%s: no cuda kernel for %s", c->node->op_type,
				      cep_dtype_name(c->in[0].dtype));
	snprintf(name, sizeof(name), "%s_%s", base, sfx);
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	p->bias_n = 0;
	p->alpha = op_attr_float(c->node, "alpha", alpha);
	p->beta = op_attr_float(c->node, "beta", beta);
	return cuda_function_get(c->be, "activation", name, &p->fn);
}

static int leaky_relu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "leakyrelu", 0.01f, 0.0f);
}

static int elu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "elu", 1.0f, 0.0f);
}

static int hard_sigmoid_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "hardsigmoid", 0.2f, 0.5f);
}

/* HardSwish has no attributes: its alpha and beta are fixed. */
static int hard_swish_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	int ret = act_prepare(c, ws, "hardswish", 0.0f, 0.0f);

	p->alpha = 1.0f / 6.0f;
	p->beta = 0.5f;
	return ret;
}

static int softplus_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "softplus", 0.0f, 0.0f);
}

/* The schema's inference already refused any other approximate. */
static int gelu_prepare(struct op_call *c, size_t *ws)
{
	const char *a = op_attr_string(c->node, "approximate", "none");

	return act_prepare(c, ws, strcmp(a, "tanh") == 0 ? "gelutanh" : "gelu", 0.0f, 0.0f);
}

static int thresholded_relu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "thresholdedrelu", 1.0f, 0.0f);
}

static int mish_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "mish", 0.0f, 0.0f);
}

static int quick_gelu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "quickgelu", 1.702f, 0.0f);
}

/* com.microsoft's Gelu: the exact form, with no approximate attribute. */
static int ms_gelu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "gelu", 0.0f, 0.0f);
}

/* FastGelu (tanh form) and BiasGelu (exact) of input + bias; FastGelu
 * without its bias is the plain tanh-form kernel. */
static int bias_gelu_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	bool fast = strcmp(c->node->op_type, "FastGelu") == 0;
	bool bias = c->n_in > 1 && op_tensor_present(&c->in[1]);
	int ret;

	ret = act_prepare(c, ws, bias ? (fast ? "biasgelutanh" : "biasgelu") : "gelutanh",
			  0.0f, 0.0f);
	if (ret == 0 && bias)
		p->bias_n = op_dims_product(&c->in[1], 0, c->in[1].rank);
	return ret;
}

/* Selu's defaults (kernels/cpu/activation.c); beta carries gamma. */
static int selu_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	int ret = act_prepare(c, ws, "selu", 1.67326319217681884765625f, 0.0f);

	p->beta = op_attr_float(c->node, "gamma", 1.05070102214813232421875f);
	return ret;
}

static int celu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "celu", 1.0f, 0.0f);
}

static int softsign_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "softsign", 0.0f, 0.0f);
}

static int swish_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, "swish", 1.0f, 0.0f);
}

/* alpha carries lambd, beta bias. */
static int shrink_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	int ret = act_prepare(c, ws, "shrink", 0.0f, 0.0f);

	p->alpha = op_attr_float(c->node, "lambd", 0.5f);
	p->beta = op_attr_float(c->node, "bias", 0.0f);
	return ret;
}

static int act_run(struct op_call *c)
{
	const struct act_params *p = (const struct act_params *)c->params;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n, (void *)&p->alpha, (void *)&p->beta };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

static int bias_act_run(struct op_call *c)
{
	const struct act_params *p = (const struct act_params *)c->params;
	const void *a = c->in[0].data, *b = p->bias_n ? c->in[1].data : NULL;
	void *o = c->out[0].data;
	void *args[] = { &a, &b, &o, (void *)&p->n, (void *)&p->bias_n };

	if (p->bias_n == 0)
		return act_run(c);
	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->n), CUDA_BLOCK, 0, args);
}

/* -------------------------------------------------------------------- PRelu */

struct prelu_params {
	CUfunction fn;
	struct cuda_bcast bc;       /* operands: X, the slope */
};
CUDA_PARAMS_FIT(struct prelu_params);

/* A symbol of the slope may differ from X's dimension only once the plan
 * fixes both: checked here, as the host does, before any run. */
static int prelu_prepare(struct op_call *c, size_t *workspace)
{
	struct prelu_params *p = (struct prelu_params *)c->params;
	const struct op_tensor *in = &c->in[0];
	const char *sfx = cuda_dtype_suffix(in->dtype);
	struct op_tensor view, *slope = &view;
	char name[32], sa[160], sb[160];
	bool ok;
	int i, shift, ret;

	*workspace = 0;
	/* Before opset 7 the slope is one value or one per channel. */
	ret = op_legacy_prelu_slope(c->node, in, &c->in[1], &view);
	if (ret < 0)
		return ret;
	shift = in->rank - slope->rank;
	ok = shift >= 0;
	for (i = 0; ok && i < slope->rank; i++)
		ok = slope->dims[i] == 1 || slope->dims[i] == in->dims[i + shift];
	if (!ok) {
		op_dims_format(slope, NULL, 0, sa, sizeof(sa));
		op_dims_format(in, NULL, 0, sb, sizeof(sb));
		return cep__set_error(CEP_ESHAPE,
				      "PRelu: slope %s does not broadcast to the input's shape %s",
				      sa, sb);
	}
	if (sfx == NULL)
		return cep__set_error(CEP_EDTYPE, "PRelu: no cuda kernel for %s",
				      cep_dtype_name(in->dtype));
	snprintf(name, sizeof(name), "prelu_%s", sfx);
	cuda_bcast_init(&p->bc, &c->out[0], in, slope);
	return cuda_function_get(c->be, "activation", name, &p->fn);
}

static int prelu_run(struct op_call *c)
{
	const struct prelu_params *p = (const struct prelu_params *)c->params;
	const void *a = c->in[0].data, *s = c->in[1].data;
	void *o = c->out[0].data;
	void *args[] = { &a, &s, &o, (void *)&p->bc };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid(p->bc.n), CUDA_BLOCK, 0, args);
}

/* --------------------------------------------------------------------- Clip */

struct clip_params {
	CUfunction fn;
	int64_t n;                  /* elements */
	float flo, fhi;             /* float bounds when no input gives them */
	int64_t ilo, ihi;           /* integer bounds when no input gives them */
	bool has_lo, has_hi;        /* whether inputs 1 and 2 give them */
};
CUDA_PARAMS_FIT(struct clip_params);

/* The largest finite value of a float type: Clip's default bound. */
static float clip_float_max(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_FLOAT16: return 65504.0f;
	case CEP_DTYPE_BFLOAT16: return 0x1.fep127f;
	default: return FLT_MAX;
	}
}

static int64_t clip_int_min(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MIN;
	case CEP_DTYPE_INT8: return INT8_MIN;
	case CEP_DTYPE_UINT8: return 0;
	default: return INT64_MIN;
	}
}

static int64_t clip_int_max(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MAX;
	case CEP_DTYPE_INT8: return INT8_MAX;
	case CEP_DTYPE_UINT8: return UINT8_MAX;
	default: return INT64_MAX;
	}
}

/* Clip's inputs from opset 11, for messages. */
static const char *const clip_inputs[3] = { "input", "min", "max" };

static int clip_prepare(struct op_call *c, size_t *workspace)
{
	struct clip_params *p = (struct clip_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const char *sfx = cuda_dtype_suffix(t);
	char name[32];
	int i;

	*workspace = 0;
	if (sfx == NULL || t == CEP_DTYPE_BOOL)
		return cep__set_error(CEP_EDTYPE, "Clip: no cuda kernel for %s", cep_dtype_name(t));
	for (i = 1; i < c->n_in; i++) {
		int64_t n = op_dims_product(&c->in[i], 0, c->in[i].rank);

		if (op_tensor_present(&c->in[i]) && n != 1)
			return cep__set_error(CEP_ESHAPE, "Clip: %s must be a scalar, it has %" PRId64
					      " elements", clip_inputs[i], n);
	}
	p->n = op_dims_product(&c->in[0], 0, c->in[0].rank);
	p->has_lo = c->n_in > 1 && op_tensor_present(&c->in[1]);
	p->has_hi = c->n_in > 2 && op_tensor_present(&c->in[2]);
	if (c->node->opset < 11) {
		p->flo = op_attr_float(c->node, "min", -FLT_MAX);
		p->fhi = op_attr_float(c->node, "max", FLT_MAX);
	} else {
		p->flo = -clip_float_max(t);
		p->fhi = clip_float_max(t);
	}
	p->ilo = clip_int_min(t);
	p->ihi = clip_int_max(t);
	snprintf(name, sizeof(name), "clip_%s", sfx);
	return cuda_function_get(c->be, "activation", name, &p->fn);
}

static int clip_run(struct op_call *c)
{
	const struct clip_params *p = (const struct clip_params *)c->params;
	const void *a = c->in[0].data;
	const void *lo = p->has_lo ? c->in[1].data : NULL;
	const void *hi = p->has_hi ? c->in[2].data : NULL;
	void *o = c->out[0].data;
	void *args[] = { &a, &o, (void *)&p->n, &lo, &hi, (void *)&p->flo, (void *)&p->fhi,
			 (void *)&p->ilo, (void *)&p->ihi };

	return cuda_launch(c->be, c->stream, p->fn, cuda_grid_elem(p->n, c->in[0].dtype),
			   CUDA_BLOCK, 0, args);
}

/* ------------------------------------------------------------------- table */

#define F32_F16 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))
#define I32_I64 (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32))

#define ACT_KERNEL(op, since, until, dts, prepare, run) \
	{ "", op, since, until, BACKEND_CUDA, dts, prepare, run }
#define MS_KERNEL(op, prepare, run) \
	{ OP_DOMAIN_MS, op, 1, OP_MS_OPSET_MAX, BACKEND_CUDA, CUDA_DTS_FLOAT, prepare, run }

static const struct op_kernel kernels[] = {
	ACT_KERNEL("LeakyRelu", 1, 15, F32_F16, leaky_relu_prepare, act_run),
	ACT_KERNEL("LeakyRelu", 16, OP_OPSET_MAX, CUDA_DTS_FLOAT, leaky_relu_prepare, act_run),
	ACT_KERNEL("Elu", 1, 21, F32_F16, elu_prepare, act_run),
	ACT_KERNEL("Elu", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, elu_prepare, act_run),
	ACT_KERNEL("HardSigmoid", 1, 21, F32_F16, hard_sigmoid_prepare, act_run),
	ACT_KERNEL("HardSigmoid", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, hard_sigmoid_prepare, act_run),
	ACT_KERNEL("HardSwish", 14, 21, F32_F16, hard_swish_prepare, act_run),
	ACT_KERNEL("HardSwish", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, hard_swish_prepare, act_run),
	ACT_KERNEL("Softplus", 1, 21, F32_F16, softplus_prepare, act_run),
	ACT_KERNEL("Softplus", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, softplus_prepare, act_run),
	ACT_KERNEL("Gelu", 20, OP_OPSET_MAX, CUDA_DTS_FLOAT, gelu_prepare, act_run),
	ACT_KERNEL("ThresholdedRelu", 10, 21, F32_F16, thresholded_relu_prepare, act_run),
	ACT_KERNEL("ThresholdedRelu", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, thresholded_relu_prepare,
		   act_run),
	ACT_KERNEL("Mish", 18, 21, F32_F16, mish_prepare, act_run),
	ACT_KERNEL("Mish", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, mish_prepare, act_run),
	ACT_KERNEL("Selu", 1, 21, F32_F16, selu_prepare, act_run),
	ACT_KERNEL("Selu", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, selu_prepare, act_run),
	ACT_KERNEL("Celu", 12, 27, OP_DT(CEP_DTYPE_FLOAT32), celu_prepare, act_run),
	ACT_KERNEL("Celu", 28, OP_OPSET_MAX, CUDA_DTS_FLOAT, celu_prepare, act_run),
	ACT_KERNEL("Softsign", 1, 21, F32_F16, softsign_prepare, act_run),
	ACT_KERNEL("Softsign", 22, OP_OPSET_MAX, CUDA_DTS_FLOAT, softsign_prepare, act_run),
	ACT_KERNEL("Swish", 24, OP_OPSET_MAX, CUDA_DTS_FLOAT, swish_prepare, act_run),
	ACT_KERNEL("Shrink", 9, OP_OPSET_MAX, F32_F16 | CUDA_DTS_INT, shrink_prepare, act_run),
	ACT_KERNEL("PRelu", 1, 8, F32_F16, prelu_prepare, prelu_run),
	ACT_KERNEL("PRelu", 9, 15, F32_F16 | I32_I64, prelu_prepare, prelu_run),
	ACT_KERNEL("PRelu", 16, OP_OPSET_MAX, CUDA_DTS_FLOAT | I32_I64, prelu_prepare, prelu_run),
	ACT_KERNEL("Clip", 1, 10, F32_F16, clip_prepare, clip_run),
	ACT_KERNEL("Clip", 11, 11, F32_F16, clip_prepare, clip_run),
	ACT_KERNEL("Clip", 12, 12, F32_F16 | CUDA_DTS_INT, clip_prepare, clip_run),
	ACT_KERNEL("Clip", 13, OP_OPSET_MAX, CUDA_DTS_NUMERIC, clip_prepare, clip_run),
	MS_KERNEL("Gelu", ms_gelu_prepare, act_run),
	MS_KERNEL("QuickGelu", quick_gelu_prepare, act_run),
	MS_KERNEL("FastGelu", bias_gelu_prepare, bias_act_run),
	MS_KERNEL("BiasGelu", bias_gelu_prepare, bias_act_run),
};

const struct op_family op_family_cuda_activation = {
	"cuda_activation", NULL, 0, kernels, sizeof(kernels) / sizeof(kernels[0]),
};
