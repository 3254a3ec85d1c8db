/*
 * activation.c — activations with parameters: LeakyRelu, Elu, HardSigmoid,
 * HardSwish, Softplus, Gelu, ThresholdedRelu, Selu, Celu, Swish, Shrink
 * (attributes), Mish, Softsign, PRelu (a slope tensor broadcast to the
 * input; before opset 7 one value or one per channel, kernels/legacy.h)
 * and Clip (bounds as attributes before opset 11, optional scalar inputs
 * from 11 on). Opset 1's consumed_inputs only hinted at in-place use and
 * is ignored.
 *
 * onnxruntime's com.microsoft activations share the kernel: Gelu (the exact
 * form), QuickGelu (x * sigmoid(alpha * x), alpha 1.702 by default), and
 * FastGelu and BiasGelu, Gelu's tanh and exact forms of input + bias,
 * where the bias is 1-D along the last dimension (optional for FastGelu).
 *
 * Float types are computed in float32, float64 in double (with the float
 * attributes widened), with each function's formula as its specification
 * (or its function body) writes it: Selu as gamma * (alpha * e^x - alpha)
 * below 0, Celu as max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (with
 * expm1, NaN kept), Swish as x * sigmoid(alpha * x). PRelu takes int32,
 * int64, uint32 and uint64 from opset 9 and Clip every integer type from
 * opset 12; those are computed in int64 (a negative unsigned value does
 * not exist, and uint64 orders as unsigned). Shrink takes the integer
 * types at its one opset: they are compared and shifted in double against
 * the float lambd and bias (exact below 2^53) and truncated back, as
 * onnxruntime does. prepare() reads the attributes once per plan into the
 * call's params, so run() never searches them.
 */
#include "kernels/cpu/elem.h"
#include "kernels/legacy.h"

#include <float.h>
#include <inttypes.h>

enum actop {
	ACT_LEAKY_RELU,
	ACT_ELU,
	ACT_HARD_SIGMOID,
	ACT_HARD_SWISH,
	ACT_SOFTPLUS,
	ACT_GELU,
	ACT_GELU_TANH,
	ACT_THRESHOLDED_RELU,
	ACT_MISH,
	ACT_QUICK_GELU,
	ACT_SELU,
	ACT_CELU,
	ACT_SOFTSIGN,
	ACT_SWISH,
	ACT_SHRINK,
};

struct act_params {
	enum actop op;              /* Gelu becomes ACT_GELU_TANH per attribute */
	float alpha, beta;          /* LeakyRelu, Elu, HardSigmoid, ThresholdedRelu,
	                             * QuickGelu, Celu, Swish; HardSwish's fixed;
	                             * Selu's alpha and gamma; Shrink's lambd and bias */
	int64_t bias_n;             /* FastGelu and BiasGelu: elements of the bias
	                             * added along the last dim; 0: none */
};

/* ---------------------------------------------------------------- inference */

/* Refuses float attributes of another type: a model that says alpha=1 (an
 * int) would otherwise silently get the default. */
static int act_check_floats(const struct op_node *n)
{
	static const char *const names[] = { "alpha", "beta", "gamma", "lambd", "bias" };
	size_t i;
	int ret;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ret = op_attr_check(n, names[i], OP_ATTR_FLOAT);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int act_infer(struct op_infer *x)
{
	int ret = act_check_floats(x->node);

	return ret < 0 ? ret : op_infer_like_input(x);
}

static int gelu_approximate(const struct op_node *n, bool *tanh_form)
{
	const char *a;
	int ret = op_attr_check(n, "approximate", OP_ATTR_STRING);

	if (ret < 0)
		return ret;
	a = op_attr_string(n, "approximate", "none");
	if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
		return cep__set_error(CEP_EMODEL,
				      "Gelu: approximate is '%s', expected 'none' or 'tanh'", a);
	*tanh_form = strcmp(a, "tanh") == 0;
	return 0;
}

static int gelu_infer(struct op_infer *x)
{
	bool tanh_form;
	int ret = gelu_approximate(x->node, &tanh_form);

	return ret < 0 ? ret : op_infer_like_input(x);
}

/*
 * FastGelu (X[, bias]) and BiasGelu (A, B): onnxruntime adds a 1-D bias of
 * the last dimension's size to the input before the activation.
 */
static int bias_gelu_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0], *b = x->n_in > 1 ? &x->in[1] : NULL;
	int64_t last;
	int ret;

	if ((ret = op_infer_same_dtype(x, 0, 1)) < 0)
		return ret;
	if (!op_dtype_in(in->dtype, OP_DTS_FLOAT))
		return cep__set_error(CEP_EDTYPE, "%s: the input is %s, a float type is needed",
				      x->node->op_type, cep_dtype_name(in->dtype));
	if (b != NULL && op_tensor_present(b) && in->rank >= 0 && b->rank >= 0) {
		last = in->rank > 0 ? in->dims[in->rank - 1] : 1;
		if (b->rank != 1 || (op_dim_fixed(last) && op_dim_fixed(b->dims[0]) &&
				     b->dims[0] != last))
			return cep__set_error(CEP_ESHAPE, "%s: the bias must have shape (%" PRId64
					      "), the input's last dimension",
					      x->node->op_type, last);
		if (in->rank == 0)
			return cep__set_error(CEP_ESHAPE, "%s: a bias needs an input of rank 1 or more",
					      x->node->op_type);
	}
	return op_infer_like_input(x);
}

