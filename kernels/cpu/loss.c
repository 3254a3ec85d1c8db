/*
 * loss.c — the losses: SoftmaxCrossEntropyLoss (opset 12; bfloat16 from
 * 13) and NegativeLogLikelihoodLoss (opset 12; bfloat16 from 22), over
 * scores of shape (N, C) or (N, C, D1..Dk) and int32 or int64 labels of
 * shape (N) or (N, D1..Dk).
 *
 * Each position (n, d1..dk) takes its label's class c: its loss is
 * -weights[c] times the class's log-probability, the scores themselves for
 * NegativeLogLikelihoodLoss and their log-softmax along the classes for
 * SoftmaxCrossEntropyLoss (which can also return the log-softmax as
 * log_prob, of the scores' shape). A label equal to ignore_index (when the
 * attribute is given) makes a loss of 0 and a weight of 0; any other label
 * outside [0, C) fails the run. reduction "none" returns the losses of the
 * labels' shape, "sum" their sum, "mean" (the default) their sum over the
 * sum of the weights of the positions (their count without weights, the
 * ignored ones left out), as the specification's reference does.
 *
 * The log-softmax has LogSoftmax's arithmetic (kernels/cpu/logsoftmax.c):
 * a double maximum that a NaN wins, exp() of float differences summed in
 * double. Losses and sums are double, each output rounded once. The device
 * kernels (kernels/cuda/loss.c) read their parameters through loss.h.
 */
#include "kernels/cpu/loss.h"

#include <inttypes.h>

/* ------------------------------------------------------------- inference */

/* The names of the inputs in messages, by operator. */
static const char *const *loss_names(const struct op_node *node)
{
	static const char *const sce[3] = { "scores", "labels", "weights" };
	static const char *const nll[3] = { "input", "target", "weight" };

	return strcmp(node->op_type, "SoftmaxCrossEntropyLoss") == 0 ? sce : nll;
}

static int loss_reduction(const struct op_node *node, enum cpu_loss_reduction *out)
{
	const char *r = op_attr_string(node, "reduction", "mean");

	if (strcmp(r, "none") == 0)
		*out = CPU_LOSS_NONE;
	else if (strcmp(r, "sum") == 0)
		*out = CPU_LOSS_SUM;
	else if (strcmp(r, "mean") == 0)
		*out = CPU_LOSS_MEAN;
	else
		return cep__set_error(CEP_EMODEL, "%s: reduction \"%s\" is not none, sum or mean",
				      node->op_type, r);
	return 0;
}

/* A dimension known in either of a and b: the fixed one, else a. */
static int64_t loss_dim(int64_t a, int64_t b)
{
	return op_dim_fixed(a) || !op_dim_fixed(b) ? a : b;
}

