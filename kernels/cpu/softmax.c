/*
 * softmax.c — Softmax, with both axis semantics: before
 * opset 13 the input is seen as a matrix split at `axis` (default 1) and
 * each row is normalised; from 13 on only the `axis` dimension (default -1)
 * is. Both reduce to (outer, n, inner) blocks normalised along n. Computed
 * in float32 (float64 in double) with the maximum subtracted first.
 * LogSoftmax, which follows the same axis rules, is kernels/cpu/logsoftmax.c.
 */
#include "kernels/cpu/cpu.h"

struct softmax_params {
	int64_t outer, n, inner;
};

static int softmax_infer(struct op_infer *x)
{
	int axis;

	if (x->in[0].rank >= 0) {
		int ret = op_softmax_axis(x->node, x->in[0].rank, &axis);

		if (ret < 0)
			return ret;
	}
	return op_infer_like_input(x);
}

static int softmax_prepare(struct op_call *c, size_t *workspace)
{
	struct softmax_params *p = (struct softmax_params *)c->params;
	int ret;

	ret = op_softmax_blocks(c->node, &c->in[0], &p->outer, &p->n, &p->inner);
	*workspace = 0;
	return ret;
}

/* The column of n elements from base, inner apart, of float64. */
static void softmax_col_d(const double *in, double *out, int64_t base, int64_t n, int64_t inner)
{
	double mx = -INFINITY, sum = 0.0;
	int64_t k;

	for (k = 0; k < n; k++) {
		if (in[base + k * inner] > mx)
			mx = in[base + k * inner];
	}
	for (k = 0; k < n; k++)
		sum += exp(in[base + k * inner] - mx);
	for (k = 0; k < n; k++)
		out[base + k * inner] = exp(in[base + k * inner] - mx) / sum;
}

static int softmax_run(struct op_call *c)
{
	const struct softmax_params *p = (const struct softmax_params *)c->params;
	cep_dtype t = c->in[0].dtype;
	const void *in = c->in[0].data;
	void *out = c->out[0].data;
	int64_t o, i, k;

	for (o = 0; o < p->outer; o++) {
		for (i = 0; i < p->inner; i++) {
			int64_t base = o * p->n * p->inner + i;
			float mx = -INFINITY;
			double sum = 0.0;

			if (t == CEP_DTYPE_FLOAT64) {
				softmax_col_d(in, out, base, p->n, p->inner);
				continue;
			}
			for (k = 0; k < p->n; k++) {
				float v = cpu_load_f(in, t, base + k * p->inner);

				if (v > mx)
					mx = v;
			}
			for (k = 0; k < p->n; k++)
				sum += expf(cpu_load_f(in, t, base + k * p->inner) - mx);
			for (k = 0; k < p->n; k++) {
				float v = cpu_load_f(in, t, base + k * p->inner) - mx;

				cpu_store_f(out, t, base + k * p->inner,
					    expf(v) / (float)sum);
			}
		}
	}
	return 0;
}

static const struct op_schema schemas[] = {
	{ "", "Softmax", 1, OP_OPSET_MAX, 1, 1, 1, 1, 0, 0, softmax_infer },
};

/* bfloat16 arrived at opset 13. */
static const struct op_kernel kernels[] = {
	{ "", "Softmax", 1, 12, BACKEND_HOST, OP_DTS_FLOAT & ~OP_DT(CEP_DTYPE_BFLOAT16),
	  softmax_prepare, softmax_run },
	{ "", "Softmax", 13, OP_OPSET_MAX, BACKEND_HOST, OP_DTS_FLOAT, softmax_prepare,
	  softmax_run },
};

const struct op_family op_family_cpu_softmax = {
	"cpu_softmax", schemas, sizeof(schemas) / sizeof(schemas[0]),
	kernels, sizeof(kernels) / sizeof(kernels[0]),
};