/* ------------------------------------------------------------------ kernels */

static float act_f(const struct act_params *p, float v)
{
	/* sqrt(2 / pi) and 1 / sqrt(2) */
	const float k_tanh = 0.7978845608028654f, k_erf = 0.7071067811865476f;
	float h;

	switch (p->op) {
	case ACT_LEAKY_RELU:
		return v < 0.0f ? p->alpha * v : v;
	case ACT_ELU:
		return v < 0.0f ? p->alpha * expm1f(v) : v;
	case ACT_HARD_SIGMOID:
	case ACT_HARD_SWISH:
		h = p->alpha * v + p->beta;
		h = h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h;
		return p->op == ACT_HARD_SWISH ? v * h : h;
	case ACT_SOFTPLUS:
		/* log(1 + e^v) without overflowing e^v. */
		return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
	case ACT_GELU:
		return 0.5f * v * (1.0f + erff(v * k_erf));
	case ACT_GELU_TANH:
		return 0.5f * v * (1.0f + tanhf(k_tanh * (v + 0.044715f * v * v * v)));
	case ACT_THRESHOLDED_RELU:
		/* A NaN is not above alpha: 0, as the spec's Where(Less(alpha,
		 * X), X, 0) body makes it. */
		return v > p->alpha ? v : 0.0f;
	case ACT_MISH:
		/* x * tanh(softplus(x)), softplus as above. -inf gives NaN
		 * (-inf * 0), as the spec's formula and its function body do. */
		h = v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
		return v * tanhf(h);
	case ACT_QUICK_GELU:
		/* x * sigmoid(alpha * x) */
		return v * (1.0f / (1.0f + expf(-(p->alpha * v))));
	case ACT_SELU:
		/* alpha is alpha, beta gamma. */
		return v > 0.0f ? p->beta * v : p->beta * (p->alpha * expf(v) - p->alpha);
	case ACT_CELU:
		if (v != v)
			return v;
		h = p->alpha * expm1f(v / p->alpha);
		return (v > 0.0f ? v : 0.0f) + (h < 0.0f ? h : 0.0f);
	case ACT_SOFTSIGN:
		return v / (1.0f + fabsf(v));
	case ACT_SWISH:
		/* The sigmoid of Sigmoid (kernels/cpu/unary.c). */
		h = p->alpha * v;
		h = h >= 0.0f ? 1.0f / (1.0f + expf(-h)) : expf(h) / (1.0f + expf(h));
		return v * h;
	case ACT_SHRINK:
		/* alpha is lambd, beta bias. */
		return v < -p->alpha ? v + p->beta : v > p->alpha ? v - p->beta : 0.0f;
	}
	return 0.0f;
}

/* act_f() in double. HardSwish's fixed alpha is 1/6 itself, not the
 * float nearest it. */