static int loss_infer(struct op_infer *x)
{
	const struct op_node *node = x->node;
	const char *const *names = loss_names(node);
	const struct op_tensor *sc = &x->in[0], *lb = &x->in[1];
	const struct op_tensor *w = x->n_in > 2 && op_tensor_present(&x->in[2]) ? &x->in[2] : NULL;
	enum cpu_loss_reduction red;
	struct op_tensor *o = &x->out[0];
	int ret, i;

	if ((ret = op_attr_check(node, "reduction", OP_ATTR_STRING)) < 0 ||
	    (ret = op_attr_check(node, "ignore_index", OP_ATTR_INT)) < 0 ||
	    (ret = loss_reduction(node, &red)) < 0)
		return ret;
	if (!cpu_is_float(sc->dtype))
		return cep__set_error(CEP_EDTYPE, "%s: %s is %s, not a float type", node->op_type,
				      names[0], cep_dtype_name(sc->dtype));
	if (lb->dtype != CEP_DTYPE_INT32 && lb->dtype != CEP_DTYPE_INT64)
		return cep__set_error(CEP_EDTYPE, "%s: %s is %s, not int32 or int64", node->op_type,
				      names[1], cep_dtype_name(lb->dtype));
	if (w && w->dtype != sc->dtype)
		return cep__set_error(CEP_EDTYPE, "%s: %s is %s and %s %s; they must be one type",
				      node->op_type, names[2], cep_dtype_name(w->dtype), names[0],
				      cep_dtype_name(sc->dtype));
	if (sc->rank >= 0 && sc->rank < 2)
		return cep__set_error(CEP_ESHAPE, "%s: %s has rank %d; it must be (N, C) or (N, C, D1, ...)",
				      node->op_type, names[0], sc->rank);
	if (sc->rank >= 0 && lb->rank >= 0) {
		bool bad = lb->rank != sc->rank - 1;

		for (i = 0; i < lb->rank && !bad; i++) {
			int64_t a = lb->dims[i], b = sc->dims[i == 0 ? 0 : i + 1];

			bad = op_dim_fixed(a) && op_dim_fixed(b) && a != b;
		}
		if (bad) {
			char ss[160], sl[160];

			op_dims_format(sc, NULL, 0, ss, sizeof(ss));
			op_dims_format(lb, NULL, 0, sl, sizeof(sl));
			return cep__set_error(CEP_ESHAPE, "%s: %s of shape %s do not fit %s of shape %s (the shape without dimension 1)",
					      node->op_type, names[1], sl, names[0], ss);
		}
	}
	if (w && w->rank >= 0 &&
	    (w->rank != 1 || (sc->rank >= 2 && op_dim_fixed(sc->dims[1]) && op_dim_fixed(w->dims[0]) &&
			      w->dims[0] != sc->dims[1])))
		return cep__set_error(CEP_ESHAPE, "%s: %s must have shape [C], one weight per class",
				      node->op_type, names[2]);
	o->dtype = sc->dtype;
	if (red != CPU_LOSS_NONE) {
		o->rank = 0;
	} else if (lb->rank >= 0) {
		o->rank = lb->rank;
		for (i = 0; i < lb->rank; i++)
			o->dims[i] = sc->rank >= 0 ? loss_dim(lb->dims[i], sc->dims[i == 0 ? 0 : i + 1])
						   : lb->dims[i];
	} else if (sc->rank >= 0) {
		o->rank = sc->rank - 1;
		for (i = 0; i < o->rank; i++)
			o->dims[i] = sc->dims[i == 0 ? 0 : i + 1];
	} else {
		o->rank = -1;
	}
	/* SoftmaxCrossEntropyLoss's log_prob: the scores' shape. */
	if (x->n_out > 1) {
		x->out[1] = *sc;
		x->out[1].data = NULL;
	}
	return 0;
}

/* ---------------------------------------------------------------- kernels */

void cpu_loss_read(const struct op_node *node, const struct op_tensor *scores, bool weighted,
		   struct cpu_loss *p)
{
	enum cpu_loss_reduction red = CPU_LOSS_MEAN;

	memset(p, 0, sizeof(*p));
	(void)loss_reduction(node, &red);
	p->batch = scores->dims[0];
	p->classes = scores->dims[1];
	p->inner = op_dims_product(scores, 2, scores->rank);
	p->has_ignore = op_attr_find(node, "ignore_index") != NULL;
	p->ignore = op_attr_int(node, "ignore_index", 0);
	p->weighted = weighted;
	p->reduction = red;
}

static int loss_prepare(struct op_call *c, size_t *workspace)
{
	*workspace = 0;
	cpu_loss_read(c->node, &c->in[0], c->n_in > 2 && op_tensor_present(&c->in[2]),
		      (struct cpu_loss *)c->params);
	return 0;
}