static double act_d(const struct act_params *p, double v)
{
	const double k_tanh = 0.7978845608028654, k_erf = 0.7071067811865476;
	double alpha = p->op == ACT_HARD_SWISH ? 1.0 / 6.0 : p->alpha, h;

	switch (p->op) {
	case ACT_LEAKY_RELU:
		return v < 0.0 ? alpha * v : v;
	case ACT_ELU:
		return v < 0.0 ? alpha * expm1(v) : v;
	case ACT_HARD_SIGMOID:
	case ACT_HARD_SWISH:
		h = alpha * v + p->beta;
		h = h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h;
		return p->op == ACT_HARD_SWISH ? v * h : h;
	case ACT_SOFTPLUS:
		return v > 0.0 ? v + log1p(exp(-v)) : log1p(exp(v));
	case ACT_GELU:
		return 0.5 * v * (1.0 + erf(v * k_erf));
	case ACT_GELU_TANH:
		return 0.5 * v * (1.0 + tanh(k_tanh * (v + 0.044715 * v * v * v)));
	case ACT_THRESHOLDED_RELU:
		return v > alpha ? v : 0.0;
	case ACT_MISH:
		h = v > 0.0 ? v + log1p(exp(-v)) : log1p(exp(v));
		return v * tanh(h);
	case ACT_QUICK_GELU:
		return v * (1.0 / (1.0 + exp(-(alpha * v))));
	case ACT_SELU:
		return v > 0.0 ? p->beta * v : p->beta * (alpha * exp(v) - alpha);
	case ACT_CELU:
		if (v != v)
			return v;
		h = alpha * expm1(v / alpha);
		return (v > 0.0 ? v : 0.0) + (h < 0.0 ? h : 0.0);
	case ACT_SOFTSIGN:
		return v / (1.0 + fabs(v));
	case ACT_SWISH:
		h = alpha * v;
		h = h >= 0.0 ? 1.0 / (1.0 + exp(-h)) : exp(h) / (1.0 + exp(h));
		return v * h;
	case ACT_SHRINK:
		return v < -alpha ? v + p->beta : v > alpha ? v - p->beta : 0.0;
	}
	return 0.0;
}

/* Shrink of an integer of type t as cpu_load_i() gives it, in double
 * (uint64 read as unsigned), stored back as cpu_store_d() converts. */
static void act_shrink_i(const struct act_params *p, void *o, cep_dtype t, int64_t i,
			 int64_t v)
{
	double d = cpu_i2d(t, v);

	if (d < -(double)p->alpha)
		d += (double)p->beta;
	else if (d > (double)p->alpha)
		d -= (double)p->beta;
	else
		d = 0.0;
	cpu_store_d(o, t, i, d);
}

static int act_prepare(struct op_call *c, size_t *workspace, enum actop op,
		       float alpha, float beta)
{
	struct act_params *p = (struct act_params *)c->params;
	bool tanh_form = false;

	memset(p, 0, sizeof(*p));
	if (op == ACT_GELU) {
		int ret = gelu_approximate(c->node, &tanh_form);

		if (ret < 0)
			return ret;
	}
	p->op = tanh_form ? ACT_GELU_TANH : op;
	p->alpha = op_attr_float(c->node, "alpha", alpha);
	p->beta = op_attr_float(c->node, "beta", beta);
	*workspace = 0;
	return 0;
}

static int leaky_relu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_LEAKY_RELU, 0.01f, 0.0f);
}

static int elu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_ELU, 1.0f, 0.0f);
}

static int hard_sigmoid_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_HARD_SIGMOID, 0.2f, 0.5f);
}

/* HardSwish has no attributes: its alpha and beta are fixed. */
static int hard_swish_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;

	memset(p, 0, sizeof(*p));
	p->op = ACT_HARD_SWISH;
	p->alpha = 1.0f / 6.0f;
	p->beta = 0.5f;
	*ws = 0;
	return 0;
}

static int softplus_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_SOFTPLUS, 0.0f, 0.0f);
}

static int gelu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_GELU, 0.0f, 0.0f);
}

static int thresholded_relu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_THRESHOLDED_RELU, 1.0f, 0.0f);
}

static int mish_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_MISH, 0.0f, 0.0f);
}

/* com.microsoft's Gelu is the exact form; it has no approximate. */
static int ms_gelu_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;

	memset(p, 0, sizeof(*p));
	p->op = ACT_GELU;
	*ws = 0;
	return 0;
}

static int quick_gelu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_QUICK_GELU, 1.702f, 0.0f);
}

/* FastGelu is Gelu's tanh form and BiasGelu its exact one, after the bias
 * (the optional input 1; BiasGelu's is required). */
static int bias_gelu_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	bool fast = strcmp(c->node->op_type, "FastGelu") == 0;

	memset(p, 0, sizeof(*p));
	p->op = fast ? ACT_GELU_TANH : ACT_GELU;
	if (c->n_in > 1 && op_tensor_present(&c->in[1]))
		p->bias_n = cpu_numel(&c->in[1]);
	*ws = 0;
	return 0;
}

/* Selu's defaults, the constants of its paper to float precision. */
#define ACT_SELU_ALPHA 1.67326319217681884765625f
#define ACT_SELU_GAMMA 1.05070102214813232421875f

static int selu_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	int ret = act_prepare(c, ws, ACT_SELU, ACT_SELU_ALPHA, 0.0f);

	p->beta = op_attr_float(c->node, "gamma", ACT_SELU_GAMMA);
	return ret;
}

static int celu_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_CELU, 1.0f, 0.0f);
}

static int softsign_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_SOFTSIGN, 0.0f, 0.0f);
}

static int swish_prepare(struct op_call *c, size_t *ws)
{
	return act_prepare(c, ws, ACT_SWISH, 1.0f, 0.0f);
}

static int shrink_prepare(struct op_call *c, size_t *ws)
{
	struct act_params *p = (struct act_params *)c->params;
	int ret = act_prepare(c, ws, ACT_SHRINK, 0.0f, 0.0f);

	p->alpha = op_attr_float(c->node, "lambd", 0.5f);
	p->beta = op_attr_float(c->node, "bias", 0.0f);
	return ret;
}