/* Both losses; sce: the scores are logits, normalised first. */
static int loss_run(struct op_call *c, bool sce)
{
	const struct cpu_loss *p = (const struct cpu_loss *)c->params;
	const struct op_tensor *x = &c->in[0], *lb = &c->in[1];
	const struct op_tensor *w = p->weighted ? &c->in[2] : NULL;
	const struct op_tensor *y = &c->out[0];
	const struct op_tensor *lp = sce && c->n_out > 1 && c->out[1].data ? &c->out[1] : NULL;
	double sum = 0.0, wsum = 0.0;
	int64_t n, d, k;

	for (n = 0; n < p->batch; n++) {
		for (d = 0; d < p->inner; d++) {
			int64_t base = n * p->classes * p->inner + d, pos = n * p->inner + d;
			int64_t label = cpu_load_i(lb->data, lb->dtype, pos);
			double mx = 0.0, lse = 0.0, loss = 0.0, wt = 0.0;

			if (sce) {
				double s = 0.0;

				mx = -INFINITY;
				for (k = 0; k < p->classes; k++) {
					double v = cpu_load_f(x->data, x->dtype, base + k * p->inner);

					mx = v > mx || v != v ? v : mx;
				}
				for (k = 0; k < p->classes; k++)
					s += expf((float)(cpu_load_f(x->data, x->dtype, base + k * p->inner) - mx));
				lse = log(s);
				for (k = 0; lp && k < p->classes; k++) {
					int64_t at = base + k * p->inner;

					cpu_store_f(lp->data, lp->dtype, at,
						    (float)(cpu_load_f(x->data, x->dtype, at) - mx - lse));
				}
			}
			if (p->has_ignore && label == p->ignore) {
				/* Neither loss nor weight. */
			} else if (label < 0 || label >= p->classes) {
				return cep__set_error(CEP_EINVAL, "%s: index %" PRId64 " is out of range for dimension 1 of size %" PRId64,
						      c->node->op_type, label, p->classes);
			} else {
				double v = cpu_load_f(x->data, x->dtype, base + label * p->inner);

				wt = w ? cpu_load_f(w->data, w->dtype, label) : 1.0;
				loss = -(v - mx - lse) * wt;
			}
			if (p->reduction == CPU_LOSS_NONE) {
				cpu_store_f(y->data, y->dtype, pos, (float)loss);
			} else {
				sum += loss;
				wsum += wt;
			}
		}
	}
	if (p->reduction == CPU_LOSS_SUM)
		cpu_store_f(y->data, y->dtype, 0, (float)sum);
	else if (p->reduction == CPU_LOSS_MEAN)
		cpu_store_f(y->data, y->dtype, 0, (float)(sum / wsum));
	return 0;
}

static int sce_run(struct op_call *c) { return loss_run(c, true); }
static int nll_run(struct op_call *c) { return loss_run(c, false); }

/* ------------------------------------------------------------------- table */

/* Before bfloat16 came (opset 13 for the first, 22 for the second). */
#define LOSS_DTS_12 (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16))

static const struct op_schema schemas[] = {
	{ "", "SoftmaxCrossEntropyLoss", 12, OP_OPSET_MAX, 2, 3, 1, 2, 0, 0, loss_infer },
	{ "", "NegativeLogLikelihoodLoss", 12, OP_OPSET_MAX, 2, 3, 1, 1, 0, 0, loss_infer },
};

static const struct op_kernel kernels[] = {
	{ "", "SoftmaxCrossEntropyLoss", 12, 12, BACKEND_HOST, LOSS_DTS_12, loss_prepare, sce_run },
	{ "", "SoftmaxCrossEntropyLoss", 13, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64,
	  loss_prepare, sce_run },
	{ "", "NegativeLogLikelihoodLoss", 12, 21, BACKEND_HOST, LOSS_DTS_12, loss_prepare, nll_run },
	{ "", "NegativeLogLikelihoodLoss", 22, OP_OPSET_MAX, BACKEND_HOST, CPU_DTS_FLOAT_NO_F64,
	  loss_prepare, nll_run },
};

_Static_assert(sizeof(struct cpu_loss) <= OP_PARAMS_BYTES, "cpu_loss is too big");

const struct op_family op_family_cpu_loss = {
	"cpu_loss", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