static int act_run(struct op_call *c)
{
	const struct act_params *p = (const struct act_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (p->bias_n > 0) {
		/* x + bias in float32 (double for float64), not rounded to
		 * the type first: the sum is the fused operator's own
		 * intermediate. */
		const void *b = c->in[1].data;

		if (t == CEP_DTYPE_FLOAT64) {
			const double *ad = a, *bd = b;
			double *od = o;

			for (i = 0; i < n; i++)
				od[i] = act_d(p, ad[i] + bd[i % p->bias_n]);
			return 0;
		}
		for (i = 0; i < n; i++)
			cpu_store_f(o, t, i, act_f(p, cpu_load_f(a, t, i) +
						     cpu_load_f(b, t, i % p->bias_n)));
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT32) {
		const float *af = a;
		float *of = o;

		if (p->op == ACT_LEAKY_RELU) {
			for (i = 0; i < n; i++)
				of[i] = af[i] < 0.0f ? p->alpha * af[i] : af[i];
			return 0;
		}
		for (i = 0; i < n; i++)
			of[i] = act_f(p, af[i]);
		return 0;
	}
	if (t == CEP_DTYPE_FLOAT64) {
		const double *ad = a;
		double *od = o;

		for (i = 0; i < n; i++)
			od[i] = act_d(p, ad[i]);
		return 0;
	}
	if (!cpu_is_float(t)) {
		for (i = 0; i < n; i++)
			act_shrink_i(p, o, t, i, cpu_load_i(a, t, i));
		return 0;
	}
	for (i = 0; i < n; i++)
		cpu_store_f(o, t, i, act_f(p, cpu_load_f(a, t, i)));
	return 0;
}

/* -------------------------------------------------------------------- PRelu */

/* The slope must broadcast to X one way: the output keeps X's shape. */
static int prelu_infer(struct op_infer *x)
{
	const struct op_tensor *in = &x->in[0];
	struct op_tensor slope;
	char sa[160], sb[160];
	int i, ret;

	ret = op_infer_same_dtype(x, 0, 1);
	if (ret < 0 || (ret = op_legacy_prelu_slope(x->node, in, &x->in[1], &slope)) < 0)
		return ret;
	if (in->rank >= 0 && slope.rank >= 0) {
		bool ok = slope.rank <= in->rank;

		for (i = 0; ok && i < slope.rank; i++) {
			int64_t ds = slope.dims[i];
			int64_t dx = in->dims[i + in->rank - slope.rank];

			ok = !op_dim_fixed(ds) || ds == 1 || !op_dim_fixed(dx) || ds == dx;
		}
		if (!ok) {
			op_dims_format(&slope, NULL, 0, sa, sizeof(sa));
			op_dims_format(in, NULL, 0, sb, sizeof(sb));
			return cep__set_error(CEP_ESHAPE,
					      "PRelu: slope %s does not broadcast to the input's shape %s",
					      sa, sb);
		}
	}
	return op_infer_like_input(x);
}

static int prelu_prepare(struct op_call *c, size_t *workspace)
{
	const struct op_tensor *in = &c->in[0];
	struct op_tensor slope;
	char sa[160], sb[160];
	bool ok;
	int i, shift, ret;

	*workspace = 0;
	ret = op_legacy_prelu_slope(c->node, in, &c->in[1], &slope);
	if (ret < 0)
		return ret;
	shift = in->rank - slope.rank;
	ok = shift >= 0;
	for (i = 0; ok && i < slope.rank; i++)
		ok = slope.dims[i] == 1 || slope.dims[i] == in->dims[i + shift];
	if (ok)
		return 0;
	op_dims_format(&slope, NULL, 0, sa, sizeof(sa));
	op_dims_format(in, NULL, 0, sb, sizeof(sb));
	return cep__set_error(CEP_ESHAPE, "PRelu: slope %s does not broadcast to the input's shape %s",
			      sa, sb);
}

static int prelu_run(struct op_call *c)
{
	const struct op_tensor *ins[2] = { &c->in[0], &c->in[1] };
	const struct op_tensor *out = &c->out[0];
	const void *a = c->in[0].data, *s = c->in[1].data;
	cep_dtype t = out->dtype;
	struct op_tensor slope;
	struct cpu_bcast bc;
	int64_t r, j;

	/* prepare() checked the slope; before opset 7 it is seen per channel. */
	op_legacy_prelu_slope(c->node, &c->in[0], &c->in[1], &slope);
	ins[1] = &slope;
	cpu_bcast_init(&bc, out, ins, 2);
	for (r = 0; r < bc.rows; r++) {
		int64_t base = r * bc.inner;

		if (t == CEP_DTYPE_FLOAT32) {
			const float *pa = (const float *)a + bc.off[0];
			const float *ps = (const float *)s + bc.off[1];
			float *po = (float *)out->data + base;

			for (j = 0; j < bc.inner; j++) {
				float v = pa[j * bc.step[0]];

				po[j] = v < 0.0f ? v * ps[j * bc.step[1]] : v;
			}
		} else if (t == CEP_DTYPE_FLOAT64) {
			for (j = 0; j < bc.inner; j++) {
				double v = cpu_load_d(a, t, bc.off[0] + j * bc.step[0]);
				double k = cpu_load_d(s, t, bc.off[1] + j * bc.step[1]);

				cpu_store_d(out->data, t, base + j, v < 0.0 ? v * k : v);
			}
		} else if (cpu_is_float(t)) {
			for (j = 0; j < bc.inner; j++) {
				float v = cpu_load_f(a, t, bc.off[0] + j * bc.step[0]);
				float k = cpu_load_f(s, t, bc.off[1] + j * bc.step[1]);

				cpu_store_f(out->data, t, base + j, v < 0.0f ? v * k : v);
			}
		} else {
			for (j = 0; j < bc.inner; j++) {
				int64_t v = cpu_load_i(a, t, bc.off[0] + j * bc.step[0]);
				int64_t k = cpu_load_i(s, t, bc.off[1] + j * bc.step[1]);

				/* An unsigned value is never negative: uint64's
				 * bits past 2^63 are not a sign. */
				cpu_store_i(out->data, t, base + j,
					    v < 0 && !cpu_is_unsigned(t)
						    ? (int64_t)((uint64_t)v * (uint64_t)k) : v);
			}
		}
		cpu_bcast_next(&bc);
	}
	return 0;
}

/* --------------------------------------------------------------------- Clip */

static int clip6_infer(struct op_infer *x)
{
	int ret = op_attr_check(x->node, "min", OP_ATTR_FLOAT);

	if (ret == 0)
		ret = op_attr_check(x->node, "max", OP_ATTR_FLOAT);
	return ret < 0 ? ret : op_infer_like_input(x);
}

/* Clip's inputs from opset 11, for messages. */
static const char *const clip_inputs[3] = { "input", "min", "max" };

/* From opset 11 the bounds are optional inputs of the input's type, each
 * a scalar; a one-element tensor of any rank is taken as one too. */
static int clip11_infer(struct op_infer *x)
{
	int i, ret;

	ret = op_infer_same_dtype(x, 0, 2);
	if (ret < 0)
		return ret;
	for (i = 1; i < x->n_in; i++) {
		const struct op_tensor *b = &x->in[i];
		int64_t n;
		char s[160];

		if (!op_tensor_present(b) || b->rank < 0 || op_tensor_numel(b, &n) != 0 ||
		    n == 1)
			continue;
		op_dims_format(b, NULL, 0, s, sizeof(s));
		return cep__set_error(CEP_ESHAPE, "Clip: %s must be a scalar, it has shape %s",
				      clip_inputs[i], s);
	}
	return op_infer_like_input(x);
}

static int clip11_prepare(struct op_call *c, size_t *workspace)
{
	int i;

	*workspace = 0;
	for (i = 1; i < c->n_in; i++) {
		if (op_tensor_present(&c->in[i]) && cpu_numel(&c->in[i]) != 1)
			return cep__set_error(CEP_ESHAPE, "Clip: %s must be a scalar, it has %" PRId64
					      " elements", clip_inputs[i], cpu_numel(&c->in[i]));
	}
	return 0;
}

/* The largest finite value of a float type: Clip's default bound. */
static double float_type_max(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_FLOAT16: return 65504.0;
	case CEP_DTYPE_BFLOAT16: return 0x1.fep127;
	case CEP_DTYPE_FLOAT64: return DBL_MAX;
	default: return FLT_MAX;
	}
}

/* The bounds of an integer type as cpu_load_i() gives its values (uint64's
 * largest is all ones). */
static int64_t int_type_min(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MIN;
	case CEP_DTYPE_INT16: return INT16_MIN;
	case CEP_DTYPE_INT8: return INT8_MIN;
	case CEP_DTYPE_UINT64:
	case CEP_DTYPE_UINT32:
	case CEP_DTYPE_UINT16:
	case CEP_DTYPE_UINT8: return 0;
	default: return INT64_MIN;
	}
}

static int64_t int_type_max(cep_dtype t)
{
	switch (t) {
	case CEP_DTYPE_INT32: return INT32_MAX;
	case CEP_DTYPE_INT16: return INT16_MAX;
	case CEP_DTYPE_INT8: return INT8_MAX;
	case CEP_DTYPE_UINT64: return (int64_t)UINT64_MAX;
	case CEP_DTYPE_UINT32: return UINT32_MAX;
	case CEP_DTYPE_UINT16: return UINT16_MAX;
	case CEP_DTYPE_UINT8: return UINT8_MAX;
	default: return INT64_MAX;
	}
}

/*
 * Clamps with the spec's order, min(max(x, lo), hi): when lo > hi every
 * element becomes hi. A NaN input stays NaN (both comparisons fail).
 */
static void clip_float(const struct op_call *c, double lo, double hi)
{
	cep_dtype t = c->in[0].dtype;
	const void *a = c->in[0].data;
	void *o = c->out[0].data;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i;

	if (t == CEP_DTYPE_FLOAT32) {
		const float *af = a;
		float *of = o;
		float flo = (float)lo, fhi = (float)hi;

		for (i = 0; i < n; i++) {
			float v = af[i] < flo ? flo : af[i];

			of[i] = v > fhi ? fhi : v;
		}
		return;
	}
	/* The bounds are of t (or float32 before opset 11, or the type's
	 * own limits), so comparing in double is exact. */
	for (i = 0; i < n; i++) {
		double v = cpu_load_d(a, t, i);

		v = v < lo ? lo : v;
		cpu_store_d(o, t, i, v > hi ? hi : v);
	}
}

struct clip_params {
	float lo, hi;               /* Clip before opset 11: the attributes */
};

static int clip6_prepare(struct op_call *c, size_t *workspace)
{
	struct clip_params *p = (struct clip_params *)c->params;

	p->lo = op_attr_float(c->node, "min", -FLT_MAX);
	p->hi = op_attr_float(c->node, "max", FLT_MAX);
	*workspace = 0;
	return 0;
}

static int clip6_run(struct op_call *c)
{
	const struct clip_params *p = (const struct clip_params *)c->params;

	clip_float(c, p->lo, p->hi);
	return 0;
}

static int clip11_run(struct op_call *c)
{
	const struct op_tensor *lo = c->n_in > 1 ? &c->in[1] : NULL;
	const struct op_tensor *hi = c->n_in > 2 ? &c->in[2] : NULL;
	cep_dtype t = c->in[0].dtype;
	int64_t n = cpu_numel(&c->in[0]);
	int64_t i, ilo, ihi;

	if (lo && !op_tensor_present(lo))
		lo = NULL;
	if (hi && !op_tensor_present(hi))
		hi = NULL;
	if (cpu_is_float(t)) {
		double m = float_type_max(t);

		clip_float(c, lo ? cpu_load_d(lo->data, t, 0) : -m,
			   hi ? cpu_load_d(hi->data, t, 0) : m);
		return 0;
	}
	ilo = lo ? cpu_load_i(lo->data, t, 0) : int_type_min(t);
	ihi = hi ? cpu_load_i(hi->data, t, 0) : int_type_max(t);
	for (i = 0; i < n; i++) {
		int64_t v = cpu_load_i(c->in[0].data, t, i);

		v = cpu_lt_i(t, v, ilo) ? ilo : v;
		cpu_store_i(c->out[0].data, t, i, cpu_lt_i(t, ihi, v) ? ihi : v);
	}
	return 0;
}

/* ------------------------------------------------------------------- table */

#define ACT_SCHEMA(op, since, until, min_in, max_in, infer) \
	{ "", op, since, until, min_in, max_in, 1, 1, 0, 0, infer }
#define ACT_KERNEL(op, since, until, dts, prepare, run) \
	{ "", op, since, until, BACKEND_HOST, dts, prepare, run }
#define MS_SCHEMA(op, min_in, max_in, infer) \
	{ OP_DOMAIN_MS, op, 1, OP_MS_OPSET_MAX, min_in, max_in, 1, 1, 0, 0, infer }
#define MS_KERNEL(op, prepare) \
	{ OP_DOMAIN_MS, op, 1, OP_MS_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, prepare, act_run }

static const struct op_schema schemas[] = {
	ACT_SCHEMA("LeakyRelu", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Elu", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("HardSigmoid", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("HardSwish", 14, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Softplus", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Gelu", 20, OP_OPSET_MAX, 1, 1, gelu_infer),
	ACT_SCHEMA("ThresholdedRelu", 10, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Mish", 18, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Selu", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Celu", 12, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Softsign", 1, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Swish", 24, OP_OPSET_MAX, 1, 1, act_infer),
	ACT_SCHEMA("Shrink", 9, OP_OPSET_MAX, 1, 1, act_infer),
	/* 7: the slope broadcasts numpy's way, not per channel. */
	ACT_SCHEMA("PRelu", 1, 6, 2, 2, prelu_infer),
	ACT_SCHEMA("PRelu", 7, OP_OPSET_MAX, 2, 2, prelu_infer),
	/* Opset 1's bounds had no stated defaults but meant the same. */
	ACT_SCHEMA("Clip", 1, 10, 1, 1, clip6_infer),
	ACT_SCHEMA("Clip", 11, OP_OPSET_MAX, 1, 3, clip11_infer),
	/* onnxruntime's contrib activations. */
	MS_SCHEMA("Gelu", 1, 1, act_infer),
	MS_SCHEMA("QuickGelu", 1, 1, act_infer),
	MS_SCHEMA("FastGelu", 1, 2, bias_gelu_infer),
	MS_SCHEMA("BiasGelu", 2, 2, bias_gelu_infer),
};

/* PRelu's integer types from opset 9. */
#define PRELU_DTS_INT (ELEM_DTS_I32_I64 | OP_DT(CEP_DTYPE_UINT32) | OP_DT(CEP_DTYPE_UINT64))

static const struct op_kernel kernels[] = {
	ACT_KERNEL("LeakyRelu", 1, 15, ELEM_DTS_NO_BF16, leaky_relu_prepare, act_run),
	ACT_KERNEL("LeakyRelu", 16, OP_OPSET_MAX, OP_DTS_FLOAT, leaky_relu_prepare, act_run),
	ACT_KERNEL("Elu", 1, 21, ELEM_DTS_NO_BF16, elu_prepare, act_run),
	ACT_KERNEL("Elu", 22, OP_OPSET_MAX, OP_DTS_FLOAT, elu_prepare, act_run),
	ACT_KERNEL("HardSigmoid", 1, 21, ELEM_DTS_NO_BF16, hard_sigmoid_prepare, act_run),
	ACT_KERNEL("HardSigmoid", 22, OP_OPSET_MAX, OP_DTS_FLOAT, hard_sigmoid_prepare, act_run),
	ACT_KERNEL("HardSwish", 14, 21, ELEM_DTS_NO_BF16, hard_swish_prepare, act_run),
	ACT_KERNEL("HardSwish", 22, OP_OPSET_MAX, OP_DTS_FLOAT, hard_swish_prepare, act_run),
	ACT_KERNEL("Softplus", 1, 21, ELEM_DTS_NO_BF16, softplus_prepare, act_run),
	ACT_KERNEL("Softplus", 22, OP_OPSET_MAX, OP_DTS_FLOAT, softplus_prepare, act_run),
	ACT_KERNEL("Gelu", 20, OP_OPSET_MAX, OP_DTS_FLOAT, gelu_prepare, act_run),
	ACT_KERNEL("ThresholdedRelu", 10, 21, ELEM_DTS_NO_BF16, thresholded_relu_prepare,
		   act_run),
	ACT_KERNEL("ThresholdedRelu", 22, OP_OPSET_MAX, OP_DTS_FLOAT, thresholded_relu_prepare,
		   act_run),
	ACT_KERNEL("Mish", 18, 21, ELEM_DTS_NO_BF16, mish_prepare, act_run),
	ACT_KERNEL("Mish", 22, OP_OPSET_MAX, OP_DTS_FLOAT, mish_prepare, act_run),
	ACT_KERNEL("Selu", 1, 21, ELEM_DTS_NO_BF16, selu_prepare, act_run),
	ACT_KERNEL("Selu", 22, OP_OPSET_MAX, OP_DTS_FLOAT, selu_prepare, act_run),
	/* Celu was float32 alone until 28. */
	ACT_KERNEL("Celu", 12, 27, OP_DT(CEP_DTYPE_FLOAT32), celu_prepare, act_run),
	ACT_KERNEL("Celu", 28, OP_OPSET_MAX, OP_DTS_FLOAT, celu_prepare, act_run),
	ACT_KERNEL("Softsign", 1, 21, ELEM_DTS_NO_BF16, softsign_prepare, act_run),
	ACT_KERNEL("Softsign", 22, OP_OPSET_MAX, OP_DTS_FLOAT, softsign_prepare, act_run),
	ACT_KERNEL("Swish", 24, OP_OPSET_MAX, OP_DTS_FLOAT, swish_prepare, act_run),
	/* Every numeric type but bfloat16. */
	ACT_KERNEL("Shrink", 9, OP_OPSET_MAX, ELEM_DTS_NO_BF16 | OP_DTS_INT, shrink_prepare,
		   act_run),
	ACT_KERNEL("PRelu", 1, 8, ELEM_DTS_NO_BF16, prelu_prepare, prelu_run),
	ACT_KERNEL("PRelu", 9, 15, ELEM_DTS_NO_BF16 | PRELU_DTS_INT, prelu_prepare, prelu_run),
	ACT_KERNEL("PRelu", 16, OP_OPSET_MAX, OP_DTS_FLOAT | PRELU_DTS_INT, prelu_prepare,
		   prelu_run),
	ACT_KERNEL("Clip", 1, 10, ELEM_DTS_NO_BF16, clip6_prepare, clip6_run),
	ACT_KERNEL("Clip", 11, 11, ELEM_DTS_NO_BF16, clip11_prepare, clip11_run),
	ACT_KERNEL("Clip", 12, 12, ELEM_DTS_NO_BF16 | OP_DTS_INT, clip11_prepare, clip11_run),
	ACT_KERNEL("Clip", 13, OP_OPSET_MAX, OP_DTS_NUMERIC, clip11_prepare, clip11_run),
	MS_KERNEL("Gelu", ms_gelu_prepare),
	MS_KERNEL("QuickGelu", quick_gelu_prepare),
	MS_KERNEL("FastGelu", bias_gelu_prepare),
	MS_KERNEL("BiasGelu", bias_gelu_prepare),
};

const struct op_family op_family_cpu_activation = {
	"cpu_activation", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
